/* output: the VTKHDF writer: creates an output file's layout (time-stepped VTKHDF PolyData, one
 * file per run), writes each snapshot's rows and commits it, closes the file, and reopens it
 * for --resume to append. Layout, units and the crash-safety rules are documented in
 * docs/output-format.md. The sidecar is xdmf.c's, reading back output_read.c's, disk-space
 * reservation diskspace.c's.
 *
 * Commit protocol per snapshot k (N particles), its disk space reserved first:
 *   1. data: Points and PointData rows [kN, kN+N), the restart order and solver state; then
 *      the step entry: Steps offsets and the /sphsim/steps records (time, step, ...) at row k;
 *      H5Fflush, fsync;
 *   2. (first snapshot only: the part's counts NumberOfPoints etc. = N; H5Fflush;)
 *      Steps attribute NSteps = k + 1: the commit point; H5Fflush;
 *   3. Steps/Values[k] = time (after the commit: VTK reads the whole of Steps/Values into an
 *      array of NSteps, so Values must never be longer than NSteps); H5Fflush, fsync;
 *   4. the XDMF sidecar rewritten in full (temp file, fsync, rename).
 * On disk, at any moment: len(Steps/Values) <= NSteps <= rows of every other step dataset.
 * Readers take NSteps as the truth and the times from /sphsim/steps/time; rows past NSteps
 * (a crash in phase 1) are ignored, and output_open_append cuts them off (and completes
 * Steps/Values after a crash in phase 3) before appending. */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output_geometry.h"
#include "output_internal.h"

/* Test-only fault injection: the test binaries link tests/output_fault.c, which defines this
 * hook (a non-zero return makes snapshot `k` fail after its data rows are written, as a failed
 * write inside HDF5 would); sphsim does not, and the weak reference stays null. */
extern int output_fault_hook(unsigned long long k) __attribute__((weak));

const field_desc OUTPUT_FIELDS[] = {
    { "velocity", FIELD_VELOCITY, 3, FK_F32 }, /* m/s */
    { "density", FIELD_DENSITY, 1, FK_F32 },   /* kg/m^3 */
    { "pressure", FIELD_PRESSURE, 1, FK_F32 }, /* Pa */
    { "id", FIELD_ID, 1, FK_U32 },             /* 0 .. n-1 */
    { "type", FIELD_TYPE, 1, FK_U8 },          /* PTYPE_*: 0 fluid, 1 boundary, 2 sphere */
    { "radius", FIELD_RADIUS, 1, FK_F32 },     /* m */
    { "mass", FIELD_MASS, 1, FK_F32 },         /* kg */
    /* rad/s, spheres */
    { "angular_velocity", FIELD_ANGULAR_VELOCITY, 3, FK_F32 },
};
const int OUTPUT_N_FIELDS = (int)(sizeof OUTPUT_FIELDS / sizeof OUTPUT_FIELDS[0]);

unsigned output_fields(const scene *s)
{
    /* an integrated density is state that --resume restores */
    return s->fields | ALWAYS_FIELDS | (s->density == DENSITY_CONTINUITY ? FIELD_DENSITY : 0u);
}

static const char *const TOPOS[OUT_TOPOS] = { "Vertices", "Lines", "Polygons", "Strips" };

/* The one part (partition) every step shares: its point and cell counts, one row each,
 * written with the vertex cells at the first snapshot. Every step has PartOffsets 0. (VTK
 * 9.3 reads a step's vertex Offsets from index PartOffsets + CellOffsets, so a shared
 * topology needs PartOffsets 0; later VTKs accept that too.) */
static const char *const PART_I64[] = {
    "/VTKHDF/NumberOfPoints",
    "/VTKHDF/Vertices/NumberOfCells",
    "/VTKHDF/Vertices/NumberOfConnectivityIds",
    "/VTKHDF/Lines/NumberOfCells",
    "/VTKHDF/Lines/NumberOfConnectivityIds",
    "/VTKHDF/Polygons/NumberOfCells",
    "/VTKHDF/Polygons/NumberOfConnectivityIds",
    "/VTKHDF/Strips/NumberOfCells",
    "/VTKHDF/Strips/NumberOfConnectivityIds",
};
#define N_PART_I64 ((int)(sizeof PART_I64 / sizeof PART_I64[0]))

/* Per-step int64 datasets with one column (row k belongs to snapshot k). */
const char *const OUTPUT_STEP_I64[] = {
    "/VTKHDF/Steps/PartOffsets", "/VTKHDF/Steps/NumberOfParts", "/VTKHDF/Steps/PointOffsets",
    "/sphsim/steps/step",        "/sphsim/steps/n_contacts",    "/sphsim/steps/n_outside",
};
const int OUTPUT_N_STEP_I64 = (int)(sizeof OUTPUT_STEP_I64 / sizeof OUTPUT_STEP_I64[0]);
/* Per-step datasets of other shapes. */
static const char *const STEP_F64[] = { "/VTKHDF/Steps/Values", "/sphsim/steps/time" };
static const char *const STEP_I64x4[] = { "/VTKHDF/Steps/CellOffsets", "/VTKHDF/Steps/ConnectivityIdOffsets" };

/* Units of every field, dataset and attribute (stored as the /sphsim attribute `units`). */
static const char UNITS_JSON[] =
    "{\"Points\": \"m\", \"velocity\": \"m/s\", \"density\": \"kg/m^3\", \"pressure\": \"Pa\", "
    "\"id\": \"1\", \"type\": \"1 (0 fluid, 1 boundary, 2 sphere)\", \"radius\": \"m\", \"mass\": \"kg\", "
    "\"angular_velocity\": \"rad/s\", "
    "\"Steps/Values\": \"s\", \"steps/time\": \"s\", \"steps/step\": \"1\", \"steps/n_contacts\": \"1\", "
    "\"steps/n_outside\": \"1\", \"smoothing_length\": \"m\", \"support_radius\": \"m\", "
    "\"particle_mass\": \"kg\", \"lattice_particle_mass\": \"kg\", \"boundary_particle_mass\": \"kg\", "
    "\"rest_density\": \"kg/m^3\", \"sound_speed\": \"m/s\", \"gamma\": \"1\", "
    "\"stiffness\": \"m^2/s^2\", \"gravity\": \"m/s^2\", \"spacing\": \"m\", \"dt\": \"s\", "
    "\"t_end\": \"s\", \"output_interval\": \"s\", \"viscosity_alpha\": \"1\", "
    "\"dynamic_viscosity\": \"Pa s\", \"density_diffusion\": \"1\", \"restitution\": \"1\", \"tank_min\": \"m\", "
    "\"tank_max\": \"m\", "
    "\"dimensions\": \"1\"}";

hid_t output_field_ftype(int kind)
{
    return kind == FK_U32 ? H5T_STD_U32LE : kind == FK_U8 ? H5T_STD_U8LE : H5T_IEEE_F32LE;
}

void *output_field_array(const particles *p, unsigned bit)
{
    switch (bit) {
    case FIELD_DENSITY: return p->rho;
    case FIELD_PRESSURE: return p->pressure;
    case FIELD_ID: return p->id;
    case FIELD_TYPE: return p->type;
    case FIELD_RADIUS: return p->radius;
    case FIELD_MASS: return p->mass;
    case FIELD_ANGULAR_VELOCITY: return p->omega;
    default: return NULL;
    }
}

hid_t output_field_mtype(int kind)
{
    return kind == FK_U32 ? H5T_NATIVE_UINT32 : kind == FK_U8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT;
}

/* ---------------------------------------------------------------- names */

/* JSON names of the scene enums (as in src/scene.h; kept here so that output does not depend on
 * the scene parser). */
static const char *kernel_name(scene_kernel k)
{
    return k == KERNEL_POLY6 ? "poly6" : k == KERNEL_CUBIC ? "cubic_spline" : "wendland";
}
static const char *eos_name(scene_eos k) { return k == EOS_LINEAR ? "linear" : "tait"; }
static const char *visc_name(scene_visc v) { return v == VISC_LAPLACIAN ? "laplacian" : "artificial"; }
static const char *density_name(scene_density d) { return d == DENSITY_CONTINUITY ? "continuity" : "summation"; }

static void poison(output *o);

/* ---------------------------------------------------------------- layout creation */

static hsize_t clamp_rows(long long n, long long lo, long long hi) { return (hsize_t)(n < lo ? lo : n > hi ? hi : n); }

static int create_layout(output *o, const scene *s, const output_run_info *ri)
{
    hid_t f = o->file;
    hsize_t prow = clamp_rows(s->n_total, OUT_MIN_PARTICLE_CHUNK, 65536); /* chunk rows of per-particle datasets */
    int rc = -1;
    hid_t g = -1;

    /* ---- VTKHDF ---- */
    if ((g = H5Gcreate2(f, "/VTKHDF", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    int64_t version[2] = { 2, 0 };
    if (h5io_attr_write(g, "Version", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, 2, version) < 0) goto done;
    if (h5io_attr_fixed_str(g, "Type", "PolyData") < 0) goto done;
    H5Gclose(g);
    g = -1;
    if (h5io_ds_create(f, "/VTKHDF/Points", H5T_IEEE_F32LE, 2, 3, prow) < 0) goto done;
    for (int t = 0; t < OUT_TOPOS; ++t) {
        char p[128];
        snprintf(p, sizeof p, "/VTKHDF/%s", TOPOS[t]);
        if ((g = H5Gcreate2(f, p, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
        H5Gclose(g);
        g = -1;
        hsize_t crow = t == 0 ? clamp_rows(s->n_total + 1, 1024, 65536) : 16;
        snprintf(p, sizeof p, "/VTKHDF/%s/Offsets", TOPOS[t]);
        if (h5io_ds_create(f, p, H5T_STD_I64LE, 1, 1, crow) < 0) goto done;
        int64_t zero = 0; /* no cells (yet): offsets [0] */
        if (h5io_ds_write_rows(f, p, H5T_NATIVE_INT64, &zero, 0, 1) < 0) goto done;
        snprintf(p, sizeof p, "/VTKHDF/%s/Connectivity", TOPOS[t]);
        if (h5io_ds_create(f, p, H5T_STD_I64LE, 1, 1, crow) < 0) goto done;
    }
    /* Until the first snapshot the part is empty (0 points, 0 cells: a valid, empty PolyData
     * for VTK); the first snapshot writes the vertex cells and the counts for its N. */
    for (int i = 0; i < N_PART_I64; ++i) {
        int64_t zero = 0;
        if (h5io_ds_create(f, PART_I64[i], H5T_STD_I64LE, 1, 1, 16) < 0 ||
            h5io_ds_write_rows(f, PART_I64[i], H5T_NATIVE_INT64, &zero, 0, 1) < 0)
            goto done;
    }
    if ((g = H5Gcreate2(f, "/VTKHDF/PointData", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    H5Gclose(g);
    g = -1;
    if ((g = H5Gcreate2(f, "/VTKHDF/Steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    if (h5io_attr_i64(g, "NSteps", 0) < 0) goto done;
    H5Gclose(g);
    g = -1;
    if ((g = H5Gcreate2(f, "/VTKHDF/Steps/PointDataOffsets", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    H5Gclose(g);
    g = -1;
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        const field_desc *fd = &OUTPUT_FIELDS[i];
        if (!(o->fields & fd->bit)) continue;
        char p[128];
        snprintf(p, sizeof p, "/VTKHDF/PointData/%s", fd->name);
        if (h5io_ds_create(f, p, output_field_ftype(fd->kind), fd->ncomp == 1 ? 1 : 2, (hsize_t)fd->ncomp, prow) < 0)
            goto done;
        snprintf(p, sizeof p, "/VTKHDF/Steps/PointDataOffsets/%s", fd->name);
        if (h5io_ds_create(f, p, H5T_STD_I64LE, 1, 1, OUT_STEP_CHUNK) < 0) goto done;
    }

    /* ---- sphsim ---- */
    if ((g = H5Gcreate2(f, "/sphsim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    {
        hid_t sg = H5Gcreate2(f, "/sphsim/steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (sg < 0) goto done;
        H5Gclose(sg);
        sg = H5Gcreate2(f, "/sphsim/restart", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (sg < 0) goto done;
        H5Gclose(sg);
    }
    for (int i = 0; i < OUTPUT_N_STEP_I64; ++i)
        if (h5io_ds_create(f, OUTPUT_STEP_I64[i], H5T_STD_I64LE, 1, 1, OUT_STEP_CHUNK) < 0) goto done;
    for (int i = 0; i < 2; ++i)
        if (h5io_ds_create(f, STEP_F64[i], H5T_IEEE_F64LE, 1, 1, OUT_STEP_CHUNK) < 0) goto done;
    for (int i = 0; i < 2; ++i)
        if (h5io_ds_create(f, STEP_I64x4[i], H5T_STD_I64LE, 2, OUT_TOPOS, OUT_STEP_CHUNK) < 0) goto done;

    int sph = s->mode == MODE_SPH;
    char fields[256] = "position";
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i)
        if (o->fields & OUTPUT_FIELDS[i].bit) {
            strcat(fields, ",");
            strcat(fields, OUTPUT_FIELDS[i].name);
        }
    int64_t counts[3] = { s->n_fluid, s->n_boundary, s->n_spheres };
    if (h5io_attr_i64(g, "layout_version", OUT_LAYOUT_VERSION) < 0 ||
        h5io_attr_str(g, "scene_json", s->source_json) < 0 || h5io_attr_str(g, "resolved_json", s->resolved_json) < 0 ||
        h5io_attr_str(g, "version", ri && ri->version ? ri->version : "") < 0 ||
        h5io_attr_str(g, "device", ri && ri->device_name ? ri->device_name : "") < 0 ||
        h5io_attr_str(g, "start_time", ri && ri->start_time ? ri->start_time : "") < 0 ||
        h5io_attr_str(g, "scene_path", s->path) < 0 || h5io_attr_str(g, "name", s->name) < 0 ||
        h5io_attr_str(g, "mode", sph ? "sph" : "particles") < 0 || h5io_attr_str(g, "fields", fields) < 0 ||
        h5io_attr_i64(g, "dimensions", s->dims) < 0 || h5io_attr_f64v(g, "gravity", s->gravity, 3) < 0 ||
        h5io_attr_f64v(g, "tank_min", s->tank.min, 3) < 0 || h5io_attr_f64v(g, "tank_max", s->tank.max, 3) < 0 ||
        h5io_attr_f64(g, "smoothing_length", sph ? s->h : 0) < 0 ||
        h5io_attr_f64(g, "support_radius", s->support) < 0 ||
        h5io_attr_f64(g, "particle_mass", sph ? s->particle_mass : 0) < 0 ||
        h5io_attr_f64(g, "lattice_particle_mass", sph ? s->particle_mass : 0) < 0 ||
        h5io_attr_f64(g, "spacing", sph ? s->spacing : 0) < 0 ||
        h5io_attr_str(g, "kernel", sph ? kernel_name(s->kernel) : "n/a") < 0 ||
        h5io_attr_f64(g, "rest_density", sph ? s->rest_density : 0) < 0 ||
        h5io_attr_str(g, "eos", sph ? eos_name(s->eos) : "n/a") < 0 ||
        h5io_attr_f64(g, "sound_speed", sph ? s->sound_speed : 0) < 0 ||
        h5io_attr_f64(g, "gamma", sph ? s->gamma : 0) < 0 ||
        h5io_attr_f64(g, "stiffness", sph ? s->stiffness : 0) < 0 ||
        h5io_attr_str(g, "viscosity", sph ? visc_name(s->visc) : "n/a") < 0 ||
        h5io_attr_f64(g, "viscosity_alpha", sph ? s->alpha : 0) < 0 ||
        h5io_attr_f64(g, "dynamic_viscosity", sph ? s->mu : 0) < 0 ||
        h5io_attr_str(g, "density", sph ? density_name(s->density) : "n/a") < 0 ||
        h5io_attr_f64(g, "density_diffusion", sph ? s->diffusion : 0) < 0 ||
        h5io_attr_f64(g, "restitution", sph ? 0 : s->restitution) < 0 || h5io_attr_f64(g, "dt", s->dt) < 0 ||
        h5io_attr_f64(g, "t_end", s->t_end) < 0 || h5io_attr_f64(g, "output_interval", s->out_interval) < 0 ||
        h5io_attr_write(g, "particle_counts", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, 3, counts) < 0 ||
        h5io_attr_str(g, "particle_counts_order", "fluid, boundary, spheres (ids in that order)") < 0 ||
        h5io_attr_str(g, "units", UNITS_JSON) < 0 || h5io_attr_str(g, "resumes", "") < 0 ||
        output_write_geometry(f, s) < 0)
        goto done;
    rc = 0;
done:
    if (g >= 0) H5Gclose(g);
    return rc;
}

static hid_t output_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return -1;
    /* 1.8 file format: large attributes (scene JSON > 64 KiB) go to dense storage, and the
     * superblock carries no "open for writing" flag, so a file left by a killed writer opens
     * without h5clear (the 1.10 format's superblock v3 would refuse). */
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    return fapl;
}

static output *output_alloc(const char *path)
{
    output *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->file = -1;
    o->block_rows = OUT_BLOCK_ROWS;
    snprintf(o->path, sizeof o->path, "%s", path);
    output_xmf_path(path, o->xmf_path, sizeof o->xmf_path);
    return o;
}

static void output_free(output *o)
{
    if (!o) return;
    free(o->times);
    free(o->buf);
    free(o->gauge_rows);
    free(o);
}

sphsim_status output_open(output **out, const char *path, int overwrite, const scene *s, const output_run_info *ri,
                          sphsim_error *e)
{
    *out = NULL;
    h5io_quiet();
    if (!path || !*path) return SPHSIM_FAIL(e, SPHSIM_E_IO, "no output file name given");
    if (strlen(path) >= 4000) return SPHSIM_FAIL(e, SPHSIM_E_IO, "output file name too long: %.64s...", path);
    output *o = output_alloc(path);
    if (!o) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory opening '%s'", path);
    struct stat st;
    if (!overwrite) {
        if (lstat(o->path, &st) == 0) {
            output_free(o);
            return SPHSIM_FAIL(e, SPHSIM_E_IO, "output file '%s' already exists; pass --overwrite to replace it", path);
        }
        if (lstat(o->xmf_path, &st) == 0) {
            sphsim_status r = SPHSIM_FAIL(
                e, SPHSIM_E_IO, "sidecar file '%s' already exists; pass --overwrite to replace it", o->xmf_path);
            output_free(o);
            return r;
        }
    }
    o->fields = output_fields(s);
    o->sph = s->mode == MODE_SPH;
    o->scene = s;
    /* The layout is built under a temporary name and moved into place once it is on disk, so
     * `path` never names a half-made file (a kill during creation leaves only the temporary
     * one), and --overwrite replaces the old file only when the new one is ready. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.creating", path);
    hid_t fapl = output_fapl();
    o->file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (o->file < 0) {
        char why[512];
        h5io_reason(why, sizeof why);
        sphsim_status r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot create output file '%s': %s", path, why);
        output_free(o);
        return r;
    }
    sphsim_status r = SPHSIM_OK;
    /* room for the empty layout first (as for every write: see output_write) */
    int err = diskspace_reserve(o->file, 131072.0);
    if (err == 0 && create_layout(o, s, ri) == 0 && output_gauges_create(o, s) == 0 &&
        (err = diskspace_reserve(o->file, 0)) == 0 && h5io_sync(o->file) == 0) {
        /* on disk */
    } else {
        char why[512];
        if (err) snprintf(why, sizeof why, "%s", strerror(err));
        else h5io_reason(why, sizeof why);
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot write the layout of output file '%s': %s", path, why);
    }
    if (r == SPHSIM_OK) diskspace_release(o->file);
    if (r == SPHSIM_OK) {
        int rc;
        if (overwrite) {
            rc = rename(tmp, path);
        } else {
            /* link() does not replace an existing file (one made since the check above) */
            rc = link(tmp, path);
            if (rc != 0 && errno != EEXIST) rc = lstat(path, &st) == 0 ? (errno = EEXIST, -1) : rename(tmp, path);
            else if (rc == 0) unlink(tmp);
        }
        if (rc != 0)
            r = errno == EEXIST
                    ? SPHSIM_FAIL(e, SPHSIM_E_IO, "output file '%s' already exists; pass --overwrite to replace it",
                                  path)
                    : SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot create output file '%s': %s", path, strerror(errno));
        else h5io_fsync_dir(path);
    }
    int placed = r == SPHSIM_OK;
    if (r == SPHSIM_OK) r = xdmf_write(o, e);
    if (r != SPHSIM_OK) {
        poison(o); /* the file is removed: nothing more needs to reach it (and a full disk
                      would make H5Fclose fail, which HDF5 1.10 follows with a crash at exit) */
        H5Fclose(o->file);
        h5io_forget();
        unlink(placed ? path : tmp);
        output_free(o);
        return r;
    }
    *out = o;
    return SPHSIM_OK;
}

/* ---------------------------------------------------------------- writing */

static int ensure_buf(output *o, size_t bytes)
{
    if (o->buf_size >= bytes) return 0;
    void *b = realloc(o->buf, bytes);
    if (!b) return -1;
    o->buf = b;
    o->buf_size = bytes;
    return 0;
}

/* Packs rows first .. first+count-1 of src into dst. */
typedef void (*row_pack)(const void *src, size_t first, size_t count, void *dst);

static void pack_xyz(const void *src, size_t first, size_t count, void *dst)
{
    const float *v = (const float *)src + 4 * first; /* 4 floats a row */
    float *xyz = dst;
    for (size_t i = 0; i < count; ++i)
        for (int c = 0; c < 3; ++c) xyz[3 * i + c] = v[4 * i + c];
}

static void pack_index(const void *src, size_t first, size_t count, void *dst)
{
    (void)src;
    int64_t *v = dst;
    for (size_t i = 0; i < count; ++i) v[i] = (int64_t)(first + i);
}

/* Rows row .. row+n-1 of dataset `path` from n rows of src, packed into o->buf a block at a time
 * (so that the buffer stays small: packing all rows at once took 13 GB at 10^9 particles).
 * Blocks end on multiples of o->block_rows counted from the dataset's first row: with 65536
 * particles or more the chunks have 65536 rows (create_layout), which divides OUT_BLOCK_ROWS,
 * so no chunk is written in two parts by two blocks; fewer particles fit one block anyway, but
 * for the one snapshot that straddles a multiple of it. */
static int write_rows_packed(output *o, const char *path, hid_t mtype, size_t row_bytes, hsize_t row, size_t n,
                             row_pack pack, const void *src)
{
    const size_t B = o->block_rows;
    if (ensure_buf(o, row_bytes * (n < B ? (n ? n : 1) : B)) < 0) return -1;
    if (n == 0) return h5io_ds_write_rows(o->file, path, mtype, o->buf, row, 0);
    for (size_t k = 0; k < n;) {
        size_t m = B - (size_t)((row + k) % B);
        if (m > n - k) m = n - k;
        pack(src, k, m, o->buf);
        if (h5io_ds_write_rows(o->file, path, mtype, o->buf, row + k, m) < 0) return -1;
        k += m;
    }
    return 0;
}

void output_set_block_rows(output *o, size_t rows)
{
    if (o && rows > 0) o->block_rows = rows;
}

/* Set the rows of dataset `path` to `rows`, first growing it by `margin` past its current
 * rows and then shrinking it: the shrink makes HDF5 drop every chunk past `rows`. A kill in
 * the middle of a flush can leave the chunk index naming a chunk the file never got (past
 * its end of allocated space) while the extent stayed at the committed rows; without the
 * drop, the next write into that chunk would fail ("addr overflow"). */
static int ds_cut(hid_t f, const char *path, hsize_t rows, hsize_t margin)
{
    long long cur = h5io_ds_rows(f, path);
    if (cur < 0) return -1;
    hsize_t high = ((hsize_t)cur > rows ? (hsize_t)cur : rows) + margin;
    if (h5io_ds_write_rows(f, path, H5T_NATIVE_INT64, NULL, high, 0) < 0) return -1;
    return h5io_ds_write_rows(f, path, H5T_NATIVE_INT64, NULL, rows, 0);
}

/* Cut every growing dataset to the rows of `k` committed snapshots (n_hint: particles per
 * snapshot when the file does not say yet). */
static int truncate_to(output *o, hsize_t k, size_t n_hint)
{
    hid_t f = o->file;
    int rc = 0;
    hsize_t prow = k * o->n;
    hsize_t pmargin = (hsize_t)(o->n > n_hint ? o->n : n_hint) + 2 * 65536, smargin = 2 * OUT_STEP_CHUNK;
    rc |= ds_cut(f, "/VTKHDF/Points", prow, pmargin);
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        if (!(o->fields & OUTPUT_FIELDS[i].bit)) continue;
        char p[128];
        snprintf(p, sizeof p, "/VTKHDF/PointData/%s", OUTPUT_FIELDS[i].name);
        rc |= ds_cut(f, p, prow, pmargin);
        snprintf(p, sizeof p, "/VTKHDF/Steps/PointDataOffsets/%s", OUTPUT_FIELDS[i].name);
        rc |= ds_cut(f, p, k, smargin);
    }
    for (int i = 0; i < OUTPUT_N_STEP_I64; ++i) rc |= ds_cut(f, OUTPUT_STEP_I64[i], k, smargin);
    for (int i = 0; i < 2; ++i) rc |= ds_cut(f, STEP_F64[i], k, smargin);
    for (int i = 0; i < 2; ++i) rc |= ds_cut(f, STEP_I64x4[i], k, smargin);
    if (k == 0) { /* the first snapshot's vertex cells may be half made too */
        rc |= ds_cut(f, "/VTKHDF/Vertices/Offsets", 1, pmargin);
        rc |= ds_cut(f, "/VTKHDF/Vertices/Connectivity", 0, pmargin);
    }
    return rc ? -1 : 0;
}

/* Vertex cells (one per point, written once and shared by every step) and the restart
 * order dataset, for n points. */
static int write_topology(output *o)
{
    hid_t f = o->file;
    size_t n = o->n;
    if (write_rows_packed(o, "/VTKHDF/Vertices/Offsets", H5T_NATIVE_INT64, 8, 0, n + 1, pack_index, NULL) < 0 ||
        write_rows_packed(o, "/VTKHDF/Vertices/Connectivity", H5T_NATIVE_INT64, 8, 0, n, pack_index, NULL) < 0)
        return -1;
    /* the part's counts (n points, n vertex cells) come with the first commit: write_part_counts */
    if (h5io_link_exists(f, "/sphsim/restart/device_order") &&
        H5Ldelete(f, "/sphsim/restart/device_order", H5P_DEFAULT) < 0)
        return -1;
    if (n > 0) {
        /* Two rows: snapshot k writes row k % 2, so the committed one survives a crash. */
        hsize_t dims[2] = { 2, n };
        hid_t sp = H5Screate_simple(2, dims, NULL);
        if (sp < 0) return -1;
        hid_t ds =
            H5Dcreate2(f, "/sphsim/restart/device_order", H5T_STD_U32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Sclose(sp);
        if (ds < 0) return -1;
        H5Dclose(ds);
    }
    return 0;
}

/* The part's counts: n points and n vertex cells of one id each (the other cell counts stay 0
 * from the layout). Written with the first snapshot's commit, not with its data: until they are
 * set VTK shows the file as empty, so a run killed while writing its first snapshot leaves an
 * empty PolyData, not points VTK would read from uncommitted rows. */
static int write_part_counts(output *o)
{
    int64_t nn = (int64_t)o->n;
    for (int i = 0; i < 3; ++i) /* NumberOfPoints, Vertices/NumberOfCells, Vertices/NumberOfConnectivityIds */
        if (h5io_ds_write_rows(o->file, PART_I64[i], H5T_NATIVE_INT64, &nn, 0, 1) < 0) return -1;
    return 0;
}

/* The masses the solver uses (rho0 / lattice kernel sum, set before the run) replace the
 * nominal rho0 dx^dims in `particle_mass`, so that density can be recomputed from the
 * attributes alone; the nominal value stays in `lattice_particle_mass`. */
static int write_used_masses(output *o, const particles *p)
{
    double m_fluid = -1, m_boundary = -1;
    for (size_t i = 0; i < p->n && (m_fluid < 0 || m_boundary < 0); ++i) {
        if (p->type[i] == PTYPE_FLUID && m_fluid < 0) m_fluid = p->mass[i];
        if (p->type[i] == PTYPE_BOUNDARY && m_boundary < 0) m_boundary = p->mass[i];
    }
    hid_t g = H5Gopen2(o->file, "/sphsim", H5P_DEFAULT);
    if (g < 0) return -1;
    int rc = 0;
    if (m_fluid >= 0) rc |= h5io_attr_f64(g, "particle_mass", m_fluid);
    if (m_boundary >= 0) rc |= h5io_attr_f64(g, "boundary_particle_mass", m_boundary);
    H5Gclose(g);
    return rc ? -1 : 0;
}

static int write_device_order(output *o, const uint32_t *order, hsize_t k)
{
    size_t n = o->n;
    if (n == 0) return 0;
    const uint32_t *src = order;
    if (!src) {
        if (ensure_buf(o, n * sizeof(uint32_t)) < 0) return -1;
        uint32_t *ident = o->buf;
        for (size_t i = 0; i < n; ++i) ident[i] = (uint32_t)i;
        src = ident;
    }
    hid_t ds = H5Dopen2(o->file, "/sphsim/restart/device_order", H5P_DEFAULT);
    if (ds < 0) return -1;
    hsize_t off[2] = { k % 2, 0 }, cnt[2] = { 1, n };
    hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(2, cnt, NULL);
    int rc = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
                     H5Dwrite(ds, H5T_NATIVE_UINT32, ms, fs, H5P_DEFAULT, src) >= 0
                 ? 0
                 : -1;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    H5Dclose(ds);
    return rc;
}

static long long state_width(hid_t f)
{
    const char *name, *name_bytes;
    output_state_names(f, &name, &name_bytes);
    return output_state_width_of(f, name, name_bytes);
}

/* The two solver-state datasets for rows of `width` bytes: contiguous, allocated and zeroed
 * now, so that every later snapshot rewrites them in place (no change to the file's metadata,
 * nothing new allocated: a kill cannot leave them pointing past the end of the file). */
static int create_state(hid_t f, size_t width)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int rc = -1;
    if (dcpl >= 0 && H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0 &&
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC) >= 0) {
        hsize_t dims[2] = { 2, width }, two = 2;
        hid_t sp = H5Screate_simple(2, dims, NULL), sp1 = H5Screate_simple(1, &two, NULL);
        hid_t ds = sp >= 0 ? H5Dcreate2(f, RESTART_STATE, H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
        hid_t ds1 = sp1 >= 0 && ds >= 0
                        ? H5Dcreate2(f, RESTART_STATE_BYTES, H5T_STD_I64LE, sp1, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                        : -1;
        if (ds >= 0 && ds1 >= 0) rc = 0;
        if (ds1 >= 0) H5Dclose(ds1);
        if (ds >= 0) H5Dclose(ds);
        if (sp1 >= 0) H5Sclose(sp1);
        if (sp >= 0) H5Sclose(sp);
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    return rc;
}

/* Snapshot k's solver state into row k % 2 (zero-padded to the row width), then its length
 * (0 for none: a snapshot without one must not leave snapshot k - 2's state looking valid). */
static int write_state(output *o, const void *blob, size_t bytes, hsize_t k)
{
    hid_t f = o->file;
    const char *name, *name_bytes;
    output_state_names(f, &name, &name_bytes);
    long long w = output_state_width_of(f, name, name_bytes);
    if (w < 0) return -1;
    if (!blob) bytes = 0;
    if (bytes == 0 && w == 0) return 0;
    if (w == 0) {
        if (create_state(f, bytes) < 0) return -1;
        w = (long long)bytes;
    }
    if (bytes > (size_t)w) return -1; /* refused with a message by output_write before */
    if (bytes > 0) {
        if (ensure_buf(o, (size_t)w) < 0) return -1;
        memcpy(o->buf, blob, bytes);
        memset((char *)o->buf + bytes, 0, (size_t)w - bytes);
        hsize_t off[2] = { k % 2, 0 }, cnt[2] = { 1, (hsize_t)w };
        if (h5io_ds_block(f, name, H5T_NATIVE_UINT8, 2, off, cnt, o->buf, 1) < 0) return -1;
    }
    int64_t len = (int64_t)bytes;
    hsize_t off1 = k % 2, cnt1 = 1;
    return h5io_ds_block(f, name_bytes, H5T_NATIVE_INT64, 1, &off1, &cnt1, &len, 1);
}

/* Steps 1 and 2 of the commit protocol for snapshot k. */
static int write_snapshot_rows(output *o, const particles *p, const output_snapshot_info *si, const void *state,
                               size_t state_bytes, hsize_t k)
{
    hid_t f = o->file;
    size_t n = o->n;
    hsize_t row = k * n;
    if (!o->have_topology) {
        if (write_topology(o) < 0) return -1;
        if (o->sph && write_used_masses(o, p) < 0) return -1;
        o->have_topology = 1;
    }
    /* ---- data ---- */
    if (write_rows_packed(o, "/VTKHDF/Points", H5T_NATIVE_FLOAT, 12, row, n, pack_xyz, p->pos) < 0) return -1;
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        const field_desc *fd = &OUTPUT_FIELDS[i];
        if (!(o->fields & fd->bit)) continue;
        if (fd->bit == FIELD_VELOCITY) {
            if (write_rows_packed(o, "/VTKHDF/PointData/velocity", H5T_NATIVE_FLOAT, 12, row, n, pack_xyz, p->vel) < 0)
                return -1;
            continue;
        }
        const void *src = output_field_array(p, fd->bit);
        if (!src) return -1;
        char path[128];
        snprintf(path, sizeof path, "/VTKHDF/PointData/%s", fd->name);
        if (h5io_ds_write_rows(f, path, output_field_mtype(fd->kind), src, row, n) < 0) return -1;
    }
    if (write_device_order(o, si->device_order, k) < 0) return -1;
    if (write_state(o, state, state_bytes, k) < 0) return -1;
    for (int q = 0; q < o->n_gauge_rows; ++q)
        if (output_gauges_write(o, o->scene, &o->gauge_rows[q]) < 0) return -1;
    o->n_gauge_rows = 0;

    /* ---- step entry ---- */
    double t = si->time;
    int64_t part = 0, one = 1, poff = (int64_t)row, zeros4[OUT_TOPOS] = { 0, 0, 0, 0 };
    int64_t step = si->step, ncont = si->n_contacts, nout = si->n_outside;
    if (h5io_ds_write_rows(f, "/VTKHDF/Steps/PartOffsets", H5T_NATIVE_INT64, &part, k, 1) < 0 ||
        h5io_ds_write_rows(f, "/VTKHDF/Steps/NumberOfParts", H5T_NATIVE_INT64, &one, k, 1) < 0 ||
        h5io_ds_write_rows(f, "/VTKHDF/Steps/PointOffsets", H5T_NATIVE_INT64, &poff, k, 1) < 0 ||
        /* every step reads the one vertex topology from its start */
        h5io_ds_write_rows(f, "/VTKHDF/Steps/CellOffsets", H5T_NATIVE_INT64, zeros4, k, 1) < 0 ||
        h5io_ds_write_rows(f, "/VTKHDF/Steps/ConnectivityIdOffsets", H5T_NATIVE_INT64, zeros4, k, 1) < 0)
        return -1;
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        if (!(o->fields & OUTPUT_FIELDS[i].bit)) continue;
        char path[128];
        snprintf(path, sizeof path, "/VTKHDF/Steps/PointDataOffsets/%s", OUTPUT_FIELDS[i].name);
        if (h5io_ds_write_rows(f, path, H5T_NATIVE_INT64, &poff, k, 1) < 0) return -1;
    }
    if (h5io_ds_write_rows(f, "/sphsim/steps/time", H5T_NATIVE_DOUBLE, &t, k, 1) < 0 ||
        h5io_ds_write_rows(f, "/sphsim/steps/step", H5T_NATIVE_INT64, &step, k, 1) < 0 ||
        h5io_ds_write_rows(f, "/sphsim/steps/n_contacts", H5T_NATIVE_INT64, &ncont, k, 1) < 0 ||
        h5io_ds_write_rows(f, "/sphsim/steps/n_outside", H5T_NATIVE_INT64, &nout, k, 1) < 0)
        return -1;
    return 0;
}

static int set_nsteps(hid_t file, hsize_t nsteps)
{
    /* Open the group, then the attribute: in HDF5 1.10.8 an H5Awrite through
     * H5Aopen_by_name(file, "/VTKHDF/Steps", ...) fails ("can't locate open attribute"). */
    hid_t g = H5Gopen2(file, "/VTKHDF/Steps", H5P_DEFAULT);
    if (g < 0) return -1;
    hid_t a = H5Aopen(g, "NSteps", H5P_DEFAULT);
    int64_t v = (int64_t)nsteps;
    int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Gclose(g);
    return rc;
}

/* After a failed write, stop HDF5 from writing anything more to the file: its descriptor is
 * replaced by an anonymous in-memory file, so what H5Fclose flushes goes there, not into a
 * file whose disk is full (a half-written flush, or a superblock whose end of file lies past
 * the real end, "truncated file", would make it unreadable). The file keeps what the last
 * successful commit flushed; rows written since lie past the committed extents. (The close
 * itself must succeed: HDF5 1.10 crashes at exit on a file whose close failed.) */
static void poison(output *o)
{
    int *fd = NULL;
    if (H5Fget_vfd_handle(o->file, H5P_DEFAULT, (void **)&fd) >= 0 && fd && *fd >= 0) {
        int sink = memfd_create("sphsim-discarded-output", MFD_CLOEXEC);
        if (sink < 0) sink = open("/dev/null", O_RDWR);
        if (sink >= 0) {
            dup2(sink, *fd);
            close(sink);
        }
    }
    o->broken = 1;
    h5io_forget();
}

sphsim_status output_write(output *o, const particles *p, const output_snapshot_info *si, sphsim_error *e)
{
    return output_write_state(o, p, si, NULL, 0, e);
}

sphsim_status output_write_state(output *o, const particles *p, const output_snapshot_info *si, const void *state,
                                 size_t state_bytes, sphsim_error *e)
{
    if (!state) state_bytes = 0;
    if (!o || o->file < 0) return SPHSIM_FAIL(e, SPHSIM_E_IO, "output_write: the output is not open");
    if (o->broken)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "'%s' is unusable after an earlier write error; its first %llu snapshot(s) are intact",
                           o->path, (unsigned long long)o->nsteps);
    h5io_quiet();
    hsize_t k = o->nsteps;
    if (o->have_topology && p->n != o->n)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu to '%s': it has %zu particles but the file holds %zu per "
                           "snapshot (the particle count must stay fixed)",
                           (unsigned long long)k, o->path, p->n, o->n);
    if (k + 1 > o->times_cap) {
        size_t cap = o->times_cap ? 2 * o->times_cap : 64;
        double *t = realloc(o->times, cap * sizeof *t);
        if (!t) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory writing '%s'", o->path);
        o->times = t;
        o->times_cap = cap;
    }
    /* Reserve the snapshot's disk space before writing any of it: a full disk (or quota, or
     * file size limit) is refused here, cleanly, with the file untouched. A write that fails
     * half-way through HDF5's metadata is the one case that could damage the file. */
    double need = diskspace_snapshot_bytes(o, p->n, k) + output_gauges_bytes(o);
    if (state_bytes > 0) {
        long long w = state_width(o->file);
        h5io_forget();
        if (w < 0 || (w > 0 && state_bytes > (size_t)w))
            return SPHSIM_FAIL(e, SPHSIM_E_IO,
                               "cannot write snapshot %llu to '%s': its solver state has %zu bytes but the file's "
                               "/sphsim/restart datasets hold %lld per snapshot",
                               (unsigned long long)k, o->path, state_bytes, w);
        if (w == 0) need += 2.0 * (double)state_bytes + 65536.0; /* created with this snapshot */
    }
    int err = diskspace_reserve(o->file, need);
    if (err) {
        diskspace_release(o->file);
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu (t = %g s) to '%s': %s (could not reserve %.3g MB for it); the "
                           "%llu snapshot(s) written before are intact",
                           (unsigned long long)k, si->time, o->path, strerror(err), need / 1e6, (unsigned long long)k);
    }
    const int first = !o->have_topology; /* the first snapshot of the file */
    if (first) o->n = p->n;
    int committed = 0;
    int rc = write_snapshot_rows(o, p, si, state, state_bytes, k);
    if (rc == 0 && output_fault_hook && output_fault_hook(k)) {
        h5io_set_reason("Input/output error (injected by a test)");
        rc = -1;
    }
    /* 1. data and step entry on disk (their space reserved) before the commit point */
    if (rc == 0 && (err = diskspace_reserve(o->file, 0)) != 0) rc = -1;
    if (rc == 0) rc = h5io_sync(o->file);
    /* first snapshot: the part's counts, flushed just before the commit point */
    if (rc == 0 && first && (write_part_counts(o) < 0 || H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0)) rc = -1;
    /* 2. the commit point (flushed; its fsync is the one after phase 3, which keeps a killed
     *    process from leaving NSteps ahead of Steps/Values for long) */
    if (rc == 0) rc = set_nsteps(o->file, k + 1);
    if (rc == 0 && H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) rc = -1;
    if (rc == 0) committed = 1;
    /* 3. the time for VTK's Steps/Values, which must not run ahead of NSteps */
    double t = si->time;
    if (rc == 0) rc = h5io_ds_write_rows(o->file, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, &t, k, 1);
    if (rc == 0 && (err = diskspace_reserve(o->file, 0)) != 0) rc = -1;
    if (rc == 0) rc = h5io_sync(o->file);
    if (committed) {
        o->times[k] = si->time;
        o->nsteps = k + 1;
    }
    if (rc < 0) {
        char why[512];
        if (err) snprintf(why, sizeof why, "%s", strerror(err));
        else h5io_reason(why, sizeof why);
        poison(o);
        if (committed)
            return SPHSIM_FAIL(e, SPHSIM_E_IO,
                               "cannot complete snapshot %llu (t = %g s) in '%s': %s; it is committed but its time is "
                               "missing from Steps/Values (--resume completes it); the %llu snapshot(s) are intact",
                               (unsigned long long)k, si->time, o->path, why, (unsigned long long)o->nsteps);
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu (t = %g s) to '%s': %s; the %llu snapshot(s) written before "
                           "are intact",
                           (unsigned long long)k, si->time, o->path, why, (unsigned long long)k);
    }
    diskspace_release(o->file);
    return xdmf_write(o, e);
}

sphsim_status output_close(output *o, sphsim_error *e)
{
    if (!o) return SPHSIM_OK;
    sphsim_status r = SPHSIM_OK;
    h5io_quiet();
    int err = o->broken ? 0 : diskspace_reserve(o->file, 0);
    if (!o->broken && (err != 0 || h5io_sync(o->file) < 0)) {
        /* Every commit was flushed already; a flush that fails now must not be retried by
         * H5Fclose (a failed close leaves HDF5 1.10 to crash at exit). */
        char why[512];
        if (err) snprintf(why, sizeof why, "%s", strerror(err));
        else h5io_reason(why, sizeof why);
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot close output file '%s': %s; its %llu snapshot(s) are intact", o->path,
                        why, (unsigned long long)o->nsteps);
        poison(o);
    }
    if (H5Fclose(o->file) < 0 && r == SPHSIM_OK) {
        char why[512];
        h5io_reason(why, sizeof why);
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot close output file '%s': %s", o->path, why);
    }
    h5io_forget();
    output_free(o);
    return r;
}

sphsim_status output_open_append(output **out, const char *path, const scene *s, const output_run_info *ri,
                                 sphsim_error *e)
{
    *out = NULL;
    h5io_quiet();
    output *o = output_alloc(path);
    if (!o) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory opening '%s'", path);
    hid_t fapl = output_fapl();
    o->file = H5Fopen(path, H5F_ACC_RDWR, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (o->file < 0) {
        char why[512];
        h5io_reason(why, sizeof why);
        sphsim_status r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot open '%s' to append: %s", path, why);
        output_free(o);
        return r;
    }
    hid_t f = o->file;
    sphsim_status r = SPHSIM_OK;
    hsize_t ns = 0;
    /* A run killed while writing a snapshot can leave chunks past the end of allocation stored
     * in the superblock (written, or listed by an index flushed before the superblock). Cutting
     * the uncommitted rows frees them, and HDF5 would then reuse that space at or past the end
     * of allocation ("addr overflow", 3 in 126 runs of the SIGKILL test). Move the end of
     * allocation to the end of the file first, so that every such chunk lies within it. */
    if (H5Fincrement_filesize(f, 0) < 0) {
        char why[512];
        h5io_reason(why, sizeof why);
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot open '%s' to append: %s", path, why);
        goto fail;
    }
    int err = diskspace_reserve(o->file, 65536.0); /* room for the repairs and the provenance line */
    if (err) {
        poison(o); /* leave the file as it is */
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot append to '%s': %s", path, strerror(err));
        goto fail;
    }
    if ((r = output_read_nsteps(f, path, &ns, e)) != SPHSIM_OK) goto fail;
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        char p[128];
        snprintf(p, sizeof p, "/VTKHDF/PointData/%s", OUTPUT_FIELDS[i].name);
        if (h5io_link_exists(f, p)) o->fields |= OUTPUT_FIELDS[i].bit;
        else if (OUTPUT_FIELDS[i].bit & ALWAYS_FIELDS) {
            r = output_bad_file(e, path, "a required field (velocity, id or type) is missing");
            goto fail;
        }
    }
    o->fields |= FIELD_POSITION;
    if (ns > 0) {
        int64_t n64 = 0;
        if (h5io_ds_read_rows(f, "/VTKHDF/NumberOfPoints", H5T_NATIVE_INT64, &n64, 0, 1) < 0 || n64 < 0) {
            r = output_bad_file(e, path, "cannot read NumberOfPoints");
            goto fail;
        }
        o->n = (size_t)n64;
        o->have_topology = 1;
        o->times_cap = ns + 64;
        o->times = malloc(o->times_cap * sizeof *o->times);
        if (!o->times) {
            r = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory opening '%s'", path);
            goto fail;
        }
        if (h5io_ds_read_rows(f, "/sphsim/steps/time", H5T_NATIVE_DOUBLE, o->times, 0, ns) < 0) {
            r = output_bad_file(e, path, "cannot read /sphsim/steps/time");
            goto fail;
        }
    }
    o->nsteps = ns;
    /* Drop rows of a snapshot that was never committed (a crash between data and NSteps), and
     * write Steps/Values in full again (a crash after the commit can leave it one short). */
    o->scene = s;
    int64_t last_step = -1; /* the last committed snapshot's step: the gauges keep their rows up to it */
    if (ns > 0 && h5io_ds_read_rows(f, "/sphsim/steps/step", H5T_NATIVE_INT64, &last_step, ns - 1, 1) < 0) {
        r = output_bad_file(e, path, "cannot read /sphsim/steps/step");
        goto fail;
    }
    if (s && s->n_gauges > 0 && output_gauges_cut(o, s, (long)last_step) < 0) {
        r = output_bad_file(e, path, "cannot cut the gauges' uncommitted rows (/sphsim/gauges)");
        goto fail;
    }
    if (truncate_to(o, ns, s && s->n_total > 0 ? (size_t)s->n_total : 0) < 0 || set_nsteps(f, ns) < 0 ||
        (ns > 0 && h5io_ds_write_rows(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, o->times, 0, ns) < 0)) {
        r = output_bad_file(e, path, "cannot cut uncommitted rows");
        goto fail;
    }
    {
        /* Provenance of this continuation. */
        char *prev = h5io_attr_read_str(f, "/sphsim", "resumes");
        char line[1024];
        snprintf(line, sizeof line, "%s%s resumed after snapshot %llu by sphsim %s on %s", prev && *prev ? "\n" : "",
                 ri && ri->start_time ? ri->start_time : "?", (unsigned long long)ns,
                 ri && ri->version ? ri->version : "?", ri && ri->device_name ? ri->device_name : "?");
        size_t len = (prev ? strlen(prev) : 0) + strlen(line) + 1;
        char *all = malloc(len);
        int bad = !all;
        if (all) {
            snprintf(all, len, "%s%s", prev ? prev : "", line);
            hid_t g = H5Gopen2(f, "/sphsim", H5P_DEFAULT);
            bad = g < 0 || h5io_attr_str(g, "resumes", all) < 0;
            if (g >= 0) H5Gclose(g);
        }
        free(all);
        free(prev);
        if (bad) {
            char why[512];
            h5io_reason(why, sizeof why);
            r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot write to '%s': %s", path, why);
            goto fail;
        }
    }
    if (h5io_sync(f) < 0) {
        char why[512];
        h5io_reason(why, sizeof why);
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot write to '%s': %s", path, why);
        goto fail;
    }
    diskspace_release(o->file);
    if ((r = xdmf_write(o, e)) != SPHSIM_OK) goto fail;
    *out = o;
    return SPHSIM_OK;
fail:
    diskspace_release(o->file);
    poison(o); /* leave the file as the last flush left it; H5Fclose must not fail */
    H5Fclose(o->file);
    h5io_forget();
    output_free(o);
    return r;
}
