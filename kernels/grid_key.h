/* grid_key.h: the cell-key type of the grid kernels: 32-bit, or 64-bit when the program is
 * built with -DKEY64=1 (a tank of more than 2^32 Morton codes). */
#ifndef SPHSIM_GRID_KEY_H
#define SPHSIM_GRID_KEY_H

#ifndef KEY64
#define KEY64 0
#endif

#if KEY64
typedef ulong key_t;
#else
typedef uint key_t;
#endif

#endif
