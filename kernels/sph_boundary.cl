/* sph_boundary.cl: writes each wall particle's pressure and density, extrapolated from the fluid
 * around it (Adami, Hu & Adams 2012, eq. 27, for a wall at rest, a_w = 0):
 *   p_w = (sum_f p_f W_wf + g . sum_f rho_f (x_w - x_f) W_wf) / sum_f W_wf,
 * clamped at >= 0 (0 without fluid neighbours); rho_w = EOS^-1(p_w), stored as -rho_w in vel_w.w
 * and in its pos_p record (sph_density.cl explains the layout). It reads only fluid entries,
 * which the density stage wrote before it, and writes only wall entries.
 *
 * In a step whose force gauges are due (src/gauges.c), the _measure twins also sum, per gauged
 * wall (a slot: the tank's walls or one object's), the fluid's pressure force on each wall
 * particle w and its moment about the tank's centre c, the reaction of the forces stage's
 * pressure term (kernels/sph_forces_integrate.cl):
 *   F_w = - m_w m_f (p_w/rho_w^2 sum_f F(r_wf) x_wf + sum_f p_f/rho_f^2 F(r_wf) x_wf),  x_wf = x_w - x_f
 *   M_w = (x_w - c) x F_w
 * in the loop that already visits every wall-fluid pair, then add them over each work-group in
 * a fixed tree (one row of partial sums per work-group; gauges.cl sums the rows). */
#include "sph_common.h"
#include "motion.h"
#include "tree_sum.h"

/* The pressure and density of wall particle i (list_walk: nlist_loop.h; kept: the step keeps
 * the lists). */
inline void sph_boundary_one(const uint i, const uint n, __global const float4 *pos, __global float4 *vel,
                             __global const uchar *type, __global const uint *cell_start, __global const uint *cell_end,
                             __constant const grid_params *gp, __constant const sph_params *P, __global float4 *pos_p,
                             MOTION_ARGS, NLIST_READ_ARGS, const int list_walk, const int kept, const int measure,
                             float4 *force) /* measure: F_w (N), else untouched */
{
    if (type[i] != PTYPE_BOUNDARY || !NLIST_MINE(i, list_walk)) return;
#ifdef NLIST
    /* In a step that keeps the lists (kept), a wall whose list is empty had no fluid within the
     * list radius at the build, so none within the support since (else the step would have
     * rebuilt): its p_w = 0 and rho_w, written in the rebuild step, stand. No fluid particle
     * lists it, the fallback walk drops it on r2 before loading its vel, and every snapshot step
     * rebuilds, so nothing reads them until then; the forces stage still copies vel.w into the
     * other pair in the rebuild step, so that both pairs hold every wall's density. Most walls
     * are dry; they cost one load. */
    if (kept && nl_count[i] == 0u) return;
#endif
    const float4 x_w = pos[i];
    const float support2 = P->support2;
    float sum_W = 0.0f, sum_pW = 0.0f;    /* 1/m^dims, Pa/m^dims */
    float4 sum_rho_dx_W = (float4)(0.0f); /* kg/m^(2+dims) */
    float4 sum_F_dx = (float4)(0.0f), sum_pF_dx = (float4)(0.0f); /* measure: sum F x_wf, sum p/rho^2 F x_wf */
    SPH_BOUNDARY_LOOP_BEGIN(gp, cell_start, cell_end, pos, x_w, support2, i, j)
#ifdef NLIST
    /* a wall's list holds fluid only (nlist_build.h): only the fallback walk tests the type */
    if (list_walk && type[j] != PTYPE_FLUID) continue;
#else
    if (type[j] != PTYPE_FLUID) continue; /* the cell walk visits walls too */
#endif
    const float4 xp_j = SPH_NB_X_(pos_p, vel, j); /* (x_f, p_f / rho_f^2), written by sph_density */
    float4 dx = x_w - xp_j;                       /* dx = x_w - x_f */
    dx.w = 0.0f;
    const float r2 = dot(dx, dx);
    if (r2 >= support2) continue;
    const float W = sph_W(r2, P);
    const float rho_j = SPH_NB_V_(pos_p, vel, j).w;
    /* p_f from p_f / rho_f^2: no extra load, cheaper than the Tait EOS (0.08 ms at 1.4x10^7
     * on the H200), and within a few ulp of the p_f sph_density computed */
    const float p_j = xp_j.w * rho_j * rho_j;
    sum_W += W;
    sum_pW += p_j * W;
    sum_rho_dx_W += (rho_j * W) * dx;
    if (measure && r2 > 0.0f) {
        const float F = sph_F(SPH_SQRT_(r2), P);
        sum_F_dx += F * dx;
        sum_pF_dx += (xp_j.w * F) * dx;
    }
    SPH_BOUNDARY_LOOP_END
    float p_w = 0.0f;
    if (sum_W > 0.0f) {
#ifdef MOTION
        /* a moving wall: g - a_w, a_w its acceleration at x_w at this step's time (motion[body]) */
        float3 g = (float3)(P->gravity[0], P->gravity[1], P->gravity[2]);
        const uint body = (uint)wall_ref[id[i] - P->first_wall].w;
        if ((P->moving >> body) & 1u) g -= motion_acceleration(motion + body, x_w.xyz);
        const float g_dot = g.x * sum_rho_dx_W.x + g.y * sum_rho_dx_W.y + g.z * sum_rho_dx_W.z;
#else
        const float g_dot =
            P->gravity[0] * sum_rho_dx_W.x + P->gravity[1] * sum_rho_dx_W.y + P->gravity[2] * sum_rho_dx_W.z;
#endif
        p_w = fmax((sum_pW + g_dot) / sum_W, 0.0f);
    }
    const float rho_w = sph_eos_rho(p_w, P); /* >= rho0 > 0, since p_w >= 0 */
    /* the wall's velocity: 0, or with -DMOTION the one the forces stage gave it (vel.xyz); the sign
     * marks a wall for the forces loop, which then takes mass_wall (P) instead of mass_fluid;
     * sph_pressure unpacks |w| */
    vel[i].w = -rho_w;
    const float p_rho2_w = p_w / (rho_w * rho_w);
#ifdef MOTION
    SPH_NB_PUT_(pos_p, i, (float4)(x_w.xyz, p_rho2_w), (float4)(vel[i].xyz, -rho_w));
#else
    SPH_NB_PUT_(pos_p, i, (float4)(x_w.xyz, p_rho2_w), (float4)(0.0f, 0.0f, 0.0f, -rho_w));
#endif
    if (measure) *force = (-P->mass_wall * P->mass_fluid) * (p_rho2_w * sum_F_dx + sum_pF_dx);
}

/* The arguments of both kernels (src/sph.c binds them by these names). */
#define SPH_BOUNDARY_ARGS                                                                                              \
    const uint n, __global const float4 *pos, /* (x (m), m (kg)), sorted */                                            \
        __global float4 *vel,                 /* (v, rho): fluid rho read, wall rho written */                         \
        __global const uchar *type,           /* PTYPE_*, sorted */                                                    \
        __global const uint *cell_start, __global const uint *cell_end, __constant const grid_params *gp,              \
        __constant const sph_params *P, __global float4 *pos_p, /* (x, p/rho^2) [, (v, rho)]: fluid read, walls out */ \
        const uint stride,                                      /* work-group spread (spread_item) */                  \
        MOTION_ARGS, const uint ahead, /* as in SPH_DENSITY_ARGS (sph_density.cl) */                                   \
        NLIST_READ_ARGS

__kernel void sph_boundary(SPH_BOUNDARY_ARGS)
{
    const uint i = spread_item(stride);
    if (i >= n || NLIST_AHEAD_SKIP(ahead, nl_state)) return;
    float4 unused;
    sph_boundary_one(i, n, pos, vel, type, cell_start, cell_end, gp, P, pos_p, id, wall_ref, motion, nl_list, nl_list1,
                     nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, 0, !NLIST_REBUILT(nl_state), 0, &unused);
}

#ifdef NLIST
/* The wall particles over list_cap (as sph_density_walk, in every step). */
__kernel void sph_boundary_walk(SPH_BOUNDARY_ARGS)
{
    if (!NLIST_WALKERS(nl_state) || NLIST_AHEAD_SKIP(ahead, nl_state)) return;
    float4 unused;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0))
        sph_boundary_one(i, n, pos, vel, type, cell_start, cell_end, gp, P, pos_p, id, wall_ref, motion, nl_list,
                         nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, 1, !NLIST_REBUILT(nl_state), 0,
                         &unused);
}
#endif

/* ---- the force gauges' twins ---- */

/* The wall particles' slots: ids below first_obj (the tank's walls) in tank_slot, the objects'
 * boundary particles (ids from first_obj on, in init_boundary_objects' order) in obj_slot[id -
 * first_obj]; a slot >= n_slots is not gauged. partial holds a row of 2 n_slots float4 per
 * work-group, from row0 on: (sum F, 0), (sum M, 0) of each slot. */
#define SPH_MEASURE_ARGS                                                                                               \
    SPH_BOUNDARY_ARGS, const uint own_axis, const float own_lo, const float own_hi, /* the walls that count */  \
        const uint first_obj, const uint tank_slot, /* after MOTION_ARGS' id (sorted ids) */                           \
        __global const uchar *obj_slot, const uint n_slots, const float4 centre, /* the tank's centre (m) */           \
        __global float4 *partial, const uint row0, __local float4 *red,          /* 2 float4 per work-item */          \
        __local float4 *acc,                                                     /* 2 n_slots float4 */                \
        __local uint *mask

inline uint measure_slot(uint i, __global const uint *id, uint first_obj, uint tank_slot,
                         __global const uchar *obj_slot)
{
    const uint k = id[i];
    return k < first_obj ? tank_slot : (uint)obj_slot[k - first_obj];
}

/* Adds each work-item's force f and moment m to acc[2 s] and acc[2 s + 1] of its slot s (none
 * when s >= n_slots): one tree of the pair over the work-group per slot that some work-item
 * holds, in a fixed order. Every work-item of the group calls it. */
inline void measure_group_add(const uint slot, const float4 f, const float4 m, const uint n_slots, __local float4 *red,
                              __local float4 *acc, __local uint *mask)
{
    const uint l = get_local_id(0), L = get_local_size(0);
    if (l == 0u) *mask = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (slot < n_slots) atomic_or(mask, 1u << slot);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint bits = *mask; /* the same in every work-item: the loop below is uniform */
    for (uint k = 0u; k < n_slots; ++k) {
        if ((bits & (1u << k)) == 0u) continue;
        red[2u * l] = slot == k ? f : (float4)(0.0f);
        red[2u * l + 1u] = slot == k ? m : (float4)(0.0f);
        tree_add_pairs(red, l, L);
        if (l == 0u) {
            acc[2u * k] += red[0];
            acc[2u * k + 1u] += red[1];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* sph_boundary_one with the force of wall i (of a gauged slot) and its moment, or zeros. */
#define SPH_MEASURE_ONE_(i, list_walk, slot, f, m)                                                                     \
    {                                                                                                                  \
        float4 F_ = (float4)(0.0f);                                                                                    \
        sph_boundary_one(i, n, pos, vel, type, cell_start, cell_end, gp, P, pos_p, id, wall_ref, motion, nl_list,      \
                         nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, list_walk,                     \
                         !NLIST_REBUILT(nl_state), 1, &F_);                                                            \
        F_.w = 0.0f;                                                                                                   \
        const float own_x_ = own_axis == 0u ? pos[i].x : own_axis == 1u ? pos[i].y : pos[i].z;                         \
        slot = type[i] == PTYPE_BOUNDARY && own_x_ >= own_lo && own_x_ < own_hi                                        \
                   ? measure_slot(i, id, first_obj, tank_slot, obj_slot)                                               \
                   : n_slots;                                                                                          \
        if (slot < n_slots) {                                                                                          \
            float4 r_ = pos[i] - centre;                                                                               \
            r_.w = 0.0f;                                                                                               \
            f = F_;                                                                                                    \
            m = cross(r_, F_);                                                                                         \
        }                                                                                                              \
    }

inline void measure_begin(const uint n_slots, __local float4 *acc)
{
    for (uint c = get_local_id(0); c < 2u * n_slots; c += get_local_size(0)) acc[c] = (float4)(0.0f);
}

inline void measure_end(const uint n_slots, __local float4 *acc, __global float4 *partial, const uint row)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint c = get_local_id(0); c < 2u * n_slots; c += get_local_size(0)) partial[row * 2u * n_slots + c] = acc[c];
}

__kernel void sph_boundary_measure(SPH_MEASURE_ARGS)
{
    if (NLIST_AHEAD_SKIP(ahead, nl_state)) return; /* the whole launch: the next one measures */
    const uint i = spread_item(stride);
    measure_begin(n_slots, acc);
    float4 f = (float4)(0.0f), m = (float4)(0.0f);
    uint slot = n_slots;
    if (i < n) SPH_MEASURE_ONE_(i, 0, slot, f, m);
    measure_group_add(slot, f, m, n_slots, red, acc, mask);
    measure_end(n_slots, acc, partial, row0 + get_group_id(0));
}

#ifdef NLIST
__kernel void sph_boundary_walk_measure(SPH_MEASURE_ARGS)
{
    if (NLIST_AHEAD_SKIP(ahead, nl_state)) return;
    measure_begin(n_slots, acc);
    if (NLIST_WALKERS(nl_state)) {
        /* rounds of one particle per work-item, so that the group's sums stay in local memory */
        for (uint b = get_group_id(0) * get_local_size(0); b < n; b += get_global_size(0)) {
            const uint i = b + get_local_id(0);
            float4 f = (float4)(0.0f), m = (float4)(0.0f);
            uint slot = n_slots;
            if (i < n) SPH_MEASURE_ONE_(i, 1, slot, f, m);
            measure_group_add(slot, f, m, n_slots, red, acc, mask);
        }
    }
    measure_end(n_slots, acc, partial, row0 + get_group_id(0));
}
#endif
