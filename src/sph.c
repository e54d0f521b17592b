/* sph: host side of the SPH fluid solver: parameters, particle masses and the hydrostatic initial
 * state, kernels, and the order of the stages (sph_density and sph_boundary, then sph_forces with
 * the fused leapfrog update). The equations are in docs/physics.md. */
#include "sph.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/sph_kernel_fns.h"
#include "jobs.h"

_Static_assert(SPHK_POLY6 == KERNEL_POLY6 && SPHK_CUBIC == KERNEL_CUBIC && SPHK_WENDLAND == KERNEL_WENDLAND,
               "kernel ids of sph_kernel_fns.h must equal scene_kernel");

struct sph_solver {
    ocl_device *d;
    sph_params params;
    cl_program prog_density, prog_forces;
    cl_kernel k_density, k_boundary, k_pressure, k_forces;
    cl_kernel k_list_go;    /* neighbour lists only */
    cl_kernel k_list_check; /* neighbour lists only: the relative-motion check */
    cl_kernel k_cell_refs;  /* neighbour lists only: its first pass, each cell's box */
    int cell_lanes;         /* work-items per cell in sph_cell_refs (cell_lanes) */
    cl_kernel k_forces_alt; /* neighbour lists only: sph_forces with the buffer pairs swapped */
    /* neighbour lists only: the particles over list_cap (kernels/sph_common.h, SPH_LIST_MINE_) */
    cl_kernel k_density_walk, k_boundary_walk, k_forces_walk, k_forces_alt_walk;
    cl_kernel k_density_kept; /* sph_density without the list build, for a step known to keep */
    /* the lists alone, and the walkers' densities after them, for a step known to rebuild
     * (lists_apart) */
    cl_kernel k_lists_build, k_density_walk_built;
    cl_kernel k_cell_fluid; /* neighbour lists only: which cells hold fluid, for the list build */
    cl_mem params_buf;      /* __constant sph_params */
    size_t local;           /* work-group size of the SPH kernels (the host rounds the global size up) */
    /* neighbour lists (sph.h); when off, the kernels get `dummy` for these arguments */
    int lists;
    size_t list_n;                      /* particles the lists hold */
    cl_mem nl_list[SPH_LIST_MAX_PARTS]; /* uint [list_cap][list_part_n] each: the lists of
                                           particles p list_part_n .. (unused parts: dummy) */
    cl_mem nl_count;                    /* uint [n_max] */
    cl_mem pos_ref;                     /* float4 [n_max] */
    cl_mem lstate;                      /* uint [SPH_LSTATE_WORDS]: go word, need, rebuilds, age, skin level,
                          particles over list_cap, the bound on the relative motion, the step's
                          displacement filter and maximum, checks run and skipped
                          (kernels/sph_density.cl) */
    /* the relative-motion check (sph_bind_check): the grid and state it reads; off (0) until
     * bound, or with SPHSIM_LIST_CHECK=0 */
    int check;
    cl_mem check_cs, check_ce, check_gp;
    cl_mem check_cref; /* float4 [n_cells]: each cell's box of displacements (sph_cell_refs) */
    cl_mem cell_fluid; /* uchar [n_cells] of the same grid: CELL_FLUID | CELL_WALL, what the cell holds
                          (sph_cell_fluid), for the list build; NULL when not bound (the build then
                          scans every cell) */
    cl_mem wet;        /* uint [n_cells] of the same grid: the cells with fluid, in some order, and */
    cl_mem wet_n;      /* uint: their number (sph_cell_fluid at each rebuild; the check's kernels
                          take only those cells); dummy until bound */
    size_t check_ncells;
    const dev_state *check_st;
    int swap_on_device;   /* sph_list_go swaps the buffer pairs in steps that keep the grid */
    int skin_levels;      /* levels of the adaptive skin on this device (skin_levels) */
    int known_kept;       /* sph_read_go saw that this step keeps the lists: sph_density_kept */
    int known_rebuild;    /* sph_read_go saw that this step rebuilds them */
    int lists_apart;      /* a known rebuild builds the lists alone (sph_lists_build), then takes
                           the densities from them as a kept step does: GPUs (lists_apart_on) */
    int pack;             /* list entries to a load (-DSPH_LIST_PACK, 1 or 4) */
    int no_walkers;       /* sph_read_go saw this step keep lists that no particle overflows: the
                           _walk kernels, which would return at once, are not launched */
    cl_uint ahead;        /* the density-stage kernels being launched ahead of the decision's read
                           (their `ahead` argument, sph_read_go_ahead) */
    int no_walkers_known; /* sph_read_go_ahead: 1 when the lists in use have no particle over
                           list_cap (read in a step that kept them), so that no _walk kernel is
                           launched ahead; 0 after a rebuild, until the next read */
    cl_uint go_word[6];   /* lstate[0..5] as sph_read_go_ahead reads it, without waiting, when no
                           page-locked buffer could be had */
    cl_mem go_pin;        /* sph_read_go_ahead: 6 uints of page-locked host memory, mapped at go_host,
                           that the read lands in (a read into ordinary memory may be finished
                           by the host only when it waits, holding up the kernels behind it) */
    cl_uint *go_host;
    cl_mem dummy; /* one uint */
};

/* Whether a step the host knows rebuilds the lists builds them alone and then takes the densities
 * from them (sph_lists_build, sph_density_kept), instead of the density in the build's walk
 * (sph_density): on GPUs, where that was 1 % faster on the H200 (the build's loop without the
 * kernel sum: 8.5 + 1.6 against 11.5 ms at 1.4x10^7 particles); on CPUs the build alone saved
 * less than the extra pass cost (PoCL, docs/performance.md, eighth session). Both give the same
 * densities to the bit. SPHSIM_LIST_BUILD=apart or fused overrides it (tests, benchmarks). */
static int lists_apart_on(const ocl_device *d)
{
    const char *v = getenv("SPHSIM_LIST_BUILD");
    if (v && !strcmp(v, "apart")) return 1;
    if (v && !strcmp(v, "fused")) return 0;
    return d->is_gpu;
}

/* The whole number in environment variable `name` if it lies in [lo, hi], else 0 (unset or not
 * such a number). */
static unsigned long env_count(const char *name, unsigned long lo, unsigned long hi)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    const unsigned long l = strtoul(v, &end, 10);
    return *end == '\0' && l >= lo && l <= hi ? l : 0;
}

/* Work-items per cell in the check's first pass (kernels/sph_density.cl, sph_cell_refs): 8 on
 * GPUs, whose lanes of a cell then read consecutive particles (twenty-first session,
 * docs/performance.md), 1 on CPUs, where one work-item's loop over its cell reads them in order
 * and the kernel needs no barrier. SPHSIM_CELL_LANES (1 to 32) overrides it for benchmarks and
 * tests. */
static int cell_lanes(const ocl_device *d)
{
    const unsigned long l = env_count("SPHSIM_CELL_LANES", 1, 32);
    return l ? (int)l : d->is_gpu ? 8 : 1;
}

/* The device is a GPU under NVIDIA's own driver (not a port of its platform name): its compiler
 * takes the -cl-nv-* options, and its native functions were validated (native_math). */
static int nvidia_gpu(const ocl_device *d) { return d->is_gpu && strstr(d->platform_name, "NVIDIA") != NULL; }

/* The pair loops' square root and division as native_sqrt and native_divide
 * (kernels/sph_common.h, SPH_NATIVE_MATH): on NVIDIA's GPUs, where the developed 3D dam break
 * ran 2 % faster with them and the 2D and 3D dam breaks wrote the same files to the bit as
 * without (twenty-first session, docs/performance.md); elsewhere sqrt and /, since OpenCL leaves
 * the native functions' accuracy to the device. SPHSIM_NATIVE_MATH (0 or 1) overrides it. */
static int native_math(const ocl_device *d)
{
    const char *v = getenv("SPHSIM_NATIVE_MATH");
    if (v && (!strcmp(v, "0") || !strcmp(v, "1"))) return v[0] == '1';
    return nvidia_gpu(d);
}

/* The register cap of the kernels of sph_density.cl on NVIDIA's GPUs (-cl-nv-maxrregcount, an
 * option of NVIDIA's compiler alone), 0 for none: 40 there, so that 12 work-groups of 128 share
 * an SM instead of the 11 that sph_lists_build's 44 registers allow. On an H100 the list build
 * ran 3.5 % faster with it and the developed 3D dam break 0.3 % (twenty-third session,
 * docs/performance.md). The file's other kernels that a GPU runs with lists use 40 or fewer
 * registers without it; sph_density (52 with lists), which a GPU runs only when the device
 * decides (SPHSIM_GO_ON_HOST=0) or with SPHSIM_LIST_BUILD=fused, and the cell walk's kernels (a
 * run too large for lists) were not timed with it. sph_forces.cl keeps its 48: caps of 40 to 44
 * made the forces loop 4-22 % slower. Registers change no arithmetic: the same file to the bit.
 * SPHSIM_DENSITY_REGS (0 for none, or 16 to 255) overrides it there, for benchmarks. */
static unsigned density_regs(const ocl_device *d)
{
    if (!nvidia_gpu(d)) return 0; /* other compilers don't take the option */
    const char *v = getenv("SPHSIM_DENSITY_REGS");
    if (v && !strcmp(v, "0")) return 0;
    const unsigned long l = env_count("SPHSIM_DENSITY_REGS", 16, 255);
    return l ? (unsigned)l : 40;
}

/* Work-group size of the SPH kernels: 128 on GPUs (2.2 % less per step than 64 on the H200 over
 * the young and the developed 3D dam break, every SPH loop a little faster; docs/performance.md,
 * eleventh session; the seventh session's code measured no difference), 512 elsewhere (on PoCL
 * with 2 threads, against 64: the 2D dam break at 1.1x10^5 particles 31 % less per step, the 3D
 * one 6-9 % less at 8x10^4 and 2.7x10^5, 2D at 2.5x10^4 the same; twelfth session; 64 and 128
 * had measured the same once the work-groups are spread, see sph_stride).
 * SPHSIM_SPH_LOCAL overrides it for benchmarks. sph_create lowers either to the smallest
 * CL_KERNEL_WORK_GROUP_SIZE of the SPH kernels. */
static size_t sph_local_size(const ocl_device *d)
{
    const unsigned long l = env_count("SPHSIM_SPH_LOCAL", 1, 1024);
    return l ? (size_t)l : d->is_gpu ? 128 : 512;
}

/* Steps x skin at which a neighbour list's rebuild and its longer loops cost the same
 * (set_skin_levels): measured on the H200 (docs/performance.md, "adaptive skin"). */
#define SPH_SKIN_C 2.4

/* Tank-face barrier (docs/physics.md): range d0 = SPH_WALL_D0 dx; stiffness K = (c0 / (2 d0))^2,
 * which stops a particle meeting the face at up to c0 / 2, capped at 1/dt^2 for stability. */
#define SPH_WALL_D0 0.4

/* Adaptive skin (docs/grid.md): level k lists use skin_k = skin / 2^k, k < levels. A step costs
 * its list loops, which grow with the skin, plus a rebuild spread over the L steps the lists
 * last, and L is proportional to skin_k at a given speed; if the loops grew as (1 + skin_k)^3
 * the sum would be least where L = C / skin_k with C = (rebuild) / (3 x loops). The loops gain
 * less from a smaller skin than that (docs/performance.md), so C = SPH_SKIN_C comes from a
 * sweep on the H200 instead (0.3, 0.6, 1.2, 2.4). Lists kept 2 C / skin_k steps move down a
 * level; lists outgrown within C / (4 skin_k) move up (a level's L halves, so the two rules
 * cannot alternate). SPHSIM_SKIN_C overrides C (benchmarks). */
/* The fluid-wall pairs' skin at a list skin sk (scene skin `skin`): listed within support
 * (1 + ws), and a fluid particle may move ws support before the lists go. ws = 2 sk, at most
 * 1/2 + skin, so that two fluid particles in cells three apart (at least 2 support (1 + skin)
 * apart at the build) stay beyond the support (docs/grid.md). */
static double wall_skin(double sk, double skin) { return fmin(2.0 * sk, 0.5 + skin); }

static void set_skin_levels(sph_params *p, double skin, int levels)
{
    const char *cv = getenv("SPHSIM_SKIN_C"); /* benchmarks: another SPH_SKIN_C */
    const double cv_val = cv ? atof(cv) : 0.0, c = cv_val > 0.0 ? cv_val : SPH_SKIN_C;
    const double walk = 0.999 * p->support * skin; /* cells of support (1 + skin): sim.c */
    p->skin_walk2 = (float)(walk * walk);
    for (int k = 0; k < SPH_SKIN_LEVELS; ++k) {
        const double sk = skin / (double)(1 << k), rl = p->support * (1.0 + sk), half = 0.5 * p->support * sk;
        const double l_opt = sk > 0.0 ? c / sk : 0.0;
        const double ws = wall_skin(sk, skin), rw = p->support * (1.0 + ws);
        p->list_radius2[k] = (float)(rl * rl);
        p->wall_radius2[k] = (float)(rw * rw);
        p->skin_half2[k] = (float)(half * half);
        const double full = 0.999 * p->support * sk; /* the 0.1 % margin covers float rounding */
        const double hard = 0.999 * p->support * ws;
        p->skin2[k] = (float)(hard * hard);
        p->skin_rel[k] = (float)full;
        const double shrink = ceil(2.0 * l_opt), grow = floor(0.25 * l_opt); /* clamped to 32 bits */
        p->skin_shrink_age[k] = k + 1 < levels && sk > 0.0 && shrink < 4294967295.0 ? (dev_u32)shrink : 0xffffffffu;
        p->skin_grow_age[k] = k > 0 ? (dev_u32)fmin(grow, 4294967295.0) : 0u;
    }
}

void sph_params_from_scene(const scene *s, sph_params *p)
{
    memset(p, 0, sizeof *p);
    const int dims = s->dims;
    const double h = s->h;
    p->h = (float)h;
    p->h_inv = (float)(1.0 / h);
    p->support = (float)(2.0 * h);
    p->support2 = (float)(4.0 * h * h);
    p->w_norm = (float)sphk_norm_w((int)s->kernel, dims, h);
    p->f_norm = (float)sphk_norm_f((int)s->kernel, dims, h);
    p->lap_norm = (float)sphk_norm_lap(dims, h);
    p->rho0 = (float)s->rest_density;
    if (s->eos == EOS_LINEAR) {
        p->eos_k = (float)s->stiffness;
        p->gamma = 1.0f;
        p->c0 = (float)sqrt(s->stiffness); /* sound speed of p = k (rho - rho0) */
    } else {
        p->gamma = (float)s->gamma;
        p->eos_k = (float)(s->rest_density * s->sound_speed * s->sound_speed / s->gamma); /* B, Pa */
        p->c0 = (float)s->sound_speed;
    }
    p->alpha = (float)s->alpha;
    p->mu = (float)s->mu;
    p->eta2 = (float)(0.01 * h * h);
    for (int k = 0; k < 3; ++k) {
        p->gravity[k] = k < dims ? (float)s->gravity[k] : 0.0f;
        p->tank_min[k] = k < dims ? (float)s->tank.min[k] : 0.0f;
        p->tank_max[k] = k < dims ? (float)s->tank.max[k] : 0.0f;
    }
    p->dt = (float)s->dt;
    const double v2 = s->max_speed * s->max_speed;
    p->max_speed2 = (s->max_speed > 0.0 && v2 < FLT_MAX) ? (float)v2 : FLT_MAX;
    const double d0 = SPH_WALL_D0 * s->spacing, omega = 0.5 * p->c0 / d0; /* 1/s */
    p->wall_d0 = (float)d0;
    p->wall_k = (float)(s->dt > 0.0 ? fmin(omega * omega, 1.0 / (s->dt * s->dt)) : omega * omega);
    p->dims = (dev_u32)dims;
    /* sph_set_masses sets both before the first step; until then NaN, so that a step without
     * them fails (FLAG_NONFINITE) instead of running without pressure or viscosity */
    p->mass_fluid = p->mass_wall = NAN;
    set_skin_levels(p, s->skin, 1); /* the fixed skin; sph_create sets the device's levels */
    p->list_cap = 0;                /* set by sph_create */
}

/* Skin levels on a device: all of them on GPUs, where the cost model was measured; 1 (the
 * scene's skin, as before the adaptive skin) on CPU devices, where it was not (one PoCL run of
 * the 3D dam break took 5 % longer with it). SPHSIM_SKIN_LEVELS (1-4) overrides it. */
static int skin_levels(const ocl_device *d)
{
    const char *v = getenv("SPHSIM_SKIN_LEVELS");
    if (v && v[0] >= '1' && v[0] < '1' + SPH_SKIN_LEVELS && !v[1]) return v[0] - '0';
    return d->is_gpu ? SPH_SKIN_LEVELS : 1;
}

unsigned sph_list_cap(const scene *s)
{
    /* particles of a lattice of spacing dx within support (1 + skin), or for fluid in a corner
     * of the tank, one 2^d-th of that and the rest walls within the walls' wider radius (support
     * (1 + wall_skin), level 0's), whichever is more, plus 20 % for compression and irregular
     * packing, rounded up to a multiple of 4 */
    const double r = 2.0 * s->h * (1.0 + s->skin) / s->spacing;
    const double rw = 2.0 * s->h * (1.0 + wall_skin(s->skin, s->skin)) / s->spacing;
    const double vr = s->dims == 3 ? 4.0 / 3.0 * M_PI * r * r * r : M_PI * r * r;
    const double vw = s->dims == 3 ? 4.0 / 3.0 * M_PI * rw * rw * rw : M_PI * rw * rw;
    const double corners = s->dims == 3 ? 8.0 : 4.0;
    const double expect = fmax(vr, (vr + (corners - 1.0) * vw) / corners);
    const double cap = ceil((1.2 * expect + 8.0) / 4.0) * 4.0;
    return cap < 4096.0 ? (unsigned)cap : 4096u;
}

/* Particles per part of the lists of n particles over `parts` buffers (the last may hold fewer). */
static size_t list_part_n(size_t n, unsigned parts) { return (n + parts - 1) / parts; }

unsigned sph_list_parts(size_t n, unsigned cap, unsigned long long max_alloc)
{
    unsigned parts = 1;
    const char *v = getenv("SPHSIM_LIST_PARTS");
    if (v && *v >= '1' && *v <= '0' + SPH_LIST_MAX_PARTS && v[1] == '\0') parts = (unsigned)(*v - '0');
    while (parts <= SPH_LIST_MAX_PARTS && (unsigned long long)list_part_n(n, parts) * cap * 4 > max_alloc) ++parts;
    return parts <= SPH_LIST_MAX_PARTS ? parts : 0;
}

int sph_list_buffers_fit(size_t n, unsigned cap, unsigned long long max_alloc)
{
    return sph_list_parts(n, cap, max_alloc) != 0 && (unsigned long long)n * sph_pos_p_bytes(1) <= max_alloc &&
           n <= 0x7fffffffu;
}

size_t sph_list_bytes(const scene *s, size_t n, unsigned long long max_alloc)
{
    const unsigned cap = sph_list_cap(s);
    const unsigned parts = max_alloc ? sph_list_parts(n, cap, max_alloc) : 1;
    const size_t rows = parts ? (size_t)parts * list_part_n(n, parts) : n; /* particles' lists allocated */
    /* the entries, each particle's count and build position, the wider pos_p, and the list
     * state (lstate) */
    return rows * cap * 4 + n * (4 + 16 + sph_pos_p_bytes(1) - sph_pos_p_bytes(0)) + SPH_LSTATE_WORDS * 4;
}

size_t sph_pos_p_bytes(int lists) { return lists ? 32 : 16; }

double sph_lattice_sum(int kernel, int dims, double h, double dx)
{
    const int R = (int)ceil(2.0 * h / dx) + 1;
    const int Rz = dims == 3 ? R : 0;
    double sum = 0.0;
    for (int k = -Rz; k <= Rz; ++k)
        for (int j = -R; j <= R; ++j)
            for (int i = -R; i <= R; ++i) {
                const double r = dx * sqrt((double)(i * i + j * j + k * k));
                sum += sphk_w(kernel, dims, h, r);
            }
    return sum;
}

/* Pressure (Pa, >= 0) of the scene's EOS at density rho, and its inverse (double). */
static double eos_p(const scene *s, double rho)
{
    if (rho <= s->rest_density) return 0.0;
    if (s->eos == EOS_LINEAR) return s->stiffness * (rho - s->rest_density);
    return s->rest_density * s->sound_speed * s->sound_speed / s->gamma * (pow(rho / s->rest_density, s->gamma) - 1.0);
}

static double eos_rho(const scene *s, double p)
{
    if (s->eos == EOS_LINEAR) return s->rest_density + p / s->stiffness;
    return s->rest_density *
           pow(1.0 + p * s->gamma / (s->rest_density * s->sound_speed * s->sound_speed), 1.0 / s->gamma);
}

/* Lattice sum of W with spacing dx on every axis but `axis`, where it is lambda dx (1/m^dims). */
static double lattice_sum_squeezed(int kernel, int dims, double h, double dx, int axis, double lambda)
{
    const int R = (int)ceil(2.0 * h / (lambda * dx)) + 1;
    const int Rz = dims == 3 ? R : 0;
    double sum = 0.0;
    for (int k = -Rz; k <= Rz; ++k)
        for (int j = -R; j <= R; ++j)
            for (int i = -R; i <= R; ++i) {
                double c[3] = { i * dx, j * dx, k * dx };
                c[axis] *= lambda;
                sum += sphk_w(kernel, dims, h, sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]));
            }
    return sum;
}

/* One fluid particle of a column in hydrostatic_init: its coordinate along "up" (against
 * gravity, m) and its index. */
typedef struct col_entry {
    double up;
    uint32_t i;
} col_entry;

static int col_cmp(const void *a, const void *b)
{
    const col_entry *x = a, *y = b;
    return (x->up > y->up) - (x->up < y->up);
}

#define SQUEEZE_TABLE 201

/* The lattice indices of fluid particle i on the axes across gravity (axis ga; 0 for the
 * missing axis in 2D). */
static void column_key(const scene *s, const particles *p, size_t i, int ga, long key[2])
{
    int q = 0;
    key[0] = key[1] = 0;
    for (int a = 0; a < s->dims; ++a)
        if (a != ga) key[q++] = lround((p->pos[4 * i + a] - s->tank.min[a]) / s->spacing - 0.5);
}

/* One thread's columns c0 .. c1-1 of hydrostatic_init. */
typedef struct squeeze_job {
    const scene *s;
    particles *p;
    const uint32_t *idx; /* fluid particles by column: column c is idx[col_start[c] .. col_start[c + 1]) */
    const size_t *col_start;
    size_t c0, c1;
    const double *lam, *rho_of; /* the squeeze table */
    int ga;                     /* the gravity axis */
    double dir, floor_up;       /* up = dir * x[ga]; the floor's "up" */
    int failed;                 /* out of memory */
} squeeze_job;

/* The squeeze of a run of N particles from its bottom: particle k moves up by dup[k] from the
 * one below (from the floor for k = 0) and gets density rho[k] and pressure pr[k]. The same for
 * every run of N, so each thread computes it once per N (three pow() per particle were most of
 * the set-up time at 10^9 particles). */
typedef struct run_profile {
    size_t N, cap;
    double *dup;
    float *rho, *pr;
} run_profile;

static int run_profile_get(const squeeze_job *jb, size_t N, run_profile *rp)
{
    if (rp->N == N) return 0;
    if (N > rp->cap) {
        free(rp->dup);
        free(rp->rho);
        free(rp->pr);
        rp->cap = 2 * N;
        rp->dup = malloc(rp->cap * sizeof *rp->dup);
        rp->rho = malloc(rp->cap * sizeof *rp->rho);
        rp->pr = malloc(rp->cap * sizeof *rp->pr);
        if (!rp->dup || !rp->rho || !rp->pr) {
            rp->N = rp->cap = 0;
            return -1;
        }
    }
    const scene *s = jb->s;
    const double dx = s->spacing, g = fabs(s->gravity[jb->ga]);
    for (size_t k = 0; k < N; ++k) {
        /* spacing below particle k at the depth halfway down to its lower neighbour (or floor) */
        const double depth_mid = k == 0 ? (N - 0.25) * dx : (N - k) * dx;
        const double depth = (N - k - 0.5) * dx;
        const double rho_mid = eos_rho(s, s->rest_density * g * depth_mid);
        /* lambda with m S(lambda) = rho_mid, by linear interpolation in the table */
        double l = jb->lam[SQUEEZE_TABLE - 1];
        for (int t = 1; t < SQUEEZE_TABLE; ++t)
            if (jb->rho_of[t] >= rho_mid) {
                const double f = (rho_mid - jb->rho_of[t - 1]) / (jb->rho_of[t] - jb->rho_of[t - 1]);
                l = jb->lam[t - 1] + f * (jb->lam[t] - jb->lam[t - 1]);
                break;
            }
        /* the first row keeps the squeezed spacing to the first boundary layer (at -dx/2) */
        rp->dup[k] = k == 0 ? dx * (l - 0.5) : dx * l;
        rp->rho[k] = (float)eos_rho(s, s->rest_density * g * depth);
        rp->pr[k] = (float)eos_p(s, rp->rho[k]);
    }
    rp->N = N;
    return 0;
}

static void *squeeze_columns(void *arg)
{
    squeeze_job *jb = arg;
    particles *p = jb->p;
    const double dx = jb->s->spacing;
    col_entry *c = NULL;
    size_t cap = 0;
    run_profile rp = { 0 };
    for (size_t col = jb->c0; col < jb->c1 && !jb->failed; ++col) {
        const size_t first = jb->col_start[col], nc = jb->col_start[col + 1] - first;
        if (nc == 0) continue;
        if (nc > cap) {
            free(c);
            cap = 2 * nc;
            if (!(c = malloc(cap * sizeof *c))) {
                jb->failed = 1;
                break;
            }
        }
        for (size_t k = 0; k < nc; ++k) {
            const uint32_t i = jb->idx[first + k];
            c[k] = (col_entry){ jb->dir * p->pos[4 * (size_t)i + jb->ga], i };
        }
        size_t in_order = 1;
        while (in_order < nc && col_cmp(&c[in_order - 1], &c[in_order]) <= 0) ++in_order;
        if (in_order < nc) qsort(c, nc, sizeof *c, col_cmp); /* (a lattice block comes in order already) */
        for (size_t r0 = 0, r1; r0 < nc; r0 = r1) {
            /* a run: successive particles at most 1.5 dx apart */
            for (r1 = r0 + 1; r1 < nc; ++r1)
                if (c[r1].up - c[r1 - 1].up > 1.5 * dx) break;
            if (c[r0].up - jb->floor_up > dx) continue; /* not resting on the floor */
            const size_t N = r1 - r0;
            if (run_profile_get(jb, N, &rp) != 0) {
                jb->failed = 1;
                break;
            }
            double up = jb->floor_up;
            for (size_t k = 0; k < N; ++k) {
                up += rp.dup[k];
                const size_t i = c[r0 + k].i;
                p->pos[4 * i + jb->ga] = (float)(jb->dir * up);
                p->rho[i] = rp.rho[k];
                p->pressure[i] = rp.pr[k];
            }
        }
    }
    free(c);
    free(rp.dup);
    free(rp.rho);
    free(rp.pr);
    return NULL;
}

/* One thread's share of the column pass of hydrostatic_init: for particles lo .. hi-1, the
 * range of the lattice keys across gravity of the fluid ones (kmin, kmax), or, once those are
 * known, the column of each (col[i]; UINT32_MAX for the others). */
typedef struct column_job {
    const scene *s;
    const particles *p;
    int ga;
    size_t lo, hi;
    long kmin[2], kmax[2];
    uint32_t *col; /* NULL: the range pass */
    long width0;   /* columns along the first key */
} column_job;

static void *column_pass(void *arg)
{
    column_job *j = arg;
    for (size_t i = j->lo; i < j->hi; ++i) {
        if (j->p->type[i] != PTYPE_FLUID) {
            if (j->col) j->col[i] = UINT32_MAX;
            continue;
        }
        long key[2];
        column_key(j->s, j->p, i, j->ga, key);
        if (j->col) {
            j->col[i] = (uint32_t)((key[0] - j->kmin[0]) + j->width0 * (key[1] - j->kmin[1]));
            continue;
        }
        for (int q = 0; q < 2; ++q) {
            if (key[q] < j->kmin[q]) j->kmin[q] = key[q];
            if (key[q] > j->kmax[q]) j->kmax[q] = key[q];
        }
    }
    return NULL;
}

/* Hydrostatic initial state (docs/physics.md, "initial state"): every vertical run of fluid
 * particles that rests on the tank floor is compressed along gravity so that the kernel sum on the
 * squeezed lattice gives the density whose EOS pressure is rho0 |g| depth. Without it the fluid
 * starts at p = 0, falls, and overshoots to about twice the hydrostatic pressure. Only when gravity
 * lies along one axis; runs not touching the floor (falling fluid) are left as they are. */
static sphsim_status hydrostatic_init(const scene *s, particles *p, double m, sphsim_error *e)
{
    const int dims = s->dims;
    int ga = -1;
    for (int a = 0; a < dims; ++a)
        if (s->gravity[a] != 0.0) {
            if (ga >= 0) return SPHSIM_OK; /* gravity not along one axis: start at p = 0 */
            ga = a;
        }
    if (ga < 0 || p->n_fluid == 0) return SPHSIM_OK;
    const double dir = s->gravity[ga] < 0 ? 1.0 : -1.0; /* up = dir * x[ga] */
    const double dx = s->spacing;
    const double floor_up = dir > 0 ? s->tank.min[ga] : -s->tank.max[ga];

    /* density on a lattice squeezed along gravity by lambda in [0.9, 1] */
    double lam[SQUEEZE_TABLE], rho_of[SQUEEZE_TABLE];
    for (int k = 0; k < SQUEEZE_TABLE; ++k) {
        lam[k] = 1.0 - 0.1 * k / (SQUEEZE_TABLE - 1);
        rho_of[k] = m * lattice_sum_squeezed((int)s->kernel, dims, s->h, dx, ga, lam[k]);
        if (k > 0 && !(rho_of[k] > rho_of[k - 1])) return SPHSIM_OK; /* not monotonic: leave unsqueezed */
    }

    /* The fluid particles grouped by column (a counting sort on the lattice indices across
     * gravity, in index order), then each column sorted along "up" on its own, the columns spread
     * over threads: 8 bytes per particle (each one's column, and the fluid by column) and O(n) time,
     * where one sort of all of them took 32 bytes per particle and O(n log n) on one thread
     * (docs/performance.md, the largest run). The column keys are computed twice (their range,
     * then the columns), which costs less than keeping them. */
    const unsigned t = jobs_threads(p->n, "SPHSIM_INIT_THREADS", 1, JOBS_MAX);
    column_job cj[JOBS_MAX];
    for (unsigned j = 0; j < t; ++j)
        cj[j] =
            (column_job){ s,    p, ga, p->n * j / t, p->n * (j + 1) / t, { LONG_MAX, LONG_MAX }, { LONG_MIN, LONG_MIN },
                          NULL, 0 };
    jobs_run(column_pass, cj, sizeof *cj, t);
    long kmin[2] = { LONG_MAX, LONG_MAX }, kmax[2] = { LONG_MIN, LONG_MIN };
    for (unsigned j = 0; j < t; ++j)
        for (int q = 0; q < 2; ++q) {
            if (cj[j].kmin[q] < kmin[q]) kmin[q] = cj[j].kmin[q];
            if (cj[j].kmax[q] > kmax[q]) kmax[q] = cj[j].kmax[q];
        }
    const double width0 = (double)(kmax[0] - kmin[0]) + 1.0, width1 = (double)(kmax[1] - kmin[1]) + 1.0;
    /* the fluid lies in the tank, so its columns are at most the tank's: fewer than its wall
     * particles */
    if (!(width0 * width1 <= (double)p->n + 1.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "fluid.blocks: the fluid spans %.3g lattice columns, more than the %zu particles",
                           width0 * width1, p->n);
    const size_t ncol = (size_t)width0 * (size_t)width1;
    size_t *col_start = calloc(ncol + 1, sizeof *col_start);
    uint32_t *idx = malloc((p->n_fluid ? p->n_fluid : 1) * sizeof *idx);
    uint32_t *col = malloc((p->n ? p->n : 1) * sizeof *col);
    if (!col_start || !idx || !col) {
        free(col_start);
        free(idx);
        free(col);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the hydrostatic initial state");
    }
    for (unsigned j = 0; j < t; ++j) {
        memcpy(cj[j].kmin, kmin, sizeof kmin);
        cj[j].col = col;
        cj[j].width0 = (long)width0;
    }
    jobs_run(column_pass, cj, sizeof *cj, t);
    for (size_t i = 0; i < p->n; ++i)
        if (col[i] != UINT32_MAX) ++col_start[col[i] + 1];
    for (size_t k = 0; k < ncol; ++k) col_start[k + 1] += col_start[k];
    for (size_t i = 0; i < p->n; ++i)
        if (col[i] != UINT32_MAX) idx[col_start[col[i]]++] = (uint32_t)i;
    free(col);
    for (size_t k = ncol; k > 0; --k) col_start[k] = col_start[k - 1]; /* the scatter moved each start to its end */
    col_start[0] = 0;

    squeeze_job jobs[JOBS_MAX];
    for (unsigned j = 0; j < t; ++j)
        jobs[j] =
            (squeeze_job){ s, p, idx, col_start, ncol * j / t, ncol * (j + 1) / t, lam, rho_of, ga, dir, floor_up, 0 };
    jobs_run(squeeze_columns, jobs, sizeof *jobs, t);
    int failed = 0;
    for (unsigned j = 0; j < t; ++j) failed |= jobs[j].failed;
    free(col_start);
    free(idx);
    if (failed) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the hydrostatic initial state");
    return SPHSIM_OK;
}

sphsim_status sph_prepare(const scene *s, particles *p, sphsim_error *e)
{
    if (s->dims != 2 && s->dims != 3)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "dimensions: expected 2 or 3, got %d", s->dims);
    if (!(s->spacing > 0.0) || !(s->h > 0.0) || !(s->rest_density > 0.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "fluid: spacing, smoothing length and rest density must be > 0");
    /* Fluid and boundary particles sit on one lattice of spacing dx; m = rho0 / sum_lattice W
     * makes the kernel sum on that lattice exactly rho0 (docs/physics.md, "particle mass"). */
    const double S = sph_lattice_sum((int)s->kernel, s->dims, s->h, s->spacing);
    if (!(S > 0.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "fluid.smoothing_length: the kernel sum on the lattice is zero");
    const double m = s->rest_density / S;
    /* init.c spreads the wall lattice to fit the tank exactly (n_a = round(width_a / dx) cells of
     * width_a / n_a); a boundary particle's mass follows its volume so that the walls carry the
     * fluid's mass density. */
    double vol_ratio = 1.0;
    for (int a = 0; a < s->dims; ++a) {
        const double w = s->tank.max[a] - s->tank.min[a];
        double n_a = floor(w / s->spacing + 0.5);
        if (n_a < 1.0) n_a = 1.0;
        vol_ratio *= w / n_a / s->spacing;
    }
    for (size_t i = 0; i < p->n; ++i)
        if (p->type[i] == PTYPE_FLUID || p->type[i] == PTYPE_BOUNDARY) {
            p->mass[i] = (float)(p->type[i] == PTYPE_FLUID ? m : m * vol_ratio);
            p->rho[i] = (float)s->rest_density;
            p->pressure[i] = 0.0f;
        }
    return hydrostatic_init(s, p, m, e);
}

/* Every kernel of the solver (NULL where not created: without lists, or after a failed
 * sph_create), for sph_destroy and the work-group size. */
#define SPH_KERNELS 16
static void solver_kernels(const sph_solver *s, cl_kernel ks[SPH_KERNELS])
{
    const cl_kernel all[SPH_KERNELS] = { s->k_density,       s->k_boundary,    s->k_pressure,
                                         s->k_forces,        s->k_list_go,     s->k_list_check,
                                         s->k_cell_refs,     s->k_forces_alt,  s->k_density_walk,
                                         s->k_boundary_walk, s->k_forces_walk, s->k_forces_alt_walk,
                                         s->k_density_kept,  s->k_lists_build, s->k_density_walk_built,
                                         s->k_cell_fluid };
    memcpy(ks, all, sizeof all);
}

sphsim_status sph_create(sph_solver **out, ocl_device *d, const scene *sc, size_t list_n, sphsim_error *e)
{
    *out = NULL;
    if (sc->dims != 2 && sc->dims != 3)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "dimensions: expected 2 or 3, got %d", sc->dims);
    sph_solver *s = calloc(1, sizeof *s);
    if (!s) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    s->d = d;
    s->local = sph_local_size(d);
    sph_params_from_scene(sc, &s->params);
    s->skin_levels = skin_levels(d);
    set_skin_levels(&s->params, sc->skin, s->skin_levels);
    s->lists = list_n > 0;
    s->list_n = list_n;
    s->swap_on_device = 0; /* sim.c turns it on when the device decides (SPHSIM_GO_ON_HOST=0) */
    s->lists_apart = lists_apart_on(d);
    if (s->lists) s->params.list_cap = sph_list_cap(sc);
    static const char *kernel_opt[] = { "KERNEL_POLY6", "KERNEL_CUBIC", "KERNEL_WENDLAND" };
    /* SPHSIM_SPH_OPTIONS, a developers' knob for benchmarks (docs/performance.md), appends build
     * options such as -DSPH_FORCES_PLAIN (kernels/sph_common.h). */
    const char *extra = getenv("SPHSIM_SPH_OPTIONS");
    char opts[512];
    /* list entries one (CPUs) or four (GPUs) to a load, kernels/sph_common.h; SPHSIM_LIST_PACK
     * (1 or 4) overrides it for benchmarks */
    const char *pack_env = getenv("SPHSIM_LIST_PACK");
    const int pack = pack_env && (!strcmp(pack_env, "1") || !strcmp(pack_env, "4")) ? atoi(pack_env)
                     : d->is_gpu                                                    ? 4
                                                                                    : 1;
    s->pack = pack;
    char list_opt[128] = "";
    const unsigned parts = s->lists ? sph_list_parts(list_n, s->params.list_cap, d->max_alloc) : 0;
    if (s->lists && parts == 0) {
        const unsigned cap = s->params.list_cap;
        free(s);
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "the neighbour lists of %zu particles (%u entries each) exceed %d buffers of %.3g GB",
                           list_n, cap, SPH_LIST_MAX_PARTS, d->max_alloc / 1e9);
    }
    s->cell_lanes = cell_lanes(d);
    if (s->lists)
        snprintf(list_opt, sizeof list_opt,
                 " -DSPH_LIST -DSPH_NB_REC -DSPH_LIST_PACK=%d -DSPH_LIST_PARTS=%u -DSPH_CELL_LANES=%d", pack, parts,
                 s->cell_lanes);
    snprintf(opts, sizeof opts, "-DDIMS=%d -D%s -D%s -D%s%s%s %s", sc->dims, kernel_opt[sc->kernel],
             sc->eos == EOS_LINEAR ? "EOS_LINEAR" : "EOS_TAIT",
             sc->visc == VISC_LAPLACIAN ? "VISC_LAPLACIAN" : "VISC_ARTIFICIAL", list_opt,
             native_math(d) ? " -DSPH_NATIVE_MATH" : "", extra ? extra : "");
    char dopts[600];
    const unsigned regs = density_regs(d);
    if (regs) snprintf(dopts, sizeof dopts, "%s -cl-nv-maxrregcount=%u", opts, regs);
    else snprintf(dopts, sizeof dopts, "%s", opts);
    sphsim_status st;
    if ((st = device_build(d, "sph_density.cl", dopts, &s->prog_density, e)) != SPHSIM_OK ||
        (st = device_build(d, "sph_forces.cl", opts, &s->prog_forces, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_density, "sph_density", &s->k_density, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_density, "sph_boundary", &s->k_boundary, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_density, "sph_pressure", &s->k_pressure, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_forces, "sph_forces", &s->k_forces, e)) != SPHSIM_OK ||
        (st = device_alloc(d, sizeof s->params, "SPH parameters", &s->params_buf, e)) != SPHSIM_OK ||
        (st = device_write(d, s->params_buf, 0, sizeof s->params, &s->params, e)) != SPHSIM_OK ||
        (st = device_alloc(d, 4, "SPH unused argument", &s->dummy, e)) != SPHSIM_OK) {
        sph_destroy(s);
        return st;
    }
    if (s->lists) {
        /* go = need = 1: the first step builds the lists (and sph_enqueue, which never runs
         * sph_list_go, rebuilds them every time) */
        /* no bound on the relative motion, no displacement written (the filter +inf) until
         * sph_list_go sets it */
        const cl_uint inf = 0x7f800000u;
        const cl_uint init[SPH_LSTATE_WORDS] = { GO_REBUILD, NEED_HARD, 0, 0, 0, 0, inf, inf, 0, 0, 0, 0 };
        const size_t part_n = list_part_n(list_n, parts);
        s->params.list_part_n = (dev_u32)part_n;
        for (unsigned k = 0; k < parts; ++k)
            if ((st = device_alloc(d, part_n * s->params.list_cap * 4, "SPH neighbour lists", &s->nl_list[k], e)) !=
                SPHSIM_OK) {
                sph_destroy(s);
                return st;
            }
        for (unsigned k = parts; k < SPH_LIST_MAX_PARTS; ++k) {
            s->nl_list[k] = s->dummy;
            clRetainMemObject(s->dummy);
        }
        if ((st = device_write(d, s->params_buf, 0, sizeof s->params, &s->params, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_list_go", &s->k_list_go, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_list_check", &s->k_list_check, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_cell_refs", &s->k_cell_refs, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_cell_fluid", &s->k_cell_fluid, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_forces, "sph_forces_alt", &s->k_forces_alt, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_density_walk", &s->k_density_walk, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_density_kept", &s->k_density_kept, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_lists_build", &s->k_lists_build, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_density_walk_built", &s->k_density_walk_built, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_density, "sph_boundary_walk", &s->k_boundary_walk, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_forces, "sph_forces_walk", &s->k_forces_walk, e)) != SPHSIM_OK ||
            (st = device_kernel(s->prog_forces, "sph_forces_alt_walk", &s->k_forces_alt_walk, e)) != SPHSIM_OK ||
            (st = device_alloc(d, list_n * 4, "SPH neighbour counts", &s->nl_count, e)) != SPHSIM_OK ||
            (st = device_alloc(d, list_n * 16, "SPH list positions", &s->pos_ref, e)) != SPHSIM_OK ||
            (st = device_alloc(d, sizeof init, "SPH list state", &s->lstate, e)) != SPHSIM_OK ||
            (st = device_write(d, s->lstate, 0, sizeof init, init, e)) != SPHSIM_OK) {
            sph_destroy(s);
            return st;
        }
    }
    /* no larger than any SPH kernel allows (each at most the device's largest group): a
     * register-heavy kernel may take fewer work-items than that on some GPUs */
    cl_kernel ks[SPH_KERNELS];
    solver_kernels(s, ks);
    for (size_t k = 0; k < SPH_KERNELS; ++k) {
        size_t m = 0;
        if (ks[k] &&
            clGetKernelWorkGroupInfo(ks[k], d->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof m, &m, NULL) == CL_SUCCESS &&
            m > 0 && m < s->local)
            s->local = m;
    }
    *out = s;
    return SPHSIM_OK;
}

void sph_destroy(sph_solver *s)
{
    if (!s) return;
    cl_kernel ks[SPH_KERNELS];
    solver_kernels(s, ks);
    for (int k = 0; k < SPH_KERNELS; ++k)
        if (ks[k]) clReleaseKernel(ks[k]);
    if (s->go_pin) {
        if (s->go_host) clEnqueueUnmapMemObject(s->d->queue, s->go_pin, s->go_host, 0, NULL, NULL);
        clFinish(s->d->queue);
        clReleaseMemObject(s->go_pin);
    }
    if (s->check_cref) clReleaseMemObject(s->check_cref);
    if (s->cell_fluid) clReleaseMemObject(s->cell_fluid);
    if (s->wet) clReleaseMemObject(s->wet);
    if (s->wet_n) clReleaseMemObject(s->wet_n);
    for (int k = 0; k < SPH_LIST_MAX_PARTS; ++k)
        if (s->nl_list[k]) clReleaseMemObject(s->nl_list[k]);
    cl_mem ms[4] = { s->nl_count, s->pos_ref, s->lstate, s->dummy };
    for (int k = 0; k < 4; ++k)
        if (ms[k]) clReleaseMemObject(ms[k]);
    if (s->prog_density) clReleaseProgram(s->prog_density);
    if (s->prog_forces) clReleaseProgram(s->prog_forces);
    if (s->params_buf) clReleaseMemObject(s->params_buf);
    free(s);
}

const sph_params *sph_get_params(const sph_solver *s) { return &s->params; }

static unsigned gcd_u(unsigned a, unsigned b)
{
    while (b) {
        const unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The work-group spread of sph_item (kernels/sph_common.h) for n particles: 1 on GPUs; on CPUs
 * the integer nearest 0.618 G (G work-groups) that is coprime to G, so that the blocks taken by
 * consecutive work-groups step through the index range by the golden ratio. */
static cl_uint sph_stride(const sph_solver *s, cl_uint n)
{
    if (s->d->is_gpu) return 1;
    const unsigned groups = (unsigned)((n + s->local - 1) / s->local);
    if (groups <= 2) return 1;
    unsigned st = (unsigned)(0.6180339887 * groups + 0.5);
    while (gcd_u(st, groups) != 1) ++st;
    return st;
}

/* The list parts, arguments first .. first + SPH_LIST_MAX_PARTS - 1 of k (dummy without lists). */
static sphsim_status set_list_args(sph_solver *s, cl_kernel k, cl_uint first, sphsim_error *e)
{
    for (cl_uint p = 0; p < SPH_LIST_MAX_PARTS; ++p) {
        cl_mem m = s->lists ? s->nl_list[p] : s->dummy;
        DEVICE_ARG(e, k, first + p, m);
    }
    return SPHSIM_OK;
}

/* Launch an SPH kernel over n particles: one work-item each, or for a _walk kernel (the
 * particles over list_cap, usually none) a few work-groups that loop over them. */
static sphsim_status run_sph_kernel(sph_solver *s, cl_kernel k, int walk, size_t n, sphsim_error *e)
{
    return walk ? device_run_strided(s->d, k, n, s->local, NULL, e) : device_run1d(s->d, k, n, s->local, e);
}

/* sph_density and sph_boundary take the same first arguments; sph_density (`density`) also the
 * list build's outputs (it builds the lists in a rebuild step). Both take the second buffer pair
 * and the go word last. Set them on `k` and launch it. */
static sphsim_status run_density_stage(sph_solver *s, cl_kernel k, int density, int walk, cl_uint n, cl_mem cell_start,
                                       cl_mem cell_end, cl_mem grid_params_buf, dev_state *st, sphsim_error *e)
{
    DEVICE_ARG(e, k, 0, n);
    DEVICE_ARG(e, k, 1, st->pos);
    DEVICE_ARG(e, k, 2, st->vel);
    DEVICE_ARG(e, k, 3, st->type);
    DEVICE_ARG(e, k, 4, cell_start);
    DEVICE_ARG(e, k, 5, cell_end);
    DEVICE_ARG(e, k, 6, grid_params_buf);
    DEVICE_ARG(e, k, 7, s->params_buf);
    DEVICE_ARG(e, k, 8, st->pos_p);
    SPHSIM_TRY(set_list_args(s, k, 9, e));
    cl_mem nl_count = s->lists ? s->nl_count : s->dummy;
    DEVICE_ARG(e, k, 9 + SPH_LIST_MAX_PARTS, nl_count);
    cl_mem lstate = s->lists ? s->lstate : s->dummy;
    if (density) {
        cl_mem pos_ref = s->lists ? s->pos_ref : s->dummy;
        DEVICE_ARG(e, k, 10 + SPH_LIST_MAX_PARTS, pos_ref);
        DEVICE_ARG(e, k, 11 + SPH_LIST_MAX_PARTS, lstate);
    }
    const cl_uint stride = sph_stride(s, n), a = (density ? 12 : 10) + SPH_LIST_MAX_PARTS;
    DEVICE_ARG(e, k, a, stride);
    DEVICE_ARG(e, k, a + 1, st->pos_next);
    DEVICE_ARG(e, k, a + 2, st->vel_next);
    if (!density) {
        DEVICE_ARG(e, k, a + 3, lstate);
        DEVICE_ARG(e, k, a + 4, s->ahead);
    }
    if (density) {
        const cl_uint use_cf = s->cell_fluid != NULL;
        cl_mem cf = use_cf ? s->cell_fluid : s->dummy;
        DEVICE_ARG(e, k, a + 3, cf);
        DEVICE_ARG(e, k, a + 4, use_cf);
        DEVICE_ARG(e, k, a + 5, s->ahead);
    }
    return run_sph_kernel(s, k, walk, st->n, e);
}

int sph_lists(const sph_solver *s) { return s->lists; }
cl_mem sph_go_buffer(const sph_solver *s) { return s->lists ? s->lstate : NULL; }

void sph_set_swap_on_device(sph_solver *s, int on) { s->swap_on_device = on != 0; }

sphsim_status sph_bind_check(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, size_t n_cells,
                             const dev_state *st, sphsim_error *e)
{
    const char *v = getenv("SPHSIM_LIST_CHECK");
    s->check = s->lists && !(v && !strcmp(v, "0"));
    s->check_cs = cell_start;
    s->check_ce = cell_end;
    s->check_gp = grid_params_buf;
    s->check_st = st;
    if (s->check_cref) clReleaseMemObject(s->check_cref);
    if (s->cell_fluid) clReleaseMemObject(s->cell_fluid);
    if (s->wet) clReleaseMemObject(s->wet);
    if (s->wet_n) clReleaseMemObject(s->wet_n);
    s->check_cref = s->cell_fluid = s->wet = s->wet_n = NULL;
    s->check_ncells = n_cells;
    /* a grid whose boxes exceed the largest buffer runs without the check (a soft need then
     * rebuilds, as before it) and without the cells' fluid flags (every cell is scanned) */
    if (!s->lists || 16.0 * (double)n_cells > (double)s->d->max_alloc) {
        s->check = 0;
        return SPHSIM_OK;
    }
    const size_t cells = n_cells ? n_cells : 1;
    SPHSIM_TRY(device_alloc(s->d, cells, "SPH cells' fluid flags (list build)", &s->cell_fluid, e));
    SPHSIM_TRY(device_alloc(s->d, 4 * cells, "SPH list of the cells with fluid (list check)", &s->wet, e));
    SPHSIM_TRY(device_alloc(s->d, 4, "SPH number of the cells with fluid", &s->wet_n, e));
    /* empty until a rebuild lists them (sph_list_go empties it in every step that decides one;
     * a caller that enqueues the density stage without sph_begin_step relies on this) */
    const cl_uint zero = 0;
    SPHSIM_TRY(device_write(s->d, s->wet_n, 0, sizeof zero, &zero, e));
    /* new flags are filled in a rebuild, which the check reads until the next one: the next step
     * rebuilds (as a new solver's first does anyway) */
    const cl_uint hard = NEED_HARD;
    SPHSIM_TRY(device_write(s->d, s->lstate, sizeof hard, sizeof hard, &hard, e));
    if (!s->check) return SPHSIM_OK;
    return device_alloc(s->d, 16 * cells, "SPH cell boxes (list check)", &s->check_cref, e);
}

/* sph_list_go's pass (0: the step's first decision; 1: after the check). */
static sphsim_status launch_go(sph_solver *s, int force, cl_uint pass, sphsim_error *e)
{
    const cl_uint f = force ? 1u : 0u, swap = s->swap_on_device ? 1u : 0u, check = s->check ? 1u : 0u;
    DEVICE_ARG(e, s->k_list_go, 0, s->lstate);
    DEVICE_ARG(e, s->k_list_go, 1, f);
    DEVICE_ARG(e, s->k_list_go, 2, swap);
    DEVICE_ARG(e, s->k_list_go, 3, s->params_buf);
    DEVICE_ARG(e, s->k_list_go, 4, pass);
    DEVICE_ARG(e, s->k_list_go, 5, check);
    cl_mem wet_n = s->wet_n ? s->wet_n : s->dummy;
    DEVICE_ARG(e, s->k_list_go, 6, wet_n);
    return device_launch(s->d, s->k_list_go, 1, 1, NULL, e);
}

/* The arguments both kernels of the relative-motion check take first (SPH_CHECK_ARGS in
 * kernels/sph_density.cl). */
static sphsim_status set_check_args(sph_solver *s, cl_kernel k, sphsim_error *e)
{
    const dev_state *st = s->check_st;
    DEVICE_ARG(e, k, 0, st->pos);
    DEVICE_ARG(e, k, 1, st->pos_next);
    DEVICE_ARG(e, k, 2, st->type);
    DEVICE_ARG(e, k, 3, s->check_cs);
    DEVICE_ARG(e, k, 4, s->check_ce);
    DEVICE_ARG(e, k, 5, s->check_gp);
    DEVICE_ARG(e, k, 6, s->pos_ref);
    DEVICE_ARG(e, k, 7, s->lstate);
    DEVICE_ARG(e, k, 8, s->check_cref);
    DEVICE_ARG(e, k, 9, s->cell_fluid);
    DEVICE_ARG(e, k, 10, s->wet);
    DEVICE_ARG(e, k, 11, s->wet_n);
    return SPHSIM_OK;
}

/* The relative-motion check (the cells' references, then the check) and the decision after it
 * (all return at once on the device unless the go word has GO_CHECK). every_step: launched in
 * every step, mostly to return at once (the device decides alone, or sph_read_go_ahead). */
static sphsim_status launch_check(sph_solver *s, int every_step, sphsim_error *e)
{
    SPHSIM_TRY(set_check_args(s, s->k_cell_refs, e));
    if (s->cell_lanes > 1) {
        /* two float4 per work-item, where the lanes of a cell join their boxes; a group for each
         * `per` cells (one trip each, up to 2^20 groups, which then loop), since with barriers in
         * the loop each trip of a looping group waits on memory in turn */
        const size_t per = s->local / ((size_t)s->cell_lanes < s->local ? (size_t)s->cell_lanes : s->local);
        const size_t groups = (s->check_ncells + per - 1) / per, cap = (size_t)1 << 20;
        CL_CHECK(e, clSetKernelArg(s->k_cell_refs, 12, 2 * s->local * 4 * sizeof(cl_float), NULL));
        /* launched in every step, the groups loop (device_run_strided) */
        if (every_step) SPHSIM_TRY(device_run_strided(s->d, s->k_cell_refs, groups * s->local, s->local, NULL, e));
        else
            SPHSIM_TRY(
                device_launch(s->d, s->k_cell_refs, (groups < cap ? groups : cap) * s->local, s->local, NULL, e));
    } else {
        CL_CHECK(e, clSetKernelArg(s->k_cell_refs, 12, 4 * sizeof(cl_float), NULL)); /* unused */
        SPHSIM_TRY(device_run_strided(s->d, s->k_cell_refs, s->check_ncells, s->local, NULL, e));
    }
    cl_kernel k = s->k_list_check;
    SPHSIM_TRY(set_check_args(s, k, e));
    CL_CHECK(e, clSetKernelArg(k, 12, s->local * sizeof(cl_float), NULL));
    SPHSIM_TRY(device_run_strided(s->d, k, s->check_ncells, s->local, NULL, e));
    return launch_go(s, 0, 1, e);
}

sphsim_status sph_begin_step(sph_solver *s, int force, sphsim_error *e)
{
    if (!s->lists) return SPHSIM_OK;
    s->no_walkers = s->known_kept = s->known_rebuild = 0; /* until sph_read_go knows */
    SPHSIM_TRY(launch_go(s, force, 0, e));
    /* a host that does not read the decision launches the check every step (sph_read_go
     * launches it only when the go word asks for it) */
    if (s->check && s->swap_on_device && s->check_st->n > 0) SPHSIM_TRY(launch_check(s, 1, e));
    return SPHSIM_OK;
}

/* The step's decision from v, lstate[0..5] as the host read it: if undecided (GO_CHECK, the
 * check not yet launched), the relative-motion check and the decision after it, read again into
 * v (*checked = 1); then *go and what the host launches for the step. Both reads of the decision
 * end here, so that no_walkers_known follows every decision. */
static sphsim_status take_decision(sph_solver *s, cl_uint v[6], int *go, int *checked, sphsim_error *e)
{
    *checked = (v[0] & GO_CHECK) && !s->swap_on_device;
    if (*checked) {
        SPHSIM_TRY(launch_check(s, 0, e));
        SPHSIM_TRY(device_read(s->d, s->lstate, 0, 6 * sizeof *v, v, e));
    }
    *go = (v[0] & GO_REBUILD) != 0;
    /* a step that keeps lists without particles over list_cap launches no _walk kernels */
    s->known_kept = !*go;
    s->known_rebuild = *go;
    s->no_walkers = !*go && v[5] == 0;
    /* and so does the next step's density stage launched ahead, while these lists are kept (a
     * rebuild, whichever read decided it, counts the walkers again) */
    s->no_walkers_known = s->no_walkers;
    return SPHSIM_OK;
}

sphsim_status sph_read_go(sph_solver *s, int *go, sphsim_error *e)
{
    *go = 1;
    if (!s->lists) return SPHSIM_OK;
    cl_uint v[6] = { GO_REBUILD, 0, 0, 0, 0, 1 };
    SPHSIM_TRY(device_read(s->d, s->lstate, 0, sizeof v, v, e)); /* as fast as the go word alone */
    int checked;
    return take_decision(s, v, go, &checked, e);
}

sphsim_status sph_read_go_ahead(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                const dev_state *st, int *go, int *done, sphsim_error *e)
{
    *done = 0;
    if (!s->lists || s->swap_on_device) return sph_read_go(s, go, e);
    /* the check in every step (it returns at once on the device unless the go word asks for it),
     * so that one read gets the decision */
    if (s->check && s->check_st->n > 0) SPHSIM_TRY(launch_check(s, 1, e));
    if (!s->go_host) { /* once: page-locked memory for the read, else go_word */
        cl_int perr;
        s->go_pin =
            clCreateBuffer(s->d->ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, sizeof s->go_word, NULL, &perr);
        if (perr == CL_SUCCESS)
            s->go_host = clEnqueueMapBuffer(s->d->queue, s->go_pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                            sizeof s->go_word, 0, NULL, NULL, &perr);
        if (perr != CL_SUCCESS || !s->go_host) {
            if (s->go_pin) clReleaseMemObject(s->go_pin);
            s->go_pin = NULL;
            s->go_host = s->go_word;
        }
    }
    cl_event ev = NULL;
    CL_CHECK(e, clEnqueueReadBuffer(s->d->queue, s->lstate, CL_FALSE, 0, sizeof s->go_word, s->go_host, 0, NULL, &ev));
    /* the kept step's density stage on the pair it would read, the last step's output */
    dev_state kept = *st;
    kept.pos = st->pos_next;
    kept.pos_next = st->pos;
    kept.vel = st->vel_next;
    kept.vel_next = st->vel;
    s->known_kept = 1;
    s->known_rebuild = 0;
    s->no_walkers = s->no_walkers_known;
    s->ahead = 1u;
    sphsim_status ast = sph_enqueue_density(s, cell_start, cell_end, grid_params_buf, &kept, e);
    s->ahead = 0u;
    cl_int err = ast == SPHSIM_OK ? clFlush(s->d->queue) : CL_SUCCESS;
    if (err == CL_SUCCESS) err = clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    SPHSIM_TRY(ast);
    CL_CHECK_ERR(e, err, "reading the rebuild decision");
    cl_uint v[6];
    memcpy(v, s->go_host, sizeof v);
    /* undecided (no check ran: the kernels above returned at once) goes on as sph_read_go */
    int checked;
    SPHSIM_TRY(take_decision(s, v, go, &checked, e));
    *done = !checked && !*go;
    return SPHSIM_OK;
}

sphsim_status sph_sync_pairs(sph_solver *s, dev_state *st, sphsim_error *e)
{
    if (!s->lists || !s->swap_on_device) return SPHSIM_OK; /* GO_ALT is never set: no read needed */
    cl_uint g = 0;
    SPHSIM_TRY(device_read(s->d, s->lstate, 0, sizeof g, &g, e));
    if (!(g & GO_ALT)) return SPHSIM_OK;
    cl_mem t = st->pos;
    st->pos = st->pos_next;
    st->pos_next = t;
    t = st->vel;
    st->vel = st->vel_next;
    st->vel_next = t;
    g &= ~GO_ALT;
    return device_write(s->d, s->lstate, 0, sizeof g, &g, e);
}

sphsim_status sph_read_check_boxes(sph_solver *s, float *boxes, size_t n_cells, sphsim_error *e)
{
    if (!s->check_cref || n_cells != s->check_ncells)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "sph_read_check_boxes: %zu cells, the check has %zu%s", n_cells,
                           s->check_ncells, s->check_cref ? "" : " and is off");
    SPHSIM_TRY(device_read(s->d, s->check_cref, 0, 16 * n_cells, boxes, e));
    /* the check's view: a cell the flags give no fluid reads "no fluid" (w = -1), whatever
     * an earlier grid left in its entry (sph_cell_refs writes only the cells with fluid) */
    uint8_t *flags = malloc(n_cells ? n_cells : 1);
    if (!flags) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    sphsim_status st = device_read(s->d, s->cell_fluid, 0, n_cells, flags, e);
    for (size_t c = 0; st == SPHSIM_OK && c < n_cells; ++c)
        if (!(flags[c] & CELL_FLUID)) boxes[4 * c + 3] = -1.0f;
    free(flags);
    return st;
}

sphsim_status sph_read_lists(sph_solver *s, size_t n, uint32_t *counts, uint32_t *entries, sphsim_error *e)
{
    if (!s->lists || n > s->list_n)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "sph_read_lists: %zu particles, the lists hold %zu", n, s->list_n);
    const size_t part_n = s->params.list_part_n, cap = s->params.list_cap;
    SPHSIM_TRY(device_read(s->d, s->nl_count, 0, n * sizeof *counts, counts, e));
    uint32_t *part = NULL;
    size_t part_bytes = 0;
    sphsim_status st = SPHSIM_OK;
    for (size_t i = 0; i < n; ++i) {
        const size_t p = i / part_n, ii = i % part_n;
        if (ii == 0) { /* the next part's buffer */
            free(part);
            part = NULL;
            CL_CHECK(e, clGetMemObjectInfo(s->nl_list[p], CL_MEM_SIZE, sizeof part_bytes, &part_bytes, NULL));
            if (!(part = malloc(part_bytes))) {
                st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
                break;
            }
            if ((st = device_read(s->d, s->nl_list[p], 0, part_bytes, part, e)) != SPHSIM_OK) break;
        }
        for (size_t k = 0; k < cap; ++k) {
            /* the layout of kernels/sph_common.h: four entries to a uint4 on GPUs, else one */
            const size_t at = s->pack == 4 ? ((k / 4) * part_n + ii) * 4 + k % 4 : k * part_n + ii;
            entries[i * cap + k] = k < counts[i] && at < part_bytes / 4 ? part[at] : 0u;
        }
    }
    free(part);
    return st;
}

sphsim_status sph_set_list_cap(sph_solver *s, unsigned cap, sphsim_error *e)
{
    if (!s->lists || cap > s->params.list_cap)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "sph_set_list_cap: %u entries, the lists hold %u", cap,
                           s->params.list_cap);
    s->params.list_cap = cap;
    s->no_walkers = s->no_walkers_known = 0;
    /* lists built with the larger cap may now be over it: let the _walk kernels look */
    const cl_uint walkers = 1;
    SPHSIM_TRY(device_write(s->d, s->lstate, 5 * sizeof walkers, sizeof walkers, &walkers, e));
    return device_write(s->d, s->params_buf, 0, sizeof s->params, &s->params, e);
}

sphsim_status sph_set_masses(sph_solver *s, const float *pos, const float *mass, const uint8_t *type, size_t n,
                             sphsim_error *e)
{
    float m[2] = { 0.0f, 0.0f }; /* fluid, wall */
    int seen[2] = { 0, 0 };
    dev_u32 outside = 1; /* every wall particle outside the tank box (in some axis) */
    for (size_t i = 0; i < n; ++i) {
        if (type[i] != PTYPE_FLUID && type[i] != PTYPE_BOUNDARY) continue;
        const int w = type[i] == PTYPE_BOUNDARY;
        if (w) {
            int out = 0;
            for (dev_u32 a = 0; a < s->params.dims; ++a)
                out |= !(pos[4 * i + a] >= s->params.tank_min[a] && pos[4 * i + a] <= s->params.tank_max[a]);
            outside &= (dev_u32)out;
        }
        if (!seen[w]) {
            m[w] = mass[i];
            seen[w] = 1;
        } else if (mass[i] != m[w]) {
            return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                               "SPH particle masses: every %s particle must have the same mass, found %.9g and %.9g kg",
                               w ? "wall" : "fluid", (double)m[w], (double)mass[i]);
        }
    }
    s->params.mass_fluid = m[0];
    s->params.mass_wall = m[1];
    s->params.walls_outside = outside;
    return device_write(s->d, s->params_buf, 0, sizeof s->params, &s->params, e);
}

/* Word k of the list state (kernels/sph_density.cl, sph_list_go), read (blocks); 0 without
 * lists. */
static sphsim_status read_lstate_word(sph_solver *s, int k, long *out, sphsim_error *e)
{
    *out = 0;
    if (!s->lists) return SPHSIM_OK;
    cl_uint w = 0;
    SPHSIM_TRY(device_read(s->d, s->lstate, (size_t)k * sizeof w, sizeof w, &w, e));
    *out = (long)w;
    return SPHSIM_OK;
}

sphsim_status sph_list_rebuilds(sph_solver *s, long *rebuilds, sphsim_error *e)
{
    return read_lstate_word(s, 2, rebuilds, e);
}

sphsim_status sph_list_walkers(sph_solver *s, long *walkers, sphsim_error *e)
{
    return read_lstate_word(s, 5, walkers, e);
}

sphsim_status sph_list_checks(sph_solver *s, long *checks, long *skipped, sphsim_error *e)
{
    SPHSIM_TRY(read_lstate_word(s, 9, checks, e));
    return read_lstate_word(s, 10, skipped, e);
}

sphsim_status sph_list_level(sph_solver *s, int *level, sphsim_error *e)
{
    long v = 0;
    sphsim_status st = read_lstate_word(s, 4, &v, e);
    *level = (int)v;
    return st;
}

/* The restart state (sph.h): four uint32 words in the host's byte order: magic, version, skin
 * level, 0. */
#define SPH_STATE_MAGIC 0x4c485053u /* "SPHL" */
#define SPH_STATE_VERSION 1u

sphsim_status sph_state_save(sph_solver *s, void **blob, size_t *bytes, sphsim_error *e)
{
    *blob = NULL;
    *bytes = 0;
    if (!s->lists) return SPHSIM_OK;
    int level = 0;
    SPHSIM_TRY(sph_list_level(s, &level, e));
    uint32_t *w = malloc(4 * sizeof *w);
    if (!w) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    w[0] = SPH_STATE_MAGIC;
    w[1] = SPH_STATE_VERSION;
    w[2] = (uint32_t)level;
    w[3] = 0;
    *blob = w;
    *bytes = 4 * sizeof *w;
    return SPHSIM_OK;
}

sphsim_status sph_state_restore(sph_solver *s, const void *blob, size_t bytes, sphsim_error *e)
{
    if (!s->lists || !blob || bytes == 0) return SPHSIM_OK;
    uint32_t w[4];
    if (bytes != sizeof w) return SPHSIM_OK; /* another solver's or format's state: start cold */
    memcpy(w, blob, sizeof w);
    if (w[0] != SPH_STATE_MAGIC || w[1] != SPH_STATE_VERSION) return SPHSIM_OK;
    if (w[2] >= SPH_SKIN_LEVELS || w[3] != 0)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored neighbour-list state is damaged (skin level %u)",
                           (unsigned)w[2]);
    /* a device with fewer levels (a GPU run resumed on a CPU) takes its smallest skin */
    const cl_uint level = w[2] < (uint32_t)s->skin_levels ? w[2] : (cl_uint)(s->skin_levels - 1);
    /* need = 1: the first step rebuilds, forced or not, and with the age at its largest the
     * need does not move the level (sph_list_go); after it, level, age 0 and need 0, as in the
     * original run after the snapshot step */
    const cl_uint init[5] = { GO_REBUILD, 1, 0, 0xffffffffu, level };
    return device_write(s->d, s->lstate, 0, sizeof init, init, e);
}

sphsim_status sph_enqueue_density(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                  dev_state *st, sphsim_error *e)
{
    if (st->n == 0) return SPHSIM_OK;
    if (st->n > 0xffffffffu) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "%zu particles exceed the 32-bit index", st->n);
    const cl_uint n = (cl_uint)st->n;
    if (s->lists && st->n > s->list_n)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "%zu particles, the neighbour lists hold %zu", st->n, s->list_n);
    cl_kernel kd = s->known_kept ? s->k_density_kept : s->k_density, kw = s->k_density_walk;
    if (s->cell_fluid && !s->known_kept) {
        /* a rebuild step (the kernel returns at once otherwise): the new grid's fluid cells */
        cl_kernel k = s->k_cell_fluid;
        DEVICE_ARG(e, k, 0, st->type);
        DEVICE_ARG(e, k, 1, cell_start);
        DEVICE_ARG(e, k, 2, cell_end);
        DEVICE_ARG(e, k, 3, grid_params_buf);
        DEVICE_ARG(e, k, 4, s->lstate);
        DEVICE_ARG(e, k, 5, s->cell_fluid);
        DEVICE_ARG(e, k, 6, s->wet);
        DEVICE_ARG(e, k, 7, s->wet_n);
        SPHSIM_TRY(device_run_strided(s->d, k, s->check_ncells, s->local, NULL, e));
    }
    if (s->known_rebuild && s->lists_apart) {
        /* the lists alone, then the densities from them as in a kept step */
        SPHSIM_TRY(run_density_stage(s, s->k_lists_build, 1, 0, n, cell_start, cell_end, grid_params_buf, st, e));
        kd = s->k_density_kept;
        kw = s->k_density_walk_built;
    }
    SPHSIM_TRY(run_density_stage(s, kd, 1, 0, n, cell_start, cell_end, grid_params_buf, st, e));
    const int walk = s->lists && !s->no_walkers;
    if (walk) SPHSIM_TRY(run_density_stage(s, kw, 1, 1, n, cell_start, cell_end, grid_params_buf, st, e));
    SPHSIM_TRY(run_density_stage(s, s->k_boundary, 0, 0, n, cell_start, cell_end, grid_params_buf, st, e));
    if (walk)
        SPHSIM_TRY(run_density_stage(s, s->k_boundary_walk, 0, 1, n, cell_start, cell_end, grid_params_buf, st, e));
    return SPHSIM_OK;
}

/* Set sph_forces' (or sph_forces_alt's) arguments on k and launch it. */
static sphsim_status run_forces(sph_solver *s, cl_kernel k, int walk, cl_uint n, cl_mem cell_start, cl_mem cell_end,
                                cl_mem grid_params_buf, dev_state *st, sphsim_error *e)
{
    DEVICE_ARG(e, k, 0, n);
    DEVICE_ARG(e, k, 1, st->pos);
    DEVICE_ARG(e, k, 2, st->vel);
    DEVICE_ARG(e, k, 3, st->type);
    DEVICE_ARG(e, k, 4, st->pos_p);
    DEVICE_ARG(e, k, 5, cell_start);
    DEVICE_ARG(e, k, 6, cell_end);
    DEVICE_ARG(e, k, 7, grid_params_buf);
    DEVICE_ARG(e, k, 8, s->params_buf);
    DEVICE_ARG(e, k, 9, st->pos_next);
    DEVICE_ARG(e, k, 10, st->vel_next);
    DEVICE_ARG(e, k, 11, st->flags);
    cl_mem nl_count = s->lists ? s->nl_count : s->dummy;
    cl_mem pos_ref = s->lists ? s->pos_ref : s->dummy, lstate = s->lists ? s->lstate : s->dummy;
    SPHSIM_TRY(set_list_args(s, k, 12, e));
    DEVICE_ARG(e, k, 12 + SPH_LIST_MAX_PARTS, nl_count);
    DEVICE_ARG(e, k, 13 + SPH_LIST_MAX_PARTS, pos_ref);
    DEVICE_ARG(e, k, 14 + SPH_LIST_MAX_PARTS, lstate);
    const cl_uint stride = sph_stride(s, n);
    DEVICE_ARG(e, k, 15 + SPH_LIST_MAX_PARTS, stride);
    return run_sph_kernel(s, k, walk, st->n, e);
}

sphsim_status sph_enqueue_forces(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                 dev_state *st, sphsim_error *e)
{
    if (st->n == 0) return SPHSIM_OK;
    if (st->n > 0xffffffffu) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "%zu particles exceed the 32-bit index", st->n);
    if (s->lists && st->n > s->list_n)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "%zu particles, the neighbour lists hold %zu", st->n, s->list_n);
    const cl_uint n = (cl_uint)st->n;
    /* with lists whose pairs the device swaps, both sph_forces and sph_forces_alt (the same
     * arguments); the one whose pair the go word names runs, the other returns at once */
    SPHSIM_TRY(run_forces(s, s->k_forces, 0, n, cell_start, cell_end, grid_params_buf, st, e));
    if (s->lists && s->swap_on_device)
        SPHSIM_TRY(run_forces(s, s->k_forces_alt, 0, n, cell_start, cell_end, grid_params_buf, st, e));
    const int walk = s->lists && !s->no_walkers;
    if (walk) SPHSIM_TRY(run_forces(s, s->k_forces_walk, 1, n, cell_start, cell_end, grid_params_buf, st, e));
    if (walk && s->swap_on_device)
        SPHSIM_TRY(run_forces(s, s->k_forces_alt_walk, 1, n, cell_start, cell_end, grid_params_buf, st, e));
    return SPHSIM_OK;
}

sphsim_status sph_enqueue(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, dev_state *st,
                          sphsim_error *e)
{
    SPHSIM_TRY(sph_enqueue_density(s, cell_start, cell_end, grid_params_buf, st, e));
    return sph_enqueue_forces(s, cell_start, cell_end, grid_params_buf, st, e);
}

sphsim_status sph_density(sph_solver *s, grid *g, dev_state *st, sphsim_error *e)
{
    return sph_enqueue_density(s, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, e);
}

sphsim_status sph_forces(sph_solver *s, grid *g, dev_state *st, sphsim_error *e)
{
    return sph_enqueue_forces(s, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, e);
}

sphsim_status sph_step(sph_solver *s, grid *g, dev_state *st, sphsim_error *e)
{
    SPHSIM_TRY(sph_density(s, g, st, e));
    return sph_forces(s, g, st, e);
}

sphsim_status sph_pressure(sph_solver *s, const dev_state *st, cl_mem rho, cl_mem pressure, sphsim_error *e)
{
    if (st->n == 0) return SPHSIM_OK;
    const cl_uint n = (cl_uint)st->n;
    cl_kernel k = s->k_pressure;
    DEVICE_ARG(e, k, 0, n);
    DEVICE_ARG(e, k, 1, s->params_buf);
    DEVICE_ARG(e, k, 2, st->vel);
    DEVICE_ARG(e, k, 3, rho);
    DEVICE_ARG(e, k, 4, pressure);
    return device_run1d(s->d, k, st->n, s->local, e);
}
