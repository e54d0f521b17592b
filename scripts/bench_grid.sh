#!/bin/sh
# bench_grid.sh: build and run the neighbour-grid benchmark (tests/bench_grid.c): cell keys,
# radix sort and cell table timed separately with OpenCL profiling events, keys per second.
#
# usage: scripts/bench_grid.sh [bench options] [N...]
#   e.g. scripts/bench_grid.sh 1e4 1e5 1e6                          (here, PoCL)
#        scripts/bench_grid.sh --device gpu --reps 20 1e5 1e6 1e7 1e8   (a GPU)
#   options: --device SEL --dims 2|3 --reps R --max-seconds S --radix B --wg W --items I
# The one compile line (no HDF5 or cJSON needed; CFLAGS/LDFLAGS may add -I/-L for OpenCL):
#   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Isrc -o build/bench_grid tests/bench_grid.c \
#      src/grid.c src/grid_sort.c src/device.c src/comm.c src/status.c build/kernels_embedded.c -lOpenCL -lm
set -eu
case "${1:-}" in
-h | --help)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."
mkdir -p build
sh scripts/embed-kernels.sh build/kernels_embedded.c $(ls kernels/*.h kernels/*.cl | LC_ALL=C sort)
${CC:-cc} -std=c11 -O2 -D_POSIX_C_SOURCE=200809L ${CFLAGS:-} -Isrc -o build/bench_grid tests/bench_grid.c \
    src/grid.c src/grid_sort.c src/device.c src/comm.c src/status.c build/kernels_embedded.c ${LDFLAGS:-} -lOpenCL -lm
if [ $# -eq 0 ]; then set -- 1e4 1e5 1e6; fi
exec build/bench_grid "$@"
