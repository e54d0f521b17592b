/* xdmf: the XDMF sidecar of an output file (out.xmf beside out.h5): a temporal collection of
 * one Uniform grid per committed snapshot whose DataItems are HyperSlabs into the concatenated
 * VTKHDF datasets, for readers that know XDMF but not VTKHDF (ParaView 5.11's "XDMF Reader",
 * VisIt). Rewritten in full after every commit, atomically (temporary file, fsync, rename). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output_internal.h"

void output_xmf_path(const char *h5_path, char *out, size_t out_size)
{
    if (!out || out_size == 0) return;
    size_t n = strlen(h5_path);
    size_t stem = n;
    if (n >= 3 && strcmp(h5_path + n - 3, ".h5") == 0) stem = n - 3;
    else if (n >= 5 && strcmp(h5_path + n - 5, ".hdf5") == 0) stem = n - 5;
    snprintf(out, out_size, "%.*s.xmf", (int)stem, h5_path);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void xml_escaped(FILE *f, const char *s)
{
    for (; *s; ++s) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *xdmf_number_type(int kind, int *precision)
{
    *precision = kind == FK_U8 || kind == FK_I8 ? 1 : 4;
    return kind == FK_U32 ? "UInt" : kind == FK_U8 ? "UChar" : kind == FK_I8 ? "Char" : "Float";
}

/* One HyperSlab DataItem: rows [start, start + n) of the concatenated dataset `dset`. */
static void xmf_slab(FILE *f, const char *h5name, const char *dset, int ncomp, int kind, unsigned long long start,
                     size_t n, unsigned long long total)
{
    int prec;
    const char *nt = xdmf_number_type(kind, &prec);
    const char *ind = "          ";
    if (ncomp > 1) {
        fprintf(f, "%s<DataItem ItemType=\"HyperSlab\" Dimensions=\"%zu %d\">\n", ind, n, ncomp);
        fprintf(f, "%s  <DataItem Dimensions=\"3 2\" NumberType=\"Int\" Format=\"XML\">%llu 0 1 1 %zu %d</DataItem>\n",
                ind, start, n, ncomp);
        fprintf(f, "%s  <DataItem Dimensions=\"%llu %d\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">", ind,
                total, ncomp, nt, prec);
    } else {
        fprintf(f, "%s<DataItem ItemType=\"HyperSlab\" Dimensions=\"%zu\">\n", ind, n);
        fprintf(f, "%s  <DataItem Dimensions=\"3 1\" NumberType=\"Int\" Format=\"XML\">%llu 1 %zu</DataItem>\n", ind,
                start, n);
        fprintf(f, "%s  <DataItem Dimensions=\"%llu\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">", ind, total,
                nt, prec);
    }
    xml_escaped(f, h5name);
    fprintf(f, ":%s</DataItem>\n%s</DataItem>\n", dset, ind);
}

/* The scene objects' surfaces (/sphsim/geometry/K: points and triangles, written with the
 * layout) as static triangle grids beside the particles, which ParaView shows at every time. */
static void xmf_objects(FILE *f, const output *o, const char *h5name)
{
    for (int k = 0;; ++k) {
        char pts[96], tri[96], grp[64];
        snprintf(grp, sizeof grp, "/sphsim/geometry/%d", k);
        snprintf(pts, sizeof pts, "%s/points", grp);
        snprintf(tri, sizeof tri, "%s/triangles", grp);
        if (!h5io_link_exists(o->file, pts) || !h5io_link_exists(o->file, tri)) break;
        const long long nv = h5io_ds_rows(o->file, pts), nt = h5io_ds_rows(o->file, tri);
        if (nv <= 0 || nt <= 0) continue;
        char *name = h5io_attr_read_str(o->file, grp, "name");
        fprintf(f, "    <Grid Name=\"");
        xml_escaped(f, name && *name ? name : "object");
        fprintf(f, "\" GridType=\"Uniform\">\n");
        free(name);
        fprintf(f, "      <Topology TopologyType=\"Triangle\" NumberOfElements=\"%lld\">\n", nt);
        fprintf(f, "        <DataItem Dimensions=\"%lld 3\" NumberType=\"Int\" Precision=\"8\" Format=\"HDF\">", nt);
        xml_escaped(f, h5name);
        fprintf(f, ":%s</DataItem>\n      </Topology>\n", tri);
        fprintf(f, "      <Geometry GeometryType=\"XYZ\">\n");
        fprintf(f, "        <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">", nv);
        xml_escaped(f, h5name);
        fprintf(f, ":%s</DataItem>\n      </Geometry>\n    </Grid>\n", pts);
    }
    h5io_forget();
}

sphsim_status xdmf_write(const output *o, sphsim_error *e)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", o->xmf_path);
    FILE *f = fopen(tmp, "w");
    if (!f) return SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot write the XDMF sidecar '%s': %s", tmp, strerror(errno));
    const char *h5name = base_name(o->path);
    unsigned long long total = (unsigned long long)o->nsteps * o->n;
    fprintf(f, "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n");
    fprintf(f, "<!-- sphsim XDMF sidecar of ");
    xml_escaped(f, h5name);
    fprintf(f,
            ": %llu committed snapshot(s). Every DataItem is a HyperSlab into the datasets of the .h5\n"
            "     (concatenated over snapshots). ParaView 5.11: open with the \"XDMF Reader\" (not Xdmf3).\n"
            "     ParaView 5.12+: open the .h5 itself (VTKHDF). -->\n",
            (unsigned long long)o->nsteps);
    fprintf(f, "<Xdmf Version=\"2.0\">\n  <Domain>\n");
    fprintf(f, "    <Grid Name=\"particles\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
    for (hsize_t k = 0; k < o->nsteps; ++k) {
        unsigned long long start = (unsigned long long)k * o->n;
        fprintf(f, "      <Grid Name=\"step_%llu\" GridType=\"Uniform\">\n", (unsigned long long)k);
        fprintf(f, "        <Time Value=\"%.17g\"/>\n", o->times[k]);
        fprintf(f, "        <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%zu\" NodesPerElement=\"1\"/>\n",
                o->n);
        fprintf(f, "        <Geometry GeometryType=\"XYZ\">\n");
        xmf_slab(f, h5name, "/VTKHDF/Points", 3, FK_F32, start, o->n, total);
        fprintf(f, "        </Geometry>\n");
        for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
            const field_desc *fd = &OUTPUT_FIELDS[i];
            if (!(o->fields & fd->bit)) continue;
            char dset[128];
            snprintf(dset, sizeof dset, "/VTKHDF/PointData/%s", fd->name);
            fprintf(f, "        <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"Node\">\n", fd->name,
                    fd->ncomp == 3 ? "Vector" : "Scalar");
            if (fd->bit & STATIC_FIELDS) /* one copy for every step */
                xmf_slab(f, h5name, dset, fd->ncomp, fd->kind, 0, o->n, o->n);
            else xmf_slab(f, h5name, dset, fd->ncomp, fd->kind, start, o->n, total);
            fprintf(f, "        </Attribute>\n");
        }
        fprintf(f, "      </Grid>\n");
    }
    fprintf(f, "    </Grid>\n");
    xmf_objects(f, o, h5name);
    fprintf(f, "  </Domain>\n</Xdmf>\n");
    int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        unlink(tmp);
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot write the XDMF sidecar '%s': %s", tmp, strerror(err));
    }
    if (rename(tmp, o->xmf_path) != 0) {
        err = errno;
        unlink(tmp);
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot rename '%s' to '%s': %s", tmp, o->xmf_path, strerror(err));
    }
    h5io_fsync_dir(o->xmf_path); /* make the rename itself durable */
    return SPHSIM_OK;
}
