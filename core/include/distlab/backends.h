/* The backends distlab knows, whether this binary has them, and what each
 * runs on which device: what `distlab backends` prints. The answers come
 * from the flags the communicator checks before every call, so the table
 * and the "not supported" errors cannot disagree. */
#ifndef DISTLAB_BACKENDS_H
#define DISTLAB_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/coll.h"
#include "distlab/tensor.h"

typedef struct {
    const char *name;          /* "builtin", "mpi", "nccl" */
    bool built;                /* in this binary */
    const char *why_not_built; /* when not built: why, and what to install */
} dl_backend_info_t;

/* Every backend distlab knows, built or not; *n_p receives how many. */
const dl_backend_info_t *dl_backend_list(size_t *n_p);
/* Whether the backend (built into this binary) runs collective c on
 * tensors of dev. False for a backend that is not built. */
bool dl_backend_supports_coll(const char *name, dl_coll_t c, dl_device_type_t dev);
/* The same for send/recv (and isend/irecv). */
bool dl_backend_supports_p2p(const char *name, dl_device_type_t dev);
/* Whether the backend's collectives run step by step (schedules), or as
 * one opaque call each (step mode then steps whole collectives). */
bool dl_backend_steps_schedules(const char *name);

/* What the backend calls to run collective c: "MPI_Iallreduce",
 * "ncclAllReduce", "grouped ncclSend/ncclRecv"; NULL for builtin (its
 * collectives are schedules: see dl_algo_default). */
const char *dl_backend_call_name(const char *name, dl_coll_t c);

#endif
