/* device: OpenCL platform and device choice, context, queue, and program builds from the
 * kernel sources embedded in the binary (or from a folder, tuning.kernel_dir). */
#ifndef SPHSIM_DEVICE_H
#define SPHSIM_DEVICE_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>

#include "status.h"
#include "tuning.h"

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
    int profiling;          /* queue created with profiling enabled */
    const char *kernel_dir; /* kernel sources from this folder where it has them (NULL: embedded) */
    int build_log;          /* print every program's build log to stderr */
    size_t allocated;       /* bytes device_alloc has allocated so far (the run's device memory) */
    cl_kernel bound[128];   /* kernels whose argument names device_set_args has checked */
    int n_bound;
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
 * substring of the device or platform name. `t` (NULL: defaults) gives the kernel folder and
 * whether build logs are printed. */
sphsim_status device_open(ocl_device *d, const char *selector, int profiling, const sphsim_tuning *t, sphsim_error *e);
void device_close(ocl_device *d);

/* Print every platform and device, one per line, with its index, to `out`. */
sphsim_status device_list(FILE *out, sphsim_error *e);

/* Source of a kernel file ("grid.cl", "shared.h") with `#include "x"` lines expanded
 * recursively (each file once), each file from d's kernel folder where it has it, else from the
 * set embedded in the binary (d may be NULL: embedded only). malloc'd; NULL if unknown. */
char *device_kernel_source(const ocl_device *d, const char *file, sphsim_error *e);

/* Build kernel files into one program (the files' sources one after the other, each included
 * header once). `options` are extra build options (-D...); "-cl-std=CL1.2 -cl-kernel-arg-info"
 * is always added. On failure the message holds the options and the device's build log. */
sphsim_status device_build_files(ocl_device *d, const char *const *files, int n_files, const char *options,
                                 cl_program *out, sphsim_error *e);
/* device_build_files of one file. */
sphsim_status device_build(ocl_device *d, const char *file, const char *options, cl_program *out, sphsim_error *e);

/* The smallest CL_KERNEL_WORK_GROUP_SIZE of kernels ks[0 .. n) on d (NULL entries skipped; 0 when
 * none reports one): the largest work-group all of them take. */
size_t device_local_limit(const ocl_device *d, const cl_kernel *ks, int n);
/* clReleaseKernel on every kernel of ks[0 .. n) that is not NULL. */
void device_release_kernels(const cl_kernel *ks, int n);

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
/* The work-groups device_run_strided launches for n items (n > 0). */
size_t device_strided_groups(const ocl_device *d, size_t n, size_t local);

/* Enqueue a 1D range of exactly `global` work-items in groups of `local` (0 = driver's
 * choice). `ev` (may be NULL) receives the launch's event. Every launch goes through here, so
 * that --profile sees every kernel. */
sphsim_status device_launch(ocl_device *d, cl_kernel k, size_t global, size_t local, cl_event *ev, sphsim_error *e);

/* Blocking copies. */
sphsim_status device_write(ocl_device *d, cl_mem buf, size_t offset, size_t bytes, const void *src, sphsim_error *e);
sphsim_status device_read(ocl_device *d, cl_mem buf, size_t offset, size_t bytes, void *dst, sphsim_error *e);

/* A kernel argument by name: its value (size bytes at `value`; NULL with a size: __local
 * memory of that many bytes). */
typedef struct karg {
    const char *name;
    size_t size;
    const void *value;
} karg;
#define KARG(name, lvalue) ((karg){ (name), sizeof(lvalue), &(lvalue) })
#define KARG_LOCAL(name, bytes) ((karg){ (name), (bytes), NULL })

/* Bind args[0 .. n) to kernel k's arguments 0 .. n-1. The first time d binds a kernel, the
 * names and their number are checked against the kernel's own (programs are built with
 * -cl-kernel-arg-info; a driver that does not report names is trusted): a host list out of step
 * with a kernel's signature fails, naming both, instead of binding the wrong buffer. */
sphsim_status device_set_args(ocl_device *d, cl_kernel k, const karg *args, int n, sphsim_error *e);

/* The device is a GPU under NVIDIA's own driver (not a port of its platform name): its compiler
 * takes the -cl-nv-* options, and its native functions were validated (docs/performance.md). */
int device_is_nvidia_gpu(const ocl_device *d);

/* A tuning knob resolved on d: `knob` unless TUNE_AUTO, else `gpu` or `cpu` by the device. */
int device_tune(int knob, const ocl_device *d, int gpu, int cpu);

/* The register cap option value for a program on d: 0 (none) unless d is an NVIDIA GPU, where
 * `knob` (a tuning value: TUNE_AUTO, 0 or 16-255) gives it, `auto_value` for TUNE_AUTO. */
unsigned device_register_cap(const ocl_device *d, int knob, unsigned auto_value);

/* The work-group spread of kernels that take one particle per work-item through spread_item
 * (kernels/spread.h), for n particles in groups of `local`: 1 on GPUs; on CPUs the integer
 * nearest 0.618 G (G work-groups) that is coprime to G, so that the blocks taken by consecutive
 * work-groups step through the index range by the golden ratio. */
cl_uint device_group_stride(const ocl_device *d, size_t n, size_t local);

#endif
