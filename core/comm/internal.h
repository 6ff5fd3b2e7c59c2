/* The communicator's private structures, shared by the comm layer and the
 * backends. */
#ifndef DL_COMM_INTERNAL_H
#define DL_COMM_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "distlab/comm.h"
#include "exec/board.h"

typedef struct dl_whole_step dl_whole_step_t;

/* What every communicator of one process shares. */
typedef struct {
    int rank, size;
    dl_store_t *store;
    dl_store_server_t *store_srv; /* when this rank serves the store */
    char prefix[64];              /* store key prefix of this world */
    uint32_t next_ctx;            /* the next group's context id */
    void *backend;                /* the backend's world state */
    dl_work_t *active;            /* pending work, progressed by every wait */
    dl_step_hook_t step_hook;     /* see dl_comm_set_step_hook */
    void *step_hook_arg;
    bool step_hook_quick;        /* see dl_comm_set_quick_step_hook */
    dl_step_board_t *step_board; /* see dl_comm_set_step_board */
    dl_coll_hook_t coll_hook;    /* see dl_comm_set_coll_hook */
    void *coll_hook_arg;
    /* One work and one whole step kept from the last blocking collective
     * for the next, so that a stream of small ones does not allocate. */
    dl_work_t *spare_work;
    dl_whole_step_t *spare_whole;
    /* The backend's own call per collective (dl_backend_call_name), looked
     * up once for the step hook's whole steps; NULL: none (builtin). */
    const char *const *call_names;
    /* Set by a backend's init where one word tells whether the world is
     * whole: while it reads zero, wait_check (not periodic) would say DL_OK,
     * so a new call reads it instead (dl__comm_world_failed costs a small
     * collective a tenth of its time). NULL: every call asks wait_check. */
    const _Atomic uint32_t *down;
} dl_world_t;

struct dl_comm {
    dl_world_t *world;
    bool is_world;
    int rank, size;
    int *world_ranks; /* group rank -> world rank */
    uint32_t ctx;     /* context id: keeps groups' messages apart */
    uint64_t coll_seq;
    double timeout_s;
    const dl_backend_ops_t *ops;
    uint32_t op_checked; /* the (op, dtype) that passed check_op last, plus 1; 0: none */
    void *backend;       /* the backend's per-communicator state */
    char *algo[DL_COLL__COUNT];
    const char *last_algo; /* the schedule's algorithm of the last collective (static), or NULL */
    char last_error[512];
};

/* A staged result: n bytes from src into the user's dst at completion.
 * Either side may be GPU memory (a cuda tensor staged through the host, or
 * a tensor list staged on the GPU); the copy then goes through CUDA. */
typedef struct {
    void *dst;
    dl_device_t dst_dev;
    const void *src;
    dl_device_t src_dev;
    size_t n;
} dl_copyout_t;

typedef struct {
    dl_allocator_t *alloc;
    void *ptr;
    size_t n;
} dl_owned_t;

struct dl_work {
    dl_comm_t *comm;
    bool done;
    dl_status_t status;
    int source;             /* receives: the sender's group rank */
    const char *what;       /* "all_reduce", "recv from rank 2", for messages */
    char name[96];          /* what, when the work has a name of its own */
    void *backend;          /* the backend's part */
    dl_copyout_t *copyouts; /* done at completion: staged results to the user's tensors */
    size_t n_copyouts;
    dl_owned_t *owned; /* freed at completion */
    size_t n_owned;
    dl_work_t *next_active;
    dl_whole_step_t *whole; /* step mode on a backend without schedules */
};

/* Formats comm->last_error and logs it once. */
void dl__comm_fail(dl_comm_t *comm, dl_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* what names the work in messages: a string that outlives it (a literal),
 * kept as it is, since this runs for every call; dl__work_name gives a
 * work a name of its own. */
dl_work_t *dl__work_new(dl_comm_t *comm, const char *what);
/* Gives w a copy of what (cut to fit) as its name. */
void dl__work_name(dl_work_t *w, const char *what);
/* Frees a finished work that was never handed out (a synchronous call's),
 * or keeps it as the world's spare for the next dl__work_new. */
void dl__work_recycle(dl_work_t *w);
/* What a blocking call does with its own work once it has waited: settles
 * it as dl_work_free does, keeps it as the world's spare instead of
 * freeing it (a malloc and a free are a quarter of a small call's
 * instructions), and returns how it ended. Only while the communicator
 * lives: a user's work may outlive it, so dl_work_free frees. */
dl_status_t dl__work_drop(dl_work_t *w);
/* Frees the world's spares (at its end). */
void dl__world_free_spares(dl_world_t *world);
/* Registers a copy-out, host memory to host memory. Copy-outs run at
 * completion in the reverse order of registration, so that a layer's copy
 * (the backend's, registered last: its buffer into the comm layer's staging
 * buffer) runs before the copy of the layer above it (staging buffer into
 * the user's tensor). */
dl_status_t dl__work_copyout(dl_work_t *w, void *dst, const void *src, size_t n);
/* The same between any devices (dl_cuda_copy). */
dl_status_t dl__work_copyout_dev(dl_work_t *w, void *dst, dl_device_t dst_dev, const void *src,
                                 dl_device_t src_dev, size_t n);
dl_status_t dl__work_own(dl_work_t *w, dl_allocator_t *a, void *ptr, size_t n);
/* Marks w finished with st; on success performs its copy-outs (a failed
 * copy fails w, with the reason in the communicator's last error). Frees
 * what it owns. */
void dl__work_finish(dl_work_t *w, dl_status_t st);
void dl__world_add_active(dl_world_t *world, dl_work_t *w);

/* The one wait loop (core/comm/wait.c): blocks until w is done or
 * timeout_s passes, progressing every pending work of the process. */
dl_status_t dl__comm_wait(dl_work_t *w, double timeout_s);

/* Step mode on backends without schedules (core/comm/whole_step.c): the
 * step hook before the call (non-zero refuses it), and after it ends. The
 * checks are inline: most calls have no such hook, and pay no call. */
dl_status_t dl__whole_step_begin_slow(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w);
void dl__whole_step_end_slow(dl_work_t *w, dl_status_t st);

/* The phase a whole call is shown as. */
extern const char dl__whole_step_phase[];

static inline dl_status_t dl__whole_step_begin(dl_comm_t *comm, const dl_coll_call_t *call,
                                               dl_work_t *w)
{
    if (comm->ops->schedules)
        return DL_OK;
    dl_world_t *world = comm->world;
    if (world->step_board != NULL)
        dl__step_board_note(world->step_board, (int)call->args.coll, 1, 1, dl__whole_step_phase);
    if (world->step_hook == NULL)
        return DL_OK;
    return dl__whole_step_begin_slow(comm, call, w);
}

static inline void dl__whole_step_end(dl_work_t *w, dl_status_t st)
{
    if (w->whole != NULL)
        dl__whole_step_end_slow(w, st);
}

/* Whether dl_comm_interrupt_from_signal was called since the last take or
 * clear; taking it clears it. For the wait loop. */
bool dl__comm_interrupt_take(void);
/* DL_OK, or how the world was taken down (dl_comm_world_down), with its
 * reason in why ("" when the backend gives none): the backend's check, as
 * a wait makes it after every pass. */
dl_status_t dl__comm_world_failed(dl_comm_t *comm, char *why, size_t cap);
/* What was taken: 0 (nothing), DL__INTERRUPT (dl_comm_interrupt_from_signal:
 * the work in flight on the whole world fails) or DL__CANCEL
 * (dl_comm_cancel_from_signal: only this process's). */
enum { DL__INTERRUPT = 1, DL__CANCEL = 2 };
int dl__comm_interrupt_take_kind(void);
/* Whether it was called, without taking it: one load, for fast paths. */
bool dl__comm_interrupt_pending(void);
/* The reason an interrupted work fails with. */
#define DL__INTERRUPTED_WHY "interrupted (Ctrl-C)"

#endif
