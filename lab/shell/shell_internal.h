/* The shell's state, shared by lab/shell/shell.c (lines, statements, events) and
 * lab/shell/shell_cmds.c (session and step commands). */
#ifndef LAB_SHELL_INTERNAL_H
#define LAB_SHELL_INTERNAL_H

/* The lines `history` keeps, as readline keeps in the history file. */
#define LAB_SHELL_MAX_HISTORY 1000
/* How long a collective that can never complete waits for the ranks still
 * running statements to call it, before it is refused without them. */
#define MATCH_PATIENCE_MS 300

#include <stdbool.h>

#include <jansson.h>
#include <uv.h>

#include "distlab/sched.h"
#include "lab/ctrl/controller.h"
#include "lab/lang/lang.h"
#include "lab/session/model.h"
#include "lab/session/report.h"
#include "lab/shell/shell.h"

struct lab_shell {
    uv_loop_t *loop;
    lab_shell_opts_t o;
    lab_ctrl_t *ctrl;
    /* The session: ranks, statements in flight, fingerprints, step mode.
     * Everything the shell prints goes through it (lab/shell/shell_print.c
     * is the view that prints). */
    lab_model_t m;
    int np_local;      /* ranks started here; the workers' come on top */
    bool broken;       /* a rank died: the world must be respawned */
    bool start_failed; /* its ranks could not start, which was said */
    bool quitting;

    /* The line being run: its statements, the next one, who to tell. A line
     * whose collective waits in step mode hands the prompt back early
     * (done is then NULL) and goes on when the step commands let it. */
    json_t *stmts;
    size_t next;
    bool line_ok;
    lab_shell_done_t done;
    void *done_arg;

    uv_timer_t watchdog;
    int open_handles; /* while closing: handles whose close callback is due */

    uv_timer_t match_timer; /* decides without waiting for running ranks */
    bool impatient;
    bool step_mode;
    bool check;      /* `set check`: fingerprint checks (default on) */
    lab_echo_t echo; /* `set echo on|off|print`: what statements print (default on) */
    bool whole;      /* lab_shell_whole: snapshots carry every element */
    bool view_keys;  /* lab_shell_view_keys: a view's keys step, not Enter */

    int killing;                   /* `kill N` finishes when rank N's exit is seen; -1 when none */
    char algo[DL_COLL__COUNT][32]; /* set algo, for explain */
    char **history;
    size_t n_history;
    size_t history_base; /* lines dropped from the front of history */
    int source_depth;    /* nested `source` files */

    /* The names lines have bound on the ranks, for completion (see
     * lab_shell_names); forgotten when the world restarts. */
    char **names;
    size_t n_names;

    /* While tracing (--trace, `trace on FILE`): where the trace goes; the
     * records are the model's (m.trace). */
    char *trace_path;
};

void lab__shell_say_err(lab_shell_t *sh, bool async, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends msg to every living rank (takes msg's reference). */
void lab__shell_send_all(lab_shell_t *sh, json_t *msg);
dl_status_t lab__shell_start_world(lab_shell_t *sh, int np);
void lab__shell_stop_world(lab_shell_t *sh);
/* Whether a collective waits in step mode for a step command. */
bool lab__shell_paused(const lab_shell_t *sh);

/* lab/shell/shell_cmds.c: runs a session or step command (a statement's
 * "command" object); returns false when it failed. *async_p is set when it
 * finishes later (respawn waits for the ranks, `next` for the step). */
bool lab__shell_command(lab_shell_t *sh, const json_t *cmd, bool *async_p);

/* What a session command does: row is its row of the command table, cmd
 * the statement's "command" object. Returns false when it failed; sets
 * *async_p when it finishes later. */
typedef bool (*lab__shell_handler_t)(lab_shell_t *sh, const lab_cmd_t *row, const json_t *cmd,
                                     bool *async_p);
/* The handler of session command id, or NULL when the shell has none. */
lab__shell_handler_t lab__shell_handler(lab_cmd_id_t id);

/* Sends every setting (`set`, `step`) to the ranks: a new world starts with
 * the ranks' defaults, and the session's settings outlive its worlds. */
void lab__shell_send_settings(lab_shell_t *sh);

/* Starts a trace to path (false after saying why it cannot). */
bool lab__shell_trace_start(lab_shell_t *sh, const char *path);

/* lab/shell/shell_print.c: subscribes the view that prints the session's
 * changes on the shell's out and err. */
dl_status_t lab__shell_print_subscribe(lab_shell_t *sh);

/* lab/shell/shell_names.c: learns the names the statements of a line that
 * ran bind on the ranks; a respawn or spawn among them forgets the names
 * learned before it. */
void lab__shell_learn_names(lab_shell_t *sh, const json_t *stmts);
void lab__shell_forget_names(lab_shell_t *sh);

#endif
