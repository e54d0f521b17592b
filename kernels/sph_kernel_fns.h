/* sph_kernel_fns.h: the SPH smoothing kernels W(r), their gradient functions
 * F(r) = (1/r) dW/dr (so that grad_i W(x_i - x_j) = F(r) * dx with dx = x_i - x_j), and the
 * viscosity-kernel Laplacian, written once for OpenCL C (float) and host C (double).
 *
 * Convention: every kernel has compact support H = 2 h (h = smoothing length). Mueller et al.'s
 * kernels (poly6, spiky, viscosity; Mueller, Charypar & Gross 2003) are written with their
 * support "h_M"; here h_M = H. q = r / h in [0, 2). Normalisation constants (host only, double)
 * are derived in docs/physics.md:
 *   poly6     W = w_norm (H^2 - r^2)^3          w_norm = 4/(pi H^8) (2D), 315/(64 pi H^9) (3D)
 *   spiky     F = -3 f_norm (H - r)^2 / r       f_norm = 10/(pi H^5) (2D), 15/(pi H^6) (3D)
 *   viscosity lap W = lap_norm (H - r)         lap_norm = 40/(pi H^5) (2D), 45/(pi H^6) (3D)
 *   cubic     W = w_norm f(q), Monaghan & Lattanzio 1985; w_norm = 10/(7 pi h^2), 1/(pi h^3)
 *   wendland  W = w_norm (1 - q/2)^4 (2q + 1), Wendland C2 (Wendland 1995, Dehnen & Aly 2012);
 *             w_norm = 7/(4 pi h^2) (2D), 21/(16 pi h^3) (3D)
 * For cubic and wendland f_norm = w_norm / h^2. */
#ifndef SPHSIM_SPH_KERNEL_FNS_H
#define SPHSIM_SPH_KERNEL_FNS_H

#ifdef __OPENCL_VERSION__
typedef float sphk_real;
#define SPHK_FN inline
#define SPHK_C(x) x##f
#else
#include <math.h>
typedef double sphk_real;
#define SPHK_FN static inline
#define SPHK_C(x) x
#endif

/* Kernel identifiers on the host (equal to scene_kernel's values). */
#define SPHK_POLY6 0
#define SPHK_CUBIC 1
#define SPHK_WENDLAND 2

/* ---- shape functions (float on the device, double on the host) ---- */

/* Mueller poly6: W = w_norm (H^2 - r^2)^3 for r < H. */
SPHK_FN sphk_real sphk_poly6_w(sphk_real r2, sphk_real H2, sphk_real w_norm)
{
    const sphk_real d = H2 - r2;
    return d > SPHK_C(0.0) ? w_norm * d * d * d : SPHK_C(0.0);
}

/* Mueller spiky gradient as F = (1/r) dW/dr = -3 f_norm (H - r)^2 / r for 0 < r < H. */
SPHK_FN sphk_real sphk_spiky_f(sphk_real r, sphk_real H, sphk_real f_norm)
{
    const sphk_real d = H - r;
    return (d > SPHK_C(0.0) && r > SPHK_C(0.0)) ? SPHK_C(-3.0) * f_norm * d * d / r : SPHK_C(0.0);
}

/* Laplacian of Mueller's viscosity kernel: lap_norm (H - r) for r < H. */
SPHK_FN sphk_real sphk_visc_lap(sphk_real r, sphk_real H, sphk_real lap_norm)
{
    return r < H ? lap_norm * (H - r) : SPHK_C(0.0);
}

/* Cubic B-spline (M4): W = w_norm * {1 - 3/2 q^2 + 3/4 q^3 (q < 1); 1/4 (2 - q)^3 (q < 2)}. */
SPHK_FN sphk_real sphk_cubic_w(sphk_real q, sphk_real w_norm)
{
    if (q < SPHK_C(1.0)) return w_norm * (SPHK_C(1.0) - SPHK_C(1.5) * q * q + SPHK_C(0.75) * q * q * q);
    if (q < SPHK_C(2.0)) {
        const sphk_real d = SPHK_C(2.0) - q;
        return w_norm * SPHK_C(0.25) * d * d * d;
    }
    return SPHK_C(0.0);
}

/* Cubic B-spline F = (1/r) dW/dr = f_norm * {-3 + 9/4 q (q < 1); -3/4 (2 - q)^2 / q (q < 2)},
 * f_norm = w_norm / h^2. Finite at q = 0. */
SPHK_FN sphk_real sphk_cubic_f(sphk_real q, sphk_real f_norm)
{
    if (q < SPHK_C(1.0)) return f_norm * (SPHK_C(-3.0) + SPHK_C(2.25) * q);
    if (q < SPHK_C(2.0)) {
        const sphk_real d = SPHK_C(2.0) - q;
        return f_norm * SPHK_C(-0.75) * d * d / q;
    }
    return SPHK_C(0.0);
}

/* Wendland C2: W = w_norm (1 - q/2)^4 (2 q + 1) for q < 2. */
SPHK_FN sphk_real sphk_wendland_w(sphk_real q, sphk_real w_norm)
{
    if (q >= SPHK_C(2.0)) return SPHK_C(0.0);
    const sphk_real d = SPHK_C(1.0) - SPHK_C(0.5) * q;
    const sphk_real d2 = d * d;
    return w_norm * d2 * d2 * (SPHK_C(2.0) * q + SPHK_C(1.0));
}

/* Wendland C2: F = (1/r) dW/dr = -5 f_norm (1 - q/2)^3, f_norm = w_norm / h^2. */
SPHK_FN sphk_real sphk_wendland_f(sphk_real q, sphk_real f_norm)
{
    if (q >= SPHK_C(2.0)) return SPHK_C(0.0);
    const sphk_real d = SPHK_C(1.0) - SPHK_C(0.5) * q;
    return SPHK_C(-5.0) * f_norm * d * d * d;
}

#ifndef __OPENCL_VERSION__
/* ---- host only: normalisation constants and run-time dispatch (double) ---- */

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Normalisation of W (see the table at the top). */
SPHK_FN double sphk_norm_w(int kernel, int dims, double h)
{
    const double H = 2.0 * h;
    switch (kernel) {
    case SPHK_POLY6: return dims == 2 ? 4.0 / (M_PI * pow(H, 8)) : 315.0 / (64.0 * M_PI * pow(H, 9));
    case SPHK_CUBIC: return dims == 2 ? 10.0 / (7.0 * M_PI * h * h) : 1.0 / (M_PI * h * h * h);
    default: return dims == 2 ? 7.0 / (4.0 * M_PI * h * h) : 21.0 / (16.0 * M_PI * h * h * h);
    }
}

/* Normalisation of F (poly6 scheme: the spiky kernel's). */
SPHK_FN double sphk_norm_f(int kernel, int dims, double h)
{
    const double H = 2.0 * h;
    if (kernel == SPHK_POLY6) return dims == 2 ? 10.0 / (M_PI * pow(H, 5)) : 15.0 / (M_PI * pow(H, 6));
    return sphk_norm_w(kernel, dims, h) / (h * h);
}

/* Normalisation of the viscosity-kernel Laplacian. */
SPHK_FN double sphk_norm_lap(int dims, double h)
{
    const double H = 2.0 * h;
    return dims == 2 ? 40.0 / (M_PI * pow(H, 5)) : 45.0 / (M_PI * pow(H, 6));
}

/* W(r) of `kernel` with smoothing length h (support 2h). */
SPHK_FN double sphk_w(int kernel, int dims, double h, double r)
{
    const double H = 2.0 * h;
    switch (kernel) {
    case SPHK_POLY6: return sphk_poly6_w(r * r, H * H, sphk_norm_w(kernel, dims, h));
    case SPHK_CUBIC: return sphk_cubic_w(r / h, sphk_norm_w(kernel, dims, h));
    default: return sphk_wendland_w(r / h, sphk_norm_w(kernel, dims, h));
    }
}

/* F(r) = (1/r) dW/dr of the gradient kernel paired with `kernel` (poly6 -> spiky). */
SPHK_FN double sphk_f(int kernel, int dims, double h, double r)
{
    const double H = 2.0 * h;
    switch (kernel) {
    case SPHK_POLY6: return sphk_spiky_f(r, H, sphk_norm_f(kernel, dims, h));
    case SPHK_CUBIC: return sphk_cubic_f(r / h, sphk_norm_f(kernel, dims, h));
    default: return sphk_wendland_f(r / h, sphk_norm_f(kernel, dims, h));
    }
}

/* Mueller's viscosity kernel itself (only its Laplacian is used by the solver; kept to check
 * the normalisation). 3D (Mueller 2003): 15/(2 pi H^3) (-r^3/(2H^3) + r^2/H^2 + H/(2r) - 1).
 * 2D (derived in docs/physics.md: the radial solution of lap W = C (H - r) with W(H) = W'(H) = 0
 * and unit integral): 40/(pi H^5) (H r^2/4 - r^3/9 - 5 H^3/36 - H^3/6 ln(r/H)). */
SPHK_FN double sphk_visc_w(int dims, double H, double r)
{
    if (r >= H) return 0.0;
    if (dims == 3)
        return 15.0 / (2.0 * M_PI * H * H * H) *
               (-r * r * r / (2.0 * H * H * H) + r * r / (H * H) + H / (2.0 * r) - 1.0);
    return 40.0 / (M_PI * pow(H, 5)) *
           (H * r * r / 4.0 - r * r * r / 9.0 - 5.0 * H * H * H / 36.0 - H * H * H / 6.0 * log(r / H));
}
#endif /* host */

#endif
