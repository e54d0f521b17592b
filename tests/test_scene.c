/* test_scene: scene loading: defaults, derived values, --set overrides, the ready scenes in
 * scenes/, and invalid scenes (inline cases and the corpus tests/bad_scenes/). Run from the
 * repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "scene.h"
#include "../kernels/contact_shared.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* JSON written with ' for " (easier to read in C); converted before loading. */
static char *dq(const char *sq)
{
    char *t = strdup(sq);
    for (char *c = t; *c; c++)
        if (*c == '\'') *c = '"';
    return t;
}

static sphsim_status load(scene *s, const char *sq, const char *const *sets, int n_sets, sphsim_error *e)
{
    char *json = dq(sq);
    memset(e, 0, sizeof *e);
    sphsim_status st = scene_load_string(s, json, "t.json", sets, n_sets, e);
    free(json);
    return st;
}

static void assert_close(double got, double want, double rel)
{
    double tol = rel * fmax(fabs(want), 1e-300);
    if (!(fabs(got - want) <= tol)) fail_msg("got %.17g, want %.17g (rel tol %g)", got, want, rel);
}

static void assert_contains(const char *msg, const char *part)
{
    if (!strstr(msg, part)) fail_msg("message\n  \"%s\"\ndoes not contain\n  \"%s\"", msg, part);
}

static void assert_starts(const char *msg, const char *part)
{
    if (strncmp(msg, part, strlen(part)) != 0) fail_msg("message\n  \"%s\"\ndoes not start with\n  \"%s\"", msg, part);
}

#define HEAD2 "{'format':1,'dimensions':2,'tank':{'min':[0,0],'max':[1,1]},"
#define BLK "'blocks':[{'min':[0,0],'max':[0.4,0.5]}]"
#define TAIL "'time':{'end':1}}"
#define GH HEAD2 "'fluid':{" BLK ",'spacing':0.01},'gauges':["
#define GOOD2 HEAD2 "'fluid':{" BLK ",'spacing':0.01}," TAIL
#define PHEAD2 "{'format':1,'dimensions':2,'mode':'particles','tank':{'min':[0,0],'max':[1,1]},"
#define GROUP "{'count':100,'radius':0.01}"

/* ---- good scenes: defaults and derived values --------------------------------------------- */

static void test_defaults_sph_2d(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s, GOOD2, NULL, 0, &e), SPHSIM_OK);
    assert_int_equal(s.format, 1);
    assert_string_equal(s.name, "t");
    assert_string_equal(s.path, "t.json");
    assert_int_equal(s.dims, 2);
    assert_int_equal(s.mode, MODE_SPH);
    assert_true(s.gravity[0] == 0.0 && s.gravity[1] == -9.81 && s.gravity[2] == 0.0);
    assert_true(s.tank.min[2] == 0.0 && s.tank.max[2] == 0.0 && s.blocks[0].max[2] == 0.0);
    assert_int_equal(s.n_blocks, 1);
    assert_true(s.spacing == 0.01);
    assert_int_equal(s.particle_count, 0);
    assert_true(s.rest_density == 1000.0);
    assert_int_equal(s.kernel, KERNEL_WENDLAND);
    assert_true(s.h_factor == 1.3);
    assert_close(s.h, 0.013, 1e-15);
    assert_close(s.support, 0.026, 1e-15);
    assert_close(s.particle_mass, 1000.0 * 0.01 * 0.01, 1e-15);
    assert_int_equal(s.eos, EOS_TAIT);
    assert_true(s.gamma == 7.0);
    assert_close(s.fluid_height, 0.5, 1e-15);
    assert_close(s.sound_speed, 10.0 * sqrt(2.0 * 9.81 * 0.5), 1e-15);
    assert_int_equal(s.visc, VISC_ARTIFICIAL);
    assert_true(s.alpha == 0.02);
    assert_int_equal(s.density, DENSITY_SUMMATION);
    assert_true(s.diffusion == 0.0);
    assert_int_equal(s.boundary_layers, 3);
    assert_true(s.t_end == 1.0);
    assert_true(s.dt_fixed == 0.0);
    assert_true(s.cfl == 0.25);
    assert_close(s.max_speed, 10.0 * s.sound_speed, 1e-15);
    assert_close(s.out_interval, 0.02, 1e-15);
    assert_int_equal(s.fields, FIELD_POSITION | FIELD_VELOCITY | FIELD_DENSITY | FIELD_PRESSURE | FIELD_ID |
                                   FIELD_TYPE | FIELD_MASS);
    assert_true(s.cell_ratio == 1.0);
    /* counts: cell-centred lattice, floor(W/dx + 0.5) per axis (src/init.h) */
    assert_int_equal(s.n_fluid, 40 * 50);
    assert_true(s.n_boundary > 0);
    assert_int_equal(s.n_spheres, 0);
    assert_int_equal(s.n_total, s.n_fluid + s.n_boundary + s.n_spheres);
    assert_non_null(s.source_json);
    assert_non_null(s.resolved_json);
    scene_free(&s);
    assert_null(s.source_json);
    assert_null(s.resolved_json);
    scene_free(&s); /* twice is harmless */
}

/* dt_cfl = min(cfl h / c0, 0.25 sqrt(h/|g|)); whole steps per output interval. */
static void test_time_step_sph(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    assert_int_equal(load(&s, GOOD2, NULL, 0, &e), SPHSIM_OK);
    double h = 0.013, c0 = 10.0 * sqrt(2.0 * 9.81 * 0.5);
    double dt_cfl = fmin(0.25 * h / c0, 0.25 * sqrt(h / 9.81));
    assert_close(s.dt_cfl, dt_cfl, 1e-14);
    long spo = (long)ceil(0.02 / dt_cfl - 1e-9);
    assert_int_equal(s.steps_per_output, spo);
    assert_close(s.dt, 0.02 / spo, 1e-14);
    assert_true(s.dt <= s.dt_cfl);
    assert_int_equal(s.n_steps, 50 * spo);
    assert_close(s.dt * (double)s.steps_per_output, s.out_interval, 1e-14);
    scene_free(&s);

    /* weak gravity-free case: only the CFL term */
    const char *set0[] = { "gravity=[0,0]", "time.cfl=0.5", "output.interval=0.1" };
    assert_int_equal(load(&s, GOOD2, set0, 3, &e), SPHSIM_OK);
    c0 = 10.0 * sqrt(2.0 * 9.81 * 0.5); /* max(|g|, 9.81) */
    assert_close(s.sound_speed, c0, 1e-15);
    assert_close(s.dt_cfl, 0.5 * h / c0, 1e-14);
    spo = (long)ceil(0.1 / s.dt_cfl - 1e-9);
    assert_int_equal(s.steps_per_output, spo);
    assert_int_equal(s.n_steps, 10 * spo);
    scene_free(&s);

    /* strong gravity: 0.25 sqrt(h/|g|) is the limit */
    const char *set1[] = { "gravity=[0,-1e5]", "fluid.eos.sound_speed=1" };
    assert_int_equal(load(&s, GOOD2, set1, 2, &e), SPHSIM_OK);
    assert_close(s.dt_cfl, fmin(0.25 * h / 1.0, 0.25 * sqrt(h / 1e5)), 1e-14);
    assert_close(s.dt_cfl, 0.25 * sqrt(h / 1e5), 1e-14);
    scene_free(&s);
}

static void test_time_step_laplacian(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *sets[] = { "fluid.viscosity={'type':'laplacian','dynamic_viscosity':500}" };
    char *set = dq(sets[0]);
    const char *sp[] = { set };
    assert_int_equal(load(&s, GOOD2, sp, 1, &e), SPHSIM_OK);
    double h = 0.013, c0 = 10.0 * sqrt(2.0 * 9.81 * 0.5);
    assert_int_equal(s.visc, VISC_LAPLACIAN);
    assert_true(s.mu == 500.0);
    assert_true(s.alpha == 0.0);
    double dt_visc = 0.125 * h * h * 1000.0 / 500.0;
    assert_true(dt_visc < 0.25 * h / c0);
    assert_close(s.dt_cfl, dt_visc, 1e-14);
    scene_free(&s);
    free(set);
}

static void test_fixed_dt_and_zero_end(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    /* time.dt larger than the stability limit is allowed and used as the base step */
    const char *s1[] = { "time.dt=0.003", "output.interval=0.01" };
    assert_int_equal(load(&s, GOOD2, s1, 2, &e), SPHSIM_OK);
    assert_true(s.dt_fixed == 0.003);
    assert_true(s.dt_cfl < 0.003);
    assert_int_equal(s.steps_per_output, 4); /* ceil(0.01/0.003) */
    assert_close(s.dt, 0.0025, 1e-14);
    assert_int_equal(s.n_steps, 400);
    scene_free(&s);

    /* an exact multiple: no extra step from rounding */
    const char *s2[] = { "time.dt=0.001", "output.interval=0.01" };
    assert_int_equal(load(&s, GOOD2, s2, 2, &e), SPHSIM_OK);
    assert_int_equal(s.steps_per_output, 10);
    assert_int_equal(s.n_steps, 1000);
    scene_free(&s);

    /* dt longer than the interval: one step per interval of exactly the interval */
    const char *s3[] = { "time.dt=0.5", "output.interval=0.1" };
    assert_int_equal(load(&s, GOOD2, s3, 2, &e), SPHSIM_OK);
    assert_int_equal(s.steps_per_output, 1);
    assert_close(s.dt, 0.1, 1e-15);
    assert_int_equal(s.n_steps, 10);
    scene_free(&s);

    /* time.end = 0: interval 0, no steps, one snapshot */
    const char *s4[] = { "time.end=0" };
    assert_int_equal(load(&s, GOOD2, s4, 1, &e), SPHSIM_OK);
    assert_true(s.out_interval == 0.0);
    assert_int_equal(s.n_steps, 0);
    assert_int_equal(s.steps_per_output, 1);
    assert_close(s.dt, s.dt_cfl, 1e-15);
    scene_free(&s);
}

static void test_particle_count_2d(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *json = HEAD2 "'fluid':{'blocks':[{'min':[0,0],'max':[0.4,0.5]},{'min':[0.5,0],'max':[1,0.2]}],"
                             "'particle_count':3000,'smoothing_length_factor':2}," TAIL;
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    double vol = 0.4 * 0.5 + 0.5 * 0.2;
    double dx = sqrt(vol / 3000.0);
    assert_int_equal(s.particle_count, 3000);
    assert_close(s.spacing, dx, 1e-14);
    assert_close(s.h, 2.0 * dx, 1e-14);
    assert_close(s.support, 4.0 * dx, 1e-14);
    assert_close(s.particle_mass, 1000.0 * dx * dx, 1e-14);
    assert_close(s.fluid_height, 0.5, 1e-15);
    long n = (long)floor(0.4 / dx + 0.5) * (long)floor(0.5 / dx + 0.5) +
             (long)floor(0.5 / dx + 0.5) * (long)floor(0.2 / dx + 0.5);
    assert_int_equal(s.n_fluid, n);
    assert_true(labs(s.n_fluid - 3000) < 150);
    scene_free(&s);
}

static void test_particle_count_3d(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *json = "{'format':1,'dimensions':3,'tank':{'min':[0,0,0],'max':[1,0.5,1]},"
                       "'fluid':{'blocks':[{'min':[0,0,0],'max':[0.3,0.5,0.6]}],'particle_count':20000,"
                       "'rest_density':998,'smoothing_length':0.02,'kernel':'cubic_spline',"
                       "'eos':{'type':'linear','stiffness':400}},'time':{'end':0.5,'max_speed':30}}";
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    double dx = cbrt(0.3 * 0.5 * 0.6 / 20000.0);
    assert_close(s.spacing, dx, 1e-14);
    assert_true(s.h == 0.02);
    assert_close(s.h_factor, 0.02 / dx, 1e-14);
    assert_close(s.particle_mass, 998.0 * dx * dx * dx, 1e-14);
    assert_true(s.gravity[2] == -9.81 && s.gravity[1] == 0.0);
    assert_close(s.fluid_height, 0.6, 1e-15); /* along z */
    assert_int_equal(s.kernel, KERNEL_CUBIC);
    assert_int_equal(s.eos, EOS_LINEAR);
    assert_true(s.stiffness == 400.0);
    assert_close(s.sound_speed, 20.0, 1e-15);
    assert_true(s.gamma == 1.0);
    assert_true(s.max_speed == 30.0);
    assert_close(s.dt_cfl, fmin(0.25 * 0.02 / 20.0, 0.25 * sqrt(0.02 / 9.81)), 1e-14);
    scene_free(&s);
}

/* fluid.density: continuity takes diffusion 0.1 unless given, and the density is always written
 * (--resume restores it) */
static void test_density_continuity(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *sets[] = { "fluid.density.type=continuity", "output.fields=[\"position\"]" };
    assert_int_equal(load(&s, GOOD2, sets, 2, &e), SPHSIM_OK);
    assert_int_equal(s.density, DENSITY_CONTINUITY);
    assert_true(s.diffusion == 0.1);
    assert_true((output_fields(&s) & FIELD_DENSITY) != 0);
    scene_free(&s);
    const char *sets2[] = { "fluid.density.type=continuity", "fluid.density.diffusion=0" };
    assert_int_equal(load(&s, GOOD2, sets2, 2, &e), SPHSIM_OK);
    assert_true(s.diffusion == 0.0);
    scene_free(&s);
    const char *sets3[] = { "output.fields=[\"position\"]" };
    assert_int_equal(load(&s, GOOD2, sets3, 1, &e), SPHSIM_OK);
    assert_true((output_fields(&s) & FIELD_DENSITY) == 0);
    scene_free(&s);
}

/* gauges: the interval in whole steps (every step by default), a force gauge's point the tank's
 * centre by default, a height gauge's line from the floor, all in the resolved JSON */
static void test_gauges(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *json = GH "{'name':'p1','type':'pressure','point':[0.2,0.1],'interval':0.01},"
                          "{'name':'h.1','type':'height','point':[0.3,0.7]},{'name':'F-tank','type':'force'}]," TAIL;
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    assert_int_equal(s.n_gauges, 3);
    assert_string_equal(s.gauges[0].name, "p1");
    assert_int_equal(s.gauges[0].type, GAUGE_PRESSURE);
    assert_true(s.gauges[0].every == (long)floor(0.01 / s.dt + 0.5) && s.gauges[0].every > 1);
    assert_int_equal(s.gauges[1].every, 1);
    assert_true(s.gauges[1].point[0] == 0.3 && s.gauges[1].point[1] == 0.0);
    assert_true(s.gauges[2].point[0] == 0.5 && s.gauges[2].point[1] == 0.5);
    assert_string_equal(s.gauges[2].object, "tank");
    assert_non_null(strstr(s.resolved_json, "\"gauges\""));
    assert_non_null(strstr(s.resolved_json, "\"every_steps\""));
    scene_free(&s);
}

static void test_linear_eos_default_stiffness(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *sets[] = { "fluid.eos.type=linear", "fluid.kernel=poly6" };
    assert_int_equal(load(&s, GOOD2, sets, 2, &e), SPHSIM_OK);
    double c0 = 10.0 * sqrt(2.0 * 9.81 * 0.5);
    assert_close(s.stiffness, c0 * c0, 1e-14);
    assert_close(s.sound_speed, c0, 1e-14);
    assert_int_equal(s.kernel, KERNEL_POLY6);
    assert_close(s.support, 2.0 * s.h, 1e-15); /* poly6 too: support 2h */
    scene_free(&s);
}

static void test_fluid_height_axis(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *json = HEAD2 "'gravity':[-3,0],'fluid':{'blocks':[{'min':[0,0],'max':[0.2,0.9]},"
                             "{'min':[0.5,0.1],'max':[0.8,0.2]}],'spacing':0.02}," TAIL;
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    assert_close(s.fluid_height, 0.8, 1e-14); /* along x: 0.8 - 0 */
    assert_close(s.sound_speed, 10.0 * sqrt(2.0 * 9.81 * 0.8), 1e-14);
    scene_free(&s);
    const char *s2[] = { "gravity=[0,0]" };
    assert_int_equal(load(&s, json, s2, 1, &e), SPHSIM_OK);
    assert_close(s.fluid_height, 0.9, 1e-14); /* along y when g = 0 */
    scene_free(&s);
}

static void test_particles_mode(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *json = PHEAD2 "'spheres':{'groups':[{'count':100,'radius':0.01,'region':{'min':[0.2,0.2],"
                              "'max':[0.6,0.6]}},{'count':10,'radius':0.02,'velocity':[1,0],'velocity_jitter':0.1,"
                              "'placement':'random','seed':7,'density':2500}]}," TAIL;
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    assert_int_equal(s.mode, MODE_PARTICLES);
    assert_int_equal(s.n_groups, 2);
    assert_int_equal(s.groups[0].count, 100);
    assert_true(s.groups[0].density == 1000.0);
    assert_int_equal(s.groups[0].placement, PLACE_LATTICE);
    assert_true(s.groups[0].seed == 1);
    assert_true(s.groups[0].velocity[0] == 0.0 && s.groups[0].velocity_jitter == 0.0);
    assert_true(s.groups[0].region.min[0] == 0.2 && s.groups[0].region.max[1] == 0.6);
    assert_true(s.groups[1].region.min[0] == 0.0 && s.groups[1].region.max[0] == 1.0); /* default: the tank */
    assert_int_equal(s.groups[1].placement, PLACE_RANDOM);
    assert_true(s.groups[1].seed == 7);
    assert_true(s.groups[1].density == 2500.0);
    assert_true(s.restitution == 0.5);
    assert_int_equal(s.contact_iterations, 4);
    assert_close(s.support, 0.04 * (1 + CONTACT_NEAR), 1e-15); /* the widest listed pair */
    double v_ref = fmax(sqrt(2.0 * 9.81 * 1.0), 1.0 + sqrt(2.0) * 0.1);
    assert_close(s.v_ref, v_ref, 1e-14);
    assert_close(s.dt_cfl, 0.25 * 0.01 / v_ref, 1e-14);
    assert_close(s.max_speed, 100.0 * v_ref, 1e-14);
    assert_int_equal(s.fields, FIELD_POSITION | FIELD_VELOCITY | FIELD_DENSITY | FIELD_PRESSURE | FIELD_ID |
                                   FIELD_TYPE | FIELD_RADIUS | FIELD_MASS | FIELD_ANGULAR_VELOCITY);
    assert_int_equal(s.n_spheres, 110);
    assert_int_equal(s.n_fluid, 0);
    assert_int_equal(s.n_boundary, 0);
    assert_int_equal(s.n_total, 110);
    scene_free(&s);

    /* a fast group sets the reference speed; zero gravity and rest give the 1e-3 floor */
    const char *s1[] = { "spheres.groups[1].velocity=[30,40]", "spheres.groups[1].velocity_jitter=0" };
    assert_int_equal(load(&s, json, s1, 2, &e), SPHSIM_OK);
    assert_close(s.v_ref, 50.0, 1e-14);
    scene_free(&s);
    const char *s2[] = { "gravity=[0,0]", "spheres.groups[1].velocity=[0,0]", "spheres.groups[1].velocity_jitter=0" };
    assert_int_equal(load(&s, json, s2, 3, &e), SPHSIM_OK);
    assert_close(s.v_ref, 1e-3, 1e-14);
    assert_close(s.dt_cfl, 0.25 * 0.01 / 1e-3, 1e-14);
    scene_free(&s);
}

/* Contact coefficients: friction 0 and the walls like the spheres by default; "walls" and
 * "pairs" (either end "walls", coefficients defaulting to the scene's); the lattice's pitch, or
 * its packing: pitch = d (pi / (6 phi))^(1/3) in 3D, d (pi / (4 phi))^(1/2) in 2D. */
static void test_contact_keys(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *plain = PHEAD2 "'spheres':{'groups':[" GROUP "]}," TAIL;
    assert_int_equal(load(&s, plain, NULL, 0, &e), SPHSIM_OK);
    assert_true(s.friction == 0.0 && s.wall_friction == 0.0 && s.wall_restitution == 0.5);
    assert_int_equal(s.n_pairs, 0);
    assert_close(s.groups[0].pitch, 0.0202, 1e-15);
    assert_true(s.groups[0].packing == 0.0);
    scene_free(&s);
    const char *json =
        PHEAD2 "'spheres':{'groups':[" GROUP ",{'count':10,'radius':0.02,'packing':0.5}],'restitution':0.4,"
               "'friction':0.3,'walls':{'friction':0.7},'pairs':[{'groups':[1,0],'friction':0.1},"
               "{'groups':['walls',1],'restitution':0.9},{'groups':[1,1]}]}," TAIL;
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    assert_true(s.restitution == 0.4 && s.friction == 0.3);
    assert_true(s.wall_restitution == 0.4 && s.wall_friction == 0.7);
    assert_int_equal(s.n_pairs, 3);
    assert_true(s.pairs[0].a == 1 && s.pairs[0].b == 0 && s.pairs[0].restitution == 0.4 && s.pairs[0].friction == 0.1);
    assert_true(s.pairs[1].a == 1 && s.pairs[1].b == SCENE_WALLS && s.pairs[1].restitution == 0.9 &&
                s.pairs[1].friction == 0.7);
    assert_true(s.pairs[2].a == 1 && s.pairs[2].b == 1 && s.pairs[2].friction == 0.3);
    assert_close(s.groups[1].pitch, 0.04 * sqrt(M_PI / 2.0), 1e-15);
    scene_free(&s);
    const char *p3 = "{'format':1,'dimensions':3,'mode':'particles','tank':{'min':[0,0,0],'max':[2,2,2]},"
                     "'spheres':{'groups':[{'count':8,'radius':0.5,'packing':0.3665191429188092}]}," TAIL;
    /* a 2 m region holds 8 spheres of 1 m at the densest packing, one at pitch 1.126 m */
    assert_int_equal(load(&s, p3, NULL, 0, &e), SPHSIM_E_SCENE);
    assert_non_null(strstr(e.msg, "do not fit on a lattice"));
    const char *p3b = "{'format':1,'dimensions':3,'mode':'particles','tank':{'min':[0,0,0],'max':[4,4,4]},"
                      "'spheres':{'groups':[{'count':27,'radius':0.5,'packing':0.3665191429188092}]}," TAIL;
    assert_int_equal(load(&s, p3b, NULL, 0, &e), SPHSIM_OK);
    assert_close(s.groups[0].pitch, cbrt(1 / 0.7), 1e-14); /* LAMMPS's "lattice sc 0.7" for d = 1 */
    scene_free(&s);
    /* friction at most 10 (a 3D slot's tangential word is a fraction of mu lambda_n), wherever
     * it is given, the failing key named */
    const char *mu_hi[] = { PHEAD2 "'spheres':{'groups':[" GROUP "],'friction':10.5}," TAIL,
                            PHEAD2 "'spheres':{'groups':[" GROUP "],'walls':{'friction':1e4}}," TAIL,
                            PHEAD2 "'spheres':{'groups':[" GROUP "],'pairs':[{'groups':[0,0],'friction':11}]}," TAIL };
    const char *key[] = { "spheres.friction", "spheres.walls.friction", "spheres.pairs[0].friction" };
    for (int k = 0; k < 3; ++k) {
        assert_int_equal(load(&s, mu_hi[k], NULL, 0, &e), SPHSIM_E_SCENE);
        if (!strstr(e.msg, key[k]) || !strstr(e.msg, "[0, 10]")) fail_msg("%s: %s", key[k], e.msg);
    }
    const char *mu_10 = PHEAD2 "'spheres':{'groups':[" GROUP "],'friction':10}," TAIL;
    assert_int_equal(load(&s, mu_10, NULL, 0, &e), SPHSIM_OK);
    assert_true(s.friction == 10.0);
    scene_free(&s);
}

static void test_output_fields_and_name(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *json = HEAD2 "'name':'my run','fluid':{" BLK ",'spacing':0.01},"
                             "'output':{'interval':0.25,'fields':['position','id','radius']},'grid':{'cell_ratio':0.5},"
                             "'time':{'end':1}}";
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    assert_string_equal(s.name, "my run");
    assert_int_equal(s.fields, FIELD_POSITION | FIELD_ID | FIELD_RADIUS);
    assert_true(s.out_interval == 0.25);
    assert_true(s.cell_ratio == 0.5);
    assert_int_equal(s.n_steps, 4 * s.steps_per_output);
    scene_free(&s);
}

/* An output interval longer than the run (a short trial run of a scene, --set time.end=...): the
 * interval becomes time.end, snapshots at the start and the end, and a note says so. */
static void test_interval_longer_than_run(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *json = HEAD2 "'fluid':{" BLK ",'spacing':0.01},'output':{'interval':2},'time':{'end':0.5}}";
    assert_int_equal(load(&s, json, NULL, 0, &e), SPHSIM_OK);
    assert_true(s.out_interval == 0.5);
    assert_int_equal(s.n_steps, s.steps_per_output);
    assert_non_null(strstr(s.notes, "output.interval: 2 s is longer than time.end (0.5 s)"));
    scene_free(&s);
    const char *fits = HEAD2 "'fluid':{" BLK ",'spacing':0.01},'output':{'interval':0.25},'time':{'end':0.5}}";
    assert_int_equal(load(&s, fits, NULL, 0, &e), SPHSIM_OK);
    assert_string_equal(s.notes, "");
    scene_free(&s);
}

/* resolved_json holds every key; without "derived" and "provenance" it loads to the same scene. */
static void test_resolved_round_trip(void **state)
{
    (void)state;
    const char *cases[] = {
        GOOD2,
        HEAD2 "'fluid':{'blocks':[{'min':[0,0],'max':[0.4,0.5]}],'particle_count':1234,'smoothing_length':0.03,"
              "'eos':{'type':'linear'},'viscosity':{'type':'laplacian'}},'time':{'end':0.3,'dt':1e-4}}",
        PHEAD2 "'spheres':{'groups':[" GROUP "],'restitution':0.9},'time':{'end':0.5}}",
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        scene a, b;
        sphsim_error e;
        assert_int_equal(load(&a, cases[c], NULL, 0, &e), SPHSIM_OK);
        cJSON *r = cJSON_Parse(a.resolved_json);
        assert_non_null(r);
        cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "derived");
        assert_non_null(d);
        assert_true(cJSON_GetObjectItemCaseSensitive(d, "dt_s")->valuedouble == a.dt);
        assert_true(cJSON_GetObjectItemCaseSensitive(d, "n_total")->valuedouble == (double)a.n_total);
        assert_non_null(cJSON_GetObjectItemCaseSensitive(r, "provenance"));
        assert_non_null(cJSON_GetObjectItemCaseSensitive(r, "time"));
        assert_non_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "time"), "max_speed"));
        cJSON_Delete(r);
        /* cut the text (cJSON's own printing may round the last bit): "derived" and
         * "provenance" come last */
        char *again = strdup(a.resolved_json);
        char *cut = strstr(again, ",\n\t\"derived\":");
        assert_non_null(cut);
        strcpy(cut, "}");
        assert_int_equal(scene_load_string(&b, again, "t.json", NULL, 0, &e), SPHSIM_OK);
        free(again);
        assert_string_equal(a.name, b.name);
        assert_int_equal(a.mode, b.mode);
        assert_true(a.spacing == b.spacing && a.h == b.h && a.sound_speed == b.sound_speed);
        assert_true(a.stiffness == b.stiffness && a.gamma == b.gamma && a.mu == b.mu && a.alpha == b.alpha);
        if (!(a.dt == b.dt && a.dt_cfl == b.dt_cfl && a.max_speed == b.max_speed))
            fail_msg("case %zu: dt %.17g %.17g, dt_cfl %.17g %.17g, max_speed %.17g %.17g", c, a.dt, b.dt, a.dt_cfl,
                     b.dt_cfl, a.max_speed, b.max_speed);
        assert_true(a.out_interval == b.out_interval && a.fields == b.fields);
        assert_int_equal(a.n_steps, b.n_steps);
        assert_int_equal(a.n_total, b.n_total);
        assert_true(a.restitution == b.restitution);
        scene_free(&a);
        scene_free(&b);
    }
}

/* ---- files -------------------------------------------------------------------------------- */

static void test_file_source_and_io_errors(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    char path[] = "/tmp/test_scene_XXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    char *json = dq(GOOD2);
    FILE *f = fdopen(fd, "w");
    fputs(json, f);
    fputs("\n", f);
    fclose(f);
    assert_int_equal(scene_load(&s, path, NULL, 0, &e), SPHSIM_OK);
    assert_string_equal(s.path, path);
    assert_int_equal(strncmp(s.source_json, json, strlen(json)), 0);
    assert_int_equal(strlen(s.source_json), strlen(json) + 1);
    char base[64];
    snprintf(base, sizeof base, "%s", strrchr(path, '/') + 1);
    base[strlen(base) - 5] = '\0';
    assert_string_equal(s.name, base); /* file name without .json */
    scene_free(&s);
    remove(path);
    free(json);

    memset(&e, 0, sizeof e);
    assert_int_equal(scene_load(&s, "/nonexistent/dir/x.json", NULL, 0, &e), SPHSIM_E_IO);
    assert_contains(e.msg, "/nonexistent/dir/x.json");
    assert_contains(e.msg, "No such file or directory");
    assert_null(s.source_json);

    assert_int_equal(scene_load(&s, "/tmp", NULL, 0, &e), SPHSIM_E_IO);
    assert_contains(e.msg, "/tmp");
    assert_contains(e.msg, "Is a directory");
}

static void test_syntax_errors(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *bad = "{\n  \"format\": 1,\n  \"dimensions\": 2\n  \"tank\": {}\n}\n";
    assert_int_equal(scene_load_string(&s, bad, "x.json", NULL, 0, &e), SPHSIM_E_SCENE);
    assert_contains(e.msg, "x.json:4:3:");
    assert_contains(e.msg, "line 4, column 3");
    assert_contains(e.msg, ">>>\"tank\"");

    const char *trailing = "{\"format\": 1},";
    assert_int_equal(scene_load_string(&s, trailing, "y.json", NULL, 0, &e), SPHSIM_E_SCENE);
    assert_contains(e.msg, "y.json:1:14:");

    const char *trunc = "{\n \"format\": 1,\n \"dimensions\": 2,\n \"tank\": {\"min\": [0,";
    assert_int_equal(scene_load_string(&s, trunc, "z.json", NULL, 0, &e), SPHSIM_E_SCENE);
    assert_contains(e.msg, "z.json:4:");
    assert_contains(e.msg, "unexpected end of file");

    assert_int_equal(scene_load_string(&s, "", "e.json", NULL, 0, &e), SPHSIM_E_SCENE);
    assert_contains(e.msg, "e.json: the file is empty");

    assert_int_equal(scene_load_string(&s, "{'format':1,}", "q.json", NULL, 0, &e), SPHSIM_E_SCENE);
    assert_contains(e.msg, "q.json:1:");
    assert_contains(e.msg, "{'");
}

/* Every ready scene in scenes/ validates. */
static void test_ready_scenes(void **state)
{
    (void)state;
    DIR *d = opendir("scenes");
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "scenes/%s", de->d_name);
        scene s;
        sphsim_error e;
        memset(&e, 0, sizeof e);
        sphsim_status st = scene_load(&s, path, NULL, 0, &e);
        if (st != SPHSIM_OK) fail_msg("%s: %s", path, e.msg);
        assert_true(s.n_total > 0);
        assert_true(s.n_steps > 0 && s.dt > 0);
        assert_true(s.n_total < 2000000);
        if (strcmp(de->d_name, "default.json") == 0) {
            assert_int_equal(s.dims, 2);
            assert_true(s.n_fluid >= 4000 && s.n_fluid <= 8000);
            assert_true(s.t_end == 1.0);
            assert_int_equal(s.kernel, KERNEL_WENDLAND);
            assert_int_equal(s.eos, EOS_TAIT);
            assert_int_equal(s.visc, VISC_ARTIFICIAL);
        }
        if (strcmp(de->d_name, "dam_break_3d.json") == 0) {
            assert_int_equal(s.dims, 3);
            assert_true(s.n_fluid >= 50000 && s.n_fluid <= 100000);
            assert_true(s.t_end == 2.0);
        }
        if (strcmp(de->d_name, "poly6_dam_break_2d.json") == 0) {
            assert_int_equal(s.kernel, KERNEL_POLY6);
            assert_int_equal(s.eos, EOS_LINEAR);
            assert_int_equal(s.visc, VISC_LAPLACIAN);
        }
        if (strncmp(de->d_name, "spheres_", 8) == 0) {
            assert_int_equal(s.mode, MODE_PARTICLES);
            assert_true(s.restitution > 0 && s.restitution <= 1 && s.friction > 0);
        }
        scene_free(&s);
        n++;
    }
    closedir(d);
    assert_true(n >= 7);
}

/* tests/bad_scenes/expected.tsv: file, exit code (3 invalid scene, 4 unreadable), message part. */
static int exit_code(sphsim_status st)
{
    switch (st) {
    case SPHSIM_OK: return 0;
    case SPHSIM_E_USAGE: return 2;
    case SPHSIM_E_SCENE: return 3;
    case SPHSIM_E_IO: return 4;
    case SPHSIM_E_NOMEM: return 4;
    default: return 1;
    }
}

static void test_bad_corpus(void **state)
{
    (void)state;
    FILE *f = fopen("tests/bad_scenes/expected.tsv", "r");
    assert_non_null(f);
    char line[1024];
    int n = 0;
    char listed[256][128];
    int n_listed = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *file = strtok(line, "\t"), *code = strtok(NULL, "\t"), *part = strtok(NULL, "");
        assert_non_null(file);
        assert_non_null(code);
        assert_non_null(part);
        char path[512];
        snprintf(path, sizeof path, "tests/bad_scenes/%s", file);
        scene s;
        sphsim_error e;
        memset(&e, 0, sizeof e);
        sphsim_status st = scene_load(&s, path, NULL, 0, &e);
        if (exit_code(st) != atoi(code)) fail_msg("%s: exit code %d, want %s (%s)", file, exit_code(st), code, e.msg);
        if (!strstr(e.msg, part)) fail_msg("%s: message \"%s\" does not contain \"%s\"", file, e.msg, part);
        if (n_listed < 256) snprintf(listed[n_listed++], 128, "%s", file);
        n++;
    }
    fclose(f);
    assert_true(n >= 25);

    /* every corpus file has an entry */
    DIR *d = opendir("tests/bad_scenes");
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        int found = 0;
        for (int i = 0; i < n_listed; i++) found |= strcmp(listed[i], de->d_name) == 0;
        if (!found) fail_msg("tests/bad_scenes/%s has no line in expected.tsv", de->d_name);
    }
    closedir(d);
}

/* ---- --set -------------------------------------------------------------------------------- */

static void test_set_overrides(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    const char *sets[] = {
        "fluid.spacing=0.02",            /* number */
        "fluid.kernel=cubic_spline",     /* string without quotes */
        "fluid.eos.type=\"linear\"",     /* quoted string; creates the eos object */
        "gravity=[0, -5]",               /* array */
        "tank.max[1]=2",                 /* index */
        "fluid.blocks[0].min=[0.1,0.1]", /* array inside an array element */
        "fluid.blocks[0].max[0]=0.5",    /* index inside an array element */
        "grid.cell_ratio=2",             /* creates a section */
        "time.dt=1e-3",                  /* creates a key */
        "name=from set",                 /* string with a space */
        "time.end=0.5",
        "time.end=0.4", /* later wins */
    };
    int n = (int)(sizeof sets / sizeof sets[0]);
    assert_int_equal(load(&s, GOOD2, sets, n, &e), SPHSIM_OK);
    assert_true(s.spacing == 0.02);
    assert_int_equal(s.kernel, KERNEL_CUBIC);
    assert_int_equal(s.eos, EOS_LINEAR);
    assert_true(s.gravity[0] == 0.0 && s.gravity[1] == -5.0);
    assert_true(s.tank.max[1] == 2.0 && s.tank.max[0] == 1.0);
    assert_true(s.blocks[0].min[0] == 0.1 && s.blocks[0].min[1] == 0.1);
    assert_true(s.blocks[0].max[0] == 0.5 && s.blocks[0].max[1] == 0.5);
    assert_true(s.cell_ratio == 2.0);
    assert_true(s.dt_fixed == 1e-3);
    assert_string_equal(s.name, "from set");
    assert_true(s.t_end == 0.4);
    assert_int_equal(s.n_fluid, 20 * 20);
    /* the source stays as read; the resolved parameters record the overrides */
    assert_null(strstr(s.source_json, "cubic_spline"));
    assert_non_null(strstr(s.resolved_json, "cubic_spline"));
    assert_non_null(strstr(s.resolved_json, "tank.max[1]=2"));
    scene_free(&s);

    /* a whole object, and a value that is not valid JSON becomes a string */
    char *obj = dq("fluid.viscosity={'type':'laplacian','dynamic_viscosity':0.5}");
    const char *s2[] = { obj, "fluid.eos.type=tait" };
    assert_int_equal(load(&s, GOOD2, s2, 2, &e), SPHSIM_OK);
    assert_int_equal(s.visc, VISC_LAPLACIAN);
    assert_true(s.mu == 0.5);
    scene_free(&s);
    free(obj);
}

static void test_set_errors(void **state)
{
    (void)state;
    scene s;
    sphsim_error e;
    struct {
        const char *set;
        sphsim_status st;
        const char *part1, *part2;
    } cases[] = {
        { "tank.max[2]=1", SPHSIM_E_SCENE, "--set tank.max[2]=1", "index 2 is beyond the end of tank.max (2 entries)" },
        { "fluid.blocks[1].min=[0,0]", SPHSIM_E_SCENE, "index 1 is beyond the end of fluid.blocks (1 entries)", "" },
        { "fluid.spacing.x=1", SPHSIM_E_SCENE, "fluid.spacing is 0.01, not an object", "" },
        { "tank[0]=1", SPHSIM_E_SCENE, "tank is an object, not an array", "" },
        { "fluid.eos[0]=1", SPHSIM_E_SCENE, "fluid.eos does not exist, so it cannot be indexed", "" },
        { "fluid.spacing", SPHSIM_E_USAGE, "--set fluid.spacing: expected path=value", "" },
        { "=5", SPHSIM_E_USAGE, "expected path=value", "" },
        { "fluid..spacing=1", SPHSIM_E_USAGE, "empty key", "" },
        { "tank.max[x]=1", SPHSIM_E_USAGE, "expected an index like [0]", "" },
        { "[0]=1", SPHSIM_E_USAGE, "a path starts with a key", "" },
        /* values set by --set get the same checks, and say where they came from */
        { "fluid.spacing=-1", SPHSIM_E_SCENE, "fluid.spacing: expected a number > 0, got -1",
          "(value from --set fluid.spacing=-1)" },
        { "fluid.spacing=abc", SPHSIM_E_SCENE, "fluid.spacing: expected a number > 0, got the string \"abc\"",
          "--set" },
        { "fluid.spacing=1e400", SPHSIM_E_SCENE, "fluid.spacing: expected a number > 0, got a number too large",
          "--set" },
        { "fluid.kernal=wendland", SPHSIM_E_SCENE, "fluid.kernal: unknown key; did you mean \"kernel\"?", "--set" },
        { "fluid.kernel=wendlnd", SPHSIM_E_SCENE,
          "fluid.kernel: unknown value \"wendlnd\"; expected one of \"poly6\", \"cubic_spline\", \"wendland\"; did you "
          "mean \"wendland\"?",
          "--set fluid.kernel=wendlnd" },
        { "tank.max[0]=-1", SPHSIM_E_SCENE, "tank.max[0]: must be greater than min[0]", "--set tank.max[0]=-1" },
        { "fluid.blocks[0]={}", SPHSIM_E_SCENE, "fluid.blocks[0].min: required key missing",
          "--set fluid.blocks[0]={}" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = { cases[i].set };
        memset(&e, 0, sizeof e);
        sphsim_status st = load(&s, GOOD2, sets, 1, &e);
        if (st != cases[i].st) fail_msg("--set %s: status %d, want %d (%s)", cases[i].set, st, cases[i].st, e.msg);
        assert_contains(e.msg, cases[i].part1);
        assert_contains(e.msg, cases[i].part2);
        assert_null(s.source_json);
    }
    /* an error unrelated to the override does not blame it */
    const char *sets[] = { "grid.cell_ratio=2" };
    assert_int_equal(load(&s, HEAD2 "'fluid':{" BLK ",'spacing':0}," TAIL, sets, 1, &e), SPHSIM_E_SCENE);
    assert_null(strstr(e.msg, "--set"));
}

/* ---- invalid scenes: the first error, naming its JSON path ---------------------------------- */

typedef struct bad_case {
    const char *json;
    const char *start; /* the message starts with this (JSON path and problem) */
    const char *part;  /* and contains this */
} bad_case;

static const bad_case BAD[] = {
    { HEAD2 "'fluid':{" BLK ",'spacing':-0.01}," TAIL, "fluid.spacing: expected a number > 0, got -0.01", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'kernal':'wendland'}," TAIL,
      "fluid.kernal: unknown key; did you mean \"kernel\"?", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'kernel':'wendlnd'}," TAIL,
      "fluid.kernel: unknown value \"wendlnd\"; expected one of \"poly6\", \"cubic_spline\", \"wendland\"; did you "
      "mean \"wendland\"?",
      "" },
    { "{'format':2,'dimensions':2}", "format: unsupported scene format 2; this sphsim reads format 1", "" },
    { "{'format':'1','dimensions':2}", "format: expected the number 1, got the string \"1\"", "" },
    { "{'dimensions':2}", "format: required key missing", "" },
    { "{'format':1,'dimensions':4}", "dimensions: expected 2 or 3, got 4", "" },
    { "{'format':1,'dimensions':2,'time':{'end':1}}", "tank: required key missing", "" },
    { "{'format':1,'dimensions':2,'tank':{'min':[0,0],'max':[1,1,1]}}",
      "tank.max: expected an array of 2 numbers (\"dimensions\" is 2), got an array of 3 entries", "" },
    { "{'format':1,'dimensions':2,'tank':{'min':[0,0],'max':[1,0]}}",
      "tank.max[1]: must be greater than min[1] (0 m), got 0 m; the tank is empty along y", "" },
    { "{'format':1,'dimensions':2,'tank':{'min':[0,0],'max':[1e400,1]}}",
      "tank.max[0]: expected a number, got a number too large in magnitude", "" },
    { HEAD2 "'fluid':{'blocks':[{'min':[0,0],'max':[1.5,0.5]}],'spacing':0.01}," TAIL,
      "fluid.blocks[0].max[0]: 1.5 m is outside the tank (tank.max[0] = 1 m)", "" },
    { HEAD2
      "'fluid':{'blocks':[{'min':[0,0],'max':[0.2,0.5]},{'min':[0.5,-0.1],'max':[0.7,0.5]}],'spacing':0.01}," TAIL,
      "fluid.blocks[1].min[1]: -0.1 m is outside the tank (tank.min[1] = 0 m)", "" },
    { HEAD2 "'fluid':{'blocks':[{'min':[0,0],'max':[0.4,0.5]},{'min':[0.3,0.3],'max':[0.7,0.6]}],'spacing':0.01}," TAIL,
      "fluid.blocks[1]: overlaps fluid.blocks[0]", "" },
    { HEAD2 "'fluid':{'blocks':[{'min':[0,0.5],'max':[0.4,0.5]}],'spacing':0.01}," TAIL,
      "fluid.blocks[0].max[1]: must be greater than min[1] (0.5 m), got 0.5 m; the block is empty", "" },
    { HEAD2 "'fluid':{'blocks':[],'spacing':0.01}," TAIL, "fluid.blocks: expected 1 to 64 fluid blocks, got 0", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':1e400}," TAIL,
      "fluid.spacing: expected a number > 0, got a number too large in magnitude", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':2}," TAIL,
      "fluid.spacing: spacing 2 m gives no particle along x in "
      "fluid.blocks[0] (0.4 m wide)",
      "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':1e-6}," TAIL, "fluid.spacing: spacing 1e-06 m gives 2e+11 fluid particles",
      "more than the limit of 2e9" },
    { HEAD2 "'fluid':{" BLK ",'particle_count':1e12}," TAIL,
      "fluid.particle_count: expected an integer in 1..2000000000, got 1000000000000", "" },
    { HEAD2 "'fluid':{" BLK ",'particle_count':0}," TAIL,
      "fluid.particle_count: expected an integer in 1..2000000000, got 0", "" },
    { HEAD2 "'fluid':{" BLK ",'particle_count':2.5}," TAIL, "fluid.particle_count: expected an integer", "got 2.5" },
    { HEAD2 "'fluid':{" BLK ",'particle_count':1000,'spacing':0.01}," TAIL,
      "fluid.particle_count: not allowed together with fluid.spacing", "" },
    { HEAD2 "'fluid':{" BLK "}," TAIL, "fluid.spacing: required key missing; give either \"spacing\"", "" },
    { HEAD2 "'fluid':{'spacing':0.01}," TAIL, "fluid.blocks: required key missing", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'rest_density':0}," TAIL,
      "fluid.rest_density: expected a number > 0, got 0", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'smoothing_length':0.1,'smoothing_length_factor':1.3}," TAIL,
      "fluid.smoothing_length_factor: not allowed together with fluid.smoothing_length", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'smoothing_length':0.5}," TAIL,
      "fluid.smoothing_length: 0.5 m is 50 times the particle spacing (0.01 m)", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'smoothing_length_factor':10}," TAIL,
      "fluid.smoothing_length_factor: expected a number in [0.5, 4], got 10", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'eos':{'stiffness':100}}," TAIL,
      "fluid.eos.stiffness: only valid with \"type\": \"linear\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'eos':{'type':'linear','gamma':7}}," TAIL,
      "fluid.eos.gamma: only valid with \"type\": \"tait\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'eos':{'gamma':0.5}}," TAIL,
      "fluid.eos.gamma: expected a number >= 1, got 0.5", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'eos':{'sound_speed':-3}}," TAIL,
      "fluid.eos.sound_speed: expected a number > 0, got -3", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'eos':{'type':'stiff'}}," TAIL,
      "fluid.eos.type: unknown value \"stiff\"; expected one of \"tait\", \"linear\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'eos':'tait'}," TAIL,
      "fluid.eos: expected an object, got the string \"tait\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'viscosity':{'type':'laplacian','alpha':0.1}}," TAIL,
      "fluid.viscosity.alpha: only valid with \"type\": \"artificial\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'viscosity':{'dynamic_viscosity':0.1}}," TAIL,
      "fluid.viscosity.dynamic_viscosity: only valid with \"type\": \"laplacian\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'viscosity':{'alpha':-0.1}}," TAIL,
      "fluid.viscosity.alpha: expected a number in [0, 10], got -0.1", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'density':{'diffusion':0.1}}," TAIL,
      "fluid.density.diffusion: only valid with \"type\": \"continuity\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'density':{'type':'continuity','diffusion':1.5}}," TAIL,
      "fluid.density.diffusion: expected a number in [0, 1], got 1.5", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'density':{'type':'integrated'}}," TAIL,
      "fluid.density.type: unknown value \"integrated\"; expected one of \"summation\", \"continuity\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'density':{'typ':'continuity'}}," TAIL,
      "fluid.density.typ: unknown key; did you mean \"type\"?", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'boundary_layers':9}," TAIL,
      "fluid.boundary_layers: expected an integer in 1..8, got 9", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'boundary_layers':true}," TAIL,
      "fluid.boundary_layers: expected an integer in 1..8, got true", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01,'spacing':0.02}," TAIL, "fluid.spacing: duplicate key", "" },
    { HEAD2 "'fluid':{'blocks':[{'min':[0,'a'],'max':[0.4,0.5]}],'spacing':0.01}," TAIL,
      "fluid.blocks[0].min[1]: expected a number, got the string \"a\"", "" },
    { HEAD2 "'fluid':{'blocks':[{'min':[0,0],'max':[0.4,0.5],'mx':1}],'spacing':0.01}," TAIL,
      "fluid.blocks[0].mx: unknown key; did you mean \"max\"?", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01}}", "time: required key missing", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{}}", "time.end: required key missing", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':-1}}", "time.end: expected a number >= 0, got -1", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1,'cfl':1.5}}",
      "time.cfl: expected a number in (0, 1], got 1.5", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1,'dt':0}}", "time.dt: expected a number > 0, got 0", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1,'max_speed':0}}",
      "time.max_speed: expected a number > 0, got 0", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1,'dt':1e-12}}",
      "time.dt: the run needs 1e+12 steps of 1e-12 s", "at most 1e9" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1,'ned':2}}",
      "time.ned: unknown key; did you mean \"end\"?", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1},'output':{'fields':['position','velocty']}}",
      "output.fields[1]: unknown value \"velocty\"", "did you mean \"velocity\"?" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1},'output':{'fields':['velocity']}}",
      "output.fields: must include \"position\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1},'output':{'fields':['position','id','id']}}",
      "output.fields[2]: \"id\" is listed twice", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'time':{'end':1},'grid':{'cell_ratio':5}}",
      "grid.cell_ratio: expected a number in (0, 4], got 5", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'spheres':{'groups':[" GROUP "]}," TAIL,
      "spheres: not allowed in mode \"sph\" (the default mode)", "" },
    { HEAD2 "'spacing':0.01,'fluid':{" BLK ",'spacing':0.01}," TAIL,
      "spacing: unknown key here; did you mean \"fluid.spacing\"?", "" },
    { "{'format':1,'dimensions':2,'tnak':{'min':[0,0],'max':[1,1]}," TAIL, "tnak: unknown key; did you mean \"tank\"?",
      "" },
    { "{'format':1,'dimensions':2,'mode':'sp','tank':{'min':[0,0],'max':[1,1]}," TAIL,
      "mode: unknown value \"sp\"; expected one of \"sph\", \"particles\"; did you mean \"sph\"?", "" },
    { "{'format':1,'dimensions':2,'name':5}", "name: expected a string, got 5", "" },
    { "{'format':1,'dimensions':2,'name':''}", "name: expected a string of 1 to 127 characters", "" },
    { HEAD2 "'gravity':'down','fluid':{" BLK ",'spacing':0.01}," TAIL,
      "gravity: expected an array of 2 numbers (\"dimensions\" is 2), got the string \"down\"", "" },
    { "[1,2]", "(top level): expected a JSON object at the top level of the scene, got an array of 2 entries", "" },
    { PHEAD2 "'fluid':{" BLK ",'spacing':0.01},'spheres':{'groups':[" GROUP "]}," TAIL,
      "fluid: not allowed in mode \"particles\"", "" },
    { PHEAD2 TAIL, "spheres: required key missing (required in mode \"particles\")", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'restitution':1.5}," TAIL,
      "spheres.restitution: expected a number in [0, 1], got 1.5", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'iterations':0}," TAIL,
      "spheres.iterations: expected an integer in 1..100, got 0", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'friction':-0.1}," TAIL,
      "spheres.friction: expected a number in [0, 10], got -0.1", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'walls':{'friction':0.2,'e':1}}," TAIL,
      "spheres.walls.e: unknown key; allowed keys here: \"restitution\", \"friction\"", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'walls':{'restitution':2}}," TAIL,
      "spheres.walls.restitution: expected a number in [0, 1], got 2", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'pairs':[{'groups':[0,1]}]}," TAIL,
      "spheres.pairs[0].groups[1]: expected a group index 0..0 or \"walls\", got 1", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'pairs':[{'groups':['walls','walls']}]}," TAIL,
      "spheres.pairs[0].groups: walls touch only spheres: name a group", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'pairs':[{'groups':[0,'walls']},{'groups':['walls',0]}]}," TAIL,
      "spheres.pairs[1]: this pair of groups is already given at spheres.pairs[0]", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'pairs':[{'groups':[0]}]}," TAIL,
      "spheres.pairs[0].groups: expected 2 to 2 two group indices or \"walls\", got 1", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "],'pairs':[{'groups':[0,0],'friction':-1}]}," TAIL,
      "spheres.pairs[0].friction: expected a number in [0, 10], got -1", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'pitch':0.01}]}," TAIL,
      "spheres.groups[0].pitch: expected a number >= 0.02, got 0.01", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'packing':0.8}]}," TAIL,
      "spheres.groups[0].packing: expected a number in (0, 0.785398", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'packing':0.5,'pitch':0.03}]}," TAIL,
      "spheres.groups[0].packing: give \"pitch\" or \"packing\", not both", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'packing':0.5,'placement':'random'}]}," TAIL,
      "spheres.groups[0].packing: only for placement \"lattice\"", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':2700,'radius':0.01,'placement':'random'}]}," TAIL,
      "spheres.groups[0].count: 2700 spheres of radius 0.01 m fill 0.84823 of the tank; random placement reaches at "
      "most 0.80",
      "" },
    { PHEAD2 "'spheres':{'groups':[{'count':100,'radius':0}]}," TAIL,
      "spheres.groups[0].radius: expected a number > 0, got 0", "" },
    { PHEAD2 "'spheres':{'groups':[{'radius':0.01}]}," TAIL, "spheres.groups[0].count: required key missing", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP ",{'count':1000000,'radius':0.01}]}," TAIL,
      "spheres.groups[1].count: 1000000 spheres of radius 0.01 m cannot fit in the tank", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'region':{'min':[0.5,0.5],'max':[0.51,0.9]}}]}," TAIL,
      "spheres.groups[0].region: spheres of radius 0.01 m do not fit in a region 0.01 m wide along x", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'region':{'min':[0.5,0.5],'max':[1.51,0.9]}}]}," TAIL,
      "spheres.groups[0].region.max[0]: 1.51 m is outside the tank", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'velocity':[1,2,3]}]}," TAIL,
      "spheres.groups[0].velocity: expected an array of 2 numbers", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'placement':'randm'}]}," TAIL,
      "spheres.groups[0].placement: unknown value \"randm\"", "did you mean \"random\"?" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'seed':-1}]}," TAIL,
      "spheres.groups[0].seed: expected an integer in 0..9007199254740991, got -1", "" },
    { PHEAD2 "'spheres':{'groups':[{'count':1,'radius':0.01,'velocity_jitter':-1}]}," TAIL,
      "spheres.groups[0].velocity_jitter: expected a number >= 0, got -1", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP ",{'count':1,'radius':1e-7}]}," TAIL,
      "spheres.groups[1].radius: 1e-07 m is too small for the tank: the tank is 5e+06 sphere diameters along x", "" },
    { "{'format':1,'dimensions':3,'tank':{'min':[0,0,0],'max':[1e300,1e300,1e300]},'fluid':{'blocks':[{'min':[0,0,0],"
      "'max':[1,1,1]}],'spacing':0.5}," TAIL,
      "fluid.spacing: spacing 0.5 m gives about", "more than the limit of 2e9" },
    { PHEAD2 "'spheres':{'groups':[1]}," TAIL, "spheres.groups[0]: expected an object (a sphere group), got 1", "" },
    { GH "{'name':'a','point':[0.5,0.5]}]," TAIL, "gauges[0].type: required key missing", "" },
    { GH "{'name':'a b','type':'pressure','point':[0.5,0.5]}]," TAIL, "gauges[0].name: \"a b\": a gauge's name", "" },
    { GH "{'name':'a','type':'pressure','point':[0.5,0.5]},{'name':'a','type':'height','point':[0.5,0]}]," TAIL,
      "gauges[1].name: \"a\" is already the name of gauges[0]", "" },
    { GH "{'name':'a','type':'pressure','point':[1.5,0.5]}]," TAIL,
      "gauges[0].point: x = 1.5 m lies outside the tank (0 to 1 m)", "" },
    { GH "{'name':'a','type':'pressure'}]," TAIL, "gauges[0].point: required key missing", "" },
    { GH "{'name':'a','type':'pressure','point':[0.5,0.5],'object':'tank'}]," TAIL,
      "gauges[0].object: only a \"force\" gauge takes an object", "" },
    { GH "{'name':'a','type':'force','object':'box'}]," TAIL, "gauges[0].object: expected \"tank\"", "" },
    { GH "{'name':'a','type':'presure','point':[0.5,0.5]}]," TAIL, "gauges[0].type: unknown value \"presure\"",
      "did you mean \"pressure\"?" },
    { GH "{'name':'a','type':'pressure','point':[0.5,0.5],'interval':-1}]," TAIL,
      "gauges[0].interval: expected a number >= 0, got -1", "" },
    { GH "{'name':'a','type':'pressure','point':[0.5,0.5],'every':2}]," TAIL, "gauges[0].every: unknown key", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'output':{'fields':['position','object']}," TAIL,
      "output.fields: \"object\" needs \"objects\" in the scene, in mode \"sph\"", "" },
    { HEAD2 "'fluid':{" BLK ",'spacing':0.01},'output':{'fields':['position','angular_velocity']}," TAIL,
      "output.fields[1]: \"angular_velocity\" is the spheres' spin: mode \"particles\" only", "" },
    { PHEAD2 "'spheres':{'groups':[" GROUP "]},'gauges':[{'name':'a','type':'height','point':[0.5,0]}]," TAIL,
      "gauges: gauges measure the fluid: mode \"sph\" only", "" },
};

static void test_bad_inline(void **state)
{
    (void)state;
    int n = (int)(sizeof BAD / sizeof BAD[0]);
    assert_true(n >= 25);
    for (int i = 0; i < n; i++) {
        scene s;
        sphsim_error e;
        sphsim_status st = load(&s, BAD[i].json, NULL, 0, &e);
        if (st != SPHSIM_E_SCENE) fail_msg("case %d: status %d, want SPHSIM_E_SCENE (%s)", i, st, e.msg);
        assert_int_equal(e.code, SPHSIM_E_SCENE);
        assert_starts(e.msg, BAD[i].start);
        assert_contains(e.msg, BAD[i].part);
        assert_null(s.source_json);
        assert_null(s.resolved_json);
    }
}

static void test_enum_names(void **state)
{
    (void)state;
    assert_string_equal(scene_kernel_name(KERNEL_POLY6), "poly6");
    assert_string_equal(scene_kernel_name(KERNEL_CUBIC), "cubic_spline");
    assert_string_equal(scene_kernel_name(KERNEL_WENDLAND), "wendland");
    assert_string_equal(scene_eos_name(EOS_TAIT), "tait");
    assert_string_equal(scene_eos_name(EOS_LINEAR), "linear");
    assert_string_equal(scene_visc_name(VISC_ARTIFICIAL), "artificial");
    assert_string_equal(scene_visc_name(VISC_LAPLACIAN), "laplacian");
    assert_string_equal(scene_mode_name(MODE_SPH), "sph");
    assert_string_equal(scene_mode_name(MODE_PARTICLES), "particles");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_sph_2d),
        cmocka_unit_test(test_time_step_sph),
        cmocka_unit_test(test_time_step_laplacian),
        cmocka_unit_test(test_fixed_dt_and_zero_end),
        cmocka_unit_test(test_particle_count_2d),
        cmocka_unit_test(test_particle_count_3d),
        cmocka_unit_test(test_linear_eos_default_stiffness),
        cmocka_unit_test(test_density_continuity),
        cmocka_unit_test(test_gauges),
        cmocka_unit_test(test_fluid_height_axis),
        cmocka_unit_test(test_particles_mode),
        cmocka_unit_test(test_contact_keys),
        cmocka_unit_test(test_output_fields_and_name),
        cmocka_unit_test(test_interval_longer_than_run),
        cmocka_unit_test(test_resolved_round_trip),
        cmocka_unit_test(test_file_source_and_io_errors),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_ready_scenes),
        cmocka_unit_test(test_bad_corpus),
        cmocka_unit_test(test_set_overrides),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_bad_inline),
        cmocka_unit_test(test_enum_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
