/* gauges: the scene's gauges (scene.gauges) measured on the device, batched and read back
 * without stalling the steps (docs/physics.md, "Gauges"; kernels/gauges.cl).
 *
 * At a step that samples (gauges_sample, after the step's density stages) the probes, the walls'
 * forces and one row per due gauge are computed into a chunk buffer on the device; nothing waits.
 * gauges_take hands the rows since the last take to the caller as a block whose copy to the host
 * is enqueued (non-blocking, with its event): the writer thread waits for the event and writes
 * the rows with the snapshot they belong to. A chunk that would overflow is taken into an inner
 * list first, so that any number of steps may pass between snapshots. */
#ifndef SPHSIM_GAUGES_H
#define SPHSIM_GAUGES_H

#include "device.h"
#include "grid.h"
#include "scene.h"
#include "sph.h"
#include "state.h"

typedef struct gauges gauges;

/* Rows of every gauge for the steps [step0, step1), as copied from the device. */
typedef struct gauge_block {
    cl_event ready; /* the copy into data is done (owned; NULL once waited for) */
    long step0, step1;
    float *data; /* gauge k's rows at offset[k], rows[k] rows of cols[k] floats */
    size_t *offset;
    long *rows;
    struct gauge_block *next;
} gauge_block;

/* The columns (floats per row, the time aside) of gauge g of scene s, their names and units
 * (comma-separated: "p" / "Pa", ...). */
int gauge_cols(const scene *s, const scene_gauge *g);
const char *gauge_col_names(const scene *s, const scene_gauge *g);
const char *gauge_col_units(const scene *s, const scene_gauge *g);
/* Rows of gauge g in a run that ends at step `last` (its samples at steps 0, every, 2 every, ...). */
long gauge_rows_to(const scene_gauge *g, long last);

/* The gauges of scene s (none: *out = NULL), built with the SPH solver sol's options and reading
 * its parameters; its boundary stage sums the walls' forces for the force gauges
 * (sph_measure_setup). Each chunk holds the rows of up to chunk_steps steps. first_step: the step
 * the run starts at; a resumed run's first step was sampled before (its rows are in the file) and
 * is not sampled again. */
sphsim_status gauges_create(gauges **out, ocl_device *d, const scene *s, sph_solver *sol, long first_step, int resumed,
                            long chunk_steps, sphsim_error *e);
void gauges_destroy(gauges *g);

/* Before the density stages of `step` are enqueued (its begin_step): tells the solver whether
 * they sum the walls' forces, that is whether a force gauge samples the step. */
void gauges_before_step(gauges *g, long step);

/* Enqueue the measurements of `step` if a gauge samples it (nothing otherwise). The grid's
 * tables (cell_start, cell_end, the grid's parameters) and the state st as the step's density
 * stages left them (for a force gauge, stages enqueued after gauges_before_step(g, step)). */
sphsim_status gauges_sample(gauges *g, long step, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                            const dev_state *st, sphsim_error *e);

/* The rows of the steps before step1 not taken yet, as a list of blocks (NULL: none), whose
 * copies are enqueued. The caller owns the list (gauge_blocks_wait, gauge_blocks_free). */
sphsim_status gauges_take(gauges *g, long step1, gauge_block **out, sphsim_error *e);

/* Only walls with lo <= x[axis] < hi add to the force gauges (an MPI rank's slab). */
void gauges_own(gauges *g, int axis, float lo, float hi);

/* Wait for every block's copy. */
sphsim_status gauge_blocks_wait(gauge_block *b, sphsim_error *e);
void gauge_blocks_free(gauge_block *b);

#endif
