/* comm: the MPI calls sphsim makes, in one place. A build without MPI (the default `make`)
 * gets the same functions for one rank, so the rest of the code has no #ifdef: rank 0 of 1,
 * every reduction the identity, every exchange a copy. `make MPI=1` builds them on MPI
 * (-DSPHSIM_MPI, mpicc). docs/mpi.md describes how a run is split over ranks. */
#ifndef SPHSIM_COMM_H
#define SPHSIM_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* MPI_Init (MPI build); records the rank, the size and the node-local rank. */
void comm_init(int *argc, char ***argv);
/* MPI_Finalize (MPI build). */
void comm_finalize(void);
/* Ends every rank at once (MPI_Abort): for a failure on one rank while the others may wait in
 * a collective call. Without MPI: exit(code). */
void comm_abort(int code);

int comm_rank(void);
int comm_size(void);
/* The rank among the ranks of this node (MPI_COMM_TYPE_SHARED): which GPU of the node a rank
 * takes when --device is not given. 0 without MPI. */
int comm_local_rank(void);
/* 1 in a build with MPI (whatever the number of ranks). */
int comm_built_with_mpi(void);

void comm_barrier(void);
/* Reductions over every rank (collective). */
long comm_sum_long(long v);
long comm_max_long(long v);
uint32_t comm_or_u32(uint32_t v);
/* Element-wise sums of n values, in place. */
void comm_sum_u64(uint64_t *v, int n);
/* Element-wise maxima of n values, in place. */
void comm_max_u32(uint32_t *v, int n);
/* Element-wise sums of n floats over the ranks, into rank 0's v (the others' v unchanged). */
void comm_sum_float_root(float *v, size_t n);
/* Every rank's v, into all[comm_size()]. */
void comm_allgather_long(long v, long *all);
/* Rank root's bytes into every rank's buf. */
void comm_broadcast(void *buf, size_t bytes, int root);

/* Every rank sends send_bytes[r] bytes (from `send`, ranks in order) to rank r and receives
 * into *recv (malloc'd; *recv_bytes in all), the senders in rank order. */
sphsim_status comm_exchange(const void *send, const size_t *send_bytes, void **recv, size_t *recv_bytes,
                            sphsim_error *e);

/* As comm_exchange, with the counts known on both sides: recv_bytes[r] bytes from rank r into
 * `recv` (room for their sum), the senders in rank order. */
sphsim_status comm_swap(const void *send, const size_t *send_bytes, void *recv, const size_t *recv_bytes,
                        sphsim_error *e);

/* The largest message comm_swap sends, in bytes (0: 1 GiB). */
void comm_set_piece(size_t bytes);

#endif
