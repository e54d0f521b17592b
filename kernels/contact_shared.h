/* contact_shared.h: parameters of the hard-sphere contact solver, shared by host and kernels.
 * Filled once by contact_params_from_scene() and uploaded as a __constant buffer. Only 4-byte
 * scalars, so the layout is the same on both sides. Symbols and equations: docs/contacts.md. */
#ifndef SPHSIM_CONTACT_SHARED_H
#define SPHSIM_CONTACT_SHARED_H

#include "shared.h"

/* Contact slots per particle for the impulses carried from one step to the next (warm start):
 * enough for a triangular (2D) or close-packed (3D) neighbourhood of equal spheres with room
 * for moderate polydispersity. A particle with more contacts solves them without carried
 * impulses (still correct, slower to converge). */
#define CONTACT_SLOTS_2D 8
#define CONTACT_SLOTS_3D 16

/* Jacobi relaxation of a pair with d_i, d_j contacts at the start of the step:
 * omega = min(1, OMEGA / max(d_i, d_j)); positions over-relaxed (the corrections of one sphere
 * sum to at most about twice the mean pair correction), impulses not. See docs/contacts.md. */
#define CONTACT_OMEGA_X 2.0f
#define CONTACT_OMEGA_V 1.0f

typedef struct contact_params {
    float gravity[3];  /* m/s^2 (z = 0 in 2D) */
    float dt;          /* s: time step */
    float tank_min[3]; /* m: tank walls (z = 0 in 2D) */
    float restitution; /* e in [0, 1], dimensionless: for sphere-sphere and sphere-wall contacts */
    float tank_max[3]; /* m */
    float max_speed2;  /* m^2/s^2: square of the runaway-speed limit (0 = no check) */
    float v_rest;      /* m/s: impact threshold 2 |g| dt; slower approaches are resting contacts */
    float omega_x;     /* CONTACT_OMEGA_X */
    float omega_v;     /* CONTACT_OMEGA_V */
    dev_u32 slots;     /* contact slots per particle: CONTACT_SLOTS_2D or _3D */
    dev_u32 dims;      /* 2 or 3 */
} contact_params;

#endif
