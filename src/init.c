/* init: the initial state of a scene (fluid lattice, boundary layers, sphere groups). */
#include "init.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    for (int a = 0; a < 3; ++a)
        n[a] = a < s->dims ? lattice_count(b->max[a] - b->min[a], s->spacing) : 1;
}

/* Pitch of the sphere lattice (a small gap so neighbours do not start in contact). */
static double sphere_pitch(double r) { return 2.02 * r; }

static void sphere_lattice_dims(const scene *s, const scene_sphere_group *g, long n[3])
{
    double p = sphere_pitch(g->radius);
    for (int a = 0; a < 3; ++a) {
        if (a >= s->dims) {
            n[a] = 1;
            continue;
        }
        double w = g->region.max[a] - g->region.min[a] - 2.0 * g->radius;
        n[a] = w < 0 ? 0 : (long)floor(w / p + 1e-9) + 1;
    }
}

sph_status init_count(const scene *s, long *n_fluid, long *n_boundary, long *n_spheres, sph_error *e)
{
    *n_fluid = *n_boundary = *n_spheres = 0;
    if (s->mode == MODE_SPH) {
        for (int b = 0; b < s->n_blocks; ++b) {
            long n[3];
            fluid_block_dims(s, &s->blocks[b], n);
            *n_fluid += n[0] * n[1] * n[2];
        }
        long L = s->boundary_layers, inner = 1, outer = 1;
        for (int a = 0; a < s->dims; ++a) {
            double dx_a;
            long n = tank_cells(s, a, &dx_a);
            inner *= n;
            outer *= n + 2 * L;
        }
        *n_boundary = outer - inner;
    } else {
        for (int g = 0; g < s->n_groups; ++g) {
            const scene_sphere_group *gr = &s->groups[g];
            if (gr->placement == PLACE_LATTICE) {
                long n[3];
                sphere_lattice_dims(s, gr, n);
                long room = n[0] * n[1] * n[2];
                if (room < gr->count)
                    return SPH_FAIL(e, SPH_E_SCENE,
                                    "spheres.groups[%d].count: %ld spheres of radius %g m do not fit on a lattice "
                                    "(pitch %g m) in the group's region; there is room for %ld",
                                    g, gr->count, gr->radius, sphere_pitch(gr->radius), room);
            }
            *n_spheres += gr->count;
        }
    }
    return SPH_OK;
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

static void generate_sph(const scene *s, particles *p)
{
    size_t i = 0;
    const double zero[3] = {0, 0, 0};
    const double dvol = pow(s->spacing, s->dims);
    for (int b = 0; b < s->n_blocks; ++b) {
        const scene_box *bx = &s->blocks[b];
        long n[3];
        fluid_block_dims(s, bx, n);
        for (long k = 0; k < n[2]; ++k)
            for (long j = 0; j < n[1]; ++j)
                for (long l = 0; l < n[0]; ++l) {
                    long idx[3] = {l, j, k};
                    double x[3] = {0, 0, 0};
                    for (int a = 0; a < s->dims; ++a) x[a] = bx->min[a] + (idx[a] + 0.5) * s->spacing;
                    set_particle(p, i++, x, zero, s->particle_mass, s->rest_density, 0.0, PTYPE_FLUID);
                }
    }
    /* Boundary shell: the tank lattice extended by L cells per side, minus the inside. */
    long L = s->boundary_layers, n[3] = {1, 1, 1};
    double dxa[3] = {0, 0, 0};
    for (int a = 0; a < s->dims; ++a) n[a] = tank_cells(s, a, &dxa[a]);
    long lo[3] = {-L, -L, s->dims == 3 ? -L : 0}, hi[3] = {n[0] + L, n[1] + L, s->dims == 3 ? n[2] + L : 1};
    for (long k = lo[2]; k < hi[2]; ++k)
        for (long j = lo[1]; j < hi[1]; ++j)
            for (long l = lo[0]; l < hi[0]; ++l) {
                long idx[3] = {l, j, k};
                int inside = 1;
                for (int a = 0; a < s->dims; ++a)
                    if (idx[a] < 0 || idx[a] >= n[a]) inside = 0;
                if (inside) continue;
                double x[3] = {0, 0, 0};
                for (int a = 0; a < s->dims; ++a) x[a] = s->tank.min[a] + (idx[a] + 0.5) * dxa[a];
                set_particle(p, i++, x, zero, s->rest_density * dvol, s->rest_density, 0.0, PTYPE_BOUNDARY);
            }
}

/* Random sequential addition without overlap, accelerated by a host hash of cells. */
typedef struct placer {
    double cell;
    long nc[3];
    long *head, *next; /* linked lists per cell over placed spheres */
} placer;

static sph_status generate_spheres(const scene *s, particles *p, sph_error *e)
{
    size_t i = 0;
    double rmax = 0;
    for (int g = 0; g < s->n_groups; ++g)
        if (s->groups[g].radius > rmax) rmax = s->groups[g].radius;
    placer pl = {0};
    pl.cell = 2.0 * rmax;
    long cells = 1;
    for (int a = 0; a < 3; ++a) {
        pl.nc[a] = a < s->dims ? (long)ceil((s->tank.max[a] - s->tank.min[a]) / pl.cell) + 1 : 1;
        cells *= pl.nc[a];
    }
    int any_random = 0;
    for (int g = 0; g < s->n_groups; ++g) any_random |= s->groups[g].placement == PLACE_RANDOM;
    if (any_random) {
        if (cells > 200000000L)
            return SPH_FAIL(e, SPH_E_SCENE, "spheres.groups: random placement needs a host grid of %ld cells; "
                                            "use placement \"lattice\" for so small spheres in so large a tank", cells);
        pl.head = malloc((size_t)cells * sizeof *pl.head);
        pl.next = malloc(p->n * sizeof *pl.next);
        if (!pl.head || !pl.next) {
            free(pl.head);
            free(pl.next);
            return SPH_FAIL(e, SPH_E_NOMEM, "out of host memory placing spheres");
        }
        for (long c = 0; c < cells; ++c) pl.head[c] = -1;
    }
    sph_status st = SPH_OK;
    size_t first = i;
    for (int g = 0; g < s->n_groups && st == SPH_OK; ++g) {
        const scene_sphere_group *gr = &s->groups[g];
        uint64_t rng = gr->seed * 0x2545F4914F6CDD1Dull + (uint64_t)g;
        double vol = s->dims == 3 ? 4.0 / 3.0 * M_PI * pow(gr->radius, 3) : M_PI * gr->radius * gr->radius;
        double mass = gr->density * vol;
        long n[3];
        sphere_lattice_dims(s, gr, n);
        for (long c = 0; c < gr->count; ++c) {
            double x[3] = {0, 0, 0}, v[3] = {0, 0, 0};
            if (gr->placement == PLACE_LATTICE) {
                long idx[3] = {c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])};
                for (int a = 0; a < s->dims; ++a)
                    x[a] = gr->region.min[a] + gr->radius + idx[a] * sphere_pitch(gr->radius);
            } else {
                int placed = 0;
                for (int attempt = 0; attempt < 10000 && !placed; ++attempt) {
                    for (int a = 0; a < s->dims; ++a) {
                        double lo = gr->region.min[a] + gr->radius, hi = gr->region.max[a] - gr->radius;
                        x[a] = lo + (hi - lo) * rng_uniform(&rng);
                    }
                    long cc[3] = {0, 0, 0};
                    for (int a = 0; a < s->dims; ++a) cc[a] = (long)((x[a] - s->tank.min[a]) / pl.cell);
                    int clash = 0;
                    for (long dz = (s->dims == 3 ? -1 : 0); dz <= (s->dims == 3 ? 1 : 0) && !clash; ++dz)
                        for (long dy = -1; dy <= 1 && !clash; ++dy)
                            for (long dxc = -1; dxc <= 1 && !clash; ++dxc) {
                                long q[3] = {cc[0] + dxc, cc[1] + dy, cc[2] + dz};
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
                if (!placed) {
                    st = SPH_FAIL(e, SPH_E_SCENE,
                                  "spheres.groups[%d]: could not place sphere %ld of %ld at random without overlap "
                                  "(the region is too full); enlarge spheres.groups[%d].region or use placement "
                                  "\"lattice\"",
                                  g, c + 1, gr->count, g);
                    break;
                }
            }
            for (int a = 0; a < s->dims; ++a)
                v[a] = gr->velocity[a] +
                       (gr->velocity_jitter > 0 ? gr->velocity_jitter * (2.0 * rng_uniform(&rng) - 1.0) : 0.0);
            set_particle(p, i++, x, v, mass, 0.0, gr->radius, PTYPE_SPHERE);
        }
        /* lattice spheres are not in the placer: a random group after a lattice group must not
         * overlap them, so register them too. */
        if (any_random && gr->placement == PLACE_LATTICE)
            for (size_t k = i - (size_t)gr->count; k < i; ++k) {
                long cc[3] = {0, 0, 0};
                for (int a = 0; a < s->dims; ++a) cc[a] = (long)((p->pos[4 * k + a] - s->tank.min[a]) / pl.cell);
                long cell = cc[0] + pl.nc[0] * (cc[1] + pl.nc[1] * cc[2]);
                pl.next[k - first] = pl.head[cell];
                pl.head[cell] = (long)(k - first);
            }
    }
    free(pl.head);
    free(pl.next);
    return st;
}

sph_status init_generate(const scene *s, particles *p, sph_error *e)
{
    long nf, nb, ns;
    SPH_TRY(init_count(s, &nf, &nb, &ns, e));
    SPH_TRY(particles_alloc(p, (size_t)(nf + nb + ns), e));
    p->n_fluid = (size_t)nf;
    p->n_boundary = (size_t)nb;
    p->n_spheres = (size_t)ns;
    sph_status st = SPH_OK;
    if (s->mode == MODE_SPH)
        generate_sph(s, p);
    else
        st = generate_spheres(s, p, e);
    if (st != SPH_OK) particles_free(p);
    return st;
}
