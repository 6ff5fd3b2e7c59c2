/* How big a job is: the sizes a bench sweeps, the memory every rank of a
 * job holds, the shared arena that must hold it, and whether the machine
 * has that much. The controller sizes the ranks' arenas from the job and
 * refuses a job that cannot fit before it starts any rank; the bench ranks
 * sweep the same sizes. */
#ifndef LAB_SIZING_H
#define LAB_SIZING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/proto/job.h"

/* The elements a bench row of `bytes` measures (nccl-tests' count column):
 * whole elements of the job's dtype, a multiple of np where the buffer is
 * split over the ranks, and never fewer than the smallest such (one
 * element, or np), so that a size below one element runs as the smallest
 * valid size instead of vanishing from the table. 0 for barrier. */
size_t lab_bench_count(const lab_job_t *job, int np, size_t bytes);
/* The size after `size` in the sweep from -b to -e (-f), or 0 after the
 * last one. The rank skips a size whose count repeats the previous row's. */
double lab_bench_next_size(const lab_job_t *job, double size);
/* How long the sweep is: *rows_p, the rows it measures (the sizes whose
 * counts differ, as the ranks skip a repeated one), and *steps_p, the
 * sizes it steps through before they are rounded to whole elements.
 * Counting stops once either passes its most (most_rows, most_steps), so
 * that a sweep of billions of steps costs no more than its limit. */
void lab_bench_sweep(const lab_job_t *job, size_t most_rows, size_t most_steps, size_t *rows_p,
                     size_t *steps_p);

/* The bytes of tensors and schedule scratch that rank `rank` of the job
 * holds at its peak (for a bench, at its largest size). */
uint64_t lab_job_rank_bytes(const lab_job_t *job, int rank);
/* The same summed over the job's ranks. */
uint64_t lab_job_total_bytes(const lab_job_t *job);
/* The shared arena, in MiB, that each rank of the job needs: the largest
 * rank's peak with a little headroom for alignment. */
size_t lab_job_arena_mb(const lab_job_t *job);
/* The arena ranks get when nothing sizes it (core/backend/builtin.c). It is
 * address space: only the pages a rank touches take memory. */
#define LAB_ARENA_DEFAULT_MB 1024

/* The memory this process may still use, in bytes: MemAvailable, or what
 * is left under the memory limit of its cgroup when that is less. *what_p
 * names where the number came from, for messages. */
uint64_t lab_mem_available(const char **what_p);
/* Whether a job whose ranks all run on this host fits in `avail` bytes (as
 * lab_mem_available gives, named by `what`). If not, writes one line to why
 * that names the need, the limit and how to choose a smaller job. */
bool lab_job_fits_memory(const lab_job_t *job, uint64_t avail, const char *what, char *why,
                         size_t cap);

#endif
