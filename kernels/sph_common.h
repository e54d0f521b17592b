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
#define SPH_PLAIN_BEGIN_(gp, cell_start, cell_end, pos, xi, radius2, j)                                                \
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

#ifndef SPH_LIST_PACK
#define SPH_LIST_PACK 1
#endif

/* Neighbour lists (-DSPH_LIST, docs/grid.md "Neighbour lists"). In a step that rebuilds,
 * sph_list_build (called by sph_density) writes for every particle i the sorted indices j of all
 * particles within list_radius = support (1 + skin_k) of it (skin_k: the skin of this
 * generation of lists, sph_list_go; a wall particle lists fluid only), in the order of the walk, to
 * nl_list[k n + i] (k < list_cap, a multiple of 4), and their number to nl_count[i]. With
 * -DSPH_LIST_PACK=4 (GPUs, sph.c) four entries share a uint4: entry k is component k % 4 of
 * ((uint4 *)nl_list)[(k / 4) n + i], so a work-item reads and writes 16 bytes at a time (PoCL,
 * which vectorises across work-items, is faster with single entries). Either way neighbouring
 * work-items read and write neighbouring words.
 * As long as every particle is within skin_k / 2 of where it was at the build (or, checked by
 * sph_list_check, no pair has moved skin_k closer), no pair can come
 * within the support without being listed, so the loops read the list instead of walking the
 * cells (and the grid is not rebuilt: the order stays). A particle with more than list_cap
 * entries walks the cells of the kept grid instead, whose cells are at least support
 * (1 + grid.skin) wide (sim.c), so that walk still finds every neighbour. The body tests r2
 * itself, as with the walks; no particle lists itself (the density starts from its self term,
 * SPH_SELF_RHO_), and the fallback walk skips j == i likewise. SPH_LIST_BEGIN uses the kernel's n, P,
 * nl_list .. nl_list3 and nl_count. */
/* Lists larger than the largest buffer the device allows are split over up to four buffers
 * (arguments nl_list, nl_list1 .. nl_list3, sph.c) by particle: part p holds the whole lists
 * of particles p list_part_n .. (p + 1) list_part_n - 1, at the layout above with list_part_n
 * in place of n, so that a loop picks its buffer once per particle and reads its entries with
 * a fixed stride (splitting by entry, part k / split, cost a test per entry: 9-11 % of the
 * step on the H200, docs/performance.md, fourteenth session). */
inline __global uint *sph_list_part(uint part, __global uint *l0, __global uint *l1, __global uint *l2,
                                    __global uint *l3)
{
    return part == 0u ? l0 : part == 1u ? l1 : part == 2u ? l2 : l3;
}
#ifndef SPH_LIST_PARTS
#define SPH_LIST_PARTS 1 /* buffers the lists take (sph.c passes -DSPH_LIST_PARTS) */
#endif
/* Declares p, a pointer of type T at particle i's first entry (element), and stride, the
 * elements between its successive entries (elements of four entries with SPH_LIST_PACK 4).
 * Uses the kernel's n and P, and nl_list .. nl_list3. Used by the list build (sph_density.cl)
 * and the list loop. */
#if SPH_LIST_PARTS > 1
#define NL_ROW_(T, i, p, stride)                                                                                       \
    const uint stride = P->list_part_n;                                                                                \
    T p = (T)sph_list_part((i) / stride, (__global uint *)nl_list, (__global uint *)nl_list1,                          \
                           (__global uint *)nl_list2, (__global uint *)nl_list3) +                                     \
          (i) % stride;
#else
#define NL_ROW_(T, i, p, stride)                                                                                       \
    const uint stride = n;                                                                                             \
    T p = (T)nl_list + (i);
#endif

#if SPH_LIST_PACK == 4
#define NL_PTR_ __global const uint4 *
#define NL_ELEM_ uint4
#define SPH_LIST_OUT_ __global uint4
/* j = entry k: a new uint4 every fourth entry, then its components in turn */
#define NL_NEXT_(k, p, q, j, stride)                                                                                   \
    if (((k)&3u) == 0u) {                                                                                              \
        q = *(p);                                                                                                      \
        (p) += (stride);                                                                                               \
    }                                                                                                                  \
    j = (q).x;                                                                                                         \
    q = (q).yzwx;
#else
#define NL_PTR_ __global const uint *
#define NL_ELEM_ uint
#define SPH_LIST_OUT_ __global uint
#define NL_NEXT_(k, p, q, j, stride)                                                                                   \
    j = *(p);                                                                                                          \
    (p) += (stride);
#endif

/* Each SPH loop over lists is compiled twice, by a constant `list_walk` of its kernel: the
 * main kernel (list_walk 0) takes the particles whose list holds all their neighbours
 * (nl_count <= list_cap) and reads it; its _walk twin (list_walk 1), launched after it over a
 * few looping work-groups, takes the particles over list_cap and walks the cells, and returns at
 * once when the last list build found none (lstate[5], counted by sph_list_build). One loop
 * for both cost 10-12 % of the step on the H200: the walk's state and branch in the list loop
 * (docs/performance.md, "the fallback walk apart"). SPH_LIST_MINE_: particle i is the kernel's. */
#ifdef SPH_LIST
#define SPH_LIST_MINE_(i, list_walk) ((nl_count[i] > P->list_cap) == (list_walk))
#else
#define SPH_LIST_MINE_(i, list_walk) ((list_walk) == 0) /* the cell walk: one kernel for all */
#endif
#define SPH_LIST_WALKERS_(lstate) ((lstate)[5] != 0u)
/* A density-stage kernel launched ahead of the host's read of the step's decision (`ahead`, sph.c,
 * sph_read_go_ahead) returns at once unless the go word keeps the lists: not in a step that
 * rebuilds (the host then launches the stage itself, after the grid), nor while undecided
 * (GO_CHECK: no check ran). The lists are then those of the kept grid, and the pair read is the
 * last step's output, which the host passes (and swaps to once it has read the decision). */
#define SPH_AHEAD_SKIP_(ahead, lstate) ((ahead) != 0u && ((lstate)[0] & (GO_REBUILD | GO_CHECK)) != 0u)
#define SPH_LIST_BEGIN(gp, cell_start, cell_end, xi, i, j)                                                             \
    {                                                                                                                  \
        const uint nl_cnt_ = nl_count[i];                                                                              \
        const int nl_walk_ = list_walk; /* the kernel's constant: its particles walk */                                \
        NL_ROW_(NL_PTR_, i, nl_p_, nl_stride_)                                                                         \
        NL_ELEM_ nl_q_ = (NL_ELEM_)(0u);                                                                               \
        uint nl_k_ = 0u;                                                                                               \
        /* the cell walk's state, for the rare particle over list_cap */                                               \
        NEIGHBOURS_BLOCK(gp, xi, nl_x0_, nl_x1_, nl_y0_, nl_y1_, nl_z0_, nl_z1_)                                       \
        const uint nl_wx_ = (uint)(nl_x1_ - nl_x0_ + 1), nl_wy_ = (uint)(nl_y1_ - nl_y0_ + 1);                         \
        const uint nl_ncells_ = nl_walk_ ? nl_wx_ * nl_wy_ * (uint)(nl_z1_ - nl_z0_ + 1) : 0u;                         \
        uint nl_o_ = 0u, nl_j_ = 0u, nl_j1_ = 0u;                                                                      \
        for (;;) {                                                                                                     \
            uint j;                                                                                                    \
            if (!nl_walk_) {                                                                                           \
                if (nl_k_ == nl_cnt_) break;                                                                           \
                NL_NEXT_(nl_k_, nl_p_, nl_q_, j, nl_stride_);                                                          \
                ++nl_k_;                                                                                               \
            } else {                                                                                                   \
                while (nl_j_ == nl_j1_ && nl_o_ < nl_ncells_) {                                                        \
                    const uint nl_c_ = (uint)nl_x0_ + nl_o_ % nl_wx_ +                                                 \
                                       (gp)->ncell[0] * ((uint)nl_y0_ + nl_o_ / nl_wx_ % nl_wy_ +                      \
                                                         (gp)->ncell[1] * ((uint)nl_z0_ + nl_o_ / (nl_wx_ * nl_wy_))); \
                    nl_j_ = (cell_start)[nl_c_];                                                                       \
                    nl_j1_ = (cell_end)[nl_c_];                                                                        \
                    ++nl_o_;                                                                                           \
                }                                                                                                      \
                if (nl_j_ == nl_j1_) break;                                                                            \
                j = nl_j_++;                                                                                           \
                if (j == (i)) continue; /* as the lists: without i itself */                                           \
            }

#define SPH_LIST_END                                                                                                   \
    }                                                                                                                  \
    }

/* The neighbour loop of each SPH kernel: the list under -DSPH_LIST, else the loop's walk. */
#ifdef SPH_LIST
#define SPH_DENSITY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) SPH_LIST_BEGIN(gp, cs, ce, xi, i, j)
#define SPH_DENSITY_LOOP_END SPH_LIST_END
#define SPH_BOUNDARY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) SPH_LIST_BEGIN(gp, cs, ce, xi, i, j)
#define SPH_BOUNDARY_LOOP_END SPH_LIST_END
#define SPH_FORCES_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j) SPH_LIST_BEGIN(gp, cs, ce, xi, i, j)
#define SPH_FORCES_LOOP_END SPH_LIST_END
#else
#define SPH_DENSITY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j)                                                     \
    SPH_DENSITY_NEIGHBOURS_BEGIN(gp, cs, ce, pos, xi, radius2, j)
#define SPH_DENSITY_LOOP_END SPH_DENSITY_NEIGHBOURS_END
#define SPH_BOUNDARY_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j)                                                    \
    SPH_BOUNDARY_NEIGHBOURS_BEGIN(gp, cs, ce, pos, xi, radius2, j)
#define SPH_BOUNDARY_LOOP_END SPH_BOUNDARY_NEIGHBOURS_END
#define SPH_FORCES_LOOP_BEGIN(gp, cs, ce, pos, xi, radius2, i, j)                                                      \
    SPH_FORCES_NEIGHBOURS_BEGIN(gp, cs, ce, pos, xi, radius2, j)
#define SPH_FORCES_LOOP_END SPH_FORCES_NEIGHBOURS_END
#endif

/* What the forces and wall-pressure loops read of a neighbour j: (x_j, p_j/rho_j^2) and
 * (v_j, rho_j) (-rho_w, v = 0 for walls). With lists (-DSPH_NB_REC, which sph.c sets with
 * -DSPH_LIST) both sit in one 32-byte record of pos_p, (x, p/rho^2) at 2j and (v, rho) at 2j + 1,
 * which the density stages write (the (v, rho) half a copy of the state's vel): the second load
 * of a neighbour then hits the sector the first brought. On the H200 the developed 3D dam break
 * took 1.4 % less per step (forces -2.4 to -2.7 %, wall pressure -18 to -19 %, density +2 % for
 * the wider writes; docs/performance.md, seventeenth session), for 16 more bytes per particle,
 * which the lists' memory counts (sph_list_bytes). The cell walk, which a run too large for
 * lists takes, keeps 16 bytes: pos_p[j] and the state's vel[j]. SPH_NB_PUT_ writes particle i's
 * (v is not evaluated without the record). */
#ifdef SPH_NB_REC
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

/* The two buffer pairs of the particle state, (pos, vel) and (pos_next, vel_next): a step
 * reads one and sph_forces writes the other. With lists, a step that keeps them swaps their
 * roles on the device instead of copying (sph_list_go sets GO_ALT in the go word lstate[0]; the
 * kernels take both pairs and pick; docs/grid.md). Without lists the first pair is read. */
#ifdef SPH_LIST
#define SPH_ALT_(lstate) (((lstate)[0] & GO_ALT) != 0u)
#define SPH_REBUILT_(lstate) (((lstate)[0] & GO_REBUILD) != 0u) /* this step re-sorted */
#else
#define SPH_ALT_(lstate) 0
#define SPH_REBUILT_(lstate) 1 /* the cell walk re-sorts every step */
#endif

/* The square root of the pair loops, and the division of the artificial viscosity: OpenCL's
 * sqrt and / by default; with -DSPH_NATIVE_MATH the device's native_sqrt and native_divide,
 * whose accuracy OpenCL leaves to the device. On an H100 -cl-unsafe-math-optimizations, which
 * lets the compiler take such approximations everywhere, made the forces loop 5.4 % faster and
 * the developed 3D dam break 2.8 % (docs/performance.md, nineteenth session); this switch
 * confines them to the pair bodies, leaving the NaN checks and the EOS as they are, and took
 * 4.9 % off the forces loop and 2.1 % off the step there (twentieth session). On NVIDIA's GPUs
 * the 2D dam break (7 720 steps) and the 3D one (1 661 steps) wrote the same files to the bit
 * with it as without (twenty-first session), so sph.c sets it there (native_math); elsewhere it
 * stays off. */
#ifdef SPH_NATIVE_MATH
#define SPH_SQRT_(x) native_sqrt(x)
#define SPH_DIVIDE_(a, b) native_divide((a), (b))
#else
#define SPH_SQRT_(x) sqrt(x)
#define SPH_DIVIDE_(a, b) ((a) / (b))
#endif

/* Qualifier of the read-only pointer arguments of the SPH loops: empty by default,
 * -DSPH_RESTRICT=restrict to let the compiler use the read-only data path (a benchmark switch). */
#ifndef SPH_RESTRICT
#define SPH_RESTRICT
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
    return sphk_cubic_w(SPH_SQRT_(r2) * P->h_inv, P->w_norm);
#else
    return sphk_wendland_w(SPH_SQRT_(r2) * P->h_inv, P->w_norm);
#endif
}

/* The self term m_i W(0) of rho_i (x_i: (x_i, m_i)), which the list loops add before their
 * entries, since no list holds i itself (sph_list_build). */
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
