/* test_contact: the hard-sphere contact solver on the device (PoCL here) against analytic
 * collisions, conservation laws, a dropped ball, a settling pile, a brute-force pair search
 * and the plain-C double-precision reference of one step (tests/ref_contact.c).
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

/* A particle-mode scene with one radius bound: tank [lo, hi], gravity, dt, e, passes. */
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
    s->contact_iterations = iterations;
    s->dt = dt;
    s->max_speed = 1e3;
    s->cell_ratio = 1;
    s->support = 2 * r_max;
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
    assert_int_equal(device_alloc(&dev, m * 4, "mass", &st->mass, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 4, "radius", &st->radius, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 4, "id", &st->id, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, m * 4, "idx", &t->idx_buf, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, 4, "flags", &st->flags, &e), SPHSIM_OK);
    uint32_t zero = 0;
    assert_int_equal(device_write(&dev, st->flags, 0, 4, &zero, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, gp->n_cells * 4, "cell_start", &t->cs_buf, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, gp->n_cells * 4, "cell_end", &t->ce_buf, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, sizeof *gp, "grid params", &t->gp_buf, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->gp_buf, 0, sizeof *gp, gp, &e), SPHSIM_OK);
    sphsim_status rc = contact_create(&t->c, &dev, s, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_create: %s", e.msg);
}

static void tsys_free(tsys *t)
{
    contact_destroy(t->c);
    cl_mem all[] = { t->st.pos, t->st.vel,   t->st.pos_next, t->st.vel_next, t->st.mass, t->st.radius,
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
    assert_int_equal(device_write(&dev, t->st.pos, 0, n * 16, t->pos, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->st.vel, 0, n * 16, t->vel, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->st.mass, 0, n * 4, t->mass, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, t->st.radius, 0, n * 4, t->radius, &e), SPHSIM_OK);
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

/* Two spheres, already touching and approaching along n, unequal masses, no gravity:
 * after one step v' = v_t + n (m1 u1 + m2 u2 -/+ m_other e (u1 - u2)) / (m1 + m2). */
static void test_head_on(void **state)
{
    (void)state;
    const double es[3] = { 0.0, 0.5, 1.0 };
    for (int dims = 2; dims <= 3; ++dims)
        for (int k = 0; k < 3; ++k) {
            const double e_r = es[k];
            const double lo[3] = { -1, -1, -1 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 };
            const double r1 = 0.02, r2 = 0.03, m1 = 1.0, m2 = 3.0, u1 = 2.0, u2 = -1.0;
            /* unit normal from 1 to 2, and a tangential velocity part that must survive */
            double nrm[3] = { 1, 0, 0 }, tan1[3] = { 0, 0.3, 0 }, tan2[3] = { 0, -0.2, 0 };
            if (dims == 3) {
                const double n3[3] = { 1.0 / 3, 2.0 / 3, 2.0 / 3 }, t1[3] = { 0.4, 0.1, -0.3 },
                             t2[3] = { -0.2, 0.3, -0.2 };
                memcpy(nrm, n3, sizeof nrm);
                memcpy(tan1, t1, sizeof tan1); /* t1 . n3 = 0, t2 . n3 = 0 */
                memcpy(tan2, t2, sizeof tan2);
            }
            scene s;
            make_scene(&s, dims, lo, hi, g, 1e-4, e_r, 4, r2);
            tsys t;
            tsys_init(&t, &s, 2, 1.0);
            const double d = r1 + r2 - 1e-4; /* overlapping by 0.1 mm */
            for (int a = 0; a < 3; ++a) {
                t.pos[a] = (float)(0.01 * (a + 1));
                t.pos[4 + a] = (float)(0.01 * (a + 1) + d * nrm[a]);
                t.vel[a] = (float)(u1 * nrm[a] + tan1[a]);
                t.vel[4 + a] = (float)(u2 * nrm[a] + tan2[a]);
            }
            t.mass[0] = (float)m1;
            t.mass[1] = (float)m2;
            t.radius[0] = (float)r1;
            t.radius[1] = (float)r2;
            tsys_step(&t);
            const double v1n = (m1 * u1 + m2 * u2 - m2 * e_r * (u1 - u2)) / (m1 + m2);
            const double v2n = (m1 * u1 + m2 * u2 + m1 * e_r * (u1 - u2)) / (m1 + m2);
            for (size_t i = 0; i < 2; ++i) {
                int first = t.id[i] == 0;
                double err = 0, mag = 0;
                for (int a = 0; a < 3; ++a) {
                    double want = first ? v1n * nrm[a] + tan1[a] : v2n * nrm[a] + tan2[a];
                    err += pow(t.vel[4 * i + a] - want, 2);
                    mag += want * want;
                }
                if (sqrt(err) > 1e-5 * sqrt(mag))
                    fail_msg("dims %d e %g sphere %d: |v - v_exact| = %g, |v_exact| = %g", dims, e_r, first ? 1 : 2,
                             sqrt(err), sqrt(mag));
            }
            /* and the overlap is gone: the pair is at least r1 + r2 apart (to float rounding) */
            double dd = 0;
            for (int a = 0; a < 3; ++a) dd += pow(t.pos[a] - t.pos[4 + a], 2);
            assert_true(sqrt(dd) >= (r1 + r2) * (1 - 1e-6));
            tsys_free(&t);
        }
}

/* A dilute 2D gas in a box without gravity, away from the walls: momentum is conserved to
 * float rounding for any e, and kinetic energy for e = 1 within 1e-4 over 1000 steps. */
static void run_gas(double e_r, int steps, double *dp_rel, double *dke_rel, long *n_contacts, double *min_wall_gap)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 0 }, g[3] = { 0, 0, 0 };
    const size_t n = 200;
    const double r = 0.005;
    scene s;
    make_scene(&s, 2, lo, hi, g, 1e-3, e_r, 4, r);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 42;
    const double blo[3] = { 0.3, 0.3, 0 }, bhi[3] = { 0.7, 0.7, 0 };
    place_random(&t, n, 2, blo, bhi, 0.6 * r, r, 0.0);
    for (size_t i = 0; i < n; ++i) {
        t.mass[i] = (float)urange(0.5, 2.0); /* kg: unequal masses */
        t.vel[4 * i] = (float)urange(-0.1, 0.1);
        t.vel[4 * i + 1] = (float)urange(-0.1, 0.1);
    }
    double p0[3], smv0, ke0, p1[3], smv1, ke1;
    momentum(&t, p0, &smv0, &ke0);
    *n_contacts = 0;
    *min_wall_gap = 1;
    for (int k = 0; k < steps; ++k) {
        *n_contacts += tsys_count(&t); /* pairs resolved by this step */
        tsys_step(&t);
        for (size_t i = 0; i < n; ++i)
            for (int a = 0; a < 2; ++a) {
                double gap = fmin(t.pos[4 * i + a] - t.radius[i] - lo[a], hi[a] - t.pos[4 * i + a] - t.radius[i]);
                if (gap < *min_wall_gap) *min_wall_gap = gap;
            }
    }
    momentum(&t, p1, &smv1, &ke1);
    *dp_rel = sqrt(pow(p1[0] - p0[0], 2) + pow(p1[1] - p0[1], 2)) / smv0;
    *dke_rel = (ke1 - ke0) / ke0;
    assert_int_equal(tsys_flags(&t), 0);
    tsys_free(&t);
}

static void test_gas_conservation(void **state)
{
    (void)state;
    double dp, dke, gap;
    long nc;
    run_gas(1.0, 1000, &dp, &dke, &nc, &gap);
    printf("# gas e=1: 1000 steps, %ld contacts resolved, |dP|/sum(m|v|) = %.3g, dKE/KE = %.3g, min wall gap %.3g m\n",
           nc, dp, dke, gap);
    assert_true(gap > 0);   /* never touched a wall: no external impulse */
    assert_true(nc > 100);  /* the test saw real collisions */
    assert_true(dp < 1e-7); /* momentum to float rounding */
    assert_true(fabs(dke) < 1e-4);
    run_gas(0.5, 1000, &dp, &dke, &nc, &gap);
    printf("# gas e=0.5: 1000 steps, %ld contacts resolved, |dP|/sum(m|v|) = %.3g, dKE/KE = %.3g\n", nc, dp, dke);
    assert_true(gap > 0);
    assert_true(nc > 100);
    assert_true(dp < 1e-7);
    assert_true(dke < -1e-3); /* inelastic collisions lose energy */
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
static void test_walls(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 }, g[3] = { 0, 0, 0 }, e_r = 0.5, r = 0.05, dt = 0.01;
    scene s;
    make_scene(&s, 3, lo, hi, g, dt, e_r, 2, r);
    tsys t;
    tsys_init(&t, &s, 6, 1.0);
    for (int k = 0; k < 6; ++k) {
        int a = k / 2, side = k % 2; /* side 0: min wall */
        for (int b = 0; b < 3; ++b) t.pos[4 * k + b] = 0.2f + 0.3f * (float)(k % 3) * (b != a);
        t.pos[4 * k + a] = (float)(side ? hi[a] - r - 0.005 : lo[a] + r + 0.005); /* 5 mm from contact */
        t.vel[4 * k + a] = side ? 1.0f : -1.0f;                                   /* 10 mm per step */
        t.vel[4 * k + (a + 1) % 3] = 0.25f;                                       /* tangential */
        t.mass[k] = 1;
        t.radius[k] = (float)r;
    }
    tsys_step(&t);
    for (size_t i = 0; i < 6; ++i) {
        int k = (int)t.id[i], a = k / 2, side = k % 2;
        double plane = side ? hi[a] - r : lo[a] + r;
        double pen = 0.005, want_x = side ? plane - e_r * pen : plane + e_r * pen;
        assert_float_equal(t.pos[4 * i + a], want_x, 1e-6);
        assert_float_equal(t.vel[4 * i + a], side ? -e_r : e_r, 1e-6);
        assert_float_equal(t.vel[4 * i + (a + 1) % 3], 0.25, 1e-7);
    }
    tsys_free(&t);
}

/* A dense 2D pile settles under gravity: after 1 s the largest overlap in the state the
 * solver hands out (pos_next, which the snapshot shows) is below 1% of r. */
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
    double *pd = malloc(n * 4 * sizeof *pd), *rd = malloc(n * sizeof *rd);
    to_double(t.pos, pd, 4 * n);
    to_double(t.radius, rd, n);
    *max_overlap_rel = ref_contact_max_overlap(n, pd, rd) / r;
    *v_max = 0;
    for (size_t i = 0; i < n; ++i) *v_max = fmax(*v_max, hypot(t.vel[4 * i], t.vel[4 * i + 1]));
    free(pd);
    free(rd);
    assert_int_equal(tsys_flags(&t), 0);
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

static void test_determinism(void **state)
{
    (void)state;
    const size_t n = 400;
    float *p1 = malloc(n * 16), *v1 = malloc(n * 16), *p2 = malloc(n * 16), *v2 = malloc(n * 16);
    uint32_t *i1 = malloc(n * 4), *i2 = malloc(n * 4);
    run_cloud(200, p1, v1, i1, n);
    run_cloud(200, p2, v2, i2, n);
    assert_memory_equal(i1, i2, n * 4);
    assert_memory_equal(p1, p2, n * 16);
    assert_memory_equal(v1, v2, n * 16);
    free(p1);
    free(v1);
    free(p2);
    free(v2);
    free(i1);
    free(i2);
}

/* The real device grid (src/grid.c) with contact_step, as sim.c drives it: rebuild on pos_next,
 * gather every array into the new order, step. Its Morton order differs from the host table's
 * linear order, so sums run in another order: states agree to rounding, not bitwise. */
typedef struct rgsys {
    dev_state st;
    grid *g;
    contact_solver *c;
} rgsys;

static void rg_rebuild(rgsys *r)
{
    sphsim_error e;
    dev_state *st = &r->st;
    size_t n = st->n;
    cl_mem t;
    assert_int_equal(grid_build(r->g, st->pos_next, n, st->flags, &e), SPHSIM_OK);
    assert_int_equal(grid_gather(r->g, st->pos_next, st->pos, 16, n, &e), SPHSIM_OK);
    assert_int_equal(grid_gather(r->g, st->vel_next, st->vel, 16, n, &e), SPHSIM_OK);
    assert_int_equal(grid_gather(r->g, st->id, st->id_tmp, 4, n, &e), SPHSIM_OK);
    t = st->id, st->id = st->id_tmp, st->id_tmp = t;
    assert_int_equal(grid_gather(r->g, st->mass, st->mass_tmp, 4, n, &e), SPHSIM_OK);
    t = st->mass, st->mass = st->mass_tmp, st->mass_tmp = t;
    assert_int_equal(grid_gather(r->g, st->radius, st->radius_tmp, 4, n, &e), SPHSIM_OK);
    t = st->radius, st->radius = st->radius_tmp, st->radius_tmp = t;
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
    rgsys r;
    memset(&r, 0, sizeof r);
    dev_state *st = &r.st;
    st->n = n;
    cl_mem *bufs16[] = { &st->pos, &st->vel, &st->pos_next, &st->vel_next };
    cl_mem *bufs4[] = { &st->mass, &st->mass_tmp, &st->radius, &st->radius_tmp, &st->id, &st->id_tmp };
    for (size_t k = 0; k < 4; ++k) assert_int_equal(device_alloc(&dev, n * 16, "state", bufs16[k], &e), SPHSIM_OK);
    for (size_t k = 0; k < 6; ++k) assert_int_equal(device_alloc(&dev, n * 4, "state", bufs4[k], &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&dev, 4, "flags", &st->flags, &e), SPHSIM_OK);
    uint32_t zero = 0;
    assert_int_equal(device_write(&dev, st->flags, 0, 4, &zero, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->pos_next, 0, n * 16, t.pos, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->vel_next, 0, n * 16, t.vel, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->mass, 0, n * 4, t.mass, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->radius, 0, n * 4, t.radius, &e), SPHSIM_OK);
    assert_int_equal(device_write(&dev, st->id, 0, n * 4, t.id, &e), SPHSIM_OK);
    grid_params gp;
    double glo[3], ghi[3];
    for (int a = 0; a < 3; ++a) {
        glo[a] = lo[a] - s.support;
        ghi[a] = hi[a] + s.support;
    }
    assert_int_equal(grid_geometry(3, glo, ghi, s.support, 1.0, &gp, &e), SPHSIM_OK);
    assert_int_equal(grid_create(&r.g, &dev, &gp, n, &e), SPHSIM_OK);
    assert_int_equal(contact_create(&r.c, &dev, &s, &e), SPHSIM_OK);

    float *pa = malloc(n * 16), *va = malloc(n * 16), *pb = malloc(n * 16), *vb = malloc(n * 16);
    double *pd = malloc(n * 32), *rd = malloc(n * 8);
    for (int k = 0; k < steps; ++k) {
        /* contacts through the real grid equal the brute-force count of the same state */
        rg_rebuild(&r);
        long nc = -1;
        assert_int_equal(contact_count(r.c, r.g, st, &nc, &e), SPHSIM_OK);
        float *ps = malloc(n * 16), *rs = malloc(n * 4);
        assert_int_equal(device_read(&dev, st->pos, 0, n * 16, ps, &e), SPHSIM_OK);
        assert_int_equal(device_read(&dev, st->radius, 0, n * 4, rs, &e), SPHSIM_OK);
        to_double(ps, pd, 4 * n);
        to_double(rs, rd, n);
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
    contact_destroy(r.c);
    grid_destroy(r.g);
    cl_mem all[] = { st->pos,    st->vel,        st->pos_next, st->vel_next, st->mass, st->mass_tmp,
                     st->radius, st->radius_tmp, st->id,       st->id_tmp,   st->flags };
    for (size_t k = 0; k < sizeof all / sizeof *all; ++k) clReleaseMemObject(all[k]);
    tsys_free(&t);
}

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

/* --resume of the contact solver: its carried state saved after the sort (as sim.c does at a
 * snapshot), restored into a fresh solver on the state uploaded in the sorted order (as
 * --resume uploads it: the rebuild's permutation is then the identity), gives a next step
 * bit-identical to the original solver's, which reached its slots through the real
 * permutation; both solvers then carry the same state. Without it (cold) the step differs,
 * so the test can fail. Damaged blobs are refused; another format version starts cold. */
static void test_state_round_trip(void **state)
{
    (void)state;
    sphsim_error e;
    const size_t n = 300;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.2, 0.2, 0 }, g[3] = { 0, -9.81, 0 };
    scene s;
    make_scene(&s, 2, lo, hi, g, 5e-4, 0.3, 4, 0.01);
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
    float *pc = malloc(n * 16), *vc = malloc(n * 16);
    assert_non_null(vc);
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
    assert_int_equal(contact_create(&cb, &dev, &s, &e), SPHSIM_OK);
    sphsim_status rc = contact_state_restore(cb, &t.st, blob, bytes, &e);
    if (rc != SPHSIM_OK) fail_msg("contact_state_restore: %s", e.msg);
    state_step(&t, cb, ident, pb, vb);
    assert_memory_equal(pa, pb, n * 16);
    assert_memory_equal(va, vb, n * 16);

    /* both carry the same into the step after (no rebuild in between: idx NULL) */
    void *blob_a = NULL, *blob_b = NULL;
    size_t bytes_a = 0, bytes_b = 0;
    assert_int_equal(contact_state_save(t.c, NULL, &t.st, &blob_a, &bytes_a, &e), SPHSIM_OK);
    assert_int_equal(contact_state_save(cb, NULL, &t.st, &blob_b, &bytes_b, &e), SPHSIM_OK);
    assert_int_equal(bytes_a, bytes);
    assert_int_equal(bytes_b, bytes);
    assert_memory_equal(blob_a, blob_b, bytes);

    /* cold start: the carried impulses matter here */
    assert_int_equal(contact_create(&cc, &dev, &s, &e), SPHSIM_OK);
    state_step(&t, cc, ident, pc, vc);
    double dv = 0;
    for (size_t i = 0; i < 4 * n; ++i) dv = fmax(dv, fabs((double)vc[i] - va[i]));
    printf("# contact state round trip: %zu discs, %zu-byte state; restored step bit-identical, cold step off by "
           "max |dv| %.3g m/s\n",
           n, bytes, dv);
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
    size_t used = 8;
    while (used < 8 + n * CONTACT_SLOTS_2D && bad[used] == 0xffffffffu) ++used; /* a filled slot */
    assert_true(used < 8 + n * CONTACT_SLOTS_2D);
    bad[used] = (uint32_t)n + 5; /* a partner id out of range */
    assert_int_equal(contact_state_restore(cb, &t.st, bad, bytes, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "damaged"));
    state_step(&t, cb, ident, pb, vb);
    assert_memory_equal(pc, pb, n * 16);
    assert_memory_equal(vc, vb, n * 16);
    /* another format version: a cold start, not an error */
    memcpy(bad, blob, bytes);
    bad[1] = 99;
    assert_int_equal(contact_state_restore(cb, &t.st, bad, bytes, &e), SPHSIM_OK);
    state_step(&t, cb, ident, pb, vb);
    assert_memory_equal(vc, vb, n * 16);
    /* a solver that has carried nothing saves an empty state, which restores cold */
    contact_solver *cd = NULL;
    void *blob_d = NULL;
    size_t bytes_d = 0;
    assert_int_equal(contact_create(&cd, &dev, &s, &e), SPHSIM_OK);
    assert_int_equal(contact_state_save(cd, t.idx_buf, &t.st, &blob_d, &bytes_d, &e), SPHSIM_OK);
    assert_int_equal(bytes_d, bytes); /* the same size: a file's rows have one width */
    assert_int_equal(contact_state_restore(cb, &t.st, blob_d, bytes_d, &e), SPHSIM_OK);
    state_step(&t, cb, ident, pb, vb);
    assert_memory_equal(vc, vb, n * 16);

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
    rp->iterations = s->contact_iterations;
    rp->candidate_radius = t->gp.radius;
    rp->v_rest = cp.v_rest;
    rp->omega_x = cp.omega_x;
    rp->omega_v = cp.omega_v;
    rp->slots = cp.slots;
}

/* Two device steps each equal the double-precision reference of one step from the same input:
 * a dense polydisperse cloud with overlaps, approaching pairs, spheres against the walls and
 * gravity; the second step starts from the device's first and carries the impulses of the
 * first (warm start). */
static void check_reference(int dims, double e_r, int iterations, size_t n)
{
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 0.2, 0.2, 0.2 }, g[3] = { 0.5, -9.81, dims == 3 ? -2.0 : 0 };
    const double r_max = 0.01, dt = 1e-3;
    scene s;
    make_scene(&s, dims, lo, hi, g, dt, e_r, iterations, r_max);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 2024 + (uint64_t)(dims * 10 + iterations);
    for (size_t i = 0; i < n; ++i) {
        double r = urange(0.5 * r_max, r_max);
        t.radius[i] = (float)r;
        t.mass[i] = (float)urange(0.2, 2.0);
        for (int a = 0; a < dims; ++a) {
            /* some centres closer than r to a wall, even slightly outside */
            t.pos[4 * i + a] = (float)urange(lo[a] + 0.3 * r, hi[a] - 0.3 * r);
            t.vel[4 * i + a] = (float)urange(-1, 1);
        }
    }
    ref_contact_params rp;
    ref_params(&t, &rp);
    double *pd = malloc(4 * n * sizeof(double)), *vd = malloc(4 * n * sizeof(double));
    double *md = malloc(n * sizeof(double)), *rd = malloc(n * sizeof(double));
    double *po = malloc(4 * n * sizeof(double)), *vo = malloc(4 * n * sizeof(double));
    double *lam = calloc(n * n, sizeof(double));
    float *pf = malloc(n * 16), *vf = malloc(n * 16);
    for (int step = 0; step < 2; ++step) {
        tsys_sort_upload(&t); /* the reference works on the sorted arrays too */
        to_double(t.pos, pd, 4 * n);
        to_double(t.vel, vd, 4 * n);
        to_double(t.mass, md, n);
        to_double(t.radius, rd, n);
        long n_pairs = ref_contact_pairs(n, pd, rd, 0, NULL);
        double lam_sum = 0;
        for (size_t k = 0; k < n * n; ++k) lam_sum += lam[k];
        ref_contact_step(&rp, n, pd, vd, md, rd, t.id, step ? lam : NULL, lam, po, vo);

        sphsim_error e;
        tsys_enqueue(&t);
        assert_int_equal(device_read(&dev, t.st.pos_next, 0, n * 16, pf, &e), SPHSIM_OK);
        assert_int_equal(device_read(&dev, t.st.vel_next, 0, n * 16, vf, &e), SPHSIM_OK);
        double ex = 0, ev = 0, moved = 0;
        for (size_t i = 0; i < n; ++i)
            for (int a = 0; a < 4; ++a) {
                ex = fmax(ex, fabs(pf[4 * i + a] - po[4 * i + a]));
                ev = fmax(ev, fabs(vf[4 * i + a] - vo[4 * i + a]));
                moved = fmax(moved, fabs(po[4 * i + a] - pd[4 * i + a]));
            }
        printf("# reference %dD e=%g, %d passes, %zu spheres, step %d: %ld touching pairs, carried impulses %.3g N s; "
               "max |dx| %.3g m (moved up to %.3g m), max |dv| %.3g m/s\n",
               dims, e_r, iterations, n, step + 1, n_pairs, lam_sum, ex, moved, ev);
        if (step == 0) assert_true(n_pairs > (long)n / 4); /* a dense start */
        if (step == 1) assert_true(lam_sum > 0);           /* impulses were carried */
        assert_true(ex < 5e-7);    /* m; positions ~0.1 m, float rounding ~1e-8 m per operation */
        assert_true(ev < 2e-5);    /* m/s; velocities ~1 m/s */
        memcpy(t.pos, pf, n * 16); /* the device's result is the next input */
        memcpy(t.vel, vf, n * 16);
    }
    free(pd);
    free(vd);
    free(md);
    free(rd);
    free(po);
    free(vo);
    free(lam);
    free(pf);
    free(vf);
    tsys_free(&t);
}

/* Spheres with more contacts than slots (a big disc in a ring of small ones) take the
 * stateless impulse rule: still equal to the reference, still conserving momentum. */
static void test_crowd(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 0 }, g[3] = { 0, 0, 0 };
    const double R = 0.02, r = 0.004;
    const int n_big = 4, ring = 22;
    const size_t n = (size_t)(n_big * (1 + ring));
    scene s;
    make_scene(&s, 2, lo, hi, g, 1e-3, 0.5, 4, R);
    tsys t;
    tsys_init(&t, &s, n, 1.0);
    rng_state = 5;
    size_t i = 0;
    for (int b = 0; b < n_big; ++b) {
        double cx = 0.3 + 0.13 * b, cy = 0.5 + 0.02 * b;
        t.pos[4 * i] = (float)cx;
        t.pos[4 * i + 1] = (float)cy;
        t.radius[i] = (float)R;
        t.mass[i] = 5;
        t.vel[4 * i] = (float)urange(-0.2, 0.2);
        ++i;
        for (int k = 0; k < ring; ++k, ++i) { /* small discs slightly overlapping the big one, moving in */
            double phi = 2 * M_PI * (k + 0.3 * urand()) / ring, d = R + r - urange(0, 3e-4);
            t.pos[4 * i] = (float)(cx + d * cos(phi));
            t.pos[4 * i + 1] = (float)(cy + d * sin(phi));
            t.radius[i] = (float)r;
            t.mass[i] = (float)urange(0.05, 0.2);
            t.vel[4 * i] = (float)(-0.5 * cos(phi) + urange(-0.1, 0.1));
            t.vel[4 * i + 1] = (float)(-0.5 * sin(phi) + urange(-0.1, 0.1));
        }
    }
    ref_contact_params rp;
    ref_params(&t, &rp);
    double *pd = malloc(4 * n * sizeof(double)), *vd = malloc(4 * n * sizeof(double));
    double *md = malloc(n * sizeof(double)), *rd = malloc(n * sizeof(double));
    double *po = malloc(4 * n * sizeof(double)), *vo = malloc(4 * n * sizeof(double));
    double *lam = calloc(n * n, sizeof(double));
    for (int step = 0; step < 2; ++step) {
        tsys_sort_upload(&t);
        to_double(t.pos, pd, 4 * n);
        to_double(t.vel, vd, 4 * n);
        to_double(t.mass, md, n);
        to_double(t.radius, rd, n);
        int crowded = 0; /* spheres with more contacts than slots */
        for (size_t a = 0; a < n; ++a) {
            unsigned d = 0;
            for (size_t b = 0; b < n; ++b) {
                double dx = pd[4 * a] - pd[4 * b], dy = pd[4 * a + 1] - pd[4 * b + 1], rs = rd[a] + rd[b];
                d += b != a && dx * dx + dy * dy < rs * rs;
            }
            crowded += d > rp.slots;
        }
        double p0[3], smv, ke0, p1[3], ke1;
        momentum(&t, p0, &smv, &ke0);
        ref_contact_step(&rp, n, pd, vd, md, rd, t.id, step ? lam : NULL, lam, po, vo);
        sphsim_error e;
        tsys_enqueue(&t);
        assert_int_equal(device_read(&dev, t.st.pos_next, 0, n * 16, t.pos, &e), SPHSIM_OK);
        assert_int_equal(device_read(&dev, t.st.vel_next, 0, n * 16, t.vel, &e), SPHSIM_OK);
        momentum(&t, p1, &smv, &ke1);
        double ex = 0, ev = 0;
        for (size_t a = 0; a < n; ++a) /* t is still in the order the step ran in */
            for (int c = 0; c < 4; ++c) {
                ex = fmax(ex, fabs(t.pos[4 * a + c] - po[4 * a + c]));
                ev = fmax(ev, fabs(t.vel[4 * a + c] - vo[4 * a + c]));
            }
        double dp = hypot(p1[0] - p0[0], p1[1] - p0[1]) / smv;
        printf("# crowd step %d: %d spheres over %u contacts, max |dx| %.3g m, max |dv| %.3g m/s, |dP|/sum(m|v|) "
               "%.3g, KE %.4g -> %.4g J\n",
               step + 1, crowded, rp.slots, ex, ev, dp, ke0, ke1);
        if (step == 0) assert_true(crowded >= n_big);
        assert_true(ex < 5e-7);
        assert_true(ev < 2e-5);
        assert_true(dp < 1e-6);
        assert_true(ke1 <= ke0 * (1 + 1e-6)); /* e < 1 and resting contacts never gain energy */
    }
    free(pd);
    free(vd);
    free(md);
    free(rd);
    free(po);
    free(vo);
    free(lam);
    tsys_free(&t);
}

static void test_reference_step(void **state)
{
    (void)state;
    check_reference(2, 0.5, 4, 300);
    check_reference(2, 1.0, 1, 300);
    check_reference(3, 0.3, 6, 500);
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
        cmocka_unit_test(test_head_on),          cmocka_unit_test(test_walls),
        cmocka_unit_test(test_count_row),        cmocka_unit_test(test_pairs_brute_force),
        cmocka_unit_test(test_reference_step),   cmocka_unit_test(test_crowd),
        cmocka_unit_test(test_determinism),      cmocka_unit_test(test_ball_drop),
        cmocka_unit_test(test_gas_conservation), cmocka_unit_test(test_pile_settles),
        cmocka_unit_test(test_real_grid),        cmocka_unit_test(test_state_round_trip),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
