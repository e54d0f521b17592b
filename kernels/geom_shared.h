/* geom_shared.h: the scene's solid objects (obstacles and a shaped container) as the kernels
 * see them, shared by host and kernels. src/geometry.c fills them from the scene (geom_pack);
 * the solver parameters (sph_params, contact_params) carry up to GEOM_MAX_OBJECTS of them in
 * __constant memory. Only 4-byte scalars, so the layout is the same on both sides.
 *
 * Every object is described in its own frame: a point x of the world is y = R^T (x - origin)
 * in the object's frame (rot holds R row by row; its columns are the object's axes in the
 * world). The signed distance phi (m) of an object is negative inside its solid and positive in
 * the free space where fluid and spheres live: for an obstacle the distance to the shape, for a
 * container its negative. Its gradient, the unit normal into the free space, is what the wall
 * guards push along (kernels/geom.h; docs/physics.md, "Objects"). */
#ifndef SPHSIM_GEOM_SHARED_H
#define SPHSIM_GEOM_SHARED_H

#include "shared.h"

#define GEOM_MAX_OBJECTS 8

/* Shapes (geom_object.shape). In 2D a rectangle is a box and a circle a sphere (z = 0). */
#define GEOM_BOX 0u      /* half extents ext[0..2] about the origin */
#define GEOM_SPHERE 1u   /* radius ext[0] */
#define GEOM_CYLINDER 2u /* radius ext[0], half length ext[1], axis along the frame's z */
/* GEOM_MESH: a closed triangle mesh, its signed distance sampled on a grid (grid_*) and
 * interpolated trilinearly; GEOM_POLYGON (2D): a simple polygon, its grid_n[0] vertices (x, y)
 * at geom_grid[grid_offset ...], its distance exact. Both in the world's frame. */
#define GEOM_MESH 3u
#define GEOM_POLYGON 4u

typedef struct geom_object {
    float rot[9];    /* R, row-major: the object's axes in world coordinates are R's columns */
    float origin[3]; /* m: the frame's origin in the world (the shape's centre) */
    float ext[3];    /* m: the shape's sizes (see the shapes above); 2D boxes: ext[2] huge */
    float sign;      /* +1 obstacle (solid inside the shape), -1 container (solid outside) */
    dev_u32 shape;   /* GEOM_* */
    /* GEOM_MESH: nodes origin + (i, j, k) cell, i < grid_n[0] ..., at geom_grid[grid_offset +
     * i + grid_n[0] (j + grid_n[1] k)]; beyond the grid phi is band plus the distance to it */
    float grid_origin[3]; /* m */
    float grid_cell;      /* m */
    dev_u32 grid_n[3];
    dev_u32 grid_offset;
    float grid_band; /* m: the largest |phi| the grid holds */
    dev_u32 pad[2];
} geom_object;

#endif
