/* ref_contact: plain-C double-precision reference of one contact step (brute-force pairs). */
#include "ref_contact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static double omega(double w, unsigned d_i, unsigned d_j)
{
    unsigned d = d_i > d_j ? d_i : d_j;
    return fmin(1.0, w / (d > 1 ? d : 1));
}

static double target(double v0_n, double e, double v_rest) { return v0_n < -v_rest ? -e * v0_n : 0.0; }

static void normal(const double *dx, size_t i, size_t j, double *n_ij, double *dist)
{
    double r2 = dot3(dx, dx);
    *dist = sqrt(r2);
    if (r2 > 0) {
        for (int a = 0; a < 3; ++a) n_ij[a] = dx[a] / *dist;
    } else {
        n_ij[0] = i < j ? 1 : -1;
        n_ij[1] = n_ij[2] = 0;
    }
}

static void wall_pass(double lo, double hi, double e, double v_rest, double v0, double *x, double *v)
{
    if (lo > hi) {
        *x = 0.5 * (lo + hi);
        return;
    }
    if (*x <= lo) {
        *x = lo;
        double v_t = target(v0, e, v_rest);
        if (*v < v_t) *v = v_t;
    } else if (*x >= hi) {
        *x = hi;
        double v_t = -target(-v0, e, v_rest);
        if (*v > v_t) *v = v_t;
    }
}

static void wall_reflect(double lo, double hi, double e, double v_rest, double *x, double *v)
{
    if (lo > hi) {
        *x = 0.5 * (lo + hi);
        return;
    }
    if (*x < lo) {
        if (*v < -v_rest) {
            *x = fmin(lo + e * (lo - *x), hi);
            *v = -e * *v;
        } else {
            *x = lo;
            *v = fmax(*v, 0);
        }
    } else if (*x > hi) {
        if (*v > v_rest) {
            *x = fmax(hi - e * (*x - hi), lo);
            *v = -e * *v;
        } else {
            *x = hi;
            *v = fmin(*v, 0);
        }
    }
}

static int touch(const double *a, const double *b, double r_sum)
{
    double dx[3] = { a[0] - b[0], a[1] - b[1], a[2] - b[2] };
    return dot3(dx, dx) < r_sum * r_sum;
}

void ref_contact_step(const ref_contact_params *p, size_t n, const double *pos, const double *vel, const double *mass,
                      const double *radius, const uint32_t *id, const double *lam_in, double *lam_out, double *pos_next,
                      double *vel_next)
{
    const double e = p->restitution, cand2 = p->candidate_radius * p->candidate_radius;
    size_t m = n ? n : 1;
    double *x = malloc(4 * m * sizeof *x), *v = malloc(4 * m * sizeof *v);
    double *xo = malloc(4 * m * sizeof *xo), *vo = malloc(4 * m * sizeof *vo);
    double *lam = calloc(m * m, sizeof *lam); /* sorted-index pairs (i, j) */
    unsigned *deg = calloc(m, sizeof *deg);
    if (!x || !v || !xo || !vo || !lam || !deg) abort();

    /* contacts at the start and the impulses they carried (slotted pairs only) */
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
            if (j != i && touch(&pos[4 * i], &pos[4 * j], radius[i] + radius[j])) deg[i]++;
    memcpy(x, pos, 4 * n * sizeof *x);
    memcpy(v, vel, 4 * n * sizeof *v);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            if (j == i || !touch(&pos[4 * i], &pos[4 * j], radius[i] + radius[j])) continue;
            if (deg[i] > p->slots || deg[j] > p->slots || !lam_in) continue;
            double l = lam_in[(size_t)id[i] * n + id[j]];
            lam[i * n + j] = l;
            double dx[3], n_ij[3], dist;
            for (int a = 0; a < 3; ++a) dx[a] = pos[4 * i + a] - pos[4 * j + a];
            normal(dx, i, j, n_ij, &dist);
            for (int a = 0; a < 3; ++a) v[4 * i + a] += l / mass[i] * n_ij[a];
        }

    for (int it = 0; it < p->iterations; ++it) {
        for (size_t i = 0; i < n; ++i) {
            double dx_sum[3] = { 0, 0, 0 }, dv_sum[3] = { 0, 0, 0 };
            for (size_t j = 0; j < n; ++j) {
                if (j == i) continue;
                double d0[3], dx[3], n_ij[3], dist;
                for (int a = 0; a < 3; ++a) {
                    d0[a] = pos[4 * i + a] - pos[4 * j + a];
                    dx[a] = x[4 * i + a] - x[4 * j + a]; /* dx = x_i - x_j */
                }
                if (dot3(d0, d0) >= cand2) continue;
                double r_sum = radius[i] + radius[j];
                int listed = touch(&pos[4 * i], &pos[4 * j], r_sum);
                int overlap = dot3(dx, dx) < r_sum * r_sum;
                if (!listed && !overlap) continue;
                normal(dx, i, j, n_ij, &dist);
                if (overlap) {
                    double w_x = omega(p->omega_x, deg[i], deg[j]) * mass[j] / (mass[i] + mass[j]);
                    for (int a = 0; a < 3; ++a) dx_sum[a] += (r_sum - dist) * w_x * n_ij[a];
                }
                if (listed) {
                    double w_v = omega(p->omega_v, deg[i], deg[j]), dv[3], dv0[3];
                    for (int a = 0; a < 3; ++a) {
                        dv[a] = v[4 * i + a] - v[4 * j + a];
                        dv0[a] = vel[4 * i + a] - vel[4 * j + a];
                    }
                    double v_n = dot3(dv, n_ij), v_t = target(dot3(dv0, n_ij), e, p->v_rest);
                    if (deg[i] <= p->slots && deg[j] <= p->slots) {
                        double m_ij = mass[i] * mass[j] / (mass[i] + mass[j]);
                        double l = lam[i * n + j], l_new = fmax(0, l + w_v * m_ij * (v_t - v_n));
                        lam[i * n + j] = l_new; /* read back only by i: Jacobi-safe */
                        for (int a = 0; a < 3; ++a) dv_sum[a] += (l_new - l) / mass[i] * n_ij[a];
                    } else if (v_n < v_t) {
                        for (int a = 0; a < 3; ++a)
                            dv_sum[a] += (v_t - v_n) * w_v * mass[j] / (mass[i] + mass[j]) * n_ij[a];
                    }
                }
            }
            for (int a = 0; a < 3; ++a) {
                xo[4 * i + a] = x[4 * i + a] + dx_sum[a];
                vo[4 * i + a] = v[4 * i + a] + dv_sum[a];
            }
            xo[4 * i + 3] = vo[4 * i + 3] = 0;
            for (int a = 0; a < p->dims; ++a)
                wall_pass(p->tank_min[a] + radius[i], p->tank_max[a] - radius[i], e, p->v_rest, vel[4 * i + a],
                          &xo[4 * i + a], &vo[4 * i + a]);
        }
        double *t = x;
        x = xo;
        xo = t;
        t = v;
        v = vo;
        vo = t;
    }

    for (size_t i = 0; i < n; ++i) {
        for (int a = 0; a < 3; ++a) {
            double va = v[4 * i + a] + p->gravity[a] * p->dt;
            vel_next[4 * i + a] = va;
            pos_next[4 * i + a] = x[4 * i + a] + va * p->dt;
        }
        pos_next[4 * i + 3] = vel_next[4 * i + 3] = 0;
        for (int a = 0; a < p->dims; ++a)
            wall_reflect(p->tank_min[a] + radius[i], p->tank_max[a] - radius[i], e, p->v_rest, &pos_next[4 * i + a],
                         &vel_next[4 * i + a]);
    }
    if (lam_out) {
        memset(lam_out, 0, n * n * sizeof *lam_out);
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < n; ++j) lam_out[(size_t)id[i] * n + id[j]] = lam[i * n + j];
    }
    free(x);
    free(v);
    free(xo);
    free(vo);
    free(lam);
    free(deg);
}

long ref_contact_pairs(size_t n, const double *pos, const double *radius, size_t max_pairs, size_t *pairs)
{
    long count = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
            if (!touch(&pos[4 * i], &pos[4 * j], radius[i] + radius[j])) continue;
            if (pairs && (size_t)count < max_pairs) {
                pairs[2 * count] = i;
                pairs[2 * count + 1] = j;
            }
            ++count;
        }
    return count;
}

double ref_contact_max_overlap(size_t n, const double *pos, const double *radius)
{
    double worst = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
            double dx[3];
            for (int a = 0; a < 3; ++a) dx[a] = pos[4 * i + a] - pos[4 * j + a];
            double delta = radius[i] + radius[j] - sqrt(dot3(dx, dx));
            if (delta > worst) worst = delta;
        }
    return worst;
}
