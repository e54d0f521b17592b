"""Scenes with solid objects from the outside: no fluid particle ever inside an obstacle
(2D and 3D dam breaks onto obstacles, every snapshot), and spheres bouncing off a sphere and a
cylinder obstacle with the walls' restitution."""
import json
import math

import numpy as np
import pytest

from conftest import REPO


def sdf_box(x, center, size, degrees=0.0):
    """Signed distance to a box turned by `degrees` about z (rows of x: points)."""
    a = math.radians(degrees)
    d = x - np.asarray(center, dtype=float)
    c, s = math.cos(a), math.sin(a)
    y = np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1], d[:, 2]], axis=1)
    q = np.abs(y) - np.asarray(size, dtype=float) / 2
    return np.linalg.norm(np.maximum(q, 0), axis=1) + np.minimum(q.max(axis=1), 0)


def sdf_sphere(x, center, r):
    return np.linalg.norm(x - np.asarray(center, dtype=float), axis=1) - r


def fluid_positions(reader, path):
    with reader.open_run(path) as f:
        for k in range(len(f)):
            s = f.snapshot(k)
            yield s["positions"][s["type"] == 0]


def test_no_leak_2d_cylinder(run_scene, reader):
    """The shipped 2D dam break onto a cylinder (circle of radius 0.08 m at (0.9, 0.1)), at
    its own spacing until the flow has hit the cylinder and run up the far wall."""
    scene = json.loads((REPO / "scenes" / "dam_break_cylinder_2d.json").read_text())
    scene["time"]["end"] = 0.8
    scene["output"]["interval"] = 0.02
    run = run_scene(scene, name="cyl2d")
    assert run.summary["particles_outside"] == 0
    worst, hit = math.inf, False
    for x in fluid_positions(reader, run.out):
        x3 = np.c_[x[:, :2], np.zeros(len(x))]
        phi = sdf_sphere(x3, [0.9, 0.1, 0.0], 0.08)
        worst = min(worst, phi.min())
        hit |= bool((phi < 0.03).any())
    assert hit, "the flow never reached the cylinder"
    assert worst > 0.0, worst
    # scripts/check_leaks.py finds the same
    import importlib.util
    spec = importlib.util.spec_from_file_location("check_leaks", REPO / "scripts" / "check_leaks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main([str(run.out)]) == 0


def test_no_leak_3d_obstacles(run_scene, reader):
    """A small 3D dam break onto a box turned 30 degrees about z and a sphere: no fluid
    particle inside either at any snapshot."""
    box = {"center": [0.25, 0.1, 0.05], "size": [0.08, 0.1, 0.1]}
    sph = {"center": [0.4, 0.1, 0.0], "radius": 0.06}
    scene = {"format": 1, "dimensions": 3,
             "tank": {"min": [0, 0, 0], "max": [0.8, 0.2, 0.6]},
             "objects": [
                 {"name": "box", "shape": "box", "center": [0, 0, 0], "size": box["size"],
                  "transform": {"rotate": {"axis": [0, 0, 1], "degrees": 30}, "translate": box["center"]}},
                 {"name": "ball", "shape": "sphere", "center": sph["center"], "radius": sph["radius"]}],
             "fluid": {"blocks": [{"min": [0.55, 0, 0], "max": [0.8, 0.2, 0.3]}], "spacing": 0.02},
             "time": {"end": 0.5}, "output": {"interval": 0.025}}
    run = run_scene(scene, name="obs3d")
    assert run.summary["particles_outside"] == 0
    worst_box = worst_sph = math.inf
    for x in fluid_positions(reader, run.out):
        worst_box = min(worst_box, sdf_box(x, box["center"], box["size"], 30.0).min())
        worst_sph = min(worst_sph, sdf_sphere(x, sph["center"], sph["radius"]).min())
    assert 0.0 < worst_box < 0.02, worst_box  # reached, never entered
    assert 0.0 < worst_sph < 0.02, worst_sph


def bounce(run_scene, reader, obj, e, name):
    """One sphere (r = 0.02 m) moving down at 1 m/s without gravity onto `obj` below it: the
    vertical velocity after the impact is e m/s."""
    scene = {"format": 1, "dimensions": 3, "mode": "particles", "gravity": [0, 0, 0],
             "tank": {"min": [0, 0, 0], "max": [1, 1, 1]}, "objects": [obj],
             "spheres": {"groups": [{"count": 1, "radius": 0.02, "velocity": [0, 0, -1.0],
                                     "region": {"min": [0.48, 0.48, 0.58], "max": [0.52, 0.52, 0.62]}}],
                         "restitution": 0.9, "walls": {"restitution": e}, "friction": 0.0},
             "time": {"end": 0.3, "dt": 1e-4}, "output": {"interval": 0.01}}
    run = run_scene(scene, name=name)
    with reader.open_run(run.out) as f:
        first, last = f.snapshot(0), f.snapshot(-1)
    assert math.isclose(first["velocity"][0][2], -1.0, abs_tol=1e-6)
    v = last["velocity"][0]
    assert abs(v[2] - e) < 1e-3, v
    assert abs(v[0]) < 1e-6 and abs(v[1]) < 1e-6, v
    assert last["positions"][0][2] > 0.43  # the contact at 0.42 m, then up at e m/s


def test_bounce_on_sphere_obstacle(run_scene, reader):
    bounce(run_scene, reader, {"shape": "sphere", "center": [0.5, 0.5, 0.3], "radius": 0.1}, 0.6, "bounce_sphere")


def test_bounce_on_cylinder_obstacle(run_scene, reader):
    """A cylinder lying along x (its axis turned from z by 90 degrees about y)."""
    obj = {"shape": "cylinder", "radius": 0.1, "length": 0.8,
           "transform": {"rotate": {"axis": [0, 1, 0], "degrees": 90}, "translate": [0.5, 0.5, 0.3]}}
    bounce(run_scene, reader, obj, 0.4, "bounce_cylinder")


EDGE_CASES = {
    # a cylinder container (radius 0.08 m, its floor at z = 0.01 m), the sphere 0.1 mm from the
    # floor and the side, at the side's +x end
    "cylinder_3d": ({"format": 1, "dimensions": 3, "tank": {"min": [-0.1, -0.1, 0.0], "max": [0.1, 0.1, 0.3]},
                     "gravity": [5.0, 0.0, -9.81],
                     "objects": [{"shape": "cylinder", "role": "container", "radius": 0.08, "length": 0.28,
                                  "center": [0, 0, 0.15]}],
                     "region": {"min": [0.0639, -0.008, 0.0101], "max": [0.0799, 0.008, 0.0261]}},
                    lambda x: (0.08 - math.hypot(x[0], x[1]), x[2] - 0.01)),
    # a box container (x and y within +-0.08 m, its floor at z = 0.01 m): a corner where three
    # of its faces meet, the gravity tilted towards it
    "box_corner_3d": ({"format": 1, "dimensions": 3, "tank": {"min": [-0.1, -0.1, 0.0], "max": [0.1, 0.1, 0.3]},
                       "gravity": [5.0, 4.0, -9.81],
                       "objects": [{"shape": "box", "role": "container", "size": [0.16, 0.16, 0.28],
                                    "center": [0, 0, 0.15]}],
                       "region": {"min": [0.0639, 0.0639, 0.0101], "max": [0.0799, 0.0799, 0.0261]}},
                      lambda x: (0.08 - x[0], 0.08 - x[1], x[2] - 0.01)),
    # a rectangular polygon container (x within +-0.15 m, its floor at y = 0.02 m), a corner
    "polygon_2d": ({"format": 1, "dimensions": 2, "tank": {"min": [-0.2, 0.0], "max": [0.2, 0.3]},
                    "gravity": [5.0, -9.81],
                    "objects": [{"shape": "polygon", "role": "container",
                                 "points": [[-0.15, 0.02], [0.15, 0.02], [0.15, 0.25], [-0.15, 0.25]]}],
                    "region": {"min": [0.1339, 0.0201], "max": [0.1499, 0.0361]}},
                   lambda x: (0.15 - x[0], x[1] - 0.02)),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_sphere_rests_in_a_containers_edge(run_scene, reader, case):
    """A sphere (r = 8 mm) pressed into the edge between a container's floor and its side
    (gravity tilted towards the side), or into a box container's corner, touches two or three of
    its surfaces: the contact list holds the object's second and third surfaces too
    (docs/contacts.md, "Concave edges"). It comes to rest there without turning and enters no
    surface by more than 0.5 % of r. With the nearest surface alone it turned at 0.63 rad/s (the
    cylinder), 0.27-0.55 rad/s (the polygon's corner) and 0.36-0.8 rad/s (the box's corner; with
    two surfaces 0.22-0.33) in place."""
    base, distances = EDGE_CASES[case]
    r = 0.008
    scene = {k: v for k, v in base.items() if k != "region"}
    scene.update({"mode": "particles",
                  "spheres": {"groups": [{"count": 1, "radius": r, "density": 2500.0, "placement": "lattice",
                                          "region": base["region"]}],
                              "restitution": 0.3, "friction": 0.3, "iterations": 8},
                  "time": {"end": 0.6, "cfl": 0.25},
                  "output": {"interval": 0.1, "fields": ["position", "velocity", "angular_velocity"]}})
    run = run_scene(scene, name="edge_" + case)
    with reader.open_run(run.out) as f:
        snaps = [f.snapshot(k) for k in range(len(f))]
    assert len(snaps) == 7
    gaps0 = np.asarray(distances(np.asarray(snaps[0]["positions"][0]))) - r
    assert np.allclose(gaps0, 1e-4, atol=1e-6), gaps0  # placed 0.1 mm from each surface
    for s in snaps[1:]:
        x, w = np.asarray(s["positions"][0]), np.asarray(s["angular_velocity"][0])
        gaps = np.asarray(distances(x)) - r
        assert np.all((-0.005 * r < gaps) & (gaps < 1e-6)), gaps
        assert np.linalg.norm(w) < 1e-3, w
        assert np.linalg.norm(x - np.asarray(snaps[1]["positions"][0])) < 1e-6  # at rest


def test_mesh_obstacle_no_leak_and_geometry_written(run_scene, reader, tmp_path):
    """A dam break onto the pillar mesh (binary STL from scripts/make_meshes.py, scaled by 0.5:
    r = 5 cm, 20 cm high, 48 sides): no fluid particle inside it at any snapshot; the output's
    /sphsim/geometry holds its triangles and the object of every object boundary particle."""
    import subprocess
    import sys
    import h5py
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_meshes.py"), str(tmp_path)], check=True)
    scene = {"format": 1, "dimensions": 3,
             "tank": {"min": [0, 0, 0], "max": [0.6, 0.3, 0.6]},
             "objects": [{"name": "pillar", "shape": "mesh", "file": str(tmp_path / "pillar.stl"),
                          "transform": {"scale": 0.5, "translate": [0.25, 0.15, 0]}}],
             "fluid": {"blocks": [{"min": [0.4, 0, 0], "max": [0.6, 0.3, 0.3]}], "spacing": 0.02},
             "time": {"end": 0.35}, "output": {"interval": 0.025}}
    run = run_scene(scene, name="pillar")
    assert run.summary["particles_outside"] == 0
    r_in = 0.05 * math.cos(math.pi / 48)  # the polygon's inscribed radius
    worst = math.inf
    for x in fluid_positions(reader, run.out):
        rr = np.hypot(x[:, 0] - 0.25, x[:, 1] - 0.15) - r_in
        dz = x[:, 2] - 0.2
        d = np.where((rr > 0) | (dz > 0), np.hypot(np.maximum(rr, 0), np.maximum(dz, 0)), np.maximum(rr, dz))
        worst = min(worst, d.min())
    assert 0.0 < worst < 0.02, worst
    with h5py.File(run.out, "r") as f:
        g = f["sphsim/geometry"]
        assert g.attrs["n_objects"] == 1
        o = g["0"]
        assert o.attrs["name"] == "pillar" and o.attrs["shape"] == "mesh"
        pts, tri = o["points"][()], o["triangles"][()]
        assert tri.shape == (4 * 48, 3) and pts.shape == (2 * 48 + 2, 3)
        assert abs(pts[:, 2].max() - 0.2) < 1e-6 and abs(np.hypot(pts[:, 0] - 0.25, pts[:, 1] - 0.15).max() - 0.05) < 1e-6
        first = int(g.attrs["first_object_boundary_id"])
        obj = g["boundary_object"][()][:, 0]
        counts = f["sphsim"].attrs["particle_counts"]
        assert first + len(obj) == counts[0] + counts[1]
        assert (obj == 0).all()


def test_no_leak_2d_circle_container(run_scene, reader):
    """A 2D dam break inside a circular container (a circle of radius 0.3 m with role
    "container" in a 0.7 m box): no fluid particle outside the circle at any snapshot; the
    flow reaches the far side."""
    scene = {"format": 1, "dimensions": 2,
             "tank": {"min": [-0.35, -0.35], "max": [0.35, 0.35]},
             "objects": [{"name": "drum", "shape": "circle", "role": "container", "radius": 0.3}],
             "fluid": {"blocks": [{"min": [-0.3, -0.3], "max": [0.0, 0.0]}], "spacing": 0.01},
             "time": {"end": 0.6}, "output": {"interval": 0.02}}
    run = run_scene(scene, name="drum2d")
    assert run.summary["particles_outside"] == 0
    worst, reach = math.inf, -math.inf
    for x in fluid_positions(reader, run.out):
        phi = 0.3 - np.hypot(x[:, 0], x[:, 1])  # positive inside the container
        worst = min(worst, phi.min())
        reach = max(reach, x[:, 0].max())
    assert 0.0 < worst < 0.01, worst
    assert reach > 0.15, reach


def test_resume_with_objects_is_bit_identical(tmp_path):
    """--resume rebuilds the objects from the stored scene (a mesh from its file, whose hash the
    resolved scene holds): a run with a mesh obstacle and a circle, stopped and resumed, equals
    the uninterrupted run to the bit, in SPH (3D) and in particle mode (2D)."""
    import subprocess
    import sys
    from test_reliability import SPHERES, assert_same_files, sphsim, stop_midway
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_meshes.py"), str(tmp_path / "meshes")], check=True)
    sph = {"format": 1, "dimensions": 3, "tank": {"min": [0, 0, 0], "max": [0.4, 0.2, 0.3]},
           "objects": [{"shape": "mesh", "file": "meshes/ball.obj",
                        "transform": {"scale": 0.6, "translate": [0.25, 0.1, 0.0]}}],
           "fluid": {"blocks": [{"min": [0, 0, 0], "max": [0.12, 0.2, 0.2]}], "spacing": 0.02},
           "time": {"end": 0.12}, "output": {"interval": 0.004}}
    spheres = dict(SPHERES, objects=[{"shape": "circle", "center": [0.5, 0.3], "radius": 0.1}])
    for name, sc in (("sph", sph), ("spheres", spheres)):
        scene = tmp_path / f"{name}.json"
        scene.write_text(json.dumps(sc))
        a, b = tmp_path / f"{name}A.h5", tmp_path / f"{name}B.h5"
        sphsim(scene, "-o", a, "--quiet", check_rc=0)
        stop_midway(scene, b, grids=5)
        sphsim("--resume", b, "--quiet", check_rc=0)
        assert_same_files(a, b)


def test_hydrostatic_around_an_obstacle(run_scene, reader):
    """Fluid at rest in a 0.3 m wide tank, 0.2 m deep, around a square obstacle (6 cm, on the
    floor in the middle) and a circle (r = 3 cm, at mid-depth beside it): after 0.4 s the
    pressure of the fluid within 3 spacings of the obstacles, averaged per 2 cm band of height
    over the rest of the run, is rho0 g (H - y) within 5 % of rho0 g H."""
    H, dx = 0.2, 0.01
    scene = {"format": 1, "dimensions": 2,
             "tank": {"min": [0, 0], "max": [0.3, 0.3]},
             "objects": [{"shape": "rectangle", "center": [0.1, 0.03], "size": [0.06, 0.06]},
                         {"shape": "circle", "center": [0.22, 0.1], "radius": 0.03}],
             "fluid": {"blocks": [{"min": [0, 0], "max": [0.3, H]}], "spacing": dx,
                       "viscosity": {"type": "artificial", "alpha": 0.1}},
             "time": {"end": 1.0}, "output": {"interval": 0.01}}
    run = run_scene(scene, name="hydrostatic_obstacle")
    assert run.summary["particles_outside"] == 0
    edges = np.arange(0.0, H + 1e-9, 2 * dx)
    centres = 0.5 * (edges[1:] + edges[:-1])
    sums, counts, hit = np.zeros(len(centres)), np.zeros(len(centres)), 0
    with reader.open_run(run.out) as f:
        for k in range(len(f)):
            s = f.snapshot(k)
            if s["time"] < 0.4:
                continue
            fl = s["type"] == 0
            x = np.c_[s["positions"][fl][:, :2], np.zeros(fl.sum())]
            near = (sdf_box(x, [0.1, 0.03, 0], [0.06, 0.06, 1.0]) < 3 * dx) | \
                   (sdf_sphere(x, [0.22, 0.1, 0], 0.03) < 3 * dx)
            y, p = x[near, 1], s["pressure"][fl][near]
            idx = np.digitize(y, edges) - 1
            ok = (idx >= 0) & (idx < len(centres))
            np.add.at(sums, idx[ok], p[ok])
            np.add.at(counts, idx[ok], 1)
            hit += int(near.sum())
    assert hit > 0
    have = counts > 0
    prof = sums[have] / counts[have]
    expect = 1000.0 * 9.81 * (H - centres[have])
    err = np.abs(prof - expect) / (1000.0 * 9.81 * H)
    print("\n  y (m)   p (Pa)   rho0 g (H - y)   error / (rho0 g H), near the obstacles")
    for yc, pv, ev, er in zip(centres[have], prof, expect, err):
        print(f"  {yc:.3f} {pv:8.1f} {ev:10.1f}   {100 * er:5.2f} %")
    assert err.max() < 0.05, err.max()


def test_no_leak_2d_wedge_polygon(run_scene):
    """The shipped 2D dam break onto a wedge (a triangle given as a polygon) and, beside it, a
    concave polygon turned by 20 degrees: scripts/check_leaks.py finds no fluid particle
    inside either at any snapshot."""
    import importlib.util
    scene = json.loads((REPO / "scenes" / "dam_break_wedge_2d.json").read_text())
    scene["objects"].append({"name": "step", "shape": "polygon",
                             "points": [[0, 0], [0.1, 0], [0.1, 0.06], [0.05, 0.02], [0, 0.06]],
                             "transform": {"rotate": {"degrees": 20}, "translate": [0.55, 0.0]}})
    scene["time"]["end"] = 0.7
    run = run_scene(scene, name="wedge2d")
    assert run.summary["particles_outside"] == 0
    spec = importlib.util.spec_from_file_location("check_leaks", REPO / "scripts" / "check_leaks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main([str(run.out)]) == 0


def test_tank_force_gauge_leaves_out_the_objects(run_scene, reader):
    """The tank's force gauge sums the tank's walls alone, whether or not an object has its own
    gauge: the same rows with and without the block's gauge beside it."""
    scene = {
        "format": 1, "name": "tank_only", "dimensions": 2,
        "tank": {"min": [0.0, 0.0], "max": [0.5, 0.8]},
        "fluid": {"blocks": [{"min": [0.0, 0.0], "max": [0.5, 0.5]}], "spacing": 0.02},
        "objects": [{"name": "block", "shape": "rectangle", "center": [0.25, 0.25], "size": [0.1, 0.1]}],
        "time": {"end": 0.01}, "output": {"interval": 0.01},
        "gauges": [{"name": "F_tank", "type": "force"}],
    }
    alone = run_scene(scene, name="tank_alone")
    scene["gauges"].append({"name": "F_block", "type": "force", "object": "block"})
    beside = run_scene(scene, name="tank_beside")
    import h5py
    with h5py.File(alone.out, "r") as a, h5py.File(beside.out, "r") as b:
        ta, tb, blk = a["sphsim/gauges/F_tank"][()], b["sphsim/gauges/F_tank"][()], b["sphsim/gauges/F_block"][()]
    assert ta.shape == tb.shape and ta.shape[0] > 10
    assert np.abs(blk[:, 2]).max() > 10  # N/m: the block holds water
    assert np.array_equal(ta, tb)


def test_force_gauge_on_an_obstacle_is_the_buoyancy(run_scene, reader):
    """A force gauge on an obstacle sums its own boundary particles only: a 0.1 m square held
    in the middle of 0.5 m of water at rest feels its buoyancy, rho0 g A = 98.1 N/m upward
    (within 15 % averaged over 0.2-0.6 s, the tank's settling waves aside), no sideways force
    and no moment about its centre, while the tank's walls carry the rest of the water's weight.
    The boundary particles' static `object` field marks the block's, in h5py, VTK and the reader."""
    scene = {
        "format": 1, "name": "buoyancy", "dimensions": 2,
        "tank": {"min": [0.0, 0.0], "max": [0.5, 0.8]},
        "fluid": {"blocks": [{"min": [0.0, 0.0], "max": [0.5, 0.5]}], "spacing": 0.01},
        "objects": [{"name": "block", "shape": "rectangle", "center": [0.25, 0.25], "size": [0.1, 0.1]}],
        "time": {"end": 0.6}, "output": {"interval": 0.1},
        "gauges": [{"name": "F_block", "type": "force", "object": "block", "point": [0.25, 0.25]},
                   {"name": "F_tank", "type": "force"}],
    }
    run = run_scene(scene, name="buoyancy")
    import h5py
    with h5py.File(run.out, "r") as f:
        blk, tank = f["sphsim/gauges/F_block"][()], f["sphsim/gauges/F_tank"][()]
        # the static object field: 0 for the block's boundary particles, -1 for the rest, stored
        # once and read by every step at offset 0
        obj = f["VTKHDF/PointData/object"][()]
        assert obj.shape == (f["VTKHDF/NumberOfPoints"][0],)
        assert np.all(f["VTKHDF/Steps/PointDataOffsets/object"][()] == 0)
        assert int((obj == 0).sum()) == f["sphsim/geometry/boundary_object"].shape[0] > 0
        assert set(np.unique(obj)) == {-1, 0}
    late = blk[:, 0] >= 0.2
    fx, fy, mz = blk[late, 1:].mean(axis=0)
    buoyancy = 1000.0 * 9.81 * 0.1 * 0.1
    water = 1000.0 * 9.81 * (0.5 * 0.5 - 0.1 * 0.1)
    assert abs(fy - buoyancy) < 0.15 * buoyancy, fy
    assert abs(fx) < 0.05 * buoyancy and abs(mz) < 0.05 * buoyancy * 0.1, (fx, mz)
    # the walls and the block together hold the water's weight
    total = tank[late, 2].mean() + fy
    assert abs(total + water) < 0.05 * water, total
    # the same field through VTK's reader at the last step, and through sphsim_reader
    from vtkmodules.vtkIOHDF import vtkHDFReader
    rd = vtkHDFReader()
    rd.SetFileName(str(run.out))
    rd.UpdateInformation()
    rd.SetStep(rd.GetNumberOfSteps() - 1)
    rd.Update()
    arr = rd.GetOutput().GetPointData().GetArray("object")
    assert arr is not None and arr.GetNumberOfTuples() == obj.size
    assert sorted({int(arr.GetValue(i)) for i in range(arr.GetNumberOfTuples())}) == [-1, 0]
    with reader.open_run(run.out) as r:
        snap = r.snapshot(-1)
        assert np.array_equal(snap["object"][snap["id"].argsort()], obj)


PV_OBJECTS_CHECK = r'''
import json, sys
from paraview.simple import XDMFReader, servermanager
r = XDMFReader(FileNames=[sys.argv[2]])
r.UpdatePipelineInformation()
r.UpdatePipeline(r.TimestepValues[-1])
d = servermanager.Fetch(r)
blocks = []
for i in range(d.GetNumberOfBlocks()):
    b = d.GetBlock(i)
    blocks.append({"name": d.GetMetaData(i).Get(d.NAME()), "points": b.GetNumberOfPoints(),
                   "cells": b.GetNumberOfCells(),
                   "object": b.GetPointData().GetArray("object") is not None})
json.dump({"times": len(r.TimestepValues), "blocks": blocks}, open(sys.argv[1], "w"))
'''


def test_paraview_511_shows_the_objects(run_scene, pvpython, tmp_path):
    """ParaView 5.11's XDMF reader (the sidecar) shows the particles, with their static `object`
    field, and every object's surface as a triangle grid beside them (/sphsim/geometry)."""
    scene = {
        "format": 1, "name": "pv_objects", "dimensions": 3, "gravity": [0, 0, -9.81],
        "tank": {"min": [0, 0, 0], "max": [0.4, 0.2, 0.3]},
        "fluid": {"blocks": [{"min": [0, 0, 0], "max": [0.15, 0.2, 0.2]}], "spacing": 0.02},
        "objects": [{"name": "pillar", "shape": "cylinder", "center": [0.3, 0.1, 0.1], "radius": 0.03,
                     "length": 0.2},
                    {"name": "ball", "shape": "sphere", "center": [0.22, 0.1, 0.05], "radius": 0.03}],
        "time": {"end": 0.01}, "output": {"interval": 0.005},
    }
    run = run_scene(scene, name="pv_objects")
    script = tmp_path / "pv_objects.py"
    script.write_text(PV_OBJECTS_CHECK)
    result = tmp_path / "pv_objects.json"
    proc = pvpython(script, result, run.out.with_suffix(".xmf"), cwd=tmp_path)
    assert result.exists(), f"pvpython failed ({proc.returncode}): {proc.stderr[-2000:]}"
    got = json.loads(result.read_text())
    assert got["times"] == 3
    names = [b["name"] for b in got["blocks"]]
    assert names == ["particles", "pillar", "ball"], names
    assert got["blocks"][0]["object"]
    import h5py
    with h5py.File(run.out, "r") as f:
        for k, b in enumerate(got["blocks"][1:]):
            assert b["points"] == f[f"sphsim/geometry/{k}/points"].shape[0]
            assert b["cells"] == f[f"sphsim/geometry/{k}/triangles"].shape[0] > 0


def test_polygon_from_a_file(sphsim_bin, tmp_path):
    """A 2D polygon's points from a text file beside the scene ("points": "wedge.txt": x y a line,
    commas and '#' comments allowed) give the run of the same points given inline, to the bit; a
    missing file, a bad line and too few points are refused naming the JSON path and the file."""
    import subprocess
    import h5py
    pts = [[0.9, 0.0], [1.2, 0.0], [1.2, 0.15]]
    base = {
        "format": 1, "name": "wedge", "dimensions": 2,
        "tank": {"min": [0, 0], "max": [1.5, 0.6]},
        "fluid": {"blocks": [{"min": [0, 0], "max": [0.3, 0.4]}], "spacing": 0.02},
        "time": {"end": 0.02}, "output": {"interval": 0.01},
    }
    outs = []
    for tag, points in (("inline", pts), ("file", "wedge.txt")):
        d = tmp_path / tag
        d.mkdir()
        (d / "wedge.txt").write_text("# x y (m)\n0.9 0.0\n1.2, 0.0\n\n1.2 0.15  # the tip\n")
        sc = dict(base, objects=[{"name": "wedge", "shape": "polygon", "points": points}])
        (d / "s.json").write_text(json.dumps(sc))
        p = subprocess.run([str(sphsim_bin), str(d / "s.json"), "-o", str(d / "o.h5"), "--quiet"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        outs.append(d / "o.h5")
    with h5py.File(outs[0], "r") as a, h5py.File(outs[1], "r") as b:
        for name in ("VTKHDF/Points", "VTKHDF/PointData/velocity", "sphsim/geometry/0/points"):
            assert np.array_equal(a[name][()], b[name][()]), name
    bad = {"missing.txt": None, "bad.txt": "0 0\n1 x\n1 1\n", "two.txt": "0 0\n1 0\n"}
    want = {"missing.txt": "cannot open", "bad.txt": "line 2: expected a point", "two.txt": "holds 2 points"}
    for fname, text in bad.items():
        d = tmp_path / ("bad_" + fname.split(".")[0])
        d.mkdir()
        if text is not None:
            (d / fname).write_text(text)
        sc = dict(base, objects=[{"name": "w", "shape": "polygon", "points": fname}])
        (d / "s.json").write_text(json.dumps(sc))
        p = subprocess.run([str(sphsim_bin), str(d / "s.json"), "--check"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 3, (fname, p.returncode, p.stderr)
        assert "objects[0].points:" in p.stderr and want[fname] in p.stderr, p.stderr


def test_region_fill_hydrostatic_start_and_rest(run_scene, reader):
    """A tank filled by a region, {"fill": "container", "below": 0.3}, around a rectangle standing
    on the floor and a circle at mid-depth: the hydrostatic start squeezes the runs resting on
    the solids as those on the floor, so that the first snapshot's pressure is rho0 g (H - y)
    within 5 % of rho0 g H on top of the obstacles and beside them (below the top 3.5 spacings,
    away from the side walls, as test_hydrostatic_init); after 0.4 s at rest the pressure near
    the obstacles, averaged per 2 cm band, is still within 5 %, with no particle in a solid."""
    H, dx = 0.3, 0.01
    scene = {"format": 1, "dimensions": 2,
             "tank": {"min": [0, 0], "max": [0.4, 0.5]},
             "objects": [{"shape": "rectangle", "center": [0.2, 0.075], "size": [0.1, 0.15]},
                         {"shape": "circle", "center": [0.3, 0.2], "radius": 0.03}],
             "fluid": {"regions": [{"fill": "container", "below": H}], "spacing": dx,
                       "viscosity": {"type": "artificial", "alpha": 0.1}},
             "time": {"end": 0.6}, "output": {"interval": 0.02}}
    run = run_scene(scene, name="region_hydrostatic")
    assert run.summary["particles_outside"] == 0
    rg = 1000.0 * 9.81
    with reader.open_run(run.out) as f:
        s = f.snapshot(0)
        fl = s["type"] == 0
        x, p = s["positions"][fl][:, :2], s["pressure"][fl]
        assert fl.sum() == f.resolved["derived"]["n_fluid"]
        assert np.all(x[:, 1] < H)
        # half a spacing from the solids, less the squeeze of the runs on them (about 1 % of dx)
        xs = np.c_[x, np.zeros(len(x))]
        assert np.all(sdf_box(xs, [0.2, 0.075, 0], [0.1, 0.15, 1.0]) >= 0.49 * dx)
        assert np.all(sdf_sphere(xs, [0.3, 0.2, 0], 0.03) >= 0.49 * dx)
        inner = (x[:, 1] < H - 3.5 * dx) & (np.minimum(x[:, 0], 0.4 - x[:, 0]) > 3 * dx)
        for name, sel in [("on the rectangle", (np.abs(x[:, 0] - 0.2) < 0.04) & (x[:, 1] > 0.15)),
                          ("on the circle", (np.abs(x[:, 0] - 0.3) < 0.01) & (x[:, 1] > 0.23)),
                          ("beside them", x[:, 0] < 0.12)]:
            m = sel & inner
            assert m.sum() > 0
            err = np.abs(p[m] - rg * (H - x[m, 1])) / (rg * H)
            print(f"\n  t = 0, {name}: {m.sum()} particles, largest |p - rho0 g (H - y)| / rho0 g H = "
                  f"{100 * err.max():.2f} %")
            assert err.max() < 0.05, (name, err.max())
        edges = np.arange(0.0, H + 1e-9, 2 * dx)
        centres = 0.5 * (edges[1:] + edges[:-1])
        sums, counts = np.zeros(len(centres)), np.zeros(len(centres))
        for k in range(len(f)):
            s = f.snapshot(k)
            fl = s["type"] == 0
            xs = np.c_[s["positions"][fl][:, :2], np.zeros(fl.sum())]
            assert np.all(sdf_box(xs, [0.2, 0.075, 0], [0.1, 0.15, 1.0]) > 0)
            assert np.all(sdf_sphere(xs, [0.3, 0.2, 0], 0.03) > 0)
            if s["time"] < 0.4:
                continue
            near = (sdf_box(xs, [0.2, 0.075, 0], [0.1, 0.15, 1.0]) < 3 * dx) | \
                   (sdf_sphere(xs, [0.3, 0.2, 0], 0.03) < 3 * dx)
            idx = np.digitize(xs[near, 1], edges) - 1
            ok = (idx >= 0) & (idx < len(centres))
            np.add.at(sums, idx[ok], s["pressure"][fl][near][ok])
            np.add.at(counts, idx[ok], 1)
    have = counts > 0
    err = np.abs(sums[have] / counts[have] - rg * (H - centres[have])) / (rg * H)
    print(f"  t >= 0.4 s near the obstacles: largest error {100 * err.max():.2f} % of rho0 g H")
    assert err.max() < 0.05, err.max()
