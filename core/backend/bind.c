/* See bind.h. */
#include "backend/bind.h"

#include <sched.h>

int dl__bind_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 0;
    return CPU_COUNT(&set);
}

int dl__bind_place(int index, int ranks, int cpus)
{
    if (cpus <= 0 || ranks <= cpus)
        return index;
    /* In blocks: with 4 ranks on 2 CPUs, 0 and 1 on the first, 2 and 3 on
     * the second. A tree's pairs at each step then lie across the blocks,
     * and its receivers of one step copy on both CPUs at once (round robin
     * put a broadcast's second-step receivers, 1 and 3, on one CPU). */
    return (int)((long)index * cpus / ranks);
}

bool dl__bind_core(dl_bind_t *b, int index)
{
    b->bound = false;
    if (sched_getaffinity(0, sizeof(b->before), &b->before) != 0)
        return false;
    int n = CPU_COUNT(&b->before);
    if (n <= 1 || index < 0)
        return false; /* nothing to choose, or no place to choose from */
    int want = index % n;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &b->before) || want-- > 0)
            continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        b->bound = sched_setaffinity(0, sizeof(one), &one) == 0;
        break;
    }
    return b->bound;
}

void dl__bind_undo(dl_bind_t *b)
{
    if (b->bound)
        sched_setaffinity(0, sizeof(b->before), &b->before);
    b->bound = false;
}
