#!/bin/sh
# End-to-end test of scripts/sweep.sh: two good values of time.end and one invalid one on a tiny
# scene, run two at a time; checks the outputs, the CSV rows (failure row included) and the exit
# status, plus the usage errors. Run from the repository root.
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
check "header row" -- [ "$(head -n 1 "$csv")" = "key,value,status,exit_code,particles,steps,simulated_time_s,wall_time_s,particle_steps_per_s,output,error" ]
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
# a rerun into the same folder fails without --overwrite (sphsim refuses, exit 4) and says so
sh "$SWEEP" "$T/tiny.json" time.end 0.001 -o "$T/ok" -- --quiet >/dev/null 2>&1
rc=$?
check "rerun without --overwrite fails (got $rc)" -- [ "$rc" -eq 1 ]
check "rerun row says io-error" -- grep -q '^time.end,0.001,io-error,4,' "$T/ok/summary.csv"

# ---- usage errors: exit 2
sh "$SWEEP" >/dev/null 2>&1;                                      check "no arguments: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" time.end >/dev/null 2>&1;              check "no values: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" time.end 1 -j x >/dev/null 2>&1;       check "-j x: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/nope.json" time.end 1 -o "$T/n" >/dev/null 2>&1;  check "missing scene: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" "$T/tiny.json" k a/b a_b -o "$T/d" >/dev/null 2>&1;   check "clashing names: exit 2" -- [ $? -eq 2 ]
sh "$SWEEP" -h >"$T/help" 2>&1;                                   check "-h: exit 0" -- [ $? -eq 0 ]
check "-h prints usage" -- grep -q "usage: scripts/sweep.sh SCENE KEY VALUE" "$T/help"

echo "test_sweep: $pass passed, $fail failed"
[ $fail -eq 0 ]
