/* sim: the time loop. Builds the initial state, moves it to the device, and per step
 * rebuilds the grid, gathers the state into sorted order and runs the solver; at output
 * times reads the state back (in particle-id order) and hands it to the writer; checks for
 * NaN, runaway and lost particles; reports progress; stops cleanly on SIGINT/SIGTERM. */
#ifndef SPHSIM_SIM_H
#define SPHSIM_SIM_H

#include <signal.h>
#include <stdio.h>

#include "device.h"
#include "grid.h"
#include "scene.h"
#include "tuning.h"
#include "writer.h"

typedef enum { PROGRESS_AUTO = 0, PROGRESS_PLAIN, PROGRESS_JSON, PROGRESS_NONE } sim_progress;

typedef struct sim_options {
    const char *out_path;        /* output .h5 */
    int overwrite;               /* replace an existing output */
    const char *resume_path;     /* continue this output (out_path == resume_path) */
    const char *device;          /* device selector (NULL: automatic) */
    sim_progress progress;       /* progress reporting on `log` */
    int stats;                   /* measure neighbour statistics at each snapshot */
    int profile;                 /* per-stage timing through OpenCL profiling events */
    FILE *log;                   /* human messages (stderr); NULL = silent */
    volatile sig_atomic_t *stop; /* set to the signal number to stop after the current step */
    const sphsim_tuning *tune;   /* tuning knobs (NULL: defaults) */
} sim_options;

typedef struct sim_result {
    char device_name[256];
    long n_particles, n_fluid, n_boundary, n_spheres;
    /* device memory the run's buffers took (every buffer allocated, most at the start, the contact
     * solver's scratch at its first step) */
    size_t device_bytes;
    long steps;                              /* steps taken in this run */
    long last_step;                          /* step index reached */
    double sim_time;                         /* s */
    double wall_time;                        /* s */
    long snapshots;                          /* snapshots written in this run */
    long n_outside;                          /* particles found outside the tank */
    int lists;                               /* the SPH loops used neighbour lists (grid.neighbour_list) */
    int contact_cache;                       /* particle mode: the contact geometry cache was on */
    long list_rebuilds;                      /* with lists: steps that rebuilt the grid and the lists */
    long list_checks, list_checks_skipped;   /* with lists: steps that ran the relative-motion
                               check, and that kept the lists on the bound carried from the last
                               check without running it (nlist_checks) */
    double mean_neighbours, mean_candidates; /* when stats */
    double t_output;                         /* s the time loop spent on snapshots: enqueueing their copies, waiting
                               for a free staging buffer and for the last snapshots at the end */
    double t_writer;                         /* s the writer thread spent waiting for copies and writing */
    double t_writer_phase[WRITER_PHASES];    /* t_writer split: copies, id order, file (writer.h) */
    double t_steps;                          /* --profile: s of host time of steps_timed steps alone (no snapshot) */
    long steps_timed;
    device_prof_entry prof[32]; /* per-kernel device time, when profile */
    int n_prof;
    int stop_signal; /* signal that stopped the run, or 0 */
    /* MPI, when the particles are exchanged (docs/mpi.md): ranks, the times the slab cuts moved,
     * and the particles every rank held at the end (owned and halo) over the run's */
    int mpi_ranks;
    long mpi_recuts;
    long mpi_exchanges; /* the particles' exchanges through the host (every step, or at the lists' rebuilds) */
    double mpi_held;
    /* several ranks: whether the last snapshot's particle rows went to the file as collective
     * MPI-IO (1), fell back to independent I/O (0), or no snapshot was written (-1); and the rows
     * rank 0 wrote of it (the particles it owned) */
    int mpi_io_collective;
    long mpi_io_rows;
} sim_result;

/* The neighbour grid of scene s (lists: with SPH neighbour lists, whose cells are
 * max(cell_ratio, 1) (1 + skin) times the support radius). */
sphsim_status sim_grid_geometry(const scene *s, int lists, grid_params *gp, sphsim_error *e);

/* Device bytes needed for n particles of scene s (estimate used by --check and before runs). */
size_t sim_device_bytes(const scene *s);

/* Estimated peak host memory (bytes) of a run of scene s: the larger of the initial state's
 * arrays and the run's snapshot arrays (only those of the output fields; one staging buffer
 * where two would take more than half the host's memory). A run that needs more than the host
 * has is refused before any particle is generated. */
size_t sim_host_bytes(const scene *s, const sphsim_tuning *t);
/* Device bytes the SPH neighbour lists of n particles take on top (sph_list_bytes on the lists'
 * grid, split as a device whose largest buffer is max_alloc bytes would split them, 0: one buffer;
 * t: tuning, NULL for the defaults). */
size_t sim_list_bytes(const scene *s, size_t n, unsigned long long max_alloc, const sphsim_tuning *t);

/* Run the scene. Returns SPHSIM_E_INTERRUPTED when stopped by a signal (r->stop_signal). */
sphsim_status sim_run(const scene *s, const sim_options *o, sim_result *r, sphsim_error *e);

#endif
