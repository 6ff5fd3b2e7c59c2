/* Share: every rank sums its own share of the vector straight out of every
 * peer's buffer and writes the sum back into all of them, in one step.
 *
 *     r0 [a0 a1]   r1 [b0 b1]        r0 owns element 0, r1 element 1:
 *        a0 <- b0 (reduce)              r0: a0 = a0 + b0, written back into b0
 *        b1 <- a1 (reduce)              r1: b1 = b1 + a1, written back into a1
 *
 * It is the ring's reduce-scatter and all-gather in one pass, and the
 * pattern of the shared-memory floor (tests/bench/shm_floor.c): each rank
 * reads every byte of its share once from each buffer and writes the sum
 * once into each buffer, while the result is still in its cache, where the
 * ring reads what a neighbour wrote a step earlier. It needs shared memory
 * between every pair of ranks (its messages are written back, sched.h), so
 * a schedule built for a network has none.
 *
 *   share of rank r: chunk r + 1 (mod n) of the vector as torch's gloo
 *   backend cuts it (dl__gloo_chunk), about 1/n of it
 *   order of the sum: the owner's own part first, then rank r - 1's, r -
 *   2's and so on (mod n), which is gloo's order for that chunk, x(c-1) op
 *   x(c-2) op ... op x(c): a float sum prints as torch prints it. Every
 *   rank ends with the owner's bits
 *   steps: 1; messages: n(n-1), each written back: each rank sends 2(n-1)/n
 *   of B (its parts to their owners, its own share back to them), as the
 *   ring does
 *   cost: alpha + 2(n-1)/n B beta, where the ring pays 2(n-1) alphas
 */
#include "distlab/sched.h"
#include "internal.h"

static dl_status_t share_all_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    if (s->network)
        return DL_ERR_UNSUPPORTED;
    int n = args->nranks;
    size_t count = args->count;

    DL_TRY(dl_sched_step(s, "reduce and write back"));
    for (int r = 0; r < n; r++) {
        size_t off, len;
        int c = (r + 1) % n; /* the chunk, as gloo numbers it, that r sums */
        dl__gloo_chunk(count, s->elem_size, n, c, &off, &len);
        for (int k = 1; k < n; k++) {
            int p = (r - k + n) % n;
            DL_TRY(dl_sched_msg_reduce_back(s, p, IN_AT(off), r, IN_AT(off), IN_AT(off), len, c));
        }
        /* Before the write-back (step 3 of a step), so every rank gets the mean. */
        DL_TRY(dl__scale_if_avg(s, r, IN_AT(off), len));
    }
    return DL_OK;
}

const dl_algo_t dl__algo_share = {
    .name = "share",
    .title = "share (reduce and write back)",
    .summary = "each rank sums its 1/n straight from every peer's buffer and writes it back "
               "into all of them, one step (shared memory only)",
    .build = {[DL_COLL_ALL_REDUCE] = share_all_reduce},
    .shm_only = true,
};
