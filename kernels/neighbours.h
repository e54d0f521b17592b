/* neighbours.h: the one neighbour-iteration helper shared by the SPH and contact kernels.
 *
 * Scans the (2*reach+1)^dims block of cells around the cell of position `xi` (3x3 or 3x3x3
 * when the cell size equals the search radius) and runs the body once for every particle
 * index `j` stored in those cells, in sorted order. Cells of the block are distinct, so every
 * particle in the block is visited exactly once; particles within `gp->radius` of xi are all
 * in the block. The body tests the distance itself (and may `continue`), and sees j == i.
 *
 *   NEIGHBOURS_BEGIN(gp, cell_start, cell_end, xi, j)
 *       const float4 dx = xi - pos[j];          // dx = x_i - x_j
 *       const float r2 = dot(dx, dx);
 *       if (r2 >= radius2) continue;
 *       ...
 *   NEIGHBOURS_END
 */
#ifndef SPHSIM_NEIGHBOURS_H
#define SPHSIM_NEIGHBOURS_H

#include "grid_shared.h"

/* Cell coordinate of position x, clamped into the grid (NaN goes to cell 0). */
inline int grid_cell_coord(float x, float origin, float cell_inv, uint ncell)
{
    const float c = floor((x - origin) * cell_inv);
    if (!(c >= 0.0f)) return 0; /* also catches NaN */
    if (c >= (float)ncell) return (int)ncell - 1;
    return (int)c;
}

/* Cell walk: runs the body once per cell of the block, in the same order as the neighbour
 * walks below, with that cell's particles in [j0, j1) (sorted indices; empty cells included). */
/* Declares the cell block scanned around position xi, clipped to the grid: cells x0..x1,
 * y0..y1, z0..z1 (inclusive; z0 = z1 = 0 in 2D). */
#define NEIGHBOURS_BLOCK(gp, xi, x0, x1, y0, y1, z0, z1)                                                               \
    const int x0##_r_ = (int)(gp)->reach;                                                                              \
    const int x0##_cx_ = grid_cell_coord((xi).x, (gp)->origin[0], (gp)->cell_size_inv, (gp)->ncell[0]);                \
    const int x0##_cy_ = grid_cell_coord((xi).y, (gp)->origin[1], (gp)->cell_size_inv, (gp)->ncell[1]);                \
    const int x0##_cz_ =                                                                                               \
        (gp)->dims == 3 ? grid_cell_coord((xi).z, (gp)->origin[2], (gp)->cell_size_inv, (gp)->ncell[2]) : 0;           \
    const int x0##_rz_ = (gp)->dims == 3 ? x0##_r_ : 0;                                                                \
    const int z0 = max(x0##_cz_ - x0##_rz_, 0), z1 = min(x0##_cz_ + x0##_rz_, (int)(gp)->ncell[2] - 1);                \
    const int y0 = max(x0##_cy_ - x0##_r_, 0), y1 = min(x0##_cy_ + x0##_r_, (int)(gp)->ncell[1] - 1);                  \
    const int x0 = max(x0##_cx_ - x0##_r_, 0), x1 = min(x0##_cx_ + x0##_r_, (int)(gp)->ncell[0] - 1);

#define NEIGHBOURS_CELLS_BEGIN(gp, cell_start, cell_end, xi, j0, j1)                                                   \
    {                                                                                                                  \
        NEIGHBOURS_BLOCK(gp, xi, nb_x0_, nb_x1_, nb_y0_, nb_y1_, nb_z0_, nb_z1_)                                       \
        for (int nb_z_ = nb_z0_; nb_z_ <= nb_z1_; ++nb_z_)                                                             \
            for (int nb_y_ = nb_y0_; nb_y_ <= nb_y1_; ++nb_y_) {                                                       \
                const uint nb_row_ = (uint)nb_x0_ + (gp)->ncell[0] * ((uint)nb_y_ + (gp)->ncell[1] * (uint)nb_z_);     \
                for (int nb_x_ = nb_x0_; nb_x_ <= nb_x1_; ++nb_x_) {                                                   \
                    const uint nb_c_ = nb_row_ + (uint)(nb_x_ - nb_x0_);                                               \
                    const uint j0 = (cell_start)[nb_c_], j1 = (cell_end)[nb_c_];

/* Inside NEIGHBOURS_CELLS_BEGIN: the linear index cx + nx (cy + ny cz) of the current cell. */
#define NEIGHBOURS_CELL nb_c_

#define NEIGHBOURS_CELLS_END                                                                                           \
    }                                                                                                                  \
    }                                                                                                                  \
    }

/* Plain walk: the body runs for every candidate j of the block. */
#define NEIGHBOURS_BEGIN(gp, cell_start, cell_end, xi, j)                                                              \
    NEIGHBOURS_CELLS_BEGIN(gp, cell_start, cell_end, xi, nb_j0_, nb_j1_)                                               \
    for (uint j = nb_j0_; j < nb_j1_; ++j) {

#define NEIGHBOURS_END                                                                                                 \
    }                                                                                                                  \
    NEIGHBOURS_CELLS_END

/* In-range walk: the same cells, candidates and order as NEIGHBOURS_BEGIN, but in two passes per
 * run of up to 32 candidates of a cell: a cheap pass sets bit k of a mask when candidate k is
 * within sqrt(radius2) of xi (r2 = |dx|^2 with dx.w = 0, as the body computes it), then the
 * body runs once per set bit, lowest first, so neighbours are visited in the same order as
 * before. On a GPU the lanes of a warp walk different cells, so a plain walk runs the body
 * whenever any lane has a neighbour (most candidate steps); here it runs about as often as the
 * lanes have neighbours.
 * The body sees only j with r2 < radius2 but recomputes dx itself. */
/* Bit k of the result: candidate b + k (k < n <= 32) is within sqrt(radius2) of xi. */
inline uint nb_mask_(__global const float4 *pos, float4 xi, float radius2, uint b, uint n)
{
    uint m = 0u;
    for (uint k = 0u; k < n; ++k) {
        float4 d = xi - pos[b + k];
        d.w = 0.0f;
        m |= (dot(d, d) < radius2 ? 1u : 0u) << k;
    }
    return m;
}

#define NEIGHBOURS_IN_RANGE_BEGIN(gp, cell_start, cell_end, pos, xi, radius2, j)                                       \
    NEIGHBOURS_CELLS_BEGIN(gp, cell_start, cell_end, xi, nb_j0_, nb_j1_)                                               \
    for (uint nb_b_ = nb_j0_; nb_b_ < nb_j1_; nb_b_ += 32u) {                                                          \
        uint nb_m_ = nb_mask_(pos, xi, radius2, nb_b_, min(nb_j1_ - nb_b_, 32u));                                      \
        while (nb_m_ != 0u) {                                                                                          \
            const uint nb_low_ = nb_m_ & (0u - nb_m_);                                                                 \
            nb_m_ ^= nb_low_;                                                                                          \
            const uint j = nb_b_ + (31u - clz(nb_low_));

#define NEIGHBOURS_IN_RANGE_END                                                                                        \
    }                                                                                                                  \
    }                                                                                                                  \
    NEIGHBOURS_CELLS_END

#endif
