/* ref_contact: plain-C double-precision reference of the hard-sphere contact step and the
 * touching-pair search (brute force over all pairs), for checking the device kernels. */
#ifndef SPHSIM_REF_CONTACT_H
#define SPHSIM_REF_CONTACT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ref_contact_params {
    int dims;                /* 2 or 3 */
    double gravity[3];       /* m/s^2 */
    double dt;               /* s */
    double tank_min[3];      /* m */
    double tank_max[3];      /* m */
    double restitution;      /* e */
    int iterations;          /* Jacobi passes */
    double candidate_radius; /* m: pairs closer than this at the start of the step may interact
                                 (the grid search radius, 2 r_max) */
    double v_rest;           /* m/s: impact threshold */
    double omega_x, omega_v; /* relaxation constants (CONTACT_OMEGA_X, _V) */
    unsigned slots;          /* contact slots per particle (CONTACT_SLOTS_2D / _3D) */
} ref_contact_params;

/* One step, as the device does it (docs/contacts.md): contacts at the start, carried impulses
 * (warm start), `iterations` relaxed Jacobi passes, then kick, drift and wall bounce. Arrays
 * have 4 doubles per particle (x, y, z, 0) and are in the device's sorted order (the scan
 * order does not matter here; the coincident-centre fallback uses the index order). `id` are
 * the particle ids; `lam_in` / `lam_out` (n*n, indexed id_i * n + id_j, may be the same array)
 * hold the normal impulses carried into / out of the step (lam_in NULL: nothing carried). */
void ref_contact_step(const ref_contact_params *p, size_t n, const double *pos, const double *vel, const double *mass,
                      const double *radius, const uint32_t *id, const double *lam_in, double *lam_out, double *pos_next,
                      double *vel_next);

/* Touching pairs (|x_i - x_j| < r_i + r_j), brute force. When `pairs` is not NULL, up to
 * `max_pairs` pairs (i < j) are stored as 2 indices each. Returns the number of pairs. */
long ref_contact_pairs(size_t n, const double *pos, const double *radius, size_t max_pairs, size_t *pairs);

/* Largest overlap r_i + r_j - |x_i - x_j| over all pairs (m, 0 when none overlap). */
double ref_contact_max_overlap(size_t n, const double *pos, const double *radius);

#endif
