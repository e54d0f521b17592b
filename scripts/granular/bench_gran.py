#!/usr/bin/env python3
"""bench_gran: sphsim against LAMMPS on LAMMPS's granular box, on this machine.

    python3 scripts/granular/bench_gran.py [--steps 20000] [--ranks 1,2] [--work DIR] [--same-dt]
                                           [--sphsim build/sphsim] [--device cpu] [--repeat 1]
                                           [--side 39]

The box (scripts/granular/in.gran): 39^3 = 59 319 spheres of diameter 1 (lj units: density 1)
on a simple cubic lattice of number density 0.7 (pitch 0.7^(-1/3) = 1.126), 40 lattice cells
wide, falling under gravity 1 onto the floor; LAMMPS runs gran/hooke (kn 2000, gamma_n 50,
mu 0.5) at dt 0.0005 for `--steps` steps on each number of MPI ranks of `--ranks`. sphsim runs
the same lattice in a tank of the same size (walls instead of the periodic sides: no sphere
reaches them), friction 0.5 and the restitution of LAMMPS's spring and damping between two
spheres (e = 0.39), 4 passes, for the same simulated time at its automatic time step (0.0131,
26 times LAMMPS's) and, with --same-dt, at LAMMPS's. Every run is timed from outside its loop as the program reports it: LAMMPS's
"Loop time", sphsim's steps (--profile: the first snapshot's copies done to the last step done).
Prints one JSON object: particle-steps per second of each run, sphsim's device bytes per sphere
and its kernels. --side N runs sphsim alone on the same lattice with N^3 spheres in a tank N + 1
pitches wide (a GPU needs 10^6 spheres and more to fill it: --side 100, 215); LAMMPS runs only the
39^3 box.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
N_SIDE, DENSITY_SC, DT_LAMMPS = 39, 0.7, 0.0005


def lammps(steps, ranks, work):
    lmp = shutil.which("lmp")
    if not lmp:
        sys.exit("bench_gran: LAMMPS (lmp) not found; Debian: apt-get install lammps")
    cmd = [lmp, "-in", os.path.join(HERE, "in.gran"), "-var", "steps", str(steps), "-log",
           os.path.join(work, "log.gran.%d" % ranks), "-screen", "none"]
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "-np", str(ranks)] + cmd
    subprocess.run(cmd, check=True)
    with open(os.path.join(work, "log.gran.%d" % ranks)) as f:
        log = f.read()
    m = re.search(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", log)
    t, n_steps, atoms = float(m.group(1)), int(m.group(3)), int(m.group(4))
    return {"ranks": ranks, "steps": n_steps, "loop_s": t, "particle_steps_per_s": atoms * n_steps / t,
            "simulated_time": n_steps * DT_LAMMPS}


def scene(t_end, dt=None, side=N_SIDE):
    pitch = DENSITY_SC ** (-1.0 / 3.0)
    L = (side + 1) * pitch
    lo = pitch - 0.5  # the first lattice site is at 1 pitch, as LAMMPS's "region atoms block 1 39"
    hi = lo + (side - 1) * pitch + 1.0 + 1e-6
    time = {"end": t_end, "cfl": 0.25}
    if dt:
        time["dt"] = dt
    return {"format": 1, "name": "gran_box", "dimensions": 3, "mode": "particles",
            "tank": {"min": [0, 0, 0], "max": [L, L, L]}, "gravity": [0, 0, -1],
            "spheres": {"groups": [{"count": side ** 3, "radius": 0.5, "density": 1.0, "placement": "lattice",
                                    "pitch": pitch, "region": {"min": [lo] * 3, "max": [hi] * 3}}],
                        "restitution": 0.39, "friction": 0.5, "iterations": 4},
            "time": time, "output": {"interval": t_end, "fields": ["position", "velocity"]}}


def sphsim(binary, device, t_end, dt, work, tag, side):
    path = os.path.join(work, "gran_%s.json" % tag)
    with open(path, "w") as f:
        json.dump(scene(t_end, dt, side), f, indent=1)
    cmd = [binary, path, "-o", os.path.join(work, "gran_%s.h5" % tag), "--overwrite", "--quiet", "--profile"]
    if device:
        cmd += ["--device", device]
    p = subprocess.run(cmd, check=True, capture_output=True, text=True)
    d = json.loads(p.stdout.strip().splitlines()[-1])
    prof = d.get("profile_s", {})
    total = sum(prof.values()) or 1.0
    return {"dt": d["simulated_time_s"] / d["steps"], "steps": d["steps"], "steps_s": d["steps_s"],
            "particle_steps_per_s": d["particles"] * d["steps_timed"] / d["steps_s"],
            "device_bytes_per_sphere": round(d["device_bytes"] / d["particles"], 2),
            "contact_cache": d.get("contact_cache", False),  # CPUs: its bytes are in the figure above
            "kernels_percent": {k: round(100 * v / total, 1) for k, v in sorted(prof.items(), key=lambda x: -x[1])
                                if 100 * v / total >= 0.5},
            "device": d["device"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20000, help="LAMMPS steps (the simulated time of every run)")
    p.add_argument("--ranks", default="1,2", help="LAMMPS MPI ranks to run, comma-separated ('' for none)")
    p.add_argument("--work", default="bench-gran")
    p.add_argument("--sphsim", default=os.path.join(ROOT, "build", "sphsim"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeat", type=int, default=1, help="runs of each; the fastest is reported")
    p.add_argument("--same-dt", action="store_true", help="also run sphsim at LAMMPS's time step")
    p.add_argument("--side", type=int, default=N_SIDE, help="sphsim's spheres per lattice side")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    t_end = args.steps * DT_LAMMPS
    if args.side != N_SIDE and args.ranks:
        p.error("--side other than %d runs sphsim alone: add --ranks ''" % N_SIDE)
    out = {"spheres": args.side ** 3, "simulated_time": t_end, "lammps": [], "sphsim": {}}
    best = lambda runs: max(runs, key=lambda r: r["particle_steps_per_s"])
    for r in [int(x) for x in args.ranks.split(",") if x]:
        out["lammps"].append(best([lammps(args.steps, r, args.work) for _ in range(args.repeat)]))
    out["sphsim"]["automatic_dt"] = best([sphsim(args.sphsim, args.device, t_end, None, args.work, "auto", args.side)
                                          for _ in range(args.repeat)])
    if args.same_dt:
        out["sphsim"]["lammps_dt"] = best([sphsim(args.sphsim, args.device, t_end, DT_LAMMPS, args.work, "dt", args.side)
                                           for _ in range(args.repeat)])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
