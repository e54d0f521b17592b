/* output_geometry: the scene's objects in the output file, under /sphsim/geometry
 * (docs/output-format.md): for post-processing and for showing the surfaces next to the
 * particles. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "init.h"
#include "output_geometry.h"
#include "output_internal.h"

/* A surface of triangles: vertices (3 doubles each) and triangles (3 int64 each). */
typedef struct surf {
    double *v;
    int64_t *t;
    long nv, nt;
} surf;

static int surf_alloc(surf *s, long nv, long nt)
{
    s->v = malloc((size_t)(nv > 0 ? nv : 1) * 3 * sizeof *s->v);
    s->t = malloc((size_t)(nt > 0 ? nt : 1) * 3 * sizeof *s->t);
    s->nv = s->nt = 0;
    return s->v && s->t ? 0 : -1;
}

static void put_v(surf *s, const scene_object *o, double x, double y, double z)
{
    /* the object's frame: world = origin + R (x, y, z) */
    const double *R = o->rot, p[3] = { x, y, z };
    for (int i = 0; i < 3; ++i)
        s->v[3 * s->nv + i] = o->origin[i] + R[3 * i] * p[0] + R[3 * i + 1] * p[1] + R[3 * i + 2] * p[2];
    ++s->nv;
}

static void put_t(surf *s, long a, long b, long c)
{
    s->t[3 * s->nt] = a;
    s->t[3 * s->nt + 1] = b;
    s->t[3 * s->nt + 2] = c;
    ++s->nt;
}

/* The object's surface as triangles facing outwards; 2D shapes as a prism of depth 0 (their
 * outline twice, at z = 0), so that the same viewer shows them. Primitives are tessellated
 * (spheres 24 x 12, cylinders and circles 48 sides). */
static int tessellate(const scene *sc, const scene_object *o, surf *s)
{
    const int N = 48;
    if (o->shape == GEOM_POLYGON) { /* its outline twice at z = 0, side quads between them */
        const long m = o->n_vertices;
        if (surf_alloc(s, 2 * m, 2 * m)) return -1;
        const float *v = sc->geom_grid + o->grid_offset;
        for (long k = 0; k < m; ++k)
            for (int c = 0; c < 2; ++c) {
                s->v[3 * s->nv] = v[2 * k];
                s->v[3 * s->nv + 1] = v[2 * k + 1];
                s->v[3 * s->nv + 2] = 0.0;
                ++s->nv;
            }
        for (long k = 0; k < m; ++k) {
            const long a = 2 * k, b = 2 * ((k + 1) % m);
            put_t(s, a, b, b + 1);
            put_t(s, a, b + 1, a + 1);
        }
        return 0;
    }
    if (o->shape == GEOM_MESH) {
        if (surf_alloc(s, o->n_vertices, o->n_triangles)) return -1;
        memcpy(s->v, o->mesh_vert, (size_t)o->n_vertices * 3 * sizeof *s->v);
        for (long k = 0; k < 3 * o->n_triangles; ++k) s->t[k] = o->mesh_tri[k];
        s->nv = o->n_vertices;
        s->nt = o->n_triangles;
        return 0;
    }
    if (o->shape == GEOM_BOX) {
        const double hz = sc->dims == 2 ? 0.0 : o->ext[2];
        if (surf_alloc(s, 8, 12)) return -1;
        for (int v = 0; v < 8; ++v)
            put_v(s, o, (v & 1 ? 1 : -1) * o->ext[0], (v & 2 ? 1 : -1) * o->ext[1], (v & 4 ? 1 : -1) * hz);
        static const int F[12][3] = { { 0, 2, 3 }, { 0, 3, 1 }, { 4, 5, 7 }, { 4, 7, 6 }, { 0, 1, 5 }, { 0, 5, 4 },
                                      { 2, 6, 7 }, { 2, 7, 3 }, { 0, 4, 6 }, { 0, 6, 2 }, { 1, 3, 7 }, { 1, 7, 5 } };
        for (int f = 0; f < 12; ++f) put_t(s, F[f][0], F[f][1], F[f][2]);
        return 0;
    }
    if (o->shape == GEOM_SPHERE && sc->dims == 3) {
        const int nu = 24, nw = 12;
        if (surf_alloc(s, (long)nu * (nw - 1) + 2, 2L * nu * (nw - 1))) return -1;
        const double r = o->ext[0];
        put_v(s, o, 0, 0, r);
        put_v(s, o, 0, 0, -r);
        for (int j = 1; j < nw; ++j)
            for (int i = 0; i < nu; ++i) {
                const double th = M_PI * j / nw, ph = 2 * M_PI * i / nu;
                put_v(s, o, r * sin(th) * cos(ph), r * sin(th) * sin(ph), r * cos(th));
            }
#define RING_(j, i) (2 + (long)((j)-1) * nu + ((i) % nu))
        for (int i = 0; i < nu; ++i) {
            put_t(s, 0, RING_(1, i), RING_(1, i + 1));
            put_t(s, 1, RING_(nw - 1, i + 1), RING_(nw - 1, i));
            for (int j = 1; j < nw - 1; ++j) {
                put_t(s, RING_(j, i), RING_(j + 1, i), RING_(j + 1, i + 1));
                put_t(s, RING_(j, i), RING_(j + 1, i + 1), RING_(j, i + 1));
            }
        }
#undef RING_
        return 0;
    }
    /* cylinder, or a circle (a cylinder of length 0) */
    const double r = o->ext[0], hl = sc->dims == 2 ? 0.0 : o->ext[1];
    if (surf_alloc(s, 2L * N + 2, 4L * N)) return -1;
    put_v(s, o, 0, 0, -hl);
    put_v(s, o, 0, 0, hl);
    for (int i = 0; i < N; ++i) {
        const double a = 2 * M_PI * i / N;
        put_v(s, o, r * cos(a), r * sin(a), -hl);
        put_v(s, o, r * cos(a), r * sin(a), hl);
    }
    for (int i = 0; i < N; ++i) {
        const long b0 = 2 + 2 * i, t0 = b0 + 1, b1 = 2 + 2 * ((i + 1) % N), t1 = b1 + 1;
        put_t(s, 0, b1, b0);
        put_t(s, 1, t0, t1);
        put_t(s, b0, b1, t1);
        put_t(s, b0, t1, t0);
    }
    return 0;
}

static int write_2d(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *buf, hsize_t rows, hsize_t cols)
{
    const hsize_t dims[2] = { rows, cols };
    hid_t sp = H5Screate_simple(2, dims, NULL);
    if (sp < 0) return -1;
    hid_t ds = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = ds < 0 || (rows > 0 && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) ? -1 : 0;
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp);
    return rc;
}

/* The static PointData field `object` (when output.fields has it: the layout made the dataset,
 * first + n_obj rows): -1 for ids below first, then the objects' boundary particles' `obj`. */
static int write_object_field(hid_t f, const int8_t *obj, long first, long n_obj)
{
    const char *path = "/VTKHDF/PointData/object";
    if (!h5io_link_exists(f, path)) return 0;
    int8_t none[65536];
    memset(none, -1, sizeof none);
    for (long r0 = 0; r0 < first; r0 += (long)sizeof none) {
        const long m = first - r0 < (long)sizeof none ? first - r0 : (long)sizeof none;
        if (h5io_ds_write_rows(f, path, H5T_NATIVE_INT8, none, (hsize_t)r0, (hsize_t)m) < 0) return -1;
    }
    return n_obj > 0 ? h5io_ds_write_rows(f, path, H5T_NATIVE_INT8, obj, (hsize_t)first, (hsize_t)n_obj) : 0;
}

int output_write_geometry(hid_t f, const scene *sc)
{
    if (sc->n_objects == 0) return 0;
    hid_t g = H5Gcreate2(f, "/sphsim/geometry", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return -1;
    int rc = h5io_attr_i64(g, "n_objects", sc->n_objects);
    /* the objects' boundary particles (SPH): ids from first_object_boundary_id on, each one's
     * object index in boundary_object */
    const long n_obj = init_boundary_objects(sc, NULL);
    if (rc == 0 && sc->mode == MODE_SPH) {
        int8_t *obj = malloc((size_t)(n_obj > 0 ? n_obj : 1));
        if (!obj) rc = -1;
        else {
            init_boundary_objects(sc, obj);
            const long first = sc->n_fluid + sc->n_boundary - n_obj;
            rc = h5io_attr_i64(g, "first_object_boundary_id", first) < 0 ||
                         write_2d(g, "boundary_object", H5T_STD_I8LE, H5T_NATIVE_INT8, obj, (hsize_t)n_obj, 1) < 0 ||
                         write_object_field(f, obj, first, n_obj) < 0
                     ? -1
                     : 0;
            free(obj);
        }
    }
    for (int k = 0; k < sc->n_objects && rc == 0; ++k) {
        const scene_object *o = &sc->objects[k];
        char name[32];
        snprintf(name, sizeof name, "%d", k);
        hid_t og = H5Gcreate2(g, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (og < 0) {
            rc = -1;
            break;
        }
        static const char *SHAPES3[] = { "box", "sphere", "cylinder", "mesh" },
                          *SHAPES2[] = { "rectangle", "circle", "", "", "polygon" };
        surf s = { 0 };
        rc = h5io_attr_str(og, "name", o->name) < 0 ||
                     h5io_attr_str(og, "shape", sc->dims == 3 ? SHAPES3[o->shape] : SHAPES2[o->shape]) < 0 ||
                     h5io_attr_str(og, "role", o->role == OBJ_CONTAINER ? "container" : "obstacle") < 0 ||
                     tessellate(sc, o, &s) < 0 ||
                     write_2d(og, "points", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, s.v, (hsize_t)s.nv, 3) < 0 ||
                     write_2d(og, "triangles", H5T_STD_I64LE, H5T_NATIVE_INT64, s.t, (hsize_t)s.nt, 3) < 0
                 ? -1
                 : 0;
        free(s.v);
        free(s.t);
        H5Gclose(og);
    }
    H5Gclose(g);
    return rc;
}

double output_geometry_bytes(const scene *sc)
{
    double b = 0.0;
    for (int k = 0; k < sc->n_objects; ++k) {
        /* the surface output_write_geometry writes (points and triangles, 24 B each) and its
         * group's metadata */
        surf s = { 0 };
        b += tessellate(sc, &sc->objects[k], &s) == 0 ? 24.0 * (double)(s.nv + s.nt) + 2048.0 : 65536.0;
        free(s.v);
        free(s.t);
    }
    return b + (double)init_boundary_objects(sc, NULL); /* boundary_object, a byte a particle */
}
