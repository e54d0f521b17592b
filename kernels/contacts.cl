/* contacts.cl: the hard-sphere contact stages (particle mode): impulses with restitution and
 * Coulomb friction, rotation, contact normals at the time of impact. Every kernel is a gather: a
 * work-item writes only its own sphere (its entries of the sorted arrays, and of the id-indexed
 * arrays at its id: angular velocity and contact slots), so results do not depend on thread
 * timing; floating-point contraction is off so that both spheres of a pair evaluate every pair
 * quantity bit for bit alike.
 *
 *   contact_list      : contacts at the start of the step (walls, then spheres in scan order)
 *                       and the impulses they carried from the last step (warm start)
 *   contact_warm      : the carried impulses applied to the velocities and angular velocities
 *   contact_resolve   : one Jacobi pass over the impulses (normal, with restitution; tangential,
 *                       within the Coulomb cone)
 *   contact_displace  : the positions moved along the corrected paths since each contact's touch
 *   contact_project   : one Jacobi pass of overlap removal (positions only)
 *   contact_spin      : the angular velocity of the last impulse pass stored at the sphere's id
 *   contact_integrate : kick and drift -> pos_next, vel_next
 *   contact_pairs     : touching pairs per sphere (count, and optionally the partners)
 *   contact_omega_out : angular velocities in sorted order (snapshots)
 *
 * Each kernel takes one sphere per work-item, in blocks spread over the index range (spread_item:
 * on CPUs, a pile at one end of the sorted order would otherwise fall to one thread). Arrays
 * are in grid-sorted order unless they say "by id"; pos0 and v0 are the step's input
 * state (the positions the cell table was built on); pos0.w holds the sphere's mass and v0.w its
 * radius (set at upload, carried by contact_integrate and the grid's gathers; contact_xyz drops
 * them). Symbols (docs/contacts.md): x position (m),
 * v velocity (m/s), w angular velocity (rad/s), m mass (kg), r radius (m), I = k m r^2, e
 * restitution, mu friction; a pair (a, b) is taken from the side of its lower-id sphere a; n the
 * unit normal from b to a at the contact's configuration, s the time since its touch (s), u the
 * velocity of a's contact point relative to b's, lambda_n >= 0 and lambda_t (|lambda_t| <=
 * mu lambda_n) the step's impulse on a (N s), d_i the contacts of i listed at pos0 (touching
 * or near), c_i those its relaxation counts (contact_counts).
 *
 * The iterate of the impulse passes is two buffers per sphere: V = (v, w_z) and, in 3D,
 * W = (w_x, w_y). */
#pragma OPENCL FP_CONTRACT OFF

#include "contact_shared.h"
#include "geom.h"
#include "neighbours.h"
#include "spread.h"
#ifdef MOTION
#include "motion.h"
/* Body b (0 the tank, 1 + o object o) at the step's start: the records the host writes after
 * the meshes' grids (src/motion.c, motion_dev; the step's end follows them, for SPH). Every
 * contact stage takes the bodies there: the contacts are listed, and the positions corrected,
 * at the step's start, and the drift then moves a sphere with its corrected velocity, which
 * keeps it from approaching a wall it touches (docs/contacts.md, "Moving walls"). */
#define CONTACT_BODY(cp, geom_grid, b)                                                                                 \
    ((__global const motion_body *)((geom_grid) + (cp)->motion_offset) + (b))
#endif

/* ---------------------------------------------------------------- small helpers */

inline float contact_comp(float4 v, uint a) { return a == 0u ? v.x : a == 1u ? v.y : v.z; }

inline float4 contact_axis(uint a, float sign)
{
    return (float4)(a == 0u ? sign : 0.0f, a == 1u ? sign : 0.0f, a == 2u ? sign : 0.0f, 0.0f);
}

/* The 24-bit form of a normal impulse lambda_n >= 0 in a slot: bits 7-30 of the float (its
 * exponent and the 16 high bits of its mantissa), rounded to nearest, ties to even: the float's
 * range, within 2^-17 (7.6e-6) of the value. A pass applies the impulse it computes (the
 * increment over the value it loaded) and stores it rounded: the slot is the warm start and the
 * base of the next pass's increment (docs/contacts.md, "Memory"). */
inline uint contact_ln_pack(float ln)
{
    uint u = as_uint(ln) & 0x7fffffffu;
    u += 0x3fu + ((u >> 7) & 1u);
    return min(u >> 7, 0xfeffffu); /* below the infinities */
}
inline float contact_ln_unpack(uint h) { return as_float(h << 7); }

/* A sphere's S contact slots: one block of CONTACT_SLOT_BYTES(S) bytes at its id (slot + id
 * CONTACT_SLOT_BYTES(S)), each field in an array of S: the codes (uint), the tangential words
 * (uint; see contact_slot_lt), the 16 high bits (ushort) and the 8 low bits (uchar) of each
 * lambda_n's 24-bit form (contact_ln_pack). Every access is a naturally aligned load or store
 * within the block. Loaded as three words (code, lambda_n as float, tangential word). */
inline uint3 contact_slot_load(__global const uchar *blk, uint k, uint S)
{
    const uint h = ((__global const ushort *)(blk + 8u * S))[k], l = blk[10u * S + k];
    return (uint3)(((__global const uint *)blk)[k], as_uint(contact_ln_unpack((h << 8) | l)),
                   ((__global const uint *)blk)[S + k]);
}
inline void contact_slot_store(__global uchar *blk, uint k, uint S, uint3 s)
{
    const uint h = contact_ln_pack(as_float(s.y));
    ((__global uint *)blk)[k] = s.x;
    ((__global uint *)blk)[S + k] = s.z;
    ((__global ushort *)(blk + 8u * S))[k] = (ushort)(h >> 8);
    blk[10u * S + k] = (uchar)h;
}

#ifndef CONTACT_AHEAD
#define CONTACT_AHEAD 0
#endif
/* A request for the cache line of byte p: on CPUs (-DCONTACT_CPU: PoCL, whose clang takes a
 * global pointer there) clang's prefetch instruction, elsewhere OpenCL's prefetch, which a
 * device may ignore (NVIDIA's clang refuses the builtin on a global pointer). */
#ifdef CONTACT_CPU
#define CONTACT_PREFETCH(p) __builtin_prefetch(p)
#else
#define CONTACT_PREFETCH(p) prefetch((p), 1)
#endif
/* CPUs (-DCONTACT_AHEAD=D, tuning's contact_ahead): request the slot block of the sphere D items
 * further on in the sorted order now, so that it is in the cache when that item comes: PoCL runs
 * a work-group's items one after another, and the blocks lie by id, scattered over the sorted
 * order (docs/performance.md). A sphere without contacts is skipped when `info` is given: the
 * stages that take info skip such a sphere and never read its block. */
inline void contact_ahead(__global const uchar *slot, __global const uint *id, __global const uchar *info, uint i,
                          uint n, uint S)
{
#if CONTACT_AHEAD > 0
    const uint a = i + CONTACT_AHEAD;
    if (a < n && (!info || info[a] != 0u)) {
        __global const uchar *b = slot + (size_t)id[a] * CONTACT_SLOT_BYTES(S);
        CONTACT_PREFETCH(b);
        CONTACT_PREFETCH(b + CONTACT_SLOT_BYTES(S) - 1u);
    }
#endif
}

/* The code of slot k (the first word of its fields, contact_slot_load). */
inline uint contact_slot_code(__global const uchar *blk, uint k) { return ((__global const uint *)blk)[k]; }

/* The end of a sphere's slots (k < S): an empty code; what follows it is never read. */
inline void contact_slot_end(__global uchar *blk, uint k) { ((__global uint *)blk)[k] = CONTACT_NO_ID; }
inline uint contact_code(uint3 slot) { return slot.x; }

/* A position or velocity of the state without its w lane, which holds the sphere's mass (pos)
 * or radius (vel) (contact_integrate carries both). */
inline float4 contact_xyz(float4 p) { return (float4)(p.x, p.y, p.z, 0.0f); }

inline int contact_is_wall(uint code) { return code >= CONTACT_WALL && code < CONTACT_NO_ID; }

/* Angular velocity from an iterate (V, W); 2D: about z only. */
inline float4 contact_w_of(float4 V, float2 W, uint dims)
{
    return dims == 3u ? (float4)(W.x, W.y, V.w, 0.0f) : (float4)(0.0f, 0.0f, V.w, 0.0f);
}

/* Angular velocity of sphere `id` from the id-indexed array (3 floats in 3D, 1 in 2D). */
inline float4 contact_w_load(__global const float *w, uint id, uint dims)
{
    if (dims == 3u) {
        const float3 a = vload3(id, w);
        return (float4)(a.x, a.y, a.z, 0.0f);
    }
    return (float4)(0.0f, 0.0f, w[id], 0.0f);
}

/* The sphere group of particle `id` (sphere ids are given group by group). */
inline uint contact_group(__constant contact_params *cp, __global const uint *group_start, uint id)
{
    if (cp->uniform) return 0u;
    uint g = cp->n_groups - 1u;
    while (g > 0u && id < group_start[g]) --g;
    return g;
}

/* (restitution, friction) of a contact between groups g_a and g_b; g_b = n_groups: a wall. */
inline float2 contact_material(__constant contact_params *cp, __global const float2 *material, uint g_a, uint g_b)
{
    if (cp->uniform)
        return g_b >= cp->n_groups ? (float2)(cp->wall_restitution, cp->wall_friction)
                                   : (float2)(cp->restitution, cp->friction);
    return material[g_a * (cp->n_groups + 1u) + g_b];
}

/* Jacobi relaxation of a contact from the counted contacts (c, contact_counts) of its spheres
 * (walls: 1). */
inline float contact_relax(float omega, uint d_a, uint d_b) { return min(1.0f, omega / (float)max(max(d_a, d_b), 1u)); }

/* The counts the impulse passes relax with (docs/contacts.md, "Relaxation"): the tank's faces
 * are at right angles to each other, and a face's constraint does not move a sphere along
 * another's, so a tank face counts its sphere's contacts other than the tank's faces, and
 * itself (a sphere in a corner: 1, each face solved whole); a sphere pair counts each sphere's
 * contacts other than its tank faces (two spheres sliding on the floor collide as a lone pair).
 * Objects and sphere pairs count as before. d: the sphere's counted contacts (c), t: the tank
 * faces it touches. */
inline uint contact_count_wall(uint d, uint t, uint face) { return face < CONTACT_OBJECT_FACE ? d - t + 1u : d; }
inline uint contact_count_pair(uint d, uint t) { return d - t; }

/* Target normal velocity: an impact (approach faster than v_rest at the start of the step)
 * bounces back with e; a slower (resting) contact must merely stop approaching. A near pair
 * (gap >= 0: not touching at the start) may close its gap within the step, no more; one that
 * approaches faster than v_rest is left free (no impulse: its impact is resolved when it
 * touches, at its time of touch). */
inline float contact_target(float u0_n, float gap, float e, float v_rest, float dt)
{
    if (gap >= 0.0f) return u0_n < -v_rest ? -INFINITY : -gap / dt;
    return u0_n < -v_rest ? -e * u0_n : 0.0f;
}

/* ---------------------------------------------------------------- contact geometry */

/* Do spheres at p_i, p_j with radii summing to r_sum overlap? */
inline int contact_touch(float4 p_i, float4 p_j, float r_sum)
{
    const float4 dx = p_i - p_j;
    return dot(dx, dx) < r_sum * r_sum;
}

/* Does a listed pair (dx = x0_a - x0_b, dv = v0_a - v0_b) count in its spheres' relaxation:
 * touching, or near at a normal speed of at most v_rest (it may press on the other within the
 * step)? A near pair closing or opening faster only keeps its gap: counting it would solve a
 * binary collision beside it at half strength. The same on both sides of the pair. */
inline int contact_counts(float4 dx, float4 dv, float r_sum, float v_rest)
{
    const float d2 = dot(dx, dx);
    if (d2 < r_sum * r_sum) return 1;
    /* the normal speed at x0 (contact_pair_geo judges a slow contact at the drift's start: the
     * two differ only for a pair that turned about the threshold within one drift) */
    return fabs(dot(dv, dx * (1.0f / sqrt(d2)))) <= v_rest;
}

/* Is the pair listed: overlapping, or near (CONTACT_NEAR)? The same test in every kernel. */
inline int contact_near(float4 p_i, float4 p_j, float r_sum)
{
    return contact_touch(p_i, p_j, r_sum * (1.0f + (float)CONTACT_NEAR));
}

/* A contact's configuration: normal n (from b to a; walls: into the tank), tangent basis (t1, t2)
 * (2D: t1 = e_z x n, t2 = 0), time since touch s in [0, dt], lever arms a_a, a_b (the distance
 * of each centre from the contact point), normal approach speed at the step start u0_n. */
typedef struct contact_geo {
    float4 n, t1, t2;
    float4 v_w; /* a wall's velocity at the contact (0 at rest; a moving body's, -DMOTION) */
    float s, a_a, a_b, u0_n;
    float q;   /* a_a / r_a = a_b / r_b (walls: 1) */
    float gap; /* a near pair (not touching at the step's start): its gap, >= 0; touching: -1 */
} contact_geo;

/* Tangent basis of n, continuous in n except near +-(1, 2, 3)/sqrt(14), so that a tangential
 * impulse carried between steps keeps its direction while the normal turns slowly. */
inline void contact_basis(float4 n, uint dims, float4 *t1, float4 *t2)
{
    if (dims != 3u) {
        *t1 = (float4)(-n.y, n.x, 0.0f, 0.0f);
        *t2 = (float4)(0.0f);
        return;
    }
    float4 t = cross((float4)(0.2672612419f, 0.5345224838f, 0.8017837257f, 0.0f), n);
    float l2 = dot(t, t);
    if (l2 < 1e-6f) {
        t = cross((float4)(1.0f, 0.0f, 0.0f, 0.0f), n);
        l2 = dot(t, t);
    }
    *t1 = t * rsqrt(l2);
    *t2 = cross(n, *t1);
}

/* Pair (a, b), touching or near at the step start. The last drift moved the centres along
 * straight lines with v0. A slow contact (normal speed at the drift's start of at most v_rest:
 * resting, or near and slow; docs/contacts.md, "Slow contacts") is taken at the drift's start,
 * s = dt, its gap (near: apart at x0) the one there. An impact touched s before the step start,
 * where |dx0 - dv0 s| = r_a + r_b (the positive root; s = dt when it touched before the drift
 * began; s = 0 when the overlap is below the rounding of |dx0|); a near pair approaching faster
 * is taken at x0, s = 0 (it gets no impulse). The normal is the separation at that moment,
 * n = (dx0 - dv0 s) / |...|: for an impact the normal at the time of touch, for a slow contact
 * the one of the last resolved configuration. Lever arms split that distance in the ratio of the radii. */
inline contact_geo contact_pair_geo(float4 x0_a, float4 x0_b, float4 v0_a, float4 v0_b, float r_a, float r_b,
                                    __constant contact_params *cp)
{
    contact_geo g;
    const float r_sum = r_a + r_b, dt = cp->dt;
    const float4 dx = x0_a - x0_b, dv = v0_a - v0_b;
    /* the separation at the drift's start */
    float4 d = dx - dv * dt;
    float s = dt, dist = sqrt(dot(d, d));
    const int apart = !contact_touch(x0_a, x0_b, r_sum);
    if (!(dist > 0.0f && dot(dv, d) >= -cp->v_rest * dist)) {
        if (apart) { /* a near pair approaching fast: apart at the start */
            d = dx;
            s = 0.0f;
        } else if (dot(d, d) >= r_sum * r_sum) {
            const float d0 = sqrt(dot(dx, dx));
            const float c = (d0 - r_sum) * (d0 + r_sum); /* < 0: overlapping */
            const float aa = dot(dv, dv), b = dot(dx, dv);
            if (aa > 0.0f && c < 0.0f) {
                const float q = sqrt(b * b - aa * c);
                const float root = b > 0.0f ? (b + q) / aa : -c / (q - b); /* no cancellation either way */
                s = min(root, dt);
                d = dx - dv * s;
            } else { /* overlapping by less than sqrt's rounding: touching just now */
                s = 0.0f;
                d = dx;
            }
        }
        dist = sqrt(dot(d, d));
    }
    if (!(dist > 0.0f)) {
        d = dx;
        dist = sqrt(dot(dx, dx));
    }
    g.gap = apart ? max(dist - r_sum, 0.0f) : -1.0f;
    if (dist > 0.0f) {
        g.n = d * (1.0f / dist);
        g.q = dist / r_sum;
    } else { /* coincident centres: any normal, the same for both */
        g.n = (float4)(1.0f, 0.0f, 0.0f, 0.0f);
        g.q = 1.0f;
    }
    g.a_a = r_a * g.q;
    g.a_b = r_b * g.q;
    g.v_w = (float4)(0.0f);
    g.s = s;
    g.u0_n = dot(dv, g.n);
    contact_basis(g.n, cp->dims, &g.t1, &g.t2);
    return g;
}

/* Object o's signed distance at x and *n, its normal into the free space: where it is at the
 * step's start (a moving object's distance at x carried into its rest frame, kernels/motion.h). */
inline float contact_object_sdf(uint o, float4 x, __constant contact_params *cp, __global const float *geom_grid,
                                float4 *n)
{
#ifdef MOTION
    if ((cp->moving >> (o + 1u)) & 1u)
        return motion_sdf(&cp->objects[o], geom_grid, CONTACT_BODY(cp, geom_grid, o + 1u), x, n);
#endif
    return geom_sdf(&cp->objects[o], geom_grid, x, n);
}

/* Object o's next surface seen from a centre at x (radius r), given the normals n1 (its nearest
 * surface) and, for the third, n2 (its second; else 0): a sphere in a concave edge of a
 * container (its floor and its side) touches both, in a corner three, but the distance names
 * only the nearest. At the probe x + r (n1 + n2), one radius off each surface found, the
 * distance phi_p and its normal *n are those of the next surface when that normal turns from
 * each found one (n . n1 and n . n2 below CONTACT_SECOND_COS); the centre's distance from that
 * surface is then phi_p - r (n . n1 + n . n2) (exact for planes), returned; else (the probe sees
 * a surface already found: a flat or convex one, or a gentle bend) INFINITY. */
inline float contact_object_next(uint o, float4 x, float r, float4 n1, float4 n2, __constant contact_params *cp,
                                 __global const float *geom_grid, float4 *n)
{
    const float phi_p = contact_object_sdf(o, x + r * (n1 + n2), cp, geom_grid, n);
    const float c1 = dot(n1, *n), c2 = dot(n2, *n);
    return c1 < CONTACT_SECOND_COS && c2 < CONTACT_SECOND_COS ? phi_p - r * (c1 + c2) : INFINITY;
}

/* Object o's k-th surface (0: the nearest, 1: the second, 2: the third) seen from a centre at x
 * (radius r): its distance from x (INFINITY when there is none) and *n, its normal. */
inline float contact_object_surface(uint o, uint k, float4 x, float r, __constant contact_params *cp,
                                    __global const float *geom_grid, float4 *n)
{
    float4 n1, n2;
    float h = contact_object_sdf(o, x, cp, geom_grid, &n1);
    *n = n1;
    if (k == 0u) return h;
    h = contact_object_next(o, x, r, n1, (float4)(0.0f), cp, geom_grid, &n2);
    *n = n2;
    if (k == 1u || !(h < INFINITY)) return h;
    return contact_object_next(o, x, r, n1, n2, cp, geom_grid, n);
}

/* The distance h0 of a centre at x0 (radius r) from wall `face` (2 axis + side; side 0: the min
 * wall; or an object's nearest surface, CONTACT_OBJECT_FACE + o, its second one,
 * CONTACT_OBJECT_FACE2 + o, or its third, CONTACT_OBJECT_FACE3 + o), its normal *n into the
 * tank, and *v_w, the wall's velocity at its point nearest x0 (0 at rest). A moving body's wall is where it is at the step's start: the
 * tank's faces in its rest frame, an object's distance at x0 carried into its rest frame
 * (kernels/motion.h). */
inline float contact_wall_h(float4 x0, float r, uint face, __constant contact_params *cp,
                            __global const float *geom_grid, float4 *n, float4 *v_w)
{
    const uint axis = face >> 1, side = face & 1u;
    float h0;
    *v_w = (float4)(0.0f);
    if (face >= CONTACT_OBJECT_FACE) { /* an object: its distance and normal (geom.h) */
        const uint o = (face - CONTACT_OBJECT_FACE) % GEOM_MAX_OBJECTS;
        h0 = contact_object_surface(o, (face - CONTACT_OBJECT_FACE) / GEOM_MAX_OBJECTS, x0, r, cp, geom_grid, n);
#ifdef MOTION
        if ((cp->moving >> (o + 1u)) & 1u)
            *v_w = (float4)(motion_velocity(CONTACT_BODY(cp, geom_grid, o + 1u), x0.xyz - h0 * (*n).xyz), 0.0f);
#endif
        return h0;
    }
#ifdef MOTION
    if (cp->moving & 1u) {
        __global const motion_body *b = CONTACT_BODY(cp, geom_grid, 0u);
        const float4 y = (float4)(motion_to_body(b, x0.xyz), 0.0f);
        h0 = side ? cp->tank_max[axis] - contact_comp(y, axis) : contact_comp(y, axis) - cp->tank_min[axis];
        *n = (float4)(motion_rot(b, contact_axis(axis, side ? -1.0f : 1.0f).xyz), 0.0f);
        *v_w = (float4)(motion_velocity(b, x0.xyz - h0 * (*n).xyz), 0.0f);
        return h0;
    }
#endif
    h0 = side ? cp->tank_max[axis] - contact_comp(x0, axis) : contact_comp(x0, axis) - cp->tank_min[axis];
    *n = contact_axis(axis, side ? -1.0f : 1.0f);
    return h0;
}

/* Sphere at x0 (radius r, velocity v0) against wall `face` (contact_wall_h); u0_n the normal
 * velocity relative to the wall's. A slow contact (u0_n >= -v_rest) is taken at the drift's
 * start, s = dt, a near one's gap the one there, h0 - u0_n dt - r. An impact: h0, the centre's
 * distance from the wall, was r when it touched, s = (r - h0) / (-u0_n) when that lies within
 * the last drift, else s = dt. */
inline contact_geo contact_wall_geo(float4 x0, float4 v0, float r, uint face, __constant contact_params *cp,
                                    __global const float *geom_grid)
{
    contact_geo g;
    const float h0 = contact_wall_h(x0, r, face, cp, geom_grid, &g.n, &g.v_w);
    g.u0_n = dot(v0 - g.v_w, g.n);
    g.s = cp->dt;
    if (!(g.u0_n < -cp->v_rest)) /* slow: as of the drift's start */
        g.gap = h0 < r ? -1.0f : max(h0 - g.u0_n * cp->dt - r, 0.0f);
    else {
        g.gap = h0 < r ? -1.0f : h0 - r; /* near: apart at the start */
        if (h0 < r) g.s = min((r - h0) / -g.u0_n, cp->dt);
        else g.s = 0.0f;
    }
    g.a_a = r;
    g.a_b = 0.0f;
    g.q = 1.0f;
    contact_basis(g.n, cp->dims, &g.t1, &g.t2);
    return g;
}

/* A wall is listed for a sphere of radius r whose centre is closer than this: touching or near
 * (CONTACT_NEAR). */
inline float contact_wall_near_r(float r) { return r * (1.0f + 2.0f * (float)CONTACT_NEAR); }

/* The tank's faces a sphere at x0 (radius r) touches (the same test as contact_list's count of
 * touching contacts). */
inline uint contact_tank_walls(float4 x0, float r, __constant contact_params *cp, __global const float *geom_grid)
{
    uint w = 0u;
#ifdef MOTION
    if (cp->moving & 1u) {
        float4 nrm, v_w;
        for (uint f = 0; f < 2u * cp->dims; ++f)
            w += contact_wall_h(x0, r, f, cp, geom_grid, &nrm, &v_w) < r ? 1u : 0u;
        return w;
    }
#endif
    for (uint a = 0; a < cp->dims; ++a) { /* contact_wall_h's distances of a tank at rest */
        const float x = contact_comp(x0, a);
        w += (x - cp->tank_min[a] < r ? 1u : 0u) + (cp->tank_max[a] - x < r ? 1u : 0u);
    }
    return w;
}

/* The relaxation of a sphere pair, i's count c_i = n_i - t_i given (n: counted contacts,
 * contact_counts; t: touching tank faces): j's tank faces are looked for only when they can
 * matter (n_j > c_i; else max(c_i, n_j - t_j) is c_i whatever t_j). */
inline float contact_relax_pair(float omega, uint c_i, uint n_j, float4 x0_j, float r_j,
                                __constant contact_params *cp, __global const float *geom_grid)
{
    const uint c_j = n_j > c_i ? contact_count_pair(n_j, contact_tank_walls(x0_j, r_j, cp, geom_grid)) : n_j;
    return contact_relax(omega, c_i, c_j);
}

/* ---------------------------------------------------------------- the impulse of a contact */

/* Velocity of a's contact point relative to b's: u = v_a - v_b - (a_a w_a + a_b w_b) x n. */
inline float4 contact_u(const contact_geo *g, float4 v_a, float4 v_b, float4 w_a, float4 w_b)
{
    return v_a - v_b - cross(g->a_a * w_a + g->a_b * w_b, g->n);
}

/* The tangential impulse of a slot, its components along t1 and t2: in 2D the word is the
 * float; in 3D two 16-bit fractions (a, b) of the Coulomb bound, lambda_t = mu lambda_n (a, b) /
 * 32767 (|(a, b)| <= 32767), which keeps it within 1.5e-5 mu lambda_n in 4 bytes. */
inline float2 contact_slot_lt(uint3 s, float mu, uint dims)
{
    if (dims != 3u) return (float2)(as_float(s.z), 0.0f);
    const float scale = (mu * as_float(s.y)) * (1.0f / 32767.0f);
    return (float2)((float)(short)(s.z & 0xffffu), (float)(short)(s.z >> 16)) * scale;
}

/* The word of tangential impulse lt (|lt| <= mu ln), and in *lt_q the impulse it stands for. */
inline uint contact_slot_lt_word(float2 lt, float ln, float mu, uint dims, float2 *lt_q)
{
    if (dims != 3u) {
        *lt_q = (float2)(lt.x, 0.0f);
        return as_uint(lt.x);
    }
    const float lim = mu * ln;
    if (!(lim > 0.0f)) {
        *lt_q = (float2)(0.0f);
        return 0u;
    }
    const short a = convert_short_sat_rte(lt.x / lim * 32767.0f), b = convert_short_sat_rte(lt.y / lim * 32767.0f);
    const float scale = lim * (1.0f / 32767.0f);
    *lt_q = (float2)((float)a, (float)b) * scale;
    return (uint)(ushort)a | ((uint)(ushort)b << 16);
}

/* One relaxed Jacobi update of a contact's accumulated impulse (lambda_n, lambda_t), held in
 * slot *sl, towards the target normal velocity and zero tangential velocity at the contact
 * point, within the Coulomb cone: lambda_n' = max(0, lambda_n + w m_n (target - u_n)),
 * lambda_t' = the projection of lambda_t - w m_t u_t onto |lambda_t'| <= mu lambda_n' (as
 * stored). Returns the impulse increment on a. */
inline float4 contact_update(const contact_geo *g, float4 u, float target, float m_n, float m_t, float mu, float w,
                             uint dims, uint3 *sl)
{
    const float lam_n = as_float(sl->y);
    const float2 lam_t = contact_slot_lt(*sl, mu, dims);
    const float u_n = dot(u, g->n);
    const float2 u_t = (float2)(dot(u, g->t1), dot(u, g->t2));
    const float ln = max(0.0f, lam_n + w * m_n * (target - u_n));
    float2 lt = lam_t - (w * m_t) * u_t;
    const float lim = mu * ln, lt2 = dot(lt, lt);
    if (lt2 > lim * lim) lt = lt * (lim / sqrt(lt2));
    float2 lt_q;
    sl->y = as_uint(ln);
    sl->z = contact_slot_lt_word(lt, ln, mu, dims, &lt_q);
    const float2 dl = lt_q - lam_t;
    return (ln - lam_n) * g->n + dl.x * g->t1 + dl.y * g->t2;
}

/* The same without state (a sphere with more contacts than slots): only this pass's push,
 * with friction bounded by mu times it. */
inline float4 contact_update_free(const contact_geo *g, float4 u, float target, float m_n, float m_t, float mu, float w)
{
    const float u_n = dot(u, g->n);
    const float dn = max(0.0f, w * m_n * (target - u_n));
    float2 lt = -(w * m_t) * (float2)(dot(u, g->t1), dot(u, g->t2));
    const float lim = mu * dn, lt2 = dot(lt, lt);
    if (lt2 > lim * lim) lt = lt * (lim / sqrt(lt2));
    return dn * g->n + lt.x * g->t1 + lt.y * g->t2;
}

/* Effective masses of a pair along the normal and in the tangent plane:
 * 1/m_n = 1/m_a + 1/m_b, 1/m_t = 1/m_n + a_a^2/I_a + a_b^2/I_b = (1 + q^2/k) / m_n, since
 * a = q r and I = k m r^2 (walls: m_b infinite, q = 1). */
inline float contact_mass_n(float m_a, float m_b) { return (m_a * m_b) / (m_a + m_b); }
inline float contact_mass_t(const contact_geo *g, float m_n, float k) { return (m_n * k) / (k + g->q * g->q); }

/* The normal effective mass of a sphere pair from sphere i's side (mass m_i; its partner's m_j):
 * computed from the pair's side, so that both spheres get it bit for bit alike. */
inline float contact_pair_mass_n(int first, float m_i, float m_j)
{
    return first ? contact_mass_n(m_i, m_j) : contact_mass_n(m_j, m_i);
}

/* The impulse a slot carries, on the pair's a sphere. */
inline float4 contact_slot_impulse(const contact_geo *g, uint3 slot, float mu, uint dims)
{
    const float2 lt = contact_slot_lt(slot, mu, dims);
    return as_float(slot.y) * g->n + lt.x * g->t1 + lt.y * g->t2;
}

/* ---------------------------------------------------------------- kernels */

/* Contacts at the start of the step, written into sphere i's slots (by id): first the walls it
 * touches or is near (centre closer than (1 + 2 NEAR) r to the wall), then the spheres it
 * overlaps or is near (contact_near) in scan order; info[i] = CONTACT_INFO(d_i, c_i). A contact
 * in the sphere's last slots (when `warm`: written by the last step, whose sorted order idx[]
 * maps to; warm = 2: in this order, idx unread) keeps the impulses stored there (warm start)
 * unless it is near and closing or opening faster than v_rest; both spheres of a pair hold the
 * same values, so they agree. */
__kernel void contact_list(const uint n, const uint stride, __constant grid_params *gp, __constant contact_params *cp,
                           __global const uint *cell_start, __global const uint *cell_end, __global const float4 *pos0,
                           __global const float4 *v0, __global const uint *id, const uint warm,
                           __global const uint *idx, __global uchar *slot, __global uchar *info,
                           __global const float *geom_grid)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    contact_ahead(slot, id, 0, i, n, cp->slots);
    const uint S = cp->slots, id_i = id[i];
    __global uchar *blk = slot + (size_t)id_i * CONTACT_SLOT_BYTES(S);
    uint3 old[CONTACT_SLOTS_MAX];
    uint n_old = 0;
    if (warm)
        for (; n_old < S; ++n_old) {
            old[n_old] = contact_slot_load(blk, n_old, S);
            if (contact_code(old[n_old]) == CONTACT_NO_ID) break;
        }
    const float4 p0_i = contact_xyz(pos0[i]), v0_i = contact_xyz(v0[i]);
    const float r_i = v0[i].w;
    uint k = 0, c = 0; /* listed; counted (contact_counts) */
    /* the tank's faces, then each object's nearest surface, its second one and in 3D its third */
    const uint m = CONTACT_OBJECT_SURFACES(cp->dims);
    int near = 0;                            /* the object's surface before was listed */
    for (uint f = 0; f < 2u * cp->dims + m * cp->n_objects; ++f) {
        const uint b = f - 2u * cp->dims, k_o = b % m;
        const uint face = f < 2u * cp->dims ? f : CONTACT_OBJECT_FACE + k_o * GEOM_MAX_OBJECTS + b / m;
        if (face >= CONTACT_OBJECT_FACE && k_o > 0u && !near) continue; /* no nearer surface within reach */
        float4 nrm, v_w;
        const float h0 = contact_wall_h(p0_i, r_i, face, cp, geom_grid, &nrm, &v_w);
        near = h0 < contact_wall_near_r(r_i);
        if (!near) continue;
        /* touching, or near at a normal speed of at most v_rest (as contact_wall_geo's u0_n) */
        const int slow = h0 < r_i || fabs(dot(v0_i - v_w, nrm)) <= cp->v_rest;
        /* the tank's faces count when touching (contact_tank_walls), objects as sphere pairs */
        c += (face >= CONTACT_OBJECT_FACE ? slow : h0 < r_i) ? 1u : 0u;
        const uint code = CONTACT_WALL + face;
        uint3 sl = (uint3)(code, 0u, 0u);
        for (uint q = 0; q < n_old && slow; ++q) /* a faster near one starts afresh */
            if (contact_code(old[q]) == code) sl = old[q];
        if (k < S) contact_slot_store(blk, k, S, sl);
        ++k;
    }
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, p0_i, j)
    if (j == i) continue;
    const float4 p0_j = contact_xyz(pos0[j]);
    const float r_sum = r_i + v0[j].w;
    if (!contact_near(p0_i, p0_j, r_sum)) continue;
    const int counted = contact_counts(p0_i - p0_j, v0_i - contact_xyz(v0[j]), r_sum, cp->v_rest);
    c += counted ? 1u : 0u;
    if (k < S) {
        const uint code = j | (id_i < id[j] ? CONTACT_FIRST : 0u);
        uint3 sl = (uint3)(code, 0u, 0u);
        /* a near pair closing or opening faster than v_rest starts afresh: the impulse of last
         * step's impact would be undone in the passes only after its neighbours reacted to it
         * (and a cold step has no idx: nothing is read from it) */
        if (n_old > 0u && counted) {
            const uint was = warm == 2u ? j : idx[j]; /* j's slot in the last step's order (2: it stands) */
            for (uint q = 0; q < n_old; ++q) {
                const uint code_q = contact_code(old[q]) & CONTACT_INDEX;
                if (code_q < CONTACT_WALL && code_q == was) sl = (uint3)(code, old[q].y, old[q].z);
            }
        }
        contact_slot_store(blk, k, S, sl);
    }
    ++k;
    NEIGHBOURS_END
    if (k < S) contact_slot_end(blk, k);
    info[i] = (uchar)CONTACT_INFO(k, c);
}

/* The contact of slot code `code` of sphere i (at p0_i moving at v0_i, radius r_i, group g_i):
 * its geometry and material, from the pair's side; *first: i is the pair's a (walls: 1). */
inline contact_geo contact_slot_geo(uint code, float4 p0_i, float4 v0_i, float r_i, uint g_i,
                                    __global const float4 *pos0, __global const float4 *v0,
                                    __global const uint *id, __global const uint *group_start,
                                    __global const float2 *material, __constant contact_params *cp,
                                    __global const float *geom_grid, int *first, float2 *mat)
{
    if (contact_is_wall(code)) {
        *first = 1;
        *mat = contact_material(cp, material, g_i, cp->n_groups);
        return contact_wall_geo(p0_i, v0_i, r_i, code - CONTACT_WALL, cp, geom_grid);
    }
    const uint j = code & CONTACT_INDEX, g_j = cp->uniform ? 0u : contact_group(cp, group_start, id[j]);
    const float4 p0_j = contact_xyz(pos0[j]), v0_j = contact_xyz(v0[j]);
    const float r_j = v0[j].w;
    *first = (code & CONTACT_FIRST) != 0u;
    *mat = *first ? contact_material(cp, material, g_i, g_j) : contact_material(cp, material, g_j, g_i);
    return *first ? contact_pair_geo(p0_i, p0_j, v0_i, v0_j, r_i, r_j, cp)
                  : contact_pair_geo(p0_j, p0_i, v0_j, v0_i, r_j, r_i, cp);
}

/* Does the contact of slot code `code` carry state this step? Walls always; a sphere pair when
 * both spheres have at most `slots` contacts (d_i, and the partner's). */
inline int contact_slot_kept(uint code, uint d_i, __global const uchar *info, uint S)
{
    return contact_is_wall(code) || (d_i <= S && CONTACT_DEGREE(info[code & CONTACT_INDEX]) <= S);
}

/* The arguments contact_warm, contact_resolve and contact_displace share, in this order. */
#define CONTACT_STEP_ARGS                                                                                              \
    const uint n, const uint stride, __constant grid_params *gp, __constant contact_params *cp,                        \
        __global const uint *cell_start, __global const uint *cell_end, __global const float4 *pos0,                   \
        __global const float4 *v0, __global const uint *group_start, __global const uint *id,                          \
        __global const uchar *info, __global uchar *slot, __global const float2 *material,                             \
        __global const float *geom_grid, __global float4 *geo

#ifdef CONTACT_CACHE
/* The geometry cache (-DCONTACT_CACHE, tuning's contact_cache): contact_warm stores, for every
 * slot the impulse passes solve, what they would otherwise recompute in every pass from the
 * step's start state, three float4 at geo[3 (S i + k)]: (n, s), (t1, target normal velocity),
 * and (v_w, mu) for a wall, (q, +-w, m_n, mu) for a sphere pair (w the relaxation, negative
 * when the pair is solved without state: its partner has more than S contacts). Every value
 * is the one the passes computed before, so results are bit for bit those without the cache. */
inline __global float4 *contact_geo_at(__global float4 *geo, uint i, uint k, uint S)
{
    return geo + 3u * ((size_t)i * S + k);
}

/* CPUs: the cached geometry of the sphere CONTACT_AHEAD items on requested now, as its slots
 * (contact_ahead): the passes' first load of it was their costliest instruction. */
inline void contact_ahead_geo(__global const float4 *geo, __global const uchar *info, uint i, uint n, uint S)
{
#if CONTACT_AHEAD > 0
    const uint a = i + CONTACT_AHEAD;
    if (a < n) {
        const uint d = min((uint)CONTACT_DEGREE(info[a]), S);
        __global const uchar *b = (__global const uchar *)(geo + 3u * (size_t)a * S);
        for (uint o = 0; o < d * CONTACT_CACHE_BYTES; o += 64u) CONTACT_PREFETCH(b + o);
    }
#endif
}

/* The geometry of a cached slot (only the fields the impulse passes and the displacement read;
 * r_a, r_b the radii of the pair's a and b sphere; a wall: r_a the sphere's, r_b unused). */
inline contact_geo contact_geo_cached(__global const float4 *c, int wall, float r_a, float r_b, uint dims)
{
    contact_geo g;
    const float4 A = c[0], B = c[1], C = c[2];
    g.n = (float4)(A.x, A.y, A.z, 0.0f);
    g.s = A.w;
    g.t1 = (float4)(B.x, B.y, B.z, 0.0f);
    g.t2 = dims == 3u ? cross(g.n, g.t1) : (float4)(0.0f);
    g.u0_n = 0.0f;
    g.gap = 0.0f;
    if (wall) {
        g.v_w = (float4)(C.x, C.y, C.z, 0.0f);
        g.q = 1.0f;
        g.a_a = r_a;
        g.a_b = 0.0f;
    } else {
        g.v_w = (float4)(0.0f);
        g.q = C.x;
        g.a_a = r_a * g.q;
        g.a_b = r_b * g.q;
    }
    return g;
}
#endif

/* Warm start: V, W = (v0, w0) plus the impulses the slots carried. A sphere pair is solved with
 * state only when both spheres have at most `slots` contacts; otherwise its carried impulse is
 * dropped (by both). Walls always keep theirs. */
__kernel void contact_warm(CONTACT_STEP_ARGS, __global const float *omega, __global float4 *V_out,
                           __global float2 *W_out)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    contact_ahead(slot, id, info, i, n, cp->slots);
#ifdef CONTACT_CACHE
    contact_ahead_geo(geo, info, i, n, cp->slots);
#endif
    const uint d_i = CONTACT_DEGREE(info[i]);
    if (d_i == 0u) return; /* a free sphere: no stage reads its iterate (contact_integrate) */
    const uint S = cp->slots, dims = cp->dims, id_i = id[i], g_i = contact_group(cp, group_start, id_i);
    __global uchar *blk = slot + (size_t)id_i * CONTACT_SLOT_BYTES(S);
    const float4 p0_i = contact_xyz(pos0[i]), v0_i = contact_xyz(v0[i]);
    const float m_i = pos0[i].w, r_i = v0[i].w, I_i = cp->inertia * m_i * r_i * r_i;
    const float4 w0 = contact_w_load(omega, id_i, dims);
#ifdef CONTACT_CACHE
    const uint n_i = CONTACT_COUNTED(info[i]), c_i = contact_count_pair(n_i, contact_tank_walls(p0_i, r_i, cp, geom_grid));
#endif
    float4 dv = (float4)(0.0f), dw = (float4)(0.0f);
    for (uint k = 0; k < min(d_i, S); ++k) {
        const uint3 sl = contact_slot_load(blk, k, S);
        const int kept = contact_slot_kept(sl.x, d_i, info, S);
        if (!kept) contact_slot_store(blk, k, S, (uint3)(sl.x, 0u, 0u));
#ifdef CONTACT_CACHE
        if (!kept && d_i > S) continue; /* the passes take its sphere contacts from the cell walk */
#else
        if (!kept) continue;
#endif
        int first;
        float2 mat;
        const contact_geo g =
            contact_slot_geo(sl.x, p0_i, v0_i, r_i, g_i, pos0, v0, id, group_start, material, cp, geom_grid, &first, &mat);
#ifdef CONTACT_CACHE
        {
            __global float4 *c = contact_geo_at(geo, i, k, S);
            c[0] = (float4)(g.n.x, g.n.y, g.n.z, g.s);
            c[1] = (float4)(g.t1.x, g.t1.y, g.t1.z, contact_target(g.u0_n, g.gap, mat.x, cp->v_rest, cp->dt));
            if (contact_is_wall(sl.x)) {
                c[2] = (float4)(g.v_w.x, g.v_w.y, g.v_w.z, mat.y);
            } else {
                const uint j = sl.x & CONTACT_INDEX;
                const float4 p_j = pos0[j];
                const float w = contact_relax_pair(cp->omega_v, c_i, CONTACT_COUNTED(info[j]), contact_xyz(p_j),
                                                   v0[j].w, cp, geom_grid);
                c[2] = (float4)(g.q, kept ? w : -w, contact_pair_mass_n(first, m_i, p_j.w), mat.y);
            }
        }
        if (!kept) continue;
#endif
        const float4 P = contact_slot_impulse(&g, sl, mat.y, dims);
        dv += first ? P : -P; /* impulse sums, divided by m_i and I_i at the end */
        dw += (first ? g.a_a : g.a_b) * cross(g.n, P);
    }
    dv = dv / m_i;
    const float4 w = w0 - dw / I_i;
    V_out[i] = (float4)(v0_i.x + dv.x, v0_i.y + dv.y, v0_i.z + dv.z, w.z);
    if (dims == 3u) W_out[i] = (float2)(w.x, w.y);
}

/* One Jacobi pass of the impulses over the iterate (V_in, W_in). For each contact of sphere i,
 * from the pair's side: target normal velocity contact_target(u0_n) with the pair's e, relaxation
 * w = contact_relax(OMEGA_V, c_a, c_b) (the counted contacts), and the update of contact_update
 * (slotted pairs and walls: the accumulated impulse in i's slot, which only i reads and writes) or
 * contact_update_free.
 * Sphere i takes +dP (a) or -dP (b) on its velocity, and -(a_i / I_i) n x dP on its angular
 * velocity. A lone contact (w = 1, nothing carried) reaches its target, and the tangential
 * velocity at its contact point zero or the Coulomb bound, in the first pass: the impulse model
 * of a binary collision. A sphere with more contacts than slots finds its sphere contacts by the
 * cell walk (without state). */
__kernel void contact_resolve(CONTACT_STEP_ARGS, __global const float4 *V_in, __global const float2 *W_in,
                              __global float4 *V_out, __global float2 *W_out)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    contact_ahead(slot, id, info, i, n, cp->slots);
#ifdef CONTACT_CACHE
    contact_ahead_geo(geo, info, i, n, cp->slots);
#endif
    const uint info_i = info[i], d_i = CONTACT_DEGREE(info_i);
    if (d_i == 0u) return; /* a free sphere */
    const uint S = cp->slots, dims = cp->dims, id_i = id[i], g_i = contact_group(cp, group_start, id_i);
    __global uchar *blk = slot + (size_t)id_i * CONTACT_SLOT_BYTES(S);
    const float4 p0_i = contact_xyz(pos0[i]), v0_i = contact_xyz(v0[i]), V_i = V_in[i];
    const float2 W_i = dims == 3u ? W_in[i] : (float2)(0.0f);
    const float4 v_i = (float4)(V_i.x, V_i.y, V_i.z, 0.0f), w_i = contact_w_of(V_i, W_i, dims);
    const float m_i = pos0[i].w, r_i = v0[i].w, k_I = cp->inertia, I_i = k_I * m_i * r_i * r_i;
    const float v_rest = cp->v_rest;
    const uint n_i = CONTACT_COUNTED(info_i), t_i = contact_tank_walls(p0_i, r_i, cp, geom_grid),
               c_i = contact_count_pair(n_i, t_i);
    float4 dv = (float4)(0.0f), dw = (float4)(0.0f);
    for (uint k = 0; k < min(d_i, S); ++k) {
        uint3 sl = contact_slot_load(blk, k, S);
        const uint code = contact_code(sl);
        const int wall = contact_is_wall(code);
        if (!wall && d_i > S) break; /* the sphere contacts come from the cell walk below */
#ifdef CONTACT_CACHE
        /* the geometry, target, friction and a pair's effective mass and relaxation as the warm
         * start stored them (contact_geo_at) */
        __global const float4 *c = contact_geo_at(geo, i, k, S);
        const int first = wall || (code & CONTACT_FIRST) != 0u;
        const float r_j = wall ? 0.0f : v0[code & CONTACT_INDEX].w;
        const contact_geo g = contact_geo_cached(c, wall, first ? r_i : r_j, first ? r_j : r_i, dims);
        const float4 C = c[2];
        const float target = c[1].w, mu = C.w, m_n = C.z, w = fabs(C.y);
        const int kept = C.y > 0.0f;
#else
        int first;
        float2 mat;
        const contact_geo g =
            contact_slot_geo(code, p0_i, v0_i, r_i, g_i, pos0, v0, id, group_start, material, cp, geom_grid, &first, &mat);
        const float target = contact_target(g.u0_n, g.gap, mat.x, v_rest, cp->dt), mu = mat.y;
        float m_n = m_i, w = 0.0f;
        int kept = 1;
        if (!wall) { /* a pair: solved with state when the partner has at most S contacts too */
            const uint j = code & CONTACT_INDEX, info_j = info[j];
            const float4 p_j = pos0[j];
            m_n = contact_pair_mass_n(first, m_i, p_j.w);
            w = contact_relax_pair(cp->omega_v, c_i, CONTACT_COUNTED(info_j), contact_xyz(p_j), v0[j].w, cp, geom_grid);
            kept = CONTACT_DEGREE(info_j) <= S;
        }
#endif
        float4 dP;
        if (wall) { /* the contact point's velocity relative to the wall's */
            const float4 u = v_i - g.v_w - cross(g.a_a * w_i, g.n);
            dP = contact_update(&g, u, target, m_i, contact_mass_t(&g, m_i, k_I), mu,
                                contact_relax(cp->omega_v, contact_count_wall(n_i, t_i, code - CONTACT_WALL), 1u),
                                dims, &sl);
            contact_slot_store(blk, k, S, sl);
        } else {
            const uint j = code & CONTACT_INDEX;
            const float4 V_j = V_in[j];
            const float2 W_j = dims == 3u ? W_in[j] : (float2)(0.0f);
            const float4 v_j = (float4)(V_j.x, V_j.y, V_j.z, 0.0f), w_j = contact_w_of(V_j, W_j, dims);
            const float4 u = first ? contact_u(&g, v_i, v_j, w_i, w_j) : contact_u(&g, v_j, v_i, w_j, w_i);
            const float m_t = contact_mass_t(&g, m_n, k_I);
            if (kept) {
                dP = contact_update(&g, u, target, m_n, m_t, mu, w, dims, &sl);
                contact_slot_store(blk, k, S, sl);
            } else {
                dP = contact_update_free(&g, u, target, m_n, m_t, mu, w);
            }
        }
        dv += first ? dP : -dP;
        dw += (first ? g.a_a : g.a_b) * cross(g.n, dP);
    }
    if (d_i > S) {
        NEIGHBOURS_BEGIN(gp, cell_start, cell_end, p0_i, j)
        if (j == i) continue;
        const float4 p0_j = contact_xyz(pos0[j]);
        const float r_j = v0[j].w;
        if (!contact_near(p0_i, p0_j, r_i + r_j)) continue;
        const uint c_j = CONTACT_COUNTED(info[j]), g_j = cp->uniform ? 0u : contact_group(cp, group_start, id[j]);
        const int first = id_i < id[j];
        const float4 v0_j = contact_xyz(v0[j]), V_j = V_in[j];
        const float2 W_j = dims == 3u ? W_in[j] : (float2)(0.0f);
        const float4 v_j = (float4)(V_j.x, V_j.y, V_j.z, 0.0f), w_j = contact_w_of(V_j, W_j, dims);
        const float m_j = pos0[j].w;
        const contact_geo g = first ? contact_pair_geo(p0_i, p0_j, v0_i, v0_j, r_i, r_j, cp)
                                    : contact_pair_geo(p0_j, p0_i, v0_j, v0_i, r_j, r_i, cp);
        const float4 u = first ? contact_u(&g, v_i, v_j, w_i, w_j) : contact_u(&g, v_j, v_i, w_j, w_i);
        const float2 mat = first ? contact_material(cp, material, g_i, g_j) : contact_material(cp, material, g_j, g_i);
        const float m_n = contact_pair_mass_n(first, m_i, m_j);
        const float m_t = contact_mass_t(&g, m_n, k_I);
        const float w = contact_relax_pair(cp->omega_v, c_i, c_j, p0_j, r_j, cp, geom_grid);
        const float target = contact_target(g.u0_n, g.gap, mat.x, v_rest, cp->dt);
        const float4 dP = contact_update_free(&g, u, target, m_n, m_t, mat.y, w);
        dv += first ? dP : -dP;
        dw += (first ? g.a_a : g.a_b) * cross(g.n, dP);
        NEIGHBOURS_END
    }
    dv = dv / m_i;
    const float4 wn = w_i - dw / I_i;
    V_out[i] = (float4)(v_i.x + dv.x, v_i.y + dv.y, v_i.z + dv.z, wn.z);
    if (dims == 3u) W_out[i] = (float2)(wn.x, wn.y);
}

/* The positions the step's impulses imply: a contact's impulse P acted s before the step start
 * (at its touch; a lasting contact at the start of the last drift), so the centre would be
 * x0 + P s / m further along: x = x0 + sum_c (+-P_c) s_c / m_i over the contacts with state. A
 * lone pair thus sits where the event-driven collision puts it. */
__kernel void contact_displace(CONTACT_STEP_ARGS, __global float4 *x_out)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    contact_ahead(slot, id, info, i, n, cp->slots);
#ifdef CONTACT_CACHE
    contact_ahead_geo(geo, info, i, n, cp->slots);
#endif
    const uint d_i = CONTACT_DEGREE(info[i]);
    if (d_i == 0u) return; /* a free sphere */
    const uint S = cp->slots, dims = cp->dims, id_i = id[i], g_i = contact_group(cp, group_start, id_i);
    __global uchar *blk = slot + (size_t)id_i * CONTACT_SLOT_BYTES(S);
    const float4 p0_i = contact_xyz(pos0[i]), v0_i = contact_xyz(v0[i]);
    const float m_i = pos0[i].w, r_i = v0[i].w;
    float4 dx = (float4)(0.0f);
    for (uint k = 0; k < min(d_i, S); ++k) {
        const uint3 sl = contact_slot_load(blk, k, S);
        if (!contact_slot_kept(sl.x, d_i, info, S)) continue;
#ifdef CONTACT_CACHE
        __global const float4 *c = contact_geo_at(geo, i, k, S);
        const int first = contact_is_wall(sl.x) || (sl.x & CONTACT_FIRST) != 0u;
        const contact_geo g = contact_geo_cached(c, 1, 0.0f, 0.0f, dims); /* n, t1, t2, s */
        const float2 mat = (float2)(0.0f, c[2].w);
#else
        int first;
        float2 mat;
        const contact_geo g =
            contact_slot_geo(sl.x, p0_i, v0_i, r_i, g_i, pos0, v0, id, group_start, material, cp, geom_grid, &first, &mat);
#endif
        const float4 P = contact_slot_impulse(&g, sl, mat.y, dims);
        dx += g.s * (first ? P : -P);
    }
    dx = dx / m_i;
    x_out[i] = (float4)(p0_i.x + dx.x, p0_i.y + dx.y, p0_i.z + dx.z, 0.0f);
}

/* One wall axis of a projection pass, the centre planes at lo and hi (tank wall + r): a centre
 * beyond a plane is put on it; a tank narrower than the sphere keeps it centred. */
inline float contact_wall_clamp(float lo, float hi, float x)
{
    if (lo > hi) return 0.5f * (lo + hi);
    return min(max(x, lo), hi);
}

/* One Jacobi pass of overlap removal over the iterate x_in (positions only: velocities, and so
 * momentum and energy, are untouched). For every pair listed at the step start (touching or
 * near) that overlaps in x_in, x_i += w_x delta_ij m_j / (m_i + m_j) n_ij with n_ij, delta_ij
 * from x_in and w_x = contact_relax(OMEGA_X, c_i, c_j) (the counted contacts; a lone pair: each
 * sphere moves its mass-weighted share of the overlap); then the walls. */
__kernel void contact_project(const uint n, const uint stride, __constant grid_params *gp,
                              __constant contact_params *cp, __global const uint *cell_start,
                              __global const uint *cell_end, __global const float4 *pos0,
                              __global const float4 *v0, __global const uint *id, __global const uchar *info,
                              __global const uchar *slot, __global const float *geom_grid, __global const float4 *x_in,
                              __global float4 *x_out)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    contact_ahead(slot, id, info, i, n, cp->slots);
    const uint S = cp->slots, id_i = id[i], d_i = CONTACT_DEGREE(info[i]), n_i = CONTACT_COUNTED(info[i]);
    if (d_i == 0u) return; /* a free sphere: inside the walls, no overlap to remove */
    __global const uchar *blk = slot + (size_t)id_i * CONTACT_SLOT_BYTES(S);
    const float4 x_i = x_in[i];
    const float m_i = pos0[i].w, r_i = v0[i].w;
    float4 dx_sum = (float4)(0.0f);
    if (d_i <= S) {
        for (uint k = 0; k < d_i; ++k) {
            const uint code = contact_slot_code(blk, k);
            if (contact_is_wall(code)) continue;
            const uint j = code & CONTACT_INDEX;
            const float r_sum = r_i + v0[j].w;
            const float4 dx = x_i - x_in[j];
            const float r2 = dot(dx, dx);
            if (r2 >= r_sum * r_sum) continue;
            const float dist = sqrt(r2);
            const float4 n_ij =
                dist > 0.0f ? dx / dist : (float4)((code & CONTACT_FIRST) ? 1.0f : -1.0f, 0.0f, 0.0f, 0.0f);
            const float m_j = pos0[j].w;
            const float w_x = contact_relax(cp->omega_x, n_i, CONTACT_COUNTED(info[j])) * (m_j / (m_i + m_j));
            dx_sum += ((r_sum - dist) * w_x) * n_ij;
        }
    } else {
        const float4 p0_i = contact_xyz(pos0[i]);
        NEIGHBOURS_BEGIN(gp, cell_start, cell_end, p0_i, j)
        if (j == i) continue;
        const float r_sum = r_i + v0[j].w;
        if (!contact_near(p0_i, contact_xyz(pos0[j]), r_sum)) continue;
        const float4 dx = x_i - x_in[j];
        const float r2 = dot(dx, dx);
        if (r2 >= r_sum * r_sum) continue;
        const float dist = sqrt(r2);
        const float4 n_ij = dist > 0.0f ? dx / dist : (float4)(id_i < id[j] ? 1.0f : -1.0f, 0.0f, 0.0f, 0.0f);
        const float m_j = pos0[j].w;
        const float w_x = contact_relax(cp->omega_x, n_i, CONTACT_COUNTED(info[j])) * (m_j / (m_i + m_j));
        dx_sum += ((r_sum - dist) * w_x) * n_ij;
        NEIGHBOURS_END
    }
    float4 x = x_i + dx_sum;
#ifdef MOTION
    /* a moving tank: its faces where it is at the step's start, in its rest frame */
    __global const motion_body *tank = CONTACT_BODY(cp, geom_grid, 0u);
    const int tank_moves = cp->moving & 1u;
    const float4 x_w = x;
    if (tank_moves) x = (float4)(motion_to_body(tank, x.xyz), 0.0f);
#endif
    const float px = contact_wall_clamp(cp->tank_min[0] + r_i, cp->tank_max[0] - r_i, x.x);
    const float py = contact_wall_clamp(cp->tank_min[1] + r_i, cp->tank_max[1] - r_i, x.y);
    const float pz = cp->dims == 3u ? contact_wall_clamp(cp->tank_min[2] + r_i, cp->tank_max[2] - r_i, x.z) : x.z;
    float4 xo = (float4)(px, py, pz, 0.0f);
#ifdef MOTION
    if (tank_moves) xo = px != x.x || py != x.y || pz != x.z ? (float4)(motion_place(tank, xo.xyz), 0.0f) : x_w;
#endif
    /* the objects: a centre closer than r to a surface moves out along its normal, and out of
     * the object's second and third surfaces (contact_object_next) too when the step's list
     * holds them (their slots: bit k GEOM_MAX_OBJECTS + o for surface k of object o; the walls
     * come first); a moving object where it is at the step's start */
    uint more = 0u;
    for (uint k = 0; k < min(d_i, S) && cp->n_objects > 0u; ++k) {
        const uint code = contact_slot_code(blk, k);
        if (!contact_is_wall(code)) break;
        if (code - CONTACT_WALL >= CONTACT_OBJECT_FACE2) more |= 1u << (code - CONTACT_WALL - CONTACT_OBJECT_FACE2);
    }
    for (uint o = 0; o < cp->n_objects; ++o) {
        float4 n1, n2 = (float4)(0.0f), n3;
        const float phi = contact_object_sdf(o, xo, cp, geom_grid, &n1);
        if (!(phi < r_i)) continue;
        const float h2 = (more >> o) & 1u ? contact_object_next(o, xo, r_i, n1, n2, cp, geom_grid, &n2) : INFINITY;
        const float h3 = h2 < INFINITY && ((more >> (GEOM_MAX_OBJECTS + o)) & 1u)
                             ? contact_object_next(o, xo, r_i, n1, n2, cp, geom_grid, &n3)
                             : INFINITY;
        xo += (r_i - phi) * n1;
        if (h2 < r_i) xo += (r_i - h2) * n2;
        if (h3 < r_i) xo += (r_i - h3) * n3;
    }
    x_out[i] = xo;
}

/* The angular velocity of the last impulse pass's iterate (V, W) stored at the sphere's id (no
 * torque but the contacts'), so that the iterate's buffers are free for the positions. A free
 * sphere (no contact: the other stages skip it) keeps its own. */
__kernel void contact_spin(const uint n, const uint stride, __constant contact_params *cp,
                           __global const uchar *info, __global const float4 *V_in, __global const float2 *W_in,
                           __global const uint *id, __global float *omega)
{
    const uint i = spread_item(stride);
    if (i >= n || CONTACT_DEGREE(info[i]) == 0u) return;
    const float4 V = V_in[i];
    if (cp->dims == 3u) {
        const float2 W = W_in[i];
        vstore3((float3)(W.x, W.y, V.w), id[i], omega);
    } else {
        omega[id[i]] = V.w;
    }
}

/* End of the step, symplectic Euler: v' = v + g dt, x' = x + v' dt; the angular velocity is the
 * one at the sphere's id (contact_spin). A free sphere moves from (pos0, v0). Flags NaN/Inf
 * (FLAG_NONFINITE) and speeds over the scene limit (FLAG_RUNAWAY) in `flags` (may be NULL).
 * x_in and V_in may be pos_next or vel_next: each work-item reads its own entries before
 * writing them. */
__kernel void contact_integrate(const uint n, const uint stride, __constant contact_params *cp,
                                __global const float4 *pos0, __global const float4 *v0, __global const uchar *info,
                                __global const float4 *x_in, __global const float4 *V_in, __global const uint *id,
                                __global const float *omega, __global float4 *pos_next, __global float4 *vel_next,
                                __global uint *flags)
{
    const uint i = spread_item(stride);
    if (i >= n) return;
    const float dt = cp->dt;
    const int free = CONTACT_DEGREE(info[i]) == 0u;
    const float4 V = free ? v0[i] : V_in[i], x_i = free ? pos0[i] : x_in[i];
    const float4 g = (float4)(cp->gravity[0], cp->gravity[1], cp->gravity[2], 0.0f);
    const float4 v = (float4)(V.x, V.y, V.z, 0.0f) + g * dt;
    const float4 x = (float4)(x_i.x, x_i.y, x_i.z, 0.0f) + v * dt;
    pos_next[i] = (float4)(x.x, x.y, x.z, pos0[i].w); /* the mass rides on */
    vel_next[i] = (float4)(v.x, v.y, v.z, v0[i].w); /* the radius rides on */
    const float4 w = contact_w_load(omega, id[i], cp->dims);
    if (flags) {
        const int finite = isfinite(x.x) && isfinite(x.y) && isfinite(x.z) && isfinite(v.x) && isfinite(v.y) &&
                           isfinite(v.z) && isfinite(w.x) && isfinite(w.y) && isfinite(w.z);
        if (!finite) atomic_or(flags, FLAG_NONFINITE);
        else if (cp->max_speed2 > 0.0f && dot(v, v) > cp->max_speed2) atomic_or(flags, FLAG_RUNAWAY);
    }
}

/* Touching pairs: for particle i, the partners j > i (sorted index) with |x_i - x_j| < r_i + r_j.
 * count[i] gets their number; when max_per > 0 the first max_per of them, in scan order, go
 * to partner[i * max_per ...] (the count is never truncated, so the host sees an overflow).
 * Every touching pair is within 2 r_max <= gp->radius, hence inside the scanned block. */
__kernel void contact_pairs(const uint n, __constant grid_params *gp, __global const uint *cell_start,
                            __global const uint *cell_end, __global const float4 *pos, __global const float4 *vel,
                            const uint max_per, __global uint *count, __global uint *partner)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const float4 x_i = contact_xyz(pos[i]);
    const float r_i = vel[i].w;
    uint k = 0;
    NEIGHBOURS_BEGIN(gp, cell_start, cell_end, x_i, j)
    if (j <= i) continue;
    const float4 dx = x_i - contact_xyz(pos[j]); /* dx = x_i - x_j */
    const float r_sum = r_i + vel[j].w;
    if (dot(dx, dx) >= r_sum * r_sum) continue;
    if (k < max_per) partner[(size_t)i * max_per + k] = j;
    ++k;
    NEIGHBOURS_END
    count[i] = k;
}

/* Angular velocities (rad/s) in sorted order, 3 floats per sphere (2D: 0, 0, w_z). */
__kernel void contact_omega_out(const uint n, __constant contact_params *cp, __global const uint *id,
                                __global const float *omega, __global float *out)
{
    const uint i = get_global_id(0);
    if (i >= n) return;
    const float4 w = contact_w_load(omega, id[i], cp->dims);
    vstore3((float3)(w.x, w.y, w.z), i, out);
}
