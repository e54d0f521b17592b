/* gauges: see gauges.h. */
#include "gauges.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/gauge_shared.h"

/* A height gauge's samples: every half particle spacing up the tank, at most this many. */
#define GAUGE_MAX_LINE_POINTS 8192

struct gauges {
    ocl_device *d;
    const scene *s;
    int n; /* gauges */
    cl_program prog;
    cl_kernel k_probe, k_force, k_force_sum, k_finish;
    cl_mem desc, points, sums, partial, force, chunk, params, geom_grid;
    cl_mem wall_ref; /* the SPH solver's walls' (rest position, body) (sph_wall_ref) */
    int force_object[SCENE_MAX_GAUGES]; /* the objects the force gauges ask for (-1 the tank), a
                                           slot each in `force` */
    int n_force;
    cl_uint n_points;
    size_t force_local, sum_local; /* work-groups of gauge_force and gauge_force_sum */
    size_t partial_groups;         /* gauge_force's partial sums that `partial` holds */
    long chunk_steps;
    long start;           /* the first step sampled */
    long step0;           /* the first step whose rows are not taken yet */
    size_t *offset;       /* gauge k's rows in the chunk, from this float */
    gauge_block *pending; /* chunks taken before their snapshot */
};

int gauge_cols(const scene *s, const scene_gauge *g)
{
    switch (g->type) {
    case GAUGE_PRESSURE:
    case GAUGE_HEIGHT: return 1;
    case GAUGE_VELOCITY: return s->dims;
    default: return s->dims == 3 ? 6 : 3;
    }
}

/* Column names and units per type, [type][2D or 3D]; 2D forces per metre of depth, as the 2D
 * masses are. */
static const char *const COL_NAMES[4][2] = {
    { "p", "p" }, { "vx,vy", "vx,vy,vz" }, { "height", "height" }, { "Fx,Fy,Mz", "Fx,Fy,Fz,Mx,My,Mz" }
};
static const char *const COL_UNITS[4][2] = {
    { "Pa", "Pa" }, { "m/s,m/s", "m/s,m/s,m/s" }, { "m", "m" }, { "N/m,N/m,N m/m", "N,N,N,N m,N m,N m" }
};

const char *gauge_col_names(const scene *s, const scene_gauge *g) { return COL_NAMES[g->type][s->dims == 3]; }
const char *gauge_col_units(const scene *s, const scene_gauge *g) { return COL_UNITS[g->type][s->dims == 3]; }

long gauge_rows_to(const scene_gauge *g, long last) { return last < 0 ? 0 : last / g->every + 1; }

/* Multiples of e in [a, b). */
static long multiples(long a, long b, long e) { return b <= a ? 0 : (b - 1) / e - (a + e - 1) / e + 1; }

/* Probe points of gauge g: 1 for a point, the line's samples for a height, none for a force. */
static int line_points(const scene *s, double *dz)
{
    const int up = s->dims - 1;
    const double height = s->tank.max[up] - s->tank.min[up];
    double step = 0.5 * s->spacing;
    int m = (int)floor(height / step) + 1;
    if (m > GAUGE_MAX_LINE_POINTS) {
        m = GAUGE_MAX_LINE_POINTS;
        step = height / (m - 1);
    }
    *dz = step;
    return m;
}

static int gauge_points(const scene *s, const scene_gauge *g)
{
    double dz;
    if (g->type == GAUGE_FORCE) return 0;
    return g->type == GAUGE_HEIGHT ? line_points(s, &dz) : 1;
}

static size_t chunk_floats(const scene *s, long chunk_steps, size_t *offset)
{
    size_t total = 0;
    for (int k = 0; k < s->n_gauges; ++k) {
        if (offset) offset[k] = total;
        total += (size_t)(chunk_steps / s->gauges[k].every + 1) * (size_t)gauge_cols(s, &s->gauges[k]);
    }
    return total;
}

/* The largest power of two <= min(want, the kernel's and the device's limit). */
static size_t pow2_local(const ocl_device *d, cl_kernel k, size_t want)
{
    size_t lim = device_local_limit(d, &k, 1);
    if (lim == 0 || lim > d->max_wg) lim = d->max_wg;
    if (want > lim) want = lim;
    size_t p = 1;
    while (2 * p <= want) p *= 2;
    return p;
}

sphsim_status gauges_create(gauges **out, ocl_device *d, const scene *s, const char *sph_options, cl_mem params_buf,
                            cl_mem geom_grid, cl_mem wall_ref, long first_step, int resumed, long chunk_steps, sphsim_error *e)
{
    *out = NULL;
    if (s->n_gauges == 0) return SPHSIM_OK;
    gauges *g = calloc(1, sizeof *g);
    if (!g) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    g->d = d;
    g->s = s;
    g->n = s->n_gauges;
    g->params = params_buf;
    g->geom_grid = geom_grid;
    g->wall_ref = wall_ref;
    g->chunk_steps = chunk_steps < 1 ? 1 : chunk_steps;
    g->start = resumed ? first_step + 1 : first_step;
    g->step0 = g->start;
    g->offset = calloc((size_t)g->n, sizeof *g->offset);
    gauge_desc *desc = calloc((size_t)g->n, sizeof *desc);
    sphsim_status st = g->offset && desc ? SPHSIM_OK : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    const size_t floats = chunk_floats(s, g->chunk_steps, g->offset);
    /* the probe points, and each gauge's descriptor */
    const int up = s->dims - 1;
    double centre[3] = { 0, 0, 0 };
    for (int a = 0; a < s->dims; ++a) centre[a] = 0.5 * (s->tank.min[a] + s->tank.max[a]);
    size_t np = 0;
    for (int k = 0; k < g->n; ++k) np += (size_t)gauge_points(s, &s->gauges[k]);
    float *pts = calloc(np ? 4 * np : 4, sizeof *pts);
    if (!pts && st == SPHSIM_OK) st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    size_t p = 0;
    for (int k = 0; k < g->n && st == SPHSIM_OK; ++k) {
        const scene_gauge *sg = &s->gauges[k];
        gauge_desc *q = &desc[k];
        q->type = (dev_u32)sg->type;
        q->first_point = (dev_u32)p;
        q->n_points = (dev_u32)gauge_points(s, sg);
        q->every = (dev_u32)sg->every;
        q->cols = (dev_u32)gauge_cols(s, sg);
        q->offset = (dev_u32)g->offset[k];
        q->cap = (dev_u32)(g->chunk_steps / sg->every + 1);
        for (int a = 0; a < 3; ++a) q->ref[a] = (float)(sg->point[a] - centre[a]);
        double dz = 0.0;
        if (sg->type == GAUGE_HEIGHT) line_points(s, &dz);
        q->z0 = 0.0f;
        q->dz = (float)dz;
        for (dev_u32 m = 0; m < q->n_points; ++m, ++p) {
            for (int a = 0; a < 3; ++a) pts[4 * p + a] = (float)sg->point[a];
            if (sg->type == GAUGE_HEIGHT) pts[4 * p + up] = (float)(s->tank.min[up] + m * dz);
        }
        if (sg->type == GAUGE_FORCE) { /* a slot per object */
            int slot = 0;
            while (slot < g->n_force && g->force_object[slot] != sg->object_index) ++slot;
            if (slot == g->n_force) g->force_object[g->n_force++] = sg->object_index;
            q->force_slot = (dev_u32)slot;
        }
    }
    g->n_points = (cl_uint)np;
    if (st == SPHSIM_OK) {
        st = device_build(d, "gauges.cl", sph_options, &g->prog, e);
        if (st == SPHSIM_OK) st = device_kernel(g->prog, "gauge_probe", &g->k_probe, e);
        if (st == SPHSIM_OK) st = device_kernel(g->prog, "gauge_force", &g->k_force, e);
        if (st == SPHSIM_OK) st = device_kernel(g->prog, "gauge_force_sum", &g->k_force_sum, e);
        if (st == SPHSIM_OK) st = device_kernel(g->prog, "gauge_finish", &g->k_finish, e);
    }
    if (st == SPHSIM_OK) {
        g->force_local = pow2_local(d, g->k_force, 256);
        g->sum_local = pow2_local(d, g->k_force_sum, 256);
        st = device_alloc(d, sizeof(gauge_desc) * (size_t)g->n, "gauge descriptors", &g->desc, e);
        if (st == SPHSIM_OK) st = device_alloc(d, 16 * (np ? np : 1), "gauge points", &g->points, e);
        if (st == SPHSIM_OK) st = device_alloc(d, 32 * (np ? np : 1), "gauge probe sums", &g->sums, e);
        const size_t fb = 32 * (size_t)(g->n_force ? g->n_force : 1);
        if (st == SPHSIM_OK) st = device_alloc(d, fb, "gauge forces", &g->force, e);
        if (st == SPHSIM_OK) st = device_alloc(d, 4 * floats, "gauge rows", &g->chunk, e);
        if (st == SPHSIM_OK) st = device_write(d, g->desc, 0, sizeof(gauge_desc) * (size_t)g->n, desc, e);
        if (st == SPHSIM_OK && np) st = device_write(d, g->points, 0, 16 * np, pts, e);
        static const float zero[8 * SCENE_MAX_GAUGES] = { 0 };
        if (st == SPHSIM_OK) st = device_write(d, g->force, 0, fb, zero, e);
    }
    free(pts);
    free(desc);
    if (st != SPHSIM_OK) {
        gauges_destroy(g);
        return st;
    }
    *out = g;
    return SPHSIM_OK;
}

void gauges_destroy(gauges *g)
{
    if (!g) return;
    cl_kernel ks[] = { g->k_probe, g->k_force, g->k_force_sum, g->k_finish };
    device_release_kernels(ks, 4);
    cl_mem ms[] = { g->desc, g->points, g->sums, g->partial, g->force, g->chunk };
    for (size_t k = 0; k < sizeof ms / sizeof *ms; ++k)
        if (ms[k]) clReleaseMemObject(ms[k]);
    if (g->prog) clReleaseProgram(g->prog);
    gauge_blocks_free(g->pending);
    free(g->offset);
    free(g);
}

/* Take the rows of [step0, step1) into a new block, its copies enqueued. */
static sphsim_status take_block(gauges *g, long step1, gauge_block **out, sphsim_error *e)
{
    *out = NULL;
    if (step1 <= g->step0) return SPHSIM_OK;
    const scene *s = g->s;
    gauge_block *b = calloc(1, sizeof *b);
    if (!b) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    b->step0 = g->step0;
    b->step1 = step1;
    b->offset = calloc((size_t)g->n, sizeof *b->offset);
    b->rows = calloc((size_t)g->n, sizeof *b->rows);
    size_t total = 0;
    for (int k = 0; k < g->n; ++k) {
        b->rows[k] = multiples(g->step0, step1, s->gauges[k].every);
        b->offset[k] = total;
        total += (size_t)b->rows[k] * (size_t)gauge_cols(s, &s->gauges[k]);
    }
    b->data = malloc(4 * (total ? total : 1));
    if (!b->offset || !b->rows || !b->data) {
        gauge_blocks_free(b);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    }
    cl_event last = NULL;
    for (int k = 0; k < g->n; ++k) {
        const size_t bytes = 4 * (size_t)b->rows[k] * (size_t)gauge_cols(s, &s->gauges[k]);
        if (!bytes) continue;
        if (last) clReleaseEvent(last);
        last = NULL;
        cl_int err = clEnqueueReadBuffer(g->d->queue, g->chunk, CL_FALSE, 4 * g->offset[k], bytes,
                                         b->data + b->offset[k], 0, NULL, &last);
        if (err != CL_SUCCESS) {
            gauge_blocks_free(b);
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "reading the gauges' rows: OpenCL error %d", (int)err);
        }
    }
    b->ready = last;
    g->step0 = step1;
    *out = b;
    return SPHSIM_OK;
}

static void append(gauge_block **list, gauge_block *b)
{
    while (*list) list = &(*list)->next;
    *list = b;
}

sphsim_status gauges_sample(gauges *g, long step, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                            const dev_state *st, sphsim_error *e)
{
    if (!g || step < g->start) return SPHSIM_OK;
    int due = 0;
    for (int k = 0; k < g->n; ++k) due |= step % g->s->gauges[k].every == 0;
    if (!due) return SPHSIM_OK;
    if (step - g->step0 >= g->chunk_steps) { /* the chunk is full: its rows wait for the next take */
        gauge_block *b = NULL;
        SPHSIM_TRY(take_block(g, step, &b, e));
        append(&g->pending, b);
    }
    ocl_device *d = g->d;
    if (g->n_points) {
        const karg a[] = { KARG("n_points", g->n_points), KARG("points", g->points),   KARG("pos", st->pos),
                           KARG("vel", st->vel),          KARG("pos_p", st->pos_p),    KARG("cell_start", cell_start),
                           KARG("cell_end", cell_end),    KARG("gp", grid_params_buf), KARG("P", g->params),
                           KARG("sums", g->sums) };
        SPHSIM_TRY(device_set_args(d, g->k_probe, a, 10, e));
        SPHSIM_TRY(device_run1d(d, g->k_probe, g->n_points, 64, e));
    }
    for (int slot = 0; slot < g->n_force; ++slot) {
        const scene *s = g->s;
        const cl_uint n = (cl_uint)st->n;
        cl_float4 centre = { { 0, 0, 0, 0 } };
        for (int a = 0; a < s->dims; ++a) centre.s[a] = (float)(0.5 * (s->tank.min[a] + s->tank.max[a]));
        size_t groups = (st->n + g->force_local - 1) / g->force_local;
        if (groups == 0) groups = 1;
        if (groups > g->partial_groups) { /* the first sample (or more particles) */
            if (g->partial) clReleaseMemObject(g->partial);
            g->partial = NULL;
            g->partial_groups = 0;
            SPHSIM_TRY(device_alloc(d, 32 * groups, "gauge force sums", &g->partial, e));
            g->partial_groups = groups;
        }
        const karg a[] = { KARG("n", n),
                           KARG("pos", st->pos),
                           KARG("vel", st->vel),
                           KARG("pos_p", st->pos_p),
                           KARG("type", st->type),
                           KARG("cell_start", cell_start),
                           KARG("cell_end", cell_end),
                           KARG("gp", grid_params_buf),
                           KARG("P", g->params),
                           KARG("centre", centre),
                           KARG("object", g->force_object[slot]),
                           KARG("geom_grid", g->geom_grid),
                           KARG("id", st->id),
                           KARG("wall_ref", g->wall_ref),
                           KARG("partial", g->partial),
                           KARG_LOCAL("scratch", 24 * g->force_local) };
        SPHSIM_TRY(device_set_args(d, g->k_force, a, (int)(sizeof a / sizeof a[0]), e));
        SPHSIM_TRY(device_launch(d, g->k_force, groups * g->force_local, g->force_local, NULL, e));
        const cl_uint ng = (cl_uint)groups;
        const cl_uint slot_u = (cl_uint)slot;
        const karg b[] = { KARG("n_groups", ng), KARG("partial", g->partial), KARG("slot", slot_u),
                           KARG("out", g->force), KARG_LOCAL("scratch", 24 * g->sum_local) };
        SPHSIM_TRY(device_set_args(d, g->k_force_sum, b, 5, e));
        SPHSIM_TRY(device_launch(d, g->k_force_sum, g->sum_local, g->sum_local, NULL, e));
    }
    const cl_uint ng = (cl_uint)g->n;
    const cl_ulong step_u = (cl_ulong)step, step0_u = (cl_ulong)g->step0;
    const karg f[] = { KARG("n_gauges", ng),    KARG("G", g->desc),      KARG("sums", g->sums),
                       KARG("force", g->force), KARG("at_step", step_u), KARG("from_step", step0_u),
                       KARG("chunk", g->chunk) };
    SPHSIM_TRY(device_set_args(d, g->k_finish, f, 7, e));
    return device_run1d(d, g->k_finish, (size_t)g->n, 0, e);
}

sphsim_status gauges_take(gauges *g, long step1, gauge_block **out, sphsim_error *e)
{
    *out = NULL;
    if (!g) return SPHSIM_OK;
    gauge_block *b = NULL;
    SPHSIM_TRY(take_block(g, step1, &b, e));
    append(&g->pending, b);
    *out = g->pending;
    g->pending = NULL;
    return SPHSIM_OK;
}

sphsim_status gauge_blocks_wait(gauge_block *b, sphsim_error *e)
{
    for (; b; b = b->next) {
        if (!b->ready) continue;
        const cl_int err = clWaitForEvents(1, &b->ready);
        clReleaseEvent(b->ready);
        b->ready = NULL;
        if (err != CL_SUCCESS)
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "reading the gauges' rows: OpenCL error %d", (int)err);
    }
    return SPHSIM_OK;
}

void gauge_blocks_free(gauge_block *b)
{
    while (b) {
        gauge_block *next = b->next;
        if (b->ready) {
            clWaitForEvents(1, &b->ready); /* the copy writes into data */
            clReleaseEvent(b->ready);
        }
        free(b->data);
        free(b->offset);
        free(b->rows);
        free(b);
        b = next;
    }
}
