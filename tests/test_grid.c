/* test_grid: the neighbour grid against plain-C references (tests/ref_grid.c): Morton codes,
 * the grid geometry, the device radix sort against a stable qsort, cell keys and the cell
 * table, neighbour sets against an O(N^2) brute force in double precision, determinism,
 * flags, gather, statistics and timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "grid.h"
#include "grid_sort.h"
#include "../kernels/morton.h"
#include "ref_grid.h"

static ocl_device dev;
static sphsim_error E;

#define OK(call)                                                                                                       \
    do {                                                                                                               \
        sphsim_status ok_st_ = (call);                                                                                 \
        if (ok_st_ != SPHSIM_OK) fail_msg("%s failed: %s", #call, E.msg);                                              \
    } while (0)

/* xorshift64*: the same numbers on every run. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static double rnd01(void) { return (double)(rnd64() >> 11) * (1.0 / 9007199254740992.0); }
static double rnd_normal(void)
{
    double u = rnd01(), v = rnd01();
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static int setup(void **state)
{
    (void)state;
    /* SPHSIM_TEST_DEVICE picks another device (e.g. "gpu"); PoCL's CPU device by default */
    const char *sel = getenv("SPHSIM_TEST_DEVICE");
    if (device_open(&dev, sel && *sel ? sel : "cpu", 1, NULL, &E) != SPHSIM_OK) {
        fprintf(stderr, "device_open: %s\n", E.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    device_close(&dev);
    return 0;
}

static cl_mem upload(const void *data, size_t bytes)
{
    cl_mem m;
    OK(device_alloc(&dev, bytes, "test buffer", &m, &E));
    OK(device_write(&dev, m, 0, bytes, data, &E));
    return m;
}

/* ---------------------------------------------------------------- Morton codes */

static void check_morton(int dims, int key64, const uint32_t c_in[3])
{
    const unsigned bits = key64 ? (dims == 2 ? 32u : 21u) : (dims == 2 ? 16u : 10u);
    uint32_t c[3];
    for (int a = 0; a < 3; ++a) c[a] = a < dims ? (bits == 32 ? c_in[a] : c_in[a] & ((1u << bits) - 1u)) : 0;
    const uint64_t ref = ref_morton_encode(dims, bits, c);
    uint64_t key;
    uint32_t d[3] = { 0, 0, 0 };
    if (dims == 2 && !key64) {
        key = morton2_encode32(c_in[0], c_in[1]); /* high bits of the input are ignored */
        morton2_decode32((uint32_t)key, &d[0], &d[1]);
    } else if (dims == 3 && !key64) {
        key = morton3_encode32(c_in[0], c_in[1], c_in[2]);
        morton3_decode32((uint32_t)key, &d[0], &d[1], &d[2]);
    } else if (dims == 2) {
        key = morton2_encode64(c_in[0], c_in[1]);
        morton2_decode64(key, &d[0], &d[1]);
    } else {
        key = morton3_encode64(c_in[0], c_in[1], c_in[2]);
        morton3_decode64(key, &d[0], &d[1], &d[2]);
    }
    if (key != ref)
        fail_msg("morton %dD %d-bit (%u, %u, %u): %llx, reference %llx", dims, key64 ? 64 : 32, c[0], c[1], c[2],
                 (unsigned long long)key, (unsigned long long)ref);
    uint32_t r[3];
    ref_morton_decode(dims, bits, key, r);
    for (int a = 0; a < 3; ++a) {
        assert_int_equal(d[a], c[a]);
        assert_int_equal(r[a], c[a]);
    }
}

static void test_morton_against_bitwise_reference(void **state)
{
    (void)state;
    static const uint32_t special[] = { 0u,        1u,          2u,          3u,          0x3ffu,      0x3feu,
                                        0x400u,    0xffffu,     0xfffeu,     0x10000u,    0x1fffffu,   0x1ffffeu,
                                        0x200000u, 0x55555555u, 0xaaaaaaaau, 0x7fffffffu, 0xffffffffu, 0x12345678u };
    const size_t ns = sizeof special / sizeof special[0];
    for (int dims = 2; dims <= 3; ++dims)
        for (int key64 = 0; key64 <= 1; ++key64) {
            for (size_t i = 0; i < ns; ++i)
                for (size_t j = 0; j < ns; ++j) {
                    const uint32_t c[3] = { special[i], special[j], special[(i + j) % ns] };
                    check_morton(dims, key64, c);
                }
            for (int it = 0; it < 20000; ++it) {
                const uint64_t r = rnd64();
                const uint32_t c[3] = { (uint32_t)r, (uint32_t)(r >> 32), (uint32_t)rnd64() };
                check_morton(dims, key64, c);
            }
        }
    /* the largest coordinates fill the key exactly */
    assert_true(morton2_encode32(0xffffu, 0xffffu) == 0xffffffffu);
    assert_true(morton3_encode32(0x3ffu, 0x3ffu, 0x3ffu) == 0x3fffffffu);
    assert_true(morton2_encode64(0xffffffffu, 0xffffffffu) == 0xffffffffffffffffull);
    assert_true(morton3_encode64(0x1fffffu, 0x1fffffu, 0x1fffffu) == 0x7fffffffffffffffull);
}

/* ---------------------------------------------------------------- geometry */

static void test_geometry(void **state)
{
    (void)state;
    grid_params gp;
    const double lo[3] = { -0.5, 0.0, 1.0 }, hi[3] = { 0.5, 2.0, 1.6 };
    OK(grid_geometry(3, lo, hi, 0.1, 1.0, &gp, &E));
    assert_int_equal(gp.reach, 1);
    assert_int_equal(gp.dims, 3);
    assert_true(gp.cell_size >= 0.1f && gp.cell_size < 0.1f * 1.001f);
    assert_true(gp.radius == 0.1f);
    assert_true(gp.origin[0] <= -0.5f && gp.origin[1] <= 0.0f && gp.origin[2] <= 1.0f);
    for (int a = 0; a < 3; ++a) {
        const double ext = hi[a] - lo[a];
        assert_true(gp.ncell[a] * (double)gp.cell_size > ext); /* the tank is covered */
        assert_true((gp.ncell[a] - 1) * (double)gp.cell_size <= ext * 1.0001);
    }
    assert_int_equal(gp.n_cells, gp.ncell[0] * gp.ncell[1] * gp.ncell[2]);
    assert_int_equal(gp.bits, 5); /* 20 cells along y */
    assert_int_equal(gp.key_bits, 15);
    assert_int_equal(gp.key64, 0);
    /* 1 / cell_size_inv is the cell the device works with: never smaller than the radius */
    assert_true(1.0 / (double)gp.cell_size_inv >= 0.1);

    OK(grid_geometry(3, lo, hi, 0.1, 0.5, &gp, &E));
    assert_int_equal(gp.reach, 2);
    assert_true(gp.cell_size >= 0.05f && gp.cell_size < 0.05f * 1.001f);
    OK(grid_geometry(3, lo, hi, 0.1, 1.0 / 3.0, &gp, &E));
    assert_int_equal(gp.reach, 3);
    OK(grid_geometry(3, lo, hi, 0.1, 2.0, &gp, &E));
    assert_int_equal(gp.reach, 1);
    assert_true(gp.cell_size >= 0.2f && gp.cell_size < 0.2f * 1.001f);

    /* 2D: z ignored */
    OK(grid_geometry(2, lo, hi, 0.1, 1.0, &gp, &E));
    assert_int_equal(gp.ncell[2], 1);
    assert_true(gp.origin[2] == 0.0f);
    assert_int_equal(gp.n_cells, gp.ncell[0] * gp.ncell[1]);

    /* key width: 3D with 1000 cells per axis fits 30 bits; 1100 need 33 (64-bit keys) */
    const double z[3] = { 0, 0, 0 };
    double h3[3] = { 999.5, 999.5, 999.5 };
    OK(grid_geometry(3, z, h3, 1.0, 1.0, &gp, &E));
    assert_int_equal(gp.ncell[0], 1000);
    assert_int_equal(gp.bits, 10);
    assert_int_equal(gp.key_bits, 30);
    assert_int_equal(gp.key64, 0);
    h3[0] = 1099.5;
    OK(grid_geometry(3, z, h3, 1.0, 1.0, &gp, &E));
    assert_int_equal(gp.bits, 11);
    assert_int_equal(gp.key_bits, 33);
    assert_int_equal(gp.key64, 1);
    /* 2D: up to 65536 cells per axis still 32-bit, more not (the cell is a little larger than
     * the radius in so wide a grid: about 60000 and 70000 cells here) */
    double h2[3] = { 61000, 10, 0 };
    OK(grid_geometry(2, z, h2, 1.0, 1.0, &gp, &E));
    assert_true(gp.ncell[0] > 32768 && gp.ncell[0] <= 65536);
    assert_int_equal(gp.key_bits, 32);
    assert_int_equal(gp.key64, 0);
    h2[0] = 71000;
    OK(grid_geometry(2, z, h2, 1.0, 1.0, &gp, &E));
    assert_true(gp.ncell[0] > 65536);
    assert_int_equal(gp.key_bits, 34);
    assert_int_equal(gp.key64, 1);
    /* a tiny tank still has one cell */
    OK(grid_geometry(3, z, z, 1.0, 1.0, &gp, &E));
    assert_int_equal(gp.n_cells, 1);
    assert_int_equal(gp.bits, 1);

    /* too many cells per axis: rejected, naming the scene key */
    double big[3] = { 3e6, 1, 0 };
    assert_int_equal(grid_geometry(2, z, big, 1.0, 1.0, &gp, &E), SPHSIM_E_SCENE);
    assert_non_null(strstr(E.msg, "grid.cell_ratio"));
    double cube[3] = { 3000, 3000, 3000 }; /* 2.7e10 cells: no 32-bit cell index */
    assert_int_equal(grid_geometry(3, z, cube, 1.0, 1.0, &gp, &E), SPHSIM_E_SCENE);
    assert_non_null(strstr(E.msg, "grid.cell_ratio"));
    assert_int_equal(grid_geometry(3, lo, hi, 0.1, 0.0, &gp, &E), SPHSIM_E_SCENE);
    assert_non_null(strstr(E.msg, "grid.cell_ratio"));
    assert_int_equal(grid_geometry(3, lo, hi, 0.1, NAN, &gp, &E), SPHSIM_E_SCENE);
    assert_int_equal(grid_geometry(3, lo, hi, -1.0, 1.0, &gp, &E), SPHSIM_E_SCENE);
    assert_int_equal(grid_geometry(4, lo, hi, 0.1, 1.0, &gp, &E), SPHSIM_E_SCENE);
    const double bad_hi[3] = { -1.0, 2.0, 1.6 };
    assert_int_equal(grid_geometry(3, lo, bad_hi, 0.1, 1.0, &gp, &E), SPHSIM_E_SCENE);
}

/* ---------------------------------------------------------------- sort */

enum { PAT_RANDOM, PAT_DUPES, PAT_SORTED, PAT_REVERSED, PAT_CONST };

static void fill_keys(uint64_t *k, size_t n, unsigned key_bits, int pattern)
{
    const uint64_t mask = key_bits >= 64 ? ~0ull : ((1ull << key_bits) - 1);
    for (size_t i = 0; i < n; ++i) {
        switch (pattern) {
        case PAT_RANDOM: k[i] = rnd64() & mask; break;
        case PAT_DUPES: k[i] = (rnd64() % 7) * (mask / 7); break;
        case PAT_SORTED: k[i] = (uint64_t)((double)i / (double)(n ? n : 1) * (double)mask) & mask; break;
        case PAT_REVERSED: k[i] = (uint64_t)((double)(n - i) / (double)(n ? n : 1) * (double)mask) & mask; break;
        default: k[i] = mask; break;
        }
    }
}

/* Sort n keys on the device and compare keys and permutation with the stable reference. */
static void check_sort(int key64, unsigned key_bits, size_t n, int pattern, const grid_sort_config *cfg)
{
    uint64_t *keys = malloc((n + 1) * 8), *ref_keys = malloc((n + 1) * 8);
    uint32_t *ref_idx = malloc((n + 1) * 4), *idx = malloc((n + 1) * 4);
    void *buf = malloc((n + 1) * 8);
    assert_true(keys && ref_keys && ref_idx && idx && buf);
    fill_keys(keys, n, key_bits, pattern);
    ref_sort_pairs(keys, n, ref_keys, ref_idx);

    grid_sort *s;
    OK(grid_sort_create(&s, &dev, key64, key_bits, n + 3, cfg, &E));
    const size_t ks = key64 ? 8 : 4;
    for (size_t i = 0; i < n; ++i) {
        if (key64) ((uint64_t *)buf)[i] = keys[i];
        else ((uint32_t *)buf)[i] = (uint32_t)keys[i];
    }
    OK(device_write(&dev, grid_sort_keys_in(s), 0, n * ks, buf, &E));
    OK(grid_sort_run(s, n, NULL, NULL, &E));
    OK(device_read(&dev, grid_sort_keys_out(s), 0, n * ks, buf, &E));
    OK(device_read(&dev, grid_sort_index(s), 0, n * 4, idx, &E));
    for (size_t i = 0; i < n; ++i) {
        const uint64_t k = key64 ? ((uint64_t *)buf)[i] : ((uint32_t *)buf)[i];
        if (k != ref_keys[i] || idx[i] != ref_idx[i])
            fail_msg("sort %d-bit, %u key bits, n = %zu, pattern %d, radix %u: slot %zu has key %llx index %u, "
                     "expected %llx index %u",
                     key64 ? 64 : 32, key_bits, n, pattern, cfg ? cfg->radix_bits : 0, i, (unsigned long long)k, idx[i],
                     (unsigned long long)ref_keys[i], ref_idx[i]);
    }
    grid_sort_destroy(s);
    free(keys);
    free(ref_keys);
    free(ref_idx);
    free(idx);
    free(buf);
}

static void test_sort_32(void **state)
{
    (void)state;
    const size_t sizes[] = { 0, 1, 2, 3, 1000, 4095, 4096, 4097, 3 * 4096 + 1, 100003 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
        for (int pat = PAT_RANDOM; pat <= PAT_CONST; ++pat) check_sort(0, 32, sizes[i], pat, NULL);
    check_sort(0, 21, 100003, PAT_RANDOM, NULL); /* last digit narrower than the others */
    check_sort(0, 2, 5000, PAT_RANDOM, NULL);    /* one pass */
    check_sort(0, 32, (1u << 20) + 7, PAT_RANDOM, NULL);
    check_sort(0, 30, (1u << 20) + 7, PAT_DUPES, NULL);
}

static void test_sort_64(void **state)
{
    (void)state;
    const size_t sizes[] = { 0, 1, 2, 4097, 70001 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
        for (int pat = PAT_RANDOM; pat <= PAT_CONST; ++pat) check_sort(1, 64, sizes[i], pat, NULL);
    check_sort(1, 33, 50001, PAT_RANDOM, NULL);
    check_sort(1, 63, (1u << 20) + 7, PAT_RANDOM, NULL);
}

static void test_sort_configurations(void **state)
{
    (void)state;
    const grid_sort_config cfgs[] = {
        { 1, 16, 1 },   { 3, 64, 3 },  { 4, 256, 16 }, { 5, 256, 8 },
        { 6, 128, 16 }, { 8, 256, 4 }, { 4, 64, 33 },  { 7, 128, 32 },
    };
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; ++c) {
        grid_sort *probe;
        if (grid_sort_create(&probe, &dev, 1, 40, 1, &cfgs[c], &E) != SPHSIM_OK) {
            assert_non_null(strstr(E.msg, "local memory")); /* only a device limit may refuse it */
            continue;
        }
        grid_sort_destroy(probe);
        check_sort(0, 32, 20011, PAT_RANDOM, &cfgs[c]);
        check_sort(0, 17, 20011, PAT_DUPES, &cfgs[c]);
        check_sort(1, 40, 9001, PAT_RANDOM, &cfgs[c]);
        check_sort(0, 32, 7, PAT_REVERSED, &cfgs[c]);
    }
    /* too many keys for the sorter */
    grid_sort *s;
    OK(grid_sort_create(&s, &dev, 0, 32, 10, NULL, &E));
    assert_int_equal(grid_sort_run(s, 11, NULL, NULL, &E), SPHSIM_E_DEVICE);
    grid_sort_destroy(s);
    assert_int_equal(grid_sort_create(&s, &dev, 0, 33, 10, NULL, &E), SPHSIM_E_DEVICE);
}

/* ---------------------------------------------------------------- cell keys and table */

/* The device's cell coordinate, the same float operations (neighbours.h grid_cell_coord). */
static int host_cell_coord(float x, float origin, float cell_inv, uint32_t ncell)
{
    const float c = floorf((x - origin) * cell_inv);
    if (!(c >= 0.0f)) return 0;
    if (c >= (float)ncell) return (int)ncell - 1;
    return (int)c;
}

static void host_cell(const grid_params *gp, const float *x, uint32_t c[3])
{
    for (int a = 0; a < 3; ++a)
        c[a] = a < (int)gp->dims ? (uint32_t)host_cell_coord(x[a], gp->origin[a], gp->cell_size_inv, gp->ncell[a]) : 0;
}

static void check_keys_and_table(int dims, double ratio, size_t n, double out_frac)
{
    const double lo[3] = { -1.0, 0.25, -0.5 }, hi[3] = { 1.0, 1.0, 0.5 };
    const double radius = dims == 3 ? 0.1 : 0.02;
    grid_params gp;
    OK(grid_geometry(dims, lo, hi, radius, ratio, &gp, &E));
    float *pos = calloc(n * 4 + 4, sizeof(float));
    for (size_t i = 0; i < n; ++i)
        for (int a = 0; a < dims; ++a) {
            const double ext = hi[a] - lo[a];
            pos[4 * i + a] = (float)(lo[a] - out_frac * ext + (1.0 + 2.0 * out_frac) * ext * rnd01());
        }
    grid *g;
    OK(grid_create(&g, &dev, &gp, n, &E));
    cl_mem b_pos = upload(pos, n * 16 + 16);
    const cl_uint zero = 0;
    cl_mem b_flags = upload(&zero, 4);
    OK(grid_build(g, b_pos, n, b_flags, &E));

    const size_t ks = gp.key64 ? 8 : 4;
    void *keys = malloc(n * ks + 8);
    uint32_t *idx = malloc(n * 4 + 4), *cs = malloc(gp.n_cells * 4), *ce = malloc(gp.n_cells * 4);
    OK(device_read(&dev, grid_keys(g), 0, n * ks, keys, &E));
    OK(device_read(&dev, grid_index(g), 0, n * 4, idx, &E));
    OK(device_read(&dev, grid_cell_start(g), 0, gp.n_cells * 4, cs, &E));
    OK(device_read(&dev, grid_cell_end(g), 0, gp.n_cells * 4, ce, &E));

    /* keys: the reference Morton code of the reference cell, sorted stably */
    uint64_t *hk = malloc(n * 8 + 8), *rk = malloc(n * 8 + 8);
    uint32_t *ri = malloc(n * 4 + 4), *count = calloc(gp.n_cells, 4);
    for (size_t i = 0; i < n; ++i) {
        uint32_t c[3];
        host_cell(&gp, pos + 4 * i, c);
        hk[i] = ref_morton_encode(dims, gp.bits, c);
        count[c[0] + gp.ncell[0] * (c[1] + gp.ncell[1] * c[2])]++;
    }
    ref_sort_pairs(hk, n, rk, ri);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t k = gp.key64 ? ((uint64_t *)keys)[i] : ((uint32_t *)keys)[i];
        if (k != rk[i] || idx[i] != ri[i])
            fail_msg("%dD slot %zu: key %llx index %u, expected %llx index %u", dims, i, (unsigned long long)k, idx[i],
                     (unsigned long long)rk[i], ri[i]);
    }
    /* table: every cell's run holds exactly its particles */
    size_t covered = 0;
    for (uint32_t c = 0; c < gp.n_cells; ++c) {
        assert_true(cs[c] <= ce[c]);
        assert_int_equal(ce[c] - cs[c], count[c]);
        for (uint32_t j = cs[c]; j < ce[c]; ++j) {
            uint32_t cc[3];
            host_cell(&gp, pos + 4 * idx[j], cc);
            assert_int_equal(cc[0] + gp.ncell[0] * (cc[1] + gp.ncell[1] * cc[2]), c);
        }
        covered += ce[c] - cs[c];
    }
    assert_int_equal(covered, n);
    /* gather through the permutation */
    cl_mem b_sorted;
    OK(device_alloc(&dev, n * 16 + 16, "sorted", &b_sorted, &E));
    OK(grid_gather(g, b_pos, b_sorted, 16, n, &E));
    float *sorted = malloc(n * 16 + 16);
    OK(device_read(&dev, b_sorted, 0, n * 16, sorted, &E));
    for (size_t i = 0; i < n; ++i) assert_memory_equal(sorted + 4 * i, pos + 4 * idx[i], 16);
    cl_uint flags;
    OK(device_read(&dev, b_flags, 0, 4, &flags, &E));
    assert_int_equal(flags, out_frac > 0 ? FLAG_OUTSIDE : 0);

    clReleaseMemObject(b_pos);
    clReleaseMemObject(b_flags);
    clReleaseMemObject(b_sorted);
    grid_destroy(g);
    free(pos);
    free(keys);
    free(idx);
    free(cs);
    free(ce);
    free(hk);
    free(rk);
    free(ri);
    free(count);
    free(sorted);
}

static void test_keys_and_cell_table(void **state)
{
    (void)state;
    check_keys_and_table(3, 1.0, 20000, 0.0);
    check_keys_and_table(3, 0.5, 20011, 0.1);
    check_keys_and_table(2, 1.0, 30001, 0.0);
    check_keys_and_table(2, 0.5, 30001, 0.05);
    check_keys_and_table(3, 1.0, 1, 0.0);
    check_keys_and_table(2, 1.0, 2, 0.0);
}

/* 64-bit keys through the whole build: 2D with 70000 cells along x. */
static void test_keys_64bit_grid(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 700.0, 0.03, 0 };
    grid_params gp;
    OK(grid_geometry(2, lo, hi, 0.01, 1.0, &gp, &E));
    assert_int_equal(gp.key64, 1);
    enum { N = 5000 };
    float *pos = calloc(N * 4, sizeof(float));
    for (int i = 0; i < N; ++i) {
        pos[4 * i] = (float)(700.0 * rnd01());
        pos[4 * i + 1] = (float)(0.03 * rnd01());
    }
    grid *g;
    OK(grid_create(&g, &dev, &gp, N, &E));
    cl_mem b_pos = upload(pos, N * 16);
    OK(grid_build(g, b_pos, N, NULL, &E));
    uint64_t keys[N], hk[N], rk[N];
    uint32_t idx[N], ri[N];
    OK(device_read(&dev, grid_keys(g), 0, sizeof keys, keys, &E));
    OK(device_read(&dev, grid_index(g), 0, sizeof idx, idx, &E));
    for (int i = 0; i < N; ++i) {
        uint32_t c[3];
        host_cell(&gp, pos + 4 * i, c);
        hk[i] = ref_morton_encode(2, gp.bits, c);
    }
    ref_sort_pairs(hk, N, rk, ri);
    for (int i = 0; i < N; ++i) {
        assert_true(keys[i] == rk[i]);
        assert_int_equal(idx[i], ri[i]);
    }
    clReleaseMemObject(b_pos);
    grid_destroy(g);
    free(pos);
}

/* ---------------------------------------------------------------- neighbour sets */

static const char *nb_kernel_src =
    "__kernel void nb_list(__global const float4 *pos, const uint n, __constant const grid_params *gp,\n"
    "                      __global const uint *cell_start, __global const uint *cell_end,\n"
    "                      __global const uint *idx, const uint max_nb, __global uint *count, __global uint *list)\n"
    "{\n"
    "    const uint i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    const float4 x_i = pos[i];\n"
    "    const float radius2 = gp->radius * gp->radius;\n"
    "    uint c = 0;\n"
    "    NB_WALK_BEGIN(gp, cell_start, cell_end, pos, x_i, radius2, j)\n"
    "        float4 dx = x_i - pos[j];\n"
    "        dx.w = 0.0f;\n"
    "        const float r2 = dot(dx, dx);\n"
    "        if (r2 >= radius2) continue;\n"
    "        if (c < max_nb) list[(size_t)i * max_nb + c] = idx[j];\n"
    "        ++c;\n"
    "    NB_WALK_END\n"
    "    count[i] = c;\n"
    "}\n";

/* The walks of neighbours.h under test: the plain walk and the in-range walk (SPH forces); every
 * neighbour-set check runs both. */
#define NB_WALKS 2
static const char *nb_walk_name[NB_WALKS] = { "plain walk", "in-range walk" };
static const char *nb_walk_defs[NB_WALKS] = {
    "#define NB_WALK_BEGIN(gp, cs, ce, pos, xi, r2, j) NEIGHBOURS_BEGIN(gp, cs, ce, xi, j)\n"
    "#define NB_WALK_END NEIGHBOURS_END\n",
    "#define NB_WALK_BEGIN NEIGHBOURS_IN_RANGE_BEGIN\n#define NB_WALK_END NEIGHBOURS_IN_RANGE_END\n"
};
static cl_program nb_prog[NB_WALKS];
static cl_kernel nb_kernel[NB_WALKS];

static void nb_kernel_build(int walk)
{
    if (nb_kernel[walk]) return;
    char *head = device_kernel_source(NULL, "neighbours.h", &E);
    assert_non_null(head);
    size_t len = strlen(nb_walk_defs[walk]) + strlen(head) + strlen(nb_kernel_src) + 2;
    char *src = malloc(len);
    snprintf(src, len, "%s%s\n%s", nb_walk_defs[walk], head, nb_kernel_src);
    free(head);
    cl_int err;
    const char *srcs[1] = { src };
    nb_prog[walk] = clCreateProgramWithSource(dev.ctx, 1, srcs, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    err = clBuildProgram(nb_prog[walk], 1, &dev.device, "-cl-std=CL1.2", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(nb_prog[walk], dev.device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fail_msg("test kernel build failed (%s): %s", nb_walk_name[walk], log);
    }
    free(src);
    nb_kernel[walk] = clCreateKernel(nb_prog[walk], "nb_list", &err);
    assert_int_equal(err, CL_SUCCESS);
}

typedef struct nb_case {
    int dims;
    double lo[3], hi[3];
    double radius, ratio;
} nb_case;

/* Build the grid on pts (n float4), list every particle's neighbours with NEIGHBOURS_BEGIN
 * and compare with the brute force: no pair within the radius missed, none outside it listed,
 * nobody listed twice. Pairs within 1e-6 of the radius (relative) may go either way.
 * Returns the number of pairs within the radius that were checked. */
static size_t check_neighbours(const nb_case *c, const float *pts, size_t n, const char *what)
{
    grid_params gp;
    OK(grid_geometry(c->dims, c->lo, c->hi, c->radius, c->ratio, &gp, &E));
    grid *g;
    OK(grid_create(&g, &dev, &gp, n, &E));
    cl_mem b_pos = upload(pts, n * 16), b_sorted;
    OK(device_alloc(&dev, n * 16, "sorted positions", &b_sorted, &E));
    OK(grid_build(g, b_pos, n, NULL, &E));
    OK(grid_gather(g, b_pos, b_sorted, 16, n, &E));
    const cl_uint max_nb = 1024, n32 = (cl_uint)n;
    cl_mem b_count, b_list;
    OK(device_alloc(&dev, n * 4, "count", &b_count, &E));
    OK(device_alloc(&dev, n * max_nb * 4, "list", &b_list, &E));
    cl_mem params = grid_params_buffer(g), cs = grid_cell_start(g), ce = grid_cell_end(g), idxb = grid_index(g);
    uint32_t *count = malloc(n * 4), *list = malloc(n * max_nb * 4), *idx = malloc(n * 4);
    uint32_t *seen = calloc(n, 4);
    const double radius = (double)gp.radius;
    size_t checked = 0;
    for (int walk = 0; walk < NB_WALKS; ++walk) {
        nb_kernel_build(walk);
        memset(seen, 0, n * 4);
        checked = 0;
        cl_kernel k = nb_kernel[walk];
        clSetKernelArg(k, 0, sizeof b_sorted, &b_sorted);
        clSetKernelArg(k, 1, sizeof n32, &n32);
        clSetKernelArg(k, 2, sizeof params, &params);
        clSetKernelArg(k, 3, sizeof cs, &cs);
        clSetKernelArg(k, 4, sizeof ce, &ce);
        clSetKernelArg(k, 5, sizeof idxb, &idxb);
        clSetKernelArg(k, 6, sizeof max_nb, &max_nb);
        clSetKernelArg(k, 7, sizeof b_count, &b_count);
        clSetKernelArg(k, 8, sizeof b_list, &b_list);
        OK(device_run1d(&dev, k, n, 64, &E));
        OK(device_read(&dev, b_count, 0, n * 4, count, &E));
        OK(device_read(&dev, b_list, 0, n * max_nb * 4, list, &E));
        OK(device_read(&dev, idxb, 0, n * 4, idx, &E));

        for (size_t i = 0; i < n; ++i) {
            const uint32_t a = idx[i], stamp = (uint32_t)i + 1;
            if (count[i] > max_nb)
                fail_msg("%s, %s: particle %u has %u neighbours, more than the test lists", what, nb_walk_name[walk], a,
                         count[i]);
            for (uint32_t q = 0; q < count[i]; ++q) {
                const uint32_t b = list[i * max_nb + q];
                if (b >= n) fail_msg("%s, %s: neighbour index %u out of range", what, nb_walk_name[walk], b);
                if (seen[b] == stamp)
                    fail_msg("%s, %s: particle %u visited neighbour %u twice", what, nb_walk_name[walk], a, b);
                seen[b] = stamp;
            }
            for (uint32_t b = 0; b < n; ++b) {
                int border;
                const int within = ref_within(pts + 4 * a, pts + 4 * b, c->dims, radius, 1e-6, &border);
                if (border) continue;
                const int listed = seen[b] == stamp;
                if (within != listed) {
                    const float *pa = pts + 4 * a, *pb = pts + 4 * b;
                    double r2 = 0;
                    for (int ax = 0; ax < c->dims; ++ax) r2 += ((double)pa[ax] - pb[ax]) * ((double)pa[ax] - pb[ax]);
                    fail_msg("%s, %s: pair (%u, %u) at distance %.9g (radius %.9g) %s; positions (%.9g %.9g %.9g) "
                             "and (%.9g %.9g %.9g), cells %d/%d",
                             what, nb_walk_name[walk], a, b, sqrt(r2), radius, within ? "missed" : "listed but outside",
                             pa[0], pa[1], pa[2], pb[0], pb[1], pb[2],
                             host_cell_coord(pa[0], gp.origin[0], gp.cell_size_inv, gp.ncell[0]),
                             host_cell_coord(pb[0], gp.origin[0], gp.cell_size_inv, gp.ncell[0]));
                }
                checked += within;
            }
        }
        assert_true(checked > n); /* the case must have real neighbours besides every particle itself */
    }
    free(count);
    free(list);
    free(idx);
    free(seen);
    clReleaseMemObject(b_pos);
    clReleaseMemObject(b_sorted);
    clReleaseMemObject(b_count);
    clReleaseMemObject(b_list);
    grid_destroy(g);
    return checked;
}

static float *alloc_pts(size_t n) { return calloc(n * 4 + 4, sizeof(float)); }

/* Uniform in the tank grown by `out` (fraction of the extent) on every side. */
static void fill_uniform(float *p, size_t n, const nb_case *c, double out)
{
    for (size_t i = 0; i < n; ++i)
        for (int a = 0; a < c->dims; ++a) {
            const double ext = c->hi[a] - c->lo[a];
            p[4 * i + a] = (float)(c->lo[a] - out * ext + (1.0 + 2.0 * out) * ext * rnd01());
        }
}

static void fill_clustered(float *p, size_t n, const nb_case *c, int clusters, double sigma)
{
    double centre[16][3];
    for (int k = 0; k < clusters; ++k)
        for (int a = 0; a < 3; ++a) centre[k][a] = c->lo[a] + (c->hi[a] - c->lo[a]) * rnd01();
    for (size_t i = 0; i < n; ++i) {
        const int k = (int)(rnd64() % (uint64_t)clusters);
        for (int a = 0; a < c->dims; ++a) p[4 * i + a] = (float)(centre[k][a] + sigma * rnd_normal());
    }
}

static void test_neighbours_uniform_and_clustered(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims)
        for (int r = 0; r < 2; ++r) {
            const double ratio = r ? 0.5 : 1.0;
            nb_case c = { dims, { -0.2, -0.1, 0.0 }, { 0.8, 0.5, 0.6 }, dims == 3 ? 0.07 : 0.03, ratio };
            const size_t n = dims == 3 ? 3000 : 2500;
            float *p = alloc_pts(n);
            char what[96];
            fill_uniform(p, n, &c, 0.0);
            snprintf(what, sizeof what, "uniform %dD ratio %g", dims, ratio);
            check_neighbours(&c, p, n, what);
            fill_uniform(p, n, &c, 0.15); /* beyond the walls by up to 0.15 m: several cells */
            snprintf(what, sizeof what, "uniform %dD ratio %g with outside points", dims, ratio);
            check_neighbours(&c, p, n, what);
            fill_clustered(p, n, &c, 5, dims == 3 ? 0.03 : 0.01);
            snprintf(what, sizeof what, "clustered %dD ratio %g", dims, ratio);
            check_neighbours(&c, p, n, what);
            free(p);
        }
    /* far from the coordinate origin: float positions are coarse there */
    nb_case far = { 2, { 1000.0, -3.0, 0 }, { 1000.5, -2.6, 0 }, 0.02, 1.0 };
    float *p = alloc_pts(2000);
    fill_uniform(p, 2000, &far, 0.05);
    check_neighbours(&far, p, 2000, "2D at x = 1000 m");
    free(p);
}

/* Points exactly on cell borders and one ulp either side, with partners just inside and just
 * outside the radius across the border; and points exactly at and beyond the walls. */
static void test_neighbours_borders_and_walls(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims)
        for (int r = 0; r < 2; ++r) {
            const double ratio = r ? 0.5 : 1.0;
            nb_case c = { dims, { -0.3, 0.1, -0.2 }, { 0.3, 0.5, 0.2 }, 0.05, ratio };
            grid_params gp;
            OK(grid_geometry(dims, c.lo, c.hi, c.radius, c.ratio, &gp, &E));
            const size_t cap = 20000;
            float *p = alloc_pts(cap);
            size_t n = 0;
            /* borders along x (k-th border at origin + k cell), y and z random inside */
            for (uint32_t k = 0; k <= gp.ncell[0] && n + 40 < cap; ++k) {
                const float border = gp.origin[0] + (float)k * gp.cell_size;
                const float xs[5] = { nextafterf(nextafterf(border, -INFINITY), -INFINITY),
                                      nextafterf(border, -INFINITY), border, nextafterf(border, INFINITY),
                                      nextafterf(nextafterf(border, INFINITY), INFINITY) };
                for (int v = 0; v < 5; ++v) {
                    const float y = (float)(c.lo[1] + (c.hi[1] - c.lo[1]) * rnd01());
                    const float z = dims == 3 ? (float)(c.lo[2] + (c.hi[2] - c.lo[2]) * rnd01()) : 0.0f;
                    /* partners along +x and -x at 1 -+ 1e-5 radius, and diagonal ones */
                    const double f[4] = { 1.0 - 1e-5, 1.0 + 1e-5, 1.0 - 3e-6, 1.0 + 3e-6 };
                    float *q = p + 4 * n;
                    q[0] = xs[v], q[1] = y, q[2] = z;
                    ++n;
                    for (int s = 0; s < 4; ++s) {
                        const double d = f[s] * c.radius;
                        const double dir[3][3] = { { 1, 0, 0 }, { -1, 0, 0 }, { 0.6, 0.8, 0 } };
                        for (int m = 0; m < 3; ++m) {
                            float *o = p + 4 * n++;
                            o[0] = (float)(xs[v] + d * dir[m][0]);
                            o[1] = (float)(y + d * dir[m][1]);
                            o[2] = z;
                        }
                    }
                }
            }
            /* borders along y and (3D) z */
            for (int ax = 1; ax < dims; ++ax)
                for (uint32_t k = 0; k <= gp.ncell[ax] && n + 20 < cap; ++k) {
                    const float border = gp.origin[ax] + (float)k * gp.cell_size;
                    for (int v = -1; v <= 1; ++v) {
                        const float b = v < 0   ? nextafterf(border, -INFINITY)
                                        : v > 0 ? nextafterf(border, INFINITY)
                                                : border;
                        float base[3];
                        for (int a = 0; a < 3; ++a)
                            base[a] = a < dims ? (float)(c.lo[a] + (c.hi[a] - c.lo[a]) * rnd01()) : 0.0f;
                        base[ax] = b;
                        memcpy(p + 4 * n++, base, 12);
                        for (int s = -1; s <= 1; s += 2) {
                            float *o = p + 4 * n++;
                            memcpy(o, base, 12);
                            o[ax] = (float)(b + s * (1.0 - 1e-5) * c.radius);
                        }
                    }
                }
            /* walls: at the wall, and 0.5, 1, 3 radii beyond, with partners inside */
            const double beyond[5] = { 0.0, 0.5, 1.0, 3.0, -0.5 };
            for (int ax = 0; ax < dims; ++ax)
                for (int side = 0; side < 2; ++side)
                    for (int bi = 0; bi < 5; ++bi)
                        for (int rep = 0; rep < 8 && n + 4 < cap; ++rep) {
                            float base[3];
                            for (int a = 0; a < 3; ++a)
                                base[a] = a < dims ? (float)(c.lo[a] + (c.hi[a] - c.lo[a]) * rnd01()) : 0.0f;
                            const double wall = side ? c.hi[ax] : c.lo[ax];
                            const double sgn = side ? 1.0 : -1.0;
                            base[ax] = bi == 0 ? (float)wall : (float)(wall + sgn * beyond[bi] * c.radius);
                            memcpy(p + 4 * n++, base, 12);
                            for (int s = 0; s < 3; ++s) {
                                float *o = p + 4 * n++;
                                memcpy(o, base, 12);
                                o[ax] = (float)(base[ax] - sgn * (0.4 + 0.3 * s) * c.radius);
                            }
                        }
            /* corners of the tank, exactly */
            for (int m = 0; m < (1 << dims); ++m) {
                float *o = p + 4 * n++;
                for (int a = 0; a < dims; ++a) o[a] = (float)(((m >> a) & 1) ? c.hi[a] : c.lo[a]);
            }
            char what[96];
            snprintf(what, sizeof what, "borders and walls %dD ratio %g (%zu points)", dims, ratio, n);
            check_neighbours(&c, p, n, what);
            free(p);
        }
}

/* Pairs just inside the radius across cell borders thousands of cells from the origin, where
 * the float cell coordinate floor((x - origin) * cell_inv) carries the largest rounding error:
 * the last float of cell k-1 with the first float of cell k+reach (reach+1 cells apart: they
 * must be farther apart than the radius) and with the largest float closer than the radius. */
static void test_neighbours_far_cells(void **state)
{
    (void)state;
    for (int r = 0; r < 4; ++r) {
        const double x0 = r & 2 ? -1.3 : 0.0;
        nb_case c = { 2, { x0, 0.0, 0 }, { x0 + 20.0, 0.05, 0 }, 0.01, r & 1 ? 0.5 : 1.0 };
        grid_params gp;
        OK(grid_geometry(2, c.lo, c.hi, c.radius, c.ratio, &gp, &E));
        const double radius = (double)gp.radius;
        const size_t cap = 4 * gp.ncell[0] + 16;
        float *p = alloc_pts(cap);
        size_t n = 0;
        for (uint32_t k = 1; k + gp.reach < gp.ncell[0]; k += 2 * gp.reach + 1) {
            /* the last float of cell k - 1, found on the host with the device's arithmetic */
            float xa = gp.origin[0] + (float)k * gp.cell_size;
            while (host_cell_coord(xa, gp.origin[0], gp.cell_size_inv, gp.ncell[0]) >= (int)k)
                xa = nextafterf(xa, -INFINITY);
            while (host_cell_coord(nextafterf(xa, INFINITY), gp.origin[0], gp.cell_size_inv, gp.ncell[0]) < (int)k)
                xa = nextafterf(xa, INFINITY);
            /* the first float of cell k + reach */
            float xb = xa;
            while (host_cell_coord(xb, gp.origin[0], gp.cell_size_inv, gp.ncell[0]) < (int)(k + gp.reach))
                xb = nextafterf(xb, INFINITY);
            /* the largest float closer than the radius (outside the 1e-6 band) */
            float xc = (float)(xa + radius);
            while ((double)xc - (double)xa >= radius * (1.0 - 1.5e-6)) xc = nextafterf(xc, -INFINITY);
            const float y = 0.02f;
            const float xs[3] = { xa, xb, xc };
            for (int v = 0; v < 3; ++v) {
                float *o = p + 4 * n++;
                o[0] = xs[v], o[1] = y;
            }
        }
        char what[64];
        snprintf(what, sizeof what, "far cells ratio %g, origin %g (%u cells)", c.ratio, x0, gp.ncell[0]);
        check_neighbours(&c, p, n, what);
        free(p);
    }
}

/* ---------------------------------------------------------------- determinism and flags */

static void test_determinism_and_flags(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 };
    grid_params gp;
    OK(grid_geometry(3, lo, hi, 0.05, 1.0, &gp, &E));
    enum { N = 50000 };
    float *pos = calloc(N * 4, sizeof(float));
    for (int i = 0; i < N; ++i)
        for (int a = 0; a < 3; ++a) pos[4 * i + a] = (float)(0.2 * (int)(rnd01() * 5.0) + 0.01 * rnd01());
    grid *g;
    OK(grid_create(&g, &dev, &gp, N, &E));
    cl_uint zero = 0, flags = 0;
    cl_mem b_pos = upload(pos, N * 16), b_flags = upload(&zero, 4);
    uint32_t *a = malloc(N * 4), *b = malloc(N * 4);
    OK(grid_build(g, b_pos, N, b_flags, &E));
    OK(device_read(&dev, grid_index(g), 0, N * 4, a, &E));
    for (int rep = 0; rep < 3; ++rep) {
        OK(grid_build(g, b_pos, N, b_flags, &E));
        OK(device_read(&dev, grid_index(g), 0, N * 4, b, &E));
        assert_memory_equal(a, b, N * 4);
    }
    OK(device_read(&dev, b_flags, 0, 4, &flags, &E));
    assert_int_equal(flags, 0);

    /* NaN, Inf and outside positions: flagged, mapped to valid cells */
    pos[4 * 10 + 0] = NAN;
    pos[4 * 20 + 1] = INFINITY;
    pos[4 * 30 + 2] = -INFINITY;
    OK(device_write(&dev, b_pos, 0, N * 16, pos, &E));
    OK(grid_build(g, b_pos, N, b_flags, &E));
    OK(device_read(&dev, b_flags, 0, 4, &flags, &E));
    assert_int_equal(flags, FLAG_NONFINITE);
    uint32_t *cs = malloc(gp.n_cells * 4), *ce = malloc(gp.n_cells * 4);
    OK(device_read(&dev, grid_cell_start(g), 0, gp.n_cells * 4, cs, &E));
    OK(device_read(&dev, grid_cell_end(g), 0, gp.n_cells * 4, ce, &E));
    size_t covered = 0;
    for (uint32_t c = 0; c < gp.n_cells; ++c) covered += ce[c] - cs[c];
    assert_int_equal(covered, N);

    OK(device_write(&dev, b_flags, 0, 4, &zero, &E));
    pos[4 * 10 + 0] = 0.5f;
    pos[4 * 20 + 1] = 0.5f;
    pos[4 * 30 + 2] = 0.5f;
    pos[4 * 40 + 0] = -0.3f;
    pos[4 * 50 + 2] = 7.0f;
    OK(device_write(&dev, b_pos, 0, N * 16, pos, &E));
    OK(grid_build(g, b_pos, N, b_flags, &E));
    OK(device_read(&dev, b_flags, 0, 4, &flags, &E));
    assert_int_equal(flags, FLAG_OUTSIDE);
    /* both bits from one build */
    OK(device_write(&dev, b_flags, 0, 4, &zero, &E));
    pos[4 * 60 + 1] = NAN;
    OK(device_write(&dev, b_pos, 0, N * 16, pos, &E));
    OK(grid_build(g, b_pos, N, b_flags, &E));
    OK(device_read(&dev, b_flags, 0, 4, &flags, &E));
    assert_int_equal(flags, FLAG_OUTSIDE | FLAG_NONFINITE);
    /* particles exactly at the walls are inside */
    OK(device_write(&dev, b_flags, 0, 4, &zero, &E));
    for (int i = 0; i < N; ++i)
        for (int ax = 0; ax < 3; ++ax) pos[4 * i + ax] = (float)((i >> ax) & 1);
    OK(device_write(&dev, b_pos, 0, N * 16, pos, &E));
    OK(grid_build(g, b_pos, N, b_flags, &E));
    OK(device_read(&dev, b_flags, 0, 4, &flags, &E));
    assert_int_equal(flags, 0);
    /* no flag buffer at all is fine */
    OK(grid_build(g, b_pos, N, NULL, &E));

    clReleaseMemObject(b_pos);
    clReleaseMemObject(b_flags);
    grid_destroy(g);
    free(pos);
    free(a);
    free(b);
    free(cs);
    free(ce);
}

/* ---------------------------------------------------------------- kept order */

/* The cell table and keys of the last build, for comparison. */
static void read_table(grid *g, const grid_params *gp, size_t n, uint32_t *cs, uint32_t *ce, uint32_t *keys)
{
    OK(device_read(&dev, grid_cell_start(g), 0, gp->n_cells * 4, cs, &E));
    OK(device_read(&dev, grid_cell_end(g), 0, gp->n_cells * 4, ce, &E));
    if (n) OK(device_read(&dev, grid_keys(g), 0, n * 4, keys, &E));
}

/* grid_build_keep: positions already in key order keep it (no sort: grid_index() NULL, no
 * gather) with the cell table and keys of a full build; any key out of order sorts as
 * grid_build does; the flags come either way. */
static void test_kept_order(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 };
    grid_params gp;
    OK(grid_geometry(3, lo, hi, 0.05, 1.0, &gp, &E));
    assert_false(gp.key64);
    enum { N = 20000 };
    float *pos = calloc(N * 4, sizeof(float)), *sorted = calloc(N * 4, sizeof(float));
    for (int i = 0; i < N; ++i)
        for (int a = 0; a < 3; ++a) pos[4 * i + a] = (float)rnd01();
    grid *g;
    OK(grid_create(&g, &dev, &gp, N, &E));
    cl_uint zero = 0, flags = 0;
    cl_mem b_pos = upload(pos, N * 16), b_sorted, b_flags = upload(&zero, 4);
    OK(device_alloc(&dev, N * 16, "sorted", &b_sorted, &E));
    const size_t cells = gp.n_cells;
    uint32_t *cs0 = malloc(cells * 4), *ce0 = malloc(cells * 4), *cs1 = malloc(cells * 4), *ce1 = malloc(cells * 4);
    uint32_t *k0 = malloc(N * 4), *k1 = malloc(N * 4), *i0 = malloc(N * 4), *i1 = malloc(N * 4);

    /* out of order: the sort, as grid_build */
    OK(grid_build(g, b_pos, N, NULL, &E));
    read_table(g, &gp, N, cs0, ce0, k0);
    OK(device_read(&dev, grid_index(g), 0, N * 4, i0, &E));
    int kept = -1;
    OK(grid_build_keep(g, b_pos, N, NULL, &kept, &E));
    assert_int_equal(kept, 0);
    assert_non_null(grid_index(g));
    read_table(g, &gp, N, cs1, ce1, k1);
    OK(device_read(&dev, grid_index(g), 0, N * 4, i1, &E));
    assert_memory_equal(i0, i1, N * 4);
    assert_memory_equal(cs0, cs1, cells * 4);
    assert_memory_equal(ce0, ce1, cells * 4);
    assert_memory_equal(k0, k1, N * 4);

    /* in order (gathered by that sort), a NaN first (its key, cell 0, is the smallest) */
    OK(grid_gather(g, b_pos, b_sorted, 16, N, &E));
    OK(device_read(&dev, b_sorted, 0, N * 16, sorted, &E));
    sorted[0] = NAN;
    OK(device_write(&dev, b_sorted, 0, N * 16, sorted, &E));
    OK(grid_build(g, b_sorted, N, NULL, &E)); /* the reference: a full build */
    read_table(g, &gp, N, cs0, ce0, k0);
    OK(device_read(&dev, grid_index(g), 0, N * 4, i0, &E));
    for (uint32_t i = 0; i < N; ++i) assert_int_equal(i0[i], i); /* the sort kept the order too */
    OK(grid_build_keep(g, b_sorted, N, b_flags, &kept, &E));
    assert_int_equal(kept, 1);
    assert_null(grid_index(g));
    read_table(g, &gp, N, cs1, ce1, k1);
    assert_memory_equal(cs0, cs1, cells * 4);
    assert_memory_equal(ce0, ce1, cells * 4);
    assert_memory_equal(k0, k1, N * 4);
    OK(device_read(&dev, b_flags, 0, 4, &flags, &E));
    assert_int_equal(flags, FLAG_NONFINITE);
    assert_int_equal(grid_gather(g, b_pos, b_sorted, 16, N, &E), SPHSIM_E_DEVICE); /* no permutation */

    /* the last two particles swapped, with different keys: out of order again */
    int last = N - 1, other = last - 1;
    while (other > 0 && k0[other] == k0[last]) --other;
    assert_true(k0[other] < k0[last]);
    for (int a = 0; a < 4; ++a) {
        const float t = sorted[4 * other + a];
        sorted[4 * other + a] = sorted[4 * last + a];
        sorted[4 * last + a] = t;
    }
    OK(device_write(&dev, b_sorted, 0, N * 16, sorted, &E));
    OK(grid_build_keep(g, b_sorted, N, NULL, &kept, &E));
    assert_int_equal(kept, 0);
    OK(device_read(&dev, grid_index(g), 0, N * 4, i1, &E));
    assert_int_equal(i1[other], last);      /* the smaller key first */
    assert_int_equal(i1[other + 1], other); /* then the equal keys in their order */

    /* one particle and none are in order */
    OK(grid_build_keep(g, b_pos, 1, NULL, &kept, &E));
    assert_int_equal(kept, 1);
    OK(grid_build_keep(g, b_pos, 0, NULL, &kept, &E));
    assert_int_equal(kept, 1);
    read_table(g, &gp, 0, cs1, ce1, k1);
    for (size_t c = 0; c < cells; ++c) assert_int_equal(cs1[c], ce1[c]);

    free(pos);
    free(sorted);
    free(cs0);
    free(ce0);
    free(cs1);
    free(ce1);
    free(k0);
    free(k1);
    free(i0);
    free(i1);
    clReleaseMemObject(b_pos);
    clReleaseMemObject(b_sorted);
    clReleaseMemObject(b_flags);
    grid_destroy(g);
}

/* ---------------------------------------------------------------- gather, empty grid */

static void test_gather_sizes(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 0 };
    grid_params gp;
    OK(grid_geometry(2, lo, hi, 0.1, 1.0, &gp, &E));
    enum { N = 3001 };
    float pos[N * 4] = { 0 };
    for (int i = 0; i < N; ++i) pos[4 * i] = (float)rnd01(), pos[4 * i + 1] = (float)rnd01();
    grid *g;
    OK(grid_create(&g, &dev, &gp, N, &E));
    cl_mem b_pos = upload(pos, sizeof pos);
    OK(grid_build(g, b_pos, N, NULL, &E));
    uint32_t idx[N];
    OK(device_read(&dev, grid_index(g), 0, sizeof idx, idx, &E));
    const size_t sizes[5] = { 1, 2, 4, 8, 16 };
    unsigned char *src = malloc(N * 16), *dst = malloc(N * 16);
    for (int s = 0; s < 5; ++s) {
        const size_t es = sizes[s];
        for (size_t i = 0; i < N * es; ++i) src[i] = (unsigned char)rnd64();
        cl_mem bs = upload(src, N * es), bd;
        OK(device_alloc(&dev, N * es, "dst", &bd, &E));
        OK(grid_gather(g, bs, bd, es, N, &E));
        OK(device_read(&dev, bd, 0, N * es, dst, &E));
        for (int i = 0; i < N; ++i) assert_memory_equal(dst + i * es, src + idx[i] * es, es);
        clReleaseMemObject(bs);
        clReleaseMemObject(bd);
    }
    assert_int_equal(grid_gather(g, b_pos, b_pos, 3, N, &E), SPHSIM_E_DEVICE);
    assert_int_equal(grid_build(g, b_pos, N + 1, NULL, &E), SPHSIM_E_DEVICE);
    free(src);
    free(dst);
    clReleaseMemObject(b_pos);
    grid_destroy(g);
}

static void test_empty_grid(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 };
    grid_params gp;
    OK(grid_geometry(3, lo, hi, 0.25, 1.0, &gp, &E));
    grid *g;
    OK(grid_create(&g, &dev, &gp, 100, &E));
    float one[4] = { 0.5f, 0.5f, 0.5f, 0 };
    cl_mem b_pos = upload(one, sizeof one);
    OK(grid_build(g, b_pos, 1, NULL, &E)); /* one particle, then none: the table must empty */
    OK(grid_build(g, b_pos, 0, NULL, &E));
    uint32_t *cs = malloc(gp.n_cells * 4), *ce = malloc(gp.n_cells * 4);
    OK(device_read(&dev, grid_cell_start(g), 0, gp.n_cells * 4, cs, &E));
    OK(device_read(&dev, grid_cell_end(g), 0, gp.n_cells * 4, ce, &E));
    for (uint32_t c = 0; c < gp.n_cells; ++c) assert_int_equal(cs[c], ce[c]);
    OK(grid_gather(g, b_pos, b_pos, 16, 0, &E));
    double mn = -1, mc = -1;
    OK(grid_neighbour_stats(g, b_pos, 0, &mn, &mc, &E));
    assert_true(mn == 0.0 && mc == 0.0);
    free(cs);
    free(ce);
    clReleaseMemObject(b_pos);
    grid_destroy(g);
}

/* ---------------------------------------------------------------- statistics, timing, memory */

static void test_statistics_against_host_count(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; ++dims) {
        nb_case c = { dims, { 0, 0, 0 }, { 1.0, 0.6, 0.4 }, dims == 3 ? 0.08 : 0.04, dims == 3 ? 1.0 : 0.5 };
        const size_t n = 4000;
        float *p = alloc_pts(n);
        fill_clustered(p, n / 2, &c, 3, 0.05);
        nb_case in = c;
        fill_uniform(p + 4 * (n / 2), n - n / 2, &in, 0.0);
        grid_params gp;
        OK(grid_geometry(dims, c.lo, c.hi, c.radius, c.ratio, &gp, &E));
        grid *g;
        OK(grid_create(&g, &dev, &gp, n, &E));
        cl_mem b_pos = upload(p, n * 16), b_sorted;
        OK(device_alloc(&dev, n * 16, "sorted", &b_sorted, &E));
        OK(grid_build(g, b_pos, n, NULL, &E));
        OK(grid_gather(g, b_pos, b_sorted, 16, n, &E));
        double mn, mc;
        OK(grid_neighbour_stats(g, b_sorted, n, &mn, &mc, &E));
        /* host: neighbours by brute force, candidates = particles in the scanned block */
        uint32_t *cell = malloc(n * 3 * 4);
        for (size_t i = 0; i < n; ++i) host_cell(&gp, p + 4 * i, cell + 3 * i);
        double sum_nb = 0, sum_cand = 0, border_pairs = 0;
        const int r = (int)gp.reach;
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < n; ++j) {
                int border;
                sum_nb += ref_within(p + 4 * i, p + 4 * j, dims, (double)gp.radius, 1e-6, &border);
                border_pairs += border;
                int in_block = 1;
                for (int a = 0; a < dims; ++a) in_block &= abs((int)cell[3 * i + a] - (int)cell[3 * j + a]) <= r;
                sum_cand += in_block;
            }
        assert_true(fabs(mn - sum_nb / n) <= border_pairs / n + 1e-12);
        assert_true(fabs(mc - sum_cand / n) < 1e-9);
        assert_true(mn > 2.0 && mc > mn); /* a meaningful case */
        free(cell);
        free(p);
        clReleaseMemObject(b_pos);
        clReleaseMemObject(b_sorted);
        grid_destroy(g);
    }
}

static void test_timing_and_bytes(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 1 };
    grid_params gp;
    OK(grid_geometry(3, lo, hi, 0.05, 1.0, &gp, &E));
    enum { N = 20000 };
    float *pos = calloc(N * 4, sizeof(float));
    for (int i = 0; i < N * 4; ++i) pos[i] = (float)rnd01();
    grid *g;
    OK(grid_create(&g, &dev, &gp, N, &E));
    cl_mem b_pos = upload(pos, N * 16);
    OK(grid_build(g, b_pos, N, NULL, &E));
    double tk, ts, tt;
    OK(grid_last_timing(g, &tk, &ts, &tt, &E));
    assert_true(dev.profiling);
    assert_true(tk > 0 && ts > 0 && tt > 0);
    assert_true(tk < 60 && ts < 60 && tt < 60);
    /* memory: O(particles + cells), about 16 bytes per particle with 32-bit keys */
    const size_t b1 = grid_bytes(&gp, 1000000), b2 = grid_bytes(&gp, 2000000);
    assert_true(b2 - b1 >= 16 * 1000000 && b2 - b1 <= 17 * 1000000);
    assert_true(b1 >= 8 * (size_t)gp.n_cells);
    clReleaseMemObject(b_pos);
    grid_destroy(g);
    free(pos);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_morton_against_bitwise_reference),
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_sort_32),
        cmocka_unit_test(test_sort_64),
        cmocka_unit_test(test_sort_configurations),
        cmocka_unit_test(test_keys_and_cell_table),
        cmocka_unit_test(test_keys_64bit_grid),
        cmocka_unit_test(test_neighbours_uniform_and_clustered),
        cmocka_unit_test(test_neighbours_borders_and_walls),
        cmocka_unit_test(test_neighbours_far_cells),
        cmocka_unit_test(test_determinism_and_flags),
        cmocka_unit_test(test_kept_order),
        cmocka_unit_test(test_gather_sizes),
        cmocka_unit_test(test_empty_grid),
        cmocka_unit_test(test_statistics_against_host_count),
        cmocka_unit_test(test_timing_and_bytes),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    for (int w = 0; w < NB_WALKS; ++w) {
        if (nb_kernel[w]) clReleaseKernel(nb_kernel[w]);
        if (nb_prog[w]) clReleaseProgram(nb_prog[w]);
    }
    return rc;
}
