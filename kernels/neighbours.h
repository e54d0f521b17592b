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

#define NEIGHBOURS_BEGIN(gp, cell_start, cell_end, xi, j)                                          \
    {                                                                                              \
        const int nb_r_ = (int)(gp)->reach;                                                        \
        const int nb_cx_ = grid_cell_coord((xi).x, (gp)->origin[0], (gp)->cell_size_inv, (gp)->ncell[0]); \
        const int nb_cy_ = grid_cell_coord((xi).y, (gp)->origin[1], (gp)->cell_size_inv, (gp)->ncell[1]); \
        const int nb_cz_ = (gp)->dims == 3                                                         \
            ? grid_cell_coord((xi).z, (gp)->origin[2], (gp)->cell_size_inv, (gp)->ncell[2]) : 0;   \
        const int nb_rz_ = (gp)->dims == 3 ? nb_r_ : 0;                                            \
        const int nb_z0_ = max(nb_cz_ - nb_rz_, 0), nb_z1_ = min(nb_cz_ + nb_rz_, (int)(gp)->ncell[2] - 1); \
        const int nb_y0_ = max(nb_cy_ - nb_r_, 0), nb_y1_ = min(nb_cy_ + nb_r_, (int)(gp)->ncell[1] - 1); \
        const int nb_x0_ = max(nb_cx_ - nb_r_, 0), nb_x1_ = min(nb_cx_ + nb_r_, (int)(gp)->ncell[0] - 1); \
        for (int nb_z_ = nb_z0_; nb_z_ <= nb_z1_; ++nb_z_)                                         \
            for (int nb_y_ = nb_y0_; nb_y_ <= nb_y1_; ++nb_y_) {                                   \
                const uint nb_row_ = (uint)nb_x0_ + (gp)->ncell[0] * ((uint)nb_y_ + (gp)->ncell[1] * (uint)nb_z_); \
                for (int nb_x_ = nb_x0_; nb_x_ <= nb_x1_; ++nb_x_) {                               \
                    const uint nb_c_ = nb_row_ + (uint)(nb_x_ - nb_x0_);                           \
                    const uint nb_end_ = (cell_end)[nb_c_];                                        \
                    for (uint j = (cell_start)[nb_c_]; j < nb_end_; ++j) {

#define NEIGHBOURS_END                                                                             \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }

#endif
