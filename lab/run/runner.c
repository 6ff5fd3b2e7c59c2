/* See runner.h. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/log.h"
#include "lab/ctrl/controller.h"
#include "lab/proto/proto.h"
#include "lab/session/report.h"
#include "lab/run/runner.h"
#include "lab/session/model.h"

#define START_GRACE_S  30.0 /* spawning and connecting, on top of the job's timeout */
#define DEATH_GRACE_MS 1500 /* after a death, how long the others may take to report */
#define EXIT_GRACE_MS  3000 /* after "exit", how long before ranks are killed */

typedef struct {
    uv_loop_t loop;
    lab_ctrl_t *ctrl;
    /* The session: the world, and the job as its one statement. The
     * reports (lab/session/report.h) read the job's results from it. */
    lab_model_t m;
    const lab_job_t *job;
    uv_timer_t watchdog, grace;
    int n_finished;
    bool job_sent;
    bool stopping;
    char deaths[2048]; /* one line per rank that died */
    bool timed_out;
    /* Stopping after a rank's death: the others are let go as soon as each
     * has reported (or the grace is over). */
    bool after_death;
    uv_signal_t sigint, sigterm;
    int signo;        /* SIGINT or SIGTERM that interrupted the job; 0: none */
    json_t *trace_on; /* --trace: the config frame that turns tracing on */
    /* A benchmark's table, printed row by row as every rank reports a
     * size (not with --json, whose document is whole at the end). */
    bool rows_live;
    lab_bench_out_t table;
} runner_t;

static void stop_ranks(runner_t *rn, int grace_ms);

static void grace_expired(uv_timer_t *t)
{
    runner_t *rn = t->data;
    if (rn->ctrl != NULL)
        lab_ctrl_kill_all(rn->ctrl, SIGKILL);
}

static void stop_ranks(runner_t *rn, int grace_ms)
{
    if (rn->stopping)
        return;
    rn->stopping = true;
    json_t *bye = json_pack("{s:s}", "type", "exit");
    for (int r = 0; r < rn->m.np; r++)
        lab_ctrl_send(rn->ctrl, r, bye);
    json_decref(bye);
    uv_timer_start(&rn->grace, grace_expired, (uint64_t)grace_ms, 0);
}

static void close_handles(runner_t *rn)
{
    uv_timer_stop(&rn->watchdog);
    uv_timer_stop(&rn->grace);
    uv_close((uv_handle_t *)&rn->watchdog, NULL);
    uv_close((uv_handle_t *)&rn->grace, NULL);
    uv_close((uv_handle_t *)&rn->sigint, NULL);
    uv_close((uv_handle_t *)&rn->sigterm, NULL);
}

static void finish_if_exited(runner_t *rn)
{
    if (rn->ctrl == NULL || !lab_ctrl_all_exited(rn->ctrl))
        return;
    close_handles(rn);
    lab_ctrl_close(rn->ctrl);
    rn->ctrl = NULL;
}

/* What the ranks reported of the job. */
static lab_session_t *results(runner_t *rn)
{
    return &lab_model_job(&rn->m)->res;
}

/* Whether rank r has nothing more to say: finished its job, or is gone. */
static bool has_reported(runner_t *rn, int r)
{
    const lab_rank_model_t *res = &results(rn)->ranks[r];
    return res->done || res->failed || rn->m.sess.ranks[r].died;
}

/* After a death, once every other rank has reported how it ended, there is
 * nothing left to wait for. */
static void let_go_if_reported(runner_t *rn)
{
    if (!rn->after_death)
        return;
    for (int r = 0; r < rn->m.np; r++)
        if (!has_reported(rn, r))
            return;
    rn->after_death = false;
    json_t *bye = json_pack("{s:s}", "type", "exit");
    for (int r = 0; r < rn->m.np; r++)
        lab_ctrl_send(rn->ctrl, r, bye);
    json_decref(bye);
    uv_timer_start(&rn->grace, grace_expired, EXIT_GRACE_MS, 0);
}

/* " during all_reduce step 2/6 (reduce-scatter)" (prep: "during"), or
 * where else it was. A
 * benchmark's position comes from the rank's beats, so it is said to be the
 * last one reported. */
static void describe_where(const runner_t *rn, int rank, const char *prep, char *buf, size_t cap)
{
    const lab_rank_model_t *m = &rn->m.sess.ranks[rank];
    const lab_rank_info_t *in = lab_ctrl_rank(rn->ctrl, rank);
    if (m->where[0] != '\0')
        snprintf(buf, cap, " %s %s%s", prep, m->where,
                 m->where_from_beat ? " (mid-collective, as last reported)" : "");
    else if (m->ended[0] != '\0')
        snprintf(buf, cap, " after %s", m->ended);
    else if (m->ready)
        snprintf(buf, cap, " before its first step");
    else if (in != NULL && in->connected)
        snprintf(buf, cap, " while joining the world");
    else
        snprintf(buf, cap, " while starting");
}

static void add_death(runner_t *rn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_death(runner_t *rn, const char *fmt, ...)
{
    size_t len = strlen(rn->deaths);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rn->deaths + len, sizeof(rn->deaths) - len, fmt, ap);
    va_end(ap);
}

static lab_session_t *results(runner_t *rn);
static size_t whole_rows(const lab_session_t *s);

/* The rows every rank has reported and that are not out yet. */
static void print_rows(runner_t *rn)
{
    lab_session_t *res = results(rn);
    size_t rows = whole_rows(res);
    if (rows > rn->table.printed) {
        lab_report_bench_rows(stdout, rn->job, res, &rn->table, rows);
        fflush(stdout);
    }
}

static void on_event(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg)
{
    (void)c;
    runner_t *rn = arg;
    switch (lab_model_fold(&rn->m, rank, f)) {
    case LAB_FOLD_READY: {
        /* Tracing is on before the job starts: the ranks take frames in
         * order. */
        if (rn->m.trace != NULL)
            for (int r = 0; r < rn->m.np; r++)
                lab_ctrl_send(rn->ctrl, r, rn->trace_on);
        json_t *job = lab_job_to_json(rn->job);
        for (int r = 0; r < rn->m.np; r++)
            lab_model_batch_sent(&rn->m, 0, r, lab_ctrl_send(rn->ctrl, r, job) == DL_OK);
        json_decref(job);
        lab_model_sync(&rn->m);
        rn->job_sent = true;
        break;
    }
    case LAB_FOLD_START_FAIL:
        /* The world cannot form: the others would wait out their timeout. */
        rn->n_finished++;
        if (!rn->stopping) {
            rn->stopping = true;
            uv_timer_start(&rn->grace, grace_expired, DEATH_GRACE_MS, 0);
        }
        break;
    case LAB_FOLD_FINISHED:
        if (++rn->n_finished == rn->m.np)
            stop_ranks(rn, EXIT_GRACE_MS);
        let_go_if_reported(rn);
        break;
    default:
        if (rn->rows_live && strcmp(lab_msg_type(f->json), "bench") == 0)
            print_rows(rn);
        break;
    }
}

static void on_exit_cb(lab_ctrl_t *c, int rank, int64_t status, int sig, void *arg)
{
    runner_t *rn = arg;
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    const lab_rank_model_t *res = &results(rn)->ranks[rank];
    (void)status;
    (void)sig;
    char how[160];
    lab_ctrl_describe_rank_exit(c, rank, how, sizeof(how));
    if (!rn->stopping && !res->done && !res->failed) {
        /* A death: name the rank, how it ended and where it was. */
        char where[256];
        describe_where(rn, rank, "during", where, sizeof(where));
        lab_model_rank_exited(&rn->m, rank, how);
        if (in->pid > 0)
            add_death(rn, "distlab: rank %d (pid %d) %s%s\n", rank, in->pid, how, where);
        else /* it never said its pid (mpirun failed before it started) */
            add_death(rn, "distlab: rank %d %s%s\n", rank, how, where);
        /* The others notice within a liveness check and report; then go. */
        rn->stopping = rn->after_death = true;
        uv_timer_start(&rn->grace, grace_expired, DEATH_GRACE_MS, 0);
        let_go_if_reported(rn);
    } else if (!res->done && !res->failed) {
        lab_model_rank_exited(&rn->m, rank, how);
        let_go_if_reported(rn);
    }
    finish_if_exited(rn);
}

/* A rank stopped answering (lab/ctrl/controller.c): it is named, with where it
 * was, and ended, so that the job ends now instead of at the watchdog. */
static void on_unresponsive(lab_ctrl_t *c, int rank, void *arg)
{
    runner_t *rn = arg;
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    const lab_rank_model_t *res = &results(rn)->ranks[rank];
    if (!in->unresponsive || in->exited || res->done || res->failed ||
        rn->m.sess.ranks[rank].died || rn->signo != 0)
        return;
    char where[256], why[64] = "";
    describe_where(rn, rank, "in", where, sizeof(where));
    if (in->stuck)
        snprintf(why, sizeof(why), " (alive, but no progress)");
    else if (in->stopped)
        snprintf(why, sizeof(why), " (its process is stopped)");
    add_death(rn, "distlab: rank %d (pid %d) not responding%s after %.1f s%s; distlab killed it\n",
              rank, in->pid, where, in->quiet_s, why);
    lab_model_rank_exited(&rn->m, rank, "not responding: distlab killed it");
    lab_ctrl_kill(c, rank, SIGKILL);
    if (!rn->stopping) {
        rn->stopping = rn->after_death = true;
        uv_timer_start(&rn->grace, grace_expired, DEATH_GRACE_MS, 0);
    }
    let_go_if_reported(rn);
}

static bool alone_busy(lab_ctrl_t *c, int rank, void *arg)
{
    (void)c;
    runner_t *rn = arg;
    if (!rn->job_sent)
        return false;
    for (int r = 0; r < rn->m.np; r++)
        if (r != rank && !has_reported(rn, r))
            return false;
    return true;
}

/* SIGINT or SIGTERM: the ranks are stopped at once; what the job has
 * produced is printed after the loop. */
static void on_signal(uv_signal_t *h, int sig)
{
    runner_t *rn = h->data;
    if (rn->signo != 0)
        return;
    rn->signo = sig;
    rn->stopping = true;
    if (rn->ctrl != NULL)
        lab_ctrl_kill_all(rn->ctrl, SIGKILL);
    /* Whatever is still starting goes with the controller's close. */
    uv_timer_start(&rn->grace, grace_expired, DEATH_GRACE_MS, 0);
}

static void watchdog_fired(uv_timer_t *t)
{
    runner_t *rn = t->data;
    rn->timed_out = true;
    if (rn->ctrl != NULL)
        lab_ctrl_kill_all(rn->ctrl, SIGKILL);
}

static void print_failure(runner_t *rn)
{
    fputs(rn->deaths, stderr);
    /* When the world never formed, say who held it up: one line for those
     * that connected, one for those that never did. */
    bool held[LAB_MAX_NP];
    for (int connected = 1; connected >= 0 && !rn->job_sent; connected--) {
        int n = 0;
        for (int r = 0; r < rn->m.np && r < LAB_MAX_NP; r++) {
            const lab_rank_model_t *m = &rn->m.sess.ranks[r];
            held[r] =
                !m->ready && !results(rn)->ranks[r].failed && !m->died && m->connected == connected;
            n += held[r];
        }
        if (n == 0)
            continue;
        char ranks[1024];
        lab_report_rank_list(held, rn->m.np, ranks, sizeof(ranks));
        fprintf(stderr, "distlab: rank%s %s never joined the world: %s %s\n", n > 1 ? "s" : "",
                ranks, n > 1 ? "they" : "it",
                connected ? "connected, but did not finish setting up the communicator"
                          : "never connected");
    }
    if (rn->timed_out) {
        fprintf(stderr, "distlab: %s did not finish within %g s; ranks still busy:",
                lab_prim_name(rn->job->prim), rn->job->timeout_s + START_GRACE_S);
        for (int r = 0; r < rn->m.np; r++) {
            const lab_rank_model_t *res = &results(rn)->ranks[r];
            if (!res->done && !res->failed) {
                const char *where = rn->m.sess.ranks[r].where;
                fprintf(stderr, " %d%s%s%s", r, where[0] ? " (" : "", where, where[0] ? ")" : "");
            }
        }
        fprintf(stderr, "\n");
    }
    lab_report_errors(stderr, results(rn));
}

/* The bench rows every rank has reported: a row is whole only then. */
static size_t whole_rows(const lab_session_t *s)
{
    size_t n = (size_t)-1;
    for (int r = 0; r < s->np; r++) {
        size_t k = json_array_size(s->ranks[r].bench);
        n = k < n ? k : n;
    }
    return s->np > 0 ? n : 0;
}

/* SIGINT or SIGTERM: one line saying what was stopped, after what the job
 * produced (a benchmark's whole rows). */
static void report_interrupted(runner_t *rn, const lab_runner_opts_t *opts)
{
    const lab_job_t *job = rn->job;
    lab_session_t *res = results(rn);
    size_t rows = whole_rows(res);
    if (job->bench && rows > 0) {
        for (int r = 0; r < rn->m.np; r++)
            while (json_array_size(res->ranks[r].bench) > rows)
                json_array_remove(res->ranks[r].bench, rows);
        if (opts->json) {
            lab_report_bench_json(stdout, job, res);
        } else {
            lab_report_bench_rows(stdout, job, res, &rn->table, rows);
            lab_report_bench_end(stdout, job, &rn->table);
        }
    }
    fflush(stdout);
    char where[200] = "";
    for (int r = 0; r < rn->m.np && where[0] == '\0'; r++)
        if (rn->m.sess.ranks[r].where[0] != '\0' && !res->ranks[r].done)
            snprintf(where, sizeof(where), " (rank %d was in %s)", r, rn->m.sess.ranks[r].where);
    char done[64] = "";
    if (job->bench)
        snprintf(done, sizeof(done), " after %zu size%s", rows, rows == 1 ? "" : "s");
    fprintf(stderr, "distlab: interrupted by SIG%s: %s %s stopped%s%s%s; its ranks were ended\n",
            sigabbrev_np(rn->signo), job->bench ? "bench" : "run", lab_prim_name(job->prim),
            !rn->job_sent ? " before it began" : "", done, where);
}

/* --trace: writes what the ranks that reported recorded (a rank that died
 * took its records with it). Returns the exit code, 1 when the trace could
 * not be written. */
static int write_trace(runner_t *rn, const char *path, int code)
{
    const lab_job_t *job = rn->job;
    char title[160], why[512], drops[512];
    snprintf(title, sizeof(title), "distlab %s %s, %d rank%s%s%s", job->bench ? "bench" : "run",
             lab_prim_name(job->prim), job->np, job->np == 1 ? "" : "s", job->algo[0] ? ", " : "",
             job->algo);
    if (lab_trace_dropped(rn->m.trace, drops, sizeof(drops)) > 0)
        fprintf(stderr, "distlab: --trace: %s\n", drops);
    if (lab_trace_write(rn->m.trace, path, title, why, sizeof(why)) != DL_OK) {
        fprintf(stderr, "distlab: --trace: %s\n", why);
        return code == 0 ? 1 : code;
    }
    return code;
}

int lab_runner_run(const lab_job_t *job, const lab_runner_opts_t *opts)
{
    runner_t rn;
    memset(&rn, 0, sizeof(rn));
    rn.job = job;
    rn.rows_live = job->bench && (opts == NULL || !opts->json);
    lab_model_init(&rn.m);
    const char *trace = opts->launch.trace;
    if (uv_loop_init(&rn.loop) != 0 || lab_model_new_world(&rn.m, job->np) != DL_OK ||
        lab_model_job_new(&rn.m) != DL_OK ||
        (trace != NULL &&
         (lab_trace_new(LAB_TRACE_CAP, &rn.m.trace) != DL_OK ||
          (rn.trace_on = json_pack("{s:s, s:b}", "type", "config", "trace", true)) == NULL))) {
        lab_model_fini(&rn.m);
        fprintf(stderr, "distlab: out of memory\n");
        return 1;
    }
    uv_timer_init(&rn.loop, &rn.watchdog);
    uv_timer_init(&rn.loop, &rn.grace);
    uv_signal_init(&rn.loop, &rn.sigint);
    uv_signal_init(&rn.loop, &rn.sigterm);
    rn.watchdog.data = rn.grace.data = rn.sigint.data = rn.sigterm.data = &rn;
    uv_signal_start(&rn.sigint, on_signal, SIGINT);
    uv_signal_start(&rn.sigterm, on_signal, SIGTERM);
    lab_launch_opts_t lo = opts->launch;
    lo.np = job->np;
    lo.timeout_s = job->timeout_s;
    lo.backend = job->backend;
    lab_ctrl_cbs_t cbs = {.on_event = on_event,
                          .on_exit = on_exit_cb,
                          .on_unresponsive = on_unresponsive,
                          .alone_busy = alone_busy};
    int code = 1;
    unsigned said = dl_log_errors();
    if (lab_ctrl_start(&rn.loop, &lo, &cbs, &rn, &rn.ctrl) != DL_OK) {
        rn.ctrl = NULL;
        close_handles(&rn);
        uv_run(&rn.loop, UV_RUN_DEFAULT);
        if (dl_log_errors() == said) /* else the cause was said, in one line */
            fprintf(stderr, "distlab: could not start %d ranks\n", job->np);
        goto out;
    }
    if (opts->started != NULL)
        opts->started(rn.ctrl, opts->started_arg);
    uv_timer_start(&rn.watchdog, watchdog_fired, (uint64_t)((job->timeout_s + START_GRACE_S) * 1e3),
                   0);
    uv_run(&rn.loop, UV_RUN_DEFAULT);

    if (rn.signo != 0) {
        report_interrupted(&rn, opts);
        code = 128 + rn.signo;
        goto out;
    }
    bool ok = rn.n_finished == job->np && rn.deaths[0] == '\0' && !rn.timed_out;
    for (int r = 0; r < job->np; r++)
        ok = ok && results(&rn)->ranks[r].done;
    if (ok) {
        if (!job->bench)
            lab_report_run(stdout, job, results(&rn));
        else if (opts != NULL && opts->json)
            lab_report_bench_json(stdout, job, results(&rn));
        else {
            lab_report_bench_rows(stdout, job, results(&rn), &rn.table, SIZE_MAX);
            lab_report_bench_end(stdout, job, &rn.table);
        }
        code = 0;
    } else {
        print_failure(&rn);
    }
out:
    fflush(stdout);
    if (trace != NULL)
        code = write_trace(&rn, trace, code);
    json_decref(rn.trace_on);
    uv_loop_close(&rn.loop);
    lab_model_fini(&rn.m);
    return code;
}
