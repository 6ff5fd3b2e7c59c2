/* Private helpers shared by the schedule builders in core/sched/.
 *
 * Every algorithm file (ring.c, rd.c, ...) explains its algorithm in a
 * comment, then builds it with the helpers of sched.h and the small
 * vocabulary below, so that a builder reads like the algorithm's picture. */
#ifndef DISTLAB_SCHED_INTERNAL_H
#define DISTLAB_SCHED_INTERNAL_H

#include <stddef.h>

#include "distlab/sched.h"

/* Propagates a failed helper call (only DL_ERR_NOMEM in practice) out of a
 * builder; dl_sched_build frees the half-built schedule. */
#define DL_TRY(expr)                                                                               \
    do {                                                                                           \
        dl_status_t try_st_ = (expr);                                                              \
        if (try_st_ != DL_OK)                                                                      \
            return try_st_;                                                                        \
    } while (0)

/* Regions, written as they read: IN_AT(4) is "IN from element 4". */
#define IN_AT(off)     ((dl_ref_t){DL_BUF_IN, (off)})
#define OUT_AT(off)    ((dl_ref_t){DL_BUF_OUT, (off)})
#define TMP_AT(off)    ((dl_ref_t){DL_BUF_TMP, (off)})
#define BUF_AT(b, off) ((dl_ref_t){(b), (off)})

/* Notes on the helpers of sched.h, which every builder relies on:
 *   - actions with count 0 are dropped, except the messages of a barrier
 *     (a barrier's messages carry no data and are the whole point), so a
 *     builder can split count into parts without testing for empty ones;
 *   - dl_sched_build drops steps that end up empty (dl_sched_compact). */

/* ---- splitting a vector into parts ---- */

/* Part i of count elements cut into parts nearly equal parts: the first
 * count % parts parts hold one element more than the others. */
static inline size_t dl__part_off(size_t count, size_t parts, size_t i)
{
    size_t extra = count % parts;
    return i * (count / parts) + (i < extra ? i : extra);
}

static inline size_t dl__part_len(size_t count, size_t parts, size_t i)
{
    return count / parts + (i < count % parts ? 1 : 0);
}

/* Chunk c (0 <= c < n) of an all_reduce of count elements of esz bytes as
 * torch's gloo backend reduces it (gloo/allreduce.cc, its ring): the
 * vector is cut into S segments of ceil(count / S) elements, S the least
 * multiple of n that is at least 2n and at least the number of 1 MiB
 * segments it takes; chunk c is segments [cP, cP + P), P = S / n, cut at
 * the vector's end (the last chunks may be short or empty). Its elements
 * travel the ring down from rank c - 1 and end on rank c, so gloo sums
 * them in the order x(c-1) op x(c-2) op ... op x(c), indices mod n. */
static inline void dl__gloo_chunk(size_t count, size_t esz, int n, int c, size_t *off_p,
                                  size_t *len_p)
{
    const size_t seg_max = (size_t)1 << 20;
    size_t nn = (size_t)n;
    size_t segs = esz > 0 ? (count * esz + seg_max - 1) / seg_max : 0;
    if (segs < 2 * nn)
        segs = 2 * nn;
    segs = (segs + nn - 1) / nn * nn;
    size_t chunk = segs / nn * ((count + segs - 1) / segs);
    size_t off = (size_t)c * chunk;
    *off_p = off < count ? off : count;
    *len_p = off < count ? (count - off < chunk ? count - off : chunk) : 0;
}

/* ---- powers of two and the fold for other rank counts ---- */

/* The largest power of two <= n (n >= 1). */
static inline int dl__pow2_floor(int n)
{
    int p = 1;
    while (p <= n / 2)
        p *= 2;
    return p;
}

/* ceil(log2 n) for n >= 1: the rounds a doubling algorithm needs. */
static inline int dl__ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* The fold used by rd and rhd when n is not a power of two. With p the
 * largest power of two <= n and rem = n - p, ranks 2i and 2i+1 (i < rem)
 * pair up: 2i hands its data to 2i+1 and sits out, so p ranks stay active.
 * Active rank v (0 <= v < p) is original rank 2v+1 when v < rem, else
 * v + rem; it stands for the original ranks [lo(v), lo(v+1)), which keeps
 * the original order, so a range of active ranks is a range of blocks. */
static inline int dl__fold_rank(int v, int rem)
{
    return v < rem ? 2 * v + 1 : v + rem;
}

static inline int dl__fold_lo(int v, int rem)
{
    return v < rem ? 2 * v : v + rem;
}

/* Appends SCALE (dst /= nranks) on rank when the call is an avg. */
dl_status_t dl__scale_if_avg(dl_sched_t *s, int rank, dl_ref_t dst, size_t count);
/* Writes a one-line reason into why (NULL or cap 0: nowhere), like snprintf. */
void dl__sched_say(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- all_to_all layout (equal chunks or the split matrix of coll.h) ---- */

/* Elements rank i sends to rank j. */
size_t dl__a2a_len(const dl_sched_t *s, int i, int j);
/* Where they start in rank i's IN: sum over k < j of len(i, k). */
size_t dl__a2a_in_off(const dl_sched_t *s, int i, int j);
/* Where they land in rank j's OUT: sum over k < i of len(k, j). */
size_t dl__a2a_out_off(const dl_sched_t *s, int i, int j);

/* ---- the algorithms, one file each ---- */

extern const dl_algo_t dl__algo_ring;
extern const dl_algo_t dl__algo_rd;
extern const dl_algo_t dl__algo_rhd;
extern const dl_algo_t dl__algo_tree;
extern const dl_algo_t dl__algo_chain;
extern const dl_algo_t dl__algo_direct;
extern const dl_algo_t dl__algo_pairwise;
extern const dl_algo_t dl__algo_linear;
extern const dl_algo_t dl__algo_dissemination;
extern const dl_algo_t dl__algo_share;

#endif
