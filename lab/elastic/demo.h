/* The elastic-restart demo: `distlab demo elastic`, and the scenario
 * elastic-restart. On one machine it plays what a cluster does:
 *
 *   node 0 starts `distlab launch` with 2 workers of `distlab train`;
 *   after a few epochs node 1 starts another agent with 2 workers: every
 *   worker restarts at WORLD_SIZE 4 and resumes from the checkpoint;
 *   later one worker is killed: the group fails over and resumes again;
 *   training ends with the same weights on every rank.
 *
 * It reads what the agents and workers print, tells each event as it
 * happens, checks it (`ok   expect ...` lines, as scenarios do), and ends
 * with the two times that matter: from a node's start to the first epoch
 * at the larger world, and from a worker's death to the first epoch after
 * the restart. */
#ifndef LAB_ELASTIC_DEMO_H
#define LAB_ELASTIC_DEMO_H

#include <stdio.h>

typedef struct lab_demo_opts {
    const char *exe;  /* the distlab binary that the agents run */
    int epochs;       /* epochs of training in all (default 12) */
    double sleep_s;   /* extra seconds per epoch, so that a person can follow (0.5) */
    int join_at;      /* node 1 starts once this epoch is done at 2 workers (3) */
    int kill_at;      /* a worker is killed once this epoch is done at 4 workers (6) */
    double timeout_s; /* the whole demo (120) */
    FILE *out;        /* narration and the workers' lines */
} lab_demo_opts_t;

void lab_demo_defaults(lab_demo_opts_t *o);
/* Plays the demo. 0 when every check held; 1 (with the reason said) when
 * one did not or the demo ran out of time; every process it started is
 * gone when it returns. */
int lab_elastic_demo(const lab_demo_opts_t *o);

#endif
