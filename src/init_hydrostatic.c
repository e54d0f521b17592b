/* init_hydrostatic: the hydrostatic initial state of SPH fluid resting on the tank floor or on
 * the objects' solids (docs/physics.md, "Initial state"): each vertical run of fluid particles on
 * them is squeezed along gravity so that its kernel sums give the densities of rest under gravity. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/sph_kernel_fns.h"
#include "geometry.h"
#include "init.h"
#include "jobs.h"
#include "sph.h"

/* Pressure (Pa, >= 0) of the scene's EOS at density rho, and its inverse (double). */
static double eos_p(const scene *s, double rho)
{
    if (rho <= s->rest_density) return 0.0;
    if (s->eos == EOS_LINEAR) return s->stiffness * (rho - s->rest_density);
    return s->rest_density * s->sound_speed * s->sound_speed / s->gamma * (pow(rho / s->rest_density, s->gamma) - 1.0);
}

static double eos_rho(const scene *s, double p)
{
    if (s->eos == EOS_LINEAR) return s->rest_density + p / s->stiffness;
    return s->rest_density *
           pow(1.0 + p * s->gamma / (s->rest_density * s->sound_speed * s->sound_speed), 1.0 / s->gamma);
}

/* Lattice sum of W with spacing dx on every axis but `axis`, where it is lambda dx (1/m^dims). */
static double lattice_sum_squeezed(int kernel, int dims, double h, double dx, int axis, double lambda)
{
    const int R = (int)ceil(2.0 * h / (lambda * dx)) + 1;
    const int Rz = dims == 3 ? R : 0;
    double sum = 0.0;
    for (int k = -Rz; k <= Rz; ++k)
        for (int j = -R; j <= R; ++j)
            for (int i = -R; i <= R; ++i) {
                double c[3] = { i * dx, j * dx, k * dx };
                c[axis] *= lambda;
                sum += sphk_w(kernel, dims, h, sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]));
            }
    return sum;
}

/* One fluid particle of a column in hydrostatic_init: its coordinate along "up" (against
 * gravity, m) and its index. */
typedef struct col_entry {
    double up;
    uint32_t i;
} col_entry;

static int col_cmp(const void *a, const void *b)
{
    const col_entry *x = a, *y = b;
    return (x->up > y->up) - (x->up < y->up);
}

#define SQUEEZE_TABLE 201

/* The column of fluid particle i: its coordinates on the axes across gravity (axis ga; 0 for the
 * missing axis in 2D) in half spacings from the tank's corner. A block's lattice may lie half a
 * spacing off the tank's (a block from 0.55 m in a tank of 0.02 m spacing): its particles then
 * sit on the half-spacing points, which lround of the whole-spacing index (k + 1/2 in float)
 * would send to either neighbour, merging two columns into one run twice as tall. In half
 * spacings every lattice point lies within float rounding of an integer. */
static void column_key(const scene *s, const particles *p, size_t i, int ga, long key[2])
{
    int q = 0;
    key[0] = key[1] = 0;
    for (int a = 0; a < s->dims; ++a)
        if (a != ga) key[q++] = lround(2.0 * (p->pos[4 * i + a] - s->tank.min[a]) / s->spacing);
}

/* One thread's columns c0 .. c1-1 of hydrostatic_init. */
typedef struct squeeze_job {
    const scene *s;
    particles *p;
    const uint32_t *idx; /* fluid particles by column: column c is idx[col_start[c] .. col_start[c + 1]) */
    const size_t *col_start;
    size_t c0, c1;
    const double *lam, *rho_of; /* the squeeze table */
    int ga;                     /* the gravity axis */
    double dir, floor_up;       /* up = dir * x[ga]; the floor's "up" */
    int failed;                 /* out of memory */
} squeeze_job;

/* The squeeze of a run of N particles from its bottom: particle k moves up by dup[k] from the
 * one below (from the floor for k = 0) and gets density rho[k] and pressure pr[k]. The same for
 * every run of N, so each thread computes it once per N (three pow() per particle were most of
 * the set-up time at 10^9 particles). */
typedef struct run_profile {
    size_t N, cap;
    double *dup;
    float *rho, *pr;
} run_profile;

static int run_profile_get(const squeeze_job *jb, size_t N, run_profile *rp)
{
    if (rp->N == N) return 0;
    if (N > rp->cap) {
        free(rp->dup);
        free(rp->rho);
        free(rp->pr);
        rp->cap = 2 * N;
        rp->dup = malloc(rp->cap * sizeof *rp->dup);
        rp->rho = malloc(rp->cap * sizeof *rp->rho);
        rp->pr = malloc(rp->cap * sizeof *rp->pr);
        if (!rp->dup || !rp->rho || !rp->pr) {
            rp->N = rp->cap = 0;
            return -1;
        }
    }
    const scene *s = jb->s;
    const double dx = s->spacing, g = fabs(s->gravity[jb->ga]);
    for (size_t k = 0; k < N; ++k) {
        /* spacing below particle k at the depth halfway down to its lower neighbour (or floor) */
        const double depth_mid = k == 0 ? (N - 0.25) * dx : (N - k) * dx;
        const double depth = (N - k - 0.5) * dx;
        const double rho_mid = eos_rho(s, s->rest_density * g * depth_mid);
        /* lambda with m S(lambda) = rho_mid, by linear interpolation in the table */
        double l = jb->lam[SQUEEZE_TABLE - 1];
        for (int t = 1; t < SQUEEZE_TABLE; ++t)
            if (jb->rho_of[t] >= rho_mid) {
                const double f = (rho_mid - jb->rho_of[t - 1]) / (jb->rho_of[t] - jb->rho_of[t - 1]);
                l = jb->lam[t - 1] + f * (jb->lam[t] - jb->lam[t - 1]);
                break;
            }
        /* the first row keeps the squeezed spacing to the first boundary layer (at -dx/2) */
        rp->dup[k] = k == 0 ? dx * (l - 0.5) : dx * l;
        rp->rho[k] = (float)eos_rho(s, s->rest_density * g * depth);
        rp->pr[k] = (float)eos_p(s, rp->rho[k]);
    }
    rp->N = N;
    return 0;
}

/* Whether the run whose lowest particle is i rests on a solid of the objects: the vertical line
 * below it meets a solid within RUN_REST spacings (a lattice point less than half a spacing from
 * a solid is left out, so the lowest one stands less than 1.5 spacings above a level surface, a
 * little more above a slope). */
#define RUN_REST 2.5
static int rests_on_solid(const squeeze_job *jb, uint32_t i)
{
    const scene *s = jb->s;
    if (s->n_objects == 0) return 0;
    const double dx = s->spacing;
    double x[3] = { 0, 0, 0 };
    for (int a = 0; a < s->dims; ++a) x[a] = jb->p->pos[4 * (size_t)i + a];
    x[jb->ga] -= jb->dir * RUN_REST * dx; /* "down" */
    return geom_phi(s, x, NULL) <= 0.0;
}

static void *squeeze_columns(void *arg)
{
    squeeze_job *jb = arg;
    particles *p = jb->p;
    const double dx = jb->s->spacing;
    col_entry *c = NULL;
    size_t cap = 0;
    run_profile rp = { 0 };
    for (size_t col = jb->c0; col < jb->c1 && !jb->failed; ++col) {
        const size_t first = jb->col_start[col], nc = jb->col_start[col + 1] - first;
        if (nc == 0) continue;
        if (nc > cap) {
            free(c);
            cap = 2 * nc;
            if (!(c = malloc(cap * sizeof *c))) {
                jb->failed = 1;
                break;
            }
        }
        for (size_t k = 0; k < nc; ++k) {
            const uint32_t i = jb->idx[first + k];
            c[k] = (col_entry){ jb->dir * p->pos[4 * (size_t)i + jb->ga], i };
        }
        size_t in_order = 1;
        while (in_order < nc && col_cmp(&c[in_order - 1], &c[in_order]) <= 0) ++in_order;
        if (in_order < nc) qsort(c, nc, sizeof *c, col_cmp); /* (a lattice block comes in order already) */
        for (size_t r0 = 0, r1; r0 < nc; r0 = r1) {
            /* a run: successive particles at most 1.5 dx apart */
            for (r1 = r0 + 1; r1 < nc; ++r1)
                if (c[r1].up - c[r1 - 1].up > 1.5 * dx) break;
            /* on the floor, or on a solid of the objects (an obstacle's top, a container's
             * bottom); else falling fluid, left as it is */
            const int on_floor = c[r0].up - jb->floor_up <= dx;
            if (!on_floor && !rests_on_solid(jb, c[r0].i)) continue;
            const size_t N = r1 - r0;
            if (run_profile_get(jb, N, &rp) != 0) {
                jb->failed = 1;
                break;
            }
            /* the level the squeeze starts from: the floor, or, on a solid, half a spacing below
             * the run's lowest particle, where the floor would be were the solid's surface on the
             * lattice's boundary (as an obstacle's flat top at a lattice plane is, with its first
             * layer of boundary particles a spacing below that particle): the lowest particle then
             * moves down as on the floor, (1 - lambda) dx, and keeps its lattice distance to a
             * sloping or curved surface within that */
            double up = on_floor ? jb->floor_up : c[r0].up - 0.5 * dx;
            for (size_t k = 0; k < N; ++k) {
                up += rp.dup[k];
                const size_t i = c[r0 + k].i;
                p->pos[4 * i + jb->ga] = (float)(jb->dir * up);
                p->rho[i] = rp.rho[k];
                p->pressure[i] = rp.pr[k];
            }
        }
    }
    free(c);
    free(rp.dup);
    free(rp.rho);
    free(rp.pr);
    return NULL;
}

/* One thread's share of the column pass of hydrostatic_init: for particles lo .. hi-1, the
 * range of the lattice keys across gravity of the fluid ones (kmin, kmax), or, once those are
 * known, the column of each (col[i]; UINT32_MAX for the others). */
typedef struct column_job {
    const scene *s;
    const particles *p;
    int ga;
    size_t lo, hi;
    long kmin[2], kmax[2];
    uint32_t *col; /* NULL: the range pass */
    long width0;   /* columns along the first key */
} column_job;

static void *column_pass(void *arg)
{
    column_job *j = arg;
    for (size_t i = j->lo; i < j->hi; ++i) {
        if (j->p->type[i] != PTYPE_FLUID) {
            if (j->col) j->col[i] = UINT32_MAX;
            continue;
        }
        long key[2];
        column_key(j->s, j->p, i, j->ga, key);
        if (j->col) {
            j->col[i] = (uint32_t)((key[0] - j->kmin[0]) + j->width0 * (key[1] - j->kmin[1]));
            continue;
        }
        for (int q = 0; q < 2; ++q) {
            if (key[q] < j->kmin[q]) j->kmin[q] = key[q];
            if (key[q] > j->kmax[q]) j->kmax[q] = key[q];
        }
    }
    return NULL;
}

/* init.h. Every vertical run of fluid
 * particles that rests on the tank floor or on a solid is compressed along gravity so that the
 * kernel sum on the squeezed lattice gives the density whose EOS pressure is rho0 |g| depth. Without
 * it the fluid starts at p = 0, falls, and overshoots to about twice the hydrostatic pressure. Only
 * when gravity lies along one axis; runs touching neither (falling fluid) are left as they are. */
sphsim_status init_hydrostatic(const scene *s, particles *p, int threads, sphsim_error *e)
{
    const double m = sph_fluid_mass(s);
    const int dims = s->dims;
    int ga = -1;
    for (int a = 0; a < dims; ++a)
        if (s->gravity[a] != 0.0) {
            if (ga >= 0) return SPHSIM_OK; /* gravity not along one axis: start at p = 0 */
            ga = a;
        }
    if (ga < 0 || p->n_fluid == 0) return SPHSIM_OK;
    const double dir = s->gravity[ga] < 0 ? 1.0 : -1.0; /* up = dir * x[ga] */
    const double dx = s->spacing;
    const double floor_up = dir > 0 ? s->tank.min[ga] : -s->tank.max[ga];

    /* density on a lattice squeezed along gravity by lambda in [0.9, 1] */
    double lam[SQUEEZE_TABLE], rho_of[SQUEEZE_TABLE];
    for (int k = 0; k < SQUEEZE_TABLE; ++k) {
        lam[k] = 1.0 - 0.1 * k / (SQUEEZE_TABLE - 1);
        rho_of[k] = m * lattice_sum_squeezed((int)s->kernel, dims, s->h, dx, ga, lam[k]);
        if (k > 0 && !(rho_of[k] > rho_of[k - 1])) return SPHSIM_OK; /* not monotonic: leave unsqueezed */
    }

    /* The fluid particles grouped by column (a counting sort on the lattice indices across
     * gravity, in index order), then each column sorted along "up" on its own, the columns spread
     * over threads: 8 bytes per particle (each one's column, and the fluid by column) and O(n) time,
     * where one sort of all of them took 32 bytes per particle and O(n log n) on one thread
     * (docs/performance.md, the largest run). The column keys are computed twice (their range,
     * then the columns), which costs less than keeping them. */
    const unsigned t = jobs_threads(p->n, threads, 1, JOBS_MAX);
    column_job cj[JOBS_MAX];
    for (unsigned j = 0; j < t; ++j)
        cj[j] =
            (column_job){ s,    p, ga, p->n * j / t, p->n * (j + 1) / t, { LONG_MAX, LONG_MAX }, { LONG_MIN, LONG_MIN },
                          NULL, 0 };
    jobs_run(column_pass, cj, sizeof *cj, t);
    long kmin[2] = { LONG_MAX, LONG_MAX }, kmax[2] = { LONG_MIN, LONG_MIN };
    for (unsigned j = 0; j < t; ++j)
        for (int q = 0; q < 2; ++q) {
            if (cj[j].kmin[q] < kmin[q]) kmin[q] = cj[j].kmin[q];
            if (cj[j].kmax[q] > kmax[q]) kmax[q] = cj[j].kmax[q];
        }
    const double width0 = (double)(kmax[0] - kmin[0]) + 1.0, width1 = (double)(kmax[1] - kmin[1]) + 1.0;
    /* the fluid lies in the tank, so its columns are at most the tank's: fewer than its wall
     * particles */
    if (!(width0 * width1 <= (double)p->n + 1.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "fluid.blocks: the fluid spans %.3g lattice columns, more than the %zu particles",
                           width0 * width1, p->n);
    const size_t ncol = (size_t)width0 * (size_t)width1;
    size_t *col_start = calloc(ncol + 1, sizeof *col_start);
    uint32_t *idx = malloc((p->n_fluid ? p->n_fluid : 1) * sizeof *idx);
    uint32_t *col = malloc((p->n ? p->n : 1) * sizeof *col);
    if (!col_start || !idx || !col) {
        free(col_start);
        free(idx);
        free(col);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the hydrostatic initial state");
    }
    for (unsigned j = 0; j < t; ++j) {
        memcpy(cj[j].kmin, kmin, sizeof kmin);
        cj[j].col = col;
        cj[j].width0 = (long)width0;
    }
    jobs_run(column_pass, cj, sizeof *cj, t);
    for (size_t i = 0; i < p->n; ++i)
        if (col[i] != UINT32_MAX) ++col_start[col[i] + 1];
    for (size_t k = 0; k < ncol; ++k) col_start[k + 1] += col_start[k];
    for (size_t i = 0; i < p->n; ++i)
        if (col[i] != UINT32_MAX) idx[col_start[col[i]]++] = (uint32_t)i;
    free(col);
    for (size_t k = ncol; k > 0; --k) col_start[k] = col_start[k - 1]; /* the scatter moved each start to its end */
    col_start[0] = 0;

    squeeze_job jobs[JOBS_MAX];
    for (unsigned j = 0; j < t; ++j)
        jobs[j] =
            (squeeze_job){ s, p, idx, col_start, ncol * j / t, ncol * (j + 1) / t, lam, rho_of, ga, dir, floor_up, 0 };
    jobs_run(squeeze_columns, jobs, sizeof *jobs, t);
    int failed = 0;
    for (unsigned j = 0; j < t; ++j) failed |= jobs[j].failed;
    free(col_start);
    free(idx);
    if (failed) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the hydrostatic initial state");
    return SPHSIM_OK;
}
