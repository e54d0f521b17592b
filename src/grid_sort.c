/* grid_sort: host side of the device radix sort of (key, index) pairs (kernels/sort.cl):
 * buffers allocated once, three kernels per digit, ping-pong between two key/index pairs. */
#include "grid_sort.h"

#include <stdlib.h>
#include <string.h>

struct grid_sort {
    ocl_device *d;
    int key64;
    unsigned key_bits, radix_bits, wg, items, tile, passes;
    size_t n_max;
    cl_program prog;
    cl_kernel k_count, k_scan, k_scatter;
    cl_mem pool;            /* one buffer behind keys and idx (grid_sort_pool) */
    size_t pool_bytes;
    cl_mem keys[2], idx[2]; /* ping-pong, sub-buffers of pool; keys[0] is the input */
    cl_mem hist;            /* uint [radix][groups] */
    cl_mem digit_total;     /* uint [radix] */
};

static void config_defaults(const grid_sort_config *cfg, unsigned key_bits, unsigned *bits, unsigned *wg,
                            unsigned *items)
{
    const grid_sort_config def = grid_sort_default_config(key_bits);
    *bits = cfg && cfg->radix_bits ? cfg->radix_bits : def.radix_bits;
    *wg = cfg && cfg->wg ? cfg->wg : def.wg;
    *items = cfg && cfg->items ? cfg->items : def.items;
}

grid_sort_config grid_sort_default_config(unsigned key_bits)
{
    grid_sort_config c = { 7, 128, key_bits > 32 ? 16 : 32 };
    if (key_bits < 1) key_bits = 1;
    const unsigned passes = (key_bits + 6) / 7;
    c.radix_bits = (key_bits + passes - 1) / passes;
    return c;
}

static size_t groups_for(size_t n, unsigned tile) { return n == 0 ? 1 : (n + tile - 1) / tile; }

size_t grid_sort_bytes(int key64, unsigned key_bits, size_t n_max, const grid_sort_config *cfg)
{
    unsigned bits, wg, items;
    config_defaults(cfg, key_bits, &bits, &wg, &items);
    size_t n = n_max ? n_max : 1;
    size_t key_size = key64 ? 8 : 4;
    return 2 * n * (key_size + 4) + ((size_t)1 << bits) * (groups_for(n_max, wg * items) + 1) * 4;
}

sphsim_status grid_sort_create(grid_sort **out, ocl_device *d, int key64, unsigned key_bits, size_t n_max,
                               const grid_sort_config *cfg, sphsim_error *e)
{
    *out = NULL;
    unsigned bits, wg, items;
    config_defaults(cfg, key_bits, &bits, &wg, &items);
    if (key_bits < 1 || key_bits > (key64 ? 64u : 32u))
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid sort: %u key bits do not fit %d-bit keys", key_bits,
                           key64 ? 64 : 32);
    if (bits < 1 || bits > 8 || wg < (1u << bits) || wg > 1024 || (wg & (wg - 1)) || wg < 16 || items < 1 ||
        items > 64 || (size_t)wg * items > 32768)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "grid sort: unsupported configuration (radix bits %u, work-group %u, items %u)", bits, wg,
                           items);
    if (n_max >= 0xffffffffu)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid sort: %zu keys exceed the 32-bit particle index", n_max);
    if (d->max_wg < wg)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid sort: %s allows work-groups of %zu, the sort needs %u", d->name,
                           d->max_wg, wg);
    /* Local memory of the largest kernel (sort_scatter), as laid out in kernels/sort.cl. */
    {
        const size_t radix = (size_t)1 << bits, tile = (size_t)wg * items;
        const size_t tile_pad = tile + tile / 32 + 1, cnt_n = radix * wg + wg;
        const size_t cnt_size = radix * wg * 4 <= 16384 ? 4 : 2;
        size_t un = tile_pad * (key64 ? 8 : 4);
        if (cnt_n * cnt_size > un) un = cnt_n * cnt_size;
        const size_t need = un + (wg + wg / 16 + 1) * 4 + 2 * radix * 4;
        if (need > d->local_mem)
            return SPHSIM_FAIL(
                e, SPHSIM_E_DEVICE,
                "grid sort: radix bits %u, work-group %u, items %u need %zu bytes of local memory; %s has "
                "%llu",
                bits, wg, items, need, d->name, (unsigned long long)d->local_mem);
    }
    grid_sort *s = calloc(1, sizeof *s);
    if (!s) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    s->d = d;
    s->key64 = key64;
    s->key_bits = key_bits;
    s->radix_bits = bits;
    s->wg = wg;
    s->items = items;
    s->tile = wg * items;
    s->passes = (key_bits + bits - 1) / bits;
    s->n_max = n_max;

    char opts[256];
    snprintf(opts, sizeof opts, "-DKEY64=%d -DRADIX_BITS=%u -DWG=%u -DITEMS=%u", key64 ? 1 : 0, bits, wg, items);
    sphsim_status st = device_build(d, "sort.cl", opts, &s->prog, e);
    if (st == SPHSIM_OK) st = device_kernel(s->prog, "sort_count", &s->k_count, e);
    if (st == SPHSIM_OK) st = device_kernel(s->prog, "sort_scan", &s->k_scan, e);
    if (st == SPHSIM_OK) st = device_kernel(s->prog, "sort_scatter", &s->k_scatter, e);
    size_t n = n_max ? n_max : 1, key_size = key64 ? 8 : 4;
    /* the keys and indices of both sides in one buffer, each at an offset the device accepts
     * for a sub-buffer, so that others can use the whole of it as scratch between sorts */
    cl_uint align_bits = 0;
    if (st == SPHSIM_OK && clGetDeviceInfo(d->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                                           NULL) != CL_SUCCESS)
        st = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid sort: the device's sub-buffer alignment is unknown");
    const size_t align = align_bits >= 8 ? align_bits / 8 : 1;
    const size_t seg[4] = { n * key_size, n * key_size, n * 4, n * 4 };
    size_t at[4], total = 0;
    for (int k = 0; k < 4; ++k) {
        at[k] = total;
        total += (seg[k] + align - 1) / align * align;
    }
    if (st == SPHSIM_OK) st = device_alloc(d, total, "grid sort keys and index", &s->pool, e);
    s->pool_bytes = total;
    cl_mem *sub[4] = { &s->keys[0], &s->keys[1], &s->idx[0], &s->idx[1] };
    for (int k = 0; k < 4 && st == SPHSIM_OK; ++k) {
        cl_buffer_region r = { at[k], seg[k] };
        cl_int err;
        *sub[k] = clCreateSubBuffer(s->pool, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
        if (err != CL_SUCCESS)
            st = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid sort: clCreateSubBuffer failed: %s", cl_error_name(err));
    }
    size_t radix = (size_t)1 << bits;
    if (st == SPHSIM_OK)
        st = device_alloc(d, radix * groups_for(n_max, s->tile) * 4, "grid sort histogram", &s->hist, e);
    if (st == SPHSIM_OK) st = device_alloc(d, radix * 4, "grid sort digit totals", &s->digit_total, e);
    if (st != SPHSIM_OK) {
        grid_sort_destroy(s);
        return st;
    }
    *out = s;
    return SPHSIM_OK;
}

void grid_sort_destroy(grid_sort *s)
{
    if (!s) return;
    if (s->k_count) clReleaseKernel(s->k_count);
    if (s->k_scan) clReleaseKernel(s->k_scan);
    if (s->k_scatter) clReleaseKernel(s->k_scatter);
    if (s->prog) clReleaseProgram(s->prog);
    for (int b = 0; b < 2; ++b) {
        if (s->keys[b]) clReleaseMemObject(s->keys[b]);
        if (s->idx[b]) clReleaseMemObject(s->idx[b]);
    }
    if (s->pool) clReleaseMemObject(s->pool);
    if (s->hist) clReleaseMemObject(s->hist);
    if (s->digit_total) clReleaseMemObject(s->digit_total);
    free(s);
}

cl_mem grid_sort_pool(const grid_sort *s, size_t *bytes)
{
    *bytes = s->pool_bytes;
    return s->pool;
}
cl_mem grid_sort_keys_in(const grid_sort *s) { return s->keys[0]; }
cl_mem grid_sort_keys_out(const grid_sort *s) { return s->keys[s->passes & 1]; }
cl_mem grid_sort_index(const grid_sort *s) { return s->idx[s->passes & 1]; }
unsigned grid_sort_passes(const grid_sort *s) { return s->passes; }
unsigned grid_sort_tile(const grid_sort *s) { return s->tile; }

static sphsim_status enqueue(grid_sort *s, cl_kernel k, size_t groups, size_t local, cl_event *ev, sphsim_error *e)
{
    return device_launch(s->d, k, groups * local, local, ev, e);
}

sphsim_status grid_sort_run(grid_sort *s, size_t n, cl_event *first, cl_event *last, sphsim_error *e)
{
    if (first) *first = NULL;
    if (last) *last = NULL;
    if (n > s->n_max)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "grid sort: %zu keys, the sorter was created for %zu", n, s->n_max);
    if (n == 0) return SPHSIM_OK;
    const cl_uint n32 = (cl_uint)n;
    const cl_uint groups = (cl_uint)groups_for(n, s->tile);
    const size_t radix = (size_t)1 << s->radix_bits;
    for (unsigned p = 0; p < s->passes; ++p) {
        const cl_uint shift = p * s->radix_bits;
        const cl_uint implicit_idx = p == 0;
        cl_mem kin = s->keys[p & 1], kout = s->keys[(p + 1) & 1];
        cl_mem iin = s->idx[p & 1], iout = s->idx[(p + 1) & 1];
        const karg count[] = { KARG("keys", kin), KARG("n", n32), KARG("shift", shift), KARG("n_groups", groups),
                               KARG("hist", s->hist) };
        SPHSIM_TRY(device_set_args(s->d, s->k_count, count, 5, e));
        SPHSIM_TRY(enqueue(s, s->k_count, groups, s->wg, p == 0 ? first : NULL, e));

        const karg scan[] = { KARG("hist", s->hist), KARG("n_groups", groups), KARG("digit_total", s->digit_total) };
        SPHSIM_TRY(device_set_args(s->d, s->k_scan, scan, 3, e));
        SPHSIM_TRY(enqueue(s, s->k_scan, radix, s->wg, NULL, e));

        const karg scatter[] = { KARG("keys_in", kin),
                                 KARG("idx_in", iin),
                                 KARG("implicit_idx", implicit_idx),
                                 KARG("n", n32),
                                 KARG("shift", shift),
                                 KARG("n_groups", groups),
                                 KARG("hist", s->hist),
                                 KARG("digit_total", s->digit_total),
                                 KARG("keys_out", kout),
                                 KARG("idx_out", iout) };
        SPHSIM_TRY(device_set_args(s->d, s->k_scatter, scatter, 10, e));
        SPHSIM_TRY(enqueue(s, s->k_scatter, groups, s->wg, p + 1 == s->passes ? last : NULL, e));
    }
    return SPHSIM_OK;
}
