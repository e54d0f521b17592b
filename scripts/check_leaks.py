#!/usr/bin/env python3
"""Check an sphsim output for leaks through its objects: the least signed distance of any fluid
particle (SPH) or sphere surface (particle mode) to the solids of the scene's primitive objects
(box, sphere, cylinder, rectangle, circle, polygon; meshes are skipped), at every snapshot.

usage: scripts/check_leaks.py OUT.h5 [--every K]

Prints one line per checked snapshot with a penetration, and a summary; exits 1 when a fluid
particle's centre lies inside a solid (phi < 0) or a sphere overlaps one by more than 1 % of
its radius, else 0. The distances are computed as src/geometry.c does (docs/physics.md,
"Objects"), in double precision."""
import argparse
import json
import math
import sys

import h5py
import numpy as np


def rotation(axis, degrees):
    u = np.asarray(axis, dtype=float)
    u = u / np.linalg.norm(u)
    a = math.radians(degrees)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


def frame(o, dims):
    """(origin, R, ext) of a primitive, as geom_place."""
    tr = o.get("transform", {})
    s = tr.get("scale", 1.0)
    rot = tr.get("rotate", {})
    R = rotation(rot.get("axis", [0, 0, 1]) if dims == 3 else [0, 0, 1], rot.get("degrees", 0.0))
    Q = np.eye(3)
    if o["shape"] == "cylinder":
        a = np.asarray(o.get("axis", [0, 0, 1]), dtype=float)
        a /= np.linalg.norm(a)
        w = np.array([-a[1], a[0], 0.0])
        if np.linalg.norm(w) > 1e-12:
            Q = rotation(w, math.degrees(math.atan2(np.linalg.norm(w), a[2])))
        elif a[2] < 0:
            Q = rotation([1, 0, 0], 180)
    c = np.zeros(3)
    c[:dims] = o.get("center", [0] * dims)
    t = np.zeros(3)
    t[:dims] = tr.get("translate", [0] * dims)
    origin = t + s * R @ c
    if dims == 2:
        origin[2] = 0
    if o["shape"] in ("box", "rectangle"):
        ext = np.zeros(3)
        ext[:dims] = 0.5 * s * np.asarray(o["size"], dtype=float)
        if dims == 2:
            ext[2] = 1e30
    elif o["shape"] == "cylinder":
        ext = np.array([s * o["radius"], 0.5 * s * o["length"], 0])
    else:
        ext = np.array([s * o["radius"], 0, 0])
    return origin, R @ Q, ext


def polygon_phi(o, x):
    """Signed distance to a placed 2D polygon (as src/geometry.c's polygon_sdf)."""
    tr = o.get("transform", {})
    R = rotation([0, 0, 1], tr.get("rotate", {}).get("degrees", 0.0))[:2, :2]
    c = np.asarray(o.get("center", [0, 0]), dtype=float)
    t = np.asarray(tr.get("translate", [0, 0]), dtype=float)
    v = np.array([t + tr.get("scale", 1.0) * R @ (c + np.asarray(p, dtype=float)) for p in o["points"]])
    best = np.full(len(x), np.inf)
    inside = np.zeros(len(x), dtype=bool)
    for k in range(len(v)):
        a, b = v[k], v[(k + 1) % len(v)]
        ab, ap = b - a, x[:, :2] - a
        s = np.clip(ap @ ab / (ab @ ab), 0, 1)
        best = np.minimum(best, np.linalg.norm(ap - s[:, None] * ab, axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = ((a[1] > x[:, 1]) != (b[1] > x[:, 1])) & (x[:, 0] < a[0] + (x[:, 1] - a[1]) * ab[0] / ab[1])
        inside ^= cross
    return np.where(inside, -best, best)


def phi(o, dims, x):
    if o["shape"] == "polygon":
        d = polygon_phi(o, x)
        return -d if o.get("role") == "container" else d
    origin, M, ext = frame(o, dims)
    y = (x - origin) @ M  # rows: R^T (x - origin)
    if o["shape"] in ("sphere", "circle"):
        d = np.linalg.norm(y, axis=1) - ext[0]
    elif o["shape"] == "cylinder":
        qr = np.hypot(y[:, 0], y[:, 1]) - ext[0]
        qz = np.abs(y[:, 2]) - ext[1]
        d = np.where((qr > 0) & (qz > 0), np.hypot(qr, qz), np.maximum(qr, qz))
    else:
        q = np.abs(y) - ext
        d = np.linalg.norm(np.maximum(q, 0), axis=1) + np.minimum(q.max(axis=1), 0)
    return -d if o.get("role") == "container" else d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("out")
    ap.add_argument("--every", type=int, default=1, help="check every K-th snapshot")
    a = ap.parse_args(argv)
    with h5py.File(a.out, "r") as f:
        scene = json.loads(f["sphsim"].attrs["resolved_json"])
        dims = scene["dimensions"]
        objs = [o for o in scene.get("objects", []) if o["shape"] != "mesh"]
        skipped = len(scene.get("objects", [])) - len(objs)
        if not objs:
            print("no primitive objects to check" + (f" ({skipped} meshes skipped)" if skipped else ""))
            return 0
        P = f["VTKHDF/Points"]
        T = f["VTKHDF/PointData/type"]
        rad = f["VTKHDF/PointData"].get("radius")
        offs = f["VTKHDF/Steps/PointOffsets"][()]
        npts = f["VTKHDF/NumberOfPoints"][()]
        parts = f["VTKHDF/Steps/PartOffsets"][()]
        times = f["VTKHDF/Steps/Values"][()]
        worst, bad = math.inf, 0
        for k in range(0, len(offs), a.every):
            o0, n = int(offs[k]), int(npts[int(parts[k])])
            t = T[o0:o0 + n]
            sel = t != 1
            x = np.asarray(P[o0:o0 + n], dtype=float)[sel]
            r = np.asarray(rad[o0:o0 + n], dtype=float)[sel] if (rad is not None and scene["mode"] == "particles") \
                else np.zeros(len(x))
            gap = np.min([phi(o, dims, x) for o in objs], axis=0) - r
            g = float(gap.min()) if len(gap) else math.inf
            worst = min(worst, g)
            limit = -0.01 * r if scene["mode"] == "particles" else np.zeros(len(x))
            inside = int(np.count_nonzero(gap < limit))
            if inside:
                bad += 1
                print(f"t = {times[k]:.4f} s: {inside} particle(s) inside a solid, least gap {g:.3g} m")
    print(f"{len(range(0, len(offs), a.every))} snapshots checked, {len(objs)} objects"
          + (f" ({skipped} meshes skipped)" if skipped else "")
          + f": least gap {worst:.4g} m; snapshots with a leak: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
