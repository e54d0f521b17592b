#!/usr/bin/env python3
"""surface: extract the free surface of an SPH run as a mesh per snapshot (PLY/OBJ for ParaView).

    python3 scripts/surface.py dam3d.h5                      # last snapshot -> dam3d_surface/
    python3 scripts/surface.py dam3d.h5 --all --resolution 3 -o meshes/
    python3 scripts/surface.py dam3d.h5 --time 0.5 --format obj

Method. The fluid particles' colour field

    c(x) = sum_j (m_j / rho_j) W(|x - x_j|, h)          (1 inside the fluid, 0 outside)

is evaluated on a regular grid of cell size dx / --resolution (dx the particle spacing), with
the run's own kernel W and smoothing length h (stored in the file), and the surface c = --iso
(default 0.5) is extracted with marching cubes (scikit-image). --field density uses the SPH
density sum_j m_j W instead (iso default 0.5 rho_0). The grid covers the fluid plus the kernel
support; each particle adds its kernel to the grid nodes within its support, a batch of
stencil offsets at a time (numpy bincount), so the cost is O(N) in the particles: about
4/3 pi (2h/cell)^3 kernel evaluations per particle (about 900 in 3D at the defaults). Grid
nodes outside the tank are 0, so the surface is closed: where the water touches a wall, the mesh
is capped on the wall's plane (vertices are clipped into the tank). Boundary particles do not
count.

Output. One mesh per snapshot, DIR/surface_KKKKKK.ply (binary little-endian PLY with vertex
normals; --ascii for ASCII) and/or .obj, K the snapshot index, so ParaView opens the set as a
time series (File > Open, the grouped "surface_..ply"). DIR/surface_times.csv lists each file's
snapshot, time, vertices and faces (later calls into the same DIR add or replace their lines).

2D runs work too: marching squares gives closed polylines in the z = 0 plane, written as OBJ
lines ("l") by default (PLY edges on request; ParaView's PLY reader ignores edges, its OBJ
reader shows the lines).
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_snapshot as ps  # noqa: E402
import sphsim_reader  # noqa: E402

PROG = "surface.py"
BATCH_ENTRIES = 4_000_000  # (particle, node) pairs per bincount


def stencil(reach_cells, dims):
    """Integer node offsets (relative to the node below a particle) that can lie within the
    support of a particle anywhere in its cell: `reach_cells` = support / cell."""
    r = int(math.ceil(reach_cells))
    rng = np.arange(-r, r + 2)
    grids = np.meshgrid(*([rng] * dims), indexing="ij")
    off = np.stack([g.ravel() for g in grids], axis=1)
    # distance from the cell [0, 1)^d to the node, per axis
    gap = np.where(off < 0, -off, np.where(off > 1, off - 1, 0)).astype(np.float64)
    return off[np.sqrt((gap ** 2).sum(axis=1)) < reach_cells]


def field_on_grid(pos, weight, kernel, h, support, dims, origin, cell, shape):
    """sum_j weight_j W(|x_node - x_j|, h) at every node of the grid origin + cell * index
    (shape `shape`, C order). pos: (N, >= dims) m; weight: (N,)."""
    pos = np.asarray(pos, dtype=np.float64)[:, :dims]
    rel = (pos - origin) / cell
    base = np.floor(rel).astype(np.int64)
    offs = stencil(support / cell, dims)
    size = int(np.prod(shape))
    shape_a = np.asarray(shape, dtype=np.int64)
    strides = np.array([int(np.prod(shape[k + 1:])) for k in range(dims)], dtype=np.int64)
    grid = np.zeros(size, dtype=np.float64)
    n = len(pos)
    if n == 0:
        return grid.reshape(shape)
    per_batch = max(1, BATCH_ENTRIES // n)
    for b in range(0, len(offs), per_batch):
        idx_all, w_all = [], []
        for o in offs[b:b + per_batch]:
            node = base + o
            d = node * cell + origin - pos
            r = np.sqrt(np.einsum("ij,ij->i", d, d))
            ok = (r < support) & np.all((node >= 0) & (node < shape_a), axis=1)
            if not ok.any():
                continue
            idx_all.append(node[ok] @ strides)
            w_all.append(weight[ok] * sphsim_reader.kernel_w(kernel, r[ok], h, dims))
        if idx_all:
            grid += np.bincount(np.concatenate(idx_all), weights=np.concatenate(w_all), minlength=size)
    return grid.reshape(shape)


def grid_box(fluid_pos, tank_min, tank_max, support, cell, dims):
    """(origin, shape) of a grid aligned with tank_min that covers the fluid plus the support,
    and at most one node beyond each tank wall (those nodes stay 0: they close the surface)."""
    lo = fluid_pos[:, :dims].min(axis=0) - support
    hi = fluid_pos[:, :dims].max(axis=0) + support
    n_tank = np.floor((tank_max - tank_min) / cell + 1e-9).astype(np.int64)
    i_lo = np.maximum(np.floor((lo - tank_min) / cell).astype(np.int64) - 1, -1)
    i_hi = np.minimum(np.ceil((hi - tank_min) / cell).astype(np.int64) + 1, n_tank + 1)
    return tank_min + i_lo * cell, tuple(int(v) for v in (i_hi - i_lo + 1))


def surface_of(run, snap, resolution=2.0, iso=None, field="colour"):
    """Extract the surface of one snapshot. Returns (vertices (V,3) float64 m, faces (F,3) int
    (3D) or edges (E,2) int (2D), normals (V,3) or None, info dict)."""
    from skimage import measure

    p = run.params
    dims = run.dimensions
    kernel = p["kernel"]
    h = float(p["smoothing_length"])
    support = float(p.get("support_radius", 2.0 * h))
    dx = float(p["spacing"])
    rho0 = float(p["rest_density"])
    cell = dx / resolution
    fluid = ps.particle_types(run, snap) == 0
    pos = snap["positions"][fluid].astype(np.float64)
    if "mass" in snap:
        m = snap["mass"][fluid].astype(np.float64)
    else:
        m = np.full(len(pos), float(p["particle_mass"]))
    if field == "density":
        weight = m
        level = 0.5 * rho0 if iso is None else iso
    else:
        rho = snap["density"][fluid].astype(np.float64) if "density" in snap else np.full(len(pos), rho0)
        rho = np.where(rho > 0, rho, rho0)
        weight = m / rho
        level = 0.5 if iso is None else iso
    tank_min = np.asarray(p["tank_min"], dtype=np.float64)[:dims]
    tank_max = np.asarray(p["tank_max"], dtype=np.float64)[:dims]
    info = {"particles": int(len(pos)), "cell_m": cell, "iso": level}
    empty = (np.zeros((0, 3)), np.zeros((0, 3 if dims == 3 else 2), dtype=np.int64), None)
    if len(pos) == 0:
        return (*empty, dict(info, grid=(0,), note="no fluid particles"))
    origin, shape = grid_box(pos, tank_min, tank_max, support, cell, dims)
    g = field_on_grid(pos, weight, kernel, h, support, dims, origin, cell, shape)
    # nodes outside the tank stay empty: the surface closes on the walls
    for k in range(dims):
        coord = origin[k] + cell * np.arange(shape[k])
        outside = (coord < tank_min[k] - 1e-9 * cell) | (coord > tank_max[k] + 1e-9 * cell)
        sl = [slice(None)] * dims
        sl[k] = outside
        g[tuple(sl)] = 0.0
    info.update(grid=shape, field_max=float(g.max()))
    if not g.min() < level < g.max():
        return (*empty, dict(info, note=f"the {field} field never crosses {level:g} (max {g.max():.3g})"))
    if dims == 3:
        verts, faces, normals, _ = measure.marching_cubes(g, level=level, spacing=(cell, cell, cell),
                                                          allow_degenerate=False)
        verts = verts + origin
        # skimage's triangles wind clockwise seen from outside; its normals (gradient descent)
        # point out of the fluid. Reverse the winding so both say "outward".
        faces = faces[:, ::-1]
    else:
        lines = measure.find_contours(g, level)
        verts_l, edges_l, n0 = [], [], 0
        for c in lines:
            xy = origin + c * cell
            closed = len(c) > 2 and np.allclose(c[0], c[-1])
            if closed:
                xy = xy[:-1]
            k = np.arange(len(xy))
            e = np.stack([k, np.roll(k, -1)], axis=1) if closed else np.stack([k[:-1], k[1:]], axis=1)
            verts_l.append(xy)
            edges_l.append(e + n0)
            n0 += len(xy)
        verts = np.zeros((n0, 3))
        verts[:, :2] = np.concatenate(verts_l) if verts_l else np.zeros((0, 2))
        faces = np.concatenate(edges_l).astype(np.int64) if edges_l else np.zeros((0, 2), dtype=np.int64)
        normals = None
        info["polylines"] = len(lines)
    lo3 = np.zeros(3)
    hi3 = np.zeros(3)
    lo3[:dims], hi3[:dims] = tank_min, tank_max
    verts = np.clip(verts, lo3, hi3)
    return verts, faces.astype(np.int64), normals, info


# ------------------------------------------------------------------------------ writers

def write_ply(path, verts, faces, normals=None, binary=True, comment=""):
    """PLY with float vertices (and normals), triangle faces (3D) or edges (2D)."""
    edges = faces.shape[1] == 2
    head = ["ply", f"format {'binary_little_endian' if binary else 'ascii'} 1.0"]
    head += [f"comment {line}" for line in comment.splitlines() if line]
    head += [f"element vertex {len(verts)}", "property float x", "property float y", "property float z"]
    if normals is not None:
        head += ["property float nx", "property float ny", "property float nz"]
    if edges:
        head += [f"element edge {len(faces)}", "property int vertex1", "property int vertex2"]
    else:
        head += [f"element face {len(faces)}", "property list uchar int vertex_indices"]
    head.append("end_header")
    vdata = verts.astype(np.float32) if normals is None else np.hstack([verts, normals]).astype(np.float32)
    with open(path, "wb") as f:
        f.write(("\n".join(head) + "\n").encode("ascii"))
        if binary:
            f.write(np.ascontiguousarray(vdata, dtype="<f4").tobytes())
            if edges:
                f.write(np.ascontiguousarray(faces, dtype="<i4").tobytes())
            else:
                rec = np.empty(len(faces), dtype=[("n", "u1"), ("v", "<i4", (3,))])
                rec["n"] = 3
                rec["v"] = faces
                f.write(rec.tobytes())
        else:
            np.savetxt(f, vdata, fmt="%.7g")
            if edges:
                np.savetxt(f, faces, fmt="%d")
            else:
                np.savetxt(f, np.hstack([np.full((len(faces), 1), 3), faces]), fmt="%d")


def write_obj(path, verts, faces, normals=None, comment=""):
    """Wavefront OBJ: v (and vn) lines, then f (triangles, 1-based) or l (2D edges)."""
    with open(path, "w") as f:
        for line in comment.splitlines():
            f.write(f"# {line}\n")
        np.savetxt(f, verts, fmt="v %.7g %.7g %.7g")
        if faces.shape[1] == 2:
            np.savetxt(f, faces + 1, fmt="l %d %d")
        elif normals is not None:
            np.savetxt(f, normals, fmt="vn %.5g %.5g %.5g")
            t = faces + 1
            np.savetxt(f, np.repeat(t, 2, axis=1), fmt="f %d//%d %d//%d %d//%d")
        else:
            np.savetxt(f, faces + 1, fmt="f %d %d %d")


def write_index(path, rows, dims):
    """surface_times.csv: one line per mesh; lines of earlier calls for other snapshots stay."""
    head = f"snapshot,time_s,vertices,{'faces' if dims == 3 else 'edges'},files"
    lines = {}
    if os.path.exists(path):
        with open(path) as f:
            old = f.read().splitlines()
        if old and old[0] == head:
            for ln in old[1:]:
                k = ln.split(",", 1)[0]
                if k.isdigit():
                    lines[int(k)] = ln
    for r in rows:
        lines[r[0]] = f"{r[0]},{r[1]:.9g},{r[2]},{r[3]},{r[4]}"
    with open(path, "w") as f:
        f.write(head + "\n")
        for k in sorted(lines):
            f.write(lines[k] + "\n")


# ------------------------------------------------------------------------------ command line

def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Extract the free surface of an SPH run (.h5) per snapshot: the colour field of the fluid "
                    "particles on a grid (the run's kernel and h), marching cubes at --iso, one PLY/OBJ mesh per "
                    "snapshot for ParaView. 2D runs give closed polylines. Headless; O(N) per snapshot.",
        epilog="examples:\n"
               "  surface.py dam3d.h5\n"
               "  surface.py dam3d.h5 --all --every 5 --resolution 3 -o meshes/\n"
               "  surface.py dam3d.h5 --time 0.5 --format both --ascii",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="sphsim output of an SPH run (.h5)")
    ap.add_argument("-o", "--output-dir", help="folder for the meshes (default: FILE without .h5 + _surface)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--step", "--snapshot", dest="step", type=int, metavar="K",
                   help="snapshot index (negative counts from the end; default -1, the last)")
    g.add_argument("--time", type=float, metavar="T", help="the snapshot nearest to time T (s)")
    g.add_argument("--all", action="store_true", help="every snapshot (with --every N: every N-th)")
    ap.add_argument("--every", type=int, default=1, metavar="N", help="with --all: every N-th snapshot")
    ap.add_argument("--resolution", type=float, default=2.0, metavar="R",
                    help="grid cells per particle spacing (default 2: cell = dx/2)")
    ap.add_argument("--iso", type=float, help="iso level (default 0.5 for colour, 0.5 rho0 for density)")
    ap.add_argument("--field", choices=("colour", "density"), default="colour",
                    help="colour: sum m/rho W (default); density: sum m W")
    ap.add_argument("--format", choices=("auto", "ply", "obj", "both"), default="auto",
                    help="mesh format (default auto: ply in 3D, obj in 2D, whose lines ParaView reads; "
                         "ParaView's PLY reader ignores PLY edges)")
    ap.add_argument("--ascii", action="store_true", help="ASCII PLY instead of binary")
    a = ap.parse_args(argv)
    if not 0.25 <= a.resolution <= 16:
        ap.error("--resolution must be between 0.25 and 16 grid cells per particle spacing")
    if a.every < 1:
        ap.error("--every must be >= 1")
    if a.every != 1 and not a.all:
        ap.error("--every picks snapshots for --all; one snapshot (--step, --time, or the last) takes none")
    try:
        with sphsim_reader.open_run(a.file) as run:
            if run.params.get("mode") != "sph":
                raise ps.ScriptError("this is a particle-mode run (spheres); a free surface needs an SPH fluid")
            if len(run) == 0:
                raise ps.ScriptError(f"{a.file} has no snapshot")
            if a.all:
                ks = list(range(0, len(run), a.every))
            else:
                ks = [ps.pick_snapshot(run, a.step, a.time)]
            fmt = a.format
            if fmt == "auto":
                fmt = "ply" if run.dimensions == 3 else "obj"
            elif run.dimensions == 2 and fmt in ("ply", "both"):
                print(f"{PROG}: note: 2D polylines go into PLY edge elements, which ParaView's PLY reader "
                      f"ignores; open the .obj in ParaView", file=sys.stderr)
            out_dir = a.output_dir or f"{os.path.splitext(a.file)[0]}_surface"
            os.makedirs(out_dir, exist_ok=True)
            index_rows = []
            for k in ks:
                snap = run.snapshot(k)
                verts, faces, normals, info = surface_of(run, snap, a.resolution, a.iso, a.field)
                comment = (f"sphsim surface of {os.path.basename(a.file)}, snapshot {k}, t = {snap['time']:.9g} s\n"
                           f"{a.field} iso {info['iso']:g}, grid cell {info['cell_m']:.6g} m, "
                           f"kernel {run.params['kernel']}, h = {float(run.params['smoothing_length']):.6g} m")
                names = []
                base = os.path.join(out_dir, f"surface_{k:06d}")
                if fmt in ("ply", "both"):
                    write_ply(base + ".ply", verts, faces, normals, binary=not a.ascii, comment=comment)
                    names.append(base + ".ply")
                if fmt in ("obj", "both"):
                    write_obj(base + ".obj", verts, faces, normals, comment=comment)
                    names.append(base + ".obj")
                kind = "faces" if run.dimensions == 3 else "edges"
                note = f" ({info['note']})" if "note" in info else ""
                print(f"{PROG}: snapshot {k} (t = {snap['time']:.6g} s): {len(verts)} vertices, {len(faces)} {kind}, "
                      f"grid {'x'.join(map(str, info['grid']))}{note} -> {', '.join(names)}", file=sys.stderr)
                files = " ".join(os.path.basename(n) for n in names)
                index_rows.append((k, snap["time"], len(verts), len(faces), files))
            write_index(os.path.join(out_dir, "surface_times.csv"), index_rows, run.dimensions)
    except (ps.ScriptError, OSError, ValueError, KeyError, IndexError) as ex:
        print(f"{PROG}: {ex}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
