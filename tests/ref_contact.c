/* ref_contact: plain-C double-precision reference of one contact step (brute-force pairs), the
 * same equations as kernels/contacts.cl in the same order (docs/contacts.md). */
#include "ref_contact.h"

#include "../kernels/contact_shared.h" /* CONTACT_NEAR */

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct vec {
    double x[3];
} vec;

static vec v3(double a, double b, double c) { return (vec){ { a, b, c } }; }
static vec vadd(vec a, vec b) { return v3(a.x[0] + b.x[0], a.x[1] + b.x[1], a.x[2] + b.x[2]); }
static vec vsub(vec a, vec b) { return v3(a.x[0] - b.x[0], a.x[1] - b.x[1], a.x[2] - b.x[2]); }
static vec vmul(double s, vec a) { return v3(s * a.x[0], s * a.x[1], s * a.x[2]); }
static double vdot(vec a, vec b) { return a.x[0] * b.x[0] + a.x[1] * b.x[1] + a.x[2] * b.x[2]; }
static vec vcross(vec a, vec b)
{
    return v3(a.x[1] * b.x[2] - a.x[2] * b.x[1], a.x[2] * b.x[0] - a.x[0] * b.x[2], a.x[0] * b.x[1] - a.x[1] * b.x[0]);
}
static vec load4(const double *a, size_t i) { return v3(a[4 * i], a[4 * i + 1], a[4 * i + 2]); }

typedef struct geo {
    vec n, t1, t2;
    double s, a_a, a_b, u0_n;
    double gap; /* a near pair or wall (apart at the start): its gap; touching: -1 */
} geo;

static void basis(vec n, int dims, vec *t1, vec *t2)
{
    if (dims != 3) {
        *t1 = v3(-n.x[1], n.x[0], 0);
        *t2 = v3(0, 0, 0);
        return;
    }
    vec t = vcross(v3(1 / sqrt(14.0), 2 / sqrt(14.0), 3 / sqrt(14.0)), n);
    double l2 = vdot(t, t);
    if (l2 < 1e-6) {
        t = vcross(v3(1, 0, 0), n);
        l2 = vdot(t, t);
    }
    *t1 = vmul(1 / sqrt(l2), t);
    *t2 = vcross(n, *t1);
}

static geo pair_geo(const ref_contact_params *p, vec x_a, vec x_b, vec v_a, vec v_b, double r_a, double r_b)
{
    geo g;
    const double rs = r_a + r_b;
    const vec dx = vsub(x_a, x_b), dv = vsub(v_a, v_b);
    const double d0 = sqrt(vdot(dx, dx)), c = (d0 - rs) * (d0 + rs), aa = vdot(dv, dv), b = vdot(dx, dv);
    double s = p->dt;
    g.gap = -1;
    vec d = vsub(dx, vmul(p->dt, dv)); /* the separation at the drift's start */
    double dist = sqrt(vdot(d, d));
    if (dist > 0 && vdot(dv, d) >= -p->v_rest * dist) { /* slow: as of the drift's start, s = dt */
        if (vdot(dx, dx) >= rs * rs) g.gap = fmax(dist - rs, 0);
    } else {
        if (vdot(dx, dx) >= rs * rs) { /* a near pair approaching fast: apart at the start */
            s = 0;
            g.gap = fmax(d0 - rs, 0);
        } else if (aa > 0 && c < 0) {
            const double q = sqrt(b * b - aa * c), root = b > 0 ? (b + q) / aa : -c / (q - b);
            s = fmin(root, p->dt);
        } else if (c >= 0) {
            s = 0; /* touching just now */
        }
        d = vsub(dx, vmul(s, dv));
        dist = sqrt(vdot(d, d));
    }
    if (!(dist > 0)) {
        d = dx;
        dist = d0;
    }
    if (dist > 0) {
        g.n = vmul(1 / dist, d);
        g.a_a = r_a * dist / rs;
        g.a_b = r_b * dist / rs;
    } else {
        g.n = v3(1, 0, 0);
        g.a_a = r_a;
        g.a_b = r_b;
    }
    g.s = s;
    g.u0_n = vdot(dv, g.n);
    basis(g.n, p->dims, &g.t1, &g.t2);
    return g;
}

static double wall_gap(const ref_contact_params *p, vec x, int face)
{
    const int a = face / 2;
    return face % 2 ? p->tank_max[a] - x.x[a] : x.x[a] - p->tank_min[a];
}

static geo wall_geo(const ref_contact_params *p, vec x, vec v, double r, int face)
{
    geo g;
    const int a = face / 2;
    const double h0 = wall_gap(p, x, face);
    g.n = v3(0, 0, 0);
    g.n.x[a] = face % 2 ? -1 : 1;
    g.u0_n = vdot(v, g.n);
    g.s = p->dt;
    if (!(g.u0_n < -p->v_rest)) { /* slow: as of the drift's start */
        g.gap = h0 < r ? -1 : fmax(h0 - g.u0_n * p->dt - r, 0);
    } else {
        g.gap = h0 < r ? -1 : h0 - r;
        g.s = h0 < r ? fmin((r - h0) / -g.u0_n, p->dt) : 0;
    }
    g.a_a = r;
    g.a_b = 0;
    basis(g.n, p->dims, &g.t1, &g.t2);
    return g;
}

static double relax(double w, unsigned d_a, unsigned d_b)
{
    unsigned d = d_a > d_b ? d_a : d_b;
    return fmin(1.0, w / (d > 1 ? d : 1));
}

/* kernels/contacts.cl, contact_target: a near pair keeps its gap unless it approaches faster
 * than v_rest (then free) */
static double target(const geo *g, double e, const ref_contact_params *p)
{
    if (g->gap >= 0) return g->u0_n < -p->v_rest ? -INFINITY : -g->gap / p->dt;
    return g->u0_n < -p->v_rest ? -e * g->u0_n : 0.0;
}

static int touch(vec a, vec b, double r_sum)
{
    vec d = vsub(a, b);
    return vdot(d, d) < r_sum * r_sum;
}
/* a listed pair counts in the relaxation: touching, or near at a normal speed of at most v_rest */
static int counts(vec a, vec b, vec va, vec vb, double r_sum, double v_rest)
{
    const vec dx = vsub(a, b);
    const double d2 = vdot(dx, dx);
    return d2 < r_sum * r_sum || fabs(vdot(vsub(va, vb), vmul(1 / sqrt(d2), dx))) <= v_rest;
}
/* a listed wall is touching or slow: its impulse is carried (the tank at rest: u = v . n) */
static int wall_slow(const ref_contact_params *p, vec x, vec v, double r, int f)
{
    return wall_gap(p, x, f) < r || fabs((f % 2 ? -1 : 1) * v.x[f / 2]) <= p->v_rest;
}
/* listed: overlapping, or near (CONTACT_NEAR) */
static int listed(vec a, vec b, double r_sum) { return touch(a, b, r_sum * (1 + CONTACT_NEAR)); }
static int wall_listed(double gap, double r) { return gap < r * (1 + 2 * CONTACT_NEAR); }

static unsigned group_of(const ref_contact_params *p, uint32_t id)
{
    if (!p->material) return 0;
    int g = p->n_groups - 1;
    while (g > 0 && id < p->group_start[g]) --g;
    return (unsigned)g;
}

/* (e, mu) of groups a, b (b = n_groups: a wall) */
static void material(const ref_contact_params *p, unsigned a, unsigned b, double *e, double *mu)
{
    const int wall = p->material ? (int)b >= p->n_groups : b != 0;
    if (!p->material) {
        *e = wall ? p->wall_restitution : p->restitution;
        *mu = wall ? p->wall_friction : p->friction;
        return;
    }
    const size_t w = (size_t)p->n_groups + 1;
    *e = p->material[2 * (a * w + b)];
    *mu = p->material[2 * (a * w + b) + 1];
}

/* The tangential impulse as a slot keeps it (kernels/contacts.cl, contact_slot_lt_word): in 3D
 * two 16-bit fractions of mu lambda_n, rounded to nearest (even); in 2D as it is. */
static void quantize(int dims, double mu, double ln, double *lt1, double *lt2)
{
    if (dims != 3) return;
    const double lim = mu * ln;
    if (!(lim > 0)) {
        *lt1 = *lt2 = 0;
        return;
    }
    const double a = fmin(fmax(nearbyint(*lt1 / lim * 32767.0), -32768), 32767);
    const double b = fmin(fmax(nearbyint(*lt2 / lim * 32767.0), -32768), 32767);
    *lt1 = a * (lim / 32767.0);
    *lt2 = b * (lim / 32767.0);
}

/* The contact update of kernels/contacts.cl (contact_update / contact_update_free). */
static vec update(const geo *g, vec u, double tgt, double m_n, double m_t, double mu, double w, double *lam, int state,
                  int dims)
{
    const double u_n = vdot(u, g->n), ut1 = vdot(u, g->t1), ut2 = vdot(u, g->t2);
    double l0[3] = { 0, 0, 0 };
    if (state) memcpy(l0, lam, sizeof l0);
    double ln = state ? fmax(0, l0[0] + w * m_n * (tgt - u_n)) : fmax(0, w * m_n * (tgt - u_n));
    double lt1 = l0[1] - w * m_t * ut1, lt2 = l0[2] - w * m_t * ut2;
    const double lim = mu * ln, l2 = lt1 * lt1 + lt2 * lt2;
    if (l2 > lim * lim) {
        lt1 *= lim / sqrt(l2);
        lt2 *= lim / sqrt(l2);
    }
    if (state) quantize(dims, mu, ln, &lt1, &lt2);
    const vec dP = vadd(vadd(vmul(ln - l0[0], g->n), vmul(lt1 - l0[1], g->t1)), vmul(lt2 - l0[2], g->t2));
    if (state) {
        lam[0] = ln;
        lam[1] = lt1;
        lam[2] = lt2;
    }
    return dP;
}

static vec impulse(const geo *g, const double *lam)
{
    return vadd(vadd(vmul(lam[0], g->n), vmul(lam[1], g->t1)), vmul(lam[2], g->t2));
}

/* One contact of sphere i: a wall face (j < 0: face -1 - j) or sphere j (sorted index). */
typedef struct rc {
    int j;
    int state; /* solved with an accumulated impulse */
    double lam[3];
} rc;

void ref_contact_step(const ref_contact_params *p, size_t n, const double *pos, const double *vel, const double *omega,
                      const double *mass, const double *radius, const uint32_t *id, const double *lam_in,
                      double *lam_out, double *pos_next, double *vel_next, double *omega_next)
{
    const size_t m = n ? n : 1, S = p->slots;
    const double k = p->inertia;
    /* deg: listed contacts (touching or near); tch: those the relaxation counts (touching, or near
     * at a normal speed of at most v_rest; tank faces only touching); tw: the tank faces touched */
    unsigned *deg = calloc(m, sizeof *deg), *tch = calloc(m, sizeof *tch), *tw = calloc(m, sizeof *tw),
             *grp = calloc(m, sizeof *grp);
    size_t *first = calloc(m + 1, sizeof *first);
    vec *v = calloc(m, sizeof *v), *w = calloc(m, sizeof *w), *vo = calloc(m, sizeof *vo), *wo = calloc(m, sizeof *wo);
    vec *x = calloc(m, sizeof *x), *xo = calloc(m, sizeof *xo);
    if (!deg || !tch || !tw || !grp || !first || !v || !w || !vo || !wo || !x || !xo) abort();
    /* contacts at the start: walls, then spheres */
    for (size_t i = 0; i < n; ++i) {
        const vec xi = load4(pos, i);
        for (int f = 0; f < 2 * p->dims; ++f) {
            deg[i] += wall_listed(wall_gap(p, xi, f), radius[i]);
            tw[i] += wall_gap(p, xi, f) < radius[i];
        }
        tch[i] = tw[i];
        for (size_t j = 0; j < n; ++j) {
            deg[i] += j != i && listed(xi, load4(pos, j), radius[i] + radius[j]);
            tch[i] += j != i && listed(xi, load4(pos, j), radius[i] + radius[j]) &&
                      counts(xi, load4(pos, j), load4(vel, i), load4(vel, j), radius[i] + radius[j], p->v_rest);
        }
        first[i + 1] = first[i] + deg[i];
        grp[i] = group_of(p, id[i]);
    }
    rc *cs = calloc(first[n] ? first[n] : 1, sizeof *cs);
    if (!cs) abort();
    for (size_t i = 0; i < n; ++i) {
        const vec xi = load4(pos, i);
        size_t c = first[i];
        for (int f = 0; f < 2 * p->dims; ++f)
            if (wall_listed(wall_gap(p, xi, f), radius[i])) {
                cs[c] = (rc){ -1 - f, 1, { 0, 0, 0 } };
                if (lam_in && wall_slow(p, xi, load4(vel, i), radius[i], f))
                    memcpy(cs[c].lam, &lam_in[3 * REF_LAM(n, id[i], n + (size_t)f)], 24);
                ++c;
            }
        for (size_t j = 0; j < n; ++j)
            if (j != i && listed(xi, load4(pos, j), radius[i] + radius[j])) {
                cs[c] = (rc){ (int)j, deg[i] <= S && deg[j] <= S, { 0, 0, 0 } };
                if (lam_in && cs[c].state &&
                    counts(xi, load4(pos, j), load4(vel, i), load4(vel, j), radius[i] + radius[j], p->v_rest))
                    memcpy(cs[c].lam, &lam_in[3 * REF_LAM(n, id[i], id[j])], 24);
                ++c;
            }
    }
    /* warm start */
    for (size_t i = 0; i < n; ++i) {
        const vec xi = load4(pos, i), v0i = load4(vel, i);
        const double I_i = k * mass[i] * radius[i] * radius[i];
        v[i] = v0i;
        w[i] = v3(omega[3 * i], omega[3 * i + 1], omega[3 * i + 2]);
        for (size_t c = first[i]; c < first[i + 1]; ++c) {
            if (!cs[c].state) continue;
            if (cs[c].j < 0) {
                const geo g = wall_geo(p, xi, v0i, radius[i], -1 - cs[c].j);
                const vec P = impulse(&g, cs[c].lam);
                v[i] = vadd(v[i], vmul(1 / mass[i], P));
                w[i] = vsub(w[i], vmul(g.a_a / I_i, vcross(g.n, P)));
                continue;
            }
            const size_t j = (size_t)cs[c].j;
            const int a = id[i] < id[j];
            const geo g = a ? pair_geo(p, xi, load4(pos, j), v0i, load4(vel, j), radius[i], radius[j])
                            : pair_geo(p, load4(pos, j), xi, load4(vel, j), v0i, radius[j], radius[i]);
            const vec P = impulse(&g, cs[c].lam);
            v[i] = vadd(v[i], vmul((a ? 1.0 : -1.0) / mass[i], P));
            w[i] = vsub(w[i], vmul((a ? g.a_a : g.a_b) / I_i, vcross(g.n, P)));
        }
    }
    /* impulse passes */
    for (int it = 0; it < p->iterations; ++it) {
        for (size_t i = 0; i < n; ++i) {
            const vec xi = load4(pos, i), v0i = load4(vel, i);
            const double m_i = mass[i], r_i = radius[i], I_i = k * m_i * r_i * r_i;
            vec dv = v3(0, 0, 0), dw = v3(0, 0, 0);
            for (size_t c = first[i]; c < first[i + 1]; ++c) {
                double e, mu;
                if (cs[c].j < 0) {
                    const geo g = wall_geo(p, xi, v0i, r_i, -1 - cs[c].j);
                    material(p, grp[i], (unsigned)p->n_groups, &e, &mu);
                    const vec u = vsub(v[i], vcross(vmul(g.a_a, w[i]), g.n));
                    const double m_t = 1 / (1 / m_i + g.a_a * g.a_a / (k * m_i * r_i * r_i));
                    const vec dP = update(&g, u, target(&g, e, p), m_i, m_t, mu,
                                          relax(p->omega_v, tch[i] - tw[i] + 1, 1), cs[c].lam, 1, p->dims);
                    dv = vadd(dv, vmul(1 / m_i, dP));
                    dw = vsub(dw, vmul(g.a_a / I_i, vcross(g.n, dP)));
                    continue;
                }
                const size_t j = (size_t)cs[c].j, ia = id[i] < id[j] ? i : j, ib = ia == i ? j : i;
                const geo g =
                    pair_geo(p, load4(pos, ia), load4(pos, ib), load4(vel, ia), load4(vel, ib), radius[ia], radius[ib]);
                const vec u = vsub(vsub(v[ia], v[ib]), vcross(vadd(vmul(g.a_a, w[ia]), vmul(g.a_b, w[ib])), g.n));
                material(p, grp[ia], grp[ib], &e, &mu);
                const double m_n = mass[ia] * mass[ib] / (mass[ia] + mass[ib]);
                const double m_t =
                    1 / (1 / mass[ia] + 1 / mass[ib] + g.a_a * g.a_a / (k * mass[ia] * radius[ia] * radius[ia]) +
                         g.a_b * g.a_b / (k * mass[ib] * radius[ib] * radius[ib]));
                const vec dP =
                    update(&g, u, target(&g, e, p), m_n, m_t, mu, relax(p->omega_v, tch[i] - tw[i], tch[j] - tw[j]),
                           cs[c].lam, cs[c].state, p->dims);
                dv = vadd(dv, vmul((ia == i ? 1.0 : -1.0) / m_i, dP));
                dw = vsub(dw, vmul((ia == i ? g.a_a : g.a_b) / I_i, vcross(g.n, dP)));
            }
            vo[i] = vadd(v[i], dv);
            wo[i] = vadd(w[i], dw);
        }
        vec *t = v;
        v = vo;
        vo = t;
        t = w;
        w = wo;
        wo = t;
    }
    /* positions along the corrected paths */
    for (size_t i = 0; i < n; ++i) {
        const vec xi = load4(pos, i), v0i = load4(vel, i);
        vec dx = v3(0, 0, 0);
        for (size_t c = first[i]; c < first[i + 1]; ++c) {
            if (!cs[c].state) continue;
            if (cs[c].j < 0) {
                const geo g = wall_geo(p, xi, v0i, radius[i], -1 - cs[c].j);
                dx = vadd(dx, vmul(g.s / mass[i], impulse(&g, cs[c].lam)));
                continue;
            }
            const size_t j = (size_t)cs[c].j;
            const int a = id[i] < id[j];
            const geo g = a ? pair_geo(p, xi, load4(pos, j), v0i, load4(vel, j), radius[i], radius[j])
                            : pair_geo(p, load4(pos, j), xi, load4(vel, j), v0i, radius[j], radius[i]);
            dx = vadd(dx, vmul((a ? g.s : -g.s) / mass[i], impulse(&g, cs[c].lam)));
        }
        x[i] = vadd(xi, dx);
    }
    /* overlap removal */
    for (int it = 0; it < p->iterations; ++it) {
        for (size_t i = 0; i < n; ++i) {
            vec d = v3(0, 0, 0);
            for (size_t c = first[i]; c < first[i + 1]; ++c) {
                if (cs[c].j < 0) continue;
                const size_t j = (size_t)cs[c].j;
                const double rs = radius[i] + radius[j];
                const vec dx = vsub(x[i], x[j]);
                const double r2 = vdot(dx, dx);
                if (r2 >= rs * rs) continue;
                const double dist = sqrt(r2);
                const vec nij = dist > 0 ? vmul(1 / dist, dx) : v3(id[i] < id[j] ? 1 : -1, 0, 0);
                const double wx = relax(p->omega_x, tch[i], tch[j]) * mass[j] / (mass[i] + mass[j]);
                d = vadd(d, vmul((rs - dist) * wx, nij));
            }
            xo[i] = vadd(x[i], d);
            for (int a = 0; a < p->dims; ++a) {
                const double lo = p->tank_min[a] + radius[i], hi = p->tank_max[a] - radius[i];
                xo[i].x[a] = lo > hi ? 0.5 * (lo + hi) : fmin(fmax(xo[i].x[a], lo), hi);
            }
        }
        vec *t = x;
        x = xo;
        xo = t;
    }
    /* kick and drift */
    for (size_t i = 0; i < n; ++i) {
        const vec vn = vadd(v[i], vmul(p->dt, v3(p->gravity[0], p->gravity[1], p->gravity[2])));
        const vec xn = vadd(x[i], vmul(p->dt, vn));
        for (int a = 0; a < 3; ++a) {
            vel_next[4 * i + a] = vn.x[a];
            pos_next[4 * i + a] = xn.x[a];
            omega_next[3 * i + a] = w[i].x[a];
        }
        vel_next[4 * i + 3] = pos_next[4 * i + 3] = 0;
    }
    if (lam_out) {
        memset(lam_out, 0, 3 * n * (n + 6) * sizeof *lam_out);
        for (size_t i = 0; i < n; ++i)
            for (size_t c = first[i]; c < first[i + 1]; ++c) {
                if (!cs[c].state) continue;
                const size_t q = cs[c].j < 0 ? n + (size_t)(-1 - cs[c].j) : id[cs[c].j];
                memcpy(&lam_out[3 * REF_LAM(n, id[i], q)], cs[c].lam, 24);
            }
    }
    free(deg);
    free(tch);
    free(tw);
    free(grp);
    free(first);
    free(cs);
    free(v);
    free(w);
    free(vo);
    free(wo);
    free(x);
    free(xo);
}

long ref_contact_pairs(size_t n, const double *pos, const double *radius, size_t max_pairs, size_t *pairs)
{
    long count = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
            if (!touch(load4(pos, i), load4(pos, j), radius[i] + radius[j])) continue;
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
            const vec d = vsub(load4(pos, i), load4(pos, j));
            const double delta = radius[i] + radius[j] - sqrt(vdot(d, d));
            if (delta > worst) worst = delta;
        }
    return worst;
}

void ref_binary_collision(const double v1[3], const double v2[3], double m1, double m2, const double n[3], double e,
                          double v1o[3], double v2o[3])
{
    double u = 0;
    for (int a = 0; a < 3; ++a) u += (v1[a] - v2[a]) * n[a];
    const double J = u < 0 ? -(1 + e) * u * m1 * m2 / (m1 + m2) : 0; /* impulse on 1 along n */
    for (int a = 0; a < 3; ++a) {
        v1o[a] = v1[a] + J / m1 * n[a];
        v2o[a] = v2[a] - J / m2 * n[a];
    }
}

void ref_wall_impact(const double v[3], const double w[3], double r, double k, const double n[3], double e, double mu,
                     double vo[3], double wo[3])
{
    const vec N = v3(n[0], n[1], n[2]), V = v3(v[0], v[1], v[2]), W = v3(w[0], w[1], w[2]);
    const double vn = vdot(V, N);
    const double Jn = vn < 0 ? -(1 + e) * vn : 0; /* per unit mass */
    /* contact point velocity: v + w x (-r n) */
    const vec u = vsub(V, vmul(r, vcross(W, N)));
    const vec ut = vsub(u, vmul(vdot(u, N), N));
    const double ut_len = sqrt(vdot(ut, ut));
    /* sticking takes J_t = -ut / (1 + 1/k) per unit mass (1/m + r^2/I = (1 + 1/k)/m) */
    const double stick = ut_len / (1 + 1 / k);
    const double jt = fmin(stick, mu * Jn);
    const vec Jt = ut_len > 0 ? vmul(-jt / ut_len, ut) : v3(0, 0, 0);
    const vec P = vadd(vmul(Jn, N), Jt); /* per unit mass */
    /* w' = w + (-r n) x P m / I = w - (r / (k r^2)) n x P */
    const vec dW = vmul(-1 / (k * r), vcross(N, P));
    for (int a = 0; a < 3; ++a) {
        vo[a] = v[a] + P.x[a];
        wo[a] = w[a] + dW.x[a];
    }
}
