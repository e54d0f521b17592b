#!/usr/bin/env python3
"""animate: turn a sphsim run into a GIF (or MP4), one frame per snapshot, coloured by a field.

    python3 scripts/animate.py out.h5                               # out_speed.gif, every snapshot
    python3 scripts/animate.py out.h5 --field pressure --every 2 --fps 20 -o p.gif
    python3 scripts/animate.py dam3d.h5 --axes xz -o dam3d.mp4      # MP4 needs ffmpeg on PATH

GIFs are written with Pillow (always there with matplotlib); .mp4 (and .webm, .mkv, .avi) with
ffmpeg when it is installed. The colour scale is fixed over the whole animation: --vmin/--vmax,
else the range of the field over the frames drawn. Headless (matplotlib's Agg backend). The
drawing options are those of plot_snapshot.py.
"""
import argparse
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_snapshot as ps  # noqa: E402
import sphsim_reader  # noqa: E402

PROG = "animate.py"
FFMPEG_CODECS = {".mp4": "h264", ".mov": "h264", ".mkv": "h264", ".webm": "libvpx-vp9", ".avi": "mpeg4"}
FFMPEG_SUFFIXES = tuple(FFMPEG_CODECS)


def frames_of(run, every, start=None, end=None):
    """Snapshot indices to draw: every `every`-th one with start <= time <= end (s)."""
    ks = [k for k in range(len(run))
          if (start is None or run.times[k] >= start - 1e-12) and (end is None or run.times[k] <= end + 1e-12)]
    return ks[::every]


def field_range(run, frames, field, fluid_only):
    """(min, max) of the field over the frames (fixed colour scale)."""
    lo, hi = np.inf, -np.inf
    for k in frames:
        snap = run.snapshot(k)
        c, _ = ps.field_values(run, snap, field)
        if fluid_only:
            c = c[ps.fluid_mask(run, snap)]
        if c.size:
            lo, hi = min(lo, float(c.min())), max(hi, float(c.max()))
    if not np.isfinite(lo):
        return None, None
    return lo, hi


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Animate a sphsim run (.h5): one frame per snapshot, particles coloured by a field. "
                    "Writes a GIF (Pillow) or, for .mp4/.webm/.mkv/.avi/.mov, a video (needs ffmpeg). Headless.",
        epilog="examples:\n"
               "  animate.py out.h5\n"
               "  animate.py out.h5 --field pressure --fluid-only --every 2 --fps 20 -o p.gif\n"
               "  animate.py dam3d.h5 --axes xz --field velocity_x -o dam3d.mp4",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="sphsim output (.h5)")
    ap.add_argument("-o", "--output", help="animation to write, .gif or .mp4 (default: FILE without .h5 + _FIELD.gif)")
    ap.add_argument("--fps", type=float, default=10.0, help="frames per second (default 10)")
    ap.add_argument("--every", type=int, default=1, metavar="N", help="use every N-th snapshot (default 1)")
    ap.add_argument("--start", type=float, metavar="T", help="first time to show (s)")
    ap.add_argument("--end", type=float, metavar="T", help="last time to show (s)")
    ps.add_view_options(ap)
    a = ap.parse_args(argv)
    ps.check_view_options(ap, a)
    if a.fps <= 0:
        ap.error("--fps must be > 0")
    if a.every < 1:
        ap.error("--every must be >= 1")
    out = a.output or f"{os.path.splitext(a.file)[0]}_{a.field}.gif"
    suffix = os.path.splitext(out)[1].lower()
    if suffix not in (".gif",) + FFMPEG_SUFFIXES:
        ap.error(f"-o {out}: expected a .gif or {'/'.join(FFMPEG_SUFFIXES)} file name")
    if suffix != ".gif" and (a.width % 2 or a.height % 2):
        ap.error(f"video encoders need an even --width and --height (got {a.width} x {a.height})")
    if suffix != ".gif" and shutil.which("ffmpeg") is None:
        print(f"{PROG}: writing {suffix} needs ffmpeg, which is not on PATH; install it "
              f"(e.g. apt-get install ffmpeg) or write a .gif", file=sys.stderr)
        return 1

    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import animation

    try:
        with sphsim_reader.open_run(a.file) as run:
            frames = frames_of(run, a.every, a.start, a.end)
            if not frames:
                raise ps.ScriptError(f"no snapshot to draw ({len(run)} in the file; check --start/--end)")
            vmin, vmax = a.vmin, a.vmax
            if a.field != "type" and (vmin is None or vmax is None):
                fluid_only = a.fluid_only if a.fluid_only is not None else run.dimensions == 3
                lo, hi = field_range(run, frames, a.field, fluid_only)
                vmin = lo if vmin is None else vmin
                vmax = hi if vmax is None else vmax
            plot = ps.SnapshotPlot(run, a.field, a.axes, a.fluid_only, a.width, a.height, a.dpi, a.cmap, vmin,
                                   vmax, a.point_size, a.slab)
            plot.draw(frames[0])
            anim = animation.FuncAnimation(plot.fig, plot.draw, frames=frames, blit=False, repeat=False,
                                           cache_frame_data=False)
            if suffix == ".gif":
                writer = animation.PillowWriter(fps=a.fps)
            else:
                writer = animation.FFMpegWriter(fps=a.fps, codec=FFMPEG_CODECS[suffix],
                                                extra_args=["-pix_fmt", "yuv420p"])
            anim.save(out, writer=writer, dpi=a.dpi)
            plot.close()
            print(f"{PROG}: wrote {out}: {len(frames)} frame(s), t = {run.times[frames[0]]:.6g} ... "
                  f"{run.times[frames[-1]]:.6g} s, {a.field}", file=sys.stderr)
    except (ps.ScriptError, OSError, ValueError, KeyError, IndexError) as ex:
        print(f"{PROG}: {ex}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
