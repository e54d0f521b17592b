/* sim: the time loop (see sim.h). */
#include "sim.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "halo.h"
#include "nlist.h"
#include "contact.h"
#include "decomp.h"
#include "gauges.h"
#include "grid.h"
#include "init.h"
#include "motion.h"
#include "output.h"
#include "particles.h"
#include "solver.h"
#include "sph.h"
#include "state.h"
#include "writer.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The grid box covers the tank plus the boundary layers (SPH) or one radius (spheres), and
 * everything that box sweeps while a body moves (motion_swept_box: the tank's walls, and an
 * object, whose walls lie in the tank box at rest, carrying fluid along). With neighbour lists
 * the cells are (1 + skin) times wider, so that the kept grid stays valid while particles move up
 * to skin / 2 (sph.h). */
sphsim_status sim_grid_geometry(const scene *s, int lists, grid_params *gp, sphsim_error *e)
{
    double lo[3] = { 0, 0, 0 }, hi[3] = { 0, 0, 0 };
    double margin = s->mode == MODE_SPH ? (s->boundary_layers + 1) * s->spacing : s->support;
    for (int a = 0; a < s->dims; ++a) {
        lo[a] = s->tank.min[a] - margin;
        hi[a] = s->tank.max[a] + margin;
    }
    const double rest_lo[3] = { lo[0], lo[1], lo[2] }, rest_hi[3] = { hi[0], hi[1], hi[2] };
    int swept = 0; /* a moving body widens the box */
    for (int b = 0; motion_of(s, b); ++b) {
        double blo[3], bhi[3];
        memcpy(blo, rest_lo, sizeof blo);
        memcpy(bhi, rest_hi, sizeof bhi);
        motion_swept_box(motion_of(s, b), s->dims, s->t_end, s->spacing, blo, bhi);
        for (int a = 0; a < s->dims; ++a) {
            swept |= blo[a] < lo[a] || bhi[a] > hi[a];
            lo[a] = fmin(lo[a], blo[a]);
            hi[a] = fmax(hi[a], bhi[a]);
        }
    }
    /* with lists the cells are at least the list radius support (1 + skin) wide, so that the
     * cell either side holds every list candidate: a cell_ratio below 1 is raised to 1 (below 1,
     * cells of cell_ratio (1 + skin) support with one cell either side would miss candidates
     * between cell_ratio (1 + skin) and (1 + skin) support away) */
    const double ratio = lists ? fmax(s->cell_ratio, 1.0) * (1.0 + s->skin) : s->cell_ratio;
    const sphsim_status st = grid_geometry(s->dims, lo, hi, s->support, ratio, gp, e);
    if (st != SPHSIM_OK && swept && e) {
        char msg[sizeof e->msg];
        memcpy(msg, e->msg, sizeof msg);
        double ext = 0;
        for (int a = 0; a < s->dims; ++a) ext = fmax(ext, hi[a] - lo[a]);
        SPHSIM_FAIL(e, st,
                    "%s. The grid covers everything the moving bodies sweep until time.end, %g m across: slower or "
                    "shorter motion (tank.motion, objects[].motion) or a shorter time.end needs fewer cells",
                    msg, ext);
    }
    return st;
}

/* Bytes per particle of dev_state (see state.h). */
static size_t state_bytes_per_particle(const scene *s)
{
    size_t b = 4 * 16 /* pos, vel, pos_next, vel_next */;
    if (s->mode == MODE_SPH)
        b += 2 * 4 /* id */ + 2 * 1 /* type */ + sph_record_bytes(s, 0); /* pos_p (m and rho ride in pos.w
                                                                and vel.w; lists widen it, sph_list_bytes) */
    if (s->mode == MODE_PARTICLES) b += 4; /* id (gathered through pos_next; the mass rides in pos.w, the radius
                                              in vel.w, and every particle is a sphere: no types) */
    return b;
}

size_t sim_device_bytes(const scene *s)
{
    grid_params gp;
    sphsim_error e;
    size_t n = (size_t)s->n_total;
    size_t grid_b = sim_grid_geometry(s, 0, &gp, &e) == SPHSIM_OK ? grid_bytes(&gp, n) : 0;
    size_t solver_b = s->mode == MODE_PARTICLES ? contact_bytes(s, n) : 0; /* contact scratch and slots */
    const size_t geom_b = s->geom_grid_n * sizeof(float); /* the meshes' distance grids (in the solver of the mode) */
    return n * state_bytes_per_particle(s) + grid_b + solver_b + geom_b;
}

size_t sim_list_bytes(const scene *s, size_t n, unsigned long long max_alloc, const sphsim_tuning *t)
{
    grid_params gp;
    sphsim_error e;
    const size_t cells = sim_grid_geometry(s, 1, &gp, &e) == SPHSIM_OK ? (size_t)gp.n_cells : 0;
    return sph_list_bytes(s, n, cells, max_alloc, t ? t->list_parts : TUNE_AUTO);
}

/* Steps whose gauge rows one device chunk holds (gauges.h). */
#define GAUGE_CHUNK_STEPS 4096

/* Samples of (time, step) for the ETA (recent_rate). */
#define RATE_SAMPLES 64
typedef struct progress_rate {
    double t[RATE_SAMPLES];
    long step[RATE_SAMPLES];
    int head, n;
} progress_rate;

typedef struct sim_ctx {
    const scene *s;
    const sim_options *o;
    ocl_device dev;
    grid *g;
    solver sv;
    gauges *gauges; /* the scene's gauges (NULL: none) */
    dev_state st;
    particles hp;      /* host, id order */
    particles sorted;  /* host staging, device order (upload; snapshots: writer slot 0) */
    particles sorted2; /* host staging, device order (snapshots: writer slot 1) */
    output *out;
    snapshot_writer *writer;
    cl_mem pinned[2];    /* page-locked memory behind sorted and sorted2, when the device gives it */
    size_t dev_need;     /* the device memory the run's buffers take (estimate) */
    size_t pinned_bytes; /* page-locked staging memory held now */
    int dev_open;
    long first_step;    /* the step the run starts at (--resume: the last snapshot's) */
    double t_steps0;    /* s (now_s): the steps' start */
    double last_print;  /* s (now_s): the last progress line */
    progress_rate rate; /* the recent step rate, for the ETA */
    long outside_base;  /* particles found outside before this run (--resume) */
    int sidecar_said;   /* the sidecar's problem is on the log (writer_note_sidecar; several ranks) */
    /* MPI (docs/mpi.md): with more than one rank (or tuning.mpi_exchange) the particles go round
     * the host every step, each rank keeping those of its slab and their halo */
    int rank, ranks;
    int exchange;        /* the particles are exchanged (every step, or with `resident` at rebuilds) */
    int sort_check;      /* a rebuild may keep the order (grid_build_keep; tuning.sort_check) */
    int resident;        /* SPH with lists: between the lists' rebuilds the halo copies stay on the
                            device and are refreshed every step (src/halo.h); the exchange comes
                            with each rebuild, which every rank decides alike (nlist.h) */
    halo *halo;          /* with `resident` */
    float *up_x;         /* with `resident`: each uploaded row's coordinate along the slabs' axis */
    long exchanges;      /* exchanges so far */
    size_t n_ids;        /* particles in the whole run (ids 0 .. n_ids - 1) */
    size_t n_cap;        /* device rows allocated: the most particles this rank may hold */
    decomp dc;           /* the slabs */
    uint32_t *owned;     /* ascending: the ids of the particles this rank owns in this step */
    size_t n_owned;
    particles rb;        /* host rows read back from the device (n_cap) */
    cl_mem rb_pinned;    /* page-locked memory behind rb, when the device gives it */
    particles own;       /* several ranks: a snapshot's owned rows, id order */
    long written;        /* several ranks: snapshots committed (no writer thread) */
    int stop_sig;        /* the signal that stops the run, agreed over the ranks */
    long recuts;         /* the times the cuts moved */
    /* particle mode with the exchange: the device's ids are the rank's own, 0 .. n - 1 in
     * ascending particle id (the contact solver keeps its state by them), gid[] the particles' */
    int local_ids;
    uint32_t *gid;
    /* gauges on several ranks: from step ep_step[k] on, gauge j's rows come from rank
     * ep_owner[k * n_gauges + j] (a probe's or a line's: the rank whose slab holds it; -1: a
     * force, summed over the ranks) */
    long *ep_step;
    int *ep_owner;
    int n_ep;
} sim_ctx;

/* The host's physical memory (bytes; 0 if unknown), or tuning.host_memory when set, so that
 * tests can make a small machine of this one. */
static double host_physical_bytes(const sphsim_tuning *t)
{
    if (t && t->host_memory > 0.0) return t->host_memory;
    return (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

/* A staging buffer q of n particles with the arrays in `arrays`, zeroed: if the device gives it,
 * in one page-locked host buffer of its context (CL_MEM_ALLOC_HOST_PTR, mapped; *pinned), so
 * that snapshot copies run at the bus's DMA speed instead of through the driver's bounce
 * buffers (docs/performance.md, "Output"), else in ordinary memory, its pages touched. */
static sphsim_status staging_alloc(sim_ctx *c, particles *q, size_t n, unsigned arrays, cl_mem *pinned, sphsim_error *e)
{
    const size_t bytes = particles_row_bytes(arrays) * (n ? n : 1);
    cl_int err = CL_INVALID_VALUE;
    cl_mem buf = NULL;
    *pinned = NULL;
    /* NVIDIA's OpenCL gives such a buffer device memory as well (at 1.08x10^9 particles two
     * 40 GB of it left too little for the state: docs/performance.md), so
     * only while the device's estimate leaves room; and page-locked memory cannot be swapped
     * out, so at most a quarter of the host's */
    const double locked = (double)(c->pinned_bytes + bytes);
    if ((double)c->dev_need + locked <= 0.9 * (double)c->dev.global_mem &&
        locked <= 0.25 * host_physical_bytes(c->o->tune))
        buf = clCreateBuffer(c->dev.ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS && buf) {
        char *p =
            clEnqueueMapBuffer(c->dev.queue, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
        if (err == CL_SUCCESS && p) {
            particles_place(q, n, arrays, p); /* positions first: staging_unpin unmaps through q->pos */
            *pinned = buf;
            c->pinned_bytes += bytes;
        } else {
            clReleaseMemObject(buf);
        }
    }
    if (!*pinned) SPHSIM_TRY(particles_alloc_some(q, n, arrays, e));
    /* zeros, and the pages now, over threads: at 1.08x10^9 particles the first snapshot's copy
     * into fresh ordinary memory took 32 s (docs/performance.md) */
    particles_touch(q, c->o->tune->init_threads);
    return SPHSIM_OK;
}

/* Undo staging_alloc's page-locked buffer (before the device is closed); q's arrays are gone
 * afterwards. */
static void staging_unpin(sim_ctx *c, particles *q, cl_mem *pinned)
{
    if (!*pinned) return;
    clEnqueueUnmapMemObject(c->dev.queue, *pinned, q->pos, 0, NULL, NULL);
    clFinish(c->dev.queue);
    clReleaseMemObject(*pinned);
    *pinned = NULL;
    const size_t n = q->n;
    c->pinned_bytes -= particles_row_bytes(particles_arrays(q)) * (n ? n : 1);
    memset(q, 0, sizeof *q);
    q->n = n;
}

/* The host arrays that snapshots take, in the staging buffers and in id order (c->hp): those
 * of the fields the file holds (output_fields: position, velocity, id and type always), and in
 * id order the masses too, which the first snapshot records (output.c) and which never change.
 * Only these are kept through the run: 37 bytes per particle in each staging buffer and 41 in
 * id order for the smallest set, 53 and 53 for every field (docs/performance.md). */
static unsigned staging_arrays(const scene *s) { return output_fields(s) & FIELDS_ALL; }
static unsigned id_order_arrays(const scene *s) { return (output_fields(s) & FIELDS_ALL) | FIELD_MASS; }

/* Particle mode: the contact solver's state that each snapshot in the writer's hands holds (one
 * per staging buffer: 108 bytes a sphere in 3D, 76 in 2D; contact_state_size), and what saving
 * it takes besides (three ids a sphere and one block of slots: contact_state_save). */
static size_t state_blob_bytes(const scene *s, size_t n)
{
    return s->mode == MODE_PARTICLES ? contact_state_size(s->dims, n) : 0;
}
static size_t state_save_bytes(const scene *s, size_t n)
{
    return s->mode == MODE_PARTICLES ? 12 * n + contact_save_chunk_bytes(s->dims) : 0;
}

/* Staging buffers: two let the steps go on while the writer writes one snapshot and the next
 * is copied; one, with which a snapshot waits until the writer has finished the one before,
 * when two (each with its contact state) and the id-order copy would take more than half the
 * host's physical memory (about 5x10^8 particles on a 128 GB host). tuning.staging_buffers sets
 * it (tests). */
static int staging_slots(const scene *s, size_t n, const sphsim_tuning *t)
{
    if (t && (t->staging_buffers == 1 || t->staging_buffers == 2)) return t->staging_buffers;
    const double phys = host_physical_bytes(t);
    const double need =
        (double)n * (2.0 * particles_row_bytes(staging_arrays(s)) + particles_row_bytes(id_order_arrays(s))) +
        2.0 * (double)state_blob_bytes(s, n);
    return phys > 0 && need > 0.5 * phys ? 1 : 2;
}

size_t sim_host_bytes(const scene *s, const sphsim_tuning *t)
{
    const size_t n = (size_t)s->n_total;
    /* the initial state: every array (particles_alloc), and for SPH the hydrostatic start's
     * column of each particle and the fluid grouped by column (init_hydrostatic.c) */
    const size_t init =
        n * particles_row_bytes(FIELDS_ALL) + (s->mode == MODE_SPH ? 4 * n + 4 * (size_t)s->n_fluid : 0);
    /* the run: the staging buffers and the id-order copy (staging_arrays, id_order_arrays), the
     * writer's inverse of the id order (4 bytes), the output's packing buffer (12 bytes a row
     * for at most 2^22 rows: output.c), and in particle mode a contact state per staging buffer
     * and the save's scratch */
    const size_t block = n < ((size_t)1 << 22) ? n : (size_t)1 << 22, slots = (size_t)staging_slots(s, n, t);
    const size_t run = n * (slots * particles_row_bytes(staging_arrays(s)) + particles_row_bytes(id_order_arrays(s)) +
                            4) +
                       12 * block + slots * state_blob_bytes(s, n) + state_save_bytes(s, n);
    return init > run ? init : run;
}

static void release_mem(cl_mem *m)
{
    if (*m) clReleaseMemObject(*m);
    *m = NULL;
}

static void state_release(dev_state *st)
{
    cl_mem *all[] = { &st->pos,    &st->vel,  &st->pos_next, &st->vel_next, &st->pos_p, &st->id,
                      &st->id_tmp, &st->type, &st->type_tmp, &st->flags,    &st->owned };
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i) release_mem(all[i]);
}

static sphsim_status state_alloc(sim_ctx *c, size_t n, int lists, sphsim_error *e)
{
    ocl_device *d = &c->dev;
    dev_state *st = &c->st;
    st->n = n;
    SPHSIM_TRY(device_alloc(d, n * 16, "positions", &st->pos, e));
    SPHSIM_TRY(device_alloc(d, n * 16, "velocities", &st->vel, e));
    SPHSIM_TRY(device_alloc(d, n * 16, "next positions", &st->pos_next, e));
    SPHSIM_TRY(device_alloc(d, n * 16, "next velocities", &st->vel_next, e));
    SPHSIM_TRY(device_alloc(d, n * 4, "ids", &st->id, e));
    if (c->s->mode == MODE_SPH) {
        SPHSIM_TRY(device_alloc(d, n, "types", &st->type, e));
        /* SPH's snapshots use id_tmp as scratch (enqueue_read_back); particle mode gathers
         * through pos_next instead (rebuild_grid) */
        SPHSIM_TRY(device_alloc(d, n * 4, "ids (scratch)", &st->id_tmp, e));
        SPHSIM_TRY(device_alloc(d, n, "types (scratch)", &st->type_tmp, e));
        SPHSIM_TRY(device_alloc(d, n * sph_record_bytes(c->s, lists), "SPH positions with pressures", &st->pos_p, e));
    }
    if (c->exchange) SPHSIM_TRY(device_alloc(d, n, "owned flags", &st->owned, e));
    SPHSIM_TRY(device_alloc(d, 8, "flags", &st->flags, e));
    cl_uint zero[2] = { 0, 0 };
    SPHSIM_TRY(device_write(d, st->flags, 0, sizeof zero, zero, e));
    return SPHSIM_OK;
}

/* Host particle k (id order) as the device holds it (state.h): the mass in pos.w; a sphere's
 * radius in vel.w, an integrated density (state) in vel.w of fluid particles
 * (kernels/sph_density.cl). */
static decomp_rec host_record(const sim_ctx *c, size_t k)
{
    const particles *p = &c->hp;
    decomp_rec r;
    memset(&r, 0, sizeof r);
    memcpy(r.pos, &p->pos[4 * k], 16);
    memcpy(r.vel, &p->vel[4 * k], 16);
    r.pos[3] = p->mass[k];
    if (c->s->density == DENSITY_CONTINUITY && p->type[k] == PTYPE_FLUID) r.vel[3] = p->rho[k];
    if (c->s->mode == MODE_PARTICLES) r.vel[3] = p->radius[k];
    r.id = p->id[k];
    r.type = p->type[k];
    return r;
}

/* Rows i0 .. i0 + m - 1 of the device state from m rows of `row` bytes (each a decomp_rec
 * first), through the staging rows q (at least m). Positions and velocities go to
 * pos_next/vel_next, as left by a step. The device's ids: the particles' (c->local_ids == 0) or
 * the rows' indices i0, i0 + 1, ... (decomp_start). */
static sphsim_status upload_rows(sim_ctx *c, particles *q, const void *rows, size_t row, size_t m, size_t i0,
                                 sphsim_error *e)
{
    ocl_device *d = &c->dev;
    dev_state *st = &c->st;
    for (size_t i = 0; i < m; ++i) {
        const decomp_rec *r = (const decomp_rec *)((const unsigned char *)rows + i * row);
        memcpy(&q->pos[4 * i], r->pos, 16);
        memcpy(&q->vel[4 * i], r->vel, 16);
        q->id[i] = c->local_ids ? (uint32_t)(i0 + i) : r->id;
        q->type[i] = r->type;
        if (c->up_x) c->up_x[i0 + i] = r->pos[c->dc.axis];
    }
    if (m == 0) return SPHSIM_OK;
    if (st->owned) {
        uint8_t *own = malloc(m);
        if (!own) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu owned flags", m);
        for (size_t i = 0; i < m; ++i) own[i] = ((const decomp_rec *)((const unsigned char *)rows + i * row))->owned;
        const sphsim_status ws = device_write(d, st->owned, i0, m, own, e);
        free(own);
        SPHSIM_TRY(ws);
    }
    SPHSIM_TRY(device_write(d, st->pos_next, i0 * 16, m * 16, q->pos, e));
    SPHSIM_TRY(device_write(d, st->vel_next, i0 * 16, m * 16, q->vel, e));
    SPHSIM_TRY(device_write(d, st->id, i0 * 4, m * 4, q->id, e));
    if (st->type) SPHSIM_TRY(device_write(d, st->type, i0, m, q->type, e)); /* SPH only (state.h) */
    return SPHSIM_OK;
}

/* The arrays upload_rows and the exchange's read-back use. */
#define ROW_ARRAYS (FIELD_POSITION | FIELD_VELOCITY | FIELD_ID | FIELD_TYPE)

/* Upload host particles (id order) into the device arrays in `order` (ids in device order;
 * NULL = id order), through a staging buffer of UPLOAD_BLOCK rows (page-locked when the device
 * gives it), so that no second copy of the whole state is needed. */
#define UPLOAD_BLOCK ((size_t)1 << 21)
static sphsim_status state_upload(sim_ctx *c, const uint32_t *order, sphsim_error *e)
{
    const size_t n = c->hp.n, rows = n < UPLOAD_BLOCK ? (n ? n : 1) : UPLOAD_BLOCK;
    particles q;
    cl_mem pinned = NULL;
    decomp_rec *r = malloc(rows * sizeof *r);
    if (!r) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu upload rows", rows);
    sphsim_status st = staging_alloc(c, &q, rows, ROW_ARRAYS, &pinned, e);
    if (st != SPHSIM_OK) {
        free(r);
        return st;
    }
    for (size_t i0 = 0; i0 < n && st == SPHSIM_OK; i0 += rows) {
        const size_t m = n - i0 < rows ? n - i0 : rows;
        for (size_t i = 0; i < m; ++i) r[i] = host_record(c, order ? order[i0 + i] : i0 + i);
        st = upload_rows(c, &q, r, sizeof *r, m, i0, e);
    }
    free(r);
    staging_unpin(c, &q, &pinned);
    particles_free(&q);
    return st;
}

/* ---- MPI: the slabs and the exchange (docs/mpi.md) ---- */

static sphsim_status enqueue_read_back(sim_ctx *c, particles *q, cl_event *ready, sphsim_error *e);

/* Halo width in search radii (SPH supports): a particle's step reads its neighbours' densities
 * (one radius), theirs their neighbours' positions (two), and the walls' pressures extrapolated
 * from the fluid around them (three); one more for the lists' skin and rounding at the edge.
 * With the halo kept between exchanges (`resident`), every particle may move up to
 * nlist_max_move supports before the lists and the exchange go, an owned one out of its slab
 * and another towards it: 3 + 2 nlist_max_move + 1/2 (a step's motion past that bound, and
 * rounding), no less than 4 (the default skin 0.1 takes 3.9). */
#define HALO_RADII 4.0
static double halo_radii(const sim_ctx *c)
{
    if (c->s->mode == MODE_PARTICLES) return 2.0 * c->s->contact_iterations + 4.0; /* each pass one contact further */
    return c->resident ? fmax(HALO_RADII, 3.5 + 2.0 * nlist_max_move(c->s->skin)) : HALO_RADII;
}

/* The ids of the owned rows of `rows` (n of `row` bytes, ascending id) into c->owned, and with
 * local ids every row's id into c->gid. */
static sphsim_status take_owned(sim_ctx *c, const void *rows, size_t n, size_t row, sphsim_error *e)
{
    uint32_t *o = realloc(c->owned, (n ? n : 1) * sizeof *o);
    if (!o) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu particle ids", n);
    c->owned = o;
    uint32_t *g = c->local_ids ? realloc(c->gid, (n ? n : 1) * sizeof *g) : NULL;
    if (c->local_ids && !g) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu particle ids", n);
    if (g) c->gid = g;
    c->n_owned = 0;
    for (size_t i = 0; i < n; ++i) {
        const decomp_rec *r = (const decomp_rec *)((const unsigned char *)rows + i * row);
        if (r->owned) o[c->n_owned++] = r->id;
        if (g) g[i] = r->id;
    }
    return SPHSIM_OK;
}

/* The particle id of device id k. */
static uint32_t global_id(const sim_ctx *c, uint32_t k) { return c->local_ids ? c->gid[k] : k; }

/* The first split, from the whole initial (or resumed) state every rank holds: slabs along the
 * grid box's longest axis, cut at equal particle counts; this rank's records (its slab and
 * halo, ascending id) into *loc, and the device rows it allocates (c->n_cap: twice the most any
 * rank holds now, so that particles may crowd into a slab before the cuts follow them). */
static sphsim_status decomp_start(sim_ctx *c, const grid_params *gp, decomp_rec **loc, size_t *n_loc, sphsim_error *e)
{
    const particles *p = &c->hp;
    double lo[3] = { 0, 0, 0 }, hi[3] = { 0, 0, 0 };
    for (int a = 0; a < 3; ++a) {
        lo[a] = gp->origin[a];
        hi[a] = lo[a] + gp->ncell[a] * (double)gp->cell_size;
    }
    /* a height gauge's line must lie in one slab: not along the vertical */
    int lines = 0;
    for (int k = 0; k < c->s->n_gauges; ++k) lines |= c->s->gauges[k].type == GAUGE_HEIGHT;
    const int ax = decomp_axis(lo, hi, lines ? c->s->dims - 1 : c->s->dims);
    SPHSIM_TRY(decomp_init(&c->dc, c->ranks, ax, lo[ax], hi[ax], halo_radii(c) * gp->radius, e));
    uint64_t *hist = calloc(DECOMP_BINS, sizeof *hist);
    if (!hist) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the decomposition");
    for (size_t k = 0; k < p->n; ++k) hist[decomp_bin(&c->dc, p->pos[4 * k + ax])]++;
    decomp_cut(&c->dc, hist);
    free(hist);
    size_t m = 0;
    for (size_t k = 0; k < p->n; ++k) {
        int a, b;
        decomp_reach(&c->dc, p->pos[4 * k + ax], &a, &b);
        m += a <= c->rank && c->rank <= b;
    }
    decomp_rec *r = malloc((m ? m : 1) * sizeof *r);
    if (!r) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu particles", m);
    m = 0;
    for (size_t k = 0; k < p->n; ++k) {
        const double x = p->pos[4 * k + ax];
        int a, b;
        decomp_reach(&c->dc, x, &a, &b);
        if (a > c->rank || c->rank > b) continue;
        r[m] = host_record(c, k);
        r[m++].owned = decomp_owner(&c->dc, x) == c->rank;
    }
    sphsim_status st = take_owned(c, r, m, sizeof *r, e);
    if (st != SPHSIM_OK) {
        free(r);
        return st;
    }
    const size_t most = (size_t)comm_max_long((long)m), cap = 2 * most + 1024;
    c->n_cap = cap < p->n ? cap : p->n;
    *loc = r;
    *n_loc = m;
    return SPHSIM_OK;
}

/* From `step` on, with the cuts as they are: each gauge's rank (gauges on several ranks; see
 * sim_ctx), and the walls this rank sums for the force gauges (its slab). */
static sphsim_status gauge_owners(sim_ctx *c, long step, sphsim_error *e)
{
    const scene *s = c->s;
    if (!c->gauges || c->ranks < 2) return SPHSIM_OK;
    const int n = s->n_gauges, k = c->n_ep;
    long *st = realloc(c->ep_step, (size_t)(k + 1) * sizeof *st);
    if (st) c->ep_step = st;
    int *ow = st ? realloc(c->ep_owner, (size_t)(k + 1) * (size_t)n * sizeof *ow) : NULL;
    if (!ow) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the gauges' ranks");
    c->ep_owner = ow;
    c->ep_step[k] = step;
    /* a probe rides with a moving tank: its place at this step */
    motion_frame fr;
    const int moves = s->tank_motion.n_segments > 0;
    if (moves) motion_frame_at(&s->tank_motion, (double)step * s->dt, &fr);
    for (int j = 0; j < n; ++j) {
        const scene_gauge *g = &s->gauges[j];
        double x[3] = { g->point[0], g->point[1], g->point[2] };
        if (moves) motion_frame_place(&fr, x, x);
        ow[k * n + j] = g->type == GAUGE_FORCE ? -1 : decomp_owner(&c->dc, x[c->dc.axis]);
    }
    c->n_ep = k + 1;
    const int r = c->rank;
    gauges_own(c->gauges, c->dc.axis, r == 0 ? -FLT_MAX : (float)c->dc.cut[r],
               r == c->ranks - 1 ? FLT_MAX : (float)c->dc.cut[r + 1]);
    return SPHSIM_OK;
}

/* Gauges on several ranks, at a snapshot: every rank's rows of blocks b (the same steps on
 * every rank), each probe's and line's rows kept on the rank that owned it at the row's step and
 * zeroed elsewhere, then summed into rank 0's: the owner's rows as they are (x + 0 = x), the
 * force gauges' the sum of the ranks' slabs. */
static void gauge_rows_combine(sim_ctx *c, gauge_block *b)
{
    const scene *s = c->s;
    for (; b; b = b->next) {
        size_t total = 0;
        for (int j = 0; j < s->n_gauges; ++j) {
            const scene_gauge *g = &s->gauges[j];
            const size_t cols = (size_t)gauge_cols(s, g);
            total += (size_t)b->rows[j] * cols;
            const long first = (b->step0 + g->every - 1) / g->every * g->every;
            for (long q = 0; q < b->rows[j]; ++q) {
                const long step = first + q * g->every;
                int k = c->n_ep - 1;
                while (k > 0 && c->ep_step[k] > step) --k;
                const int owner = c->ep_owner[k * s->n_gauges + j];
                if (owner >= 0 && owner != c->rank) memset(b->data + b->offset[j] + (size_t)q * cols, 0, cols * 4);
            }
        }
        comm_sum_float_root(b->data, total);
    }
}

/* One exchange, between steps (the state in pos_next/vel_next): every rank reads its particles
 * back (and in particle mode the contact solver's carried state, which rides after each
 * particle's record), keeps those it owns, moves the cuts if the counts have drifted apart
 * (tuning.mpi_rebalance), sends each particle to the ranks whose slab or halo holds it, and
 * uploads what it receives in ascending id, so that the grid's stable sort orders every cell by
 * id on any number of ranks (docs/mpi.md: why the result is the same). */
static sphsim_status exchange(sim_ctx *c, long step, sphsim_error *e)
{
    dev_state *st = &c->st;
    particles *q = &c->rb;
    const size_t n = st->n;
    ocl_device *d = &c->dev;
    contact_solver *cs = c->s->mode == MODE_PARTICLES ? c->sv.impl : NULL;
    const size_t rw = cs ? contact_row_words(cs) : 0, row = sizeof(decomp_rec) + 4 * rw;
    c->exchanges++;
    if (n) {
        SPHSIM_TRY(device_read(d, st->pos_next, 0, n * 16, q->pos, e));
        SPHSIM_TRY(device_read(d, st->vel_next, 0, n * 16, q->vel, e));
        SPHSIM_TRY(device_read(d, st->id, 0, n * 4, q->id, e));
        if (st->type) SPHSIM_TRY(device_read(d, st->type, 0, n, q->type, e)); /* else spheres (c->rb) */
    }
    uint8_t *own = malloc(n ? n : 1);
    if (!own) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu owned flags", n);
    sphsim_status rst = n ? device_read(d, st->owned, 0, n, own, e) : SPHSIM_OK;
    /* the carried state by device id, sphere partners named by particle id */
    uint32_t *carried = NULL;
    int warm = 0;
    if (cs && rst == SPHSIM_OK) {
        void *blob = NULL;
        size_t bytes = 0;
        carried = malloc((n ? n : 1) * rw * 4);
        rst = carried ? contact_state_save(cs, NULL, st, &blob, &bytes, e)
                      : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the contact state");
        if (rst == SPHSIM_OK) rst = contact_state_rows(cs, blob, bytes, n, c->gid, carried, &warm, e);
        free(blob);
    }
    /* the carried impulses are the run's, not this rank's: a rank that held no sphere carries
     * none of its own, yet restores those it receives */
    if (cs) warm = comm_or_u32(warm != 0) != 0;
    unsigned char *mine = rst == SPHSIM_OK ? malloc((c->n_owned ? c->n_owned : 1) * row) : NULL;
    if (rst == SPHSIM_OK && !mine)
        rst = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu particles", c->n_owned);
    size_t k = 0;
    for (size_t i = 0; rst == SPHSIM_OK && i < n && k < c->n_owned; ++i) {
        if (!own[i]) continue;
        const uint32_t id = global_id(c, q->id[i]);
        decomp_rec *r = (decomp_rec *)(mine + row * k++);
        memset(r, 0, sizeof *r);
        memcpy(r->pos, &q->pos[4 * i], 16);
        memcpy(r->vel, &q->vel[4 * i], 16);
        r->id = id;
        r->type = q->type[i];
        if (cs) memcpy(r + 1, carried + (size_t)q->id[i] * rw, rw * 4);
    }
    free(carried);
    free(own);
    if (rst == SPHSIM_OK && k != c->n_owned)
        rst = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "MPI rank %d: %zu of its %zu particles came back from the device",
                          c->rank, k, c->n_owned);
    if (rst != SPHSIM_OK) {
        free(mine);
        return rst;
    }
    /* the cuts: every rank decides on the same counts, so all move them or none */
    long *count = malloc((size_t)c->ranks * sizeof *count);
    uint64_t *hist = calloc(DECOMP_BINS, sizeof *hist);
    if (!count || !hist) {
        free(mine);
        free(count);
        free(hist);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the decomposition");
    }
    comm_allgather_long((long)k, count);
    const double limit = c->o->tune->mpi_rebalance > 0.0 ? c->o->tune->mpi_rebalance : 0.1;
    const int recut = decomp_imbalance(count, c->ranks) > limit;
    c->recuts += recut;
    if (recut) {
        for (size_t i = 0; i < k; ++i) hist[decomp_bin(&c->dc, ((decomp_rec *)(mine + row * i))->pos[c->dc.axis])]++;
        comm_sum_u64(hist, DECOMP_BINS);
        decomp_cut(&c->dc, hist);
    }
    free(count);
    free(hist);
    if (recut && (rst = gauge_owners(c, step, e)) != SPHSIM_OK) {
        free(mine);
        return rst;
    }
    void *send = NULL;
    size_t bytes[DECOMP_MAX_RANKS];
    rst = decomp_route(&c->dc, mine, k, row, &send, bytes, e);
    free(mine);
    SPHSIM_TRY(rst);
    void *recv = NULL;
    size_t got = 0;
    rst = comm_exchange(send, bytes, &recv, &got, e);
    free(send);
    SPHSIM_TRY(rst);
    const size_t m = got / row;
    rst = decomp_sort(recv, m, row, e);
    if (m > c->n_cap)
        rst = SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                          "MPI rank %d: its slab and halo hold %zu particles, more than the %zu its device buffers "
                          "were sized for at the start; run on more ranks",
                          c->rank, m, c->n_cap);
    if (rst == SPHSIM_OK) rst = take_owned(c, recv, m, row, e);
    if (rst == SPHSIM_OK) rst = upload_rows(c, q, recv, row, m, 0, e);
    if (rst == SPHSIM_OK) st->n = m;
    if (rst == SPHSIM_OK && cs) rst = contact_set_ids(cs, c->gid, m, e);
    if (rst == SPHSIM_OK && cs) { /* the carried state again, by the new device ids */
        uint32_t *rows = malloc((m ? m : 1) * rw * 4);
        void *blob = NULL;
        size_t bb = 0;
        if (!rows) rst = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the contact state");
        for (size_t i = 0; rst == SPHSIM_OK && i < m; ++i)
            memcpy(rows + i * rw, (unsigned char *)recv + i * row + sizeof(decomp_rec), rw * 4);
        if (rst == SPHSIM_OK) rst = contact_state_join(cs, rows, m, c->gid, warm, &blob, &bb, e);
        if (rst == SPHSIM_OK) rst = contact_state_restore(cs, st, blob, bb, e);
        free(rows);
        free(blob);
    }
    free(recv);
    return rst;
}

/* Particle mode on several ranks (local ids), at a snapshot: this rank's share of the run's
 * contact state, by particle id (contact_state_runs): the rows of the spheres it owns, from its
 * own blob (contact_state_save, partners by device id), for one collective write. */
static sphsim_status share_state(sim_ctx *c, const void *blob, size_t bytes, output_state_share *sh, void **data,
                                 uint64_t **run, sphsim_error *e)
{
    contact_solver *cs = c->sv.impl;
    const size_t n = c->st.n, rw = contact_row_words(cs);
    uint32_t *rows = malloc((n ? n : 1) * rw * 4), *mine = malloc((c->n_owned ? c->n_owned : 1) * rw * 4);
    uint32_t *ids = malloc((c->n_owned ? c->n_owned : 1) * 4);
    int warm = 0;
    sphsim_status st = rows && mine && ids ? contact_state_rows(cs, blob, bytes, n, c->gid, rows, &warm, e)
                                           : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the contact state");
    size_t k = 0; /* the owned rows, in ascending id as the device numbers them */
    for (size_t i = 0; st == SPHSIM_OK && i < n; ++i) {
        if (decomp_find(c->owned, c->n_owned, c->gid[i]) < 0) continue;
        ids[k] = c->gid[i];
        memcpy(mine + k * rw, rows + i * rw, rw * 4);
        ++k;
    }
    warm = (int)comm_or_u32((uint32_t)warm);
    size_t n_runs = 0, total = 0;
    if (st == SPHSIM_OK)
        st = contact_state_runs(cs, mine, ids, k, c->n_ids, warm, c->rank == 0, data, run, &n_runs, &total, e);
    *sh = (output_state_share){ *data, *run, n_runs, total };
    free(rows);
    free(mine);
    free(ids);
    return st;
}

/* Particle mode on several ranks (local ids), at the start: the stored contact state, by particle
 * id, made this rank's (its particles' rows, partners named by device id) and restored. */
static sphsim_status restore_share(sim_ctx *c, const void *blob, size_t bytes, sphsim_error *e)
{
    contact_solver *cs = c->sv.impl;
    const size_t n = c->st.n, rw = contact_row_words(cs);
    uint32_t *all = malloc((c->n_ids ? c->n_ids : 1) * rw * 4), *mine = malloc((n ? n : 1) * rw * 4);
    int warm = 0;
    void *b = NULL;
    size_t bb = 0;
    sphsim_status st = all && mine ? contact_state_rows(cs, blob, bytes, c->n_ids, NULL, all, &warm, e)
                                   : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the contact state");
    for (size_t k = 0; st == SPHSIM_OK && k < n; ++k) memcpy(mine + k * rw, all + (size_t)c->gid[k] * rw, rw * 4);
    if (st == SPHSIM_OK) st = contact_state_join(cs, mine, n, c->gid, warm, &b, &bb, e);
    if (st == SPHSIM_OK) st = contact_state_restore(cs, &c->st, b, bb, e);
    free(all);
    free(mine);
    free(b);
    if (st == SPHSIM_E_IO && e) {
        char msg[sizeof e->msg];
        memcpy(msg, e->msg, sizeof msg);
        st = SPHSIM_FAIL(e, SPHSIM_E_IO, "%s: %s", c->o->resume_path, msg);
    }
    return st;
}

/* A snapshot on several ranks, written collectively with parallel HDF5 (docs/mpi.md, "Output and
 * restart"): each rank reads its rows back (as enqueue_read_back does for one), puts those of
 * the particles it owns in id order (c->own) and writes them at their id positions of the
 * shared file, in one collective transfer per dataset (output_write_share); rank 0 adds the
 * records, the gauges' rows, the commit and the solver state; of particle mode's state every rank
 * writes its owned spheres' rows, by particle id (share_state). Synchronous: every rank waits for
 * the write and its syncs. */
static sphsim_status write_snapshot_ranks(sim_ctx *c, long step, const cl_uint flags[2], sim_result *r, sphsim_error *e)
{
    const double t0 = now_s();
    snapshot_job job = { 0 };
    job.time = step * c->s->dt;
    job.step = step;
    job.put_backs = (long)flags[1];
    /* spheres: the contacts counted per sphere, summed over the owned ones below */
    uint32_t *touch = NULL;
    if (c->local_ids) {
        touch = malloc((c->st.n ? c->st.n : 1) * sizeof *touch);
        if (!touch) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu contact counts", c->st.n);
        sphsim_status cst = contact_count_each(c->sv.impl, c->g, &c->st, touch, e);
        if (cst != SPHSIM_OK) {
            free(touch);
            return cst;
        }
    } else {
        SPHSIM_TRY(c->sv.ops->snapshot(c->sv.impl, c->g, &c->st, &job.n_contacts, e));
    }
    sphsim_status st = c->sv.ops->save_state(c->sv.impl, c->g, &c->st, &job.state, &job.state_bytes, e);
    output_state_share share = { 0 };
    void *share_data = NULL;
    uint64_t *share_run = NULL;
    if (c->local_ids) { /* every rank takes part, also after a failure of its own */
        const sphsim_status sst = share_state(c, st == SPHSIM_OK ? job.state : NULL, st == SPHSIM_OK ? job.state_bytes : 0,
                                              &share, &share_data, &share_run, e);
        if (st == SPHSIM_OK) st = sst;
    }
    if (c->rank != 0 || c->local_ids) {
        free(job.state);
        job.state = NULL;
    }
    cl_event ev = NULL;
    particles *x = &c->rb, *own = &c->own;
    if (st == SPHSIM_OK) st = enqueue_read_back(c, x, &ev, e);
    if (st == SPHSIM_OK && ev)
        st = clWaitForEvents(1, &ev) == CL_SUCCESS ? SPHSIM_OK
                                    : SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "reading a snapshot back failed");
    if (ev) clReleaseEvent(ev);
    for (size_t i = 0; st == SPHSIM_OK && c->local_ids && i < c->st.n; ++i) x->id[i] = c->gid[x->id[i]];
    /* the owned rows in ascending id (c->owned's order), array by array (staging_arrays; masses
     * and radii are taken from pos.w and vel.w below) */
    const struct {
        void *src, *dst;
        size_t size;
    } col[] = {
        { x->pos, own->pos, 16 },      { x->vel, own->vel, 16 },   { x->rho, own->rho, 4 },
        { x->pressure, own->pressure, 4 }, { x->mass, own->mass, 4 }, { x->radius, own->radius, 4 },
        { x->omega, own->omega, 12 },  { x->id, own->id, 4 },      { x->type, own->type, 1 },
    };
    const size_t n = c->st.n;
    size_t k = 0;
    long touching = 0;
    for (size_t i = 0; st == SPHSIM_OK && i < n && k < c->n_owned; ++i) {
        const long j = decomp_find(c->owned, c->n_owned, x->id[i]);
        if (j < 0) continue;
        for (size_t a = 0; a < sizeof col / sizeof *col; ++a)
            if (col[a].src && col[a].dst)
                memcpy((unsigned char *)col[a].dst + (size_t)j * col[a].size,
                       (const unsigned char *)col[a].src + i * col[a].size, col[a].size);
        if (touch) touching += (long)touch[i];
        ++k;
    }
    free(touch);
    if (st == SPHSIM_OK && k != c->n_owned)
        st = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "MPI snapshot: rank %d holds %zu of the %zu particles it owns", c->rank, k,
                         c->n_owned);
    own->n = c->n_owned;
    if (st == SPHSIM_OK) particles_from_lanes(own, c->s->mode == MODE_PARTICLES);
    if (c->local_ids) job.n_contacts = comm_sum_long(touching);
    /* the gauges' rows up to this step, combined on rank 0 (gauge_rows_combine); every rank
     * writes the same rows' shape, rank 0's values */
    sphsim_status gst = gauges_take(c->gauges, step + 1, &job.gauges, e);
    if (gst == SPHSIM_OK) gst = gauge_blocks_wait(job.gauges, e);
    if (st == SPHSIM_OK) st = gst;
    if (comm_or_u32(st != SPHSIM_OK) == 0) gauge_rows_combine(c, job.gauges);
    if (comm_or_u32(st != SPHSIM_OK)) {
        gauge_blocks_free(job.gauges);
        free(job.state);
        free(share_data);
        free(share_run);
        return st != SPHSIM_OK ? st : SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "MPI snapshot: another rank failed");
    }
    /* the particles outside the tank: each rank counts those it owns */
    output_snapshot_info si = { 0 };
    si.time = job.time;
    si.step = job.step;
    si.n_contacts = job.n_contacts;
    si.n_outside = c->outside_base + job.put_backs + comm_sum_long(writer_count_outside(c->s, own, job.time));
    if (si.n_outside > r->n_outside && c->o->log)
        fprintf(c->o->log, "warning: %ld time(s) a particle was found outside the tank so far (t = %.6g s, step %ld)\n",
                si.n_outside, si.time, si.step);
    if (si.n_outside > r->n_outside) r->n_outside = si.n_outside;
    long state_bytes = (long)job.state_bytes; /* rank 0's */
    comm_broadcast(&state_bytes, sizeof state_bytes, 0);
    for (const gauge_block *b = job.gauges; st == SPHSIM_OK && b; b = b->next) {
        const output_gauge_rows rows = { b->step0, b->rows, b->offset, b->data };
        st = output_write_gauges(c->out, &rows, e);
    }
    if (st == SPHSIM_OK)
        st = c->local_ids ? output_write_shares(c->out, own, c->owned, &si, &share, e)
                          : output_write_share(c->out, own, c->owned, &si, job.state, (size_t)state_bytes, e);
    gauge_blocks_free(job.gauges);
    free(job.state);
    free(share_data);
    free(share_run);
    if (st != SPHSIM_OK) return st;
    writer_note_sidecar(c->out, c->o->log, 0, &c->sidecar_said);
    r->snapshots++;
    c->written = r->snapshots;
    r->mpi_io_collective = output_io_collective(c->out);
    r->mpi_io_rows = (long)own->n;
    r->t_output += now_s() - t0;
    return SPHSIM_OK;
}

static void swap_mem(cl_mem *a, cl_mem *b)
{
    cl_mem t = *a;
    *a = *b;
    *b = t;
}

/* One per-particle array into the new order: through its own scratch `tmp` (swapped), or, with
 * none, through `via` (a buffer of at least n * size bytes whose content is dead) and copied
 * back. */
static sphsim_status gather_array(sim_ctx *c, cl_mem *buf, cl_mem *tmp, cl_mem via, size_t size, sphsim_error *e)
{
    const size_t n = c->st.n;
    if (*tmp) {
        SPHSIM_TRY(grid_gather(c->g, *buf, *tmp, size, n, e));
        swap_mem(buf, tmp);
        return SPHSIM_OK;
    }
    SPHSIM_TRY(grid_gather(c->g, *buf, via, size, n, e));
    if (n) CL_CHECK(e, clEnqueueCopyBuffer(c->dev.queue, via, *buf, 0, 0, n * size, 0, NULL, NULL));
    return SPHSIM_OK;
}

static void keep_grid(dev_state *st);

/* The grid rebuilt on pos_next (the last step's output), then every per-particle array gathered
 * into the new order (state.h). Particle mode has no scratch arrays of its own: once pos_next
 * is gathered into pos its content is dead until the step writes it, so the ids go through it
 * (4 B per sphere of device memory saved for a copy of as many bytes per step; masses and radii
 * ride in pos.w and vel.w; docs/contacts.md, "Memory"). With sort_check, keys already in order
 * keep the order: no sort, no gathers, the pairs swap roles as in a step that keeps the grid. */
static sphsim_status rebuild_grid(sim_ctx *c, sphsim_error *e)
{
    dev_state *st = &c->st;
    const size_t n = st->n;
    int kept = 0;
    if (c->sort_check) SPHSIM_TRY(grid_build_keep(c->g, st->pos_next, n, st->flags, &kept, e));
    else SPHSIM_TRY(grid_build(c->g, st->pos_next, n, st->flags, e));
    if (kept) {
        keep_grid(st);
        return SPHSIM_OK;
    }
    SPHSIM_TRY(grid_gather(c->g, st->pos_next, st->pos, 16, n, e));
    SPHSIM_TRY(grid_gather(c->g, st->vel_next, st->vel, 16, n, e));
    SPHSIM_TRY(gather_array(c, &st->id, &st->id_tmp, st->pos_next, 4, e));
    if (st->type) SPHSIM_TRY(gather_array(c, &st->type, &st->type_tmp, st->pos_next, 1, e)); /* SPH only */
    cl_mem none = NULL;
    if (st->owned) SPHSIM_TRY(gather_array(c, &st->owned, &none, st->pos_next, 1, e));
    return SPHSIM_OK;
}

/* After an exchange and the grid's sort (`resident`): which device rows this rank sends to each
 * rank at every refresh (its own particles that the rank holds as halo copies) and which it
 * receives from each (its halo copies of that rank's particles), both in ascending particle id,
 * from the rows' coordinates at the upload (in ascending id) and the sort's permutation. The
 * owner and the ranks that hold a particle are those the exchange routed it by (decomp_route),
 * so the two sides agree row for row. */
static sphsim_status halo_maps(sim_ctx *c, sphsim_error *e)
{
    const size_t n = c->st.n, ranks = (size_t)c->ranks;
    if (ranks == 1) { /* no halo (tuning.mpi_exchange on one rank) */
        const size_t none = 0;
        return halo_set(c->halo, NULL, &none, NULL, &none, e);
    }
    uint32_t *inv = malloc((n ? n : 1) * sizeof *inv), *rows = malloc((n ? n : 1) * sizeof *rows);
    size_t *count = calloc(2 * ranks, sizeof *count), *at = calloc(2 * ranks + 1, sizeof *at);
    uint32_t *list = NULL;
    sphsim_status st =
        inv && rows && count && at ? SPHSIM_OK : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the halo");
    if (st == SPHSIM_OK && n) st = device_read(&c->dev, grid_index(c->g), 0, n * 4, rows, e);
    for (size_t j = 0; st == SPHSIM_OK && j < n; ++j) inv[rows[j]] = (uint32_t)j; /* upload row -> device row */
    /* count[r]: rows sent to rank r, count[ranks + r]: received from it; then each list's start */
    for (int pass = 0; st == SPHSIM_OK && pass < 2; ++pass) {
        if (pass == 1) {
            for (size_t k = 0; k < 2 * ranks; ++k) at[k + 1] = at[k] + count[k];
            if (!(list = malloc((at[2 * ranks] ? at[2 * ranks] : 1) * sizeof *list))) {
                st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the halo");
                break;
            }
        }
        for (size_t u = 0; u < n; ++u) {
            const double x = c->up_x[u];
            const int owner = decomp_owner(&c->dc, x);
            if (owner != c->rank) {
                if (pass == 0) count[ranks + (size_t)owner]++;
                else list[at[ranks + (size_t)owner]++] = inv[u];
                continue;
            }
            int a, b;
            decomp_reach(&c->dc, x, &a, &b);
            for (int r = a; r <= b; ++r) {
                if (r == c->rank) continue;
                if (pass == 0) count[r]++;
                else list[at[r]++] = inv[u];
            }
        }
    }
    if (st == SPHSIM_OK) {
        size_t sent = 0;
        for (size_t r = 0; r < ranks; ++r) sent += count[r];
        st = halo_set(c->halo, list, count, list + sent, count + ranks, e);
    }
    free(inv);
    free(rows);
    free(count);
    free(at);
    free(list);
    return st;
}

/* A step that keeps the grid: the last step's output is the sorted state already, so the pairs
 * swap roles instead of being copied (state.h). */
static void keep_grid(dev_state *st)
{
    swap_mem(&st->pos, &st->pos_next);
    swap_mem(&st->vel, &st->vel_next);
}

typedef struct read_req {
    cl_mem buf;
    size_t bytes;
    void *dst;
} read_req;

/* Enqueue the copies of the sorted state into the staging buffer q without waiting; *ready
 * completes with the last of them. The in-order queue runs the next step's kernels only after
 * the copies, so the buffers read stay as they are until then. */
static sphsim_status enqueue_read_back(sim_ctx *c, particles *q, cl_event *ready, sphsim_error *e)
{
    dev_state *st = &c->st;
    ocl_device *d = &c->dev;
    size_t n = st->n;
    /* Fields the solver derives (SPH: rho unpacked from vel.w and pressure = EOS(rho)), computed
     * into scratch, never into the solver's own state: the next step's forces read the pressure
     * the density stage left (p_w of the boundary, not EOS(EOS^-1(p_w))), so writing a snapshot
     * does not change the trajectory and --resume (no snapshot at its first step) stays
     * bit-identical to an uninterrupted run. The scratch: id_tmp (unused between rebuilds) and
     * vel_next, whose content the gather of this snapshot step (which always rebuilds) has taken
     * and which the step's advance overwrites only after these copies (in-order queue). SPH masses
     * come back in pos.w (the writer unpacks them). */
    cl_mem out_rho = st->id_tmp, out_pressure = st->vel_next;
    const int derived = c->sv.ops->output_fields != NULL;
    if (derived && (q->rho || q->pressure))
        SPHSIM_TRY(c->sv.ops->output_fields(c->sv.impl, st, out_rho, out_pressure, e));
    /* the spheres' angular velocities, into pos_next: its content too has gone to pos in this
     * snapshot step's gather, and the advance overwrites it only after these copies */
    const int spin = c->sv.ops->angular_velocity && q->omega;
    if (spin) SPHSIM_TRY(c->sv.ops->angular_velocity(c->sv.impl, st, st->pos_next, e));
    /* the arrays staged for the output fields (staging_arrays) */
    read_req rd[9] = { { st->pos, n * 16, q->pos }, { st->id, n * 4, q->id } };
    int nrd = 2;
    if (st->type) rd[nrd++] = (read_req){ st->type, n, q->type }; /* particle mode: all spheres (setup) */
    if (q->vel) rd[nrd++] = (read_req){ st->vel, n * 16, q->vel };
    if (derived && q->rho) rd[nrd++] = (read_req){ out_rho, n * 4, q->rho };
    if (derived && q->pressure) rd[nrd++] = (read_req){ out_pressure, n * 4, q->pressure };
    if (spin) rd[nrd++] = (read_req){ st->pos_next, n * 12, q->omega };
    *ready = NULL;
    for (int k = 0; k < nrd; ++k) {
        const int last = k == nrd - 1;
        cl_event ev = NULL;
        CL_CHECK(e, clEnqueueReadBuffer(d->queue, rd[k].buf, CL_FALSE, 0, rd[k].bytes, rd[k].dst, 0, NULL,
                                        (last || d->prof) ? &ev : NULL));
        device_profile_command(d, ev, "snapshot_copy"); /* --profile: the device time of the copies */
        if (last) *ready = ev;
        else if (ev) clReleaseEvent(ev);
    }
    CL_CHECK(e, clFlush(d->queue));
    return SPHSIM_OK;
}

/* Wait for the writer to finish every snapshot handed to it and take its counts into r; the
 * writer's first failure, if any. */
static sphsim_status sync_writer(sim_ctx *c, sim_result *r, sphsim_error *e)
{
    if (!c->writer) return SPHSIM_OK;
    double t0 = now_s();
    sphsim_status st = writer_drain(c->writer, e);
    r->t_output += now_s() - t0;
    long outside = 0;
    writer_counts(c->writer, &r->snapshots, &outside, &r->t_writer, r->t_writer_phase);
    if (outside > r->n_outside) r->n_outside = outside;
    return st;
}

/* Whether a particle's state is not finite or too fast (*finite: whether it is finite). */
static int particle_bad(const scene *s, const float *x, const float *v, int *finite)
{
    double v2 = 0;
    *finite = 1;
    for (int a = 0; a < 3; ++a) {
        *finite &= isfinite(x[a]) && isfinite(v[a]);
        v2 += (double)v[a] * v[a];
    }
    return !*finite || sqrt(v2) > s->max_speed;
}

/* The bad particle of lowest id in the device's state (positions and velocities from `pos` and
 * `vel`, with the ids and types of the same order), described in `why`: read in blocks, so no
 * host copy of the whole state is needed. Fails, as the writer's id order does, on an id out of
 * range or seen twice (a bit per particle marks those seen). */
#define BAD_BLOCK ((size_t)1 << 20)
static sphsim_status first_bad(sim_ctx *c, cl_mem pos, cl_mem vel, char *why, size_t why_size, sphsim_error *e)
{
    const dev_state *st = &c->st;
    const size_t n = st->n, rows = n < BAD_BLOCK ? (n ? n : 1) : BAD_BLOCK;
    particles q;
    SPHSIM_TRY(particles_alloc_some(&q, rows, FIELD_POSITION | FIELD_VELOCITY | FIELD_ID | FIELD_TYPE, e));
    unsigned char *seen = calloc(c->n_ids / 8 + 1, 1);
    if (!seen) {
        particles_free(&q);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory reading the state of %zu particles", n);
    }
    sphsim_status r = SPHSIM_OK;
    uint32_t best = UINT32_MAX;
    float bx[4] = { 0 }, bv[4] = { 0 };
    int best_finite = 1;
    uint8_t best_type = 0;
    for (size_t i0 = 0; i0 < n && r == SPHSIM_OK; i0 += rows) {
        const size_t m = n - i0 < rows ? n - i0 : rows;
        r = device_read(&c->dev, pos, i0 * 16, m * 16, q.pos, e);
        if (r == SPHSIM_OK) r = device_read(&c->dev, vel, i0 * 16, m * 16, q.vel, e);
        if (r == SPHSIM_OK) r = device_read(&c->dev, st->id, i0 * 4, m * 4, q.id, e);
        if (r == SPHSIM_OK && st->type) r = device_read(&c->dev, st->type, i0, m, q.type, e);
        else if (!st->type) memset(q.type, PTYPE_SPHERE, m); /* particle mode: no types on the device */
        for (size_t i = 0; i < m && r == SPHSIM_OK; ++i) {
            const uint32_t k = q.id[i];
            if (k >= c->n_ids || (seen[k / 8] >> (k % 8)) & 1u) {
                r = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "device returned particle id %u %s (of %zu): state corrupted", k,
                                k >= c->n_ids ? "out of range" : "twice", c->n_ids);
                break;
            }
            seen[k / 8] |= (unsigned char)(1u << (k % 8));
            int finite;
            if (k < best && particle_bad(c->s, &q.pos[4 * i], &q.vel[4 * i], &finite)) {
                best = k;
                memcpy(bx, &q.pos[4 * i], sizeof bx);
                memcpy(bv, &q.vel[4 * i], sizeof bv);
                best_finite = finite;
                best_type = q.type[i];
            }
        }
    }
    particles_free(&q);
    free(seen);
    if (r == SPHSIM_OK && best != UINT32_MAX)
        snprintf(why, why_size, "particle id %u (%s) has position (%g, %g, %g) m and velocity (%g, %g, %g) m/s%s",
                 (unsigned)global_id(c, best),
                 best_type == PTYPE_FLUID    ? "fluid"
                 : best_type == PTYPE_SPHERE ? "sphere"
                                             : "boundary",
                 (double)bx[0], (double)bx[1], (double)bx[2], (double)bv[0], (double)bv[1], (double)bv[2],
                 best_finite ? " (faster than time.max_speed)" : "");
    return r;
}

/* Read the device flag words (blocks), clearing nothing: [0] FLAG_* bits, [1] the number of
 * times a fluid particle was put back at a tank wall (kernels/sph_forces_integrate.cl). */
static sphsim_status read_flags(sim_ctx *c, cl_uint flags[2], sphsim_error *e)
{
    return device_read(&c->dev, c->st.flags, 0, 2 * sizeof(cl_uint), flags, e);
}

/* More wall put-backs than this in one run means the flow is not resolved (time step too large,
 * walls too thin): a numerical failure, not a run to trust. */
static long put_back_limit(const scene *s) { return s->n_fluid / 10 > 100 ? s->n_fluid / 10 : 100; }

/* On a set NaN/runaway flag: find the culprit, the bad particle of lowest id, in the state
 * written by the last step. `rebuilt`: the grid was rebuilt since that step, so id and type
 * are in the new sorted order and pos/vel (gathered from pos_next/vel_next) match them;
 * otherwise pos_next/vel_next match id and type. The last step reached goes into `r`. */
static sphsim_status numerical_failure(sim_ctx *c, sim_result *r, long step_lo, long step_hi, cl_uint flags,
                                       int rebuilt, sphsim_error *e)
{
    dev_state *st = &c->st;
    char why[512] = "no particle found in the current state (the flag was raised inside a step)";
    sync_writer(c, r, NULL); /* the writer is done with the state it copied */
    r->last_step = step_hi;
    r->sim_time = step_hi * c->s->dt;
    SPHSIM_TRY(first_bad(c, rebuilt ? st->pos : st->pos_next, rebuilt ? st->vel : st->vel_next, why, sizeof why, e));
    return SPHSIM_FAIL(e, SPHSIM_E_NUMERIC,
                       "numerical failure (%s) between step %ld (t = %.6g s) and step %ld (t = %.6g s): %s. The last "
                       "good snapshot is in the output file. Try a smaller time.cfl or time.dt",
                       (flags & FLAG_NONFINITE) ? "NaN or Inf" : "runaway velocity", step_lo, step_lo * c->s->dt,
                       step_hi, step_hi * c->s->dt, why);
}

/* The checks between steps (blocks on an 8-byte read): NaN, Inf or runaway flagged since the
 * last check, or too many wall put-backs, end the run as a numerical failure. `rebuilt` as for
 * numerical_failure. */
static sphsim_status check_flags(sim_ctx *c, sim_result *r, long last_check, long step, int rebuilt, cl_uint flags[2],
                                 sphsim_error *e)
{
    const scene *s = c->s;
    SPHSIM_TRY(read_flags(c, flags, e));
    if (c->ranks > 1) { /* every rank ends alike */
        flags[0] = comm_or_u32(flags[0]);
        flags[1] = (cl_uint)comm_sum_long((long)flags[1]);
    }
    if (flags[0] & (FLAG_NONFINITE | FLAG_RUNAWAY))
        return numerical_failure(c, r, last_check, step, flags[0], rebuilt, e);
    if (c->outside_base + (long)flags[1] > put_back_limit(s)) { /* over the whole run, resumed or not */
        sync_writer(c, r, NULL);
        r->last_step = step;
        r->n_outside = c->outside_base + (long)flags[1];
        return SPHSIM_FAIL(
            e, SPHSIM_E_NUMERIC,
            "numerical failure: fluid particles crossed the tank walls %u times by step %ld (t = %.6g s), "
            "more than %ld (10%% of the fluid particles): the flow is not resolved. Try a smaller "
            "time.cfl or time.dt, or more fluid.boundary_layers. The last good snapshot is in the "
            "output file",
            (unsigned)(c->outside_base + (long)flags[1]), step, step * s->dt, put_back_limit(s));
    }
    return SPHSIM_OK;
}

/* The step rate for the ETA: from samples of (time, step) taken at most every half second once
 * the first step is done (so the kernels' compilation and the set-up stay out), over the last
 * 30 s or so; 0 until two samples exist. */
static double recent_rate(sim_ctx *c, long step, double now)
{
    progress_rate *pr = &c->rate;
    if (step > c->first_step && (pr->n == 0 || now - pr->t[(pr->head + pr->n - 1) % RATE_SAMPLES] >= 0.5)) {
        if (pr->n == RATE_SAMPLES) {
            pr->head = (pr->head + 1) % RATE_SAMPLES;
            --pr->n;
        }
        const int k = (pr->head + pr->n) % RATE_SAMPLES;
        pr->t[k] = now;
        pr->step[k] = step;
        ++pr->n;
    }
    if (pr->n < 2) return 0.0;
    const int last = (pr->head + pr->n - 1) % RATE_SAMPLES;
    int first = pr->head; /* the oldest sample within 30 s of the newest, or the one after it */
    while (first != last && pr->t[last] - pr->t[first] > 30.0) first = (first + 1) % RATE_SAMPLES;
    const double dt = pr->t[last] - pr->t[first];
    return dt > 0.0 ? (double)(pr->step[last] - pr->step[first]) / dt : 0.0;
}

/* Progress on the log: a live line on a terminal, a line every 10 s otherwise, or JSON lines.
 * steps_per_s is the mean since the steps began (elapsed_s); the ETA comes from the recent rate
 * (recent_rate) and the steps left, unknown until the rate is. */
static void progress(sim_ctx *c, long step, long first_step, double t0, double *last_print, int force)
{
    const sim_options *o = c->o;
    if (!o->log || o->progress == PROGRESS_NONE) return;
    double now = now_s();
    const double rate = recent_rate(c, step, now);
    int tty = o->progress == PROGRESS_AUTO && isatty(fileno(o->log));
    double every = o->progress == PROGRESS_JSON ? 2.0 : tty ? 0.25 : 10.0;
    if (!force && now - *last_print < every) return;
    *last_print = now;
    long n_steps = c->s->n_steps;
    double t = step * c->s->dt;
    double frac = n_steps > 0 ? (double)step / (double)n_steps : 1.0;
    double el = now - t0;
    double sps = el > 0 ? (double)(step - first_step) / el : 0.0;
    const int known = rate > 0.0 || step >= n_steps;
    double eta = step >= n_steps ? 0.0 : rate > 0.0 ? (double)(n_steps - step) / rate : 0.0;
    if (o->progress == PROGRESS_JSON) {
        long written = 0, outside = 0; /* snapshots committed to the file so far */
        double busy = 0;
        if (c->writer) writer_counts(c->writer, &written, &outside, &busy, NULL);
        else written = c->written;
        char eta_s[32] = "null";
        if (known) snprintf(eta_s, sizeof eta_s, "%.4g", eta);
        fprintf(o->log,
                "{\"progress\":%.4f,\"step\":%ld,\"steps\":%ld,\"time\":%.9g,\"end_time\":%.9g,\"elapsed_s\":%.6g,"
                "\"steps_per_s\":%.4g,\"eta_s\":%s,\"snapshots\":%ld}\n",
                frac, step, n_steps, t, c->s->t_end, el, sps, eta_s, written);
    } else {
        char eta_hms[16] = "--:--:--";
        if (known)
            snprintf(eta_hms, sizeof eta_hms, "%02d:%02d:%02d", (int)(eta / 3600), (int)(fmod(eta, 3600) / 60),
                     (int)fmod(eta, 60));
        fprintf(o->log, "%st = %.4g / %.4g s  %5.1f%%  step %ld/%ld  %.1f steps/s  ETA %s%s", tty ? "\r" : "", t,
                c->s->t_end, 100 * frac, step, n_steps, rate > 0.0 ? rate : sps, eta_hms, tty ? "  " : "\n");
        if (tty && force) fputc('\n', o->log);
    }
    fflush(o->log);
}

static void iso_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Hand a snapshot of the current state (after a rebuild and the solver's prepare) to the writer
 * thread: the device-to-host copies are enqueued and the loop goes on; it waits only for a free
 * staging buffer. `flags`: the flag words read at this step. */
static sphsim_status write_snapshot(sim_ctx *c, long step, const cl_uint flags[2], sim_result *r, sphsim_error *e)
{
    double t0 = now_s();
    particles *q = NULL;
    SPHSIM_TRY(writer_acquire(c->writer, &q, e));
    snapshot_job job = { 0 };
    job.time = step * c->s->dt;
    job.step = step;
    job.put_backs = (long)flags[1];
    SPHSIM_TRY(c->sv.ops->snapshot(c->sv.impl, c->g, &c->st, &job.n_contacts, e));
    if (c->o->stats) {
        double mn = 0, mc = 0;
        SPHSIM_TRY(grid_neighbour_stats(c->g, c->st.pos, c->st.n, &mn, &mc, e));
        r->mean_neighbours = mn;
        r->mean_candidates = mc;
    }
    /* what the next step carries (contact impulses, the lists' skin level), so that a run resumed
     * from this snapshot continues exactly */
    SPHSIM_TRY(c->sv.ops->save_state(c->sv.impl, c->g, &c->st, &job.state, &job.state_bytes, e));
    /* the gauges' rows up to this step, which the snapshot's commit covers */
    sphsim_status st = gauges_take(c->gauges, step + 1, &job.gauges, e);
    if (st == SPHSIM_OK) st = enqueue_read_back(c, q, &job.ready, e);
    if (st != SPHSIM_OK) {
        if (job.ready) clReleaseEvent(job.ready);
        free(job.state);
        gauge_blocks_free(job.gauges);
        return st;
    }
    writer_submit(c->writer, &job);
    r->t_output += now_s() - t0;
    return SPHSIM_OK;
}

/* A snapshot that could not be written (disk full, file system gone read-only, ...): when the
 * file holds committed snapshots, say how to continue once the cause is fixed. */
static sphsim_status snapshot_failed(sim_ctx *c, sim_result *r, sphsim_status st, sphsim_error *e)
{
    sync_writer(c, r, NULL); /* the count of committed snapshots */
    const char *path = c->o->resume_path ? c->o->resume_path : c->o->out_path;
    if (st == SPHSIM_E_IO && e && (r->snapshots > 0 || c->o->resume_path)) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len,
                 ". Every snapshot committed before is in the file; once the cause is fixed, continue with "
                 "sphsim --resume %s",
                 path);
    }
    return st;
}

/* Neighbour lists for the SPH loops (grid.neighbour_list): "on", or "auto" when the device
 * memory holds them next to the rest (`need` bytes) within 90 % and they fit in NLIST_MAX_PARTS
 * buffers (docs/performance.md: faster on GPUs and on PoCL). *list_n = n with lists, 0 without. */
static sphsim_status sim_list_choice(sim_ctx *c, size_t n, size_t need, size_t *list_n, sphsim_error *e)
{
    const scene *s = c->s;
    const sphsim_tuning *t = c->o->tune;
    *list_n = 0;
    if (s->mode != MODE_SPH || s->neighbour_list == NLIST_OFF || n == 0) return SPHSIM_OK;
    const size_t bytes = sim_list_bytes(s, n, c->dev.max_alloc, t);
    const int fits = (double)(need + bytes) <= 0.9 * (double)c->dev.global_mem &&
                     sph_lists_fit(n, nlist_cap(s), c->dev.max_alloc, t->list_parts);
    if (s->neighbour_list == NLIST_ON && !fits)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "grid.neighbour_list: \"on\" needs %.3g GB of device memory for the lists (%u entries per "
                           "particle, in at most %d buffers, and %zu bytes per particle in one buffer) besides %.3g GB "
                           "for the rest, but %s has %.3g GB (at most %.3g GB in one buffer); use \"auto\" or \"off\", "
                           "or a smaller grid.skin",
                           bytes / 1e9, nlist_cap(s), NLIST_MAX_PARTS, sph_record_bytes(NULL, 1), need / 1e9,
                           c->dev.name, c->dev.global_mem / 1e9, c->dev.max_alloc / 1e9);
    if (s->neighbour_list == NLIST_ON || fits) *list_n = n;
    return SPHSIM_OK;
}

/* --resume: the last committed snapshot of `path` into the host particles (positions, velocities
 * and an integrated density), its device order (*order), the solver state stored with it, and
 * the step and put-back count it reached. */
static sphsim_status resume_from(sim_ctx *c, const char *path, sim_result *r, uint32_t **order, void **state,
                                 size_t *state_bytes, sphsim_error *e)
{
    output_resume last;
    sphsim_status rst = output_read_resume(path, &last, e);
    if (rst == SPHSIM_OK && last.p.n != c->hp.n)
        rst = SPHSIM_FAIL(e, SPHSIM_E_IO, "%s: holds %zu particles but its scene makes %zu", path, last.p.n, c->hp.n);
    /* an integrated density is state, in every snapshot of such a run (output_fields) */
    const int rho = c->s->density == DENSITY_CONTINUITY;
    for (size_t i = 0; rho && rst == SPHSIM_OK && i < last.p.n; ++i)
        if (last.p.type[i] == PTYPE_FLUID && !(last.p.rho[i] > 0.0f))
            rst = SPHSIM_FAIL(e, SPHSIM_E_IO,
                              "%s: holds no density for fluid particle %zu, which a run with fluid.density.type "
                              "\"continuity\" needs to resume",
                              path, i);
    if (rst != SPHSIM_OK) {
        output_resume_free(&last);
        return rst;
    }
    memcpy(c->hp.pos, last.p.pos, last.p.n * 16);
    memcpy(c->hp.vel, last.p.vel, last.p.n * 16);
    if (rho) memcpy(c->hp.rho, last.p.rho, last.p.n * 4);
    c->first_step = last.si.step;
    *order = last.si.device_order; /* both taken over from last */
    *state = last.state;
    *state_bytes = last.state_bytes;
    r->n_outside = last.si.n_outside;
    /* the stored count is the put-backs so far plus the particles outside at that snapshot,
     * which the new run counts again while they stay out: it goes on from the put-backs */
    const long out_then = writer_count_outside(c->s, &last.p, last.si.time);
    c->outside_base = last.si.n_outside > out_then ? last.si.n_outside - out_then : 0;
    particles_free(&last.p);
    return SPHSIM_OK;
}

/* The device, the initial (or resumed) state on it, the grid, the solver, the output and its
 * writer: everything the steps need. The device and its memory first: a run too big for the
 * device fails before any particle is generated (a scene at the particle limit would need tens
 * of GB of host memory). */
static sphsim_status setup(sim_ctx *c, sim_result *r, sphsim_error *e)
{
    const scene *s = c->s;
    const sim_options *o = c->o;
    const sphsim_tuning *t = o->tune;
    c->rank = comm_rank();
    c->ranks = comm_size();
    c->exchange = c->ranks > 1 || t->mpi_exchange == 1;
    comm_set_piece(t->mpi_piece == TUNE_AUTO ? 0 : (size_t)t->mpi_piece);
    c->local_ids = c->exchange && s->mode == MODE_PARTICLES;
    /* tuning.profile_events = 0: --profile times the steps without timing each command (the
     * queue's profiling off), to measure what that costs */
    SPHSIM_TRY(device_open(&c->dev, o->device, o->profile && t->profile_events, t, e));
    c->dev_open = 1;
    /* particle mode rebuilds every step, mostly with the spheres in their cells (SPH only after
     * a move of skin / 2); after an exchange the rows come in the ranks' order, never sorted */
    c->sort_check = !c->exchange && (t->sort_check == TUNE_AUTO ? s->mode == MODE_PARTICLES : t->sort_check);
    snprintf(r->device_name, sizeof r->device_name, "%s", c->dev.name);
    r->n_particles = s->n_total;
    size_t need = sim_device_bytes(s);
    /* a rank's device holds its share, its halo and room for as many again (decomp_start) */
    if (c->ranks > 1) need = (size_t)((double)need * 2.0 / c->ranks);
    if (need > c->dev.global_mem)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "the run needs about %.3g GB of device memory (%ld particles) but %s has %.3g GB; use fewer "
                           "particles (a larger fluid.spacing)",
                           need / 1e9, s->n_total, c->dev.name, c->dev.global_mem / 1e9);
    if ((cl_ulong)s->n_total * 16 / (c->ranks > 1 ? (cl_ulong)c->ranks / 2 : 1) > c->dev.max_alloc)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "the run needs device buffers of %.3g GB (%ld particles x 16 B) but %s allows at most %.3g "
                           "GB in one buffer; use fewer particles (a larger fluid.spacing)",
                           (double)s->n_total * 16 / 1e9, s->n_total, c->dev.name, c->dev.max_alloc / 1e9);
    const size_t host = sim_host_bytes(s, t);
    const double phys = host_physical_bytes(t);
    if (phys > 0 && (double)host > phys)
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM,
                           "the run needs about %.3g GB of host memory (%ld particles) but this machine has %.3g GB; "
                           "write fewer output.fields (position, velocity, id and type are always written) or use "
                           "fewer particles (a larger fluid.spacing)",
                           host / 1e9, s->n_total, phys / 1e9);

    SPHSIM_TRY(init_generate(s, &c->hp, t->init_threads, e));
    uint32_t *order = NULL; /* --resume: the device order of the stored snapshot */
    void *state = NULL;     /* --resume: the solver state stored with it */
    size_t state_bytes = 0;
    if (o->resume_path) {
        /* a file of an older layout, or one laid out for a shorter run (--set time.end), is
         * laid out again for this scene first (by rank 0; the others read it afterwards, and
         * rank 0 opens it for writing once they have) */
        long keep = -1;
        int relayout = 0;
        if (c->rank == 0) {
            SPHSIM_TRY(output_resume_check(o->resume_path, s, &keep, &relayout, e));
            if (relayout) SPHSIM_TRY(output_relayout(o->resume_path, s, keep, e));
        }
        comm_barrier();
        SPHSIM_TRY(resume_from(c, o->resume_path, r, &order, &state, &state_bytes, e));
        comm_barrier();
    }
    const size_t n = c->hp.n;
    c->n_ids = n;
    r->n_particles = (long)n;
    r->n_fluid = (long)c->hp.n_fluid;
    r->n_boundary = (long)c->hp.n_boundary;
    r->n_spheres = (long)c->hp.n_spheres;
    size_t list_n = 0;
    grid_params gp;
    sphsim_status st = sim_list_choice(c, n, need, &list_n, e);
    /* ranks may hold different kinds of device, yet must decide alike: lists only where every
     * rank holds them, and the fewest skin levels any rank would take (tune, for the solver) */
    sphsim_tuning tune = *t;
    if (c->ranks > 1 && comm_max_long(st != SPHSIM_OK || list_n == 0)) list_n = 0;
    if (c->ranks > 1) tune.skin_levels = (int)-comm_max_long(-(long)nlist_skin_levels(t, &c->dev));
    if (st == SPHSIM_OK) {
        r->lists = list_n > 0;
        r->contact_cache = s->mode == MODE_PARTICLES && contact_cache_on(&c->dev, s, t);
        c->dev_need = need + (list_n ? sim_list_bytes(s, n, c->dev.max_alloc, t) : 0);
        st = sim_grid_geometry(s, list_n > 0, &gp, e);
    }
    /* with the exchange, this rank's slab and halo (ascending id; the stored device order of a
     * resumed run does not apply) in device buffers of c->n_cap rows */
    decomp_rec *loc = NULL;
    size_t n_loc = n, n_dev = n;
    if (st == SPHSIM_OK && c->exchange) {
        c->resident = s->mode == MODE_SPH && list_n > 0;
        st = decomp_start(c, &gp, &loc, &n_loc, e);
        n_dev = c->n_cap;
        if (list_n) list_n = n_dev;
    }
    if (st == SPHSIM_OK && c->resident) {
        c->up_x = malloc((n_dev ? n_dev : 1) * sizeof *c->up_x);
        st = c->up_x ? halo_create(&c->halo, &c->dev, e)
                     : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu particles", n_dev);
    }
    if (st == SPHSIM_OK) st = grid_create(&c->g, &c->dev, &gp, n_dev, e);
    if (st == SPHSIM_OK) st = state_alloc(c, n_dev, list_n > 0, e);
    if (st == SPHSIM_OK && c->exchange) {
        st = staging_alloc(c, &c->rb, n_dev, ROW_ARRAYS | staging_arrays(s), &c->rb_pinned, e);
        if (st == SPHSIM_OK && s->mode == MODE_PARTICLES)
            memset(c->rb.type, PTYPE_SPHERE, n_dev); /* no types on the device (state.h) */
    }
    if (st == SPHSIM_OK && c->exchange) {
        c->st.n = n_loc;
        st = upload_rows(c, &c->rb, loc, sizeof *loc, n_loc, 0, e);
    } else if (st == SPHSIM_OK) {
        st = state_upload(c, order, e);
    }
    free(loc);
    free(order);
    /* the solver, with the masses init_generate set (also on --resume, which takes only
     * positions and velocities from the snapshot) */
    if (st == SPHSIM_OK)
        st = s->mode == MODE_SPH ? sph_solver_open(&c->sv, &c->dev, s, list_n, &tune, &c->hp, c->g, &c->st, e)
                                 : contact_solver_open(&c->sv, &c->dev, s, t, e);
    if (st == SPHSIM_OK && c->local_ids) st = contact_set_ids(c->sv.impl, c->gid, n_loc, e);
    /* after the upload, before the first rebuild: the first step carries what the stored
     * snapshot's next step carried */
    if (st == SPHSIM_OK && state && c->local_ids) /* the stored state by particle id, this rank's share */
        st = restore_share(c, state, state_bytes, e);
    else if (st == SPHSIM_OK && state) {
        st = c->sv.ops->restore_state(c->sv.impl, &c->st, state, state_bytes, e);
        if (st == SPHSIM_E_IO && e) {
            char msg[sizeof e->msg];
            memcpy(msg, e->msg, sizeof msg);
            st = SPHSIM_FAIL(e, SPHSIM_E_IO, "%s: %s", o->resume_path, msg);
        }
    }
    free(state);
    SPHSIM_TRY(st);
    /* the gauges read the SPH solver's state with its build options; a chunk of rows holds an
     * output interval's (at most GAUGE_CHUNK_STEPS steps: more go to the host in between) */
    if (s->n_gauges > 0 && s->mode == MODE_SPH)
        SPHSIM_TRY(gauges_create(&c->gauges, &c->dev, s, c->sv.impl, c->first_step, o->resume_path != NULL,
                                 s->steps_per_output < GAUGE_CHUNK_STEPS ? s->steps_per_output : GAUGE_CHUNK_STEPS, e));
    SPHSIM_TRY(gauge_owners(c, c->first_step, e));
    /* From here on the host holds only what snapshots take (staging_arrays): the id-order copy
     * drops the rest, and the two staging buffers get only those arrays (zeroed, so a field
     * the device does not hold, such as SPH radii, reads 0). */
    particles_keep(&c->hp, id_order_arrays(s));
    char start[32];
    iso_now(start, sizeof start);
    output_run_info ri = { SPHSIM_VERSION, c->dev.name, start, c->sv.ops->state_size(c->sv.impl, n) };
    if (c->ranks > 1) {
        /* Every rank writes its share of each snapshot (write_snapshot_ranks) into the file rank
         * 0 lays out (or reopens, --resume) as one process does, then closes; every rank then
         * opens it with MPI-IO. No rank holds the whole run's rows. */
        particles_free(&c->hp);
        SPHSIM_TRY(particles_alloc_some(&c->own, c->n_cap, staging_arrays(s) | FIELD_MASS, e));
        const char *path = o->resume_path ? o->resume_path : o->out_path;
        if (c->rank == 0) {
            output *first = NULL;
            if (o->resume_path) SPHSIM_TRY(output_open_append(&first, o->resume_path, s, &ri, e));
            else SPHSIM_TRY(output_open(&first, o->out_path, o->overwrite, s, &ri, e));
            SPHSIM_TRY(output_close(first, e));
        }
        comm_barrier();
        return output_open_parallel(&c->out, path, s, e);
    }
    const int slots = staging_slots(s, n, t);
    SPHSIM_TRY(staging_alloc(c, &c->sorted, n, staging_arrays(s), &c->pinned[0], e));
    if (slots == 2)
        SPHSIM_TRY(staging_alloc(c, &c->sorted2, n, staging_arrays(s), &c->pinned[1], e));
    else if (o->log && o->progress != PROGRESS_NONE)
        fprintf(o->log,
                "sphsim: one snapshot staging buffer (%.3g GB of host memory each): a snapshot waits for the "
                "writer to finish the one before\n",
                (double)particles_row_bytes(staging_arrays(s)) * (double)n / 1e9);
    if (s->mode == MODE_PARTICLES) /* the device holds no types: every particle is a sphere */
        for (int k = 0; k < slots; ++k) memset(k ? c->sorted2.type : c->sorted.type, PTYPE_SPHERE, n);

    if (o->resume_path) SPHSIM_TRY(output_open_append(&c->out, o->resume_path, s, &ri, e));
    else SPHSIM_TRY(output_open(&c->out, o->out_path, o->overwrite, s, &ri, e));
    particles *staging[2] = { &c->sorted, slots == 2 ? &c->sorted2 : NULL };
    return writer_start(&c->writer, c->out, s, staging, &c->hp, o->log,
                        o->log && o->progress == PROGRESS_AUTO && isatty(fileno(o->log)), c->outside_base,
                        t->writer_threads, e);
}

/* --profile: the host time of the steps alone, from the first snapshot's copies done to the last
 * step done (two waits, in profile mode only), and the device's gaps between their kernels. */
typedef struct step_timer {
    double t0; /* < 0: not started */
    long step0;
} step_timer;

static void timer_start(sim_ctx *c, step_timer *tm, long step)
{
    if (!c->o->profile || tm->t0 >= 0) return;
    clFinish(c->dev.queue);
    tm->t0 = now_s();
    tm->step0 = step;
    device_profile_idle(&c->dev, 1);
}

static void timer_stop(sim_ctx *c, step_timer *tm, long step, sim_result *r)
{
    if (!c->o->profile || tm->t0 < 0 || r->steps_timed > 0) return;
    clFinish(c->dev.queue);
    r->t_steps = now_s() - tm->t0;
    r->steps_timed = step - tm->step0;
    device_profile_idle(&c->dev, 0);
}

/* The steps: from c->first_step to the scene's last, or until a signal asks to stop. One step:
 * the solver decides whether the grid is rebuilt (solver.h), the grid and the gathered state
 * (or the pairs swapped), the solver's prepare, a snapshot when one is due (its flags checked
 * first), then the solver's advance; every 100 steps the flags; progress. */
static sphsim_status run_steps(sim_ctx *c, sim_result *r, long *last, sphsim_error *e)
{
    const scene *s = c->s;
    const solver_ops *ops = c->sv.ops;
    const int resumed = c->o->resume_path != NULL;
    const long check_every = 100;
    c->t_steps0 = now_s();
    long step = c->first_step, last_check = c->first_step;
    step_timer tm = { -1.0, 0 };
    for (;;) {
        *last = r->last_step = step; /* what the summary reports when a failure ends the run here */
        r->sim_time = step * s->dt;
        /* a snapshot step always rebuilds: a run resumed from it starts with a rebuild */
        const int is_output = step % s->steps_per_output == 0 || step == s->n_steps;
        int rebuild = 1, prepared = 0;
        /* the particles round the ranks (the first step has just been uploaded), and a step
         * after an exchange rebuilds: every step, or (resident) in the steps whose lists every
         * rank decides to rebuild, with the halo copies refreshed in every step before that
         * decision */
        const int moved = c->exchange && step > c->first_step;
        if (moved && c->resident) SPHSIM_TRY(halo_refresh(c->halo, c->st.pos_next, c->st.vel_next, e));
        else if (moved) SPHSIM_TRY(exchange(c, step, e));
        if (ops->set_step) SPHSIM_TRY(ops->set_step(c->sv.impl, step, e));
        gauges_before_step(c->gauges, step); /* before the step's density stages */
        const int force = is_output || (c->exchange && !c->resident);
        SPHSIM_TRY(ops->begin_step(c->sv.impl, c->g, &c->st, force, &rebuild, &prepared, e));
        if (rebuild && moved && c->resident) SPHSIM_TRY(exchange(c, step, e));
        if (rebuild) SPHSIM_TRY(rebuild_grid(c, e));
        else keep_grid(&c->st);
        if (rebuild && c->resident) SPHSIM_TRY(halo_maps(c, e));
        if (!prepared) SPHSIM_TRY(ops->prepare(c->sv.impl, c->g, &c->st, e));
        SPHSIM_TRY(gauges_sample(c->gauges, step, grid_cell_start(c->g), grid_cell_end(c->g), grid_params_buffer(c->g),
                                 &c->st, e));
        if (step >= s->n_steps) timer_stop(c, &tm, step, r);
        if (is_output && !(resumed && step == c->first_step)) {
            cl_uint flags[2] = { 0, 0 };
            SPHSIM_TRY(check_flags(c, r, last_check, step, 1, flags, e));
            last_check = step;
            sphsim_status wst =
                c->ranks > 1 ? write_snapshot_ranks(c, step, flags, r, e) : write_snapshot(c, step, flags, r, e);
            if (wst != SPHSIM_OK) return snapshot_failed(c, r, wst, e);
        }
        /* a signal stops every rank at the same step */
        c->stop_sig = c->o->stop ? (int)*c->o->stop : 0;
        if (c->ranks > 1) c->stop_sig = (int)comm_max_long(c->stop_sig);
        if (step >= s->n_steps || c->stop_sig) break;
        timer_start(c, &tm, step);
        SPHSIM_TRY(ops->advance(c->sv.impl, c->g, &c->st, e));
        ++step;
        r->steps++;
        if (step - last_check >= check_every) {
            cl_uint flags[2] = { 0, 0 };
            SPHSIM_TRY(check_flags(c, r, last_check, step, 0, flags, e));
            last_check = step;
        }
        progress(c, step, c->first_step, c->t_steps0, &c->last_print, 0);
    }
    clFinish(c->dev.queue);
    timer_stop(c, &tm, step, r); /* stopped by a signal: the steps so far */
    return SPHSIM_OK;
}

static sphsim_status run(sim_ctx *c, sim_result *r, sphsim_error *e)
{
    long step = 0;
    SPHSIM_TRY(setup(c, r, e));
    SPHSIM_TRY(run_steps(c, r, &step, e));
    if (c->exchange) {
        r->mpi_ranks = c->ranks;
        r->mpi_recuts = c->recuts;
        r->mpi_exchanges = c->exchanges;
        r->mpi_held = (double)comm_sum_long((long)c->st.n) / (double)(c->n_ids ? c->n_ids : 1);
    }
    solver_counters sc;
    SPHSIM_TRY(c->sv.ops->counters(c->sv.impl, &sc, e));
    r->list_rebuilds = sc.list_rebuilds;
    r->list_checks = sc.list_checks;
    r->list_checks_skipped = sc.list_checks_skipped;
    sphsim_status wst = sync_writer(c, r, e); /* the last snapshots */
    if (wst != SPHSIM_OK) return snapshot_failed(c, r, wst, e);
    if (c->o->profile) r->n_prof = device_profile(&c->dev, r->prof, 32);
    progress(c, step, c->first_step, c->t_steps0, &c->last_print, 1);
    r->last_step = step;
    r->sim_time = step * c->s->dt;
    r->wall_time = now_s() - c->t_steps0;
    if (c->stop_sig) {
        r->stop_signal = c->stop_sig;
        const char *path = c->o->resume_path ? c->o->resume_path : c->o->out_path;
        return SPHSIM_FAIL(e, SPHSIM_E_INTERRUPTED,
                           "stopped by signal %d at step %ld (t = %.6g s); every snapshot up to then is in %s; "
                           "continue with --resume",
                           r->stop_signal, step, step * c->s->dt, path);
    }
    return SPHSIM_OK;
}

sphsim_status sim_run(const scene *s, const sim_options *o, sim_result *r, sphsim_error *e)
{
    sim_ctx c;
    memset(&c, 0, sizeof c);
    memset(r, 0, sizeof *r);
    r->mpi_io_collective = -1;
    sphsim_tuning defaults;
    sim_options opts = *o;
    if (!opts.tune) {
        tuning_defaults(&defaults);
        opts.tune = &defaults;
    }
    c.s = s;
    c.o = &opts;
    double t0 = now_s();
    sphsim_status st = run(&c, r, e);
    if (r->wall_time == 0) r->wall_time = now_s() - t0;
    r->device_bytes = c.dev.allocated;
    if (c.writer) { /* finish the snapshots in flight (also after a failure or a signal) */
        sphsim_error werr;
        sphsim_status wst = sync_writer(&c, r, &werr);
        if (st == SPHSIM_OK && wst != SPHSIM_OK) {
            *e = werr;
            st = wst;
        }
        writer_stop(c.writer);
    }
    sphsim_error close_err;
    /* a parallel file is closed by every rank together: not after a failure of this rank's own,
     * which ends every rank (main.c; every committed snapshot is in the file already) */
    const int close_out = c.ranks <= 1 || st == SPHSIM_OK || st == SPHSIM_E_INTERRUPTED || st == SPHSIM_E_NUMERIC;
    if (c.out && close_out) {
        sphsim_status cst = output_close(c.out, &close_err);
        if (st == SPHSIM_OK && cst != SPHSIM_OK) {
            *e = close_err;
            st = cst;
        }
    }
    gauges_destroy(c.gauges);
    if (c.sv.ops) c.sv.ops->destroy(c.sv.impl);
    state_release(&c.st);
    halo_destroy(c.halo);
    if (c.g) grid_destroy(c.g);
    staging_unpin(&c, &c.sorted, &c.pinned[0]);
    staging_unpin(&c, &c.sorted2, &c.pinned[1]);
    staging_unpin(&c, &c.rb, &c.rb_pinned);
    if (c.dev_open) device_close(&c.dev);
    particles_free(&c.hp);
    particles_free(&c.sorted);
    particles_free(&c.sorted2);
    particles_free(&c.rb);
    particles_free(&c.own);
    free(c.owned);
    free(c.gid);
    free(c.ep_step);
    free(c.ep_owner);
    free(c.up_x);
    return st;
}
