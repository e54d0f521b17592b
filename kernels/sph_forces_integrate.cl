/* sph_forces_integrate.cl: writes pos_next and vel_next, and OR-s FLAG_* into flags: the
 * acceleration of every fluid particle from pressure, viscosity and gravity, and, fused with it
 * (one pass over the particles), the kick-drift leapfrog integration
 *   v_next = v + a dt,   x_next = x + v_next dt          (v is the half-step velocity)
 * Wall particles never move: x_next = x, v_next = 0 (written only in a step that re-sorted).
 *
 * For a fluid particle i and neighbour j (dx = x_i - x_j, r = |dx|, grad W_ij = F(r) dx):
 *   pressure (Monaghan 1992, symmetric):  a_i -= m_j (p_i/rho_i^2 + p_j/rho_j^2) grad W_ij
 *   artificial viscosity (Monaghan 1992): a_i -= m_j Pi_ij grad W_ij,
 *        Pi_ij = -alpha c0 mu_ij / rho_ij,  mu_ij = h v_ij.dx / (r^2 + eta^2) when v_ij.dx < 0
 *   laminar, poly6 scheme (Mueller 2003):  a_i += mu m_j / (rho_i rho_j) (v_j - v_i) lap W_visc
 *   laminar, other kernels (Morris 1997):  a_i += 2 mu m_j / (rho_i rho_j) F r^2/(r^2+eta^2) v_ij
 With -DDENSITY_CONTINUITY the step's density (sph_density.cl) goes into vel_next.w: the state.
 * A wall neighbour w enters with the pressure p_w and density rho_w that sph_boundary
 * extrapolated from the fluid (Adami, Hu & Adams 2012) and v_w = 0 (no-slip wall at rest).
 * Closer than d0 = 0.4 dx to a tank face (the fluid next to a wall sits at 0.5 dx), a linear
 * barrier along the face's inward normal n stops splashing droplets, which have p = 0, before
 * they cross it, wherever they hit it (docs/physics.md, "Barrier"):
 *   a_i += K (d0 - d) n,      d = distance of x_i from the face,  K = min((c0 / (2 d0))^2, 1/dt^2)
 * Neighbour data come packed (docs/physics.md, "Device data layout"): (x_j, p_j/rho_j^2) and
 * (v_j, rho_j), written by the density stages (v = 0 and -rho_w for walls): two loads per
 * neighbour, from pos_p_j and the state's vel_j with the cell walk, from the two halves of j's
 * 32-byte pos_p record with lists (SPH_NB_X_, SPH_NB_V_, sph_common.h). There are two masses
 * (sph_set_masses), so m_j follows from the sign of rho_j's slot; an array of masses, or the
 * mass in pos_p_j.w and p/rho^2 apart, would take a third load (7 % of this loop on the H200,
 * docs/performance.md).
 * With lists, the stage also measures how far each particle moved since the lists were built,
 * which the next step's decision reads (nlist_state.need, step_max; kernels/nlist.cl).
 * A gather over the neighbour grid: no float atomics; only the flag words are OR-ed atomically. */
#include "sph_common.h"
#include "geom.h"
#include "motion.h"

/* The positions the in-range cell walk tests (no lists): pos_p's (x, p/rho^2), which the body
 * loads next, or pos beside 32-byte records (an integrated density), whose x sits at pos_p[2j]. */
#ifdef SPH_RECORD32
#define SPH_WALK_POS_ pos
#else
#define SPH_WALK_POS_ pos_p
#endif

/* Whether this rank reports particle i's flags and motion: on an MPI rank that holds halo
 * copies between exchanges (-DSPH_HALO; src/halo.h), only for the particles it owns, since a
 * copy near the halo's outer edge misses neighbours and steps wrongly until the refresh
 * overwrites it; its owner reports it. */
#ifdef SPH_HALO
#define SPH_MINE(i) (owned[i] != 0)
#else
#define SPH_MINE(i) 1
#endif

/* The step of fluid particle i (or the copy of wall particle i) from (pos, vel) into
 * (pos_next, vel_next). list_walk: a constant of each kernel (nlist_loop.h). */
inline void sph_forces_one(const uint i, const uint n, __global const float4 *pos, /* (x (m), m (kg)), sorted */
                           __global const float4 *vel,   /* (v (m/s), rho (kg/m^3); walls -rho), sorted */
                           __global const uchar *type,   /* PTYPE_* */
                           __global const float4 *pos_p, /* (x, p/rho^2) [, (v, rho) with lists] */
                           __global const uint *cell_start, __global const uint *cell_end,
                           __constant const grid_params *gp, __constant const sph_params *P,
                           __global float4 *pos_next, /* m, out */
                           __global float4 *vel_next, /* m/s, out */
                           __global uint *flags, __global const float *geom_grid, __global const uchar *owned,
                           MOTION_ARGS, NLIST_READ_ARGS, const int list_walk)
{
    if (!NLIST_MINE(i, list_walk)) return; /* the other kernel's (nlist_loop.h) */
#ifdef MOTION
    /* the bodies at this step's time (the forces) and at the next (the positions it ends at) */
    __global const motion_body *now = motion, *next = motion + MOTION_MAX_BODIES;
    const int tank_moves = P->moving & 1u;
#endif
    if (type[i] != PTYPE_FLUID) {
#ifdef MOTION
        /* a wall of a moving body: placed from its rest position at the step's end, with the
         * body's velocity there (docs/physics.md, "Moving walls"), in every step; a move of more
         * than skin / 2 since the lists were built rebuilds them (the relative-motion check
         * knows only the fluid) */
        const float4 ref = wall_ref[id[i] - P->first_wall]; /* (x0, body) */
        const uint body = (uint)ref.w;
        if ((P->moving >> body) & 1u) {
            const float3 x = motion_place(next + body, ref.xyz);
            pos_next[i] = (float4)(x, pos[i].w);
            vel_next[i] = (float4)(motion_velocity(next + body, x), vel[i].w);
#ifdef NLIST
            float4 d = (float4)(x, 0.0f) - pos_ref[i];
            d.w = 0.0f;
            if (dot(d, d) > NP->skin_half2[nl_state->level] && (nl_state->need & NEED_HARD) == 0u)
                atomic_or(&nl_state->need, NEED_SOFT | NEED_HARD);
#endif
            return;
        }
#endif
        /* A wall particle stays where it is, at rest. Its entries in the pair written here
         * already say so unless this step re-sorted: the two pairs take turns between steps
         * that keep the grid (sim.c), and the one written now was read in the last step. Its
         * density goes along, so that both pairs hold it while sph_boundary skips the dry walls
         * (sph_density.cl; nothing reads a dry wall's density then, this keeps the state whole). */
        if (NLIST_REBUILT(nl_state)) {
            pos_next[i] = pos[i];
            vel_next[i] = (float4)(0.0f, 0.0f, 0.0f, vel[i].w);
        }
        return;
    }
#ifdef SPH_RECORD32
    /* i's own record, which the density stage wrote this step from pos[i] and vel[i] (and which
     * its neighbours read too, so it is likely in L2): one 32-byte load instead of pos[i], vel[i]
     * and the record's p/rho^2 (the same values; fluid mass is uniform, sph_set_masses) */
    const float4 rec_i = SPH_NB_X_(pos_p, vel, i);
    const float4 x_i = (float4)(rec_i.xyz, P->mass_fluid); /* (x_i, m_i) */
    const float4 v_i = SPH_NB_V_(pos_p, vel, i);           /* (v_i, rho_i) */
    const float p_rho2_i = rec_i.w;                        /* p_i / rho_i^2, m^2/s^2 / (kg/m^3) */
#else
    const float4 x_i = pos[i]; /* (x_i, m_i) */
    const float4 v_i = vel[i];
    const float p_rho2_i = SPH_NB_X_(pos_p, vel, i).w; /* p_i / rho_i^2, m^2/s^2 / (kg/m^3) */
#endif
    const float rho_i = v_i.w;                                  /* > 0: i is fluid */
    const float m_fluid = P->mass_fluid, m_wall = P->mass_wall; /* kg */
    const float support2 = P->support2;
    const float eta2 = P->eta2; /* m^2 */
#if defined(VISC_ARTIFICIAL)
    const float h = P->h;                     /* m */
    const float alpha_c0 = -P->alpha * P->c0; /* m/s, the product the viscosity term forms */
#endif
    float4 acc = (float4)(0.0f); /* m/s^2 */

    SPH_FORCES_LOOP_BEGIN(gp, cell_start, cell_end, SPH_WALK_POS_, x_i, support2, i, j)
    const float4 x_j = SPH_NB_X_(pos_p, vel, j); /* (x_j, p_j / rho_j^2) */
    float4 dx = x_i - x_j;                       /* dx = x_i - x_j */
    dx.w = 0.0f;
    const float r2 = dot(dx, dx);
    if (r2 >= support2 || r2 == 0.0f) continue; /* r2 == 0 also skips j == i */
    const float r = SPH_SQRT_(r2);
    const float F = sph_F(r, P);                 /* grad_i W_ij = F dx */
    const float4 v_j = SPH_NB_V_(pos_p, vel, j); /* (v_j, rho_j) for fluid, (0, -rho_w) for walls */
    const float m_j = v_j.w < 0.0f ? m_wall : m_fluid;
    const float rho_j = fabs(v_j.w);
    const float p_rho2_j = x_j.w;
    /* pressure */
    float coef = -m_j * (p_rho2_i + p_rho2_j) * F;
    float4 v_ij = v_i - v_j;
    v_ij.w = 0.0f;
#if defined(VISC_ARTIFICIAL)
    const float vr = dot(v_ij, dx);
    if (vr < 0.0f) {
        /* Pi_ij = alpha_c0 mu_ij / rho_ij, mu_ij = h vr / (r^2 + eta^2) (m/s),
             * rho_ij = (rho_i + rho_j) / 2: one division */
        const float Pi_ij = /* m^5/(kg s^2) */
            SPH_DIVIDE_(alpha_c0 * h * vr, (r2 + eta2) * (0.5f * (rho_i + rho_j)));
        coef -= m_j * Pi_ij * F;
    }
    acc += coef * dx;
#elif defined(KERNEL_POLY6)
    acc += coef * dx;
    acc -= (P->mu * m_j / (rho_i * rho_j) * sphk_visc_lap(r, P->support, P->lap_norm)) * v_ij;
#else
    acc += coef * dx;
    acc += (2.0f * P->mu * m_j / (rho_i * rho_j) * F * r2 / (r2 + eta2)) * v_ij;
#endif
    SPH_FORCES_LOOP_END

    { /* barrier of the tank faces */
#ifdef MOTION
        /* a moving tank's faces in its rest frame, the push turned back into the world */
        float4 x_t = x_i, acc_t = (float4)(0.0f);
        if (tank_moves) x_t.xyz = motion_to_body(now, x_i.xyz);
        const float *xi = (const float *)&x_t;
        float *ac = tank_moves ? (float *)&acc_t : (float *)&acc;
#else
        const float *xi = (const float *)&x_i;
        float *ac = (float *)&acc;
#endif
        const float d0 = P->wall_d0, K = P->wall_k;
        for (int a = 0; a < DIMS; ++a) {
            const float d_lo = xi[a] - P->tank_min[a], d_hi = P->tank_max[a] - xi[a];
            if (d_lo < d0) ac[a] += K * (d0 - d_lo);
            else if (d_hi < d0) ac[a] -= K * (d0 - d_hi);
        }
#ifdef MOTION
        if (tank_moves) acc.xyz += motion_rot(now, acc_t.xyz);
#endif
    }
    /* the same barrier at the surface of every object, along its normal (phi: geom.h; a moving
     * object's in its rest frame, motion.h) */
    for (uint o = 0; o < P->n_objects; ++o) {
        float4 nrm;
#ifdef MOTION
        const float phi = (P->moving >> (o + 1u)) & 1u ? motion_sdf(&P->objects[o], geom_grid, now + o + 1u, x_i, &nrm)
                                                       : geom_sdf(&P->objects[o], geom_grid, x_i, &nrm);
#else
        const float phi = geom_sdf(&P->objects[o], geom_grid, x_i, &nrm);
#endif
        if (phi < P->wall_d0) acc += (P->wall_k * (P->wall_d0 - phi)) * nrm;
    }
    acc.x += P->gravity[0];
    acc.y += P->gravity[1];
    acc.z += P->gravity[2];
    acc.w = 0.0f;
    const float dt = P->dt;
    float4 v_next = v_i + acc * dt;
#ifdef DENSITY_CONTINUITY
    v_next.w = rho_i; /* an integrated density is state: it rides in vel.w (sph_density.cl) */
#else
    v_next.w = 0.0f;
#endif
    float4 x_next = x_i + v_next * dt;
    x_next.w = x_i.w; /* the mass rides along */

    uint bad = 0u;
    const int finite = isfinite(x_next.x) && isfinite(x_next.y) && isfinite(x_next.z) && isfinite(v_next.x) &&
                       isfinite(v_next.y) && isfinite(v_next.z);
    if (!finite) bad |= FLAG_NONFINITE;
    const int runaway = dot(v_next.xyz, v_next.xyz) > P->max_speed2;
    if (runaway) bad |= FLAG_RUNAWAY;
    /* Last resort, never expected in a resolved flow: a fluid particle that would cross a tank
     * wall is put back on the wall with its outward normal velocity removed, and counted
     * (flags[1]) so that sim.c reports it (and stops the run when it happens too often); a
     * particle among the wall particles would otherwise be pushed out of the domain. A
     * non-finite or runaway particle is left as it is, for the host to name. */
    if (finite && !runaway) {
        int outside = 0;
#ifdef MOTION
        /* a moving tank: its box in its rest frame at the step's end, the velocity relative to
         * the wall's there */
        float4 x_t = x_next, v_t = v_next;
        if (tank_moves) {
            x_t.xyz = motion_to_body(next, x_next.xyz);
            v_t.xyz = motion_rot_t(next, v_next.xyz - motion_velocity(next, x_next.xyz));
        }
        float *xc = tank_moves ? (float *)&x_t : (float *)&x_next, *vc = tank_moves ? (float *)&v_t : (float *)&v_next;
#else
        float *xc = (float *)&x_next, *vc = (float *)&v_next;
#endif
        for (int a = 0; a < DIMS; ++a) {
            if (xc[a] < P->tank_min[a]) {
                xc[a] = P->tank_min[a];
                vc[a] = fmax(vc[a], 0.0f);
                outside = 1;
            } else if (xc[a] > P->tank_max[a]) {
                xc[a] = P->tank_max[a];
                vc[a] = fmin(vc[a], 0.0f);
                outside = 1;
            }
        }
#ifdef MOTION
        if (tank_moves && outside) {
            x_next.xyz = motion_place(next, x_t.xyz);
            v_next.xyz = motion_rot(next, v_t.xyz) + motion_velocity(next, x_next.xyz);
        }
#endif
        /* the same at the objects' surfaces: a particle that would end inside a solid is put
         * back on its surface (phi = 0) with its velocity into the solid (relative to a moving
         * one's) removed */
        for (uint o = 0; o < P->n_objects; ++o) {
            float4 nrm;
#ifdef MOTION
            const int moves = (P->moving >> (o + 1u)) & 1u;
            const float phi = moves ? motion_sdf(&P->objects[o], geom_grid, next + o + 1u, x_next, &nrm)
                                    : geom_sdf(&P->objects[o], geom_grid, x_next, &nrm);
            const float3 v_w = moves ? motion_velocity(next + o + 1u, x_next.xyz) : (float3)(0.0f);
#else
            const float phi = geom_sdf(&P->objects[o], geom_grid, x_next, &nrm);
            const float3 v_w = (float3)(0.0f);
#endif
            if (phi < 0.0f) {
                x_next.xyz -= phi * nrm.xyz;
                const float vn = dot(v_next.xyz - v_w, nrm.xyz);
                if (vn < 0.0f) v_next.xyz -= vn * nrm.xyz;
                outside = 1;
            }
        }
        if (outside) {
            bad |= FLAG_OUTSIDE;
            if (SPH_MINE(i)) atomic_inc(flags + 1);
        }
    }
    pos_next[i] = x_next;
    vel_next[i] = v_next;
    if (bad && SPH_MINE(i)) atomic_or(flags, bad);
#ifdef NLIST
    if (SPH_MINE(i)) { /* moved more than skin_k / 2 since the lists were built: the next step checks the relative
       * motion or rebuilds (NEED_SOFT); at least 2 skin_k, the fluid-wall entries' margin, or
       * skin_0 while some particle walks the kept grid: it rebuilds (NEED_HARD) (nlist_go;
       * docs/grid.md; a NaN position compares false here; the flags above stop the run) */
        float4 d = x_next - pos_ref[i];
        d.w = 0.0f;
        const uint k = nl_state->level;
        const float d2 = dot(d, d);
        const float hard2 = nl_state->walkers != 0u ? fmin(NP->skin2[k], NP->skin_walk2) : NP->skin2[k];
        const uint soft = d2 > NP->skin_half2[k]; /* (hard implies soft, also with skin 0) */
        const uint bits = soft ? NEED_SOFT | (d2 >= hard2 ? NEED_HARD : 0u) : 0u;
        if (bits != 0u && (nl_state->need & bits) != bits) atomic_or(&nl_state->need, bits);
        /* the step's largest displacement, for the bound that lets the check be skipped
         * (nlist_go): only above the filter, and only while larger than what some other
         * work-item already wrote (a stale read costs an atomic, never the maximum); a NaN
         * passes both tests and makes the bound infinite */
        float4 step = x_next - x_i;
        step.w = 0.0f;
        const float s2 = dot(step, step);
        if (!(s2 <= as_float(nl_state->filter)) && as_uint(s2) > nl_state->step_max)
            atomic_max(&nl_state->step_max, as_uint(s2));
    }
#endif
}

/* The arguments of both kernels (src/sph.c binds them by these names). pos and vel are read
 * through read-only kernel arguments: read through a pointer chosen at run time, the loop
 * measured 5 % slower on the H200. */
#define SPH_FORCES_ARGS                                                                                                \
    const uint n, __global const float4 *pos, /* (x (m), m (kg)), sorted */                                            \
        __global const float4 *vel,           /* (v (m/s), rho (kg/m^3); walls -rho), sorted */                        \
        __global const uchar *type,           /* PTYPE_* */                                                            \
        __global const uint *cell_start, __global const uint *cell_end, __constant const grid_params *gp,              \
        __constant const sph_params *P,                                                                                \
        __global const float4 *pos_p,    /* (x, p/rho^2) [, (v, rho)] (sph_density, sph_boundary) */                   \
        const uint stride,               /* work-group spread (spread_item) */                                         \
        __global float4 *pos_next,       /* m, out */                                                                  \
        __global float4 *vel_next,       /* m/s, out */                                                                \
        __global uint *flags,            /* [0]: FLAG_* bits, OR-ed; [1]: wall put-backs */                            \
        __global const float *geom_grid, /* the meshes' signed distance grids (geom_shared.h) */                       \
        __global const uchar *owned,     /* -DSPH_HALO: 1 for the particles this MPI rank owns (SPH_MINE) */           \
        MOTION_ARGS, NLIST_READ_ARGS

#define SPH_FORCES_ONE_(i, list_walk)                                                                                  \
    sph_forces_one(i, n, pos, vel, type, pos_p, cell_start, cell_end, gp, P, pos_next, vel_next, flags, geom_grid,     \
                   owned, id, wall_ref, motion, nl_list, nl_list1, nl_list2, nl_list3, nl_count, pos_ref, nl_state,    \
                   NP, list_walk)

__kernel void sph_forces(SPH_FORCES_ARGS)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    SPH_FORCES_ONE_(i, 0);
}

#ifdef NLIST
/* The particles over list_cap (nlist_loop.h): launched over a few work-groups that loop. */
__kernel void sph_forces_walk(SPH_FORCES_ARGS)
{
    if (!NLIST_WALKERS(nl_state)) return;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) SPH_FORCES_ONE_(i, 1);
}
#endif
