/* gauges: see gauges.h. */
#include "gauges.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "init.h"
#include "../kernels/gauge_shared.h"

/* A height gauge's samples: every half particle spacing up the tank, at most this many. */
#define GAUGE_MAX_LINE_POINTS 8192

struct gauges {
    ocl_device *d;
    const scene *s;
    int n; /* gauges */
    sph_solver *sol; /* whose boundary stage sums the walls' forces (sph_measure_setup) */
    cl_program prog;
    cl_kernel k_probe, k_rows_sum, k_finish;
    cl_mem desc, points, sums, rows, chunk; /* rows: gauge_rows_sum's force sums */
    int force_object[SCENE_MAX_GAUGES]; /* the objects the force gauges ask for (-1 the tank), a
                                           slot each (sph_measure_setup) */
    int n_force;
    cl_uint n_points;
    size_t probe_local, sum_local, finish_local; /* work-groups of the three kernels */
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

/* Work-groups of gauge_rows_sum's first pass (of the boundary stage's rows; the second adds
 * these). */
#define GAUGE_SUM_GROUPS 64

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

/* The walls' slots in sol's boundary stage: the tank's walls (ids below the objects' boundary
 * particles) and each object's boundary particles (init_boundary_objects), in g->force_object's
 * slots, or none. */
static sphsim_status measure_setup(gauges *g, sphsim_error *e)
{
    const scene *s = g->s;
    cl_uint tank_slot = (cl_uint)g->n_force, n_obj_force = 0;
    uint8_t by_object[SCENE_MAX_OBJECTS];
    memset(by_object, 0xff, sizeof by_object);
    for (int k = 0; k < g->n_force; ++k) {
        if (g->force_object[k] < 0) tank_slot = (cl_uint)k;
        else {
            by_object[g->force_object[k]] = (uint8_t)k;
            ++n_obj_force;
        }
    }
    const long n_obj = init_boundary_objects(s, NULL); /* the tank's walls are the ids below them */
    uint8_t *slot = calloc((size_t)(n_obj > 0 ? n_obj : 1), 1);
    int8_t *obj = calloc((size_t)(n_obj > 0 ? n_obj : 1), 1);
    sphsim_status st = slot && obj ? SPHSIM_OK : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    if (st == SPHSIM_OK) {
        if (n_obj > 0) init_boundary_objects(s, obj);
        for (long k = 0; k < n_obj; ++k) slot[k] = obj[k] >= 0 ? by_object[obj[k]] : 0xff;
        double centre[3] = { 0, 0, 0 };
        for (int a = 0; a < s->dims; ++a) centre[a] = 0.5 * (s->tank.min[a] + s->tank.max[a]);
        /* the objects' walls count only for their own gauges (an object without one: none) */
        const long first = s->n_fluid + s->n_boundary - n_obj;
        st = sph_measure_setup(g->sol, (cl_uint)first, tank_slot, slot, (size_t)n_obj, (cl_uint)g->n_force, centre,
                               e);
    }
    free(slot);
    free(obj);
    return st;
}

sphsim_status gauges_create(gauges **out, ocl_device *d, const scene *s, sph_solver *sol, long first_step, int resumed,
                            long chunk_steps, sphsim_error *e)
{
    *out = NULL;
    if (s->n_gauges == 0) return SPHSIM_OK;
    gauges *g = calloc(1, sizeof *g);
    if (!g) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    g->d = d;
    g->s = s;
    g->n = s->n_gauges;
    g->sol = sol;
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
        st = device_build(d, "gauges.cl", sph_build_options(sol), &g->prog, e);
        if (st == SPHSIM_OK) st = device_kernel(g->prog, "gauge_probe", &g->k_probe, e);
        if (st == SPHSIM_OK) st = device_kernel(g->prog, "gauge_rows_sum", &g->k_rows_sum, e);
        if (st == SPHSIM_OK) st = device_kernel(g->prog, "gauge_finish", &g->k_finish, e);
    }
    if (st == SPHSIM_OK && g->n_force > 0) st = measure_setup(g, e);
    if (st == SPHSIM_OK) {
        /* 4 teams of 32 lanes a probe point (a lane per cell of its block, 27 in 3D), 64
         * work-items a line's samples */
        g->probe_local = pow2_local(d, g->k_probe, 128);
        g->sum_local = pow2_local(d, g->k_rows_sum, 256);
        g->finish_local = pow2_local(d, g->k_finish, 64);
        st = device_alloc(d, sizeof(gauge_desc) * (size_t)g->n, "gauge descriptors", &g->desc, e);
        if (st == SPHSIM_OK) st = device_alloc(d, 16 * (np ? np : 1), "gauge points", &g->points, e);
        if (st == SPHSIM_OK) st = device_alloc(d, 32 * (np ? np : 1), "gauge probe sums", &g->sums, e);
        const size_t fb = 32 * (size_t)(g->n_force ? g->n_force : 1);
        if (st == SPHSIM_OK) st = device_alloc(d, fb * GAUGE_SUM_GROUPS, "gauge force sums", &g->rows, e);
        if (st == SPHSIM_OK) st = device_alloc(d, 4 * floats, "gauge rows", &g->chunk, e);
        if (st == SPHSIM_OK) st = device_write(d, g->desc, 0, sizeof(gauge_desc) * (size_t)g->n, desc, e);
        if (st == SPHSIM_OK && np) st = device_write(d, g->points, 0, 16 * np, pts, e);
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
    cl_kernel ks[] = { g->k_probe, g->k_rows_sum, g->k_finish };
    device_release_kernels(ks, 3);
    cl_mem ms[] = { g->desc, g->points, g->sums, g->rows, g->chunk };
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

/* A force gauge samples `step` (and the run samples it at all). */
static int force_due(const gauges *g, long step)
{
    if (step < g->start) return 0;
    for (int k = 0; k < g->n; ++k)
        if (g->s->gauges[k].type == GAUGE_FORCE && step % g->s->gauges[k].every == 0) return 1;
    return 0;
}

void gauges_before_step(gauges *g, long step)
{
    if (g && g->n_force > 0) sph_measure(g->sol, force_due(g, step));
}

/* The walls' forces of the step's boundary stage: its rows of partial sums added by
 * gauge_rows_sum into GAUGE_SUM_GROUPS rows of g->rows, which gauge_finish adds. */
static sphsim_status sum_forces(gauges *g, sphsim_error *e)
{
    cl_uint rows = 0;
    cl_mem partial = sph_measured(g->sol, &rows);
    if (!partial || rows == 0) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "force gauges: the boundary stage did not measure");
    const cl_uint V = 2u * (cl_uint)g->n_force;
    const karg a[] = { KARG("in", partial), KARG("rows", rows), KARG("V", V), KARG("out", g->rows),
                       KARG_LOCAL("red", 16 * g->sum_local) };
    SPHSIM_TRY(device_set_args(g->d, g->k_rows_sum, a, 5, e));
    return device_launch(g->d, g->k_rows_sum, GAUGE_SUM_GROUPS * g->sum_local, g->sum_local, NULL, e);
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
        cl_mem params = sph_params_buffer(g->sol);
        const cl_uint tank_moves = g->s->tank_motion.n_segments > 0; /* the points move with it */
        cl_mem motion = sph_motion_buffer(g->sol);
        const karg a[] = { KARG("n_points", g->n_points),
                           KARG("points", g->points),
                           KARG("pos", st->pos),
                           KARG("vel", st->vel),
                           KARG("pos_p", st->pos_p),
                           KARG("cell_start", cell_start),
                           KARG("cell_end", cell_end),
                           KARG("gp", grid_params_buf),
                           KARG("P", params),
                           KARG("sums", g->sums),
                           KARG("motion", motion),
                           KARG("tank_moves", tank_moves),
                           KARG_LOCAL("red", 32 * g->probe_local) };
        SPHSIM_TRY(device_set_args(d, g->k_probe, a, 13, e));
        SPHSIM_TRY(device_launch(d, g->k_probe, g->n_points * g->probe_local, g->probe_local, NULL, e));
    }
    if (force_due(g, step)) SPHSIM_TRY(sum_forces(g, e));
    const cl_uint ng = (cl_uint)g->n;
    const cl_ulong step_u = (cl_ulong)step, step0_u = (cl_ulong)g->step0;
    const cl_uint force_rows = GAUGE_SUM_GROUPS, force_slots = (cl_uint)g->n_force;
    const karg f[] = { KARG("n_gauges", ng),
                       KARG("G", g->desc),
                       KARG("sums", g->sums),
                       KARG("force", g->rows),
                       KARG("force_rows", force_rows),
                       KARG("force_slots", force_slots),
                       KARG("at_step", step_u),
                       KARG("from_step", step0_u),
                       KARG("chunk", g->chunk),
                       KARG_LOCAL("wet", 4 * g->finish_local),
                       KARG_LOCAL("red", 32 * g->finish_local) };
    SPHSIM_TRY(device_set_args(d, g->k_finish, f, 11, e));
    return device_launch(d, g->k_finish, (size_t)g->n * g->finish_local, g->finish_local, NULL, e);
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

void gauges_own(gauges *g, int axis, float lo, float hi)
{
    if (g && g->n_force > 0) sph_measure_own(g->sol, axis, lo, hi);
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
