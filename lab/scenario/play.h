/* Playing a scenario (lab/scenario/scenario.h) on live ranks: a shell
 * session runs its lines, prints its narration and checks its `expect`
 * lines against the session model's latest snapshot of each tensor. */
#ifndef LAB_SCENARIO_PLAY_H
#define LAB_SCENARIO_PLAY_H

#include <stdbool.h>
#include <stdio.h>

#include <uv.h>

#include "lab/ctrl/launch.h"
#include "lab/scenario/scenario.h"
#include "lab/shell/shell.h"

/* What one try at a `write` question did. */
typedef struct {
    char *code;      /* the code given (malloc'd) */
    char error[320]; /* why it was refused or failed, one line; "" when it ran */
    bool refused;    /* it was not run: it did not parse, or broke the question's rules */
    bool ran;        /* it ran on every rank without an error */
    bool matched;    /* every rank's tensor equalled the built-in collective's */
    bool within;     /* every rank sent within the question's limits */
    int np;
    long long *messages, *bytes; /* per rank (np): what it sent while the code ran */
    bool *rank_matched;          /* per rank */
} lab_play_code_t;

/* One question's outcome, for the report. */
typedef struct {
    int lineno;
    bool code;     /* a `write` question: code[] holds its tries, given[] is unused */
    int tries;     /* answers given (0 when there were none to give) */
    double points; /* 1 right at once, 0.5 right at the second try, else 0 */
    char given[2][256];
    lab_play_code_t code_tries[2];
} lab_play_answer_t;

typedef struct {
    lab_play_answer_t *answers; /* one per `ask` and `write`, in order */
    size_t n;
    double score;
} lab_play_result_t;

/* A scenario played in a view of its own (the terminal view): the player
 * tells it what it would print and lets it wait for the person. */
typedef struct lab_play lab_play_t;

typedef enum {
    LAB_PLAY_TITLE, /* the scenario's title */
    LAB_PLAY_SAY,   /* narration */
    LAB_PLAY_TEXT,  /* a question, its answer, a pause's text */
    LAB_PLAY_LINE,  /* a shell line about to run */
    LAB_PLAY_OK,    /* an expectation that held */
    LAB_PLAY_FAIL,  /* one that did not, a line that failed */
    LAB_PLAY_END,   /* the end, and how it went */
} lab_play_note_t;

typedef enum {
    LAB_PLAY_WAIT_PAUSE, /* a pause: the person says when to go on */
    LAB_PLAY_WAIT_STEPS, /* a collective waits in step mode: go on once it has ended */
    LAB_PLAY_WAIT_END,   /* the end: go on (or stop) once the person leaves */
} lab_play_wait_t;

typedef struct {
    void *arg;
    /* The shell is up (its ranks may still be starting): the view opens
     * on it. False when it cannot; the scenario then does not run. */
    bool (*open)(void *arg, lab_play_t *p, uv_loop_t *loop, lab_shell_t *sh);
    /* What the player would print: the text without the plain output's
     * prefix (lab_play_prefix). */
    void (*note)(void *arg, lab_play_note_t kind, const char *text);
    /* Runs a shell line in the view, as if typed there; done as the
     * shell's (lab_shell_submit). */
    void (*submit)(void *arg, const char *line, lab_shell_done_t done, void *done_arg);
    /* Waits for the person (text: a pause's, or empty); the view calls
     * lab_play_go when they go on, or lab_play_stop when they leave. */
    void (*wait)(void *arg, lab_play_wait_t what, const char *text);
    /* The scenario is over: the view gives the terminal back before the
     * shell closes. */
    void (*close)(void *arg);
} lab_play_view_t;

typedef struct {
    lab_launch_opts_t launch; /* np 0: the scenario's `ranks:` */
    bool step;                /* step mode: every collective is shown step by step */
    bool interactive;         /* pauses (and steps) wait for Enter on standard input */
    bool color;
    FILE *out, *err;
    /* An exercise: the learner answers each `ask` and `write` (two tries
     * on a terminal; from answers when it is given, one try each: a line
     * per `ask`, code per `write` as lab_scenario_read_code reads it, @
     * paths relative to answers_path); otherwise a question is narrated
     * with its answer, a `write` question by running its solution. */
    bool exercise;
    FILE *answers;
    const char *answers_path;
    /* A view that shows the scenario (NULL: out and err, and standard
     * input for pauses); not for exercises. */
    const lab_play_view_t *view;
} lab_play_opts_t;

/* The plain output's prefix of a note ("ok   ", "FAIL ", ">>> "; "" for
 * the others). */
const char *lab_play_prefix(lab_play_note_t kind);

/* The person goes on from what the view waited for. */
void lab_play_go(lab_play_t *p);
/* The person left the view: the scenario stops (at once when it waits,
 * else once the line running is done) and, unless it had ended, fails. */
void lab_play_stop(lab_play_t *p);

/* Runs the scenario to its end. Returns 0 when every line ran and every
 * expectation held, 1 otherwise (each failure was named on err). res
 * (may be NULL) receives the answers to its questions. */
int lab_scenario_play(const lab_scenario_t *s, const lab_play_opts_t *o, lab_play_result_t *res);
void lab_play_result_free(lab_play_result_t *res);

#endif
