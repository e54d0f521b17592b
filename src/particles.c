/* particles: allocation of the host structure-of-arrays. */
#include "particles.h"

#include "jobs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each array of a particles struct: its FIELD_* bit, its member, its bytes per particle; in
 * the order particles_place lays them out, widest first, so that every array of one block is
 * aligned to its element (the bytes of one-byte types last). */
#define PARTICLE_ARRAYS(X)                                                                                             \
    X(FIELD_POSITION, pos, 16)                                                                                         \
    X(FIELD_VELOCITY, vel, 16)                                                                                         \
    X(FIELD_ANGULAR_VELOCITY, omega, 12)                                                                               \
    X(FIELD_DENSITY, rho, 4)                                                                                           \
    X(FIELD_PRESSURE, pressure, 4) X(FIELD_ID, id, 4) X(FIELD_RADIUS, radius, 4) X(FIELD_MASS, mass, 4)                \
        X(FIELD_TYPE, type, 1)

sphsim_status particles_alloc_some(particles *p, size_t n, unsigned arrays, sphsim_error *e)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    const size_t m = n ? n : 1;
    int ok = 1;
#define ALLOC_(bit, member, bytes)                                                                                     \
    if (ok && (arrays & (bit))) ok = (p->member = calloc(m, bytes)) != NULL;
    PARTICLE_ARRAYS(ALLOC_)
#undef ALLOC_
    if (!ok) {
        particles_free(p);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory allocating %zu particles", n);
    }
    return SPHSIM_OK;
}

sphsim_status particles_alloc(particles *p, size_t n, sphsim_error *e)
{
    return particles_alloc_some(p, n, FIELDS_ALL, e);
}

unsigned particles_arrays(const particles *p)
{
    unsigned a = 0;
#define HAS_(bit, member, bytes) a |= p->member ? (unsigned)(bit) : 0u;
    PARTICLE_ARRAYS(HAS_)
#undef HAS_
    return a;
}

size_t particles_row_bytes(unsigned arrays)
{
    size_t b = 0;
#define BYTES_(bit, member, bytes) b += (arrays & (bit)) ? (bytes) : 0;
    PARTICLE_ARRAYS(BYTES_)
#undef BYTES_
    return b;
}

void particles_place(particles *p, size_t n, unsigned arrays, void *mem)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    char *at = mem;
#define PLACE_(bit, member, bytes)                                                                                     \
    if (arrays & (bit)) {                                                                                              \
        p->member = (void *)at;                                                                                        \
        at += (bytes)*n;                                                                                               \
    }
    PARTICLE_ARRAYS(PLACE_)
#undef PLACE_
}

/* One thread's rows lo .. hi-1 of particles_touch. */
typedef struct touch_job {
    particles *p;
    size_t lo, hi;
} touch_job;

static void *touch_rows(void *arg)
{
    const touch_job *j = arg;
    particles *p = j->p;
#define TOUCH_(bit, member, bytes)                                                                                     \
    if (p->member) memset((char *)p->member + (bytes)*j->lo, 0, (bytes) * (j->hi - j->lo));
    PARTICLE_ARRAYS(TOUCH_)
#undef TOUCH_
    return NULL;
}

void particles_touch(particles *p, int threads)
{
    const unsigned t = jobs_threads(p->n, threads, 1, JOBS_MAX);
    touch_job jobs[JOBS_MAX];
    for (unsigned j = 0; j < t; ++j) jobs[j] = (touch_job){ p, p->n * j / t, p->n * (j + 1) / t };
    jobs_run(touch_rows, jobs, sizeof *jobs, t);
}

void particles_keep(particles *p, unsigned arrays)
{
#define DROP_(bit, member, bytes)                                                                                      \
    if (!(arrays & (bit))) {                                                                                           \
        free(p->member);                                                                                               \
        p->member = NULL;                                                                                              \
    }
    PARTICLE_ARRAYS(DROP_)
#undef DROP_
}

void particles_free(particles *p)
{
    particles_keep(p, 0);
    memset(p, 0, sizeof *p);
}

/* One thread's share of particles_scatter_by_id: the ids lo .. hi-1 (rows of `out`). */
typedef struct gather_job {
    const particles *q;
    particles *p;
    uint32_t *inv;
    size_t lo, hi;
    size_t bad_row; /* inv pass: the first row of `sorted` whose id is out of range (thread 0
                        only) or, in lo .. hi-1, appears a second time; n if none */
    int bad_twice;  /* that row's id appears twice (else it is out of range) */
} gather_job;

/* inv[k] = the row of `sorted` with id k, for k in lo .. hi-1: every thread reads all the ids
 * in order and writes only its own range (no two threads write one word, so none need
 * atomics), and notes the first id out of range (thread 0) or seen twice in its range. */
static void *invert_ids(void *arg)
{
    gather_job *g = arg;
    const size_t n = g->q->n;
    const uint32_t *id = g->q->id;
    uint32_t *inv = g->inv;
    g->bad_row = n;
    for (size_t i = 0; i < n; ++i) {
        const uint32_t k = id[i];
        if (k >= g->lo && k < g->hi) {
            if (inv[k] != UINT32_MAX) {
                g->bad_row = i;
                g->bad_twice = 1;
                break;
            }
            inv[k] = (uint32_t)i;
        } else if (k >= n && g->lo == 0) {
            g->bad_row = i;
            g->bad_twice = 0;
            break;
        }
    }
    return NULL;
}

/* Rows lo .. hi-1 of `out` from `sorted` through inv (out[k] = sorted[inv[k]]). */
static void *gather_rows(void *arg)
{
    const gather_job *g = arg;
    const particles *q = g->q;
    particles *p = g->p;
    const uint32_t *inv = g->inv;
    if (p->pos && q->pos)
        for (size_t k = g->lo; k < g->hi; ++k) memcpy(&p->pos[4 * k], &q->pos[4 * inv[k]], 16);
    if (p->vel && q->vel)
        for (size_t k = g->lo; k < g->hi; ++k) memcpy(&p->vel[4 * k], &q->vel[4 * inv[k]], 16);
    if (p->omega && q->omega)
        for (size_t k = g->lo; k < g->hi; ++k) memcpy(&p->omega[3 * k], &q->omega[3 * inv[k]], 12);
    if (p->id)
        for (size_t k = g->lo; k < g->hi; ++k) p->id[k] = (uint32_t)k;
    if (p->type && q->type)
        for (size_t k = g->lo; k < g->hi; ++k) p->type[k] = q->type[inv[k]];
    float *const dst[4] = { p->mass, p->rho, p->pressure, p->radius };
    const float *const src[4] = { q->mass, q->rho, q->pressure, q->radius };
    for (int a = 0; a < 4; ++a)
        if (dst[a] && src[a])
            for (size_t k = g->lo; k < g->hi; ++k) dst[a][k] = src[a][inv[k]];
    return NULL;
}

/* As a gather (out[k] = sorted[inv[k]] for each array in turn, inv the inverse of the id
 * permutation) rather than one scatter of every array at once: the writes go in order and only
 * the reads jump, which took half the time (11x10^6 particles on this project's 2-core machine:
 * 1.79 -> 0.87 s for ids in random order, 0.29 -> 0.15 s for ids shuffled within windows of
 * 4096; docs/performance.md). inv also shows an id that appears twice. Both passes run on
 * several threads (jobs.h), each over its own range of ids; the result, and the error for a
 * corrupted state, are the same whatever their number. */
sphsim_status particles_scatter_by_id(const particles *q, particles *p, int threads, sphsim_error *e)
{
    const size_t n = q->n;
    uint32_t *inv = malloc((n ? n : 1) * sizeof *inv);
    if (!inv) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the id order of %zu particles", n);
    memset(inv, 0xff, n * sizeof *inv);
    /* half the host's processors (the other half is left to the time loop and, on a CPU
     * device, to the kernels), at most 8 */
    unsigned t = jobs_threads(n, threads, 2, 8);
    if ((size_t)t > n) t = n ? (unsigned)n : 1;
    gather_job jobs[JOBS_MAX];
    for (unsigned j = 0; j < t; ++j) jobs[j] = (gather_job){ q, p, inv, n * j / t, n * (j + 1) / t, n, 0 };
    jobs_run(invert_ids, jobs, sizeof *jobs, t);
    /* the first bad row over all threads: the one a single pass in row order stops at */
    size_t bad = n;
    int twice = 0;
    for (unsigned j = 0; j < t; ++j)
        if (jobs[j].bad_row < bad) {
            bad = jobs[j].bad_row;
            twice = jobs[j].bad_twice;
        }
    if (bad < n) {
        const uint32_t k = q->id[bad];
        free(inv);
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "device returned particle id %u %s (of %zu): state corrupted", k,
                           twice ? "twice" : "out of range", n);
    }
    jobs_run(gather_rows, jobs, sizeof *jobs, t);
    free(inv);
    return SPHSIM_OK;
}

void particles_from_lanes(particles *p, int spheres)
{
    if (p->mass)
        for (size_t i = 0; i < p->n; ++i) p->mass[i] = p->pos[4 * i + 3];
    if (spheres && p->radius)
        for (size_t i = 0; i < p->n; ++i) p->radius[i] = p->vel[4 * i + 3];
}
