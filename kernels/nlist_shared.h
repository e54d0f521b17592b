/* nlist_shared.h: the neighbour lists' parameters and device state, shared by host (src/nlist.c)
 * and kernels (kernels/nlist.cl, nlist_loop.h, nlist_build.h). docs/grid.md, "Neighbour lists",
 * explains every field. */
#ifndef SPHSIM_NLIST_SHARED_H
#define SPHSIM_NLIST_SHARED_H

#include "shared.h"

/* Levels of the adaptive list skin: level k lists use skin_k = grid.skin / 2^k. */
#define NLIST_SKIN_LEVELS 4

/* The lists may be split over this many buffers, by particle (nlist_parts). */
#define NLIST_MAX_PARTS 4

/* Bits of nlist_state.go, the step's decision: */
#define GO_REBUILD 1u /* this step rebuilds the grid and the lists (else it keeps them) */
#define GO_CHECK 4u   /* undecided until the relative-motion check (nlist_check) has run */

/* Bits of nlist_state.need, set by the SPH forces stage: a fluid particle moved more than
 * skin_k / 2 (NEED_SOFT: the lists may still hold, the relative-motion check decides) or at
 * least min(2 skin_k, 1/2 + skin_0) (skin_0 while some particle walks; NEED_HARD: they must be
 * rebuilt) from where the lists were built. */
#define NEED_HARD 1u
#define NEED_SOFT 2u

/* Bits of the per-cell flags (nlist_cell_fluid): the cell holds fluid, a wall particle. */
#define CELL_FLUID 1u
#define CELL_WALL 2u

/* The lists' state on the device, one record written by the kernels (nlist_go, the list build,
 * the check, the SPH forces stage) and read by the host a few words at a time. Fields marked
 * "float bits" hold a float's bits, so that atomic_max on them orders non-negative floats. */
typedef struct nlist_state {
    dev_u32 go;             /* GO_REBUILD | GO_CHECK: this step's decision (nlist_go) */
    dev_u32 need;           /* NEED_* bits of the last step (OR-ed by the forces stage) */
    dev_u32 rebuilds;       /* rebuilds so far */
    dev_u32 age;            /* steps the current lists have been kept */
    dev_u32 level;          /* skin level k of the current lists */
    dev_u32 walkers;        /* particles over list_cap at the last build (the _walk kernels' work) */
    dev_u32 bound;          /* float bits, m: bound B on the relative motion since the build of any
                               two fluid particles in cells of the kept grid at most two apart
                               (+inf: none known) */
    dev_u32 filter;         /* float bits, m^2: the step's displacement filter F */
    dev_u32 step_max;       /* float bits, m^2: the step's largest squared displacement above F */
    dev_u32 checks;         /* relative-motion checks run */
    dev_u32 checks_skipped; /* checks skipped for the carried bound */
    dev_u32 check_max;      /* float bits, m: the last check's maximum (nlist_check) */
} nlist_state;

/* The words of nlist_state that a step's decision takes (go .. walkers), which the host reads. */
#define NLIST_DECISION_WORDS 6

typedef struct nlist_params {
    /* per skin level k, with R the kernel support and skin_k = skin / 2^k: */
    float list_radius2[NLIST_SKIN_LEVELS];      /* m^2: (R (1 + skin_k))^2, the lists' radius */
    float wall_radius2[NLIST_SKIN_LEVELS];      /* m^2: (R (1 + ws_k))^2, the radius of fluid-wall
                                              entries, ws_k = min(2 skin_k, 1/2 + skin) */
    float skin_half2[NLIST_SKIN_LEVELS];        /* m^2: (R skin_k / 2)^2: a move this far makes the next
                                              step check the relative motion (NEED_SOFT) */
    float skin2[NLIST_SKIN_LEVELS];             /* m^2: (0.999 R ws_k)^2: a move this far rebuilds (NEED_HARD) */
    float skin_rel[NLIST_SKIN_LEVELS];          /* m: 0.999 R skin_k, the bound on the relative motion
                                              that keeps the lists */
    dev_u32 skin_shrink_age[NLIST_SKIN_LEVELS]; /* lists kept this many steps: rebuild one level
                                                   down (0xffffffff: never) */
    dev_u32 skin_grow_age[NLIST_SKIN_LEVELS];   /* lists outgrown in fewer steps: one level up */
    float skin_walk2;                           /* m^2: (0.999 R skin_0)^2, NEED_HARD's limit while some
                                              particle is over list_cap (its walk covers skin_0) */
    float tank_min[3], tank_max[3];             /* m: the tank box (z = 0 in 2D) */
    dev_u32 walls_outside;                      /* 1: every wall particle lies outside the tank box, so
                                              fluid farther than the wall radius from every face
                                              has no wall within it */
    dev_u32 list_cap;                           /* entries per particle; more fall back to the cell walk */
    dev_u32 list_part_n;                        /* particles per list buffer (nlist_parts) */
    dev_u32 dims;                               /* 2 or 3 */
} nlist_params;

#endif
