/* motion.h: the prescribed rigid motion of the walls on the device (OpenCL C, -DMOTION): a body's
 * placement, velocity and acceleration at one time (motion_shared.h), and the signed distance
 * of an object that moves with its body. Every form is exact for a body at rest (R = I, d = 0):
 * the terms that move are added to the point, never recomputed from the pivot. */
#ifndef SPHSIM_MOTION_H
#define SPHSIM_MOTION_H

#include "motion_shared.h"
#include "geom.h"

/* The wall-motion arguments of the boundary and forces stages (bound to a placeholder without
 * -DMOTION): the sorted ids, each wall particle's rest position and body (x0, body), indexed by
 * id - first_wall, and the bodies at this step's time (motion[b]) and the next's
 * (motion[MOTION_MAX_BODIES + b]). */
#define MOTION_ARGS                                                                                                    \
    __global const uint *id, __global const float4 *wall_ref, __global const motion_body *motion

/* R v and R^T v */
inline float3 motion_rot(__global const motion_body *b, float3 v)
{
    return (float3)(b->rot[0] * v.x + b->rot[1] * v.y + b->rot[2] * v.z,
                    b->rot[3] * v.x + b->rot[4] * v.y + b->rot[5] * v.z,
                    b->rot[6] * v.x + b->rot[7] * v.y + b->rot[8] * v.z);
}
inline float3 motion_rot_t(__global const motion_body *b, float3 v)
{
    return (float3)(b->rot[0] * v.x + b->rot[3] * v.y + b->rot[6] * v.z,
                    b->rot[1] * v.x + b->rot[4] * v.y + b->rot[7] * v.z,
                    b->rot[2] * v.x + b->rot[5] * v.y + b->rot[8] * v.z);
}
inline float3 motion_pivot(__global const motion_body *b) { return (float3)(b->pivot[0], b->pivot[1], b->pivot[2]); }
inline float3 motion_disp(__global const motion_body *b) { return (float3)(b->disp[0], b->disp[1], b->disp[2]); }

/* x = R (x0 - c) + c + d, the place of the body point at rest at x0 */
inline float3 motion_place(__global const motion_body *b, float3 x0)
{
    const float3 r0 = x0 - motion_pivot(b);
    return x0 + motion_disp(b) + (motion_rot(b, r0) - r0);
}

/* the rest position of the body point at x: R^T (x - c - d) + c */
inline float3 motion_to_body(__global const motion_body *b, float3 x)
{
    const float3 r = x - motion_disp(b) - motion_pivot(b);
    return x - motion_disp(b) + (motion_rot_t(b, r) - r);
}

/* v = d' + omega x (x - c - d) */
inline float3 motion_velocity(__global const motion_body *b, float3 x)
{
    const float3 r = x - motion_disp(b) - motion_pivot(b);
    return (float3)(b->vel[0], b->vel[1], b->vel[2]) + cross((float3)(b->omega[0], b->omega[1], b->omega[2]), r);
}

/* a = d'' + alpha x r + omega x (omega x r) */
inline float3 motion_acceleration(__global const motion_body *b, float3 x)
{
    const float3 r = x - motion_disp(b) - motion_pivot(b);
    const float3 w = (float3)(b->omega[0], b->omega[1], b->omega[2]);
    return (float3)(b->acc[0], b->acc[1], b->acc[2]) + cross((float3)(b->alpha[0], b->alpha[1], b->alpha[2]), r) +
           cross(w, cross(w, r));
}

/* phi of object o (geom_sdf) whose body is at b: evaluated at the query point carried into the
 * body's rest frame, the normal carried back */
inline float motion_sdf(__constant const geom_object *o, __global const float *grid, __global const motion_body *b,
                        float4 x, float4 *n)
{
    const float3 y = motion_to_body(b, x.xyz);
    float4 nb;
    const float phi = geom_sdf(o, grid, (float4)(y, 0.0f), &nb);
    *n = (float4)(motion_rot(b, nb.xyz), 0.0f);
    return phi;
}

#endif
