/* Pairwise exchange all-to-all.
 *
 * Every rank has a chunk for every other rank. In step k (1 <= k < n) rank r
 * sends its chunk for (r + k) mod n and receives the chunk that
 * (r - k) mod n has for it, so each step is a perfect matching shift: every
 * rank sends one message and receives one, and no link carries two.
 *
 *   n = 4        r0      r1      r2      r3
 *     step 1    ->r1    ->r2    ->r3    ->r0
 *     step 2    ->r2    ->r3    ->r0    ->r1
 *     step 3    ->r3    ->r0    ->r1    ->r2
 *
 * The chunk a rank keeps for itself is a local copy, done in step 1.
 * Uneven splits work the same way: the message i -> j reads rank i's IN
 * from sum_{k<j} S[i][k] and lands in rank j's OUT at sum_{k<i} S[k][j];
 * empty chunks send nothing.
 *   steps: n-1.  bytes per rank: (n-1)/n * B (B = one rank's IN).
 *   cost: (n-1) alpha + (n-1)/n B beta.
 */
#include "distlab/sched.h"
#include "internal.h"

static dl_status_t pairwise_all_to_all(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;

#define IN_FOR(i, j)   IN_AT(dl__a2a_in_off(s, (i), (j)))
#define OUT_FROM(i, j) OUT_AT(dl__a2a_out_off(s, (i), (j)))

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "copy"));
        return dl_sched_copy(s, 0, IN_FOR(0, 0), OUT_FROM(0, 0), dl__a2a_len(s, 0, 0), 0);
    }

    for (int k = 1; k < n; k++) {
        DL_TRY(dl_sched_step(s, "exchange"));
        for (int r = 0; r < n; r++) {
            int to = (r + k) % n;
            DL_TRY(
                dl_sched_msg(s, r, IN_FOR(r, to), to, OUT_FROM(r, to), dl__a2a_len(s, r, to), to));
            if (k == 1)
                DL_TRY(dl_sched_copy(s, r, IN_FOR(r, r), OUT_FROM(r, r), dl__a2a_len(s, r, r), r));
        }
    }
#undef IN_FOR
#undef OUT_FROM
    return DL_OK;
}

const dl_algo_t dl__algo_pairwise = {
    .name = "pairwise",
    .title = "pairwise exchange",
    .summary = "In step k every rank sends its chunk for rank r+k: n-1 steps, one message per "
               "rank each.",
    .build = {[DL_COLL_ALL_TO_ALL] = pairwise_all_to_all},
};
