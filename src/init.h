/* init: the initial state of a scene, generated into host arrays.
 * SPH: fluid blocks filled on a lattice at the scene spacing (cell-centred, so a block of
 * width W holds floor(W/dx) particles per row), and `boundary_layers` layers of fixed
 * boundary particles outside each tank wall at the same spacing.
 * Particles: sphere groups on a lattice (pitch 2.02 r) or seeded random without overlap. */
#ifndef SPHSIM_INIT_H
#define SPHSIM_INIT_H

#include "particles.h"
#include "scene.h"

/* Count the particles `init_generate` would make, without allocating them. */
sphsim_status init_count(const scene *s, long *n_fluid, long *n_boundary, long *n_spheres, sphsim_error *e);

/* Allocate and fill `p` (ids 0..n-1: fluid, boundary, spheres). Boundary particles get
 * mass = rest_density * spacing^dims (solvers may recompute it); rho = rest density. */
sphsim_status init_generate(const scene *s, particles *p, sphsim_error *e);

#endif
