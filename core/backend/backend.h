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
} dl_coll_call_t;

/* Capability bits, one set per device: bit (1u << c) for collective c, and
 * DL_CAP_P2P for send/recv. The same flags give `distlab backends` its
 * table and the comm layer its "not supported" errors, so the two agree. */
#define DL_CAP_P2P     (1u << DL_COLL__COUNT)
#define DL_CAP_ALL     ((1u << (DL_COLL__COUNT + 1)) - 1)
#define DL_CAP_COLL(c) (1u << (c))

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
    /* Advances w without blocking: DL_OK done, DL_ERR_AGAIN pending, else failed. */
    dl_status_t (*progress)(dl_work_t *w);
    /* Blocks until w is done or timeout_s passes; progresses other work too. */
    dl_status_t (*wait)(dl_work_t *w, double timeout_s);
    /* Releases the backend's part of w. */
    void (*work_fini)(dl_work_t *w);
    dl_allocator_t *(*allocator)(dl_comm_t *comm);
} dl_backend_ops_t;

/* A backend built into this binary, or NULL. */
const dl_backend_ops_t *dl__backend_find(const char *name);
extern const dl_backend_ops_t dl__builtin_ops;
#if DL_HAVE_MPI
extern const dl_backend_ops_t dl__mpi_ops;
#endif
#if DL_HAVE_NCCL
extern const dl_backend_ops_t dl__nccl_ops;
#endif

#endif
