/* motion: prescribed rigid motion of the tank and the objects (see motion.h). */
#include "motion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One segment's own motion at tau (s after its start): displacement q[0..2] and turn q[3], with
 * their first (dq) and second (ddq) derivatives. */
static void segment_at(const scene_motion_segment *g, double tau, double q[4], double dq[4], double ddq[4])
{
    for (int k = 0; k < 4; ++k) q[k] = dq[k] = ddq[k] = 0.0;
    if (g->type == MOTION_SINE || g->type == MOTION_ROTATION) {
        const double w = 2.0 * M_PI * g->frequency, s = sin(w * tau + g->phase), c = cos(w * tau + g->phase);
        const int k0 = g->type == MOTION_SINE ? 0 : 3, k1 = g->type == MOTION_SINE ? 3 : 4;
        for (int k = k0; k < k1; ++k) {
            const double A = g->amplitude[k - k0];
            q[k] = A * s;
            dq[k] = A * w * c;
            ddq[k] = -A * w * w * s;
        }
    } else if (g->type == MOTION_CONSTANT) {
        for (int k = 0; k < 3; ++k) {
            q[k] = g->velocity[k] * tau;
            dq[k] = g->velocity[k];
        }
    } else { /* MOTION_TABLE: rows (tau, dx, dy, dz, theta), linear between them, held beyond */
        const double *r = g->rows;
        const long n = g->n_rows;
        if (tau <= r[0] || n == 1) {
            for (int k = 0; k < 4; ++k) q[k] = r[1 + k];
            return;
        }
        if (tau >= r[5 * (n - 1)]) {
            for (int k = 0; k < 4; ++k) q[k] = r[5 * (n - 1) + 1 + k];
            return;
        }
        long lo = 0, hi = n - 1; /* r[5 lo] <= tau < r[5 hi] */
        while (hi - lo > 1) {
            const long mid = lo + (hi - lo) / 2;
            if (r[5 * mid] <= tau) lo = mid;
            else hi = mid;
        }
        const double *a = r + 5 * lo, *b = r + 5 * hi;
        const double f = (tau - a[0]) / (b[0] - a[0]);
        /* the acceleration: each row's from the slopes on either side (0 at the ends), linear
         * between rows */
        double acc[2][4] = { { 0 } };
        for (int e = 0; e < 2; ++e) {
            const long i = lo + e;
            if (i == 0 || i == n - 1) continue;
            const double *p = r + 5 * (i - 1), *c = r + 5 * i, *x = r + 5 * (i + 1);
            for (int k = 0; k < 4; ++k) {
                const double s0 = (c[1 + k] - p[1 + k]) / (c[0] - p[0]), s1 = (x[1 + k] - c[1 + k]) / (x[0] - c[0]);
                acc[e][k] = (s1 - s0) / (0.5 * (x[0] - p[0]));
            }
        }
        for (int k = 0; k < 4; ++k) {
            q[k] = a[1 + k] + f * (b[1 + k] - a[1 + k]);
            dq[k] = (b[1 + k] - a[1 + k]) / (b[0] - a[0]);
            ddq[k] = acc[0][k] + f * (acc[1][k] - acc[0][k]);
        }
    }
}

void motion_eval(const scene_motion *m, double t, motion_state *out)
{
    memset(out, 0, sizeof *out);
    double sum[4] = { 0, 0, 0, 0 };
    for (int s = 0; s < m->n_segments; ++s) {
        const scene_motion_segment *g = &m->seg[s];
        if (!(t > g->start)) break; /* segments are in time order */
        double q[4], dq[4], ddq[4], q0[4], d0[4], dd0[4];
        segment_at(g, 0.0, q0, d0, dd0);
        const int active = t < g->end;
        segment_at(g, (active ? t : g->end) - g->start, q, dq, ddq);
        for (int k = 0; k < 4; ++k) sum[k] += q[k] - q0[k];
        if (active)
            for (int k = 0; k < 3; ++k) {
                out->v[k] = dq[k];
                out->a[k] = ddq[k];
            }
        if (active) {
            out->omega = dq[3];
            out->alpha = ddq[3];
        }
    }
    for (int k = 0; k < 3; ++k) out->d[k] = sum[k];
    out->theta = sum[3];
}

void motion_rotation(const double axis[3], double theta, double R[9])
{
    const double c = cos(theta), s = sin(theta), C = 1.0 - c;
    const double x = axis[0], y = axis[1], z = axis[2];
    const double M[9] = { c + x * x * C,     x * y * C - z * s, x * z * C + y * s, y * x * C + z * s, c + y * y * C,
                          y * z * C - x * s, z * x * C - y * s, z * y * C + x * s, c + z * z * C };
    memcpy(R, M, sizeof M);
}

void motion_frame_at(const scene_motion *m, double t, motion_frame *f)
{
    motion_state st;
    motion_eval(m, t, &st);
    motion_rotation(m->axis, st.theta, f->R);
    memcpy(f->c, m->center, sizeof f->c);
    memcpy(f->d, st.d, sizeof f->d);
}

void motion_frame_to_rest(const motion_frame *f, const double x[3], double x0[3])
{
    double r[3];
    for (int k = 0; k < 3; ++k) r[k] = x[k] - f->c[k] - f->d[k];
    for (int k = 0; k < 3; ++k) x0[k] = f->c[k] + f->R[k] * r[0] + f->R[3 + k] * r[1] + f->R[6 + k] * r[2];
}

void motion_frame_place(const motion_frame *f, const double x0[3], double x[3])
{
    double r[3];
    for (int k = 0; k < 3; ++k) r[k] = x0[k] - f->c[k];
    for (int k = 0; k < 3; ++k)
        x[k] = f->c[k] + f->d[k] + f->R[3 * k] * r[0] + f->R[3 * k + 1] * r[1] + f->R[3 * k + 2] * r[2];
}

void motion_body_at(const scene_motion *m, double t, motion_body *out)
{
    motion_state st;
    motion_eval(m, t, &st);
    double R[9];
    motion_rotation(m->axis, st.theta, R);
    memset(out, 0, sizeof *out);
    for (int k = 0; k < 9; ++k) out->rot[k] = (float)R[k];
    for (int k = 0; k < 3; ++k) {
        out->pivot[k] = (float)m->center[k];
        out->disp[k] = (float)st.d[k];
        out->vel[k] = (float)st.v[k];
        out->acc[k] = (float)st.a[k];
        out->omega[k] = (float)(st.omega * m->axis[k]);
        out->alpha[k] = (float)(st.alpha * m->axis[k]);
    }
}

const scene_motion *motion_of(const scene *s, int body)
{
    if (body == 0) return &s->tank_motion;
    return body - 1 < s->n_objects ? &s->objects[body - 1].motion : NULL;
}

int motion_any(const scene *s)
{
    for (int b = 0; motion_of(s, b); ++b)
        if (motion_of(s, b)->n_segments > 0) return 1;
    return 0;
}

/* Widen [lo, hi] by the box [blo, bhi] placed by body m at time t (its 8 corners). */
static void sweep_at(const scene_motion *m, double t, const double blo[3], const double bhi[3], double lo[3],
                     double hi[3])
{
    motion_state st;
    motion_eval(m, t, &st);
    double R[9];
    motion_rotation(m->axis, st.theta, R);
    for (int c = 0; c < 8; ++c) {
        double r[3];
        for (int k = 0; k < 3; ++k) r[k] = ((c >> k) & 1 ? bhi[k] : blo[k]) - m->center[k];
        for (int k = 0; k < 3; ++k) {
            const double x = m->center[k] + st.d[k] + R[3 * k] * r[0] + R[3 * k + 1] * r[1] + R[3 * k + 2] * r[2];
            lo[k] = fmin(lo[k], x);
            hi[k] = fmax(hi[k], x);
        }
    }
}

/* Call fn at the times that sample body m's motion: each segment's start and end and 4096 points
 * between, and a table's rows. A segment without an end is sampled over a sine's or a turn's
 * period or its table, all of which a longer run repeats or holds; only a constant velocity
 * without an end runs on to t_end. */
static void sample_times(const scene_motion *m, double t_end, void (*fn)(double t, void *ctx), void *ctx)
{
    for (int s = 0; s < m->n_segments; ++s) {
        const scene_motion_segment *g = &m->seg[s];
        double t1 = g->end;
        if (!isfinite(t1))
            t1 = g->start + (g->type == MOTION_CONSTANT ? fmax(t_end - g->start, 0.0)
                             : g->type == MOTION_TABLE  ? g->rows[5 * (g->n_rows - 1)]
                                                        : 1.0 / g->frequency);
        const int n = 4096;
        for (int i = 0; i <= n; ++i) fn(g->start + (t1 - g->start) * i / n, ctx);
        for (long i = 0; g->type == MOTION_TABLE && i < g->n_rows; ++i)
            if (g->start + g->rows[5 * i] < t1) fn(g->start + g->rows[5 * i], ctx);
    }
}

typedef struct sweep_ctx {
    const scene_motion *m;
    double blo[3], bhi[3], *lo, *hi, reach, speed;
} sweep_ctx;

static void sweep_fn(double t, void *ctx)
{
    sweep_ctx *c = ctx;
    sweep_at(c->m, t, c->blo, c->bhi, c->lo, c->hi);
}

void motion_swept_box(const scene_motion *m, int dims, double t_end, double margin, double lo[3], double hi[3])
{
    if (m->n_segments == 0) return;
    sweep_ctx c = { m, { lo[0], lo[1], lo[2] }, { hi[0], hi[1], hi[2] }, lo, hi, 0, 0 };
    sample_times(m, t_end, sweep_fn, &c);
    for (int k = 0; k < dims; ++k) {
        lo[k] -= margin;
        hi[k] += margin;
    }
}

static void speed_fn(double t, void *ctx)
{
    sweep_ctx *c = ctx;
    motion_state st;
    motion_eval(c->m, t, &st);
    const double v = sqrt(st.v[0] * st.v[0] + st.v[1] * st.v[1] + st.v[2] * st.v[2]) + fabs(st.omega) * c->reach;
    c->speed = fmax(c->speed, v);
}

double motion_max_speed(const scene_motion *m, double reach, double t_end)
{
    sweep_ctx c = { m, { 0 }, { 0 }, NULL, NULL, reach, 0 };
    sample_times(m, t_end, speed_fn, &c);
    return c.speed;
}

unsigned motion_moving(const scene *s)
{
    unsigned bits = 0;
    for (int b = 0; motion_of(s, b); ++b)
        if (motion_of(s, b)->n_segments > 0) bits |= 1u << b;
    return bits;
}

sphsim_status motion_dev_create(motion_dev **out, ocl_device *d, const scene *s, cl_mem into, size_t offset,
                                sphsim_error *e)
{
    *out = NULL;
    if (!motion_moving(s)) return SPHSIM_OK;
    motion_dev *m = calloc(1, sizeof *m);
    if (!m) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    m->d = d;
    m->s = s;
    m->buf = into;
    m->offset = offset;
    m->owned = !into;
    const sphsim_status st = into ? SPHSIM_OK : device_alloc(d, sizeof m->ring[0], "bodies' motion", &m->buf, e);
    if (st != SPHSIM_OK) {
        free(m);
        return st;
    }
    *out = m;
    return SPHSIM_OK;
}

sphsim_status motion_dev_step(motion_dev *m, long step, sphsim_error *e)
{
    if (!m) return SPHSIM_OK;
    const unsigned k = m->next++ % MOTION_RING;
    if (m->done[k]) {
        CL_CHECK(e, clWaitForEvents(1, &m->done[k]));
        clReleaseEvent(m->done[k]);
        m->done[k] = NULL;
    }
    motion_body *f = m->ring[k];
    memset(f, 0, sizeof m->ring[k]);
    const double t0 = (double)step * m->s->dt, t1 = (double)(step + 1) * m->s->dt;
    for (int b = 0; motion_of(m->s, b); ++b) {
        motion_body_at(motion_of(m->s, b), t0, &f[b]);
        motion_body_at(motion_of(m->s, b), t1, &f[MOTION_MAX_BODIES + b]);
    }
    CL_CHECK(e,
             clEnqueueWriteBuffer(m->d->queue, m->buf, CL_FALSE, m->offset, sizeof m->ring[k], f, 0, NULL, &m->done[k]));
    return SPHSIM_OK;
}

void motion_dev_destroy(motion_dev *m)
{
    if (!m) return;
    for (int k = 0; k < MOTION_RING; ++k)
        if (m->done[k]) clReleaseEvent(m->done[k]);
    if (m->owned && m->buf) clReleaseMemObject(m->buf);
    free(m);
}
