/* Binding a rank to one core, as mpirun binds its ranks where a host's
 * ranks fit its cores. A rank that sleeps in a wait is woken by a peer, and
 * the kernel tends to run the woken rank on the waker's core: two ranks can
 * then share one core for a whole run while the other idles, each spinning
 * through the other's time slice (docs/benchmarks.md, "what a run's
 * placement does"). Bound, they cannot; and where more ranks than cores
 * split evenly over them, each core keeps the same ranks yielding to each
 * other ("Ranks bound to cores"). The builtin backend decides when. */
#ifndef DL_BACKEND_BIND_H
#define DL_BACKEND_BIND_H

#include <sched.h>
#include <stdbool.h>

typedef struct {
    bool bound;
    cpu_set_t before; /* the calling thread's CPUs before dl__bind_core */
} dl_bind_t;

/* The CPUs the calling thread may run on (its affinity mask), or 0 when
 * that cannot be read. */
int dl__bind_cpus(void);
/* Where the index-th of a host's ranks goes among cpus CPUs: the index-th
 * where the ranks fit the CPUs, else in blocks of consecutive ranks (4 on
 * 2: ranks 0 and 1 on the first, 2 and 3 on the second). */
int dl__bind_place(int index, int ranks, int cpus);
/* Binds the calling thread to the index-th CPU (modulo their count) of
 * those it may run on; false (nothing changed) when it cannot. */
bool dl__bind_core(dl_bind_t *b, int index);
/* Gives the thread back the CPUs it had before dl__bind_core. */
void dl__bind_undo(dl_bind_t *b);

#endif
