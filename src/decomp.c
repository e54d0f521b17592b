/* decomp: slabs over MPI ranks (see decomp.h). */
#include "decomp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int decomp_axis(const double lo[3], const double hi[3], int dims)
{
    int a = 0;
    for (int k = 1; k < dims; ++k)
        if (hi[k] - lo[k] > hi[a] - lo[a]) a = k;
    return a;
}

sphsim_status decomp_init(decomp *d, int size, int axis, double lo, double hi, double halo, sphsim_error *e)
{
    if (size < 1 || size > DECOMP_MAX_RANKS)
        return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "%d MPI ranks: sphsim runs on 1 to %d", size, DECOMP_MAX_RANKS);
    if (!(hi > lo) || !(halo >= 0.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "decomposition: an empty range [%g, %g] m or a bad halo (%g m)", lo, hi,
                           halo);
    memset(d, 0, sizeof *d);
    d->size = size;
    d->axis = axis;
    d->lo = lo;
    d->hi = hi;
    d->halo = halo;
    d->cut[0] = -INFINITY;
    for (int k = 1; k < size; ++k) d->cut[k] = lo;
    d->cut[size] = INFINITY;
    return SPHSIM_OK;
}

int decomp_bin(const decomp *d, double x)
{
    const double f = (x - d->lo) / (d->hi - d->lo) * DECOMP_BINS;
    if (!(f >= 0.0)) return 0; /* NaN too */
    return f >= DECOMP_BINS ? DECOMP_BINS - 1 : (int)f;
}

void decomp_cut(decomp *d, const uint64_t *hist)
{
    uint64_t total = 0;
    for (int b = 0; b < DECOMP_BINS; ++b) total += hist[b];
    const double w = (d->hi - d->lo) / DECOMP_BINS;
    uint64_t run = 0;
    int b = 0, k = 1;
    /* cut k: the upper edge of the first bin b where the running count reaches k * total / size */
    for (; k < d->size; ++k) {
        const long double want = (long double)k * (long double)total / (long double)d->size;
        while (b < DECOMP_BINS && (long double)(run + hist[b]) < want) run += hist[b++];
        d->cut[k] = b >= DECOMP_BINS ? d->hi : d->lo + (b + 1) * w;
        if (d->cut[k] < d->cut[k - 1]) d->cut[k] = d->cut[k - 1];
    }
}

int decomp_owner(const decomp *d, double x)
{
    int r = 0;
    while (r + 1 < d->size && x >= d->cut[r + 1]) ++r;
    return r;
}

void decomp_reach(const decomp *d, double x, int *first, int *last)
{
    int a = d->size, b = -1;
    for (int r = 0; r < d->size; ++r)
        if (x >= d->cut[r] - d->halo && x < d->cut[r + 1] + d->halo) {
            if (r < a) a = r;
            b = r;
        }
    if (b < 0) a = b = decomp_owner(d, x); /* NaN: the owner keeps it (its checks report it) */
    *first = a;
    *last = b;
}

double decomp_imbalance(const long *count, int size)
{
    long sum = 0, mx = 0;
    for (int r = 0; r < size; ++r) {
        sum += count[r];
        if (count[r] > mx) mx = count[r];
    }
    return sum > 0 ? (double)mx * size / (double)sum - 1.0 : 0.0;
}

sphsim_status decomp_route(const decomp *d, const void *in, size_t n, size_t row, void **out, size_t *bytes,
                           sphsim_error *e)
{
    const unsigned char *src = in;
    size_t *count = calloc((size_t)d->size + 1, sizeof *count);
    if (!count) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory routing particles");
    for (size_t i = 0; i < n; ++i) {
        int a, b;
        decomp_reach(d, ((const decomp_rec *)(src + i * row))->pos[d->axis], &a, &b);
        for (int r = a; r <= b; ++r) count[r + 1]++;
    }
    for (int r = 0; r < d->size; ++r) count[r + 1] += count[r]; /* count[r]: rank r's first row */
    const size_t total = count[d->size];
    unsigned char *o = malloc((total ? total : 1) * row);
    if (!o) {
        free(count);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu routed particles", total);
    }
    for (int r = 0; r < d->size; ++r) bytes[r] = (count[r + 1] - count[r]) * row;
    for (size_t i = 0; i < n; ++i) {
        const double x = ((const decomp_rec *)(src + i * row))->pos[d->axis];
        int a, b;
        decomp_reach(d, x, &a, &b);
        const int owner = decomp_owner(d, x);
        for (int r = a; r <= b; ++r) {
            unsigned char *q = o + row * count[r]++;
            memcpy(q, src + i * row, row);
            ((decomp_rec *)q)->owned = r == owner;
        }
    }
    free(count);
    *out = o;
    return SPHSIM_OK;
}

sphsim_status decomp_sort(void *rows, size_t n, size_t row, sphsim_error *e)
{
    if (n < 2) return SPHSIM_OK;
    /* (id, row) pairs by id in two counting passes of 16 bits (ids are unique), then the rows
     * moved once: linear in n, where a comparison sort of the rows took most of an exchange */
    uint64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    size_t *count = malloc(((size_t)1 << 16) * sizeof *count);
    unsigned char *tmp = malloc(n * row);
    if (!a || !b || !count || !tmp) {
        free(a);
        free(b);
        free(count);
        free(tmp);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory sorting %zu particles", n);
    }
    const unsigned char *r = rows;
    for (size_t i = 0; i < n; ++i) a[i] = (uint64_t)((const decomp_rec *)(r + i * row))->id << 32 | (uint64_t)i;
    for (int shift = 32; shift < 64; shift += 16) {
        memset(count, 0, ((size_t)1 << 16) * sizeof *count);
        for (size_t i = 0; i < n; ++i) count[(a[i] >> shift) & 0xffffu]++;
        size_t sum = 0;
        for (size_t d = 0; d < ((size_t)1 << 16); ++d) {
            const size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; ++i) b[count[(a[i] >> shift) & 0xffffu]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < n; ++i) memcpy(tmp + i * row, r + (size_t)(a[i] & 0xffffffffu) * row, row);
    memcpy(rows, tmp, n * row);
    free(a);
    free(b);
    free(count);
    free(tmp);
    return SPHSIM_OK;
}

long decomp_find(const uint32_t *ids, size_t n, uint32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && ids[lo] == id ? (long)lo : -1;
}
