#!/usr/bin/env python3
"""plot_snapshot: draw one snapshot of a sphsim run as a PNG, particles coloured by a field.

    python3 scripts/plot_snapshot.py out.h5                          # last snapshot, by speed
    python3 scripts/plot_snapshot.py out.h5 --time 0.5 --field pressure --fluid-only -o p.png
    python3 scripts/plot_snapshot.py dam3d.h5 --step 10 --axes xz --field density

2D runs are drawn in the x-y plane. 3D runs are projected onto two axes (--axes, default xz for
gravity along z, else xy); particles nearer the viewer are drawn over those behind them, the
viewer looking along the remaining axis from its low end (--slab keeps only a slice of it);
the wall particles are left out in 3D unless --show-boundary.
Headless (matplotlib's Agg backend); the PNG is exactly --width x --height pixels.

Also a module: animate.py and the other scripts use field_values(), fluid_mask() and
SnapshotPlot.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sphsim_reader  # noqa: E402

PROG = "plot_snapshot.py"
AXIS = {"x": 0, "y": 1, "z": 2}
TYPE_LABELS = {0: "fluid", 1: "boundary", 2: "sphere"}


class ScriptError(Exception):
    """An error worth one line on stderr (bad field, no snapshot, ...)."""


# ------------------------------------------------------------------------------ data helpers

def field_names(run):
    """Names accepted by field_values() for this run."""
    names = ["x", "y", "z"] if run.dimensions == 3 else ["x", "y"]
    for f in run.fields:
        if f == "velocity":
            names += ["speed", "velocity_x", "velocity_y"] + (["velocity_z"] if run.dimensions == 3 else [])
        else:
            names.append(f)
    return names


def field_values(run, snap, name):
    """(values as float64 array, label with unit) of a per-particle field of `snap`.

    `name` is a stored field (density, pressure, id, type, mass, radius), speed (|velocity|),
    velocity_x/_y/_z, or a coordinate x/y/z."""
    units = run.units or {}
    if name in ("x", "y", "z"):
        if name == "z" and run.dimensions == 2:
            raise ScriptError("z is not a coordinate of a 2D run")
        return snap["positions"][:, AXIS[name]].astype(np.float64), f"{name} (m)"
    if name == "speed" or name.startswith("velocity_"):
        if "velocity" not in snap:
            raise ScriptError(f"field {name} needs the velocity, which this run did not write "
                              f"(fields: {', '.join(field_names(run))})")
        v = snap["velocity"].astype(np.float64)
        if name == "speed":
            return np.linalg.norm(v, axis=1), "speed |v| (m/s)"
        c = name[len("velocity_"):]
        if c not in AXIS or (c == "z" and run.dimensions == 2):
            raise ScriptError(f"unknown field {name}; choose from {', '.join(field_names(run))}")
        return v[:, AXIS[c]], f"velocity {c} (m/s)"
    if name in snap and name in run.fields:
        a = snap[name]
        if a.ndim != 1:
            raise ScriptError(f"field {name} is a vector; pick a component")
        unit = units.get(name, "")
        unit = unit.split(" ")[0] if name == "type" else unit
        return a.astype(np.float64), f"{name} ({unit})" if unit and unit != "1" else name
    raise ScriptError(f"unknown field {name!r} for this run; choose from {', '.join(field_names(run))}")


def particle_types(run, snap):
    """Type of every particle (0 fluid, 1 boundary, 2 sphere): the stored field, or, when the
    run did not write it, from the counts (ids are fluid, then boundary, then spheres)."""
    if "type" in snap:
        return snap["type"].astype(np.int64)
    counts = run.params.get("particle_counts", [0, 0, 0])
    n = len(snap["positions"])
    t = np.zeros(n, dtype=np.int64)
    nf, nb = int(counts[0]), int(counts[1])
    t[nf:nf + nb] = 1
    t[nf + nb:] = 2
    return t


def fluid_mask(run, snap):
    """True for the particles that move (fluid or spheres), False for fixed boundary particles."""
    return particle_types(run, snap) != 1


def pick_snapshot(run, step=None, time=None):
    """Snapshot index from --step (index, negative from the end) or --time (nearest)."""
    if len(run) == 0:
        raise ScriptError(f"{run.path} has no snapshot")
    if time is not None:
        return run.index(time)
    k = -1 if step is None else int(step)
    if not -len(run) <= k < len(run):
        raise ScriptError(f"--step {k}: {run.path} has {len(run)} snapshot(s) (0 ... {len(run) - 1})")
    return k % len(run)


def default_axes(run):
    """'xy' in 2D; in 3D the horizontal axis x and the gravity axis (z unless gravity is along y)."""
    if run.dimensions == 2:
        return "xy"
    g = np.abs(np.asarray(run.params.get("gravity", [0, 0, -9.81]), dtype=float))
    return "xy" if g.size == 3 and g[1] > g[2] else "xz"


# particle mode's support radius is the widest pair its contact list holds, (1 + NEAR) times the
# largest diameter (kernels/contact_shared.h, CONTACT_NEAR; docs/contacts.md, "Near pairs")
CONTACT_NEAR = 0.01


def particle_spacing(run):
    """Particle spacing (m): the fluid spacing (SPH), the largest sphere diameter (particle mode;
    from its contact search radius), else a guess from the tank."""
    p = run.params
    if p.get("spacing"):
        return float(p["spacing"])
    if p.get("support_radius"):
        if p.get("mode") == "particles":
            return float(p["support_radius"]) / (1.0 + CONTACT_NEAR)
        return float(p["support_radius"]) / 2.0
    lo, hi = np.asarray(p["tank_min"]), np.asarray(p["tank_max"])
    return float(np.max(hi - lo)) / 100.0


# ------------------------------------------------------------------------------ the drawing

class SnapshotPlot:
    """A figure that draws snapshots of one run; draw(k) can be called again for animations."""

    def __init__(self, run, field="speed", axes=None, fluid_only=None, width=1000, height=700, dpi=100,
                 cmap=None, vmin=None, vmax=None, point_size=None, slab=None):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        if fluid_only is None:  # hide the walls in 3D projections, where they cover the fluid
            fluid_only = run.dimensions == 3
        self.run, self.field, self.fluid_only = run, field, fluid_only
        self.axes = axes or default_axes(run)
        if len(self.axes) != 2 or any(c not in "xyz" for c in self.axes) or self.axes[0] == self.axes[1]:
            raise ScriptError(f"--axes {self.axes}: expected two different axes of x, y, z (e.g. xz)")
        if run.dimensions == 2 and "z" in self.axes:
            raise ScriptError(f"--axes {self.axes}: a 2D run has only x and y")
        self.ia, self.ib = AXIS[self.axes[0]], AXIS[self.axes[1]]
        self.ic = 3 - self.ia - self.ib  # the hidden (depth) axis in 3D
        self.slab = slab
        if slab is not None and run.dimensions == 2:
            raise ScriptError("--slab is for 3D runs")
        self.vmin, self.vmax = vmin, vmax
        self.categorical = field == "type"
        self.cmap = cmap or ("tab10" if self.categorical else "viridis")

        self.fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        self.ax = self.fig.add_axes([0.08, 0.1, 0.78, 0.8])
        self.cax = self.fig.add_axes([0.88, 0.1, 0.025, 0.8])
        p = run.params
        lo = np.asarray(p["tank_min"], dtype=float)
        hi = np.asarray(p["tank_max"], dtype=float)
        dx = particle_spacing(run)
        layers = float(run.resolved.get("fluid", {}).get("boundary_layers", 0)) if run.resolved else 0.0
        pad = dx * (layers + 1) if not fluid_only else dx
        self.ax.set_xlim(lo[self.ia] - pad, hi[self.ia] + pad)
        self.ax.set_ylim(lo[self.ib] - pad, hi[self.ib] + pad)
        self.ax.set_aspect("equal", adjustable="box")
        self.ax.set_xlabel(f"{self.axes[0]} (m)")
        self.ax.set_ylabel(f"{self.axes[1]} (m)")
        # marker areas in points^2: one particle spacing across (spheres: their diameter)
        self.fig.canvas.draw()
        bbox = self.ax.get_window_extent()
        x0, x1 = self.ax.get_xlim()
        self.pt_per_m = bbox.width / (x1 - x0) * 72.0 / dpi
        self.true_size = point_size is None and p.get("mode") == "particles" and "radius" in run.fields
        if point_size is None:
            point_size = max(0.5, (dx * self.pt_per_m) ** 2)
        self.point_size = point_size
        self.scatter = None
        self.colorbar = None
        self.title = self.ax.set_title("")

    def data(self, k):
        """(positions a, b; colours; label; snapshot) of snapshot k, filtered and depth-sorted."""
        run = self.run
        snap = run.snapshot(k)
        c, label = field_values(run, snap, self.field)
        pos = snap["positions"]
        keep = np.ones(len(pos), dtype=bool)
        if self.fluid_only:
            keep &= fluid_mask(run, snap)
        if self.slab is not None:
            keep &= (pos[:, self.ic] >= self.slab[0]) & (pos[:, self.ic] <= self.slab[1])
        pos, c = pos[keep], c[keep]
        size = np.maximum(0.5, (2.0 * snap["radius"][keep] * self.pt_per_m) ** 2) if self.true_size \
            else np.full(len(pos), self.point_size)
        if run.dimensions == 3:
            # painter's order: far (large depth coordinate) first, near last
            order = np.argsort(-pos[:, self.ic], kind="stable")
            pos, c, size = pos[order], c[order], size[order]
        return pos[:, self.ia], pos[:, self.ib], c, size, label, snap

    def draw(self, k):
        """Draw snapshot k (replacing the previous one); returns the artists that changed."""
        a, b, c, size, label, snap = self.data(k)
        if self.scatter is None:
            vmin, vmax = self.vmin, self.vmax
            if self.categorical:
                vmin, vmax = -0.5, 9.5
            else:
                if vmin is None:
                    vmin = float(np.min(c)) if c.size else 0.0
                if vmax is None:
                    vmax = float(np.max(c)) if c.size else 1.0
                if vmax - vmin <= 1e-6 * max(abs(vmin), abs(vmax)):  # a constant field
                    mid, half = 0.5 * (vmin + vmax), 0.05 * abs(vmin + vmax) or 0.5
                    vmin, vmax = mid - half, mid + half
            self.scatter = self.ax.scatter(a, b, c=c, s=size, cmap=self.cmap, vmin=vmin, vmax=vmax,
                                           linewidths=0, marker="o")
            self.colorbar = self.fig.colorbar(self.scatter, cax=self.cax, label=label)
            if self.categorical:
                present = sorted(TYPE_LABELS)
                self.colorbar.set_ticks(present)
                self.colorbar.set_ticklabels([TYPE_LABELS[t] for t in present])
                self.colorbar.ax.set_ylim(-0.5, len(present) - 0.5)
        else:
            self.scatter.set_offsets(np.column_stack([a, b]))
            self.scatter.set_array(c)
            self.scatter.set_sizes(size)
        name = self.run.params.get("name", "")
        view = "" if self.run.dimensions == 2 else f", projected on {self.axes}"
        self.title.set_text(f"{name}: {self.field} at t = {snap['time']:.4g} s "
                            f"(snapshot {k % len(self.run)}, step {snap['step']}{view})")
        return [self.scatter, self.title]

    def save(self, path):
        self.fig.savefig(path, dpi=self.fig.dpi)

    def close(self):
        import matplotlib.pyplot as plt
        plt.close(self.fig)


# ------------------------------------------------------------------------------ command line

def add_view_options(ap):
    """Options shared with animate.py."""
    ap.add_argument("--field", default="speed",
                    help="colour by: speed, velocity_x, velocity_y, velocity_z, density, pressure, id, type, "
                         "mass, radius, x, y, z (default speed; what the run wrote)")
    ap.add_argument("--axes", help="two axes to draw, e.g. xz (3D runs; default xz with gravity along z, "
                                   "else xy; 2D runs: xy)")
    ap.add_argument("--slab", nargs=2, type=float, metavar=("LO", "HI"),
                    help="3D: keep only particles with LO <= depth coordinate <= HI (m)")
    ap.add_argument("--fluid-only", "--hide-boundary", dest="fluid_only", action="store_const", const=True,
                    default=None, help="leave out the fixed boundary (wall) particles (the default in 3D, "
                                       "where the walls would hide the fluid)")
    ap.add_argument("--show-boundary", dest="fluid_only", action="store_const", const=False,
                    help="draw the boundary particles (the default in 2D)")
    ap.add_argument("--cmap", help="matplotlib colour map (default viridis; tab10 for type)")
    ap.add_argument("--vmin", type=float, help="lower end of the colour scale")
    ap.add_argument("--vmax", type=float, help="upper end of the colour scale")
    ap.add_argument("--point-size", type=float, help="marker area in points^2 (default: one particle spacing)")
    ap.add_argument("--width", type=int, default=1000, help="image width in pixels (default 1000)")
    ap.add_argument("--height", type=int, default=700, help="image height in pixels (default 700)")
    ap.add_argument("--dpi", type=int, default=100, help="dots per inch (sets text size; default 100)")


def check_view_options(ap, a):
    if a.width < 16 or a.height < 16 or a.dpi < 10:
        ap.error("--width and --height must be >= 16 pixels, --dpi >= 10")
    if a.slab and a.slab[1] < a.slab[0]:
        ap.error("--slab LO HI needs LO <= HI")
    if a.vmin is not None and a.vmax is not None and not a.vmin < a.vmax:
        ap.error(f"--vmin ({a.vmin:g}) must be below --vmax ({a.vmax:g})")


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Draw one snapshot of a sphsim run (.h5) as a PNG, particles coloured by a field. "
                    "2D runs in the x-y plane; 3D runs projected on two axes. Runs headless.",
        epilog="examples:\n"
               "  plot_snapshot.py out.h5\n"
               "  plot_snapshot.py out.h5 --time 0.5 --field pressure --fluid-only -o p.png\n"
               "  plot_snapshot.py dam3d.h5 --step 10 --axes xy --field density --slab 0.2 0.4",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="sphsim output (.h5)")
    ap.add_argument("-o", "--output", help="PNG to write (default: FILE without .h5 + _FIELD_K.png)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--step", "--snapshot", dest="step", type=int, metavar="K",
                   help="snapshot index (0 the first; negative counts from the end; default -1, the last)")
    g.add_argument("--time", type=float, metavar="T", help="the snapshot nearest to time T (s)")
    add_view_options(ap)
    a = ap.parse_args(argv)
    check_view_options(ap, a)
    try:
        with sphsim_reader.open_run(a.file) as run:
            k = pick_snapshot(run, a.step, a.time)
            plot = SnapshotPlot(run, a.field, a.axes, a.fluid_only, a.width, a.height, a.dpi, a.cmap, a.vmin,
                                a.vmax, a.point_size, a.slab)
            plot.draw(k)
            out = a.output or f"{os.path.splitext(a.file)[0]}_{a.field}_{k}.png"
            plot.save(out)
            plot.close()
            print(f"{PROG}: wrote {out} (snapshot {k}, t = {run.times[k]:.6g} s, {a.field})", file=sys.stderr)
    except (ScriptError, OSError, ValueError, KeyError, IndexError) as ex:
        print(f"{PROG}: {ex}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
