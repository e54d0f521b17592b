#!/usr/bin/env python3
"""validate: full-size physical validation of sphsim's SPH solver; writes docs/validation.md and
its figures (docs/validation_*.png).

    python3 scripts/validate.py                 # every case (about 20 min on 2 CPU cores)
    python3 scripts/validate.py --quick         # the cheaper cases only (about 5 min)
    python3 scripts/validate.py --only dam_break_2d,hydrostatic_2d --device gpu
    python3 scripts/validate.py --reuse         # redo the analysis and report from the kept runs

Cases (each a sphsim run of a scene in scenes/ or given here, then analysed with h5py):
  hydrostatic_2d   scenes/hydrostatic_2d.json (0.5 m of water, dx = 1 cm, 2 s), alpha 0.02 and 0.1:
                   time-averaged pressure against height vs rho0 g (H - y); the bottom pressure
                   over time; particles outside the tank.
  hydrostatic_3d   a 0.3 m cube of water (dx = 1.5 cm, 1 s): the same in 3D.
  dam_break_2d     scenes/dam_break_2d.json (a = 0.25 m, height 2a) to T = 3.5, alpha 0.02 and 0.1,
                   and a/dx = 20, 50, 100 at alpha 0.1: surge front Z = z/a against
                   T = t sqrt(2g/a) vs Martin & Moyce (1952); particles outside the tank.
  dam_break_poly6  scenes/poly6_dam_break_2d.json: the Mueller et al. 2003 scheme (poly6, linear EOS,
                   Laplacian viscosity) with mu = 3.5 Pa s (Mueller's value for water) and 0.5 Pa s
                   (too little: the scheme goes unstable), the same comparison.
  dam_break_3d     scenes/dam_break_3d.json at 12000 fluid particles (dx = 2 cm, a/dx = 20) to
                   T = 3.2, alpha 0.02 and 0.1: the column spans the tank's width, so the front is
                   compared with the same 2D experiment.

Every run's command line, particle count, wall time and the figures are recorded in the report.
Figures use matplotlib's Agg backend (no display needed).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import martin_moyce  # noqa: E402
import plot_surge_front  # noqa: E402
import sphsim_reader  # noqa: E402

G = 9.81
T_RANGE = (0.5, 3.0)
QUICK = {"hydrostatic_2d", "dam_break_2d_quick"}


class Ctx:
    def __init__(self, args):
        self.sphsim = args.sphsim
        self.work = args.work
        self.docs = args.docs
        self.device = args.device
        self.reuse = args.reuse
        self.runs = []      # (label, command, particles, wall time, summary)
        os.makedirs(self.work, exist_ok=True)
        os.makedirs(self.docs, exist_ok=True)

    def run(self, label, scene, sets=(), scene_dict=None):
        """Run sphsim on a scene file (or a dict written to the work folder); returns (run, summary)."""
        stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in label)
        if scene_dict is not None:
            scene = os.path.join(self.work, stem + ".json")
            with open(scene, "w") as f:
                json.dump(scene_dict, f, indent=1)
        out = os.path.join(self.work, stem + ".h5")
        cmd = [self.sphsim, scene, "-o", out, "--overwrite", "--quiet"]
        for s in sets:
            cmd += ["--set", s]
        if self.device:
            cmd += ["--device", self.device]
        shown = " ".join(["sphsim"] + [os.path.relpath(c, REPO) if os.path.isabs(c) and c.startswith(REPO) else c
                                       for c in cmd[1:]])
        side = os.path.join(self.work, stem + ".summary.json")
        if self.reuse and os.path.exists(out) and os.path.exists(side):
            with open(side) as f:
                summary = json.load(f)
            wall = summary.pop("validate_wall_s", float("nan"))
            print(f"validate: {label}: reusing {out}", file=sys.stderr, flush=True)
            self.runs.append((label, shown.replace(out, f"{stem}.h5").replace(self.work + "/", ""),
                              summary.get("particles"), wall, summary, summary.get("device", "")))
            return sphsim_reader.open_run(out), summary
        print(f"validate: {label}: {shown}", file=sys.stderr, flush=True)
        t0 = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - t0
        summary = {}
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                summary = json.loads(line)
        if proc.returncode != 0:
            raise SystemExit(f"validate: {label} failed ({proc.returncode}): {proc.stderr.strip()}")
        self.runs.append((label, shown.replace(out, f"{stem}.h5").replace(self.work + "/", ""),
                          summary.get("particles"), wall, summary, summary.get("device", "")))
        with open(side, "w") as f:
            json.dump(dict(summary, validate_wall_s=wall), f)
        print(f"validate: {label}: {summary.get('particles')} particles, {summary.get('steps')} steps, "
              f"{wall:.0f} s, outside {summary.get('particles_outside')}", file=sys.stderr, flush=True)
        return sphsim_reader.open_run(out), summary


def max_outside(run, tank_min, tank_max, dims):
    """Largest number of fluid particles outside the tank box in any snapshot."""
    worst = 0
    for k in range(len(run)):
        s = run.snapshot(k)
        x = s["positions"]
        out = np.zeros(len(x), dtype=bool)
        for a in range(dims):
            out |= (x[:, a] < tank_min[a]) | (x[:, a] > tank_max[a])
        worst = max(worst, int(np.count_nonzero(out & (s["type"] == 0))))
    return worst


# ------------------------------------------------------------------------------ hydrostatic

def hydrostatic_analysis(run, H, up, t_settle, nbins):
    """Time-averaged pressure in height bins (t >= t_settle), bottom pressure over time."""
    edges = np.linspace(0.0, H, nbins + 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    prof, times, p_bot, v_max = [], [], [], []
    last = None
    for k in range(len(run)):
        s = run.snapshot(k)
        f = s["type"] == 0
        y = s["positions"][f, up]
        p = s["pressure"][f]
        idx = np.clip(np.digitize(y, edges) - 1, 0, nbins - 1)
        times.append(float(s["time"]))
        p_bot.append(float(p[idx == 0].mean()))
        v_max.append(float(np.linalg.norm(s["velocity"][f], axis=1).max()))
        if s["time"] >= t_settle:
            prof.append([p[idx == b].mean() for b in range(nbins)])
        last = (y, p)
    return centres, np.mean(prof, axis=0), np.array(times), np.array(p_bot), np.array(v_max), last


def case_hydrostatic(ctx, dims, label, scene, scene_dict, sets_list, t_settle, nbins):
    results = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for tag, sets in sets_list:
        run, summary = ctx.run(f"{label}_{tag}", scene, sets, scene_dict)
        p = run.params
        up = dims - 1
        blocks = run.resolved["fluid"]["blocks"]
        H = max(b["max"][up] for b in blocks) - min(b["min"][up] for b in blocks)
        rho0 = float(p["rest_density"])
        g = abs(float(np.asarray(p["gravity"])[up]))
        pb = rho0 * g * H
        yc, prof, times, p_bot, v_max, (y, pl) = hydrostatic_analysis(run, H, up, t_settle, nbins)
        err = (prof - rho0 * g * (H - yc)) / pb
        outside = max_outside(run, p["tank_min"], p["tank_max"], dims)
        late = times >= t_settle
        res = dict(tag=tag, H=H, pb=pb, yc=yc, prof=prof, err=err, outside=outside,
                   summary=summary, swing=(p_bot[late].min() / pb, p_bot[late].max() / pb),
                   v_late=float(v_max[late].max()), n=summary.get("particles"))
        results.append(res)
        axes[0].plot(prof / pb, yc / H, "o-", ms=3, label=f"{tag}: time average t ≥ {t_settle:g} s")
        axes[1].plot(times, p_bot / pb, label=f"{tag}")
        if tag == sets_list[-1][0]:
            axes[0].plot(pl / pb, y / H, ",", color="0.6", label=f"{tag}: every particle at t = {times[-1]:g} s")
    axes[0].plot(1 - np.linspace(0, 1, 11), np.linspace(0, 1, 11), "k--", label="ρ₀ g (H − y)")
    axes[0].set_xlabel("p / (ρ₀ g H)")
    axes[0].set_ylabel("y / H")
    axes[0].legend(fontsize=8)
    axes[0].grid(alpha=0.3)
    axes[1].axhline(1.0, color="k", ls="--", lw=0.8)
    axes[1].set_xlabel("t (s)")
    axes[1].set_ylabel("mean p of the bottom bin / (ρ₀ g H)")
    axes[1].legend(fontsize=8)
    axes[1].grid(alpha=0.3)
    fig.suptitle(f"{label}: hydrostatic pressure")
    fig.tight_layout()
    png = f"validation_{label}.png"
    fig.savefig(os.path.join(ctx.docs, png), dpi=100)
    plt.close(fig)
    return dict(kind="hydrostatic", label=label, png=png, results=results, t_settle=t_settle, dims=dims)


# ------------------------------------------------------------------------------ dam break

def case_dam_break(ctx, label, scene, variants, title):
    rows_all = []
    fig, ax = plt.subplots(figsize=(7, 5))
    T_mm, Z_mm = martin_moyce.surge_front()
    ax.plot(T_mm, Z_mm, "ks", ms=5, label="Martin & Moyce (1952), a = 2.25 in, n² = 2")
    for tag, sets in variants:
        run, summary = ctx.run(f"{label}_{tag}", scene, sets)
        p = run.params
        dims = run.dimensions
        a, x_wall, direction = plot_surge_front.column_geometry(run)
        g = float(np.linalg.norm(np.asarray(p["gravity"], dtype=float)))
        rows = plot_surge_front.surge_front(run, a, x_wall, direction, g)
        dev, at, n = plot_surge_front.deviation(rows, T_RANGE)
        late = [abs(r[3] / martin_moyce.interpolate_z(r[1]) - 1) for r in rows if 2.0 <= r[1] <= T_RANGE[1]]
        outside = max_outside(run, p["tank_min"], p["tank_max"], dims)
        dx = float(p["spacing"])
        T = np.array([r[1] for r in rows])
        Z = np.array([r[3] for r in rows])
        ax.plot(T, Z, "-", label=f"{tag} (max dev. {100 * dev:.1f} %)")
        rows_all.append(dict(tag=tag, a=a, dx=dx, dev=dev, at=at, n=n, late=max(late) if late else float("nan"),
                             outside=outside, summary=summary, rows=rows, sets=sets))
    ax.axvspan(*T_RANGE, color="0.92", zorder=0)
    ax.set_xlim(0, 3.6)
    ax.set_ylim(0.9, 5.0)
    ax.set_xlabel("T = t √(2g/a)")
    ax.set_ylabel("Z = z / a")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    png = f"validation_{label}.png"
    fig.savefig(os.path.join(ctx.docs, png), dpi=100)
    plt.close(fig)
    return dict(kind="dam", label=label, png=png, results=rows_all, title=title)


# ------------------------------------------------------------------------------ report

FINDINGS = """### Reading these results

* **Walls do not leak.** No fluid particle left the tank in any run (counted over every
  snapshot, wall put-backs included), not even in the Müller-scheme run with too little
  viscosity, μ = 0.5 Pa s, which goes unstable (below) and throws droplets at the walls at
  10–14 m/s. (With the earlier Lennard-Jones wall repulsion one of those droplets got through;
  the face barrier of [physics.md](physics.md) stops them.)
* **Hydrostatics.** Once settled, the time-averaged pressure follows ρ₀ g (H − y) within 1.6–3.4 %
  of the bottom pressure, in 2D and 3D. The error grows with depth: the SPH pressure gradient on a
  lattice at h = 1.3 Δx is off by about 1 % (the first-moment column of the kernel table in
  [physics.md](physics.md)) and the fluid next to the floor is slightly over-compressed. The
  column keeps ringing at its acoustic period 4H/c₀ (0.064 s for the 2D tank) with a slowly
  decaying amplitude; the right-hand plots sample it once per output interval, which aliases that
  period into the slower beat seen there. α = 0.1 damps it faster than α = 0.02 (compare the
  bottom-pressure ranges).
* **2D dam break.** From T ≈ 2 on, every stable run follows the experiment within the 10 %
  criterion (2.5–9.8 %). Before that every run is ahead of it, by 9–17 % near T ≈ 1.1–1.25, and the lead
  grows with resolution (α = 0.1: 9.3 %, 13.1 %, 14.9 % at a/Δx = 20, 50, 100) instead of
  shrinking: the converged, nearly inviscid solution is ahead of Martin & Moyce's early points.
  We read this as the experiment's release transient (the barrier is not removed instantly, and
  the thin leading edge of a 5.7 cm column feels friction and surface tension that the simulation
  does not model); SPH studies commonly report the simulated front ahead of dam-break experiments
  (e.g. Jonsson, Jonsén, Andreasson, Lundström & Hellström 2015, "Modelling dam break evolution
  over a wet bed with SPH: a parameter study", Engineering 7(5)). Only enough numerical dissipation meets 10 %
  near T ≈ 1.15: α = 0.1 at a/Δx = 20, the configuration of the CI test
  `tests/python/test_sph_validation.py`. At a/Δx ≥ 50 no setting we tried meets it there.
* **Müller et al. 2003 scheme** (poly6 density, spiky pressure gradient, linear EOS, Laplacian
  viscosity). With μ = 3.5 Pa s, the value Müller et al. give for water, it behaves like the
  weakly compressible scheme: 9.9–10.3 % ahead near T ≈ 1.1, right at the criterion's edge (it
  passed in one run and failed by 0.3 % in the next, after a change at the level of float rounding),
  and within 2.8–3.4 % for T ≥ 2. With
  μ = 0.5 Pa s it is unstable (physics.md, "Stability of the poly6 scheme").
* **3D dam break** (the column spans the tank's 0.6 m width, a/Δx = 20). α = 0.02 matches the 2D
  picture (13 % ahead near T ≈ 1.2, within 5.5–5.7 % for T ≥ 2). With α = 0.1 the front falls behind
  late (−13 % at T ≈ 2.9): the artificial viscosity against the side walls (v_w = 0) acts as wall
  friction over the whole depth of the channel.
* **Integrated density.** These runs use the summation density (the default). The integrated
  density with density diffusion (`fluid.density.type` `"continuity"`) is compared with it in
  [validation_density.md](validation_density.md): in the 2D tank the pressure noise falls from
  2.8 % to 0.4 % of ρ₀ g H and the bottom pressure swings less (0.992–1.023 against
  0.971–1.044), in the dam break the noise falls from 8.9 % to 1.7 % with the front within 2.7 %
  of the summation run's; the time-averaged profile keeps its 2.7 % at h = 1.3 Δx (the pressure
  gradient's discretisation) and is within 0.51 % at h = 2 Δx.
* **Defaults.** Wendland C2, h = 1.3 Δx, Tait with γ = 7 and c₀ = 10 √(2 g H) validate well.
  α = 0.1 is better in 2D (settling, early front) and worse in 3D channels; α = 0.02 is kept as
  the default. Müller-scheme scenes need μ ≳ 3.5 Pa s.
"""


# Recorded by hand from scripts/spheric_test2.py and scenes/tank_cylinder_region_3d.json runs (not rerun here);
# kept in the report so that a rerun of this script does not drop them.
RECORDED = """## SPHERIC Test 2: dam break onto a box, against the experiment

Not run by `scripts/validate.py`: measured with `scripts/spheric_test2.py` on the runs listed
below, whose numbers are recorded here by hand.

The MARIN experiment of SPHERIC benchmark Test 2 (K. M. T. Kleefsman, G. Fekken, A. E. P.
Veldman, B. Iwanowski, B. Buchner, "A Volume-of-Fluid based simulation method for wave impact
problems", J. Comput. Phys. 206 (2005) 363–393, doi:10.1016/j.jcp.2004.12.007; R. Issa,
D. Violeau, "Test-case 2: 3D dambreaking", ERCOFTAC SPHERIC SIG, release 1.1, March 2006): a
1.228 × 1 × 0.55 m water column released at t = 0 at the end of a 3.22 × 1 × 1 m tank runs onto a
0.161 × 0.403 × 0.161 m box; four wave probes H1–H4 and eight pressure sensors P1–P8 on the box
were sampled every 1 ms. `scenes/dam_break_obstacle_3d.json` has that geometry (the box centred
across the tank; in the experiment it stood 3.5 mm off the centre line) and gauges at the
benchmark's positions: H2 at x = 0.992 m and H4 at x = 2.638 m (in the column) on the centre line
y = 0.5 m, P1 on the box's face towards the water at (0.8245, 0.5, 0.021) m, and the other
probes and sensors (scene-format.md, "Ready scenes"). These are the positions the Lethe and
AQUAgpusph examples of this test use (AQUAgpusph's probes stand 3.2 cm nearer the far wall).

**The data** are not in this repository. SPHERIC distributes them at
<https://www.spheric-sph.org/tests/test-02> (a zip with the spreadsheet
`test_case_2_exp_data.xls` and the description `test_case_2_v1p1.pdf`). The same series as
whitespace-separated text (a header `Time (s) P1 (Pa) ... P8 (Pa) H1 (m) ... H4 (m)`, 7 396 rows,
0–7.39 s) ship with the AQUAgpusph example of the test, which is what was used here:

```sh
mkdir -p ~/data/spheric_test2 && cd ~/data/spheric_test2
curl -LO https://raw.githubusercontent.com/sanguinariojoe/aquagpusph/8f61634796cb129ef5f976fa7b1d248cb3c87bee/examples/3D/spheric_testcase2_dambreak/src/templates/test_case_2_exp_data.dat
sha256sum test_case_2_exp_data.dat   # 427f4f3952b0dfccbf8c2687148fdc83b3b9579421805935f4e872a5bbe6403e
```

(The Lethe example `examples/multiphysics/3d-dam-break/experimental_data.txt` of
chaos-polymtl/lethe has the same water heights without the pressures.) In the file the columns
H1 and H3 are in the reverse order of the probes' positions: the column H1 wets first, at
0.22 s, so it is the probe nearest the column, at x = 1.488 m, and the Lethe example swaps them
for its plots. H2 and H4, compared here, are not affected.

**Commands** (PoCL on 2 cores of an AMD EPYC shared with other work; the GPU run at a finer
spacing is still to be made, the same way with `--set fluid.spacing=...`):

```sh
build/sphsim scenes/dam_break_obstacle_3d.json -o spheric_dx020.h5 --set fluid.spacing=0.02 --set output.interval=0.1
build/sphsim scenes/dam_break_obstacle_3d.json -o spheric_dx040.h5 --set output.interval=0.1
build/sphsim scenes/dam_break_obstacle_3d.json -o spheric_dx040_cont.h5 --set output.interval=0.1 --set fluid.density.type=continuity
python3 scripts/spheric_test2.py spheric_dx020.h5 --data ~/data/spheric_test2 --until 1 --png docs/validation_spheric_test2.png
python3 scripts/spheric_test2.py spheric_dx040.h5 --data ~/data/spheric_test2 --until 2
```

The run at Δx = 2 cm (82 350 fluid and 122 436 boundary particles) was stopped at t = 1.035 s
after 43 min (about 70 min would have reached 2 s); the runs at Δx = 4 cm (9 750 + 32 822) went
to 2 s in 1.7 min (summation density) and 10 min (continuity, sharing the cores).

![SPHERIC test 2, dx = 2 cm](validation_spheric_test2.png)

| run | signal | RMS difference | mean difference | front arrival, exp / sim (s) | first peak, exp / sim | its time, exp / sim (s) |
|---|---|---|---|---|---|---|
| Δx 2 cm, 0–1 s | H2 | 0.145 m | +0.045 m | 0.367 / 0.391 | 0.127 / 0.752 m | 0.667 / 0.688 |
| Δx 2 cm, 0–1 s | H4 | 0.0034 m | +0.0006 m | – | – | – |
| Δx 2 cm, 0–1 s | P1 | 4 523 Pa | −1 237 Pa | 0.393 / 0.437 | 11 239 / 88 235 Pa | 0.415 / 0.440 |
| Δx 4 cm, 0–2 s | H2 | 0.125 m | +0.048 m | 0.367 / 0.412 | 0.127 / 0.451 m | 0.667 / 0.593 |
| Δx 4 cm, 0–2 s | H4 | 0.0135 m | −0.0078 m | – | – | – |
| Δx 4 cm, 0–2 s | P1 | 3 542 Pa | −1 740 Pa | 0.393 / 0.461 | 11 239 / 49 267 Pa | 0.415 / 0.470 |
| Δx 4 cm continuity, 0–2 s | H2 | 0.062 m | +0.004 m | 0.367 / 0.418 | 0.127 / 0.328 m | 0.667 / 0.717 |
| Δx 4 cm continuity, 0–2 s | H4 | 0.0153 m | −0.0106 m | – | – | – |
| Δx 4 cm continuity, 0–2 s | P1 | 4 581 Pa | −1 150 Pa | 0.393 / 0.450 | 11 239 / 71 644 Pa | 0.415 / 0.462 |

The arrival is the first time a signal passes 0.02 m or 1 000 Pa; the first peak is the largest
value within 0.3 s after it (for H2, whose level rises slowly, simply its largest value then).

* **H4, the column draining**, follows the experiment within 3.4 mm RMS at Δx = 2 cm over the
  first second (13.5 mm at 4 cm, whose column starts 2 cm low: the gauge's surface is where the
  kernel sum of the fluid falls to ½, which sits lower at a coarser spacing).
* **H2, in front of the box,** rises 24 ms after the measured front at 2 cm (45 ms at 4 cm), and
  follows the measured level within 4.4 mm (median) and 10 mm RMS at 2 cm, except in the 13 % of
  the time when the gauge reads a splash: the water running up the box's face falls back as a
  sheet over the probe's line, and the gauge takes the highest point where a kernel is half full
  of fluid (physics.md, "Gauges"), up to 0.75 m, where the experiment's wave probe measured the
  water layer below. Those intervals make the RMS of 0.145 m. With the integrated density
  (4 cm) the level is smoother and the RMS halves (0.062 m over 2 s).
* **P1** is where the runs are furthest from the experiment. The front reaches the box 44 ms
  (2 cm) to 68 ms (4 cm) late, and the impact comes as one spike of 88 kPa (2 cm; 49 kPa at 4 cm)
  instead of the measured rise to 11.2 kPa, followed by shorter spikes and, between them,
  pressures below the measured 4–9 kPa (mean over 0.5–1 s 2.6 kPa against 4.1 kPa at 2 cm; the
  impulse over 0.35–0.6 s 554 against 1 418 Pa s). The sensor, 2.1 cm above the floor on the
  box's face, lies about a spacing from two walls, where the summation density of a thin, fast
  layer misses mass and its pressure is weakest; the integrated density with diffusion brings the
  impulse to 974 Pa s at 4 cm. Resolving the impact needs the finer GPU run, whose numbers are to
  be added here.

## tank_cylinder_region_3d: a mesh tank filled by a region, at rest

Not run by `scripts/validate.py`: `build/sphsim scenes/tank_cylinder_region_3d.json -o
tank_region.h5` (255 s on 2 PoCL cores shared with another run), analysed by hand. The
cylindrical STL tank (64 sides, circumradius 0.3 m) is filled by `{"fill": "container",
"below": 0.3}` around a 0.1 m square pillar standing on its floor, Δx = 2 cm (9 180 fluid
particles), α = 0.1, 1 s from the hydrostatic start. No particle left the tank; after 0.5 s the
fastest particle moves at 0.098 m/s.

* **The level settles at 0.274 m** (the height gauge at x = 0.15 m, mean over 0.5–1 s,
  σ = 1.9 mm), not at the region's 0.30 m: lattice points keep half a spacing from every
  surface, and the tank's curved wall and the pillar's faces, which lie between lattice planes
  here, leave gaps of up to a spacing between the fluid and the wall particles; the particles'
  volume n Δx³ fills the tank's cross-section up to 0.270 m, and the fluid closes the gaps as it
  settles. The gaps are of the order of a spacing, so the shortfall scales with Δx.
* **Against that level the pressure is hydrostatic:** the time-averaged pressure over t ≥ 0.5 s
  in 3 cm bins is ρ₀ g (h − z) within 1.3 % of ρ₀ g h from the floor to z = 0.21 m (−2.8 % in the
  bin at 0.255 m, at the surface); the floor gauge beside the pillar reads 0.965 ρ₀ g h.

"""

def report(ctx, cases, elapsed):
    L = []
    w = L.append
    w("# SPH validation\n")
    w("Written by `scripts/validate.py` (do not edit by hand; rerun it). The equations are in "
      "[physics.md](physics.md); the small, fast versions of these checks run in "
      "`tests/python/test_sph_validation.py`, and the unit and device checks (kernel normalisation, "
      "one step against a double-precision reference, conservation) in `tests/test_sph.c`.\n")
    dev = next((r[5] for r in ctx.runs if r[5]), "")
    w(f"Device: {dev}. sphsim wall time of all runs {sum(r[3] for r in ctx.runs) / 60:.1f} min.\n")
    w("## Summary\n")
    w("| case | run | criterion | result | fluid particles outside the tank |")
    w("|---|---|---|---|---|")
    for c in cases:
        for r in c["results"]:
            if c["kind"] == "hydrostatic":
                e = np.abs(r["err"]).max()
                w(f"| {c['label']} | {r['tag']} | time-averaged p within 5 % of ρ₀gH | {100 * e:.2f} % "
                  f"({'pass' if e < 0.05 else 'FAIL'}) | {r['outside']} |")
            else:
                w(f"| {c['label']} | {r['tag']} | Z within 10 % of Martin & Moyce, 0.5 ≤ T ≤ 3 | "
                  f"{100 * r['dev']:.1f} % at T = {r['at']:.2f} ({'pass' if r['dev'] < 0.10 else 'FAIL'}); "
                  f"{100 * r['late']:.1f} % for T ≥ 2 | {r['outside']} |")
    w("")
    w(FINDINGS)
    for c in cases:
        if c["kind"] == "hydrostatic":
            w(f"## {c['label']}: hydrostatic tank\n")
            r0 = c["results"][0]
            w(f"A {c['dims']}D water column of height H = {r0['H']:g} m at rest. Pressure averaged over the "
              f"snapshots with t ≥ {c['t_settle']:g} s in {len(r0['yc'])} height bins, against ρ₀ g (H − y); "
              f"errors are relative to the bottom pressure ρ₀ g H = {r0['pb']:.0f} Pa. The criterion is "
              f"5 %.\n")
            w(f"![{c['label']}]({c['png']})\n")
            w("| run | particles | max \\|p − ρ₀g(H − y)\\| / ρ₀gH | bottom-bin p / ρ₀gH after settling (min … max) "
              "| max \\|v\\| after settling (m/s) | fluid particles outside the tank |")
            w("|---|---|---|---|---|---|")
            for r in c["results"]:
                w(f"| {r['tag']} | {r['n']} | {100 * np.abs(r['err']).max():.2f} % | {r['swing'][0]:.3f} … "
                  f"{r['swing'][1]:.3f} | {r['v_late']:.3f} | {r['outside']} |")
            w("")
            w("Profile of the last run (time average):\n")
            w("| y (m) | p (Pa) | ρ₀ g (H − y) (Pa) | error / ρ₀gH |")
            w("|---|---|---|---|")
            r = c["results"][-1]
            expect = r["pb"] * (1 - r["yc"] / r["H"])
            for yc, pv, ev, er in zip(r["yc"], r["prof"], expect, r["err"]):
                w(f"| {yc:.3f} | {pv:.0f} | {ev:.0f} | {100 * er:+.2f} % |")
            w("")
        else:
            w(f"## {c['label']}: {c['title']}\n")
            w("Surge front z (the largest x of a fluid particle with at least two fluid neighbours within "
              "2 dx, plus dx/2; `scripts/plot_surge_front.py`) as Z = z/a against T = t √(2g/a), compared "
              "with Martin & Moyce (1952) interpolated at the same T over 0.5 ≤ T ≤ 3 (criterion: 10 %). "
              "The experimental points are digitised from the published figure (approximate, about "
              "±0.03 in T; `scripts/martin_moyce.py`).\n")
            w(f"![{c['label']}]({c['png']})\n")
            w("| run | a/dx | particles | max \\|Z − Z_MM\\| / Z_MM, 0.5 ≤ T ≤ 3 | at T | max for 2 ≤ T ≤ 3 "
              "| fluid particles outside the tank |")
            w("|---|---|---|---|---|---|---|")
            for r in c["results"]:
                w(f"| {r['tag']} | {r['a'] / r['dx']:.0f} | {r['summary'].get('particles')} | {100 * r['dev']:.1f} % | "
                  f"{r['at']:.2f} | {100 * r['late']:.1f} % | {r['outside']} |")
            w("")
            r = c["results"][0]
            w(f"Z against T for {r['tag']}:\n")
            w("| T | Z | Z (M&M) | deviation |")
            w("|---|---|---|---|")
            for _, T, _, Z in r["rows"][::4]:
                if T < 0.3 or T > 3.5:
                    continue
                zm = float(martin_moyce.interpolate_z(T)) if T <= 3.33 else float("nan")
                w(f"| {T:.2f} | {Z:.3f} | {zm:.3f} | {100 * (Z / zm - 1):+.1f} % |")
            w("")
    w(RECORDED)
    w("## Runs\n")
    w("| case | command | particles | wall time (s) |")
    w("|---|---|---|---|")
    for label, cmd, n, wall, _, _ in ctx.runs:
        w(f"| {label} | `{cmd}` | {n} | {wall:.0f} |")
    w("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sphsim", default=os.path.join(REPO, "build", "sphsim"))
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "sphsim-validate"),
                    help="folder for the runs' .h5 files (default $TMPDIR/sphsim-validate)")
    ap.add_argument("--docs", default=os.path.join(REPO, "docs"), help="where validation.md and figures go")
    ap.add_argument("--device", default=None, help="sphsim --device selector")
    ap.add_argument("--quick", action="store_true", help="only the cheaper cases")
    ap.add_argument("--only", default=None, help="comma-separated case names")
    ap.add_argument("--report", default="validation.md", help="report file name inside --docs")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse runs already in --work (with their .summary.json) instead of running them again")
    args = ap.parse_args(argv)
    ctx = Ctx(args)
    scenes = os.path.join(REPO, "scenes")
    t_dam = "time.end=0.4"  # T = 3.5 for a = 0.25 m
    cases = {
        "hydrostatic_2d": lambda: case_hydrostatic(
            ctx, 2, "hydrostatic_2d", os.path.join(scenes, "hydrostatic_2d.json"), None,
            [("alpha 0.02", ["fluid.viscosity.alpha=0.02"]), ("alpha 0.1", ["fluid.viscosity.alpha=0.1"])],
            1.0, 25),
        "hydrostatic_3d": lambda: case_hydrostatic(
            ctx, 3, "hydrostatic_3d", None, {
                "format": 1, "name": "hydrostatic_3d", "dimensions": 3,
                "tank": {"min": [0, 0, 0], "max": [0.3, 0.3, 0.4]}, "gravity": [0, 0, -9.81],
                "fluid": {"blocks": [{"min": [0, 0, 0], "max": [0.3, 0.3, 0.3]}], "spacing": 0.015},
                "time": {"end": 1.0}, "output": {"interval": 0.02}},
            [("alpha 0.1", ["fluid.viscosity.alpha=0.1"])], 0.5, 10),
        "dam_break_2d_quick": lambda: case_dam_break(
            ctx, "dam_break_2d_quick", os.path.join(scenes, "dam_break_2d.json"),
            [("alpha 0.02, a/dx 50", [t_dam, "fluid.viscosity.alpha=0.02"]),
             ("alpha 0.1, a/dx 50", [t_dam, "fluid.viscosity.alpha=0.1"])],
            "2D dam break (Wendland, Tait), a = 0.25 m"),
        "dam_break_2d": lambda: case_dam_break(
            ctx, "dam_break_2d", os.path.join(scenes, "dam_break_2d.json"),
            [("alpha 0.02, a/dx 50", [t_dam, "fluid.viscosity.alpha=0.02"]),
             ("alpha 0.1, a/dx 20", [t_dam, "fluid.viscosity.alpha=0.1", "fluid.spacing=0.0125"]),
             ("alpha 0.1, a/dx 50", [t_dam, "fluid.viscosity.alpha=0.1"]),
             ("alpha 0.1, a/dx 100", [t_dam, "fluid.viscosity.alpha=0.1", "fluid.spacing=0.0025"])],
            "2D dam break (Wendland, Tait), a = 0.25 m"),
        "dam_break_poly6": lambda: case_dam_break(
            ctx, "dam_break_poly6", os.path.join(scenes, "poly6_dam_break_2d.json"),
            [("mu 3.5 Pa s (Mueller 2003's water)", ["time.end=0.5", "fluid.viscosity.dynamic_viscosity=3.5"]),
             ("mu 0.5 Pa s", ["time.end=0.5", "fluid.viscosity.dynamic_viscosity=0.5"])],
            "2D dam break, Müller et al. 2003 scheme (poly6, linear, Laplacian)"),
        "dam_break_3d": lambda: case_dam_break(
            ctx, "dam_break_3d", os.path.join(scenes, "dam_break_3d.json"),
            [("3D, a/dx 20, alpha 0.02",
              ["time.end=0.45", "fluid.particle_count=12000", "fluid.viscosity.alpha=0.02", "output.interval=0.01"]),
             ("3D, a/dx 20, alpha 0.1",
              ["time.end=0.45", "fluid.particle_count=12000", "fluid.viscosity.alpha=0.1", "output.interval=0.01"])],
            "3D dam break across the tank (Wendland, Tait), a = 0.4 m"),
    }
    if args.only:
        names = args.only.split(",")
        unknown = [n for n in names if n not in cases]
        if unknown:
            ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(cases)}")
    elif args.quick:
        names = [n for n in cases if n in QUICK]
    else:
        names = [n for n in cases if n != "dam_break_2d_quick"]
    t0 = time.time()
    done = [cases[n]() for n in names]
    text = report(ctx, done, time.time() - t0)
    path = os.path.join(args.docs, args.report)
    with open(path, "w") as f:
        f.write(text)
    print(f"validate: wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
