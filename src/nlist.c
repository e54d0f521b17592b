/* nlist: the neighbour lists (see nlist.h; kernels in kernels/nlist.cl). */
#include "nlist.h"

#include "comm.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct nlist {
    ocl_device *d;
    nlist_params params;
    cl_mem params_buf; /* __constant nlist_params */
    size_t n;          /* particles the lists hold */
    unsigned parts;    /* buffers the entries take */
    int pack;          /* entries per load: 1 or 4 */
    int lanes;         /* work-items per cell in nlist_cell_boxes */
    int levels;        /* skin levels on this device */
    int check;         /* the relative-motion check is on (tuning.list_check) and bound */
    int apart;         /* a rebuild builds the lists alone (nlist_build), then the densities read them */
    int ahead_read;    /* read the decision with nlist_read_begin/end */
    int collective;    /* the decision's inputs are combined over the MPI ranks (nlist_set_collective) */
    size_t local;      /* work-group size of the kernels (the SPH solver's) */
    cl_program prog;
    cl_kernel k_go, k_cell_fluid, k_cell_boxes, k_check, k_build;
    cl_mem list[NLIST_MAX_PARTS]; /* uint [list_cap][list_part_n] each (unused parts: dummy) */
    cl_mem count;                 /* uint [n] */
    cl_mem pos_ref;               /* float4 [n] */
    cl_mem state;                 /* nlist_state */
    cl_mem dummy;                 /* one uint */
    /* nlist_bind: the kept grid and the state the check reads; 21 bytes per cell */
    cl_mem cs, ce, gp;
    const dev_state *st;
    size_t n_cells;
    cl_mem boxes;      /* float4 [n_cells]: each cell's box of displacements (nlist_cell_boxes) */
    cl_mem cell_flags; /* uchar [n_cells]: CELL_FLUID | CELL_WALL (nlist_cell_fluid) */
    cl_mem wet;        /* uint [n_cells]: the cells with fluid, in some order, and */
    cl_mem wet_n;      /* uint: their number */
    /* what the host knows of the step (nlist_decide, nlist_read_begin) */
    int known_kept, known_rebuild, no_walkers;
    int no_walkers_known; /* the lists in use have no particle over list_cap (read in a step that
                             kept them): the stage launched ahead needs no _walk kernels; 0 after a
                             rebuild, until the next read */
    cl_uint ahead;        /* kernels are being launched ahead of the decision's read */
    cl_event read_ev;     /* nlist_read_begin's read */
    cl_mem go_pin;        /* page-locked host memory the read lands in (a read into ordinary
                             memory may be finished only when the host waits, holding up the
                             kernels behind it), mapped at go_host, or go_word without */
    cl_uint *go_host;
    cl_uint go_word[NLIST_DECISION_WORDS];
};

/* ---- parameters ---- */

/* Steps x skin at which a list's rebuild and its longer loops cost the same (skin_levels):
 * measured on the H200 (docs/performance.md, "adaptive skin"). tuning.skin_c overrides it. */
#define NLIST_SKIN_C 2.4

/* The fluid-wall pairs' skin at a list skin sk (scene skin `skin`): listed within R (1 + ws),
 * and a fluid particle may move ws R before the lists go. ws = 2 sk, at most 1/2 + skin, so that
 * two fluid particles in cells three apart (at least 2 R (1 + skin) apart at the build) stay
 * beyond the support (docs/grid.md). */
static double wall_skin(double sk, double skin) { return fmin(2.0 * sk, 0.5 + skin); }

double nlist_max_move(double skin) { return wall_skin(skin, skin); }

/* Adaptive skin (docs/grid.md): level k lists use skin_k = skin / 2^k, k < levels. A step costs
 * its list loops, which grow with the skin, plus a rebuild spread over the L steps the lists
 * last, and L is proportional to skin_k at a given speed; if the loops grew as (1 + skin_k)^3
 * the sum would be least where L = C / skin_k with C = (rebuild) / (3 x loops). The loops gain
 * less from a smaller skin than that, so C comes from a sweep on the H200 instead (0.3, 0.6, 1.2,
 * 2.4). Lists kept 2 C / skin_k steps move down a level; lists outgrown within C / (4 skin_k) move
 * up (a level's L halves, so the two rules cannot alternate). `support` is the SPH support as the
 * kernels hold it (a float). */
static void skin_levels(nlist_params *p, double support, double skin, int levels, double c)
{
    const double walk = 0.999 * support * skin; /* cells of support (1 + skin): sim.c */
    p->skin_walk2 = (float)(walk * walk);
    for (int k = 0; k < NLIST_SKIN_LEVELS; ++k) {
        const double sk = skin / (double)(1 << k), rl = support * (1.0 + sk), half = 0.5 * support * sk;
        const double l_opt = sk > 0.0 ? c / sk : 0.0;
        const double ws = wall_skin(sk, skin), rw = support * (1.0 + ws);
        p->list_radius2[k] = (float)(rl * rl);
        p->wall_radius2[k] = (float)(rw * rw);
        p->skin_half2[k] = (float)(half * half);
        const double full = 0.999 * support * sk; /* the 0.1 % margin covers float rounding */
        const double hard = 0.999 * support * ws;
        p->skin2[k] = (float)(hard * hard);
        p->skin_rel[k] = (float)full;
        const double shrink = ceil(2.0 * l_opt), grow = floor(0.25 * l_opt); /* clamped to 32 bits */
        p->skin_shrink_age[k] = k + 1 < levels && sk > 0.0 && shrink < 4294967295.0 ? (dev_u32)shrink : 0xffffffffu;
        p->skin_grow_age[k] = k > 0 ? (dev_u32)fmin(grow, 4294967295.0) : 0u;
    }
}

unsigned nlist_cap(const scene *s)
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
static size_t part_n(size_t n, unsigned parts) { return (n + parts - 1) / parts; }

unsigned nlist_parts(size_t n, unsigned cap, unsigned long long max_alloc, int min_parts)
{
    unsigned parts = min_parts >= 1 && min_parts <= NLIST_MAX_PARTS ? (unsigned)min_parts : 1u;
    while (parts <= NLIST_MAX_PARTS && (unsigned long long)part_n(n, parts) * cap * 4 > max_alloc) ++parts;
    return parts <= NLIST_MAX_PARTS ? parts : 0;
}

size_t nlist_bytes(const scene *s, size_t n, size_t n_cells, unsigned long long max_alloc, int min_parts)
{
    const unsigned cap = nlist_cap(s);
    const unsigned parts = max_alloc ? nlist_parts(n, cap, max_alloc, min_parts) : 1;
    const size_t rows = parts ? (size_t)parts * part_n(n, parts) : n; /* particles' lists allocated */
    /* the check's box (16 bytes), the cell's flags (1) and the list of cells with fluid (4) per
     * cell, unless the boxes exceed the largest buffer (nlist_bind leaves them off then) */
    const size_t cells = max_alloc && 16 * n_cells > max_alloc ? 0 : 21 * n_cells;
    /* the entries, each particle's count and build position, and the state */
    return rows * cap * 4 + n * (4 + 16) + sizeof(nlist_state) + cells;
}

/* ---- creation ---- */

/* Every kernel (NULL where not created), for nlist_destroy and the work-group size. */
#define NLIST_KERNELS 5
static void all_kernels(const nlist *nl, cl_kernel ks[NLIST_KERNELS])
{
    const cl_kernel all[NLIST_KERNELS] = { nl->k_go, nl->k_cell_fluid, nl->k_cell_boxes, nl->k_check, nl->k_build };
    memcpy(ks, all, sizeof all);
}

/* All the skin levels on GPUs, where their cost model was measured; one (the scene's skin) on
 * CPUs, where one PoCL run of the 3D dam break took 5 % longer with them. */
int nlist_skin_levels(const sphsim_tuning *t, const ocl_device *d)
{
    return device_tune(t->skin_levels, d, NLIST_SKIN_LEVELS, 1);
}

/* Zero the state; the first step rebuilds (and a caller that enqueues a density stage without
 * nlist_begin_step builds the lists every time): no bound on the relative motion and no
 * displacement written (the filter +inf) until nlist_go sets them. */
static sphsim_status reset_state(nlist *nl, sphsim_error *e)
{
    nlist_state s;
    memset(&s, 0, sizeof s);
    s.go = GO_REBUILD;
    s.need = NEED_HARD;
    s.bound = s.filter = 0x7f800000u; /* +inf */
    return device_write(nl->d, nl->state, 0, sizeof s, &s, e);
}

sphsim_status nlist_create(nlist **out, ocl_device *d, const scene *s, size_t n, const sphsim_tuning *t,
                           sphsim_error *e)
{
    *out = NULL;
    sphsim_tuning defaults;
    if (!t) {
        tuning_defaults(&defaults);
        t = &defaults;
    }
    nlist *nl = calloc(1, sizeof *nl);
    if (!nl) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    nl->d = d;
    nl->n = n;
    nl->levels = nlist_skin_levels(t, d);
    /* entries four to a load on GPUs; PoCL, which vectorises across work-items, is faster with one */
    nl->pack = device_tune(t->list_pack, d, 4, 1);
    /* 8 lanes per cell on GPUs, whose lanes of a cell then read consecutive particles; 1 on CPUs,
     * where one work-item's loop over its cell reads them in order and needs no barrier */
    nl->lanes = device_tune(t->cell_lanes, d, 8, 1);
    /* the build apart on GPUs (1 % faster on the H200); on CPUs the build alone saved less than
     * the extra pass cost (docs/performance.md); both give the same densities to the bit */
    nl->apart = device_tune(t->list_build, d, LIST_BUILD_APART, LIST_BUILD_FUSED) == LIST_BUILD_APART;
    /* the read ahead on GPUs: the device's idle time between kernels 0.064 -> 0.049 ms per step
     * (H100, 3.9x10^6 particles); on CPUs PoCL's launches of kernels that return at once cost
     * more than the wait */
    nl->ahead_read = device_tune(t->go_ahead, d, 1, 0);
    nl->check = t->list_check != 0;
    nlist_params *p = &nl->params;
    const double support = (double)(float)(2.0 * s->h); /* as the SPH kernels hold it */
    skin_levels(p, support, s->skin, nl->levels, t->skin_c > 0.0 ? t->skin_c : NLIST_SKIN_C);
    for (int k = 0; k < 3; ++k) {
        p->tank_min[k] = k < s->dims ? (float)s->tank.min[k] : 0.0f;
        p->tank_max[k] = k < s->dims ? (float)s->tank.max[k] : 0.0f;
    }
    p->walls_outside = 0;
    p->dims = (dev_u32)s->dims;
    p->list_cap = nlist_cap(s);
    nl->parts = nlist_parts(n, p->list_cap, d->max_alloc, t->list_parts);
    if (nl->parts == 0) {
        const unsigned cap = p->list_cap;
        free(nl);
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "the neighbour lists of %zu particles (%u entries each) exceed %d buffers of %.3g GB", n,
                           cap, NLIST_MAX_PARTS, d->max_alloc / 1e9);
    }
    p->list_part_n = (dev_u32)part_n(n, nl->parts);
    char opts[256];
    snprintf(opts, sizeof opts, "-DDIMS=%d -DNLIST_CELL_LANES=%d ", s->dims, nl->lanes);
    nlist_build_options(nl, opts + strlen(opts), sizeof opts - strlen(opts));
    /* the register cap of the SPH density program, which the list build shares (sph.c) */
    const unsigned regs = device_register_cap(d, t->density_regs, 40);
    if (regs) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -cl-nv-maxrregcount=%u", regs);
    sphsim_status st = device_build(d, "nlist.cl", opts, &nl->prog, e);
    if (st == SPHSIM_OK) st = device_kernel(nl->prog, "nlist_go", &nl->k_go, e);
    if (st == SPHSIM_OK) st = device_kernel(nl->prog, "nlist_cell_fluid", &nl->k_cell_fluid, e);
    if (st == SPHSIM_OK) st = device_kernel(nl->prog, "nlist_cell_boxes", &nl->k_cell_boxes, e);
    if (st == SPHSIM_OK) st = device_kernel(nl->prog, "nlist_check", &nl->k_check, e);
    if (st == SPHSIM_OK) st = device_kernel(nl->prog, "nlist_build", &nl->k_build, e);
    if (st == SPHSIM_OK) st = device_alloc(d, 4, "neighbour lists' unused argument", &nl->dummy, e);
    for (unsigned k = 0; k < NLIST_MAX_PARTS && st == SPHSIM_OK; ++k) {
        if (k < nl->parts) {
            st = device_alloc(d, (size_t)p->list_part_n * p->list_cap * 4, "neighbour lists", &nl->list[k], e);
        } else {
            nl->list[k] = nl->dummy;
            clRetainMemObject(nl->dummy);
        }
    }
    if (st == SPHSIM_OK) st = device_alloc(d, n * 4, "neighbour counts", &nl->count, e);
    if (st == SPHSIM_OK) st = device_alloc(d, n * 16, "neighbour lists' build positions", &nl->pos_ref, e);
    if (st == SPHSIM_OK) st = device_alloc(d, sizeof(nlist_state), "neighbour lists' state", &nl->state, e);
    if (st == SPHSIM_OK) st = reset_state(nl, e);
    if (st == SPHSIM_OK) st = device_alloc(d, sizeof *p, "neighbour lists' parameters", &nl->params_buf, e);
    if (st == SPHSIM_OK) st = device_write(d, nl->params_buf, 0, sizeof *p, p, e);
    if (st == SPHSIM_OK) st = device_alloc(d, 4, "the number of cells with fluid", &nl->wet_n, e);
    if (st == SPHSIM_OK) {
        /* empty until a rebuild lists them (nlist_go empties it in every step that decides one) */
        const cl_uint zero = 0;
        st = device_write(d, nl->wet_n, 0, sizeof zero, &zero, e);
    }
    if (st != SPHSIM_OK) {
        nlist_destroy(nl);
        return st;
    }
    *out = nl;
    return SPHSIM_OK;
}

void nlist_destroy(nlist *nl)
{
    if (!nl) return;
    cl_kernel ks[NLIST_KERNELS];
    all_kernels(nl, ks);
    device_release_kernels(ks, NLIST_KERNELS);
    if (nl->read_ev) clReleaseEvent(nl->read_ev);
    if (nl->go_pin) {
        if (nl->go_host) clEnqueueUnmapMemObject(nl->d->queue, nl->go_pin, nl->go_host, 0, NULL, NULL);
        clFinish(nl->d->queue);
        clReleaseMemObject(nl->go_pin);
    }
    cl_mem ms[] = { nl->params_buf, nl->count,      nl->pos_ref, nl->state, nl->dummy,
                    nl->boxes,      nl->cell_flags, nl->wet,     nl->wet_n };
    for (size_t k = 0; k < sizeof ms / sizeof *ms; ++k)
        if (ms[k]) clReleaseMemObject(ms[k]);
    for (int k = 0; k < NLIST_MAX_PARTS; ++k)
        if (nl->list[k]) clReleaseMemObject(nl->list[k]);
    if (nl->prog) clReleaseProgram(nl->prog);
    free(nl);
}

size_t nlist_kernel_local_limit(const nlist *nl)
{
    cl_kernel ks[NLIST_KERNELS];
    all_kernels(nl, ks);
    return device_local_limit(nl->d, ks, NLIST_KERNELS);
}

void nlist_set_local(nlist *nl, size_t local) { nl->local = local; }

void nlist_set_collective(nlist *nl)
{
    nl->collective = 1;
    nl->ahead_read = 0; /* every rank's decision waits for the others' inputs anyway */
}

/* The state's words at offsets at[0 .. n) (bytes) combined over the ranks (collective, blocks):
 * the NEED_* bits OR-ed, the others (float bits of non-negative maxima, or counts) their
 * maximum. Each rank's kernels wrote them from the particles it holds; the combination is what
 * one device holding every particle writes, since each input is an OR or a maximum over
 * particles or cells, and every particle's own is written by a rank that holds it exactly
 * (docs/mpi.md). */
static sphsim_status combine(nlist *nl, const size_t *at, int n, sphsim_error *e)
{
    if (comm_size() == 1) return SPHSIM_OK; /* one rank's are the run's */
    cl_uint v[sizeof(nlist_state) / sizeof(cl_uint)];
    SPHSIM_TRY(device_read(nl->d, nl->state, 0, sizeof v, v, e));
    for (int k = 0; k < n; ++k) {
        uint32_t w = v[at[k] / sizeof *v];
        if (at[k] == offsetof(nlist_state, need)) w = comm_or_u32(w);
        else comm_max_u32(&w, 1);
        if (w != v[at[k] / sizeof *v]) SPHSIM_TRY(device_write(nl->d, nl->state, at[k], sizeof w, &w, e));
    }
    return SPHSIM_OK;
}

sphsim_status nlist_combine_built(nlist *nl, sphsim_error *e)
{
    if (!nl->collective || !nl->known_rebuild) return SPHSIM_OK;
    const size_t at[] = { offsetof(nlist_state, walkers) };
    return combine(nl, at, 1, e);
}

sphsim_status nlist_set_walls_outside(nlist *nl, int outside, sphsim_error *e)
{
    nl->params.walls_outside = outside ? 1u : 0u;
    return device_write(nl->d, nl->params_buf, 0, sizeof nl->params, &nl->params, e);
}

void nlist_build_options(const nlist *nl, char *opts, size_t size)
{
    snprintf(opts, size, "-DNLIST -DNLIST_PACK=%d -DNLIST_PARTS=%u", nl->pack, nl->parts);
}

int nlist_args(const nlist *nl, const cl_mem *dummy, karg *a)
{
    static const char *names[NLIST_MAX_PARTS] = { "nl_list", "nl_list1", "nl_list2", "nl_list3" };
#define ARG_(name, member) ((karg){ (name), sizeof(cl_mem), nl ? (const void *)&nl->member : (const void *)dummy })
    for (int k = 0; k < NLIST_MAX_PARTS; ++k) a[k] = ARG_(names[k], list[k]);
    a[4] = ARG_("nl_count", count);
    a[5] = ARG_("pos_ref", pos_ref);
    a[6] = ARG_("nl_state", state);
    a[7] = ARG_("NP", params_buf);
#undef ARG_
    return 8;
}

cl_mem nlist_state_buffer(const nlist *nl) { return nl->state; }
cl_mem nlist_cell_flags(const nlist *nl) { return nl->cell_flags; }
cl_uint nlist_ahead(const nlist *nl) { return nl->ahead; }
size_t nlist_size(const nlist *nl) { return nl->n; }
const nlist_params *nlist_get_params(const nlist *nl) { return &nl->params; }
int nlist_build_apart(const nlist *nl) { return nl->apart; }
int nlist_reads_ahead(const nlist *nl) { return nl->ahead_read; }
int nlist_known_kept(const nlist *nl) { return nl->known_kept; }
int nlist_known_rebuild(const nlist *nl) { return nl->known_rebuild; }
int nlist_no_walkers(const nlist *nl) { return nl->no_walkers; }

/* ---- the relative-motion check ---- */

sphsim_status nlist_bind(nlist *nl, cl_mem cell_start, cl_mem cell_end, cl_mem grid_params_buf, size_t n_cells,
                         const dev_state *st, sphsim_error *e)
{
    nl->cs = cell_start;
    nl->ce = cell_end;
    nl->gp = grid_params_buf;
    nl->st = st;
    cl_mem *old[3] = { &nl->boxes, &nl->cell_flags, &nl->wet };
    for (int k = 0; k < 3; ++k)
        if (*old[k]) {
            clReleaseMemObject(*old[k]);
            *old[k] = NULL;
        }
    nl->n_cells = n_cells;
    /* a grid whose boxes exceed the largest buffer runs without the check (a soft need then
     * rebuilds) and without the cells' flags (every cell is scanned) */
    if (16.0 * (double)n_cells > (double)nl->d->max_alloc) {
        nl->check = 0;
        return SPHSIM_OK;
    }
    const size_t cells = n_cells ? n_cells : 1;
    SPHSIM_TRY(device_alloc(nl->d, cells, "cells' fluid flags (neighbour lists)", &nl->cell_flags, e));
    SPHSIM_TRY(device_alloc(nl->d, 4 * cells, "the cells with fluid (neighbour lists)", &nl->wet, e));
    const cl_uint zero = 0;
    SPHSIM_TRY(device_write(nl->d, nl->wet_n, 0, sizeof zero, &zero, e));
    /* new flags are filled in a rebuild, which the check reads until the next one: the next step
     * rebuilds (as a new solver's first does anyway) */
    const cl_uint hard = NEED_HARD;
    SPHSIM_TRY(device_write(nl->d, nl->state, offsetof(nlist_state, need), sizeof hard, &hard, e));
    if (!nl->check) return SPHSIM_OK;
    return device_alloc(nl->d, 16 * cells, "cell boxes (relative-motion check)", &nl->boxes, e);
}

/* nlist_go's pass (0: the step's first decision; 1: after the check). */
static sphsim_status launch_go(nlist *nl, int force, cl_uint pass, sphsim_error *e)
{
    const cl_uint f = force ? 1u : 0u, check = nl->boxes ? 1u : 0u;
    const karg args[] = { KARG("ls", nl->state), KARG("force", f),     KARG("NP", nl->params_buf),
                          KARG("pass", pass),    KARG("check", check), KARG("wet_n", nl->wet_n) };
    SPHSIM_TRY(device_set_args(nl->d, nl->k_go, args, 6, e));
    return device_launch(nl->d, nl->k_go, 1, 1, NULL, e);
}

/* The relative-motion check (the cells' boxes, then the check) and the decision after it (all
 * return at once on the device unless the decision has GO_CHECK). every_step: launched in every
 * step, mostly to return at once (nlist_read_begin). */
static sphsim_status launch_check(nlist *nl, int every_step, sphsim_error *e)
{
    const size_t local = nl->local;
    karg args[12] = { KARG("x", nl->st->pos_next), KARG("type", nl->st->type), KARG("cell_start", nl->cs),
                      KARG("cell_end", nl->ce),    KARG("gp", nl->gp),         KARG("pos_ref", nl->pos_ref),
                      KARG("nl_state", nl->state), KARG("cref", nl->boxes),    KARG("cell_fluid", nl->cell_flags),
                      KARG("wet", nl->wet),        KARG("wet_n", nl->wet_n),   KARG_LOCAL("red", 0) };
    if (nl->lanes > 1) {
        /* two float4 per work-item, where the lanes of a cell join their boxes; a group for each
         * `per` cells (one trip each, up to 2^20 groups, which then loop), since with barriers in
         * the loop each trip of a looping group waits on memory in turn */
        const size_t per = local / ((size_t)nl->lanes < local ? (size_t)nl->lanes : local);
        const size_t groups = (nl->n_cells + per - 1) / per, cap = (size_t)1 << 20;
        args[11] = KARG_LOCAL("red", 2 * local * 4 * sizeof(cl_float));
        SPHSIM_TRY(device_set_args(nl->d, nl->k_cell_boxes, args, 12, e));
        /* launched in every step, the groups loop (device_run_strided) */
        if (every_step) SPHSIM_TRY(device_run_strided(nl->d, nl->k_cell_boxes, groups * local, local, NULL, e));
        else SPHSIM_TRY(device_launch(nl->d, nl->k_cell_boxes, (groups < cap ? groups : cap) * local, local, NULL, e));
    } else {
        args[11] = KARG_LOCAL("red", 4 * sizeof(cl_float)); /* unused */
        SPHSIM_TRY(device_set_args(nl->d, nl->k_cell_boxes, args, 12, e));
        SPHSIM_TRY(device_run_strided(nl->d, nl->k_cell_boxes, nl->n_cells, local, NULL, e));
    }
    args[11] = KARG_LOCAL("red", local * sizeof(cl_float));
    SPHSIM_TRY(device_set_args(nl->d, nl->k_check, args, 12, e));
    SPHSIM_TRY(device_run_strided(nl->d, nl->k_check, nl->n_cells, local, NULL, e));
    if (nl->collective) {
        const size_t at[] = { offsetof(nlist_state, check_max) };
        SPHSIM_TRY(combine(nl, at, 1, e));
    }
    return launch_go(nl, 0, 1, e);
}

/* ---- a step ---- */

sphsim_status nlist_begin_step(nlist *nl, int force, sphsim_error *e)
{
    nl->no_walkers = nl->known_kept = nl->known_rebuild = 0; /* until the decision is read */
    if (nl->collective) {                                    /* the last step's motion, over every rank */
        const size_t at[] = { offsetof(nlist_state, need), offsetof(nlist_state, step_max) };
        SPHSIM_TRY(combine(nl, at, 2, e));
    }
    return launch_go(nl, force, 0, e);
}

/* The step's decision from v, the state's first words as the host read them: if undecided
 * (GO_CHECK, the check not yet launched), the relative-motion check and the decision after it,
 * read again into v (*checked = 1); then *rebuild and what the host knows of the step. Both ways
 * of reading the decision end here, so that no_walkers_known follows every decision. */
static sphsim_status take_decision(nlist *nl, cl_uint v[NLIST_DECISION_WORDS], int *rebuild, int *checked,
                                   sphsim_error *e)
{
    *checked = (v[0] & GO_CHECK) != 0;
    if (*checked) {
        SPHSIM_TRY(launch_check(nl, 0, e));
        SPHSIM_TRY(device_read(nl->d, nl->state, 0, NLIST_DECISION_WORDS * sizeof *v, v, e));
    }
    *rebuild = (v[0] & GO_REBUILD) != 0;
    /* a step that keeps lists without particles over list_cap launches no _walk kernels, and so
     * does the next step's stage launched ahead while these lists are kept (a rebuild, whichever
     * read decided it, counts the walkers again) */
    nl->known_kept = !*rebuild;
    nl->known_rebuild = *rebuild;
    nl->no_walkers = !*rebuild && v[offsetof(nlist_state, walkers) / sizeof *v] == 0;
    nl->no_walkers_known = nl->no_walkers;
    return SPHSIM_OK;
}

sphsim_status nlist_decide(nlist *nl, int *rebuild, sphsim_error *e)
{
    cl_uint v[NLIST_DECISION_WORDS];
    SPHSIM_TRY(device_read(nl->d, nl->state, 0, sizeof v, v, e)); /* as fast as the go word alone */
    int checked;
    return take_decision(nl, v, rebuild, &checked, e);
}

sphsim_status nlist_read_begin(nlist *nl, sphsim_error *e)
{
    /* the check in every step (it returns at once on the device unless the decision asks for it),
     * so that one read gets the decision */
    if (nl->boxes && nl->st && nl->st->n > 0) SPHSIM_TRY(launch_check(nl, 1, e));
    if (!nl->go_host) { /* once: page-locked memory for the read, else go_word */
        cl_int perr;
        nl->go_pin =
            clCreateBuffer(nl->d->ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, sizeof nl->go_word, NULL, &perr);
        if (perr == CL_SUCCESS)
            nl->go_host = clEnqueueMapBuffer(nl->d->queue, nl->go_pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                             sizeof nl->go_word, 0, NULL, NULL, &perr);
        if (perr != CL_SUCCESS || !nl->go_host) {
            if (nl->go_pin) clReleaseMemObject(nl->go_pin);
            nl->go_pin = NULL;
            nl->go_host = nl->go_word;
        }
    }
    CL_CHECK(e, clEnqueueReadBuffer(nl->d->queue, nl->state, CL_FALSE, 0, sizeof nl->go_word, nl->go_host, 0, NULL,
                                    &nl->read_ev));
    /* the kernels launched now take the step as a kept one, and return at once on the device
     * unless it is (NLIST_AHEAD_SKIP) */
    nl->known_kept = 1;
    nl->known_rebuild = 0;
    nl->no_walkers = nl->no_walkers_known;
    nl->ahead = 1u;
    return SPHSIM_OK;
}

sphsim_status nlist_read_end(nlist *nl, int *rebuild, int *kept_ahead, sphsim_error *e)
{
    nl->ahead = 0u;
    cl_int err = clFlush(nl->d->queue);
    if (err == CL_SUCCESS) err = clWaitForEvents(1, &nl->read_ev);
    clReleaseEvent(nl->read_ev);
    nl->read_ev = NULL;
    CL_CHECK_ERR(e, err, "reading the rebuild decision");
    cl_uint v[NLIST_DECISION_WORDS];
    memcpy(v, nl->go_host, sizeof v);
    /* undecided (no check ran: the kernels launched ahead returned at once) goes on as nlist_decide */
    int checked;
    SPHSIM_TRY(take_decision(nl, v, rebuild, &checked, e));
    *kept_ahead = !checked && !*rebuild;
    return SPHSIM_OK;
}

sphsim_status nlist_enqueue_cells(nlist *nl, const dev_state *st, cl_mem cell_start, cl_mem cell_end,
                                  cl_mem grid_params_buf, sphsim_error *e)
{
    if (!nl->cell_flags) return SPHSIM_OK;
    const karg args[] = { KARG("type", st->type),      KARG("cell_start", cell_start),
                          KARG("cell_end", cell_end),  KARG("gp", grid_params_buf),
                          KARG("nl_state", nl->state), KARG("cell_fluid", nl->cell_flags),
                          KARG("wet", nl->wet),        KARG("wet_n", nl->wet_n) };
    SPHSIM_TRY(device_set_args(nl->d, nl->k_cell_fluid, args, 8, e));
    return device_run_strided(nl->d, nl->k_cell_fluid, nl->n_cells, nl->local, NULL, e);
}

sphsim_status nlist_enqueue_build(nlist *nl, const dev_state *st, cl_mem cell_start, cl_mem cell_end,
                                  cl_mem grid_params_buf, size_t local, sphsim_error *e)
{
    const cl_uint n = (cl_uint)st->n, use_cf = nl->cell_flags != NULL;
    const cl_uint stride = device_group_stride(nl->d, n, local);
    cl_mem cf = nl->cell_flags ? nl->cell_flags : nl->dummy;
    karg args[17] = { KARG("n", n),
                      KARG("pos", st->pos),
                      KARG("type", st->type),
                      KARG("cell_start", cell_start),
                      KARG("cell_end", cell_end),
                      KARG("gp", grid_params_buf),
                      KARG("cell_fluid", cf),
                      KARG("use_cf", use_cf),
                      KARG("stride", stride) };
    const int m = 9 + nlist_args(nl, &nl->dummy, args + 9);
    SPHSIM_TRY(device_set_args(nl->d, nl->k_build, args, m, e));
    return device_run1d(nl->d, nl->k_build, st->n, local, e);
}

/* ---- counters and restart state ---- */

/* Field `offset` of the state, read (blocks). */
static sphsim_status read_word(nlist *nl, size_t offset, long *out, sphsim_error *e)
{
    cl_uint w = 0;
    SPHSIM_TRY(device_read(nl->d, nl->state, offset, sizeof w, &w, e));
    *out = (long)w;
    return SPHSIM_OK;
}

sphsim_status nlist_rebuilds(nlist *nl, long *rebuilds, sphsim_error *e)
{
    return read_word(nl, offsetof(nlist_state, rebuilds), rebuilds, e);
}

sphsim_status nlist_walkers(nlist *nl, long *walkers, sphsim_error *e)
{
    return read_word(nl, offsetof(nlist_state, walkers), walkers, e);
}

sphsim_status nlist_checks(nlist *nl, long *checks, long *skipped, sphsim_error *e)
{
    SPHSIM_TRY(read_word(nl, offsetof(nlist_state, checks), checks, e));
    return read_word(nl, offsetof(nlist_state, checks_skipped), skipped, e);
}

sphsim_status nlist_level(nlist *nl, int *level, sphsim_error *e)
{
    long v = 0;
    sphsim_status st = read_word(nl, offsetof(nlist_state, level), &v, e);
    *level = (int)v;
    return st;
}

/* The restart state: four uint32 words in the host's byte order: magic, version, skin level, 0. */
#define NLIST_STATE_MAGIC 0x4c485053u /* "SPHL" */
#define NLIST_STATE_VERSION 1u

size_t nlist_state_size(void) { return 4 * sizeof(uint32_t); }

sphsim_status nlist_state_save(nlist *nl, void **blob, size_t *bytes, sphsim_error *e)
{
    *blob = NULL;
    *bytes = 0;
    int level = 0;
    SPHSIM_TRY(nlist_level(nl, &level, e));
    uint32_t *w = malloc(4 * sizeof *w);
    if (!w) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    w[0] = NLIST_STATE_MAGIC;
    w[1] = NLIST_STATE_VERSION;
    w[2] = (uint32_t)level;
    w[3] = 0;
    *blob = w;
    *bytes = 4 * sizeof *w;
    return SPHSIM_OK;
}

sphsim_status nlist_state_restore(nlist *nl, const void *blob, size_t bytes, sphsim_error *e)
{
    if (!blob || bytes == 0) return SPHSIM_OK;
    uint32_t w[4];
    if (bytes != sizeof w) return SPHSIM_OK; /* another solver's or format's state: start cold */
    memcpy(w, blob, sizeof w);
    if (w[0] != NLIST_STATE_MAGIC || w[1] != NLIST_STATE_VERSION) return SPHSIM_OK;
    if (w[2] >= NLIST_SKIN_LEVELS || w[3] != 0)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored neighbour-list state is damaged (skin level %u)",
                           (unsigned)w[2]);
    /* a device with fewer levels (a GPU run resumed on a CPU) takes its smallest skin */
    const cl_uint level = w[2] < (uint32_t)nl->levels ? w[2] : (cl_uint)(nl->levels - 1);
    /* need set: the first step rebuilds, forced or not, and with the age at its largest the need
     * does not move the level (nlist_go); after it, level, age 0 and need 0, as in the original
     * run after the snapshot step */
    const cl_uint init[5] = { GO_REBUILD, 1, 0, 0xffffffffu, level }; /* go, need, rebuilds, age, level */
    return device_write(nl->d, nl->state, 0, sizeof init, init, e);
}

/* ---- tests ---- */

sphsim_status nlist_read_lists(nlist *nl, size_t n, uint32_t *counts, uint32_t *entries, sphsim_error *e)
{
    if (n > nl->n)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "nlist_read_lists: %zu particles, the lists hold %zu", n, nl->n);
    const size_t pn = nl->params.list_part_n, cap = nl->params.list_cap;
    SPHSIM_TRY(device_read(nl->d, nl->count, 0, n * sizeof *counts, counts, e));
    uint32_t *part = NULL;
    size_t part_bytes = 0;
    sphsim_status st = SPHSIM_OK;
    for (size_t i = 0; i < n; ++i) {
        const size_t p = i / pn, ii = i % pn;
        if (ii == 0) { /* the next part's buffer */
            free(part);
            part = NULL;
            CL_CHECK(e, clGetMemObjectInfo(nl->list[p], CL_MEM_SIZE, sizeof part_bytes, &part_bytes, NULL));
            if (!(part = malloc(part_bytes))) {
                st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
                break;
            }
            if ((st = device_read(nl->d, nl->list[p], 0, part_bytes, part, e)) != SPHSIM_OK) break;
        }
        for (size_t k = 0; k < cap; ++k) {
            /* the layout of kernels/nlist_loop.h: four entries to a uint4 on GPUs, else one */
            const size_t at = nl->pack == 4 ? ((k / 4) * pn + ii) * 4 + k % 4 : k * pn + ii;
            entries[i * cap + k] = k < counts[i] && at < part_bytes / 4 ? part[at] : 0u;
        }
    }
    free(part);
    return st;
}

sphsim_status nlist_read_check_boxes(nlist *nl, float *boxes, size_t n_cells, sphsim_error *e)
{
    if (!nl->boxes || n_cells != nl->n_cells)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "nlist_read_check_boxes: %zu cells, the check has %zu%s", n_cells,
                           nl->n_cells, nl->boxes ? "" : " and is off");
    SPHSIM_TRY(device_read(nl->d, nl->boxes, 0, 16 * n_cells, boxes, e));
    /* the check's view: a cell the flags give no fluid reads "no fluid" (w = -1), whatever an
     * earlier grid left in its entry (nlist_cell_boxes writes only the cells with fluid) */
    uint8_t *flags = malloc(n_cells ? n_cells : 1);
    if (!flags) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    sphsim_status st = device_read(nl->d, nl->cell_flags, 0, n_cells, flags, e);
    for (size_t c = 0; st == SPHSIM_OK && c < n_cells; ++c)
        if (!(flags[c] & CELL_FLUID)) boxes[4 * c + 3] = -1.0f;
    free(flags);
    return st;
}

sphsim_status nlist_set_cap(nlist *nl, unsigned cap, sphsim_error *e)
{
    if (cap > nl->params.list_cap)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "nlist_set_cap: %u entries, the lists hold %u", cap,
                           nl->params.list_cap);
    nl->params.list_cap = cap;
    nl->no_walkers = nl->no_walkers_known = 0;
    /* lists built with the larger cap may now be over it: let the _walk kernels look */
    const cl_uint walkers = 1;
    SPHSIM_TRY(device_write(nl->d, nl->state, offsetof(nlist_state, walkers), sizeof walkers, &walkers, e));
    return device_write(nl->d, nl->params_buf, 0, sizeof nl->params, &nl->params, e);
}
