/* Recursive halving and doubling (Rabenseifner's all-reduce).
 *
 * Recursive doubling (rd.c) sends the whole vector log2(n) times. Halving
 * sends less: in each step partners split the part they are responsible
 * for in two, each keeps one half and sends the other, so the data in
 * flight halves every step.
 *
 * REDUCE-SCATTER by recursive halving: the vector is cut into n blocks.
 * In step 1 rank r pairs with r XOR n/2: the lower rank keeps the lower
 * half of the blocks, the upper rank the upper half, and each sends the
 * half it gives up to its partner, which adds it to its own. In step 2 the
 * partner is r XOR n/4 and the half just kept is halved again, and so on,
 * until each rank keeps one block: block r, summed over all ranks.
 *
 *   n = 4, blocks 0 1 2 3:
 *     step 1 (r XOR 2)   r0, r1 keep 0-1 and send 2-3 to r2, r3 (and back)
 *     step 2 (r XOR 1)   r0 keeps 0, sends 1 to r1; r2 keeps 2, sends 3 to r3
 *
 * ALL-REDUCE = that reduce-scatter, then an all-gather by recursive
 * doubling that retraces it: partner r XOR 1 first, each rank sends what
 * it has, so the finished blocks held double each step (1, 2, ... n).
 *   steps: 2 log2(n).  bytes per rank: 2(n-1)/n * B (B = the vector's
 *   bytes), the ring's optimum, in log2 rather than linear steps.
 *   cost: 2 log2(n) alpha + 2(n-1)/n B beta.
 *
 * REDUCE-SCATTER alone: the input must stay unchanged, so the running sums
 * live in TMP (laid out like IN) and the last step writes each rank's own
 * chunk straight into OUT.
 *   steps: log2(n).  bytes per rank: (n-1)/n * B (B = one rank's input).
 *   cost: log2(n) alpha + (n-1)/n B beta.
 *
 * NOT A POWER OF TWO: the fold of rd.c. With p the largest power of two
 * <= n and rem = n - p, rank 2i (i < rem) adds its data into 2i+1 in a
 * "fold" step and sits out; the p active ranks run the algorithm; an
 * "unfold" step hands 2i its result. For the reduce-scatter, active rank v
 * stands for the original ranks [lo(v), lo(v+1)) (lo(v) = 2v for v < rem,
 * v + rem after), so its last block range is exactly the output chunks of
 * the ranks it stands for: its own goes to OUT, its folded partner's is
 * sent over in the unfold.
 *
 * avg: each rank divides its finished block by n where the halving ends.
 */
#include "distlab/sched.h"
#include "internal.h"

static dl_status_t rhd_all_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, p = dl__pow2_floor(n), rem = n - p;
    size_t count = args->count;

    /* Block b of p, and the element range of blocks [b, e). */
#define OFF(b)     dl__part_off(count, (size_t)p, (size_t)(b))
#define SPAN(b, e) (OFF(e) - OFF(b))

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "average"));
        return dl__scale_if_avg(s, 0, IN_AT(0), count);
    }

    if (rem > 0) {
        DL_TRY(dl_sched_step(s, "fold"));
        for (int i = 0; i < rem; i++) {
            /* 2i adds its vector into 2i+1's and sits out until the unfold. */
            int from = 2 * i, into = 2 * i + 1;
            DL_TRY(dl_sched_msg_reduce(s, from, IN_AT(0), into, IN_AT(0), IN_AT(0), count, -1));
        }
    }

    /* Recursive halving. Active rank v is responsible for the aligned group
     * of 2d blocks containing block v; it keeps the half containing v and
     * receives its partner's copy of that half. */
    for (int d = p / 2; d >= 1; d /= 2) {
        DL_TRY(dl_sched_step(s, "reduce-scatter"));
        for (int v = 0; v < p; v++) {
            int r = dl__fold_rank(v, rem), partner = dl__fold_rank(v ^ d, rem);
            int keep = v & ~(d - 1); /* the half [keep, keep + d) */
            DL_TRY(dl_sched_msg_reduce(s, partner, IN_AT(OFF(keep)), r, IN_AT(OFF(keep)),
                                       IN_AT(OFF(keep)), SPAN(keep, keep + d), d == 1 ? keep : -1));
            if (d == 1)
                DL_TRY(dl__scale_if_avg(s, r, IN_AT(OFF(v)), SPAN(v, v + 1)));
        }
    }

    /* Recursive doubling: the halving backwards, each sends what it owns. */
    for (int d = 1; d < p; d *= 2) {
        DL_TRY(dl_sched_step(s, "all-gather"));
        for (int v = 0; v < p; v++) {
            int r = dl__fold_rank(v, rem), partner = dl__fold_rank(v ^ d, rem);
            int own = v & ~(d - 1); /* the blocks [own, own + d) */
            DL_TRY(dl_sched_msg(s, r, IN_AT(OFF(own)), partner, IN_AT(OFF(own)), SPAN(own, own + d),
                                d == 1 ? own : -1));
        }
    }

    if (rem > 0) {
        DL_TRY(dl_sched_step(s, "unfold"));
        for (int i = 0; i < rem; i++)
            DL_TRY(dl_sched_msg(s, 2 * i + 1, IN_AT(0), 2 * i, IN_AT(0), count, -1));
    }
#undef OFF
#undef SPAN
    return DL_OK;
}

static dl_status_t rhd_reduce_scatter(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, p = dl__pow2_floor(n), rem = n - p;
    size_t count = args->count; /* one rank's output chunk; IN holds n of them */

    /* Original chunk b, and the first chunk active rank v stands for. */
#define CHUNK(b) ((size_t)(b)*count)
#define LO(v)    dl__fold_lo((v), rem)

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "reduce-scatter"));
        DL_TRY(dl_sched_copy(s, 0, IN_AT(0), OUT_AT(0), count, 0));
        return dl__scale_if_avg(s, 0, OUT_AT(0), count);
    }
    /* Only n = 2 (one step, straight into OUT) needs no running sums. */
    s->tmp_count = n > 2 ? (size_t)n * count : 0;

    if (rem > 0) {
        DL_TRY(dl_sched_step(s, "fold"));
        for (int i = 0; i < rem; i++)
            DL_TRY(dl_sched_msg_reduce(s, 2 * i, IN_AT(0), 2 * i + 1, IN_AT(0), TMP_AT(0),
                                       (size_t)n * count, -1));
    }

    for (int d = p / 2; d >= 1; d /= 2) {
        DL_TRY(dl_sched_step(s, "reduce-scatter"));
        for (int v = 0; v < p; v++) {
            int r = dl__fold_rank(v, rem), pv = v ^ d, partner = dl__fold_rank(pv, rem);
            /* Running sums live in TMP, except before a rank's first add:
             * in the first step an unfolded rank still reads its IN. */
            bool first = d == p / 2;
            dl_buf_t mine = first && v >= rem ? DL_BUF_IN : DL_BUF_TMP;
            dl_buf_t theirs = first && pv >= rem ? DL_BUF_IN : DL_BUF_TMP;
            int keep = v & ~(d - 1); /* active ranks [keep, keep + d) */
            size_t b = (size_t)LO(keep), e = (size_t)LO(keep + d);

            if (d > 1) {
                DL_TRY(dl_sched_msg_reduce(s, partner, BUF_AT(theirs, CHUNK(b)), r,
                                           BUF_AT(mine, CHUNK(b)), TMP_AT(CHUNK(b)),
                                           (e - b) * count, -1));
                continue;
            }
            /* The last step, one message per original chunk: the rank's own
             * chunk is summed straight into OUT, a folded partner's into TMP
             * for the unfold. */
            for (size_t c = b; c < e; c++) {
                dl_ref_t dst = (int)c == r ? OUT_AT(0) : TMP_AT(CHUNK(c));
                DL_TRY(dl_sched_msg_reduce(s, partner, BUF_AT(theirs, CHUNK(c)), r,
                                           BUF_AT(mine, CHUNK(c)), dst, count, (int)c));
            }
            DL_TRY(dl__scale_if_avg(s, r, OUT_AT(0), count));
        }
    }

    if (rem > 0) {
        DL_TRY(dl_sched_step(s, "unfold"));
        for (int i = 0; i < rem; i++) {
            DL_TRY(
                dl_sched_msg(s, 2 * i + 1, TMP_AT(CHUNK(2 * i)), 2 * i, OUT_AT(0), count, 2 * i));
            DL_TRY(dl__scale_if_avg(s, 2 * i, OUT_AT(0), count));
        }
    }
#undef CHUNK
#undef LO
    return DL_OK;
}

const dl_algo_t dl__algo_rhd = {
    .name = "rhd",
    .title = "recursive halving and doubling",
    .summary = "Partners split the work in half each step (Rabenseifner): the ring's bytes in "
               "log2(n) steps per phase.",
    .build =
        {
            [DL_COLL_ALL_REDUCE] = rhd_all_reduce,
            [DL_COLL_REDUCE_SCATTER] = rhd_reduce_scatter,
        },
};
