#!/usr/bin/env python3
"""Write the small triangle meshes the shipped scenes and tests use into scenes/meshes/
(`make meshes`; the scenes name them relative to their own directory). Plain Python, no
dependencies. Each mesh is closed and its triangles face outwards.

  pillar.stl  binary STL: a cylinder of radius 0.1 m and height 0.4 m standing on z = 0, 48 sides
  wedge.stl   ASCII STL: a wedge (triangular prism) 0.3 m long, 0.15 m high, 0.6 m wide (y)
  ball.obj    Wavefront OBJ: an icosphere of radius 0.1 m about the origin, 1280 faces
  funnel.stl  binary STL: a funnel (a cone wall 8 mm thick, revolved, 64 sides): 0.25 m across
              at the top (z = 0.2 m), a 0.06 m hole at the bottom (z = 0)
  tank_cylinder.stl  binary STL: a cylinder of radius 0.3 m and height 0.7 m standing on z = 0,
              64 sides (a container: scenes/tank_cylinder_3d.json)
"""
import math
import pathlib
import struct
import sys


def cylinder(r, h, sides):
    v = [(0.0, 0.0, 0.0), (0.0, 0.0, h)]
    for k in range(sides):
        a = 2 * math.pi * k / sides
        v += [(r * math.cos(a), r * math.sin(a), 0.0), (r * math.cos(a), r * math.sin(a), h)]
    f = []
    for k in range(sides):
        b0, t0 = 2 + 2 * k, 3 + 2 * k
        b1, t1 = 2 + 2 * ((k + 1) % sides), 3 + 2 * ((k + 1) % sides)
        f += [(0, b1, b0), (1, t0, t1), (b0, b1, t1), (b0, t1, t0)]
    return v, f


def wedge(length, height, width):
    # the slope rises along +x from (0, z = 0) to (length, z = height); y from 0 to width
    v = [(0, 0, 0), (length, 0, 0), (length, 0, height), (0, width, 0), (length, width, 0), (length, width, height)]
    f = [(0, 2, 1), (3, 4, 5),              # ends (y = 0, y = width)
         (0, 1, 4), (0, 4, 3),              # bottom
         (1, 2, 5), (1, 5, 4),              # back (x = length)
         (0, 3, 5), (0, 5, 2)]              # slope
    return v, f


def icosphere(r, levels):
    p = (1 + math.sqrt(5)) / 2
    v = [(-1, p, 0), (1, p, 0), (-1, -p, 0), (1, -p, 0), (0, -1, p), (0, 1, p), (0, -1, -p), (0, 1, -p),
         (p, 0, -1), (p, 0, 1), (-p, 0, -1), (-p, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
         (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
         (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    for _ in range(levels):
        mid = {}

        def m(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                v.append(tuple((x + y) / 2 for x, y in zip(v[a], v[b])))
                mid[key] = len(v) - 1
            return mid[key]
        nf = []
        for a, b, c in f:
            ab, bc, ca = m(a, b), m(b, c), m(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    v = [tuple(r * x / math.sqrt(sum(y * y for y in p_)) for x in p_) for p_ in v]
    return v, f


def revolve(profile, sides):
    """A closed solid of revolution about z: `profile` a closed polygon of (r, z) points (r > 0),
    counter-clockwise in the (r, z) plane; its edges swept around in `sides` steps."""
    m = len(profile)
    v = [(r * math.cos(2 * math.pi * k / sides), r * math.sin(2 * math.pi * k / sides), z)
         for k in range(sides) for (r, z) in profile]
    f = []
    for k in range(sides):
        k1 = (k + 1) % sides
        for i in range(m):
            i1 = (i + 1) % m
            a, b, c, d = k * m + i, k * m + i1, k1 * m + i1, k1 * m + i
            f += [(a, d, c), (a, c, b)]
    return v, f


def normal(a, b, c):
    u = [b[i] - a[i] for i in range(3)]
    w = [c[i] - a[i] for i in range(3)]
    n = (u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0])
    l = math.sqrt(sum(x * x for x in n)) or 1.0
    return tuple(x / l for x in n)


def write_stl_binary(path, v, f):
    with open(path, "wb") as out:
        out.write(b"sphsim scripts/make_meshes.py".ljust(80, b" "))
        out.write(struct.pack("<I", len(f)))
        for t in f:
            a, b, c = (v[i] for i in t)
            out.write(struct.pack("<12fH", *normal(a, b, c), *a, *b, *c, 0))


def write_stl_ascii(path, v, f, name):
    with open(path, "w") as out:
        out.write(f"solid {name}\n")
        for t in f:
            a, b, c = (v[i] for i in t)
            out.write("  facet normal %g %g %g\n    outer loop\n" % normal(a, b, c))
            for p_ in (a, b, c):
                out.write("      vertex %.9g %.9g %.9g\n" % p_)
            out.write("    endloop\n  endfacet\n")
        out.write(f"endsolid {name}\n")


def write_obj(path, v, f):
    with open(path, "w") as out:
        out.write("# sphsim scripts/make_meshes.py\n")
        for p_ in v:
            out.write("v %.9g %.9g %.9g\n" % p_)
        for t in f:
            out.write("f %d %d %d\n" % tuple(i + 1 for i in t))


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: make_meshes.py [DIR | --help]   (DIR default: scenes/meshes)\n" + __doc__.split("\n\n")[0])
        return 0 if argv[1] in ("-h", "--help") else 2
    d = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1] / "scenes" / "meshes"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as ex:
        print(f"make_meshes: {d}: {ex.strerror}", file=sys.stderr)
        return 1
    write_stl_binary(d / "pillar.stl", *cylinder(0.1, 0.4, 48))
    write_stl_ascii(d / "wedge.stl", *wedge(0.3, 0.15, 0.6), "wedge")
    write_obj(d / "ball.obj", *icosphere(0.1, 3))
    write_stl_binary(d / "tank_cylinder.stl", *cylinder(0.3, 0.7, 64))
    t = 0.008  # wall thickness (horizontal)
    write_stl_binary(d / "funnel.stl", *revolve([(0.03, 0.0), (0.03 + t, 0.0), (0.125 + t, 0.2), (0.125, 0.2)], 64))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
