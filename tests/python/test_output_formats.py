"""End-to-end tests of sphsim's output files (docs/output-format.md): runs of the command line on
small scenes, read with h5py (layout, step bookkeeping, provenance, physics recomputed from the
file), with VTK's vtkHDFReader (the VTKHDF side), with ParaView 5.11's legacy XDMF reader under
pvpython (the sidecar), with scripts/sphsim_reader.py and scripts/render_paraview.py; and files
left by a writer killed with SIGKILL at random moments."""
import json
import math
import os
import pathlib
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

SCENE_2D = {
    "format": 1,
    "name": "out_2d",
    "dimensions": 2,
    "tank": {"min": [0.0, 0.0], "max": [0.2, 0.2]},
    "fluid": {"blocks": [{"min": [0.0, 0.0], "max": [0.1, 0.1]}], "spacing": 0.01},
    "time": {"end": 0.02},
    "output": {"interval": 0.005},
}
SCENE_2D_T0 = {
    "format": 1,
    "name": "out_2d_t0",
    "dimensions": 2,
    "tank": {"min": [0.0, 0.0], "max": [0.1, 0.1]},
    "fluid": {"blocks": [{"min": [0.0, 0.0], "max": [0.05, 0.05]}], "spacing": 0.01},
    "time": {"end": 0},
}
SCENE_2D_FIELDS = {
    "format": 1,
    "name": "out_2d_fields",
    "dimensions": 2,
    "tank": {"min": [0.0, 0.0], "max": [0.1, 0.1]},
    "fluid": {"blocks": [{"min": [0.0, 0.0], "max": [0.05, 0.05]}], "spacing": 0.01},
    "time": {"end": 0.002},
    "output": {"interval": 0.001, "fields": ["position", "density"]},
}
SCENE_3D_SPHERES = {
    "format": 1,
    "name": "out_3d_spheres",
    "dimensions": 3,
    "mode": "particles",
    "tank": {"min": [0.0, 0.0, 0.0], "max": [0.2, 0.2, 0.2]},
    "spheres": {
        "groups": [{"count": 64, "radius": 0.01, "region": {"min": [0.02, 0.02, 0.08], "max": [0.18, 0.18, 0.18]},
                    "velocity_jitter": 0.05}],
        "restitution": 0.5,
    },
    "time": {"end": 0.02},
    "output": {"interval": 0.01},
}

# allocated in full when the file is created: contiguous and of fixed size
FIXED = ["Points", "PointData/velocity", "Steps/PointOffsets", "Steps/PartOffsets", "Steps/NumberOfParts",
         "Steps/CellOffsets", "Steps/ConnectivityIdOffsets"]


@pytest.fixture(scope="module")
def run2d(run_scene):
    return run_scene(SCENE_2D, name="r2d")


@pytest.fixture(scope="module")
def run2d_t0(run_scene):
    return run_scene(SCENE_2D_T0, name="r2d0")


@pytest.fixture(scope="module")
def run2d_fields(run_scene):
    return run_scene(SCENE_2D_FIELDS, name="r2df")


@pytest.fixture(scope="module")
def run3d(run_scene):
    return run_scene(SCENE_3D_SPHERES, name="r3d")


def nsteps(f):
    return int(f["VTKHDF/Steps"].attrs["NSteps"])


def point_fields(f):
    return sorted(f["VTKHDF/PointData"].keys())


# ----------------------------------------------------------------------------- h5py: layout


def test_vtkhdf_layout(run2d):
    with h5py.File(run2d.out, "r") as f:
        root = f["VTKHDF"]
        assert list(root.attrs["Version"]) == [2, 0]
        tid = root.attrs.get_id("Type").get_type()
        assert isinstance(tid, h5py.h5t.TypeStringID)
        assert not tid.is_variable_str(), "VTK needs a fixed-length Type string"
        assert tid.get_cset() == h5py.h5t.CSET_ASCII
        assert root.attrs["Type"] == b"PolyData"
        ns = nsteps(f)
        assert ns == 5 == run2d.summary["snapshots"]
        n = int(root["NumberOfPoints"][0])
        assert n == run2d.summary["particles"]
        assert root["Points"].shape == (ns * n, 3) and root["Points"].dtype == np.float32
        # the vertex cells: written once, one per point, shared by every step
        assert np.array_equal(root["Vertices/Offsets"][:], np.arange(n + 1))
        assert np.array_equal(root["Vertices/Connectivity"][:], np.arange(n))
        assert list(root["Vertices/NumberOfCells"][:]) == [n]
        assert list(root["Vertices/NumberOfConnectivityIds"][:]) == [n]
        for topo in ("Lines", "Polygons", "Strips"):
            assert list(root[topo + "/NumberOfCells"][:]) == [0]
            assert list(root[topo + "/NumberOfConnectivityIds"][:]) == [0]
            assert list(root[topo + "/Offsets"][:]) == [0]
            assert root[topo + "/Connectivity"].shape == (0,)
        st = root["Steps"]
        assert np.allclose(st["Values"][:], [0, 0.005, 0.01, 0.015, 0.02], atol=1e-12)
        assert np.array_equal(st["PointOffsets"][:], np.arange(ns) * n)
        assert np.array_equal(st["PartOffsets"][:], np.zeros(ns))
        assert np.array_equal(st["NumberOfParts"][:], np.ones(ns))
        assert st["CellOffsets"].shape == (ns, 4) and not st["CellOffsets"][:].any()
        assert st["ConnectivityIdOffsets"].shape == (ns, 4) and not st["ConnectivityIdOffsets"][:].any()
        assert sorted(st["PointDataOffsets"].keys()) == point_fields(f)
        for name in point_fields(f):
            assert np.array_equal(st["PointDataOffsets"][name][:], np.arange(ns) * n)
            assert root["PointData"][name].shape[0] == ns * n
        # types: float32 data, uint32 ids, uint8 types, vectors with 3 components even in 2D
        pd = root["PointData"]
        assert pd["velocity"].shape == (ns * n, 3) and pd["velocity"].dtype == np.float32
        assert pd["density"].dtype == np.float32 and pd["pressure"].dtype == np.float32
        assert pd["id"].dtype == np.uint32 and pd["type"].dtype == np.uint8
        assert not np.any(root["Points"][:, 2]) and not np.any(pd["velocity"][:, 2])
        # the whole run's datasets are allocated at creation; Steps/Values grows within one chunk
        for name in FIXED:
            d = root[name]
            assert d.chunks is None and d.maxshape == d.shape and d.id.get_offset() is not None, name
        v = root["Steps/Values"]
        assert v.chunks == (max(ns, 2),) and v.maxshape == (max(ns, 2),) and v.shape == (ns,)
        # per-snapshot records
        s = f["sphsim/steps"]
        assert np.array_equal(s["time"][:], st["Values"][:])
        assert s["step"][0] == 0 and np.all(np.diff(s["step"][:]) > 0)
        assert s["step"][-1] == run2d.summary["last_step"]
        assert list(s["n_contacts"][:]) == [-1] * ns
        assert list(s["n_outside"][:]) == [0] * ns


def test_provenance(run2d, repo_root):
    with h5py.File(run2d.out, "r") as f:
        a = f["sphsim"].attrs
        assert a["scene_json"] == run2d.scene_path.read_text()
        resolved = json.loads(a["resolved_json"])
        assert resolved["dimensions"] == 2
        d = resolved["derived"]
        assert a["smoothing_length"] == pytest.approx(d["smoothing_length_m"], rel=1e-12)
        assert a["support_radius"] == pytest.approx(d["support_radius_m"], rel=1e-12)
        assert a["lattice_particle_mass"] == pytest.approx(d["particle_mass_kg"], rel=1e-12)
        assert a["sound_speed"] == pytest.approx(resolved["fluid"]["eos"]["sound_speed"], rel=1e-12)
        assert a["gamma"] == resolved["fluid"]["eos"]["gamma"]
        assert a["rest_density"] == resolved["fluid"]["rest_density"]
        assert a["kernel"] == resolved["fluid"]["kernel"] == "wendland"
        assert a["eos"] == "tait" and a["mode"] == "sph"
        assert a["density"] == resolved["fluid"]["density"]["type"] == "summation" and a["density_diffusion"] == 0
        assert int(a["dimensions"]) == 2
        assert list(a["gravity"]) == pytest.approx([0.0, -9.81, 0.0])
        assert a["version"] == (repo_root / "VERSION").read_text().strip()
        assert a["device"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", a["start_time"])
        assert list(a["particle_counts"]) == [d["n_fluid"], d["n_boundary"], d["n_spheres"]]
        units = json.loads(a["units"])
        for key in ("Points", "velocity", "density", "pressure", "mass", "smoothing_length", "support_radius",
                    "particle_mass", "rest_density", "sound_speed", "stiffness", "gravity", "restitution"):
            assert key in units, key
        assert units["density"] == "kg/m^3" and units["pressure"] == "Pa" and units["velocity"] == "m/s"
        # the mass attribute is the mass every particle carries
        types = f["VTKHDF/PointData/type"][:]
        mass = f["VTKHDF/PointData/mass"][:]
        assert np.all(mass[types == 0] == np.float32(a["particle_mass"]))
        assert np.all(mass[types == 1] == np.float32(a["boundary_particle_mass"]))


def wendland_2d(r, h):
    q = r / h
    return np.where(q < 2, 7.0 / (4 * math.pi * h * h) * (1 - q / 2) ** 4 * (2 * q + 1), 0.0)


def test_recompute_density_and_pressure(run2d, reader):
    """Everything needed to recompute the fluid density and pressure is in the file."""
    with h5py.File(run2d.out, "r") as f:
        a = f["sphsim"].attrs
        assert a["kernel"] == "wendland" and int(a["dimensions"]) == 2
        h, rho0, c0, gamma = a["smoothing_length"], a["rest_density"], a["sound_speed"], a["gamma"]
        ns, n = nsteps(f), int(f["VTKHDF/NumberOfPoints"][0])
        for k in (0, ns - 1):
            sl = slice(k * n, (k + 1) * n)
            x = f["VTKHDF/Points"][sl].astype(np.float64)
            typ = f["VTKHDF/PointData/type"][sl]
            mass = np.where(typ == 0, a["particle_mass"], a["boundary_particle_mass"])
            r = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
            rho = wendland_2d(r, h) @ mass
            stored = f["VTKHDF/PointData/density"][sl].astype(np.float64)
            fluid = typ == 0
            assert fluid.sum() > 50
            assert np.max(np.abs(rho[fluid] - stored[fluid]) / rho0) < 1e-5
            p = np.where(stored > rho0, rho0 * c0 * c0 / gamma * ((stored / rho0) ** gamma - 1), 0.0)
            assert np.allclose(f["VTKHDF/PointData/pressure"][sl][fluid], p[fluid], rtol=1e-4, atol=1e-2)
    with reader.open_run(run2d.out) as run:
        s = run.snapshot(-1)
        rho = reader.density_from_positions(run, s)
        fluid = s["type"] == 0
        assert np.max(np.abs(rho[fluid] - s["density"][fluid]) / 1000.0) < 1e-5
        p = reader.pressure_from_density(run, s["density"])
        assert np.allclose(p[fluid], s["pressure"][fluid], rtol=1e-4, atol=1e-2)


def test_ids_in_order_and_walls_fixed(run2d):
    with h5py.File(run2d.out, "r") as f:
        ns, n = nsteps(f), int(f["VTKHDF/NumberOfPoints"][0])
        ids = f["VTKHDF/PointData/id"][:].reshape(ns, n)
        assert np.array_equal(ids, np.tile(np.arange(n), (ns, 1)))
        typ = f["VTKHDF/PointData/type"][:].reshape(ns, n)
        assert np.all(typ == typ[0])
        counts = list(f["sphsim"].attrs["particle_counts"])
        assert [int((typ[0] == t).sum()) for t in (0, 1, 2)] == counts
        # ids: fluid first, then boundary
        assert np.all(typ[0][: counts[0]] == 0) and np.all(typ[0][counts[0]:] == 1)
        pts = f["VTKHDF/Points"][:].reshape(ns, n, 3)
        wall = typ[0] == 1
        assert np.array_equal(pts[-1][wall], pts[0][wall])
        assert not np.array_equal(pts[-1][~wall], pts[0][~wall]), "the fluid should have moved"


def test_time_end_zero_one_snapshot(run2d_t0):
    with h5py.File(run2d_t0.out, "r") as f:
        assert nsteps(f) == 1
        assert list(f["VTKHDF/Steps/Values"][:]) == [0.0]
        assert list(f["sphsim/steps/step"][:]) == [0]
        n = int(f["VTKHDF/NumberOfPoints"][0])
        assert f["VTKHDF/Points"].shape == (n, 3)
    root = ET.parse(run2d_t0.xmf).getroot()
    assert len(root.findall("./Domain/Grid/Grid")) == 1


def test_field_subset(run2d_fields):
    with h5py.File(run2d_fields.out, "r") as f:
        # position, velocity, id and type are always written (a restart needs them)
        assert point_fields(f) == ["density", "id", "type", "velocity"]
        assert sorted(f["VTKHDF/Steps/PointDataOffsets"].keys()) == ["density", "id", "type", "velocity"]
        assert f["sphsim"].attrs["fields"] == "position,velocity,density,id,type"
    root = ET.parse(run2d_fields.xmf).getroot()
    for grid in root.findall("./Domain/Grid/Grid"):
        assert sorted(a.get("Name") for a in grid.findall("Attribute")) == ["density", "id", "type", "velocity"]


def test_particle_mode_3d(run3d):
    with h5py.File(run3d.out, "r") as f:
        a = f["sphsim"].attrs
        assert a["mode"] == "particles" and int(a["dimensions"]) == 3
        assert a["restitution"] == 0.5
        assert a["kernel"] == "n/a" and a["eos"] == "n/a" and a["smoothing_length"] == 0
        assert a["support_radius"] == pytest.approx(0.02 * 1.01)  # 2 r_max (1 + CONTACT_NEAR): the widest listed pair
        ns, n = nsteps(f), int(f["VTKHDF/NumberOfPoints"][0])
        assert ns == 3 and n == 64
        assert np.all(f["VTKHDF/PointData/type"][:] == 2)
        assert np.allclose(f["VTKHDF/PointData/radius"][:], 0.01)
        assert np.allclose(f["VTKHDF/PointData/mass"][:], 1000 * 4 / 3 * math.pi * 0.01 ** 3, rtol=1e-5)
        assert np.all(f["sphsim/steps/n_contacts"][:] >= 0)
        z = f["VTKHDF/Points"][:, 2]
        assert z.min() > 0 and z.max() < 0.2


# ----------------------------------------------------------------------------- XDMF sidecar (text)


def test_xdmf_sidecar_structure(run2d):
    with h5py.File(run2d.out, "r") as f:
        ns, n = nsteps(f), int(f["VTKHDF/NumberOfPoints"][0])
        times = f["VTKHDF/Steps/Values"][:]
        fields = point_fields(f)
    root = ET.parse(run2d.xmf).getroot()
    assert root.tag == "Xdmf" and root.get("Version") == "2.0"
    coll = root.find("./Domain/Grid")
    assert coll.get("GridType") == "Collection" and coll.get("CollectionType") == "Temporal"
    grids = coll.findall("Grid")
    assert len(grids) == ns
    for k, g in enumerate(grids):
        assert g.get("GridType") == "Uniform"
        assert float(g.find("Time").get("Value")) == times[k]
        topo = g.find("Topology")
        assert topo.get("TopologyType") == "Polyvertex" and int(topo.get("NumberOfElements")) == n
        assert topo.get("NodesPerElement") == "1"
        geo = g.find("Geometry")
        assert geo.get("GeometryType") == "XYZ"
        slab = geo.find("DataItem")
        assert slab.get("ItemType") == "HyperSlab" and slab.get("Dimensions") == f"{n} 3"
        sel, ref = slab.findall("DataItem")
        assert sel.get("Dimensions") == "3 2"
        assert [int(v) for v in sel.text.split()] == [k * n, 0, 1, 1, n, 3]
        assert ref.get("Format") == "HDF" and ref.get("Dimensions") == f"{ns * n} 3"
        assert ref.text.strip() == "out.h5:/VTKHDF/Points", "the .h5 is referenced by its base name"
        attrs = {a.get("Name"): a for a in g.findall("Attribute")}
        assert sorted(attrs) == fields
        assert attrs["velocity"].get("AttributeType") == "Vector"
        assert attrs["density"].get("AttributeType") == "Scalar" and attrs["density"].get("Center") == "Node"
        sel = attrs["density"].find("DataItem").findall("DataItem")[0]
        assert [int(v) for v in sel.text.split()] == [k * n, 1, n]
    assert not list(run2d.out.parent.glob("*.tmp")), "no temporary sidecar left behind"


# ----------------------------------------------------------------------------- VTK


def read_vtkhdf(path):
    """Every step of `path` through vtkHDFReader: (times, [(npoints, nverts, {name: array}, points)])."""
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    r = vtk.vtkHDFReader()
    r.SetFileName(str(path))
    r.UpdateInformation()
    info = r.GetOutputInformation(0)
    key = vtk.vtkStreamingDemandDrivenPipeline.TIME_STEPS()
    times = list(info.Get(key)) if info.Has(key) else []
    steps = []
    for k in range(r.GetNumberOfSteps()):
        r.SetStep(k)
        r.Update()
        o = r.GetOutput()
        assert o.IsA("vtkPolyData")
        pd = o.GetPointData()
        arrays = {pd.GetArrayName(i): vtk_to_numpy(pd.GetArray(i)) for i in range(pd.GetNumberOfArrays())}
        steps.append((o.GetNumberOfPoints(), o.GetNumberOfVerts(), arrays, vtk_to_numpy(o.GetPoints().GetData())))
    return r.GetNumberOfSteps(), times, steps


@pytest.mark.parametrize("which", ["run2d", "run2d_t0", "run2d_fields", "run3d"])
def test_vtk_reads_every_step(which, request):
    run = request.getfixturevalue(which)
    ns_vtk, times, steps = read_vtkhdf(run.out)
    with h5py.File(run.out, "r") as f:
        ns, n = nsteps(f), int(f["VTKHDF/NumberOfPoints"][0])
        assert ns_vtk == ns
        if ns > 1:  # (VTK announces no time steps for a file of one step)
            assert times == pytest.approx(list(f["VTKHDF/Steps/Values"][:]), abs=0)
        for k, (npts, nverts, arrays, pts) in enumerate(steps):
            assert npts == n and nverts == n
            assert sorted(arrays) == point_fields(f)
            sl = slice(k * n, (k + 1) * n)
            assert np.array_equal(pts, f["VTKHDF/Points"][sl])
            for name, arr in arrays.items():
                assert np.array_equal(arr, f["VTKHDF/PointData"][name][sl]), (k, name)


def test_vtk_reads_file_without_snapshots(test_output_bin, tmp_path):
    """A run stopped before its first snapshot (here: the writer loop told to write none) leaves
    an empty but valid PolyData, not a VTK error."""
    import vtk

    path = tmp_path / "empty.h5"
    env = dict(os.environ, SPHSIM_OUTPUT_WRITER_LOOP=str(path), SPHSIM_OUTPUT_WRITER_MAX="0")
    subprocess.run([str(test_output_bin)], env=env, check=True, capture_output=True, timeout=60)
    with h5py.File(path, "r") as f:
        assert nsteps(f) == 0 and list(f["VTKHDF/NumberOfPoints"][:]) == [0]
    log = vtk.vtkStringOutputWindow()
    previous = vtk.vtkOutputWindow.GetInstance()
    vtk.vtkOutputWindow.SetInstance(log)
    try:
        r = vtk.vtkHDFReader()
        r.SetFileName(str(path))
        r.Update()
        assert r.GetOutput().GetNumberOfPoints() == 0
    finally:
        vtk.vtkOutputWindow.SetInstance(previous)
    assert "ERROR" not in log.GetOutput(), log.GetOutput()
    root = ET.parse(tmp_path / "empty.xmf").getroot()
    assert root.find("./Domain/Grid").get("CollectionType") == "Temporal"
    assert root.findall("./Domain/Grid/Grid") == []


# ----------------------------------------------------------------------------- ParaView 5.11 (XDMF)

PV_XDMF_CHECK = r'''
import json, sys
from paraview.simple import XDMFReader
from paraview import servermanager
from vtkmodules.util.numpy_support import vtk_to_numpy
out = {}
for path in sys.argv[2:]:
    r = XDMFReader(FileNames=[path])
    r.UpdatePipelineInformation()
    tv = r.TimestepValues
    times = [tv] if isinstance(tv, float) else list(tv)
    steps = []
    for t in times:
        r.UpdatePipeline(t)
        d = servermanager.Fetch(r)
        pd = d.GetPointData()
        arrays = {pd.GetArrayName(i): vtk_to_numpy(pd.GetArray(i)).tolist() for i in range(pd.GetNumberOfArrays())}
        steps.append({"t": t, "n": d.GetNumberOfPoints(), "arrays": arrays,
                      "points": vtk_to_numpy(d.GetPoints().GetData()).tolist()})
    out[path] = {"times": times, "steps": steps}
json.dump(out, open(sys.argv[1], "w"))
'''


def test_paraview_511_xdmf_reader(run2d, run3d, pvpython, tmp_path):
    # the pair moves together: the sidecar names the .h5 relative to itself
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copy(run2d.out, moved / "out.h5")
    shutil.copy(run2d.xmf, moved / "out.xmf")
    script = tmp_path / "pv_xdmf_check.py"
    script.write_text(PV_XDMF_CHECK)
    result = tmp_path / "pv.json"
    files = [moved / "out.xmf", run3d.xmf]
    proc = pvpython(script, result, *files, cwd=tmp_path)
    assert result.exists(), f"pvpython failed ({proc.returncode}): {proc.stderr[-2000:]}"
    got = json.loads(result.read_text())
    for xmf, h5 in zip(files, [run2d.out, run3d.out]):
        g = got[str(xmf)]
        with h5py.File(h5, "r") as f:
            ns, n = nsteps(f), int(f["VTKHDF/NumberOfPoints"][0])
            assert len(g["times"]) == ns
            assert g["times"] == pytest.approx(list(f["VTKHDF/Steps/Values"][:]), abs=1e-12)
            for k, s in enumerate(g["steps"]):
                assert s["n"] == n
                assert sorted(s["arrays"]) == point_fields(f)
                sl = slice(k * n, (k + 1) * n)
                assert np.array_equal(np.array(s["points"], dtype=np.float32), f["VTKHDF/Points"][sl])
                for name, arr in s["arrays"].items():
                    want = f["VTKHDF/PointData"][name][sl]
                    assert np.array_equal(np.array(arr, dtype=want.dtype).reshape(want.shape), want), (k, name)


def png_size(path):
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def png_coloured_pixels(path):
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy

    r = vtk.vtkPNGReader()
    r.SetFileName(str(path))
    r.Update()
    img = vtk_to_numpy(r.GetOutput().GetPointData().GetScalars())[:, :3].astype(int)
    return int(np.sum((np.abs(img[:, 0] - img[:, 1]) + np.abs(img[:, 1] - img[:, 2])) > 60))


def test_render_paraview(run2d, run3d, pvpython, tmp_path):
    script = REPO / "scripts" / "render_paraview.py"
    proc = pvpython(script, "--help")
    assert proc.returncode == 0 and "--field" in proc.stdout and "--all" in proc.stdout
    png = tmp_path / "one.png"
    proc = pvpython(script, run2d.xmf, "--field", "pressure", "--step", "2", "--size", "400x300", "-o", png)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert png_size(png) == (400, 300)
    assert png_coloured_pixels(png) > 100, "the particles should be drawn in colour"
    # every snapshot of the 3D particle run, given the .h5
    proc = pvpython(script, run3d.out, "--field", "velocity", "--all", "--size", "320x240",
                    "-o", tmp_path / "frames" / "f.png")
    assert proc.returncode == 0, proc.stderr[-2000:]
    frames = sorted((tmp_path / "frames").glob("f_*.png"))
    assert [p.name for p in frames] == ["f_0000.png", "f_0001.png", "f_0002.png"]
    for p in frames:
        assert png_size(p) == (320, 240) and p.stat().st_size > 1000
    proc = pvpython(script, run2d.xmf, "--field", "nonsense", "-o", tmp_path / "x.png")
    assert proc.returncode == 2 and "nonsense" in proc.stderr


# ----------------------------------------------------------------------------- sphsim_reader


def test_reader_module(run2d, run3d, reader):
    with reader.open_run(run2d.out) as run, h5py.File(run2d.out, "r") as f:
        ns, n = nsteps(f), int(f["VTKHDF/NumberOfPoints"][0])
        assert len(run) == ns and run.n_particles == n
        assert np.array_equal(run.times, f["VTKHDF/Steps/Values"][:])
        assert np.array_equal(run.steps, f["sphsim/steps/step"][:])
        assert run.scene == json.loads(run2d.scene_path.read_text())
        assert run.params["kernel"] == "wendland" and run.params["smoothing_length"] > 0
        assert run.units["density"] == "kg/m^3"
        assert run.fields == ["velocity", "density", "pressure", "id", "type", "mass"]
        s = run.snapshot(2)
        assert s["positions"].shape == (n, 3) and s["positions"].dtype == np.float32
        assert np.array_equal(s["positions"], f["VTKHDF/Points"][2 * n:3 * n])
        assert np.array_equal(s["velocity"], f["VTKHDF/PointData/velocity"][2 * n:3 * n])
        assert np.array_equal(s["density"], f["VTKHDF/PointData/density"][2 * n:3 * n])
        assert np.array_equal(s["id"], np.arange(n))
        assert s["time"] == run.times[2] and s["step"] == run.steps[2]
        assert run.snapshot(time=0.0099)["time"] == run.times[2]
        assert np.array_equal(run.snapshot()["positions"], run.snapshot(ns - 1)["positions"])
        assert sum(1 for _ in run) == ns
        with pytest.raises(IndexError):
            run.snapshot(ns)
    with reader.open_run(run3d.out) as run:
        assert run.params["mode"] == "particles" and run.dimensions == 3
        with pytest.raises(ValueError):
            reader.density_from_positions(run, run.snapshot(0))


def test_reader_command_line(run2d, tmp_path):
    script = REPO / "scripts" / "sphsim_reader.py"
    py = sys.executable
    proc = subprocess.run([py, script, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "usage" in proc.stdout
    proc = subprocess.run([py, script, run2d.out], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^snapshots\s+5$", proc.stdout, re.M)
    assert re.search(r"^kernel\s+wendland$", proc.stdout, re.M)
    proc = subprocess.run([py, script, run2d.out, "--json", "--snapshot", "-1"], capture_output=True, text=True)
    d = json.loads(proc.stdout)
    assert d["snapshots"] == 5 and d["mode"] == "sph"
    assert d["snapshot"]["step"] == run2d.summary["last_step"]
    names = [r["field"] for r in d["snapshot"]["stats"]]
    assert "density" in names and "|velocity|" in names
    proc = subprocess.run([py, script, tmp_path / "missing.h5"], capture_output=True, text=True)
    assert proc.returncode == 1 and "missing.h5" in proc.stderr


# ----------------------------------------------------------------------------- refusal to overwrite


def test_refuses_to_overwrite(run_scene, sphsim_bin):
    run = run_scene(SCENE_2D_T0, name="refuse")
    before = run.out.read_bytes()
    proc = subprocess.run([str(sphsim_bin), str(run.scene_path), "-o", str(run.out), "--quiet"],
                          capture_output=True, text=True, cwd=run.out.parent)
    assert proc.returncode == 4
    assert "--overwrite" in proc.stderr and "out.h5" in proc.stderr
    assert run.out.read_bytes() == before
    assert not list(run.out.parent.glob("*.creating"))


# ----------------------------------------------------------------------------- --resume

SCENE_RESUME = {
    "format": 1,
    "name": "out_resume",
    "dimensions": 2,
    "tank": {"min": [0.0, 0.0], "max": [0.2, 0.2]},
    "fluid": {"blocks": [{"min": [0.0, 0.0], "max": [0.1, 0.1]}], "spacing": 0.005},
    "time": {"end": 0.2},
    "output": {"interval": 0.01},
}


def test_interrupt_and_resume_is_bit_identical(run_scene, sphsim_bin, tmp_path):
    """SIGINT a run once its sidecar lists two snapshots, --resume it, and compare with an
    uninterrupted run: same snapshots, same times, same bits (the restart order is stored)."""
    full = run_scene(SCENE_RESUME, name="full")
    d = tmp_path / "cut"
    d.mkdir()
    scene = d / "scene.json"
    scene.write_text(json.dumps(SCENE_RESUME))
    out = d / "out.h5"
    proc = subprocess.Popen([str(sphsim_bin), str(scene), "-o", str(out), "--quiet"], cwd=d,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    xmf = d / "out.xmf"
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < 120:
        if xmf.exists() and xmf.read_text().count('<Grid Name="step_') >= 2:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, f"the run should have been interrupted: {proc.returncode} {err}"
    with h5py.File(out, "r") as f:
        cut = nsteps(f)
    with h5py.File(full.out, "r") as f:
        total = nsteps(f)
    assert 2 <= cut < total
    res = subprocess.run([str(sphsim_bin), "--resume", str(out), "--quiet"], cwd=d, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    with h5py.File(out, "r") as a, h5py.File(full.out, "r") as b:
        assert nsteps(a) == total
        assert np.array_equal(a["sphsim/steps/time"][:], b["sphsim/steps/time"][:])
        assert np.array_equal(a["VTKHDF/Steps/Values"][:], b["VTKHDF/Steps/Values"][:])
        assert np.array_equal(a["sphsim/steps/step"][:], b["sphsim/steps/step"][:])
        for name in ("VTKHDF/Points", "VTKHDF/PointData/velocity", "VTKHDF/PointData/density",
                     "VTKHDF/PointData/pressure"):
            assert np.array_equal(a[name][:], b[name][:]), name
        assert "resumed after snapshot" in a["sphsim"].attrs["resumes"].decode()
    root = ET.parse(xmf).getroot()
    assert len(root.findall("./Domain/Grid/Grid")) == total


# ----------------------------------------------------------------------------- SIGKILL safety


def test_sigkill_leaves_readable_file(test_output_bin, reader, tmp_path):
    """Kill a writer (the output module, through build/test_output's writer loop) at random
    moments: every file must open in h5py, VTK and the reader with every snapshot the writer
    reported as committed, hold the values written, and be resumable."""
    rng = random.Random(20240601)
    for it in range(6):
        d = tmp_path / f"k{it}"
        d.mkdir()
        path = d / "out.h5"
        n = rng.choice([200, 5000, 100000])
        env = dict(os.environ, SPHSIM_OUTPUT_WRITER_LOOP=str(path), SPHSIM_OUTPUT_WRITER_N=str(n))
        proc = subprocess.Popen([str(test_output_bin)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # let it commit at least one snapshot, then kill it somewhere in the next ones
        t0 = time.monotonic()
        while not path.exists() and time.monotonic() - t0 < 30:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.02, 0.3))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
        committed = len(re.findall(rb"^committed", out, re.M))
        assert path.exists()
        with h5py.File(path, "r") as f:
            ns = nsteps(f)
            assert ns >= committed, f"NSteps {ns} < {committed} snapshots reported committed"
            for name in ("VTKHDF/Steps/PointOffsets", "sphsim/steps/step", "sphsim/steps/time"):
                assert len(f[name]) >= ns
            # VTK reads all of Steps/Values into an array of NSteps: it must never be longer
            assert max(ns - 1, 1) <= len(f["VTKHDF/Steps/Values"]) <= max(ns, 1)
            assert f["VTKHDF/Points"].shape[0] >= ns * n
            for k in range(max(0, ns - 2), ns):
                sl = slice(k * n, (k + 1) * n)
                assert np.all(f["VTKHDF/Points"][sl][:, 1] == k)
                assert np.all(f["VTKHDF/PointData/density"][sl] == 1000 + k)
        xmf_grids = len(ET.parse(d / "out.xmf").getroot().findall("./Domain/Grid/Grid"))
        assert ns - 1 <= xmf_grids <= ns, "the sidecar names committed snapshots only"
        if ns:
            ns_vtk, _, steps = read_vtkhdf(path) if n <= 5000 else (None, None, None)
            if ns_vtk is not None:
                assert ns_vtk == ns and steps[-1][0] == n
            with reader.open_run(path) as run:
                assert len(run) == ns and run.snapshot(-1)["step"] == ns - 1
            res = subprocess.run([str(test_output_bin)], env=dict(os.environ, SPHSIM_OUTPUT_RESUME_CHECK=str(path)),
                                 capture_output=True, text=True, timeout=120)
            assert res.returncode == 0, res.stderr
            assert res.stdout.split() == ["resumed", str(ns), str(n)]
            with h5py.File(path, "r") as f:
                assert nsteps(f) == ns + 1
