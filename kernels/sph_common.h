/* sph_common.h: device-side helpers of the SPH kernels: the compiled scheme's W, gradient
 * function F = (1/r) dW/dr, viscosity Laplacian and equation of state, chosen by build options
 * (-DDIMS, -DKERNEL_POLY6|KERNEL_CUBIC|KERNEL_WENDLAND, -DEOS_LINEAR|EOS_TAIT,
 * -DVISC_LAPLACIAN|VISC_ARTIFICIAL). OpenCL C only. */
#ifndef SPHSIM_SPH_COMMON_H
#define SPHSIM_SPH_COMMON_H

#include "sph_shared.h"
#include "sph_kernel_fns.h"
#include "grid_shared.h"
#include "neighbours.h"

#if !defined(KERNEL_POLY6) && !defined(KERNEL_CUBIC) && !defined(KERNEL_WENDLAND)
#error "build option -DKERNEL_POLY6, -DKERNEL_CUBIC or -DKERNEL_WENDLAND required"
#endif
#if !defined(EOS_LINEAR) && !defined(EOS_TAIT)
#error "build option -DEOS_LINEAR or -DEOS_TAIT required"
#endif
#if !defined(VISC_LAPLACIAN) && !defined(VISC_ARTIFICIAL)
#error "build option -DVISC_LAPLACIAN or -DVISC_ARTIFICIAL required"
#endif

/* The neighbour walks of the SPH loops (neighbours.h), chosen per loop by what measured faster
 * on the H200 (docs/performance.md, "the in-range walk for forces"); both visit the in-range
 * neighbours in the same order, and every body tests r2 itself, so the choice changes speed
 * only.
 *   density: the plain walk (its body is one W; the in-range walk's second load costs more),
 *            -DSPH_DENSITY_IN_RANGE for the other;
 *   forces:  the in-range walk (the pair body runs only for neighbours), -DSPH_FORCES_PLAIN;
 *   wall pressure: the plain walk (it skips most candidates on their type before loading
 *            their position), -DSPH_BOUNDARY_IN_RANGE. */
#define SPH_PLAIN_BEGIN_(gp, cell_start, cell_end, pos, xi, radius2, j)                            \
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, xi, j)
#ifdef SPH_DENSITY_IN_RANGE
#define SPH_DENSITY_NEIGHBOURS_BEGIN NEIGHBOURS_IN_RANGE_BEGIN
#define SPH_DENSITY_NEIGHBOURS_END NEIGHBOURS_IN_RANGE_END
#else
#define SPH_DENSITY_NEIGHBOURS_BEGIN SPH_PLAIN_BEGIN_
#define SPH_DENSITY_NEIGHBOURS_END NEIGHBOURS_END
#endif
#ifdef SPH_FORCES_PLAIN
#define SPH_FORCES_NEIGHBOURS_BEGIN SPH_PLAIN_BEGIN_
#define SPH_FORCES_NEIGHBOURS_END NEIGHBOURS_END
#else
#define SPH_FORCES_NEIGHBOURS_BEGIN NEIGHBOURS_IN_RANGE_BEGIN
#define SPH_FORCES_NEIGHBOURS_END NEIGHBOURS_IN_RANGE_END
#endif
#ifdef SPH_BOUNDARY_IN_RANGE
#define SPH_BOUNDARY_NEIGHBOURS_BEGIN NEIGHBOURS_IN_RANGE_BEGIN
#define SPH_BOUNDARY_NEIGHBOURS_END NEIGHBOURS_IN_RANGE_END
#else
#define SPH_BOUNDARY_NEIGHBOURS_BEGIN SPH_PLAIN_BEGIN_
#define SPH_BOUNDARY_NEIGHBOURS_END NEIGHBOURS_END
#endif

/* The particle (sorted index) of this work-item: work-group g takes block (g * stride) mod G of
 * `get_local_size(0)` consecutive particles, G = get_num_groups(0). stride is 1 on GPUs (block
 * g, the identity) and coprime to G on CPUs (sph.c), where it spreads the blocks of any
 * contiguous run of work-groups over the whole index range: PoCL hands each thread contiguous
 * runs of work-groups, and in grid order the expensive fluid blocks sit together, so without it
 * one of two threads could get most of the work (docs/performance.md). */
inline uint sph_item(uint stride)
{
    const uint g = (uint)get_group_id(0);
    const uint b = stride == 1u ? g : (uint)(((ulong)g * stride) % (ulong)get_num_groups(0));
    return b * (uint)get_local_size(0) + (uint)get_local_id(0);
}

/* W(r) of the compiled kernel, from r^2 (1/m^dims). */
inline float sph_W(float r2, __constant const sph_params *P)
{
#if defined(KERNEL_POLY6)
    return sphk_poly6_w(r2, P->support2, P->w_norm);
#elif defined(KERNEL_CUBIC)
    return sphk_cubic_w(sqrt(r2) * P->h_inv, P->w_norm);
#else
    return sphk_wendland_w(sqrt(r2) * P->h_inv, P->w_norm);
#endif
}

/* F(r) = (1/r) dW/dr of the compiled gradient kernel (spiky for the poly6 scheme), 1/m^(dims+2);
 * grad_i W_ij = F(r) dx with dx = x_i - x_j. Requires r > 0. */
inline float sph_F(float r, __constant const sph_params *P)
{
#if defined(KERNEL_POLY6)
    return sphk_spiky_f(r, P->support, P->f_norm);
#elif defined(KERNEL_CUBIC)
    return sphk_cubic_f(r * P->h_inv, P->f_norm);
#else
    return sphk_wendland_f(r * P->h_inv, P->f_norm);
#endif
}

/* Pressure (Pa) from density (kg/m^3), clamped at >= 0 (docs/physics.md, "pressure clamp").
 * Tait: p = B ((rho/rho0)^gamma - 1) written as B expm1(gamma log1p((rho - rho0)/rho0)) so that
 * the small difference keeps its relative precision in float. */
inline float sph_eos(float rho, __constant const sph_params *P)
{
    if (rho <= P->rho0) return 0.0f; /* NaN passes on */
#if defined(EOS_LINEAR)
    return P->eos_k * (rho - P->rho0);
#else
    return P->eos_k * expm1(P->gamma * log1p((rho - P->rho0) / P->rho0));
#endif
}

/* Inverse of sph_eos for p >= 0: the density (kg/m^3) at which the EOS gives p (Pa). */
inline float sph_eos_rho(float p, __constant const sph_params *P)
{
#if defined(EOS_LINEAR)
    return P->rho0 + p / P->eos_k;
#else
    return P->rho0 * exp(log1p(p / P->eos_k) / P->gamma);
#endif
}

#endif
