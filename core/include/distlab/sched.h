/* An algorithm is a schedule, not a code path.
 *
 * A schedule is data: an array of steps, each a set of actions that every
 * rank of the communicator performs at once. One executor runs any schedule
 * over any transport; the same object is stepped one step at a time,
 * printed by `explain`, costed with an alpha-beta model and checked
 * symbolically in the tests.
 *
 * Step semantics, for each rank r, in this order:
 *   1. every DL_ACT_MSG with src_rank == r reads its src region (the state
 *      at the start of the step) and sends it;
 *   2. every DL_ACT_MSG with dst_rank == r is received, in action order:
 *      dst = remote (COPY) or dst = acc op remote (REDUCE);
 *   3. every local action of r (COPY, REDUCE, SCALE) runs, in action order.
 * A region that r sends in a step is never written by r in the same step
 * (the executor reads peers' buffers directly, zero copy, while they run),
 * unless the message is eager: an eager message (dl_action_t.eager) goes to
 * another rank and holds at most DL_SCHED_EAGER_MAX bytes, which every
 * builtin transport copies out of the sender's buffer when the message is
 * posted, at the start of the step, before r writes anything; so its
 * sender may write its src region later in the same step (recursive
 * doubling adds in place, rd.c). What a step computes is the same either
 * way: sends read the state at the start of the step.
 *   4. every DL_ACT_MSG with dst_rank == r and write-back set
 *      (dl_action_t.back) writes r's dst region, as it stands after 2 and 3,
 *      back into src_rank's src region; that send completes only then, so
 *      at the end of the step the sender's src holds what the receiver
 *      computed. The sender neither sends nor writes that region otherwise
 *      in the step. A write-back is done by the receiver in its peer's
 *      memory, so it needs shared memory between the two ranks: a schedule
 *      built for a network (dl_sched_build_on) has none.
 * Messages with count 0 are real (a barrier's messages carry no data).
 */
#ifndef DISTLAB_SCHED_H
#define DISTLAB_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "distlab/coll.h"
#include "distlab/op.h"
#include "distlab/status.h"

/* The largest message the builtin transports copy when it is posted (the
 * shared-memory descriptor's inline payload and TCP's eager slot, both at
 * least this large: core/transport/link.c checks it): the most an eager
 * message may carry. */
#define DL_SCHED_EAGER_MAX 2016

/* The buffers a schedule names on each rank; see coll.h for their sizes.
 * TMP is scratch of sched->tmp_count elements, allocated by the executor. */
typedef enum { DL_BUF_IN, DL_BUF_OUT, DL_BUF_TMP, DL_BUF__COUNT } dl_buf_t;

/* A region: buffer + element offset. Its length is the action's count. */
typedef struct {
    dl_buf_t buf;
    size_t off;
} dl_ref_t;

typedef enum {
    DL_ACT_MSG,    /* src_rank's src region -> dst_rank's dst region (combine: copy or reduce) */
    DL_ACT_COPY,   /* local on src_rank (== dst_rank): dst = src */
    DL_ACT_REDUCE, /* local: dst = acc op src */
    DL_ACT_SCALE,  /* local: dst /= nranks (finishes an avg) */
} dl_act_kind_t;

typedef enum { DL_COMBINE_COPY, DL_COMBINE_REDUCE } dl_combine_t;

typedef struct {
    dl_act_kind_t kind;
    dl_combine_t combine; /* MSG only */
    int src_rank;         /* sender (MSG) or the rank acting (local) */
    int dst_rank;         /* receiver (MSG) or the rank acting (local) */
    dl_ref_t src;         /* read on src_rank */
    dl_ref_t dst;         /* written on dst_rank */
    dl_ref_t acc;         /* REDUCE: the local operand on dst_rank (== dst when in place) */
    size_t count;         /* elements */
    int chunk;            /* a label for display ("chunk 2"); -1 when none */
    bool eager;           /* MSG only: copied when posted, so src may be written in the step */
    bool back;            /* MSG only: dst is written back into the sender's src (step 4) */
} dl_action_t;

typedef struct {
    const char *phase; /* "reduce-scatter", "all-gather", "fan-in", ... (static) */
    size_t first, n;   /* actions[first .. first+n) */
} dl_step_t;

typedef struct dl_sched {
    dl_coll_args_t args; /* a copy; args.splits points into this struct's own copy */
    const char *algo;    /* registry name (static) */
    dl_op_t kernel_op;   /* op used by REDUCE combines: args.op, or sum for avg */
    size_t elem_size;    /* bytes per element (dl_sched_build's elem_size) */
    bool network;        /* built for messages over a network (dl_sched_build_on) */
    size_t tmp_count;    /* TMP elements each rank needs (0: none) */
    dl_step_t *steps;
    size_t n_steps;
    dl_action_t *actions;
    size_t n_actions;
    size_t *splits_copy; /* owned copy of args.splits, or NULL */
} dl_sched_t;

/* ---- the algorithm registry ---- */

typedef dl_status_t (*dl_sched_builder_t)(const dl_coll_args_t *args, dl_sched_t *s);

typedef struct {
    const char *name;    /* "ring", "rd", "rhd", "tree", "chain", "direct", "pairwise",
                          * "dissemination" */
    const char *title;   /* "ring", "recursive doubling", ... */
    const char *summary; /* one line for help and explain */
    dl_sched_builder_t build[DL_COLL__COUNT]; /* NULL: does not implement that collective */
    bool shm_only; /* writes back into its peers' memory: shared memory between every pair */
} dl_algo_t;

/* All algorithms, NULL-terminated. */
const dl_algo_t *const *dl_algos(void);
const dl_algo_t *dl_algo_find(const char *name);
/* "ring, rd, rhd" — the algorithms that implement c (static buffer per call site, not thread safe).
 */
const char *dl_algo_names_for(dl_coll_t c, char *buf, size_t cap);
/* The default algorithm for a collective at this size (bytes per rank of IN). */
const char *dl_algo_default(dl_coll_t c, int nranks, size_t bytes);
/* The default algorithm for a call (its coll, nranks and count, of
 * elem_size-byte elements): the one dl_sched_build picks for algo NULL.
 * Views that name the algorithm use this, so that they name the one that
 * ran (a scatter's IN is nranks * count elements, a gather's count). */
const char *dl_algo_default_for(const dl_coll_args_t *args, size_t elem_size);
/* The same for a given transport (network: see dl_sched_build_on): over a
 * network an all_reduce has no share (it writes into its peers' memory). */
const char *dl_algo_default_on(dl_coll_t c, int nranks, size_t bytes, bool network);
const char *dl_algo_default_for_on(const dl_coll_args_t *args, size_t elem_size, bool network);

/* Builds the schedule of algo for args. algo NULL picks the default for
 * elem_size-byte elements. Errors: DL_ERR_NOT_FOUND for an unknown
 * algorithm, DL_ERR_UNSUPPORTED when it does not implement the collective,
 * DL_ERR_INVALID for bad args (root out of range, nranks < 1).
 * *s_p is set only on success. */
dl_status_t dl_sched_build(const char *algo, const dl_coll_args_t *args, size_t elem_size,
                           dl_sched_t **s_p);
/* The same for a given transport. network false: every rank reads its
 * peers' buffers in shared memory, and the ring pipelines large vectors so
 * that they stay in the cache (core/sched/ring.c); true: messages cross a
 * network, where each step costs a round trip and pipelining does not pay.
 * dl_sched_build builds for shared memory. */
dl_status_t dl_sched_build_on(const char *algo, const dl_coll_args_t *args, size_t elem_size,
                              bool network, dl_sched_t **s_p);
void dl_sched_free(dl_sched_t *s);

/* ---- helpers for the builders in core/sched ---- */

/* Starts a new step named phase; later actions belong to it. */
dl_status_t dl_sched_step(dl_sched_t *s, const char *phase);
dl_status_t dl_sched_msg(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank, dl_ref_t dst,
                         size_t count, int chunk);
dl_status_t dl_sched_msg_reduce(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                dl_ref_t acc, dl_ref_t dst, size_t count, int chunk);
/* A copying message, eager (see dl_sched_msg_reduce_eager). */
dl_status_t dl_sched_msg_eager(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                               dl_ref_t dst, size_t count, int chunk);
/* The same as an eager message (see the step semantics above): its sender
 * may write src in the same step. DL_ERR_INVALID when it goes to its own
 * sender or carries more than DL_SCHED_EAGER_MAX bytes of s->elem_size. */
dl_status_t dl_sched_msg_reduce_eager(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                      dl_ref_t acc, dl_ref_t dst, size_t count, int chunk);
/* The same with write-back (step 4 of the step semantics): once the
 * receiver has run the step's receives and local actions, its dst region is
 * written back into the sender's src region. DL_ERR_INVALID when it goes to
 * its own sender; DL_ERR_UNSUPPORTED in a schedule built for a network. */
dl_status_t dl_sched_msg_reduce_back(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                     dl_ref_t acc, dl_ref_t dst, size_t count, int chunk);
/* Whether a message of count elements may be eager (at most
 * DL_SCHED_EAGER_MAX bytes of s->elem_size; an elem_size of 0 is unknown). */
bool dl_sched_fits_eager(const dl_sched_t *s, size_t count);
dl_status_t dl_sched_copy(dl_sched_t *s, int rank, dl_ref_t src, dl_ref_t dst, size_t count,
                          int chunk);
dl_status_t dl_sched_reduce_local(dl_sched_t *s, int rank, dl_ref_t acc, dl_ref_t src, dl_ref_t dst,
                                  size_t count, int chunk);
dl_status_t dl_sched_scale(dl_sched_t *s, int rank, dl_ref_t dst, size_t count);
/* Drops steps that ended up with no actions. */
void dl_sched_compact(dl_sched_t *s);

/* ---- analysis ---- */

typedef struct {
    size_t n_steps;
    size_t n_messages;
    size_t max_bytes_sent; /* by the busiest rank over the whole schedule */
    size_t max_bytes_recv; /* by the busiest receiver over the whole schedule */
    size_t total_bytes;    /* by all ranks */
    double cost_us;        /* alpha-beta estimate */
    double alpha_us;       /* the parameters used */
    double beta_us_per_byte;
} dl_sched_stats_t;

/* Alpha-beta cost: sum over steps of (alpha + beta * bytes of the busiest
 * link in that step: the most one rank sends or receives in it). Defaults
 * alpha 1 us, beta 0.1 ns/B (10 GB/s). */
void dl_sched_stats(const dl_sched_t *s, size_t elem_size, double alpha_us, double beta_us_per_byte,
                    dl_sched_stats_t *st_p);

/* Writes the human description `distlab explain` prints: a header, each
 * step with its phase, its messages and local actions as
 * distlab/stepdesc.h writes them ("r0 -> r1  chunk 2  reduce  8 B
 * in[2:3] -> in[2:3]"), and the totals with the cost. */
void dl_sched_explain(const dl_sched_t *s, size_t elem_size, const char *dtype_name, FILE *out);
/* The same, with what every rank's buffers hold before the first step and
 * after each one, as sums of the ranks' inputs (distlab/symsim.h):
 * "r1  out [a0+b0, b1, -]". */
dl_status_t dl_sched_explain_symbolic(const dl_sched_t *s, size_t elem_size, const char *dtype_name,
                                      FILE *out);

/* How algorithms scale: one row per algorithm (NULL or none: the default
 * for the size) and world size, with the steps, messages, the most one
 * rank sends and receives, the total and the cost. base gives the
 * collective, count, root (0 where it is out of range) and op; its nranks
 * is ignored. A row that cannot be built says why. DL_ERR_INVALID for no
 * world size or one below 1. */
dl_status_t dl_sched_explain_scaling(const dl_coll_args_t *base, const char *const *algos,
                                     size_t n_algos, const int *nps, size_t n_nps, size_t elem_size,
                                     const char *dtype_name, FILE *out);
/* The same for a given transport (network: see dl_sched_build_on), whose
 * default algorithms and schedules may differ. */
dl_status_t dl_sched_explain_scaling_on(const dl_coll_args_t *base, const char *const *algos,
                                        size_t n_algos, const int *nps, size_t n_nps,
                                        size_t elem_size, const char *dtype_name, bool network,
                                        FILE *out);

/* Checks the schedule's own rules: ranks and regions in range for the
 * buffer sizes of coll.h, eager messages that fit (dl_sched_fits_eager)
 * and go to another rank, no region sent (other than eagerly) and written
 * by one rank in the same step. On failure writes a one-line reason into why (if not NULL). */
dl_status_t dl_sched_validate(const dl_sched_t *s, char *why, size_t why_cap);

/* Size in elements of buffer b on rank r for s->args (coll.h), TMP included. */
size_t dl_sched_buf_count(const dl_sched_t *s, int rank, dl_buf_t b);

#endif
