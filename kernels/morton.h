/* morton.h: Morton (Z-order) encode and decode of integer cell coordinates, one copy shared
 * by the host C code and the OpenCL C kernels.
 *
 * The key interleaves the bits of the cell coordinates, x in bit 0, y in bit 1 (z in bit 2):
 *   2D: key = ... y1 x1 y0 x0          3D: key = ... z1 y1 x1 z0 y0 x0
 * 32-bit keys hold 16 bits per axis in 2D and 10 in 3D; 64-bit keys hold 32 bits per axis in 2D
 * and 21 in 3D. Encoders ignore coordinate bits above those. tests/test_grid.c checks every
 * function against the bit-by-bit reference in tests/ref_grid.c. */
#ifndef SPHSIM_MORTON_H
#define SPHSIM_MORTON_H

#include "shared.h"

#ifdef __OPENCL_VERSION__
#define MORTON_FN static inline
#define MORTON_U64(c) c##UL
#else
#define MORTON_FN static inline
#define MORTON_U64(c) c##ULL
#endif

/* ---- spread: bit b of x goes to bit 2b (2D) or 3b (3D) ---- */

MORTON_FN dev_u32 morton_spread2_32(dev_u32 x)
{
    x &= 0x0000ffffu;
    x = (x | (x << 8)) & 0x00ff00ffu;
    x = (x | (x << 4)) & 0x0f0f0f0fu;
    x = (x | (x << 2)) & 0x33333333u;
    x = (x | (x << 1)) & 0x55555555u;
    return x;
}

MORTON_FN dev_u32 morton_spread3_32(dev_u32 x)
{
    x &= 0x000003ffu;
    x = (x | (x << 16)) & 0x030000ffu;
    x = (x | (x << 8)) & 0x0300f00fu;
    x = (x | (x << 4)) & 0x030c30c3u;
    x = (x | (x << 2)) & 0x09249249u;
    return x;
}

MORTON_FN dev_u64 morton_spread2_64(dev_u64 x)
{
    x &= MORTON_U64(0x00000000ffffffff);
    x = (x | (x << 16)) & MORTON_U64(0x0000ffff0000ffff);
    x = (x | (x << 8)) & MORTON_U64(0x00ff00ff00ff00ff);
    x = (x | (x << 4)) & MORTON_U64(0x0f0f0f0f0f0f0f0f);
    x = (x | (x << 2)) & MORTON_U64(0x3333333333333333);
    x = (x | (x << 1)) & MORTON_U64(0x5555555555555555);
    return x;
}

MORTON_FN dev_u64 morton_spread3_64(dev_u64 x)
{
    x &= MORTON_U64(0x00000000001fffff);
    x = (x | (x << 32)) & MORTON_U64(0x001f00000000ffff);
    x = (x | (x << 16)) & MORTON_U64(0x001f0000ff0000ff);
    x = (x | (x << 8)) & MORTON_U64(0x100f00f00f00f00f);
    x = (x | (x << 4)) & MORTON_U64(0x10c30c30c30c30c3);
    x = (x | (x << 2)) & MORTON_U64(0x1249249249249249);
    return x;
}

/* ---- compact: the inverse of spread (bits between the kept ones are ignored) ---- */

MORTON_FN dev_u32 morton_compact2_32(dev_u32 x)
{
    x &= 0x55555555u;
    x = (x | (x >> 1)) & 0x33333333u;
    x = (x | (x >> 2)) & 0x0f0f0f0fu;
    x = (x | (x >> 4)) & 0x00ff00ffu;
    x = (x | (x >> 8)) & 0x0000ffffu;
    return x;
}

MORTON_FN dev_u32 morton_compact3_32(dev_u32 x)
{
    x &= 0x09249249u;
    x = (x | (x >> 2)) & 0x030c30c3u;
    x = (x | (x >> 4)) & 0x0300f00fu;
    x = (x | (x >> 8)) & 0x030000ffu;
    x = (x | (x >> 16)) & 0x000003ffu;
    return x;
}

MORTON_FN dev_u64 morton_compact2_64(dev_u64 x)
{
    x &= MORTON_U64(0x5555555555555555);
    x = (x | (x >> 1)) & MORTON_U64(0x3333333333333333);
    x = (x | (x >> 2)) & MORTON_U64(0x0f0f0f0f0f0f0f0f);
    x = (x | (x >> 4)) & MORTON_U64(0x00ff00ff00ff00ff);
    x = (x | (x >> 8)) & MORTON_U64(0x0000ffff0000ffff);
    x = (x | (x >> 16)) & MORTON_U64(0x00000000ffffffff);
    return x;
}

MORTON_FN dev_u64 morton_compact3_64(dev_u64 x)
{
    x &= MORTON_U64(0x1249249249249249);
    x = (x | (x >> 2)) & MORTON_U64(0x10c30c30c30c30c3);
    x = (x | (x >> 4)) & MORTON_U64(0x100f00f00f00f00f);
    x = (x | (x >> 8)) & MORTON_U64(0x001f0000ff0000ff);
    x = (x | (x >> 16)) & MORTON_U64(0x001f00000000ffff);
    x = (x | (x >> 32)) & MORTON_U64(0x00000000001fffff);
    return x;
}

/* ---- keys ---- */

MORTON_FN dev_u32 morton2_encode32(dev_u32 x, dev_u32 y) { return morton_spread2_32(x) | (morton_spread2_32(y) << 1); }

MORTON_FN dev_u32 morton3_encode32(dev_u32 x, dev_u32 y, dev_u32 z)
{
    return morton_spread3_32(x) | (morton_spread3_32(y) << 1) | (morton_spread3_32(z) << 2);
}

MORTON_FN dev_u64 morton2_encode64(dev_u32 x, dev_u32 y)
{
    return morton_spread2_64((dev_u64)x) | (morton_spread2_64((dev_u64)y) << 1);
}

MORTON_FN dev_u64 morton3_encode64(dev_u32 x, dev_u32 y, dev_u32 z)
{
    return morton_spread3_64((dev_u64)x) | (morton_spread3_64((dev_u64)y) << 1) | (morton_spread3_64((dev_u64)z) << 2);
}

/* Decoders write the coordinates through pointers (private memory in kernels). */
#ifdef __OPENCL_VERSION__
#define MORTON_OUT __private dev_u32 *
#else
#define MORTON_OUT dev_u32 *
#endif

MORTON_FN void morton2_decode32(dev_u32 key, MORTON_OUT x, MORTON_OUT y)
{
    *x = morton_compact2_32(key);
    *y = morton_compact2_32(key >> 1);
}

MORTON_FN void morton3_decode32(dev_u32 key, MORTON_OUT x, MORTON_OUT y, MORTON_OUT z)
{
    *x = morton_compact3_32(key);
    *y = morton_compact3_32(key >> 1);
    *z = morton_compact3_32(key >> 2);
}

MORTON_FN void morton2_decode64(dev_u64 key, MORTON_OUT x, MORTON_OUT y)
{
    *x = (dev_u32)morton_compact2_64(key);
    *y = (dev_u32)morton_compact2_64(key >> 1);
}

MORTON_FN void morton3_decode64(dev_u64 key, MORTON_OUT x, MORTON_OUT y, MORTON_OUT z)
{
    *x = (dev_u32)morton_compact3_64(key);
    *y = (dev_u32)morton_compact3_64(key >> 1);
    *z = (dev_u32)morton_compact3_64(key >> 2);
}

#endif
