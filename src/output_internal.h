/* output_internal: what the output modules share (output.c writes the VTKHDF file, xdmf.c its
 * sidecar, output_read.c reads it back for --resume, diskspace.c reserves its disk space): the
 * open file's state and the table of PointData fields. Not part of the public API (output.h). */
#ifndef SPHSIM_OUTPUT_INTERNAL_H
#define SPHSIM_OUTPUT_INTERNAL_H

#include "h5io.h"
#include "output.h"

#define OUT_LAYOUT_VERSION 2             /* /sphsim attribute layout_version */
#define OUT_RESUMES_BYTES 2048           /* /sphsim attribute resumes: fixed size, rewritten in place */
#define OUT_TOPOS 4                      /* Vertices, Lines, Polygons, Strips */
#define OUT_BLOCK_ROWS ((size_t)1 << 22) /* rows packed and written at a time */

enum { FK_F32, FK_U32, FK_U8, FK_I8 };

/* One PointData array. Position is VTKHDF/Points, not a field here. */
typedef struct field_desc {
    const char *name; /* VTKHDF/PointData/<name> */
    unsigned bit;     /* FIELD_* */
    int ncomp;        /* 1 or 3 */
    int kind;         /* FK_* */
} field_desc;

/* Every PointData field, in the order the file lists them (output.c). */
extern const field_desc OUTPUT_FIELDS[];
extern const int OUTPUT_N_FIELDS;
#define ALWAYS_FIELDS (FIELD_POSITION | FIELD_VELOCITY | FIELD_ID | FIELD_TYPE)
/* Fields that never change: written once with the layout (N rows), every step's offset 0. */
#define STATIC_FIELDS (FIELD_OBJECT)

/* Per-step int64 datasets with one column (row k belongs to snapshot k; output.c). */
extern const char *const OUTPUT_STEP_I64[];
extern const int OUTPUT_N_STEP_I64;

hid_t output_field_ftype(int kind);
hid_t output_field_mtype(int kind);
/* The array of particles p that holds PointData field `bit` (FIELD_*; NULL for velocity, which
 * is packed from vel, and for position). */
void *output_field_array(const particles *p, unsigned bit);

struct output {
    hid_t file;
    char path[4096];
    char xmf_path[4096];
    unsigned fields;   /* FIELD_* bits written (always includes ALWAYS_FIELDS) */
    size_t n;          /* particles per snapshot; fixed by the first snapshot */
    int have_topology; /* vertex cells and the restart dataset exist for n */
    int broken;        /* a write failed: nothing more reaches the file (see output.c, poison) */
    char sidecar_problem[512]; /* why the sidecar could not be rewritten since it last was, or "" */
    int stranded;              /* parallel: this rank failed a write alone; the file is left unclosed (output.c) */
    int sph;           /* SPH mode (particle_mass is taken from the first snapshot) */
    hsize_t nsteps;    /* committed snapshots */
    hsize_t capacity;  /* snapshots the file's layout holds (allocated at creation) */
    double *times;     /* s, one per committed snapshot (for the sidecar) */
    size_t times_cap;
    void *buf; /* packing buffer */
    size_t buf_size;
    size_t block_rows;             /* rows packed and written at a time (OUT_BLOCK_ROWS; tests set fewer) */
    const scene *scene;            /* the run's scene (its gauges; NULL: none) */
    output_gauge_rows *gauge_rows; /* gauge rows for the next snapshot (output_write_gauges) */
    int n_gauge_rows, cap_gauge_rows;
    /* Parallel HDF5 (output_open_parallel): every rank holds the file open and writes the rows of
     * the particles it owns; the root (rank 0; the only process of a serial file) writes the rest
     * (records, restart state, gauges: the other ranks make the same calls selecting nothing) and
     * the sidecar. */
    int par;
    int root;
    const uint32_t *ids; /* the snapshot being written: the particle ids of this rank's rows (par) */
    size_t n_local;      /* their count */
    hsize_t *runs;       /* ids as runs of consecutive ids: start, length (h5io_ds_write_runs) */
    size_t n_runs, cap_runs;
    const output_state_share *share; /* the snapshot being written: its solver state in shares (par), or NULL */
    hsize_t *share_runs;             /* share's runs as h5io_ds_write_runs takes them */
    size_t cap_share_runs;
    int io_collective; /* the last snapshot's particle rows went as collective MPI-IO (1), not (0), unknown (-1) */
};

/* output_gauges.c: the gauges' datasets (/sphsim/gauges): created with the file's layout for the
 * whole run, rows written before a snapshot's commit; the committed rows (up to step last_step)
 * of `from` copied into o's new layout by `copy` (output_relayout). -1 on failure (h5io_reason
 * says why). */
int output_gauges_create(output *o, const scene *s);
int output_gauges_write(output *o, const scene *s, const output_gauge_rows *r);
int output_gauges_copy(output *o, const scene *s, hid_t from, long last_step,
                       int (*copy)(output *, hid_t, hid_t, const char *, hsize_t));
/* Bytes of the gauges' datasets in a file of scene s. */
double output_gauges_layout_bytes(const scene *s);

/* The solver's restart state (opaque bytes, see output.h) and its datasets' older names
 * (particle-mode files of versions before the SPH state; read and appended to under them). */
#define RESTART_STATE "/sphsim/restart/solver_state"             /* uint8[2, W] */
#define RESTART_STATE_BYTES "/sphsim/restart/solver_state_bytes" /* int64[2] */
#define RESTART_STATE_OLD "/sphsim/restart/contact_state"
#define RESTART_STATE_BYTES_OLD "/sphsim/restart/contact_state_bytes"

/* output_read.c: reading helpers the writer's reopen (output_open_append) shares. */
sphsim_status output_bad_file(sphsim_error *e, const char *path, const char *what);
sphsim_status output_read_nsteps(hid_t f, const char *path, hsize_t *nsteps, sphsim_error *e);
void output_state_names(hid_t f, const char **name, const char **name_bytes);
long long output_state_width_of(hid_t f, const char *name, const char *name_bytes);

/* xdmf.c: write the complete sidecar of o's committed snapshots, atomically. */
sphsim_status xdmf_write(const output *o, sphsim_error *e);

/* diskspace.c: reserve the file's disk space up to HDF5's end of allocation plus `extra`
 * bytes (0, or an errno value); give back what lies past that end. */
int diskspace_reserve(hid_t file, double extra);
void diskspace_release(hid_t file);

#endif
