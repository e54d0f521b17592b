#!/usr/bin/env python3
"""gauges: export and plot the gauges of a sphsim output file (/sphsim/gauges;
docs/output-format.md, "Gauges").

    python3 scripts/gauges.py out.h5                      # list the gauges
    python3 scripts/gauges.py out.h5 --csv DIR            # DIR/NAME.csv per gauge: time, columns
    python3 scripts/gauges.py out.h5 --png DIR            # DIR/NAME.png per gauge: each column against time
    python3 scripts/gauges.py out.h5 --png DIR --ref p1=exp.csv   # overlay reference data
    python3 scripts/gauges.py out.h5 --gauge p1 --gauge h2 ...    # only these gauges

Reference files are CSV (or whitespace-separated) text, '#' comments and a header line
allowed: time (s) in the first column, then one column per gauge column (the first ones; a
reference for a pressure gauge has time and p). Only samples committed by the file's last
snapshot are read (sphsim_reader.Run.gauges).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sphsim_reader  # noqa: E402


def read_reference(path):
    """(time, values[rows, cols]) from a CSV or whitespace-separated text file."""
    rows = []
    try:
        f = open(path)
    except OSError as ex:
        raise SystemExit(f"gauges: {path}: {ex.strerror}")
    with f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.replace(",", " ").replace(";", " ").split()
            try:
                rows.append([float(x) for x in parts])
            except ValueError:
                if rows:
                    raise SystemExit(f"{path}: not a number in line {line!r}")
                continue  # a header line
    if not rows:
        raise SystemExit(f"{path}: no data rows")
    width = min(len(r) for r in rows)
    if width < 2:
        raise SystemExit(f"{path}: expected time and at least one value per row")
    a = np.array([r[:width] for r in rows], dtype=np.float64)
    return a[:, 0], a[:, 1:]


def write_csv(g, path):
    header = ",".join(["time_s"] + [f"{c}_{u.replace(' ', '')}" for c, u in zip(g.columns, g.units)])
    np.savetxt(path, np.column_stack([g.time, g.values]), delimiter=",", header=header, comments="", fmt="%.9g")


def write_png(g, path, ref=None, ref_name=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ncol = len(g.columns)
    fig, axes = plt.subplots(ncol, 1, figsize=(7, 2.2 * ncol + 0.8), sharex=True, squeeze=False)
    for c in range(ncol):
        ax = axes[c, 0]
        ax.plot(g.time, g.values[:, c], lw=1.0, label="sphsim")
        if ref is not None and c < ref[1].shape[1]:
            ax.plot(ref[0], ref[1][:, c], "k.", ms=2.5, label=ref_name or "reference")
            ax.legend(loc="best", fontsize=8)
        ax.set_ylabel(f"{g.columns[c]} ({g.units[c]})")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    where = ", ".join(f"{x:g}" for x in g.point)
    fig.suptitle(f"{g.name}: {g.type} at ({where}) m", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("h5", help="sphsim output file")
    ap.add_argument("--gauge", action="append", default=[], help="only this gauge (repeatable)")
    ap.add_argument("--csv", metavar="DIR", help="write DIR/NAME.csv for each gauge")
    ap.add_argument("--png", metavar="DIR", help="write DIR/NAME.png for each gauge")
    ap.add_argument("--ref", action="append", default=[], metavar="NAME=FILE",
                    help="reference data for gauge NAME, overlaid on its PNG (repeatable)")
    a = ap.parse_args(argv)
    try:
        run = sphsim_reader.open_run(a.h5)
    except (OSError, ValueError) as exc:
        print(f"gauges: {exc}", file=sys.stderr)
        return 1
    with run:
        gauges = run.gauges()
    if not gauges:
        print(f"gauges: {a.h5} has no gauges (the scene has no \"gauges\" array)", file=sys.stderr)
        return 1
    for name in a.gauge:
        if name not in gauges:
            print(f"gauges: no gauge {name!r} in {a.h5}; it has {', '.join(gauges)}", file=sys.stderr)
            return 1
    refs = {}
    for spec in a.ref:
        name, sep, path = spec.partition("=")
        if not sep or name not in gauges:
            print(f"gauges: --ref {spec!r}: expected NAME=FILE with NAME one of {', '.join(gauges)}", file=sys.stderr)
            return 1
        refs[name] = (read_reference(path), os.path.basename(path))
    chosen = [gauges[n] for n in (a.gauge or gauges)]
    for d in (a.csv, a.png):
        if d:
            os.makedirs(d, exist_ok=True)
    for g in chosen:
        last = ", ".join(f"{c} {v:.6g} {u}" for c, v, u in zip(g.columns, g.values[-1], g.units)) if len(g.time) else "-"
        print(f"{g.name}: {g.type}, {len(g.time)} samples every {g.every} step(s), last: {last}")
        if a.csv:
            write_csv(g, os.path.join(a.csv, f"{g.name}.csv"))
        if a.png:
            ref, label = refs.get(g.name, (None, None))
            write_png(g, os.path.join(a.png, f"{g.name}.png"), ref, label)
    return 0


if __name__ == "__main__":
    sys.exit(main())
