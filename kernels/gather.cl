/* gather.cl: dst[i] = src[idx[i]] for the particle arrays, one kernel per element size
 * (1, 2, 4, 8 and 16 bytes), so every per-particle array follows the grid's sorted order; and
 * the gathers of a run whose buffer pairs the device swaps (grid_gather_state). All of them do
 * nothing in a step whose go word lacks GO_REBUILD (a step that keeps the last grid, grid.h). */
#include "shared.h"

#define GRID_GATHER(name, type)                                                                                        \
    __kernel void name(__global const type *src, __global const uint *idx, const uint n, __global type *dst,           \
                       __global const uint *go)                                                                        \
    {                                                                                                                  \
        if ((go[0] & GO_REBUILD) == 0u) return;                                                                        \
        const uint i = get_global_id(0);                                                                               \
        if (i >= n) return;                                                                                            \
        dst[i] = src[idx[i]];                                                                                          \
    }

GRID_GATHER(grid_gather_1, uchar)
GRID_GATHER(grid_gather_2, ushort)
GRID_GATHER(grid_gather_4, uint)
GRID_GATHER(grid_gather_8, uint2)
GRID_GATHER(grid_gather_16, uint4)

/* The gathers of a run whose (pos, vel) pairs the device swaps (sim.c, SPH neighbour lists), in
 * one pass over idx: pos_dst[i] = pos_src[idx[i]] and the same for vel, or with GO_ALT the
 * other way round (the last output is then in the *_dst buffers); id and type into their
 * scratch, which grid_copy_state copies back (the host cannot swap handles it does not know to
 * swap). Loops over the particles with the launch's stride (grid.c, run_strided): a step that
 * keeps the grid launches few work-groups that return at once. */
__kernel void grid_gather_state(__global uint4 *pos_src, __global uint4 *pos_dst, __global uint4 *vel_src,
                                __global uint4 *vel_dst, __global const uint *id, __global uint *id_tmp,
                                __global const uchar *type, __global uchar *type_tmp, __global const uint *idx,
                                const uint n, __global const uint *go)
{
    const uint g = go[0];
    if ((g & GO_REBUILD) == 0u) return;
    const int alt = (g & GO_ALT) != 0u;
    __global const uint4 *ps = alt ? pos_dst : pos_src, *vs = alt ? vel_dst : vel_src;
    __global uint4 *pd = alt ? pos_src : pos_dst, *vd = alt ? vel_src : vel_dst;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        const uint s = idx[i];
        pd[i] = ps[s];
        vd[i] = vs[s];
        id_tmp[i] = id[s];
        type_tmp[i] = type[s];
    }
}

__kernel void grid_copy_state(__global const uint *id_tmp, __global uint *id, __global const uchar *type_tmp,
                              __global uchar *type, const uint n, __global const uint *go)
{
    if ((go[0] & GO_REBUILD) == 0u) return;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        id[i] = id_tmp[i];
        type[i] = type_tmp[i];
    }
}
