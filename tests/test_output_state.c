/* test_output_state: the solver state stored with each snapshot for --resume
 * (output_write_state / output_read_resume, /sphsim/restart/solver_state), read back with the
 * HDF5 C API: row k % 2 and its length, zero padding, a snapshot without state, a larger state
 * refused with the file untouched, an uncommitted snapshot leaving the committed state intact,
 * appending after a reopen, the datasets' older names (contact_state: read, and appended to
 * under them), and files without any state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "output.h"
#include "output_fault.h"

static const char SCENE_JSON[] = "{\"format\": 1, \"dimensions\": 2, \"mode\": \"particles\"}";

static void make_scene(scene *s, long n)
{
    memset(s, 0, sizeof *s);
    s->format = 1;
    snprintf(s->name, sizeof s->name, "state");
    s->dims = 2;
    s->mode = MODE_PARTICLES;
    s->tank.max[0] = s->tank.max[1] = 1;
    s->gravity[1] = -9.81;
    s->dt = 1e-3;
    s->t_end = 1;
    s->out_interval = 0.1;
    s->n_steps = 1000; /* 11 snapshots */
    s->steps_per_output = 100;
    s->restitution = 0.5;
    s->fields = FIELD_POSITION | FIELD_VELOCITY | FIELD_ID | FIELD_TYPE | FIELD_RADIUS;
    s->n_total = n;
    s->source_json = (char *)SCENE_JSON;
    s->resolved_json = (char *)SCENE_JSON;
    snprintf(s->path, sizeof s->path, "state.json");
}

static void fill(particles *p, size_t n, int k)
{
    assert_int_equal(particles_alloc(p, n, NULL), SPHSIM_OK);
    for (size_t i = 0; i < n; ++i) {
        p->pos[4 * i] = 0.01f * (float)i + 0.001f * (float)k;
        p->pos[4 * i + 1] = 0.5f;
        p->vel[4 * i] = (float)k;
        p->radius[i] = 0.005f;
        p->id[i] = (uint32_t)i;
        p->type[i] = PTYPE_SPHERE;
    }
    p->n_spheres = n;
}

/* A state of `bytes` bytes whose content names snapshot k. */
static unsigned char *blob_of(int k, size_t bytes)
{
    unsigned char *b = malloc(bytes);
    assert_non_null(b);
    for (size_t i = 0; i < bytes; ++i) b[i] = (unsigned char)(31 * k + 7 * i + 1);
    return b;
}

static char g_path[256];

/* The state stored with the last committed snapshot of `path` (output_read_resume). */
static sphsim_status read_state(const char *path, void **state, size_t *bytes, sphsim_error *e)
{
    output_resume rd;
    sphsim_status st = output_read_resume(path, &rd, e);
    *state = rd.state;
    *bytes = rd.state_bytes;
    rd.state = NULL;
    output_resume_free(&rd);
    return st;
}

static void write_one(output *o, int k, const void *state, size_t bytes, sphsim_status want)
{
    particles p;
    sphsim_error e;
    fill(&p, 10, k);
    output_snapshot_info si = { 0.1 * k, 100L * k, 0, 0, NULL };
    sphsim_status st = output_write_state(o, &p, &si, state, bytes, &e);
    particles_free(&p);
    if (st != want) fail_msg("output_write_state %d: got %d, want %d (%s)", k, st, want, st ? e.msg : "");
}

/* Reopen g_path for --resume, append snapshot k with `state` (committed), then snapshot k + 1
 * with `next`, which fails after its rows are written (injected): not committed. NSteps is
 * then k + 1. */
static void append_then_fail(const scene *s, const output_run_info *ri, int k, const void *state, size_t bytes,
                             const void *next, size_t next_bytes)
{
    output *o = NULL;
    sphsim_error e;
    assert_int_equal(output_open_append(&o, g_path, s, ri, &e), SPHSIM_OK);
    write_one(o, k, state, bytes, SPHSIM_OK);
    output_fault_at = k + 1;
    write_one(o, k + 1, next, next_bytes, SPHSIM_E_IO);
    output_fault_at = -1;
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
}

static void expect_state(const void *want, size_t want_bytes)
{
    void *got = (void *)1;
    size_t got_bytes = 1;
    sphsim_error e;
    sphsim_status st = read_state(g_path, &got, &got_bytes, &e);
    if (st != SPHSIM_OK) fail_msg("read_state: %s", e.msg);
    assert_int_equal(got_bytes, want_bytes);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_memory_equal(got, want, want_bytes);
    free(got);
}

/* The raw datasets: rows (2 x width) and lengths. */
static void raw(unsigned char **rows, hsize_t *width, int64_t len[2])
{
    hid_t f = H5Fopen(g_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t ds = H5Dopen2(f, "/sphsim/restart/solver_state", H5P_DEFAULT);
    assert_true(ds >= 0);
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[2] = { 0, 0 };
    assert_int_equal(H5Sget_simple_extent_ndims(sp), 2);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    assert_int_equal(dims[0], 2);
    *width = dims[1];
    *rows = malloc(2 * dims[1]);
    assert_true(H5Dread(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, *rows) >= 0);
    H5Sclose(sp);
    H5Dclose(ds);
    ds = H5Dopen2(f, "/sphsim/restart/solver_state_bytes", H5P_DEFAULT);
    assert_true(ds >= 0);
    assert_true(H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, len) >= 0);
    H5Dclose(ds);
    H5Fclose(f);
}

static long long nsteps(void)
{
    hid_t f = H5Fopen(g_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t a = H5Aopen_by_name(f, "/VTKHDF/Steps", "NSteps", H5P_DEFAULT, H5P_DEFAULT);
    long long v = -1;
    assert_true(H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0);
    H5Aclose(a);
    H5Fclose(f);
    return v;
}

static void test_state_rows(void **state)
{
    (void)state;
    scene s;
    make_scene(&s, 10);
    /* the state's size declared at creation: its datasets are made with the layout */
    output_run_info ri = { "9.9.9-test", "Test Device", "2024-01-02T03:04:05Z", 100 };
    output_run_info ri0 = { "9.9.9-test", "Test Device", "2024-01-02T03:04:05Z", 0 };
    sphsim_error e;
    output *o = NULL;
    snprintf(g_path, sizeof g_path, "/tmp/sphsim_test_output_state_%d.h5", (int)getpid());
    assert_int_equal(output_open(&o, g_path, 1, &s, &ri, &e), SPHSIM_OK);
    unsigned char *b0 = blob_of(0, 100), *b1 = blob_of(1, 60), *b2 = blob_of(2, 100), *b3 = blob_of(3, 101);
    unsigned char *b4 = blob_of(4, 80), *b5 = blob_of(5, 90);
    write_one(o, 0, b0, 100, SPHSIM_OK); /* into the rows of 100 bytes made with the layout */
    write_one(o, 1, b1, 60, SPHSIM_OK);  /* a shorter one, zero-padded */
    write_one(o, 2, b2, 100, SPHSIM_OK);
    write_one(o, 3, b3, 101, SPHSIM_E_IO); /* wider than the rows: refused before anything is written */
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    assert_int_equal(nsteps(), 3);
    expect_state(b2, 100);
    unsigned char *rows;
    hsize_t w;
    int64_t len[2];
    raw(&rows, &w, len);
    assert_int_equal(w, 100);
    assert_int_equal(len[0], 100);
    assert_int_equal(len[1], 60);
    assert_memory_equal(rows, b2, 100);
    assert_memory_equal(rows + 100, b1, 60);
    for (int i = 60; i < 100; ++i) assert_int_equal(rows[100 + i], 0);
    free(rows);

    /* reopened for --resume: snapshot 3 goes to row 1; a snapshot without state marks its row
     * empty, so the older state in that row is never taken for its */
    assert_int_equal(output_open_append(&o, g_path, &s, &ri, &e), SPHSIM_OK);
    write_one(o, 3, b4, 80, SPHSIM_OK);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    expect_state(b4, 80);
    assert_int_equal(output_open_append(&o, g_path, &s, &ri, &e), SPHSIM_OK);
    write_one(o, 4, NULL, 0, SPHSIM_OK);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    expect_state(NULL, 0);
    raw(&rows, &w, len);
    assert_int_equal(len[0], 0);
    assert_int_equal(len[1], 80);
    free(rows);
    /* snapshot 6 fails after its rows are written (injected): not committed, so the state of
     * snapshot 5 (row 1) is the one read back although row 0 was overwritten */
    append_then_fail(&s, &ri, 5, b5, 90, b0, 100);
    assert_int_equal(nsteps(), 6);
    expect_state(b5, 90);

    /* a particle-mode file of an older version, whose datasets were named contact_state and
     * contact_state_bytes: its state is read under those names */
    {
        hid_t f0 = H5Fopen(g_path, H5F_ACC_RDWR, H5P_DEFAULT);
        assert_true(f0 >= 0);
        assert_true(H5Lmove(f0, "/sphsim/restart/solver_state", f0, "/sphsim/restart/contact_state", H5P_DEFAULT,
                            H5P_DEFAULT) >= 0);
        assert_true(H5Lmove(f0, "/sphsim/restart/solver_state_bytes", f0, "/sphsim/restart/contact_state_bytes",
                            H5P_DEFAULT, H5P_DEFAULT) >= 0);
        H5Fclose(f0);
    }
    expect_state(b5, 90);
    /* ... and appended to under them (a resumed run of such a file), so that a snapshot that
     * is then not committed leaves the committed state where the next resume reads it */
    append_then_fail(&s, &ri, 6, b2, 100, b1, 60);
    assert_int_equal(nsteps(), 7);
    expect_state(b2, 100);
    {
        hid_t f0 = H5Fopen(g_path, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(f0 >= 0);
        assert_int_equal(H5Lexists(f0, "/sphsim/restart/solver_state", H5P_DEFAULT), 0);
        H5Fclose(f0);
    }

    /* a file written without any state has no such datasets, and reads none */
    assert_int_equal(output_open(&o, g_path, 1, &s, &ri0, &e), SPHSIM_OK);
    write_one(o, 0, NULL, 0, SPHSIM_OK);
    write_one(o, 1, NULL, 0, SPHSIM_OK);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    expect_state(NULL, 0);
    hid_t f = H5Fopen(g_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Lexists(f, "/sphsim/restart", H5P_DEFAULT) > 0);
    assert_int_equal(H5Lexists(f, "/sphsim/restart/solver_state", H5P_DEFAULT), 0);
    H5Fclose(f);

    /* a missing file is an I/O error naming it */
    void *got = NULL;
    size_t got_bytes = 0;
    assert_int_equal(read_state("/nonexistent/x.h5", &got, &got_bytes, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "/nonexistent/x.h5"));
    assert_null(got);

    unlink(g_path);
    char xmf[300];
    output_xmf_path(g_path, xmf, sizeof xmf);
    unlink(xmf);
    free(b0);
    free(b1);
    free(b2);
    free(b3);
    free(b4);
    free(b5);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_state_rows) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
