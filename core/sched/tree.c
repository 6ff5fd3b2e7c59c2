/* Binomial tree: the rooted collectives in ceil(log2 n) steps.
 *
 * Ranks are renumbered relative to the root, v = (r - root + n) mod n, so
 * the root is v = 0. The tree: v's parent is v with its lowest set bit
 * cleared; v's children are v + 2^j for every 2^j below v's lowest set bit
 * (every 2^j < n for the root). Its subtree is [v, v + lowbit(v)).
 *
 *   n = 8:              0
 *                  /    |    \
 *                 4     2     1          step 1: 0 -> 4
 *                / \    |                step 2: 0 -> 2, 4 -> 6
 *               6   5   3                step 3: 0 -> 1, 2 -> 3,
 *               |                                4 -> 5, 6 -> 7
 *               7
 *
 * BROADCAST: the root sends to v = n/2, then both send a quarter of the way
 * on, and so on: the ranks that have the data double every step.
 *   steps: ceil(log2 n).  bytes per rank: up to log2(n) * B (the root
 *   sends every step).  cost: ceil(log2 n) (alpha + B beta).
 *
 * REDUCE: the broadcast backwards. In step 1 every odd v sends to v-1, in
 * step 2 every v = 2 mod 4 sends its partial sum to v-2, and so on; the
 * root adds into its IN. A non-root rank's IN must stay unchanged, so an
 * inner node adds its children's sums into TMP and sends TMP on.
 *   steps: ceil(log2 n).  bytes per rank: up to log2(n) * B received by the
 *   root, B sent.  cost: ceil(log2 n) (alpha + B beta).
 *
 * GATHER: the reduce's shape, but an inner node collects its subtree's
 * blocks side by side in TMP (block u - v at offset (u - v) * count) and
 * sends them on together, so messages grow up the tree: 1, 2, 4, ... blocks.
 *   steps: ceil(log2 n).  bytes: the root receives (n-1) * B (B = one
 *   block).  cost: ceil(log2 n) alpha + (n-1) B beta (the last step carries
 *   half of all blocks).
 *
 * SCATTER: gather backwards: the root sends each child its subtree's
 * blocks, inner nodes keep their own block and forward the rest.
 *   steps and cost as gather.
 *
 * The root's buffers are in rank order while subtrees are in v order, so a
 * subtree that wraps past rank n-1 travels to or from the root in two
 * messages.
 */
#include "distlab/sched.h"
#include "internal.h"

typedef struct {
    int n, root;
    size_t count;
} tree_t;

static int rank_of(const tree_t *t, int v)
{
    return (v + t->root) % t->n;
}

/* The size of v's subtree: its lowest set bit, cut at n. */
static int subtree(const tree_t *t, int v)
{
    if (v == 0)
        return t->n;
    int low = v & -v;
    return low < t->n - v ? low : t->n - v;
}

/* The largest subtree of a non-root rank that has children, in blocks: the
 * TMP that gather and scatter need. */
static size_t max_inner_subtree(const tree_t *t)
{
    int most = 0;
    for (int v = 1; v < t->n; v++)
        if (subtree(t, v) > 1 && subtree(t, v) > most)
            most = subtree(t, v);
    return (size_t)most;
}

/* The distance of the root's first child: the largest power of two < n. */
static int top_distance(const tree_t *t)
{
    return t->n > 1 ? dl__pow2_floor(t->n - 1) : 0;
}

static dl_status_t tree_broadcast(const dl_coll_args_t *args, dl_sched_t *s)
{
    tree_t t = {args->nranks, args->root, args->count};

    for (int d = top_distance(&t); d >= 1; d /= 2) {
        DL_TRY(dl_sched_step(s, "fan-out"));
        /* Every v that has the data (a multiple of 2d) sends it d further. */
        for (int v = 0; v + d < t.n; v += 2 * d)
            DL_TRY(dl_sched_msg(s, rank_of(&t, v), IN_AT(0), rank_of(&t, v + d), IN_AT(0), t.count,
                                -1));
    }
    return DL_OK;
}

static dl_status_t tree_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    tree_t t = {args->nranks, args->root, args->count};
    int root = args->root;

    if (t.n == 1) {
        DL_TRY(dl_sched_step(s, "average"));
        return dl__scale_if_avg(s, root, IN_AT(0), t.count);
    }
    /* Inner nodes other than the root exist from n = 3 (v = 2 has child 3). */
    s->tmp_count = t.n > 2 ? t.count : 0;

    for (int d = 1; d < t.n; d *= 2) {
        DL_TRY(dl_sched_step(s, "fan-in"));
        for (int v = d; v < t.n; v += 2 * d) {
            int parent = v - d;
            /* A leaf sends its IN; an inner node the sum it built in TMP. */
            dl_ref_t src = subtree(&t, v) > 1 ? TMP_AT(0) : IN_AT(0);
            /* The root sums in place. Another parent starts its sum with its
             * first child (v = parent + 1, in step 1) as TMP = IN + child. */
            dl_ref_t acc = parent == 0 || d == 1 ? IN_AT(0) : TMP_AT(0);
            dl_ref_t dst = parent == 0 ? IN_AT(0) : TMP_AT(0);
            DL_TRY(dl_sched_msg_reduce(s, rank_of(&t, v), src, rank_of(&t, parent), acc, dst,
                                       t.count, -1));
        }
    }
    /* The root received in the last step and sends nothing: finish there. */
    return dl__scale_if_avg(s, root, IN_AT(0), t.count);
}

/* Moves blocks [v, v + len) of the tree, in v order, between the root's
 * rank-ordered buffer root_buf and a peer: to the root (to_root) or from
 * it. peer_ref is where the blocks start on the peer. The range may wrap
 * past rank n-1, and then takes two messages. */
static dl_status_t root_blocks(dl_sched_t *s, const tree_t *t, bool to_root, dl_buf_t root_buf,
                               int peer, dl_ref_t peer_ref, int v, int len)
{
    int first = rank_of(t, v);
    int head = len < t->n - first ? len : t->n - first;
    int pieces[2][2] = {{first, head}, {0, len - head}}; /* {first rank, blocks} */
    size_t done = 0;
    for (int i = 0; i < 2; i++) {
        size_t blocks = (size_t)pieces[i][1];
        dl_ref_t at_root = BUF_AT(root_buf, (size_t)pieces[i][0] * t->count);
        dl_ref_t at_peer = BUF_AT(peer_ref.buf, peer_ref.off + done);
        int chunk = blocks == 1 ? pieces[i][0] : -1;
        if (to_root)
            DL_TRY(dl_sched_msg(s, peer, at_peer, t->root, at_root, blocks * t->count, chunk));
        else
            DL_TRY(dl_sched_msg(s, t->root, at_root, peer, at_peer, blocks * t->count, chunk));
        done += blocks * t->count;
    }
    return DL_OK;
}

static dl_status_t tree_gather(const dl_coll_args_t *args, dl_sched_t *s)
{
    tree_t t = {args->nranks, args->root, args->count};
    int root = args->root;

    if (t.n == 1) {
        DL_TRY(dl_sched_step(s, "copy"));
        return dl_sched_copy(s, root, IN_AT(0), OUT_AT(0), t.count, root);
    }
    s->tmp_count = max_inner_subtree(&t) * t.count;

    for (int d = 1; d < t.n; d *= 2) {
        DL_TRY(dl_sched_step(s, "fan-in"));
        if (d == 1) {
            /* Everyone with children first puts its own block in place. */
            DL_TRY(dl_sched_copy(s, root, IN_AT(0), OUT_AT((size_t)root * t.count), t.count, root));
            for (int v = 1; v < t.n; v++)
                if (subtree(&t, v) > 1)
                    DL_TRY(dl_sched_copy(s, rank_of(&t, v), IN_AT(0), TMP_AT(0), t.count, -1));
        }
        for (int v = d; v < t.n; v += 2 * d) {
            int parent = v - d, len = subtree(&t, v);
            dl_ref_t src = len > 1 ? TMP_AT(0) : IN_AT(0);
            if (parent == 0) {
                DL_TRY(root_blocks(s, &t, true, DL_BUF_OUT, rank_of(&t, v), src, v, len));
                continue;
            }
            DL_TRY(dl_sched_msg(s, rank_of(&t, v), src, rank_of(&t, parent),
                                TMP_AT((size_t)(v - parent) * t.count), (size_t)len * t.count,
                                len == 1 ? rank_of(&t, v) : -1));
        }
    }
    return DL_OK;
}

static dl_status_t tree_scatter(const dl_coll_args_t *args, dl_sched_t *s)
{
    tree_t t = {args->nranks, args->root, args->count};
    int root = args->root;

    if (t.n == 1) {
        DL_TRY(dl_sched_step(s, "copy"));
        return dl_sched_copy(s, root, IN_AT(0), OUT_AT(0), t.count, root);
    }
    s->tmp_count = max_inner_subtree(&t) * t.count;

    int top = top_distance(&t);
    for (int d = top; d >= 1; d /= 2) {
        DL_TRY(dl_sched_step(s, "fan-out"));
        if (d == top)
            DL_TRY(dl_sched_copy(s, root, IN_AT((size_t)root * t.count), OUT_AT(0), t.count, root));
        for (int v = d; v < t.n; v += 2 * d) {
            int parent = v - d, len = subtree(&t, v), r = rank_of(&t, v);
            /* A leaf receives its block straight into OUT; an inner node its
             * subtree's blocks into TMP, and keeps the first (its own). */
            dl_ref_t dst = len > 1 ? TMP_AT(0) : OUT_AT(0);
            if (parent == 0)
                DL_TRY(root_blocks(s, &t, false, DL_BUF_IN, r, dst, v, len));
            else
                DL_TRY(dl_sched_msg(s, rank_of(&t, parent), TMP_AT((size_t)(v - parent) * t.count),
                                    r, dst, (size_t)len * t.count, len == 1 ? r : -1));
            if (len > 1)
                DL_TRY(dl_sched_copy(s, r, TMP_AT(0), OUT_AT(0), t.count, r));
        }
    }
    return DL_OK;
}

const dl_algo_t dl__algo_tree = {
    .name = "tree",
    .title = "binomial tree",
    .summary = "The ranks that have the data double every step (or halve, going in): "
               "ceil(log2 n) steps.",
    .build =
        {
            [DL_COLL_BROADCAST] = tree_broadcast,
            [DL_COLL_REDUCE] = tree_reduce,
            [DL_COLL_GATHER] = tree_gather,
            [DL_COLL_SCATTER] = tree_scatter,
        },
};
