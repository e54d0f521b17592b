/* geom.h: the signed distance of the scene's objects on the device (OpenCL C), in float; the
 * same formulas as geom_sdf in src/geometry.c, which evaluates them in double for the host
 * (sampling the boundary particles, the tests' reference). See geom_shared.h for the frame and
 * the sign. */
#ifndef SPHSIM_GEOM_H
#define SPHSIM_GEOM_H

#include "geom_shared.h"

/* phi of object o at world point x (m), and *n, its unit gradient (the normal into the free
 * space). Only x.xyz is read. */
inline float geom_sdf(__constant const geom_object *o, float4 x, float4 *n)
{
    const float3 d = (float3)(x.x - o->origin[0], x.y - o->origin[1], x.z - o->origin[2]);
    /* y = R^T d: the point in the object's frame */
    const float3 y = (float3)(o->rot[0] * d.x + o->rot[3] * d.y + o->rot[6] * d.z,
                              o->rot[1] * d.x + o->rot[4] * d.y + o->rot[7] * d.z,
                              o->rot[2] * d.x + o->rot[5] * d.y + o->rot[8] * d.z);
    float dist;
    float3 g; /* gradient of the shape's distance in the object's frame */
    if (o->shape == GEOM_SPHERE) {
        const float r = length(y);
        dist = r - o->ext[0];
        g = r > 0.0f ? y / r : (float3)(0.0f, 0.0f, 1.0f);
    } else if (o->shape == GEOM_CYLINDER) {
        const float rr = length(y.xy);
        const float2 radial = rr > 0.0f ? y.xy / rr : (float2)(1.0f, 0.0f);
        const float qr = rr - o->ext[0], qz = fabs(y.z) - o->ext[1];
        const float sz = y.z < 0.0f ? -1.0f : 1.0f;
        if (qr > 0.0f && qz > 0.0f) { /* beyond the rim */
            dist = sqrt(qr * qr + qz * qz);
            g = (float3)(radial * (qr / dist), sz * qz / dist);
        } else if (qr > qz) { /* the side is nearest (or the only one outside) */
            dist = qr;
            g = (float3)(radial, 0.0f);
        } else {
            dist = qz;
            g = (float3)(0.0f, 0.0f, sz);
        }
    } else { /* GEOM_BOX */
        const float3 q = fabs(y) - (float3)(o->ext[0], o->ext[1], o->ext[2]);
        const float3 s = (float3)(y.x < 0.0f ? -1.0f : 1.0f, y.y < 0.0f ? -1.0f : 1.0f, y.z < 0.0f ? -1.0f : 1.0f);
        const float3 qo = fmax(q, (float3)(0.0f));
        const float lo = length(qo);
        if (lo > 0.0f) {
            dist = lo;
            g = s * qo / lo;
        } else { /* inside: the nearest face */
            if (q.x >= q.y && q.x >= q.z) {
                dist = q.x;
                g = (float3)(s.x, 0.0f, 0.0f);
            } else if (q.y >= q.z) {
                dist = q.y;
                g = (float3)(0.0f, s.y, 0.0f);
            } else {
                dist = q.z;
                g = (float3)(0.0f, 0.0f, s.z);
            }
        }
    }
    /* back to the world: R g, times the sign */
    const float sg = o->sign;
    *n = (float4)(sg * (o->rot[0] * g.x + o->rot[1] * g.y + o->rot[2] * g.z),
                  sg * (o->rot[3] * g.x + o->rot[4] * g.y + o->rot[5] * g.z),
                  sg * (o->rot[6] * g.x + o->rot[7] * g.y + o->rot[8] * g.z), 0.0f);
    return sg * dist;
}

#endif
