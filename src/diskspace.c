/* diskspace: reserves an output file's disk space (posix_fallocate) when it is created: the
 * layout allocates the whole run's space, so a full disk, a quota or a file size limit is
 * refused then, before the first step; and gives back what was reserved past HDF5's end of
 * allocation. */
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
    if (h5io_is_parallel(file)) return 0; /* reserved when the file was laid out (docs/mpi.md) */
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
    if (h5io_is_parallel(file)) return;
    if (H5Fget_filesize(file, &size) < 0 || size == 0) return;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, (void **)&fd) < 0 || !fd || *fd < 0) return;
    if (fstat(*fd, &st) == 0 && (hsize_t)st.st_size > size && ftruncate(*fd, (off_t)size) != 0) return;
}
