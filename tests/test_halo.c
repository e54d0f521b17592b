/* test_halo: the refresh of an MPI rank's halo copies (src/halo.c, kernels/halo.cl) against a
 * plain-C copy, on one rank (the build without MPI, where the ranks' swap is a copy): the rows
 * packed from their send rows land on their receive rows in order, positions and velocities
 * both, every other row untouched; new maps that outgrow the buffers, and empty ones.
 * tests/python/test_mpi.py runs it over several ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "halo.h"

enum { N = 4096 };

/* a fixed LCG */
static uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* m distinct rows of 0 .. N - 1, in random order, none of them in `taken` (marked as used) */
static void pick_rows(uint32_t *rows, size_t m, uint8_t *taken, uint32_t *s)
{
    for (size_t k = 0; k < m; ++k) {
        uint32_t r;
        do r = next(s) % N;
        while (taken[r]);
        taken[r] = 1;
        rows[k] = r;
    }
}

/* Refresh with m rows sent (to this one rank) and received; compare with the copy on the host. */
static void refresh_and_check(ocl_device *d, halo *h, cl_mem bp, cl_mem bv, size_t m, uint32_t seed)
{
    sphsim_error e = { 0 };
    static float pos[4 * N], vel[4 * N], p2[4 * N], v2[4 * N];
    uint32_t s = seed;
    for (size_t i = 0; i < 4 * N; ++i) {
        pos[i] = (float)next(&s) / 65536.0f;
        vel[i] = -(float)next(&s) / 65536.0f;
    }
    assert_int_equal(device_write(d, bp, 0, sizeof pos, pos, &e), SPHSIM_OK);
    assert_int_equal(device_write(d, bv, 0, sizeof vel, vel, &e), SPHSIM_OK);
    uint8_t taken[N] = { 0 };
    uint32_t *send = malloc((m ? m : 1) * 4), *recv = malloc((m ? m : 1) * 4);
    assert_non_null(send);
    assert_non_null(recv);
    pick_rows(send, m, taken, &s);
    pick_rows(recv, m, taken, &s); /* disjoint from the rows sent, as halo and owned rows are */
    const size_t count = m;
    assert_int_equal(halo_set(h, send, &count, recv, &count, &e), SPHSIM_OK);
    assert_int_equal(halo_sent(h), m);
    assert_int_equal(halo_received(h), m);
    assert_int_equal(halo_refresh(h, bp, bv, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, bp, 0, sizeof p2, p2, &e), SPHSIM_OK);
    assert_int_equal(device_read(d, bv, 0, sizeof v2, v2, &e), SPHSIM_OK);
    for (size_t k = 0; k < m; ++k) { /* the reference: row recv[k] takes row send[k] */
        memcpy(&pos[4 * recv[k]], &pos[4 * send[k]], 16);
        memcpy(&vel[4 * recv[k]], &vel[4 * send[k]], 16);
    }
    assert_memory_equal(p2, pos, sizeof pos);
    assert_memory_equal(v2, vel, sizeof vel);
    free(send);
    free(recv);
}

static void test_refresh_matches_host_copy(void **state)
{
    (void)state;
    ocl_device d;
    sphsim_error e = { 0 };
    assert_int_equal(device_open(&d, "cpu", 0, NULL, &e), SPHSIM_OK);
    halo *h = NULL;
    assert_int_equal(halo_create(&h, &d, &e), SPHSIM_OK);
    cl_mem bp, bv;
    assert_int_equal(device_alloc(&d, 16 * N, "pos", &bp, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&d, 16 * N, "vel", &bv, &e), SPHSIM_OK);
    refresh_and_check(&d, h, bp, bv, 200, 1u);
    refresh_and_check(&d, h, bp, bv, 1500, 2u); /* outgrows the first maps' buffers */
    refresh_and_check(&d, h, bp, bv, 7, 3u);
    refresh_and_check(&d, h, bp, bv, 0, 4u); /* nothing held: every row as it was */
    clReleaseMemObject(bp);
    clReleaseMemObject(bv);
    halo_destroy(h);
    device_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_refresh_matches_host_copy) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
