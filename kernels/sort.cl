/* sort.cl: one pass of a stable, deterministic LSD radix sort of (key, index) pairs.
 *
 * A pass sorts by the RADIX_BITS-bit digit d = (key >> shift) & (RADIX - 1) with three kernels
 * (src/grid_sort.c runs them once per digit of the key width):
 *   sort_count   per tile of TILE = WG * ITEMS keys: how many keys have each digit
 *                -> hist[d * n_groups + g]  (digit-major)
 *   sort_scan    one work-group per digit: exclusive scan of hist row d in place, and the
 *                row's total -> digit_total[d]
 *   sort_scatter per tile: ranks every key within its tile stably (digit-major, then tile
 *                order), reorders the tile in local memory and writes each key and index to
 *                prefix(digit_total)[d] + hist[d][g] + (rank within digit and tile).
 * No atomics anywhere: in the tile ranking every work-item counts its own ITEMS consecutive
 * keys into its own column of a [digit][work-item] table, and an exclusive scan of that table
 * in digit-major order gives each key its place. Results depend only on the input.
 *
 * Build options: -DKEY64=0|1 (uint or ulong keys), -DRADIX_BITS (1..8), -DWG (work-group
 * size, a power of two >= RADIX), -DITEMS (keys per work-item). */
#include "shared.h"

#ifndef RADIX_BITS
#define RADIX_BITS 4
#endif
#ifndef WG
#define WG 256
#endif
#ifndef ITEMS
#define ITEMS 16
#endif

#include "grid_key.h"

#define RADIX (1u << RADIX_BITS)
#define DIGIT_MASK (RADIX - 1u)
#define TILE (WG * ITEMS)
#define SCAN_ITEMS 16

/* Tile staging in local memory, one padding word every 32 so that the blocked reads
 * (work-item t reads t*ITEMS .. t*ITEMS+ITEMS-1) spread over the banks. */
#define TPAD(e) ((e) + ((e) >> 5))
#define TILE_PAD (TPAD(TILE) + 1)

/* The [digit][work-item] count table, flattened e = d*WG + t, one padding word after every
 * RADIX entries so that the scan (work-item s reads e = s*RADIX .. s*RADIX+RADIX-1) is free
 * of bank conflicts. 16-bit counters when 32-bit ones would take more than 16 KiB. */
#define CPAD(e) ((e) + (e) / RADIX)
#define CNT_N (RADIX * WG + WG)
#if RADIX * WG * 4 <= 16384
typedef uint cnt_t;
#else
typedef ushort cnt_t;
#endif

#if TILE >= 65536 && RADIX * WG * 4 > 16384
#error "sort.cl: TILE too large for 16-bit counters"
#endif
#if RADIX > WG
#error "sort.cl: RADIX must not exceed WG"
#endif

static inline uint key_digit(key_t k, uint shift) { return (uint)(k >> shift) & DIGIT_MASK; }

/* Exclusive scan of one uint per work-item over the work-group (in work-item order);
 * `buf` holds WG + WG/16 + 1 uints. Contains barriers: every work-item must call it. */
static uint wg_exclusive_scan(uint v, __local uint *buf, uint t, uint *total)
{
    __local uint *part = buf + WG;
    buf[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < WG / 16) {
        uint running = 0;
        for (uint q = 0; q < 16; ++q) {
            const uint x = buf[t * 16 + q];
            buf[t * 16 + q] = running;
            running += x;
        }
        part[t] = running;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        uint running = 0;
        for (uint q = 0; q < WG / 16; ++q) {
            const uint x = part[q];
            part[q] = running;
            running += x;
        }
        part[WG / 16] = running;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint r = buf[t] + part[t / 16];
    *total = part[WG / 16];
    barrier(CLK_LOCAL_MEM_FENCE); /* buf may be reused after return */
    return r;
}

/* hist[d * n_groups + g] = number of keys of tile g with digit d. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
sort_count(__global const key_t *keys, const uint n, const uint shift, const uint n_groups, __global uint *hist)
{
    __local cnt_t cnt[CNT_N];
    __local uint seg[WG];
    const uint t = get_local_id(0), g = get_group_id(0);
    const uint base = g * TILE;
    const uint n_tile = min((uint)TILE, n - base);

    for (uint d = 0; d < RADIX; ++d) cnt[CPAD(d * WG + t)] = 0; /* own column only */
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint e = q * WG + t; /* striped: coalesced, and order does not matter here */
        if (e < n_tile) {
            const uint c = CPAD(key_digit(keys[base + e], shift) * WG + t);
            cnt[c] = (cnt_t)(cnt[c] + 1);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Work-item s sums entries s*RADIX .. s*RADIX+RADIX-1, all of digit s / (WG/RADIX). */
    uint sum = 0;
    for (uint q = 0; q < RADIX; ++q) sum += cnt[t * (RADIX + 1) + q];
    seg[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < RADIX) {
        uint total = 0;
        for (uint q = 0; q < WG / RADIX; ++q) total += seg[t * (WG / RADIX) + q];
        hist[t * n_groups + g] = total;
    }
}

/* Work-group d: hist[d][0..n_groups) <- exclusive scan; digit_total[d] <- row total. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void sort_scan(__global uint *hist, const uint n_groups,
                                                                        __global uint *digit_total)
{
    __local uint buf[WG + WG / 16 + 1];
    const uint t = get_local_id(0), d = get_group_id(0);
    __global uint *row = hist + (size_t)d * n_groups;
    uint carry = 0;
    for (uint c0 = 0; c0 < n_groups; c0 += WG * SCAN_ITEMS) {
        uint v[SCAN_ITEMS];
        uint sum = 0;
#pragma unroll
        for (uint q = 0; q < SCAN_ITEMS; ++q) {
            const uint e = c0 + t * SCAN_ITEMS + q;
            v[q] = e < n_groups ? row[e] : 0u;
            sum += v[q];
        }
        uint total;
        uint running = carry + wg_exclusive_scan(sum, buf, t, &total);
#pragma unroll
        for (uint q = 0; q < SCAN_ITEMS; ++q) {
            const uint e = c0 + t * SCAN_ITEMS + q;
            if (e < n_groups) row[e] = running;
            running += v[q];
        }
        carry += total;
    }
    if (t == 0) digit_total[d] = carry;
}

/* The stable scatter of one pass. idx_in is ignored when implicit_idx != 0 (first pass: the
 * index of a key is its position). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
sort_scatter(__global const key_t *keys_in, __global const uint *idx_in, const uint implicit_idx, const uint n,
             const uint shift, const uint n_groups, __global const uint *hist, __global const uint *digit_total,
             __global key_t *keys_out, __global uint *idx_out)
{
    __local union {
        key_t key[TILE_PAD];
        uint idx[TILE_PAD];
        cnt_t cnt[CNT_N];
    } lm;
    __local uint buf[WG + WG / 16 + 1];
    __local uint gbase[RADIX];
    __local uint dtot[RADIX];

    const uint t = get_local_id(0), g = get_group_id(0);
    const uint base = g * TILE;
    const uint n_tile = min((uint)TILE, n - base);

    key_t k[ITEMS];
    uint v[ITEMS];
    uint r[ITEMS];

    if (t < RADIX) dtot[t] = digit_total[t];

        /* 1. Keys into registers in blocked order (work-item t holds tile elements t*ITEMS + q),
     *    staged through local memory so that the global reads are coalesced. Elements past
     *    the end get the largest digit: they rank after every real key and are never written. */
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint e = q * WG + t;
        if (e < n_tile) lm.key[TPAD(e)] = keys_in[base + e];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint e = t * ITEMS + q;
        k[q] = e < n_tile ? lm.key[TPAD(e)] : (key_t)DIGIT_MASK << shift;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint e = q * WG + t;
        if (e < n_tile) lm.idx[TPAD(e)] = implicit_idx ? base + e : idx_in[base + e];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint e = t * ITEMS + q;
        v[q] = e < n_tile ? lm.idx[TPAD(e)] : 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 2. Count into the own column; r[q] = keys of the same digit earlier in this work-item. */
    for (uint d = 0; d < RADIX; ++d) lm.cnt[CPAD(d * WG + t)] = 0;
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint c = CPAD(key_digit(k[q], shift) * WG + t);
        const uint x = lm.cnt[c];
        r[q] = x;
        lm.cnt[c] = (cnt_t)(x + 1);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 3. Exclusive scan of the table in digit-major order: segment s = entries s*RADIX.. */
    {
        __local cnt_t *seg = lm.cnt + t * (RADIX + 1);
        uint sum = 0;
        for (uint q = 0; q < RADIX; ++q) sum += seg[q];
        uint total;
        uint running = wg_exclusive_scan(sum, buf, t, &total);
        for (uint q = 0; q < RADIX; ++q) {
            const uint x = seg[q];
            seg[q] = (cnt_t)running;
            running += x;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 4. Tile positions; global base of each digit for this tile. */
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) r[q] += lm.cnt[CPAD(key_digit(k[q], shift) * WG + t)];
    if (t < RADIX) {
        uint before = 0; /* keys of all tiles with a smaller digit */
        for (uint q = 0; q < t; ++q) before += dtot[q];
        gbase[t] = before + hist[t * n_groups + g] - (uint)lm.cnt[CPAD(t * WG)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 5. Reorder the keys in local memory, then write them out in tile order: consecutive
     *    work-items write consecutive addresses within each digit's run. */
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) lm.key[r[q]] = k[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint dst[ITEMS];
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint p = q * WG + t;
        dst[q] = 0;
        if (p < n_tile) {
            const key_t key = lm.key[p];
            dst[q] = gbase[key_digit(key, shift)] + p;
            keys_out[dst[q]] = key;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 6. The same for the indices. */
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) lm.idx[r[q]] = v[q];
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (uint q = 0; q < ITEMS; ++q) {
        const uint p = q * WG + t;
        if (p < n_tile) idx_out[dst[q]] = lm.idx[p];
    }
}
