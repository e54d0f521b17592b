/* geom_eval.cl: the device's signed distance (kernels/geom.h) at given points, for
 * tests/test_geometry.c to compare with the host's double-precision geom_sdf_grid. */
#include "geom.h"

__kernel void geom_eval(const uint n, __constant const geom_object *objects, const uint n_objects,
                        __global const float *geom_grid, __global const float4 *x, __global float4 *out)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const uint o = i % n_objects; /* point i against object i mod n_objects */
    float4 nrm;
    const float phi = geom_sdf(&objects[o], geom_grid, x[i], &nrm);
    out[i] = (float4)(nrm.xyz, phi);
}
