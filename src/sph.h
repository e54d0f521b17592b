/* sph: host side of the SPH fluid solver: its kernels, arguments and the order of stages.
 * One step (after the grid is built and the state gathered into sorted order):
 *   sph_density   : rho_i = sum_j m_j W(x_i - x_j, h)     (fluid and boundary particles)
 *   sph_forces    : a_i = pressure + viscosity + gravity, then the leapfrog update
 *                   v_next = v + a dt, x_next = x + v_next dt (boundary particles copied)
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

/* Prepare host particles before upload (e.g. boundary particle effective masses). */
sph_status sph_prepare(const scene *s, particles *p, sph_error *e);

sph_status sph_create(sph_solver **out, sph_device *d, const scene *s, sph_error *e);
void sph_destroy(sph_solver *s);

/* The two halves of a step, enqueued separately so that sim.c can write a snapshot whose
 * density belongs to its positions: sph_density fills st->rho from st->pos (sorted);
 * sph_forces computes accelerations and the leapfrog update into pos_next/vel_next.
 * sph_step = sph_density + sph_forces. None of them blocks the host. */
sph_status sph_density(sph_solver *s, grid *g, dev_state *st, sph_error *e);
sph_status sph_forces(sph_solver *s, grid *g, dev_state *st, sph_error *e);
sph_status sph_step(sph_solver *s, grid *g, dev_state *st, sph_error *e);

/* Enqueue: fill st->pressure from st->rho (for output), in sorted order. */
sph_status sph_pressure(sph_solver *s, dev_state *st, sph_error *e);

#endif
