/* halo: the refresh of the halo copies between steps (see halo.h). */
#include "halo.h"

#include "comm.h"

#include <stdlib.h>
#include <string.h>

#define HALO_ROW 32 /* bytes a row travels: position and velocity, float4 each */

struct halo {
    ocl_device *d;
    cl_program prog;
    cl_kernel k_pack, k_unpack;
    int ranks;
    size_t *send_bytes, *recv_bytes; /* per rank */
    size_t n_send, n_recv;           /* rows */
    size_t cap_send, cap_recv;       /* rows the device buffers hold */
    cl_mem send_rows, recv_rows;     /* uint */
    cl_mem send_buf, recv_buf;       /* float4 pairs */
    unsigned char *host_send, *host_recv;
};

sphsim_status halo_create(halo **out, ocl_device *d, sphsim_error *e)
{
    *out = NULL;
    halo *h = calloc(1, sizeof *h);
    if (!h) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the halo");
    h->d = d;
    h->ranks = comm_size();
    h->send_bytes = calloc((size_t)h->ranks, sizeof *h->send_bytes);
    h->recv_bytes = calloc((size_t)h->ranks, sizeof *h->recv_bytes);
    sphsim_status st =
        h->send_bytes && h->recv_bytes ? SPHSIM_OK : SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the halo");
    if (st == SPHSIM_OK) st = device_build(d, "halo.cl", "", &h->prog, e);
    if (st == SPHSIM_OK) st = device_kernel(h->prog, "halo_pack", &h->k_pack, e);
    if (st == SPHSIM_OK) st = device_kernel(h->prog, "halo_unpack", &h->k_unpack, e);
    if (st != SPHSIM_OK) {
        halo_destroy(h);
        return st;
    }
    *out = h;
    return SPHSIM_OK;
}

static void release(cl_mem *m)
{
    if (*m) clReleaseMemObject(*m);
    *m = NULL;
}

void halo_destroy(halo *h)
{
    if (!h) return;
    cl_kernel ks[2] = { h->k_pack, h->k_unpack };
    device_release_kernels(ks, 2);
    if (h->prog) clReleaseProgram(h->prog);
    release(&h->send_rows);
    release(&h->recv_rows);
    release(&h->send_buf);
    release(&h->recv_buf);
    free(h->send_bytes);
    free(h->recv_bytes);
    free(h->host_send);
    free(h->host_recv);
    free(h);
}

/* Room for n rows on one side (device rows and buffer, host buffer), grown by half again when
 * short, so that a run whose halo grows slowly reallocates seldom. */
static sphsim_status reserve(halo *h, size_t n, size_t *cap, cl_mem *rows, cl_mem *buf, unsigned char **host,
                             const char *what, sphsim_error *e)
{
    if (n <= *cap && *rows) return SPHSIM_OK;
    const size_t c = n + n / 2 + 64;
    release(rows);
    release(buf);
    free(*host);
    *host = malloc(c * HALO_ROW);
    *cap = 0;
    if (!*host) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu %s rows", c, what);
    SPHSIM_TRY(device_alloc(h->d, c * 4, what, rows, e));
    SPHSIM_TRY(device_alloc(h->d, c * HALO_ROW, what, buf, e));
    *cap = c;
    return SPHSIM_OK;
}

sphsim_status halo_set(halo *h, const uint32_t *send, const size_t *send_count, const uint32_t *recv,
                       const size_t *recv_count, sphsim_error *e)
{
    h->n_send = h->n_recv = 0;
    for (int r = 0; r < h->ranks; ++r) {
        h->n_send += send_count[r];
        h->n_recv += recv_count[r];
        h->send_bytes[r] = send_count[r] * HALO_ROW;
        h->recv_bytes[r] = recv_count[r] * HALO_ROW;
    }
    SPHSIM_TRY(reserve(h, h->n_send, &h->cap_send, &h->send_rows, &h->send_buf, &h->host_send, "halo rows sent", e));
    SPHSIM_TRY(reserve(h, h->n_recv, &h->cap_recv, &h->recv_rows, &h->recv_buf, &h->host_recv, "halo rows", e));
    if (h->n_send) SPHSIM_TRY(device_write(h->d, h->send_rows, 0, h->n_send * 4, send, e));
    if (h->n_recv) SPHSIM_TRY(device_write(h->d, h->recv_rows, 0, h->n_recv * 4, recv, e));
    return SPHSIM_OK;
}

sphsim_status halo_refresh(halo *h, cl_mem pos, cl_mem vel, sphsim_error *e)
{
    if (h->n_send) {
        const cl_uint n = (cl_uint)h->n_send;
        const karg a[] = { KARG("n", n), KARG("rows", h->send_rows), KARG("pos", pos), KARG("vel", vel),
                           KARG("out", h->send_buf) };
        SPHSIM_TRY(device_set_args(h->d, h->k_pack, a, 5, e));
        SPHSIM_TRY(device_run1d(h->d, h->k_pack, h->n_send, 0, e));
        SPHSIM_TRY(device_read(h->d, h->send_buf, 0, h->n_send * HALO_ROW, h->host_send, e));
    }
    SPHSIM_TRY(comm_swap(h->host_send, h->send_bytes, h->host_recv, h->recv_bytes, e));
    if (!h->n_recv) return SPHSIM_OK;
    const cl_uint n = (cl_uint)h->n_recv;
    SPHSIM_TRY(device_write(h->d, h->recv_buf, 0, h->n_recv * HALO_ROW, h->host_recv, e));
    const karg a[] = { KARG("n", n), KARG("rows", h->recv_rows), KARG("in", h->recv_buf), KARG("pos", pos),
                       KARG("vel", vel) };
    SPHSIM_TRY(device_set_args(h->d, h->k_unpack, a, 5, e));
    return device_run1d(h->d, h->k_unpack, h->n_recv, 0, e);
}

size_t halo_sent(const halo *h) { return h ? h->n_send : 0; }
size_t halo_received(const halo *h) { return h ? h->n_recv : 0; }
