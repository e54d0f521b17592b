#!/usr/bin/env python3
"""plot_surge_front: the surge front of a dam-break run against Martin & Moyce (1952).

    python3 scripts/plot_surge_front.py dam.h5                  # dam_surge_front.png + a table
    python3 scripts/plot_surge_front.py dam.h5 --csv front.csv --tolerance 0.15

For each snapshot the front position z is measured from the back wall (the side of the water
column against the tank wall) along the flow axis x, and plotted as Z = z/a against
T = t sqrt(2 g / a), with a the column width and g = |gravity|, next to the experiment of
Martin & Moyce (1952; a = 2.25 in, n^2 = 2, scripts/martin_moyce.py). By default a and the
column's position are read from the scene stored in the run (its one fluid block) and g from
the run's gravity; --width, --wall and --gravity override them (needed when the scene has
several blocks).

The front, robustly: a few particles thrown ahead of the front (splashes) must not count. Two
methods (--front):
  neighbours  (default) the largest x of a fluid particle that has at least --min-neighbours
              (default 2) other fluid particles within 2 particle spacings (2 dx): a particle in
              the leading edge of the water has several, an isolated droplet has none or one;
  percentile  the --percentile (default 99.5) percentile of the fluid particles' x.
Either way, half a particle spacing is added: a particle stands for the cell of width dx around
it, so the front of the column at rest is exactly at x = a (Z = 1).

Prints a table (t, T, front x, Z, Z of the experiment at the same T, relative deviation) and the
largest relative deviation |Z - Z_MM| / Z_MM over the snapshots with 0.5 <= T <= 3 (the
experiment's release transient spoils T < 0.5; its data end at T = 3.33). With --tolerance X the
exit status is 1 when that deviation exceeds X (for validation scripts).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import martin_moyce  # noqa: E402
import plot_snapshot as ps  # noqa: E402
import sphsim_reader  # noqa: E402

PROG = "plot_surge_front.py"
T_RANGE = (0.5, 3.0)


def column_geometry(run, width=None, wall=None):
    """(a, x_wall, direction): column width a (m), back-wall position x_wall (m), and the
    direction the front moves (+1 towards +x, -1 towards -x), from the stored scene's fluid
    block unless given."""
    scene = run.resolved or run.scene or {}
    tank_min = float(run.params["tank_min"][0])
    tank_max = float(run.params["tank_max"][0])
    blocks = (scene.get("fluid") or {}).get("blocks") or []
    if width is not None and wall is not None:
        direction = 1.0 if abs(wall - tank_min) <= abs(wall - tank_max) else -1.0
        return float(width), float(wall), direction
    if len(blocks) != 1:
        raise ps.ScriptError(f"the scene has {len(blocks)} fluid blocks; give the column with --width A and --wall X")
    bmin, bmax = float(blocks[0]["min"][0]), float(blocks[0]["max"][0])
    eps = 1e-9 * max(1.0, tank_max - tank_min)
    if abs(bmax - tank_max) <= eps and abs(bmin - tank_min) > eps:
        direction, x_wall = -1.0, bmax  # column against the +x wall, flowing towards -x
    else:
        if abs(bmin - tank_min) > eps:
            print(f"{PROG}: note: the fluid block does not touch a tank wall along x; measuring from its "
                  f"left side x = {bmin:g} m", file=sys.stderr)
        direction, x_wall = 1.0, bmin
    a = bmax - bmin if width is None else float(width)
    if wall is not None:
        x_wall = float(wall)
    return a, x_wall, direction


def column_height_ratio(run):
    """n^2 = height / width of the (single) fluid block, or None."""
    scene = run.resolved or run.scene or {}
    blocks = (scene.get("fluid") or {}).get("blocks") or []
    if len(blocks) != 1:
        return None
    b = blocks[0]
    up = 1 if run.dimensions == 2 else 2
    w = float(b["max"][0]) - float(b["min"][0])
    return (float(b["max"][up]) - float(b["min"][up])) / w if w > 0 else None


def front_position(x_along, pos, dx, method="neighbours", min_neighbours=2, percentile=99.5):
    """Front coordinate (m, along the flow direction, larger = further) of fluid particles.

    x_along: the particles' coordinate along the flow direction (sign applied), pos: their
    positions (N, 3) for the neighbour test, dx: particle spacing (m). Returns the particle
    centre (the caller adds dx/2)."""
    if x_along.size == 0:
        return float("nan")
    if method == "percentile":
        return float(np.percentile(x_along, percentile))
    # neighbours: walk the candidates from the front backwards, in chunks, until one has
    # enough fluid neighbours within 2 dx. Each check is O(N); usually the first chunk decides.
    order = np.argsort(-x_along, kind="stable")
    r2max = (2.0 * dx) ** 2
    chunk = 64
    for start in range(0, order.size, chunk):
        cand = order[start:start + chunk]
        d = pos[cand, None, :] - pos[None, :, :]
        n_near = np.count_nonzero(np.einsum("ijk,ijk->ij", d, d) <= r2max, axis=1) - 1  # minus itself
        ok = np.nonzero(n_near >= min_neighbours)[0]
        if ok.size:
            return float(x_along[cand[ok[0]]])
    return float("nan")


def surge_front(run, a, x_wall, direction, g, method="neighbours", min_neighbours=2, percentile=99.5):
    """Rows (t, T, x_front, Z) for every snapshot; x_front in m in the tank frame."""
    dx = ps.particle_spacing(run)
    rows = []
    for k in range(len(run)):
        snap = run.snapshot(k)
        fluid = ps.particle_types(run, snap) == 0
        pos = snap["positions"][fluid].astype(np.float64)
        along = direction * (pos[:, 0] - x_wall)
        z = front_position(along, pos, dx, method, min_neighbours, percentile) + 0.5 * dx
        t = float(snap["time"])
        rows.append((t, t * math.sqrt(2.0 * g / a), x_wall + direction * z, z / a))
    return rows


def deviation(rows, t_range=T_RANGE):
    """(max relative deviation, T where it occurs, number of snapshots compared) over
    t_range, comparing Z with the experiment interpolated at the same T."""
    best, at, n = float("nan"), float("nan"), 0
    for _, T, _, Z in rows:
        if t_range[0] <= T <= t_range[1]:
            z_mm = float(martin_moyce.interpolate_z(T))
            rel = abs(Z - z_mm) / z_mm
            n += 1
            if not rel <= best:  # also replaces the initial NaN
                best, at = rel, T
    return best, at, n


def plot(rows, out, title, width, height, dpi):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T_mm, Z_mm = martin_moyce.surge_front()
    fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(T_mm, Z_mm, "o", color="black", mfc="none", label="Martin & Moyce (1952), a = 2.25 in, n² = 2")
    ax.plot([r[1] for r in rows], [r[3] for r in rows], "-", color="tab:blue", lw=2, label="sphsim")
    ax.axvspan(*T_RANGE, color="0.9", zorder=0, label="compared: 0.5 ≤ T ≤ 3")
    ax.set_xlabel("T = t √(2g/a)")
    ax.set_ylabel("Z = z/a (surge front)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    fig.savefig(out, dpi=dpi)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Surge front of a 2D dam-break run (Z = z/a against T = t sqrt(2g/a)) compared with "
                    "Martin & Moyce (1952). Writes a PNG, prints a table and the largest relative deviation "
                    "for 0.5 <= T <= 3.",
        epilog="The front is the largest x of a fluid particle with at least --min-neighbours fluid particles "
               "within 2 dx (or a percentile of x, --front percentile), plus dx/2. See the file's docstring.")
    ap.add_argument("file", help="sphsim output of a dam break (.h5)")
    ap.add_argument("-o", "--output", help="PNG to write (default: FILE without .h5 + _surge_front.png)")
    ap.add_argument("--no-plot", action="store_true", help="print the table only")
    ap.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object instead of the table")
    ap.add_argument("--width", type=float, metavar="A", help="column width a (m; default: from the scene)")
    ap.add_argument("--wall", type=float, metavar="X", help="x of the back wall the column leans on (m)")
    ap.add_argument("--gravity", type=float, metavar="G", help="g (m/s^2; default: |gravity| of the run)")
    ap.add_argument("--front", choices=("neighbours", "percentile"), default="neighbours",
                    help="how to find the front (default neighbours)")
    ap.add_argument("--min-neighbours", type=int, default=2, metavar="N",
                    help="neighbours method: fluid particles needed within 2 dx (default 2)")
    ap.add_argument("--percentile", type=float, default=99.5, help="percentile method: which one (default 99.5)")
    ap.add_argument("--tolerance", type=float, metavar="X",
                    help="exit 1 when the max relative deviation for 0.5 <= T <= 3 exceeds X (e.g. 0.15)")
    ap.add_argument("--size", nargs=2, type=int, default=(900, 600), metavar=("W", "H"),
                    help="PNG size in pixels (default 900 600)")
    a = ap.parse_args(argv)
    if a.width is not None and a.width <= 0:
        ap.error("--width must be > 0")
    if a.gravity is not None and a.gravity <= 0:
        ap.error("--gravity must be > 0")
    if not 0 < a.percentile <= 100:
        ap.error("--percentile must be in (0, 100]")
    if a.min_neighbours < 0:
        ap.error("--min-neighbours must be >= 0")
    try:
        with sphsim_reader.open_run(a.file) as run:
            if run.params.get("mode") != "sph":
                raise ps.ScriptError("this is a particle-mode run; the surge front needs an SPH dam break")
            if len(run) == 0:
                raise ps.ScriptError(f"{a.file} has no snapshot")
            width, wall, direction = column_geometry(run, a.width, a.wall)
            g = a.gravity if a.gravity is not None else float(np.linalg.norm(run.params["gravity"]))
            if not g > 0:
                raise ps.ScriptError("the run has no gravity; give --gravity")
            n2 = column_height_ratio(run)
            if n2 is not None and abs(n2 - martin_moyce.HEIGHT_RATIO) > 0.05:
                print(f"{PROG}: note: the column is {n2:.3g} times as high as wide; the experiment's is "
                      f"{martin_moyce.HEIGHT_RATIO:g} (n^2 = 2), so expect a different curve", file=sys.stderr)
            if run.dimensions == 3:
                print(f"{PROG}: note: a 3D run; the experiment is a 2D (tank-wide) column", file=sys.stderr)
            rows = surge_front(run, width, wall, direction, g, a.front, a.min_neighbours, a.percentile)
            dev, dev_T, n_cmp = deviation(rows)
            name = run.params.get("name", "")
    except (ps.ScriptError, OSError, ValueError, KeyError, IndexError) as ex:
        print(f"{PROG}: {ex}", file=sys.stderr)
        return 1

    table = []
    for t, T, xf, Z in rows:
        z_mm = float(martin_moyce.interpolate_z(T))
        rel = (Z - z_mm) / z_mm if np.isfinite(z_mm) else float("nan")
        table.append({"t_s": t, "T": T, "front_x_m": xf, "Z": Z, "Z_martin_moyce": z_mm, "rel_dev": rel})
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("t_s,T,front_x_m,Z,Z_martin_moyce,rel_dev\n")
            for r in table:
                f.write(",".join(f"{r[k]:.9g}" for k in ("t_s", "T", "front_x_m", "Z", "Z_martin_moyce", "rel_dev"))
                        + "\n")
    result = {"file": a.file, "column_width_m": width, "wall_x_m": wall, "direction": int(direction), "g": g,
              "front_method": a.front, "max_rel_dev": dev, "at_T": dev_T, "compared_snapshots": n_cmp,
              "T_range": list(T_RANGE), "rows": table}
    if a.json:
        print(json.dumps(result, allow_nan=True))
    else:
        print(f"# {a.file}: a = {width:g} m, back wall x = {wall:g} m, g = {g:g} m/s^2, front: {a.front}")
        print(f"{'t (s)':>10} {'T':>8} {'front x (m)':>12} {'Z':>8} {'Z M&M':>8} {'rel dev':>8}")
        for r in table:
            mm = f"{r['Z_martin_moyce']:8.3f}" if np.isfinite(r["Z_martin_moyce"]) else f"{'-':>8}"
            rd = f"{100 * r['rel_dev']:7.1f}%" if np.isfinite(r["rel_dev"]) else f"{'-':>8}"
            print(f"{r['t_s']:10.4f} {r['T']:8.3f} {r['front_x_m']:12.4f} {r['Z']:8.3f} {mm} {rd}")
        if n_cmp:
            print(f"max relative deviation from Martin & Moyce for {T_RANGE[0]} <= T <= {T_RANGE[1]}: "
                  f"{100 * dev:.1f} % (at T = {dev_T:.3f}; {n_cmp} snapshots)")
        else:
            print(f"max relative deviation: none (no snapshot with {T_RANGE[0]} <= T <= {T_RANGE[1]}; "
                  f"the run ends at T = {rows[-1][1]:.3f})")
    if not a.no_plot:
        out = a.output or f"{os.path.splitext(a.file)[0]}_surge_front.png"
        plot(rows, out, f"{name}: surge front, a = {width:g} m ({a.front})", a.size[0], a.size[1], 100)
        print(f"{PROG}: wrote {out}", file=sys.stderr)
    if a.tolerance is not None and not (n_cmp and dev <= a.tolerance):
        print(f"{PROG}: max relative deviation {dev:.3g} exceeds the tolerance {a.tolerance:g}"
              if n_cmp else f"{PROG}: nothing to compare for the tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
