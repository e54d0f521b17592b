"""Tests of scripts/plot_neighbour_query.py on small synthetic inputs: HDF5 files in sphsim's
VTKHDF layout (Points concatenated over steps, Steps/PointOffsets, Steps.NSteps) written here
with h5py, and NumPy files. The script runs as a command, headless; its PNG is opened and its
printed counts are checked against a brute-force count done here."""
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "plot_neighbour_query.py"


def run_script(*args):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("MPLBACKEND", None)
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=120)


def write_vtkhdf(path, steps, radius=None, sphsim_attrs=None, parts=False):
    """steps: list of (N_k x 3) arrays; radius: list of N_k arrays or None; parts: also write
    NumberOfPoints (one shared entry) with Steps/PartOffsets, as sphsim itself does."""
    with h5py.File(path, "w") as f:
        v = f.create_group("VTKHDF")
        v.attrs["Version"] = np.array([2, 2], dtype=np.int64)
        v.attrs["Type"] = np.bytes_("PolyData")
        v.create_dataset("Points", data=np.concatenate(steps).astype(np.float32))
        s = v.create_group("Steps")
        s.attrs["NSteps"] = np.int64(len(steps))
        s.create_dataset("PointOffsets", data=np.cumsum([0] + [len(p) for p in steps[:-1]]).astype(np.int64))
        s.create_dataset("Values", data=np.arange(len(steps), dtype=np.float64))
        if parts:
            v.create_dataset("NumberOfPoints", data=np.array([len(steps[0])], dtype=np.int64))
            s.create_dataset("PartOffsets", data=np.zeros(len(steps), dtype=np.int64))
            s.create_dataset("NumberOfParts", data=np.ones(len(steps), dtype=np.int64))
        if radius is not None:
            v.create_group("PointData").create_dataset("radius", data=np.concatenate(radius).astype(np.float32))
        if sphsim_attrs:
            g = f.create_group("sphsim")
            for k, val in sphsim_attrs.items():
                g.attrs[k] = val


def parse_counts(stdout):
    cand = int(re.search(r"candidates scanned: (\d+)", stdout).group(1))
    nbr = int(re.search(r"neighbours: (\d+)", stdout).group(1))
    rej = int(re.search(r"rejected: (\d+)", stdout).group(1))
    q = int(re.search(r"query particle (\d+)", stdout).group(1))
    return q, cand, nbr, rej


def brute_force(pts, q, radius, cell, origin, dims):
    """Neighbours over all particles (distance < R), and the particles of the block of cells
    reach = ceil(R / cell) either side of the query's cell; both without the query."""
    pts = np.asarray(pts, dtype=np.float64)
    d = np.sqrt(np.sum((pts - pts[q]) ** 2, axis=1))
    nbr = int(np.sum(d < radius)) - 1
    reach = math.ceil(radius / cell - 1e-9)
    c = np.maximum(np.floor((pts - np.asarray(origin)) / cell), 0)
    in_block = np.all(np.abs(c[:, :dims] - c[q, :dims]) <= reach, axis=1)
    return nbr, int(np.sum(in_block)) - 1


def check_png(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image as mpimg
    img = mpimg.imread(path)
    assert img.shape[0] > 300 and img.shape[1] > 300
    assert np.ptp(img[..., :3]) > 0.3  # not a blank image


def test_help():
    p = run_script("--help")
    assert p.returncode == 0
    assert "--cell" in p.stdout and "--radius" in p.stdout and "--particle" in p.stdout


@pytest.mark.parametrize("cell_ratio,parts", [(1.0, False), (0.5, True), (1.6, False)])
def test_counts_2d_hdf5(tmp_path, cell_ratio, parts):
    rng = np.random.default_rng(3)
    steps = [np.column_stack([rng.uniform(0, 1, (400, 2)), np.zeros(400)]) for _ in range(3)]
    h5 = tmp_path / "run.h5"
    write_vtkhdf(h5, steps, parts=parts)
    radius, cell = 0.1, 0.1 * cell_ratio
    out = tmp_path / "q.png"
    for snap, q in ((1, 17), (-1, 250)):
        p = run_script(h5, "--snapshot", snap, "--particle", q, "--radius", radius, "--cell", cell, "--origin", 0, 0,
                       "-o", out)
        assert p.returncode == 0, p.stderr
        got_q, cand, nbr, rej = parse_counts(p.stdout)
        pts = steps[snap].astype(np.float32)  # the file stores float32
        want_nbr, want_cand = brute_force(pts, q, radius, cell, (0, 0, 0), 2)
        assert got_q == q
        assert nbr == want_nbr and want_nbr > 5
        assert cand == want_cand
        assert rej == cand - nbr and rej > 0
        assert f"reach {math.ceil(radius / cell - 1e-9)}" in p.stdout
        check_png(out)


def test_counts_3d_npz_with_radius(tmp_path):
    rng = np.random.default_rng(5)
    pts = rng.uniform(0, 0.3, (600, 3))
    rad = rng.uniform(0.005, 0.01, 600)
    npz = tmp_path / "cloud.npz"
    np.savez(npz, points=pts, radius=rad)
    out = tmp_path / "q3.png"
    p = run_script(npz, "--particle", 42, "--cell", 0.02, "--origin", 0, 0, 0, "-o", out)
    assert p.returncode == 0, p.stderr
    radius = 2 * rad.max()  # the default search radius from the radii: particle mode's 2 r_max
    assert f"search radius {radius:g} m" in p.stdout
    _, cand, nbr, _ = parse_counts(p.stdout)
    want_nbr, want_cand = brute_force(pts, 42, radius, 0.02, (0, 0, 0), 3)
    assert (nbr, cand) == (want_nbr, want_cand)
    assert "block of 27 cells" in p.stdout
    check_png(out)


def test_defaults_from_sphsim_attributes(tmp_path):
    """Radius, dimensions and the grid origin (tank minimum less one radius, particle mode) come
    from the file; the default query is the particle nearest the centre; radii draw discs."""
    rng = np.random.default_rng(9)
    n = 300
    pts = np.column_stack([rng.uniform(0.1, 0.9, (n, 2)), np.zeros(n)])
    rad = np.full(n, 0.02)
    h5 = tmp_path / "spheres.h5"
    write_vtkhdf(h5, [pts], radius=[rad], sphsim_attrs={
        "support_radius": 0.04, "dimensions": np.int64(2), "tank_min": np.array([0.0, 0.0, 0.0]),
        "mode": np.bytes_("particles")})
    out = tmp_path / "d.png"
    p = run_script(h5, "-o", out)
    assert p.returncode == 0, p.stderr
    q, cand, nbr, _ = parse_counts(p.stdout)
    centre = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    assert q == int(np.argmin(np.sum((pts.astype(np.float32) - centre) ** 2, axis=1)))
    want_nbr, want_cand = brute_force(pts.astype(np.float32), q, 0.04, 0.04, (-0.04, -0.04, 0), 2)
    assert (nbr, cand) == (want_nbr, want_cand)
    check_png(out)


def test_npy_input(tmp_path):
    pts = np.array([[0.0, 0.0], [0.05, 0.0], [0.0, 0.09], [0.15, 0.15], [0.5, 0.5]])
    npy = tmp_path / "p.npy"
    np.save(npy, pts)
    p = run_script(npy, "--particle", 0, "--radius", 0.1, "--cell", 0.1, "--origin", -0.05, -0.05,
                   "-o", tmp_path / "n.png")
    assert p.returncode == 0, p.stderr
    _, cand, nbr, rej = parse_counts(p.stdout)
    # cells of size 0.1 from -0.05: query in (0, 0); (0.15, 0.15) is in cell (2, 2), outside the block
    assert (nbr, cand, rej) == (2, 2, 0)


def test_errors(tmp_path):
    rng = np.random.default_rng(1)
    h5 = tmp_path / "r.h5"
    write_vtkhdf(h5, [rng.uniform(0, 1, (10, 3))])
    p = run_script(h5, "--particle", 10, "--radius", 0.1, "-o", tmp_path / "x.png")
    assert p.returncode == 2 and "--particle 10" in p.stderr
    p = run_script(h5, "--snapshot", 3, "--radius", 0.1, "-o", tmp_path / "x.png")
    assert p.returncode == 2 and "1 snapshot" in p.stderr
    p = run_script(h5, "-o", tmp_path / "x.png")  # no radius anywhere
    assert p.returncode == 2 and "--radius" in p.stderr
    bad = tmp_path / "bad.h5"
    with h5py.File(bad, "w") as f:
        f.create_group("other")
    p = run_script(bad, "--radius", 0.1)
    assert p.returncode == 2 and "VTKHDF" in p.stderr
    assert not (tmp_path / "x.png").exists()
