/* Linear: every rank sends to every other rank in one step, and waits once.
 *
 *   n = 4        r0          r1          r2          r3
 *     step 1    ->r1 r2 r3  ->r2 r3 r0  ->r3 r0 r1  ->r0 r1 r2
 *
 * As Open MPI's linear all-to-all posts every receive and send before it
 * waits. Each rank sends to r+1 first, r+2 next, and so on, and receives
 * from r-1 first, so that the message it waits for first is the one its
 * neighbour sent first. n-1 messages per rank, one step: where a wait costs
 * more than a message (small vectors, or more ranks than cores, where each
 * wait gives the core away) it beats the log2(n) or n-1 steps of the
 * others.
 *
 *   all_to_all       the chunk for rank j goes to j; uneven splits read and
 *                    land as in pairwise.c.
 *   all_gather       the rank's block goes to every rank's OUT.
 *   all_reduce,      every rank's vector (reduce_scatter: its chunk for j)
 *   reduce_scatter   lands in the receiver's TMP, and every rank folds the n
 *                    operands in the same order, so that all ranks get the
 *                    same bits of a float sum: a reduce_scatter in rank
 *                    order, x0 op x1 op ... op x(n-1); an all_reduce chunk
 *                    by chunk in the order torch's gloo backend sums them
 *                    (dl__gloo_chunk), so that a float sum prints as torch
 *                    prints it. An all_reduce sends the IN it writes: in
 *                    one step where its messages are eager, else in a
 *                    second one ("sum").
 *   barrier          empty messages.
 *   steps: 1 (an all_reduce past the eager size: 2).
 *   bytes per rank: all_reduce (n-1) B, all_gather (n-1) B (B = one block),
 *   all_to_all and reduce_scatter (n-1)/n B (B = one rank's IN).
 */
#include "distlab/sched.h"
#include "internal.h"

static dl_status_t linear_all_to_all(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;

#define IN_FOR(i, j)   IN_AT(dl__a2a_in_off(s, (i), (j)))
#define OUT_FROM(i, j) OUT_AT(dl__a2a_out_off(s, (i), (j)))

    DL_TRY(dl_sched_step(s, n == 1 ? "copy" : "exchange"));
    /* Shift by shift: a rank's sends and its receives are both listed in
     * the order it does them. */
    for (int k = 1; k < n; k++) {
        for (int r = 0; r < n; r++) {
            int to = (r + k) % n;
            DL_TRY(
                dl_sched_msg(s, r, IN_FOR(r, to), to, OUT_FROM(r, to), dl__a2a_len(s, r, to), to));
        }
    }
    for (int r = 0; r < n; r++)
        DL_TRY(dl_sched_copy(s, r, IN_FOR(r, r), OUT_FROM(r, r), dl__a2a_len(s, r, r), r));
#undef IN_FOR
#undef OUT_FROM
    return DL_OK;
}

/* TMP slot of the operand from rank k on rank r (every k but r). */
static size_t slot_of(int r, int k)
{
    return (size_t)(k < r ? k : k - 1);
}

/* Rank r's operand k: its own (own) where k is r, else rank k's, which
 * landed in r's TMP. */
static dl_ref_t operand_of(int r, int k, dl_ref_t own, size_t count)
{
    return k == r ? own : TMP_AT(slot_of(r, k) * count);
}

/* Every rank r folds the n operands in rank order into dst; its own lies
 * at own0 + r * own_step. The running value stays in scratch until the
 * last reduce: dst, unless dst is r's own operand, still to be read; then
 * rank 0's operand's slot, read first. */
static dl_status_t fold_all(dl_sched_t *s, int n, size_t count, dl_ref_t own0, size_t own_step,
                            dl_ref_t dst)
{
    for (int r = 0; r < n; r++) {
        dl_ref_t own = {own0.buf, own0.off + (size_t)r * own_step};
        bool own_is_dst = own.buf == dst.buf && own.off == dst.off;
        dl_ref_t scratch = own_is_dst && r != 0 ? operand_of(r, 0, own, count) : dst;
        dl_ref_t acc = operand_of(r, 0, own, count);
        for (int k = 1; k < n; k++) {
            dl_ref_t to = k == n - 1 ? dst : scratch;
            DL_TRY(dl_sched_reduce_local(s, r, acc, operand_of(r, k, own, count), to, count, -1));
            acc = to;
        }
        DL_TRY(dl__scale_if_avg(s, r, dst, count));
    }
    return DL_OK;
}

/* Every rank r folds gloo's chunk c of the n operands, in gloo's order
 * x(c-1) op x(c-2) op ... op x(c), into its IN. The running value stays in
 * the TMP slot of the first operand, read first, until the last reduce,
 * unless the first operand is r's own IN. */
static dl_status_t fold_gloo(dl_sched_t *s, int n, size_t count)
{
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < n; c++) {
            size_t off, len;
            dl__gloo_chunk(count, s->elem_size, n, c, &off, &len);
            if (len == 0)
                continue;
            int first = (c - 1 + n) % n;
            dl_ref_t own = IN_AT(off), dst = own;
            dl_ref_t acc = first == r ? own : TMP_AT(slot_of(r, first) * count + off);
            dl_ref_t scratch = first == r ? dst : acc;
            for (int j = 1; j < n; j++) {
                int k = (c - 1 - j + 2 * n) % n;
                dl_ref_t src = k == r ? own : TMP_AT(slot_of(r, k) * count + off);
                dl_ref_t to = j == n - 1 ? dst : scratch;
                DL_TRY(dl_sched_reduce_local(s, r, acc, src, to, len, -1));
                acc = to;
            }
        }
        DL_TRY(dl__scale_if_avg(s, r, IN_AT(0), count));
    }
    return DL_OK;
}

static dl_status_t linear_all_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;
    size_t count = args->count;

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "average"));
        return dl__scale_if_avg(s, 0, IN_AT(0), count);
    }
    bool eager = dl_sched_fits_eager(s, count);
    s->tmp_count = (size_t)(n - 1) * count;
    DL_TRY(dl_sched_step(s, "exchange"));
    for (int k = 1; k < n; k++) {
        for (int r = 0; r < n; r++) {
            int to = (r + k) % n;
            dl_ref_t dst = TMP_AT(slot_of(to, r) * count);
            DL_TRY(eager ? dl_sched_msg_eager(s, r, IN_AT(0), to, dst, count, -1)
                         : dl_sched_msg(s, r, IN_AT(0), to, dst, count, -1));
        }
    }
    if (!eager)
        DL_TRY(dl_sched_step(s, "sum"));
    return fold_gloo(s, n, count);
}

static dl_status_t linear_reduce_scatter(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;
    size_t count = args->count; /* one rank's chunk */

    DL_TRY(dl_sched_step(s, n == 1 ? "copy" : "exchange"));
    if (n == 1) {
        DL_TRY(dl_sched_copy(s, 0, IN_AT(0), OUT_AT(0), count, 0));
        return dl__scale_if_avg(s, 0, OUT_AT(0), count);
    }
    s->tmp_count = (size_t)(n - 1) * count;
    for (int k = 1; k < n; k++) {
        for (int r = 0; r < n; r++) {
            int to = (r + k) % n;
            DL_TRY(dl_sched_msg(s, r, IN_AT((size_t)to * count), to, TMP_AT(slot_of(to, r) * count),
                                count, to));
        }
    }
    return fold_all(s, n, count, IN_AT(0), count, OUT_AT(0));
}

static dl_status_t linear_all_gather(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;
    size_t count = args->count; /* one rank's block */

    DL_TRY(dl_sched_step(s, n == 1 ? "copy" : "exchange"));
    for (int k = 1; k < n; k++) {
        for (int r = 0; r < n; r++) {
            int to = (r + k) % n;
            DL_TRY(dl_sched_msg(s, r, IN_AT(0), to, OUT_AT((size_t)r * count), count, r));
        }
    }
    for (int r = 0; r < n; r++)
        DL_TRY(dl_sched_copy(s, r, IN_AT(0), OUT_AT((size_t)r * count), count, r));
    return DL_OK;
}

static dl_status_t linear_barrier(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;

    DL_TRY(dl_sched_step(s, "exchange"));
    for (int k = 1; k < n; k++)
        for (int r = 0; r < n; r++)
            DL_TRY(dl_sched_msg(s, r, IN_AT(0), (r + k) % n, IN_AT(0), 0, -1));
    return DL_OK;
}

const dl_algo_t dl__algo_linear = {
    .name = "linear",
    .title = "linear exchange",
    .summary = "Every rank sends to every other rank in one step: one wait, n-1 messages per "
               "rank.",
    .build =
        {
            [DL_COLL_ALL_REDUCE] = linear_all_reduce,
            [DL_COLL_ALL_GATHER] = linear_all_gather,
            [DL_COLL_REDUCE_SCATTER] = linear_reduce_scatter,
            [DL_COLL_ALL_TO_ALL] = linear_all_to_all,
            [DL_COLL_BARRIER] = linear_barrier,
        },
};
