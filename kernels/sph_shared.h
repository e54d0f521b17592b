/* sph_shared.h: SPH solver parameters shared by host and kernels (owned by the SPH solver).
 * Filled once by sph_params_from_scene() and uploaded as a __constant buffer. The scheme
 * choices themselves (dimension, kernel, EOS, viscosity) are compile-time build options
 * (-DDIMS=2|3, -DKERNEL_POLY6|KERNEL_CUBIC|KERNEL_WENDLAND, -DEOS_LINEAR|EOS_TAIT,
 * -DVISC_LAPLACIAN|VISC_ARTIFICIAL, -DDENSITY_CONTINUITY for the integrated density); see
 * docs/physics.md for every symbol. */
#ifndef SPHSIM_SPH_SHARED_H
#define SPHSIM_SPH_SHARED_H

#include "shared.h"
#include "geom_shared.h"

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
    float diff_k;      /* m^2/s: 2 delta h c0, the density diffusion's factor (continuity density) */
    float diff_hydro;  /* kg s^2/m^5: rho0 / c0^2, which turns rho0 g . dx into the hydrostatic
                           density difference that the diffusion leaves alone */
    float rho_floor;   /* kg/m^3: the least density the continuity equation may reach, rho0 / 2 */
    dev_u32 dims;      /* 2 or 3 (also -DDIMS) */
    dev_u32 n_objects; /* the scene's solid objects (0: none; the wall guards see the tank faces only) */
    dev_u32 first_wall; /* the id of the first wall particle (the fluid's count): wall_ref's index is
                           id - first_wall (-DMOTION) */
    dev_u32 moving;     /* bit b: body b moves (0 the tank, 1 + o object o; motion_shared.h) */
    geom_object objects[GEOM_MAX_OBJECTS]; /* their shapes (geom_shared.h), objects[0 .. n_objects-1] */
} sph_params;

#endif
