/* The watchdog of the mpi backend's blocking collectives (the backend's
 * private header). A blocking MPI call cannot be cancelled, so a timeout,
 * Ctrl-C or a peer that never comes can only end the process: a thread of
 * the backend's own watches the call in flight and, when one of them
 * happens, says why in one line and exits, and mpirun then ends the job.
 *
 * Arming and disarming cost two stores and no system call: the caller
 * bumps a generation counter (odd: a call is in flight) and the watchdog,
 * which wakes every WATCH_POLL_MS, measures how long it has seen the same
 * odd generation. */
#ifndef DL_BACKEND_MPI_WATCH_H
#define DL_BACKEND_MPI_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "distlab/coll.h"

/* Exit codes of a rank the watchdog ended, after timeout(1) and the shell. */
#define DL_MPI_EXIT_TIMEOUT   124
#define DL_MPI_EXIT_INTERRUPT 130

typedef struct {
    atomic_uint_fast64_t gen; /* odd while a blocking call is in flight */
    atomic_int coll;          /* the collective in flight (a dl_coll_t) */
    _Atomic double timeout_s; /* its timeout */
} dl_mpi_watch_t;

extern dl_mpi_watch_t dl__mpi_watch;

/* Starts the watchdog thread, once per process. Returns 0 or an errno. */
int dl__mpi_watch_start(void);
/* Stops it (before MPI_Finalize; a later start starts it again). */
void dl__mpi_watch_stop(void);

/* Around one blocking call. Release order: the watchdog that sees the new
 * generation sees the collective and the timeout that go with it. */
static inline void dl__mpi_watch_arm(dl_coll_t coll, double timeout_s)
{
    uint_fast64_t g = atomic_load_explicit(&dl__mpi_watch.gen, memory_order_relaxed);
    atomic_store_explicit(&dl__mpi_watch.coll, (int)coll, memory_order_relaxed);
    atomic_store_explicit(&dl__mpi_watch.timeout_s, timeout_s, memory_order_relaxed);
    atomic_store_explicit(&dl__mpi_watch.gen, g + 1, memory_order_release);
}

static inline void dl__mpi_watch_disarm(void)
{
    uint_fast64_t g = atomic_load_explicit(&dl__mpi_watch.gen, memory_order_relaxed);
    atomic_store_explicit(&dl__mpi_watch.gen, g + 1, memory_order_release);
}

#endif
