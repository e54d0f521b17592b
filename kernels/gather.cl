/* gather.cl: dst[i] = src[idx[i]] for the particle arrays, one kernel per element size
 * (1, 2, 4, 8 and 16 bytes), so every per-particle array follows the grid's sorted order. */
#include "shared.h"

#define GRID_GATHER(name, type)                                                                                        \
    __kernel void name(__global const type *src, __global const uint *idx, const uint n, __global type *dst)           \
    {                                                                                                                  \
        const uint i = get_global_id(0);                                                                               \
        if (i >= n) return;                                                                                            \
        dst[i] = src[idx[i]];                                                                                          \
    }

GRID_GATHER(grid_gather_1, uchar)
GRID_GATHER(grid_gather_2, ushort)
GRID_GATHER(grid_gather_4, uint)
GRID_GATHER(grid_gather_8, uint2)
GRID_GATHER(grid_gather_16, uint4)
