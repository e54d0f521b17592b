#!/bin/sh
# Install what sphsim needs on Debian 12 / Ubuntu 24.04: compiler, pkg-config, the OpenCL ICD
# loader and headers, PoCL (a CPU OpenCL device), cJSON, HDF5, cmocka, and h5py and numpy for
# the system's python3 (scripts/sphsim_reader.py reads a run with them); with --tests also the
# tools the tests use (ParaView's pvpython, Xvfb, Open MPI and parallel HDF5 for the MPI build)
# and a Python virtual environment in .venv (h5py, numpy, vtk, matplotlib, scikit-image, pytest).
# Safe to run again.
# Usage: scripts/setup.sh [--tests]
set -eu
cd "$(dirname "$0")/.."
tests=0
[ "${1:-}" = "--tests" ] && tests=1

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

pkgs="build-essential pkg-config ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
      libcjson-dev libhdf5-dev libcmocka-dev python3 python3-venv python3-h5py python3-numpy"
[ $tests -eq 1 ] && pkgs="$pkgs paraview python3-paraview xvfb xauth hdf5-tools valgrind clang openmpi-bin libopenmpi-dev
      libhdf5-openmpi-dev"

missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing$missing" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ $tests -eq 1 ]; then
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
fi
echo "setup: done" >&2
