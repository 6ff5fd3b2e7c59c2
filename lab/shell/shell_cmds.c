/* The shell's own commands: session commands (ranks, kill, respawn, spawn,
 * set, explain, help, history, source, clear, quit) and step mode's (step,
 * next, continue, back, forward). See lab/lang/commands.c for the table that
 * documents them. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/backends.h"
#include "lab/lang/lang.h"
#include "lab/proto/proto.h"
#include "lab/shell/shell_internal.h"

#define say_err    lab__shell_say_err
#define MAX_SOURCE 32 /* `source` expansions per line: a file sourcing itself stops */

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

static void cmd_ranks(lab_shell_t *sh)
{
    fprintf(sh->o.out, "rank  pid      %-24s  state\n", "host");
    for (int r = 0; r < sh->np; r++) {
        const lab_rank_info_t *in = sh->ctrl ? lab_ctrl_rank(sh->ctrl, r) : NULL;
        const lab_rank_model_t *m = &sh->sess.ranks[r];
        char state[200];
        if (in != NULL && in->exited && in->term_signal != 0)
            snprintf(state, sizeof(state), "dead (SIG%s)", sigabbrev_np(in->term_signal));
        else if (in != NULL && in->exited)
            snprintf(state, sizeof(state), "exited (code %lld)", (long long)in->exit_status);
        else if (in != NULL && in->unresponsive)
            snprintf(state, sizeof(state), "not responding%s%s (%s)", m->where[0] ? ": " : "",
                     m->where,
                     in->stuck     ? "no progress"
                     : in->stopped ? "stopped"
                                   : "silent");
        else if (sh->batch.inflight && sh->batch.outstanding[r] > 0)
            snprintf(state, sizeof(state), "busy%s%s", m->where[0] ? ": " : "", m->where);
        else
            snprintf(state, sizeof(state), "%s", m->ready ? "ready" : "starting");
        char host[96] = "";
        if (in != NULL && in->worker > 0)
            snprintf(host, sizeof(host), "%s (worker %d)", in->host, in->worker);
        else if (in != NULL)
            snprintf(host, sizeof(host), "%s", in->host);
        fprintf(sh->o.out, "%4d  %-7d  %-24s  %s\n", r, in ? in->pid : 0, host, state);
    }
    fflush(sh->o.out);
}

static bool on_off(lab_shell_t *sh, const json_t *cmd, size_t i, const char *usage, bool *v)
{
    const char *w = word(cmd, i);
    if (n_words(cmd) == i + 1 && w != NULL && (strcmp(w, "on") == 0 || strcmp(w, "off") == 0)) {
        *v = strcmp(w, "on") == 0;
        return true;
    }
    say_err(sh, false, "usage: %s", usage);
    return false;
}

static bool cmd_set(lab_shell_t *sh, const json_t *cmd)
{
    const char *what = word(cmd, 1);
    if (what != NULL && strcmp(what, "timeout") == 0 && n_words(cmd) == 3) {
        char *end = NULL;
        double s = strtod(word(cmd, 2), &end);
        if (*end != '\0' || !(s > 0) || s > 86400) {
            say_err(sh, false, "set timeout takes seconds (up to 86400), e.g. set timeout 10");
            return false;
        }
        sh->o.launch.timeout_s = s;
        if (sh->ctrl != NULL)
            lab_ctrl_set_timeout(sh->ctrl, s);
        lab__shell_send_all(sh, json_pack("{s:s, s:f}", "type", "config", "timeout", s));
        return true;
    }
    if (what != NULL && strcmp(what, "check") == 0) {
        if (!on_off(sh, cmd, 2, "set check on|off", &sh->check))
            return false;
        lab__shell_send_all(sh, json_pack("{s:s, s:b}", "type", "config", "check", sh->check));
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
        lab__shell_send_all(sh, json_pack("{s:s, s:s, s:s}", "type", "config", "coll",
                                          dl_coll_name(c), "algo", sh->algo[c]));
        return true;
    }
    say_err(sh, false,
            "usage: set timeout SECONDS | set algo COLLECTIVE ALGORITHM | set check on|off");
    return false;
}

static bool cmd_explain(lab_shell_t *sh, const json_t *cmd)
{
    dl_coll_t c;
    if (n_words(cmd) < 2 || n_words(cmd) > 4 || dl_coll_parse(word(cmd, 1), &c) != DL_OK) {
        say_err(sh, false, "usage: explain COLLECTIVE [ALGORITHM] [COUNT]");
        return false;
    }
    const char *algo = n_words(cmd) > 2 ? word(cmd, 2) : sh->algo[c][0] ? sh->algo[c] : NULL;
    if (algo != NULL && strcmp(algo, "default") == 0)
        algo = NULL;
    long count = 8;
    if (n_words(cmd) > 3) {
        char *end = NULL;
        count = strtol(word(cmd, 3), &end, 10);
        if (*end != '\0' || count < 0 || count > (1L << 30)) {
            say_err(sh, false, "explain: COUNT must be a number of elements, e.g. 8");
            return false;
        }
    }
    dl_coll_args_t args = {.coll = c, .nranks = sh->np, .count = (size_t)count, .op = DL_OP_SUM};
    dl_sched_t *s = NULL;
    dl_status_t st = dl_sched_build(algo, &args, 8, &s);
    if (st != DL_OK) {
        char names[256];
        dl_algo_names_for(c, names, sizeof(names));
        say_err(sh, false, "cannot explain %s with %s: %s; algorithms for %s: %s", dl_coll_name(c),
                algo ? algo : "the default", dl_strerror(st), dl_coll_name(c), names);
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
        fflush(sh->o.out);
        return true;
    }
    if (n_words(cmd) > 2 || lab_lang_print_help(sh->o.out, word(cmd, 1)) != DL_OK) {
        say_err(sh, false, "no help for '%s'; `help` lists the commands", word(cmd, 1));
        return false;
    }
    fflush(sh->o.out);
    return true;
}

/* `source FILE`: the file's statements run next, in this line's place. A
 * line of the file that does not parse stops it before anything runs. */
static bool cmd_source(lab_shell_t *sh, const json_t *cmd)
{
    if (n_words(cmd) != 2) {
        say_err(sh, false, "usage: source FILE");
        return false;
    }
    if (++sh->source_depth > MAX_SOURCE) {
        say_err(sh, false,
                "source: more than %d files sourced by one line (a file sourcing "
                "itself?)",
                MAX_SOURCE);
        return false;
    }
    const char *path = word(cmd, 1);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        say_err(sh, false, "source: cannot read %s: %s", path, strerror(errno));
        return false;
    }
    json_t *all = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0;
    bool ok = true;
    while (ok && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        json_t *stmts = NULL;
        lab_parse_error_t err;
        if (lab_parse_line(line, &stmts, &err) != DL_OK) {
            char caret[1024];
            lab_parse_error_format(line, &err, caret, sizeof(caret));
            say_err(sh, false, "source: %s:%d:", path, lineno);
            fputs(caret, sh->o.err);
            fflush(sh->o.err);
            ok = false;
            break;
        }
        json_array_extend(all, stmts);
        json_decref(stmts);
    }
    free(line);
    fclose(f);
    if (ok) {
        size_t i;
        json_t *s;
        json_array_foreach(all, i, s)
        {
            json_array_insert(sh->stmts, sh->next + i, s);
        }
    }
    json_decref(all);
    return ok;
}

/* ---- step mode ---- */

static void tell_paused(lab_shell_t *sh, json_t *go)
{
    const lab_stepper_t *st = &sh->stepper;
    for (int i = 0; i < st->ngroup && sh->ctrl != NULL; i++)
        lab_ctrl_send(sh->ctrl, st->group[i], go);
    json_decref(go);
}

static bool cmd_step(lab_shell_t *sh, const json_t *cmd, bool *async_p)
{
    bool on;
    if (!on_off(sh, cmd, 1, "step on|off", &on))
        return false;
    sh->step_mode = on;
    lab__shell_send_all(sh, json_pack("{s:s, s:b}", "type", "config", "step", on));
    /* MPI and NCCL run a collective as one library call: say what a step is. */
    const char *backend = sh->o.launch.backend != NULL ? sh->o.launch.backend : "builtin";
    if (on && !dl_backend_steps_schedules(backend))
        fprintf(sh->o.out,
                "step mode on the %s backend steps whole collectives: each is one %s call, "
                "paused before it starts and shown after it ends\n",
                backend, strcmp(backend, "mpi") == 0 ? "MPI" : "NCCL");
    if (!on && lab__shell_paused(sh)) {
        tell_paused(sh, json_pack("{s:s, s:b, s:b}", "type", "go", "run", true, "step", false));
        lab_stepper_go(&sh->stepper, true);
        *async_p = true;
    }
    return true;
}

static bool cmd_go(lab_shell_t *sh, bool run, bool *async_p)
{
    if (!lab__shell_paused(sh)) {
        say_err(sh, false, "nothing is paused: `step on`, then run a collective%s",
                sh->step_mode ? "" : " (step mode is off)");
        return false;
    }
    tell_paused(sh, json_pack("{s:s, s:b}", "type", "go", "run", run));
    lab_stepper_go(&sh->stepper, run);
    *async_p = true; /* finishes when the ranks pause again or the line ends */
    return true;
}

static bool cmd_view(lab_shell_t *sh, bool back)
{
    const char *why = NULL;
    const char *text =
        back ? lab_stepper_back(&sh->stepper, &why) : lab_stepper_forward(&sh->stepper, &why);
    if (text == NULL) {
        say_err(sh, false, "%s", why);
        return false;
    }
    fprintf(sh->o.out, "(recorded) %s\n", text);
    fflush(sh->o.out);
    return true;
}

bool lab__shell_allowed_while_paused(const char *name)
{
    static const char *const ok[] = {"next", "continue", "back",    "forward", "step",
                                     "help", "ranks",    "history", "explain", "clear",
                                     "kill", "quit",     "exit",    NULL};
    for (int i = 0; ok[i] != NULL; i++)
        if (strcmp(ok[i], name) == 0)
            return true;
    return false;
}

bool lab__shell_command(lab_shell_t *sh, const json_t *cmd, bool *async_p)
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
        if (n_words(cmd) != 2) {
            say_err(sh, false, "usage: kill RANK");
            return false;
        }
        if (!parse_rank(sh, word(cmd, 1), &r))
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
        /* The local ranks; the workers' come on top. */
        int np = sh->np_local, least = sh->o.launch.workers != NULL ? 0 : 1;
        if (strcmp(name, "spawn") == 0) {
            char *end = NULL;
            long v = n_words(cmd) == 2 ? strtol(word(cmd, 1), &end, 10) : 0;
            if (n_words(cmd) != 2 || *end != '\0' || v < least || v > 256) {
                say_err(sh, false, "usage: spawn N (%d to 256 ranks)", least);
                return false;
            }
            np = (int)v;
        } else if (n_words(cmd) != 1) {
            say_err(sh, false, "usage: respawn");
            return false;
        }
        lab__shell_stop_world(sh);
        if (lab__shell_start_world(sh, np) != DL_OK)
            return false;
        *async_p = sh->np > 0; /* continues once every rank is ready */
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
            fprintf(sh->o.out, "%5zu  %s\n", sh->history_base + i + 1, sh->history[i]);
        fflush(sh->o.out);
        return true;
    }
    if (strcmp(name, "source") == 0)
        return cmd_source(sh, cmd);
    if (strcmp(name, "clear") == 0) {
        /* Only a terminal has a screen to clear. */
        if (sh->o.color) {
            fputs("\033[H\033[2J", sh->o.out);
            fflush(sh->o.out);
        }
        return true;
    }
    if (strcmp(name, "step") == 0)
        return cmd_step(sh, cmd, async_p);
    if (strcmp(name, "next") == 0 || strcmp(name, "continue") == 0)
        return cmd_go(sh, strcmp(name, "continue") == 0, async_p);
    if (strcmp(name, "back") == 0 || strcmp(name, "forward") == 0)
        return cmd_view(sh, strcmp(name, "back") == 0);
    say_err(sh, false, "'%s' is not available in this shell", name);
    return false;
}
