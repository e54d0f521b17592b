/* output: the VTKHDF writer: creates an output file's layout (time-stepped VTKHDF PolyData, one
 * file per run), writes each snapshot's rows and commits it, closes the file, and reopens it
 * for --resume to append. Layout, units and the crash-safety rules are documented in
 * docs/output-format.md. The sidecar is xdmf.c's, reading back output_read.c's, disk-space
 * reservation diskspace.c's.
 *
 * The layout holds the whole run: every dataset is created at its final size (S snapshots of N
 * rows, S from the scene) with its space allocated at once and never filled, and the file's
 * disk space is reserved, before the file is renamed into place. Commit protocol per snapshot k:
 *   1. data: Points and PointData rows [kN, kN+N), the restart order and solver state (row
 *      k % 2), the /sphsim/steps records at row k; H5Fflush, fsync;
 *   2. (first snapshot only: the part's counts NumberOfPoints etc. = N; H5Fflush;)
 *      NSteps = k + 1, the attribute rewritten in place: the commit point; H5Fflush;
 *   3. Steps/Values extended to k + 1 within its one preallocated chunk (VTK reads all of
 *      Steps/Values into an array of NSteps, so Values must never be longer than NSteps),
 *      Values[k] = time; H5Fflush, fsync;
 *   4. the XDMF sidecar rewritten in full (temp file, fsync, rename).
 * No step allocates, frees or moves anything in the file: a snapshot changes raw data and two
 * small metadata blocks in place (docs/output-format.md, "Crash safety"). Readers take NSteps
 * as the truth; rows past it are ignored, and written over by --resume.
 *
 * On several MPI ranks (output_open_parallel, output_write_share) every rank runs this same code
 * on the file opened with MPI-IO: each writes the rows of the particles it owns in collective
 * transfers, rank 0's data fills the rest (the other ranks make the same calls with empty
 * selections: h5io_parallel), and each flush is followed by an MPI_File_sync on every rank
 * (docs/mpi.md, "Output and restart"). */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm.h"
#include "output_geometry.h"
#include "output_internal.h"

/* Test-only fault injection: the test binaries link tests/output_fault.c (the MPI tests'
 * binary tests/mpi_fault.c), which defines this hook; sphsim does not, and the weak reference
 * stays null. A non-zero return makes snapshot `k` fail: with before_rows 0 after its data rows
 * are written, as a failed write inside HDF5 would; with 1 before this process writes any, as a
 * failure of one MPI rank alone (a full buffer, a failed allocation) would. */
extern int output_fault_hook(unsigned long long k, int before_rows) __attribute__((weak));

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
    /* the scene object (index into /sphsim/geometry) of each object boundary particle, -1 for
     * every other particle; static (STATIC_FIELDS) */
    { "object", FIELD_OBJECT, 1, FK_I8 },
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
/* The per-step records a snapshot writes (the Steps entries are written with the layout). */
static const char *const OUTPUT_SPHSIM_STEP_I64[] = { "/sphsim/steps/step", "/sphsim/steps/n_contacts",
                                                      "/sphsim/steps/n_outside" };
#define OUTPUT_N_SPHSIM_STEP_I64 3
/* Per-step datasets of other shapes. */
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
    return kind == FK_U32  ? H5T_STD_U32LE
           : kind == FK_U8 ? H5T_STD_U8LE
           : kind == FK_I8 ? H5T_STD_I8LE
                           : H5T_IEEE_F32LE;
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
    return kind == FK_U32  ? H5T_NATIVE_UINT32
           : kind == FK_U8 ? H5T_NATIVE_UINT8
           : kind == FK_I8 ? H5T_NATIVE_INT8
                           : H5T_NATIVE_FLOAT;
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
static void poison_to(output *o, int null_sink);

/* ---------------------------------------------------------------- layout creation */

/* Snapshots a run of scene s writes: one every steps_per_output steps from step 0, and one at
 * the last step when it is not a multiple. */
long output_snapshots(const scene *s)
{
    long spo = s->steps_per_output > 0 ? s->steps_per_output : 1;
    long n = s->n_steps / spo + 1;
    if (s->n_steps % spo) ++n;
    return n;
}

/* Bytes of the raw data of the layout create_layout makes for scene s (HDF5's metadata comes on
 * top: about 30 KB, and the scene's JSON twice). */
double output_layout_bytes(const scene *s, size_t state_bytes)
{
    const double N = s->n_total > 0 ? (double)s->n_total : 0, S = (double)output_snapshots(s);
    const unsigned fields = output_fields(s);
    double per = 12; /* Points */
    int nf = 0;
    double once = 0; /* static fields */
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i)
        if (fields & OUTPUT_FIELDS[i].bit) {
            const int b =
                OUTPUT_FIELDS[i].ncomp * (OUTPUT_FIELDS[i].kind == FK_U8 || OUTPUT_FIELDS[i].kind == FK_I8 ? 1 : 4);
            if (OUTPUT_FIELDS[i].bit & STATIC_FIELDS) once += b;
            else per += b;
            ++nf;
        }
    return per * N * S + once * N                               /* Points, PointData */
           + 8 * (2 * N + 1) + 8 * (N_PART_I64 + 3)             /* vertex cells; the part's counts, other offsets */
           + 8 * S * (nf + 3 + 2 * OUT_TOPOS + 1 + 4)           /* Steps entries, Values, /sphsim/steps */
           + 8 * N                                              /* restart device order, 2 rows */
           + 2.0 * (double)state_bytes + (state_bytes ? 16 : 0) /* the solver state */
           + output_gauges_layout_bytes(s);
}

/* The layout's metadata besides the scene's JSON: groups, object headers, attributes. */
#define OUT_METADATA_BYTES 32768.0

double output_file_bytes(const scene *s, size_t state_bytes)
{
    return output_layout_bytes(s, state_bytes) + OUT_METADATA_BYTES + output_geometry_bytes(s) +
           (double)(s->source_json ? strlen(s->source_json) : 0) +
           (double)(s->resolved_json ? strlen(s->resolved_json) : 0);
}

static int create_state(hid_t f, size_t width);

/* Rows [0, rows) of the int64 dataset `path` set to a + b * row, written a block at a time. */
static int write_i64_ramp(output *o, const char *path, hsize_t rows, int cols, int64_t a, int64_t b);

static int create_layout(output *o, const scene *s, const output_run_info *ri)
{
    hid_t f = o->file;
    const hsize_t N = o->n, S = o->capacity;
    int rc = -1;
    hid_t g = -1;

    /* ---- VTKHDF ---- */
    if ((g = H5Gcreate2(f, "/VTKHDF", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    int64_t version[2] = { 2, 0 };
    if (h5io_attr_write(g, "Version", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, 2, version) < 0) goto done;
    if (h5io_attr_fixed_str(g, "Type", "PolyData") < 0) goto done;
    H5Gclose(g);
    g = -1;
    /* every per-particle dataset holds the whole run: S snapshots of N rows */
    if (h5io_ds_create_fixed(f, "/VTKHDF/Points", H5T_IEEE_F32LE, 2, S * N, 3, 0) < 0) goto done;
    for (int t = 0; t < OUT_TOPOS; ++t) {
        char p[128], c[128];
        snprintf(p, sizeof p, "/VTKHDF/%s", TOPOS[t]);
        if ((g = H5Gcreate2(f, p, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
        H5Gclose(g);
        g = -1;
        snprintf(p, sizeof p, "/VTKHDF/%s/Offsets", TOPOS[t]);
        snprintf(c, sizeof c, "/VTKHDF/%s/Connectivity", TOPOS[t]);
        if (t == 0) { /* the vertex cells: one per point, shared by every step */
            if (h5io_ds_create_fixed(f, p, H5T_STD_I64LE, 1, N + 1, 1, 0) < 0 ||
                h5io_ds_create_fixed(f, c, H5T_STD_I64LE, 1, N > 0 ? N : 1, 1, 0) < 0 ||
                write_i64_ramp(o, p, N + 1, 1, 0, 1) < 0 || (N > 0 && write_i64_ramp(o, c, N, 1, 0, 1) < 0))
                goto done;
        } else { /* no cells: offsets [0], no connectivity */
            int64_t zero = 0;
            if (h5io_ds_create_fixed(f, p, H5T_STD_I64LE, 1, 1, 1, 0) < 0 ||
                h5io_ds_write_rows(f, p, H5T_NATIVE_INT64, &zero, 0, 1) < 0 ||
                h5io_ds_create(f, c, H5T_STD_I64LE, 1, 1, 16) < 0)
                goto done;
        }
    }
    /* Until the first snapshot the part is empty (0 points, 0 cells: a valid, empty PolyData
     * for VTK); the first snapshot sets the counts to N just before its commit. */
    for (int i = 0; i < N_PART_I64; ++i) {
        int64_t zero = 0;
        if (h5io_ds_create_fixed(f, PART_I64[i], H5T_STD_I64LE, 1, 1, 1, 0) < 0 ||
            h5io_ds_write_rows(f, PART_I64[i], H5T_NATIVE_INT64, &zero, 0, 1) < 0)
            goto done;
    }
    if ((g = H5Gcreate2(f, "/VTKHDF/PointData", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    H5Gclose(g);
    g = -1;
    if ((g = H5Gcreate2(f, "/VTKHDF/Steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    if (h5io_attr_i64(g, "NSteps", 0) < 0) goto done; /* the commit counter, rewritten in place */
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
        /* a static field: N rows, written with the layout (the object field by output_write_geometry,
         * below), which every step reads at 0 */
        const int once = (fd->bit & STATIC_FIELDS) != 0;
        if (h5io_ds_create_fixed(f, p, output_field_ftype(fd->kind), fd->ncomp == 1 ? 1 : 2, once ? N : S * N,
                                 (hsize_t)fd->ncomp, 0) < 0)
            goto done;
        snprintf(p, sizeof p, "/VTKHDF/Steps/PointDataOffsets/%s", fd->name);
        if (h5io_ds_create_fixed(f, p, H5T_STD_I64LE, 1, S, 1, 0) < 0 ||
            write_i64_ramp(o, p, S, 1, 0, once ? 0 : (int64_t)N) < 0)
            goto done;
    }
    /* The step entries are known in advance (one part at offset 0, snapshot k's points at k N, the
     * shared vertex cells at 0) and written now; a snapshot writes only its time and records. */
    if (h5io_ds_create_fixed(f, "/VTKHDF/Steps/PartOffsets", H5T_STD_I64LE, 1, S, 1, 0) < 0 ||
        write_i64_ramp(o, "/VTKHDF/Steps/PartOffsets", S, 1, 0, 0) < 0 ||
        h5io_ds_create_fixed(f, "/VTKHDF/Steps/NumberOfParts", H5T_STD_I64LE, 1, S, 1, 0) < 0 ||
        write_i64_ramp(o, "/VTKHDF/Steps/NumberOfParts", S, 1, 1, 0) < 0 ||
        h5io_ds_create_fixed(f, "/VTKHDF/Steps/PointOffsets", H5T_STD_I64LE, 1, S, 1, 0) < 0 ||
        write_i64_ramp(o, "/VTKHDF/Steps/PointOffsets", S, 1, 0, (int64_t)N) < 0)
        goto done;
    for (int i = 0; i < 2; ++i)
        if (h5io_ds_create_fixed(f, STEP_I64x4[i], H5T_STD_I64LE, 2, S, OUT_TOPOS, 0) < 0 ||
            write_i64_ramp(o, STEP_I64x4[i], S, OUT_TOPOS, 0, 0) < 0)
            goto done;
    /* Steps/Values: VTK reads all of it into an array of NSteps entries, so it is never longer
     * than max(NSteps, 1): one chunk of S rows allocated now, extended after each commit. */
    {
        double t0 = 0;
        if (h5io_ds_create_fixed(f, "/VTKHDF/Steps/Values", H5T_IEEE_F64LE, 1, 1, 1, S > 1 ? S : 2) < 0 ||
            h5io_ds_write_rows(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, &t0, 0, 1) < 0)
            goto done;
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
    for (int i = 0; i < OUTPUT_N_SPHSIM_STEP_I64; ++i)
        if (h5io_ds_create_fixed(f, OUTPUT_SPHSIM_STEP_I64[i], H5T_STD_I64LE, 1, S, 1, 0) < 0) goto done;
    if (h5io_ds_create_fixed(f, "/sphsim/steps/time", H5T_IEEE_F64LE, 1, S, 1, 0) < 0) goto done;
    /* the restart rows: device order and the solver state (of the size the solver declared) */
    if (N > 0 && h5io_ds_create_fixed(f, "/sphsim/restart/device_order", H5T_STD_U32LE, 2, 2, N, 0) < 0) goto done;
    if (ri && ri->state_bytes > 0 && create_state(f, ri->state_bytes) < 0) goto done;

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
        h5io_attr_str(g, "units", UNITS_JSON) < 0 || h5io_attr_i64(g, "snapshots_allocated", (long long)S) < 0 ||
        h5io_attr_fixed_str_len(g, "resumes", "", OUT_RESUMES_BYTES) < 0 ||
        (sph && h5io_attr_f64(g, "boundary_particle_mass", 0) < 0) || output_write_geometry(f, s) < 0)
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

/* Creates `tmp`, the temporary name of an output file being made, for this process alone. A
 * file of that name that another process holds open (a run creating the same output now) is
 * left as it is: -1 with *busy set. One that nobody holds (left by a killed run) is replaced.
 * The new file stays locked (flock) while it is open, whatever HDF5's own file locking. */
static hid_t create_private(const char *tmp, int *busy)
{
    *busy = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
        hid_t fapl = output_fapl();
        hid_t f = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
        if (fapl >= 0) H5Pclose(fapl);
        if (f >= 0) {
            int *fd = NULL;
            if (H5Fget_vfd_handle(f, H5P_DEFAULT, (void **)&fd) >= 0 && fd && *fd >= 0)
                (void)flock(*fd, LOCK_EX | LOCK_NB);
            return f;
        }
        int fd = open(tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -1; /* not there: the create failed for another reason */
        const int held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        close(fd);
        if (held) {
            *busy = 1;
            return -1;
        }
        if (unlink(tmp) != 0) return -1;
        h5io_forget();
    }
    return -1;
}

static output *output_alloc(const char *path)
{
    output *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->file = -1;
    o->block_rows = OUT_BLOCK_ROWS;
    o->root = 1;
    o->io_collective = -1;
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
    free(o->runs);
    free(o->share_runs);
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
    o->n = s->n_total > 0 ? (size_t)s->n_total : 0;
    o->capacity = (hsize_t)output_snapshots(s);
    /* The layout is built under a temporary name and moved into place once it is on disk, so
     * `path` never names a half-made file (a kill during creation leaves only the temporary
     * one), and --overwrite replaces the old file only when the new one is ready. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.creating", path);
    int busy;
    o->file = create_private(tmp, &busy);
    if (o->file < 0) {
        char why[512];
        if (busy) snprintf(why, sizeof why, "another process is creating it now (its temporary file is in use)");
        else h5io_reason(why, sizeof why);
        sphsim_status r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot create output file '%s': %s", path, why);
        output_free(o);
        return r;
    }
    sphsim_status r = SPHSIM_OK;
    /* Room for the metadata first; then the layout allocates the whole run's space, and all of
     * it is reserved on disk before the file is placed: a disk too small for the run fails
     * here, before the first step. */
    const double need = output_file_bytes(s, ri ? ri->state_bytes : 0) + 65536.0;
    int err = diskspace_reserve(o->file, need);
    if (err) {
        /* refused before anything was written: the close has next to nothing to flush */
        char why[512];
        snprintf(why, sizeof why, "%s", strerror(err));
        poison_to(o, 0);
        H5Fclose(o->file);
        h5io_forget();
        unlink(tmp);
        output_free(o);
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot create output file '%s': %s (could not reserve %.3g MB for the %lld snapshots of "
                           "the run)",
                           path, why, need / 1e6, (long long)output_snapshots(s));
    }
    hsize_t eoa = 0;
    if (err == 0 && create_layout(o, s, ri) == 0 && output_gauges_create(o, s) == 0 &&
        (err = diskspace_reserve(o->file, 0)) == 0 &&
        h5io_sync(o->file) == 0 && /* the second flush gives back the unused end of HDF5's metadata
                                      block, which the first snapshot's flush would otherwise do
                                      (moving the end of the file) */
        h5io_sync(o->file) == 0) {
        /* on disk */
    } else {
        char why[512];
        if (err) snprintf(why, sizeof why, "%s", strerror(err));
        else h5io_reason(why, sizeof why);
        H5Fget_filesize(o->file, &eoa);
        if (err && eoa > 0)
            r = SPHSIM_FAIL(e, SPHSIM_E_IO,
                            "cannot create output file '%s': %s (could not reserve %.3g MB for the %llu snapshots of "
                            "the run)",
                            path, why, (double)eoa / 1e6, (unsigned long long)o->capacity);
        else r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot write the layout of output file '%s': %s", path, why);
    }
    if (r == SPHSIM_OK) diskspace_release(o->file);
    /* the new sidecar (no snapshot yet) before the file is placed: a kill between the two leaves
     * a sidecar naming fewer snapshots than the file beside it holds, never more, and a sidecar
     * that cannot be written leaves the old file in place */
    if (r == SPHSIM_OK) r = xdmf_write(o, e);
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
    if (r != SPHSIM_OK) {
        /* the file is removed: nothing more needs to reach it (and a full disk would make
         * H5Fclose fail, which HDF5 1.10 follows with a crash at exit); what the close flushes
         * goes to /dev/null, which no file size limit applies to */
        poison_to(o, 1);
        H5Fclose(o->file);
        h5io_forget();
        unlink(tmp);
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

/* Parallel output: this rank's rows (o->ids) of the dataset `path` written collectively from buf:
 * axis 0, rows row + id; axis 1, row `row` of a rank-2 dataset, columns id. Records whether
 * the transfer stayed collective (o->io_collective). */
static int write_share_rows(output *o, const char *path, hid_t mtype, const void *buf, hsize_t row, int axis)
{
    if (h5io_ds_write_runs(o->file, path, mtype, buf, row, o->runs, o->n_runs, axis) < 0) return -1;
    const int c = h5io_runs_collective(NULL, 0);
    if (c >= 0 && o->io_collective != 0) o->io_collective = c;
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

/* Rows row .. row+n-1 of dataset `path` from n rows of src, packed into o->buf a block at a time
 * (so that the buffer stays small: packing all rows at once took 13 GB at 10^9 particles).
 * Blocks end on multiples of o->block_rows counted from the dataset's first row. */
static int write_rows_packed(output *o, const char *path, hid_t mtype, size_t row_bytes, hsize_t row, size_t n,
                             row_pack pack, const void *src)
{
    if (o->par) { /* this rank's rows (n of them, at ids o->ids), packed at once and written collectively */
        if (ensure_buf(o, row_bytes * (n ? n : 1)) < 0) return -1;
        pack(src, 0, n, o->buf);
        return write_share_rows(o, path, mtype, o->buf, row, 0);
    }
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

static int write_i64_ramp(output *o, const char *path, hsize_t rows, int cols, int64_t a, int64_t b)
{
    const hsize_t B = 65536;
    if (rows == 0) return 0;
    if (ensure_buf(o, (size_t)B * (size_t)cols * sizeof(int64_t)) < 0) return -1;
    int64_t *v = o->buf;
    for (hsize_t r0 = 0; r0 < rows; r0 += B) {
        hsize_t m = rows - r0 < B ? rows - r0 : B;
        for (hsize_t i = 0; i < m; ++i)
            for (int c = 0; c < cols; ++c) v[i * (hsize_t)cols + (hsize_t)c] = a + b * (int64_t)(r0 + i);
        if (h5io_ds_write_rows(o->file, path, H5T_NATIVE_INT64, v, r0, m) < 0) return -1;
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
    long first[2] = { -1, -1 }; /* the rows of the first fluid and boundary particle */
    for (size_t i = 0; i < p->n && (first[0] < 0 || first[1] < 0); ++i) {
        if (p->type[i] == PTYPE_FLUID && first[0] < 0) first[0] = (long)i;
        if (p->type[i] == PTYPE_BOUNDARY && first[1] < 0) first[1] = (long)i;
    }
    if (first[0] >= 0) m_fluid = p->mass[first[0]];
    if (first[1] >= 0) m_boundary = p->mass[first[1]];
    if (o->par) { /* the first in id order over the ranks: its owner's mass, on every rank */
        const int ranks = comm_size();
        long *all = malloc((size_t)ranks * sizeof *all);
        if (!all) return -1;
        double *m[2] = { &m_fluid, &m_boundary };
        for (int t = 0; t < 2; ++t) {
            comm_allgather_long(first[t] >= 0 ? (long)o->ids[first[t]] : -1, all);
            int owner = -1;
            for (int r = 0; r < ranks; ++r)
                if (all[r] >= 0 && (owner < 0 || all[r] < all[owner])) owner = r;
            if (owner >= 0) comm_broadcast(m[t], sizeof *m[t], owner);
            else *m[t] = -1;
        }
        free(all);
    }
    hid_t g = H5Gopen2(o->file, "/sphsim", H5P_DEFAULT);
    if (g < 0) return -1;
    int rc = 0; /* attributes made with the layout, rewritten in place (same type and size) */
    if (m_fluid >= 0) rc |= h5io_attr_overwrite(g, "particle_mass", H5T_NATIVE_DOUBLE, &m_fluid);
    if (m_boundary >= 0) rc |= h5io_attr_overwrite(g, "boundary_particle_mass", H5T_NATIVE_DOUBLE, &m_boundary);
    H5Gclose(g);
    return rc ? -1 : 0;
}

static int write_device_order(output *o, const uint32_t *order, hsize_t k)
{
    size_t n = o->n;
    if (n == 0) return 0;
    /* parallel: the ranks' ids at their own positions, so the row reads as id order */
    if (o->par) return write_share_rows(o, "/sphsim/restart/device_order", H5T_NATIVE_UINT32, o->ids, k % 2, 1);
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
    if (!blob && !o->par) bytes = 0; /* (parallel: the root's blob; the others pass NULL) */
    if (bytes == 0 && w == 0) return 0;
    if (w == 0) {
        if (create_state(f, bytes) < 0) return -1;
        w = (long long)bytes;
    }
    if (bytes > (size_t)w) return -1; /* refused with a message by output_write before */
    if (o->par && o->share) { /* every rank its own bytes (output_write_shares), one collective transfer */
        if (bytes != (size_t)w) {
            h5io_set_reason("the solver state's shares do not fill its dataset");
            return -1;
        }
        if (h5io_ds_write_runs(f, name, H5T_NATIVE_UINT8, o->share->data, k % 2, o->share_runs, o->share->n_runs,
                               1) < 0)
            return -1;
    } else if (bytes > 0) {
        if (ensure_buf(o, (size_t)w) < 0) return -1;
        if (blob) memcpy(o->buf, blob, bytes);
        memset((char *)o->buf + (blob ? bytes : 0), 0, (size_t)w - (blob ? bytes : 0));
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
    size_t n = o->par ? o->n_local : o->n; /* the rows this process writes */
    hsize_t row = k * o->n;
    if (!o->have_topology) {
        if (o->sph && write_used_masses(o, p) < 0) return -1;
        o->have_topology = 1;
    }
    /* ---- data ---- */
    if (write_rows_packed(o, "/VTKHDF/Points", H5T_NATIVE_FLOAT, 12, row, n, pack_xyz, p->pos) < 0) return -1;
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        const field_desc *fd = &OUTPUT_FIELDS[i];
        if (!(o->fields & fd->bit) || (fd->bit & STATIC_FIELDS)) continue;
        if (fd->bit == FIELD_VELOCITY) {
            if (write_rows_packed(o, "/VTKHDF/PointData/velocity", H5T_NATIVE_FLOAT, 12, row, n, pack_xyz, p->vel) < 0)
                return -1;
            continue;
        }
        const void *src = output_field_array(p, fd->bit);
        if (!src) return -1;
        char path[128];
        snprintf(path, sizeof path, "/VTKHDF/PointData/%s", fd->name);
        if (o->par ? write_share_rows(o, path, output_field_mtype(fd->kind), src, row, 0) < 0
                   : h5io_ds_write_rows(f, path, output_field_mtype(fd->kind), src, row, n) < 0)
            return -1;
    }
    if (write_device_order(o, si->device_order, k) < 0) return -1;
    if (write_state(o, state, state_bytes, k) < 0) return -1;
    for (int q = 0; q < o->n_gauge_rows; ++q)
        if (output_gauges_write(o, o->scene, &o->gauge_rows[q]) < 0) return -1;
    o->n_gauge_rows = 0;

    /* ---- step records (the Steps offsets were written with the layout) ---- */
    double t = si->time;
    int64_t step = si->step, ncont = si->n_contacts, nout = si->n_outside;
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
static void poison_to(output *o, int null_sink)
{
    int *fd = NULL;
    /* (a parallel file's handle is MPI-IO's: nothing is swapped; a failure there ends every rank) */
    if (!o->par && H5Fget_vfd_handle(o->file, H5P_DEFAULT, (void **)&fd) >= 0 && fd && *fd >= 0) {
        int sink = null_sink ? -1 : memfd_create("sphsim-discarded-output", MFD_CLOEXEC);
        if (sink < 0) sink = open("/dev/null", O_RDWR);
        if (sink >= 0) {
            dup2(sink, *fd);
            close(sink);
        }
    }
    o->broken = 1;
    h5io_forget();
}

static void poison(output *o) { poison_to(o, 0); }

sphsim_status output_write(output *o, const particles *p, const output_snapshot_info *si, sphsim_error *e)
{
    return output_write_state(o, p, si, NULL, 0, e);
}

static sphsim_status write_snapshot(output *o, const particles *p, const output_snapshot_info *si, const void *state,
                                    size_t state_bytes, sphsim_error *e);
static sphsim_status read_open(output *o, const char *path, const scene *s, sphsim_error *e);

sphsim_status output_write_state(output *o, const particles *p, const output_snapshot_info *si, const void *state,
                                 size_t state_bytes, sphsim_error *e)
{
    if (o && o->par)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "output_write_state: '%s' is open on every rank (output_write_share)",
                           o->path);
    return write_snapshot(o, p, si, state, state_bytes, e);
}

sphsim_status output_write_shares(output *o, const particles *p, const uint32_t *ids, const output_snapshot_info *si,
                                  const output_state_share *state, sphsim_error *e)
{
    if (!o || !o->par) return SPHSIM_FAIL(e, SPHSIM_E_IO, "output_write_shares: the output is not parallel");
    if (state->n_runs * 2 > o->cap_share_runs) {
        hsize_t *r = realloc(o->share_runs, state->n_runs * 2 * sizeof *r);
        if (!r) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory writing '%s'", o->path);
        o->share_runs = r;
        o->cap_share_runs = state->n_runs * 2;
    }
    int bad = 0;
    uint64_t end = 0, mine = 0;
    for (size_t j = 0; j < state->n_runs; ++j) {
        const uint64_t a = state->run[2 * j], len = state->run[2 * j + 1];
        bad |= a < end || len == 0 || a + len > state->bytes;
        end = a + len;
        mine += len;
        o->share_runs[2 * j] = (hsize_t)a;
        o->share_runs[2 * j + 1] = (hsize_t)len;
    }
    /* every byte once over the ranks */
    if (comm_or_u32((uint32_t)bad) || (uint64_t)comm_sum_long((long)mine) != state->bytes)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu to '%s': the ranks' shares are not the %zu bytes of the solver "
                           "state once each",
                           (unsigned long long)o->nsteps, o->path, state->bytes);
    o->share = state;
    const sphsim_status st = output_write_share(o, p, ids, si, NULL, state->bytes, e);
    o->share = NULL;
    return st;
}

sphsim_status output_write_share(output *o, const particles *p, const uint32_t *ids, const output_snapshot_info *si,
                                 const void *state, size_t state_bytes, sphsim_error *e)
{
    if (!o || !o->par) return SPHSIM_FAIL(e, SPHSIM_E_IO, "output_write_share: the output is not parallel");
    /* the ids as runs of consecutive ids */
    size_t nr = 0;
    for (size_t i = 0; i < p->n; ++i)
        if (i == 0 || ids[i] != ids[i - 1] + 1) ++nr;
    if (nr * 2 > o->cap_runs) {
        hsize_t *r = realloc(o->runs, nr * 2 * sizeof *r);
        if (!r) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory writing '%s'", o->path);
        o->runs = r;
        o->cap_runs = nr * 2;
    }
    size_t j = 0;
    int bad = 0;
    for (size_t i = 0; i < p->n; ++i) {
        if (ids[i] >= o->n || (i > 0 && ids[i] <= ids[i - 1])) bad = 1;
        if (i == 0 || ids[i] != ids[i - 1] + 1) {
            o->runs[2 * j] = ids[i];
            o->runs[2 * j + 1] = 0;
            ++j;
        }
        o->runs[2 * (j - 1) + 1]++;
    }
    o->n_runs = nr;
    o->ids = ids;
    o->n_local = p->n;
    /* every particle once over the ranks */
    if (comm_or_u32((uint32_t)bad) || (size_t)comm_sum_long((long)p->n) != o->n)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu to '%s': the ranks' rows are not the %zu particles once each",
                           (unsigned long long)o->nsteps, o->path, o->n);
    o->io_collective = -1;
    sphsim_status st = write_snapshot(o, p, si, state, state_bytes, e);
    o->ids = NULL;
    return st;
}

int output_io_collective(const output *o) { return o ? o->io_collective : -1; }

static sphsim_status write_snapshot(output *o, const particles *p, const output_snapshot_info *si, const void *state,
                                    size_t state_bytes, sphsim_error *e)
{
    if (!o || o->file < 0) return SPHSIM_FAIL(e, SPHSIM_E_IO, "output_write: the output is not open");
    if (!state && !o->par) state_bytes = 0;
    if (o->broken)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "'%s' is unusable after an earlier write error; its first %llu snapshot(s) are intact",
                           o->path, (unsigned long long)o->nsteps);
    h5io_quiet();
    hsize_t k = o->nsteps;
    if (k + 1 > o->times_cap) {
        size_t cap = o->times_cap ? 2 * o->times_cap : 64;
        double *t = realloc(o->times, cap * sizeof *t);
        if (!t) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory writing '%s'", o->path);
        o->times = t;
        o->times_cap = cap;
    }
    if (k >= o->capacity)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu (t = %g s) to '%s': the file was laid out for %llu snapshots",
                           (unsigned long long)k, si->time, o->path, (unsigned long long)o->capacity);
    if (!o->par && p->n != o->n)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu to '%s': it has %zu particles but the file holds %zu per "
                           "snapshot (the particle count must stay fixed)",
                           (unsigned long long)k, o->path, p->n, o->n);
    /* Every byte a snapshot writes lies in space allocated (and reserved on disk) when the file
     * was created; only a solver state the creator did not declare makes its datasets now. */
    int err = 0;
    if (state_bytes > 0) {
        long long w = state_width(o->file);
        h5io_forget();
        if (w < 0 || (w > 0 && state_bytes > (size_t)w))
            return SPHSIM_FAIL(e, SPHSIM_E_IO,
                               "cannot write snapshot %llu to '%s': its solver state has %zu bytes but the file's "
                               "/sphsim/restart datasets hold %lld per snapshot",
                               (unsigned long long)k, o->path, state_bytes, w);
        if (w == 0 && (err = diskspace_reserve(o->file, 2.0 * (double)state_bytes + 65536.0)) != 0) {
            diskspace_release(o->file);
            return SPHSIM_FAIL(e, SPHSIM_E_IO,
                               "cannot write snapshot %llu (t = %g s) to '%s': %s; the %llu snapshot(s) written "
                               "before are intact",
                               (unsigned long long)k, si->time, o->path, strerror(err), (unsigned long long)k);
        }
    }
    const int first = !o->have_topology; /* the first snapshot of the file */
    int committed = 0;
    int rc = -1;
    if (output_fault_hook && output_fault_hook(k, 1)) h5io_set_reason("Input/output error (injected by a test)");
    else rc = write_snapshot_rows(o, p, si, state, state_bytes, k);
    if (rc < 0 && o->par && comm_size() > 1) {
        /* The other ranks may be waiting for this one inside a collective write: no call of the
         * file may follow (not even its close). The run fails on this rank alone, which ends
         * every rank (main.c); the file keeps its last commit, as when a rank is killed. */
        char why[512];
        h5io_reason(why, sizeof why);
        o->broken = o->stranded = 1;
        h5io_forget();
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "cannot write snapshot %llu (t = %g s) to '%s': %s; the %llu snapshot(s) written before "
                           "are intact",
                           (unsigned long long)k, si->time, o->path, why, (unsigned long long)k);
    }
    if (rc == 0 && output_fault_hook && output_fault_hook(k, 0)) {
        h5io_set_reason("Input/output error (injected by a test)");
        rc = -1;
    }
    /* parallel: every rank goes on to the commit, or none */
    if (o->par && comm_or_u32(rc != 0) && rc == 0) {
        h5io_set_reason("another rank could not write its rows");
        rc = -1;
    }
    /* 1. the snapshot's raw data on disk before the commit point */
    if (rc == 0) rc = h5io_sync(o->file);
    /* first snapshot: the part's counts (raw data too), flushed just before the commit point */
    if (rc == 0 && first && (write_part_counts(o) < 0 || H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0)) rc = -1;
    /* 2. the commit point: NSteps rewritten in place, flushed */
    if (rc == 0) rc = set_nsteps(o->file, k + 1);
    if (rc == 0 && H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) rc = -1;
    if (rc == 0) committed = 1;
    /* 3. the time for VTK's Steps/Values, which must not be longer than NSteps: its extent (in
     *    its one preallocated chunk) grows to k + 1 after the commit */
    double t = si->time;
    if (rc == 0) rc = h5io_ds_io_rows(o->file, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, &t, k, 1, k > 0);
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
    if (!o->root) return SPHSIM_OK;
    /* The sidecar is a view of the committed snapshots for XDMF readers, rewritten whole beside
     * the old one: a failure (a full disk: its space is not reserved with the file's) costs that
     * view until a later snapshot writes it again, not the run (output_sidecar_problem). */
    sphsim_error xe;
    if (xdmf_write(o, &xe) != SPHSIM_OK) {
        if (!o->sidecar_problem[0]) snprintf(o->sidecar_problem, sizeof o->sidecar_problem, "%.500s", xe.msg);
    } else {
        o->sidecar_problem[0] = '\0';
    }
    return SPHSIM_OK;
}

const char *output_sidecar_problem(const output *o) { return o && o->sidecar_problem[0] ? o->sidecar_problem : NULL; }

sphsim_status output_close(output *o, sphsim_error *e)
{
    if (!o) return SPHSIM_OK;
    if (o->stranded) { /* the other ranks wait for this one, or are gone: the run ends every rank */
        output_free(o);
        return SPHSIM_OK;
    }
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
    if (o->par) h5io_parallel(-1, 0);
    h5io_forget();
    output_free(o);
    return r;
}

/* An existing output file opened for writing and its state read (read_open): by this process,
 * or (par) by every MPI rank together with MPI-IO. */
static sphsim_status open_existing(output **out, const char *path, const scene *s, int par, sphsim_error *e)
{
    *out = NULL;
    h5io_quiet();
    output *o = output_alloc(path);
    if (!o) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory opening '%s'", path);
    o->par = par;
    o->root = !par || comm_rank() == 0;
    hid_t fapl = output_fapl();
#ifdef H5_HAVE_PARALLEL
    if (par && fapl >= 0 && H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) < 0) {
        H5Pclose(fapl);
        fapl = -1;
    }
#endif
    o->file = !par || fapl >= 0 ? H5Fopen(path, H5F_ACC_RDWR, fapl) : -1;
    if (fapl >= 0) H5Pclose(fapl);
    if (o->file < 0) {
        char why[512];
        h5io_reason(why, sizeof why);
        sphsim_status r = par ? SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot open '%s' on every rank (MPI-IO): %s", path, why)
                              : SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot open '%s' to append: %s", path, why);
        output_free(o);
        return r;
    }
    if (par) h5io_parallel(o->file, o->root);
    sphsim_status r = read_open(o, path, s, e);
    if (r != SPHSIM_OK) {
        poison(o); /* leave the file as it was; H5Fclose must not fail (nothing swapped for MPI-IO) */
        H5Fclose(o->file);
        if (par) h5io_parallel(-1, 0);
        h5io_forget();
        output_free(o);
        return r;
    }
    *out = o;
    return SPHSIM_OK;
}

sphsim_status output_open_parallel(output **out, const char *path, const scene *s, sphsim_error *e)
{
    *out = NULL;
    if (!h5io_parallel_supported())
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "this sphsim was built without parallel HDF5, which several MPI ranks write with; build it "
                           "with `make MPI=1` on libhdf5-openmpi-dev (docs/mpi.md)");
    SPHSIM_TRY(open_existing(out, path, s, 1, e));
    (*out)->sph = s->mode == MODE_SPH;
    return SPHSIM_OK;
}

/* The state of an existing output file o->file (of the current layout version): its capacity,
 * committed snapshots, fields, particles per snapshot and the committed times. Reads only. */
static sphsim_status read_open(output *o, const char *path, const scene *s, sphsim_error *e)
{
    hid_t f = o->file;
    sphsim_status r = SPHSIM_OK;
    hsize_t ns = 0;
    long long lv = 0, cap = 0;
    if (h5io_attr_read_i64(f, "/sphsim", "layout_version", &lv) < 0 || lv != OUT_LAYOUT_VERSION ||
        h5io_attr_read_i64(f, "/sphsim", "snapshots_allocated", &cap) < 0 || cap < 1) {
        h5io_forget();
        r = SPHSIM_FAIL(e, SPHSIM_E_IO,
                        "cannot append to '%s': it has output layout version %lld, this sphsim appends to version %d "
                        "only (files whose whole run is allocated at creation); rerun the scene, or resume it with "
                        "the sphsim version that wrote it",
                        path, lv, OUT_LAYOUT_VERSION);
        return r;
    }
    o->capacity = (hsize_t)cap;
    if ((r = output_read_nsteps(f, path, &ns, e)) != SPHSIM_OK) return r;
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        char p[128];
        snprintf(p, sizeof p, "/VTKHDF/PointData/%s", OUTPUT_FIELDS[i].name);
        if (h5io_link_exists(f, p)) o->fields |= OUTPUT_FIELDS[i].bit;
        else if (OUTPUT_FIELDS[i].bit & ALWAYS_FIELDS) {
            r = output_bad_file(e, path, "a required field (velocity, id or type) is missing");
            return r;
        }
    }
    o->fields |= FIELD_POSITION;
    {
        long long rows = h5io_ds_rows(f, "/VTKHDF/Points");
        if (rows < 0 || rows % cap) {
            r = output_bad_file(e, path, "Points does not hold whole snapshots");
            return r;
        }
        o->n = (size_t)(rows / cap);
    }
    if (ns > 0) {
        o->have_topology = 1;
        o->times_cap = ns + 64;
        o->times = malloc(o->times_cap * sizeof *o->times);
        if (!o->times) {
            return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory opening '%s'", path);
        }
        if (h5io_ds_read_rows(f, "/sphsim/steps/time", H5T_NATIVE_DOUBLE, o->times, 0, ns) < 0) {
            r = output_bad_file(e, path, "cannot read /sphsim/steps/time");
            return r;
        }
    }
    o->nsteps = ns;
    o->scene = s;
    return SPHSIM_OK;
}

sphsim_status output_open_append(output **out, const char *path, const scene *s, const output_run_info *ri,
                                 sphsim_error *e)
{
    output *o = NULL;
    SPHSIM_TRY(open_existing(&o, path, s, 0, e));
    hid_t f = o->file;
    sphsim_status r = SPHSIM_OK;
    const hsize_t ns = o->nsteps;
    /* Rows past NSteps (a snapshot written but never committed) lie in allocated space and are
     * simply written again. Steps/Values is set to the committed times in full (a kill right
     * after a commit can leave it one short): its extent changes in place within its chunk. */
    if (ns > 0 && h5io_ds_extend_rows(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, o->times, 0, ns) < 0) {
        r = output_bad_file(e, path, "cannot complete Steps/Values");
        goto fail;
    }
    {
        /* Provenance of this continuation, in the fixed-size attribute made with the layout
         * (rewritten in place; the oldest lines give way when it is full). */
        char *prev = h5io_attr_read_str(f, "/sphsim", "resumes");
        char line[1024];
        snprintf(line, sizeof line, "%s resumed after snapshot %llu by sphsim %s on %s",
                 ri && ri->start_time ? ri->start_time : "?", (unsigned long long)ns,
                 ri && ri->version ? ri->version : "?", ri && ri->device_name ? ri->device_name : "?");
        char *all = calloc(OUT_RESUMES_BYTES + 2 * sizeof line, 1);
        int bad = !all;
        if (all) {
            snprintf(all, OUT_RESUMES_BYTES + 2 * sizeof line, "%s%s%s", prev && *prev ? prev : "",
                     prev && *prev ? "\n" : "", line);
            char *keep = all;
            while (strlen(keep) >= OUT_RESUMES_BYTES && strchr(keep, '\n')) keep = strchr(keep, '\n') + 1;
            char fixed[OUT_RESUMES_BYTES];
            memset(fixed, 0, sizeof fixed);
            memcpy(fixed, keep, strlen(keep) < sizeof fixed ? strlen(keep) : sizeof fixed);
            hid_t g = H5Gopen2(f, "/sphsim", H5P_DEFAULT);
            hid_t a = g >= 0 ? H5Aopen(g, "resumes", H5P_DEFAULT) : -1;
            hid_t t = a >= 0 ? H5Aget_type(a) : -1;
            bad = t < 0 || H5Tget_size(t) != OUT_RESUMES_BYTES || H5Awrite(a, t, fixed) < 0;
            if (t >= 0) H5Tclose(t);
            if (a >= 0) H5Aclose(a);
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
    if ((r = xdmf_write(o, e)) != SPHSIM_OK) goto fail;
    *out = o;
    return SPHSIM_OK;
fail:
    poison(o); /* leave the file as the last flush left it; H5Fclose must not fail */
    H5Fclose(o->file);
    h5io_forget();
    output_free(o);
    return r;
}

/* ---------------------------------------------------------------- relayout (--resume) */

/* Rows [0, rows) of dataset `path` from file `from` into the same dataset of file `to`, a block
 * at a time, in the file's type (no conversion). */
static int copy_rows(output *o, hid_t from, hid_t to, const char *path, hsize_t rows)
{
    if (rows == 0) return 0;
    hid_t ds = H5Dopen2(from, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t ft = H5Dget_type(ds), fs = H5Dget_space(ds);
    hsize_t dims[2] = { 0, 1 };
    int rank = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
    if (rank >= 1 && rank <= 2) H5Sget_simple_extent_dims(fs, dims, NULL);
    const size_t row_bytes = ft >= 0 ? H5Tget_size(ft) * (rank == 2 ? (size_t)dims[1] : 1) : 0;
    H5Sclose(fs);
    H5Dclose(ds);
    int rc = -1;
    if (rank >= 1 && rank <= 2 && row_bytes > 0 && rows <= dims[0]) {
        const hsize_t B = (hsize_t)(o->block_rows ? o->block_rows : OUT_BLOCK_ROWS);
        rc = ensure_buf(o, (size_t)(rows < B ? rows : B) * row_bytes);
        for (hsize_t r0 = 0; rc == 0 && r0 < rows; r0 += B) {
            hsize_t m = rows - r0 < B ? rows - r0 : B;
            if (h5io_ds_read_rows(from, path, ft, o->buf, r0, m) < 0 ||
                h5io_ds_write_rows(to, path, ft, o->buf, r0, m) < 0)
                rc = -1;
        }
    }
    if (ft >= 0) H5Tclose(ft);
    return rc;
}

/* The string attribute `name` of /sphsim in `from` written into `to` (a variable-length one as
 * such; `resumes` into its fixed-size attribute, in place). */
static int copy_str_attr(hid_t from, hid_t to, const char *name)
{
    char *v = h5io_attr_read_str(from, "/sphsim", name);
    h5io_forget();
    if (!v) return 0;
    hid_t g = H5Gopen2(to, "/sphsim", H5P_DEFAULT);
    int rc = -1;
    if (g >= 0) {
        if (strcmp(name, "resumes") == 0) {
            char fixed[OUT_RESUMES_BYTES];
            memset(fixed, 0, sizeof fixed);
            const char *keep = v;
            while (strlen(keep) >= OUT_RESUMES_BYTES && strchr(keep, '\n')) keep = strchr(keep, '\n') + 1;
            memcpy(fixed, keep, strlen(keep) < sizeof fixed ? strlen(keep) : sizeof fixed);
            hid_t a = H5Aopen(g, name, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1;
            rc = t >= 0 && H5Awrite(a, t, fixed) >= 0 ? 0 : -1;
            if (t >= 0) H5Tclose(t);
            if (a >= 0) H5Aclose(a);
        } else {
            rc = h5io_attr_str(g, name, v);
        }
        H5Gclose(g);
    }
    free(v);
    return rc;
}

sphsim_status output_relayout(const char *path, const scene *s, long keep, sphsim_error *e)
{
    h5io_quiet();
    hid_t from = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (from < 0) {
        char why[512];
        h5io_reason(why, sizeof why);
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot open '%s' to resume: %s", path, why);
    }
    sphsim_status r = SPHSIM_OK;
    hsize_t ns = 0;
    output *o = NULL;
    char tmp[4096];
    if (strlen(path) >= 4000) {
        H5Fclose(from);
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "output file name too long: %.64s...", path);
    }
    snprintf(tmp, sizeof tmp, "%.4000s.relayout", path);
    if ((r = output_read_nsteps(from, path, &ns, e)) != SPHSIM_OK) goto done;
    if (keep >= 0 && (hsize_t)keep < ns) ns = (hsize_t)keep;
    if ((long long)ns > output_snapshots(s)) {
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "'%s' holds %llu snapshots, more than the %ld of the scene to resume", path,
                        (unsigned long long)ns, output_snapshots(s));
        goto done;
    }
    const char *sname, *sname_bytes;
    output_state_names(from, &sname, &sname_bytes);
    long long w = output_state_width_of(from, sname, sname_bytes);
    h5io_forget();
    char *version = h5io_attr_read_str(from, "/sphsim", "version");
    char *device = h5io_attr_read_str(from, "/sphsim", "device");
    char *start = h5io_attr_read_str(from, "/sphsim", "start_time");
    h5io_forget();
    output_run_info ri = { version, device, start, w > 0 ? (size_t)w : 0 };
    /* the new file, laid out for the scene's whole run, under a temporary name */
    o = output_alloc(tmp);
    if (!o) {
        r = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    } else {
        o->fields = output_fields(s);
        o->sph = s->mode == MODE_SPH;
        o->n = s->n_total > 0 ? (size_t)s->n_total : 0;
        o->capacity = (hsize_t)output_snapshots(s);
        int busy;
        o->file = create_private(tmp, &busy);
        if (o->file < 0 && busy)
            r = SPHSIM_FAIL(e, SPHSIM_E_IO,
                            "cannot lay out '%s' again: another process is doing it now ('%s' is in use)", path, tmp);
    }
    if (r == SPHSIM_OK && o->file < 0) r = output_bad_file(e, tmp, "cannot create it");
    int err = 0;
    if (r == SPHSIM_OK) {
        const double need = output_file_bytes(s, ri.state_bytes) + 65536.0;
        hid_t f = o->file;
        const hsize_t rows = ns * o->n;
        int64_t last_step = -1; /* the last committed snapshot's: the gauges' rows up to it */
        int bad = (err = diskspace_reserve(f, need)) != 0 || create_layout(o, s, &ri) < 0 ||
                  output_gauges_create(o, s) < 0 || copy_rows(o, from, f, "/VTKHDF/Points", rows) < 0;
        if (!bad && ns > 0)
            bad = h5io_ds_read_rows(from, "/sphsim/steps/step", H5T_NATIVE_INT64, &last_step, ns - 1, 1) < 0 ||
                  output_gauges_copy(o, s, from, (long)last_step, copy_rows) < 0;
        for (int i = 0; !bad && i < OUTPUT_N_FIELDS; ++i) {
            if (!(o->fields & OUTPUT_FIELDS[i].bit) || (OUTPUT_FIELDS[i].bit & STATIC_FIELDS)) continue;
            char p[128];
            snprintf(p, sizeof p, "/VTKHDF/PointData/%s", OUTPUT_FIELDS[i].name);
            bad = copy_rows(o, from, f, p, rows) < 0;
        }
        for (int i = 0; !bad && i < OUTPUT_N_SPHSIM_STEP_I64; ++i)
            bad = copy_rows(o, from, f, OUTPUT_SPHSIM_STEP_I64[i], ns) < 0;
        if (!bad) bad = copy_rows(o, from, f, "/sphsim/steps/time", ns) < 0;
        if (!bad && ns > 0 && o->n > 0) bad = copy_rows(o, from, f, "/sphsim/restart/device_order", 2) < 0;
        if (!bad && w > 0) {
            hid_t d = H5Dopen2(f, RESTART_STATE, H5P_DEFAULT); /* made by create_layout */
            if (d >= 0) H5Dclose(d);
            else bad = 1;
            /* from the old names' datasets too (older particle-mode files): the same rows */
            if (!bad) {
                size_t sz = 2 * (size_t)w;
                void *b = malloc(sz);
                int64_t len[2] = { 0, 0 };
                bad = !b || h5io_ds_read_rows(from, sname, H5T_NATIVE_UINT8, b, 0, 2) < 0 ||
                      h5io_ds_read_rows(from, sname_bytes, H5T_NATIVE_INT64, len, 0, 2) < 0 ||
                      h5io_ds_write_rows(f, RESTART_STATE, H5T_NATIVE_UINT8, b, 0, 2) < 0 ||
                      h5io_ds_write_rows(f, RESTART_STATE_BYTES, H5T_NATIVE_INT64, len, 0, 2) < 0;
                free(b);
            }
        }
        if (!bad && ns > 0) {
            /* the masses the solver used, the committed snapshots' times and counts */
            double m = 0;
            hid_t g = H5Gopen2(f, "/sphsim", H5P_DEFAULT), gf = H5Gopen2(from, "/sphsim", H5P_DEFAULT);
            const char *masses[] = { "particle_mass", "boundary_particle_mass" };
            for (int i = 0; !bad && i < 2; ++i) {
                if (H5Aexists(gf, masses[i]) <= 0 || H5Aexists(g, masses[i]) <= 0) continue;
                hid_t a = H5Aopen(gf, masses[i], H5P_DEFAULT);
                bad = a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &m) < 0 ||
                      h5io_attr_overwrite(g, masses[i], H5T_NATIVE_DOUBLE, &m) < 0;
                if (a >= 0) H5Aclose(a);
            }
            if (g >= 0) H5Gclose(g);
            if (gf >= 0) H5Gclose(gf);
            o->times = malloc(ns * sizeof *o->times);
            bad = bad || !o->times ||
                  h5io_ds_read_rows(from, "/sphsim/steps/time", H5T_NATIVE_DOUBLE, o->times, 0, ns) < 0 ||
                  h5io_ds_extend_rows(f, "/VTKHDF/Steps/Values", H5T_NATIVE_DOUBLE, o->times, 0, ns) < 0 ||
                  write_part_counts(o) < 0;
        }
        if (!bad) bad = copy_str_attr(from, f, "resumes") < 0;
        if (!bad)
            bad = (err = diskspace_reserve(f, 0)) != 0 || h5io_sync(f) < 0 || set_nsteps(f, ns) < 0 ||
                  h5io_sync(f) < 0 || h5io_sync(f) < 0;
        if (bad) {
            char why[512];
            if (err) snprintf(why, sizeof why, "%s", strerror(err));
            else h5io_reason(why, sizeof why);
            r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot lay '%s' out again for the longer run: %s; the file is unchanged",
                            path, why);
        }
    }
    free(version);
    free(device);
    free(start);
done:
    H5Fclose(from);
    if (o && o->file >= 0) {
        if (r != SPHSIM_OK) poison_to(o, 0);
        else diskspace_release(o->file);
        if (H5Fclose(o->file) < 0 && r == SPHSIM_OK) r = output_bad_file(e, tmp, "cannot close it");
        o->file = -1;
    }
    if (r == SPHSIM_OK && o) {
        /* its sidecar first, by the final name: a kill before the rename leaves it naming no
         * more snapshots than either file holds */
        snprintf(o->path, sizeof o->path, "%s", path);
        output_xmf_path(path, o->xmf_path, sizeof o->xmf_path);
        o->nsteps = ns;
        r = xdmf_write(o, e);
    }
    if (o) output_free(o);
    h5io_forget();
    if (r == SPHSIM_OK) {
        /* the new file replaces the old one only now, complete */
        if (rename(tmp, path) != 0) r = SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot replace '%s': %s", path, strerror(errno));
        else h5io_fsync_dir(path);
    } else {
        unlink(tmp);
    }
    return r;
}

sphsim_status output_resume_check(const char *path, const scene *s, long *keep, int *relayout, sphsim_error *e)
{
    *keep = -1;
    *relayout = 0;
    h5io_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return SPHSIM_OK; /* output_read_resume says why */
    long long lv = 0, cap = 0;
    hsize_t ns = 0;
    if (h5io_attr_read_i64(f, "/sphsim", "layout_version", &lv) < 0) lv = 0;
    if (h5io_attr_read_i64(f, "/sphsim", "snapshots_allocated", &cap) < 0) cap = 0;
    sphsim_status r = output_read_nsteps(f, path, &ns, e);
    if (r == SPHSIM_OK && ns > 0) {
        /* a run stored with a shorter end whose last snapshot was at its last step, off the
         * snapshot grid of the longer run: continue from the last snapshot on the grid */
        int64_t step = 0;
        if (h5io_ds_read_rows(f, "/sphsim/steps/step", H5T_NATIVE_INT64, &step, ns - 1, 1) == 0 &&
            s->steps_per_output > 0 && step % s->steps_per_output != 0 && step < s->n_steps)
            *keep = (long)ns - 1;
    }
    /* a run taken further (--set time.end) whose snapshots fit the file anyway: laid out again
     * too, so that the file holds the extended scene (its end, the gauges' rows of its steps) */
    char *stored = h5io_attr_read_str(f, "/sphsim", "resolved_json");
    const int other_scene = !scene_resolved_same(stored, s->resolved_json);
    free(stored);
    h5io_forget();
    H5Fclose(f);
    if (r != SPHSIM_OK) return r;
    *relayout = lv != OUT_LAYOUT_VERSION || cap < output_snapshots(s) || *keep >= 0 || other_scene;
    return SPHSIM_OK;
}
