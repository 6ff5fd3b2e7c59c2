/* Chain: a pipeline along root, root+1, ..., root+n-1 (mod n).
 *
 * Sending a whole vector hop by hop would take n-1 full message times.
 * Cutting it into P pieces lets the hops overlap: while rank 1 forwards
 * piece 0, the root already sends piece 1.
 *
 *   broadcast, n = 4, P = 3 (v = rank - root):
 *
 *              v0->v1   v1->v2   v2->v3
 *     step 1     0
 *     step 2     1        0
 *     step 3     2        1        0
 *     step 4              2        1
 *     step 5                       2
 *
 * BROADCAST: in step t, v sends piece t - v to v+1 (when that is a piece).
 * REDUCE: the same pipeline flowing the other way, from v = n-1 down to the
 * root: each rank adds the incoming partial sum of a piece to its own and
 * passes it on. A non-root rank's IN must stay unchanged, so the partial
 * sums of inner ranks live in TMP.
 *
 * P = min(count, 8) pieces.
 *   steps: n-1 + P-1.  bytes per rank: B (B = the vector's bytes), sent
 *   once by every rank but the last.
 *   cost: (n+P-2) (alpha + B/P beta): for long vectors close to B beta,
 *   independent of n, but a latency linear in n.
 */
#include "distlab/sched.h"
#include "internal.h"

#define MAX_PIECES 8

typedef struct {
    int n, root;
    size_t count, pieces;
} chain_t;

static int rank_of(const chain_t *c, int v)
{
    return (v + c->root) % c->n;
}

#define PIECE_OFF(c, i) dl__part_off((c)->count, (c)->pieces, (size_t)(i))
#define PIECE_LEN(c, i) dl__part_len((c)->count, (c)->pieces, (size_t)(i))

static chain_t chain_of(const dl_coll_args_t *args)
{
    size_t p = args->count < MAX_PIECES ? args->count : MAX_PIECES;
    return (chain_t){args->nranks, args->root, args->count, p > 0 ? p : 1};
}

static dl_status_t chain_broadcast(const dl_coll_args_t *args, dl_sched_t *s)
{
    chain_t c = chain_of(args);
    int steps = c.n - 1 + (int)c.pieces - 1;

    for (int t = 0; t < steps && c.n > 1; t++) {
        DL_TRY(dl_sched_step(s, "pipeline"));
        for (int v = 0; v < c.n - 1; v++) {
            int piece = t - v;
            if (piece < 0 || piece >= (int)c.pieces)
                continue;
            DL_TRY(dl_sched_msg(s, rank_of(&c, v), IN_AT(PIECE_OFF(&c, piece)), rank_of(&c, v + 1),
                                IN_AT(PIECE_OFF(&c, piece)), PIECE_LEN(&c, piece), piece));
        }
    }
    return DL_OK;
}

static dl_status_t chain_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    chain_t c = chain_of(args);
    int steps = c.n - 1 + (int)c.pieces - 1;

    if (c.n == 1) {
        DL_TRY(dl_sched_step(s, "average"));
        return dl__scale_if_avg(s, c.root, IN_AT(0), c.count);
    }
    s->tmp_count = c.n > 2 ? c.count : 0;

    for (int t = 0; t < steps; t++) {
        DL_TRY(dl_sched_step(s, "pipeline"));
        for (int v = c.n - 1; v >= 1; v--) {
            int piece = t - (c.n - 1 - v);
            if (piece < 0 || piece >= (int)c.pieces)
                continue;
            size_t off = PIECE_OFF(&c, piece), len = PIECE_LEN(&c, piece);
            /* The last rank starts the sum from its IN; inner ranks forward
             * the partial they built in TMP; the root adds in place. */
            dl_ref_t src = v == c.n - 1 ? IN_AT(off) : TMP_AT(off);
            dl_ref_t dst = v - 1 == 0 ? IN_AT(off) : TMP_AT(off);
            DL_TRY(dl_sched_msg_reduce(s, rank_of(&c, v), src, rank_of(&c, v - 1), IN_AT(off), dst,
                                       len, piece));
            if (v - 1 == 0)
                DL_TRY(dl__scale_if_avg(s, c.root, IN_AT(off), len));
        }
    }
    return DL_OK;
}

const dl_algo_t dl__algo_chain = {
    .name = "chain",
    .title = "pipelined chain",
    .summary = "Rank to rank along a line from the root, the vector cut into up to 8 pieces "
               "that follow each other.",
    .build =
        {
            [DL_COLL_BROADCAST] = chain_broadcast,
            [DL_COLL_REDUCE] = chain_reduce,
        },
};
