/* Interrupting a process's waits from a signal handler (see comm.h). The
 * handler only sets a flag; the wait loop (wait.c) takes it and aborts the
 * work in flight on the whole world. A lock-free atomic is the one kind of
 * shared object a signal handler may write (C11 7.14.1.1), and exchange
 * keeps a second signal that lands while the flag is taken from being lost. */
#include <stdatomic.h>

#include "comm/internal.h"

static atomic_int interrupt_pending; /* 0, DL__INTERRUPT or DL__CANCEL */

void dl_comm_interrupt_from_signal(void)
{
    atomic_store(&interrupt_pending, DL__INTERRUPT);
}

void dl_comm_cancel_from_signal(void)
{
    int none = 0; /* an interrupt already pending covers a cancel */
    atomic_compare_exchange_strong(&interrupt_pending, &none, DL__CANCEL);
}

void dl_comm_interrupt_clear(void)
{
    atomic_store(&interrupt_pending, 0);
}

int dl__comm_interrupt_take_kind(void)
{
    /* Every pass of a wait asks: a plain load first, as the locked
     * exchange costs more than the pass itself. */
    if (atomic_load_explicit(&interrupt_pending, memory_order_relaxed) == 0)
        return 0;
    return atomic_exchange(&interrupt_pending, 0);
}

bool dl__comm_interrupt_take(void)
{
    return dl__comm_interrupt_take_kind() != 0;
}

bool dl__comm_interrupt_pending(void)
{
    return atomic_load_explicit(&interrupt_pending, memory_order_relaxed) != 0;
}
