/* The torch.distributed-style calls: argument checks with one clear message,
 * tensor lists handed on as they lie or staged into one contiguous buffer
 * (view_list), cuda tensors staged through host memory for backends that
 * work in host memory, then a normalised call on the backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "distlab/cuda.h"
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

/* cap: the capability the call needs (DL_CAP_P2P or DL_CAP_COLL(c)). */
static dl_status_t check_tensor(dl_comm_t *comm, const char *what, uint32_t cap,
                                const dl_tensor_t *t)
{
    if (t == NULL || (t->data == NULL && t->numel > 0)) {
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: missing tensor", what);
        return DL_ERR_INVALID;
    }
    dl_device_type_t dev = t->device.type;
    if ((dev != DL_DEVICE_CPU && dev != DL_DEVICE_CUDA) || (comm->ops->caps[dev] & cap) == 0) {
        dl__comm_fail(comm, DL_ERR_UNSUPPORTED,
                      "%s: the %s backend does not support %s on %s tensors (`distlab backends` "
                      "lists what each backend supports)",
                      what, comm->ops->name, cap == DL_CAP_P2P ? "send/recv" : what,
                      dev == DL_DEVICE_CUDA ? "cuda" : "cpu");
        return DL_ERR_UNSUPPORTED;
    }
    return DL_OK;
}

static dl_status_t check_like(dl_comm_t *comm, const char *what, uint32_t cap, const char *name,
                              int i, const dl_tensor_t *t, dl_dtype_t dt, size_t numel)
{
    dl_status_t st = check_tensor(comm, what, cap, t);
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

/* Whether every tensor of a root's list is a host tensor like (dt, numel)
 * that the backend takes for the call: one plain pass, as this runs for
 * every rooted call. Anything else goes to check_list's tensor by tensor. */
static inline bool list_plain(const dl_comm_t *comm, uint32_t cap, dl_tensor_t *const *list,
                              dl_dtype_t dt, size_t numel)
{
    if ((comm->ops->caps[DL_DEVICE_CPU] & cap) == 0)
        return false;
    for (int i = 0; i < comm->size; i++) {
        const dl_tensor_t *t = list[i];
        if (t == NULL || t->dtype != dt || t->numel != numel || t->device.type != DL_DEVICE_CPU ||
            (t->data == NULL && numel > 0))
            return false;
    }
    return true;
}

/* check_list for a list that is not plain: tensor by tensor, naming the
 * first that does not pass. */
static dl_status_t __attribute__((noinline))
check_list_each(dl_comm_t *comm, const char *what, uint32_t cap, const char *name,
                dl_tensor_t *const *list, dl_dtype_t dt, size_t numel)
{
    if (list == NULL) {
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: this rank needs a %s", what, name);
        return DL_ERR_INVALID;
    }
    dl_status_t st = DL_OK;
    for (int i = 0; i < comm->size && st == DL_OK; i++)
        st = check_like(comm, what, cap, name, i, list[i], dt, numel);
    return st;
}

/* A root's tensor list: present, nranks tensors like (dt, numel). */
static inline dl_status_t check_list(dl_comm_t *comm, const char *what, uint32_t cap,
                                     const char *name, dl_tensor_t *const *list, dl_dtype_t dt,
                                     size_t numel)
{
    if (list != NULL && list_plain(comm, cap, list, dt, numel))
        return DL_OK;
    return check_list_each(comm, what, cap, name, list, dt, numel);
}

static dl_status_t __attribute__((noinline))
check_op_slow(dl_comm_t *comm, const char *what, dl_op_t op, dl_dtype_t dt, uint32_t key)
{
    const char *why = NULL;
    dl_status_t st = dl_op_check(op, dt, &why);
    if (st == DL_OK && comm->ops->check_op != NULL)
        st = comm->ops->check_op(op, dt, &why);
    if (st != DL_OK) {
        dl__comm_fail(comm, st, "%s: %s", what, why != NULL ? why : dl_strerror(st));
        return st;
    }
    comm->op_checked = key;
    return DL_OK;
}

static inline dl_status_t check_op(dl_comm_t *comm, const char *what, dl_op_t op, dl_dtype_t dt)
{
    /* The answer depends on the op, the dtype and the backend only: the
     * pair that passed last (a training loop's, a benchmark's) passes. */
    uint32_t key = ((uint32_t)op << 16 | (uint32_t)dt) + 1;
    if (comm->op_checked == key)
        return DL_OK;
    return check_op_slow(comm, what, op, dt, key);
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
    return dl__work_drop(w); /* waits for it */
}

/* The collective hook (dl_comm_set_coll_hook): DL_OK, or the call is
 * refused with w finished and freed. Out of line: most runs have none. */
static dl_status_t __attribute__((noinline))
call_coll_hook(dl_comm_t *comm, dl_work_t *w, const dl_coll_call_t *call, const dl_coll_opts_t *o)
{
    dl_world_t *world = comm->world;
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
        .split = call->args.splits != NULL,
        .splits = call->args.splits,
        .root = dl_coll_has_root(c) ? call->args.root : -1,
        .op = call->args.op,
        .async = o != NULL && o->async,
    };
    char why[512];
    why[0] = '\0'; /* not all 512 bytes: this runs for every call that has a hook */
    if (world->coll_hook(world->coll_hook_arg, &info, why, sizeof(why)) != 0) {
        /* Refused before anything moved, and before the sequence number
         * advanced: the group can go on as if it had not been called. */
        dl__comm_fail(comm, DL_ERR_MISMATCH, "%s", why[0] ? why : "collective refused");
        dl__work_finish(w, DL_ERR_MISMATCH);
        free(w);
        return DL_ERR_MISMATCH;
    }
    return DL_OK;
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
    dl_status_t st;
    if (comm->world->coll_hook != NULL && (st = call_coll_hook(comm, w, call, o)) != DL_OK)
        return st;
    /* A synchronous collective on a backend that can block runs to its end
     * in one call: no work in the world's list, no wait loop. */
    bool blocking = !(o != NULL && o->async) && comm->ops->coll_blocking != NULL;
    st = dl__whole_step_begin(comm, call, w);
    if (st == DL_OK)
        st = blocking ? comm->ops->coll_blocking(comm, call, w) : comm->ops->coll(comm, call, w);
    if (st != DL_OK) {
        dl__work_finish(w, st);
        free(w);
        return st;
    }
    /* Every rank numbers its collectives alike; the number keeps
     * concurrent collectives' messages apart. */
    comm->coll_seq++;
    if (blocking) {
        dl__work_finish(w, DL_OK); /* copy-outs, the step hook's end */
        st = w->status;
        dl__work_recycle(w);
        return st;
    }
    return run_work(comm, w, o, work_p);
}

/* A new work for a call, or NULL with *st_p set: out of memory, or the
 * world was taken down (a rank timed out, died or aborted it). Calls on
 * such a world are refused here, before anything is posted: a message a
 * peer finds waiting could complete its call while the others fail, and
 * the ranks would part ways. */
static dl_status_t __attribute__((noinline)) world_failed(dl_comm_t *comm, const char *what)
{
    char why[256];
    dl_status_t st = dl__comm_world_failed(comm, why, sizeof(why));
    if (st != DL_OK)
        dl__comm_fail(comm, st, "%s refused: the world was taken down: %s", what,
                      why[0] ? why : dl_strerror(st));
    return st;
}

static dl_work_t *new_work(dl_comm_t *comm, const char *what, dl_status_t *st_p)
{
    const _Atomic uint32_t *down = comm->world->down;
    if ((down == NULL || atomic_load_explicit(down, memory_order_acquire) != 0) &&
        (*st_p = world_failed(comm, what)) != DL_OK)
        return NULL;
    dl_work_t *w = dl__work_new(comm, what);
    *st_p = w != NULL ? DL_OK : DL_ERR_NOMEM;
    if (w == NULL)
        dl__comm_fail(comm, DL_ERR_NOMEM, "%s: out of memory", what);
    return w;
}

/* ---- staging ----
 *
 * A backend sees every tensor as one buffer in the memory it works in: a
 * host backend (builtin, mpi) host memory, a device backend (nccl) the
 * GPU. A cuda tensor given to a host backend is staged: inputs are copied
 * to a host buffer before the call, outputs are copied back when the work
 * completes (the work's copy-outs), in-place tensors both. A tensor list
 * goes to a backend that takes lists as its tensors (view_list); to
 * another it is staged into one contiguous buffer in the backend's memory
 * the same way, unless its tensors already are one. Staging buffers come
 * from the communicator's allocator (the builtin backend's shared arena,
 * so peers read them directly) or, on the GPU, from cudaMalloc, and are
 * freed with the work. */

static const dl_device_t host_dev = {DL_DEVICE_CPU, 0};

/* Where the backend works on a tensor that lives on dev. */
static dl_device_t work_dev(const dl_comm_t *comm, dl_device_t dev)
{
    return dev.type == DL_DEVICE_CUDA && comm->ops->device_memory ? dev : host_dev;
}

/* A contiguous buffer of n bytes on dev, for a tensor on from, freed with
 * w: from the communicator's allocator on the host, from cudaMalloc on a
 * GPU. NULL after recording why. Host memory for a cuda tensor is
 * page-locked where the backend can: a copy from pageable memory goes
 * through CUDA's bounce buffer at a fraction of the bus's speed. */
static void *stage_on(dl_comm_t *comm, dl_work_t *w, size_t n, dl_device_t dev, dl_device_t from)
{
    bool gpu = dev.type == DL_DEVICE_CUDA;
    dl_allocator_t *a = gpu ? dl_cuda_allocator(dev.index) : dl_comm_allocator(comm);
    void *p = a != NULL ? a->alloc(a, n ? n : 1) : NULL;
    if (p != NULL && dl__work_own(w, a, p, n ? n : 1) != DL_OK) {
        a->free(a, p, n ? n : 1);
        p = NULL;
    }
    if (p == NULL)
        dl__comm_fail(comm, DL_ERR_NOMEM, "%s: cannot stage %zu bytes%s%s", w->what, n,
                      gpu ? " on the GPU: " : "", gpu ? dl_cuda_last_error() : "");
    else if (!gpu && from.type == DL_DEVICE_CUDA && comm->ops->pin_staging != NULL)
        comm->ops->pin_staging(comm, p, n);
    return p;
}

static dl_status_t stage_copy(dl_comm_t *comm, dl_work_t *w, void *dst, dl_device_t dst_dev,
                              const void *src, dl_device_t src_dev, size_t n)
{
    dl_status_t st = dl_cuda_copy(dst, dst_dev, src, src_dev, n);
    if (st != DL_OK)
        dl__comm_fail(comm, st, "%s: staging the tensor failed: %s", w->what, dl_cuda_last_error());
    return st;
}

/* Whether the backend works on t where it lives (no staging): a host
 * tensor, or a cuda tensor on a backend that works in GPU memory. */
static inline bool in_place_for(const dl_comm_t *comm, const dl_tensor_t *t)
{
    dl_device_type_t dev = t->device.type;
    return dev == DL_DEVICE_CPU || (dev == DL_DEVICE_CUDA && comm->ops->device_memory);
}

/* A staged copy of input t, for view_in. */
static dl_status_t __attribute__((noinline))
stage_in(dl_comm_t *comm, dl_work_t *w, const dl_tensor_t *t, void **p_p)
{
    dl_device_t dev = work_dev(comm, t->device);
    size_t nb = dl_tensor_nbytes(t);
    void *p = stage_on(comm, w, nb, dev, t->device);
    if (p == NULL)
        return DL_ERR_NOMEM;
    dl_status_t st = stage_copy(comm, w, p, dev, t->data, t->device, nb);
    if (st != DL_OK)
        return st;
    *p_p = p;
    return DL_OK;
}

/* The buffer the backend reads input t from: t's data, or a staged copy. */
static inline dl_status_t view_in(dl_comm_t *comm, dl_work_t *w, const dl_tensor_t *t, void **p_p)
{
    if (in_place_for(comm, t)) {
        *p_p = t->data;
        return DL_OK;
    }
    return stage_in(comm, w, t, p_p);
}

/* A staging buffer for output t, for view_out. */
static dl_status_t __attribute__((noinline))
stage_out(dl_comm_t *comm, dl_work_t *w, dl_tensor_t *t, bool in_place, void **p_p)
{
    dl_device_t dev = work_dev(comm, t->device);
    void *p = NULL;
    size_t nb = dl_tensor_nbytes(t);
    dl_status_t st = in_place ? stage_in(comm, w, t, &p) : DL_OK;
    if (st != DL_OK)
        return st;
    if (p == NULL && (p = stage_on(comm, w, nb, dev, t->device)) == NULL)
        return DL_ERR_NOMEM;
    if ((st = dl__work_copyout_dev(w, t->data, t->device, p, dev, nb)) != DL_OK)
        return st;
    *p_p = p;
    return DL_OK;
}

/* The buffer the backend writes output t to: t's data, or a staging buffer
 * copied into t at completion (with its current contents when in_place).
 * The staging paths are out of line: this runs for every call. */
static inline dl_status_t view_out(dl_comm_t *comm, dl_work_t *w, dl_tensor_t *t, bool in_place,
                                   void **p_p)
{
    if (in_place_for(comm, t)) {
        *p_p = t->data;
        return DL_OK;
    }
    return stage_out(comm, w, t, in_place, p_p);
}

/* Where view_list keeps the buffers of a list handed on as its tensors:
 * inline for a small world. LIST_SEGS_INIT before view_list and
 * list_segs_fini; the inline array is left unset, as a rooted collective
 * of a few bytes would spend a fair part of its time zeroing it. */
#define LIST_INLINE 16
typedef struct {
    void **segs;
    void *segs_inline[LIST_INLINE];
} list_segs_t;

#define LIST_SEGS_INIT(ls) ((ls).segs = (ls).segs_inline)

static void list_segs_fini(list_segs_t *ls)
{
    if (ls->segs != ls->segs_inline)
        free(ls->segs);
}

/* Whether the list's tensors are already one buffer where the backend
 * works: adjacent, in rank order, on that device. */
static bool list_is_one(const dl_comm_t *comm, dl_tensor_t *const *list, dl_device_t dev, size_t nb)
{
    if (nb == 0 || list[0]->data == NULL)
        return false;
    for (int i = 0; i < comm->size; i++) {
        dl_device_t d = list[i]->device;
        if (d.type != dev.type || d.index != dev.index ||
            (uint8_t *)list[i]->data != (uint8_t *)list[0]->data + nb * (size_t)i)
            return false;
    }
    return true;
}

/* view_list (below) for a list that is not one buffer already, out of
 * line as stage_in and stage_out are: the list's tensors, or a staged
 * copy. */
static dl_status_t __attribute__((noinline))
view_list_apart(dl_comm_t *comm, dl_work_t *w, dl_tensor_t *const *list, bool output,
                list_segs_t *ls, void **one_p, void *const **list_p, dl_device_t dev, size_t nb)
{
    dl_status_t st = DL_OK;
    if (comm->ops->lists) {
        if (comm->size > LIST_INLINE &&
            (ls->segs = malloc((size_t)comm->size * sizeof(*ls->segs))) == NULL) {
            ls->segs = ls->segs_inline;
            dl__comm_fail(comm, DL_ERR_NOMEM, "%s: out of memory", w->what);
            return DL_ERR_NOMEM;
        }
        for (int i = 0; i < comm->size && st == DL_OK; i++)
            st = output ? view_out(comm, w, list[i], false, &ls->segs[i])
                        : view_in(comm, w, list[i], &ls->segs[i]);
        if (st == DL_OK)
            *list_p = ls->segs;
        return st;
    }
    uint8_t *buf = stage_on(comm, w, nb * (size_t)comm->size, dev, list[0]->device);
    if (buf == NULL)
        return DL_ERR_NOMEM;
    for (int i = 0; i < comm->size && st == DL_OK; i++) {
        uint8_t *chunk = buf + nb * (size_t)i;
        if (output)
            st = dl__work_copyout_dev(w, list[i]->data, list[i]->device, chunk, dev, nb);
        else
            st = stage_copy(comm, w, chunk, dev, list[i]->data, list[i]->device, nb);
    }
    if (st == DL_OK)
        *one_p = buf;
    return st;
}

/* A tensor list (nranks tensors like `like`) as the backend takes it: in
 * *one_p as one buffer, or in *list_p as its tensors' buffers (kept in
 * ls). A list whose tensors are already one buffer is used in place. A
 * backend that takes lists gets the tensors themselves, each staged alone
 * where it lives on another device than the backend works on (as view_in
 * and view_out stage one tensor). Otherwise the list is staged into one
 * contiguous buffer where the backend works on like: an input list is
 * copied in now, an output list's chunks are copied out at completion. */
static inline dl_status_t view_list(dl_comm_t *comm, dl_work_t *w, dl_tensor_t *const *list,
                                    const dl_tensor_t *like, bool output, list_segs_t *ls,
                                    void **one_p, void *const **list_p)
{
    dl_device_t dev = work_dev(comm, like->device);
    size_t nb = dl_tensor_nbytes(like);
    if (list_is_one(comm, list, dev, nb)) {
        *one_p = list[0]->data;
        return DL_OK;
    }
    return view_list_apart(comm, w, list, output, ls, one_p, list_p, dev, nb);
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
    if ((st = check_tensor(comm, "send", DL_CAP_P2P, t)) != DL_OK ||
        (st = check_rank(comm, "send", "dst", dst)) != DL_OK)
        return st;
    if (dst == comm->rank) {
        dl__comm_fail(comm, DL_ERR_INVALID, "send: rank %d cannot send to itself", dst);
        return DL_ERR_INVALID;
    }
    char what[64];
    snprintf(what, sizeof(what), "send to rank %d (tag %d)", dst, tag);
    dl_work_t *w = new_work(comm, what, &st);
    if (w == NULL)
        return st;
    dl__work_name(w, what);
    void *data = NULL;
    if ((st = view_in(comm, w, t, &data)) != DL_OK ||
        (st = comm->ops->isend(comm, data, dl_tensor_nbytes(t), dst, tag, w)) != DL_OK)
        return fail_work(w, st);
    dl_coll_opts_t o = {.async = true};
    return run_work(comm, w, &o, work_p);
}

dl_status_t dl_comm_irecv(dl_comm_t *comm, dl_tensor_t *t, int src, int tag, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "recv", DL_CAP_P2P, t)) != DL_OK)
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
    dl_work_t *w = new_work(comm, what, &st);
    if (w == NULL)
        return st;
    dl__work_name(w, what);
    void *data = NULL;
    if ((st = view_out(comm, w, t, false, &data)) != DL_OK ||
        (st = comm->ops->irecv(comm, data, dl_tensor_nbytes(t), src, tag, w)) != DL_OK)
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
    return dl__work_drop(w); /* waits for it */
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
    dl__work_drop(w);
    return st;
}

/* ---- collectives ---- */

/* Every field but args.nranks and algo, which start_coll sets. Field by
 * field rather than a memset of the whole: this runs for every call. */
static void call_init(dl_coll_call_t *call, dl_coll_t c, dl_dtype_t dt, size_t count, int root,
                      dl_op_t op)
{
    call->args.coll = c;
    call->args.count = count;
    call->args.root = root;
    call->args.op = op;
    call->args.splits = NULL;
    call->dtype = dt;
    call->in = NULL;
    call->out = NULL;
    call->in_list = NULL;
    call->out_list = NULL;
}

dl_status_t dl_comm_broadcast(dl_comm_t *comm, dl_tensor_t *t, int src, const dl_coll_opts_t *o,
                              dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "broadcast", DL_CAP_COLL(DL_COLL_BROADCAST), t)) != DL_OK ||
        (st = check_rank(comm, "broadcast", "src", src)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "broadcast", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_BROADCAST, t->dtype, t->numel, src, DL_OP_SUM);
    if ((st = view_out(comm, w, t, true, &call.in)) != DL_OK)
        return fail_work(w, st);
    call.out = call.in;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_scatter(dl_comm_t *comm, dl_tensor_t *out, dl_tensor_t *const *list, int src,
                            const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "scatter", DL_CAP_COLL(DL_COLL_SCATTER), out)) != DL_OK ||
        (st = check_rank(comm, "scatter", "src", src)) != DL_OK)
        return st;
    if (comm->rank == src &&
        (st = check_list(comm, "scatter", DL_CAP_COLL(DL_COLL_SCATTER), "scatter_list", list,
                         out->dtype, out->numel)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "scatter", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_SCATTER, out->dtype, out->numel, src, DL_OP_SUM);
    list_segs_t ls;
    LIST_SEGS_INIT(ls);
    if ((st = view_out(comm, w, out, false, &call.out)) != DL_OK ||
        (comm->rank == src &&
         (st = view_list(comm, w, list, out, false, &ls, &call.in, &call.in_list)) != DL_OK)) {
        list_segs_fini(&ls);
        return fail_work(w, st);
    }
    st = start_coll(comm, w, &call, o, work_p);
    list_segs_fini(&ls);
    return st;
}

dl_status_t dl_comm_gather(dl_comm_t *comm, const dl_tensor_t *t, dl_tensor_t *const *list, int dst,
                           const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "gather", DL_CAP_COLL(DL_COLL_GATHER), t)) != DL_OK ||
        (st = check_rank(comm, "gather", "dst", dst)) != DL_OK)
        return st;
    if (comm->rank == dst && (st = check_list(comm, "gather", DL_CAP_COLL(DL_COLL_GATHER),
                                              "gather_list", list, t->dtype, t->numel)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "gather", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_GATHER, t->dtype, t->numel, dst, DL_OP_SUM);
    list_segs_t ls;
    LIST_SEGS_INIT(ls);
    if ((st = view_in(comm, w, t, &call.in)) != DL_OK ||
        (comm->rank == dst &&
         (st = view_list(comm, w, list, t, true, &ls, &call.out, &call.out_list)) != DL_OK)) {
        list_segs_fini(&ls);
        return fail_work(w, st);
    }
    st = start_coll(comm, w, &call, o, work_p);
    list_segs_fini(&ls);
    return st;
}

dl_status_t dl_comm_reduce(dl_comm_t *comm, dl_tensor_t *t, int dst, dl_op_t op,
                           const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "reduce", DL_CAP_COLL(DL_COLL_REDUCE), t)) != DL_OK ||
        (st = check_rank(comm, "reduce", "dst", dst)) != DL_OK ||
        (st = check_op(comm, "reduce", op, t->dtype)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "reduce", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_REDUCE, t->dtype, t->numel, dst, op);
    if ((st = view_out(comm, w, t, true, &call.in)) != DL_OK)
        return fail_work(w, st);
    call.out = call.in;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_all_gather_into(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *t,
                                    const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "all_gather", DL_CAP_COLL(DL_COLL_ALL_GATHER), t)) != DL_OK ||
        (st = check_like(comm, "all_gather", DL_CAP_COLL(DL_COLL_ALL_GATHER), "output", 0, out,
                         t->dtype, t->numel * (size_t)comm->size)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "all_gather", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_GATHER, t->dtype, t->numel, 0, DL_OP_SUM);
    if ((st = view_in(comm, w, t, &call.in)) != DL_OK ||
        (st = view_out(comm, w, out, false, &call.out)) != DL_OK)
        return fail_work(w, st);
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_all_gather(dl_comm_t *comm, dl_tensor_t *const *list, const dl_tensor_t *t,
                               const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "all_gather", DL_CAP_COLL(DL_COLL_ALL_GATHER), t)) != DL_OK)
        return st;
    if (list == NULL) {
        dl__comm_fail(comm, DL_ERR_INVALID, "all_gather: missing tensor_list");
        return DL_ERR_INVALID;
    }
    for (int i = 0; i < comm->size; i++)
        if ((st = check_like(comm, "all_gather", DL_CAP_COLL(DL_COLL_ALL_GATHER), "tensor_list", i,
                             list[i], t->dtype, t->numel)) != DL_OK)
            return st;
    dl_work_t *w = new_work(comm, "all_gather", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_GATHER, t->dtype, t->numel, 0, DL_OP_SUM);
    list_segs_t ls;
    LIST_SEGS_INIT(ls);
    if ((st = view_in(comm, w, t, &call.in)) != DL_OK ||
        (st = view_list(comm, w, list, t, true, &ls, &call.out, &call.out_list)) != DL_OK) {
        list_segs_fini(&ls);
        return fail_work(w, st);
    }
    st = start_coll(comm, w, &call, o, work_p);
    list_segs_fini(&ls);
    return st;
}

dl_status_t dl_comm_all_reduce(dl_comm_t *comm, dl_tensor_t *t, dl_op_t op, const dl_coll_opts_t *o,
                               dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "all_reduce", DL_CAP_COLL(DL_COLL_ALL_REDUCE), t)) != DL_OK ||
        (st = check_op(comm, "all_reduce", op, t->dtype)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "all_reduce", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_REDUCE, t->dtype, t->numel, 0, op);
    if ((st = view_out(comm, w, t, true, &call.in)) != DL_OK)
        return fail_work(w, st);
    call.out = call.in;
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_reduce_scatter(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *in,
                                   dl_op_t op, const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    if ((st = check_tensor(comm, "reduce_scatter", DL_CAP_COLL(DL_COLL_REDUCE_SCATTER), out)) !=
            DL_OK ||
        (st = check_like(comm, "reduce_scatter", DL_CAP_COLL(DL_COLL_REDUCE_SCATTER), "input", 0,
                         in, out->dtype, out->numel * (size_t)comm->size)) != DL_OK ||
        (st = check_op(comm, "reduce_scatter", op, out->dtype)) != DL_OK)
        return st;
    dl_work_t *w = new_work(comm, "reduce_scatter", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_REDUCE_SCATTER, out->dtype, out->numel, 0, op);
    if ((st = view_in(comm, w, in, &call.in)) != DL_OK ||
        (st = view_out(comm, w, out, false, &call.out)) != DL_OK)
        return fail_work(w, st);
    return start_coll(comm, w, &call, o, work_p);
}

dl_status_t dl_comm_all_to_all(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *in,
                               const size_t *out_splits, const size_t *in_splits,
                               const dl_coll_opts_t *o, dl_work_t **work_p)
{
    dl_status_t st;
    int n = comm->size;
    if ((st = check_tensor(comm, "all_to_all", DL_CAP_COLL(DL_COLL_ALL_TO_ALL), out)) != DL_OK ||
        (st = check_tensor(comm, "all_to_all", DL_CAP_COLL(DL_COLL_ALL_TO_ALL), in)) != DL_OK)
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
    dl_work_t *w = new_work(comm, "all_to_all", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_ALL_TO_ALL, in->dtype, 0, 0, DL_OP_SUM);
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
        bool fits = true;
        for (int j = 0; j < n; j++) {
            matrix[(size_t)comm->rank * (size_t)n + (size_t)j] = in_splits[j];
            matrix[(size_t)j * (size_t)n + (size_t)comm->rank] = out_splits[j];
            /* Each within what is left of its tensor: a sum that wrapped
             * round could match the tensor's size. */
            fits = fits && in_splits[j] <= in->numel - sin && out_splits[j] <= out->numel - sout;
            if (fits) {
                sin += in_splits[j];
                sout += out_splits[j];
            }
        }
        if (!fits || in_splits[comm->rank] != out_splits[comm->rank] || sin != in->numel ||
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
    if ((st = view_in(comm, w, in, &call.in)) != DL_OK ||
        (st = view_out(comm, w, out, false, &call.out)) != DL_OK) {
        free(matrix);
        return fail_work(w, st);
    }
    st = start_coll(comm, w, &call, o, work_p);
    free(matrix); /* the schedule keeps its own copy */
    return st;
}

dl_status_t dl_comm_barrier(dl_comm_t *comm, const dl_coll_opts_t *o, dl_work_t **work_p)
{
    uint32_t cap = DL_CAP_COLL(DL_COLL_BARRIER);
    if (((comm->ops->caps[DL_DEVICE_CPU] | comm->ops->caps[DL_DEVICE_CUDA]) & cap) == 0) {
        dl__comm_fail(comm, DL_ERR_UNSUPPORTED, "barrier: the %s backend has no barrier",
                      comm->ops->name);
        return DL_ERR_UNSUPPORTED;
    }
    dl_status_t st;
    dl_work_t *w = new_work(comm, "barrier", &st);
    if (w == NULL)
        return st;
    dl_coll_call_t call;
    call_init(&call, DL_COLL_BARRIER, DL_UINT8, 0, 0, DL_OP_SUM);
    return start_coll(comm, w, &call, o, work_p);
}
