"""render_paraview: render sphsim snapshots to PNG with ParaView, headless.

Run with ParaView's Python (5.11 or later), under a virtual display when there is no screen:

    xvfb-run -a pvpython scripts/render_paraview.py out.xmf --field density -o frame.png
    xvfb-run -a pvpython scripts/render_paraview.py out.xmf --field velocity --all -o frames/f.png

It reads the XDMF sidecar (out.xmf) with ParaView's legacy "XDMF Reader" (XDMFReader), the one
that follows the sidecar's HyperSlabs in ParaView 5.11 (the Xdmf3 readers load no points from
it); given out.h5 it uses the out.xmf beside it. Particles are drawn as points coloured by one
field (vector fields by their magnitude) with a colour bar; 2D runs are viewed along -z.
With --all every snapshot is written as OUT_0000.png, OUT_0001.png, ... with one colour range
over all of them.
"""
import argparse
import os
import sys


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="render_paraview.py",
        description="Render sphsim snapshots (out.xmf, or out.h5 with its .xmf beside it) to PNG with "
        "ParaView's pvpython, headless (run it as: xvfb-run -a pvpython render_paraview.py ...).")
    ap.add_argument("input", help="the XDMF sidecar out.xmf (or out.h5, whose .xmf is used)")
    ap.add_argument("-o", "--output", default=None,
                    help="PNG to write (default: the input name with .png; with --all, the base name of "
                    "the numbered frames)")
    ap.add_argument("--field", default=None,
                    help="point field to colour by: density, pressure, velocity (magnitude), id, type, "
                    "radius, mass (default: density if present, else velocity)")
    ap.add_argument("--step", type=int, default=-1, help="snapshot index to render (default: -1, the last)")
    ap.add_argument("--all", action="store_true", help="render every snapshot as numbered PNGs")
    ap.add_argument("--size", default="1024x768", help="image size WIDTHxHEIGHT in pixels (default 1024x768)")
    ap.add_argument("--point-size", type=float, default=3.0, help="point size in pixels (default 3)")
    ap.add_argument("--range", nargs=2, type=float, metavar=("MIN", "MAX"), default=None,
                    help="colour range (default: the data range of the frame, or of all frames with --all)")
    ap.add_argument("--list", action="store_true", help="print the snapshot times and fields, render nothing")
    return ap.parse_args(argv)


def sidecar_for(path):
    if path.endswith(".xmf"):
        return path
    for ext in (".h5", ".hdf5"):
        if path.endswith(ext):
            return path[: -len(ext)] + ".xmf"
    return path + ".xmf"


def frame_name(base, k):
    root, ext = os.path.splitext(base)
    return f"{root}_{k:04d}{ext or '.png'}"


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    xmf = sidecar_for(args.input)
    if not os.path.isfile(xmf):
        print(f"render_paraview: {xmf}: no such file (sphsim writes it beside the .h5)", file=sys.stderr)
        return 1
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        print(f"render_paraview: --size {args.size}: expected WIDTHxHEIGHT", file=sys.stderr)
        return 2

    from paraview import simple as pv  # only under pvpython

    reader = pv.XDMFReader(FileNames=[os.path.abspath(xmf)])
    reader.UpdatePipelineInformation()
    times = list(reader.TimestepValues) if reader.TimestepValues else []
    if isinstance(reader.TimestepValues, float):
        times = [reader.TimestepValues]
    fields = list(reader.PointData.keys())
    if args.list:
        print(f"{len(times)} snapshot(s), t = {', '.join(f'{t:g}' for t in times)} s")
        print("fields:", ", ".join(fields))
        return 0
    if not times:
        print(f"render_paraview: {xmf} holds no snapshot", file=sys.stderr)
        return 1
    field = args.field or ("density" if "density" in fields else "velocity")
    if field not in fields:
        print(f"render_paraview: no field '{field}' in {xmf}; it has: {', '.join(fields)}", file=sys.stderr)
        return 2
    if args.all:
        steps = list(range(len(times)))
    else:
        k = args.step + len(times) if args.step < 0 else args.step
        if not 0 <= k < len(times):
            print(f"render_paraview: --step {args.step}: {xmf} has {len(times)} snapshot(s)", file=sys.stderr)
            return 2
        steps = [k]
    out = args.output or os.path.splitext(xmf)[0] + ".png"
    if os.path.dirname(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)

    view = pv.CreateView("RenderView")
    view.ViewSize = [width, height]
    view.OrientationAxesVisibility = 0
    view.Background = [1.0, 1.0, 1.0]
    try:
        view.UseColorPaletteForBackground = 0
    except AttributeError:
        pass
    disp = pv.Show(reader, view)
    disp.SetRepresentationType("Points")
    disp.PointSize = args.point_size
    ncomp = reader.PointData[field].GetNumberOfComponents()
    pv.ColorBy(disp, ("POINTS", field, "Magnitude") if ncomp > 1 else ("POINTS", field))
    lut = pv.GetColorTransferFunction(field)
    if ncomp > 1:
        lut.VectorMode = "Magnitude"

    # colour range: given, or the data range over the frames rendered
    if args.range:
        lo, hi = args.range
    else:
        lo, hi = float("inf"), float("-inf")
        for k in steps:
            reader.UpdatePipeline(times[k])
            r = reader.PointData[field].GetRange(-1 if ncomp > 1 else 0)
            lo, hi = min(lo, r[0]), max(hi, r[1])
        if hi <= lo:
            hi = lo + 1.0
    lut.RescaleTransferFunction(lo, hi)
    pv.GetOpacityTransferFunction(field).RescaleTransferFunction(lo, hi)
    disp.SetScalarBarVisibility(view, True)
    bar = pv.GetScalarBar(lut, view)
    bar.Title = field
    bar.ComponentTitle = "magnitude" if ncomp > 1 else ""
    bar.TitleColor = [0, 0, 0]
    bar.LabelColor = [0, 0, 0]

    view.ViewTime = times[steps[0]]
    reader.UpdatePipeline(times[steps[0]])
    bounds = reader.GetDataInformation().GetBounds()
    if bounds[5] - bounds[4] <= 1e-12 * max(1.0, bounds[1] - bounds[0], bounds[3] - bounds[2]):
        view.InteractionMode = "2D"
        view.CameraPosition = [0.5 * (bounds[0] + bounds[1]), 0.5 * (bounds[2] + bounds[3]), 1.0]
        view.CameraFocalPoint = [0.5 * (bounds[0] + bounds[1]), 0.5 * (bounds[2] + bounds[3]), 0.0]
        view.CameraViewUp = [0.0, 1.0, 0.0]
    else:
        view.CameraPosition = [1.0, -1.5, 1.0]
        view.CameraFocalPoint = [0.0, 0.0, 0.0]
        view.CameraViewUp = [0.0, 0.0, 1.0]
    view.ResetCamera()

    written = []
    for k in steps:
        view.ViewTime = times[k]
        pv.Render(view)
        name = frame_name(out, k) if args.all else out
        pv.SaveScreenshot(name, view, ImageResolution=[width, height])
        written.append(name)
    print(f"render_paraview: wrote {len(written)} image(s), {field} in [{lo:g}, {hi:g}]: "
          f"{written[0]}{' ... ' + written[-1] if len(written) > 1 else ''}")
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without ParaView's teardown: under Xvfb, ParaView 5.11 fails at exit with
    # "GLXBadContext" and exit status 1 after the images were written.
    os._exit(rc)
