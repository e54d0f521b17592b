/* nlist_build.h: the list build of one particle, shared by the list program's nlist_build
 * (kernels/nlist.cl: the lists alone, on GPUs) and the SPH density program's sph_density (the
 * lists and, on the same walk, the density: -DNLIST_BUILD_DENSITY, on CPUs). Both write the same
 * lists; the fused density is the same sum to the bit as a density read from the lists.
 *
 * In a step whose decision rebuilds (nlist_state.go has GO_REBUILD), particle i's list gets, in
 * walk order (layout in nlist_loop.h), every particle within the list radius of level k
 * (nlist_state.level): a fluid particle lists the fluid within list_radius = R (1 + skin_k) and
 * the walls within the wider wall_radius = R (1 + ws_k) (so that fluid sliding along a wall keeps
 * its lists twice as far, docs/grid.md); a wall lists only the fluid within wall_radius (the wall
 * pressure, the only loop over a wall, skips the others, and most walls, away from the fluid,
 * get empty lists). With use_cf a wall skips the cells that cell_fluid marks as holding no fluid
 * (nlist_cell_fluid), most of its candidates. wall_radius may exceed the cells (at least
 * R (1 + skin_0) wide): the walk then takes the cells of the wider block, up to two either side,
 * after the usual 3^d block, for the walls (fluid i; only near a tank face when every wall is
 * outside the tank) or the fluid (wall i) within wall_radius there, skipping with use_cf the cells
 * without any. Those cells hold nothing within list_radius (<= the cell size) of i, so no density
 * term. Nobody lists itself: the density adds its self term first (SPH_SELF_RHO_), one entry
 * fewer for every loop to read. */
#ifndef SPHSIM_NLIST_BUILD_H
#define SPHSIM_NLIST_BUILD_H

#include "nlist_loop.h"

/* Particle j (squared distance r2) goes into the list being built, at entry c */
#define NLIST_PUT_(j)                                                                                                  \
    {                                                                                                                  \
        if (c < cap) {                                                                                                 \
            NLIST_STORE_(j)                                                                                            \
        }                                                                                                              \
        ++c;                                                                                                           \
    }
#if NLIST_PACK == 4
/* q collects four entries, then goes out in one 16-byte store */
#define NLIST_STORE_(j)                                                                                                \
    q = (uint4)(q.yzw, (j));                                                                                           \
    if ((c & 3u) == 3u) {                                                                                              \
        *out = q;                                                                                                      \
        out += stride;                                                                                                 \
    }
#else
#define NLIST_STORE_(j)                                                                                                \
    *out = (j);                                                                                                        \
    out += stride;
#endif
/* Whether candidate j at r2 goes into particle i's list (reach2: wall_radius2, or list_radius2
 * for fluid that no wall can reach): fluid i lists fluid within radius2 and walls within reach2,
 * a wall lists fluid within reach2; nobody lists itself */
#define NLIST_TAKES_(j, r2)                                                                                            \
    ((r2) < reach2 && (j) != i && (fluid_i ? (r2) < radius2 || type[j] != PTYPE_FLUID : type[j] == PTYPE_FLUID))

/* Cells e0 .. e1 along one axis of the box of half-width rw around coordinate x, widened to
 * the 3^d block's b0 .. b1 (grid_cell_coord clamps both ends into the grid) */
inline int2 nlist_ring_axis(float x, float rw, float origin, float cell_inv, uint ncell, int b0, int b1)
{
    return (int2)(min(b0, grid_cell_coord(x - rw, origin, cell_inv, ncell)),
                  max(b1, grid_cell_coord(x + rw, origin, cell_inv, ncell)));
}

/* The list of particle i at x_i (fluid_i: a fluid particle), its length, the position it was
 * built at, and with -DNLIST_BUILD_DENSITY the density sum over j within the support on the same
 * walk (it visits the same j in the same order as the list loop would; 0 without). */
inline float nlist_build_one(const uint n, const uint i, const float4 x_i, const int fluid_i,
                             __global const float4 *pos, __global const uchar *type, __global const uint *cell_start,
                             __global const uint *cell_end, __constant const grid_params *gp,
                             __global const uchar *cell_fluid, const uint use_cf, NLIST_BUILD_ARGS
#ifdef NLIST_BUILD_DENSITY
                             ,
                             __constant const sph_params *P
#endif
)
{
    const int skip_dry = !fluid_i && use_cf; /* a wall particle lists fluid only */
    const uint level = nl_state->level;
    const float radius2 = NP->list_radius2[level], wall_radius2 = NP->wall_radius2[level];
    const float rw = sqrt(wall_radius2) * 1.0001f; /* a margin for the rounding of cell bounds */
    /* fluid i near a wall: within wall_radius of a tank face, or anywhere if some wall is inside */
    int near_wall = !fluid_i || !NP->walls_outside;
    for (uint a = 0u; a < NP->dims && !near_wall; ++a) {
        const float xa = a == 0u ? x_i.x : a == 1u ? x_i.y : x_i.z;
        near_wall = xa - NP->tank_min[a] < rw || NP->tank_max[a] - xa < rw;
    }
    const float reach2 = near_wall ? wall_radius2 : radius2;
    const uint cap = NP->list_cap;
    NLIST_ROW(NLIST_OUT *, i, out, stride) /* particle i's first entry, and the step to the next */
#if NLIST_PACK == 4
    uint4 q = (uint4)(0u);
#endif
    uint c = 0u;
#ifdef NLIST_BUILD_DENSITY
    const float support2 = P->support2;
    float rho_i = fluid_i ? SPH_SELF_RHO_(x_i, P) : 0.0f;
#else
    const float rho_i = 0.0f;
#endif
    NEIGHBOURS_CELLS_BEGIN(gp, cell_start, cell_end, x_i, j0, j1)
    if (skip_dry && (cell_fluid[NEIGHBOURS_CELL] & CELL_FLUID) == 0u) continue;
    for (uint j = j0; j < j1; ++j) {
        const float4 x_j = pos[j]; /* (x_j, m_j) */
        float4 dx = x_i - x_j;
        dx.w = 0.0f;
        const float r2 = dot(dx, dx);
        if (!NLIST_TAKES_(j, r2)) continue;
        NLIST_PUT_(j)
#ifdef NLIST_BUILD_DENSITY
        if (r2 < support2) rho_i += x_j.w * sph_W(r2, P);
#endif
    }
    NEIGHBOURS_CELLS_END
    if (near_wall) { /* the cells within wall_radius beyond the 3^d block */
        NEIGHBOURS_BLOCK(gp, x_i, bx0, bx1, by0, by1, bz0, bz1)
        const float inv = gp->cell_size_inv;
        const int2 ex = nlist_ring_axis(x_i.x, rw, gp->origin[0], inv, gp->ncell[0], bx0, bx1);
        const int2 ey = nlist_ring_axis(x_i.y, rw, gp->origin[1], inv, gp->ncell[1], by0, by1);
        const int2 ez =
            gp->dims == 3 ? nlist_ring_axis(x_i.z, rw, gp->origin[2], inv, gp->ncell[2], bz0, bz1) : (int2)(0);
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
                        if (!NLIST_TAKES_(j, r2)) continue;
                        NLIST_PUT_(j)
                    }
                }
            }
    }
#if NLIST_PACK == 4
    const uint rest = min(c, cap) & 3u; /* entries still in q, at its end */
    if (rest == 1u) *out = (uint4)(q.w, 0u, 0u, 0u);
    else if (rest == 2u) *out = (uint4)(q.zw, 0u, 0u);
    else if (rest == 3u) *out = (uint4)(q.yzw, 0u);
#endif
    nl_count[i] = c;
    if (c > cap) atomic_inc(&nl_state->walkers); /* a particle the _walk kernels take */
    pos_ref[i] = x_i;
    return rho_i;
}

#endif
