/* The torch.distributed-style calls: argument checks with one clear message,
 * tensor lists staged into one contiguous buffer, then a normalised call on
 * the backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "distlab/log.h"

/* ---- checks ---- */

static dl_status_t check_rank(dl_comm_t *comm, const char *what, const char *name, int r)
{
    if (r >= 0 && r < comm->size)
        return DL_OK;
    dl__comm_fail(comm, DL_ERR_INVALID, "%s: %s rank %d does not exist (world size %d)", what, name,
                  r, comm->size);
    return DL_ERR_INVALID;
}

static dl_status_t check_tensor(dl_comm_t *comm, const char *what, const dl_tensor_t *t)
{
    if (t == NULL || (t->data == NULL && t->numel > 0)) {
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: missing tensor", what);
        return DL_ERR_INVALID;
    }
    if (t->device.type != DL_DEVICE_CPU) {
        dl__comm_fail(comm, DL_ERR_UNSUPPORTED, "%s: the %s backend takes cpu tensors only", what,
                      comm->ops->name);
        return DL_ERR_UNSUPPORTED;
    }
    return DL_OK;
}

static dl_status_t check_like(dl_comm_t *comm, const char *what, const char *name, int i,
                              const dl_tensor_t *t, dl_dtype_t dt, size_t numel)
{
    dl_status_t st = check_tensor(comm, what, t);
    if (st != DL_OK)
        return st;
    if (t->dtype != dt) {
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: %s[%d] is %s, expected %s", what, name, i,
                      dl_dtype_name(t->dtype), dl_dtype_name(dt));
        return DL_ERR_INVALID;
    }
    if (t->numel != numel) {
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: %s[%d] has %zu elements, expected %zu", what, name,
                      i, t->numel, numel);
        return DL_ERR_INVALID;
    }
    return DL_OK;
}

/* A root's tensor list: present, nranks tensors like (dt, numel). */
static dl_status_t check_list(dl_comm_t *comm, const char *what, const char *name,
                              dl_tensor_t *const *list, dl_dtype_t dt, size_t numel)
{
    if (list == NULL) {
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: this rank needs a %s", what, name);
        return DL_ERR_INVALID;
    }
    dl_status_t st = DL_OK;
    for (int i = 0; i < comm->size && st == DL_OK; i++)
        st = check_like(comm, what, name, i, list[i], dt, numel);
    return st;
}

static dl_status_t check_op(dl_comm_t *comm, const char *what, dl_op_t op, dl_dtype_t dt)
{
    const char *why = NULL;
    dl_status_t st = dl_op_check(op, dt, &why);
    if (st != DL_OK)
        dl__comm_fail(comm, st, "%s: %s", what, why != NULL ? why : dl_strerror(st));
    return st;
}

/* ---- running work ---- */

static dl_status_t run_work(dl_comm_t *comm, dl_work_t *w, const dl_coll_opts_t *o,
                            dl_work_t **work_p)
{
    bool async = o != NULL && o->async;
    dl__world_add_active(comm->world, w);
    dl_work_test(w); /* post what can be posted now */
    if (async) {
        *work_p = w;
        return DL_OK;
    }
    dl_status_t st = dl_work_wait(w, -1);
    dl_work_free(w);
    return st;
}

static dl_status_t start_coll(dl_comm_t *comm, dl_work_t *w, dl_coll_call_t *call,
                              const dl_coll_opts_t *o, dl_work_t **work_p)
{
    if (o != NULL && o->async && work_p == NULL) {
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: async needs a work handle", w->what);
        dl__work_finish(w, DL_ERR_INVALID);
        free(w);
        return DL_ERR_INVALID;
    }
    call->args.nranks = comm->size;
    call->algo = o != NULL && o->algo != NULL ? o->algo : comm->algo[call->args.coll];
    dl_world_t *world = comm->world;
    if (world->coll_hook != NULL) {
        dl_coll_t c = call->args.coll;
        dl_coll_info_t info = {
            .ctx = comm->ctx,
            .seq = comm->coll_seq,
            .rank = comm->rank,
            .nranks = comm->size,
            .world_ranks = comm->world_ranks,
            .coll = c,
            .dtype = call->dtype,
            .count = c == DL_COLL_BARRIER || call->args.splits != NULL ? 0 : call->args.count,
            .root = dl_coll_has_root(c) ? call->args.root : -1,
            .op = call->args.op,
            .async = o != NULL && o->async,
        };
        char why[512] = "";
        if (world->coll_hook(world->coll_hook_arg, &info, why, sizeof(why)) != 0) {
            /* Refused before anything moved, and before the sequence number
             * advanced: the group can go on as if it had not been called. */
            dl__comm_fail(comm, DL_ERR_MISMATCH, "%s", why[0] ? why : "collective refused");
            dl__work_finish(w, DL_ERR_MISMATCH);
            free(w);
            return DL_ERR_MISMATCH;
        }
    }
    dl_status_t st = comm->ops->coll(comm, call, w);
    if (st != DL_OK) {
        dl__work_finish(w, st);
        free(w);
        return st;
    }
    /* Every rank numbers its collectives alike; the number keeps
     * concurrent collectives' messages apart. */
    comm->coll_seq++;
    return run_work(comm, w, o, work_p);
}

static dl_work_t *new_work(dl_comm_t *comm, const char *what)
{
    dl_work_t *w = dl__work_new(comm, what);
    if (w == NULL)
        dl__comm_fail(comm, DL_ERR_NOMEM, "%s: out of memory", what);
    return w;
}

/* A contiguous buffer from the communicator's allocator, freed with w. */
static void *stage(dl_comm_t *comm, dl_work_t *w, size_t n)
{
    dl_allocator_t *a = dl_comm_allocator(comm);
    void *p = a->alloc(a, n ? n : 1);
    if (p != NULL && dl__work_own(w, a, p, n ? n : 1) != DL_OK) {
        a->free(a, p, n ? n : 1);
        p = NULL;
    }
    return p;
}

static dl_status_t fail_work(dl_work_t *w, dl_status_t st)
{
    dl__work_finish(w, st);
    free(w);
    return st;
}

/* ---- point to point ---- */

dl_status_t dl_comm_isend(dl_comm_t *comm, const dl_tensor_t *t, int dst, int tag,
                          dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "send", t)) != DL_OK ||
        (st = check_rank(comm, "send", "dst", dst)) != DL_OK)
        return st;
    if (dst == comm->rank) {
        dl__comm_fail(comm, DL_ERR_INVALID, "send: rank %d cannot send to itself", dst);
        return DL_ERR_INVALID;
    }
    char what[64];
    snprintf(what, sizeof(what), "send to rank %d (tag %d)", dst, tag);
    dl_work_t *w = new_work(comm, what);
    if (w == NULL)
        return DL_ERR_NOMEM;
    if ((st = comm->ops->isend(comm, t->data, dl_tensor_nbytes(t), dst, tag, w)) != DL_OK)
        return fail_work(w, st);
    dl_coll_opts_t o = {.async = true};
    return run_work(comm, w, &o, work_p);
}

dl_status_t dl_comm_irecv(dl_comm_t *comm, dl_tensor_t *t, int src, int tag, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "recv", t)) != DL_OK)
        return st;
    if (src != DL_ANY_SOURCE && (st = check_rank(comm, "recv", "src", src)) != DL_OK)
        return st;
    if (src == comm->rank) {
        dl__comm_fail(comm, DL_ERR_INVALID, "recv: rank %d cannot receive from itself", src);
        return DL_ERR_INVALID;
    }
    char what[64];
    if (src == DL_ANY_SOURCE)
        snprintf(what, sizeof(what), "recv from any rank (tag %d)", tag);
    else
        snprintf(what, sizeof(what), "recv from rank %d (tag %d)", src, tag);
    dl_work_t *w = new_work(comm, what);
    if (w == NULL)
        return DL_ERR_NOMEM;
    if ((st = comm->ops->irecv(comm, t->data, dl_tensor_nbytes(t), src, tag, w)) != DL_OK)
        return fail_work(w, st);
    dl_coll_opts_t o = {.async = true};
    return run_work(comm, w, &o, work_p);
}

dl_status_t dl_comm_send(dl_comm_t *comm, const dl_tensor_t *t, int dst, int tag)
{
    dl_work_t *w = NULL;
    dl_status_t st = dl_comm_isend(comm, t, dst, tag, &w);
    if (st != DL_OK)
        return st;
    st = dl_work_wait(w, -1);
    dl_work_free(w);
    return st;
}

dl_status_t dl_comm_recv(dl_comm_t *comm, dl_tensor_t *t, int src, int tag, int *src_p)
{
    dl_work_t *w = NULL;
    dl_status_t st = dl_comm_irecv(comm, t, src, tag, &w);
    if (st != DL_OK)
        return st;
    st = dl_work_wait(w, -1);
    if (st == DL_OK && src_p != NULL)
        *src_p = w->source;
    dl_work_free(w);
    return st;
}

/* ---- collectives ---- */

static void call_init(dl_coll_call_t *call, dl_coll_t c, dl_dtype_t dt, size_t count, int root,
                      dl_op_t op)
{
    memset(call, 0, sizeof(*call));
    call->args.coll = c;
    call->args.count = count;
    call->args.root = root;
    call->args.op = op;
    call->dtype = dt;
}

dl_status_t dl_comm_broadcast(dl_comm_t *comm, dl_tensor_t *t, int src, const dl_coll_opts_t *o,
                              dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "broadcast", t)) != DL_OK ||
        (st = check_rank(comm, "broadcast", "src", src)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "broadcast");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_BROADCAST, t->dtype, t->numel, src, DL_OP_SUM);
    call.in = call.out = t->data;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_scatter(dl_comm_t *comm, dl_tensor_t *out, dl_tensor_t *const *list, int src,
                            const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "scatter", out)) != DL_OK ||
        (st = check_rank(comm, "scatter", "src", src)) != DL_OK)
        return st;
    size_t nb = dl_tensor_nbytes(out);
    if (comm->rank == src &&
        (st = check_list(comm, "scatter", "scatter_list", list, out->dtype, out->numel)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "scatter");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_SCATTER, out->dtype, out->numel, src, DL_OP_SUM);
    call.out = out->data;
    if (comm->rank == src) {
        uint8_t *in = stage(comm, w, nb * (size_t)comm->size);
        if (in == NULL)
            return fail_work(w, DL_ERR_NOMEM);
        for (int i = 0; i < comm->size && nb > 0; i++)
            memcpy(in + nb * (size_t)i, list[i]->data, nb);
        call.in = in;
    }
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_gather(dl_comm_t *comm, const dl_tensor_t *t, dl_tensor_t *const *list, int dst,
                           const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "gather", t)) != DL_OK ||
        (st = check_rank(comm, "gather", "dst", dst)) != DL_OK)
        return st;
    size_t nb = dl_tensor_nbytes(t);
    if (comm->rank == dst &&
        (st = check_list(comm, "gather", "gather_list", list, t->dtype, t->numel)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "gather");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_GATHER, t->dtype, t->numel, dst, DL_OP_SUM);
    call.in = t->data;
    if (comm->rank == dst) {
        uint8_t *out = stage(comm, w, nb * (size_t)comm->size);
        if (out == NULL)
            return fail_work(w, DL_ERR_NOMEM);
        for (int i = 0; i < comm->size; i++)
            if ((st = dl__work_copyout(w, list[i]->data, out + nb * (size_t)i, nb)) != DL_OK)
                return fail_work(w, st);
        call.out = out;
    }
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_reduce(dl_comm_t *comm, dl_tensor_t *t, int dst, dl_op_t op,
                           const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "reduce", t)) != DL_OK ||
        (st = check_rank(comm, "reduce", "dst", dst)) != DL_OK ||
        (st = check_op(comm, "reduce", op, t->dtype)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "reduce");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_REDUCE, t->dtype, t->numel, dst, op);
    call.in = call.out = t->data;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_all_gather_into(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *t,
                                    const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "all_gather", t)) != DL_OK ||
        (st = check_like(comm, "all_gather", "output", 0, out, t->dtype,
                         t->numel * (size_t)comm->size)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "all_gather");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_GATHER, t->dtype, t->numel, 0, DL_OP_SUM);
    call.in = t->data;
    call.out = out->data;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_all_gather(dl_comm_t *comm, dl_tensor_t *const *list, const dl_tensor_t *t,
                               const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "all_gather", t)) != DL_OK)
        return st;
    if (list == NULL) {
        dl__comm_fail(comm, DL_ERR_INVALID, "all_gather: missing tensor_list");
        return DL_ERR_INVALID;
    }
    for (int i = 0; i < comm->size; i++)
        if ((st = check_like(comm, "all_gather", "tensor_list", i, list[i], t->dtype, t->numel)) !=
            DL_OK)
            return st;
    dl_work_t *w = new_work(comm, "all_gather");
    if (w == NULL)
        return DL_ERR_NOMEM;
    size_t nb = dl_tensor_nbytes(t);
    uint8_t *out = stage(comm, w, nb * (size_t)comm->size);
    if (out == NULL)
        return fail_work(w, DL_ERR_NOMEM);
    for (int i = 0; i < comm->size; i++)
        if ((st = dl__work_copyout(w, list[i]->data, out + nb * (size_t)i, nb)) != DL_OK)
            return fail_work(w, st);
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_GATHER, t->dtype, t->numel, 0, DL_OP_SUM);
    call.in = t->data;
    call.out = out;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_all_reduce(dl_comm_t *comm, dl_tensor_t *t, dl_op_t op, const dl_coll_opts_t *o,
                               dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "all_reduce", t)) != DL_OK ||
        (st = check_op(comm, "all_reduce", op, t->dtype)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "all_reduce");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_REDUCE, t->dtype, t->numel, 0, op);
    call.in = call.out = t->data;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_reduce_scatter(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *in,
                                   dl_op_t op, const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "reduce_scatter", out)) != DL_OK ||
        (st = check_like(comm, "reduce_scatter", "input", 0, in, out->dtype,
                         out->numel * (size_t)comm->size)) != DL_OK ||
        (st = check_op(comm, "reduce_scatter", op, out->dtype)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "reduce_scatter");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_REDUCE_SCATTER, out->dtype, out->numel, 0, op);
    call.in = in->data;
    call.out = out->data;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_all_to_all(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *in,
                               const size_t *out_splits, const size_t *in_splits,
                               const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    int n = comm->size;
    if ((st = check_tensor(comm, "all_to_all", out)) != DL_OK ||
        (st = check_tensor(comm, "all_to_all", in)) != DL_OK)
        return st;
    if (in->dtype != out->dtype) {
        dl__comm_fail(comm, DL_ERR_INVALID, "all_to_all: input is %s, output %s",
                      dl_dtype_name(in->dtype), dl_dtype_name(out->dtype));
        return DL_ERR_INVALID;
    }
    if ((out_splits == NULL) != (in_splits == NULL)) {
        dl__comm_fail(comm, DL_ERR_INVALID,
                      "all_to_all: give both input and output split sizes, or neither");
        return DL_ERR_INVALID;
    }
    dl_work_t *w = new_work(comm, "all_to_all");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_TO_ALL, in->dtype, 0, 0, DL_OP_SUM);
    call.in = in->data;
    call.out = out->data;
    size_t *matrix = NULL;
    if (in_splits == NULL) {
        if (in->numel % (size_t)n != 0 || out->numel != in->numel) {
            dl__comm_fail(comm, DL_ERR_INVALID,
                          "all_to_all: %zu input and %zu output elements do not split evenly "
                          "over %d ranks",
                          in->numel, out->numel, n);
            return fail_work(w, DL_ERR_INVALID);
        }
        call.args.count = in->numel / (size_t)n;
    } else {
        /* This rank knows its own row (what it sends) and column (what it
         * receives); the schedule needs no more for this rank. */
        matrix = calloc((size_t)n * (size_t)n, sizeof(size_t));
        if (matrix == NULL)
            return fail_work(w, DL_ERR_NOMEM);
        size_t sin = 0, sout = 0;
        for (int j = 0; j < n; j++) {
            matrix[(size_t)comm->rank * (size_t)n + (size_t)j] = in_splits[j];
            matrix[(size_t)j * (size_t)n + (size_t)comm->rank] = out_splits[j];
            sin += in_splits[j];
            sout += out_splits[j];
        }
        if (in_splits[comm->rank] != out_splits[comm->rank] || sin != in->numel ||
            sout != out->numel) {
            dl__comm_fail(comm, DL_ERR_INVALID,
                          "all_to_all: split sizes (in %zu, out %zu) do not match the tensors "
                          "(%zu, %zu) or disagree on this rank's own chunk",
                          sin, sout, in->numel, out->numel);
            free(matrix);
            return fail_work(w, DL_ERR_INVALID);
        }
        call.args.splits = matrix;
    }
    st = start_coll(comm, w, &call, o, work_p);
    free(matrix); /* the schedule keeps its own copy */
    return st;
}

dl_status_t dl_comm_barrier(dl_comm_t *comm, const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_work_t *w = new_work(comm, "barrier");
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_BARRIER, DL_UINT8, 0, 0, DL_OP_SUM);
    return start_coll(comm, w, &call, o, work_p);
}
