/* bench_grid: times the neighbour-grid rebuild (cell keys, radix sort, cell table) with
 * OpenCL profiling events for a list of particle counts and prints keys per second.
 * Built and run by scripts/bench_grid.sh (not a test: it asserts nothing).
 *
 * usage: bench_grid [--device SEL] [--dims 2|3] [--reps R] [--max-seconds S]
 *                   [--radix B] [--wg W] [--items I] N...
 * Particles are uniform random in a cube (square) of side dx * N^(1/dims) with search radius
 * 2.4 dx and cell_ratio 1 (about 14 particles per cell in 3D), the density of an SPH run.
 * "random" rebuilds from positions in random order (the first step); "sorted" from positions
 * already in grid order (every later step, where particles move little). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grid.h"
#include "grid_sort.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double rnd01(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static int die(const sphsim_error *e)
{
    fprintf(stderr, "bench_grid: %s\n", e->msg);
    return 1;
}

int main(int argc, char **argv)
{
    const char *sel = NULL;
    int dims = 3, reps = 10;
    double max_seconds = 2.0;
    grid_sort_config cfg = { 0, 0, 0 };
    size_t ns[64];
    int nn = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) sel = argv[++i];
        else if (!strcmp(argv[i], "--dims") && i + 1 < argc) dims = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-seconds") && i + 1 < argc) max_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--radix") && i + 1 < argc) cfg.radix_bits = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--wg") && i + 1 < argc) cfg.wg = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--items") && i + 1 < argc) cfg.items = (unsigned)atoi(argv[++i]);
        else if (argv[i][0] != '-' && nn < 64) ns[nn++] = (size_t)strtod(argv[i], NULL);
        else {
            fprintf(stderr, "usage: bench_grid [--device SEL] [--dims 2|3] [--reps R] [--max-seconds S] [--radix B] "
                            "[--wg W] [--items I] N...\n");
            return 2;
        }
    }
    if (nn == 0) {
        const size_t def[4] = { 10000, 100000, 1000000, 10000000 };
        for (nn = 0; nn < 4; ++nn) ns[nn] = def[nn];
    }
    if (reps < 1) reps = 1;
    if (dims != 2 && dims != 3) dims = 3;

    ocl_device d;
    sphsim_error e = { 0 };
    if (device_open(&d, sel, 1, NULL, &e) != SPHSIM_OK) return die(&e);
    printf("# device: %s (%s), %s\n", d.name, d.platform_name, d.version);
    printf("# dims %d, radius 2.4 dx, cell_ratio 1, %d timed rebuilds per row (median), profiling events\n", dims,
           reps);
    printf("# %10s %7s %5s %4s %9s %9s %9s %9s %9s %10s\n", "N", "order", "bits", "pass", "keys_ms", "sort_ms",
           "table_ms", "total_ms", "wall_ms", "Mkeys/s");

    for (int r = 0; r < nn; ++r) {
        const size_t n = ns[r];
        const double dx = 1.0; /* m: particle spacing */
        const double side = dx * pow((double)n, 1.0 / dims);
        const double lo[3] = { 0, 0, 0 }, hi[3] = { side, side, dims == 3 ? side : 0 };
        grid_params gp;
        if (grid_geometry(dims, lo, hi, 2.4 * dx, 1.0, &gp, &e) != SPHSIM_OK) return die(&e);
        float *pos = malloc(n * 16);
        if (!pos) return 1;
        for (size_t i = 0; i < n; ++i) {
            pos[4 * i + 0] = (float)(side * rnd01());
            pos[4 * i + 1] = (float)(side * rnd01());
            pos[4 * i + 2] = dims == 3 ? (float)(side * rnd01()) : 0.0f;
            pos[4 * i + 3] = 0.0f;
        }
        grid *g;
        cl_mem b_pos, b_sorted;
        if (grid_create(&g, &d, &gp, n, &e) != SPHSIM_OK) return die(&e);
        if (device_alloc(&d, n * 16, "positions", &b_pos, &e) != SPHSIM_OK) return die(&e);
        if (device_alloc(&d, n * 16, "sorted positions", &b_sorted, &e) != SPHSIM_OK) return die(&e);
        if (device_write(&d, b_pos, 0, n * 16, pos, &e) != SPHSIM_OK) return die(&e);
        free(pos);
        const grid_sort_config dc = grid_sort_default_config(gp.key_bits);
        const unsigned passes = (gp.key_bits + dc.radix_bits - 1) / dc.radix_bits;
        grid_sort *s = NULL;
        if (cfg.radix_bits || cfg.wg || cfg.items) {
            if (grid_sort_create(&s, &d, (int)gp.key64, gp.key_bits, n, &cfg, &e) != SPHSIM_OK) return die(&e);
        }

        for (int order = 0; order < 2; ++order) {
            cl_mem src = order ? b_sorted : b_pos;
            double *tk = calloc((size_t)reps, 8), *ts = calloc((size_t)reps, 8), *tt = calloc((size_t)reps, 8),
                   *tw = calloc((size_t)reps, 8), *tsum = calloc((size_t)reps, 8);
            int done = 0;
            const double t_start = now_s();
            for (int rep = -1; rep < reps; ++rep) { /* rep -1: warm-up */
                const double t0 = now_s();
                if (grid_build(g, src, n, NULL, &e) != SPHSIM_OK) return die(&e);
                if (s) {
                    /* the tuned sort on the keys the grid just wrote */
                    cl_event a, b;
                    size_t kb = n * (gp.key64 ? 8 : 4);
                    clEnqueueCopyBuffer(d.queue, grid_keys(g), grid_sort_keys_in(s), 0, 0, kb, 0, NULL, NULL);
                    if (grid_sort_run(s, n, &a, &b, &e) != SPHSIM_OK) return die(&e);
                    clFinish(d.queue);
                    cl_ulong s0 = 0, e1 = 0;
                    if (a && b) {
                        clGetEventProfilingInfo(a, CL_PROFILING_COMMAND_START, sizeof s0, &s0, NULL);
                        clGetEventProfilingInfo(b, CL_PROFILING_COMMAND_END, sizeof e1, &e1, NULL);
                        clReleaseEvent(a);
                        clReleaseEvent(b);
                    }
                    if (rep >= 0) ts[rep] = (double)(e1 - s0) * 1e-9;
                }
                clFinish(d.queue);
                const double t1 = now_s();
                double a, b, c;
                if (grid_last_timing(g, &a, &b, &c, &e) != SPHSIM_OK) return die(&e);
                if (rep >= 0) {
                    tk[rep] = a;
                    if (!s) ts[rep] = b;
                    tt[rep] = c;
                    tw[rep] = t1 - t0;
                    tsum[rep] = a + ts[rep] + c;
                    done = rep + 1;
                }
                if (now_s() - t_start > max_seconds && done >= 1) break;
            }
            const double mk = median(tk, done), ms = median(ts, done), mt = median(tt, done), mw = median(tw, done),
                         msum = median(tsum, done);
            printf("  %10zu %7s %5u %4u %9.4f %9.4f %9.4f %9.4f %9.4f %10.1f\n", n, order ? "sorted" : "random",
                   gp.key_bits, s ? grid_sort_passes(s) : passes, mk * 1e3, ms * 1e3, mt * 1e3, msum * 1e3, mw * 1e3,
                   msum > 0 ? n / msum * 1e-6 : 0.0);
            fflush(stdout);
            free(tk);
            free(ts);
            free(tt);
            free(tw);
            free(tsum);
            if (order == 0) {
                /* positions in grid order for the "sorted" rows */
                if (grid_gather(g, b_pos, b_sorted, 16, n, &e) != SPHSIM_OK) return die(&e);
                clFinish(d.queue);
            }
        }
        grid_sort_destroy(s);
        clReleaseMemObject(b_pos);
        clReleaseMemObject(b_sorted);
        grid_destroy(g);
    }
    device_close(&d);
    return 0;
}
