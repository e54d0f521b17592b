/* selftest.cl: a tiny kernel for the device layer's own test (include expansion, build
 * options, 1D launches with a rounded-up global size). */
#include "shared.h"

__kernel void selftest_axpy(const uint n, const float a, __global const float *x, __global float *y)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    y[i] = a * x[i] + y[i] + (float)SELFTEST_OFFSET + (float)PTYPE_SPHERE;
}
