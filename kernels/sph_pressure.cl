/* sph_pressure.cl: writes, for a snapshot, each particle's density and pressure p = EOS(rho)
 * as plain arrays (the same function the density stage applies; for a wall rho_w = EOS^-1(p_w)
 * gives p_w back), after the step's density stage. */
#include "sph_common.h"

__kernel void sph_pressure(const uint n, __constant const sph_params *P,
                           __global const float4 *vel,   /* (v, rho), -rho for walls */
                           __global const float4 *pos_p, /* the density stage's records */
                           __global float *rho,          /* kg/m^3, out */
                           __global float *pressure)     /* Pa, out */
{
    const uint i = get_global_id(0);
    if (i >= n) return;
#ifdef DENSITY_CONTINUITY
    const float rho_i = fabs(SPH_NB_V_(pos_p, vel, i).w); /* the step's: the record's, not yet the state's */
#else
    const float rho_i = fabs(vel[i].w);
#endif
    rho[i] = rho_i;
    pressure[i] = sph_eos(rho_i, P);
}
