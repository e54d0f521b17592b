/* sph_forces.cl: writes pos_next and vel_next (sph_forces_alt: the other way round) and OR-s
 * FLAG_* into flags: the acceleration of
 * every fluid particle from pressure, viscosity and gravity, then the kick-drift leapfrog
 *   v_next = v + a dt,   x_next = x + v_next dt          (v is the half-step velocity)
 * Boundary particles never move: x_next = x, v_next = 0 (written only in a step that re-sorted).
 *
 * For a fluid particle i and neighbour j (dx = x_i - x_j, r = |dx|, grad W_ij = F(r) dx):
 *   pressure (Monaghan 1992, symmetric):  a_i -= m_j (p_i/rho_i^2 + p_j/rho_j^2) grad W_ij
 *   artificial viscosity (Monaghan 1992): a_i -= m_j Pi_ij grad W_ij,
 *        Pi_ij = -alpha c0 mu_ij / rho_ij,  mu_ij = h v_ij.dx / (r^2 + eta^2) when v_ij.dx < 0
 *   laminar, poly6 scheme (Mueller 2003):  a_i += mu m_j / (rho_i rho_j) (v_j - v_i) lap W_visc
 *   laminar, other kernels (Morris 1997):  a_i += 2 mu m_j / (rho_i rho_j) F r^2/(r^2+eta^2) v_ij
 * A boundary neighbour w enters with the pressure p_w and density rho_w that sph_boundary
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
 * A gather over the neighbour grid: no float atomics; only the flag word is OR-ed atomically. */
#include "sph_common.h"

/* The step of fluid particle i (or the copy of wall particle i) from (pos, vel) into
 * (pos_next, vel_next). list_walk: a constant of each kernel (sph_common.h, SPH_LIST_MINE_). */
inline void sph_forces_one(const uint i, const uint n,
                           __global const float4 *SPH_RESTRICT pos,   /* (x (m), m (kg)), sorted */
                           __global const float4 *SPH_RESTRICT vel,   /* (v (m/s), rho (kg/m^3); walls -rho), sorted */
                           __global const uchar *SPH_RESTRICT type,   /* PTYPE_* */
                           __global const float4 *SPH_RESTRICT pos_p, /* (x, p/rho^2) [, (v, rho) with lists] */
                           __global const uint *SPH_RESTRICT cell_start, __global const uint *SPH_RESTRICT cell_end,
                           __constant const grid_params *gp, __constant const sph_params *P,
                           __global float4 *pos_next, /* m, out */
                           __global float4 *vel_next, /* m/s, out */
                           __global uint *flags, __global const uint *SPH_RESTRICT nl_list,
                           __global const uint *SPH_RESTRICT nl_list1, __global const uint *SPH_RESTRICT nl_list2,
                           __global const uint *SPH_RESTRICT nl_list3, __global const uint *SPH_RESTRICT nl_count,
                           __global const float4 *SPH_RESTRICT pos_ref, __global uint *lstate, const int list_walk)
{
    if (!SPH_LIST_MINE_(i, list_walk)) return; /* the other kernel's (sph_common.h) */
    if (type[i] != PTYPE_FLUID) {
        /* A wall particle stays where it is, at rest. Its entries in the pair written here
         * already say so unless this step re-sorted: the two pairs take turns between steps
         * that keep the grid (sim.c), and the one written now was read in the last step. Its
         * density goes along, so that both pairs hold it while sph_boundary skips the dry walls
         * (sph_density.cl; nothing reads a dry wall's density then, this keeps the state whole). */
        if (SPH_REBUILT_(lstate)) {
            pos_next[i] = pos[i];
            vel_next[i] = (float4)(0.0f, 0.0f, 0.0f, vel[i].w);
        }
        return;
    }
#ifdef SPH_NB_REC
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

    SPH_FORCES_LOOP_BEGIN(gp, cell_start, cell_end, pos_p, x_i, support2, i, j)
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
        const float *xi = (const float *)&x_i;
        float *ac = (float *)&acc;
        const float d0 = P->wall_d0, K = P->wall_k;
        for (int a = 0; a < DIMS; ++a) {
            const float d_lo = xi[a] - P->tank_min[a], d_hi = P->tank_max[a] - xi[a];
            if (d_lo < d0) ac[a] += K * (d0 - d_lo);
            else if (d_hi < d0) ac[a] -= K * (d0 - d_hi);
        }
    }
    acc.x += P->gravity[0];
    acc.y += P->gravity[1];
    acc.z += P->gravity[2];
    acc.w = 0.0f;
    const float dt = P->dt;
    float4 v_next = v_i + acc * dt;
    v_next.w = 0.0f;
    float4 x_next = x_i + v_next * dt;
    x_next.w = x_i.w; /* the mass rides along */

    uint bad = 0u;
    const int finite = isfinite(x_next.x) && isfinite(x_next.y) && isfinite(x_next.z) && isfinite(v_next.x) &&
                       isfinite(v_next.y) && isfinite(v_next.z);
    if (!finite) bad |= FLAG_NONFINITE;
    const int runaway = dot(v_next, v_next) > P->max_speed2;
    if (runaway) bad |= FLAG_RUNAWAY;
    /* Last resort, never expected in a resolved flow: a fluid particle that would cross a tank
     * wall is put back on the wall with its outward normal velocity removed, and counted
     * (flags[1]) so that sim.c reports it (and stops the run when it happens too often); a
     * particle among the wall particles would otherwise be pushed out of the domain. A
     * non-finite or runaway particle is left as it is, for the host to name. */
    if (finite && !runaway) {
        int outside = 0;
        float *xc = (float *)&x_next, *vc = (float *)&v_next;
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
        if (outside) {
            bad |= FLAG_OUTSIDE;
            atomic_inc(flags + 1);
        }
    }
    pos_next[i] = x_next;
    vel_next[i] = v_next;
    if (bad) atomic_or(flags, bad);
#ifdef SPH_LIST
    { /* moved more than skin_k / 2 since the lists were built: the next step checks the relative
       * motion or rebuilds (NEED_SOFT); at least 2 skin_k, the fluid-wall entries' margin, or
       * skin_0 while some particle walks the kept grid: it rebuilds (NEED_HARD) (sph_list_go;
       * docs/grid.md; a NaN position compares false here; the flags above stop the run) */
        float4 d = x_next - pos_ref[i];
        d.w = 0.0f;
        const uint k = lstate[4];
        const float d2 = dot(d, d);
        const float hard2 = lstate[5] != 0u ? fmin(P->skin2[k], P->skin_walk2) : P->skin2[k];
        const uint soft = d2 > P->skin_half2[k]; /* (hard implies soft, also with skin 0) */
        const uint bits = soft ? NEED_SOFT | (d2 >= hard2 ? NEED_HARD : 0u) : 0u;
        if (bits != 0u && (lstate[1] & bits) != bits) atomic_or(lstate + 1, bits);
        /* the step's largest displacement, for the bound that lets the check be skipped
         * (sph_list_go): only above the filter, and only while larger than what some other
         * work-item already wrote (a stale read costs an atomic, never the maximum); a NaN
         * passes both tests and makes the bound infinite */
        float4 step = x_next - x_i;
        step.w = 0.0f;
        const float s2 = dot(step, step);
        if (!(s2 <= as_float(lstate[7])) && as_uint(s2) > lstate[8]) atomic_max(lstate + 8, as_uint(s2));
    }
#endif
}

/* The kernels: (pos, vel) -> (pos_next, vel_next), and with lists, for a step whose go word
 * has GO_ALT (the device swapped the pairs, sph_list_go), the same arguments the other way
 * round. Both are launched and one returns at once: read through a pointer chosen at run time,
 * the loop measured 5 % slower on the H200 than through a read-only kernel argument. */
#define SPH_FORCES_ARGS(X0, V0, X1, V1)                                                                                \
    const uint n, X0 pos,                          /* (x (m), m (kg)), sorted */                                       \
        V0 vel,                                    /* (v (m/s), rho (kg/m^3); walls -rho), sorted */                   \
        __global const uchar *SPH_RESTRICT type,   /* PTYPE_* */                                                       \
        __global const float4 *SPH_RESTRICT pos_p, /* (x, p/rho^2) [, (v, rho)] (sph_density, sph_boundary) */         \
        __global const uint *SPH_RESTRICT cell_start, __global const uint *SPH_RESTRICT cell_end,                      \
        __constant const grid_params *gp, __constant const sph_params *P, X1 pos_next, /* m, out */                    \
        V1 vel_next,                                                                   /* m/s, out */                  \
        __global uint *flags,                      /* [0]: FLAG_* bits, OR-ed; [1]: wall put-backs */                  \
        __global const uint *SPH_RESTRICT nl_list, /* neighbour lists (-DSPH_LIST), parts 0-3 */                       \
        __global const uint *SPH_RESTRICT nl_list1, __global const uint *SPH_RESTRICT nl_list2,                        \
        __global const uint *SPH_RESTRICT nl_list3, __global const uint *SPH_RESTRICT nl_count,                        \
        __global const float4 *SPH_RESTRICT pos_ref, /* x_i where the lists were built */                              \
        __global uint *lstate,                       /* [0] go word; [1] need: OR-ed 1 when x_i moved > skin_k/2 */    \
        const uint stride                            /* work-group spread (sph_item) */
#define SPH_IN_ __global const float4 *SPH_RESTRICT
#define SPH_OUT_ __global float4 *

#define SPH_FORCES_ONE_(X0, V0, X1, V1, i, list_walk)                                                                  \
    sph_forces_one(i, n, X0, V0, type, pos_p, cell_start, cell_end, gp, P, X1, V1, flags, nl_list, nl_list1, nl_list2, \
                   nl_list3, nl_count, pos_ref, lstate, list_walk)

__kernel void sph_forces(SPH_FORCES_ARGS(SPH_IN_, SPH_IN_, SPH_OUT_, SPH_OUT_))
{
    const uint i = sph_item(stride);
    if (i >= n || SPH_ALT_(lstate)) return;
    SPH_FORCES_ONE_(pos, vel, pos_next, vel_next, i, 0);
}

#ifdef SPH_LIST
__kernel void sph_forces_alt(SPH_FORCES_ARGS(SPH_OUT_, SPH_OUT_, SPH_IN_, SPH_IN_))
{
    const uint i = sph_item(stride);
    if (i >= n || !SPH_ALT_(lstate)) return;
    SPH_FORCES_ONE_(pos_next, vel_next, pos, vel, i, 0);
}

/* The particles over list_cap (sph_common.h): launched over a few work-groups that loop. */
__kernel void sph_forces_walk(SPH_FORCES_ARGS(SPH_IN_, SPH_IN_, SPH_OUT_, SPH_OUT_))
{
    if (!SPH_LIST_WALKERS_(lstate) || SPH_ALT_(lstate)) return;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) SPH_FORCES_ONE_(pos, vel, pos_next, vel_next, i, 1);
}

__kernel void sph_forces_alt_walk(SPH_FORCES_ARGS(SPH_OUT_, SPH_OUT_, SPH_IN_, SPH_IN_))
{
    if (!SPH_LIST_WALKERS_(lstate) || !SPH_ALT_(lstate)) return;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) SPH_FORCES_ONE_(pos_next, vel_next, pos, vel, i, 1);
}
#endif
