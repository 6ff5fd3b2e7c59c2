/* Recursive doubling: in step k every rank pairs with the rank whose number
 * differs in bit k (partner = r XOR 2^k), so what each rank knows doubles
 * every step and log2(n) steps reach everyone.
 *
 *   n = 8        step 1: distance 1    step 2: distance 2    step 3: distance 4
 *                r0<->r1  r2<->r3      r0<->r2  r1<->r3      r0<->r4  r1<->r5
 *                r4<->r5  r6<->r7      r4<->r6  r5<->r7      r2<->r6  r3<->r7
 *
 * ALL-REDUCE (the butterfly): partners swap their whole vectors and both
 * add. After step k a rank holds the sum over its aligned group of 2^k
 * ranks; after log2(n) steps, the sum over all. A rank may not overwrite
 * the vector it is sending in the same step (its partner reads it while the
 * step runs), so the running sum alternates between IN and TMP:
 * step 1 computes TMP = IN + partner's IN, step 2 IN = TMP + partner's TMP,
 * and so on; when log2(n) is odd a final local copy brings TMP back to IN.
 * A small vector (at most DL_SCHED_EAGER_MAX bytes) travels eagerly: the
 * transport copies it when it is posted, so the last exchange adds into
 * IN in place, IN = IN + partner's IN, and the copy step goes away (at
 * n = 2 the whole all-reduce is one step, and needs no TMP).
 *   steps: log2(n).  bytes per rank: log2(n) * B (B = the vector's bytes).
 *   cost: log2(n) alpha + log2(n) B beta: few steps, many bytes, the right
 *   trade for small vectors (over a network, the default up to 32 KiB; over
 *   shared memory up to the eager size, linear.c going first over 3 to 8
 *   ranks).
 *
 * ALL-GATHER: partners swap everything they have gathered so far, so the
 * blocks a rank holds double every step: 1, 2, 4, ... of n.
 *   steps: log2(n).  bytes per rank: (n-1) * B (B = one rank's input).
 *   cost: log2(n) alpha + (n-1) B beta.
 *
 * NOT A POWER OF TWO: the fold. With p the largest power of two <= n and
 * rem = n - p, ranks 2i and 2i+1 (i < rem) pair up; in a "fold" step 2i
 * hands its data to 2i+1 and then sits out, the p remaining ranks run the
 * algorithm above as if they were ranks 0..p-1, and in an "unfold" step
 * 2i+1 hands the result back to 2i.
 *
 *   n = 6 (p = 4, rem = 2):
 *     fold       r0 -> r1   r2 -> r3           r4, r5 wait
 *     butterfly  over r1, r3, r4, r5 (active ranks 0, 1, 2, 3)
 *     unfold     r1 -> r0   r3 -> r2
 *
 *   cost: two more steps, log2(p) + 2 in all.
 *
 * avg: the active ranks divide the result by n at the end of the last
 * exchange, before the unfold passes it on.
 */
#include "distlab/sched.h"
#include "internal.h"

static dl_status_t rd_all_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, p = dl__pow2_floor(n), rem = n - p;
    size_t count = args->count;

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "average"));
        return dl__scale_if_avg(s, 0, IN_AT(0), count);
    }
    /* The last exchange may write what it sends when it is eager. */
    bool eager = dl_sched_fits_eager(s, count);
    s->tmp_count = eager && p == 2 ? 0 : count;

    if (rem > 0) {
        DL_TRY(dl_sched_step(s, "fold"));
        for (int i = 0; i < rem; i++) {
            /* 2i adds its vector into 2i+1's and sits out until the unfold. */
            int from = 2 * i, into = 2 * i + 1;
            DL_TRY(dl_sched_msg_reduce(s, from, IN_AT(0), into, IN_AT(0), IN_AT(0), count, -1));
        }
    }

    /* The butterfly: cur is the buffer holding each active rank's running
     * sum, which it sends; the sum of both lands in the other buffer, or,
     * in an eager last exchange, in IN (which cur then is, or is made). */
    dl_buf_t cur = DL_BUF_IN;
    for (int d = 1; d < p; d *= 2) {
        bool in_place = eager && 2 * d == p;
        dl_buf_t next = in_place || cur == DL_BUF_TMP ? DL_BUF_IN : DL_BUF_TMP;
        DL_TRY(dl_sched_step(s, "butterfly"));
        for (int v = 0; v < p; v++) {
            int r = dl__fold_rank(v, rem), partner = dl__fold_rank(v ^ d, rem);
            if (in_place && cur == next)
                DL_TRY(dl_sched_msg_reduce_eager(s, partner, BUF_AT(cur, 0), r, BUF_AT(cur, 0),
                                                 BUF_AT(next, 0), count, -1));
            else
                DL_TRY(dl_sched_msg_reduce(s, partner, BUF_AT(cur, 0), r, BUF_AT(cur, 0),
                                           BUF_AT(next, 0), count, -1));
        }
        cur = next;
    }
    for (int v = 0; v < p; v++)
        DL_TRY(dl__scale_if_avg(s, dl__fold_rank(v, rem), BUF_AT(cur, 0), count));

    /* Bring the result home: a copy out of TMP where it ended there, and the
     * folded ranks' copy. Both can share one step: the unfold sends from cur
     * while the copy writes IN. */
    if (cur == DL_BUF_IN && rem == 0)
        return DL_OK;
    DL_TRY(dl_sched_step(s, rem > 0 ? "unfold" : "copy"));
    for (int v = 0; v < p; v++) {
        int r = dl__fold_rank(v, rem);
        if (v < rem)
            DL_TRY(dl_sched_msg(s, r, BUF_AT(cur, 0), r - 1, IN_AT(0), count, -1));
        if (cur == DL_BUF_TMP)
            DL_TRY(dl_sched_copy(s, r, TMP_AT(0), IN_AT(0), count, -1));
    }
    return DL_OK;
}

static dl_status_t rd_all_gather(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, p = dl__pow2_floor(n), rem = n - p;
    size_t count = args->count; /* one rank's block */

    /* Active rank v holds the blocks of original ranks [lo(v), lo(v+1)). */
#define BLOCK(b) OUT_AT((size_t)(b)*count)
#define LO(v)    dl__fold_lo((v), rem)

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "copy"));
        return dl_sched_copy(s, 0, IN_AT(0), OUT_AT(0), count, 0);
    }

    /* Every active rank puts its own block in place. With a fold this
     * happens in the fold step, so that the first exchange can send a
     * folded pair's two blocks from OUT in one piece; without one, in the
     * first exchange, which then sends the block from IN. */
    if (rem > 0) {
        DL_TRY(dl_sched_step(s, "fold"));
        for (int i = 0; i < rem; i++)
            DL_TRY(dl_sched_msg(s, 2 * i, IN_AT(0), 2 * i + 1, BLOCK(2 * i), count, 2 * i));
        for (int v = 0; v < p; v++) {
            int r = dl__fold_rank(v, rem);
            DL_TRY(dl_sched_copy(s, r, IN_AT(0), BLOCK(r), count, r));
        }
    }

    for (int d = 1; d < p; d *= 2) {
        DL_TRY(dl_sched_step(s, "all-gather"));
        for (int v = 0; v < p; v++) {
            int r = dl__fold_rank(v, rem), partner = dl__fold_rank(v ^ d, rem);
            int g = v & ~(d - 1); /* the aligned group of d active ranks v has gathered */
            size_t first = (size_t)LO(g), blocks = (size_t)(LO(g + d) - LO(g));
            bool from_in = rem == 0 && d == 1;
            DL_TRY(dl_sched_msg(s, r, from_in ? IN_AT(0) : BLOCK(first), partner, BLOCK(first),
                                blocks * count, blocks == 1 ? (int)first : -1));
            if (from_in)
                DL_TRY(dl_sched_copy(s, r, IN_AT(0), BLOCK(r), count, r));
        }
    }

    if (rem > 0) {
        DL_TRY(dl_sched_step(s, "unfold"));
        for (int i = 0; i < rem; i++)
            DL_TRY(dl_sched_msg(s, 2 * i + 1, OUT_AT(0), 2 * i, OUT_AT(0), (size_t)n * count, -1));
    }
#undef BLOCK
#undef LO
    return DL_OK;
}

const dl_algo_t dl__algo_rd = {
    .name = "rd",
    .title = "recursive doubling",
    .summary = "Partners r XOR 2^k swap everything they have: log2(n) steps, the whole vector "
               "each step. Best for small vectors.",
    .build =
        {
            [DL_COLL_ALL_REDUCE] = rd_all_reduce,
            [DL_COLL_ALL_GATHER] = rd_all_gather,
        },
};
