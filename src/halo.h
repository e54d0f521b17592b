/* halo: between two exchanges of an MPI run (docs/mpi.md), the halo copies a rank holds of
 * particles that other ranks own stay on its device, at fixed rows, and are refreshed before
 * every step: each rank packs the rows of its owned particles that other ranks hold (a kernel),
 * reads them back, the ranks swap them (MPI_Alltoallv), and each writes what it receives and
 * scatters it over its halo rows (a kernel). Only positions and velocities travel: in SPH they
 * are a particle's whole state between steps (state.h), the rest is fixed or recomputed by
 * every step. */
#ifndef SPHSIM_HALO_H
#define SPHSIM_HALO_H

#include "device.h"

typedef struct halo halo;

sphsim_status halo_create(halo **out, ocl_device *d, sphsim_error *e);
void halo_destroy(halo *h);

/* The rows after an exchange and the grid's sort: send[] the device rows of owned particles
 * that other ranks hold, grouped by destination rank in rank order, send_count[r] of them for
 * rank r; recv[] the device rows of the halo copies, grouped by owner rank, recv_count[r] from
 * rank r. Within a group, rows go in ascending particle id on both sides, so that each copy
 * lands on its own row. */
sphsim_status halo_set(halo *h, const uint32_t *send, const size_t *send_count, const uint32_t *recv,
                       const size_t *recv_count, sphsim_error *e);

/* The halo rows of (pos, vel) refreshed from their owners' (collective; blocks). */
sphsim_status halo_refresh(halo *h, cl_mem pos, cl_mem vel, sphsim_error *e);

/* Rows sent and received per refresh. */
size_t halo_sent(const halo *h);
size_t halo_received(const halo *h);

#endif
