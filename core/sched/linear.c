/* Linear all-to-all: every chunk in one step.
 *
 * Rank r sends its chunk for every other rank and receives every other
 * rank's chunk for it, all in one step, as Open MPI's linear all-to-all
 * posts every receive and send before it waits:
 *
 *   n = 4        r0          r1          r2          r3
 *     step 1    ->r1 r2 r3  ->r2 r3 r0  ->r3 r0 r1  ->r0 r1 r2
 *
 * Each rank sends to r+1 first, r+2 next, and so on, and receives from r-1
 * first, so that the message it waits for first is the one its neighbour
 * sent first. The chunk a rank keeps for itself is a local copy. Uneven
 * splits read and land as in pairwise.c.
 *   steps: 1.  bytes per rank: (n-1)/n * B (B = one rank's IN).
 *   cost: alpha + (n-1)/n B beta, with n-1 messages in flight per rank.
 * One wait per call instead of pairwise's n-1: where a wait costs more than
 * a message (small chunks, or more ranks than cores) it is the faster one.
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

const dl_algo_t dl__algo_linear = {
    .name = "linear",
    .title = "linear exchange",
    .summary = "Every rank sends its chunk for every other rank in one step: one wait, n-1 "
               "messages per rank.",
    .build = {[DL_COLL_ALL_TO_ALL] = linear_all_to_all},
};
