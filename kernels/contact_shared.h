/* contact_shared.h: parameters of the hard-sphere contact solver, shared by host and kernels.
 * Filled once by contact_params_from_scene() and uploaded as a __constant buffer. Only 4-byte
 * scalars, so the layout is the same on both sides. Symbols and equations: docs/contacts.md. */
#ifndef SPHSIM_CONTACT_SHARED_H
#define SPHSIM_CONTACT_SHARED_H

#include "shared.h"
#include "geom_shared.h"

/* Contact slots per sphere: the state a contact carries through the passes of a step and into
 * the next step (warm start): its code (partner or wall), its normal impulse and its two
 * tangential impulse components, 11 bytes per slot, in one block of CONTACT_SLOT_BYTES per
 * sphere stored at the sphere's id (kernels/contacts.cl, contact_slot_load). A sphere with
 * more contacts than slots solves all of its sphere contacts without state (still correct, less
 * well converged; docs/contacts.md, "Memory"). Walls come first and always have a slot. */
#define CONTACT_SLOTS_2D 6
#define CONTACT_SLOTS_3D 8
#define CONTACT_SLOTS_MAX (CONTACT_SLOTS_3D > CONTACT_SLOTS_2D ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D)
/* Bytes of a sphere's block of S slots: 11 S, rounded up to whole words (88 in 3D, 68 in 2D). */
#define CONTACT_SLOT_BYTES(S) ((11u * (S) + 3u) & ~3u)
/* The geometry cache (tuning's contact_cache, kernels/contacts.cl contact_geo_at): 3 float4 per
 * slot of every sphere, in sorted order. */
#define CONTACT_CACHE_BYTES 48u

/* Jacobi relaxation of a pair with d_i, d_j contacts at the start of the step:
 * omega = min(1, OMEGA / max(d_i, d_j)); positions over-relaxed (the corrections of one sphere
 * sum to at most about twice the mean pair correction), impulses not. See docs/contacts.md. */
#define CONTACT_OMEGA_X 2.0f
#define CONTACT_OMEGA_V 1.0f

/* Near pairs: a pair is listed when its centres are closer than (1 + CONTACT_NEAR)(r_i + r_j),
 * a wall when the centre is closer than (1 + 2 CONTACT_NEAR) r, at the step's start; a listed
 * pair that does not touch yet keeps its gap g >= 0 through the step (u_n >= -g / dt) unless it
 * approaches faster than v_rest (an impact, resolved when it touches), and the position passes
 * see it. docs/contacts.md, "Near pairs". The grid's cells are (1 + CONTACT_NEAR) 2 r_max wide,
 * so that every near pair is in the scanned block. */
#define CONTACT_NEAR 0.01
/* The grid's search radius particle mode needs (host): the widest listed pair, m. */
#define CONTACT_SUPPORT(r_max) (2.0 * (r_max) * (1.0 + CONTACT_NEAR))

/* Slot codes (the first word of a slot, a uint): a partner sphere's sorted index of the step
 * that wrote the slot (bits 0-30), with CONTACT_FIRST set when this sphere has the lower id of
 * the pair (the pair's "a" sphere, whose side every pair quantity is computed from); a wall
 * CONTACT_WALL + face (face = 2 axis + side, side 0 the min wall; then the objects); CONTACT_NO_ID
 * an empty slot. Sphere indices stay below CONTACT_WALL (contact_create checks n). */
#define CONTACT_FIRST 0x80000000u
#define CONTACT_INDEX 0x7fffffffu
#define CONTACT_WALL 0x7fffffe0u
#define CONTACT_NO_ID 0x7fffffffu
#define CONTACT_OBJECT_FACE 6u /* face of object o's nearest surface: 6 + o (the tank has 6 faces) */
/* face of object o's second surface (a concave edge: contacts.cl, contact_object_next): 14 + o,
 * and in 3D of its third (a concave corner): 22 + o; below CONTACT_NO_ID - CONTACT_WALL = 31 */
#define CONTACT_OBJECT_FACE2 (CONTACT_OBJECT_FACE + GEOM_MAX_OBJECTS)
#define CONTACT_OBJECT_FACE3 (CONTACT_OBJECT_FACE + 2u * GEOM_MAX_OBJECTS)
/* The surfaces an object may give one sphere: 3 in 3D (a corner), 2 in 2D. */
#define CONTACT_OBJECT_SURFACES(dims) ((dims) == 3u ? 3u : 2u)
/* An object's next surface counts when its normal turns from each one found before by more
 * than about 26 degrees (the cosine between them below this). */
#define CONTACT_SECOND_COS 0.9f

/* The per-sphere info byte of a step: its listed contacts d (touching or near) and, of them,
 * the ones c the passes' relaxation counts (contacts.cl, contact_counts: touching, or near at a
 * normal speed of at most v_rest; the tank's faces only touching): d + 9 c while d <= 8 (below 81),
 * else 81 + min(c, 174) (CONTACT_DEGREE then reads 9: more than any S). A sphere without
 * contacts has info 0. (The sphere's group, its material table index, follows from its id:
 * contact_group.) */
#define CONTACT_INFO(d, c) ((d) <= 8u ? (d) + 9u * (c) : 81u + ((c) < 174u ? (c) : 174u))
#define CONTACT_DEGREE(info) ((info) < 81u ? (info) % 9u : 9u)
#define CONTACT_COUNTED(info) ((info) < 81u ? (info) / 9u : (info)-81u)

typedef struct contact_params {
    float gravity[3];       /* m/s^2 (z = 0 in 2D) */
    float dt;               /* s: time step */
    float tank_min[3];      /* m: tank walls (z = 0 in 2D) */
    float restitution;      /* e in [0, 1]: sphere-sphere contacts (uniform materials) */
    float tank_max[3];      /* m */
    float friction;         /* mu >= 0: Coulomb friction of sphere-sphere contacts (uniform materials) */
    float wall_restitution; /* e of sphere-wall contacts (uniform materials) */
    float wall_friction;    /* mu of sphere-wall contacts (uniform materials) */
    float max_speed2;       /* m^2/s^2: square of the runaway-speed limit (0 = no check) */
    float v_rest;           /* m/s: impact threshold 2 |g| dt; slower approaches are resting contacts */
    float omega_x;          /* CONTACT_OMEGA_X */
    float omega_v;          /* CONTACT_OMEGA_V */
    float inertia;          /* k of the moment of inertia I = k m r^2: 2/5 (solid sphere), 1/2 (disc) */
    dev_u32 slots;          /* contact slots per sphere: CONTACT_SLOTS_2D or _3D */
    dev_u32 dims;           /* 2 or 3 */
    dev_u32 n_groups;       /* sphere groups (materials: group_start, material) */
    dev_u32 uniform;        /* 1: every pair has (restitution, friction) and every wall contact
                               (wall_restitution, wall_friction); the tables are not read */
    dev_u32 n_objects;      /* the scene's solid objects; a sphere meets them as it meets a wall */
    dev_u32 moving;         /* bit b: body b moves (0 the tank, 1 + o object o; -DMOTION) */
    dev_u32 motion_offset;  /* floats into geom_grid where the bodies' motion_body records start (the
                               step's start, then its end; kernels/motion_shared.h) */
    dev_u32 pad_[1];
    geom_object objects[GEOM_MAX_OBJECTS]; /* their shapes (geom_shared.h) */
} contact_params;

#endif
