/* sph_boundary.cl: writes each wall particle's pressure and density, extrapolated from the fluid
 * around it (Adami, Hu & Adams 2012, eq. 27, for a wall at rest, a_w = 0):
 *   p_w = (sum_f p_f W_wf + g . sum_f rho_f (x_w - x_f) W_wf) / sum_f W_wf,
 * clamped at >= 0 (0 without fluid neighbours); rho_w = EOS^-1(p_w), stored as -rho_w in vel_w.w
 * and in its pos_p record (sph_density.cl explains the layout). It reads only fluid entries,
 * which the density stage wrote before it, and writes only wall entries. */
#include "sph_common.h"
#include "motion.h"

/* The pressure and density of wall particle i (list_walk: nlist_loop.h; kept: the step keeps
 * the lists). */
inline void sph_boundary_one(const uint i, const uint n, __global const float4 *pos, __global float4 *vel,
                             __global const uchar *type, __global const uint *cell_start, __global const uint *cell_end,
                             __constant const grid_params *gp, __constant const sph_params *P, __global float4 *pos_p,
                             MOTION_ARGS, NLIST_READ_ARGS, const int list_walk, const int kept)
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
#ifdef MOTION
    SPH_NB_PUT_(pos_p, i, (float4)(x_w.xyz, p_w / (rho_w * rho_w)), (float4)(vel[i].xyz, -rho_w));
#else
    SPH_NB_PUT_(pos_p, i, (float4)(x_w.xyz, p_w / (rho_w * rho_w)), (float4)(0.0f, 0.0f, 0.0f, -rho_w));
#endif
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
    sph_boundary_one(i, n, pos, vel, type, cell_start, cell_end, gp, P, pos_p, id, wall_ref, motion, nl_list, nl_list1,
                     nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, 0, !NLIST_REBUILT(nl_state));
}

#ifdef NLIST
/* The wall particles over list_cap (as sph_density_walk, in every step). */
__kernel void sph_boundary_walk(SPH_BOUNDARY_ARGS)
{
    if (!NLIST_WALKERS(nl_state) || NLIST_AHEAD_SKIP(ahead, nl_state)) return;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0))
        sph_boundary_one(i, n, pos, vel, type, cell_start, cell_end, gp, P, pos_p, id, wall_ref, motion, nl_list,
                         nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, 1, !NLIST_REBUILT(nl_state));
}
#endif
