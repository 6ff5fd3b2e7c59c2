/* The one wait loop of every backend.
 *
 * Progress is driven by whoever waits: a pass advances every pending work
 * of the process (oldest first) through the backend's progress hook, so
 * that waiting on one work also moves the others. Between passes the loop
 * first spins for plan.spin_s (a reply often comes within microseconds),
 * yielding the core on each pass when the backend asks (more ranks than
 * cores, or Open MPI, which moves a large message only while it is being
 * tested), then sleeps: on the backend's wake-up count when it has one
 * (the builtin transports' doorbell), else in naps of 10 us doubling to
 * 1 ms. Many ranks on few cores thus do not starve each other. Peers wake
 * only a process that announced it may sleep (wait_arm): one more pass
 * after the announcement finds what they did before it.
 *
 * Every wait has a deadline. Time that a step hook held the process (a
 * person stepping through a collective) is not waiting and moves the
 * deadline. Ctrl-C (dl_comm_interrupt_from_signal) is taken once per pass:
 * a backend that can cancel does so itself, otherwise the pending work is
 * given up. The backend's check hook reports a world that failed (a dead
 * peer, an aborted communicator); all its pending work then fails. */
#include <sched.h>
#include <time.h>

#include "comm/internal.h"
#include "exec/exec.h"

#define NAP_MIN_NS   (10 * 1000)
#define NAP_MAX_NS   (1000 * 1000)
#define SLEEP_MAX_MS 1000 /* the longest single sleep, whatever the deadline */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Advances every pending work of the process; finishes those that ended.
 * Returns the seconds a step hook held it: the executor's hook runs inside
 * progress, the whole-step hook inside dl__work_finish, and both add their
 * time to dl__exec_paused_s (with the coarse clock: a precise read costs
 * 27 ns here, a tenth of a small collective). */
static double progress_all(dl_world_t *world, const dl_backend_ops_t *ops)
{
    double paused0 = dl__exec_paused_s;
    dl_work_t *next;
    for (dl_work_t *w = world->active; w != NULL; w = next) {
        next = w->next_active;
        dl_status_t st = ops->progress(w);
        if (st != DL_ERR_AGAIN)
            dl__work_finish(w, st);
    }
    return dl__exec_paused_s - paused0;
}

static int sleep_ms(const dl_wait_plan_t *plan, double left_s)
{
    double ms = left_s * 1e3 + 1;
    if (plan->check_s > 0 && ms > plan->check_s * 1e3)
        ms = plan->check_s * 1e3;
    return ms < SLEEP_MAX_MS ? (int)ms : SLEEP_MAX_MS;
}

dl_status_t dl__comm_wait(dl_work_t *w, double timeout_s)
{
    dl_comm_t *comm = w->comm;
    dl_world_t *world = comm->world;
    const dl_backend_ops_t *ops = comm->ops;
    dl_wait_plan_t plan = {0};
    ops->wait_plan(comm, &plan);
    /* The clock is first read where the loop needs it (the 64th pass, or
     * the first with spin_yield), not on entry: a small collective's wait
     * mostly ends before then, and a read costs it a tenth of its time. */
    bool started = false;
    double start = 0, spin_until = 0, next_check = 0;
    bool spinning = true;
    unsigned spins = 0;
    long nap_ns = NAP_MIN_NS;
    uint32_t last_moves = ops->wait_moves != NULL ? ops->wait_moves(comm) : 0;
    char why[320];
    for (;;) {
        int taken = dl__comm_interrupt_take_kind();
        bool interrupted = taken != 0;
        /* A cancel fails this process's work only: the give-up below. */
        if (taken == DL__INTERRUPT && ops->wait_interrupt != NULL) {
            ops->wait_interrupt(comm);
            interrupted = false;
        }
        /* Read before a pass that may end in a sleep: what moved since the
         * previous one (the end of a spin, or a wake-up) means the peers
         * are moving. */
        bool counted = !spinning && ops->wait_moves != NULL;
        uint32_t moves = counted ? ops->wait_moves(comm) : 0;
        double held = progress_all(world, ops);
        if (started)
            start += held; /* before the first read, the read leaves it out */
        /* Interrupted: what is still pending once everything was progressed
         * fails (the waited work, or else the oldest other). */
        if (interrupted && world->active != NULL) {
            ops->wait_give_up(comm, w->done ? world->active : w, DL_ERR_ABORTED, NULL, timeout_s);
            return w->status;
        }
        if (w->done)
            return w->status;
        dl_status_t failed = DL_OK;
        if (ops->wait_check != NULL &&
            (failed = ops->wait_check(comm, false, why, sizeof(why))) != DL_OK) {
            ops->wait_give_up(comm, w, failed, why, timeout_s);
            return w->status;
        }
        /* Messages moved since the last such pass: a collective of many
         * steps spins afresh at each one instead of sleeping through all
         * but the first (a futex wake-up costs tens of microseconds, a
         * step of a large collective little more). */
        if (counted && moves != last_moves) {
            last_moves = moves;
            spinning = true;
            spin_until = now_s() + plan.spin_s;
        }
        if (spinning) {
            if (plan.spin_yield)
                sched_yield();
            else if ((++spins & 63) != 0)
                continue; /* the clock costs more than a pass that finds nothing */
        }
        double t = now_s();
        if (!started) {
            started = true;
            start = t;
            spin_until = t + plan.spin_s;
            next_check = t + plan.check_s;
        }
        if (plan.check_s > 0 && t >= next_check) {
            next_check = t + plan.check_s;
            if (ops->wait_check != NULL &&
                (failed = ops->wait_check(comm, true, why, sizeof(why))) != DL_OK) {
                ops->wait_give_up(comm, w, failed, why, timeout_s);
                return w->status;
            }
        }
        if (t - start >= timeout_s) {
            ops->wait_give_up(comm, w, DL_ERR_TIMEOUT, NULL, timeout_s);
            return w->status;
        }
        if (spinning && t < spin_until)
            continue;
        if (spinning) {
            spinning = false;
            continue; /* one more pass, counted, before the first sleep */
        }
        double left_s = timeout_s - (t - start);
        if (ops->wait_sleep != NULL) {
            uint32_t seen = ops->wait_arm(comm);
            /* The pass after the announcement: anything it changes (the work
             * done, a message moved, Ctrl-C, a failed world) is for the next
             * pass to take, awake. */
            start += progress_all(world, ops);
            bool quiet = !w->done && !dl__comm_interrupt_pending() &&
                         (ops->wait_moves == NULL || ops->wait_moves(comm) == moves) &&
                         (ops->wait_check == NULL ||
                          ops->wait_check(comm, false, why, sizeof(why)) == DL_OK);
            if (quiet && ops->wait_sleep(comm, seen, sleep_ms(&plan, left_s))) {
                spinning = true; /* rung: the peers are moving */
                spin_until = now_s() + plan.spin_s;
            }
            ops->wait_disarm(comm);
            continue;
        }
        /* A signal ends the nap early (EINTR), which is what Ctrl-C wants. */
        double left_ns = left_s * 1e9;
        struct timespec ts = {0, left_ns < (double)nap_ns ? (long)left_ns + 1 : nap_ns};
        nanosleep(&ts, NULL);
        nap_ns = nap_ns * 2 < NAP_MAX_NS ? nap_ns * 2 : NAP_MAX_NS;
        /* With more ranks than cores, the peer we wait for may need ours. */
        if (plan.spin_yield)
            sched_yield();
    }
}
