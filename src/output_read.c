/* output_read: reads an output file back for --resume: the stored scene (output_read_scene,
 * attributes only) and, from one open of the file, everything a resumed run starts from
 * (output_read_resume): the last committed snapshot's particles, its step records, the device
 * order and the solver state stored with it. */
#include <stdlib.h>
#include <string.h>

#include "output_internal.h"

sphsim_status output_bad_file(sphsim_error *e, const char *path, const char *what)
{
    char why[512];
    if (!h5io_failed()) return SPHSIM_FAIL(e, SPHSIM_E_IO, "'%s' is not a readable sphsim output: %s", path, what);
    h5io_reason(why, sizeof why);
    return SPHSIM_FAIL(e, SPHSIM_E_IO, "'%s' is not a readable sphsim output: %s (HDF5: %s)", path, what, why);
}

/* NSteps, checked against the lengths of the step-entry datasets. */
sphsim_status output_read_nsteps(hid_t f, const char *path, hsize_t *nsteps, sphsim_error *e)
{
    long long ns = 0;
    if (!h5io_link_exists(f, "/VTKHDF/Steps") || !h5io_link_exists(f, "/sphsim/steps"))
        return output_bad_file(e, path, "no /VTKHDF/Steps or /sphsim/steps group");
    if (h5io_attr_read_i64(f, "/VTKHDF/Steps", "NSteps", &ns) < 0 || ns < 0)
        return output_bad_file(e, path, "no NSteps attribute");
    if (h5io_ds_rows(f, "/sphsim/steps/time") < ns)
        return output_bad_file(e, path, "step datasets shorter than NSteps");
    /* Steps/Values is written after the commit: one short after a crash right then */
    if (h5io_ds_rows(f, "/VTKHDF/Steps/Values") < ns - 1)
        return output_bad_file(e, path, "Steps/Values shorter than NSteps - 1");
    for (int i = 0; i < OUTPUT_N_STEP_I64; ++i)
        if (h5io_ds_rows(f, OUTPUT_STEP_I64[i]) < ns)
            return output_bad_file(e, path, "step datasets shorter than NSteps");
    *nsteps = (hsize_t)ns;
    return SPHSIM_OK;
}

/* The last committed snapshot (k = NSteps - 1) of open file f into p (id order) and si. */
static sphsim_status read_last(hid_t f, const char *path, hsize_t ns, particles *p, output_snapshot_info *si,
                               sphsim_error *e)
{
    sphsim_status r = SPHSIM_OK;
    float *xyz = NULL;
    hsize_t k = ns - 1;
    int64_t n64 = 0, poff = 0, i64 = 0, part = 0;
    if (h5io_ds_read_rows(f, "/VTKHDF/Steps/PartOffsets", H5T_NATIVE_INT64, &part, k, 1) < 0 || part < 0 ||
        h5io_ds_read_rows(f, "/VTKHDF/NumberOfPoints", H5T_NATIVE_INT64, &n64, (hsize_t)part, 1) < 0 ||
        h5io_ds_read_rows(f, "/VTKHDF/Steps/PointOffsets", H5T_NATIVE_INT64, &poff, k, 1) < 0 || n64 < 0 || poff < 0) {
        r = output_bad_file(e, path, "cannot read NumberOfPoints / PointOffsets");
        goto done;
    }
    size_t n = (size_t)n64;
    if ((r = particles_alloc(p, n, e)) != SPHSIM_OK) goto done;
    xyz = malloc(3 * (n ? n : 1) * sizeof *xyz);
    if (!xyz) {
        r = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory reading '%s'", path);
        goto done;
    }
    if (h5io_ds_read_rows(f, "/VTKHDF/Points", H5T_NATIVE_FLOAT, xyz, (hsize_t)poff, n) < 0) {
        r = output_bad_file(e, path, "cannot read Points of the last snapshot");
        goto done;
    }
    for (size_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) p->pos[4 * i + c] = xyz[3 * i + c];
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i) {
        const field_desc *fd = &OUTPUT_FIELDS[i];
        char dpath[128], opath[128];
        snprintf(dpath, sizeof dpath, "/VTKHDF/PointData/%s", fd->name);
        snprintf(opath, sizeof opath, "/VTKHDF/Steps/PointDataOffsets/%s", fd->name);
        if (fd->bit & STATIC_FIELDS) continue; /* nothing a restart needs */
        if (!h5io_link_exists(f, dpath)) {
            if (fd->bit & ALWAYS_FIELDS) {
                r = output_bad_file(e, path, "a required field (velocity, id or type) is missing");
                goto done;
            }
            continue;
        }
        int64_t off = poff;
        if (h5io_link_exists(f, opath) && h5io_ds_read_rows(f, opath, H5T_NATIVE_INT64, &off, k, 1) < 0) off = -1;
        void *dst = fd->bit == FIELD_VELOCITY ? (void *)xyz : output_field_array(p, fd->bit);
        if (off < 0 || h5io_ds_read_rows(f, dpath, output_field_mtype(fd->kind), dst, (hsize_t)off, n) < 0) {
            char what[160];
            snprintf(what, sizeof what, "cannot read field '%s' of the last snapshot", fd->name);
            r = output_bad_file(e, path, what);
            goto done;
        }
        if (fd->bit == FIELD_VELOCITY)
            for (size_t j = 0; j < n; ++j)
                for (int c = 0; c < 3; ++c) p->vel[4 * j + c] = xyz[3 * j + c];
    }
    for (size_t i = 0; i < n; ++i) {
        if (p->type[i] == PTYPE_FLUID) p->n_fluid++;
        else if (p->type[i] == PTYPE_BOUNDARY) p->n_boundary++;
        else p->n_spheres++;
    }
    if (h5io_ds_read_rows(f, "/sphsim/steps/time", H5T_NATIVE_DOUBLE, &si->time, k, 1) < 0 ||
        h5io_ds_read_rows(f, "/sphsim/steps/step", H5T_NATIVE_INT64, &i64, k, 1) < 0) {
        r = output_bad_file(e, path, "cannot read the time and step of the last snapshot");
        goto done;
    }
    si->step = (long)i64;
    si->n_contacts =
        h5io_ds_read_rows(f, "/sphsim/steps/n_contacts", H5T_NATIVE_INT64, &i64, k, 1) < 0 ? -1 : (long)i64;
    si->n_outside = h5io_ds_read_rows(f, "/sphsim/steps/n_outside", H5T_NATIVE_INT64, &i64, k, 1) < 0 ? 0 : (long)i64;
    if (n > 0 && h5io_link_exists(f, "/sphsim/restart/device_order")) {
        uint32_t *ord = malloc(n * sizeof *ord);
        hid_t ds = H5Dopen2(f, "/sphsim/restart/device_order", H5P_DEFAULT);
        hid_t fs = ds >= 0 ? H5Dget_space(ds) : -1;
        hsize_t dims[2] = { 0, 0 }, off[2] = { k % 2, 0 }, cnt[2] = { 1, n };
        hid_t ms = H5Screate_simple(2, cnt, NULL);
        int ok = ord && fs >= 0 && H5Sget_simple_extent_ndims(fs) == 2 &&
                 H5Sget_simple_extent_dims(fs, dims, NULL) >= 0 && dims[0] == 2 && dims[1] == n &&
                 H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
                 H5Dread(ds, H5T_NATIVE_UINT32, ms, fs, H5P_DEFAULT, ord) >= 0;
        if (ms >= 0) H5Sclose(ms);
        if (fs >= 0) H5Sclose(fs);
        if (ds >= 0) H5Dclose(ds);
        /* Only a permutation of 0..n-1 is a usable order. */
        if (ok) {
            unsigned char *seen = calloc(n, 1);
            for (size_t i = 0; ok && i < n; ++i) {
                if (!seen || ord[i] >= n || seen[ord[i]]) ok = 0;
                else seen[ord[i]] = 1;
            }
            free(seen);
        }
        if (ok) si->device_order = ord;
        else free(ord);
        h5io_forget();
    }
done:
    free(xyz);
    if (r != SPHSIM_OK) {
        particles_free(p);
        free(si->device_order);
        si->device_order = NULL;
    }
    return r;
}

/* The solver state stored with snapshot k of open file f (malloc'd), or NULL and 0 when it has
 * none; an unreadable state is treated as none: the run resumes correctly, only not
 * bit-identically. */
static void read_state(hid_t f, hsize_t k, void **state, size_t *state_bytes)
{
    *state = NULL;
    *state_bytes = 0;
    const char *name, *name_bytes;
    output_state_names(f, &name, &name_bytes);
    long long w = output_state_width_of(f, name, name_bytes);
    int64_t len = 0;
    hsize_t off1 = k % 2, cnt1 = 1;
    if (w > 0 && h5io_ds_block(f, name_bytes, H5T_NATIVE_INT64, 1, &off1, &cnt1, &len, 0) == 0 && len > 0 && len <= w) {
        void *b = malloc((size_t)w);
        hsize_t off[2] = { k % 2, 0 }, cnt[2] = { 1, (hsize_t)w };
        if (b && h5io_ds_block(f, name, H5T_NATIVE_UINT8, 2, off, cnt, b, 0) == 0) {
            *state = b;
            *state_bytes = (size_t)len;
        } else {
            free(b);
        }
    }
    h5io_forget();
}

#define EXPECTED_FILE "expected an HDF5 file written by sphsim (with /sphsim and /VTKHDF)"

static hid_t open_to_resume(const char *path, sphsim_error *e)
{
    h5io_quiet();
    FILE *fp = fopen(path, "rb");
    if (fp) { /* a file that is there but not HDF5: say what was expected */
        fclose(fp);
        htri_t is = H5Fis_hdf5(path);
        h5io_forget();
        if (is == 0) {
            SPHSIM_FAIL(e, SPHSIM_E_IO, "'%s' is not an sphsim output file: it is not an HDF5 file; " EXPECTED_FILE,
                        path);
            return -1;
        }
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        char why[512];
        h5io_reason(why, sizeof why);
        SPHSIM_FAIL(e, SPHSIM_E_IO, "cannot open '%s' to resume: %s", path, why);
    }
    return f;
}

sphsim_status output_read_scene(const char *path, char **scene_json, char **resolved_json, sphsim_error *e)
{
    *scene_json = NULL;
    if (resolved_json) *resolved_json = NULL;
    hid_t f = open_to_resume(path, e);
    if (f < 0) return SPHSIM_E_IO;
    sphsim_status r = SPHSIM_OK;
    if (!h5io_link_exists(f, "/sphsim") || !h5io_link_exists(f, "/VTKHDF")) {
        h5io_forget();
        H5Fclose(f);
        return SPHSIM_FAIL(e, SPHSIM_E_IO, "'%s' is not an sphsim output file: it has no %s group; " EXPECTED_FILE,
                           path, h5io_link_exists(f, "/sphsim") ? "/VTKHDF" : "/sphsim");
    }
    *scene_json = h5io_attr_read_str(f, "/sphsim", "scene_json");
    if (!*scene_json) r = output_bad_file(e, path, "no /sphsim scene_json attribute");
    else if (resolved_json) *resolved_json = h5io_attr_read_str(f, "/sphsim", "resolved_json");
    h5io_forget();
    H5Fclose(f);
    return r;
}

sphsim_status output_read_resume(const char *path, output_resume *rd, sphsim_error *e)
{
    memset(rd, 0, sizeof *rd);
    hid_t f = open_to_resume(path, e);
    if (f < 0) return SPHSIM_E_IO;
    hsize_t ns = 0;
    sphsim_status r = output_read_nsteps(f, path, &ns, e);
    if (r == SPHSIM_OK && ns == 0)
        r = SPHSIM_FAIL(e, SPHSIM_E_IO, "'%s' has no completed snapshot to resume from", path);
    if (r == SPHSIM_OK) r = read_last(f, path, ns, &rd->p, &rd->si, e);
    if (r == SPHSIM_OK) read_state(f, ns - 1, &rd->state, &rd->state_bytes);
    H5Fclose(f);
    return r;
}

void output_resume_free(output_resume *rd)
{
    if (!rd) return;
    particles_free(&rd->p);
    free(rd->si.device_order);
    free(rd->state);
    memset(rd, 0, sizeof *rd);
}

long long output_state_width_of(hid_t f, const char *name, const char *name_bytes)
{
    int have = h5io_link_exists(f, name), have_len = h5io_link_exists(f, name_bytes);
    if (!have && !have_len) return 0;
    if (!have || !have_len) return -1;
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t fs = H5Dget_space(ds);
    hsize_t dims[2] = { 0, 0 };
    long long w = -1;
    if (fs >= 0 && H5Sget_simple_extent_ndims(fs) == 2 && H5Sget_simple_extent_dims(fs, dims, NULL) >= 0 &&
        dims[0] == 2 && dims[1] > 0)
        w = (long long)dims[1];
    if (fs >= 0) H5Sclose(fs);
    H5Dclose(ds);
    return w;
}

/* The state datasets' names in file f: the older ones when only those exist (a particle-mode
 * file of an older version, read and appended to under them), else solver_state. */
void output_state_names(hid_t f, const char **name, const char **name_bytes)
{
    const int old = !h5io_link_exists(f, RESTART_STATE) && !h5io_link_exists(f, RESTART_STATE_BYTES) &&
                    (h5io_link_exists(f, RESTART_STATE_OLD) || h5io_link_exists(f, RESTART_STATE_BYTES_OLD));
    *name = old ? RESTART_STATE_OLD : RESTART_STATE;
    *name_bytes = old ? RESTART_STATE_BYTES_OLD : RESTART_STATE_BYTES;
}
