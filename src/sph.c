/* sph: host side of the SPH fluid solver (see sph.h). */
#include "sph.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "geometry.h"
#include "init.h"
#include "motion.h"
#include "../kernels/sph_kernel_fns.h"

_Static_assert(SPHK_POLY6 == KERNEL_POLY6 && SPHK_CUBIC == KERNEL_CUBIC && SPHK_WENDLAND == KERNEL_WENDLAND,
               "kernel ids of sph_kernel_fns.h must equal scene_kernel");

struct sph_solver {
    ocl_device *d;
    sph_params params;
    cl_mem params_buf; /* __constant sph_params */
    cl_program prog_density, prog_forces;
    cl_kernel k_density, k_boundary, k_pressure, k_forces;
    /* with lists: the density of a step known to keep them (no list-build code), the particles
     * over list_cap (nlist_loop.h), and the densities after nlist_build (build apart) */
    cl_kernel k_density_kept, k_density_walk, k_density_walk_built, k_boundary_walk, k_forces_walk;
    size_t local;      /* work-group size of the SPH kernels (the host rounds the global size up) */
    nlist *nl;         /* neighbour lists, or NULL: the loops walk the grid's cells */
    int continuity;    /* the density is integrated (scene.density): 32-byte records */
    cl_uint advance;   /* continuity: the density stage advances the state's density; 0 until the
                        first step has run (a run starts from the density it was given) */
    cl_mem dummy;      /* one uint, for the lists' arguments without lists */
    char options[512]; /* the build options of the forces program (sph_build_options) */
    cl_mem geom_grid;  /* the meshes' signed distance grids (scene.geom_grid), or one float */
    struct {           /* the force gauges' sums (sph_measure_setup), or all 0 */
        cl_kernel k, k_walk; /* sph_boundary_measure, sph_boundary_walk_measure */
        cl_mem obj_slot;     /* uchar per object boundary particle */
        cl_uint first_obj, tank_slot, n_slots;
        cl_float4 centre;
        cl_mem partial; /* rows of 2 n_slots float4 */
        size_t cap;     /* rows partial holds */
        size_t local;   /* work-group size of the two kernels */
        cl_uint rows;   /* rows the last measuring stage wrote */
        int on;         /* the density stages measure */
        cl_uint own_axis;         /* only walls with own_lo <= x[own_axis] < own_hi count (sph_measure_own) */
        cl_float own_lo, own_hi;
    } m;
    /* moving walls (-DMOTION; docs/physics.md, "Moving walls"), else the placeholder dummy */
    cl_mem wall_ref;     /* float4 per wall particle, by id - first_wall: (rest position, body) */
    motion_dev *motion;  /* the bodies at a step's time and the next's (sph_set_step) */
};

/* Tank-face barrier (docs/physics.md): range d0 = SPH_WALL_D0 dx; stiffness K = (c0 / (2 d0))^2,
 * which stops a particle meeting the face at up to c0 / 2, capped at 1/dt^2 for stability. */
#define SPH_WALL_D0 0.4

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
    p->diff_k = (float)(2.0 * s->diffusion * h * p->c0);
    p->diff_hydro = (float)(s->rest_density / ((double)p->c0 * p->c0));
    p->rho_floor = (float)(0.5 * s->rest_density);
    p->dims = (dev_u32)dims;
    p->n_objects = geom_pack(s, p->objects);
    p->first_wall = (dev_u32)s->n_fluid;
    p->moving = motion_moving(s);
    /* sph_set_masses sets both before the first step; until then NaN, so that a step without
     * them fails (FLAG_NONFINITE) instead of running without pressure or viscosity */
    p->mass_fluid = p->mass_wall = NAN;
}

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

double sph_fluid_mass(const scene *s)
{
    /* Fluid and boundary particles sit on one lattice of spacing dx; m = rho0 / sum_lattice W
     * makes the kernel sum on that lattice exactly rho0 (docs/physics.md, "particle mass"). */
    if ((s->dims != 2 && s->dims != 3) || !(s->spacing > 0.0) || !(s->h > 0.0) || !(s->rest_density > 0.0)) return 0.0;
    const double S = sph_lattice_sum((int)s->kernel, s->dims, s->h, s->spacing);
    return S > 0.0 ? s->rest_density / S : 0.0;
}

sphsim_status sph_prepare(const scene *s, particles *p, sphsim_error *e)
{
    if (s->dims != 2 && s->dims != 3)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "dimensions: expected 2 or 3, got %d", s->dims);
    if (!(s->spacing > 0.0) || !(s->h > 0.0) || !(s->rest_density > 0.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "fluid: spacing, smoothing length and rest density must be > 0");
    const double m = sph_fluid_mass(s);
    if (!(m > 0.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "fluid.smoothing_length: the kernel sum on the lattice is zero");
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
    return SPHSIM_OK;
}

size_t sph_record_bytes(const scene *s, int lists)
{
    return lists || (s && s->density == DENSITY_CONTINUITY) ? 32 : 16;
}

size_t sph_solver_record_bytes(const sph_solver *s) { return sph_record_bytes(NULL, s->nl || s->continuity); }
int sph_density_integrated(const sph_solver *s) { return s->continuity; }
void sph_set_advance(sph_solver *s, int advance) { s->advance = advance != 0; }

size_t sph_list_bytes(const scene *s, size_t n, size_t n_cells, unsigned long long max_alloc, int min_parts)
{
    return nlist_bytes(s, n, n_cells, max_alloc, min_parts) + n * (sph_record_bytes(s, 1) - sph_record_bytes(s, 0));
}

int sph_lists_fit(size_t n, unsigned cap, unsigned long long max_alloc, int min_parts)
{
    return nlist_parts(n, cap, max_alloc, min_parts) != 0 &&
           (unsigned long long)n * sph_record_bytes(NULL, 1) <= max_alloc && n <= 0x7fffffffu;
}

/* ---- creation ---- */

/* Every kernel of the solver (NULL where not created: without lists, or after a failed
 * sph_create), for sph_destroy and the work-group size. */
#define SPH_KERNELS 9
static void solver_kernels(const sph_solver *s, cl_kernel ks[SPH_KERNELS])
{
    const cl_kernel all[SPH_KERNELS] = {
        s->k_density,      s->k_boundary,           s->k_pressure,      s->k_forces,     s->k_density_kept,
        s->k_density_walk, s->k_density_walk_built, s->k_boundary_walk, s->k_forces_walk
    };
    memcpy(ks, all, sizeof all);
}

/* The moving walls' buffers: every wall particle's rest position and body, from the scene's
 * lattice (init_lattice: the walls' positions at t = 0, whatever the run starts from, so that a
 * resumed run places them as the first did), and the bodies' motion, uploaded per step. */
static sphsim_status sph_motion_create(sph_solver *s, const scene *sc, const sphsim_tuning *t, sphsim_error *e)
{
    SPHSIM_TRY(motion_dev_create(&s->motion, s->d, sc, NULL, 0, e));
    particles p;
    SPHSIM_TRY(init_lattice(sc, &p, t->init_threads, e));
    const size_t nw = p.n_boundary, first = p.n_fluid;
    const long n_obj = init_boundary_objects(sc, NULL); /* the objects' walls follow the tank's */
    int8_t *obj = malloc((size_t)(n_obj > 0 ? n_obj : 1));
    float *ref = malloc(4 * sizeof(float) * (nw ? nw : 1));
    sphsim_status st = SPHSIM_OK;
    if (!obj || !ref) st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the walls' rest positions");
    if (st == SPHSIM_OK) {
        init_boundary_objects(sc, obj);
        const size_t shell = nw - (size_t)n_obj;
        for (size_t i = 0; i < nw; ++i) {
            memcpy(ref + 4 * i, p.pos + 4 * (first + i), 3 * sizeof(float));
            ref[4 * i + 3] = (float)(i < shell ? 0 : 1 + obj[i - shell]);
        }
        st = device_alloc(s->d, 4 * sizeof(float) * (nw ? nw : 1), "walls' rest positions", &s->wall_ref, e);
    }
    if (st == SPHSIM_OK && nw) st = device_write(s->d, s->wall_ref, 0, 4 * sizeof(float) * nw, ref, e);
    free(obj);
    free(ref);
    particles_free(&p);
    return st;
}

sphsim_status sph_set_step(sph_solver *s, long step, sphsim_error *e) { return motion_dev_step(s->motion, step, e); }

/* sph_create; halo: the solver of an MPI rank that holds halo copies between exchanges
 * (dev_state.owned; src/halo.h): its forces stage reports flags and motion for its own particles
 * only (-DSPH_HALO), and its lists decide over every rank (nlist_set_collective). */
static sphsim_status create(sph_solver **out, ocl_device *d, const scene *sc, size_t list_n, const sphsim_tuning *t,
                            int halo, sphsim_error *e)
{
    *out = NULL;
    if (sc->dims != 2 && sc->dims != 3)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "dimensions: expected 2 or 3, got %d", sc->dims);
    sphsim_tuning defaults;
    if (!t) {
        tuning_defaults(&defaults);
        t = &defaults;
    }
    sph_solver *s = calloc(1, sizeof *s);
    if (!s) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    s->d = d;
    s->continuity = sc->density == DENSITY_CONTINUITY;
    /* 128 work-items on GPUs (2.2 % less per step than 64 on the H200, every SPH loop a little
     * faster), 512 elsewhere (on PoCL with 2 threads, against 64: the 2D dam break at 1.1x10^5
     * particles 31 % less per step, the 3D one 6-9 % less; docs/performance.md); lowered below to
     * the smallest CL_KERNEL_WORK_GROUP_SIZE of the kernels */
    s->local = (size_t)device_tune(t->sph_local, d, 128, 512);
    sph_params_from_scene(sc, &s->params);
    sphsim_status st = SPHSIM_OK;
    if (list_n > 0) st = nlist_create(&s->nl, d, sc, list_n, t, e);
    if (st != SPHSIM_OK) {
        free(s);
        return st;
    }
    if (halo && s->nl) nlist_set_collective(s->nl);
    static const char *kernel_opt[] = { "KERNEL_POLY6", "KERNEL_CUBIC", "KERNEL_WENDLAND" };
    char list_opt[128] = "";
    if (s->nl) {
        list_opt[0] = ' ';
        nlist_build_options(s->nl, list_opt + 1, sizeof list_opt - 1);
    }
    /* native_sqrt and native_divide in the pair loops on NVIDIA's GPUs (kernels/sph_common.h) */
    const int native = device_tune(t->native_math, d, device_is_nvidia_gpu(d), 0);
    char *opts = s->options;
    snprintf(opts, sizeof s->options, "-DDIMS=%d -D%s -D%s -D%s%s%s%s%s%s", sc->dims, kernel_opt[sc->kernel],
             sc->eos == EOS_LINEAR ? "EOS_LINEAR" : "EOS_TAIT",
             sc->visc == VISC_LAPLACIAN ? "VISC_LAPLACIAN" : "VISC_ARTIFICIAL",
             sc->density == DENSITY_CONTINUITY ? " -DDENSITY_CONTINUITY" : "", list_opt,
             native ? " -DSPH_NATIVE_MATH" : "", s->params.moving ? " -DMOTION" : "", halo ? " -DSPH_HALO" : "");
    /* The register cap of the density program on NVIDIA's GPUs (-cl-nv-maxrregcount), 40 by
     * default: 12 work-groups of 128 then share an SM instead of the 11 that the list build's 44
     * registers allow (the build -3.5 %, the developed 3D dam break -0.3 % on an H100;
     * docs/performance.md). The forces program keeps its 48: caps of 40 to 44 made its loop
     * 4-22 % slower. Registers change no arithmetic. */
    char dopts[600];
    const unsigned regs = device_register_cap(d, t->density_regs, 40);
    snprintf(dopts, sizeof dopts, "%s", opts);
    if (regs) snprintf(dopts + strlen(dopts), sizeof dopts - strlen(dopts), " -cl-nv-maxrregcount=%u", regs);
    static const char *density_files[] = { "sph_density.cl", "sph_boundary.cl", "sph_pressure.cl" };
    if ((st = device_build_files(d, density_files, 3, dopts, &s->prog_density, e)) != SPHSIM_OK ||
        (st = device_build(d, "sph_forces_integrate.cl", opts, &s->prog_forces, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_density, "sph_density", &s->k_density, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_density, "sph_boundary", &s->k_boundary, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_density, "sph_pressure", &s->k_pressure, e)) != SPHSIM_OK ||
        (st = device_kernel(s->prog_forces, "sph_forces", &s->k_forces, e)) != SPHSIM_OK ||
        (st = device_alloc(d, sizeof s->params, "SPH parameters", &s->params_buf, e)) != SPHSIM_OK ||
        (st = device_write(d, s->params_buf, 0, sizeof s->params, &s->params, e)) != SPHSIM_OK ||
        (st = device_alloc(d, 4, "SPH unused argument", &s->dummy, e)) != SPHSIM_OK ||
        (st = device_alloc(d, sc->geom_grid_n ? sc->geom_grid_n * sizeof(float) : 4, "signed distance grids",
                           &s->geom_grid, e)) != SPHSIM_OK ||
        (sc->geom_grid_n &&
         (st = device_write(d, s->geom_grid, 0, sc->geom_grid_n * sizeof(float), sc->geom_grid, e)) != SPHSIM_OK)) {
        sph_destroy(s);
        return st;
    }
    if (s->params.moving && (st = sph_motion_create(s, sc, t, e)) != SPHSIM_OK) {
        sph_destroy(s);
        return st;
    }
    if (s->nl &&
        ((st = device_kernel(s->prog_density, "sph_density_kept", &s->k_density_kept, e)) != SPHSIM_OK ||
         (st = device_kernel(s->prog_density, "sph_density_walk", &s->k_density_walk, e)) != SPHSIM_OK ||
         (st = device_kernel(s->prog_density, "sph_density_walk_built", &s->k_density_walk_built, e)) != SPHSIM_OK ||
         (st = device_kernel(s->prog_density, "sph_boundary_walk", &s->k_boundary_walk, e)) != SPHSIM_OK ||
         (st = device_kernel(s->prog_forces, "sph_forces_walk", &s->k_forces_walk, e)) != SPHSIM_OK)) {
        sph_destroy(s);
        return st;
    }
    /* no larger than any kernel allows (each at most the device's largest group): a
     * register-heavy kernel may take fewer work-items than that on some GPUs */
    cl_kernel ks[SPH_KERNELS];
    solver_kernels(s, ks);
    const size_t limits[2] = { device_local_limit(d, ks, SPH_KERNELS), s->nl ? nlist_kernel_local_limit(s->nl) : 0 };
    for (int k = 0; k < 2; ++k)
        if (limits[k] > 0 && limits[k] < s->local) s->local = limits[k];
    if (s->nl) nlist_set_local(s->nl, s->local);
    *out = s;
    return SPHSIM_OK;
}

sphsim_status sph_create(sph_solver **out, ocl_device *d, const scene *sc, size_t list_n, const sphsim_tuning *t,
                         sphsim_error *e)
{
    return create(out, d, sc, list_n, t, 0, e);
}

void sph_destroy(sph_solver *s)
{
    if (!s) return;
    cl_kernel ks[SPH_KERNELS];
    solver_kernels(s, ks);
    device_release_kernels(ks, SPH_KERNELS);
    nlist_destroy(s->nl);
    cl_kernel mk[2] = { s->m.k, s->m.k_walk };
    device_release_kernels(mk, 2);
    if (s->m.obj_slot) clReleaseMemObject(s->m.obj_slot);
    if (s->m.partial) clReleaseMemObject(s->m.partial);
    if (s->dummy) clReleaseMemObject(s->dummy);
    if (s->geom_grid) clReleaseMemObject(s->geom_grid);
    if (s->wall_ref) clReleaseMemObject(s->wall_ref);
    motion_dev_destroy(s->motion);
    if (s->prog_density) clReleaseProgram(s->prog_density);
    if (s->prog_forces) clReleaseProgram(s->prog_forces);
    if (s->params_buf) clReleaseMemObject(s->params_buf);
    free(s);
}

const sph_params *sph_get_params(const sph_solver *s) { return &s->params; }
const char *sph_build_options(const sph_solver *s) { return s->options; }
cl_mem sph_params_buffer(const sph_solver *s) { return s->params_buf; }
cl_mem sph_motion_buffer(const sph_solver *s) { return s->motion ? s->motion->buf : s->dummy; }
nlist *sph_nlist(const sph_solver *s) { return s->nl; }

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
    if (s->params.moving) outside = 0; /* walls that move leave the tank box's outside */
    if (s->nl) SPHSIM_TRY(nlist_set_walls_outside(s->nl, (int)outside, e));
    return device_write(s->d, s->params_buf, 0, sizeof s->params, &s->params, e);
}

/* ---- the stages ---- */

/* The stages' kernels (kernels/sph_*.cl): their arguments are a common first part (n .. stride),
 * then each stage's own, then the lists' (NLIST_READ_ARGS or NLIST_BUILD_ARGS). */
typedef enum { STAGE_DENSITY, STAGE_BOUNDARY, STAGE_FORCES } sph_stage;

/* Bind kernel k of `stage` on state st and the given neighbour buffers, and launch it over the
 * particles: one work-item each, or for a _walk kernel (the particles over list_cap, usually
 * none) a few work-groups that loop over them. */
static sphsim_status run_stage(sph_solver *s, cl_kernel k, sph_stage stage, int walk, const dev_state *st,
                               cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, sphsim_error *e)
{
    const int measure = stage == STAGE_BOUNDARY && s->m.on;
    if (measure) k = walk ? s->m.k_walk : s->m.k;
    const size_t local = measure ? s->m.local : s->local;
    const cl_uint n = (cl_uint)st->n, stride = device_group_stride(s->d, n, local);
    const cl_uint ahead = s->nl ? nlist_ahead(s->nl) : 0u;
    cl_mem cf = s->nl && nlist_cell_flags(s->nl) ? nlist_cell_flags(s->nl) : s->dummy;
    const cl_uint use_cf = cf != s->dummy;
    karg a[36] = { KARG("n", n),
                   KARG("pos", st->pos),
                   KARG("vel", st->vel),
                   KARG("type", st->type),
                   KARG("cell_start", cell_start),
                   KARG("cell_end", cell_end),
                   KARG("gp", grid_params_buf),
                   KARG("P", s->params_buf),
                   KARG("pos_p", st->pos_p),
                   KARG("stride", stride) };
    int m = 10;
    if (stage == STAGE_DENSITY) {
        a[m++] = KARG("cell_fluid", cf);
        a[m++] = KARG("use_cf", use_cf);
    }
    if (stage == STAGE_FORCES) {
        a[m++] = KARG("pos_next", st->pos_next);
        a[m++] = KARG("vel_next", st->vel_next);
        a[m++] = KARG("flags", st->flags);
        a[m++] = KARG("geom_grid", s->geom_grid);
        a[m++] = KARG("owned", *(st->owned ? &st->owned : &s->dummy));
    }
    if (stage != STAGE_DENSITY) { /* the moving walls' (kernels/motion.h) */
        a[m++] = KARG("id", st->id);
        a[m++] = KARG("wall_ref", *(s->wall_ref ? &s->wall_ref : &s->dummy));
        a[m++] = KARG("motion", *(s->motion ? &s->motion->buf : &s->dummy));
    }
    if (stage != STAGE_FORCES) a[m++] = KARG("ahead", ahead);
    if (stage == STAGE_DENSITY) a[m++] = KARG("advance", s->advance);
    m += nlist_args(s->nl, &s->dummy, a + m);
    const size_t groups = walk ? device_strided_groups(s->d, st->n, local) : (st->n + local - 1) / local;
    cl_uint row0 = 0;
    if (measure) { /* after the main kernel's rows, the _walk twin's */
        row0 = walk ? s->m.rows : 0u;
        const size_t rows = row0 + groups;
        if (rows > s->m.cap) {
            /* room for the main kernel's and the twin's most (device_strided_groups) */
            const size_t cap = (st->n + local - 1) / local + device_strided_groups(s->d, st->n, local);
            if (s->m.partial) clReleaseMemObject(s->m.partial);
            s->m.partial = NULL;
            s->m.cap = 0;
            SPHSIM_TRY(device_alloc(s->d, cap * 32 * s->m.n_slots, "force gauge sums", &s->m.partial, e));
            s->m.cap = cap;
        }
        a[m++] = KARG("own_axis", s->m.own_axis);
        a[m++] = KARG("own_lo", s->m.own_lo);
        a[m++] = KARG("own_hi", s->m.own_hi);
        a[m++] = KARG("first_obj", s->m.first_obj);
        a[m++] = KARG("tank_slot", s->m.tank_slot);
        a[m++] = KARG("obj_slot", s->m.obj_slot);
        a[m++] = KARG("n_slots", s->m.n_slots);
        a[m++] = KARG("centre", s->m.centre);
        a[m++] = KARG("partial", s->m.partial);
        a[m++] = KARG("row0", row0);
        a[m++] = KARG_LOCAL("red", 32 * local);
        a[m++] = KARG_LOCAL("acc", 32 * s->m.n_slots);
        a[m++] = KARG_LOCAL("mask", 4);
        s->m.rows = (cl_uint)(row0 + groups);
    }
    SPHSIM_TRY(device_set_args(s->d, k, a, m, e));
    return walk ? device_run_strided(s->d, k, st->n, local, NULL, e) : device_run1d(s->d, k, st->n, local, e);
}

static sphsim_status check_size(const sph_solver *s, const dev_state *st, sphsim_error *e)
{
    if (st->n > 0xffffffffu) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "%zu particles exceed the 32-bit index", st->n);
    if (s->nl && st->n > nlist_size(s->nl))
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "%zu particles, the neighbour lists hold %zu", st->n, nlist_size(s->nl));
    return SPHSIM_OK;
}

sphsim_status sph_enqueue_density(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                  dev_state *st, sphsim_error *e)
{
    if (st->n == 0) return SPHSIM_OK;
    SPHSIM_TRY(check_size(s, st, e));
    if (!s->nl) {
        SPHSIM_TRY(run_stage(s, s->k_density, STAGE_DENSITY, 0, st, cell_start, cell_end, grid_params_buf, e));
        return run_stage(s, s->k_boundary, STAGE_BOUNDARY, 0, st, cell_start, cell_end, grid_params_buf, e);
    }
    /* a step known to keep the lists reads them (no list-build code); a rebuild, or a step whose
     * decision the host has not read (tests), runs sph_density, which builds them when the
     * decision says so; a known rebuild on a device that builds them apart runs nlist_build and
     * then reads them */
    const int kept = nlist_known_kept(s->nl);
    cl_kernel kd = kept ? s->k_density_kept : s->k_density, kw = s->k_density_walk;
    if (!kept) SPHSIM_TRY(nlist_enqueue_cells(s->nl, st, cell_start, cell_end, grid_params_buf, e));
    if (nlist_known_rebuild(s->nl) && nlist_build_apart(s->nl)) {
        SPHSIM_TRY(nlist_enqueue_build(s->nl, st, cell_start, cell_end, grid_params_buf, s->local, e));
        kd = s->k_density_kept;
        kw = s->k_density_walk_built;
    }
    const int walk = !nlist_no_walkers(s->nl);
    SPHSIM_TRY(run_stage(s, kd, STAGE_DENSITY, 0, st, cell_start, cell_end, grid_params_buf, e));
    if (walk) SPHSIM_TRY(run_stage(s, kw, STAGE_DENSITY, 1, st, cell_start, cell_end, grid_params_buf, e));
    SPHSIM_TRY(run_stage(s, s->k_boundary, STAGE_BOUNDARY, 0, st, cell_start, cell_end, grid_params_buf, e));
    if (walk)
        SPHSIM_TRY(run_stage(s, s->k_boundary_walk, STAGE_BOUNDARY, 1, st, cell_start, cell_end, grid_params_buf, e));
    return SPHSIM_OK;
}

sphsim_status sph_enqueue_forces(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                                 dev_state *st, sphsim_error *e)
{
    if (s->nl) SPHSIM_TRY(nlist_combine_built(s->nl, e)); /* collective: before the empty-rank return */
    if (st->n == 0) return SPHSIM_OK;
    SPHSIM_TRY(check_size(s, st, e));
    SPHSIM_TRY(run_stage(s, s->k_forces, STAGE_FORCES, 0, st, cell_start, cell_end, grid_params_buf, e));
    if (s->nl && !nlist_no_walkers(s->nl))
        SPHSIM_TRY(run_stage(s, s->k_forces_walk, STAGE_FORCES, 1, st, cell_start, cell_end, grid_params_buf, e));
    s->advance = 1; /* the particles moved: the next density stage advances the density */
    return SPHSIM_OK;
}

sphsim_status sph_enqueue(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, dev_state *st,
                          sphsim_error *e)
{
    SPHSIM_TRY(sph_enqueue_density(s, cell_start, cell_end, grid_params_buf, st, e));
    return sph_enqueue_forces(s, cell_start, cell_end, grid_params_buf, st, e);
}

sphsim_status sph_bind_grid(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, size_t n_cells,
                            const dev_state *st, sphsim_error *e)
{
    return s->nl ? nlist_bind(s->nl, cell_start, cell_end, grid_params_buf, n_cells, st, e) : SPHSIM_OK;
}

sphsim_status sph_begin_step(sph_solver *s, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf,
                             const dev_state *st, int force, int *rebuild, int *density_done, sphsim_error *e)
{
    *rebuild = 1;
    *density_done = 0;
    if (!s->nl) return SPHSIM_OK;
    SPHSIM_TRY(nlist_begin_step(s->nl, force, e));
    if (force || !nlist_reads_ahead(s->nl)) return nlist_decide(s->nl, rebuild, e);
    /* the kept step's density stage while the read travels, on the pair it would read: the last
     * step's output */
    SPHSIM_TRY(nlist_read_begin(s->nl, e));
    dev_state kept = *st;
    kept.pos = st->pos_next;
    kept.pos_next = st->pos;
    kept.vel = st->vel_next;
    kept.vel_next = st->vel;
    const sphsim_status ahead = sph_enqueue_density(s, cell_start, cell_end, grid_params_buf, &kept, e);
    sphsim_error read_err;
    const sphsim_status read = nlist_read_end(s->nl, rebuild, density_done, ahead == SPHSIM_OK ? e : &read_err);
    SPHSIM_TRY(ahead);
    return read;
}

sphsim_status sph_pressure(sph_solver *s, const dev_state *st, cl_mem rho, cl_mem pressure, sphsim_error *e)
{
    if (st->n == 0) return SPHSIM_OK;
    const cl_uint n = (cl_uint)st->n;
    const karg args[] = { KARG("n", n),     KARG("P", s->params_buf),  KARG("vel", st->vel), KARG("pos_p", st->pos_p),
                          KARG("rho", rho), KARG("pressure", pressure) };
    SPHSIM_TRY(device_set_args(s->d, s->k_pressure, args, 6, e));
    return device_run1d(s->d, s->k_pressure, st->n, s->local, e);
}

sphsim_status sph_measure_setup(sph_solver *s, cl_uint first_obj, cl_uint tank_slot, const uint8_t *obj_slot,
                                size_t n_obj, cl_uint n_slots, const double centre[3], sphsim_error *e)
{
    if (n_slots == 0 || n_slots > 32)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "force gauges: %u walls gauged, at most 32 can be", (unsigned)n_slots);
    if (!s->m.k) {
        SPHSIM_TRY(device_kernel(s->prog_density, "sph_boundary_measure", &s->m.k, e));
        if (s->nl) SPHSIM_TRY(device_kernel(s->prog_density, "sph_boundary_walk_measure", &s->m.k_walk, e));
        cl_kernel ks[2] = { s->m.k, s->m.k_walk };
        const size_t limit = device_local_limit(s->d, ks, s->nl ? 2 : 1);
        s->m.local = limit > 0 && limit < s->local ? limit : s->local;
    }
    if (s->m.obj_slot) clReleaseMemObject(s->m.obj_slot);
    s->m.obj_slot = NULL;
    SPHSIM_TRY(device_alloc(s->d, n_obj ? n_obj : 1, "force gauge slots", &s->m.obj_slot, e));
    if (n_obj) SPHSIM_TRY(device_write(s->d, s->m.obj_slot, 0, n_obj, obj_slot, e));
    s->m.first_obj = first_obj;
    s->m.tank_slot = tank_slot;
    sph_measure_own(s, 0, -FLT_MAX, FLT_MAX);
    s->m.n_slots = n_slots;
    for (int a = 0; a < 3; ++a) s->m.centre.s[a] = (float)centre[a];
    s->m.centre.s[3] = 0.0f;
    s->m.cap = 0; /* rows of the new slot count, allocated by the first measuring stage */
    if (s->m.partial) clReleaseMemObject(s->m.partial);
    s->m.partial = NULL;
    return SPHSIM_OK;
}

void sph_measure(sph_solver *s, int on) { s->m.on = on && s->m.k != NULL; }

void sph_measure_own(sph_solver *s, int axis, float lo, float hi)
{
    s->m.own_axis = (cl_uint)axis;
    s->m.own_lo = lo;
    s->m.own_hi = hi;
}

cl_mem sph_measured(const sph_solver *s, cl_uint *rows)
{
    *rows = s->m.rows;
    return s->m.partial;
}

size_t sph_state_size(const sph_solver *s) { return s->nl ? nlist_state_size() : 0; }

sphsim_status sph_state_save(sph_solver *s, void **blob, size_t *bytes, sphsim_error *e)
{
    *blob = NULL;
    *bytes = 0;
    return s->nl ? nlist_state_save(s->nl, blob, bytes, e) : SPHSIM_OK;
}

sphsim_status sph_state_restore(sph_solver *s, const void *blob, size_t bytes, sphsim_error *e)
{
    return s->nl ? nlist_state_restore(s->nl, blob, bytes, e) : SPHSIM_OK;
}

/* ---- the time loop's interface (solver.h) ---- */

static sphsim_status op_begin_step(void *impl, grid *g, dev_state *st, int force, int *rebuild, int *prepared,
                                   sphsim_error *e)
{
    sph_solver *s = impl;
    return sph_begin_step(s, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, force, rebuild, prepared,
                          e);
}

static sphsim_status op_prepare(void *impl, grid *g, dev_state *st, sphsim_error *e)
{
    return sph_enqueue_density(impl, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, e);
}

static sphsim_status op_advance(void *impl, grid *g, dev_state *st, sphsim_error *e)
{
    return sph_enqueue_forces(impl, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, e);
}

static sphsim_status op_snapshot(void *impl, grid *g, dev_state *st, long *n_contacts, sphsim_error *e)
{
    *n_contacts = -1;
    return SPHSIM_OK;
}

static sphsim_status op_save_state(void *impl, grid *g, dev_state *st, void **blob, size_t *bytes, sphsim_error *e)
{
    return sph_state_save(impl, blob, bytes, e);
}

static sphsim_status op_restore_state(void *impl, dev_state *st, const void *blob, size_t bytes, sphsim_error *e)
{
    return sph_state_restore(impl, blob, bytes, e);
}

static sphsim_status op_output_fields(void *impl, dev_state *st, cl_mem rho, cl_mem pressure, sphsim_error *e)
{
    return sph_pressure(impl, st, rho, pressure, e);
}

static sphsim_status op_counters(void *impl, solver_counters *c, sphsim_error *e)
{
    sph_solver *s = impl;
    memset(c, 0, sizeof *c);
    if (!s->nl) return SPHSIM_OK;
    c->lists = 1;
    SPHSIM_TRY(nlist_rebuilds(s->nl, &c->list_rebuilds, e));
    return nlist_checks(s->nl, &c->list_checks, &c->list_checks_skipped, e);
}

static void op_destroy(void *impl) { sph_destroy(impl); }

static size_t op_state_size(void *impl, size_t n)
{
    (void)n;
    return sph_state_size(impl);
}

static sphsim_status op_set_step(void *impl, long step, sphsim_error *e) { return sph_set_step(impl, step, e); }

sphsim_status sph_solver_open(solver *out, ocl_device *d, const scene *sc, size_t list_n, const sphsim_tuning *t,
                              const particles *p, grid *g, const dev_state *st, sphsim_error *e)
{
    static const solver_ops ops = { op_begin_step,    op_prepare,       op_advance,  op_snapshot, op_save_state,
                                    op_restore_state, op_output_fields, op_counters, op_destroy,  NULL,
                                    op_state_size,    op_set_step };
    sph_solver *s = NULL;
    SPHSIM_TRY(create(&s, d, sc, list_n, t, st->owned != NULL, e));
    *out = (solver){ &ops, s }; /* the caller destroys it, also on failure below */
    SPHSIM_TRY(sph_set_masses(s, p->pos, p->mass, p->type, p->n, e));
    return sph_bind_grid(s, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), grid_get_params(g)->n_cells,
                         st, e);
}
