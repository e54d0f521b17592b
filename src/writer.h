/* writer: the snapshot writer thread. The time loop enqueues a snapshot's device-to-host copies
 * without waiting (into one of two host staging buffers), hands the buffer over with the event
 * of its last copy, and goes on stepping; the writer thread waits for that event, puts the
 * particles into id order, counts those outside the tank and writes the snapshot to the output
 * file. With two buffers the loop waits only when it reaches a third snapshot before the writer
 * has finished the first (docs/performance.md, "Output"). While the writer runs, it is the only
 * thread that calls the output module (HDF5 is not thread-safe). */
#ifndef SPHSIM_WRITER_H
#define SPHSIM_WRITER_H

#include <stdio.h>

#include "device.h"
#include "gauges.h"
#include "output.h"
#include "particles.h"
#include "scene.h"
#include "status.h"

typedef struct snapshot_writer snapshot_writer;

/* One snapshot handed to the writer. */
typedef struct snapshot_job {
    cl_event ready; /* completes when the staging buffer holds the snapshot (owned) */
    double time;    /* s */
    long step;
    long n_contacts; /* -1: not counted */
    long put_backs;  /* wall put-backs counted on the device in this run so far */
    void *state;     /* solver state stored with the snapshot (owned, may be NULL) */
    size_t state_bytes;
    gauge_block *gauges; /* the gauges' rows up to this snapshot's step (owned, may be NULL) */
} snapshot_job;

/* Start the writer thread. `staging[2]`: the host buffers in device order the snapshots are
 * copied into (not owned; staging[1] NULL: one buffer, which each snapshot waits for); `hp`: the host particles, id order, the writer scatters into (not
 * owned; the caller must not touch it while snapshots are in flight); `log`: warnings (may be
 * NULL); `outside_base`: particles found outside before this run (--resume); `threads`: of the
 * id order (tuning.writer_threads, TUNE_AUTO for the default). */
sphsim_status writer_start(snapshot_writer **out, output *o, const scene *s, particles *staging[2], particles *hp,
                           FILE *log, int log_is_tty, long outside_base, int threads, sphsim_error *e);

/* The staging buffer the next snapshot goes into; waits while the writer still uses it.
 * Fails with the writer's error once a write has failed. */
sphsim_status writer_acquire(snapshot_writer *w, particles **staging, sphsim_error *e);

/* Hand the buffer returned by writer_acquire over to the writer, with its job (the writer owns
 * job->ready, job->state and job->gauges from here, also on failure). */
void writer_submit(snapshot_writer *w, const snapshot_job *job);

/* Wait until every submitted snapshot is written (or failed); the first failure, if any. */
sphsim_status writer_drain(snapshot_writer *w, sphsim_error *e);

/* The parts of the writer's time (writer_counts): waiting for the copies from the device;
 * putting the particles in id order (and counting those outside the tank); writing the file
 * (output_write_state: the rows, the commit and its fsyncs, the XDMF sidecar). */
#define WRITER_PHASES 3
/* Snapshots written, particles found outside (this run's count plus outside_base) and seconds
 * the writer thread spent waiting for copies and writing, and (phase_s, NULL to skip) that time
 * in its WRITER_PHASES parts. Call after writer_drain. */
void writer_counts(snapshot_writer *w, long *snapshots, long *n_outside, double *busy_s, double *phase_s);

/* Fluid and sphere particles of p outside the tank box at time `time` (s), as the writer counts
 * them for each snapshot (a moving tank's box where its motion has carried it); p's rows in any
 * order (several MPI ranks count their own and add them up). */
long writer_count_outside(const scene *s, const particles *p, double time);

/* After a snapshot is written: says once on `log` (may be NULL) that the XDMF sidecar could not
 * be rewritten (output_sidecar_problem), and again after it was and then failed anew; *said
 * holds whether it is said. */
void writer_note_sidecar(const output *out, FILE *log, int log_is_tty, int *said);

/* Drain, stop and join the thread, free everything (NULL is fine). */
void writer_stop(snapshot_writer *w);

#endif
