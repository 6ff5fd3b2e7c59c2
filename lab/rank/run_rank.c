/* The rank's part of `distlab run`: fill tensors as the classic torch
 * examples do (arange(C) + 1 + C * rank), report them, run the primitive,
 * report them again. The controller prints everything in rank order. With
 * --device cuda the tensors live on this rank's GPU (filled on the host and
 * copied over; reported through host copies). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "lab/rank/rank.h"

dl_status_t lab_rank_device(int rank, dl_device_type_t type, dl_device_t *dev_p, char *why,
                            size_t cap)
{
    if (type != DL_DEVICE_CUDA) {
        *dev_p = (dl_device_t){DL_DEVICE_CPU, 0};
        return DL_OK;
    }
    char reason[200];
    int n = dl_cuda_device_count(reason, sizeof(reason));
    if (n == 0) {
        snprintf(why, cap, "no CUDA device (%s)", reason);
        return DL_ERR_UNSUPPORTED;
    }
    /* As the NCCL backend picks its GPU: LOCAL_RANK, or the rank. */
    const char *local = getenv("LOCAL_RANK");
    int k = local != NULL && *local != '\0' ? atoi(local) : rank;
    *dev_p = (dl_device_t){DL_DEVICE_CUDA, (k < 0 ? 0 : k) % n};
    return DL_OK;
}

dl_status_t lab_job_device(const lab_rank_t *r, dl_device_t *dev_p, char *why, size_t cap)
{
    char reason[240];
    dl_status_t st = lab_rank_device(r->rank, r->job.device, dev_p, reason, sizeof(reason));
    if (st != DL_OK)
        snprintf(why, cap, "--device cuda: %s", reason);
    return st;
}

typedef struct {
    lab_rank_t *r;
    dl_device_t dev; /* where the job's tensors live */
    dl_tensor_t **owned;
    int n_owned;
} run_t;

/* A zero-filled tensor of n elements of dt on the job's device, freed at
 * the end of the job. */
static dl_tensor_t *make_as(run_t *run, dl_dtype_t dt, size_t n)
{
    dl_tensor_t *t = NULL;
    int64_t shape[1] = {(int64_t)n};
    dl_status_t st = run->dev.type == DL_DEVICE_CUDA
                         ? dl_tensor_new_on(dt, 1, shape, run->dev, &t)
                         : dl_tensor_new_1d(dt, n, dl_comm_allocator(run->r->comm), &t);
    if (st != DL_OK)
        return NULL;
    dl_tensor_t **o = realloc(run->owned, sizeof(*o) * (size_t)(run->n_owned + 1));
    if (o == NULL) {
        dl_tensor_free(t);
        return NULL;
    }
    run->owned = o;
    run->owned[run->n_owned++] = t;
    return t;
}

static dl_tensor_t *make(run_t *run, size_t n)
{
    return make_as(run, run->r->job.dtype, n);
}

/* arange(n) + 1 + n * i: rank i's tensor in torch's examples. */
static dl_tensor_t *data_of(run_t *run, size_t n, int i)
{
    dl_tensor_t *t = make(run, n);
    if (t != NULL)
        dl_tensor_arange(t, 1.0 + (double)n * i, 1.0);
    return t;
}

static dl_tensor_t *rank_data(run_t *run, size_t n)
{
    return data_of(run, n, run->r->rank);
}

static dl_tensor_t **make_list(run_t *run, int n, size_t count)
{
    dl_tensor_t **list = calloc((size_t)n, sizeof(*list));
    if (list == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        if ((list[i] = make(run, count)) == NULL) {
            free(list);
            return NULL;
        }
    return list;
}

/* On the host or a GPU; empty tensors have no storage to copy. */
static dl_status_t copy_tensor(dl_tensor_t *dst, const dl_tensor_t *src)
{
    return dl_cuda_copy(dst->data, dst->device, src->data, src->device, dl_tensor_nbytes(src));
}

static dl_status_t snap_list(lab_rank_t *r, const char *label, const char *name,
                             dl_tensor_t *const *list, int n)
{
    dl_status_t st = DL_OK;
    for (int i = 0; i < n && st == DL_OK; i++)
        st = lab_rank_emit_snap(r, label, name, i, n, list[i]);
    return st;
}

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if ((st = (expr)) != DL_OK)                                                                \
            goto out;                                                                              \
    } while (0)

static dl_status_t run_p2p(run_t *run)
{
    lab_rank_t *r = run->r;
    const lab_job_t *job = &r->job;
    dl_comm_t *comm = r->comm;
    int me = r->rank, n = r->size, root = job->root;
    bool async = job->prim.kind == LAB_PRIM_ISEND || job->prim.kind == LAB_PRIM_IRECV;
    dl_status_t st = DL_OK;
    dl_tensor_t *t = rank_data(run, job->count);
    dl_work_t **works = calloc((size_t)n, sizeof(*works));
    dl_tensor_t **list = NULL, **bufs = NULL;
    if (t == NULL || works == NULL) {
        free(works);
        return DL_ERR_NOMEM;
    }
    TRY(lab_rank_emit_snap(r, "before", "tensor", 0, 0, t));
    if (job->prim.kind == LAB_PRIM_SEND || job->prim.kind == LAB_PRIM_ISEND) {
        /* The root sends its tensor to every other rank, which receives it
         * from the root by name. */
        if (me == root) {
            for (int d = 0; d < n; d++) {
                if (d == me)
                    continue;
                if (async)
                    TRY(dl_comm_isend(comm, t, d, 0, &works[d]));
                else
                    TRY(dl_comm_send(comm, t, d, 0));
            }
        } else if (async) {
            TRY(dl_comm_irecv(comm, t, root, 0, &works[me]));
        } else {
            TRY(dl_comm_recv(comm, t, root, 0, NULL));
        }
        for (int i = 0; i < n; i++)
            if (works[i] != NULL)
                TRY(dl_work_wait(works[i], -1));
        TRY(lab_rank_emit_snap(r, "after", "tensor", 0, 0, t));
        goto out;
    }
    /* recv / irecv: every other rank sends to the root, which receives from
     * any source and files each tensor under the rank recv reports. */
    if (me != root) {
        if (async) {
            TRY(dl_comm_isend(comm, t, root, 0, &works[me]));
            TRY(dl_work_wait(works[me], -1));
        } else {
            TRY(dl_comm_send(comm, t, root, 0));
        }
        goto out;
    }
    if ((list = make_list(run, n, job->count)) == NULL ||
        (bufs = make_list(run, n, job->count)) == NULL) {
        st = DL_ERR_NOMEM;
        goto out;
    }
    /* NCCL has no wildcard receive (torch's recv needs src there too): on
     * it the root receives from each rank in turn. */
    bool wildcard = strcmp(job->backend, "nccl") != 0;
    for (int i = 0; i < n - 1; i++) {
        int src = -1;
        int from = wildcard ? DL_ANY_SOURCE : i < root ? i : i + 1;
        if (async) {
            TRY(dl_comm_irecv(comm, bufs[i], from, 0, &works[i]));
        } else {
            TRY(dl_comm_recv(comm, bufs[i], from, 0, &src));
            TRY(copy_tensor(list[src], bufs[i]));
        }
    }
    for (int i = 0; async && i < n - 1; i++) {
        TRY(dl_work_wait(works[i], -1));
        int src = dl_work_source(works[i]);
        TRY(copy_tensor(list[src], bufs[i]));
    }
    /* The root's own slot keeps its own tensor, so the list reads by rank. */
    TRY(copy_tensor(list[root], t));
    TRY(snap_list(r, "after", "recv_list", list, n));
out:
    for (int i = 0; i < n; i++)
        dl_work_free(works[i]);
    free(works);
    free(list);
    free(bufs);
    return st;
}

/* t[0] += 1 for a float32 tensor on the host or a GPU. */
static dl_status_t add_one(dl_tensor_t *t)
{
    float v = 0;
    dl_device_t cpu = {DL_DEVICE_CPU, 0};
    dl_status_t st = dl_cuda_copy(&v, cpu, t->data, t->device, sizeof(v));
    v += 1;
    return st == DL_OK ? dl_cuda_copy(t->data, t->device, &v, cpu, sizeof(v)) : st;
}

/* torch's ping-pong, leg by leg: zeros(1) as float; rank 0 adds one and
 * sends, rank 1 adds one and sends it back. After every leg each rank
 * reports its tensor under the leg's label, so the run prints every rank's
 * tensor after each leg; the last leg's state is the run's "after". Ranks
 * past 1 watch. */
static const struct {
    const char *label;
    int rank;  /* who adds, or who sends (to the other) */
    bool pass; /* a send and its recv; else an add */
} pingpong_legs[] = {
    {"after r0 += 1", 0, false},
    {"after r0 -> r1", 0, true},
    {"after r1 += 1", 1, false},
    {"after", 1, true}, /* r1 -> r0 */
};

static dl_status_t run_pingpong(run_t *run)
{
    lab_rank_t *r = run->r;
    dl_status_t st = DL_OK;
    dl_tensor_t *t = make_as(run, DL_FLOAT32, 1);
    if (t == NULL)
        return DL_ERR_NOMEM;
    TRY(lab_rank_emit_snap(r, "before", "tensor", 0, 0, t));
    for (size_t i = 0; i < sizeof(pingpong_legs) / sizeof(pingpong_legs[0]); i++) {
        int actor = pingpong_legs[i].rank, other = 1 - actor;
        if (!pingpong_legs[i].pass && r->rank == actor)
            TRY(add_one(t));
        else if (pingpong_legs[i].pass && r->rank == actor)
            TRY(dl_comm_send(r->comm, t, other, 0));
        else if (pingpong_legs[i].pass && r->rank == other)
            TRY(dl_comm_recv(r->comm, t, actor, 0, NULL));
        TRY(lab_rank_emit_snap(r, pingpong_legs[i].label, "tensor", 0, 0, t));
    }
out:
    return st;
}

static dl_status_t run_coll(run_t *run)
{
    lab_rank_t *r = run->r;
    const lab_job_t *job = &r->job;
    dl_comm_t *comm = r->comm;
    int me = r->rank, n = r->size, root = job->root;
    size_t c = job->count;
    dl_status_t st = DL_OK;
    dl_tensor_t *t = NULL, *out = NULL, **list = NULL;
    switch (job->prim.coll) {
    case DL_COLL_ALL_REDUCE:
    case DL_COLL_BROADCAST:
    case DL_COLL_REDUCE:
        if ((t = rank_data(run, c)) == NULL)
            return DL_ERR_NOMEM;
        TRY(lab_rank_emit_snap(r, "before", "tensor", 0, 0, t));
        if (job->prim.coll == DL_COLL_ALL_REDUCE)
            TRY(dl_comm_all_reduce(comm, t, job->op, NULL, NULL));
        else if (job->prim.coll == DL_COLL_BROADCAST)
            TRY(dl_comm_broadcast(comm, t, root, NULL, NULL));
        else
            TRY(dl_comm_reduce(comm, t, root, job->op, NULL, NULL));
        TRY(lab_rank_emit_snap(r, "after", "tensor", 0, 0, t));
        break;
    case DL_COLL_SCATTER:
        /* The output starts as zeros, as torch's example has it; the root's
         * scatter_list holds rank i's tensor of the other examples for i. */
        if ((out = make(run, c)) == NULL || (list = calloc((size_t)n, sizeof(*list))) == NULL)
            return DL_ERR_NOMEM;
        for (int i = 0; i < n; i++)
            if ((list[i] = data_of(run, c, i)) == NULL) {
                st = DL_ERR_NOMEM;
                goto out;
            }
        TRY(lab_rank_emit_snap(r, "before", "tensor", 0, 0, out));
        if (me == root)
            TRY(snap_list(r, "before", "scatter_list", list, n));
        TRY(dl_comm_scatter(comm, out, list, root, NULL, NULL));
        TRY(lab_rank_emit_snap(r, "after", "tensor", 0, 0, out));
        break;
    case DL_COLL_GATHER:
        if ((t = rank_data(run, c)) == NULL || (list = make_list(run, n, c)) == NULL)
            return DL_ERR_NOMEM;
        TRY(lab_rank_emit_snap(r, "before", "tensor", 0, 0, t));
        TRY(dl_comm_gather(comm, t, list, root, NULL, NULL));
        /* torch's example: gather_list = [...] if rank == dst else None. */
        if (me == root)
            TRY(snap_list(r, "after", "gather_list", list, n));
        else
            TRY(lab_rank_emit_none(r, "after", "gather_list"));
        break;
    case DL_COLL_ALL_GATHER:
        if ((t = rank_data(run, c)) == NULL || (list = make_list(run, n, c)) == NULL)
            return DL_ERR_NOMEM;
        TRY(lab_rank_emit_snap(r, "before", "tensor", 0, 0, t));
        TRY(dl_comm_all_gather(comm, list, t, NULL, NULL));
        TRY(snap_list(r, "after", "tensor_list", list, n));
        break;
    case DL_COLL_REDUCE_SCATTER:
    case DL_COLL_ALL_TO_ALL: {
        /* torch's reduce_scatter_tensor / all_to_all_single: the input holds
         * one chunk of count elements per rank. */
        size_t total = c * (size_t)n;
        size_t out_n = job->prim.coll == DL_COLL_REDUCE_SCATTER ? c : total;
        if ((t = rank_data(run, total)) == NULL || (out = make(run, out_n)) == NULL)
            return DL_ERR_NOMEM;
        TRY(lab_rank_emit_snap(r, "before", "input", 0, 0, t));
        if (job->prim.coll == DL_COLL_REDUCE_SCATTER)
            TRY(dl_comm_reduce_scatter(comm, out, t, job->op, NULL, NULL));
        else
            TRY(dl_comm_all_to_all(comm, out, t, NULL, NULL, NULL, NULL));
        TRY(lab_rank_emit_snap(r, "after", "output", 0, 0, out));
        break;
    }
    case DL_COLL_BARRIER:
        TRY(dl_comm_barrier(comm, NULL, NULL));
        TRY(lab_rank_note(r, "passed the barrier"));
        break;
    default:
        st = DL_ERR_INVALID;
    }
out:
    free(list);
    return st;
}

dl_status_t lab_run_rank(lab_rank_t *r)
{
    run_t run = {r, {DL_DEVICE_CPU, 0}, NULL, 0};
    char why[256];
    dl_status_t st = lab_job_device(r, &run.dev, why, sizeof(why));
    if (st != DL_OK)
        return st; /* run_job has reported it */
    switch (r->job.prim.kind) {
    case LAB_PRIM_COLL:
        st = run_coll(&run);
        break;
    case LAB_PRIM_PINGPONG:
        st = run_pingpong(&run);
        break;
    default:
        st = run_p2p(&run);
        break;
    }
    for (int i = 0; i < run.n_owned; i++)
        dl_tensor_free(run.owned[i]);
    free(run.owned);
    return st;
}
