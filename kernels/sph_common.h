/* sph_common.h: device-side helpers of the SPH kernels: the compiled scheme's W, gradient
 * function F = (1/r) dW/dr, viscosity Laplacian and equation of state, chosen by build options
 * (-DDIMS, -DKERNEL_POLY6|KERNEL_CUBIC|KERNEL_WENDLAND, -DEOS_LINEAR|EOS_TAIT,
 * -DVISC_LAPLACIAN|VISC_ARTIFICIAL), and the neighbour loop of each SPH stage: the neighbour
 * lists with -DNLIST (nlist_loop.h), else the walk of the grid's cells (neighbours.h).
 * OpenCL C only. */
#ifndef SPHSIM_SPH_COMMON_H
#define SPHSIM_SPH_COMMON_H

#include "sph_shared.h"
#include "sph_kernel_fns.h"
#include "grid_shared.h"
#include "neighbours.h"
#include "nlist_loop.h"
#include "spread.h"

#if !defined(KERNEL_POLY6) && !defined(KERNEL_CUBIC) && !defined(KERNEL_WENDLAND)
#error "build option -DKERNEL_POLY6, -DKERNEL_CUBIC or -DKERNEL_WENDLAND required"
#endif
#if !defined(EOS_LINEAR) && !defined(EOS_TAIT)
#error "build option -DEOS_LINEAR or -DEOS_TAIT required"
#endif
#if !defined(VISC_LAPLACIAN) && !defined(VISC_ARTIFICIAL)
#error "build option -DVISC_LAPLACIAN or -DVISC_ARTIFICIAL required"
#endif

/* The neighbour loop of each SPH stage. With lists, every stage reads them (nlist_loop.h).
 * Without, each walks the cells the way that measured faster on the H200 (docs/performance.md):
 * the density and the wall pressure the plain walk (the density's body is one W, and the wall
 * pressure skips most candidates on their type before loading their position), the forces the
 * in-range walk (the pair body runs only for neighbours). Both walks visit the in-range
 * neighbours in the same order, and every body tests r2 itself. */
#ifdef NLIST
#define SPH_DENSITY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) NLIST_LOOP_BEGIN(gp, cs, ce, xi, i, j)
#define SPH_DENSITY_LOOP_END NLIST_LOOP_END
#define SPH_BOUNDARY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) NLIST_LOOP_BEGIN(gp, cs, ce, xi, i, j)
#define SPH_BOUNDARY_LOOP_END NLIST_LOOP_END
#define SPH_FORCES_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) NLIST_LOOP_BEGIN(gp, cs, ce, xi, i, j)
#define SPH_FORCES_LOOP_END NLIST_LOOP_END
#else
#define SPH_DENSITY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) NEIGHBOURS_BEGIN(gp, cs, ce, xi, j)
#define SPH_DENSITY_LOOP_END NEIGHBOURS_END
#define SPH_BOUNDARY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) NEIGHBOURS_BEGIN(gp, cs, ce, xi, j)
#define SPH_BOUNDARY_LOOP_END NEIGHBOURS_END
#define SPH_FORCES_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j)                                                      \
    NEIGHBOURS_IN_RANGE_BEGIN(gp, cs, ce, pos, xi, radius2, j)
#define SPH_FORCES_LOOP_END NEIGHBOURS_IN_RANGE_END
#endif

/* What the forces and wall-pressure loops read of a neighbour j: (x_j, p_j/rho_j^2) and
 * (v_j, rho_j) (-rho_w, v = 0 for walls). With lists both sit in one 32-byte record of pos_p,
 * (x, p/rho^2) at 2j and (v, rho) at 2j + 1, which the density stages write (the (v, rho) half a
 * copy of the state's vel): the second load of a neighbour then hits the sector the first
 * brought. On the H200 the developed 3D dam break took 1.4 % less per step (forces -2.4 to
 * -2.7 %, wall pressure -18 to -19 %, density +2 % for the wider writes; docs/performance.md),
 * for 16 more bytes per particle, which the lists' memory counts (sph_list_bytes). The
 * cell walk, which a run too large for lists takes, keeps 16 bytes: pos_p[j] and the state's
 * vel[j], except with an integrated density (-DDENSITY_CONTINUITY), whose density stage writes
 * the step's density into the record and not into the state that its loop reads.
 * SPH_NB_PUT_ writes particle i's (v is not evaluated without the record). */
#if defined(NLIST) || defined(DENSITY_CONTINUITY)
#define SPH_RECORD32 /* the 32-byte record */
#endif
#ifdef SPH_RECORD32
#define SPH_NB_X_(pos_p, vel, j) (pos_p)[2u * (j)]
#define SPH_NB_V_(pos_p, vel, j) (pos_p)[2u * (j) + 1u]
#define SPH_NB_PUT_(pos_p, i, xp, v)                                                                                   \
    do {                                                                                                               \
        (pos_p)[2u * (i)] = (xp);                                                                                      \
        (pos_p)[2u * (i) + 1u] = (v);                                                                                  \
    } while (0)
#else
#define SPH_NB_X_(pos_p, vel, j) (pos_p)[j]
#define SPH_NB_V_(pos_p, vel, j) (vel)[j]
#define SPH_NB_PUT_(pos_p, i, xp, v) ((pos_p)[i] = (xp))
#endif

/* The square root of the pair loops, and the division of the artificial viscosity: OpenCL's
 * sqrt and / by default; with -DSPH_NATIVE_MATH the device's native_sqrt and native_divide,
 * whose accuracy OpenCL leaves to the device. Confined to the pair bodies (the NaN checks and
 * the EOS keep the exact functions), it took 4.9 % off the forces loop and 2.1 % off the
 * developed step on an H100, and on NVIDIA's GPUs the 2D dam break (7 720 steps) and the 3D one
 * (1 661 steps) wrote the same files to the bit with it as without (docs/performance.md), so
 * sph.c sets it there (tuning.native_math); elsewhere it stays off. */
#ifdef SPH_NATIVE_MATH
#define SPH_SQRT_(x) native_sqrt(x)
#define SPH_DIVIDE_(a, b) native_divide((a), (b))
#else
#define SPH_SQRT_(x) sqrt(x)
#define SPH_DIVIDE_(a, b) ((a) / (b))
#endif

/* W(r) of the compiled kernel, from r^2 (1/m^dims). */
inline float sph_W(float r2, __constant const sph_params *P)
{
#if defined(KERNEL_POLY6)
    return sphk_poly6_w(r2, P->support2, P->w_norm);
#elif defined(KERNEL_CUBIC)
    return sphk_cubic_w(SPH_SQRT_(r2) * P->h_inv, P->w_norm);
#else
    return sphk_wendland_w(SPH_SQRT_(r2) * P->h_inv, P->w_norm);
#endif
}

/* The self term m_i W(0) of rho_i (x_i: (x_i, m_i)), which the list loops add before their
 * entries, since no list holds i itself (nlist_build.h). */
#define SPH_SELF_RHO_(x_i, P) ((x_i).w * sph_W(0.0f, P))

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
