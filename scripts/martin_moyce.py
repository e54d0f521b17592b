#!/usr/bin/env python3
"""martin_moyce: the Martin & Moyce (1952) dam-break surge-front measurements, as data.

Source
------
J. C. Martin and W. J. Moyce, "Part IV. An experimental study of the collapse of liquid
columns on a rigid horizontal plane", Philosophical Transactions of the Royal Society of
London, Series A, Mathematical and Physical Sciences, vol. 244, no. 882, pp. 312-324 (1952),
doi:10.1098/rsta.1952.0006.

Which data
----------
Two-dimensional collapse of a water column of width a = 2.25 in (57.15 mm) and height
n^2 a with n^2 = 2 (a column twice as high as it is wide), released at time 0 against the
back wall. The paper plots the position of the surge front (the leading edge of the water
on the floor), measured from the back wall, as

    Z = z / a          against          T = t sqrt(2 g / a)

(z the front's distance from the back wall, t the time since release, g gravity). Z starts
at 1 (the front is the column's side at t = 0).

The values below were DIGITISED FROM THE PUBLISHED FIGURE (the surge-front plot, Z
against T, for this column), not taken from a table of the paper. They are approximate:
reading a 1952 printed plot gives roughly +-0.03 in T and +-0.02 in Z, and the experiment
itself has a release transient (the gate is not opened instantaneously), so simulations
are usually compared on T in [0.5, 3]. Z falls on multiples of 1/9 (quarter-inch marks of
a 2.25 in column), so the uncertainty is mostly in T. An independent digitisation of the
same figure (in PySPH's examples) agrees with these values to within 0.07 in Z
where the two overlap (T in [0.8, 3.3]).

Use
---
    from martin_moyce import surge_front, interpolate_z
    T, Z = surge_front()              # numpy arrays, T ascending, Z ascending
    interpolate_z(1.5)                 # Z at T = 1.5 by linear interpolation

`python3 scripts/martin_moyce.py` prints the table (`--csv` for CSV).
"""

import argparse
import sys

# (T = t sqrt(2g/a), Z = z/a) for a = 2.25 in, n^2 = 2; digitised, approximate (see above).
SURGE_FRONT_A225_N2_2 = (
    (0.00, 1.00),
    (0.41, 1.11),
    (0.84, 1.22),
    (1.19, 1.44),
    (1.43, 1.67),
    (1.63, 1.89),
    (1.83, 2.11),
    (1.98, 2.33),
    (2.20, 2.56),
    (2.32, 2.78),
    (2.51, 3.00),
    (2.65, 3.22),
    (2.83, 3.44),
    (2.98, 3.67),
    (3.11, 3.89),
    (3.33, 4.11),
)

REFERENCE = ("J. C. Martin and W. J. Moyce (1952), Part IV. An experimental study of the collapse of "
             "liquid columns on a rigid horizontal plane, Phil. Trans. R. Soc. Lond. A 244(882), "
             "312-324, doi:10.1098/rsta.1952.0006; surge front, a = 2.25 in, n^2 = 2, digitised "
             "from the figure (approximate)")

COLUMN_WIDTH_M = 2.25 * 0.0254  # a of the experiment (m); the data are dimensionless
HEIGHT_RATIO = 2.0              # n^2: column height / width


def surge_front():
    """Return (T, Z) as two numpy float arrays, T = t sqrt(2g/a) ascending, Z = z/a."""
    import numpy as np
    data = np.array(SURGE_FRONT_A225_N2_2, dtype=float)
    return data[:, 0].copy(), data[:, 1].copy()


def interpolate_z(T):
    """Z = z/a at dimensionless time(s) T by linear interpolation of the data.

    Outside the measured range [0, 3.33] the result is NaN (no extrapolation)."""
    import numpy as np
    t_data, z_data = surge_front()
    T = np.asarray(T, dtype=float)
    return np.interp(T, t_data, z_data, left=np.nan, right=np.nan)


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Print the Martin & Moyce (1952) surge-front data (a = 2.25 in, n^2 = 2): "
                    "Z = z/a against T = t sqrt(2g/a). Digitised from the paper's figure; approximate.",
        epilog="Source: " + REFERENCE)
    p.add_argument("--csv", action="store_true", help="print CSV (T,Z) instead of an aligned table")
    a = p.parse_args(argv)
    if a.csv:
        print("T,Z")
        for t, z in SURGE_FRONT_A225_N2_2:
            print(f"{t:.2f},{z:.2f}")
    else:
        print(f"# {REFERENCE}")
        print(f"{'T = t sqrt(2g/a)':>18} {'Z = z/a':>9}")
        for t, z in SURGE_FRONT_A225_N2_2:
            print(f"{t:18.2f} {z:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
