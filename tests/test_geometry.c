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

#include "geometry.h"
#include "init.h"
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
static void sdf_case(const char *shape_name, unsigned shape, const double sz[3], double r, double L, const double ax[3])
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
    (void)ax;
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
    const double box[3] = { 0.2, 0.4, 0.6 }, none[3] = { 0, 0, 0 }, z[3] = { 0, 0, 1 };
    sdf_case("box", GEOM_BOX, box, 0, 0, z);
    sdf_case("sphere", GEOM_SPHERE, none, 0.25, 0, z);
    sdf_case("cylinder", GEOM_CYLINDER, none, 0.15, 0.5, z);
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
    if (dims == 2)
        snprintf(json, sizeof json, SPH_OBSTACLE, 2, "[0, 0]", "[1, 0.6]", obj, "[0, 0]", "[1, 0.4]", dx);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sdf_vs_brute_force),
        cmocka_unit_test(test_transform_order),
        cmocka_unit_test(test_boundary_sampling),
        cmocka_unit_test(test_bad_geometry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
