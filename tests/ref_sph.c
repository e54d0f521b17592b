/* ref_sph: the plain-C double-precision reference of one SPH step, host-built neighbour tables
 * and small test scenes for the SPH device tests. */
#include "ref_sph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/sph_kernel_fns.h"

void ref_sph_grid_params(int dims, const double lo[3], const double hi[3], double radius, grid_params *gp)
{
    memset(gp, 0, sizeof *gp);
    gp->cell_size = (float)radius;
    gp->cell_size_inv = (float)(1.0 / radius);
    gp->radius = (float)radius;
    gp->n_cells = 1;
    for (int k = 0; k < 3; ++k) {
        if (k < dims) {
            gp->origin[k] = (float)lo[k];
            long nc = (long)ceil((hi[k] - lo[k]) / radius);
            gp->ncell[k] = (dev_u32)(nc < 1 ? 1 : nc);
        } else {
            gp->origin[k] = 0.0f;
            gp->ncell[k] = 1;
        }
        gp->n_cells *= gp->ncell[k];
    }
    gp->reach = 1;
    gp->dims = (dev_u32)dims;
}

/* Same arithmetic as grid_cell_coord in kernels/neighbours.h (float). */
static int cell_coord(float x, float origin, float cell_inv, uint32_t ncell)
{
    const float c = floorf((x - origin) * cell_inv);
    if (!(c >= 0.0f)) return 0;
    if (c >= (float)ncell) return (int)ncell - 1;
    return (int)c;
}

uint32_t ref_sph_cell_index(const grid_params *gp, const float *x4)
{
    const uint32_t cx = (uint32_t)cell_coord(x4[0], gp->origin[0], gp->cell_size_inv, gp->ncell[0]);
    const uint32_t cy = (uint32_t)cell_coord(x4[1], gp->origin[1], gp->cell_size_inv, gp->ncell[1]);
    const uint32_t cz =
        gp->dims == 3 ? (uint32_t)cell_coord(x4[2], gp->origin[2], gp->cell_size_inv, gp->ncell[2]) : 0u;
    return cx + gp->ncell[0] * (cy + gp->ncell[1] * cz);
}

int ref_sph_sort(const grid_params *gp, size_t n, const float *pos4, uint32_t *order, uint32_t *cell_start,
                 uint32_t *cell_end)
{
    uint32_t *cell = malloc((n ? n : 1) * sizeof *cell);
    if (!cell) return -1;
    memset(cell_end, 0, gp->n_cells * sizeof *cell_end);
    for (size_t i = 0; i < n; ++i) {
        cell[i] = ref_sph_cell_index(gp, pos4 + 4 * i);
        cell_end[cell[i]]++; /* counts for now */
    }
    uint32_t acc = 0;
    for (uint32_t c = 0; c < gp->n_cells; ++c) {
        cell_start[c] = acc;
        acc += cell_end[c];
        cell_end[c] = cell_start[c]; /* fill pointer */
    }
    for (size_t i = 0; i < n; ++i) order[cell_end[cell[i]]++] = (uint32_t)i;
    free(cell);
    return 0;
}

/* Pressure from density, clamped at >= 0 (the device's sph_eos in double). */
static double eos(const scene *s, double rho)
{
    if (rho <= s->rest_density) return 0.0;
    if (s->eos == EOS_LINEAR) return s->stiffness * (rho - s->rest_density);
    const double B = s->rest_density * s->sound_speed * s->sound_speed / s->gamma;
    return B * (pow(rho / s->rest_density, s->gamma) - 1.0);
}

/* Density at which the EOS gives p >= 0. */
static double eos_rho(const scene *s, double p)
{
    if (s->eos == EOS_LINEAR) return s->rest_density + p / s->stiffness;
    const double B = s->rest_density * s->sound_speed * s->sound_speed / s->gamma;
    return s->rest_density * pow(1.0 + p / B, 1.0 / s->gamma);
}

/* An integrated density after the step that brought the particles to p->pos with p->vel:
 * rho_i + dt (sum_j m_j v_ij . grad W_ij + the diffusion of Fourtakas et al. 2019 between fluid
 * particles), at least rho0 / 2 (kernels/sph_density.cl). */
static double continuity_rho(const scene *s, const particles *p, size_t i, double c0)
{
    const int dims = s->dims;
    const double h = s->h, H2 = 4.0 * h * h, eta2 = 0.01 * h * h;
    const double rho_i = p->rho[i];
    double drho = 0.0;
    for (size_t j = 0; j < p->n; ++j) {
        double dx[3], r2 = 0.0, vr = 0.0, g_dx = 0.0; /* dx = x_i - x_j */
        const int fluid = p->type[j] == PTYPE_FLUID;
        for (int k = 0; k < 3; ++k) {
            dx[k] = (double)p->pos[4 * i + k] - (double)p->pos[4 * j + k];
            r2 += dx[k] * dx[k];
            vr += ((double)p->vel[4 * i + k] - (double)p->vel[4 * j + k]) * dx[k]; /* a wall's: its body's */
            if (k < dims) g_dx += s->gravity[k] * dx[k];
        }
        if (r2 >= H2 || r2 == 0.0) continue;
        const double F = sphk_f((int)s->kernel, dims, h, sqrt(r2)), m_j = p->mass[j];
        drho += m_j * F * vr;
        if (fluid) {
            const double rho_j = p->rho[j], hydro = s->rest_density * g_dx / (c0 * c0);
            drho += 2.0 * s->diffusion * h * c0 * (rho_i - rho_j - hydro) * F * r2 / (r2 + eta2) * m_j / rho_j;
        }
    }
    return fmax(rho_i + s->dt * drho, 0.5 * s->rest_density);
}

/* The tank's placement at time t (src/motion.c; at rest without motion), and a point's
 * velocity and acceleration with it (docs/physics.md, "Moving walls"). */
typedef struct ref_body {
    motion_frame f;
    motion_state m;
    double axis[3];
} ref_body;

static void ref_body_at(const scene *s, double t, ref_body *b)
{
    motion_frame_at(&s->tank_motion, t, &b->f);
    motion_eval(&s->tank_motion, t, &b->m);
    memcpy(b->axis, s->tank_motion.axis, sizeof b->axis);
}

static void cross3(const double a[3], const double b[3], double c[3])
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* v_w (acc = 0) or a_w (acc = 1) of the body point at x */
static void ref_body_kin(const ref_body *b, const double x[3], int acc, double out[3])
{
    double r[3], w[3], al[3], t1[3], t2[3];
    for (int k = 0; k < 3; ++k) {
        r[k] = x[k] - b->f.c[k] - b->f.d[k];
        w[k] = b->m.omega * b->axis[k];
        al[k] = b->m.alpha * b->axis[k];
    }
    if (!acc) {
        cross3(w, r, t1);
        for (int k = 0; k < 3; ++k) out[k] = b->m.v[k] + t1[k];
        return;
    }
    cross3(al, r, t1);
    cross3(w, r, t2);
    cross3(w, t2, r);
    for (int k = 0; k < 3; ++k) out[k] = b->m.a[k] + t1[k] + r[k];
}

/* x in the world from x0 at rest, and back */
static void ref_body_place(const ref_body *b, const double x0[3], double x[3])
{
    for (int k = 0; k < 3; ++k) {
        x[k] = b->f.c[k] + b->f.d[k];
        for (int q = 0; q < 3; ++q) x[k] += b->f.R[3 * k + q] * (x0[q] - b->f.c[q]);
    }
}

void ref_sph_step(const scene *s, const particles *p, double *rho, double *pressure, double *pos_next, double *vel_next,
                  unsigned *flags)
{
    ref_sph_step_at(s, p, 0.0, rho, pressure, pos_next, vel_next, flags);
}

void ref_sph_step_at(const scene *s, const particles *p, double t, double *rho, double *pressure, double *pos_next,
                     double *vel_next, unsigned *flags)
{
    const int tank_moves = s->tank_motion.n_segments > 0;
    ref_body now, next;
    ref_body_at(s, t, &now);
    ref_body_at(s, t + s->dt, &next);
    const size_t n = p->n;
    const int dims = s->dims;
    const int kernel = (int)s->kernel;
    const double h = s->h, H = 2.0 * h, H2 = H * H;
    const double eta2 = 0.01 * h * h;
    const double c0 = s->eos == EOS_LINEAR ? sqrt(s->stiffness) : s->sound_speed;
    const double lap_norm = sphk_norm_lap(dims, h);
    *flags = 0;

    /* fluid density and pressure: rho_i = sum_j m_j W_ij, or the state's (p->rho) when integrated */
    const int continuity = s->density == DENSITY_CONTINUITY;
    for (size_t i = 0; i < n; ++i) {
        if (p->type[i] != PTYPE_FLUID) continue;
        if (continuity) {
            rho[i] = continuity_rho(s, p, i, c0);
            pressure[i] = eos(s, rho[i]);
            continue;
        }
        double sum = 0.0;
        for (size_t j = 0; j < n; ++j) {
            double r2 = 0.0;
            for (int k = 0; k < 3; ++k) {
                const double d = (double)p->pos[4 * i + k] - (double)p->pos[4 * j + k];
                r2 += d * d;
            }
            if (r2 >= H2) continue;
            sum += (double)p->mass[j] * sphk_w(kernel, dims, h, sqrt(r2));
        }
        rho[i] = sum;
        pressure[i] = eos(s, sum);
    }
    /* boundary pressure extrapolated from the fluid (Adami et al. 2012), rho_w = EOS^-1(p_w) */
    for (size_t w = 0; w < n; ++w) {
        if (p->type[w] != PTYPE_BOUNDARY) continue;
        double sum_W = 0.0, sum_pW = 0.0, g_dot = 0.0;
        for (size_t f = 0; f < n; ++f) {
            if (p->type[f] != PTYPE_FLUID) continue;
            double dx[3], r2 = 0.0; /* dx = x_w - x_f */
            for (int k = 0; k < 3; ++k) {
                dx[k] = (double)p->pos[4 * w + k] - (double)p->pos[4 * f + k];
                r2 += dx[k] * dx[k];
            }
            if (r2 >= H2) continue;
            const double W = sphk_w(kernel, dims, h, sqrt(r2));
            sum_W += W;
            sum_pW += pressure[f] * W;
            double a_w[3] = { 0, 0, 0 }; /* (g - a_w) of a moving wall */
            if (tank_moves) {
                const double xw[3] = { p->pos[4 * w], p->pos[4 * w + 1], p->pos[4 * w + 2] };
                ref_body_kin(&now, xw, 1, a_w);
            }
            for (int k = 0; k < dims; ++k) g_dot += (s->gravity[k] - a_w[k]) * rho[f] * dx[k] * W;
        }
        const double p_w = sum_W > 0.0 ? fmax((sum_pW + g_dot) / sum_W, 0.0) : 0.0;
        pressure[w] = p_w;
        rho[w] = eos_rho(s, p_w);
    }

    /* forces and the kick-drift update */
    for (size_t i = 0; i < n; ++i) {
        double x_i[3], v_i[3];
        for (int k = 0; k < 3; ++k) {
            x_i[k] = p->pos[4 * i + k];
            v_i[k] = p->vel[4 * i + k];
        }
        if (p->type[i] != PTYPE_FLUID) {
            for (int k = 0; k < 4; ++k) {
                pos_next[4 * i + k] = k < 3 ? x_i[k] : 0.0;
                vel_next[4 * i + k] = 0.0;
            }
            if (tank_moves) { /* the tank's walls at t + dt, from their rest place */
                double x0[3], xn[3], vn[3];
                motion_frame_to_rest(&now.f, x_i, x0);
                ref_body_place(&next, x0, xn);
                ref_body_kin(&next, xn, 0, vn);
                for (int k = 0; k < 3; ++k) {
                    pos_next[4 * i + k] = xn[k];
                    vel_next[4 * i + k] = vn[k];
                }
            }
            continue;
        }
        const double rho_i = rho[i], p_rho2_i = pressure[i] / (rho_i * rho_i);
        double acc[3] = { 0.0, 0.0, 0.0 };
        for (size_t j = 0; j < n; ++j) {
            if (j == i) continue;
            double dx[3], r2 = 0.0; /* dx = x_i - x_j */
            for (int k = 0; k < 3; ++k) {
                dx[k] = x_i[k] - (double)p->pos[4 * j + k];
                r2 += dx[k] * dx[k];
            }
            if (r2 >= H2 || r2 == 0.0) continue;
            const double r = sqrt(r2);
            const double F = sphk_f(kernel, dims, h, r);
            const double m_j = p->mass[j];
            const double rho_j = rho[j], p_rho2_j = pressure[j] / (rho_j * rho_j);
            double v_j[3]; /* a wall's: its body's (0 at rest) */
            for (int k = 0; k < 3; ++k) v_j[k] = p->vel[4 * j + k];
            double v_ij[3], vr = 0.0;
            for (int k = 0; k < 3; ++k) {
                v_ij[k] = v_i[k] - v_j[k];
                vr += v_ij[k] * dx[k];
            }
            double coef = -m_j * (p_rho2_i + p_rho2_j) * F; /* pressure */
            double visc = 0.0;                              /* coefficient of v_ij */
            if (s->visc == VISC_ARTIFICIAL) {
                if (vr < 0.0) {
                    const double mu_ij = h * vr / (r2 + eta2);
                    const double Pi_ij = -s->alpha * c0 * mu_ij / (0.5 * (rho_i + rho_j));
                    coef -= m_j * Pi_ij * F;
                }
            } else if (s->kernel == KERNEL_POLY6) {
                visc = -s->mu * m_j / (rho_i * rho_j) * sphk_visc_lap(r, H, lap_norm);
            } else {
                visc = 2.0 * s->mu * m_j / (rho_i * rho_j) * F * r2 / (r2 + eta2);
            }
            for (int k = 0; k < 3; ++k) acc[k] += coef * dx[k] + visc * v_ij[k];
        }
        { /* barrier of the tank faces: range d0 = 0.4 dx, K = min((c0 / (2 d0))^2, 1/dt^2), in the
           * tank's rest frame, turned back into the world */
            const double d0 = 0.4 * s->spacing, omega = 0.5 * c0 / d0;
            const double K = fmin(omega * omega, 1.0 / (s->dt * s->dt));
            double y[3], ab[3] = { 0, 0, 0 };
            motion_frame_to_rest(&now.f, x_i, y);
            for (int k = 0; k < dims; ++k) {
                const double d_lo = y[k] - s->tank.min[k], d_hi = s->tank.max[k] - y[k];
                if (d_lo < d0) ab[k] += K * (d0 - d_lo);
                else if (d_hi < d0) ab[k] -= K * (d0 - d_hi);
            }
            for (int k = 0; k < 3; ++k)
                for (int q = 0; q < 3; ++q) acc[k] += now.f.R[3 * k + q] * ab[q];
        }
        double v2 = 0.0;
        int finite = 1, outside = 0;
        for (int k = 0; k < 3; ++k) {
            const double g = k < dims ? s->gravity[k] : 0.0;
            const double vn = v_i[k] + (acc[k] + g) * s->dt;
            const double xn = x_i[k] + vn * s->dt;
            vel_next[4 * i + k] = vn;
            pos_next[4 * i + k] = xn;
            v2 += vn * vn;
            if (!isfinite(vn) || !isfinite(xn)) finite = 0;
        }
        double y[3];
        motion_frame_to_rest(&next.f, pos_next + 4 * i, y);
        for (int k = 0; k < dims; ++k)
            if (y[k] < s->tank.min[k] || y[k] > s->tank.max[k]) outside = 1;
        vel_next[4 * i + 3] = continuity ? rho_i : 0.0;
        pos_next[4 * i + 3] = 0.0;
        if (!finite) *flags |= FLAG_NONFINITE;
        if (s->max_speed > 0.0 && v2 > s->max_speed * s->max_speed) *flags |= FLAG_RUNAWAY;
        if (outside) *flags |= FLAG_OUTSIDE;
    }
}

void ref_sph_scene(scene *s, int dims, scene_kernel kernel, scene_eos eos_type, scene_visc visc, double dx,
                   double h_factor, const int ntank[3], const int nfluid[3])
{
    memset(s, 0, sizeof *s);
    s->format = SCENE_FORMAT_VERSION;
    snprintf(s->name, sizeof s->name, "ref_sph");
    s->dims = dims;
    s->mode = MODE_SPH;
    for (int k = 0; k < 3; ++k) {
        s->tank.min[k] = 0.0;
        s->tank.max[k] = k < dims ? ntank[k] * dx : 0.0;
        s->blocks[0].min[k] = 0.0;
        s->blocks[0].max[k] = k < dims ? nfluid[k] * dx : 0.0;
        s->gravity[k] = 0.0;
    }
    s->gravity[dims - 1] = -9.81;
    s->n_blocks = 1;
    s->spacing = dx;
    s->rest_density = 1000.0;
    s->kernel = kernel;
    s->h_factor = h_factor;
    s->h = h_factor * dx;
    s->support = 2.0 * s->h;
    s->eos = eos_type;
    s->sound_speed = 20.0;
    s->gamma = 7.0;
    s->stiffness = s->sound_speed * s->sound_speed;
    s->visc = visc;
    s->alpha = 0.02;
    s->mu = 1e-3;
    s->boundary_layers = 3;
    s->dt = 0.2 * s->h / s->sound_speed;
    s->dt_cfl = s->dt;
    s->max_speed = 100.0 * s->sound_speed;
    s->cell_ratio = 1.0;
    s->particle_mass = s->rest_density * pow(dx, dims);
}

/* Is lattice point (i, j, k) of the boundary shell? Coordinates x = lo + (i + 1/2) dx with i in
 * [-L, n + L) per axis; the shell is every point outside [0, n) on at least one axis. */
sphsim_status ref_sph_particles(const scene *s, particles *p, sphsim_error *e)
{
    const int dims = s->dims, L = s->boundary_layers;
    const double dx = s->spacing;
    int nt[3] = { 1, 1, 1 }, nf[3] = { 1, 1, 1 };
    for (int k = 0; k < dims; ++k) {
        nt[k] = (int)floor((s->tank.max[k] - s->tank.min[k]) / dx + 0.5);
        nf[k] = (int)floor((s->blocks[0].max[k] - s->blocks[0].min[k]) / dx + 0.5);
    }
    const int Lz = dims == 3 ? L : 0;
    size_t n_fluid = (size_t)nf[0] * nf[1] * nf[2];
    size_t n_shell = (size_t)(nt[0] + 2 * L) * (nt[1] + 2 * L) * (nt[2] + 2 * Lz) - (size_t)nt[0] * nt[1] * nt[2];
    SPHSIM_TRY(particles_alloc(p, n_fluid + n_shell, e));
    p->n_fluid = n_fluid;
    p->n_boundary = n_shell;
    const double vol = pow(dx, dims);
    size_t m = 0;
    for (int k = 0; k < nf[2]; ++k)
        for (int j = 0; j < nf[1]; ++j)
            for (int i = 0; i < nf[0]; ++i, ++m) {
                const int c[3] = { i, j, k };
                for (int a = 0; a < 3; ++a)
                    p->pos[4 * m + a] = a < dims ? (float)(s->blocks[0].min[a] + (c[a] + 0.5) * dx) : 0.0f;
                p->type[m] = PTYPE_FLUID;
                p->mass[m] = (float)(s->rest_density * vol);
            }
    for (int k = -Lz; k < nt[2] + Lz; ++k)
        for (int j = -L; j < nt[1] + L; ++j)
            for (int i = -L; i < nt[0] + L; ++i) {
                const int c[3] = { i, j, k };
                int inside = 1;
                for (int a = 0; a < dims; ++a)
                    if (c[a] < 0 || c[a] >= nt[a]) inside = 0;
                if (inside) continue;
                for (int a = 0; a < 3; ++a)
                    p->pos[4 * m + a] = a < dims ? (float)(s->tank.min[a] + (c[a] + 0.5) * dx) : 0.0f;
                p->type[m] = PTYPE_BOUNDARY;
                p->mass[m] = (float)(s->rest_density * vol);
                ++m;
            }
    for (size_t i = 0; i < p->n; ++i) {
        p->id[i] = (uint32_t)i;
        p->rho[i] = (float)s->rest_density;
    }
    return SPHSIM_OK;
}

double ref_sph_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    const uint64_t r = x * 0x2545F4914F6CDD1DULL;
    return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Kernel sums at point x over the fluid: S = sum V W, and the V W-weighted p and v; *Sw (may be
 * NULL) the same S over the walls. */
static void ref_probe(const scene *s, const particles *p, const double *rho, const double *pressure, const double x[3],
                      double *S, double *sp, double sv[3], double *Sw)
{
    const double H = 2.0 * s->h;
    *S = *sp = sv[0] = sv[1] = sv[2] = 0.0;
    if (Sw) *Sw = 0.0;
    for (size_t j = 0; j < p->n; ++j) {
        if (p->type[j] != PTYPE_FLUID && !(Sw && p->type[j] == PTYPE_BOUNDARY)) continue;
        double r2 = 0.0;
        for (int k = 0; k < 3; ++k) {
            const double d = x[k] - (double)p->pos[4 * j + k];
            r2 += d * d;
        }
        if (r2 >= H * H) continue;
        const double w = sphk_w((int)s->kernel, s->dims, s->h, sqrt(r2)) * p->mass[j] / rho[j];
        if (p->type[j] != PTYPE_FLUID) {
            *Sw += w;
            continue;
        }
        *S += w;
        *sp += w * pressure[j];
        for (int k = 0; k < 3; ++k) sv[k] += w * p->vel[4 * j + k];
    }
}

void ref_sph_gauges(const scene *s, const particles *p, const double *rho, const double *pressure, double *rows)
{
    const int dims = s->dims, up = dims - 1;
    const double H = 2.0 * s->h;
    for (int g = 0; g < s->n_gauges; ++g) {
        const scene_gauge *gg = &s->gauges[g];
        double *out = rows + 6 * g;
        double S, sp, sv[3];
        if (gg->type == GAUGE_PRESSURE || gg->type == GAUGE_VELOCITY) {
            ref_probe(s, p, rho, pressure, gg->point, &S, &sp, sv, NULL);
            const int dry = !(S >= 0.1);
            if (gg->type == GAUGE_PRESSURE) out[0] = dry ? NAN : sp / S;
            else
                for (int k = 0; k < dims; ++k) out[k] = dry ? NAN : sv[k] / S;
        } else if (gg->type == GAUGE_HEIGHT) {
            /* samples every dx / 2 up the tank; the highest at least half wet (its fluid's share
             * of the kernel the walls leave, S / (1 - S_w)), and its crossing */
            const double dz = 0.5 * s->spacing, height = s->tank.max[up] - s->tank.min[up];
            const int m = (int)floor(height / dz) + 1;
            double *Sm = malloc(sizeof *Sm * (size_t)m);
            for (int q = 0; q < m; ++q) {
                double x[3] = { gg->point[0], gg->point[1], gg->point[2] };
                x[up] = s->tank.min[up] + q * dz;
                double Sw;
                ref_probe(s, p, rho, pressure, x, &Sm[q], &sp, sv, &Sw);
                if (Sw > 0.0) Sm[q] /= fmax(1.0 - Sw, 0.25);
            }
            out[0] = 0.0;
            for (int q = m - 1; q >= 0; --q)
                if (Sm[q] >= 0.5) {
                    out[0] = (q + (q + 1 < m ? (Sm[q] - 0.5) / (Sm[q] - Sm[q + 1]) : 0.0)) * dz;
                    break;
                }
            free(Sm);
        } else {
            /* F_w = -m_w sum_f m_f (p_w / rho_w^2 + p_f / rho_f^2) F(r) (x_w - x_f); the moment
             * about the gauge's point */
            double F[3] = { 0, 0, 0 }, M[3] = { 0, 0, 0 };
            for (size_t w = 0; w < p->n; ++w) {
                if (p->type[w] != PTYPE_BOUNDARY) continue;
                double fw[3] = { 0, 0, 0 };
                for (size_t f = 0; f < p->n; ++f) {
                    if (p->type[f] != PTYPE_FLUID) continue;
                    double d[3], r2 = 0.0;
                    for (int k = 0; k < 3; ++k) {
                        d[k] = (double)p->pos[4 * w + k] - (double)p->pos[4 * f + k];
                        r2 += d[k] * d[k];
                    }
                    if (r2 >= H * H || r2 == 0.0) continue;
                    const double c = -(double)p->mass[w] * p->mass[f] *
                                     (pressure[w] / (rho[w] * rho[w]) + pressure[f] / (rho[f] * rho[f])) *
                                     sphk_f((int)s->kernel, dims, s->h, sqrt(r2));
                    for (int k = 0; k < 3; ++k) fw[k] += c * d[k];
                }
                double r[3];
                for (int k = 0; k < 3; ++k) {
                    F[k] += fw[k];
                    r[k] = (double)p->pos[4 * w + k] - gg->point[k];
                }
                M[0] += r[1] * fw[2] - r[2] * fw[1];
                M[1] += r[2] * fw[0] - r[0] * fw[2];
                M[2] += r[0] * fw[1] - r[1] * fw[0];
            }
            for (int k = 0; k < dims; ++k) out[k] = F[k];
            if (dims == 3)
                for (int k = 0; k < 3; ++k) out[3 + k] = M[k];
            else out[2] = M[2];
        }
    }
}
