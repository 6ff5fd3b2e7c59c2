/* The typed changes the session model (lab/session/model.h) hands its
 * views. A view subscribes once and receives every change as it is folded:
 * the shell's printer, the `run` and `bench` reports, the terminal view and
 * the scenario engine all read the session this way, never by parsing what
 * another view printed. */
#ifndef LAB_SESSION_EVENTS_H
#define LAB_SESSION_EVENTS_H

#include <stdbool.h>

#include "distlab/frame.h"

typedef struct lab_model lab_model_t;
typedef struct lab_stmt lab_stmt_t;
typedef struct lab_step_rec lab_step_rec_t;

typedef enum {
    /* A world started (the first, or a respawn, spawn or rebuild): np and
     * generation are new, every rank is STARTING. */
    LAB_EV_WORLD,
    /* A rank's life changed (lab_life_t): ev->rank, ev->from, ev->to. */
    LAB_EV_RANK,
    /* A rank's statement produced output (a snapshot, a note, a log line):
     * ev->rank, ev->stmt, ev->frame. */
    LAB_EV_OUTPUT,
    /* Every rank a statement targets has finished it. Sent in statement
     * order, so a view printing them prints them in order. */
    LAB_EV_STMT_DONE,
    LAB_EV_STMT_FAILED, /* the same, and at least one rank failed */
    /* Step mode: every rank of the group waits before the step after the
     * last record (ev->step: that record). */
    LAB_EV_STEP_PAUSED,
    /* Step mode: a step's record to show (the state before step 1, a step
     * that ran, or the end of `continue`): ev->step. */
    LAB_EV_STEP_RAN,
    /* A point-to-point operation was posted (ev->frame: op, peer, tag). */
    LAB_EV_P2P,
    /* A message for the person (an error, a rank's death, a mismatch):
     * ev->text, one or more lines without the trailing newline; ev->rank
     * names the rank it is about, or -1. */
    LAB_EV_SAY,
} lab_event_kind_t;

/* What a rank is doing, as the session sees it. */
typedef enum {
    LAB_LIFE_STARTING,     /* spawned, not ready yet */
    LAB_LIFE_IDLE,         /* ready, running nothing */
    LAB_LIFE_BUSY,         /* running statements */
    LAB_LIFE_PAUSED,       /* waiting before a step in step mode */
    LAB_LIFE_UNRESPONSIVE, /* alive, but it stopped answering */
    LAB_LIFE_DEAD,         /* exited or killed: model->ranks[r].cause says how */
} lab_life_t;

const char *lab_life_name(lab_life_t life);

typedef struct {
    lab_event_kind_t kind;
    int rank; /* -1 when the change is not about one rank */
    lab_life_t from, to;
    const lab_stmt_t *stmt;
    const dl_frame_t *frame;
    const lab_step_rec_t *step;
    const char *text;
    /* SAY: the message arrives while the prompt waits for input (a rank
     * died between lines), not as the answer to a line. A line-editing view
     * moves its prompt out of the way first. */
    bool async;
    /* STEP_RAN: a record shown again (`back`, `forward`), not a step that
     * just ran. */
    bool recorded;
} lab_event_t;

/* A view: called for every change, after the model has folded it. A view
 * reads the model; it must not change it (it may send commands, which
 * change it later). */
typedef void (*lab_view_fn)(void *arg, const lab_model_t *m, const lab_event_t *ev);

#endif
