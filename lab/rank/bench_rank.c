/* The rank's part of `distlab bench`, after nccl-tests: for each size, fill
 * the input with known values, run the collective once and count the wrong
 * elements, then a barrier, warm-up calls, a barrier and iters timed
 * calls. Each rank reports its time per call; the controller averages them
 * (nccl-tests' default) and sums the wrong counts.
 *
 * Sizes follow nccl-tests: for all_gather and gather the size is the whole
 * output, for reduce_scatter, all_to_all and scatter the whole input, for
 * the others the one buffer. With --device cuda the buffers live on this
 * rank's GPU; they are filled and checked through host copies, outside the
 * timed loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distlab/backends.h"
#include "distlab/cuda.h"
#include "lab/rank/rank.h"
#include "lab/proto/sizing.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Element i of rank r's input: small integers, so that every op's result
 * is exact in every dtype (products stay within float16's range). */
static double input_value(dl_dtype_t dt, dl_op_t op, int r, size_t i)
{
    if (dt == DL_BOOL)
        return (double)((r + i) % 2);
    if (op == DL_OP_PROD)
        return (r + i) % 5 == 0 ? 2.0 : 1.0;
    if (op == DL_OP_BAND || op == DL_OP_BOR || op == DL_OP_BXOR)
        return (double)((r * 5 + i * 3) % 64);
    if (dt == DL_UINT8)
        return (double)((r * 3 + i) % 7);
    return (double)((long)((r * 3 + i) % 7) - 3);
}

static double combine(dl_op_t op, dl_dtype_t dt, double a, double b)
{
    long long x = (long long)a, y = (long long)b;
    switch (op) {
    case DL_OP_SUM:
    case DL_OP_AVG:
        return dt == DL_BOOL ? (double)(x || y) : a + b;
    case DL_OP_PROD:
        return dt == DL_BOOL ? (double)(x && y) : a * b;
    case DL_OP_MIN:
        return a < b ? a : b;
    case DL_OP_MAX:
        return a > b ? a : b;
    case DL_OP_BAND:
        return (double)(x & y);
    case DL_OP_BOR:
        return (double)(x | y);
    case DL_OP_BXOR:
        return (double)(x ^ y);
    default:
        return a;
    }
}

/* The reduction over all ranks of element i of their inputs. */
static double reduced(const lab_job_t *job, int n, size_t i)
{
    double acc = input_value(job->dtype, job->op, 0, i);
    for (int r = 1; r < n; r++)
        acc = combine(job->op, job->dtype, acc, input_value(job->dtype, job->op, r, i));
    if (job->op == DL_OP_AVG)
        acc = dl_dtype_is_float(job->dtype) ? acc / n : (double)((long long)acc / n);
    return acc;
}

typedef struct {
    dl_tensor_t *in, *out;
    dl_tensor_t **list; /* a root's scatter/gather list */
    dl_tensor_t *whole; /* the buffer the list's tensors are views of, unless apart */
    size_t count;       /* nccl-tests' count column */
    size_t chunk;       /* elements per rank where the buffer is split */
} bench_bufs_t;

/* t itself on the host, or a host copy of a GPU tensor (put_host writes
 * it back, drop_host frees it). NULL when the copy fails. */
static dl_tensor_t *get_host(const dl_tensor_t *t)
{
    dl_tensor_t *h = NULL;
    if (t->device.type != DL_DEVICE_CUDA)
        return (dl_tensor_t *)t;
    return dl_tensor_to(t, (dl_device_t){DL_DEVICE_CPU, 0}, &h) == DL_OK ? h : NULL;
}

static void drop_host(const dl_tensor_t *t, dl_tensor_t *h)
{
    if (h != t)
        dl_tensor_free(h);
}

static dl_status_t put_host(dl_tensor_t *t, dl_tensor_t *h)
{
    dl_status_t st =
        h == t ? DL_OK : dl_cuda_copy(t->data, t->device, h->data, h->device, dl_tensor_nbytes(t));
    drop_host(t, h);
    return st;
}

/* Element i of t is input_value(rank, offset + i). */
static dl_status_t fill_input(const lab_job_t *job, int rank, size_t offset, dl_tensor_t *t)
{
    dl_tensor_t *h = get_host(t);
    if (h == NULL)
        return DL_ERR_SYSTEM;
    for (size_t i = 0; i < h->numel; i++)
        dl_dtype_set(h->dtype, h->data, i, input_value(job->dtype, job->op, rank, offset + i));
    return put_host(t, h);
}

static dl_status_t call_once(lab_rank_t *r, bench_bufs_t *b)
{
    const lab_job_t *job = &r->job;
    dl_comm_t *comm = r->comm;
    switch (job->prim.coll) {
    case DL_COLL_ALL_REDUCE:
        return dl_comm_all_reduce(comm, b->in, job->op, NULL, NULL);
    case DL_COLL_BROADCAST:
        return dl_comm_broadcast(comm, b->in, job->root, NULL, NULL);
    case DL_COLL_REDUCE:
        return dl_comm_reduce(comm, b->in, job->root, job->op, NULL, NULL);
    case DL_COLL_ALL_GATHER:
        return dl_comm_all_gather_into(comm, b->out, b->in, NULL, NULL);
    case DL_COLL_REDUCE_SCATTER:
        return dl_comm_reduce_scatter(comm, b->out, b->in, job->op, NULL, NULL);
    case DL_COLL_ALL_TO_ALL:
        return dl_comm_all_to_all(comm, b->out, b->in, NULL, NULL, NULL, NULL);
    case DL_COLL_GATHER:
        return dl_comm_gather(comm, b->in, b->list, job->root, NULL, NULL);
    case DL_COLL_SCATTER:
        return dl_comm_scatter(comm, b->out, b->list, job->root, NULL, NULL);
    case DL_COLL_BARRIER:
        return dl_comm_barrier(comm, NULL, NULL);
    default:
        return DL_ERR_INVALID;
    }
}

/* What element i of this rank's result should be; the tensor checked is
 * in for in-place collectives, out (or the list) otherwise. */
static double expected(const lab_job_t *job, int me, int n, size_t chunk, size_t i)
{
    switch (job->prim.coll) {
    case DL_COLL_ALL_REDUCE:
        return reduced(job, n, i);
    case DL_COLL_BROADCAST:
        return input_value(job->dtype, job->op, job->root, i);
    case DL_COLL_REDUCE:
        return reduced(job, n, i);
    case DL_COLL_ALL_GATHER:
    case DL_COLL_GATHER:
        return input_value(job->dtype, job->op, (int)(i / chunk), i % chunk);
    case DL_COLL_REDUCE_SCATTER:
        return reduced(job, n, (size_t)me * chunk + i);
    case DL_COLL_ALL_TO_ALL:
        return input_value(job->dtype, job->op, (int)(i / chunk), (size_t)me * chunk + i % chunk);
    case DL_COLL_SCATTER:
        return input_value(job->dtype, job->op, job->root, (size_t)me * chunk + i);
    default:
        return 0;
    }
}

static size_t count_wrong(const lab_job_t *job, int me, int n, const bench_bufs_t *b)
{
    dl_coll_t c = job->prim.coll;
    const dl_tensor_t *res = b->in;
    if (c == DL_COLL_ALL_GATHER || c == DL_COLL_REDUCE_SCATTER || c == DL_COLL_ALL_TO_ALL ||
        c == DL_COLL_SCATTER)
        res = b->out;
    /* Only the root has a gather's result, and only the root's reduce result
     * is defined: the chain leaves partial sums on the others (coll.h). */
    if (c == DL_COLL_BARRIER || ((c == DL_COLL_GATHER || c == DL_COLL_REDUCE) && me != job->root))
        return 0;
    double tol = job->dtype == DL_FLOAT16 || job->dtype == DL_BFLOAT16 ? 1e-2 : 1e-5;
    size_t wrong = 0;
    if (c == DL_COLL_GATHER) {
        for (int j = 0; j < n; j++) {
            dl_tensor_t *h = get_host(b->list[j]);
            if (h == NULL) /* unreadable: count the rest wrong */
                return wrong + (size_t)(n - j) * b->chunk;
            for (size_t i = 0; i < b->chunk; i++) {
                double want = expected(job, me, n, b->chunk, (size_t)j * b->chunk + i);
                double got = dl_dtype_get(job->dtype, h->data, i);
                wrong += fabs(got - want) > tol * fmax(1.0, fabs(want));
            }
            drop_host(b->list[j], h);
        }
        return wrong;
    }
    const dl_tensor_t *dev_res = res;
    if ((res = get_host(dev_res)) == NULL)
        return dev_res->numel;
    for (size_t i = 0; i < res->numel; i++) {
        double want = expected(job, me, n, b->chunk, i);
        /* Stored values are in the dtype; compare with the stored form. */
        if (!dl_dtype_is_float(job->dtype)) {
            int64_t w = (int64_t)want;
            int64_t g = dl_dtype_get_i64(job->dtype, res->data, i);
            int64_t buf = 0;
            dl_dtype_set_i64(job->dtype, &buf, 0, w);
            wrong += g != dl_dtype_get_i64(job->dtype, &buf, 0);
        } else {
            double got = dl_dtype_get(job->dtype, res->data, i);
            wrong += fabs(got - want) > tol * fmax(1.0, fabs(want));
        }
    }
    drop_host(dev_res, (dl_tensor_t *)res);
    return wrong;
}

static void free_bufs(bench_bufs_t *b, int n)
{
    dl_tensor_free(b->in);
    dl_tensor_free(b->out);
    if (b->list != NULL)
        for (int i = 0; i < n; i++)
            dl_tensor_free(b->list[i]); /* a view's storage is whole's */
    free(b->list);
    dl_tensor_free(b->whole);
    memset(b, 0, sizeof(*b));
}

/* Chunk i of whole, n elements long, as a tensor of its own (borrowed
 * storage, as torch's tensor.chunk gives views). */
static dl_status_t view_of(const dl_tensor_t *whole, size_t i, size_t n, dl_tensor_t **t_p)
{
    dl_tensor_t *t = malloc(sizeof(*t));
    if (t == NULL)
        return DL_ERR_NOMEM;
    *t = *whole;
    t->shape[0] = (int64_t)n;
    t->numel = n;
    t->data = (uint8_t *)whole->data + i * n * dl_dtype_size(whole->dtype);
    t->alloc = NULL;
    *t_p = t;
    return DL_OK;
}

/* A buffer of n elements of the job's dtype on the job's device. */
static dl_status_t new_buf(lab_rank_t *r, size_t n, dl_tensor_t **t_p)
{
    dl_device_t dev;
    char why[256];
    dl_status_t st = lab_job_device(r, &dev, why, sizeof(why));
    if (st != DL_OK)
        return st;
    if (dev.type != DL_DEVICE_CUDA)
        return dl_tensor_new_1d(r->job.dtype, n, dl_comm_allocator(r->comm), t_p);
    int64_t shape[1] = {(int64_t)n};
    return dl_tensor_new_on(r->job.dtype, 1, shape, dev, t_p);
}

static dl_status_t alloc_bufs(lab_rank_t *r, size_t bytes, bench_bufs_t *b)
{
    const lab_job_t *job = &r->job;
    int n = r->size, me = r->rank;
    dl_coll_t c = job->prim.coll;
    size_t count = lab_bench_count(job, n, bytes);
    memset(b, 0, sizeof(*b));
    bool split = c == DL_COLL_ALL_GATHER || c == DL_COLL_REDUCE_SCATTER ||
                 c == DL_COLL_ALL_TO_ALL || c == DL_COLL_GATHER || c == DL_COLL_SCATTER;
    b->count = count;
    b->chunk = split ? count / (size_t)n : count;
    size_t in_n = count, out_n = 0;
    switch (c) {
    case DL_COLL_ALL_GATHER:
        in_n = b->chunk;
        out_n = count;
        break;
    case DL_COLL_REDUCE_SCATTER:
        out_n = b->chunk;
        break;
    case DL_COLL_ALL_TO_ALL:
        out_n = count;
        break;
    case DL_COLL_GATHER:
        in_n = b->chunk;
        break;
    case DL_COLL_SCATTER:
        in_n = 0;
        out_n = b->chunk;
        break;
    case DL_COLL_BARRIER:
        in_n = 0;
        break;
    default:
        break;
    }
    dl_status_t st = DL_OK;
    if (in_n > 0 && (st = new_buf(r, in_n, &b->in)) != DL_OK)
        goto err_free;
    if (out_n > 0 && (st = new_buf(r, out_n, &b->out)) != DL_OK)
        goto err_free;
    if ((c == DL_COLL_GATHER || c == DL_COLL_SCATTER) && me == job->root) {
        b->list = calloc((size_t)n, sizeof(*b->list));
        if (b->list == NULL) {
            st = DL_ERR_NOMEM;
            goto err_free;
        }
        /* As MPI_Gather and MPI_Scatter take it, one buffer; or as a Python
         * list of new tensors, each its own (--lists apart). Those are
         * allocated last first: the arena hands out blocks in a row, and
         * tensors that lie one after the other in rank order would be
         * taken as one buffer, which is not what --lists apart measures. */
        if (!job->lists_apart && (st = new_buf(r, b->chunk * (size_t)n, &b->whole)) != DL_OK)
            goto err_free;
        for (int i = n - 1; i >= 0; i--)
            if ((st = b->whole != NULL ? view_of(b->whole, (size_t)i, b->chunk, &b->list[i])
                                       : new_buf(r, b->chunk, &b->list[i])) != DL_OK)
                goto err_free;
    }
    return DL_OK;

err_free:
    free_bufs(b, n);
    return st;
}

static dl_status_t fill(lab_rank_t *r, bench_bufs_t *b)
{
    const lab_job_t *job = &r->job;
    dl_status_t st = DL_OK;
    if (b->in != NULL)
        st = fill_input(job, r->rank, 0, b->in);
    if (b->out != NULL)
        dl_tensor_fill(b->out, 0);
    if (b->list != NULL && job->prim.coll == DL_COLL_SCATTER)
        for (int j = 0; j < r->size && st == DL_OK; j++)
            st = fill_input(job, r->rank, (size_t)j * b->chunk, b->list[j]);
    return st;
}

static dl_status_t bench_size(lab_rank_t *r, size_t bytes)
{
    const lab_job_t *job = &r->job;
    bench_bufs_t b;
    dl_status_t st = alloc_bufs(r, bytes, &b);
    if (st != DL_OK)
        return st;
    size_t wrong = 0;
    if (job->check) {
        if ((st = fill(r, &b)) != DL_OK || (st = call_once(r, &b)) != DL_OK)
            goto out;
        wrong = count_wrong(job, r->rank, r->size, &b);
    }
    /* A barrier before the warm-up too: a rank faults in a channel's pages
     * the first time it uses it (a system call of 100 us and more), and the
     * first barrier of a job uses channels the collective may not: that
     * must happen in the warm-up, not at the start of the timed calls. */
    if ((st = dl_comm_barrier(r->comm, NULL, NULL)) != DL_OK)
        goto out;
    for (int i = 0; i < job->warmup; i++)
        if ((st = call_once(r, &b)) != DL_OK)
            goto out;
    if ((st = dl_comm_barrier(r->comm, NULL, NULL)) != DL_OK)
        goto out;
    double t0 = now_us();
    for (int i = 0; i < job->iters; i++)
        if ((st = call_once(r, &b)) != DL_OK)
            goto out;
    double us = (now_us() - t0) / (job->iters > 0 ? job->iters : 1);
    /* Another backend's own call stands where builtin names its schedule. */
    const char *call = dl_backend_call_name(job->backend, job->prim.coll);
    dl_coll_args_t args = {.coll = job->prim.coll, .nranks = r->size, .count = b.chunk};
    const char *ran = dl_comm_last_algo(r->comm);
    const char *algo = job->algo[0]   ? job->algo
                       : call != NULL ? call
                       : ran != NULL  ? ran
                                      : dl_algo_default_for(&args, dl_dtype_size(job->dtype));
    st = lab_rank_emit(r,
                       json_pack("{s:s, s:I, s:I, s:f, s:I, s:s}", "type", "bench", "size",
                                 (json_int_t)(b.count * dl_dtype_size(job->dtype)), "count",
                                 (json_int_t)b.count, "time_us", us, "wrong", (json_int_t)wrong,
                                 "algo", algo),
                       NULL, 0);
out:
    free_bufs(&b, r->size);
    return st;
}

dl_status_t lab_bench_rank(lab_rank_t *r)
{
    const lab_job_t *job = &r->job;
    dl_status_t st = DL_OK;
    if (job->prim.coll == DL_COLL_BARRIER)
        return bench_size(r, 0);
    /* Sizes below the smallest valid one run as that one, once: a row per
     * distinct count, as the sizes column shows what was measured. */
    size_t prev = 0;
    for (double size = (double)job->min_bytes; size > 0 && st == DL_OK;
         size = lab_bench_next_size(job, size)) {
        size_t count = lab_bench_count(job, r->size, (size_t)size);
        if (count != prev)
            st = bench_size(r, (size_t)size);
        prev = count;
    }
    return st;
}
