/* The NCCL backend: one GPU per rank, as torch's NCCL process group has it.
 * Each communicator (the world and every group) is an NCCL communicator
 * with a CUDA stream of its own; a call queues its NCCL operation on that
 * stream and records a CUDA event after it, and the work is done when the
 * event is. Collectives are NCCL's own algorithms, one opaque step each
 * (schedules = false); tensors must be cuda tensors (caps), and the comm
 * layer passes them as they are (device_memory = true) and stages tensor
 * lists in GPU memory.
 *
 * Set-up. The world needs LOCAL_WORLD_SIZE (default: the world size) GPUs
 * on this host, and rank LOCAL_RANK (default: the rank) takes GPU
 * LOCAL_RANK. Rank 0 of a communicator makes NCCL's unique id and
 * publishes it through the rendezvous store, under a key that names the
 * communicator's context id; every member then joins with
 * ncclCommInitRankConfig. A group is a new communicator made the same way
 * by its members only, because dl_comm_new_group never calls the backend
 * on the ranks outside the group (ncclCommSplit would need all of them).
 *
 * Bounded waits. Communicators are nonblocking (config.blocking = 0): any
 * NCCL call may return ncclInProgress, and the communicator's state is then
 * polled with ncclCommGetAsyncError until it settles, within the
 * communicator's timeout. So neither set-up nor a collective can hang a
 * rank: on a timeout the rank aborts its NCCL communicators
 * (ncclCommAbort), fails its work with a message, and tells the other
 * ranks through the store, whose waits then fail too.
 *
 * What NCCL cannot do:
 *   - receive from any source: recv needs the sender's rank;
 *   - tags: NCCL has none, so they are ignored (as torch's NCCL backend
 *     ignores them): messages between two ranks match in the order they
 *     were posted;
 *   - the bitwise ops band, bor and bxor (torch refuses them too);
 *   - cancel an operation: Ctrl-C, a timeout or dl_comm_abort abort the
 *     NCCL communicators, and the world must be set up again.
 * An isend and an irecv are separate NCCL operations on one stream, run in
 * the order they were posted: two ranks that both isend before they irecv
 * large messages can wait for each other forever (then time out).
 *
 * Streams. Tensors are filled, staged and read back with copies on the
 * device's default stream (distlab/cuda.h). A communicator's stream is a
 * non-blocking one, so that such a copy never waits behind a collective
 * that waits for a peer; instead each operation first makes the stream
 * wait for the default stream's work so far (an event), and a result is
 * read only once the operation's own event has completed. */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "backend/backend.h"
#include "comm/internal.h"
#include "distlab/cuda.h"
#include "distlab/log.h"

#define SPIN_S         50e-6   /* settle() polls in a loop this long ... */
#define SLEEP_MIN_NS   10000   /* ... then sleeps this long, doubling ... */
#define SLEEP_MAX_NS   1000000 /* ... up to 1 ms */
#define WAIT_SPIN_S    0.1     /* an operation's wait polls, yielding, this long (see wait_plan) */
#define ABORT_POLL_S   1.0     /* how often a long wait asks the store whether a peer aborted */
#define FINALIZE_MAX_S 30.0    /* the most a destroy waits for NCCL to finish */

/* ------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------ */

/* Per communicator (the world and each group). */
typedef struct nccl_comm {
    ncclComm_t nccl;     /* NULL once aborted */
    ncclConfig_t config; /* kept: a nonblocking init may read it later */
    cudaStream_t stream;
    cudaEvent_t ready; /* marks the default stream's work, for stream to wait on */
    void *scratch;     /* the barrier's one element, on the GPU */
    int device;
    struct nccl_comm *next; /* the world's list, for aborting them all */
} nccl_comm_t;

/* Per world. */
typedef struct {
    int device;           /* this rank's GPU */
    nccl_comm_t *comms;   /* every live communicator of the world */
    bool broken;          /* aborted: every later call fails at once */
    char broken_why[256]; /* why, for those failures */
    bool store_unusable;  /* polling the store for aborts failed once: stop */
} nccl_world_t;

typedef struct {
    cudaEvent_t done; /* recorded after the operation */
} nccl_work_t;

static nccl_world_t *nworld(const dl_comm_t *comm)
{
    return comm->world->backend;
}

static nccl_comm_t *ncomm(const dl_comm_t *comm)
{
    return comm->backend;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A poll loop that spins briefly, then sleeps longer and longer, so that a
 * long wait does not burn a core. */
typedef struct {
    double spin_until;
    long sleep_ns;
} backoff_t;

static backoff_t backoff_start(void)
{
    return (backoff_t){now_s() + SPIN_S, SLEEP_MIN_NS};
}

static void backoff_pause(backoff_t *b)
{
    if (now_s() < b->spin_until) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, b->sleep_ns};
    nanosleep(&ts, NULL);
    b->sleep_ns = b->sleep_ns * 2 < SLEEP_MAX_NS ? b->sleep_ns * 2 : SLEEP_MAX_NS;
}

/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------ */

static dl_status_t status_of(ncclResult_t res)
{
    switch (res) {
    case ncclSuccess:
        return DL_OK;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
        return DL_ERR_INVALID;
    case ncclRemoteError:
        return DL_ERR_PEER_DEAD;
    default:
        return DL_ERR_SYSTEM;
    }
}

/* Records "<what>: <NCCL's error> (<NCCL's last message>)" on comm. */
static dl_status_t nccl_fail(dl_comm_t *comm, ncclComm_t nccl, ncclResult_t res, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));
static dl_status_t nccl_fail(dl_comm_t *comm, ncclComm_t nccl, ncclResult_t res, const char *fmt,
                             ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    const char *last = ncclGetLastError(nccl);
    dl_status_t st = status_of(res);
    dl__comm_fail(comm, st, "%s: %s%s%s%s", what, ncclGetErrorString(res),
                  last != NULL && last[0] ? " (" : "", last != NULL ? last : "",
                  last != NULL && last[0] ? ")" : "");
    return st;
}

static dl_status_t cuda_fail(dl_comm_t *comm, cudaError_t err, const char *what)
{
    (void)cudaGetLastError(); /* clear a non-sticky error for later calls */
    dl__comm_fail(comm, DL_ERR_SYSTEM, "%s: %s", what, cudaGetErrorString(err));
    return DL_ERR_SYSTEM;
}

/* Makes the communicator's GPU current for this thread. */
static dl_status_t use_device(dl_comm_t *comm, int device)
{
    cudaError_t err = cudaSetDevice(device);
    if (err != cudaSuccess) {
        char what[64];
        snprintf(what, sizeof(what), "nccl: cannot use cuda:%d", device);
        return cuda_fail(comm, err, what);
    }
    return DL_OK;
}

/* A nonblocking communicator's call may return ncclInProgress: the
 * operation is still being set up in the background, and nothing else may
 * be queued on the communicator (nor on its stream) until its state leaves
 * ncclInProgress. Polls until it does or timeout_s passes (then returns
 * ncclInProgress and sets *timed_out). */
static ncclResult_t settle(ncclComm_t nccl, ncclResult_t res, double timeout_s, bool *timed_out)
{
    *timed_out = false;
    if (res != ncclInProgress)
        return res;
    double deadline = now_s() + timeout_s;
    backoff_t b = backoff_start();
    for (;;) {
        ncclResult_t state = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(nccl, &state);
        if (r != ncclSuccess)
            return r;
        if (state != ncclInProgress)
            return state;
        if (now_s() >= deadline) {
            *timed_out = true;
            return ncclInProgress;
        }
        backoff_pause(&b);
    }
}

/* ------------------------------------------------------------------------
 * Aborting
 * ------------------------------------------------------------------------ */

static void store_key(const dl_world_t *world, const char *what, char *key, size_t cap)
{
    snprintf(key, cap, "%s/nccl/%s", world->prefix, what);
}

/* Aborts every NCCL communicator of the world (NCCL cannot cancel one
 * operation), marks the world broken and, when publish, tells the other
 * ranks through the store. Idempotent. */
static void abort_world(dl_world_t *world, const char *why, bool publish)
{
    nccl_world_t *nw = world->backend;
    if (nw->broken)
        return;
    nw->broken = true;
    snprintf(nw->broken_why, sizeof(nw->broken_why), "%s", why);
    for (nccl_comm_t *nc = nw->comms; nc != NULL; nc = nc->next) {
        if (nc->nccl != NULL) {
            (void)cudaSetDevice(nc->device);
            ncclCommAbort(nc->nccl); /* frees it, and stops its kernels */
            nc->nccl = NULL;
        }
    }
    if (publish && !nw->store_unusable) {
        char key[128], why_key[128];
        int64_t n = 0;
        store_key(world, "abort/why", why_key, sizeof(why_key));
        store_key(world, "abort", key, sizeof(key));
        if (dl_store_set_str(world->store, why_key, why) != DL_OK ||
            dl_store_add(world->store, key, 1, &n) != DL_OK)
            nw->store_unusable = true;
    }
}

/* Whether another rank has aborted the world (asked of the store, which
 * costs a round trip: call it seldom). */
static bool peer_aborted(dl_world_t *world, char *why, size_t cap)
{
    nccl_world_t *nw = world->backend;
    if (nw->store_unusable)
        return false;
    char key[128];
    int64_t n = 0;
    store_key(world, "abort", key, sizeof(key));
    if (dl_store_add(world->store, key, 0, &n) != DL_OK) {
        nw->store_unusable = true; /* e.g. the rank serving it is gone */
        return false;
    }
    if (n == 0)
        return false;
    void *val = NULL;
    size_t len = 0;
    store_key(world, "abort/why", key, sizeof(key));
    if (dl_store_get(world->store, key, &val, &len) == DL_OK)
        snprintf(why, cap, "another rank aborted: %s", (const char *)val);
    else
        snprintf(why, cap, "another rank aborted");
    free(val);
    return true;
}

/* Aborts the world because of the error just recorded on comm. */
static void abort_on_error(dl_comm_t *comm)
{
    char why[256];
    snprintf(why, sizeof(why), "rank %d: %.200s", comm->world->rank, comm->last_error);
    abort_world(comm->world, why, true);
}

static dl_status_t check_usable(dl_comm_t *comm, const char *what)
{
    nccl_world_t *nw = nworld(comm);
    if (!nw->broken)
        return DL_OK;
    dl__comm_fail(comm, DL_ERR_ABORTED,
                  "%s: the NCCL communicators were aborted (%s); set the world up again", what,
                  nw->broken_why);
    return DL_ERR_ABORTED;
}

/* ------------------------------------------------------------------------
 * Set-up
 * ------------------------------------------------------------------------ */

/* An environment variable as a non-negative int, or dflt when unset. */
static bool env_int(const char *name, int dflt, int *v_p)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0') {
        *v_p = dflt;
        return true;
    }
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > 1 << 20)
        return false;
    *v_p = (int)v;
    return true;
}

/* Makes comm's NCCL communicator on device: rank 0 of comm publishes the
 * unique id under key, every member joins. Errors are recorded on report
 * (the world itself, or a group's parent: a group that fails is freed). */
static dl_status_t comm_create(dl_comm_t *comm, dl_comm_t *report, int device, const char *key)
{
    dl_world_t *world = comm->world;
    dl_status_t st;
    ncclResult_t res;
    bool timed_out = false;
    nccl_comm_t *nc = calloc(1, sizeof(*nc));
    if (nc == NULL)
        return DL_ERR_NOMEM;
    nc->device = device;
    if ((st = use_device(report, device)) != DL_OK)
        goto err_free;

    ncclUniqueId id;
    if (comm->rank == 0) {
        if ((res = ncclGetUniqueId(&id)) != ncclSuccess) {
            st = nccl_fail(report, NULL, res, "nccl: ncclGetUniqueId failed");
            goto err_free;
        }
        if ((st = dl_store_set(world->store, key, &id, sizeof(id))) != DL_OK) {
            dl__comm_fail(report, st, "nccl: cannot publish the NCCL unique id in the store: %s",
                          dl_strerror(st));
            goto err_free;
        }
    } else {
        void *val = NULL;
        size_t len = 0;
        if ((st = dl_store_get(world->store, key, &val, &len)) != DL_OK) {
            dl__comm_fail(report, st,
                          "nccl: rank %d did not get the NCCL unique id from rank 0 through the "
                          "store: %s",
                          comm->rank, dl_strerror(st));
            goto err_free;
        }
        if (len != sizeof(id)) {
            free(val);
            st = DL_ERR_PROTOCOL;
            dl__comm_fail(report, st,
                          "nccl: the NCCL unique id in the store has %zu bytes, not %zu", len,
                          sizeof(id));
            goto err_free;
        }
        memcpy(&id, val, sizeof(id));
        free(val);
    }

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    nc->config = config;
    nc->config.blocking = 0; /* so that joining can time out (see settle) */
    res = ncclCommInitRankConfig(&nc->nccl, comm->size, id, comm->rank, &nc->config);
    if (res == ncclInProgress)
        res = settle(nc->nccl, res, comm->timeout_s, &timed_out);
    if (res != ncclSuccess) {
        if (timed_out) {
            st = DL_ERR_TIMEOUT;
            dl__comm_fail(report, st,
                          "nccl: rank %d timed out after %g s setting up the NCCL communicator "
                          "(are all %d ranks running, each with its GPU?)",
                          comm->rank, comm->timeout_s, comm->size);
        } else {
            st = nccl_fail(report, nc->nccl, res, "nccl: ncclCommInitRankConfig failed");
        }
        goto err_abort;
    }

    cudaError_t err = cudaStreamCreateWithFlags(&nc->stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) {
        nc->stream = NULL;
        st = cuda_fail(report, err, "nccl: cudaStreamCreate failed");
        goto err_abort;
    }
    if ((err = cudaEventCreateWithFlags(&nc->ready, cudaEventDisableTiming)) != cudaSuccess) {
        nc->ready = NULL;
        st = cuda_fail(report, err, "nccl: cudaEventCreate failed");
        goto err_free_stream;
    }
    /* The memset runs on the default stream, which every operation's
     * stream waits for (see work_begin). */
    if ((err = cudaMalloc(&nc->scratch, sizeof(float))) != cudaSuccess ||
        (err = cudaMemset(nc->scratch, 0, sizeof(float))) != cudaSuccess) {
        st = cuda_fail(report, err, "nccl: cannot allocate the barrier's buffer");
        goto err_free_stream;
    }
    nc->next = nworld(comm)->comms;
    nworld(comm)->comms = nc;
    comm->backend = nc;
    return DL_OK;

err_free_stream:
    if (nc->scratch != NULL)
        cudaFree(nc->scratch);
    if (nc->ready != NULL)
        cudaEventDestroy(nc->ready);
    cudaStreamDestroy(nc->stream);
err_abort:
    if (nc->nccl != NULL)
        ncclCommAbort(nc->nccl);
err_free:
    free(nc);
    return st;
}

static dl_status_t nccl_init(dl_comm_t *world)
{
    dl_world_t *w = world->world;
    char why[200];
    int ndev = dl_cuda_device_count(why, sizeof(why));
    if (ndev == 0) {
        dl__comm_fail(world, DL_ERR_UNSUPPORTED, "no CUDA device: %s", why);
        return DL_ERR_UNSUPPORTED;
    }
    int local_size = 0, local_rank = 0;
    if (!env_int("LOCAL_WORLD_SIZE", w->size, &local_size) || local_size < 1) {
        dl__comm_fail(world, DL_ERR_INVALID, "LOCAL_WORLD_SIZE='%s' is not a number of ranks",
                      getenv("LOCAL_WORLD_SIZE"));
        return DL_ERR_INVALID;
    }
    if (!env_int("LOCAL_RANK", w->rank, &local_rank) || local_rank >= local_size) {
        dl__comm_fail(world, DL_ERR_INVALID,
                      "LOCAL_RANK=%s is not a rank below LOCAL_WORLD_SIZE=%d",
                      getenv("LOCAL_RANK") != NULL ? getenv("LOCAL_RANK") : "(unset)", local_size);
        return DL_ERR_INVALID;
    }
    if (local_size > ndev) {
        dl__comm_fail(world, DL_ERR_UNSUPPORTED, "NCCL needs one GPU per rank: %d ranks, %d GPUs",
                      local_size, ndev);
        return DL_ERR_UNSUPPORTED;
    }
    nccl_world_t *nw = calloc(1, sizeof(*nw));
    if (nw == NULL)
        return DL_ERR_NOMEM;
    nw->device = local_rank;
    w->backend = nw;
    char key[128];
    snprintf(key, sizeof(key), "%s/nccl/%u/id", w->prefix, world->ctx);
    dl_status_t st = comm_create(world, world, nw->device, key);
    if (st != DL_OK) {
        free(nw);
        w->backend = NULL;
    }
    return st;
}

static dl_status_t nccl_new_group(dl_comm_t *parent, dl_comm_t *group)
{
    if (check_usable(parent, "new_group") != DL_OK)
        return DL_ERR_ABORTED;
    char key[128];
    snprintf(key, sizeof(key), "%s/nccl/%u/id", group->world->prefix, group->ctx);
    return comm_create(group, parent, nworld(parent)->device, key);
}

static void nccl_destroy(dl_comm_t *comm)
{
    nccl_comm_t *nc = ncomm(comm);
    nccl_world_t *nw = nworld(comm);
    if (nc != NULL) {
        (void)cudaSetDevice(nc->device);
        if (nc->nccl != NULL) {
            /* Finalize flushes what is still queued; should that fail or
             * hang (a peer gone), abort instead. */
            bool timed_out = false;
            double limit = comm->timeout_s < FINALIZE_MAX_S ? comm->timeout_s : FINALIZE_MAX_S;
            ncclResult_t res = settle(nc->nccl, ncclCommFinalize(nc->nccl), limit, &timed_out);
            if (res == ncclSuccess)
                ncclCommDestroy(nc->nccl);
            else
                ncclCommAbort(nc->nccl);
            nc->nccl = NULL;
        }
        cudaFree(nc->scratch);
        cudaEventDestroy(nc->ready);
        cudaStreamDestroy(nc->stream);
        for (nccl_comm_t **pp = &nw->comms; *pp != NULL; pp = &(*pp)->next)
            if (*pp == nc) {
                *pp = nc->next;
                break;
            }
        free(nc);
        comm->backend = NULL;
    }
    if (comm->is_world && nw != NULL) {
        free(nw);
        comm->world->backend = NULL;
    }
}

static void nccl_abort(dl_comm_t *comm, const char *why)
{
    abort_world(comm->world, why != NULL ? why : "aborted", true);
}

/* ------------------------------------------------------------------------
 * Types and ops
 * ------------------------------------------------------------------------ */

static ncclDataType_t nccl_type(dl_dtype_t dt)
{
    switch (dt) {
    case DL_INT8:
        return ncclInt8;
    case DL_INT32:
        return ncclInt32;
    case DL_INT64:
        return ncclInt64;
    case DL_FLOAT16:
        return ncclFloat16;
    case DL_BFLOAT16:
        return ncclBfloat16;
    case DL_FLOAT32:
        return ncclFloat32;
    case DL_FLOAT64:
        return ncclFloat64;
    case DL_BOOL: /* bytes 0 and 1: see nccl_op */
    case DL_UINT8:
    default:
        return ncclUint8;
    }
}

static ncclRedOp_t nccl_op(dl_op_t op, dl_dtype_t dt)
{
    /* bool as bytes 0/1: or is max, and is min (as torch's NCCL backend). */
    if (dt == DL_BOOL)
        return op == DL_OP_SUM || op == DL_OP_MAX ? ncclMax : ncclMin;
    switch (op) {
    case DL_OP_PROD:
        return ncclProd;
    case DL_OP_MIN:
        return ncclMin;
    case DL_OP_MAX:
        return ncclMax;
    case DL_OP_AVG:
        return ncclAvg;
    case DL_OP_SUM:
    default:
        return ncclSum;
    }
}

static dl_status_t nccl_check_op(dl_op_t op, dl_dtype_t dt, const char **why_p)
{
    (void)dt;
    switch (op) {
    case DL_OP_BAND:
        *why_p = "bitwise ops (band) are not supported by NCCL";
        return DL_ERR_UNSUPPORTED;
    case DL_OP_BOR:
        *why_p = "bitwise ops (bor) are not supported by NCCL";
        return DL_ERR_UNSUPPORTED;
    case DL_OP_BXOR:
        *why_p = "bitwise ops (bxor) are not supported by NCCL";
        return DL_ERR_UNSUPPORTED;
    default:
        return DL_OK;
    }
}

/* ------------------------------------------------------------------------
 * Queuing operations
 * ------------------------------------------------------------------------ */

/* NCCL reads and writes the buffers from this rank's GPU: a tensor on
 * another GPU would be accessed without peer access (an illegal address
 * that ruins the CUDA context), so it is refused, as torch refuses it.
 * NULL (an empty or absent buffer) passes; what CUDA cannot classify is
 * left to NCCL. */
static dl_status_t check_buffers(dl_comm_t *comm, const dl_work_t *w, const void *a, const void *b)
{
    int device = ncomm(comm)->device;
    const void *bufs[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        struct cudaPointerAttributes attr;
        if (bufs[i] == NULL)
            continue;
        if (cudaPointerGetAttributes(&attr, bufs[i]) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        if (attr.type == cudaMemoryTypeDevice && attr.device != device) {
            dl__comm_fail(comm, DL_ERR_INVALID,
                          "%s: the tensor is on cuda:%d, but this rank's NCCL communicator "
                          "uses cuda:%d (see LOCAL_RANK)",
                          w->what, attr.device, device);
            return DL_ERR_INVALID;
        }
    }
    return DL_OK;
}

/* Before an operation is queued: its event, and the communicator's stream
 * made to wait for what the default stream has queued so far (the copies
 * that filled or staged its tensors). */
static dl_status_t work_begin(dl_comm_t *comm, dl_work_t *w)
{
    nccl_comm_t *nc = ncomm(comm);
    dl_status_t st;
    if ((st = check_usable(comm, w->what)) != DL_OK || (st = use_device(comm, nc->device)) != DL_OK)
        return st;
    cudaError_t err;
    if ((err = cudaEventRecord(nc->ready, cudaStreamLegacy)) != cudaSuccess ||
        (err = cudaStreamWaitEvent(nc->stream, nc->ready, 0)) != cudaSuccess)
        return cuda_fail(comm, err, "nccl: ordering after the default stream failed");
    nccl_work_t *nwk = calloc(1, sizeof(*nwk));
    if (nwk == NULL)
        return DL_ERR_NOMEM;
    if ((err = cudaEventCreateWithFlags(&nwk->done, cudaEventDisableTiming)) != cudaSuccess) {
        free(nwk);
        return cuda_fail(comm, err, "nccl: cudaEventCreate failed");
    }
    w->backend = nwk;
    return DL_OK;
}

/* After the NCCL call(s) returned res: lets a nonblocking communicator
 * settle, then records the work's event. A failure here aborts the world:
 * what NCCL has queued cannot be taken back. */
static dl_status_t work_queued(dl_comm_t *comm, dl_work_t *w, ncclResult_t res)
{
    nccl_comm_t *nc = ncomm(comm);
    bool timed_out = false;
    res = settle(nc->nccl, res, comm->timeout_s, &timed_out);
    if (res != ncclSuccess) {
        dl_status_t st;
        if (timed_out) {
            st = DL_ERR_TIMEOUT;
            dl__comm_fail(comm, st, "%s: queuing it on NCCL timed out after %g s", w->what,
                          comm->timeout_s);
        } else {
            st = nccl_fail(comm, nc->nccl, res, "%s", w->what);
        }
        abort_on_error(comm);
        return st;
    }
    cudaError_t err = cudaEventRecord(((nccl_work_t *)w->backend)->done, nc->stream);
    if (err != cudaSuccess) {
        dl_status_t st = cuda_fail(comm, err, "nccl: cudaEventRecord failed");
        abort_on_error(comm);
        return st;
    }
    return DL_OK;
}

static dl_status_t nccl_isend(dl_comm_t *comm, const void *data, size_t nbytes, int dst, int tag,
                              dl_work_t *w)
{
    (void)tag; /* NCCL has no tags (see the top of this file) */
    dl_status_t st = check_buffers(comm, w, data, NULL);
    if (st == DL_OK)
        st = work_begin(comm, w);
    if (st != DL_OK)
        return st;
    nccl_comm_t *nc = ncomm(comm);
    ncclResult_t res = ncclSuccess;
    if (nbytes > 0) /* both sides know the size: both skip an empty message */
        res = ncclSend(data, nbytes, ncclInt8, dst, nc->nccl, nc->stream);
    return work_queued(comm, w, res);
}

static dl_status_t nccl_irecv(dl_comm_t *comm, void *data, size_t nbytes, int src, int tag,
                              dl_work_t *w)
{
    (void)tag;
    if (src == DL_ANY_SOURCE) {
        dl__comm_fail(comm, DL_ERR_UNSUPPORTED,
                      "recv from any source: NCCL has no wildcard receive; name the sender "
                      "(src=RANK)");
        return DL_ERR_UNSUPPORTED;
    }
    dl_status_t st = check_buffers(comm, w, data, NULL);
    if (st == DL_OK)
        st = work_begin(comm, w);
    if (st != DL_OK)
        return st;
    nccl_comm_t *nc = ncomm(comm);
    ncclResult_t res = ncclSuccess;
    if (nbytes > 0)
        res = ncclRecv(data, nbytes, ncclInt8, src, nc->nccl, nc->stream);
    w->source = src;
    return work_queued(comm, w, res);
}

/* Scatter, gather and all_to_all are done as torch does them on NCCL:
 * grouped point-to-point messages, plus a copy for the chunk that stays on
 * this rank. The copy is queued on the stream before the group, because
 * nothing may be queued there while a nonblocking group is being set up. */

static ncclResult_t group_add(ncclResult_t acc, ncclResult_t res)
{
    /* Inside a group, calls only queue: keep the first real error. */
    return acc == ncclSuccess && res != ncclSuccess && res != ncclInProgress ? res : acc;
}

/* Closes the group (always) and returns what to settle: the first error
 * inside it, else what ncclGroupEnd says (ncclInProgress on a nonblocking
 * communicator while NCCL is still queuing the group in the background). */
static ncclResult_t group_end(ncclResult_t acc)
{
    ncclResult_t res = ncclGroupEnd();
    return acc != ncclSuccess ? acc : res;
}

static dl_status_t copy_self(dl_comm_t *comm, void *dst, const void *src, size_t n)
{
    if (n == 0 || dst == src)
        return DL_OK;
    cudaError_t err = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, ncomm(comm)->stream);
    return err == cudaSuccess ? DL_OK : cuda_fail(comm, err, "nccl: cudaMemcpyAsync failed");
}

static dl_status_t rooted_p2p(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    nccl_comm_t *nc = ncomm(comm);
    int me = comm->rank, n = comm->size, root = call->args.root;
    size_t nb = call->args.count * dl_dtype_size(call->dtype);
    bool scatter = call->args.coll == DL_COLL_SCATTER;
    const uint8_t *in = call->in;
    uint8_t *out = call->out;
    dl_status_t st;
    /* The root's own chunk. */
    if (me == root && (st = scatter ? copy_self(comm, out, in + nb * (size_t)root, nb)
                                    : copy_self(comm, out + nb * (size_t)root, in, nb)) != DL_OK)
        return st;
    ncclResult_t res = ncclSuccess;
    if (nb > 0) {
        res = ncclGroupStart();
        if (res != ncclSuccess)
            return work_queued(comm, w, res);
        ncclResult_t acc = ncclSuccess;
        for (int r = 0; r < n; r++) {
            if (r == root || (me != root && r != me))
                continue;
            if (scatter)
                acc = group_add(
                    acc, me == root
                             ? ncclSend(in + nb * (size_t)r, nb, ncclInt8, r, nc->nccl, nc->stream)
                             : ncclRecv(out, nb, ncclInt8, root, nc->nccl, nc->stream));
            else
                acc = group_add(
                    acc, me == root
                             ? ncclRecv(out + nb * (size_t)r, nb, ncclInt8, r, nc->nccl, nc->stream)
                             : ncclSend(in, nb, ncclInt8, root, nc->nccl, nc->stream));
        }
        res = group_end(acc);
    }
    return work_queued(comm, w, res);
}

/* all_to_all: chunk j of in to rank j, chunk i of out from rank i; with
 * splits, chunk sizes from this rank's row and column of the matrix. */
static dl_status_t all_to_all(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    nccl_comm_t *nc = ncomm(comm);
    size_t me = (size_t)comm->rank, n = (size_t)comm->size;
    size_t esz = dl_dtype_size(call->dtype);
    const size_t *splits = call->args.splits;
    const uint8_t *in = call->in;
    uint8_t *out = call->out;
    /* Bytes to and from rank j, and where they are in in and out. */
#define SEND_N(j) ((splits != NULL ? splits[me * n + (j)] : call->args.count) * esz)
#define RECV_N(j) ((splits != NULL ? splits[(j)*n + me] : call->args.count) * esz)
    size_t soff = 0, roff = 0;
    for (size_t j = 0; j < me; j++) {
        soff += SEND_N(j);
        roff += RECV_N(j);
    }
    dl_status_t st = copy_self(comm, out + roff, in + soff, SEND_N(me));
    if (st != DL_OK)
        return st;
    ncclResult_t res = ncclGroupStart();
    if (res != ncclSuccess)
        return work_queued(comm, w, res);
    ncclResult_t acc = ncclSuccess;
    soff = roff = 0;
    for (size_t j = 0; j < n; j++) {
        size_t sn = SEND_N(j), rn = RECV_N(j);
        /* Each side knows both sizes: empty messages are skipped on both. */
        if (j != me && sn > 0)
            acc = group_add(acc, ncclSend(in + soff, sn, ncclInt8, (int)j, nc->nccl, nc->stream));
        if (j != me && rn > 0)
            acc = group_add(acc, ncclRecv(out + roff, rn, ncclInt8, (int)j, nc->nccl, nc->stream));
        soff += sn;
        roff += rn;
    }
#undef SEND_N
#undef RECV_N
    return work_queued(comm, w, group_end(acc));
}

static dl_status_t nccl_coll(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    dl_status_t st = check_buffers(comm, w, call->in, call->out);
    if (st == DL_OK)
        st = work_begin(comm, w);
    if (st != DL_OK)
        return st;
    nccl_comm_t *nc = ncomm(comm);
    const dl_coll_args_t *a = &call->args;
    ncclDataType_t dt = nccl_type(call->dtype);
    ncclRedOp_t op = nccl_op(a->op, call->dtype);
    ncclResult_t res = ncclSuccess;
    /* An empty collective moves nothing: every rank skips it alike. */
    bool empty = a->count == 0 && a->splits == NULL;
    switch (a->coll) {
    case DL_COLL_BROADCAST:
        if (!empty)
            res = ncclBroadcast(call->in, call->out, a->count, dt, a->root, nc->nccl, nc->stream);
        break;
    case DL_COLL_REDUCE:
        if (!empty)
            res = ncclReduce(call->in, call->out, a->count, dt, op, a->root, nc->nccl, nc->stream);
        break;
    case DL_COLL_ALL_REDUCE:
        if (!empty)
            res = ncclAllReduce(call->in, call->out, a->count, dt, op, nc->nccl, nc->stream);
        break;
    case DL_COLL_ALL_GATHER:
        if (!empty)
            res = ncclAllGather(call->in, call->out, a->count, dt, nc->nccl, nc->stream);
        break;
    case DL_COLL_REDUCE_SCATTER:
        if (!empty)
            res = ncclReduceScatter(call->in, call->out, a->count, dt, op, nc->nccl, nc->stream);
        break;
    case DL_COLL_SCATTER:
    case DL_COLL_GATHER:
        return rooted_p2p(comm, call, w);
    case DL_COLL_ALL_TO_ALL:
        return all_to_all(comm, call, w);
    case DL_COLL_BARRIER:
        /* As torch does: a one-element all_reduce that every rank must join. */
        res =
            ncclAllReduce(nc->scratch, nc->scratch, 1, ncclFloat32, ncclSum, nc->nccl, nc->stream);
        break;
    default:
        dl__comm_fail(comm, DL_ERR_UNSUPPORTED, "%s is not supported by the nccl backend", w->what);
        return DL_ERR_UNSUPPORTED;
    }
    return work_queued(comm, w, res);
}

/* ------------------------------------------------------------------------
 * Progress and waiting
 * ------------------------------------------------------------------------ */

/* Fails w with why (after an abort). */
static void fail_message(dl_work_t *w, dl_status_t st, const char *why)
{
    dl__comm_fail(w->comm, st, "%s aborted: %s", w->what, why);
}

static dl_status_t nccl_progress(dl_work_t *w)
{
    dl_comm_t *comm = w->comm;
    nccl_world_t *nw = nworld(comm);
    nccl_comm_t *nc = ncomm(comm);
    nccl_work_t *nwk = w->backend;
    if (nw->broken) {
        fail_message(w, DL_ERR_ABORTED, nw->broken_why);
        return DL_ERR_ABORTED;
    }
    (void)cudaSetDevice(nc->device);
    cudaError_t err = cudaEventQuery(nwk->done);
    if (err != cudaSuccess && err != cudaErrorNotReady) {
        dl_status_t st = cuda_fail(comm, err, w->what);
        abort_on_error(comm);
        return st;
    }
    /* An asynchronous NCCL error (a peer gone, a network error) means the
     * operation will never finish: fail now rather than at the timeout. */
    ncclResult_t state = ncclSuccess;
    ncclResult_t res = ncclCommGetAsyncError(nc->nccl, &state);
    if (res == ncclSuccess)
        res = state;
    if (res != ncclSuccess && res != ncclInProgress) {
        dl_status_t st = nccl_fail(comm, nc->nccl, res, "%s", w->what);
        abort_on_error(comm);
        return st;
    }
    return err == cudaSuccess ? DL_OK : DL_ERR_AGAIN;
}

/* Aborts the world (telling the other ranks when publish) and fails all
 * its pending work with st. */
static void fail_all(dl_world_t *world, dl_status_t st, const char *why, bool publish)
{
    abort_world(world, why, publish);
    dl_work_t *next;
    for (dl_work_t *w = world->active; w != NULL; w = next) {
        next = w->next_active;
        fail_message(w, st, why);
        dl__work_finish(w, st);
    }
}

/* A wait polls the operation's event in a loop, yielding the core, for as
 * long as a large collective takes (WAIT_SPIN_S), and only then naps. The
 * loop's naps (10 us doubling to 1 ms) would see a GPU operation end up to
 * its own length late: on one H100, an avg all_reduce of 1 GiB (one kernel
 * of 0.86 ms) took 1.07 ms per call when the naps began after 50 us. */
static void nccl_wait_plan(dl_comm_t *comm, dl_wait_plan_t *plan)
{
    (void)comm;
    plan->spin_s = WAIT_SPIN_S;
    plan->spin_yield = true;
    plan->check_s = ABORT_POLL_S;
}

/* Periodically: whether another rank aborted (it says so in the store). */
static dl_status_t nccl_wait_check(dl_comm_t *comm, bool periodic, char *why, size_t cap)
{
    if (periodic && peer_aborted(comm->world, why, cap))
        return DL_ERR_ABORTED;
    return DL_OK;
}

static void nccl_wait_give_up(dl_comm_t *comm, dl_work_t *waited, dl_status_t st, const char *why,
                              double timeout_s)
{
    (void)waited;
    dl_world_t *world = comm->world;
    char msg[320];
    if (why != NULL) {
        /* A peer aborted: it has told the others already. */
        fail_all(world, st, why, false);
        return;
    }
    if (st == DL_ERR_TIMEOUT)
        snprintf(msg, sizeof(msg),
                 "rank %d timed out after %g s (a peer may be stuck, dead or in another "
                 "collective); its NCCL communicators were aborted",
                 world->rank, timeout_s);
    else /* Ctrl-C: NCCL cannot cancel what it has queued. */
        snprintf(msg, sizeof(msg),
                 "%s on rank %d; NCCL cannot cancel an operation, so its communicators "
                 "were aborted",
                 DL__INTERRUPTED_WHY, world->rank);
    fail_all(world, st, msg, true);
}

static void nccl_work_fini(dl_work_t *w)
{
    nccl_work_t *nwk = w->backend;
    if (nwk == NULL)
        return;
    /* Destroying an event still pending is allowed: CUDA frees it later. */
    cudaEventDestroy(nwk->done);
    free(nwk);
    w->backend = NULL;
}

const dl_backend_ops_t dl__nccl_ops = {
    .name = "nccl",
    .caps = {0, DL_CAP_ALL}, /* cuda tensors only, like torch's NCCL backend */
    .schedules = false,
    .device_memory = true,
    .check_op = nccl_check_op,
    .init = nccl_init,
    .new_group = nccl_new_group,
    .destroy = nccl_destroy,
    .abort = nccl_abort,
    .isend = nccl_isend,
    .irecv = nccl_irecv,
    .coll = nccl_coll,
    .progress = nccl_progress,
    .wait_plan = nccl_wait_plan,
    .wait_check = nccl_wait_check,
    .wait_give_up = nccl_wait_give_up,
    .work_fini = nccl_work_fini,
    .allocator = NULL,
};
