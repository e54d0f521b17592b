/* nlist_loop.h: how a kernel reads the neighbour lists (src/nlist.c builds them; docs/grid.md,
 * "Neighbour lists"). Programs built with -DNLIST (lists on) get the list loop; without it the
 * same macros are not used and the kernels walk the grid's cells.
 *
 * Layout. The list of particle i holds the sorted indices j of every particle within the list
 * radius of it (a wall lists fluid only; nobody lists itself), in the order of the build's walk,
 * at entry k of row i: with -DNLIST_PACK=1 (CPUs) word k * rows + i of its buffer, with
 * -DNLIST_PACK=4 (GPUs) component k % 4 of uint4 (k / 4) * rows + i, so a work-item reads and
 * writes 16 bytes at a time and neighbouring work-items neighbouring words. Lists larger than
 * the largest buffer the device allows are split over up to NLIST_MAX_PARTS buffers by particle
 * (-DNLIST_PARTS): part p holds the whole lists of particles p list_part_n .. (p + 1) list_part_n
 * - 1, so a loop picks its buffer once per particle (rows = list_part_n; one part: rows = n).
 *
 * The loop: a particle with at most list_cap entries reads its list; one with more
 * (nl_count > list_cap) walks the cells of the kept grid instead, whose cells are at least
 * R (1 + grid.skin) wide, so that the walk still finds every neighbour. Each SPH loop is compiled
 * twice for this, by a constant `list_walk`: the main kernel (0) takes the particles whose list
 * holds all their neighbours, its _walk twin (1), launched over a few looping work-groups, the
 * others, and returns at once when the last build found none (nlist_state.walkers). One loop
 * for both cost 10-12 % of the step on the H200 (docs/performance.md). The body tests r2
 * itself, as with the cell walks; the fallback walk skips j == i, as the lists do. */
#ifndef SPHSIM_NLIST_LOOP_H
#define SPHSIM_NLIST_LOOP_H

#include "nlist_shared.h"
#include "neighbours.h"

#ifndef NLIST_PACK
#define NLIST_PACK 1
#endif
#ifndef NLIST_PARTS
#define NLIST_PARTS 1
#endif

/* The list arguments of a kernel that reads the lists (or, `_BUILD`, writes them), after its
 * own; the host binds them by these names (nlist_args). */
#define NLIST_READ_ARGS                                                                                                \
    __global const uint *nl_list, /* the lists, parts 0-3 (nlist_loop.h) */                                            \
        __global const uint *nl_list1, __global const uint *nl_list2, __global const uint *nl_list3,                   \
        __global const uint *nl_count,  /* entries of each particle's list */                                          \
        __global const float4 *pos_ref, /* x_i where the lists were built */                                           \
        __global nlist_state *nl_state, __constant const nlist_params *NP
#define NLIST_BUILD_ARGS                                                                                               \
    __global uint *nl_list, __global uint *nl_list1, __global uint *nl_list2, __global uint *nl_list3,                 \
        __global uint *nl_count, __global float4 *pos_ref, __global nlist_state *nl_state,                             \
        __constant const nlist_params *NP

inline __global uint *nlist_part(uint part, __global uint *l0, __global uint *l1, __global uint *l2, __global uint *l3)
{
    return part == 0u ? l0 : part == 1u ? l1 : part == 2u ? l2 : l3;
}

/* Declares p, a pointer of type T at particle i's first entry (element), and stride, the
 * elements between its successive entries. Uses the kernel's n, NP and nl_list .. nl_list3. */
#if NLIST_PARTS > 1
#define NLIST_ROW(T, i, p, stride)                                                                                     \
    const uint stride = NP->list_part_n;                                                                               \
    T p = (T)nlist_part((i) / stride, (__global uint *)nl_list, (__global uint *)nl_list1, (__global uint *)nl_list2,  \
                        (__global uint *)nl_list3) +                                                                   \
          (i) % stride;
#else
#define NLIST_ROW(T, i, p, stride)                                                                                     \
    const uint stride = n;                                                                                             \
    T p = (T)nl_list + (i);
#endif

#if NLIST_PACK == 4
#define NLIST_PTR_ __global const uint4 *
#define NLIST_ELEM_ uint4
#define NLIST_OUT __global uint4
/* j = entry k: a new uint4 every fourth entry, then its components in turn */
#define NLIST_NEXT_(k, p, q, j, stride)                                                                                \
    if (((k)&3u) == 0u) {                                                                                              \
        q = *(p);                                                                                                      \
        (p) += (stride);                                                                                               \
    }                                                                                                                  \
    j = (q).x;                                                                                                         \
    q = (q).yzwx;
#else
#define NLIST_PTR_ __global const uint *
#define NLIST_ELEM_ uint
#define NLIST_OUT __global uint
#define NLIST_NEXT_(k, p, q, j, stride)                                                                                \
    j = *(p);                                                                                                          \
    (p) += (stride);
#endif

/* Particle i belongs to the kernel of constant list_walk (see above). */
#ifdef NLIST
#define NLIST_MINE(i, list_walk) ((nl_count[i] > NP->list_cap) == (list_walk))
#else
#define NLIST_MINE(i, list_walk) ((list_walk) == 0) /* the cell walk: one kernel for all */
#endif
/* The last build found particles over list_cap: the _walk kernels have work. */
#define NLIST_WALKERS(ls) ((ls)->walkers != 0u)
/* This step re-sorted the particles and rebuilt the lists (always, without lists). */
#ifdef NLIST
#define NLIST_REBUILT(ls) (((ls)->go & GO_REBUILD) != 0u)
#else
#define NLIST_REBUILT(ls) 1
#endif
/* A density-stage kernel launched ahead of the host's read of the step's decision (`ahead`,
 * nlist_read_begin) returns at once unless the decision keeps the lists: not in a step that
 * rebuilds (the host then launches the stage itself, after the grid), nor while undecided
 * (GO_CHECK: no check ran). The pair it reads is then the last step's output. */
#define NLIST_AHEAD_SKIP(ahead, ls) ((ahead) != 0u && ((ls)->go & (GO_REBUILD | GO_CHECK)) != 0u)

/* The neighbours j of particle i at xi: its list, or for a particle of a _walk kernel the cells
 * of the kept grid's block around xi (without i). */
#define NLIST_LOOP_BEGIN(gp, cell_start, cell_end, xi, i, j)                                                           \
    {                                                                                                                  \
        const uint nl_cnt_ = nl_count[i];                                                                              \
        const int nl_walk_ = list_walk; /* the kernel's constant: its particles walk */                                \
        NLIST_ROW(NLIST_PTR_, i, nl_p_, nl_stride_)                                                                    \
        NLIST_ELEM_ nl_q_ = (NLIST_ELEM_)(0u);                                                                         \
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
                NLIST_NEXT_(nl_k_, nl_p_, nl_q_, j, nl_stride_);                                                       \
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

#define NLIST_LOOP_END                                                                                                 \
    }                                                                                                                  \
    }

#endif
