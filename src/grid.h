/* grid: host side of the neighbour grid on the device.
 * A uniform grid over the tank with cell size = cell_ratio * search radius. Each particle's
 * cell coordinate floor((x - origin) / cell) (clamped into the grid; NaN and out-of-range
 * positions are flagged) is Morton (Z-order) encoded (32-bit keys while dims * bits fit, else
 * 64-bit); particles are sorted by key with a stable, deterministic radix sort on the device;
 * a cell table (indexed by the linear cell index cx + nx*(cy + ny*cz)) gives each cell's
 * [start, end) in the sorted arrays. Kernels iterate neighbours with kernels/neighbours.h. */
#ifndef SPHSIM_GRID_H
#define SPHSIM_GRID_H

#include "device.h"
#include "../kernels/grid_shared.h"

typedef struct grid grid;

/* Geometry of the grid for a tank [lo, hi] (metres; z ignored in 2D), search radius and
 * cell ratio. Fills everything in grid_params. Fails (SPHSIM_E_SCENE) if the grid would need
 * more than 2^21 cells per axis. */
sphsim_status grid_geometry(int dims, const double lo[3], const double hi[3], double radius, double cell_ratio,
                            grid_params *gp, sphsim_error *e);

/* Create the device grid for up to n_max particles. Builds its kernels. */
sphsim_status grid_create(grid **g, ocl_device *d, const grid_params *gp, size_t n_max, sphsim_error *e);
void grid_destroy(grid *g);

/* Enqueue: keys from `pos` (float4, n particles), sort, cell table. Never blocks the host.
 * `flags` (one uint, may be NULL) gets FLAG_OUTSIDE / FLAG_NONFINITE OR-ed in. */
sphsim_status grid_build(grid *g, cl_mem pos, size_t n, cl_mem flags, sphsim_error *e);

/* grid_build that first asks whether the new keys are in order already (each at most the
 * next: the stable sort would leave every particle where it is) and then skips the sort: *kept
 * = 1, the cell table is built on the keys as they are, grid_index() is NULL (the identity) and
 * grid_gather fails; the caller keeps its arrays' order. Else *kept = 0 and it is grid_build.
 * Blocks the host for one word after the keys (docs/grid.md, "Kept order"). */
sphsim_status grid_build_keep(grid *g, cl_mem pos, size_t n, cl_mem flags, int *kept, sphsim_error *e);

/* Enqueue dst[i] = src[idx[i]] for i < n, elements of `elem_size` bytes (1, 2, 4, 8 or 16);
 * dst must not be src. */
sphsim_status grid_gather(grid *g, cl_mem src, cl_mem dst, size_t elem_size, size_t n, sphsim_error *e);
/* Device buffers after grid_build: permutation (uint, sorted slot -> old slot; NULL after a
 * grid_build_keep that kept the order), sorted keys
 * (uint or ulong), cell_start / cell_end (uint, n_cells each; empty cells have start == end),
 * and the grid_params as a __constant buffer. */
cl_mem grid_index(const grid *g);
cl_mem grid_keys(const grid *g);
cl_mem grid_cell_start(const grid *g);
cl_mem grid_cell_end(const grid *g);
cl_mem grid_params_buffer(const grid *g);
const grid_params *grid_get_params(const grid *g);
/* The buffer behind grid_index() and grid_keys() (*bytes: its size, at least 16 bytes per
 * particle): scratch for others once they have read the index and the keys of the last
 * grid_build (both are lost then) until the next grid_build (the contact solver: docs/contacts.md,
 * "Memory"). */
cl_mem grid_scratch(const grid *g, size_t *bytes);

/* Statistics of the current grid; `pos` holds the positions in sorted order (gathered through
 * grid_index() after grid_build, as the solvers read them): mean number of
 * particles within the search radius (self included) and mean candidates scanned per query,
 * over all n particles. Blocks. */
sphsim_status grid_neighbour_stats(grid *g, cl_mem pos, size_t n, double *mean_neighbours, double *mean_candidates,
                                   sphsim_error *e);

/* Device bytes used by the grid for n_max particles (for the memory estimate). */
size_t grid_bytes(const grid_params *gp, size_t n_max);

/* Enqueue per-stage timing when the device queue has profiling: seconds of the last build
 * spent in keys, sort and cell table (0 when not available). Blocks until the build ends. */
sphsim_status grid_last_timing(grid *g, double *t_keys, double *t_sort, double *t_table, sphsim_error *e);

#endif
