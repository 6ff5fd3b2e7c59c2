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
#include "distlab/comm.h"
#include "lab/lang/lang.h"
#include "lab/proto/job.h"
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
    if (s == NULL || *end != '\0' || r < 0 || r >= sh->m.np) {
        say_err(sh, false, "rank %s does not exist (world size %d)", s ? s : "?", sh->m.np);
        return false;
    }
    *r_p = (int)r;
    return true;
}

/* Handlers (lab__shell_handler_t) take the row and the command whether they
 * need them or not, so that one table can hold them all. */

static bool cmd_ranks(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)cmd;
    (void)async_p;
    fprintf(sh->o.out, "rank  pid      %-24s  state\n", "host");
    const lab_model_t *mo = &sh->m;
    for (int r = 0; r < mo->np; r++) {
        /* The session model says what the rank does; the controller adds
         * how a dead one ended and why a silent one is called so. */
        const lab_rank_info_t *in = sh->ctrl ? lab_ctrl_rank(sh->ctrl, r) : NULL;
        const lab_rank_model_t *m = &mo->sess.ranks[r];
        const lab_stepper_t *st = &mo->stepper;
        char state[300];
        switch (lab_model_life(mo, r)) {
        case LAB_LIFE_DEAD:
            if (in != NULL && in->exited && in->term_signal == 0)
                snprintf(state, sizeof(state), "exited (code %lld)", (long long)in->exit_status);
            else if (in != NULL && in->exited)
                snprintf(state, sizeof(state), "dead (SIG%s)", sigabbrev_np(in->term_signal));
            else
                snprintf(state, sizeof(state), "dead (%s)", mo->life[r].cause);
            break;
        case LAB_LIFE_UNRESPONSIVE:
            snprintf(state, sizeof(state), "not responding%s%s (%s)", m->where[0] ? ": " : "",
                     m->where,
                     in != NULL && in->stuck     ? "no progress"
                     : in != NULL && in->stopped ? "stopped"
                                                 : "silent");
            break;
        case LAB_LIFE_PAUSED:
            snprintf(state, sizeof(state), "paused before step %d/%d of %s", st->cur, st->steps,
                     st->coll);
            break;
        case LAB_LIFE_BUSY:
            snprintf(state, sizeof(state), "busy%s%s", m->where[0] ? ": " : "", m->where);
            break;
        case LAB_LIFE_IDLE:
            snprintf(state, sizeof(state), "ready");
            break;
        case LAB_LIFE_STARTING:
            snprintf(state, sizeof(state), "starting");
            break;
        }
        char host[96] = "";
        if (mo->life[r].worker > 0)
            snprintf(host, sizeof(host), "%s (worker %d)", mo->life[r].host, mo->life[r].worker);
        else
            snprintf(host, sizeof(host), "%s", mo->life[r].host);
        fprintf(sh->o.out, "%4d  %-7d  %-24s  %s\n", r, m->pid, host, state);
    }
    fflush(sh->o.out);
    return true;
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

/* `set` alone: every setting, one per line, in the words that set it. */
/* `set echo`'s words, in lab_echo_t's order. */
static const char *const echo_names[] = {"on", "off", "print"};

static void print_settings(lab_shell_t *sh)
{
    FILE *out = sh->o.out;
    fprintf(out, "%-22s %g s\n", "timeout", sh->o.launch.timeout_s);
    fprintf(out, "%-22s %s\n", "check", sh->check ? "on" : "off");
    fprintf(out, "%-22s %s\n", "echo", echo_names[sh->echo]);
    fprintf(out, "%-22s %s\n", "step", sh->step_mode ? "on" : "off");
    for (int c = 0; c < DL_COLL__COUNT; c++) {
        char key[64];
        snprintf(key, sizeof(key), "algo %s", dl_coll_name((dl_coll_t)c));
        fprintf(out, "%-22s %s\n", key, sh->algo[c][0] ? sh->algo[c] : "default");
    }
    fflush(out);
}

void lab__shell_send_settings(lab_shell_t *sh)
{
    lab__shell_send_all(sh, json_pack("{s:s, s:f, s:b, s:b, s:b}", "type", "config", "timeout",
                                      sh->o.launch.timeout_s, "check", sh->check, "step",
                                      sh->step_mode, "trace", sh->m.trace != NULL));
    /* New ranks start with every collective's default algorithm. */
    for (int c = 0; c < DL_COLL__COUNT; c++)
        if (sh->algo[c][0] != '\0')
            lab__shell_send_all(sh, json_pack("{s:s, s:s, s:s}", "type", "config", "coll",
                                              dl_coll_name((dl_coll_t)c), "algo", sh->algo[c]));
}

static bool cmd_set(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)async_p;
    if (n_words(cmd) == 1) {
        print_settings(sh);
        return true;
    }
    const char *what = word(cmd, 1);
    if (what != NULL && strcmp(what, "timeout") == 0 && n_words(cmd) == 3) {
        char *end = NULL;
        double s = strtod(word(cmd, 2), &end);
        if (*end != '\0' || !(s > 0) || s > DL_MAX_TIMEOUT_S) {
            say_err(sh, false, "set timeout takes seconds (up to %g), e.g. set timeout 10",
                    DL_MAX_TIMEOUT_S);
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
    /* Echo is the shell's own: the ranks still send what they assigned
     * (the session model keeps it), the printer leaves it out. */
    if (what != NULL && strcmp(what, "echo") == 0) {
        for (int e = 0; e < 3 && n_words(cmd) == 3; e++)
            if (strcmp(word(cmd, 2), echo_names[e]) == 0) {
                sh->echo = (lab_echo_t)e;
                return true;
            }
        say_err(sh, false,
                "set echo on|off|print: on shows every result, off all but what assignments "
                "bound, print only what print shows");
        return false;
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
            "usage: set | set timeout SECONDS | set algo COLLECTIVE ALGORITHM | set check on|off | "
            "set echo on|off|print");
    return false;
}

/* A tensor some rank has shown under this name: its element count and
 * dtype, from the lowest such rank. */
static bool known_tensor(const lab_shell_t *sh, const char *name, size_t *count_p, dl_dtype_t *dt_p)
{
    for (int r = 0; r < sh->m.sess.np; r++) {
        const json_t *t = json_object_get(sh->m.sess.ranks[r].tensors, name);
        if (t == NULL || dl_dtype_parse(lab_json_str(t, "dtype", ""), dt_p) != DL_OK)
            continue;
        size_t n = 1, i;
        json_t *d;
        json_array_foreach(json_object_get(t, "shape"), i, d)
        {
            n *= (size_t)json_integer_value(d);
        }
        *count_p = n;
        return true;
    }
    return false;
}

#define EXPLAIN_MAX_LIST 16

/* "ring,direct" into names (pointing into buf): false unless every one
 * is an algorithm. */
static bool parse_algo_list(char *buf, const char **names, size_t *n_p)
{
    size_t n = 0;
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p != NULL;
         p = strtok_r(NULL, ",", &save)) {
        if (dl_algo_find(p) == NULL || n == EXPLAIN_MAX_LIST)
            return false;
        names[n++] = p;
    }
    *n_p = n;
    return n > 0;
}

/* `explain COLL [TENSOR | COUNT] [ALGORITHM[,ALGORITHM...]] [np=N,N...]`:
 * the schedule that would run on this world, for the named tensor's size
 * and dtype (or COUNT int64 elements; 8 when neither is given) and the
 * algorithm `set algo` chose, or the one named. The default algorithm
 * depends on the size, so the size is what makes the answer the one that
 * really runs. Lists of algorithms or world sizes compare them instead, a
 * row each (dl_sched_explain_scaling). */
static bool cmd_explain(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    static const char usage[] =
        "usage: explain COLLECTIVE [TENSOR | COUNT] [ALGORITHM[,ALGORITHM...]] [np=N[,N...]]";
    (void)row;
    (void)async_p;
    dl_coll_t c;
    if (n_words(cmd) < 2 || n_words(cmd) > 5 || dl_coll_parse(word(cmd, 1), &c) != DL_OK) {
        say_err(sh, false, "%s", usage);
        return false;
    }
    const char *algo = sh->algo[c][0] ? sh->algo[c] : NULL;
    size_t count = 8;
    dl_dtype_t dt = DL_INT64;
    const char *tensor = NULL;
    int nps[EXPLAIN_MAX_LIST] = {sh->m.np};
    size_t n_nps = 0, n_algos = 0;
    const char *algos[EXPLAIN_MAX_LIST];
    char algo_buf[256];
    for (size_t i = 2; i < (size_t)n_words(cmd); i++) {
        const char *w = word(cmd, i);
        char *end = NULL;
        long n = strtol(w, &end, 10);
        if (w[0] >= '0' && w[0] <= '9' && *end == '\0' && n >= 0 && n <= (1L << 30)) {
            count = (size_t)n;
        } else if (strncmp(w, "np=", 3) == 0) {
            const char *bad;
            if (lab_nps_parse(w + 3, nps, EXPLAIN_MAX_LIST, &n_nps, &bad) != LAB_NPS_OK) {
                say_err(sh, false, "explain: '%s' is not a list of world sizes from 1 to %d; %s", w,
                        LAB_MAX_NP, usage);
                return false;
            }
        } else if (strcmp(w, "default") == 0 || dl_algo_find(w) != NULL) {
            algo = strcmp(w, "default") == 0 ? NULL : w;
        } else if (known_tensor(sh, w, &count, &dt)) {
            tensor = w;
        } else if (strchr(w, ',') != NULL && (snprintf(algo_buf, sizeof(algo_buf), "%s", w),
                                              parse_algo_list(algo_buf, algos, &n_algos))) {
            continue;
        } else {
            say_err(sh, false,
                    "explain: '%s' is neither a tensor the ranks have, nor a count, nor an "
                    "algorithm; %s",
                    w, usage);
            return false;
        }
    }
    for (size_t i = 0; i < n_algos; i++)
        if (dl_algo_find(algos[i])->build[c] == NULL) {
            char names[256];
            dl_algo_names_for(c, names, sizeof(names));
            say_err(sh, false, "explain: %s does not implement %s; algorithms for %s: %s", algos[i],
                    dl_coll_name(c), dl_coll_name(c), names);
            return false;
        }
    dl_coll_args_t args = {.coll = c, .nranks = sh->m.np, .count = count, .op = DL_OP_SUM};
    size_t esz = dl_dtype_size(dt);
    if (tensor != NULL)
        fprintf(sh->o.out, "(for %s: %zu elements of %s%s)\n", tensor, count, dl_dtype_name(dt),
                sh->algo[c][0] && n_algos == 0 ? ", with the algorithm set for it" : "");
    if (n_nps > 0 || n_algos > 0) {
        if (n_algos == 0 && algo != NULL)
            algos[n_algos++] = algo;
        dl_status_t st = dl_sched_explain_scaling(&args, algos, n_algos, nps, n_nps > 0 ? n_nps : 1,
                                                  esz, dl_dtype_name(dt), sh->o.out);
        fflush(sh->o.out);
        if (st != DL_OK)
            say_err(sh, false, "cannot compare: %s", dl_strerror(st));
        return st == DL_OK;
    }
    dl_sched_t *s = NULL;
    dl_status_t st = dl_sched_build(algo, &args, esz, &s);
    if (st != DL_OK) {
        char names[256];
        dl_algo_names_for(c, names, sizeof(names));
        say_err(sh, false, "cannot explain %s with %s: %s; algorithms for %s: %s", dl_coll_name(c),
                algo ? algo : "the default", dl_strerror(st), dl_coll_name(c), names);
        return false;
    }
    dl_sched_explain(s, esz, dl_dtype_name(dt), sh->o.out);
    dl_sched_free(s);
    fflush(sh->o.out);
    return true;
}

static bool cmd_help(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)async_p;
    if (n_words(cmd) < 2) {
        lab_lang_print_help(sh->o.out, NULL);
        fflush(sh->o.out);
        return true;
    }
    /* `help dist.all_reduce`, as torch spells it, is the help of all_reduce. */
    const char *name = word(cmd, 1);
    static const char *const prefixes[] = {"torch.distributed.", "dist."};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0 && name[strlen(prefixes[i])]) {
            name += strlen(prefixes[i]);
            break;
        }
    if (n_words(cmd) > 2 || lab_lang_print_help(sh->o.out, name) != DL_OK) {
        say_err(sh, false, "no help for '%s'; `help` lists the commands", word(cmd, 1));
        return false;
    }
    fflush(sh->o.out);
    return true;
}

/* `source FILE`: the file's statements run next, in this line's place. A
 * line of the file that does not parse stops it before anything runs. */
static bool cmd_source(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)async_p;
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
    char *line = NULL, *text = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, text_no = 0;
    bool ok = true, more = true;
    lab_lang_gather_t gather = {0};
    /* A block (a line that starts with if, for or on, and the lines after
     * it that are indented or start with elif or else), or the lines of an
     * open bracket, are parsed as one. */
    while (ok && more) {
        more = (n = getline(&line, &cap, f)) >= 0;
        if (more) {
            lineno++;
            while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                line[--n] = '\0';
        }
        if (more && text != NULL && lab_lang_gather_takes(&gather, line)) {
            size_t a = strlen(text);
            char *grown = realloc(text, a + (size_t)n + 2);
            if (grown == NULL) {
                ok = false;
                break;
            }
            grown[a] = '\n';
            memcpy(grown + a + 1, line, (size_t)n + 1);
            text = grown;
            continue;
        }
        if (text != NULL) {
            json_t *stmts = NULL;
            lab_parse_error_t err;
            if (lab_parse_line(text, &stmts, &err) != DL_OK) {
                char caret[1024];
                lab_parse_error_format(text, &err, caret, sizeof(caret));
                say_err(sh, false, "source: %s:%d:", path,
                        text_no + (err.line > 1 ? err.line - 1 : 0));
                fputs(caret, sh->o.err);
                fflush(sh->o.err);
                ok = false;
                break;
            }
            json_array_extend(all, stmts);
            json_decref(stmts);
            free(text);
            text = NULL;
        }
        if (more && (text = strdup(line)) == NULL)
            ok = false;
        if (text != NULL)
            lab_lang_gather_start(&gather, text);
        text_no = lineno;
    }
    free(text);
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
    const lab_stepper_t *st = &sh->m.stepper;
    for (int i = 0; i < st->ngroup && sh->ctrl != NULL; i++)
        lab_ctrl_send(sh->ctrl, st->group[i], go);
    json_decref(go);
}

static bool cmd_step(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
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
        lab_stepper_go(&sh->m.stepper, true);
        *async_p = true;
    }
    return true;
}

/* `next` runs one step, `continue` the rest of the collective. */
static bool cmd_go(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)cmd;
    bool run = row->id == LAB_CMD_ID_CONTINUE;
    if (!lab__shell_paused(sh)) {
        if (sh->step_mode)
            say_err(sh, false,
                    "nothing is paused: step mode is on, and the next collective stops before "
                    "its first step");
        else
            say_err(sh, false, "nothing is paused: `step on`, then run a collective");
        return false;
    }
    tell_paused(sh, json_pack("{s:s, s:b}", "type", "go", "run", run));
    lab_stepper_go(&sh->m.stepper, run);
    *async_p = true; /* finishes when the ranks pause again or the line ends */
    return true;
}

/* `back` and `forward` move through the recorded steps. */
static bool cmd_view(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)cmd;
    (void)async_p;
    bool back = row->id == LAB_CMD_ID_BACK;
    const char *why = NULL;
    const lab_step_rec_t *rec =
        back ? lab_stepper_back(&sh->m.stepper, &why) : lab_stepper_forward(&sh->m.stepper, &why);
    if (rec == NULL) {
        say_err(sh, false, "%s", why);
        return false;
    }
    lab_model_show_step(&sh->m, rec, true);
    return true;
}

/* ---- the other session commands ---- */

static bool cmd_quit(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)cmd;
    (void)async_p;
    sh->quitting = true;
    return true;
}

static bool cmd_kill(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
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

/* `respawn` restarts the world as it is, `spawn N` with N local ranks. The
 * settings are the session's, not the world's: the new ranks receive them
 * once they are ready (lab__shell_send_settings). */
static bool cmd_respawn(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    /* The local ranks; the workers' come on top. */
    int np = sh->np_local, least = sh->o.launch.workers != NULL ? 0 : 1;
    if (row->id == LAB_CMD_ID_SPAWN) {
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
    *async_p = sh->m.np > 0; /* continues once every rank is ready */
    return true;
}

static bool cmd_history(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)cmd;
    (void)async_p;
    for (size_t i = 0; i < sh->n_history; i++)
        fprintf(sh->o.out, "%5zu  %s\n", sh->history_base + i + 1, sh->history[i]);
    fflush(sh->o.out);
    return true;
}

static bool cmd_clear(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)cmd;
    (void)async_p;
    /* Only a terminal has a screen to clear. */
    if (sh->o.color) {
        fputs("\033[H\033[2J", sh->o.out);
        fflush(sh->o.out);
    }
    return true;
}

/* The terminal view belongs to the front end (tui/ sits above lab/): the
 * shell only asks for it, and the front end opens it once the line is done. */
static bool cmd_tui(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)cmd;
    (void)async_p;
    if (sh->o.open_view == NULL) {
        say_err(sh, false, "the terminal view needs the interactive shell on a terminal");
        return false;
    }
    sh->o.open_view(sh->o.arg);
    return true;
}

/* ---- tracing ----
 *
 * The ranks record while tracing is on and send their records up at the end
 * of every statement (lab/rank/rank_trace.c), so the session's trace is
 * whole between lines: `trace off` and quitting write it at once. It spans
 * the session's worlds (`respawn`, `spawn N`); a rank that dies takes the
 * records of the statement it died in with it. */

bool lab__shell_trace_start(lab_shell_t *sh, const char *path)
{
    char why[256];
    if (!lab_trace_path_ok(path, why, sizeof(why))) {
        say_err(sh, false, "trace: cannot write a trace to %s: %s", path, why);
        return false;
    }
    char *copy = strdup(path);
    if (copy == NULL || lab_trace_new(LAB_TRACE_CAP, &sh->m.trace) != DL_OK) {
        free(copy);
        say_err(sh, false, "trace: out of memory");
        return false;
    }
    sh->trace_path = copy;
    return true;
}

bool lab_shell_trace_end(lab_shell_t *sh)
{
    if (sh->m.trace == NULL)
        return true;
    /* The ranks stop recording; what they held went up with their last
     * statement's end. */
    lab__shell_send_all(sh, json_pack("{s:s, s:b}", "type", "config", "trace", false));
    char why[512], drops[512];
    if (lab_trace_dropped(sh->m.trace, drops, sizeof(drops)) > 0)
        say_err(sh, false, "trace: %s", drops);
    bool ok =
        lab_trace_write(sh->m.trace, sh->trace_path, "distlab shell", why, sizeof(why)) == DL_OK;
    if (!ok)
        say_err(sh, false, "trace: %s", why);
    lab_trace_free(sh->m.trace);
    sh->m.trace = NULL;
    free(sh->trace_path);
    sh->trace_path = NULL;
    return ok;
}

/* `trace on FILE`, `trace off`, and `trace` alone. */
static bool cmd_trace(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd, bool *async_p)
{
    (void)row;
    (void)async_p;
    size_t n = n_words(cmd);
    const char *what = n > 1 ? word(cmd, 1) : "";
    if (n == 1) {
        if (sh->m.trace == NULL)
            fprintf(sh->o.out, "tracing is off\n");
        else
            fprintf(sh->o.out, "tracing to %s: %zu events so far\n", sh->trace_path,
                    lab_trace_count(sh->m.trace));
        fflush(sh->o.out);
        return true;
    }
    if (n == 2 && strcmp(what, "off") == 0) {
        if (sh->m.trace == NULL) {
            say_err(sh, false, "trace: tracing is off already");
            return false;
        }
        char *path = strdup(sh->trace_path);
        size_t count = lab_trace_count(sh->m.trace);
        bool ok = lab_shell_trace_end(sh);
        if (ok)
            fprintf(sh->o.out, "trace: %zu events written to %s\n", count, path ? path : "");
        fflush(sh->o.out);
        free(path);
        return ok;
    }
    if (n == 3 && strcmp(what, "on") == 0) {
        if (sh->m.trace != NULL) {
            say_err(sh, false, "trace: already tracing to %s; `trace off` writes it first",
                    sh->trace_path);
            return false;
        }
        if (!lab__shell_trace_start(sh, word(cmd, 2)))
            return false;
        lab__shell_send_all(sh, json_pack("{s:s, s:b}", "type", "config", "trace", true));
        return true;
    }
    say_err(sh, false, "usage: trace [on FILE | off]");
    return false;
}

/* ---- dispatch ----
 *
 * The command table (lab/lang/commands.c) says which commands are the
 * session's and when they may run; this table says what each does, indexed
 * by the row's id (see lab_cmd_id_t for why an id). The unit test
 * shell_logic checks that every session row has a handler here. */

static const lab__shell_handler_t handlers[LAB_CMD_ID__COUNT] = {
    [LAB_CMD_ID_RANKS] = cmd_ranks,     [LAB_CMD_ID_KILL] = cmd_kill,
    [LAB_CMD_ID_RESPAWN] = cmd_respawn, [LAB_CMD_ID_SPAWN] = cmd_respawn,
    [LAB_CMD_ID_SET] = cmd_set,         [LAB_CMD_ID_EXPLAIN] = cmd_explain,
    [LAB_CMD_ID_HISTORY] = cmd_history, [LAB_CMD_ID_SOURCE] = cmd_source,
    [LAB_CMD_ID_HELP] = cmd_help,       [LAB_CMD_ID_CLEAR] = cmd_clear,
    [LAB_CMD_ID_QUIT] = cmd_quit,       [LAB_CMD_ID_EXIT] = cmd_quit,
    [LAB_CMD_ID_STEP] = cmd_step,       [LAB_CMD_ID_NEXT] = cmd_go,
    [LAB_CMD_ID_CONTINUE] = cmd_go,     [LAB_CMD_ID_BACK] = cmd_view,
    [LAB_CMD_ID_FORWARD] = cmd_view,    [LAB_CMD_ID_TUI] = cmd_tui,
    [LAB_CMD_ID_TRACE] = cmd_trace,
};

lab__shell_handler_t lab__shell_handler(lab_cmd_id_t id)
{
    return id > LAB_CMD_ID_NONE && id < LAB_CMD_ID__COUNT ? handlers[id] : NULL;
}

bool lab__shell_command(lab_shell_t *sh, const json_t *cmd, bool *async_p)
{
    const char *name = lab_json_str(cmd, "cmd", "");
    const lab_cmd_t *row = lab_cmd_find(name);
    lab__shell_handler_t run =
        row != NULL && (row->flags & LAB_CMD_SESSION) ? lab__shell_handler(row->id) : NULL;
    *async_p = false;
    if (run == NULL) {
        say_err(sh, false, "'%s' is not available in this shell", name);
        return false;
    }
    return run(sh, row, cmd, async_p);
}
