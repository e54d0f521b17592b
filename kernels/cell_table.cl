/* cell_table.cl: writes each occupied cell's run [cell_start, cell_end) in the key-sorted
 * arrays, indexed by the linear cell index cx + nx*(cy + ny*cz) decoded from the Morton key.
 * The host fills both tables with 0 first, so empty cells have start == end.
 * Build options: -DDIMS=2|3, -DKEY64=0|1. */
#include "grid_shared.h"
#include "morton.h"

#ifndef DIMS
#define DIMS 3
#endif

#include "grid_key.h"

static inline uint cell_linear(key_t key, __constant const grid_params *gp)
{
    uint cx, cy, cz = 0;
#if DIMS == 3
#if KEY64
    morton3_decode64(key, &cx, &cy, &cz);
#else
    morton3_decode32(key, &cx, &cy, &cz);
#endif
#else
#if KEY64
    morton2_decode64(key, &cx, &cy);
#else
    morton2_decode32(key, &cx, &cy);
#endif
#endif
    return cx + gp->ncell[0] * (cy + gp->ncell[1] * cz);
}

/* Sorted slot i (a loop with the launch's stride, grid.c run_strided): a run of equal keys
 * starts where the previous key differs and ends where the next one does. */
__kernel void cell_table(__global const key_t *keys, const uint n, __constant const grid_params *gp,
                         __global uint *cell_start, __global uint *cell_end)
{
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        const key_t k = keys[i];
        const int first = i == 0 || keys[i - 1] != k;
        const int last = i + 1 == n || keys[i + 1] != k;
        if (first || last) {
            const uint c = cell_linear(k, gp);
            if (first) cell_start[c] = i;
            if (last) cell_end[c] = i + 1;
        }
    }
}
