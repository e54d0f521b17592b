/* mesh: triangle meshes for the scene's objects: readers for STL (binary and ASCII) and
 * Wavefront OBJ, the checks a solid needs (closed, consistently oriented), and the signed
 * distance sampled on a grid, which the kernels interpolate (kernels/geom.h).
 *
 * The readers are small and written here: none of the libraries sphsim may use (OpenCL, cJSON,
 * HDF5, cmocka) reads meshes, and no well-kept C library for these formats is in that set. */
#ifndef SPHSIM_MESH_H
#define SPHSIM_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef struct mesh {
    size_t n_vert, n_tri;
    double *vert;  /* 3 per vertex (m) */
    uint32_t *tri; /* 3 vertex indices per triangle, counter-clockwise seen from outside */
} mesh;

/* Read `path` (STL binary or ASCII by content, OBJ by the extension .obj); vertices that STL
 * repeats per triangle are merged where their coordinates are equal. Errors (SPHSIM_E_SCENE)
 * start with `what` (the JSON path), e.g. "objects[1].file: cannot open 'x.stl': No such file
 * or directory". *hash: FNV-1a of the file's bytes (may be NULL). */
sphsim_status mesh_read(mesh *m, const char *path, const char *what, uint64_t *hash, sphsim_error *e);
void mesh_free(mesh *m);

/* FNV-1a (64 bits) of n bytes: the hash scene files keep of the files they read. */
uint64_t mesh_fnv1a(const unsigned char *p, size_t n);

/* Edges of m used by one triangle only or by more than two (open), and edges whose two
 * triangles run along them the same way (inconsistently oriented). */
void mesh_check(const mesh *m, long *open_edges, long *flipped_edges);

/* Signed volume (m^3; > 0 when the triangles face outwards). */
double mesh_volume(const mesh *m);

/* The signed distance of closed mesh m (negative inside) at the nodes of a grid of n[0] x n[1]
 * x n[2] points at origin + (i, j, k) cell, written to `out` (x fastest): the distance to the
 * nearest triangle within `band` of the surface (that triangle found by sweeps from the nodes
 * next to each triangle, Bridson's construction), +-band beyond; the sign from the parity of
 * crossings along x. 0, or -1 when
 * out of memory. */
int mesh_sdf_grid(const mesh *m, const double origin[3], double cell, const long n[3], double band, float *out);

/* Distance from p to triangle (a, b, c) (closest point, Ericson 2005, 5.1.5). */
double mesh_point_triangle(const double p[3], const double a[3], const double b[3], const double c[3]);

#endif
