#!/usr/bin/env python3
"""density_study: the summation density against the integrated one with density diffusion
(fluid.density, docs/physics.md); writes docs/validation_density.md and its figure.

    python3 scripts/density_study.py                 # about 10 min on 2 CPU cores
    python3 scripts/density_study.py --device gpu
    python3 scripts/density_study.py --reuse         # redo the analysis from the kept runs

Cases (runs through scripts/validate.py's runner, analysed with h5py and scipy):
  hydrostatic_2d  scenes/hydrostatic_2d.json (0.5 m of water, dx = 1 cm, 2 s): summation, and
                  continuity with delta 0, 0.05, 0.1, 0.2; both at h = 2 dx too. Time-averaged pressure against
                  rho0 g (H - y), the bottom bin's pressure after settling, and the pressure noise:
                  the RMS over fluid particles of p_i minus the mean p of its neighbours within 2h,
                  over rho0 g H, averaged over the snapshots with t >= 1 s.
  dam_break_2d    scenes/dam_break_2d.json (a/dx = 50, alpha 0.02) to T = 3.5: summation and
                  continuity with delta 0.1. Surge front against Martin & Moyce (1952) and between
                  the two runs; the same pressure noise over rho0 g 2a, averaged over 0.5 <= T <= 3.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402

import plot_surge_front  # noqa: E402
import validate  # noqa: E402

CONT = "fluid.density.type=continuity"
HYDRO = [("summation", []),
         ("continuity, delta 0", [CONT, "fluid.density.diffusion=0"]),
         ("continuity, delta 0.05", [CONT, "fluid.density.diffusion=0.05"]),
         ("continuity, delta 0.1", [CONT, "fluid.density.diffusion=0.1"]),
         ("continuity, delta 0.2", [CONT, "fluid.density.diffusion=0.2"]),
         ("summation, h 2 dx", ["fluid.smoothing_length_factor=2", "fluid.boundary_layers=4"]),
         ("continuity, delta 0.1, h 2 dx",
          [CONT, "fluid.density.diffusion=0.1", "fluid.smoothing_length_factor=2", "fluid.boundary_layers=4"])]
DAM = [("summation", []), ("continuity, delta 0.1", [CONT, "fluid.density.diffusion=0.1"])]


def pressure_noise(snap, h, dims):
    """RMS over fluid particles of p_i minus the mean pressure of the fluid within 2h (i included), Pa."""
    f = snap["type"] == 0
    x = snap["positions"][f][:, :dims].astype(np.float64)
    p = snap["pressure"][f].astype(np.float64)
    nb = cKDTree(x).query_ball_point(x, 2.0 * h)
    local = np.array([p[idx].mean() for idx in nb])
    return float(np.sqrt(np.mean((p - local) ** 2)))


def hydro_case(ctx, scene):
    res = []
    for tag, sets in HYDRO:
        run, summary = ctx.run(f"density_hydrostatic_2d_{tag}", scene, sets)
        p = run.params
        H = 0.5
        rho0, g = float(p["rest_density"]), abs(float(np.asarray(p["gravity"])[1]))
        pb = rho0 * g * H
        yc, prof, times, p_bot, v_max, _ = validate.hydrostatic_analysis(run, H, 1, 1.0, 25)
        noise = [pressure_noise(run.snapshot(k), float(p["smoothing_length"]), 2) / pb
                 for k in range(len(run)) if run.snapshot(k)["time"] >= 1.0]
        late = times >= 1.0
        res.append(dict(tag=tag, n=summary.get("particles"), err=(prof - rho0 * g * (H - yc)) / pb,
                        swing=(p_bot[late].min() / pb, p_bot[late].max() / pb), times=times, p_bot=p_bot / pb,
                        noise=float(np.mean(noise)), v_late=float(v_max[late].max()), wall=ctx.runs[-1][3],
                        outside=validate.max_outside(run, p["tank_min"], p["tank_max"], 2)))
    return res


def dam_case(ctx, scene):
    res = []
    for tag, sets in DAM:
        run, summary = ctx.run(f"density_dam_break_2d_{tag}", scene, ["time.end=0.4"] + sets)
        p = run.params
        a, x_wall, direction = plot_surge_front.column_geometry(run)
        g = float(np.linalg.norm(np.asarray(p["gravity"], dtype=float)))
        rows = plot_surge_front.surge_front(run, a, x_wall, direction, g)
        dev, at, _ = plot_surge_front.deviation(rows, validate.T_RANGE)
        scale = float(p["rest_density"]) * g * 2.0 * a
        h = float(p["smoothing_length"])
        noise, snap_T2 = [], None
        for k in range(len(run)):
            s = run.snapshot(k)
            T = float(s["time"]) * np.sqrt(2.0 * g / a)
            if validate.T_RANGE[0] <= T <= validate.T_RANGE[1]:
                noise.append(pressure_noise(s, h, 2) / scale)
            if snap_T2 is None and T >= 2.0:
                snap_T2 = (T, s)
        res.append(dict(tag=tag, n=summary.get("particles"), rows=rows, dev=dev, at=at, a=a,
                        noise=float(np.mean(noise)), snap=snap_T2, scale=scale, wall=ctx.runs[-1][3],
                        outside=validate.max_outside(run, p["tank_min"], p["tank_max"], 2)))
    return res


def figure(ctx, hydro, dam):
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.6))
    for r in hydro:
        ax[0].plot(r["times"], r["p_bot"], label=f"{r['tag']}")
    ax[0].axhline(1.0, color="k", ls="--", lw=0.8)
    ax[0].set_xlabel("t (s)")
    ax[0].set_ylabel("mean p of the bottom bin / (ρ₀ g H)")
    ax[0].set_title("hydrostatic_2d: bottom pressure", fontsize=10)
    ax[0].legend(fontsize=7)
    ax[0].grid(alpha=0.3)
    for k, r in enumerate(dam):
        T, s = r["snap"]
        f = s["type"] == 0
        x = s["positions"][f]
        sc = ax[1 + k].scatter(x[:, 0], x[:, 1], c=s["pressure"][f] / r["scale"], s=1.5, cmap="viridis",
                               vmin=0.0, vmax=1.0)
        ax[1 + k].set_aspect("equal")
        ax[1 + k].set_xlim(0, 1.0)
        ax[1 + k].set_ylim(0, 0.5)
        ax[1 + k].set_title(f"dam_break_2d, {r['tag']}: p / (ρ₀ g 2a) at T = {T:.2f}", fontsize=10)
        fig.colorbar(sc, ax=ax[1 + k], shrink=0.7)
    fig.tight_layout()
    png = "validation_density.png"
    fig.savefig(os.path.join(ctx.docs, png), dpi=100)
    plt.close(fig)
    return png


def report(ctx, hydro, dam, png):
    L = []
    w = L.append
    w("# Summation and integrated density\n")
    w("Written by `scripts/density_study.py` (do not edit by hand; rerun it). The schemes are in "
      "[physics.md](physics.md), \"Integrated density and density diffusion\"; the one-step checks "
      "against the double-precision reference in `tests/test_sph.c` (`test_continuity_vs_reference`, "
      "`test_continuity_hydrostatic`).\n")
    dev = next((r[5] for r in ctx.runs if r[5]), "")
    w(f"Device: {dev}. Pressure noise: the RMS over fluid particles of p_i minus the mean pressure of "
      "the fluid within 2h, relative to ρ₀ g H (tank) or ρ₀ g 2a (dam break), averaged over the "
      "snapshots after settling (t ≥ 1 s) or over 0.5 ≤ T ≤ 3.\n")
    w(f"![density study]({png})\n")
    w("## hydrostatic_2d\n")
    w("| run | max \\|p − ρ₀g(H − y)\\| / ρ₀gH (time average, 25 bins) | bottom-bin p / ρ₀gH after "
      "settling (min … max) | pressure noise | max \\|v\\| after settling (m/s) | outside | wall time (s) |")
    w("|---|---|---|---|---|---|---|")
    for r in hydro:
        w(f"| {r['tag']} | {100 * np.abs(r['err']).max():.2f} % | {r['swing'][0]:.3f} … {r['swing'][1]:.3f} | "
          f"{100 * r['noise']:.2f} % | {r['v_late']:.3f} | {r['outside']} | {r['wall']:.0f} |")
    w("")
    w("## dam_break_2d (a/dx 50, α 0.02)\n")
    base = dam[0]["rows"]
    w("| run | max \\|Z − Z_MM\\| / Z_MM, 0.5 ≤ T ≤ 3 | at T | pressure noise | outside | wall time (s) |")
    w("|---|---|---|---|---|---|")
    for r in dam:
        w(f"| {r['tag']} | {100 * r['dev']:.1f} % | {r['at']:.2f} | {100 * r['noise']:.2f} % | {r['outside']} | "
          f"{r['wall']:.0f} |")
    w("")
    for r in dam[1:]:
        n = min(len(base), len(r["rows"]))
        diff = [abs(r["rows"][k][3] / base[k][3] - 1) for k in range(n)
                if validate.T_RANGE[0] <= base[k][1] <= validate.T_RANGE[1]]
        w(f"Front of {r['tag']} against the summation run, 0.5 ≤ T ≤ 3: at most {100 * max(diff):.1f} % apart.\n")
    w("## Runs\n")
    w("| case | command | particles | wall time (s) |")
    w("|---|---|---|---|")
    for label, cmd, n, wall, _, _ in ctx.runs:
        w(f"| {label} | `{cmd}` | {n} | {wall:.0f} |")
    w("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--sphsim", default=os.path.join(REPO, "build", "sphsim"))
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "sphsim-density"))
    ap.add_argument("--docs", default=os.path.join(REPO, "docs"))
    ap.add_argument("--device", default=None)
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args(argv)
    ctx = validate.Ctx(args)
    scenes = os.path.join(REPO, "scenes")
    t0 = time.time()
    hydro = hydro_case(ctx, os.path.join(scenes, "hydrostatic_2d.json"))
    dam = dam_case(ctx, os.path.join(scenes, "dam_break_2d.json"))
    png = figure(ctx, hydro, dam)
    path = os.path.join(args.docs, "validation_density.md")
    with open(path, "w") as f:
        f.write(report(ctx, hydro, dam, png))
    print(f"density_study: wrote {path} in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
