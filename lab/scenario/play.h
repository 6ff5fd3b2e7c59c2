/* Playing a scenario (lab/scenario/scenario.h) on live ranks: a shell
 * session runs its lines, prints its narration and checks its `expect`
 * lines against the session model's latest snapshot of each tensor. */
#ifndef LAB_SCENARIO_PLAY_H
#define LAB_SCENARIO_PLAY_H

#include <stdbool.h>
#include <stdio.h>

#include "lab/ctrl/launch.h"
#include "lab/scenario/scenario.h"

/* One question's outcome, for the report. */
typedef struct {
    int lineno;
    int tries;     /* answers given (0 when there were none to give) */
    double points; /* 1 right at once, 0.5 right at the second try, else 0 */
    char given[2][256];
} lab_play_answer_t;

typedef struct {
    lab_play_answer_t *answers; /* one per `ask`, in order */
    size_t n;
    double score;
} lab_play_result_t;

typedef struct {
    lab_launch_opts_t launch; /* np 0: the scenario's `ranks:` */
    bool step;                /* step mode: every collective is shown step by step */
    bool interactive;         /* pauses (and steps) wait for Enter on standard input */
    bool color;
    FILE *out, *err;
    /* An exercise: the learner answers each `ask` (two tries on a
     * terminal; one line per question from answers when it is given);
     * otherwise a question is narrated with its answer. */
    bool exercise;
    FILE *answers;
} lab_play_opts_t;

/* Runs the scenario to its end. Returns 0 when every line ran and every
 * expectation held, 1 otherwise (each failure was named on err). res
 * (may be NULL) receives the answers to its questions. */
int lab_scenario_play(const lab_scenario_t *s, const lab_play_opts_t *o, lab_play_result_t *res);
void lab_play_result_free(lab_play_result_t *res);

#endif
