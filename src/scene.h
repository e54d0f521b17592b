/* scene: the JSON scene file turned into a validated, fully resolved `struct scene`.
 * Every key is validated, unknown keys are rejected, defaults are named here and in
 * docs/scene-format.md, and derived values are computed once. */
#ifndef SPHSIM_SCENE_H
#define SPHSIM_SCENE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "../kernels/geom_shared.h"

#define SCENE_FORMAT_VERSION 1
#define SCENE_MAX_BLOCKS 64
#define SCENE_MAX_GROUPS 64
#define SCENE_MAX_SETS 256
#define SCENE_MAX_PAIRS 256
#define SCENE_MAX_GAUGES 64
#define SCENE_GAUGE_NAME 64

/* "grid.neighbour_list" (docs/scene-format.md): neighbour lists with a skin for the SPH loops;
 * auto = on when the device memory holds them. */
typedef enum { NLIST_AUTO = 0, NLIST_ON = 1, NLIST_OFF = 2 } scene_nlist;

typedef enum { MODE_SPH = 0, MODE_PARTICLES = 1 } scene_mode; /* "sph" | "particles" */
typedef enum {
    KERNEL_POLY6 = 0,
    KERNEL_CUBIC = 1,
    KERNEL_WENDLAND = 2
} scene_kernel;                                                      /* "poly6" | "cubic_spline" | "wendland" */
typedef enum { EOS_LINEAR = 0, EOS_TAIT = 1 } scene_eos;             /* "linear" | "tait" */
typedef enum { VISC_LAPLACIAN = 0, VISC_ARTIFICIAL = 1 } scene_visc; /* "laplacian" | "artificial" */
typedef enum { DENSITY_SUMMATION = 0, DENSITY_CONTINUITY = 1 } scene_density; /* "summation" | "continuity" */
typedef enum { PLACE_LATTICE = 0, PLACE_RANDOM = 1 } scene_placement;         /* "lattice" | "random" */

/* Output fields, a bit each. */
enum {
    FIELD_POSITION = 1u << 0,
    FIELD_VELOCITY = 1u << 1,
    FIELD_DENSITY = 1u << 2,
    FIELD_PRESSURE = 1u << 3,
    FIELD_ID = 1u << 4,
    FIELD_TYPE = 1u << 5,
    FIELD_RADIUS = 1u << 6,
    FIELD_MASS = 1u << 7,
    FIELD_ANGULAR_VELOCITY = 1u << 8, /* particle mode */
    FIELD_OBJECT = 1u << 9,           /* SPH with objects: the object of each boundary particle, static */
};

typedef struct scene_box {
    double min[3]; /* m; z is 0 in 2D */
    double max[3]; /* m */
} scene_box;

#define SCENE_NO_REGION (-1)

/* A group of hard spheres (discs in 2D) for the particle mode. */
typedef struct scene_sphere_group {
    long count;                /* number of spheres; required */
    double radius;             /* m; required */
    double density;            /* kg/m^3 (mass = density * volume of sphere/disc); default 1000 */
    scene_box region;          /* where they are placed; default: the tank; a shaped region: its bounds */
    int shaped_region;         /* "region" given as a shape or a fill rule: its index in scene.regions;
                                  SCENE_NO_REGION for a box (or the tank) */
    scene_placement placement; /* default lattice */
    double pitch;              /* m: lattice pitch ("pitch", or from "packing"); default 2.02 r */
    double packing;            /* "packing": volume (2D: area) fraction of the lattice, or 0 when not given */
    uint64_t seed;             /* random placement and velocity jitter; default 1 */
    double velocity[3];        /* m/s; default 0 */
    double velocity_jitter;    /* m/s, uniform in [-j, j] per component; default 0 */
} scene_sphere_group;

/* Contact coefficients of one pair of sphere groups, or of a group and the walls
 * ("spheres.pairs"). */
typedef struct scene_sphere_pair {
    int a, b;           /* group indices; b = SCENE_WALLS: the tank walls */
    double restitution; /* e in [0, 1] */
    double friction;    /* Coulomb mu >= 0 */
} scene_sphere_pair;
#define SCENE_WALLS (-1)

/* Prescribed rigid motion of the tank or an object ("motion", docs/scene-format.md, "Motion"):
 * segments that follow each other in time, each adding its own displacement (and turn) to where
 * the last one left the body; src/motion.c evaluates it. */
#define SCENE_MAX_SEGMENTS 16
#define SCENE_MAX_TABLE_ROWS 1000000
typedef enum {
    MOTION_SINE = 0,     /* "sine": d = A sin(2 pi f tau + phase) */
    MOTION_ROTATION = 1, /* "rotation": theta = A sin(2 pi f tau + phase) about `axis` through `center` */
    MOTION_CONSTANT = 2, /* "constant": d = velocity tau */
    MOTION_TABLE = 3     /* "table": d (and theta) interpolated linearly from a CSV file */
} scene_motion_type;
typedef struct scene_motion_segment {
    int type;            /* scene_motion_type */
    double start, end;   /* s: when it acts (end = INFINITY: to the end of the run) */
    double amplitude[3]; /* sine: m; rotation: amplitude[0], rad ("amplitude" is in degrees) */
    double frequency;    /* Hz (sine, rotation) */
    double phase;        /* rad (sine, rotation) */
    double velocity[3];  /* m/s (constant) */
    char file[256];      /* table: the CSV file as given (relative to the scene file's folder) */
    uint64_t file_hash;  /* table: FNV-1a of the file's bytes */
    long n_rows;         /* table: rows */
    int has_angle;       /* table: a last column of angles (degrees in the file) */
    double *rows;        /* table: 5 per row: tau (s), dx, dy, dz (m), theta (rad); malloc'd */
} scene_motion_segment;
typedef struct scene_motion {
    int n_segments; /* 0: the body stays where it is */
    scene_motion_segment seg[SCENE_MAX_SEGMENTS];
    int rotates;      /* some segment turns the body */
    double center[3]; /* m: the centre of its turns (every turning segment names the same) */
    double axis[3];   /* the unit axis of its turns (z in 2D) */
} scene_motion;

/* A solid object of the scene ("objects", docs/scene-format.md): an obstacle that fluid and
 * spheres stay out of, or a container they stay inside (within the tank box). Its shape is given in its own coordinates (centre, sizes, cylinder
 * axis), then placed by the transform: scaled by `scale` about the origin, rotated by `degrees`
 * about `rot_axis` (right hand), then translated by `translate`. */
#define SCENE_MAX_OBJECTS GEOM_MAX_OBJECTS
#define SCENE_MAX_POLYGON 64                                            /* points of a 2D polygon */
typedef enum { OBJ_OBSTACLE = 0, OBJ_CONTAINER = 1 } scene_object_role; /* "obstacle" | "container" */
typedef struct scene_object {
    char name[64];                    /* "name"; default "object<i>" */
    unsigned shape;                   /* GEOM_BOX ("box", "rectangle"), GEOM_SPHERE ("sphere", "circle"),
                            GEOM_CYLINDER ("cylinder"), GEOM_MESH ("mesh") */
    char file[512];                   /* "file" (mesh): STL or OBJ, relative to the scene file's directory */
    uint64_t file_hash;               /* FNV-1a of the mesh file's bytes (in the resolved JSON: --resume
                            refuses a changed mesh) */
    long n_triangles;                 /* mesh */
    long n_vertices;                  /* mesh; polygon: its points */
    double poly[2 * 64];              /* polygon (2D): "points" as given (m; SCENE_MAX_POLYGON) */
    double *mesh_vert;                /* mesh: 3 per vertex, placed (m; malloc'd, freed by scene_free) */
    uint32_t *mesh_tri;               /* mesh: 3 vertex indices per triangle (malloc'd) */
    double grid_origin[3], grid_cell; /* mesh: the grid of its signed distance (geom_shared.h) */
    long grid_n[3];
    size_t grid_offset;
    double grid_band;
    int role;            /* "role": scene_object_role; default obstacle */
    double center[3];    /* m: "center"; default 0 */
    double size[3];      /* m: "size" (box, rectangle) */
    double radius;       /* m: "radius" (sphere, circle, cylinder) */
    double length;       /* m: "length" (cylinder) */
    double axis[3];      /* "axis" (cylinder): direction; default z */
    double translate[3]; /* m: "transform.translate"; default 0 */
    double rot_axis[3];  /* "transform.rotate.axis"; default z */
    double degrees;      /* "transform.rotate.degrees"; default 0 */
    double scale;        /* "transform.scale" > 0; default 1 */
    /* derived: the placed shape (geom_shared.h's frame, in double) */
    double origin[3], rot[9], ext[3];
    scene_motion motion; /* "motion": none by default */
} scene_object;
/* A shaped region ("fluid.regions", or a sphere group's "region" given as a shape;
 * docs/scene-format.md, "Regions"): the inside of a shape, given and placed as an object's
 * (its `shape` has role obstacle, so its signed distance is negative inside), or with "fill":
 * "container" all the room the tank and its containers leave; either cut to above <= x[v] <=
 * below on the vertical axis v (the last one). Fluid and spheres fill it only where they also
 * keep clear of every solid (docs/physics.md, "Objects"). */
#define SCENE_MAX_REGIONS 16
typedef enum { REGION_SHAPE = 0, REGION_CONTAINER = 1 } scene_region_fill; /* "shape" | "fill": "container" */
typedef struct scene_region {
    scene_region_fill fill;
    scene_object shape; /* REGION_SHAPE: the shape and its transform, placed */
    double above;       /* m: "above", the lowest level of the region; -inf when not given */
    double below;       /* m: "below", its highest level; +inf when not given */
    scene_box bounds;   /* derived: a box around the region's room within the tank */
} scene_region;

/* A gauge (SPH mode, "gauges"): a time series measured on the device (docs/scene-format.md,
 * "Gauges"; src/gauges.c). */
typedef enum {
    GAUGE_PRESSURE = 0, /* "pressure": Shepard-normalised kernel interpolation of the fluid's p at `point` */
    GAUGE_VELOCITY = 1, /* "velocity": the same of the fluid's velocity */
    GAUGE_HEIGHT = 2,   /* "height": the free surface's elevation on the vertical line through `point` */
    GAUGE_FORCE = 3     /* "force": force and moment (about `point`) of the fluid's pressure on `object` */
} scene_gauge_type;
typedef struct scene_gauge {
    char name[SCENE_GAUGE_NAME];   /* "name": letters, digits, '_', '-', '.'; unique; required */
    scene_gauge_type type;         /* "type"; required */
    double point[3];               /* "point" m: pressure/velocity: the probe; height: the line's
                                    horizontal position (its vertical coordinate is ignored);
                                    force: the moment's reference point (default: the tank's centre) */
    char object[SCENE_GAUGE_NAME]; /* "object" (force): "tank" (the tank's walls) or an object's name;
                                      default "tank" */
    int object_index;              /* derived: -1 the tank, else the index in objects[] */
    double interval;               /* "interval" s: sampling interval, 0 = every step (default) */
    long every;                    /* derived: steps between samples, round(interval / dt) >= 1 */
    long every_given;              /* "every_steps" of a resolved scene read back (0: not given) */
} scene_gauge;

typedef struct scene {
    /* ---- as given (after --set overrides) ---- */
    int format;        /* "format": must be SCENE_FORMAT_VERSION */
    char name[128];    /* "name": default: file name without extension */
    int dims;          /* "dimensions": 2 or 3; required */
    scene_mode mode;   /* "mode": default "sph" */
    scene_box tank;    /* "tank": {"min": [..], "max": [..]}; required */
    scene_motion tank_motion; /* "tank.motion": the tank box's walls; none by default */
    double gravity[3]; /* "gravity": m/s^2; default [0,-9.81] (2D) / [0,0,-9.81] (3D) */

    /* "fluid": SPH mode */
    int n_blocks;
    scene_box blocks[SCENE_MAX_BLOCKS]; /* "fluid.blocks" */
    int n_fluid_regions;                /* "fluid.regions": scene.regions[0 .. n_fluid_regions-1] */
    double spacing;                     /* "fluid.spacing" m; or derived from "fluid.particle_count" */
    long particle_count;                /* "fluid.particle_count": target; 0 when spacing was given */
    double rest_density;                /* "fluid.rest_density" kg/m^3; default 1000 */
    scene_kernel kernel;                /* "fluid.kernel"; default "wendland" */
    double h;                           /* smoothing length m: "fluid.smoothing_length", or factor * spacing
                                           (SPH; 0 in particle mode) */
    double r_max;                       /* m: the largest sphere radius (particle mode) */
    double h_factor;                    /* "fluid.smoothing_length_factor"; default 1.3 */
    scene_eos eos;                      /* "fluid.eos.type"; default "tait" */
    double sound_speed;                 /* "fluid.eos.sound_speed" m/s; default 10 * sqrt(2 max(|g|, 9.81) H_fluid);
                                for eos "linear": sqrt(stiffness) */
    double gamma;                       /* "fluid.eos.gamma"; default 7 (tait); 1 for eos "linear" */
    double stiffness;                   /* "fluid.eos.stiffness" m^2/s^2 (linear p = k (rho - rho0)); default c0^2 */
    scene_visc visc;                    /* "fluid.viscosity.type"; default "artificial" */
    double alpha;                       /* "fluid.viscosity.alpha" (artificial); default 0.02 */
    double mu;                          /* "fluid.viscosity.dynamic_viscosity" Pa s (laplacian); default 1e-3 */
    int boundary_layers;                /* "fluid.boundary_layers"; default 3 */
    scene_density density;              /* "fluid.density.type"; default "summation" */
    double diffusion;                   /* "fluid.density.diffusion": delta of the density diffusion
                                           (continuity only; default 0.1); 0 for summation */

    /* "spheres": particle mode */
    int n_groups;
    scene_sphere_group groups[SCENE_MAX_GROUPS]; /* "spheres.groups" */
    double restitution;                          /* "spheres.restitution" in [0,1]; default 0.5 */
    double friction;                             /* "spheres.friction": Coulomb mu >= 0; default 0 */
    double wall_restitution;                     /* "spheres.walls.restitution"; default: restitution */
    double wall_friction;                        /* "spheres.walls.friction"; default: friction */
    int n_pairs;
    scene_sphere_pair pairs[SCENE_MAX_PAIRS]; /* "spheres.pairs": per group pair (and group-wall) */
    int contact_iterations;                   /* "spheres.iterations" >= 1; default 4 */

    /* "objects" */
    int n_objects;
    scene_object objects[SCENE_MAX_OBJECTS];
    float *geom_grid;   /* the meshes' signed distance grids, one after another (malloc'd) */
    size_t geom_grid_n; /* floats in geom_grid */

    /* shaped regions: the fluid's ("fluid.regions"), or the sphere groups' shaped "region"s */
    int n_regions;
    scene_region regions[SCENE_MAX_REGIONS];
    float *region_grid;   /* the regions' mesh grids and polygon points (as geom_grid for objects; host only) */
    size_t region_grid_n; /* floats in region_grid */

    /* "time" */
    double t_end;     /* "time.end" s; required, >= 0 */
    double dt_fixed;  /* "time.dt" s; 0 = automatic from CFL */
    double cfl;       /* "time.cfl"; default 0.25 */
    double max_speed; /* "time.max_speed" m/s: a faster particle is a numerical failure;
                                default 10 * sound_speed (SPH), 100 * v_ref (particles) */

    /* "output" */
    double out_interval; /* "output.interval" s; default t_end / 50 (0 when t_end == 0) */
    unsigned fields;     /* "output.fields": FIELD_* bits; default all that apply */

    /* "gauges" (SPH mode) */
    int n_gauges;
    scene_gauge gauges[SCENE_MAX_GAUGES];

    /* "grid" */
    double cell_ratio;  /* "grid.cell_ratio": cell size / search radius; default 1, range (0, 4] */
    int neighbour_list; /* "grid.neighbour_list": NLIST_AUTO (default), NLIST_ON, NLIST_OFF (SPH) */
    double skin;        /* "grid.skin": list radius = support (1 + skin); default 0.1, range [0, 1] */

    /* ---- derived ---- */
    long n_fluid, n_boundary, n_spheres, n_total;
    double support;        /* m: kernel support 2 h (SPH); particles: the widest listed pair, 2 r_max (1 + NEAR) */
    double particle_mass;  /* kg, SPH fluid particles */
    double dt_cfl;         /* largest stable step from the criteria in docs/scene-format.md, s */
    double dt;             /* time step used, s: time.dt, or dt_cfl shortened so that an output
                                interval is a whole number of steps */
    long steps_per_output; /* output.interval / dt (>= 1) */
    long n_steps;          /* ceil(t_end / dt) (0 when t_end == 0) */
    double fluid_height;   /* m, highest fluid top minus lowest fluid bottom along the gravity axis */
    double v_ref;          /* m/s, reference speed of the time-step limit: particles: max(sqrt(2 |g| L),
                                max |group velocity| + sqrt(dims) jitter, 1e-3); SPH: sound_speed */

    /* ---- provenance ---- */
    char *source_json;   /* the file exactly as read (malloc'd) */
    char *resolved_json; /* resolved parameters with defaults filled in, as JSON (malloc'd) */
    char path[1024];     /* the scene file path */
    char notes[512];     /* values the scene asked for that were adjusted, a sentence a line (main.c
                            prints them on stderr); empty when none */
} scene;

/* Read, override, validate and resolve a scene.
 * `sets` are "path=value" strings from --set (value is JSON; if it does not parse as JSON
 * it is taken as a string). Errors are SPHSIM_E_SCENE (or SPHSIM_E_IO when the file cannot be
 * read) with a message naming the JSON path, e.g.
 *   "fluid.spacing: expected a number > 0, got -0.01". */
sphsim_status scene_load(scene *s, const char *path, const char *const *sets, int n_sets, sphsim_error *e);

/* The same from an in-memory JSON text (`name_hint` names the source in messages). */
sphsim_status scene_load_string(scene *s, const char *json, const char *name_hint, const char *const *sets, int n_sets,
                                sphsim_error *e);

void scene_free(scene *s);

/* Do two resolved scenes (scene.resolved_json) agree but for their provenance (the scene file's
 * name: relative in files of older builds, absolute now; the --set overrides it lists show in
 * the values anyway)? */
int scene_resolved_same(const char *a, const char *b);

/* Names of enum values as they appear in JSON. */
const char *scene_kernel_name(scene_kernel k);
const char *scene_eos_name(scene_eos k);
const char *scene_visc_name(scene_visc k);
const char *scene_density_name(scene_density k);
const char *scene_mode_name(scene_mode m);

#endif
