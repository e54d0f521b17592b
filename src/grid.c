/* grid: host side of the neighbour grid: cell geometry and key width, and the device stages
 * of one rebuild (cell keys, radix sort, cell table), the permutation gather, statistics. */
#include "grid.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grid_sort.h"

#define GRID_MAX_AXIS_CELLS (1u << 21)
#define GRID_LOCAL 256

struct grid {
    ocl_device *d;
    grid_params gp;
    size_t n_max;
    cl_program prog_keys, prog_table, prog_gather, prog_stats;
    cl_kernel k_keys, k_order, k_table, k_stats;
    cl_kernel k_gather[5]; /* element sizes 1, 2, 4, 8, 16 */
    grid_sort *sort;
    cl_mem params;     /* grid_params, __constant */
    cl_mem cell_start; /* uint [n_cells] */
    cl_mem cell_end;   /* uint [n_cells] */
    cl_mem no_flags;   /* one uint, the flag word when the caller passes none */
    cl_mem order_flag; /* one uint, grid_order's answer (grid_build_keep) */
    int kept;          /* the last build kept the particles' order (no sort; grid_index() NULL) */
    /* events of the last build (profiling queues only) */
    cl_event ev_keys, ev_sort_first, ev_sort_last, ev_table;
};

/* ---- geometry ---- */

/* Largest float <= v (v > 0, finite, in float range). */
static float float_down(double v)
{
    float f = (float)v;
    if ((double)f > v) f = nextafterf(f, 0.0f);
    return f;
}

static float float_up(double v)
{
    float f = (float)v;
    if ((double)f < v) f = nextafterf(f, FLT_MAX);
    return f;
}

sphsim_status grid_geometry(int dims, const double lo[3], const double hi[3], double radius, double cell_ratio,
                            grid_params *gp, sphsim_error *e)
{
    static const char axis[3] = { 'x', 'y', 'z' };
    memset(gp, 0, sizeof *gp);
    if (dims != 2 && dims != 3) return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "grid: dimension must be 2 or 3, got %d", dims);
    if (!(cell_ratio > 0.0) || !isfinite(cell_ratio))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "grid.cell_ratio must be a positive number, got %g", cell_ratio);
    if (!(radius > 0.0) || !isfinite(radius) || radius > 1e30)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "grid: the search radius must be a positive number of metres, got %g",
                           radius);
    for (int a = 0; a < dims; ++a)
        if (!isfinite(lo[a]) || !isfinite(hi[a]) || !(hi[a] >= lo[a]) || fabs(lo[a]) > 1e30 || fabs(hi[a]) > 1e30)
            return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "grid: the tank box along %c, [%g, %g] m, is not a finite interval",
                               axis[a], lo[a], hi[a]);

    /* Cells scanned either side of a particle's cell. */
    double reach_d = ceil(1.0 / cell_ratio - 1e-6);
    if (reach_d < 1.0) reach_d = 1.0;
    if (reach_d > 64.0)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "grid.cell_ratio = %g would scan %.0f cells either side of each particle; use at least 1/64",
                           cell_ratio, reach_d);
    const unsigned reach = (unsigned)reach_d;

    /* Cell size: cell_ratio * radius, made larger by a relative margin delta so that float
     * rounding in floor((x - origin) * cell_inv) can never put two particles closer than the
     * radius more than `reach` cells apart (see docs/grid.md): that rounding is at most
     * 2^-23 of the cell coordinate u <= U on each side, so delta = U 2^-22 / reach (+1e-6 for
     * the float radius and float distances of the solvers). max() covers ratios just below
     * 1/reach. */
    double cell0 = fmax(cell_ratio * radius, radius / reach_d);
    double extent = 0.0;
    for (int a = 0; a < dims; ++a) extent = fmax(extent, hi[a] - lo[a]);
    if (extent / cell0 >= (double)GRID_MAX_AXIS_CELLS)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "grid.cell_ratio: the tank (%g m across) needs %.0f cells of %g m (search radius %g m x "
                           "cell_ratio %g) along one axis; at most %u are supported. Increase grid.cell_ratio or the "
                           "smoothing length, or shrink the tank",
                           extent, ceil(extent / cell0), cell0, radius, cell_ratio, GRID_MAX_AXIS_CELLS);
    const double u_max = extent / cell0 + reach_d + 2.0;
    const double delta = 1e-6 + 1.05 * u_max * ldexp(1.0, -22) / reach_d;
    const double cell = cell0 * (1.0 + delta);
    /* Round 1/cell down, so that the cell the device works with, 1 / cell_size_inv, is >= cell. */
    const float cell_inv = float_down(1.0 / cell);
    const double cell_eff = 1.0 / (double)cell_inv;

    dev_u64 n_cells = 1;
    dev_u32 n_axis_max = 1;
    for (int a = 0; a < 3; ++a) {
        if (a >= dims) {
            gp->origin[a] = 0.0f;
            gp->ncell[a] = 1;
            continue;
        }
        gp->origin[a] = float_down(lo[a]); /* origin <= lo: a particle at lo is inside */
        /* Cells up to and a little past hi, so a particle at hi is inside (not flagged) even
         * after rounding: floor(u(hi) (1 + 1e-6)) + 1 cells. */
        const double u_hi = ((double)float_up(hi[a]) - (double)gp->origin[a]) / cell_eff;
        const double nc = floor(u_hi * (1.0 + 1e-6) + 1e-6) + 1.0;
        if (nc > (double)GRID_MAX_AXIS_CELLS)
            return SPHSIM_FAIL(
                e, SPHSIM_E_SCENE,
                "grid.cell_ratio: the tank needs %.0f cells along %c (%g m / cell %g m = search radius %g "
                "m x cell_ratio %g); at most %u cells per axis are supported. Increase grid.cell_ratio or "
                "the smoothing length, or shrink the tank",
                nc, axis[a], hi[a] - lo[a], cell, radius, cell_ratio, GRID_MAX_AXIS_CELLS);
        gp->ncell[a] = (dev_u32)nc;
        n_cells *= gp->ncell[a];
        if (gp->ncell[a] > n_axis_max) n_axis_max = gp->ncell[a];
    }
    if (n_cells > 0xffffffffull)
        return SPHSIM_FAIL(
            e, SPHSIM_E_SCENE,
            "grid.cell_ratio: the grid would have %llu cells (%u x %u x %u), more than 2^32 - 1. Increase "
            "grid.cell_ratio or the smoothing length, or shrink the tank",
            (unsigned long long)n_cells, gp->ncell[0], gp->ncell[1], gp->ncell[2]);
    unsigned bits = 1;
    while (bits < 21 && (1u << bits) < n_axis_max) ++bits;
    gp->cell_size = (float)cell_eff;
    gp->cell_size_inv = cell_inv;
    gp->radius = (float)radius;
    gp->n_cells = (dev_u32)n_cells;
    gp->reach = reach;
    gp->bits = bits;
    gp->key_bits = (dev_u32)dims * bits;
    gp->key64 = gp->key_bits > 32;
    gp->dims = (dev_u32)dims;
    return SPHSIM_OK;
}

/* ---- creation ---- */

static grid_sort_config sort_config_for(const grid_params *gp) { return grid_sort_default_config(gp->key_bits); }

size_t grid_bytes(const grid_params *gp, size_t n_max)
{
    grid_sort_config c = sort_config_for(gp);
    return grid_sort_bytes((int)gp->key64, gp->key_bits, n_max, &c) + 2 * (size_t)gp->n_cells * 4 +
           sizeof(grid_params) + 8;
}

static sphsim_status build(grid *g, const char *file, cl_program *prog, sphsim_error *e)
{
    char opts[128];
    snprintf(opts, sizeof opts, "-DDIMS=%u -DKEY64=%u", g->gp.dims, g->gp.key64);
    return device_build(g->d, file, opts, prog, e);
}

sphsim_status grid_create(grid **out, ocl_device *d, const grid_params *gp, size_t n_max, sphsim_error *e)
{
    *out = NULL;
    if (gp->dims != 2 && gp->dims != 3)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid_create: grid parameters not filled (dims %u)", gp->dims);
    grid *g = calloc(1, sizeof *g);
    if (!g) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    g->d = d;
    g->gp = *gp;
    g->n_max = n_max;
    static const char *gather_names[5] = { "grid_gather_1", "grid_gather_2", "grid_gather_4", "grid_gather_8",
                                           "grid_gather_16" };
    grid_sort_config c = sort_config_for(gp);
    sphsim_status st = grid_sort_create(&g->sort, d, (int)gp->key64, gp->key_bits, n_max, &c, e);
    if (st == SPHSIM_OK) st = build(g, "grid_keys.cl", &g->prog_keys, e);
    if (st == SPHSIM_OK) st = device_kernel(g->prog_keys, "grid_keys", &g->k_keys, e);
    if (st == SPHSIM_OK) st = device_kernel(g->prog_keys, "grid_order", &g->k_order, e);
    if (st == SPHSIM_OK) st = build(g, "cell_table.cl", &g->prog_table, e);
    if (st == SPHSIM_OK) st = device_kernel(g->prog_table, "cell_table", &g->k_table, e);
    if (st == SPHSIM_OK) st = build(g, "gather.cl", &g->prog_gather, e);
    for (int i = 0; i < 5 && st == SPHSIM_OK; ++i)
        st = device_kernel(g->prog_gather, gather_names[i], &g->k_gather[i], e);
    if (st == SPHSIM_OK) st = device_alloc(d, sizeof(grid_params), "grid parameters", &g->params, e);
    if (st == SPHSIM_OK) st = device_alloc(d, (size_t)gp->n_cells * 4, "grid cell_start table", &g->cell_start, e);
    if (st == SPHSIM_OK) st = device_alloc(d, (size_t)gp->n_cells * 4, "grid cell_end table", &g->cell_end, e);
    if (st == SPHSIM_OK) st = device_alloc(d, 4, "grid flag word", &g->no_flags, e);
    if (st == SPHSIM_OK) st = device_alloc(d, 4, "grid order word", &g->order_flag, e);
    if (st == SPHSIM_OK) st = device_write(d, g->params, 0, sizeof(grid_params), gp, e);
    if (st == SPHSIM_OK) {
        /* Empty cell table until the first build. */
        const cl_uint zero = 0;
        cl_int err = clEnqueueFillBuffer(d->queue, g->cell_start, &zero, 4, 0, (size_t)gp->n_cells * 4, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueFillBuffer(d->queue, g->cell_end, &zero, 4, 0, (size_t)gp->n_cells * 4, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = clEnqueueFillBuffer(d->queue, g->no_flags, &zero, 4, 0, 4, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "clearing the grid cell table failed: %s", cl_error_name(err));
    }
    if (st != SPHSIM_OK) {
        grid_destroy(g);
        return st;
    }
    *out = g;
    return SPHSIM_OK;
}

static void release_events(grid *g)
{
    cl_event *evs[4] = { &g->ev_keys, &g->ev_sort_first, &g->ev_sort_last, &g->ev_table };
    for (int i = 0; i < 4; ++i)
        if (*evs[i]) {
            clReleaseEvent(*evs[i]);
            *evs[i] = NULL;
        }
}

void grid_destroy(grid *g)
{
    if (!g) return;
    release_events(g);
    grid_sort_destroy(g->sort);
    cl_kernel ks[4] = { g->k_keys, g->k_order, g->k_table, g->k_stats };
    for (int i = 0; i < 4; ++i)
        if (ks[i]) clReleaseKernel(ks[i]);
    for (int i = 0; i < 5; ++i)
        if (g->k_gather[i]) clReleaseKernel(g->k_gather[i]);
    cl_program ps[4] = { g->prog_keys, g->prog_table, g->prog_gather, g->prog_stats };
    for (int i = 0; i < 4; ++i)
        if (ps[i]) clReleaseProgram(ps[i]);
    cl_mem ms[5] = { g->params, g->cell_start, g->cell_end, g->no_flags, g->order_flag };
    for (int i = 0; i < 5; ++i)
        if (ms[i]) clReleaseMemObject(ms[i]);
    free(g);
}

/* ---- per-step stages ---- */

/* Enqueue n work-items (rounded up to the work-group) with an optional event. */
static sphsim_status run1d(grid *g, cl_kernel k, size_t n, cl_event *ev, sphsim_error *e)
{
    if (n == 0) return SPHSIM_OK;
    size_t local = g->d->max_wg < GRID_LOCAL ? g->d->max_wg : GRID_LOCAL;
    return device_launch(g->d, k, (n + local - 1) / local * local, local, ev, e);
}

/* A kernel that loops over its n items (device_run_strided). */
static sphsim_status run_strided(grid *g, cl_kernel k, size_t n, cl_event *ev, sphsim_error *e)
{
    return device_run_strided(g->d, k, n, g->d->max_wg < GRID_LOCAL ? g->d->max_wg : GRID_LOCAL, ev, e);
}

/* Are the n keys of grid_sort_keys_in in order (each at most the next)? Blocks for one word. */
static sphsim_status keys_in_order(grid *g, size_t n, int *in_order, sphsim_error *e)
{
    *in_order = 1;
    if (n < 2) return SPHSIM_OK;
    const cl_uint zero = 0, n32 = (cl_uint)n;
    CL_CHECK(e, clEnqueueFillBuffer(g->d->queue, g->order_flag, &zero, 4, 0, 4, 0, NULL, NULL));
    cl_mem keys = grid_sort_keys_in(g->sort);
    const karg args[] = { KARG("keys", keys), KARG("n", n32),
                          KARG("out_of_order", g->order_flag) };
    SPHSIM_TRY(device_set_args(g->d, g->k_order, args, 3, e));
    SPHSIM_TRY(run_strided(g, g->k_order, n - 1, NULL, e));
    cl_uint out_of_order = 1;
    SPHSIM_TRY(device_read(g->d, g->order_flag, 0, 4, &out_of_order, e));
    *in_order = out_of_order == 0;
    return SPHSIM_OK;
}

/* grid_build, and with `kept` the check that skips the sort when the keys are in order. */
static sphsim_status build_grid(grid *g, cl_mem pos, size_t n, cl_mem flags, int *kept, sphsim_error *e)
{
    if (n > g->n_max)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid_build: %zu particles, the grid was created for %zu", n, g->n_max);
    release_events(g);
    const int prof = g->d->profiling;
    const cl_uint n32 = (cl_uint)n;
    cl_mem keys_in = grid_sort_keys_in(g->sort);
    cl_mem flag_buf = flags ? flags : g->no_flags;
    const karg keys[] = { KARG("pos", pos),
                          KARG("n", n32),
                          KARG("gp", g->params),
                          KARG("keys", keys_in),
                          KARG("flags", flag_buf),
                          KARG("cell_start", g->cell_start),
                          KARG("cell_end", g->cell_end) };
    SPHSIM_TRY(device_set_args(g->d, g->k_keys, keys, 7, e));
    /* max(n, n_cells) work-items: the keys, and the emptied cell table */
    SPHSIM_TRY(run_strided(g, g->k_keys, n > g->gp.n_cells ? n : g->gp.n_cells, prof ? &g->ev_keys : NULL, e));

    g->kept = 0;
    if (kept) SPHSIM_TRY(keys_in_order(g, n, &g->kept, e));
    if (!g->kept)
        SPHSIM_TRY(grid_sort_run(g->sort, n, prof ? &g->ev_sort_first : NULL, prof ? &g->ev_sort_last : NULL, e));
    if (kept) *kept = g->kept;

    cl_mem keys_sorted = grid_keys(g);
    const karg table[] = { KARG("keys", keys_sorted), KARG("n", n32), KARG("gp", g->params),
                           KARG("cell_start", g->cell_start), KARG("cell_end", g->cell_end) };
    SPHSIM_TRY(device_set_args(g->d, g->k_table, table, 5, e));
    SPHSIM_TRY(run_strided(g, g->k_table, n, prof ? &g->ev_table : NULL, e));
    return SPHSIM_OK;
}

sphsim_status grid_build(grid *g, cl_mem pos, size_t n, cl_mem flags, sphsim_error *e)
{
    return build_grid(g, pos, n, flags, NULL, e);
}

sphsim_status grid_build_keep(grid *g, cl_mem pos, size_t n, cl_mem flags, int *kept, sphsim_error *e)
{
    return build_grid(g, pos, n, flags, kept, e);
}

sphsim_status grid_gather(grid *g, cl_mem src, cl_mem dst, size_t elem_size, size_t n, sphsim_error *e)
{
    int which;
    switch (elem_size) {
    case 1: which = 0; break;
    case 2: which = 1; break;
    case 4: which = 2; break;
    case 8: which = 3; break;
    case 16: which = 4; break;
    default: return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid_gather: element size %zu is not 1, 2, 4, 8 or 16", elem_size);
    }
    if (n > g->n_max)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid_gather: %zu particles, the grid was created for %zu", n, g->n_max);
    if (n == 0) return SPHSIM_OK;
    if (g->kept) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid_gather: the last build kept the order (no permutation)");
    cl_kernel k = g->k_gather[which];
    const cl_uint n32 = (cl_uint)n;
    cl_mem idx = grid_sort_index(g->sort);
    const karg args[] = { KARG("src", src), KARG("idx", idx), KARG("n", n32), KARG("dst", dst) };
    SPHSIM_TRY(device_set_args(g->d, k, args, 4, e));
    return run1d(g, k, n, NULL, e);
}

cl_mem grid_index(const grid *g) { return g->kept ? NULL : grid_sort_index(g->sort); }
cl_mem grid_keys(const grid *g) { return g->kept ? grid_sort_keys_in(g->sort) : grid_sort_keys_out(g->sort); }
cl_mem grid_scratch(const grid *g, size_t *bytes) { return grid_sort_pool(g->sort, bytes); }
cl_mem grid_cell_start(const grid *g) { return g->cell_start; }
cl_mem grid_cell_end(const grid *g) { return g->cell_end; }
cl_mem grid_params_buffer(const grid *g) { return g->params; }
const grid_params *grid_get_params(const grid *g) { return &g->gp; }

/* ---- statistics and timing ---- */

sphsim_status grid_neighbour_stats(grid *g, cl_mem pos, size_t n, double *mean_neighbours, double *mean_candidates,
                                   sphsim_error *e)
{
    *mean_neighbours = 0.0;
    *mean_candidates = 0.0;
    if (n == 0) return SPHSIM_OK;
    if (n > g->n_max)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid_neighbour_stats: %zu particles, the grid was created for %zu", n,
                           g->n_max);
    if (!g->prog_stats) {
        SPHSIM_TRY(build(g, "grid_stats.cl", &g->prog_stats, e));
        SPHSIM_TRY(device_kernel(g->prog_stats, "grid_count_neighbours", &g->k_stats, e));
    }
    cl_mem nb = NULL, cand = NULL;
    sphsim_status st = device_alloc(g->d, n * 4, "neighbour counts", &nb, e);
    if (st == SPHSIM_OK) st = device_alloc(g->d, n * 4, "candidate counts", &cand, e);
    uint32_t *h = st == SPHSIM_OK ? malloc(n * 4) : NULL;
    if (st == SPHSIM_OK && !h) st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    if (st == SPHSIM_OK) {
        const cl_uint n32 = (cl_uint)n;
        const karg args[] = { KARG("pos", pos),
                              KARG("n", n32),
                              KARG("gp", g->params),
                              KARG("cell_start", g->cell_start),
                              KARG("cell_end", g->cell_end),
                              KARG("neighbours", nb),
                              KARG("candidates", cand) };
        st = device_set_args(g->d, g->k_stats, args, 7, e);
    }
    if (st == SPHSIM_OK) st = run1d(g, g->k_stats, n, NULL, e);
    double sum_nb = 0.0, sum_cand = 0.0;
    if (st == SPHSIM_OK) st = device_read(g->d, nb, 0, n * 4, h, e);
    if (st == SPHSIM_OK)
        for (size_t i = 0; i < n; ++i) sum_nb += h[i];
    if (st == SPHSIM_OK) st = device_read(g->d, cand, 0, n * 4, h, e);
    if (st == SPHSIM_OK)
        for (size_t i = 0; i < n; ++i) sum_cand += h[i];
    free(h);
    if (nb) clReleaseMemObject(nb);
    if (cand) clReleaseMemObject(cand);
    if (st != SPHSIM_OK) return st;
    *mean_neighbours = sum_nb / (double)n;
    *mean_candidates = sum_cand / (double)n;
    return SPHSIM_OK;
}

static sphsim_status event_times(cl_event ev, cl_ulong *start, cl_ulong *end, sphsim_error *e)
{
    CL_CHECK(e, clWaitForEvents(1, &ev));
    CL_CHECK(e, clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof *start, start, NULL));
    CL_CHECK(e, clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *end, end, NULL));
    return SPHSIM_OK;
}

/* Seconds from the start of `a` to the end of `b` (0 when either is missing). */
static sphsim_status span(cl_event a, cl_event b, double *t, sphsim_error *e)
{
    *t = 0.0;
    if (!a || !b) return SPHSIM_OK;
    cl_ulong s0, e0, s1, e1;
    SPHSIM_TRY(event_times(a, &s0, &e0, e));
    SPHSIM_TRY(event_times(b, &s1, &e1, e));
    *t = e1 > s0 ? (double)(e1 - s0) * 1e-9 : 0.0;
    return SPHSIM_OK;
}

sphsim_status grid_last_timing(grid *g, double *t_keys, double *t_sort, double *t_table, sphsim_error *e)
{
    *t_keys = *t_sort = *t_table = 0.0;
    if (!g->d->profiling) return SPHSIM_OK;
    SPHSIM_TRY(span(g->ev_keys, g->ev_keys, t_keys, e));
    SPHSIM_TRY(span(g->ev_sort_first, g->ev_sort_last, t_sort, e));
    SPHSIM_TRY(span(g->ev_table, g->ev_table, t_table, e));
    return SPHSIM_OK;
}
