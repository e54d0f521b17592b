/* tree_sum.h: a work-group's sum in a fixed order (OpenCL C), shared by the gauges
 * (kernels/gauges.cl) and the force gauges' sums of the boundary stage (kernels/sph_boundary.cl). */
#ifndef SPHSIM_TREE_SUM_H
#define SPHSIM_TREE_SUM_H

/* Adds the work-group's pairs red[2 l], red[2 l + 1] into red[0], red[1] in a fixed tree (any
 * work-group size L); every work-item calls it. */
inline void tree_add_pairs(__local float4 *red, const uint l, const uint L)
{
    for (uint h = 1u; h < L; h <<= 1u) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if ((l & (2u * h - 1u)) == 0u && l + h < L) {
            red[2u * l] += red[2u * (l + h)];
            red[2u * l + 1u] += red[2u * (l + h) + 1u];
        }
    }
}

#endif
