/* The backends distlab knows, whether this binary can use them, and what each
 * runs on which device: what `distlab backends` prints. The answers come
 * from the flags the communicator checks before every call, so the table
 * and the "not supported" errors cannot disagree. */
#ifndef DISTLAB_BACKENDS_H
#define DISTLAB_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/coll.h"
#include "distlab/op.h"
#include "distlab/status.h"
#include "distlab/tensor.h"

typedef struct {
    const char *name;          /* "builtin", "mpi", "nccl" */
    bool built;                /* usable: in this build, and its module loads */
    const char *why_not_built; /* when not: why (one line), and what to do */
} dl_backend_info_t;

/* Every backend distlab knows, built or not; *n_p receives how many. Loads
 * every module, to say whether it loads. */
const dl_backend_info_t *dl_backend_list(size_t *n_p);
/* The names of every backend distlab knows, loading nothing. */
const char *const *dl_backend_names(size_t *n_p);
/* Whether the backend can be used, loading its module (and no other) if it
 * has one; when not, why (one line). False for an unknown name. */
bool dl_backend_available(const char *name, char *why, size_t cap);
/* Whether the backend (built into this binary) runs collective c on
 * tensors of dev. False for a backend that is not built. */
bool dl_backend_supports_coll(const char *name, dl_coll_t c, dl_device_type_t dev);
/* The same for send/recv (and isend/irecv). */
bool dl_backend_supports_p2p(const char *name, dl_device_type_t dev);
/* The backend's own refusals of a reduction op on a dtype beyond
 * dl_op_check's (NCCL has no bitwise ops): DL_OK, or an error with *why_p
 * saying why. */
dl_status_t dl_backend_check_op(const char *name, dl_op_t op, dl_dtype_t dt, const char **why_p);
/* Whether the backend's collectives run step by step (schedules), or as
 * one opaque call each (step mode then steps whole collectives). */
bool dl_backend_steps_schedules(const char *name);

/* What the backend calls to run collective c: "MPI_Iallreduce",
 * "ncclAllReduce", "grouped ncclSend/ncclRecv"; NULL for builtin (its
 * collectives are schedules: see dl_algo_default). */
const char *dl_backend_call_name(const char *name, dl_coll_t c);

/* For a rank that mpirun started: starts MPI in this process (through the
 * mpi module) and gives every rank rank 0's n bytes at buf. DL_OK; or
 * DL_ERR_UNSUPPORTED, with one line in why, when the mpi module is not
 * built or cannot be loaded. */
dl_status_t dl_mpi_join(char *buf, size_t n, char *why, size_t cap);
/* Ends MPI in this process, after dl_mpi_join. */
void dl_mpi_leave(void);

#endif
