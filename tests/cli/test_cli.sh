#!/bin/sh
# End-to-end tests of the sphsim command line: exit codes, messages, --set, --check,
# refusal to overwrite, the bad-scene corpus, signals. Run from the repository root.
set -u
BIN=${SPHSIM:-build/sphsim}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE DESCRIPTION -- command...   (stdout -> $T/out, stderr -> $T/err)
expect() {
    want=$1; what=$2; shift 3
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, expected $want; stderr: $(head -c 400 "$T/err")"; fi
}
has() { # has FILE TEXT DESCRIPTION
    if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $(head -c 400 "$1")"; fi
}

cat >"$T/tiny.json" <<'JSON'
{"format": 1, "dimensions": 2, "mode": "sph",
 "tank": {"min": [0, 0], "max": [0.4, 0.3]},
 "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01},
 "time": {"end": 0.002}, "output": {"interval": 0.001}}
JSON

expect 0 "--help" -- "$BIN" --help
has "$T/out" "usage: sphsim" "--help on stdout"
has "$T/out" "130 stopped by SIGINT" "--help lists exit codes"
has "$T/out" "skin_levels" "--help lists the tuning knobs"
expect 0 "--version" -- "$BIN" --version
has "$T/out" "sphsim " "--version"
expect 2 "no arguments" -- "$BIN"
has "$T/err" "no scene file given" "no arguments message"
expect 2 "unknown option" -- "$BIN" "$T/tiny.json" --frobnicate
has "$T/err" "--frobnicate" "unknown option named"
expect 2 "bad --progress" -- "$BIN" "$T/tiny.json" --progress=sometimes
expect 2 "--set without =" -- "$BIN" "$T/tiny.json" --set fluid.spacing
expect 2 "-o path too long" -- "$BIN" "$T/tiny.json" -o "$T/$(printf '%04000d' 0).h5"
has "$T/err" "-o: the path is" "-o path too long: message"
# tuning knobs: --help lists them; a bad key or value, on the command line or in the
# environment, is a usage error naming where it came from; a good one runs
expect 2 "--tune unknown key" -- "$BIN" "$T/tiny.json" --check --tune skin_level=2
has "$T/err" "unknown tuning key 'skin_level'" "--tune unknown key named"
expect 2 "--tune value out of range" -- "$BIN" "$T/tiny.json" --check --tune skin_levels=9
has "$T/err" "skin_levels=9: expected auto|1-4" "--tune bad value named"
expect 2 "--tune value between the allowed ones" -- "$BIN" "$T/tiny.json" --check --tune density_regs=8
has "$T/err" "auto|0|16-255" "--tune value between the allowed ones: message lists them"
expect 0 "--tune value in the allowed range" -- "$BIN" "$T/tiny.json" --check --tune density_regs=16
expect 2 "--tune without =" -- "$BIN" "$T/tiny.json" --check --tune skin_levels
expect 2 "bad tuning in the environment" -- env SPHSIM_LIST_BUILD=sideways "$BIN" "$T/tiny.json" --check
has "$T/err" "SPHSIM_LIST_BUILD: list_build=sideways: expected auto|apart|fused" "environment knob named"
expect 0 "--tune over the environment" -- env SPHSIM_SKIN_LEVELS=2 "$BIN" "$T/tiny.json" --check --tune skin_levels=auto
expect 0 "a run with knobs" -- "$BIN" "$T/tiny.json" -o "$T/tuned.h5" -q --tune list_build=apart --tune go_ahead=1
# a short trial run: an output interval longer than the run becomes the run, with a note
expect 0 "short trial run" -- "$BIN" "$T/tiny.json" -o "$T/trial.h5" --set time.end=0.0005
has "$T/err" "output.interval: 0.001 s is longer than time.end (0.0005 s)" "short trial run's note"
has "$T/out" '"snapshots":2' "short trial run: snapshots at the start and the end"
# the closing hint's reader works with the system's python3 (scripts/setup.sh installs its h5py)
expect 0 "sphsim_reader.py with the system python3" -- /usr/bin/python3 scripts/sphsim_reader.py "$T/trial.h5"
has "$T/out" "particles" "sphsim_reader.py summary"
# a usage error: the message and a pointer to --help, not the whole help
expect 2 "usage error is short" -- "$BIN" "$T/tiny.json" --frobnicate
[ "$(wc -l < "$T/err")" -eq 2 ] && ok || bad "usage error: $(wc -l < "$T/err") lines on stderr, expected 2"
has "$T/err" "Run 'sphsim --help' for the options." "usage error points at --help"
expect 4 "missing scene file" -- "$BIN" "$T/nonexistent.json" -o "$T/x.h5"
has "$T/err" "nonexistent.json" "missing file named"

# --check: validates, prints the resolved scene and derived values, runs nothing
expect 0 "--check" -- "$BIN" "$T/tiny.json" --check
has "$T/out" '"particles":' "--check prints particle count"
has "$T/out" '"estimated_device_bytes":' "--check prints memory estimate"
[ "$(wc -l < "$T/out")" -eq 1 ] && ok || bad "--check prints one line, got $(wc -l < "$T/out")"
has "$T/out" '{"scene":{"format":1,' "--check's document holds the resolved scene"
n1=$(sed -n 's/.*"fluid_particles":\([0-9]*\).*/\1/p' "$T/out")
[ "$n1" = "200" ] && ok || bad "--check fluid particles: got '$n1', expected 10 x 20 = 200"
expect 0 "--check with --set" -- "$BIN" "$T/tiny.json" --check --set fluid.spacing=0.005
n2=$(sed -n 's/.*"fluid_particles":\([0-9]*\).*/\1/p' "$T/out")
[ "$n2" = "800" ] && ok || bad "--set fluid.spacing=0.005: got '$n2' fluid particles, expected 800"
expect 0 "--set string without quotes" -- "$BIN" "$T/tiny.json" --check --set fluid.kernel=cubic_spline
has "$T/out" "cubic_spline" "--set string value"
expect 3 "--set bad value" -- "$BIN" "$T/tiny.json" --check --set fluid.spacing=-1
has "$T/err" "fluid.spacing" "--set bad value names path"
expect 3 "--set misspelled key" -- "$BIN" "$T/tiny.json" --check --set fluid.spacng=0.01
has "$T/err" "fluid.spacng" "misspelled key named"
has "$T/err" "spacing" "misspelled key suggestion"
[ ! -e "$T/x.h5" ] && ok || bad "--check must not write output"
# a grid past the cell tables' limits: --check refuses it as the run would, and names the
# motion when the box the moving tank sweeps is the cause
expect 3 "--check: grid too large" -- "$BIN" "$T/tiny.json" --check --set 'tank.max=[10000,10000]'
has "$T/err" "grid.cell_ratio" "grid too large names grid.cell_ratio"
expect 3 "--check: swept grid too large" -- "$BIN" "$T/tiny.json" --check --set 'tank.motion=[{"type":"constant","velocity":[1e8,0]}]'
has "$T/err" "moving bodies sweep" "swept grid names the motion"

# a run: output, sidecar, JSON summary on stdout
expect 0 "tiny run" -- "$BIN" "$T/tiny.json" -o "$T/run.h5" --device cpu
[ -s "$T/run.h5" ] && ok || bad "run wrote no $T/run.h5"
[ -s "$T/run.xmf" ] && ok || bad "run wrote no sidecar $T/run.xmf"
has "$T/out" '"status":"ok"' "summary status"
has "$T/out" '"particle_steps_per_s":' "summary throughput"
lines=$(wc -l <"$T/out")
[ "$lines" -eq 1 ] && ok || bad "stdout should be exactly one JSON line, got $lines"
sum1=$(cksum <"$T/run.h5")
expect 4 "refuse to overwrite" -- "$BIN" "$T/tiny.json" -o "$T/run.h5"
has "$T/err" "--overwrite" "refusal mentions --overwrite"
[ "$(cksum <"$T/run.h5")" = "$sum1" ] && ok || bad "refused run changed the existing file"
expect 0 "--overwrite" -- "$BIN" "$T/tiny.json" -o "$T/run.h5" --overwrite --quiet
[ ! -s "$T/err" ] && ok || bad "--quiet printed on stderr: $(head -c 300 "$T/err")"
expect 0 "end time 0" -- "$BIN" "$T/tiny.json" -o "$T/zero.h5" --set time.end=0

# progress: JSON lines on stderr for scripts, a final 100 % line; plain lines off a terminal
expect 0 "--progress=json" -- "$BIN" "$T/tiny.json" -o "$T/pj.h5" --progress=json
has "$T/err" '{"progress":1.0000,"step":14,"steps":14,' "--progress=json final line"
expect 0 "--progress=plain" -- "$BIN" "$T/tiny.json" -o "$T/pp.h5" --progress=plain
has "$T/err" "100.0%" "--progress=plain final line"
expect 0 "--progress=none" -- "$BIN" "$T/tiny.json" -o "$T/pn.h5" --progress=none
if grep -q "steps/s" "$T/err"; then bad "--progress=none printed progress"; else ok; fi

# devices
expect 0 "--list-devices" -- "$BIN" --list-devices
has "$T/out" "cpu" "--list-devices shows the CPU device"
expect 5 "unknown device" -- "$BIN" "$T/tiny.json" -o "$T/d.h5" --device no-such-device
has "$T/err" "no-such-device" "unknown device named"
mkdir -p "$T/novendors"
expect 5 "no OpenCL platform" -- env OCL_ICD_VENDORS="$T/novendors" "$BIN" "$T/tiny.json" -o "$T/np.h5"
has "$T/err" "pocl-opencl-icd" "no platform: says what to install"
expect 5 "no OpenCL platform (env selector)" -- env OCL_ICD_VENDORS="$T/novendors" SPHSIM_DEVICE=gpu "$BIN" --list-devices

# the bad-scene corpus: exit code and message for each
if [ -f tests/bad_scenes/expected.tsv ]; then
    while IFS="$(printf '\t')" read -r file code msg; do
        case "$file" in ''|'#'*) continue ;; esac
        expect "$code" "bad scene $file" -- "$BIN" "tests/bad_scenes/$file" --check
        has "$T/err" "$msg" "bad scene $file message"
    done <tests/bad_scenes/expected.tsv
else
    bad "tests/bad_scenes/expected.tsv missing"
fi

# --resume of a file that is not an sphsim output: what was expected, exit 4
echo "not an output" >"$T/notes.txt"
expect 4 "--resume of a text file" -- "$BIN" --resume "$T/notes.txt"
has "$T/err" "is not an sphsim output file: it is not an HDF5 file; expected an HDF5 file written by sphsim (with /sphsim and /VTKHDF)" "--resume of a text file: message"
if [ -s "$T/trial.h5" ] && command -v h5copy >/dev/null 2>&1; then
    h5copy -i "$T/trial.h5" -o "$T/other.h5" -s /VTKHDF -d /VTKHDF >/dev/null 2>&1
    expect 4 "--resume of an HDF5 file without /sphsim" -- "$BIN" --resume "$T/other.h5"
    has "$T/err" "is not an sphsim output file: it has no /sphsim group; expected an HDF5 file written by sphsim" "--resume of a foreign HDF5 file: message"
fi

# signals: SIGTERM -> 143, SIGINT -> 130, file keeps finished snapshots
for sig in TERM INT; do
    "$BIN" "$T/tiny.json" -o "$T/sig$sig.h5" --set time.end=10 --set output.interval=0.01 --quiet >"$T/out" 2>"$T/err" &
    pid=$!
    i=0
    while [ ! -s "$T/sig$sig.h5" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    sleep 1
    kill -s $sig $pid
    wait $pid
    got=$?
    want=143; [ $sig = INT ] && want=130
    [ $got -eq $want ] && ok || bad "SIG$sig: exit $got, expected $want ($(head -c 300 "$T/err"))"
    has "$T/out" '"status":"interrupted"' "SIG$sig summary"
done

# a signal while the run is being set up (the device opened, the kernels built: PoCL's compiler
# removes its temporary files on the signal and fails the build) is still the signal
for d in 0.1 0.2 0.3 0.4 0.5 0.6; do
    "$BIN" "$T/tiny.json" -o "$T/early.h5" --overwrite --set time.end=10 --quiet >"$T/out" 2>"$T/err" &
    pid=$!
    sleep $d
    kill -s TERM $pid
    wait $pid
    got=$?
    [ $got -eq 143 ] && ok || bad "SIGTERM after $d s: exit $got, expected 143 ($(head -c 300 "$T/err"))"
done

echo "test_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
