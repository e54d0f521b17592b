"""Tests of the post-processing scripts (scripts/plot_snapshot.py, animate.py, plot_surge_front.py,
surface.py, martin_moyce.py, gauges.py, spheric_test2.py), of sweep.sh's device slots and interruption, of the benchmark's
developed-flow mode (bench.py --until), of bench_grid.sh and fuzz.sh building and running, on real sphsim runs of tiny scenes: a 2D dam break (200 fluid
particles), a 3D block (1000 fluid particles) and 16 discs in particle mode. Each script runs as
a command, headless (no DISPLAY, MPLBACKEND unset), and its output is opened and checked.
"""
import csv
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))

import animate  # noqa: E402
import gauges as gauges_script  # noqa: E402
import bench  # noqa: E402
import martin_moyce  # noqa: E402
import plot_snapshot  # noqa: E402
import plot_surge_front  # noqa: E402
import spheric_test2  # noqa: E402
import sphsim_reader  # noqa: E402
import surface  # noqa: E402

SPHSIM = os.environ.get("SPHSIM", str(REPO / "build" / "sphsim"))

# 2D dam break: a = 0.1 m wide, 0.2 m high column (n^2 = 2) in a 0.4 m x 0.3 m tank, dx = 1 cm,
# 0.1 s (T = t sqrt(2g/a) up to 1.4), a snapshot every 0.01 s: 11 snapshots.
SCENE_2D = {
    "format": 1, "name": "tiny_dam", "dimensions": 2,
    "tank": {"min": [0, 0], "max": [0.4, 0.3]},
    "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.01},
    "time": {"end": 0.1}, "output": {"interval": 0.01},
}
# 3D: a 10 cm cube of water (10 x 10 x 10 particles) in the corner of a 20 x 10 x 15 cm tank.
SCENE_3D = {
    "format": 1, "name": "tiny_3d", "dimensions": 3,
    "tank": {"min": [0, 0, 0], "max": [0.2, 0.1, 0.15]},
    "gravity": [0, 0, -9.81],
    "fluid": {"blocks": [{"min": [0, 0, 0], "max": [0.1, 0.1, 0.1]}], "spacing": 0.01},
    "time": {"end": 0.02}, "output": {"interval": 0.01},
}
SCENE_SPHERES = {
    "format": 1, "name": "tiny_discs", "dimensions": 2, "mode": "particles",
    "tank": {"min": [0, 0], "max": [0.2, 0.2]},
    "spheres": {"groups": [{"count": 16, "radius": 0.01, "region": {"min": [0, 0.1], "max": [0.1, 0.2]}}]},
    "time": {"end": 0.01}, "output": {"interval": 0.005},
}


def env_headless():
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("MPLBACKEND", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def script(name, *args, ok=True):
    """Run scripts/NAME with this Python; returns the CompletedProcess. ok: expect exit 0."""
    p = subprocess.run([sys.executable, str(SCRIPTS / name), *map(str, args)], capture_output=True, text=True,
                       env=env_headless(), timeout=300)
    if ok:
        assert p.returncode == 0, f"{name} {args}: exit {p.returncode}\n{p.stderr}"
    return p


def call(capsys, module, *args):
    """Run module.main(args) in this process (faster than a new interpreter); returns
    (exit status, stdout, stderr). The command-line path itself is tested through script()."""
    capsys.readouterr()
    try:
        rc = module.main([str(a) for a in args])
    except SystemExit as ex:  # argparse
        rc = ex.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def simulate(tmp, scene):
    path = tmp / f"{scene['name']}.json"
    path.write_text(json.dumps(scene))
    out = tmp / f"{scene['name']}.h5"
    assert os.access(SPHSIM, os.X_OK), f"{SPHSIM} not found: build it with make (or set SPHSIM)"
    p = subprocess.run([SPHSIM, str(path), "-o", str(out), "--quiet"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture(scope="module")
def run2d(tmp_path_factory):
    return simulate(tmp_path_factory.mktemp("run2d"), SCENE_2D)


@pytest.fixture(scope="module")
def run3d(tmp_path_factory):
    return simulate(tmp_path_factory.mktemp("run3d"), SCENE_3D)


@pytest.fixture(scope="module")
def run_discs(tmp_path_factory):
    return simulate(tmp_path_factory.mktemp("discs"), SCENE_SPHERES)


def png_image(path):
    from PIL import Image
    assert path.stat().st_size > 1000, f"{path} is (nearly) empty"
    im = Image.open(path)
    im.load()
    return im


def distinct_colours(im):
    a = np.asarray(im.convert("RGB")).reshape(-1, 3).astype(np.int64)
    return len(np.unique(a[:, 0] * 65536 + a[:, 1] * 256 + a[:, 2]))


# ---------------------------------------------------------------------------------- --help

@pytest.mark.parametrize("name", ["plot_snapshot.py", "animate.py", "plot_surge_front.py", "surface.py",
                                  "martin_moyce.py", "gauges.py", "spheric_test2.py", "make_meshes.py"])
def test_help(name):
    p = script(name, "--help")
    assert p.stdout.startswith("usage:"), p.stdout[:200]
    assert "--help" in p.stdout


@pytest.mark.parametrize("name", ["validate.py", "density_study.py", "sloshing.py", "wavemaker.py",
                                  "check_leaks.py"])
def test_help_describes_in_whole_sentences(name):
    """--help's description is the docstring's first paragraph, not its first line cut mid-sentence."""
    p = script(name, "--help")
    description = " ".join(p.stdout.split("\n\n")[1].split())
    assert description.endswith("."), description
    assert len(description) > 60, description


@pytest.mark.parametrize("name", ["plot_snapshot.py", "animate.py", "surface.py", "gauges.py",
                                  "plot_neighbour_query.py"])
def test_missing_or_folder_input(name, tmp_path):
    """A file that is not there, or a folder, is named in one line: no traceback, no HDF5 message."""
    for path, words in ((tmp_path / "absent.h5", "no such file"), (tmp_path, "not")):
        p = script(name, path, ok=False)
        assert p.returncode != 0
        assert "Traceback" not in p.stderr and "synchronously" not in p.stderr, p.stderr
        assert str(path) in p.stderr and words in p.stderr, p.stderr


def test_bench_grid_help():
    p = subprocess.run(["sh", str(SCRIPTS / "bench_grid.sh"), "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("bench_grid.sh:") and "usage:" in p.stdout, p.stdout


def test_reversed_colour_scale(run2d):
    for name in ("plot_snapshot.py", "animate.py"):
        p = script(name, run2d, "--vmin", "5", "--vmax", "1", ok=False)
        assert p.returncode == 2 and "--vmin (5) must be below --vmax (1)" in p.stderr, p.stderr


def test_sweep_help():
    p = subprocess.run(["sh", str(SCRIPTS / "sweep.sh"), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "usage: scripts/sweep.sh" in p.stdout


# ---------------------------------------------------------------------------------- sweep.sh --devices
# tests/cli/test_sweep.sh covers the table, reruns and grids; these cover the device slots and
# Ctrl-C, with PoCL's one CPU device standing in for several GPUs (listed twice, under two
# selectors), and with a fake sphsim whose runs take a set time.

def sweep(*args, env=None, timeout=300):
    return subprocess.run(["sh", str(SCRIPTS / "sweep.sh"), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)


def sweep_records(d):
    """The runs' records in DIR/.sweep/runs, in the order they started."""
    recs = [json.loads(f.read_text()) for f in (d / ".sweep" / "runs").glob("*.json")]
    return sorted(recs, key=lambda r: r["start"])


def assert_one_run_per_slot(recs):
    """No two runs held a slot at once: per slot, each run starts after the one before ended."""
    by_slot = {}
    for r in recs:
        by_slot.setdefault(r["slot"], []).append(r)
    for slot, rs in by_slot.items():
        for a, b in zip(rs, rs[1:]):
            assert b["start"] >= a["end"], f"slot {slot}: {b['name']} started before {a['name']} ended"
    return by_slot


def most_at_once(recs):
    events = sorted([(r["start"], 1) for r in recs] + [(r["end"], -1) for r in recs])
    n = best = 0
    for _, e in events:
        n += e
        best = max(best, n)
    return best


def test_sweep_devices_pocl(tmp_path):
    """--devices cpu,N (N the CPU's index): two slots, both PoCL's CPU device; every run gets
    --device with its slot's selector, its summary and log name the device, and no slot runs two
    at once."""
    scene = tmp_path / "tiny.json"
    scene.write_text(json.dumps(dict(SCENE_2D, time={"end": 0.002}, output={"interval": 0.001})))
    # --list-devices: index, type, name, platform, memory; the CPU device by its index and by "cpu"
    listed = subprocess.run([SPHSIM, "--list-devices"], capture_output=True, text=True).stdout
    cpu = [line.split("\t") for line in listed.splitlines() if line.split("\t")[1:2] == ["cpu"]]
    if not cpu:
        pytest.skip("no OpenCL CPU device (PoCL) to stand in for several devices")
    index, pocl = cpu[0][0], cpu[0][2]
    d = tmp_path / "dev"
    p = sweep(scene, "time.end", 0.001, 0.002, 0.003, 0.004, "--devices", f"cpu,{index}", "-o", d)
    assert p.returncode == 0, p.stderr
    assert "4 run(s)" in p.stderr and f"2 at a time on devices cpu,{index}" in p.stderr
    recs = sweep_records(d)
    assert len(recs) == 4
    for r in recs:
        assert r["exit_code"] == 0 and r["end"] >= r["start"]
        i = r["command"].index("--device")
        assert r["command"][i + 1] == r["device"] == ["cpu", index][r["slot"]]
        summary = json.loads((d / f"{r['name']}.json").read_text())
        assert summary["status"] == "ok" and summary["device"] == pocl
        assert f"on {pocl}" in (d / f"{r['name']}.log").read_text()
    assert set(assert_one_run_per_slot(recs)) <= {0, 1}
    assert most_at_once(recs) <= 2
    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert [r["time.end"] for r in rows] == ["0.001", "0.002", "0.003", "0.004"]
    assert all(r["status"] == "ok" for r in rows)


@pytest.mark.parametrize("args, message", [
    (["-j", "3", "--devices", "0,0"], "at most one run per listed device"),
    (["--devices", "0,,1"], "expected device selectors separated by commas"),
    (["--devices", "0", "--", "--device", "cpu"], "no --device among the sphsim arguments"),
])
def test_sweep_devices_usage(tmp_path, args, message):
    scene = tmp_path / "tiny.json"
    scene.write_text(json.dumps(SCENE_2D))
    p = sweep(scene, "time.end", 0.001, "-o", tmp_path / "d", *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not (tmp_path / "d").exists()


def test_sweep_output_is_a_file(tmp_path):
    """-o names a folder: a file there is refused in one line, and left as it was."""
    scene = tmp_path / "tiny.json"
    scene.write_text(json.dumps(SCENE_2D))
    f = tmp_path / "table.csv"
    f.write_text("mine\n")
    p = sweep(scene, "time.end", 0.001, "-o", f)
    assert p.returncode == 2 and "a file, not a folder" in p.stderr and str(f) in p.stderr, p.stderr
    assert f.read_text() == "mine\n"


FAKE_SPHSIM = """\
import json, os, signal, sys, time
# A fake sphsim: sleeps $FAKE_SECONDS, writes -o, prints a summary line; SIGINT or
# SIGTERM ends it as sphsim does (status interrupted, exit 130 / 143).
a = sys.argv[1:]
out = a[a.index("-o") + 1]
dev = a[a.index("--device") + 1] if "--device" in a else None
def stop(sig, _):
    print(json.dumps({"status": "interrupted", "output": out, "device": dev, "snapshots": 0}))
    sys.exit(130 if sig == signal.SIGINT else 143)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
if os.path.exists(out) and "--overwrite" not in a:
    print(json.dumps({"status": "io-error", "error": "exists"}))
    sys.exit(4)
v = a[a.index("--set") + 1].split("=", 1)[1]
time.sleep(0 if v == "quick" else float(os.environ["FAKE_SECONDS"]))
open(out, "w").write("fake")
print(json.dumps({"status": "ok", "output": out, "device": dev, "particles": 1, "steps": 1, "snapshots": 1}))
"""


@pytest.fixture
def fake_sphsim(tmp_path):
    """(environment that makes sweep.sh run the fake sphsim, scene file)."""
    fake = tmp_path / "fake_sphsim"
    fake.write_text(f"#!{sys.executable}\n" + FAKE_SPHSIM)
    fake.chmod(0o755)
    scene = tmp_path / "scene.json"
    scene.write_text("{}")
    return dict(os.environ, SPHSIM=str(fake), FAKE_SECONDS="0.5"), scene


def test_sweep_device_slots(tmp_path, fake_sphsim):
    """Six runs of 0.5 s over three devices: three at a time, never two on one device; -j 2
    takes the first two devices listed."""
    env, scene = fake_sphsim
    p = sweep(scene, "k", *range(6), "--devices", "2,0,1", "-o", tmp_path / "s", env=env)
    assert p.returncode == 0, p.stderr
    recs = sweep_records(tmp_path / "s")
    by_slot = assert_one_run_per_slot(recs)
    assert sorted(by_slot) == [0, 1, 2] and most_at_once(recs) == 3
    for r in recs:
        assert r["command"][r["command"].index("--device") + 1] == r["device"] == ["2", "0", "1"][r["slot"]]
    assert max(r["end"] for r in recs) - recs[0]["start"] < 6 * 0.5  # ran side by side
    p = sweep(scene, "k", *range(4), "--devices", "2,0,1", "-j", "2", "-o", tmp_path / "j2", env=env)
    assert p.returncode == 0, p.stderr
    recs = sweep_records(tmp_path / "j2")
    assert {r["device"] for r in recs} == {"2", "0"} and most_at_once(recs) == 2
    assert_one_run_per_slot(recs)


def test_sweep_interrupt_and_rerun(tmp_path, fake_sphsim):
    """SIGINT to the sweep reaches the running runs, starts no more, writes the table and
    exits 130; a second sweep into the folder meanwhile is refused; a rerun keeps the finished run
    and one finished by hand, and redoes the interrupted and unstarted ones (the interrupted one
    with --overwrite)."""
    env, scene = fake_sphsim
    d = tmp_path / "s"
    cmd = ["sh", str(SCRIPTS / "sweep.sh"), str(scene), "k", "quick", "slow1", "slow2", "slow3", "-j", "2",
           "-o", str(d)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(env, FAKE_SECONDS="60"))
    try:
        deadline = time.time() + 60
        while not all((d / ".sweep" / "runs" / f"k=slow{i}.json").exists() for i in (1, 2)):
            assert time.time() < deadline and proc.poll() is None, "the slow runs did not start"
            time.sleep(0.05)
        time.sleep(0.3)  # let the fake runs set their handlers
        proc.send_signal(signal.SIGINT)  # to the sweep alone (its runs have process groups of their own)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    rows = {r["value"]: r for r in csv.DictReader(open(d / "summary.csv"))}
    assert list(rows) == ["quick", "slow1", "slow2", "slow3"]
    assert rows["quick"]["status"] == "ok"
    for v in ("slow1", "slow2"):
        assert (rows[v]["status"], rows[v]["exit_code"]) == ("interrupted", "130")
    assert (rows["slow3"]["status"], rows["slow3"]["exit_code"]) == ("not-run", "")
    quick_start = json.loads((d / ".sweep" / "runs" / "k=quick.json").read_text())["start"]
    # another sweep into the folder while this one runs is refused
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(env, FAKE_SECONDS="60"))
    try:
        assert "4 run(s) of" in proc.stderr.readline()  # printed with the folder locked
        p = sweep(*cmd[2:], env=env)
        assert p.returncode == 2 and "another sweep is running into" in p.stderr, p.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    # slow1 continued by hand into its own files (as by sphsim --resume) counts as finished
    (d / "k=slow1.h5").write_text("resumed")
    (d / "k=slow1.json").write_text(json.dumps({"status": "ok", "particles": 1}) + "\n")

    p = sweep(*cmd[2:], env=dict(env, FAKE_SECONDS="0"))
    assert p.returncode == 0, p.stderr
    assert "2 kept from an earlier sweep" in p.stderr
    recs = {r["name"]: r for r in sweep_records(d)}
    assert recs["k=quick"]["start"] == quick_start  # kept, not rerun
    assert recs["k=slow1"]["exit_code"] == 130 and (d / "k=slow1.h5").read_text() == "resumed"
    for v in ("slow2", "slow3"):
        assert recs[f"k={v}"]["exit_code"] == 0 and "--overwrite" in recs[f"k={v}"]["command"]
    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert [(r["k"], r["status"]) for r in rows] == [(v, "ok") for v in ("quick", "slow1", "slow2", "slow3")]


# ---------------------------------------------------------------------------------- bench.py --until

def test_bench_progress_windows():
    """Windows of at least 0.05 s of simulated time from sphsim's progress lines, whose
    steps_per_s is the mean since the start: the wall time at a line is step / steps_per_s."""
    lines = ["sphsim 0.1.0: a header line",
             '{"progress":0.1,"step":100,"steps":1000,"time":0.02,"steps_per_s":50}',   # 2 s
             '{"progress":0.2,"step":200,"steps":1000,"time":0.04,"steps_per_s":50}',   # 4 s
             '{"progress":0.3,"step":300,"steps":1000,"time":0.07,"steps_per_s":50}',   # 6 s
             '{"progress":0.4,"step":340,"steps":1000,"time":0.09,"steps_per_s":42.5},  # 8 s',
             '{"progress":0.5,"step":350,"steps":1000,"time":0.10,"steps_per_s":35}']   # 10 s
    w = bench.progress_windows("\n".join(lines))
    # 0.02 -> 0.07 (200 steps in 4 s), then 0.07 -> 0.10 (the last line closes it: 50 steps in
    # 4 s; the malformed line is skipped)
    assert [(a, b, k) for a, b, k, _ in w] == [(0.02, 0.07, 200), (0.07, 0.10, 50)]
    assert w[0][3] == pytest.approx(20.0) and w[1][3] == pytest.approx(80.0)
    assert bench.progress_windows("no progress here") == []
    # sphsim's elapsed_s, where it gives it, is the wall time itself
    timed = ['{"progress":0.1,"step":100,"steps":1000,"time":0.02,"elapsed_s":3,"steps_per_s":33}',
             '{"progress":0.3,"step":300,"steps":1000,"time":0.07,"elapsed_s":5,"steps_per_s":60}']
    assert bench.progress_windows("\n".join(timed)) == [(0.02, 0.07, 200, pytest.approx(10.0))]


def test_bench_stages():
    """Every kernel of a step counts in its stage: the lists' kernels (the decision, the check, the
    build apart on GPUs) in lists, the kept-step density in density; snapshot-only kernels in
    none."""
    assert [bench.stage_of(k) for k in ("nlist_go", "nlist_check", "nlist_build", "sph_density_kept",
                                        "sph_density_walk_built", "sph_forces_walk", "grid_gather_16",
                                        "sort_scatter")] == \
        ["lists", "lists", "lists", "density", "density", "forces+integrate", "reorder", "sort"]
    assert bench.stage_of("sph_pressure") is None and bench.stage_of("something_new") == "other"


def test_bench_linear_model():
    """The fit recovers t = t0 + a N_fluid + b N_walls from exact data, with zero residuals; a
    row 20 % slower than the line shows as a positive residual; a scene without fluid, or
    without walls, fits t0 + b N; fewer than four rows, or walls a fixed share of the fluid
    (the terms cannot be told apart), give no model."""
    def rows(nf, nw, f):
        return [{"N": a + b, "N_fluid": a, "ms_step_wall": f(a, b)} for a, b in zip(nf, nw)]
    nf, nw = [1e6, 3e6, 1e7, 3e7, 1e8], [8e5, 1.6e6, 3.6e6, 7.5e6, 1.7e7]
    c, res = bench.linear_model(rows(nf, nw, lambda a, b: 0.1 + 0.5 * a / 1e6 + 0.12 * b / 1e6))
    assert c == pytest.approx([0.1, 0.5, 0.12], rel=1e-9, abs=1e-12)
    assert max(abs(e) for e in res) < 1e-12
    off = rows(nf, nw, lambda a, b: 0.1 + 0.5 * a / 1e6 + 0.12 * b / 1e6)
    off[2]["ms_step_wall"] *= 1.2  # one size 20 % slower
    _, res = bench.linear_model(off)
    assert res[2] > 0.05  # the slow row lies above the model
    c, res = bench.linear_model(rows([0] * 4, [1e4, 2e4, 4e4, 8e4], lambda a, b: 2.0 + 30.0 * b / 1e6))
    assert c == pytest.approx([2.0, 30.0], rel=1e-9) and max(abs(e) for e in res) < 1e-12
    c, res = bench.linear_model(rows(nf, [0] * 5, lambda a, b: 0.2 + 0.4 * a / 1e6))
    assert c == pytest.approx([0.2, 0.4], rel=1e-9) and max(abs(e) for e in res) < 1e-12
    assert bench.linear_model(rows(nf[:3], nw[:3], lambda a, b: 1.0)) is None
    assert bench.linear_model(rows(nf, [0.3 * a for a in nf], lambda a, b: 0.1 + 0.5 * a / 1e6)) is None


def test_bench_grid_script():
    """scripts/bench_grid.sh (the first half of `make bench`) builds its benchmark and times a
    rebuild of 1000 particles from random and from sorted order: each row's stages add up to
    its total, and the rate is that total's."""
    p = subprocess.run(["sh", str(SCRIPTS / "bench_grid.sh"), "--reps", "1", "1e3"], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [l.split() for l in p.stdout.splitlines() if l.strip() and not l.startswith("#")]
    assert [r[:2] for r in rows] == [["1000", "random"], ["1000", "sorted"]], p.stdout
    for r in rows:
        keys, sort, table, total, rate = (float(r[k]) for k in (4, 5, 6, 7, 9))
        assert min(keys, sort, table) > 0 and total == pytest.approx(keys + sort + table, abs=2e-4)
        assert rate == pytest.approx(1000 / total / 1e3, rel=0.05, abs=0.05)


def test_fuzz_script():
    """scripts/fuzz.sh builds the scene parser's fuzzer and runs it (2 s) without a finding."""
    p = subprocess.run(["sh", str(SCRIPTS / "fuzz.sh"), "2"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-2000:]
    assert re.search(r"Done \d+ runs", p.stdout) and "fuzz: ran 2 s" in p.stdout, p.stdout[-2000:]


def bench_rows(out, *args):
    """The CSV rows of scripts/bench.py on the 2D dam break of about 2000 particles."""
    p = subprocess.run([sys.executable, str(SCRIPTS / "bench.py"), "--sphsim", SPHSIM, "--scenes", "dam_break_2d",
                        "--sizes", "2000", "--out", str(out), *args],
                       capture_output=True, text=True, env=env_headless(), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    with open(str(out) + ".csv") as f:
        return list(csv.DictReader(f))


def test_bench_until(tmp_path):
    """bench.py --until runs the case to that simulated time (its step count follows from the
    scene's time step) and writes the row; --steps runs that many."""
    rows = bench_rows(tmp_path / "b", "--until", "0.05")
    assert len(rows) == 1 and rows[0]["scene"] == "dam_break_2d"
    assert int(bench_rows(tmp_path / "c", "--steps", "7")[0]["steps"]) == 7
    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps(bench.scene_dam_break_2d(2000)))
    c = subprocess.run([SPHSIM, str(scene), "--check"], capture_output=True, text=True)
    dt = json.loads(c.stdout.strip().splitlines()[-1])["check"]["dt_s"]
    assert abs(int(rows[0]["steps"]) - 0.05 / dt) <= 1.0
    assert int(rows[0]["list_rebuilds"]) >= 1 and float(rows[0]["ms_step_wall"]) > 0
    # the device's gaps between the timed kernels (sphsim --profile's idle_s): some (the host
    # reads each rebuild decision), and less than a step
    assert 0 < float(rows[0]["ms_idle"]) < float(rows[0]["ms_step_wall"])
    # the fluid count from sphsim --check, and the time per million of it
    check = json.loads(c.stdout.strip().splitlines()[-1])["check"]
    assert int(rows[0]["N_fluid"]) == check["fluid_particles"] < int(rows[0]["N"])
    assert float(rows[0]["ms_per_step_per_million_fluid"]) == pytest.approx(
        float(rows[0]["ms_step_wall"]) / (int(rows[0]["N_fluid"]) / 1e6), rel=1e-9)


# ---------------------------------------------------------------------------------- martin_moyce

def test_martin_moyce_data():
    T, Z = martin_moyce.surge_front()
    assert len(T) == len(Z) >= 10
    assert T[0] == 0.0 and Z[0] == 1.0  # the front starts at the column's side
    assert np.all(np.diff(T) > 0), "T must increase strictly"
    assert np.all(np.diff(Z) > 0), "the front only advances"
    # the front is slower than the shallow-water (Ritter) limit dZ/dT = 2 and does not stall
    slope = np.diff(Z) / np.diff(T)
    assert np.all(slope > 0.1) and np.all(slope < 2.0)
    assert T[-1] > 3.0  # covers the compared range 0.5 <= T <= 3
    np.testing.assert_allclose(martin_moyce.interpolate_z(T), Z)
    assert math.isnan(float(martin_moyce.interpolate_z(10.0)))
    assert "10.1098/rsta.1952.0006" in martin_moyce.REFERENCE
    p = script("martin_moyce.py", "--csv")
    assert p.stdout.splitlines()[0] == "T,Z" and len(p.stdout.splitlines()) == len(T) + 1


# ---------------------------------------------------------------------------------- plot_snapshot

def test_plot_snapshot_2d(run2d, tmp_path, capsys):
    out = tmp_path / "speed.png"
    p = script("plot_snapshot.py", run2d, "-o", out, "--width", 640, "--height", 480)
    im = png_image(out)
    assert im.size == (640, 480)
    assert distinct_colours(im) > 20  # particles in several colours, axes, text
    assert "snapshot 10" in p.stderr  # default: the last of 11

    # by time: the nearest snapshot; every documented field; boundary hidden
    for field in ("density", "pressure", "velocity_x", "velocity_y", "id", "type", "mass", "x"):
        o = tmp_path / f"{field}.png"
        rc, _, err = call(capsys, plot_snapshot, run2d, "--time", 0.042, "--field", field, "-o", o,
                          "--width", 320, "--height", 240)
        assert rc == 0 and "snapshot 4" in err, err
        assert png_image(o).size == (320, 240)
    a, b = tmp_path / "all.png", tmp_path / "fluid.png"
    assert call(capsys, plot_snapshot, run2d, "--step", 0, "--field", "type", "-o", a)[0] == 0
    assert call(capsys, plot_snapshot, run2d, "--step", 0, "--field", "type", "--hide-boundary", "-o", b)[0] == 0
    assert np.any(np.asarray(png_image(a)) != np.asarray(png_image(b))), "--hide-boundary changed nothing"


def test_plot_snapshot_errors(run2d, tmp_path, capsys):
    rc, _, err = call(capsys, plot_snapshot, run2d, "--field", "vorticity", "-o", tmp_path / "x.png")
    assert rc == 1 and "vorticity" in err and "density" in err  # lists the choices
    rc, _, err = call(capsys, plot_snapshot, run2d, "--step", 99, "-o", tmp_path / "x.png")
    assert rc == 1 and "11 snapshot" in err
    rc, _, err = call(capsys, plot_snapshot, run2d, "--axes", "xz", "-o", tmp_path / "x.png")
    assert rc == 1 and "2D" in err
    rc, _, err = call(capsys, plot_snapshot, run2d, "--step", 1, "--time", 0.1)
    assert rc == 2 and "not allowed with" in err
    p = script("plot_snapshot.py", tmp_path / "missing.h5", ok=False)
    assert p.returncode == 1 and "missing.h5" in p.stderr
    assert not (tmp_path / "x.png").exists()


def test_plot_snapshot_3d_and_discs(run3d, run_discs, tmp_path, capsys):
    for axes in ("xz", "xy", "yz"):
        o = tmp_path / f"{axes}.png"
        rc, _, err = call(capsys, plot_snapshot, run3d, "--axes", axes, "--field", "velocity_z", "--fluid-only",
                          "-o", o, "--width", 400, "--height", 300)
        assert rc == 0, err
        assert png_image(o).size == (400, 300)
    o = tmp_path / "slab.png"
    script("plot_snapshot.py", run3d, "--slab", 0.02, 0.05, "-o", o)
    png_image(o)
    # 3D: the walls are hidden unless asked for
    a, b, c = tmp_path / "default.png", tmp_path / "hidden.png", tmp_path / "walls.png"
    for out, extra in ((a, []), (b, ["--hide-boundary"]), (c, ["--show-boundary"])):
        assert call(capsys, plot_snapshot, run3d, "--field", "type", "-o", out, *extra)[0] == 0
    assert np.array_equal(np.asarray(png_image(a)), np.asarray(png_image(b)))
    assert not np.array_equal(np.asarray(png_image(a)), np.asarray(png_image(c)))
    o = tmp_path / "discs.png"
    assert call(capsys, plot_snapshot, run_discs, "--field", "radius", "-o", o)[0] == 0
    assert distinct_colours(png_image(o)) > 5


# ---------------------------------------------------------------------------------- animate

def test_animate_gif(run2d, tmp_path, capsys):
    from PIL import Image
    out = tmp_path / "a.gif"
    script("animate.py", run2d, "-o", out, "--fps", 5, "--width", 320, "--height", 240, "--field", "pressure")
    im = Image.open(out)
    assert im.size == (320, 240)
    assert im.n_frames == 11  # one frame per snapshot
    assert im.info.get("duration") == 200  # ms per frame at 5 fps
    out = tmp_path / "b.gif"
    assert call(capsys, animate, run2d, "-o", out, "--every", 3, "--width", 200, "--height", 160,
                "--fluid-only")[0] == 0
    assert Image.open(out).n_frames == 4  # snapshots 0, 3, 6, 9
    out = tmp_path / "c.gif"
    assert call(capsys, animate, run2d, "-o", out, "--start", 0.05, "--end", 0.08, "--width", 200,
                "--height", 160)[0] == 0
    assert Image.open(out).n_frames == 4  # t = 0.05, 0.06, 0.07, 0.08


def test_animate_video(run2d, tmp_path, capsys):
    out = tmp_path / "a.mp4"
    if shutil.which("ffmpeg"):
        script("animate.py", run2d, "-o", out, "--every", 5, "--width", 320, "--height", 240)
        assert out.stat().st_size > 1000
        if shutil.which("ffprobe"):
            p = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                                "stream=codec_name,width,height,nb_read_frames", "-of", "csv=p=0", str(out)],
                               capture_output=True, text=True)
            assert p.stdout.strip() == "h264,320,240,3", p.stdout + p.stderr  # snapshots 0, 5, 10
    else:
        rc, _, err = call(capsys, animate, run2d, "-o", out)
        assert rc == 1 and "ffmpeg" in err
        assert not out.exists()
    rc, _, err = call(capsys, animate, run2d, "-o", tmp_path / "a.txt")
    assert rc == 2 and ".gif" in err  # usage error: unknown format


# ---------------------------------------------------------------------------------- surge front

def test_front_position_ignores_splashes():
    dx = 0.01
    ii, jj = np.meshgrid(np.arange(10), np.arange(20), indexing="ij")
    pos = np.zeros((200, 3))
    pos[:, 0], pos[:, 1] = (ii.ravel() + 0.5) * dx, (jj.ravel() + 0.5) * dx
    splash = np.array([[0.30, 0.01, 0], [0.25, 0.05, 0], [0.2505, 0.0505, 0]])  # one lone, one pair
    allp = np.vstack([pos, splash])
    f = plot_surge_front.front_position(allp[:, 0], allp, dx, "neighbours", min_neighbours=2)
    assert f == pytest.approx(0.095)
    f1 = plot_surge_front.front_position(allp[:, 0], allp, dx, "neighbours", min_neighbours=1)
    assert f1 == pytest.approx(0.2505)  # the pair counts with one neighbour
    fp = plot_surge_front.front_position(allp[:, 0], allp, dx, "percentile", percentile=98)
    assert 0.09 <= fp <= 0.096


def test_surge_front(run2d, tmp_path, capsys):
    png, csv = tmp_path / "front.png", tmp_path / "front.csv"
    p = script("plot_surge_front.py", run2d, "-o", png, "--csv", csv, "--json")
    r = json.loads(p.stdout)
    rows = r["rows"]
    assert len(rows) == 11
    assert r["column_width_m"] == pytest.approx(0.1)  # from the stored scene
    assert r["g"] == pytest.approx(9.81)
    t = np.array([x["t_s"] for x in rows])
    T = np.array([x["T"] for x in rows])
    xf = np.array([x["front_x_m"] for x in rows])
    Z = np.array([x["Z"] for x in rows])
    assert np.all(np.isfinite(T)) and np.all(np.isfinite(xf)) and np.all(np.isfinite(Z))
    np.testing.assert_allclose(T, t * math.sqrt(2 * 9.81 / 0.1))
    np.testing.assert_allclose(Z, xf / 0.1)
    assert xf[0] == pytest.approx(0.1, abs=1e-6)  # at rest the front is the column's side
    assert np.all(xf >= 0.1 - 1e-6), "the front is never behind the initial column width"
    assert np.all(np.diff(xf) > -0.01), "the front moves backwards by more than dx"
    assert xf[-1] > 0.12  # it has moved: T = 1.4
    assert xf[-1] < 0.4  # and is still in the tank
    # compared on 0.5 <= T <= 1.4: finite, and within a loose physical bound
    assert r["compared_snapshots"] == int(np.sum((T >= 0.5) & (T <= 3.0)))
    assert 0.0 <= r["max_rel_dev"] < 0.5
    assert png_image(png).size == (900, 600)
    lines = csv.read_text().splitlines()
    assert lines[0] == "t_s,T,front_x_m,Z,Z_martin_moyce,rel_dev" and len(lines) == 12

    # the printed table and the deviation line
    rc, out, _ = call(capsys, plot_surge_front, run2d, "--no-plot")
    assert rc == 0
    assert re.search(r"max relative deviation from Martin & Moyce for 0.5 <= T <= 3.0: [0-9.]+ %", out)
    assert len([ln for ln in out.splitlines() if re.match(r"\s+0\.\d+\s", ln)]) == 11
    # the percentile method agrees within a few particle spacings
    rc, out, _ = call(capsys, plot_surge_front, run2d, "--no-plot", "--json", "--front", "percentile")
    xq = np.array([x["front_x_m"] for x in json.loads(out)["rows"]])
    assert np.all(np.abs(xq - xf) < 0.03)
    # --tolerance: exit 1 when exceeded; an explicit --width changes a and T
    rc, _, err = call(capsys, plot_surge_front, run2d, "--no-plot", "--tolerance", 0)
    assert rc == 1 and "exceeds" in err
    rc, out, _ = call(capsys, plot_surge_front, run2d, "--no-plot", "--json", "--width", 0.2)
    assert json.loads(out)["rows"][-1]["T"] == pytest.approx(0.1 * math.sqrt(2 * 9.81 / 0.2))


def test_surge_front_refuses_particles(run_discs):
    p = script("plot_surge_front.py", run_discs, "--no-plot", ok=False)
    assert p.returncode == 1 and "particle" in p.stderr


# ---------------------------------------------------------------------------------- surface

def read_ply(path):
    """Minimal PLY reader (ascii and binary_little_endian; vertex float x y z [nx ny nz]; face
    list uchar int; edge int int). Returns (header lines, vertices (V, k), faces or edges)."""
    data = path.read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    head = data[:end].decode("ascii").splitlines()
    assert head[0] == "ply"
    fmt = head[1].split()[1]
    elements, current = [], None
    for ln in head[2:]:
        w = ln.split()
        if w[0] == "element":
            current = [w[1], int(w[2]), []]
            elements.append(current)
        elif w[0] == "property":
            current[2].append(w[1:])
    out = {}
    if fmt == "ascii":
        tokens = data[end:].split()
        at = 0
        for name, n, props in elements:
            if name == "face":
                rows = []
                for _ in range(n):
                    k = int(tokens[at])
                    rows.append([int(x) for x in tokens[at + 1:at + 1 + k]])
                    at += 1 + k
                out[name] = np.array(rows, dtype=np.int64).reshape(n, 3)
            else:
                vals = np.array([float(x) for x in tokens[at:at + n * len(props)]]).reshape(n, len(props))
                at += n * len(props)
                out[name] = vals
        assert at == len(tokens)
    else:
        assert fmt == "binary_little_endian"
        at = end
        for name, n, props in elements:
            if name == "face":
                assert props[0] == ["list", "uchar", "int", "vertex_indices"]
                rec = np.frombuffer(data, dtype=[("n", "u1"), ("v", "<i4", (3,))], count=n, offset=at)
                assert np.all(rec["n"] == 3)
                out[name] = rec["v"].astype(np.int64)
                at += n * 13
            else:
                t = {"float": "<f4", "int": "<i4"}[props[0][0]]
                vals = np.frombuffer(data, dtype=t, count=n * len(props), offset=at).reshape(n, len(props))
                out[name] = vals.astype(np.float64 if t == "<f4" else np.int64)
                at += n * len(props) * 4
        assert at == len(data), "trailing bytes after the last element"
    return head, out.get("vertex"), out.get("face", out.get("edge"))


def test_field_on_grid_matches_brute_force():
    """The O(N) stencil scatter equals a direct sum over all particles, for every kernel."""
    rng = np.random.default_rng(1)
    pos = rng.uniform(0.0, 0.05, size=(60, 3))
    w = rng.uniform(0.5, 1.5, size=60)
    h, cell = 0.007, 0.004
    for dims in (2, 3):
        origin = np.full(dims, -0.02)
        shape = (24,) * dims
        for kernel in ("wendland", "cubic_spline", "poly6"):
            g = surface.field_on_grid(pos, w, kernel, h, 2 * h, dims, origin, cell, shape)
            idx = np.stack(np.meshgrid(*[np.arange(24)] * dims, indexing="ij"), axis=-1).reshape(-1, dims)
            nodes = origin + cell * idx
            r = np.linalg.norm(nodes[:, None, :] - pos[None, :, :dims], axis=2)
            ref = sphsim_reader.kernel_w(kernel, r, h, dims) @ w
            np.testing.assert_allclose(g.ravel(), ref, rtol=1e-12, atol=1e-9 * ref.max())


def test_surface_3d(run3d, tmp_path):
    out = tmp_path / "mesh"
    script("surface.py", run3d, "--all", "-o", out, "--format", "both")
    times = (out / "surface_times.csv").read_text().splitlines()
    assert times[0] == "snapshot,time_s,vertices,faces,files" and len(times) == 4  # 3 snapshots
    with sphsim_reader.open_run(run3d) as run:
        n_fluid = int(run.params["particle_counts"][0])
    assert n_fluid == 1000
    tank_lo, tank_hi = np.zeros(3), np.array([0.2, 0.1, 0.15])
    for k in range(3):
        head, v, f = read_ply(out / f"surface_{k:06d}.ply")
        assert any(ln.startswith("comment sphsim surface") for ln in head)
        assert len(v) > 100 and len(f) > 100 and v.shape[1] == 6  # x y z nx ny nz
        assert f.min() >= 0 and f.max() < len(v)
        xyz, nrm = v[:, :3], v[:, 3:]
        assert np.all(xyz >= tank_lo - 1e-6) and np.all(xyz <= tank_hi + 1e-6), "vertices outside the tank"
        # the water stays near its 10 cm cube in 0.02 s: the mesh spans about that box
        assert xyz[:, 0].max() == pytest.approx(0.1, abs=0.015)
        assert xyz[:, 2].max() == pytest.approx(0.1, abs=0.015)
        assert xyz.min() == pytest.approx(0.0, abs=1e-6)  # capped on the walls it touches
        # closed and consistently wound: every edge in exactly two faces, once each way
        e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
        key = e[:, 0] * len(v) + e[:, 1]
        rkey = e[:, 1] * len(v) + e[:, 0]
        assert len(np.unique(key)) == len(key), "an edge is used twice in the same direction"
        assert np.array_equal(np.sort(key), np.sort(rkey)), "the mesh has holes"
        # enclosed volume (divergence theorem) ~ the fluid volume N dx^3 = 1e-3 m^3; winding outward
        a, b, c = xyz[f[:, 0]], xyz[f[:, 1]], xyz[f[:, 2]]
        vol = np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0
        assert vol == pytest.approx(n_fluid * 0.01 ** 3, rel=0.08)
        fn = np.cross(b - a, c - a)
        assert np.mean(np.einsum("ij,ij->i", fn, nrm[f[:, 0]]) > 0) > 0.95, "normals disagree with the winding"
        # the OBJ holds the same mesh
        obj = (out / f"surface_{k:06d}.obj").read_text().splitlines()
        assert sum(ln.startswith("v ") for ln in obj) == len(v)
        assert sum(ln.startswith("f ") for ln in obj) == len(f)
    # ASCII PLY: the same mesh
    script("surface.py", run3d, "--step", 1, "--ascii", "-o", tmp_path / "ascii")
    _, va, fa = read_ply(tmp_path / "ascii" / "surface_000001.ply")
    _, vb, fb = read_ply(out / "surface_000001.ply")
    np.testing.assert_allclose(va, vb, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(fa, fb)
    # --every picks snapshots for --all only: with one snapshot it is refused, not ignored
    p = script("surface.py", run3d, "--step", 1, "--every", 2, "-o", tmp_path / "one", ok=False)
    assert p.returncode == 2 and "--every picks snapshots for --all" in p.stderr, p.stderr
    assert not (tmp_path / "one").exists()
    # VTK (ParaView's readers) opens it
    vtk = pytest.importorskip("vtk")
    r = vtk.vtkPLYReader()
    r.SetFileName(str(out / "surface_000002.ply"))
    r.Update()
    assert r.GetOutput().GetNumberOfPoints() == len(v) and r.GetOutput().GetNumberOfCells() == len(f)


def test_surface_2d(run2d, tmp_path):
    out = tmp_path / "lines"
    script("surface.py", run2d, "--step", 0, "-o", out)
    obj = (out / "surface_000000.obj").read_text().splitlines()
    v = np.array([[float(x) for x in ln.split()[1:]] for ln in obj if ln.startswith("v ")])
    e = np.array([[int(x) - 1 for x in ln.split()[1:]] for ln in obj if ln.startswith("l ")])
    assert len(v) > 20 and len(e) == len(v)  # closed polylines: one edge per vertex
    assert np.all(v[:, 2] == 0)
    assert np.all(v[:, :2] >= -1e-6) and np.all(v[:, 0] <= 0.4 + 1e-6) and np.all(v[:, 1] <= 0.3 + 1e-6)
    # enclosed area (shoelace over the edges) ~ the 0.1 m x 0.2 m column
    area = 0.5 * abs(np.sum(v[e[:, 0], 0] * v[e[:, 1], 1] - v[e[:, 1], 0] * v[e[:, 0], 1]))
    assert area == pytest.approx(0.02, rel=0.06)
    assert v[:, 0].max() == pytest.approx(0.1, abs=0.01) and v[:, 1].max() == pytest.approx(0.2, abs=0.01)


def test_surface_refuses_particle_mode(run_discs, tmp_path):
    p = script("surface.py", run_discs, "-o", tmp_path / "s", ok=False)
    assert p.returncode == 1 and "particle-mode" in p.stderr


def test_gauges_csv_png_and_reference(tmp_path, capsys):
    """gauges.py: a CSV per gauge (time and the gauge's columns, as the file holds them), a PNG
    per gauge with a reference overlaid, and clear errors for a file without gauges and an
    unknown gauge."""
    scene = dict(SCENE_2D, gauges=[{"name": "p1", "type": "pressure", "point": [0.05, 0.02]},
                                   {"name": "wall", "type": "force"}])
    h5 = simulate(tmp_path, scene)
    ref = tmp_path / "ref.csv"
    ref.write_text("# a measurement\ntime,p\n0,1000\n0.05,1500\n0.1,1200\n")
    out = tmp_path / "g"
    assert gauges_script.main([str(h5), "--csv", str(out), "--png", str(out), "--ref", f"p1={ref}"]) == 0
    printed = capsys.readouterr().out
    assert "p1: pressure" in printed and "wall: force" in printed
    with sphsim_reader.open_run(h5) as run:
        g = run.gauges()
    assert list(g) == ["p1", "wall"] and g["wall"].columns == ["Fx", "Fy", "Mz"]
    with open(out / "wall.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["time_s", "Fx_N/m", "Fy_N/m", "Mz_Nm/m"]
    data = np.array(rows[1:], dtype=float)
    assert data.shape == (len(g["wall"].time), 4)
    assert np.allclose(data[:, 1:], g["wall"].values, rtol=1e-6, atol=1e-6)
    for name in ("p1", "wall"):
        assert (out / f"{name}.png").stat().st_size > 5000
    assert gauges_script.main([str(h5), "--gauge", "nope"]) == 1
    assert "no gauge 'nope'" in capsys.readouterr().err
    (tmp_path / "plain").mkdir()
    plain = simulate(tmp_path / "plain", SCENE_3D)
    assert gauges_script.main([str(plain)]) == 1
    assert "has no gauges" in capsys.readouterr().err


def write_spheric_file(path, t, series):
    """A file in the layout of the SPHERIC Test 2 data (time, P1..P8, H1..H4, a header with units);
    series: {column: values at t}, the other columns 0."""
    names = [f"P{k}" for k in range(1, 9)] + [f"H{k}" for k in range(1, 5)]
    with open(path, "w") as f:
        f.write("Time (s) " + " ".join(f"{n} ({'Pa' if n[0] == 'P' else 'm'})" for n in names) + "\n")
        for i, ti in enumerate(t):
            f.write(" ".join([f"{ti:.6f}"] + [f"{series[n][i]:.6f}" if n in series else "0" for n in names]) + "\n")


def test_spheric_test2_against_its_own_series(tmp_path, capsys):
    """spheric_test2.py on a small 3D dam break with gauges named as the benchmark's (H2 in the
    path of the front, H4 in the column, P1 on the far wall): against an "experiment" written from
    the run's own gauges in the SPHERIC file layout, the RMS difference is 0 and the arrival times
    agree to a sample; the same shifted by 20 ms shows the shift; the PNG and JSON are written; a
    run without the gauges and a folder without the data are clear errors."""
    scene = {"format": 1, "name": "tiny_spheric", "dimensions": 3,
             "tank": {"min": [0, 0, 0], "max": [0.4, 0.1, 0.3]}, "gravity": [0, 0, -9.81],
             "fluid": {"blocks": [{"min": [0.26, 0, 0], "max": [0.4, 0.1, 0.2]}], "spacing": 0.02},
             "gauges": [{"name": "H2", "type": "height", "point": [0.1, 0.05, 0]},
                        {"name": "H4", "type": "height", "point": [0.33, 0.05, 0]},
                        {"name": "P1", "type": "pressure", "point": [0.0, 0.05, 0.02]}],
             "time": {"end": 0.3}, "output": {"interval": 0.05}}
    h5 = simulate(tmp_path, scene)
    with sphsim_reader.open_run(h5) as run:
        g = run.gauges()
        sim = {n: (g[n].time, np.nan_to_num(g[n].values[:, 0])) for n in ("H2", "H4", "P1")}
    te = np.arange(0.0, 0.3 + 1e-9, 0.001)
    data = tmp_path / "data"
    data.mkdir()
    write_spheric_file(data / "test_case_2_exp_data.dat", te, {n: np.interp(te, *sim[n]) for n in sim})
    js = tmp_path / "st2.json"
    rc, out, _ = call(capsys, spheric_test2, h5, "--data", data, "--until", 0.3, "--png", tmp_path / "st2.png",
                      "--json", js)
    assert rc == 0
    assert "| H2 |" in out and "| H4 |" in out and "| P1 |" in out
    res = {r["signal"]: r for r in json.loads(js.read_text())["signals"]}
    assert png_image(tmp_path / "st2.png").size[0] > 500
    for n in ("H2", "H4", "P1"):
        assert res[n]["rms_difference"] < 1e-3 * max(1.0, res[n]["experiment_max"]), res[n]
    for n in ("H2", "P1"):
        assert res[n]["arrival_simulation_s"] is not None
        assert abs(res[n]["arrival_simulation_s"] - res[n]["arrival_experiment_s"]) < 2e-3, res[n]
        assert res[n]["first_peak_experiment"] <= res[n]["first_peak_simulation"] + 1e-3
    # the experiment 20 ms later
    late = tmp_path / "late"
    late.mkdir()
    write_spheric_file(late / "exp.txt", te + 0.02, {n: np.interp(te, *sim[n]) for n in sim})
    rc, out, _ = call(capsys, spheric_test2, h5, "--data", late, "--until", 0.3, "--png", tmp_path / "l.png",
                      "--json", js)
    assert rc == 0
    res = {r["signal"]: r for r in json.loads(js.read_text())["signals"]}
    assert abs(res["P1"]["arrival_experiment_s"] - res["P1"]["arrival_simulation_s"] - 0.02) < 2e-3
    # errors
    (tmp_path / "plain").mkdir()
    plain = simulate(tmp_path / "plain", SCENE_3D)
    with pytest.raises(SystemExit, match="no gauge H2, H4, P1"):
        spheric_test2.main([str(plain), "--data", str(data), "--png", str(tmp_path / "x.png")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="no text file with a header naming P1 and H2"):
        spheric_test2.main([str(h5), "--data", str(empty)])


def test_user_mistakes_get_a_message_not_a_traceback(run2d, tmp_path):
    """A missing binary, a missing reference file, a file where a folder goes, a snapshot out of
    range, a bad REPEAT: a message naming the problem and a non-zero exit, no Python traceback."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    gauged = simulate(tmp_path, dict(SCENE_2D, name="gauged", gauges=[{"name": "p1", "type": "pressure",
                                                                       "point": [0.05, 0.02]}]))
    cases = [
        ("validate.py", ["--only", "hydrostatic_3d", "--sphsim", tmp_path / "nosuch", "--docs", tmp_path / "d",
                         "--work", tmp_path / "w"], "cannot run"),
        ("gauges.py", [gauged, "--png", tmp_path / "g", "--ref", f"p1={tmp_path / 'missing.csv'}"], "missing.csv"),
        ("make_meshes.py", [afile], "afile"),
        ("sphsim_reader.py", [run2d, "--snapshot", "-99"], "snapshot -99 out of range"),
    ]
    for name, args, message in cases:
        p = script(name, *args, ok=False)
        assert p.returncode != 0 and "Traceback" not in p.stderr and message in p.stderr, (name, p.stderr)
    p = subprocess.run(["sh", str(SCRIPTS / "bench_mpi.sh"), "scenes/dam_break_2d.json", "--set", "time.end=0.001"],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 2 and "REPEAT must be a whole number" in p.stderr
