/* gauges.cl: the gauges' measurements on the device (src/gauges.c, docs/physics.md "Gauges"),
 * built with the SPH solver's options so that W, F, the record layout and the neighbour loop are
 * the solver's. They read the state a step's density stages left: positions and masses (pos),
 * (x, p/rho^2) and (v, rho) of every particle (SPH_NB_X_, SPH_NB_V_; -rho for walls), and the
 * walls' force sums that the boundary stage added up per work-group (kernels/sph_boundary.cl).
 * Every sum is a gather in a fixed order: the same run gives the same rows. */
#include "sph_common.h"
#include "gauge_shared.h"
#include "tree_sum.h"
#ifdef MOTION
#include "motion.h"
#endif

/* Per probe point k, over the fluid particles j within the support:
 *   sums[2k]     = (S, sum_j V_j W_kj p_j, S_w, 0),   S = sum_j V_j W_kj,  V_j = m_j / rho_j,
 *                  S_w the same sum over the wall particles (height gauges: gauge_wet)
 *   sums[2k + 1] = (sum_j V_j W_kj v_j, 0)
 * from which the gauge takes p = (sum V W p) / S and v = (sum V W v) / S (Shepard). One
 * work-group a point: its L work-items form S = L / W teams of W = min(L, 32) lanes; lane c
 * walks the cells c, c + W, ... of the point's block (27 in 3D), team t the candidates t, t + S,
 * ... of each, and the group adds their sums in a fixed tree (red: 2 float4 per work-item). The
 * points are the tank's: with tank_moves (-DMOTION) each is where the tank's motion at the step
 * (motion[0], body 0) has carried it. */
__kernel void gauge_probe(const uint n_points, __global const float4 *points, /* (x (m), 0) at rest */
                          __global const float4 *pos,                         /* (x (m), m (kg)), sorted */
                          __global const float4 *vel,                         /* (v, rho), sorted */
                          __global const float4 *pos_p,                       /* the density stages' records */
                          __global const uint *cell_start, __global const uint *cell_end,
                          __constant const grid_params *gp, __constant const sph_params *P, __global float4 *sums,
                          __global const void *motion, const uint tank_moves, __local float4 *red)
{
    const uint k = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
    if (k >= n_points) return; /* the whole group */
    const uint W = min(L, 32u), lane = l % W, S = L / W, team = l / W;
    float4 xk = points[k];
#ifdef MOTION
    if (tank_moves) xk = (float4)(motion_place((__global const motion_body *)motion, xk.xyz), 0.0f);
#endif
    float4 a = (float4)(0.0f), b = (float4)(0.0f); /* (S, sum V W p), sum V W v */
    uint q = 0u;
    NEIGHBOURS_CELLS_BEGIN(gp, cell_start, cell_end, xk, j0, j1)
    if (q++ % W != lane) continue;
    for (uint j = j0 + team; j < j1; j += S) {
        const float4 xj = pos[j];
        float4 d = xk - xj;
        d.w = 0.0f;
        const float r2 = dot(d, d);
        if (r2 >= P->support2) continue;
        const float4 vr = SPH_NB_V_(pos_p, vel, j); /* (v_j, rho_j), -rho for walls */
        if (!(vr.w > 0.0f)) {
            a.z += sph_W(r2, P) * (xj.w / -vr.w); /* a wall's share of the kernel */
            continue;
        }
        const float w = sph_W(r2, P) * (xj.w / vr.w);
        a.x += w;
        a.y += w * SPH_NB_X_(pos_p, vel, j).w * vr.w * vr.w;
        b += w * (float4)(vr.x, vr.y, vr.z, 0.0f);
    }
    NEIGHBOURS_CELLS_END
    red[2u * l] = a;
    red[2u * l + 1u] = b;
    tree_add_pairs(red, l, L);
    if (l == 0u) {
        sums[2u * k] = red[0];
        sums[2u * k + 1u] = red[1];
    }
}

/* The sums of the rows of in (rows of V float4: the boundary stage's per-work-group force sums,
 * kernels/sph_boundary.cl) in a fixed order: work-group g adds rows [g c, (g + 1) c), c = ceil(rows
 * / groups), into row g of out; gauge_finish adds out's rows. */
__kernel void gauge_rows_sum(__global const float4 *in, const uint rows, const uint V, __global float4 *out,
                             __local float4 *red)
{
    const uint g = get_group_id(0), G = get_num_groups(0), l = get_local_id(0), L = get_local_size(0);
    const uint c = (rows + G - 1u) / G, r0 = min(g * c, rows), r1 = min(r0 + c, rows);
    for (uint v = 0u; v < V; ++v) {
        float4 acc = (float4)(0.0f);
        for (uint r = r0 + l; r < r1; r += L) acc += in[r * V + v];
        red[l] = acc;
        for (uint h = 1u; h < L; h <<= 1u) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if ((l & (2u * h - 1u)) == 0u && l + h < L) red[l] += red[l + h];
        }
        if (l == 0u) out[g * V + v] = red[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* How wet a height gauge's sample is: its fluid's share of the part of the kernel the walls leave,
 * S / (1 - S_w) (S_w <= 3/4 for a point in the tank): 1 under water, 1/2 at the free surface, at a
 * wall or in a corner too, where the walls fill half or more of the kernel. Without walls near,
 * S itself. */
inline float gauge_wet(float4 s) { return s.z > 0.0f ? s.x / max(1.0f - s.z, 0.25f) : s.x; }

/* One row per gauge due at step at_step (a multiple of its `every`), at its row for that step in the
 * chunk that started at step from_step: pressure (Pa); velocity (m/s, dims components); height (m above
 * the floor); force (N, dims components) and moment (N m; 2D: its z component) about ref. One
 * work-group a gauge: a height gauge's work-items look for its highest wet sample together, a force
 * gauge's add gauge_rows_sum's rows (wet: a uint, red: 2 float4 per work-item). */
__kernel void gauge_finish(const uint n_gauges, __global const gauge_desc *G, __global const float4 *sums,
                           __global const float4 *force, /* force_rows rows of (F, 0), (M about the tank's
                                                            centre, 0) per slot */
                           const uint force_rows, const uint force_slots, const ulong at_step, const ulong from_step,
                           __global float *chunk, __local uint *wet, __local float4 *red)
{
    const uint k = get_group_id(0), l = get_local_id(0), L = get_local_size(0);
    if (k >= n_gauges) return; /* the whole group */
    const gauge_desc g = G[k];
    if (at_step % g.every != 0u) return;
    const ulong row = at_step / g.every - (from_step + g.every - 1u) / g.every;
    if (row >= g.cap) return;
    __global float *out = chunk + g.offset + row * g.cols;
    if (g.type == GAUGE_T_HEIGHT) {
        /* the highest sample at least GAUGE_WET (1 + its index; 0: none), and the crossing to the
         * sample above it */
        uint top = 0u;
        for (uint q = l; q < g.n_points; q += L)
            if (gauge_wet(sums[2u * (g.first_point + q)]) >= GAUGE_WET) top = q + 1u;
        wet[l] = top;
        for (uint h = 1u; h < L; h <<= 1u) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if ((l & (2u * h - 1u)) == 0u && l + h < L) wet[l] = max(wet[l], wet[l + h]);
        }
        if (l == 0u) {
            float h = 0.0f;
            if (wet[0] > 0u) {
                const uint q = wet[0] - 1u;
                const float s = gauge_wet(sums[2u * (g.first_point + q)]);
                float frac = 0.0f;
                if (q + 1u < g.n_points) {
                    const float s1 = gauge_wet(sums[2u * (g.first_point + q + 1u)]);
                    frac = (s - GAUGE_WET) / (s - s1);
                }
                h = g.z0 + ((float)q + frac) * g.dz;
            }
            out[0] = h;
        }
        return;
    }
    if (g.type == GAUGE_T_FORCE) {
        float4 F = (float4)(0.0f), M0 = (float4)(0.0f);
        for (uint r = l; r < force_rows; r += L) {
            F += force[(r * force_slots + g.force_slot) * 2u];
            M0 += force[(r * force_slots + g.force_slot) * 2u + 1u];
        }
        red[2u * l] = F;
        red[2u * l + 1u] = M0;
        tree_add_pairs(red, l, L);
    }
    if (l != 0u) return;
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
    } else {
        float4 F = red[0], M0 = red[1];
        F.w = 0.0f;
        M0.w = 0.0f;
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
