/* nlist.cl: the neighbour lists' own stages (host side: src/nlist.c; design: docs/grid.md,
 * "Neighbour lists"). Each writes the lists' state or the data the next decision reads:
 *   nlist_go          the step's decision (nlist_state.go): rebuild the grid and the lists, or
 *                     keep them, or check the relative motion first; the skin level
 *   nlist_cell_fluid  after a rebuild: which cells hold fluid or walls, and the list of cells
 *                     with fluid
 *   nlist_cell_boxes  the relative-motion check's first pass: each fluid cell's box of
 *                     displacements since the build
 *   nlist_check       the check: the largest relative displacement any two nearby fluid cells
 *                     allow
 *   nlist_build       the lists of every particle (the SPH density program can instead build them
 *                     with the densities on the same walk, nlist_build.h)
 * Only integer state and maxima that do not depend on the order of the work-items, so the
 * decisions are the same on every run of the same steps. */
#include "grid_shared.h"
#include "nlist_build.h"
#include "spread.h"

/* The larger of m and v, where a NaN v counts as infinite (a NaN position makes the check
 * rebuild, and a NaN displacement the carried bound infinite, instead of hiding the motion;
 * fmax would drop it). */
inline float nlist_max_nan_inf(float m, float v) { return isnan(v) ? INFINITY : fmax(m, v); }

/* The filter of the per-step displacement (nlist_state.filter, written by the forces stage)
 * after a rebuild at level k: (skin_rel / 16)^2, so that in the rebuild step only the particles
 * that move that far in one step (lists that last a few steps) write the maximum; +inf without
 * the check (nothing written). Only the level and the switch, so that a run resumed from a
 * snapshot (whose step rebuilt) filters as the original run did. */
#define NLIST_FILTER_DECAY 0.8f

inline uint nlist_step_filter(__constant const nlist_params *NP, uint k, uint check)
{
    const float f = NP->skin_rel[k] * (1.0f / 16.0f);
    return check && f > 0.0f ? as_uint(f * f) : as_uint(INFINITY);
}

/* One work-item, first in a step (pass 0): decides whether the step rebuilds (GO_REBUILD),
 * clears need, and counts the rebuild.
 *   - force (the host forces a rebuild in every step that writes a snapshot, so that a run
 *     resumed from a snapshot, which starts with a rebuild, continues bit for bit as the
 *     original run) or NEED_HARD, or NEED_SOFT without `check`: rebuild; with need, one level
 *     up (a larger skin) if the lists lasted fewer than skin_grow_age[k] steps;
 *   - NEED_SOFT alone with `check`: if the bound B on the relative motion (ls->bound), grown by
 *     this step's motion, stays under skin_rel, the lists are kept without the check (below);
 *     else GO_CHECK and nothing else: nlist_check measures the relative motion, and pass 1 then
 *     decides as above, with need set when that motion could have brought an unlisted pair
 *     within the support;
 *   - otherwise (also when forced) lists kept skin_shrink_age[k] steps: rebuild one level down
 *     (a smaller skin: shorter lists, cheaper loops, while the flow is slow enough to keep them
 *     many steps).
 * Pass 1 returns at once without GO_CHECK.
 * The bound without the check: once a check has kept the lists with bound B (the relative
 * displacement since the build of every fluid pair in cells at most two apart is below B; the
 * other pairs NEED_HARD covers in every step), a step in which no fluid particle moved more than
 * b adds at most 2 b to any pair's, so B + 2 b bounds it after that step. Every fluid particle's
 * step goes through the SPH forces stage, and nothing else moves one between two nlist_go
 * (nlist.h). The forces stage gives b: with the filter F = ls->filter, every particle that moved
 * more than sqrt(F) in the step writes its squared displacement to ls->step_max (atomic_max; a
 * plain read first, so that few do), and b^2 = max(F, step_max). Pass 0 adds 2 b to B in every
 * step (+inf stays +inf until a check), and skips the check while the grown B stays under
 * skin_rel. The next filter is NLIST_FILTER_DECAY b^2: near the largest displacement, so that
 * few particles write, and falling when the flow slows; a rebuild sets it by nlist_step_filter.
 * A snapshot stores the level its step's lists were built at (nlist_state_save), and a resumed
 * run starts there with need set and the age at its largest, so that its first step rebuilds at
 * that level: after it, as after the original run's snapshot step, the level is the same, the age
 * 0 and need clear, and the runs decide alike from there on. The ages come from a cost model
 * (nlist.c, skin_levels). */
__kernel void nlist_go(__global nlist_state *ls, const uint force, __constant const nlist_params *NP, const uint pass,
                       const uint check, __global uint *wet_n)
{
    const uint age = ls->age, k = ls->level;
    uint need;
    if (pass == 0u) {
        need = ls->need;
        /* the last step's motion (no fluid particle moved more than b) grows the bound */
        const float b2 = nlist_max_nan_inf(as_float(ls->filter), as_float(ls->step_max));
        /* rounded up, so that float sums over many steps never fall below the motion */
        const float bound = nextafter(as_float(ls->bound) + 2.0f * sqrt(b2), INFINITY);
        ls->bound = as_uint(bound);
        ls->filter = check ? as_uint(NLIST_FILTER_DECAY * b2) : as_uint(INFINITY);
        ls->step_max = 0u;
        if (check && !force && need == NEED_SOFT) {
            if (bound < NP->skin_rel[k]) { /* kept without the check */
                need = 0u;
                ls->checks_skipped += 1u;
            } else {
                ls->go = GO_CHECK;
                ls->bound = as_uint(INFINITY); /* until pass 1 takes the check's bound */
                ls->check_max = 0u;
                ls->checks += 1u;
                return;
            }
        }
    } else {
        if ((ls->go & GO_CHECK) == 0u) return;
        ls->bound = ls->check_max; /* the check's bound B, carried while the lists are kept */
        need = as_float(ls->bound) >= NP->skin_rel[k] ? NEED_HARD : 0u;
    }
    uint g = force || need ? 1u : 0u, k2 = k;
    if (need) {
        if (k > 0u && age < NP->skin_grow_age[k]) k2 = k - 1u;
    } else if (k + 1u < NLIST_SKIN_LEVELS && age >= NP->skin_shrink_age[k]) {
        g = 1u;
        k2 = k + 1u;
    }
    ls->go = g ? GO_REBUILD : 0u;
    ls->need = 0u;
    ls->rebuilds += g;
    ls->age = g ? 0u : age + (age < 0xffffffffu ? 1u : 0u);
    ls->level = k2;
    if (g) {
        wet_n[0] = 0u;                 /* the wet cells, listed again by nlist_cell_fluid */
        ls->walkers = 0u;              /* counted again by the list build */
        ls->bound = as_uint(INFINITY); /* no bound until a check */
        ls->filter = nlist_step_filter(NP, k2, check);
    }
}

/* In a step whose decision rebuilds (returns at once otherwise), after the grid and the gathers:
 * cell_fluid[c] = CELL_FLUID if cell c of the new grid holds a fluid particle, | CELL_WALL if it
 * holds a wall particle, for the list build, where a wall particle skips the cells without fluid
 * and the walk beyond the 3^d block the cells without what it looks for (nlist_build.h). One
 * work-item per cell, which stops once it has seen both. The cells with fluid also go, in no
 * particular order, to wet[0 .. wet_n), which nlist_go emptied when it decided the rebuild: the
 * check's kernels visit only those (most of a dam break's tank holds none). */
__kernel void nlist_cell_fluid(__global const uchar *type, __global const uint *cell_start,
                               __global const uint *cell_end, __constant const grid_params *gp,
                               __global const nlist_state *nl_state, __global uchar *cell_fluid, __global uint *wet,
                               __global uint *wet_n)
{
    if ((nl_state->go & GO_REBUILD) == 0u) return;
    __local uint cnt, base;
    const uint l = get_local_id(0), ls = get_local_size(0), n_cells = gp->n_cells;
    /* the same trips for every work-item of a group, so that all reach the barriers */
    for (uint b = get_group_id(0) * ls; b < n_cells; b += get_num_groups(0) * ls) {
        const uint c = b + l;
        uint f = 0u;
        if (c < n_cells) {
            const uint j1 = cell_end[c];
            for (uint j = cell_start[c]; j < j1 && f != (CELL_FLUID | CELL_WALL); ++j)
                f |= type[j] == PTYPE_FLUID ? CELL_FLUID : type[j] == PTYPE_BOUNDARY ? CELL_WALL : 0u;
            cell_fluid[c] = (uchar)f;
        }
        /* the group's wet cells go to the list in one global atomic (their order there does not
         * matter: each cell's box, and the check's maximum, are the same in any order) */
        if (l == 0u) cnt = 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int w = (f & CELL_FLUID) != 0u;
        const uint slot = w ? atomic_inc(&cnt) : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l == 0u) base = cnt ? atomic_add(wet_n, cnt) : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (w && base + slot < n_cells) wet[base + slot] = c; /* (a stale count never writes past) */
    }
}

/* The arguments both kernels of the check take first: x, the state the last step wrote (the
 * positions the next step reads), and the kept grid. */
#define NLIST_CHECK_ARGS                                                                                               \
    __global const float4 *x, __global const uchar *type, __global const uint *cell_start,                             \
        __global const uint *cell_end, __constant const grid_params *gp, __global const float4 *pos_ref,               \
        __global nlist_state *nl_state, __global float4 *cref, __global const uchar *cell_fluid,                       \
        __global const uint *wet, __global const uint *wet_n

/* Cell c of the kept grid holds fluid: the flags nlist_cell_fluid wrote at the rebuild, which hold
 * until the next one (the particles stay in the cells of the build while the grid is kept). */
#define NLIST_CELL_WET_(c) ((cell_fluid[c] & CELL_FLUID) != 0u)

/* Work-items per cell in nlist_cell_boxes (-DNLIST_CELL_LANES, nlist.c): 1 on CPUs, 8 on GPUs. */
#ifndef NLIST_CELL_LANES
#define NLIST_CELL_LANES 1
#endif

/* One fluid particle's displacement d into a cell's box (lo, hi; in w: lo -1 once the cell has
 * fluid, hi 1 once some d is not finite). */
inline void nlist_box_add(float4 d, float4 *lo, float4 *hi)
{
    const float bad = isfinite(d.x) && isfinite(d.y) && isfinite(d.z) ? 0.0f : 1.0f;
    d.w = 0.0f;
    *lo = fmin(*lo, d);
    *hi = fmax(*hi, d);
    (*lo).w = -1.0f;
    (*hi).w = fmax((*hi).w, bad);
}

/* The box (lo, hi) of cell c's particles j = cell_start[c] + first, every `step`-th. */
inline void nlist_box_of(uint c, uint first, uint step, __global const float4 *x, __global const float4 *pos_ref,
                         __global const uchar *type, __global const uint *cell_start, __global const uint *cell_end,
                         float4 *lo, float4 *hi)
{
    *lo = (float4)(INFINITY, INFINITY, INFINITY, 0.0f);
    *hi = (float4)(-INFINITY, -INFINITY, -INFINITY, 0.0f);
    const uint j1 = cell_end[c];
    for (uint j = cell_start[c] + first; j < j1; j += step)
        if (type[j] == PTYPE_FLUID) nlist_box_add(x[j] - pos_ref[j], lo, hi);
}

/* A cell's entry from its box: centre u and, in w, half the diagonal r (infinite if some d was
 * not finite), or w = -1 without fluid. */
inline float4 nlist_box_ref(float4 lo, float4 hi)
{
    float4 u = (float4)(0.0f, 0.0f, 0.0f, -1.0f);
    if (lo.w < 0.0f) {
        float4 semi = 0.5f * (hi - lo);
        semi.w = 0.0f;
        u = 0.5f * (lo + hi);
        u.w = hi.w > 0.0f ? INFINITY : length(semi);
    }
    return u;
}

/* The relative-motion check, first pass (a step whose decision has GO_CHECK; returns at once
 * otherwise): for every cell c of the kept grid that holds fluid, the box around the
 * displacements d = x - x_ref of its fluid particles, written to cref[c] as its centre u_c and,
 * in w, the half of its diagonal r_c, so that |d - u_c| <= r_c for every fluid particle of c
 * (nlist_check). It takes the cells from the list nlist_cell_fluid wrote (wet[0 .. wet_n)); the
 * other cells, most of a dam break's tank, are not read or written, and nlist_check skips them by
 * their flags. A non-finite d makes r_c infinite (fmin and fmax would drop a NaN), so that the
 * step rebuilds. With NLIST_CELL_LANES = L > 1, L work-items take a cell: lane l the particles
 * l, l + L, ... of it in sorted order, so that the lanes of a cell read consecutive particles
 * (one work-item per cell reads 16-byte pieces some 300 bytes apart), and the first lane joins
 * their boxes through `red` (2 float4 per work-item of a group); nlist.c then launches enough
 * work-groups for one trip each. min and max give the same box in any order, so the entries do
 * not depend on L. */
__kernel void nlist_cell_boxes(NLIST_CHECK_ARGS, __local float4 *red)
{
    if ((nl_state->go & GO_CHECK) == 0u) return; /* the same for every work-item: none reaches a barrier */
    const uint nw = wet_n[0];                    /* the kept grid's cells with fluid, wet[0 .. nw) (nlist_cell_fluid) */
    float4 lo, hi;
#if NLIST_CELL_LANES > 1
    /* L lanes a cell (fewer in a smaller group), `per` cells a group; the work-items past
     * per L (a group whose size L does not divide) only reach the barriers */
    const uint ls = get_local_size(0), lanes = min((uint)NLIST_CELL_LANES, ls), per = ls / lanes;
    const uint l = get_local_id(0), lane = l % lanes, mine = l / lanes < per;
    /* the same trips for every work-item of a group, so that all reach the barriers */
    for (uint base = get_group_id(0) * per; base < nw; base += get_num_groups(0) * per) {
        const uint k = base + l / lanes, take = mine && k < nw, c = take ? wet[k] : 0u;
        if (take) {
            nlist_box_of(c, lane, lanes, x, pos_ref, type, cell_start, cell_end, &lo, &hi);
            red[2 * l] = lo;
            red[2 * l + 1] = hi;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane == 0u && take) {
            for (uint q = 1u; q < lanes; ++q) {
                const float4 lo_q = red[2 * (l + q)], hi_q = red[2 * (l + q) + 1];
                lo = fmin(lo, lo_q);
                hi = fmax(hi, hi_q);
            }
            cref[c] = nlist_box_ref(lo, hi);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    for (uint k = get_global_id(0); k < nw; k += get_global_size(0)) {
        const uint c = wet[k];
        nlist_box_of(c, 0u, 1u, x, pos_ref, type, cell_start, cell_end, &lo, &hi);
        cref[c] = nlist_box_ref(lo, hi);
    }
#endif
}

/* The relative-motion check of a step whose decision has GO_CHECK (returns at once otherwise):
 * may the lists be kept although some fluid particle moved more than skin_k / 2? A pair that is
 * not listed was more than R_l = R (1 + skin_k) apart at the build (R the support) and is still
 * more than R apart if its relative displacement |d_i - d_j| < skin_k R (d = x - x_ref,
 * x_ref = pos_ref, where the lists were built). The forces stage asked for a rebuild if any fluid
 * particle has |d| >= min(2 skin_k, 1/2 + skin_0) R (skin_0 R while some particle walks;
 * NEED_HARD), which covers every fluid-wall pair (walls do not move, and the lists hold them
 * within R (1 + 2 skin_k)) and every pair in cells of the kept grid at least three apart (at
 * least 2 cells >= 2 R_l apart at the build). For fluid i in cell c and fluid j in cell c' at
 * most two apart (in each axis; c' = c included), with the boxes of nlist_cell_boxes,
 *   |d_i - d_j| <= |d_i - u_c| + |u_c - u_c'| + |u_c' - d_j| <= r_c + |u_c - u_c'| + r_c',
 * and this kernel writes the largest such bound B to nl_state->check_max (atomic_max on the bits
 * of floats >= 0, which order as uints); nlist_go's pass 1 keeps the lists if B < skin_rel =
 * 0.999 skin_k R. A cell's own pairs give 2 r_c. In a flow that moves as a whole (the surge of a
 * dam break), the relative motion is far smaller than the motion, and the lists last longer.
 * Work-item k takes the cells with fluid wet[k], wet[k + the number of work-items], ... and, of
 * the cells after each, those with fluid, launched over a few work-groups that loop (nlist.c).
 * `red` holds one float per work-item of a group. */
__kernel void nlist_check(NLIST_CHECK_ARGS, __local float *red)
{
    if ((nl_state->go & GO_CHECK) == 0u) return; /* the same for every work-item: none reaches the barrier */
    const int r = gp->dims == 3 ? 2 : 0;
    const uint nx = gp->ncell[0], ny = gp->ncell[1], nz = gp->ncell[2];
    float bmax = 0.0f;
    const uint nw = wet_n[0];
    for (uint k = get_global_id(0); k < nw; k += get_global_size(0)) {
        const uint c = wet[k];
        const float4 u = cref[c];
        bmax = nlist_max_nan_inf(bmax, 2.0f * u.w);
        /* the cells after c (in z, y, x order) at most two apart in each axis */
        const int cx = (int)(c % nx), cy = (int)(c / nx % ny), cz = (int)(c / (nx * ny));
        for (int oz = 0; oz <= r; ++oz)
            for (int oy = oz > 0 ? -2 : 0; oy <= 2; ++oy)
                for (int ox = oz > 0 || oy > 0 ? -2 : 1; ox <= 2; ++ox) {
                    const int qx = cx + ox, qy = cy + oy, qz = cz + oz;
                    if (qx < 0 || qy < 0 || qx >= (int)nx || qy >= (int)ny || qz >= (int)nz) continue;
                    const uint q = (uint)qx + nx * ((uint)qy + ny * (uint)qz);
                    if (!NLIST_CELL_WET_(q)) continue;
                    const float4 w = cref[q];
                    float4 e = w - u;
                    e.w = 0.0f;
                    bmax = nlist_max_nan_inf(bmax, u.w + w.w + length(e));
                }
    }
    /* the group's maximum, then one atomic */
    const uint l = get_local_id(0), ls = get_local_size(0);
    red[l] = bmax;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0u) {
        for (uint k = 1u; k < ls; ++k) bmax = fmax(bmax, red[k]);
        atomic_max(&nl_state->check_max, as_uint(bmax));
    }
}

/* The lists of every particle (a step whose decision rebuilds; nlist_build.h), for a device where
 * the density stage then reads them (GPUs, tuning.list_build): without the density sum in its
 * loop the build took 8.5 instead of 11.5 ms at 1.4x10^7 particles on the H200, the step about
 * 1 % less (docs/performance.md). */
__kernel void nlist_build(const uint n, __global const float4 *pos, __global const uchar *type,
                          __global const uint *cell_start, __global const uint *cell_end,
                          __constant const grid_params *gp, __global const uchar *cell_fluid, const uint use_cf,
                          const uint stride, NLIST_BUILD_ARGS)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    nlist_build_one(n, i, pos[i], type[i] == PTYPE_FLUID, pos, type, cell_start, cell_end, gp, cell_fluid, use_cf,
                    nl_list, nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP);
}
