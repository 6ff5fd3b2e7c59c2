/* The executor: runs one rank's part of a schedule over the builtin
 * backend's transports (transport/link.h: shared memory within a host, TCP
 * between hosts). It is a resumable state machine: dl__exec_progress
 * advances as far as it can without blocking, so several collectives (async
 * work) make progress from one wait loop, and a step hook can pause between
 * steps. */
#ifndef DL_EXEC_H
#define DL_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/comm.h"
#include "distlab/dtype.h"
#include "distlab/op.h"
#include "distlab/sched.h"
#include "exec/plan.h"
#include "transport/link.h"

/* A write-back message this rank holds in the current step: the sender's
 * memory, to be written once the step's receives and local actions ran. */
typedef struct {
    const dl_action_t *a;
    uint8_t *remote;
    dl_link_held_t h;
} dl_exec_held_t;

/* Where the current step is: a step's stages, in order. */
enum {
    DL__EXEC_BEGIN,
    DL__EXEC_RECV,
    DL__EXEC_LOCAL,
    DL__EXEC_BACK,
    DL__EXEC_SENDS,
    DL__EXEC_DONE
};

/* dl__exec_init sets every field but the inline arrays, the hook's
 * (hook_arg, hook_quick, info: read only when hook is set, by
 * dl__exec_set_hook) and segs (read only when segmented): a new field must
 * be set there too. */
typedef struct {
    const dl_sched_t *s;
    const dl_exec_plan_t *plan; /* this rank's part of s */
    int me;                     /* rank in the communicator */
    const int *world_ranks;     /* communicator rank -> world rank */
    dl_link_t *link;
    uint32_t ctx;
    int64_t tag;
    dl_dtype_t dtype;
    size_t esz;
    /* The reduction's kernels, looked up at the first reduction (k2 NULL
     * until then): a call to dl_reduce checks the op, the dtype and the
     * overlaps every time, as many instructions as an 8-byte sum. */
    dl_reduce_kernels_t kern;
    uint8_t *buf[DL_BUF__COUNT];
    /* A buffer given as segments (a root's tensor list) has buf[b] NULL
     * and segs[b].ptrs set; segmented tells whether any is. */
    dl_segs_t segs[DL_BUF__COUNT];
    bool segmented;
    dl_step_board_t *board; /* written as each step begins, when set */
    dl_step_hook_t hook;
    void *hook_arg;
    /* The hook never pauses, so it is not timed, and is called before each
     * step only (dl_comm_set_quick_step_hook). */
    bool hook_quick;
    /* What the hook sees: set once, and only step and done change between
     * its calls (two per step, or one when quick). */
    dl_step_info_t info;

    /* Where it is. */
    size_t step;
    int stage;     /* DL__EXEC_* */
    size_t next;   /* next action of the current stage */
    bool hook_ran; /* the begin hook of the current step has run */
    dl_link_send_t *sends;
    int *send_peers; /* the receiver of each pending send */
    size_t nsends, sends_cap;
    /* Where the first sends go: most steps post one or two, and a small
     * collective should not pay an allocation for them. */
    dl_link_send_t sends_inline[4];
    int send_peers_inline[4];
    int waiting_for; /* communicator rank being waited on, -1 when none */
    /* Write-backs held in this step, and whether the step's receives are
     * one share summed from every sender and written back (run as one
     * pass over the share, block by block, while it is in the cache). */
    dl_exec_held_t *held;
    size_t nheld, held_cap;
    dl_exec_held_t held_inline[4];
    bool fused;
} dl_exec_t;

/* Seconds this process has spent inside step hooks; waits leave them out
 * of their timeouts. Hooks are called through dl__exec_run_hook, which
 * adds their time. */
extern double dl__exec_paused_s;

/* Calls a step hook, the executor's or a whole step's. A hook may wait for
 * a person (step mode); that time is not the collective's, so it is added
 * to dl__exec_paused_s, unless quick: it never pauses, and is not timed
 * (dl_comm_set_quick_step_hook). */
int dl__exec_run_hook(dl_step_hook_t hook, void *arg, bool quick, const dl_step_info_t *info);

/* dl__exec_init's segmented buffers, out of line: only a root's tensor
 * list has them. */
dl_status_t dl__exec_init_segs(dl_exec_t *e, const dl_segs_t *segs);

/* Where an executor stands before its first step (dl__exec_init, and
 * dl__exec_rearm for one that ran to its end): nothing sent, held or
 * waited for. */
static inline void dl__exec_start(dl_exec_t *e)
{
    e->step = 0;
    e->stage = DL__EXEC_BEGIN;
    e->next = 0;
    e->hook_ran = false;
    e->nsends = 0;
    e->nheld = 0;
    e->waiting_for = -1;
    e->fused = false;
}

/* Prepares e to run plan, its rank's part of a schedule built for dt's
 * size (buffers must lie in this rank's arena, TMP included), with no step
 * hook. segs NULL: every buffer is the block bufs[b]; else a buffer b with
 * segs[b].ptrs set is segmented (bufs[b] is ignored). A segmented buffer
 * may be received into, copied and reduced across its segments' edges, but
 * a message this rank sends must lie in one segment (the receiver reads it
 * in place): DL_ERR_INVALID otherwise (dl__exec_plan_sends_span). Inline,
 * field by field rather than a memset of the whole (the inline arrays are
 * written before they are read): a small collective runs this on every
 * call. */
static inline dl_status_t dl__exec_init(dl_exec_t *e, const dl_exec_plan_t *plan,
                                        const int *world_ranks, dl_link_t *link, uint32_t ctx,
                                        int64_t tag, dl_dtype_t dt, void *const bufs[DL_BUF__COUNT],
                                        const dl_segs_t *segs)
{
    e->s = plan->s;
    e->plan = plan;
    e->me = plan->me;
    e->world_ranks = world_ranks;
    e->link = link;
    e->ctx = ctx;
    e->tag = tag;
    e->dtype = dt;
    e->kern.k2 = NULL;
    e->esz = plan->s->elem_size;
    e->segmented = false;
    e->board = NULL;
    e->hook = NULL;
    dl__exec_start(e);
    e->sends = e->sends_inline;
    e->send_peers = e->send_peers_inline;
    e->sends_cap = sizeof(e->sends_inline) / sizeof(e->sends_inline[0]);
    e->held = e->held_inline;
    e->held_cap = sizeof(e->held_inline) / sizeof(e->held_inline[0]);
    for (int b = 0; b < DL_BUF__COUNT; b++)
        e->buf[b] = bufs[b];
    return segs != NULL ? dl__exec_init_segs(e, segs) : DL_OK;
}
/* Calls hook before and after every step of e (after dl__exec_init);
 * quick: it never pauses, is not timed, and is called before steps only
 * (dl_comm_set_quick_step_hook).
 * ctx and seq name the collective as dl_step_info_t does. Inline, field by
 * field (each call of the hook sets step and done): a run with a hook, as
 * every run of `distlab bench`, sets it for every call. */
static inline void dl__exec_set_hook(dl_exec_t *e, dl_step_hook_t hook, void *arg, bool quick,
                                     uint32_t ctx, uint64_t seq)
{
    e->hook = hook;
    e->hook_arg = arg;
    e->hook_quick = quick;
    e->info.s = e->s;
    e->info.rank = e->me;
    e->info.world_ranks = e->world_ranks;
    e->info.bufs = (void *const *)e->buf;
    e->info.segs = e->segmented ? e->segs : NULL;
    e->info.esz = e->esz;
    e->info.ctx = ctx;
    e->info.seq = seq;
    e->info.whole = false;
}
/* Makes e, which ran to its end, run again from its first step with all
 * that dl__exec_init and dl__exec_set_hook gave it (plan, buffers, hook),
 * as collective number tag (seq for the hook). A small collective called
 * again on the same buffers skips their work this way. */
static inline void dl__exec_rearm(dl_exec_t *e, int64_t tag, uint64_t seq)
{
    e->tag = tag;
    e->info.seq = seq;
    dl__exec_start(e);
}
/* dl__exec_fini's work, where there is some. */
void dl__exec_release(dl_exec_t *e);

/* Releases what e holds. It leaves e, as a zeroed e is, such that
 * dl__exec_fini finds nothing more to release: a work that failed before
 * dl__exec_init may call it. Inline: most collectives hold nothing at the
 * end and sent from the inline arrays. */
static inline void dl__exec_fini(dl_exec_t *e)
{
    if (e->nheld > 0 || e->held != e->held_inline || e->sends != e->sends_inline)
        dl__exec_release(e);
}
/* DL_OK: finished. DL_ERR_AGAIN: waiting for a peer. Other: failed, with
 * why filled. */
dl_status_t dl__exec_progress(dl_exec_t *e, char *why, size_t why_cap);
/* "step 3/6 (reduce-scatter), waiting for rank 2" for error messages. */
void dl__exec_where(const dl_exec_t *e, char *buf, size_t cap);

#endif
