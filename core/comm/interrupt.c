/* Interrupting a process's waits from a signal handler (see comm.h). The
 * handler only sets a flag; the wait loop (wait.c) takes it and aborts the
 * work in flight on the whole world. A lock-free atomic is the one kind of
 * shared object a signal handler may write (C11 7.14.1.1), and exchange
 * keeps a second signal that lands while the flag is taken from being lost. */
#include <stdatomic.h>

#include "comm/internal.h"

static atomic_int interrupt_pending;

void dl_comm_interrupt_from_signal(void)
{
    atomic_store(&interrupt_pending, 1);
}

void dl_comm_interrupt_clear(void)
{
    atomic_store(&interrupt_pending, 0);
}

bool dl__comm_interrupt_take(void)
{
    /* Every pass of a wait asks: a plain load first, as the locked
     * exchange costs more than the pass itself. */
    if (atomic_load_explicit(&interrupt_pending, memory_order_relaxed) == 0)
        return false;
    return atomic_exchange(&interrupt_pending, 0) != 0;
}

bool dl__comm_interrupt_pending(void)
{
    return atomic_load_explicit(&interrupt_pending, memory_order_relaxed) != 0;
}
