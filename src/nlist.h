/* nlist: Verlet-style neighbour lists with an adaptive skin, rebuilt only when particles have
 * moved far enough (docs/grid.md, "Neighbour lists"). The module owns the lists, their state on
 * the device (kernels/nlist_shared.h, nlist_state), the skin levels, each step's rebuild
 * decision and the host's read of it, the relative-motion check and its list of cells with
 * fluid, the list build, and the restart state. The SPH solver (src/sph.c) reads the lists in
 * its loops (kernels/nlist_loop.h) and reports each step's motion into the state.
 *
 * A step with lists:
 *   nlist_begin_step     enqueues nlist_go: rebuild, keep, or check the relative motion first
 *   nlist_decide         reads the decision (the check runs first if it asks for it); or the
 *   nlist_read_begin/end pair, between which the caller enqueues the kept step's first stage
 *                        (the device keeps working while the read travels)
 *   then, when it rebuilds: the grid, nlist_enqueue_cells (the cells' fluid flags) and the
 *   build, either nlist_enqueue_build or the SPH density program's fused build.
 * Between two nlist_begin_step the particles must move only through the SPH forces stage, which
 * measures their motion for the next decision: after a relative-motion check has kept the lists,
 * the device carries its bound and adds each step's largest displacement, and keeps the lists
 * without the check while the bound allows. A host that writes positions itself must do so before
 * the lists' first check after a rebuild (as the tests do), or force the next step. */
#ifndef SPHSIM_NLIST_H
#define SPHSIM_NLIST_H

#include "device.h"
#include "scene.h"
#include "state.h"
#include "tuning.h"
#include "../kernels/grid_shared.h"
#include "../kernels/nlist_shared.h"

typedef struct nlist nlist;

/* ---- sizes (for memory estimates before any device is open) ---- */

/* Entries per particle's list for scene s. */
unsigned nlist_cap(const scene *s);
/* Buffers the lists of n particles with `cap` entries take, each at most max_alloc bytes: from
 * at least `min_parts` (tuning.list_parts; TUNE_AUTO: 1) up to NLIST_MAX_PARTS, 0 when even that
 * many are too small. */
unsigned nlist_parts(size_t n, unsigned cap, unsigned long long max_alloc, int min_parts);
/* Device bytes of the lists of n particles of scene s, split as a device whose largest buffer is
 * max_alloc bytes would split them (0: one buffer): the entries, each particle's count and build
 * position, the state; and per cell of the lists' grid (n_cells), the relative-motion check's box,
 * the cells' flags and the list of cells with fluid (21 bytes) unless the boxes exceed max_alloc. */
size_t nlist_bytes(const scene *s, size_t n, size_t n_cells, unsigned long long max_alloc, int min_parts);

/* The farthest a particle moves from where the lists were built before they are (NEED_HARD at
 * level 0, the largest skin), in supports, for the scene's skin: min(2 skin, 1/2 + skin). */
double nlist_max_move(double skin);

/* The adaptive skin's levels on device d under tuning t (tuning.skin_levels, auto by device). */
int nlist_skin_levels(const sphsim_tuning *t, const ocl_device *d);

/* ---- the lists of one run ---- */

/* Lists for up to n particles of scene s on d, with the device's defaults resolved from t. The
 * lists' parameters (nlist_params) are uploaded; the first step rebuilds. */
sphsim_status nlist_create(nlist **out, ocl_device *d, const scene *s, size_t n, const sphsim_tuning *t,
                           sphsim_error *e);
void nlist_destroy(nlist *nl);

/* The largest work-group the lists' kernels allow (0: no limit known), and the work-group size
 * they are launched with (the SPH solver's, no larger than that limit). */
size_t nlist_kernel_local_limit(const nlist *nl);
void nlist_set_local(nlist *nl, size_t local);

/* An MPI run's lists (docs/mpi.md): each step's decision takes the inputs that every rank's
 * kernels found (the last step's NEED_* bits and largest displacement, the check's maximum, the
 * build's particles over list_cap), combined over the ranks, so that every rank decides as one
 * device holding every particle would. The ranks' forces stage writes them only for the
 * particles each owns (sph.c, -DSPH_HALO). The decision is read blocking (no read ahead). */
void nlist_set_collective(nlist *nl);
/* After a rebuild's list build, before the forces stage: the particles over list_cap, combined
 * over the ranks (nothing unless collective). */
sphsim_status nlist_combine_built(nlist *nl, sphsim_error *e);

/* Whether every wall particle lies outside the tank box (init.c's shell does), which lets the
 * build look for walls only near the tank's faces. Before the first step. */
sphsim_status nlist_set_walls_outside(nlist *nl, int outside, sphsim_error *e);

/* The build options a program that reads (or builds, NLIST_BUILD_DENSITY) the lists needs:
 * -DNLIST, the layout and the parts (appended to `opts`, a buffer of `size` bytes). */
void nlist_build_options(const nlist *nl, char *opts, size_t size);
/* The lists' kernel arguments as kernels/nlist_loop.h names them (NLIST_READ_ARGS), into
 * args[0 .. 8), pointing into nl (or, nl NULL: no lists, all at *dummy, which must outlive the
 * binding). Returns 8. */
int nlist_args(const nlist *nl, const cl_mem *dummy, karg *args);
/* The state buffer (nlist_state), the check's cell flags and whether they are set for the
 * current grid (a rebuild's fused build reads them), and the `ahead` argument of kernels
 * launched between nlist_read_begin and nlist_read_end (0 otherwise). */
cl_mem nlist_state_buffer(const nlist *nl);
cl_mem nlist_cell_flags(const nlist *nl); /* NULL until nlist_bind */
cl_uint nlist_ahead(const nlist *nl);
/* The lists' capacity in particles, and the parameters uploaded. */
size_t nlist_size(const nlist *nl);
const nlist_params *nlist_get_params(const nlist *nl);
/* Resolved defaults: lists built apart from the densities (tuning.list_build), the read ahead
 * (tuning.go_ahead). */
int nlist_build_apart(const nlist *nl);
int nlist_reads_ahead(const nlist *nl);

/* The grid the lists are built on and the state they are checked against (the last step's
 * output, st->pos_next, read when the check runs), for the relative-motion check and the cells'
 * flags; the solver keeps them until destroyed. Allocates 21 bytes per grid cell (the check's
 * boxes, the flags, the list of cells with fluid); when the boxes would exceed the device's
 * largest buffer, the check and the flags stay off. New flags make the next step rebuild. */
sphsim_status nlist_bind(nlist *nl, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, size_t n_cells,
                         const dev_state *st, sphsim_error *e);

/* ---- a step ---- */

/* Enqueue the step's decision (nlist_go); `force` makes the step rebuild at the level the rules
 * give (the host forces it in every step that writes a snapshot, where a resumed run starts). */
sphsim_status nlist_begin_step(nlist *nl, int force, sphsim_error *e);
/* The decision (blocks): *rebuild = 1 or 0. The relative-motion check runs first when the
 * decision asks for it. */
sphsim_status nlist_decide(nlist *nl, int *rebuild, sphsim_error *e);
/* The decision, read without blocking the device: nlist_read_begin enqueues the check (kernels
 * that return at once unless the decision asks for it) and a non-blocking read of the decision
 * into page-locked memory; the caller then enqueues the first stage of a kept step, with
 * nlist_ahead() as its `ahead` argument (kernels/nlist_loop.h, NLIST_AHEAD_SKIP), on the pair
 * such a step reads; nlist_read_end waits for the read. *rebuild as for nlist_decide; *kept_ahead
 * = 1 when the stage launched ahead is the step's (it keeps the lists), 0 when the caller must
 * enqueue it again after the grid. */
sphsim_status nlist_read_begin(nlist *nl, sphsim_error *e);
sphsim_status nlist_read_end(nlist *nl, int *rebuild, int *kept_ahead, sphsim_error *e);
/* What the step's kernels may take as known (after a decision; both 0 when unknown): it keeps
 * the lists, it rebuilds them, and no particle is over list_cap (the _walk kernels would return
 * at once and need not be launched). */
int nlist_known_kept(const nlist *nl);
int nlist_known_rebuild(const nlist *nl);
int nlist_no_walkers(const nlist *nl);
/* In a step that rebuilds, after the grid: the cells' flags and the list of cells with fluid
 * (nlist_cell_fluid; nothing without nlist_bind). */
sphsim_status nlist_enqueue_cells(nlist *nl, const dev_state *st, cl_mem cell_start, cl_mem cell_end,
                                  cl_mem grid_params_buf, sphsim_error *e);
/* In a step that rebuilds, after nlist_enqueue_cells: the lists of every particle from st->pos
 * (nlist_build), the work-group size `local`. */
sphsim_status nlist_enqueue_build(nlist *nl, const dev_state *st, cl_mem cell_start, cl_mem cell_end,
                                  cl_mem grid_params_buf, size_t local, sphsim_error *e);

/* ---- counters, restart, tests ---- */

/* Rebuilds so far; relative-motion checks run and skipped for the carried bound; the current skin
 * level; particles over list_cap at the last build (each blocks on a small read). */
sphsim_status nlist_rebuilds(nlist *nl, long *rebuilds, sphsim_error *e);
sphsim_status nlist_checks(nlist *nl, long *checks, long *skipped, sphsim_error *e);
sphsim_status nlist_level(nlist *nl, int *level, sphsim_error *e);
sphsim_status nlist_walkers(nlist *nl, long *walkers, sphsim_error *e);

/* Restart state (stored with every snapshot): the skin level of the lists of the step just
 * enqueued (a malloc'd blob; blocks on a small read). nlist_state_restore, before a resumed run's
 * first step, makes that step rebuild at the stored level, as the original run did at the
 * snapshot, so the resumed run continues bit for bit. A blob of another format starts at level 0
 * (SPHSIM_OK); a damaged one fails (SPHSIM_E_IO). */
/* The size of what nlist_state_save returns. */
size_t nlist_state_size(void);
sphsim_status nlist_state_save(nlist *nl, void **blob, size_t *bytes, sphsim_error *e);
sphsim_status nlist_state_restore(nlist *nl, const void *blob, size_t bytes, sphsim_error *e);

/* Tests: the lists of particles 0 .. n-1 as the last build wrote them (blocks): counts[i], and
 * entries[i * list_cap + k] the k-th entry of particle i for k < min(counts[i], list_cap), 0 after. */
sphsim_status nlist_read_lists(nlist *nl, size_t n, uint32_t *counts, uint32_t *entries, sphsim_error *e);
/* Tests: the relative-motion check's cell boxes of the last check (4 floats per cell of the bound
 * grid, centre and half diagonal; w = -1 for a cell the flags give no fluid; blocks). */
sphsim_status nlist_read_check_boxes(nlist *nl, float *boxes, size_t n_cells, sphsim_error *e);
/* Tests: shorten the lists to `cap` entries (<= nlist_cap), so that particles with more
 * neighbours take the fallback walk. */
sphsim_status nlist_set_cap(nlist *nl, unsigned cap, sphsim_error *e);

#endif
