/* One rank's part of a schedule, step by step: which actions it posts,
 * receives and runs locally. A schedule lists every rank's actions; the
 * executor would otherwise look through all of them, three times a step,
 * on every call (a linear all_to_all at np=4 has 16 actions a step, of
 * which 7 concern a rank). Built once with the schedule and kept with it
 * (the builtin backend's schedule cache). */
#ifndef DL_EXEC_PLAN_H
#define DL_EXEC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/sched.h"

typedef struct {
    /* Indices into the schedule's actions, in their order, at
     * idx[first ..]: the messages this rank posts (to another rank), then
     * those it receives (from itself too), then its local actions of a
     * non-zero count. */
    size_t first;
    uint32_t n_sends, n_recvs, n_locals;
    /* The buffer of the share this rank sums from every sender and writes
     * back, when the step is one (exec.c's fused pass), else -1; and
     * whether that step scales the share (avg). */
    int fuse_buf;
    bool fuse_scale;
} dl_exec_plan_step_t;

typedef struct {
    const dl_sched_t *s;
    int me;
    dl_exec_plan_step_t *steps; /* s->n_steps of them */
    uint32_t *idx;
    /* Whether a message this rank sends from buffer b crosses the edge of
     * a segment of s->args.count elements (dl__exec_plan_sends_span): the
     * segments of a tensor list, which a call may give for b. */
    bool spans[DL_BUF__COUNT];
} dl_exec_plan_t;

/* The plan of rank me in s, which it must outlive. NULL when out of
 * memory. */
dl_exec_plan_t *dl__exec_plan_new(const dl_sched_t *s, int me);
void dl__exec_plan_free(dl_exec_plan_t *p);

/* Whether rank me of s sends a message from buffer b that crosses the
 * edge of a segment of seg_count elements. */
bool dl__exec_sends_span(const dl_sched_t *s, int me, dl_buf_t b, size_t seg_count);

/* dl__exec_sends_span for p's rank, known for segments of the schedule's
 * count (a tensor list's tensors), counted otherwise. */
static inline bool dl__exec_plan_sends_span(const dl_exec_plan_t *p, dl_buf_t b, size_t seg_count)
{
    return seg_count == p->s->args.count ? p->spans[b]
                                         : dl__exec_sends_span(p->s, p->me, b, seg_count);
}

#endif
