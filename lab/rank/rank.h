/* The rank runtime: `distlab rank`. It connects to the controller's control
 * channel, brings up its communicator from env:// variables, then runs the
 * jobs it is sent and reports events up. */
#ifndef LAB_RANK_H
#define LAB_RANK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "distlab/frame.h"

#include "distlab/comm.h"
#include "lab/proto/job.h"

/* The assignments one statement echoes (a loop's, say); the rest are
 * counted in one line, and the last value of each of the first
 * LAB_ECHO_NAMES names they bound is echoed at the end. */
#define LAB_ECHO_ASSIGN_MAX 100
#define LAB_ECHO_NAMES      16

/* Groups whose object collectives' parts a report can tell from calls
 * (past so many, a report numbers the parts). */
#define LAB_RANK_GROUPS_NUMBERED 32
typedef struct {
    uint64_t ctx, extra;
} lab_rank_parts_t;

typedef struct {
    int fd; /* control channel */
    dl_comm_t *comm;
    int rank, size;
    lab_job_t job;
    /* DISTLAB_FAULT=RANK:STEP[:ACTION]: at this step, this rank kills
     * itself (kill, the default), stops (stop: SIGSTOP) or hangs in a loop
     * (hang). */
    int fault_rank, fault_step;
    char fault_action[8];
    int steps_seen;

    /* Liveness (lab/rank/rank.c): a thread of its own sends a "beat" with the
     * rank's progress and position every LAB_BEAT_MS. Every send on the
     * control channel holds send_lock, so frames never interleave. */
    pthread_mutex_t send_lock;
    pthread_t beat_thread;
    bool beating;
    atomic_bool beat_stop;
    atomic_llong progress; /* events sent so far (a beat adds the steps begun) */
    atomic_bool busy;      /* running a job or a statement */
    /* The steps begun and the last one, kept by the communicator
     * (dl_comm_set_step_board) for the beat thread. */
    dl_step_board_t board;
    double timeout_s; /* the session's, for waits on the controller */

    /* The shell statement being run: events carry its id so the shell can
     * print results statement by statement. 0 outside statements. */
    json_int_t cur_id;
    /* Statements come in batches (one per line segment); after a failure the
     * rest of its batch is skipped. */
    json_int_t failed_batch;
    json_int_t cur_batch; /* the batch of the statement being run */
    bool error_quiet;     /* the shell has explained this statement's failure already */
    bool no_check;        /* `set check off`: no fingerprint checks */
    json_int_t p2p_notes; /* send and recv notices sent to the shell's ledger so far */
    bool step_mode;       /* `step on`: collectives pause before each step */
    bool free_run;        /* `continue`: the current collective runs to its end */
    dl_dtype_t cur_dtype; /* of the collective being run */
    /* The call the shell's fingerprint check names for the collectives run
     * now, where they are another call's parts (an object collective's
     * broadcast of sizes), or NULL: a report names what the person wrote. */
    const char *coll_as;
    /* Reports number the calls written: an object collective's later parts
     * keep its number. coll_as_parts counts the parts of the one running;
     * parts_past, per group (ctx), the parts past the first of those that
     * ran there (a call's number is its seq + 1 less those). */
    int coll_as_parts;
    lab_rank_parts_t parts_past[LAB_RANK_GROUPS_NUMBERED];
    int n_parts_past;
    /* Why the notes and snapshots sent now are shown: "assign" (what an
     * assignment bound), "print" (what print and tensors show), or NULL
     * (what a command did). The shell's `set echo` chooses among them. */
    const char *shown_as;
    /* The list whose items are sent now is a tuple: printed (a, b). */
    bool items_of_tuple;
    /* The statement's snapshots carry every element, not only those a
     * print shows: what the exercise player compares (lab_shell_whole). */
    bool snap_whole;
    /* Assignments the statement echoed, and those past LAB_ECHO_ASSIGN_MAX
     * it did not (lab/rank/eval_cmd.c report_assigned), with the names
     * these bound (the first LAB_ECHO_NAMES), whose last values are echoed
     * when the statement ends. */
    long long assign_echoed, assign_unechoed;
    char unechoed[LAB_ECHO_NAMES][48];
    int n_unechoed;

    char last_error_log[256]; /* the last error logged, for a failure's event */
    bool hold_errors;         /* keep error logs for that event instead of sending them */

    /* Control frames that arrived while a hook waited for something else. */
    dl_frame_t *deferred;
    size_t n_deferred;

    /* The trace recorder (lab/rank/rank_trace.c): NULL until tracing is
     * first turned on. */
    struct lab_rank_trace *trace;
} lab_rank_t;

typedef struct lab_rank_trace lab_rank_trace_t;

/* How often a rank beats, in milliseconds; the controller's threshold is
 * far above it (lab/ctrl/controller.c). */
#define LAB_BEAT_MS 200

/* main() of `distlab rank`: returns the process exit code. */
int lab_rank_main(void);

/* DISTLAB_FAULT's form, RANK:STEP[:ACTION]: two integers, RANK from 0, STEP
 * from 1, and what rank RANK does to itself as it begins its STEP-th
 * schedule step: kill (the default: SIGKILL), stop (SIGSTOP) or hang (it
 * keeps beating but makes no progress). Outputs are set only on success. */
bool lab_fault_parse(const char *s, int *rank_p, int *step_p, char *action, size_t cap);
/* The variables that a user may set for ranks (DISTLAB_TIMEOUT,
 * DISTLAB_FAULT, DISTLAB_SHM_COPY, DISTLAB_BIND, DISTLAB_LOG,
 * DISTLAB_ARENA_MB; DISTLAB_TRANSPORT, which --transport overrides, is
 * checked with the flags: cli_check_launch): true when each is unset or well formed, else false
 * with one line in why naming the variable, its value and the form expected. Every command that
 * starts ranks checks them before it starts anything. */
bool lab_rank_env_check(char *why, size_t cap);
/* Whether Ctrl-C at the shell interrupted the statement running now: a
 * loop on the rank stops at its next iteration. */
bool lab_rank_interrupted(void);
/* The last failure on comm into buf, and, where it took the world down,
 * what brings it back (the shell's `respawn`). */
void lab_rank_comm_error(dl_comm_t *comm, char *buf, size_t cap);

/* Sends an event up (takes msg's reference). */
dl_status_t lab_rank_emit(lab_rank_t *r, json_t *msg, const void *blob, size_t len);
dl_status_t lab_rank_emit_snap(lab_rank_t *r, const char *label, const char *name, int index,
                               int of, const dl_tensor_t *t);
/* A snapshot of a name that holds None (torch's gather_list off the root). */
dl_status_t lab_rank_emit_none(lab_rank_t *r, const char *label, const char *name);
dl_status_t lab_rank_note(lab_rank_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same for a text of any length. */
dl_status_t lab_rank_note_text(lab_rank_t *r, const char *text);

/* Waits for a control frame of the given type, keeping any other frame for
 * the main loop. An "abort" frame (Ctrl-C in the shell, or a rank lost while
 * others were paused) ends the wait with DL_ERR_ABORTED and is left in f,
 * its "why" naming the cause: the caller clears f either way. */
dl_status_t lab_rank_await(lab_rank_t *r, const char *type, int timeout_ms, dl_frame_t *f);

/* The hooks of shell statements (lab/rank/rank_hooks.c): step events and step
 * mode, and the fingerprint check that runs before every collective. */
int lab_rank_step_hook(void *arg, const dl_step_info_t *info);
/* The step hook of a benchmark: records the position for the beats and
 * applies DISTLAB_FAULT, sending nothing else (a step event would cost more
 * than a small collective). */
int lab_rank_bench_step_hook(void *arg, const dl_step_info_t *info);
int lab_rank_coll_hook(void *arg, const dl_coll_info_t *info, char *why, size_t why_cap);

/* Tracing (lab/rank/rank_trace.c, records as lab/proto/trace.h says).
 * The controller turns it on and off with a config frame ("trace"); while
 * it is on the rank records its collectives, their steps and messages. */
dl_status_t lab_rank_trace_on(lab_rank_t *r, bool on);
/* Installs hook as the communicator's step hook: alone, or while tracing is
 * on inside the recorder. Chosen here, once per job or statement, so that a
 * rank that does not trace runs its hook and nothing else. quick: the hook
 * never waits for a person (dl_comm_set_quick_step_hook). */
void lab_rank_set_step_hook(lab_rank_t *r, dl_step_hook_t hook, bool quick);
/* Sends what the recorder holds in "trace" frames and empties it; nothing
 * when tracing is off. Called before a job or statement reports its end, so
 * that the controller has a rank's events once it knows the rank is done. */
dl_status_t lab_rank_trace_flush(lab_rank_t *r);
void lab_rank_trace_free(lab_rank_t *r);

/* The jobs (lab/rank/run_rank.c, lab/rank/bench_rank.c): DL_OK, or an error already
 * reported in comm's last error / an error event. */
dl_status_t lab_run_rank(lab_rank_t *r);
dl_status_t lab_bench_rank(lab_rank_t *r);

/* Where a rank's tensors of device type go: the host, or for cuda this
 * rank's GPU, cuda:(LOCAL_RANK, else rank) % the number of GPUs (as the
 * NCCL backend picks it). Without one, why gets "no CUDA device (...)". */
dl_status_t lab_rank_device(int rank, dl_device_type_t type, dl_device_t *dev_p, char *why,
                            size_t cap);
/* The same for the job's --device; why gets the job's one-line error,
 * "--device cuda: no CUDA device (...)". */
dl_status_t lab_job_device(const lab_rank_t *r, dl_device_t *dev_p, char *why, size_t cap);

#endif
