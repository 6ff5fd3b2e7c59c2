/* Ring: every rank talks only to its right neighbour.
 *
 *        +--> r0 --> r1 --> r2 --> r3 --+
 *        |                              |
 *        +------------------------------+
 *
 * ALL-REDUCE (Baidu, Horovod, NCCL's ring) cuts the vector into n chunks and
 * runs two laps of the ring, n-1 steps each. In every step each rank sends
 * one chunk to the right, so all n links are busy at once.
 *
 *   reduce-scatter: in step k (0-based) rank r sends chunk (r-k) mod n to
 *   r+1, which adds it to its own copy of that chunk. A chunk picks up one
 *   more rank's contribution per hop; after n-1 hops rank r holds chunk
 *   (r+1) mod n summed over all ranks.
 *
 *   all-gather: the finished chunks go round once more, copied this time.
 *   In step k rank r sends chunk (r+1-k) mod n.
 *
 *   chunk each rank sends, n = 4 (the picture of the first lap):
 *
 *     reduce-scatter     r0  r1  r2  r3       all-gather      r0  r1  r2  r3
 *       step 1            0   1   2   3         step 4         1   2   3   0
 *       step 2            3   0   1   2         step 5         0   1   2   3
 *       step 3            2   3   0   1         step 6         3   0   1   2
 *
 *     after step 3, r0 holds chunk 1 = a1+b1+c1+d1, r1 chunk 2, r2 chunk 3,
 *     r3 chunk 0; after step 6 everyone holds all four.
 *
 *   steps: 2(n-1).  bytes sent per rank: 2(n-1)/n * B (B = the vector's
 *   bytes), which is optimal: it does not grow with n.
 *   cost: 2(n-1) alpha + 2(n-1)/n B beta.
 *
 * ALL-GATHER is the second lap alone: rank r starts with its own chunk r
 * (sent straight from IN) and in step k sends chunk (r-k) mod n.
 *   steps: n-1.  bytes per rank: (n-1) * B (B = one rank's input).
 *   cost: (n-1) alpha + (n-1) B beta.
 *
 * REDUCE-SCATTER is the first lap alone, shifted by one chunk so that the
 * chunk rank r finishes with is chunk r: in step k rank r sends chunk
 * (r-k-1) mod n. The input must stay unchanged, so a rank never adds into
 * IN: it computes partial = IN[chunk] + received into a scratch slot. Two
 * slots alternate, because a rank may not overwrite the partial it is
 * sending in the same step; they are TMP and OUT, ordered so that the last
 * step lands in OUT.
 *   steps: n-1.  bytes per rank: (n-1)/n * B (B = one rank's input, all n
 *   chunks).  cost: (n-1) alpha + (n-1)/n B beta.
 *
 * avg: the chunk a rank finishes in the reduce-scatter is divided by n there,
 * once, before it travels on.
 *
 * PIPELINED ALL-REDUCE. A large vector runs as S segments (NCCL's slices):
 * every chunk is cut into S pieces, and segment j, made of piece j of every
 * chunk, runs the 2(n-1) steps above starting at step j. So segment j+1
 * reduces while segment j is gathered:
 *
 *     step      0      1      2      3          n = 2, S = 3
 *     seg 0     RS     AG
 *     seg 1            RS     AG
 *     seg 2                   RS     AG
 *
 * Each element sees the same operations in the same order as without
 * segments; only when they happen moves. It pays on shared memory: a piece
 * is copied round the ring shortly after it was summed, while it is still
 * in the cache, instead of a whole chunk later, when a chunk larger than the
 * cache has pushed it back out to memory. Below RING_PIPELINE_MIN bytes
 * the ranks' buffers fit in the cache together and the plain ring is
 * faster (a piece just summed sits in the other core's cache, and a copy
 * from there costs more than one from the shared cache); above, pieces
 * are at least RING_PIECE_MIN bytes per chunk and S at most
 * RING_SEGMENTS_MAX (a step then posts at most that many messages to a
 * neighbour; the shared-memory channel holds 32). Over a network each
 * step costs a round trip, and pipelining measured slower there (16 MiB on
 * 2 ranks over loopback TCP: 13 ms against 8.4 ms): the ring stays plain
 * when the schedule is built for one (dl_sched_build_on).
 *   steps: 2(n-1) + S-1.  bytes per rank: 2(n-1)/n * B, as above.
 */
#include "distlab/sched.h"
#include "internal.h"

/* Where chunk c of the vector starts and how long it is (the first
 * count % n chunks hold one element more), and ring arithmetic mod n. */
#define CHUNK_OFF(c) dl__part_off(count, (size_t)n, (size_t)(c))
#define CHUNK_LEN(c) dl__part_len(count, (size_t)n, (size_t)(c))
#define MOD(x)       ((((x) % n) + n) % n)

#define RING_PIPELINE_MIN ((size_t)16 << 20)
#define RING_PIECE_MIN    ((size_t)256 << 10)
#define RING_SEGMENTS_MAX 16

/* How many segments a vector of count elements runs as. */
static size_t ring_segments(const dl_sched_t *s, size_t count, int n)
{
    size_t bytes = count * s->elem_size;
    if (s->network || bytes < RING_PIPELINE_MIN)
        return 1;
    size_t pieces = bytes / (size_t)n / RING_PIECE_MIN;
    return pieces < 1 ? 1 : pieces < RING_SEGMENTS_MAX ? pieces : RING_SEGMENTS_MAX;
}

/* Piece j of chunk c: where it starts and how long it is. */
#define PIECE_OFF(c, j) (CHUNK_OFF(c) + dl__part_off(CHUNK_LEN(c), nseg, (size_t)(j)))
#define PIECE_LEN(c, j) dl__part_len(CHUNK_LEN(c), nseg, (size_t)(j))

/* The actions of step k (0 <= k < 2(n-1)) of the plain ring, applied to
 * segment j. */
static dl_status_t ring_segment_step(const dl_coll_args_t *args, dl_sched_t *s, size_t nseg,
                                     size_t j, int k)
{
    int n = args->nranks;
    size_t count = args->count;
    if (k < n - 1) {
        /* Lap 1: rank r sends chunk r-k to the right, which adds it to its own. */
        for (int r = 0; r < n; r++) {
            int c = MOD(r - k), right = MOD(r + 1);
            dl_ref_t at = IN_AT(PIECE_OFF(c, j));
            DL_TRY(dl_sched_msg_reduce(s, r, at, right, at, at, PIECE_LEN(c, j), c));
        }
        if (k < n - 2)
            return DL_OK;
        /* Each rank now owns chunk r+1, complete: average it before it is sent. */
        for (int r = 0; r < n; r++) {
            int c = MOD(r + 1);
            DL_TRY(dl__scale_if_avg(s, r, IN_AT(PIECE_OFF(c, j)), PIECE_LEN(c, j)));
        }
        return DL_OK;
    }
    /* Lap 2: rank r sends chunk r+1-k to the right, which keeps a copy. */
    k -= n - 1;
    for (int r = 0; r < n; r++) {
        int c = MOD(r + 1 - k), right = MOD(r + 1);
        dl_ref_t at = IN_AT(PIECE_OFF(c, j));
        DL_TRY(dl_sched_msg(s, r, at, right, at, PIECE_LEN(c, j), c));
    }
    return DL_OK;
}

static dl_status_t ring_all_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;
    size_t count = args->count;

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "average"));
        return dl__scale_if_avg(s, 0, IN_AT(0), count);
    }

    /* Step t runs step t-j of every segment j that has one. */
    int laps = 2 * (n - 1);
    size_t nseg = ring_segments(s, count, n);
    for (size_t t = 0; t < (size_t)laps + nseg - 1; t++) {
        size_t first = t < (size_t)laps ? 0 : t - (size_t)laps + 1;
        size_t last = t < nseg ? t : nseg - 1;
        /* The oldest active segment is the furthest along. */
        bool gathers = t - first >= (size_t)(n - 1), reduces = t - last < (size_t)(n - 1);
        DL_TRY(dl_sched_step(s, !gathers   ? "reduce-scatter"
                                : !reduces ? "all-gather"
                                           : "reduce-scatter + all-gather"));
        /* The newest segment's reduce comes first, the older ones' copies
         * after it: a rank copies the piece its left neighbour summed in the
         * previous step only once that neighbour has summed another since,
         * which has pushed the piece out of the neighbour core's own cache
         * into the shared one, where it is cheaper to read (16 MiB on 2
         * ranks: 0.83 ms a call against 1.13 ms oldest first). */
        for (size_t j = last + 1; j-- > first;)
            DL_TRY(ring_segment_step(args, s, nseg, j, (int)(t - j)));
    }
    return DL_OK;
}

static dl_status_t ring_all_gather(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;
    size_t count = args->count; /* here one rank's chunk */

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "all-gather"));
        return dl_sched_copy(s, 0, IN_AT(0), OUT_AT(0), count, 0);
    }

    for (int k = 0; k < n - 1; k++) {
        DL_TRY(dl_sched_step(s, "all-gather"));
        for (int r = 0; r < n; r++) {
            int c = MOD(r - k), right = MOD(r + 1);
            /* Step 0 sends from IN, because OUT[r] is only filled by the local
             * copy at the end of that same step. */
            dl_ref_t src = k == 0 ? IN_AT(0) : OUT_AT((size_t)c * count);
            DL_TRY(dl_sched_msg(s, r, src, right, OUT_AT((size_t)c * count), count, c));
            if (k == 0)
                DL_TRY(dl_sched_copy(s, r, IN_AT(0), OUT_AT((size_t)r * count), count, r));
        }
    }
    return DL_OK;
}

static dl_status_t ring_reduce_scatter(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;
    size_t count = args->count; /* the chunk each rank ends with */

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "reduce-scatter"));
        DL_TRY(dl_sched_copy(s, 0, IN_AT(0), OUT_AT(0), count, 0));
        return dl__scale_if_avg(s, 0, OUT_AT(0), count);
    }
    s->tmp_count = n > 2 ? count : 0;

    /* The partial received in step k goes to OUT when n-2-k is even, so the
     * last step (k = n-2) writes OUT; the one before writes TMP, and so on. */
#define SLOT(k) (((n - 2 - (k)) % 2 == 0) ? OUT_AT(0) : TMP_AT(0))

    for (int k = 0; k < n - 1; k++) {
        DL_TRY(dl_sched_step(s, "reduce-scatter"));
        for (int r = 0; r < n; r++) {
            int c = MOD(r - k - 1), right = MOD(r + 1);
            /* The first hop sends the rank's own input; later hops forward the
             * partial it received in the previous step. */
            dl_ref_t src = k == 0 ? IN_AT((size_t)c * count) : SLOT(k - 1);
            DL_TRY(
                dl_sched_msg_reduce(s, r, src, right, IN_AT((size_t)c * count), SLOT(k), count, c));
        }
    }
#undef SLOT
    for (int r = 0; r < n; r++)
        DL_TRY(dl__scale_if_avg(s, r, OUT_AT(0), count));
    return DL_OK;
}

const dl_algo_t dl__algo_ring = {
    .name = "ring",
    .title = "ring",
    .summary = "Each rank sends to its right neighbour; chunks travel the ring. Bandwidth-optimal, "
               "n-1 steps per lap.",
    .build =
        {
            [DL_COLL_ALL_REDUCE] = ring_all_reduce,
            [DL_COLL_ALL_GATHER] = ring_all_gather,
            [DL_COLL_REDUCE_SCATTER] = ring_reduce_scatter,
        },
};
