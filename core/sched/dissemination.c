/* Dissemination barrier (Hensgen, Finkel and Manber).
 *
 * In round k every rank r signals rank (r + 2^k) mod n with an empty
 * message. After round k, rank r has heard, directly or through the
 * signals that reached its senders earlier, from the 2^(k+1) - 1 ranks
 * before it; after ceil(log2 n) rounds, from all of them, so nobody leaves
 * the barrier before everyone has entered it.
 *
 *   n = 5:   round 1: r -> r+1    round 2: r -> r+2    round 3: r -> r+4
 *
 * Unlike a tree barrier there is no root and no second (release) phase:
 * every rank sends one signal per round.
 *   steps: ceil(log2 n).  bytes: none.  cost: ceil(log2 n) alpha.
 */
#include "distlab/sched.h"
#include "internal.h"

static dl_status_t dissemination_barrier(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks;

    for (int d = 1; d < n; d *= 2) {
        DL_TRY(dl_sched_step(s, "signal"));
        for (int r = 0; r < n; r++)
            DL_TRY(dl_sched_msg(s, r, IN_AT(0), (r + d) % n, IN_AT(0), 0, -1));
    }
    return DL_OK;
}

const dl_algo_t dl__algo_dissemination = {
    .name = "dissemination",
    .title = "dissemination",
    .summary = "In round k every rank signals the rank 2^k ahead: ceil(log2 n) rounds, no root.",
    .build = {[DL_COLL_BARRIER] = dissemination_barrier},
};
