/* The elastic agent (agent.h): rendezvous, start, monitor, stop, again.
 *
 *   open the rendezvous (host the store, or join it)
 *   loop:
 *     next round            -> this node's rank, the world, MASTER_ADDR:PORT
 *     start the workers     -> "round N: W workers on M nodes (started in X s)"
 *     monitor, every --monitor-interval (a worker's exit wakes it at once):
 *       a worker failed here    -> tell the others (R/fail), restart
 *       R/restart set elsewhere -> restart (fail, grow or lost)
 *       a member's keep-alives stop -> tell the others (R/lost), restart
 *       every node done         -> success
 *     stop the workers: SIGTERM to each group, SIGKILL after --stop-timeout
 *     a failure with no restarts left -> the root-cause report, exit 1
 *
 * Everything runs on one thread and one libuv loop: the store requests are
 * short and blocking, and every wait in between runs the loop, which
 * delivers signals and the workers' exits. The host's store serves on its
 * own thread. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "lab/elastic/agent.h"
#include "lab/elastic/workers.h"

typedef enum {
    EV_NONE,
    EV_FAIL_HERE, /* a worker of ours failed */
    EV_FAIL,      /* one elsewhere did */
    EV_LOST,
    EV_GROW,
    EV_DONE,
    EV_OVER, /* another agent ended the run */
    EV_SIGNAL,
    EV_STORE, /* the store is gone */
} event_t;

typedef struct {
    const lab_elastic_opts_t *o;
    uv_loop_t loop;
    uv_timer_t wake;
    uv_signal_t sigs[3];
    int signo;
    lab_workers_t ws;
    lab_rdzv_t *rz;
    bool stopping;  /* our own SIGTERM: the exits are no news */
    double t_event; /* when the event that ends a round was seen */
    /* This node's failed workers in the round just ended, for the report. */
    lab_rdzv_failure_t *failed;
    int nfailed;
} agent_t;

static double now_s(void)
{
    return (double)uv_hrtime() / 1e9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "distlab launch: %s\n", line);
}

static const char *signal_name(int sig, char *buf, size_t cap)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
        {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
        {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
        {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].sig == sig) {
            snprintf(buf, cap, "%s", names[i].name);
            return buf;
        }
    snprintf(buf, cap, "signal %d", sig);
    return buf;
}

void lab_elastic_opts_init(lab_elastic_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->min_nodes = o->max_nodes = 1;
    o->nproc = 1;
    o->run_id = "none";
    o->host = "127.0.0.1";
    o->port = LAB_RDZV_DEFAULT_PORT;
    lab_rdzv_conf_init(&o->conf);
    o->monitor_interval_s = 0.1;
    o->stop_timeout_s = 5;
}

/* ---- the loop ---- */

static void on_wake(uv_timer_t *t)
{
    (void)t;
}

static void on_signal(uv_signal_t *h, int sig)
{
    agent_t *a = h->data;
    if (a->signo == 0)
        a->signo = sig;
}

/* Runs the loop for up to ms (less when something happens). The loop's
 * clock is stale after blocking store requests: update it, or the timer
 * would be due at once. The timer repeats: one that fires before the loop
 * polls must not leave the poll without a deadline. */
static void pump(agent_t *a, int ms)
{
    uint64_t t = (uint64_t)(ms > 0 ? ms : 1);
    uv_update_time(&a->loop);
    uv_timer_start(&a->wake, on_wake, t, t);
    uv_run(&a->loop, UV_RUN_ONCE);
    uv_timer_stop(&a->wake);
}

static bool agent_wait(void *arg, int ms)
{
    agent_t *a = arg;
    if (a->signo == 0)
        pump(a, ms);
    return a->signo == 0;
}

static void on_worker_exit(void *arg, lab_worker_t *w)
{
    agent_t *a = arg;
    char sig[32];
    /* Workers of a round already stopped, or stopped by us, are no news. */
    if (a->stopping || w < a->ws.w || w >= a->ws.w + a->ws.n)
        return;
    if (w->term_signal != 0)
        say("worker %d (rank %d, pid %d) was killed by %s", w->local_rank, w->rank, w->pid,
            signal_name(w->term_signal, sig, sizeof(sig)));
    else if (w->exit_code != 0)
        say("worker %d (rank %d, pid %d) exited with code %d", w->local_rank, w->rank, w->pid,
            w->exit_code);
}

/* ---- workers ---- */

static dl_status_t start_workers(agent_t *a, const lab_rdzv_round_t *rd, char *why, size_t cap)
{
    const lab_elastic_opts_t *o = a->o;
    lab_worker_env_t *env = calloc((size_t)o->nproc, sizeof(*env));
    if (env == NULL) {
        snprintf(why, cap, "out of memory");
        return DL_ERR_NOMEM;
    }
    const lab_rdzv_node_t *master = &rd->nodes[0];
    for (int i = 0; i < o->nproc; i++) {
        env[i] = (lab_worker_env_t){
            .rank = rd->rank_base + i,
            .local_rank = i,
            .world_size = rd->world_size,
            .local_world_size = o->nproc,
            .group_rank = rd->node_rank,
            .group_world_size = rd->nnodes,
            .master_addr = master->addr,
            .master_port = master->port,
            .restart_count = rd->restart_count,
            .max_restarts = rd->max_restarts,
            .run_id = o->run_id,
            .omp_one = o->nproc > 1 && getenv("OMP_NUM_THREADS") == NULL,
        };
    }
    dl_status_t st = lab_workers_start(&a->ws, o->argv, o->nproc, env, why, cap);
    free(env);
    return st;
}

/* SIGTERM to every group, SIGKILL to what is left after the grace period;
 * every wait bounded. */
static void stop_workers(agent_t *a)
{
    a->stopping = true;
    if (!lab_workers_quiet(&a->ws)) {
        lab_workers_signal(&a->ws, SIGTERM);
        double t0 = now_s();
        while (!lab_workers_quiet(&a->ws) && now_s() - t0 < a->o->stop_timeout_s) {
            pump(a, 20);
            lab_rdzv_tick(a->rz);
        }
        if (!lab_workers_quiet(&a->ws)) {
            lab_workers_signal(&a->ws, SIGKILL);
            t0 = now_s();
            while (!lab_workers_quiet(&a->ws) && now_s() - t0 < 5)
                pump(a, 20);
            for (int i = 0; i < a->ws.n; i++)
                if (!a->ws.w[i].exited)
                    say("worker %d (pid %d) did not exit after SIGKILL; leaving it",
                        a->ws.w[i].local_rank, a->ws.w[i].pid);
        }
    }
    lab_workers_clear(&a->ws);
    a->stopping = false;
}

/* ---- monitoring ---- */

static event_t monitor(agent_t *a, const lab_rdzv_round_t *rd, const lab_rdzv_node_t **lost_p)
{
    int ms = (int)(a->o->monitor_interval_s * 1000);
    bool done = false;
    *lost_p = NULL;
    for (;;) {
        if (a->signo != 0)
            return EV_SIGNAL;
        const lab_worker_t *f = lab_workers_first_failure(&a->ws);
        if (f != NULL) {
            lab_rdzv_failure_t rec = {
                .round = rd->round,
                .node_rank = rd->node_rank,
                .local_rank = f->local_rank,
                .rank = f->rank,
                .pid = f->pid,
                .exit_code = f->exit_code,
                .signal = f->term_signal,
            };
            gethostname(rec.host, sizeof(rec.host));
            rec.host[sizeof(rec.host) - 1] = '\0';
            snprintf(rec.time, sizeof(rec.time), "%s", f->exit_wall);
            a->t_event = f->exit_time;
            return lab_rdzv_report_failure(a->rz, &rec) == DL_OK ? EV_FAIL_HERE : EV_STORE;
        }
        if (!done && lab_workers_all_exited(&a->ws)) {
            done = true;
            if (rd->nnodes > 1)
                say("the workers on this node finished; waiting for the other nodes");
            if (lab_rdzv_mark_done(a->rz) != DL_OK)
                return EV_STORE;
        }
        lab_rdzv_event_t ev;
        if (lab_rdzv_poll(a->rz, &ev, lost_p) != DL_OK)
            return EV_STORE;
        a->t_event = now_s();
        switch (ev) {
        case LAB_RDZV_RUNNING:
            break;
        case LAB_RDZV_FAIL:
            return EV_FAIL;
        case LAB_RDZV_LOST:
            return EV_LOST;
        case LAB_RDZV_GROW:
            return EV_GROW;
        case LAB_RDZV_DONE:
            return EV_DONE;
        case LAB_RDZV_OVER:
            return EV_OVER;
        }
        pump(a, ms);
    }
}

/* ---- the report ---- */

static void print_failure(const lab_rdzv_failure_t *f, const char *indent)
{
    char sig[32];
    fprintf(stderr, "%s  time      : %s\n", indent, f->time);
    fprintf(stderr, "%s  host      : %s\n", indent, f->host);
    fprintf(stderr, "%s  node      : %d (group_rank)\n", indent, f->node_rank);
    fprintf(stderr, "%s  rank      : %d (local_rank: %d)\n", indent, f->rank, f->local_rank);
    if (f->signal != 0) {
        fprintf(stderr, "%s  exitcode  : %d (pid: %d)\n", indent, -f->signal, f->pid);
        fprintf(stderr, "%s  signal    : %s\n", indent, signal_name(f->signal, sig, sizeof(sig)));
    } else {
        fprintf(stderr, "%s  exitcode  : %d (pid: %d)\n", indent, f->exit_code, f->pid);
    }
}

/* Keeps this node's failed workers (before they are stopped and
 * forgotten) for the report. */
static void keep_failures(agent_t *a, const lab_rdzv_round_t *rd)
{
    a->nfailed = 0;
    for (int i = 0; i < a->ws.n; i++) {
        const lab_worker_t *w = &a->ws.w[i];
        if (!w->spawned || !w->exited || (w->exit_code == 0 && w->term_signal == 0))
            continue;
        lab_rdzv_failure_t *f = &a->failed[a->nfailed++];
        *f = (lab_rdzv_failure_t){
            .round = rd->round,
            .node_rank = rd->node_rank,
            .local_rank = w->local_rank,
            .rank = w->rank,
            .pid = w->pid,
            .exit_code = w->exit_code,
            .signal = w->term_signal,
        };
        gethostname(f->host, sizeof(f->host));
        f->host[sizeof(f->host) - 1] = '\0';
        snprintf(f->time, sizeof(f->time), "%s", w->exit_wall);
    }
}

/* torchrun's summary: this node's other failures, then the root cause, the
 * first failure of the round as its node reported it. */
static void report(agent_t *a, const lab_rdzv_round_t *rd, const lab_rdzv_failure_t *root)
{
    const char *bar = "============================================================";
    const char *rule = "------------------------------------------------------------";
    fprintf(stderr, "%s\n%s FAILED (round %d, restart %d of %d)\n%s\nFailures:\n", bar,
            a->o->argv[0], rd->round, rd->restart_count, rd->max_restarts, rule);
    int others = 0;
    for (int i = 0; i < a->nfailed; i++) {
        const lab_rdzv_failure_t *f = &a->failed[i];
        if (f->node_rank == root->node_rank && f->local_rank == root->local_rank)
            continue;
        fprintf(stderr, "[%d]:\n", ++others);
        print_failure(f, "");
    }
    if (others == 0)
        fprintf(stderr, "  <NO_OTHER_FAILURES>\n");
    fprintf(stderr, "%s\nRoot Cause (first observed failure):\n[0]:\n", rule);
    print_failure(root, "");
    fprintf(stderr, "%s\n", bar);
}

/* ---- the agent ---- */

static void close_loop(agent_t *a)
{
    for (int i = 0; i < 3; i++)
        uv_close((uv_handle_t *)&a->sigs[i], NULL);
    uv_close((uv_handle_t *)&a->wake, NULL);
    uv_run(&a->loop, UV_RUN_DEFAULT);
    uv_loop_close(&a->loop);
}

int lab_elastic_run(const lab_elastic_opts_t *o)
{
    double t_start = now_s();
    char path[4096], why[1024];
    /* Checked once here, not found by every worker of every round. As the
     * shell: 127 for a command that is not there, 126 for one that cannot
     * be run. */
    int err = lab_workers_find(o->argv[0], path, sizeof(path));
    if (err == ENOENT) {
        say("%s: not found", o->argv[0]);
        return 127;
    }
    if (err != 0) {
        say("%s: not an executable file (permission denied, or a directory)", o->argv[0]);
        return 126;
    }
    agent_t *a = calloc(1, sizeof(*a));
    if (a == NULL || (a->failed = calloc((size_t)o->nproc, sizeof(*a->failed))) == NULL) {
        free(a);
        say("out of memory");
        return 1;
    }
    a->o = o;
    /* The watchdog first, while this process has no thread and no handle. */
    lab_workers_init(&a->ws, NULL);
    if (!lab_workers_watchdog(&a->ws))
        say("cannot start the watchdog (%m): workers may outlive a killed agent");
    uv_loop_init(&a->loop);
    a->ws.loop = &a->loop;
    a->ws.on_exit = on_worker_exit;
    a->ws.on_exit_arg = a;
    uv_timer_init(&a->loop, &a->wake);
    static const int signums[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        uv_signal_init(&a->loop, &a->sigs[i]);
        a->sigs[i].data = a;
        uv_signal_start(&a->sigs[i], on_signal, signums[i]);
    }

    lab_rdzv_opts_t ro = {
        .run_id = o->run_id,
        .host = o->host,
        .port = o->port,
        .min_nodes = o->min_nodes,
        .max_nodes = o->max_nodes,
        .nproc = o->nproc,
        .max_restarts = o->max_restarts,
        .token = getenv("DISTLAB_TOKEN"),
        .conf = o->conf,
        .wait = agent_wait,
        .wait_arg = a,
    };
    int code = 1;
    if (lab_rdzv_open(&ro, &a->rz, why, sizeof(why)) != DL_OK) {
        say("%s", why);
        code = a->signo != 0 ? 128 + a->signo : 1;
        goto out;
    }
    if (lab_rdzv_is_host(a->rz))
        say("hosting the rendezvous of run '%s' at %s (agent %d)", o->run_id,
            lab_rdzv_endpoint(a->rz), lab_rdzv_arrival(a->rz));
    else
        say("joined the rendezvous of run '%s' at %s (agent %d)", o->run_id,
            lab_rdzv_endpoint(a->rz), lab_rdzv_arrival(a->rz));
    if (o->nproc > 1 && getenv("OMP_NUM_THREADS") == NULL)
        say("setting OMP_NUM_THREADS=1 for each worker, as torchrun does with several workers "
            "per node; set it yourself to choose");

    a->t_event = t_start;
    for (;;) {
        const lab_rdzv_round_t *rd;
        if (lab_rdzv_next_round(a->rz, &rd) != DL_OK) {
            if (a->signo != 0) {
                lab_rdzv_leave(a->rz);
                code = 128 + a->signo;
                say("interrupted (%s) while joining", signal_name(a->signo, why, sizeof(why)));
            } else if (lab_rdzv_outcome(a->rz) == LAB_RDZV_SUCCEEDED) {
                say("%s", lab_rdzv_error(a->rz));
                code = 0;
            } else {
                say("%s", lab_rdzv_error(a->rz));
                code = 1;
            }
            break;
        }
        double t_round = a->t_event;
        if (start_workers(a, rd, why, sizeof(why)) != DL_OK) {
            say("%s", why);
            lab_rdzv_end_run(a->rz, true, why);
            stop_workers(a);
            code = 1;
            break;
        }
        char ranks[48];
        if (o->nproc == 1)
            snprintf(ranks, sizeof(ranks), "rank %d", rd->rank_base);
        else
            snprintf(ranks, sizeof(ranks), "ranks %d-%d", rd->rank_base,
                     rd->rank_base + o->nproc - 1);
        say("round %d: %d worker%s on %d node%s (started in %.2f s); node %d, %s, master %s:%d, "
            "restarts %d/%d",
            rd->round, rd->world_size, rd->world_size == 1 ? "" : "s", rd->nnodes,
            rd->nnodes == 1 ? "" : "s", now_s() - t_round, rd->node_rank, ranks, rd->nodes[0].addr,
            rd->nodes[0].port, rd->restart_count, rd->max_restarts);

        const lab_rdzv_node_t *lost;
        event_t ev = monitor(a, rd, &lost);
        keep_failures(a, rd);
        stop_workers(a);
        if (ev == EV_SIGNAL) {
            lab_rdzv_leave(a->rz);
            say("interrupted (%s): the workers are stopped",
                signal_name(a->signo, why, sizeof(why)));
            code = 128 + a->signo;
            break;
        }
        if (ev == EV_STORE || ev == EV_OVER) {
            say("%s", lab_rdzv_error(a->rz));
            code = 1;
            break;
        }
        if (ev == EV_DONE) {
            lab_rdzv_end_run(a->rz, false, NULL);
            if (rd->world_size == 1)
                say("round %d: the worker finished", rd->round);
            else
                say("round %d: all %d workers on %d node%s finished", rd->round, rd->world_size,
                    rd->nnodes, rd->nnodes == 1 ? "" : "s");
            code = 0;
            break;
        }
        if (ev == EV_FAIL_HERE || ev == EV_FAIL) {
            lab_rdzv_failure_t root;
            if (lab_rdzv_first_failure(a->rz, &root) != DL_OK) {
                say("%s", lab_rdzv_error(a->rz));
                code = 1;
                break;
            }
            char what[160], sig[32];
            if (root.signal != 0)
                snprintf(what, sizeof(what), "rank %d (node %d, local rank %d) was killed by %s",
                         root.rank, root.node_rank, root.local_rank,
                         signal_name(root.signal, sig, sizeof(sig)));
            else
                snprintf(what, sizeof(what), "rank %d (node %d, local rank %d) exited with code %d",
                         root.rank, root.node_rank, root.local_rank, root.exit_code);
            if (rd->restart_count >= rd->max_restarts) {
                snprintf(why, sizeof(why), "%s; no restarts left (--max-restarts %d)", what,
                         rd->max_restarts);
                lab_rdzv_end_run(a->rz, true, why);
                say("%s", why);
                report(a, rd, &root);
                code = 1;
                break;
            }
            say("%s: restarting the workers (restart %d of %d)", what, rd->restart_count + 1,
                rd->max_restarts);
        } else if (ev == EV_LOST) {
            if (lost != NULL)
                say("node %d (%s, agent pid %d) stopped answering: restarting without it (a "
                    "membership change, not counted as a restart)",
                    (int)(lost - rd->nodes), lost->host, lost->pid);
            else
                say("a node left or stopped answering: restarting without it (not counted as a "
                    "restart)");
        } else if (ev == EV_GROW) {
            say("a new node is waiting to join: restarting with it (not counted as a restart)");
        }
    }
out:
    lab_rdzv_close(a->rz);
    lab_workers_release(&a->ws);
    close_loop(a);
    free(a->failed);
    free(a);
    return code;
}
