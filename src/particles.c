/* particles: allocation of the host structure-of-arrays. */
#include "particles.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

sph_status particles_alloc(particles *p, size_t n, sph_error *e)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    size_t m = n ? n : 1;
    p->pos = calloc(4 * m, sizeof *p->pos);
    p->vel = calloc(4 * m, sizeof *p->vel);
    p->rho = calloc(m, sizeof *p->rho);
    p->pressure = calloc(m, sizeof *p->pressure);
    p->mass = calloc(m, sizeof *p->mass);
    p->radius = calloc(m, sizeof *p->radius);
    p->id = calloc(m, sizeof *p->id);
    p->type = calloc(m, sizeof *p->type);
    if (!p->pos || !p->vel || !p->rho || !p->pressure || !p->mass || !p->radius || !p->id || !p->type) {
        particles_free(p);
        return SPH_FAIL(e, SPH_E_NOMEM, "out of host memory allocating %zu particles", n);
    }
    return SPH_OK;
}

void particles_free(particles *p)
{
    free(p->pos);
    free(p->vel);
    free(p->rho);
    free(p->pressure);
    free(p->mass);
    free(p->radius);
    free(p->id);
    free(p->type);
    memset(p, 0, sizeof *p);
}

/* One thread's share of particles_scatter_by_id: the ids lo .. hi-1 (rows of `out`). */
typedef struct gather_job {
    const particles *q;
    particles *p;
    uint32_t *inv;
    size_t lo, hi;
    size_t bad_row;  /* inv pass: the first row of `sorted` whose id is out of range (thread 0
                        only) or, in lo .. hi-1, appears a second time; n if none */
    int bad_twice;   /* that row's id appears twice (else it is out of range) */
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
    for (size_t k = g->lo; k < g->hi; ++k) memcpy(&p->pos[4 * k], &q->pos[4 * inv[k]], 16);
    for (size_t k = g->lo; k < g->hi; ++k) memcpy(&p->vel[4 * k], &q->vel[4 * inv[k]], 16);
    for (size_t k = g->lo; k < g->hi; ++k) {
        const uint32_t i = inv[k];
        p->id[k] = (uint32_t)k;
        p->type[k] = q->type[i];
        p->mass[k] = q->mass[i];
        p->rho[k] = q->rho[i];
        p->pressure[k] = q->pressure[i];
        p->radius[k] = q->radius[i];
    }
    return NULL;
}

/* Runs fn on jobs[0 .. t-1], jobs[0] on this thread and the others on their own (or here, one
 * after the other, if a thread cannot start), and waits for all. */
static void run_jobs(void *(*fn)(void *), gather_job *jobs, unsigned t)
{
    pthread_t th[64];
    unsigned m = 0;
    for (unsigned j = 1; j < t; ++j)
        if (pthread_create(&th[m], NULL, fn, &jobs[j]) == 0) ++m;
        else fn(&jobs[j]);
    fn(&jobs[0]);
    for (unsigned j = 0; j < m; ++j) pthread_join(th[j], NULL);
}

/* Threads for the gather of n rows: SPHSIM_WRITER_THREADS (1-64, a benchmark knob), else
 * half the host's processors (the other half is left to the time loop and, on a CPU device,
 * to the kernels), at most 8, and 1 below 2^18 rows, where starting threads costs more than
 * it saves. */
static unsigned gather_threads(size_t n)
{
    const char *v = getenv("SPHSIM_WRITER_THREADS");
    if (v && *v) {
        char *end;
        const unsigned long t = strtoul(v, &end, 10);
        if (*end == '\0' && t >= 1 && t <= 64) return (unsigned)t;
    }
    if (n < ((size_t)1 << 18)) return 1;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const long t = cpus / 2 > 8 ? 8 : cpus / 2;
    return t > 1 ? (unsigned)t : 1;
}

/* As a gather (out[k] = sorted[inv[k]] for each array in turn, inv the inverse of the id
 * permutation) rather than one scatter of every array at once: the writes go in order and only
 * the reads jump, which took half the time (11x10^6 particles on this project's 2-core machine:
 * 1.79 -> 0.87 s for ids in random order, 0.29 -> 0.15 s for ids shuffled within windows of
 * 4096; docs/performance.md, eighth session). inv also shows an id that appears twice. Both
 * passes run on gather_threads() threads, each over its own range of ids (fifteenth session);
 * the result, and the error for a corrupted state, are the same whatever their number. */
sph_status particles_scatter_by_id(const particles *q, particles *p, sph_error *e)
{
    const size_t n = q->n;
    uint32_t *inv = malloc((n ? n : 1) * sizeof *inv);
    if (!inv) return SPH_FAIL(e, SPH_E_NOMEM, "out of host memory for the id order of %zu particles", n);
    memset(inv, 0xff, n * sizeof *inv);
    unsigned t = gather_threads(n);
    if ((size_t)t > n) t = n ? (unsigned)n : 1;
    gather_job jobs[64];
    for (unsigned j = 0; j < t; ++j) jobs[j] = (gather_job){q, p, inv, n * j / t, n * (j + 1) / t, n, 0};
    run_jobs(invert_ids, jobs, t);
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
        return SPH_FAIL(e, SPH_E_DEVICE, "device returned particle id %u %s (of %zu): state corrupted", k,
                        twice ? "twice" : "out of range", n);
    }
    run_jobs(gather_rows, jobs, t);
    free(inv);
    return SPH_OK;
}
