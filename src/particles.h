/* particles: host-side particle arrays (structure of arrays), in particle-id order.
 * Used for the initial state, for snapshots read back from the device, and by the
 * plain-C reference solvers in tests. */
#ifndef SPHSIM_PARTICLES_H
#define SPHSIM_PARTICLES_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "../kernels/shared.h"

typedef struct particles {
    size_t n;
    size_t n_fluid, n_boundary, n_spheres; /* ids: fluid first, then boundary, then spheres */
    float *pos;      /* 4 per particle: x, y, z, 0 (m); z = 0 in 2D */
    float *vel;      /* 4 per particle: vx, vy, vz, 0 (m/s) */
    float *rho;      /* kg/m^3 (0 for spheres) */
    float *pressure; /* Pa (0 for spheres) */
    float *mass;     /* kg; for boundary particles the effective mass rho0 * volume */
    float *radius;   /* m (spheres); 0 otherwise */
    uint32_t *id;    /* 0 .. n-1 */
    uint8_t *type;   /* PTYPE_* */
} particles;

sph_status particles_alloc(particles *p, size_t n, sph_error *e);
void particles_free(particles *p);

/* Scatter `sorted` (rows in device order, sorted->id[i] the particle id of row i) into `out`
 * in id order (same n); fails if an id is out of range or appears twice (the device state is
 * corrupted). */
sph_status particles_scatter_by_id(const particles *sorted, particles *out, sph_error *e);

#endif
