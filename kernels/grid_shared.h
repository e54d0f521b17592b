/* grid_shared.h: the neighbour grid's parameters, shared by host and kernels. */
#ifndef SPHSIM_GRID_SHARED_H
#define SPHSIM_GRID_SHARED_H

#include "shared.h"

typedef struct grid_params {
    float origin[3];     /* m: tank min corner (z = 0 in 2D) */
    float cell_size;     /* m: cell_ratio * radius, slightly enlarged (docs/grid.md) */
    float cell_size_inv; /* 1/m */
    float radius;        /* m: search radius (kernel support, or sphere contact distance) */
    dev_u32 ncell[3];    /* cells per axis (ncell[2] = 1 in 2D) */
    dev_u32 n_cells;     /* ncell[0] * ncell[1] * ncell[2] */
    dev_u32 reach;       /* cells scanned either side of a particle's cell: ceil(radius / cell_size) */
    dev_u32 bits;        /* Morton bits per axis */
    dev_u32 key_bits;    /* dims * bits: bits the sort has to look at */
    dev_u32 key64;       /* 1 when keys are 64-bit (key_bits > 32) */
    dev_u32 dims;        /* 2 or 3 */
} grid_params;

#endif
