/* The watchdog of the mpi backend's blocking collectives (see mpi_watch.h).
 *
 * One thread per process, started with the first mpi world and stopped
 * with the last. It wakes every WATCH_POLL_MS on a condition variable (so
 * that stopping it is immediate), and takes the whole action itself: the
 * thread in the MPI call cannot return until MPI lets it. A timeout is
 * measured from the moment the watchdog first sees the call, so it fires
 * between timeout_s and timeout_s + 2 polls after the call began. */
#include <stdio.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "backend/mpi_watch.h"
#include "comm/internal.h"
#include "distlab/log.h"
#include "distlab/timedwait.h"

#define WATCH_POLL_MS 50

dl_mpi_watch_t dl__mpi_watch;

static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cv;
static pthread_t watch_thread;
static bool watch_running, watch_stopping;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether the call of generation g is still in flight. */
static bool in_flight(uint_fast64_t g)
{
    return atomic_load_explicit(&dl__mpi_watch.gen, memory_order_acquire) == g;
}

/* Ends the process in one line. The log goes wherever the process sends
 * its log (a rank's controller), then _exit: not exit, whose atexit
 * handlers would call into MPI beside the blocked thread. mpirun sees a
 * rank that ended without MPI_Finalize and ends the others. */
static void end_process(int code, const char *coll, const char *why)
{
    dl_log_error("%s %s; a blocking MPI call cannot be cancelled: the rank exits with code %d, "
                 "and mpirun ends the job",
                 coll, why, code);
    _exit(code);
}

static void *watch_main(void *arg)
{
    (void)arg;
    uint_fast64_t seen = 0;
    double since = 0;
    pthread_mutex_lock(&watch_mu);
    while (!watch_stopping) {
        dl_cond_wait_ms(&watch_cv, &watch_mu, CLOCK_MONOTONIC, WATCH_POLL_MS);
        if (watch_stopping)
            break;
        uint_fast64_t g = atomic_load_explicit(&dl__mpi_watch.gen, memory_order_acquire);
        if ((g & 1) == 0)
            continue;
        dl_coll_t coll = (dl_coll_t)atomic_load_explicit(&dl__mpi_watch.coll, memory_order_relaxed);
        double timeout_s = atomic_load_explicit(&dl__mpi_watch.timeout_s, memory_order_relaxed);
        /* Ctrl-C is taken only while a call is in flight: between calls it
         * belongs to the wait loop of the non-blocking ones. */
        if (dl__comm_interrupt_pending() && in_flight(g) && dl__comm_interrupt_take())
            end_process(DL_MPI_EXIT_INTERRUPT, dl_coll_name(coll),
                        "interrupted (Ctrl-C) on the mpi backend");
        double now = mono_s();
        if (g != seen) {
            seen = g;
            since = now;
            continue;
        }
        if (timeout_s > 0 && now - since >= timeout_s && in_flight(g)) {
            char why[96];
            snprintf(
                why, sizeof(why),
                "timed out after %g s on the mpi backend (a peer is stuck, dead or never came)",
                timeout_s);
            end_process(DL_MPI_EXIT_TIMEOUT, dl_coll_name(coll), why);
        }
    }
    pthread_mutex_unlock(&watch_mu);
    return NULL;
}

int dl__mpi_watch_start(void)
{
    int rc = 0;
    pthread_mutex_lock(&watch_mu);
    if (!watch_running) {
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&watch_cv, &attr);
        pthread_condattr_destroy(&attr);
        watch_stopping = false;
        rc = pthread_create(&watch_thread, NULL, watch_main, NULL);
        if (rc == 0)
            watch_running = true;
        else
            pthread_cond_destroy(&watch_cv);
    }
    pthread_mutex_unlock(&watch_mu);
    return rc;
}

void dl__mpi_watch_stop(void)
{
    pthread_mutex_lock(&watch_mu);
    if (!watch_running) {
        pthread_mutex_unlock(&watch_mu);
        return;
    }
    watch_stopping = true;
    pthread_cond_signal(&watch_cv);
    pthread_mutex_unlock(&watch_mu);
    pthread_join(watch_thread, NULL);
    pthread_cond_destroy(&watch_cv);
    watch_running = false;
}
