#!/usr/bin/env python3
"""plot_neighbour_query: draw one neighbour query of the uniform grid, as the seed pictured it.

From one snapshot of an sphsim output file (HDF5, VTKHDF layout: /VTKHDF/Points, N_total x 3,
concatenated over steps; /VTKHDF/Steps/PointOffsets; the attribute NSteps of /VTKHDF/Steps;
particles in id order), or from a NumPy file (.npy: an N x 2 or N x 3 array of positions, m;
.npz: arrays "points" and optionally "radius"), the script draws:

  * the query particle (red) and its search radius R (circle),
  * the block of cells the query scans, shaded: (2 reach + 1)^dims cells around the query's
    cell, reach = ceil(R / cell) (3 x 3 when the cell size equals R),
  * the true neighbours (distance < R; green) and the candidates scanned but rejected (in the
    block, distance >= R; orange), every other particle in grey,

for a cell size the user picks (--cell, m). In 3D the x-y projection of the block's z-slab is
drawn; distances are the 3D ones. It prints the counts it drew:

    query particle 123 at (x, y, z) m, cell (cx, cy, cz)
    cell size 0.02 m, search radius 0.02 m, reach 1, block of 9 cells
    candidates scanned: 41 (particles in the block, the query excluded)
    neighbours: 17 (distance < R, the query excluded)
    rejected: 24

Defaults come from the file where it has them (/sphsim attributes support_radius, dimensions,
tank_min; the sim's grid origin is the tank minimum less one search radius in particle mode and
less (boundary_layers + 1) spacings in SPH mode); else pass --radius, --origin. Headless: uses
the Agg backend and writes a PNG.

Usage:
    python3 scripts/plot_neighbour_query.py out.h5 --cell 0.02 -o query.png
    python3 scripts/plot_neighbour_query.py out.h5 --snapshot 10 --particle 500 --cell 0.01 --radius 0.02
    python3 scripts/plot_neighbour_query.py points.npy --radius 0.05 --cell 0.025
"""
import argparse
import json
import math
import os
import sys

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import Circle, Rectangle  # noqa: E402


class InputError(Exception):
    """A problem with the input file or the options, reported as one line."""


def _attr(group, name):
    if group is None or name not in group.attrs:
        return None
    v = group.attrs[name]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.dtype.kind in "SO":
        v = v.reshape(-1)[0]
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v
    return v


def read_snapshot(path, snapshot):
    """Return (points N x 3, radius or None, meta dict, snapshot index, number of snapshots)."""
    if path.endswith(".npy"):
        pts = np.load(path)
        return _as3(pts, path), None, {}, 0, 1
    if path.endswith(".npz"):
        z = np.load(path)
        if "points" not in z:
            raise InputError(f"{path}: no array named 'points'")
        rad = np.asarray(z["radius"], dtype=float) if "radius" in z else None
        return _as3(z["points"], path), rad, {}, 0, 1
    try:
        import h5py
    except ImportError:
        raise InputError("reading HDF5 needs h5py (pip install h5py)")
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file" if not os.path.exists(path) else f"{path}: not a file")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"{path}: cannot open as HDF5 ({exc})")
    with f:
        if "VTKHDF" not in f or "Points" not in f["VTKHDF"] or "Steps" not in f["VTKHDF"]:
            raise InputError(f"{path}: not an sphsim VTKHDF file (needs /VTKHDF/Points and /VTKHDF/Steps)")
        v = f["VTKHDF"]
        steps = v["Steps"]
        nsteps = int(_attr(steps, "NSteps") or 0)
        if nsteps < 1:
            raise InputError(f"{path}: holds no committed snapshot (NSteps = 0)")
        k = snapshot if snapshot >= 0 else nsteps + snapshot
        if not 0 <= k < nsteps:
            raise InputError(f"--snapshot {snapshot}: the file has {nsteps} snapshot(s) (0 .. {nsteps - 1}, or -1 for the last)")
        offsets = np.asarray(steps["PointOffsets"][:nsteps], dtype=np.int64)
        points = v["Points"]
        if "NumberOfPoints" in v:
            # one entry per part of each step, found through Steps/PartOffsets (sphsim writes
            # one part whose count every step shares)
            nop = np.asarray(v["NumberOfPoints"], dtype=np.int64)
            part = int(np.asarray(steps["PartOffsets"])[k]) if "PartOffsets" in steps else min(k, len(nop) - 1)
            nparts = int(np.asarray(steps["NumberOfParts"])[k]) if "NumberOfParts" in steps else 1
            count = int(nop[part:part + nparts].sum())
        elif k + 1 < nsteps:
            count = int(offsets[k + 1] - offsets[k])
        else:
            count = int(points.shape[0] - offsets[k])
        lo = int(offsets[k])
        pts = _as3(points[lo:lo + count], path)
        rad = None
        if "PointData" in v and "radius" in v["PointData"]:
            rlo = lo
            pdo = steps.get("PointDataOffsets")
            if pdo is not None and "radius" in pdo:
                rlo = int(np.asarray(pdo["radius"])[k])
            rad = np.asarray(v["PointData"]["radius"][rlo:rlo + count], dtype=float)
        meta = {}
        s = f.get("sphsim")
        if s is not None:
            for name in ("support_radius", "dimensions", "tank_min", "mode", "resolved_json"):
                val = _attr(s, name)
                if val is not None:
                    meta[name] = val
        return pts, rad, meta, k, nsteps


def _as3(pts, path):
    pts = np.asarray(pts, dtype=float)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3) or pts.shape[0] == 0:
        raise InputError(f"{path}: expected an N x 2 or N x 3 array of positions, got shape {pts.shape}")
    if pts.shape[1] == 2:
        pts = np.column_stack([pts, np.zeros(len(pts))])
    return pts


def default_origin(meta, radius, pts):
    """The sim's grid origin when the file says enough, else the points' minimum less R."""
    tank_min = meta.get("tank_min")
    if tank_min is not None:
        tank_min = np.zeros(3) + np.asarray(tank_min, dtype=float).reshape(-1)[:3]
        margin = meta.get("support_radius", radius)
        if meta.get("mode") == "sph":
            margin = None
            try:
                rj = json.loads(meta.get("resolved_json", "{}"))
                spacing = rj.get("derived", {}).get("spacing_m") or rj.get("fluid", {}).get("spacing")
                layers = rj.get("fluid", {}).get("boundary_layers")
                if spacing and layers is not None:
                    margin = (float(layers) + 1.0) * float(spacing)
            except (ValueError, AttributeError):
                margin = None
        if margin is not None:
            return tank_min - float(margin)
    return pts.min(axis=0) - radius


def neighbour_query(pts, q, radius, cell, origin, dims):
    """Cells and the candidate / neighbour sets of query q, as kernels/neighbours.h scans them:
    cell coordinates floor((x - origin) / cell) (clamped at 0 below), block of reach cells
    either side, reach = ceil(R / cell). Returns (cells N x 3, reach, candidates, neighbours),
    index arrays without q."""
    reach = max(1, int(math.ceil(radius / cell - 1e-9)))
    cells = np.floor((pts - origin) / cell).astype(np.int64)
    cells = np.maximum(cells, 0)
    if dims == 2:
        cells[:, 2] = 0
    in_block = np.all(np.abs(cells[:, :dims] - cells[q, :dims]) <= reach, axis=1)
    in_block[q] = False
    cand = np.nonzero(in_block)[0]
    d2 = np.sum((pts[cand] - pts[q]) ** 2, axis=1)
    nbr = cand[d2 < radius * radius]
    return cells, reach, cand, nbr


def draw(pts, rad, q, radius, cell, origin, dims, cells, reach, cand, nbr, out, title):
    cq = cells[q]
    lo = origin[:2] + (cq[:2] - reach) * cell
    hi = origin[:2] + (cq[:2] + reach + 1) * cell
    pad = cell
    fig, ax = plt.subplots(figsize=(7, 7))
    # the block, and the cell lines around it
    ax.add_patch(Rectangle(lo, hi[0] - lo[0], hi[1] - lo[1], facecolor="#cfe3f7", edgecolor="none", zorder=0))
    ax.add_patch(Rectangle(origin[:2] + cq[:2] * cell, cell, cell, facecolor="#9cc6ee", edgecolor="none", zorder=0))
    for kx in range(-reach - 1, reach + 3):
        x = origin[0] + (cq[0] + kx) * cell
        ax.axvline(x, color="#7a9cc0", lw=0.6, zorder=1)
    for ky in range(-reach - 1, reach + 3):
        y = origin[1] + (cq[1] + ky) * cell
        ax.axhline(y, color="#7a9cc0", lw=0.6, zorder=1)
    # particles in view: in 3D only the block's z-slab
    view = np.all((pts[:, :2] >= lo - pad) & (pts[:, :2] <= hi + pad), axis=1)
    if dims == 3:
        view &= np.abs(cells[:, 2] - cq[2]) <= reach
    groups = np.zeros(len(pts), dtype=int)  # 0 other, 1 rejected, 2 neighbour, 3 query
    groups[cand] = 1
    groups[nbr] = 2
    groups[q] = 3
    colours = {0: "#b0b0b0", 1: "#f28e2b", 2: "#2ca02c", 3: "#d62728"}
    labels = {0: "other particles", 1: f"scanned, rejected ({len(cand) - len(nbr)})",
              2: f"neighbours, r < R ({len(nbr)})", 3: "query"}
    size = rad if rad is not None and len(rad) == len(pts) and np.all(rad > 0) else None
    default_r = 0.12 * cell
    for gk in (0, 1, 2, 3):
        idx = np.nonzero(view & (groups == gk))[0]
        if size is not None:
            patches = [Circle(pts[i, :2], size[i]) for i in idx]
            ax.add_collection(PatchCollection(patches, facecolor=colours[gk], edgecolor="k", linewidths=0.3,
                                              zorder=2 + gk))
            ax.plot([], [], "o", color=colours[gk], label=labels[gk])
        else:
            ax.scatter(pts[idx, 0], pts[idx, 1], s=18 if gk else 8, color=colours[gk], edgecolors="k",
                       linewidths=0.3, zorder=2 + gk, label=labels[gk])
    ax.add_patch(Circle(pts[q, :2], radius, facecolor="none", edgecolor="#d62728", lw=1.5, ls="--", zorder=7,
                        label=f"search radius R = {radius:g} m"))
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Draw one neighbour query of sphsim's uniform grid (query particle, its block of "
        "cells, search radius, true neighbours and rejected candidates) from one snapshot; writes a PNG "
        "and prints the counts.")
    ap.add_argument("input", help="sphsim output (.h5, VTKHDF layout), or positions as .npy (N x 2|3) / .npz "
                    "(points, radius)")
    ap.add_argument("--cell", type=float, default=None,
                    help="cell size, m (default: the search radius, i.e. grid.cell_ratio = 1)")
    ap.add_argument("--radius", type=float, default=None,
                    help="search radius R, m (default: the file's support_radius: 2 h in SPH mode, "
                    "2 x 1.01 x the largest sphere radius in particle mode: the widest listed pair)")
    ap.add_argument("--snapshot", type=int, default=-1, help="snapshot index, negative from the end (default -1)")
    ap.add_argument("--particle", type=int, default=None,
                    help="id of the query particle (default: the one nearest the centre of the points)")
    ap.add_argument("--origin", type=float, nargs="+", default=None, metavar="X",
                    help="grid origin (2 or 3 numbers, m; default: as sphsim places its grid, from the file)")
    ap.add_argument("--dims", type=int, choices=(2, 3), default=None,
                    help="dimensions (default: the file's, else 2 when every z is 0)")
    ap.add_argument("-o", "--output", default="neighbour_query.png", help="PNG to write (default neighbour_query.png)")
    a = ap.parse_args(argv)
    try:
        pts, rad, meta, k, nsteps = read_snapshot(a.input, a.snapshot)
        dims = a.dims or int(meta.get("dimensions") or (2 if np.all(pts[:, 2] == 0) else 3))
        radius = a.radius
        if radius is None and meta.get("support_radius"):
            radius = float(meta["support_radius"])
        if radius is None and rad is not None and len(rad):
            radius = 2.0 * float(np.max(rad))
        if radius is None or not radius > 0 or not math.isfinite(radius):
            raise InputError("give the search radius with --radius (m, > 0): the input does not say it")
        cell = a.cell if a.cell is not None else radius
        if not cell > 0 or not math.isfinite(cell):
            raise InputError(f"--cell {cell}: expected a cell size > 0 (m)")
        if a.origin is not None:
            if len(a.origin) not in (2, 3):
                raise InputError("--origin: give 2 or 3 numbers (m)")
            origin = np.zeros(3)
            origin[:len(a.origin)] = a.origin
        else:
            origin = default_origin(meta, radius, pts)
        n = len(pts)
        if a.particle is None:
            centre = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
            q = int(np.argmin(np.sum((pts - centre) ** 2, axis=1)))
        else:
            q = a.particle
            if not 0 <= q < n:
                raise InputError(f"--particle {q}: the snapshot has particles 0 .. {n - 1}")
        if not np.all(np.isfinite(pts[q])):
            raise InputError(f"particle {q} has a non-finite position {pts[q].tolist()}")
        cells, reach, cand, nbr = neighbour_query(pts, q, radius, cell, origin, dims)
        block = (2 * reach + 1) ** dims
        cz = f", {cells[q, 2]}" if dims == 3 else ""
        print(f"query particle {q} at ({pts[q, 0]:.6g}, {pts[q, 1]:.6g}, {pts[q, 2]:.6g}) m, cell ({cells[q, 0]}, "
              f"{cells[q, 1]}{cz}); snapshot {k} of {nsteps}")
        print(f"cell size {cell:g} m, search radius {radius:g} m, reach {reach}, block of {block} cells")
        print(f"candidates scanned: {len(cand)} (particles in the block, the query excluded)")
        print(f"neighbours: {len(nbr)} (distance < R, the query excluded)")
        print(f"rejected: {len(cand) - len(nbr)}")
        title = (f"{a.input}, snapshot {k}: query {q}, cell {cell:g} m, R {radius:g} m, "
                 f"{len(nbr)} neighbours of {len(cand)} candidates" + (" (x-y of the block's z-slab)" if dims == 3 else ""))
        draw(pts, rad, q, radius, cell, origin, dims, cells, reach, cand, nbr, a.output, title)
        print(f"wrote {a.output}")
    except InputError as exc:
        print(f"plot_neighbour_query: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
