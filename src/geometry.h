/* geometry: the scene's solid objects on the host: their placement (scale, then rotation, then
 * translation), their signed distance in double (the same formulas as kernels/geom.h, which
 * the kernels evaluate in float), and their packing into the kernels' parameters. */
#ifndef SPHSIM_GEOMETRY_H
#define SPHSIM_GEOMETRY_H

#include "scene.h"

/* Fill o's derived frame (origin, rot, half) from its shape and transform (dims 2 or 3). */
void geom_place(scene_object *o, int dims);

/* The signed distance of primitive o's shape at x (m; negative inside the shape), and *n (may be
 * NULL) its unit gradient. */
double geom_sdf(const scene_object *o, int dims, const double x[3], double n[3]);

/* phi of object o at x (m; negative inside its solid: inside an obstacle's shape, outside a
 * container's) and *n (may be NULL) its unit gradient, the normal into the free space; meshes
 * interpolate the scene's grid (scene.geom_grid). */
double geom_sdf_grid(const scene_object *o, const float *grid, int dims, const double x[3], double n[3]);

/* The least phi over the scene's objects at x (+inf without objects); *which (may be NULL):
 * the index of that object (-1 without objects). */
double geom_phi(const scene *s, const double x[3], int *which);

/* A box [lo, hi] (m) around primitive, polygon or mesh o as placed (grid: where o's polygon
 * points are, scene.geom_grid or scene.region_grid). */
void geom_bounds(const scene_object *o, const float *grid, int dims, double lo[3], double hi[3]);

/* Whether x lies at least d (m) inside region r: inside its shape by d (its signed distance at
 * most -d) and within its vertical cut by d. Only the region itself: the solids are geom_phi's. */
int geom_region_holds(const scene *s, const scene_region *r, const double x[3], double d);

/* The scene's objects as the kernels take them (geom_shared.h); returns their count. */
unsigned geom_pack(const scene *s, geom_object out[GEOM_MAX_OBJECTS]);

#endif
