#!/usr/bin/env python3
"""Parameter sweeps of sphsim: one run per value of a scene key, or per combination of the values
of several keys (their Cartesian product), N runs at a time or one per listed device, with every
run's JSON summary line gathered into one CSV table. scripts/sweep.sh runs this file; the two take
the same arguments. Standard library only.

    sweep.sh SCENE KEY VALUE... [--and KEY VALUE...]... [-j N] [--devices LIST] [-o DIR]
             [--overwrite] [-- SPHSIM_ARGS...]

Files in DIR, for every run NAME (its KEY=VALUE pairs, joined by "+", unsafe characters as "_"):
NAME.h5 and .xmf (sphsim's output), NAME.log (its stderr), NAME.json (its stdout, the summary
line); summary.csv (one row per run); .sweep/definition.json (what the sweep runs: scene file,
keys, values, sphsim arguments) and .sweep/runs/NAME.json (each run's command, device slot,
start and end time, exit code). docs/sweeps.md describes all of it.
"""
import csv
import errno
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PROG = "sweep.sh"
HERE = Path(__file__).resolve().parent

USAGE = """\
usage: scripts/sweep.sh SCENE KEY VALUE... [--and KEY VALUE...]... [-j N] [--devices LIST]
                        [-o DIR] [--overwrite] [-- SPHSIM_ARGS...]

Runs `sphsim SCENE --set KEY=VALUE ... -o DIR/NAME.h5 SPHSIM_ARGS...` once per VALUE, or once
per combination of the values of all keys given with --and (their Cartesian product), and writes
DIR/summary.csv (one row per run, failed runs included). A rerun into the same DIR keeps the runs
that ended ok and redoes the others.

  -j N            parallel runs (default 1; with --devices, the number of devices listed)
  --and KEY VAL.. one more key and its values: the sweep runs every combination
  --devices LIST  comma-separated sphsim --device selectors (e.g. 0,1,2,3): each run gets one,
                  one run per listed device at a time (list a device twice for two runs on it)
  -o DIR          output folder (default sweep-KEY)
  --overwrite     redo every run, replacing its output (also after a changed sweep definition)
  --              pass the remaining arguments to every sphsim run
  -h              this help

Exit status: 0 all runs succeeded, 1 some run failed, 2 usage error, 130 interrupted.
Environment: SPHSIM (sphsim binary), PYTHON (python3 that runs this script).
Example: scripts/sweep.sh scenes/dam_break_2d.json fluid.spacing 0.01 0.005 --and fluid.kernel \\
             wendland cubic_spline -j 2 -o conv
"""

COLUMNS = ["key", "value", "status", "exit_code", "particles", "steps", "simulated_time_s", "wall_time_s",
           "particle_steps_per_s", "output", "error"]
# Status names of exit codes, for runs that printed no summary line.
EXIT_STATUS = {2: "usage-error", 3: "invalid-scene", 4: "io-error", 5: "device-error", 6: "numerical-failure",
               126: "not-executable", 127: "not-found", 130: "interrupted", 143: "interrupted"}
STATUS_EXIT = {"ok": 0, "usage-error": 2, "invalid-scene": 3, "io-error": 4, "device-error": 5,
               "numerical-failure": 6, "interrupted": 130}
# sphsim options that change neither the physics nor the output's content: left out of the
# comparison of a rerun with the sweep recorded in DIR (--overwrite is the sweep's own option).
NEUTRAL_FLAGS = {"--overwrite", "--quiet", "-q"}
NEUTRAL_WITH_VALUE = ("--progress", "--device")
SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+=-")
NAME_MAX = 240  # bytes of a run's name; its files add at most ".json" or ".log"


class UsageError(Exception):
    pass


def safe_name(text):
    """File-name form of KEY=VALUE: every byte outside [A-Za-z0-9._+=-] becomes "_"."""
    return "".join(chr(b) if b in SAFE else "_" for b in text.encode("utf-8"))


def option_value(args, i, name):
    """For args[i] == NAME (value in args[i + 1]) or NAME=VALUE: (value, next index), else None."""
    a = args[i]
    if a == name:
        if i + 1 >= len(args):
            raise UsageError(f"{name} needs a value")
        return args[i + 1], i + 2
    if a.startswith(name + "="):
        return a[len(name) + 1:], i + 1
    return None


def parse_args(argv):
    """The command line as a dict; raises UsageError."""
    o = {"jobs": None, "dir": None, "devices": None, "overwrite": False, "help": False, "sphsim_args": []}
    scene = None
    keys = []  # [key, [values]] in the order given
    after_and = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            o["help"] = True
            return o
        if a == "--":
            o["sphsim_args"] = argv[i + 1:]
            break
        if a.startswith("-j"):  # -j N or -jN
            if a == "-j":
                if i + 1 >= len(argv):
                    raise UsageError("-j needs a number")
                v, i = argv[i + 1], i + 2
            else:
                v, i = a[2:], i + 1
            if not v.isdigit() or int(v) < 1:
                raise UsageError(f"-j {v}: expected a whole number >= 1")
            o["jobs"] = int(v)
            continue
        if a == "-o":
            if i + 1 >= len(argv):
                raise UsageError("-o needs a folder")
            o["dir"], i = argv[i + 1], i + 2
            continue
        r = option_value(argv, i, "--devices")
        if r is not None:
            o["devices"] = [d.strip() for d in r[0].split(",")]
            if any(not d for d in o["devices"]):
                raise UsageError(f"--devices {r[0]}: expected device selectors separated by commas, e.g. 0,1,2,3")
            i = r[1]
            continue
        if a == "--overwrite":
            o["overwrite"] = True
            i += 1
            continue
        if a == "--and":
            if scene is None or not keys:
                raise UsageError("--and comes after SCENE KEY VALUE...")
            after_and = True
            i += 1
            continue
        if a.startswith("--"):
            raise UsageError(f"unknown option {a} (sphsim's options go after --)")
        # a positional argument: the scene, a key, or a value (which may start with "-", e.g. -1.62)
        if scene is None:
            scene = a
        elif not keys or after_and:
            keys.append([a, []])
            after_and = False
        else:
            keys[-1][1].append(a)
        i += 1
    if scene is None:
        raise UsageError("no scene given")
    if not keys:
        raise UsageError("no key given")
    if after_and:
        raise UsageError("--and needs a KEY and its values after it")
    seen = set()
    for key, values in keys:
        if "=" in key:
            raise UsageError(f"KEY must not contain '=' (give KEY and the VALUEs separately): {key}")
        if not key.strip() or key.split() != [key]:
            raise UsageError(f"KEY must not be empty or contain spaces: {key!r}")
        if key in seen:
            raise UsageError(f"{key} is given twice")
        seen.add(key)
        if not values:
            raise UsageError(f"no values given for {key}")
        for v in values:
            if "\n" in v:
                raise UsageError("a value may not contain a newline")
    o["scene"] = scene
    o["keys"] = keys
    return o


def split_sphsim_args(args):
    """(args without the --overwrite flags, whether one was there, the --device selector or None,
    the keys the args --set, the args that define the runs' results)."""
    kept, defining, set_keys = [], [], []
    overwrite, device = False, None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--overwrite":
            overwrite = True
            i += 1
            continue
        r = None
        for name in ("--progress", "--device", "--set"):
            r = option_value(args, i, name)
            if r is not None:
                break
        if r is not None:
            kept += args[i:r[1]]
            if name == "--device":
                device = r[0]
            if name == "--set":
                set_keys.append(r[0].split("=", 1)[0])
            if name not in NEUTRAL_WITH_VALUE:
                defining += args[i:r[1]]
            i = r[1]
            continue
        kept.append(a)
        if a not in NEUTRAL_FLAGS:
            defining.append(a)
        i += 1
    return kept, overwrite, device, set_keys, defining


def plan_runs(keys):
    """One run per combination of values, the first key varying slowest: a list of dicts with
    the run's (key, value) pairs and its file name. Raises UsageError on clashing names."""
    runs = []
    names = {}
    for combo in itertools.product(*[[(k, v) for v in values] for k, values in keys]):
        name = "+".join(safe_name(f"{k}={v}") for k, v in combo)
        if len(name.encode()) > NAME_MAX:
            raise UsageError(f"the file name of {' '.join(f'{k}={v}' for k, v in combo)} would be longer than "
                             f"{NAME_MAX} bytes; use shorter values")
        if name in names:
            raise UsageError(f"values give the same output name more than once: {name} "
                             f"({names[name]} and {' '.join(f'{k}={v}' for k, v in combo)})")
        names[name] = " ".join(f"{k}={v}" for k, v in combo)
        runs.append({"settings": list(combo), "name": name})
    return runs


def sphsim_binary():
    if os.environ.get("SPHSIM"):
        found = shutil.which(os.environ["SPHSIM"])
        if not found:
            raise UsageError(f"SPHSIM={os.environ['SPHSIM']}: no such executable")
        return found
    local = HERE.parent / "build" / "sphsim"
    if os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("sphsim")
    if not found:
        raise UsageError("no sphsim binary (build it with make, or set SPHSIM)")
    return found


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json(path, data):
    """Write data to path through a temporary file, so that a reader never sees half of it."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def describe_difference(old, new):
    """What differs between two sweep definitions, in words."""
    out = []
    if old.get("scene_sha256") != new["scene_sha256"]:
        out.append(f"the scene file differs (was {old.get('scene')}, sha256 {str(old.get('scene_sha256'))[:12]}..., "
                   f"now {new['scene']}, sha256 {new['scene_sha256'][:12]}...)")
    ok, nk = old.get("keys", []), new["keys"]
    if [k for k, _ in ok] != [k for k, _ in nk]:
        out.append(f"the keys were {' '.join(k for k, _ in ok) or '(none)'}, now {' '.join(k for k, _ in nk)}")
    else:
        for (k, ov), (_, nv) in zip(ok, nk):
            if ov != nv:
                out.append(f"the values of {k} were {' '.join(ov)}, now {' '.join(nv)}")
    if old.get("sphsim_args") != new["sphsim_args"]:
        out.append(f"the sphsim arguments were {' '.join(old.get('sphsim_args', [])) or '(none)'}, "
                   f"now {' '.join(new['sphsim_args']) or '(none)'}")
    return "; ".join(out) or "the recorded definition is unreadable"


def file_stamp(d, name):
    """[modification time in ns, size] of the run's summary file NAME.json, or None."""
    try:
        st = os.stat(os.path.join(d, name + ".json"))
        return [st.st_mtime_ns, st.st_size]
    except OSError:
        return None


def read_result(d, name, record):
    """How a run ended, from its files: the summary line (NAME.json), the log (NAME.log) and its
    record in .sweep/runs/ (None when it has none). Returns (summary, exit code or None, status,
    error message)."""
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
    rc = record.get("exit_code") if record else None
    if rc is None and summary.get("status") == "ok":
        rc = 0  # sphsim ended ok, but the sweep was killed before it wrote the record
    elif summary and record and record.get("summary_file") not in (None, file_stamp(d, name)):
        rc = STATUS_EXIT.get(summary.get("status"))  # a later run into the same files: a resume by hand
    error = summary.get("error", "")
    if rc != 0 and not error:
        # no summary line: the last "sphsim: ..." message of the log says why
        try:
            with open(os.path.join(d, name + ".log"), errors="replace") as f:
                msgs = [l.strip() for l in f if l.strip()]
            hits = [m for m in msgs if m.startswith("sphsim: ")]
            error = hits[-1][len("sphsim: "):] if hits else (msgs[-1] if msgs else "")
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
        status = EXIT_STATUS.get(rc, "failed")
    if status == "ok" and rc != 0:
        status = EXIT_STATUS.get(rc, "failed")
    return summary, rc, status, error


def finished_ok(d, run, record):
    """Whether a run ended ok: exit code 0, the summary line says ok and the output is there."""
    _, rc, status, _ = read_result(d, run["name"], record)
    return rc == 0 and status == "ok" and os.path.exists(os.path.join(d, run["name"] + ".h5"))


def run_row(d, run, keys, record):
    """The CSV row of one run."""
    summary, rc, status, error = read_result(d, run["name"], record)
    h5 = os.path.join(d, run["name"] + ".h5")
    wrote = rc == 0 or (summary.get("snapshots") or 0) > 0
    output = summary.get("output", h5) if wrote and os.path.exists(h5) else ""
    values = [v for _, v in run["settings"]]
    if len(keys) == 1:
        key, value = keys[0][0], values[0]
    else:
        key, value = " ".join(k for k, _ in keys), json.dumps(values)
    return [key, value, status, "" if rc is None else rc,
            summary.get("particles", ""), summary.get("steps", ""), summary.get("simulated_time_s", ""),
            summary.get("wall_time_s", ""), summary.get("particle_steps_per_s", ""), output, error] + values


def key_columns(keys):
    """One column per key, named by the key; "set:KEY" where the key is one of the fixed columns
    (a sweep of the scene's whole "output" object, say)."""
    return [f"set:{k}" if k in COLUMNS else k for k, _ in keys]


def write_table(d, runs, keys, records):
    """Rewrite DIR/summary.csv whole from every run's files; returns the number of runs not ok."""
    failed = 0
    path = os.path.join(d, "summary.csv")
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as out:
        w = csv.writer(out, lineterminator="\n")
        w.writerow(COLUMNS + key_columns(keys))
        for run in runs:
            record = records.get(run["name"])
            failed += not finished_ok(d, run, record)
            w.writerow(run_row(d, run, keys, record))
    os.replace(tmp, path)
    return failed


class Interrupted:
    """SIGINT, SIGTERM and SIGHUP: no new runs start, the running ones get the signal once (they
    run in their own process groups, so a terminal's Ctrl-C reaches them only through this)."""

    def __init__(self):
        self.stopped = False
        self.signal = None  # the one passed on to the runs
        self.procs = []
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, self.handler)

    def handler(self, sig, _frame):
        self.stopped = True
        self.signal = signal.SIGINT if sig == signal.SIGHUP else sig
        for p in self.procs:
            self.pass_on(p)

    def pass_on(self, p):
        if p.poll() is None:
            try:
                p.send_signal(self.signal)
            except OSError:
                pass

    def add(self, p):
        self.procs.append(p)
        if self.stopped:  # the signal came while it was starting
            self.pass_on(p)


def launch(cmd, d, name):
    """Start one run, its stdout in NAME.json and stderr in NAME.log, in a process group of its own.
    Returns the Popen, or the exit code a shell would give (126, 127) when it cannot start."""
    with open(os.path.join(d, name + ".json"), "w") as out, open(os.path.join(d, name + ".log"), "w") as err:
        try:
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=os.setpgrp)
        except OSError as e:
            print(f"{PROG}: cannot run {cmd[0]}: {e.strerror}", file=err)
            return 127 if e.errno == errno.ENOENT else 126


def execute(d, todo, slots, base_cmd, records, interrupted):
    """Run the runs in `todo` (in order), one per free slot; a slot is a device selector or None.
    Each run's record (.sweep/runs/NAME.json) is written when it starts and when it ends."""
    free = list(range(len(slots)))
    running = {}  # slot -> (run, record, Popen or the exit code of a run that could not start)
    pending = list(todo)
    total = len(todo)
    started = 0
    while (pending and not interrupted.stopped) or running:
        while pending and free and not interrupted.stopped:
            run, sphsim_extra = pending.pop(0)
            slot = free.pop(0)
            cmd = base_cmd(run, slots[slot]) + sphsim_extra
            started += 1
            record = {"name": run["name"], "settings": run["settings"], "command": cmd, "slot": slot,
                      "device": slots[slot], "start": time.time(), "end": None, "exit_code": None,
                      "number": started}
            write_json(os.path.join(d, ".sweep", "runs", run["name"] + ".json"), record)
            p = launch(cmd, d, run["name"])
            if not isinstance(p, int):
                interrupted.add(p)
            running[slot] = (run, record, p)
        for slot, (run, record, p) in list(running.items()):
            rc = p if isinstance(p, int) else p.poll()
            if rc is None:
                continue
            if rc < 0:
                rc = 128 - rc  # killed by signal -rc: the exit code a shell reports
            record["end"] = time.time()
            record["exit_code"] = rc
            record["summary_file"] = file_stamp(d, run["name"])  # tells a later change of NAME.json
            write_json(os.path.join(d, ".sweep", "runs", run["name"] + ".json"), record)
            records[run["name"]] = record
            del running[slot]
            if not isinstance(p, int):
                interrupted.procs.remove(p)
            free.append(slot)
            free.sort()
            where = "" if record["device"] is None else f" on device {record['device']}"
            res = "ok" if rc == 0 else f"FAILED (exit {rc})"
            settings = " ".join(f"{k}={v}" for k, v in run["settings"])
            print(f"{PROG}: [{record['number']}/{total}] {settings}{where}: {res}", file=sys.stderr, flush=True)
        if running:
            time.sleep(0.02)


def main(argv):
    try:
        o = parse_args(argv)
        if o["help"]:
            sys.stdout.write(USAGE)
            return 0
        sphsim_args, pass_overwrite, device_arg, set_keys, defining = split_sphsim_args(o["sphsim_args"])
        overwrite = o["overwrite"] or pass_overwrite
        keys = o["keys"]
        for k in set_keys:
            if k in [key for key, _ in keys]:
                raise UsageError(f"{k} is swept, but the sphsim arguments also --set it")
        devices = o["devices"]
        if devices is not None:
            if device_arg is not None:
                raise UsageError("--devices gives each run its device: no --device among the sphsim arguments")
            if o["jobs"] is not None and o["jobs"] > len(devices):
                raise UsageError(f"-j {o['jobs']}: at most one run per listed device at a time, and --devices lists "
                                 f"{len(devices)} (list a device twice to give it two runs at once)")
            slots = devices[:o["jobs"] or len(devices)]  # -j N: the first N devices listed
        else:
            slots = [None] * (o["jobs"] or 1)
        runs = plan_runs(keys)
        scene = o["scene"]
        if not os.path.isfile(scene):
            raise UsageError(f"{scene}: no such scene file")
        binary = sphsim_binary()
    except UsageError as e:
        print(f"{PROG}: {e}\n(see scripts/sweep.sh -h)", file=sys.stderr)
        return 2

    interrupted = Interrupted()  # from here on, a signal stops the sweep with its table written
    d = o["dir"] or "sweep-" + "+".join(safe_name(k) for k, _ in keys)
    if os.path.exists(d) and not os.path.isdir(d):
        print(f"{PROG}: -o {d}: a file, not a folder (-o names the folder the runs and the table go into)",
              file=sys.stderr)
        return 2
    try:
        os.makedirs(d, exist_ok=True)
        lock = os.open(d, os.O_RDONLY)  # held until the process ends
    except OSError as e:
        print(f"{PROG}: {d}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"{PROG}: another sweep is running into {d}/", file=sys.stderr)
        return 2
    except OSError:
        pass  # a file system without locks

    meta = os.path.join(d, ".sweep")
    with open(scene, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    definition = {"format": 1, "scene": scene, "scene_sha256": sha, "keys": keys, "sphsim_args": defining}
    def_path = os.path.join(meta, "definition.json")
    old = read_json(def_path)
    earlier = old is not None or os.path.exists(meta) or os.path.exists(os.path.join(d, "summary.csv"))
    same = old is not None and all(old.get(k) == definition[k] for k in ("format", "scene_sha256", "keys",
                                                                           "sphsim_args"))
    if earlier and not same and not overwrite:
        why = describe_difference(old, definition) if old is not None else \
            "it has no record of the sweep that wrote it (an older sweep.sh, or not a sweep)"
        print(f"{PROG}: {d}/ holds a different sweep: {why}.\n"
              f"{PROG}: nothing was run and its files are unchanged; choose another -o, or pass --overwrite "
              f"to redo every run there", file=sys.stderr)
        return 2
    if not same and os.path.exists(meta):
        shutil.rmtree(meta)  # the records of the sweep that ran there before (or of an older sweep.sh)
    os.makedirs(os.path.join(meta, "runs"), exist_ok=True)
    if overwrite:
        for f in os.listdir(os.path.join(meta, "runs")):
            os.remove(os.path.join(meta, "runs", f))
    write_json(def_path, definition)

    records = {}
    for run in runs:
        r = read_json(os.path.join(meta, "runs", run["name"] + ".json"))
        if r is not None:
            records[run["name"]] = r
    kept = [] if overwrite else [run for run in runs if finished_ok(d, run, records.get(run["name"]))]
    kept_names = {run["name"] for run in kept}
    # The outputs in DIR belong to this sweep when it ran there before (same definition) or with
    # --overwrite: a run redone there replaces its earlier, failed output.
    extra = ["--overwrite"] if overwrite or same else []
    todo = [(run, sphsim_args + extra) for run in runs if run["name"] not in kept_names]

    def base_cmd(run, device):
        cmd = [binary, scene, "-o", os.path.join(d, run["name"] + ".h5")]
        for k, v in run["settings"]:
            cmd += ["--set", f"{k}={v}"]
        if device is not None:
            cmd += ["--device", device]
        return cmd

    what = " x ".join(f"{k} ({len(v)})" for k, v in keys)
    at_once = f"{len(slots)} at a time" + (f" on devices {','.join(slots)}" if devices is not None else "")
    note = f", {len(kept)} kept from an earlier sweep" if kept else ""
    print(f"{PROG}: {len(runs)} run(s) of {scene} over {what}{note}, {at_once}, into {d}/", file=sys.stderr,
          flush=True)
    execute(d, todo, slots, base_cmd, records, interrupted)

    failed = write_table(d, runs, keys, records)
    print(f"{PROG}: {len(runs) - failed} of {len(runs)} run(s) succeeded{note}; table in "
          f"{os.path.join(d, 'summary.csv')}", file=sys.stderr)
    if interrupted.stopped:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
