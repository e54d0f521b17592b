/* sph_density.cl: the per-particle SPH state of every particle in sorted order, packed into the
 * spare fourth components of the particle arrays (docs/physics.md, "Device data layout"):
 *   pos_i.w = m_i (kg, carried by every step), vel_i.w = rho_i (kg/m^3, written here; -rho_w
 *   for a wall particle, whose sign tells the forces loop which mass to take),
 *   pos_p_i = (x_i, p_i / rho_i^2) (a copy of the position with the pressure term, written here;
 *   with lists followed by a copy of (v_i, rho_i), 0 and -rho_w for walls: a 32-byte record,
 *   SPH_NB_PUT_ in sph_common.h)
 * so a density loop reads one float4 per neighbour and the forces loop two (pos_p_j and vel_j,
 * or with lists the two halves of j's record).
 *   sph_density  (fluid i):    rho_i = sum_j m_j W(|x_i - x_j|, h)   (j over fluid and boundary,
 *                              j = i included; boundary m_b = rho0 / sum_lattice W), p_i = EOS(rho_i)
 *   sph_boundary (boundary w): pressure extrapolated from the fluid (Adami, Hu & Adams 2012, eq. 27,
 *                              fixed wall a_w = 0):
 *                              p_w = (sum_f p_f W_wf + g . sum_f rho_f (x_w - x_f) W_wf) / sum_f W_wf,
 *                              clamped at >= 0 (0 without fluid neighbours); rho_w = EOS^-1(p_w)
 *   sph_pressure:              p_i = EOS(rho_i) again, for output.
 * Gathers over the neighbour grid: no atomics; sums run in sorted order. sph_density writes only
 * vel[i].w (which no density loop reads) and particle i's pos_p; sph_boundary reads only fluid
 * entries and writes only boundary entries. */
#include "sph_common.h"

/* With lists (-DSPH_LIST), in a step whose go word is set: the list of particle i (in walk
 * order; layout in sph_common.h), its length, the position it was built at, and, with with_rho
 * (a constant of the caller), from the same walk the density sum over j within the support,
 * which visits the same j in the same order as the list loop would, so the sum is the same to
 * the bit. A fluid particle lists the fluid within list_radius = support (1 + skin_k) and the
 * walls within the wider wall_radius = support (1 + 2 skin_k) (so that fluid sliding along a
 * wall keeps its lists twice as far, docs/grid.md); a boundary particle lists only the fluid
 * within wall_radius: sph_boundary, the only loop over it, skips the others, and most wall
 * particles (those away from the fluid) get empty lists. With use_cf, a boundary particle skips
 * the cells that cell_fluid marks as holding no fluid (sph_cell_fluid), most of its
 * candidates.
 * wall_radius may exceed the cells (support (1 + skin_0) wide at least): the walk then takes
 * the cells of the wider block, up to two either side, after the usual 3^d block (the ring),
 * for the walls (fluid i; only near a tank face when every wall is outside the tank) or the
 * fluid (wall i) within wall_radius there, skipping with use_cf the cells without any. The ring
 * holds nothing within list_radius (<= the cell size) of particle i, so no density term. */
/* Particle j (squared distance r2) goes into the list being built, at entry c */
#define SPH_LIST_PUT_(j)                                                                                               \
    {                                                                                                                  \
        if (c < cap) {                                                                                                 \
            SPH_LIST_STORE_(j)                                                                                         \
        }                                                                                                              \
        ++c;                                                                                                           \
    }
#if SPH_LIST_PACK == 4
/* q collects four entries, then goes out in one 16-byte store */
#define SPH_LIST_STORE_(j)                                                                                             \
    q = (uint4)(q.yzw, (j));                                                                                           \
    if ((c & 3u) == 3u) {                                                                                              \
        *out = q;                                                                                                      \
        out += stride;                                                                                                 \
    }
#else
#define SPH_LIST_STORE_(j)                                                                                             \
    *out = (j);                                                                                                        \
    out += stride;
#endif
/* Whether candidate j at r2 goes into particle i's list (reach2: wall_radius2, or list_radius2
 * for fluid that no wall can reach): fluid i lists fluid within radius2 and walls within reach2,
 * a wall lists fluid within reach2; nobody lists itself (the density adds its self term first,
 * SPH_SELF_RHO_, and the forces loop had skipped it: one entry fewer for both loops to read) */
#define SPH_LIST_TAKES_(j, r2)                                                                                         \
    ((r2) < reach2 && (j) != i && (fluid_i ? (r2) < radius2 || type[j] != PTYPE_FLUID : type[j] == PTYPE_FLUID))

/* Cells e0 .. e1 along one axis of the box of half-width rw around coordinate x, widened to
 * the 3^d block's b0 .. b1 (grid_cell_coord clamps both ends into the grid) */
inline int2 sph_ring_axis(float x, float rw, float origin, float cell_inv, uint ncell, int b0, int b1)
{
    return (int2)(min(b0, grid_cell_coord(x - rw, origin, cell_inv, ncell)),
                  max(b1, grid_cell_coord(x + rw, origin, cell_inv, ncell)));
}

inline float sph_list_build(const uint n, const uint i, const float4 x_i, const int fluid_i, __global const float4 *pos,
                            __global const uchar *type, __global const uint *cell_start, __global const uint *cell_end,
                            __constant const grid_params *gp, __constant const sph_params *P, __global uint *nl_list,
                            __global uint *nl_list1, __global uint *nl_list2, __global uint *nl_list3,
                            __global uint *nl_count, __global float4 *pos_ref, __global uint *lstate,
                            const int with_rho, __global const uchar *cell_fluid, const uint use_cf)
{
    const int skip_dry = !fluid_i && use_cf; /* a wall particle lists fluid only */
    const uint level = lstate[4];
    const float radius2 = P->list_radius2[level], wall_radius2 = P->wall_radius2[level], support2 = P->support2;
    const float rw = sqrt(wall_radius2) * 1.0001f; /* a margin for the rounding of cell bounds */
    /* fluid i near a wall: within wall_radius of a tank face, or anywhere if some wall is inside */
    int near_wall = !fluid_i || !P->walls_outside;
    for (uint a = 0u; a < P->dims && !near_wall; ++a) {
        const float xa = a == 0u ? x_i.x : a == 1u ? x_i.y : x_i.z;
        near_wall = xa - P->tank_min[a] < rw || P->tank_max[a] - xa < rw;
    }
    const float reach2 = near_wall ? wall_radius2 : radius2;
    const uint cap = P->list_cap;
    NL_ROW_(SPH_LIST_OUT_ *, i, out, stride) /* particle i's first entry, and the step to the next */
#if SPH_LIST_PACK == 4
    uint4 q = (uint4)(0u);
#endif
    uint c = 0u;
    float rho_i = with_rho && fluid_i ? SPH_SELF_RHO_(x_i, P) : 0.0f;
    NEIGHBOURS_CELLS_BEGIN(gp, cell_start, cell_end, x_i, j0, j1)
    if (skip_dry && (cell_fluid[NEIGHBOURS_CELL] & CELL_FLUID) == 0u) continue;
    for (uint j = j0; j < j1; ++j) {
        const float4 x_j = pos[j]; /* (x_j, m_j) */
        float4 dx = x_i - x_j;
        dx.w = 0.0f;
        const float r2 = dot(dx, dx);
        if (!SPH_LIST_TAKES_(j, r2)) continue;
        SPH_LIST_PUT_(j)
        if (with_rho && r2 < support2) rho_i += x_j.w * sph_W(r2, P);
    }
    NEIGHBOURS_CELLS_END
    if (near_wall) { /* the ring: the cells within wall_radius beyond the 3^d block */
        NEIGHBOURS_BLOCK(gp, x_i, bx0, bx1, by0, by1, bz0, bz1)
        const float inv = gp->cell_size_inv;
        const int2 ex = sph_ring_axis(x_i.x, rw, gp->origin[0], inv, gp->ncell[0], bx0, bx1);
        const int2 ey = sph_ring_axis(x_i.y, rw, gp->origin[1], inv, gp->ncell[1], by0, by1);
        const int2 ez =
            gp->dims == 3 ? sph_ring_axis(x_i.z, rw, gp->origin[2], inv, gp->ncell[2], bz0, bz1) : (int2)(0);
        const int ex0 = ex.x, ex1 = ex.y, ey0 = ey.x, ey1 = ey.y, ez0 = ez.x, ez1 = ez.y;
        const uchar want = fluid_i ? CELL_WALL : CELL_FLUID;
        for (int z = ez0; z <= ez1; ++z)
            for (int y = ey0; y <= ey1; ++y) {
                const int in_yz = z >= bz0 && z <= bz1 && y >= by0 && y <= by1;
                for (int x = ex0; x <= ex1; ++x) {
                    if (in_yz && x == bx0) x = bx1 + 1; /* skip the block's row */
                    if (x > ex1) break;
                    const uint cell = (uint)x + gp->ncell[0] * ((uint)y + gp->ncell[1] * (uint)z);
                    if (use_cf && (cell_fluid[cell] & want) == 0u) continue;
                    const uint j1 = cell_end[cell];
                    for (uint j = cell_start[cell]; j < j1; ++j) {
                        float4 dx = x_i - pos[j];
                        dx.w = 0.0f;
                        const float r2 = dot(dx, dx);
                        if (!SPH_LIST_TAKES_(j, r2)) continue;
                        SPH_LIST_PUT_(j)
                    }
                }
            }
    }
#if SPH_LIST_PACK == 4
    const uint rest = min(c, cap) & 3u; /* entries still in q, at its end */
    if (rest == 1u) *out = (uint4)(q.w, 0u, 0u, 0u);
    else if (rest == 2u) *out = (uint4)(q.zw, 0u, 0u);
    else if (rest == 3u) *out = (uint4)(q.yzw, 0u);
#endif
    nl_count[i] = c;
    if (c > cap) atomic_inc(lstate + 5); /* a particle the _walk kernels take */
    pos_ref[i] = x_i;
    return rho_i;
}

/* The density of particle i: rho_i and p_i / rho_i^2 (fluid), and with lists in a step whose
 * go word has GO_REBUILD the lists of every particle. list_walk and may_build: constants of
 * each kernel below (list_walk: sph_common.h, SPH_LIST_MINE_; may_build 0: sph_density_kept,
 * for a step the host knows keeps the lists or has just built them with sph_lists_build,
 * carries no list-build code, which made its loop faster on the H200, docs/performance.md). */
inline void sph_density_one(const uint n, const uint i, __global const float4 *SPH_RESTRICT pos, __global float4 *vel,
                            __global const uchar *SPH_RESTRICT type, __global const uint *SPH_RESTRICT cell_start,
                            __global const uint *SPH_RESTRICT cell_end, __constant const grid_params *gp,
                            __constant const sph_params *P, __global float4 *pos_p, __global uint *nl_list,
                            __global uint *nl_list1, __global uint *nl_list2, __global uint *nl_list3,
                            __global uint *nl_count, __global float4 *pos_ref, __global uint *lstate,
                            const int list_walk, const int may_build, __global const uchar *cell_fluid,
                            const uint use_cf)
{
#ifdef SPH_LIST
    /* a rebuild step: every particle's list, and the density on the way (sph_density alone);
     * otherwise the particles whose lists this kernel reads */
    const int build = may_build && (lstate[0] & GO_REBUILD) != 0u;
    if (build ? list_walk : !SPH_LIST_MINE_(i, list_walk)) return;
#else
    const int build = 0;
#endif
    const int fluid = type[i] == PTYPE_FLUID; /* boundary: sph_boundary */
    const float4 x_i = pos[i];
    float rho_i = 0.0f;
#ifdef SPH_LIST
    if (build)
        rho_i = sph_list_build(n, i, x_i, fluid, pos, type, cell_start, cell_end, gp, P, nl_list, nl_list1, nl_list2,
                               nl_list3, nl_count, pos_ref, lstate, 1, cell_fluid, use_cf);
#endif
    if (!fluid) return;
    if (!build) {
        const float support2 = P->support2;
#ifdef SPH_LIST
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
    const float p_i = sph_eos(rho_i, P);
    vel[i].w = rho_i; /* only the w component: no density loop reads vel */
    /* no density loop reads pos_p */
    SPH_NB_PUT_(pos_p, i, (float4)(x_i.xyz, p_i / (rho_i * rho_i)), (float4)(vel[i].xyz, rho_i));
}

#define SPH_DENSITY_ARGS                                                                                               \
    const uint n, __global const float4 *pos_a,  /* (x (m), mass (kg)), sorted (or pos_b) */                           \
        __global float4 *vel_a,                  /* (v, rho): rho (kg/m^3) out (fluid) (or vel_b) */                   \
        __global const uchar *SPH_RESTRICT type, /* PTYPE_*, sorted */                                                 \
        __global const uint *SPH_RESTRICT cell_start, __global const uint *SPH_RESTRICT cell_end,                      \
        __constant const grid_params *gp, __constant const sph_params *P,                                              \
        __global float4 *pos_p, /* (x, p/rho^2) [, (v, rho) with lists], out (fluid) */                                \
        __global uint *nl_list, /* neighbour lists (-DSPH_LIST), parts 0-3: read, or */                                \
        __global uint *nl_list1, __global uint *nl_list2, __global uint *nl_list3,                                     \
        __global uint *nl_count,      /* written when the go word has GO_REBUILD */                                    \
        __global float4 *pos_ref,     /* lists: x_i where they were built, written on go */                            \
        __global uint *lstate,        /* lists: [0] go word (GO_REBUILD, GO_ALT), [5] walkers */                       \
        const uint stride,            /* work-group spread (sph_item) */                                               \
        __global const float4 *pos_b, /* the other pair, read instead with GO_ALT */                                   \
        __global float4 *vel_b,                                                                                        \
        __global const uchar *cell_fluid, /* lists: per cell, 1 if it holds fluid (sph_cell_fluid) */                  \
        const uint use_cf,                /* cell_fluid is set for this step's grid */                                 \
        const uint ahead                  /* launched ahead of the host's read of the decision: only in a \
                                     step that keeps the lists (SPH_AHEAD_SKIP_) */

/* The kernel body: particle i of this work-item, from the pair the go word names. */
#define SPH_DENSITY_KERNEL_(may_build)                                                                                 \
    {                                                                                                                  \
        const uint i = sph_item(stride);                                                                               \
        if (i >= n || SPH_AHEAD_SKIP_(ahead, lstate)) return;                                                          \
        const int alt = SPH_ALT_(lstate);                                                                              \
        sph_density_one(n, i, alt ? pos_b : pos_a, alt ? vel_b : vel_a, type, cell_start, cell_end, gp, P, pos_p,      \
                        nl_list, nl_list1, nl_list2, nl_list3, nl_count, pos_ref, lstate, 0, may_build, cell_fluid,    \
                        use_cf);                                                                                       \
    }

__kernel void sph_density(SPH_DENSITY_ARGS) SPH_DENSITY_KERNEL_(1)

#ifdef SPH_LIST
    /* sph_density reading the lists: in a step that keeps them (the host read the go word: no
 * GO_REBUILD), or right after sph_lists_build. */
    __kernel void sph_density_kept(SPH_DENSITY_ARGS) SPH_DENSITY_KERNEL_(0)

    /* The lists of every particle without the densities, for a step the host knows rebuilds them on
 * a GPU (sph.c, lists_apart): sph_density_kept and sph_density_walk_built then take the
 * densities from the new lists, the same sums to the bit. Without the density in its loop the
 * build took 8.5 instead of 11.5 ms at 1.4x10^7 particles on the H200, and the step about 1 %
 * less (docs/performance.md, eighth session). */
    __kernel void sph_lists_build(SPH_DENSITY_ARGS)
{
    const uint i = sph_item(stride);
    if (i >= n) return;
    __global const float4 *pos = SPH_ALT_(lstate) ? pos_b : pos_a;
    sph_list_build(n, i, pos[i], type[i] == PTYPE_FLUID, pos, type, cell_start, cell_end, gp, P, nl_list, nl_list1,
                   nl_list2, nl_list3, nl_count, pos_ref, lstate, 0, cell_fluid, use_cf);
}

/* The particles over list_cap (launched over a few work-groups that loop, sph.c; returns at once
 * when the last build found none): sph_density_walk in a step that keeps the lists (in a
 * rebuild step sph_density has done them), sph_density_walk_built after sph_lists_build. */
#define SPH_DENSITY_WALK_KERNEL_(after_lists_build)                                                                    \
    {                                                                                                                  \
        if (!SPH_LIST_WALKERS_(lstate) || (!(after_lists_build) && (lstate[0] & GO_REBUILD) != 0u) ||                  \
            SPH_AHEAD_SKIP_(ahead, lstate))                                                                            \
            return;                                                                                                    \
        const int alt = SPH_ALT_(lstate);                                                                              \
        for (uint i = get_global_id(0); i < n; i += get_global_size(0))                                                \
            sph_density_one(n, i, alt ? pos_b : pos_a, alt ? vel_b : vel_a, type, cell_start, cell_end, gp, P, pos_p,  \
                            nl_list, nl_list1, nl_list2, nl_list3, nl_count, pos_ref, lstate, 1, 0, cell_fluid,        \
                            use_cf);                                                                                   \
    }

__kernel void sph_density_walk(SPH_DENSITY_ARGS) SPH_DENSITY_WALK_KERNEL_(0) __kernel
    void sph_density_walk_built(SPH_DENSITY_ARGS) SPH_DENSITY_WALK_KERNEL_(1)
#endif

    /* The pressure and density of wall particle i (list_walk as in sph_density_one). */
    inline void sph_boundary_one(const uint i, __global const float4 *SPH_RESTRICT pos, __global float4 *vel,
                                 __global const uchar *SPH_RESTRICT type, __global const uint *SPH_RESTRICT cell_start,
                                 __global const uint *SPH_RESTRICT cell_end, __constant const grid_params *gp,
                                 __constant const sph_params *P, __global float4 *pos_p, const uint n,
                                 __global const uint *SPH_RESTRICT nl_list, __global const uint *SPH_RESTRICT nl_list1,
                                 __global const uint *SPH_RESTRICT nl_list2, __global const uint *SPH_RESTRICT nl_list3,
                                 __global const uint *SPH_RESTRICT nl_count, const int list_walk, const int kept)
{
    if (type[i] != PTYPE_BOUNDARY || !SPH_LIST_MINE_(i, list_walk)) return;
#ifdef SPH_LIST
    /* In a step that keeps the lists (kept), a wall whose list is empty had no fluid within the
     * list radius at the build, so none within the support since (else the step would have
     * rebuilt): its p_w = 0 and rho_w, written in the rebuild step, stand. No fluid particle
     * lists it, the fallback walk drops it on r2 before loading its vel, and every snapshot step
     * rebuilds, so nothing reads them until then; sph_forces still copies vel.w into the other
     * pair in the rebuild step, so that both pairs hold every wall's density. Most walls are
     * dry; they now cost one load. */
    if (kept && nl_count[i] == 0u) return;
#endif
    const float4 x_w = pos[i];
    const float support2 = P->support2;
    float sum_W = 0.0f, sum_pW = 0.0f;    /* 1/m^dims, Pa/m^dims */
    float4 sum_rho_dx_W = (float4)(0.0f); /* kg/m^(2+dims) */
    SPH_BOUNDARY_LOOP_BEGIN(gp, cell_start, cell_end, pos, x_w, support2, i, j)
#ifdef SPH_LIST
    /* a wall's list holds fluid only (sph_list_build): only the fallback walk tests the type */
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
        const float g_dot =
            P->gravity[0] * sum_rho_dx_W.x + P->gravity[1] * sum_rho_dx_W.y + P->gravity[2] * sum_rho_dx_W.z;
        p_w = fmax((sum_pW + g_dot) / sum_W, 0.0f);
    }
    const float rho_w = sph_eos_rho(p_w, P); /* >= rho0 > 0, since p_w >= 0 */
    /* the wall's velocity stays 0 (sph_forces); the sign marks a wall for the forces loop, which
     * then takes mass_wall (P) instead of mass_fluid; sph_pressure unpacks |w| */
    vel[i].w = -rho_w;
    SPH_NB_PUT_(pos_p, i, (float4)(x_w.xyz, p_w / (rho_w * rho_w)), (float4)(0.0f, 0.0f, 0.0f, -rho_w));
}

#define SPH_BOUNDARY_ARGS                                                                                              \
    const uint n, __global const float4 *pos_a,  /* (x (m), mass (kg)), sorted (or pos_b) */                           \
        __global float4 *vel_a,                  /* (v, rho): fluid rho read, boundary rho written (or vel_b) */       \
        __global const uchar *SPH_RESTRICT type, /* PTYPE_*, sorted */                                                 \
        __global const uint *SPH_RESTRICT cell_start, __global const uint *SPH_RESTRICT cell_end,                      \
        __constant const grid_params *gp, __constant const sph_params *P,                                              \
        __global float4 *pos_p,                    /* (x, p/rho^2) [, (v, rho)]: fluid read, boundary written */       \
        __global const uint *SPH_RESTRICT nl_list, /* neighbour lists (-DSPH_LIST), parts 0-3 */                       \
        __global const uint *SPH_RESTRICT nl_list1, __global const uint *SPH_RESTRICT nl_list2,                        \
        __global const uint *SPH_RESTRICT nl_list3, __global const uint *SPH_RESTRICT nl_count,                        \
        const uint stride,                                   /* work-group spread (sph_item) */                        \
        __global const float4 *pos_b,                        /* the other pair, read instead with GO_ALT */            \
        __global float4 *vel_b, __global const uint *lstate, /* lists: [0] go word, [5] walkers */                     \
        const uint ahead                                     /* as in SPH_DENSITY_ARGS */

__kernel void sph_boundary(SPH_BOUNDARY_ARGS)
{
    const uint i = sph_item(stride);
    if (i >= n || SPH_AHEAD_SKIP_(ahead, lstate)) return;
    const int alt = SPH_ALT_(lstate);
    sph_boundary_one(i, alt ? pos_b : pos_a, alt ? vel_b : vel_a, type, cell_start, cell_end, gp, P, pos_p, n, nl_list,
                     nl_list1, nl_list2, nl_list3, nl_count, 0, !SPH_REBUILT_(lstate));
}

#ifdef SPH_LIST
/* The wall particles over list_cap (as sph_density_walk, in every step). */
__kernel void sph_boundary_walk(SPH_BOUNDARY_ARGS)
{
    if (!SPH_LIST_WALKERS_(lstate) || SPH_AHEAD_SKIP_(ahead, lstate)) return;
    const int alt = SPH_ALT_(lstate);
    for (uint i = get_global_id(0); i < n; i += get_global_size(0))
        sph_boundary_one(i, alt ? pos_b : pos_a, alt ? vel_b : vel_a, type, cell_start, cell_end, gp, P, pos_p, n,
                         nl_list, nl_list1, nl_list2, nl_list3, nl_count, 1, !SPH_REBUILT_(lstate));
}
#endif

/* pressure_i = EOS(rho_i) for output (the same function the density stage applies; for boundary
 * particles rho_w = EOS^-1(p_w) gives p_w back). */
__kernel void sph_pressure(const uint n, __constant const sph_params *P,
                           __global const float4 *vel, /* (v, rho), -rho for walls */
                           __global float *rho,        /* kg/m^3, out */
                           __global float *pressure)   /* Pa, out */
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const float rho_i = fabs(vel[i].w);
    rho[i] = rho_i;
    pressure[i] = sph_eos(rho_i, P);
}

/* Neighbour lists (-DSPH_LIST; sph_common.h, docs/grid.md). lstate: [0] the go word: GO_REBUILD
 * (this step rebuilds the grid and the lists), GO_ALT (the state is in the second buffer pair)
 * and GO_CHECK (undecided until sph_list_check), [1] need (NEED_* bits, set by sph_forces when a
 * fluid particle moved more than skin_k / 2 or at least skin_k from where the lists were built),
 * [2] number of rebuilds so far, [3] steps the lists have been kept, [4] the skin level k of the
 * lists (skin_k = skin / 2^k, sph_params), [5] particles over list_cap at the last build (the
 * _walk kernels' work; sph_common.h), [6] the bound B on the relative motion since the build of
 * any two fluid particles in cells of the kept grid at most two apart (float bits, m; +inf: none
 * known; pass 1 takes it from the check, pass 0 adds each step's motion to it), [7] the step's
 * displacement filter F (float bits, m^2), [8] the largest squared displacement above F in the
 * step's sph_forces (float bits; 0: none), [9] checks run, [10] checks skipped for the bound
 * (both counted over the run), [11] the check's maximum (float bits, sph_list_check). */

/* The larger of m and v, where a NaN v counts as infinite (a NaN position makes the check rebuild,
 * and a NaN displacement the carried bound infinite, instead of hiding the motion; fmax would
 * drop it). */
inline float sph_max_nan_inf(float m, float v) { return isnan(v) ? INFINITY : fmax(m, v); }

/* The filter of the per-step displacement (lstate[7], sph_forces) after a rebuild at level k:
 * (skin_rel / 16)^2, so that in the rebuild step only the particles that move that far in one
 * step (lists that last a few steps) write the maximum; +inf without the check (nothing
 * written). Only the level and the switch, so that a run resumed from a snapshot (whose step
 * rebuilt) filters as the original run did. */
#define SPH_FILTER_DECAY 0.8f

inline uint sph_step_filter(__constant const sph_params *P, uint k, uint check)
{
    const float f = P->skin_rel[k] * (1.0f / 16.0f);
    return check && f > 0.0f ? as_uint(f * f) : as_uint(INFINITY);
}

/* One work-item, first in a step (pass 0): decides whether the step rebuilds (GO_REBUILD),
 * clears need, and counts the rebuild. The grid kernels (grid.h) and sph_density (which then
 * builds the lists) read it, so the device decides each step without the host.
 *   - force (the host forces a rebuild in every step that writes a snapshot, so that a run
 *     resumed from a snapshot, which starts with a rebuild, continues bit for bit as the
 *     original run) or NEED_HARD, or NEED_SOFT without `check`: rebuild; with need, one level
 *     up (a larger skin) if the lists lasted fewer than skin_grow_age[k] steps;
 *   - NEED_SOFT alone with `check` (the host launches sph_list_check): if the bound B on the
 *     relative motion (lstate[6]), grown by this step's motion, stays under skin_rel, the lists
 *     are kept without the check (below); else GO_CHECK and nothing else: sph_list_check
 *     measures the relative motion, and pass 1 then decides as above, with need set when that
 *     motion could have brought an unlisted pair within the support;
 *   - otherwise (also when forced) lists kept skin_shrink_age[k] steps: rebuild one level down
 *     (a smaller skin: shorter lists, cheaper loops, while the flow is slow enough to keep
 *     them many steps).
 * Pass 1 returns at once without GO_CHECK.
 * The bound without the check: once a check has kept the lists with bound B (the relative
 * displacement since the build of every fluid pair in cells at most two apart is below B; the
 * other pairs NEED_HARD covers in every step), a step in which no fluid particle moved more than
 * b adds at most 2 b to any pair's, so B + 2 b bounds it after that step. Every fluid particle's
 * step goes through sph_forces_one (the four sph_forces kernels), and nothing else moves one
 * between two sph_list_go (sph.h). sph_forces
 * gives b: with the filter F = lstate[7], every particle that moved more than sqrt(F) in the
 * step writes its squared displacement to lstate[8] (atomic_max; a plain read first, so that few
 * do), and b^2 = max(F, lstate[8]). Pass 0 adds 2 b to B in every step (+inf stays +inf until a
 * check), and skips the check while the grown B stays under skin_rel. The next filter is
 * SPH_FILTER_DECAY b^2 (the displacement filter 0.89 b): near the largest displacement, so that
 * few particles write, and falling when the flow slows; a rebuild sets it by sph_step_filter.
 * In the developed 3D dam break to t = 0.6 s on an H100 (1.36x10^7 particles) 5 462 of the
 * 18 016 steps that would have checked kept the lists this way, with the same rebuilds
 * (docs/performance.md, twenty-first session).
 * A snapshot stores the level its step's lists were built at (sph_state_save), and a resumed
 * run starts there with need set and the age at its largest, so that its first step rebuilds
 * at that level: after it, as after the original run's snapshot step, the level is the same,
 * the age 0 and need clear, and the runs decide alike from there on.
 * The ages come from a cost model (sph.c, set_skin_levels). Only integer state (and the check's
 * maxima, which do not depend on the order of the work-items), so the decisions are the same on
 * every run of the same steps. With `swap` set (the host does not read the decision, sim.c), a
 * step that keeps the grid flips GO_ALT: the last step's output becomes the state read, and
 * nothing is copied; a rebuild gathers from the output into the other pair and keeps GO_ALT. */
__kernel void sph_list_go(__global uint *lstate, const uint force, const uint swap, __constant const sph_params *P,
                          const uint pass, const uint check, __global uint *wet_n)
{
    const uint age = lstate[3], k = lstate[4];
    uint alt = lstate[0] & GO_ALT, need;
    if (pass == 0u) {
        need = lstate[1];
        /* the last step's motion (no fluid particle moved more than b) grows the bound */
        const float b2 = sph_max_nan_inf(as_float(lstate[7]), as_float(lstate[8]));
        /* rounded up, so that float sums over many steps never fall below the motion */
        const float bound = nextafter(as_float(lstate[6]) + 2.0f * sqrt(b2), INFINITY);
        lstate[6] = as_uint(bound);
        lstate[7] = check ? as_uint(SPH_FILTER_DECAY * b2) : as_uint(INFINITY);
        lstate[8] = 0u;
        if (check && !force && need == NEED_SOFT) {
            if (bound < P->skin_rel[k]) { /* kept without the check */
                need = 0u;
                lstate[10] += 1u;
            } else {
                lstate[0] = GO_CHECK | alt;
                lstate[6] = as_uint(INFINITY); /* until pass 1 takes the check's bound */
                lstate[11] = 0u;               /* sph_list_check's maximum */
                lstate[9] += 1u;
                return;
            }
        }
    } else {
        if ((lstate[0] & GO_CHECK) == 0u) return;
        lstate[6] = lstate[11]; /* the check's bound B, carried while the lists are kept */
        need = as_float(lstate[6]) >= P->skin_rel[k] ? NEED_HARD : 0u;
    }
    uint g = force || need ? 1u : 0u, k2 = k;
    if (need) {
        if (k > 0u && age < P->skin_grow_age[k]) k2 = k - 1u;
    } else if (k + 1u < SPH_SKIN_LEVELS && age >= P->skin_shrink_age[k]) {
        g = 1u;
        k2 = k + 1u;
    }
    if (!g && swap) alt ^= GO_ALT;
    lstate[0] = (g ? GO_REBUILD : 0u) | alt;
    lstate[1] = 0u;
    lstate[2] += g;
    lstate[3] = g ? 0u : age + (age < 0xffffffffu ? 1u : 0u);
    lstate[4] = k2;
    if (g) {
        wet_n[0] = 0u;                 /* the wet cells, listed again by sph_cell_fluid */
        lstate[5] = 0u;                /* counted again by the list build */
        lstate[6] = as_uint(INFINITY); /* no bound until a check */
        lstate[7] = sph_step_filter(P, k2, check);
    }
}

/* In a step whose go word has GO_REBUILD (returns at once otherwise), after the grid and the
 * gathers: cell_fluid[c] = CELL_FLUID if cell c of the new grid holds a fluid particle, | CELL_WALL
 * if it holds a wall particle, for the list build, where a wall particle skips the cells without
 * fluid and the walk beyond the 3^d block the cells without what it looks for (sph_list_build).
 * One work-item per cell, which stops once it has seen both. The cells with fluid also go, in
 * no particular order, to wet[0 .. wet_n), which sph_list_go emptied when it decided the rebuild:
 * the check's kernels visit only those (most of a dam break's tank holds none). */
__kernel void sph_cell_fluid(__global const uchar *type, __global const uint *cell_start, __global const uint *cell_end,
                             __constant const grid_params *gp, __global const uint *lstate, __global uchar *cell_fluid,
                             __global uint *wet, __global uint *wet_n)
{
    if ((lstate[0] & GO_REBUILD) == 0u) return;
    __local uint cnt, base;
    const uint l = get_local_id(0), ls = get_local_size(0), n_cells = gp->n_cells;
    /* the same trips for every work-item of a group, so that all reach the barriers */
    for (uint b = get_group_id(0) * ls; b < n_cells; b += get_num_groups(0) * ls) {
        const uint c = b + l;
        uint f = 0u;
        if (c < n_cells) {
            const uint j1 = cell_end[c];
            for (uint j = cell_start[c]; j < j1 && f != (CELL_FLUID | CELL_WALL); ++j)
                f |= type[j] == PTYPE_FLUID ? CELL_FLUID : type[j] == PTYPE_BOUNDARY ? CELL_WALL : 0u;
            cell_fluid[c] = (uchar)f;
        }
        /* the group's wet cells go to the list in one global atomic (their order there does not
         * matter: each cell's box, and the check's maximum, are the same in any order) */
        if (l == 0u) cnt = 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int w = (f & CELL_FLUID) != 0u;
        const uint slot = w ? atomic_inc(&cnt) : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l == 0u) base = cnt ? atomic_add(wet_n, cnt) : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (w && base + slot < n_cells) wet[base + slot] = c; /* (a stale count never writes past) */
    }
}

/* The state the check reads: the last step's output, pos_b (pos_next), or pos_a with GO_ALT. */
#define SPH_CHECK_STATE_(go) (((go)&GO_ALT) ? pos_a : pos_b)

/* The arguments both kernels of the check take (sph.c sets them once for each). */
#define SPH_CHECK_ARGS                                                                                                 \
    __global const float4 *pos_a, __global const float4 *pos_b, __global const uchar *type,                            \
        __global const uint *cell_start, __global const uint *cell_end, __constant const grid_params *gp,              \
        __global const float4 *pos_ref, __global uint *lstate, __global float4 *cref,                                  \
        __global const uchar *cell_fluid, __global const uint *wet, __global const uint *wet_n

/* Cell c of the kept grid holds fluid: the flags sph_cell_fluid wrote at the rebuild, which hold
 * until the next one (the particles stay in the cells of the build while the grid is kept). */
#define SPH_CELL_WET_(c) ((cell_fluid[c] & CELL_FLUID) != 0u)

/* Work-items per cell in sph_cell_refs (-DSPH_CELL_LANES, sph.c): 1 on CPUs, 8 on GPUs. */
#ifndef SPH_CELL_LANES
#define SPH_CELL_LANES 1
#endif

/* One fluid particle's displacement d into a cell's box (lo, hi; in w: lo -1 once the cell has
 * fluid, hi 1 once some d is not finite). */
inline void sph_box_add(float4 d, float4 *lo, float4 *hi)
{
    const float bad = isfinite(d.x) && isfinite(d.y) && isfinite(d.z) ? 0.0f : 1.0f;
    d.w = 0.0f;
    *lo = fmin(*lo, d);
    *hi = fmax(*hi, d);
    (*lo).w = -1.0f;
    (*hi).w = fmax((*hi).w, bad);
}

/* The box (lo, hi) of cell c's particles j = cell_start[c] + first, every `step`-th. */
inline void sph_box_of(uint c, uint first, uint step, __global const float4 *x, __global const float4 *pos_ref,
                       __global const uchar *type, __global const uint *cell_start, __global const uint *cell_end,
                       float4 *lo, float4 *hi)
{
    *lo = (float4)(INFINITY, INFINITY, INFINITY, 0.0f);
    *hi = (float4)(-INFINITY, -INFINITY, -INFINITY, 0.0f);
    const uint j1 = cell_end[c];
    for (uint j = cell_start[c] + first; j < j1; j += step)
        if (type[j] == PTYPE_FLUID) sph_box_add(x[j] - pos_ref[j], lo, hi);
}

/* A cell's entry from its box: centre u and, in w, half the diagonal r (infinite if some d was
 * not finite), or w = -1 without fluid. */
inline float4 sph_box_ref(float4 lo, float4 hi)
{
    float4 u = (float4)(0.0f, 0.0f, 0.0f, -1.0f);
    if (lo.w < 0.0f) {
        float4 semi = 0.5f * (hi - lo);
        semi.w = 0.0f;
        u = 0.5f * (lo + hi);
        u.w = hi.w > 0.0f ? INFINITY : length(semi);
    }
    return u;
}

/* The relative-motion check, first pass (a step whose go word has GO_CHECK; returns at once
 * otherwise): for every cell c of the kept grid that holds fluid (SPH_CELL_WET_), the box around
 * the displacements d = x - x_ref of its fluid particles, written to cref[c] as its centre u_c
 * and, in w, the half of its diagonal r_c, so that |d - u_c| <= r_c for every fluid particle of
 * c (sph_list_check). It takes the cells from the list sph_cell_fluid wrote (wet[0 .. wet_n));
 * the other cells, most of a dam break's tank, are not read or written, and sph_list_check skips
 * them by their flags. A non-finite d makes r_c infinite (fmin and fmax
 * would drop a NaN), so that the step rebuilds. With SPH_CELL_LANES = L > 1, L work-items take
 * a cell: lane l the particles l, l + L, ... of it in sorted order, so that the lanes of a cell
 * read consecutive particles (one work-item per cell read 16-byte pieces some 300 bytes apart),
 * and the first lane joins their boxes through `red` (2 float4 per work-item of a group). sph.c
 * then launches enough work-groups for one trip each, so that no group waits on the memory of
 * one batch of cells after another. min and max give the same box in any order, so the entries
 * do not depend on L (tests: test_check_boxes). */
__kernel void sph_cell_refs(SPH_CHECK_ARGS, __local float4 *red)
{
    const uint go = lstate[0];
    if ((go & GO_CHECK) == 0u) return; /* the same for every work-item: none reaches a barrier */
    __global const float4 *x = SPH_CHECK_STATE_(go);
    const uint nw = wet_n[0]; /* the kept grid's cells with fluid, wet[0 .. nw) (sph_cell_fluid) */
    float4 lo, hi;
#if SPH_CELL_LANES > 1
    /* L lanes a cell (fewer in a smaller group), `per` cells a group; the work-items past
     * per L (a group whose size L does not divide) only reach the barriers */
    const uint ls = get_local_size(0), lanes = min((uint)SPH_CELL_LANES, ls), per = ls / lanes;
    const uint l = get_local_id(0), lane = l % lanes, mine = l / lanes < per;
    /* the same trips for every work-item of a group, so that all reach the barriers */
    for (uint base = get_group_id(0) * per; base < nw; base += get_num_groups(0) * per) {
        const uint k = base + l / lanes, take = mine && k < nw, c = take ? wet[k] : 0u;
        if (take) {
            sph_box_of(c, lane, lanes, x, pos_ref, type, cell_start, cell_end, &lo, &hi);
            red[2 * l] = lo;
            red[2 * l + 1] = hi;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane == 0u && take) {
            for (uint q = 1u; q < lanes; ++q) {
                const float4 lo_q = red[2 * (l + q)], hi_q = red[2 * (l + q) + 1];
                lo = fmin(lo, lo_q);
                hi = fmax(hi, hi_q);
            }
            cref[c] = sph_box_ref(lo, hi);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    for (uint k = get_global_id(0); k < nw; k += get_global_size(0)) {
        const uint c = wet[k];
        sph_box_of(c, 0u, 1u, x, pos_ref, type, cell_start, cell_end, &lo, &hi);
        cref[c] = sph_box_ref(lo, hi);
    }
#endif
}

/* The relative-motion check of a step whose go word has GO_CHECK (returns at once otherwise):
 * may the lists be kept although some fluid particle moved more than skin_k / 2? A pair that
 * is not listed was more than R_l = R (1 + skin_k) apart at the build (R the support) and is
 * still more than R apart if its relative displacement |d_i - d_j| < skin_k R (d = x - x_ref,
 * x_ref = pos_ref, where the lists were built). sph_forces asked for a rebuild if any fluid
 * particle has |d| >= min(2 skin_k, 1/2 + skin_0) R (skin_0 R while some particle walks;
 * NEED_HARD), which covers every fluid-wall pair (walls do not move, and the lists hold them
 * within R (1 + 2 skin_k)) and every pair in cells of the kept grid at least three apart (at
 * least 2 cells >= 2 R_l apart at the build). For fluid i in cell c and fluid j in cell c' at
 * most two apart (in each axis; c' = c included), with the boxes of sph_cell_refs,
 *   |d_i - d_j| <= |d_i - u_c| + |u_c - u_c'| + |u_c' - d_j| <= r_c + |u_c - u_c'| + r_c',
 * and this kernel writes the largest such bound B to lstate[11] (atomic_max on the bits of
 * floats >= 0, which order as uints); sph_list_go's pass 1 keeps the lists if B < skin_rel =
 * 0.999 skin_k R. A cell's own pairs give 2 r_c. In a flow that moves as a whole (the surge of
 * a dam break), the relative motion is far smaller than the motion, and the lists last longer
 * (docs/performance.md, tenth and twelfth sessions). A bound of one reference per cell (its first
 * fluid particle's d) and one maximum over all cells, 2 max|d - u_c| + max|u_c - u_c'|, rebuilt
 * 27 % more often (twelfth session). Work-item k takes the cells with fluid wet[k], wet[k + the
 * number of work-items], ... (sph_cell_fluid's list) and, of the cells after each, those with
 * fluid (SPH_CELL_WET_), launched over a few work-groups that loop (sph.c). `red` holds one float
 * per work-item of a group. */
__kernel void sph_list_check(SPH_CHECK_ARGS, __local float *red)
{
    const uint go = lstate[0];
    if ((go & GO_CHECK) == 0u) return; /* the same for every work-item: none reaches the barrier */
    const int r = gp->dims == 3 ? 2 : 0;
    const uint nx = gp->ncell[0], ny = gp->ncell[1], nz = gp->ncell[2];
    float bmax = 0.0f;
    const uint nw = wet_n[0];
    for (uint k = get_global_id(0); k < nw; k += get_global_size(0)) {
        const uint c = wet[k];
        const float4 u = cref[c];
        bmax = sph_max_nan_inf(bmax, 2.0f * u.w);
        /* the cells after c (in z, y, x order) at most two apart in each axis */
        const int cx = (int)(c % nx), cy = (int)(c / nx % ny), cz = (int)(c / (nx * ny));
        for (int oz = 0; oz <= r; ++oz)
            for (int oy = oz > 0 ? -2 : 0; oy <= 2; ++oy)
                for (int ox = oz > 0 || oy > 0 ? -2 : 1; ox <= 2; ++ox) {
                    const int qx = cx + ox, qy = cy + oy, qz = cz + oz;
                    if (qx < 0 || qy < 0 || qx >= (int)nx || qy >= (int)ny || qz >= (int)nz) continue;
                    const uint q = (uint)qx + nx * ((uint)qy + ny * (uint)qz);
                    if (!SPH_CELL_WET_(q)) continue;
                    const float4 w = cref[q];
                    float4 e = w - u;
                    e.w = 0.0f;
                    bmax = sph_max_nan_inf(bmax, u.w + w.w + length(e));
                }
    }
    /* the group's maximum, then one atomic */
    const uint l = get_local_id(0), ls = get_local_size(0);
    red[l] = bmax;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0u) {
        for (uint k = 1u; k < ls; ++k) bmax = fmax(bmax, red[k]);
        atomic_max(lstate + 11, as_uint(bmax));
    }
}
