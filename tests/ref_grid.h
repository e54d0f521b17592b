/* ref_grid: plain-C references for the neighbour grid tests: bit-by-bit Morton codes, a
 * stable (key, index) sort with qsort, and brute-force neighbour sets in double precision. */
#ifndef SPHSIM_REF_GRID_H
#define SPHSIM_REF_GRID_H

#include <stddef.h>
#include <stdint.h>

/* Morton code of (x, y[, z]) built one bit at a time: bit b of axis a goes to bit dims*b + a,
 * for b < bits_per_axis. */
uint64_t ref_morton_encode(int dims, unsigned bits_per_axis, const uint32_t c[3]);
void ref_morton_decode(int dims, unsigned bits_per_axis, uint64_t key, uint32_t c[3]);

/* Stable sort of keys: out_keys ascending, out_idx[i] = input slot of the i-th key; equal
 * keys ordered by input slot. Any of the outputs may alias nothing else. */
void ref_sort_pairs(const uint64_t *keys, size_t n, uint64_t *out_keys, uint32_t *out_idx);

/* Brute-force neighbour test in double precision of float positions (xyz, stride 4 floats):
 * 1 when |x_a - x_b| < radius, 0 when not; *borderline = 1 when the distance is within
 * rel_tol * radius of the radius (the float code may decide either way). */
int ref_within(const float *pa, const float *pb, int dims, double radius, double rel_tol, int *borderline);

#endif
