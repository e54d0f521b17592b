/* test_output: the HDF5 snapshot writer and its XDMF sidecar, checked by reading the files
 * back with the HDF5 C API: layout (VTKHDF PolyData, temporal), values, offsets, step
 * records, provenance attributes, the sidecar's hyperslabs, overwrite refusal, --resume
 * (read_last, open_append, cutting uncommitted rows), I/O failures (unwritable
 * directory, disk full on a small tmpfs and through RLIMIT_FSIZE), and the selection each MPI
 * rank writes its rows of a snapshot with (h5io_ds_write_runs).
 *
 * Environment:
 *   SPHSIM_KEEP_OUTPUT=<path>          also write a small 3-snapshot 3D file there and keep it.
 *   SPHSIM_OUTPUT_WRITER_LOOP=<path>   instead of testing, write snapshots to <path> until
 *                                      killed (used by tests/python to test SIGKILL safety);
 *                                      SPHSIM_OUTPUT_WRITER_N sets the particle count,
 *                                      SPHSIM_OUTPUT_WRITER_MAX stops after that many.
 *   SPHSIM_OUTPUT_RESUME_CHECK=<path>  instead of testing, check the last snapshot of such a file
 *                                      and append one more (prints "resumed <step> <n>"). */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "h5io.h"
#include "output.h"
#include "output_fault.h"
#include "tuning.h"

static const char SCENE_JSON[] = "{\n  \"format\": 1,\n  \"dimensions\": 3,\n  \"name\": \"unit \\\"test\\\"\"\n}\n";
static const char RESOLVED_JSON[] = "{\"format\": 1, \"dimensions\": 3, \"fluid\": {\"smoothing_length\": 0.013}}";

/* ------------------------------------------------------------------ fixtures */

static void make_scene(scene *s, int dims, unsigned fields, long n)
{
    memset(s, 0, sizeof *s);
    s->format = 1;
    snprintf(s->name, sizeof s->name, "unit");
    s->dims = dims;
    s->mode = MODE_SPH;
    s->tank.max[0] = s->tank.max[1] = 1;
    s->tank.max[2] = dims == 3 ? 1 : 0;
    s->gravity[dims - 1] = -9.81;
    s->spacing = 0.01;
    s->rest_density = 1000;
    s->kernel = KERNEL_WENDLAND;
    s->h = 0.013;
    s->support = 0.026;
    s->particle_mass = dims == 3 ? 1e-3 : 0.1;
    s->eos = EOS_TAIT;
    s->sound_speed = 20;
    s->gamma = 7;
    s->stiffness = 400;
    s->dt = 1e-4;
    s->t_end = 1;
    s->out_interval = 0.1;
    s->n_steps = 10000; /* 11 snapshots: the rows every dataset is created with */
    s->steps_per_output = 1000;
    s->fields = fields;
    s->n_fluid = n;
    s->n_total = n;
    s->source_json = (char *)SCENE_JSON;
    s->resolved_json = (char *)RESOLVED_JSON;
    snprintf(s->path, sizeof s->path, "unit.json");
}

/* Known values for snapshot k. */
static void fill_particles(particles *p, size_t n, int k, int dims)
{
    assert_int_equal(particles_alloc(p, n, NULL), SPHSIM_OK);
    for (size_t i = 0; i < n; ++i) {
        p->pos[4 * i + 0] = 0.1f * (float)i + (float)k;
        p->pos[4 * i + 1] = 0.2f * (float)i - 0.5f * (float)k;
        p->pos[4 * i + 2] = dims == 3 ? 0.3f * (float)i + 0.25f : 0.0f;
        p->vel[4 * i + 0] = (float)k + (float)i;
        p->vel[4 * i + 1] = -(float)i;
        p->vel[4 * i + 2] = dims == 3 ? 0.5f * (float)k : 0.0f;
        p->rho[i] = 1000.0f + (float)i + 0.5f * (float)k;
        p->pressure[i] = 10.0f * (float)i + (float)k;
        p->mass[i] = 0.01f * (float)(i + 1);
        p->radius[i] = 0.001f * (float)i;
        p->id[i] = (uint32_t)i;
        p->type[i] = (uint8_t)(i % 3);
    }
    p->n_fluid = n;
}

static char g_dir[256];

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup_dir(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/sphsim_test_output_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    /* a test that failed half-way may have left its small file systems mounted */
    const char *mounts[] = { "small", "ro" };
    for (int i = 0; i < 2; ++i) {
        char m[300];
        snprintf(m, sizeof m, "%s/%s", g_dir, mounts[i]);
        umount2(m, MNT_DETACH);
    }
    if (getenv("SPHSIM_TEST_KEEP_DIR")) return 0;
    nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static void path_in(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    size_t got = fread(s, 1, (size_t)len, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static int count_substr(const char *s, const char *sub)
{
    int c = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) ++c;
    return c;
}

/* The last committed snapshot of `path` (output_read_resume) and, when json is not NULL, the
 * stored scene (output_read_scene). */
static sphsim_status read_last(const char *path, particles *p, output_snapshot_info *si, char **json, sphsim_error *e)
{
    output_resume rd;
    if (json) *json = NULL;
    sphsim_status st = output_read_resume(path, &rd, e);
    if (st == SPHSIM_OK && json) st = output_read_scene(path, json, NULL, e);
    *p = rd.p;
    *si = rd.si;
    free(rd.state);
    if (st != SPHSIM_OK) {
        particles_free(p);
        free(si->device_order);
        si->device_order = NULL;
    }
    return st;
}

static size_t g_block_rows = 0; /* write_run: rows packed at a time (0: the default) */
static int g_layout_snaps = 0;  /* write_run: snapshots the layout holds (0: as many as it writes) */

/* Write `nsnap` snapshots (k = 0..nsnap-1) of n particles to path. */
static void write_run(const char *path, int dims, unsigned fields, size_t n, int nsnap, int overwrite)
{
    scene s;
    make_scene(&s, dims, fields, (long)n);
    const int cap = g_layout_snaps ? g_layout_snaps : nsnap;
    s.n_steps = cap > 1 ? 1000L * (cap - 1) : 0; /* a layout of exactly cap snapshots */
    output_run_info ri = { "9.9.9-test", "Test Device", "2024-01-02T03:04:05Z", 0 };
    output *o = NULL;
    sphsim_error e;
    sphsim_status st = output_open(&o, path, overwrite, &s, &ri, &e);
    if (st != SPHSIM_OK) fail_msg("output_open: %s", e.msg);
    if (g_block_rows) output_set_block_rows(o, g_block_rows);
    for (int k = 0; k < nsnap; ++k) {
        particles p;
        fill_particles(&p, n, k, dims);
        output_snapshot_info si = { 0.1 * k, 1000L * k, k == 1 ? 7 : -1, k, NULL };
        st = output_write(o, &p, &si, &e);
        particles_free(&p);
        if (st != SPHSIM_OK) fail_msg("output_write %d: %s", k, e.msg);
    }
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
}

/* ------------------------------------------------------------------ HDF5 read helpers */

/* Read the whole dataset as `mtype`; returns malloc'd data, dims in d0/d1 (d1 = 1 for 1-D). */
static void *read_all(hid_t f, const char *path, hid_t mtype, hsize_t *d0, hsize_t *d1)
{
    hid_t ds = H5Dopen2(f, path, H5P_DEFAULT);
    if (ds < 0) fail_msg("no dataset %s", path);
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[2] = { 0, 1 };
    int rank = H5Sget_simple_extent_ndims(sp);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    if (rank == 1) dims[1] = 1;
    size_t esz = H5Tget_size(mtype);
    void *buf = calloc(dims[0] * dims[1] + 1, esz);
    if (dims[0] * dims[1] > 0) assert_true(H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Sclose(sp);
    H5Dclose(ds);
    *d0 = dims[0];
    if (d1) *d1 = dims[1];
    return buf;
}

static H5T_class_t ds_class_size(hid_t f, const char *path, size_t *size, H5T_sign_t *sign)
{
    hid_t ds = H5Dopen2(f, path, H5P_DEFAULT);
    assert_true(ds >= 0);
    hid_t t = H5Dget_type(ds);
    H5T_class_t c = H5Tget_class(t);
    *size = H5Tget_size(t);
    if (sign) *sign = c == H5T_INTEGER ? H5Tget_sign(t) : H5T_SGN_ERROR;
    H5Tclose(t);
    H5Dclose(ds);
    return c;
}

static long long read_attr_i64(hid_t f, const char *obj, const char *name)
{
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) fail_msg("no attribute %s:%s", obj, name);
    int64_t v = 0;
    assert_true(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    return v;
}

static double read_attr_f64(hid_t f, const char *obj, const char *name)
{
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) fail_msg("no attribute %s:%s", obj, name);
    double v = 0;
    assert_true(H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0);
    H5Aclose(a);
    return v;
}

/* Read a variable-length string attribute (malloc'd). */
static char *read_attr_vstr(hid_t f, const char *obj, const char *name)
{
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) fail_msg("no attribute %s:%s", obj, name);
    hid_t ft = H5Aget_type(a);
    assert_int_equal(H5Tget_class(ft), H5T_STRING);
    assert_true(H5Tis_variable_str(ft) > 0);
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5T_CSET_UTF8);
    char *v = NULL;
    assert_true(H5Aread(a, mt, &v) >= 0);
    char *out = strdup(v);
    hid_t sp = H5Screate(H5S_SCALAR);
    H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, &v);
    H5Sclose(sp);
    H5Tclose(mt);
    H5Tclose(ft);
    H5Aclose(a);
    return out;
}

/* A fixed-length string attribute (null padded), as a malloc'd string. */
static char *read_attr_fixed(hid_t f, const char *obj, const char *name)
{
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) fail_msg("no attribute %s:%s", obj, name);
    hid_t ft = H5Aget_type(a);
    assert_int_equal(H5Tget_class(ft), H5T_STRING);
    assert_true(H5Tis_variable_str(ft) == 0);
    size_t len = H5Tget_size(ft);
    char *out = calloc(len + 1, 1);
    assert_true(H5Aread(a, ft, out) >= 0);
    H5Tclose(ft);
    H5Aclose(a);
    return out;
}

static hid_t open_ro(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s", path);
    return f;
}

static void check_i64_seq(hid_t f, const char *path, hsize_t n, long long a, long long b)
{
    hsize_t d0, d1;
    int64_t *v = read_all(f, path, H5T_NATIVE_INT64, &d0, &d1);
    if (d0 < n) fail_msg("%s: %llu rows, expected %llu", path, (unsigned long long)d0, (unsigned long long)n);
    for (hsize_t i = 0; i < n; ++i) {
        if (v[i] != a + b * (long long)i) fail_msg("%s[%llu] = %lld", path, (unsigned long long)i, (long long)v[i]);
    }
    free(v);
}

/* ------------------------------------------------------------------ tests */

static void test_xmf_path(void **state)
{
    (void)state;
    char b[64];
    output_xmf_path("out.h5", b, sizeof b);
    assert_string_equal(b, "out.xmf");
    output_xmf_path("dir.h5/run.hdf5", b, sizeof b);
    assert_string_equal(b, "dir.h5/run.xmf");
    output_xmf_path("run", b, sizeof b);
    assert_string_equal(b, "run.xmf");
    output_xmf_path("a.vtkhdf", b, sizeof b);
    assert_string_equal(b, "a.vtkhdf.xmf");
    output_xmf_path("h5", b, sizeof b);
    assert_string_equal(b, "h5.xmf");
}

/* Three 3D snapshots of 5 particles with every field; read everything back. */
static void test_layout_and_values(void **state)
{
    (void)state;
    char path[512], xmf[512];
    path_in(path, sizeof path, "out.h5");
    path_in(xmf, sizeof xmf, "out.xmf");
    const size_t n = 5;
    write_run(path, 3, 0xffu, n, 3, 0);

    hid_t f = open_ro(path);
    /* VTKHDF root attributes */
    {
        hid_t a = H5Aopen_by_name(f, "/VTKHDF", "Version", H5P_DEFAULT, H5P_DEFAULT);
        assert_true(a >= 0);
        int v[2] = { 0, 0 };
        assert_true(H5Aread(a, H5T_NATIVE_INT, v) >= 0);
        assert_int_equal(v[0], 2);
        assert_int_equal(v[1], 0);
        H5Aclose(a);
        a = H5Aopen_by_name(f, "/VTKHDF", "Type", H5P_DEFAULT, H5P_DEFAULT);
        hid_t t = H5Aget_type(a);
        assert_int_equal(H5Tget_class(t), H5T_STRING);
        assert_false(H5Tis_variable_str(t) > 0);
        assert_int_equal(H5Tget_cset(t), H5T_CSET_ASCII);
        assert_int_equal(H5Tget_size(t), 8);
        char buf[9] = { 0 };
        assert_true(H5Aread(a, t, buf) >= 0);
        assert_string_equal(buf, "PolyData");
        H5Tclose(t);
        H5Aclose(a);
    }
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), 3);

    /* Points: 15 x 3 float32, snapshot k at rows [5k, 5k+5) */
    size_t sz;
    assert_int_equal(ds_class_size(f, "/VTKHDF/Points", &sz, NULL), H5T_FLOAT);
    assert_int_equal(sz, 4);
    hsize_t d0, d1;
    float *pts = read_all(f, "/VTKHDF/Points", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_int_equal(d0, 3 * n);
    assert_int_equal(d1, 3);
    for (int k = 0; k < 3; ++k) {
        particles p;
        fill_particles(&p, n, k, 3);
        for (size_t i = 0; i < n; ++i)
            for (int c = 0; c < 3; ++c) assert_true(pts[(k * n + i) * 3 + c] == p.pos[4 * i + c]);
        particles_free(&p);
    }
    free(pts);

    /* PointData: every field, types and values of snapshot 2 */
    float *vel = read_all(f, "/VTKHDF/PointData/velocity", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_int_equal(d0, 3 * n);
    assert_int_equal(d1, 3);
    float *rho = read_all(f, "/VTKHDF/PointData/density", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_int_equal(d0, 3 * n);
    assert_int_equal(d1, 1);
    float *prs = read_all(f, "/VTKHDF/PointData/pressure", H5T_NATIVE_FLOAT, &d0, &d1);
    float *mass = read_all(f, "/VTKHDF/PointData/mass", H5T_NATIVE_FLOAT, &d0, &d1);
    float *rad = read_all(f, "/VTKHDF/PointData/radius", H5T_NATIVE_FLOAT, &d0, &d1);
    uint32_t *id = read_all(f, "/VTKHDF/PointData/id", H5T_NATIVE_UINT32, &d0, &d1);
    uint8_t *type = read_all(f, "/VTKHDF/PointData/type", H5T_NATIVE_UINT8, &d0, &d1);
    H5T_sign_t sign;
    assert_int_equal(ds_class_size(f, "/VTKHDF/PointData/id", &sz, &sign), H5T_INTEGER);
    assert_int_equal(sz, 4);
    assert_int_equal(sign, H5T_SGN_NONE);
    assert_int_equal(ds_class_size(f, "/VTKHDF/PointData/type", &sz, &sign), H5T_INTEGER);
    assert_int_equal(sz, 1);
    assert_int_equal(sign, H5T_SGN_NONE);
    assert_int_equal(ds_class_size(f, "/VTKHDF/PointData/density", &sz, NULL), H5T_FLOAT);
    assert_int_equal(sz, 4);
    {
        particles p;
        fill_particles(&p, n, 2, 3);
        for (size_t i = 0; i < n; ++i) {
            size_t r = 2 * n + i;
            for (int c = 0; c < 3; ++c) assert_true(vel[3 * r + c] == p.vel[4 * i + c]);
            assert_true(rho[r] == p.rho[i]);
            assert_true(prs[r] == p.pressure[i]);
            assert_true(mass[r] == p.mass[i]);
            assert_true(rad[r] == p.radius[i]);
            assert_int_equal(id[r], i);
            assert_int_equal(type[r], i % 3);
        }
        particles_free(&p);
    }
    free(vel);
    free(rho);
    free(prs);
    free(mass);
    free(rad);
    free(id);
    free(type);

    /* Topology: vertex cells written once; the other kinds empty */
    check_i64_seq(f, "/VTKHDF/Vertices/Offsets", n + 1, 0, 1);
    check_i64_seq(f, "/VTKHDF/Vertices/Connectivity", n, 0, 1);
    /* one part shared by every step */
    check_i64_seq(f, "/VTKHDF/NumberOfPoints", 1, (long long)n, 0);
    check_i64_seq(f, "/VTKHDF/Vertices/NumberOfCells", 1, (long long)n, 0);
    check_i64_seq(f, "/VTKHDF/Vertices/NumberOfConnectivityIds", 1, (long long)n, 0);
    const char *others[] = { "Lines", "Polygons", "Strips" };
    for (int t = 0; t < 3; ++t) {
        char p[128];
        snprintf(p, sizeof p, "/VTKHDF/%s/NumberOfCells", others[t]);
        check_i64_seq(f, p, 1, 0, 0);
        snprintf(p, sizeof p, "/VTKHDF/%s/NumberOfConnectivityIds", others[t]);
        check_i64_seq(f, p, 1, 0, 0);
        snprintf(p, sizeof p, "/VTKHDF/%s/Offsets", others[t]);
        check_i64_seq(f, p, 1, 0, 0);
        snprintf(p, sizeof p, "/VTKHDF/%s/Connectivity", others[t]);
        check_i64_seq(f, p, 0, 0, 0);
    }

    /* Steps */
    double *vals = read_all(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, &d0, &d1);
    assert_int_equal(d0, 3);
    for (int k = 0; k < 3; ++k) assert_true(vals[k] == 0.1 * k);
    free(vals);
    check_i64_seq(f, "/VTKHDF/Steps/PartOffsets", 3, 0, 0);
    check_i64_seq(f, "/VTKHDF/Steps/NumberOfParts", 3, 1, 0);
    check_i64_seq(f, "/VTKHDF/Steps/PointOffsets", 3, 0, (long long)n);
    const char *fields[] = { "velocity", "density", "pressure", "id", "type", "radius", "mass" };
    for (int i = 0; i < 7; ++i) {
        char p[128];
        snprintf(p, sizeof p, "/VTKHDF/Steps/PointDataOffsets/%s", fields[i]);
        check_i64_seq(f, p, 3, 0, (long long)n);
    }
    int64_t *co = read_all(f, "/VTKHDF/Steps/CellOffsets", H5T_NATIVE_INT64, &d0, &d1);
    assert_int_equal(d0, 3);
    assert_int_equal(d1, 4);
    for (int i = 0; i < 12; ++i) assert_int_equal(co[i], 0);
    free(co);
    co = read_all(f, "/VTKHDF/Steps/ConnectivityIdOffsets", H5T_NATIVE_INT64, &d0, &d1);
    assert_int_equal(d0, 3);
    assert_int_equal(d1, 4);
    for (int i = 0; i < 12; ++i) assert_int_equal(co[i], 0);
    free(co);

    /* /sphsim/steps records */
    double *tm = read_all(f, "/sphsim/steps/time", H5T_NATIVE_DOUBLE, &d0, &d1);
    assert_int_equal(d0, 3);
    assert_true(tm[2] == 0.2);
    free(tm);
    check_i64_seq(f, "/sphsim/steps/step", 3, 0, 1000);
    check_i64_seq(f, "/sphsim/steps/n_outside", 3, 0, 1);
    int64_t *nc = read_all(f, "/sphsim/steps/n_contacts", H5T_NATIVE_INT64, &d0, &d1);
    assert_int_equal(nc[0], -1);
    assert_int_equal(nc[1], 7);
    assert_int_equal(nc[2], -1);
    free(nc);

    /* provenance */
    char *sj = read_attr_vstr(f, "/sphsim", "scene_json");
    assert_string_equal(sj, SCENE_JSON);
    free(sj);
    sj = read_attr_vstr(f, "/sphsim", "resolved_json");
    assert_string_equal(sj, RESOLVED_JSON);
    free(sj);
    sj = read_attr_vstr(f, "/sphsim", "version");
    assert_string_equal(sj, "9.9.9-test");
    free(sj);
    sj = read_attr_vstr(f, "/sphsim", "device");
    assert_string_equal(sj, "Test Device");
    free(sj);
    sj = read_attr_vstr(f, "/sphsim", "start_time");
    assert_string_equal(sj, "2024-01-02T03:04:05Z");
    free(sj);
    sj = read_attr_vstr(f, "/sphsim", "kernel");
    assert_string_equal(sj, "wendland");
    free(sj);
    sj = read_attr_vstr(f, "/sphsim", "eos");
    assert_string_equal(sj, "tait");
    free(sj);
    sj = read_attr_vstr(f, "/sphsim", "units");
    assert_non_null(strstr(sj, "\"density\": \"kg/m^3\""));
    assert_non_null(strstr(sj, "\"stiffness\": \"m^2/s^2\""));
    assert_non_null(strstr(sj, "\"smoothing_length\": \"m\""));
    free(sj);
    assert_true(read_attr_f64(f, "/sphsim", "smoothing_length") == 0.013);
    assert_true(read_attr_f64(f, "/sphsim", "support_radius") == 0.026);
    /* the masses in use (first fluid, first boundary particle), and the scene's nominal one */
    assert_true(read_attr_f64(f, "/sphsim", "particle_mass") == (double)0.01f);
    assert_true(read_attr_f64(f, "/sphsim", "boundary_particle_mass") == (double)0.02f);
    assert_true(read_attr_f64(f, "/sphsim", "lattice_particle_mass") == 1e-3);
    assert_true(read_attr_f64(f, "/sphsim", "rest_density") == 1000);
    assert_true(read_attr_f64(f, "/sphsim", "sound_speed") == 20);
    assert_true(read_attr_f64(f, "/sphsim", "gamma") == 7);
    assert_true(read_attr_f64(f, "/sphsim", "stiffness") == 400);
    assert_int_equal(read_attr_i64(f, "/sphsim", "dimensions"), 3);
    {
        hid_t a = H5Aopen_by_name(f, "/sphsim", "gravity", H5P_DEFAULT, H5P_DEFAULT);
        double g[3];
        assert_true(H5Aread(a, H5T_NATIVE_DOUBLE, g) >= 0);
        assert_true(g[0] == 0 && g[1] == 0 && g[2] == -9.81);
        H5Aclose(a);
    }
    H5Fclose(f);

    /* sidecar */
    char *x = slurp(xmf);
    assert_non_null(x);
    assert_non_null(strstr(x, "<Xdmf Version=\"2.0\">"));
    assert_non_null(strstr(x, "GridType=\"Collection\" CollectionType=\"Temporal\""));
    assert_int_equal(count_substr(x, "<Grid Name=\"step_"), 3);
    assert_int_equal(count_substr(x, "TopologyType=\"Polyvertex\" NumberOfElements=\"5\" NodesPerElement=\"1\""), 3);
    assert_int_equal(count_substr(x, "<Geometry GeometryType=\"XYZ\">"), 3);
    assert_int_equal(count_substr(x, "ItemType=\"HyperSlab\""), 3 * 8);
    assert_int_equal(count_substr(x, ">out.h5:/VTKHDF/Points<"), 3);
    assert_int_equal(count_substr(x, "Dimensions=\"15 3\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\""), 3 * 2);
    assert_non_null(strstr(x, "<Time Value=\"0.20000000000000001\"/>"));
    /* step 2: its hyperslabs start at row 10 */
    const char *s2 = strstr(x, "<Grid Name=\"step_2\"");
    assert_non_null(s2);
    assert_non_null(
        strstr(s2, "<DataItem Dimensions=\"3 2\" NumberType=\"Int\" Format=\"XML\">10 0 1 1 5 3</DataItem>"));
    const char *dens = strstr(s2, "<Attribute Name=\"density\" AttributeType=\"Scalar\" Center=\"Node\">");
    assert_non_null(dens);
    assert_non_null(strstr(dens, "<DataItem Dimensions=\"3 1\" NumberType=\"Int\" Format=\"XML\">10 1 5</DataItem>"));
    assert_non_null(strstr(
        dens,
        "Dimensions=\"15\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\">out.h5:/VTKHDF/PointData/density<"));
    assert_non_null(strstr(s2, "<Attribute Name=\"velocity\" AttributeType=\"Vector\" Center=\"Node\">"));
    assert_non_null(strstr(s2, "NumberType=\"UChar\" Precision=\"1\" Format=\"HDF\">out.h5:/VTKHDF/PointData/type<"));
    assert_non_null(strstr(s2, "NumberType=\"UInt\" Precision=\"4\" Format=\"HDF\">out.h5:/VTKHDF/PointData/id<"));
    free(x);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", xmf);
    assert_int_not_equal(access(tmp, F_OK), 0);
    snprintf(tmp, sizeof tmp, "%s.creating", path);
    assert_int_not_equal(access(tmp, F_OK), 0);
}

/* Only the requested fields plus the always-written ones; 2D has z = 0. */
static void test_field_subset_2d(void **state)
{
    (void)state;
    char path[512], xmf[512];
    path_in(path, sizeof path, "sub.hdf5");
    path_in(xmf, sizeof xmf, "sub.xmf");
    write_run(path, 2, FIELD_POSITION | FIELD_DENSITY, 4, 2, 0);
    hid_t f = open_ro(path);
    assert_true(H5Lexists(f, "/VTKHDF/PointData/velocity", H5P_DEFAULT) > 0);
    assert_true(H5Lexists(f, "/VTKHDF/PointData/id", H5P_DEFAULT) > 0);
    assert_true(H5Lexists(f, "/VTKHDF/PointData/type", H5P_DEFAULT) > 0);
    assert_true(H5Lexists(f, "/VTKHDF/PointData/density", H5P_DEFAULT) > 0);
    assert_true(H5Lexists(f, "/VTKHDF/PointData/pressure", H5P_DEFAULT) == 0);
    assert_true(H5Lexists(f, "/VTKHDF/PointData/mass", H5P_DEFAULT) == 0);
    assert_true(H5Lexists(f, "/VTKHDF/PointData/radius", H5P_DEFAULT) == 0);
    assert_true(H5Lexists(f, "/VTKHDF/Steps/PointDataOffsets/pressure", H5P_DEFAULT) == 0);
    hsize_t d0, d1;
    float *pts = read_all(f, "/VTKHDF/Points", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_int_equal(d0, 8);
    assert_int_equal(d1, 3);
    for (int i = 0; i < 8; ++i) assert_true(pts[3 * i + 2] == 0.0f);
    assert_true(pts[3 * 5 + 0] == 0.1f * 1 + 1); /* snapshot 1, particle 1 */
    free(pts);
    float *vel = read_all(f, "/VTKHDF/PointData/velocity", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_int_equal(d1, 3);
    for (int i = 0; i < 8; ++i) assert_true(vel[3 * i + 2] == 0.0f);
    free(vel);
    assert_int_equal(read_attr_i64(f, "/sphsim", "dimensions"), 2);
    char *fl = read_attr_vstr(f, "/sphsim", "fields");
    assert_string_equal(fl, "position,velocity,density,id,type");
    free(fl);
    H5Fclose(f);
    char *x = slurp(xmf);
    assert_non_null(x);
    assert_int_equal(count_substr(x, "<Attribute Name="), 2 * 4);
    assert_null(strstr(x, "pressure"));
    assert_non_null(strstr(x, ">sub.hdf5:/VTKHDF/Points<"));
    free(x);
}

static void test_refuse_overwrite(void **state)
{
    (void)state;
    char path[512], xmf[512];
    path_in(path, sizeof path, "ow.h5");
    path_in(xmf, sizeof xmf, "ow.xmf");
    write_run(path, 3, 0, 3, 2, 0);
    scene s;
    make_scene(&s, 3, 0, 3);
    output *o = NULL;
    sphsim_error e;
    memset(&e, 0, sizeof e);
    assert_int_equal(output_open(&o, path, 0, &s, NULL, &e), SPHSIM_E_IO);
    assert_null(o);
    assert_non_null(strstr(e.msg, "--overwrite"));
    assert_non_null(strstr(e.msg, path));
    /* the refused open left the old file alone */
    hid_t f = open_ro(path);
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), 2);
    H5Fclose(f);
    /* only the sidecar exists: still refused */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(output_open(&o, path, 0, &s, NULL, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, xmf));
    assert_non_null(strstr(e.msg, "--overwrite"));
    assert_int_not_equal(access(path, F_OK), 0);
    /* with overwrite: a fresh file with no snapshot and a sidecar with none */
    write_run(path, 3, 0, 3, 2, 0 + 1);
    assert_int_equal(output_open(&o, path, 1, &s, NULL, &e), SPHSIM_OK);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    f = open_ro(path);
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), 0);
    /* no snapshot yet: an empty part (a valid, empty PolyData for VTK) */
    check_i64_seq(f, "/VTKHDF/NumberOfPoints", 1, 0, 0);
    check_i64_seq(f, "/VTKHDF/Vertices/NumberOfCells", 1, 0, 0);
    /* the vertex cells are written with the layout; VTK reads NumberOfCells of them (0) */
    check_i64_seq(f, "/VTKHDF/Vertices/Offsets", 4, 0, 1);
    check_i64_seq(f, "/VTKHDF/Vertices/Connectivity", 3, 0, 1);
    H5Fclose(f);
    char *x = slurp(xmf);
    assert_int_equal(count_substr(x, "<Grid Name=\"step_"), 0);
    assert_non_null(strstr(x, "CollectionType=\"Temporal\""));
    free(x);
}

static void expect_particles_equal(const particles *a, const particles *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; ++i) {
        for (int c = 0; c < 3; ++c) {
            assert_true(a->pos[4 * i + c] == b->pos[4 * i + c]);
            assert_true(a->vel[4 * i + c] == b->vel[4 * i + c]);
        }
        assert_true(a->rho[i] == b->rho[i]);
        assert_true(a->pressure[i] == b->pressure[i]);
        assert_true(a->mass[i] == b->mass[i]);
        assert_true(a->radius[i] == b->radius[i]);
        assert_int_equal(a->id[i], b->id[i]);
        assert_int_equal(a->type[i], b->type[i]);
    }
}

/* read_last returns the last snapshot exactly (with the device order given with it);
 * open_append + write makes a 4th. */
static void test_read_last_and_append(void **state)
{
    (void)state;
    char path[512], xmf[512];
    path_in(path, sizeof path, "res.h5");
    path_in(xmf, sizeof xmf, "res.xmf");
    const size_t n = 6;
    scene s;
    make_scene(&s, 3, 0xffu, (long)n);
    output_run_info ri = { "1.0", "Dev A", "2024-01-01T00:00:00Z", 0 };
    output *o = NULL;
    sphsim_error e;
    assert_int_equal(output_open(&o, path, 0, &s, &ri, &e), SPHSIM_OK);
    uint32_t orders[3][6] = { { 5, 4, 3, 2, 1, 0 }, { 1, 0, 3, 2, 5, 4 }, { 2, 3, 4, 5, 0, 1 } };
    for (int k = 0; k < 3; ++k) {
        particles p;
        fill_particles(&p, n, k, 3);
        output_snapshot_info si = { 0.5 * k, 10L * k, -1, 2 * k, orders[k] };
        assert_int_equal(output_write(o, &p, &si, &e), SPHSIM_OK);
        particles_free(&p);
    }
    assert_int_equal(output_close(o, &e), SPHSIM_OK);

    particles last, want;
    output_snapshot_info si;
    char *json = NULL;
    assert_int_equal(read_last(path, &last, &si, &json, &e), SPHSIM_OK);
    fill_particles(&want, n, 2, 3);
    expect_particles_equal(&last, &want);
    assert_int_equal(last.n_fluid + last.n_boundary + last.n_spheres, n);
    assert_int_equal(last.n_fluid, 2); /* types 0,1,2,0,1,2 */
    assert_int_equal(last.n_boundary, 2);
    assert_true(si.time == 1.0);
    assert_int_equal(si.step, 20);
    assert_int_equal(si.n_contacts, -1);
    assert_int_equal(si.n_outside, 4);
    assert_non_null(si.device_order);
    assert_memory_equal(si.device_order, orders[2], sizeof orders[2]);
    assert_string_equal(json, SCENE_JSON);
    free(json);
    free(si.device_order);
    particles_free(&last);
    particles_free(&want);

    /* append one more */
    output_run_info ri2 = { "1.1", "Dev B", "2024-02-02T00:00:00Z", 0 };
    assert_int_equal(output_open_append(&o, path, &s, &ri2, &e), SPHSIM_OK);
    particles p;
    fill_particles(&p, n, 3, 3);
    output_snapshot_info s3 = { 1.5, 30, -1, 6, NULL };
    assert_int_equal(output_write(o, &p, &s3, &e), SPHSIM_OK);
    particles_free(&p);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);

    hid_t f = open_ro(path);
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), 4);
    check_i64_seq(f, "/VTKHDF/Steps/PointOffsets", 4, 0, (long long)n);
    check_i64_seq(f, "/VTKHDF/Steps/PartOffsets", 4, 0, 0);
    check_i64_seq(f, "/VTKHDF/NumberOfPoints", 1, (long long)n, 0);
    check_i64_seq(f, "/sphsim/steps/step", 4, 0, 10);
    hsize_t d0, d1;
    float *pts = read_all(f, "/VTKHDF/Points", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_int_equal(d0, 11 * n); /* the 11 snapshots of the scene, allocated at creation */
    free(pts);
    char *res = read_attr_fixed(f, "/sphsim", "resumes");
    assert_non_null(strstr(res, "resumed after snapshot 3 by sphsim 1.1 on Dev B"));
    free(res);
    char *dev = read_attr_vstr(f, "/sphsim", "device");
    assert_string_equal(dev, "Dev A");
    free(dev);
    H5Fclose(f);

    assert_int_equal(read_last(path, &last, &si, NULL, &e), SPHSIM_OK);
    fill_particles(&want, n, 3, 3);
    expect_particles_equal(&last, &want);
    assert_true(si.time == 1.5);
    assert_int_equal(si.step, 30);
    /* written without an order: id order */
    assert_non_null(si.device_order);
    for (size_t i = 0; i < n; ++i) assert_int_equal(si.device_order[i], i);
    free(si.device_order);
    particles_free(&last);
    particles_free(&want);

    char *x = slurp(xmf);
    assert_int_equal(count_substr(x, "<Grid Name=\"step_"), 4);
    assert_non_null(strstr(x, ">18 0 1 1 6 3<"));
    assert_non_null(strstr(x, "<Time Value=\"1.5\"/>"));
    free(x);
}

/* Rows past NSteps (a crash after the data, before the commit) are ignored by read_last and
 * open_append, and written over by the next snapshot. */
static void test_uncommitted_rows(void **state)
{
    (void)state;
    char path[512];
    path_in(path, sizeof path, "crash.h5");
    const size_t n = 4;
    g_layout_snaps = 4;
    write_run(path, 3, 0xffu, n, 2, 0);
    g_layout_snaps = 0;
    /* fake an interrupted third snapshot: junk in its rows of the data and the step records */
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    float junk[3 * 4];
    for (int i = 0; i < 12; ++i) junk[i] = 99.0f;
    hsize_t off[2] = { 2 * n, 0 }, cnt[2] = { n, 3 };
    const char *grow[] = { "/VTKHDF/Points", "/VTKHDF/PointData/velocity" };
    for (int i = 0; i < 2; ++i) {
        hid_t ds = H5Dopen2(f, grow[i], H5P_DEFAULT), fs = H5Dget_space(ds), ms = H5Screate_simple(2, cnt, NULL);
        assert_true(H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0);
        assert_true(H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, junk) >= 0);
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(ds);
    }
    {
        hid_t ds = H5Dopen2(f, "/sphsim/steps/time", H5P_DEFAULT), fs = H5Dget_space(ds);
        hsize_t o1 = 2, c1 = 1;
        hid_t ms = H5Screate_simple(1, &c1, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o1, NULL, &c1, NULL);
        double j = 99;
        assert_true(H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, &j) >= 0);
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(ds);
    }
    H5Fclose(f);

    particles last;
    output_snapshot_info si;
    sphsim_error e;
    assert_int_equal(read_last(path, &last, &si, NULL, &e), SPHSIM_OK);
    assert_true(si.time == 0.1);
    particles want;
    fill_particles(&want, n, 1, 3);
    expect_particles_equal(&last, &want);
    particles_free(&last);
    particles_free(&want);
    free(si.device_order);

    scene s;
    make_scene(&s, 3, 0xffu, (long)n);
    output *o = NULL;
    /* reopening changes no extent but Values' (the committed times) */
    assert_int_equal(output_open_append(&o, path, &s, NULL, &e), SPHSIM_OK);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    f = open_ro(path);
    hsize_t d0, d1;
    double *v = read_all(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, &d0, &d1);
    assert_int_equal(d0, 2);
    free(v);
    float *pts = read_all(f, "/VTKHDF/Points", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_int_equal(d0, 4 * n);
    free(pts);
    H5Fclose(f);
    assert_int_equal(output_open_append(&o, path, &s, NULL, &e), SPHSIM_OK);
    particles p;
    fill_particles(&p, n, 7, 3);
    output_snapshot_info s2 = { 0.7, 7000, -1, 0, NULL };
    assert_int_equal(output_write(o, &p, &s2, &e), SPHSIM_OK);
    particles_free(&p);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    f = open_ro(path);
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), 3);
    v = read_all(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, &d0, &d1);
    assert_int_equal(d0, 3);
    assert_true(v[2] == 0.7);
    free(v);
    float *x = read_all(f, "/VTKHDF/Points", H5T_NATIVE_FLOAT, &d0, &d1);
    assert_true(x[3 * (2 * n + 1)] == 0.1f * 1.0f + 7.0f); /* the junk is written over */
    free(x);
    H5Fclose(f);
}

/* A crash after the commit point, before Steps/Values got its row: NSteps counts the
 * snapshot, Values is one short. read_last takes the snapshot (time from /sphsim/steps);
 * open_append completes Values. */
static void test_values_one_short(void **state)
{
    (void)state;
    char path[512];
    path_in(path, sizeof path, "short.h5");
    const size_t n = 4;
    write_run(path, 3, 0xffu, n, 3, 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, "/VTKHDF/Steps/Values", H5P_DEFAULT);
    hsize_t two = 2;
    assert_true(H5Dset_extent(ds, &two) >= 0);
    H5Dclose(ds);
    H5Fclose(f);

    particles last, want;
    output_snapshot_info si;
    sphsim_error e;
    assert_int_equal(read_last(path, &last, &si, NULL, &e), SPHSIM_OK);
    assert_true(si.time == 0.2);
    assert_int_equal(si.step, 2000);
    fill_particles(&want, n, 2, 3);
    expect_particles_equal(&last, &want);
    particles_free(&last);
    particles_free(&want);
    free(si.device_order);

    scene s;
    make_scene(&s, 3, 0xffu, (long)n);
    output *o = NULL;
    assert_int_equal(output_open_append(&o, path, &s, NULL, &e), SPHSIM_OK);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    f = open_ro(path);
    hsize_t d0, d1;
    double *v = read_all(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, &d0, &d1);
    assert_int_equal(d0, 3);
    assert_true(v[0] == 0.0 && v[1] == 0.1 && v[2] == 0.2);
    free(v);
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), 3);
    H5Fclose(f);
}

/* A scene JSON larger than HDF5's 64 KiB limit for attributes stored in an object header
 * (the 1.8 file format moves it to dense storage) survives the round trip. */
static void test_large_scene_json(void **state)
{
    (void)state;
    char path[512];
    path_in(path, sizeof path, "big.h5");
    size_t len = 300000;
    char *json = malloc(len + 1);
    for (size_t i = 0; i < len; ++i) json[i] = (char)('a' + i % 26);
    json[0] = '{';
    json[len - 1] = '}';
    json[len] = '\0';
    scene s;
    make_scene(&s, 2, 0, 2);
    s.source_json = json;
    s.resolved_json = json;
    output *o = NULL;
    sphsim_error e;
    assert_int_equal(output_open(&o, path, 0, &s, NULL, &e), SPHSIM_OK);
    particles p;
    fill_particles(&p, 2, 0, 2);
    output_snapshot_info si = { 0, 0, -1, 0, NULL };
    assert_int_equal(output_write(o, &p, &si, &e), SPHSIM_OK);
    particles_free(&p);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    particles last;
    char *back = NULL;
    assert_int_equal(read_last(path, &last, &si, &back, &e), SPHSIM_OK);
    assert_non_null(back);
    assert_int_equal(strlen(back), len);
    assert_string_equal(back, json);
    free(back);
    free(si.device_order);
    particles_free(&last);
    free(json);
}

static void test_particle_count_fixed(void **state)
{
    (void)state;
    char path[512];
    path_in(path, sizeof path, "count.h5");
    scene s;
    make_scene(&s, 2, 0, 3);
    output *o = NULL;
    sphsim_error e;
    assert_int_equal(output_open(&o, path, 0, &s, NULL, &e), SPHSIM_OK);
    particles p;
    fill_particles(&p, 3, 0, 2);
    output_snapshot_info si = { 0, 0, -1, 0, NULL };
    assert_int_equal(output_write(o, &p, &si, &e), SPHSIM_OK);
    particles_free(&p);
    fill_particles(&p, 4, 1, 2);
    assert_int_equal(output_write(o, &p, &si, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "particle count"));
    particles_free(&p);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    hid_t f = open_ro(path);
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), 1);
    H5Fclose(f);
}

static void test_read_last_errors(void **state)
{
    (void)state;
    char path[512];
    path_in(path, sizeof path, "missing.h5");
    particles p;
    output_snapshot_info si;
    sphsim_error e;
    char *json = NULL;
    assert_int_equal(read_last(path, &p, &si, &json, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, path));
    assert_null(json);
    /* a file with no snapshot */
    path_in(path, sizeof path, "empty.h5");
    write_run(path, 3, 0, 3, 0, 0);
    assert_int_equal(read_last(path, &p, &si, &json, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "no completed snapshot"));
    /* an HDF5 file that is not a sphsim output */
    path_in(path, sizeof path, "other.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    assert_int_equal(read_last(path, &p, &si, &json, &e), SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "not a readable sphsim output"));
    output *o = NULL;
    scene s;
    make_scene(&s, 3, 0, 3);
    assert_int_equal(output_open_append(&o, path, &s, NULL, &e), SPHSIM_E_IO);
    assert_null(o);
}

static void test_unwritable(void **state)
{
    (void)state;
    char path[600];
    scene s;
    make_scene(&s, 3, 0, 3);
    output *o = NULL;
    sphsim_error e;
    /* a directory that does not exist */
    path_in(path, sizeof path, "no/such/dir/out.h5");
    assert_int_equal(output_open(&o, path, 0, &s, NULL, &e), SPHSIM_E_IO);
    assert_null(o);
    assert_non_null(strstr(e.msg, "cannot create output file"));
    assert_non_null(strstr(e.msg, "No such file or directory"));
    /* a read-only directory: a read-only tmpfs as root (root ignores mode bits), else 0555 */
    char ro[512];
    path_in(ro, sizeof ro, "ro");
    assert_int_equal(mkdir(ro, 0755), 0);
    int mounted = 0;
    if (geteuid() == 0) {
        mounted = mount("tmpfs", ro, "tmpfs", MS_RDONLY, "size=64k") == 0;
        if (!mounted) print_message("note: cannot mount a read-only tmpfs (%s); using chmod 0555\n", strerror(errno));
    }
    if (!mounted) assert_int_equal(chmod(ro, 0555), 0);
    snprintf(path, sizeof path, "%s/out.h5", ro);
    if (mounted || geteuid() != 0) {
        assert_int_equal(output_open(&o, path, 0, &s, NULL, &e), SPHSIM_E_IO);
        assert_null(o);
        assert_non_null(strstr(e.msg, "cannot create output file"));
        assert_true(strstr(e.msg, "Read-only file system") || strstr(e.msg, "Permission denied"));
    } else {
        print_message("note: running as root without mount permission: the read-only directory case "
                      "is not testable here (the missing-directory case above is)\n");
    }
    if (mounted) umount(ro);
    chmod(ro, 0755);
}

/* Write snapshots until one fails; returns the number written; the failure message in e. */
static int write_until_failure(const char *path, size_t n, int max, sphsim_error *e, sphsim_status *fail_st,
                               const struct rlimit *restore)
{
    scene s;
    make_scene(&s, 3, 0xffu, (long)n);
    if (g_layout_snaps) s.n_steps = 1000L * (g_layout_snaps - 1);
    output *o = NULL;
    *fail_st = output_open(&o, path, 0, &s, NULL, e);
    if (*fail_st != SPHSIM_OK) {
        if (restore) assert_int_equal(setrlimit(RLIMIT_FSIZE, restore), 0);
        return -1;
    }
    int k = 0;
    for (; k < max; ++k) {
        particles p;
        fill_particles(&p, n, k, 3);
        output_snapshot_info si = { 0.1 * k, k, -1, 0, NULL };
        sphsim_status st = output_write(o, &p, &si, e);
        particles_free(&p);
        if (st != SPHSIM_OK) {
            *fail_st = st;
            /* the output refuses anything more */
            sphsim_error e2;
            fill_particles(&p, n, k, 3);
            assert_int_equal(output_write(o, &p, &si, &e2), SPHSIM_E_IO);
            if (!strstr(e->msg, "could not reserve") && !strstr(e->msg, "laid out for")) /* failed inside HDF5 */
                assert_non_null(strstr(e2.msg, "unusable after an earlier write error"));
            particles_free(&p);
            break;
        }
    }
    /* The close of a file whose write failed flushes into a discarded in-memory file, which
     * RLIMIT_FSIZE limits too: lift the limit first (sphsim itself would have been killed by
     * SIGXFSZ at the first write past the limit: that is the SIGKILL case). */
    if (restore) assert_int_equal(setrlimit(RLIMIT_FSIZE, restore), 0);
    sphsim_error ce;
    assert_int_equal(output_close(o, &ce), SPHSIM_OK);
    return k;
}

/* After a disk-full failure, the file opens and holds exactly the snapshots written before. */
static void check_intact(const char *path, int written, size_t n)
{
    particles last, want;
    output_snapshot_info si;
    sphsim_error e;
    hid_t f = open_ro(path);
    assert_int_equal(read_attr_i64(f, "/VTKHDF/Steps", "NSteps"), written);
    H5Fclose(f);
    if (read_last(path, &last, &si, NULL, &e) != SPHSIM_OK) fail_msg("read_last after failure: %s", e.msg);
    fill_particles(&want, n, written - 1, 3);
    expect_particles_equal(&last, &want);
    assert_true(si.time == 0.1 * (written - 1));
    free(si.device_order);
    particles_free(&last);
    particles_free(&want);
}

/* A real full disk: a small tmpfs. The whole run's space is allocated and reserved when the
 * file is created, so a run that does not fit is refused then (11 snapshots of 1500 particles,
 * about 1 MB, on 512 KiB), before any step, and leaves nothing behind; one that fits (3
 * snapshots) writes every snapshot, and a 4th is refused without touching the file. */
static void test_disk_full_tmpfs(void **state)
{
    (void)state;
    char mnt[512], path[600], tmp[700];
    path_in(mnt, sizeof mnt, "small");
    assert_int_equal(mkdir(mnt, 0755), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=512k") != 0) {
        print_message("note: cannot mount a tmpfs (%s): disk full is tested through RLIMIT_FSIZE only\n",
                      strerror(errno));
        skip();
    }
    snprintf(path, sizeof path, "%s/full.h5", mnt);
    snprintf(tmp, sizeof tmp, "%s.creating", path);
    const size_t n = 1500;
    sphsim_error e;
    sphsim_status st;
    int written = write_until_failure(path, n, 20, &e, &st, NULL);
    print_message("tmpfs 512 KiB, 11 snapshots: %s\n", e.msg);
    int ok = written == -1 && st == SPHSIM_E_IO && strstr(e.msg, "No space left on device") &&
             strstr(e.msg, "could not reserve") && access(path, F_OK) != 0 && access(tmp, F_OK) != 0;
    if (ok) {
        g_layout_snaps = 3;
        written = write_until_failure(path, n, 20, &e, &st, NULL);
        g_layout_snaps = 0;
        print_message("tmpfs 512 KiB, 3 snapshots: %d written, then: %s\n", written, e.msg);
        ok = written == 3 && st == SPHSIM_E_IO && strstr(e.msg, "laid out for 3 snapshots");
        if (ok) check_intact(path, 3, n);
    }
    umount(mnt);
    assert_true(ok);
}

/* A write that fails inside HDF5 (injected after the data rows, before the commit): the
 * output refuses anything more, closes cleanly, and the file holds the earlier snapshots. */
static void test_failed_write_keeps_commits(void **state)
{
    (void)state;
    char path[512], xmf[512];
    path_in(path, sizeof path, "inject.h5");
    path_in(xmf, sizeof xmf, "inject.xmf");
    const size_t n = 300;
    sphsim_error e;
    sphsim_status st;
    output_fault_at = 2;
    int written = write_until_failure(path, n, 5, &e, &st, NULL);
    output_fault_at = -1;
    assert_int_equal(written, 2);
    assert_int_equal(st, SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "injected"));
    assert_non_null(strstr(e.msg, "the 2 snapshot(s) written before are intact"));
    check_intact(path, 2, n);
    char *x = slurp(xmf);
    assert_int_equal(count_substr(x, "<Grid Name=\"step_"), 2);
    free(x);
    /* and it can be resumed: the rows of the failed snapshot are cut */
    scene s;
    make_scene(&s, 3, 0xffu, (long)n);
    output *o = NULL;
    assert_int_equal(output_open_append(&o, path, &s, NULL, &e), SPHSIM_OK);
    particles p;
    fill_particles(&p, n, 2, 3);
    output_snapshot_info si = { 0.2, 2, -1, 0, NULL };
    assert_int_equal(output_write(o, &p, &si, &e), SPHSIM_OK);
    particles_free(&p);
    assert_int_equal(output_close(o, &e), SPHSIM_OK);
    check_intact(path, 3, n);
}

/* A file size limit: the run is refused at creation, the file never placed. */
static void test_disk_full_rlimit(void **state)
{
    (void)state;
    char path[512];
    path_in(path, sizeof path, "fsize.h5");
    const size_t n = 1500;
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = old;
    lim.rlim_cur = 600 * 1024;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    sphsim_error e;
    sphsim_status st;
    int written = write_until_failure(path, n, 20, &e, &st, &old);
    signal(SIGXFSZ, old_handler);
    print_message("RLIMIT_FSIZE 600 KiB: %s\n", e.msg);
    assert_int_equal(written, -1);
    assert_int_equal(st, SPHSIM_E_IO);
    assert_non_null(strstr(e.msg, "File too large"));
    assert_non_null(strstr(e.msg, "could not reserve"));
    assert_non_null(strstr(e.msg, "11 snapshots"));
    assert_int_not_equal(access(path, F_OK), 0);
}

/* A larger file kept for development of the Python side when SPHSIM_KEEP_OUTPUT is set. */
static void keep_output(void **state)
{
    (void)state;
    write_run(getenv("SPHSIM_KEEP_OUTPUT"), 3, 0xffu, 50, 3, 1);
}

/* Every file the tests opened through the output module is closed again. */
static void test_no_open_files(void **state)
{
    (void)state;
    assert_int_equal(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

/* ------------------------------------------------------------------ writer loop (for SIGKILL tests) */

static int writer_loop(const char *path)
{
    const char *ns = getenv("SPHSIM_OUTPUT_WRITER_N");
    size_t n = ns ? (size_t)strtoul(ns, NULL, 10) : 20000;
    scene s;
    make_scene(&s, 3, 0xffu, (long)n);
    const char *ms = getenv("SPHSIM_OUTPUT_WRITER_MAX");
    long max = ms ? strtol(ms, NULL, 10) : -1;
    /* the layout: room for the snapshots written (about 10^8 bytes of them when unbounded)
     * and one more, which the resume loop appends */
    long cap = max > 0 ? max + 1 : (long)(1e8 / (60.0 * (double)n));
    if (cap < 4) cap = 4;
    if (cap > 400) cap = 400;
    s.n_steps = 1000L * (cap - 1);
    if (max < 0) max = cap - 1;
    output *o = NULL;
    sphsim_error e;
    if (output_open(&o, path, 1, &s, NULL, &e) != SPHSIM_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    particles p;
    if (particles_alloc(&p, n, &e) != SPHSIM_OK) return 1;
    for (long k = 0; k < max; ++k) {
        for (size_t i = 0; i < n; ++i) {
            /* values the checker can recompute from (k, i) */
            p.pos[4 * i + 0] = (float)i;
            p.pos[4 * i + 1] = (float)k;
            p.pos[4 * i + 2] = 0.5f;
            p.vel[4 * i + 0] = (float)k;
            p.rho[i] = 1000.0f + (float)k;
            p.id[i] = (uint32_t)i;
            p.type[i] = 0;
        }
        output_snapshot_info si = { 0.01 * (double)k, k, -1, 0, NULL };
        if (output_write(o, &p, &si, &e) != SPHSIM_OK) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        printf("committed %ld\n", k);
        fflush(stdout);
    }
    particles_free(&p);
    return output_close(o, &e) == SPHSIM_OK ? 0 : 1;
}

/* Resume a file left by writer_loop (perhaps killed): read the last snapshot, check it
 * against the values writer_loop writes, append one more. Prints "resumed <k> <n>". */
static int resume_check(const char *path)
{
    particles p;
    output_snapshot_info si;
    sphsim_error e;
    char *json = NULL;
    if (read_last(path, &p, &si, &json, &e) != SPHSIM_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    long k = si.step;
    int bad = strcmp(json, SCENE_JSON) != 0 || si.time != 0.01 * (double)k;
    for (size_t i = 0; i < p.n && !bad; ++i)
        bad = p.pos[4 * i] != (float)i || p.pos[4 * i + 1] != (float)k || p.rho[i] != 1000.0f + (float)k ||
              p.vel[4 * i] != (float)k || p.id[i] != i;
    free(json);
    free(si.device_order);
    if (bad) {
        fprintf(stderr, "last snapshot %ld of %s does not hold the values written\n", k, path);
        return 1;
    }
    scene s;
    make_scene(&s, 3, 0xffu, (long)p.n);
    output *o = NULL;
    if (output_open_append(&o, path, &s, NULL, &e) != SPHSIM_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    ++k;
    for (size_t i = 0; i < p.n; ++i) {
        p.pos[4 * i + 1] = (float)k;
        p.rho[i] = 1000.0f + (float)k;
        p.vel[4 * i] = (float)k;
    }
    output_snapshot_info s2 = { 0.01 * (double)k, k, -1, 0, NULL };
    if (output_write(o, &p, &s2, &e) != SPHSIM_OK || output_close(o, &e) != SPHSIM_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    printf("resumed %ld %zu\n", k, p.n);
    particles_free(&p);
    return 0;
}

/* Positions, velocities and the topology go out packed a block of rows at a time: with blocks
 * of 7 and 64 rows (snapshots of 50 rows cross block boundaries at other places in each
 * snapshot), the file holds the same datasets as with the default block, and the values
 * written. */
static void test_packed_blocks(void **state)
{
    (void)state;
    const size_t n = 50;
    const size_t blocks[3] = { 0, 7, 64 };
    static const char *const paths[4] = { "/VTKHDF/Points", "/VTKHDF/PointData/velocity", "/VTKHDF/Vertices/Offsets",
                                          "/VTKHDF/Vertices/Connectivity" };
    void *ref[4] = { NULL };
    for (int b = 0; b < 3; ++b) {
        char path[512];
        snprintf(path, sizeof path, "%s/blocks%d.h5", g_dir, b);
        g_block_rows = blocks[b];
        write_run(path, 3, 0xffu, n, 3, 0);
        g_block_rows = 0;
        hid_t f = open_ro(path);
        for (int d = 0; d < 4; ++d) {
            hsize_t d0, d1;
            const hid_t t = d < 2 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64;
            void *v = read_all(f, paths[d], t, &d0, &d1);
            const size_t bytes = (size_t)(d0 * d1) * (d < 2 ? 4 : 8);
            assert_int_equal(d0, d < 2 ? 3 * n : d == 2 ? n + 1 : n);
            if (d >= 2)
                for (hsize_t i = 0; i < d0; ++i) assert_int_equal(((int64_t *)v)[i], (int64_t)i);
            if (b == 0) {
                ref[d] = v;
                continue;
            }
            assert_memory_equal(v, ref[d], bytes);
            free(v);
        }
        H5Fclose(f);
    }
    /* and the values: snapshot k's rows from fill_particles */
    for (int k = 0; k < 3; ++k) {
        particles p;
        fill_particles(&p, n, k, 3);
        const float *pts = ref[0], *vel = ref[1];
        for (size_t i = 0; i < n; ++i)
            for (int c = 0; c < 3; ++c) {
                assert_true(pts[(k * n + i) * 3 + c] == p.pos[4 * i + c]);
                assert_true(vel[(k * n + i) * 3 + c] == p.vel[4 * i + c]);
            }
        particles_free(&p);
    }
    for (int d = 0; d < 4; ++d) free(ref[d]);
}

/* h5io_ds_write_runs, the selection each MPI rank writes its rows of a snapshot with (docs/mpi.md):
 * a packed buffer lands at the runs' rows (axis 0, every column) and at the runs' columns of one
 * row (axis 1, the restart device order), with over a thousand runs (their union built as a
 * tree) and with none; every other element is left as it was, and a run past the end refused. */
static void test_write_runs(void **state)
{
    (void)state;
    h5io_quiet();
    char path[512];
    snprintf(path, sizeof path, "%s/runs.h5", g_dir);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    enum { N = 4000 };
    const hsize_t base = 2 * N; /* the third snapshot's rows */
    assert_int_equal(h5io_ds_create_fixed(f, "/a", H5T_IEEE_F32LE, 2, 3 * N, 3, 0), 0);
    assert_int_equal(h5io_ds_create_fixed(f, "/b", H5T_STD_U32LE, 2, 2, N, 0), 0);
    float *a = calloc(3 * N * 3, sizeof *a), *buf = calloc(N * 3, sizeof *buf);
    uint32_t *b = calloc(2 * N, sizeof *b), *ids = calloc(N, sizeof *ids);
    hsize_t *run = calloc(2 * N, sizeof *run);
    assert_non_null(a && buf && b && ids && run);
    for (size_t i = 0; i < 3 * N * 3; ++i) a[i] = -1.0f;
    for (size_t i = 0; i < 2 * N; ++i) b[i] = 0xffffffffu;
    assert_int_equal(h5io_ds_write_rows(f, "/a", H5T_NATIVE_FLOAT, a, 0, 3 * N), 0);
    assert_int_equal(h5io_ds_write_rows(f, "/b", H5T_NATIVE_UINT32, b, 0, 2), 0);
    /* the ids a rank might own: irregular, ascending, in many runs */
    size_t n = 0, nr = 0;
    for (uint32_t i = 0; i < N; ++i)
        if (i % 3u != 1u) {
            if (n == 0 || ids[n - 1] + 1 != i) run[2 * nr++] = i;
            run[2 * nr - 1]++;
            for (int c = 0; c < 3; ++c) buf[3 * n + c] = (float)(3 * i + c) + 0.5f;
            ids[n++] = i;
        }
    assert_true(nr > 1000);
    assert_int_equal(h5io_ds_write_runs(f, "/a", H5T_NATIVE_FLOAT, buf, base, run, nr, 0), 0);
    assert_int_equal(h5io_runs_collective(NULL, 0), -1); /* a serial file: no MPI-IO */
    assert_int_equal(h5io_ds_write_runs(f, "/b", H5T_NATIVE_UINT32, ids, 1, run, nr, 1), 0);
    assert_int_equal(h5io_ds_write_runs(f, "/a", H5T_NATIVE_FLOAT, buf, 0, run, 0, 0), 0); /* none */
    const hsize_t past[2] = { N - 1, 2 };
    assert_int_equal(h5io_ds_write_runs(f, "/a", H5T_NATIVE_FLOAT, buf, base, past, 1, 0), -1);
    assert_int_equal(h5io_ds_write_runs(f, "/b", H5T_NATIVE_UINT32, ids, 1, past, 1, 1), -1);
    assert_int_equal(h5io_ds_read_rows(f, "/a", H5T_NATIVE_FLOAT, a, 0, 3 * N), 0);
    assert_int_equal(h5io_ds_read_rows(f, "/b", H5T_NATIVE_UINT32, b, 0, 2), 0);
    H5Fclose(f);
    size_t k = 0;
    for (uint32_t i = 0; i < N; ++i) {
        const int mine = k < n && ids[k] == i;
        for (int c = 0; c < 3; ++c) {
            assert_true(a[3 * i + c] == -1.0f);       /* the first snapshot's rows: untouched */
            assert_true(a[3 * (N + i) + c] == -1.0f); /* the second's */
            assert_true(a[3 * (base + i) + c] == (mine ? (float)(3 * i + c) + 0.5f : -1.0f));
        }
        assert_int_equal(b[i], 0xffffffffu);
        assert_int_equal(b[N + i], mine ? i : 0xffffffffu);
        k += (size_t)mine;
    }
    assert_int_equal(k, n);
    free(a);
    free(buf);
    free(b);
    free(ids);
    free(run);
}

/* particles_scatter_by_id (the writer's id order): rows in a shuffled order come out in id
 * order, every array with them; an id out of range or one that appears twice is refused. */
static void test_scatter_by_id(void **state)
{
    (void)state;
    const size_t n = 1000;
    particles q, p;
    sphsim_error e;
    assert_int_equal(particles_alloc(&q, n, &e), SPHSIM_OK);
    assert_int_equal(particles_alloc(&p, n, &e), SPHSIM_OK);
    for (size_t i = 0; i < n; ++i) q.id[i] = (uint32_t)i;
    uint64_t r = 12345;
    for (size_t i = n - 1; i > 0; --i) { /* Fisher-Yates */
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const size_t j = (size_t)((r >> 33) % (i + 1));
        const uint32_t t = q.id[i];
        q.id[i] = q.id[j];
        q.id[j] = t;
    }
    for (size_t i = 0; i < n; ++i) { /* every value of row i tells its id */
        const float k = (float)q.id[i];
        for (int c = 0; c < 4; ++c) {
            q.pos[4 * i + c] = k + 0.25f * (float)c;
            q.vel[4 * i + c] = -k - 0.25f * (float)c;
        }
        q.rho[i] = 2.0f * k;
        q.pressure[i] = 3.0f * k;
        q.mass[i] = 4.0f * k;
        q.radius[i] = 5.0f * k;
        q.type[i] = (uint8_t)(q.id[i] % 3);
    }
    /* the gather over 1, 3 and 7 threads (tuning.writer_threads; 1000 rows would take one) */
    static const int threads[3] = { 1, 3, 7 };
    for (int t = 0; t < 3; ++t) {
        memset(p.pos, 0xff, 16 * n); /* NaN everywhere: no row may keep it */
        memset(p.vel, 0xff, 16 * n);
        memset(p.mass, 0xff, 4 * n);
        memset(p.type, 0xff, n);
        assert_int_equal(particles_scatter_by_id(&q, &p, threads[t], &e), SPHSIM_OK);
        for (size_t k = 0; k < n; ++k) {
            const float f = (float)k;
            assert_int_equal(p.id[k], k);
            for (int c = 0; c < 4; ++c) {
                assert_true(p.pos[4 * k + c] == f + 0.25f * (float)c);
                assert_true(p.vel[4 * k + c] == -f - 0.25f * (float)c);
            }
            assert_true(p.rho[k] == 2.0f * f && p.pressure[k] == 3.0f * f && p.mass[k] == 4.0f * f &&
                        p.radius[k] == 5.0f * f);
            assert_int_equal(p.type[k], k % 3);
        }
    }
    /* a corrupted state, on 1 and 7 threads: the same error, naming the first bad row's id.
     * Row 900 repeats row 700's id, row 950 is out of range: "twice" (row 900 comes first);
     * then row 700 out of range too: "out of range" (row 700 comes first). */
    const uint32_t keep700 = q.id[700], keep900 = q.id[900], keep950 = q.id[950];
    for (int t = 0; t < 3; t += 2) {
        q.id[900] = q.id[700];
        q.id[950] = (uint32_t)n + 5;
        char want[128];
        snprintf(want, sizeof want, "particle id %u twice", (unsigned)q.id[700]);
        assert_int_equal(particles_scatter_by_id(&q, &p, threads[t], &e), SPHSIM_E_DEVICE);
        assert_non_null(strstr(e.msg, want));
        q.id[700] = (uint32_t)n;
        snprintf(want, sizeof want, "particle id %u out of range", (unsigned)n);
        assert_int_equal(particles_scatter_by_id(&q, &p, threads[t], &e), SPHSIM_E_DEVICE);
        assert_non_null(strstr(e.msg, want));
        q.id[700] = keep700;
        q.id[900] = keep900;
        q.id[950] = keep950;
        assert_int_equal(particles_scatter_by_id(&q, &p, threads[t], &e), SPHSIM_OK);
    }
    particles_free(&q);
    particles_free(&p);
}

/* The host arrays a run keeps (src/sim.c: only those of the output fields): particles_alloc_some
 * allocates just the arrays asked for, particles_keep frees the others, particles_place lays
 * them out in one block at particles_row_bytes apiece, and particles_scatter_by_id gathers the
 * arrays both sides have and leaves the rest alone. */
static void test_partial_arrays(void **state)
{
    (void)state;
    const size_t n = 300;
    sphsim_error e;
    assert_int_equal(particles_row_bytes(FIELDS_ALL), 65); /* 53, and 12 for angular velocities */
    assert_int_equal(particles_row_bytes(FIELD_POSITION | FIELD_ID | FIELD_TYPE), 21);
    particles q, p;
    const unsigned staged = FIELD_POSITION | FIELD_VELOCITY | FIELD_ID | FIELD_TYPE;
    assert_int_equal(particles_alloc_some(&q, n, staged, &e), SPHSIM_OK);
    assert_non_null(q.pos);
    assert_non_null(q.vel);
    assert_non_null(q.id);
    assert_non_null(q.type);
    assert_null(q.rho);
    assert_null(q.pressure);
    assert_null(q.mass);
    assert_null(q.radius);
    for (size_t i = 0; i < n; ++i) {
        q.id[i] = (uint32_t)((i * 7) % n); /* 7 is coprime to 300: a permutation */
        for (int c = 0; c < 4; ++c) {
            q.pos[4 * i + c] = (float)q.id[i] + 0.5f * (float)c;
            q.vel[4 * i + c] = -(float)q.id[i];
        }
        q.type[i] = (uint8_t)(q.id[i] % 2);
    }
    /* particles_touch zeroes every byte of every array q has, on 1 and 3 threads */
    static const int touch_threads[2] = { 1, 3 };
    for (int t = 0; t < 2; ++t) {
        particles z;
        assert_int_equal(particles_alloc_some(&z, n, staged, &e), SPHSIM_OK);
        memset(z.pos, 0x5a, 16 * n);
        memset(z.vel, 0x5a, 16 * n);
        memset(z.id, 0x5a, 4 * n);
        memset(z.type, 0x5a, n);
        particles_touch(&z, touch_threads[t]);
        const unsigned char *const arr[4] = { (void *)z.pos, (void *)z.vel, (void *)z.id, z.type };
        const size_t len[4] = { 16 * n, 16 * n, 4 * n, n };
        for (int a = 0; a < 4; ++a)
            for (size_t b = 0; b < len[a]; ++b) assert_int_equal(arr[a][b], 0);
        assert_null(z.rho);
        particles_free(&z);
    }
    /* the id-order side: everything, then only positions, types and masses */
    assert_int_equal(particles_alloc(&p, n, &e), SPHSIM_OK);
    particles_keep(&p, FIELD_POSITION | FIELD_TYPE | FIELD_MASS);
    assert_non_null(p.pos);
    assert_non_null(p.type);
    assert_non_null(p.mass);
    assert_null(p.vel);
    assert_null(p.id);
    assert_null(p.rho);
    for (size_t k = 0; k < n; ++k) p.mass[k] = 9.0f;
    assert_int_equal(particles_scatter_by_id(&q, &p, TUNE_AUTO, &e), SPHSIM_OK);
    for (size_t k = 0; k < n; ++k) {
        for (int c = 0; c < 4; ++c) assert_true(p.pos[4 * k + c] == (float)k + 0.5f * (float)c);
        assert_int_equal(p.type[k], k % 2);
        assert_true(p.mass[k] == 9.0f); /* not in the staging buffer: left as it was */
    }
    particles_free(&p);
    /* one block: the arrays lie one after another, positions first, none overlapping */
    unsigned char *mem = calloc(particles_row_bytes(staged), n);
    assert_non_null(mem);
    particles_place(&p, n, staged, mem);
    assert_ptr_equal(p.pos, mem);
    assert_ptr_equal(p.vel, mem + 16 * n);
    assert_ptr_equal(p.id, mem + 32 * n);
    assert_ptr_equal(p.type, mem + 36 * n);
    assert_null(p.rho);
    assert_null(p.mass);
    assert_int_equal(p.n, n);
    assert_int_equal(particles_scatter_by_id(&q, &p, TUNE_AUTO, &e), SPHSIM_OK);
    for (size_t k = 0; k < n; ++k) {
        assert_true(p.vel[4 * k] == -(float)k);
        assert_int_equal(p.id[k], k);
    }
    free(mem);
    /* every array of one block aligned to its element, also for an odd n */
    const size_t odd = 301;
    mem = aligned_alloc(16, (particles_row_bytes(FIELDS_ALL) * odd + 15) / 16 * 16);
    assert_non_null(mem);
    particles_place(&p, odd, FIELDS_ALL, mem);
    assert_ptr_equal(p.pos, mem);
    assert_int_equal((uintptr_t)p.vel % 16, 0);
    const void *const f4[] = { p.rho, p.pressure, p.id, p.radius, p.mass };
    for (int k = 0; k < 5; ++k) {
        assert_non_null(f4[k]);
        assert_int_equal((uintptr_t)f4[k] % 4, 0);
    }
    assert_ptr_equal(p.type, (unsigned char *)mem + (particles_row_bytes(FIELDS_ALL) - 1) * odd);
    free(mem);
    particles_free(&q);
}

int main(void)
{
    const char *loop = getenv("SPHSIM_OUTPUT_WRITER_LOOP");
    if (loop && *loop) return writer_loop(loop);
    const char *res = getenv("SPHSIM_OUTPUT_RESUME_CHECK");
    if (res && *res) return resume_check(res);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xmf_path),
        cmocka_unit_test(test_scatter_by_id),
        cmocka_unit_test(test_partial_arrays),
        cmocka_unit_test_setup_teardown(test_layout_and_values, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_packed_blocks, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_field_subset_2d, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_refuse_overwrite, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_read_last_and_append, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_uncommitted_rows, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_values_one_short, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_large_scene_json, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_particle_count_fixed, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_read_last_errors, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_unwritable, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_disk_full_tmpfs, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_disk_full_rlimit, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_failed_write_keeps_commits, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_write_runs, setup_dir, teardown_dir),
        cmocka_unit_test(test_no_open_files),
    };
    const char *keep = getenv("SPHSIM_KEEP_OUTPUT");
    if (keep && *keep) {
        const struct CMUnitTest k[] = { cmocka_unit_test(keep_output) };
        if (cmocka_run_group_tests_name("keep_output", k, NULL, NULL)) return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
