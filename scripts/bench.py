#!/usr/bin/env python3
"""Benchmark sphsim: time per step split by stage, particle-steps per second and device bytes
per particle, for standard scenes over a range of particle counts.

Each case writes a scene to a temporary folder, runs `sphsim --profile --stats` for a fixed
number of steps (a snapshot at the start and at the end only), or with --until T to simulated
time T (a developed flow: the first steps of a dam break, where the column has not moved yet,
keep the neighbour lists longest and flatter the figure), and reads the JSON summary:
stage times come from OpenCL profiling events (kernel time on the device), throughput from
the wall clock minus the time spent writing snapshots. Prints a table, writes CSV and a PNG
plot of time per step against N.

    scripts/bench.py                      # CPU sizes (1e4 .. 1e6), all scenes
    scripts/bench.py --sizes 1e5,1e6,1e7 --device gpu --out bench-h200
    scripts/bench.py --scenes dam_break_3d --sizes 1e7 --until 0.6 --device gpu   # developed flow

With --until, the time per step is also printed for each window of about 0.05 s of simulated
time (from sphsim's progress lines, one every 2 s of wall time; windows shorter than that are
merged), so that the phases of the flow can be told apart; the last window also holds the
write of the end snapshot, which the table's wall time leaves out.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# kernel name -> stage
STAGES = [
    ("keys", ("grid_keys",)),
    ("sort", ("sort_",)),
    ("cell_table", ("cell_table",)),
    ("reorder", ("grid_gather",)),
    ("lists", ("nlist_",)),  # the decision, the wet cells, the check, the build apart (GPUs)
    ("density", ("sph_density", "sph_boundary")),
    ("forces+integrate", ("sph_forces",)),
    ("contacts", ("contact_resolve", "contact_integrate")),
]
# kernels that only run at snapshots (not part of a step)
SNAPSHOT_ONLY = ("sph_pressure", "contact_pairs", "contact_degree", "grid_count_neighbours", "snapshot_copy")


def stage_of(kernel):
    for stage, prefixes in STAGES:
        if any(kernel.startswith(p) for p in prefixes):
            return stage
    return None if kernel.startswith(SNAPSHOT_ONLY) else "other"


def scene_dam_break_3d(n):
    # column 0.4 x 0.6 x 0.4 in a 1.6 x 0.6 x 0.8 tank (fluid volume 0.096 m^3)
    return {"format": 1, "name": "bench_dam_break_3d", "dimensions": 3, "mode": "sph",
            "tank": {"min": [0, 0, 0], "max": [1.6, 0.6, 0.8]}, "gravity": [0, 0, -9.81],
            "fluid": {"blocks": [{"min": [0, 0, 0], "max": [0.4, 0.6, 0.4]}], "particle_count": int(n),
                      "kernel": "wendland", "eos": {"type": "tait"}, "viscosity": {"type": "artificial", "alpha": 0.02},
                      },
            "time": {"end": 1.0}}


def scene_dam_break_2d(n):
    return {"format": 1, "name": "bench_dam_break_2d", "dimensions": 2, "mode": "sph",
            "tank": {"min": [0, 0], "max": [1.5, 0.75]}, "gravity": [0, -9.81],
            "fluid": {"blocks": [{"min": [0, 0], "max": [0.25, 0.5]}], "particle_count": int(n),
                      "kernel": "wendland", "eos": {"type": "tait"}, "viscosity": {"type": "artificial", "alpha": 0.02}},
            "time": {"end": 1.0}}


def scene_spheres_3d(n):
    # spheres on a lattice in a cube, a quarter of the tank height, falling
    r = 0.005
    pitch = 2.02 * r
    side = math.ceil((n / 4) ** (1 / 3)) + 1
    w = side * pitch + 2 * r
    return {"format": 1, "name": "bench_spheres_3d", "dimensions": 3, "mode": "particles",
            "tank": {"min": [0, 0, 0], "max": [w, w, 4.2 * side * pitch]}, "gravity": [0, 0, -9.81],
            "spheres": {"groups": [{"count": int(n), "radius": r, "density": 2500,
                                    "region": {"min": [0, 0, 0], "max": [w, w, 4.2 * side * pitch]},
                                    "placement": "lattice", "velocity_jitter": 0.05}],
                        "restitution": 0.5, "iterations": 4},
            "time": {"end": 1.0}}


SCENES = {"dam_break_3d": scene_dam_break_3d, "dam_break_2d": scene_dam_break_2d, "spheres_3d": scene_spheres_3d}


def run_case(args, name, n, tmp):
    scene = SCENES[name](n)
    path = os.path.join(tmp, f"{name}_{int(n)}.json")
    with open(path, "w") as f:
        json.dump(scene, f)
    out = os.path.join(tmp, f"{name}_{int(n)}.h5")
    base = [args.sphsim, path] + sum((["--set", kv] for kv in args.set), [])
    check = subprocess.run(base + ["--check"], capture_output=True, text=True)
    if check.returncode != 0:
        return {"scene": name, "target_n": int(n), "error": check.stderr.strip()}
    info = json.loads(check.stdout.strip().splitlines()[-1])["check"]
    # the scene's own (CFL) time step, or the developed flow's end time
    end = args.until if args.until else args.steps * info["dt_s"]
    cmd = base + ["--set", f"time.end={end:.10g}", "--set", f"output.interval={end:.10g}", "-o", out, "--overwrite",
                  "--profile", "--stats"] + (["--progress=json"] if args.until else ["--progress=none", "--quiet"])
    if args.device:
        cmd += ["--device", args.device]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        summary = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"scene": name, "target_n": int(n), "error": (p.stderr or p.stdout).strip()[-400:]}
    if os.path.exists(out):
        os.remove(out)
        xmf = out[:-3] + ".xmf"
        if os.path.exists(xmf):
            os.remove(xmf)
    if summary.get("status") != "ok":
        return {"scene": name, "target_n": int(n), "error": summary.get("error", "failed")}
    npart = summary["particles"]
    row = {"scene": name, "target_n": int(n), "N": npart, "N_fluid": info.get("fluid_particles", 0),
           "steps": summary["steps"],
           "neighbours": summary.get("mean_neighbours", float("nan")),
           "candidates": summary.get("mean_candidates", float("nan")),
           # device memory, with the neighbour lists when the run used them
           "device_bytes_per_particle": (info["estimated_device_bytes"] + (
               info.get("estimated_list_bytes", 0) if summary.get("neighbour_lists") else 0)) / max(npart, 1),
           "list_rebuilds": summary.get("list_rebuilds", 0),
           # steps that ran the relative-motion check, and that kept the lists without it
           "list_checks": summary.get("list_checks", 0),
           "list_checks_skipped": summary.get("list_checks_skipped", 0),
           "device": summary["device"]}
    stage_s = {s: 0.0 for s, _ in STAGES}
    stage_s["other"] = 0.0
    for k, sec in summary.get("profile_s", {}).items():
        s = stage_of(k)
        if s:
            stage_s[s] += sec
    # the grid and the density pass also run once more at the end-of-run snapshot (steps + 1
    # grid builds); every other stage once per step
    builds = summary["steps"] + 1

    def runs(stage):
        return builds if stage in ("keys", "sort", "cell_table", "reorder", "lists", "density") else max(summary["steps"], 1)

    per_step = 0.0
    for s, sec in stage_s.items():
        row[f"ms_{s}"] = 1e3 * sec / runs(s)
        per_step += sec / runs(s)
    row["ms_step_kernels"] = 1e3 * per_step
    # every kernel on its own, ms per step (the stages above add some of them up)
    row["kernels_ms"] = {k: round(1e3 * sec / runs(stage_of(k)), 4) for k, sec in summary.get("profile_s", {}).items()}
    # the device's gaps between timed commands over the timed steps, under the command after
    # each (the host's reads of the rebuild decision, launches), ms per step
    timed = max(summary.get("steps_timed", 0), 1)
    row["idle_ms"] = {k: round(1e3 * sec / timed, 4) for k, sec in summary.get("idle_s", {}).items()}
    row["ms_idle"] = sum(row["idle_ms"].values())
    # host time of the steps alone: sphsim --profile times them from the first snapshot's copies
    # done to the last step done (older binaries: the whole loop minus the time on snapshots)
    if summary.get("steps_timed", 0) > 0:
        wall, nwall = summary["steps_s"], summary["steps_timed"]
    else:
        wall, nwall = summary["wall_time_s"] - summary.get("output_s", 0.0), max(summary["steps"], 1)
    row["ms_step_wall"] = 1e3 * wall / nwall
    row["particle_steps_per_s"] = npart * nwall / wall if wall > 0 else float("nan")
    row["ms_per_step_per_million"] = row["ms_step_wall"] / (npart / 1e6)
    row["ms_per_step_per_million_fluid"] = row["ms_step_wall"] / (row["N_fluid"] / 1e6) if row["N_fluid"] else float("nan")
    if args.until:
        row["windows"] = progress_windows(p.stderr)
    return row


def progress_windows(log, span=0.05):
    """(t0, t1, steps, ms per step) over windows of at least `span` s of simulated time, from
    sphsim's --progress=json lines (elapsed_s: the wall time since the steps began; older
    binaries give only steps_per_s, the mean since the start, so that the wall time at a line is
    step / steps_per_s)."""
    pts = []
    for line in log.splitlines():
        if line.startswith('{"progress"'):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if "elapsed_s" in d:
                pts.append((d["time"], d["step"], d["elapsed_s"]))
            elif d.get("steps_per_s", 0) > 0:
                pts.append((d["time"], d["step"], d["step"] / d["steps_per_s"]))
    out = []
    if not pts:
        return out
    a = pts[0]
    for b in pts[1:]:
        if (b[0] - a[0] >= span or b is pts[-1]) and b[1] > a[1]:
            out.append((a[0], b[0], b[1] - a[1], 1e3 * (b[2] - a[2]) / (b[1] - a[1])))
            a = b
    return out


def solve(a, b):
    """x with a x = b (a small square system, Gaussian elimination with partial pivoting)."""
    m = [row[:] + [v] for row, v in zip(a, b)]
    k = len(m)
    tol = 1e-10 * max(abs(x) for row in a for x in row)  # a pivot below this: (nearly) singular
    for c in range(k):
        piv = max(range(c, k), key=lambda r: abs(m[r][c]))
        if not abs(m[piv][c]) > tol:
            return None
        m[c], m[piv] = m[piv], m[c]
        for r in range(k):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[r][k] / m[r][r] for r in range(k)]


def linear_model(rows):
    """Least-squares fit (in ms, so the largest sizes weigh most) of the wall time per step to
    t0 + a N_fluid + b N_walls (N in millions), and each row's residual, measured / model - 1
    (positive: slower than the model): a resolution sweep of one scene changes the share of
    walls, so ms per million of all particles drifts with N even when each kind costs the same
    per particle. A scene without fluid, or without walls, fits t0 + b N. None below 4 rows, or
    when the counts cannot tell the terms apart (walls a fixed share of the fluid, say)."""
    if len(rows) < 4:
        return None
    xs = [[1.0, r["N_fluid"] / 1e6, (r["N"] - r["N_fluid"]) / 1e6] for r in rows]
    for col in (1, 2):
        if all(x[col] == 0.0 for x in xs):  # one kind of particle only
            xs = [[x[0], x[3 - col]] for x in xs]
            break
    k = len(xs[0])
    ata = [[sum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    aty = [sum(x[i] * r["ms_step_wall"] for x, r in zip(xs, rows)) for i in range(k)]
    c = solve(ata, aty)
    if c is None:
        return None
    res = [r["ms_step_wall"] / sum(ci * xi for ci, xi in zip(c, x)) - 1.0 for x, r in zip(xs, rows)]
    return c, res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sphsim", default=os.path.join(ROOT, "build", "sphsim"))
    ap.add_argument("--sizes", default="1e4,1e5,1e6", help="comma-separated target particle counts")
    ap.add_argument("--scenes", default=",".join(SCENES), help="comma-separated: " + ", ".join(SCENES))
    ap.add_argument("--steps", type=int, default=20, help="steps per case (default 20)")
    ap.add_argument("--until", type=float, default=None, metavar="T",
                    help="run each case to simulated time T (s) instead of --steps steps: a developed flow")
    ap.add_argument("--device", default=None, help="sphsim --device selector")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="extra scene override for every case (repeatable), e.g. grid.cell_ratio=0.5")
    ap.add_argument("--out", default="bench", help="prefix of the CSV and PNG written (default bench)")
    args = ap.parse_args()
    sizes = [float(s) for s in args.sizes.split(",") if s]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.scenes.split(","):
            for n in sizes:
                row = run_case(args, name, n, tmp)
                rows.append(row)
                if "error" in row:
                    print(f"{name} N~{int(n)}: FAILED: {row['error']}", file=sys.stderr, flush=True)
                else:
                    print(f"{name} N={row['N']}: {row['ms_step_wall']:.3f} ms/step, "
                          f"{row['particle_steps_per_s'] / 1e6:.2f} M particle-steps/s; kernels, ms per step: "
                          + ", ".join(f"{k} {v}" for k, v in row["kernels_ms"].items()), file=sys.stderr, flush=True)
                    if row["idle_ms"]:
                        print(f"  device idle {row['ms_idle']:.4f} ms per step, before: "
                              + ", ".join(f"{k} {v}" for k, v in sorted(row["idle_ms"].items(), key=lambda kv: -kv[1])),
                              file=sys.stderr, flush=True)
                    for t0, t1, k, ms in row.get("windows", []):
                        print(f"  t = {t0:.3f}-{t1:.3f} s: {k} steps, {ms:.3f} ms/step, "
                              f"{ms / (row['N'] / 1e6):.3f} ms/step per million", file=sys.stderr, flush=True)
    ok = [r for r in rows if "error" not in r]
    cols = ["scene", "N", "neighbours", "candidates"] + [f"ms_{s}" for s, _ in STAGES] + \
        ["ms_other", "ms_step_kernels", "ms_idle", "ms_step_wall", "ms_per_step_per_million", "N_fluid",
         "ms_per_step_per_million_fluid", "particle_steps_per_s",
         "device_bytes_per_particle", "list_rebuilds", "list_checks", "list_checks_skipped", "device"]
    if ok:
        with open(args.out + ".csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols + ["target_n", "steps"], extrasaction="ignore")
            w.writeheader()
            for r in ok:
                w.writerow(r)
        hdr = ("scene", "N", "nbrs", "cand", "keys", "sort", "table", "reord", "lists", "dens", "force", "contact",
               "kern ms", "wall ms", "ms/M", "Mpart-step/s", "B/part", "rebuilds")
        print(("{:<13}{:>11}" + "{:>7}" * 2 + "{:>8}" * 8 + "{:>9}{:>9}{:>9}{:>13}{:>7}{:>9}").format(*hdr))
        for r in ok:
            print(("{:<13}{:>11}" + "{:>7.1f}" * 2 + "{:>8.3f}" * 8 + "{:>9.3f}{:>9.3f}{:>9.3f}{:>13.2f}{:>7.0f}{:>9}").format(
                r["scene"], r["N"], r["neighbours"], r["candidates"], r["ms_keys"], r["ms_sort"], r["ms_cell_table"],
                r["ms_reorder"], r["ms_lists"], r["ms_density"], r["ms_forces+integrate"], r["ms_contacts"],
                r["ms_step_kernels"], r["ms_step_wall"], r["ms_per_step_per_million"], r["particle_steps_per_s"] / 1e6,
                r["device_bytes_per_particle"], r["list_rebuilds"]))
        for name in sorted({r["scene"] for r in ok}):
            rs = sorted((r for r in ok if r["scene"] == name), key=lambda r: r["N"])
            fit = linear_model(rs)
            if fit:
                c, res = fit
                terms = (f"{c[0]:.4f} ms + {c[1]:.4f} ms/M x N_fluid + {c[2]:.4f} ms/M x N_walls" if len(c) == 3
                         else f"{c[0]:.4f} ms + {c[1]:.4f} ms/M x N")
                print(f"{name}: linear model t = {terms}; measured against it "
                      + ", ".join(f"{r['N']}: {100 * e:+.1f} %" for r, e in zip(rs, res)))
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots(figsize=(6, 4.5))
            for name in sorted({r["scene"] for r in ok}):
                rs = sorted((r for r in ok if r["scene"] == name), key=lambda r: r["N"])
                ax.loglog([r["N"] for r in rs], [r["ms_step_wall"] for r in rs], "o-", label=name)
            ax.set_xlabel("particles N")
            ax.set_ylabel("time per step (ms)")
            ax.set_title(f"sphsim on {ok[0]['device']}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
            fig.tight_layout()
            fig.savefig(args.out + ".png", dpi=120)
        except ImportError:
            print("matplotlib missing: no plot", file=sys.stderr)
    return 0 if len(ok) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
