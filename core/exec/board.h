/* The writer's side of a step board (dl_step_board_t, distlab/comm.h):
 * where a rank's collectives are, kept for a watching thread at the cost of
 * a few loads and stores a step, where a step hook would cost a call. */
#ifndef DL_EXEC_BOARD_H
#define DL_EXEC_BOARD_H

#include <stdatomic.h>

#include "distlab/comm.h"

/* Writes a new position under the board's sequence count. */
void dl__step_board_write(dl_step_board_t *b, int coll, int step, int n_steps, const char *phase);

/* Counts a step begun (step from 1) and writes its position where it is
 * not the one written last: a loop of small collectives of one step writes
 * the count alone. */
static inline void dl__step_board_note(dl_step_board_t *b, int coll, int step, int n_steps,
                                       const char *phase)
{
    atomic_store_explicit(&b->begun, atomic_load_explicit(&b->begun, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (b->last_coll != coll || b->last_step != step || b->last_n_steps != n_steps ||
        b->last_phase != phase)
        dl__step_board_write(b, coll, step, n_steps, phase);
}

#endif
