/* The session model: everything the controller knows of a session, folded
 * from the ranks' events and the controller's notices, in one place.
 *
 *   - the world: its size, how many worlds there have been (restarts), and
 *     whether every rank is ready;
 *   - each rank: pid, host, worker, life (lab_life_t), the cause of its
 *     death, where it is in a collective, the tensors it has shown;
 *   - the statements in flight: which ranks each targets, what each rank
 *     output, and how it ended;
 *   - the collectives waiting on their fingerprints, and the
 *     point-to-point ledger (lab/session/match.h, lab/session/p2p.h);
 *   - step mode's record (lab/session/stepper.h).
 *
 * Views subscribe (lab_model_subscribe) and receive typed changes
 * (lab/session/events.h). The model decides nothing and sends nothing: the
 * shell (or the runner) reads what a fold did and acts, and its own output
 * goes through the model too (lab_model_say), so that every view sees it. */
#ifndef LAB_SESSION_MODEL_H
#define LAB_SESSION_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "distlab/frame.h"
#include "lab/session/events.h"
#include "lab/session/match.h"
#include "lab/session/p2p.h"
#include "lab/session/session.h"
#include "lab/session/stepper.h"
#include "lab/session/trace.h"

/* One statement of the batch in flight, and what each rank reported. */
struct lab_stmt {
    json_int_t id;
    json_t *stmt;      /* the parsed statement (lab/lang/lang.h) */
    bool *targeted;    /* per rank */
    bool *finished;    /* per rank: done, failed, skipped or died */
    bool *quiet;       /* per rank: failed, and already explained */
    int awaiting;      /* targeted ranks not finished */
    lab_session_t res; /* the results, per rank */
};

/* The statements of one line segment (consecutive rank statements), sent
 * to the ranks at once: each rank runs its own in order, so statements on
 * different ranks of one line run together (a send and its recv). */
typedef struct {
    bool inflight;
    json_int_t id;
    lab_stmt_t *stmts;
    size_t n, reported; /* statements whose end the views have been told */
    int *outstanding;   /* per rank: statements not finished */
    bool job;           /* a job's one statement: its events carry no id */
} lab_batch_t;

/* What the session knows of a rank beyond its results. */
typedef struct {
    int worker;       /* 0: started here; else the worker it runs on */
    char host[64];    /* the machine it runs on */
    char cause[240];  /* DEAD: "died of SIGKILL"; UNRESPONSIVE: for how long */
    lab_life_t life;  /* as last told to the views */
    bool p2p_refused; /* its blocking recv was refused as hopeless */
} lab_rank_life_t;

typedef struct {
    lab_view_fn fn;
    void *arg;
} lab_view_t;

struct lab_model {
    int np;
    int generation; /* worlds started: 1 for the first, one more per restart */
    int n_ready;
    bool ready;         /* every rank said ready */
    lab_session_t sess; /* per rank: pid, where, tensors, died, unresponsive */
    lab_rank_life_t *life;
    lab_batch_t batch;
    json_int_t next_id;
    lab_match_t match;
    lab_p2p_t p2p;
    lab_stepper_t stepper;
    lab_view_t *views;
    size_t n_views;
    /* While the controller traces (`--trace`, `trace on`): the ranks'
     * "trace" frames are folded into it, across worlds. The controller
     * sets it; lab_model_fini frees it. */
    lab_trace_t *trace;
};

/* What a fold did, for the controller to act on. */
typedef enum {
    LAB_FOLD_NOTHING,
    LAB_FOLD_READY,      /* the last rank became ready: the world is up */
    LAB_FOLD_START_FAIL, /* a rank could not start (the world is not up) */
    LAB_FOLD_COLL,       /* a rank posted a collective's fingerprint */
    LAB_FOLD_COLL_BAD,   /* ... a malformed one */
    LAB_FOLD_P2P,        /* a rank posted a point-to-point operation */
    LAB_FOLD_PAUSED,     /* every rank of a stepped collective waits */
    LAB_FOLD_FINISHED,   /* a rank finished a statement */
} lab_fold_t;

void lab_model_init(lab_model_t *m);
void lab_model_fini(lab_model_t *m);
/* Adds a view; it receives every change from now on. */
dl_status_t lab_model_subscribe(lab_model_t *m, lab_view_fn fn, void *arg);
void lab_model_unsubscribe(lab_model_t *m, lab_view_fn fn, void *arg);

/* A new world of np ranks is starting (np may be 0: no ranks yet). What
 * the last world held is forgotten; views get LAB_EV_WORLD. */
dl_status_t lab_model_new_world(lab_model_t *m, int np);
/* The world is being stopped: the batch in flight and any stepped
 * collective are dropped. */
void lab_model_end_world(lab_model_t *m);
/* Where rank r runs (from the controller). */
void lab_model_place(lab_model_t *m, int r, int pid, const char *host, int worker);

/* Folds one event of a rank (a frame from the controller). */
lab_fold_t lab_model_fold(lab_model_t *m, int rank, const dl_frame_t *f);
/* The controller saw rank r exit (cause: "died of SIGKILL"), or stop
 * answering (cause: "not responding after 2.1 s"), or answer again
 * (cause NULL). */
void lab_model_rank_exited(lab_model_t *m, int r, const char *cause);
void lab_model_rank_unresponsive(lab_model_t *m, int r, const char *cause);

/* A new batch of n statements (stmts, a JSON array: its items [first,
 * first+n)); each statement's targets are set by the caller in
 * stmts[i].targeted before lab_model_batch_sent. */
dl_status_t lab_model_batch_new(lab_model_t *m, const json_t *stmts, size_t first, size_t n);
/* A job (`run`, `bench`): one statement that every rank runs, whose
 * events carry no id; lab_model_job is it (NULL before), and it stays
 * until the model is freed, for the reports to read. */
dl_status_t lab_model_job_new(lab_model_t *m);
lab_stmt_t *lab_model_job(lab_model_t *m);
/* Statement i went to rank r (sent) or could not reach it. */
void lab_model_batch_sent(lab_model_t *m, size_t i, int r, bool sent);
/* Rank r will not finish statement i itself (it died, stopped answering,
 * or the batch timed out): it fails with error (NULL: keep the rank's own),
 * quietly when the reason was reported already. Returns whether the rank
 * has nothing left to run. */
bool lab_model_give_up(lab_model_t *m, size_t i, int r, const char *error, bool quiet);
/* Tells the views about the statements every rank has finished, in order.
 * Returns true when the whole batch is over (and forgotten). */
bool lab_model_report_finished(lab_model_t *m);
/* Forgets the batch in flight, reported or not. */
void lab_model_batch_drop(lab_model_t *m);
/* The statement of the batch that an event names by "id", or NULL. */
lab_stmt_t *lab_model_stmt_of(lab_model_t *m, const json_t *ev);

/* What each rank is doing, for the matchers; NULL when out of memory.
 * Free it. */
lab_rank_state_t *lab_model_rank_states(const lab_model_t *m);
/* The life of rank r now (also what the views were last told). */
lab_life_t lab_model_life(const lab_model_t *m, int r);
/* Whether rank r runs statements of the batch in flight. */
bool lab_model_busy(const lab_model_t *m, int r);
/* Whether a stepped collective waits for a step command. */
bool lab_model_paused(const lab_model_t *m);

/* A message for the person: every view gets LAB_EV_SAY. */
void lab_model_say(lab_model_t *m, int rank, bool async, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Tells the views about a step record: one that ran, or (recorded) one
 * step mode's `back` and `forward` show again. */
void lab_model_show_step(lab_model_t *m, const lab_step_rec_t *rec, bool recorded);
/* Re-derives every rank's life and tells the views what changed; the
 * controller calls it after it changed the batch or the step state. */
void lab_model_sync(lab_model_t *m);

#endif
