"""The particle mode's granular side from the outside: a sphere rolling on the floor as the
snapshots show it (velocity, angular velocity), and scripts/granular/repose.py's heap angle on
heaps of known slope. (The comparison with LAMMPS itself is a script run, docs/contacts.md.)"""
import importlib.util
import math

import numpy as np
import pytest

from conftest import REPO


def load_repose():
    spec = importlib.util.spec_from_file_location("repose", REPO / "scripts" / "granular" / "repose.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rolling_sphere_in_the_snapshots(run_scene, reader):
    """A sphere launched sliding at 1 m/s on a floor with mu = 0.3 rolls at 5/7 of it after
    2 v0 / (7 mu g) = 0.097 s; the last snapshot (0.2 s) has v = 5/7 m/s and w_y r = v (rolling
    along +x turns it about +y), the written angular velocity in rad/s."""
    r = 0.01
    scene = {"format": 1, "dimensions": 3, "mode": "particles",
             "tank": {"min": [0, 0, 0], "max": [1, 0.1, 0.1]}, "gravity": [0, 0, -9.81],
             "spheres": {"groups": [{"count": 1, "radius": r, "velocity": [1.0, 0, 0],
                                     "region": {"min": [0.05, 0.03, 0], "max": [0.08, 0.07, 0.03]}}],
                         "friction": 0.3, "restitution": 0.2},
             "time": {"end": 0.2, "dt": 1e-4}, "output": {"interval": 0.05}}
    run = run_scene(scene, name="rolling")
    with reader.open_run(run.out) as f:
        assert "angular_velocity" in f.fields
        s = f.snapshot(-1)
        v, w = s["velocity"][0], s["angular_velocity"][0]
        assert math.isclose(v[0], 5 / 7, rel_tol=5e-3), v
        assert math.isclose(w[1] * r, v[0], rel_tol=1e-3), (w, v)
        assert abs(w[0]) < 1e-3 and abs(w[2]) < 1e-3
        first = f.snapshot(0)
        assert np.all(first["angular_velocity"] == 0)


@pytest.mark.parametrize("deg", [12.0, 25.0])
def test_heap_angle_of_a_known_ridge(deg):
    """Spheres filling a ridge of slope `deg` (a triangle in x, z, across a slot in y; the top
    sphere of every column touches the surface): the measured angle is within 0.5 degree of it."""
    repose = load_repose()
    rng = np.random.default_rng(3)
    r = 0.001
    half, crest = 0.06, 0.06 * math.tan(math.radians(deg))
    pts = []
    for x in np.arange(-half, half, 2 * r):
        top = crest * (1 - abs(x) / half)
        for y in np.arange(r, 0.01, 2 * r):
            zs = list(np.arange(r, top - r, 2 * r)) + [max(top - r, r)]
            pts += [(0.08 + x + r + rng.uniform(-1e-4, 1e-4), y, z) for z in zs]
    x = np.array(pts)
    a, prof = repose.heap_angle(x, np.full(len(x), r))
    assert abs(a - deg) < 0.5, (a, deg)


def test_poured_pile_comes_to_rest(run_scene, reader):
    """300 spheres (r = 8 mm, glass, mu = 0.3, e = 0.3, 32 passes) poured into a 10 cm box: by
    t = 2.5 s the pile rests. Between the last two snapshots (0.5 s apart) the median sphere
    moves less than 0.01 mm (0.13 % of r) and turns at below 0.01 rad/s. Resting contacts act
    through the whole drift (docs/contacts.md, "Slow contacts"). When a contact's impulse moved
    the centres only from its time of touch on, and a near one's not at all, the same pile crept
    by a median 0.3-0.5 mm per 0.5 s from t = 1 s on, turning at 0.06-0.1 rad/s. LAMMPS's
    gran/hooke/history holds such a pile still."""
    scene = {"format": 1, "dimensions": 3, "mode": "particles",
             "tank": {"min": [0, 0, 0], "max": [0.1, 0.1, 0.3]}, "gravity": [0, 0, -9.81],
             "spheres": {"groups": [{"count": 300, "radius": 0.008, "density": 2500.0, "placement": "random",
                                     "seed": 1, "region": {"min": [0, 0, 0], "max": [0.1, 0.1, 0.3]}}],
                         "restitution": 0.3, "friction": 0.3, "iterations": 32},
             "time": {"end": 3.0}, "output": {"interval": 0.5,
                                              "fields": ["position", "velocity", "angular_velocity"]}}
    run = run_scene(scene, name="pile_rest")
    with reader.open_run(run.out) as f:
        a, b = f.snapshot(-2), f.snapshot(-1)
    assert b["positions"][:, 2].max() < 0.15  # poured: every sphere has landed (released up to 0.3 m)
    move = np.linalg.norm(b["positions"] - a["positions"], axis=1)
    spin = np.linalg.norm(b["angular_velocity"], axis=1)
    assert np.median(move) < 1e-5, np.median(move)
    assert np.median(spin) < 0.01, np.median(spin)
