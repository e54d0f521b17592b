#!/bin/sh
# tsan-run.sh SPHSIM: runs a ThreadSanitizer build of sphsim (make sanitize builds
# build-tsan/sphsim) where its threads meet: the time loop, the snapshot writer thread
# (src/writer.c), the writer's gather threads (src/particles.c) and the initial state's threads
# (src/init.c, src/sph.c), with a snapshot at every step in SPH and particle mode, and a SIGINT
# that lands while snapshots are in flight. Fails
# on any ThreadSanitizer report or a wrong exit code.
set -u
BIN=${1:?usage: tests/tsan-run.sh build-tsan/sphsim}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; sed -n '1,60p' "$T/err"; }

# Some kernels randomise mmap more than a TSan runtime accepts ("FATAL: ThreadSanitizer:
# unexpected memory mapping"); then run it without address-space randomisation.
PRE=""
if ! "$BIN" --version > /dev/null 2> "$T/err"; then
    PRE="setarch $(uname -m) -R"
    echo "(sphsim --version failed under ThreadSanitizer: $(head -c 200 "$T/err"); running under $PRE)"
    $PRE "$BIN" --version > /dev/null 2> "$T/err" || { bad "ThreadSanitizer build does not start"; exit 1; }
fi

cat > "$T/sph.json" << 'J'
{"format": 1, "dimensions": 2, "mode": "sph", "tank": {"min": [0, 0], "max": [0.4, 0.3]},
 "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01},
 "time": {"end": 0.01, "dt": 5e-5}, "output": {"interval": 5e-5}}
J
cat > "$T/spheres.json" << 'J'
{"format": 1, "dimensions": 2, "mode": "particles", "tank": {"min": [0, 0], "max": [1, 1]},
 "gravity": [0, -9.81],
 "spheres": {"groups": [{"count": 64, "radius": 0.02, "density": 1000.0,
                         "region": {"min": [0.3, 0.5], "max": [0.7, 0.9]}, "placement": "lattice"}],
             "restitution": 0.5},
 "time": {"end": 0.05, "dt": 0.0005}, "output": {"interval": 0.0005}}
J
# run_ok ENV SCENE OUT WHAT: sphsim on SCENE into OUT with the environment setting ENV
# (VAR=VALUE, or - for none); passes on exit 0, status ok and no ThreadSanitizer report.
run_ok() {
    e=$1
    [ "$e" = - ] && e=""
    env $e $PRE "$BIN" "$2" -o "$3" --quiet > "$T/out" 2> "$T/err"
    rc=$?
    if [ $rc -eq 0 ] && ! grep -q "ThreadSanitizer" "$T/err" && grep -q '"status":"ok"' "$T/out"; then
        ok "$4, no race reported"
    else
        bad "$4: exit $rc"
    fi
}

for s in sph spheres; do
    run_ok - "$T/$s.json" "$T/$s.h5" "$s: a snapshot at every step"
done
# the writer's id-order gather on 3 threads (src/particles.c), a snapshot at every step
run_ok SPHSIM_WRITER_THREADS=3 "$T/sph.json" "$T/sph3.h5" "sph: the writer's gather on 3 threads"
# one staging buffer (src/sim.c, staging_slots): each snapshot waits for the writer
run_ok SPHSIM_STAGING_BUFFERS=1 "$T/sph.json" "$T/sph1.h5" "sph: one staging buffer, a snapshot at every step"
# the initial state on 4 threads (src/init.c, src/sph.c: the lattice and the hydrostatic squeeze)
run_ok SPHSIM_INIT_THREADS=4 "$T/sph.json" "$T/sph4.h5" "sph: the initial state on 4 threads"

# SIGINT while the writer has snapshots in flight: exit 130, file closed, no race
# (0.5 s: long enough to be stopped, a layout of 10^4 snapshots, about 300 MB, allocated at creation)
sed 's/"end": 0.01/"end": 0.5/' "$T/sph.json" > "$T/long.json"
$PRE "$BIN" "$T/long.json" -o "$T/long.h5" --progress=json > "$T/out" 2> "$T/err" &
pid=$!
i=0
while [ $i -lt 600 ] && ! grep -q '"snapshots":[1-9]' "$T/err" 2> /dev/null; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && ! grep -q "ThreadSanitizer" "$T/err" && grep -q '"status":"interrupted"' "$T/out"; then
    ok "SIGINT with snapshots in flight: exit 130, no race reported"
else
    bad "SIGINT: exit $rc"
fi
echo "tsan-run: $pass passed, $fail failed"
[ $fail -eq 0 ]
