/* halo: the halo copies of the particles other MPI ranks own, refreshed between two steps
 * (src/halo.c; docs/mpi.md). Rows are device rows of the current (sorted) order. */

/* out[2 k], out[2 k + 1] = pos[rows[k]], vel[rows[k]]: the rows other ranks hold as halo. */
__kernel void halo_pack(const uint n, __global const uint *rows, __global const float4 *pos, __global const float4 *vel,
                        __global float4 *out)
{
    const uint k = get_global_id(0);
    if (k >= n) return;
    const uint r = rows[k];
    out[2 * k] = pos[r];
    out[2 * k + 1] = vel[r];
}

/* pos[rows[k]], vel[rows[k]] = in[2 k], in[2 k + 1]: the halo rows, from their owners. */
__kernel void halo_unpack(const uint n, __global const uint *rows, __global const float4 *in, __global float4 *pos,
                          __global float4 *vel)
{
    const uint k = get_global_id(0);
    if (k >= n) return;
    const uint r = rows[k];
    pos[r] = in[2 * k];
    vel[r] = in[2 * k + 1];
}
