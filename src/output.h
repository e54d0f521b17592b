/* output: the HDF5 snapshot writer (time-stepped VTKHDF PolyData) and its XDMF sidecar.
 * Crash safety: the file is laid out for the whole run when it is created; a snapshot's data is
 * written into that space and made durable first, then the step count (the commit point) is
 * rewritten in place (output.c). */
#ifndef SPHSIM_OUTPUT_H
#define SPHSIM_OUTPUT_H

#include "particles.h"
#include "scene.h"

typedef struct output output;

typedef struct output_run_info {
    const char *version;     /* sphsim version */
    const char *device_name; /* OpenCL device */
    const char *start_time;  /* ISO 8601 UTC */
    size_t state_bytes;      /* the solver state stored with each snapshot (output_write_state), bytes; 0: none.
                                Its datasets are allocated with the layout. */
} output_run_info;

/* Snapshots a run of scene s writes (the rows every dataset of its output file is created with). */
long output_snapshots(const scene *s);
/* The size of the output file of scene s, bytes, with a solver state of `state_bytes` per
 * snapshot: exact for its raw data, which the file allocates in full when it is created, plus
 * an allowance for HDF5's metadata (within a few KB). */
double output_file_bytes(const scene *s, size_t state_bytes);

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

/* Why the XDMF sidecar could not be rewritten with the snapshots since it last was (the message
 * of the first failure), or NULL when it names every committed snapshot. A failure there does
 * not fail output_write_state: `sphsim --resume` of the finished file writes the sidecar again. */
const char *output_sidecar_problem(const output *o);

/* Parallel HDF5 (the MPI build on several ranks, docs/mpi.md): every rank opens `path`, which
 * rank 0 has created (output_open) or reopened (output_open_append) and closed before, with
 * MPI-IO (collective: every rank calls it, on MPI_COMM_WORLD). Each snapshot is then written
 * by output_write_share on every rank, and output_close closes it on every rank. */
sphsim_status output_open_parallel(output **o, const char *path, const scene *s, sphsim_error *e);

/* A snapshot of a parallel output, on every rank at once (collective): this rank's rows, p->n
 * of them, of the particles `ids` (ascending; over the ranks every particle once) in that
 * order, written at their id positions in one collective transfer per dataset; the restart
 * device order is stored as id order. The rest (the records in si, the solver state, gauge rows
 * from output_write_gauges, the commit, the sidecar) is rank 0's: every rank passes the same
 * si, state_bytes and gauge row counts, and only rank 0's state bytes and gauge values are
 * written (the others may pass state NULL). The commit protocol is output_write_state's. */
sphsim_status output_write_share(output *o, const particles *p, const uint32_t *ids, const output_snapshot_info *si,
                                 const void *state, size_t state_bytes, sphsim_error *e);

/* A solver state written by every rank, each its own bytes of it (particle mode: the rows of the
 * spheres it owns): `bytes` of it in all, of which this rank holds run[2 j] .. run[2 j] +
 * run[2 j + 1] - 1 (ascending, disjoint) of n_runs runs, their bytes in `data` in that order. */
typedef struct output_state_share {
    const void *data;
    const uint64_t *run;
    size_t n_runs, bytes;
} output_state_share;

/* output_write_share with the solver state in shares (every rank passes the same bytes and its
 * own runs; over the ranks every byte once): one collective transfer instead of rank 0's. */
sphsim_status output_write_shares(output *o, const particles *p, const uint32_t *ids, const output_snapshot_info *si,
                                  const output_state_share *state, sphsim_error *e);

/* Whether the particle rows of the last output_write_share went as collective MPI-IO (1), fell
 * back to independent I/O (0) or cannot be told (-1: serial file, or nothing written yet). */
int output_io_collective(const output *o);

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

/* For --resume: reopen an existing output (of the current layout version, laid out for the
 * run: see output_relayout) for appending after its last committed snapshot (rows of an
 * uncommitted one are written over). The fields written are those already in the file; `s` is
 * not used to change them. */
sphsim_status output_open_append(output **o, const char *path, const scene *s, const output_run_info *ri,
                                 sphsim_error *e);

/* For --resume of `path` with scene s (the stored scene, perhaps with a later time.end):
 * whether the file must be laid out again first (*relayout: a file of an older layout version,
 * or one laid out for fewer snapshots than s writes), and the committed snapshots to keep
 * (*keep; -1: all; fewer when the last one lies off s's snapshot grid, at the shorter run's
 * last step). */
sphsim_status output_resume_check(const char *path, const scene *s, long *keep, int *relayout, sphsim_error *e);
/* Lay `path` out again for scene s: a new file of s's whole run under a temporary name
 * (`path`.relayout), the first `keep` committed snapshots (-1: all), their records, restart
 * rows and provenance copied into it, then renamed over `path` (a kill before leaves the old
 * file as it was). */
sphsim_status output_relayout(const char *path, const scene *s, long keep, sphsim_error *e);

/* The sidecar path for an output path. */
void output_xmf_path(const char *h5_path, char *out, size_t out_size);

#endif
