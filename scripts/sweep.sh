#!/bin/sh
# sweep: run sphsim once per value of one scene key (--set KEY=VALUE), in parallel, and gather
# every run's JSON summary line into one CSV table.
#
# Usage: scripts/sweep.sh SCENE KEY VALUE... [-j N] [-o DIR] [-- SPHSIM_ARGS...]
#
#   SCENE   the scene file given to every run
#   KEY     a scene path as for sphsim --set, e.g. fluid.spacing, time.end, tank.max[1]
#   VALUE   one value per run (JSON, or a plain string), e.g. 0.01 0.005 "[0,-1.62]"
#   -j N    run N simulations at once (default 1; each sphsim uses the whole OpenCL device)
#   -o DIR  output folder (default: sweep-KEY); created if missing
#   --      everything after it goes to every sphsim run (e.g. -- --device cpu --overwrite)
#
# Each run writes DIR/KEY=VALUE.h5 (+ .xmf), its stderr to DIR/KEY=VALUE.log and its stdout
# (the JSON summary line) to DIR/KEY=VALUE.json; characters other than A-Z a-z 0-9 . _ + - =
# in KEY=VALUE become "_" in these names. When all runs have ended, DIR/summary.csv gets one
# row per value, in the order given:
#   key,value,status,exit_code,particles,steps,simulated_time_s,wall_time_s,particle_steps_per_s,output,error
# A run that fails has a row too, with its status (sphsim's status name, e.g. invalid-scene,
# or one derived from the exit code when it printed no summary) and its error message.
# The script exits 0 when every run succeeded, 1 when any run failed, 2 on a usage error, 130
# when interrupted (the table is written all the same).
#
# Environment: SPHSIM (the sphsim binary; default build/sphsim next to this script's folder,
# else sphsim on PATH), PYTHON (python3 for the JSON -> CSV step). Needs POSIX sh, xargs -P
# (GNU, BSD and busybox xargs have it) and python3.
set -u

prog=sweep.sh
usage() {
    cat <<'EOF'
usage: scripts/sweep.sh SCENE KEY VALUE... [-j N] [-o DIR] [-- SPHSIM_ARGS...]

Runs `sphsim SCENE --set KEY=VALUE -o DIR/KEY=VALUE.h5 SPHSIM_ARGS...` for every VALUE,
N at a time, and writes DIR/summary.csv (one row per value, failed runs included).

  -j N     parallel runs (default 1)
  -o DIR   output folder (default sweep-KEY)
  --       pass the remaining arguments to every sphsim run
  -h       this help

Exit status: 0 all runs succeeded, 1 some run failed, 2 usage error.
Environment: SPHSIM (sphsim binary), PYTHON (python3).
Example: scripts/sweep.sh scenes/dam_break_2d.json fluid.spacing 0.01 0.0075 0.005 -j 2 -o conv
EOF
}

die_usage() {
    echo "$prog: $*" >&2
    echo "(see scripts/sweep.sh -h)" >&2
    exit 2
}

# File-name form of KEY=VALUE: anything outside [A-Za-z0-9._+=-] becomes "_".
safe_name() {
    printf '%s' "$1" | tr -c 'A-Za-z0-9._+=-' '_'
}

# ---- worker mode (called through xargs): --worker INDEX SCENE KEY DIR SPHSIM [SPHSIM_ARGS...]
if [ "${1:-}" = "--worker" ]; then
    idx=$2 scene=$3 key=$4 dir=$5 bin=$6
    shift 6
    value=$(sed -n "${idx}p" "$dir/.sweep/values")
    name=$(sed -n "${idx}p" "$dir/.sweep/names")
    "$bin" "$scene" -o "$dir/$name.h5" --set "$key=$value" "$@" >"$dir/$name.json" 2>"$dir/$name.log" </dev/null
    rc=$?
    echo "$rc" >"$dir/.sweep/$idx.rc"
    if [ "$rc" -eq 0 ]; then r=ok; else r="FAILED (exit $rc)"; fi
    echo "$prog: [$idx] $key=$value: $r" >&2
    exit 0 # a failed run is reported in summary.csv, not by stopping xargs
fi

# ---- argument parsing
jobs=1
dir=""
scene=""
key=""
nvalues=0
values_tmp=$(mktemp "${TMPDIR:-/tmp}/sweep.XXXXXX") || exit 1
trap 'rm -f "$values_tmp"' EXIT
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -j)
        [ $# -ge 2 ] || die_usage "-j needs a number"
        jobs=$2; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    -o)
        [ $# -ge 2 ] || die_usage "-o needs a folder"
        dir=$2; shift 2 ;;
    --) shift; break ;;
    *)
        if [ -z "$scene" ]; then
            scene=$1
        elif [ -z "$key" ]; then
            key=$1
        else
            case $1 in
            *'
'*) die_usage "a value may not contain a newline" ;;
            esac
            printf '%s\n' "$1" >>"$values_tmp"
            nvalues=$((nvalues + 1))
        fi
        shift ;;
    esac
done
# "$@" is now the extra sphsim arguments.

[ -n "$scene" ] || die_usage "no scene given"
[ -n "$key" ] || die_usage "no key given"
[ "$nvalues" -gt 0 ] || die_usage "no values given for $key"
case $key in
*=*) die_usage "KEY must not contain '=' (give KEY and the VALUEs separately): $key" ;;
esac
case $jobs in
'' | *[!0-9]*) die_usage "-j $jobs: expected a whole number >= 1" ;;
esac
[ "$jobs" -ge 1 ] || die_usage "-j $jobs: expected a whole number >= 1"
[ -f "$scene" ] || { echo "$prog: $scene: no such scene file" >&2; exit 2; }
[ -n "$dir" ] || dir="sweep-$(safe_name "$key")"

# The sphsim binary: $SPHSIM, else build/sphsim beside this script's folder, else PATH.
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SPHSIM:-}" ]; then
    bin=$SPHSIM
elif [ -x "$here/../build/sphsim" ]; then
    bin="$here/../build/sphsim"
else
    bin=$(command -v sphsim) || { echo "$prog: no sphsim binary (build it with make, or set SPHSIM)" >&2; exit 2; }
fi
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 || { echo "$prog: $PYTHON not found (needed for summary.csv; set PYTHON)" >&2; exit 2; }

# File names, one line per value; two values with the same name would overwrite each other.
names=$(while IFS= read -r v; do safe_name "$key=$v"; echo; done <"$values_tmp")
dups=$(printf '%s\n' "$names" | sort | uniq -d)
[ -z "$dups" ] || die_usage "values give the same output name more than once: $(printf "%s " "$dups" | tr "\n" " ")"

mkdir -p "$dir/.sweep" || exit 1
cp "$values_tmp" "$dir/.sweep/values" || exit 1
printf '%s\n' "$names" >"$dir/.sweep/names" || exit 1
rm -f "$dir"/.sweep/*.rc

echo "$prog: $nvalues run(s) of $scene over $key, $jobs at a time, into $dir/" >&2
# On Ctrl-C (or SIGTERM) the runs stop (sphsim keeps what it wrote) and the table is still
# written, with the unfinished runs as "interrupted" or "not-run" rows.
stopped=0
trap 'stopped=1' INT TERM
i=1
while [ $i -le "$nvalues" ]; do echo $i; i=$((i + 1)); done |
    xargs -P "$jobs" -I @IDX@ sh "$here/sweep.sh" --worker @IDX@ "$scene" "$key" "$dir" "$bin" "$@"

# ---- gather: one CSV row per value, in the order given.
"$PYTHON" - "$dir" "$key" <<'PY'
import csv, json, os, sys

d, key = sys.argv[1], sys.argv[2]
with open(os.path.join(d, ".sweep", "values")) as f:
    values = [line.rstrip("\n") for line in f]
with open(os.path.join(d, ".sweep", "names")) as f:
    names = [line.rstrip("\n") for line in f]
codes = {2: "usage-error", 3: "invalid-scene", 4: "io-error", 5: "device-error", 6: "numerical-failure",
         126: "not-executable", 127: "not-found", 130: "interrupted", 143: "interrupted"}
cols = ["key", "value", "status", "exit_code", "particles", "steps", "simulated_time_s", "wall_time_s",
        "particle_steps_per_s", "output", "error"]


failed = 0
with open(os.path.join(d, "summary.csv"), "w", newline="") as out:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(cols)
    for i, (v, name) in enumerate(zip(values, names), 1):
        try:
            with open(os.path.join(d, ".sweep", f"{i}.rc")) as f:
                rc = int(f.read().strip())
        except (OSError, ValueError):
            rc = None  # the worker never finished (killed)
        summary = {}
        try:
            with open(os.path.join(d, name + ".json")) as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("{"):
                        try:
                            summary = json.loads(line)
                        except ValueError:
                            pass
        except OSError:
            pass
        error = summary.get("error", "")
        if rc != 0 and not error:
            # no summary line: the last "sphsim: ..." message of the log says why
            try:
                with open(os.path.join(d, name + ".log"), errors="replace") as f:
                    msgs = [l.strip() for l in f if l.strip()]
                hits = [m for m in msgs if m.startswith("sphsim: ")]
                error = (hits[-1][len("sphsim: "):] if hits else (msgs[-1] if msgs else ""))
            except OSError:
                pass
            if not error:
                error = "no result (run did not finish)" if rc is None else f"exit code {rc}, no message"
        if "status" in summary:
            status = summary["status"]
        elif rc == 0:
            status = "ok"
        elif rc is None:
            status = "not-run"
        else:
            status = codes.get(rc, "failed")
        if rc != 0 or status != "ok":
            failed += 1
        w.writerow([key, v, status, "" if rc is None else rc,
                    summary.get("particles", ""), summary.get("steps", ""),
                    summary.get("simulated_time_s", ""), summary.get("wall_time_s", ""),
                    summary.get("particle_steps_per_s", ""),
                    summary.get("output", os.path.join(d, name + ".h5") if rc == 0 else ""),
                    error])
print(f"sweep.sh: {len(values) - failed} of {len(values)} run(s) succeeded; table in {os.path.join(d, 'summary.csv')}",
      file=sys.stderr)
sys.exit(1 if failed else 0)
PY
rc=$?
[ "$stopped" -eq 0 ] || { echo "$prog: interrupted" >&2; exit 130; }
exit $rc
