/* A backend fills one ops table and registers by name. The communicator
 * layer turns torch-style calls (tensor lists, in-place tensors) into
 * normalised calls on contiguous buffers; a backend moves the bytes. */
#ifndef DL_BACKEND_H
#define DL_BACKEND_H

#include "distlab/comm.h"

/* One collective on contiguous buffers (see coll.h for their sizes). */
typedef struct {
    dl_coll_args_t args;
    dl_dtype_t dtype;
    void *in;
    void *out;        /* == in for in-place collectives */
    const char *algo; /* builtin: schedule name or NULL */
} dl_coll_call_t;

typedef struct dl_backend_ops {
    const char *name;
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
    /* Advances w without blocking: DL_OK done, DL_ERR_NOT_FOUND pending, else failed. */
    dl_status_t (*progress)(dl_work_t *w);
    /* Blocks until w is done or timeout_s passes; progresses other work too. */
    dl_status_t (*wait)(dl_work_t *w, double timeout_s);
    /* Releases the backend's part of w. */
    void (*work_fini)(dl_work_t *w);
    dl_allocator_t *(*allocator)(dl_comm_t *comm);
} dl_backend_ops_t;

const dl_backend_ops_t *dl__backend_find(const char *name);
extern const dl_backend_ops_t dl__builtin_ops;

#endif
