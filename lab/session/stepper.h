/* Step mode in the shell: the record of a collective run one schedule step
 * at a time.
 *
 * With `step on`, each rank pauses before every step of a collective and
 * sends its step events (lab/rank/rank_hooks.c): the step's description
 * (distlab/stepdesc.h, sent by the group's rank 0), and its buffer before
 * the first step and after every step. The stepper folds those events: once
 * every rank of the group has paused it says so; once every rank has run a
 * step it keeps a record of it (its messages, every rank's buffer, which
 * elements changed), so `back` and `forward` can show recorded steps again
 * without re-running anything, and a view can draw any of them.
 * lab_step_render writes a record as step mode prints it. */
#ifndef LAB_STEPPER_H
#define LAB_STEPPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/coll.h"
#include "distlab/frame.h"
#include "distlab/stepdesc.h"
#include "distlab/tensor.h"

typedef enum {
    LAB_STEP_NOTHING, /* folded; nothing to show yet */
    LAB_STEP_PAUSED,  /* every rank of the group waits before step `cur` */
    LAB_STEP_RAN,     /* every rank ran a step: it was recorded */
} lab_step_event_t;

/* One recorded step of the collective being stepped (or the last one). */
typedef struct lab_step_rec {
    int k, n; /* step k of n; 0: the state before step 1 */
    char coll[24], algo[24];
    /* The collective's arguments (nranks is ngroup); args_known is false
     * when the ranks did not say them (then no view can rebuild it). */
    dl_coll_args_t args;
    bool args_known;
    dl_step_desc_t desc; /* the step's phase and messages, world ranks (k = 0: none) */
    int ran_from;        /* > 0: `continue` ran steps ran_from..k and showed only this one */
    /* How long the step took as the session saw it: from the `go` (or the
     * step before it, in a free run) to every rank's state after it, so
     * the control messages' latency is in it. 0 for k = 0. */
    double took_us;
    int np;     /* the world's size: the length of bufs, lens and changed */
    int *group; /* the world ranks of the collective's group, in group order */
    int ngroup;
    dl_tensor_t **bufs; /* [rank]: the buffer after the step as printed: all of it, or
                         * torch's first and last elements; NULL for a rank outside the
                         * group, or one whose state never came */
    int64_t *lens;      /* [rank]: that buffer's whole length */
    bool **changed;     /* [rank][i]: the i-th element of bufs[rank] changed in this
                         * step (all false for k = 0); NULL where bufs[rank] is */
    /* The algorithm's scratch buffer (DL_BUF_TMP: a tree gather's collected
     * chunks, rd's partial sums) on ranks whose schedule has one, the same
     * way: its shown elements after the step, its whole length, what
     * changed; NULL where a rank has none. tmp_written[rank]: a step up to
     * this one wrote it, so it holds data (views show it from then on). */
    dl_tensor_t **tmps;
    int64_t *tmp_lens;
    bool **tmp_changed;
    bool *tmp_written;
} lab_step_rec_t;

typedef struct {
    int np;
    /* The collective being stepped (or the last one). */
    bool active;
    char coll[24], algo[24];
    dl_coll_args_t args; /* nranks is ngroup */
    bool args_known;
    int steps;
    int *group; /* world ranks */
    int ngroup;
    /* Per step k (0..steps; 0 is the state before step 1), until recorded: */
    dl_step_desc_t *descs; /* what step k does */
    int *npaused;          /* ranks waiting before step k */
    int *nran;             /* ranks that sent their state after step k */
    dl_tensor_t **states;  /* [k * np + rank]: the buffer after step k, as printed */
    int64_t *lens;         /* [k * np + rank]: that buffer's whole length */
    dl_tensor_t **tmps;    /* [k * np + rank]: the scratch buffer after step k, if any */
    int64_t *tmp_lens;     /* [k * np + rank]: its whole length */
    int cur;               /* the step every rank waits before, 0 when none */
    int recorded;          /* the last step recorded, -1 none */
    uint64_t mark_ns;      /* when the ranks were told to go, or the last step was recorded */
    bool free_run;         /* `continue`: record the rest, show only the end */
    int free_from;         /* the first step run freely */
    /* The records, in step order: [0] is the state before step 1. */
    lab_step_rec_t **recs;
    size_t nrecs;
    size_t view; /* the record `back`/`forward` last showed */
} lab_stepper_t;

dl_status_t lab_stepper_init(lab_stepper_t *st, int np);
void lab_stepper_fini(lab_stepper_t *st);
/* Forgets the collective in flight (it was aborted); records stay. */
void lab_stepper_abort(lab_stepper_t *st);
/* Folds one step event of a rank (stepping events carry "group"). *rec_p
 * gets the record to show now, or NULL. Records stay valid until the next
 * collective begins or lab_stepper_fini. */
lab_step_event_t lab_stepper_fold(lab_stepper_t *st, int rank, const dl_frame_t *f,
                                  const lab_step_rec_t **rec_p);
/* Whether rank (a world rank) takes part in the collective being stepped. */
bool lab_stepper_in_group(const lab_stepper_t *st, int rank);
/* Whether every rank of the group is paused, and which ranks to tell. */
bool lab_stepper_paused(const lab_stepper_t *st);
/* The ranks are told to go: clears the paused marks. run: `continue`. */
void lab_stepper_go(lab_stepper_t *st, bool run);
/* `back` / `forward`: the recorded step to show, or NULL with *why_p set. */
const lab_step_rec_t *lab_stepper_back(lab_stepper_t *st, const char **why_p);
const lab_step_rec_t *lab_stepper_forward(lab_stepper_t *st, const char **why_p);

/* For views: how many steps are recorded, record i (NULL past the end), and
 * the index of the one `back`/`forward` last showed. */
size_t lab_stepper_nrecs(const lab_stepper_t *st);
const lab_step_rec_t *lab_stepper_rec(const lab_stepper_t *st, size_t i);
size_t lab_stepper_viewed(const lab_stepper_t *st);

/* The text step mode prints for a record, without a final newline:
 * the header ("step 2/6  reduce-scatter", or the collective's and the
 * state before step 1), the messages as distlab/stepdesc.h writes them, and
 * every rank's buffer with carets under the changed elements, and under it
 * the rank's scratch buffer (a `tmp` line) while it holds data. NULL when out
 * of memory; free it. */
char *lab_step_render(const lab_step_rec_t *rec);
/* World rank r's buffer in rec as torch prints it (malloc'd), or NULL. */
char *lab_step_buf_text(const lab_step_rec_t *rec, int r);
/* The same for its scratch buffer, or NULL when it has none or it holds
 * no data yet (rec->tmp_written). */
char *lab_step_tmp_text(const lab_step_rec_t *rec, int r);

/* Writes txt (a 1-D tensor as torch prints it) prefixed, and under each line
 * a line of carets under the elements whose changed[] is set: changed[k]
 * is the k-th element printed (of n), counting only those shown when the
 * print is summarised. For the tests too. */
char *lab_stepper_mark(const char *prefix, const char *txt, const bool *changed, size_t n);

#endif
