/* init: the initial state of a scene (fluid lattice, boundary layers, sphere groups). */
#include "init.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "geometry.h"
#include "jobs.h"
#include "sph.h"

/* Lattice cells along one axis of a box of width w at spacing dx (cell-centred). */
static long lattice_count(double w, double dx)
{
    return (long)floor(w / dx + 1e-9); /* never past the block: a row ends within dx/2 of its edge */
}

/* Cells of the tank lattice along one axis, and the exact spacing that fits the tank. */
static long tank_cells(const scene *s, int a, double *dx_a)
{
    double w = s->tank.max[a] - s->tank.min[a];
    long n = lattice_count(w, s->spacing);
    if (n < 1) n = 1;
    *dx_a = w / (double)n;
    return n;
}

static void fluid_block_dims(const scene *s, const scene_box *b, long n[3])
{
    for (int a = 0; a < 3; ++a) n[a] = a < s->dims ? lattice_count(b->max[a] - b->min[a], s->spacing) : 1;
}

/* Pitch of a group's lattice: the scene's (group "pitch" or "packing"); 2.02 r, a small gap so
 * that neighbours do not start in contact, for a scene built without scene.c. */
static double sphere_pitch(const scene_sphere_group *g) { return g->pitch > 0 ? g->pitch : 2.02 * g->radius; }

static void sphere_lattice_dims(const scene *s, const scene_sphere_group *g, long n[3])
{
    double p = sphere_pitch(g);
    for (int a = 0; a < 3; ++a) {
        if (a >= s->dims) {
            n[a] = 1;
            continue;
        }
        double w = g->region.max[a] - g->region.min[a] - 2.0 * g->radius;
        n[a] = w < 0 ? 0 : (long)floor(w / p + 1e-9) + 1;
    }
}

static void set_particle(particles *p, size_t i, const double x[3], const double v[3], double mass, double rho,
                         double radius, uint8_t type);

/* ---- objects (SPH): the fluid lattice minus the solids, and the solids' boundary layers ---- */

/* Whether a fluid particle at x keeps clear of the objects' solids: phi >= dx / 2, half a
 * spacing from the surface as from a tank face. A lattice row at exactly that distance (a block or
 * region reaching a surface that lies on the lattice's boundary, as the floor of a container on the
 * tank's floor) stays: a mesh's phi, interpolated from its float grid, may come out a few 1e-9 m
 * short of it, so dx / 2 is met to 1e-5 of itself. */
static int clear_of_solids(const scene *s, const double x[3])
{
    return s->n_objects == 0 || geom_phi(s, x, NULL) >= 0.5 * s->spacing * (1.0 - 1e-5);
}

/* Is fluid block b's lattice point at (l, j, k) free of the objects (clear_of_solids)? */
static int fluid_point(const scene *s, const scene_box *bx, long l, long j, long k, double x[3])
{
    const long idx[3] = { l, j, k };
    x[0] = x[1] = x[2] = 0.0;
    for (int a = 0; a < s->dims; ++a) x[a] = bx->min[a] + (idx[a] + 0.5) * s->spacing;
    return clear_of_solids(s, x);
}

/* Is the tank lattice's point (l, j, k) (spacing dx[a], as the tank's boundary shell) a
 * boundary particle of an object: inside a solid within boundary_layers spacings of its
 * surface, -L dx < phi <= 0? *which: the object. */
static int object_point(const scene *s, const double dx[3], long l, long j, long k, double x[3], int *which)
{
    const long idx[3] = { l, j, k };
    x[0] = x[1] = x[2] = 0.0;
    for (int a = 0; a < s->dims; ++a) x[a] = s->tank.min[a] + (idx[a] + 0.5) * dx[a];
    const double phi = geom_phi(s, x, which);
    return phi <= 0.0 && phi > -s->boundary_layers * s->spacing;
}

/* Visit the fluid points of block b (count them when p is NULL, else write them from index
 * *i on). */
static long objects_fluid(const scene *s, int b, particles *p, size_t *i)
{
    const scene_box *bx = &s->blocks[b];
    long n[3], count = 0;
    fluid_block_dims(s, bx, n);
    const double zero[3] = { 0, 0, 0 };
    for (long k = 0; k < n[2]; ++k)
        for (long j = 0; j < n[1]; ++j)
            for (long l = 0; l < n[0]; ++l) {
                double x[3];
                if (!fluid_point(s, bx, l, j, k, x)) continue;
                ++count;
                if (p) set_particle(p, (*i)++, x, zero, s->particle_mass, s->rest_density, 0.0, PTYPE_FLUID);
            }
    return count;
}

/* The same for the objects' boundary particles, on the tank lattice in z, y, x order; obj (may
 * be NULL): each one's object. */
static long objects_boundary_of(const scene *s, particles *p, size_t *i, int8_t *obj)
{
    double dx[3] = { 0, 0, 0 };
    long n[3] = { 1, 1, 1 }, count = 0;
    for (int a = 0; a < s->dims; ++a) n[a] = tank_cells(s, a, &dx[a]);
    const double zero[3] = { 0, 0, 0 }, dvol = pow(s->spacing, s->dims);
    for (long k = 0; k < n[2]; ++k)
        for (long j = 0; j < n[1]; ++j)
            for (long l = 0; l < n[0]; ++l) {
                double x[3];
                int which;
                if (!object_point(s, dx, l, j, k, x, &which)) continue;
                if (obj) obj[count] = (int8_t)which;
                ++count;
                if (p) set_particle(p, (*i)++, x, zero, s->rest_density * dvol, s->rest_density, 0.0, PTYPE_BOUNDARY);
            }
    return count;
}

/* ---- fluid regions (SPH): the lattice of a block spanning the tank, within the regions ---- */

/* The points of that lattice (cell-centred from the tank's corner at the fluid spacing) that may
 * lie in box b: index ranges lo[a] <= i < hi[a]. */
static void region_range(const scene *s, const scene_box *b, long lo[3], long hi[3])
{
    for (int a = 0; a < 3; ++a) {
        lo[a] = 0;
        hi[a] = 1;
        if (a >= s->dims) continue;
        const long n = lattice_count(s->tank.max[a] - s->tank.min[a], s->spacing);
        const double u0 = (b->min[a] - s->tank.min[a]) / s->spacing - 0.5;
        const double u1 = (b->max[a] - s->tank.min[a]) / s->spacing - 0.5;
        lo[a] = u0 <= 0 ? 0 : u0 >= (double)n ? n : (long)floor(u0);
        hi[a] = u1 < 0 ? 0 : u1 >= (double)n ? n : (long)ceil(u1) + 1;
        if (hi[a] > n) hi[a] = n;
    }
}

static void region_point_at(const scene *s, long l, long j, long k, double x[3])
{
    const long idx[3] = { l, j, k };
    x[0] = x[1] = x[2] = 0.0;
    for (int a = 0; a < s->dims; ++a) x[a] = s->tank.min[a] + (idx[a] + 0.5) * s->spacing;
}

/* Whether x lies within half a spacing of fluid block b or inside it (where its own lattice
 * fills it). */
static int near_block(const scene *s, const double x[3])
{
    const double m = 0.5 * s->spacing * (1.0 - 2e-9);
    for (int b = 0; b < s->n_blocks; ++b) {
        int in = 1;
        for (int a = 0; a < s->dims && in; ++a) in = x[a] > s->blocks[b].min[a] - m && x[a] < s->blocks[b].max[a] + m;
        if (in) return 1;
    }
    return 0;
}

/* Whether lattice point x is fluid: in some fluid region (`only`: in region `only`) by half a
 * spacing, clear of the blocks and, by half a spacing as everywhere, of the solids. *held: in the
 * region(s) and clear of the blocks, whatever the solids. */
static int region_fluid_point(const scene *s, int only, const double x[3], int *held)
{
    const double d = 0.5 * s->spacing;
    int in = 0;
    for (int r = only < 0 ? 0 : only; r < (only < 0 ? s->n_fluid_regions : only + 1) && !in; ++r)
        in = geom_region_holds(s, &s->regions[r], x, d);
    *held = in && !near_block(s, x);
    return *held && clear_of_solids(s, x);
}

/* Visit the fluid points of region `only` (all regions, each point once, when only < 0), in z,
 * y, x order: count them, those held regardless of the solids (*held, may be NULL) and, when p
 * is not NULL, write them from index *i on. */
static long regions_fluid(const scene *s, int only, particles *p, size_t *i, long *held)
{
    scene_box bb = s->regions[only < 0 ? 0 : only].bounds;
    for (int r = 1; only < 0 && r < s->n_fluid_regions; ++r)
        for (int a = 0; a < 3; ++a) {
            bb.min[a] = fmin(bb.min[a], s->regions[r].bounds.min[a]);
            bb.max[a] = fmax(bb.max[a], s->regions[r].bounds.max[a]);
        }
    long lo[3], hi[3], count = 0, nheld = 0;
    region_range(s, &bb, lo, hi);
    const double zero[3] = { 0, 0, 0 };
    for (long k = lo[2]; k < hi[2]; ++k)
        for (long j = lo[1]; j < hi[1]; ++j)
            for (long l = lo[0]; l < hi[0]; ++l) {
                double x[3];
                int h;
                region_point_at(s, l, j, k, x);
                const int fluid = region_fluid_point(s, only, x, &h);
                nheld += h;
                if (!fluid) continue;
                ++count;
                if (p) set_particle(p, (*i)++, x, zero, s->particle_mass, s->rest_density, 0.0, PTYPE_FLUID);
            }
    if (held) *held = nheld;
    return count;
}

/* Group g's shaped region, or NULL (a box region; also for a scene built without scene.c, whose
 * zeroed groups name no region of its n_regions = 0). */
static const scene_region *group_region(const scene *s, const scene_sphere_group *g)
{
    return g->shaped_region >= 0 && g->shaped_region < s->n_regions ? &s->regions[g->shaped_region] : NULL;
}

/* Whether a sphere of group g fits at x: inside its shaped region (if any) and clear of the
 * objects' solids, by its radius. */
static int sphere_room(const scene *s, const scene_sphere_group *g, const double x[3])
{
    const scene_region *r = group_region(s, g);
    if (r && !geom_region_holds(s, r, x, g->radius)) return 0;
    return s->n_objects == 0 || geom_phi(s, x, NULL) >= g->radius;
}

/* Lattice site c of a sphere group (n sites per axis) at x; whether a sphere fits there
 * (sphere_room: clear of the objects, phi >= r, and inside the group's shaped region). */
static int sphere_site(const scene *s, const scene_sphere_group *g, const long n[3], long c, double x[3])
{
    const long idx[3] = { c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1]) };
    x[0] = x[1] = x[2] = 0.0;
    for (int a = 0; a < s->dims; ++a) x[a] = g->region.min[a] + g->radius + idx[a] * sphere_pitch(g);
    return sphere_room(s, g, x);
}

/* The sites of a group's lattice (`sites` of them) clear of the objects. */
static long sphere_lattice_room(const scene *s, const scene_sphere_group *g, const long n[3], long sites)
{
    long room = 0;
    double x[3];
    for (long c = 0; c < sites; ++c) room += sphere_site(s, g, n, c, x);
    return room;
}

static long objects_boundary(const scene *s, particles *p, size_t *i) { return objects_boundary_of(s, p, i, NULL); }

long init_boundary_objects(const scene *s, int8_t *obj)
{
    if (s->mode != MODE_SPH || s->n_objects == 0) return 0;
    return objects_boundary_of(s, NULL, NULL, obj);
}

sphsim_status init_count(const scene *s, long *n_fluid, long *n_boundary, long *n_spheres, sphsim_error *e)
{
    *n_fluid = *n_boundary = *n_spheres = 0;
    if (s->mode == MODE_SPH) {
        for (int b = 0; b < s->n_blocks; ++b) {
            long n[3];
            fluid_block_dims(s, &s->blocks[b], n);
            if (s->n_objects > 0) {
                const long kept = objects_fluid(s, b, NULL, NULL);
                if (kept == 0 && n[0] * n[1] * n[2] > 0)
                    return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                                       "fluid.blocks[%d]: holds no particle: the objects cover all of its %ld lattice "
                                       "points (a fluid particle needs half a spacing, %g m, of room from a solid)",
                                       b, n[0] * n[1] * n[2], 0.5 * s->spacing);
                *n_fluid += kept;
            } else *n_fluid += n[0] * n[1] * n[2];
        }
        for (int r = 0; r < s->n_fluid_regions; ++r) {
            long held;
            if (regions_fluid(s, r, NULL, NULL, &held) > 0) continue;
            if (held == 0)
                return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                                   "fluid.regions[%d]: holds no particle: no point of the fluid lattice (spacing %g m, "
                                   "from the tank's corner) lies half a spacing inside it%s",
                                   r, s->spacing, s->n_blocks ? " outside fluid.blocks" : "");
            return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                               "fluid.regions[%d]: holds no particle: the objects cover all of its %ld lattice points "
                               "(a fluid particle needs half a spacing, %g m, of room from a solid)",
                               r, held, 0.5 * s->spacing);
        }
        if (s->n_fluid_regions > 0) *n_fluid += regions_fluid(s, -1, NULL, NULL, NULL);
        long L = s->boundary_layers, inner = 1, outer = 1;
        for (int a = 0; a < s->dims; ++a) {
            double dx_a;
            long n = tank_cells(s, a, &dx_a);
            inner *= n;
            outer *= n + 2 * L;
        }
        *n_boundary = outer - inner;
        if (s->n_objects > 0) *n_boundary += objects_boundary(s, NULL, NULL);
    } else {
        for (int g = 0; g < s->n_groups; ++g) {
            const scene_sphere_group *gr = &s->groups[g];
            if (gr->placement == PLACE_LATTICE) {
                long n[3];
                sphere_lattice_dims(s, gr, n);
                long room = n[0] * n[1] * n[2];
                if (s->n_objects > 0 || group_region(s, gr)) room = sphere_lattice_room(s, gr, n, room);
                if (room < gr->count)
                    return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                                       "spheres.groups[%d].count: %ld spheres of radius %g m do not fit on a lattice "
                                       "(pitch %g m) in the group's region; there is room for %ld",
                                       g, gr->count, gr->radius, sphere_pitch(gr), room);
            }
            *n_spheres += gr->count;
        }
    }
    return SPHSIM_OK;
}

/* splitmix64: a small, well-known seeded generator, identical on every platform. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *state) { return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0); }

static void set_particle(particles *p, size_t i, const double x[3], const double v[3], double mass, double rho,
                         double radius, uint8_t type)
{
    for (int a = 0; a < 3; ++a) {
        p->pos[4 * i + a] = (float)x[a];
        p->vel[4 * i + a] = (float)v[a];
    }
    p->pos[4 * i + 3] = 0.0f;
    p->vel[4 * i + 3] = 0.0f;
    p->mass[i] = (float)mass;
    p->rho[i] = (float)rho;
    p->pressure[i] = 0.0f;
    p->radius[i] = (float)radius;
    p->id[i] = (uint32_t)i;
    p->type[i] = type;
}

/* A share of generate_sph: rows r0 .. r1-1 (a row: the particles along x at one y and z) of
 * fluid block `block`, or of the boundary shell (block -1), whose first particle is `first`. */
typedef struct gen_job {
    const scene *s;
    particles *p;
    int block;
    long r0, r1;
    size_t first;
} gen_job;

/* The boundary shell: the tank lattice extended by L cells per side, minus the inside; cells
 * n[a] per axis inside, rows over y in [lo1, hi1) and z in [lo2, hi2). */
typedef struct shell_dims {
    long n[3], lo[3], hi[3];
    double dx[3];
} shell_dims;

static shell_dims shell_of(const scene *s)
{
    shell_dims d;
    const long L = s->boundary_layers;
    for (int a = 0; a < 3; ++a) {
        d.n[a] = 1;
        d.dx[a] = 0;
    }
    for (int a = 0; a < s->dims; ++a) d.n[a] = tank_cells(s, a, &d.dx[a]);
    for (int a = 0; a < 3; ++a) {
        const int pad = a < s->dims; /* 2D: one plane, z = 0 */
        d.lo[a] = pad ? -L : 0;
        d.hi[a] = pad ? d.n[a] + L : 1;
    }
    return d;
}

/* Whether shell row (j, k) crosses the inside of the tank (only its x then lies in the shell).
 * In 2D the one plane k = 0 is inside (n[2] = 1). */
static int shell_row_inside(const shell_dims *d, long j, long k)
{
    return j >= 0 && j < d->n[1] && k >= 0 && k < d->n[2];
}

static long clamp_to(long v, long n) { return v < 0 ? 0 : v > n ? n : v; }

/* Shell particles before row r (rows in z-major order; r = all rows gives the shell's size). */
static size_t shell_before(const shell_dims *d, long r)
{
    const long H1 = d->hi[1] - d->lo[1], W = d->hi[0] - d->lo[0];
    const long k = d->lo[2] + r / H1, j = d->lo[1] + r % H1;
    /* inside rows before (j, k): n1 in every inside slab below k, then those of slab k below j */
    const long slabs = clamp_to(k, d->n[2]);
    const long in_slab = k >= 0 && k < d->n[2] ? clamp_to(j, d->n[1]) : 0;
    return (size_t)r * (size_t)W - (size_t)(slabs * d->n[1] + in_slab) * (size_t)d->n[0];
}

static void *gen_rows(void *arg)
{
    const gen_job *g = arg;
    const scene *s = g->s;
    particles *p = g->p;
    const double zero[3] = { 0, 0, 0 };
    size_t i = g->first;
    if (g->block >= 0) {
        const scene_box *bx = &s->blocks[g->block];
        long n[3];
        fluid_block_dims(s, bx, n);
        for (long r = g->r0; r < g->r1; ++r)
            for (long l = 0; l < n[0]; ++l) {
                long idx[3] = { l, r % n[1], r / n[1] };
                double x[3] = { 0, 0, 0 };
                for (int a = 0; a < s->dims; ++a) x[a] = bx->min[a] + (idx[a] + 0.5) * s->spacing;
                set_particle(p, i++, x, zero, s->particle_mass, s->rest_density, 0.0, PTYPE_FLUID);
            }
        return NULL;
    }
    const shell_dims d = shell_of(s);
    const double dvol = pow(s->spacing, s->dims);
    const long H1 = d.hi[1] - d.lo[1];
    for (long r = g->r0; r < g->r1; ++r) {
        const long k = d.lo[2] + r / H1, j = d.lo[1] + r % H1;
        const int inside_row = shell_row_inside(&d, j, k);
        for (long l = d.lo[0]; l < d.hi[0]; ++l) {
            if (inside_row && l >= 0 && l < d.n[0]) continue;
            long idx[3] = { l, j, k };
            double x[3] = { 0, 0, 0 };
            for (int a = 0; a < s->dims; ++a) x[a] = s->tank.min[a] + (idx[a] + 0.5) * d.dx[a];
            set_particle(p, i++, x, zero, s->rest_density * dvol, s->rest_density, 0.0, PTYPE_BOUNDARY);
        }
    }
    return NULL;
}

/* The fluid blocks' lattices in turn (x fastest, then y, then z), then the boundary shell, each
 * split by rows over `threads` threads (tuning.init_threads): every particle's index, and so its id, is
 * the one a single pass in that order gives it. */
static void generate_sph(const scene *s, particles *p, int threads)
{
    if (s->n_objects > 0 || s->n_fluid_regions > 0) {
        /* one thread: the fluid blocks minus the solids, the regions, the shell, the objects */
        size_t i = 0;
        for (int b = 0; b < s->n_blocks; ++b) objects_fluid(s, b, p, &i);
        if (s->n_fluid_regions > 0) regions_fluid(s, -1, p, &i, NULL);
        const shell_dims d = shell_of(s);
        const long rows = (d.hi[1] - d.lo[1]) * (d.hi[2] - d.lo[2]);
        gen_job job = { s, p, -1, 0, rows, i };
        gen_rows(&job);
        i += shell_before(&d, rows);
        if (s->n_objects > 0) objects_boundary(s, p, &i);
        return;
    }
    const unsigned t = jobs_threads(p->n, threads, 1, JOBS_MAX);
    gen_job jobs[JOBS_MAX];
    size_t first = 0;
    for (int b = 0; b <= s->n_blocks; ++b) {
        const int shell = b == s->n_blocks;
        long rows, row_len = 0;
        shell_dims d;
        if (shell) {
            d = shell_of(s);
            rows = (d.hi[1] - d.lo[1]) * (d.hi[2] - d.lo[2]);
        } else {
            long n[3];
            fluid_block_dims(s, &s->blocks[b], n);
            rows = n[1] * n[2];
            row_len = n[0];
        }
        for (unsigned j = 0; j < t; ++j) {
            const long r0 = (long)((double)rows * j / t), r1 = (long)((double)rows * (j + 1) / t);
            const size_t at = shell ? shell_before(&d, r0) : (size_t)r0 * (size_t)row_len;
            jobs[j] = (gen_job){ s, p, shell ? -1 : b, r0, j + 1 == t ? rows : r1, first + at };
        }
        jobs_run(gen_rows, jobs, sizeof *jobs, t);
        first += shell ? shell_before(&d, rows) : (size_t)rows * (size_t)row_len;
    }
}

/* Random placement: random sequential addition without overlap, accelerated by a host hash of
 * cells; where a region is too full for it (about 0.3 of its volume in 3D), the rest of the
 * group is placed at random and the group is then pushed apart (relax_group). */
typedef struct placer {
    double cell;
    long nc[3];
    long *head, *next; /* linked lists per cell over placed spheres (indices from `first`) */
} placer;

static long placer_cell(const scene *s, const placer *pl, const float *x)
{
    long cc[3] = { 0, 0, 0 };
    for (int a = 0; a < s->dims; ++a) {
        long c = (long)floor((x[a] - s->tank.min[a]) / pl->cell);
        cc[a] = c < 0 ? 0 : c >= pl->nc[a] ? pl->nc[a] - 1 : c;
    }
    return cc[0] + pl->nc[0] * (cc[1] + pl->nc[1] * cc[2]);
}

/* The placer's lists over spheres first .. end-1 of p, from scratch. */
static void placer_fill(const scene *s, placer *pl, const particles *p, size_t first, size_t end)
{
    const long cells = pl->nc[0] * pl->nc[1] * pl->nc[2];
    for (long c = 0; c < cells; ++c) pl->head[c] = -1;
    for (size_t k = first; k < end; ++k) {
        const long cell = placer_cell(s, pl, &p->pos[4 * k]);
        pl->next[k - first] = pl->head[cell];
        pl->head[cell] = (long)(k - first);
    }
}

/* Push the spheres of the random groups among first .. end-1 of p (group `last` the one whose
 * addition gave up) apart from each other and from the lattice spheres (fixed) until no two
 * overlap: Jacobi passes in which every overlapping pair moves apart along its normal to 1.0001
 * times its contact distance (half each when both move), then each into its group's region.
 * Earlier random groups move too: a frozen random group would leave too little room to the
 * next at the volume fractions scene.c admits (below random close packing), where this
 * converges. Deterministic: a fixed order, one thread. */
static sphsim_status relax_random(const scene *s, placer *pl, particles *p, size_t first, size_t end, int last,
                                  sphsim_error *e)
{
    const size_t m = end - first;
    double *x = malloc((m ? m : 1) * 3 * sizeof *x), *dx = malloc((m ? m : 1) * 3 * sizeof *dx);
    int *grp = malloc((m ? m : 1) * sizeof *grp);
    if (!x || !dx || !grp) {
        free(x);
        free(dx);
        free(grp);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory placing spheres");
    }
    for (size_t k = 0, g = 0, at = 0; k < m; ++k) {
        while (g < (size_t)s->n_groups && k >= at + (size_t)s->groups[g].count) at += (size_t)s->groups[g++].count;
        grp[k] = (int)g;
        for (int a = 0; a < 3; ++a) x[3 * k + a] = p->pos[4 * (first + k) + a];
    }
    const int passes = 20000;
    int pass = 0, clean = 0;
    for (; pass < passes && !clean; ++pass) {
        placer_fill(s, pl, p, first, end);
        clean = 1;
        for (size_t k = 0; k < m; ++k) {
            const size_t i = first + k;
            double d[3] = { 0, 0, 0 };
            for (int a = 0; a < 3; ++a) dx[3 * k + a] = 0;
            if (s->groups[grp[k]].placement != PLACE_RANDOM) continue;
            long cc[3] = { 0, 0, 0 };
            for (int a = 0; a < s->dims; ++a) {
                long c = (long)floor((x[3 * k + a] - s->tank.min[a]) / pl->cell);
                cc[a] = c < 0 ? 0 : c >= pl->nc[a] ? pl->nc[a] - 1 : c;
            }
            for (long dz = (s->dims == 3 ? -1 : 0); dz <= (s->dims == 3 ? 1 : 0); ++dz)
                for (long dy = -1; dy <= 1; ++dy)
                    for (long dxc = -1; dxc <= 1; ++dxc) {
                        long q[3] = { cc[0] + dxc, cc[1] + dy, cc[2] + dz };
                        if (q[0] < 0 || q[1] < 0 || q[2] < 0 || q[0] >= pl->nc[0] || q[1] >= pl->nc[1] ||
                            q[2] >= pl->nc[2])
                            continue;
                        for (long t = pl->head[q[0] + pl->nc[0] * (q[1] + pl->nc[1] * q[2])]; t >= 0; t = pl->next[t]) {
                            const size_t j = first + (size_t)t;
                            if (j == i) continue;
                            double v[3] = { 0, 0, 0 }, d2 = 0;
                            for (int a = 0; a < s->dims; ++a) {
                                v[a] = x[3 * k + a] - x[3 * (size_t)t + a];
                                d2 += v[a] * v[a];
                            }
                            const double rr = p->radius[i] + p->radius[j];
                            if (d2 >= rr * rr) continue;
                            clean = 0;
                            const int moves = s->groups[grp[t]].placement == PLACE_RANDOM;
                            const double dist = sqrt(d2), want = 1.0001 * rr, share = moves ? 0.5 : 1.0;
                            if (dist > 0)
                                for (int a = 0; a < s->dims; ++a) d[a] += share * (want - dist) * v[a] / dist;
                            else d[0] += share * want * (i < j ? 1.0 : -1.0);
                        }
                    }
            for (int a = 0; a < 3; ++a) dx[3 * k + a] = d[a];
        }
        for (size_t k = 0; k < m; ++k) {
            const scene_sphere_group *gr = &s->groups[grp[k]];
            if (gr->placement != PLACE_RANDOM) continue;
            for (int a = 0; a < s->dims; ++a) {
                const double lo = gr->region.min[a] + gr->radius, hi = gr->region.max[a] - gr->radius;
                const double v = x[3 * k + a] + dx[3 * k + a];
                x[3 * k + a] = v < lo ? lo : v > hi ? hi : v;
                p->pos[4 * (first + k) + a] = (float)x[3 * k + a];
            }
        }
    }
    free(x);
    free(dx);
    free(grp);
    if (!clean)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "spheres.groups[%d]: the random groups up to this one could not be placed without overlap "
                           "in %d passes; enlarge spheres.groups[%d].region or use placement \"lattice\"",
                           last, passes, last);
    /* float rounding may leave pairs a hair closer than the double-precision positions were: that
     * is an overlap of about 1e-7 r, which the contact solver removes in its first step */
    return SPHSIM_OK;
}

static sphsim_status generate_spheres(const scene *s, particles *p, sphsim_error *e)
{
    size_t i = 0;
    double rmax = 0;
    for (int g = 0; g < s->n_groups; ++g)
        if (s->groups[g].radius > rmax) rmax = s->groups[g].radius;
    placer pl = { 0 };
    pl.cell = 2.0 * rmax * 1.0002; /* the relaxation's contact distance, 1.0001 (r_i + r_j), fits */
    long cells = 1;
    for (int a = 0; a < 3; ++a) {
        pl.nc[a] = a < s->dims ? (long)ceil((s->tank.max[a] - s->tank.min[a]) / pl.cell) + 1 : 1;
        cells *= pl.nc[a];
    }
    int any_random = 0;
    for (int g = 0; g < s->n_groups; ++g) any_random |= s->groups[g].placement == PLACE_RANDOM;
    if (any_random) {
        if (cells > 200000000L)
            return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                               "spheres.groups: random placement needs a host grid of %ld cells; "
                               "use placement \"lattice\" for so small spheres in so large a tank",
                               cells);
        pl.head = malloc((size_t)cells * sizeof *pl.head);
        pl.next = malloc(p->n * sizeof *pl.next);
        if (!pl.head || !pl.next) {
            free(pl.head);
            free(pl.next);
            return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory placing spheres");
        }
        for (long c = 0; c < cells; ++c) pl.head[c] = -1;
    }
    sphsim_status st = SPHSIM_OK;
    size_t first = i;
    for (int g = 0; g < s->n_groups && st == SPHSIM_OK; ++g) {
        const scene_sphere_group *gr = &s->groups[g];
        uint64_t rng = gr->seed * 0x2545F4914F6CDD1Dull + (uint64_t)g;
        double vol = s->dims == 3 ? 4.0 / 3.0 * M_PI * pow(gr->radius, 3) : M_PI * gr->radius * gr->radius;
        double mass = gr->density * vol;
        long n[3];
        sphere_lattice_dims(s, gr, n);
        int dense = 0; /* random sequential addition gave up: the rest goes in at random, then relax */
        long site = 0; /* the next lattice site to try */
        for (long c = 0; c < gr->count; ++c) {
            double x[3] = { 0, 0, 0 }, v[3] = { 0, 0, 0 };
            if (gr->placement == PLACE_LATTICE) {
                while (!sphere_site(s, gr, n, site, x)) ++site; /* init_count checked the room */
                ++site;
            } else {
                int placed = 0;
                const scene_region *shaped = group_region(s, gr);
                for (int attempt = 0; attempt < (dense && !shaped ? 1 : 10000) && !placed; ++attempt) {
                    for (int a = 0; a < s->dims; ++a) {
                        double lo = gr->region.min[a] + gr->radius, hi = gr->region.max[a] - gr->radius;
                        x[a] = lo + (hi - lo) * rng_uniform(&rng);
                    }
                    /* too full for random addition: anywhere in the shaped region, then relax */
                    if (dense && (!shaped || geom_region_holds(s, shaped, x, gr->radius)))
                        break;
                    if (dense) continue;
                    if (!sphere_room(s, gr, x)) continue; /* outside its region, or in a solid */
                    long cc[3] = { 0, 0, 0 };
                    for (int a = 0; a < s->dims; ++a) cc[a] = (long)((x[a] - s->tank.min[a]) / pl.cell);
                    int clash = 0;
                    for (long dz = (s->dims == 3 ? -1 : 0); dz <= (s->dims == 3 ? 1 : 0) && !clash; ++dz)
                        for (long dy = -1; dy <= 1 && !clash; ++dy)
                            for (long dxc = -1; dxc <= 1 && !clash; ++dxc) {
                                long q[3] = { cc[0] + dxc, cc[1] + dy, cc[2] + dz };
                                if (q[0] < 0 || q[1] < 0 || q[2] < 0 || q[0] >= pl.nc[0] || q[1] >= pl.nc[1] ||
                                    q[2] >= pl.nc[2])
                                    continue;
                                for (long k = pl.head[q[0] + pl.nc[0] * (q[1] + pl.nc[1] * q[2])]; k >= 0;
                                     k = pl.next[k]) {
                                    double d2 = 0;
                                    for (int a = 0; a < s->dims; ++a) {
                                        double d = x[a] - p->pos[4 * (first + (size_t)k) + a];
                                        d2 += d * d;
                                    }
                                    double rr = gr->radius + p->radius[first + (size_t)k];
                                    if (d2 < rr * rr * 1.0001) clash = 1;
                                }
                            }
                    if (!clash) {
                        placed = 1;
                        long cell = cc[0] + pl.nc[0] * (cc[1] + pl.nc[1] * cc[2]);
                        long k = (long)(i - first);
                        pl.next[k] = pl.head[cell];
                        pl.head[cell] = k;
                    }
                }
                if (!placed) dense = 1;
            }
            for (int a = 0; a < s->dims; ++a)
                v[a] = gr->velocity[a] +
                       (gr->velocity_jitter > 0 ? gr->velocity_jitter * (2.0 * rng_uniform(&rng) - 1.0) : 0.0);
            set_particle(p, i++, x, v, mass, 0.0, gr->radius, PTYPE_SPHERE);
        }
        if (dense) {
            st = relax_random(s, &pl, p, first, i, g, e);
            if (st == SPHSIM_OK) placer_fill(s, &pl, p, first, i);
        } else if (any_random && gr->placement == PLACE_LATTICE) {
            /* lattice spheres are not in the placer: a random group after a lattice group must
             * not overlap them, so register them too */
            for (size_t k = i - (size_t)gr->count; k < i; ++k) {
                long cc[3] = { 0, 0, 0 };
                for (int a = 0; a < s->dims; ++a) cc[a] = (long)((p->pos[4 * k + a] - s->tank.min[a]) / pl.cell);
                long cell = cc[0] + pl.nc[0] * (cc[1] + pl.nc[1] * cc[2]);
                pl.next[k - first] = pl.head[cell];
                pl.head[cell] = (long)(k - first);
            }
        }
    }
    free(pl.head);
    free(pl.next);
    return st;
}

sphsim_status init_lattice(const scene *s, particles *p, int threads, sphsim_error *e)
{
    long nf, nb, ns;
    SPHSIM_TRY(init_count(s, &nf, &nb, &ns, e));
    SPHSIM_TRY(particles_alloc(p, (size_t)(nf + nb + ns), e));
    p->n_fluid = (size_t)nf;
    p->n_boundary = (size_t)nb;
    p->n_spheres = (size_t)ns;
    sphsim_status st = SPHSIM_OK;
    if (s->mode == MODE_SPH) generate_sph(s, p, threads);
    else st = generate_spheres(s, p, e);
    if (st != SPHSIM_OK) particles_free(p);
    return st;
}

sphsim_status init_generate(const scene *s, particles *p, int threads, sphsim_error *e)
{
    SPHSIM_TRY(init_lattice(s, p, threads, e));
    if (s->mode != MODE_SPH) return SPHSIM_OK;
    sphsim_status st = sph_prepare(s, p, e);
    if (st == SPHSIM_OK) st = init_hydrostatic(s, p, threads, e);
    if (st != SPHSIM_OK) particles_free(p);
    return st;
}
