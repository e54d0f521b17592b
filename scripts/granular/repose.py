#!/usr/bin/env python3
"""repose: the angle of repose of a poured heap, in sphsim and in LAMMPS side by side.

    python3 scripts/granular/repose.py run [--work DIR] [--count N] [--friction MU] [--ranks R]
    python3 scripts/granular/repose.py angle FILE [--png OUT]

`run` (for each of `--seeds` random columns) writes a particle-mode scene (spheres of three sizes, 2 mm across on average, packed at
random into a column 2 cm wide and 5 cm tall standing in the middle of a slot 16 cm long and
1 cm wide, released at t = 0: the column collapses into a heap), runs sphsim on it, hands
sphsim's initial state to LAMMPS (Debian's `lmp`, pair_style gran/hooke/history with the same
friction and a damping that gives the same restitution; scripts/granular/in.repose), runs that,
and measures both heaps with the same function: results.json (every pour's angles and the
means) and repose.png (the first pour) in the work folder.
`angle` measures one final state, a sphsim file (.h5, its last snapshot) or a LAMMPS dump.

The heap is a ridge across a slot 5 diameters wide (without rolling resistance, spheres on an
open floor roll apart and leave no heap, in sphsim and in LAMMPS alike; the slot's walls hold
them). The angle: the ridge's axis is the mean x of the spheres; its surface is the highest
sphere top (z + r) in bins of |x - axis| one mean diameter wide; the angle is that of the
straight line fitted to the surface where it lies between 30 % and 80 % of the crest's height
(the rounded crest and the toe, with the bed of spheres that rolled away, left out).
Only numpy (and h5py for sphsim files, matplotlib for the picture) are needed.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

G = 9.81            # m/s^2
DENSITY = 2500.0    # kg/m^3 (glass)
RADII = (0.0009, 0.0010, 0.0011)  # m: three sizes, so that the heap does not crystallise
TANK = (0.16, 0.01, 0.06)            # m: a slot 5 diameters wide
COLUMN = ((0.07, 0.09), (0.0, 0.01), (0.0, 0.05))  # m: the column's x, y and z ranges


def scene(count, mu, e, dt, t_end, iterations, seed=0):
    """The sphsim scene of the pour (`seed` shifts the groups' placement seeds)."""
    per = [count // 3 + (1 if k < count % 3 else 0) for k in range(3)]
    lo, hi = [c[0] for c in COLUMN], [c[1] for c in COLUMN]
    groups = [{"count": per[k], "radius": RADII[k], "density": DENSITY, "placement": "random",
               "seed": 11 + k + 3 * seed, "region": {"min": lo, "max": hi}} for k in range(3)]
    return {"format": 1, "name": "repose", "dimensions": 3, "mode": "particles",
            "tank": {"min": [0, 0, 0], "max": list(TANK)}, "gravity": [0, 0, -G],
            "spheres": {"groups": groups, "restitution": e, "friction": mu, "iterations": iterations},
            "time": {"end": t_end, "dt": dt}, "output": {"interval": t_end / 10}}


def read_sphsim(path, snapshot=-1):
    """Positions (N, 3), radii (N,) of one snapshot of a sphsim file (id order)."""
    import h5py
    with h5py.File(path, "r") as f:
        n = int(f["VTKHDF/NumberOfPoints"][0])
        nsteps = int(f["VTKHDF/Steps"].attrs["NSteps"])
        k = snapshot % nsteps
        x = np.array(f["VTKHDF/Points"][k * n:(k + 1) * n], dtype=float)
        r = np.array(f["VTKHDF/PointData/radius"][k * n:(k + 1) * n], dtype=float)
        m = np.array(f["VTKHDF/PointData/mass"][k * n:(k + 1) * n], dtype=float)
        ids = np.array(f["VTKHDF/PointData/id"][k * n:(k + 1) * n])
    order = np.argsort(ids)
    return x[order], r[order], m[order]


def read_dump(path):
    """Positions (N, 3) and radii (N,) of a LAMMPS dump (custom: id radius x y z ...)."""
    with open(path) as f:
        lines = f.read().splitlines()
    i = max(k for k, s in enumerate(lines) if s.startswith("ITEM: ATOMS"))
    cols = lines[i].split()[2:]
    a = np.array([[float(v) for v in s.split()] for s in lines[i + 1:] if s.strip()])
    a = a[np.argsort(a[:, cols.index("id")])]
    x = a[:, [cols.index("x"), cols.index("y"), cols.index("z")]]
    return x, a[:, cols.index("radius")]


def heap_angle(x, r):
    """The heap's angle (degrees) and its profile: distances from the crest, surface heights, the
    crest's height and the fitted line (slope, intercept)."""
    d = 2.0 * float(np.mean(r))
    cx = np.mean(x[:, 0])
    rho = np.abs(x[:, 0] - cx)
    top = x[:, 2] + r
    nb = int(math.ceil(rho.max() / d)) + 1
    ring = np.minimum((rho / d).astype(int), nb - 1)
    surface = np.full(nb, -np.inf)
    np.maximum.at(surface, ring, top)
    centres = (np.arange(nb) + 0.5) * d
    crest = float(np.max(surface))
    use = np.isfinite(surface) & (surface >= 0.3 * crest) & (surface <= 0.8 * crest)
    slope, icpt = np.polyfit(centres[use], surface[use], 1)
    return math.degrees(math.atan(-slope)), {"rings": centres, "surface": surface, "crest": crest,
                                             "fit": (slope, icpt), "rho": rho, "top": top, "used": use}


def write_data(path, x, r, m):
    """A LAMMPS data file (atom_style sphere: id type diameter density x y z) of the state."""
    dens = m / (4.0 / 3.0 * math.pi * r ** 3)
    with open(path, "w") as f:
        f.write("sphsim initial state of the repose pour\n\n%d atoms\n1 atom types\n\n" % len(r))
        f.write("0 %r xlo xhi\n0 %r ylo yhi\n0 %r zlo zhi\n\nAtoms # sphere\n\n" % TANK)
        for k in range(len(r)):
            f.write("%d 1 %.9g %.9g %.9g %.9g %.9g\n" % (k + 1, 2 * r[k], dens[k], x[k, 0], x[k, 1], x[k, 2]))


def damping(kn, m_eff, e):
    """gamma (1/s) of the damped linear spring F = kn delta - m_eff gamma v_n whose restitution
    is e: zeta / sqrt(1 - zeta^2) = -ln(e) / pi, gamma = 2 zeta sqrt(kn / m_eff)."""
    q = -math.log(e) / math.pi
    zeta = q / math.sqrt(1 + q * q)
    return 2 * zeta * math.sqrt(kn / m_eff)


def picture(path, results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 2.6), sharey=True, dpi=90)
    axes = np.atleast_1d(axes)
    for ax, (name, (angle, prof)) in zip(axes, results.items()):
        ax.scatter(prof["rho"] * 1e3, prof["top"] * 1e3, s=1, c="0.7", lw=0)
        ok = np.isfinite(prof["surface"])
        ax.plot(prof["rings"][ok] * 1e3, prof["surface"][ok] * 1e3, "k.", ms=3)
        s, c = prof["fit"]
        rr = prof["rings"][prof["used"]]
        ax.plot(rr * 1e3, (c + s * rr) * 1e3, "r-", lw=2)
        ax.set_title("%s: %.1f deg" % (name, angle), fontsize=10)
        ax.set_xlabel("distance from the crest (mm)")
        ax.set_xlim(0, 1e3 * TANK[0] / 2)
    axes[0].set_ylabel("height (mm)")
    fig.tight_layout()
    fig.savefig(path)


def pour(args, work, seed):
    """One pour in both codes from one initial state: (sphsim angle, profile), (LAMMPS angle,
    profile), details."""
    os.makedirs(work, exist_ok=True)
    sphsim = args.sphsim or os.path.join(ROOT, "build", "sphsim")
    lmp = args.lmp or shutil.which("lmp")
    if not lmp:
        sys.exit("repose: LAMMPS (lmp) not found; Debian: apt-get install lammps")
    sc = scene(args.count, args.friction, args.restitution, args.dt, args.time, args.iterations, seed)
    scene_path = os.path.join(work, "repose.json")
    with open(scene_path, "w") as f:
        json.dump(sc, f, indent=1)
    out = os.path.join(work, "sphsim.h5")
    t0 = time.time()
    subprocess.run([sphsim, scene_path, "-o", out, "--overwrite", "--quiet"], check=True, stdout=subprocess.DEVNULL)
    t_sphsim = time.time() - t0
    x, r, m = read_sphsim(out, 0)
    data = os.path.join(work, "initial.data")
    write_data(data, x, r, m)
    # LAMMPS: the damping that gives e between two spheres of the mean mass and between one and
    # a wall, a step of 1/25 of the contact time
    mean_m = float(np.mean(m))
    kn = args.kn
    gn = damping(kn, mean_m / 2, args.restitution)
    gw = damping(kn, mean_m, args.restitution)
    dt = math.pi * math.sqrt(mean_m / 2 / kn) / 25
    steps = int(math.ceil(args.time / dt))
    dump = os.path.join(work, "lammps.dump")
    cmd = [lmp, "-in", os.path.join(HERE, "in.repose"), "-log", os.path.join(work, "log.lammps"), "-screen", "none"]
    for k, v in (("data", data), ("out", dump), ("kn", kn), ("gamman", gn), ("gammaw", gw), ("mu", args.friction),
                 ("dt", dt), ("steps", steps), ("lx", TANK[0]), ("ly", TANK[1]), ("skin", 0.2 * 2 * RADII[1])):
        cmd += ["-var", k, str(v)]
    if args.ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "-np", str(args.ranks)] + cmd
    t0 = time.time()
    subprocess.run(cmd, check=True)
    t_lammps = time.time() - t0
    xs, rs, _ = read_sphsim(out, -1)
    xl, rl = read_dump(dump)
    details = {"sphsim_wall_s": t_sphsim, "lammps_wall_s": t_lammps, "lammps_dt_s": dt, "lammps_steps": steps,
               "kn_N_per_m": kn, "gamma_n_per_s": gn, "gamma_wall_per_s": gw}
    return heap_angle(xs, rs), heap_angle(xl, rl), details


def run(args):
    os.makedirs(args.work, exist_ok=True)
    res = {"spheres": args.count, "friction": args.friction, "restitution": args.restitution, "time_s": args.time,
           "sphsim_dt_s": args.dt, "sphsim_iterations": args.iterations, "lammps_ranks": args.ranks, "pours": []}
    for seed in range(args.seeds):
        (a_s, p_s), (a_l, p_l), det = pour(args, os.path.join(args.work, "seed%d" % seed), seed)
        res["pours"].append(dict(seed=seed, sphsim_deg=a_s, lammps_deg=a_l, **det))
        if seed == 0:
            picture(os.path.join(args.work, "repose.png"), {"sphsim": (a_s, p_s), "LAMMPS": (a_l, p_l)})
    a_s = [p["sphsim_deg"] for p in res["pours"]]
    a_l = [p["lammps_deg"] for p in res["pours"]]
    res["sphsim_mean_deg"] = float(np.mean(a_s))
    res["lammps_mean_deg"] = float(np.mean(a_l))
    res["difference_deg"] = res["sphsim_mean_deg"] - res["lammps_mean_deg"]
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


def angle(args):
    if args.file.endswith(".h5"):
        x, r, _ = read_sphsim(args.file, -1)
    else:
        x, r = read_dump(args.file)
    a, prof = heap_angle(x, r)
    print("%.2f" % a)
    if args.png:
        picture(args.png, {os.path.basename(args.file): (a, prof)})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="pour in sphsim and LAMMPS, measure both")
    r.add_argument("--work", default="repose-work")
    r.add_argument("--count", type=int, default=1300)
    r.add_argument("--friction", type=float, default=0.5)
    r.add_argument("--restitution", type=float, default=0.3)
    r.add_argument("--time", type=float, default=0.8, help="simulated time (s)")
    r.add_argument("--dt", type=float, default=2e-4, help="sphsim's time step (s)")
    r.add_argument("--iterations", type=int, default=16, help="sphsim's spheres.iterations")
    r.add_argument("--kn", type=float, default=2e4, help="LAMMPS's normal stiffness (N/m)")
    r.add_argument("--ranks", type=int, default=1, help="LAMMPS's MPI ranks")
    r.add_argument("--seeds", type=int, default=3, help="pours from different random columns")
    r.add_argument("--sphsim", help="the sphsim binary (default build/sphsim)")
    r.add_argument("--lmp", help="the LAMMPS binary (default lmp on PATH)")
    a = sub.add_parser("angle", help="measure one heap")
    a.add_argument("file")
    a.add_argument("--png")
    args = p.parse_args()
    run(args) if args.cmd == "run" else angle(args)


if __name__ == "__main__":
    main()
