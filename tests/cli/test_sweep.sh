#!/bin/sh
# End-to-end test of scripts/sweep.sh: two good values of time.end and one invalid one on a tiny
# scene, run two at a time; checks the outputs, the CSV rows (failure row included) and the exit
# status; a rerun into the same folder (ok runs kept, failed ones redone, a different sweep
# refused, --overwrite); a grid over two keys; the usage errors. Run from the repository root.
# (tests/python/test_scripts.py covers --devices and interruption.)
set -u
SWEEP=scripts/sweep.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION -- test...
    what=$1; shift 2
    if "$@"; then ok; else bad "$what"; fi
}

cat >"$T/tiny.json" <<'JSON'
{"format": 1, "dimensions": 2, "mode": "sph",
 "tank": {"min": [0, 0], "max": [0.4, 0.3]},
 "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01},
 "time": {"end": 0.002}, "output": {"interval": 0.001}}
JSON

# ---- the sweep: 0.002 and 0.003 s run; "abc" is not a number (sphsim exit 3)
sh "$SWEEP" "$T/tiny.json" time.end 0.002 abc 0.003 -j 2 -o "$T/out" -- --quiet >"$T/stdout" 2>"$T/stderr"
rc=$?
check "sweep exits 1 when a run failed (got $rc; stderr: $(head -c 400 "$T/stderr"))" -- [ "$rc" -eq 1 ]
csv="$T/out/summary.csv"
check "summary.csv written" -- [ -s "$csv" ]
check "header row" -- [ "$(head -n 1 "$csv")" = "key,value,status,exit_code,particles,steps,simulated_time_s,wall_time_s,particle_steps_per_s,output,error,time.end" ]
check "one row per value plus the header" -- [ "$(wc -l <"$csv" | tr -d ' ')" -eq 4 ]
for v in 0.002 0.003; do
    check "output of time.end=$v" -- [ -s "$T/out/time.end=$v.h5" ]
    check "log of time.end=$v" -- [ -f "$T/out/time.end=$v.log" ]
done
check "no output for the invalid value" -- [ ! -e "$T/out/time.end=abc.h5" ]

# Fields of the row for VALUE: field VALUE COLUMN (rows in the CSV have no embedded commas
# before the error column, which is last).
field() { awk -F, -v v="$1" -v c="$2" 'NR > 1 && $2 == v { print $c; exit }' "$csv"; }
# rows in the order the values were given
check "rows in the given order" -- [ "$(awk -F, 'NR > 1 { printf "%s ", $2 }' "$csv")" = "0.002 abc 0.003 " ]
for v in 0.002 0.003; do
    check "status ok for $v (row: $(grep "^time.end,$v," "$csv"))" -- [ "$(field "$v" 3)" = ok ]
    check "exit code 0 for $v" -- [ "$(field "$v" 4)" = 0 ]
    # 10 x 20 fluid particles + boundary: more than 200 particles
    check "particles for $v" -- [ "$(field "$v" 5)" -gt 200 ]
    check "output path for $v" -- [ "$(field "$v" 10)" = "$T/out/time.end=$v.h5" ]
done
# steps: dt is the same in both runs, so 0.003 s takes 1.5 times the steps of 0.002 s
s2=$(field 0.002 6)
s3=$(field 0.003 6)
check "steps of 0.003 s = 1.5 x steps of 0.002 s (got $s2, $s3)" -- [ $((2 * s3)) -eq $((3 * s2)) ]
# simulated time ends within one step of the requested end
check "simulated time of 0.003 s run" -- awk -v t="$(field 0.003 7)" 'BEGIN { exit !(t >= 0.003 - 1e-9 && t < 0.0035) }'
check "failure row status" -- [ "$(field abc 3)" = invalid-scene ]
check "failure row exit code" -- [ "$(field abc 4)" = 3 ]
check "failure row has no particles" -- [ -z "$(field abc 5)" ]
check "failure row error names the key (row: $(grep '^time.end,abc,' "$csv"))" -- grep -q '^time.end,abc,invalid-scene,3,.*time\.end: expected a number' "$csv"
check "stderr summary line" -- grep -q "2 of 3 run(s) succeeded" "$T/stderr"

# ---- all good: exit 0; a JSON value with spaces and brackets gets a safe file name
sh "$SWEEP" "$T/tiny.json" time.end 0.001 -o "$T/ok" -- --quiet >/dev/null 2>"$T/stderr"
rc=$?
check "all runs ok: exit 0 (got $rc; $(head -c 300 "$T/stderr"))" -- [ "$rc" -eq 0 ]
check "all-ok CSV has 2 lines" -- [ "$(wc -l <"$T/ok/summary.csv" | tr -d ' ')" -eq 2 ]
sh "$SWEEP" "$T/tiny.json" gravity "[0, -1.62]" -o "$T/grav" -- --quiet >/dev/null 2>"$T/stderr"
rc=$?
check "vector value runs (got $rc; $(head -c 300 "$T/stderr"))" -- [ "$rc" -eq 0 ]
check "vector value file name" -- [ -s "$T/grav/gravity=_0__-1.62_.h5" ]
check "vector value kept verbatim in the CSV" -- grep -q '^gravity,"\[0, -1.62\]",ok,0,' "$T/grav/summary.csv"

# ---- rerun into the same folder: the ok runs are kept (not rerun), the failed one is redone,
# and the table is rewritten whole
cp "$csv" "$T/first.csv"
touch -d '2001-01-01' "$T/out/time.end=0.002.h5" "$T/out/time.end=0.003.h5"
sh "$SWEEP" "$T/tiny.json" time.end 0.002 abc 0.003 -j 2 -o "$T/out" -- --quiet >/dev/null 2>"$T/stderr"
rc=$?
check "rerun: exit 1, the invalid value fails again (got $rc; $(head -c 300 "$T/stderr"))" -- [ "$rc" -eq 1 ]
check "rerun: ok runs kept, not rerun" -- [ -z "$(find "$T/out" -name 'time.end=0.00[23].h5' -newer "$T/tiny.json")" ]
check "rerun: says what it kept" -- grep -q "3 run(s) of .* 2 kept from an earlier sweep" "$T/stderr"
check "rerun: only the failed run ran" -- [ "$(grep -c '^sweep.sh: \[' "$T/stderr")" -eq 1 ]
check "rerun: the failed run ran again" -- grep -q '^sweep.sh: \[1/1\] time.end=abc: FAILED (exit 3)' "$T/stderr"
check "rerun: the same table (rows and values)" -- cmp -s "$csv" "$T/first.csv"

# an ok run whose output is gone, and a run that failed, are redone; the rest is kept
rm "$T/out/time.end=0.003.h5"
sh "$SWEEP" "$T/tiny.json" time.end 0.002 abc 0.003 -j 2 -o "$T/out" -- --quiet >/dev/null 2>"$T/stderr"
check "rerun: a run without its output is redone" -- [ -s "$T/out/time.end=0.003.h5" ]
check "rerun: the kept run's output untouched" -- [ -z "$(find "$T/out" -name 'time.end=0.002.h5' -newer "$T/tiny.json")" ]
check "rerun: 0.003 ok again" -- [ "$(field 0.003 3)" = ok ]

# a different sweep into the folder is refused, and nothing there changes
cp "$csv" "$T/second.csv"
sh "$SWEEP" "$T/tiny.json" time.end 0.002 0.004 -o "$T/out" -- --quiet >/dev/null 2>"$T/stderr"
rc=$?
check "changed values refused: exit 2 (got $rc)" -- [ "$rc" -eq 2 ]
check "changed values: the message names them ($(head -c 300 "$T/stderr"))" -- grep -q 'values of time.end were 0.002 abc 0.003, now 0.002 0.004' "$T/stderr"
check "changed values: the message says what to do" -- grep -q 'pass --overwrite' "$T/stderr"
check "changed values: nothing run" -- [ ! -e "$T/out/time.end=0.004.h5" ]
check "changed values: the table unchanged" -- cmp -s "$csv" "$T/second.csv"
sh "$SWEEP" "$T/tiny.json" time.end 0.002 abc 0.003 -o "$T/out" -- --quiet --set output.interval=0.002 >/dev/null 2>"$T/stderr"
check "changed sphsim arguments refused" -- [ $? -eq 2 ]
check "changed sphsim arguments: the message names them" -- grep -q 'sphsim arguments were (none), now --set output.interval=0.002' "$T/stderr"
cp "$T/tiny.json" "$T/tiny2.json"
echo '{"format": 1, "dimensions": 2, "tank": {"min": [0, 0], "max": [0.4, 0.4]}, "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01}, "time": {"end": 0.002}, "output": {"interval": 0.001}}' >"$T/other.json"
sh "$SWEEP" "$T/other.json" time.end 0.002 abc 0.003 -o "$T/out" -- --quiet >/dev/null 2>"$T/stderr"
check "another scene refused" -- [ $? -eq 2 ]
check "another scene: the message says so" -- grep -q 'the scene file differs' "$T/stderr"
# the same scene under another path, and neutral options (--progress), are the same sweep
sh "$SWEEP" "$T/tiny2.json" time.end 0.002 abc 0.003 -o "$T/out" -- --progress none >/dev/null 2>"$T/stderr"
check "same scene content, other path and --progress: a rerun (exit 1)" -- [ $? -eq 1 ]

# --overwrite redoes every run, passing --overwrite to sphsim
sh "$SWEEP" "$T/tiny.json" time.end 0.002 0.004 -o "$T/out" --overwrite -- --quiet >/dev/null 2>"$T/stderr"
rc=$?
check "--overwrite: a changed sweep runs (got $rc; $(head -c 300 "$T/stderr"))" -- [ "$rc" -eq 0 ]
check "--overwrite: the kept output was redone" -- [ -n "$(find "$T/out" -name 'time.end=0.002.h5' -newer "$T/tiny.json")" ]
check "--overwrite: the table holds the new sweep" -- [ "$(awk -F, 'NR > 1 { printf "%s ", $2 }' "$csv")" = "0.002 0.004 " ]
check "--overwrite: every row ok" -- [ "$(awk -F, 'NR > 1 && $3 != "ok"' "$csv")" = "" ]
# the form of earlier versions, -- --overwrite, means the same
sh "$SWEEP" "$T/tiny.json" time.end 0.002 0.004 -o "$T/out" -- --quiet --overwrite >/dev/null 2>"$T/stderr"
check "-- --overwrite redoes every run" -- [ "$(grep -c '^sweep.sh: \[' "$T/stderr")" -eq 2 ]

# a folder of an older sweep.sh (no recorded definition): refused, its table kept
mkdir -p "$T/old/.sweep"
printf '0.001\n' >"$T/old/.sweep/values"
printf 'key,value,status\ntime.end,0.001,ok\n' >"$T/old/summary.csv"
cp "$T/old/summary.csv" "$T/old.csv"
sh "$SWEEP" "$T/tiny.json" time.end 0.001 -o "$T/old" -- --quiet >/dev/null 2>"$T/stderr"
check "older sweep folder refused" -- [ $? -eq 2 ]
check "older sweep folder: table kept" -- cmp -s "$T/old/summary.csv" "$T/old.csv"
check "older sweep folder: message" -- grep -q 'no record of the sweep' "$T/stderr"

# ---- a grid: time.end x gravity (a JSON array with commas and a space), 4 runs in product order
sh "$SWEEP" "$T/tiny.json" time.end 0.001 0.002 --and gravity "[0,-9.81]" "[0, -1.62]" -j 2 -o "$T/grid" -- --quiet >/dev/null 2>"$T/stderr"
rc=$?
gcsv="$T/grid/summary.csv"
check "grid runs (got $rc; $(head -c 300 "$T/stderr"))" -- [ "$rc" -eq 0 ]
check "grid header: one column per key" -- [ "$(head -n 1 "$gcsv")" = "key,value,status,exit_code,particles,steps,simulated_time_s,wall_time_s,particle_steps_per_s,output,error,time.end,gravity" ]
check "grid: 4 rows" -- [ "$(wc -l <"$gcsv" | tr -d ' ')" -eq 5 ]
check "grid rows: first key slowest, values verbatim" -- [ "$("${PYTHON:-python3}" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(";".join(r["time.end"] + " " + r["gravity"] + " " + r["key"] + " " + r["value"] + " " + r["status"] for r in rows))' "$gcsv")" = \
    '0.001 [0,-9.81] time.end gravity ["0.001", "[0,-9.81]"] ok;0.001 [0, -1.62] time.end gravity ["0.001", "[0, -1.62]"] ok;0.002 [0,-9.81] time.end gravity ["0.002", "[0,-9.81]"] ok;0.002 [0, -1.62] time.end gravity ["0.002", "[0, -1.62]"] ok' ]
for n in 'time.end=0.001+gravity=_0_-9.81_' 'time.end=0.001+gravity=_0__-1.62_' 'time.end=0.002+gravity=_0_-9.81_' 'time.end=0.002+gravity=_0__-1.62_'; do
    check "grid output $n" -- [ -s "$T/grid/$n.h5" ]
    check "grid summary $n" -- grep -q '"status":"ok"' "$T/grid/$n.json"
done
# each run got both --sets: 0.002 s takes twice the steps of 0.001 s
check "grid: steps follow time.end" -- [ "$(awk -F, 'NR == 4 { print $6 }' "$gcsv")" -eq $((2 * $(awk -F, 'NR == 2 { print $6 }' "$gcsv"))) ]
check "grid: the default folder name joins the keys" -- [ "$(cd "$T" && sh "$OLDPWD/$SWEEP" "$T/tiny.json" k 1 --and k2 2 -- --quiet >/dev/null 2>&1; ls -d sweep-*)" = "sweep-k+k2" ]

# ---- usage errors: exit 2
sh "$SWEEP" >/dev/null 2>&1;                                      check "no arguments: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" time.end >/dev/null 2>&1;              check "no values: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" time.end 1 -j x >/dev/null 2>&1;       check "-j x: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/nope.json" time.end 1 -o "$T/n" >/dev/null 2>&1;  check "missing scene: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k a/b a_b -o "$T/d" >/dev/null 2>&1;   check "clashing names: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k 1 --and j a/b a_b -o "$T/d" >/dev/null 2>&1; check "clashing grid names: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k 1 --and -o "$T/d" >/dev/null 2>&1;  check "--and without a key: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k 1 --and j -o "$T/d" >/dev/null 2>&1; check "--and key without values: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k 1 --and k 2 -o "$T/d" >/dev/null 2>&1; check "a key twice: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k 1 --bogus -o "$T/d" >/dev/null 2>&1; check "unknown option: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k 1 -o "$T/d" -- --set k=2 >/dev/null 2>&1; check "swept key also --set: exit 2" -- [ $? -eq 2 ]
check "no folder made by usage errors" -- [ ! -e "$T/d" ]
sh "$SWEEP" -h >"$T/help" 2>&1;                                   check "-h: exit 0" -- [ $? -eq 0 ]
check "-h prints usage" -- grep -q "usage: scripts/sweep.sh SCENE KEY VALUE" "$T/help"

echo "test_sweep: $pass passed, $fail failed"
[ $fail -eq 0 ]
