/* The builtin backend: collectives are schedules (core/sched) run by the
 * executor over the builtin transports (transport/link.h: shared memory
 * within a host, TCP between hosts); point-to-point messages use the same
 * channels. Progress is driven by whoever waits: the wait loop
 * (core/comm/wait.c) advances every pending work of the process, spins
 * briefly, then sleeps on the rank's doorbell (the wait hooks below) so that
 * many ranks on few cores do not starve. */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/bind.h"
#include "comm/internal.h"
#include "distlab/log.h"
#include "exec/exec.h"
#include "transport/link.h"

#define SPIN_NS (50 * 1000) /* busy-poll this long before sleeping */
/* With more ranks than cores, a waiting rank gives its core away while it
 * polls (the peer it waits for may need that core), and sleeps sooner. */
#define YIELD_SPIN_NS (200 * 1000)
#define LIVENESS_MS   100 /* how often a sleeping wait checks peers */
/* Up to this many cores, ranks that outnumber them still post without a
 * fence (dl__shm_fence): 3 on 2 cores gained the most (docs/benchmarks.md). */
#define FENCE_CORES      8
#define COLL_CTX_BIT     0x80000000u /* collectives' context ids, apart from p2p */
#define DEFAULT_ARENA_MB 1024

typedef struct builtin_work builtin_work_t;

typedef struct {
    dl_link_t *link;
    /* The link's arena and interrupt count, read on every call without a
     * call into the transport (dl__link_arena, dl__link_interrupts). */
    const dl_arena_t *arena;
    const _Atomic uint32_t *interrupts;
    bool oversubscribed; /* more busy threads on this host than cores: spin less */
    dl_bind_t bind;      /* this rank's core, while the world lives (DISTLAB_BIND) */
    /* The part of a finished work kept for the next: a small collective
     * should not pay calloc and free for it on every call. */
    builtin_work_t *spare;
} builtin_world_t;

/* A built schedule shared by the calls that need the same one: building
 * it again for every call would dominate small collectives. */
typedef struct {
    dl_sched_t *s;
    dl_exec_plan_t *plan; /* this rank's part of s */
    dl_coll_args_t key;   /* the call's args (splits NULL: uneven calls are not cached) */
    dl_dtype_t dtype;     /* the call's (its size would do, but needs a look-up) */
    size_t in_n, out_n;   /* this rank's input and output, bytes (dl_sched_buf_count) */
    char algo[32];        /* "" for the default */
    int refs;             /* the cache's own reference plus one per running work */
    /* A small schedule's scratch, kept for the next call: the arena's
     * allocator would cost a small collective more than its messages. One
     * call at a time uses it (tmp_busy); a concurrent one allocates. */
    void *tmp;
    size_t tmp_bytes;
    dl_allocator_t *tmp_alloc;
    bool tmp_busy;
} sched_ref_t;

/* Scratch up to this size stays with its schedule between calls. */
#define TMP_KEEP_MAX (64 * 1024)

/* Per communicator: the most recent schedule of each collective. */
typedef struct {
    sched_ref_t *cache[DL_COLL__COUNT];
} builtin_comm_t;

typedef enum { BW_SEND, BW_RECV, BW_COLL } bw_kind_t;

/* bwork_new sets a reused one field by field, only what is read before it
 * is written: a new field must be considered there. */
struct builtin_work {
    bw_kind_t kind;
    /* p2p */
    dl_link_send_t send;
    int peer; /* world rank, or -1 for any source */
    int tag;
    void *dst;
    size_t nbytes;
    /* collectives */
    sched_ref_t *sched;
    void *tmp;
    size_t tmp_bytes;
    bool posted;
    uint32_t gen; /* the link's interrupt count when the work started */
    /* A tensor list's buffers, the segments of a schedule buffer. */
    void **seg_ptrs;
    void *seg_ptrs_inline[8];
    dl_exec_t exec; /* set by dl__exec_init */
    /* A collective kept prepared (see park): parkable, it ran on the
     * caller's buffers as they lie; parked, it ended and waits as the
     * world's spare, with what a call must match to run it again. */
    bool parkable, parked;
    struct {
        dl_comm_t *comm;
        void *in, *out;
        int list; /* the buffer that is a tensor list (its segments in seg_ptrs), or -1 */
        dl_step_hook_t hook;
        void *hook_arg;
        bool hook_quick;
    } park;
};

static builtin_world_t *bworld(dl_comm_t *comm)
{
    return comm->world->backend;
}

/* ---- set-up ---- */

void dl_comm_prepare_process(void)
{
    int fence;
    char why[256];
    if (dl_comm_env_shm_fence(&fence, why, sizeof(why)) == DL_OK && fence != 1)
        dl__link_register_barrier();
}

static dl_status_t builtin_init(dl_comm_t *world)
{
    dl_world_t *w = world->world;
    dl_status_t st;
    int copy_medium; /* dl__shm_copy_medium: -1 where ranks outnumber cores */
    int fence;       /* DISTLAB_SHM_FENCE: -1 auto, 1 always */
    int bind;        /* DISTLAB_BIND: -1 auto, 1 core, 0 none */
    int shm;         /* DISTLAB_TRANSPORT: -1 auto, 1 shm, 0 tcp */
    char why[256];
    if ((st = dl_comm_env_shm_copy(&copy_medium, why, sizeof(why))) != DL_OK ||
        (st = dl_comm_env_shm_fence(&fence, why, sizeof(why))) != DL_OK ||
        (st = dl_comm_env_bind(&bind, why, sizeof(why))) != DL_OK ||
        (st = dl_comm_env_transport(&shm, why, sizeof(why))) != DL_OK) {
        dl__comm_fail(world, st, "%s", why);
        return st;
    }
    builtin_world_t *bw = calloc(1, sizeof(*bw));
    if (bw == NULL)
        return DL_ERR_NOMEM;
    size_t arena_mb = DEFAULT_ARENA_MB;
    const char *env = getenv("DISTLAB_ARENA_MB");
    if (env != NULL && atol(env) > 0)
        arena_mb = (size_t)atol(env) < ((size_t)1 << 26) ? (size_t)atol(env) : ((size_t)1 << 26);
    /* Every rank learns where the others are: the same host means shared
     * memory, another host TCP (or DISTLAB_TRANSPORT decides). */
    char err[512] = "";
    double timeout_ms = world->timeout_s * 1e3;
    if ((st = dl__link_open(w->store, w->prefix, w->rank, w->size, arena_mb << 20, shm,
                            timeout_ms < 2e9 ? (int)timeout_ms : 2000000000, err, sizeof(err),
                            &bw->link)) != DL_OK) {
        if (err[0] != '\0')
            dl__comm_fail(world, st, "%s", err);
        free(bw);
        return st;
    }
    /* A TCP world runs an I/O thread beside each rank: both want a core.
     * The cores are those this rank may run on (taskset, a cpuset). */
    long cores = dl__bind_cpus();
    int ranks = dl__link_host_ranks(bw->link);
    long threads = (long)ranks * (dl__link_uses_tcp(bw->link) ? 2 : 1);
    bw->oversubscribed = cores > 0 && threads > cores;
    /* Bound where the ranks fit the cores, as mpirun binds, and where they
     * split evenly over them, where mpirun leaves them free: two a core,
     * each core keeps the same pair, and small collectives and the
     * all-reduce floor gain while a large gather loses (docs/benchmarks.md,
     * "Ranks bound to cores"). An uneven split is left to the kernel. */
    bool even = cores > 0 && ranks % cores == 0;
    if (bind == 1 || (bind < 0 && threads > 1 && (!bw->oversubscribed || even)))
        dl__bind_core(&bw->bind, dl__bind_place(dl__link_host_index(bw->link), ranks, (int)cores));
    dl__link_copy_medium(bw->link, copy_medium < 0 ? bw->oversubscribed : copy_medium == 1);
    /* A rank that arms runs membarrier's barrier, which interrupts every
     * CPU running a registered process and which the kernel serialises:
     * cheap where arming is rare (a core per rank: after 50 us of spinning)
     * or the host small, but not measured where many ranks share a large
     * host and arm at nearly every wait. There the fence stays. */
    dl__link_shm_fence(bw->link, fence == 1 || (bw->oversubscribed && cores > FENCE_CORES));
    bw->arena = dl__link_arena(bw->link);
    bw->interrupts = dl__link_interrupts(bw->link);
    w->down = dl__link_down_word(bw->link);
    if ((world->backend = calloc(1, sizeof(builtin_comm_t))) == NULL) {
        dl__link_close(bw->link);
        dl__bind_undo(&bw->bind);
        free(bw);
        return DL_ERR_NOMEM;
    }
    w->backend = bw;
    return DL_OK;
}

static void sched_unref(sched_ref_t *ref)
{
    if (ref != NULL && --ref->refs == 0) {
        if (ref->tmp != NULL)
            ref->tmp_alloc->free(ref->tmp_alloc, ref->tmp, ref->tmp_bytes);
        dl__exec_plan_free(ref->plan);
        dl_sched_free(ref->s);
        free(ref);
    }
}

/* ---- a collective kept prepared ----
 *
 * A collective's work stays prepared when it ends (parked, as the world's
 * spare): a call with the same schedule, buffers and step hook runs it
 * again from its first step (dl__exec_rearm) rather than preparing it
 * anew, as a loop of small collectives would on every call (a sixth of
 * the instructions of an 8-byte scatter at np=2). Only a collective that
 * ran on the caller's buffers as they lie is kept: one that copied into
 * the arena or will copy out must do so again. */

/* What a collective's work holds at its end: its executor, scratch and
 * schedule. */
static void coll_release(builtin_world_t *world, builtin_work_t *bw)
{
    dl__exec_fini(&bw->exec);
    if (bw->tmp != NULL && bw->tmp == bw->sched->tmp) {
        bw->sched->tmp_busy = false;
    } else if (bw->tmp != NULL) {
        dl_allocator_t *a = dl__link_allocator(world->link);
        a->free(a, bw->tmp, bw->tmp_bytes);
    }
    sched_unref(bw->sched);
    bw->sched = NULL;
    if (bw->seg_ptrs != bw->seg_ptrs_inline)
        free(bw->seg_ptrs);
    bw->seg_ptrs = bw->seg_ptrs_inline;
}

/* The world's spare, prepared no more (when comm is NULL or its own). */
static void unpark(builtin_world_t *world, const dl_comm_t *comm)
{
    builtin_work_t *p = world->spare;
    if (p != NULL && p->parked && (comm == NULL || p->park.comm == comm)) {
        coll_release(world, p);
        p->parked = false;
    }
}

static dl_status_t builtin_new_group(dl_comm_t *parent, dl_comm_t *group)
{
    (void)parent;
    /* Groups share the world's segment; the context id keeps them apart. */
    group->backend = calloc(1, sizeof(builtin_comm_t));
    return group->backend != NULL ? DL_OK : DL_ERR_NOMEM;
}

static void builtin_destroy(dl_comm_t *comm)
{
    builtin_comm_t *bc = comm->backend;
    if (comm->world->backend != NULL)
        unpark(bworld(comm), comm);
    if (bc != NULL) {
        for (int c = 0; c < DL_COLL__COUNT; c++)
            sched_unref(bc->cache[c]);
        free(bc);
        comm->backend = NULL;
    }
    if (!comm->is_world || comm->world->backend == NULL)
        return;
    builtin_world_t *bw = bworld(comm);
    unpark(bw, NULL); /* a group's, left by one not destroyed */
    dl__link_close(bw->link);
    dl__bind_undo(&bw->bind);
    free(bw->spare);
    free(bw);
    comm->world->backend = NULL;
}

static void builtin_abort(dl_comm_t *comm, const char *why)
{
    dl__link_abort(bworld(comm)->link, comm->world->rank, why);
}

static dl_allocator_t *builtin_allocator(dl_comm_t *comm)
{
    return dl__link_allocator(bworld(comm)->link);
}

static void builtin_pin_staging(dl_comm_t *comm, const void *ptr, size_t n)
{
    dl__link_pin_arena(bworld(comm)->link, ptr, n);
}

/* arena_view's copy, out of line: a program that allocates its tensors
 * with dl_comm_allocator never needs it. */
static dl_status_t __attribute__((noinline))
arena_copy(dl_comm_t *comm, dl_work_t *w, const void *data, size_t n, void **view_p)
{
    dl_allocator_t *a = dl__link_allocator(bworld(comm)->link);
    void *p = a->alloc(a, n);
    if (p == NULL)
        return DL_ERR_NOMEM;
    memcpy(p, data, n);
    dl_status_t st = dl__work_own(w, a, p, n);
    if (st != DL_OK) {
        a->free(a, p, n);
        return st;
    }
    *view_p = p;
    return DL_OK;
}

/* Copies data into the arena when it lives elsewhere, so peers can read it. */
static inline dl_status_t arena_view(dl_comm_t *comm, dl_work_t *w, const void *data, size_t n,
                                     void **view_p)
{
    if (n == 0 || dl__arena_owns(bworld(comm)->arena, data, n)) {
        *view_p = (void *)data;
        return DL_OK;
    }
    return arena_copy(comm, w, data, n, view_p);
}

/* ---- point to point ---- */

static builtin_work_t *bwork_new(dl_work_t *w, bw_kind_t kind)
{
    builtin_world_t *world = bworld(w->comm);
    unpark(world, NULL);
    builtin_work_t *bw = world->spare;
    if (bw != NULL)
        world->spare = NULL;
    else if ((bw = calloc(1, sizeof(*bw))) == NULL)
        return NULL;
    /* Field by field, and only what this kind reads before it writes it
     * (builtin_work_fini included): this runs for every call. exec is as
     * dl__exec_fini left it, or zero, which dl__exec_fini reads alike. */
    bw->kind = kind;
    if (kind == BW_COLL) {
        bw->sched = NULL;
        bw->tmp = NULL;
        bw->seg_ptrs = bw->seg_ptrs_inline;
    } else {
        bw->send = (dl_link_send_t){0};
        bw->posted = false;
    }
    bw->gen = atomic_load(world->interrupts);
    w->backend = bw;
    return bw;
}

static dl_status_t builtin_isend(dl_comm_t *comm, const void *data, size_t nbytes, int dst, int tag,
                                 dl_work_t *w)
{
    builtin_work_t *bw = bwork_new(w, BW_SEND);
    if (bw == NULL)
        return DL_ERR_NOMEM;
    void *view = NULL;
    dl_status_t st = arena_view(comm, w, data, nbytes, &view);
    if (st != DL_OK)
        return st;
    bw->dst = view;
    bw->nbytes = nbytes;
    bw->peer = comm->world_ranks[dst];
    bw->tag = tag;
    return DL_OK;
}

static dl_status_t builtin_irecv(dl_comm_t *comm, void *data, size_t nbytes, int src, int tag,
                                 dl_work_t *w)
{
    builtin_work_t *bw = bwork_new(w, BW_RECV);
    if (bw == NULL)
        return DL_ERR_NOMEM;
    bw->dst = data;
    bw->nbytes = nbytes;
    bw->peer = src == DL_ANY_SOURCE ? -1 : comm->world_ranks[src];
    bw->tag = tag;
    return DL_OK;
}

typedef struct {
    dl_work_t *w;
    builtin_work_t *bw;
} recv_arg_t;

static dl_status_t recv_consume(void *arg, const void *remote, size_t n)
{
    recv_arg_t *ra = arg;
    if (n != ra->bw->nbytes) {
        snprintf(ra->w->comm->last_error, sizeof(ra->w->comm->last_error),
                 "%s: the message has %zu bytes, the tensor %zu", ra->w->what, n, ra->bw->nbytes);
        return DL_ERR_MISMATCH;
    }
    if (n > 0)
        memcpy(ra->bw->dst, remote, n);
    return DL_OK;
}

static int group_rank_of(const dl_comm_t *comm, int world_rank)
{
    for (int i = 0; i < comm->size; i++)
        if (comm->world_ranks[i] == world_rank)
            return i;
    return -1;
}

/* ---- collectives ---- */

static bool same_call(const sched_ref_t *ref, const dl_coll_call_t *call)
{
    const dl_coll_args_t *a = &ref->key, *b = &call->args;
    return ref->dtype == call->dtype && a->nranks == b->nranks && a->root == b->root &&
           a->count == b->count && a->op == b->op &&
           (call->algo == NULL ? ref->algo[0] == '\0' : strcmp(ref->algo, call->algo) == 0);
}

/* Whether the parked p runs call: the same schedule (a call with splits
 * has one of its own), buffers and step hook. */
static bool park_fits(const builtin_work_t *p, dl_comm_t *comm, const dl_coll_call_t *call)
{
    const dl_world_t *world = comm->world;
    if (p->park.comm != comm || p->park.in != call->in || p->park.out != call->out ||
        p->park.hook != world->step_hook || p->park.hook_arg != world->step_hook_arg ||
        p->park.hook_quick != world->step_hook_quick || call->args.splits != NULL ||
        p->sched->key.coll != call->args.coll || !same_call(p->sched, call))
        return false;
    void *const *list = call->in_list != NULL ? call->in_list : call->out_list;
    int lb = call->in_list != NULL ? DL_BUF_IN : call->out_list != NULL ? DL_BUF_OUT : -1;
    if (lb != p->park.list)
        return false;
    for (int i = 0; lb >= 0 && i < comm->size; i++)
        if (p->seg_ptrs[i] != list[i])
            return false;
    return true;
}

/* The schedule for call: the cached one when it matches, else a new one. */
static dl_status_t get_sched(dl_comm_t *comm, const dl_coll_call_t *call, sched_ref_t **ref_p)
{
    builtin_comm_t *bc = comm->backend;
    sched_ref_t **slot = &bc->cache[call->args.coll];
    if (*slot != NULL && call->args.splits == NULL && same_call(*slot, call)) {
        (*slot)->refs++;
        *ref_p = *slot;
        return DL_OK;
    }
    sched_ref_t *ref = calloc(1, sizeof(*ref));
    if (ref == NULL)
        return DL_ERR_NOMEM;
    size_t esz = dl_dtype_size(call->dtype);
    dl_status_t st = dl_sched_build_on(call->algo, &call->args, esz,
                                       dl__link_uses_tcp(bworld(comm)->link), &ref->s);
    if (st != DL_OK) {
        free(ref);
        return st;
    }
    if ((ref->plan = dl__exec_plan_new(ref->s, comm->rank)) == NULL) {
        dl_sched_free(ref->s);
        free(ref);
        return DL_ERR_NOMEM;
    }
    ref->key = call->args;
    ref->key.splits = NULL;
    ref->dtype = call->dtype;
    ref->in_n = dl_sched_buf_count(ref->s, comm->rank, DL_BUF_IN) * esz;
    ref->out_n = dl_sched_buf_count(ref->s, comm->rank, DL_BUF_OUT) * esz;
    snprintf(ref->algo, sizeof(ref->algo), "%s", call->algo != NULL ? call->algo : "");
    ref->refs = 1;
    if (call->args.splits == NULL) {
        sched_unref(*slot);
        *slot = ref;
        ref->refs++;
    }
    *ref_p = ref;
    return DL_OK;
}

static bool overlap(const void *a, size_t an, const void *b, size_t bn)
{
    const uint8_t *pa = a, *pb = b;
    return an > 0 && bn > 0 && pa < pb + bn && pb < pa + an;
}

/* A tensor list (the call's in_list or out_list, nranks buffers of
 * seg_bytes) as a schedule buffer: its tensors where they lie, as the
 * segments of the buffer (*segs_p), so that the messages of the root of a
 * gather or scatter are written into them and read from them in place,
 * and no copy of the whole list is made (a list adjacent in one block
 * already comes as one buffer, core/comm/api.c). Or one block (*buf_p):
 * where this rank would send a message across two of them (a tree's root
 * sends a subtree's blocks together) or they overlap the call's other
 * buffer (other, other_n bytes), a copy of the list, made now (input) or
 * copied out at completion (output). A tensor outside the arena is viewed
 * as arena_view views one. */
static dl_status_t list_buf(dl_comm_t *comm, dl_work_t *w, const dl_exec_plan_t *plan,
                            void *const *list, bool output, dl_buf_t b, size_t seg_bytes,
                            const void *other, size_t other_n, void **buf_p, dl_segs_t *segs_p)
{
    builtin_work_t *bw = w->backend;
    int n = comm->size;
    bool stage = dl__exec_plan_sends_span(plan, b, seg_bytes / plan->s->elem_size);
    for (int i = 0; i < n && !stage; i++)
        stage = overlap(list[i], seg_bytes, other, other_n);
    if (stage) {
        dl_allocator_t *a = dl__link_allocator(bworld(comm)->link);
        size_t all = seg_bytes * (size_t)n;
        uint8_t *p = a->alloc(a, all);
        if (p == NULL)
            return DL_ERR_NOMEM;
        dl_status_t st = dl__work_own(w, a, p, all);
        if (st != DL_OK) {
            a->free(a, p, all);
            return st;
        }
        for (int i = 0; i < n && st == DL_OK; i++) {
            if (output)
                st = dl__work_copyout(w, list[i], p + seg_bytes * (size_t)i, seg_bytes);
            else
                memcpy(p + seg_bytes * (size_t)i, list[i], seg_bytes);
        }
        *buf_p = p;
        return st;
    }
    bw->seg_ptrs = bw->seg_ptrs_inline;
    size_t nseg = (unsigned)n; /* through unsigned: the compiler sees it cannot be negative */
    if (nseg > sizeof(bw->seg_ptrs_inline) / sizeof(bw->seg_ptrs_inline[0]) &&
        (bw->seg_ptrs = malloc(nseg * sizeof(*bw->seg_ptrs))) == NULL)
        return DL_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        dl_status_t st = arena_view(comm, w, list[i], seg_bytes, &bw->seg_ptrs[i]);
        if (st == DL_OK && output && bw->seg_ptrs[i] != list[i])
            st = dl__work_copyout(w, list[i], bw->seg_ptrs[i], seg_bytes);
        if (st != DL_OK)
            return st;
    }
    *segs_p = (dl_segs_t){bw->seg_ptrs, n, seg_bytes};
    return DL_OK;
}

/* A collective prepared afresh: its schedule, buffers and executor. */
static dl_status_t __attribute__((noinline))
coll_prepare(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    builtin_work_t *bw = bwork_new(w, BW_COLL);
    if (bw == NULL)
        return DL_ERR_NOMEM;
    bw->parkable = false;
    dl_status_t st = get_sched(comm, call, &bw->sched);
    if (st == DL_OK)
        comm->last_algo = bw->sched->s->algo;
    const dl_algo_t *algo = st == DL_ERR_UNSUPPORTED ? dl_algo_find(call->algo) : NULL;
    if (algo != NULL && algo->build[call->args.coll] != NULL) {
        snprintf(comm->last_error, sizeof(comm->last_error),
                 "algorithm '%s' needs shared memory between every pair of ranks, and this "
                 "world reaches some over TCP",
                 algo->name);
        return st;
    }
    if (st == DL_ERR_NOT_FOUND || st == DL_ERR_UNSUPPORTED) {
        char names[256];
        dl_algo_names_for(call->args.coll, names, sizeof(names));
        /* dl_sched_build has logged it already: only record it. */
        snprintf(comm->last_error, sizeof(comm->last_error), "%s '%s'%s; algorithms for %s: %s",
                 st == DL_ERR_NOT_FOUND ? "unknown algorithm" : "algorithm",
                 call->algo ? call->algo : "",
                 st == DL_ERR_NOT_FOUND ? "" : " does not implement this collective",
                 dl_coll_name(call->args.coll), names);
        return st;
    }
    if (st != DL_OK) {
        dl__comm_fail(comm, st, "%s: cannot build its schedule: %s", w->what, dl_strerror(st));
        return st;
    }
    void *bufs[DL_BUF__COUNT] = {NULL, NULL, NULL};
    const dl_sched_t *s = bw->sched->s;
    size_t esz = s->elem_size;
    size_t in_n = bw->sched->in_n, out_n = bw->sched->out_n;
    /* Only these collectives are in place by definition (coll.h). Another
     * one may be given an input that is the start of its output (rank 0 of
     * an in-place all_gather_into): that is two buffers that overlap. */
    dl_coll_t c = call->args.coll;
    bool in_place = call->out == call->in &&
                    (c == DL_COLL_BROADCAST || c == DL_COLL_REDUCE || c == DL_COLL_ALL_REDUCE);
    /* A tensor list comes with a count of 0 elements only where the
     * tensors are empty: then it is an empty buffer like any other. */
    dl_segs_t segs[DL_BUF__COUNT] = {{NULL, 0, 0}};
    size_t seg_bytes = call->args.count * esz;
    if (call->in_list != NULL && seg_bytes > 0)
        st = list_buf(comm, w, bw->sched->plan, call->in_list, false, DL_BUF_IN, seg_bytes,
                      call->out, out_n, &bufs[DL_BUF_IN], &segs[DL_BUF_IN]);
    else
        st = arena_view(comm, w, call->in, in_n, &bufs[DL_BUF_IN]);
    if (st != DL_OK)
        return st;
    if (call->out_list != NULL && seg_bytes > 0) {
        if ((st = list_buf(comm, w, bw->sched->plan, call->out_list, true, DL_BUF_OUT, seg_bytes,
                           call->in, in_n, &bufs[DL_BUF_OUT], &segs[DL_BUF_OUT])) != DL_OK)
            return st;
    } else if (in_place) {
        bufs[DL_BUF_OUT] = bufs[DL_BUF_IN];
        if (bufs[DL_BUF_IN] != call->in &&
            (st = dl__work_copyout(w, call->in, bufs[DL_BUF_IN], in_n)) != DL_OK)
            return st;
    } else {
        if ((st = arena_view(comm, w, call->out, out_n, &bufs[DL_BUF_OUT])) != DL_OK)
            return st;
        if (bufs[DL_BUF_OUT] != call->out &&
            (st = dl__work_copyout(w, call->out, bufs[DL_BUF_OUT], out_n)) != DL_OK)
            return st;
    }
    if (s->tmp_count > 0) {
        sched_ref_t *ref = bw->sched;
        dl_allocator_t *a = dl__link_allocator(bworld(comm)->link);
        bw->tmp_bytes = s->tmp_count * esz;
        if (ref->tmp != NULL && !ref->tmp_busy) {
            bw->tmp = ref->tmp;
        } else {
            if ((bw->tmp = a->alloc(a, bw->tmp_bytes)) == NULL)
                return DL_ERR_NOMEM;
            if (ref->tmp == NULL && bw->tmp_bytes <= TMP_KEEP_MAX) {
                ref->tmp = bw->tmp;
                ref->tmp_bytes = bw->tmp_bytes;
                ref->tmp_alloc = a;
            }
        }
        ref->tmp_busy |= bw->tmp == ref->tmp;
        bufs[DL_BUF_TMP] = bw->tmp;
    }
    uint32_t ctx = comm->ctx | COLL_CTX_BIT;
    bool segmented = segs[DL_BUF_IN].ptrs != NULL || segs[DL_BUF_OUT].ptrs != NULL;
    if ((st = dl__exec_init(&bw->exec, bw->sched->plan, comm->world_ranks, bworld(comm)->link, ctx,
                            (int64_t)comm->coll_seq, call->dtype, bufs, segmented ? segs : NULL)) !=
        DL_OK)
        return st;
    /* The hook runs around steps: a schedule without any (most collectives
     * of one rank) never calls it. */
    dl_world_t *world = comm->world;
    bw->exec.board = world->step_board;
    if (world->step_hook != NULL && s->n_steps > 0)
        dl__exec_set_hook(&bw->exec, world->step_hook, world->step_hook_arg, world->step_hook_quick,
                          comm->ctx, comm->coll_seq);
    /* A schedule of splits is the call's own: no other call runs it. */
    bw->parkable = w->n_copyouts == 0 && w->owned == NULL && call->args.splits == NULL;
    bw->park.comm = comm;
    bw->park.in = call->in;
    bw->park.out = call->out;
    bw->park.list = segs[DL_BUF_IN].ptrs != NULL    ? DL_BUF_IN
                    : segs[DL_BUF_OUT].ptrs != NULL ? DL_BUF_OUT
                                                    : -1;
    bw->park.hook = world->step_hook;
    bw->park.hook_arg = world->step_hook_arg;
    bw->park.hook_quick = world->step_hook_quick;
    return DL_OK;
}

static dl_status_t builtin_coll(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    builtin_world_t *world = bworld(comm);
    builtin_work_t *p = world->spare;
    if (p == NULL || !p->parked || !park_fits(p, comm, call))
        return coll_prepare(comm, call, w);
    world->spare = NULL;
    p->parked = false;
    p->gen = atomic_load(world->interrupts);
    p->exec.board = comm->world->step_board;
    w->backend = p;
    comm->last_algo = p->sched->s->algo;
    dl__exec_rearm(&p->exec, (int64_t)comm->coll_seq, comm->coll_seq);
    return DL_OK;
}

/* ---- progress and waiting ---- */

/* Point-to-point messages with the same peer and tag must match in the
 * order they were issued (torch's and MPI's rule). Work is progressed one
 * handle at a time, so a newer handle waits while an older one could take
 * the same message: an older send to that peer not yet posted, or an older
 * receive with that tag from an overlapping source. */
static bool held_back(const dl_work_t *w)
{
    const builtin_work_t *bw = w->backend;
    for (const dl_work_t *o = w->comm->world->active; o != NULL && o != w; o = o->next_active) {
        const builtin_work_t *ob = o->backend;
        if (o->done || ob == NULL || ob->kind != bw->kind || o->comm->ctx != w->comm->ctx)
            continue;
        if (bw->kind == BW_SEND && !ob->posted && ob->peer == bw->peer)
            return true;
        if (bw->kind == BW_RECV && ob->tag == bw->tag &&
            (ob->peer == bw->peer || ob->peer < 0 || bw->peer < 0))
            return true;
    }
    return false;
}

/* Records why w failed, naming the step a collective was at. */
static void fail_message(dl_work_t *w, dl_status_t st, const char *why)
{
    builtin_work_t *bw = w->backend;
    char where[128] = "";
    if (bw != NULL && bw->kind == BW_COLL) {
        dl__exec_where(&bw->exec, where, sizeof(where));
        dl__comm_fail(w->comm, st, "%s aborted at %s: %s", w->what, where, why);
    } else {
        dl__comm_fail(w->comm, st, "%s aborted: %s", w->what, why);
    }
}

static dl_status_t builtin_progress(dl_work_t *w)
{
    builtin_work_t *bw = w->backend;
    dl_comm_t *comm = w->comm;
    builtin_world_t *world = bworld(comm);
    dl_link_t *link = world->link;
    dl_status_t st;
    /* Work started before an interrupt fails; the world goes on. */
    if (bw->gen != atomic_load(world->interrupts)) {
        fail_message(w, DL_ERR_ABORTED, DL__INTERRUPTED_WHY);
        return DL_ERR_ABORTED;
    }
    if (bw->kind != BW_COLL && !(bw->kind == BW_SEND && bw->posted) && held_back(w))
        return DL_ERR_AGAIN;
    switch (bw->kind) {
    case BW_SEND:
        if (!bw->posted) {
            st = dl__link_post(link, bw->peer, comm->ctx, bw->tag, bw->dst, bw->nbytes, &bw->send);
            if (st != DL_OK)
                return st;
            bw->posted = true;
        }
        return dl__link_send_done(link, &bw->send) ? DL_OK : DL_ERR_AGAIN;
    case BW_RECV: {
        recv_arg_t ra = {w, bw};
        int src = -1;
        st = dl__link_try_recv(link, bw->peer, comm->ctx, bw->tag, recv_consume, &ra, &src);
        if (st == DL_OK)
            w->source = group_rank_of(comm, src);
        else if (st == DL_ERR_MISMATCH)
            dl_log_error("%s", comm->last_error);
        return st;
    }
    case BW_COLL: {
        char why[256];
        why[0] = '\0'; /* not all 256 bytes: this runs for every progress of every call */
        st = dl__exec_progress(&bw->exec, why, sizeof(why));
        if (st != DL_OK && st != DL_ERR_AGAIN) {
            char where[128];
            dl__exec_where(&bw->exec, where, sizeof(where));
            dl__comm_fail(comm, st, "%s (%s) failed at %s: %s", w->what, bw->sched->s->algo, where,
                          why);
        }
        return st;
    }
    }
    return DL_ERR_INVALID;
}

/* ---- waiting (the loop is core/comm/wait.c) ---- */

static void builtin_wait_plan(dl_comm_t *comm, dl_wait_plan_t *plan)
{
    bool over = bworld(comm)->oversubscribed;
    plan->spin_s = (over ? YIELD_SPIN_NS : SPIN_NS) * 1e-9;
    plan->spin_yield = over;
    plan->check_s = LIVENESS_MS * 1e-3;
}

static uint32_t builtin_wait_moves(dl_comm_t *comm)
{
    return dl__link_moves(bworld(comm)->link);
}

static uint32_t builtin_wait_arm(dl_comm_t *comm)
{
    return dl__link_arm(bworld(comm)->link);
}

static bool builtin_wait_sleep(dl_comm_t *comm, uint32_t seen, int max_ms)
{
    return dl__link_sleep(bworld(comm)->link, seen, max_ms);
}

static void builtin_wait_disarm(dl_comm_t *comm)
{
    dl__link_disarm(bworld(comm)->link);
}

/* After every pass: whether the link failed (a peer aborted the world).
 * Periodically: whether a peer died, which takes the world down. */
static dl_status_t builtin_wait_check(dl_comm_t *comm, bool periodic, char *why, size_t cap)
{
    dl_link_t *link = bworld(comm)->link;
    if (!periodic) {
        const char *reason = NULL;
        dl_status_t failed = dl__link_failed(link, &reason);
        if (failed != DL_OK)
            snprintf(why, cap, "%s", reason != NULL ? reason : dl_strerror(failed));
        return failed;
    }
    int dead = dl__link_find_dead(link, why, cap);
    if (dead < 0)
        return DL_OK;
    dl__link_abort(link, dead, why);
    return DL_ERR_PEER_DEAD;
}

/* Ctrl-C: every rank's work in flight fails, through builtin_progress. */
static void builtin_wait_interrupt(dl_comm_t *comm)
{
    dl__link_interrupt(bworld(comm)->link);
}

static void builtin_wait_give_up(dl_comm_t *comm, dl_work_t *waited, dl_status_t st,
                                 const char *why, double timeout_s)
{
    (void)waited;
    dl_world_t *world = comm->world;
    char msg[200];
    if (st == DL_ERR_TIMEOUT && why == NULL) {
        snprintf(msg, sizeof(msg), "rank %d timed out after %g s", world->rank, timeout_s);
        /* The others would wait for this rank forever: take the world down. */
        dl__link_abort(bworld(comm)->link, world->rank, msg);
        why = msg;
    } else if (why == NULL) {
        why = DL__INTERRUPTED_WHY;
    }
    dl_work_t *next;
    for (dl_work_t *w = world->active; w != NULL; w = next) {
        next = w->next_active;
        fail_message(w, st, why);
        dl__work_finish(w, st);
    }
}

static void builtin_work_fini(dl_work_t *w)
{
    builtin_work_t *bw = w->backend;
    if (bw == NULL)
        return;
    w->backend = NULL;
    builtin_world_t *world = bworld(w->comm);
    if (bw->kind == BW_COLL) {
        if (bw->parkable && w->status == DL_OK) {
            /* Kept prepared, in place of the spare there was. */
            unpark(world, NULL);
            free(world->spare);
            bw->parked = true;
            world->spare = bw;
            return;
        }
        coll_release(world, bw);
    }
    if (world != NULL && world->spare == NULL)
        world->spare = bw;
    else
        free(bw);
}

const dl_backend_ops_t dl__builtin_ops = {
    .name = "builtin",
    /* CUDA tensors are staged through host memory by the comm layer, so
     * that several ranks can share one GPU. */
    .caps = {DL_CAP_ALL, DL_HAVE_CUDA ? DL_CAP_ALL : 0},
    .schedules = true,
    .lists = true,
    .init = builtin_init,
    .new_group = builtin_new_group,
    .destroy = builtin_destroy,
    .abort = builtin_abort,
    .isend = builtin_isend,
    .irecv = builtin_irecv,
    .coll = builtin_coll,
    .progress = builtin_progress,
    .wait_plan = builtin_wait_plan,
    .wait_moves = builtin_wait_moves,
    .wait_arm = builtin_wait_arm,
    .wait_sleep = builtin_wait_sleep,
    .wait_disarm = builtin_wait_disarm,
    .wait_check = builtin_wait_check,
    .wait_interrupt = builtin_wait_interrupt,
    .wait_give_up = builtin_wait_give_up,
    .work_fini = builtin_work_fini,
    .allocator = builtin_allocator,
    .pin_staging = builtin_pin_staging,
};
