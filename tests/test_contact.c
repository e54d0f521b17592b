/* test_contact: the hard-sphere contact solver on the device (PoCL here) against analytic
 * results (binary collisions with the normal of their time of touch, at the default time step
 * and ten times it; wall impacts with friction and spin; a sphere sliding into rolling),
 * conservation laws, a dropped ball, a settling pile, a brute-force pair search and the plain-C
 * double-precision reference of one step (tests/ref_contact.c).
 *
 * The cell table is built on the host here (particles sorted by linear cell index, stable),
 * so these tests do not depend on the device grid; multi-step runs re-sort every step. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "contact.h"
#include "ref_contact.h"

static ocl_device dev;

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state;
static double urand(void) /* splitmix64 -> [0, 1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
static double urange(double lo, double hi) { return lo + (hi - lo) * urand(); }

/* A particle-mode scene with one radius bound: tank [lo, hi], gravity, dt, e (spheres and
 * walls), no friction, passes. */
static void make_scene(scene *s, int dims, const double lo[3], const double hi[3], const double g[3], double dt,
                       double e, int iterations, double r_max)
{
    memset(s, 0, sizeof *s);
    s->format = SCENE_FORMAT_VERSION;
    s->dims = dims;
    s->mode = MODE_PARTICLES;
    for (int a = 0; a < 3; ++a) {
        s->tank.min[a] = a < dims ? lo[a] : 0;
        s->tank.max[a] = a < dims ? hi[a] : 0;
        s->gravity[a] = a < dims ? g[a] : 0;
    }
    s->n_groups = 1;
    s->groups[0].radius = r_max;
    s->restitution = e;
    s->wall_restitution = e;
    s->contact_iterations = iterations;
    s->dt = dt;
    s->max_speed = 1e3;
    s->cell_ratio = 1;
    s->support = CONTACT_SUPPORT(r_max);
}

static void set_friction(scene *s, double mu)
{
    s->friction = mu;
    s->wall_friction = mu;
}

/* A system of spheres with a host-built cell table (tests only). */
typedef struct tsys {
    size_t n;
    scene s;
    grid_params gp;
    float *pos, *vel, *mass, *radius; /* current state, 4 floats per particle for pos/vel */
    uint32_t *id;                     /* creation index of each slot */
    uint32_t *cell, *perm, *cs, *ce;  /* cell of each particle, sort permutation, cell table */
    uint32_t *slot_of_id, *idx;       /* slot of each id in the last step's order; upload's idx */
    float *tmp;
    dev_state st;
    cl_mem cs_buf, ce_buf, gp_buf, idx_buf;
    contact_solver *c;
} tsys;

/* The tuning tsys_init hands the solver (NULL: the defaults). */
static const sphsim_tuning *tsys_tune;

static void tsys_init(tsys *t, const scene *s, size_t n, double cell_ratio)
{
    sphsim_error e;
    memset(t, 0, sizeof *t);
    t->n = n;
    t->s = *s;
    /* grid as sim.c makes it: tank plus one search radius each side */
    grid_params *gp = &t->gp;
    double radius = s->support, cell = cell_ratio * radius;
    gp->cell_size = (float)cell;
    gp->cell_size_inv = (float)(1.0 / cell);
    gp->radius = (float)radius;
    gp->dims = (dev_u32)s->dims;
    gp->n_cells = 1;
    for (int a = 0; a < 3; ++a) {
        if (a < s->dims) {
            gp->origin[a] = (float)(s->tank.min[a] - radius);
            double w = s->tank.max[a] - s->tank.min[a] + 2 * radius;
            gp->ncell[a] = (dev_u32)ceil(w / cell);
        } else {
            gp->origin[a] = 0;
            gp->ncell[a] = 1;
        }
        gp->n_cells *= gp->ncell[a];
    }
    gp->reach = (dev_u32)ceil(radius / cell - 1e-9);
    size_t m = n ? n : 1;
    t->pos = calloc(4 * m, sizeof(float));
    t->vel = calloc(4 * m, sizeof(float));
    t->tmp = calloc(4 * m, sizeof(float));
    t->mass = calloc(m, sizeof(float));
    t->radius = calloc(m, sizeof(float));
    t->id = calloc(m, sizeof(uint32_t));
    t->cell = calloc(m, sizeof(uint32_t));
    t->slot_of_id = calloc(m, sizeof(uint32_t));
    t->idx = calloc(m, sizeof(uint32_t));
    t->perm = calloc(m, sizeof(uint32_t));
    t->cs = calloc(gp->n_cells + 1, sizeof(uint32_t));
    t->ce = calloc(gp->n_cells, sizeof(uint32_t));
    assert_non_null(t->pos);
    assert_non_null(t->cs);
    for (size_t i = 0; i < n; ++i) t->id[i] = t->slot_of_id[i] = (uint32_t)i;
    dev_state *st = &t->st;
    st->n = n;
    assert_int_equal(device_alloc(&dev, m * 16, "pos", &st->pos, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 16, "vel", &st->vel, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 16, "pos_next", &st->pos_next, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 16, "vel_next", &st->vel_next, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 4, "id", &st->id, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 4, "idx", &t->idx_buf, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, 4, "flags", &st->flags, &e), SPHSIM_OK);
    uint32_t zero = 0;
    assert_int_equal(device_write(&dev, st->flags, 0, 4, &zero, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, gp->n_cells * 4, "cell_start", &t->cs_buf, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, gp->n_cells * 4, "cell_end", &t->ce_buf, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, sizeof *gp, "grid params", &t->gp_buf, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->gp_buf, 0, sizeof *gp, gp, &e), SPHSIM_OK);
    sphsim_status rc = contact_create(&t->c, &dev, s, tsys_tune, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_create: %s", e.msg);
}

static void tsys_free(tsys *t)
{
    contact_destroy(t->c);
    cl_mem all[] = { t->st.pos, t->st.vel,   t->st.pos_next, t->st.vel_next,
                     t->st.id,  t->st.flags, t->cs_buf,      t->ce_buf,      t->gp_buf,  t->idx_buf };
    for (size_t k = 0; k < sizeof all / sizeof *all; ++k)
        if (all[k]) clReleaseMemObject(all[k]);
    free(t->pos);
    free(t->vel);
    free(t->tmp);
    free(t->mass);
    free(t->radius);
    free(t->id);
    free(t->cell);
    free(t->slot_of_id);
    free(t->idx);
    free(t->perm);
    free(t->cs);
    free(t->ce);
}

/* Cell coordinate exactly as kernels/neighbours.h computes it (float). */
static uint32_t cell_coord(float x, float origin, float cell_inv, uint32_t ncell)
{
    const float c = floorf((x - origin) * cell_inv);
    if (!(c >= 0.0f)) return 0;
    if (c >= (float)ncell) return ncell - 1;
    return (uint32_t)c;
}

static void permute4(float *a, const uint32_t *perm, size_t n, float *tmp)
{
    for (size_t i = 0; i < n; ++i) memcpy(&tmp[4 * i], &a[4 * perm[i]], 16);
    memcpy(a, tmp, n * 16);
}
static void permute1(void *a, const uint32_t *perm, size_t n, float *tmp)
{
    uint32_t *x = a, *y = (uint32_t *)tmp;
    for (size_t i = 0; i < n; ++i) y[i] = x[perm[i]];
    memcpy(x, y, n * 4);
}

/* Sort the host state by linear cell index (stable counting sort), build the cell table and
 * upload state, table and idx (sorted slot -> slot in the last step's order): the
 * "grid_build + gather" of sim.c. */
static void tsys_sort_upload(tsys *t)
{
    sphsim_error e;
    const grid_params *gp = &t->gp;
    size_t n = t->n;
    memset(t->cs, 0, (gp->n_cells + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < n; ++i) {
        uint32_t cx = cell_coord(t->pos[4 * i], gp->origin[0], gp->cell_size_inv, gp->ncell[0]);
        uint32_t cy = cell_coord(t->pos[4 * i + 1], gp->origin[1], gp->cell_size_inv, gp->ncell[1]);
        uint32_t cz = gp->dims == 3 ? cell_coord(t->pos[4 * i + 2], gp->origin[2], gp->cell_size_inv, gp->ncell[2]) : 0;
        t->cell[i] = cx + gp->ncell[0] * (cy + gp->ncell[1] * cz);
        t->cs[t->cell[i] + 1]++;
    }
    for (uint32_t c = 0; c < gp->n_cells; ++c) t->cs[c + 1] += t->cs[c];
    memcpy(t->ce, t->cs, gp->n_cells * sizeof(uint32_t)); /* ce as the fill cursor */
    for (size_t i = 0; i < n; ++i) t->perm[t->ce[t->cell[i]]++] = (uint32_t)i;
    permute4(t->pos, t->perm, n, t->tmp);
    permute4(t->vel, t->perm, n, t->tmp);
    permute1(t->mass, t->perm, n, t->tmp);
    permute1(t->radius, t->perm, n, t->tmp);
    permute1(t->id, t->perm, n, t->tmp);
    for (size_t i = 0; i < n; ++i) { /* the mass rides in pos.w, the radius in vel.w (state.h) */
        t->pos[4 * i + 3] = t->mass[i];
        t->vel[4 * i + 3] = t->radius[i];
    }
    assert_int_equal(device_write(&dev, t->st.pos, 0, n * 16, t->pos, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->st.vel, 0, n * 16, t->vel, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->st.id, 0, n * 4, t->id, &e), SPHSIM_OK);
    for (size_t i = 0; i < n; ++i) t->idx[i] = t->slot_of_id[t->id[i]];
    assert_int_equal(device_write(&dev, t->idx_buf, 0, n * 4, t->idx, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->cs_buf, 0, gp->n_cells * 4, t->cs, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->ce_buf, 0, gp->n_cells * 4, t->ce, &e), SPHSIM_OK);
}

/* The contact step on the uploaded state; remembers its order for the next idx. */
static void tsys_enqueue(tsys *t)
{
    sphsim_error e;
    sphsim_status rc = contact_enqueue(t->c, t->cs_buf, t->ce_buf, t->gp_buf, t->idx_buf, &t->st, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_enqueue: %s", e.msg);
    for (size_t i = 0; i < t->n; ++i) t->slot_of_id[t->id[i]] = (uint32_t)i;
}

/* One step: sort + upload, contact step, read pos_next/vel_next back as the current state. */
static void tsys_step(tsys *t)
{
    sphsim_error e;
    tsys_sort_upload(t);
    tsys_enqueue(t);
    assert_int_equal(device_read(&dev, t->st.pos_next, 0, t->n * 16, t->pos, &e), SPHSIM_OK);
    assert_int_equal(device_read(&dev, t->st.vel_next, 0, t->n * 16, t->vel, &e), SPHSIM_OK);
}

/* Touching pairs of the current state (sorts and uploads it first). */
static long tsys_count(tsys *t)
{
    sphsim_error e;
    long nc = -1;
    tsys_sort_upload(t);
    sphsim_status rc = contact_count_cells(t->c, t->cs_buf, t->ce_buf, t->gp_buf, &t->st, &nc, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_count_cells: %s", e.msg);
    return nc;
}

static uint32_t tsys_flags(tsys *t)
{
    sphsim_error e;
    uint32_t f = 0;
    assert_int_equal(device_read(&dev, t->st.flags, 0, 4, &f, &e), SPHSIM_OK);
    return f;
}

/* Place n spheres of radius in [r_lo, r_hi] at random without overlap in box [lo, hi]
 * (centres at least r from its faces), gap >= `gap` between surfaces. */
static void place_random(tsys *t, size_t n, int dims, const double lo[3], const double hi[3], double r_lo, double r_hi,
                         double gap)
{
    for (size_t i = 0; i < n; ++i) {
        double r = urange(r_lo, r_hi), x[3] = { 0, 0, 0 };
        for (int tries = 0;; ++tries) {
            assert_true(tries < 100000);
            for (int a = 0; a < dims; ++a) x[a] = urange(lo[a] + r, hi[a] - r);
            int ok = 1;
            for (size_t j = 0; j < i && ok; ++j) {
                double d2 = 0;
                for (int a = 0; a < 3; ++a) d2 += (x[a] - t->pos[4 * j + a]) * (x[a] - t->pos[4 * j + a]);
                double rr = r + t->radius[j] + gap;
                ok = d2 >= rr * rr;
            }
            if (ok) break;
        }
        for (int a = 0; a < 3; ++a) t->pos[4 * i + a] = (float)x[a];
        t->radius[i] = (float)r;
    }
}

static void momentum(const tsys *t, double p[3], double *sum_m_v, double *ke)
{
    p[0] = p[1] = p[2] = 0;
    *sum_m_v = *ke = 0;
    for (size_t i = 0; i < t->n; ++i) {
        double v2 = 0;
        for (int a = 0; a < 3; ++a) {
            p[a] += (double)t->mass[i] * t->vel[4 * i + a];
            v2 += (double)t->vel[4 * i + a] * t->vel[4 * i + a];
        }
        *sum_m_v += t->mass[i] * sqrt(v2);
        *ke += 0.5 * t->mass[i] * v2;
    }
}

static void to_double(const float *a, double *b, size_t k)
{
    for (size_t i = 0; i < k; ++i) b[i] = a[i];
}

/* ---------------------------------------------------------------- tests */

/* Angular velocities after the last step, in t's sorted order (3 floats each). */
static void tsys_omega(tsys *t, float *w)
{
    sphsim_error e;
    cl_mem buf = NULL;
    assert_int_equal(device_alloc(&dev, t->n * 12, "omega", &buf, &e), SPHSIM_OK);
    assert_int_equal(contact_angular_velocity(t->c, &t->st, buf, &e), SPHSIM_OK);
    assert_int_equal(device_read(&dev, buf, 0, t->n * 12, w, &e), SPHSIM_OK);
    clReleaseMemObject(buf);
}

/* Set the angular velocities by particle id (3 floats each). */
static void tsys_set_omega(tsys *t, const float *w_by_id)
{
    sphsim_error e;
    tsys_sort_upload(t);
    sphsim_status rc = contact_set_angular_velocity(t->c, &t->st, w_by_id, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_set_angular_velocity: %s", e.msg);
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* Angular momentum about the origin, sum m x x v + I w (I = k m r^2), and the sums of
 * m |x||v| + I |w| (its scale) of t's current state; w in sorted order. */
static void angular_momentum(const tsys *t, const float *w, double k, double L[3], double *scale)
{
    L[0] = L[1] = L[2] = 0;
    *scale = 0;
    for (size_t i = 0; i < t->n; ++i) {
        const double m = t->mass[i], r = t->radius[i], I = k * m * r * r;
        const double x[3] = { t->pos[4 * i], t->pos[4 * i + 1], t->pos[4 * i + 2] };
        const double v[3] = { t->vel[4 * i], t->vel[4 * i + 1], t->vel[4 * i + 2] };
        L[0] += m * (x[1] * v[2] - x[2] * v[1]) + I * w[3 * i];
        L[1] += m * (x[2] * v[0] - x[0] * v[2]) + I * w[3 * i + 1];
        L[2] += m * (x[0] * v[1] - x[1] * v[0]) + I * w[3 * i + 2];
        *scale += m * sqrt(dot3(x, x) * dot3(v, v)) +
                  I * sqrt((double)w[3 * i] * w[3 * i] + (double)w[3 * i + 1] * w[3 * i + 1] +
                           (double)w[3 * i + 2] * w[3 * i + 2]);
    }
}

/* Two spheres (ids 0 and 1) at p1, p2 with velocities u1, u2, masses and radii, into t. */
static void tsys_pair(tsys *t, const double p1[3], const double p2[3], const double u1[3], const double u2[3],
                      double m1, double m2, double r1, double r2)
{
    for (int a = 0; a < 3; ++a) {
        t->pos[a] = (float)p1[a];
        t->pos[4 + a] = (float)p2[a];
        t->vel[a] = (float)u1[a];
        t->vel[4 + a] = (float)u2[a];
    }
    t->mass[0] = (float)m1;
    t->mass[1] = (float)m2;
    t->radius[0] = (float)r1;
    t->radius[1] = (float)r2;
}

/* When spheres at p1, p2 moving at u1, u2 on straight lines touch (|p + u t| = rs), and their
 * unit normal n (from 2 to 1) then. */
static double touch_time(const double p1[3], const double p2[3], const double u1[3], const double u2[3], double rs,
                         double n[3])
{
    double p[3], u[3];
    for (int a = 0; a < 3; ++a) {
        p[a] = p1[a] - p2[a];
        u[a] = u1[a] - u2[a];
    }
    const double A = dot3(u, u), B = dot3(p, u), C = dot3(p, p) - rs * rs;
    const double t_hit = (-B - sqrt(B * B - A * C)) / A;
    for (int a = 0; a < 3; ++a) n[a] = (p[a] + u[a] * t_hit) / rs;
    return t_hit;
}

/* ---------------------------------------------------------------- analytic tests */

/* The scene's automatic time step for spheres of radius r in a tank L tall under gravity g:
 * cfl r / sqrt(2 g L) with cfl 0.25 (docs/scene-format.md). */
static double default_dt(double r, double L) { return 0.25 * r / sqrt(2 * 9.81 * L); }

/* Two spheres approaching on straight lines (no gravity) with impact parameter b: after the
 * collision each velocity equals the textbook result for the normal at the moment of touch
 * (ref_binary_collision) to 1e-4 of the approach speed, and each position the event-driven
 * trajectory (straight lines, the touch between two steps) to 1e-4 of a radius; momentum,
 * angular momentum about the origin and, for e = 1, kinetic energy are conserved. */
static void offcentre(int dims, double e_r, double b_rel, double dt_factor, int friction)
{
    const double lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 };
    const double r1 = 0.02, r2 = dims == 3 ? 0.025 : 0.02, m1 = 1.0, m2 = dims == 3 ? 2.5 : 1.0, speed = 2.0;
    const double rs = r1 + r2, dt = dt_factor * default_dt(0.02, 1.0);
    /* approach along d (unit), offset along q (unit, normal to d) by b */
    double d[3] = { 1, 0, 0 }, q[3] = { 0, 1, 0 };
    if (dims == 3) {
        const double d3[3] = { 2.0 / 3, 2.0 / 3, 1.0 / 3 }, q3[3] = { 1 / sqrt(2.0), -1 / sqrt(2.0), 0 };
        memcpy(d, d3, sizeof d);
        memcpy(q, q3, sizeof q);
    }
    const double b = b_rel * rs;
    /* sphere 1 moves at +speed m2/(m1+m2) along d, sphere 2 at -speed m1/(m1+m2) (zero momentum
     * plus a drift c common to both); they start apart by 3 r_sum along d, and touch at t_hit */
    const double c[3] = { 0.05, -0.1, dims == 3 ? 0.2 : 0 };
    double p1[3], p2[3], u1[3], u2[3];
    for (int a = 0; a < 3; ++a) {
        p1[a] = 0.013 + 0.5 * b * q[a] - 1.5 * rs * d[a] * m2 / (m1 + m2);
        p2[a] = 0.013 - 0.5 * b * q[a] + 1.5 * rs * d[a] * m1 / (m1 + m2);
        u1[a] = speed * d[a] * m2 / (m1 + m2) + c[a];
        u2[a] = -speed * d[a] * m1 / (m1 + m2) + c[a];
    }
    if (dims == 2) p1[2] = p2[2] = u1[2] = u2[2] = 0;
    double n[3], v1o[3], v2o[3];
    const double t_hit = touch_time(p1, p2, u1, u2, rs, n);
    ref_binary_collision(u1, u2, m1, m2, n, e_r, v1o, v2o);

    scene s;
    make_scene(&s, dims, lo, hi, g, dt, e_r, 4, 0.025);
    if (friction) set_friction(&s, 0.3);
    tsys t;
    tsys_init(&t, &s, 2, 1.0);
    tsys_pair(&t, p1, p2, u1, u2, m1, m2, r1, r2);
    const double k = dims == 3 ? 0.4 : 0.5;
    float w[6] = { 0 };
    double L0[3], Ls, P0[3], smv, ke0;
    angular_momentum(&t, w, k, L0, &Ls);
    momentum(&t, P0, &smv, &ke0);
    const long steps = lround(ceil((t_hit + 3 * rs / speed) / dt));
    for (long st = 0; st < steps; ++st) tsys_step(&t);
    tsys_omega(&t, w);
    const double T = steps * dt;
    double err_v = 0, err_x = 0;
    for (size_t i = 0; i < 2; ++i) {
        const int one = t.id[i] == 0;
        for (int a = 0; a < 3; ++a) {
            const double vo = one ? v1o[a] : v2o[a];
            const double xo = (one ? p1[a] + u1[a] * t_hit : p2[a] + u2[a] * t_hit) + vo * (T - t_hit);
            err_v = fmax(err_v, fabs(t.vel[4 * i + a] - vo));
            err_x = fmax(err_x, fabs(t.pos[4 * i + a] - xo));
        }
    }
    double L1[3], P1[3], ke1;
    angular_momentum(&t, w, k, L1, &Ls);
    momentum(&t, P1, &smv, &ke1);
    double dL = 0, dP = 0;
    for (int a = 0; a < 3; ++a) {
        dL = fmax(dL, fabs(L1[a] - L0[a]));
        dP = fmax(dP, fabs(P1[a] - P0[a]));
    }
    printf("# collision %dD e=%g b=%.2f (r1+r2) dt=%.3g s (%gx default)%s: touch at %.4g s, %ld steps; |v - v_exact| "
           "%.2e of the approach speed, |x - x_exact| %.2e r, |dP| %.1e, |dL| %.1e of %.3g, dKE/KE %.1e\n",
           dims, e_r, b_rel, dt, dt_factor, friction ? " mu=0.3" : "", t_hit, steps, err_v / speed, err_x / r1, dP, dL,
           Ls, (ke1 - ke0) / ke0);
    if (!friction) {
        assert_true(err_v < 1e-4 * speed);
        assert_true(err_x < 1e-4 * r1);
    }
    assert_true(dP < 1e-6 * smv);
    assert_true(dL < 1e-5 * Ls);
    if (e_r == 1.0 && !friction) assert_true(fabs(ke1 - ke0) < 1e-5 * ke0);
    tsys_free(&t);
}

static void test_offcentre_collisions(void **state)
{
    (void)state;
    const double es[3] = { 0.0, 0.5, 1.0 }, bs[4] = { 0.0, 0.25, 0.5, 0.85 };
    for (int dims = 2; dims <= 3; ++dims)
        for (int f = 0; f < 2; ++f)
            for (int k = 0; k < 3; ++k)
                for (int l = 0; l < 4; ++l) offcentre(dims, es[k], bs[l], f ? 10.0 : 1.0, 0);
    /* the case: equal spheres r = 0.02 m, e = 0.5, 2 m/s, impact parameter r */
    offcentre(2, 0.5, 0.5, 1.0, 0);
    /* with friction the velocities follow the impulse model (test_pair_friction); the
     * conservation laws hold alike */
    offcentre(3, 0.5, 0.5, 1.0, 1);
    offcentre(3, 0.5, 0.5, 10.0, 1);
}

/* Two discs of r = 0.02 m whose float distance rounds to r_sum while their squared distance is
 * just below r_sum^2: overlapping for the contact test, touching just now for the root. The
 * pair approaches off-centre at 2 m/s, so the step's normal is the one of the step start,
 * dx / |dx|: the bounce must follow it (a lasting contact's normal, that of the drift's start,
 * is 3 degrees off at this time step). Candidates (x, y) are kept whose squared distance rounds
 * alike with and without fused multiply-adds, so the device's dot product sees the same value. */
static void test_touch_within_rounding(void **state)
{
    (void)state;
    const float r = 0.02f, rs = r + r, F = rs * rs;
    const float below = nextafterf(F, 0.0f);
    float x = 0, y = 0;
    for (int k = 0; k < 200000 && !(x > 0); ++k) {
        const float cx = rs * 0.8f + (float)k * 1e-9f;
        for (int sgn = -1; sgn <= 1 && !(x > 0); sgn += 2) {
            float cy = sqrtf(rs * rs - cx * cx);
            for (int u = -4; u <= 4 && !(x > 0); ++u) {
                const float yy = cy + (float)u * (float)sgn * 2e-9f;
                const volatile float x2 = cx * cx, y2 = yy * yy;
                const float d_plain = x2 + y2, d_fma1 = fmaf(yy, yy, x2), d_fma2 = fmaf(cx, cx, y2);
                if (d_plain == below && d_fma1 == below && d_fma2 == below && sqrtf(below) == rs) {
                    x = cx;
                    y = yy;
                }
            }
        }
    }
    assert_true(x > 0); /* a pair at the rounding edge exists */
    const double lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 };
    const double dt = 10 * default_dt(r, 1.0), e_r = 0.5;
    /* disc 1 at (x, y) from disc 2, both moving towards each other at 30 degrees off the centre
     * line: relative velocity -(2 m/s) (cos 30, sin 30) rotated onto the pair's direction */
    const double L = sqrt((double)x * x + (double)y * y), n[3] = { x / L, y / L, 0 };
    const double c30 = cos(M_PI / 6), s30 = sin(M_PI / 6);
    const double dvx = -2.0 * (c30 * n[0] - s30 * n[1]), dvy = -2.0 * (c30 * n[1] + s30 * n[0]);
    const double p1[3] = { x, y, 0 }, p2[3] = { 0, 0, 0 };
    const double u1[3] = { 0.5 * dvx, 0.5 * dvy, 0 }, u2[3] = { -0.5 * dvx, -0.5 * dvy, 0 };
    scene s;
    make_scene(&s, 2, lo, hi, g, dt, e_r, 4, r);
    tsys t;
    tsys_init(&t, &s, 2, 1.0);
    tsys_pair(&t, p1, p2, u1, u2, 1.0, 1.0, r, r);
    /* the positions as the device holds them: the rounding edge must survive the offset */
    const float fx = t.pos[0] - t.pos[4], fy = t.pos[1] - t.pos[5];
    double ux[3] = { u1[0], u1[1], 0 }, uy[3] = { u2[0], u2[1], 0 }, v1o[3], v2o[3];
    const double nf[3] = { fx / sqrt((double)fx * fx + (double)fy * fy), fy / sqrt((double)fx * fx + (double)fy * fy),
                           0 };
    ref_binary_collision(ux, uy, 1.0, 1.0, nf, e_r, v1o, v2o);
    const int edge = fmaf(fy, fy, fx * fx) < F && sqrtf(fmaf(fy, fy, fx * fx)) == rs;
    assert_int_equal(tsys_count(&t), 1);
    tsys_step(&t);
    double err = 0;
    for (size_t i = 0; i < 2; ++i)
        for (int a = 0; a < 2; ++a) err = fmax(err, fabs(t.vel[4 * i + a] - (t.id[i] == 0 ? v1o[a] : v2o[a])));
    printf("# touch within rounding (%s): |v - v_exact| %.2e of the approach speed\n",
           edge ? "at the edge" : "not at the edge", err / 2.0);
    assert_true(edge);
    assert_true(err < 1e-4 * 2.0);
    tsys_free(&t);
}

/* A tank face does not count against the contacts it is at right angles to (docs/contacts.md,
 * "Relaxation"): two discs sliding on the floor at +-1 m/s collide as a lone pair, and a
 * sphere flying into a corner of the 3D tank bounces off its three faces at once, both with
 * e = 1 and the default 4 passes: the speeds come back to 1e-4 (a floor counted as a contact
 * of each disc halved their pair's correction per pass: 0.875 m/s; a corner's three faces
 * thirded theirs: 0.60 of the speed). */
static void test_faces_at_right_angles(void **state)
{
    (void)state;
    const double r = 0.01, dt = 1e-3;
    { /* 2D: the pair on the floor, under gravity */
        const double lo[3] = { -0.5, 0, 0 }, hi[3] = { 0.5, 0.5, 0 }, g[3] = { 0, -9.81, 0 };
        scene s;
        make_scene(&s, 2, lo, hi, g, dt, 1.0, 4, r);
        tsys t;
        tsys_init(&t, &s, 2, 1.0);
        const double y = r - 1e-6, p1[3] = { -0.02, y, 0 }, p2[3] = { 0.02, y, 0 }, u1[3] = { 1, 0, 0 },
                     u2[3] = { -1, 0, 0 };
        tsys_pair(&t, p1, p2, u1, u2, 1.0, 1.0, r, r);
        for (int st = 0; st < 40; ++st) tsys_step(&t);
        double err = 0;
        for (size_t i = 0; i < 2; ++i) err = fmax(err, fabs(fabs(t.vel[4 * i]) - 1.0));
        printf("# two discs on the floor, e = 1: |v_x| after the collision within %.2e m/s of 1 m/s\n", err);
        assert_true(t.vel[0] * (t.id[0] == 0 ? 1 : -1) < 0); /* they have bounced */
        assert_true(err < 1e-4);
        tsys_free(&t);
    }
    { /* 3D: a sphere into the corner (lo, lo, lo), no gravity */
        const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.5, 0.5, 0.5 }, g[3] = { 0, 0, 0 };
        scene s;
        make_scene(&s, 3, lo, hi, g, dt, 1.0, 4, r);
        tsys t;
        tsys_init(&t, &s, 1, 1.0);
        const double v = 1 / sqrt(3.0), p[3] = { 0.03, 0.03, 0.03 };
        for (int a = 0; a < 3; ++a) {
            t.pos[a] = (float)p[a];
            t.vel[a] = (float)-v;
        }
        t.mass[0] = 1.0f;
        t.radius[0] = (float)r;
        for (int st = 0; st < 60; ++st) tsys_step(&t);
        double err = 0;
        for (int a = 0; a < 3; ++a) err = fmax(err, fabs(t.vel[a] - v));
        printf("# sphere into a 3D corner, e = 1: velocity within %.2e m/s of the mirrored one\n", err);
        assert_true(err < 1e-4);
        tsys_free(&t);
    }
}

/* A sphere flying into each wall of a 3D box (and of a 2D tank) obliquely, 5 mm from contact,
 * 2 steps of 1 cm and 10 steps of 1 mm: after the bounce, its normal velocity is -e times the
 * incoming one, its tangential velocity unchanged (no friction), and its position that of the
 * reflected trajectory, to 1e-6 m. */
static void walls(int dims, double dt, int steps)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 }, e_r = 0.5, r = 0.05;
    scene s;
    make_scene(&s, dims, lo, hi, g, dt, e_r, 2, r);
    const int nw = 2 * dims;
    tsys t;
    tsys_init(&t, &s, (size_t)nw, 1.0);
    for (int k = 0; k < nw; ++k) {
        int a = k / 2, side = k % 2; /* side 0: min wall */
        for (int c = 0; c < dims; ++c) t.pos[4 * k + c] = 0.2f + 0.3f * (float)(k % 3) * (c != a);
        t.pos[4 * k + a] = (float)(side ? hi[a] - r - 0.005 : lo[a] + r + 0.005); /* 5 mm from contact */
        t.vel[4 * k + a] = side ? 1.0f : -1.0f;
        t.vel[4 * k + (a + 1) % dims] = 0.25f; /* tangential */
        t.mass[k] = 1;
        t.radius[k] = (float)r;
    }
    for (int k = 0; k < steps; ++k) tsys_step(&t);
    const double T = steps * dt, t_hit = 0.005; /* at 1 m/s */
    for (size_t i = 0; i < (size_t)nw; ++i) {
        int k = (int)t.id[i], a = k / 2, side = k % 2;
        double plane = side ? hi[a] - r : lo[a] + r;
        double want_x = side ? plane - e_r * (T - t_hit) : plane + e_r * (T - t_hit);
        assert_float_equal(t.pos[4 * i + a], want_x, 1e-6);
        assert_float_equal(t.vel[4 * i + a], side ? -e_r : e_r, 1e-6);
        assert_float_equal(t.vel[4 * i + (a + 1) % dims], 0.25, 1e-7);
    }
    tsys_free(&t);
}

static void test_walls(void **state)
{
    (void)state;
    walls(3, 0.01, 2);
    walls(3, 0.001, 10);
    walls(2, 0.01, 2);
}

/* A sphere (3D) or disc (2D) hitting the floor obliquely with spin, friction mu: after the bounce
 * its velocity and angular velocity equal the impulse model's (ref_wall_impact: the contact
 * point's tangential velocity stopped, or reduced by mu times the normal impulse if that is less)
 * to 5e-5 of the speed, in the sliding and in the sticking regime, at 1 and 10 steps per
 * crossing of the last 5 mm. */
static void wall_friction(int dims, double mu, const double v_in[3], const double w_in[3], double dt)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 }, e_r = 0.6, r = 0.02;
    scene s;
    make_scene(&s, dims, lo, hi, g, dt, e_r, 4, r);
    set_friction(&s, mu);
    tsys t;
    tsys_init(&t, &s, 1, 1.0);
    const int up = dims - 1; /* the floor is the min wall of the last axis */
    t.pos[0] = t.pos[1] = t.pos[2] = 0.5f;
    if (dims == 2) t.pos[2] = 0;
    t.pos[up] = (float)(r + 0.005);
    for (int a = 0; a < 3; ++a) t.vel[a] = (float)v_in[a];
    t.mass[0] = 0.3f;
    t.radius[0] = (float)r;
    float w0[3] = { (float)w_in[0], (float)w_in[1], (float)w_in[2] };
    tsys_set_omega(&t, w0);
    const double t_hit = 0.005 / -v_in[up];
    const long steps = lround(ceil(2 * t_hit / dt)) + 1;
    for (long k = 0; k < steps; ++k) tsys_step(&t);
    float w[3];
    tsys_omega(&t, w);
    double n[3] = { 0, 0, 0 }, vo[3], wo[3];
    n[up] = 1;
    ref_wall_impact(v_in, w_in, r, dims == 3 ? 0.4 : 0.5, n, e_r, mu, vo, wo);
    const double speed = sqrt(dot3(v_in, v_in));
    double ev = 0, ew = 0;
    for (int a = 0; a < 3; ++a) {
        ev = fmax(ev, fabs(t.vel[a] - vo[a]));
        ew = fmax(ew, fabs(w[a] - wo[a]) * r);
    }
    /* the position: the touch, then the new velocity */
    double ex = 0;
    for (int a = 0; a < dims; ++a) {
        double x0 = a == up ? r + 0.005 : 0.5;
        ex = fmax(ex, fabs(t.pos[a] - (x0 + v_in[a] * t_hit + vo[a] * (steps * dt - t_hit))));
    }
    printf("# wall impact %dD mu=%g v=(%g, %g, %g) w=(%g, %g, %g) dt=%g: v'=(%.4f, %.4f, %.4f) w'=(%.3f, %.3f, "
           "%.3f); |v - v_model| %.1e, r |w - w_model| %.1e of the speed, |x - x_model| %.1e m\n",
           dims, mu, v_in[0], v_in[1], v_in[2], w_in[0], w_in[1], w_in[2], dt, t.vel[0], t.vel[1], t.vel[2], w[0], w[1],
           w[2], ev / speed, ew / speed, ex);
    /* 3D keeps the tangential impulse to 1.5e-5 of mu times the normal one (kernels/contacts.cl) */
    assert_true(ev < 5e-5 * speed);
    assert_true(ew < 5e-5 * speed);
    assert_true(ex < 5e-6);
    tsys_free(&t);
}

static void test_wall_friction(void **state)
{
    (void)state;
    const double v3a[3] = { 1.0, 0.5, -2.0 }, v3b[3] = { 0.3, -0.1, -2.0 }, w0[3] = { 0, 0, 0 };
    const double w3[3] = { 20, -30, 10 }, v2a[3] = { 1.5, -2.0, 0 }, w2[3] = { 0, 0, 40 };
    for (int f = 0; f < 2; ++f) {
        const double dt = f ? 1e-4 : 2e-3;  /* 10 steps over the last 5 mm, and one step over 2 mm */
        wall_friction(3, 0.2, v3a, w0, dt); /* slides through the impact */
        wall_friction(3, 0.5, v3b, w0, dt); /* sticks: leaves rolling */
        wall_friction(3, 0.3, v3a, w3, dt); /* with spin */
        wall_friction(2, 0.1, v2a, w0, dt);
        wall_friction(2, 0.6, v2a, w2, dt);
    }
}

/* Two spheres colliding obliquely with spin and friction: the velocities and angular velocities
 * after the collision equal the impulse model for a pair (the tangential velocity of the contact
 * points stopped, within mu times the normal impulse) for the normal at the touch. */
static void pair_friction(int dims, double mu, double dt)
{
    const double lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 }, e_r = 0.7;
    const double r1 = 0.02, r2 = 0.03, m1 = 1.0, m2 = 3.0, k = dims == 3 ? 0.4 : 0.5;
    scene s;
    make_scene(&s, dims, lo, hi, g, dt, e_r, 4, r2);
    set_friction(&s, mu);
    tsys t;
    tsys_init(&t, &s, 2, 1.0);
    const double p1[3] = { -0.06, 0.011, dims == 3 ? 0.007 : 0 }, p2[3] = { 0.05, -0.01, 0 };
    const double u1[3] = { 1.5, 0.2, dims == 3 ? -0.3 : 0 }, u2[3] = { -0.5, 0.1, 0 };
    const double w1[3] = { dims == 3 ? 5 : 0, dims == 3 ? -8 : 0, 12 }, w2[3] = { 0, dims == 3 ? 6 : 0, -20 };
    tsys_pair(&t, p1, p2, u1, u2, m1, m2, r1, r2);
    float wb[6] = { (float)w1[0], (float)w1[1], (float)w1[2], (float)w2[0], (float)w2[1], (float)w2[2] };
    tsys_set_omega(&t, wb);
    /* the touch */
    double n[3], u[3];
    const double t_hit = touch_time(p1, p2, u1, u2, r1 + r2, n);
    for (int a = 0; a < 3; ++a) u[a] = u1[a] - u2[a];
    const double A = dot3(u, u);
    /* the model: u_c = v1 - v2 - (r1 w1 + r2 w2) x n */
    double rw[3], uc[3];
    for (int a = 0; a < 3; ++a) rw[a] = r1 * w1[a] + r2 * w2[a];
    const double cx[3] = { rw[1] * n[2] - rw[2] * n[1], rw[2] * n[0] - rw[0] * n[2], rw[0] * n[1] - rw[1] * n[0] };
    for (int a = 0; a < 3; ++a) uc[a] = u[a] - cx[a];
    const double un = dot3(uc, n), mn = m1 * m2 / (m1 + m2);
    const double mt = 1 / (1 / m1 + 1 / m2 + r1 * r1 / (k * m1 * r1 * r1) + r2 * r2 / (k * m2 * r2 * r2));
    const double Jn = -(1 + e_r) * un * mn;
    double ut[3], P[3];
    for (int a = 0; a < 3; ++a) ut[a] = uc[a] - un * n[a];
    const double utl = sqrt(dot3(ut, ut)), jt = fmin(mt * utl, mu * Jn);
    for (int a = 0; a < 3; ++a) P[a] = Jn * n[a] - (utl > 0 ? jt * ut[a] / utl : 0);
    const double nP[3] = { n[1] * P[2] - n[2] * P[1], n[2] * P[0] - n[0] * P[2], n[0] * P[1] - n[1] * P[0] };
    double v1o[3], v2o[3], w1o[3], w2o[3];
    for (int a = 0; a < 3; ++a) {
        v1o[a] = u1[a] + P[a] / m1;
        v2o[a] = u2[a] - P[a] / m2;
        w1o[a] = w1[a] - r1 / (k * m1 * r1 * r1) * nP[a];
        w2o[a] = w2[a] - r2 / (k * m2 * r2 * r2) * nP[a];
    }
    const long steps = lround(ceil((t_hit + 0.05) / dt));
    for (long st = 0; st < steps; ++st) tsys_step(&t);
    float w[6];
    tsys_omega(&t, w);
    double ev = 0, ew = 0;
    for (size_t i = 0; i < 2; ++i) {
        const int one = t.id[i] == 0;
        for (int a = 0; a < 3; ++a) {
            ev = fmax(ev, fabs(t.vel[4 * i + a] - (one ? v1o[a] : v2o[a])));
            ew = fmax(ew, fabs(w[3 * i + a] - (one ? w1o[a] : w2o[a])) * (one ? r1 : r2));
        }
    }
    printf("# pair impact %dD mu=%g dt=%g: %s; |v - v_model| %.1e, r |w - w_model| %.1e of the approach speed\n", dims,
           mu, dt, mt * utl > mu * Jn ? "slides" : "sticks", ev / sqrt(A), ew / sqrt(A));
    assert_true(ev < 1e-4 * sqrt(A));
    assert_true(ew < 1e-4 * sqrt(A));
    tsys_free(&t);
}

static void test_pair_friction(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims) {
        pair_friction(dims, 0.1, 1e-3);
        pair_friction(dims, 1.0, 1e-3);
        pair_friction(dims, 0.1, 1e-2);
        pair_friction(dims, 1.0, 1e-2);
    }
}

/* A sphere launched sliding without spin on a floor with friction mu: it slides at constant
 * deceleration mu g and spins up until v = omega r; a solid sphere then rolls at 5/7 v0 from
 * t = 2 v0 / (7 mu g), a disc at 2/3 v0 from t = v0 / (3 mu g). Both within 1 %. */
static void rolling(int dims, double mu, double v0, double dt)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 3, 1, 1 }, r = 0.01, G = 9.81;
    double g[3] = { 0, 0, 0 };
    const int up = dims - 1;
    g[up] = -G;
    scene s;
    make_scene(&s, dims, lo, hi, g, dt, 0.5, 4, r);
    set_friction(&s, mu);
    tsys t;
    tsys_init(&t, &s, 1, 1.0);
    t.pos[0] = 0.1f;
    t.pos[1] = dims == 3 ? 0.5f : (float)r;
    t.pos[up] = (float)r; /* resting on the floor */
    t.vel[0] = (float)v0;
    t.mass[0] = 0.01f;
    t.radius[0] = (float)r;
    const double frac = dims == 3 ? 5.0 / 7.0 : 2.0 / 3.0;
    const double t_roll = dims == 3 ? 2 * v0 / (7 * mu * G) : v0 / (3 * mu * G);
    double t_found = -1, v_roll = 0;
    float w[3];
    const long steps = lround(1.5 * t_roll / dt);
    for (long k = 1; k <= steps; ++k) {
        tsys_step(&t);
        tsys_omega(&t, w);
        /* rolling: the contact point's speed v - w x r (w about -y in 3D, -z... sign by axis) */
        const double spin = dims == 3 ? w[1] : -w[2];
        const double slip = t.vel[0] - spin * r;
        if (t_found < 0 && slip < 1e-3 * v0) {
            t_found = k * dt;
            v_roll = t.vel[0];
        }
    }
    printf(
        "# rolling %dD mu=%g v0=%g dt=%g: rolls from t = %.5f s (theory %.5f, %+.2f%%) at v = %.5f m/s (theory %.5f, "
        "%+.2f%%), then v = %.5f m/s, normal speed %.1e m/s\n",
        dims, mu, v0, dt, t_found, t_roll, 100 * (t_found / t_roll - 1), v_roll, frac * v0,
        100 * (v_roll / (frac * v0) - 1), t.vel[0], (double)t.vel[up]);
    assert_true(t_found > 0);
    assert_true(fabs(t_found / t_roll - 1) < 0.01);
    assert_true(fabs(v_roll / (frac * v0) - 1) < 0.01);
    assert_true(fabs(t.vel[0] / (frac * v0) - 1) < 0.01); /* keeps rolling */
    tsys_free(&t);
}

static void test_rolling(void **state)
{
    (void)state;
    rolling(3, 0.3, 1.0, 1e-4);
    rolling(3, 0.1, 2.0, 2e-4);
    rolling(2, 0.3, 1.0, 1e-4);
}

/* ---------------------------------------------------------------- conservation, piles, reference */

/* A dilute gas in a box without gravity, away from the walls (2D discs, or 3D spheres), unequal
 * masses and radii, spinning: momentum and angular momentum (about the origin: sum m x x v +
 * I w) are conserved to float rounding for any e and mu, and kinetic energy for e = 1 and
 * mu = 0 within 1e-4 over 1000 steps. */
typedef struct gas_result {
    double dp, dl, dke;  /* |dP| / sum m|v|, |dL| / sum (m |x||v| + I |w|), dKE / KE */
    double dke_binary;   /* sum of |dKE| / KE over the steps in which no sphere touched two */
    long contacts;       /* pairs resolved */
    long multi;          /* steps in which a sphere touched two or more */
    double min_wall_gap; /* m */
} gas_result;

/* The most spheres one sphere of t touches (brute force). */
static unsigned max_degree(const tsys *t)
{
    unsigned worst = 0;
    for (size_t a = 0; a < t->n; ++a) {
        unsigned d = 0;
        for (size_t b = 0; b < t->n; ++b) {
            double d2 = 0;
            for (int c = 0; c < 3; ++c) d2 += pow((double)t->pos[4 * a + c] - t->pos[4 * b + c], 2);
            d += b != a && d2 < pow((double)t->radius[a] + t->radius[b], 2);
        }
        if (d > worst) worst = d;
    }
    return worst;
}

static gas_result run_gas(int dims, double e_r, double mu, int steps)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 };
    const size_t n = dims == 3 ? 300 : 200;
    const double r = dims == 3 ? 0.02 : 0.005;
    scene s;
    make_scene(&s, dims, lo, hi, g, 1e-3, e_r, 4, r);
    set_friction(&s, mu);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 42;
    const double blo[3] = { 0.3, 0.3, 0.3 }, bhi[3] = { 0.7, 0.7, 0.7 };
    place_random(&t, n, dims, blo, bhi, 0.6 * r, r, 0.0);
    float *w = calloc(3 * n, sizeof *w);
    for (size_t i = 0; i < n; ++i) {
        t.mass[i] = (float)urange(0.5, 2.0); /* kg: unequal masses */
        for (int a = 0; a < dims; ++a) t.vel[4 * i + a] = (float)urange(-0.1, 0.1);
        for (int a = 3 - (dims == 3 ? 3 : 1); a < 3; ++a) w[3 * i + a] = (float)urange(-10, 10);
    }
    const double k = dims == 3 ? 0.4 : 0.5;
    tsys_set_omega(&t, w);
    /* the state as the first step sees it (sorted) */
    double p0[3], smv0, ke0, p1[3], smv1, ke1, L0[3], L1[3], ls0, ls1;
    tsys_omega(&t, w);
    momentum(&t, p0, &smv0, &ke0);
    angular_momentum(&t, w, k, L0, &ls0);
    gas_result res = { 0, 0, 0, 0, 0, 0, 1 };
    for (int st = 0; st < steps; ++st) {
        res.contacts += tsys_count(&t); /* pairs resolved by this step */
        const int binary = max_degree(&t) <= 1;
        double pa[3], pb[3], sa, ka, kb;
        momentum(&t, pa, &sa, &ka);
        tsys_step(&t);
        momentum(&t, pb, &sa, &kb);
        if (binary) res.dke_binary += fabs(kb - ka) / ke0;
        else res.multi++;
        for (size_t i = 0; i < n; ++i)
            for (int a = 0; a < dims; ++a) {
                double gap = fmin(t.pos[4 * i + a] - t.radius[i] - lo[a], hi[a] - t.pos[4 * i + a] - t.radius[i]);
                if (gap < res.min_wall_gap) res.min_wall_gap = gap;
            }
    }
    tsys_omega(&t, w);
    momentum(&t, p1, &smv1, &ke1);
    angular_momentum(&t, w, k, L1, &ls1);
    res.dp = sqrt(pow(p1[0] - p0[0], 2) + pow(p1[1] - p0[1], 2) + pow(p1[2] - p0[2], 2)) / smv0;
    res.dl = sqrt(pow(L1[0] - L0[0], 2) + pow(L1[1] - L0[1], 2) + pow(L1[2] - L0[2], 2)) / ls0;
    res.dke = (ke1 - ke0) / ke0;
    assert_int_equal(tsys_flags(&t), 0);
    free(w);
    tsys_free(&t);
    return res;
}

static void test_gas_conservation(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims) {
        const double cases[3][2] = { { 1.0, 0.0 }, { 0.5, 0.0 }, { 0.8, 0.5 } };
        for (int c = 0; c < 3; ++c) {
            const double e_r = cases[c][0], mu = cases[c][1];
            gas_result g = run_gas(dims, e_r, mu, 1000);
            printf("# gas %dD e=%g mu=%g: 1000 steps, %ld contacts resolved (%ld steps with a sphere touching two), "
                   "|dP|/sum(m|v|) = %.3g, |dL|/sum(m|x||v| + I|w|) = %.3g, dKE/KE (translation) = %.3g (%.3g in the "
                   "steps of binary collisions), min wall gap %.3g m\n",
                   dims, e_r, mu, g.contacts, g.multi, g.dp, g.dl, g.dke, g.dke_binary, g.min_wall_gap);
            assert_true(g.min_wall_gap > 0); /* never touched a wall: no external impulse */
            assert_true(g.contacts > 100);   /* the test saw real collisions */
            assert_true(g.dp < 1e-7);        /* momentum to float rounding */
            assert_true(g.dl < 1e-5);        /* angular momentum too (positions ~0.5 m in float) */
            /* energy: binary collisions with e = 1 and no friction keep it; simultaneous contacts of
             * three spheres are solved together (docs/contacts.md), which need not */
            if (e_r == 1.0 && mu == 0.0) assert_true(g.dke_binary < 1e-5);
            if (e_r < 1.0) assert_true(g.dke < -1e-3); /* inelastic collisions lose energy */
        }
    }
}

/* A ball dropped on the floor: successive apex heights (of the lowest point above the floor)
 * in the ratio e^2 within 2%. */
static void drop_ball(int dims, double e_r, int n_apex, double dt)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.2, 1, 0.2 };
    double g[3] = { 0, -9.81, 0 };
    int up = 1; /* gravity axis */
    double hi3[3] = { 0.2, 0.2, 1 };
    if (dims == 3) {
        g[1] = 0;
        g[2] = -9.81;
        up = 2;
    }
    const double r = 0.01, h0 = 0.5;
    scene s;
    make_scene(&s, dims, lo, dims == 3 ? hi3 : hi, g, dt, e_r, 4, r);
    tsys t;
    tsys_init(&t, &s, 1, 1.0);
    t.pos[0] = 0.1f;
    t.pos[1] = 0.1f;
    if (dims == 3) t.pos[2] = 0.1f;
    t.pos[up] = (float)(r + h0);
    t.mass[0] = 1;
    t.radius[0] = (float)r;
    double apex[8];
    int n_found = 0;
    double best = -1, prev = t.pos[up];
    int rising = 0;
    for (long k = 0; k < 200000 && n_found < n_apex; ++k) {
        tsys_step(&t);
        double y = t.pos[up] - r;
        if (y > prev) rising = 1;
        if (rising && y > best) best = y;
        if (rising && y < prev) { /* just passed an apex */
            apex[n_found++] = best;
            rising = 0;
            best = -1;
        }
        prev = y;
    }
    assert_int_equal(n_found, n_apex);
    double h_prev = h0;
    for (int k = 0; k < n_apex; ++k) {
        double ratio = apex[k] / h_prev;
        printf("# ball %dD e=%g: apex %d at %.5f m, ratio %.5f (e^2 = %.5f, error %.2f%%)\n", dims, e_r, k + 1, apex[k],
               ratio, e_r * e_r, 100 * (ratio / (e_r * e_r) - 1));
        assert_true(fabs(ratio / (e_r * e_r) - 1) < 0.02);
        h_prev = apex[k];
    }
    tsys_free(&t);
}

static void test_ball_drop(void **state)
{
    (void)state;
    drop_ball(2, 0.8, 3, 2e-4);
    drop_ball(2, 0.5, 2, 2e-4);
    drop_ball(3, 0.8, 3, 2e-4);
}

/* A sphere moving into each wall of a 3D box: position reflected with restitution, normal
 * velocity reversed times e (after one step), tangential velocity untouched. */

/* A dense 2D pile settles under gravity: after 1 s the largest overlap in the state the
 * solver hands out (pos_next, which the snapshot shows) is below 1% of r. */
/* The largest overlap of t's current state (m), brute force in double; t must have run clean. */
static double settled_overlap(tsys *t)
{
    double *pd = malloc(t->n * 4 * sizeof *pd), *rd = malloc(t->n * sizeof *rd);
    to_double(t->pos, pd, 4 * t->n);
    to_double(t->radius, rd, t->n);
    const double ov = ref_contact_max_overlap(t->n, pd, rd);
    free(pd);
    free(rd);
    assert_int_equal(tsys_flags(t), 0);
    return ov;
}

static void run_pile(int iterations, double dt, double t_end, double *max_overlap_rel, double *v_max)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.1, 0.4, 0 }, g[3] = { 0, -9.81, 0 };
    const size_t n = 150;
    const double r = 0.005;
    scene s;
    make_scene(&s, 2, lo, hi, g, dt, 0.2, iterations, r);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 7;
    const double blo[3] = { 0, 0, 0 }, bhi[3] = { 0.1, 0.25, 0 };
    place_random(&t, n, 2, blo, bhi, r, r, 0.0);
    for (size_t i = 0; i < n; ++i) t.mass[i] = (float)(1000 * M_PI * r * r);
    long steps = lround(t_end / dt);
    for (long k = 0; k < steps; ++k) tsys_step(&t);
    *max_overlap_rel = settled_overlap(&t) / r;
    *v_max = 0;
    for (size_t i = 0; i < n; ++i) *v_max = fmax(*v_max, hypot(t.vel[4 * i], t.vel[4 * i + 1]));
    tsys_free(&t);
}

static void test_pile_settles(void **state)
{
    (void)state;
    double ov, vmax;
    run_pile(16, 2e-4, 1.0, &ov, &vmax);
    printf("# pile: 150 discs, 16 passes, dt 2e-4 s, t = 1 s: max overlap %.3g r, max speed %.3g m/s\n", ov, vmax);
    assert_true(ov < 0.01);
    assert_true(vmax < 0.05); /* settled: slower than the drop speed sqrt(2 g h) by far */
}

/* A column of 6 spheres (r = 8 mm, 2 500 kg/m^3, 3D) placed 1 % of a diameter apart on the
 * floor, e = 0.3, mu = 0.3, dt = 1 ms, watched over 100 steps after 1 s: the largest overlap of
 * any pair (share of r) and the largest deviation of any sphere's vertical velocity from one
 * step's gravity, -g dt (the velocity a resting sphere leaves its step with), over those steps.
 * Without near pairs (docs/contacts.md) the column fell into a cycle of two steps in which the
 * position passes pushed one pair's overlap into the next, unlisted pair: with 16 passes pairs
 * overlapped by 34 % of r and the spheres kept 0.1-0.2 m/s while standing still. */
static void column_settles(int iterations, int count, double *max_overlap_rel, double *dv_max)
{
    const double r = 0.008, lo[3] = { 0, 0, 0 }, hi[3] = { 2.06 * r, 2.06 * r, 0.5 }, g[3] = { 0, 0, -9.81 };
    const double dt = 1e-3;
    scene s;
    make_scene(&s, 3, lo, hi, g, dt, 0.3, iterations, r);
    set_friction(&s, 0.3);
    tsys t;
    tsys_init(&t, &s, (size_t)count, 1.0);
    for (int i = 0; i < count; ++i) {
        t.pos[4 * i] = t.pos[4 * i + 1] = (float)(1.03 * r);
        t.pos[4 * i + 2] = (float)(r + 2.02 * r * i);
        t.radius[i] = (float)r;
        t.mass[i] = (float)(2500 * 4.0 / 3.0 * M_PI * r * r * r);
    }
    for (int k = 0; k < 1000; ++k) tsys_step(&t);
    *max_overlap_rel = *dv_max = 0;
    for (int k = 0; k < 100; ++k) {
        tsys_step(&t);
        *max_overlap_rel = fmax(*max_overlap_rel, settled_overlap(&t) / r);
        for (int i = 0; i < count; ++i) *dv_max = fmax(*dv_max, fabs(t.vel[4 * i + 2] - g[2] * dt));
    }
    tsys_free(&t);
}

/* With 16 passes the column rests: no pair overlaps by 1e-5 r, and every sphere leaves each step
 * at -g dt to within 1e-5 m/s. With 4 passes, fewer than its 6 layers, the warm start carries
 * the support up the column, but not to rest: it breathes, overlaps up to about 0.6 % of r and
 * speeds off -g dt by up to about 5 g dt (docs/contacts.md, "Near pairs": the columns). */
static void test_column_rests(void **state)
{
    (void)state;
    const int passes[2] = { 4, 16 };
    for (int k = 0; k < 2; ++k) {
        double ov, dv;
        column_settles(passes[k], 6, &ov, &dv);
        printf("# column of 6 spheres, %d passes, 100 steps after 1 s: max overlap %.3g r, max |v_z + g dt| %.3g m/s "
               "(g dt = %.3g)\n",
               passes[k], ov, dv, 9.81e-3);
        if (passes[k] >= 16) {
            assert_true(ov < 1e-5);
            assert_true(dv < 1e-5);
        } else {
            assert_true(ov < 0.01);
            assert_true(dv < 8 * 9.81e-3);
        }
    }
}

/* A near pair (apart by 1.5e-4 m, within the band of 2e-4 m) closing slower than v_rest and
 * sliding past each other with friction, 2D, gravity along -y: the gap-keeping impulse and its
 * friction act at the step's start (docs/contacts.md, "Near pairs"), and angular momentum about
 * the centre of mass is kept (lever arms that added up to r_a + r_b instead of the centres'
 * distance lost gap x lambda_t of it); the pair ends the step touching along the start's normal. */
static void test_near_pair_friction(void **state)
{
    (void)state;
    const double r = 0.01, gap = 1.5e-4, dt = 5e-3;
    const double lo[3] = { -1, -1, 0 }, hi[3] = { 1, 1, 0 }, g[3] = { 0, -9.81, 0 };
    scene s;
    make_scene(&s, 2, lo, hi, g, dt, 0.3, 4, r);
    set_friction(&s, 0.5);
    tsys t;
    tsys_init(&t, &s, 2, 1.0);
    const double p1[3] = { -r - gap / 2, 0, 0 }, p2[3] = { r + gap / 2, 0, 0 }; /* near the origin: fine floats */
    const double u1[3] = { 0.045, 0.25, 0 }, u2[3] = { -0.045, -0.25, 0 };      /* closing 0.09 < v_rest 0.098 */
    tsys_pair(&t, p1, p2, u1, u2, 1.0, 1.0, r, r);
    float w[6] = { 0 };
    tsys_set_omega(&t, w);
    double L[2], scale = 0;
    for (int k = 0; k < 2; ++k) {
        if (k) {
            tsys_step(&t);
            tsys_omega(&t, w);
        }
        /* about the centre of mass: gravity's torque about it is zero */
        double xc[2] = { 0, 0 }, vc[2] = { 0, 0 };
        for (int i = 0; i < 2; ++i)
            for (int a = 0; a < 2; ++a) {
                xc[a] += 0.5 * t.pos[4 * i + a];
                vc[a] += 0.5 * t.vel[4 * i + a];
            }
        L[k] = 0;
        for (int i = 0; i < 2; ++i) {
            const double x = t.pos[4 * i] - xc[0], y = t.pos[4 * i + 1] - xc[1];
            const double vx = t.vel[4 * i] - vc[0], vy = t.vel[4 * i + 1] - vc[1];
            L[k] += x * vy - y * vx + 0.5 * r * r * w[3 * i + 2];
            if (!k) scale += sqrt(x * x + y * y) * sqrt(vx * vx + vy * vy);
        }
    }
    const double dx = fabs((double)t.pos[0] - t.pos[4]); /* along the start's normal (they slide along y) */
    printf("# near pair with friction, one step: |dL| / scale = %.3g, centres %.9f m apart along the normal "
           "(r_a + r_b = %.3f m), spins %.4g and %.4g rad/s\n",
           fabs(L[1] - L[0]) / scale, dx, 2 * r, w[2], w[5]);
    assert_true(fabs(w[2]) > 1.0);                 /* the friction acted: the discs spin */
    assert_true(fabs(dx - 2 * r) < 1e-6);          /* they closed the gap, no more */
    assert_true(fabs(L[1] - L[0]) / scale < 1e-6); /* angular momentum kept */
    tsys_free(&t);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Touching pairs found through the cell table equal a brute-force search, count and pairs,
 * in 2D and 3D, for cell sizes of 1, 0.5 (reach 2) and 1.7 search radii. */
static void check_pairs(int dims, double cell_ratio, size_t n)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.3, 0.3, 0.3 }, g[3] = { 0, 0, 0 };
    const double r_max = 0.012;
    scene s;
    make_scene(&s, dims, lo, hi, g, 1e-3, 0.5, 1, r_max);
    tsys t;
    tsys_init(&t, &s, n, cell_ratio);
    rng_state = 1000 + (uint64_t)dims;
    for (size_t i = 0; i < n; ++i) { /* overlapping allowed: a dense random cloud */
        t.radius[i] = (float)urange(0.4 * r_max, r_max);
        for (int a = 0; a < dims; ++a) t.pos[4 * i + a] = (float)urange(lo[a], hi[a]);
        t.mass[i] = 1;
    }
    tsys_sort_upload(&t);
    const unsigned max_per = 64;
    uint32_t *count = calloc(n, sizeof *count), *partner = calloc(n * max_per, sizeof *partner);
    sphsim_error e;
    sphsim_status rc = contact_list_pairs(t.c, t.cs_buf, t.ce_buf, t.gp_buf, &t.st, max_per, count, partner, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_list_pairs: %s", e.msg);
    long nc = -1;
    assert_int_equal(contact_count_cells(t.c, t.cs_buf, t.ce_buf, t.gp_buf, &t.st, &nc, &e), SPHSIM_OK);

    double *pd = malloc(n * 4 * sizeof *pd), *rd = malloc(n * sizeof *rd);
    to_double(t.pos, pd, 4 * n);
    to_double(t.radius, rd, n);
    size_t max_pairs = n * 32;
    size_t *pairs = malloc(2 * max_pairs * sizeof *pairs);
    long nref = ref_contact_pairs(n, pd, rd, max_pairs, pairs);
    assert_true((size_t)nref <= max_pairs);
    printf("# pairs %dD cell %.1f R: %ld touching pairs (brute force %ld)\n", dims, cell_ratio, nc, nref);
    assert_true(nref > (long)n / 2); /* the cloud is dense enough to matter */
    assert_int_equal(nc, nref);
    /* brute-force pairs (i < j, both sorted indices) come in order of i then j; the device
     * lists each i's partners j > i in cell-scan order: sort them, then compare */
    long k = 0;
    for (size_t i = 0; i < n; ++i) {
        qsort(&partner[i * max_per], count[i], sizeof *partner, cmp_u32);
        for (uint32_t q = 0; q < count[i]; ++q, ++k) {
            assert_true(k < nref);
            assert_int_equal(pairs[2 * k], i);
            assert_int_equal(pairs[2 * k + 1], partner[i * max_per + q]);
        }
    }
    assert_int_equal(k, nref);
    free(count);
    free(partner);
    free(pd);
    free(rd);
    free(pairs);
    tsys_free(&t);
}

static void test_pairs_brute_force(void **state)
{
    (void)state;
    check_pairs(2, 1.0, 600);
    check_pairs(2, 0.5, 600);
    check_pairs(2, 1.7, 600);
    check_pairs(3, 1.0, 1500);
    check_pairs(3, 0.5, 1500);
}

/* Three discs in a row, the middle one overlapping both, the outer ones just apart: 2 pairs. */
static void test_count_row(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 0 }, g[3] = { 0, 0, 0 };
    scene s;
    make_scene(&s, 2, lo, hi, g, 1e-3, 0.5, 1, 0.1);
    tsys t;
    tsys_init(&t, &s, 3, 1.0);
    for (int i = 0; i < 3; ++i) {
        t.pos[4 * i] = 0.3f + 0.19f * (float)i;
        t.pos[4 * i + 1] = 0.5f;
        t.radius[i] = 0.1f;
        t.mass[i] = 1;
    }
    assert_int_equal(tsys_count(&t), 2);
    t.pos[4 * 1 + 1] = 0.75f; /* lift the middle one away */
    assert_int_equal(tsys_count(&t), 0);
    tsys_free(&t);
}

/* Two runs of the same 3D system give bitwise identical states. */
static void run_cloud(int steps, float *pos_out, float *vel_out, uint32_t *id_out, size_t n)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.2, 0.2, 0.2 }, g[3] = { 0, 0, -9.81 };
    scene s;
    make_scene(&s, 3, lo, hi, g, 5e-4, 0.6, 4, 0.01);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 99;
    place_random(&t, n, 3, lo, hi, 0.005, 0.01, 0.0);
    for (size_t i = 0; i < n; ++i) {
        t.mass[i] = (float)urange(0.5, 1.5);
        for (int a = 0; a < 3; ++a) t.vel[4 * i + a] = (float)urange(-0.5, 0.5);
    }
    for (int k = 0; k < steps; ++k) tsys_step(&t);
    memcpy(pos_out, t.pos, n * 16);
    memcpy(vel_out, t.vel, n * 16);
    memcpy(id_out, t.id, n * 4);
    tsys_free(&t);
}

/* The cloud run with the default tuning, then with each of `tunes` (NULL: the defaults again),
 * is the same to the bit every time. */
static void assert_clouds_same(int steps, const sphsim_tuning *const *tunes, size_t n_tunes)
{
    const size_t n = 400;
    float *p0 = malloc(n * 16), *v0 = malloc(n * 16), *p = malloc(n * 16), *v = malloc(n * 16);
    uint32_t *i0 = malloc(n * 4), *ids = malloc(n * 4);
    run_cloud(steps, p0, v0, i0, n);
    for (size_t k = 0; k < n_tunes; ++k) {
        tsys_tune = tunes[k];
        run_cloud(steps, p, v, ids, n);
        tsys_tune = NULL;
        assert_memory_equal(i0, ids, n * 4);
        assert_memory_equal(p0, p, n * 16);
        assert_memory_equal(v0, v, n * 16);
    }
    free(p0);
    free(v0);
    free(p);
    free(v);
    free(i0);
    free(ids);
}

static void test_determinism(void **state)
{
    (void)state;
    const sphsim_tuning *again[] = { NULL };
    assert_clouds_same(200, again, 1);
}

/* The slots requested ahead (tuning.contact_ahead; the device's default on this one, then none,
 * one item and 16 items ahead) change nothing. */
static void test_ahead_same(void **state)
{
    (void)state;
    const int ahead[] = { 0, 1, 16 };
    sphsim_tuning t[3];
    const sphsim_tuning *tunes[3];
    for (size_t k = 0; k < 3; ++k) {
        tuning_defaults(&t[k]);
        t[k].contact_ahead = ahead[k];
        tunes[k] = &t[k];
    }
    assert_clouds_same(60, tunes, 3);
}

/* The geometry cache (tuning.contact_cache: the device's default on this one, then off and on)
 * changes nothing: the passes read what they would have recomputed. */
static void test_cache_same(void **state)
{
    (void)state;
    const int cache[] = { 0, 1 };
    sphsim_tuning t[2];
    const sphsim_tuning *tunes[2];
    for (size_t k = 0; k < 2; ++k) {
        tuning_defaults(&t[k]);
        t[k].contact_cache = cache[k];
        tunes[k] = &t[k];
    }
    assert_clouds_same(200, tunes, 2);
}

/* The real device grid (src/grid.c) with contact_step, as sim.c drives it: rebuild on pos_next,
 * gather every array into the new order, step. Its Morton order differs from the host table's
 * linear order, so sums run in another order: states agree to rounding, not bitwise. */
typedef struct rgsys {
    dev_state st;
    grid *g;
    contact_solver *c;
} rgsys;

/* The spheres `pos`, `vel` (mass in pos.w, radius in vel.w), ids `id`, uploaded in that order
 * into pos_next, vel_next as sim.c does, a grid of radius s->support over the tank and one
 * support beyond it, and a contact solver. */
static void rg_init(rgsys *r, const scene *s, size_t n, const float *pos, const float *vel, const uint32_t *id)
{
    sphsim_error e;
    memset(r, 0, sizeof *r);
    dev_state *st = &r->st;
    st->n = n;
    cl_mem *bufs16[] = { &st->pos, &st->vel, &st->pos_next, &st->vel_next };
    cl_mem *bufs4[] = { &st->id, &st->id_tmp };
    for (size_t k = 0; k < 4; ++k) assert_int_equal(device_alloc(&dev, n * 16, "state", bufs16[k], &e), SPHSIM_OK);
    for (size_t k = 0; k < 2; ++k) assert_int_equal(device_alloc(&dev, n * 4, "state", bufs4[k], &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, 4, "flags", &st->flags, &e), SPHSIM_OK);
    uint32_t zero = 0;
    assert_int_equal(device_write(&dev, st->flags, 0, 4, &zero, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->pos_next, 0, n * 16, pos, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->vel_next, 0, n * 16, vel, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->id, 0, n * 4, id, &e), SPHSIM_OK);
    grid_params gp;
    double glo[3], ghi[3];
    for (int a = 0; a < 3; ++a) {
        glo[a] = s->tank.min[a] - s->support;
        ghi[a] = s->tank.max[a] + s->support;
    }
    assert_int_equal(grid_geometry(s->dims, glo, ghi, s->support, 1.0, &gp, &e), SPHSIM_OK);
    assert_int_equal(grid_create(&r->g, &dev, &gp, n, &e), SPHSIM_OK);
    assert_int_equal(contact_create(&r->c, &dev, s, NULL, &e), SPHSIM_OK);
}

static void rg_free(rgsys *r)
{
    contact_destroy(r->c);
    grid_destroy(r->g);
    dev_state *st = &r->st;
    cl_mem all[] = { st->pos, st->vel, st->pos_next, st->vel_next, st->id, st->id_tmp, st->flags };
    for (size_t k = 0; k < sizeof all / sizeof *all; ++k) clReleaseMemObject(all[k]);
}

/* Every array gathered into the order of the last grid_build (sim.c's rebuild). */
static void rg_gather(rgsys *r)
{
    sphsim_error e;
    dev_state *st = &r->st;
    size_t n = st->n;
    assert_int_equal(grid_gather(r->g, st->pos_next, st->pos, 16, n, &e), SPHSIM_OK);
    assert_int_equal(grid_gather(r->g, st->vel_next, st->vel, 16, n, &e), SPHSIM_OK);
    assert_int_equal(grid_gather(r->g, st->id, st->id_tmp, 4, n, &e), SPHSIM_OK);
    cl_mem t = st->id;
    st->id = st->id_tmp, st->id_tmp = t;
}

/* sim.c's rebuild with tuning.sort_check: keys in order keep the order (the pairs swap roles,
 * nothing is gathered); returns whether they did. */
static int rg_rebuild_keep(rgsys *r)
{
    sphsim_error e;
    dev_state *st = &r->st;
    int kept = -1;
    assert_int_equal(grid_build_keep(r->g, st->pos_next, st->n, st->flags, &kept, &e), SPHSIM_OK);
    if (!kept) {
        rg_gather(r);
        return 0;
    }
    cl_mem t = st->pos;
    st->pos = st->pos_next, st->pos_next = t;
    t = st->vel, st->vel = st->vel_next, st->vel_next = t;
    return 1;
}

static void rg_rebuild(rgsys *r)
{
    sphsim_error e;
    dev_state *st = &r->st;
    assert_int_equal(grid_build(r->g, st->pos_next, st->n, st->flags, &e), SPHSIM_OK);
    rg_gather(r);
}

/* Read the state written by the last step into id order. */
static void rg_read(rgsys *r, float *pos, float *vel)
{
    sphsim_error e;
    size_t n = r->st.n;
    float *p = malloc(n * 16), *v = malloc(n * 16);
    uint32_t *id = malloc(n * 4);
    assert_int_equal(device_read(&dev, r->st.pos_next, 0, n * 16, p, &e), SPHSIM_OK);
    assert_int_equal(device_read(&dev, r->st.vel_next, 0, n * 16, v, &e), SPHSIM_OK);
    assert_int_equal(device_read(&dev, r->st.id, 0, n * 4, id, &e), SPHSIM_OK);
    for (size_t i = 0; i < n; ++i) {
        assert_true(id[i] < n);
        memcpy(&pos[4 * id[i]], &p[4 * i], 16);
        memcpy(&vel[4 * id[i]], &v[4 * i], 16);
    }
    free(p);
    free(v);
    free(id);
}

static void test_real_grid(void **state)
{
    (void)state;
    sphsim_error e;
    const size_t n = 400;
    const int steps = 20;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.15, 0.15, 0.15 }, g[3] = { 0, 0, -9.81 };
    scene s;
    make_scene(&s, 3, lo, hi, g, 5e-4, 0.6, 4, 0.01);
    /* the host-table path; a dense cloud that starts overlapping, so contacts persist and
     * impulses are carried through the grid's permutation */
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 99;
    for (size_t i = 0; i < n; ++i) {
        t.radius[i] = (float)urange(0.005, 0.01);
        t.mass[i] = (float)urange(0.5, 1.5);
        for (int a = 0; a < 3; ++a) {
            t.pos[4 * i + a] = (float)urange(lo[a] + 0.01, hi[a] - 0.01);
            t.vel[4 * i + a] = (float)urange(-0.5, 0.5);
        }
    }
    /* the real-grid path, from the same state (uploaded in id order into pos_next, as sim.c) */
    for (size_t i = 0; i < n; ++i) { /* the mass rides in pos.w, the radius in vel.w (state.h) */
        t.pos[4 * i + 3] = t.mass[i];
        t.vel[4 * i + 3] = t.radius[i];
    }
    rgsys r;
    rg_init(&r, &s, n, t.pos, t.vel, t.id);
    dev_state *st = &r.st;

    float *pa = malloc(n * 16), *va = malloc(n * 16), *pb = malloc(n * 16), *vb = malloc(n * 16);
    double *pd = malloc(n * 32), *rd = malloc(n * 8);
    for (int k = 0; k < steps; ++k) {
        /* contacts through the real grid equal the brute-force count of the same state */
        rg_rebuild(&r);
        long nc = -1;
        assert_int_equal(contact_count(r.c, r.g, st, &nc, &e), SPHSIM_OK);
        float *ps = malloc(n * 16), *rs = malloc(n * 16);
        assert_int_equal(device_read(&dev, st->pos, 0, n * 16, ps, &e), SPHSIM_OK);
        assert_int_equal(device_read(&dev, st->vel, 0, n * 16, rs, &e), SPHSIM_OK);
        to_double(ps, pd, 4 * n);
        for (size_t i = 0; i < n; ++i) rd[i] = rs[4 * i + 3]; /* radii from vel.w */
        assert_int_equal(nc, ref_contact_pairs(n, pd, rd, 0, NULL));
        free(ps);
        free(rs);
        sphsim_status rc = contact_step(r.c, r.g, st, &e);
        if (rc != SPHSIM_OK) fail_msg("contact_step: %s", e.msg);
        tsys_step(&t);
        if (k == 0 || k == 1 || k == 4 || k == steps - 1) {
            rg_read(&r, pb, vb);
            for (size_t i = 0; i < n; ++i) { /* host path into id order */
                memcpy(&pa[4 * t.id[i]], &t.pos[4 * i], 16);
                memcpy(&va[4 * t.id[i]], &t.vel[4 * i], 16);
            }
            double ex = 0, ev = 0;
            for (size_t i = 0; i < 4 * n; ++i) {
                ex = fmax(ex, fabs(pa[i] - pb[i]));
                ev = fmax(ev, fabs(va[i] - vb[i]));
            }
            printf("# real grid vs host table, 3D, %zu spheres, step %d: %ld touching pairs, max |dx| %.3g m, "
                   "max |dv| %.3g m/s\n",
                   n, k + 1, nc, ex, ev);
            assert_true(ex < 1e-6);
            assert_true(ev < 1e-4);
        }
    }
    uint32_t flags = 1;
    assert_int_equal(device_read(&dev, st->flags, 0, 4, &flags, &e), SPHSIM_OK);
    assert_int_equal(flags, 0);

    /* a grid whose search radius cannot see touching spheres is refused */
    grid *small = NULL;
    grid_params gp = *grid_get_params(r.g);
    double glo[3], ghi[3];
    for (int a = 0; a < 3; ++a) {
        glo[a] = lo[a] - s.support;
        ghi[a] = hi[a] + s.support;
    }
    assert_int_equal(grid_geometry(3, glo, ghi, 0.5 * s.support, 1.0, &gp, &e), SPHSIM_OK);
    assert_int_equal(grid_create(&small, &dev, &gp, n, &e), SPHSIM_OK);
    assert_int_equal(contact_step(r.c, small, st, &e), SPHSIM_E_SCENE);
    assert_non_null(strstr(e.msg, "search radius"));
    grid_destroy(small);

    free(pa);
    free(va);
    free(pb);
    free(vb);
    free(pd);
    free(rd);
    rg_free(&r);
    tsys_free(&t);
}

/* sim.c's rebuild with tuning.sort_check (grid_build_keep: keys already in order keep the
 * order, and the contact step gets no permutation) against the sort in every step: a lattice of
 * spheres falling onto the floor and stacking, which keeps the order in most steps and sorts
 * in some, must give the same states bit for bit. */
static void test_kept_order_same(void **state)
{
    (void)state;
    const int side = 4, layers = 6;
    const size_t n = (size_t)(side * side * layers);
    const double r0 = 0.005, pitch = 2.25 * r0, w = side * pitch;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { w, w, layers * pitch + 0.01 }, g[3] = { 0.0, 0.0, -9.81 };
    scene s;
    make_scene(&s, 3, lo, hi, g, 5e-4, 0.4, 4, r0);
    set_friction(&s, 0.5);
    float *pos = calloc(n * 4, sizeof(float)), *vel = calloc(n * 4, sizeof(float));
    uint32_t *id = malloc(n * 4);
    for (size_t i = 0; i < n; ++i) {
        const size_t ix = i % side, iy = (i / side) % side, iz = i / (side * side);
        pos[4 * i] = (float)((ix + 0.5) * pitch);
        pos[4 * i + 1] = (float)((iy + 0.5) * pitch);
        pos[4 * i + 2] = (float)((iz + 0.5) * pitch);
        pos[4 * i + 3] = 1e-3f;
        vel[4 * i] = (float)(0.05 * ((int)(i % 3) - 1)); /* sideways, and the layers out of step */
        vel[4 * i + 2] = (float)(0.05 * ((int)(i % 5) - 2));
        vel[4 * i + 3] = (float)r0;
        id[i] = (uint32_t)i;
    }
    rgsys a, b;
    rg_init(&a, &s, n, pos, vel, id);
    rg_init(&b, &s, n, pos, vel, id);
    float *pa = malloc(n * 16), *va = malloc(n * 16), *pb = malloc(n * 16), *vb = malloc(n * 16);
    int kept = 0, sorted = 0;
    sphsim_error e;
    for (int k = 0; k < 160; ++k) {
        rg_rebuild(&a);
        if (rg_rebuild_keep(&b)) ++kept;
        else ++sorted;
        if (contact_step(a.c, a.g, &a.st, &e) != SPHSIM_OK) fail_msg("contact_step: %s", e.msg);
        if (contact_step(b.c, b.g, &b.st, &e) != SPHSIM_OK) fail_msg("contact_step: %s", e.msg);
        rg_read(&a, pa, va);
        rg_read(&b, pb, vb);
        if (memcmp(pa, pb, n * 16) || memcmp(va, vb, n * 16)) fail_msg("step %d: the kept order differs", k + 1);
    }
    long nc = -1;
    assert_int_equal(contact_count(b.c, b.g, &b.st, &nc, &e), SPHSIM_OK);
    printf("# kept order against a sort every step: %zu spheres, 160 steps, %d kept, %d sorted, %ld touching "
           "pairs at the end, bit-identical\n",
           n, kept, sorted, nc);
    assert_true(kept >= 20 && sorted >= 2); /* both ways were taken */
    assert_true(nc >= (long)(n / 2)); /* piled up */
    free(pos);
    free(vel);
    free(id);
    free(pa);
    free(va);
    free(pb);
    free(vb);
    rg_free(&a);
    rg_free(&b);
}

/* Enqueue one step of solver `c` on t's uploaded state with permutation `idx` (host), read
 * the state it wrote into pos, vel (sorted order). */
/* Enqueue one step of solver `c` on t's uploaded state with permutation `idx` (host), read
 * the state it wrote into pos, vel (sorted order). */
static void state_step(tsys *t, contact_solver *c, const uint32_t *idx, float *pos, float *vel)
{
    sphsim_error e;
    assert_int_equal(device_write(&dev, t->idx_buf, 0, t->n * 4, idx, &e), SPHSIM_OK);
    sphsim_status rc = contact_enqueue(c, t->cs_buf, t->ce_buf, t->gp_buf, t->idx_buf, &t->st, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_enqueue: %s", e.msg);
    assert_int_equal(device_read(&dev, t->st.pos_next, 0, t->n * 16, pos, &e), SPHSIM_OK);
    assert_int_equal(device_read(&dev, t->st.vel_next, 0, t->n * 16, vel, &e), SPHSIM_OK);
}

/* --resume of the contact solver: its carried state (angular velocities and slots) saved after
 * the sort (as sim.c does at a snapshot), restored into a fresh solver on the state uploaded in
 * the sorted order (as --resume uploads it: the rebuild's permutation is then the identity),
 * gives a next step bit-identical to the original solver's, which reached its slots through the
 * real permutation; both solvers then carry the same state. Without it (cold) the step
 * differs, so the test can fail. Damaged blobs are refused; another format version starts
 * cold. */
static void test_state_round_trip(void **state)
{
    (void)state;
    sphsim_error e;
    const size_t n = 300;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.2, 0.2, 0 }, g[3] = { 0, -9.81, 0 };
    scene s;
    make_scene(&s, 2, lo, hi, g, 5e-4, 0.3, 4, 0.01);
    set_friction(&s, 0.4);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 7;
    for (size_t i = 0; i < n; ++i) { /* a dense, overlapping layer on the floor: lasting contacts */
        t.radius[i] = (float)urange(0.005, 0.01);
        t.mass[i] = (float)urange(0.5, 1.5);
        t.pos[4 * i] = (float)urange(0.01, 0.19);
        t.pos[4 * i + 1] = (float)urange(0.01, 0.08);
        t.vel[4 * i] = (float)urange(-0.1, 0.1);
        t.vel[4 * i + 1] = (float)urange(-0.1, 0.1);
    }
    for (int k = 0; k < 30; ++k) tsys_step(&t);
    tsys_sort_upload(&t);
    uint32_t *perm = malloc(n * 4), *ident = malloc(n * 4);
    float *pa = malloc(n * 16), *va = malloc(n * 16), *pb = malloc(n * 16), *vb = malloc(n * 16);
    float *pc = malloc(n * 16), *vc = malloc(n * 16), *wa = malloc(n * 12), *wb = malloc(n * 12);
    assert_non_null(wb);
    memcpy(perm, t.idx, n * 4);
    for (size_t i = 0; i < n; ++i) ident[i] = (uint32_t)i;
    size_t moved = 0;
    for (size_t i = 0; i < n; ++i) moved += perm[i] != i;
    assert_true(moved > 0); /* the sort moved particles: the permutation is exercised */

    void *blob = NULL;
    size_t bytes = 0;
    assert_int_equal(contact_state_save(t.c, t.idx_buf, &t.st, &blob, &bytes, &e), SPHSIM_OK);
    assert_non_null(blob);
    assert_true(bytes > n * 8);
    state_step(&t, t.c, perm, pa, va); /* the original solver's next step */

    contact_solver *cb = NULL, *cc = NULL;
    assert_int_equal(contact_create(&cb, &dev, &s, NULL, &e), SPHSIM_OK);
    sphsim_status rc = contact_state_restore(cb, &t.st, blob, bytes, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_state_restore: %s", e.msg);
    state_step(&t, cb, ident, pb, vb);
    assert_memory_equal(pa, pb, n * 16);
    assert_memory_equal(va, vb, n * 16);
    cl_mem wbuf = NULL;
    assert_int_equal(device_alloc(&dev, n * 12, "omega", &wbuf, &e), SPHSIM_OK);
    assert_int_equal(contact_angular_velocity(t.c, &t.st, wbuf, &e), SPHSIM_OK);
    assert_int_equal(device_read(&dev, wbuf, 0, n * 12, wa, &e), SPHSIM_OK);
    assert_int_equal(contact_angular_velocity(cb, &t.st, wbuf, &e), SPHSIM_OK);
    assert_int_equal(device_read(&dev, wbuf, 0, n * 12, wb, &e), SPHSIM_OK);
    assert_memory_equal(wa, wb, n * 12);
    double wmax = 0;
    for (size_t i = 0; i < 3 * n; ++i) wmax = fmax(wmax, fabs(wa[i]));
    assert_true(wmax > 0); /* the discs turn: the angular state is exercised */

    /* both carry the same into the step after (no rebuild in between: idx NULL) */
    void *blob_a = NULL, *blob_b = NULL;
    size_t bytes_a = 0, bytes_b = 0;
    assert_int_equal(contact_state_save(t.c, NULL, &t.st, &blob_a, &bytes_a, &e), SPHSIM_OK);
    assert_int_equal(contact_state_save(cb, NULL, &t.st, &blob_b, &bytes_b, &e), SPHSIM_OK);
    assert_int_equal(bytes_a, bytes);
    assert_int_equal(bytes_b, bytes);
    assert_memory_equal(blob_a, blob_b, bytes);
    /* a disc's list ends at its first empty slot: the device leaves older slots after it, the
     * saved state holds them empty (header 8 words, 1 angular velocity, then S slots of 3) */
    const uint32_t *words = blob_a, S = CONTACT_SLOTS_2D;
    size_t short_lists = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint32_t *sl = words + 8 + n + i * S * 3;
        int ended = 0;
        for (uint32_t k = 0; k < S; ++k) {
            if (ended) {
                assert_int_equal(sl[3 * k], CONTACT_NO_ID);
                assert_int_equal(sl[3 * k + 1], 0);
                assert_int_equal(sl[3 * k + 2], 0);
            }
            ended |= sl[3 * k] == CONTACT_NO_ID;
        }
        short_lists += ended;
    }
    assert_true(short_lists > 0); /* discs with fewer contacts than slots */

    /* cold start (no carried impulses, no rotation): the state matters here */
    assert_int_equal(contact_create(&cc, &dev, &s, NULL, &e), SPHSIM_OK);
    state_step(&t, cc, ident, pc, vc);
    double dv = 0;
    for (size_t i = 0; i < 4 * n; ++i) dv = fmax(dv, fabs((double)vc[i] - va[i]));
    printf("# contact state round trip: %zu discs, %zu-byte state (%.0f B per disc); restored step bit-identical, cold "
           "step off by max |dv| %.3g m/s\n",
           n, bytes, (double)bytes / n, dv);
    assert_true(dv > 0);

    /* damaged blobs are refused, and nothing is carried after a refusal */
    uint32_t *bad = malloc(bytes);
    assert_non_null(bad);
    memcpy(bad, blob, bytes);
    bad[2] = (uint32_t)n + 1; /* header: n */
    assert_int_equal(contact_state_restore(cb, &t.st, bad, bytes, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "particles"));
    assert_int_equal(contact_state_restore(cb, &t.st, blob, bytes - 4, &e), SPHSIM_E_IO);
    assert_int_equal(contact_state_restore(cb, &t.st, blob, 8, &e), SPHSIM_E_IO);
    memcpy(bad, blob, bytes);
    bad[0] ^= 1u; /* header: magic */
    assert_int_equal(contact_state_restore(cb, &t.st, bad, bytes, &e), SPHSIM_E_IO);
    memcpy(bad, blob, bytes);
    const size_t slots0 = 8 + n, slot_words = 3 * n * CONTACT_SLOTS_2D; /* 2D: one angular velocity each */
    size_t used = slots0;
    while (used < slots0 + slot_words && (bad[used] == CONTACT_NO_ID || bad[used] >= CONTACT_WALL)) used += 3;
    assert_true(used < slots0 + slot_words); /* a slot holding a sphere partner */
    bad[used] = (uint32_t)n + 5;             /* a partner id out of range */
    assert_int_equal(contact_state_restore(cb, &t.st, bad, bytes, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "damaged"));
    memcpy(bad, blob, bytes);
    const float nan = NAN;
    memcpy(&bad[8], &nan, 4); /* an angular velocity */
    assert_int_equal(contact_state_restore(cb, &t.st, bad, bytes, &e), SPHSIM_E_IO);
    /* another format version: a cold start, not an error */
    memcpy(bad, blob, bytes);
    bad[1] = 99;
    contact_solver *cd = NULL;
    assert_int_equal(contact_create(&cd, &dev, &s, NULL, &e), SPHSIM_OK);
    assert_int_equal(contact_state_restore(cd, &t.st, bad, bytes, &e), SPHSIM_OK);
    state_step(&t, cd, ident, pb, vb);
    assert_memory_equal(vc, vb, n * 16);
    contact_destroy(cd);
    /* a solver that has carried nothing saves an empty state (no rotation), which restores cold */
    void *blob_d = NULL;
    size_t bytes_d = 0;
    assert_int_equal(contact_create(&cd, &dev, &s, NULL, &e), SPHSIM_OK);
    assert_int_equal(contact_state_save(cd, t.idx_buf, &t.st, &blob_d, &bytes_d, &e), SPHSIM_OK);
    assert_int_equal(bytes_d, bytes); /* the same size: a file's rows have one width */
    contact_destroy(cd);
    assert_int_equal(contact_create(&cd, &dev, &s, NULL, &e), SPHSIM_OK);
    assert_int_equal(contact_state_restore(cd, &t.st, blob_d, bytes_d, &e), SPHSIM_OK);
    state_step(&t, cd, ident, pb, vb);
    assert_memory_equal(vc, vb, n * 16);

    clReleaseMemObject(wbuf);
    free(blob_d);
    contact_destroy(cd);
    free(bad);
    free(blob);
    free(blob_a);
    free(blob_b);
    contact_destroy(cb);
    contact_destroy(cc);
    free(perm);
    free(ident);
    free(pa);
    free(va);
    free(pb);
    free(vb);
    free(pc);
    free(vc);
    free(wa);
    free(wb);
    tsys_free(&t);
}

static void ref_params(const tsys *t, ref_contact_params *rp)
{
    const scene *s = &t->s;
    contact_params cp;
    contact_params_from_scene(s, &cp);
    memset(rp, 0, sizeof *rp);
    rp->dims = s->dims;
    for (int a = 0; a < 3; ++a) {
        rp->gravity[a] = s->gravity[a];
        rp->tank_min[a] = s->tank.min[a];
        rp->tank_max[a] = s->tank.max[a];
    }
    rp->dt = s->dt;
    rp->restitution = s->restitution;
    rp->friction = s->friction;
    rp->wall_restitution = s->wall_restitution;
    rp->wall_friction = s->wall_friction;
    rp->iterations = s->contact_iterations;
    rp->v_rest = cp.v_rest;
    rp->omega_x = cp.omega_x;
    rp->omega_v = cp.omega_v;
    rp->slots = cp.slots;
    rp->inertia = cp.inertia;
    rp->n_groups = s->n_groups;
}

/* Step the device and the reference `steps` times from the same state; each device step is
 * compared with the reference step from the same input (the device's previous output), the
 * impulses carried by both (warm start). Returns through *worst the largest differences. */
typedef struct ref_diff {
    double x, v, w; /* m, m/s, rad/s * r */
    long pairs;
    double carried; /* N s, carried into the last step */
    int crowded;    /* spheres over `slots` contacts in the first step */
} ref_diff;

static ref_diff compare_reference(tsys *t, const ref_contact_params *rp, int steps)
{
    const size_t n = t->n;
    double *pd = malloc(4 * n * sizeof(double)), *vd = malloc(4 * n * sizeof(double));
    double *md = malloc(n * sizeof(double)), *rd = malloc(n * sizeof(double)), *wd = malloc(3 * n * sizeof(double));
    double *po = malloc(4 * n * sizeof(double)), *vo = malloc(4 * n * sizeof(double)),
           *wo = malloc(3 * n * sizeof(double));
    double *lam = calloc(3 * n * (n + 6), sizeof(double));
    float *pf = malloc(n * 16), *vf = malloc(n * 16), *wf = malloc(n * 12);
    ref_diff worst = { 0, 0, 0, 0, 0, 0 };
    for (int step = 0; step < steps; ++step) {
        tsys_sort_upload(t); /* the reference works on the sorted arrays too */
        tsys_omega(t, wf);
        to_double(t->pos, pd, 4 * n);
        to_double(t->vel, vd, 4 * n);
        to_double(t->mass, md, n);
        to_double(t->radius, rd, n);
        to_double(wf, wd, 3 * n);
        worst.pairs = ref_contact_pairs(n, pd, rd, 0, NULL);
        if (step == 0)
            for (size_t a = 0; a < n; ++a) {
                unsigned d = 0;
                for (size_t b = 0; b < n; ++b) {
                    double dd = 0;
                    for (int c = 0; c < 3; ++c) dd += pow(pd[4 * a + c] - pd[4 * b + c], 2);
                    d += b != a && dd < pow(rd[a] + rd[b], 2);
                }
                worst.crowded += d > rp->slots;
            }
        worst.carried = 0;
        for (size_t k = 0; k < 3 * n * (n + 6); k += 3) worst.carried += lam[k];
        ref_contact_step(rp, n, pd, vd, wd, md, rd, t->id, step ? lam : NULL, lam, po, vo, wo);
        sphsim_error e;
        tsys_enqueue(t);
        assert_int_equal(device_read(&dev, t->st.pos_next, 0, n * 16, pf, &e), SPHSIM_OK);
        assert_int_equal(device_read(&dev, t->st.vel_next, 0, n * 16, vf, &e), SPHSIM_OK);
        tsys_omega(t, wf);
        for (size_t i = 0; i < n; ++i) {
            for (int a = 0; a < 3; ++a) { /* pf's w holds the mass (state.h) */
                worst.x = fmax(worst.x, fabs(pf[4 * i + a] - po[4 * i + a]));
                worst.v = fmax(worst.v, fabs(vf[4 * i + a] - vo[4 * i + a]));
            }
            for (int a = 0; a < 3; ++a) worst.w = fmax(worst.w, fabs(wf[3 * i + a] - wo[3 * i + a]) * rd[i]);
        }
        memcpy(t->pos, pf, n * 16); /* the device's result is the next input */
        memcpy(t->vel, vf, n * 16);
    }
    free(pd);
    free(vd);
    free(md);
    free(rd);
    free(wd);
    free(po);
    free(vo);
    free(wo);
    free(lam);
    free(pf);
    free(vf);
    free(wf);
    return worst;
}

/* Three device steps each equal the double-precision reference of one step from the same input:
 * a dense polydisperse cloud with overlaps, approaching pairs, spheres against the walls, spin,
 * friction and gravity; the later steps carry the impulses of the earlier (warm start). */
static void check_reference(int dims, double e_r, double mu, int iterations, size_t n)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.2, 0.2, 0.2 }, g[3] = { 0.5, -9.81, dims == 3 ? -2.0 : 0 };
    const double r_max = 0.01, dt = 1e-3;
    scene s;
    make_scene(&s, dims, lo, hi, g, dt, e_r, iterations, r_max);
    set_friction(&s, mu);
    s.wall_restitution = 0.5 * e_r;
    s.wall_friction = 0.5 * mu;
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 2024 + (uint64_t)(dims * 10 + iterations);
    float *w = calloc(3 * n, sizeof *w);
    for (size_t i = 0; i < n; ++i) {
        double r = urange(0.5 * r_max, r_max);
        t.radius[i] = (float)r;
        t.mass[i] = (float)urange(0.2, 2.0);
        for (int a = 0; a < dims; ++a) {
            /* some centres closer than r to a wall, even slightly outside */
            t.pos[4 * i + a] = (float)urange(lo[a] + 0.3 * r, hi[a] - 0.3 * r);
            t.vel[4 * i + a] = (float)urange(-1, 1);
        }
        for (int a = dims == 3 ? 0 : 2; a < 3; ++a) w[3 * i + a] = (float)urange(-50, 50);
    }
    tsys_set_omega(&t, w);
    ref_contact_params rp;
    ref_params(&t, &rp);
    ref_diff d = compare_reference(&t, &rp, 3);
    printf(
        "# reference %dD e=%g mu=%g, %d passes, %zu spheres, 3 steps: %ld touching pairs, carried %.3g N s; max |dx| "
        "%.3g m, |dv| %.3g m/s, r |dw| %.3g m/s\n",
        dims, e_r, mu, iterations, n, d.pairs, d.carried, d.x, d.v, d.w);
    assert_true(d.carried > 0);
    assert_true(d.x < 5e-7); /* m; positions ~0.1 m, float rounding ~1e-8 m per operation */
    assert_true(d.v < 5e-5); /* m/s; velocities ~1 m/s */
    assert_true(d.w < 5e-5);
    free(w);
    tsys_free(&t);
}

static void test_reference_step(void **state)
{
    (void)state;
    check_reference(2, 0.5, 0.0, 4, 300);
    check_reference(2, 1.0, 0.5, 1, 300);
    check_reference(2, 0.3, 0.3, 8, 300);
    check_reference(3, 0.3, 0.4, 6, 500);
}

/* Spheres with more contacts than slots (a big disc in a ring of small ones, a big sphere in a
 * shell) take the stateless impulse rule: still equal to the reference, still conserving
 * momentum. */
static void crowd(int dims)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 };
    const double R = 0.02, r = dims == 3 ? 0.006 : 0.004;
    const int n_big = 4, ring = dims == 3 ? 30 : 22;
    const size_t n = (size_t)(n_big * (1 + ring));
    scene s;
    make_scene(&s, dims, lo, hi, g, 1e-3, 0.5, 4, R);
    set_friction(&s, 0.3);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 5;
    size_t i = 0;
    for (int b = 0; b < n_big; ++b) {
        double cx = 0.3 + 0.13 * b, cy = 0.5 + 0.02 * b, cz = 0.5;
        t.pos[4 * i] = (float)cx;
        t.pos[4 * i + 1] = (float)cy;
        if (dims == 3) t.pos[4 * i + 2] = (float)cz;
        t.radius[i] = (float)R;
        t.mass[i] = 5;
        t.vel[4 * i] = (float)urange(-0.2, 0.2);
        ++i;
        for (int k = 0; k < ring; ++k, ++i) { /* small spheres slightly overlapping the big one, moving in */
            double nrm[3];
            if (dims == 3) { /* a spiral over the sphere */
                const double zz = 1 - 2 * (k + 0.5) / ring, rho = sqrt(1 - zz * zz), phi = 2.4 * k + 0.2 * urand();
                nrm[0] = rho * cos(phi);
                nrm[1] = rho * sin(phi);
                nrm[2] = zz;
            } else {
                const double phi = 2 * M_PI * (k + 0.3 * urand()) / ring;
                nrm[0] = cos(phi);
                nrm[1] = sin(phi);
                nrm[2] = 0;
            }
            const double d = R + r - urange(0, 3e-4), c[3] = { cx, cy, dims == 3 ? cz : 0 };
            for (int a = 0; a < dims; ++a) {
                t.pos[4 * i + a] = (float)(c[a] + d * nrm[a]);
                t.vel[4 * i + a] = (float)(-0.5 * nrm[a] + urange(-0.1, 0.1));
            }
            t.radius[i] = (float)r;
            t.mass[i] = (float)urange(0.05, 0.2);
        }
    }
    ref_contact_params rp;
    ref_params(&t, &rp);
    double p0[3], smv, ke0, p1[3], ke1;
    momentum(&t, p0, &smv, &ke0);
    ref_diff d = compare_reference(&t, &rp, 2);
    momentum(&t, p1, &smv, &ke1);
    const double dp = sqrt(pow(p1[0] - p0[0], 2) + pow(p1[1] - p0[1], 2) + pow(p1[2] - p0[2], 2)) / smv;
    printf("# crowd %dD: %d spheres over %u contacts, max |dx| %.3g m, |dv| %.3g m/s, r |dw| %.3g m/s, |dP|/sum(m|v|) "
           "%.3g, KE %.4g -> %.4g J\n",
           dims, d.crowded, rp.slots, d.x, d.v, d.w, dp, ke0, ke1);
    assert_true(d.crowded >= n_big);
    assert_true(d.x < 5e-7);
    assert_true(d.v < 5e-5);
    assert_true(d.w < 5e-5);
    assert_true(dp < 1e-6);
    assert_true(ke1 <= ke0 * (1 + 1e-6)); /* e < 1 and friction never gain energy */
    tsys_free(&t);
}

static void test_crowd(void **state)
{
    (void)state;
    crowd(2);
    crowd(3);
}

static int group_setup(void **state)
{
    (void)state;
    sphsim_error e;
    /* SPHSIM_TEST_DEVICE picks another device (e.g. "gpu"); PoCL's CPU device by default */
    const char *sel = getenv("SPHSIM_TEST_DEVICE");
    if (device_open(&dev, sel && *sel ? sel : "cpu", 0, NULL, &e) != SPHSIM_OK) {
        fprintf(stderr, "device_open: %s\n", e.msg);
        return -1;
    }
    printf("# device: %s (%s)\n", dev.name, dev.platform_name);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    device_close(&dev);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offcentre_collisions),
        cmocka_unit_test(test_touch_within_rounding),
        cmocka_unit_test(test_faces_at_right_angles),
        cmocka_unit_test(test_walls),
        cmocka_unit_test(test_wall_friction),
        cmocka_unit_test(test_pair_friction),
        cmocka_unit_test(test_rolling),
        cmocka_unit_test(test_count_row),
        cmocka_unit_test(test_pairs_brute_force),
        cmocka_unit_test(test_reference_step),
        cmocka_unit_test(test_crowd),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_ahead_same),
        cmocka_unit_test(test_cache_same),
        cmocka_unit_test(test_ball_drop),
        cmocka_unit_test(test_gas_conservation),
        cmocka_unit_test(test_pile_settles),
        cmocka_unit_test(test_column_rests),
        cmocka_unit_test(test_near_pair_friction),
        cmocka_unit_test(test_real_grid),
        cmocka_unit_test(test_kept_order_same),
        cmocka_unit_test(test_state_round_trip),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
