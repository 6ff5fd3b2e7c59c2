/* See shell.h. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/sched.h"
#include "lab/controller.h"
#include "lab/lang.h"
#include "lab/proto.h"
#include "lab/report.h"
#include "lab/session.h"
#include "lab/shell.h"

#define WATCHDOG_EXTRA_S 5.0 /* past the ranks' own timeout */

struct lab_shell {
    uv_loop_t *loop;
    lab_shell_opts_t o;
    lab_ctrl_t *ctrl;
    lab_session_t sess;
    int np;
    bool ready;  /* every rank reported ready */
    bool broken; /* a rank died: the world must be respawned */
    int n_ready;
    bool quitting;

    /* The line being run: its statements, the next one, who to tell. */
    json_t *stmts;
    size_t next;
    bool line_ok;
    lab_shell_done_t done;
    void *done_arg;

    /* The statement in flight on the ranks. */
    bool inflight;
    json_int_t id;
    bool *targeted;
    int awaiting;
    uv_timer_t watchdog;

    int killing;                   /* `kill N` finishes when rank N's exit is seen; -1 when none */
    char algo[DL_COLL__COUNT][32]; /* set algo, for explain */
    char **history;
    size_t n_history;
};

static void run_statements(lab_shell_t *sh);

/* ---- output ---- */

static void say_err(lab_shell_t *sh, bool async, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say_err(lab_shell_t *sh, bool async, const char *fmt, ...)
{
    if (async && sh->o.before_async_output != NULL)
        sh->o.before_async_output(sh->o.arg);
    va_list ap;
    va_start(ap, fmt);
    fputs(sh->o.color ? "\033[31mdistlab:\033[0m " : "distlab: ", sh->o.err);
    vfprintf(sh->o.err, fmt, ap);
    fputc('\n', sh->o.err);
    va_end(ap);
    fflush(sh->o.err);
    if (async && sh->o.after_async_output != NULL)
        sh->o.after_async_output(sh->o.arg);
}

/* ---- the world ---- */

static void on_event(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg);
static void on_exit_cb(lab_ctrl_t *c, int rank, int64_t status, int sig, void *arg);

static dl_status_t start_world(lab_shell_t *sh, int np)
{
    lab_session_fini(&sh->sess);
    free(sh->targeted);
    sh->targeted = calloc((size_t)np, sizeof(bool));
    if (sh->targeted == NULL || lab_session_init(&sh->sess, np) != DL_OK)
        return DL_ERR_NOMEM;
    sh->np = np;
    sh->ready = sh->broken = false;
    sh->n_ready = 0;
    memset(sh->algo, 0, sizeof(sh->algo));
    lab_ctrl_opts_t co = {.np = np, .exe = getenv("DISTLAB_EXE"), .timeout_s = sh->o.timeout_s};
    lab_ctrl_cbs_t cbs = {.on_event = on_event, .on_exit = on_exit_cb};
    dl_status_t st = lab_ctrl_start(sh->loop, &co, &cbs, sh, &sh->ctrl);
    if (st != DL_OK) {
        sh->ctrl = NULL;
        sh->broken = true;
        say_err(sh, false, "could not start %d ranks", np);
    }
    return st;
}

static void stop_world(lab_shell_t *sh)
{
    if (sh->ctrl != NULL)
        lab_ctrl_close(sh->ctrl); /* kills the ranks; frees itself later */
    sh->ctrl = NULL;
    sh->ready = false;
}

/* ---- finishing statements and lines ---- */

static void finish_line(lab_shell_t *sh)
{
    json_decref(sh->stmts);
    sh->stmts = NULL;
    lab_shell_done_t done = sh->done;
    sh->done = NULL;
    if (done != NULL)
        done(sh->done_arg, sh->line_ok);
}

static void fail_statement(lab_shell_t *sh)
{
    sh->line_ok = false;
    sh->next = json_array_size(sh->stmts); /* the rest of the line is skipped */
}

static void print_results(lab_shell_t *sh)
{
    bool any_error = false;
    for (int r = 0; r < sh->np; r++) {
        if (!sh->targeted[r])
            continue;
        const lab_rank_model_t *m = &sh->sess.ranks[r];
        lab_report_rank_results(sh->o.out, r, m);
        if (m->failed) {
            any_error = true;
            fflush(sh->o.out);
            say_err(sh, false, "rank %d: %s", r, m->error);
        }
    }
    fflush(sh->o.out);
    if (any_error)
        fail_statement(sh);
}

static void statement_done(lab_shell_t *sh)
{
    uv_timer_stop(&sh->watchdog);
    sh->inflight = false;
    print_results(sh);
    run_statements(sh);
}

static void watchdog_fired(uv_timer_t *t)
{
    lab_shell_t *sh = t->data;
    if (!sh->inflight)
        return;
    char who[512] = "";
    size_t len = 0;
    for (int r = 0; r < sh->np; r++) {
        const lab_rank_model_t *m = &sh->sess.ranks[r];
        if (sh->targeted[r] && !m->done && !m->failed && len < sizeof(who) - 16)
            len += (size_t)snprintf(who + len, sizeof(who) - len, "%s%d%s%s%s", len ? ", " : "", r,
                                    m->where[0] ? " (" : "", m->where, m->where[0] ? ")" : "");
    }
    say_err(sh, false, "no answer from rank %s within %g s; `respawn` restarts the ranks", who,
            sh->o.timeout_s + WATCHDOG_EXTRA_S);
    sh->broken = true;
    sh->inflight = false;
    fail_statement(sh);
    print_results(sh);
    run_statements(sh);
}

/* ---- events from the ranks ---- */

static void on_event(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg)
{
    lab_shell_t *sh = arg;
    if (c != sh->ctrl)
        return; /* a world being closed */
    lab_session_fold(&sh->sess, rank, f);
    const char *type = lab_msg_type(f->json);
    if (strcmp(type, "ready") == 0) {
        if (++sh->n_ready == sh->np) {
            sh->ready = true;
            run_statements(sh);
        }
        return;
    }
    if (strcmp(type, "error") == 0 && !sh->ready) {
        say_err(sh, true, "rank %d could not start: %s", rank,
                lab_json_str(f->json, "message", "?"));
        sh->broken = true;
        stop_world(sh);
        fail_statement(sh);
        run_statements(sh);
        return;
    }
    if ((strcmp(type, "done") == 0 || strcmp(type, "error") == 0) && sh->inflight &&
        lab_json_int(f->json, "id", -1) == sh->id && sh->targeted[rank]) {
        if (--sh->awaiting == 0)
            statement_done(sh);
    }
}

static void on_exit_cb(lab_ctrl_t *c, int rank, int64_t status, int sig, void *arg)
{
    lab_shell_t *sh = arg;
    if (c != sh->ctrl)
        return;
    lab_rank_model_t *m = &sh->sess.ranks[rank];
    char how[96];
    lab_ctrl_describe_exit(how, sizeof(how), status, sig);
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    bool busy = sh->inflight && sh->targeted[rank] && !m->done && !m->failed;
    m->died = true;
    say_err(sh, !sh->inflight && sh->killing != rank,
            "rank %d (pid %d) %s%s%s; `respawn` brings the world back", rank, in->pid, how,
            busy && m->where[0] ? " during "
            : busy              ? " while busy"
                                : "",
            busy ? m->where : "");
    sh->broken = true;
    if (sh->killing == rank) {
        sh->killing = -1;
        run_statements(sh);
        return;
    }
    if (!sh->ready) {
        /* The world never formed. */
        stop_world(sh);
        fail_statement(sh);
        run_statements(sh);
        return;
    }
    if (busy) {
        m->failed = true;
        snprintf(m->error, sizeof(m->error), "died %s", how + 4);
        if (--sh->awaiting == 0)
            statement_done(sh);
    }
}

/* ---- session commands ---- */

static const char *word(const json_t *cmd, size_t i)
{
    return json_string_value(json_array_get(json_object_get(cmd, "words"), i));
}

static size_t n_words(const json_t *cmd)
{
    return json_array_size(json_object_get(cmd, "words"));
}

static bool parse_rank(lab_shell_t *sh, const char *s, int *r_p)
{
    char *end = NULL;
    long r = s != NULL ? strtol(s, &end, 10) : -1;
    if (s == NULL || *end != '\0' || r < 0 || r >= sh->np) {
        say_err(sh, false, "rank %s does not exist (world size %d)", s ? s : "?", sh->np);
        return false;
    }
    *r_p = (int)r;
    return true;
}

static void send_all(lab_shell_t *sh, json_t *msg)
{
    for (int r = 0; r < sh->np; r++)
        if (!sh->sess.ranks[r].died)
            lab_ctrl_send(sh->ctrl, r, msg);
    json_decref(msg);
}

static void cmd_ranks(lab_shell_t *sh)
{
    fprintf(sh->o.out, "rank  pid      state\n");
    for (int r = 0; r < sh->np; r++) {
        const lab_rank_info_t *in = sh->ctrl ? lab_ctrl_rank(sh->ctrl, r) : NULL;
        const lab_rank_model_t *m = &sh->sess.ranks[r];
        char state[96];
        if (in != NULL && in->exited && in->term_signal != 0)
            snprintf(state, sizeof(state), "dead (SIG%s)", sigabbrev_np(in->term_signal));
        else if (in != NULL && in->exited)
            snprintf(state, sizeof(state), "exited (code %lld)", (long long)in->exit_status);
        else
            snprintf(state, sizeof(state), "%s", m->ready ? "ready" : "starting");
        fprintf(sh->o.out, "%4d  %-7d  %s\n", r, in ? in->pid : 0, state);
    }
    fflush(sh->o.out);
}

static bool cmd_set(lab_shell_t *sh, const json_t *cmd)
{
    const char *what = word(cmd, 1);
    if (what != NULL && strcmp(what, "timeout") == 0 && n_words(cmd) == 3) {
        double s = atof(word(cmd, 2));
        if (s <= 0) {
            say_err(sh, false, "set timeout takes seconds, e.g. set timeout 10");
            return false;
        }
        sh->o.timeout_s = s;
        send_all(sh, json_pack("{s:s, s:f}", "type", "config", "timeout", s));
        return true;
    }
    if (what != NULL && strcmp(what, "algo") == 0 && n_words(cmd) == 4) {
        dl_coll_t c;
        const char *name = word(cmd, 3);
        if (dl_coll_parse(word(cmd, 2), &c) != DL_OK) {
            say_err(sh, false, "unknown collective '%s'", word(cmd, 2));
            return false;
        }
        const dl_algo_t *a = strcmp(name, "default") == 0 ? NULL : dl_algo_find(name);
        if (strcmp(name, "default") != 0 && (a == NULL || a->build[c] == NULL)) {
            char names[256];
            dl_algo_names_for(c, names, sizeof(names));
            say_err(sh, false, "algorithm '%s' %s %s; algorithms for %s: %s", name,
                    a == NULL ? "is unknown for" : "does not implement", dl_coll_name(c),
                    dl_coll_name(c), names);
            return false;
        }
        snprintf(sh->algo[c], sizeof(sh->algo[c]), "%s", a != NULL ? name : "");
        send_all(sh, json_pack("{s:s, s:s, s:s}", "type", "config", "coll", dl_coll_name(c), "algo",
                               sh->algo[c]));
        return true;
    }
    say_err(sh, false, "usage: set timeout SECONDS | set algo COLLECTIVE ALGORITHM");
    return false;
}

static bool cmd_explain(lab_shell_t *sh, const json_t *cmd)
{
    dl_coll_t c;
    if (n_words(cmd) < 2 || dl_coll_parse(word(cmd, 1), &c) != DL_OK) {
        say_err(sh, false, "usage: explain COLLECTIVE [ALGORITHM] [COUNT]");
        return false;
    }
    const char *algo = n_words(cmd) > 2 ? word(cmd, 2) : sh->algo[c][0] ? sh->algo[c] : NULL;
    long count = n_words(cmd) > 3 ? atol(word(cmd, 3)) : 8;
    dl_coll_args_t args = {.coll = c, .nranks = sh->np, .count = (size_t)count, .op = DL_OP_SUM};
    dl_sched_t *s = NULL;
    if (count < 0 || dl_sched_build(algo, &args, 8, &s) != DL_OK) {
        say_err(sh, false, "cannot explain %s with %s", dl_coll_name(c), algo ? algo : "default");
        return false;
    }
    dl_sched_explain(s, 8, "int64", sh->o.out);
    dl_sched_free(s);
    fflush(sh->o.out);
    return true;
}

static bool cmd_help(lab_shell_t *sh, const json_t *cmd)
{
    if (n_words(cmd) < 2) {
        lab_lang_print_help(sh->o.out, NULL);
        return true;
    }
    if (lab_lang_print_help(sh->o.out, word(cmd, 1)) != DL_OK) {
        say_err(sh, false, "no help for '%s'; `help` lists the commands", word(cmd, 1));
        return false;
    }
    return true;
}

/* Runs a session command; returns false when it failed. *async_p is set
 * when it finishes later (respawn waits for the ranks). */
static bool session_command(lab_shell_t *sh, const json_t *cmd, bool *async_p)
{
    const char *name = lab_json_str(cmd, "cmd", "");
    *async_p = false;
    if (strcmp(name, "quit") == 0 || strcmp(name, "exit") == 0) {
        sh->quitting = true;
        return true;
    }
    if (strcmp(name, "ranks") == 0) {
        cmd_ranks(sh);
        return true;
    }
    if (strcmp(name, "kill") == 0) {
        int r;
        if (n_words(cmd) != 2 || !parse_rank(sh, word(cmd, 1), &r))
            return false;
        if (sh->ctrl == NULL || lab_ctrl_rank(sh->ctrl, r)->exited) {
            say_err(sh, false, "rank %d is not running", r);
            return false;
        }
        lab_ctrl_kill(sh->ctrl, r, SIGKILL);
        sh->killing = r;
        *async_p = true; /* continues when its exit is seen */
        return true;
    }
    if (strcmp(name, "respawn") == 0 || strcmp(name, "spawn") == 0) {
        int np = sh->np;
        if (strcmp(name, "spawn") == 0) {
            char *end = NULL;
            long v = n_words(cmd) == 2 ? strtol(word(cmd, 1), &end, 10) : 0;
            if (n_words(cmd) != 2 || *end != '\0' || v < 1 || v > 256) {
                say_err(sh, false, "usage: spawn N (1 to 256 ranks)");
                return false;
            }
            np = (int)v;
        }
        stop_world(sh);
        if (start_world(sh, np) != DL_OK)
            return false;
        *async_p = true; /* continues once every rank is ready */
        return true;
    }
    if (strcmp(name, "set") == 0)
        return cmd_set(sh, cmd);
    if (strcmp(name, "explain") == 0)
        return cmd_explain(sh, cmd);
    if (strcmp(name, "help") == 0)
        return cmd_help(sh, cmd);
    if (strcmp(name, "history") == 0) {
        for (size_t i = 0; i < sh->n_history; i++)
            fprintf(sh->o.out, "%5zu  %s\n", i + 1, sh->history[i]);
        fflush(sh->o.out);
        return true;
    }
    say_err(sh, false, "'%s' is not available in this shell yet", name);
    return false;
}

/* ---- running statements ---- */

static bool send_statement(lab_shell_t *sh, json_t *stmt)
{
    json_t *targets = json_object_get(stmt, "targets");
    memset(sh->targeted, 0, sizeof(bool) * (size_t)sh->np);
    if (json_is_array(targets)) {
        size_t i;
        json_t *t;
        json_array_foreach(targets, i, t)
        {
            json_int_t r = json_integer_value(t);
            if (r < 0 || r >= sh->np) {
                say_err(sh, false, "rank %lld does not exist (world size %d)", (long long)r,
                        sh->np);
                return false;
            }
            sh->targeted[r] = true;
        }
    } else {
        for (int r = 0; r < sh->np; r++)
            sh->targeted[r] = true;
    }
    for (int r = 0; r < sh->np; r++)
        if (sh->targeted[r] && sh->sess.ranks[r].died) {
            say_err(sh, false, "rank %d is dead; `respawn` brings the world back", r);
            return false;
        }
    lab_session_clear_results(&sh->sess);
    sh->id++;
    sh->awaiting = 0;
    json_t *msg = json_pack("{s:s, s:I, s:O}", "type", "exec", "id", sh->id, "stmt", stmt);
    for (int r = 0; r < sh->np; r++)
        if (sh->targeted[r] && lab_ctrl_send(sh->ctrl, r, msg) == DL_OK)
            sh->awaiting++;
    json_decref(msg);
    if (sh->awaiting == 0)
        return false;
    sh->inflight = true;
    uv_timer_start(&sh->watchdog, watchdog_fired,
                   (uint64_t)((sh->o.timeout_s + WATCHDOG_EXTRA_S) * 1e3), 0);
    return true;
}

/* Runs statements of the current line until one goes to the ranks. */
static void run_statements(lab_shell_t *sh)
{
    if (sh->inflight)
        return;
    while (sh->stmts != NULL && sh->next < json_array_size(sh->stmts)) {
        json_t *stmt = json_array_get(sh->stmts, sh->next++);
        json_t *cmd = json_object_get(stmt, "command");
        const char *name = lab_json_str(cmd, "cmd", "");
        /* Everything but these waits for the ranks: `set` must reach them,
         * `ranks` and `kill` must see a formed world. */
        bool needs_world = !(strcmp(name, "respawn") == 0 || strcmp(name, "spawn") == 0 ||
                             strcmp(name, "quit") == 0 || strcmp(name, "exit") == 0 ||
                             strcmp(name, "help") == 0 || strcmp(name, "history") == 0);
        if (needs_world && !sh->ready && sh->ctrl != NULL) {
            sh->next--; /* run it once every rank is ready */
            return;
        }
        if (cmd != NULL && lab_lang_is_session(name)) {
            bool async = false;
            if (!session_command(sh, cmd, &async)) {
                fail_statement(sh);
                break;
            }
            if (async || sh->quitting)
                return;
            continue;
        }
        if (!sh->ready) {
            say_err(sh, false, "no ranks are running; `respawn` starts them");
            fail_statement(sh);
            break;
        }
        if (!send_statement(sh, stmt)) {
            fail_statement(sh);
            break;
        }
        return;
    }
    if (sh->stmts != NULL)
        finish_line(sh);
}

void lab_shell_submit(lab_shell_t *sh, const char *line, lab_shell_done_t done, void *arg)
{
    char **h = realloc(sh->history, sizeof(char *) * (sh->n_history + 1));
    if (h != NULL) {
        sh->history = h;
        sh->history[sh->n_history++] = strdup(line);
    }
    sh->done = done;
    sh->done_arg = arg;
    sh->line_ok = true;
    sh->next = 0;
    lab_parse_error_t err;
    json_t *stmts = NULL;
    if (lab_parse_line(line, &stmts, &err) != DL_OK) {
        char caret[1024];
        lab_parse_error_format(line, &err, caret, sizeof(caret));
        fputs(caret, sh->o.err);
        fflush(sh->o.err);
        sh->line_ok = false;
        sh->stmts = json_array();
        finish_line(sh);
        return;
    }
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
    if (sh->o.timeout_s <= 0)
        sh->o.timeout_s = 30;
    uv_timer_init(loop, &sh->watchdog);
    sh->watchdog.data = sh;
    dl_status_t st = start_world(sh, opts->np);
    if (st != DL_OK) {
        uv_close((uv_handle_t *)&sh->watchdog, NULL);
        lab_session_fini(&sh->sess);
        free(sh->targeted);
        free(sh);
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
    return sh->ready;
}

const char *const *lab_shell_history(const lab_shell_t *sh)
{
    return (const char *const *)sh->history;
}

static void shell_free(uv_handle_t *h)
{
    lab_shell_t *sh = h->data;
    for (size_t i = 0; i < sh->n_history; i++)
        free(sh->history[i]);
    free(sh->history);
    free(sh->targeted);
    lab_session_fini(&sh->sess);
    json_decref(sh->stmts);
    free(sh);
}

void lab_shell_close(lab_shell_t *sh)
{
    if (sh->ctrl != NULL) {
        json_t *bye = json_pack("{s:s}", "type", "exit");
        send_all(sh, bye);
    }
    stop_world(sh);
    uv_timer_stop(&sh->watchdog);
    uv_close((uv_handle_t *)&sh->watchdog, shell_free);
}
