/* h5io: HDF5 helpers shared by the output modules (output.c, output_read.c, xdmf.c,
 * diskspace.c): error capture, datasets by rows, attributes, flush with fsync. Internal to
 * the output modules; not part of the public output API (output.h). */
#ifndef SPHSIM_H5IO_H
#define SPHSIM_H5IO_H

#include <hdf5.h>
#include <stddef.h>

/* A write of at least this many rows bypasses HDF5's chunk cache (h5io_ds_write_rows). */
#define H5IO_DIRECT_ROWS 1024

/* Record HDF5 errors instead of printing them, and forget any recorded one. */
void h5io_quiet(void);
/* The innermost message of the first HDF5 failure recorded since the last h5io_reason or
 * h5io_forget, shortened to the system's reason when it carries one; then forgets it. */
const char *h5io_reason(char *out, size_t n);
/* Forget the recorded failure; whether one is recorded; record `why` as one. */
void h5io_forget(void);
int h5io_failed(void);
void h5io_set_reason(const char *why);

/* Datasets. Return 0, or -1 on an HDF5 failure. */
int h5io_ds_create(hid_t loc, const char *name, hid_t ftype, int rank, hsize_t cols, hsize_t chunk_rows);
int h5io_ds_create_fixed(hid_t loc, const char *name, hid_t ftype, int rank, hsize_t rows, hsize_t cols,
                         hsize_t max_rows);
/* Write rows within the extent; h5io_ds_extend_rows sets the extent to start + rows first. */
int h5io_ds_write_rows(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t start, hsize_t rows);
int h5io_ds_extend_rows(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t start, hsize_t rows);
int h5io_ds_io_rows(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t start, hsize_t rows,
                    int extend);
long long h5io_ds_rows(hid_t file, const char *path);
int h5io_ds_read_rows(hid_t file, const char *path, hid_t mtype, void *buf, hsize_t start, hsize_t rows);
int h5io_ds_block(hid_t f, const char *path, hid_t mtype, int rank, const hsize_t *off, const hsize_t *cnt, void *buf,
                  int do_write);
int h5io_link_exists(hid_t loc, const char *path);

/* Attributes. */
int h5io_attr_write(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int rank, hsize_t len, const void *v);
int h5io_attr_f64(hid_t loc, const char *name, double v);
int h5io_attr_f64v(hid_t loc, const char *name, const double *v, hsize_t n);
int h5io_attr_i64(hid_t loc, const char *name, long long v);
int h5io_attr_str(hid_t loc, const char *name, const char *s);
int h5io_attr_fixed_str(hid_t loc, const char *name, const char *s);
int h5io_attr_fixed_str_len(hid_t loc, const char *name, const char *s, size_t size);
int h5io_attr_overwrite(hid_t loc, const char *name, hid_t mtype, const void *v);
char *h5io_attr_read_str(hid_t loc, const char *obj, const char *name);
int h5io_attr_read_i64(hid_t loc, const char *obj, const char *name, long long *v);

/* Parallel HDF5 (an MPI build on several ranks, the file opened with H5FD_MPIO on
 * MPI_COMM_WORLD): after h5io_parallel(file, is_root), every write h5io makes to `file` is a
 * collective transfer which every rank makes with the same arguments, and only the root's data
 * reaches the file (the other ranks select nothing), except h5io_ds_write_runs, where each rank
 * writes its own rows; h5io_sync then flushes and syncs collectively. h5io_parallel(-1, 0) ends
 * it (one parallel file at a time). Without parallel HDF5, h5io_parallel_supported() is 0. */
int h5io_parallel_supported(void);
void h5io_parallel(hid_t file, int is_root);
int h5io_is_parallel(hid_t file);
/* A collective write of each rank's own rows: run[2 j] .. run[2 j] + run[2 j + 1] - 1 (ascending,
 * disjoint) of n_runs runs, from buf in that order. axis 0: rows base + run of dataset `path`
 * (rank 1 or 2, every column); axis 1: of a rank-2 dataset, row `base`, the columns of the runs. */
int h5io_ds_write_runs(hid_t file, const char *path, hid_t mtype, const void *buf, hsize_t base, const hsize_t *run,
                       size_t n_runs, int axis);
/* Whether the last h5io_ds_write_runs was carried out as collective MPI-IO (1), fell back to
 * independent I/O (0; *why says HDF5's reason), or could not tell (-1). */
int h5io_runs_collective(char *why, size_t n);

/* Flush to the file and the file to the disk; fsync the directory holding `path`. */
int h5io_sync(hid_t file);
void h5io_fsync_dir(const char *path);

#endif
