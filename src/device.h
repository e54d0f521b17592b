/* device: OpenCL platform and device choice, context, queue, and program builds from the
 * kernel sources embedded in the binary (or from $SPHSIM_KERNEL_DIR when set). */
#ifndef SPHSIM_DEVICE_H
#define SPHSIM_DEVICE_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>

#include "status.h"

typedef struct ocl_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    char name[256]; /* device name */
    char platform_name[256];
    char version[256]; /* device OpenCL version string */
    int is_gpu;
    cl_ulong global_mem; /* bytes */
    cl_ulong max_alloc;  /* bytes, largest single buffer */
    size_t max_wg;       /* largest work-group */
    cl_ulong local_mem;  /* bytes */
    cl_uint compute_units;
    int profiling;            /* queue created with profiling enabled */
    struct device_prof *prof; /* per-kernel timing when profiling (see device_profile) */
} ocl_device;

/* With profiling on, every launch through device_run1d is timed by OpenCL events and the
 * times are summed per kernel name. device_profile waits for the pending launches and gives
 * the table: up to `max` entries of name / seconds / launches; returns the count. */
typedef struct device_prof_entry {
    char name[64];
    double seconds;
    long launches;
    double idle; /* device time with no timed command running just before this one's launches
                    (s), counted while device_profile_idle is on */
} device_prof_entry;
int device_profile(ocl_device *d, device_prof_entry *out, int max);
/* Profiling only: from now (on) or no longer (off), count the gaps between consecutive timed
 * commands, each under the command after it (the device idle, or running untimed commands such
 * as reads). Call with the queue finished. */
void device_profile_idle(ocl_device *d, int on);
/* With profiling on, also time the command of event `ev` (not consumed) under `label`, a string
 * that outlives the device (a literal). */
void device_profile_command(ocl_device *d, cl_event ev, const char *label);

/* Choose and open a device. `selector` (NULL or "" = automatic: the first GPU, else the first
 * CPU, else any) is an index from --list-devices, "gpu", "cpu", or a case-insensitive
 * substring of the device or platform name. $SPHSIM_DEVICE is used when selector is NULL. */
sphsim_status device_open(ocl_device *d, const char *selector, int profiling, sphsim_error *e);
void device_close(ocl_device *d);

/* Print every platform and device, one per line, with its index, to `out`. */
sphsim_status device_list(FILE *out, sphsim_error *e);

/* Source of a kernel file ("grid.cl", "shared.h") with `#include "x"` lines expanded
 * recursively from the same embedded set (each file once). malloc'd; NULL if unknown. */
char *device_kernel_source(const char *file, sphsim_error *e);

/* Build one kernel file into a program. `options` are extra build options (-D...);
 * "-cl-std=CL1.2" is always added. On failure the message holds the options and the
 * device's build log. */
sphsim_status device_build(ocl_device *d, const char *file, const char *options, cl_program *out, sphsim_error *e);

/* clCreateKernel with a status. */
sphsim_status device_kernel(cl_program prog, const char *name, cl_kernel *out, sphsim_error *e);

/* clCreateBuffer of `bytes` (at least 1) with a message naming `what` on failure. */
sphsim_status device_alloc(ocl_device *d, size_t bytes, const char *what, cl_mem *out, sphsim_error *e);

/* Enqueue a 1D range of `n` work-items, rounded up to a multiple of `local` (0 = let the
 * driver choose and launch exactly n). Kernels must ignore ids >= n. */
sphsim_status device_run1d(ocl_device *d, cl_kernel k, size_t n, size_t local, sphsim_error *e);

/* Enqueue a kernel that loops over its n items with the stride of its global size: n work-items
 * in groups of `local` (> 0), but at most 16 work-groups per compute unit (enough to fill a
 * GPU), so that a launch that returns at once (a go word, nothing to do) costs a few
 * microseconds, not one work-group per `local` items. `ev` as in device_launch. */
sphsim_status device_run_strided(ocl_device *d, cl_kernel k, size_t n, size_t local, cl_event *ev, sphsim_error *e);

/* Enqueue a 1D range of exactly `global` work-items in groups of `local` (0 = driver's
 * choice). `ev` (may be NULL) receives the launch's event. Every launch goes through here, so
 * that --profile sees every kernel. */
sphsim_status device_launch(ocl_device *d, cl_kernel k, size_t global, size_t local, cl_event *ev, sphsim_error *e);

/* Blocking copies. */
sphsim_status device_write(ocl_device *d, cl_mem buf, size_t offset, size_t bytes, const void *src, sphsim_error *e);
sphsim_status device_read(ocl_device *d, cl_mem buf, size_t offset, size_t bytes, void *dst, sphsim_error *e);

/* Set kernel argument i (a thin wrapper that names the kernel and argument on failure). */
#define DEVICE_ARG(e, k, i, value)                                                                                     \
    do {                                                                                                               \
        cl_int arg_err_ = clSetKernelArg((k), (i), sizeof(value), &(value));                                           \
        if (arg_err_ != CL_SUCCESS)                                                                                    \
            return SPHSIM_FAIL((e), SPHSIM_E_DEVICE, "clSetKernelArg(%s, %d) failed: %s", #k, (int)(i),                \
                               cl_error_name(arg_err_));                                                               \
    } while (0)

#endif
