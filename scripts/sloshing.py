#!/usr/bin/env python3
"""sloshing: the first sloshing mode of a rectangular tank against linear theory
(docs/validation.md, "Sloshing").

    python3 scripts/sloshing.py free.h5                          # frequency of the free oscillation
    python3 scripts/sloshing.py free.h5 --png sloshing.png        # and a plot of the gauge
    python3 scripts/sloshing.py free.h5 --forced forced.h5 --png sloshing.png   # both runs in one figure
    python3 scripts/sloshing.py free.h5 --json                    # one JSON line (tests, sweeps)
    python3 scripts/sloshing.py free.h5 --forced forced.h5 --png docs/validation_sloshing.png \
        --doc docs/validation_sloshing.md                         # the validation page (validate.py
                                                                  # copies it into validation.md)

The water height of a `height` gauge (default: the first) is read from the file; the analysis
window starts `--settle` seconds (default 0.5) after the tank's last motion segment ends. The
frequency is measured twice:
  - zero crossings: the mean of the height over the window is taken off; the upward crossings,
    located by linear interpolation between samples, give the mean period over the whole
    number of periods between the first and the last;
  - spectrum: the peak of the windowed (Hann) FFT of the same signal, zero-padded 16 times,
    refined by a parabola through the log-magnitudes at the peak and its neighbours.
The reported frequency is the zero-crossing one (the spectrum's is a check). Theory: the first
mode of a tank of length L (along x) and depth h, omega^2 = g k tanh(k h), k = pi / L, with L
the tank's length, h the fluid's height (scene: fluid.blocks) and g = |gravity|.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sphsim_reader  # noqa: E402


def theory_frequency(length, depth, g):
    """f1 (Hz) of the first sloshing mode: omega^2 = g k tanh(k h), k = pi / L."""
    k = math.pi / length
    return math.sqrt(g * k * math.tanh(k * depth)) / (2.0 * math.pi)


def scene_geometry(run):
    """(L, h, g, t_motion_end) from the run's scene: the tank's length along x, the fluid's depth
    (highest block top minus lowest bottom along the vertical, the last axis), |g| and the end of
    the tank's last motion segment (0 without motion, the run's end for an endless one)."""
    sc = run.resolved or run.scene  # the resolved scene holds --set overrides
    dims = sc["dimensions"]
    up = dims - 1
    tank = sc["tank"]
    length = tank["max"][0] - tank["min"][0]
    blocks = sc["fluid"]["blocks"]
    depth = max(b["max"][up] for b in blocks) - min(b["min"][up] for b in blocks)
    gravity = sc.get("gravity", [0.0] * (dims - 1) + [-9.81])
    g = math.sqrt(sum(x * x for x in gravity))
    t_end = 0.0
    for seg in tank.get("motion", []):
        t_end = seg.get("end", math.inf)
    return length, depth, g, t_end


def zero_crossing_frequency(t, h):
    """Mean frequency (Hz) from the upward zero crossings of h - mean(h), and their count."""
    y = h - h.mean()
    up = np.nonzero((y[:-1] < 0.0) & (y[1:] >= 0.0))[0]
    if len(up) < 2:
        return float("nan"), len(up)
    tc = t[up] - y[up] * (t[up + 1] - t[up]) / (y[up + 1] - y[up])
    return (len(tc) - 1) / (tc[-1] - tc[0]), len(tc)


def spectrum_frequency(t, h):
    """The peak frequency (Hz) of the Hann-windowed, 16x zero-padded FFT of h - mean(h), refined by
    a parabola through the log-magnitudes around the peak."""
    dt = float(np.median(np.diff(t)))
    y = (h - h.mean()) * np.hanning(len(h))
    n = 16 * len(y)
    a = np.abs(np.fft.rfft(y, n))
    f = np.fft.rfftfreq(n, dt)
    k = int(np.argmax(a[1:])) + 1
    if 1 <= k < len(a) - 1:
        l0, l1, l2 = np.log(a[k - 1 : k + 2] + 1e-300)
        den = l0 - 2 * l1 + l2
        off = 0.5 * (l0 - l2) / den if den != 0 else 0.0
        return float(f[k] + off * (f[1] - f[0]))
    return float(f[k])


def analyse(path, gauge=None, settle=0.5):
    run = sphsim_reader.open_run(path)
    gauges = run.gauges()
    heights = [name for name, gg in gauges.items() if gg.columns == ["height"]]
    if not heights:
        raise SystemExit(f"{path}: no height gauge")
    name = gauge or heights[0]
    if name not in gauges:
        raise SystemExit(f"{path}: no gauge {name!r} (height gauges: {', '.join(heights)})")
    gg = gauges[name]
    t, h = np.asarray(gg.time), np.asarray(gg.values[:, 0])
    length, depth, g, t_motion = scene_geometry(run)
    t0 = (t_motion + settle) if math.isfinite(t_motion) else 0.0
    w = t >= t0
    f_zero, n_cross = zero_crossing_frequency(t[w], h[w]) if w.sum() > 3 else (float("nan"), 0)
    f_spec = spectrum_frequency(t[w], h[w]) if w.sum() > 8 else float("nan")
    f_th = theory_frequency(length, depth, g)
    return {
        "file": path,
        "gauge": name,
        "length_m": length,
        "depth_m": depth,
        "window_s": [float(t0), float(t[-1]) if len(t) else float("nan")],
        "crossings": n_cross,
        "f_theory_hz": f_th,
        "f_zero_crossings_hz": f_zero,
        "f_spectrum_hz": f_spec,
        "error_zero_crossings": f_zero / f_th - 1.0,
        "error_spectrum": f_spec / f_th - 1.0,
        "amplitude_m": float(0.5 * (h[w].max() - h[w].min())) if w.any() else float("nan"),
        "_series": (t, h, depth, t0),
    }


def plot(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(7.5, 2.6 * len(results) + 0.4), squeeze=False)
    for ax, (title, r) in zip(axes[:, 0], results):
        t, h, depth, t0 = r["_series"]
        ax.plot(t, (h - depth) * 1e3, lw=0.9, label=f"SPH, gauge {r['gauge']}")
        if title == "free":
            y0 = (h[t >= t0] - depth).mean() * 1e3
            amp = r["amplitude_m"] * 1e3
            tt = np.linspace(t0, t[-1], 2000)
            # the theory's period, phase-matched at the first upward crossing after t0
            y = h[t >= t0] - h[t >= t0].mean()
            ts = t[t >= t0]
            up = np.nonzero((y[:-1] < 0) & (y[1:] >= 0))[0]
            tc = ts[up[0]] if len(up) else t0
            ax.plot(tt, y0 + amp * np.sin(2 * np.pi * r["f_theory_hz"] * (tt - tc)), "k--", lw=0.8,
                    label=f"theory's period, f1 = {r['f_theory_hz']:.4f} Hz")
            ax.axvline(t0, color="0.6", lw=0.6)
            ax.set_title(f"free: f = {r['f_zero_crossings_hz']:.4f} Hz "
                         f"({100 * r['error_zero_crossings']:+.2f} % vs theory)", fontsize=9)
        else:
            ax.set_title(f"forced: {title}", fontsize=9)
        ax.set_ylabel("height - h (mm)")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def forced_growth(r):
    """The forced run's height amplitude (half the range) in each forcing period of the gauge:
    (period mid-times, amplitudes)."""
    t, h, _, _ = r["_series"]
    f = r["forcing_hz"]
    k = np.floor(t * f).astype(int)
    mids, amps = [], []
    for p in range(k.max() + 1):
        w = k == p
        if w.sum() > 4 and (p + 1) / f <= t[-1] + 1e-9:
            mids.append((p + 0.5) / f)
            amps.append(0.5 * (h[w].max() - h[w].min()))
    return np.array(mids), np.array(amps)


def markdown(r, rf, free_cmd, forced_cmd, png):
    """The validation section (docs/validation_sloshing.md)."""
    L = []
    w = L.append
    w("# Sloshing in a moving tank\n")
    w("Written by `scripts/sloshing.py --doc` (do not edit by hand; rerun it). The moving walls are in "
      "[physics.md](physics.md), \"Moving walls\"; the scenes' motion in "
      "[scene-format.md](scene-format.md#motion); the small, fast version of this check runs in "
      "`tests/python/test_motion.py` (`test_sloshing_first_mode_frequency`).\n")
    w(f"A 2D rectangular tank, L = {r['length_m']:g} m long, holds water {r['depth_m']:g} m deep. Linear theory "
      "gives its first sloshing mode ω₁² = g k tanh(k h), k = π/L: "
      f"**f₁ = {r['f_theory_hz']:.4f} Hz** (T₁ = {1 / r['f_theory_hz']:.4f} s).\n")
    w("* **Free oscillation** (`scenes/sloshing_2d.json`): the tank is pushed 2 cm along x in 0.5 s "
      "(a `sine` segment of amplitude 1 cm and phase −π/2 over half its period: it starts and stops "
      "at rest) and then held still. The `height` gauge 5 cm from the left wall (`h_left`) "
      f"records the free surface every 0.01 s. From {r['window_s'][0]:.1f} s (0.5 s after the push) "
      f"to {r['window_s'][1]:.1f} s the mean height is taken off and the frequency measured by the "
      "upward zero crossings (linear interpolation between samples, whole periods from the first "
      "crossing to the last), and checked by the peak of the Hann-windowed, zero-padded spectrum "
      "refined by a parabola through the log-magnitudes.")
    w("* **Forced near resonance** (`scenes/sloshing_forced_2d.json`): the tank is moved by "
      f"x = A (1 − cos 2π f t), A = {rf['forcing_amplitude_m'] * 1e3:g} mm, at f = "
      f"{rf['forcing_hz']:g} Hz = {rf['forcing_hz'] / r['f_theory_hz']:.3f} f₁; the height "
      "at the left wall grows period after period.\n")
    w("| run | gauge | crossings | f measured (zero crossings) | f measured (spectrum) | f₁ theory | error |")
    w("|---|---|---|---|---|---|---|")
    for x in r["gauges"]:
        w(f"| free | {x['gauge']} | {x['crossings']} | {x['f_zero_crossings_hz']:.4f} Hz | "
          f"{x['f_spectrum_hz']:.4f} Hz | {x['f_theory_hz']:.4f} Hz | "
          f"{100 * x['error_zero_crossings']:+.2f} % ({100 * x['error_spectrum']:+.2f} %) |")
    w("")
    err = max(abs(x["error_zero_crossings"]) for x in r["gauges"])
    w(f"Criterion: within 2 % of f₁. Result: {100 * err:.2f} % at most "
      f"({'pass' if err < 0.02 else 'FAIL'}); sloshing amplitude {1e3 * r['amplitude_m']:.1f} mm.\n")
    mids, amps = forced_growth(rf)
    w("Forced run, the height's amplitude (half its range) in each forcing period:\n")
    w("| period ends at (s) | " + " | ".join(f"{m + 0.5 / rf['forcing_hz']:.2f}" for m in mids) + " |")
    w("|---|" + "---|" * len(mids))
    w("| amplitude (mm) | " + " | ".join(f"{1e3 * a:.1f}" for a in amps) + " |")
    w("")
    w(f"![sloshing: free oscillation and forced response]({os.path.basename(png)})\n")
    w("Resolution: Δx = 1.25 cm (40 particles over the depth), h = 2 Δx (Wendland C2, 4 wall "
      "layers), the integrated density with diffusion δ = 0.1, Tait with c₀ = 15 m/s (8.9 times "
      "the wave's phase speed), α = 0.02. The smoothing length matters here: at the default h = 1.3 Δx "
      "the same tank sloshes 4-6 % too fast at Δx = 1.25 and 2.5 cm alike, with the tank at rest "
      "and the water started from a step in its surface as well as with the push, so it is the "
      "free surface's discretisation, not the moving walls; at h = 2 Δx it is within 1.3 % at "
      "Δx = 2.5 cm and within 0.5 % at 1.25 cm.\n")
    w("Commands (2-3 minutes each on 2 CPU cores):\n")
    w("```sh")
    w(free_cmd)
    w(forced_cmd)
    w("python3 scripts/sloshing.py slosh_free.h5 --forced slosh_forced.h5 --png docs/validation_sloshing.png "
      "--doc docs/validation_sloshing.md")
    w("```")
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("file", help="a sphsim output file of a sloshing run (free oscillation)")
    ap.add_argument("--gauge", help="the height gauge (default: the first)")
    ap.add_argument("--settle", type=float, default=0.5, help="s after the tank's last motion before the window")
    ap.add_argument("--forced", help="a forced run's file, plotted below the free one")
    ap.add_argument("--png", help="write the plot here")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--doc", help="write the validation section (markdown) here; needs --forced and --png")
    a = ap.parse_args(argv)
    r = analyse(a.file, a.gauge, a.settle)
    public = {k: v for k, v in r.items() if not k.startswith("_")}
    if a.json:
        print(json.dumps(public))
    else:
        print(f"{a.file}: gauge {r['gauge']}, window {r['window_s'][0]:.2f}-{r['window_s'][1]:.2f} s, "
              f"{r['crossings']} upward crossings, amplitude {1e3 * r['amplitude_m']:.1f} mm")
        print(f"  theory   f1 = {r['f_theory_hz']:.4f} Hz  (L = {r['length_m']} m, h = {r['depth_m']} m)")
        print(f"  crossings f = {r['f_zero_crossings_hz']:.4f} Hz  ({100 * r['error_zero_crossings']:+.2f} %)")
        print(f"  spectrum  f = {r['f_spectrum_hz']:.4f} Hz  ({100 * r['error_spectrum']:+.2f} %)")
    if a.png:
        results = [("free", r)]
        if a.forced:
            rf = analyse(a.forced, a.gauge, math.inf)
            run = sphsim_reader.open_run(a.forced)
            seg = (run.resolved or run.scene)["tank"].get("motion", [{}])[0]
            desc = (f"tank moved by {seg.get('type', '?')} of amplitude {seg.get('amplitude')} m at "
                    f"{seg.get('frequency', float('nan')):.4f} Hz = "
                    f"{seg.get('frequency', float('nan')) / rf['f_theory_hz']:.3f} f1")
            results.append((desc, rf))
        plot(results, a.png)
    if a.doc:
        if not (a.forced and a.png):
            raise SystemExit("--doc needs --forced and --png")
        run = sphsim_reader.open_run(a.file)
        heights = [n for n, gg in run.gauges().items() if gg.columns == ["height"]]
        r["gauges"] = [analyse(a.file, n, a.settle) for n in heights]
        rf = analyse(a.forced, a.gauge, math.inf)
        seg = sphsim_reader.open_run(a.forced).resolved["tank"]["motion"][0]
        rf["forcing_hz"] = seg["frequency"]
        rf["forcing_amplitude_m"] = seg["amplitude"][0]
        cmd = "build/sphsim scenes/{0}.json -o {1} --overwrite"
        text = markdown(r, rf, cmd.format("sloshing_2d", "slosh_free.h5"),
                        cmd.format("sloshing_forced_2d", "slosh_forced.h5"), a.png)
        with open(a.doc, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
