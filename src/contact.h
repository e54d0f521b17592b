/* contact: host side of the hard-sphere collision solver (particle mode).
 * One step (after the grid is built and the state gathered into sorted order):
 *   contact_predict : v += g dt; x_pred = x + v dt, walls with restitution
 *   contact_resolve : `iterations` Jacobi passes; each particle gathers, from every sphere
 *                     it overlaps, half the overlap (mass-weighted) along the normal and,
 *                     when approaching, the impulse of restitution e along the normal.
 * No float atomics; results do not depend on thread order. */
#ifndef SPHSIM_CONTACT_H
#define SPHSIM_CONTACT_H

#include "grid.h"
#include "particles.h"
#include "scene.h"
#include "state.h"

typedef struct contact_solver contact_solver;

sph_status contact_create(contact_solver **out, sph_device *d, const scene *s, sph_error *e);
void contact_destroy(contact_solver *c);

/* Enqueue one step on `st` (sorted) using grid `g`. Never blocks the host. */
sph_status contact_step(contact_solver *c, grid *g, dev_state *st, sph_error *e);

/* Number of touching pairs (distance < r_i + r_j) in the current state; blocks. */
sph_status contact_count(contact_solver *c, grid *g, dev_state *st, long *n_contacts, sph_error *e);

#endif
