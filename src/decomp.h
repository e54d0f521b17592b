/* decomp: how a run is split over MPI ranks (docs/mpi.md), as plain host code that the tests
 * drive without MPI. Slabs along one axis: rank r owns the particles whose coordinate x along
 * it lies in [cut[r], cut[r+1]) (cut[0] = -inf, cut[size] = +inf), and holds besides, as halo
 * copies, every particle of the other ranks with x in [cut[r] - halo, cut[r+1] + halo). The
 * cuts split a histogram of the particles along the axis into equal counts. */
#ifndef SPHSIM_DECOMP_H
#define SPHSIM_DECOMP_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define DECOMP_BINS 4096
#define DECOMP_MAX_RANKS 4096

/* One particle as the ranks exchange it (40 B): the start of each row the ranks exchange, which
 * the solver's carried state per particle may follow (a row of `row` bytes in all). */
typedef struct decomp_rec {
    float pos[4]; /* m; w = mass (kg), as on the device (state.h) */
    float vel[4]; /* m/s; w = a sphere's radius (m), or the integrated density (kg/m^3) where it is state */
    uint32_t id;
    uint8_t type;
    uint8_t owned; /* 1: the receiving rank owns it; 0: a halo copy */
    uint8_t pad[2];
} decomp_rec;

typedef struct decomp {
    int size;               /* ranks */
    int axis;               /* 0, 1, 2 */
    double lo, hi;          /* the histogram's range along the axis (m) */
    double halo;            /* m */
    double cut[DECOMP_MAX_RANKS + 1];
} decomp;

/* The longest axis of the box [lo, hi] (dims 2 or 3; the first of equals). */
int decomp_axis(const double lo[3], const double hi[3], int dims);

/* Slabs of `size` ranks along `axis` over [lo, hi], every cut at lo (call decomp_cut next). */
sphsim_status decomp_init(decomp *d, int size, int axis, double lo, double hi, double halo, sphsim_error *e);

/* The histogram bin (0 .. DECOMP_BINS - 1) of coordinate x (outside [lo, hi]: the end bins). */
int decomp_bin(const decomp *d, double x);

/* Cuts from a histogram of DECOMP_BINS counts: cut k (0 < k < size) at the upper edge of the
 * first bin where the running count reaches k/size of the total. */
void decomp_cut(decomp *d, const uint64_t *hist);

/* The rank that owns coordinate x. */
int decomp_owner(const decomp *d, double x);

/* The ranks [*first, *last] whose slab, widened by the halo, holds x. */
void decomp_reach(const decomp *d, double x, int *first, int *last);

/* max(count) / mean(count) - 1 over `size` counts (0 for an empty run). */
double decomp_imbalance(const long *count, int size);

/* Routes the rows `in` (n of `row` bytes, each a decomp_rec first; the particles this rank
 * owns) to the ranks that hold them next: a copy to every rank that x reaches, marked owned for
 * x's owner. *out (malloc'd) holds them grouped by rank (each group in the order of `in`),
 * bytes[r] the bytes for rank r. */
sphsim_status decomp_route(const decomp *d, const void *in, size_t n, size_t row, void **out, size_t *bytes,
                           sphsim_error *e);

/* Sorts rows of `row` bytes (each a decomp_rec first) by particle id (ids are unique). */
sphsim_status decomp_sort(void *rows, size_t n, size_t row, sphsim_error *e);

/* Index of id in the ascending array ids[n], or -1. */
long decomp_find(const uint32_t *ids, size_t n, uint32_t id);

#endif
