/* test_decomp: the split of a run over MPI ranks (src/decomp.c), without MPI: the axis, the cuts
 * at equal counts, owners and halo reach against brute force, the routing of particles (each
 * owned by exactly one rank, copied to every rank whose slab or halo holds it, to no other), the
 * imbalance that moves the cuts, and the id search. tests/python/test_mpi.py runs the ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decomp.h"

static void test_axis(void **state)
{
    (void)state;
    const double lo[3] = { 0, 0, 0 }, a[3] = { 3, 1, 2 }, b[3] = { 1, 4, 2 }, c[3] = { 1, 1, 5 };
    assert_int_equal(decomp_axis(lo, a, 3), 0);
    assert_int_equal(decomp_axis(lo, b, 3), 1);
    assert_int_equal(decomp_axis(lo, c, 3), 2);
    assert_int_equal(decomp_axis(lo, c, 2), 0); /* 2D: z is not an axis */
}

/* uniform random-ish coordinates in [0, 1) (a fixed LCG) */
static double coord(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (*s >> 8) / 16777216.0;
}

static void test_cuts_equal_counts(void **state)
{
    (void)state;
    for (int size = 1; size <= 7; ++size) {
        decomp d;
        assert_int_equal(decomp_init(&d, size, 0, 0.0, 1.0, 0.05, NULL), SPHSIM_OK);
        /* a crowded left half: 3/4 of the particles in [0, 0.5) */
        enum { N = 40000 };
        static double x[N];
        uint32_t s = 7;
        uint64_t hist[DECOMP_BINS] = { 0 };
        for (int i = 0; i < N; ++i) {
            x[i] = i % 4 ? 0.5 * coord(&s) : 0.5 + 0.5 * coord(&s);
            hist[decomp_bin(&d, x[i])]++;
        }
        decomp_cut(&d, hist);
        long count[8] = { 0 };
        for (int i = 0; i < N; ++i) count[decomp_owner(&d, x[i])]++;
        for (int r = 0; r < size; ++r) {
            /* within a bin's worth of particles (N / DECOMP_BINS / 0.5 * 0.75 ~ 15) of N / size */
            assert_true(labs(count[r] - N / size) <= 40);
            if (r) assert_true(d.cut[r] >= d.cut[r - 1]);
        }
        assert_true(decomp_imbalance(count, size) < 0.01 * size);
    }
}

static void test_owner_and_reach_brute_force(void **state)
{
    (void)state;
    decomp d;
    assert_int_equal(decomp_init(&d, 4, 1, -1.0, 3.0, 0.3, NULL), SPHSIM_OK);
    d.cut[1] = 0.0;
    d.cut[2] = 0.2; /* a slab thinner than the halo */
    d.cut[3] = 2.0;
    for (int i = 0; i <= 4000; ++i) {
        const double x = -1.5 + 5.0 * i / 4000.0;
        const int o = decomp_owner(&d, x);
        assert_true(x >= d.cut[o] && x < d.cut[o + 1]);
        int a, b;
        decomp_reach(&d, x, &a, &b);
        for (int r = 0; r < 4; ++r) {
            const int in = x >= d.cut[r] - 0.3 && x < d.cut[r + 1] + 0.3;
            assert_int_equal(in, r >= a && r <= b);
        }
        assert_true(o >= a && o <= b);
    }
    assert_int_equal(decomp_owner(&d, -1e30), 0);
    assert_int_equal(decomp_owner(&d, 1e30), 3);
}

static void test_route(void **state)
{
    (void)state;
    decomp d;
    assert_int_equal(decomp_init(&d, 3, 0, 0.0, 1.0, 0.1, NULL), SPHSIM_OK);
    d.cut[1] = 0.3;
    d.cut[2] = 0.6;
    enum { N = 1000 };
    decomp_rec in[N];
    uint32_t s = 3;
    for (int i = 0; i < N; ++i) {
        memset(&in[i], 0, sizeof in[i]);
        in[i].pos[0] = (float)(1.2 * coord(&s) - 0.1);
        in[i].pos[1] = (float)i;
        in[i].id = (uint32_t)(N - 1 - i); /* ids not in the input's order */
    }
    void *routed = NULL;
    size_t bytes[3];
    assert_int_equal(decomp_route(&d, in, N, sizeof *in, &routed, bytes, NULL), SPHSIM_OK);
    decomp_rec *out = routed;
    int owned[N] = { 0 }, copies[N] = { 0 };
    size_t row = 0;
    for (int r = 0; r < 3; ++r) {
        const size_t m = bytes[r] / sizeof *out;
        uint32_t last = 0;
        for (size_t j = 0; j < m; ++j, ++row) {
            const decomp_rec *q = &out[row];
            const double x = q->pos[0];
            assert_true(x >= d.cut[r] - 0.1 && x < d.cut[r + 1] + 0.1); /* in rank r's slab or halo */
            assert_int_equal(q->owned, x >= d.cut[r] && x < d.cut[r + 1]);
            assert_int_equal((uint32_t)q->pos[1], N - 1 - q->id); /* the record intact */
            owned[q->id] += q->owned;
            copies[q->id]++;
            if (j) assert_true(q->id < last); /* the input's order within a rank */
            last = q->id;
        }
    }
    for (int i = 0; i < N; ++i) {
        assert_int_equal(owned[i], 1);
        const double x = in[N - 1 - i].pos[0];
        int expect = 0;
        for (int r = 0; r < 3; ++r) expect += x >= d.cut[r] - 0.1 && x < d.cut[r + 1] + 0.1;
        assert_int_equal(copies[i], expect);
    }
    assert_int_equal(decomp_sort(out, row, sizeof *out, NULL), SPHSIM_OK);
    for (size_t j = 1; j < row; ++j) assert_true(out[j].id >= out[j - 1].id);
    free(out);
}

/* Rows with a payload after the record (particle mode's carried state) travel whole. */
static void test_route_rows_with_payload(void **state)
{
    (void)state;
    typedef struct {
        decomp_rec r;
        uint32_t payload[7];
    } row_t;
    decomp d;
    assert_int_equal(decomp_init(&d, 2, 2, 0.0, 1.0, 0.2, NULL), SPHSIM_OK);
    d.cut[1] = 0.5;
    enum { N = 200 };
    row_t in[N];
    for (int i = 0; i < N; ++i) {
        memset(&in[i], 0, sizeof in[i]);
        in[i].r.pos[2] = (float)(i + 0.5) / N;
        in[i].r.id = (uint32_t)((i * 37) % N);
        for (int k = 0; k < 7; ++k) in[i].payload[k] = in[i].r.id * 10u + (uint32_t)k;
    }
    void *out = NULL;
    size_t bytes[2];
    assert_int_equal(decomp_route(&d, in, N, sizeof(row_t), &out, bytes, NULL), SPHSIM_OK);
    const size_t m = (bytes[0] + bytes[1]) / sizeof(row_t);
    /* rank 0 holds z < 0.7, rank 1 z >= 0.3: 0.4 of them twice */
    assert_int_equal(m, N + (size_t)(0.4 * N));
    assert_int_equal(decomp_sort(out, m, sizeof(row_t), NULL), SPHSIM_OK);
    const row_t *o = out;
    for (size_t j = 0; j < m; ++j) {
        if (j) assert_true(o[j].r.id >= o[j - 1].r.id);
        for (int k = 0; k < 7; ++k) assert_int_equal(o[j].payload[k], o[j].r.id * 10u + (uint32_t)k);
    }
    free(out);
}

static int by_id_ref(const void *a, const void *b)
{
    const uint32_t x = ((const decomp_rec *)a)->id, y = ((const decomp_rec *)b)->id;
    return (x > y) - (x < y);
}

/* The sort by id against qsort's, on ids spread over all 32 bits (both digits of the radix
 * passes), each row's payload moving with its id. */
static void test_sort_by_id(void **state)
{
    (void)state;
    enum { N = 50000 };
    decomp_rec *a = calloc(N, sizeof *a), *b = calloc(N, sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    for (uint32_t i = 0; i < N; ++i) {
        a[i].id = i * 2654435761u; /* odd multiplier: unique ids, scattered over 32 bits */
        a[i].pos[0] = (float)i;
        a[i].pos[3] = (float)(a[i].id % 1000u);
    }
    a[7].id = 0xffffffffu; /* and a[0].id = 0 */
    memcpy(b, a, N * sizeof *a);
    qsort(b, N, sizeof *b, by_id_ref);
    assert_int_equal(decomp_sort(a, N, sizeof *a, NULL), SPHSIM_OK);
    assert_memory_equal(a, b, N * sizeof *a);
    free(a);
    free(b);
}

static void test_imbalance_and_find(void **state)
{
    (void)state;
    const long even[3] = { 10, 10, 10 }, skew[3] = { 20, 5, 5 }, none[2] = { 0, 0 };
    assert_true(fabs(decomp_imbalance(even, 3)) < 1e-12);
    assert_true(fabs(decomp_imbalance(skew, 3) - 1.0) < 1e-12);
    assert_true(decomp_imbalance(none, 2) == 0.0);
    const uint32_t ids[6] = { 2, 3, 5, 9, 10, 40 };
    for (uint32_t k = 0; k < 45; ++k) {
        long expect = -1;
        for (int i = 0; i < 6; ++i)
            if (ids[i] == k) expect = i;
        assert_int_equal(decomp_find(ids, 6, k), expect);
    }
    assert_int_equal(decomp_find(ids, 0, 2), -1);
}

static void test_init_errors(void **state)
{
    (void)state;
    decomp d;
    sphsim_error e;
    assert_int_equal(decomp_init(&d, 0, 0, 0.0, 1.0, 0.1, &e), SPHSIM_E_USAGE);
    assert_int_equal(decomp_init(&d, DECOMP_MAX_RANKS + 1, 0, 0.0, 1.0, 0.1, &e), SPHSIM_E_USAGE);
    assert_int_equal(decomp_init(&d, 2, 0, 1.0, 1.0, 0.1, &e), SPHSIM_E_SCENE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_axis),
        cmocka_unit_test(test_cuts_equal_counts),
        cmocka_unit_test(test_owner_and_reach_brute_force),
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_route_rows_with_payload),
        cmocka_unit_test(test_sort_by_id), cmocka_unit_test(test_imbalance_and_find),
        cmocka_unit_test(test_init_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
