/* Step boards: one writer (the rank's thread, dl__step_board_note), any
 * number of readers (a heartbeat thread), no lock. */
#include "exec/board.h"

void dl__step_board_write(dl_step_board_t *b, int coll, int step, int n_steps, const char *phase)
{
    uint32_t seq = atomic_load_explicit(&b->seq, memory_order_relaxed);
    atomic_store_explicit(&b->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* the odd count before the fields */
    atomic_store_explicit(&b->coll, coll, memory_order_relaxed);
    atomic_store_explicit(&b->step, step, memory_order_relaxed);
    atomic_store_explicit(&b->n_steps, n_steps, memory_order_relaxed);
    atomic_store_explicit(&b->phase, phase, memory_order_relaxed);
    atomic_store_explicit(&b->seq, seq + 2, memory_order_release);
    b->last_coll = coll;
    b->last_step = step;
    b->last_n_steps = n_steps;
    b->last_phase = phase;
}

bool dl_step_board_read(const dl_step_board_t *b, dl_step_pos_t *pos)
{
    for (int tries = 0; tries < 8; tries++) {
        uint32_t seq = atomic_load_explicit(&b->seq, memory_order_acquire);
        if (seq & 1u)
            continue;
        pos->coll = atomic_load_explicit(&b->coll, memory_order_relaxed);
        pos->step = atomic_load_explicit(&b->step, memory_order_relaxed);
        pos->n_steps = atomic_load_explicit(&b->n_steps, memory_order_relaxed);
        pos->phase = atomic_load_explicit(&b->phase, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire); /* the fields before the second look */
        if (atomic_load_explicit(&b->seq, memory_order_relaxed) != seq)
            continue;
        pos->begun = atomic_load_explicit(&b->begun, memory_order_relaxed);
        return true;
    }
    return false;
}
