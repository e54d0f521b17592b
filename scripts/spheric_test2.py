#!/usr/bin/env python3
"""spheric_test2: a run of SPHERIC benchmark Test 2 (Kleefsman et al. 2005, the MARIN dam break
onto a box; scenes/dam_break_obstacle_3d.json) against the measured time series.

    python3 scripts/spheric_test2.py OUT.h5 --data DIR                  # numbers, spheric_test2.png
    python3 scripts/spheric_test2.py OUT.h5 --data DIR --until 1 --png fig.png --json numbers.json

OUT.h5 must hold the scene's gauges H2, H4 (water heights) and P1 (pressure on the box's front
face). DIR holds the experiment's file as SPHERIC distributes it (test_case_2_exp_data.xls saved as
text, or the text copy test_case_2_exp_data.dat that several codes ship): a header line naming
the columns "Time (s) P1 (Pa) ... P8 (Pa) H1 (m) ... H4 (m)", then one row per sample (whitespace,
tab or comma separated). docs/validation.md says where to get it. The data are not in this
repository.

For each of H2, H4 and P1 over 0 <= t <= --until (2 s by default) it prints, against the
experiment: the RMS difference (the run interpolated at the experiment's times; a dry pressure
probe, NaN in the file, counts as 0 Pa, as the experiment's sensor reads then), the mean
difference, and, for H2 and P1, the arrival time of the front (the first time the signal passes
0.02 m or 1000 Pa) and the peak of the first impact (the largest value within 0.3 s of the
arrival) with its time. It writes a PNG with the three signals.
"""
import argparse
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sphsim_reader  # noqa: E402

SIGNALS = ("H2", "H4", "P1")
ARRIVAL = {"H": 0.02, "P": 1000.0}  # m, Pa: a front has arrived once the signal passes this
IMPACT_WINDOW = 0.3  # s after the arrival that the first impact's peak is sought in
UNITS = {"H": "m", "P": "Pa"}


def find_data_file(folder):
    """The experiment's text file in folder: the first file whose header names P1 and H2."""
    if os.path.isfile(folder):
        return folder
    if not os.path.isdir(folder):
        raise SystemExit(f"--data {folder}: no such folder")
    names = sorted(os.listdir(folder))
    names.sort(key=lambda n: not n.startswith("test_case_2_exp_data"))
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or name.lower().endswith((".pdf", ".xls", ".xlsx", ".zip")):
            continue
        with open(path, errors="replace") as f:
            head = f.readline()
        cols = header_columns(head)
        if "P1" in cols and "H2" in cols:
            return path
    raise SystemExit(f"--data {folder}: no text file with a header naming P1 and H2 (save the SPHERIC "
                     "spreadsheet test_case_2_exp_data.xls as text there)")


def header_columns(line):
    """Column names of a header such as "Time (s) P1 (Pa) ... H4 (m)": units dropped."""
    line = re.sub(r"\([^)]*\)", " ", line)
    return [c for c in re.split(r"[\s,;]+", line.strip()) if c]


def read_experiment(path):
    """{column name: array}, the first column under "t" (s)."""
    with open(path, errors="replace") as f:
        cols = header_columns(f.readline())
        rows = []
        for line in f:
            parts = [p for p in re.split(r"[\s,;]+", line.strip()) if p]
            if not parts:
                continue
            try:
                rows.append([float(p) for p in parts])
            except ValueError:
                continue
    if not rows:
        raise SystemExit(f"{path}: no data rows")
    width = min(len(r) for r in rows)
    a = np.array([r[:width] for r in rows], dtype=np.float64)
    data = {"t": a[:, 0]}
    for k, name in enumerate(cols[1:width], start=1):
        data[name] = a[:, k]
    for s in SIGNALS:
        if s not in data:
            raise SystemExit(f"{path}: no column {s} (columns: {', '.join(cols)})")
    return data


def arrival(t, y, threshold):
    """The first time y passes threshold (linear interpolation), or None."""
    above = np.nonzero(y > threshold)[0]
    if len(above) == 0:
        return None
    i = above[0]
    if i == 0:
        return float(t[0])
    f = (threshold - y[i - 1]) / (y[i] - y[i - 1])
    return float(t[i - 1] + f * (t[i] - t[i - 1]))


def first_peak(t, y, t_arrival):
    """(value, time) of the largest y within IMPACT_WINDOW after the arrival."""
    if t_arrival is None:
        return None, None
    m = (t >= t_arrival) & (t <= t_arrival + IMPACT_WINDOW)
    if not m.any():
        return None, None
    k = np.argmax(np.where(m, y, -np.inf))
    return float(y[k]), float(t[k])


def compare(name, t_sim, y_sim, t_exp, y_exp, until):
    """The agreement numbers of one signal (module docstring)."""
    kind = name[0]
    y_sim = np.where(np.isnan(y_sim), 0.0, y_sim)  # a dry probe
    me = t_exp <= until
    te, ye = t_exp[me], y_exp[me]
    ms = t_sim <= until + 1e-9
    ts, ys = t_sim[ms], y_sim[ms]
    if len(ts) < 2:
        raise SystemExit(f"gauge {name}: fewer than 2 samples up to t = {until} s")
    covered = te <= ts[-1] + 1e-9
    ys_at = np.interp(te[covered], ts, ys)
    diff = ys_at - ye[covered]
    out = {
        "signal": name,
        "unit": UNITS[kind],
        "compared_until_s": float(min(until, ts[-1])),
        "rms_difference": float(np.sqrt(np.mean(diff ** 2))),
        "mean_difference": float(np.mean(diff)),
        "experiment_max": float(np.max(ye[covered])),
        "simulation_max": float(np.max(ys)),
    }
    if name != "H4":
        thr = ARRIVAL[kind]
        ta_e, ta_s = arrival(te, ye, thr), arrival(ts, ys, thr)
        pe, tpe = first_peak(te, ye, ta_e)
        ps, tps = first_peak(ts, ys, ta_s)
        out.update({"arrival_threshold": thr, "arrival_experiment_s": ta_e, "arrival_simulation_s": ta_s,
                    "first_peak_experiment": pe, "first_peak_experiment_time_s": tpe,
                    "first_peak_simulation": ps, "first_peak_simulation_time_s": tps})
    return out


def fmt(x, unit=""):
    if x is None:
        return "-"
    if unit == "Pa":
        return f"{x:.0f}"
    if unit == "s":
        return f"{x:.3f}"
    return f"{x:.4f}"


def print_table(results, spacing):
    print(f"SPHERIC Test 2, sphsim at spacing {spacing:g} m against the MARIN experiment")
    print("| signal | RMS difference | mean difference | arrival exp / sim (s) | first peak exp / sim | "
          "its time exp / sim (s) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        u = r["unit"]
        if "arrival_experiment_s" in r:
            arr = f"{fmt(r['arrival_experiment_s'], 's')} / {fmt(r['arrival_simulation_s'], 's')}"
            peak = f"{fmt(r['first_peak_experiment'], u)} / {fmt(r['first_peak_simulation'], u)} {u}"
            tpk = f"{fmt(r['first_peak_experiment_time_s'], 's')} / {fmt(r['first_peak_simulation_time_s'], 's')}"
        else:
            arr = peak = tpk = "-"
        print(f"| {r['signal']} | {fmt(r['rms_difference'], u)} {u} | {fmt(r['mean_difference'], u)} {u} | "
              f"{arr} | {peak} | {tpk} |")


def plot(path, sims, exp, until, spacing):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(SIGNALS), 1, figsize=(7.5, 8), sharex=True)
    for ax, name in zip(axes, SIGNALS):
        t, y = sims[name]
        m = exp["t"] <= until
        ax.plot(exp["t"][m], exp[name][m], color="0.3", lw=1.0, label="experiment (MARIN)")
        ms = t <= until + 1e-9
        ax.plot(t[ms], np.where(np.isnan(y[ms]), 0.0, y[ms]), color="C0", lw=1.0,
                label=f"sphsim, spacing {spacing:g} m")
        ax.set_ylabel(f"{name} ({UNITS[name[0]]})")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="best", fontsize=8)
    axes[-1].set_xlabel("t (s)")
    axes[-1].set_xlim(0, until)
    fig.suptitle("SPHERIC Test 2 (Kleefsman et al. 2005): water heights H2, H4 and pressure P1")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="sphsim output file with the gauges H2, H4 and P1")
    ap.add_argument("--data", required=True, help="folder (or file) with the experiment's time series")
    ap.add_argument("--until", type=float, default=2.0, help="compare over 0 <= t <= UNTIL s (default 2)")
    ap.add_argument("--png", default="spheric_test2.png", help="figure to write (default spheric_test2.png)")
    ap.add_argument("--json", help="also write the numbers to this JSON file")
    a = ap.parse_args(argv)
    exp = read_experiment(find_data_file(a.data))
    with sphsim_reader.open_run(a.run) as run:
        gauges = run.gauges()
        missing = [s for s in SIGNALS if s not in gauges]
        if missing:
            raise SystemExit(f"{a.run}: no gauge {', '.join(missing)} (the scene's gauges: "
                             f"{', '.join(gauges) or 'none'}; scenes/dam_break_obstacle_3d.json has them)")
        sims = {s: (gauges[s].time, gauges[s].values[:, 0]) for s in SIGNALS}
        spacing = float(((run.resolved or {}).get("derived") or {}).get("spacing_m", float("nan")))
    results = [compare(s, *sims[s], exp["t"], exp[s], a.until) for s in SIGNALS]
    print_table(results, spacing)
    plot(a.png, sims, exp, a.until, spacing)
    print(f"wrote {a.png}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"run": a.run, "spacing_m": spacing, "until_s": a.until, "signals": results}, f, indent=2)
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
