/* solver: the interface the time loop (sim.c) sees of a solver, the same for SPH (sph.c) and for
 * hard-sphere contacts (contact.c). One step:
 *   begin_step   decides whether the step rebuilds the grid (SPH with neighbour lists keeps it
 *                while particles have not moved far enough; otherwise every step rebuilds)
 *   (the time loop rebuilds the grid and gathers the state, or swaps its buffer pairs)
 *   prepare      what a snapshot of this step records besides positions and velocities (SPH:
 *                densities and pressures)
 *   advance      the step's motion: (pos, vel) -> (pos_next, vel_next)
 * and at a snapshot: snapshot (counts), save_state (what --resume needs besides the particles),
 * output_fields (derived per-particle fields), angular_velocity (spheres). Every operation enqueues device work and returns
 * without waiting, unless it says otherwise. */
#ifndef SPHSIM_SOLVER_H
#define SPHSIM_SOLVER_H

#include "grid.h"
#include "state.h"

/* Counts over a run, for its summary. */
typedef struct solver_counters {
    int lists;                /* SPH neighbour lists in use */
    long list_rebuilds;       /* steps that rebuilt the grid and the lists */
    long list_checks;         /* steps that ran the relative-motion check */
    long list_checks_skipped; /* steps that kept the lists on the check's carried bound */
} solver_counters;

typedef struct solver_ops {
    /* *rebuild: this step rebuilds the grid (force: it must, a snapshot step); *prepared: the
     * solver has enqueued the step's prepare on the last step's output already (the caller swaps
     * its buffer pairs, state.h, and skips prepare). May block on a small read. */
    sphsim_status (*begin_step)(void *impl, grid *g, dev_state *st, int force, int *rebuild, int *prepared,
                                sphsim_error *e);
    sphsim_status (*prepare)(void *impl, grid *g, dev_state *st, sphsim_error *e);
    sphsim_status (*advance)(void *impl, grid *g, dev_state *st, sphsim_error *e);
    /* at a snapshot, after prepare: *n_contacts (-1 where it means nothing; may block) */
    sphsim_status (*snapshot)(void *impl, grid *g, dev_state *st, long *n_contacts, sphsim_error *e);
    /* a malloc'd blob (NULL, 0: none); may block */
    sphsim_status (*save_state)(void *impl, grid *g, dev_state *st, void **blob, size_t *bytes, sphsim_error *e);
    /* before the first step of a resumed run, after the upload */
    sphsim_status (*restore_state)(void *impl, dev_state *st, const void *blob, size_t bytes, sphsim_error *e);
    /* the per-particle fields the solver derives, into n-float buffers: rho (kg/m^3) and
     * pressure (Pa); NULL buffers: not wanted; a solver without them leaves them alone */
    sphsim_status (*output_fields)(void *impl, dev_state *st, cl_mem rho, cl_mem pressure, sphsim_error *e);
    sphsim_status (*counters)(void *impl, solver_counters *c, sphsim_error *e); /* blocks */
    void (*destroy)(void *impl);
    /* the angular velocities (rad/s) in sorted order, 3 floats per particle (2D: 0, 0, w_z), into
     * `out` (n * 12 bytes); NULL: the solver has none */
    sphsim_status (*angular_velocity)(void *impl, dev_state *st, cl_mem out, sphsim_error *e);
    /* the size of what save_state returns for n particles (0: none); the output file allocates
     * room for it when it is created */
    size_t (*state_size)(void *impl, size_t n);
    /* before begin_step: the step about to run (its time is step * dt); NULL: nothing to do */
    sphsim_status (*set_step)(void *impl, long step, sphsim_error *e);
} solver_ops;

typedef struct solver {
    const solver_ops *ops;
    void *impl;
} solver;

#endif
