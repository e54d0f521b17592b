/* device: OpenCL platform/device choice, context, queue, and program builds from the
 * embedded kernel sources (or a folder of them, tuning.kernel_dir). */
#include "device.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "comm.h"

/* MPI ranks of one node that compile the same program at once break PoCL's kernel cache (one
 * rank's temporary files vanish under another's: CL_BUILD_PROGRAM_FAILURE, "unable to rename
 * temporary"), so on several ranks the builds take turns, by a lock on a file in /tmp; where it
 * cannot be opened they go ahead at once. */
static int build_lock(void)
{
    if (comm_size() < 2) return -1;
    const int fd = open("/tmp/sphsim-build.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void build_unlock(int fd)
{
    if (fd < 0) return;
    flock(fd, LOCK_UN);
    close(fd);
}

struct embedded_kernel {
    const char *name;
    const char *text;
};
extern const struct embedded_kernel sph_embedded_kernels[];

#define MAX_PLATFORMS 16
#define PROF_PENDING 1024
#define PROF_KERNELS 64

struct device_prof {
    cl_event pending[PROF_PENDING];
    cl_kernel pending_kernel[PROF_PENDING]; /* NULL for a labelled command */
    const char *pending_label[PROF_PENDING];
    int n_pending;
    device_prof_entry total[PROF_KERNELS];
    int n_total;
    int idle_on;       /* device_profile_idle: add the gaps between timed commands to idle */
    cl_ulong last_end; /* the end of the last timed command while idle_on (0: none yet) */
};

/* Wait for the pending profiled launches and add their times to the per-kernel totals. */
static void prof_collect(struct device_prof *p)
{
    if (!p || p->n_pending == 0) return;
    clWaitForEvents((cl_uint)p->n_pending, p->pending);
    for (int i = 0; i < p->n_pending; ++i) {
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(p->pending[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(p->pending[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        char name[64] = "?";
        if (p->pending_kernel[i]) {
            clGetKernelInfo(p->pending_kernel[i], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
            clReleaseKernel(p->pending_kernel[i]);
        } else {
            snprintf(name, sizeof name, "%s", p->pending_label[i]);
        }
        clReleaseEvent(p->pending[i]);
        int k = 0;
        while (k < p->n_total && strcmp(p->total[k].name, name)) ++k;
        if (k == p->n_total) {
            if (p->n_total == PROF_KERNELS) continue;
            snprintf(p->total[k].name, sizeof p->total[k].name, "%s", name);
            p->n_total++;
        }
        p->total[k].seconds += t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
        p->total[k].launches++;
        if (p->idle_on) {
            /* commands run in the order they were queued (one in-order queue): the device did
             * none of the timed ones between the last one's end and this one's start */
            if (p->last_end && t0 > p->last_end) p->total[k].idle += (double)(t0 - p->last_end) * 1e-9;
            if (t1 > p->last_end) p->last_end = t1;
        }
    }
    p->n_pending = 0;
}

/* Queue event `ev` (owned from here) for timing under kernel k's name or, k NULL, `label`. */
static void prof_push(struct device_prof *p, cl_event ev, cl_kernel k, const char *label)
{
    if (p->n_pending == PROF_PENDING) prof_collect(p);
    p->pending[p->n_pending] = ev;
    p->pending_label[p->n_pending] = label;
    p->pending_kernel[p->n_pending++] = k;
}

void device_profile_command(ocl_device *d, cl_event ev, const char *label)
{
    if (!d->prof || !ev) return;
    clRetainEvent(ev);
    prof_push(d->prof, ev, NULL, label);
}

void device_profile_idle(ocl_device *d, int on)
{
    if (!d->prof) return;
    prof_collect(d->prof);
    d->prof->idle_on = on;
    d->prof->last_end = 0;
}

int device_profile(ocl_device *d, device_prof_entry *out, int max)
{
    if (!d->prof) return 0;
    prof_collect(d->prof);
    int n = d->prof->n_total < max ? d->prof->n_total : max;
    memcpy(out, d->prof->total, (size_t)n * sizeof *out);
    return n;
}
#define MAX_DEVICES 64

typedef struct dev_entry {
    cl_platform_id platform;
    cl_device_id device;
    cl_device_type type;
    char name[256];
    char platform_name[256];
} dev_entry;

static sphsim_status enumerate(dev_entry *list, int *count, sphsim_error *e)
{
    cl_platform_id plats[MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, plats, &np);
    *count = 0;
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && np == 0))
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "no OpenCL platform found. Install a driver: on Debian/Ubuntu without a GPU "
                           "`apt-get install pocl-opencl-icd` (CPU), or your GPU vendor's OpenCL ICD "
                           "(NVIDIA: the driver's libnvidia-opencl; AMD: ROCm OpenCL); check with `clinfo -l`");
    if (err != CL_SUCCESS) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "clGetPlatformIDs failed: %s", cl_error_name(err));
    if (np > MAX_PLATFORMS) np = MAX_PLATFORMS;
    for (cl_uint p = 0; p < np; ++p) {
        cl_device_id devs[MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd) != CL_SUCCESS) continue;
        if (nd > MAX_DEVICES) nd = MAX_DEVICES;
        char pname[256] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        for (cl_uint d = 0; d < nd && *count < MAX_DEVICES; ++d) {
            dev_entry *x = &list[(*count)++];
            x->platform = plats[p];
            x->device = devs[d];
            clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof x->type, &x->type, NULL);
            x->name[0] = 0;
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof x->name, x->name, NULL);
            snprintf(x->platform_name, sizeof x->platform_name, "%s", pname);
        }
    }
    if (*count == 0)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "OpenCL platforms found but no devices; install pocl-opencl-icd for the CPU "
                           "or check the GPU driver (`clinfo -l`)");
    return SPHSIM_OK;
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU) return "gpu";
    if (t & CL_DEVICE_TYPE_CPU) return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
    return "other";
}

sphsim_status device_list(FILE *out, sphsim_error *e)
{
    dev_entry list[MAX_DEVICES];
    int n = 0;
    SPHSIM_TRY(enumerate(list, &n, e));
    for (int i = 0; i < n; ++i) {
        cl_ulong mem = 0;
        clGetDeviceInfo(list[i].device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
        fprintf(out, "%d\t%s\t%s\t%s\t%.1f GiB\n", i, type_name(list[i].type), list[i].name, list[i].platform_name,
                (double)mem / (1024.0 * 1024.0 * 1024.0));
    }
    return SPHSIM_OK;
}

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; ++hay) {
        size_t k = 0;
        while (k < n && hay[k] && tolower((unsigned char)hay[k]) == tolower((unsigned char)needle[k])) ++k;
        if (k == n) return 1;
    }
    return n == 0;
}

sphsim_status device_open(ocl_device *d, const char *selector, int profiling, const sphsim_tuning *t, sphsim_error *e)
{
    memset(d, 0, sizeof *d);
    if (t) {
        d->kernel_dir = t->kernel_dir;
        d->build_log = t->build_log;
    }
    if (selector && !*selector) selector = NULL;
    dev_entry list[MAX_DEVICES];
    int n = 0;
    SPHSIM_TRY(enumerate(list, &n, e));
    int pick = -1;
    if (!selector) {
        /* the first GPU, or on several MPI ranks of a node the node-local rank's (round robin) */
        int gpus = 0;
        for (int i = 0; i < n; ++i) gpus += (list[i].type & CL_DEVICE_TYPE_GPU) != 0;
        for (int i = 0, k = 0; i < n && pick < 0 && gpus > 0; ++i)
            if ((list[i].type & CL_DEVICE_TYPE_GPU) && k++ == comm_local_rank() % gpus) pick = i;
        for (int i = 0; i < n && pick < 0; ++i)
            if (list[i].type & CL_DEVICE_TYPE_CPU) pick = i;
        if (pick < 0) pick = 0;
    } else if (!strcmp(selector, "gpu") || !strcmp(selector, "cpu")) {
        cl_device_type want = !strcmp(selector, "gpu") ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU;
        for (int i = 0; i < n && pick < 0; ++i)
            if (list[i].type & want) pick = i;
        if (pick < 0)
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "--device %s: no %s OpenCL device found (see --list-devices)%s",
                               selector, selector,
                               want == CL_DEVICE_TYPE_CPU ? "; install pocl-opencl-icd for a CPU device" : "");
    } else {
        char *end = NULL;
        long idx = strtol(selector, &end, 10);
        if (end != selector && *end == 0) {
            if (idx < 0 || idx >= n)
                return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                                   "--device %s: no device with that index; there are %d (see --list-devices)",
                                   selector, n);
            pick = (int)idx;
        } else {
            for (int i = 0; i < n && pick < 0; ++i)
                if (contains_ci(list[i].name, selector) || contains_ci(list[i].platform_name, selector)) pick = i;
            if (pick < 0)
                return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "--device %s: no device name matches (see --list-devices)",
                                   selector);
        }
    }
    dev_entry *x = &list[pick];
    d->platform = x->platform;
    d->device = x->device;
    d->is_gpu = (x->type & CL_DEVICE_TYPE_GPU) != 0;
    snprintf(d->name, sizeof d->name, "%s", x->name);
    snprintf(d->platform_name, sizeof d->platform_name, "%s", x->platform_name);
    clGetDeviceInfo(d->device, CL_DEVICE_VERSION, sizeof d->version, d->version, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof d->local_mem, &d->local_mem, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units, &d->compute_units, NULL);
    cl_int err;
    d->ctx = clCreateContext(NULL, 1, &d->device, NULL, NULL, &err);
    CL_CHECK_ERR(e, err, "clCreateContext");
    d->profiling = profiling;
    if (profiling && !(d->prof = calloc(1, sizeof *d->prof))) {
        clReleaseContext(d->ctx);
        d->ctx = NULL;
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    }
    d->queue = clCreateCommandQueue(d->ctx, d->device, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(d->ctx);
        d->ctx = NULL;
    }
    CL_CHECK_ERR(e, err, "clCreateCommandQueue");
    return SPHSIM_OK;
}

void device_close(ocl_device *d)
{
    if (d->queue) {
        clFinish(d->queue);
        clReleaseCommandQueue(d->queue);
    }
    if (d->prof) {
        prof_collect(d->prof);
        free(d->prof);
    }
    if (d->ctx) clReleaseContext(d->ctx);
    memset(d, 0, sizeof *d);
}

/* ---- kernel sources ---- */

static char *read_text_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 14, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[len] = 0;
    return buf;
}

/* Raw text of one kernel file (malloc'd): from folder `dir` when it holds the file (tuning's
 * kernel_dir), else from the set embedded in the binary. */
static char *kernel_file_text(const char *dir, const char *file)
{
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        char *text = read_text_file(path);
        if (text) return text;
    }
    for (const struct embedded_kernel *k = sph_embedded_kernels; k->name; ++k)
        if (!strcmp(k->name, file)) return strdup(k->text);
    return NULL;
}

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static int sb_append(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) return -1;
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
    return 0;
}

#define MAX_INCLUDED 64

/* Append `file` with its `#include "x"` lines expanded (each file at most once). */
static sphsim_status expand(strbuf *b, const char *dir, const char *file, char included[][64], int *n_included,
                            int depth, sphsim_error *e)
{
    for (int i = 0; i < *n_included; ++i)
        if (!strcmp(included[i], file)) return SPHSIM_OK;
    if (*n_included >= MAX_INCLUDED || depth > 16)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "kernel source %s: too many nested includes", file);
    snprintf(included[(*n_included)++], 64, "%s", file);
    char *text = kernel_file_text(dir, file);
    if (!text)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "kernel source %s not found (%s%s)", file,
                           dir ? "neither in the kernel folder nor " : "", "embedded in this build");
    const char *line = text;
    sphsim_status st = SPHSIM_OK;
    while (*line && st == SPHSIM_OK) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line + 1) : strlen(line);
        const char *p = line;
        while (*p == ' ' || *p == '\t') ++p;
        /* `#include "x"` is expanded; `#include <x>` only appears in host-only branches */
        const int is_include = !strncmp(p, "#include", 8);
        const char *after = is_include ? p + 8 : p;
        while (is_include && (*after == ' ' || *after == '\t')) ++after;
        if (is_include && *after == '"') {
            const char *q = after;
            const char *r = q ? strchr(q + 1, '"') : NULL;
            if (!q || !r || r - q - 1 >= 64) {
                st = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "kernel source %s: only #include \"file\" is supported", file);
                break;
            }
            char inc[64];
            memcpy(inc, q + 1, (size_t)(r - q - 1));
            inc[r - q - 1] = 0;
            st = expand(b, dir, inc, included, n_included, depth + 1, e);
            if (st == SPHSIM_OK && sb_append(b, "\n", 1)) st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
        } else if (sb_append(b, line, len)) {
            st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
        }
        line += len;
    }
    free(text);
    return st;
}

char *device_kernel_source(const ocl_device *d, const char *file, sphsim_error *e)
{
    strbuf b = { 0 };
    char included[MAX_INCLUDED][64];
    int n_included = 0;
    if (expand(&b, d ? d->kernel_dir : NULL, file, included, &n_included, 0, e) != SPHSIM_OK) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* The build log of prog (malloc'd, NUL-terminated; NULL when out of memory). */
static char *build_log(const ocl_device *d, cl_program prog)
{
    size_t log_size = 0;
    clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
    char *log = malloc(log_size + 1);
    if (log) {
        log[0] = 0;
        clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, log_size, log, NULL);
        log[log_size] = 0;
    }
    return log;
}

sphsim_status device_build(ocl_device *d, const char *file, const char *options, cl_program *out, sphsim_error *e)
{
    return device_build_files(d, &file, 1, options, out, e);
}

sphsim_status device_build_files(ocl_device *d, const char *const *files, int n_files, const char *options,
                                 cl_program *out, sphsim_error *e)
{
    *out = NULL;
    strbuf b = { 0 };
    char included[MAX_INCLUDED][64];
    int n_included = 0;
    char file[512] = ""; /* the files' names, for messages */
    for (int f = 0; f < n_files; ++f) {
        const size_t len = strlen(file);
        snprintf(file + len, sizeof file - len, "%s%s", f ? " + kernels/" : "", files[f]);
        if (expand(&b, d->kernel_dir, files[f], included, &n_included, 0, e) != SPHSIM_OK) {
            free(b.s);
            return e ? e->code : SPHSIM_E_DEVICE;
        }
    }
    char *src = b.s;
    char opts[2048];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -cl-kernel-arg-info %s", options ? options : "");
    cl_int err;
    const char *srcs[1] = { src };
    cl_program prog = clCreateProgramWithSource(d->ctx, 1, srcs, NULL, &err);
    free(src);
    CL_CHECK_ERR(e, err, "clCreateProgramWithSource");
    const int lock = build_lock();
    err = clBuildProgram(prog, 1, &d->device, opts, NULL, NULL);
    build_unlock(lock);
    if (err != CL_SUCCESS) {
        char *log = build_log(d, prog);
        SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                    "building kernels/%s for %s failed (%s)\nbuild options: %s\nbuild log:\n%.1500s", file, d->name,
                    cl_error_name(err), opts, log ? log : "(none)");
        free(log);
        clReleaseProgram(prog);
        return SPHSIM_E_DEVICE;
    }
    /* tuning.build_log: print the build log of every program, e.g. the register counts NVIDIA's
     * compiler reports with -cl-nv-verbose */
    if (d->build_log) {
        char *log = build_log(d, prog);
        fprintf(stderr, "build log of kernels/%s (%s):\n%s\n", file, opts, log ? log : "(none)");
        free(log);
    }
    *out = prog;
    return SPHSIM_OK;
}

/* The name of k's function (NUL-terminated, truncated to fit). */
static void kernel_name(cl_kernel k, char *name, size_t size)
{
    name[0] = '\0';
    if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, size, name, NULL) != CL_SUCCESS) snprintf(name, size, "?");
    name[size - 1] = '\0';
}

/* args against k's signature (device_set_args). */
static sphsim_status check_arg_names(cl_kernel k, const karg *args, int n, sphsim_error *e)
{
    char kname[128];
    kernel_name(k, kname, sizeof kname);
    cl_uint nargs = 0;
    CL_CHECK(e, clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL));
    if ((int)nargs != n)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "kernel %s takes %u arguments, the host binds %d", kname, nargs, n);
    for (int i = 0; i < n; ++i) {
        char name[128];
        if (clGetKernelArgInfo(k, (cl_uint)i, CL_KERNEL_ARG_NAME, sizeof name, name, NULL) != CL_SUCCESS)
            return SPHSIM_OK; /* the driver keeps no names */
        name[sizeof name - 1] = '\0';
        if (strcmp(name, args[i].name) != 0)
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "kernel %s: argument %d is '%s', the host binds '%s' there", kname,
                               i, name, args[i].name);
    }
    return SPHSIM_OK;
}

sphsim_status device_set_args(ocl_device *d, cl_kernel k, const karg *args, int n, sphsim_error *e)
{
    int known = 0;
    for (int i = 0; i < d->n_bound && !known; ++i) known = d->bound[i] == k;
    if (!known) {
        SPHSIM_TRY(check_arg_names(k, args, n, e));
        if (d->n_bound < (int)(sizeof d->bound / sizeof *d->bound)) d->bound[d->n_bound++] = k;
    }
    for (int i = 0; i < n; ++i) {
        const cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            char kname[128];
            kernel_name(k, kname, sizeof kname);
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "binding argument %d (%s) of kernel %s failed: %s", i, args[i].name,
                               kname, cl_error_name(err));
        }
    }
    return SPHSIM_OK;
}

size_t device_local_limit(const ocl_device *d, const cl_kernel *ks, int n)
{
    size_t limit = 0;
    for (int k = 0; k < n; ++k) {
        size_t m = 0;
        if (ks[k] &&
            clGetKernelWorkGroupInfo(ks[k], d->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof m, &m, NULL) == CL_SUCCESS &&
            m > 0 && (limit == 0 || m < limit))
            limit = m;
    }
    return limit;
}

void device_release_kernels(const cl_kernel *ks, int n)
{
    for (int k = 0; k < n; ++k)
        if (ks[k]) clReleaseKernel(ks[k]);
}

int device_tune(int knob, const ocl_device *d, int gpu, int cpu)
{
    return knob != TUNE_AUTO ? knob : d->is_gpu ? gpu : cpu;
}

int device_is_nvidia_gpu(const ocl_device *d) { return d->is_gpu && strstr(d->platform_name, "NVIDIA") != NULL; }

unsigned device_register_cap(const ocl_device *d, int knob, unsigned auto_value)
{
    if (!device_is_nvidia_gpu(d)) return 0; /* other compilers don't take the option */
    return knob == TUNE_AUTO ? auto_value : knob > 0 ? (unsigned)knob : 0u;
}

static unsigned gcd_u(unsigned a, unsigned b)
{
    while (b) {
        const unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

cl_uint device_group_stride(const ocl_device *d, size_t n, size_t local)
{
    if (d->is_gpu) return 1;
    const unsigned groups = (unsigned)((n + local - 1) / local);
    if (groups <= 2) return 1;
    unsigned st = (unsigned)(0.6180339887 * groups + 0.5);
    while (gcd_u(st, groups) != 1) ++st;
    return st;
}

sphsim_status device_kernel(cl_program prog, const char *name, cl_kernel *out, sphsim_error *e)
{
    cl_int err;
    *out = clCreateKernel(prog, name, &err);
    if (err != CL_SUCCESS)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "clCreateKernel(%s) failed: %s", name, cl_error_name(err));
    return SPHSIM_OK;
}

sphsim_status device_alloc(ocl_device *d, size_t bytes, const char *what, cl_mem *out, sphsim_error *e)
{
    cl_int err;
    if (bytes == 0) bytes = 16;
    if (bytes > d->max_alloc)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "%s needs %.3g GB in one buffer; %s allows at most %.3g GB", what,
                           bytes / 1e9, d->name, d->max_alloc / 1e9);
    *out = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "allocating %s (%.3g MB) on %s failed: %s", what, bytes / 1e6, d->name,
                           cl_error_name(err));
    d->allocated += bytes;
    return SPHSIM_OK;
}

sphsim_status device_launch(ocl_device *d, cl_kernel k, size_t global, size_t local, cl_event *ev, sphsim_error *e)
{
    if (global == 0) return SPHSIM_OK;
    cl_event own = NULL;
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, local ? &local : NULL, 0, NULL,
                                        (d->prof || ev) ? &own : NULL);
    if (err != CL_SUCCESS) {
        char name[128] = "?";
        clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "launching kernel %s (%zu work-items in groups of %zu) failed: %s", name,
                           global, local, cl_error_name(err));
    }
    if (d->prof) {
        clRetainKernel(k);
        if (ev) clRetainEvent(own);
        prof_push(d->prof, own, k, NULL);
    }
    if (ev) *ev = own;
    return SPHSIM_OK;
}

sphsim_status device_run1d(ocl_device *d, cl_kernel k, size_t n, size_t local, sphsim_error *e)
{
    if (n == 0) return SPHSIM_OK;
    size_t global = local ? (n + local - 1) / local * local : n;
    return device_launch(d, k, global, local, NULL, e);
}

size_t device_strided_groups(const ocl_device *d, size_t n, size_t local)
{
    const size_t groups = (n + local - 1) / local, cap = 16 * (size_t)(d->compute_units ? d->compute_units : 1);
    return groups < cap ? groups : cap;
}

sphsim_status device_run_strided(ocl_device *d, cl_kernel k, size_t n, size_t local, cl_event *ev, sphsim_error *e)
{
    if (n == 0) return SPHSIM_OK;
    return device_launch(d, k, device_strided_groups(d, n, local) * local, local, ev, e);
}

sphsim_status device_write(ocl_device *d, cl_mem buf, size_t offset, size_t bytes, const void *src, sphsim_error *e)
{
    if (bytes == 0) return SPHSIM_OK;
    CL_CHECK(e, clEnqueueWriteBuffer(d->queue, buf, CL_TRUE, offset, bytes, src, 0, NULL, NULL));
    return SPHSIM_OK;
}

sphsim_status device_read(ocl_device *d, cl_mem buf, size_t offset, size_t bytes, void *dst, sphsim_error *e)
{
    if (bytes == 0) return SPHSIM_OK;
    CL_CHECK(e, clEnqueueReadBuffer(d->queue, buf, CL_TRUE, offset, bytes, dst, 0, NULL, NULL));
    return SPHSIM_OK;
}
