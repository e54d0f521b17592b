#!/usr/bin/env python3
"""sphsim_reader: read sphsim output files (HDF5, VTKHDF layout; docs/output-format.md) with h5py.

As a module:

    import sphsim_reader
    run = sphsim_reader.open_run("out.h5")
    run.times            # s, one per committed snapshot (numpy float64)
    run.steps            # time-step index of each snapshot (numpy int64)
    run.params           # provenance and physical parameters (dict; run.units names their units)
    run.scene            # the scene JSON as given (dict)
    s = run.snapshot(-1)             # or run.snapshot(time=0.5): the nearest snapshot
    s["positions"]       # (N, 3) float32, m, particles in id order; z = 0 in 2D
    s["velocity"]        # (N, 3) float32, m/s; "density", "pressure", "id", "type", "radius", "mass",
                         # "angular_velocity" (rad/s, spheres), "object" (-1, or the scene object of a boundary particle) when the run wrote them; s["time"], s["step"], s["n_contacts"], s["n_outside"]
    rho = sphsim_reader.density_from_positions(run, s)   # recompute SPH density (small runs)
    g = run.gauges()     # {name: Gauge}: the scene's gauges' time series (docs/output-format.md)
    g["p1"].time, g["p1"].values, g["p1"].columns, g["p1"].units

As a command: python3 scripts/sphsim_reader.py out.h5 [--snapshot K] [--json]
prints a summary of the file (and field statistics of one snapshot).

Only snapshots up to the step count NSteps (the commit point) are read: rows past it, left by a
run killed while writing, are ignored.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

try:
    import h5py
except ImportError:  # pragma: no cover - reported when used
    h5py = None

__all__ = ["open_run", "Run", "Gauge", "kernel_w", "density_from_positions", "pressure_from_density"]

POINT_FIELDS = ("velocity", "density", "pressure", "id", "type", "radius", "mass", "angular_velocity", "object")
TYPE_NAMES = {0: "fluid", 1: "boundary", 2: "sphere"}


def _str(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.dtype.kind in "SO" and v.shape == ():
        return _str(v[()])
    return v


def _attr(v):
    v = _str(v)
    if isinstance(v, np.ndarray):
        return v.tolist() if v.size != 1 or v.ndim else v.item()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _open_h5(path):
    if h5py is None:
        raise RuntimeError("sphsim_reader needs h5py (pip install h5py)")
    if not os.path.exists(path):
        raise OSError(f"{path}: no such file")
    if os.path.isdir(path):
        raise OSError(f"{path}: is a folder, not an sphsim output file")
    try:
        return h5py.File(path, "r")
    except OSError as ex:
        # A running simulation holds a write lock; its committed snapshots can still be read.
        if "lock" in str(ex).lower():
            return h5py.File(path, "r", locking=False)
        raise


class Gauge:
    """One gauge's committed samples: time (s, [rows]), values ([rows, len(columns)]), columns
    and units (lists of names), type, point (m), every (steps between samples)."""

    def __init__(self, name, ds, last_step):
        a = {k: _attr(v) for k, v in ds.attrs.items()}
        self.name = name
        self.type = a.get("type")
        self.every = int(a.get("every_steps", 1))
        self.point = np.asarray(a.get("point", []), dtype=np.float64)
        cols = str(a.get("columns", "")).split(",")
        units = str(a.get("units", "")).split(",")
        # rows of steps up to the last committed snapshot's: later rows are not committed
        rows = min(int(ds.shape[0]), last_step // self.every + 1) if last_step >= 0 else 0
        data = np.asarray(ds[:rows], dtype=np.float64)
        self.time = data[:, 0]
        self.values = data[:, 1:]
        self.columns = cols[1:]
        self.units = units[1:]

    def __repr__(self):
        return f"Gauge({self.name!r}, {self.type}, {len(self.time)} samples, columns {self.columns})"


class Run:
    """One sphsim output file. Use open_run(path); close() or a with-block when done."""

    def __init__(self, path):
        self.path = str(path)
        self._f = _open_h5(self.path)
        f = self._f
        if "VTKHDF" not in f or "sphsim" not in f:
            self._f.close()
            raise ValueError(f"{self.path}: not a sphsim output (no /VTKHDF or /sphsim group)")
        root = f["VTKHDF"]
        self.nsteps = int(root["Steps"].attrs["NSteps"])
        n = self.nsteps
        st = f["sphsim/steps"]
        # (Steps/Values holds the same times but is written just after the commit point)
        self.times = np.asarray(st["time"][:n], dtype=np.float64)
        self.steps = np.asarray(st["step"][:n], dtype=np.int64)
        self.n_contacts = np.asarray(st["n_contacts"][:n], dtype=np.int64)
        self.n_outside = np.asarray(st["n_outside"][:n], dtype=np.int64)
        self._part_offsets = np.asarray(root["Steps/PartOffsets"][:n], dtype=np.int64)
        self._point_offsets = np.asarray(root["Steps/PointOffsets"][:n], dtype=np.int64)
        self._npoints = np.asarray(root["NumberOfPoints"][:], dtype=np.int64)
        self.fields = [name for name in POINT_FIELDS if name in root["PointData"]]
        self.params = {k: _attr(v) for k, v in f["sphsim"].attrs.items()}
        self.units = json.loads(self.params.get("units", "{}") or "{}")
        self.scene = json.loads(self.params.get("scene_json") or "null")
        resolved = self.params.get("resolved_json") or ""
        try:
            self.resolved = json.loads(resolved) if resolved else None
        except ValueError:
            self.resolved = None
        self.dimensions = int(self.params.get("dimensions", 3))
        self.n_particles = int(self._npoints[self._part_offsets[-1]]) if n else 0

    # -- container protocol
    def __len__(self):
        return self.nsteps

    def __iter__(self):
        for k in range(self.nsteps):
            yield self.snapshot(k)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._f:
            self._f.close()
            self._f = None

    def index(self, time):
        """Index of the snapshot nearest to `time` (s)."""
        if self.nsteps == 0:
            raise IndexError(f"{self.path} has no snapshot")
        return int(np.argmin(np.abs(self.times - float(time))))

    def snapshot(self, k=None, time=None):
        """Snapshot k (negative counts from the end; default the last), or the one nearest to
        `time` (s), as a dict of numpy arrays in particle-id order."""
        if time is not None:
            k = self.index(time)
        if k is None:
            k = -1
        k = asked = int(k)
        if k < 0:
            k += self.nsteps
        if not 0 <= k < self.nsteps:
            raise IndexError(f"snapshot {asked} out of range: {self.path} has {self.nsteps}")
        root = self._f["VTKHDF"]
        n = int(self._npoints[self._part_offsets[k]])
        off = int(self._point_offsets[k])
        out = {"positions": np.asarray(root["Points"][off:off + n])}
        for name in self.fields:
            o = off
            offs = root["Steps"].get("PointDataOffsets")
            if offs is not None and name in offs:
                o = int(offs[name][k])
            out[name] = np.asarray(root["PointData"][name][o:o + n])
        if "id" in out and n and np.any(out["id"] != np.arange(n, dtype=out["id"].dtype)):
            order = np.argsort(out["id"], kind="stable")
            for key in list(out):
                out[key] = out[key][order]
        out["time"] = float(self.times[k])
        out["step"] = int(self.steps[k])
        out["n_contacts"] = int(self.n_contacts[k])
        out["n_outside"] = int(self.n_outside[k])
        return out

    def gauges(self):
        """The scene's gauges (/sphsim/gauges), in scene order: {name: Gauge}, each cut to the
        samples the last committed snapshot covers ({} when the scene has none)."""
        g = self._f["sphsim"].get("gauges")
        if g is None:
            return {}
        last = int(self.steps[-1]) if self.nsteps else -1
        order = [n for n in str(_attr(g.attrs.get("order", ""))).split(",") if n] or sorted(g)
        return {name: Gauge(name, g[name], last) for name in order if name in g}

    def summary(self):
        """A dict describing the file (what the command line prints)."""
        p = self.params
        d = {
            "file": self.path,
            "name": p.get("name"),
            "mode": p.get("mode"),
            "dimensions": self.dimensions,
            "particles": self.n_particles,
            "particle_counts": dict(zip(("fluid", "boundary", "spheres"), p.get("particle_counts", [0, 0, 0]))),
            "snapshots": self.nsteps,
            "time_range_s": [float(self.times[0]), float(self.times[-1])] if self.nsteps else None,
            "fields": ["position"] + self.fields,
            "sphsim_version": p.get("version"),
            "device": p.get("device"),
            "start_time": p.get("start_time"),
        }
        if "gauges" in self._f["sphsim"]:
            d["gauges"] = {name: {"type": g.type, "samples": len(g.time), "columns": g.columns, "units": g.units}
                           for name, g in self.gauges().items()}
        if p.get("mode") == "sph":
            for key in ("kernel", "smoothing_length", "support_radius", "particle_mass", "rest_density", "eos",
                        "sound_speed", "gamma", "stiffness", "dt"):
                d[key] = p.get(key)
        else:
            for key in ("restitution", "support_radius", "dt"):
                d[key] = p.get(key)
        return d


def open_run(path):
    """Open a sphsim output file (.h5); returns a Run."""
    return Run(path)


# ---------------------------------------------------------------------------- recomputation

def kernel_w(kernel, r, h, dims):
    """SPH kernel W(r, h) (1/m^dims) as sphsim defines it (support 2 h; see kernels/sph_kernel_fns.h)."""
    r = np.asarray(r, dtype=np.float64)
    q = r / h
    H = 2.0 * h
    if kernel == "wendland":
        norm = 7.0 / (4.0 * math.pi * h * h) if dims == 2 else 21.0 / (16.0 * math.pi * h ** 3)
        return np.where(q < 2.0, norm * (1.0 - q / 2.0) ** 4 * (2.0 * q + 1.0), 0.0)
    if kernel == "cubic_spline":
        norm = 10.0 / (7.0 * math.pi * h * h) if dims == 2 else 1.0 / (math.pi * h ** 3)
        w = np.where(q < 1.0, 1.0 - 1.5 * q * q + 0.75 * q ** 3, 0.25 * np.clip(2.0 - q, 0.0, None) ** 3)
        return norm * w
    if kernel == "poly6":
        norm = 4.0 / (math.pi * H ** 8) if dims == 2 else 315.0 / (64.0 * math.pi * H ** 9)
        return np.where(r < H, norm * np.clip(H * H - r * r, 0.0, None) ** 3, 0.0)
    raise ValueError(f"unknown kernel {kernel!r}")


def density_from_positions(run, snap, chunk=512):
    """rho_i = sum_j m_j W(|x_i - x_j|, h) over all particles (fluid and boundary, j = i included),
    in kg/m^3, for every particle of `snap` (a run.snapshot(...) dict holding "mass"). Brute force
    in float64, O(N^2): meant for checks on small runs. Only the fluid entries are what sphsim
    stores (boundary densities are extrapolated from the fluid pressure)."""
    p = run.params
    if p.get("mode") != "sph":
        raise ValueError("density is an SPH quantity; this run is in particle mode")
    if "mass" not in snap:
        raise ValueError("the run did not write the mass field (output.fields)")
    if p.get("density") == "continuity":
        raise ValueError("this run integrates the density (fluid.density.type continuity): "
                         "its stored density is not a kernel sum of the positions")
    h = float(p["smoothing_length"])
    dims = int(p["dimensions"])
    x = snap["positions"].astype(np.float64)
    m = snap["mass"].astype(np.float64)
    rho = np.empty(len(x))
    for a in range(0, len(x), chunk):
        d = x[a:a + chunk, None, :] - x[None, :, :]
        r = np.sqrt(np.einsum("ijk,ijk->ij", d, d))
        rho[a:a + chunk] = kernel_w(p["kernel"], r, h, dims) @ m
    return rho


def pressure_from_density(run, rho):
    """The equation of state of the run (Pa): tait p = rho0 c0^2 / gamma ((rho/rho0)^gamma - 1),
    linear p = k (rho - rho0), both 0 for rho <= rho0."""
    p = run.params
    rho = np.asarray(rho, dtype=np.float64)
    rho0 = float(p["rest_density"])
    if p["eos"] == "linear":
        out = float(p["stiffness"]) * (rho - rho0)
    else:
        gamma = float(p["gamma"])
        out = rho0 * float(p["sound_speed"]) ** 2 / gamma * ((rho / rho0) ** gamma - 1.0)
    return np.where(rho > rho0, out, 0.0)


# ---------------------------------------------------------------------------- command line

def _field_stats(snap):
    rows = []
    for key, v in snap.items():
        if not isinstance(v, np.ndarray) or v.size == 0:
            continue
        a = np.linalg.norm(v, axis=1) if v.ndim == 2 and key != "positions" else v
        if key == "positions":
            for c, axis in enumerate("xyz"):
                rows.append((f"positions.{axis}", float(v[:, c].min()), float(v[:, c].max()), float(v[:, c].mean())))
            continue
        label = f"|{key}|" if v.ndim == 2 else key
        rows.append((label, float(a.min()), float(a.max()), float(a.mean())))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="sphsim_reader.py",
        description="Summarise a sphsim output file (HDF5, VTKHDF layout): scene, particles, snapshots, "
        "fields and parameters. Importable as a module: see the docstring or docs/output-format.md.")
    ap.add_argument("file", help="sphsim output (.h5)")
    ap.add_argument("--snapshot", type=int, metavar="K", help="also print field statistics of snapshot K (-1: last)")
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    args = ap.parse_args(argv)
    try:
        run = open_run(args.file)
    except (OSError, ValueError, KeyError, RuntimeError) as ex:
        said = str(ex).startswith(str(args.file))  # the reader's own messages name the file
        print(f"sphsim_reader: {ex}" if said else f"sphsim_reader: {args.file}: {ex}", file=sys.stderr)
        return 1
    with run:
        d = run.summary()
        if args.snapshot is not None:
            try:
                snap = run.snapshot(args.snapshot)
            except IndexError as ex:
                print(f"sphsim_reader: {ex}", file=sys.stderr)
                return 1
            d["snapshot"] = {"index": args.snapshot, "time_s": snap["time"], "step": snap["step"],
                             "stats": [dict(zip(("field", "min", "max", "mean"), r)) for r in _field_stats(snap)]}
        if args.json:
            print(json.dumps(d))
            return 0
        for key, v in d.items():
            if key == "snapshot":
                continue
            print(f"{key:16s} {v}")
        if "snapshot" in d:
            s = d["snapshot"]
            print(f"snapshot {s['index']}: t = {s['time_s']:.6g} s, step {s['step']}")
            print(f"  {'field':16s} {'min':>14s} {'max':>14s} {'mean':>14s}")
            for r in s["stats"]:
                print(f"  {r['field']:16s} {r['min']:14.6g} {r['max']:14.6g} {r['mean']:14.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
