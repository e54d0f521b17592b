/* contact: host side of the hard-sphere collision solver: its kernels, buffers, arguments, the
 * order of stages and the carried state (see contact.h and docs/contacts.md). */
#include "contact.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decomp.h"
#include "geometry.h"
#include "motion.h"

#define CONTACT_LOCAL 64 /* work-group size of every contact kernel */

struct contact_solver {
    ocl_device *d;
    contact_params cp;
    int iterations; /* Jacobi passes per step, of the impulses and of the positions each */
    double r_max;   /* m: largest sphere radius of the scene (0 when the scene has no groups) */
    cl_program prog;
    cl_kernel k_list, k_warm, k_resolve, k_displace, k_project, k_integrate, k_pairs, k_omega, k_spin;
    cl_mem params;      /* contact_params (__constant) */
    cl_mem group_start; /* uint per group: its first sphere's device id (contact_set_ids) */
    uint32_t *group_first; /* per group: its first sphere's particle id */
    cl_mem material;    /* float2 (e, mu) per (group, group or walls) */
    size_t cap;         /* spheres the buffers hold */
    cl_mem slot;        /* a block of CONTACT_SLOT_BYTES(slots) per sphere, by id: codes, lambda_n, lambda_t */
    cl_mem omega;       /* float, 3 (3D) or 1 (2D) per sphere, by id: angular velocity (rad/s) */
    cl_mem info;        /* uchar per sphere (sorted): contacts of the step */
    int cache;          /* the geometry cache is on (-DCONTACT_CACHE) */
    cl_mem geo;         /* its 3 float4 per slot (sorted), or one float4 when off */
    size_t align;         /* bytes: the device's sub-buffer alignment */
    cl_mem scratch;       /* contact_step: the grid's scratch (grid_scratch), else NULL */
    size_t scratch_bytes; /* its size */
    cl_mem own;           /* scratch of our own where no grid scratch is given (contact_enqueue) */
    size_t own_bytes;
    cl_mem w_sub[2];      /* 3D: the iterate's W of each side, sub-buffers of w_parent */
    cl_mem w_parent;
    size_t w_n;           /* the sphere count they were made for */
    int have_warm;      /* the slots hold what the last step carried, for this sphere count */
    cl_mem geom_grid;   /* the meshes' signed distance grids (scene.geom_grid), or one float; then,
                           when walls move, the bodies' motion (cp.motion_offset) */
    motion_dev *motion; /* the moving bodies (-DMOTION; contact_set_step) */
};

static size_t omega_floats(const contact_params *cp) { return cp->dims == 3 ? 3 : 1; }

/* The device's slots: one block of CONTACT_SLOT_BYTES(S) bytes per sphere, its S codes, S
 * tangential words, and the 16 high and 8 low bits of S normal impulses in 24 bits (bits 7-30
 * of the float, rounded to nearest even); kernels/contacts.cl, contact_slot_load. */
static size_t slot_block(size_t slots) { return CONTACT_SLOT_BYTES(slots); }

static uint32_t ln_pack(uint32_t bits)
{
    uint32_t u = bits & 0x7fffffffu;
    u += 0x3fu + ((u >> 7) & 1u);
    u >>= 7;
    return u < 0xfeffffu ? u : 0xfeffffu;
}

/* n spheres' slots between the three-word form (code, lambda_n as float, tangential word; S per
 * sphere) and the device's blocks. A device block ends at its first empty code (the kernels
 * write nothing after it): the rest come back empty. */
static void slots_pack(const uint32_t *w, uint8_t *h, size_t n, size_t S)
{
    for (size_t i = 0; i < n; ++i, w += 3 * S, h += slot_block(S))
        for (size_t k = 0; k < S; ++k) {
            const uint32_t l = ln_pack(w[3 * k + 1]);
            const uint16_t hi = (uint16_t)(l >> 8);
            memcpy(h + 4 * k, &w[3 * k], 4);
            memcpy(h + 4 * (S + k), &w[3 * k + 2], 4);
            memcpy(h + 8 * S + 2 * k, &hi, 2);
            h[10 * S + k] = (uint8_t)l;
        }
}
static void slots_unpack(const uint8_t *h, uint32_t *w, size_t n, size_t S)
{
    for (size_t i = 0; i < n; ++i, w += 3 * S, h += slot_block(S)) {
        int ended = 0;
        for (size_t k = 0; k < S; ++k) {
            uint16_t hi;
            memcpy(&w[3 * k], h + 4 * k, 4);
            memcpy(&w[3 * k + 2], h + 4 * (S + k), 4);
            memcpy(&hi, h + 8 * S + 2 * k, 2);
            w[3 * k + 1] = (((uint32_t)hi << 8) | h[10 * S + k]) << 7;
            ended |= w[3 * k] == CONTACT_NO_ID;
            if (ended) {
                w[3 * k] = CONTACT_NO_ID;
                w[3 * k + 1] = w[3 * k + 2] = 0;
            }
        }
    }
}

/* The device's slots of spheres 0 .. n - 1 read into (or written from) the three-word form,
 * SLOT_CHUNK spheres at a time through one small host buffer, so that a save or a restore holds
 * no second copy of the whole slot buffer. */
#define SLOT_CHUNK ((size_t)1 << 16)
static sphsim_status slots_transfer(contact_solver *c, uint32_t *w, size_t n, int write, sphsim_error *e)
{
    const size_t S = c->cp.slots, block = slot_block(S), chunk = n < SLOT_CHUNK ? n : SLOT_CHUNK;
    if (n == 0) return SPHSIM_OK;
    uint8_t *h = malloc(chunk * block);
    if (!h) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the contact slots of %zu spheres", chunk);
    sphsim_status r = SPHSIM_OK;
    for (size_t i0 = 0; i0 < n && r == SPHSIM_OK; i0 += chunk) {
        const size_t m = n - i0 < chunk ? n - i0 : chunk;
        if (write) {
            slots_pack(w + 3 * S * i0, h, m, S);
            r = device_write(c->d, c->slot, i0 * block, m * block, h, e);
        } else if ((r = device_read(c->d, c->slot, i0 * block, m * block, h, e)) == SPHSIM_OK) {
            slots_unpack(h, w + 3 * S * i0, m, S);
        }
    }
    free(h);
    return r;
}

void contact_params_from_scene(const scene *s, contact_params *p)
{
    memset(p, 0, sizeof *p);
    for (int a = 0; a < 3; ++a) {
        int on = a < s->dims;
        p->gravity[a] = on ? (float)s->gravity[a] : 0.0f;
        p->tank_min[a] = on ? (float)s->tank.min[a] : 0.0f;
        p->tank_max[a] = on ? (float)s->tank.max[a] : 0.0f;
    }
    p->dt = (float)s->dt;
    p->restitution = (float)s->restitution;
    p->friction = (float)s->friction;
    p->wall_restitution = (float)s->wall_restitution;
    p->wall_friction = (float)s->wall_friction;
    p->max_speed2 = s->max_speed > 0 ? (float)(s->max_speed * s->max_speed) : 0.0f;
    double g2 = 0;
    for (int a = 0; a < s->dims && a < 3; ++a) g2 += s->gravity[a] * s->gravity[a];
    p->v_rest = (float)(2.0 * sqrt(g2) * s->dt);
    p->omega_x = CONTACT_OMEGA_X;
    p->omega_v = CONTACT_OMEGA_V;
    p->inertia = s->dims == 3 ? 0.4f : 0.5f;
    p->slots = s->dims == 3 ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D;
    p->dims = (dev_u32)s->dims;
    p->n_groups = (dev_u32)(s->n_groups > 0 ? s->n_groups : 1);
    p->uniform = s->n_pairs == 0;
    p->n_objects = geom_pack(s, p->objects);
    p->moving = motion_moving(s);
    p->motion_offset = (dev_u32)(s->geom_grid_n ? s->geom_grid_n : 1); /* after the grids (motion_dev) */
}

void contact_materials(const scene *s, uint32_t *group_start, float *material)
{
    const int g = s->n_groups > 0 ? s->n_groups : 1, w = g + 1;
    long first = 0;
    for (int k = 0; k < g; ++k) {
        group_start[k] = (uint32_t)first;
        first += k < s->n_groups ? s->groups[k].count : 0;
    }
    for (int a = 0; a < w; ++a)
        for (int b = 0; b < w; ++b) {
            const int wall = a == g || b == g;
            material[2 * (a * w + b)] = (float)(wall ? s->wall_restitution : s->restitution);
            material[2 * (a * w + b) + 1] = (float)(wall ? s->wall_friction : s->friction);
        }
    for (int k = 0; k < s->n_pairs; ++k) {
        const scene_sphere_pair *q = &s->pairs[k];
        const int a = q->a, b = q->b == SCENE_WALLS ? g : q->b;
        for (int t = 0; t < 2; ++t) {
            const int x = t ? b : a, y = t ? a : b;
            material[2 * (x * w + y)] = (float)q->restitution;
            material[2 * (x * w + y) + 1] = (float)q->friction;
        }
    }
}

size_t contact_bytes(const scene *s, size_t n)
{
    const size_t slots = s->dims == 3 ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D;
    const size_t w = s->dims == 3 ? 3 : 1;
    /* the impulse passes' iterates and the position passes' live in pos_next, vel_next and the
     * grid's scratch (contact_enqueue) */
    return n * (slot_block(slots) /* slots */ + w * 4 /* angular velocity */ + 1 /* info */);
}

size_t contact_cache_bytes(const scene *s, size_t n)
{
    return n * (s->dims == 3 ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D) * CONTACT_CACHE_BYTES;
}

/* On CPUs, where recomputing the geometry was most of an impulse pass, while the cache takes at
 * most a quarter of the device's memory; not on GPUs, where its bytes would break the 200-byte
 * budget of a sphere. */
int contact_cache_on(const ocl_device *d, const scene *s, const sphsim_tuning *t)
{
    const int knob = t ? t->contact_cache : TUNE_AUTO;
    if (knob != TUNE_AUTO) return knob;
    const double b = (double)contact_cache_bytes(s, (size_t)s->n_total);
    return !d->is_gpu && b <= (double)d->global_mem / 4 && b <= (double)d->max_alloc;
}

static void release_mem(cl_mem *m)
{
    if (*m) clReleaseMemObject(*m);
    *m = NULL;
}

static void release_buffers(contact_solver *c)
{
    cl_mem *all[] = { &c->slot, &c->omega, &c->info, &c->geo, &c->w_sub[0], &c->w_sub[1], &c->own };
    for (size_t k = 0; k < sizeof all / sizeof *all; ++k) release_mem(all[k]);
    c->cap = 0;
    c->have_warm = 0;
    c->own_bytes = 0;
    c->w_parent = NULL;
}

void contact_destroy(contact_solver *c)
{
    if (!c) return;
    release_buffers(c);
    release_mem(&c->params);
    release_mem(&c->group_start);
    free(c->group_first);
    release_mem(&c->material);
    motion_dev_destroy(c->motion);
    release_mem(&c->geom_grid);
    cl_kernel ks[] = { c->k_list,      c->k_warm,  c->k_resolve, c->k_displace, c->k_project,
                       c->k_integrate, c->k_pairs, c->k_omega,   c->k_spin };
    device_release_kernels(ks, (int)(sizeof ks / sizeof *ks));
    if (c->prog) clReleaseProgram(c->prog);
    free(c);
}

static sphsim_status check_coefficient(double v, double hi, const char *key, sphsim_error *e)
{
    if (!(v >= 0.0 && v <= hi))
        return hi > 1.0 ? SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: expected a number >= 0, got %g", key, v)
                        : SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: expected a number in [0, 1], got %g", key, v);
    return SPHSIM_OK;
}

static sphsim_status create(contact_solver *c, ocl_device *d, const scene *s, const sphsim_tuning *t, sphsim_error *e)
{
    if (s->dims != 2 && s->dims != 3)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "dimensions: expected 2 or 3, got %d", s->dims);
    SPHSIM_TRY(check_coefficient(s->restitution, 1.0, "spheres.restitution", e));
    SPHSIM_TRY(check_coefficient(s->wall_restitution, 1.0, "spheres.walls.restitution", e));
    SPHSIM_TRY(check_coefficient(s->friction, INFINITY, "spheres.friction", e));
    SPHSIM_TRY(check_coefficient(s->wall_friction, INFINITY, "spheres.walls.friction", e));
    if (s->contact_iterations < 1)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "spheres.iterations: expected an integer >= 1, got %d",
                           s->contact_iterations);
    if (!(s->dt > 0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "contact solver: the time step must be > 0, got %g s", s->dt);
    if (s->n_groups > 255)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "contact solver: %d sphere groups, at most 255", s->n_groups);
    c->d = d;
    c->iterations = s->contact_iterations;
    for (int g = 0; g < s->n_groups; ++g)
        if (s->groups[g].radius > c->r_max) c->r_max = s->groups[g].radius;
    contact_params_from_scene(s, &c->cp);
    /* the slots of the sphere `ahead` items on requested early on CPUs: PoCL runs a work-group's
     * items in turn, and the blocks lie by id, scattered over the sorted order; the first load
     * of a block was the stages' costliest instruction (docs/performance.md, "Spheres against
     * LAMMPS"). GPUs keep many spheres in flight instead. */
    const int ahead = device_tune(t ? t->contact_ahead : TUNE_AUTO, d, 0, 4);
    c->cache = contact_cache_on(d, s, t);
    char opts[96];
    snprintf(opts, sizeof opts, "%s -DCONTACT_AHEAD=%d%s%s", c->cp.moving ? "-DMOTION" : "", ahead,
             d->is_gpu ? "" : " -DCONTACT_CPU", c->cache ? " -DCONTACT_CACHE" : "");
    SPHSIM_TRY(device_build(d, "contacts.cl", opts, &c->prog, e));
    struct {
        const char *name;
        cl_kernel *k;
    } ks[] = { { "contact_list", &c->k_list },       { "contact_warm", &c->k_warm },
               { "contact_resolve", &c->k_resolve }, { "contact_displace", &c->k_displace },
               { "contact_project", &c->k_project }, { "contact_integrate", &c->k_integrate },
               { "contact_pairs", &c->k_pairs },     { "contact_omega_out", &c->k_omega },
               { "contact_spin", &c->k_spin } };
    for (size_t k = 0; k < sizeof ks / sizeof *ks; ++k) SPHSIM_TRY(device_kernel(c->prog, ks[k].name, ks[k].k, e));
    cl_uint align_bits = 0;
    if (clGetDeviceInfo(d->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL) != CL_SUCCESS)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact solver: the device's sub-buffer alignment is unknown");
    c->align = align_bits >= 8 ? align_bits / 8 : 1;
    /* the object table only as far as the scene has objects (the kernels read no further) */
    const size_t cp_bytes = offsetof(contact_params, objects) + c->cp.n_objects * sizeof(geom_object);
    SPHSIM_TRY(device_alloc(d, cp_bytes, "contact parameters", &c->params, e));
    SPHSIM_TRY(device_write(d, c->params, 0, cp_bytes, &c->cp, e));
    const size_t g = c->cp.n_groups, w = g + 1;
    uint32_t *starts = calloc(g, sizeof *starts);
    float *mat = calloc(2 * w * w, sizeof *mat);
    sphsim_status st = starts && mat ? SPHSIM_OK : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    if (st == SPHSIM_OK) {
        contact_materials(s, starts, mat);
        st = device_alloc(d, g * 4, "sphere group starts", &c->group_start, e);
    }
    if (st == SPHSIM_OK) st = device_write(d, c->group_start, 0, g * 4, starts, e);
    if (st == SPHSIM_OK) {
        c->group_first = starts;
        starts = NULL;
    }
    if (st == SPHSIM_OK) st = device_alloc(d, 2 * w * w * 4, "contact materials", &c->material, e);
    if (st == SPHSIM_OK) st = device_write(d, c->material, 0, 2 * w * w * 4, mat, e);
    free(starts);
    free(mat);
    return st;
}

sphsim_status contact_create(contact_solver **out, ocl_device *d, const scene *s, const sphsim_tuning *t,
                             sphsim_error *e)
{
    *out = NULL;
    contact_solver *c = calloc(1, sizeof *c);
    if (!c) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory creating the contact solver");
    sphsim_status st = create(c, d, s, t, e);
    const size_t grid_bytes = s->geom_grid_n ? s->geom_grid_n * sizeof(float) : 4;
    if (st == SPHSIM_OK)
        st = device_alloc(d, grid_bytes + (c->cp.moving ? MOTION_DEV_BYTES : 0), "signed distance grids", &c->geom_grid,
                          e);
    if (st == SPHSIM_OK && s->geom_grid_n)
        st = device_write(d, c->geom_grid, 0, s->geom_grid_n * sizeof(float), s->geom_grid, e);
    if (st == SPHSIM_OK) st = motion_dev_create(&c->motion, d, s, c->geom_grid, grid_bytes, e);
    if (st != SPHSIM_OK) {
        contact_destroy(c);
        return st;
    }
    *out = c;
    return SPHSIM_OK;
}

/* Buffers for n spheres (kept; when another count comes, new ones: empty slots, no rotation). */
static sphsim_status reserve(contact_solver *c, size_t n, sphsim_error *e)
{
    if (n == c->cap && c->slot) return SPHSIM_OK;
    release_buffers(c);
    const size_t m = n ? n : 1, slots = c->cp.slots;
    /* the slots are read only after a step or a restore wrote them (have_warm) */
    SPHSIM_TRY(device_alloc(c->d, m * slot_block(slots), "contact slots", &c->slot, e));
    SPHSIM_TRY(device_alloc(c->d, m * omega_floats(&c->cp) * 4, "angular velocities", &c->omega, e));
    SPHSIM_TRY(device_alloc(c->d, m, "contact counts", &c->info, e));
    SPHSIM_TRY(
        device_alloc(c->d, c->cache ? m * slots * CONTACT_CACHE_BYTES : 16, "contact geometry cache", &c->geo, e));
    const float zero = 0.0f;
    CL_CHECK(e, clEnqueueFillBuffer(c->d->queue, c->omega, &zero, 4, 0, m * omega_floats(&c->cp) * 4, 0, NULL, NULL));
    c->cap = n;
    return SPHSIM_OK;
}

static sphsim_status check_state(const dev_state *st, sphsim_error *e)
{
    if (!st->pos || !st->vel || !st->pos_next || !st->vel_next || !st->id)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact solver: the device state lacks positions, velocities or ids");
    if (st->n >= CONTACT_WALL)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact solver: %zu spheres, at most %u", st->n,
                           (unsigned)CONTACT_WALL - 1u);
    return SPHSIM_OK;
}

void contact_forget(contact_solver *c) { c->have_warm = 0; }

/* ---- the carried state (contact_state_save / contact_state_restore) ----
 * Blob, 4-byte words in the host's byte order:
 *   header [STATE_HEADER]: STATE_MAGIC, STATE_VERSION, n, slots, dims, warm (0/1), 0, 0
 *   omega [n * nw]: angular velocities (rad/s) of particle id 0, 1, ... (nw = 3 in 3D, 1 in 2D)
 *   slots [n * slots * 3]: per particle id, its slots: code, lambda_n (a float, one of those the
 *     device's 24 bits stand for: slots_pack), tangential word (as on the device,
 *     kernels/contacts.cl), where a sphere partner's code is its particle id (the lower-id flag
 *     dropped); walls and empty slots as on the device. With warm == 0 every slot is empty. A
 *     lambda_n between those floats (a blob of an earlier build) is rounded as the device
 *     rounds. */
#define STATE_MAGIC 0x53435353u /* "SSCS" */
#define STATE_VERSION 3u /* 3: the walls' codes from 0x7fffffe0 (objects' second surfaces); 2: 0x7ffffff0 */
#define STATE_HEADER 8

static size_t state_words(size_t n, size_t slots, size_t nw) { return STATE_HEADER + n * nw + n * slots * 3; }

/* Read the device ids of st (n) into `id` and check that they are a permutation of 0..n-1. */
static sphsim_status read_ids(contact_solver *c, dev_state *st, uint32_t *id, sphsim_error *e)
{
    const size_t n = st->n;
    SPHSIM_TRY(device_read(c->d, st->id, 0, n * 4, id, e));
    unsigned char *seen = calloc(n ? n : 1, 1);
    if (!seen) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu particle ids", n);
    sphsim_status r = SPHSIM_OK;
    for (size_t i = 0; i < n && r == SPHSIM_OK; ++i) {
        if (id[i] >= n || seen[id[i]])
            r = SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                            "contact state: device slot %zu holds particle id %u (of %zu): state corrupted", i, id[i],
                            n);
        else seen[id[i]] = 1;
    }
    free(seen);
    return r;
}

static int code_is_sphere(uint32_t code) { return (code & CONTACT_INDEX) < CONTACT_WALL; }

sphsim_status contact_state_save(contact_solver *c, cl_mem idx, dev_state *st, void **blob, size_t *bytes,
                                 sphsim_error *e)
{
    *blob = NULL;
    *bytes = 0;
    SPHSIM_TRY(check_state(st, e));
    const size_t n = st->n, slots = c->cp.slots, nw = omega_floats(&c->cp);
    if (n > (SIZE_MAX / 4 - STATE_HEADER) / (nw + 3 * slots))
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "contact state: %zu particles are too many to save", n);
    SPHSIM_TRY(reserve(c, n, e));
    /* what the next contact_enqueue will carry */
    const int warm = c->have_warm && n > 0;
    const size_t words = state_words(n, slots, nw), ns = n * slots;
    uint32_t *out = malloc(words * 4);
    uint32_t *id = NULL, *perm = NULL, *id_old = NULL;
    if (!out) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for a %zu-byte contact state", words * 4);
    const uint32_t head[STATE_HEADER] = { STATE_MAGIC, STATE_VERSION,  (uint32_t)n, (uint32_t)slots,
                                          c->cp.dims,  (uint32_t)warm, 0,           0 };
    memcpy(out, head, sizeof head);
    uint32_t *w_out = out + STATE_HEADER, *s_out = w_out + n * nw;
    sphsim_status r = device_read(c->d, c->omega, 0, n * nw * 4, w_out, e);
    if (r == SPHSIM_OK && !warm) {
        for (size_t s = 0; s < ns; ++s) {
            s_out[3 * s] = CONTACT_NO_ID;
            s_out[3 * s + 1] = s_out[3 * s + 2] = 0;
        }
    } else if (r == SPHSIM_OK) {
        id = malloc((n ? n : 1) * sizeof *id);
        perm = malloc((n ? n : 1) * sizeof *perm);
        id_old = malloc((n ? n : 1) * sizeof *id_old);
        if (!id || !perm || !id_old) {
            r = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory saving the contact state of %zu particles", n);
            goto done;
        }
        if ((r = read_ids(c, st, id, e)) != SPHSIM_OK) goto done;
        if (idx && (r = device_read(c->d, idx, 0, n * 4, perm, e)) != SPHSIM_OK) goto done;
        for (size_t i = 0; i < n; ++i) {
            const size_t o = idx ? perm[i] : i; /* sorted particle i was at slot o of the last step's order */
            if (o >= n) {
                r = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact state: permutation entry %zu is %zu (of %zu)", i, o, n);
                goto done;
            }
            id_old[o] = id[i];
        }
        if ((r = slots_transfer(c, s_out, n, 0, e)) != SPHSIM_OK) goto done;
        for (size_t s = 0; s < ns; ++s) {
            const uint32_t code = s_out[3 * s];
            if (!code_is_sphere(code)) continue;
            const uint32_t p = code & CONTACT_INDEX;
            if (p >= n) {
                r = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact state: a slot names sphere %u (of %zu)", p, n);
                goto done;
            }
            s_out[3 * s] = id_old[p];
        }
    }
done:
    free(id);
    free(perm);
    free(id_old);
    if (r != SPHSIM_OK) {
        free(out);
        return r;
    }
    *blob = out;
    *bytes = words * 4;
    return SPHSIM_OK;
}

sphsim_status contact_state_restore(contact_solver *c, dev_state *st, const void *blob, size_t bytes, sphsim_error *e)
{
    c->have_warm = 0;
    SPHSIM_TRY(check_state(st, e));
    const size_t n = st->n, slots = c->cp.slots, nw = omega_floats(&c->cp);
    uint32_t head[STATE_HEADER];
    if (!blob || bytes < sizeof head || bytes % 4 != 0)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored contact solver state (%zu bytes) is not one", bytes);
    memcpy(head, blob, sizeof head);
    if (head[0] != STATE_MAGIC)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored contact solver state is not one (its header is damaged)");
    if (head[1] != STATE_VERSION || head[3] != slots || head[4] != c->cp.dims)
        return SPHSIM_OK; /* another sphsim's format: start cold, without rotation */
    if (head[2] != n)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored contact solver state is for %u particles, the run has %zu",
                           head[2], n);
    if (bytes != state_words(n, slots, nw) * 4 || head[5] > 1)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "the stored contact solver state is damaged (%zu bytes, expected %zu for %zu particles)",
                           bytes, state_words(n, slots, nw) * 4, n);
    if (n == 0) return SPHSIM_OK;
    const size_t ns = n * slots;
    const uint32_t *w_in = (const uint32_t *)blob + STATE_HEADER, *s_in = w_in + n * nw;
    uint32_t *sl = malloc(ns * 12), *id = malloc(n * 4), *at = malloc(n * 4);
    sphsim_status r = SPHSIM_OK;
    if (!sl || !id || !at) {
        r = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory restoring the contact state of %zu particles", n);
        goto done;
    }
    memcpy(sl, s_in, ns * 12);
    for (size_t k = 0; k < n * nw; ++k) {
        float f;
        memcpy(&f, &w_in[k], 4);
        if (!isfinite(f)) {
            r = SPHSIM_FAIL(e, SPHSIM_E_IO,
                            "the stored contact solver state is damaged: a non-finite angular velocity");
            goto done;
        }
    }
    for (size_t s = 0; s < ns; ++s) {
        const uint32_t code = sl[3 * s];
        float lam[2]; /* lambda_n; in 2D lambda_t (in 3D the word holds two 16-bit fractions) */
        memcpy(lam, &sl[3 * s + 1], sizeof lam);
        /* a wall: the tank's faces, or surface 0, 1 or (3D) 2 of an object */
        const uint32_t face = code - CONTACT_WALL, surface = (face - CONTACT_OBJECT_FACE) / GEOM_MAX_OBJECTS;
        const int wall_ok = face < CONTACT_OBJECT_FACE ||
                            (surface < CONTACT_OBJECT_SURFACES(c->cp.dims) &&
                             (face - CONTACT_OBJECT_FACE) % GEOM_MAX_OBJECTS < c->cp.n_objects);
        const int ok = (code_is_sphere(code) ? code < n : code == CONTACT_NO_ID || wall_ok) &&
                       isfinite(lam[0]) && lam[0] >= 0.0f && (c->cp.dims == 3 || isfinite(lam[1]));
        if (!ok || (!head[5] && code != CONTACT_NO_ID)) {
            r = SPHSIM_FAIL(e, SPHSIM_E_IO,
                            "the stored contact solver state is damaged: slot %zu of particle id %zu holds code %u and "
                            "impulse %g N s",
                            s % slots, s / slots, code, (double)lam[0]);
            goto done;
        }
    }
    if ((r = reserve(c, n, e)) != SPHSIM_OK) goto done;
    if ((r = read_ids(c, st, id, e)) != SPHSIM_OK) goto done;
    for (size_t i = 0; i < n; ++i) at[id[i]] = (uint32_t)i; /* device slot of each particle id */
    for (size_t s = 0; s < ns; ++s) {
        const uint32_t code = sl[3 * s];
        if (!code_is_sphere(code)) continue;
        const uint32_t self = (uint32_t)(s / slots); /* the particle id the slot belongs to */
        sl[3 * s] = at[code] | (self < code ? CONTACT_FIRST : 0u);
    }
    if ((r = device_write(c->d, c->omega, 0, n * nw * 4, w_in, e)) != SPHSIM_OK) goto done;
    if ((r = slots_transfer(c, sl, n, 1, e)) != SPHSIM_OK) goto done;
    c->have_warm = head[5] != 0;
done:
    free(sl);
    free(id);
    free(at);
    return r;
}

size_t contact_row_words(const contact_solver *c) { return omega_floats(&c->cp) + 3 * (size_t)c->cp.slots; }

sphsim_status contact_state_rows(const contact_solver *c, const void *blob, size_t bytes, size_t n, const uint32_t *gid,
                                 uint32_t *rows, int *warm, sphsim_error *e)
{
    const size_t slots = c->cp.slots, nw = omega_floats(&c->cp), rw = nw + 3 * slots;
    uint32_t head[STATE_HEADER] = { 0 };
    if (blob && bytes >= sizeof head) memcpy(head, blob, sizeof head);
    *warm = 0;
    if (!blob || head[0] != STATE_MAGIC || head[1] != STATE_VERSION || head[3] != slots || head[4] != c->cp.dims) {
        for (size_t k = 0; k < n; ++k) { /* cold: no rotation, empty slots */
            memset(rows + k * rw, 0, rw * 4);
            for (size_t q = 0; q < slots; ++q) rows[k * rw + nw + 3 * q] = CONTACT_NO_ID;
        }
        return blob && head[0] != STATE_MAGIC
                   ? SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored contact solver state is not one (its header is damaged)")
                   : SPHSIM_OK;
    }
    if (head[2] != n || bytes != state_words(n, slots, nw) * 4)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the contact solver state holds %u particles (%zu bytes), %zu expected",
                           head[2], bytes, n);
    const uint32_t *w_in = (const uint32_t *)blob + STATE_HEADER, *s_in = w_in + n * nw;
    for (size_t k = 0; k < n; ++k) {
        uint32_t *r = rows + k * rw;
        memcpy(r, w_in + k * nw, nw * 4);
        memcpy(r + nw, s_in + k * slots * 3, slots * 12);
        for (size_t q = 0; q < slots; ++q) {
            uint32_t *code = &r[nw + 3 * q];
            if (!code_is_sphere(*code)) continue;
            if (*code >= n) return SPHSIM_FAIL(e, SPHSIM_E_IO, "the contact solver state names sphere %u of %zu", *code, n);
            if (gid) *code = gid[*code];
        }
    }
    *warm = head[5] != 0;
    return SPHSIM_OK;
}

/* Index of id in the ascending gid[n] (NULL: 0 .. n-1), or n. */
static size_t index_of(const uint32_t *gid, size_t n, uint32_t id)
{
    if (!gid) return id < n ? id : n;
    const long at = decomp_find(gid, n, id);
    return at < 0 ? n : (size_t)at;
}

sphsim_status contact_state_join(const contact_solver *c, const uint32_t *rows, size_t n, const uint32_t *gid, int warm,
                                 void **blob, size_t *bytes, sphsim_error *e)
{
    const size_t slots = c->cp.slots, nw = omega_floats(&c->cp), rw = nw + 3 * slots, words = state_words(n, slots, nw);
    uint32_t *out = malloc(words * 4);
    if (!out) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for a %zu-byte contact state", words * 4);
    const uint32_t head[STATE_HEADER] = { STATE_MAGIC, STATE_VERSION, (uint32_t)n, (uint32_t)slots,
                                          c->cp.dims,  (uint32_t)(warm != 0), 0, 0 };
    memcpy(out, head, sizeof head);
    uint32_t *w_out = out + STATE_HEADER, *s_out = w_out + n * nw;
    for (size_t k = 0; k < n; ++k) {
        const uint32_t *r = rows + k * rw;
        memcpy(w_out + k * nw, r, nw * 4);
        uint32_t *sl = s_out + k * slots * 3;
        memcpy(sl, r + nw, slots * 12);
        for (size_t q = 0; q < slots; ++q) {
            if (!code_is_sphere(sl[3 * q])) continue;
            const size_t at = index_of(gid, n, sl[3 * q]);
            if (at < n) {
                sl[3 * q] = (uint32_t)at;
            } else { /* the partner is on no rank's side of this one: an empty slot */
                sl[3 * q] = CONTACT_NO_ID;
                sl[3 * q + 1] = sl[3 * q + 2] = 0;
            }
        }
    }
    *blob = out;
    *bytes = words * 4;
    return SPHSIM_OK;
}

/* A byte run of the blob, merged with the last when they touch. */
static void add_run(uint64_t *run, size_t *n_runs, uint64_t off, uint64_t len)
{
    if (*n_runs > 0 && run[2 * *n_runs - 2] + run[2 * *n_runs - 1] == off) {
        run[2 * *n_runs - 1] += len;
        return;
    }
    run[2 * *n_runs] = off;
    run[2 * *n_runs + 1] = len;
    ++*n_runs;
}

sphsim_status contact_state_runs(const contact_solver *c, const uint32_t *rows, const uint32_t *ids, size_t k,
                                 size_t n_ids, int warm, int root, void **data, uint64_t **run, size_t *n_runs,
                                 size_t *total, sphsim_error *e)
{
    const size_t slots = c->cp.slots, nw = omega_floats(&c->cp), rw = nw + 3 * slots;
    *data = NULL;
    *run = NULL;
    *n_runs = 0;
    *total = state_words(n_ids, slots, nw) * 4;
    for (size_t i = 0; i < k; ++i)
        if (ids[i] >= n_ids || (i > 0 && ids[i] <= ids[i - 1]))
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact state: share row %zu holds sphere %u (of %zu), out of order",
                               i, ids[i], n_ids);
    uint32_t *d = malloc((root ? STATE_HEADER * 4 : 0) + k * rw * 4 + 4);
    uint64_t *r = malloc((2 * k + 1) * 2 * sizeof *r);
    if (!d || !r) {
        free(d);
        free(r);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the contact state of %zu spheres", k);
    }
    uint32_t *at = d;
    size_t nr = 0;
    if (root) {
        const uint32_t head[STATE_HEADER] = { STATE_MAGIC, STATE_VERSION, (uint32_t)n_ids, (uint32_t)slots,
                                              c->cp.dims,  (uint32_t)(warm != 0), 0, 0 };
        memcpy(at, head, sizeof head);
        at += STATE_HEADER;
        add_run(r, &nr, 0, sizeof head);
    }
    for (size_t i = 0; i < k; ++i, at += nw) { /* the angular velocities, then the slots */
        memcpy(at, rows + i * rw, nw * 4);
        add_run(r, &nr, (STATE_HEADER + (uint64_t)ids[i] * nw) * 4, nw * 4);
    }
    for (size_t i = 0; i < k; ++i, at += 3 * slots) {
        memcpy(at, rows + i * rw + nw, slots * 12);
        for (size_t q = 0; q < slots; ++q)
            if (code_is_sphere(at[3 * q]) && at[3 * q] >= n_ids) { /* as contact_state_join: an empty slot */
                at[3 * q] = CONTACT_NO_ID;
                at[3 * q + 1] = at[3 * q + 2] = 0;
            }
        add_run(r, &nr, (STATE_HEADER + (uint64_t)n_ids * nw + (uint64_t)ids[i] * slots * 3) * 4, slots * 12);
    }
    *data = d;
    *run = r;
    *n_runs = nr;
    return SPHSIM_OK;
}

sphsim_status contact_enqueue(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, cl_mem idx,
                              dev_state *st, sphsim_error *e)
{
    SPHSIM_TRY(check_state(st, e));
    if (st->n == 0) return SPHSIM_OK;
    SPHSIM_TRY(reserve(c, st->n, e));
    ocl_device *d = c->d;
    const cl_uint n = (cl_uint)st->n, stride = device_group_stride(d, n, CONTACT_LOCAL);
    /* 1: the slots' partners map through idx; 2: the order stands (idx NULL) */
    const cl_uint warm = c->have_warm ? (idx ? 1u : 2u) : 0u;
    cl_mem idx_arg = idx ? idx : c->info; /* read only when warm == 1 */
    const int three = c->cp.dims == 3;
    /* Scratch of at least 16 bytes per sphere, its second half (W of side 1) at an offset a
     * sub-buffer may take: the grid's when contact_step gives one (it also holds the
     * permutation idx, which contact_list is the last to read), else our own. */
    const size_t half = ((size_t)n * 8 + c->align - 1) / c->align * c->align, need = half + (size_t)n * 8;
    cl_mem scr = c->scratch && c->scratch_bytes >= need ? c->scratch : NULL;
    if (!scr) {
        if (c->own_bytes < need) {
            release_mem(&c->own);
            c->own_bytes = 0;
            SPHSIM_TRY(device_alloc(d, need, "contact iterates (scratch)", &c->own, e));
            c->own_bytes = need;
        }
        scr = c->own;
    }
    if (three && (c->w_parent != scr || c->w_n != n)) {
        release_mem(&c->w_sub[0]);
        release_mem(&c->w_sub[1]);
        c->w_parent = NULL;
        for (int k = 0; k < 2; ++k) {
            cl_buffer_region r = { k ? half : 0, (size_t)n * 8 };
            cl_int err;
            c->w_sub[k] = clCreateSubBuffer(scr, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
            CL_CHECK_ERR(e, err, "clCreateSubBuffer (contact iterates)");
        }
        c->w_parent = scr;
        c->w_n = n;
    }

    /* contacts at the start of the step and what they carried */
    const karg list[] = { KARG("n", n),          KARG("stride", stride),         KARG("gp", gp_buf),
                          KARG("cp", c->params), KARG("cell_start", cell_start), KARG("cell_end", cell_end),
                          KARG("pos0", st->pos), KARG("v0", st->vel),            KARG("id", st->id),
                          KARG("warm", warm),    KARG("idx", idx_arg),           KARG("slot", c->slot),
                          KARG("info", c->info), KARG("geom_grid", c->geom_grid) };
    SPHSIM_TRY(device_set_args(d, c->k_list, list, 14, e));
    SPHSIM_TRY(device_run1d(d, c->k_list, n, CONTACT_LOCAL, e));

    /* The iterate (V, W) of the impulse passes lives in two buffer pairs: V in vel_next (side 0)
     * and pos_next (side 1), which the step writes only at its end, W (3D) in the two halves of
     * the scratch. The warm start writes the side that lets the last pass end on side 1; the
     * angular velocity then goes to `omega` (contact_spin), so that vel_next and the scratch
     * are free for the positions while pos_next keeps the velocities. */
    cl_mem side_v[2] = { st->vel_next, st->pos_next };
    cl_mem side_w[2] = { three ? c->w_sub[0] : scr, three ? c->w_sub[1] : scr };
    int s = (c->iterations & 1) ? 0 : 1;
    /* the arguments contact_warm, contact_resolve and contact_displace share
     * (CONTACT_STEP_ARGS), then each one's own */
    karg a[19] = { KARG("n", n),
                   KARG("stride", stride),
                   KARG("gp", gp_buf),
                   KARG("cp", c->params),
                   KARG("cell_start", cell_start),
                   KARG("cell_end", cell_end),
                   KARG("pos0", st->pos),
                   KARG("v0", st->vel),
                   KARG("group_start", c->group_start),
                   KARG("id", st->id),
                   KARG("info", c->info),
                   KARG("slot", c->slot),
                   KARG("material", c->material),
                   KARG("geom_grid", c->geom_grid),
                   KARG("geo", c->geo) };
    a[15] = KARG("omega", c->omega);
    a[16] = KARG("V_out", side_v[s]);
    a[17] = KARG("W_out", side_w[s]);
    SPHSIM_TRY(device_set_args(d, c->k_warm, a, 18, e));
    SPHSIM_TRY(device_run1d(d, c->k_warm, n, CONTACT_LOCAL, e));
    for (int it = 0; it < c->iterations; ++it, s ^= 1) {
        a[15] = KARG("V_in", side_v[s]);
        a[16] = KARG("W_in", side_w[s]);
        a[17] = KARG("V_out", side_v[s ^ 1]);
        a[18] = KARG("W_out", side_w[s ^ 1]);
        SPHSIM_TRY(device_set_args(d, c->k_resolve, a, 19, e));
        SPHSIM_TRY(device_run1d(d, c->k_resolve, n, CONTACT_LOCAL, e));
    }

    const karg spin[] = { KARG("n", n),           KARG("stride", stride),   KARG("cp", c->params),
                          KARG("info", c->info),  KARG("V_in", side_v[1]),  KARG("W_in", side_w[1]),
                          KARG("id", st->id),     KARG("omega", c->omega) };
    SPHSIM_TRY(device_set_args(d, c->k_spin, spin, 8, e));
    SPHSIM_TRY(device_run1d(d, c->k_spin, n, CONTACT_LOCAL, e));

    /* positions: moved along the corrected paths, then the overlaps removed */
    a[15] = KARG("x_out", st->vel_next);
    SPHSIM_TRY(device_set_args(d, c->k_displace, a, 16, e));
    SPHSIM_TRY(device_run1d(d, c->k_displace, n, CONTACT_LOCAL, e));
    cl_mem xs[2] = { st->vel_next, scr };
    int x = 0;
    karg p[14] = { KARG("n", n),
                   KARG("stride", stride),
                   KARG("gp", gp_buf),
                   KARG("cp", c->params),
                   KARG("cell_start", cell_start),
                   KARG("cell_end", cell_end),
                   KARG("pos0", st->pos),
                   KARG("v0", st->vel),
                   KARG("id", st->id),
                   KARG("info", c->info),
                   KARG("slot", c->slot),
                   KARG("geom_grid", c->geom_grid) };
    for (int it = 0; it < c->iterations; ++it, x ^= 1) {
        p[12] = KARG("x_in", xs[x]);
        p[13] = KARG("x_out", xs[x ^ 1]);
        SPHSIM_TRY(device_set_args(d, c->k_project, p, 14, e));
        SPHSIM_TRY(device_run1d(d, c->k_project, n, CONTACT_LOCAL, e));
    }

    const karg integrate[] = { KARG("n", n),
                               KARG("stride", stride),
                               KARG("cp", c->params),
                               KARG("pos0", st->pos),
                               KARG("v0", st->vel),
                               KARG("info", c->info),
                               KARG("x_in", xs[x]),
                               KARG("V_in", side_v[1]),
                               KARG("id", st->id),
                               KARG("omega", c->omega),
                               KARG("pos_next", st->pos_next),
                               KARG("vel_next", st->vel_next),
                               KARG("flags", st->flags) };
    SPHSIM_TRY(device_set_args(d, c->k_integrate, integrate, 13, e));
    SPHSIM_TRY(device_run1d(d, c->k_integrate, n, CONTACT_LOCAL, e));
    c->have_warm = 1;
    return SPHSIM_OK;
}

/* Enqueue the pair kernel on st->pos into `count` (and `partner` when max_per > 0). */
static sphsim_status enqueue_pairs(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                   cl_uint max_per, cl_mem count, cl_mem partner, sphsim_error *e)
{
    const cl_uint n = (cl_uint)st->n;
    cl_mem partner_arg = partner ? partner : count; /* not written when max_per == 0 */
    const karg args[] = { KARG("n", n),
                          KARG("gp", gp_buf),
                          KARG("cell_start", cell_start),
                          KARG("cell_end", cell_end),
                          KARG("pos", st->pos),
                          KARG("vel", st->vel),
                          KARG("max_per", max_per),
                          KARG("count", count),
                          KARG("partner", partner_arg) };
    SPHSIM_TRY(device_set_args(c->d, c->k_pairs, args, 9, e));
    return device_run1d(c->d, c->k_pairs, n, CONTACT_LOCAL, e);
}

static sphsim_status check_grid(const contact_solver *c, const grid *g, sphsim_error *e);

/* count[i]: the touching partners j > i (sorted index) of sorted sphere i. The counts go through
 * pos_next, which holds nothing the next step reads (contact.h). */
static sphsim_status count_each(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                uint32_t *count, sphsim_error *e)
{
    SPHSIM_TRY(enqueue_pairs(c, cell_start, cell_end, gp_buf, st, 0, st->pos_next, NULL, e));
    return device_read(c->d, st->pos_next, 0, st->n * 4, count, e);
}

sphsim_status contact_count_each(contact_solver *c, grid *g, dev_state *st, uint32_t *count, sphsim_error *e)
{
    SPHSIM_TRY(check_grid(c, g, e));
    if (!st->pos || !st->vel || !st->pos_next)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact_count: the state lacks positions or radii");
    if (st->n == 0) return SPHSIM_OK;
    return count_each(c, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, count, e);
}

sphsim_status contact_count_cells(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                  long *n_contacts, sphsim_error *e)
{
    *n_contacts = 0;
    if (!st->pos || !st->vel || !st->pos_next)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact_count: the state lacks positions or radii");
    if (st->n == 0) return SPHSIM_OK;
    uint32_t *count = malloc(st->n * sizeof *count);
    if (!count) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu contact counts", st->n);
    sphsim_status r = count_each(c, cell_start, cell_end, gp_buf, st, count, e);
    long total = 0;
    for (size_t i = 0; r == SPHSIM_OK && i < st->n; ++i) total += (long)count[i];
    free(count);
    *n_contacts = total;
    return r;
}

sphsim_status contact_list_pairs(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                 unsigned max_per, uint32_t *count, uint32_t *partner, sphsim_error *e)
{
    if (!st->pos || !st->vel || !st->pos_next)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact_list_pairs: the state lacks positions or radii");
    if (st->n == 0) return SPHSIM_OK;
    if (max_per == 0) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact_list_pairs: max_per must be >= 1");
    cl_mem buf = NULL;
    SPHSIM_TRY(device_alloc(c->d, st->n * max_per * 4, "contact pair list", &buf, e));
    sphsim_status s = enqueue_pairs(c, cell_start, cell_end, gp_buf, st, (cl_uint)max_per, st->pos_next, buf, e);
    if (s == SPHSIM_OK) s = device_read(c->d, st->pos_next, 0, st->n * 4, count, e);
    if (s == SPHSIM_OK) s = device_read(c->d, buf, 0, st->n * max_per * 4, partner, e);
    clReleaseMemObject(buf);
    SPHSIM_TRY(s);
    for (size_t i = 0; i < st->n; ++i)
        if (count[i] > max_per)
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                               "contact_list_pairs: sorted particle %zu touches %u spheres, more than %u", i, count[i],
                               max_per);
    return SPHSIM_OK;
}

sphsim_status contact_angular_velocity(contact_solver *c, dev_state *st, cl_mem out, sphsim_error *e)
{
    SPHSIM_TRY(check_state(st, e));
    if (st->n == 0) return SPHSIM_OK;
    SPHSIM_TRY(reserve(c, st->n, e));
    const cl_uint n = (cl_uint)st->n;
    const karg args[] = { KARG("n", n), KARG("cp", c->params), KARG("id", st->id), KARG("omega", c->omega),
                          KARG("out", out) };
    SPHSIM_TRY(device_set_args(c->d, c->k_omega, args, 5, e));
    return device_run1d(c->d, c->k_omega, n, CONTACT_LOCAL, e);
}

sphsim_status contact_set_angular_velocity(contact_solver *c, dev_state *st, const float *omega, sphsim_error *e)
{
    SPHSIM_TRY(check_state(st, e));
    if (st->n == 0) return SPHSIM_OK;
    SPHSIM_TRY(reserve(c, st->n, e));
    const size_t nw = omega_floats(&c->cp);
    float *w = malloc(st->n * nw * sizeof *w);
    if (!w) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu angular velocities", st->n);
    for (size_t k = 0; k < st->n; ++k)
        for (size_t a = 0; a < nw; ++a) w[k * nw + a] = omega[3 * k + (nw == 3 ? a : 2)];
    sphsim_status r = device_write(c->d, c->omega, 0, st->n * nw * 4, w, e);
    free(w);
    return r;
}

/* The grid must see every pair that is listed: radius >= (r_i + r_j)(1 + CONTACT_NEAR). */
static sphsim_status check_grid(const contact_solver *c, const grid *g, sphsim_error *e)
{
    const grid_params *gp = grid_get_params(g);
    const double need = CONTACT_SUPPORT(c->r_max);
    if ((double)gp->radius < need * (1.0 - 1e-6))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "contact solver: the grid search radius %g m is below the widest listed pair, "
                           "(1 + %g) times twice the largest sphere radius (%g m)",
                           (double)gp->radius, CONTACT_NEAR, need);
    return SPHSIM_OK;
}

sphsim_status contact_step(contact_solver *c, grid *g, dev_state *st, sphsim_error *e)
{
    SPHSIM_TRY(check_grid(c, g, e));
    c->scratch = grid_scratch(g, &c->scratch_bytes);
    const sphsim_status r =
        contact_enqueue(c, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), grid_index(g), st, e);
    c->scratch = NULL;
    return r;
}

sphsim_status contact_count(contact_solver *c, grid *g, dev_state *st, long *n_contacts, sphsim_error *e)
{
    *n_contacts = 0;
    SPHSIM_TRY(check_grid(c, g, e));
    return contact_count_cells(c, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, n_contacts, e);
}

/* ---- the time loop's interface (solver.h) ---- */

static sphsim_status op_set_step(void *impl, long step, sphsim_error *e)
{
    return motion_dev_step(((contact_solver *)impl)->motion, step, e);
}

static sphsim_status op_begin_step(void *impl, grid *g, dev_state *st, int force, int *rebuild, int *prepared,
                                   sphsim_error *e)
{
    *rebuild = 1; /* contacts are found on the grid of the step's own positions */
    *prepared = 0;
    return SPHSIM_OK;
}

static sphsim_status op_prepare(void *impl, grid *g, dev_state *st, sphsim_error *e) { return SPHSIM_OK; }

static sphsim_status op_advance(void *impl, grid *g, dev_state *st, sphsim_error *e)
{
    return contact_step(impl, g, st, e);
}

static sphsim_status op_snapshot(void *impl, grid *g, dev_state *st, long *n_contacts, sphsim_error *e)
{
    return contact_count(impl, g, st, n_contacts, e);
}

static sphsim_status op_save_state(void *impl, grid *g, dev_state *st, void **blob, size_t *bytes, sphsim_error *e)
{
    /* the angular velocities and the impulses the next step carries, so --resume continues exactly */
    return contact_state_save(impl, grid_index(g), st, blob, bytes, e);
}

static sphsim_status op_restore_state(void *impl, dev_state *st, const void *blob, size_t bytes, sphsim_error *e)
{
    return contact_state_restore(impl, st, blob, bytes, e);
}

/* The angular velocities in sorted order, 3 floats per sphere (snapshots). */
static sphsim_status op_angular_velocity(void *impl, dev_state *st, cl_mem out, sphsim_error *e)
{
    return contact_angular_velocity(impl, st, out, e);
}

static sphsim_status op_counters(void *impl, solver_counters *c, sphsim_error *e)
{
    memset(c, 0, sizeof *c);
    return SPHSIM_OK;
}

static void op_destroy(void *impl) { contact_destroy(impl); }

static size_t op_state_size(void *impl, size_t n)
{
    contact_solver *c = impl;
    return state_words(n, c->cp.slots, omega_floats(&c->cp)) * 4;
}

size_t contact_save_chunk_bytes(int dims)
{
    return SLOT_CHUNK * slot_block(dims == 3 ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D);
}

size_t contact_state_size(int dims, size_t n)
{
    return state_words(n, dims == 3 ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D, dims == 3 ? 3 : 1) * 4;
}

sphsim_status contact_set_ids(contact_solver *c, const uint32_t *gid, size_t n, sphsim_error *e)
{
    const size_t g = c->cp.n_groups;
    if (c->cp.uniform) return SPHSIM_OK; /* one material: the kernels never ask for a group */
    uint32_t *starts = malloc(g * sizeof *starts);
    if (!starts) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
    for (size_t k = 0, lo = 0; k < g; ++k) { /* the first device id whose particle id is in group k or later */
        size_t hi = n;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (gid[mid] < c->group_first[k]) lo = mid + 1;
            else hi = mid;
        }
        starts[k] = (uint32_t)lo;
    }
    const sphsim_status st = device_write(c->d, c->group_start, 0, g * 4, starts, e);
    free(starts);
    return st;
}

sphsim_status contact_solver_open(solver *out, ocl_device *d, const scene *s, const sphsim_tuning *t,
                                  sphsim_error *e)
{
    static const solver_ops ops = { op_begin_step,    op_prepare, op_advance,  op_snapshot, op_save_state,
                                    op_restore_state, NULL,       op_counters, op_destroy,  op_angular_velocity,
                                    op_state_size,    op_set_step };
    contact_solver *c = NULL;
    SPHSIM_TRY(contact_create(&c, d, s, t, e));
    *out = (solver){ &ops, c };
    return SPHSIM_OK;
}
