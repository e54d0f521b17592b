#!/bin/sh
# Fuzz the scene parser with libFuzzer (clang) under AddressSanitizer and UBSan.
# Usage: scripts/fuzz.sh [SECONDS=1800]   (corpus: scenes/ and tests/bad_scenes/; findings in build/fuzz/)
# Needs `make` first (build/libsphsim.a) and clang.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-1800}
out=build/fuzz
mkdir -p "$out/corpus"
cp scenes/*.json tests/bad_scenes/*.json "$out/corpus/" 2>/dev/null || true
# the parser and the initial state instrumented; what they call (meshes, geometry, the estimates
# of sph.c) from the library `make` builds, whose objects the linker takes only where needed
[ -f build/libsphsim.a ] || { echo "fuzz.sh: run make first" >&2; exit 2; }
HDF5_PKG=hdf5-serial
pkg-config --exists $HDF5_PKG || HDF5_PKG=hdf5
clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Isrc $(pkg-config --cflags libcjson) \
    tests/fuzz/fuzz_scene.c src/scene.c src/init.c build/libsphsim.a \
    $(pkg-config --libs libcjson $HDF5_PKG OpenCL) -lm -lpthread -o "$out/fuzz_scene"
cd "$out"
./fuzz_scene -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    corpus 2>&1 | tail -n 20
echo "fuzz: ran $secs s; crashes (if any) are build/fuzz/crash-*"
ls crash-* leak-* timeout-* 2>/dev/null && exit 1 || exit 0
