/* mesh: STL and OBJ readers, closedness and orientation checks, the grid of the signed distance
 * (mesh.h). */
#include "mesh.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mesh_free(mesh *m)
{
    free(m->vert);
    free(m->tri);
    memset(m, 0, sizeof *m);
}

/* Growable arrays of the readers. */
static int push_vert(mesh *m, size_t *cap, const double v[3])
{
    if (m->n_vert == *cap) {
        size_t c = *cap ? 2 * *cap : 1024;
        double *p = realloc(m->vert, c * 3 * sizeof *p);
        if (!p) return -1;
        m->vert = p;
        *cap = c;
    }
    memcpy(m->vert + 3 * m->n_vert++, v, 3 * sizeof *v);
    return 0;
}

static int push_tri(mesh *m, size_t *cap, uint32_t a, uint32_t b, uint32_t c)
{
    if (m->n_tri == *cap) {
        size_t nc = *cap ? 2 * *cap : 1024;
        uint32_t *p = realloc(m->tri, nc * 3 * sizeof *p);
        if (!p) return -1;
        m->tri = p;
        *cap = nc;
    }
    uint32_t *t = m->tri + 3 * m->n_tri++;
    t[0] = a;
    t[1] = b;
    t[2] = c;
    return 0;
}

/* Merge vertices with equal coordinates (STL repeats them per triangle). */
static const double *g_sort_vert;
static int cmp_vert(const void *pa, const void *pb)
{
    const double *a = g_sort_vert + 3 * *(const uint32_t *)pa, *b = g_sort_vert + 3 * *(const uint32_t *)pb;
    for (int k = 0; k < 3; ++k)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return 0;
}

static int weld(mesh *m)
{
    uint32_t *order = malloc((m->n_vert ? m->n_vert : 1) * sizeof *order);
    uint32_t *map = malloc((m->n_vert ? m->n_vert : 1) * sizeof *map);
    double *v = malloc((m->n_vert ? m->n_vert : 1) * 3 * sizeof *v);
    if (!order || !map || !v) {
        free(order);
        free(map);
        free(v);
        return -1;
    }
    for (size_t i = 0; i < m->n_vert; ++i) order[i] = (uint32_t)i;
    g_sort_vert = m->vert;
    qsort(order, m->n_vert, sizeof *order, cmp_vert);
    size_t n = 0;
    for (size_t i = 0; i < m->n_vert; ++i) {
        if (i == 0 || cmp_vert(&order[i - 1], &order[i]) != 0) memcpy(v + 3 * n++, m->vert + 3 * order[i], 24);
        map[order[i]] = (uint32_t)(n - 1);
    }
    for (size_t t = 0; t < 3 * m->n_tri; ++t) m->tri[t] = map[m->tri[t]];
    free(m->vert);
    m->vert = v;
    m->n_vert = n;
    free(order);
    free(map);
    return 0;
}

uint64_t mesh_fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static float get_f32(const unsigned char *p)
{
    float f;
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    memcpy(&f, &u, 4);
    return f;
}

#define NOMEM_(e) SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of memory reading a mesh")

static sphsim_status read_stl_binary(mesh *m, const unsigned char *buf, size_t len, const char *what, const char *path,
                                     sphsim_error *e)
{
    const uint32_t n = (uint32_t)buf[80] | (uint32_t)buf[81] << 8 | (uint32_t)buf[82] << 16 | (uint32_t)buf[83] << 24;
    if ((size_t)n * 50 + 84 != len)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "%s: '%s' is not a valid STL file: a binary STL of %u triangles has %zu bytes, this one %zu",
                           what, path, n, (size_t)n * 50 + 84, len);
    size_t vcap = 0, tcap = 0;
    for (uint32_t t = 0; t < n; ++t) {
        const unsigned char *r = buf + 84 + 50 * (size_t)t + 12;
        for (int k = 0; k < 3; ++k) {
            const double v[3] = { get_f32(r + 12 * k), get_f32(r + 12 * k + 4), get_f32(r + 12 * k + 8) };
            if (!isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]))
                return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s': triangle %u has a coordinate that is not a number",
                                   what, path, t);
            if (push_vert(m, &vcap, v)) return NOMEM_(e);
        }
        if (push_tri(m, &tcap, 3 * t, 3 * t + 1, 3 * t + 2)) return NOMEM_(e);
    }
    return weld(m) ? NOMEM_(e) : SPHSIM_OK;
}

/* ASCII STL: the "vertex x y z" lines, three per facet. */
static sphsim_status read_stl_ascii(mesh *m, char *text, const char *what, const char *path, sphsim_error *e)
{
    size_t vcap = 0, tcap = 0, nv = 0;
    long line = 1;
    for (char *p = text; *p;) {
        char *end = strchr(p, '\n');
        if (end) *end = '\0';
        while (isspace((unsigned char)*p)) ++p;
        if (strncmp(p, "vertex", 6) == 0 && isspace((unsigned char)p[6])) {
            double v[3];
            char *q = p + 6, *r;
            for (int k = 0; k < 3; ++k) {
                v[k] = strtod(q, &r);
                if (r == q || !isfinite(v[k]))
                    return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s' line %ld: expected \"vertex x y z\", got \"%.60s\"",
                                       what, path, line, p);
                q = r;
            }
            if (push_vert(m, &vcap, v)) return NOMEM_(e);
            if (++nv % 3 == 0 && push_tri(m, &tcap, (uint32_t)nv - 3, (uint32_t)nv - 2, (uint32_t)nv - 1))
                return NOMEM_(e);
        } else if (strncmp(p, "endfacet", 8) == 0 && nv % 3 != 0) {
            return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s' line %ld: a facet without three vertices", what, path,
                               line);
        }
        if (!end) break;
        p = end + 1;
        ++line;
    }
    if (m->n_tri == 0)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s' is not a valid STL file: no triangle in it", what, path);
    return weld(m) ? NOMEM_(e) : SPHSIM_OK;
}

/* OBJ: "v x y z" and "f i j k ..." (i, i/t, i/t/n or i//n; negative: from the end); polygons
 * are split into fans. Other statements are ignored. */
static sphsim_status read_obj(mesh *m, char *text, const char *what, const char *path, sphsim_error *e)
{
    size_t vcap = 0, tcap = 0;
    long line = 1;
    for (char *p = text; *p;) {
        char *end = strchr(p, '\n');
        if (end) *end = '\0';
        while (isspace((unsigned char)*p)) ++p;
        if (p[0] == 'v' && isspace((unsigned char)p[1])) {
            double v[3];
            char *q = p + 1, *r;
            for (int k = 0; k < 3; ++k) {
                v[k] = strtod(q, &r);
                if (r == q || !isfinite(v[k]))
                    return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s' line %ld: expected \"v x y z\", got \"%.60s\"",
                                       what, path, line, p);
                q = r;
            }
            if (push_vert(m, &vcap, v)) return NOMEM_(e);
        } else if (p[0] == 'f' && isspace((unsigned char)p[1])) {
            long idx[3] = { 0, 0, 0 }, k = 0;
            char *q = p + 1;
            for (;;) {
                while (isspace((unsigned char)*q)) ++q;
                if (!*q) break;
                char *r;
                long i = strtol(q, &r, 10);
                if (r == q || i == 0 || (i > 0 && (size_t)i > m->n_vert) || (i < 0 && (size_t)(-i) > m->n_vert))
                    return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                                       "%s: '%s' line %ld: a face refers to vertex %.20s, but %zu vertices are defined "
                                       "before it",
                                       what, path, line, q, m->n_vert);
                i = i > 0 ? i - 1 : (long)m->n_vert + i;
                while (*r && !isspace((unsigned char)*r)) ++r; /* /t/n */
                q = r;
                if (k < 3) idx[k] = i;
                else {
                    idx[1] = idx[2];
                    idx[2] = i;
                }
                if (++k >= 3 && push_tri(m, &tcap, (uint32_t)idx[0], (uint32_t)idx[1], (uint32_t)idx[2]))
                    return NOMEM_(e);
            }
            if (k < 3)
                return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s' line %ld: a face with %ld vertices (at least 3)", what,
                                   path, line, k);
        }
        if (!end) break;
        p = end + 1;
        ++line;
    }
    if (m->n_tri == 0)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s' is not a valid OBJ file: no face in it", what, path);
    return SPHSIM_OK;
}

sphsim_status mesh_read(mesh *m, const char *path, const char *what, uint64_t *hash, sphsim_error *e)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f) return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: cannot open '%s': %s", what, path, strerror(errno));
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = 2 * cap + 65536 + 1;
            unsigned char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return NOMEM_(e);
            }
            buf = b;
        }
        size_t got = fread(buf + len, 1, 65536, f);
        len += got;
        if (got < 65536) break;
    }
    const int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: cannot read '%s'", what, path);
    }
    buf[len] = '\0';
    if (hash) *hash = mesh_fnv1a(buf, len);
    const size_t pl = strlen(path);
    const int obj = pl > 4 && (strcmp(path + pl - 4, ".obj") == 0 || strcmp(path + pl - 4, ".OBJ") == 0);
    sphsim_status st;
    if (obj) st = read_obj(m, (char *)buf, what, path, e);
    else {
        int ascii = len >= 5 && strncmp((const char *)buf, "solid", 5) == 0;
        if (ascii && len >= 84) { /* a binary file may start with "solid" too: its size tells */
            const uint32_t n =
                (uint32_t)buf[80] | (uint32_t)buf[81] << 8 | (uint32_t)buf[82] << 16 | (uint32_t)buf[83] << 24;
            if ((size_t)n * 50 + 84 == len) ascii = 0;
        }
        if (ascii) st = read_stl_ascii(m, (char *)buf, what, path, e);
        else if (len < 84)
            st = SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: '%s' is not a valid STL file: %zu bytes, shorter than a header",
                             what, path, len);
        else st = read_stl_binary(m, buf, len, what, path, e);
    }
    free(buf);
    if (st != SPHSIM_OK) mesh_free(m);
    return st;
}

/* ---- checks ---- */

typedef struct edge {
    uint32_t a, b; /* a < b */
    int dir;       /* +1: the triangle runs a -> b */
} edge;

static int cmp_edge(const void *pa, const void *pb)
{
    const edge *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return 0;
}

void mesh_check(const mesh *m, long *open_edges, long *flipped_edges)
{
    *open_edges = *flipped_edges = 0;
    const size_t n_e = 3 * m->n_tri;
    edge *E = malloc((n_e > 0 ? n_e : 1) * sizeof *E);
    if (!E) {
        *open_edges = -1;
        return;
    }
    for (size_t t = 0; t < m->n_tri; ++t)
        for (int k = 0; k < 3; ++k) {
            const uint32_t a = m->tri[3 * t + k], b = m->tri[3 * t + (k + 1) % 3];
            E[3 * t + k] = a < b ? (edge){ a, b, 1 } : (edge){ b, a, -1 };
        }
    const size_t n = 3 * m->n_tri;
    qsort(E, n, sizeof *E, cmp_edge);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int sum = 0;
        while (j < n && cmp_edge(&E[i], &E[j]) == 0) sum += E[j++].dir;
        if (j - i != 2) ++*open_edges;
        else if (sum != 0) ++*flipped_edges;
        i = j;
    }
    free(E);
}

double mesh_volume(const mesh *m)
{
    double v = 0;
    for (size_t t = 0; t < m->n_tri; ++t) {
        const double *a = m->vert + 3 * m->tri[3 * t], *b = m->vert + 3 * m->tri[3 * t + 1],
                     *c = m->vert + 3 * m->tri[3 * t + 2];
        v += a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
             a[2] * (b[0] * c[1] - b[1] * c[0]);
    }
    return v / 6.0;
}

/* ---- distance ---- */

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

double mesh_point_triangle(const double p[3], const double a[3], const double b[3], const double c[3])
{
    double ab[3], ac[3], ap[3], q[3];
    for (int k = 0; k < 3; ++k) {
        ab[k] = b[k] - a[k];
        ac[k] = c[k] - a[k];
        ap[k] = p[k] - a[k];
    }
    const double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    if (d1 <= 0 && d2 <= 0) return sqrt(dot3(ap, ap));
    double bp[3], cp[3];
    for (int k = 0; k < 3; ++k) {
        bp[k] = p[k] - b[k];
        cp[k] = p[k] - c[k];
    }
    const double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
    if (d3 >= 0 && d4 <= d3) return sqrt(dot3(bp, bp));
    const double vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        const double v = d1 / (d1 - d3);
        for (int k = 0; k < 3; ++k) q[k] = a[k] + v * ab[k] - p[k];
        return sqrt(dot3(q, q));
    }
    const double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    if (d6 >= 0 && d5 <= d6) return sqrt(dot3(cp, cp));
    const double vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        const double w = d2 / (d2 - d6);
        for (int k = 0; k < 3; ++k) q[k] = a[k] + w * ac[k] - p[k];
        return sqrt(dot3(q, q));
    }
    const double va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        const double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        for (int k = 0; k < 3; ++k) q[k] = b[k] + w * (c[k] - b[k]) - p[k];
        return sqrt(dot3(q, q));
    }
    const double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
    for (int k = 0; k < 3; ++k) q[k] = a[k] + ab[k] * v + ac[k] * w - p[k];
    return sqrt(dot3(q, q));
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int mesh_sdf_grid(const mesh *m, const double o[3], double h, const long n[3], double band, float *out)
{
    const size_t N = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
    double *d = malloc(N * sizeof *d);
    if (!d) return -1;
    for (size_t i = 0; i < N; ++i) d[i] = band;
    /* Unsigned distance (Bridson's construction, as in his makelevelset3): the exact distance
     * to each triangle at the nodes within a cell of its box, remembering the nearest
     * triangle; then sweeps in the 8 diagonal orders pass every node the nearest triangle of
     * its neighbours, whose exact distance it takes when smaller, out to the band. The cost is
     * a few distances per node and per triangle, not the band's volume per triangle. */
    uint32_t *near = malloc(N * sizeof *near);
    if (!near) {
        free(d);
        return -1;
    }
    for (size_t i = 0; i < N; ++i) near[i] = UINT32_MAX;
    for (size_t t = 0; t < m->n_tri; ++t) {
        const double *a = m->vert + 3 * m->tri[3 * t], *b = m->vert + 3 * m->tri[3 * t + 1],
                     *c = m->vert + 3 * m->tri[3 * t + 2];
        long lo[3], hi[3];
        for (int k = 0; k < 3; ++k) {
            const double mn = fmin(a[k], fmin(b[k], c[k])), mx = fmax(a[k], fmax(b[k], c[k]));
            lo[k] = (long)floor((mn - o[k]) / h) - 1;
            hi[k] = (long)ceil((mx - o[k]) / h) + 1;
            if (lo[k] < 0) lo[k] = 0;
            if (hi[k] > n[k] - 1) hi[k] = n[k] - 1;
        }
        for (long z = lo[2]; z <= hi[2]; ++z)
            for (long y = lo[1]; y <= hi[1]; ++y)
                for (long x = lo[0]; x <= hi[0]; ++x) {
                    const double p[3] = { o[0] + x * h, o[1] + y * h, o[2] + z * h };
                    const size_t i = (size_t)x + (size_t)n[0] * ((size_t)y + (size_t)n[1] * (size_t)z);
                    const double dist = mesh_point_triangle(p, a, b, c);
                    if (dist < d[i]) {
                        d[i] = dist;
                        near[i] = (uint32_t)t;
                    }
                }
    }
    for (int pass = 0; pass < 2; ++pass)
        for (int sw = 0; sw < 8; ++sw) {
            const long dx = sw & 1 ? -1 : 1, dy = sw & 2 ? -1 : 1, dz = sw & 4 ? -1 : 1;
            for (long zi = 0; zi < n[2]; ++zi)
                for (long yi = 0; yi < n[1]; ++yi)
                    for (long xi = 0; xi < n[0]; ++xi) {
                        const long x = dx > 0 ? xi : n[0] - 1 - xi, y = dy > 0 ? yi : n[1] - 1 - yi,
                                   z = dz > 0 ? zi : n[2] - 1 - zi;
                        const size_t i = (size_t)x + (size_t)n[0] * ((size_t)y + (size_t)n[1] * (size_t)z);
                        const long q[3][3] = { { x - dx, y, z }, { x, y - dy, z }, { x, y, z - dz } };
                        for (int k = 0; k < 3; ++k) {
                            if (q[k][0] < 0 || q[k][0] >= n[0] || q[k][1] < 0 || q[k][1] >= n[1] || q[k][2] < 0 ||
                                q[k][2] >= n[2])
                                continue;
                            const size_t j =
                                (size_t)q[k][0] + (size_t)n[0] * ((size_t)q[k][1] + (size_t)n[1] * (size_t)q[k][2]);
                            const uint32_t t = near[j];
                            if (t == UINT32_MAX || t == near[i] || d[j] >= band) continue;
                            const double p[3] = { o[0] + x * h, o[1] + y * h, o[2] + z * h };
                            const double dist =
                                mesh_point_triangle(p, m->vert + 3 * m->tri[3 * t], m->vert + 3 * m->tri[3 * t + 1],
                                                    m->vert + 3 * m->tri[3 * t + 2]);
                            if (dist < d[i]) {
                                d[i] = dist < band ? dist : band;
                                near[i] = t;
                            }
                        }
                    }
        }
    free(near);
    /* the sign: crossings of each grid line along x (shifted off the grid by a tiny irrational
     * fraction of a cell so that a line meets no edge or vertex exactly) */
    const size_t lines = (size_t)n[1] * (size_t)n[2];
    size_t *cnt = calloc(lines + 1, sizeof *cnt);
    double *xs = NULL;
    size_t total = 0;
    if (!cnt) {
        free(d);
        return -1;
    }
    const double sy = 1.1102230246251565e-7 * h * 1.41421356, sz = 1.1102230246251565e-7 * h * 1.7320508;
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            for (size_t l = 0; l < lines; ++l) cnt[l + 1] += cnt[l]; /* cnt[l]: line l's start */
            total = cnt[lines];
            xs = malloc((total ? total : 1) * sizeof *xs);
            if (!xs) break;
        }
        for (size_t t = 0; t < m->n_tri; ++t) {
            const double *a = m->vert + 3 * m->tri[3 * t], *b = m->vert + 3 * m->tri[3 * t + 1],
                         *c = m->vert + 3 * m->tri[3 * t + 2];
            const long y0 = (long)ceil((fmin(a[1], fmin(b[1], c[1])) - o[1] - sy) / h),
                       y1 = (long)floor((fmax(a[1], fmax(b[1], c[1])) - o[1] - sy) / h);
            const long z0 = (long)ceil((fmin(a[2], fmin(b[2], c[2])) - o[2] - sz) / h),
                       z1 = (long)floor((fmax(a[2], fmax(b[2], c[2])) - o[2] - sz) / h);
            for (long z = z0 < 0 ? 0 : z0; z <= z1 && z < n[2]; ++z)
                for (long y = y0 < 0 ? 0 : y0; y <= y1 && y < n[1]; ++y) {
                    const double py = o[1] + y * h + sy, pz = o[2] + z * h + sz;
                    /* barycentric coordinates of (py, pz) in the triangle's yz projection */
                    const double det = (b[1] - a[1]) * (c[2] - a[2]) - (c[1] - a[1]) * (b[2] - a[2]);
                    if (det == 0) continue;
                    const double u = ((py - a[1]) * (c[2] - a[2]) - (c[1] - a[1]) * (pz - a[2])) / det;
                    const double v = ((b[1] - a[1]) * (pz - a[2]) - (py - a[1]) * (b[2] - a[2])) / det;
                    if (u < 0 || v < 0 || u + v > 1) continue;
                    const size_t l = (size_t)y + (size_t)n[1] * (size_t)z;
                    if (pass == 0) ++cnt[l + 1];
                    else xs[cnt[l]++] = a[0] + u * (b[0] - a[0]) + v * (c[0] - a[0]);
                }
        }
    }
    if (xs) {
        /* cnt[l] is now the end of line l's crossings; its start is the end of line l - 1 */
        for (size_t l = 0; l < lines; ++l) {
            const size_t s0 = l ? cnt[l - 1] : 0, s1 = cnt[l];
            qsort(xs + s0, s1 - s0, sizeof *xs, cmp_double);
            size_t c = s0;
            for (long x = 0; x < n[0]; ++x) {
                const double px = o[0] + x * h;
                while (c < s1 && xs[c] < px) ++c;
                const int inside = (c - s0) % 2 == 1;
                const size_t i = (size_t)x + (size_t)n[0] * l;
                out[i] = (float)(inside ? -d[i] : d[i]);
            }
        }
    }
    const int rc = xs ? 0 : -1;
    free(xs);
    free(cnt);
    free(d);
    return rc;
}
