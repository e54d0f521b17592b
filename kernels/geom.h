/* geom.h: the signed distance of the scene's objects on the device (OpenCL C), in float; the
 * same formulas as geom_sdf in src/geometry.c, which evaluates them in double for the host
 * (sampling the boundary particles, the tests' reference). See geom_shared.h for the frame and
 * the sign. */
#ifndef SPHSIM_GEOM_H
#define SPHSIM_GEOM_H

#include "geom_shared.h"

/* A mesh's phi: the trilinear interpolation of its grid (geom_shared.h), the gradient of the
 * interpolant, normalised, as the normal; beyond the grid, outside the mesh. */
inline float geom_grid_sdf(__constant const geom_object *o, __global const float *grid, float4 x, float4 *n)
{
    const float3 u =
        ((float3)(x.x, x.y, x.z) - (float3)(o->grid_origin[0], o->grid_origin[1], o->grid_origin[2])) / o->grid_cell;
    const float3 top = (float3)((float)(o->grid_n[0] - 1u), (float)(o->grid_n[1] - 1u), (float)(o->grid_n[2] - 1u));
    const float3 c = clamp(u, (float3)(0.0f), top);
    const float3 out = u - c;
    const float3 fl = fmin(floor(c), top - 1.0f);
    const uint ix = (uint)fl.x, iy = (uint)fl.y, iz = (uint)fl.z;
    const float3 f = c - fl;
    const uint nx = o->grid_n[0], nxy = o->grid_n[0] * o->grid_n[1];
    __global const float *g = grid + o->grid_offset + ix + nx * iy + nxy * iz;
    const float c0_ = g[0], c1_ = g[1], c2_ = g[nx], c3_ = g[nx + 1u];
    const float c4_ = g[nxy], c5_ = g[nxy + 1u], c6_ = g[nxy + nx], c7_ = g[nxy + nx + 1u];
    const float c00 = c0_ + f.x * (c1_ - c0_), c10 = c2_ + f.x * (c3_ - c2_);
    const float c01 = c4_ + f.x * (c5_ - c4_), c11 = c6_ + f.x * (c7_ - c6_);
    const float d0 = c00 + f.y * (c10 - c00), d1 = c01 + f.y * (c11 - c01);
    float phi = d0 + f.z * (d1 - d0);
    const float gx = (1.0f - f.y) * (1.0f - f.z) * (c1_ - c0_) + f.y * (1.0f - f.z) * (c3_ - c2_) +
                     (1.0f - f.y) * f.z * (c5_ - c4_) + f.y * f.z * (c7_ - c6_);
    const float gy = (1.0f - f.x) * (1.0f - f.z) * (c2_ - c0_) + f.x * (1.0f - f.z) * (c3_ - c1_) +
                     (1.0f - f.x) * f.z * (c6_ - c4_) + f.x * f.z * (c7_ - c5_);
    const float gz = d1 - d0;
    const float l = sqrt(gx * gx + gy * gy + gz * gz);
    *n = l > 0.0f ? (float4)(gx / l, gy / l, gz / l, 0.0f) : (float4)(0.0f, 0.0f, 1.0f, 0.0f);
    const float o2 = dot(out, out);
    if (o2 > 0.0f) phi = fmax(phi, 0.0f) + sqrt(o2) * o->grid_cell;
    return phi;
}

/* A polygon's distance (the nearest of its edges) and sign (crossings of the ray along +x),
 * *n the unit vector from the nearest point to x, turned outwards when x is inside. */
inline float geom_polygon_sdf(__constant const geom_object *o, __global const float *grid, float4 x, float4 *n)
{
    __global const float *v = grid + o->grid_offset;
    const uint m = o->grid_n[0];
    float best = INFINITY;
    float2 g = (float2)(1.0f, 0.0f);
    int inside = 0;
    for (uint k = 0; k < m; ++k) {
        const float2 a = (float2)(v[2u * k], v[2u * k + 1u]);
        const uint k1 = k + 1u == m ? 0u : k + 1u;
        const float2 b = (float2)(v[2u * k1], v[2u * k1 + 1u]);
        const float2 ab = b - a, ap = (float2)(x.x, x.y) - a;
        const float tt = clamp(dot(ap, ab) / dot(ab, ab), 0.0f, 1.0f);
        const float2 dd = ap - tt * ab;
        const float d2 = dot(dd, dd);
        if (d2 < best) {
            best = d2;
            g = d2 > 0.0f ? dd : (float2)(ab.y, -ab.x);
        }
        if ((a.y > x.y) != (b.y > x.y) && x.x < a.x + (x.y - a.y) * ab.x / ab.y) inside = !inside;
    }
    const float dist = sqrt(best), l = length(g);
    const float s = inside ? -1.0f : 1.0f;
    *n = (float4)(s * g.x / l, s * g.y / l, 0.0f, 0.0f);
    return s * dist;
}

/* phi of object o at world point x (m), and *n, its unit gradient (the normal into the free
 * space). Only x.xyz is read; grid: the meshes' grids (geom_shared.h). */
inline float geom_sdf(__constant const geom_object *o, __global const float *grid, float4 x, float4 *n)
{
    if (o->shape == GEOM_MESH || o->shape == GEOM_POLYGON) {
        const float d = o->shape == GEOM_MESH ? geom_grid_sdf(o, grid, x, n) : geom_polygon_sdf(o, grid, x, n);
        *n *= o->sign;
        return o->sign * d;
    }
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
