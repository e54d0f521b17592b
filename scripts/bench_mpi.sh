#!/bin/sh
# The MPI build against the default one (docs/mpi.md, docs/performance.md): the same scene run by
# build/sphsim, by build-mpi/sphsim on one rank (no exchange), on one rank with the exchange of
# several (tuning mpi_exchange=1), and on 2 and 3 ranks; prints each run's wall time and
# particle-steps per second (from the summary line), best of REPEAT runs, alternated.
# Usage: scripts/bench_mpi.sh [SCENE [REPEAT [--set KEY=VALUE ...]]]
# Needs `make` and `make MPI=1`; on a GPU node, add --device per rank as docs/mpi.md says.
set -eu
usage() { echo "usage: scripts/bench_mpi.sh [SCENE [REPEAT [--set KEY=VALUE ...]]]   (REPEAT: runs of each, default 2)"; }
case "${1:-}" in -h | --help) usage; exit 0 ;; -*) usage >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
scene=${1:-scenes/dam_break_2d.json}
repeat=${2:-2}
case "$repeat" in '' | *[!0-9]* | 0) echo "bench_mpi.sh: REPEAT must be a whole number >= 1, got '$repeat'" >&2; usage >&2; exit 2 ;; esac
[ -f "$scene" ] || { echo "bench_mpi.sh: $scene: no such scene file" >&2; exit 2; }
[ $# -ge 2 ] && shift 2 || shift $#
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rate() { sed -n 's/.*"wall_time_s":\([0-9.e+-]*\).*"particle_steps_per_s":\([0-9.e+-]*\).*/\1 \2/p' "$1"; }
for r in $(seq "$repeat"); do
    build/sphsim "$scene" -o "$out/a.h5" --overwrite -q "$@" > "$out/plain.$r"
    mpirun --bind-to none -np 1 build-mpi/sphsim "$scene" -o "$out/b.h5" --overwrite -q "$@" > "$out/mpi1.$r"
    SPHSIM_MPI_EXCHANGE=1 mpirun --bind-to none -np 1 build-mpi/sphsim "$scene" -o "$out/c.h5" --overwrite -q "$@" > "$out/mpi1x.$r"
    mpirun --bind-to none --oversubscribe -np 2 build-mpi/sphsim "$scene" -o "$out/d.h5" --overwrite -q "$@" > "$out/mpi2.$r"
    mpirun --bind-to none --oversubscribe -np 3 build-mpi/sphsim "$scene" -o "$out/e.h5" --overwrite -q "$@" > "$out/mpi3.$r"
done
printf '%-34s %10s %22s\n' run "wall (s)" "particle-steps/s"
for v in plain mpi1 mpi1x mpi2 mpi3; do
    best=$(for r in $(seq "$repeat"); do rate "$out/$v.$r"; done | sort -k2 -g -r | head -1)
    case $v in
    plain) name="build/sphsim" ;;
    mpi1) name="MPI build, 1 rank" ;;
    mpi1x) name="MPI build, 1 rank, exchange" ;;
    mpi2) name="MPI build, 2 ranks" ;;
    mpi3) name="MPI build, 3 ranks" ;;
    esac
    printf '%-34s %10s %22s\n' "$name" $best
done
