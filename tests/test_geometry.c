/* test_geometry: the scene's solid objects on the host: signed distance of every shape against
 * brute force (the distance to a dense sampling of the placed surface, the sign from an
 * independent inside test), the transform order, the boundary sampling of a scene with an
 * obstacle (layers, room for the fluid) and the messages of bad geometry. Run from the
 * repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "geometry.h"
#include "init.h"
#include "mesh.h"
#include "scene.h"

static char *dq(const char *sq)
{
    char *t = strdup(sq);
    for (char *c = t; *c; c++)
        if (*c == '\'') *c = '"';
    return t;
}

static sphsim_status load(scene *s, const char *sq, sphsim_error *e)
{
    char *json = dq(sq);
    memset(e, 0, sizeof *e);
    sphsim_status st = scene_load_string(s, json, "t.json", NULL, 0, e);
    free(json);
    return st;
}

/* ---- the placement, written out independently of geometry.c ---- */

typedef struct placed {
    double R[9], T[3], s, c[3]; /* world = T + s R (c + local) */
} placed;

static void rodrigues(const double axis[3], double deg, double R[9])
{
    const double l = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    const double k[3] = { axis[0] / l, axis[1] / l, axis[2] / l }, a = deg * M_PI / 180.0;
    /* R = I + sin a K + (1 - cos a) K^2 */
    const double K[9] = { 0, -k[2], k[1], k[2], 0, -k[0], -k[1], k[0], 0 };
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double K2 = 0;
            for (int m = 0; m < 3; ++m) K2 += K[3 * i + m] * K[3 * m + j];
            R[3 * i + j] = (i == j) + sin(a) * K[3 * i + j] + (1 - cos(a)) * K2;
        }
}

static void to_world(const placed *p, const double loc[3], double w[3])
{
    for (int i = 0; i < 3; ++i) {
        w[i] = p->T[i];
        for (int j = 0; j < 3; ++j) w[i] += p->s * p->R[3 * i + j] * (p->c[j] + loc[j]);
    }
}

static void to_local(const placed *p, const double w[3], double loc[3])
{
    for (int j = 0; j < 3; ++j) {
        loc[j] = 0;
        for (int i = 0; i < 3; ++i) loc[j] += p->R[3 * i + j] * (w[i] - p->T[i]);
        loc[j] = loc[j] / p->s - p->c[j];
    }
}

static uint64_t rng = 12345;
static double uni(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Surface samples of a shape in its own frame (box of sizes sz, sphere radius r, cylinder
 * radius r and length L along z), about `n` per unit of the sampling parameter. */
static size_t surface(unsigned shape, const double sz[3], double r, double L, int n, double *pts)
{
    size_t k = 0;
    if (shape == GEOM_BOX) {
        for (int f = 0; f < 6; ++f) {
            const int a = f / 2, b = (a + 1) % 3, c = (a + 2) % 3;
            for (int i = 0; i <= n; ++i)
                for (int j = 0; j <= n; ++j) {
                    double *q = pts + 3 * k++;
                    q[a] = (f & 1 ? 0.5 : -0.5) * sz[a];
                    q[b] = (i / (double)n - 0.5) * sz[b];
                    q[c] = (j / (double)n - 0.5) * sz[c];
                }
        }
    } else if (shape == GEOM_SPHERE) {
        const int m = 4 * n * n;
        for (int i = 0; i < m; ++i) { /* Fibonacci sphere */
            const double z = 1 - 2 * (i + 0.5) / m, rr = sqrt(1 - z * z), ph = i * M_PI * (3 - sqrt(5.0));
            double *q = pts + 3 * k++;
            q[0] = r * rr * cos(ph);
            q[1] = r * rr * sin(ph);
            q[2] = r * z;
        }
    } else {
        for (int i = 0; i < 4 * n; ++i) {
            const double ph = 2 * M_PI * i / (4 * n);
            for (int j = 0; j <= n; ++j) { /* side */
                double *q = pts + 3 * k++;
                q[0] = r * cos(ph);
                q[1] = r * sin(ph);
                q[2] = (j / (double)n - 0.5) * L;
            }
            for (int j = 0; j <= n; ++j) /* caps */
                for (int side = 0; side < 2; ++side) {
                    double *q = pts + 3 * k++;
                    q[0] = r * j / (double)n * cos(ph);
                    q[1] = r * j / (double)n * sin(ph);
                    q[2] = (side ? 0.5 : -0.5) * L;
                }
        }
    }
    return k;
}

static int inside(unsigned shape, const double y[3], const double sz[3], double r, double L)
{
    if (shape == GEOM_BOX) return fabs(y[0]) < sz[0] / 2 && fabs(y[1]) < sz[1] / 2 && fabs(y[2]) < sz[2] / 2;
    if (shape == GEOM_SPHERE) return y[0] * y[0] + y[1] * y[1] + y[2] * y[2] < r * r;
    return y[0] * y[0] + y[1] * y[1] < r * r && fabs(y[2]) < L / 2;
}

/* geom_sdf of a placed shape against the brute-force distance at random points around it. */
static void sdf_case(const char *shape_name, unsigned shape, const double sz[3], double r, double L)
{
    scene_object o;
    memset(&o, 0, sizeof o);
    o.shape = shape;
    memcpy(o.size, sz, sizeof o.size);
    o.radius = r;
    o.length = L;
    const double cyl_axis[3] = { 0, 0, 1 };
    memcpy(o.axis, cyl_axis, sizeof o.axis);
    const double c[3] = { 0.05, -0.02, 0.03 }, T[3] = { 1.0, 2.0, 3.0 }, rax[3] = { 1, 1, 0.3 };
    memcpy(o.center, c, sizeof c);
    memcpy(o.translate, T, sizeof T);
    memcpy(o.rot_axis, rax, sizeof rax);
    o.degrees = 37.0;
    o.scale = 1.5;
    geom_place(&o, 3);
    placed p;
    rodrigues(rax, 37.0, p.R);
    memcpy(p.T, T, sizeof T);
    memcpy(p.c, c, sizeof c);
    p.s = 1.5;
    const int n = 120;
    double *loc = malloc(sizeof(double) * 3 * 40 * (n + 1) * (n + 1));
    const size_t m = surface(shape, sz, r, L, n, loc);
    double *w = malloc(sizeof(double) * 3 * m);
    for (size_t k = 0; k < m; ++k) to_world(&p, loc + 3 * k, w + 3 * k);
    const double extent = shape == GEOM_BOX ? fmax(sz[0], fmax(sz[1], sz[2])) : fmax(2 * r, L);
    const double tol = 0.006 * p.s * extent; /* about the sampling's spacing */
    double worst = 0;
    int wrong_sign = 0;
    for (int t = 0; t < 400; ++t) {
        double y[3], x[3];
        for (int a = 0; a < 3; ++a) y[a] = (uni() - 0.5) * 1.6 * extent;
        to_world(&p, y, x);
        double bf = INFINITY;
        for (size_t k = 0; k < m; ++k) {
            const double d = hypot(hypot(x[0] - w[3 * k], x[1] - w[3 * k + 1]), x[2] - w[3 * k + 2]);
            if (d < bf) bf = d;
        }
        double yl[3];
        to_local(&p, x, yl);
        const int in = inside(shape, yl, sz, r, L);
        double nrm[3];
        const double phi = geom_sdf(&o, 3, x, nrm);
        if ((phi < 0) != in && fabs(phi) > 1e-9) ++wrong_sign;
        worst = fmax(worst, fabs(fabs(phi) - bf));
        /* the normal is a unit vector, and a step along it changes phi by the step */
        assert_true(fabs(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2] - 1) < 1e-9);
        if (fabs(phi) > 0.05 * extent) {
            const double hstep = 1e-4 * extent;
            double x2[3] = { x[0] + hstep * nrm[0], x[1] + hstep * nrm[1], x[2] + hstep * nrm[2] };
            const double phi2 = geom_sdf(&o, 3, x2, NULL);
            if (fabs(phi2 - phi - hstep) > 1e-3 * hstep + 1e-12 && !(in && shape == GEOM_BOX))
                fail_msg("%s: phi grows by %g along the normal over %g", shape_name, phi2 - phi, hstep);
        }
    }
    printf("%s: %zu surface samples, largest |phi - brute force| %.3g m (tolerance %.3g m)\n", shape_name, m, worst,
           tol);
    assert_int_equal(wrong_sign, 0);
    assert_true(worst < tol);
    free(loc);
    free(w);
}

static void test_sdf_vs_brute_force(void **state)
{
    (void)state;
    const double box[3] = { 0.2, 0.4, 0.6 }, none[3] = { 0, 0, 0 };
    sdf_case("box", GEOM_BOX, box, 0, 0);
    sdf_case("sphere", GEOM_SPHERE, none, 0.25, 0);
    sdf_case("cylinder", GEOM_CYLINDER, none, 0.15, 0.5);
}

/* The transform's order: scale, then rotate, then translate. A box of size 1 x 2 x 1 at centre
 * (1, 0, 0), scaled 2, turned 90 degrees about z, moved by (10, 0, 0): its centre goes to
 * (2, 0, 0), then (0, 2, 0), then (10, 2, 0); its long side lies along x, 4 m. */
static void test_transform_order(void **state)
{
    (void)state;
    scene_object o;
    memset(&o, 0, sizeof o);
    o.shape = GEOM_BOX;
    o.size[0] = 1;
    o.size[1] = 2;
    o.size[2] = 1;
    o.center[0] = 1;
    o.translate[0] = 10;
    o.rot_axis[2] = 1;
    o.degrees = 90;
    o.scale = 2;
    geom_place(&o, 3);
    const double c[3] = { 10, 2, 0 }, end_x[3] = { 12, 2, 0 }, end_y[3] = { 10, 3, 0 };
    assert_true(geom_sdf(&o, 3, c, NULL) < -0.99);
    assert_true(fabs(geom_sdf(&o, 3, end_x, NULL)) < 1e-9); /* half of 4 m along x */
    assert_true(fabs(geom_sdf(&o, 3, end_y, NULL)) < 1e-9); /* half of 2 m along y */
    /* a cylinder's axis: along x, length 1: its end caps at x = +-0.5 */
    memset(&o, 0, sizeof o);
    o.shape = GEOM_CYLINDER;
    o.radius = 0.1;
    o.length = 1;
    o.axis[0] = 1;
    o.rot_axis[2] = 1;
    o.scale = 1;
    geom_place(&o, 3);
    const double cap[3] = { 0.5, 0, 0 }, side[3] = { 0, 0.1, 0 }, out[3] = { 0.7, 0, 0 };
    assert_true(fabs(geom_sdf(&o, 3, cap, NULL)) < 1e-9);
    assert_true(fabs(geom_sdf(&o, 3, side, NULL)) < 1e-9);
    assert_true(fabs(geom_sdf(&o, 3, out, NULL) - 0.2) < 1e-9);
}

static const char *SPH_OBSTACLE = "{'format': 1, 'dimensions': %d, 'tank': {'min': %s, 'max': %s},"
                                  " 'objects': [%s],"
                                  " 'fluid': {'blocks': [{'min': %s, 'max': %s}], 'spacing': %g},"
                                  " 'time': {'end': 0.1}}";

/* Boundary sampling: every object boundary particle lies in the solid within L dx of its
 * surface, every fluid particle at least dx / 2 outside, and their number is about L layers of
 * the surface (area / dx^2 per layer). */
static void sampling_case(int dims, const char *obj, double area, int layers)
{
    char json[2048];
    const double dx = 0.01;
    if (dims == 2) snprintf(json, sizeof json, SPH_OBSTACLE, 2, "[0, 0]", "[1, 0.6]", obj, "[0, 0]", "[1, 0.4]", dx);
    else
        snprintf(json, sizeof json, SPH_OBSTACLE, 3, "[0, 0, 0]", "[0.6, 0.4, 0.4]", obj, "[0, 0, 0]",
                 "[0.6, 0.4, 0.3]", dx);
    scene s;
    sphsim_error e;
    if (load(&s, json, &e) != SPHSIM_OK) fail_msg("%s", e.msg);
    particles p;
    assert_int_equal(init_lattice(&s, &p, 1, &e), SPHSIM_OK);
    long n_obj = 0;
    for (size_t i = 0; i < p.n; ++i) {
        const double x[3] = { p.pos[4 * i], p.pos[4 * i + 1], p.pos[4 * i + 2] };
        const double phi = geom_phi(&s, x, NULL);
        if (p.type[i] == PTYPE_FLUID) assert_true(phi >= 0.5 * dx - 1e-6);
        int in_tank = 1;
        for (int a = 0; a < dims; ++a) in_tank &= x[a] > s.tank.min[a] && x[a] < s.tank.max[a];
        if (p.type[i] == PTYPE_BOUNDARY && in_tank) {
            assert_true(phi <= 1e-6 && phi > -layers * dx - 1e-6);
            ++n_obj;
        }
    }
    const double expect = area / pow(dx, dims - 1) * layers;
    printf("%dD: %ld object boundary particles, about %.0f expected from the surface\n", dims, n_obj, expect);
    assert_true(fabs(n_obj - expect) < 0.2 * expect);
    assert_int_equal((long)p.n, s.n_total);
    particles_free(&p);
    scene_free(&s);
}

static void test_boundary_sampling(void **state)
{
    (void)state;
    /* a circle of radius 0.1: the layers' mid radius 0.085 */
    sampling_case(2, "{'shape': 'circle', 'center': [0.5, 0.2], 'radius': 0.1}", 2 * M_PI * 0.085, 3);
    /* a box 0.2 x 0.2 x 0.2 on the floor: its shell of 3 layers is 20^3 - 14^3 lattice points
     * (the bottom face too: the layers follow the shape, not the tank) */
    sampling_case(3, "{'shape': 'box', 'center': [0.3, 0.2, 0.1], 'size': [0.2, 0.2, 0.2]}",
                  (pow(0.2, 3) - pow(0.14, 3)) / 0.03, 3);
}

typedef struct bad_case {
    const char *json, *part;
} bad_case;

static void test_bad_geometry(void **state)
{
    (void)state;
    static const bad_case BAD[] = {
        { "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]}, 'objects': [{'shape': 'box'}],"
          " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "objects[0].shape: unknown value \"box\"" },
        { "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]}, 'objects': [{'radius': 1}],"
          " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "objects[0].shape: required key missing" },
        { "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]},"
          " 'objects': [{'shape': 'rectangle', 'size': [0, 1]}],"
          " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "objects[0].size[0]: expected a size > 0 m, got 0 m; the rectangle is degenerate" },
        { "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]},"
          " 'objects': [{'shape': 'circle', 'radius': -1}],"
          " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "objects[0].radius:" },
        { "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]},"
          " 'objects': [{'shape': 'circle', 'radius': 0.1, 'size': [1, 1]}],"
          " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "objects[0].size: not a key of shape \"circle\"" },
        { "{'format': 1, 'dimensions': 3, 'tank': {'min': [0, 0, 0], 'max': [1, 1, 1]},"
          " 'objects': [{'shape': 'cylinder', 'radius': 0.1, 'length': 1, 'axis': [0, 0, 0]}],"
          " 'fluid': {'blocks': [{'min': [0, 0, 0], 'max': [1, 1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "objects[0].axis: the axis [0, 0, 0] has no direction" },
        { "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]},"
          " 'objects': [{'shape': 'rectangle', 'center': [0.5, 0.5], 'size': [2, 2]}],"
          " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "fluid.blocks[0]: holds no particle: the objects cover all of its 200 lattice points" },
        { "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]},"
          " 'objects': [{'shape': 'circle', 'radius': 0.1, 'transform': {'rotate': {'axis': [1, 0]}}}],"
          " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.5]}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "objects[0].transform.rotate.axis: not allowed in 2D" },
        { "{'format': 1, 'dimensions': 2, 'mode': 'particles', 'tank': {'min': [0, 0], 'max': [1, 1]},"
          " 'objects': [{'shape': 'rectangle', 'center': [0.5, 0.5], 'size': [2, 2]}],"
          " 'spheres': {'groups': [{'count': 4, 'radius': 0.01}]}, 'time': {'end': 0.1}}",
          "spheres.groups[0].count: 4 spheres of radius 0.01 m do not fit" },
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; ++i) {
        scene s;
        sphsim_error e;
        const sphsim_status st = load(&s, BAD[i].json, &e);
        if (st != SPHSIM_E_SCENE) fail_msg("case %zu: status %d, want SPHSIM_E_SCENE (%s)", i, st, e.msg);
        if (!strstr(e.msg, BAD[i].part)) fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, e.msg, BAD[i].part);
    }
}

/* ---- meshes ---- */

/* A cube [-0.1, 0.1]^3 as 12 triangles facing outwards (vertices 0..7: bit 0 x, bit 1 y, bit 2 z). */
static const int CUBE[12][3] = { { 0, 2, 3 }, { 0, 3, 1 }, { 4, 5, 7 }, { 4, 7, 6 }, { 0, 1, 5 }, { 0, 5, 4 },
                                 { 2, 6, 7 }, { 2, 7, 3 }, { 0, 4, 6 }, { 0, 6, 2 }, { 1, 3, 7 }, { 1, 7, 5 } };
static void cube_vertex(int v, double s, float out[3])
{
    for (int a = 0; a < 3; ++a) out[a] = (float)((v >> a & 1) ? s : -s);
}

static char g_dir[256];

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", g_dir, name); }

/* Write the cube as binary STL, leaving out triangle `skip` (-1: none) and turning triangle
 * `flip` around (-1: none). */
static void write_cube_stl_binary(const char *name, int skip, int flip)
{
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char head[80] = "solid cube written as binary (the header may say solid)";
    fwrite(head, 1, 80, f);
    uint32_t n = skip >= 0 ? 11 : 12;
    fwrite(&n, 4, 1, f);
    for (int t = 0; t < 12; ++t) {
        if (t == skip) continue;
        float rec[12] = { 0 };
        for (int k = 0; k < 3; ++k) cube_vertex(CUBE[t][t == flip ? 2 - k : k], 0.1, rec + 3 + 3 * k);
        fwrite(rec, 4, 12, f);
        const uint16_t attr = 0;
        fwrite(&attr, 2, 1, f);
    }
    fclose(f);
}

static void write_cube_stl_ascii(const char *name)
{
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "solid cube\n");
    for (int t = 0; t < 12; ++t) {
        fprintf(f, "  facet normal 0 0 0\n    outer loop\n");
        for (int k = 0; k < 3; ++k) {
            float v[3];
            cube_vertex(CUBE[t][k], 0.1, v);
            fprintf(f, "      vertex %.9g %.9g %.9g\n", v[0], v[1], v[2]);
        }
        fprintf(f, "    endloop\n  endfacet\n");
    }
    fprintf(f, "endsolid cube\n");
    fclose(f);
}

/* The cube as OBJ with quads (two triangles of CUBE each), 1-based and negative indices. */
static void write_cube_obj(const char *name)
{
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# cube\no cube\n");
    for (int v = 0; v < 8; ++v) {
        float x[3];
        cube_vertex(v, 0.1, x);
        fprintf(f, "v %g %g %g\n", x[0], x[1], x[2]);
    }
    for (int t = 0; t < 12; t += 2) /* CUBE[t], CUBE[t+1] share the quad (a, b, c, d) = (t0, t1, t2, t+1's 2) */
        fprintf(f, "f %d/1/1 %d//1 %d %d\n", CUBE[t][0] + 1, CUBE[t][1] - 8, CUBE[t][2] + 1, CUBE[t + 1][2] + 1);
    fclose(f);
}

/* An icosphere of radius r (subdivided `levels` times), as ASCII OBJ. */
static void write_icosphere_obj(const char *name, double r, int levels)
{
    const double p = (1 + sqrt(5.0)) / 2;
    double V[20000][3];
    int F[20000][3], nv = 12, nf = 20;
    const double v0[12][3] = { { -1, p, 0 },  { 1, p, 0 },  { -1, -p, 0 }, { 1, -p, 0 }, { 0, -1, p },  { 0, 1, p },
                               { 0, -1, -p }, { 0, 1, -p }, { p, 0, -1 },  { p, 0, 1 },  { -p, 0, -1 }, { -p, 0, 1 } };
    const int f0[20][3] = { { 0, 11, 5 }, { 0, 5, 1 },  { 0, 1, 7 },   { 0, 7, 10 }, { 0, 10, 11 },
                            { 1, 5, 9 },  { 5, 11, 4 }, { 11, 10, 2 }, { 10, 7, 6 }, { 7, 1, 8 },
                            { 3, 9, 4 },  { 3, 4, 2 },  { 3, 2, 6 },   { 3, 6, 8 },  { 3, 8, 9 },
                            { 4, 9, 5 },  { 2, 4, 11 }, { 6, 2, 10 },  { 8, 6, 7 },  { 9, 8, 1 } };
    memcpy(V, v0, sizeof v0);
    memcpy(F, f0, sizeof f0);
    for (int l = 0; l < levels; ++l) {
        int nf2 = 0;
        static int F2[20000][3];
        for (int f = 0; f < nf; ++f) {
            int mid[3];
            for (int k = 0; k < 3; ++k) { /* midpoints, duplicated per face: the reader merges nothing for OBJ, */
                const int a = F[f][k], b = F[f][(k + 1) % 3]; /* so look the midpoint up among the vertices */
                double m[3];
                for (int c = 0; c < 3; ++c) m[c] = (V[a][c] + V[b][c]) / 2;
                int found = -1;
                for (int q = 0; q < nv && found < 0; ++q)
                    if (V[q][0] == m[0] && V[q][1] == m[1] && V[q][2] == m[2]) found = q;
                if (found < 0) {
                    memcpy(V[nv], m, sizeof m);
                    found = nv++;
                }
                mid[k] = found;
            }
            const int t4[4][3] = { { F[f][0], mid[0], mid[2] },
                                   { F[f][1], mid[1], mid[0] },
                                   { F[f][2], mid[2], mid[1] },
                                   { mid[0], mid[1], mid[2] } };
            memcpy(F2[nf2], t4, sizeof t4);
            nf2 += 4;
        }
        memcpy(F, F2, sizeof(int) * 3 * (size_t)nf2);
        nf = nf2;
    }
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int v = 0; v < nv; ++v) {
        const double l = sqrt(V[v][0] * V[v][0] + V[v][1] * V[v][1] + V[v][2] * V[v][2]);
        fprintf(f, "v %.17g %.17g %.17g\n", r * V[v][0] / l, r * V[v][1] / l, r * V[v][2] / l);
    }
    for (int t = 0; t < nf; ++t) fprintf(f, "f %d %d %d\n", F[t][0] + 1, F[t][1] + 1, F[t][2] + 1);
    fclose(f);
}

static void test_mesh_readers(void **state)
{
    (void)state;
    write_cube_stl_binary("cube_bin.stl", -1, -1);
    write_cube_stl_ascii("cube_ascii.stl");
    write_cube_obj("cube.obj");
    const char *names[] = { "cube_bin.stl", "cube_ascii.stl", "cube.obj" };
    for (int i = 0; i < 3; ++i) {
        char path[512];
        path_of(path, sizeof path, names[i]);
        mesh m;
        sphsim_error e;
        if (mesh_read(&m, path, "objects[0].file", NULL, &e) != SPHSIM_OK) fail_msg("%s", e.msg);
        assert_int_equal(m.n_vert, 8); /* STL's repeated vertices merged */
        assert_int_equal(m.n_tri, 12);
        long open, flipped;
        mesh_check(&m, &open, &flipped);
        assert_int_equal(open, 0);
        assert_int_equal(flipped, 0);
        assert_true(fabs(mesh_volume(&m) - 0.008) < 1e-9); /* faces outwards: positive */
        mesh_free(&m);
    }
}

/* A scene with mesh object `file` in a 1 m tank with fluid below. */
static sphsim_status mesh_scene(scene *s, const char *file, const char *transform, sphsim_error *e)
{
    char json[2048], path[512];
    path_of(path, sizeof path, file);
    snprintf(json, sizeof json,
             "{'format': 1, 'dimensions': 3, 'tank': {'min': [0, 0, 0], 'max': [1, 1, 1]},"
             " 'objects': [{'shape': 'mesh', 'file': '%s'%s}],"
             " 'fluid': {'blocks': [{'min': [0, 0, 0], 'max': [1, 1, 0.5]}], 'spacing': 0.02},"
             " 'time': {'end': 0.1}}",
             path, transform);
    return load(s, json, e);
}

static void test_mesh_errors(void **state)
{
    (void)state;
    write_cube_stl_binary("cube_open.stl", 5, -1);
    write_cube_stl_binary("cube_flipped.stl", -1, 7);
    char path[512];
    path_of(path, sizeof path, "bad.obj");
    FILE *f = fopen(path, "w");
    fprintf(f, "v 0 0 0\nv 1 0 0\nf 1 2 3\n");
    fclose(f);
    path_of(path, sizeof path, "short.stl");
    f = fopen(path, "w");
    fprintf(f, "not a mesh");
    fclose(f);
    static const struct {
        const char *file, *part;
    } cases[] = {
        { "missing.stl", "objects[0].file: cannot open '" },
        { "cube_open.stl", "objects[0]: mesh '" },
        { "cube_flipped.stl", "is inconsistently oriented: 3 edges" },
        { "bad.obj", "line 3: a face refers to vertex 3, but 2 vertices are defined before it" },
        { "short.stl", "is not a valid STL file: 10 bytes" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        scene s;
        sphsim_error e;
        assert_int_equal(mesh_scene(&s, cases[i].file, "", &e), SPHSIM_E_SCENE);
        if (!strstr(e.msg, cases[i].part))
            fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].file, e.msg, cases[i].part);
        if (i == 1 && !strstr(e.msg, "is not closed: 3 open edges")) fail_msg("%s", e.msg);
    }
}

/* The grid's signed distance of a mesh against the shape it approximates: a placed cube against
 * the box primitive, an icosphere (5120 faces) against the sphere, at random points near the
 * surface: within the grid's error (a cell) plus, for the sphere, the facets' sag. */
static void mesh_vs_primitive(const char *file, const char *transform, const scene_object *prim, double tol)
{
    scene s;
    sphsim_error e;
    if (mesh_scene(&s, file, transform, &e) != SPHSIM_OK) fail_msg("%s", e.msg);
    const scene_object *o = &s.objects[0];
    assert_int_equal(o->shape, GEOM_MESH);
    double worst = 0, worst_n = 0;
    for (int t = 0; t < 2000; ++t) {
        double x[3], n1[3], n2[3];
        for (int a = 0; a < 3; ++a) x[a] = 0.5 + (uni() - 0.5) * 0.5;
        const double pa = geom_sdf(prim, 3, x, n1), pm = geom_sdf_grid(o, s.geom_grid, 3, x, n2);
        if (fabs(pa) > o->grid_band - 2 * o->grid_cell) continue; /* the grid clamps beyond its band */
        worst = fmax(worst, fabs(pa - pm));
        if (fabs(pa) > 2 * o->grid_cell && fabs(pa) < o->grid_band - 3 * o->grid_cell)
            worst_n = fmax(worst_n, 1 - (n1[0] * n2[0] + n1[1] * n2[1] + n1[2] * n2[2]));
    }
    printf("%s: grid cell %.3g m, band %.3g m, largest |phi_mesh - phi_shape| %.3g m (tolerance %.3g m), "
           "largest 1 - cos(normals) %.3g away from the surface\n",
           file, o->grid_cell, o->grid_band, worst, tol, worst_n);
    assert_true(worst < tol);
    scene_free(&s);
}

static void test_mesh_sdf(void **state)
{
    (void)state;
    write_cube_stl_binary("cube_sdf.stl", -1, -1);
    scene_object box;
    memset(&box, 0, sizeof box);
    box.shape = GEOM_BOX;
    box.size[0] = box.size[1] = box.size[2] = 0.3; /* the cube scaled by 1.5 */
    box.translate[0] = box.translate[1] = box.translate[2] = 0.5;
    box.rot_axis[0] = 1;
    box.rot_axis[1] = 2;
    box.rot_axis[2] = 3;
    box.degrees = 25;
    box.scale = 1;
    geom_place(&box, 3);
    mesh_vs_primitive("cube_sdf.stl",
                      ", 'transform': {'scale': 1.5, 'rotate': {'axis': [1, 2, 3], 'degrees': 25},"
                      " 'translate': [0.5, 0.5, 0.5]}",
                      &box, 0.005); /* half a cell */
    write_icosphere_obj("ball.obj", 0.2, 4);
    scene_object ball;
    memset(&ball, 0, sizeof ball);
    ball.shape = GEOM_SPHERE;
    ball.radius = 0.2;
    ball.translate[0] = ball.translate[1] = ball.translate[2] = 0.5;
    ball.rot_axis[2] = 1;
    ball.scale = 1;
    geom_place(&ball, 3);
    /* facets of an icosphere of 5120 faces sag by r (1 - cos(pi / 80)) about 1.5e-4 m */
    mesh_vs_primitive("ball.obj", ", 'transform': {'translate': [0.5, 0.5, 0.5]}", &ball, 0.002);
}

/* ---- the device's signed distance against the host's (kernels/geom.h vs src/geometry.c) ---- */

/* The device's phi and normal of every object of scene `json` (dims) at random points against
 * geom_sdf_grid. */
static void device_vs_host(const char *json, int dims, cl_uint want_objects)
{
    scene s;
    sphsim_error e;
    if (load(&s, json, &e) != SPHSIM_OK) fail_msg("%s", e.msg);
    geom_object objs[GEOM_MAX_OBJECTS];
    const cl_uint n_obj = geom_pack(&s, objs);
    assert_int_equal(n_obj, want_objects);
    ocl_device d;
    sphsim_tuning tt;
    tuning_defaults(&tt);
    tt.kernel_dir = "tests/kernels";
    if (device_open(&d, "cpu", 0, &tt, &e) != SPHSIM_OK) fail_msg("%s", e.msg);
    cl_program prog;
    if (device_build(&d, "geom_eval.cl", "", &prog, &e) != SPHSIM_OK) fail_msg("%s", e.msg);
    cl_kernel k;
    assert_int_equal(device_kernel(prog, "geom_eval", &k, &e), SPHSIM_OK);
    enum { N = 5000 };
    static float x[4 * N], out[4 * N];
    for (int i = 0; i < N; ++i) {
        for (int a = 0; a < 3; ++a) x[4 * i + a] = a < dims ? (float)(0.5 + (uni() - 0.5) * 0.8) : 0.0f;
        x[4 * i + 3] = 0;
    }
    cl_mem bo, bg, bx, bout;
    const size_t ng = s.geom_grid_n ? s.geom_grid_n : 1;
    assert_int_equal(device_alloc(&d, sizeof objs, "objects", &bo, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&d, ng * sizeof(float), "grid", &bg, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&d, sizeof x, "x", &bx, &e), SPHSIM_OK);
    assert_int_equal(device_alloc(&d, sizeof out, "out", &bout, &e), SPHSIM_OK);
    assert_int_equal(device_write(&d, bo, 0, sizeof objs, objs, &e), SPHSIM_OK);
    assert_int_equal(device_write(&d, bg, 0, s.geom_grid_n * sizeof(float), s.geom_grid, &e), SPHSIM_OK);
    assert_int_equal(device_write(&d, bx, 0, sizeof x, x, &e), SPHSIM_OK);
    const cl_uint n = N;
    const karg args[] = { KARG("n", n),          KARG("objects", bo), KARG("n_objects", n_obj),
                          KARG("geom_grid", bg), KARG("x", bx),       KARG("out", bout) };
    assert_int_equal(device_set_args(&d, k, args, 6, &e), SPHSIM_OK);
    assert_int_equal(device_run1d(&d, k, N, 64, &e), SPHSIM_OK);
    assert_int_equal(device_read(&d, bout, 0, sizeof out, out, &e), SPHSIM_OK);
    double worst[GEOM_MAX_OBJECTS] = { 0 }, worst_n[GEOM_MAX_OBJECTS] = { 0 };
    for (int i = 0; i < N; ++i) {
        const int o = i % (int)n_obj;
        const double xi[3] = { x[4 * i], x[4 * i + 1], x[4 * i + 2] };
        double nrm[3];
        const double phi = geom_sdf_grid(&s.objects[o], s.geom_grid, dims, xi, nrm);
        worst[o] = fmax(worst[o], fabs(phi - out[4 * i + 3]));
        if (fabs(phi) > 1e-3) /* away from the surface's kinks the normals agree */
            worst_n[o] = fmax(worst_n[o], fabs(nrm[0] - out[4 * i]) + fabs(nrm[1] - out[4 * i + 1]) +
                                              fabs(nrm[2] - out[4 * i + 2]));
    }
    for (int o = 0; o < (int)n_obj; ++o) {
        printf("object %d: device vs host |phi| difference %.3g m, normal %.3g\n", o, worst[o], worst_n[o]);
        assert_true(worst[o] < 5e-7);   /* float rounding of coordinates about 1 m */
        assert_true(worst_n[o] < 1e-3); /* a mesh's normal: a gradient of float differences */
    }
    clReleaseMemObject(bo);
    clReleaseMemObject(bg);
    clReleaseMemObject(bx);
    clReleaseMemObject(bout);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    device_close(&d);
    scene_free(&s);
}

static void test_device_sdf_vs_host(void **state)
{
    (void)state;
    write_icosphere_obj("ball_dev.obj", 0.15, 3);
    char path[512], json[4096];
    path_of(path, sizeof path, "ball_dev.obj");
    snprintf(json, sizeof json,
             "{'format': 1, 'dimensions': 3, 'tank': {'min': [0, 0, 0], 'max': [1, 1, 1]}, 'objects': ["
             "{'shape': 'box', 'size': [0.2, 0.3, 0.1], 'transform': {'rotate': {'axis': [1, 1, 0], 'degrees': 30},"
             " 'translate': [0.5, 0.5, 0.5]}},"
             "{'shape': 'sphere', 'center': [0.5, 0.5, 0.5], 'radius': 0.2},"
             "{'shape': 'cylinder', 'radius': 0.1, 'length': 0.4, 'axis': [1, 0, 1], 'center': [0.5, 0.5, 0.5]},"
             "{'shape': 'mesh', 'file': '%s', 'transform': {'translate': [0.5, 0.5, 0.5]}},"
             "{'shape': 'sphere', 'role': 'container', 'center': [0.5, 0.5, 0.5], 'radius': 0.45}],"
             " 'fluid': {'blocks': [{'min': [0, 0, 0], 'max': [1, 1, 0.3]}], 'spacing': 0.02}, 'time': {'end': 0.1}}",
             path);
    device_vs_host(json, 3, 5);
    /* 2D: a turned rectangle, a circle, a concave polygon (turned, scaled) and a polygon container */
    device_vs_host(
        "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]}, 'objects': ["
        "{'shape': 'rectangle', 'size': [0.2, 0.3], 'center': [0.5, 0.5], 'transform': {'rotate': {'degrees': 20}}},"
        "{'shape': 'circle', 'center': [0.4, 0.6], 'radius': 0.1},"
        "{'shape': 'polygon', 'points': [[0, 0], [0.2, 0], [0.2, 0.1], [0.1, 0.03], [0, 0.1]],"
        " 'transform': {'rotate': {'degrees': 33}, 'scale': 1.5, 'translate': [0.45, 0.4]}},"
        "{'shape': 'polygon', 'role': 'container', 'points': [[0.05, 0.05], [0.95, 0.1], [0.9, 0.95], [0.1, 0.9]]}],"
        " 'fluid': {'blocks': [{'min': [0, 0], 'max': [1, 0.3]}], 'spacing': 0.01}, 'time': {'end': 0.1}}",
        2, 4);
}

/* ---- fluid and sphere regions (scene.regions) ---- */

/* The tank's fluid lattice (cell-centred from tank.min at spacing dx), as regions fill it. */
static long tank_lattice_n(double w, double dx) { return (long)floor(w / dx + 1e-9); }

/* Fluid particles of the scene (after init_lattice); their positions in *x (3 per particle, malloc'd). */
static long fluid_of(const char *json_sq, scene *s, double **x)
{
    sphsim_error e;
    if (load(s, json_sq, &e) != SPHSIM_OK) fail_msg("%s", e.msg);
    particles p;
    assert_int_equal(init_lattice(s, &p, 1, &e), SPHSIM_OK);
    *x = malloc((p.n_fluid ? p.n_fluid : 1) * 3 * sizeof **x);
    long n = 0;
    for (size_t i = 0; i < p.n; ++i)
        if (p.type[i] == PTYPE_FLUID) {
            for (int a = 0; a < 3; ++a) (*x)[3 * n + a] = p.pos[4 * i + a];
            ++n;
        }
    assert_int_equal(n, (long)p.n_fluid);
    assert_int_equal(n, s->n_fluid);
    particles_free(&p);
    return n;
}

/* A turned cylinder region: every fluid particle lies half a spacing inside it, and the count is
 * that of the tank lattice's points so far inside (counted here from the cylinder's own axis and
 * radius, not geometry.c), which is the volume of the cylinder shrunk by dx / 2 over dx^3 within
 * rounding. */
static void test_region_cylinder(void **state)
{
    (void)state;
    const double dx = 0.02, R = 0.2, L = 0.3, T[3] = { 0.5, 0.45, 0.4 }, rot_axis[3] = { 0, 1, 0 }, deg = 30;
    const double axis0[3] = { 1, 0, 1 };
    scene s;
    double *x;
    const long n = fluid_of("{'format': 1, 'dimensions': 3, 'tank': {'min': [0, 0, 0], 'max': [1, 1, 1]},"
                            " 'fluid': {'regions': [{'shape': 'cylinder', 'radius': 0.2, 'length': 0.3,"
                            " 'axis': [1, 0, 1], 'transform': {'translate': [0.5, 0.45, 0.4],"
                            " 'rotate': {'axis': [0, 1, 0], 'degrees': 30}}}], 'spacing': 0.02},"
                            " 'time': {'end': 0.1}}",
                            &s, &x);
    double Rm[9], a[3] = { 0, 0, 0 };
    rodrigues(rot_axis, deg, Rm);
    const double l0 = sqrt(2.0);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) a[i] += Rm[3 * i + j] * axis0[j] / l0;
    /* inside by m: radial distance <= R - m and |axial| <= L / 2 - m */
#define IN_CYL(px, py, pz, m, ok)                                                                                      \
    do {                                                                                                               \
        const double d_[3] = { (px) - T[0], (py) - T[1], (pz) - T[2] };                                                \
        const double ax_ = d_[0] * a[0] + d_[1] * a[1] + d_[2] * a[2];                                                 \
        const double r_[3] = { d_[0] - ax_ * a[0], d_[1] - ax_ * a[1], d_[2] - ax_ * a[2] };                           \
        ok = sqrt(r_[0] * r_[0] + r_[1] * r_[1] + r_[2] * r_[2]) <= R - (m) && fabs(ax_) <= L / 2 - (m);             \
    } while (0)
    for (long i = 0; i < n; ++i) {
        int ok;
        IN_CYL(x[3 * i], x[3 * i + 1], x[3 * i + 2], 0.5 * dx - 1e-6, ok);
        if (!ok) fail_msg("fluid particle %ld at (%g, %g, %g) is not half a spacing inside the cylinder", i, x[3 * i],
                          x[3 * i + 1], x[3 * i + 2]);
    }
    long want = 0;
    const long N = tank_lattice_n(1.0, dx);
    for (long k = 0; k < N; ++k)
        for (long j = 0; j < N; ++j)
            for (long l = 0; l < N; ++l) {
                int ok;
                IN_CYL((l + 0.5) * dx, (j + 0.5) * dx, (k + 0.5) * dx, 0.5 * dx, ok);
                want += ok;
            }
#undef IN_CYL
    const double vol = M_PI * (R - dx / 2) * (R - dx / 2) * (L - dx) / pow(dx, 3);
    printf("cylinder region: %ld fluid particles, %ld lattice points inside, volume / dx^3 = %.1f\n", n, want, vol);
    assert_int_equal(n, want);
    assert_true(fabs(n - vol) < 0.02 * vol);
    free(x);
    scene_free(&s);
}

/* The cylindrical mesh tank (scenes/meshes/tank_cylinder.stl: 64 sides, circumradius 0.3 m, on
 * z = 0) filled up to z = 0.3 m around a box pillar: every particle half a spacing inside the
 * prism (its 64 sides written out here), below 0.3 m and outside the pillar, and the count that
 * of the lattice points that are, up to the ties of points on the margin, which the mesh's float
 * grid may put on either side. */
static void test_region_container_below(void **state)
{
    (void)state;
    const double dx = 0.02, Rc = 0.3, below = 0.3, P[3] = { 0.05, 0, 0.25 }, Ps[3] = { 0.1, 0.1, 0.5 };
    scene s;
    double *x;
    const long n = fluid_of("{'format': 1, 'dimensions': 3, 'tank': {'min': [-0.4, -0.4, 0], 'max': [0.4, 0.4, 0.8]},"
                            " 'objects': [{'shape': 'mesh', 'role': 'container', 'file': "
                            "'scenes/meshes/tank_cylinder.stl'},"
                            " {'shape': 'box', 'center': [0.05, 0, 0.25], 'size': [0.1, 0.1, 0.5]}],"
                            " 'fluid': {'regions': [{'fill': 'container', 'below': 0.3}], 'spacing': 0.02},"
                            " 'time': {'end': 0.1}}",
                            &s, &x);
    const double apothem = Rc * cos(M_PI / 64);
    /* the least room of point q: to the prism's sides and floor, the level, the pillar */
#define ROOM(q, out)                                                                                                   \
    do {                                                                                                               \
        double m_ = fmin((q)[2], below - (q)[2]);                                                                      \
        for (int k_ = 0; k_ < 64; ++k_) {                                                                              \
            const double t_ = 2 * M_PI * (k_ + 0.5) / 64;                                                              \
            m_ = fmin(m_, apothem - ((q)[0] * cos(t_) + (q)[1] * sin(t_)));                                            \
        }                                                                                                              \
        double o_ = 0, in_ = -INFINITY;                                                                                \
        for (int c_ = 0; c_ < 3; ++c_) {                                                                               \
            const double d_ = fabs((q)[c_] - P[c_]) - Ps[c_] / 2;                                                      \
            o_ += d_ > 0 ? d_ * d_ : 0;                                                                                \
            in_ = fmax(in_, d_);                                                                                       \
        }                                                                                                              \
        out = fmin(m_, o_ > 0 ? sqrt(o_) : in_);                                                                       \
    } while (0)
    for (long i = 0; i < n; ++i) {
        double m;
        ROOM(x + 3 * i, m);
        if (!(m >= 0.5 * dx - 1e-4 * dx))
            fail_msg("fluid particle %ld at (%g, %g, %g) has %g m of room, less than half a spacing", i, x[3 * i],
                     x[3 * i + 1], x[3 * i + 2], m);
    }
    long want = 0, ties = 0;
    const long N = tank_lattice_n(0.8, dx);
    for (long k = 0; k < N; ++k)
        for (long j = 0; j < N; ++j)
            for (long l = 0; l < N; ++l) {
                const double q[3] = { -0.4 + (l + 0.5) * dx, -0.4 + (j + 0.5) * dx, (k + 0.5) * dx };
                double m;
                ROOM(q, m);
                want += m >= 0.5 * dx * (1 - 1e-9);
                ties += fabs(m - 0.5 * dx) < 1e-4 * dx;
            }
#undef ROOM
    printf("mesh tank below 0.3 m minus a pillar: %ld fluid particles, %ld lattice points with room (%ld on the "
           "margin)\n",
           n, want, ties);
    assert_int_equal(n, want); /* the ties fall as the exact distance puts them */
    free(x);
    scene_free(&s);
}

/* A 2D polygon region (an L, turned, scaled and moved): every particle half a spacing inside it
 * (the distance to its edges and the crossing test written out here) and the count that of the
 * lattice points that are. */
static void test_region_polygon_2d(void **state)
{
    (void)state;
    const double dx = 0.01, pts[6][2] = { { 0, 0 }, { 0.3, 0 }, { 0.3, 0.1 }, { 0.1, 0.1 }, { 0.1, 0.25 }, { 0, 0.25 } };
    const double deg = 20, sc = 1.5, T[2] = { 0.35, 0.2 };
    scene s;
    double *x;
    const long n = fluid_of("{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]},"
                            " 'fluid': {'regions': [{'shape': 'polygon', 'points': [[0, 0], [0.3, 0], [0.3, 0.1],"
                            " [0.1, 0.1], [0.1, 0.25], [0, 0.25]], 'transform': {'rotate': {'degrees': 20},"
                            " 'scale': 1.5, 'translate': [0.35, 0.2]}}], 'spacing': 0.01},"
                            " 'time': {'end': 0.1}}",
                            &s, &x);
    double w[6][2];
    const double c = cos(deg * M_PI / 180), sn = sin(deg * M_PI / 180);
    for (int k = 0; k < 6; ++k) {
        w[k][0] = T[0] + sc * (c * pts[k][0] - sn * pts[k][1]);
        w[k][1] = T[1] + sc * (sn * pts[k][0] + c * pts[k][1]);
    }
    /* signed room: the distance to the edges, positive inside */
#define PROOM(px, py, out)                                                                                             \
    do {                                                                                                               \
        double best_ = INFINITY;                                                                                       \
        int in_ = 0;                                                                                                   \
        for (int k_ = 0; k_ < 6; ++k_) {                                                                               \
            const double *a_ = w[k_], *b_ = w[(k_ + 1) % 6];                                                           \
            const double ex_ = b_[0] - a_[0], ey_ = b_[1] - a_[1];                                                     \
            double t_ = ((px - a_[0]) * ex_ + (py - a_[1]) * ey_) / (ex_ * ex_ + ey_ * ey_);                          \
            t_ = t_ < 0 ? 0 : t_ > 1 ? 1 : t_;                                                                         \
            best_ = fmin(best_, hypot(px - a_[0] - t_ * ex_, py - a_[1] - t_ * ey_));                                  \
            if ((a_[1] > py) != (b_[1] > py) && px < a_[0] + (py - a_[1]) * ex_ / ey_) in_ = !in_;                    \
        }                                                                                                              \
        out = in_ ? best_ : -best_;                                                                                    \
    } while (0)
    for (long i = 0; i < n; ++i) {
        double m;
        PROOM(x[3 * i], x[3 * i + 1], m);
        if (!(m >= 0.5 * dx - 1e-6)) fail_msg("fluid particle %ld has %g m of room in the polygon", i, m);
    }
    long want = 0;
    for (long j = 0; j < 100; ++j)
        for (long l = 0; l < 100; ++l) {
            double m;
            PROOM((l + 0.5) * dx, (j + 0.5) * dx, m);
            want += m >= 0.5 * dx;
        }
#undef PROOM
    printf("polygon region: %ld fluid particles, %ld lattice points inside\n", n, want);
    assert_int_equal(n, want);
    free(x);
    scene_free(&s);
}

/* A region beside blocks: a container fill below a level in a plain tank gives exactly the block
 * of the same height (the same lattice), and a region's points next to a block keep clear of it. */
static void test_region_as_block(void **state)
{
    (void)state;
    scene a, b;
    double *xa, *xb;
    const long na = fluid_of("{'format': 1, 'dimensions': 3, 'tank': {'min': [0, 0, 0], 'max': [0.4, 0.3, 0.5]},"
                             " 'fluid': {'regions': [{'fill': 'container', 'below': 0.23}], 'spacing': 0.02},"
                             " 'time': {'end': 0.1}}",
                             &a, &xa);
    const long nb = fluid_of("{'format': 1, 'dimensions': 3, 'tank': {'min': [0, 0, 0], 'max': [0.4, 0.3, 0.5]},"
                             " 'fluid': {'blocks': [{'min': [0, 0, 0], 'max': [0.4, 0.3, 0.23]}], 'spacing': 0.02},"
                             " 'time': {'end': 0.1}}",
                             &b, &xb);
    assert_int_equal(na, nb);
    for (long i = 0; i < 3 * na; ++i) assert_true(xa[i] == xb[i]);
    assert_true(fabs(a.fluid_height - 0.23) < 1e-12 && a.sound_speed == b.sound_speed);
    free(xa);
    free(xb);
    scene_free(&a);
    scene_free(&b);
    /* a block in the corner and a region over all the tank below 0.2: the union, each point once */
    scene c;
    double *xc;
    const long nc = fluid_of("{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]},"
                             " 'fluid': {'blocks': [{'min': [0, 0], 'max': [0.3, 0.6]}],"
                             " 'regions': [{'fill': 'container', 'below': 0.2}], 'spacing': 0.02},"
                             " 'time': {'end': 0.1}}",
                             &c, &xc);
    assert_int_equal(nc, 15 * 30 + 35 * 10);
    for (long i = 0; i < nc; ++i)
        for (long j = i + 1; j < nc; ++j)
            assert_true(hypot(xc[3 * i] - xc[3 * j], xc[3 * i + 1] - xc[3 * j + 1]) > 0.02 * (1 - 1e-6));
    free(xc);
    scene_free(&c);
}

/* Sphere groups in shaped regions: every sphere lies inside its group's region by its radius (a
 * sphere region on a lattice, a container fill below a level placed at random) and clear of an
 * obstacle; a lattice that does not fit is the usual error. */
static void test_region_spheres(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    if (load(&s,
             "{'format': 1, 'dimensions': 3, 'mode': 'particles', 'tank': {'min': [0, 0, 0], 'max': [0.6, 0.6, 0.8]},"
             " 'objects': [{'shape': 'box', 'center': [0.3, 0.3, 0.05], 'size': [0.2, 0.2, 0.1]}],"
             " 'spheres': {'groups': [{'count': 300, 'radius': 0.01, 'region': {'shape': 'sphere', 'radius': 0.12,"
             " 'center': [0.3, 0.3, 0.5]}}, {'count': 150, 'radius': 0.01, 'placement': 'random',"
             " 'region': {'fill': 'container', 'below': 0.15}}]}, 'time': {'end': 0.1}}",
             &e) != SPHSIM_OK)
        fail_msg("%s", e.msg);
    particles p;
    assert_int_equal(init_lattice(&s, &p, 1, &e), SPHSIM_OK);
    assert_int_equal((long)p.n, 450);
    for (size_t i = 0; i < p.n; ++i) {
        const double q[3] = { p.pos[4 * i], p.pos[4 * i + 1], p.pos[4 * i + 2] };
        if (i < 300) assert_true(sqrt(pow(q[0] - 0.3, 2) + pow(q[1] - 0.3, 2) + pow(q[2] - 0.5, 2)) <= 0.11 + 1e-6);
        else {
            assert_true(q[2] <= 0.14 + 1e-6 && q[2] >= 0.01 - 1e-6);
            double o = 0;
            const double c[3] = { 0.3, 0.3, 0.05 }, hs[3] = { 0.1, 0.1, 0.05 };
            for (int a = 0; a < 3; ++a) {
                const double d = fabs(q[a] - c[a]) - hs[a];
                o += d > 0 ? d * d : 0;
            }
            assert_true(sqrt(o) >= 0.01 - 1e-6);
        }
    }
    particles_free(&p);
    scene_free(&s);
    /* 300 spheres of 1 cm on a lattice of pitch 2.02 cm do not fit in a sphere of 8 cm */
    const sphsim_status st = load(&s,
                                  "{'format': 1, 'dimensions': 3, 'mode': 'particles', 'tank': {'min': [0, 0, 0],"
                                  " 'max': [0.6, 0.6, 0.8]}, 'spheres': {'groups': [{'count': 300, 'radius': 0.01,"
                                  " 'region': {'shape': 'sphere', 'radius': 0.08, 'center': [0.3, 0.3, 0.5]}}]},"
                                  " 'time': {'end': 0.1}}",
                                  &e);
    assert_int_equal(st, SPHSIM_E_SCENE);
    assert_non_null(strstr(e.msg, "spheres.groups[0].count: 300 spheres of radius 0.01 m do not fit on a lattice"));
    scene_free(&s);
}

/* Every message of a bad region names its JSON path. */
static void test_region_errors(void **state)
{
    (void)state;
#define T2 "{'format': 1, 'dimensions': 2, 'tank': {'min': [0, 0], 'max': [1, 1]}, "
#define F2(r) "'fluid': {'regions': [" r "], 'spacing': 0.02}, 'time': {'end': 0.1}}"
    static const bad_case BAD[] = {
        { T2 F2("{'shape': 'circle', 'radius': 0.005, 'center': [0.5, 0.5]}"),
          "fluid.regions[0]: holds no particle: no point of the fluid lattice (spacing 0.02 m, from the tank's "
          "corner) lies half a spacing inside it" },
        { T2 "'objects': [{'shape': 'circle', 'center': [0.5, 0.5], 'radius': 0.3}], "
             F2("{'shape': 'rectangle', 'center': [0.5, 0.5], 'size': [0.2, 0.2]}"),
          "fluid.regions[0]: holds no particle: the objects cover all of its 100 lattice points (a fluid particle "
          "needs half a spacing, 0.01 m, of room from a solid)" },
        { T2 F2("{'shape': 'cone', 'radius': 0.1}"),
          "fluid.regions[0].shape: unknown value \"cone\"; expected one of \"rectangle\", \"circle\", \"polygon\"" },
        { T2 F2("{'shape': 'circle', 'radus': 0.1}"), "fluid.regions[0].radus: unknown key; did you mean \"radius\"?" },
        { T2 F2("{'shape': 'circle', 'radius': 0.1, 'role': 'container'}"), "fluid.regions[0].role: unknown key" },
        { T2 F2("{'shape': 'circle', 'radius': 0.1, 'size': [1, 1]}"),
          "fluid.regions[0].size: not a key of shape \"circle\"" },
        { T2 F2("{'shape': 'circle', 'radius': 0.1, 'fill': 'container'}"),
          "fluid.regions[0].fill: not allowed together with \"shape\"" },
        { T2 F2("{'below': 0.3}"), "fluid.regions[0]: expected \"shape\" (a solid to fill" },
        { T2 F2("{'fill': 'tank'}"), "fluid.regions[0].fill: unknown value \"tank\"; expected one of \"container\"" },
        { T2 F2("{'fill': 'container', 'radius': 0.1}"), "fluid.regions[0].radius: only with \"shape\"" },
        { T2 F2("{'fill': 'container', 'above': 0.3, 'below': 0.3}"),
          "fluid.regions[0].below: must be greater than \"above\" (0.3 m), got 0.3 m; the region is empty" },
        { T2 F2("{'fill': 'container', 'below': 'high'}"),
          "fluid.regions[0].below: expected a number, got the string \"high\"" },
        { T2 F2("{'shape': 'circle', 'radius': -1}"), "fluid.regions[0].radius: expected a number > 0" },
        { T2 "'fluid': {'regions': [], 'spacing': 0.02}, 'time': {'end': 0.1}}",
          "fluid.regions: expected 1 to 16 fluid regions, got 0" },
        { T2 "'fluid': {'regions': [{'fill': 'container'}], 'particle_count': 100}, 'time': {'end': 0.1}}",
          "fluid.particle_count: not available with fluid.regions" },
        { T2 "'fluid': {'spacing': 0.02}, 'time': {'end': 0.1}}",
          "fluid.blocks: required key missing (expected an array of fluid blocks, or give \"regions\")" },
        { "{'format': 1, 'dimensions': 3, 'tank': {'min': [0, 0, 0], 'max': [1, 1, 1]}, 'fluid': {'regions': "
          "[{'shape': 'mesh', 'file': 'no/such.stl'}], 'spacing': 0.05}, 'time': {'end': 0.1}}",
          "fluid.regions[0].file: cannot open" },
        { "{'format': 1, 'dimensions': 3, 'mode': 'particles', 'tank': {'min': [0, 0, 0], 'max': [1, 1, 1]},"
          " 'spheres': {'groups': [{'count': 10, 'radius': 0.01, 'region': {'shape': 'ball', 'radius': 0.1}}]},"
          " 'time': {'end': 0.1}}",
          "spheres.groups[0].region.shape: unknown value \"ball\"" },
    };
#undef T2
#undef F2
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; ++i) {
        scene s;
        sphsim_error e;
        const sphsim_status st = load(&s, BAD[i].json, &e);
        if (st != SPHSIM_E_SCENE && st != SPHSIM_E_IO)
            fail_msg("case %zu: status %d, want SPHSIM_E_SCENE (%s)", i, st, e.msg);
        if (!strstr(e.msg, BAD[i].part)) fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, e.msg, BAD[i].part);
        scene_free(&s);
    }
}

static int make_dir(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/sphsim_test_geometry_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sdf_vs_brute_force), cmocka_unit_test(test_transform_order),
        cmocka_unit_test(test_boundary_sampling),  cmocka_unit_test(test_bad_geometry),
        cmocka_unit_test(test_mesh_readers),       cmocka_unit_test(test_mesh_errors),
        cmocka_unit_test(test_mesh_sdf),           cmocka_unit_test(test_device_sdf_vs_host),
        cmocka_unit_test(test_region_cylinder),    cmocka_unit_test(test_region_container_below),
        cmocka_unit_test(test_region_polygon_2d),  cmocka_unit_test(test_region_as_block),
        cmocka_unit_test(test_region_spheres),     cmocka_unit_test(test_region_errors),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
