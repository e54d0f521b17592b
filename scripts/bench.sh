#!/bin/sh
# `make bench`: the neighbour-grid benchmark and the whole-step benchmark, on the default
# device (a GPU when there is one). Record the figures in docs/performance.md.
#   SIZES   particle counts for the whole-step benchmark (default 1e4,1e5,1e6: the CPU range;
#           on an H200 use e.g. SIZES=1e5,1e6,1e7,3e7)
#   GRID_N  particle counts for the grid benchmark (default 1e4 1e5 1e6)
#   DEVICE  sphsim --device selector (default: automatic)
#   UNTIL   also the developed flow: the 3D dam break run to simulated time UNTIL (s), with the
#           time per step over each 0.05 s (e.g. UNTIL=0.6: the surge hits the far wall at about
#           0.46 s); DEVELOPED_SIZES its particle counts (default 1e5; on an H200 e.g. 1e7)
set -eu
cd "$(dirname "$0")/.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
dev=""
[ -n "${DEVICE:-}" ] && dev="--device $DEVICE"
echo "== neighbour grid rebuild (keys + sort + cell table)"
# shellcheck disable=SC2086
sh scripts/bench_grid.sh $dev --reps 10 ${GRID_N:-1e4 1e5 1e6}
echo "== whole step"
# shellcheck disable=SC2086
$PY scripts/bench.py $dev --sizes "${SIZES:-1e4,1e5,1e6}" --out build/bench
echo "wrote build/bench.csv and build/bench.png"
if [ -n "${UNTIL:-}" ]; then
    echo "== developed flow (3D dam break to t = $UNTIL s)"
    # shellcheck disable=SC2086
    $PY scripts/bench.py $dev --scenes dam_break_3d --sizes "${DEVELOPED_SIZES:-1e5}" --until "$UNTIL" \
        --out build/bench_developed
    echo "wrote build/bench_developed.csv and build/bench_developed.png"
fi
