/* init: the initial state of a scene, generated into host arrays.
 * SPH: fluid blocks filled on a lattice at the scene spacing (cell-centred, so a block of
 * width W holds floor(W/dx) particles per row), fluid regions on the lattice a block spanning
 * the tank would have (the points half a spacing inside a region), both minus the objects'
 * solids, and `boundary_layers` layers of fixed boundary particles outside each tank wall at the
 * same spacing.
 * Particles: sphere groups on a lattice (the group's pitch, 2.02 r by default) or seeded random
 * without overlap (random sequential addition; pushed apart where the region is too full for it),
 * in a box or a shaped region. */
#ifndef SPHSIM_INIT_H
#define SPHSIM_INIT_H

#include "particles.h"
#include "scene.h"

/* The objects' boundary particles (SPH), which follow the tank's in id order: their number, and
 * in obj (may be NULL; that many entries) the index of each one's object (scene.objects). */
long init_boundary_objects(const scene *s, int8_t *obj);

/* Count the particles `init_generate` would make, without allocating them. */
sphsim_status init_count(const scene *s, long *n_fluid, long *n_boundary, long *n_spheres, sphsim_error *e);

/* The particles alone, on their lattices (init_generate without the SPH state: masses, rho0,
 * pressure 0 as init_count's lattice gives them). */
sphsim_status init_lattice(const scene *s, particles *p, int threads, sphsim_error *e);

/* Allocate and fill `p` (ids 0..n-1: fluid, boundary, spheres), on `threads` host threads
 * (tuning.init_threads; the result is the same for any number). SPH: masses, rho and pressure
 * as sph_prepare sets them, then the hydrostatic start (init_hydrostatic). */
sphsim_status init_generate(const scene *s, particles *p, int threads, sphsim_error *e);

/* The hydrostatic start (docs/physics.md, "Initial state"): every vertical run of fluid particles
 * that rests on the tank floor or on a solid of the objects is compressed along gravity so that
 * the kernel sum on the squeezed lattice gives the density whose EOS pressure is rho0 |g| depth
 * (below the run's top), and gets that density and pressure. Without it the fluid starts at
 * p = 0, falls, and overshoots to about twice the hydrostatic pressure. Only when gravity lies
 * along one axis; runs touching neither (falling fluid) are left as they are. Takes the masses of
 * sph_prepare. */
sphsim_status init_hydrostatic(const scene *s, particles *p, int threads, sphsim_error *e);

#endif
