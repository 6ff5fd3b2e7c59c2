/* Chain: rank to rank along a line, root, root+1, ..., root+n-1 (mod n).
 *
 * BROADCAST flows down the line, pipelined. Sending a whole vector hop by
 * hop would take n-1 full message times. Cutting it into P pieces lets the
 * hops overlap: while rank 1 forwards piece 0, the root already sends
 * piece 1.
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
 * In step t, v sends piece t - v to v+1 (when that is a piece).
 *   P = min(count, 8) pieces.
 *   steps: n-1 + P-1.  bytes per rank: B (B = the vector's bytes), sent
 *   once by every rank but the last.
 *   cost: (n+P-2) (alpha + B/P beta): for long vectors close to B beta,
 *   independent of n, but a latency linear in n.
 *
 * REDUCE flows up the line, from the far end to the root, the whole vector
 * at a time, and every rank adds IN PLACE into its own tensor:
 *
 *   reduce, n = 4, root 0, ranks holding a, b, c, d:
 *
 *     step 1   r3 -> r2   r2 = c + d
 *     step 2   r2 -> r1   r1 = b + c + d
 *     step 3   r1 -> r0   r0 = a + b + c + d
 *
 *   with torch's example tensors ([1, 2], [3, 4], [5, 6], [7, 8]) the ranks
 *   end with [16, 20], [15, 18], [12, 14] and [7, 8]: the root holds the
 *   sum, and every other rank the partial sum of the ranks behind it on the
 *   line, as torch prints them for this example (4 ranks, dst 0) with the
 *   gloo backend. Only the root's result is defined (torch says so too); the
 *   tree leaves the other ranks' tensors as they were. For avg only the
 *   root divides; the partials stay sums.
 *
 * In step k (1-based), v = n-k (v = rank - root mod n) sends its IN to
 * v-1, which reduces it into its own IN. For another root the line is
 * rotated: root+n-1 -> ... -> root+1 -> root (mod n).
 *   steps: n-1.  bytes per link: B (count * element size), each link used
 *   once; every rank but the root sends B, every rank but the last
 *   receives B.
 *   cost: (n-1) (alpha + B beta): no overlap, so slower than the tree's
 *   ceil(log2 n) (alpha + B beta), but the partial sums are the ones
 *   learners see in torch's output.
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

    if (c.n == 1) {
        DL_TRY(dl_sched_step(s, "average"));
        return dl__scale_if_avg(s, c.root, IN_AT(0), c.count);
    }
    for (int v = c.n - 1; v >= 1; v--) {
        DL_TRY(dl_sched_step(s, "chain"));
        /* v's IN holds the sum of v .. n-1; v-1 adds it to its own. */
        DL_TRY(dl_sched_msg_reduce(s, rank_of(&c, v), IN_AT(0), rank_of(&c, v - 1), IN_AT(0),
                                   IN_AT(0), c.count, -1));
    }
    /* The root received in the last step and sends nothing: finish there. */
    return dl__scale_if_avg(s, c.root, IN_AT(0), c.count);
}

const dl_algo_t dl__algo_chain = {
    .name = "chain",
    .title = "chain",
    .summary = "Rank to rank along a line from the root: broadcast pipelined in up to 8 "
               "pieces, reduce in place, one rank after the other.",
    .build =
        {
            [DL_COLL_BROADCAST] = chain_broadcast,
            [DL_COLL_REDUCE] = chain_reduce,
        },
};
