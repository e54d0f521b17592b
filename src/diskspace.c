/* diskspace: reserves an output file's disk space before a snapshot is written
 * (posix_fallocate), so that a full disk, a quota or a file size limit is refused before
 * anything of the snapshot reaches the file, and gives back what was reserved past HDF5's end
 * of allocation. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output_internal.h"

/* Give the file real disk blocks from its current end up to HDF5's end of allocated space
 * plus `extra` bytes (posix_fallocate: ENOSPC, EDQUOT or EFBIG show up here, and writes into
 * the reserved range cannot fail for want of space). Returns 0, or an errno value. Reserved
 * space past HDF5's end is given back by the next flush (HDF5 truncates the file there). */
int diskspace_reserve(hid_t file, double extra)
{
    hsize_t size = 0;
    int *fd = NULL;
    struct stat st;
    if (H5Fget_filesize(file, &size) < 0) return EIO;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fd) < 0 || !fd || *fd < 0) return EIO;
    if (fstat(*fd, &st) != 0) return errno;
    double target = (double)(size > (hsize_t)st.st_size ? size : (hsize_t)st.st_size) + extra;
    if (target <= (double)st.st_size) return 0;
    int err = posix_fallocate(*fd, st.st_size, (off_t)(target - (double)st.st_size));
    /* file systems that cannot preallocate: go on without the guarantee */
    if (err == EINVAL || err == EOPNOTSUPP || err == ENODEV || err == ESPIPE) err = 0;
    return err;
}

/* Give back what diskspace_reserve reserved past HDF5's end of allocated space. */
void diskspace_release(hid_t file)
{
    hsize_t size = 0;
    int *fd = NULL;
    struct stat st;
    if (H5Fget_filesize(file, &size) < 0 || size == 0) return;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fd) < 0 || !fd || *fd < 0) return;
    if (fstat(*fd, &st) == 0 && (hsize_t)st.st_size > size && ftruncate(*fd, (off_t)size) != 0) return;
}

/* Bytes snapshot k adds to the file, generously (data, restart order, step entries; the first
 * also the vertex cells and the chunk indexes of every dataset). */
double diskspace_snapshot_bytes(const output *o, size_t n, hsize_t k)
{
    double per = 12 + 4; /* Points, device order */
    for (int i = 0; i < OUTPUT_N_FIELDS; ++i)
        if (o->fields & OUTPUT_FIELDS[i].bit) per += OUTPUT_FIELDS[i].ncomp * (OUTPUT_FIELDS[i].kind == FK_U8 ? 1 : 4);
    if (k == 0 || !o->have_topology) per += 16 + 4; /* vertex offsets, connectivity; 2nd order row */
    return per * (double)n * 1.05 + (k == 0 ? 262144.0 : 65536.0);
}
