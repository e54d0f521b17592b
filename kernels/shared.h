/* shared.h: types and constants included by both the host C code and the OpenCL C kernels,
 * so that nothing is kept in sync by hand. Only 4-byte scalars and arrays of them appear in
 * structs shared with the device, so the layout is identical on both sides. */
#ifndef SPHSIM_SHARED_H
#define SPHSIM_SHARED_H

#ifdef __OPENCL_VERSION__
typedef uint dev_u32;
typedef int dev_i32;
typedef ulong dev_u64;
#else
#include <stdint.h>
typedef uint32_t dev_u32;
typedef int32_t dev_i32;
typedef uint64_t dev_u64;
#endif

/* Particle types, stored per particle as one byte (uchar) and written to the output. */
#define PTYPE_FLUID 0
#define PTYPE_BOUNDARY 1
#define PTYPE_SPHERE 2

/* Bits of the per-run device flag word (a single uint the kernels OR into). */
#define FLAG_NONFINITE 1u /* a position or velocity became NaN or Inf */
#define FLAG_OUTSIDE 2u   /* a particle was found outside the tank (clamped into a wall cell) */
#define FLAG_RUNAWAY 4u   /* a speed exceeded the scene's limit */

#endif
