/* sph: host side of the SPH fluid solver: its kernels, arguments and the order of stages.
 * One step (after the grid is built and the state gathered into sorted order):
 *   sph_density   : fluid rho_i = sum_j m_j W(x_i - x_j, h) (over fluid and boundary j), p_i = EOS;
 *                   then boundary p_w, rho_w extrapolated from the fluid (Adami et al. 2012)
 *   sph_forces    : a_i = pressure + viscosity + gravity (+ wall repulsion), then the leapfrog
 *                   update v_next = v + a dt, x_next = x + v_next dt (boundary particles copied)
 * Equations: docs/physics.md.
 * Every kernel is a gather over neighbours: no atomics on floats. */
#ifndef SPHSIM_SPH_H
#define SPHSIM_SPH_H

#include "grid.h"
#include "particles.h"
#include "scene.h"
#include "state.h"
#include "../kernels/sph_shared.h"

typedef struct sph_solver sph_solver;

/* Fill the kernel-side parameters from a resolved scene. */
void sph_params_from_scene(const scene *s, sph_params *p);

/* Prepare host particles before upload: sets the mass of every fluid particle to
 * m = rho0 / sum_lattice W (so that the kernel sum on the initial lattice is exactly rho0; it
 * differs from rho0 dx^dims by the lattice-sum error of the kernel, < 1.1 % for h <= 1.3 dx) and
 * of every boundary particle to m times its lattice volume over dx^dims (init.c fits the wall
 * lattice to the tank), rho = rho0 and pressure = 0; then squeezes fluid resting on the floor to
 * the hydrostatic state (docs/physics.md, "Initial state"). Call after init_generate, before upload. */
sphsim_status sph_prepare(const scene *s, particles *p, sphsim_error *e);

/* Sum of W(|k| dx) over the infinite lattice of spacing dx (1/m^dims), kernel = scene_kernel. */
double sph_lattice_sum(int kernel, int dims, double h, double dx);

/* list_n > 0: with neighbour lists for up to list_n particles (sph_list_bytes of device
 * memory); 0: the loops walk the grid's cells. */
sphsim_status sph_create(sph_solver **out, ocl_device *d, const scene *s, size_t list_n, sphsim_error *e);

/* Neighbour lists (docs/grid.md, "Neighbour lists"): each particle's list holds every particle
 * within support (1 + skin_k), built at a grid rebuild; the SPH loops read it instead of
 * walking cells, and the grid and lists are rebuilt only in the step after some particle moved
 * more than skin_k / 2 from where they were built (unless the relative-motion check,
 * sph_bind_check, shows that no pair can have come skin_k closer). skin_k = grid.skin / 2^k
 * adapts to the flow:
 * lists kept long are rebuilt with a smaller skin, lists outgrown quickly with a larger one.
 * The device decides: sph_begin_step, enqueued first in every step, sets the go word
 * (sph_go_buffer, for grid_set_go) that the grid kernels and the list build read; `force` makes
 * the step rebuild regardless, at the level the rules give (sim.c forces it in every step that
 * writes a snapshot, and the snapshot stores the level, sph_state_save, so that --resume
 * continues bit for bit).
 * Between two sph_begin_step the particles must move only through sph_enqueue_forces (sim.c's
 * steps): after a relative-motion check has kept the lists, the device carries its bound and
 * adds each step's largest displacement, which sph_forces measures, and keeps the lists without
 * the check while the bound allows (kernels/sph_density.cl, sph_list_go). A host that writes
 * positions itself must do so before the lists' first check after a rebuild (as the tests do),
 * or force the next step. */
#define SPH_LIST_MAX_PARTS 4           /* the list may be split over this many buffers (sph_list_parts) */
unsigned sph_list_cap(const scene *s); /* entries per particle */
/* Buffers the lists of n particles with `cap` entries take, each at most max_alloc bytes (1 to
 * SPH_LIST_MAX_PARTS; 0 when even that many are too small). SPHSIM_LIST_PARTS (1-4, tests)
 * raises it. */
unsigned sph_list_parts(size_t n, unsigned cap, unsigned long long max_alloc);
/* Whether the buffers lists need for n particles can be allocated on a device whose largest
 * buffer is max_alloc bytes: the lists in at most SPH_LIST_MAX_PARTS buffers (sph_list_parts),
 * and pos_p's 32-byte records in one, indexed 2 j in 32 bits (n < 2^31). */
int sph_list_buffers_fit(size_t n, unsigned cap, unsigned long long max_alloc);
/* Device bytes of the lists for n particles, split as a device whose largest buffer is
 * max_alloc bytes would split them (0: in one buffer), and the 16 bytes per particle their
 * wider dev_state.pos_p takes (sph_pos_p_bytes). */
size_t sph_list_bytes(const scene *s, size_t n, unsigned long long max_alloc);
/* Bytes per particle of dev_state.pos_p for a solver with (lists != 0) or without neighbour
 * lists: with lists a 32-byte record, (x, p/rho^2) then (v, rho), so that the forces loop's two
 * loads of a neighbour share a sector (kernels/sph_common.h, SPH_NB_REC); without, (x, p/rho^2). */
size_t sph_pos_p_bytes(int lists);
int sph_lists(const sph_solver *s);
cl_mem sph_go_buffer(const sph_solver *s); /* NULL without lists */
sphsim_status sph_begin_step(sph_solver *s, int force, sphsim_error *e);
/* The relative-motion check (kernels/sph_density.cl, sph_list_check): lists are kept while no
 * fluid particle has moved skin_k from where they were built and the relative motion of fluid
 * particles in nearby cells stays below skin_k, although some moved more than skin_k / 2. It
 * reads the kept grid's cell table and the state st (the last step's output: st->pos_next, or
 * st->pos when the device swapped the pairs), which the solver keeps until it is destroyed.
 * Without it (until bound, or with SPHSIM_LIST_CHECK=0) a move of skin_k / 2 rebuilds. sim.c
 * binds it once the grid and state exist. It allocates 21 bytes per grid cell (n_cells): the
 * check's box of displacements per cell (sph_cell_refs), the cell's fluid flag and the list of
 * the cells with fluid, which the list build of sph_enqueue_density fills at each rebuild and
 * reads for that same grid (so the lists must be built on the grid bound here), and which the
 * check reads until the next rebuild (only the cells with fluid get boxes, and only they are
 * visited); new flags make the next step rebuild. Returns
 * the error when that fails; when the boxes would exceed the device's largest buffer, the check
 * and the flags stay off. */
sphsim_status sph_bind_check(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, size_t n_cells,
                             const dev_state *st, sphsim_error *e);
/* The go word of the step sph_begin_step just enqueued (blocks until the device has run it):
 * 1 rebuild, 0 keep; 1 without lists. sim.c reads it every step by default: the wait costs
 * less than the launches a kept step would otherwise still make (docs/grid.md). Read with it,
 * the count of particles over list_cap: a step that keeps the lists then runs
 * sph_density_kept (no list-build code) and, when none is over, no _walk kernels; a step that
 * rebuilds them runs, on GPUs, sph_lists_build and then sph_density_kept and
 * sph_density_walk_built on the new lists (lists_apart in sph.c, docs/grid.md). */
sphsim_status sph_read_go(sph_solver *s, int *go, sphsim_error *e);
/* sph_read_go with the device kept busy while the host waits (SPHSIM_GO_AHEAD, sim.c): enqueues
 * the relative-motion check (which returns at once on the device unless the go word asks for
 * it), a read of the decision that does not block, and then the density stage of a step that
 * keeps the lists, on the pair such a step reads (st's pos_next and vel_next, the last step's
 * output; kernels that return at once unless the go word keeps the lists, SPH_AHEAD_SKIP_),
 * and only then waits for the read. *done = 1: the step keeps the lists and its density stage
 * is enqueued (the caller swaps its handles and does not call sph_density); otherwise, as after
 * sph_read_go. The grid's buffers as for sph_enqueue_density. Without lists, or with the pairs
 * swapped on the device: sph_read_go. */
sphsim_status sph_read_go_ahead(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                const dev_state *st, int *go, int *done, sphsim_error *e);
/* Buffer pairs (docs/grid.md, "Neighbour lists": the device decides). On: a step that keeps
 * the grid swaps, on the device, which of (pos, vel) and (pos_next, vel_next) the kernels read
 * and which sph_forces writes (GO_ALT in the go word), so nothing is copied and the host never
 * waits; the grid's keys and gathers then take both pairs (sim.c, SPHSIM_GO_ON_HOST=0). Off
 * (the default): the go word never gets GO_ALT, for a host that reads each decision and swaps
 * its own handles (sph_read_go). */
void sph_set_swap_on_device(sph_solver *s, int on);
/* Make the handles name the pairs as the device uses them: after the last enqueued step's
 * density stage has run (blocks on a small read), swap st->pos <-> st->pos_next and st->vel <->
 * st->vel_next if GO_ALT is set, and clear it; nothing (no read) while the device does not swap
 * the pairs. The host calls it before it reads the state (sim.c: at snapshots, after a
 * failure). */
sphsim_status sph_sync_pairs(sph_solver *s, dev_state *st, sphsim_error *e);
/* Tests: the relative-motion check's cell boxes of the last check as the check reads them
 * (kernels/sph_density.cl, sph_cell_refs: 4 floats per cell of the bound grid, centre and half
 * diagonal; w = -1 for a cell that the kept grid's flags give no fluid; blocks). Fails unless the
 * check is on and n_cells is the bound grid's. */
sphsim_status sph_read_check_boxes(sph_solver *s, float *boxes, size_t n_cells, sphsim_error *e);
/* Tests: the neighbour lists of particles 0 .. n-1 as the last build wrote them (blocks):
 * counts[i], and entries[i * sph_get_params(s)->list_cap + k] the k-th entry of particle i for
 * k < min(counts[i], list_cap), 0 after. Fails without lists or for n over the lists' size. */
sphsim_status sph_read_lists(sph_solver *s, size_t n, uint32_t *counts, uint32_t *entries, sphsim_error *e);
/* Tests: shorten the lists to `cap` entries (<= sph_list_cap), so that particles with more
 * neighbours take the fallback walk. */
sphsim_status sph_set_list_cap(sph_solver *s, unsigned cap, sphsim_error *e);
/* The masses of the particles in the solver's parameters (before the first step; `pos` (4
 * floats each), `type` and `mass` of n particles, any order): the forces loop takes a
 * neighbour's mass from these, by whether it is a wall, instead of loading it
 * (kernels/sph_forces.cl). Also notes whether every wall particle lies outside the tank box
 * (init.c's shell does), which lets the list build look for walls only near the tank's faces.
 * Fails (SPHSIM_E_SCENE, naming both masses) unless every fluid particle has one mass and every
 * wall particle one, as sph_prepare sets them (sim.c calls it with sph_prepare's masses, also
 * on --resume). */
sphsim_status sph_set_masses(sph_solver *s, const float *pos, const float *mass, const uint8_t *type, size_t n,
                             sphsim_error *e);
/* Grid and list rebuilds so far (blocks on a small read; 0 without lists). */
sphsim_status sph_list_rebuilds(sph_solver *s, long *rebuilds, sphsim_error *e);
/* Particles over list_cap, which the fallback walk takes, counted by the list builds since the
 * last rebuild sph_list_go decided (blocks; 0 without lists; after sph_set_list_cap, at least 1
 * until the next such rebuild; sph_enqueue alone, which runs no sph_list_go, keeps adding). */
sphsim_status sph_list_walkers(sph_solver *s, long *walkers, sphsim_error *e);
/* Steps that ran the relative-motion check, and steps that kept the lists without it, since
 * the bound carried from the last check stayed under the skin (sph_list_go; blocks; 0 without
 * lists). */
sphsim_status sph_list_checks(sph_solver *s, long *checks, long *skipped, sphsim_error *e);
/* Skin level k of the current lists: their skin is grid.skin / 2^k (blocks; 0 without lists). */
sphsim_status sph_list_level(sph_solver *s, int *level, sphsim_error *e);
/* Restart state (sim.c stores it with every snapshot, output_write_state): the skin level of
 * the lists of the step just enqueued (sph_state_save: a malloc'd blob, NULL and 0 bytes
 * without lists; blocks on a small read). sph_state_restore, before a resumed run's first step,
 * makes that step rebuild at the stored level, as the original run did at the snapshot, so the
 * resumed run continues bit for bit. A blob of another format starts at level 0 (SPHSIM_OK); a
 * damaged one fails (SPHSIM_E_IO). */
sphsim_status sph_state_save(sph_solver *s, void **blob, size_t *bytes, sphsim_error *e);
sphsim_status sph_state_restore(sph_solver *s, const void *blob, size_t bytes, sphsim_error *e);
void sph_destroy(sph_solver *s);

/* The two halves of a step, enqueued separately so that sim.c can write a snapshot whose
 * density belongs to its positions: sph_density writes rho into the w components of st->vel
 * (-rho for walls) and (x, p/rho^2) into st->pos_p from st->pos (sorted; pos.w holds each
 * particle's mass; the forces loop takes a neighbour's from sph_set_masses);
 * sph_forces computes accelerations and the leapfrog update into pos_next/vel_next.
 * sph_step = sph_density + sph_forces. None of them blocks the host. */
sphsim_status sph_density(sph_solver *s, grid *g, dev_state *st, sphsim_error *e);
sphsim_status sph_forces(sph_solver *s, grid *g, dev_state *st, sphsim_error *e);
sphsim_status sph_step(sph_solver *s, grid *g, dev_state *st, sphsim_error *e);

/* sph_density + sph_forces with explicit neighbour buffers instead of a grid: cell_start and
 * cell_end (uint per cell, linear cell index cx + nx (cy + ny cz)) and a __constant grid_params
 * buffer. Tests build these on the host, which isolates the SPH from the device grid. With
 * neighbour lists the forces take a fluid particle's own x, v, rho and p/rho^2 from the record
 * (st->pos_p) that the density stage wrote, as its neighbours do: a host that writes positions
 * or velocities between the two must write the records' x and v too. */
sphsim_status sph_enqueue(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, dev_state *st,
                          sphsim_error *e);
sphsim_status sph_enqueue_density(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                  dev_state *st, sphsim_error *e);
sphsim_status sph_enqueue_forces(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                 dev_state *st, sphsim_error *e);

/* The parameters the solver uploaded. */
const sph_params *sph_get_params(const sph_solver *s);

/* Enqueue, for output: unpack rho (float, kg/m^3) from st->vel's w and fill pressure (float, Pa)
 * with EOS(rho), in sorted order. rho and pressure are n-float buffers (scratch will do). */
sphsim_status sph_pressure(sph_solver *s, const dev_state *st, cl_mem rho, cl_mem pressure, sphsim_error *e);

#endif
