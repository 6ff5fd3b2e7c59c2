/* A backend fills one ops table and registers by name. The communicator
 * layer turns torch-style calls (tensor lists, in-place tensors) into
 * normalised calls on contiguous buffers; a backend moves the bytes. */
#ifndef DL_BACKEND_H
#define DL_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "distlab/comm.h"
#include "dl_config.h"

/* One collective on contiguous buffers (see coll.h for their sizes). */
typedef struct {
    dl_coll_args_t args;
    dl_dtype_t dtype;
    void *in;
    void *out;        /* == in for in-place collectives */
    const char *algo; /* builtin: schedule name or NULL */
    /* On a backend that takes lists (below): a tensor list as it lies,
     * args.nranks pointers to args.count elements each, in place of in
     * (scatter's root) or out (gather's root, all_gather), which is then
     * NULL. Valid during the backend's coll call only: a backend keeps a
     * copy of what it needs. */
    void *const *in_list;
    void *const *out_list;
} dl_coll_call_t;

/* Capability bits, one set per device: bit (1u << c) for collective c, and
 * DL_CAP_P2P for send/recv. The same flags give `distlab backends` its
 * table and the comm layer its "not supported" errors, so the two agree. */
#define DL_CAP_P2P     (1u << DL_COLL__COUNT)
#define DL_CAP_ALL     ((1u << (DL_COLL__COUNT + 1)) - 1)
#define DL_CAP_COLL(c) (1u << (c))

/* How a backend's waits spend their time (see wait_plan below). */
typedef struct {
    double spin_s;   /* progress without sleeping this long first */
    bool spin_yield; /* give the core away between spinning passes */
    double check_s;  /* run the periodic wait_check this often; 0: never */
} dl_wait_plan_t;

typedef struct dl_backend_ops {
    const char *name;
    uint32_t caps[2]; /* [DL_DEVICE_CPU], [DL_DEVICE_CUDA] */
    /* Collectives are schedules run step by step (the step hook sees every
     * step); false: each collective is one opaque call, one step. */
    bool schedules;
    /* The backend reads and writes GPU memory itself (NCCL): cuda tensors
     * are passed as they are, and tensor lists are staged on the GPU.
     * false: the comm layer stages cuda tensors through host memory (so
     * that several ranks can share one GPU) and copies results back. */
    bool device_memory;
    /* The backend takes a tensor list as a list of buffers
     * (dl_coll_call_t's in_list, out_list), which spares the copy of the
     * whole list into one buffer. false: the comm layer stages the list
     * into one buffer, unless its tensors already are one. */
    bool lists;
    /* Whether op on dt runs on this backend, beyond dl_op_check (NULL: all
     * that dl_op_check allows). On refusal *why_p names the problem. */
    dl_status_t (*check_op)(dl_op_t op, dl_dtype_t dt, const char **why_p);
    /* Sets up the backend state of a world communicator. */
    dl_status_t (*init)(dl_comm_t *world);
    /* A subgroup: comm's fields are filled; the backend adds its state. */
    dl_status_t (*new_group)(dl_comm_t *parent, dl_comm_t *group);
    void (*destroy)(dl_comm_t *comm);
    void (*abort)(dl_comm_t *comm, const char *why);
    /* Start work w; the comm layer frees w. */
    dl_status_t (*isend)(dl_comm_t *comm, const void *data, size_t nbytes, int dst, int tag,
                         dl_work_t *w);
    dl_status_t (*irecv)(dl_comm_t *comm, void *data, size_t nbytes, int src, int tag,
                         dl_work_t *w);
    dl_status_t (*coll)(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w);
    /* Optional: runs a synchronous (not async) collective to its end in the
     * calling thread, w's timeout and Ctrl-C included; the comm layer then
     * finishes w without a wait. NULL: coll, then the wait loop. */
    dl_status_t (*coll_blocking)(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w);
    /* Advances w without blocking: DL_OK done, DL_ERR_AGAIN pending, else failed. */
    dl_status_t (*progress)(dl_work_t *w);

    /* Waiting. One loop (core/comm/wait.c) serves every backend: it
     * progresses every pending work of the process, spins, then sleeps, and
     * handles the deadline, Ctrl-C and the world's failures through these
     * hooks. comm is the waited work's communicator. */
    /* How long the loop spins and how often it checks the world. */
    void (*wait_plan)(dl_comm_t *comm, dl_wait_plan_t *plan);
    /* Optional: a count that moves whenever this process moved a message,
     * read before each pass that may end in a sleep: peers still moving
     * make the loop spin afresh. Cheap: no shared memory. */
    uint32_t (*wait_moves)(dl_comm_t *comm);
    /* Optional, the three together: sleeping on a wake-up count. wait_arm
     * tells the peers that this process may sleep (they wake it from then
     * on) and returns the count to pass to wait_sleep; the loop then makes
     * one more pass, sleeps only if that pass changed nothing, and calls
     * wait_disarm after either. wait_sleep sleeps until the count moved
     * from seen (true), a signal arrives or max_ms pass. NULL: the loop
     * naps, 10 us doubling to 1 ms. */
    uint32_t (*wait_arm)(dl_comm_t *comm);
    bool (*wait_sleep)(dl_comm_t *comm, uint32_t seen, int max_ms);
    void (*wait_disarm)(dl_comm_t *comm);
    /* Optional: the world's health, after every pass (periodic false: must
     * be cheap) and every plan.check_s (periodic true). DL_OK, or the status
     * that every pending work fails with, the reason in why. */
    dl_status_t (*wait_check)(dl_comm_t *comm, bool periodic, char *why, size_t cap);
    /* Optional: Ctrl-C on a backend that can cancel; afterwards progress
     * fails the work that was in flight. NULL: the loop gives up the pending
     * work through wait_give_up with DL_ERR_ABORTED. */
    void (*wait_interrupt)(dl_comm_t *comm);
    /* Fails every pending work of the world with st, waited (the work being
     * waited on) included: after wait_check failed (why says how), a
     * timeout (DL_ERR_TIMEOUT) or Ctrl-C (DL_ERR_ABORTED). For the last two
     * why is NULL: what a backend does about them, and so what it says,
     * is its own. */
    void (*wait_give_up)(dl_comm_t *comm, dl_work_t *waited, dl_status_t st, const char *why,
                         double timeout_s);

    /* Releases the backend's part of w (called only when w->backend is set). */
    void (*work_fini)(dl_work_t *w);
    dl_allocator_t *(*allocator)(dl_comm_t *comm);
    /* Optional: page-locks [ptr, ptr + n), a buffer from allocator, before
     * a cuda tensor is staged in it, so that the copies to and from the GPU
     * run at the bus's speed. Called for every staged tensor: cheap when
     * the buffer is locked already. */
    void (*pin_staging)(dl_comm_t *comm, const void *ptr, size_t n);
} dl_backend_ops_t;

/* The backend called name, or NULL with why (one line) filled: unknown, or
 * its module cannot be loaded. The mpi and nccl backends live in modules
 * (base/module.h), loaded by the first call that names them. */
const dl_backend_ops_t *dl__backend_find(const char *name, char *why, size_t cap);
/* The calls backend name makes, per collective (dl_backend_call_name's
 * table), or NULL for a backend that runs schedules; for a communicator to
 * look up once. */
const char *const *dl__backend_call_names(const char *name);
extern const dl_backend_ops_t dl__builtin_ops;
/* Defined in the mpi and nccl modules; looked up by name there. */
extern const dl_backend_ops_t dl__mpi_ops;
extern const dl_backend_ops_t dl__nccl_ops;

#endif
