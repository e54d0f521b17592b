#!/bin/sh
# `make bench`: the neighbour-grid benchmark and the whole-step benchmark, on the default
# device (a GPU when there is one). Record the figures in docs/performance.md.
#   SIZES   particle counts for the whole-step benchmark (default 1e4,1e5,1e6: the CPU range;
#           on an H200 use e.g. SIZES=1e5,1e6,1e7,3e7)
#   GRID_N  particle counts for the grid benchmark (default 1e4 1e5 1e6)
#   DEVICE  sphsim --device selector (default: automatic)
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
