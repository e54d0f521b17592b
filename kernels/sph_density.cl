/* sph_density.cl: writes each fluid particle's density and pressure term, in sorted order,
 * packed into the spare components of the particle arrays (docs/physics.md, "Device data
 * layout"):
 *   vel_i.w = rho_i (kg/m^3; the wall pressure stage writes -rho_w for a wall, whose sign tells
 *             the forces loop which mass to take), pos_i.w = m_i (kg, carried by every step),
 *   pos_p_i = (x_i, p_i / rho_i^2) (with lists followed by a copy of (v_i, rho_i): a 32-byte
 *             record, SPH_NB_PUT_ in sph_common.h)
 * so a density loop reads one float4 per neighbour and the forces loop two.
 *   rho_i = sum_j m_j W(|x_i - x_j|, h)  (j over fluid and walls, i included), p_i = EOS(rho_i)
 * or, with -DDENSITY_CONTINUITY, rho_i as the forces stage integrated it (vel_i.w, no sum). 
 * A gather: no atomics; the sum runs in the neighbour loop's order. It writes only vel[i].w,
 * which no density loop reads, and particle i's pos_p.
 * With lists (-DNLIST) the kernels are: sph_density (in a step that rebuilds the lists it builds
 * them on the way, on CPUs; tuning.list_build), sph_density_kept (reads the lists: a kept step,
 * or after nlist_build), and their _walk twins for the particles over list_cap (nlist_loop.h). */
#include "sph_common.h"
#define NLIST_BUILD_DENSITY
#include "nlist_build.h"

#ifdef DENSITY_CONTINUITY
/* The rate of change of rho_i from neighbour j (0 beyond the support and for j == i): the
 * continuity equation, m_j v_ij . grad W_ij, and between fluid particles the density diffusion
 * of Fourtakas et al. (2019), delta h c0 psi_ij . grad W_ij V_j with the hydrostatic part
 * rho^H_ij = rho0 g . dx / c0^2 (linearised EOS) taken out of rho_ij = rho_i - rho_j:
 *   2 delta h c0 (rho_ij - rho^H_ij) F r^2 / (r^2 + eta^2) m_j / rho_j.
 * x_i = (x_i, m_i), v_i = (v_i, rho_i); vel_j = (v_j, rho_j), (0, -rho_w) or (0, 0) for walls,
 * which take no diffusion; g_rho = rho0 g / c0^2. */
inline float sph_drho_pair(const float4 x_i, const float4 v_i, const uint j, __global const float4 *pos,
                           __global const float4 *vel, const float4 g_rho, __constant const sph_params *P)
{
    const float4 x_j = pos[j]; /* (x_j, m_j) */
    float4 dx = x_i - x_j;     /* dx = x_i - x_j */
    dx.w = 0.0f;
    const float r2 = dot(dx, dx);
    if (r2 >= P->support2 || r2 == 0.0f) return 0.0f;
    const float4 v_j = vel[j];
    float4 v_ij = v_i - v_j;
    v_ij.w = 0.0f;
    float d = x_j.w * dot(v_ij, dx);
    if (v_j.w > 0.0f)
        d += P->diff_k * (v_i.w - v_j.w - dot(g_rho, dx)) * SPH_DIVIDE_(x_j.w * r2, v_j.w * (r2 + P->eta2));
    return sph_F(SPH_SQRT_(r2), P) * d;
}
#endif

/* The density of particle i: rho_i and p_i / rho_i^2 (fluid), and with lists in a step whose
 * decision rebuilds them, when may_build, the lists of every particle. list_walk and may_build:
 * constants of each kernel below (list_walk: nlist_loop.h; may_build 0: sph_density_kept, which
 * carries no list-build code, which made its loop faster on the H200, docs/performance.md). */
inline void sph_density_one(const uint n, const uint i, __global const float4 *pos, __global float4 *vel,
                            __global const uchar *type, __global const uint *cell_start, __global const uint *cell_end,
                            __constant const grid_params *gp, __constant const sph_params *P, __global float4 *pos_p,
                            __global const uchar *cell_fluid, const uint use_cf, const uint advance, NLIST_BUILD_ARGS,
                            const int list_walk, const int may_build)
{
#ifdef NLIST
    /* a rebuild step: every particle's list, and the density on the way (sph_density alone);
     * otherwise the particles whose lists this kernel reads */
    const int build = may_build && NLIST_REBUILT(nl_state);
    if (build ? list_walk : !NLIST_MINE(i, list_walk)) return;
#else
    const int build = 0;
#endif
    const int fluid = type[i] == PTYPE_FLUID; /* walls: sph_boundary.cl */
    const float4 x_i = pos[i];
    float rho_i = 0.0f;
#ifdef NLIST
    if (build)
        rho_i = nlist_build_one(n, i, x_i, fluid, pos, type, cell_start, cell_end, gp, cell_fluid, use_cf, nl_list,
                                nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, P);
#endif
    if (!fluid) return;
#ifdef DENSITY_CONTINUITY
    /* the state's density, advanced over the step that brought the particles here (the build's
     * kernel sum is not used); the loop reads vel, so the result goes to the record only */
    const float4 v_i = vel[i]; /* (v_i, rho_i) */
    rho_i = v_i.w;
    if (advance) {
        const float4 g_rho = (float4)(P->gravity[0], P->gravity[1], P->gravity[2], 0.0f) * P->diff_hydro;
        float drho = 0.0f; /* kg/(m^3 s) */
        if (build) {       /* the lists are being built: the cells' walk, in the lists' order */
            NEIGHBOURS_BEGIN(gp, cell_start, cell_end, x_i, j)
            drho += sph_drho_pair(x_i, v_i, j, pos, vel, g_rho, P);
            NEIGHBOURS_END
        } else {
            SPH_DENSITY_LOOP_BEGIN(gp, cell_start, cell_end, pos, x_i, P->support2, i, j)
            drho += sph_drho_pair(x_i, v_i, j, pos, vel, g_rho, P);
            SPH_DENSITY_LOOP_END
        }
        rho_i = fmax(rho_i + P->dt * drho, P->rho_floor);
    }
#else
    if (!build) {
        const float support2 = P->support2;
#ifdef NLIST
        rho_i = SPH_SELF_RHO_(x_i, P); /* the lists (and their fallback walk) leave i out */
#endif
        SPH_DENSITY_LOOP_BEGIN(gp, cell_start, cell_end, pos, x_i, support2, i, j)
        const float4 x_j = pos[j]; /* (x_j, m_j) */
        float4 dx = x_i - x_j;     /* dx = x_i - x_j */
        dx.w = 0.0f;
        const float r2 = dot(dx, dx);
        if (r2 >= support2) continue;
        rho_i += x_j.w * sph_W(r2, P);
        SPH_DENSITY_LOOP_END
    }
    vel[i].w = rho_i; /* only the w component: no density loop reads vel */
#endif
    const float p_i = sph_eos(rho_i, P);
    /* no density loop reads pos_p */
    SPH_NB_PUT_(pos_p, i, (float4)(x_i.xyz, p_i / (rho_i * rho_i)), (float4)(vel[i].xyz, rho_i));
}

/* The arguments of every density kernel (src/sph.c binds them by these names). */
#define SPH_DENSITY_ARGS                                                                                               \
    const uint n, __global const float4 *pos, /* (x (m), m (kg)), sorted */                                            \
        __global float4 *vel,                 /* (v (m/s), rho): rho (kg/m^3) out (fluid) */                           \
        __global const uchar *type,           /* PTYPE_*, sorted */                                                    \
        __global const uint *cell_start, __global const uint *cell_end, __constant const grid_params *gp,              \
        __constant const sph_params *P, __global float4 *pos_p, /* (x, p/rho^2) [, (v, rho)], out (fluid) */           \
        const uint stride,                                      /* work-group spread (spread_item) */                  \
        __global const uchar *cell_fluid,                       /* lists: per cell, CELL_FLUID if it holds fluid */    \
        const uint use_cf,                                      /* cell_fluid is set for this step's grid */           \
        const uint ahead,   /* launched ahead of the host's read of the decision (NLIST_AHEAD_SKIP) */                 \
        const uint advance, /* continuity: advance the state's density (0 in a run's first step) */                    \
        NLIST_BUILD_ARGS

#define SPH_DENSITY_PASS_                                                                                              \
    n, pos, vel, type, cell_start, cell_end, gp, P, pos_p, stride, cell_fluid, use_cf, ahead, advance, nl_list,        \
        nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP

/* One work-item per particle. */
inline void sph_density_kernel(SPH_DENSITY_ARGS, const int may_build)
{
    const uint i = spread_item(stride);
    if (i >= n || NLIST_AHEAD_SKIP(ahead, nl_state)) return;
    sph_density_one(n, i, pos, vel, type, cell_start, cell_end, gp, P, pos_p, cell_fluid, use_cf, advance, nl_list,
                    nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, 0, may_build);
}

/* The particles over list_cap, over a few work-groups that loop (returns at once when the last
 * build found none): sph_density_walk in a step that keeps the lists (in a rebuild step
 * sph_density has done them), sph_density_walk_built after nlist_build. */
inline void sph_density_walk_kernel(SPH_DENSITY_ARGS, const int after_build)
{
    if (!NLIST_WALKERS(nl_state) || (!after_build && NLIST_REBUILT(nl_state)) || NLIST_AHEAD_SKIP(ahead, nl_state))
        return;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0))
        sph_density_one(n, i, pos, vel, type, cell_start, cell_end, gp, P, pos_p, cell_fluid, use_cf, advance, nl_list,
                        nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state, NP, 1, 0);
}

__kernel void sph_density(SPH_DENSITY_ARGS) { sph_density_kernel(SPH_DENSITY_PASS_, 1); }

#ifdef NLIST
/* sph_density reading the lists: a step that keeps them, or right after nlist_build. */
__kernel void sph_density_kept(SPH_DENSITY_ARGS) { sph_density_kernel(SPH_DENSITY_PASS_, 0); }
__kernel void sph_density_walk(SPH_DENSITY_ARGS) { sph_density_walk_kernel(SPH_DENSITY_PASS_, 0); }
__kernel void sph_density_walk_built(SPH_DENSITY_ARGS) { sph_density_walk_kernel(SPH_DENSITY_PASS_, 1); }
#endif
