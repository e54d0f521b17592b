/* grid_sort: host side of the device radix sort (kernels/sort.cl) that orders the grid's
 * (cell key, particle index) pairs: stable, deterministic, LSD over only the key bits in use,
 * never blocking the host. Used by grid.c; exposed on its own for tests and benchmarks. */
#ifndef SPHSIM_GRID_SORT_H
#define SPHSIM_GRID_SORT_H

#include "device.h"

typedef struct grid_sort grid_sort;

/* Tuning of the sort kernels; 0 in a field picks grid_sort_default_config's value. */
typedef struct grid_sort_config {
    unsigned radix_bits; /* digit width per pass, 1..8 */
    unsigned wg;         /* work-group size, a power of two >= 2^radix_bits, 16..1024 */
    unsigned items;      /* keys per work-item, 1..64 */
} grid_sort_config;

/* The configuration the grid uses for keys of `key_bits` significant bits. */
grid_sort_config grid_sort_default_config(unsigned key_bits);

/* Sorter for up to n_max keys of `key_bits` significant bits (1..64) held in uint
 * (key64 = 0, key_bits <= 32) or ulong (key64 = 1) words. cfg may be NULL. */
sphsim_status grid_sort_create(grid_sort **s, ocl_device *d, int key64, unsigned key_bits, size_t n_max,
                               const grid_sort_config *cfg, sphsim_error *e);
void grid_sort_destroy(grid_sort *s);

/* Where the caller puts the n keys to sort (uint or ulong, n_max of them) before grid_sort_run. */
cl_mem grid_sort_keys_in(const grid_sort *s);

/* Enqueue the sort of the first n keys of grid_sort_keys_in. Afterwards grid_sort_keys_out
 * holds them in ascending order and grid_sort_index the permutation: sorted slot -> input
 * slot; equal keys keep their input order. Keys at or above 2^key_bits are not allowed. Never
 * blocks. When `first` / `last` are not NULL they receive the events of the first and last
 * kernel (NULL when n == 0); the caller releases them. */
sphsim_status grid_sort_run(grid_sort *s, size_t n, cl_event *first, cl_event *last, sphsim_error *e);

cl_mem grid_sort_keys_out(const grid_sort *s);
cl_mem grid_sort_index(const grid_sort *s);

/* The one buffer behind the keys and the index of both sides (at least n_max * 2 * (key
 * size + 4) bytes; *bytes its size). Its content matters only from grid_sort_run until the
 * caller has read the sorted keys and index: in between sorts it may serve as scratch. */
cl_mem grid_sort_pool(const grid_sort *s, size_t *bytes);

/* Passes (digits) per sort, and the keys per tile. */
unsigned grid_sort_passes(const grid_sort *s);
unsigned grid_sort_tile(const grid_sort *s);

/* Device bytes for up to n_max keys (key buffers, index buffers, histograms). */
size_t grid_sort_bytes(int key64, unsigned key_bits, size_t n_max, const grid_sort_config *cfg);

#endif
