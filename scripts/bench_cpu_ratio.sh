#!/bin/sh
# bench_cpu_ratio.sh: build and run tests/bench_ref_step.c: ms per SPH step of a single-thread
# plain-C step (host cell list, float, the same formulas as the kernels) against build/sphsim on
# an OpenCL device, on the same scene, as one ratio; plus a one-step density/position check.
#
# usage: scripts/bench_cpu_ratio.sh [--steps K] [--reps R] [--device SEL] [--no-check] SCENE.json [--set PATH=VALUE ...]
#   e.g. scripts/bench_cpu_ratio.sh scenes/dam_break_3d.json --set fluid.particle_count=20000
#        scripts/bench_cpu_ratio.sh --device cpu scenes/dam_break_2d.json --set fluid.spacing=0.0025
# Needs `make` first (build/libsphsim.a, build/sphsim). The one compile line:
#   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Isrc -Itests -o build/bench_ref_step \
#      tests/bench_ref_step.c tests/ref_sph.c build/libsphsim.a $(pkg-config --cflags --libs OpenCL hdf5-serial libcjson) -lm
set -eu
cd "$(dirname "$0")/.."
[ -f build/libsphsim.a ] && [ -x build/sphsim ] || { echo "bench_cpu_ratio.sh: run make first" >&2; exit 2; }
# the default build's packages (the Makefile's PKGS): serial HDF5 by its explicit name
HDF5_PKG=hdf5-serial
pkg-config --exists $HDF5_PKG || HDF5_PKG=hdf5
PKGS="$HDF5_PKG libcjson OpenCL"
${CC:-cc} -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE ${CFLAGS:-} -Isrc -Itests $(pkg-config --cflags $PKGS) \
    -o build/bench_ref_step tests/bench_ref_step.c tests/ref_sph.c build/libsphsim.a \
    ${LDFLAGS:-} $(pkg-config --libs $PKGS) -lm -lpthread
if [ $# -eq 0 ]; then set -- scenes/dam_break_3d.json --set fluid.particle_count=20000; fi
exec build/bench_ref_step "$@"
