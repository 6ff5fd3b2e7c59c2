/* See shell.h. Lines are parsed here; consecutive rank statements form a
 * batch that goes to the ranks at once; session and step commands are in
 * lab/shell/shell_cmds.c. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/log.h"
#include "lab/lang/lang.h"
#include "lab/proto/proto.h"
#include "lab/session/report.h"
#include "lab/shell/shell_internal.h"

#define WATCHDOG_EXTRA_S 5.0 /* past the ranks' own timeout */

static void run_statements(lab_shell_t *sh);
static void fail_statement(lab_shell_t *sh);
static void close_handles(lab_shell_t *sh);

/* ---- output ---- */

void lab__shell_say_err(lab_shell_t *sh, bool async, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    lab_model_say(&sh->m, -1, async, "%s", text);
}

#define say_err lab__shell_say_err

/* ---- the batch in flight ---- */

static void batch_free(lab_shell_t *sh)
{
    /* The patience timer belongs to the batch's collectives. */
    uv_timer_stop(&sh->match_timer);
    lab_model_batch_drop(&sh->m);
}

bool lab__shell_paused(const lab_shell_t *sh)
{
    return lab_model_paused(&sh->m);
}

bool lab_shell_stepping(const lab_shell_t *sh)
{
    return lab__shell_paused(sh);
}

const char *lab_shell_paused_step(const lab_shell_t *sh, int *done_p, int *steps_p)
{
    if (!lab__shell_paused(sh))
        return NULL;
    *done_p = sh->m.stepper.cur - 1;
    *steps_p = sh->m.stepper.steps;
    return sh->m.stepper.coll;
}

bool lab_shell_paused_at(const lab_shell_t *sh, char *buf, size_t cap)
{
    if (!lab__shell_paused(sh))
        return false;
    snprintf(buf, cap, "%s is paused before step %d/%d", sh->m.stepper.coll, sh->m.stepper.cur,
             sh->m.stepper.steps);
    return true;
}

/* ---- the world ---- */

static void on_event(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg);
static void on_exit_cb(lab_ctrl_t *c, int rank, int64_t status, int sig, void *arg);
static void on_unresponsive(lab_ctrl_t *c, int rank, void *arg);
static bool alone_busy(lab_ctrl_t *c, int rank, void *arg);
static void rank_lost(lab_shell_t *sh, int rank, const char *error, const char *why);

/* A rank is dead or gone silent: the world must be respawned. Before it
 * formed, that ends it and the line waiting for it (true); after, the
 * caller lets the line in flight go on without the rank (false). */
static bool world_broken(lab_shell_t *sh)
{
    sh->broken = true;
    if (sh->m.ready)
        return false;
    lab__shell_stop_world(sh);
    fail_statement(sh);
    run_statements(sh);
    return true;
}

dl_status_t lab__shell_start_world(lab_shell_t *sh, int np_local)
{
    /* The workers' ranks come after the local ones (lab/ctrl/launch.h). */
    int np = np_local + lab_launcher_nranks(sh->o.launch.workers);
    sh->np_local = np_local;
    batch_free(sh);
    lab__shell_forget_names(sh); /* the new ranks hold no tensors */
    if (lab_model_new_world(&sh->m, np) != DL_OK)
        return DL_ERR_NOMEM;
    if (np == 0) /* no local ranks, and no worker has joined yet */
        return DL_OK;
    sh->broken = sh->start_failed = false;
    lab_launch_opts_t lo = sh->o.launch;
    lo.np = np_local;
    lab_ctrl_cbs_t cbs = {.on_event = on_event,
                          .on_exit = on_exit_cb,
                          .on_unresponsive = on_unresponsive,
                          .alone_busy = alone_busy};
    unsigned said = dl_log_errors();
    dl_status_t st = lab_ctrl_start(sh->loop, &lo, &cbs, sh, &sh->ctrl);
    if (st != DL_OK) {
        sh->ctrl = NULL;
        sh->broken = sh->start_failed = true;
        if (dl_log_errors() == said) /* else the cause was said, in one line */
            say_err(sh, false, "could not start %d ranks", np);
        return st;
    }
    for (int r = 0; r < np; r++) { /* workers' ranks are placed again when they say hello */
        const lab_rank_info_t *in = lab_ctrl_rank(sh->ctrl, r);
        lab_model_place(&sh->m, r, in->pid, in->host, in->worker);
    }
    return DL_OK;
}

void lab__shell_stop_world(lab_shell_t *sh)
{
    if (sh->ctrl != NULL)
        lab_ctrl_close(sh->ctrl); /* kills the ranks; frees itself later */
    sh->ctrl = NULL;
    uv_timer_stop(&sh->watchdog);
    uv_timer_stop(&sh->match_timer);
    lab_model_end_world(&sh->m);
}

void lab__shell_send_all(lab_shell_t *sh, json_t *msg)
{
    for (int r = 0; sh->ctrl != NULL && r < sh->m.np; r++)
        if (!sh->m.sess.ranks[r].died)
            lab_ctrl_send(sh->ctrl, r, msg);
    json_decref(msg);
}

/* ---- finishing statements and lines ---- */

static void finish_line(lab_shell_t *sh)
{
    if (sh->line_ok)
        lab__shell_learn_names(sh, sh->stmts);
    json_decref(sh->stmts);
    sh->stmts = NULL;
    lab_shell_done_t done = sh->done;
    sh->done = NULL;
    if (done != NULL)
        done(sh->done_arg, sh->line_ok);
}

/* A collective waits in step mode: the prompt comes back while the line
 * waits for step commands. */
static void suspend_line(lab_shell_t *sh)
{
    lab_shell_done_t done = sh->done;
    sh->done = NULL;
    if (done != NULL)
        done(sh->done_arg, sh->line_ok);
}

static void fail_statement(lab_shell_t *sh)
{
    sh->line_ok = false;
    if (sh->stmts != NULL)
        sh->next = json_array_size(sh->stmts); /* the rest of the line is skipped */
}

/* The views hear of the statements every rank has finished, in order (a
 * failed one fails the line: on_model); once the batch is over the line
 * goes on. */
static void batch_maybe_done(lab_shell_t *sh)
{
    if (!lab_model_report_finished(&sh->m))
        return;
    uv_timer_stop(&sh->watchdog);
    uv_timer_stop(&sh->match_timer);
    if (!sh->line_ok)
        fail_statement(sh);
    run_statements(sh);
}

static void arm_watchdog(lab_shell_t *sh);

/* What each rank is doing, for the collective matcher. */
static void decide_collectives(lab_shell_t *sh);
static void decide_p2p(lab_shell_t *sh);

static void rank_went_idle(lab_shell_t *sh)
{
    decide_collectives(sh);
    decide_p2p(sh);
}

/* Rank r is through with statement i (quiet: its failure was reported):
 * once it has nothing left to run, a wait may be decided. */
static void give_up_on_rank(lab_shell_t *sh, size_t i, int r, const char *error, bool quiet)
{
    if (lab_model_give_up(&sh->m, i, r, error, quiet))
        rank_went_idle(sh);
}

static void watchdog_fired(uv_timer_t *t)
{
    lab_shell_t *sh = t->data;
    lab_batch_t *b = &sh->m.batch;
    if (!b->inflight || lab__shell_paused(sh))
        return;
    char who[512] = "";
    size_t len = 0;
    for (int r = 0; r < sh->m.np; r++) {
        const lab_rank_model_t *m = &sh->m.sess.ranks[r];
        if (b->outstanding[r] > 0 && len < sizeof(who) - 16)
            len += (size_t)snprintf(who + len, sizeof(who) - len, "%s%d%s%s%s", len ? ", " : "", r,
                                    m->where[0] ? " (" : "", m->where, m->where[0] ? ")" : "");
    }
    say_err(sh, false, "no answer from rank %s within %g s; `respawn` restarts the ranks", who,
            sh->o.launch.timeout_s + WATCHDOG_EXTRA_S);
    sh->broken = true;
    for (size_t i = 0; i < b->n; i++)
        for (int r = 0; r < sh->m.np; r++)
            give_up_on_rank(sh, i, r, NULL, true);
    lab_model_sync(&sh->m);
    batch_maybe_done(sh);
}

static void arm_watchdog(lab_shell_t *sh)
{
    uv_timer_start(&sh->watchdog, watchdog_fired,
                   (uint64_t)((sh->o.launch.timeout_s + WATCHDOG_EXTRA_S) * 1e3), 0);
}

/* ---- collective fingerprints ---- */

static void send_verdict(void *arg, int rank, bool ok, const char *message)
{
    lab_shell_t *sh = arg;
    json_t *v = json_pack("{s:s, s:b}", "type", "verdict", "ok", ok);
    if (!ok)
        json_object_set_new(v, "message", json_string(message));
    json_object_set_new(v, "quiet", json_true());
    if (sh->ctrl != NULL)
        lab_ctrl_send(sh->ctrl, rank, v);
    json_decref(v);
}

static void report_mismatch(void *arg, const char *text)
{
    lab_shell_t *sh = arg;
    say_err(sh, sh->done == NULL, "%s", text);
}

/* A blocking recv that can never be matched is reported at once, and the
 * rank alone is let go (SIGUSR1: its wait gives up, as at Ctrl-C, but the
 * other ranks' work goes on), its statement failing quietly: this was the
 * report. */
static void decide_p2p(lab_shell_t *sh)
{
    if (sh->m.p2p.n_recvs == 0 || !sh->m.batch.inflight)
        return;
    lab_rank_state_t *state = lab_model_rank_states(&sh->m);
    if (state == NULL)
        return;
    char why[256];
    int r;
    while ((r = lab_p2p_hopeless(&sh->m.p2p, state, why, sizeof(why))) >= 0) {
        say_err(sh, sh->done == NULL, "rank %d: %s; nothing was received", r, why);
        sh->m.life[r].p2p_refused = true;
        state[r] = LAB_RANK_FAILED; /* its statement fails: it sends nothing more */
        if (sh->ctrl != NULL) {
            json_t *forget = json_pack("{s:s}", "type", "interrupted");
            lab_ctrl_kill(sh->ctrl, r, SIGUSR1);
            lab_ctrl_send(sh->ctrl, r, forget);
            json_decref(forget);
        }
    }
    free(state);
}

static void decide_impatiently(uv_timer_t *t)
{
    lab_shell_t *sh = t->data;
    sh->impatient = true;
    decide_collectives(sh);
    sh->impatient = false;
}

static void decide_collectives(lab_shell_t *sh)
{
    if (!lab_match_pending(&sh->m.match))
        return;
    lab_rank_state_t *state = lab_model_rank_states(&sh->m);
    if (state == NULL)
        return;
    lab_match_cbs_t cbs = {.verdict = send_verdict, .report = report_mismatch, .arg = sh};
    lab_match_decide(&sh->m.match, state, !sh->impatient, &cbs);
    /* A rank still running statements is likely about to call the
     * collective: the verdict waits a moment for it, so that the report
     * names what it calls. */
    if (!sh->impatient && lab_match_waits_on_running(&sh->m.match, state))
        uv_timer_start(&sh->match_timer, decide_impatiently, MATCH_PATIENCE_MS, 0);
    free(state);
}

/* ---- events from the ranks ---- */

/* The shell's own subscription: what the session's changes mean for the
 * line in flight. */
static void on_model(void *arg, const lab_model_t *m, const lab_event_t *ev)
{
    (void)m;
    lab_shell_t *sh = arg;
    if (ev->kind == LAB_EV_STMT_FAILED)
        sh->line_ok = false;
}

static void on_event(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg)
{
    lab_shell_t *sh = arg;
    if (c != sh->ctrl)
        return; /* a world being closed */
    if (strcmp(lab_msg_type(f->json), "hello") == 0) {
        const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
        lab_model_place(&sh->m, rank, in->pid, in->host, in->worker);
    }
    switch (lab_model_fold(&sh->m, rank, f)) {
    case LAB_FOLD_READY:
        lab__shell_send_settings(sh); /* before any statement */
        run_statements(sh);
        break;
    case LAB_FOLD_START_FAIL:
        say_err(sh, true, "rank %d could not start: %s", rank,
                lab_json_str(f->json, "message", "?"));
        sh->broken = sh->start_failed = true;
        lab__shell_stop_world(sh);
        fail_statement(sh);
        run_statements(sh);
        break;
    case LAB_FOLD_COLL:
        decide_collectives(sh);
        break;
    case LAB_FOLD_COLL_BAD:
        send_verdict(sh, rank, false, "malformed collective fingerprint");
        break;
    case LAB_FOLD_P2P:
        decide_p2p(sh);
        break;
    case LAB_FOLD_PAUSED:
        uv_timer_stop(&sh->watchdog); /* a person decides now */
        run_statements(sh);
        break;
    case LAB_FOLD_FINISHED:
        if (!lab_model_busy(&sh->m, rank))
            rank_went_idle(sh); /* it is idle now: may decide a wait */
        if (!lab__shell_paused(sh))
            arm_watchdog(sh);
        batch_maybe_done(sh);
        break;
    case LAB_FOLD_NOTHING:
        break;
    }
}

/* Ranks paused in step mode or waiting for a verdict are told to give up,
 * and why (their statement fails with it); ranks moving data notice a dead
 * peer or an interrupt themselves. */
static void release_waiters(lab_shell_t *sh, const char *why)
{
    json_t *abort = json_pack("{s:s, s:s}", "type", "abort", "why", why);
    for (int r = 0; r < sh->m.np; r++)
        if (sh->m.batch.inflight && sh->m.batch.outstanding[r] > 0 && !sh->m.sess.ranks[r].died &&
            sh->ctrl != NULL)
            lab_ctrl_send(sh->ctrl, r, abort);
    json_decref(abort);
    for (int r = 0; r < sh->m.np; r++)
        lab_match_forget(&sh->m.match, r);
    lab_stepper_abort(&sh->m.stepper);
}

static void on_exit_cb(lab_ctrl_t *c, int rank, int64_t status, int sig, void *arg)
{
    lab_shell_t *sh = arg;
    if (c != sh->ctrl)
        return;
    (void)status;
    lab_rank_model_t *m = &sh->m.sess.ranks[rank];
    char how[200], who[160];
    lab_ctrl_describe_rank_exit(c, rank, how, sizeof(how));
    lab_ctrl_describe_rank(c, rank, who, sizeof(who)); /* names the host of a worker's rank */
    lab_batch_t *b = &sh->m.batch;
    bool busy = lab_model_busy(&sh->m, rank);
    char cause[240];
    snprintf(cause, sizeof(cause), "%s", how);
    lab_model_rank_exited(&sh->m, rank, cause);
    /* A rank that said why it ends (the mpi backend's watchdog: a timeout
     * or Ctrl-C in a blocking MPI call) has its reason on the same line. */
    bool said = busy && m->last_error[0] != '\0' && sig == 0;
    /* About the rank: a view shows it in the rank's place too. */
    lab_model_say(&sh->m, rank, sh->done == NULL && sh->killing != rank,
                  "%s %s%s%s%s%s; `respawn` brings the world back", who, how,
                  busy && m->where[0] ? " during "
                  : busy              ? " while busy"
                                      : "",
                  busy ? m->where : "", said ? ": " : "", said ? m->last_error : "");
    if (world_broken(sh))
        return;
    /* The others take the world down at once: a send small enough to
     * complete when posted would otherwise go to the dead rank unnoticed,
     * until some wait found it gone. */
    char down[400];
    snprintf(down, sizeof(down), "%s %s", who, how);
    json_t *died = json_pack("{s:s, s:s}", "type", "peer_died", "why", down);
    for (int r = 0; r < sh->m.np; r++)
        if (r != rank && !sh->m.sess.ranks[r].died && sh->ctrl != NULL)
            lab_ctrl_send(sh->ctrl, r, died);
    json_decref(died);
    /* "was killed by ..." reads "killed by ..." after "died: ". */
    char error[240];
    snprintf(error, sizeof(error), "died: %s", strncmp(how, "was ", 4) == 0 ? how + 4 : how);
    rank_lost(sh, rank, error, down);
    if (sh->killing == rank) {
        sh->killing = -1;
        if (!b->inflight)
            run_statements(sh);
    }
    if (b->inflight)
        batch_maybe_done(sh);
}

/* A rank is gone from the line in flight (dead, or not responding): its
 * statements fail with error (already reported), and peers waiting for it
 * in step mode or for a fingerprint verdict are released, with why (the
 * rank named) as the cause of their failure. */
static void rank_lost(lab_shell_t *sh, int rank, const char *error, const char *why)
{
    lab_batch_t *b = &sh->m.batch;
    bool was_paused = lab__shell_paused(sh);
    lab_match_forget(&sh->m.match, rank);
    for (size_t i = 0; b->inflight && i < b->n; i++)
        give_up_on_rank(sh, i, rank, error, true); /* reported already */
    lab_model_sync(&sh->m);
    if (was_paused || sh->m.stepper.active) {
        release_waiters(sh, why); /* paused peers would wait for a person forever */
    } else
        decide_collectives(sh);
}

/* A rank stopped answering (lab/ctrl/controller.c), or answers again. The shell
 * does not end it (a person may have stopped it on purpose, and `kill N`
 * is at hand): it is named, with where it was, and counts as gone for the
 * line in flight, so that its peers stop waiting for it. */
static void on_unresponsive(lab_ctrl_t *c, int rank, void *arg)
{
    lab_shell_t *sh = arg;
    if (c != sh->ctrl)
        return;
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    lab_rank_model_t *m = &sh->m.sess.ranks[rank];
    char who[160];
    lab_ctrl_describe_rank(c, rank, who, sizeof(who));
    if (!in->unresponsive) {
        if (m->unresponsive && !m->died)
            say_err(sh, sh->done == NULL,
                    "%s answers again; what it was running has failed, `respawn` restarts the "
                    "world",
                    who);
        lab_model_rank_unresponsive(&sh->m, rank, NULL);
        return;
    }
    if (m->died || in->exited)
        return;
    lab_batch_t *b = &sh->m.batch;
    bool busy = lab_model_busy(&sh->m, rank);
    char error[200];
    snprintf(error, sizeof(error), "not responding after %.1f s", in->quiet_s);
    lab_model_rank_unresponsive(&sh->m, rank, error);
    say_err(sh, sh->done == NULL,
            "%s not responding%s%s after %.1f s%s; `kill %d` ends it, `respawn` restarts the world",
            who,
            busy && m->where[0] ? " in "
            : busy              ? " while busy"
                                : "",
            busy ? m->where : "", in->quiet_s,
            in->stuck     ? " (alive, but no progress)"
            : in->stopped ? " (its process is stopped)"
                          : "",
            rank);
    if (world_broken(sh))
        return;
    char why[400];
    snprintf(why, sizeof(why), "%s not responding after %.1f s", who, in->quiet_s);
    /* Should it answer again, what of the line it has not run yet is
     * skipped (lab/rank/rank.c): the line is reported failed on it. */
    if (b->inflight && sh->ctrl != NULL) {
        json_t *gone = json_pack("{s:s, s:I}", "type", "given_up", "batch", (json_int_t)b->id);
        lab_ctrl_send(sh->ctrl, rank, gone);
        json_decref(gone);
    }
    rank_lost(sh, rank, error, why);
    if (b->inflight)
        batch_maybe_done(sh);
}

/* Whether rank alone holds the line up: every other rank has finished its
 * statements of the batch in flight. */
static bool alone_busy(lab_ctrl_t *c, int rank, void *arg)
{
    lab_shell_t *sh = arg;
    if (c != sh->ctrl || !sh->m.batch.inflight || lab__shell_paused(sh))
        return false;
    for (int r = 0; r < sh->m.np; r++)
        if (r != rank && sh->m.batch.outstanding[r] > 0 && !sh->m.sess.ranks[r].died &&
            !sh->m.sess.ranks[r].unresponsive)
            return false;
    return sh->m.batch.outstanding[rank] > 0;
}

void lab_shell_interrupt(lab_shell_t *sh)
{
    fail_statement(sh); /* the rest of the line is skipped, whatever the ranks answer */
    if (!sh->m.batch.inflight)
        return;
    /* Ranks moving data get SIGUSR2: their waits fail with "interrupted
     * (Ctrl-C)" (lab/rank/rank.c, dl_comm_interrupt_from_signal) and the world
     * stays usable. The frame after the signal makes a rank that had
     * finished already forget it before its next statement. */
    json_t *forget = json_pack("{s:s}", "type", "interrupted");
    for (int r = 0; r < sh->m.np && sh->ctrl != NULL; r++)
        if (sh->m.batch.outstanding[r] > 0 && !sh->m.sess.ranks[r].died) {
            lab_ctrl_kill(sh->ctrl, r, SIGUSR2);
            lab_ctrl_send(sh->ctrl, r, forget);
        }
    json_decref(forget);
    release_waiters(sh, "interrupted (Ctrl-C)");
}

/* ---- running statements ---- */

/* Fills targeted[] from a statement's `on` list; false when a rank does not
 * exist or is dead (reported). */
static bool targets_of(lab_shell_t *sh, const json_t *stmt, bool *targeted)
{
    json_t *targets = json_object_get(stmt, "targets");
    if (json_is_array(targets)) {
        size_t i;
        json_t *t;
        json_array_foreach(targets, i, t)
        {
            json_int_t r = json_integer_value(t);
            if (r < 0 || r >= sh->m.np) {
                say_err(sh, false, "rank %lld does not exist (world size %d)", (long long)r,
                        sh->m.np);
                return false;
            }
            targeted[r] = true;
        }
    } else {
        for (int r = 0; r < sh->m.np; r++)
            targeted[r] = true;
    }
    for (int r = 0; r < sh->m.np; r++)
        if (targeted[r] && sh->m.sess.ranks[r].died) {
            say_err(sh, false, "rank %d is dead; `respawn` brings the world back", r);
            return false;
        } else if (targeted[r] && sh->m.sess.ranks[r].unresponsive) {
            say_err(sh, false,
                    "rank %d is not responding; `kill %d` ends it, `respawn` restarts the world", r,
                    r);
            return false;
        }
    return true;
}

/* Sends statements [first, first+n) of the line to their ranks at once. */
static bool send_batch(lab_shell_t *sh, size_t first, size_t n)
{
    batch_free(sh);
    if (lab_model_batch_new(&sh->m, sh->stmts, first, n) != DL_OK)
        return false;
    lab_batch_t *b = &sh->m.batch;
    for (size_t i = 0; i < n; i++)
        if (!targets_of(sh, json_array_get(sh->stmts, first + i), b->stmts[i].targeted)) {
            batch_free(sh);
            return false;
        }
    for (size_t i = 0; i < n; i++) {
        lab_stmt_t *s = &b->stmts[i];
        json_t *msg = json_pack("{s:s, s:I, s:I, s:O, s:b}", "type", "exec", "id", s->id, "batch",
                                b->id, "stmt", s->stmt, "whole", sh->whole);
        for (int r = 0; r < sh->m.np; r++)
            if (s->targeted[r])
                lab_model_batch_sent(&sh->m, i, r, lab_ctrl_send(sh->ctrl, r, msg) == DL_OK);
        json_decref(msg);
    }
    lab_model_sync(&sh->m);
    arm_watchdog(sh);
    batch_maybe_done(sh); /* statements no rank could take */
    return true;
}

static bool is_session_stmt(const json_t *stmt)
{
    return lab_stmt_session_cmd(stmt) != NULL;
}

/* Whether stmt is a session command that may run while a collective is
 * paused in step mode. */
static bool allowed_while_paused(const json_t *stmt)
{
    const lab_cmd_t *row = lab_stmt_session_cmd(stmt);
    return row != NULL && (row->flags & LAB_CMD_WHILE_PAUSED);
}

/* Runs statements of the current line until it must wait for the ranks. */
static void run_statements(lab_shell_t *sh)
{
    for (;;) {
        if (sh->m.batch.inflight) {
            if (!lab__shell_paused(sh))
                return;
            /* A collective waits for a step command: the line goes on only
             * with the commands that make sense now; otherwise the prompt
             * comes back and the line waits. */
            json_t *stmt = sh->stmts != NULL && sh->next < json_array_size(sh->stmts)
                               ? json_array_get(sh->stmts, sh->next)
                               : NULL;
            if (stmt == NULL || !allowed_while_paused(stmt)) {
                suspend_line(sh);
                return;
            }
            sh->next++;
            bool async = false;
            if (!lab__shell_command(sh, json_object_get(stmt, "command"), &async))
                sh->line_ok = false;
            if (sh->quitting)
                break;
            if (async)
                return;
            continue;
        }
        if (sh->stmts == NULL || sh->next >= json_array_size(sh->stmts))
            break;
        json_t *stmt = json_array_get(sh->stmts, sh->next);
        const lab_cmd_t *row = lab_stmt_session_cmd(stmt);
        if (row != NULL) {
            bool needs_world = row->flags & LAB_CMD_NEEDS_WORLD;
            if (needs_world && !sh->m.ready && sh->ctrl != NULL)
                return; /* runs once every rank is ready */
            sh->next++;
            bool async = false;
            if (!lab__shell_command(sh, json_object_get(stmt, "command"), &async)) {
                fail_statement(sh);
                break;
            }
            if (sh->quitting)
                break;
            if (async)
                return;
            continue;
        }
        if (!sh->m.ready) {
            if (sh->ctrl != NULL)
                return; /* runs once every rank is ready */
            say_err(sh, false, "no ranks are running; `respawn` starts them");
            fail_statement(sh);
            break;
        }
        /* The run of rank statements up to the next session command. */
        size_t first = sh->next, end = first;
        while (end < json_array_size(sh->stmts) && !is_session_stmt(json_array_get(sh->stmts, end)))
            end++;
        sh->next = end;
        if (!send_batch(sh, first, end - first)) {
            fail_statement(sh);
            break;
        }
        return;
    }
    if (sh->stmts != NULL)
        finish_line(sh);
}

/* A line given while a collective waits in step mode: only commands that
 * make sense now; they run before the rest of the waiting line. */
static void submit_while_paused(lab_shell_t *sh, json_t *stmts, lab_shell_done_t done, void *arg)
{
    size_t i;
    json_t *stmt;
    json_array_foreach(stmts, i, stmt)
    {
        if (!allowed_while_paused(stmt)) {
            char where[128];
            lab_shell_paused_at(sh, where, sizeof(where));
            if (sh->view_keys) /* Enter zooms there */
                say_err(sh, false,
                        "%s: n runs the next step, c the rest, b and f show steps again; "
                        "`step off`, or Ctrl-C to abort it",
                        where);
            else
                say_err(sh, false,
                        "%s: `next` (or Enter), `continue`, `back`, `forward`, `step off`, or "
                        "Ctrl-C to abort it",
                        where);
            json_decref(stmts);
            done(arg, false);
            return;
        }
    }
    json_array_foreach(stmts, i, stmt)
    {
        json_array_insert(sh->stmts, sh->next + i, stmt);
    }
    json_decref(stmts);
    sh->done = done;
    sh->done_arg = arg;
    sh->line_ok = true;
    run_statements(sh);
}

void lab_shell_submit(lab_shell_t *sh, const char *line, lab_shell_done_t done, void *arg)
{
    if (line[strspn(line, " \t\r\n")] != '\0') {
        /* Bounded, so that a script streamed in for hours does not grow
         * without end; the numbers `history` shows stay those of the lines. */
        if (sh->n_history == LAB_SHELL_MAX_HISTORY) {
            free(sh->history[0]);
            memmove(sh->history, sh->history + 1, sizeof(char *) * (sh->n_history - 1));
            sh->n_history--;
            sh->history_base++;
        }
        char **h = realloc(sh->history, sizeof(char *) * (sh->n_history + 1));
        char *copy = strdup(line);
        if (h != NULL)
            sh->history = h;
        if (h != NULL && copy != NULL)
            sh->history[sh->n_history++] = copy;
        else
            free(copy);
    } else if (lab__shell_paused(sh)) {
        line = "next"; /* Enter runs the next step */
    }
    lab_parse_error_t err;
    json_t *stmts = NULL;
    if (lab_parse_line(line, &stmts, &err) != DL_OK) {
        char caret[1024];
        lab_parse_error_format(line, &err, caret, sizeof(caret));
        fputs(caret, sh->o.err);
        fflush(sh->o.err);
        done(arg, false);
        return;
    }
    if (sh->stmts != NULL && lab__shell_paused(sh)) {
        submit_while_paused(sh, stmts, done, arg);
        return;
    }
    json_decref(sh->stmts);
    sh->done = done;
    sh->done_arg = arg;
    sh->line_ok = true;
    sh->next = 0;
    sh->source_depth = 0;
    sh->stmts = stmts;
    run_statements(sh);
}

/* ---- life cycle ---- */

dl_status_t lab_shell_new(uv_loop_t *loop, const lab_shell_opts_t *opts, lab_shell_t **sh_p)
{
    lab_shell_t *sh = calloc(1, sizeof(*sh));
    if (sh == NULL)
        return DL_ERR_NOMEM;
    sh->loop = loop;
    sh->o = *opts;
    sh->killing = -1;
    sh->check = true;
    sh->echo = LAB_ECHO_ALL;
    if (sh->o.launch.timeout_s <= 0)
        sh->o.launch.timeout_s = 30;
    uv_timer_init(loop, &sh->watchdog);
    sh->watchdog.data = sh;
    uv_timer_init(loop, &sh->match_timer);
    sh->match_timer.data = sh;
    lab_model_init(&sh->m);
    if (lab_model_subscribe(&sh->m, on_model, sh) != DL_OK ||
        lab__shell_print_subscribe(sh) != DL_OK) {
        close_handles(sh);
        return DL_ERR_NOMEM;
    }
    if (opts->launch.trace != NULL && !lab__shell_trace_start(sh, opts->launch.trace)) {
        close_handles(sh);
        return DL_ERR_NOMEM;
    }
    dl_status_t st = lab__shell_start_world(sh, opts->launch.np);
    if (st != DL_OK) {
        close_handles(sh); /* sh is freed once they are closed */
        return st;
    }
    *sh_p = sh;
    return DL_OK;
}

bool lab_shell_quitting(const lab_shell_t *sh)
{
    return sh->quitting;
}

bool lab_shell_ready(const lab_shell_t *sh)
{
    return sh->m.ready;
}

bool lab_shell_start_failed(const lab_shell_t *sh)
{
    return sh->start_failed;
}

int lab_shell_world_size(const lab_shell_t *sh)
{
    return sh->m.np;
}

lab_model_t *lab_shell_model(lab_shell_t *sh)
{
    return &sh->m;
}

void lab_shell_set_output(lab_shell_t *sh, FILE *out, FILE *err, bool color)
{
    fflush(sh->o.out);
    fflush(sh->o.err);
    sh->o.out = out;
    sh->o.err = err;
    sh->o.color = color;
}

void lab_shell_view_keys(lab_shell_t *sh, bool on)
{
    sh->view_keys = on;
}

void lab_shell_whole(lab_shell_t *sh, bool whole)
{
    sh->whole = whole;
}

bool lab_shell_idle(const lab_shell_t *sh)
{
    return sh->stmts == NULL && !sh->m.batch.inflight;
}

void lab_shell_rebuild(lab_shell_t *sh)
{
    lab__shell_stop_world(sh);
    lab__shell_start_world(sh, sh->np_local);
}

static void shell_free(lab_shell_t *sh)
{
    free(sh->trace_path);
    for (size_t i = 0; i < sh->n_history; i++)
        free(sh->history[i]);
    free(sh->history);
    lab_model_fini(&sh->m);
    json_decref(sh->stmts);
    lab__shell_forget_names(sh);
    free(sh);
}

/* The handles live inside sh: it is freed when the last of them has
 * closed, whatever order libuv runs their close callbacks in. */
static void handle_closed(uv_handle_t *h)
{
    lab_shell_t *sh = h->data;
    if (--sh->open_handles == 0)
        shell_free(sh);
}

static void close_handles(lab_shell_t *sh)
{
    sh->open_handles = 2;
    uv_close((uv_handle_t *)&sh->match_timer, handle_closed);
    uv_close((uv_handle_t *)&sh->watchdog, handle_closed);
}

void lab_shell_close(lab_shell_t *sh)
{
    /* Every statement's records arrived before its end did: the trace is
     * whole once no line runs. */
    lab_shell_trace_end(sh);
    if (sh->ctrl != NULL)
        lab__shell_send_all(sh, json_pack("{s:s}", "type", "exit"));
    lab__shell_stop_world(sh);
    uv_timer_stop(&sh->watchdog);
    close_handles(sh);
}
