/* geometry: placement and signed distance of the scene's objects (geometry.h). */
#include "geometry.h"

#include <math.h>
#include <string.h>

/* Rotation matrix (row-major) of `deg` degrees about unit axis u (right hand, Rodrigues). */
static void rot_axis_angle(const double u[3], double deg, double R[9])
{
    const double a = deg * M_PI / 180.0, c = cos(a), s = sin(a), t = 1.0 - c;
    const double x = u[0], y = u[1], z = u[2];
    const double M[9] = { t * x * x + c,     t * x * y - s * z, t * x * z + s * y, //
                          t * x * y + s * z, t * y * y + c,     t * y * z - s * x, //
                          t * x * z - s * y, t * y * z + s * x, t * z * z + c };
    memcpy(R, M, sizeof M);
}

static void normalise(const double v[3], double u[3])
{
    const double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int k = 0; k < 3; ++k) u[k] = l > 0 ? v[k] / l : (k == 2);
}

static void matmul(const double A[9], const double B[9], double C[9])
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

void geom_place(scene_object *o, int dims)
{
    double R[9], Q[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 }, u[3];
    normalise(o->rot_axis, u);
    rot_axis_angle(u, o->degrees, R);
    if (o->shape == GEOM_CYLINDER) { /* Q turns the frame's z onto the cylinder's axis */
        double a[3];
        normalise(o->axis, a);
        const double c = a[2];
        double w[3] = { -a[1], a[0], 0.0 }; /* z x a */
        const double sw = sqrt(w[0] * w[0] + w[1] * w[1]);
        if (sw > 1e-12) {
            for (int k = 0; k < 3; ++k) w[k] /= sw;
            rot_axis_angle(w, atan2(sw, c) * 180.0 / M_PI, Q);
        } else if (c < 0) { /* -z: half a turn about x */
            const double x[3] = { 1, 0, 0 };
            rot_axis_angle(x, 180.0, Q);
        }
    }
    matmul(R, Q, o->rot);
    for (int i = 0; i < 3; ++i) {
        const double rc = R[3 * i] * o->center[0] + R[3 * i + 1] * o->center[1] + R[3 * i + 2] * o->center[2];
        o->origin[i] = o->translate[i] + o->scale * rc;
    }
    if (dims == 2) o->origin[2] = 0.0;
    const double s = o->scale;
    if (o->shape == GEOM_BOX) {
        for (int k = 0; k < 3; ++k) o->ext[k] = 0.5 * s * o->size[k];
        if (dims == 2) o->ext[2] = 1e30;
    } else if (o->shape == GEOM_SPHERE) {
        o->ext[0] = s * o->radius;
        o->ext[1] = o->ext[2] = 0.0;
    } else {
        o->ext[0] = s * o->radius;
        o->ext[1] = 0.5 * s * o->length;
        o->ext[2] = 0.0;
    }
}

/* Trilinear interpolation of a mesh's grid (geom_shared.h) at x, and its gradient, normalised. */
static double grid_sdf(const scene_object *o, const float *grid, const double x[3], double n[3])
{
    double u[3], f[3], out2 = 0;
    long i[3];
    for (int a = 0; a < 3; ++a) {
        u[a] = (x[a] - o->grid_origin[a]) / o->grid_cell;
        const double top = (double)(o->grid_n[a] - 1);
        const double c = u[a] < 0 ? 0 : u[a] > top ? top : u[a]; /* beyond the grid: its face */
        out2 += (u[a] - c) * (u[a] - c);
        i[a] = (long)floor(c);
        if (i[a] > o->grid_n[a] - 2) i[a] = o->grid_n[a] - 2;
        f[a] = c - (double)i[a];
    }
    const float *g = grid + o->grid_offset;
    const long nx = o->grid_n[0], nxy = o->grid_n[0] * o->grid_n[1];
    double c[8];
    for (int k = 0; k < 8; ++k)
        c[k] = g[(i[0] + (k & 1)) + nx * (i[1] + ((k >> 1) & 1)) + nxy * (i[2] + ((k >> 2) & 1))];
    const double fx = f[0], fy = f[1], fz = f[2];
    const double c00 = c[0] + fx * (c[1] - c[0]), c10 = c[2] + fx * (c[3] - c[2]);
    const double c01 = c[4] + fx * (c[5] - c[4]), c11 = c[6] + fx * (c[7] - c[6]);
    const double c0 = c00 + fy * (c10 - c00), c1 = c01 + fy * (c11 - c01);
    double phi = c0 + fz * (c1 - c0);
    if (n) {
        double gx = (1 - fy) * (1 - fz) * (c[1] - c[0]) + fy * (1 - fz) * (c[3] - c[2]) +
                    (1 - fy) * fz * (c[5] - c[4]) + fy * fz * (c[7] - c[6]);
        double gy = (1 - fx) * (1 - fz) * (c[2] - c[0]) + fx * (1 - fz) * (c[3] - c[1]) +
                    (1 - fx) * fz * (c[6] - c[4]) + fx * fz * (c[7] - c[5]);
        double gz = c1 - c0;
        const double l = sqrt(gx * gx + gy * gy + gz * gz);
        n[0] = l > 0 ? gx / l : 0;
        n[1] = l > 0 ? gy / l : 0;
        n[2] = l > 0 ? gz / l : 1;
    }
    if (out2 > 0) phi = fmax(phi, 0.0) + sqrt(out2) * o->grid_cell; /* outside the grid: outside the mesh */
    return phi;
}

/* A polygon's distance, sign and normal (kernels/geom.h, geom_polygon_sdf), from the same float
 * vertices. */
static double polygon_sdf(const scene_object *o, const float *grid, const double x[3], double n[3])
{
    const float *v = grid + o->grid_offset;
    const long m = o->n_vertices;
    double best = INFINITY, g[2] = { 1, 0 };
    int inside = 0;
    for (long k = 0; k < m; ++k) {
        const long k1 = k + 1 == m ? 0 : k + 1;
        const double a[2] = { v[2 * k], v[2 * k + 1] }, b[2] = { v[2 * k1], v[2 * k1 + 1] };
        const double ab[2] = { b[0] - a[0], b[1] - a[1] }, ap[2] = { x[0] - a[0], x[1] - a[1] };
        double t = (ap[0] * ab[0] + ap[1] * ab[1]) / (ab[0] * ab[0] + ab[1] * ab[1]);
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        const double dd[2] = { ap[0] - t * ab[0], ap[1] - t * ab[1] }, d2 = dd[0] * dd[0] + dd[1] * dd[1];
        if (d2 < best) {
            best = d2;
            g[0] = d2 > 0 ? dd[0] : ab[1];
            g[1] = d2 > 0 ? dd[1] : -ab[0];
        }
        if ((a[1] > x[1]) != (b[1] > x[1]) && x[0] < a[0] + (x[1] - a[1]) * ab[0] / ab[1]) inside = !inside;
    }
    const double l = hypot(g[0], g[1]), s = inside ? -1.0 : 1.0;
    if (n) {
        n[0] = s * g[0] / l;
        n[1] = s * g[1] / l;
        n[2] = 0;
    }
    return s * sqrt(best);
}

double geom_sdf_grid(const scene_object *o, const float *grid, int dims, const double x[3], double n[3])
{
    if (o->shape == GEOM_POLYGON) {
        const double d = polygon_sdf(o, grid, x, n);
        if (o->role == OBJ_CONTAINER) {
            if (n)
                for (int k = 0; k < 3; ++k) n[k] = -n[k];
            return -d;
        }
        return d;
    }
    const double sg = o->role == OBJ_CONTAINER ? -1.0 : 1.0;
    const double d = o->shape == GEOM_MESH ? grid_sdf(o, grid, x, n) : geom_sdf(o, dims, x, n);
    if (n && sg < 0)
        for (int k = 0; k < 3; ++k) n[k] = -n[k];
    return sg * d;
}

double geom_sdf(const scene_object *o, int dims, const double x[3], double n[3])
{
    const double *R = o->rot;
    const double d[3] = { x[0] - o->origin[0], x[1] - o->origin[1], dims == 3 ? x[2] - o->origin[2] : 0.0 };
    double y[3];
    for (int j = 0; j < 3; ++j) y[j] = R[j] * d[0] + R[3 + j] * d[1] + R[6 + j] * d[2];
    double dist, g[3] = { 0, 0, 0 };
    if (o->shape == GEOM_SPHERE) {
        const double r = sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
        dist = r - o->ext[0];
        for (int k = 0; k < 3; ++k) g[k] = r > 0 ? y[k] / r : (k == 2);
    } else if (o->shape == GEOM_CYLINDER) {
        const double rr = hypot(y[0], y[1]);
        const double rad[2] = { rr > 0 ? y[0] / rr : 1.0, rr > 0 ? y[1] / rr : 0.0 };
        const double qr = rr - o->ext[0], qz = fabs(y[2]) - o->ext[1], sz = y[2] < 0 ? -1.0 : 1.0;
        if (qr > 0 && qz > 0) {
            dist = hypot(qr, qz);
            g[0] = rad[0] * qr / dist;
            g[1] = rad[1] * qr / dist;
            g[2] = sz * qz / dist;
        } else if (qr > qz) {
            dist = qr;
            g[0] = rad[0];
            g[1] = rad[1];
        } else {
            dist = qz;
            g[2] = sz;
        }
    } else {
        double q[3], s[3], qo[3], lo = 0;
        for (int k = 0; k < 3; ++k) {
            q[k] = fabs(y[k]) - o->ext[k];
            s[k] = y[k] < 0 ? -1.0 : 1.0;
            qo[k] = q[k] > 0 ? q[k] : 0.0;
            lo += qo[k] * qo[k];
        }
        lo = sqrt(lo);
        if (lo > 0) {
            dist = lo;
            for (int k = 0; k < 3; ++k) g[k] = s[k] * qo[k] / lo;
        } else {
            const int a = q[0] >= q[1] && q[0] >= q[2] ? 0 : q[1] >= q[2] ? 1 : 2;
            dist = q[a];
            g[a] = s[a];
        }
    }
    const double sg = 1.0; /* the shape's own distance; geom_sdf_grid applies a container's sign */
    if (n)
        for (int i = 0; i < 3; ++i) n[i] = sg * (R[3 * i] * g[0] + R[3 * i + 1] * g[1] + R[3 * i + 2] * g[2]);
    return sg * dist;
}

double geom_phi(const scene *s, const double x[3], int *which)
{
    double best = INFINITY;
    int w = -1;
    for (int k = 0; k < s->n_objects; ++k) {
        const double d = geom_sdf_grid(&s->objects[k], s->geom_grid, s->dims, x, NULL);
        if (d < best) {
            best = d;
            w = k;
        }
    }
    if (which) *which = w;
    return best;
}

void geom_bounds(const scene_object *o, const float *grid, int dims, double lo[3], double hi[3])
{
    const double *R = o->rot;
    for (int i = 0; i < 3; ++i) lo[i] = hi[i] = o->origin[i];
    if (o->shape == GEOM_MESH || o->shape == GEOM_POLYGON) {
        const int nd = o->shape == GEOM_MESH ? 3 : 2;
        for (int i = 0; i < nd; ++i) {
            lo[i] = INFINITY;
            hi[i] = -INFINITY;
        }
        for (long k = 0; k < o->n_vertices; ++k)
            for (int i = 0; i < nd; ++i) {
                const double x = o->shape == GEOM_MESH ? o->mesh_vert[3 * k + i] : grid[o->grid_offset + 2 * k + i];
                lo[i] = fmin(lo[i], x);
                hi[i] = fmax(hi[i], x);
            }
    } else {
        for (int i = 0; i < dims; ++i) {
            double half = 0;
            if (o->shape == GEOM_SPHERE) half = o->ext[0];
            else if (o->shape == GEOM_CYLINDER) { /* the axis is the frame's z: R's third column */
                const double a = fabs(R[3 * i + 2]);
                half = a * o->ext[1] + o->ext[0] * sqrt(fmax(0.0, 1.0 - a * a));
            } else
                for (int j = 0; j < dims; ++j) half += fabs(R[3 * i + j]) * o->ext[j];
            lo[i] = o->origin[i] - half;
            hi[i] = o->origin[i] + half;
        }
    }
    if (dims == 2) lo[2] = hi[2] = 0.0;
}

int geom_region_holds(const scene *s, const scene_region *r, const double x[3], double d)
{
    const double m = d * (1.0 - 2e-9); /* a lattice row on the boundary's margin stays, as in a block */
    const double z = x[s->dims - 1];
    if (z < r->above + m || z > r->below - m) return 0;
    if (r->fill == REGION_CONTAINER) return 1;
    return geom_sdf_grid(&r->shape, s->region_grid, s->dims, x, NULL) <= -m;
}

unsigned geom_pack(const scene *s, geom_object out[GEOM_MAX_OBJECTS])
{
    memset(out, 0, GEOM_MAX_OBJECTS * sizeof *out);
    for (int k = 0; k < s->n_objects; ++k) {
        const scene_object *o = &s->objects[k];
        for (int i = 0; i < 9; ++i) out[k].rot[i] = (float)o->rot[i];
        for (int i = 0; i < 3; ++i) {
            out[k].origin[i] = (float)o->origin[i];
            out[k].ext[i] = (float)o->ext[i];
        }
        out[k].sign = o->role == OBJ_CONTAINER ? -1.0f : 1.0f;
        out[k].shape = o->shape;
        if (o->shape == GEOM_POLYGON) { /* the world's frame: the vertices are placed already */
            memset(out[k].rot, 0, sizeof out[k].rot);
            out[k].rot[0] = out[k].rot[4] = out[k].rot[8] = 1.0f;
            out[k].grid_n[0] = (dev_u32)o->n_vertices;
            out[k].grid_offset = (dev_u32)o->grid_offset;
        }
        if (o->shape == GEOM_MESH) { /* the frame is the world's: the grid is placed already */
            memset(out[k].rot, 0, sizeof out[k].rot);
            out[k].rot[0] = out[k].rot[4] = out[k].rot[8] = 1.0f;
            for (int i = 0; i < 3; ++i) {
                out[k].origin[i] = 0.0f;
                out[k].grid_origin[i] = (float)o->grid_origin[i];
                out[k].grid_n[i] = (dev_u32)o->grid_n[i];
            }
            out[k].grid_cell = (float)o->grid_cell;
            out[k].grid_offset = (dev_u32)o->grid_offset;
            out[k].grid_band = (float)o->grid_band;
        }
    }
    return (unsigned)s->n_objects;
}
