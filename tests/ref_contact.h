/* ref_contact: plain-C double-precision reference of the hard-sphere contact step (impulses with
 * restitution and Coulomb friction, rotation, normals at the time of impact) and of the
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
    double restitution;      /* e of sphere pairs */
    double friction;         /* mu of sphere pairs */
    double wall_restitution; /* e of sphere-wall contacts */
    double wall_friction;    /* mu of sphere-wall contacts */
    int iterations;          /* Jacobi passes (impulses, and positions) */
    double v_rest;           /* m/s: impact threshold */
    double omega_x, omega_v; /* relaxation constants (CONTACT_OMEGA_X, _V) */
    unsigned slots;          /* contact slots per sphere (CONTACT_SLOTS_2D / _3D) */
    double inertia;          /* I = inertia m r^2 */
    /* per group pair (e, mu), or NULL: the four coefficients above for every contact */
    int n_groups;
    const uint32_t *group_start; /* n_groups first ids */
    const float *material;       /* 2 (n_groups + 1)^2: (e, mu) at 2 (a (G+1) + b), b = G the walls */
} ref_contact_params;

/* Index of the carried impulse of sphere id `i` with partner `q` (a particle id, or n + face for
 * wall face 0 .. 5) in the lam arrays of ref_contact_step: 3 doubles (lambda_n, lambda_t1,
 * lambda_t2) at 3 * REF_LAM(n, i, q). */
#define REF_LAM(n, i, q) ((size_t)(i) * ((n) + 6) + (size_t)(q))

/* One step, as the device does it (docs/contacts.md): contacts at the start (walls, spheres
 * touching at `pos`), carried impulses (warm start), `iterations` relaxed Jacobi passes over the
 * impulses, the positions moved along the corrected paths, `iterations` Jacobi passes of overlap
 * removal, then kick and drift. Arrays have 4 doubles per particle (x, y, z, 0) for pos/vel and 3
 * for omega (rad/s; 2D: the third); `id` are the particle ids; `lam_in` / `lam_out` (3 n (n + 6)
 * doubles, REF_LAM; may be the same array; lam_in NULL: nothing carried) hold the impulses carried
 * into / out of the step. omega_next may be omega. */
void ref_contact_step(const ref_contact_params *p, size_t n, const double *pos, const double *vel, const double *omega,
                      const double *mass, const double *radius, const uint32_t *id, const double *lam_in,
                      double *lam_out, double *pos_next, double *vel_next, double *omega_next);

/* Touching pairs (|x_i - x_j| < r_i + r_j), brute force. When `pairs` is not NULL, up to
 * `max_pairs` pairs (i < j) are stored as 2 indices each. Returns the number of pairs. */
long ref_contact_pairs(size_t n, const double *pos, const double *radius, size_t max_pairs, size_t *pairs);

/* Largest overlap r_i + r_j - |x_i - x_j| over all pairs (m, 0 when none overlap). */
double ref_contact_max_overlap(size_t n, const double *pos, const double *radius);

/* ---- analytic results (docs/contacts.md) ----
 * Two smooth spheres (masses m1, m2) colliding with relative normal n (unit, from 2 to 1, at
 * the touch) and restitution e: velocities after, into v1o, v2o (3 doubles each). */
void ref_binary_collision(const double v1[3], const double v2[3], double m1, double m2, const double n[3], double e,
                          double v1o[3], double v2o[3]);
/* A sphere (k = 2/5) or disc (k = 1/2) of radius r hitting a wall of normal n (unit, into the
 * sphere's side) with velocity v and angular velocity w: restitution e, Coulomb friction mu, the
 * tangential velocity of the contact point brought to zero unless that needs more than mu times
 * the normal impulse (Walton 1993 with no tangential restitution). Outputs v', w'. */
void ref_wall_impact(const double v[3], const double w[3], double r, double k, const double n[3], double e, double mu,
                     double vo[3], double wo[3]);

#endif
