/* comm: MPI, or one rank without it (see comm.h). */
#include "comm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef SPHSIM_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_size = 1, g_local = 0;

int comm_rank(void) { return g_rank; }
int comm_size(void) { return g_size; }
int comm_local_rank(void) { return g_local; }

#ifdef SPHSIM_MPI

int comm_built_with_mpi(void) { return 1; }

void comm_init(int *argc, char ***argv)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_local);
    MPI_Comm_free(&node);
}

void comm_finalize(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

void comm_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code ? code : 1); }

void comm_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

long comm_sum_long(long v)
{
    long r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return r;
}

long comm_max_long(long v)
{
    long r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return r;
}

uint32_t comm_or_u32(uint32_t v)
{
    uint32_t r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_UINT32_T, MPI_BOR, MPI_COMM_WORLD);
    return r;
}

void comm_sum_u64(uint64_t *v, int n) { MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD); }

void comm_max_u32(uint32_t *v, int n) { MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD); }

void comm_allgather_long(long v, long *all) { MPI_Allgather(&v, 1, MPI_LONG, all, 1, MPI_LONG, MPI_COMM_WORLD); }

void comm_sum_float_root(float *v, size_t n)
{
    for (size_t off = 0; off < n; off += (size_t)1 << 28) { /* int counts */
        const int m = (int)(n - off < ((size_t)1 << 28) ? n - off : ((size_t)1 << 28));
        MPI_Reduce(g_rank == 0 ? MPI_IN_PLACE : v + off, v + off, m, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    }
}

void comm_broadcast(void *buf, size_t bytes, int root)
{
    /* in pieces below INT_MAX bytes (MPI counts are int) */
    for (size_t off = 0; off < bytes; off += (size_t)1 << 30) {
        const size_t m = bytes - off < ((size_t)1 << 30) ? bytes - off : ((size_t)1 << 30);
        MPI_Bcast((char *)buf + off, (int)m, MPI_BYTE, root, MPI_COMM_WORLD);
    }
}

/* The largest message comm_swap sends (tuning.mpi_piece): MPI counts are int. */
#define PIECE_DEFAULT ((size_t)1 << 30)
static size_t g_piece = PIECE_DEFAULT;
void comm_set_piece(size_t bytes) { g_piece = bytes ? bytes : PIECE_DEFAULT; }

/* Post the sends of `bytes` bytes from `out` to rank `peer` (or, with out NULL, the receives
 * into `in` from it) in messages of at most g_piece bytes, tagged by their order, into
 * req[*k ...]. */
static void post_pieces(const char *out, char *in, size_t bytes, int peer, MPI_Request *req, size_t *k)
{
    for (size_t o = 0, t = 0; o < bytes; o += g_piece, ++t) {
        const int m = (int)(bytes - o < g_piece ? bytes - o : g_piece);
        if (out) MPI_Isend(out + o, m, MPI_BYTE, peer, (int)t, MPI_COMM_WORLD, &req[(*k)++]);
        else MPI_Irecv(in + o, m, MPI_BYTE, peer, (int)t, MPI_COMM_WORLD, &req[(*k)++]);
    }
}

/* Point to point, each rank's share in messages of at most g_piece bytes (tagged by their
 * order), so that no count or displacement needs more than an int, whatever the share. */
sphsim_status comm_swap(const void *send, const size_t *send_bytes, void *recv, const size_t *recv_bytes,
                        sphsim_error *e)
{
    const size_t n = (size_t)g_size, me = (size_t)g_rank, piece = g_piece;
    size_t reqs = 0;
    for (size_t r = 0; r < n; ++r)
        if (r != me) reqs += (send_bytes[r] + piece - 1) / piece + (recv_bytes[r] + piece - 1) / piece;
    MPI_Request *req = malloc((reqs ? reqs : 1) * sizeof *req);
    const int bad_self = send_bytes[me] != recv_bytes[me];
    const uint32_t why = comm_or_u32((req == NULL) | (bad_self << 1));
    if (why) {
        free(req);
        if (bad_self)
            return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "MPI exchange: rank %d sends itself %zu bytes but expects %zu",
                               g_rank, send_bytes[me], recv_bytes[me]);
        if (!req) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the MPI exchange's requests");
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "MPI exchange: another rank could not take part");
    }
    size_t k = 0, soff = 0, roff = 0, self = 0; /* self: where this rank's own share goes */
    for (size_t r = 0; r < n; ++r) {
        if (r == me) self = roff;
        else post_pieces(NULL, (char *)recv + roff, recv_bytes[r], (int)r, req, &k);
        roff += recv_bytes[r];
    }
    for (size_t r = 0; r < n; ++r) {
        if (r != me) post_pieces((const char *)send + soff, NULL, send_bytes[r], (int)r, req, &k);
        else if (send_bytes[r]) memcpy((char *)recv + self, (const char *)send + soff, send_bytes[r]);
        soff += send_bytes[r];
    }
    MPI_Waitall((int)k, req, MPI_STATUSES_IGNORE);
    free(req);
    return SPHSIM_OK;
}

sphsim_status comm_exchange(const void *send, const size_t *send_bytes, void **recv, size_t *recv_bytes,
                            sphsim_error *e)
{
    *recv = NULL;
    *recv_bytes = 0;
    const size_t n = (size_t)g_size;
    size_t *rb = calloc(n, sizeof *rb);
    unsigned long long *sb = calloc(n, sizeof *sb), *rbb = calloc(n, sizeof *rbb);
    sphsim_status st = SPHSIM_OK;
    if (comm_or_u32(!rb || !sb || !rbb)) {
        st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for the MPI exchange's counts");
        goto done;
    }
    for (size_t r = 0; r < n; ++r) sb[r] = send_bytes[r];
    MPI_Alltoall(sb, 1, MPI_UNSIGNED_LONG_LONG, rbb, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    size_t total = 0;
    for (size_t r = 0; r < n; ++r) total += rb[r] = (size_t)rbb[r];
    void *buf = malloc(total ? total : 1);
    if (comm_or_u32(buf == NULL)) {
        free(buf);
        st = SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu bytes of exchanged particles", total);
        goto done;
    }
    st = comm_swap(send, send_bytes, buf, rb, e);
    if (st == SPHSIM_OK) {
    *recv = buf;
        *recv_bytes = total;
    } else {
        free(buf);
    }
done:
    free(rb);
    free(sb);
    free(rbb);
    return st;
}

#else /* one rank, no MPI */

int comm_built_with_mpi(void) { return 0; }
void comm_init(int *argc, char ***argv) { (void)argc, (void)argv; }
void comm_finalize(void) {}
void comm_abort(int code) { exit(code ? code : 1); }
void comm_barrier(void) {}
long comm_sum_long(long v) { return v; }
long comm_max_long(long v) { return v; }
uint32_t comm_or_u32(uint32_t v) { return v; }
void comm_sum_u64(uint64_t *v, int n) { (void)v, (void)n; }
void comm_max_u32(uint32_t *v, int n) { (void)v, (void)n; }
void comm_allgather_long(long v, long *all) { all[0] = v; }
void comm_sum_float_root(float *v, size_t n) { (void)v, (void)n; }
void comm_broadcast(void *buf, size_t bytes, int root) { (void)buf, (void)bytes, (void)root; }

void comm_set_piece(size_t bytes) { (void)bytes; }

sphsim_status comm_swap(const void *send, const size_t *send_bytes, void *recv, const size_t *recv_bytes,
                        sphsim_error *e)
{
    if (send_bytes[0] != recv_bytes[0])
        return SPHSIM_FAIL(e, SPHSIM_E_DEVICE, "exchange: %zu bytes sent, %zu expected", send_bytes[0], recv_bytes[0]);
    if (send_bytes[0]) memcpy(recv, send, send_bytes[0]);
    return SPHSIM_OK;
}

sphsim_status comm_exchange(const void *send, const size_t *send_bytes, void **recv, size_t *recv_bytes,
                            sphsim_error *e)
{
    *recv = malloc(send_bytes[0] ? send_bytes[0] : 1);
    if (!*recv) return SPHSIM_FAIL(e, SPHSIM_E_NOMEM, "out of host memory for %zu bytes of particles", send_bytes[0]);
    if (send_bytes[0]) memcpy(*recv, send, send_bytes[0]);
    *recv_bytes = send_bytes[0];
    return SPHSIM_OK;
}

#endif
