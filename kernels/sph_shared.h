/* sph_shared.h: SPH solver parameters shared by host and kernels (owned by the SPH solver).
 * Filled once by sph_params_from_scene() and uploaded as a __constant buffer. The scheme
 * choices themselves (dimension, kernel, EOS, viscosity) are compile-time build options
 * (-DDIMS=2|3, -DKERNEL_POLY6|KERNEL_CUBIC|KERNEL_WENDLAND, -DEOS_LINEAR|EOS_TAIT,
 * -DVISC_LAPLACIAN|VISC_ARTIFICIAL); see docs/physics.md for every symbol. */
#ifndef SPHSIM_SPH_SHARED_H
#define SPHSIM_SPH_SHARED_H

#include "shared.h"

/* Levels of the adaptive list skin (docs/grid.md, "Neighbour lists"). */
#define SPH_SKIN_LEVELS 4

/* Words of the neighbour lists' state (lstate; kernels/sph_density.cl, sph_list_go). */
#define SPH_LSTATE_WORDS 12

/* Bits of the list state's need word (lstate[1], set by sph_forces): a fluid particle moved
 * more than skin_k / 2 (NEED_SOFT: the lists may still hold, sph_list_check decides) or at least
 * 2 skin_k (skin_0 while some particle walks; NEED_HARD: they must be rebuilt) from where the
 * lists were built. */
#define NEED_HARD 1u
#define NEED_SOFT 2u

/* Bits of the list build's per-cell flags (cell_fluid, sph_cell_fluid): the cell holds fluid,
 * the cell holds a wall particle. */
#define CELL_FLUID 1u
#define CELL_WALL 2u

typedef struct sph_params {
    float h;           /* m: smoothing length */
    float h_inv;       /* 1/m */
    float support;     /* m: kernel support radius H = 2 h (Mueller's kernels use h_M = H) */
    float support2;    /* m^2 */
    float w_norm;      /* normalisation of the density kernel W (poly6: 1/m^(dims+6), cubic and
                           wendland: sigma_d / h^dims, 1/m^dims; see sph_kernel_fns.h) */
    float f_norm;      /* normalisation of the gradient function F(r) = (1/r) dW/dr
                           (poly6 scheme: spiky 1/m^(dims+2); cubic/wendland: sigma_d / h^(dims+2)) */
    float lap_norm;    /* viscosity-kernel Laplacian norm, 1/m^(dims+3) (poly6 scheme) */
    float rho0;        /* kg/m^3: rest density */
    float eos_k;       /* linear EOS: stiffness k (m^2/s^2); Tait: B = rho0 c0^2 / gamma (Pa) */
    float gamma;       /* Tait exponent (dimensionless) */
    float c0;          /* m/s: reference speed of sound (artificial viscosity) */
    float alpha;       /* Monaghan artificial viscosity coefficient (dimensionless) */
    float mu;          /* Pa s: dynamic viscosity (laminar viscosity) */
    float eta2;        /* m^2: 0.01 h^2, regularises 1/r^2 in the viscosity terms */
    float gravity[3];  /* m/s^2 (z = 0 in 2D) */
    float dt;          /* s: time step */
    float tank_min[3]; /* m: tank box (z = 0 in 2D); fluid ending outside is flagged */
    float tank_max[3]; /* m */
    float max_speed2;  /* m^2/s^2: square of the runaway-speed limit */
    float wall_d0;     /* m: range of the tank-face barrier, 0.4 dx (dx = particle spacing) */
    float wall_k;      /* 1/s^2: stiffness of the barrier, min((c0 / (2 d0))^2, 1/dt^2) */
    float mass_fluid;  /* kg: the mass of every fluid particle (sph_set_masses) */
    float mass_wall;   /* kg: the mass of every wall particle; the forces loop takes m_j from
                           these two by the sign of vel_j.w (negative for walls) */
    dev_u32 dims;      /* 2 or 3 (also -DDIMS) */
    /* neighbour lists (-DSPH_LIST; docs/grid.md, "Neighbour lists"), built with the skin of
     * level k (the go word's companion lstate[4], set by sph_list_go): skin_k = skin / 2^k */
    float list_radius2[SPH_SKIN_LEVELS]; /* m^2: (support (1 + skin_k))^2, the radius of the lists */
    float skin_half2[SPH_SKIN_LEVELS];   /* m^2: (support skin_k / 2)^2; a fluid particle farther
                           than this from where the lists were built makes the next step check
                           the relative motion (sph_list_check), or rebuild without the check */
    float wall_radius2[SPH_SKIN_LEVELS]; /* m^2: (support (1 + 2 skin_k))^2, the radius of the
                           lists' fluid-wall entries (a fluid particle's walls, a wall's fluid) */
    float skin2[SPH_SKIN_LEVELS];        /* m^2: (0.999 support 2 skin_k)^2; a fluid particle this
                           far from where the lists were built makes the next step rebuild */
    float skin_walk2;                    /* m^2: (0.999 support skin_0)^2, the same limit while some particle is over
                           list_cap (its walk finds what cells of support (1 + skin_0) hold) */
    dev_u32 walls_outside;               /* 1 if every wall particle lies outside the tank box (sph_set_masses),
                           so that fluid farther than the walls' list radius from every tank face
                           has no wall within it */
    float skin_rel[SPH_SKIN_LEVELS];     /* m: 0.999 support skin_k, the bound on the relative motion
                           of two fluid particles that keeps the lists (sph_list_check) */
    dev_u32 skin_shrink_age[SPH_SKIN_LEVELS]; /* lists at level k kept this many steps: rebuild
                           them at level k + 1 (0xffffffff: never) */
    dev_u32 skin_grow_age[SPH_SKIN_LEVELS];   /* lists at level k outgrown after fewer kept steps
                           than this: rebuild them at level k - 1 */
    dev_u32 list_cap;    /* entries per particle; a particle with more falls back to the cell walk */
    dev_u32 list_part_n; /* particles per list buffer: particle i's list is in part
                           i / list_part_n (more than one part when the lists exceed the largest
                           buffer the device allows; sph_common.h) */
} sph_params;

#endif
