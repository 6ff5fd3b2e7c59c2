/* The shell session: the controller loop of an interactive `distlab shell`.
 * It owns the ranks (spawn, kill, respawn), runs one input line at a time
 * (parsed by lab/lang/lang.h), sends rank statements to the ranks they target,
 * handles session commands itself, and prints results in rank order. Input
 * comes from the front end (readline, -c, a file), one line at a time. */
#ifndef LAB_SHELL_H
#define LAB_SHELL_H

#include <stdbool.h>
#include <stdio.h>

#include <uv.h>

#include "distlab/status.h"
#include "lab/ctrl/launch.h"
#include "lab/session/model.h"

typedef struct lab_shell lab_shell_t;

typedef struct {
    /* How the ranks are launched: np local ones (the workers' ranks come on
     * top; np may then be 0), timeout_s (`set timeout` changes it), the
     * backend ("builtin" or NULL, "mpi", "nccl"), transport, mpirun's hosts. */
    lab_launch_opts_t launch;
    bool color;
    FILE *out; /* results */
    FILE *err; /* errors and reports */
    /* Called around asynchronous output (a rank's death while the prompt
     * waits), so an interactive front end can hide and redraw its line. */
    void (*before_async_output)(void *arg);
    void (*after_async_output)(void *arg);
    /* `tui`: the front end opens its terminal view once the line is done;
     * NULL where there is none (a script), and `tui` then fails. */
    void (*open_view)(void *arg);
    void *arg;
} lab_shell_opts_t;

/* Called when a submitted line has finished: ok is false when it failed. */
typedef void (*lab_shell_done_t)(void *arg, bool ok);

dl_status_t lab_shell_new(uv_loop_t *loop, const lab_shell_opts_t *opts, lab_shell_t **sh_p);
/* Runs a line (statements separated by ';'); done runs once it has finished. */
void lab_shell_submit(lab_shell_t *sh, const char *line, lab_shell_done_t done, void *arg);
/* Whether `quit` was given. */
bool lab_shell_quitting(const lab_shell_t *sh);
/* Whether the ranks are up (spawned and ready). */
bool lab_shell_ready(const lab_shell_t *sh);
/* Whether the world's ranks could not start (and the shell said why): a
 * line that fails for it is not to blame. */
bool lab_shell_start_failed(const lab_shell_t *sh);
/* The ranks of the current world, the workers' included. */
int lab_shell_world_size(const lab_shell_t *sh);
/* Whether no line is running (nor waiting in step mode). */
bool lab_shell_idle(const lab_shell_t *sh);
/* Restarts the world with the same local ranks and every worker's that has
 * joined (as `respawn` does); call it between lines. */
void lab_shell_rebuild(lab_shell_t *sh);
/* Ctrl-C: aborts what the ranks are running (a collective, a step-mode
 * pause, a fingerprint wait); the statement fails and the world stays up. */
void lab_shell_interrupt(lab_shell_t *sh);
/* The names that lines which ran have bound on the ranks (t = ..., the
 * lists gather and all_gather fill), for completion; *n_p receives the
 * count. Learned from the statements the shell parsed, so a front end need
 * not parse a line again; valid until the loop runs the shell again. */
const char *const *lab_shell_names(const lab_shell_t *sh, size_t *n_p);
/* Whether a collective is paused in step mode (Enter then means `next`). */
bool lab_shell_stepping(const lab_shell_t *sh);
/* When a collective is paused in step mode: its name, with the steps that
 * have run and its number of steps; else NULL. */
const char *lab_shell_paused_step(const lab_shell_t *sh, int *done_p, int *steps_p);
/* When paused, writes "all_reduce is paused before step 2/6" and says true. */
bool lab_shell_paused_at(const lab_shell_t *sh, char *buf, size_t cap);
/* The session model, for a view to read and subscribe to. */
lab_model_t *lab_shell_model(lab_shell_t *sh);
/* A view that takes the terminal sends the shell's text (results, command
 * output such as `help`, errors) to out and err instead, with or without
 * colour; the front end sets its own back when it takes the terminal back. */
void lab_shell_set_output(lab_shell_t *sh, FILE *out, FILE *err, bool color);
/* A view that takes the terminal steps a paused collective with keys of
 * its own (n, c, b, f), Enter being its zoom: what the shell says of the
 * step commands names those keys while on is true. */
void lab_shell_view_keys(lab_shell_t *sh, bool on);
/* From now on the tensors the ranks show come whole into the model, not
 * only the elements a print shows of a large one: for a caller that
 * compares them (an exercise's checks). They print the same. */
void lab_shell_whole(lab_shell_t *sh, bool whole);
/* Writes the trace that --trace or `trace on FILE` started, and stops
 * tracing: true when it was written or there was none, false after saying
 * why it could not be. lab_shell_close does it too, for a front end that
 * has no use for the answer. */
bool lab_shell_trace_end(lab_shell_t *sh);
/* Stops every rank and closes the shell; run the loop until it returns. */
void lab_shell_close(lab_shell_t *sh);

#endif
