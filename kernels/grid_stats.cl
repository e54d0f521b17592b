/* grid_stats.cl: per particle (sorted slot i), the number of particles within the search
 * radius (itself included) and the number of candidates the neighbour loop scans; the host
 * sums them (grid_neighbour_stats). `pos` is in sorted order, as the solvers read it. */
#include "neighbours.h"

__kernel void grid_count_neighbours(__global const float4 *pos, const uint n, __constant const grid_params *gp,
                                    __global const uint *cell_start, __global const uint *cell_end,
                                    __global uint *neighbours, __global uint *candidates)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const float4 x_i = pos[i];
    const float radius2 = gp->radius * gp->radius;
    uint n_nb = 0, n_cand = 0;
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, x_i, j)
    float4 dx = x_i - pos[j]; /* dx = x_i - x_j */
    dx.w = 0.0f;
    const float r2 = dot(dx, dx);
    ++n_cand;
    if (r2 >= radius2) continue;
    ++n_nb;
    NEIGHBOURS_END
    neighbours[i] = n_nb;
    candidates[i] = n_cand;
}
