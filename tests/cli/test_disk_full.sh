#!/bin/sh
# End-to-end tests of sphsim on a full or unwritable disk (docs/reliability.md): a clear error
# and exit 4, never a crash; a disk too small for the run's file is found when the file is
# created, before the first step. Mounts small tmpfs file systems: as root (CI), or for another
# user inside an unprivileged user and mount namespace (unshare -rm), where it is root of its own
# mounts only. Where neither can mount, it says so and exits 77 (skipped; tests/run-all.sh
# reports it). Run from the repository root.
set -u
if [ "$(id -u)" -ne 0 ] && [ -z "${SPHSIM_DISK_FULL_NS:-}" ]; then
    if SPHSIM_DISK_FULL_NS=1 unshare -rm true 2>/dev/null; then
        SPHSIM_DISK_FULL_NS=1 exec unshare -rm sh "$0" "$@"
    fi
    echo "SKIP: test_disk_full needs to mount a tmpfs: run as root, or allow unprivileged user namespaces" \
        "(unshare -rm failed: $(unshare -rm true 2>&1 | head -n 1))"
    exit 77
fi
BIN=${SPHSIM:-build/sphsim}
T=$(mktemp -d)
M="$T/mnt"
mkdir -p "$M"
cleanup() { umount "$M" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE DESCRIPTION -- command...   (stdout -> $T/out, stderr -> $T/err)
expect() {
    want=$1; what=$2; shift 3
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, expected $want (139 = crash); stderr: $(tail -c 400 "$T/err")"; fi
}
has() { # has FILE TEXT DESCRIPTION
    if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $(tail -c 400 "$1")"; fi
}
# NSteps of an output file (the commit point), or nothing when it does not open.
nsteps() {
    if command -v h5dump >/dev/null 2>&1; then
        h5dump -a /VTKHDF/Steps/NSteps "$1" 2>/dev/null | sed -n 's/^ *(0): \([0-9][0-9]*\) *$/\1/p'
    elif [ -x .venv/bin/python ]; then
        .venv/bin/python -c 'import h5py,sys; print(int(h5py.File(sys.argv[1],"r")["VTKHDF/Steps"].attrs["NSteps"]))' "$1" 2>/dev/null
    else
        echo "no h5dump (hdf5-tools) or .venv to read $1" >&2
    fi
}
mount_tmpfs() { # mount_tmpfs OPTIONS
    if ! mount -t tmpfs -o "$1" tmpfs "$M" 2>"$T/mount.err"; then
        echo "FAIL: cannot mount a tmpfs ($1): $(cat "$T/mount.err")."
        exit 1
    fi
}

# 656 particles, a snapshot every 13 steps, 151 snapshots of about 24 kB each (3.6 MB)
cat >"$T/scene.json" <<'JSON'
{"format": 1, "dimensions": 2, "mode": "sph",
 "tank": {"min": [0, 0], "max": [0.4, 0.3]},
 "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01},
 "time": {"end": 0.3}, "output": {"interval": 0.002}}
JSON
total=$("$BIN" "$T/scene.json" --check 2>/dev/null | sed -n 's/.*"snapshots":\([0-9]*\).*/\1/p')
[ "$total" = "151" ] && ok || bad "--check snapshots: '$total', expected 151"

# ---- a disk too small for the run: the whole file (about 3.6 MB) is allocated and reserved when
# it is created, so the run is refused then, before its first step, and leaves nothing behind
for size in 8k 300k 1500k; do
    mount_tmpfs "size=$size"
    expect 4 "disk full ($size tmpfs)" -- "$BIN" "$T/scene.json" -o "$M/full.h5"
    has "$T/err" "No space left on device" "disk full ($size): the cause"
    has "$T/err" "could not reserve" "disk full ($size): the size it needed"
    has "$T/out" '"status":"io-error"' "disk full ($size): summary status"
    has "$T/out" '"snapshots":0' "disk full ($size): before any snapshot"
    [ -z "$(ls -A "$M")" ] && ok || bad "disk full ($size): files left: $(ls "$M")"
    umount "$M"
done
# room enough: the same run completes
mount_tmpfs "size=8m"
expect 0 "a run that fits" -- "$BIN" "$T/scene.json" -o "$M/full.h5" --quiet
n=$(nsteps "$M/full.h5")
[ "$n" = "$total" ] && ok || bad "a run that fits: NSteps '$n', expected $total"
umount "$M"

# ---- unwritable places: exit 4 with the reason, before any step is run
expect 4 "output under a file (/dev/null/x.h5)" -- "$BIN" "$T/scene.json" -o /dev/null/x.h5
has "$T/err" "Not a directory" "output under a file: reason"
has "$T/err" "/dev/null/x.h5" "output under a file: names the path"
expect 4 "output in a missing directory" -- "$BIN" "$T/scene.json" -o "$T/no/such/dir/x.h5"
has "$T/err" "No such file or directory" "missing directory: reason"
mount_tmpfs "size=1m,ro"
expect 4 "read-only file system" -- "$BIN" "$T/scene.json" -o "$M/ro.h5"
has "$T/err" "Read-only file system" "read-only file system: reason"
[ ! -e "$M/ro.h5" ] && ok || bad "read-only file system: a file appeared"
umount "$M"

# ---- --resume of a finished-then-read-only output: refused, file untouched
mount_tmpfs "size=4m"
expect 0 "short run" -- "$BIN" "$T/scene.json" -o "$M/short.h5" --set time.end=0.02 --quiet
sum1=$(cksum <"$M/short.h5")
if mount -o remount,ro tmpfs "$M"; then
    expect 4 "--resume on a read-only file system" -- "$BIN" --resume "$M/short.h5"
    has "$T/err" "short.h5" "--resume read-only: names the file"
    [ "$(cksum <"$M/short.h5")" = "$sum1" ] && ok || bad "--resume read-only changed the file"
else
    bad "cannot remount the tmpfs read-only"
fi
umount "$M"

echo "test_disk_full: $pass passed, $fail failed"
[ $fail -eq 0 ]
