"""Progress on stderr: the ETA of --progress=json lines comes from the recent step rate, after
the first step (kernels are compiled on the way), and from the steps a resumed run has left."""
import json
import subprocess

import pytest

# A 2D dam break of about 2 000 particles run for 4 000 steps: some 10 s on two cores, so that
# several progress lines (one every 2 s) come out
SCENE = {"format": 1, "dimensions": 2, "mode": "sph",
         "tank": {"min": [0, 0], "max": [0.6, 0.3]},
         "fluid": {"blocks": [{"min": [0, 0], "max": [0.15, 0.2]}], "spacing": 0.004},
         "time": {"end": 0.2, "dt": 5e-5}, "output": {"interval": 0.05}}


def progress_lines(stderr):
    return [json.loads(ln) for ln in stderr.splitlines() if ln.startswith('{"progress"')]


def run(sphsim_bin, *args):
    p = subprocess.run([str(sphsim_bin), *map(str, args), "--progress=json"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return progress_lines(p.stderr)


def test_eta_from_recent_steps(sphsim_bin, tmp_path):
    """The first line (step 1) has no ETA yet: its rate would include the kernels' compilation.
    Every later line before the end has one, and it predicts the time the run then still took
    within a factor of three (the shared machine's noise); the last line says 0."""
    scene = tmp_path / "dam.json"
    scene.write_text(json.dumps(SCENE))
    lines = run(sphsim_bin, scene, "-o", tmp_path / "dam.h5")
    assert lines[0]["step"] == 1 and lines[0]["eta_s"] is None
    end = lines[-1]
    assert end["step"] == end["steps"] == 4000 and end["eta_s"] == 0
    timed = [ln for ln in lines[1:-1] if ln["eta_s"] is not None]
    assert timed, "no line with an ETA before the end"
    for ln in timed:
        left = end["elapsed_s"] - ln["elapsed_s"]
        if left > 1.0:  # long enough to compare
            assert left / 3 <= ln["eta_s"] <= 3 * left, (ln, end["elapsed_s"])
    # the elapsed time grows, and the mean rate is the steps over it
    assert all(b["elapsed_s"] >= a["elapsed_s"] for a, b in zip(lines, lines[1:]))
    assert end["steps_per_s"] == pytest.approx(end["step"] / end["elapsed_s"], rel=1e-3)


def test_eta_of_a_resumed_run_counts_its_own_steps(sphsim_bin, tmp_path):
    """A run stopped at a snapshot and resumed: the resumed run's lines give the steps it has
    left, at its own rate (a rate taken over the steps of the first run would be far too high)."""
    scene = tmp_path / "dam.json"
    scene.write_text(json.dumps(SCENE))
    out = tmp_path / "res.h5"
    # stopped by SIGINT once two snapshots are in the file
    p = subprocess.Popen([str(sphsim_bin), str(scene), "-o", str(out), "--progress=json"], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
    for ln in p.stderr:
        if ln.startswith('{"progress"') and json.loads(ln)["snapshots"] >= 2:
            p.send_signal(2)  # SIGINT: finish the step, keep every snapshot
            break
    p.communicate(timeout=120)
    lines = run(sphsim_bin, "--resume", out)
    first, end = lines[0], lines[-1]
    assert first["step"] > 1000 and end["step"] == 4000  # resumed from a snapshot after step 0
    assert first["eta_s"] is None
    for ln in lines[1:-1]:
        if ln["eta_s"] is not None:
            assert ln["eta_s"] <= 3 * (end["elapsed_s"] - ln["elapsed_s"]) + 1.0
            assert ln["steps_per_s"] == pytest.approx((ln["step"] - first["step"] + 1) / ln["elapsed_s"], rel=0.05)
