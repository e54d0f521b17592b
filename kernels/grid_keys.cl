/* grid_keys.cl: writes every particle's cell key, the Morton code of its cell coordinate
 * floor((x - origin) / cell) clamped into the grid (the same function, grid_cell_coord from
 * neighbours.h, that the neighbour loop uses for the query particle), and flags particles
 * whose position is not finite (FLAG_NONFINITE, cell 0) or lies outside the grid box
 * (FLAG_OUTSIDE, clamped into the nearest border cell). The same launch empties the cell table
 * (start = end = 0) for cell_table.cl: max(n, n_cells) work-items, one launch fewer per step.
 * grid_order tells whether the keys are in order already (grid.c, grid_build_keep).
 * Build options: -DDIMS=2|3, -DKEY64=0|1. */
#include "neighbours.h"
#include "morton.h"

#ifndef DIMS
#define DIMS 3
#endif

#include "grid_key.h"

/* 1 when the cell coordinate of x along one axis had to be clamped into [0, ncell). */
static inline int grid_coord_outside(float x, float origin, float cell_inv, uint ncell)
{
    const float c = floor((x - origin) * cell_inv);
    return !(c >= 0.0f && c < (float)ncell);
}

/* The cell key of particle i, and its flags. */
static inline void grid_key_one(const uint i, __global const float4 *pos, __constant const grid_params *gp,
                                __global key_t *keys, __global uint *flags)
{
    const float4 x = pos[i];
    const uint cx = (uint)grid_cell_coord(x.x, gp->origin[0], gp->cell_size_inv, gp->ncell[0]);
    const uint cy = (uint)grid_cell_coord(x.y, gp->origin[1], gp->cell_size_inv, gp->ncell[1]);
#if DIMS == 3
    const uint cz = (uint)grid_cell_coord(x.z, gp->origin[2], gp->cell_size_inv, gp->ncell[2]);
    const int finite = isfinite(x.x) && isfinite(x.y) && isfinite(x.z);
    const int outside = grid_coord_outside(x.x, gp->origin[0], gp->cell_size_inv, gp->ncell[0]) ||
                        grid_coord_outside(x.y, gp->origin[1], gp->cell_size_inv, gp->ncell[1]) ||
                        grid_coord_outside(x.z, gp->origin[2], gp->cell_size_inv, gp->ncell[2]);
#if KEY64
    keys[i] = morton3_encode64(cx, cy, cz);
#else
    keys[i] = morton3_encode32(cx, cy, cz);
#endif
#else
    const int finite = isfinite(x.x) && isfinite(x.y);
    const int outside = grid_coord_outside(x.x, gp->origin[0], gp->cell_size_inv, gp->ncell[0]) ||
                        grid_coord_outside(x.y, gp->origin[1], gp->cell_size_inv, gp->ncell[1]);
#if KEY64
    keys[i] = morton2_encode64(cx, cy);
#else
    keys[i] = morton2_encode32(cx, cy);
#endif
#endif
    if (!finite) atomic_or(flags, FLAG_NONFINITE);
    else if (outside) atomic_or(flags, FLAG_OUTSIDE);
}

/* Loops over max(n, n_cells) items with the launch's stride (grid.c, run_strided). */
__kernel void grid_keys(__global const float4 *pos, const uint n, __constant const grid_params *gp,
                        __global key_t *keys, __global uint *flags, __global uint *cell_start, __global uint *cell_end)
{
    const uint n_cells = gp->n_cells, total = max(n, n_cells);
    for (uint i = get_global_id(0); i < total; i += get_global_size(0)) {
        if (i < n_cells) {
            cell_start[i] = 0;
            cell_end[i] = 0;
        }
        if (i < n) grid_key_one(i, pos, gp, keys, flags);
    }
}

/* *out_of_order |= 1 when a key is above the next one (keys[0..n)): otherwise the stable sort
 * would leave every particle where it is (grid_build_keep). Loops with the launch's stride. */
__kernel void grid_order(__global const key_t *keys, const uint n, __global uint *out_of_order)
{
    for (uint i = get_global_id(0); i + 1u < n; i += get_global_size(0))
        if (keys[i] > keys[i + 1u]) {
            atomic_or(out_of_order, 1u);
            return;
        }
}
