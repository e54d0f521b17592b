/* ref_grid: plain-C references for the neighbour grid tests (see ref_grid.h). */
#include "ref_grid.h"

#include <math.h>
#include <stdlib.h>

uint64_t ref_morton_encode(int dims, unsigned bits_per_axis, const uint32_t c[3])
{
    uint64_t key = 0;
    for (unsigned b = 0; b < bits_per_axis; ++b)
        for (int a = 0; a < dims; ++a)
            if ((c[a] >> b) & 1u) key |= (uint64_t)1 << (dims * b + (unsigned)a);
    return key;
}

void ref_morton_decode(int dims, unsigned bits_per_axis, uint64_t key, uint32_t c[3])
{
    c[0] = c[1] = c[2] = 0;
    for (unsigned b = 0; b < bits_per_axis; ++b)
        for (int a = 0; a < dims; ++a)
            if ((key >> (dims * b + (unsigned)a)) & 1u) c[a] |= 1u << b;
}

typedef struct ref_pair {
    uint64_t key;
    uint32_t idx;
} ref_pair;

static int cmp_pair(const void *pa, const void *pb)
{
    const ref_pair *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

void ref_sort_pairs(const uint64_t *keys, size_t n, uint64_t *out_keys, uint32_t *out_idx)
{
    ref_pair *p = malloc((n ? n : 1) * sizeof *p);
    if (!p) abort();
    for (size_t i = 0; i < n; ++i) {
        p[i].key = keys[i];
        p[i].idx = (uint32_t)i;
    }
    qsort(p, n, sizeof *p, cmp_pair);
    for (size_t i = 0; i < n; ++i) {
        out_keys[i] = p[i].key;
        out_idx[i] = p[i].idx;
    }
    free(p);
}

int ref_within(const float *pa, const float *pb, int dims, double radius, double rel_tol, int *borderline)
{
    double r2 = 0.0;
    for (int a = 0; a < dims; ++a) {
        const double dx = (double)pa[a] - (double)pb[a];
        r2 += dx * dx;
    }
    const double r = sqrt(r2);
    *borderline = fabs(r - radius) <= rel_tol * radius;
    return r < radius;
}
