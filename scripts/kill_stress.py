#!/usr/bin/env python3
"""Kill sphsim with SIGKILL many times and check what each kill leaves (docs/reliability.md).

Each trial starts a run of a small 2D dam that writes a snapshot every 4 steps, kills it with
SIGKILL at a random moment, and then checks the file:
  - h5py opens it and reads every dataset of every committed snapshot (NSteps of them), and each
    committed snapshot equals the same snapshot of an uninterrupted reference run, bit for bit;
  - VTK's vtkHDFReader loads the last committed step without an error (with NSteps 0: an empty
    PolyData, or, after a kill between the first snapshot's part counts and its commit, that
    complete first snapshot, counted as uncommitted_first_shown);
  - `sphsim --resume` completes it, and the result equals the reference file.
Modes:
  random     kill moments uniform from the moment the file appears (under its temporary name,
             after the start-up, which writes nothing) to the end of the run as timed on a
             reference run (timed again every 50 trials), first snapshot included;
  first      kill moments uniform over the window in which the file is created and its first
             snapshot written: from the moment the file appears under its temporary name to
             half as long again after the first commit (that span measured on the reference run);
  overwrite  as random, with --overwrite over a complete older file: after the kill the path
             holds either that older file, untouched, or the new run's file.

Usage: scripts/kill_stress.py [--kills N] [--mode random|first|overwrite] [--seed S]
                              [--bin build/sphsim] [--work DIR] [--no-resume-every K]
A run that ends before its kill moment is not counted (and is run again). Exit status 0 when
every trial passed; prints one JSON summary line.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SCENE = {
    "format": 1, "name": "kill_stress", "dimensions": 2, "mode": "sph",
    "tank": {"min": [0, 0], "max": [0.4, 0.3]},
    "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01},
    "time": {"end": 0.02}, "output": {"interval": 0.0005},
}


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def committed(h5):
    """Every dataset of every committed snapshot, read with h5py: a list of dicts."""
    out = []
    with h5py.File(h5, "r", locking=False) as f:
        ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
        n = int(f["VTKHDF/NumberOfPoints"][0]) if ns else 0
        steps = f["VTKHDF/Steps"]
        nv = steps["Values"].shape[0]
        if ns > 1 and nv not in (ns, ns - 1):
            raise AssertionError(f"Steps/Values has {nv} entries, NSteps {ns}")
        for k in range(ns):
            po = int(steps["PointOffsets"][k])
            s = {"Points": f["VTKHDF/Points"][po:po + n]}
            for name, ds in f["VTKHDF/PointData"].items():
                off = int(steps["PointDataOffsets"][name][k])
                s[name] = ds[off:off + n]
            for name in ("step", "time", "n_outside", "n_contacts"):
                s["steps/" + name] = f["sphsim/steps"][name][k]
            if k < nv:
                s["Values"] = steps["Values"][k]
            if s["Points"].shape != (n, 3) or not np.isfinite(s["Points"]).all():
                raise AssertionError(f"snapshot {k}: bad Points")
            if not np.array_equal(s["id"], np.arange(n)):
                raise AssertionError(f"snapshot {k}: ids not 0..n-1")
            out.append(s)
    return out


def read_all(h5):
    data = {}
    with h5py.File(h5, "r", locking=False) as f:
        f.visititems(lambda name, o: data.__setitem__(name, o[()]) if isinstance(o, h5py.Dataset) else None)
        data["NSteps"] = int(f["VTKHDF/Steps"].attrs["NSteps"])
    return data


def same_files(a, b):
    da, db = read_all(a), read_all(b)
    if sorted(da) != sorted(db):
        return f"datasets differ: {sorted(set(da) ^ set(db))}"
    for k in da:
        if not np.array_equal(da[k], db[k]):
            return f"dataset {k} differs"
    return None


class VtkCheck:
    def __init__(self):
        from vtkmodules.vtkCommonCore import vtkOutputWindow, vtkStringOutputWindow
        from vtkmodules.vtkIOHDF import vtkHDFReader
        self.ow = vtkStringOutputWindow()
        vtkOutputWindow.SetInstance(self.ow)
        self.Reader = vtkHDFReader

    def last_step(self, h5, ns, n, first=None):
        self.ow.SetOutput("") if hasattr(self.ow, "SetOutput") else None
        before = len(self.ow.GetOutput())
        r = self.Reader()
        r.SetFileName(str(h5))
        r.UpdateInformation()
        if ns > 0 and r.GetNumberOfSteps() != ns:
            return f"VTK sees {r.GetNumberOfSteps()} steps, NSteps {ns}"
        r.SetStep(max(ns - 1, 0))
        r.Update()
        got = r.GetOutput().GetNumberOfPoints()
        if ns == 0 and got == n and first is not None:
            # killed between the first snapshot's part counts and its commit: VTK shows that
            # snapshot, complete (its data was on disk before the counts); docs/output-format.md
            from vtkmodules.util.numpy_support import vtk_to_numpy
            x = vtk_to_numpy(r.GetOutput().GetPoints().GetData())
            if not np.array_equal(x, first):
                return "VTK shows an uncommitted first snapshot that differs from the reference's"
            return "first-shown"
        if got != (n if ns else 0):
            return f"VTK: {got} points in step {ns - 1}"
        err = self.ow.GetOutput()[before:]
        if "ERROR" in err:
            return "vtkHDFReader: " + err[:800]
        return None


def run_ref(binary, scene, out):
    """The reference run: its file, wall time, and the moments (s after start) when the file
    appeared and when the first snapshot was committed (the sidecar lists one grid)."""
    t0 = time.monotonic()
    p = subprocess.Popen([binary, str(scene), "-o", str(out), "--quiet"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    t_file = t_first = None
    xmf = out.with_suffix(".xmf")
    while p.poll() is None:
        now = time.monotonic() - t0
        if t_file is None and out.exists():
            t_file = now
        if t_first is None and xmf.exists():
            try:
                if "<Grid Name=\"step" in xmf.read_text() or "<Time " in xmf.read_text():
                    t_first = now
            except OSError:
                pass
        time.sleep(0.002)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"reference run failed: {p.stderr.read().decode()[-2000:]}")
    return wall, t_file or 0.0, t_first or wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--mode", choices=("random", "first", "overwrite"), default="random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default=os.environ.get("SPHSIM", str(ROOT / "build" / "sphsim")))
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temporary one, removed)")
    ap.add_argument("--resume-every", type=int, default=1, help="resume every K-th killed file (1: all)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--stats", default=None, help="also write the running figures (JSON) to this file after each trial")
    a = ap.parse_args(argv)

    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="sphsim_kill_"))
    work.mkdir(parents=True, exist_ok=True)
    scene = work / "scene.json"
    scene.write_text(json.dumps(SCENE))
    ref = work / "ref.h5"
    for p in (ref, ref.with_suffix(".xmf")):
        p.unlink(missing_ok=True)
    wall, t_file, t_first = run_ref(a.bin, scene, ref)
    ref_snaps = committed(ref)
    n = int(ref_snaps[0]["Points"].shape[0])
    vtk = VtkCheck()
    rng = random.Random(a.seed)
    stats = {"mode": a.mode, "kills": 0, "unreadable": 0, "vtk_failures": 0, "wrong_snapshots": 0,
             "resumes": 0, "failed_resumes": 0, "no_file": 0, "nsteps_0": 0, "uncommitted_first_shown": 0, "ended_before_kill": 0, "old_file_kept": 0,
             "nsteps_hist": {}, "ref_wall_s": round(wall, 3), "first_commit_s": round(t_first, 3)}
    failures = []
    out = work / "run.h5"
    trial = -1
    while stats["kills"] < a.kills and trial < 3 * a.kills:  # runs that end before their kill do not count
        trial += 1
        for p in (out, out.with_suffix(".xmf"), Path(str(out) + ".creating")):
            p.unlink(missing_ok=True)
        extra = []
        old_sha = None
        if a.mode == "overwrite":
            shutil.copy(ref, out)
            shutil.copy(ref.with_suffix(".xmf"), out.with_suffix(".xmf"))
            old_sha = sha(out)
            extra = ["--overwrite"]
        if trial and trial % 50 == 0:  # the machine's load changes: time the reference again
            ref2 = work / "ref2.h5"
            for p in (ref2, ref2.with_suffix(".xmf")):
                p.unlink(missing_ok=True)
            wall, t_file, t_first = run_ref(a.bin, scene, ref2)
        proc = subprocess.Popen([a.bin, str(scene), "-o", str(out), "--quiet", *extra], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # The kill moments count from the moment the new file appears under its temporary name
        # (the start-up before it, device and kernels, writes nothing): uniform up to the end
        # of the run (random), or up to half as long again after the first commit (first), as
        # timed on the reference run.
        creating = Path(str(out) + ".creating")
        t0 = time.monotonic()
        while not creating.exists() and not (a.mode != "overwrite" and out.exists()) and proc.poll() is None \
                and time.monotonic() - t0 < 30:
            time.sleep(0.0005)
        if a.mode == "first":
            delay = rng.uniform(0.0, 1.5 * max(t_first - t_file, 0.005))
        else:
            delay = rng.uniform(0.0, max(wall - t_file, 0.01))
        time.sleep(delay)
        ended = proc.poll() is not None
        proc.kill()
        proc.wait()
        if ended:
            stats["ended_before_kill"] += 1
            continue
        stats["kills"] += 1
        what = f"trial {trial} (SIGKILL after {delay:.3f} s)"
        try:
            if not out.exists():
                stats["no_file"] += 1
                continue
            if old_sha is not None and sha(out) == old_sha:
                stats["old_file_kept"] += 1
                continue
            try:
                snaps = committed(out)
            except Exception as ex:
                stats["unreadable"] += 1
                raise AssertionError(f"h5py: {ex}")
            ns = len(snaps)
            stats["nsteps_hist"][ns] = stats["nsteps_hist"].get(ns, 0) + 1
            if ns == 0:
                stats["nsteps_0"] += 1
            for k, s in enumerate(snaps):
                for name, v in s.items():
                    if not np.array_equal(v, ref_snaps[k][name]):
                        stats["wrong_snapshots"] += 1
                        raise AssertionError(f"snapshot {k} ({name}) differs from the reference")
            bad = vtk.last_step(out, ns, n, ref_snaps[0]["Points"])
            if bad == "first-shown":
                stats["uncommitted_first_shown"] += 1
                bad = None
            if bad:
                stats["vtk_failures"] += 1
                raise AssertionError(bad)
            if ns >= 1 and trial % a.resume_every == 0:
                stats["resumes"] += 1
                p = subprocess.run([a.bin, "--resume", str(out), "--quiet"], capture_output=True, text=True)
                diff = same_files(out, ref) if p.returncode == 0 else None
                if p.returncode != 0 or diff:
                    stats["failed_resumes"] += 1
                    raise AssertionError(f"--resume: exit {p.returncode} {diff or ''} {p.stderr[-800:]}")
        except AssertionError as ex:
            failures.append(f"{what}: {ex}")
            keep = work / f"failed_{trial}.h5"
            if out.exists():
                shutil.copy(out, keep)
        if a.stats:
            Path(a.stats).write_text(json.dumps(dict(stats, failures=len(failures), trials=trial + 1)) + "\n")
        if not a.quiet and stats["kills"] % 50 == 0:
            print(f"{stats['kills']} kills, {len(failures)} failures", file=sys.stderr, flush=True)
    stats["failures"] = len(failures)
    stats["nsteps_hist"] = {str(k): v for k, v in sorted(stats["nsteps_hist"].items())}
    for f in failures[:20]:
        print(f, file=sys.stderr)
    print(json.dumps(stats))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
