"""Prescribed motion of the tank and the objects (docs/scene-format.md "Motion", docs/physics.md
"Moving walls"): the walls are where the motion puts them at every snapshot, a run resumed in
the middle of a motion is bit-identical to one run through, a moving object's force gauge
measures its walls, and the sloshing of a 2D tank pushed and then held still has the first
natural frequency of linear theory (docs/validation.md, "Sloshing")."""
import json
import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import sloshing  # noqa: E402

BIN = REPO / "build" / "sphsim"

# A small 2D tank that pushes its water, turns, and then follows a table: every segment type
TABLE = "t, dx, dy, angle\n0, 0, 0, 0\n0.05, 0.004, 0.001, 1\n0.1, 0.006, 0.0, 0.5\n"
MOVING = {
    "format": 1, "name": "moving_tank", "dimensions": 2,
    "tank": {"min": [0, 0], "max": [0.4, 0.3], "motion": [
        {"type": "sine", "amplitude": [0.01, 0.002], "frequency": 4, "phase": -1.5707963267948966, "end": 0.1},
        {"type": "rotation", "amplitude": 3, "frequency": 5, "start": 0.1, "end": 0.2, "center": [0.2, 0.0]},
        {"type": "constant", "velocity": [-0.05, 0], "end": 0.25},
        {"type": "table", "file": "table.csv", "center": [0.2, 0.0]}]},
    "fluid": {"blocks": [{"min": [0, 0], "max": [0.4, 0.15]}], "spacing": 0.01,
              "density": {"type": "continuity"}},
    "time": {"end": 0.4},
    "output": {"interval": 0.02},
}


def run(*args, cwd=None, rc=0, timeout=600):
    p = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)
    assert p.returncode == rc, f"sphsim {' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr[-2000:]}"
    return p


def moving_scene(tmp_path, **over):
    (tmp_path / "table.csv").write_text(TABLE)
    sc = json.loads(json.dumps(MOVING))
    sc.update(over)
    path = tmp_path / "moving.json"
    path.write_text(json.dumps(sc))
    return path


def place(t, x0):
    """The tank's placement of rest points x0 (n, 2) at time t, in double: the segments of MOVING
    by their closed forms (each adds to where the one before left the tank)."""
    d = np.zeros(2)
    th = 0.0
    w = 2 * math.pi * 4
    ph = -math.pi / 2
    tau = min(t, 0.1)
    d += [0.01 * (math.sin(w * tau + ph) - math.sin(ph)), 0.002 * (math.sin(w * tau + ph) - math.sin(ph))]
    if t > 0.1:
        th += math.radians(3) * math.sin(2 * math.pi * 5 * (min(t, 0.2) - 0.1))
    if t > 0.2:
        d[0] += -0.05 * (min(t, 0.25) - 0.2)
    if t > 0.25:
        rows = np.array([[0, 0, 0, 0], [0.05, 0.004, 0.001, 1], [0.1, 0.006, 0.0, 0.5]])
        tau = t - 0.25
        d += [np.interp(tau, rows[:, 0], rows[:, 1]), np.interp(tau, rows[:, 0], rows[:, 2])]
        th += math.radians(np.interp(tau, rows[:, 0], rows[:, 3]))
    c = np.array([0.2, 0.0])
    R = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
    return (x0 - c) @ R.T + c + d


def test_walls_follow_the_motion(tmp_path, reader):
    """At every snapshot each wall particle is at R (x0 - c) + c + d of its rest place x0 (the
    first snapshot's), within float rounding, and no fluid left the moving tank."""
    scene = moving_scene(tmp_path)
    out = tmp_path / "m.h5"
    p = run(scene, "-o", out, "--quiet", cwd=tmp_path)
    s = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
    assert s["particles_outside"] == 0
    r = reader.open_run(str(out))
    s0 = r.snapshot(0)
    walls = s0["type"] == 1
    x0 = s0["positions"][walls][:, :2].astype(np.float64)
    worst = 0.0
    for k in range(len(r.times)):
        sk = r.snapshot(k)
        want = place(float(sk["time"]), x0)
        worst = max(worst, float(np.abs(sk["positions"][walls][:, :2] - want).max()))
    assert worst < 2e-6, f"walls off their place by {worst} m"
    # they did move: the last snapshot's walls are mm away from their rest places
    assert np.abs(r.snapshot(-1)["positions"][walls][:, :2] - x0).max() > 3e-3


def test_resume_in_the_middle_of_a_motion_is_bit_identical(tmp_path):
    """A run to 0.4 s, and a run to 0.15 s (in the middle of the turn) resumed to 0.4 s: every
    dataset of the two files is the same, bit for bit (the walls are placed from their rest places
    at each step's time, and the grid covers the same swept box whatever time.end is)."""
    scene = moving_scene(tmp_path)
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    run(scene, "-o", a, "--quiet", cwd=tmp_path)
    run(scene, "-o", b, "--quiet", "--set", "time.end=0.15", cwd=tmp_path)
    run("--resume", b, "--quiet", "--set", "time.end=0.4", cwd=tmp_path)
    data = []
    for path in (a, b):
        d = {}
        with h5py.File(path, "r") as f:
            f.visititems(lambda n, o: d.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
        data.append(d)
    assert set(data[0]) == set(data[1])
    compared = 0
    for name in data[0]:
        if name.startswith("sphsim/") and not name.startswith("sphsim/gauges"):
            continue  # provenance (scene text, resumes)
        assert np.array_equal(data[0][name], data[1][name]), f"{name} differs after the resume"
        compared += 1
    assert compared > 10


def test_moving_paddle_force_gauge(tmp_path, reader):
    """A paddle (a rectangle object) oscillating in a flume: its force gauge measures its own
    walls wherever they are: the mean horizontal force is the hydrostatic thrust rho g h^2 / 2 of
    the water on its wet side (within 15 %, the waves it makes move it about), not 0."""
    sc = {
        "format": 1, "dimensions": 2,
        "tank": {"min": [0, 0], "max": [1.0, 0.5]},
        "objects": [{"name": "paddle", "shape": "rectangle", "size": [0.06, 0.5], "center": [0.1, 0.25],
                     "motion": [{"type": "sine", "amplitude": [0.01, 0], "frequency": 1.0}]}],
        "fluid": {"blocks": [{"min": [0.13, 0], "max": [1.0, 0.2]}], "spacing": 0.01},
        "time": {"end": 1.0}, "output": {"interval": 0.1},
        "gauges": [{"name": "F", "type": "force", "object": "paddle"}],
    }
    path = tmp_path / "paddle.json"
    path.write_text(json.dumps(sc))
    out = tmp_path / "p.h5"
    run(path, "-o", out, "--quiet", cwd=tmp_path)
    g = reader.open_run(str(out)).gauges()["F"]
    fx = g.values[g.time >= 0.3, 0].mean()
    thrust = 1000 * 9.81 * 0.2 ** 2 / 2
    assert abs(-fx - thrust) < 0.15 * thrust, f"Fx = {fx} N/m, hydrostatic thrust {thrust} N/m"


def test_probe_and_height_gauges_ride_with_the_tank(tmp_path, reader):
    """A tank with 0.5 m of water rising 0.1 m (a half sine, 0.5 s): its height gauge's line and
    its pressure probe move with it, so the height stays the water's depth above the tank's floor
    (not 0.5 m plus the rise) and the probe on the floor stays in the water (finite; it read NaN
    once the floor had left it)."""
    sc = {
        "format": 1, "name": "heave", "dimensions": 2,
        "tank": {"min": [0, 0], "max": [0.5, 1.0],
                 "motion": [{"type": "sine", "amplitude": [0, 0.05], "frequency": 1.0, "phase": -math.pi / 2,
                             "end": 0.5}]},
        "fluid": {"blocks": [{"min": [0, 0], "max": [0.5, 0.5]}], "spacing": 0.02},
        "time": {"end": 0.3}, "output": {"interval": 0.1},
        "gauges": [{"name": "h", "type": "height", "point": [0.25, 0]},
                   {"name": "p", "type": "pressure", "point": [0.25, 0.0]}],
    }
    path = tmp_path / "heave.json"
    path.write_text(json.dumps(sc))
    out = tmp_path / "heave.h5"
    run(path, "-o", out, "--quiet", cwd=tmp_path)
    g = reader.open_run(str(out)).gauges()
    assert g["h"].time[-1] > 0.29
    assert np.all(np.abs(g["h"].values[:, 0] - 0.5) < 0.01), g["h"].values[:, 0].max()
    assert np.all(np.isfinite(g["p"].values[:, 0])) and g["p"].values[:, 0].min() > 1000


def test_sloshing_first_mode_frequency(tmp_path):
    """scenes/sloshing_2d.json at dx = 2.5 cm (20 particles over the depth, 1 400 in all, half a
    minute on 2 cores) to t = 6 s: the height at the left wall oscillates at f1 = sqrt(g k tanh(k
    h)) / 2 pi, k = pi / L, within 3 %. The tolerance: at this resolution the measured frequency
    is 1.3 % above theory (zero crossings; 0.4 % by the spectrum), at dx = 1.25 cm (the scene's)
    0.5 % (docs/validation.md); 3 % is twice the coarse run's error, and still catches what moving
    walls can get wrong: the same tank with h = 1.3 dx (the default, whose free surface is too
    stiff here) is 4-5 % high, and a push that left the water still would find no crossings."""
    out = tmp_path / "s.h5"
    run(REPO / "scenes" / "sloshing_2d.json", "-o", out, "--quiet", "--set", "fluid.spacing=0.025",
        "--set", "time.end=6", "--set", "output.interval=0.5")
    r = sloshing.analyse(str(out))
    assert r["crossings"] >= 4
    assert r["amplitude_m"] > 0.005  # the push set the water sloshing
    assert abs(r["error_zero_crossings"]) < 0.03, r
    assert abs(r["error_spectrum"]) < 0.03, r


def lone_sphere(tmp_path, reader, sc, axis):
    """Run scene sc (one sphere); per snapshot: time, the sphere's position and velocity along axis."""
    path, out = tmp_path / "lone.json", tmp_path / "lone.h5"
    path.write_text(json.dumps(sc))
    run(path, "-o", out, "--quiet")
    r = reader.open_run(str(out))
    for k in range(len(r.times)):
        s = r.snapshot(k)
        yield float(s["time"]), float(s["positions"][0, axis]), float(s["velocity"][0, axis])


@pytest.mark.parametrize("pusher", ["tank", "object"])
def test_moving_wall_pushes_a_sphere_with_restitution(tmp_path, reader, pusher):
    """Particle mode, no gravity: a disc at rest is met by a wall moving at V = 0.1 m/s (the tank's
    left wall, or a rectangle object), wall restitution e = 0.5. Relative to the wall it arrives
    at -V and leaves at e V: afterwards it moves at (1 + e) V, from where the wall met it."""
    tank = {"min": [0, 0], "max": [1, 0.5]}
    sc = {"format": 1, "dimensions": 2, "mode": "particles", "gravity": [0, 0], "tank": tank,
          "spheres": {"groups": [{"count": 1, "radius": 0.02, "region": {"min": [0.2, 0.2], "max": [0.3, 0.3]}}],
                      "walls": {"restitution": 0.5}},
          "time": {"end": 3.0, "dt": 0.001}, "output": {"interval": 0.1}}
    if pusher == "tank":
        tank["motion"] = [{"type": "constant", "velocity": [0.1, 0.0]}]
        meet = 2.0  # the wall at x = 0.1 t meets the disc's edge at 0.2 m
    else:
        sc["objects"] = [{"shape": "rectangle", "size": [0.04, 0.3], "center": [0.05, 0.25],
                          "motion": [{"type": "constant", "velocity": [0.1, 0.0]}]}]
        meet = 1.3  # the face at 0.07 + 0.1 t meets it at 0.2 m
    for t, x, v in lone_sphere(tmp_path, reader, sc, 0):
        if t < meet - 0.05:
            assert v == 0.0 and x == pytest.approx(0.22, abs=1e-6)
        elif t > meet + 0.05:
            assert v == pytest.approx(0.15, abs=1e-4), f"t = {t}: v = {v}"
            assert x == pytest.approx(0.22 + 0.15 * (t - meet), abs=2e-3)


def test_sphere_rides_a_rising_floor(tmp_path, reader):
    """Particle mode, gravity: a disc resting on a floor that rises at V = 0.05 m/s (the tank
    moving up; V dt = 5e-5 m, more than 2 g dt^2) rides it: once the floor has taken it along, its
    centre stays one radius above the floor (within g dt^2 = 1e-5 m) and it moves at V (less
    g dt, the kick of the drift after the contact), with no gap opening and no bounce
    (restitution 0.5)."""
    V, r, dt = 0.05, 0.02, 0.001
    sc = {"format": 1, "dimensions": 2, "mode": "particles", "gravity": [0, -9.81],
          "tank": {"min": [0, 0], "max": [1, 0.5], "motion": [{"type": "constant", "velocity": [0.0, V]}]},
          "spheres": {"groups": [{"count": 1, "radius": r, "region": {"min": [0.4, 0.0], "max": [0.5, 0.1]}}],
                      "walls": {"restitution": 0.5}},
          "time": {"end": 1.0, "dt": dt}, "output": {"interval": 0.05}}
    for t, y, v in lone_sphere(tmp_path, reader, sc, 1):
        if t < 0.2:
            continue
        assert y - (V * t + r) == pytest.approx(0.0, abs=1.5e-5), f"t = {t}: gap {y - (V * t + r)} m"
        # the stored velocity is the step's end: the floor's, plus gravity's kick of the drift
        assert v == pytest.approx(V - 9.81 * dt, abs=1e-4), f"t = {t}: v = {v}"


def test_rotating_drum_drags_the_bed_up_its_rising_side(tmp_path, reader):
    """scenes/spheres_drum_2d.json: a circular container turning clockwise at 36 degrees a second
    (a two-row motion table) with 200 discs (mu = 0.5) in its lower part. Friction with the wall
    carries the bed up the side the wall rises on (-x) until it avalanches back: the bed's centre
    of mass stays on that side and its surface tilts (15-21 degrees between avalanches in 3 s),
    and no disc leaves the drum. At rest the bed's centre is at x = 0.245 m and its surface flat."""
    out = tmp_path / "drum.h5"
    p = run(REPO / "scenes" / "spheres_drum_2d.json", "-o", out, "--set", "time.end=2", "--quiet")
    assert json.loads(p.stdout)["particles_outside"] == 0
    c, R = np.array([0.25, 0.25]), 0.2
    cx, slopes = [], []
    with reader.open_run(out) as r:
        for k in range(len(r)):
            s = r.snapshot(k)
            x, rad = s["positions"][:, :2], s["radius"]
            # inside the drum, overlapping its wall by at most 1 % of a radius
            assert np.all(np.linalg.norm(x - c, axis=1) + rad <= R + 0.01 * rad.max())
            if s["time"] < 0.5:
                continue
            cx.append(x[:, 0].mean())
            edges = np.linspace(0.12, 0.38, 8)
            mid, top = [], []
            for a, b in zip(edges[:-1], edges[1:]):
                m = (x[:, 0] >= a) & (x[:, 0] < b)
                if m.sum() > 3:
                    mid.append(0.5 * (a + b))
                    top.append(x[m, 1].max())
            slopes.append(math.degrees(math.atan(-np.polyfit(mid, top, 1)[0])))
    assert np.mean(cx) < 0.235, f"bed centre x {np.mean(cx):.4f} m: not dragged up the rising side"
    assert max(slopes) > 10.0, f"the bed's surface tilted at most {max(slopes):.1f} degrees"


def test_drum_3d_turns_its_bed_within_its_caps(tmp_path, reader):
    """scenes/spheres_drum_3d.json: a cylinder container lying along y (r = 0.12 m, 0.08 m long,
    closed by flat caps) turning at 36 degrees a second about its axis, 1000 spheres (r = 5 mm,
    mu = 0.5) in its lower part. A sphere in the edge between a cap and the curved wall touches
    both, each a contact of its own (docs/contacts.md, "Concave edges"), while both move. Over
    0.6 s no sphere leaves the drum or enters its wall or a cap by more than 10 % of its radius
    (a sphere drifting into a wall at up to 1 m/s overlaps it by up to v dt = 0.5 mm before the
    next step puts it back), and friction with the rising wall (-x) drags the bed's centre of
    mass that way."""
    out = tmp_path / "drum3d.h5"
    p = run(REPO / "scenes" / "spheres_drum_3d.json", "-o", out, "--set", "time.end=0.6", "--quiet")
    assert json.loads(p.stdout)["particles_outside"] == 0
    c, R, half = np.array([0.15, 0.05, 0.15]), 0.12, 0.04
    with reader.open_run(out) as f:
        assert len(f) == 7
        for k in range(len(f)):
            s = f.snapshot(k)
            x, rad = s["positions"] - c, 0.005
            assert np.all(np.hypot(x[:, 0], x[:, 2]) + rad <= R + 0.1 * rad), f"t = {s['time']}: through the wall"
            assert np.all(np.abs(x[:, 1]) + rad <= half + 0.1 * rad), f"t = {s['time']}: through a cap"
            if s["time"] >= 0.5:
                assert x[:, 0].mean() < -0.01, f"t = {s['time']}: bed centre x {x[:, 0].mean():+.4f} m"
