/* Playing a scenario (lab/scenario/scenario.h) on live ranks: a shell
 * session runs its lines, prints its narration and checks its `expect`
 * lines against the session model's latest snapshot of each tensor. */
#ifndef LAB_SCENARIO_PLAY_H
#define LAB_SCENARIO_PLAY_H

#include <stdbool.h>
#include <stdio.h>

#include "lab/ctrl/launch.h"
#include "lab/scenario/scenario.h"

typedef struct {
    lab_launch_opts_t launch; /* np 0: the scenario's `ranks:` */
    bool step;                /* step mode: every collective is shown step by step */
    bool interactive;         /* pauses (and steps) wait for Enter on standard input */
    bool color;
    FILE *out, *err;
} lab_play_opts_t;

/* Runs the scenario to its end. Returns 0 when every line ran and every
 * expectation held, 1 otherwise (each failure was named on err). */
int lab_scenario_play(const lab_scenario_t *s, const lab_play_opts_t *o);

#endif
