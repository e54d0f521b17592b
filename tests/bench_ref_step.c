/* bench_ref_step: the CPU figure of the "fast on the GPU" target as a ratio measured in one run:
 * ms per SPH step of a single-thread plain-C implementation of the step (host cell list, sorted
 * each step; float, the same formulas as kernels/sph_density.cl and kernels/sph_forces_integrate.cl) against
 * ms per step of build/sphsim on an OpenCL device, on the same scene and initial state; plus a
 * check that after one step the plain-C density agrees with sphsim's snapshot.
 *
 * usage: bench_ref_step [--steps K] [--reps R] [--device SEL] [--sphsim PATH] [--no-check] SCENE.json
 *                       [--set PATH=VALUE ...]
 * Built and run by scripts/bench_cpu_ratio.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "grid.h"
#include "init.h"
#include "output.h"
#include "particles.h"
#include "scene.h"
#include "sph.h"
#include "ref_sph.h"

#define MAX_SETS 60

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the plain-C step (float, one thread) ---- */

typedef struct cstate {
    size_t n;
    int dims, kernel, eos_linear, visc_artificial;
    sph_params P;
    grid_params gp;
    float *pos, *vel, *pos_next, *vel_next, *mass, *rho, *pressure, *tmp4a, *tmp4b, *tmpf;
    uint32_t *id, *tmpu, *order, *cell_start, *cell_end;
    uint8_t *type, *tmpb;
    unsigned flags, n_put_back;
} cstate;

/* W from r^2 (sph_W of kernels/sph_common.h, float). */
static inline float c_W(const cstate *c, float r2)
{
    const sph_params *P = &c->P;
    if (c->kernel == KERNEL_POLY6) {
        const float d = P->support2 - r2;
        return d > 0.0f ? P->w_norm * d * d * d : 0.0f;
    }
    const float q = sqrtf(r2) * P->h_inv;
    if (q >= 2.0f) return 0.0f;
    if (c->kernel == KERNEL_CUBIC) {
        if (q < 1.0f) return P->w_norm * (1.0f - 1.5f * q * q + 0.75f * q * q * q);
        const float d = 2.0f - q;
        return P->w_norm * 0.25f * d * d * d;
    }
    const float d = 1.0f - 0.5f * q, d2 = d * d;
    return P->w_norm * d2 * d2 * (2.0f * q + 1.0f);
}

/* F = (1/r) dW/dr (sph_F, float). */
static inline float c_F(const cstate *c, float r)
{
    const sph_params *P = &c->P;
    if (c->kernel == KERNEL_POLY6) {
        const float d = P->support - r;
        return (d > 0.0f && r > 0.0f) ? -3.0f * P->f_norm * d * d / r : 0.0f;
    }
    const float q = r * P->h_inv;
    if (q >= 2.0f) return 0.0f;
    if (c->kernel == KERNEL_CUBIC) {
        if (q < 1.0f) return P->f_norm * (-3.0f + 2.25f * q);
        const float d = 2.0f - q;
        return P->f_norm * -0.75f * d * d / q;
    }
    const float d = 1.0f - 0.5f * q;
    return -5.0f * P->f_norm * d * d * d;
}

static inline float c_eos(const cstate *c, float rho)
{
    if (rho <= c->P.rho0) return 0.0f;
    if (c->eos_linear) return c->P.eos_k * (rho - c->P.rho0);
    return c->P.eos_k * expm1f(c->P.gamma * log1pf((rho - c->P.rho0) / c->P.rho0));
}

static inline float c_eos_rho(const cstate *c, float p)
{
    if (c->eos_linear) return c->P.rho0 + p / c->P.eos_k;
    return c->P.rho0 * expf(log1pf(p / c->P.eos_k) / c->P.gamma);
}

static int cell_coord(float x, float origin, float cell_inv, uint32_t ncell)
{
    const float q = floorf((x - origin) * cell_inv);
    if (!(q >= 0.0f)) return 0;
    if (q >= (float)ncell) return (int)ncell - 1;
    return (int)q;
}

/* The neighbour loop: every j in the (2 reach + 1)^dims cells around x (kernels/neighbours.h). */
#define C_NEIGHBOURS_BEGIN(c, x, j)                                                                                    \
    {                                                                                                                  \
        const grid_params *gp_ = &(c)->gp;                                                                             \
        const int r_ = (int)gp_->reach;                                                                                \
        int lo_[3], hi_[3];                                                                                            \
        for (int a_ = 0; a_ < 3; ++a_) {                                                                               \
            const int cc_ =                                                                                            \
                a_ < (int)gp_->dims ? cell_coord((x)[a_], gp_->origin[a_], gp_->cell_size_inv, gp_->ncell[a_]) : 0;    \
            lo_[a_] = a_ < (int)gp_->dims ? (cc_ - r_ < 0 ? 0 : cc_ - r_) : 0;                                         \
            hi_[a_] =                                                                                                  \
                a_ < (int)gp_->dims ? (cc_ + r_ > (int)gp_->ncell[a_] - 1 ? (int)gp_->ncell[a_] - 1 : cc_ + r_) : 0;   \
        }                                                                                                              \
        for (int cz_ = lo_[2]; cz_ <= hi_[2]; ++cz_)                                                                   \
            for (int cy_ = lo_[1]; cy_ <= hi_[1]; ++cy_) {                                                             \
                const uint32_t row_ = gp_->ncell[0] * ((uint32_t)cy_ + gp_->ncell[1] * (uint32_t)cz_);                 \
                const uint32_t s_ = (c)->cell_start[row_ + (uint32_t)lo_[0]];                                          \
                const uint32_t e_ = (c)->cell_end[row_ + (uint32_t)hi_[0]];                                            \
                for (uint32_t j = s_; j < e_; ++j) {
#define C_NEIGHBOURS_END                                                                                               \
    }                                                                                                                  \
    }                                                                                                                  \
    }

/* Sort by cell (counting sort) and gather every array into sorted order; the cells of one x-row
 * are contiguous, so a row of neighbour cells is one range [start of first, end of last). */
static int c_rebuild(cstate *c)
{
    const size_t n = c->n;
    if (ref_sph_sort(&c->gp, n, c->pos, c->order, c->cell_start, c->cell_end)) return -1;
    /* ref_sph_sort leaves cell_end as the fill pointer = end of each cell */
    for (size_t k = 0; k < n; ++k) {
        const uint32_t i = c->order[k];
        memcpy(c->tmp4a + 4 * k, c->pos + 4 * i, 16);
        memcpy(c->tmp4b + 4 * k, c->vel + 4 * i, 16);
        c->tmpf[k] = c->mass[i];
        c->tmpu[k] = c->id[i];
        c->tmpb[k] = c->type[i];
    }
    float *t;
    t = c->pos, c->pos = c->tmp4a, c->tmp4a = t;
    t = c->vel, c->vel = c->tmp4b, c->tmp4b = t;
    t = c->mass, c->mass = c->tmpf, c->tmpf = t;
    uint32_t *u = c->id;
    c->id = c->tmpu, c->tmpu = u;
    uint8_t *b = c->type;
    c->type = c->tmpb, c->tmpb = b;
    return 0;
}

static void c_density(cstate *c)
{
    const size_t n = c->n;
    const float support2 = c->P.support2;
    for (size_t i = 0; i < n; ++i) {
        if (c->type[i] != PTYPE_FLUID) continue;
        const float *x_i = c->pos + 4 * i;
        float rho_i = 0.0f;
        C_NEIGHBOURS_BEGIN(c, x_i, j)
        const float *x_j = c->pos + 4 * j;
        const float dx0 = x_i[0] - x_j[0], dx1 = x_i[1] - x_j[1], dx2 = x_i[2] - x_j[2];
        const float r2 = dx0 * dx0 + dx1 * dx1 + dx2 * dx2;
        if (r2 >= support2) continue;
        rho_i += c->mass[j] * c_W(c, r2);
        C_NEIGHBOURS_END
        c->rho[i] = rho_i;
        c->pressure[i] = c_eos(c, rho_i);
    }
    for (size_t i = 0; i < n; ++i) {
        if (c->type[i] != PTYPE_BOUNDARY) continue;
        const float *x_w = c->pos + 4 * i;
        float sum_W = 0.0f, sum_pW = 0.0f, s_rdW[3] = { 0.0f, 0.0f, 0.0f };
        C_NEIGHBOURS_BEGIN(c, x_w, j)
        if (c->type[j] != PTYPE_FLUID) continue;
        const float *x_f = c->pos + 4 * j;
        const float dx[3] = { x_w[0] - x_f[0], x_w[1] - x_f[1], x_w[2] - x_f[2] }; /* x_w - x_f */
        const float r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        if (r2 >= support2) continue;
        const float W = c_W(c, r2);
        sum_W += W;
        sum_pW += c->pressure[j] * W;
        for (int a = 0; a < 3; ++a) s_rdW[a] += (c->rho[j] * W) * dx[a];
        C_NEIGHBOURS_END
        float p_w = 0.0f;
        if (sum_W > 0.0f) {
            const float g_dot = c->P.gravity[0] * s_rdW[0] + c->P.gravity[1] * s_rdW[1] + c->P.gravity[2] * s_rdW[2];
            p_w = fmaxf((sum_pW + g_dot) / sum_W, 0.0f);
        }
        c->pressure[i] = p_w;
        c->rho[i] = c_eos_rho(c, p_w);
    }
}

static void c_forces(cstate *c)
{
    const sph_params *P = &c->P;
    const size_t n = c->n;
    for (size_t i = 0; i < n; ++i) {
        const float *x_i = c->pos + 4 * i, *v_i = c->vel + 4 * i;
        float *xn = c->pos_next + 4 * i, *vn = c->vel_next + 4 * i;
        if (c->type[i] != PTYPE_FLUID) {
            memcpy(xn, x_i, 16);
            memset(vn, 0, 16);
            continue;
        }
        const float rho_i = c->rho[i], p_rho2_i = c->pressure[i] / (rho_i * rho_i);
        float acc[3] = { 0.0f, 0.0f, 0.0f };
        C_NEIGHBOURS_BEGIN(c, x_i, j)
        const float *x_j = c->pos + 4 * j;
        const float dx[3] = { x_i[0] - x_j[0], x_i[1] - x_j[1], x_i[2] - x_j[2] }; /* x_i - x_j */
        const float r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        if (r2 >= P->support2 || j == i || r2 == 0.0f) continue;
        const float r = sqrtf(r2);
        const float F = c_F(c, r);
        const float m_j = c->mass[j], rho_j = c->rho[j];
        const float p_rho2_j = c->pressure[j] / (rho_j * rho_j);
        const int fluid_j = c->type[j] == PTYPE_FLUID;
        float v_ij[3];
        for (int a = 0; a < 3; ++a) v_ij[a] = v_i[a] - (fluid_j ? c->vel[4 * j + a] : 0.0f);
        float coef = -m_j * (p_rho2_i + p_rho2_j) * F, visc = 0.0f;
        if (c->visc_artificial) {
            const float vr = v_ij[0] * dx[0] + v_ij[1] * dx[1] + v_ij[2] * dx[2];
            if (vr < 0.0f) {
                /* one division, as the kernel: alpha_c0 h vr / ((r^2 + eta^2) rho_ij) */
                const float alpha_c0 = -P->alpha * P->c0;
                const float Pi_ij = alpha_c0 * P->h * vr / ((r2 + P->eta2) * (0.5f * (rho_i + rho_j)));
                coef -= m_j * Pi_ij * F;
            }
        } else if (c->kernel == KERNEL_POLY6) {
            visc = -(P->mu * m_j / (rho_i * rho_j) * (r < P->support ? P->lap_norm * (P->support - r) : 0.0f));
        } else {
            visc = 2.0f * P->mu * m_j / (rho_i * rho_j) * F * r2 / (r2 + P->eta2);
        }
        for (int a = 0; a < 3; ++a) acc[a] += coef * dx[a] + visc * v_ij[a];
        C_NEIGHBOURS_END
        for (int a = 0; a < c->dims; ++a) { /* barrier of the tank faces, as sph_forces_integrate.cl */
            const float d_lo = x_i[a] - P->tank_min[a], d_hi = P->tank_max[a] - x_i[a];
            if (d_lo < P->wall_d0) acc[a] += P->wall_k * (P->wall_d0 - d_lo);
            else if (d_hi < P->wall_d0) acc[a] -= P->wall_k * (P->wall_d0 - d_hi);
        }
        int finite = 1;
        float v2 = 0.0f;
        for (int a = 0; a < 3; ++a) {
            vn[a] = v_i[a] + (acc[a] + P->gravity[a]) * P->dt;
            xn[a] = x_i[a] + vn[a] * P->dt;
            v2 += vn[a] * vn[a];
            if (!isfinite(vn[a]) || !isfinite(xn[a])) finite = 0;
        }
        vn[3] = xn[3] = 0.0f;
        unsigned bad = finite ? 0u : FLAG_NONFINITE;
        const int runaway = v2 > P->max_speed2;
        if (runaway) bad |= FLAG_RUNAWAY;
        if (finite && !runaway) { /* put back at a tank wall, as sph_forces_integrate.cl */
            int outside = 0;
            for (int a = 0; a < c->dims; ++a) {
                if (xn[a] < P->tank_min[a]) {
                    xn[a] = P->tank_min[a];
                    vn[a] = fmaxf(vn[a], 0.0f);
                    outside = 1;
                } else if (xn[a] > P->tank_max[a]) {
                    xn[a] = P->tank_max[a];
                    vn[a] = fminf(vn[a], 0.0f);
                    outside = 1;
                }
            }
            if (outside) {
                bad |= FLAG_OUTSIDE;
                c->n_put_back++;
            }
        }
        c->flags |= bad;
    }
    float *t = c->pos;
    c->pos = c->pos_next, c->pos_next = t;
    t = c->vel, c->vel = c->vel_next, c->vel_next = t;
}

static int c_step(cstate *c)
{
    if (c_rebuild(c)) return -1;
    c_density(c);
    c_forces(c);
    return 0;
}

static void c_free(cstate *c)
{
    float *f[] = {
        c->pos, c->vel, c->pos_next, c->vel_next, c->mass, c->rho, c->pressure, c->tmp4a, c->tmp4b, c->tmpf
    };
    for (size_t k = 0; k < sizeof f / sizeof *f; ++k) free(f[k]);
    free(c->id), free(c->tmpu), free(c->order), free(c->cell_start), free(c->cell_end);
    free(c->type), free(c->tmpb);
    memset(c, 0, sizeof *c);
}

/* State in id order from the initial particles; the grid as sim.c builds it. */
static int c_init(cstate *c, const scene *s, const particles *p)
{
    memset(c, 0, sizeof *c);
    const size_t n = p->n;
    c->n = n;
    c->dims = s->dims;
    c->kernel = (int)s->kernel;
    c->eos_linear = s->eos == EOS_LINEAR;
    c->visc_artificial = s->visc == VISC_ARTIFICIAL;
    sph_params_from_scene(s, &c->P);
    double lo[3] = { 0, 0, 0 }, hi[3] = { 0, 0, 0 };
    const double margin = (s->boundary_layers + 1) * s->spacing;
    for (int a = 0; a < s->dims; ++a) {
        lo[a] = s->tank.min[a] - margin;
        hi[a] = s->tank.max[a] + margin;
    }
    sphsim_error e;
    if (grid_geometry(s->dims, lo, hi, s->support, s->cell_ratio, &c->gp, &e) != SPHSIM_OK) {
        fprintf(stderr, "bench_ref_step: %s\n", e.msg);
        return -1;
    }
    float **f4[] = { &c->pos, &c->vel, &c->pos_next, &c->vel_next, &c->tmp4a, &c->tmp4b };
    for (size_t k = 0; k < sizeof f4 / sizeof *f4; ++k)
        if (!(*f4[k] = calloc(4 * n, sizeof(float)))) return -1;
    float **f1[] = { &c->mass, &c->rho, &c->pressure, &c->tmpf };
    for (size_t k = 0; k < sizeof f1 / sizeof *f1; ++k)
        if (!(*f1[k] = calloc(n, sizeof(float)))) return -1;
    c->id = calloc(n, 4), c->tmpu = calloc(n, 4), c->order = calloc(n, 4);
    c->cell_start = calloc(c->gp.n_cells, 4), c->cell_end = calloc(c->gp.n_cells, 4);
    c->type = calloc(n, 1), c->tmpb = calloc(n, 1);
    if (!c->id || !c->tmpu || !c->order || !c->cell_start || !c->cell_end || !c->type || !c->tmpb) return -1;
    memcpy(c->pos, p->pos, 16 * n);
    memcpy(c->vel, p->vel, 16 * n);
    memcpy(c->mass, p->mass, 4 * n);
    memcpy(c->rho, p->rho, 4 * n);
    memcpy(c->type, p->type, n);
    for (size_t i = 0; i < n; ++i) c->id[i] = p->id[i];
    return 0;
}

/* ---- sphsim as a subprocess ---- */

typedef struct run_result {
    long steps;
    double wall_s, output_s;
    char device[256];
} run_result;

static double json_num(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *q = strstr(line, pat);
    return q ? strtod(q + strlen(pat), NULL) : NAN;
}

/* Run sphsim for `steps` steps of dt (one snapshot at the start and one at the end, to `out`). */
static int run_sphsim(const char *sphsim, const char *device, const char *scene_path, char *const *sets, int n_sets,
                      double dt, long steps, const char *out, run_result *r)
{
    char cmd[8192];
    int len = snprintf(cmd, sizeof cmd, "'%s' '%s' -o '%s' --overwrite --profile --progress=none --quiet", sphsim,
                       scene_path, out);
    if (device) len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --device '%s'", device);
    for (int k = 0; k < n_sets; ++k) len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --set '%s'", sets[k]);
    len +=
        snprintf(cmd + len, sizeof cmd - (size_t)len,
                 " --set time.dt=%.17g --set time.end=%.17g --set output.interval=%.17g", dt, steps * dt, steps * dt);
    if (len >= (int)sizeof cmd) return -1;
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    char line[16384];
    int got = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "\"wall_time_s\"")) {
            got = 1;
            break;
        }
    while (fgetc(f) != EOF) {
    }
    int rc = pclose(f);
    if (!got || rc != 0 || !strstr(line, "\"status\":\"ok\"")) {
        fprintf(stderr, "bench_ref_step: sphsim failed (rc %d): %s\n  command: %s\n", rc, got ? line : "(no summary)",
                cmd);
        return -1;
    }
    r->steps = (long)json_num(line, "steps");
    r->wall_s = json_num(line, "wall_time_s");
    r->output_s = json_num(line, "output_s");
    r->device[0] = 0;
    const char *d = strstr(line, "\"device\":\"");
    if (d) {
        d += 10;
        size_t k = 0;
        while (d[k] && d[k] != '"' && k + 1 < sizeof r->device) {
            r->device[k] = d[k];
            ++k;
        }
        r->device[k] = 0;
    }
    if (isnan(r->output_s)) r->output_s = 0.0;
    return 0;
}

int main(int argc, char **argv)
{
    long K = 10;
    int reps = 3;
    const char *device = NULL, *sphsim = "build/sphsim", *scene_path = NULL;
    int check = 1, n_sets = 0;
    char *sets[MAX_SETS];
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) K = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!strcmp(argv[i], "--sphsim") && i + 1 < argc) sphsim = argv[++i];
        else if (!strcmp(argv[i], "--no-check")) check = 0;
        else if (!strcmp(argv[i], "--set") && i + 1 < argc && n_sets < MAX_SETS - 4) sets[n_sets++] = argv[++i];
        else if (argv[i][0] != '-' && !scene_path) scene_path = argv[i];
        else {
            fprintf(
                stderr,
                "usage: bench_ref_step [--steps K] [--reps R] [--device SEL] [--sphsim PATH] [--no-check] SCENE.json "
                "[--set PATH=VALUE ...]\n");
            return 2;
        }
    }
    if (!scene_path || K < 1 || reps < 1) {
        fprintf(stderr, "bench_ref_step: a scene file, --steps >= 1 and --reps >= 1 are needed\n");
        return 2;
    }

    /* The scene's dt, then the scene with that dt fixed (what sphsim gets with --set time.dt). */
    scene s;
    sphsim_error e;
    if (scene_load(&s, scene_path, (const char *const *)sets, n_sets, &e) != SPHSIM_OK) {
        fprintf(stderr, "bench_ref_step: %s\n", e.msg);
        return 3;
    }
    const double dt = s.dt;
    scene_free(&s);
    char set_dt[64], set_end[64], set_out[64];
    snprintf(set_dt, sizeof set_dt, "time.dt=%.17g", dt);
    snprintf(set_end, sizeof set_end, "time.end=%.17g", K * dt);
    snprintf(set_out, sizeof set_out, "output.interval=%.17g", K * dt);
    char *sets2[MAX_SETS];
    memcpy(sets2, sets, (size_t)n_sets * sizeof *sets);
    sets2[n_sets] = set_dt, sets2[n_sets + 1] = set_end, sets2[n_sets + 2] = set_out;
    if (scene_load(&s, scene_path, (const char *const *)sets2, n_sets + 3, &e) != SPHSIM_OK) {
        fprintf(stderr, "bench_ref_step: %s\n", e.msg);
        return 3;
    }
    if (s.mode != MODE_SPH) {
        fprintf(stderr, "bench_ref_step: %s is not an SPH scene\n", scene_path);
        return 3;
    }
    particles p = { 0 };
    if (init_generate(&s, &p, TUNE_AUTO, &e) != SPHSIM_OK) {
        fprintf(stderr, "bench_ref_step: %s\n", e.msg);
        return 3;
    }
    fprintf(stderr, "scene %s: %zu particles (%zu fluid), dims %d, dt %.4g s, %ld steps timed\n", scene_path, p.n,
            p.n_fluid, s.dims, dt, K);

    /* (a) the plain-C step, one thread: K steps from the initial state, best of `reps` */
    cstate c;
    double c_ms = INFINITY;
    for (int rep = 0; rep < reps; ++rep) {
        if (c_init(&c, &s, &p)) {
            fprintf(stderr, "bench_ref_step: out of memory\n");
            return 1;
        }
        const double t0 = now_s();
        for (long k = 0; k < K; ++k)
            if (c_step(&c)) return 1;
        c_ms = fmin(c_ms, 1e3 * (now_s() - t0) / (double)K);
        if (c.flags & (FLAG_NONFINITE | FLAG_RUNAWAY))
            fprintf(stderr, "bench_ref_step: warning: the plain-C step flagged 0x%x\n", c.flags);
        c_free(&c);
    }

    /* (b) sphsim on the device. A 1-step run first (it also warms PoCL's kernel cache: the
     * first launch of a new build compiles inside sphsim's timed loop), then K and 2 K steps,
     * `reps` times each, best of each; the difference of the two removes the fixed costs (the first and
     * last density and snapshot) and gives ms/step. */
    char out[256];
    snprintf(out, sizeof out, "/tmp/bench_ref_step_%ld.h5", (long)getpid());
    run_result r0, r1, r2;
    if (run_sphsim(sphsim, device, scene_path, sets, n_sets, dt, 1, out, &r0)) return 4;

    /* one-step agreement: rho and position of every fluid particle after one step */
    int check_ok = -1;
    double max_rel_rho = 0.0, max_dx = 0.0;
    if (check) {
        output_resume rd;
        if (output_read_resume(out, &rd, &e) != SPHSIM_OK) {
            fprintf(stderr, "bench_ref_step: check: %s\n", e.msg);
            output_resume_free(&rd);
            return 4;
        }
        particles d = rd.p;
        rd.p = (particles){ 0 };
        output_resume_free(&rd);
        if (c_init(&c, &s, &p) || c_step(&c) || c_rebuild(&c)) return 1;
        c_density(&c); /* the snapshot's rho belongs to the positions after the step */
        for (size_t k = 0; k < c.n; ++k) {
            if (c.type[k] != PTYPE_FLUID) continue;
            const uint32_t id = c.id[k];
            const double rel = fabs((double)c.rho[k] - (double)d.rho[id]) / s.rest_density;
            if (rel > max_rel_rho || isnan(rel)) max_rel_rho = rel;
            for (int a = 0; a < 3; ++a) {
                const double ddx = fabs((double)c.pos[4 * k + a] - (double)d.pos[4 * id + a]);
                if (ddx > max_dx || isnan(ddx)) max_dx = ddx;
            }
        }
        check_ok = max_rel_rho < 1e-3 && max_dx < 1e-3 * s.spacing;
        fprintf(stderr,
                "check after 1 step (fluid): max |rho_C - rho_device| / rho0 = %.3g, max |x_C - x_device| = %.3g m "
                "(%.3g dx): %s\n",
                max_rel_rho, max_dx, max_dx / s.spacing, check_ok ? "agree" : "DISAGREE");
        c_free(&c);
        particles_free(&d);
    }

    double net1 = INFINITY, net2 = INFINITY;
    for (int rep = 0; rep < reps; ++rep) {
        if (run_sphsim(sphsim, device, scene_path, sets, n_sets, dt, K, out, &r1) ||
            run_sphsim(sphsim, device, scene_path, sets, n_sets, dt, 2 * K, out, &r2))
            return 4;
        fprintf(stderr, "sphsim: %ld steps %.4f s (output %.4f s), %ld steps %.4f s (output %.4f s)\n", r1.steps,
                r1.wall_s, r1.output_s, r2.steps, r2.wall_s, r2.output_s);
        net1 = fmin(net1, r1.wall_s - r1.output_s);
        net2 = fmin(net2, r2.wall_s - r2.output_s);
    }
    const double dev_simple_ms = 1e3 * net1 / (double)K;
    const double dev_ms = 1e3 * (net2 - net1) / (double)K;
    remove(out);
    char xmf[260];
    snprintf(xmf, sizeof xmf, "%.*s.xmf", (int)strlen(out) - 3, out);
    remove(xmf);

    printf("%-8s %-7s %4s %9s %9s | %14s %14s %14s | %7s  %s\n", "N", "fluid", "dims", "scene", "steps", "C ms/step",
           "device ms/step", "(K steps)/K", "ratio", "1-step check");
    printf("%-8zu %-7zu %4d %9s %9ld | %14.2f %14.2f %14.2f | %7.2f  %s\n", p.n, p.n_fluid, s.dims, s.name, K, c_ms,
           dev_ms, dev_simple_ms, c_ms / dev_ms,
           check_ok < 0 ? "skipped"
           : check_ok   ? "agree"
                        : "DISAGREE");
    printf("device: %s\n", r1.device);
    FILE *la = fopen("/proc/loadavg", "r");
    char lavg[128];
    if (la && fgets(lavg, sizeof lavg, la)) printf("load average at the end: %s", lavg);
    if (la) fclose(la);
    particles_free(&p);
    scene_free(&s);
    return check_ok == 0 ? 1 : 0;
}
