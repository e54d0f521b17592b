/* output_gauges: the gauges' time series in the output file (docs/output-format.md, "Gauges"):
 * /sphsim/gauges/NAME, float64 [rows, 1 + cols], a row per sample (time, then the gauge's
 * columns), row r for step r * every. Rows are written with the snapshot whose commit covers
 * them (output_write_state writes them before it raises NSteps); rows past the last committed
 * step (a kill before the commit) are cut on --resume, and readers take the rows of steps up to
 * the last committed snapshot's. */
#include <stdlib.h>
#include <string.h>

#include "gauges.h"
#include "output_internal.h"

#define GAUGE_CHUNK_ROWS 1024

static void gauge_path(const scene_gauge *g, char *buf, size_t n) { snprintf(buf, n, "/sphsim/gauges/%s", g->name); }

int output_gauges_create(output *o, const scene *s)
{
    if (s->n_gauges == 0) return 0;
    hid_t f = o->file;
    hid_t grp = H5Gcreate2(f, "/sphsim/gauges", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (grp < 0) return -1;
    char order[SCENE_MAX_GAUGES * SCENE_GAUGE_NAME] = "";
    for (int k = 0; k < s->n_gauges; ++k) {
        if (k) strcat(order, ",");
        strcat(order, s->gauges[k].name);
    }
    int rc = h5io_attr_str(grp, "order", order);
    static const char *const TYPES[] = { "pressure", "velocity", "height", "force" };
    for (int k = 0; k < s->n_gauges && rc == 0; ++k) {
        const scene_gauge *g = &s->gauges[k];
        const int cols = gauge_cols(s, g);
        if (h5io_ds_create(grp, g->name, H5T_IEEE_F64LE, 2, (hsize_t)cols + 1, GAUGE_CHUNK_ROWS) < 0) {
            rc = -1;
            break;
        }
        hid_t ds = H5Dopen2(grp, g->name, H5P_DEFAULT);
        char columns[128], units[128];
        snprintf(columns, sizeof columns, "time,%s", gauge_col_names(s, g));
        snprintf(units, sizeof units, "s,%s", gauge_col_units(s, g));
        rc = ds < 0 || h5io_attr_str(ds, "type", TYPES[g->type]) < 0 || h5io_attr_str(ds, "columns", columns) < 0 ||
                     h5io_attr_str(ds, "units", units) < 0 || h5io_attr_f64v(ds, "point", g->point, s->dims) < 0 ||
                     h5io_attr_str(ds, "object", g->type == GAUGE_FORCE ? g->object : "") < 0 ||
                     h5io_attr_f64(ds, "interval", g->interval) < 0 || h5io_attr_i64(ds, "every_steps", g->every) < 0
                 ? -1
                 : 0;
        if (ds >= 0) H5Dclose(ds);
    }
    H5Gclose(grp);
    return rc;
}

int output_gauges_write(output *o, const scene *s, const output_gauge_rows *r)
{
    for (int k = 0; k < s->n_gauges; ++k) {
        const long rows = r->rows[k];
        if (rows <= 0) continue;
        const scene_gauge *g = &s->gauges[k];
        const int cols = gauge_cols(s, g);
        const long first = (r->step0 + g->every - 1) / g->every; /* the row of the first sample */
        double *buf = malloc(sizeof *buf * (size_t)rows * (size_t)(cols + 1));
        if (!buf) {
            h5io_set_reason("out of host memory");
            return -1;
        }
        for (long q = 0; q < rows; ++q) {
            double *row = buf + q * (cols + 1);
            row[0] = (double)((first + q) * g->every) * s->dt;
            for (int c = 0; c < cols; ++c) row[1 + c] = r->data[r->offset[k] + (size_t)q * (size_t)cols + (size_t)c];
        }
        char path[128];
        gauge_path(g, path, sizeof path);
        const int rc = h5io_ds_write_rows(o->file, path, H5T_NATIVE_DOUBLE, buf, (hsize_t)first, (hsize_t)rows);
        free(buf);
        if (rc < 0) return -1;
    }
    return 0;
}

int output_gauges_cut(output *o, const scene *s, long last_step)
{
    for (int k = 0; k < s->n_gauges; ++k) {
        char path[128];
        gauge_path(&s->gauges[k], path, sizeof path);
        if (!h5io_link_exists(o->file, path)) return -1;
        const hsize_t keep = (hsize_t)gauge_rows_to(&s->gauges[k], last_step);
        const long long cur = h5io_ds_rows(o->file, path);
        if (cur < 0) return -1;
        /* grown past any chunk a kill may have left listed, then cut (as output.c's ds_cut) */
        const hsize_t high = ((hsize_t)cur > keep ? (hsize_t)cur : keep) + 2 * GAUGE_CHUNK_ROWS;
        if (h5io_ds_write_rows(o->file, path, H5T_NATIVE_DOUBLE, NULL, high, 0) < 0 ||
            h5io_ds_write_rows(o->file, path, H5T_NATIVE_DOUBLE, NULL, keep, 0) < 0)
            return -1;
    }
    return 0;
}

double output_gauges_bytes(const output *o)
{
    double b = 0.0;
    for (int q = 0; q < o->n_gauge_rows && o->scene; ++q)
        for (int k = 0; k < o->scene->n_gauges; ++k)
            b += 8.0 * (double)o->gauge_rows[q].rows[k] * (gauge_cols(o->scene, &o->scene->gauges[k]) + 1);
    return b;
}

sphsim_status output_write_gauges(output *o, const output_gauge_rows *r, sphsim_error *e)
{
    if (!o->scene || o->scene->n_gauges == 0) return SPHSIM_OK;
    if (o->n_gauge_rows == o->cap_gauge_rows) {
        const int cap = o->cap_gauge_rows ? 2 * o->cap_gauge_rows : 4;
        output_gauge_rows *q = realloc(o->gauge_rows, sizeof *q * (size_t)cap);
        if (!q) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory");
        o->gauge_rows = q;
        o->cap_gauge_rows = cap;
    }
    o->gauge_rows[o->n_gauge_rows++] = *r;
    return SPHSIM_OK;
}
