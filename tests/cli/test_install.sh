#!/bin/sh
# `make install PREFIX=...` installs the binary and the man page, and the installed binary runs
# from anywhere (its kernels are embedded).
set -u
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
check() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
make -s install PREFIX="$T/prefix" >"$T/log" 2>&1
check '[ $? -eq 0 ]' "make install failed: $(tail -c 300 "$T/log")"
check '[ -x "$T/prefix/bin/sphsim" ]' "no bin/sphsim"
check '[ -s "$T/prefix/share/man/man1/sphsim.1" ]' "no man page"
check 'grep -q "^\.TH SPHSIM 1" "$T/prefix/share/man/man1/sphsim.1"' "man page has no .TH header"
scene=$(pwd)/scenes/default.json
(cd "$T" && "$T/prefix/bin/sphsim" "$scene" --check >"$T/out" 2>&1)
check '[ $? -eq 0 ]' "installed sphsim --check from another folder failed"
(cd "$T" && "$T/prefix/bin/sphsim" "$scene" -o "$T/x.h5" --set time.end=0 --quiet >"$T/out" 2>&1)
check '[ $? -eq 0 ] && [ -s "$T/x.h5" ]' "installed sphsim could not run from another folder: $(tail -c 300 "$T/out")"
echo "test_install: $pass passed, $fail failed"
[ $fail -eq 0 ]
