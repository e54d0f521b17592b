/* writer: the snapshot writer thread (see writer.h). */
#include "writer.h"

#include "motion.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct snapshot_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled whenever a slot changes state or the writer stops */
    particles *staging[2];
    snapshot_job job[2];
    int full[2];      /* slot handed to the writer, not yet written */
    int next_acquire; /* slot the loop fills next */
    int next_write;   /* slot the writer takes next */
    int quit;
    sphsim_status st; /* first failure */
    sphsim_error err;
    /* set before the thread starts */
    output *out;
    const scene *s;
    particles *hp;
    FILE *log;
    int log_is_tty;
    long outside_base;
    int sidecar_said; /* the sidecar's problem is on the log (this thread only) */
    int threads; /* of the id order (particles_scatter_by_id) */
    /* written by the writer thread under mu, read under mu (writer_counts) */
    long snapshots;
    long n_outside;
    double busy_s;
    double phase_s[WRITER_PHASES]; /* busy_s split: copies, id order, file */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Fluid and sphere particles outside the tank box (host rows, in any order) at time `time` (s):
 * a moving tank's box where its motion has carried it (each point taken back to the tank's rest
 * frame). */
long writer_count_outside(const scene *s, const particles *p, double time)
{
    long n = 0;
    const int moves = s->tank_motion.n_segments > 0;
    motion_frame fr;
    if (moves) motion_frame_at(&s->tank_motion, time, &fr);
    for (size_t i = 0; i < p->n; ++i) {
        if (p->type[i] == PTYPE_BOUNDARY) continue;
        double y[3] = { p->pos[4 * i], p->pos[4 * i + 1], p->pos[4 * i + 2] };
        if (moves) motion_frame_to_rest(&fr, y, y);
        for (int a = 0; a < s->dims; ++a) {
            float x = moves ? (float)y[a] : p->pos[4 * i + a];
            if (!(x >= (float)s->tank.min[a] && x <= (float)s->tank.max[a])) {
                ++n;
                break;
            }
        }
    }
    return n;
}

void writer_note_sidecar(const output *out, FILE *log, int log_is_tty, int *said)
{
    const char *stale = output_sidecar_problem(out);
    if (stale && !*said && log)
        fprintf(log,
                "%swarning: %s; the snapshots are in the .h5 all the same (ParaView 5.12+ opens it directly), and "
                "the sidecar is written again with the next snapshot that can, or by sphsim --resume of the "
                "finished file\n",
                log_is_tty ? "\n" : "", stale);
    *said = stale != NULL;
}

/* Wait for the copies of one snapshot, scatter it into id order and write it; *n_outside: the
 * particles found outside the tank so far (the caller publishes it under the lock). */
static sphsim_status write_one(snapshot_writer *w, particles *q, snapshot_job *job, long *n_outside,
                               double phase_s[WRITER_PHASES], sphsim_error *e)
{
    double t = now_s(), t1;
    cl_int err = clWaitForEvents(1, &job->ready);
    if (err != CL_SUCCESS)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "reading a snapshot back from the device failed: %s",
                           cl_error_name(err));
    phase_s[0] += (t1 = now_s()) - t;
    t = t1;
    particles_from_lanes(q, w->s->mode == MODE_PARTICLES);
    particles *p = w->hp;
    SPHSIM_TRY(particles_scatter_by_id(q, p, w->threads, e));
    output_snapshot_info si = { 0 };
    si.time = job->time;
    si.step = job->step;
    si.n_contacts = job->n_contacts;
    si.n_outside = w->outside_base + job->put_backs + writer_count_outside(w->s, p, job->time);
    si.device_order = q->id;
    if (si.n_outside > w->n_outside && w->log) /* w->n_outside is written by this thread only */
        fprintf(w->log, "%swarning: %ld time(s) a particle was found outside the tank so far (t = %.6g s, step %ld)\n",
                w->log_is_tty ? "\n" : "", si.n_outside, si.time, si.step);
    *n_outside = si.n_outside;
    phase_s[1] += (t1 = now_s()) - t;
    t = t1;
    SPHSIM_TRY(gauge_blocks_wait(job->gauges, e));
    for (const gauge_block *b = job->gauges; b; b = b->next) {
        const output_gauge_rows rows = { b->step0, b->rows, b->offset, b->data };
        SPHSIM_TRY(output_write_gauges(w->out, &rows, e));
    }
    const sphsim_status st = output_write_state(w->out, p, &si, job->state, job->state_bytes, e);
    phase_s[2] += now_s() - t;
    if (st == SPHSIM_OK) writer_note_sidecar(w->out, w->log, w->log_is_tty, &w->sidecar_said);
    return st;
}

static void *writer_main(void *arg)
{
    snapshot_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        const int k = w->next_write;
        while (!w->full[k] && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->full[k]) break; /* quit with nothing left */
        const int failed = w->st != SPHSIM_OK;
        pthread_mutex_unlock(&w->mu);

        snapshot_job *job = &w->job[k];
        sphsim_error e;
        sphsim_status st = SPHSIM_OK;
        long n_outside = w->n_outside;
        double phase_s[WRITER_PHASES] = { 0 };
        const double t0 = now_s();
        if (failed) clWaitForEvents(1, &job->ready); /* after a failure the rest is dropped */
        else st = write_one(w, w->staging[k], job, &n_outside, phase_s, &e);
        const double busy = now_s() - t0;
        clReleaseEvent(job->ready);
        free(job->state);
        gauge_blocks_free(job->gauges);
        memset(job, 0, sizeof *job);

        pthread_mutex_lock(&w->mu);
        w->busy_s += busy;
        for (int ph = 0; ph < WRITER_PHASES; ++ph) w->phase_s[ph] += phase_s[ph];
        w->n_outside = n_outside;
        if (!failed && st == SPHSIM_OK) w->snapshots++;
        if (st != SPHSIM_OK && w->st == SPHSIM_OK) {
            w->st = st;
            w->err = e;
        }
        w->full[k] = 0;
        w->next_write = w->staging[1] ? 1 - k : 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

sphsim_status writer_start(snapshot_writer **out, output *o, const scene *s, particles *staging[2], particles *hp,
                           FILE *log, int log_is_tty, long outside_base, int threads, sphsim_error *e)
{
    *out = NULL;
    snapshot_writer *w = calloc(1, sizeof *w);
    if (!w) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    w->staging[0] = staging[0];
    w->staging[1] = staging[1];
    w->out = o;
    w->s = s;
    w->hp = hp;
    w->log = log;
    w->log_is_tty = log_is_tty;
    w->outside_base = outside_base;
    w->threads = threads;
    w->n_outside = outside_base;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "could not start the snapshot writer thread");
    }
    *out = w;
    return SPHSIM_OK;
}

/* The writer's first failure (under the lock). */
static sphsim_status failure(snapshot_writer *w, sphsim_error *e)
{
    if (w->st != SPHSIM_OK && e) *e = w->err;
    return w->st;
}

sphsim_status writer_acquire(snapshot_writer *w, particles **staging, sphsim_error *e)
{
    pthread_mutex_lock(&w->mu);
    const int k = w->next_acquire;
    while (w->full[k] && w->st == SPHSIM_OK) pthread_cond_wait(&w->cv, &w->mu);
    /* after a failure, wait for the slot anyway: its copies may still be in flight */
    while (w->full[k]) pthread_cond_wait(&w->cv, &w->mu);
    sphsim_status st = failure(w, e);
    pthread_mutex_unlock(&w->mu);
    *staging = w->staging[k];
    return st;
}

void writer_submit(snapshot_writer *w, const snapshot_job *job)
{
    pthread_mutex_lock(&w->mu);
    const int k = w->next_acquire;
    w->job[k] = *job;
    w->full[k] = 1;
    w->next_acquire = w->staging[1] ? 1 - k : 0;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

sphsim_status writer_drain(snapshot_writer *w, sphsim_error *e)
{
    pthread_mutex_lock(&w->mu);
    while (w->full[0] || w->full[1]) pthread_cond_wait(&w->cv, &w->mu);
    sphsim_status st = failure(w, e);
    pthread_mutex_unlock(&w->mu);
    return st;
}

void writer_counts(snapshot_writer *w, long *snapshots, long *n_outside, double *busy_s, double *phase_s)
{
    pthread_mutex_lock(&w->mu);
    *snapshots = w->snapshots;
    *n_outside = w->n_outside;
    *busy_s = w->busy_s;
    if (phase_s) memcpy(phase_s, w->phase_s, sizeof w->phase_s);
    pthread_mutex_unlock(&w->mu);
}

void writer_stop(snapshot_writer *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL); /* the thread writes what was submitted before it quits */
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
