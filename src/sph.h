/* sph: host side of the SPH fluid solver: its parameters, the particles' masses, its programs and
 * the order of its stages. One step, after the grid is built (or kept) and the state gathered into
 * sorted order:
 *   density   kernels/sph_density.cl:  fluid rho_i = sum_j m_j W(x_i - x_j, h), p_i = EOS(rho_i)
 *             kernels/sph_boundary.cl: walls' p_w and rho_w extrapolated from the fluid
 *   forces    kernels/sph_forces_integrate.cl: a_i = pressure + viscosity + gravity (+ the tank
 *             faces' barrier), then the leapfrog update into pos_next/vel_next
 * With neighbour lists (src/nlist.c, which the solver owns) the loops read the lists and the
 * forces stage measures each particle's motion for the next rebuild decision. Every kernel is a
 * gather over neighbours: no atomics on floats. Equations: docs/physics.md. */
#ifndef SPHSIM_SPH_H
#define SPHSIM_SPH_H

#include "grid.h"
#include "nlist.h"
#include "particles.h"
#include "scene.h"
#include "solver.h"
#include "state.h"
#include "tuning.h"
#include "../kernels/sph_shared.h"

typedef struct sph_solver sph_solver;

/* Fill the kernel-side parameters from a resolved scene. */
void sph_params_from_scene(const scene *s, sph_params *p);

/* The mass of every fluid particle, m = rho0 / sum_lattice W (kg; 0 for a scene without a valid
 * kernel sum): the kernel sum on the initial lattice is then exactly rho0 (it differs from
 * rho0 dx^dims by the lattice-sum error of the kernel, < 1.1 % for h <= 1.3 dx). */
double sph_fluid_mass(const scene *s);

/* Host particles' SPH state on the lattice (init_generate calls it): every fluid particle gets
 * sph_fluid_mass, every boundary particle that times its lattice volume over dx^dims (init.c fits
 * the wall lattice to the tank), rho = rho0 and pressure = 0. */
sphsim_status sph_prepare(const scene *s, particles *p, sphsim_error *e);

/* Sum of W(|k| dx) over the infinite lattice of spacing dx (1/m^dims), kernel = scene_kernel. */
double sph_lattice_sum(int kernel, int dims, double h, double dx);

/* Bytes per particle of dev_state.pos_p for a solver of scene s (NULL: any summation density)
 * with (lists != 0) or without neighbour lists: with lists, or with an integrated density
 * (whose density stage leaves the state's vel alone), a 32-byte record, (x, p/rho^2) then
 * (v, rho), so that the forces loop's two loads of a neighbour share a sector
 * (kernels/sph_common.h, SPH_NB_X_); else (x, p/rho^2). sph_solver_record_bytes: a solver's. */
size_t sph_record_bytes(const scene *s, int lists);
size_t sph_solver_record_bytes(const sph_solver *s);

/* The solver integrates the density (scene.density continuity). Its density stage advances the
 * state's density over the last step, except before the solver's first step, which takes the
 * density it was given (a new run's, or the snapshot's on --resume); sph_set_advance(s, 1) makes
 * the next density stage advance it (tests of one step). */
int sph_density_integrated(const sph_solver *s);
void sph_set_advance(sph_solver *s, int advance);
/* Device bytes that neighbour lists for n particles take on top of a run without them: the lists
 * (nlist_bytes, for a grid of n_cells cells, split as a device whose largest buffer is max_alloc
 * bytes would split them, 0: one buffer) and the wider pos_p records. */
size_t sph_list_bytes(const scene *s, size_t n, size_t n_cells, unsigned long long max_alloc, int min_parts);
/* Whether the buffers that lists for n particles need can be allocated on a device whose largest
 * buffer is max_alloc bytes: the lists in at most NLIST_MAX_PARTS buffers (nlist_parts), and
 * pos_p's 32-byte records in one, indexed 2 j in 32 bits (n < 2^31). */
int sph_lists_fit(size_t n, unsigned cap, unsigned long long max_alloc, int min_parts);

/* list_n > 0: with neighbour lists for up to list_n particles (sph_list_bytes of device memory);
 * 0: the loops walk the grid's cells. Tuning t (NULL: defaults) resolves the device's defaults. */
sphsim_status sph_create(sph_solver **out, ocl_device *d, const scene *s, size_t list_n, const sphsim_tuning *t,
                         sphsim_error *e);
void sph_destroy(sph_solver *s);

/* The solver's parameters as uploaded, and its lists (NULL without). */
const sph_params *sph_get_params(const sph_solver *s);
/* The build options of its programs (scheme, records, lists; kernels/sph_common.h), which other
 * programs that read its state take (src/gauges.c), and its __constant sph_params buffer. */
const char *sph_build_options(const sph_solver *s);
cl_mem sph_params_buffer(const sph_solver *s);
/* The moving bodies of the current step (motion_dev; the first MOTION_MAX_BODIES records are at
 * the step's time), or a placeholder when nothing moves. */
cl_mem sph_motion_buffer(const sph_solver *s);
nlist *sph_nlist(const sph_solver *s);

/* The masses of the particles in the solver's parameters (before the first step; `pos` (4 floats
 * each), `type` and `mass` of n particles, any order): the forces loop takes a neighbour's mass
 * from these, by whether it is a wall, instead of loading it (kernels/sph_forces_integrate.cl).
 * Also tells the lists whether every wall particle lies outside the tank box (init.c's shell
 * does), which lets their build look for walls only near the tank's faces. Fails (SPHSIM_E_SCENE,
 * naming both masses) unless every fluid particle has one mass and every wall particle one, as
 * sph_prepare sets them (sim.c calls it with sph_prepare's masses, also on --resume). */
sphsim_status sph_set_masses(sph_solver *s, const float *pos, const float *mass, const uint8_t *type, size_t n,
                             sphsim_error *e);

/* The stages, on explicit neighbour buffers: cell_start and cell_end (uint per cell, linear cell
 * index cx + nx (cy + ny cz)) and a __constant grid_params buffer (the grid's, or tests' own).
 * sph_enqueue_density writes rho into the w components of st->vel (-rho for walls) and
 * (x, p/rho^2) into st->pos_p from st->pos (sorted; pos.w holds each particle's mass), and with
 * lists in a step that rebuilds them builds them first; sph_enqueue_forces computes accelerations
 * and the leapfrog update into pos_next/vel_next; sph_enqueue does both. None of them blocks the
 * host. With neighbour lists the forces take a fluid particle's own x, v, rho and p/rho^2 from
 * the record (st->pos_p) that the density stage wrote, as its neighbours do: a host that writes
 * positions or velocities between the two must write the records' x and v too. Without
 * sph_begin_step (tests) every call rebuilds the lists. */
sphsim_status sph_enqueue_density(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                  dev_state *st, sphsim_error *e);
sphsim_status sph_enqueue_forces(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                 dev_state *st, sphsim_error *e);
sphsim_status sph_enqueue(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, dev_state *st,
                          sphsim_error *e);

/* The force gauges' sums of the fluid's pressure force on gauged walls (src/gauges.c), which the
 * boundary stage adds up in the steps that measure (kernels/sph_boundary.cl, the _measure
 * kernels). A wall particle's slot: tank_slot for ids below first_obj (the tank's walls),
 * obj_slot[id - first_obj] (n_obj bytes) for the objects' boundary particles; slots >= n_slots
 * (at most 32) are not gauged. Moments about centre (m). */
sphsim_status sph_measure_setup(sph_solver *s, cl_uint first_obj, cl_uint tank_slot, const uint8_t *obj_slot,
                                size_t n_obj, cl_uint n_slots, const double centre[3], sphsim_error *e);
/* on: the density stages enqueued from now on measure (off: they do not; the default). */
void sph_measure(sph_solver *s, int on);
/* Only walls with lo <= x[axis] < hi add to the force gauges' sums (an MPI rank's slab: the ranks'
 * sums then add up to the whole run's; docs/mpi.md); every wall after sph_measure_setup. */
void sph_measure_own(sph_solver *s, int axis, float lo, float hi);
/* The partial sums the last measuring boundary stage enqueued: *rows rows of 2 n_slots float4,
 * (sum F, 0) and (sum M, 0) of each slot in turn. */
cl_mem sph_measured(const sph_solver *s, cl_uint *rows);

/* The neighbour lists' grid and the state they are checked against (nlist_bind; nothing
 * without lists). */
sphsim_status sph_bind_grid(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, size_t n_cells,
                            const dev_state *st, sphsim_error *e);

/* The start of a step (nothing to do without lists: *rebuild = 1): the lists' decision
 * (nlist_begin_step, `force` for a step that must rebuild), read by the host; *rebuild = 1 when
 * the step rebuilds the grid. On a device that reads the decision ahead (tuning.go_ahead), the
 * density stage of a step that keeps the lists is enqueued before the host waits for the read,
 * on the pair such a step reads (st's pos_next and vel_next, the last step's output), so that the
 * device works meanwhile; *density_done = 1 then: the caller swaps its handles (state.h) and does
 * not enqueue the density stage again. The grid's buffers as for sph_enqueue_density. */
sphsim_status sph_begin_step(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                             const dev_state *st, int force, int *rebuild, int *density_done, sphsim_error *e);

/* Enqueue, for output: unpack rho (float, kg/m^3) from st->vel's w and fill pressure (float, Pa)
 * with EOS(rho), in sorted order. rho and pressure are n-float buffers (scratch will do). */
sphsim_status sph_pressure(sph_solver *s, const dev_state *st, cl_mem rho, cl_mem pressure, sphsim_error *e);

/* Restart state (the lists' skin level; NULL and 0 bytes without lists): nlist_state_save and
 * nlist_state_restore. */
/* Moving walls (scene "motion"): the bodies' motion at step `step`'s time and the next step's,
 * uploaded for the step's stages without waiting (a no-op for a scene that does not move). The
 * time loop calls it before each step's begin (solver.h, set_step). */
sphsim_status sph_set_step(sph_solver *s, long step, sphsim_error *e);

/* The size of what sph_state_save returns (0: none). */
size_t sph_state_size(const sph_solver *s);
sphsim_status sph_state_save(sph_solver *s, void **blob, size_t *bytes, sphsim_error *e);
sphsim_status sph_state_restore(sph_solver *s, const void *blob, size_t bytes, sphsim_error *e);

/* The SPH solver of a run behind the time loop's interface (solver.h): sph_create, the masses of
 * the host particles p (sph_set_masses) and the lists' grid g and state st (sph_bind_grid). *out
 * owns the solver from its creation on, also when a later part fails. */
sphsim_status sph_solver_open(solver *out, ocl_device *d, const scene *s, size_t list_n, const sphsim_tuning *t,
                              const particles *p, grid *g, const dev_state *st, sphsim_error *e);

#endif
