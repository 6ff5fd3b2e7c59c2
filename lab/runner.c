/* See runner.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/log.h"
#include "lab/controller.h"
#include "lab/proto.h"
#include "lab/report.h"
#include "lab/runner.h"
#include "lab/session.h"

#define START_GRACE_S  30.0 /* spawning and connecting, on top of the job's timeout */
#define DEATH_GRACE_MS 1500 /* after a death, how long the others may take to report */
#define EXIT_GRACE_MS  3000 /* after "exit", how long before ranks are killed */

typedef struct {
    uv_loop_t loop;
    lab_ctrl_t *ctrl;
    lab_session_t sess;
    const lab_job_t *job;
    uv_timer_t watchdog, grace;
    int n_ready, n_finished;
    bool job_sent;
    bool stopping;
    char deaths[2048]; /* one line per rank that died */
    bool timed_out;
} runner_t;

static void stop_ranks(runner_t *rn, int grace_ms);

static void grace_expired(uv_timer_t *t)
{
    runner_t *rn = t->data;
    lab_ctrl_kill_all(rn->ctrl, SIGKILL);
}

static void stop_ranks(runner_t *rn, int grace_ms)
{
    if (rn->stopping)
        return;
    rn->stopping = true;
    json_t *bye = json_pack("{s:s}", "type", "exit");
    for (int r = 0; r < rn->sess.np; r++)
        lab_ctrl_send(rn->ctrl, r, bye);
    json_decref(bye);
    uv_timer_start(&rn->grace, grace_expired, (uint64_t)grace_ms, 0);
}

static void finish_if_exited(runner_t *rn)
{
    if (!lab_ctrl_all_exited(rn->ctrl))
        return;
    uv_timer_stop(&rn->watchdog);
    uv_timer_stop(&rn->grace);
    uv_close((uv_handle_t *)&rn->watchdog, NULL);
    uv_close((uv_handle_t *)&rn->grace, NULL);
    lab_ctrl_close(rn->ctrl);
}

static void on_event(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg)
{
    (void)c;
    runner_t *rn = arg;
    lab_session_fold(&rn->sess, rank, f);
    const char *type = lab_msg_type(f->json);
    if (strcmp(type, "ready") == 0 && ++rn->n_ready == rn->sess.np) {
        json_t *job = lab_job_to_json(rn->job);
        for (int r = 0; r < rn->sess.np; r++)
            lab_ctrl_send(rn->ctrl, r, job);
        json_decref(job);
        rn->job_sent = true;
    } else if (strcmp(type, "error") == 0 && !rn->job_sent) {
        /* The world cannot form: the others would wait out their timeout. */
        rn->n_finished++;
        if (!rn->stopping) {
            rn->stopping = true;
            uv_timer_start(&rn->grace, grace_expired, DEATH_GRACE_MS, 0);
        }
    } else if (strcmp(type, "done") == 0 || strcmp(type, "error") == 0) {
        if (++rn->n_finished == rn->sess.np)
            stop_ranks(rn, EXIT_GRACE_MS);
    }
}

static void on_exit_cb(lab_ctrl_t *c, int rank, int64_t status, int sig, void *arg)
{
    runner_t *rn = arg;
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    const lab_rank_model_t *m = &rn->sess.ranks[rank];
    if (!rn->stopping && !m->done && !m->failed) {
        /* A death: name the rank, how it ended and where it was. */
        char how[160];
        (void)status;
        (void)sig;
        lab_ctrl_describe_rank_exit(c, rank, how, sizeof(how));
        const char *where = m->where[0]     ? m->where
                            : m->ready      ? "before its first step"
                            : in->connected ? "while joining the world"
                                            : "while starting";
        rn->sess.ranks[rank].died = true;
        size_t len = strlen(rn->deaths);
        snprintf(rn->deaths + len, sizeof(rn->deaths) - len, "rank %d (pid %d) %s %s%s\n", rank,
                 in->pid, how, m->where[0] ? "during " : "", where);
        /* The others notice within a liveness check and report; then go. */
        rn->stopping = true;
        uv_timer_start(&rn->grace, grace_expired, DEATH_GRACE_MS, 0);
    }
    finish_if_exited(rn);
}

static void watchdog_fired(uv_timer_t *t)
{
    runner_t *rn = t->data;
    rn->timed_out = true;
    lab_ctrl_kill_all(rn->ctrl, SIGKILL);
}

static void print_failure(runner_t *rn)
{
    if (rn->deaths[0] != '\0')
        fprintf(stderr, "distlab: %s", rn->deaths);
    /* When the world never formed, say who held it up. */
    for (int r = 0; r < rn->sess.np && !rn->job_sent; r++) {
        const lab_rank_model_t *m = &rn->sess.ranks[r];
        if (m->ready || m->failed || m->died)
            continue;
        if (m->connected)
            fprintf(stderr,
                    "distlab: rank %d (pid %d) never joined the world: it connected but did not "
                    "finish setting up its communicator\n",
                    r, m->pid);
        else
            fprintf(stderr, "distlab: rank %d never joined the world: it never connected\n", r);
    }
    if (rn->timed_out) {
        fprintf(stderr, "distlab: %s did not finish within %g s; ranks still busy:",
                lab_prim_name(rn->job->prim), rn->job->timeout_s + START_GRACE_S);
        for (int r = 0; r < rn->sess.np; r++) {
            const lab_rank_model_t *m = &rn->sess.ranks[r];
            if (!m->done && !m->failed) {
                const char *where = m->where;
                fprintf(stderr, " %d%s%s%s", r, where[0] ? " (" : "", where, where[0] ? ")" : "");
            }
        }
        fprintf(stderr, "\n");
    }
    lab_report_errors(stderr, &rn->sess);
}

int lab_runner_run(const lab_job_t *job, const lab_runner_opts_t *opts)
{
    runner_t rn;
    memset(&rn, 0, sizeof(rn));
    rn.job = job;
    if (uv_loop_init(&rn.loop) != 0 || lab_session_init(&rn.sess, job->np) != DL_OK) {
        fprintf(stderr, "distlab: out of memory\n");
        return 1;
    }
    uv_timer_init(&rn.loop, &rn.watchdog);
    uv_timer_init(&rn.loop, &rn.grace);
    rn.watchdog.data = rn.grace.data = &rn;
    lab_ctrl_opts_t co = {.np = job->np,
                          .exe = getenv("DISTLAB_EXE"),
                          .timeout_s = job->timeout_s,
                          .transport = opts->transport,
                          .backend = job->backend,
                          .hostfile = opts->hostfile,
                          .hosts = opts->hosts,
                          .attach = opts->attach,
                          .attach_any_host = opts->attach_any_host};
    lab_ctrl_cbs_t cbs = {.on_event = on_event, .on_exit = on_exit_cb};
    int code = 1;
    if (lab_ctrl_start(&rn.loop, &co, &cbs, &rn, &rn.ctrl) != DL_OK) {
        uv_close((uv_handle_t *)&rn.watchdog, NULL);
        uv_close((uv_handle_t *)&rn.grace, NULL);
        uv_run(&rn.loop, UV_RUN_DEFAULT);
        fprintf(stderr, "distlab: could not start %d ranks\n", job->np);
        goto out;
    }
    if (opts->started != NULL)
        opts->started(rn.ctrl, opts->started_arg);
    uv_timer_start(&rn.watchdog, watchdog_fired, (uint64_t)((job->timeout_s + START_GRACE_S) * 1e3),
                   0);
    uv_run(&rn.loop, UV_RUN_DEFAULT);

    bool ok = rn.n_finished == job->np && rn.deaths[0] == '\0' && !rn.timed_out;
    for (int r = 0; r < job->np; r++)
        ok = ok && rn.sess.ranks[r].done;
    if (ok) {
        if (!job->bench)
            lab_report_run(stdout, job, &rn.sess);
        else if (opts != NULL && opts->json)
            lab_report_bench_json(stdout, job, &rn.sess);
        else
            lab_report_bench(stdout, job, &rn.sess);
        code = 0;
    } else {
        print_failure(&rn);
    }
out:
    fflush(stdout);
    uv_loop_close(&rn.loop);
    lab_session_fini(&rn.sess);
    return code;
}
