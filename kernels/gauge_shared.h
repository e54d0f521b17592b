/* gauge_shared.h: the gauges' descriptors, shared by the host (src/gauges.c) and
 * kernels/gauges.cl. A gauge reads the sums of its probe points (gauge_probe) or of the walls'
 * forces (the boundary stage's sph_boundary_measure, gauge_rows_sum) and writes one row of `cols` floats per sample into its
 * part of the chunk buffer (gauge_finish). */
#ifndef SPHSIM_GAUGE_SHARED_H
#define SPHSIM_GAUGE_SHARED_H

#include "shared.h"

/* scene_gauge_type's values (src/scene.h) */
#define GAUGE_T_PRESSURE 0u
#define GAUGE_T_VELOCITY 1u
#define GAUGE_T_HEIGHT 2u
#define GAUGE_T_FORCE 3u

/* A probe point's fluid within the kernel support holds less than this Shepard sum
 * sum_j V_j W_ij: the point is dry, its pressure and velocity NaN. */
#define GAUGE_DRY 0.1f
/* A height gauge's surface: the highest sample point at least this wet (gauges.cl, gauge_wet). */
#define GAUGE_WET 0.5f

typedef struct gauge_desc {
    dev_u32 type;        /* GAUGE_T_* */
    dev_u32 first_point; /* its probe points: [first_point, first_point + n_points) */
    dev_u32 n_points;
    dev_u32 every;      /* samples at steps that are multiples of every */
    dev_u32 cols;       /* floats per row */
    dev_u32 offset;     /* its rows start at this float of the chunk buffer */
    dev_u32 cap;        /* rows that fit there */
    dev_u32 force_slot; /* force: its wall's slot (sph_measure_setup) */
    float ref[4];       /* force: the moment's reference point relative to the tank's centre (m) */
    float z0, dz;       /* height: the elevation of the first sample above the floor and their spacing (m) */
    float pad2[2];
} gauge_desc;

#endif
