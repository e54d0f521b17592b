/* gauges.cl: the gauges' measurements on the device (src/gauges.c, docs/physics.md "Gauges"),
 * built with the SPH solver's options so that W, F, the record layout and the neighbour loop are
 * the solver's. They read the state a step's density stages left: positions and masses (pos),
 * (x, p/rho^2) and (v, rho) of every particle (SPH_NB_X_, SPH_NB_V_; -rho for walls). Every sum
 * is a gather in a fixed order: the same run gives the same rows. */
#include "sph_common.h"
#include "geom.h"
#include "gauge_shared.h"

/* Per probe point k, over the fluid particles j within the support:
 *   sums[2k]     = (S, sum_j V_j W_kj p_j, 0, 0),   S = sum_j V_j W_kj,  V_j = m_j / rho_j
 *   sums[2k + 1] = (sum_j V_j W_kj v_j, 0)
 * from which the gauge takes p = (sum V W p) / S and v = (sum V W v) / S (Shepard). */
__kernel void gauge_probe(const uint n_points, __global const float4 *points, /* (x (m), 0) */
                          __global const float4 *pos,                         /* (x (m), m (kg)), sorted */
                          __global const float4 *vel,                         /* (v, rho), sorted */
                          __global const float4 *pos_p,                       /* the density stages' records */
                          __global const uint *cell_start, __global const uint *cell_end,
                          __constant const grid_params *gp, __constant const sph_params *P, __global float4 *sums)
{
    const uint k = get_global_id(0);
    if (k >= n_points) return;
    const float4 xk = points[k];
    float s = 0.0f, sp = 0.0f;
    float4 sv = (float4)(0.0f);
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, xk, j)
    const float4 xj = pos[j];
    float4 d = xk - xj;
    d.w = 0.0f;
    const float r2 = dot(d, d);
    if (r2 >= P->support2) continue;
    const float4 vr = SPH_NB_V_(pos_p, vel, j); /* (v_j, rho_j), -rho for walls */
    if (!(vr.w > 0.0f)) continue;
    const float w = sph_W(r2, P) * (xj.w / vr.w);
    s += w;
    sp += w * SPH_NB_X_(pos_p, vel, j).w * vr.w * vr.w;
    sv += w * (float4)(vr.x, vr.y, vr.z, 0.0f);
    NEIGHBOURS_END
    sums[2u * k] = (float4)(s, sp, 0.0f, 0.0f);
    sums[2u * k + 1u] = sv;
}

/* The object a wall particle at x belongs to: the scene object whose solid holds it deepest
 * (phi < 0, kernels/geom.h), or -1 (the tank's walls) when none does. */
inline int gauge_object_of(float4 x, __constant const sph_params *P, __global const float *geom_grid)
{
    int obj = -1;
    float least = 0.0f;
    for (uint o = 0u; o < P->n_objects; ++o) {
        float4 nrm;
        const float phi = geom_sdf(&P->objects[o], geom_grid, x, &nrm);
        if (phi < least) {
            least = phi;
            obj = (int)o;
        }
    }
    return obj;
}

/* The pressure force of the fluid on each wall particle w of `object` (-1: the tank's walls;
 * gauge_object_of), the reaction of the pressure term of the forces stage
 * (kernels/sph_forces_integrate.cl):
 *   F_w = - m_w sum_f m_f (p_w / rho_w^2 + p_f / rho_f^2) F(r_wf) (x_w - x_f)
 * and its moment (x_w - c) x F_w about the tank's centre c, summed per work-group in a fixed
 * tree: partial[8 g + 0..2] = sum F, [8 g + 3..5] = sum moment. */
__kernel void gauge_force(const uint n, __global const float4 *pos, __global const float4 *vel,
                          __global const float4 *pos_p, __global const uchar *type, __global const uint *cell_start,
                          __global const uint *cell_end, __constant const grid_params *gp,
                          __constant const sph_params *P, const float4 centre, /* the tank's centre (m) */
                          const int object, __global const float *geom_grid,
                          __global const uint *id,       /* sorted ids (-DMOTION) */
                          __global const float4 *wall_ref, /* the walls' (rest position, body) (-DMOTION) */
                          __global float *partial, __local float *scratch) /* 6 floats per work-item */
{
    const uint i = get_global_id(0), l = get_local_id(0), L = get_local_size(0);
    float4 f = (float4)(0.0f), m = (float4)(0.0f);
#ifdef MOTION
    /* walls that move: the body each was made for (the deepest solid at rest, as below) */
    const int mine = i < n && type[i] == PTYPE_BOUNDARY && (int)wall_ref[id[i] - P->first_wall].w - 1 == object;
#else
    const int mine = i < n && type[i] == PTYPE_BOUNDARY && gauge_object_of(pos[i], P, geom_grid) == object;
#endif
    if (mine) {
        const float4 xi = pos[i];
        const float pw = SPH_NB_X_(pos_p, vel, i).w; /* p_w / rho_w^2 */
        NEIGHBOURS_BEGIN(gp, cell_start, cell_end, xi, j)
        const float4 vj = SPH_NB_V_(pos_p, vel, j);
        if (!(vj.w > 0.0f)) continue; /* fluid only */
        float4 d = xi - pos[j];
        d.w = 0.0f;
        const float r2 = dot(d, d);
        if (r2 >= P->support2 || r2 == 0.0f) continue;
        const float pf = SPH_NB_X_(pos_p, vel, j).w;
        f -= (P->mass_fluid * (pw + pf) * sph_F(sqrt(r2), P)) * d;
        NEIGHBOURS_END
        f *= P->mass_wall;
        float4 r = xi - centre;
        r.w = 0.0f;
        m = cross(r, f);
    }
    __local float *s = scratch + 6u * l;
    s[0] = f.x;
    s[1] = f.y;
    s[2] = f.z;
    s[3] = m.x;
    s[4] = m.y;
    s[5] = m.z;
    for (uint h = L / 2u; h > 0u; h /= 2u) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < h)
            for (uint c = 0u; c < 6u; ++c) scratch[6u * l + c] += scratch[6u * (l + h) + c];
    }
    if (l == 0u)
        for (uint c = 0u; c < 6u; ++c) partial[8u * get_group_id(0) + c] = scratch[c];
}

/* The sum of gauge_force's n_groups partial sums, by one work-group of a power of two work-items,
 * in a fixed order: out[8 slot + 0..2] the force, [8 slot + 3..5] the moment about the tank's
 * centre. */
__kernel void gauge_force_sum(const uint n_groups, __global const float *partial, const uint slot, __global float *out,
                              __local float *scratch)
{
    const uint l = get_local_id(0), L = get_local_size(0);
    float acc[6] = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
    for (uint g = l; g < n_groups; g += L)
        for (uint c = 0u; c < 6u; ++c) acc[c] += partial[8u * g + c];
    for (uint c = 0u; c < 6u; ++c) scratch[6u * l + c] = acc[c];
    for (uint h = L / 2u; h > 0u; h /= 2u) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < h)
            for (uint c = 0u; c < 6u; ++c) scratch[6u * l + c] += scratch[6u * (l + h) + c];
    }
    if (l == 0u)
        for (uint c = 0u; c < 6u; ++c) out[8u * slot + c] = scratch[c];
}

/* One row per gauge due at step at_step (a multiple of its `every`), at its row for that step in the
 * chunk that started at step from_step: pressure (Pa); velocity (m/s, dims components); height (m above
 * the floor); force (N, dims components) and moment (N m; 2D: its z component) about ref. */
__kernel void gauge_finish(const uint n_gauges, __global const gauge_desc *G, __global const float4 *sums,
                           __global const float *force, const ulong at_step, const ulong from_step,
                           __global float *chunk)
{
    const uint k = get_global_id(0);
    if (k >= n_gauges) return;
    const gauge_desc g = G[k];
    if (at_step % g.every != 0u) return;
    const ulong row = at_step / g.every - (from_step + g.every - 1u) / g.every;
    if (row >= g.cap) return;
    __global float *out = chunk + g.offset + row * g.cols;
    if (g.type == GAUGE_T_PRESSURE || g.type == GAUGE_T_VELOCITY) {
        const float4 a = sums[2u * g.first_point], b = sums[2u * g.first_point + 1u];
        const int dry = !(a.x >= GAUGE_DRY);
        if (g.type == GAUGE_T_PRESSURE) {
            out[0] = dry ? NAN : a.y / a.x;
        } else {
            out[0] = dry ? NAN : b.x / a.x;
            out[1] = dry ? NAN : b.y / a.x;
            if (DIMS == 3) out[2] = dry ? NAN : b.z / a.x;
        }
    } else if (g.type == GAUGE_T_HEIGHT) {
        /* the highest sample at least GAUGE_WET, and the crossing to the sample above it */
        float h = 0.0f;
        for (uint q = g.n_points; q-- > 0u;) {
            const float s = sums[2u * (g.first_point + q)].x;
            if (s >= GAUGE_WET) {
                float frac = 0.0f;
                if (q + 1u < g.n_points) {
                    const float s1 = sums[2u * (g.first_point + q + 1u)].x;
                    frac = (s - GAUGE_WET) / (s - s1);
                }
                h = g.z0 + ((float)q + frac) * g.dz;
                break;
            }
        }
        out[0] = h;
    } else {
        __global const float *fs = force + 8u * g.force_slot;
        const float4 F = (float4)(fs[0], fs[1], fs[2], 0.0f);
        const float4 M0 = (float4)(fs[3], fs[4], fs[5], 0.0f);
        const float4 c = (float4)(g.ref[0], g.ref[1], g.ref[2], 0.0f);
        const float4 M = M0 - cross(c, F); /* about ref: sum (x - c_t - ref) x F */
        out[0] = F.x;
        out[1] = F.y;
        if (DIMS == 3) {
            out[2] = F.z;
            out[3] = M.x;
            out[4] = M.y;
            out[5] = M.z;
        } else {
            out[2] = M.z;
        }
    }
}
