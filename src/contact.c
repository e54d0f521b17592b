/* contact: host side of the hard-sphere collision solver: its kernels, scratch buffers,
 * arguments and the order of stages (see contact.h and docs/contacts.md). */
#include "contact.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CONTACT_LOCAL 64 /* work-group size of every contact kernel */

struct contact_solver {
    ocl_device *d;
    contact_params cp;
    int iterations; /* Jacobi passes per step */
    double r_max;   /* m: largest sphere radius of the scene (0 when the scene has no groups) */
    cl_program prog;
    cl_kernel k_list, k_warm, k_resolve, k_integrate, k_pairs;
    cl_mem params;         /* contact_params (__constant) */
    size_t cap;            /* particles the scratch buffers hold */
    cl_mem x[2], v[2];     /* float4 ping-pong iterates of the passes */
    cl_mem degree;         /* uint per particle: contacts at the start of the step */
    cl_mem pid[2], lam[2]; /* contact slots (partner id, impulse N s): [cur] this step, [!cur] the last */
    int cur;               /* which slot arrays belong to this step */
    int have_warm;         /* the last step's slots are valid for the next step */
    cl_mem counts;         /* uint per particle: touching pairs (contact_count) */
    uint32_t *counts_host;
};

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
    p->max_speed2 = s->max_speed > 0 ? (float)(s->max_speed * s->max_speed) : 0.0f;
    double g2 = 0;
    for (int a = 0; a < s->dims && a < 3; ++a) g2 += s->gravity[a] * s->gravity[a];
    p->v_rest = (float)(2.0 * sqrt(g2) * s->dt);
    p->omega_x = CONTACT_OMEGA_X;
    p->omega_v = CONTACT_OMEGA_V;
    p->slots = s->dims == 3 ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D;
    p->dims = (dev_u32)s->dims;
}

size_t contact_bytes(const scene *s, size_t n)
{
    size_t slots = s->dims == 3 ? CONTACT_SLOTS_3D : CONTACT_SLOTS_2D;
    return n * (4 * 16 /* x, v ping-pong */ + 4 /* degree */ + 4 /* counts */ + 2 * slots * 8 /* pid, lam */);
}

static void release_mem(cl_mem *m)
{
    if (*m) clReleaseMemObject(*m);
    *m = NULL;
}

static void release_scratch(contact_solver *c)
{
    for (int k = 0; k < 2; ++k) {
        release_mem(&c->x[k]);
        release_mem(&c->v[k]);
        release_mem(&c->pid[k]);
        release_mem(&c->lam[k]);
    }
    release_mem(&c->degree);
    release_mem(&c->counts);
    free(c->counts_host);
    c->counts_host = NULL;
    c->cap = 0;
    c->have_warm = 0;
}

void contact_destroy(contact_solver *c)
{
    if (!c) return;
    release_scratch(c);
    release_mem(&c->params);
    cl_kernel ks[] = { c->k_list, c->k_warm, c->k_resolve, c->k_integrate, c->k_pairs };
    for (size_t k = 0; k < sizeof ks / sizeof *ks; ++k)
        if (ks[k]) clReleaseKernel(ks[k]);
    if (c->prog) clReleaseProgram(c->prog);
    free(c);
}

static sphsim_status create(contact_solver *c, ocl_device *d, const scene *s, sphsim_error *e)
{
    if (s->dims != 2 && s->dims != 3)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "dimensions: expected 2 or 3, got %d", s->dims);
    if (!(s->restitution >= 0.0 && s->restitution <= 1.0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "spheres.restitution: expected a number in [0, 1], got %g",
                           s->restitution);
    if (s->contact_iterations < 1)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "spheres.iterations: expected an integer >= 1, got %d",
                           s->contact_iterations);
    if (!(s->dt > 0))
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "contact solver: the time step must be > 0, got %g s", s->dt);
    c->d = d;
    c->iterations = s->contact_iterations;
    for (int g = 0; g < s->n_groups; ++g)
        if (s->groups[g].radius > c->r_max) c->r_max = s->groups[g].radius;
    contact_params_from_scene(s, &c->cp);
    SPHSIM_TRY(device_build(d, "contacts.cl", "", &c->prog, e));
    SPHSIM_TRY(device_kernel(c->prog, "contact_list", &c->k_list, e));
    SPHSIM_TRY(device_kernel(c->prog, "contact_warm", &c->k_warm, e));
    SPHSIM_TRY(device_kernel(c->prog, "contact_resolve", &c->k_resolve, e));
    SPHSIM_TRY(device_kernel(c->prog, "contact_integrate", &c->k_integrate, e));
    SPHSIM_TRY(device_kernel(c->prog, "contact_pairs", &c->k_pairs, e));
    SPHSIM_TRY(device_alloc(d, sizeof c->cp, "contact parameters", &c->params, e));
    SPHSIM_TRY(device_write(d, c->params, 0, sizeof c->cp, &c->cp, e));
    return SPHSIM_OK;
}

sphsim_status contact_create(contact_solver **out, ocl_device *d, const scene *s, sphsim_error *e)
{
    *out = NULL;
    contact_solver *c = calloc(1, sizeof *c);
    if (!c) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory creating the contact solver");
    sphsim_status st = create(c, d, s, e);
    if (st != SPHSIM_OK) {
        contact_destroy(c);
        return st;
    }
    *out = c;
    return SPHSIM_OK;
}

/* Scratch buffers for n particles (kept; reallocated, dropping the carried impulses, when a
 * larger state comes). */
static sphsim_status reserve(contact_solver *c, size_t n, sphsim_error *e)
{
    if (n <= c->cap && c->x[0]) return SPHSIM_OK;
    release_scratch(c);
    const size_t slots = c->cp.slots;
    for (int k = 0; k < 2; ++k) {
        SPHSIM_TRY(device_alloc(c->d, n * 16, "contact positions (scratch)", &c->x[k], e));
        SPHSIM_TRY(device_alloc(c->d, n * 16, "contact velocities (scratch)", &c->v[k], e));
        SPHSIM_TRY(device_alloc(c->d, n * slots * 4, "contact partner ids", &c->pid[k], e));
        SPHSIM_TRY(device_alloc(c->d, n * slots * 4, "contact impulses", &c->lam[k], e));
    }
    SPHSIM_TRY(device_alloc(c->d, n * 4, "contact degrees", &c->degree, e));
    SPHSIM_TRY(device_alloc(c->d, n * 4, "contact counts", &c->counts, e));
    c->counts_host = malloc((n ? n : 1) * sizeof *c->counts_host);
    if (!c->counts_host) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu contact counts", n);
    c->cap = n;
    return SPHSIM_OK;
}

static sphsim_status check_state(const dev_state *st, sphsim_error *e)
{
    if (!st->pos || !st->vel || !st->pos_next || !st->vel_next || !st->mass || !st->radius || !st->id)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE,
                           "contact solver: the device state lacks positions, velocities, masses, radii or ids");
    if (st->n > 0xffffffffu) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact solver: %zu particles exceed 2^32", st->n);
    return SPHSIM_OK;
}

void contact_forget(contact_solver *c) { c->have_warm = 0; }

/* ---- the carried state (contact_state_save / contact_state_restore) ----
 * Blob, 4-byte words in the host's byte order:
 *   header [STATE_HEADER]: STATE_MAGIC, STATE_VERSION, n, slots, warm (0/1), 0, 0, 0
 *   pid [n * slots]: uint32 partner ids, the slots of particle id 0, then id 1, ...
 *   lam [n * slots]: float normal impulses (N s) of those slots
 * The slots are copied verbatim (empty ones: STATE_NO_ID, 0), so the kernels read exactly what
 * they would have read; with warm == 0 they are all empty (nothing is carried). */
#define STATE_MAGIC 0x53435353u /* "SSCS" */
#define STATE_VERSION 1u
#define STATE_HEADER 8
#define STATE_NO_ID 0xffffffffu /* CONTACT_NO_ID of kernels/contacts.cl: an empty slot */

static size_t state_bytes(size_t n, size_t slots) { return 4 * (STATE_HEADER + 2 * n * slots); }

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

sphsim_status contact_state_save(contact_solver *c, cl_mem idx, dev_state *st, void **blob, size_t *bytes,
                                 sphsim_error *e)
{
    *blob = NULL;
    *bytes = 0;
    SPHSIM_TRY(check_state(st, e));
    const size_t n = st->n, slots = c->cp.slots;
    if (n > (SIZE_MAX / 4 - STATE_HEADER) / (2 * slots))
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "contact state: %zu particles are too many to save", n);
    /* what the next contact_enqueue will carry (it drops the slots of another particle count) */
    const int warm = c->have_warm && n > 0 && n == c->cap;
    const size_t size = state_bytes(n, slots), ns = n * slots;
    uint32_t *out = malloc(size);
    uint32_t *id = NULL, *perm = NULL, *pid = NULL;
    float *lam = NULL;
    sphsim_status r = SPHSIM_OK;
    if (!out) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for a %zu-byte contact state", size);
    const uint32_t head[STATE_HEADER] = {
        STATE_MAGIC, STATE_VERSION, (uint32_t)n, (uint32_t)slots, (uint32_t)warm, 0, 0, 0
    };
    memcpy(out, head, sizeof head);
    uint32_t *pid_out = out + STATE_HEADER;
    float *lam_out = (float *)(void *)(pid_out + ns);
    for (size_t s = 0; s < ns; ++s) pid_out[s] = STATE_NO_ID;
    memset(lam_out, 0, ns * sizeof *lam_out);
    if (warm) {
        const int last = !c->cur; /* the slots the last step wrote (contact_enqueue flips cur) */
        id = malloc(n * sizeof *id);
        perm = malloc(n * sizeof *perm);
        pid = malloc(ns * sizeof *pid);
        lam = malloc(ns * sizeof *lam);
        if (!id || !perm || !pid || !lam) {
            r = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory saving the contact state of %zu particles", n);
            goto done;
        }
        if ((r = read_ids(c, st, id, e)) != SPHSIM_OK) goto done;
        if (idx && (r = device_read(c->d, idx, 0, n * 4, perm, e)) != SPHSIM_OK) goto done;
        if ((r = device_read(c->d, c->pid[last], 0, ns * 4, pid, e)) != SPHSIM_OK) goto done;
        if ((r = device_read(c->d, c->lam[last], 0, ns * 4, lam, e)) != SPHSIM_OK) goto done;
        for (size_t i = 0; i < n; ++i) {
            const size_t o = idx ? perm[i] : i; /* slot of sorted particle i in the last step's order */
            if (o >= n) {
                r = SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact state: permutation entry %zu is %zu (of %zu)", i, o, n);
                goto done;
            }
            memcpy(&pid_out[(size_t)id[i] * slots], &pid[o * slots], slots * sizeof *pid);
            memcpy(&lam_out[(size_t)id[i] * slots], &lam[o * slots], slots * sizeof *lam);
        }
    }
done:
    free(id);
    free(perm);
    free(pid);
    free(lam);
    if (r != SPHSIM_OK) {
        free(out);
        return r;
    }
    *blob = out;
    *bytes = size;
    return SPHSIM_OK;
}

sphsim_status contact_state_restore(contact_solver *c, dev_state *st, const void *blob, size_t bytes, sphsim_error *e)
{
    c->have_warm = 0;
    SPHSIM_TRY(check_state(st, e));
    const size_t n = st->n, slots = c->cp.slots;
    uint32_t head[STATE_HEADER];
    if (!blob || bytes < sizeof head || bytes % 4 != 0)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored contact solver state (%zu bytes) is not one", bytes);
    memcpy(head, blob, sizeof head);
    if (head[0] != STATE_MAGIC)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored contact solver state is not one (its header is damaged)");
    if (head[1] != STATE_VERSION || head[3] != slots) return SPHSIM_OK; /* another sphsim's format: start cold */
    if (head[2] != n)
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "the stored contact solver state is for %u particles, the run has %zu",
                           head[2], n);
    if (bytes != state_bytes(n, slots) || head[4] > 1)
        return SPHSIM_FAIL(e, SPHSIM_E_IO,
                           "the stored contact solver state is damaged (%zu bytes, expected %zu for %zu "
                           "particles)",
                           bytes, state_bytes(n, slots), n);
    if (!head[4] || n == 0) return SPHSIM_OK; /* nothing carried */
    const size_t ns = n * slots;
    uint32_t *pid_in = malloc(ns * 4), *pid = malloc(ns * 4), *id = malloc(n * 4);
    float *lam_in = malloc(ns * 4), *lam = malloc(ns * 4);
    sphsim_status r = SPHSIM_OK;
    if (!pid_in || !pid || !id || !lam_in || !lam) {
        r = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory restoring the contact state of %zu particles", n);
        goto done;
    }
    memcpy(pid_in, (const uint32_t *)blob + STATE_HEADER, ns * 4);
    memcpy(lam_in, (const uint32_t *)blob + STATE_HEADER + ns, ns * 4);
    for (size_t s = 0; s < ns; ++s) {
        if ((pid_in[s] >= n && pid_in[s] != STATE_NO_ID) || !isfinite(lam_in[s]) || lam_in[s] < 0.0f) {
            r = SPHSIM_FAIL(e, SPHSIM_E_IO,
                            "the stored contact solver state is damaged: slot %zu of particle id %zu holds partner %u "
                            "and impulse %g N s",
                            s % slots, s / slots, pid_in[s], (double)lam_in[s]);
            goto done;
        }
    }
    if (n != c->cap) release_scratch(c); /* contact_enqueue carries only slots made for st->n */
    if ((r = reserve(c, n, e)) != SPHSIM_OK) goto done;
    if ((r = read_ids(c, st, id, e)) != SPHSIM_OK) goto done;
    for (size_t i = 0; i < n; ++i) { /* device slot i holds particle id[i] */
        memcpy(&pid[i * slots], &pid_in[(size_t)id[i] * slots], slots * 4);
        memcpy(&lam[i * slots], &lam_in[(size_t)id[i] * slots], slots * 4);
    }
    const int last = !c->cur; /* where the next contact_enqueue looks for the last step's slots */
    if ((r = device_write(c->d, c->pid[last], 0, ns * 4, pid, e)) != SPHSIM_OK) goto done;
    if ((r = device_write(c->d, c->lam[last], 0, ns * 4, lam, e)) != SPHSIM_OK) goto done;
    c->have_warm = 1;
done:
    free(pid_in);
    free(pid);
    free(id);
    free(lam_in);
    free(lam);
    return r;
}

sphsim_status contact_enqueue(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, cl_mem idx,
                              dev_state *st, sphsim_error *e)
{
    SPHSIM_TRY(check_state(st, e));
    if (st->n == 0) return SPHSIM_OK;
    if (st->n != c->cap) c->have_warm = 0; /* carried slots belong to another particle set */
    SPHSIM_TRY(reserve(c, st->n, e));
    const cl_uint n = (cl_uint)st->n;
    const cl_uint warm = c->have_warm && idx;
    const int cur = c->cur, old = !cur;
    cl_mem idx_arg = warm ? idx : c->degree; /* not read when warm == 0 */

    /* every kernel but the last takes the step's cells and positions first */
    karg a[15] = { KARG("n", n),
                   KARG("gp", gp_buf),
                   KARG("cp", c->params),
                   KARG("cell_start", cell_start),
                   KARG("cell_end", cell_end),
                   KARG("pos0", st->pos) };
    /* contacts at the start of the step and their carried impulses */
    a[6] = KARG("radius", st->radius);
    a[7] = KARG("id", st->id);
    a[8] = KARG("warm", warm);
    a[9] = KARG("idx", idx_arg);
    a[10] = KARG("pid_old", c->pid[old]);
    a[11] = KARG("lam_old", c->lam[old]);
    a[12] = KARG("degree", c->degree);
    a[13] = KARG("pid_new", c->pid[cur]);
    a[14] = KARG("lam_new", c->lam[cur]);
    SPHSIM_TRY(device_set_args(c->d, c->k_list, a, 15, e));
    SPHSIM_TRY(device_run1d(c->d, c->k_list, n, CONTACT_LOCAL, e));

    /* warm start: vel + carried impulses -> v[1]; then the Jacobi passes, which take the same
     * arguments up to lam: (pos, v[1]) -> (x[0], v[0]) -> (x[1], v[1]) -> (x[0], v[0]) ... */
    a[6] = KARG("v0", st->vel);
    a[7] = KARG("mass", st->mass);
    a[8] = KARG("radius", st->radius);
    a[9] = KARG("degree", c->degree);
    a[10] = KARG("lam", c->lam[cur]);
    a[11] = KARG("v_out", c->v[1]);
    SPHSIM_TRY(device_set_args(c->d, c->k_warm, a, 12, e));
    SPHSIM_TRY(device_run1d(c->d, c->k_warm, n, CONTACT_LOCAL, e));

    cl_mem x_in = st->pos, v_in = c->v[1];
    for (int it = 0; it < c->iterations; ++it) {
        cl_mem x_out = c->x[it & 1], v_out = c->v[it & 1];
        a[11] = KARG("x_in", x_in);
        a[12] = KARG("v_in", v_in);
        a[13] = KARG("x_out", x_out);
        a[14] = KARG("v_out", v_out);
        SPHSIM_TRY(device_set_args(c->d, c->k_resolve, a, 15, e));
        SPHSIM_TRY(device_run1d(c->d, c->k_resolve, n, CONTACT_LOCAL, e));
        x_in = x_out;
        v_in = v_out;
    }

    const karg integrate[] = { KARG("n", n),
                               KARG("cp", c->params),
                               KARG("x_in", x_in),
                               KARG("v_in", v_in),
                               KARG("radius", st->radius),
                               KARG("pos_next", st->pos_next),
                               KARG("vel_next", st->vel_next),
                               KARG("flags", st->flags) };
    SPHSIM_TRY(device_set_args(c->d, c->k_integrate, integrate, 8, e));
    SPHSIM_TRY(device_run1d(c->d, c->k_integrate, n, CONTACT_LOCAL, e));
    c->cur = old; /* this step's slots become the last step's */
    c->have_warm = 1;
    return SPHSIM_OK;
}

/* Enqueue the pair kernel on st->pos into c->counts (and `partner` when max_per > 0). */
static sphsim_status enqueue_pairs(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                   cl_uint max_per, cl_mem partner, sphsim_error *e)
{
    const cl_uint n = (cl_uint)st->n;
    cl_mem partner_arg = partner ? partner : c->counts; /* not written when max_per == 0 */
    const karg args[] = { KARG("n", n),
                          KARG("gp", gp_buf),
                          KARG("cell_start", cell_start),
                          KARG("cell_end", cell_end),
                          KARG("pos", st->pos),
                          KARG("radius", st->radius),
                          KARG("max_per", max_per),
                          KARG("count", c->counts),
                          KARG("partner", partner_arg) };
    SPHSIM_TRY(device_set_args(c->d, c->k_pairs, args, 9, e));
    return device_run1d(c->d, c->k_pairs, n, CONTACT_LOCAL, e);
}

sphsim_status contact_count_cells(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                  long *n_contacts, sphsim_error *e)
{
    *n_contacts = 0;
    if (!st->pos || !st->radius)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact_count: the state lacks positions or radii");
    if (st->n == 0) return SPHSIM_OK;
    if (st->n != c->cap) c->have_warm = 0;
    SPHSIM_TRY(reserve(c, st->n, e));
    SPHSIM_TRY(enqueue_pairs(c, cell_start, cell_end, gp_buf, st, 0, NULL, e));
    SPHSIM_TRY(device_read(c->d, c->counts, 0, st->n * 4, c->counts_host, e));
    long total = 0;
    for (size_t i = 0; i < st->n; ++i) total += (long)c->counts_host[i];
    *n_contacts = total;
    return SPHSIM_OK;
}

sphsim_status contact_list_pairs(contact_solver *c, cl_mem cell_start, cl_mem cell_end, cl_mem gp_buf, dev_state *st,
                                 unsigned max_per, uint32_t *count, uint32_t *partner, sphsim_error *e)
{
    if (!st->pos || !st->radius)
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact_list_pairs: the state lacks positions or radii");
    if (st->n == 0) return SPHSIM_OK;
    if (max_per == 0) return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "contact_list_pairs: max_per must be >= 1");
    if (st->n != c->cap) c->have_warm = 0;
    SPHSIM_TRY(reserve(c, st->n, e));
    cl_mem buf = NULL;
    SPHSIM_TRY(device_alloc(c->d, st->n * max_per * 4, "contact pair list", &buf, e));
    sphsim_status s = enqueue_pairs(c, cell_start, cell_end, gp_buf, st, (cl_uint)max_per, buf, e);
    if (s == SPHSIM_OK) s = device_read(c->d, c->counts, 0, st->n * 4, count, e);
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

/* The grid must see every pair that can touch: radius >= r_i + r_j for all i, j. */
static sphsim_status check_grid(const contact_solver *c, const grid *g, sphsim_error *e)
{
    const grid_params *gp = grid_get_params(g);
    if ((double)gp->radius < 2.0 * c->r_max * (1.0 - 1e-6))
        return SPHSIM_FAIL(
            e, SPHSIM_E_SCENE,
            "contact solver: the grid search radius %g m is below twice the largest sphere radius (%g m)",
            (double)gp->radius, 2.0 * c->r_max);
    return SPHSIM_OK;
}

sphsim_status contact_step(contact_solver *c, grid *g, dev_state *st, sphsim_error *e)
{
    SPHSIM_TRY(check_grid(c, g, e));
    return contact_enqueue(c, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), grid_index(g), st, e);
}

sphsim_status contact_count(contact_solver *c, grid *g, dev_state *st, long *n_contacts, sphsim_error *e)
{
    *n_contacts = 0;
    SPHSIM_TRY(check_grid(c, g, e));
    return contact_count_cells(c, grid_cell_start(g), grid_cell_end(g), grid_params_buffer(g), st, n_contacts, e);
}

/* ---- the time loop's interface (solver.h) ---- */

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
    /* the impulses the next step carries (warm start), so --resume continues exactly */
    return contact_state_save(impl, grid_index(g), st, blob, bytes, e);
}

static sphsim_status op_restore_state(void *impl, dev_state *st, const void *blob, size_t bytes, sphsim_error *e)
{
    return contact_state_restore(impl, st, blob, bytes, e);
}

static sphsim_status op_counters(void *impl, solver_counters *c, sphsim_error *e)
{
    memset(c, 0, sizeof *c);
    return SPHSIM_OK;
}

static void op_destroy(void *impl) { contact_destroy(impl); }

sphsim_status contact_solver_open(solver *out, ocl_device *d, const scene *s, sphsim_error *e)
{
    static const solver_ops ops = { op_begin_step,    op_prepare, op_advance,  op_snapshot, op_save_state,
                                    op_restore_state, NULL,       op_counters, op_destroy };
    contact_solver *c = NULL;
    SPHSIM_TRY(contact_create(&c, d, s, e));
    *out = (solver){ &ops, c };
    return SPHSIM_OK;
}
