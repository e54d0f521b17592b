/* particles: host-side particle arrays (structure of arrays), in particle-id order.
 * Used for the initial state, for snapshots read back from the device, and by the
 * plain-C reference solvers in tests. */
#ifndef SPHSIM_PARTICLES_H
#define SPHSIM_PARTICLES_H

#include <stddef.h>
#include <stdint.h>

#include "scene.h"
#include "status.h"
#include "../kernels/shared.h"

typedef struct particles {
    size_t n;
    size_t n_fluid, n_boundary, n_spheres; /* ids: fluid first, then boundary, then spheres */
    float *pos;                            /* 4 per particle: x, y, z, 0 (m); z = 0 in 2D */
    float *vel;                            /* 4 per particle: vx, vy, vz, 0 (m/s) */
    float *rho;                            /* kg/m^3 (0 for spheres) */
    float *pressure;                       /* Pa (0 for spheres) */
    float *mass;                           /* kg; for boundary particles the effective mass rho0 * volume */
    float *radius;                         /* m (spheres); 0 otherwise */
    float *omega;                          /* 3 per particle: angular velocity (rad/s) of spheres, 0 otherwise */
    uint32_t *id;                          /* 0 .. n-1 */
    uint8_t *type;                         /* PTYPE_* */
} particles;

/* The arrays of a particles struct are named by the bits of the output fields they hold
 * (scene.h): FIELD_POSITION pos, FIELD_VELOCITY vel, FIELD_DENSITY rho, FIELD_PRESSURE
 * pressure, FIELD_ID id, FIELD_TYPE type, FIELD_RADIUS radius, FIELD_MASS mass,
 * FIELD_ANGULAR_VELOCITY omega. */
#define FIELDS_ALL                                                                                                     \
    (FIELD_POSITION | FIELD_VELOCITY | FIELD_DENSITY | FIELD_PRESSURE | FIELD_ID | FIELD_TYPE | FIELD_RADIUS |         \
     FIELD_MASS | FIELD_ANGULAR_VELOCITY)

/* Every array, zeroed. */
sphsim_status particles_alloc(particles *p, size_t n, sphsim_error *e);
/* Only the arrays in `arrays` (FIELD_* bits), zeroed; the others stay NULL. */
sphsim_status particles_alloc_some(particles *p, size_t n, unsigned arrays, sphsim_error *e);
/* The FIELD_* bits of the arrays p has. */
unsigned particles_arrays(const particles *p);
/* Bytes per particle of the arrays in `arrays`. */
size_t particles_row_bytes(unsigned arrays);
/* Points the arrays in `arrays` of p (n particles) into `mem` (particles_row_bytes(arrays) n
 * bytes, 16-byte aligned, not owned: particles_free must not see them), one after another,
 * widest first (positions at mem, types last), so each is aligned; the others NULL. */
void particles_place(particles *p, size_t n, unsigned arrays, void *mem);
/* Writes zeros into every array of p, over `threads` threads (TUNE_AUTO: jobs_threads' choice;
 * tuning.init_threads): the system gives a fresh allocation its pages on first touch, so this
 * moves that cost to here from, say, a device copy into p. */
void particles_touch(particles *p, int threads);
/* Frees every array not in `arrays` (it becomes NULL). */
void particles_keep(particles *p, unsigned arrays);
void particles_free(particles *p);
/* The masses (and, when `spheres`, the radii) of rows read back from the device, which keeps
 * them in the spare lanes pos.w (and vel.w) (state.h): into p->mass (p->radius) where allocated. */
void particles_from_lanes(particles *p, int spheres);

/* Scatter `sorted` (rows in device order, sorted->id[i] the particle id of row i) into `out`
 * in id order (same n), every array the two both have (out->id[k] = k); fails if an id is out
 * of range or appears twice (the device state is corrupted). `threads`: as for particles_touch
 * (tuning.writer_threads; the result is the same for any number). */
sphsim_status particles_scatter_by_id(const particles *sorted, particles *out, int threads, sphsim_error *e);

#endif
