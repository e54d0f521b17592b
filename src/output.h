/* output: the HDF5 snapshot writer (time-stepped VTKHDF PolyData) and its XDMF sidecar.
 * Crash safety: a snapshot's data is written first, then its step entry, then the step
 * count (the commit point), then the file is flushed. */
#ifndef SPHSIM_OUTPUT_H
#define SPHSIM_OUTPUT_H

#include "particles.h"
#include "scene.h"

typedef struct output output;

typedef struct output_run_info {
    const char *version;     /* sphsim version */
    const char *device_name; /* OpenCL device */
    const char *start_time;  /* ISO 8601 UTC */
} output_run_info;

typedef struct output_snapshot_info {
    double time; /* s */
    long step;
    long n_contacts; /* particle mode; -1 when not applicable */
    long n_outside;  /* particles found outside the tank so far */
    /* Optional (may be NULL): particle ids in the device's sorted order at this snapshot, n of
     * them. Stored for the last snapshots only (/sphsim/restart/device_order, 2 x n: snapshot
     * k in row k % 2, so a crash while writing one leaves the committed one intact; NULL is
     * stored as id order) so that --resume restores the exact order and stays bit-identical.
     * output_read_resume returns it (malloc'd) when present and a permutation, else NULL. */
    uint32_t *device_order;
} output_snapshot_info;

/* The FIELD_* bits a snapshot of scene s holds: the scene's output.fields, and always position,
 * velocity, id and type (what --resume reads back). */
unsigned output_fields(const scene *s);

/* Rows packed and written at a time by o (positions, velocities, the topology; default 2^22).
 * For tests, which use a few rows to cross block boundaries. */
void output_set_block_rows(output *o, size_t rows);

/* Create `path` (and `path` with .h5 replaced by .xmf, or .xmf appended). Refuses to replace an
 * existing file unless `overwrite` (SPHSIM_E_IO, naming the file and --overwrite). */
sphsim_status output_open(output **o, const char *path, int overwrite, const scene *s, const output_run_info *ri,
                          sphsim_error *e);

/* Append one snapshot; `p` is in id order. The scene's output fields are written, and always
 * position, velocity, id and type (a restart needs them). */
sphsim_status output_write(output *o, const particles *p, const output_snapshot_info *si, sphsim_error *e);

/* output_write, storing with the snapshot the solver state a restart needs besides the
 * particles (opaque here: the contact solver's carried impulses, contact_state_save, or the SPH
 * neighbour lists' skin level, sph_state_save; NULL or 0 bytes: none). Kept for the last
 * snapshots only, like device_order: /sphsim/restart/solver_state uint8[2, W], snapshot k in
 * row k % 2 (zero-padded), W = the first state's size (a larger one later is refused, SPHSIM_E_IO,
 * the file untouched), and /sphsim/restart/solver_state_bytes int64[2], its length (0: none);
 * both written before the commit point. */
sphsim_status output_write_state(output *o, const particles *p, const output_snapshot_info *si, const void *state,
                                 size_t state_bytes, sphsim_error *e);

/* Rows of the scene's gauges for the steps from step0 on: gauge k's rows[k] rows (its samples at
 * the multiples of its every_steps from step0 on) of its columns (floats) at data + offset[k]. */
typedef struct output_gauge_rows {
    long step0;
    const long *rows;
    const size_t *offset;
    const float *data;
} output_gauge_rows;

/* Gauge rows (/sphsim/gauges, docs/output-format.md) to go with the next snapshot: the next
 * output_write_state writes them (r's arrays must live until then) before its commit. */
sphsim_status output_write_gauges(output *o, const output_gauge_rows *r, sphsim_error *e);

/* Close the file (also frees `o`); safe with NULL. */
sphsim_status output_close(output *o, sphsim_error *e);

/* For --resume, main: the scene JSON stored in the output file `path` (/sphsim attribute
 * scene_json, the scene file as read) and, when `resolved_json` is not NULL, the resolved
 * scene the run stored (resolved_json; NULL when missing); both malloc'd. Reads attributes
 * only. */
sphsim_status output_read_scene(const char *path, char **scene_json, char **resolved_json, sphsim_error *e);

/* What a resumed run starts from, read from one open of the file (output_read_resume). */
typedef struct output_resume {
    particles p;             /* the last committed snapshot, id order (position, velocity, id and type
                                always; the other fields the file holds) */
    output_snapshot_info si; /* its time, step, n_contacts, n_outside and device_order (malloc'd, or
                                NULL when missing or not a permutation) */
    void *state;             /* the solver state output_write_state stored with it (malloc'd), or NULL
                                and 0 when it has none (SPH without lists, older SPH files); older
                                particle-mode files' contact_state datasets are read too */
    size_t state_bytes;
} output_resume;

/* For --resume: the last committed snapshot of an existing output file, its records and the
 * state stored with it. Free with output_resume_free (also after a failure). */
sphsim_status output_read_resume(const char *path, output_resume *r, sphsim_error *e);
void output_resume_free(output_resume *r);

/* For --resume: reopen an existing output for appending after its last committed snapshot
 * (rows of an uncommitted one are cut first). The fields written are those already in the
 * file; `s` is not used to change them. */
sphsim_status output_open_append(output **o, const char *path, const scene *s, const output_run_info *ri,
                                 sphsim_error *e);

/* The sidecar path for an output path. */
void output_xmf_path(const char *h5_path, char *out, size_t out_size);

#endif
