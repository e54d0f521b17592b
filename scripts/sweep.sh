#!/bin/sh
# sweep: run sphsim once per value of a scene key (--set KEY=VALUE), or once per combination of
# the values of several keys, N at a time or one run per listed device, and gather every run's
# JSON summary line into one CSV table. The work is done by sweep.py beside this file.
#
# Usage: scripts/sweep.sh SCENE KEY VALUE... [--and KEY VALUE...]... [-j N] [--devices LIST]
#                         [-o DIR] [--overwrite] [-- SPHSIM_ARGS...]
#
#   SCENE      the scene file given to every run
#   KEY        a scene path as for sphsim --set, e.g. fluid.spacing, time.end, tank.max[1]
#   VALUE      one value per run (JSON, or a plain string), e.g. 0.01 0.005 "[0,-1.62]"
#   --and      one more KEY and its VALUEs: the sweep runs every combination (Cartesian product)
#   -j N       run N simulations at once (default 1; each sphsim uses the whole OpenCL device)
#   --devices  comma-separated sphsim --device selectors, e.g. 0,1,2,3: each run gets one, with
#              at most one run per listed device at a time (-j defaults to their number)
#   -o DIR     output folder (default: sweep-KEY); created if missing
#   --overwrite  redo every run (a rerun into DIR otherwise keeps the runs that ended ok)
#   --         everything after it goes to every sphsim run (e.g. -- --progress plain)
#
# Each run writes DIR/NAME.h5 (+ .xmf), its stderr to DIR/NAME.log and its stdout (the JSON
# summary line) to DIR/NAME.json, NAME being KEY=VALUE (several keys: joined by "+"), with
# characters other than A-Z a-z 0-9 . _ + - = as "_". DIR/summary.csv gets one row per run, in
# the order given (the first key varying slowest):
#   key,value,status,exit_code,particles,steps,simulated_time_s,wall_time_s,particle_steps_per_s,output,error
# and one column per key. A rerun into DIR keeps the runs that ended ok, redoes the others and
# rewrites the table from every run's files; a different sweep (scene, keys, values, sphsim
# arguments) is refused there without --overwrite. DIR/.sweep/ holds the sweep's definition and
# each run's command, device, start and end time and exit code.
# Exit status: 0 every run succeeded, 1 some run failed, 2 usage error, 130 interrupted (the
# table is written all the same). docs/sweeps.md has the details.
#
# Environment: SPHSIM (the sphsim binary; default build/sphsim next to this script's folder,
# else sphsim on PATH), PYTHON (the python3 that runs sweep.py; standard library only).
here=$(cd "$(dirname "$0")" && pwd) || exit 2
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 || { echo "sweep.sh: $PYTHON not found (sweep.py needs python3; set PYTHON)" >&2; exit 2; }
exec "$PYTHON" "$here/sweep.py" "$@"
