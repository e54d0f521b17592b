/* scene: reads a JSON scene (file or text), applies --set overrides, validates every key
 * and computes the derived values (spacing, h, mass, particle counts, time step) into a
 * `struct scene`, plus the resolved parameter set as JSON for provenance.
 * The rules here and docs/scene-format.md describe the same format; change both together. */
#include "scene.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../kernels/contact_shared.h"
#include "geometry.h"
#include "init.h"
#include "mesh.h"
#include "motion.h"

#define SCENE_MAX_PARTICLES 2e9          /* fluid + boundary + spheres */
#define SCENE_MAX_STEPS 1e9              /* time steps in one run */
#define SCENE_MAX_SNAPSHOTS 1e6          /* output intervals in one run */
#define SCENE_MAX_FILE_BYTES (16L << 20) /* a scene file is small text */
#define SCENE_H_RATIO_MIN 0.5            /* h / spacing */
#define SCENE_H_RATIO_MAX 4.0
#define SCENE_ALPHA_MAX 10.0
#define SCENE_DIFFUSION_DEFAULT 0.1       /* delta of the density diffusion (docs/physics.md) */
#define SCENE_MAX_DIAMETERS 1e6           /* tank extent / smallest sphere diameter, per axis */
#define SCENE_SEED_MAX 9007199254740991.0 /* 2^53 - 1: exact in a JSON number */
#define SCENE_PATH_SEGMENTS 32

/* ------------------------------------------------------------------------------------------ */
/* Names                                                                                      */

static const char *const KERNEL_NAMES[] = { "poly6", "cubic_spline", "wendland" };
static const int KERNEL_VALUES[] = { KERNEL_POLY6, KERNEL_CUBIC, KERNEL_WENDLAND };
static const char *const EOS_NAMES[] = { "tait", "linear" };
static const int EOS_VALUES[] = { EOS_TAIT, EOS_LINEAR };
static const char *const VISC_NAMES[] = { "artificial", "laplacian" };
static const int VISC_VALUES[] = { VISC_ARTIFICIAL, VISC_LAPLACIAN };
static const char *const DENSITY_NAMES[] = { "summation", "continuity" };
static const int DENSITY_VALUES[] = { DENSITY_SUMMATION, DENSITY_CONTINUITY };
static const char *const MODE_NAMES[] = { "sph", "particles" };
static const int MODE_VALUES[] = { MODE_SPH, MODE_PARTICLES };
static const char *const PLACE_NAMES[] = { "lattice", "random" };
static const int PLACE_VALUES[] = { PLACE_LATTICE, PLACE_RANDOM };
static const char *const FIELD_NAMES[] = { "position", "velocity", "density", "pressure",         "id",
                                           "type",     "radius",   "mass",    "angular_velocity", "object" };
static const int FIELD_VALUES[] = {
    FIELD_POSITION, FIELD_VELOCITY, FIELD_DENSITY, FIELD_PRESSURE,         FIELD_ID,
    FIELD_TYPE,     FIELD_RADIUS,   FIELD_MASS,    FIELD_ANGULAR_VELOCITY, FIELD_OBJECT
};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *enum_name(const char *const *names, const int *values, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (values[i] == v) return names[i];
    return "?";
}

const char *scene_kernel_name(scene_kernel k) { return enum_name(KERNEL_NAMES, KERNEL_VALUES, 3, (int)k); }
const char *scene_eos_name(scene_eos k) { return enum_name(EOS_NAMES, EOS_VALUES, 2, (int)k); }
const char *scene_visc_name(scene_visc k) { return enum_name(VISC_NAMES, VISC_VALUES, 2, (int)k); }
const char *scene_density_name(scene_density k) { return enum_name(DENSITY_NAMES, DENSITY_VALUES, 2, (int)k); }
const char *scene_mode_name(scene_mode m) { return enum_name(MODE_NAMES, MODE_VALUES, 2, (int)m); }

/* Allowed keys per object, in schema order (the order in which they are validated). */
static const char *const TOP_KEYS[] = { "format", "name",    "dimensions", "mode",   "tank", "gravity", "objects",
                                        "fluid",  "spheres", "time",       "output", "grid", "gauges" };
static const char *const OBJECT_KEYS[] = { "name", "shape", "role",       "center", "size",      "radius", "length",
                                           "axis", "file",  "file_fnv1a", "points", "transform", "motion" };
static const char *const TANK_KEYS[] = { "min", "max", "motion" };
static const char *const MOTION_KEYS[] = { "type",     "start",  "end",  "amplitude", "frequency", "phase",
                                           "velocity", "center", "axis", "file",      "file_fnv1a" };
static const char *const MOTION_NAMES[] = { "sine", "rotation", "constant", "table" };
static const int MOTION_VALUES[] = { MOTION_SINE, MOTION_ROTATION, MOTION_CONSTANT, MOTION_TABLE };
static const char *const TRANSFORM_KEYS[] = { "translate", "rotate", "scale" };
static const char *const ROTATE_KEYS[] = { "axis", "degrees" };
static const char *const SHAPE_NAMES_3D[] = { "box", "sphere", "cylinder", "mesh" };
static const int SHAPE_VALUES_3D[] = { GEOM_BOX, GEOM_SPHERE, GEOM_CYLINDER, GEOM_MESH };
static const char *const SHAPE_NAMES_2D[] = { "rectangle", "circle", "polygon" };
static const int SHAPE_VALUES_2D[] = { GEOM_BOX, GEOM_SPHERE, GEOM_POLYGON };
static const char *const ROLE_NAMES[] = { "obstacle", "container" };
static const int ROLE_VALUES[] = { OBJ_OBSTACLE, OBJ_CONTAINER };
static const char *const BOX_KEYS[] = { "min", "max" };
static const char *const FLUID_KEYS[] = { "blocks",
                                           "spacing",
                                           "particle_count",
                                           "rest_density",
                                           "kernel",
                                           "smoothing_length",
                                           "smoothing_length_factor",
                                           "eos",
                                           "viscosity",
                                           "boundary_layers",
                                           "regions",
                                           "density" };
static const char *const REGION_KEYS[] = { "shape", "fill",       "center", "size",      "radius", "length", "axis",
                                           "file",  "file_fnv1a", "points", "transform", "above",  "below" };
static const char *const FILL_NAMES[] = { "container" };
static const int FILL_VALUES[] = { REGION_CONTAINER };
static const char *const EOS_KEYS[] = { "type", "sound_speed", "gamma", "stiffness" };
static const char *const VISC_KEYS[] = { "type", "alpha", "dynamic_viscosity" };
static const char *const DENSITY_KEYS[] = { "type", "diffusion" };
static const char *const SPHERES_KEYS[] = { "groups", "restitution", "friction", "walls", "pairs", "iterations" };
static const char *const GROUP_KEYS[] = { "count", "radius",  "density", "region",   "placement",
                                          "pitch", "packing", "seed",    "velocity", "velocity_jitter" };
static const char *const WALLS_KEYS[] = { "restitution", "friction" };
static const char *const PAIR_KEYS[] = { "groups", "restitution", "friction" };
static const char *const TIME_KEYS[] = { "end", "dt", "cfl", "max_speed" };
static const char *const OUTPUT_KEYS[] = { "interval", "fields" };
static const char *const GRID_KEYS[] = { "cell_ratio", "neighbour_list", "skin" };
static const char *const GAUGE_KEYS[] = { "name", "type", "point", "object", "interval", "every_steps" };
static const char *const GAUGE_NAMES[] = { "pressure", "velocity", "height", "force" };
static const int GAUGE_VALUES[] = { GAUGE_PRESSURE, GAUGE_VELOCITY, GAUGE_HEIGHT, GAUGE_FORCE };
static const char *const NLIST_NAMES[] = { "auto", "on", "off" };
static const int NLIST_VALUES[] = { NLIST_AUTO, NLIST_ON, NLIST_OFF };

/* Named sections, for "this key belongs elsewhere" suggestions. */
typedef struct section {
    const char *path;
    const char *const *keys;
    int n;
} section;
static const section SECTIONS[] = {
    { "", TOP_KEYS, COUNT(TOP_KEYS) },
    { "tank", TANK_KEYS, COUNT(TANK_KEYS) },
    { "fluid", FLUID_KEYS, COUNT(FLUID_KEYS) },
    { "fluid.eos", EOS_KEYS, COUNT(EOS_KEYS) },
    { "fluid.viscosity", VISC_KEYS, COUNT(VISC_KEYS) },
    { "fluid.density", DENSITY_KEYS, COUNT(DENSITY_KEYS) },
    { "fluid.regions[]", REGION_KEYS, COUNT(REGION_KEYS) },
    { "spheres", SPHERES_KEYS, COUNT(SPHERES_KEYS) },
    { "spheres.walls", WALLS_KEYS, COUNT(WALLS_KEYS) },
    { "time", TIME_KEYS, COUNT(TIME_KEYS) },
    { "output", OUTPUT_KEYS, COUNT(OUTPUT_KEYS) },
    { "grid", GRID_KEYS, COUNT(GRID_KEYS) },
    { "gauges[]", GAUGE_KEYS, COUNT(GAUGE_KEYS) },
};

/* ------------------------------------------------------------------------------------------ */
/* Small text helpers                                                                         */

/* Shortest "%g" form of x that reads back as x. */
static const char *fmt_num(char buf[40], double x)
{
    if (isnan(x)) return "nan";
    if (isinf(x)) return x > 0 ? "inf" : "-inf";
    snprintf(buf, 40, "%.15g", x);
    if (strtod(buf, NULL) != x) snprintf(buf, 40, "%.17g", x);
    return buf;
}

/* A computed value, 6 significant digits. */
static const char *fmt_g(char buf[40], double x)
{
    snprintf(buf, 40, "%.6g", x);
    return buf;
}

/* Numbers in the resolved JSON are written as the shortest text that reads back exactly
 * (cJSON's own printing may lose the last bit). */
static cJSON *num_item(double x)
{
    char buf[40];
    return cJSON_CreateRaw(fmt_num(buf, x));
}

static void add_num(cJSON *obj, const char *key, double x) { cJSON_AddItemToObject(obj, key, num_item(x)); }

static cJSON *vec_item(const double *x, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < n; k++) cJSON_AddItemToArray(a, num_item(x[k]));
    return a;
}

/* What a JSON value is, for "got ..." in messages. */
static void describe(const cJSON *it, char *buf, size_t n)
{
    char nb[40];
    if (!it) snprintf(buf, n, "nothing");
    else if (cJSON_IsNumber(it)) {
        if (isinf(it->valuedouble)) snprintf(buf, n, "a number too large in magnitude (it overflows to infinity)");
        else snprintf(buf, n, "%s", fmt_num(nb, it->valuedouble));
    } else if (cJSON_IsString(it)) {
        const char *str = it->valuestring;
        if (strlen(str) > 48) snprintf(buf, n, "the string \"%.48s...\"", str);
        else snprintf(buf, n, "the string \"%s\"", str);
    } else if (cJSON_IsTrue(it)) snprintf(buf, n, "true");
    else if (cJSON_IsFalse(it)) snprintf(buf, n, "false");
    else if (cJSON_IsNull(it)) snprintf(buf, n, "null");
    else if (cJSON_IsArray(it)) snprintf(buf, n, "an array of %d entries", cJSON_GetArraySize(it));
    else if (cJSON_IsObject(it)) snprintf(buf, n, "an object");
    else snprintf(buf, n, "an unknown value");
}

static int lower(int c) { return tolower((unsigned char)c); }

/* Optimal-string-alignment edit distance (insert, delete, substitute, swap neighbours),
 * case-insensitive; capped at 99 for long words. */
static int edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 63 || nb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++) {
            int cost = lower(a[i - 1]) != lower(b[j - 1]);
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]) &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[na][nb];
}

static int starts_with_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (lower(*s) != lower(*prefix)) return 0;
    return 1;
}

/* The candidate closest to `word`: edit distance <= 2 (and less than the candidate's
 * length), else a prefix match of at least 3 characters; NULL if none. */
static const char *suggest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int best_score = INT_MAX;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(word, cands[i]);
        int score = INT_MAX;
        if (d <= 2 && d < (int)strlen(cands[i])) score = d;
        else if (strlen(word) >= 3 && (starts_with_ci(cands[i], word) || starts_with_ci(word, cands[i]))) score = 3;
        if (score < best_score) {
            best_score = score;
            best = cands[i];
        }
    }
    return best;
}

/* `"a", "b", "c"` into buf. */
static void quoted_list(char *buf, size_t n, const char *const *names, int count)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && len < n; i++) {
        int w = snprintf(buf + len, n - len, "%s\"%s\"", i ? ", " : "", names[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Validation context: the JSON path of the value being checked and the --set overrides     */

typedef struct set_rec {
    char path[256];   /* canonical path: a.b[1].c */
    const char *text; /* the --set argument as given */
} set_rec;

typedef struct vctx {
    sphsim_error *e;
    const set_rec *sets;
    int n_sets;
    int dims;
    size_t len;
    char path[512];
} vctx;

/* Append `part` to the path (truncated at the buffer end); returns the old length. */
static size_t vappend(vctx *v, const char *part)
{
    size_t old = v->len, n = strlen(part);
    if (n > sizeof v->path - 1 - old) n = sizeof v->path - 1 - old;
    memcpy(v->path + old, part, n);
    v->len = old + n;
    v->path[v->len] = '\0';
    return old;
}

static size_t vkey(vctx *v, const char *key)
{
    size_t old = v->len;
    if (old) vappend(v, ".");
    vappend(v, key);
    return old;
}

static size_t vidx(vctx *v, int i)
{
    char part[24];
    snprintf(part, sizeof part, "[%d]", i);
    return vappend(v, part);
}

static void vpop(vctx *v, size_t old)
{
    v->len = old;
    v->path[old] = '\0';
}

/* Is `a` equal to `b` or a path inside `b` ("b.x", "b[2]")? */
static int path_within(const char *a, const char *b)
{
    size_t nb = strlen(b);
    return strncmp(a, b, nb) == 0 && (a[nb] == '\0' || a[nb] == '.' || a[nb] == '[');
}

/* Fail with "<path>: <message>", noting the --set override that wrote the value if any. */
static sphsim_status vfail(vctx *v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static sphsim_status vfail(vctx *v, const char *fmt, ...)
{
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const set_rec *from = NULL;
    for (int i = 0; i < v->n_sets; i++)
        if (path_within(v->path, v->sets[i].path)) from = &v->sets[i];
    const char *where = v->len ? v->path : "(top level)";
    if (from) return SPHSIM_FAIL(v->e, SPHSIM_E_SCENE, "%s: %s (value from --set %.300s)", where, msg, from->text);
    return SPHSIM_FAIL(v->e, SPHSIM_E_SCENE, "%s: %s", where, msg);
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* Reject unknown and duplicate keys of `obj`, in the order they appear. */
static sphsim_status check_keys(vctx *v, const cJSON *obj, const char *const *allowed, int n)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *key = c->string ? c->string : "";
        int known = 0;
        for (int i = 0; i < n; i++)
            if (strcmp(key, allowed[i]) == 0) known = 1;
        size_t old = vkey(v, key);
        if (!known) {
            const char *near = suggest(key, allowed, n);
            if (near) return vfail(v, "unknown key; did you mean \"%s\"?", near);
            /* A key of another section, e.g. "spacing" at the top level? */
            for (int s = 0; s < COUNT(SECTIONS); s++)
                for (int k = 0; k < SECTIONS[s].n; k++)
                    if (strcmp(key, SECTIONS[s].keys[k]) == 0 && SECTIONS[s].keys != allowed) {
                        if (SECTIONS[s].path[0])
                            return vfail(v, "unknown key here; did you mean \"%s.%s\"?", SECTIONS[s].path, key);
                        return vfail(v, "unknown key here; \"%s\" belongs at the top level of the scene", key);
                    }
            char list[600];
            quoted_list(list, sizeof list, allowed, n);
            return vfail(v, "unknown key; allowed keys here: %s", list);
        }
        for (const cJSON *p = obj->child; p != c; p = p->next)
            if (p->string && strcmp(p->string, key) == 0) return vfail(v, "duplicate key (given twice)");
        vpop(v, old);
    }
    return SPHSIM_OK;
}

/* A numeric range: kinds 0 = unbounded, 1 = inclusive, 2 = exclusive. */
typedef struct nrange {
    double lo, hi;
    int lo_k, hi_k;
} nrange;

static nrange rng(double lo, int lo_k, double hi, int hi_k)
{
    nrange r = { lo, hi, lo_k, hi_k };
    return r;
}
#define R_ANY rng(0, 0, 0, 0)
#define R_POS rng(0, 2, 0, 0)
#define R_NONNEG rng(0, 1, 0, 0)
/* A Coulomb coefficient: at most 10, which sticks like no-slip in practice; a 3D slot keeps its
 * tangential impulse in steps of mu lambda_n / 32767 (docs/contacts.md, "Memory"), too coarse
 * for a much larger mu */
#define R_FRICTION rng(0, 1, 10, 1)

static int in_range(double x, nrange r)
{
    if (r.lo_k == 1 && !(x >= r.lo)) return 0;
    if (r.lo_k == 2 && !(x > r.lo)) return 0;
    if (r.hi_k == 1 && !(x <= r.hi)) return 0;
    if (r.hi_k == 2 && !(x < r.hi)) return 0;
    return 1;
}

/* "a number > 0", "a number in (0, 1]", "an integer in 1..100". */
static void range_text(char *buf, size_t n, nrange r, int integer)
{
    char a[40], b[40];
    const char *what = integer ? "an integer" : "a number";
    if (integer && r.lo_k && r.hi_k) snprintf(buf, n, "%s in %s..%s", what, fmt_num(a, r.lo), fmt_num(b, r.hi));
    else if (r.lo_k && r.hi_k)
        snprintf(buf, n, "%s in %c%s, %s%c", what, r.lo_k == 1 ? '[' : '(', fmt_num(a, r.lo), fmt_num(b, r.hi),
                 r.hi_k == 1 ? ']' : ')');
    else if (r.lo_k) snprintf(buf, n, "%s %s %s", what, r.lo_k == 1 ? ">=" : ">", fmt_num(a, r.lo));
    else if (r.hi_k) snprintf(buf, n, "%s %s %s", what, r.hi_k == 1 ? "<=" : "<", fmt_num(a, r.hi));
    else snprintf(buf, n, "%s", what);
}

/* Check a value that is present (`it`, path already pushed). */
static sphsim_status check_num(vctx *v, const cJSON *it, nrange r, int integer, double *out)
{
    char want[160], got[160];
    range_text(want, sizeof want, r, integer);
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || (integer && it->valuedouble != floor(it->valuedouble)) ||
        !in_range(it->valuedouble, r)) {
        describe(it, got, sizeof got);
        return vfail(v, "expected %s, got %s", want, got);
    }
    *out = it->valuedouble;
    return SPHSIM_OK;
}

/* Number `key` of `obj`; `def` if absent and not required. `given` may be NULL. */
static sphsim_status vnum(vctx *v, const cJSON *obj, const char *key, int required, double def, nrange r, double *out,
                          int *given)
{
    const cJSON *it = get(obj, key);
    if (given) *given = it != NULL;
    size_t old = vkey(v, key);
    if (!it) {
        if (required) {
            char want[160];
            range_text(want, sizeof want, r, 0);
            return vfail(v, "required key missing (expected %s)", want);
        }
        *out = def;
    } else SPHSIM_TRY(check_num(v, it, r, 0, out));
    vpop(v, old);
    return SPHSIM_OK;
}

static sphsim_status vint(vctx *v, const cJSON *obj, const char *key, int required, double def, double lo, double hi,
                          double *out, int *given)
{
    const cJSON *it = get(obj, key);
    if (given) *given = it != NULL;
    size_t old = vkey(v, key);
    nrange r = rng(lo, 1, hi, 1);
    if (!it) {
        if (required) {
            char want[160];
            range_text(want, sizeof want, r, 1);
            return vfail(v, "required key missing (expected %s)", want);
        }
        *out = def;
    } else SPHSIM_TRY(check_num(v, it, r, 1, out));
    vpop(v, old);
    return SPHSIM_OK;
}

/* Enumerated string `key`: one of names[]; stores the matching values[] entry. */
static sphsim_status venum(vctx *v, const cJSON *obj, const char *key, const char *const *names, const int *values,
                           int n, int def, int *out)
{
    const cJSON *it = get(obj, key);
    size_t old = vkey(v, key);
    char list[300], got[160];
    quoted_list(list, sizeof list, names, n);
    if (!it) {
        *out = def;
    } else if (!cJSON_IsString(it)) {
        describe(it, got, sizeof got);
        return vfail(v, "expected one of %s, got %s", list, got);
    } else {
        for (int i = 0; i < n; i++)
            if (strcmp(it->valuestring, names[i]) == 0) {
                *out = values[i];
                vpop(v, old);
                return SPHSIM_OK;
            }
        const char *near = suggest(it->valuestring, names, n);
        if (near)
            return vfail(v, "unknown value \"%.80s\"; expected one of %s; did you mean \"%s\"?", it->valuestring, list,
                         near);
        return vfail(v, "unknown value \"%.80s\"; expected one of %s", it->valuestring, list);
    }
    vpop(v, old);
    return SPHSIM_OK;
}

/* Vector `key`: exactly `dims` finite numbers; z = 0 in 2D. `def` used when absent. */
static sphsim_status vvec(vctx *v, const cJSON *obj, const char *key, int required, const double def[3], double out[3],
                          int *given)
{
    const cJSON *it = get(obj, key);
    if (given) *given = it != NULL;
    size_t old = vkey(v, key);
    char got[160];
    if (!it) {
        if (required) return vfail(v, "required key missing (expected an array of %d numbers)", v->dims);
        for (int k = 0; k < 3; k++) out[k] = def[k];
    } else {
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != v->dims) {
            describe(it, got, sizeof got);
            return vfail(v, "expected an array of %d numbers (\"dimensions\" is %d), got %s", v->dims, v->dims, got);
        }
        for (int k = 0; k < v->dims; k++) {
            size_t o2 = vidx(v, k);
            SPHSIM_TRY(check_num(v, cJSON_GetArrayItem(it, k), R_ANY, 0, &out[k]));
            vpop(v, o2);
        }
        if (v->dims == 2) out[2] = 0.0;
    }
    vpop(v, old);
    return SPHSIM_OK;
}

/* Object `key` (NULL in *out when absent and optional). */
static sphsim_status vobj(vctx *v, const cJSON *obj, const char *key, int required, const char *why, const cJSON **out)
{
    const cJSON *it = get(obj, key);
    *out = NULL;
    size_t old = vkey(v, key);
    if (!it) {
        if (required) return vfail(v, "required key missing%s", why ? why : "");
    } else if (!cJSON_IsObject(it)) {
        char got[160];
        describe(it, got, sizeof got);
        return vfail(v, "expected an object, got %s", got);
    } else *out = it;
    vpop(v, old);
    return SPHSIM_OK;
}

/* Array `key` with lo..hi entries. */
static sphsim_status varr(vctx *v, const cJSON *obj, const char *key, int required, int lo, int hi, const char *what,
                          const cJSON **out)
{
    const cJSON *it = get(obj, key);
    *out = NULL;
    size_t old = vkey(v, key);
    char got[160];
    if (!it) {
        if (required) return vfail(v, "required key missing (expected an array of %s)", what);
    } else if (!cJSON_IsArray(it)) {
        describe(it, got, sizeof got);
        return vfail(v, "expected an array of %s, got %s", what, got);
    } else {
        int n = cJSON_GetArraySize(it);
        if (n < lo || n > hi) return vfail(v, "expected %d to %d %s, got %d", lo, hi, what, n);
        *out = it;
    }
    vpop(v, old);
    return SPHSIM_OK;
}

/* String `"file"` of obj, required: a path of 1 to n - 1 characters into buf; `what` says what
 * it names. */
static sphsim_status vfile(vctx *v, const cJSON *obj, const char *what, char *buf, size_t n)
{
    const cJSON *fi = get(obj, "file");
    size_t old = vkey(v, "file");
    char got[160];
    if (!fi) return vfail(v, "required key missing (expected %s)", what);
    if (!cJSON_IsString(fi) || !fi->valuestring[0] || strlen(fi->valuestring) >= n) {
        describe(fi, got, sizeof got);
        return vfail(v, "expected a file path of 1 to %zu characters, got %s", n - 1, got);
    }
    snprintf(buf, n, "%s", fi->valuestring);
    vpop(v, old);
    return SPHSIM_OK;
}

/* A file's FNV-1a hash as the resolved scene writes it: 16 hex digits. */
static void hash_hex(unsigned long long hash, char hx[20]) { snprintf(hx, 20, "%016llx", hash); }

/* A file a resolved scene names: "file" and its "file_fnv1a" (vhash checks it on reading back). */
static void add_file(cJSON *o, const char *file, unsigned long long hash)
{
    char hx[20];
    hash_hex(hash, hx);
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddStringToObject(o, "file_fnv1a", hx);
}

/* "file_fnv1a" of obj, optional (a resolved scene read back): the FNV-1a hash the file had when
 * the scene was resolved, which the file as read now must have. */
static sphsim_status vhash(vctx *v, const cJSON *obj, const char *file, unsigned long long hash)
{
    const cJSON *h = get(obj, "file_fnv1a");
    if (!h) return SPHSIM_OK;
    size_t old = vkey(v, "file_fnv1a");
    char hx[20], got[96];
    hash_hex(hash, hx);
    if (!cJSON_IsString(h)) {
        describe(h, got, sizeof got);
        return vfail(v, "expected the 16 hex digits of the file's FNV-1a hash, got %s", got);
    }
    if (strcasecmp(h->valuestring, hx) != 0)
        return vfail(v,
                     "'%s' is not the file the scene was resolved with: its FNV-1a hash is %s, not %.20s (leave "
                     "file_fnv1a out to take the file as it is now)",
                     file, hx, h->valuestring);
    vpop(v, old);
    return SPHSIM_OK;
}

static const char AXIS[] = "xyz";

/* A box {"min": [..], "max": [..]} with max > min on every axis and inside `tank` (if given).
 * `what` names the box in messages ("block", "region"). */
static sphsim_status vbox(vctx *v, const cJSON *it, const scene_box *tank, const char *what, scene_box *out)
{
    char got[160], a[40], b[40];
    if (!cJSON_IsObject(it)) {
        describe(it, got, sizeof got);
        return vfail(v, "expected an object {\"min\": [..], \"max\": [..]}, got %s", got);
    }
    /* the tank's box may move (parse_motion) */
    if (strcmp(what, "tank") == 0) SPHSIM_TRY(check_keys(v, it, TANK_KEYS, COUNT(TANK_KEYS)));
    else SPHSIM_TRY(check_keys(v, it, BOX_KEYS, COUNT(BOX_KEYS)));
    SPHSIM_TRY(vvec(v, it, "min", 1, NULL, out->min, NULL));
    SPHSIM_TRY(vvec(v, it, "max", 1, NULL, out->max, NULL));
    size_t old = vkey(v, "max");
    for (int k = 0; k < v->dims; k++) {
        size_t o2 = vidx(v, k);
        if (!(out->max[k] > out->min[k]))
            return vfail(v, "must be greater than min[%d] (%s m), got %s m; the %s is empty along %c", k,
                         fmt_num(a, out->min[k]), fmt_num(b, out->max[k]), what, AXIS[k]);
        vpop(v, o2);
    }
    vpop(v, old);
    if (tank) {
        for (int side = 0; side < 2; side++) {
            old = vkey(v, side ? "max" : "min");
            for (int k = 0; k < v->dims; k++) {
                size_t o2 = vidx(v, k);
                double x = side ? out->max[k] : out->min[k];
                if (side == 0 && x < tank->min[k])
                    return vfail(v, "%s m is outside the tank (tank.min[%d] = %s m); the %s must lie inside the tank",
                                 fmt_num(a, x), k, fmt_num(b, tank->min[k]), what);
                if (side == 1 && x > tank->max[k])
                    return vfail(v, "%s m is outside the tank (tank.max[%d] = %s m); the %s must lie inside the tank",
                                 fmt_num(a, x), k, fmt_num(b, tank->max[k]), what);
                vpop(v, o2);
            }
            vpop(v, old);
        }
    }
    return SPHSIM_OK;
}

static double box_volume(const scene_box *b, int dims)
{
    double vol = 1.0;
    for (int k = 0; k < dims; k++) vol *= b->max[k] - b->min[k];
    return vol;
}

/* Lattice particles per axis of a width (cell-centred, as src/init.h documents). */
static double lattice_n(double width, double dx) { return floor(width / dx + 1e-9); } /* as init.c */

/* ------------------------------------------------------------------------------------------ */
/* Sections                                                                                   */

/* Boundary particles: `layers` layers around the tank lattice at spacing dx, i.e.
 * prod(n_k + 2L) - prod(n_k), expanded so that no large terms cancel. */
static double boundary_estimate(const scene *s)
{
    double n[3] = { 1, 1, 1 }, L2 = 2.0 * s->boundary_layers;
    for (int k = 0; k < s->dims; k++) n[k] = lattice_n(s->tank.max[k] - s->tank.min[k], s->spacing);
    if (s->dims == 2) return L2 * (n[0] + n[1]) + L2 * L2;
    return L2 * (n[0] * n[1] + n[1] * n[2] + n[0] * n[2]) + L2 * L2 * (n[0] + n[1] + n[2]) + L2 * L2 * L2;
}

/* "fluid.density": summation (the kernel sum) or continuity (integrated, with density diffusion of
 * coefficient "diffusion"; docs/physics.md), and its resolved form into f. */
static sphsim_status parse_density(vctx *v, const cJSON *fluid, scene *s, cJSON *f)
{
    const cJSON *dens;
    int ival;
    SPHSIM_TRY(vobj(v, fluid, "density", 0, NULL, &dens));
    int old = vkey(v, "density");
    if (dens) SPHSIM_TRY(check_keys(v, dens, DENSITY_KEYS, COUNT(DENSITY_KEYS)));
    SPHSIM_TRY(venum(v, dens, "type", DENSITY_NAMES, DENSITY_VALUES, 2, DENSITY_SUMMATION, &ival));
    s->density = (scene_density)ival;
    s->diffusion = 0.0;
    if (s->density == DENSITY_SUMMATION && get(dens, "diffusion")) {
        vkey(v, "diffusion");
        return vfail(v, "only valid with \"type\": \"continuity\" (a summation density has no diffusion term)");
    }
    if (s->density == DENSITY_CONTINUITY)
        SPHSIM_TRY(vnum(v, dens, "diffusion", 0, SCENE_DIFFUSION_DEFAULT, rng(0, 1, 1, 1), &s->diffusion, NULL));
    vpop(v, old);
    cJSON *rd = cJSON_AddObjectToObject(f, "density");
    cJSON_AddStringToObject(rd, "type", scene_density_name(s->density));
    if (s->density == DENSITY_CONTINUITY) add_num(rd, "diffusion", s->diffusion);
    return SPHSIM_OK;
}

static sphsim_status parse_fluid_regions(vctx *v, const cJSON *fluid, scene *s);
static sphsim_status parse_region(vctx *v, const cJSON *it, scene *s, scene_region *r, const char *label);
static void region_resolved(cJSON *ro, const scene *s, const scene_region *r);

/* The extent of the fluid along axis ax: the blocks and the regions' bounds (*top < *bottom when
 * there is none yet). */
static void fluid_extent(const scene *s, int ax, double *top, double *bottom)
{
    *top = -INFINITY;
    *bottom = INFINITY;
    for (int i = 0; i < s->n_blocks; i++) {
        *top = fmax(*top, s->blocks[i].max[ax]);
        *bottom = fmin(*bottom, s->blocks[i].min[ax]);
    }
    for (int i = 0; i < s->n_fluid_regions; i++)
        if (s->regions[i].bounds.max[ax] > s->regions[i].bounds.min[ax]) {
            *top = fmax(*top, s->regions[i].bounds.max[ax]);
            *bottom = fmin(*bottom, s->regions[i].bounds.min[ax]);
        }
}

static sphsim_status parse_fluid(vctx *v, const cJSON *fluid, scene *s, cJSON *resolved)
{
    char a[40], b[40], c[40];
    const cJSON *blocks, *it;
    double x;
    size_t old;
    int given;
    SPHSIM_TRY(check_keys(v, fluid, FLUID_KEYS, COUNT(FLUID_KEYS)));

    /* blocks (or regions, parsed last: they need the spacing and the boundary layers) */
    const cJSON *regions = get(fluid, "regions");
    s->n_blocks = 0;
    s->n_fluid_regions = 0;
    if (!regions && !get(fluid, "blocks")) {
        vkey(v, "blocks");
        return vfail(v, "required key missing (expected an array of fluid blocks, or give \"regions\")");
    }
    SPHSIM_TRY(varr(v, fluid, "blocks", 0, 1, SCENE_MAX_BLOCKS, "fluid blocks", &blocks));
    old = vkey(v, "blocks");
    for (it = blocks ? blocks->child : NULL; it; it = it->next) {
        int i = s->n_blocks;
        size_t o2 = vidx(v, i);
        SPHSIM_TRY(vbox(v, it, &s->tank, "block", &s->blocks[i]));
        for (int j = 0; j < i; j++) {
            int overlap = 1;
            for (int k = 0; k < s->dims; k++)
                if (!(fmin(s->blocks[i].max[k], s->blocks[j].max[k]) > fmax(s->blocks[i].min[k], s->blocks[j].min[k])))
                    overlap = 0;
            if (overlap) return vfail(v, "overlaps fluid.blocks[%d]; fluid blocks must not overlap", j);
        }
        vpop(v, o2);
        s->n_blocks++;
    }
    vpop(v, old);

    /* spacing | particle_count */
    const cJSON *sp = get(fluid, "spacing"), *pc = get(fluid, "particle_count");
    if (sp && pc) {
        old = vkey(v, "particle_count");
        return vfail(v, "not allowed together with fluid.spacing; give exactly one of the two");
    }
    if (!sp && !pc) {
        old = vkey(v, "spacing");
        return vfail(v, "required key missing; give either \"spacing\" (m) or \"particle_count\"");
    }
    if (pc && regions) {
        old = vkey(v, "particle_count");
        return vfail(v, "not available with fluid.regions (their volume is known only once they are filled); give "
                        "fluid.spacing");
    }
    double volume = 0.0;
    for (int i = 0; i < s->n_blocks; i++) volume += box_volume(&s->blocks[i], s->dims);
    const char *count_key = sp ? "spacing" : "particle_count";
    if (sp) {
        SPHSIM_TRY(vnum(v, fluid, "spacing", 1, 0, R_POS, &s->spacing, NULL));
        s->particle_count = 0;
    } else {
        SPHSIM_TRY(vint(v, fluid, "particle_count", 1, 0, 1, SCENE_MAX_PARTICLES, &x, NULL));
        s->particle_count = (long)x;
        double cell = volume / x;
        s->spacing = s->dims == 2 ? sqrt(cell) : cbrt(cell);
    }
    /* At least one particle along every axis of every block; a sane total. */
    old = vkey(v, count_key);
    double n_fluid_est = 0.0;
    for (int i = 0; i < s->n_blocks; i++) {
        double n_block = 1.0;
        for (int k = 0; k < s->dims; k++) {
            double w = s->blocks[i].max[k] - s->blocks[i].min[k];
            double n = lattice_n(w, s->spacing);
            if (n < 1.0)
                return vfail(v,
                             "spacing %s m gives no particle along %c in fluid.blocks[%d] (%s m wide); the spacing "
                             "must be at most the block width (%s m)",
                             fmt_g(a, s->spacing), AXIS[k], i, fmt_g(b, w), fmt_g(c, w));
            n_block *= n;
        }
        n_fluid_est += n_block;
    }
    if (n_fluid_est > SCENE_MAX_PARTICLES)
        return vfail(v, "spacing %s m gives %.3g fluid particles, more than the limit of 2e9", fmt_g(a, s->spacing),
                     n_fluid_est);
    vpop(v, old);

    SPHSIM_TRY(vnum(v, fluid, "rest_density", 0, 1000.0, R_POS, &s->rest_density, NULL));
    int ival;
    SPHSIM_TRY(venum(v, fluid, "kernel", KERNEL_NAMES, KERNEL_VALUES, 3, KERNEL_WENDLAND, &ival));
    s->kernel = (scene_kernel)ival;

    /* smoothing length */
    const cJSON *hl = get(fluid, "smoothing_length"), *hf = get(fluid, "smoothing_length_factor");
    if (hl && hf) {
        old = vkey(v, "smoothing_length_factor");
        return vfail(v, "not allowed together with fluid.smoothing_length; give at most one of the two");
    }
    if (hl) {
        SPHSIM_TRY(vnum(v, fluid, "smoothing_length", 1, 0, R_POS, &s->h, NULL));
        s->h_factor = s->h / s->spacing;
        if (!(s->h_factor >= SCENE_H_RATIO_MIN && s->h_factor <= SCENE_H_RATIO_MAX)) {
            old = vkey(v, "smoothing_length");
            return vfail(v,
                         "%s m is %.3g times the particle spacing (%s m); expected between 0.5 and 4 times the "
                         "spacing",
                         fmt_num(a, s->h), s->h_factor, fmt_g(b, s->spacing));
        }
    } else {
        SPHSIM_TRY(vnum(v, fluid, "smoothing_length_factor", 0, 1.3, rng(SCENE_H_RATIO_MIN, 1, SCENE_H_RATIO_MAX, 1),
                        &s->h_factor, NULL));
        s->h = s->h_factor * s->spacing;
    }
    s->support = 2.0 * s->h;
    s->particle_mass = s->rest_density * pow(s->spacing, s->dims);

    /* fluid height along the gravity axis: the axis of the largest |g| component, y (2D) or
     * z (3D) when gravity is zero or has no single largest component. */
    int ax = s->dims - 1;
    for (int k = 0; k < s->dims; k++)
        if (fabs(s->gravity[k]) > fabs(s->gravity[ax])) ax = k;
    double top, bottom;
    fluid_extent(s, ax, &top, &bottom);
    s->fluid_height = top > bottom ? top - bottom : 0.0;
    double g = hypot(hypot(s->gravity[0], s->gravity[1]), s->gravity[2]);
    double c0_default = 10.0 * sqrt(2.0 * fmax(g, 9.81) * s->fluid_height);

    /* eos */
    const cJSON *eos, *visc;
    int c0_given = 0;
    SPHSIM_TRY(vobj(v, fluid, "eos", 0, NULL, &eos));
    old = vkey(v, "eos");
    if (eos) SPHSIM_TRY(check_keys(v, eos, EOS_KEYS, COUNT(EOS_KEYS)));
    SPHSIM_TRY(venum(v, eos, "type", EOS_NAMES, EOS_VALUES, 2, EOS_TAIT, &ival));
    s->eos = (scene_eos)ival;
    if (s->eos == EOS_TAIT) {
        if (get(eos, "stiffness")) {
            vkey(v, "stiffness");
            return vfail(v, "only valid with \"type\": \"linear\" (this eos is \"tait\"; use \"sound_speed\")");
        }
        SPHSIM_TRY(vnum(v, eos, "sound_speed", 0, c0_default, R_POS, &s->sound_speed, &c0_given));
        SPHSIM_TRY(vnum(v, eos, "gamma", 0, 7.0, rng(1, 1, 0, 0), &s->gamma, NULL));
        s->stiffness = s->sound_speed * s->sound_speed;
    } else {
        const char *bad = get(eos, "sound_speed") ? "sound_speed" : get(eos, "gamma") ? "gamma" : NULL;
        if (bad) {
            vkey(v, bad);
            return vfail(v, "only valid with \"type\": \"tait\" (this eos is \"linear\"; use \"stiffness\")");
        }
        SPHSIM_TRY(vnum(v, eos, "stiffness", 0, c0_default * c0_default, R_POS, &s->stiffness, &c0_given));
        s->sound_speed = sqrt(s->stiffness);
        s->gamma = 1.0;
    }
    vpop(v, old);

    /* viscosity */
    SPHSIM_TRY(vobj(v, fluid, "viscosity", 0, NULL, &visc));
    old = vkey(v, "viscosity");
    if (visc) SPHSIM_TRY(check_keys(v, visc, VISC_KEYS, COUNT(VISC_KEYS)));
    SPHSIM_TRY(venum(v, visc, "type", VISC_NAMES, VISC_VALUES, 2, VISC_ARTIFICIAL, &ival));
    s->visc = (scene_visc)ival;
    if (s->visc == VISC_ARTIFICIAL) {
        if (get(visc, "dynamic_viscosity")) {
            vkey(v, "dynamic_viscosity");
            return vfail(v, "only valid with \"type\": \"laplacian\" (this viscosity is \"artificial\"; use "
                            "\"alpha\")");
        }
        SPHSIM_TRY(vnum(v, visc, "alpha", 0, 0.02, rng(0, 1, SCENE_ALPHA_MAX, 1), &s->alpha, NULL));
        s->mu = 0.0;
    } else {
        if (get(visc, "alpha")) {
            vkey(v, "alpha");
            return vfail(v, "only valid with \"type\": \"artificial\" (this viscosity is \"laplacian\"; use "
                            "\"dynamic_viscosity\")");
        }
        SPHSIM_TRY(vnum(v, visc, "dynamic_viscosity", 0, 1e-3, R_NONNEG, &s->mu, NULL));
        s->alpha = 0.0;
    }
    vpop(v, old);

    SPHSIM_TRY(vint(v, fluid, "boundary_layers", 0, 3, 1, 8, &x, &given));
    s->boundary_layers = (int)x;
    /* The wall must fill the kernel support of a fluid particle at the wall, or its sums miss
     * wall particles and it leaks: at least ceil(2h / spacing) layers. */
    const int layers_needed = (int)ceil(s->support / s->spacing - 1e-9);
    if (!given && s->boundary_layers < layers_needed) s->boundary_layers = layers_needed;
    if (s->boundary_layers < layers_needed) {
        old = vkey(v, "boundary_layers");
        return vfail(v,
                     "%d layer(s) are thinner than the kernel support 2h = %.3g spacings: fluid particles at "
                     "the wall would miss wall particles and leak; use at least %d (at most 8)",
                     s->boundary_layers, s->support / s->spacing, layers_needed);
    }
    if (layers_needed > 8) {
        old = vkey(v, "boundary_layers");
        return vfail(v,
                     "the kernel support 2h = %.3g spacings needs %d layers, more than 8; use a smaller "
                     "fluid.smoothing_length_factor",
                     s->support / s->spacing, layers_needed);
    }

    /* regions: the fluid's height and the default sound speed with them */
    SPHSIM_TRY(parse_fluid_regions(v, fluid, s));
    if (s->n_fluid_regions > 0) {
        fluid_extent(s, ax, &top, &bottom);
        s->fluid_height = top > bottom ? top - bottom : 0.0;
        c0_default = 10.0 * sqrt(2.0 * fmax(g, 9.81) * s->fluid_height);
        if (!c0_given && s->eos == EOS_TAIT) {
            s->sound_speed = c0_default;
            s->stiffness = c0_default * c0_default;
        } else if (!c0_given) {
            s->stiffness = c0_default * c0_default;
            s->sound_speed = c0_default;
        }
        for (int i = 0; i < s->n_fluid_regions; i++) {
            double n_region = 1.0;
            for (int k = 0; k < s->dims; k++)
                n_region *= fmax(0.0, lattice_n(s->regions[i].bounds.max[k] - s->regions[i].bounds.min[k], s->spacing));
            n_fluid_est += n_region;
        }
    }
    double n_boundary_est = boundary_estimate(s);
    if (n_fluid_est + n_boundary_est > SCENE_MAX_PARTICLES) {
        old = vkey(v, count_key);
        return vfail(v,
                     "spacing %s m gives about %.3g particles (%.3g fluid + %.3g boundary), more than the limit "
                     "of 2e9",
                     fmt_g(a, s->spacing), n_fluid_est + n_boundary_est, n_fluid_est, n_boundary_est);
    }

    /* resolved "fluid" */
    cJSON *f = cJSON_AddObjectToObject(resolved, "fluid");
    if (s->n_blocks > 0) {
        cJSON *rb = cJSON_AddArrayToObject(f, "blocks");
        for (int i = 0; i < s->n_blocks; i++) {
            cJSON *bo = cJSON_CreateObject();
            cJSON_AddItemToObject(bo, "min", vec_item(s->blocks[i].min, s->dims));
            cJSON_AddItemToObject(bo, "max", vec_item(s->blocks[i].max, s->dims));
            cJSON_AddItemToArray(rb, bo);
        }
    }
    if (s->particle_count) add_num(f, "particle_count", (double)s->particle_count);
    else add_num(f, "spacing", s->spacing);
    add_num(f, "rest_density", s->rest_density);
    cJSON_AddStringToObject(f, "kernel", scene_kernel_name(s->kernel));
    if (hl) add_num(f, "smoothing_length", s->h);
    else add_num(f, "smoothing_length_factor", s->h_factor);
    cJSON *re = cJSON_AddObjectToObject(f, "eos");
    cJSON_AddStringToObject(re, "type", scene_eos_name(s->eos));
    if (s->eos == EOS_TAIT) {
        add_num(re, "sound_speed", s->sound_speed);
        add_num(re, "gamma", s->gamma);
    } else add_num(re, "stiffness", s->stiffness);
    cJSON *rv = cJSON_AddObjectToObject(f, "viscosity");
    cJSON_AddStringToObject(rv, "type", scene_visc_name(s->visc));
    if (s->visc == VISC_ARTIFICIAL) add_num(rv, "alpha", s->alpha);
    else add_num(rv, "dynamic_viscosity", s->mu);
    add_num(f, "boundary_layers", s->boundary_layers);
    if (s->n_fluid_regions > 0) {
        cJSON *rr = cJSON_AddArrayToObject(f, "regions");
        for (int i = 0; i < s->n_fluid_regions; i++) {
            cJSON *ro = cJSON_CreateObject();
            region_resolved(ro, s, &s->regions[i]);
            cJSON_AddItemToArray(rr, ro);
        }
    }
    return parse_density(v, fluid, s, f);
}

/* Volume (2D: area) of a sphere (disc) of radius r. */
static double sphere_volume(int dims, double r) { return dims == 2 ? M_PI * r * r : 4.0 / 3.0 * M_PI * r * r * r; }

/* The densest volume fraction a cubic (2D: square) lattice reaches (pitch = diameter), and the
 * one random placement reaches (docs/scene-format.md: below random close packing, 0.64 / 0.84,
 * where pushing overlapping spheres apart still converges quickly). */
#define PACKING_CUBIC_3D (M_PI / 6.0)
#define PACKING_CUBIC_2D (M_PI / 4.0)
#define PACKING_RANDOM_3D 0.58
#define PACKING_RANDOM_2D 0.80

/* "pitch" and "packing" of a sphere group: the lattice pitch, given or from the volume fraction
 * of a cubic (square) lattice: pitch = d (pi / (6 phi))^(1/3) (2D: d (pi / (4 phi))^(1/2)); then
 * whether the count fits its region (a lattice: the sites of the region; random: below the
 * random placement's limit). */
static sphsim_status parse_group_packing(vctx *v, const cJSON *it, const scene *s, scene_sphere_group *gr,
                                         int region_given)
{
    char a[40], b[40];
    const double d = 2.0 * gr->radius;
    const double max_cubic = s->dims == 2 ? PACKING_CUBIC_2D : PACKING_CUBIC_3D;
    int pitch_given = 0, packing_given = 0;
    SPHSIM_TRY(vnum(v, it, "pitch", 0, 1.01 * d, rng(d, 1, 0, 0), &gr->pitch, &pitch_given));
    SPHSIM_TRY(vnum(v, it, "packing", 0, 0.0, rng(0, 2, max_cubic, 1), &gr->packing, &packing_given));
    if ((pitch_given || packing_given) && gr->placement != PLACE_LATTICE) {
        vkey(v, pitch_given ? "pitch" : "packing");
        return vfail(v, "only for placement \"lattice\" (random placement packs \"count\" spheres into the region)");
    }
    if (pitch_given && packing_given) {
        vkey(v, "packing");
        return vfail(v, "give \"pitch\" or \"packing\", not both");
    }
    if (packing_given)
        gr->pitch = s->dims == 2 ? d * sqrt(M_PI / (4.0 * gr->packing)) : d * cbrt(M_PI / (6.0 * gr->packing));
    const double vol = box_volume(&gr->region, s->dims),
                 phi = (double)gr->count * sphere_volume(s->dims, gr->radius) / vol;
    if (gr->placement == PLACE_RANDOM) {
        const double lim = s->dims == 2 ? PACKING_RANDOM_2D : PACKING_RANDOM_3D;
        if (phi > lim) {
            vkey(v, "count");
            return vfail(v,
                         "%ld spheres of radius %s m fill %s of the %s; random placement reaches at most %s (use "
                         "placement \"lattice\", a larger region or fewer spheres)",
                         gr->count, fmt_num(a, gr->radius), fmt_g(b, phi), region_given ? "region" : "tank",
                         s->dims == 2 ? "0.80" : "0.58");
        }
    }
    return SPHSIM_OK;
}

/* One entry of "spheres.pairs": {"groups": [a, b], "restitution": e, "friction": mu}, a and b
 * group indices, either of them "walls"; coefficients default to the scene's. */
static sphsim_status parse_pair(vctx *v, const cJSON *it, scene *s, scene_sphere_pair *q)
{
    char got[160];
    if (!cJSON_IsObject(it)) {
        describe(it, got, sizeof got);
        return vfail(v, "expected an object {\"groups\": [a, b], \"restitution\": e, \"friction\": mu}, got %s", got);
    }
    SPHSIM_TRY(check_keys(v, it, PAIR_KEYS, COUNT(PAIR_KEYS)));
    const cJSON *g;
    SPHSIM_TRY(varr(v, it, "groups", 1, 2, 2, "two group indices or \"walls\"", &g));
    size_t old = vkey(v, "groups");
    int ends[2];
    for (int k = 0; k < 2; k++) {
        const cJSON *e = cJSON_GetArrayItem(g, k);
        size_t o2 = vidx(v, k);
        if (cJSON_IsString(e) && strcmp(e->valuestring, "walls") == 0) ends[k] = SCENE_WALLS;
        else if (cJSON_IsNumber(e) && e->valuedouble == floor(e->valuedouble) && e->valuedouble >= 0 &&
                 e->valuedouble < s->n_groups)
            ends[k] = (int)e->valuedouble;
        else {
            describe(e, got, sizeof got);
            return vfail(v, "expected a group index 0..%d or \"walls\", got %s", s->n_groups - 1, got);
        }
        vpop(v, o2);
    }
    if (ends[0] == SCENE_WALLS && ends[1] == SCENE_WALLS) return vfail(v, "walls touch only spheres: name a group");
    vpop(v, old);
    q->a = ends[0] == SCENE_WALLS ? ends[1] : ends[0];
    q->b = ends[0] == SCENE_WALLS ? SCENE_WALLS : ends[1];
    const int wall = q->b == SCENE_WALLS;
    SPHSIM_TRY(vnum(v, it, "restitution", 0, wall ? s->wall_restitution : s->restitution, rng(0, 1, 1, 1),
                    &q->restitution, NULL));
    SPHSIM_TRY(vnum(v, it, "friction", 0, wall ? s->wall_friction : s->friction, R_FRICTION, &q->friction, NULL));
    return SPHSIM_OK;
}

static sphsim_status parse_pairs(vctx *v, const cJSON *spheres, scene *s)
{
    const cJSON *pairs, *it;
    SPHSIM_TRY(varr(v, spheres, "pairs", 0, 0, SCENE_MAX_PAIRS, "group pairs", &pairs));
    s->n_pairs = 0;
    if (!pairs) return SPHSIM_OK;
    size_t old = vkey(v, "pairs");
    for (it = pairs->child; it; it = it->next) {
        size_t o2 = vidx(v, s->n_pairs);
        scene_sphere_pair *q = &s->pairs[s->n_pairs];
        SPHSIM_TRY(parse_pair(v, it, s, q));
        for (int k = 0; k < s->n_pairs; k++)
            if ((s->pairs[k].a == q->a && s->pairs[k].b == q->b) ||
                (q->b != SCENE_WALLS && s->pairs[k].a == q->b && s->pairs[k].b == q->a))
                return vfail(v, "this pair of groups is already given at spheres.pairs[%d]", k);
        vpop(v, o2);
        s->n_pairs++;
    }
    vpop(v, old);
    return SPHSIM_OK;
}

static sphsim_status parse_spheres(vctx *v, const cJSON *spheres, scene *s, cJSON *resolved)
{
    char a[40], b[40];
    const cJSON *groups, *it;
    double x, total = 0.0;
    size_t old;
    SPHSIM_TRY(check_keys(v, spheres, SPHERES_KEYS, COUNT(SPHERES_KEYS)));
    SPHSIM_TRY(varr(v, spheres, "groups", 1, 1, SCENE_MAX_GROUPS, "sphere groups", &groups));
    old = vkey(v, "groups");
    s->n_groups = 0;
    double max_r = 0.0;
    for (it = groups->child; it; it = it->next) {
        int i = s->n_groups, ival;
        scene_sphere_group *gr = &s->groups[i];
        size_t o2 = vidx(v, i);
        char got[160];
        if (!cJSON_IsObject(it)) {
            describe(it, got, sizeof got);
            return vfail(v, "expected an object (a sphere group), got %s", got);
        }
        SPHSIM_TRY(check_keys(v, it, GROUP_KEYS, COUNT(GROUP_KEYS)));
        SPHSIM_TRY(vint(v, it, "count", 1, 0, 1, SCENE_MAX_PARTICLES, &x, NULL));
        gr->count = (long)x;
        SPHSIM_TRY(vnum(v, it, "radius", 1, 0, R_POS, &gr->radius, NULL));
        SPHSIM_TRY(vnum(v, it, "density", 0, 1000.0, R_POS, &gr->density, NULL));
        const cJSON *region = get(it, "region");
        gr->shaped_region = SCENE_NO_REGION;
        s->n_groups = i + 1; /* a mesh region's grid is sized for the spheres up to this group */
        if (region && cJSON_IsObject(region) && (get(region, "shape") || get(region, "fill"))) {
            size_t o3 = vkey(v, "region");
            if (s->n_regions >= SCENE_MAX_REGIONS)
                return vfail(v, "at most %d groups may have a shaped region", SCENE_MAX_REGIONS);
            char label[48];
            snprintf(label, sizeof label, "spheres.groups[%d].region", i);
            gr->shaped_region = s->n_regions++; /* scene_free frees its mesh from here on */
            SPHSIM_TRY(parse_region(v, region, s, &s->regions[gr->shaped_region], label));
            gr->region = s->regions[gr->shaped_region].bounds; /* where its lattice starts */
            vpop(v, o3);
        } else if (region) {
            size_t o3 = vkey(v, "region");
            SPHSIM_TRY(vbox(v, region, &s->tank, "region", &gr->region));
            vpop(v, o3);
        } else gr->region = s->tank;
        /* Every sphere must fit, and the count must fit at the densest packing. */
        for (int k = 0; k < s->dims; k++) {
            double w = gr->region.max[k] - gr->region.min[k];
            if (region && !(w > 0)) {
                vkey(v, "region");
                return vfail(v, "the region lies outside the tank: nothing of it is inside along %c", AXIS[k]);
            }
            if (w < 2.0 * gr->radius) {
                vkey(v, region ? "region" : "radius");
                return vfail(v, "spheres of radius %s m do not fit in a region %s m wide along %c",
                             fmt_num(a, gr->radius), fmt_g(b, w), AXIS[k]);
            }
        }
        double vol_sphere = sphere_volume(s->dims, gr->radius);
        double packing = s->dims == 2 ? 0.9069 : 0.7405; /* densest packing of discs / spheres */
        double n_max = floor(packing * box_volume(&gr->region, s->dims) / vol_sphere);
        if ((double)gr->count > n_max) {
            vkey(v, "count");
            return vfail(v, "%ld spheres of radius %s m cannot fit in the %s: at most %.0f at the densest packing",
                         gr->count, fmt_num(a, gr->radius), region ? "region" : "tank", n_max);
        }
        SPHSIM_TRY(venum(v, it, "placement", PLACE_NAMES, PLACE_VALUES, 2, PLACE_LATTICE, &ival));
        gr->placement = (scene_placement)ival;
        SPHSIM_TRY(parse_group_packing(v, it, s, gr, region != NULL));
        SPHSIM_TRY(vint(v, it, "seed", 0, 1, 0, SCENE_SEED_MAX, &x, NULL));
        gr->seed = (uint64_t)x;
        static const double zero[3] = { 0, 0, 0 };
        SPHSIM_TRY(vvec(v, it, "velocity", 0, zero, gr->velocity, NULL));
        SPHSIM_TRY(vnum(v, it, "velocity_jitter", 0, 0.0, R_NONNEG, &gr->velocity_jitter, NULL));
        total += (double)gr->count;
        if (total > SCENE_MAX_PARTICLES)
            return vfail(v, "the sphere groups hold %.3g spheres in all, more than the limit of 2e9", total);
        max_r = fmax(max_r, gr->radius);
        vpop(v, o2);
    }
    vpop(v, old);
    /* The smallest spheres set the lattice and placement grids: at most 1e6 diameters along
     * any tank axis. */
    int i_min = 0;
    for (int i = 1; i < s->n_groups; i++)
        if (s->groups[i].radius < s->groups[i_min].radius) i_min = i;
    for (int k = 0; k < s->dims; k++) {
        double diameters = (s->tank.max[k] - s->tank.min[k]) / (2.0 * s->groups[i_min].radius);
        if (diameters > SCENE_MAX_DIAMETERS) {
            old = vkey(v, "groups");
            vidx(v, i_min);
            vkey(v, "radius");
            return vfail(v,
                         "%s m is too small for the tank: the tank is %.3g sphere diameters along %c; at most 1e6 "
                         "are supported",
                         fmt_num(a, s->groups[i_min].radius), diameters, AXIS[k]);
        }
    }
    SPHSIM_TRY(vnum(v, spheres, "restitution", 0, 0.5, rng(0, 1, 1, 1), &s->restitution, NULL));
    SPHSIM_TRY(vnum(v, spheres, "friction", 0, 0.0, R_FRICTION, &s->friction, NULL));
    const cJSON *walls;
    SPHSIM_TRY(vobj(v, spheres, "walls", 0, NULL, &walls));
    old = vkey(v, "walls");
    if (walls) SPHSIM_TRY(check_keys(v, walls, WALLS_KEYS, COUNT(WALLS_KEYS)));
    SPHSIM_TRY(vnum(v, walls, "restitution", 0, s->restitution, rng(0, 1, 1, 1), &s->wall_restitution, NULL));
    SPHSIM_TRY(vnum(v, walls, "friction", 0, s->friction, R_FRICTION, &s->wall_friction, NULL));
    vpop(v, old);
    SPHSIM_TRY(parse_pairs(v, spheres, s));
    SPHSIM_TRY(vint(v, spheres, "iterations", 0, 4, 1, 100, &x, NULL));
    s->contact_iterations = (int)x;
    s->support = CONTACT_SUPPORT(max_r);
    s->r_max = max_r;

    cJSON *sp = cJSON_AddObjectToObject(resolved, "spheres");
    cJSON *rg = cJSON_AddArrayToObject(sp, "groups");
    for (int i = 0; i < s->n_groups; i++) {
        const scene_sphere_group *gr = &s->groups[i];
        cJSON *go = cJSON_CreateObject();
        add_num(go, "count", (double)gr->count);
        add_num(go, "radius", gr->radius);
        add_num(go, "density", gr->density);
        cJSON *reg = cJSON_AddObjectToObject(go, "region");
        if (gr->shaped_region != SCENE_NO_REGION) region_resolved(reg, s, &s->regions[gr->shaped_region]);
        else {
            cJSON_AddItemToObject(reg, "min", vec_item(gr->region.min, s->dims));
            cJSON_AddItemToObject(reg, "max", vec_item(gr->region.max, s->dims));
        }
        cJSON_AddStringToObject(go, "placement", PLACE_NAMES[gr->placement == PLACE_RANDOM]);
        if (gr->placement == PLACE_LATTICE) {
            if (gr->packing > 0) add_num(go, "packing", gr->packing);
            else add_num(go, "pitch", gr->pitch);
        }
        add_num(go, "seed", (double)gr->seed);
        cJSON_AddItemToObject(go, "velocity", vec_item(gr->velocity, s->dims));
        add_num(go, "velocity_jitter", gr->velocity_jitter);
        cJSON_AddItemToArray(rg, go);
    }
    add_num(sp, "restitution", s->restitution);
    add_num(sp, "friction", s->friction);
    cJSON *rw = cJSON_AddObjectToObject(sp, "walls");
    add_num(rw, "restitution", s->wall_restitution);
    add_num(rw, "friction", s->wall_friction);
    if (s->n_pairs) {
        cJSON *rp = cJSON_AddArrayToObject(sp, "pairs");
        for (int i = 0; i < s->n_pairs; i++) {
            const scene_sphere_pair *q = &s->pairs[i];
            cJSON *po = cJSON_CreateObject(), *pg = cJSON_AddArrayToObject(po, "groups");
            cJSON_AddItemToArray(pg, cJSON_CreateNumber(q->a));
            cJSON_AddItemToArray(pg, q->b == SCENE_WALLS ? cJSON_CreateString("walls") : cJSON_CreateNumber(q->b));
            add_num(po, "restitution", q->restitution);
            add_num(po, "friction", q->friction);
            cJSON_AddItemToArray(rp, po);
        }
    }
    add_num(sp, "iterations", s->contact_iterations);
    return SPHSIM_OK;
}

/* Base name of `path` without a ".json" extension, into name[128]. */
static void default_name(char name[128], const char *path)
{
    if (!path || !*path) {
        snprintf(name, 128, "scene");
        return;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0) n -= 5;
    if (n == 0) {
        snprintf(name, 128, "scene");
        return;
    }
    if (n > 127) n = 127;
    memcpy(name, base, n);
    name[n] = '\0';
}

/* The whole validation and resolution of a parsed scene. */
/* A file named in the scene: relative to the scene file's folder unless absolute. */
static void scene_file_path(const scene *s, const char *file, char *path, size_t n)
{
    const char *slash = strrchr(s->path, '/');
    if (file[0] == '/' || !slash) snprintf(path, n, "%s", file);
    else snprintf(path, n, "%.*s/%s", (int)(slash - s->path), s->path, file);
}

/* Read mesh o (an object's or a region's; `label` names it in messages, "objects[1]") relative
 * to the scene file's directory, check that it is a closed, consistently oriented solid, place it
 * (scale, rotate, translate) and sample its signed distance on a grid appended to *grid
 * (docs/physics.md, "Objects"): spacing half the fluid spacing (SPH) or half the smallest sphere
 * radius of the groups so far (particles), coarser when the grid would pass 3.2e7 nodes; exact
 * within a band of (boundary_layers + 2) spacings (SPH) or 2 r_max + 2 cells of the surface. */
static sphsim_status load_mesh_object(vctx *v, scene *s, scene_object *o, const char *label, float **grid,
                                     size_t *grid_n)
{
    char path[1600], what[64];
    scene_file_path(s, o->file, path, sizeof path);
    snprintf(what, sizeof what, "%s.file", label);
    mesh m;
    SPHSIM_TRY(mesh_read(&m, path, what, &o->file_hash, v->e));
    long open, flipped;
    mesh_check(&m, &open, &flipped);
    if (open != 0 || flipped != 0) {
        mesh_free(&m);
        if (open < 0) return SPHSIM_FAIL(v->e, SPHSIM_E_NOMEM, "out of memory checking a mesh");
        if (open > 0)
            return SPHSIM_FAIL(v->e, SPHSIM_E_SCENE,
                               "%s: mesh '%s' is not closed: %ld open edges (edges not shared by exactly two "
                               "triangles); a solid needs a closed surface",
                               label, o->file, open);
        return SPHSIM_FAIL(v->e, SPHSIM_E_SCENE,
                           "%s: mesh '%s' is inconsistently oriented: %ld edges are run the same way by both "
                           "of their triangles",
                           label, o->file, flipped);
    }
    /* place: world = translate + scale R (center + vertex) */
    double R[9];
    {
        scene_object tmp = *o;
        tmp.shape = GEOM_BOX;
        geom_place(&tmp, 3);
        memcpy(R, tmp.rot, sizeof R);
    }
    double lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
    for (size_t k = 0; k < m.n_vert; ++k) {
        double *x = m.vert + 3 * k, y[3];
        for (int a = 0; a < 3; ++a) y[a] = o->center[a] + x[a];
        for (int a = 0; a < 3; ++a) {
            x[a] = o->translate[a] + o->scale * (R[3 * a] * y[0] + R[3 * a + 1] * y[1] + R[3 * a + 2] * y[2]);
            lo[a] = fmin(lo[a], x[a]);
            hi[a] = fmax(hi[a], x[a]);
        }
    }
    double vol = fabs(mesh_volume(&m));
    if (!(vol > 0)) {
        mesh_free(&m);
        return SPHSIM_FAIL(v->e, SPHSIM_E_SCENE, "%s: mesh '%s' encloses no volume (degenerate)", label, o->file);
    }
    double cell, band;
    if (s->mode == MODE_SPH) {
        cell = 0.5 * s->spacing;
        band = (s->boundary_layers + 2) * s->spacing;
    } else {
        double rmin = INFINITY, rmax = 0;
        for (int g = 0; g < s->n_groups; ++g) {
            rmin = fmin(rmin, s->groups[g].radius);
            rmax = fmax(rmax, s->groups[g].radius);
        }
        cell = 0.5 * rmin;
        band = 2 * rmax;
    }
    long n[3];
    double origin[3];
    for (;;) {
        double nodes = 1;
        const double margin = band + 2 * cell;
        for (int a = 0; a < 3; ++a) {
            origin[a] = lo[a] - margin;
            n[a] = (long)ceil((hi[a] - lo[a] + 2 * margin) / cell) + 1;
            nodes *= (double)n[a];
        }
        if (nodes <= 3.2e7) break;
        cell *= 1.25;
    }
    band += 2 * cell;
    const size_t N = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
    float *g = realloc(*grid, (*grid_n + N) * sizeof *g);
    if (!g) {
        mesh_free(&m);
        return SPHSIM_FAIL(v->e, SPHSIM_E_NOMEM, "out of memory for the signed distance of %s", label);
    }
    *grid = g;
    if (mesh_sdf_grid(&m, origin, cell, n, band, g + *grid_n) != 0) {
        mesh_free(&m);
        return SPHSIM_FAIL(v->e, SPHSIM_E_NOMEM, "out of memory for the signed distance of %s", label);
    }
    o->grid_offset = *grid_n;
    *grid_n += N;
    memcpy(o->grid_origin, origin, sizeof origin);
    o->grid_cell = cell;
    memcpy(o->grid_n, n, sizeof n);
    o->grid_band = band;
    o->n_triangles = (long)m.n_tri;
    o->n_vertices = (long)m.n_vert;
    o->mesh_vert = m.vert; /* kept for the output's /sphsim/geometry */
    o->mesh_tri = m.tri;
    return SPHSIM_OK;
}

/* Do segments p0-p1 and q0-q1 cross (proper intersection or touching)? */
static int segments_meet(const double *p0, const double *p1, const double *q0, const double *q1)
{
    const double d1 = (p1[0] - p0[0]) * (q0[1] - p0[1]) - (p1[1] - p0[1]) * (q0[0] - p0[0]);
    const double d2 = (p1[0] - p0[0]) * (q1[1] - p0[1]) - (p1[1] - p0[1]) * (q1[0] - p0[0]);
    const double d3 = (q1[0] - q0[0]) * (p0[1] - q0[1]) - (q1[1] - q0[1]) * (p0[0] - q0[0]);
    const double d4 = (q1[0] - q0[0]) * (p1[1] - q0[1]) - (q1[1] - q0[1]) * (p1[0] - q0[0]);
    return ((d1 > 0) != (d2 > 0) || d1 == 0 || d2 == 0) && ((d3 > 0) != (d4 > 0) || d3 == 0 || d4 == 0);
}

/* A polygon's points from a text file (path relative to the scene file's folder, as meshes'): one
 * point a line, x and y separated by blanks or a comma; blank lines and '#' comments skipped.
 * *n: the points read. */
static sphsim_status read_polygon_file(vctx *v, const scene *s, const char *file, scene_object *o, long *n)
{
    char path[1600];
    scene_file_path(s, file, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) return vfail(v, "cannot open '%s': %s", path, strerror(errno));
    char line[512];
    long ln = 0;
    *n = 0;
    sphsim_status r = SPHSIM_OK;
    while (r == SPHSIM_OK && fgets(line, sizeof line, f)) {
        ++ln;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        for (char *c = line; *c; ++c)
            if (*c == ',') *c = ' ';
        double x, y;
        char rest[2];
        const int got = sscanf(line, "%lf %lf %1s", &x, &y, rest);
        if (got == EOF || (got <= 0 && strspn(line, " \t\r\n") == strlen(line))) continue;
        if (got != 2 || !isfinite(x) || !isfinite(y))
            r = vfail(v, "'%s' line %ld: expected a point \"x y\" (two numbers, m)", path, ln);
        else if (*n >= SCENE_MAX_POLYGON) r = vfail(v, "'%s' holds more than %d points", path, SCENE_MAX_POLYGON);
        else {
            o->poly[2 * *n] = x;
            o->poly[2 * *n + 1] = y;
            ++*n;
        }
    }
    fclose(f);
    if (r == SPHSIM_OK && *n < 3) r = vfail(v, "'%s' holds %ld points; a polygon needs at least 3", path, *n);
    return r;
}

/* "points" of a 2D polygon: 3 to SCENE_MAX_POLYGON points [x, y], or the name of a file of
 * them (read_polygon_file), a simple polygon (no edge meets another but its neighbours at their
 * shared point) of non-zero area. */
static sphsim_status parse_polygon_points(vctx *v, const scene *s, const cJSON *it, scene_object *o)
{
    const cJSON *pts = get(it, "points");
    char got[160];
    long n = 0;
    size_t old;
    if (pts && cJSON_IsString(pts)) {
        old = vkey(v, "points");
        SPHSIM_TRY(read_polygon_file(v, s, pts->valuestring, o, &n));
    } else {
        SPHSIM_TRY(varr(v, it, "points", 1, 3, SCENE_MAX_POLYGON, "points [x, y] (or a file of them)", &pts));
        old = vkey(v, "points");
        for (const cJSON *p = pts->child; p; p = p->next, ++n) {
            size_t o2 = vidx(v, (int)n);
            if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2) {
                describe(p, got, sizeof got);
                return vfail(v, "expected a point [x, y], got %s", got);
            }
            for (int k = 0; k < 2; ++k) {
                size_t o3 = vidx(v, k);
                SPHSIM_TRY(check_num(v, cJSON_GetArrayItem(p, k), R_ANY, 0, &o->poly[2 * n + k]));
                vpop(v, o3);
            }
            vpop(v, o2);
        }
    }
    o->n_vertices = n;
    double area = 0;
    for (long k = 0; k < n; ++k) {
        const double *a = o->poly + 2 * k, *b = o->poly + 2 * ((k + 1) % n);
        area += a[0] * b[1] - a[1] * b[0];
    }
    /* crossing edges first: a bow tie's signed area can be 0 as well */
    for (long i = 0; i < n; ++i)
        for (long j = i + 1; j < n; ++j) {
            if (j == i + 1 || (i == 0 && j == n - 1)) continue; /* neighbours share a point */
            if (segments_meet(o->poly + 2 * i, o->poly + 2 * ((i + 1) % n), o->poly + 2 * j,
                              o->poly + 2 * ((j + 1) % n)))
                return vfail(v, "the polygon is not simple: edge %ld (points %ld-%ld) meets edge %ld (points %ld-%ld)",
                             i, i, (i + 1) % n, j, j, (j + 1) % n);
        }
    if (!(fabs(area) > 0)) return vfail(v, "the polygon encloses no area (degenerate)");
    vpop(v, old);
    return SPHSIM_OK;
}

/* Place polygon o's points (world = translate + scale R (center + point)) into *grid as floats:
 * scene.geom_grid for an object, where the kernels read them (geom_shared.h), or
 * scene.region_grid for a region. */
static sphsim_status place_polygon(vctx *v, scene_object *o, float **grid, size_t *grid_n)
{
    float *g = realloc(*grid, (*grid_n + 2 * (size_t)o->n_vertices) * sizeof *g);
    if (!g) return SPHSIM_FAIL(v->e, SPHSIM_E_NOMEM, "out of memory placing a polygon");
    *grid = g;
    o->grid_offset = *grid_n;
    scene_object tmp = *o;
    tmp.shape = GEOM_BOX;
    geom_place(&tmp, 2);
    const double *R = tmp.rot;
    for (long k = 0; k < o->n_vertices; ++k) {
        const double p[2] = { o->center[0] + o->poly[2 * k], o->center[1] + o->poly[2 * k + 1] };
        for (int a = 0; a < 2; ++a)
            g[*grid_n + 2 * (size_t)k + (size_t)a] =
                (float)(o->translate[a] + o->scale * (R[3 * a] * p[0] + R[3 * a + 1] * p[1]));
    }
    *grid_n += 2 * (size_t)o->n_vertices;
    return SPHSIM_OK;
}

/* The "shape" of an object or a region (required): GEOM_BOX ... GEOM_POLYGON. */
static sphsim_status parse_shape_kind(vctx *v, const cJSON *it, const scene *s, int *shape)
{
    if (!get(it, "shape")) {
        vkey(v, "shape");
        return vfail(v, "required key missing (expected %s)",
                     s->dims == 3 ? "\"box\", \"sphere\", \"cylinder\" or \"mesh\""
                                  : "\"rectangle\", \"circle\" or \"polygon\"");
    }
    if (s->dims == 3)
        SPHSIM_TRY(venum(v, it, "shape", SHAPE_NAMES_3D, SHAPE_VALUES_3D, COUNT(SHAPE_NAMES_3D), -1, shape));
    else SPHSIM_TRY(venum(v, it, "shape", SHAPE_NAMES_2D, SHAPE_VALUES_2D, COUNT(SHAPE_NAMES_2D), -1, shape));
    return SPHSIM_OK;
}

/* The geometry of an object or a region of shape `shape` (parse_shape_kind): its centre, sizes,
 * the keys of other shapes refused, its transform; placed (geom_place), a mesh read and sampled
 * and a polygon's points placed into *grid (scene.geom_grid for objects, scene.region_grid for
 * regions). `label` names it in the messages of its mesh ("objects[1]"). */
static sphsim_status parse_shape(vctx *v, const cJSON *it, scene *s, scene_object *o, int shape, const char *label,
                                 float **grid, size_t *grid_n)
{
    o->shape = (unsigned)shape;
    const double zero[3] = { 0, 0, 0 }, ez[3] = { 0, 0, 1 };
    SPHSIM_TRY(vvec(v, it, "center", 0, zero, o->center, NULL));
    const char *allowed[4];
    int n_allowed = 0;
    if (shape == GEOM_BOX) {
        SPHSIM_TRY(vvec(v, it, "size", 1, NULL, o->size, NULL));
        size_t o2 = vkey(v, "size");
        for (int k = 0; k < s->dims; ++k)
            if (!(o->size[k] > 0)) {
                vidx(v, k);
                return vfail(v, "expected a size > 0 m, got %g m; the %s is degenerate", o->size[k],
                             s->dims == 3 ? "box" : "rectangle");
            }
        vpop(v, o2);
        allowed[n_allowed++] = "size";
    } else if (shape == GEOM_POLYGON) {
        SPHSIM_TRY(parse_polygon_points(v, s, it, o));
        allowed[n_allowed++] = "points";
    } else if (shape == GEOM_MESH) {
        SPHSIM_TRY(vfile(v, it, "the path of an STL or OBJ file", o->file, sizeof o->file));
        allowed[n_allowed++] = "file";
        allowed[n_allowed++] = "file_fnv1a";
    } else {
        SPHSIM_TRY(vnum(v, it, "radius", 1, 0, R_POS, &o->radius, NULL));
        allowed[n_allowed++] = "radius";
    }
    if (shape == GEOM_CYLINDER) {
        SPHSIM_TRY(vnum(v, it, "length", 1, 0, R_POS, &o->length, NULL));
        SPHSIM_TRY(vvec(v, it, "axis", 0, ez, o->axis, NULL));
        if (o->axis[0] == 0 && o->axis[1] == 0 && o->axis[2] == 0) {
            size_t o2 = vkey(v, "axis");
            (void)o2;
            return vfail(v, "the axis [0, 0, 0] has no direction");
        }
        allowed[n_allowed++] = "length";
        allowed[n_allowed++] = "axis";
    } else {
        memcpy(o->axis, ez, sizeof ez);
    }
    /* keys of other shapes */
    static const char *const SHAPE_KEYS[] = { "size", "radius", "length", "axis", "file", "file_fnv1a", "points" };
    for (int k = 0; k < COUNT(SHAPE_KEYS); ++k) {
        int ok = 0;
        for (int a = 0; a < n_allowed; ++a) ok |= strcmp(SHAPE_KEYS[k], allowed[a]) == 0;
        if (!ok && get(it, SHAPE_KEYS[k])) {
            size_t o2 = vkey(v, SHAPE_KEYS[k]);
            (void)o2;
            return vfail(v, "not a key of shape \"%s\"",
                         cJSON_GetObjectItemCaseSensitive(it, "shape")->valuestring);
        }
    }
    /* transform */
    const cJSON *tr, *rot = NULL;
    SPHSIM_TRY(vobj(v, it, "transform", 0, NULL, &tr));
    size_t o2 = vkey(v, "transform");
    if (tr) SPHSIM_TRY(check_keys(v, tr, TRANSFORM_KEYS, COUNT(TRANSFORM_KEYS)));
    SPHSIM_TRY(vvec(v, tr, "translate", 0, zero, o->translate, NULL));
    SPHSIM_TRY(vnum(v, tr, "scale", 0, 1.0, R_POS, &o->scale, NULL));
    SPHSIM_TRY(vobj(v, tr, "rotate", 0, NULL, &rot));
    size_t o3 = vkey(v, "rotate");
    if (rot) SPHSIM_TRY(check_keys(v, rot, ROTATE_KEYS, COUNT(ROTATE_KEYS)));
    memcpy(o->rot_axis, ez, sizeof ez);
    if (s->dims == 3) {
        SPHSIM_TRY(vvec(v, rot, "axis", 0, ez, o->rot_axis, NULL));
        if (o->rot_axis[0] == 0 && o->rot_axis[1] == 0 && o->rot_axis[2] == 0) {
            vkey(v, "axis");
            return vfail(v, "the axis [0, 0, 0] has no direction");
        }
    } else if (get(rot, "axis")) {
        vkey(v, "axis");
        return vfail(v, "not allowed in 2D: a 2D object turns about z; give \"degrees\" only");
    }
    SPHSIM_TRY(vnum(v, rot, "degrees", 0, 0.0, R_ANY, &o->degrees, NULL));
    vpop(v, o3);
    vpop(v, o2);
    geom_place(o, s->dims);
    if (shape == GEOM_MESH) {
        SPHSIM_TRY(load_mesh_object(v, s, o, label, grid, grid_n));
        SPHSIM_TRY(vhash(v, it, o->file, o->file_hash));
    }
    if (shape == GEOM_POLYGON) SPHSIM_TRY(place_polygon(v, o, grid, grid_n));

    return SPHSIM_OK;
}

/* The resolved form of object or region o's geometry, from "center" to "transform", into ro. */
static void shape_resolved(cJSON *ro, const scene *s, const scene_object *o)
{
    const unsigned shape = o->shape;
    cJSON_AddItemToObject(ro, "center", vec_item(o->center, s->dims));
    if (shape == GEOM_BOX) cJSON_AddItemToObject(ro, "size", vec_item(o->size, s->dims));
    else if (shape == GEOM_POLYGON) {
        cJSON *pts = cJSON_AddArrayToObject(ro, "points");
        for (long k = 0; k < o->n_vertices; ++k) cJSON_AddItemToArray(pts, vec_item(o->poly + 2 * k, 2));
    } else if (shape == GEOM_MESH) {
        add_file(ro, o->file, (unsigned long long)o->file_hash);
    } else add_num(ro, "radius", o->radius);
    if (shape == GEOM_CYLINDER) {
        add_num(ro, "length", o->length);
        cJSON_AddItemToObject(ro, "axis", vec_item(o->axis, 3));
    }
    cJSON *rt = cJSON_AddObjectToObject(ro, "transform");
    cJSON_AddItemToObject(rt, "translate", vec_item(o->translate, s->dims));
    cJSON *rr = cJSON_AddObjectToObject(rt, "rotate");
    if (s->dims == 3) cJSON_AddItemToObject(rr, "axis", vec_item(o->rot_axis, 3));
    add_num(rr, "degrees", o->degrees);
    add_num(rt, "scale", o->scale);
}

static const char *shape_name(const scene *s, unsigned shape)
{
    return s->dims == 3 ? SHAPE_NAMES_3D[shape] : SHAPE_NAMES_2D[shape == GEOM_POLYGON ? 2 : shape];
}

/* A shaped region (scene.h, scene_region) at the path v stands at: "shape" and the keys of an
 * object's shape, or "fill": "container"; "above" and "below" on the vertical axis. Its bounds:
 * the tank, cut by the shape's box and the levels. `label` names it in its mesh's messages. */
static sphsim_status parse_region(vctx *v, const cJSON *it, scene *s, scene_region *r, const char *label)
{
    char got[160], a[40], b[40];
    if (!cJSON_IsObject(it)) {
        describe(it, got, sizeof got);
        return vfail(v, "expected an object {\"shape\": .., ...} or {\"fill\": \"container\", ...}, got %s", got);
    }
    SPHSIM_TRY(check_keys(v, it, REGION_KEYS, COUNT(REGION_KEYS)));
    const cJSON *sh = get(it, "shape"), *fi = get(it, "fill");
    if (sh && fi) {
        vkey(v, "fill");
        return vfail(v, "not allowed together with \"shape\": a region is a shape to fill or \"fill\": "
                        "\"container\", not both");
    }
    if (!sh && !fi)
        return vfail(v, "expected \"shape\" (a solid to fill, with the keys of an object's shape) or \"fill\": "
                        "\"container\" (the room the tank and its containers leave)");
    memset(r, 0, sizeof *r);
    int dims = s->dims;
    if (fi) {
        int f = 0;
        SPHSIM_TRY(venum(v, it, "fill", FILL_NAMES, FILL_VALUES, COUNT(FILL_NAMES), REGION_CONTAINER, &f));
        r->fill = (scene_region_fill)f;
        static const char *const SHAPE_ONLY[] = { "center", "size", "radius", "length",
                                                  "axis",   "file", "points", "transform" };
        for (int k = 0; k < COUNT(SHAPE_ONLY); ++k)
            if (get(it, SHAPE_ONLY[k])) {
                vkey(v, SHAPE_ONLY[k]);
                return vfail(v, "only with \"shape\" (a \"fill\": \"container\" region takes the tank's shape)");
            }
    } else {
        int shape = -1;
        SPHSIM_TRY(parse_shape_kind(v, it, s, &shape));
        r->fill = REGION_SHAPE;
        r->shape.role = OBJ_OBSTACLE; /* its signed distance: negative inside the shape */
        snprintf(r->shape.name, sizeof r->shape.name, "%s", label);
        SPHSIM_TRY(parse_shape(v, it, s, &r->shape, shape, label, &s->region_grid, &s->region_grid_n));
    }
    int above_given = 0, below_given = 0;
    SPHSIM_TRY(vnum(v, it, "above", 0, -INFINITY, R_ANY, &r->above, &above_given));
    SPHSIM_TRY(vnum(v, it, "below", 0, INFINITY, R_ANY, &r->below, &below_given));
    if (above_given && below_given && !(r->below > r->above)) {
        vkey(v, "below");
        return vfail(v, "must be greater than \"above\" (%s m), got %s m; the region is empty", fmt_num(a, r->above),
                     fmt_num(b, r->below));
    }
    r->bounds = s->tank;
    if (r->fill == REGION_SHAPE) {
        double lo[3], hi[3];
        geom_bounds(&r->shape, s->region_grid, dims, lo, hi);
        for (int k = 0; k < dims; ++k) {
            r->bounds.min[k] = fmax(r->bounds.min[k], lo[k]);
            r->bounds.max[k] = fmin(r->bounds.max[k], hi[k]);
        }
    }
    r->bounds.min[dims - 1] = fmax(r->bounds.min[dims - 1], r->above);
    r->bounds.max[dims - 1] = fmin(r->bounds.max[dims - 1], r->below);
    return SPHSIM_OK;
}

/* The resolved form of region r into ro. */
static void region_resolved(cJSON *ro, const scene *s, const scene_region *r)
{
    if (r->fill == REGION_CONTAINER) cJSON_AddStringToObject(ro, "fill", FILL_NAMES[0]);
    else {
        cJSON_AddStringToObject(ro, "shape", shape_name(s, r->shape.shape));
        shape_resolved(ro, s, &r->shape);
    }
    if (isfinite(r->above)) add_num(ro, "above", r->above);
    if (isfinite(r->below)) add_num(ro, "below", r->below);
}

/* "fluid.regions": up to SCENE_MAX_REGIONS shaped regions filled with fluid (parse_region). */
static sphsim_status parse_fluid_regions(vctx *v, const cJSON *fluid, scene *s)
{
    const cJSON *arr;
    SPHSIM_TRY(varr(v, fluid, "regions", 0, 1, SCENE_MAX_REGIONS, "fluid regions", &arr));
    if (!arr) return SPHSIM_OK;
    size_t old = vkey(v, "regions");
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, ++i) {
        size_t o1 = vidx(v, i);
        char label[32];
        snprintf(label, sizeof label, "fluid.regions[%d]", i);
        s->n_regions = s->n_fluid_regions = i + 1; /* scene_free frees its mesh from here on */
        SPHSIM_TRY(parse_region(v, it, s, &s->regions[i], label));
        vpop(v, o1);
    }
    vpop(v, old);
    return SPHSIM_OK;
}

/* A motion table's rows (segment g, type "table"): a CSV file beside the scene (as a mesh's
 * `file`), one row a line: tau (s after the segment's start), the displacement's `dims`
 * components (m), and optionally an angle (degrees) about the body's axis; numbers separated by
 * commas, semicolons or blanks; blank lines, '#' comments and one header line of names
 * skipped. Times increase strictly from tau >= 0. */
static sphsim_status read_motion_table(vctx *v, const scene *s, scene_motion_segment *g)
{
    char path[1600];
    scene_file_path(s, g->file, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return vfail(v, "cannot open '%s': %s", path, strerror(errno));
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap + 1);
    for (size_t got = 1; buf && got > 0;) {
        if (len == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    }
    fclose(f);
    if (!buf || len == cap) {
        free(buf);
        return SPHSIM_FAIL(v->e, SPHSIM_E_NOMEM, "out of memory reading '%s'", path);
    }
    buf[len] = '\0';
    g->file_hash = mesh_fnv1a((const unsigned char *)buf, len);
    long n = 0, ln = 0, rows_cap = 0;
    int cols = 0, content = 0;
    sphsim_status r = SPHSIM_OK;
    for (char *line = buf, *next; r == SPHSIM_OK && line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        ++ln;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        for (char *c = line; *c; ++c)
            if (*c == ',' || *c == ';' || *c == '\r' || *c == '\t') *c = ' ';
        if (strspn(line, " ") == strlen(line)) continue;
        double x[7];
        int k = 0;
        char *c = line, *end;
        while (k < 7) {
            while (*c == ' ') ++c;
            if (!*c) break;
            x[k] = strtod(c, &end);
            if (end == c || (*end && *end != ' ')) {
                k = -1;
                break;
            }
            ++k;
            c = end;
        }
        if (k < 0 && !content) { /* a header line */
            content = 1;
            continue;
        }
        content = 1;
        if (k != 1 + v->dims && k != 2 + v->dims) {
            r = vfail(v, "'%s' line %ld: expected a row \"t, %s[, angle]\" (%d or %d numbers)", path, ln,
                      v->dims == 2 ? "dx, dy" : "dx, dy, dz", 1 + v->dims, 2 + v->dims);
            break;
        }
        if (cols && k != cols) {
            r = vfail(v, "'%s' line %ld: %d numbers, the rows before have %d", path, ln, k, cols);
            break;
        }
        cols = k;
        for (int q = 0; q < k && r == SPHSIM_OK; ++q)
            if (!isfinite(x[q])) r = vfail(v, "'%s' line %ld: a number too large in magnitude", path, ln);
        if (r != SPHSIM_OK) break;
        if (n == 0 && x[0] < 0) r = vfail(v, "'%s' line %ld: the time %g s is negative", path, ln, x[0]);
        else if (n > 0 && !(x[0] > g->rows[5 * (n - 1)]))
            r = vfail(v, "'%s' line %ld: the time %g s does not follow the row before's (%g s); times must increase",
                      path, ln, x[0], g->rows[5 * (n - 1)]);
        else if (n >= SCENE_MAX_TABLE_ROWS) r = vfail(v, "'%s' holds more than %d rows", path, SCENE_MAX_TABLE_ROWS);
        if (r != SPHSIM_OK) break;
        if (n == rows_cap) {
            rows_cap = rows_cap ? 2 * rows_cap : 256;
            double *nr = realloc(g->rows, (size_t)rows_cap * 5 * sizeof *nr);
            if (!nr) {
                r = SPHSIM_FAIL(v->e, SPHSIM_E_NOMEM, "out of memory reading '%s'", path);
                break;
            }
            g->rows = nr;
        }
        double *row = g->rows + 5 * n++;
        memset(row, 0, 5 * sizeof *row);
        row[0] = x[0];
        for (int a = 0; a < v->dims; ++a) row[1 + a] = x[1 + a];
        if (k == 2 + v->dims) row[4] = x[1 + v->dims] * M_PI / 180.0;
    }
    free(buf);
    g->n_rows = n;
    g->has_angle = cols == 2 + v->dims;
    if (r == SPHSIM_OK && n == 0) r = vfail(v, "'%s' holds no rows", path);
    return r;
}

/* "motion" of the tank or of an object (docs/scene-format.md, "Motion"): its segments in time
 * order, into m, and their resolved form into res. def_center: the default centre of turns (the
 * tank's or the object's centre). */
static sphsim_status parse_motion(vctx *v, const cJSON *parent, scene *s, scene_motion *m, const double def_center[3],
                                  cJSON *res)
{
    const cJSON *arr;
    char got[160], a[40], b[40];
    SPHSIM_TRY(varr(v, parent, "motion", 0, 1, SCENE_MAX_SEGMENTS, "motion segments", &arr));
    if (!arr) return SPHSIM_OK;
    size_t old = vkey(v, "motion");
    const double ez[3] = { 0, 0, 1 };
    memcpy(m->center, def_center, sizeof m->center);
    memcpy(m->axis, ez, sizeof m->axis);
    int turned_by = -1; /* the first segment that turns the body */
    double prev_end = 0.0;
    const int n = cJSON_GetArraySize(arr);
    cJSON *ra = cJSON_AddArrayToObject(res, "motion");
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, ++i) {
        size_t o1 = vidx(v, i);
        scene_motion_segment *g = &m->seg[i];
        if (!cJSON_IsObject(it)) {
            describe(it, got, sizeof got);
            return vfail(v, "expected an object {\"type\": ..., ...}, got %s", got);
        }
        SPHSIM_TRY(check_keys(v, it, MOTION_KEYS, COUNT(MOTION_KEYS)));
        if (!get(it, "type")) {
            vkey(v, "type");
            return vfail(v, "required key missing (expected \"sine\", \"rotation\", \"constant\" or \"table\")");
        }
        int type, end_given;
        SPHSIM_TRY(venum(v, it, "type", MOTION_NAMES, MOTION_VALUES, COUNT(MOTION_NAMES), -1, &type));
        g->type = type;
        SPHSIM_TRY(vnum(v, it, "start", 0, prev_end, R_NONNEG, &g->start, NULL));
        if (g->start < prev_end) {
            vkey(v, "start");
            return vfail(v, "%s s is before the end of motion[%d] (%s s); segments follow each other in time",
                         fmt_num(a, g->start), i - 1, fmt_num(b, prev_end));
        }
        SPHSIM_TRY(vnum(v, it, "end", 0, INFINITY, R_ANY, &g->end, &end_given));
        if (!end_given && i < n - 1) {
            vkey(v, "end");
            return vfail(v, "required key missing (expected a time > start; only the last segment may leave it out)");
        }
        if (!(g->end > g->start)) {
            vkey(v, "end");
            return vfail(v, "expected a time > start (%s s), got %s s", fmt_num(a, g->start), fmt_num(b, g->end));
        }
        /* the keys of each type; the others' are errors */
        static const char *const TYPE_KEYS[4][4] = { { "amplitude", "frequency", "phase", NULL },
                                                     { "amplitude", "frequency", "phase", "center" },
                                                     { "velocity", NULL, NULL, NULL },
                                                     { "file", "center", NULL, NULL } };
        static const char *const OWN_KEYS[] = { "amplitude", "frequency", "phase", "velocity", "center", "axis", "file" };
        for (int k = 0; k < COUNT(OWN_KEYS); ++k) {
            int ok = strcmp(OWN_KEYS[k], "axis") == 0 && (type == MOTION_ROTATION || type == MOTION_TABLE);
            for (int q = 0; q < 4; ++q) ok |= TYPE_KEYS[type][q] && strcmp(TYPE_KEYS[type][q], OWN_KEYS[k]) == 0;
            if (!ok && get(it, OWN_KEYS[k])) {
                vkey(v, OWN_KEYS[k]);
                return vfail(v, "not a key of motion type \"%s\"", MOTION_NAMES[type]);
            }
        }
        cJSON *rs = cJSON_CreateObject();
        cJSON_AddItemToArray(ra, rs);
        cJSON_AddStringToObject(rs, "type", MOTION_NAMES[type]);
        add_num(rs, "start", g->start);
        if (end_given) add_num(rs, "end", g->end);
        int turns = type == MOTION_ROTATION;
        if (type == MOTION_SINE || type == MOTION_ROTATION) {
            if (type == MOTION_SINE) {
                SPHSIM_TRY(vvec(v, it, "amplitude", 1, NULL, g->amplitude, NULL));
                cJSON_AddItemToObject(rs, "amplitude", vec_item(g->amplitude, s->dims));
            } else {
                double deg;
                SPHSIM_TRY(vnum(v, it, "amplitude", 1, 0, R_ANY, &deg, NULL));
                g->amplitude[0] = deg * M_PI / 180.0;
                add_num(rs, "amplitude", deg);
            }
            SPHSIM_TRY(vnum(v, it, "frequency", 1, 0, R_POS, &g->frequency, NULL));
            SPHSIM_TRY(vnum(v, it, "phase", 0, 0.0, R_ANY, &g->phase, NULL));
            add_num(rs, "frequency", g->frequency);
            add_num(rs, "phase", g->phase);
        } else if (type == MOTION_CONSTANT) {
            SPHSIM_TRY(vvec(v, it, "velocity", 1, NULL, g->velocity, NULL));
            cJSON_AddItemToObject(rs, "velocity", vec_item(g->velocity, s->dims));
        } else {
            SPHSIM_TRY(vfile(v, it, "the path of a CSV file", g->file, sizeof g->file));
            size_t o2 = vkey(v, "file");
            m->n_segments = i + 1; /* scene_free frees its rows from here on */
            SPHSIM_TRY(read_motion_table(v, s, g));
            vpop(v, o2);
            SPHSIM_TRY(vhash(v, it, g->file, g->file_hash));
            add_file(rs, g->file, (unsigned long long)g->file_hash);
            turns = g->has_angle;
            if (!turns && (get(it, "center") || get(it, "axis"))) {
                vkey(v, get(it, "center") ? "center" : "axis");
                return vfail(v, "the table has no angle column: nothing turns about it");
            }
        }
        if (turns) {
            double c[3], ax[3];
            SPHSIM_TRY(vvec(v, it, "center", 0, turned_by >= 0 ? m->center : def_center, c, NULL));
            memcpy(ax, turned_by >= 0 ? m->axis : ez, sizeof ax);
            if (s->dims == 3) {
                SPHSIM_TRY(vvec(v, it, "axis", 0, ax, ax, NULL));
                const double l = sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
                if (!(l > 0)) {
                    vkey(v, "axis");
                    return vfail(v, "the axis [0, 0, 0] has no direction");
                }
                for (int k = 0; k < 3; ++k) ax[k] /= l;
            } else if (get(it, "axis")) {
                vkey(v, "axis");
                return vfail(v, "not allowed in 2D: a 2D body turns about z");
            }
            if (turned_by >= 0 && (memcmp(c, m->center, sizeof c) != 0 || memcmp(ax, m->axis, sizeof ax) != 0)) {
                vkey(v, memcmp(c, m->center, sizeof c) != 0 ? "center" : "axis");
                return vfail(v, "differs from motion[%d]'s; a body turns about one centre and one axis", turned_by);
            }
            memcpy(m->center, c, sizeof c);
            memcpy(m->axis, ax, sizeof ax);
            if (turned_by < 0) turned_by = i;
            m->rotates = 1;
            cJSON_AddItemToObject(rs, "center", vec_item(m->center, s->dims));
            if (s->dims == 3) cJSON_AddItemToObject(rs, "axis", vec_item(m->axis, 3));
        }
        prev_end = g->end;
        m->n_segments = i + 1;
        vpop(v, o1);
    }
    vpop(v, old);
    return SPHSIM_OK;
}

/* "objects": solid obstacles (docs/scene-format.md, "Objects"), placed (geom_place) and written
 * into the resolved JSON as given with their defaults. */
static sphsim_status parse_objects(vctx *v, const cJSON *root, scene *s, cJSON *res)
{
    const cJSON *arr;
    char got[160];
    SPHSIM_TRY(varr(v, root, "objects", 0, 1, SCENE_MAX_OBJECTS, "objects", &arr));
    s->n_objects = 0;
    if (!arr) return SPHSIM_OK;
    size_t old = vkey(v, "objects");
    cJSON *ra = cJSON_AddArrayToObject(res, "objects");
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, ++i) {
        size_t o1 = vidx(v, i);
        scene_object *o = &s->objects[i];
        memset(o, 0, sizeof *o);
        if (!cJSON_IsObject(it)) {
            describe(it, got, sizeof got);
            return vfail(v, "expected an object {\"shape\": .., ...}, got %s", got);
        }
        SPHSIM_TRY(check_keys(v, it, OBJECT_KEYS, COUNT(OBJECT_KEYS)));
        snprintf(o->name, sizeof o->name, "object%d", i);
        const cJSON *nm = get(it, "name");
        if (nm) {
            size_t o2 = vkey(v, "name");
            if (!cJSON_IsString(nm) || !nm->valuestring[0] || strlen(nm->valuestring) >= sizeof o->name) {
                describe(nm, got, sizeof got);
                return vfail(v, "expected a string of 1 to %zu characters, got %s", sizeof o->name - 1, got);
            }
            for (int k = 0; k < i; ++k) /* force gauges name their object */
                if (strcmp(s->objects[k].name, nm->valuestring) == 0)
                    return vfail(v, "\"%.80s\" is already the name of objects[%d]", nm->valuestring, k);
            snprintf(o->name, sizeof o->name, "%s", nm->valuestring);
            vpop(v, o2);
        }
        int shape = -1, role;
        SPHSIM_TRY(parse_shape_kind(v, it, s, &shape));
        SPHSIM_TRY(venum(v, it, "role", ROLE_NAMES, ROLE_VALUES, COUNT(ROLE_NAMES), OBJ_OBSTACLE, &role));
        o->role = role;
        char label[32];
        snprintf(label, sizeof label, "objects[%d]", i);
        s->n_objects = i + 1; /* scene_free frees its mesh from here on */
        SPHSIM_TRY(parse_shape(v, it, s, o, shape, label, &s->geom_grid, &s->geom_grid_n));
        double blo[3], bhi[3]; /* an object wholly outside the tank, where no motion brings it, does nothing */
        geom_bounds(o, s->geom_grid, s->dims, blo, bhi);
        const int moves = get(it, "motion") != NULL;
        for (int a = 0; a < s->dims && !moves; ++a)
            if (bhi[a] < s->tank.min[a] || blo[a] > s->tank.max[a])
                return vfail(v, "lies outside the tank: along %c it spans [%g, %g] m, the tank [%g, %g] m", AXIS[a],
                             blo[a], bhi[a], s->tank.min[a], s->tank.max[a]);

        cJSON *ro = cJSON_CreateObject();
        cJSON_AddItemToArray(ra, ro);
        cJSON_AddStringToObject(ro, "name", o->name);
        cJSON_AddStringToObject(ro, "shape", shape_name(s, o->shape));
        cJSON_AddStringToObject(ro, "role", ROLE_NAMES[o->role]);
        shape_resolved(ro, s, o);
        SPHSIM_TRY(parse_motion(v, it, s, &o->motion, o->origin, ro));
        vpop(v, o1);
        s->n_objects = i + 1;
    }
    vpop(v, old);
    return SPHSIM_OK;
}

/* One gauge of "gauges" (SPH mode): its name, type, point and object; the interval's steps come
 * later, with the time step (resolve). */
static sphsim_status parse_gauge(vctx *v, const cJSON *it, scene *s, scene_gauge *gg)
{
    char got[160];
    if (!cJSON_IsObject(it)) {
        describe(it, got, sizeof got);
        return vfail(v, "expected an object {\"name\": ..., \"type\": ..., \"point\": [...]}, got %s", got);
    }
    SPHSIM_TRY(check_keys(v, it, GAUGE_KEYS, COUNT(GAUGE_KEYS)));
    const cJSON *nm = get(it, "name");
    size_t old = vkey(v, "name");
    if (!nm) return vfail(v, "required key missing (expected a name of letters, digits, '_', '-' or '.')");
    if (!cJSON_IsString(nm) || !nm->valuestring[0] || strlen(nm->valuestring) >= SCENE_GAUGE_NAME) {
        describe(nm, got, sizeof got);
        return vfail(v, "expected a name of 1 to %d letters, digits, '_', '-' or '.', got %s", SCENE_GAUGE_NAME - 1,
                     got);
    }
    for (const char *c = nm->valuestring; *c; ++c)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
            return vfail(v,
                         "\"%.80s\": a gauge's name (an HDF5 dataset's) takes letters, digits, '_', '-' and '.' "
                         "only",
                         nm->valuestring);
    if (strspn(nm->valuestring, ".") == strlen(nm->valuestring))
        return vfail(v, "\"%.80s\": a gauge's name (an HDF5 dataset's) needs a letter, digit, '_' or '-'",
                     nm->valuestring);
    for (int k = 0; k < s->n_gauges; ++k)
        if (strcmp(s->gauges[k].name, nm->valuestring) == 0)
            return vfail(v, "\"%.80s\" is already the name of gauges[%d]", nm->valuestring, k);
    snprintf(gg->name, sizeof gg->name, "%s", nm->valuestring);
    vpop(v, old);
    if (!get(it, "type")) {
        old = vkey(v, "type");
        return vfail(v, "required key missing (expected one of \"pressure\", \"velocity\", \"height\", \"force\")");
    }
    int type = 0;
    SPHSIM_TRY(venum(v, it, "type", GAUGE_NAMES, GAUGE_VALUES, COUNT(GAUGE_NAMES), 0, &type));
    gg->type = (scene_gauge_type)type;
    double centre[3] = { 0, 0, 0 };
    for (int a = 0; a < s->dims; ++a) centre[a] = 0.5 * (s->tank.min[a] + s->tank.max[a]);
    int given = 0;
    SPHSIM_TRY(vvec(v, it, "point", gg->type != GAUGE_FORCE, centre, gg->point, &given));
    /* a probe inside the tank; a height gauge's line through it (its vertical coordinate aside) */
    const int axes = gg->type == GAUGE_HEIGHT ? s->dims - 1 : s->dims;
    for (int a = 0; a < axes && gg->type != GAUGE_FORCE; ++a)
        if (!(gg->point[a] >= s->tank.min[a] && gg->point[a] <= s->tank.max[a])) {
            char x[40], lo[40], hi[40];
            old = vkey(v, "point");
            return vfail(v, "%c = %s m lies outside the tank (%s to %s m)", AXIS[a], fmt_num(x, gg->point[a]),
                         fmt_num(lo, s->tank.min[a]), fmt_num(hi, s->tank.max[a]));
        }
    if (gg->type == GAUGE_HEIGHT) gg->point[s->dims - 1] = s->tank.min[s->dims - 1];
    const cJSON *ob = get(it, "object");
    old = vkey(v, "object");
    snprintf(gg->object, sizeof gg->object, "tank");
    if (ob && gg->type != GAUGE_FORCE) return vfail(v, "only a \"force\" gauge takes an object");
    gg->object_index = -1;
    if (ob) {
        int found = cJSON_IsString(ob) && strcmp(ob->valuestring, "tank") == 0;
        for (int k = 0; !found && cJSON_IsString(ob) && k < s->n_objects; ++k)
            if (strcmp(ob->valuestring, s->objects[k].name) == 0) {
                found = 1;
                gg->object_index = k;
            }
        if (!found) {
            describe(ob, got, sizeof got);
            return vfail(v, "expected \"tank\" or the name of one of the %d objects, got %s", s->n_objects, got);
        }
        snprintf(gg->object, sizeof gg->object, "%s", ob->valuestring);
    }
    vpop(v, old);
    SPHSIM_TRY(vnum(v, it, "interval", 0, 0.0, R_NONNEG, &gg->interval, NULL));
    /* derived (a resolved scene read back): checked once the time step is known */
    double every = 0;
    SPHSIM_TRY(vint(v, it, "every_steps", 0, 0, 1, 1e15, &every, NULL));
    gg->every_given = (long)every;
    return SPHSIM_OK;
}

static sphsim_status parse_gauges(vctx *v, const cJSON *root, scene *s)
{
    const cJSON *arr;
    s->n_gauges = 0;
    SPHSIM_TRY(varr(v, root, "gauges", 0, 0, SCENE_MAX_GAUGES, "gauges", &arr));
    if (!arr) return SPHSIM_OK;
    size_t old = vkey(v, "gauges");
    if (s->mode != MODE_SPH && cJSON_GetArraySize(arr) > 0)
        return vfail(v, "gauges measure the fluid: mode \"sph\" only");
    for (const cJSON *it = arr->child; it; it = it->next) {
        size_t o2 = vidx(v, s->n_gauges);
        SPHSIM_TRY(parse_gauge(v, it, s, &s->gauges[s->n_gauges]));
        vpop(v, o2);
        s->n_gauges++;
    }
    vpop(v, old);
    return SPHSIM_OK;
}

static sphsim_status resolve(vctx *v, const cJSON *root, scene *s, cJSON *res)
{
    char got[160], a[40], b[40];
    int ival, given = 0;
    size_t old;
    if (!cJSON_IsObject(root)) {
        describe(root, got, sizeof got);
        return vfail(v, "expected a JSON object at the top level of the scene, got %s", got);
    }

    /* format first: a scene of another format may use other keys */
    const cJSON *fmt = get(root, "format");
    old = vkey(v, "format");
    if (!fmt)
        return vfail(v, "required key missing (expected %d, the scene format this sphsim reads)", SCENE_FORMAT_VERSION);
    describe(fmt, got, sizeof got);
    if (!cJSON_IsNumber(fmt)) return vfail(v, "expected the number %d, got %s", SCENE_FORMAT_VERSION, got);
    if (fmt->valuedouble != SCENE_FORMAT_VERSION)
        return vfail(v, "unsupported scene format %s; this sphsim reads format %d", got, SCENE_FORMAT_VERSION);
    vpop(v, old);
    s->format = SCENE_FORMAT_VERSION;
    SPHSIM_TRY(check_keys(v, root, TOP_KEYS, COUNT(TOP_KEYS)));

    /* name */
    const cJSON *name = get(root, "name");
    if (name) {
        old = vkey(v, "name");
        if (!cJSON_IsString(name)) {
            describe(name, got, sizeof got);
            return vfail(v, "expected a string, got %s", got);
        }
        size_t n = strlen(name->valuestring);
        if (n == 0 || n > 127) return vfail(v, "expected a string of 1 to 127 characters, got %zu characters", n);
        for (size_t i = 0; i < n; i++)
            if (iscntrl((unsigned char)name->valuestring[i]))
                return vfail(v, "control characters (tab, newline, ...) are not allowed in the name");
        /* the default output file is NAME.h5 in the current directory */
        if (strchr(name->valuestring, '/') || strcmp(name->valuestring, ".") == 0 ||
            strcmp(name->valuestring, "..") == 0)
            return vfail(v,
                         "\"%.80s\": the name is the default output file's (NAME.h5 in the current directory): no '/', "
                         "and not \".\" or \"..\"",
                         name->valuestring);
        snprintf(s->name, sizeof s->name, "%s", name->valuestring);
        vpop(v, old);
    }

    /* dimensions */
    const cJSON *dim = get(root, "dimensions");
    old = vkey(v, "dimensions");
    if (!dim) return vfail(v, "required key missing (expected 2 or 3)");
    if (!cJSON_IsNumber(dim) || (dim->valuedouble != 2.0 && dim->valuedouble != 3.0)) {
        describe(dim, got, sizeof got);
        return vfail(v, "expected 2 or 3, got %s", got);
    }
    vpop(v, old);
    s->dims = v->dims = (int)dim->valuedouble;

    SPHSIM_TRY(venum(v, root, "mode", MODE_NAMES, MODE_VALUES, 2, MODE_SPH, &ival));
    s->mode = (scene_mode)ival;

    /* tank */
    const cJSON *tank;
    SPHSIM_TRY(vobj(v, root, "tank", 1, " (expected {\"min\": [..], \"max\": [..]})", &tank));
    old = vkey(v, "tank");
    SPHSIM_TRY(vbox(v, tank, NULL, "tank", &s->tank));
    double tank_centre[3] = { 0, 0, 0 };
    for (int k = 0; k < s->dims; ++k) tank_centre[k] = 0.5 * (s->tank.min[k] + s->tank.max[k]);
    cJSON *tank_motion = cJSON_CreateObject(); /* its resolved form, for the resolved tank below */
    sphsim_status mst = parse_motion(v, tank, s, &s->tank_motion, tank_centre, tank_motion);
    vpop(v, old);

    /* gravity */
    const double g2[3] = { 0, -9.81, 0 }, g3[3] = { 0, 0, -9.81 };
    if (mst == SPHSIM_OK) mst = vvec(v, root, "gravity", 0, s->dims == 2 ? g2 : g3, s->gravity, NULL);
    if (mst != SPHSIM_OK) {
        cJSON_Delete(tank_motion);
        return mst;
    }

    add_num(res, "format", s->format);
    cJSON_AddStringToObject(res, "name", s->name);
    add_num(res, "dimensions", s->dims);
    cJSON_AddStringToObject(res, "mode", scene_mode_name(s->mode));
    cJSON *rt = cJSON_AddObjectToObject(res, "tank");
    cJSON_AddItemToObject(rt, "min", vec_item(s->tank.min, s->dims));
    cJSON_AddItemToObject(rt, "max", vec_item(s->tank.max, s->dims));
    cJSON *rtm_ = cJSON_DetachItemFromObject(tank_motion, "motion");
    if (rtm_) cJSON_AddItemToObject(rt, "motion", rtm_);
    cJSON_Delete(tank_motion);
    cJSON_AddItemToObject(res, "gravity", vec_item(s->gravity, s->dims));

    /* fluid | spheres */
    const cJSON *sec;
    s->kernel = KERNEL_WENDLAND;
    s->eos = EOS_TAIT;
    s->visc = VISC_ARTIFICIAL;
    if (s->mode == MODE_SPH) {
        if (get(root, "spheres")) {
            vkey(v, "spheres");
            return vfail(v, "not allowed in mode \"sph\"%s; use \"fluid\", or set \"mode\": \"particles\"",
                         get(root, "mode") ? "" : " (the default mode)");
        }
        SPHSIM_TRY(vobj(v, root, "fluid", 1, " (required in mode \"sph\")", &sec));
        old = vkey(v, "fluid");
        SPHSIM_TRY(parse_fluid(v, sec, s, res));
        vpop(v, old);
    } else {
        if (get(root, "fluid")) {
            vkey(v, "fluid");
            return vfail(v, "not allowed in mode \"particles\"; use \"spheres\", or set \"mode\": \"sph\"");
        }
        SPHSIM_TRY(vobj(v, root, "spheres", 1, " (required in mode \"particles\")", &sec));
        old = vkey(v, "spheres");
        SPHSIM_TRY(parse_spheres(v, sec, s, res));
        vpop(v, old);
    }

    /* objects: after the fluid or the spheres, whose sizes set the meshes' grids */
    SPHSIM_TRY(parse_objects(v, root, s, res));

    /* time */
    const cJSON *tm;
    int dt_given, max_speed_given;
    SPHSIM_TRY(vobj(v, root, "time", 1, " (expected {\"end\": s})", &tm));
    old = vkey(v, "time");
    SPHSIM_TRY(check_keys(v, tm, TIME_KEYS, COUNT(TIME_KEYS)));
    SPHSIM_TRY(vnum(v, tm, "end", 1, 0, R_NONNEG, &s->t_end, NULL));
    SPHSIM_TRY(vnum(v, tm, "dt", 0, 0.0, R_POS, &s->dt_fixed, &dt_given));
    SPHSIM_TRY(vnum(v, tm, "cfl", 0, 0.25, rng(0, 2, 1, 1), &s->cfl, NULL));
    SPHSIM_TRY(vnum(v, tm, "max_speed", 0, 0.0, R_POS, &s->max_speed, &max_speed_given));
    vpop(v, old);

    /* output */
    const cJSON *out, *fields;
    int interval_given;
    SPHSIM_TRY(vobj(v, root, "output", 0, NULL, &out));
    old = vkey(v, "output");
    if (out) SPHSIM_TRY(check_keys(v, out, OUTPUT_KEYS, COUNT(OUTPUT_KEYS)));
    const cJSON *iv = get(out, "interval");
    if (s->t_end == 0.0 && cJSON_IsNumber(iv) && iv->valuedouble == 0.0) { /* as a run to t = 0 resolves it */
        s->out_interval = 0.0;
        interval_given = 1;
    } else {
        SPHSIM_TRY(vnum(v, out, "interval", 0, s->t_end / 50.0, R_POS, &s->out_interval, &interval_given));
    }
    if (interval_given && s->t_end > 0 && s->out_interval > s->t_end) {
        /* a short trial run of a scene (--set time.end=...): one snapshot at the start and one
         * at the end, said on stderr */
        snprintf(s->notes + strlen(s->notes), sizeof s->notes - strlen(s->notes),
                 "output.interval: %s s is longer than time.end (%s s); snapshots at the start and the end only\n",
                 fmt_num(a, s->out_interval), fmt_num(b, s->t_end));
        s->out_interval = s->t_end;
    }
    SPHSIM_TRY(varr(v, out, "fields", 0, 1, 64, "field names", &fields));
    if (fields) {
        size_t o2 = vkey(v, "fields");
        s->fields = 0;
        int i = 0;
        for (const cJSON *f = fields->child; f; f = f->next, i++) {
            size_t o3 = vidx(v, i);
            char list[300];
            quoted_list(list, sizeof list, FIELD_NAMES, COUNT(FIELD_NAMES));
            if (!cJSON_IsString(f)) {
                describe(f, got, sizeof got);
                return vfail(v, "expected a field name (one of %s), got %s", list, got);
            }
            int bit = 0;
            for (int k = 0; k < COUNT(FIELD_NAMES); k++)
                if (strcmp(f->valuestring, FIELD_NAMES[k]) == 0) bit = FIELD_VALUES[k];
            if (!bit) {
                const char *near = suggest(f->valuestring, FIELD_NAMES, COUNT(FIELD_NAMES));
                if (near)
                    return vfail(v, "unknown value \"%.80s\"; expected one of %s; did you mean \"%s\"?", f->valuestring,
                                 list, near);
                return vfail(v, "unknown value \"%.80s\"; expected one of %s", f->valuestring, list);
            }
            if (s->fields & (unsigned)bit) return vfail(v, "\"%s\" is listed twice", f->valuestring);
            if (bit == FIELD_ANGULAR_VELOCITY && s->mode != MODE_PARTICLES)
                return vfail(v, "\"angular_velocity\" is the spheres' spin: mode \"particles\" only");
            s->fields |= (unsigned)bit;
            vpop(v, o3);
        }
        if (!(s->fields & FIELD_POSITION)) return vfail(v, "must include \"position\"");
        if ((s->fields & FIELD_OBJECT) && !(s->mode == MODE_SPH && s->n_objects > 0))
            return vfail(v, "\"object\" needs \"objects\" in the scene, in mode \"sph\"");
        vpop(v, o2);
    } else {
        s->fields =
            FIELD_POSITION | FIELD_VELOCITY | FIELD_DENSITY | FIELD_PRESSURE | FIELD_ID | FIELD_TYPE | FIELD_MASS;
        if (s->mode == MODE_PARTICLES) s->fields |= FIELD_RADIUS | FIELD_ANGULAR_VELOCITY;
        if (s->mode == MODE_SPH && s->n_objects > 0) s->fields |= FIELD_OBJECT;
    }
    vpop(v, old);

    /* grid */
    const cJSON *grid;
    SPHSIM_TRY(vobj(v, root, "grid", 0, NULL, &grid));
    old = vkey(v, "grid");
    if (grid) SPHSIM_TRY(check_keys(v, grid, GRID_KEYS, COUNT(GRID_KEYS)));
    SPHSIM_TRY(vnum(v, grid, "cell_ratio", 0, 1.0, rng(0, 2, 4, 1), &s->cell_ratio, NULL));
    SPHSIM_TRY(venum(v, grid, "neighbour_list", NLIST_NAMES, NLIST_VALUES, COUNT(NLIST_NAMES), NLIST_AUTO,
                     &s->neighbour_list));
    SPHSIM_TRY(vnum(v, grid, "skin", 0, 0.1, rng(0, 1, 1, 1), &s->skin, NULL));
    vpop(v, old);

    SPHSIM_TRY(parse_gauges(v, root, s));

    /* ---- time step (docs/scene-format.md, "Time step") ---- */
    double g = hypot(hypot(s->gravity[0], s->gravity[1]), s->gravity[2]);
    if (s->mode == MODE_SPH) {
        s->dt_cfl = s->cfl * s->h / s->sound_speed;
        if (g > 0) s->dt_cfl = fmin(s->dt_cfl, 0.25 * sqrt(s->h / g));
        if (s->visc == VISC_LAPLACIAN && s->mu > 0)
            s->dt_cfl = fmin(s->dt_cfl, 0.125 * s->h * s->h * s->rest_density / s->mu);
        s->v_ref = s->sound_speed;
        if (!max_speed_given) s->max_speed = 10.0 * s->sound_speed;
    } else {
        double extent = 0.0, r_min = INFINITY, v_groups = 0.0;
        for (int k = 0; k < s->dims; k++) extent = fmax(extent, s->tank.max[k] - s->tank.min[k]);
        for (int i = 0; i < s->n_groups; i++) {
            const scene_sphere_group *gr = &s->groups[i];
            double speed = hypot(hypot(gr->velocity[0], gr->velocity[1]), gr->velocity[2]);
            v_groups = fmax(v_groups, speed + sqrt((double)s->dims) * gr->velocity_jitter);
            r_min = fmin(r_min, gr->radius);
        }
        /* walls that move: the fastest point of a body within the tank's diagonal of its centre */
        double v_walls = 0.0, diag = 0.0;
        for (int k = 0; k < s->dims; k++) diag += pow(s->tank.max[k] - s->tank.min[k], 2);
        for (int body = 0; motion_of(s, body); ++body)
            v_walls = fmax(v_walls, motion_max_speed(motion_of(s, body), sqrt(diag), s->t_end));
        s->v_ref = fmax(fmax(fmax(sqrt(2.0 * g * extent), v_groups), v_walls), 1e-3);
        s->dt_cfl = s->cfl * r_min / s->v_ref;
        if (!max_speed_given) s->max_speed = 100.0 * s->v_ref;
    }
    /* the terms of dt_cfl, for messages */
    char why_dt[300], t1[40], t2[40], t3[40];
    if (s->mode == MODE_SPH) {
        int w = snprintf(why_dt, sizeof why_dt, "min(cfl h / c0 = %s s", fmt_g(t1, s->cfl * s->h / s->sound_speed));
        if (g > 0 && w > 0 && (size_t)w < sizeof why_dt)
            w += snprintf(why_dt + w, sizeof why_dt - (size_t)w, ", 0.25 sqrt(h / |g|) = %s s",
                          fmt_g(t2, 0.25 * sqrt(s->h / g)));
        if (s->visc == VISC_LAPLACIAN && s->mu > 0 && w > 0 && (size_t)w < sizeof why_dt)
            w += snprintf(why_dt + w, sizeof why_dt - (size_t)w, ", 0.125 h^2 rho0 / mu = %s s",
                          fmt_g(t3, 0.125 * s->h * s->h * s->rest_density / s->mu));
        if (w > 0 && (size_t)w < sizeof why_dt) snprintf(why_dt + w, sizeof why_dt - (size_t)w, ")");
    } else snprintf(why_dt, sizeof why_dt, "cfl r_min / v_ref with v_ref = %s m/s", fmt_g(t1, s->v_ref));
    double dt_base = dt_given ? s->dt_fixed : s->dt_cfl;
    if (s->out_interval > 0) {
        double spo = ceil(s->out_interval / dt_base - 1e-9);
        if (spo < 1) spo = 1;
        if (s->t_end > 0 && s->t_end / s->out_interval > SCENE_MAX_SNAPSHOTS) {
            old = vkey(v, "output");
            vkey(v, "interval");
            return vfail(v, "%s s gives %.3g snapshots over time.end = %s s; at most 1e6 are allowed",
                         fmt_num(a, s->out_interval), s->t_end / s->out_interval, fmt_num(b, s->t_end));
        }
        s->dt = s->out_interval / spo;
        double n_steps = s->t_end > 0 ? ceil(s->t_end / s->dt - 1e-9) : 0.0;
        if (spo > SCENE_MAX_STEPS || n_steps > SCENE_MAX_STEPS) {
            old = vkey(v, "time");
            vkey(v, dt_given ? "dt" : "end");
            if (dt_given)
                return vfail(v, "the run needs %.3g steps of %s s; at most 1e9 steps are allowed", fmax(spo, n_steps),
                             fmt_g(a, s->dt));
            return vfail(v,
                         "the run needs %.3g steps of %s s; at most 1e9 steps are allowed (the step is the "
                         "stability limit %s)",
                         fmax(spo, n_steps), fmt_g(a, s->dt), why_dt);
        }
        s->steps_per_output = (long)spo;
        s->n_steps = (long)n_steps;
    } else {
        s->dt = dt_base;
        s->steps_per_output = 1;
        s->n_steps = 0;
    }

    /* ---- every derived value is a finite number (extreme inputs can overflow) ---- */
    if (s->mode == MODE_SPH && !(isfinite(s->particle_mass) && s->particle_mass > 0)) {
        old = vkey(v, "fluid");
        vkey(v, "rest_density");
        return vfail(v, "%s kg/m^3 gives a particle mass of %s kg (rest_density x spacing^%d), not a usable number",
                     fmt_num(a, s->rest_density), fmt_g(b, s->particle_mass), s->dims);
    }
    if (s->mode == MODE_SPH && !(isfinite(s->stiffness) && isfinite(s->sound_speed))) {
        old = vkey(v, "fluid");
        vkey(v, "eos");
        return vfail(v, "the sound speed %s m/s (stiffness %s m^2/s^2) is not a usable number",
                     fmt_g(a, s->sound_speed), fmt_g(b, s->stiffness));
    }
    if (!isfinite(s->max_speed)) {
        old = vkey(v, "time");
        vkey(v, "max_speed");
        return vfail(v, "the default (%s) overflows; give time.max_speed",
                     s->mode == MODE_SPH ? "10 x sound speed" : "100 x v_ref");
    }

    /* ---- particle counts ---- */
    SPHSIM_TRY(init_count(s, &s->n_fluid, &s->n_boundary, &s->n_spheres, v->e));
    s->n_total = s->n_fluid + s->n_boundary + s->n_spheres;
    if ((double)s->n_total > SCENE_MAX_PARTICLES) {
        old = vkey(v, s->mode == MODE_SPH ? "fluid" : "spheres");
        if (s->mode == MODE_SPH) vkey(v, s->particle_count ? "particle_count" : "spacing");
        return vfail(v, "the scene has %ld particles, more than the limit of 2e9", s->n_total);
    }

    /* ---- resolved JSON: the rest ---- */
    cJSON *rtm = cJSON_AddObjectToObject(res, "time");
    add_num(rtm, "end", s->t_end);
    if (dt_given) add_num(rtm, "dt", s->dt_fixed);
    add_num(rtm, "cfl", s->cfl);
    add_num(rtm, "max_speed", s->max_speed);
    cJSON *ro = cJSON_AddObjectToObject(res, "output");
    add_num(ro, "interval", s->out_interval);
    cJSON *rf = cJSON_AddArrayToObject(ro, "fields");
    for (int k = 0; k < COUNT(FIELD_NAMES); k++)
        if (s->fields & (unsigned)FIELD_VALUES[k]) cJSON_AddItemToArray(rf, cJSON_CreateString(FIELD_NAMES[k]));
    cJSON *rgr = cJSON_AddObjectToObject(res, "grid");
    add_num(rgr, "cell_ratio", s->cell_ratio);
    cJSON_AddStringToObject(rgr, "neighbour_list", NLIST_NAMES[s->neighbour_list]);
    add_num(rgr, "skin", s->skin);

    if (s->n_gauges > 0) {
        cJSON *rga = cJSON_AddArrayToObject(res, "gauges");
        for (int k = 0; k < s->n_gauges; ++k) {
            scene_gauge *gg = &s->gauges[k];
            /* samples every `every` steps: the interval rounded to whole steps */
            gg->every = gg->interval > 0.0 ? (long)fmax(1.0, floor(gg->interval / s->dt + 0.5)) : 1;
            if (gg->every_given > 0 && gg->every_given != gg->every) {
                vkey(v, "gauges");
                vidx(v, k);
                vkey(v, "every_steps");
                return vfail(v,
                             "%ld, but the interval %.17g s at the time step %.17g s gives %ld (every_steps is "
                             "derived: leave it out)",
                             gg->every_given, gg->interval, s->dt, gg->every);
            }
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", gg->name);
            cJSON_AddStringToObject(o, "type", GAUGE_NAMES[gg->type]);
            cJSON_AddItemToObject(o, "point", vec_item(gg->point, s->dims));
            if (gg->type == GAUGE_FORCE) cJSON_AddStringToObject(o, "object", gg->object);
            add_num(o, "interval", gg->interval);
            add_num(o, "every_steps", (double)gg->every);
            cJSON_AddItemToArray(rga, o);
        }
    }

    cJSON *d = cJSON_AddObjectToObject(res, "derived");
    add_num(d, "n_fluid", (double)s->n_fluid);
    add_num(d, "n_boundary", (double)s->n_boundary);
    add_num(d, "n_spheres", (double)s->n_spheres);
    add_num(d, "n_total", (double)s->n_total);
    if (s->mode == MODE_SPH) {
        add_num(d, "spacing_m", s->spacing);
        add_num(d, "smoothing_length_m", s->h);
        add_num(d, "smoothing_length_factor", s->h_factor);
        add_num(d, "support_radius_m", s->support);
        add_num(d, "particle_mass_kg", s->particle_mass);
        add_num(d, "fluid_height_m", s->fluid_height);
        add_num(d, "sound_speed_m_per_s", s->sound_speed);
        add_num(d, "stiffness_m2_per_s2", s->stiffness);
    } else {
        add_num(d, "support_radius_m", s->support);
        add_num(d, "reference_speed_m_per_s", s->v_ref);
    }
    add_num(d, "dt_cfl_s", s->dt_cfl);
    add_num(d, "dt_s", s->dt);
    add_num(d, "steps_per_output", (double)s->steps_per_output);
    add_num(d, "n_steps", (double)s->n_steps);
    (void)given;
    return SPHSIM_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* --set overrides                                                                            */

typedef struct seg {
    char key[128];
    int index; /* -1 for a key segment */
} seg;

/* Parse "a.b[2].c" into segments and its canonical form. */
static sphsim_status set_parse_path(const char *spec, const char *p, size_t n, seg *segs, int *n_segs, char *canon,
                                    size_t canon_n, sphsim_error *e)
{
    size_t i = 0, clen = 0;
    int ns = 0;
    canon[0] = '\0';
    while (i < n) {
        if (ns == SCENE_PATH_SEGMENTS)
            return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: the path has more than %d parts", spec,
                               SCENE_PATH_SEGMENTS);
        seg *sg = &segs[ns];
        if (p[i] == '[') {
            if (ns == 0)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: a path starts with a key, e.g. fluid.spacing=0.01",
                                   spec);
            size_t j = i + 1;
            long idx = 0;
            while (j < n && isdigit((unsigned char)p[j]) && idx < 100000000) idx = idx * 10 + (p[j++] - '0');
            if (j == i + 1 || j >= n || p[j] != ']')
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: expected an index like [0] at \"%.*s\"", spec,
                                   (int)(n - i), p + i);
            sg->index = (int)idx;
            sg->key[0] = '\0';
            i = j + 1;
            if (i < n && p[i] != '.' && p[i] != '[')
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: expected '.' or '[' after \"]\"", spec);
        } else {
            if (p[i] == '.') {
                if (ns == 0 || i + 1 >= n || p[i + 1] == '.' || p[i + 1] == '[')
                    return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: empty key in the path \"%.*s\"", spec, (int)n, p);
                i++;
            }
            size_t j = i;
            while (j < n && p[j] != '.' && p[j] != '[') j++;
            if (j == i)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: empty key in the path \"%.*s\"", spec, (int)n, p);
            if (j - i >= sizeof sg->key)
                return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: key \"%.*s\" is too long", spec, (int)(j - i), p + i);
            memcpy(sg->key, p + i, j - i);
            sg->key[j - i] = '\0';
            sg->index = -1;
            i = j;
        }
        int w = sg->index >= 0 ? snprintf(canon + clen, canon_n - clen, "[%d]", sg->index)
                               : snprintf(canon + clen, canon_n - clen, ns ? ".%s" : "%s", sg->key);
        if (w < 0 || (size_t)w >= canon_n - clen)
            return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: the path is too long", spec);
        clen += (size_t)w;
        ns++;
    }
    if (ns == 0) return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: expected path=value, e.g. fluid.spacing=0.01", spec);
    *n_segs = ns;
    return SPHSIM_OK;
}

/* Apply one "path=value" override to `root` (an object). */
static sphsim_status set_apply(cJSON *root, const char *spec, set_rec *rec, sphsim_error *e)
{
    const char *eq = strchr(spec, '=');
    if (!eq) return SPHSIM_FAIL(e, SPHSIM_E_USAGE, "--set %s: expected path=value, e.g. fluid.spacing=0.01", spec);
    const char *p = spec;
    size_t n = (size_t)(eq - spec);
    while (n && isspace((unsigned char)*p)) p++, n--;
    while (n && isspace((unsigned char)p[n - 1])) n--;
    seg segs[SCENE_PATH_SEGMENTS];
    int ns = 0;
    SPHSIM_TRY(set_parse_path(spec, p, n, segs, &ns, rec->path, sizeof rec->path, e));
    rec->text = spec;

    /* The value: JSON if it parses as JSON, else the text as a string. */
    const char *val = eq + 1;
    cJSON *item = cJSON_ParseWithLengthOpts(val, strlen(val) + 1, NULL, 1);
    if (!item) item = cJSON_CreateString(val);
    if (!item) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "--set %s: out of memory", spec);

    char walked[256];
    size_t wlen = 0;
    walked[0] = '\0';
    cJSON *cur = root;
    for (int i = 0; i < ns; i++) {
        const seg *sg = &segs[i];
        int last = i == ns - 1;
        char what[160];
        describe(cur, what, sizeof what);
        if (sg->index < 0) {
            if (!cJSON_IsObject(cur)) {
                cJSON_Delete(item);
                return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "--set %s: %s is %s, not an object, so it has no key \"%s\"",
                                   spec, walked, what, sg->key);
            }
            cJSON *child = cJSON_GetObjectItemCaseSensitive(cur, sg->key);
            if (last) {
                if (child) cJSON_ReplaceItemInObjectCaseSensitive(cur, sg->key, item);
                else cJSON_AddItemToObject(cur, sg->key, item);
                return SPHSIM_OK;
            }
            if (!child) {
                if (segs[i + 1].index >= 0) {
                    cJSON_Delete(item);
                    return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "--set %s: %s%s%s does not exist, so it cannot be indexed",
                                       spec, walked, wlen ? "." : "", sg->key);
                }
                child = cJSON_AddObjectToObject(cur, sg->key); /* create objects along the path */
                if (!child) {
                    cJSON_Delete(item);
                    return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "--set %s: out of memory", spec);
                }
            }
            int w = snprintf(walked + wlen, sizeof walked - wlen, wlen ? ".%s" : "%s", sg->key);
            if (w > 0) wlen = wlen + (size_t)w < sizeof walked ? wlen + (size_t)w : sizeof walked - 1;
            cur = child;
        } else {
            if (!cJSON_IsArray(cur)) {
                cJSON_Delete(item);
                return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                                   "--set %s: %s is %s, not an array, so it cannot be indexed with [%d]", spec, walked,
                                   what, sg->index);
            }
            int size = cJSON_GetArraySize(cur);
            if (sg->index >= size) {
                cJSON_Delete(item);
                return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "--set %s: index %d is beyond the end of %s (%d entries)", spec,
                                   sg->index, walked, size);
            }
            if (last) {
                cJSON_ReplaceItemInArray(cur, sg->index, item);
                return SPHSIM_OK;
            }
            int w = snprintf(walked + wlen, sizeof walked - wlen, "[%d]", sg->index);
            if (w > 0) wlen = wlen + (size_t)w < sizeof walked ? wlen + (size_t)w : sizeof walked - 1;
            cur = cJSON_GetArrayItem(cur, sg->index);
        }
    }
    cJSON_Delete(item);
    return SPHSIM_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Loading                                                                                    */

/* "file:line:col: JSON syntax error ..." with an excerpt of the line around `pos`. */
static sphsim_status syntax_error(const char *text, size_t len, size_t pos, const char *name, sphsim_error *e)
{
    if (len == 0) return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: the file is empty (expected a JSON object)", name);
    if (pos > len) pos = len;
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < pos; i++)
        if (text[i] == '\n') {
            line++;
            line_start = i + 1;
        }
    size_t col = pos - line_start + 1;
    size_t line_end = pos;
    while (line_end < len && text[line_end] != '\n') line_end++;
    size_t from = pos > line_start + 30 ? pos - 30 : line_start;
    size_t to = line_end < pos + 20 ? line_end : pos + 20;
    char before[64], after[64];
    size_t nb = 0, na = 0;
    for (size_t i = from; i < pos; i++) before[nb++] = isprint((unsigned char)text[i]) ? text[i] : ' ';
    for (size_t i = pos; i < to; i++) after[na++] = isprint((unsigned char)text[i]) ? text[i] : ' ';
    before[nb] = after[na] = '\0';
    if (pos >= len)
        return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                           "%s:%d:%zu: JSON syntax error at line %d, column %zu: unexpected end of file after \"%s\" "
                           "(is the file truncated?)",
                           name, line, col, line, col, before);
    return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                       "%s:%d:%zu: JSON syntax error at line %d, column %zu, at the >>> mark: %s%s>>>%s", name, line,
                       col, line, col, from > line_start ? "..." : "", before, after);
}

static sphsim_status load_text(scene *s, char *text, size_t len, const char *name, const char *const *sets, int n_sets,
                               sphsim_error *e)
{
    sphsim_status st = SPHSIM_OK;
    cJSON *root = NULL, *res = NULL;
    set_rec *recs = NULL;
    s->source_json = text;
    snprintf(s->path, sizeof s->path, "%s", name ? name : "");
    default_name(s->name, name);
    const char *where = name ? name : "scene";

    if (strlen(text) != len) {
        st = SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: the file contains a NUL byte at offset %zu; a scene is JSON text",
                         where, strlen(text));
        goto done;
    }
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    if (!root) {
        st = syntax_error(text, len, end ? (size_t)(end - text) : 0, where, e);
        goto done;
    }
    if (n_sets < 0 || n_sets > SCENE_MAX_SETS) {
        st = SPHSIM_FAIL(e, SPHSIM_E_USAGE, "too many --set options (%d; at most %d)", n_sets, SCENE_MAX_SETS);
        goto done;
    }
    if (n_sets > 0) {
        recs = calloc((size_t)n_sets, sizeof *recs);
        if (!recs) {
            st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of memory");
            goto done;
        }
        if (!cJSON_IsObject(root)) {
            st = SPHSIM_FAIL(e, SPHSIM_E_SCENE, "(top level): expected a JSON object at the top level of the scene");
            goto done;
        }
        for (int i = 0; i < n_sets; i++) {
            st = set_apply(root, sets[i] ? sets[i] : "", &recs[i], e);
            if (st != SPHSIM_OK) goto done;
        }
    }
    res = cJSON_CreateObject();
    if (!res) {
        st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of memory");
        goto done;
    }
    vctx v;
    memset(&v, 0, sizeof v);
    v.e = e;
    v.sets = recs;
    v.n_sets = n_sets;
    v.dims = 3;
    st = resolve(&v, root, s, res);
    if (st != SPHSIM_OK) goto done;

    cJSON *prov = cJSON_AddObjectToObject(res, "provenance");
    /* the scene file by its absolute name: --resume, from any folder, finds the files the scene
     * names relative to it (meshes, motion tables) through it */
    char *abs = s->path[0] ? realpath(s->path, NULL) : NULL;
    cJSON_AddStringToObject(prov, "file", abs ? abs : s->path);
    free(abs);
    cJSON *rs = cJSON_AddArrayToObject(prov, "sets");
    for (int i = 0; i < n_sets; i++) cJSON_AddItemToArray(rs, cJSON_CreateString(sets[i]));
    s->resolved_json = cJSON_Print(res);
    if (!s->resolved_json) st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of memory writing the resolved scene");

done:
    cJSON_Delete(root);
    cJSON_Delete(res);
    free(recs);
    if (st != SPHSIM_OK) scene_free(s);
    return st;
}

sphsim_status scene_load_string(scene *s, const char *json, const char *name_hint, const char *const *sets, int n_sets,
                                sphsim_error *e)
{
    memset(s, 0, sizeof *s);
    if (!json) return SPHSIM_FAIL(e, SPHSIM_E_SCENE, "%s: no scene text", name_hint ? name_hint : "scene");
    size_t len = strlen(json);
    char *text = malloc(len + 1);
    if (!text) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of memory");
    memcpy(text, json, len + 1);
    return load_text(s, text, len, name_hint, sets, n_sets, e);
}

int scene_resolved_same(const char *a, const char *b)
{
    cJSON *x = a ? cJSON_Parse(a) : NULL, *y = b ? cJSON_Parse(b) : NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(x, "provenance");
    cJSON_DeleteItemFromObjectCaseSensitive(y, "provenance");
    const int same = x && y && cJSON_Compare(x, y, 1);
    cJSON_Delete(x);
    cJSON_Delete(y);
    return same;
}

sphsim_status scene_load(scene *s, const char *path, const char *const *sets, int n_sets, sphsim_error *e)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (!f) return SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot open scene file %s: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    if (!text) {
        fclose(f);
        return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of memory");
    }
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= (size_t)SCENE_MAX_FILE_BYTES) {
                free(text);
                fclose(f);
                return SPHSIM_FAIL(e, SPHSIM_E_SCENE,
                                   "%s: the file is larger than %ld MiB; a scene is a small JSON file", path,
                                   SCENE_MAX_FILE_BYTES >> 20);
            }
            char *bigger = realloc(text, cap * 2);
            if (!bigger) {
                free(text);
                fclose(f);
                return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of memory");
            }
            text = bigger;
            cap *= 2;
        }
        size_t got = fread(text + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int err = errno;
        free(text);
        fclose(f);
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot read scene file %s: %s", path, strerror(err));
    }
    fclose(f);
    text[len] = '\0';
    return load_text(s, text, len, path, sets, n_sets, e);
}

void scene_free(scene *s)
{
    if (!s) return;
    free(s->source_json);
    cJSON_free(s->resolved_json);
    free(s->geom_grid);
    s->geom_grid = NULL;
    s->geom_grid_n = 0;
    for (int b = 0; motion_of(s, b); ++b) {
        scene_motion *m = (scene_motion *)motion_of(s, b);
        for (int k = 0; k < m->n_segments && k < SCENE_MAX_SEGMENTS; ++k) {
            free(m->seg[k].rows);
            m->seg[k].rows = NULL;
        }
        m->n_segments = 0;
    }
    free(s->region_grid);
    s->region_grid = NULL;
    s->region_grid_n = 0;
    for (int k = 0; k < s->n_regions && k < SCENE_MAX_REGIONS; ++k) {
        free(s->regions[k].shape.mesh_vert);
        free(s->regions[k].shape.mesh_tri);
        s->regions[k].shape.mesh_vert = NULL;
        s->regions[k].shape.mesh_tri = NULL;
    }
    for (int k = 0; k < s->n_objects && k < SCENE_MAX_OBJECTS; ++k) {
        free(s->objects[k].mesh_vert);
        free(s->objects[k].mesh_tri);
        s->objects[k].mesh_vert = NULL;
        s->objects[k].mesh_tri = NULL;
    }
    s->source_json = NULL;
    s->resolved_json = NULL;
}
