/* h5io: the HDF5 helpers the output modules share: datasets created, grown, written and read
 * by rows; attributes written and read; flush with fsync; and the capture of HDF5's error
 * messages (library code never prints them). Not thread-safe, like serial HDF5 itself. */
#include "h5io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first HDF5 failure since the last h5io_reason(): its innermost error message. Filled by
 * an automatic error handler that records instead of printing (HDF5 clears its error stack
 * at the next API call, e.g. the H5Dclose in a cleanup path, so the stack cannot be read
 * afterwards). HDF5 (serial) is not thread-safe, and neither is this. */
static char g_h5_first[512];
static int g_h5_have;

static herr_t h5_walk_cb(unsigned n, const H5E_error2_t *err, void *data)
{
    (void)data;
    if (n == 0 && err && err->desc && !g_h5_have) {
        snprintf(g_h5_first, sizeof g_h5_first, "%s", err->desc);
        g_h5_have = 1;
    }
    return 0;
}

static herr_t h5_record(hid_t estack, void *data)
{
    (void)data;
    H5Ewalk2(estack, H5E_WALK_UPWARD, h5_walk_cb, NULL);
    return 0;
}

/* Record HDF5 errors instead of printing them (library code never prints). The first call
 * also asks HDF5 not to close files at process exit (effective when no HDF5 call came
 * before): after a flush that failed, HDF5 1.10 can no longer close that file ("slist already
 * enabled"), and its exit handler then crashes. Every file here is closed explicitly, and
 * every commit is flushed when made, so nothing is lost by this. */
void h5io_quiet(void)
{
    static int once;
    if (!once) {
        once = 1;
        H5dont_atexit();
    }
    H5Eset_auto2(H5E_DEFAULT, h5_record, NULL);
    h5io_forget();
}

#if defined(__GNUC__)
/* The same before main(), so that it holds even when other code calls HDF5 first. */
__attribute__((constructor)) static void h5io_no_atexit(void) { H5dont_atexit(); }
#endif

/* The innermost message of the first recorded HDF5 failure, shortened to the system's
 * reason when it carries one ("error message = 'No space left on device'"); then forgets it. */
const char *h5io_reason(char *out, size_t n)
{
    if (!g_h5_have) {
        snprintf(out, n, "unknown HDF5 error");
        return out;
    }
    h5io_forget();
    const char *key = "error message = '";
    const char *p = strstr(g_h5_first, key);
    if (p) {
        p += strlen(key);
        const char *q = strchr(p, '\'');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len >= n) len = n - 1;
        memcpy(out, p, len);
        out[len] = '\0';
    } else {
        snprintf(out, n, "%s", g_h5_first);
    }
    return out;
}

void h5io_forget(void) { g_h5_have = 0; }

int h5io_failed(void) { return g_h5_have; }

void h5io_set_reason(const char *why)
{
    snprintf(g_h5_first, sizeof g_h5_first, "error message = '%s'", why);
    g_h5_have = 1;
}

/* Create an extendable, chunked dataset of `rank` 1 (rows) or 2 (rows x cols), 0 rows. */
/* Create dataset `name` of rank 1 or 2 with extent dims and maximum maxd; chunked in chunks of
 * chunk[0] rows when chunk is not NULL, else contiguous; `early`: its storage allocated in the
 * file now. Never filled. */
static int ds_create(hid_t loc, const char *name, hid_t ftype, int rank, const hsize_t dims[2], const hsize_t maxd[2],
                     const hsize_t *chunk, int early)
{
    hid_t sp = H5Screate_simple(rank, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int rc = -1;
    if (sp >= 0 && dcpl >= 0 && (chunk ? H5Pset_chunk(dcpl, rank, chunk) : H5Pset_layout(dcpl, H5D_CONTIGUOUS)) >= 0 &&
        (!early || H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0) &&
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0) {
        hid_t ds = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (ds >= 0) {
            rc = 0;
            H5Dclose(ds);
        }
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

int h5io_ds_create(hid_t loc, const char *name, hid_t ftype, int rank, hsize_t cols, hsize_t chunk_rows)
{
    const hsize_t dims[2] = { 0, cols }, maxd[2] = { H5S_UNLIMITED, cols },
                  chunk[2] = { chunk_rows ? chunk_rows : 1, cols };
    return ds_create(loc, name, ftype, rank, dims, maxd, chunk, 0);
}

/* Create a dataset of `rows` x `cols` (rank 1: rows only) whose whole storage is allocated in
 * the file now (H5D_ALLOC_TIME_EARLY) and never filled: contiguous, or with `max_rows` > rows,
 * chunked in one chunk of max_rows rows, extendable up to max_rows within that chunk (its
 * extent is then the only thing an extension changes: the dataspace message, rewritten in
 * place in the object header). */
int h5io_ds_create_fixed(hid_t loc, const char *name, hid_t ftype, int rank, hsize_t rows, hsize_t cols,
                         hsize_t max_rows)
{
    const int chunked = max_rows > rows;
    const hsize_t dims[2] = { rows, cols }, maxd[2] = { chunked ? max_rows : rows, cols },
                  chunk[2] = { max_rows, cols };
    return ds_create(loc, name, ftype, rank, dims, maxd, chunked ? chunk : NULL, 1);
}

/* ---------------------------------------------------------------- parallel files */

/* The parallel file h5io writes collectively (h5io_parallel), whether this rank is its root,
 * the collective transfer list, and the I/O mode of the last h5io_ds_write_runs. */
static hid_t g_par_file = -1;
static int g_par_root = 1;
static hid_t g_par_dxpl = -1;
static int g_runs_collective = -1;
static char g_runs_why[128];

int h5io_parallel_supported(void)
{
#ifdef H5_HAVE_PARALLEL
    return 1;
#else
    return 0;
#endif
}

void h5io_parallel(hid_t file, int is_root)
{
    if (g_par_dxpl >= 0) H5Pclose(g_par_dxpl);
    g_par_dxpl = -1;
    g_par_file = -1;
    g_par_root = 1;
#ifdef H5_HAVE_PARALLEL
    if (file >= 0) {
        g_par_dxpl = H5Pcreate(H5P_DATASET_XFER);
        if (g_par_dxpl >= 0) H5Pset_dxpl_mpio(g_par_dxpl, H5FD_MPIO_COLLECTIVE);
        g_par_file = file;
        g_par_root = is_root;
    }
#else
    (void)file, (void)is_root;
#endif
}

int h5io_is_parallel(hid_t file) { return file >= 0 && file == g_par_file; }

/* The transfer list for a write to `file`, and whether this rank's selection is empty (a
 * parallel file's root-only write on another rank). */
static hid_t xfer_for(hid_t file, int *none)
{
    const int par = h5io_is_parallel(file);
    *none = par && !g_par_root;
    return par ? g_par_dxpl : H5P_DEFAULT;
}

/* Rows [start, start + rows) (all columns) of open dataset ds, rank 1 or 2, written from or
 * read into buf; with `extend`, the dataset's rows are set to start + rows first (rows == 0:
 * only that). `dxpl`: the transfer list; `none`: this rank writes nothing (a collective write
 * whose data another rank gives). */
static int rows_io(hid_t ds, hid_t mtype, void *buf, hsize_t start, hsize_t rows, int do_write, int extend, hid_t dxpl,
                   int none)
{
    int rc = -1;
    hid_t fs = H5Dget_space(ds), ms = -1;
    hsize_t dims[2] = { 0, 1 }, off[2] = { start, 0 }, cnt[2];
    int rank = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
    if (rank < 1 || rank > 2 || H5Sget_simple_extent_dims(fs, dims, NULL) < 0) goto done;
    if (extend) {
        dims[0] = start + rows;
        H5Sclose(fs);
        fs = -1;
        if (H5Dset_extent(ds, dims) < 0 || (fs = H5Dget_space(ds)) < 0) goto done;
    }
    if (start + rows > dims[0]) goto done;
    if (rows == 0) {
        rc = 0;
        goto done;
    }
    cnt[0] = rows;
    cnt[1] = rank > 1 ? dims[1] : 1;
    ms = H5Screate_simple(rank, cnt, NULL);
    if (ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0) goto done;
    if (none && (H5Sselect_none(fs) < 0 || H5Sselect_none(ms) < 0)) goto done;
    if ((do_write ? H5Dwrite(ds, mtype, ms, fs, dxpl, buf) : H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, buf)) < 0)
        goto done;
    rc = 0;
done:
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

/* Write `rows` rows from `buf` at row `start` (all columns) of dataset `path`, within its
 * extent (which is not changed). */
int h5io_ds_write_rows(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t start, hsize_t rows)
{
    return h5io_ds_io_rows(file, path, mtype, buf, start, rows, 0);
}

/* Set the row count of dataset `path` to start + rows and write `rows` rows from `buf` at
 * row `start` (all columns). With rows == 0 this only sets the extent (grow or cut). */
int h5io_ds_extend_rows(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t start, hsize_t rows)
{
    return h5io_ds_io_rows(file, path, mtype, buf, start, rows, 1);
}

int h5io_ds_io_rows(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t start, hsize_t rows, int extend)
{
    /* A write of at least H5IO_DIRECT_ROWS rows (a snapshot's per-particle rows, the
     * smallest of their chunks; or Steps/Values rewritten after 1024 snapshots) bypasses HDF5's
     * chunk cache: whole chunks then go from buf to the file in one write each instead of
     * through a copy in the cache, which took the writer's HDF5 time down by about a third
     * (docs/performance.md, "the writer without the chunk cache"). The datasets are the same.
     * (The output's per-particle datasets are contiguous now, where the cache plays no part.) */
    hid_t dapl = H5P_DEFAULT;
    if (rows >= H5IO_DIRECT_ROWS) {
        dapl = H5Pcreate(H5P_DATASET_ACCESS);
        if (dapl < 0 || H5Pset_chunk_cache(dapl, 0, 0, 1.0) < 0) {
            if (dapl >= 0) H5Pclose(dapl);
            return -1;
        }
    }
    hid_t ds = H5Dopen2(file, path, dapl);
    if (dapl != H5P_DEFAULT) H5Pclose(dapl);
    if (ds < 0) return -1;
    int none = 0;
    const hid_t dxpl = xfer_for(file, &none);
    int rc = rows_io(ds, mtype, (void *)buf, start, rows, 1, extend, dxpl, none);
    H5Dclose(ds);
    return rc;
}

/* Number of rows of dataset `path`, or -1. */
long long h5io_ds_rows(hid_t file, const char *path)
{
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t fs = H5Dget_space(ds);
    hsize_t dims[2] = { 0, 0 };
    long long r = -1;
    if (fs >= 0 && H5Sget_simple_extent_ndims(fs) >= 1 && H5Sget_simple_extent_ndims(fs) <= 2 &&
        H5Sget_simple_extent_dims(fs, dims, NULL) >= 0)
        r = (long long)dims[0];
    if (fs >= 0) H5Sclose(fs);
    H5Dclose(ds);
    return r;
}

/* Read rows [start, start + rows) (all columns) of dataset `path` into `buf`. */
int h5io_ds_read_rows(hid_t file, const char *path, hid_t mtype, void *buf, hsize_t start, hsize_t rows)
{
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    int rc = rows_io(ds, mtype, buf, start, rows, 0, 0, H5P_DEFAULT, 0);
    H5Dclose(ds);
    return rc;
}

int h5io_link_exists(hid_t loc, const char *path)
{
    /* H5Lexists needs every intermediate group to exist: test each prefix. */
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; ++p) {
        if (*p != '/') continue;
        *p = '\0';
        if (H5Lexists(loc, buf, H5P_DEFAULT) <= 0) return 0;
        *p = '/';
    }
    return H5Lexists(loc, buf, H5P_DEFAULT) > 0;
}

int h5io_attr_write(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int rank, hsize_t len, const void *v)
{
    hid_t sp = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &len, NULL);
    if (sp < 0) return -1;
    if (H5Aexists(loc, name) > 0) H5Adelete(loc, name);
    hid_t a = H5Acreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, mtype, v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

int h5io_attr_f64(hid_t loc, const char *name, double v)
{
    return h5io_attr_write(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, 1, &v);
}

int h5io_attr_f64v(hid_t loc, const char *name, const double *v, hsize_t n)
{
    return h5io_attr_write(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, n, v);
}

int h5io_attr_i64(hid_t loc, const char *name, long long v)
{
    int64_t x = (int64_t)v;
    return h5io_attr_write(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 0, 1, &x);
}

/* Variable-length UTF-8 string (h5py reads it as str). */
int h5io_attr_str(hid_t loc, const char *name, const char *s)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    const char *v = s ? s : "";
    int rc = h5io_attr_write(loc, name, t, t, 0, 1, &v);
    H5Tclose(t);
    return rc;
}

/* Fixed-length ASCII string, null padded, exactly strlen(s) bytes (as VTKHDF's Type). */
int h5io_attr_fixed_str(hid_t loc, const char *name, const char *s)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    H5Tset_size(t, strlen(s));
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    H5Tset_cset(t, H5T_CSET_ASCII);
    int rc = h5io_attr_write(loc, name, t, t, 0, 1, s);
    H5Tclose(t);
    return rc;
}

/* Fixed-length string attribute of `size` bytes (null padded; s cut to fit), so that a later
 * h5io_attr_overwrite_str rewrites it in place. */
int h5io_attr_fixed_str_len(hid_t loc, const char *name, const char *s, size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    H5Tset_size(t, size);
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    H5Tset_cset(t, H5T_CSET_UTF8);
    char *buf = calloc(size, 1);
    int rc = -1;
    if (buf) {
        strncpy(buf, s, size);
        rc = h5io_attr_write(loc, name, t, t, 0, 1, buf);
    }
    free(buf);
    H5Tclose(t);
    return rc;
}

/* Rewrite the value of the existing attribute `name` of `loc` (its type and size unchanged, so
 * that HDF5 writes it where it is). */
int h5io_attr_overwrite(hid_t loc, const char *name, hid_t mtype, const void *v)
{
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, mtype, v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* Read a string attribute (variable or fixed length) into a malloc'd string. */
char *h5io_attr_read_str(hid_t loc, const char *obj, const char *name)
{
    hid_t o = H5Oopen(loc, obj, H5P_DEFAULT);
    if (o < 0) return NULL;
    hid_t a = H5Aopen(o, name, H5P_DEFAULT);
    if (a < 0) {
        H5Oclose(o);
        return NULL;
    }
    char *out = NULL;
    hid_t ft = H5Aget_type(a);
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
        if (H5Tis_variable_str(ft) > 0) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, H5T_VARIABLE);
            H5Tset_cset(mt, H5Tget_cset(ft));
            char *v = NULL;
            if (H5Aread(a, mt, &v) >= 0 && v) {
                out = strdup(v);
                hid_t sp = H5Screate(H5S_SCALAR);
                H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, &v);
                H5Sclose(sp);
            }
            H5Tclose(mt);
        } else {
            size_t len = H5Tget_size(ft);
            out = calloc(len + 1, 1);
            if (out && H5Aread(a, ft, out) < 0) {
                free(out);
                out = NULL;
            }
        }
    }
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    H5Oclose(o);
    return out;
}

int h5io_attr_read_i64(hid_t loc, const char *obj, const char *name, long long *v)
{
    hid_t o = H5Oopen(loc, obj, H5P_DEFAULT);
    if (o < 0) return -1;
    hid_t a = H5Aopen(o, name, H5P_DEFAULT);
    int64_t x = 0;
    int rc = a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &x) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Oclose(o);
    *v = (long long)x;
    return rc;
}

/* The block of run j (axis as h5io_ds_write_runs; cols: the dataset's columns). */
static void run_block(const hsize_t *run, size_t j, int axis, hsize_t base, hsize_t cols, hsize_t off[2],
                      hsize_t cnt[2])
{
    if (axis == 0) off[0] = base + run[2 * j], off[1] = 0, cnt[0] = run[2 * j + 1], cnt[1] = cols;
    else off[0] = base, off[1] = run[2 * j], cnt[0] = 1, cnt[1] = run[2 * j + 1];
}

/* A copy of dataspace fs selecting the union of runs [j0, j1), built as a balanced tree of
 * unions (H5Scombine_select): adding hyperslabs one by one to a selection takes HDF5 1.10 time
 * that grows faster than the square of their count (10^4 runs of a [3 10^6, 3] space: 3.8 s,
 * 5 10^4: 276 s), the tree about n log n (0.02 s and 0.11 s). -1 on failure. */
static hid_t runs_space(hid_t fs, const hsize_t *run, size_t j0, size_t j1, int axis, hsize_t base, hsize_t cols)
{
    if (j1 - j0 <= 16) {
        hid_t sp = H5Scopy(fs);
        for (size_t j = j0; sp >= 0 && j < j1; ++j) {
            hsize_t off[2], cnt[2];
            run_block(run, j, axis, base, cols, off, cnt);
            if (H5Sselect_hyperslab(sp, j > j0 ? H5S_SELECT_OR : H5S_SELECT_SET, off, NULL, cnt, NULL) < 0) {
                H5Sclose(sp);
                sp = -1;
            }
        }
        return sp;
    }
    const size_t m = j0 + (j1 - j0) / 2;
    hid_t a = runs_space(fs, run, j0, m, axis, base, cols);
    hid_t b = a >= 0 ? runs_space(fs, run, m, j1, axis, base, cols) : -1;
    hid_t c = b >= 0 ? H5Scombine_select(a, H5S_SELECT_OR, b) : -1;
    if (a >= 0) H5Sclose(a);
    if (b >= 0) H5Sclose(b);
    return c;
}

int h5io_ds_write_runs(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t base, const hsize_t *run,
                       size_t n_runs, int axis)
{
    g_runs_collective = -1;
    g_runs_why[0] = '\0';
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    int none = 0;
    const hid_t dxpl = xfer_for(file, &none);
    hid_t fs = H5Dget_space(ds), sel = -1, ms = -1;
    hsize_t dims[2] = { 0, 1 };
    int rank = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
    int ok = rank >= 1 && rank <= 2 && (axis == 0 || rank == 2) && H5Sget_simple_extent_dims(fs, dims, NULL) >= 0;
    const hsize_t cols = rank > 1 ? dims[1] : 1;
    /* every run within the extent; the elements in all */
    hsize_t elems = 0;
    for (size_t j = 0; ok && j < n_runs; ++j) {
        hsize_t off[2], cnt[2];
        run_block(run, j, axis, base, cols, off, cnt);
        ok = off[0] + cnt[0] <= dims[0] && (axis == 0 || off[1] + cnt[1] <= dims[1]);
        elems += cnt[0] * cnt[1];
    }
    if (ok && n_runs > 0) ok = (sel = runs_space(fs, run, 0, n_runs, axis, base, cols)) >= 0;
    else if (ok) ok = (sel = H5Scopy(fs)) >= 0 && H5Sselect_none(sel) >= 0;
    if (ok) {
        hsize_t m = elems ? elems : 1;
        ms = H5Screate_simple(1, &m, NULL);
        ok = ms >= 0 && (elems > 0 || H5Sselect_none(ms) >= 0);
    }
    if (ok) ok = H5Dwrite(ds, mtype, ms, sel, dxpl, buf) >= 0;
#ifdef H5_HAVE_PARALLEL
    if (ok && dxpl != H5P_DEFAULT) {
        H5D_mpio_actual_io_mode_t mode = H5D_MPIO_NO_COLLECTIVE;
        uint32_t local = 0, global = 0;
        if (H5Pget_mpio_actual_io_mode(dxpl, &mode) >= 0) g_runs_collective = mode != H5D_MPIO_NO_COLLECTIVE;
        if (g_runs_collective == 0 && H5Pget_mpio_no_collective_cause(dxpl, &local, &global) >= 0)
            snprintf(g_runs_why, sizeof g_runs_why, "HDF5 broke collective I/O (cause bits 0x%x)", (unsigned)global);
    }
#endif
    (void)none;
    if (ms >= 0) H5Sclose(ms);
    if (sel >= 0) H5Sclose(sel);
    if (fs >= 0) H5Sclose(fs);
    H5Dclose(ds);
    return ok ? 0 : -1;
}

int h5io_runs_collective(char *why, size_t n)
{
    if (why && n) snprintf(why, n, "%s", g_runs_why);
    return g_runs_collective;
}

int h5io_sync(hid_t file)
{
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) return -1;
#ifdef H5_HAVE_PARALLEL
    if (h5io_is_parallel(file)) {
        /* every rank's rows on the disk (MPI_File_sync, collective) before any rank goes on
         * (to a commit point: docs/mpi.md) */
        MPI_File *fh = NULL;
        if (H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fh) < 0 || !fh || MPI_File_sync(*fh) != MPI_SUCCESS)
            return -1;
        MPI_Barrier(MPI_COMM_WORLD);
        return 0;
    }
#endif
    int *fd = NULL;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fd) >= 0 && fd && *fd >= 0) {
        if (fsync(*fd) != 0 && errno != EINVAL && errno != EROFS) return -1;
    }
    return 0;
}

/* fsync the directory holding `path` (after a rename into it). */
void h5io_fsync_dir(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir ? 1 : 0] = '\0';
    else snprintf(dir, sizeof dir, ".");
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

/* Write (or read) the block at `off` of `cnt` elements of dataset `path` (rank 1 or 2). */
int h5io_ds_block(hid_t f, const char *path, hid_t mtype, int rank, const hsize_t *off, const hsize_t *cnt, void *buf,
                  int do_write)
{
    hid_t ds = H5Dopen2(f, path, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(rank, cnt, NULL);
    int none = 0;
    const hid_t dxpl = do_write ? xfer_for(f, &none) : H5P_DEFAULT;
    int ok = fs >= 0 && ms >= 0 && H5Sget_simple_extent_ndims(fs) == rank &&
             H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0;
    if (ok && none) ok = H5Sselect_none(fs) >= 0 && H5Sselect_none(ms) >= 0;
    if (ok && do_write) ok = H5Dwrite(ds, mtype, ms, fs, dxpl, buf) >= 0;
    else if (ok) ok = H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, buf) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    H5Dclose(ds);
    return ok ? 0 : -1;
}

/* Bytes per row of the state dataset `name` (with its lengths in `name_bytes`): 0 when the file
 * has none, -1 when it is unusable. */
