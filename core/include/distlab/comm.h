/* The communicator: torch.distributed's process-group API in C.
 *
 * A communicator is (rank, size, group, backend). Point-to-point calls carry
 * a tag; recv can take DL_ANY_SOURCE and reports the sender. Every
 * collective has a blocking form and an async form that returns a work
 * handle (wait/test), like torch's async_op=True. Tensors are used in place
 * where torch uses them in place (broadcast, reduce, all_reduce).
 *
 * Every wait is bounded by the communicator's timeout; a dead peer or an
 * aborted world ends the wait with DL_ERR_PEER_DEAD / DL_ERR_ABORTED and a
 * message (dl_comm_last_error) that names the rank and the step. */
#ifndef DISTLAB_COMM_H
#define DISTLAB_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/coll.h"
#include "distlab/dtype.h"
#include "distlab/sched.h"
#include "distlab/status.h"
#include "distlab/store.h"
#include "distlab/tensor.h"

#define DL_ANY_SOURCE (-1)

typedef struct dl_comm dl_comm_t;
typedef struct dl_work dl_work_t;

/* A buffer that is not one block but n equal segments: a root's tensor
 * list (scatter's input, gather's output), used where its tensors lie
 * instead of being copied into one buffer. Byte k of the buffer is byte
 * k % seg_bytes of segment k / seg_bytes. */
typedef struct {
    void *const *ptrs; /* n segments; NULL: the buffer is not segmented */
    int n;
    size_t seg_bytes;
} dl_segs_t;

/* What a step hook sees: the schedule, the step, and this rank's buffers as
 * they are at that moment (IN, OUT, TMP; sizes from dl_sched_buf_count). */
typedef struct {
    const dl_sched_t *s;
    size_t step;
    bool done;              /* false: about to run the step; true: it has run */
    int rank;               /* this rank in the communicator */
    const int *world_ranks; /* communicator rank -> world rank */
    void *const *bufs;      /* DL_BUF__COUNT base pointers (NULL when unused) */
    /* NULL when every buffer is one block; else DL_BUF__COUNT entries, and
     * a buffer whose segs[b].ptrs is set is segmented (bufs[b] is NULL):
     * dl_step_info_read reads any buffer as one block. */
    const dl_segs_t *segs;
    size_t esz; /* bytes per element */
    /* Which collective it is, as dl_coll_info_t names it: every rank of the
     * group sees the same ctx and seq for the same call. */
    uint32_t ctx;
    uint64_t seq;
    /* The backend runs the collective as one library call (mpi, nccl): s is
     * a schedule of one step without actions, before the call and after it. */
    bool whole;
    /* Where a hook that gives the step up (returns non-zero) may say why,
     * why_cap bytes; left empty, the step was "interrupted". NULL where a
     * hook's return is not heeded. */
    char *why;
    size_t why_cap;
} dl_step_info_t;

/* Copies the first n elements of this rank's buffer b, as a step hook sees
 * it, into dst (n * esz bytes), whether the buffer is one block or
 * segmented. DL_ERR_INVALID when b has no memory here. */
dl_status_t dl_step_info_read(const dl_step_info_t *info, dl_buf_t b, size_t n, void *dst);

/* Where a rank's collectives are, for a thread that watches them (a
 * heartbeat) and that a step hook would cost too much to feed: the executor
 * writes each step it begins here, and a backend without schedules (mpi,
 * nccl) each call, as one step. One writer, the rank's own thread: the
 * count of steps begun, and the last step begun under a sequence count
 * (odd while it changes) that dl_step_board_read reads it whole by. Zeroed
 * before use. */
typedef struct {
    _Atomic uint64_t begun;
    _Atomic uint32_t seq;
    _Atomic int coll, step, n_steps; /* step from 1 */
    _Atomic(const char *) phase;     /* the step's phase, a string that lives on */
    /* The writer's copy of the position, compared without atomics. */
    int last_coll, last_step, last_n_steps;
    const char *last_phase;
} dl_step_board_t;

/* What dl_step_board_read found: n_steps is 0 before the first step. */
typedef struct {
    uint64_t begun;
    int coll, step, n_steps;
    const char *phase;
} dl_step_pos_t;

/* Reads the board whole: false when its writer moved it under every one of
 * a few tries (the caller tries again later). */
bool dl_step_board_read(const dl_step_board_t *board, dl_step_pos_t *pos);

/* Called by the executor before and after every schedule step (builtin
 * backend). It may block (step mode waits for a person): the time spent in it
 * does not count against the communicator's timeout. Returning non-zero
 * aborts the collective with DL_ERR_ABORTED. */
typedef int (*dl_step_hook_t)(void *arg, const dl_step_info_t *info);

/* What a collective is, as every rank of its group must agree on it: the
 * fingerprint torch checks with TORCH_DISTRIBUTED_DEBUG=DETAIL. */
typedef struct {
    uint32_t ctx;           /* the group's context id (0: the world) */
    uint64_t seq;           /* collectives started on this group before this one */
    int rank;               /* this rank in the group */
    int nranks;             /* the group's size */
    const int *world_ranks; /* group rank -> world rank */
    dl_coll_t coll;
    dl_dtype_t dtype;
    size_t count; /* coll.h's count; 0 for barrier and split all_to_all */
    bool split;   /* all_to_all with split sizes: each rank's own, uneven */
    /* with split: the nranks x nranks matrix of coll.h, of which this
     * rank's row (what it sends to each rank) and column (what it expects
     * from each) are filled */
    const size_t *splits;
    int root;   /* -1 when the collective has none */
    dl_op_t op; /* meaningful when dl_coll_has_op */
    bool async;
} dl_coll_info_t;

/* Called before any collective moves data. Returning non-zero refuses it
 * with DL_ERR_MISMATCH and the message written into why. */
typedef int (*dl_coll_hook_t)(void *arg, const dl_coll_info_t *info, char *why, size_t why_cap);

typedef struct {
    const char *backend; /* "builtin" (default) */
    double timeout_s;    /* every wait; default 300 s, or DISTLAB_TIMEOUT */
    size_t arena_bytes;  /* shared arena per rank; default 2 GiB of address space */
} dl_comm_opts_t;

/* Options for one collective call. NULL means defaults. */
typedef struct {
    const char *algo; /* builtin backend: schedule name; NULL = default or dl_comm_set_algo */
    bool async;       /* return a work handle in *work_p instead of waiting */
} dl_coll_opts_t;

/* ---- set-up ---- */

/* From env:// variables: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE. Rank 0 serves the store unless DISTLAB_STORE
 * (host:port of an existing store, e.g. the distlab controller's) is set. */
dl_status_t dl_comm_init_env(const dl_comm_opts_t *opts, dl_comm_t **comm_p);
/* From an existing store client (the communicator takes ownership). */
dl_status_t dl_comm_init_store(dl_store_t *store, int rank, int size, const dl_comm_opts_t *opts,
                               dl_comm_t **comm_p);
/* Subgroup of the given world ranks, with its own rank numbering (index in
 * ranks). Must be called by every rank of comm, in the same order, like
 * torch's new_group. Ranks outside the group get *group_p = NULL. */
dl_status_t dl_comm_new_group(dl_comm_t *comm, const int *ranks, int n, dl_comm_t **group_p);
/* Destroys a communicator (a group or the world; the world last). */
void dl_comm_destroy(dl_comm_t *comm);
/* Marks the world aborted: every rank's pending waits fail fast, and on the
 * builtin backend every later call is refused before it sends anything
 * (mpi and nccl refuse in their own way once a call of theirs failed). */
void dl_comm_abort(dl_comm_t *comm, const char *why);
/* Whether the builtin backend's world was taken down (aborted by a rank, a
 * rank's timeout or a dead rank): every call on it is refused from then
 * on. false on the mpi and nccl backends. */
bool dl_comm_world_down(dl_comm_t *comm);

/* Interrupts this process's current or next wait, like Ctrl-C in a Python
 * training script: async-signal-safe, meant to be called from a signal
 * handler (installed without SA_RESTART, so that a wait asleep on its futex
 * wakes at once; otherwise it notices within 100 ms). The wait then ends
 * every operation in flight on the world, on every rank and every
 * communicator of it, with DL_ERR_ABORTED and the reason "interrupted
 * (Ctrl-C)". Unlike dl_comm_abort, the world stays usable: an interrupt
 * fails only the work started before it, and messages posted before it and
 * not yet received are dropped. Builtin backend. On the mpi backend an
 * interrupted (or timed-out) collective cannot be cancelled: the wait ends
 * the same way, but the world then refuses every call until the ranks are
 * restarted. */
void dl_comm_interrupt_from_signal(void);
/* As dl_comm_interrupt_from_signal, but only this process's operations in
 * flight fail (the peers' go on, and no message is dropped): for a wait
 * that another process has found can never complete (the shell's ledger of
 * sends and receives). Async-signal-safe. */
void dl_comm_cancel_from_signal(void);
/* Forgets an interrupt or a cancel that no wait has taken yet (one that
 * came after the operation it was meant for had ended). */
void dl_comm_interrupt_clear(void);

int dl_comm_rank(const dl_comm_t *comm);
int dl_comm_size(const dl_comm_t *comm);
/* A world rank's rank in comm (torch's get_group_rank), or -1 when it is
 * not one of comm's members; and back (get_global_rank), -1 out of range. */
int dl_comm_group_rank(const dl_comm_t *comm, int world_rank);
int dl_comm_global_rank(const dl_comm_t *comm, int group_rank);
const char *dl_comm_backend(const dl_comm_t *comm);
/* The message of the last failure on this communicator ("" when none). */
const char *dl_comm_last_error(const dl_comm_t *comm);
/* The algorithm whose schedule ran the last collective ("share", "ring"),
 * the default for the call's size and transport included; NULL before the
 * first or where the backend runs a library call (mpi, nccl). */
const char *dl_comm_last_algo(const dl_comm_t *comm);
void dl_comm_set_timeout(dl_comm_t *comm, double timeout_s);
/* DISTLAB_TIMEOUT, the default timeout of every wait: a number of seconds
 * above 0. DL_OK with *timeout_s_p set (0 when the variable is unset or
 * empty), or DL_ERR_INVALID with one line in why (the variable, its value,
 * the form expected) when it is malformed. */
dl_status_t dl_comm_env_timeout(double *timeout_s_p, char *why, size_t cap);
/* The longest timeout any wait takes, in seconds (a day): DISTLAB_TIMEOUT,
 * --timeout and the shell's `set timeout` all stop here, clear of overflow
 * in milliseconds. */
#define DL_MAX_TIMEOUT_S 86400.0
/* DISTLAB_SHM_COPY: whether the builtin engine's shared-memory sends too
 * large for a descriptor but of at most 8 KiB are copied when posted, so
 * that they complete at once, instead of being read in place by the
 * receiver (complete when consumed): `auto` (the default: where a host's
 * ranks outnumber its cores), `on` or `off`. *choice_p gets -1 (auto), 1 or
 * 0; DL_ERR_INVALID with one line in why when the value is none of these. */
dl_status_t dl_comm_env_shm_copy(int *choice_p, char *why, size_t cap);
/* DISTLAB_SHM_FENCE: how the builtin engine's shared-memory sends order a
 * message before they look whether its receiver sleeps: `auto` (the
 * default: with no fence where the kernel has membarrier's expedited
 * global barrier, which a rank then runs each time it arms to sleep,
 * except where a host of more than 8 cores has more ranks than cores) or
 * `always` (a fence on every send). *choice_p gets -1 (auto) or 1;
 * DL_ERR_INVALID with one line in why for any other value. */
dl_status_t dl_comm_env_shm_fence(int *choice_p, char *why, size_t cap);
/* Prepares this process for the builtin engine's shared-memory worlds:
 * call it first thing, while the process has one thread. Such a world
 * registers its process for membarrier's expedited global barrier
 * (DISTLAB_SHM_FENCE, auto), and the kernel makes a process that already
 * has threads (a rank's heartbeat, the store's server) wait an RCU grace
 * period for that, about 10 ms at every rank's start; a process of one
 * thread registers at once, and the world's registration then finds it
 * done. With `auto` the process registers even where its world keeps the
 * fence after all (a large host with more ranks than cores, or another
 * backend): it then only takes other ranks' barriers. Nothing where
 * DISTLAB_SHM_FENCE is `always` (or malformed: the world refuses it) or
 * where the kernel lacks the barrier. */
void dl_comm_prepare_process(void);
/* DISTLAB_BIND: whether the builtin engine binds each rank to one core for
 * the world's life (the n-th rank of a host to the n-th CPU it may run on
 * where they fit, else in blocks of consecutive ranks: 4 on 2 CPUs, ranks
 * 0 and 1 on the first): `auto` (the default: where a host's ranks, and
 * their I/O threads, fit its cores, as mpirun binds, or where the ranks
 * split evenly over the cores), `core` (always) or `none`. What is bound
 * is the thread that creates the world (a rank's I/O thread, started
 * before, stays free). *choice_p gets -1 (auto), 1 or 0; DL_ERR_INVALID
 * with one line in why when the value is none of these. */
dl_status_t dl_comm_env_bind(int *choice_p, char *why, size_t cap);
/* DISTLAB_TRANSPORT, the builtin engine's data transport: `auto` (the
 * default), `shm` or `tcp`. *choice_p gets -1 (auto), 1 (shm) or 0 (tcp);
 * DL_ERR_INVALID with one line in why when the value is none of these. */
dl_status_t dl_comm_env_transport(int *choice_p, char *why, size_t cap);
/* Overrides the algorithm of a collective (NULL restores the default). */
dl_status_t dl_comm_set_algo(dl_comm_t *comm, dl_coll_t c, const char *algo);
/* Called before and after each schedule step (builtin backend), or before
 * and after each collective call on a backend without schedules (mpi, nccl:
 * info->whole), for every communicator of comm's world, groups included. */
void dl_comm_set_step_hook(dl_comm_t *comm, dl_step_hook_t hook, void *arg);
/* As dl_comm_set_step_hook, for a hook that returns at once (it never waits
 * for a person) and wants to know where the rank is, not what a step did:
 * it is called before each step only (never with info->done), and no clock
 * is read around it, as its time is the collective's. Four coarse clock
 * reads a step cost a small collective a tenth of its time, and a second
 * call a twentieth (docs/benchmarks.md). */
void dl_comm_set_quick_step_hook(dl_comm_t *comm, dl_step_hook_t hook, void *arg);
/* Keeps board up to date for every communicator of comm's world (NULL:
 * none), with no call on any step. */
void dl_comm_set_step_board(dl_comm_t *comm, dl_step_board_t *board);
/* Called before every collective of comm's world (groups included). */
void dl_comm_set_coll_hook(dl_comm_t *comm, dl_coll_hook_t hook, void *arg);
/* Allocator whose memory lives in this rank's shared arena: tensors from it
 * are read by local peers directly (zero copy). Tensors from elsewhere work
 * too, staged through the arena. */
dl_allocator_t *dl_comm_allocator(dl_comm_t *comm);

/* ---- point to point ---- */

dl_status_t dl_comm_send(dl_comm_t *comm, const dl_tensor_t *t, int dst, int tag);
/* src may be DL_ANY_SOURCE; *src_p (may be NULL) receives the sender. */
dl_status_t dl_comm_recv(dl_comm_t *comm, dl_tensor_t *t, int src, int tag, int *src_p);
dl_status_t dl_comm_isend(dl_comm_t *comm, const dl_tensor_t *t, int dst, int tag,
                          dl_work_t **work_p);
dl_status_t dl_comm_irecv(dl_comm_t *comm, dl_tensor_t *t, int src, int tag, dl_work_t **work_p);

/* ---- collectives (work_p is used only with opts->async) ---- */

dl_status_t dl_comm_broadcast(dl_comm_t *comm, dl_tensor_t *t, int src, const dl_coll_opts_t *o,
                              dl_work_t **work_p);
/* list: on src, nranks tensors shaped like out (ignored elsewhere). */
dl_status_t dl_comm_scatter(dl_comm_t *comm, dl_tensor_t *out, dl_tensor_t *const *list, int src,
                            const dl_coll_opts_t *o, dl_work_t **work_p);
/* list: on dst, nranks tensors shaped like t (ignored elsewhere). */
dl_status_t dl_comm_gather(dl_comm_t *comm, const dl_tensor_t *t, dl_tensor_t *const *list, int dst,
                           const dl_coll_opts_t *o, dl_work_t **work_p);
dl_status_t dl_comm_reduce(dl_comm_t *comm, dl_tensor_t *t, int dst, dl_op_t op,
                           const dl_coll_opts_t *o, dl_work_t **work_p);
/* list: nranks tensors shaped like t. */
dl_status_t dl_comm_all_gather(dl_comm_t *comm, dl_tensor_t *const *list, const dl_tensor_t *t,
                               const dl_coll_opts_t *o, dl_work_t **work_p);
/* out: nranks times t's elements (torch's all_gather_into_tensor). */
dl_status_t dl_comm_all_gather_into(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *t,
                                    const dl_coll_opts_t *o, dl_work_t **work_p);
dl_status_t dl_comm_all_reduce(dl_comm_t *comm, dl_tensor_t *t, dl_op_t op, const dl_coll_opts_t *o,
                               dl_work_t **work_p);
/* in: nranks times out's elements (torch's reduce_scatter_tensor). */
dl_status_t dl_comm_reduce_scatter(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *in,
                                   dl_op_t op, const dl_coll_opts_t *o, dl_work_t **work_p);
/* torch's all_to_all_single: in and out 1-D views; splits NULL means equal
 * chunks, else in_splits[j] elements go to rank j and out_splits[i] come
 * from rank i. */
dl_status_t dl_comm_all_to_all(dl_comm_t *comm, dl_tensor_t *out, const dl_tensor_t *in,
                               const size_t *out_splits, const size_t *in_splits,
                               const dl_coll_opts_t *o, dl_work_t **work_p);
dl_status_t dl_comm_barrier(dl_comm_t *comm, const dl_coll_opts_t *o, dl_work_t **work_p);

/* ---- work handles ---- */

/* Waits until done or timeout_s (negative: the communicator's timeout). */
dl_status_t dl_work_wait(dl_work_t *w, double timeout_s);
/* Advances the work without blocking: true when it has finished (then
 * dl_work_status says how). */
bool dl_work_test(dl_work_t *w);
/* How the work ended, or DL_ERR_AGAIN while it is still in flight. */
dl_status_t dl_work_status(const dl_work_t *w);
/* For a receive: the sender's rank. */
int dl_work_source(const dl_work_t *w);
/* Frees a finished work; an unfinished one is waited for first. */
void dl_work_free(dl_work_t *w);
/* A handle that has already finished, with status st: for a caller that
 * ran a call to its end where its user asked for a handle (async_op=True
 * on a call made whole). NULL without memory. */
dl_work_t *dl_work_finished(dl_comm_t *comm, dl_status_t st);

#endif
