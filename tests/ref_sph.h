/* ref_sph: plain-C double-precision brute-force reference of one SPH step (the same equations as
 * kernels/sph_forces_integrate.cl, over all pairs), host-built neighbour structures (linear-cell sort and
 * cell table) so the SPH kernels can be tested without the device grid, and small test scenes
 * (a fluid block in a box tank with boundary layers). */
#ifndef SPHSIM_REF_SPH_H
#define SPHSIM_REF_SPH_H

#include <stddef.h>
#include <stdint.h>

#include "particles.h"
#include "motion.h"
#include "scene.h"
#include "../kernels/grid_shared.h"

/* A grid over [lo, hi] with cell size = radius (reach 1), filling every grid_params field the
 * neighbour loop reads (origin, cell_size(_inv), radius, ncell, n_cells, reach, dims). */
void ref_sph_grid_params(int dims, const double lo[3], const double hi[3], double radius, grid_params *gp);

/* Linear cell index cx + nx (cy + ny cz) of a position (4 floats), clamped into the grid exactly
 * like kernels/neighbours.h. */
uint32_t ref_sph_cell_index(const grid_params *gp, const float *x4);

/* Stable counting sort of n particles by linear cell. order[k] = index (in `pos4` order) of the
 * k-th sorted particle; cell_start/cell_end get gp->n_cells entries ([start, end) in sorted order).
 * Returns 0, or -1 when out of memory. */
int ref_sph_sort(const grid_params *gp, size_t n, const float *pos4, uint32_t *order, uint32_t *cell_start,
                 uint32_t *cell_end);

/* One SPH step of every particle of `p` (any order), brute force over all pairs, in double:
 * fluid density and pressure, boundary pressure extrapolated from the fluid (Adami et al. 2012),
 * forces and the kick-drift update.
 * Outputs (n each; pos_next/vel_next 4 per particle): density, pressure, positions and
 * velocities after the step, and the FLAG_* bits the device would set. With
 * s->density == DENSITY_CONTINUITY the fluid's density is p->rho (the state) advanced over the
 * step that brought the particles here (continuity and diffusion), which vel_next's fourth
 * component carries on; else that component is 0. */
void ref_sph_step(const scene *s, const particles *p, double *rho, double *pressure, double *pos_next, double *vel_next,
                  unsigned *flags);

/* The same step at time t with the tank's motion (s->tank_motion; docs/physics.md, "Moving
 * walls"): the walls' velocities are p->vel's (their body's), their pressure extrapolated with
 * g - a_w(t), the tank's barrier in its frame at t, and the walls placed at t + dt from their
 * rest place with their velocity there. Objects are taken at rest. */
void ref_sph_step_at(const scene *s, const particles *p, double t, double *rho, double *pressure, double *pos_next,
                     double *vel_next, unsigned *flags);

/* A small scene for tests: tank [0, nx dx] x [0, ny dx] (x [0, nz dx]), one fluid block
 * [0, fx dx] x [0, fy dx] (x [0, fz dx]), spacing dx, h = h_factor dx, 3 boundary layers, the
 * given scheme, c0 = 20 m/s, gravity -9.81 along the last axis, dt = 0.2 h / c0. */
void ref_sph_scene(scene *s, int dims, scene_kernel kernel, scene_eos eos, scene_visc visc, double dx, double h_factor,
                   const int ntank[3], const int nfluid[3]);

/* Particles of that scene: fluid lattice (cell-centred from the block's min corner), then
 * `boundary_layers` layers of boundary particles outside every wall (shell covering corners) at
 * x = min - (k + 1/2) dx and max + (k + 1/2) dx. Masses: rho0 dx^dims (call sph_prepare after). */
sphsim_status ref_sph_particles(const scene *s, particles *p, sphsim_error *e);

/* The gauges of s (s->gauges) measured on particles p (any order) whose fluid density and
 * pressure, and the walls' extrapolated ones, are rho and pressure (ref_sph_step's): 6 values per
 * gauge in rows (the gauge's columns, src/gauges.h), as kernels/gauges.cl defines them, in
 * double. */
void ref_sph_gauges(const scene *s, const particles *p, const double *rho, const double *pressure, double *rows);

/* Deterministic pseudo-random numbers in [-1, 1) (xorshift64*). */
double ref_sph_rand(uint64_t *state);

#endif
