/* The collectives and their buffer conventions, shared by schedules,
 * backends and front ends. */
#ifndef DISTLAB_COLL_H
#define DISTLAB_COLL_H

#include <stddef.h>

#include "distlab/op.h"
#include "distlab/status.h"

typedef enum {
    DL_COLL_BROADCAST,
    DL_COLL_SCATTER,
    DL_COLL_GATHER,
    DL_COLL_REDUCE,
    DL_COLL_ALL_GATHER,
    DL_COLL_ALL_REDUCE,
    DL_COLL_REDUCE_SCATTER,
    DL_COLL_ALL_TO_ALL,
    DL_COLL_BARRIER,
    DL_COLL__COUNT
} dl_coll_t;

/* "all_reduce", ... (torch's names). */
const char *dl_coll_name(dl_coll_t c);
dl_status_t dl_coll_parse(const char *name, dl_coll_t *c_p);
/* Whether the collective takes a root (src/dst) and a reduce op. */
int dl_coll_has_root(dl_coll_t c);
int dl_coll_has_op(dl_coll_t c);

/* What one collective call is, for every rank at once.
 *
 * Buffer conventions per rank, in elements of the call's dtype; count is the
 * collective's count argument:
 *   broadcast       IN: count, in place (OUT is IN)
 *   scatter         IN: nranks*count (root only; chunk i goes to rank i), OUT: count
 *   gather          IN: count, OUT: nranks*count (root only; chunk i from rank i)
 *   reduce          IN: count, in place at the root (OUT is IN); as in torch, only the
 *                   root's result is defined: other ranks' IN is left as the algorithm
 *                   leaves it (unchanged by tree and direct, partial sums by chain)
 *   all_gather      IN: count, OUT: nranks*count
 *   all_reduce      IN: count, in place (OUT is IN)
 *   reduce_scatter  IN: nranks*count, OUT: count (chunk r of the reduction)
 *   all_to_all      IN: nranks*count, OUT: nranks*count (chunk j of IN goes to rank j,
 *                   chunk i of OUT comes from rank i); with splits, IN holds
 *                   splits[r*n + j] elements for rank j in order and OUT holds
 *                   splits[i*n + r] elements from rank i in order
 *   barrier         no buffers
 */
typedef struct {
    dl_coll_t coll;
    int nranks;
    int root;     /* broadcast/scatter: src, gather/reduce: dst; else 0 */
    size_t count; /* see above; ignored for barrier and split all_to_all */
    dl_op_t op;   /* reduce op; ignored by collectives without one */
    /* all_to_all with uneven splits: an nranks*nranks matrix, splits[i*n+j] =
     * elements rank i sends to rank j. NULL means equal chunks of count. A
     * rank that knows only its own row and column may leave the rest 0. */
    const size_t *splits;
} dl_coll_args_t;

#endif
