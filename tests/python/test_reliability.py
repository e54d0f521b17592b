"""Reliability of sphsim (docs/reliability.md): what a killed, stopped, failed or resumed run
leaves in its output. Every check reads the files back with h5py and VTK's vtkHDFReader and
parses the XDMF sidecar; runs are deterministic, so a committed snapshot of an interrupted run
is compared bit for bit with the same snapshot of an uninterrupted one.

Runs as root in CI (the disk-full case mounts a small tmpfs and fails, loudly, where it cannot).
Needs build/sphsim (or $SPHSIM); about a minute on 2 cores with PoCL.
"""
import hashlib
import json
import math
import os
import random
import re
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import numpy as np
import pytest
from vtkmodules.vtkCommonCore import vtkOutputWindow, vtkStringOutputWindow
from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline
from vtkmodules.vtkIOHDF import vtkHDFReader

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("SPHSIM", ROOT / "build" / "sphsim"))
SEED = 20240917  # random kill moments: the same on every run of the test

# A small 2D dam: 200 fluid + 456 boundary particles. KILL_SCENE writes a snapshot every 4
# steps (most of its wall time is spent writing, so kills land inside the writer), 201
# snapshots, about 2 s on PoCL (0.4 s on an idle machine of 2 cores).
# STOP: the same steps and snapshots five times as long, so that a signal sent up to 0.4 s after
# the third snapshot still comes before the end on a fast machine. RESUME_SCENE: a snapshot every
# 13 steps, 1300 steps.
TINY = {
    "format": 1, "dimensions": 2, "mode": "sph",
    "tank": {"min": [0, 0], "max": [0.4, 0.3]},
    "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01},
    "time": {"end": 0.1}, "output": {"interval": 0.0005},
}
N_TINY = 656
STOP = dict(TINY, time={"end": 0.5})
RESUME = dict(TINY, time={"end": 0.2}, output={"interval": 0.002})
SPHERES = {
    "format": 1, "name": "spheres", "dimensions": 2, "mode": "particles",
    "tank": {"min": [0, 0], "max": [1, 1]}, "gravity": [0, -9.81],
    "spheres": {"groups": [{"count": 256, "radius": 0.01, "density": 1000.0,
                            "region": {"min": [0.3, 0.5], "max": [0.7, 0.9]}, "placement": "lattice",
                            "seed": 1, "velocity": [0, 0], "velocity_jitter": 0.05}],
                "restitution": 0.5, "friction": 0.4, "iterations": 4},
    "time": {"end": 0.6}, "output": {"interval": 0.02},
}
PROVENANCE_ATTRS = {"start_time", "device", "resumes", "scene_path", "name"}


# ---------------------------------------------------------------------------- helpers

@pytest.fixture(scope="module")
def work(tmp_path_factory):
    if not BIN.is_file():
        pytest.fail(f"{BIN} not built (run make)")
    d = tmp_path_factory.mktemp("reliability")
    for name, sc in (("kill", TINY), ("stop", STOP), ("resume", RESUME), ("spheres", SPHERES)):
        (d / f"{name}.json").write_text(json.dumps(sc))
    return d


def sphsim(*args, check_rc=None, timeout=120, env=None):
    p = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else {**os.environ, **env})
    if check_rc is not None:
        assert p.returncode == check_rc, f"sphsim {' '.join(map(str, args))}: exit {p.returncode}, " \
                                         f"expected {check_rc}\n{p.stderr[-2000:]}"
    return p


def summary(stdout):
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no JSON summary on stdout: {stdout!r}"
    return json.loads(lines[-1])


def xmf_of(h5):
    return h5.with_suffix(".xmf")


def read_all(h5):
    """Every dataset and every /sphsim attribute of an output file."""
    data, attrs = {}, {}
    with h5py.File(h5, "r") as f:
        f.visititems(lambda name, obj: data.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        for k, v in f["sphsim"].attrs.items():
            attrs[k] = v
        attrs["NSteps"] = int(f["VTKHDF/Steps"].attrs["NSteps"])
    return data, attrs


def snapshot(f, k, n):
    """Arrays of committed snapshot k, from the VTKHDF offsets (raw float32 / ints)."""
    steps = f["VTKHDF/Steps"]
    po = int(steps["PointOffsets"][k])
    out = {"Points": f["VTKHDF/Points"][po:po + n]}
    for name, ds in f["VTKHDF/PointData"].items():
        off = int(steps["PointDataOffsets"][name][k])
        out[name] = ds[off:off + n]
    for name in ("step", "time", "n_outside", "n_contacts"):
        out["steps/" + name] = f["sphsim/steps"][name][k]
    out["Values"] = steps["Values"][k] if k < steps["Values"].shape[0] else out["steps/time"]
    return out


def committed_snapshots(h5, n):
    with h5py.File(h5, "r") as f:
        ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
        return [snapshot(f, k, n) for k in range(ns)]


def check_h5(h5, n):
    """The file opens in h5py, its step records agree with NSteps, and every committed step's
    arrays are there, complete and sane. Returns NSteps. (docs/output-format.md: Steps/Values
    is extended just after the commit point, so after a kill it may be one entry short.)"""
    with h5py.File(h5, "r") as f:
        assert f["VTKHDF"].attrs["Type"] in (b"PolyData", "PolyData")
        ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
        nv = f["VTKHDF/Steps/Values"].shape[0]
        assert nv in (max(ns, 1), max(ns - 1, 1)), f"{h5}: Steps/Values has {nv} entries, NSteps is {ns}"
        for name in ("PointOffsets", "PartOffsets", "NumberOfParts"):
            assert f["VTKHDF/Steps"][name].shape[0] >= ns, f"{h5}: Steps/{name} shorter than NSteps {ns}"
        for name in ("step", "time", "n_outside", "n_contacts"):
            assert f["sphsim/steps"][name].shape[0] >= ns
        if ns:
            assert int(f["VTKHDF/NumberOfPoints"][0]) == n
            assert f["VTKHDF/Points"].shape[0] >= ns * n
        prev_step = -1
        for k in range(ns):
            s = snapshot(f, k, n)
            assert s["Points"].shape == (n, 3) and s["Points"].dtype == np.float32
            assert np.isfinite(s["Points"]).all() and np.isfinite(s["velocity"]).all()
            assert np.array_equal(s["id"], np.arange(n)), f"{h5} step {k}: ids not 0..n-1"
            if k < nv:
                assert s["Values"] == s["steps/time"]
            assert s["steps/step"] > prev_step
            prev_step = s["steps/step"]
    return ns


def check_vtk(h5, nsteps, n):
    """vtkHDFReader opens the file without an error and reads every committed step."""
    ow = vtkStringOutputWindow()
    vtkOutputWindow.SetInstance(ow)
    r = vtkHDFReader()
    r.SetFileName(str(h5))
    r.UpdateInformation()
    if nsteps > 0:
        assert r.GetNumberOfSteps() == nsteps, f"{h5}: VTK sees {r.GetNumberOfSteps()} steps, NSteps is {nsteps}"
        times = r.GetOutputInformation(0).Get(vtkStreamingDemandDrivenPipeline.TIME_STEPS())
        with h5py.File(h5, "r") as f:
            values = f["VTKHDF/Steps/Values"][:nsteps]
        if times is None:  # VTK gives a file of one step no time information
            assert nsteps == 1, f"{h5}: VTK reports no time steps"
        else:
            assert np.array_equal(np.asarray(times)[:len(values)], values), f"{h5}: VTK times != Steps/Values"
    for k in range(max(nsteps, 1)):
        r.SetStep(k)
        r.Update()
        out = r.GetOutput()
        assert out.GetNumberOfPoints() == (n if nsteps else 0), f"{h5} step {k}: {out.GetNumberOfPoints()} points"
        if nsteps:
            pd = out.GetPointData()
            for name in ("velocity", "density", "pressure", "id"):
                assert pd.GetArray(name) is not None and pd.GetArray(name).GetNumberOfTuples() == n
    err = ow.GetOutput()
    assert "ERROR" not in err, f"vtkHDFReader on {h5} (NSteps {nsteps}):\n{err[:1500]}"


def xmf_grids(xmf):
    """Parse the sidecar; return a list of (time, [(dataset, first row, rows, total rows)])."""
    root = ET.parse(xmf).getroot()
    coll = root.find("Domain/Grid")
    assert coll is not None and coll.get("CollectionType") == "Temporal", f"{xmf}: no temporal collection"
    grids = []
    for g in coll.findall("Grid"):
        slabs = []
        for item in g.iter("DataItem"):
            if item.get("ItemType") != "HyperSlab":
                continue
            sel, data = list(item)
            v = np.array(sel.text.split(), dtype=np.int64).reshape(3, -1)
            h5name, dset = data.text.strip().rsplit(":", 1)
            slabs.append((h5name, dset, int(v[0, 0]), int(v[2, 0]), int(data.get("Dimensions").split()[0])))
        grids.append((float(g.find("Time").get("Value")), slabs))
    return grids


def check_xmf(h5, nsteps, n, clean):
    """The sidecar parses and references committed steps only: nsteps grids after a clean end,
    nsteps or nsteps - 1 after a kill (the sidecar is rewritten after each commit)."""
    xmf = xmf_of(h5)
    if not xmf.exists():
        assert not clean, f"{xmf} missing after a clean end"
        return
    grids = xmf_grids(xmf)
    allowed = {nsteps} if clean else {nsteps, max(nsteps - 1, 0)}
    assert len(grids) in allowed, f"{xmf}: {len(grids)} grids, NSteps {nsteps}"
    with h5py.File(h5, "r") as f:
        times = f["sphsim/steps/time"][:nsteps]
        for k, (t, slabs) in enumerate(grids):
            assert t == times[k], f"{xmf} grid {k}: time {t} != steps/time {times[k]}"
            assert slabs, f"{xmf} grid {k}: no HyperSlab"
            for h5name, dset, start, count, total in slabs:
                assert h5name == h5.name and dset in f, f"{xmf}: bad reference {h5name}:{dset}"
                assert count == n and start == k * n, f"{xmf} grid {k} {dset}: rows {start}+{count}"
                assert start + count <= nsteps * n <= f[dset].shape[0]


def check_output(h5, n, clean):
    ns = check_h5(h5, n)
    check_vtk(h5, ns, n)
    check_xmf(h5, ns, n, clean)
    if clean:
        with h5py.File(h5, "r") as f:  # the datasets hold the whole run, allocated at creation
            cap = int(f["sphsim"].attrs["snapshots_allocated"])
            assert f["VTKHDF/Points"].shape[0] == cap * n
            assert f["VTKHDF/Steps/Values"].shape[0] == max(ns, 1)
            assert f["sphsim/steps/time"].shape[0] == cap
        for junk in (Path(str(h5) + ".creating"), Path(str(xmf_of(h5)) + ".tmp")):
            assert not junk.exists(), f"{junk} left behind"
    return ns


def assert_same_snapshots(got, ref, what):
    """got (a list of snapshots) equals the first len(got) snapshots of ref, bit for bit."""
    assert len(got) <= len(ref), f"{what}: {len(got)} snapshots, reference has {len(ref)}"
    for k, s in enumerate(got):
        for name, v in s.items():
            assert np.array_equal(v, ref[k][name]), f"{what}: snapshot {k} ({name}) differs from the reference"


def assert_same_files(a, b, ignore_attrs=PROVENANCE_ATTRS):
    da, aa = read_all(a)
    db, ab = read_all(b)
    assert sorted(da) == sorted(db), f"datasets differ: {sorted(set(da) ^ set(db))}"
    for k in da:
        assert da[k].dtype == db[k].dtype and np.array_equal(da[k], db[k]), f"{a} vs {b}: dataset {k} differs"
    assert sorted(aa) == sorted(ab)
    for k in aa:
        if k not in ignore_attrs:
            assert np.array_equal(np.asarray(aa[k]), np.asarray(ab[k])), f"{a} vs {b}: /sphsim attribute {k} differs"


def wait_for_grids(h5, want, proc, timeout=60):
    """Poll the sidecar until it lists `want` committed snapshots (or the run ends)."""
    xmf, t0 = xmf_of(h5), time.time()
    while time.time() - t0 < timeout and proc.poll() is None:
        try:
            if len(xmf_grids(xmf)) >= want:
                return
        except (OSError, ET.ParseError):
            pass
        time.sleep(0.02)
    pytest.fail(f"{h5}: {want} snapshots not committed within {timeout} s (exit {proc.poll()})")


def announced(h5, err_path):
    """Snapshots the run has announced as committed: the sidecar's grids (written after each
    commit) and the `snapshots` count of the last JSON progress line (the snapshots the writer
    thread has committed; the step it reports may be ahead of them)."""
    n = 0
    try:
        n = len(xmf_grids(xmf_of(h5)))
    except (OSError, ET.ParseError, AssertionError):
        pass
    try:
        for ln in Path(err_path).read_text().splitlines():
            if ln.startswith('{"progress"'):
                n = max(n, json.loads(ln)["snapshots"])
    except (OSError, ValueError):
        pass
    return n


@pytest.fixture(scope="module")
def kill_ref(work):
    """The kill scene run to its end: the reference every interrupted run is compared with,
    and its wall time (s), which scales the random kill moments to this machine."""
    ref = work / "kill_ref.h5"
    t0 = time.monotonic()
    p = sphsim(work / "kill.json", "-o", ref, "--quiet", check_rc=0)
    wall = time.monotonic() - t0
    assert summary(p.stdout)["snapshots"] == 201
    return ref, committed_snapshots(ref, N_TINY), wall


@pytest.fixture(scope="module")
def stop_ref(work):
    """The stop scene run to its end: the reference of the runs stopped by a signal."""
    ref = work / "stop_ref.h5"
    p = sphsim(work / "stop.json", "-o", ref, "--quiet", check_rc=0)
    assert summary(p.stdout)["snapshots"] == 1001
    return committed_snapshots(ref, N_TINY)


@pytest.fixture(scope="module")
def resume_ref(work):
    """The resume scene run to its end."""
    a = work / "resA.h5"
    sphsim(work / "resume.json", "-o", a, "--quiet", check_rc=0)
    return a


# ---------------------------------------------------------------------------- SIGKILL

def test_sigkill_at_random_moments_leaves_readable_file(work, kill_ref):
    """12 runs killed with SIGKILL at seeded random moments between start-up and the end of
    the run. Each file must open in h5py and VTK, hold at least the snapshots announced before
    the kill, each bit-identical to the reference run, and a sidecar naming only committed
    steps. Two of them are then resumed to the end and must equal the reference file."""
    ref_path, ref, wall = kill_ref
    rng = random.Random(SEED)
    resumed = 0
    seen, failures = [], []
    for trial in range(12):
        out = work / f"kill{trial}.h5"
        err = work / f"kill{trial}.err"
        delay = rng.uniform(0.02, 1.0) * wall
        with open(err, "w") as ef:
            proc = subprocess.Popen([str(BIN), str(work / "kill.json"), "-o", str(out), "--progress=json"],
                                    stdout=subprocess.DEVNULL, stderr=ef)
            time.sleep(delay)
            before = announced(out, err)
            proc.kill()
            proc.wait()
        what = f"trial {trial} (SIGKILL after {delay:.2f} s, {before} snapshot(s) announced)"
        try:
            if not out.exists():  # killed before the layout was in place
                assert before == 0, f"{what}: {out} missing"
                seen.append((round(delay, 2), None))
                continue
            with h5py.File(out, "r") as f:
                ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
            seen.append((round(delay, 2), ns))
            assert ns >= before, f"{what}: NSteps {ns}"
            assert check_output(out, N_TINY, clean=False) == ns
            assert_same_snapshots(committed_snapshots(out, N_TINY), ref, what)
            if ns >= 1 and resumed < 2:
                # a killed run resumes (rows past NSteps are written again) and ends as if never stopped
                resumed += 1
                sphsim("--resume", out, "--quiet", check_rc=0)
                check_output(out, N_TINY, clean=True)
                assert_same_files(out, ref_path)
        except Exception as ex:  # check every trial, then report them all
            failures.append(f"{what}: {ex}"[:1500])
    print("kill moments (s) and NSteps found:", seen)
    assert not failures, "\n\n".join(failures)
    assert sum(1 for _, ns in seen if ns) >= 6, f"too few kills landed mid-run: {seen}"
    assert resumed == 2


# ---------------------------------------------------------------------------- SIGINT / SIGTERM

@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_stop_signal_finishes_snapshot_and_closes_cleanly(work, stop_ref, sig, code):
    ref = stop_ref
    rng = random.Random(SEED + sig)
    for trial in range(2):
        out = work / f"stop{sig}_{trial}.h5"
        proc = subprocess.Popen([str(BIN), str(work / "stop.json"), "-o", str(out), "--progress=json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_grids(out, 3, proc)
        time.sleep(rng.uniform(0.0, 0.4))  # a random moment, mostly inside a snapshot write
        before = len(xmf_grids(xmf_of(out)))
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == code, f"{signal.Signals(sig).name}: exit {proc.returncode}\n{stderr[-1500:]}"
        s = summary(stdout)
        assert s["status"] == "interrupted"
        m = re.search(r"stopped by signal (\d+) at step (\d+) \(t = [0-9.e+-]+ s\)", stderr)
        assert m and int(m.group(1)) == sig, stderr[-800:]
        assert "--resume" in stderr
        ns = check_output(out, N_TINY, clean=True)
        assert ns >= before and ns == s["snapshots"], f"NSteps {ns}, announced {before}, summary {s['snapshots']}"
        assert s["last_step"] == int(m.group(2))
        with h5py.File(out, "r") as f:  # the last snapshot is the last output step before the stop
            assert f["sphsim/steps/step"][ns - 1] <= int(m.group(2))
        assert_same_snapshots(committed_snapshots(out, N_TINY), ref, f"{signal.Signals(sig).name} run")


def test_stop_signal_sent_twice_by_timeout(work):
    """timeout(1) sends its signal to the command and then to its process group: the same signal
    twice within a second must still stop cleanly after the step (summary line, exit 143), not
    kill at once as a second Ctrl-C does. The scene's steps take long enough (a 3D block of
    about 10^5 particles) that the second signal comes while the first is being handled."""
    scene = work / "slow_steps.json"
    scene.write_text(json.dumps({
        "format": 1, "name": "slow_steps", "dimensions": 3, "mode": "sph",
        "tank": {"min": [0, 0, 0], "max": [0.4, 0.2, 0.2]},
        "fluid": {"blocks": [{"min": [0, 0, 0], "max": [0.2, 0.2, 0.15]}], "particle_count": 60000},
        "time": {"end": 10}, "output": {"interval": 5}}))
    out = work / "stop_twice.h5"
    proc = subprocess.Popen([str(BIN), str(scene), "-o", str(out), "--progress=json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_grids(out, 1, proc, timeout=300)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, f"exit {proc.returncode}\n{stderr[-1500:]}"
    s = summary(stdout)
    assert s["status"] == "interrupted" and "stopped by signal 15" in s["error"]
    assert s["snapshots"] == 1


# ---------------------------------------------------------------------------- resume

def stop_midway(scene, out, extra=(), grids=4, env=None):
    proc = subprocess.Popen([str(BIN), str(scene), "-o", str(out), "--quiet", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=None if env is None else {**os.environ, **env})
    wait_for_grids(out, grids, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, f"exit {proc.returncode}: {stderr[-800:]}"
    return int(re.search(r"at step (\d+)", stderr).group(1))


def test_resume_sph_is_bit_identical(work, resume_ref):
    """A (uninterrupted) vs B (SIGTERM after a few snapshots, then --resume). B is started from
    a scene file with another time.end and `--set time.end=0.2`: the resumed run must use the
    stored overrides, not the scene file as read."""
    a, b = resume_ref, work / "resB.h5"
    short = work / "resume_short.json"
    short.write_text(json.dumps(dict(RESUME, time={"end": 0.05})))
    stopped_at = stop_midway(short, b, ["--set", "time.end=0.2"])
    with h5py.File(b, "r") as f:
        ns_b = int(f["VTKHDF/Steps"].attrs["NSteps"])
    assert 1 <= ns_b < 101, f"B stopped after {ns_b} snapshots (step {stopped_at})"
    p = sphsim("--resume", b, check_rc=0)
    s = summary(p.stdout)
    assert s["last_step"] == 1300 and s["snapshots"] == 101 - ns_b
    check_output(b, N_TINY, clean=True)
    ra, rb = committed_snapshots(a, N_TINY), committed_snapshots(b, N_TINY)
    assert len(ra) == len(rb) == 101
    for k in range(101):
        for name in ("Points", "velocity", "density", "pressure", "steps/step", "steps/time", "Values"):
            assert ra[k][name].dtype == rb[k][name].dtype
            assert np.array_equal(ra[k][name], rb[k][name]), \
                f"snapshot {k} (step {ra[k]['steps/step']}) {name}: resumed run differs (stopped at step {stopped_at})"
    # B's scene came from another file plus --set: the same resolved scene but for its name
    # and provenance
    assert_same_files(a, b, ignore_attrs=PROVENANCE_ATTRS | {"scene_json", "resolved_json"})
    resolved = []
    for path in (a, b):
        with h5py.File(path, "r") as f:
            r = json.loads(f["sphsim"].attrs["resolved_json"])
            resolved.append({k: v for k, v in r.items() if k not in ("name", "provenance")})
            if path == b:
                assert r["provenance"]["sets"] == ["time.end=0.2"]
                assert "resumed after snapshot %d" % ns_b in f["sphsim"].attrs["resumes"].decode()
    assert resolved[0] == resolved[1]


@pytest.mark.parametrize("short_end", ["0.1", "0.0991"])
def test_resume_with_later_end_is_bit_identical(work, resume_ref, short_end):
    """A finished run extended with --resume --set time.end=LATER equals, bit for bit, the run
    that had the later end from the start; the file is laid out again for the longer run and its
    stored scene becomes the extended one. With an end off the snapshot grid (0.0991 s) the
    shorter run's last snapshot, at its last step, is dropped and the run continues from the
    one before."""
    a = resume_ref
    b = work / f"extend_{short_end}.h5"
    sphsim(work / "resume.json", "-o", b, "--quiet", "--set", f"time.end={short_end}", check_rc=0)
    p = sphsim("--resume", b, "--set", "time.end=0.2", check_rc=0)
    assert summary(p.stdout)["last_step"] == 1300
    check_output(b, N_TINY, clean=True)
    assert_same_files(a, b, ignore_attrs=PROVENANCE_ATTRS | {"resolved_json"})
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ra, rb = (json.loads(f["sphsim"].attrs["resolved_json"]) for f in (fa, fb))
        assert rb["provenance"]["sets"] == ["time.end=0.2"]
        ra.pop("provenance"), rb.pop("provenance")
        assert ra == rb
        assert fb["sphsim"].attrs["t_end"] == 0.2 and int(fb["sphsim"].attrs["snapshots_allocated"]) == 101
    # only time.end, and only later
    p = sphsim("--resume", b, "--set", "output.interval=0.001", check_rc=2)
    assert "--set output.interval cannot change a resumed run" in p.stderr
    p = sphsim("--resume", b, "--set", "time.end=0.05", check_rc=2)
    assert "time.end can only be raised" in p.stderr


def test_a_second_run_leaves_a_file_being_created_alone(work):
    """While one process creates OUT.h5 (its temporary OUT.h5.creating open and locked), a second
    run with the same -o exits 4 and leaves that file as it is (HDF5 would have truncated it
    before finding its lock); a temporary file nobody holds, left by a killed run, is replaced."""
    import fcntl
    out = work / "busy.h5"
    creating = Path(str(out) + ".creating")
    creating.write_bytes(b"x" * 4096)
    with open(creating, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = sphsim(work / "kill.json", "-o", out, "--quiet", check_rc=4)
        assert "another process is creating it now" in p.stderr
        assert creating.read_bytes() == b"x" * 4096 and not out.exists()
    sphsim(work / "kill.json", "-o", out, "--quiet", "--set", "time.end=0.002", check_rc=0)
    check_output(out, N_TINY, clean=True)


def test_a_stopped_run_taken_further_holds_the_longer_scene(work):
    """A run stopped (SIGTERM) before its end and resumed with --set time.end=LATER, whose
    snapshots fit the file as it is laid out (end 0.1991 -> 0.1995 s: 101 either way), is laid
    out again all the same: the file holds the longer scene (its end, the provenance) and the
    gauges' rows of its steps, so the run ends as the longer one and a plain --resume afterwards
    finds it finished (its gauges overflowed the shorter rows before, and the stored end
    stayed the shorter one)."""
    scene = work / "further.json"
    scene.write_text(json.dumps(dict(RESUME, time={"end": 0.1991}, gauges=GAUGES)))
    out = work / "further.h5"
    stop_midway(scene, out)
    p = sphsim("--resume", out, "--set", "time.end=0.1995", check_rc=0)
    assert summary(p.stdout)["last_step"] == 1297
    with h5py.File(out, "r") as f:
        assert f["sphsim"].attrs["t_end"] == 0.1995
        assert json.loads(f["sphsim"].attrs["resolved_json"])["provenance"]["sets"] == ["time.end=0.1995"]
        assert int(f["sphsim/steps/step"][int(f["VTKHDF/Steps"].attrs["NSteps"]) - 1]) == 1297
    p = sphsim("--resume", out, check_rc=0)
    assert summary(p.stdout)["steps"] == 0


def test_a_sidecar_that_cannot_be_written(work):
    """The XDMF sidecar is rewritten whole beside the old one after every snapshot. When that
    fails during a run (here its temporary name is taken by a folder; on a full disk the same)
    the run goes on, says so once, and keeps every snapshot in the .h5; the sidecar is written
    again by --resume of the finished file. When it fails as an --overwrite run creates its
    file, that run stops and the old file stays, whole (both were gone before)."""
    scene = work / "sidecar.json"
    scene.write_text(json.dumps(dict(TINY, time={"end": 0.03})))
    out = work / "sidecar.h5"
    blocker = Path(str(xmf_of(out)) + ".tmp")
    proc = subprocess.Popen([str(BIN), str(scene), "-o", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for_grids(out, 2, proc)
    for _ in range(1000):  # the sidecar's own temporary file may stand there for an instant
        try:
            blocker.mkdir()
            break
        except FileExistsError:
            time.sleep(0.001)
    assert blocker.is_dir()
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-800:]
    assert stderr.count("warning: cannot write the XDMF sidecar") == 1, stderr[-800:]
    with h5py.File(out, "r") as f:
        ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
    assert ns == 61 and summary(stdout)["snapshots"] == ns
    assert len(xmf_grids(xmf_of(out))) < ns  # the sidecar as it was when the folder came
    blocker.rmdir()
    sphsim("--resume", out, "--quiet", check_rc=0)
    check_output(out, N_TINY, clean=True)
    # --overwrite whose new sidecar cannot be written: the old file and sidecar stay
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    blocker.mkdir()
    p = sphsim(scene, "-o", out, "--overwrite", "--quiet", check_rc=4)
    assert "cannot write the XDMF sidecar" in p.stderr
    blocker.rmdir()
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before
    check_output(out, N_TINY, clean=True)


def test_resume_from_another_folder_finds_the_scene_files(work):
    """A scene given by a relative path that names a file relative to itself (a motion table):
    --resume from another folder finds it (the stored provenance holds the scene's absolute
    path), and the run goes on."""
    import shutil
    sub = work / "folder"
    sub.mkdir(exist_ok=True)
    for f in ("wavemaker_2d.json", "wavemaker_piston.csv"):
        shutil.copy(ROOT / "scenes" / f, sub / f)
    out = work / "folder_run.h5"
    args = ["folder/wavemaker_2d.json", "--set", "time.end=0.004", "--set", "output.interval=0.002", "--set",
            "gauges=[]", "-o", str(out), "--quiet"]
    p = subprocess.run([str(BIN), *args], cwd=work, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-800:]
    with h5py.File(out, "r") as f:
        assert json.loads(f["sphsim"].attrs["resolved_json"])["provenance"]["file"] == \
            str((sub / "wavemaker_2d.json").resolve())
    p = subprocess.run([str(BIN), "--resume", str(out), "--set", "time.end=0.006", "--quiet"], cwd="/",
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-800:]
    assert summary(p.stdout)["simulated_time_s"] == pytest.approx(0.006)


def test_resume_counts_a_particle_outside_once(work):
    """A stored snapshot with a fluid particle outside the tank (n_outside 1): the resumed run puts
    it back once and counts it once (1, as an uninterrupted run would), not once for the stored
    count and again for the put-back (2)."""
    out = work / "outside.h5"
    sphsim(work / "kill.json", "-o", out, "--quiet", "--set", "time.end=0.004", "--set", "output.interval=0.002",
           check_rc=0)
    with h5py.File(out, "r+") as f:
        n, k = int(f["VTKHDF/NumberOfPoints"][0]), int(f["VTKHDF/Steps"].attrs["NSteps"]) - 1
        i = int(np.flatnonzero(f["VTKHDF/PointData/type"][k * n:(k + 1) * n] == 0)[0])
        p = f["VTKHDF/Points"][k * n + i]
        p[0] = -0.05  # beyond tank.min[0] = 0
        f["VTKHDF/Points"][k * n + i] = p
        f["sphsim/steps/n_outside"][k] = 1
    p = sphsim("--resume", out, "--set", "time.end=0.008", "--quiet", check_rc=0)
    assert summary(p.stdout)["particles_outside"] == 1
    with h5py.File(out, "r") as f:
        assert list(f["sphsim/steps/n_outside"][:5]) == [0, 0, 1, 1, 1]


def test_resume_with_later_end_keeps_a_default_interval(work):
    """A run whose snapshot interval is the default (time.end / 50) runs further with --resume
    --set time.end=LATER at its own interval, which the default for the later end would change:
    the stored overrides then pin it, and the next extension goes on alike."""
    scene = work / "default_interval.json"
    scene.write_text(json.dumps(dict({k: v for k, v in TINY.items() if k != "output"}, time={"end": 0.01})))
    out = work / "default_interval.h5"
    sphsim(scene, "-o", out, "--quiet", check_rc=0)
    sphsim("--resume", out, "--set", "time.end=0.02", check_rc=0)
    sphsim("--resume", out, "--set", "time.end=0.03", check_rc=0)
    with h5py.File(out, "r") as f:
        t = f["VTKHDF/Steps/Values"][()]
        sets = json.loads(f["sphsim"].attrs["resolved_json"])["provenance"]["sets"]
    assert len(t) == 151 and np.allclose(t, np.arange(151) * 0.0002, rtol=0, atol=1e-12)
    assert sets == ["output.interval=0.00020000000000000001", "time.end=0.03"]


@pytest.mark.parametrize("ahead", ["0", "1"])
def test_resume_with_adaptive_skin_is_bit_identical(work, resume_ref, ahead):
    """The adaptive list skin (the default on GPUs, forced here with SPHSIM_SKIN_LEVELS=4, and
    with a shorter cost constant so that it adapts between this scene's close snapshots) keeps
    its level across snapshots; every snapshot stores it (/sphsim/restart/solver_state), so a
    run stopped and resumed must still equal the uninterrupted run, bit for bit (a resume that
    ignores the stored level fails here); and the skin must have adapted (another rebuild count
    than with the fixed skin). With the decision read after the density stage of a kept step is
    queued (GPUs' default) and without."""
    env = {"SPHSIM_SKIN_LEVELS": "4", "SPHSIM_SKIN_C": "0.3", "SPHSIM_GO_AHEAD": ahead}
    a, b = work / f"adaptA{ahead}.h5", work / f"adaptB{ahead}.h5"
    p = sphsim(work / "resume.json", "-o", a, "--quiet", check_rc=0, env=env)
    fixed = summary(sphsim(work / "resume.json", "-o", work / f"adapt_fixed{ahead}.h5", "--quiet", check_rc=0,
                           env={"SPHSIM_SKIN_LEVELS": "1"}).stdout)
    assert summary(p.stdout)["list_rebuilds"] != fixed["list_rebuilds"]
    stop_midway(work / "resume.json", b, env=env)
    sphsim("--resume", b, "--quiet", check_rc=0, env=env)
    check_output(b, N_TINY, clean=True)
    assert_same_files(a, b)


def test_resume_continuity_is_bit_identical(work):
    """An integrated density (fluid.density.type continuity) is state: every snapshot holds it,
    also when output.fields leaves it out, and a resumed run takes it back and continues to the
    bit (its first step takes the stored density instead of advancing it again)."""
    sets = ["--set", "fluid.density.type=continuity"]
    a, b, c = work / "contA.h5", work / "contB.h5", work / "contC.h5"
    sphsim(work / "resume.json", "-o", a, "--quiet", *sets, check_rc=0)
    stop_midway(work / "resume.json", b, sets)
    sphsim("--resume", b, "--quiet", check_rc=0)
    check_output(b, N_TINY, clean=True)
    assert_same_files(a, b)
    with h5py.File(a, "r") as f:
        ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
        rho = f["VTKHDF/PointData/density"][()]
        assert f["sphsim"].attrs["density"] in ("continuity", b"continuity")
    sphsim(work / "resume.json", "-o", c, "--quiet", *sets, "--set", 'output.fields=["position"]',
           "--set", "time.end=0.01", check_rc=0)
    with h5py.File(c, "r") as f:
        assert "density" in f["VTKHDF/PointData"] and "pressure" not in f["VTKHDF/PointData"]
    n = rho.size // ns
    first, last = rho[:n], rho[(ns - 1) * n:]
    assert np.all(first > 0) and np.all(last > 0)
    assert not np.array_equal(first, last)  # the density evolved


GAUGES = [
    {"name": "p_floor", "type": "pressure", "point": [0.05, 0.0]},
    {"name": "v", "type": "velocity", "point": [0.05, 0.05], "interval": 0.004},
    {"name": "h", "type": "height", "point": [0.05, 0.0], "interval": 0.001},
    {"name": "F", "type": "force"},
]


def test_gauges_are_committed_with_snapshots_and_resumed(work):
    """Gauges (/sphsim/gauges): rows at the multiples of their interval in steps, as many as the
    last committed snapshot covers; a run stopped (SIGTERM) or killed (SIGKILL, at random moments
    after its second snapshot) and resumed writes the same rows, bit for bit, as the
    uninterrupted run (a resumed run writes the rows past the commit again); a finished run
    extended to a later end continues them, to the same bits."""
    scene = work / "gauges.json"
    scene.write_text(json.dumps(dict(RESUME, gauges=GAUGES)))
    a = work / "gaugesA.h5"
    sphsim(scene, "-o", a, "--quiet", check_rc=0)
    with h5py.File(a, "r") as f:
        g = f["sphsim/gauges"]
        assert list(g.attrs["order"].split(",")) == [x["name"] for x in GAUGES]
        dt = float(f["sphsim"].attrs["dt"])
        last = int(f["sphsim/steps/step"][-1])
        for spec in GAUGES:
            d = g[spec["name"]][()]
            every = int(g[spec["name"]].attrs["every_steps"])
            assert every == (max(1, math.floor(spec["interval"] / dt + 0.5)) if "interval" in spec else 1)
            assert d.shape[0] == last // every + 1
            assert np.array_equal(d[:, 0], np.arange(d.shape[0]) * every * dt)
        # the fluid at rest-ish presses on the floor with about its weight (0.1 m x 0.2 m of water)
        fy = g["F"][:, 2]
        assert -1.3 * 196.2 < fy.mean() < -0.7 * 196.2, fy.mean()
        assert np.all(np.isfinite(g["p_floor"][:, 1])) and g["p_floor"][:, 1].mean() > 1000.0
        assert 0.1 < g["h"][0, 1] < 0.3
    b = work / "gaugesB.h5"
    stop_midway(scene, b)
    sphsim("--resume", b, "--quiet", check_rc=0)
    assert_same_files(a, b)
    rng = random.Random(SEED + 7)
    for k in range(3):
        c = work / f"gaugesC{k}.h5"
        proc = subprocess.Popen([str(BIN), str(scene), "-o", str(c), "--quiet"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        wait_for_grids(c, 2, proc)
        time.sleep(rng.uniform(0.0, 0.5))
        proc.kill()
        proc.communicate(timeout=60)
        if proc.returncode == 0:
            continue  # finished before the kill
        with h5py.File(c, "r") as f:
            ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
            if ns == 0:
                continue
            last = int(f["sphsim/steps/step"][ns - 1])
            for spec in GAUGES:  # every committed row is there
                ds = f["sphsim/gauges"][spec["name"]]
                assert ds.shape[0] >= last // int(ds.attrs["every_steps"]) + 1
        sphsim("--resume", c, "--quiet", check_rc=0)
        assert_same_files(a, c)
    # a finished run extended (--resume --set time.end=LATER): the file laid out again keeps the
    # gauges' rows and continues them
    d = work / "gaugesD.h5"
    sphsim(scene, "-o", d, "--quiet", "--set", "time.end=0.0991", check_rc=0)
    sphsim("--resume", d, "--quiet", "--set", "time.end=0.2", check_rc=0)
    assert_same_files(a, d, ignore_attrs=PROVENANCE_ATTRS | {"resolved_json"})


def test_resume_particles_is_bit_identical(work):
    a, b = work / "spA.h5", work / "spB.h5"
    sphsim(work / "spheres.json", "-o", a, "--quiet", check_rc=0)
    stop_midway(work / "spheres.json", b, grids=5)
    sphsim("--resume", b, "--quiet", check_rc=0)
    check_output(b, 256, clean=True)
    assert_same_files(a, b)
    with h5py.File(b, "r") as f:  # the discs turn (friction): their angular state was resumed too
        assert np.abs(f["VTKHDF/PointData/angular_velocity"][:]).max() > 0


def test_sort_check_is_bit_identical(work, resume_ref):
    """tuning.sort_check (docs/grid.md, "Kept order"): a rebuild whose cell keys are in order
    already keeps the particles' order, without the sort and the gathers. Off, on, and the
    device's default give the same file bit for bit, for the settling discs and for the SPH dam
    (its neighbour lists' rebuilds)."""
    ways = (({"SPHSIM_SORT_CHECK": "0"}, ()), ({}, ("--tune", "sort_check=1")), ({}, ()))
    for scene, ref in (("spheres.json", None), ("resume.json", resume_ref)):
        for k, (env, tune) in enumerate(ways):
            out = work / f"sortcheck_{scene[:-5]}_{k}.h5"
            sphsim(work / scene, "-o", out, "--quiet", *tune, check_rc=0, env=env)
            if ref is None:
                ref = out
            else:
                assert_same_files(ref, out, ignore_attrs={"start_time", "device"})


# big spheres among small ones: a big one touches more than the 8 slots of 3D
MIXED_3D = {
    "format": 1, "name": "mixed", "dimensions": 3, "mode": "particles",
    "tank": {"min": [0, 0, 0], "max": [0.08, 0.08, 0.12]}, "gravity": [0, 0, -9.81],
    "spheres": {"groups": [{"count": 12, "radius": 0.012, "density": 1000.0,
                            "region": {"min": [0, 0, 0], "max": [0.08, 0.08, 0.1]}, "placement": "random",
                            "seed": 1},
                           {"count": 900, "radius": 0.003, "density": 2500.0,
                            "region": {"min": [0, 0, 0], "max": [0.08, 0.08, 0.1]}, "placement": "random",
                            "seed": 2}],
                "restitution": 0.3, "friction": 0.5, "iterations": 4,
                "pairs": [{"groups": [0, 1], "restitution": 0.1, "friction": 0.8}]},
    "time": {"end": 0.25}, "output": {"interval": 0.125},
}


def most_near_partners(h5):
    """The most spheres any sphere of the last snapshot has within 1.01 (r_i + r_j)."""
    with h5py.File(h5, "r") as f:
        k = int(f["VTKHDF/Steps"].attrs["NSteps"]) - 1
        n, o = int(f["VTKHDF/NumberOfPoints"][0]), int(f["VTKHDF/Steps/PointOffsets"][k])
        x = f["VTKHDF/Points"][o:o + n].astype(np.float64)
        r = f["VTKHDF/PointData/radius"][o:o + n].astype(np.float64)
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    near = d < 1.01 * (r[:, None] + r[None, :])
    np.fill_diagonal(near, False)
    return int(near.sum(1).max())


@pytest.mark.parametrize("case", ["discs_pairs_2d", "mixed_3d", "drum_3d"])
def test_contact_cache_is_bit_identical(work, case):
    """tuning.contact_cache (docs/contacts.md, "Geometry cache"): the impulse passes read each
    contact's geometry from what the warm start stored instead of recomputing it. Off, on, and
    the device's default give the same file bit for bit: discs of two materials (2D), big
    spheres among small ones with more contacts than slots (3D), and the turning 3D drum (moving
    walls, a container's two and three surfaces)."""
    if case == "discs_pairs_2d":
        scene = work / "cache_discs.json"
        groups = [dict(SPHERES["spheres"]["groups"][0], count=128, region={"min": [0.3, 0.5], "max": [0.5, 0.9]}),
                  dict(SPHERES["spheres"]["groups"][0], count=128, radius=0.011, density=500.0, seed=2,
                       region={"min": [0.5, 0.5], "max": [0.7, 0.9]})]
        scene.write_text(json.dumps(dict(SPHERES, spheres=dict(SPHERES["spheres"], groups=groups, pairs=[
            {"groups": [1, 1], "restitution": 0.9, "friction": 0.0},
            {"groups": [0, 1], "restitution": 0.1, "friction": 0.8}]), time={"end": 0.3})))
        extra = ()
    elif case == "mixed_3d":
        scene = work / "cache_mixed.json"
        scene.write_text(json.dumps(MIXED_3D))
        extra = ()
    else:
        scene = ROOT / "scenes" / "spheres_drum_3d.json"
        extra = ("--set", "time.end=0.1", "--set", "output.interval=0.05")
    ways = (({"SPHSIM_CONTACT_CACHE": "0"}, ()), ({}, ("--tune", "contact_cache=1")), ({}, ()))
    ref = None
    for k, (env, tune) in enumerate(ways):
        out = work / f"cache_{case}_{k}.h5"
        sphsim(scene, "-o", out, "--quiet", *extra, *tune, check_rc=0, env=env, timeout=300)
        if ref is None:
            ref = out
        else:
            assert_same_files(ref, out, ignore_attrs=PROVENANCE_ATTRS | {"resolved_json"})
    if case == "mixed_3d":  # the slots overflow: some sphere's contacts come from the cell walk
        assert most_near_partners(ref) > 8


def test_resume_many_spheres_is_bit_identical(work):
    """70 000 discs jostling (a velocity jitter) and settling on the floor, more than one block of
    the contact slots that the save and the restore move at a time (65 536 spheres), with
    contacts in every block: the run stopped at its first snapshot and resumed equals the run
    through, bit for bit, the contacts' carried impulses included."""
    scene = work / "many_discs.json"
    scene.write_text(json.dumps(dict(SPHERES, tank={"min": [0, 0], "max": [2, 1]}, spheres=dict(
        SPHERES["spheres"], groups=[{"count": 70000, "radius": 0.002, "density": 1000.0,
                                     "region": {"min": [0, 0], "max": [2, 0.6]}, "placement": "lattice",
                                     "seed": 3, "velocity": [0, 0], "velocity_jitter": 0.05}]),
        time={"end": 0.02}, output={"interval": 0.01})))
    a, b = work / "manyA.h5", work / "manyB.h5"
    sphsim(scene, "-o", a, "--quiet", check_rc=0, timeout=300)
    sphsim(scene, "-o", b, "--quiet", "--set", "time.end=0.01", check_rc=0, timeout=300)
    with h5py.File(b, "r") as f:
        n = int(f["VTKHDF/Steps"].attrs["NSteps"])
        assert f["sphsim/steps/n_contacts"][n - 1] > 1000  # impulses to carry over
    sphsim("--resume", b, "--quiet", "--set", "time.end=0.02", check_rc=0, timeout=300)
    assert_same_files(a, b, ignore_attrs=PROVENANCE_ATTRS | {"resolved_json"})


def test_resume_refuses_other_options_and_missing_file(work, resume_ref):
    p = sphsim("--resume", work / "no-such.h5", check_rc=4)
    assert "no-such.h5" in p.stderr
    p = sphsim("--resume", resume_ref, "--set", "fluid.spacing=0.02", check_rc=2)
    assert "--set fluid.spacing cannot change a resumed run" in p.stderr
    # a file whose stored scene resolves differently now (as with another sphsim's defaults)
    other = work / "other_version.h5"
    other.write_bytes(resume_ref.read_bytes())
    with h5py.File(other, "r+") as f:
        r = json.loads(f["sphsim"].attrs["resolved_json"])
        r["fluid"]["viscosity"]["alpha"] = 0.5
        f["sphsim"].attrs["resolved_json"] = json.dumps(r, indent="\t")
    before = hashlib.sha256(other.read_bytes()).hexdigest()
    p = sphsim("--resume", other, check_rc=4)
    assert "resolves differently" in p.stderr
    assert hashlib.sha256(other.read_bytes()).hexdigest() == before


# ---------------------------------------------------------------------------- determinism

def test_same_scene_same_device_is_bit_identical(work, resume_ref):
    again = work / "resA_again.h5"
    sphsim(work / "resume.json", "-o", again, "--quiet", check_rc=0)
    assert_same_files(resume_ref, again, ignore_attrs={"start_time", "device"})


def test_rebuild_decisions_ways_are_bit_identical(work, resume_ref):
    """With neighbour lists the host reads each step's rebuild decision and, in steps that keep
    the grid, enqueues no grid kernels and swaps its buffer handles. The tuning knobs choose how
    (docs/grid.md), never what: with go_ahead (GPUs' default) the host enqueues the kept step's
    density stage behind a read of the decision that does not block, kernels that return at once
    unless the step keeps the lists; with list_build=apart (GPUs' default) a rebuild builds the
    lists alone and then reads them, with fused (CPUs') the density sums on the build's walk.
    Every way, set through the environment or --tune, must give the same file, bit for bit, and
    the run must have kept the grid in some steps and rebuilt it in others."""
    runs = {}
    ways = (({"SPHSIM_GO_AHEAD": "0", "SPHSIM_LIST_BUILD": "fused"}, ()),
            ({"SPHSIM_GO_AHEAD": "1", "SPHSIM_LIST_BUILD": "fused"}, ()),
            ({}, ("--tune", "go_ahead=1", "--tune", "list_build=apart")),
            ({"SPHSIM_GO_AHEAD": "1"}, ("--tune", "go_ahead=0", "--tune", "list_build=apart")))
    for k, (env, tune) in enumerate(ways):
        out = work / f"decide_{k}.h5"
        p = sphsim(work / "resume.json", "-o", out, "--quiet", *tune, check_rc=0, env=env)
        runs[k] = (out, summary(p.stdout))
    for out, sm in runs.values():
        assert sm["neighbour_lists"] is True
        assert 0 < sm["list_rebuilds"] < sm["steps"]
        assert_same_files(resume_ref, out, ignore_attrs={"start_time", "device"})
    assert len({sm["list_rebuilds"] for _, sm in runs.values()}) == 1


def test_snapshot_every_step_matches_sparse_output(work):
    """The snapshot writer thread and its two staging buffers: a run that writes a snapshot at
    every step (the loop keeps running while earlier snapshots are being copied and written)
    holds, at every 13th step, bit for bit the snapshot of a run that writes every 13th step."""
    scene = dict(TINY, time={"end": 0.0065, "dt": 5e-5})
    dense_scene, sparse_scene = work / "dense.json", work / "sparse.json"
    dense_scene.write_text(json.dumps(dict(scene, output={"interval": 5e-5})))
    sparse_scene.write_text(json.dumps(dict(scene, output={"interval": 6.5e-4})))
    dense, sparse = work / "dense.h5", work / "sparse.h5"
    assert summary(sphsim(dense_scene, "-o", dense, "--quiet", check_rc=0).stdout)["snapshots"] == 131
    assert summary(sphsim(sparse_scene, "-o", sparse, "--quiet", check_rc=0).stdout)["snapshots"] == 11
    d, s = committed_snapshots(dense, N_TINY), committed_snapshots(sparse, N_TINY)
    assert [int(x["steps/step"]) for x in d] == list(range(131))
    assert [int(x["steps/step"]) for x in s] == list(range(0, 131, 13))
    for k, snap in enumerate(s):
        for name, v in snap.items():
            if name == "Values" or name.startswith("steps/"):
                continue
            assert np.array_equal(v, d[13 * k][name]), f"step {13 * k}: {name} differs between the two runs"
    # the snapshots differ from each other: the copies were not all of one state
    assert not np.array_equal(d[0]["Points"], d[130]["Points"])


# ---------------------------------------------------------------------------- no clobbering

def test_existing_output_and_sidecar_are_never_clobbered(work):
    scene = work / "resume.json"
    out = work / "keep.h5"
    sphsim(scene, "-o", out, "--quiet", "--set", "time.end=0.01", check_rc=0)

    def digest():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (out, xmf_of(out))}

    before = digest()
    p = sphsim(scene, "-o", out, "--set", "time.end=0.004", check_rc=4)
    assert "--overwrite" in p.stderr and str(out) in p.stderr
    assert digest() == before, "a refused run changed the existing output or its sidecar"

    # a sidecar alone (say a user's own .xmf) is not replaced either, and no .h5 appears
    lone = work / "lone.h5"
    xmf_of(lone).write_text("<my own file/>")
    p = sphsim(scene, "-o", lone, "--set", "time.end=0.004", check_rc=4)
    assert "--overwrite" in p.stderr
    assert xmf_of(lone).read_text() == "<my own file/>" and not lone.exists()

    # with --overwrite both are replaced by a complete new run
    sphsim(scene, "-o", out, "--overwrite", "--quiet", "--set", "time.end=0.004", check_rc=0)
    assert check_output(out, N_TINY, clean=True) == 3


# ---------------------------------------------------------------------------- numerical failure

def test_numerical_failure_exit_6_names_step_time_particle(work):
    out = work / "blowup.h5"
    p = sphsim(work / "resume.json", "-o", out, "--set", "time.dt=0.01", "--set", "time.end=2", check_rc=6)
    m = re.search(r"numerical failure \((NaN or Inf|runaway velocity)\) between step (\d+) \(t = ([0-9.e+-]+) s\) "
                  r"and step (\d+) \(t = ([0-9.e+-]+) s\): particle id (\d+) \((fluid|boundary)\) has position",
                  p.stderr)
    assert m, f"message does not name step, time and particle:\n{p.stderr[-1500:]}"
    lo, hi, pid, kind = int(m.group(2)), int(m.group(4)), int(m.group(6)), m.group(7)
    assert lo < hi and 0 <= pid < N_TINY
    assert kind == "fluid", "boundary particles never move: the culprit must be a fluid particle"
    s = summary(p.stdout)
    assert s["status"] == "numerical-failure" and s["last_step"] == hi
    ns = check_output(out, N_TINY, clean=True)
    assert ns >= 1
    with h5py.File(out, "r") as f:  # the last snapshot is the last checked (good) state
        last = snapshot(f, ns - 1, N_TINY)
        assert last["steps/step"] == lo
        max_speed = json.loads(f["sphsim"].attrs["resolved_json"])["time"]["max_speed"]
        assert np.linalg.norm(last["velocity"].astype(np.float64), axis=1).max() <= max_speed


# ---------------------------------------------------------------------------- device memory

def test_run_too_big_for_the_device_fails_before_it_starts(work):
    """A valid scene whose device estimate is about twice the largest device's memory (the
    machine's RAM for PoCL, so the particle count follows the machine) is refused before any
    particle is generated, with --check's estimate in the message, and leaves no file."""
    out = work / "huge.h5"
    listed = sphsim("--list-devices", check_rc=0).stdout
    mem = max(float(g) * 2**30 for g in re.findall(r"([0-9.]+) GiB", listed))

    def estimate(spacing):
        chk = sphsim(work / "resume.json", "--set", f"fluid.spacing={spacing:.4g}", "--check", check_rc=0)
        return json.loads(chk.stdout)["check"]["estimated_device_bytes"]

    # the 2D scene's estimate grows as 1 / spacing^2; 3.3e-6 m is about the 2e9-particle limit
    spacing = max(1e-5 * math.sqrt(estimate(1e-5) / (2.0 * mem)), 3.3e-6)
    est = estimate(spacing)
    assert est > mem, f"no valid scene needs more than this machine's {mem / 1e9:.3g} GB device"
    args = [work / "resume.json", "--set", f"fluid.spacing={spacing:.4g}"]
    t0 = time.time()
    p = sphsim(*args, "-o", out, check_rc=5, timeout=60)
    assert time.time() - t0 < 30, "the memory check must come before the particles are generated"
    m = re.search(r"needs about ([0-9.e+]+) GB of device memory \((\d+) particles\) but .* has ([0-9.e+]+) GB", p.stderr)
    assert m, p.stderr[-800:]
    need, limit = float(m.group(1)), float(m.group(3))
    assert need > limit and abs(need - est / 1e9) <= 0.01 * need
    assert not out.exists() and not xmf_of(out).exists()


# ---------------------------------------------------------------------------- host memory

def check_estimates(args, env):
    chk = sphsim(*args, "--check", check_rc=0, env=env)
    return json.loads(chk.stdout)["check"]


def test_run_too_big_for_the_host_fails_before_it_starts(work):
    """SPHSIM_HOST_MEMORY makes a small machine of this one: a run whose host estimate exceeds
    it is refused before any particle is generated, with --check's estimate, and no file."""
    out = work / "host_huge.h5"
    args = [work / "resume.json", "--set", "fluid.spacing=0.00025"]
    env = {"SPHSIM_HOST_MEMORY": "20000000"}
    est = check_estimates(args, env)["estimated_host_bytes"]
    assert est > 20e6
    p = sphsim(*args, "-o", out, check_rc=4, timeout=60, env=env)
    m = re.search(r"needs about ([0-9.e+-]+) GB of host memory \((\d+) particles\) but this machine has "
                  r"([0-9.e+-]+) GB; write fewer output.fields", p.stderr)
    assert m, p.stderr[-800:]
    assert abs(float(m.group(1)) - est / 1e9) <= 0.01 * float(m.group(1)) and float(m.group(3)) == 0.02
    assert summary(p.stdout)["status"] == "out-of-memory"
    assert not out.exists() and not xmf_of(out).exists()


def run_peak_rss(args, env):
    """Runs sphsim; its exit code and its own peak resident memory (bytes)."""
    proc = subprocess.Popen([str(BIN), *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **env})
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_maxrss * 1024


@pytest.mark.parametrize("scene", ["dam_break_2d.json", "spheres_2d.json"])
def test_one_staging_buffer_said(work, scene):
    """A run tells that its snapshots wait for the writer only when it has one staging buffer
    (tuning staging_buffers=1), SPH and particle mode alike, and writes its file either way."""
    for buffers, said in (("auto", False), ("1", True)):
        p = sphsim(ROOT / "scenes" / scene, "-o", work / "staging.h5", "--overwrite", "--set", "time.end=0.002",
                   check_rc=0, env={"SPHSIM_STAGING_BUFFERS": buffers})
        assert ("one snapshot staging buffer" in p.stderr) == said, (buffers, p.stderr[-800:])
        assert summary(p.stdout)["snapshots"] >= 1


def test_host_memory_follows_the_output_fields(work):
    """The host keeps only the arrays of the fields the file holds: a 3D run of about 1.5x10^6
    particles to its first snapshot takes less memory with position output than with every
    field, less again with one staging buffer, and never more than --check's host and device
    estimates (PoCL's buffers live in host memory too) plus 0.4 GB for the runtimes."""
    scene = work / "host_mem.json"
    scene.write_text(json.dumps({
        "format": 1, "name": "host_mem", "dimensions": 3, "mode": "sph",
        "tank": {"min": [0, 0, 0], "max": [0.4, 0.2, 0.2]},
        "fluid": {"blocks": [{"min": [0, 0, 0], "max": [0.2, 0.2, 0.15]}], "particle_count": 1000000},
        "time": {"end": 0}, "grid": {"neighbour_list": "off"}}))
    every = '["position","velocity","density","pressure","id","type","mass","radius"]'
    # a 150 MB machine: one staging buffer (two would take more than half), in ordinary memory
    # (page-locked, it would take more than a quarter), its pages touched at allocation
    cases = [("every field", every, {}), ("position", '["position"]', {}),
             ("position, one staging buffer", '["position"]', {"SPHSIM_HOST_MEMORY": "150000000"})]
    peaks = []
    for what, fields, env in cases:
        args = [scene, "--set", f"output.fields={fields}"]
        est = check_estimates(args, env)
        rc, rss = run_peak_rss([*args, "-o", work / "host_mem.h5", "--overwrite"], env)
        assert rc == 0, what
        bound = est["estimated_host_bytes"] + est["estimated_device_bytes"] + 0.4e9
        print(f"{what}: {est['particles']} particles, peak {rss / 1e6:.0f} MB, host estimate "
              f"{est['estimated_host_bytes'] / 1e6:.0f} MB + device {est['estimated_device_bytes'] / 1e6:.0f} MB")
        assert rss <= bound, f"{what}: peak {rss / 1e6:.0f} MB above the estimates' {bound / 1e6:.0f} MB"
        peaks.append(rss)
    # every field: 53 B per particle in each staging buffer and in id order; position output: 37
    # per staging buffer and 41 in id order, 44 B fewer; one buffer: 37 B fewer again. At least
    # half of each must show.
    n = est["particles"]
    assert peaks[0] - peaks[1] >= 0.5 * 44 * n
    assert peaks[1] - peaks[2] >= 0.5 * 37 * n


# ---------------------------------------------------------------------------- disk full

def test_disk_full_refused_at_creation(work, tmp_path):
    """The kill scene's file needs about 1.9 MB, allocated and reserved when it is created: on a
    1.5 MB tmpfs the run is refused then, before its first step (exit 4, a message naming the
    cause and the size), and nothing is left behind."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1500k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the disk-full test (run as root): {r.stderr.strip()}")
    try:
        out = mnt / "full.h5"
        p = sphsim(work / "kill.json", "-o", out, check_rc=4)
        assert "No space left on device" in p.stderr and "could not reserve" in p.stderr, p.stderr[-800:]
        assert "201 snapshots" in p.stderr, p.stderr[-800:]
        s = summary(p.stdout)
        assert s["status"] == "io-error" and s["snapshots"] == 0
        assert sorted(x.name for x in mnt.iterdir()) == [], list(mnt.iterdir())
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_disk_full_before_first_snapshot(work, tmp_path):
    """Full before anything is committed: exit 4 (not a crash), and what is left, if anything,
    is a file with no snapshot that h5py and VTK still open."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    for size in ("8k", "300k"):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            pytest.fail(f"cannot mount a tmpfs for the disk-full test (run as root): {r.stderr.strip()}")
        try:
            out = mnt / "full.h5"
            p = sphsim(work / "kill.json", "-o", out)
            assert p.returncode == 4, f"tmpfs of {size}: exit {p.returncode} (139 = crash), expected 4\n" \
                                      f"{p.stderr[-800:]}"
            assert "No space left on device" in p.stderr
            if out.exists():
                assert check_output(out, N_TINY, clean=False) == 0
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
