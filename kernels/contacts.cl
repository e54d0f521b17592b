/* contacts.cl: the hard-sphere contact stages (particle mode). Every kernel is a gather: a
 * work-item writes only its own particle (and its own contact slots), so results do not depend
 * on thread timing; floating-point contraction is off so that every kernel evaluates a shared
 * test (is this pair touching?) bit for bit alike.
 *
 *   contact_list      : contacts at the start of the step, their carried impulses (warm start)
 *   contact_warm      : the carried impulses applied to the velocities
 *   contact_resolve   : one Jacobi pass: separation of overlaps and normal impulses
 *   contact_integrate : kick, drift and wall bounce -> pos_next, vel_next
 *   contact_pairs     : touching pairs per particle (count, and optionally the partners)
 *
 * Arrays are in grid-sorted order; pos0 and v0 are the step's input state (the positions the
 * cell table was built on). Symbols (docs/contacts.md): x position (m), v velocity (m/s),
 * m mass (kg), r radius (m), e restitution, n_ij = (x_i - x_j) / |x_i - x_j| the contact normal
 * pointing to i, delta_ij = r_i + r_j - |x_i - x_j| the overlap (m), v_n = (v_i - v_j) . n_ij
 * (m/s, < 0 approaching), v0_n the same from v0, lambda_ij >= 0 the normal impulse of the step
 * on i (N s), m_ij = m_i m_j / (m_i + m_j) the reduced mass, d_i the contacts of i at pos0. */
#pragma OPENCL FP_CONTRACT OFF

#include "contact_shared.h"
#include "neighbours.h"

#define CONTACT_NO_ID 0xffffffffu

/* Do spheres at p_i, p_j with radii summing to r_sum overlap? */
inline int contact_touch(float4 p_i, float4 p_j, float r_sum)
{
    const float4 dx = p_i - p_j;
    return dot(dx, dx) < r_sum * r_sum;
}

/* Unit normal n_ij from dx = x_i - x_j, and the distance; coincident centres: +-e_x by index. */
inline float4 contact_normal(float4 dx, uint i, uint j, float *dist)
{
    const float r2 = dot(dx, dx);
    if (r2 > 0.0f) {
        *dist = sqrt(r2);
        return dx / *dist;
    }
    *dist = 0.0f;
    return (float4)(i < j ? 1.0f : -1.0f, 0.0f, 0.0f, 0.0f);
}

/* Jacobi relaxation of a pair from the contact counts of its spheres. */
inline float contact_omega(float omega, uint d_i, uint d_j) { return min(1.0f, omega / (float)max(max(d_i, d_j), 1u)); }

/* Target normal velocity of a contact: an impact (approach faster than v_rest at the start of
 * the step) bounces back with e; a slower (resting) contact must merely stop approaching. */
inline float contact_target(float v0_n, float e, float v_rest) { return v0_n < -v_rest ? -e * v0_n : 0.0f; }

/* Impulse carried in `pid`/`lam` slots (of particle at old slot `o`) for partner id `q`. */
inline float contact_carried(__global const uint *pid, __global const float *lam, uint o, uint slots, uint q)
{
    for (uint k = 0; k < slots; ++k) {
        const uint p = pid[(size_t)o * slots + k];
        if (p == q) return lam[(size_t)o * slots + k];
        if (p == CONTACT_NO_ID) break;
    }
    return 0.0f;
}

/* Contacts at the start of the step. degree[i] = number of j != i touching i at pos0; the first
 * `slots` of them (in scan order) get a slot k: pid_new[i*slots + k] = id[j] and lam_new = the
 * impulse the pair carried from the last step (warm start; both spheres must have carried it,
 * the smaller value is taken, so the pair agrees; 0 when `warm` is 0). `idx` maps a sorted slot
 * to its slot in the previous step's order (where pid_old, lam_old live). */
__kernel void contact_list(const uint n, __constant grid_params *gp, __constant contact_params *cp,
                           __global const uint *cell_start, __global const uint *cell_end, __global const float4 *pos0,
                           __global const float *radius, __global const uint *id, const uint warm,
                           __global const uint *idx, __global const uint *pid_old, __global const float *lam_old,
                           __global uint *degree, __global uint *pid_new, __global float *lam_new)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const uint slots = cp->slots;
    const float4 p0_i = pos0[i];
    const float r_i = radius[i];
    const uint id_i = id[i];
    uint k = 0;
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, p0_i, j)
    if (j == i) continue;
    if (!contact_touch(p0_i, pos0[j], r_i + radius[j])) continue;
    if (k < slots) {
        float lambda = 0.0f;
        if (warm) {
            const float l_i = contact_carried(pid_old, lam_old, idx[i], slots, id[j]);
            const float l_j = contact_carried(pid_old, lam_old, idx[j], slots, id_i);
            lambda = min(l_i, l_j);
        }
        pid_new[(size_t)i * slots + k] = id[j];
        lam_new[(size_t)i * slots + k] = lambda;
    }
    ++k;
    NEIGHBOURS_END
    degree[i] = k;
    for (uint q = k; q < slots; ++q) {
        pid_new[(size_t)i * slots + q] = CONTACT_NO_ID;
        lam_new[(size_t)i * slots + q] = 0.0f;
    }
}

/* Warm start: v_i = v0_i + sum_j lambda_ij n_ij / m_i over the slotted contacts (pairs whose
 * spheres both have at most `slots` contacts; others start from 0 and are solved without
 * carried impulses). */
__kernel void contact_warm(const uint n, __constant grid_params *gp, __constant contact_params *cp,
                           __global const uint *cell_start, __global const uint *cell_end, __global const float4 *pos0,
                           __global const float4 *v0, __global const float *mass, __global const float *radius,
                           __global const uint *degree, __global float *lam, __global float4 *v_out)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const uint slots = cp->slots;
    const float4 p0_i = pos0[i];
    const float r_i = radius[i];
    const float m_i = mass[i];
    const uint d_i = degree[i];
    float4 dv = (float4)(0.0f);
    uint k = 0;
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, p0_i, j)
    if (j == i) continue;
    if (!contact_touch(p0_i, pos0[j], r_i + radius[j])) continue;
    if (k < slots) {
        const size_t s = (size_t)i * slots + k;
        if (d_i <= slots && degree[j] <= slots) {
            float dist;
            const float4 n_ij = contact_normal(p0_i - pos0[j], i, j, &dist);
            dv += (lam[s] / m_i) * n_ij;
        } else {
            lam[s] = 0.0f;
        }
    }
    ++k;
    NEIGHBOURS_END
    v_out[i] = v0[i] + dv;
}

/* One wall axis of a contact pass, the centre planes at lo and hi (tank wall + r): a centre at
 * or beyond a plane is put on it, and its normal velocity raised to at least the contact target
 * (impact: -e v0; resting: 0). A lone sphere thus bounces as the seed's wall: v -> -e v0. */
inline void contact_wall_pass(float lo, float hi, float e, float v_rest, float v0, float *x, float *v)
{
    if (lo > hi) { /* tank narrower than the sphere: keep it centred */
        *x = 0.5f * (lo + hi);
        return;
    }
    if (*x <= lo) {
        *x = lo;
        const float v_t = contact_target(v0, e, v_rest);
        if (*v < v_t) *v = v_t;
    } else if (*x >= hi) {
        *x = hi;
        const float v_t = -contact_target(-v0, e, v_rest);
        if (*v > v_t) *v = v_t;
    }
}

/* One Jacobi pass over the iterate (x_in, v_in) (pass 1: x_in = pos0, v_in = the warm-started
 * velocities). Particle i scans its candidates j (|pos0_i - pos0_j| < gp->radius, j != i):
 *  - positions, every pair overlapping in x_in, relaxation w_x = omega(OMEGA_X, d_i, d_j):
 *        x_i += w_x delta_ij m_j / (m_i + m_j) n_ij          (seed: half the overlap each)
 *  - impulses, every pair touching at pos0 (the step's contacts), w_v = omega(OMEGA_V, ...),
 *    target v_t = contact_target(v0_n): slotted pairs accumulate the clamped impulse
 *        lambda' = max(0, lambda + w_v m_ij (v_t - v_n)),  v_i += (lambda' - lambda) / m_i n_ij,
 *    the others (a sphere with more contacts than slots) take v_i += w_v (v_t - v_n) m_j /
 *    (m_i + m_j) n_ij when v_n < v_t.
 * A lone pair (w = 1, nothing carried) is resolved in the first pass exactly as the seed does:
 * J = -(1 + e) v_n m_i m_j / (m_i + m_j) on an impact. Every pair term is computed bit for bit
 * alike by both spheres (n_ji = -n_ij, symmetric omega, m_ij, target), so momentum is conserved
 * to rounding. Then the walls. lambda lives in i's own slots, read and written only by i. */
__kernel void contact_resolve(const uint n, __constant grid_params *gp, __constant contact_params *cp,
                              __global const uint *cell_start, __global const uint *cell_end,
                              __global const float4 *pos0, __global const float4 *v0, __global const float *mass,
                              __global const float *radius, __global const uint *degree, __global float *lam,
                              __global const float4 *x_in, __global const float4 *v_in, __global float4 *x_out,
                              __global float4 *v_out)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const uint slots = cp->slots;
    const float4 p0_i = pos0[i];
    const float4 v0_i = v0[i];
    const float4 x_i = x_in[i];
    const float4 v_i = v_in[i];
    const float m_i = mass[i];
    const float r_i = radius[i];
    const uint d_i = degree[i];
    const float e = cp->restitution;
    const float v_rest = cp->v_rest;
    const float cand2 = gp->radius * gp->radius; /* m^2: candidate distance squared at pos0 */
    float4 dx_sum = (float4)(0.0f);
    float4 dv_sum = (float4)(0.0f);
    uint k = 0; /* slot of the next contact at pos0 */

    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, p0_i, j)
    if (j == i) continue;
    const float4 p0_j = pos0[j];
    const float4 d0 = p0_i - p0_j;
    if (dot(d0, d0) >= cand2) continue;
    const float r_sum = r_i + radius[j];
    const int listed = contact_touch(p0_i, p0_j, r_sum);
    const float4 dx = x_i - x_in[j]; /* dx = x_i - x_j */
    const int overlap = dot(dx, dx) < r_sum * r_sum;
    if (!listed && !overlap) continue;
    float dist;
    const float4 n_ij = contact_normal(dx, i, j, &dist);
    const float m_j = mass[j];
    const uint d_j = degree[j];
    if (overlap) {
        const float w_x = contact_omega(cp->omega_x, d_i, d_j) * (m_j / (m_i + m_j));
        dx_sum += ((r_sum - dist) * w_x) * n_ij;
    }
    if (listed) {
        const float w_v = contact_omega(cp->omega_v, d_i, d_j);
        const float v_n = dot(v_i - v_in[j], n_ij);
        const float v_t = contact_target(dot(v0_i - v0[j], n_ij), e, v_rest);
        if (d_i <= slots && d_j <= slots) {
            const size_t s = (size_t)i * slots + k;
            const float m_ij = (m_i * m_j) / (m_i + m_j);
            const float lambda = lam[s];
            const float lambda_new = max(0.0f, lambda + w_v * m_ij * (v_t - v_n));
            lam[s] = lambda_new;
            dv_sum += ((lambda_new - lambda) / m_i) * n_ij;
        } else if (v_n < v_t) {
            dv_sum += ((v_t - v_n) * w_v * (m_j / (m_i + m_j))) * n_ij;
        }
        ++k;
    }
    NEIGHBOURS_END

    const float4 x = x_i + dx_sum;
    const float4 v = v_i + dv_sum;
    float px = x.x, py = x.y, pz = x.z, vx = v.x, vy = v.y, vz = v.z;
    contact_wall_pass(cp->tank_min[0] + r_i, cp->tank_max[0] - r_i, e, v_rest, v0_i.x, &px, &vx);
    contact_wall_pass(cp->tank_min[1] + r_i, cp->tank_max[1] - r_i, e, v_rest, v0_i.y, &py, &vy);
    if (cp->dims == 3) contact_wall_pass(cp->tank_min[2] + r_i, cp->tank_max[2] - r_i, e, v_rest, v0_i.z, &pz, &vz);
    x_out[i] = (float4)(px, py, pz, 0.0f);
    v_out[i] = (float4)(vx, vy, vz, 0.0f);
}

/* One wall axis after the drift: a centre that crossed its plane while moving into the wall
 * faster than v_rest is reflected about the plane with its penetration scaled by e, and its
 * normal velocity reversed and scaled by e (the seed's wall bounce); slower, it is put on the
 * plane and its normal velocity into the wall removed (resting). */
inline void contact_wall_reflect(float lo, float hi, float e, float v_rest, float *x, float *v)
{
    if (lo > hi) {
        *x = 0.5f * (lo + hi);
        return;
    }
    if (*x < lo) {
        if (*v < -v_rest) {
            *x = min(lo + e * (lo - *x), hi);
            *v = -e * *v;
        } else {
            *x = lo;
            *v = max(*v, 0.0f);
        }
    } else if (*x > hi) {
        if (*v > v_rest) {
            *x = max(hi - e * (*x - hi), lo);
            *v = -e * *v;
        } else {
            *x = hi;
            *v = min(*v, 0.0f);
        }
    }
}

/* End of the step, symplectic Euler: v' = v + g dt, x' = x + v' dt, then the wall bounce.
 * Flags NaN/Inf (FLAG_NONFINITE) and speeds over the scene limit (FLAG_RUNAWAY) in `flags`
 * (may be NULL). */
__kernel void contact_integrate(const uint n, __constant contact_params *cp, __global const float4 *x_in,
                                __global const float4 *v_in, __global const float *radius, __global float4 *pos_next,
                                __global float4 *vel_next, __global uint *flags)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const float r_i = radius[i];
    const float e = cp->restitution;
    const float dt = cp->dt;
    const float4 g = (float4)(cp->gravity[0], cp->gravity[1], cp->gravity[2], 0.0f);
    const float4 v = v_in[i] + g * dt;
    const float4 x = x_in[i] + v * dt;
    float px = x.x, py = x.y, pz = x.z, vx = v.x, vy = v.y, vz = v.z;
    contact_wall_reflect(cp->tank_min[0] + r_i, cp->tank_max[0] - r_i, e, cp->v_rest, &px, &vx);
    contact_wall_reflect(cp->tank_min[1] + r_i, cp->tank_max[1] - r_i, e, cp->v_rest, &py, &vy);
    if (cp->dims == 3) contact_wall_reflect(cp->tank_min[2] + r_i, cp->tank_max[2] - r_i, e, cp->v_rest, &pz, &vz);
    pos_next[i] = (float4)(px, py, pz, 0.0f);
    vel_next[i] = (float4)(vx, vy, vz, 0.0f);
    if (flags) {
        const int finite = isfinite(px) && isfinite(py) && isfinite(pz) && isfinite(vx) && isfinite(vy) && isfinite(vz);
        if (!finite) atomic_or(flags, FLAG_NONFINITE);
        else if (cp->max_speed2 > 0.0f && vx * vx + vy * vy + vz * vz > cp->max_speed2) atomic_or(flags, FLAG_RUNAWAY);
    }
}

/* Touching pairs: for particle i, the partners j > i (sorted index) with |x_i - x_j| < r_i + r_j.
 * count[i] gets their number; when max_per > 0 the first max_per of them, in scan order, go
 * to partner[i * max_per ...] (the count is never truncated, so the host sees an overflow).
 * Every touching pair is within 2 r_max <= gp->radius, hence inside the scanned block. */
__kernel void contact_pairs(const uint n, __constant grid_params *gp, __global const uint *cell_start,
                            __global const uint *cell_end, __global const float4 *pos, __global const float *radius,
                            const uint max_per, __global uint *count, __global uint *partner)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const float4 x_i = pos[i];
    const float r_i = radius[i];
    uint k = 0;
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, x_i, j)
    if (j <= i) continue;
    const float4 dx = x_i - pos[j]; /* dx = x_i - x_j */
    const float r_sum = r_i + radius[j];
    if (dot(dx, dx) >= r_sum * r_sum) continue;
    if (k < max_per) partner[(size_t)i * max_per + k] = j;
    ++k;
    NEIGHBOURS_END
    count[i] = k;
}
