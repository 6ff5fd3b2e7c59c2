/* Step mode in the shell: the record of a collective run one schedule step
 * at a time.
 *
 * With `step on`, each rank pauses before every step of a collective and
 * sends its step events (lab/rank/rank_hooks.c): the step's messages, and its
 * buffer before the first step and after every step. The stepper folds those
 * events: once every rank of the group has paused it says so; once every rank
 * has run a step it renders the step (phase, messages, every rank's buffer
 * with the changed elements marked) and keeps the text, so `back` and
 * `forward` can show recorded steps again without re-running anything. */
#ifndef LAB_STEPPER_H
#define LAB_STEPPER_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/frame.h"
#include "distlab/tensor.h"

typedef enum {
    LAB_STEP_NOTHING, /* folded; nothing to show yet */
    LAB_STEP_PAUSED,  /* every rank of the group waits before step `cur` */
    LAB_STEP_RAN,     /* every rank ran a step: its text was recorded */
} lab_step_event_t;

typedef struct {
    int np;
    /* The collective being stepped (or the last one). */
    bool active;
    char coll[24], algo[24];
    int steps;
    int *group; /* world ranks */
    int ngroup;
    /* Per step k (0..steps; 0 is the state before step 1): */
    char **phase;         /* phase name of step k */
    char **acts;          /* the rendered messages of step k */
    int *npaused;         /* ranks waiting before step k */
    int *nran;            /* ranks that sent their state after step k */
    dl_tensor_t **states; /* [k * np + rank]: the buffer after step k, as printed:
                           * all of it, or torch's first and last elements */
    int64_t *lens;        /* [k * np + rank]: that buffer's whole length */
    int cur;              /* the step every rank waits before, 0 when none */
    int rendered;         /* the last step whose text was recorded, -1 none */
    bool free_run;        /* `continue`: record the rest, show only the end */
    int free_from;        /* the first step run freely */
    /* Recorded texts: [0] is the state before step 1. */
    char **recs;
    size_t nrecs;
    size_t view; /* the record `back`/`forward` last showed */
} lab_stepper_t;

dl_status_t lab_stepper_init(lab_stepper_t *st, int np);
void lab_stepper_fini(lab_stepper_t *st);
/* Forgets the collective in flight (it was aborted); records stay. */
void lab_stepper_abort(lab_stepper_t *st);
/* Folds one step event of a rank (stepping events carry "group"). *text_p
 * gets what to print now (owned by st), or NULL. */
lab_step_event_t lab_stepper_fold(lab_stepper_t *st, int rank, const dl_frame_t *f,
                                  const char **text_p);
/* Whether rank (a world rank) takes part in the collective being stepped. */
bool lab_stepper_in_group(const lab_stepper_t *st, int rank);
/* Whether every rank of the group is paused, and which ranks to tell. */
bool lab_stepper_paused(const lab_stepper_t *st);
/* The ranks are told to go: clears the paused marks. run: `continue`. */
void lab_stepper_go(lab_stepper_t *st, bool run);
/* `back` / `forward`: the recorded text to show, or NULL with *why_p set. */
const char *lab_stepper_back(lab_stepper_t *st, const char **why_p);
const char *lab_stepper_forward(lab_stepper_t *st, const char **why_p);

/* Writes txt (a 1-D tensor as torch prints it) prefixed, and under each line
 * a line of carets under the elements whose changed[] is set: changed[k]
 * is the k-th element printed (of n), counting only those shown when the
 * print is summarised. For the tests too. */
char *lab_stepper_mark(const char *prefix, const char *txt, const bool *changed, size_t n);

#endif
