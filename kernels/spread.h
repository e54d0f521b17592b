/* spread.h: which particle a work-item takes, for kernels launched with one work-item per
 * particle and a work-group spread (device_group_stride, src/device.c). */
#ifndef SPHSIM_SPREAD_H
#define SPHSIM_SPREAD_H

/* The particle (sorted index) of this work-item: work-group g takes block (g * stride) mod G of
 * `get_local_size(0)` consecutive particles, G = get_num_groups(0). stride is 1 on GPUs (block
 * g, the identity) and coprime to G on CPUs, where it spreads the blocks of any contiguous run of
 * work-groups over the whole index range: PoCL hands each thread contiguous runs of work-groups,
 * and in grid order the expensive fluid blocks sit together, so without it one of two threads
 * could get most of the work (docs/performance.md). */
inline uint spread_item(uint stride)
{
    const uint g = (uint)get_group_id(0);
    const uint b = stride == 1u ? g : (uint)(((ulong)g * stride) % (ulong)get_num_groups(0));
    return b * (uint)get_local_size(0) + (uint)get_local_id(0);
}

#endif
