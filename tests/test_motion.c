/* test_motion: the prescribed motion of the tank and the objects (src/motion.c) against closed
 * forms (sine, rotation, constant velocity, a table, segments that follow each other), the
 * swept box of the grid, and the scene's "motion" keys with their errors. Run from the
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

#include "motion.h"
#include "scene.h"

/* JSON written with ' for " (easier to read in C). */
static sphsim_status load(scene *s, const char *sq, sphsim_error *e)
{
    char *json = strdup(sq);
    for (char *c = json; *c; c++)
        if (*c == '\'') *c = '"';
    memset(e, 0, sizeof *e);
    sphsim_status st = scene_load_string(s, json, "t.json", NULL, 0, e);
    free(json);
    return st;
}

static void close_to(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol)) fail_msg("%s: got %.17g, want %.17g (tol %g)", what, got, want, tol);
}

#define HEAD "{'format':1,'dimensions':2,'fluid':{'blocks':[{'min':[0,0],'max':[1,0.5]}],'spacing':0.05},'time':{'end':1},"
#define TANK(m) "'tank':{'min':[0,0],'max':[1,1],'motion':[" m "]}}"

/* sine: d = A (sin(w tau + phase) - sin(phase)) from its start, held after its end */
static void test_sine(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s, HEAD TANK("{'type':'sine','amplitude':[0.1,-0.2],'frequency':0.5,'phase':0.3,"
                                        "'start':0.2,'end':2}"),
                          &e),
                     SPHSIM_OK);
    const double w = M_PI, A[2] = { 0.1, -0.2 };
    motion_state m;
    motion_eval(&s.tank_motion, 0.1, &m); /* before its start: at rest */
    for (int k = 0; k < 3; ++k) assert_true(m.d[k] == 0.0 && m.v[k] == 0.0 && m.a[k] == 0.0);
    const double t = 1.1, tau = t - 0.2;
    motion_eval(&s.tank_motion, t, &m);
    for (int k = 0; k < 2; ++k) {
        close_to(m.d[k], A[k] * (sin(w * tau + 0.3) - sin(0.3)), 1e-15, "sine d");
        close_to(m.v[k], A[k] * w * cos(w * tau + 0.3), 1e-15, "sine v");
        close_to(m.a[k], -A[k] * w * w * sin(w * tau + 0.3), 1e-14, "sine a");
    }
    assert_true(m.d[2] == 0.0 && m.theta == 0.0);
    motion_eval(&s.tank_motion, 5.0, &m); /* after its end: held where it ended, at rest */
    for (int k = 0; k < 2; ++k) {
        close_to(m.d[k], A[k] * (sin(w * 1.8 + 0.3) - sin(0.3)), 1e-15, "sine held");
        assert_true(m.v[k] == 0.0 && m.a[k] == 0.0);
    }
    scene_free(&s);
}

/* rotation (2D, about z through the tank's centre by default): theta = A (sin(w tau + phase) -
 * sin(phase)); the placement x = R (x0 - c) + c + d and its inverse, velocity omega x r */
static void test_rotation(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s, HEAD TANK("{'type':'rotation','amplitude':4,'frequency':0.8,'end':10}"), &e), SPHSIM_OK);
    const scene_motion *mo = &s.tank_motion;
    assert_true(mo->rotates);
    close_to(mo->center[0], 0.5, 0, "centre x");
    close_to(mo->center[1], 0.5, 0, "centre y");
    const double A = 4.0 * M_PI / 180.0, w = 2.0 * M_PI * 0.8, t = 0.37;
    motion_state m;
    motion_eval(mo, t, &m);
    close_to(m.theta, A * sin(w * t), 1e-15, "theta");
    close_to(m.omega, A * w * cos(w * t), 1e-15, "omega");
    close_to(m.alpha, -A * w * w * sin(w * t), 1e-14, "alpha");
    motion_frame f;
    motion_frame_at(mo, t, &f);
    const double x0[3] = { 1.0, 0.0, 0.0 }, c = cos(m.theta), sn = sin(m.theta);
    const double want[3] = { 0.5 + c * 0.5 - sn * -0.5, 0.5 + sn * 0.5 + c * -0.5, 0.0 };
    double x[3], back[3];
    motion_frame_place(&f, x0, x);
    for (int k = 0; k < 3; ++k) close_to(x[k], want[k], 1e-15, "rotated point");
    motion_frame_to_rest(&f, x, back);
    for (int k = 0; k < 3; ++k) close_to(back[k], x0[k], 1e-15, "back to rest");
    motion_body b;
    motion_body_at(mo, t, &b);
    close_to(b.omega[2], m.omega, 1e-6 * fabs(m.omega), "packed omega");
    assert_true(b.omega[0] == 0.0f && b.omega[1] == 0.0f);
    close_to(b.rot[1], -sn, 1e-7, "packed R[0][1]");
    scene_free(&s);
}

/* a 3D turn about a normalised axis through a given centre: R orthonormal, the axis fixed */
static void test_rotation_3d(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s,
                          "{'format':1,'dimensions':3,'fluid':{'blocks':[{'min':[0,0,0],'max':[1,1,0.5]}],"
                          "'spacing':0.1},'time':{'end':1},'tank':{'min':[0,0,0],'max':[1,1,1],'motion':[{'type':"
                          "'rotation','amplitude':10,'frequency':1,'phase':1,'center':[0.5,0.5,0],'axis':[0,2,0]}]}}",
                          &e),
                     SPHSIM_OK);
    const scene_motion *mo = &s.tank_motion;
    close_to(mo->axis[1], 1.0, 0, "unit axis");
    motion_frame f;
    motion_frame_at(mo, 0.3, &f);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double dot = 0;
            for (int k = 0; k < 3; ++k) dot += f.R[3 * k + i] * f.R[3 * k + j];
            close_to(dot, i == j, 1e-15, "R^T R");
        }
    close_to(f.R[4], 1.0, 1e-15, "the axis stays");
    scene_free(&s);
}

/* constant velocity, then a sine: each segment starts where the one before left the body */
static void test_segments(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s, HEAD TANK("{'type':'constant','velocity':[0.2,0.1],'end':0.5},"
                                        "{'type':'sine','amplitude':[0.05,0],'frequency':1,'start':0.75,'end':1.75}"),
                          &e),
                     SPHSIM_OK);
    motion_state m;
    motion_eval(&s.tank_motion, 0.25, &m);
    close_to(m.d[0], 0.05, 1e-16, "constant d");
    close_to(m.v[1], 0.1, 0, "constant v");
    motion_eval(&s.tank_motion, 0.6, &m); /* the pause between: held, at rest */
    close_to(m.d[0], 0.1, 1e-16, "held x");
    close_to(m.d[1], 0.05, 1e-16, "held y");
    assert_true(m.v[0] == 0.0);
    motion_eval(&s.tank_motion, 1.0, &m);
    close_to(m.d[0], 0.1 + 0.05 * sin(2 * M_PI * 0.25), 1e-15, "sine after constant");
    close_to(m.v[0], 0.05 * 2 * M_PI * cos(2 * M_PI * 0.25), 1e-15, "its velocity");
    close_to(m.d[1], 0.05, 1e-16, "y held");
    /* continuous at every segment boundary */
    const double ts[] = { 0.5, 0.75, 1.75 };
    for (int k = 0; k < 3; ++k) {
        motion_state a, b;
        motion_eval(&s.tank_motion, ts[k] - 1e-9, &a);
        motion_eval(&s.tank_motion, ts[k] + 1e-9, &b);
        for (int q = 0; q < 2; ++q) close_to(a.d[q], b.d[q], 1e-9, "continuous");
    }
    scene_free(&s);
}

/* a table: linear between rows (header and comments skipped), its slope the velocity, the
 * acceleration from the slopes either side of each row, held beyond its last row */
static void test_table(void **state)
{
    (void)state;
    const char *path = "/tmp/sphsim_test_motion_table.csv";
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# piston\ntime, x, y, angle\n0, 0, 0, 0\n1, 0.1, 0, 2\n\n2; 0.1; 0.3; 2 # a comment\n");
    fclose(f);
    scene s;
    sphsim_error e;
    char json[512];
    snprintf(json, sizeof json, HEAD TANK("{'type':'table','file':'%s','start':1}"), path);
    assert_int_equal(load(&s, json, &e), SPHSIM_OK);
    const scene_motion_segment *g = &s.tank_motion.seg[0];
    assert_int_equal(g->n_rows, 3);
    assert_true(g->has_angle && s.tank_motion.rotates);
    motion_state m;
    motion_eval(&s.tank_motion, 1.25, &m);
    close_to(m.d[0], 0.025, 1e-16, "table x");
    close_to(m.v[0], 0.1, 1e-15, "table v");
    close_to(m.theta, 0.5 * M_PI / 180.0, 1e-16, "table angle");
    close_to(m.a[0], 0.25 * -0.1, 1e-15, "table a (row 1's -0.1 m/s^2, a quarter of the way)");
    motion_eval(&s.tank_motion, 2.5, &m);
    close_to(m.d[1], 0.15, 1e-16, "table y");
    close_to(m.a[1], 0.5 * 0.3, 1e-15, "table a y");
    motion_eval(&s.tank_motion, 9.0, &m);
    close_to(m.d[0], 0.1, 0, "held x");
    close_to(m.d[1], 0.3, 0, "held y");
    assert_true(m.v[0] == 0.0 && m.omega == 0.0);
    scene_free(&s);
    remove(path);
}

/* the swept box: a push of 2 A along x (sine of phase -pi/2 over half a period) and back */
static void test_swept_box(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s, HEAD TANK("{'type':'sine','amplitude':[0.1,0],'frequency':1,'phase':-1.5707963267948966}"),
                          &e),
                     SPHSIM_OK);
    double lo[3] = { 0, 0, 0 }, hi[3] = { 1, 1, 0 };
    motion_swept_box(&s.tank_motion, 2, 100.0, 0.01, lo, hi);
    close_to(lo[0], -0.01, 1e-12, "lo x");
    close_to(hi[0], 1.21, 1e-6, "hi x: 2 A further");
    close_to(lo[1], -0.01, 1e-12, "lo y");
    assert_true(lo[2] == 0.0 && hi[2] == 0.0); /* 2D: z stays */
    double lo2[3] = { 0, 0, 0 }, hi2[3] = { 1, 1, 0 };
    motion_swept_box(&s.tank_motion, 2, 1.0, 0.01, lo2, hi2); /* the box does not depend on time.end */
    assert_memory_equal(lo, lo2, sizeof lo);
    assert_memory_equal(hi, hi2, sizeof hi);
    scene_free(&s);
}

/* invalid motions: the message names the JSON path */
static void test_errors(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        { TANK("{'type':'sinus','amplitude':[1,0],'frequency':1}"),
          "tank.motion[0].type: unknown value \"sinus\"; expected one of \"sine\", \"rotation\", \"constant\", "
          "\"table\"; did you mean \"sine\"?" },
        { TANK("{'amplitude':[1,0],'frequency':1}"), "tank.motion[0].type: required key missing" },
        { TANK("{'type':'sine','amplitude':[1,0],'frequency':0}"),
          "tank.motion[0].frequency: expected a number > 0, got 0" },
        { TANK("{'type':'sine','amplitude':[1,0,0],'frequency':1}"),
          "tank.motion[0].amplitude: expected an array of 2 numbers" },
        { TANK("{'type':'sine','amplitude':[1,0],'frequency':1,'velocity':[1,0]}"),
          "tank.motion[0].velocity: not a key of motion type \"sine\"" },
        { TANK("{'type':'constant','velocity':[1,0]},{'type':'constant','velocity':[1,0]}"),
          "tank.motion[0].end: required key missing (expected a time > start; only the last segment may" },
        { TANK("{'type':'constant','velocity':[1,0],'end':1},{'type':'constant','velocity':[1,0],'start':0.5}"),
          "tank.motion[1].start: 0.5 s is before the end of motion[0] (1 s)" },
        { TANK("{'type':'constant','velocity':[1,0],'start':1,'end':1}"),
          "tank.motion[0].end: expected a time > start (1 s), got 1 s" },
        { TANK("{'type':'rotation','amplitude':1,'frequency':1,'axis':[0,0,1]}"),
          "tank.motion[0].axis: not allowed in 2D" },
        { TANK("{'type':'rotation','amplitude':1,'frequency':1,'end':1},{'type':'rotation','amplitude':1,"
               "'frequency':1,'start':1,'center':[0,0]}"),
          "tank.motion[1].center: differs from motion[0]'s" },
        { TANK("{'type':'table','file':'/nonexistent/x.csv'}"),
          "tank.motion[0].file: cannot open '/nonexistent/x.csv'" },
        { TANK("{'type':'sine','amplitude':[1,0],'frequency':1,'speed':2}"),
          "tank.motion[0].speed: unknown key" },
        { "'tank':{'min':[0,0],'max':[1,1],'motion':{}}}", "tank.motion: expected an array of motion segments" },
        { "'tank':{'min':[0,0],'max':[1,1]},'objects':[{'shape':'circle','radius':0.1,'center':[0.5,0.7],"
          "'motion':[{'type':'constant'}]}]}",
          "objects[0].motion[0].velocity: required key missing" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        char json[1024];
        snprintf(json, sizeof json, "%s%s", HEAD, cases[k][0]);
        scene s;
        sphsim_error e;
        const sphsim_status st = load(&s, json, &e);
        if (st != SPHSIM_E_SCENE || !strstr(e.msg, cases[k][1]))
            fail_msg("case %zu: status %d, message\n  %s\nwant\n  %s", k, (int)st, e.msg, cases[k][1]);
        scene_free(&s);
    }
}

/* particle mode: the walls' fastest point sets the reference speed, and so the time step and the
 * runaway limit (a sphere pushed by a wall is not a runaway) */
static void test_particles_reference_speed(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s,
                          "{'format':1,'dimensions':2,'mode':'particles','gravity':[0,0],'tank':{'min':[0,0],'max':"
                          "[1,1],'motion':[{'type':'rotation','amplitude':10,'frequency':2,'end':1}]},'spheres':"
                          "{'groups':[{'count':4,'radius':0.05}]},'time':{'end':1}}",
                          &e),
                     SPHSIM_OK);
    /* omega_max = A 2 pi f at the start, times the tank's diagonal sqrt(2) m */
    close_to(s.v_ref, 10.0 * M_PI / 180.0 * 4.0 * M_PI * sqrt(2.0), 1e-6, "v_ref");
    close_to(s.max_speed, 100.0 * s.v_ref, 1e-9, "max_speed");
    scene_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sine),     cmocka_unit_test(test_rotation),  cmocka_unit_test(test_rotation_3d),
        cmocka_unit_test(test_segments), cmocka_unit_test(test_table),     cmocka_unit_test(test_swept_box),
        cmocka_unit_test(test_errors),   cmocka_unit_test(test_particles_reference_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
