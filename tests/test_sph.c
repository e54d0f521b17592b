/* test_sph: the SPH solver. Host: kernel normalisation, gradients and the viscosity Laplacian
 * in 2D and 3D (continuum quadrature and lattice sums), parameters and particle masses.
 * Device (PoCL): one step of every scheme against the double-precision brute-force reference
 * (tests/ref_sph.c), the rest lattice, momentum and mass conservation of a free blob, fixed
 * boundary particles and the FLAG_* guards. The neighbour tables are built on the host
 * (tests/ref_sph.c), so these tests do not depend on the device grid. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device.h"
#include "gauges.h"
#include "init.h"
#include "motion.h"
#include "ref_sph.h"
#include "sim.h"
#include "sph.h"
#include "../kernels/sph_kernel_fns.h"

static const char *kname[] = { "poly6", "cubic", "wendland" };

/* The SPH initial state of particles made on the lattice, as init_generate gives it: the masses
 * (sph_prepare), then the hydrostatic start (init_hydrostatic). */
static sphsim_status prepare_sph(const scene *s, particles *p, sphsim_error *e)
{
    SPHSIM_TRY(sph_prepare(s, p, e));
    return init_hydrostatic(s, p, TUNE_AUTO, e);
}

/* ------------------------------------------------------------------ host: kernels */

/* Integral over the plane (dims 2) or space (dims 3) of a radial function g(r) on [0, H] by
 * composite Simpson with `m` (even) intervals; the cubic spline's break at r = h = H/2 is a node. */
static double radial_integral(int dims, double H, int m, double (*g)(double r, const void *ctx), const void *ctx)
{
    const double dr = H / m;
    double sum = 0.0;
    for (int k = 0; k <= m; ++k) {
        const double r = k * dr;
        const double shell = dims == 2 ? 2.0 * M_PI * r : 4.0 * M_PI * r * r;
        const double w = (k == 0 || k == m) ? 1.0 : (k % 2 ? 4.0 : 2.0);
        sum += w * shell * g(r, ctx);
    }
    return sum * dr / 3.0;
}

typedef struct kctx {
    int kernel, dims;
    double h;
} kctx;

static double g_w(double r, const void *c)
{
    const kctx *k = c;
    return sphk_w(k->kernel, k->dims, k->h, r);
}
/* -(1/dims) r^2 F(r): integrates to 1 when grad W is normalised (int x (x) grad W = -I). */
static double g_first_moment(double r, const void *c)
{
    const kctx *k = c;
    return -r * r * sphk_f(k->kernel, k->dims, k->h, r) / k->dims;
}
/* r^2 lap W_visc / (2 dims): integrates to 1 when the SPH Laplacian of a quadratic is exact. */
static double g_lap_moment(double r, const void *c)
{
    const kctx *k = c;
    return r * r * sphk_visc_lap(r, 2.0 * k->h, sphk_norm_lap(k->dims, k->h)) / (2.0 * k->dims);
}

/* Continuum: int W dV = 1, -(1/d) int r^2 F dV = 1 (gradient normalisation, including the
 * spiky kernel), and (1/2d) int r^2 lap W_visc dV = 1, to quadrature precision. */
static void test_kernel_continuum(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims)
        for (int kernel = 0; kernel < 3; ++kernel) {
            const kctx c = { kernel, dims, 0.013 };
            const double w = radial_integral(dims, 2 * c.h, 20000, g_w, &c);
            const double m1 = radial_integral(dims, 2 * c.h, 20000, g_first_moment, &c);
            print_message("  %dD %-8s int W dV = %.10f   -(1/d) int r^2 F dV = %.10f\n", dims, kname[kernel], w, m1);
            assert_true(fabs(w - 1.0) < 1e-9);
            assert_true(fabs(m1 - 1.0) < 1e-9);
        }
    for (int dims = 2; dims <= 3; ++dims) {
        const kctx c = { 0, dims, 0.013 };
        const double l = radial_integral(dims, 2 * c.h, 20000, g_lap_moment, &c);
        print_message("  %dD viscosity (1/2d) int r^2 lap W dV = %.10f\n", dims, l);
        assert_true(fabs(l - 1.0) < 1e-9);
    }
}

/* Mueller's viscosity kernel itself: unit integral and lap W = lap_norm (H - r). In 2D this is
 * the derived kernel with constant 40/(pi H^5); the 3D constant 45/(pi H^6) copied into 2D
 * would be wrong by a factor 45/(40 H), i.e. not even of the right dimension. */
static void test_viscosity_kernel_2d_3d(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims) {
        const double H = 0.026;
        /* midpoint rule: the kernel is singular (log r in 2D, 1/r in 3D) at r = 0 */
        const int m = 200000;
        double integral = 0.0;
        for (int k = 0; k < m; ++k) {
            const double r = (k + 0.5) * H / m;
            integral += (dims == 2 ? 2.0 * M_PI * r : 4.0 * M_PI * r * r) * sphk_visc_w(dims, H, r) * H / m;
        }
        print_message("  %dD viscosity kernel: int W dV = %.8f\n", dims, integral);
        assert_true(fabs(integral - 1.0) < 1e-6);
        /* radial Laplacian W'' + (dims - 1) W'/r by central differences */
        const double norm = sphk_norm_lap(dims, H / 2);
        double worst = 0.0;
        for (int k = 1; k < 10; ++k) {
            const double r = 0.1 * k * H, d = 1e-5 * H;
            const double wp = sphk_visc_w(dims, H, r + d), w0 = sphk_visc_w(dims, H, r),
                         wm = sphk_visc_w(dims, H, r - d);
            const double lap = (wp - 2 * w0 + wm) / (d * d) + (dims - 1) * (wp - wm) / (2 * d) / r;
            const double expect = norm * (H - r);
            const double rel = fabs(lap - expect) / (norm * H);
            if (rel > worst) worst = rel;
        }
        print_message("  %dD viscosity kernel: max |lap W - lap_norm (H - r)| / (lap_norm H) = %.2e\n", dims, worst);
        assert_true(worst < 1e-5);
    }
    /* the constants themselves */
    const double h = 0.01, H = 0.02;
    assert_true(fabs(sphk_norm_lap(2, h) - 40.0 / (M_PI * pow(H, 5))) < 1e-12 * sphk_norm_lap(2, h));
    assert_true(fabs(sphk_norm_lap(3, h) - 45.0 / (M_PI * pow(H, 6))) < 1e-12 * sphk_norm_lap(3, h));
}

/* Lattice sums with V = dx^dims at lattice points and at random off-lattice points:
 * sum V W = 1, sum V grad W = 0, -(1/d) sum V r^2 F = 1, (1/2d) sum V r^2 lap W_visc = 1.
 * The lattice sums differ from the continuum integrals by the quadrature error of the lattice,
 * which shrinks as h/dx grows; the tolerances are the measured worst cases (20 random points,
 * numbers in docs/physics.md) with about 50 % margin. The spiky gradient does not vanish at r = 0,
 * so its off-lattice gradient sums are the roughest. */
static void test_kernel_lattice(void **state)
{
    (void)state;
    /* tolerances [dims-2][h index][kernel] for |sum V W - 1| */
    static const double tol_w[2][2][3] = { { { 0.008, 0.002, 0.016 }, { 0.001, 0.0002, 0.002 } },
                                           { { 0.010, 0.004, 0.015 }, { 0.0002, 0.0002, 0.001 } } };
    static const double tol_g[2][2][3] = { { { 0.6, 0.01, 0.075 }, { 0.4, 0.002, 0.013 } },
                                           { { 0.45, 0.027, 0.05 }, { 0.11, 0.001, 0.005 } } };
    static const double tol_m1[2][2][3] = { { { 0.09, 0.033, 0.04 }, { 0.023, 0.0014, 0.0012 } },
                                            { { 0.053, 0.01, 0.032 }, { 0.0042, 0.0011, 0.0009 } } };
    static const double tol_lap[2][2] = { { 0.11, 0.027 }, { 0.11, 0.012 } };
    static const double hf[2] = { 1.3, 2.0 };
    uint64_t seed = 12345;
    for (int dims = 2; dims <= 3; ++dims)
        for (int hi = 0; hi < 2; ++hi) {
            const double dx = 0.01, h = hf[hi] * dx, V = pow(dx, dims);
            const int R = (int)ceil(2 * h / dx) + 2, Rz = dims == 3 ? R : 0;
            double worst_w[3] = { 0 }, worst_g[3] = { 0 }, worst_m1[3] = { 0 }, worst_lap = 0, sym_g = 0;
            for (int trial = 0; trial < 21; ++trial) {
                double x0[3] = { 0, 0, 0 };
                if (trial > 0)
                    for (int a = 0; a < dims; ++a) x0[a] = 0.5 * dx * ref_sph_rand(&seed);
                for (int kernel = 0; kernel < 3; ++kernel) {
                    double sw = 0, sg[3] = { 0, 0, 0 }, m1 = 0, lap = 0;
                    for (int k = -Rz; k <= Rz; ++k)
                        for (int j = -R; j <= R; ++j)
                            for (int i = -R; i <= R; ++i) {
                                const double d[3] = { x0[0] - i * dx, x0[1] - j * dx, x0[2] - k * dx };
                                const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
                                sw += V * sphk_w(kernel, dims, h, r);
                                const double F = sphk_f(kernel, dims, h, r);
                                for (int a = 0; a < 3; ++a) sg[a] += V * F * d[a];
                                m1 -= V * F * r * r / dims;
                                if (kernel == 0)
                                    lap += V * r * r * sphk_visc_lap(r, 2 * h, sphk_norm_lap(dims, h)) / (2 * dims);
                            }
                    const double g = sqrt(sg[0] * sg[0] + sg[1] * sg[1] + sg[2] * sg[2]) * h; /* dimensionless */
                    if (trial == 0 && g > sym_g) sym_g = g;
                    if (fabs(sw - 1) > worst_w[kernel]) worst_w[kernel] = fabs(sw - 1);
                    if (g > worst_g[kernel]) worst_g[kernel] = g;
                    if (fabs(m1 - 1) > worst_m1[kernel]) worst_m1[kernel] = fabs(m1 - 1);
                    if (kernel == 0 && fabs(lap - 1) > worst_lap) worst_lap = fabs(lap - 1);
                    if (trial == 0) /* the library's lattice sum is the same sum */
                        assert_true(fabs(sph_lattice_sum(kernel, dims, h, dx) * V - sw) < 1e-12);
                }
            }
            print_message("  %dD h = %.1f dx: sum V W - 1 (poly6/cubic/wendland) = %.1e %.1e %.1e; "
                          "|sum V grad W| h = %.1e %.1e %.1e (at a lattice point %.0e); "
                          "first moment - 1 = %.1e %.1e %.1e; Laplacian moment - 1 = %.1e\n",
                          dims, hf[hi], worst_w[0], worst_w[1], worst_w[2], worst_g[0], worst_g[1], worst_g[2], sym_g,
                          worst_m1[0], worst_m1[1], worst_m1[2], worst_lap);
            assert_true(sym_g < 1e-12); /* exact by symmetry at a lattice point */
            for (int kernel = 0; kernel < 3; ++kernel) {
                assert_true(worst_w[kernel] < tol_w[dims - 2][hi][kernel]);
                assert_true(worst_g[kernel] < tol_g[dims - 2][hi][kernel]);
                assert_true(worst_m1[kernel] < tol_m1[dims - 2][hi][kernel]);
            }
            assert_true(worst_lap < tol_lap[dims - 2][hi]);
        }
}

/* sph_params_from_scene derives the EOS constants and norms; sph_prepare sets masses. */
static void test_params_and_prepare(void **state)
{
    (void)state;
    scene s;
    const int nt[3] = { 8, 8, 8 }, nf[3] = { 4, 4, 4 };
    ref_sph_scene(&s, 2, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, nt, nf);
    sph_params p;
    sph_params_from_scene(&s, &p);
    assert_float_equal(p.support, 0.026f, 1e-7);
    assert_float_equal(p.eos_k, 1000.0 * 400.0 / 7.0, 1e-2);
    assert_float_equal(p.w_norm, 7.0 / (4.0 * M_PI * 0.013 * 0.013), 1e-1);
    assert_float_equal(p.gravity[1], -9.81f, 1e-6);
    assert_int_equal(p.dims, 2);
    ref_sph_scene(&s, 3, KERNEL_POLY6, EOS_LINEAR, VISC_LAPLACIAN, 0.01, 1.3, nt, nf);
    sph_params_from_scene(&s, &p);
    assert_float_equal(p.eos_k, 400.0f, 1e-4);
    assert_float_equal(p.c0, 20.0f, 1e-5);
    assert_float_equal(p.gravity[2], -9.81f, 1e-6);

    particles pa;
    sphsim_error e;
    assert_int_equal(ref_sph_particles(&s, &pa, &e), SPHSIM_OK);
    assert_int_equal(prepare_sph(&s, &pa, &e), SPHSIM_OK);
    const double S = sph_lattice_sum(KERNEL_POLY6, 3, s.h, s.spacing);
    for (size_t i = 0; i < pa.n; ++i) assert_float_equal(pa.mass[i], 1000.0 / S, 1e-9);
    print_message("  3D poly6 h = 1.3 dx: m = %.6g kg vs rho0 dx^3 = %.6g kg\n", pa.mass[0], 1000.0 * 1e-6);
    particles_free(&pa);

    /* a tank 8.3 dx wide: init.c's wall lattice has 8 cells of 1.0375 dx, and the boundary
     * particles' mass follows that volume */
    ref_sph_scene(&s, 2, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, nt, nf);
    s.tank.max[0] = 0.083;
    s.gravity[1] = 0.0;
    assert_int_equal(ref_sph_particles(&s, &pa, &e), SPHSIM_OK);
    assert_int_equal(prepare_sph(&s, &pa, &e), SPHSIM_OK);
    const double m2 = 1000.0 / sph_lattice_sum(KERNEL_WENDLAND, 2, s.h, s.spacing);
    assert_float_equal(pa.mass[0], m2, 1e-9);
    assert_float_equal(pa.mass[pa.n - 1], m2 * 1.0375, 1e-9);
    particles_free(&pa);
}

/* ------------------------------------------------------------------ device */

/* The tuning the solvers of these tests are made with (tuning.h; the defaults, which tests
 * change around the solvers they make). */
static sphsim_tuning T;

typedef struct fixture {
    ocl_device d;
    int ok;
} fixture;

static int setup_device(void **state)
{
    static fixture f;
    sphsim_error e;
    memset(&f, 0, sizeof f);
    /* SPHSIM_TEST_DEVICE picks another device (e.g. "gpu"); PoCL's CPU device by default */
    const char *sel = getenv("SPHSIM_TEST_DEVICE");
    if (device_open(&f.d, sel && *sel ? sel : "cpu", 0, NULL, &e) != SPHSIM_OK) {
        fprintf(stderr, "device_open: %s\n", e.msg);
        return -1;
    }
    f.ok = 1;
    *state = &f;
    return 0;
}

static int teardown_device(void **state)
{
    fixture *f = *state;
    if (f && f->ok) device_close(&f->d);
    return 0;
}

/* Device arrays of one test run, the host sort, and the neighbour tables. */
typedef struct run {
    dev_state st;
    cl_mem cs, ce, gpb;
    cl_mem mass; /* the masses, a copy the solver does not read (it takes them from pos.w) */
    grid_params gp;
    uint32_t *order;
} run;

/* The host grid's margin beyond the tank, in particle spacings: 0, so that the walls fall into
 * the grid's outer cells, or (run_check_case's wide cases) a grid over the walls as sim.c's,
 * on which a wall can be more than a cell from the fluid it meets: with 3.3 dx and cells of
 * R (1 + skin) = 2.86 dx, the walls' first layer (at -0.5 dx) ends the first cell, 0.06 dx from
 * its edge, and the fluid at 2.5 dx, 1.15 R away, is two cells on. */
static double g_grid_margin = 0.0;

/* cell: the cell size of the host grid (>= the support radius) */
static void run_alloc_cell(ocl_device *d, run *r, size_t n, const scene *s, double cell)
{
    sphsim_error e;
    memset(r, 0, sizeof *r);
    r->st.n = n;
    double lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        const double m = k < s->dims ? g_grid_margin * s->spacing : 0.0;
        lo[k] = s->tank.min[k] - m;
        hi[k] = s->tank.max[k] + m;
    }
    ref_sph_grid_params(s->dims, lo, hi, cell, &r->gp);
    assert_int_equal(device_alloc(d, 16 * n, "pos", &r->st.pos, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 16 * n, "vel", &r->st.vel, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 16 * n, "pos_next", &r->st.pos_next, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 16 * n, "vel_next", &r->st.vel_next, &e), SPHSIM_OK);
    /* wide enough for either layout (sph_record_bytes) */
    assert_int_equal(device_alloc(d, sph_record_bytes(NULL, 1) * n, "pos_p", &r->st.pos_p, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 4 * n, "mass", &r->mass, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, n, "type", &r->st.type, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 4 * n, "id", &r->st.id, &e), SPHSIM_OK); /* the moving walls' */
    assert_int_equal(device_alloc(d, 8, "flags", &r->st.flags, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 4 * r->gp.n_cells, "cell_start", &r->cs, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 4 * r->gp.n_cells, "cell_end", &r->ce, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, sizeof r->gp, "grid_params", &r->gpb, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->gpb, 0, sizeof r->gp, &r->gp, &e), SPHSIM_OK);
    r->order = calloc(n, sizeof *r->order);
    assert_non_null(r->order);
}

static void run_alloc(ocl_device *d, run *r, size_t n, const scene *s) { run_alloc_cell(d, r, n, s, 2.0 * s->h); }

static void run_free(run *r)
{
    cl_mem all[] = { r->st.pos,  r->st.vel,   r->st.pos_next, r->st.vel_next, r->st.pos_p, r->mass,
                     r->st.type, r->st.flags, r->cs,          r->ce,          r->gpb,         r->st.id };
    for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
        if (all[k]) clReleaseMemObject(all[k]);
    free(r->order);
}

/* Sort `p` by cell on the host, upload it (sorted) with the cell tables, clear flags. */
static void run_upload(ocl_device *d, sph_solver *sol, run *r, const particles *p)
{
    sphsim_error e;
    const size_t n = p->n;
    uint32_t *cs = calloc(r->gp.n_cells, 4), *ce = calloc(r->gp.n_cells, 4);
    float *pos = malloc(16 * n), *vel = malloc(16 * n), *mass = malloc(4 * n);
    uint8_t *type = malloc(n);
    uint32_t *id = malloc(4 * n);
    assert_true(cs && ce && pos && vel && mass && type && id);
    assert_int_equal(ref_sph_sort(&r->gp, n, p->pos, r->order, cs, ce), 0);
    for (size_t k = 0; k < n; ++k) {
        const uint32_t i = r->order[k];
        memcpy(pos + 4 * k, p->pos + 4 * i, 16);
        memcpy(vel + 4 * k, p->vel + 4 * i, 16);
        pos[4 * k + 3] = p->mass[i]; /* pos.w = m, as sim.c uploads it (state.h) */
        /* vel.w = rho: the state of an integrated density (a summation's density stage
         * overwrites it before anything reads it) */
        if (p->type[i] == PTYPE_FLUID) vel[4 * k + 3] = p->rho[i];
        mass[k] = p->mass[i];
        type[k] = p->type[i];
        id[k] = p->id ? p->id[i] : i;
    }
    const uint32_t zero[2] = { 0, 0 }; /* flag bits, wall put-backs */
    /* both pairs, as a run's are after its first step: the list tests run the density stage
     * alone at times and then read the walls' density from either (upload_moved) */
    assert_int_equal(device_write(d, r->st.pos, 0, 16 * n, pos, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->st.vel, 0, 16 * n, vel, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->st.pos_next, 0, 16 * n, pos, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->st.vel_next, 0, 16 * n, vel, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->mass, 0, 4 * n, mass, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->st.type, 0, n, type, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->st.id, 0, 4 * n, id, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->st.flags, 0, sizeof zero, zero, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->cs, 0, 4 * r->gp.n_cells, cs, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, r->ce, 0, 4 * r->gp.n_cells, ce, &e), SPHSIM_OK);
    free(cs);
    free(ce);
    free(pos);
    free(vel);
    free(mass);
    free(type);
    free(id);
    /* the forces loop's two masses (sim.c sets them from the particles the same way) */
    assert_int_equal(sph_set_masses(sol, p->pos, p->mass, p->type, n, &e), SPHSIM_OK);
}

/* Run one step and read results back into particle order (`p` order). */
static void run_step(ocl_device *d, sph_solver *s, run *r, size_t n, float *rho, float *pressure, float *pos_next,
                     float *vel_next, uint32_t *flags)
{
    sphsim_error e;
    sphsim_status st = sph_enqueue(s, r->cs, r->ce, r->gpb, &r->st, &e);
    if (st != SPHSIM_OK) fprintf(stderr, "sph_enqueue: %s\n", e.msg);
    assert_int_equal(st, SPHSIM_OK);
    assert_int_equal(clFinish(d->queue), CL_SUCCESS);
    const size_t pb = sph_solver_record_bytes(s), pw = pb / 4; /* pos_p's bytes and floats per particle */
    float *vel = malloc(16 * n), *pp = malloc(pb * n), *mass = malloc(4 * n), *b4 = malloc(16 * n),
          *b5 = malloc(16 * n);
    uint8_t *type = malloc(n);
    assert_true(vel && pp && mass && type && b4 && b5);
    assert_int_equal(device_read(d, r->st.vel, 0, 16 * n, vel, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, r->st.pos_p, 0, pb * n, pp, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, r->mass, 0, 4 * n, mass, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, r->st.type, 0, n, type, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, r->st.pos_next, 0, 16 * n, b4, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, r->st.vel_next, 0, 16 * n, b5, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, r->st.flags, 0, 4, flags, &e), SPHSIM_OK);
    /* the output stage (sim.c's snapshots): rho and p = EOS(rho) from the state just read */
    cl_mem out_rho = NULL, out_p = NULL;
    float *o_rho = malloc(4 * n), *o_p = malloc(4 * n);
    assert_true(o_rho && o_p);
    assert_int_equal(device_alloc(d, 4 * n, "rho out", &out_rho, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(d, 4 * n, "p out", &out_p, &e), SPHSIM_OK);
    assert_int_equal(sph_pressure(s, &r->st, out_rho, out_p, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, out_rho, 0, 4 * n, o_rho, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, out_p, 0, 4 * n, o_p, &e), SPHSIM_OK);
    clReleaseMemObject(out_rho);
    clReleaseMemObject(out_p);
    double p_max = 0.0;
    for (size_t k = 0; k < n; ++k) {
        const double rk = fabs((double)vel[4 * k + 3]);
        p_max = fmax(p_max, fabs((double)pp[pw * k + 3] * rk * rk));
    }
    const int integrated = sph_density_integrated(s);
    for (size_t k = 0; k < n; ++k) {
        const uint32_t i = r->order[k];
        /* rho in vel.w (-rho for walls), (x, p/rho^2) in pos_p; the mass rides along in
         * pos_next.w. An integrated density: the step's in the record (the state's vel.w the
         * last step's), and in vel_next.w for the next step */
        const float rho_k = integrated ? fabsf(pp[8 * k + 7]) : fabsf(vel[4 * k + 3]);
        assert_true(((integrated ? pp[8 * k + 7] : vel[4 * k + 3]) < 0.0f) == (type[k] == PTYPE_BOUNDARY));
        if (integrated && type[k] == PTYPE_FLUID) assert_true(b5[4 * k + 3] == pp[8 * k + 7]);
        assert_true(b4[4 * k + 3] == mass[k]);
        if (rho) rho[i] = rho_k;
        if (pressure) pressure[i] = (float)((double)pp[pw * k + 3] * rho_k * rho_k);
        /* the output's density is the state's, walls' included (positive); its pressure the
         * state's within the EOS round trip (a wall's p_w -> rho_w -> p; 1 Pa at rest) */
        assert_true(o_rho[k] == rho_k && o_rho[k] > 0.0f);
        assert_true(fabs(o_p[k] - (double)pp[pw * k + 3] * rho_k * rho_k) <= 1e-4 * p_max + 1.0);
        if (pw == 8) {
            /* with lists, the record's second half: the state's (v, rho) for fluid, (v_w, -rho_w)
             * for walls (v_w = 0 at rest; a moving wall's, -DMOTION), which the loops read
             * instead of vel */
            const float want[4] = { vel[4 * k], vel[4 * k + 1], vel[4 * k + 2],
                                    integrated && type[k] == PTYPE_FLUID ? pp[8 * k + 7] : vel[4 * k + 3] };
            assert_memory_equal(pp + 8 * k + 4, want, 16);
        }
        memcpy(pos_next + 4 * i, b4 + 4 * k, 16);
        memcpy(vel_next + 4 * i, b5 + 4 * k, 16);
    }
    free(vel);
    free(pp);
    free(o_rho);
    free(o_p);
    free(mass);
    free(type);
    free(b4);
    free(b5);
}

/* lists: 0 the cell walk; 1 neighbour lists for n particles; 2 lists of 3 entries, so that every
 * particle overflows its list and takes the fallback walk; 3 lists split over three buffers (as
 * when they exceed the device's largest buffer), a third of the particles' lists in each, the
 * last part holding fewer; 4 the same with four entries per load (the GPUs' layout, whatever
 * the device); 5 lists of half the entries, so that in the same step some particles read their
 * lists and others (the fluid inside, with the most neighbours) walk, in the list kernels'
 * _walk twins, also over three buffers (every mode from 3 on splits them) */
/* The solvers' first density stage advances an integrated density (sph_set_advance). */
static int g_advance = 0;

static sph_solver *make_solver_lists(ocl_device *d, const scene *s, int lists, size_t n)
{
    sph_solver *sol = NULL;
    sphsim_error e;
    sphsim_tuning t = T;
    if (lists >= 3) t.list_parts = 3;
    if (lists == 4) t.list_pack = 4;
    sphsim_status st = sph_create(&sol, d, s, lists ? n : 0, &t, &e);
    if (st != SPHSIM_OK) fprintf(stderr, "sph_create: %s\n", e.msg);
    assert_int_equal(st, SPHSIM_OK);
    assert_int_equal((sph_nlist(sol) != NULL), lists != 0);
    sph_set_advance(sol, g_advance);
    if (lists == 2) assert_int_equal(nlist_set_cap(sph_nlist(sol), 3, &e), SPHSIM_OK);
    if (lists == 5)
        assert_int_equal(nlist_set_cap(sph_nlist(sol), nlist_get_params(sph_nlist(sol))->list_cap / 8 * 4, &e),
                         SPHSIM_OK);
    return sol;
}

/* make_solver_lists with the lists built `way` (tuning.list_build: LIST_BUILD_APART or
 * LIST_BUILD_FUSED). */
static sph_solver *make_solver_way(ocl_device *d, const scene *s, int lists, size_t n, int way)
{
    const int keep = T.list_build;
    T.list_build = way;
    sph_solver *sol = make_solver_lists(d, s, lists, n);
    T.list_build = keep;
    return sol;
}

static sph_solver *make_solver(ocl_device *d, const scene *s) { return make_solver_lists(d, s, 0, 0); }

/* Perturb fluid particles: positions by up to +-0.15 dx, velocities up to +-1 m/s per axis. */
static void perturb(const scene *s, particles *p, uint64_t seed)
{
    for (size_t i = 0; i < p->n; ++i) {
        if (p->type[i] != PTYPE_FLUID) continue;
        for (int a = 0; a < s->dims; ++a) {
            p->pos[4 * i + a] += (float)(0.15 * s->spacing * ref_sph_rand(&seed));
            p->vel[4 * i + a] = (float)ref_sph_rand(&seed);
        }
    }
}

typedef struct scheme {
    scene_kernel kernel;
    scene_eos eos;
    scene_visc visc;
} scheme;

static const scheme schemes[] = {
    { KERNEL_POLY6, EOS_LINEAR, VISC_LAPLACIAN },   /* Mueller et al. 2003 */
    { KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL }, /* weakly compressible (the default) */
    { KERNEL_CUBIC, EOS_TAIT, VISC_ARTIFICIAL },
    { KERNEL_WENDLAND, EOS_TAIT, VISC_LAPLACIAN }, /* Morris laminar viscosity */
    { KERNEL_CUBIC, EOS_LINEAR, VISC_LAPLACIAN },
};

/* One device step against the brute-force double reference, for every scheme, 2D and 3D.
 * Errors: rho relative to rho; pressure relative to the largest pressure (fluid and the walls'
 * extrapolated pressure); x_next and v_next relative to the largest change in the step
 * (displacement v dt, velocity change a dt), which is the part the step computes. Viscosity is
 * made strong (alpha 0.5, mu 20 Pa s) so that a wrong viscosity term cannot hide under pressure. */
/* The walls move (test_moving_walls_vs_reference): compare_step checks them against the
 * reference's places instead of at rest. */
static int g_walls_move = 0;

/* One device step (rho_d .. v_d, particle order) against the double-precision brute-force
 * reference (rho_r .. v_r) for the particles p the step started from. */
static void compare_step(const particles *p, const double *rho_r, const double *p_r, const double *x_r,
                         const double *v_r, const float *rho_d, const float *p_d, const float *x_d, const float *v_d,
                         const char *label)
{
    const size_t n = p->n;
    double e_rho = 0, dx_max = 0, dv_max = 0, e_x = 0, e_v = 0, rho_min = 1e30, rho_max = 0;
    double e_p = 0, p_max = 0, pw_max = 0;
    for (size_t i = 0; i < n; ++i) {
        const double er = fabs(rho_d[i] - rho_r[i]) / rho_r[i];
        if (er > e_rho) e_rho = er;
        e_p = fmax(e_p, fabs(p_d[i] - p_r[i]));
        p_max = fmax(p_max, p_r[i]);
        if (p->type[i] == PTYPE_BOUNDARY) pw_max = fmax(pw_max, p_r[i]);
        if (p->type[i] != PTYPE_FLUID) {
            for (int a = 0; a < 3 && g_walls_move; ++a) { /* walls of a moving tank: as the reference
                                                             places them, in float */
                if (!(fabs(x_d[4 * i + a] - x_r[4 * i + a]) <= 2e-7 * (1.0 + fabs(x_r[4 * i + a]))))
                    fail_msg("wall %zu axis %d at %.9g, want %.9g", i, a, x_d[4 * i + a], x_r[4 * i + a]);
                if (!(fabs(v_d[4 * i + a] - v_r[4 * i + a]) <= 1e-6 + 1e-5 * fabs(v_r[4 * i + a])))
                    fail_msg("wall %zu axis %d moves at %.9g, want %.9g", i, a, v_d[4 * i + a], v_r[4 * i + a]);
            }
            for (int a = 0; a < 3 && !g_walls_move; ++a) { /* boundary particles never move: exactly */
                assert_true(x_d[4 * i + a] == p->pos[4 * i + a]);
                assert_true(v_d[4 * i + a] == 0.0f);
            }
            /* (v_d's w is the density slot, which the next density stage writes: after a step
             * that kept the grid it still holds the wall's last density) */
            continue;
        }
        if (rho_r[i] < rho_min) rho_min = rho_r[i];
        if (rho_r[i] > rho_max) rho_max = rho_r[i];
        for (int a = 0; a < 3; ++a) {
            const double ddx = fabs(x_r[4 * i + a] - p->pos[4 * i + a]);
            const double ddv = fabs(v_r[4 * i + a] - p->vel[4 * i + a]);
            if (ddx > dx_max) dx_max = ddx;
            if (ddv > dv_max) dv_max = ddv;
            const double ex = fabs(x_d[4 * i + a] - x_r[4 * i + a]);
            const double ev = fabs(v_d[4 * i + a] - v_r[4 * i + a]);
            if (ex > e_x) e_x = ex;
            if (ev > e_v) e_v = ev;
        }
    }
    e_x /= dx_max;
    e_v /= dv_max;
    e_p /= p_max;
    print_message("  %s n = %4zu: rho %.0f..%.0f, max |a dt| = %.3g m/s; "
                  "max p %.3g Pa (walls %.3g Pa); max rel err rho %.1e, p %.1e, x_next %.1e, v_next %.1e\n",
                  label, n, rho_min, rho_max, dv_max, p_max, pw_max, e_rho, e_p, e_x, e_v);
    assert_true(rho_max - rho_min > 10.0); /* the perturbation really changed densities */
    assert_true(pw_max > 0.01 * p_max);    /* the walls felt the fluid */
    assert_true(e_rho < 2e-6);
    assert_true(e_p < 5e-5); /* k drho with drho/rho ~ 5e-7 float sums */
    assert_true(e_x < 1e-3);
    assert_true(e_v < 1e-3);
}

/* One step of the solver on run r (uploaded from p) and of the double-precision brute-force
 * reference on p at time t (ref_sph_step_at: a moving tank's place then); the results must agree
 * (compare_step) and neither may raise a flag. */
static void step_vs_reference_at(fixture *f, sph_solver *sol, run *r, const scene *s, const particles *p, double t,
                                 const char *label)
{
    const size_t n = p->n;
    double *rho_r = malloc(8 * n), *p_r = malloc(8 * n), *x_r = malloc(32 * n), *v_r = malloc(32 * n);
    float *rho_d = malloc(4 * n), *p_d = malloc(4 * n), *x_d = malloc(16 * n), *v_d = malloc(16 * n);
    assert_true(rho_r && p_r && x_r && v_r && rho_d && p_d && x_d && v_d);
    unsigned flags_r;
    uint32_t flags_d = 0;
    ref_sph_step_at(s, p, t, rho_r, p_r, x_r, v_r, &flags_r);
    run_step(&f->d, sol, r, n, rho_d, p_d, x_d, v_d, &flags_d);
    compare_step(p, rho_r, p_r, x_r, v_r, rho_d, p_d, x_d, v_d, label);
    assert_int_equal(flags_d, flags_r);
    assert_int_equal(flags_d, 0);
    free(rho_r);
    free(p_r);
    free(x_r);
    free(v_r);
    free(rho_d);
    free(p_d);
    free(x_d);
    free(v_d);
}

static void step_vs_reference(fixture *f, sph_solver *sol, run *r, const scene *s, const particles *p,
                              const char *label)
{
    step_vs_reference_at(f, sol, r, s, p, 0.0, label);
}

/* The small tank of the step tests (dx 1 cm, h 1.3 dx, alpha 0.5), its particles prepared
 * (hydrostatic start) and perturbed with `seed`; the fluid block nfluid dx per axis (NULL: the
 * default), moved `shift` dx along x. */
static void perturbed_scene_block(scene *s, particles *p, int dims, const scheme *sc, uint64_t seed, const int *nfluid,
                                  int shift)
{
    const int nt[3] = { 12, 12, 6 }, nf2[3] = { 8, 8, 1 }, nf3[3] = { 5, 5, 4 }, nt3[3] = { 6, 6, 6 };
    ref_sph_scene(s, dims, sc->kernel, sc->eos, sc->visc, 0.01, 1.3, dims == 2 ? nt : nt3,
                  nfluid      ? nfluid
                  : dims == 2 ? nf2
                              : nf3);
    s->blocks[0].min[0] += shift * s->spacing;
    s->blocks[0].max[0] += shift * s->spacing;
    s->alpha = 0.5;
    sphsim_error e;
    assert_int_equal(ref_sph_particles(s, p, &e), SPHSIM_OK);
    assert_int_equal(prepare_sph(s, p, &e), SPHSIM_OK);
    /* walls a quarter heavier than the fluid (sph_prepare makes them equal on this tank, whose
     * sides are whole multiples of dx), so that a forces loop taking the wrong one of its two
     * masses (sph_set_masses) differs from the reference */
    for (size_t i = 0; i < p->n; ++i)
        if (p->type[i] == PTYPE_BOUNDARY) p->mass[i] *= 1.25f;
    perturb(s, p, seed);
}

/* The default block in place. */
static void perturbed_scene(scene *s, particles *p, int dims, const scheme *sc, uint64_t seed)
{
    perturbed_scene_block(s, p, dims, sc, seed, NULL, 0);
}

/* The host reads the go word of the step sph_begin_step enqueued (sim.c's default): `want`
 * (1 rebuild, 0 keep). */
static void expect_go(sph_solver *sol, int want)
{
    sphsim_error e;
    int go = -1;
    assert_int_equal(nlist_decide(sph_nlist(sol), &go, &e), SPHSIM_OK);
    assert_int_equal(go, want);
}

/* One host-decided rebuild step (a new solver's first) with the lists built `way`
 * (LIST_BUILD_APART, GPUs' default, or LIST_BUILD_FUSED, CPUs'): rho, p, x_next and v_next in
 * id order, and the lists as built (nlist_read_lists, sorted indices). */
static void host_rebuild_step(fixture *f, const scene *s, const particles *p, int lists, int way, float *rho, float *pr,
                              float *x, float *v, uint32_t *counts, uint32_t *entries)
{
    sph_solver *sol = make_solver_way(&f->d, s, lists, p->n, way);
    run r;
    run_alloc(&f->d, &r, p->n, s);
    run_upload(&f->d, sol, &r, p);
    sphsim_error e;
    assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
    expect_go(sol, 1);
    uint32_t flags = 0;
    run_step(&f->d, sol, &r, p->n, rho, pr, x, v, &flags);
    assert_int_equal(flags, 0);
    assert_int_equal(nlist_read_lists(sph_nlist(sol), p->n, counts, entries, &e), SPHSIM_OK);
    /* every entry is another particle: no list holds its own particle (the density adds the
     * self term before the entries) */
    const size_t cap = nlist_get_params(sph_nlist(sol))->list_cap;
    for (size_t k = 0; k < p->n; ++k)
        for (size_t q = 0; q < cap && q < counts[k]; ++q) {
            assert_true(entries[k * cap + q] < p->n);
            assert_true(entries[k * cap + q] != k);
        }
    run_free(&r);
    sph_destroy(sol);
}

/* The two ways give the same step and the same lists to the bit (docs/grid.md: the build's
 * density sum and the list loop visit the same neighbours in the same order, and both builds
 * walk the same cells), particles over list_cap included. */
static void rebuild_ways_agree(fixture *f, const scene *s, const particles *p, int lists)
{
    const size_t n = p->n, cap = nlist_cap(s);
    static const int way[2] = { LIST_BUILD_APART, LIST_BUILD_FUSED };
    float *a[2][4];
    uint32_t *counts[2], *entries[2];
    const size_t w[4] = { 1, 1, 4, 4 }; /* floats per particle: rho, p, x_next, v_next */
    for (int m = 0; m < 2; ++m) {
        for (int k = 0; k < 4; ++k) assert_non_null(a[m][k] = calloc(w[k] * n, sizeof(float)));
        assert_non_null(counts[m] = calloc(n, sizeof(uint32_t)));
        assert_non_null(entries[m] = calloc(n * cap, sizeof(uint32_t)));
        host_rebuild_step(f, s, p, lists, way[m], a[m][0], a[m][1], a[m][2], a[m][3], counts[m], entries[m]);
    }
    size_t listed = 0;
    for (size_t i = 0; i < n; ++i) listed += counts[0][i];
    assert_true(listed > 2 * n); /* the lists hold something to compare */
    for (int k = 0; k < 4; ++k) assert_memory_equal(a[0][k], a[1][k], w[k] * n * sizeof(float));
    assert_memory_equal(counts[0], counts[1], n * sizeof(uint32_t));
    assert_memory_equal(entries[0], entries[1], n * cap * sizeof(uint32_t));
    for (int m = 0; m < 2; ++m) {
        for (int k = 0; k < 4; ++k) free(a[m][k]);
        free(counts[m]);
        free(entries[m]);
    }
}

static void test_step_vs_reference(void **state)
{
    fixture *f = *state;
    static const char *const mode[6] = { "walk    ", "lists   ", "overflow", "3 parts ", "3 parts4", "mixed   " };
    for (int lists = 0; lists <= 5; ++lists)
        for (int dims = 2; dims <= 3; ++dims)
            for (size_t si = 0; si < sizeof schemes / sizeof schemes[0]; ++si) {
                const scheme *sc = &schemes[si];
                scene s;
                particles p;
                perturbed_scene(&s, &p, dims, sc, 1000 + si);
                s.mu = 20.0;
                const size_t n = p.n;

                s.skin = 0.1;
                /* lists: the first step builds them. The host reads that decision in the overflow,
                 * "3 parts4" and mixed modes, as sim.c does, and launches the kernels of a step it
                 * knows rebuilds, here the lists alone and then the densities from them (GPUs'
                 * default); in the others the kernels read it on the device, as in a step whose
                 * decision the host has not read, and the build sums the densities (sph_density) */
                const int host = lists == 2 || lists == 4 || lists == 5;
                sph_solver *sol = make_solver_way(&f->d, &s, lists, n, host ? LIST_BUILD_APART : LIST_BUILD_FUSED);
                run r;
                run_alloc(&f->d, &r, n, &s);
                run_upload(&f->d, sol, &r, &p);
                if (host) {
                    sphsim_error e;
                    assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
                    expect_go(sol, 1);
                }
                char label[96];
                snprintf(label, sizeof label, "%s %dD %-8s %-6s %-10s %s", mode[lists], dims, kname[sc->kernel],
                         sc->eos == EOS_LINEAR ? "linear" : "tait",
                         sc->visc == VISC_LAPLACIAN ? "laplacian" : "artificial", host ? "host" : "");
                step_vs_reference(f, sol, &r, &s, &p, label);
                if (host) rebuild_ways_agree(f, &s, &p, lists);

                run_free(&r);
                sph_destroy(sol);
                particles_free(&p);
            }
}

/* The integrated density (fluid.density.type "continuity") against the reference: the density
 * after the step (continuity and diffusion, vel_next.w) relative to its change in the step,
 * besides everything step_vs_reference compares. The fluid's densities are perturbed by up to
 * +-2 % and delta is 1, so that a wrong diffusion term cannot hide under the continuity term:
 * without diffusion the densities after the step differ from the reference's by far more than
 * the tolerance. */
static void continuity_case(fixture *f, int lists, int dims, const scheme *sc, double *change, double *err,
                            double *share)
{
    scene s;
    particles p;
    perturbed_scene(&s, &p, dims, sc, 2000 + (uint64_t)lists);
    s.mu = 20.0;
    s.skin = 0.1;
    s.density = DENSITY_CONTINUITY;
    s.diffusion = 1.0;
    uint64_t seed = 77;
    for (size_t i = 0; i < p.n; ++i)
        if (p.type[i] == PTYPE_FLUID) p.rho[i] = (float)(s.rest_density * (1.0 + 0.02 * ref_sph_rand(&seed)));
    const size_t n = p.n;
    /* in the GPUs' layout and the mixed mode the host reads the decision and the lists are built
     * apart, as in step_vs_reference */
    const int host = lists == 4 || lists == 5;
    g_advance = 1; /* as in every step but a run's first */
    sph_solver *sol = make_solver_way(&f->d, &s, lists, n, host ? LIST_BUILD_APART : LIST_BUILD_FUSED);
    run r;
    run_alloc(&f->d, &r, n, &s);
    run_upload(&f->d, sol, &r, &p);
    if (host) {
        sphsim_error e;
        assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
        expect_go(sol, 1);
    }
    double *rho_r = malloc(8 * n), *p_r = malloc(8 * n), *x_r = malloc(32 * n), *v_r = malloc(32 * n);
    float *rho_d = malloc(4 * n), *p_d = malloc(4 * n), *x_d = malloc(16 * n), *v_d = malloc(16 * n);
    assert_true(rho_r && p_r && x_r && v_r && rho_d && p_d && x_d && v_d);
    unsigned flags_r;
    uint32_t flags_d = 0;
    ref_sph_step(&s, &p, rho_r, p_r, x_r, v_r, &flags_r);
    run_step(&f->d, sol, &r, n, rho_d, p_d, x_d, v_d, &flags_d);
    char label[96];
    snprintf(label, sizeof label, "continuity %d %dD %-8s", lists, dims, kname[sc->kernel]);
    compare_step(&p, rho_r, p_r, x_r, v_r, rho_d, p_d, x_d, v_d, label);
    assert_int_equal(flags_d, 0);
    *change = *err = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (p.type[i] != PTYPE_FLUID) continue;
        *change = fmax(*change, fabs(v_r[4 * i + 3] - p.rho[i]));
        *err = fmax(*err, fabs(v_d[4 * i + 3] - v_r[4 * i + 3]));
    }
    *err /= *change;
    /* the diffusion's share: the reference without it */
    s.diffusion = 0.0;
    ref_sph_step(&s, &p, rho_r, p_r, x_r, v_r, &flags_r);
    *share = 0.0;
    for (size_t i = 0; i < n; ++i)
        if (p.type[i] == PTYPE_FLUID) *share = fmax(*share, fabs(v_r[4 * i + 3] - v_d[4 * i + 3]) / *change);
    print_message("    density after the step: max change %.3g kg/m^3, max rel err %.1e, diffusion's share %.2f\n",
                  *change, *err, *share);
    s.diffusion = 1.0;
    if (host) rebuild_ways_agree(f, &s, &p, lists); /* the fused build's walk and the lists agree */
    g_advance = 0;
    free(rho_r);
    free(p_r);
    free(x_r);
    free(v_r);
    free(rho_d);
    free(p_d);
    free(x_d);
    free(v_d);
    run_free(&r);
    sph_destroy(sol);
    particles_free(&p);
}

static void test_continuity_vs_reference(void **state)
{
    fixture *f = *state;
    static const int modes[] = { 0, 1, 4, 5 }; /* walk, lists, the GPUs' layout, mixed (make_solver_lists) */
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; ++m)
        for (int dims = 2; dims <= 3; ++dims)
            for (size_t si = 0; si < sizeof schemes / sizeof schemes[0]; ++si) {
                double change, err, share;
                continuity_case(f, modes[m], dims, &schemes[si], &change, &err, &share);
                assert_true(change > 1.0);
                assert_true(err < 2e-3);
                assert_true(share > 0.05); /* a step without diffusion would fail err */
            }
}

/* Fluid at rest with the hydrostatic density rho0 + rho0 g (H - y) / c0^2 (linear EOS) keeps it:
 * the continuity term is 0 at rest and the diffusion leaves the hydrostatic part alone (Fourtakas
 * et al. 2019). The plain form (Molteni & Colagrossi 2009) would change a density by about
 * 2 delta h c0 (rho0 g dx / c0^2) sum |F| V dt: up to 0.07 kg/m^3 in one step here. */
static void test_continuity_hydrostatic(void **state)
{
    fixture *f = *state;
    for (int dims = 2; dims <= 3; ++dims) {
        scene s;
        particles p;
        const int nt[3] = { 10, 12, 10 }, nf[3] = { 10, 10, 10 };
        ref_sph_scene(&s, dims, KERNEL_WENDLAND, EOS_LINEAR, VISC_ARTIFICIAL, 0.01, 1.3, nt, nf);
        s.density = DENSITY_CONTINUITY;
        s.diffusion = 1.0;
        sphsim_error e;
        assert_int_equal(ref_sph_particles(&s, &p, &e), SPHSIM_OK);
        assert_int_equal(prepare_sph(&s, &p, &e), SPHSIM_OK);
        const double H = s.blocks[0].max[dims - 1], g = -s.gravity[dims - 1];
        const double c2 = s.stiffness;
        double spread = 0.0;
        for (size_t i = 0; i < p.n; ++i)
            if (p.type[i] == PTYPE_FLUID) {
                const double depth = H - p.pos[4 * i + dims - 1];
                p.rho[i] = (float)(s.rest_density * (1.0 + g * depth / c2));
                spread = fmax(spread, p.rho[i] - s.rest_density);
            }
        g_advance = 1;
        sph_solver *sol = make_solver(&f->d, &s);
        g_advance = 0;
        run r;
        run_alloc(&f->d, &r, p.n, &s);
        run_upload(&f->d, sol, &r, &p);
        float *x = malloc(16 * p.n), *v = malloc(16 * p.n);
        assert_true(x && v);
        uint32_t flags = 0;
        run_step(&f->d, sol, &r, p.n, NULL, NULL, x, v, &flags);
        double worst = 0.0;
        for (size_t i = 0; i < p.n; ++i)
            if (p.type[i] == PTYPE_FLUID) worst = fmax(worst, fabs(v[4 * i + 3] - p.rho[i]));
        print_message("  %dD hydrostatic density (spread %.3g kg/m^3): max change in a step %.2g kg/m^3\n", dims,
                      spread, worst);
        assert_true(spread > 2.0);
        assert_true(worst < 2e-3);
        free(x);
        free(v);
        run_free(&r);
        sph_destroy(sol);
        particles_free(&p);
    }
}

/* A wall particle's list build skips the cells without fluid (nlist_cell_fluid, on the grid and
 * flags sim.c gives lists): a dry cell next to a wet one must be skipped and the wet one walked,
 * in either order along a row. With the fluid against the far wall in x, the walls at x < 0
 * fill the first cells with no fluid next to cells with fluid (dry, then wet); against the near
 * wall, the fluid's last cells are next to cells with only floor walls (wet, then dry); the
 * test checks that the placement's neighbours exist. A wall that missed its fluid neighbours
 * would get another pressure than the reference's: an off-by-one in the flag's index, either
 * way along x, fails here. In the "lists" mode (fused build, the device's decision) and the
 * "3 parts4" one (the GPUs' layout, the build apart, the host's decision). */
static void test_walls_beside_dry_cells(void **state)
{
    fixture *f = *state;
    static const scheme wcsph = { KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL };
    static const int modes[2] = { 1, 4 };
    for (int m = 0; m < 2; ++m)
        for (int far = 0; far <= 1; ++far)
            for (int dims = 2; dims <= 3; ++dims) {
                const int lists = modes[m], host = lists == 4;
                const int nf3[3] = { 3, 6, 4 }; /* 2D: the default block */
                scene s;
                particles p;
                perturbed_scene_block(&s, &p, dims, &wcsph, 77 + dims, dims == 2 ? NULL : nf3,
                                      far ? (dims == 2 ? 4 : 3) : 0);
                s.skin = 0.1;
                sph_solver *sol = make_solver_way(&f->d, &s, lists, p.n, host ? LIST_BUILD_APART : LIST_BUILD_FUSED);
                run r;
                /* the grid sim.c gives lists (cells support (1 + skin) wide) and the cells' fluid
             * flags on it (sph_bind_grid), which a wall particle's build reads */
                run_alloc_cell(&f->d, &r, p.n, &s, 2.0 * s.h * (1.0 + s.skin));
                sphsim_error e;
                assert_int_equal(sph_bind_grid(sol, r.cs, r.ce, r.gpb, r.gp.n_cells, &r.st, &e), SPHSIM_OK);
                /* cells with fluid and cells with walls, then the neighbours (x, x + 1) in a row
             * of which one has walls and no fluid and the other fluid */
                uint8_t *kind = calloc(r.gp.n_cells, 1);
                assert_non_null(kind);
                for (size_t i = 0; i < p.n; ++i)
                    kind[ref_sph_cell_index(&r.gp, p.pos + 4 * i)] |= p.type[i] == PTYPE_FLUID ? 1u : 2u;
                size_t pairs[2] = { 0, 0 }; /* dry then wet, wet then dry */
                for (uint32_t c = 0; c + 1 < r.gp.n_cells; ++c)
                    if (c % r.gp.ncell[0] + 1 < r.gp.ncell[0]) {
                        pairs[0] += kind[c] == 2u && (kind[c + 1] & 1u);
                        pairs[1] += (kind[c] & 1u) && kind[c + 1] == 2u;
                    }
                free(kind);
                const size_t want = pairs[far ? 0 : 1]; /* the placement's kind */
                assert_true(want > 0);
                run_upload(&f->d, sol, &r, &p);
                if (host) {
                    assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
                    expect_go(sol, 1);
                }
                char label[96];
                snprintf(label, sizeof label, "fluid at the %s wall %dD, %zu %s neighbours, %s", far ? "far " : "near",
                         dims, want, far ? "dry-wet" : "wet-dry", host ? "3 parts4, host" : "lists");
                step_vs_reference(f, sol, &r, &s, &p, label);
                run_free(&r);
                sph_destroy(sol);
                particles_free(&p);
            }
}

/* Neighbour lists kept over a step: lists built at positions X0 (in a grid of cells support
 * (1 + skin) wide), then every fluid particle moved by up to 0.48 skin / 2 while the sorted order
 * and the cell table stay as they were; the next step must keep the lists (go = 0) and still
 * match the brute-force reference at the new positions, with full lists and with every particle
 * over its list (the fallback walk on the kept grid). Then one particle moved beyond skin / 2
 * must make the following step rebuild, and a forced step rebuilds. With half the lists over
 * (some particles in each kernel of a pair) the host reads the decisions, as sim.c does. */
/* The particles p, moved on the host, into the device state in r's sorted order (sorted and
 * sorted_v: scratch of 4 n floats each), in both buffer pairs, as a step leaves the walls in
 * both (the forces stage writes a wall only in a step that re-sorted). */
static void upload_moved(fixture *f, sph_solver *sol, run *r, const particles *p, float *sorted, float *sorted_v)
{
    sphsim_error e;
    const size_t n = p->n;
    for (size_t k = 0; k < n; ++k) {
        memcpy(sorted + 4 * k, p->pos + 4 * r->order[k], 16);
        sorted[4 * k + 3] = p->mass[r->order[k]]; /* pos.w = m */
        memcpy(sorted_v + 4 * k, p->vel + 4 * r->order[k], 16);
    }
    /* the walls keep the density the device gave them (vel.w = -rho_w) in both pairs, as in a
     * run, where sph_forces copies it into the other pair in a rebuild step and sph_boundary
     * then skips the dry walls while the lists are kept. The tests here run the density stage
     * alone at times, which leaves it in one pair; the other still holds run_upload's vel.w
     * (>= 0) */
    float *dev_v = malloc(32 * n);
    assert_non_null(dev_v);
    assert_int_equal(device_read(&f->d, r->st.vel, 0, 16 * n, dev_v, &e), SPHSIM_OK);
    assert_int_equal(device_read(&f->d, r->st.vel_next, 0, 16 * n, dev_v + 4 * n, &e), SPHSIM_OK);
    for (size_t k = 0; k < n; ++k)
        if (p->type[r->order[k]] == PTYPE_BOUNDARY) {
            const float w0 = dev_v[4 * k + 3], w1 = dev_v[4 * (n + k) + 3];
            assert_true(w0 < 0.0f || w1 < 0.0f);
            sorted_v[4 * k + 3] = w0 < 0.0f ? w0 : w1;
        }
    free(dev_v);
    const cl_mem bufs[4] = { r->st.pos, r->st.pos_next, r->st.vel, r->st.vel_next };
    for (int b = 0; b < 4; ++b)
        assert_int_equal(device_write(&f->d, bufs[b], 0, 16 * n, b < 2 ? sorted : sorted_v, &e), SPHSIM_OK);
    /* and into the neighbour records, from which the forces loop also takes a fluid particle's
     * own x and v (with lists, kernels/sph_forces_integrate.cl): the density stage wrote them for the old
     * positions; p/rho^2 and rho stay */
    const size_t rec = sph_solver_record_bytes(sol) / 16; /* float4 per particle */
    float *pp = malloc(16 * rec * n);
    assert_non_null(pp);
    assert_int_equal(device_read(&f->d, r->st.pos_p, 0, 16 * rec * n, pp, &e), SPHSIM_OK);
    for (size_t k = 0; k < n; ++k) {
        memcpy(pp + 4 * rec * k, sorted + 4 * k, 12);
        if (rec == 2) memcpy(pp + 4 * (2 * k + 1), sorted_v + 4 * k, 12);
    }
    assert_int_equal(device_write(&f->d, r->st.pos_p, 0, 16 * rec * n, pp, &e), SPHSIM_OK);
    free(pp);
}

/* Move every fluid particle of p by up to `step` (m) along each axis, at random from `seed`. */
static void nudge_fluid(const scene *s, particles *p, double step, uint64_t seed)
{
    for (size_t i = 0; i < p->n; ++i)
        if (p->type[i] == PTYPE_FLUID)
            for (int a = 0; a < s->dims; ++a) p->pos[4 * i + a] += (float)(step * ref_sph_rand(&seed));
}

/* The set-up of the list tests: the perturbed tank (seed) with `skin` (and the fluid at rest with
 * `at_rest`, the time step times dt_scale), its solver with lists (`lists` as for
 * make_solver_lists) and a run on cells of the list radius, uploaded. list_test_setup: skin 0.2,
 * the perturbed velocities. */
static sph_solver *list_test_setup_skin(fixture *f, scene *s, particles *p, run *r, int dims, uint64_t seed, int lists,
                                        double skin, int at_rest, double dt_scale)
{
    static const scheme wcsph = { KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL };
    perturbed_scene(s, p, dims, &wcsph, seed);
    s->skin = skin;
    s->dt *= dt_scale;
    if (at_rest)
        for (size_t i = 0; i < p->n; ++i)
            for (int a = 0; a < 3; ++a) p->vel[4 * i + a] = 0.0f;
    sph_solver *sol = make_solver_lists(&f->d, s, lists, p->n);
    run_alloc_cell(&f->d, r, p->n, s, 2.0 * s->h * (1.0 + s->skin));
    run_upload(&f->d, sol, r, p);
    return sol;
}

static sph_solver *list_test_setup(fixture *f, scene *s, particles *p, run *r, int dims, uint64_t seed, int lists)
{
    return list_test_setup_skin(f, s, p, r, dims, seed, lists, 0.2, 0, 1.0);
}

/* One run of test_go_ahead: five host-decided steps on the perturbed tank's lists (each output
 * becomes the next step's state, the order kept, as sim.c's handles after an identity re-sort),
 * list_cap lowered before the third (nlist_set_cap: some lists are over it from then on) and
 * the fourth forced (sim.c's snapshot step, whose decision nlist_decide reads), the others read
 * with the decision read ahead (tuning.go_ahead) when `ahead`. The final state's positions,
 * velocities with densities and records: out[0] (4 n floats), out[1] (4 n) and out[2] (8 n),
 * allocated here; returns n. */
static size_t go_ahead_run(fixture *f, int dims, int ahead, float *out[3])
{
    scene s;
    particles p;
    run r;
    sphsim_error e;
    const sphsim_tuning keep = T;
    T.list_build = LIST_BUILD_APART;
    T.go_ahead = ahead;
    sph_solver *sol = list_test_setup(f, &s, &p, &r, dims, 900 + (uint64_t)dims, 1);
    T = keep;
    const size_t n = p.n;
    for (int step = 0; step < 5; ++step) {
        if (step == 2)
            assert_int_equal(nlist_set_cap(sph_nlist(sol), nlist_get_params(sph_nlist(sol))->list_cap / 8 * 4, &e),
                             SPHSIM_OK);
        const int force = step == 3;
        int go = -1, done = 0;
        assert_int_equal(sph_begin_step(sol, r.cs, r.ce, r.gpb, &r.st, force, &go, &done, &e), SPHSIM_OK);
        assert_int_equal(go, step == 0 || force); /* the others keep the lists */
        assert_int_equal(done, ahead && !go);
        if (step > 0) {
            cl_mem t = r.st.pos;
            r.st.pos = r.st.pos_next;
            r.st.pos_next = t;
            t = r.st.vel;
            r.st.vel = r.st.vel_next;
            r.st.vel_next = t;
        }
        if (!done) assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
        assert_int_equal(sph_enqueue_forces(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
    }
    long walkers = 0;
    assert_int_equal(nlist_walkers(sph_nlist(sol), &walkers, &e), SPHSIM_OK);
    assert_true(walkers > 0); /* the lowered cap leaves some particles walking */
    const cl_mem bufs[3] = { r.st.pos_next, r.st.vel, r.st.pos_p };
    for (int k = 0; k < 3; ++k) {
        assert_non_null(out[k] = malloc((k == 2 ? 32 : 16) * n));
        assert_int_equal(device_read(&f->d, bufs[k], 0, (k == 2 ? 32 : 16) * n, out[k], &e), SPHSIM_OK);
    }
    run_free(&r);
    sph_destroy(sol);
    particles_free(&p);
    return n;
}

/* The decision read ahead (tuning.go_ahead, GPUs' default: sph_begin_step enqueues the density
 * stage of a kept step before it waits for the decision, skipping the _walk kernels while it
 * knows that no list is over list_cap). The steps must come out as with the plain read
 * (nlist_decide), to the bit, also after list_cap was lowered under lists that no particle
 * overflowed, and after a rebuild that a plain read decided (both leave particles walking that
 * the last read ahead did not see). */
static void test_go_ahead(void **state)
{
    fixture *f = *state;
    for (int dims = 2; dims <= 3; ++dims) {
        float *b[2][3];
        const size_t n = go_ahead_run(f, dims, 0, b[0]);
        assert_int_equal(go_ahead_run(f, dims, 1, b[1]), n);
        for (int k = 0; k < 3; ++k) assert_memory_equal(b[0][k], b[1][k], (k == 2 ? 32 : 16) * n);
        for (int a = 0; a < 2; ++a)
            for (int k = 0; k < 3; ++k) free(b[a][k]);
        print_message("  ahead %dD: %zu particles, the same five steps to the bit\n", dims, n);
    }
}

static void test_list_keep(void **state)
{
    fixture *f = *state;
    static const int modes[3] = { 1, 2, 5 }; /* full lists, every list over, half of them over */
    for (int mi = 0; mi < 3; ++mi)
        for (int dims = 2; dims <= 3; ++dims) {
            const int lists = modes[mi];
            scene s;
            particles p;
            run r;
            /* the kernels follow the device's decisions, which the host does not read; with half
             * the lists over, the host reads each decision (as sim.c does), which also tells it
             * whether any list is over (nlist_decide), and builds the lists apart */
            const int host = lists == 5;
            const int keep = T.list_build;
            T.list_build = host ? LIST_BUILD_APART : LIST_BUILD_FUSED;
            sph_solver *sol = list_test_setup(f, &s, &p, &r, dims, 500 + (uint64_t)dims, lists);
            T.list_build = keep;
            sphsim_error e;
            const size_t n = p.n;
            /* step 1: go (the first step always builds), lists at X0 */
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
            if (host) expect_go(sol, 1);
            assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
            /* the particles the build found over list_cap: none, all fluid, or some of it */
            long walkers = -1, n_fluid = 0;
            for (size_t i = 0; i < p.n; ++i) n_fluid += p.type[i] == PTYPE_FLUID;
            assert_int_equal(nlist_walkers(sph_nlist(sol), &walkers, &e), SPHSIM_OK);
            if (lists == 1) assert_int_equal(walkers, 0);
            else if (lists == 2) assert_true(walkers >= n_fluid);
            else assert_true(walkers > 0 && walkers < n_fluid);
            /* move the fluid, keep the order and the cell table */
            const double half = 0.5 * 2.0 * s.h * s.skin, step = 0.48 * half / sqrt((double)dims);
            float *sorted = malloc(16 * n), *sorted_v = malloc(16 * n);
            assert_true(sorted && sorted_v);
            nudge_fluid(&s, &p, step, 42);
            /* step 2: keep; the moved state goes into both buffer pairs (the host would swap its
             * handles, sim.c) */
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
            if (host) expect_go(sol, 0);
            upload_moved(f, sol, &r, &p, sorted, sorted_v);
            char label[64];
            snprintf(label, sizeof label, "kept %s %dD",
                     lists == 1   ? "lists   "
                     : lists == 2 ? "overflow"
                                  : "mixed   ",
                     dims);
            step_vs_reference(f, sol, &r, &s, &p, label);
            long rebuilds = 0;
            assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
            assert_int_equal(rebuilds, 1); /* step 2 kept the lists */
            /* the step's own motion stayed within skin / 2 of X0 here, so step 3 keeps them too */
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
            assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
            assert_int_equal(rebuilds, 1);
            /* one fluid particle moved more than skin / 2 from X0: sph_forces asks for a rebuild */
            size_t k0 = 0;
            while (p.type[r.order[k0]] != PTYPE_FLUID) ++k0;
            p.pos[4 * r.order[k0]] += (float)(1.6 * half);
            upload_moved(f, sol, &r, &p, sorted, sorted_v);
            assert_int_equal(sph_enqueue(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
            assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
            assert_int_equal(rebuilds, 2);
            /* a forced step (sim.c: every snapshot step) rebuilds although nothing moved */
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 1, &e), SPHSIM_OK);
            assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
            assert_int_equal(rebuilds, 3);

            run_free(&r);
            sph_destroy(sol);
            particles_free(&p);
            free(sorted);
            free(sorted_v);
        }
}

/* The relative-motion check (sph_bind_grid; kernels/nlist.cl, nlist_check). Lists are
 * built, then the fluid is moved on the host by d = a skin R along x (R the support; a given for
 * fluid in cells of even and of odd x index, or for particles of even and of odd id), one step
 * runs on the moved state (the fluid at rest: its own motion, a dt^2, is a few % of skin R), so that
 * sph_forces flags the moves, and the next step decides: keep or rebuild (`want_rebuild`), read
 * by the host (`host`) or not. A kept step must still match the brute-force reference. Moves
 * with some |d| > skin R / 2 and every |d| < skin R leave the decision to the check: it keeps
 * the lists when the fluid moved as a whole, cell by cell, or within each cell with relative moves
 * below skin R, and rebuilds them when neighbouring cells or particles of one cell moved apart
 * by more. */
typedef struct check_case {
    int by;               /* a_even / a_odd by the parity of: 0 the id, 1 the cell's x index at
                             the build, 5 the cell's last index (y in 2D, z in 3D), 6 its y index;
                             2: a_even for the first fluid particle of each cell in sorted order
                             (a reference that lost to the cell boxes), a_odd for the
                             others; 3: 0 for the first, a_even / a_odd by the id's parity for the
                             others; 4: a_even for all, the spread along y and only in the first
                             fluid cell; 7: a_even for all, then, after the step, the first fluid
                             particle's new x NaN (one NaN among finite cell mates) */
    double a_even, a_odd; /* d / (skin R) along x */
    int check;            /* 0: tuning.list_check 0; 2: bound to a grid whose cell boxes would
                            exceed the device's largest buffer (the check stays off) */
    int want_rebuild;
    int lists;     /* make_solver_lists' mode: 1 full lists, 5 half of them over (walks) */
    double spread; /* d / (skin R) added for even ids, taken for odd ones, along x (along y
                            with by 4; 0 if not given) */
    int wide;      /* 1: a grid over the walls too, as sim.c's (g_grid_margin), on which
                            the lists hold walls more than a cell away */
} check_case;

/* The lists as built against the brute force at the build positions (p in the host's sorted
 * order r->order, on a grid of cells at least list_radius wide, as sim.c's): a fluid particle
 * lists every fluid particle within list_radius and every wall within the wider wall_radius, a
 * wall every fluid particle within wall_radius, each once, and nothing else (up to float
 * rounding at either radius), itself never; particles over list_cap are skipped. Returns the wall entries
 * beyond list_radius, which only the wider radius lists (the walk beyond the 3^d block finds
 * those more than a cell away). */
static size_t lists_vs_brute_force(sph_solver *sol, const run *r, const particles *p, const char *label, size_t *far)
{
    const size_t n = p->n;
    const nlist_params *P = nlist_get_params(sph_nlist(sol));
    const size_t cap = P->list_cap;
    sphsim_error e;
    int level = -1;
    assert_int_equal(nlist_level(sph_nlist(sol), &level, &e), SPHSIM_OK);
    const double rl2 = P->list_radius2[level], rw2 = P->wall_radius2[level];
    uint32_t *counts = calloc(n, sizeof *counts), *entries = calloc(n * cap, sizeof *entries);
    char *listed = calloc(n, 1);
    assert_true(counts && entries && listed);
    assert_int_equal(nlist_read_lists(sph_nlist(sol), n, counts, entries, &e), SPHSIM_OK);
    size_t beyond = 0, checked = 0;
    *far = 0;
    const uint32_t nx = r->gp.ncell[0], ny = r->gp.ncell[1];
    for (size_t k = 0; k < n; ++k) {
        if (counts[k] > cap) continue;
        ++checked;
        const float *xi = p->pos + 4 * r->order[k];
        const uint32_t ci = ref_sph_cell_index(&r->gp, xi);
        const int fi = p->type[r->order[k]] == PTYPE_FLUID;
        memset(listed, 0, n);
        for (size_t q = 0; q < counts[k]; ++q) {
            const uint32_t j = entries[k * cap + q];
            assert_true(j < n);
            assert_false(listed[j]);
            listed[j] = 1;
        }
        assert_false(listed[k]); /* nobody lists itself (the density's self term comes apart) */
        for (size_t j = 0; j < n; ++j) {
            if (j == k) continue;
            const float *xj = p->pos + 4 * r->order[j];
            const int fj = p->type[r->order[j]] == PTYPE_FLUID;
            double d2 = 0.0;
            for (int a = 0; a < 3; ++a) d2 += ((double)xi[a] - xj[a]) * ((double)xi[a] - xj[a]);
            const double lim = fi && fj ? rl2 : rw2;
            if (listed[j]) {
                assert_true(fi || fj); /* no wall-wall entry */
                assert_true(d2 < lim * (1.0 + 1e-5));
                beyond += !(fi && fj) && d2 >= rl2;
                /* more than a cell away in some axis: found beyond the 3^d block */
                const uint32_t cj = ref_sph_cell_index(&r->gp, xj);
                const long dc[3] = { (long)(ci % nx) - (long)(cj % nx), (long)(ci / nx % ny) - (long)(cj / nx % ny),
                                     (long)(ci / (nx * ny)) - (long)(cj / (nx * ny)) };
                *far += labs(dc[0]) > 1 || labs(dc[1]) > 1 || labs(dc[2]) > 1;
            } else if (fi || fj) {
                assert_true(d2 >= lim * (1.0 - 1e-5));
            }
        }
    }
    print_message("  %s: %zu lists as the brute force's, %zu wall entries beyond list_radius, %zu more than a "
                  "cell away\n",
                  label, checked, beyond, *far);
    free(counts);
    free(entries);
    free(listed);
    return beyond;
}

/* One case, the lists built `way` (LIST_BUILD_APART or LIST_BUILD_FUSED), the host reading the
 * decisions as sim.c does. */
static void run_check_case(fixture *f, int dims, int way, const check_case *cc)
{
    scene s;
    particles p;
    run r;
    sphsim_error e;
    const sphsim_tuning keep = T;
    T.list_check = cc->check != 0;
    T.list_build = way;
    g_grid_margin = cc->wide ? 3.3 : 0.0;
    sph_solver *sol = list_test_setup_skin(f, &s, &p, &r, dims, 900 + (uint64_t)dims, cc->lists, 0.1, 1, 1.0);
    g_grid_margin = 0.0;
    T = keep;
    const size_t n = p.n;
    const size_t n_cells = cc->check == 2 ? (size_t)(f->d.max_alloc / 16 + 1) : r.gp.n_cells;
    assert_int_equal(sph_bind_grid(sol, r.cs, r.ce, r.gpb, n_cells, &r.st, &e), SPHSIM_OK);
    /* step 1 builds the lists */
    assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
    expect_go(sol, 1);
    assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
    long walkers = -1;
    assert_int_equal(nlist_walkers(sph_nlist(sol), &walkers, &e), SPHSIM_OK);
    assert_true(cc->lists == 5 ? walkers > 0 : walkers == 0);
    size_t far = 0;
    assert_true(lists_vs_brute_force(sol, &r, &p, "lists at the build", &far) > 0);
    if (cc->wide) assert_true(far > 0);
    /* the move, from the cells of the build (the host's grid, in run_upload's sorted order) */
    const double skin_r = 2.0 * s.h * s.skin;
    long cell_prev = -1, cell_first = -1;
    int rep_seen = 0;
    double *shift = calloc(n, sizeof *shift), *shift_y = calloc(n, sizeof *shift_y);
    assert_true(shift && shift_y);
    const long nx = (long)r.gp.ncell[0], ny = (long)r.gp.ncell[1];
    size_t k_first = n; /* sorted index of the first fluid particle */
    for (size_t k = 0; k < n; ++k) {
        const size_t i = r.order[k];
        const long cell = (long)ref_sph_cell_index(&r.gp, p.pos + 4 * i), cx = cell % nx, cy = cell / nx % ny;
        const long c_last = dims == 3 ? cell / (nx * ny) : cy;
        if (cell != cell_prev) rep_seen = 0;
        cell_prev = cell;
        if (p.type[i] != PTYPE_FLUID) continue;
        if (cell_first < 0) {
            cell_first = cell;
            k_first = k;
        }
        const int even = cc->by == 0 || cc->by == 3 ? i % 2 == 0
                         : cc->by == 1              ? cx % 2 == 0
                         : cc->by == 2              ? !rep_seen
                         : cc->by == 5              ? c_last % 2 == 0
                         : cc->by == 6              ? cy % 2 == 0
                                                    : 1;
        shift[i] = cc->by == 3 && !rep_seen ? 0.0 : skin_r * (even ? cc->a_even : cc->a_odd);
        const double sp = skin_r * (i % 2 == 0 ? cc->spread : -cc->spread);
        if (cc->by == 4) shift_y[i] = cell == cell_first ? sp : 0.0;
        else shift[i] += sp;
        rep_seen = 1;
    }
    for (size_t i = 0; i < n; ++i) {
        p.pos[4 * i] += (float)shift[i];
        p.pos[4 * i + 1] += (float)shift_y[i];
    }
    free(shift);
    free(shift_y);
    float *sorted = malloc(16 * n), *sorted_v = malloc(16 * n);
    assert_true(sorted && sorted_v);
    upload_moved(f, sol, &r, &p, sorted, sorted_v);
    assert_int_equal(sph_enqueue_forces(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
    if (cc->by == 7) { /* the state the check reads: the step's output (no pair swapped yet) */
        const float nan_x = NAN;
        assert_int_equal(device_write(&f->d, r.st.pos_next, 16 * k_first, sizeof nan_x, &nan_x, &e), SPHSIM_OK);
    }
    /* step 2 decides */
    assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
    expect_go(sol, cc->want_rebuild);
    long rebuilds = 0;
    assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
    char label[128];
    snprintf(label, sizeof label, "check %dD %s %s %+.2f %+.2f +-%.2f%s", dims,
             way == LIST_BUILD_APART ? "apart" : "fused",
             cc->by == 0   ? "ids  "
             : cc->by == 1 ? "cells"
             : cc->by == 2 ? "firsts"
             : cc->by == 3 ? "others"
             : cc->by == 4 ? "one cell (y)"
             : cc->by == 5 ? "cells by last index"
             : cc->by == 6 ? "cells by y"
                           : "NaN",
             cc->a_even, cc->a_odd, cc->spread,
             cc->check == 1 ? ""
             : cc->check    ? " (check off: too many cells)"
                            : " (check off)");
    if (cc->lists == 5) strncat(label, " (half the lists over)", sizeof label - strlen(label) - 1);
    if (cc->wide) strncat(label, " (grid over the walls)", sizeof label - strlen(label) - 1);
    printf("  %s: %s\n", label, rebuilds == 2 ? "rebuild" : "keep");
    assert_int_equal(rebuilds, 1 + cc->want_rebuild);
    if (!cc->want_rebuild) {
        /* the kept lists at the moved state: the step must match the brute-force reference */
        upload_moved(f, sol, &r, &p, sorted, sorted_v);
        step_vs_reference(f, sol, &r, &s, &p, label);
    }
    free(sorted);
    free(sorted_v);
    run_free(&r);
    sph_destroy(sol);
    particles_free(&p);
}

static void test_list_check(void **state)
{
    fixture *f = *state;
    static const check_case cases[] = {
        { 1, 0.8, 0.8, 1, 0, 1, 0, 0 },     /* the fluid moved as a whole: kept */
        { 1, 0.8, 0.8, 0, 1, 1, 0, 0 },     /* the same without the check: rebuilt */
        { 1, 0.8, 0.8, 2, 1, 1, 0, 0 },     /* the same with too many cells for the check's buffer: rebuilt */
        { 1, 2.05, 2.05, 1, 1, 1, 0, 0 },   /* a move of 2 skin R: rebuilt, whatever the relative motion */
        { 1, 1.85, 1.85, 1, 0, 1, 0, 0 },   /* moved as a whole by 1.85 skin R, along the walls: kept (the
                                      lists hold the walls within R (1 + 2 skin), and the step
                                      matches the reference with the walls it now reaches) */
        { 1, 0.8, 0.4, 1, 0, 1, 0, 0 },     /* cells 0.4 skin R apart: kept */
        { 1, 0.8, -0.05, 1, 0, 1, 0, 0 },   /* cells 0.85 skin R apart, near the bound: kept */
        { 1, 0.8, -0.3, 1, 1, 1, 0, 0 },    /* cells 1.1 skin R apart: rebuilt */
        { 0, 0.55, -0.55, 1, 1, 1, 0, 0 },  /* particles 1.1 skin R apart: rebuilt */
        { 2, 0.55, -0.55, 1, 1, 1, 0, 0 },  /* particles of one cell 1.1 skin R apart, boxes alike: rebuilt */
        { 3, 0.55, -0.55, 1, 1, 1, 0, 0 },  /* the same, the first of each cell at rest: rebuilt */
        { 2, 0.8, 0.05, 1, 0, 1, 0, 0 },    /* the first of each cell 0.75 skin R from the others: kept (a
                                      reference at the first particle's d would make it 1.5) */
        { 1, 0.65, 0.15, 1, 0, 1, 0.2, 0 }, /* cells 0.5 skin R apart, each spread over 0.4: kept */
        { 1, 0.65, 0.15, 1, 1, 1, 0.3, 0 }, /* the same spread over 0.6 (0.3 + 0.5 + 0.3): rebuilt */
        { 4, 0.4, 0.4, 1, 0, 1, 0.45, 0 },  /* one cell spread over 0.9 skin R in y, its neighbours not: kept */
        { 4, 0.4, 0.4, 1, 1, 1, 0.55, 0 },  /* the same over 1.1: rebuilt (its pairs with the others: 0.55) */
        { 5, 0.8, 0.4, 1, 0, 1, 0, 0 },     /* cells 0.4 skin R apart along the last axis: kept */
        { 5, 0.8, -0.3, 1, 1, 1, 0, 0 },    /* 1.1 apart along the last axis: rebuilt */
        { 6, 0.8, -0.3, 1, 1, 1, 0, 0 },    /* 1.1 apart along y: rebuilt */
        { 7, 0.8, 0.8, 1, 1, 1, 0, 0 },     /* moved as a whole, one position NaN: rebuilt */
        { 1, 0.8, 0.8, 1, 0, 5, 0, 0 },     /* kept with some particles over their lists, which walk the */
        { 1, 0.8, 0.4, 1, 0, 5, 0, 0 },     /* kept grid after moves beyond skin R / 2 */
        { 1, 1.05, 1.05, 1, 1, 5, 0, 0 },   /* the same moved by skin R: rebuilt (the walk's limit) */
        { 1, 0.8, 0.8, 1, 0, 1, 0, 1 },     /* on sim.c's grid, over the walls: kept, */
        { 1, 1.85, 1.85, 1, 0, 1, 0, 1 },   /* kept (walls within R (1 + 2 skin) more than a cell away), */
        { 1, 2.05, 2.05, 1, 1, 1, 0, 1 }    /* rebuilt */
    };
    for (int dims = 2; dims <= 3; ++dims)
        for (int way = LIST_BUILD_APART; way <= LIST_BUILD_FUSED; ++way)
            for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) run_check_case(f, dims, way, &cases[k]);
}

/* The check skipped on the bound (nlist_go): after a check keeps the lists with bound B, each
 * step adds twice its largest displacement (sph_forces) to B, and the steps whose B stays under
 * skin R keep the lists without the check. The fluid at rest in the perturbed tank, then given a
 * velocity along x that moves it 0.1 skin R a step: all of it (`shear` 0: no relative motion
 * but the tank's own), or the cells of even x index at the build alone (1: the cells slide past
 * each other by 0.1 skin R a step). The host decides (sim.c's default) and sorts again on every
 * rebuild; each step, kept, checked, skipped or rebuilt, must match the brute-force reference,
 * and the state it leaves is the next step's. Both runs must skip some checks; with shear, the
 * bound must also stop skipping before the relative motion reaches skin R, else the lists would
 * miss pairs that slid within the support and the reference would differ (a bound that does not
 * grow fails here). */
static void test_list_skip(void **state)
{
    fixture *f = *state;
    for (int dims = 2; dims <= 3; ++dims)
        for (int shear = 0; shear <= 1; ++shear) {
            scene s;
            particles p;
            run r;
            sphsim_error e;
            /* a quarter of the time step: the tank's own motion, from the perturbation, far below
             * the set one */
            const int keep = T.list_build;
            T.list_build = LIST_BUILD_APART;
            sph_solver *sol = list_test_setup_skin(f, &s, &p, &r, dims, 1400 + (uint64_t)dims, 1, 0.1, 1, 0.25);
            T.list_build = keep;
            const size_t n = p.n;
            assert_int_equal(sph_bind_grid(sol, r.cs, r.ce, r.gpb, r.gp.n_cells, &r.st, &e), SPHSIM_OK);
            const double v = (shear ? 0.05 : 0.1) * 2.0 * s.h * s.skin / s.dt;
            const long nx = (long)r.gp.ncell[0];
            for (size_t i = 0; i < n; ++i)
                if (p.type[i] == PTYPE_FLUID) {
                    const long cx = (long)ref_sph_cell_index(&r.gp, p.pos + 4 * i) % nx;
                    p.vel[4 * i] = (float)(!shear || cx % 2 == 0 ? v : 0.0);
                }
            run_upload(&f->d, sol, &r, &p);
            float *sorted = malloc(16 * n), *sorted_v = malloc(16 * n), *x = malloc(16 * n), *u = malloc(16 * n);
            assert_true(sorted && sorted_v && x && u);
            enum { STEPS = 40 };
            char seq[STEPS + 1] = { 0 };
            long checks = 0, skipped = 0, rebuilds = 0;
            for (int k = 0; k < STEPS; ++k) {
                assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
                int go = -1;
                assert_int_equal(nlist_decide(sph_nlist(sol), &go, &e), SPHSIM_OK); /* runs the check if asked */
                if (k == 0) assert_int_equal(go, 1);
                long c1 = 0, s1 = 0;
                assert_int_equal(nlist_checks(sph_nlist(sol), &c1, &s1, &e), SPHSIM_OK);
                seq[k] = go ? 'R' : s1 > skipped ? 's' : c1 > checks ? 'c' : 'k';
                if (go && c1 > checks) seq[k] = 'C'; /* checked, then rebuilt */
                checks = c1;
                skipped = s1;
                if (go) run_upload(&f->d, sol, &r, &p); /* the host sorts the moved fluid again */
                else upload_moved(f, sol, &r, &p, sorted, sorted_v);
                char label[64];
                snprintf(label, sizeof label, "skip %dD %s step %d (%c)", dims, shear ? "shear" : "whole", k + 1,
                         seq[k]);
                step_vs_reference(f, sol, &r, &s, &p, label);
                /* the step's output is the next step's state */
                assert_int_equal(device_read(&f->d, r.st.pos_next, 0, 16 * n, x, &e), SPHSIM_OK);
                assert_int_equal(device_read(&f->d, r.st.vel_next, 0, 16 * n, u, &e), SPHSIM_OK);
                for (size_t q = 0; q < n; ++q) {
                    const size_t i = r.order[q];
                    if (p.type[i] != PTYPE_FLUID) continue;
                    memcpy(p.pos + 4 * i, x + 4 * q, 12);
                    memcpy(p.vel + 4 * i, u + 4 * q, 12);
                }
            }
            assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
            print_message("  skip %dD %s: %s (R rebuild, C checked and rebuilt, c checked and kept, s kept on "
                          "the bound, k kept): %ld rebuilds, %ld checks, %ld skipped\n",
                          dims, shear ? "shear" : "whole", seq, rebuilds, checks, skipped);
            assert_true(skipped > 0);
            assert_true(checks > 0);
            assert_true(rebuilds >= 1 && rebuilds < STEPS);
            /* binding the check again gives new cells' flags, which only a rebuild fills: the next
             * step rebuilds */
            assert_int_equal(sph_bind_grid(sol, r.cs, r.ce, r.gpb, r.gp.n_cells, &r.st, &e), SPHSIM_OK);
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
            expect_go(sol, 1);
            free(sorted);
            free(sorted_v);
            free(x);
            free(u);
            run_free(&r);
            sph_destroy(sol);
            particles_free(&p);
        }
}

/* The check's cell boxes (kernels/nlist.cl, nlist_cell_boxes) against the host's, cell by
 * cell, for the grid the host sorted (r) with the particles built at `built` (4 floats per
 * sorted particle): the state the check read is the last step's output, pos_next (the host
 * decides, no pairs swapped). Every cell without fluid, empty ones included, must read w = -1;
 * a cell with fluid the box of its d = x - x_built: the centre to the bit, the half diagonal to
 * float rounding. Returns the number of cells with fluid. */
static size_t check_boxes_vs_reference(fixture *f, sph_solver *sol, const run *r, const particles *p,
                                       const float *built, const char *label)
{
    const size_t n = p->n, nc = r->gp.n_cells;
    float *boxes = malloc(16 * nc), *x = malloc(16 * n), *lo = malloc(16 * nc), *hi = malloc(16 * nc);
    assert_true(boxes && x && lo && hi);
    sphsim_error e;
    assert_int_equal(nlist_read_check_boxes(sph_nlist(sol), boxes, nc, &e), SPHSIM_OK);
    assert_int_equal(device_read(&f->d, r->st.pos_next, 0, 16 * n, x, &e), SPHSIM_OK);
    for (size_t c = 0; c < 4 * nc; ++c) {
        lo[c] = INFINITY;
        hi[c] = -INFINITY;
    }
    for (size_t k = 0; k < n; ++k) {
        if (p->type[r->order[k]] != PTYPE_FLUID) continue;
        const uint32_t c = ref_sph_cell_index(&r->gp, built + 4 * k);
        for (int a = 0; a < 3; ++a) {
            const float d = x[4 * k + a] - built[4 * k + a];
            lo[4 * c + a] = fminf(lo[4 * c + a], d);
            hi[4 * c + a] = fmaxf(hi[4 * c + a], d);
        }
        lo[4 * c + 3] = 0.0f; /* the cell has fluid */
    }
    size_t wet = 0, dry = 0;
    double r_max = 0.0;
    for (size_t c = 0; c < nc; ++c) {
        const float *b = boxes + 4 * c;
        if (lo[4 * c + 3] != 0.0f) {
            assert_true(b[3] == -1.0f);
            ++dry;
            continue;
        }
        ++wet;
        double semi2 = 0.0;
        for (int a = 0; a < 3; ++a) {
            const float u = 0.5f * (lo[4 * c + a] + hi[4 * c + a]), semi = 0.5f * (hi[4 * c + a] - lo[4 * c + a]);
            assert_true(b[a] == u);
            semi2 += (double)semi * semi;
        }
        const double rc = sqrt(semi2);
        assert_true(fabs(b[3] - rc) <= 1e-6 * rc + 1e-12);
        r_max = fmax(r_max, rc);
    }
    print_message("  %s: %zu cells with fluid (largest half diagonal %.3g m), %zu without, all as on the host\n", label,
                  wet, r_max, dry);
    free(boxes);
    free(x);
    free(lo);
    free(hi);
    return wet;
}

/* The check's cell boxes over two grids: lists built, every fluid particle moved by 0.6 skin R
 * along x plus up to 0.15 skin R along each axis at random (so that the next step checks), the
 * boxes compared with the host's; then the fluid put back, shifted by two cells along x, the
 * grid sorted again and a rebuild forced, the same move, and the boxes compared again: the cells
 * that held fluid on the first grid and hold none now must not keep their old boxes. With the
 * kernels' work-group size and with 16 work-items, and with 1, 8 and 5 work-items a cell (the
 * boxes must depend on neither). */
static void test_check_boxes(void **state)
{
    fixture *f = *state;
    static const scheme wcsph = { KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL };
    const int nt2[3] = { 20, 20, 1 }, nf2[3] = { 8, 8, 1 }, nt3[3] = { 16, 16, 16 }, nf3[3] = { 5, 5, 4 };
    /* work-items per cell (tuning.cell_lanes): one, GPUs' 8, and 5, which 16 does not divide */
    static const int lanes_of[3] = { 1, 8, 5 };
    for (int li = 0; li < 3; ++li)
        for (int local = 0; local <= 1; ++local)
            for (int dims = 2; dims <= 3; ++dims) {
                scene s;
                particles p;
                run r;
                sphsim_error e;
                ref_sph_scene(&s, dims, wcsph.kernel, wcsph.eos, wcsph.visc, 0.01, 1.3, dims == 2 ? nt2 : nt3,
                              dims == 2 ? nf2 : nf3);
                s.alpha = 0.5;
                s.skin = 0.1;
                assert_int_equal(ref_sph_particles(&s, &p, &e), SPHSIM_OK);
                assert_int_equal(prepare_sph(&s, &p, &e), SPHSIM_OK);
                perturb(&s, &p, 1300 + (uint64_t)dims);
                const size_t n = p.n;
                for (size_t i = 0; i < n; ++i) /* at rest, in the middle of the tank */
                    if (p.type[i] == PTYPE_FLUID)
                        for (int a = 0; a < 3; ++a) {
                            p.vel[4 * i + a] = 0.0f;
                            if (a < dims) p.pos[4 * i + a] += (float)(0.3 * (s.tank.max[a] - s.tank.min[a]));
                        }
                float *start = malloc(16 * n), *built = malloc(16 * n), *sorted = malloc(16 * n),
                      *sorted_v = malloc(16 * n);
                assert_true(start && built && sorted && sorted_v);
                memcpy(start, p.pos, 16 * n);
                const sphsim_tuning keep = T;
                if (local) T.sph_local = 16;
                T.cell_lanes = lanes_of[li];
                sph_solver *sol = make_solver_lists(&f->d, &s, 1, n);
                T = keep;
                const double cell = 2.0 * s.h * (1.0 + s.skin), skin_r = 2.0 * s.h * s.skin;
                run_alloc_cell(&f->d, &r, n, &s, cell);
                assert_int_equal(sph_bind_grid(sol, r.cs, r.ce, r.gpb, r.gp.n_cells, &r.st, &e), SPHSIM_OK);
                uint64_t seed = 77 + (uint64_t)dims;
                size_t wet[2] = { 0, 0 };
                for (int g = 0; g < 2; ++g) {
                    memcpy(p.pos, start, 16 * n);
                    if (g == 1)
                        for (size_t i = 0; i < n; ++i)
                            if (p.type[i] == PTYPE_FLUID) p.pos[4 * i] += (float)(2.0 * cell);
                    run_upload(&f->d, sol, &r, &p);
                    for (size_t k = 0; k < n; ++k) memcpy(built + 4 * k, p.pos + 4 * r.order[k], 16);
                    assert_int_equal(nlist_begin_step(sph_nlist(sol), g == 1, &e),
                                     SPHSIM_OK); /* the first step builds */
                    expect_go(sol, 1);
                    assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
                    for (size_t i = 0; i < n; ++i)
                        if (p.type[i] == PTYPE_FLUID)
                            for (int a = 0; a < dims; ++a)
                                p.pos[4 * i + a] +=
                                    (float)(skin_r * ((a == 0 ? 0.6 : 0.0) + 0.15 * ref_sph_rand(&seed)));
                    upload_moved(f, sol, &r, &p, sorted, sorted_v);
                    assert_int_equal(sph_enqueue_forces(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
                    assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
                    int go = -1;
                    assert_int_equal(nlist_decide(sph_nlist(sol), &go, &e), SPHSIM_OK); /* runs the check */
                    char label[96];
                    snprintf(label, sizeof label, "boxes %dD, %s work-items, %s a cell, grid %d (%s)", dims,
                             local ? "16" : "the kernels'",
                             lanes_of[li] == 1   ? "1"
                             : lanes_of[li] == 8 ? "8"
                                                 : "5",
                             g + 1, go ? "rebuild" : "keep");
                    wet[g] = check_boxes_vs_reference(f, sol, &r, &p, built, label);
                }
                assert_true(wet[0] > 0 && wet[1] > 0);
                free(start);
                free(built);
                free(sorted);
                free(sorted_v);
                run_free(&r);
                sph_destroy(sol);
                particles_free(&p);
            }
}

/* The adaptive skin (nlist_go): lists nothing outgrows are rebuilt one level down (half the
 * skin) after skin_shrink_age[k] kept steps, down to the last level, which keeps them; lists
 * built there with the small skin still give the brute-force step after every fluid particle
 * moved by up to 0.48 of that skin / 2; a particle moved 1.6 x that skin / 2 (a fifth of the
 * scene's skin / 2) makes the next step rebuild, one level up, since the lists were outgrown
 * within skin_grow_age. A forced rebuild keeps the level, and a solver restored from the saved
 * state starts there (another state starts at level 0, a damaged one fails). */
static void test_adaptive_skin(void **state)
{
    fixture *f = *state;
    for (int dims = 2; dims <= 3; ++dims) {
        scene s;
        particles p;
        run r;
        T.skin_levels = 4; /* (the default on GPUs only) */
        sph_solver *sol = list_test_setup(f, &s, &p, &r, dims, 700 + (uint64_t)dims, 1);
        T.skin_levels = TUNE_AUTO;
        const nlist_params *P = nlist_get_params(sph_nlist(sol));
        sphsim_error e;
        const size_t n = p.n;
        long rebuilds = 0, expect = 1;
        int level = -1;
        assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
        assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
        for (int k = 0; k < NLIST_SKIN_LEVELS; ++k) {
            const unsigned keep = k + 1 < NLIST_SKIN_LEVELS ? P->skin_shrink_age[k] : 40;
            assert_true(keep >= 2 && keep <= 200);
            for (unsigned a = 0; a < keep; ++a) { /* kept */
                assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
                assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
                assert_int_equal(rebuilds, expect);
                assert_int_equal(nlist_level(sph_nlist(sol), &level, &e), SPHSIM_OK);
                assert_int_equal(level, k);
            }
            if (k + 1 == NLIST_SKIN_LEVELS) break;
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK); /* rebuilt one level down */
            assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
            assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
            assert_int_equal(rebuilds, ++expect);
            assert_int_equal(nlist_level(sph_nlist(sol), &level, &e), SPHSIM_OK);
            assert_int_equal(level, k + 1);
        }
        /* lists at the last level, built at X0: move every fluid particle within its skin / 2, at
         * rest, so that the step's own motion stays well within it */
        const double half = 0.5 * 2.0 * s.h * s.skin / (1 << (NLIST_SKIN_LEVELS - 1));
        const double step = 0.48 * half / sqrt((double)dims);
        float *sorted = malloc(16 * n), *sorted_v = malloc(16 * n);
        assert_true(sorted && sorted_v);
        nudge_fluid(&s, &p, step, 43);
        memset(p.vel, 0, 16 * n);
        upload_moved(f, sol, &r, &p, sorted, sorted_v);
        char label[64];
        snprintf(label, sizeof label, "skin/%d  %dD", 1 << (NLIST_SKIN_LEVELS - 1), dims);
        step_vs_reference(f, sol, &r, &s, &p, label);
        assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
        assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
        assert_int_equal(rebuilds, expect); /* still kept */
        /* one particle moved 1.6 x this skin / 2 (a fifth of the scene's skin / 2), twice: the
         * first rebuild keeps the level (the lists had lasted long), the second, at once, goes
         * one level up */
        size_t k0 = 0;
        while (p.type[r.order[k0]] != PTYPE_FLUID) ++k0;
        for (int twice = 0; twice < 2; ++twice) {
            if (twice) { /* the next step keeps the new lists */
                assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
                assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
                assert_int_equal(rebuilds, expect);
            }
            p.pos[4 * r.order[k0]] += (float)(1.6 * half);
            upload_moved(f, sol, &r, &p, sorted, sorted_v);
            assert_int_equal(sph_enqueue(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
            assert_int_equal(nlist_begin_step(sph_nlist(sol), 0, &e), SPHSIM_OK);
            assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
            assert_int_equal(rebuilds, ++expect);
            assert_int_equal(nlist_level(sph_nlist(sol), &level, &e), SPHSIM_OK);
            assert_int_equal(level, NLIST_SKIN_LEVELS - 1 - twice);
            assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK); /* the new lists */
        }
        /* a forced rebuild (sim.c: a snapshot step) keeps the level; the restart state holds it,
         * and a new solver restored from it starts its forced first step at that level */
        assert_int_equal(nlist_begin_step(sph_nlist(sol), 1, &e), SPHSIM_OK);
        assert_int_equal(nlist_rebuilds(sph_nlist(sol), &rebuilds, &e), SPHSIM_OK);
        assert_int_equal(rebuilds, ++expect);
        assert_int_equal(nlist_level(sph_nlist(sol), &level, &e), SPHSIM_OK);
        assert_int_equal(level, NLIST_SKIN_LEVELS - 2);
        void *blob = NULL;
        size_t bytes = 0;
        assert_int_equal(sph_state_save(sol, &blob, &bytes, &e), SPHSIM_OK);
        assert_true(blob != NULL && bytes == 16);
        uint32_t bad[4];
        memcpy(bad, blob, sizeof bad);
        for (int variant = 0; variant < 3; ++variant) { /* the state, another format, a damaged one */
            T.skin_levels = 4;
            sph_solver *sol2 = make_solver_lists(&f->d, &s, 1, n);
            T.skin_levels = TUNE_AUTO;
            uint32_t w[4];
            memcpy(w, bad, sizeof w);
            if (variant == 1) w[0] ^= 1u;               /* not the SPH lists' magic: start cold */
            if (variant == 2) w[2] = NLIST_SKIN_LEVELS; /* no such level */
            const sphsim_status rs = sph_state_restore(sol2, w, sizeof w, &e);
            assert_int_equal(rs, variant == 2 ? SPHSIM_E_IO : SPHSIM_OK);
            if (rs == SPHSIM_OK) {
                assert_int_equal(nlist_begin_step(sph_nlist(sol2), 1, &e), SPHSIM_OK);
                assert_int_equal(nlist_level(sph_nlist(sol2), &level, &e), SPHSIM_OK);
                assert_int_equal(level, variant == 0 ? NLIST_SKIN_LEVELS - 2 : 0);
            }
            sph_destroy(sol2);
        }
        free(blob);
        run_free(&r);
        sph_destroy(sol);
        particles_free(&p);
        free(sorted);
        free(sorted_v);
    }
}

/* A tank filled with fluid on the lattice, boundary shell included: after sph_prepare every
 * fluid particle has rho = rho0 (walls and corners too), p = 0, and without gravity nothing moves. */
static void test_rest_lattice(void **state)
{
    fixture *f = *state;
    for (int dims = 2; dims <= 3; ++dims)
        for (int kernel = 0; kernel < 3; ++kernel) {
            scene s;
            const int nt[3] = { 7, 6, 5 };
            ref_sph_scene(&s, dims, (scene_kernel)kernel, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, nt, nt);
            s.gravity[dims - 1] = 0.0;
            particles p;
            sphsim_error e;
            assert_int_equal(ref_sph_particles(&s, &p, &e), SPHSIM_OK);
            assert_int_equal(prepare_sph(&s, &p, &e), SPHSIM_OK);
            const size_t n = p.n;
            sph_solver *sol = make_solver(&f->d, &s);
            run r;
            run_alloc(&f->d, &r, n, &s);
            run_upload(&f->d, sol, &r, &p);
            float *rho = malloc(4 * n), *pr = malloc(4 * n), *x = malloc(16 * n), *v = malloc(16 * n);
            uint32_t flags = 0;
            run_step(&f->d, sol, &r, n, rho, pr, x, v, &flags);
            double e_rho = 0, p_max = 0, v_max = 0;
            for (size_t i = 0; i < p.n_fluid; ++i) {
                e_rho = fmax(e_rho, fabs(rho[i] / 1000.0 - 1.0));
                p_max = fmax(p_max, pr[i]);
                for (int a = 0; a < 3; ++a) v_max = fmax(v_max, fabs(v[4 * i + a]));
            }
            /* float sum of ~20-100 terms: a few 1e-7; B (rho/rho0 - 1) gamma at 1e-6 is ~0.06 Pa */
            print_message("  %dD %-8s rest lattice: max |rho/rho0 - 1| = %.1e, max p = %.2g Pa, max |v| = %.1e m/s\n",
                          dims, kname[kernel], e_rho, p_max, v_max);
            assert_true(e_rho < 2e-6);
            assert_true(p_max < 1.0);  /* vs rho0 c0^2 = 4e5 Pa */
            assert_true(v_max < 1e-5); /* m/s after one step; g dt = 1.3e-3 m/s */
            assert_int_equal(flags, 0);
            run_free(&r);
            sph_destroy(sol);
            particles_free(&p);
            free(rho);
            free(pr);
            free(x);
            free(v);
        }
}

/* sph_prepare's hydrostatic initial state: a column resting on the floor is squeezed so that the
 * summation density gives p = rho0 g depth. Compared below the top three rows (where the kernel
 * sum is cut by the free surface and p = 0); the columns at the side walls are included. */
static void test_hydrostatic_init(void **state)
{
    fixture *f = *state;
    for (int dims = 2; dims <= 3; ++dims) {
        scene s;
        const int nt2[3] = { 10, 40, 1 }, nt3[3] = { 8, 8, 20 };
        ref_sph_scene(&s, dims, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, dims == 2 ? nt2 : nt3,
                      dims == 2 ? nt2 : nt3);
        particles p;
        sphsim_error e;
        assert_int_equal(ref_sph_particles(&s, &p, &e), SPHSIM_OK);
        const double H = s.blocks[0].max[dims - 1];
        double *depth = malloc(p.n * sizeof *depth);
        for (size_t i = 0; i < p.n; ++i) depth[i] = H - p.pos[4 * i + dims - 1];
        assert_int_equal(prepare_sph(&s, &p, &e), SPHSIM_OK);
        const size_t n = p.n;
        sph_solver *sol = make_solver(&f->d, &s);
        run r;
        run_alloc(&f->d, &r, n, &s);
        run_upload(&f->d, sol, &r, &p);
        float *rho = malloc(4 * n), *pr = malloc(4 * n), *x = malloc(16 * n), *v = malloc(16 * n);
        uint32_t flags = 0;
        run_step(&f->d, sol, &r, n, rho, pr, x, v, &flags);
        const double p_bottom = s.rest_density * 9.81 * H;
        double worst = 0, squeeze = 0;
        for (size_t i = 0; i < p.n_fluid; ++i) {
            squeeze = fmax(squeeze, fabs(H - depth[i] - p.pos[4 * i + dims - 1]));
            if (depth[i] < 3 * s.spacing) continue;
            int near_wall = 0;
            for (int a = 0; a < dims - 1; ++a)
                if (p.pos[4 * i + a] < 3 * s.spacing || p.pos[4 * i + a] > s.tank.max[a] - 3 * s.spacing) near_wall = 1;
            if (near_wall) continue;
            const double err = fabs(pr[i] - s.rest_density * 9.81 * depth[i]) / p_bottom;
            if (err > worst && getenv("SPH_DEBUG"))
                print_message("    depth %.4f p %.1f expect %.1f\n", depth[i], pr[i], s.rest_density * 9.81 * depth[i]);
            worst = fmax(worst, err);
        }
        print_message("  %dD column of %.2f m: particles moved down by up to %.2g dx; "
                      "max |p - rho0 g depth| = %.1f %% of rho0 g H\n",
                      dims, H, squeeze / s.spacing, 100 * worst);
        assert_true(squeeze > 0.01 * s.spacing); /* it did squeeze */
        assert_true(worst < 0.08);
        run_free(&r);
        sph_destroy(sol);
        particles_free(&p);
        free(depth);
        free(rho);
        free(pr);
        free(x);
        free(v);
    }
}

/* A block whose lattice lies half a spacing off the tank's (x from 0.55 m in a tank of 0.02 m
 * spacing: the block's particles at 0.56, 0.58, ... m): every column stays its own run. Merged
 * columns (two lattice columns read as one) would stack 30 particles where 15 stand and start
 * the fluid far above its block, at 1400 kg/m^3 at the bottom; here each particle gets
 * p = rho0 g (above + 1/2) dx of its own column and stays below the block's top. */
static void test_hydrostatic_offset_block(void **state)
{
    (void)state;
    scene s;
    const double dx = 0.02;
    const int nt[3] = { 40, 10, 20 }, nf[3] = { 12, 10, 15 };
    ref_sph_scene(&s, 3, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, dx, 1.3, nt, nf);
    s.blocks[0].min[0] = 0.55;
    s.blocks[0].max[0] = 0.8;
    particles p, q;
    sphsim_error e;
    assert_int_equal(init_generate(&s, &p, 1, &e), SPHSIM_OK);
    assert_int_equal(init_lattice(&s, &q, TUNE_AUTO, &e), SPHSIM_OK);
    assert_int_equal(q.n_fluid, 12 * 10 * 15);
    double worst = 0.0, top = 0.0;
    for (size_t i = 0; i < q.n_fluid; ++i) {
        size_t above = 0;
        for (size_t j = 0; j < q.n_fluid; ++j)
            above += fabsf(q.pos[4 * j] - q.pos[4 * i]) < 0.25f * (float)dx &&
                     fabsf(q.pos[4 * j + 1] - q.pos[4 * i + 1]) < 0.25f * (float)dx &&
                     q.pos[4 * j + 2] > q.pos[4 * i + 2];
        const double want = s.rest_density * 9.81 * (above + 0.5) * dx;
        worst = fmax(worst, fabs(p.pressure[i] - want) / want);
        top = fmax(top, p.pos[4 * i + 2]);
    }
    print_message("  offset block: pressure within %.2g of rho0 g depth, top particle at %.4f m (block top %.2f)\n",
                  worst, top, s.blocks[0].max[2]);
    assert_true(worst < 2e-3);
    assert_true(top < s.blocks[0].max[2]);
    particles_free(&p);
    particles_free(&q);
}

/* The initial state of several blocks (host only): init_generate's lattice in
 * blocks given in no particular order, one stacked on another (one run of particles per column
 * through both), one floating (left alone), and gravity pointing down or up. Each particle of a
 * run resting on the floor must get p = rho0 g depth with depth = (the fluid particles above it
 * in its column + 1/2) dx, counted here by brute force; the lattice (every particle's place,
 * type, mass and id) and the squeeze must be the same to the bit with 1, 3 and 7 threads
 * (SPHSIM_INIT_THREADS). */
static void test_hydrostatic_columns(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims) {
        scene s;
        const double dx = 0.01;
        const int nt[3] = { 12, dims == 2 ? 30 : 6, 30 }, nf[3] = { 6, 6, 6 };
        ref_sph_scene(&s, dims, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, dx, 1.3, nt, nf);
        const int up = dims - 1;                    /* the vertical axis */
        const double sign = dims == 2 ? -1.0 : 1.0; /* 2D: gravity points up, the "floor" is the lid */
        s.gravity[up] = -9.81 * sign;
        const double top = s.tank.max[up];
        /* fluid heights measured from the floor (the lid in 2D) */
        const double lo[3] = { 0.10, 0.10, 0.0 }, hi[3] = { 0.16, 0.14, 0.10 };
        const double x0[3] = { 0.0, 0.08, 0.0 }, x1[3] = { 0.06, 0.12, 0.06 };
        s.n_blocks = 3; /* the stacked block first, then the floating one, then the one on the floor */
        for (int b = 0; b < 3; ++b) {
            s.blocks[b].min[0] = x0[b];
            s.blocks[b].max[0] = x1[b];
            if (dims == 3) {
                s.blocks[b].min[1] = 0.0;
                s.blocks[b].max[1] = 0.04;
            }
            s.blocks[b].min[up] = sign > 0 ? lo[b] : top - hi[b];
            s.blocks[b].max[up] = sign > 0 ? hi[b] : top - lo[b];
        }
        particles p[3];
        sphsim_error e;
        static const int threads[3] = { 1, 3, 7 };
        for (int t = 0; t < 3; ++t) assert_int_equal(init_generate(&s, &p[t], threads[t], &e), SPHSIM_OK);
        particles q; /* the lattice before the squeeze */
        assert_int_equal(init_lattice(&s, &q, TUNE_AUTO, &e), SPHSIM_OK);
        const size_t n = q.n;
        size_t resting = 0, floating = 0;
        for (size_t i = 0; i < q.n_fluid; ++i) {
            const double h_i = sign > 0 ? q.pos[4 * i + up] : top - q.pos[4 * i + up];
            size_t above = 0;
            for (size_t j = 0; j < q.n_fluid; ++j) {
                int same = 1;
                for (int a = 0; a < dims; ++a)
                    if (a != up && fabsf(q.pos[4 * j + a] - q.pos[4 * i + a]) > 0.25f * (float)dx) same = 0;
                const double h_j = sign > 0 ? q.pos[4 * j + up] : top - q.pos[4 * j + up];
                above += same && h_j > h_i;
            }
            if (q.pos[4 * i] > 0.07) { /* the floating block: untouched */
                ++floating;
                assert_true(p[0].pos[4 * i + up] == q.pos[4 * i + up]);
                assert_true(p[0].pressure[i] == 0.0f);
                continue;
            }
            ++resting;
            const double want = s.rest_density * 9.81 * (above + 0.5) * dx;
            assert_true(fabs(p[0].pressure[i] - want) <= 2e-3 * want);
            /* squeezed towards the floor, by less than a spacing */
            const double h_new = sign > 0 ? p[0].pos[4 * i + up] : top - p[0].pos[4 * i + up];
            assert_true(h_new < h_i && h_new > h_i - dx);
        }
        assert_int_equal(resting, (dims == 2 ? 6 : 24) * 16);
        assert_int_equal(floating, (dims == 2 ? 4 : 16) * 4);
        for (int t = 1; t < 3; ++t) {
            assert_int_equal(p[t].n, n);
            assert_memory_equal(p[t].id, p[0].id, 4 * n);
            assert_memory_equal(p[t].type, p[0].type, n);
            assert_memory_equal(p[t].mass, p[0].mass, 4 * n);
            assert_memory_equal(p[t].pos, p[0].pos, 16 * n);
            assert_memory_equal(p[t].rho, p[0].rho, 4 * n);
            assert_memory_equal(p[t].pressure, p[0].pressure, 4 * n);
        }
        print_message("  %dD: %zu particles resting in columns of 16 (two blocks), %zu floating\n", dims, resting,
                      floating);
        for (int t = 0; t < 3; ++t) particles_free(&p[t]);
        particles_free(&q);
    }
}

/* A free blob (no boundary particles, no gravity) with random velocities: over 30 steps the
 * particle count and masses are unchanged and total momentum is conserved to float precision
 * (|P(t) - P(0)| compared with the momentum exchanged, sum over steps of sum_i m_i |dv_i|). */
static void test_conservation(void **state)
{
    fixture *f = *state;
    const scheme cases[] = { { KERNEL_POLY6, EOS_LINEAR, VISC_LAPLACIAN },
                             { KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL },
                             { KERNEL_CUBIC, EOS_TAIT, VISC_LAPLACIAN } };
    for (int dims = 2; dims <= 3; ++dims)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
            scene s;
            const int nt[3] = { 24, 24, 24 }, nf2[3] = { 12, 12, 1 }, nf3[3] = { 6, 6, 6 };
            ref_sph_scene(&s, dims, cases[ci].kernel, cases[ci].eos, cases[ci].visc, 0.01, 1.3, nt,
                          dims == 2 ? nf2 : nf3);
            s.gravity[dims - 1] = 0.0;
            s.boundary_layers = 0;
            s.alpha = 0.5;
            s.mu = 20.0;
            for (int a = 0; a < dims; ++a) { /* move the block to the middle of the tank */
                s.blocks[0].min[a] += 6 * 0.01;
                s.blocks[0].max[a] += 6 * 0.01;
            }
            particles p;
            sphsim_error e;
            assert_int_equal(ref_sph_particles(&s, &p, &e), SPHSIM_OK);
            assert_int_equal(p.n, p.n_fluid);
            assert_int_equal(prepare_sph(&s, &p, &e), SPHSIM_OK);
            perturb(&s, &p, 77 + ci);
            const size_t n = p.n;
            sph_solver *sol = make_solver(&f->d, &s);
            run r;
            run_alloc(&f->d, &r, n, &s);
            double P0[3] = { 0, 0, 0 }, exchanged = 0, mass0 = 0;
            for (size_t i = 0; i < n; ++i) {
                mass0 += p.mass[i];
                for (int a = 0; a < 3; ++a) P0[a] += (double)p.mass[i] * p.vel[4 * i + a];
            }
            float *x = malloc(16 * n), *v = malloc(16 * n), *m = malloc(4 * n);
            uint32_t flags = 0;
            for (int step = 0; step < 30; ++step) {
                run_upload(&f->d, sol, &r, &p); /* re-sorts on the host every step */
                run_step(&f->d, sol, &r, n, NULL, NULL, x, v, &flags);
                assert_int_equal(flags, 0);
                /* masses on the device are untouched by the step */
                assert_int_equal(device_read(&f->d, r.mass, 0, 4 * n, m, &e), SPHSIM_OK);
                for (size_t k = 0; k < n; ++k) assert_true(m[k] == p.mass[r.order[k]]);
                for (size_t i = 0; i < n; ++i) {
                    double dv = 0;
                    for (int a = 0; a < 3; ++a) dv += pow(v[4 * i + a] - p.vel[4 * i + a], 2);
                    exchanged += p.mass[i] * sqrt(dv);
                }
                memcpy(p.pos, x, 16 * n);
                memcpy(p.vel, v, 16 * n);
            }
            double P[3] = { 0, 0, 0 }, mass = 0, dP = 0;
            for (size_t i = 0; i < n; ++i) {
                mass += p.mass[i];
                for (int a = 0; a < 3; ++a) P[a] += (double)p.mass[i] * p.vel[4 * i + a];
            }
            for (int a = 0; a < 3; ++a) dP += (P[a] - P0[a]) * (P[a] - P0[a]);
            dP = sqrt(dP);
            print_message("  %dD %-8s n = %zu, 30 steps: |P - P0| = %.2e kg m/s, momentum exchanged %.2e kg m/s, "
                          "ratio %.1e\n",
                          dims, kname[cases[ci].kernel], n, dP, exchanged, dP / exchanged);
            assert_true(mass == mass0);
            assert_true(exchanged > 1e-3 * mass0); /* the particles really interacted */
            assert_true(dP < 1e-5 * exchanged);
            run_free(&r);
            sph_destroy(sol);
            particles_free(&p);
            free(x);
            free(v);
            free(m);
        }
}

/* The last-resort guards: a fluid particle stepping out of the tank is flagged FLAG_OUTSIDE, put
 * back on the wall and counted; a speed above max_speed sets FLAG_RUNAWAY; a NaN sets FLAG_NONFINITE. */
static void test_flags(void **state)
{
    fixture *f = *state;
    scene s;
    const int nt[3] = { 12, 12, 1 }, nf[3] = { 8, 8, 1 };
    ref_sph_scene(&s, 2, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, nt, nf);
    particles p;
    sphsim_error e;
    assert_int_equal(ref_sph_particles(&s, &p, &e), SPHSIM_OK);
    assert_int_equal(prepare_sph(&s, &p, &e), SPHSIM_OK);
    const size_t n = p.n;
    sph_solver *sol = make_solver(&f->d, &s);
    run r;
    run_alloc(&f->d, &r, n, &s);
    float *x = malloc(16 * n), *v = malloc(16 * n);
    uint32_t flags = 0;
    const size_t top = p.n_fluid - 1; /* top-right fluid particle, at (0.075, 0.075) */

    run_upload(&f->d, sol, &r, &p);
    run_step(&f->d, sol, &r, n, NULL, NULL, x, v, &flags);
    assert_int_equal(flags, 0);

    /* (0) a droplet 0.5 mm below the tank top (0.12 m; first wall layer at 0.125 m, closer than
     * d0 = 4 mm to the face) moving up at 1 m/s is turned back by the face barrier */
    float y0 = p.pos[4 * top + 1];
    p.pos[4 * top + 1] = 0.1195f;
    p.vel[4 * top + 1] = 1.0f;
    run_upload(&f->d, sol, &r, &p);
    run_step(&f->d, sol, &r, n, NULL, NULL, x, v, &flags);
    assert_int_equal(flags, 0);
    print_message("  droplet 0.5 mm from the wall at +1 m/s: v_next = %+.3g m/s\n", v[4 * top + 1]);
    assert_true(v[4 * top + 1] < 0.0f);

    /* (0b) a droplet rising at 0.4 c0 = 8 m/s midway between two wall particles of the lid (x =
     * 0.08 m, lid particles at 0.075 and 0.085 m), where the old per-particle Lennard-Jones
     * repulsion had a gap: the face barrier turns it back before the face, without a put-back */
    {
        const float x0 = p.pos[4 * top];
        p.pos[4 * top] = 0.08f;
        p.pos[4 * top + 1] = 0.115f;
        p.vel[4 * top + 1] = 8.0f;
        float y_max = 0.0f;
        int steps = 0;
        for (; steps < 40 && p.vel[4 * top + 1] > 0.0f; ++steps) {
            run_upload(&f->d, sol, &r, &p);
            run_step(&f->d, sol, &r, n, NULL, NULL, x, v, &flags);
            assert_int_equal(flags & FLAG_OUTSIDE, 0);
            memcpy(p.pos, x, 16 * n);
            memcpy(p.vel, v, 16 * n);
            y_max = fmaxf(y_max, p.pos[4 * top + 1]);
        }
        print_message("  droplet rising at 8 m/s between lid particles: turned back after %d steps, "
                      "%.2f dx below the lid\n",
                      steps, (0.12f - y_max) / 0.01f);
        assert_true(p.vel[4 * top + 1] < 0.0f);
        assert_true(y_max < 0.12f);
        particles_free(&p);
        assert_int_equal(ref_sph_particles(&s, &p, &e), SPHSIM_OK); /* back to the prepared state */
        assert_int_equal(prepare_sph(&s, &p, &e), SPHSIM_OK);
        assert_true(p.pos[4 * top] == x0);
    }

    /* (1) from 3 mm below the top at 30 m/s (faster than the barrier stops), it crosses in one step: outside only */
    p.pos[4 * top + 1] = 0.117f;
    p.vel[4 * top + 1] = 30.0f;
    run_upload(&f->d, sol, &r, &p);
    run_step(&f->d, sol, &r, n, NULL, NULL, x, v, &flags);
    assert_int_equal(flags, FLAG_OUTSIDE);
    /* put back on the wall, outward normal velocity removed, counted once */
    assert_true(fabsf(x[4 * top + 1] - (float)s.tank.max[1]) == 0.0f);
    assert_true(v[4 * top + 1] <= 0.0f);
    uint32_t counts[2];
    sphsim_error e2;
    assert_int_equal(device_read(&f->d, r.st.flags, 0, sizeof counts, counts, &e2), SPHSIM_OK);
    assert_int_equal(counts[1], 1);
    p.pos[4 * top + 1] = y0;

    /* (2) faster than max_speed (2000 m/s) */
    p.vel[4 * top + 1] = 5000.0f;
    run_upload(&f->d, sol, &r, &p);
    run_step(&f->d, sol, &r, n, NULL, NULL, x, v, &flags);
    assert_true(flags & FLAG_RUNAWAY);
    assert_false(flags & FLAG_NONFINITE);

    /* (3) NaN velocity */
    p.vel[4 * top + 1] = NAN;
    run_upload(&f->d, sol, &r, &p);
    run_step(&f->d, sol, &r, n, NULL, NULL, x, v, &flags);
    assert_true(flags & FLAG_NONFINITE);

    run_free(&r);
    sph_destroy(sol);
    particles_free(&p);
    free(x);
    free(v);
}

/* The grid sim.c builds: with neighbour lists every cell is at least the list radius
 * support (1 + skin) wide and one cell either side is scanned, whatever grid.cell_ratio says
 * (below 1 it would otherwise miss list candidates); without, cells follow cell_ratio. */
static void test_list_grid_cells(void **state)
{
    (void)state;
    scene s;
    const int nt[3] = { 12, 12, 12 }, nf[3] = { 4, 4, 4 };
    ref_sph_scene(&s, 3, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, nt, nf);
    s.mode = MODE_SPH;
    s.skin = 0.1;
    const double ratios[] = { 0.5, 0.95, 1.0, 1.5 };
    for (size_t k = 0; k < sizeof ratios / sizeof ratios[0]; ++k) {
        s.cell_ratio = ratios[k];
        grid_params gp;
        sphsim_error e;
        assert_int_equal(sim_grid_geometry(&s, 1, &gp, &e), SPHSIM_OK);
        const double list_radius = s.support * (1.0 + s.skin);
        assert_true(gp.cell_size >= list_radius);
        assert_true(gp.cell_size <= fmax(ratios[k], 1.0) * list_radius * 1.001);
        assert_int_equal(gp.reach, 1);
        const double cell_lists = gp.cell_size;
        assert_int_equal(sim_grid_geometry(&s, 0, &gp, &e), SPHSIM_OK);
        assert_true(fabs(gp.cell_size - fmax(ratios[k] * s.support, s.support / gp.reach)) <= 1e-3 * s.support);
        print_message("  cell_ratio %.2f: cells %.4g m with lists (list radius %.4g m), %.4g m without (reach %u)\n",
                      ratios[k], cell_lists, list_radius, (double)gp.cell_size, gp.reach);
    }
}

/* The lists' buffers (sph_list_parts, sph_list_buffers_fit, sph_list_bytes): split by particle,
 * each part holds the whole lists of ceil(n / parts) particles and must fit the device's largest
 * buffer; five parts are refused (0), and so are lists whose pos_p records exceed one buffer. The tests that step with lists (run_step, lists >= 3) force three parts, so
 * that particles of every part are compared with the brute-force reference. */
static void test_list_parts(void **state)
{
    (void)state;
    const size_t n = 1000;
    const unsigned cap = 128;
    const unsigned long long one = (unsigned long long)n * cap * 4; /* bytes of all the lists */
    assert_int_equal(nlist_parts(n, cap, one, TUNE_AUTO), 1);
    assert_int_equal(nlist_parts(n, cap, one - 1, TUNE_AUTO), 2);
    assert_int_equal(nlist_parts(n, cap, 500ull * cap * 4, TUNE_AUTO), 2);
    assert_int_equal(nlist_parts(n, cap, 500ull * cap * 4 - 1, TUNE_AUTO), 3); /* 334 particles a part */
    assert_int_equal(nlist_parts(n, cap, 334ull * cap * 4, TUNE_AUTO), 3);
    assert_int_equal(nlist_parts(n, cap, 250ull * cap * 4, TUNE_AUTO), 4);
    assert_int_equal(nlist_parts(n, cap, 250ull * cap * 4 - 1, TUNE_AUTO), 0);
    /* the 32-byte pos_p records must fit one buffer too: with 8 entries a particle the lists
     * fit one buffer of 32 n bytes, and one byte less refuses them however they split */
    assert_int_equal(sph_lists_fit(n, cap, 250ull * cap * 4, TUNE_AUTO), 1);
    assert_int_equal(sph_lists_fit(n, cap, 250ull * cap * 4 - 1, TUNE_AUTO), 0);
    assert_int_equal(sph_lists_fit(n, 8, (unsigned long long)n * 32, TUNE_AUTO), 1);
    assert_int_equal(sph_lists_fit(n, 8, (unsigned long long)n * 32 - 1, TUNE_AUTO), 0);
    assert_int_equal(nlist_parts(n, 8, (unsigned long long)n * 32 - 1, TUNE_AUTO), 2);
    assert_int_equal(sph_lists_fit((size_t)1 << 31, 1, 1ull << 40, TUNE_AUTO), 0); /* 2 j overflows */
    assert_int_equal(sph_lists_fit(((size_t)1 << 31) - 1, 1, 1ull << 40, TUNE_AUTO), 1);
    /* at least three, as the tests force (tuning.list_parts) */
    assert_int_equal(nlist_parts(n, cap, one, 3), 3);
    assert_int_equal(nlist_parts(n, cap, 250ull * cap * 4, 3), 4);
    scene s;
    const int nt[3] = { 12, 12, 12 }, nf[3] = { 4, 4, 4 };
    ref_sph_scene(&s, 3, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, nt, nf);
    s.skin = 0.1;
    const unsigned c = nlist_cap(&s);
    /* the entries of every particle a part holds, plus each particle's count and build
     * position, the second half of its pos_p record, and the lists' state; per cell of the
     * lists' grid, the check's box, the flags and the wet-cell list (none here) */
    assert_int_equal(sph_record_bytes(NULL, 1), 32);
    assert_int_equal(sph_record_bytes(NULL, 0), 16);
    s.density = DENSITY_CONTINUITY; /* its density stage writes the record's second half */
    assert_int_equal(sph_record_bytes(&s, 0), 32);
    s.density = DENSITY_SUMMATION;
    const size_t rest = n * (4 + 16 + 16) + sizeof(nlist_state);
    assert_int_equal(sizeof(nlist_state), 48);
    assert_int_equal(sph_list_bytes(&s, n, 0, 0, TUNE_AUTO), (size_t)n * c * 4 + rest);
    assert_int_equal(sph_list_bytes(&s, n, 0, (unsigned long long)n * c * 4, TUNE_AUTO), (size_t)n * c * 4 + rest);
    assert_int_equal(sph_list_bytes(&s, n, 0, 334ull * c * 4, TUNE_AUTO), (size_t)3 * 334 * c * 4 + rest);
    assert_int_equal(sph_list_bytes(&s, n, 100, 334ull * c * 4, TUNE_AUTO), (size_t)3 * 334 * c * 4 + rest + 2100);
}

/* sph_set_masses takes one mass per particle type, and refuses particles of one type with two
 * masses (which sph_prepare never makes; the forces loop could not tell them apart), naming
 * the type and both masses. It notes whether every wall particle is outside the tank box (the
 * list build then looks for walls near the tank's faces only). */
static void test_set_masses(void **state)
{
    fixture *f = *state;
    scene s;
    const int nt[3] = { 8, 8, 1 }, nf[3] = { 4, 4, 1 };
    ref_sph_scene(&s, 2, KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL, 0.01, 1.3, nt, nf);
    sph_solver *sol = make_solver_lists(&f->d, &s, 1, 16);
    sphsim_error e;
    const uint8_t type[5] = { PTYPE_FLUID, PTYPE_BOUNDARY, PTYPE_FLUID, PTYPE_BOUNDARY, PTYPE_FLUID };
    const float same[5] = { 0.1f, 0.125f, 0.1f, 0.125f, 0.1f };
    /* the tank is [0, 0.08]^2: walls below it in y and right of it in x, then one inside */
    float pos[20] = { 0.01f, 0.01f, 0,      0,     0.02f, -0.005f, 0,     0,     0.03f, 0.03f,
                      0,     0,     0.085f, 0.04f, 0,     0,       0.05f, 0.05f, 0,     0 };
    assert_int_equal(sph_set_masses(sol, pos, same, type, 5, &e), SPHSIM_OK);
    assert_int_equal(nlist_get_params(sph_nlist(sol))->walls_outside, 1);
    pos[12] = 0.075f;
    assert_int_equal(sph_set_masses(sol, pos, same, type, 5, &e), SPHSIM_OK);
    assert_int_equal(nlist_get_params(sph_nlist(sol))->walls_outside, 0);
    const float fluid2[5] = { 0.1f, 0.125f, 0.1f, 0.125f, 0.2f }, wall2[5] = { 0.1f, 0.125f, 0.1f, 0.5f, 0.1f };
    memset(&e, 0, sizeof e);
    assert_int_equal(sph_set_masses(sol, pos, fluid2, type, 5, &e), SPHSIM_E_SCENE);
    print_message("  %s\n", e.msg);
    assert_non_null(strstr(e.msg, "every fluid particle"));
    assert_non_null(strstr(e.msg, "0.200000003"));
    memset(&e, 0, sizeof e);
    assert_int_equal(sph_set_masses(sol, pos, wall2, type, 5, &e), SPHSIM_E_SCENE);
    assert_non_null(strstr(e.msg, "every wall particle"));
    assert_non_null(strstr(e.msg, "0.125"));
    assert_non_null(strstr(e.msg, "0.5 kg"));
    sph_destroy(sol);
}

/* The gauges (kernels/gauges.cl) on the state of a density stage against the double reference
 * (ref_sph_gauges): a pressure probe inside the fluid, one near its surface and one in the dry
 * part of the tank (NaN), a velocity probe, a height gauge and the walls' force and moment, in 2D
 * and 3D, with and without neighbour lists, for two schemes. The force gauge's sums come from the
 * density stages enqueued after gauges_before_step, as in a run. */
static void gauges_case(fixture *f, int dims, int lists, const scheme *sc)
{
    scene s;
    particles p;
    perturbed_scene(&s, &p, dims, sc, 900 + (uint64_t)dims);
    const int up = dims - 1;
    const double *bm = s.blocks[0].max;
    static const double at[5][3] = {
        { 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.9 }, { 0, 0, 0 }, { 0.4, 0.4, 0.4 }, { 0.6, 0.6, 0 }
    };
    static const scene_gauge_type types[6] = { GAUGE_PRESSURE, GAUGE_PRESSURE, GAUGE_PRESSURE,
                                               GAUGE_VELOCITY, GAUGE_HEIGHT,   GAUGE_FORCE };
    s.n_gauges = 6;
    for (int k = 0; k < 6; ++k) {
        scene_gauge *g = &s.gauges[k];
        memset(g, 0, sizeof *g);
        snprintf(g->name, sizeof g->name, "g%d", k);
        g->type = types[k];
        g->every = 1;
        g->object_index = -1; /* force: the tank's walls */
        for (int a = 0; a < dims; ++a) {
            const double frac = k < 5 ? at[k][a == up ? 2 : a] : 0.3;
            g->point[a] = k == 2 ? s.tank.max[a] - 0.3 * s.spacing : frac * bm[a];
        }
        if (k == 4) g->point[up] = s.tank.min[up];
    }
    sph_solver *sol = make_solver_lists(&f->d, &s, lists, p.n);
    run r;
    run_alloc(&f->d, &r, p.n, &s);
    run_upload(&f->d, sol, &r, &p);
    sphsim_error e;
    /* the boundary stage's force sums find a wall's slot by its id (run_upload's) */
    s.n_fluid = s.n_boundary = 0; /* every id below first_obj: the tank's walls */
    for (size_t i = 0; i < p.n; ++i) ++*(p.type[i] == PTYPE_FLUID ? &s.n_fluid : &s.n_boundary);
    gauges *g = NULL;
    sphsim_status st = gauges_create(&g, &f->d, &s, sol, 0, 0, 1, &e);
    if (st != SPHSIM_OK) fprintf(stderr, "gauges_create: %s\n", e.msg);
    assert_int_equal(st, SPHSIM_OK);
    gauges_before_step(g, 0);
    assert_int_equal(sph_enqueue_density(sol, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
    assert_int_equal(gauges_sample(g, 0, r.cs, r.ce, r.gpb, &r.st, &e), SPHSIM_OK);
    gauge_block *b = NULL;
    assert_int_equal(gauges_take(g, 1, &b, &e), SPHSIM_OK);
    assert_non_null(b);
    assert_int_equal(gauge_blocks_wait(b, &e), SPHSIM_OK);

    const size_t n = p.n;
    double *rho_r = malloc(8 * n), *p_r = malloc(8 * n), *x_r = malloc(32 * n), *v_r = malloc(32 * n);
    double want[6 * 6];
    assert_true(rho_r && p_r && x_r && v_r);
    unsigned flags;
    ref_sph_step(&s, &p, rho_r, p_r, x_r, v_r, &flags);
    ref_sph_gauges(&s, &p, rho_r, p_r, want);
    double p_max = 0.0, v_max = 0.0;
    for (size_t i = 0; i < n; ++i) {
        p_max = fmax(p_max, p_r[i]);
        for (int a = 0; a < 3; ++a) v_max = fmax(v_max, fabs(p.vel[4 * i + a]));
    }
    double err[4] = { 0, 0, 0, 0 }; /* pressure / p_max, velocity / v_max, height (m), force / |F| */
    for (int k = 0; k < 6; ++k) {
        const int cols = gauge_cols(&s, &s.gauges[k]);
        assert_int_equal(b->rows[k], 1);
        const float *got = b->data + b->offset[k];
        if (k == 2) { /* dry */
            assert_true(isnan(got[0]) && isnan(want[6 * k]));
            continue;
        }
        double fmag = 0.0;
        if (k == 5)
            for (int a = 0; a < dims; ++a) fmag = hypot(fmag, want[6 * k + a]);
        for (int c = 0; c < cols; ++c) {
            const double d = fabs(got[c] - want[6 * k + c]);
            if (s.gauges[k].type == GAUGE_PRESSURE) err[0] = fmax(err[0], d / p_max);
            if (s.gauges[k].type == GAUGE_VELOCITY) err[1] = fmax(err[1], d / v_max);
            if (s.gauges[k].type == GAUGE_HEIGHT) err[2] = fmax(err[2], d);
            /* moments against |F| times the tank's size */
            if (s.gauges[k].type == GAUGE_FORCE) err[3] = fmax(err[3], d / (fmag * (c < dims ? 1.0 : 0.1)));
        }
    }
    const double h = b->data[b->offset[4]], fy = b->data[b->offset[5] + up];
    print_message("  %dD %s lists %d: p %.3g Pa (surface %.3g), height %.4g m (block top %.4g), F_up %.4g: "
                  "errors p %.2g, v %.2g, h %.2g m, F %.2g\n",
                  dims, kname[sc->kernel], lists, (double)b->data[b->offset[0]], (double)b->data[b->offset[1]], h,
                  bm[up], fy, err[0], err[1], err[2], err[3]);
    assert_true(fabs(h - bm[up]) < 1.5 * s.spacing); /* the surface, near the block's top */
    assert_true(fy < 0.0);                           /* the fluid pushes the floor down */
    assert_true(err[0] < 1e-4);
    assert_true(err[1] < 1e-4);
    assert_true(err[2] < 1e-5);
    assert_true(err[3] < 1e-4);
    gauge_blocks_free(b);
    gauges_destroy(g);
    free(rho_r);
    free(p_r);
    free(x_r);
    free(v_r);
    run_free(&r);
    sph_destroy(sol);
    particles_free(&p);
}

/* Moving walls (docs/physics.md, "Moving walls"): one device step of a small tank that moves, by
 * a sine translation of 5 Hz (its acceleration, 2.5 m/s^2 at the step, enters the wall pressure
 * as g - a_w) and by a roll of 5 Hz about the tank's centre (v_w = omega x r, a_w with alpha and
 * the centripetal part), against the double reference at the step's time, with the cell walk and
 * with lists: the fluid's density, pressure, next positions and velocities, the walls' pressure,
 * and the walls' next places (from their rest places) and velocities. */
static void test_moving_walls_vs_reference(void **state)
{
    fixture *f = *state;
    static const char *const motions[2] = {
        "{'type':'sine','amplitude':[0.004,0.002],'frequency':5,'phase':0.4}",
        "{'type':'rotation','amplitude':6,'frequency':5,'phase':0.4}",
    };
    for (int mo = 0; mo < 2; ++mo)
        for (int lists = 0; lists <= 1; ++lists) {
            char json[1024];
            snprintf(json, sizeof json,
                     "{'format':1,'dimensions':2,'tank':{'min':[0,0],'max':[0.12,0.12],'motion':[%s]},"
                     "'fluid':{'blocks':[{'min':[0,0],'max':[0.08,0.08]}],'spacing':0.01,"
                     "'viscosity':{'type':'artificial','alpha':0.5},'eos':{'type':'tait','sound_speed':20}},"
                     "'time':{'end':1,'dt':0.0001}}",
                     motions[mo]);
            for (char *c = json; *c; ++c)
                if (*c == '\'') *c = '"';
            scene s;
            particles p;
            sphsim_error e;
            assert_int_equal(scene_load_string(&s, json, "moving.json", NULL, 0, &e), SPHSIM_OK);
            assert_int_equal(init_generate(&s, &p, 1, &e), SPHSIM_OK);
            perturb(&s, &p, 77 + mo);
            /* the walls where the tank is at the step's time, moving with it */
            const long step = 37;
            const double t = step * s.dt;
            motion_frame fr;
            motion_frame_at(&s.tank_motion, t, &fr);
            motion_state ms;
            motion_eval(&s.tank_motion, t, &ms);
            for (size_t i = 0; i < p.n; ++i) {
                if (p.type[i] != PTYPE_BOUNDARY) continue;
                double x0[3] = { p.pos[4 * i], p.pos[4 * i + 1], p.pos[4 * i + 2] }, x[3], r[3];
                for (int k = 0; k < 3; ++k) {
                    x[k] = fr.c[k] + fr.d[k];
                    for (int q = 0; q < 3; ++q) x[k] += fr.R[3 * k + q] * (x0[q] - fr.c[q]);
                    r[k] = x[k] - fr.c[k] - fr.d[k];
                }
                const double v[3] = { ms.v[0] - ms.omega * r[1], ms.v[1] + ms.omega * r[0], 0.0 };
                for (int k = 0; k < 3; ++k) {
                    p.pos[4 * i + k] = (float)x[k];
                    p.vel[4 * i + k] = (float)v[k];
                }
            }
            const size_t n = p.n;
            sph_solver *sol = make_solver_lists(&f->d, &s, lists, n);
            run r;
            run_alloc(&f->d, &r, n, &s);
            run_upload(&f->d, sol, &r, &p);
            assert_int_equal(sph_set_step(sol, step, &e), SPHSIM_OK);
            g_walls_move = 1;
            step_vs_reference_at(f, sol, &r, &s, &p, t, mo ? "roll " : "sine ");
            g_walls_move = 0;
            /* the acceleration shows in the walls' pressure: the reference's walls without it
             * (the same places and velocities, a_w = 0) differ by far more than the tolerance */
            double *rho_r = malloc(8 * n), *p_r = malloc(8 * n), *p_still = malloc(8 * n), *xv = malloc(64 * n);
            assert_true(rho_r && p_r && p_still && xv);
            unsigned flags_r;
            ref_sph_step_at(&s, &p, t, rho_r, p_r, xv, xv + 4 * n, &flags_r);
            scene_motion keep = s.tank_motion;
            memset(&s.tank_motion, 0, sizeof s.tank_motion);
            ref_sph_step_at(&s, &p, t, rho_r, p_still, xv, xv + 4 * n, &flags_r);
            s.tank_motion = keep;
            double dp = 0.0, pmax = 0.0;
            for (size_t i = 0; i < n; ++i)
                if (p.type[i] == PTYPE_BOUNDARY) {
                    dp = fmax(dp, fabs(p_still[i] - p_r[i]));
                    pmax = fmax(pmax, p_r[i]);
                }
            assert_true(dp > 4e-4 * pmax); /* (compare_step's tolerance: 5e-5) */
            free(rho_r);
            free(p_r);
            free(p_still);
            free(xv);
            run_free(&r);
            sph_destroy(sol);
            particles_free(&p);
            scene_free(&s);
        }
}

static void test_gauges_vs_reference(void **state)
{
    fixture *f = *state;
    static const scheme two[2] = { { KERNEL_WENDLAND, EOS_TAIT, VISC_ARTIFICIAL },
                                   { KERNEL_CUBIC, EOS_LINEAR, VISC_LAPLACIAN } };
    /* without lists, with lists, and with every list (2) or some (5) over list_cap: the walls'
     * force sums of the boundary stage's _walk twin (make_solver_lists) */
    static const int lists[4] = { 0, 1, 2, 5 };
    for (int dims = 2; dims <= 3; ++dims)
        for (int l = 0; l < 4; ++l)
            for (int k = 0; k < 2; ++k) gauges_case(f, dims, lists[l], &two[k]);
}

int main(void)
{
    tuning_defaults(&T);
    /* SPHSIM_TEST_FILTER=name (a pattern with * and ?) runs the matching tests only */
    const char *filter = getenv("SPHSIM_TEST_FILTER");
    if (filter && *filter) cmocka_set_test_filter(filter);
    const struct CMUnitTest host[] = {
        cmocka_unit_test(test_kernel_continuum),         cmocka_unit_test(test_viscosity_kernel_2d_3d),
        cmocka_unit_test(test_kernel_lattice),           cmocka_unit_test(test_params_and_prepare),
        cmocka_unit_test(test_list_grid_cells),          cmocka_unit_test(test_list_parts),
        cmocka_unit_test(test_hydrostatic_offset_block),
    };
    const struct CMUnitTest dev[] = {
        cmocka_unit_test(test_step_vs_reference),
        cmocka_unit_test(test_continuity_vs_reference),
        cmocka_unit_test(test_continuity_hydrostatic),
        cmocka_unit_test(test_gauges_vs_reference),
        cmocka_unit_test(test_moving_walls_vs_reference),
        cmocka_unit_test(test_walls_beside_dry_cells),
        cmocka_unit_test(test_list_keep),
        cmocka_unit_test(test_go_ahead),
        cmocka_unit_test(test_list_check),
        cmocka_unit_test(test_list_skip),
        cmocka_unit_test(test_check_boxes),
        cmocka_unit_test(test_adaptive_skin),
        cmocka_unit_test(test_rest_lattice),
        cmocka_unit_test(test_hydrostatic_init),
        cmocka_unit_test(test_hydrostatic_columns),
        cmocka_unit_test(test_conservation),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_set_masses),
    };
    int fails = cmocka_run_group_tests_name("sph_host", host, NULL, NULL);
    fails += cmocka_run_group_tests_name("ocl_device", dev, setup_device, teardown_device);
    return fails;
}
