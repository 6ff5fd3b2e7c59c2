/* Direct: everything goes through one rank, the parameter-server pattern.
 *
 *            r1   r2   r3                r1   r2   r3
 *              \   |   /                   ^    ^    ^
 *     fan-in    v  v  v        fan-out      \   |   /
 *                root                         root
 *
 * The root is the call's root for broadcast, scatter, gather and reduce, and
 * rank 0 for the others. Every rank talks only to the root, in at most two
 * steps: a fan-in where the root collects (and reduces) what it needs, and
 * a fan-out where it hands results back. It is the simplest correct
 * algorithm and the baseline the others are measured against: few steps,
 * but the root's link carries everything.
 *
 *   broadcast, scatter         fan-out only      1 step
 *   gather, reduce             fan-in only       1 step
 *   all_gather, all_reduce,    fan-in, fan-out   2 steps
 *   reduce_scatter, all_to_all,
 *   barrier (empty messages)
 *
 *   bytes through the root, per step: (n-1) * B, where B is what one rank
 *   contributes (the whole vector for a reduce, a block for a gather; for
 *   all_to_all and reduce_scatter every rank's whole IN).
 *   cost: 1 or 2 alpha + (n-1) B beta per step, so the cost grows linearly
 *   with n where the ring's stays flat.
 *
 * The root reduces the incoming vectors one after the other, in rank order.
 * For reduce_scatter the root's IN must stay unchanged, so it sums into TMP;
 * for all_to_all it parks every other rank's IN in TMP before sorting the
 * chunks out to their destinations.
 */
#include <stdlib.h>

#include "distlab/sched.h"
#include "internal.h"

static dl_status_t direct_broadcast(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;

    DL_TRY(dl_sched_step(s, "fan-out"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg(s, root, IN_AT(0), r, IN_AT(0), args->count, -1));
    return DL_OK;
}

static dl_status_t direct_scatter(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;
    size_t count = args->count;

    DL_TRY(dl_sched_step(s, "fan-out"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg(s, root, IN_AT((size_t)r * count), r, OUT_AT(0), count, r));
    return dl_sched_copy(s, root, IN_AT((size_t)root * count), OUT_AT(0), count, root);
}

static dl_status_t direct_gather(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;
    size_t count = args->count;

    DL_TRY(dl_sched_step(s, "fan-in"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg(s, r, IN_AT(0), root, OUT_AT((size_t)r * count), count, r));
    return dl_sched_copy(s, root, IN_AT(0), OUT_AT((size_t)root * count), count, root);
}

static dl_status_t direct_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;

    DL_TRY(dl_sched_step(s, "fan-in"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg_reduce(s, r, IN_AT(0), root, IN_AT(0), IN_AT(0), args->count, -1));
    return dl__scale_if_avg(s, root, IN_AT(0), args->count);
}

static dl_status_t direct_all_gather(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;
    size_t count = args->count;

    DL_TRY(direct_gather(args, s));
    DL_TRY(dl_sched_step(s, "fan-out"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg(s, root, OUT_AT(0), r, OUT_AT(0), (size_t)n * count, -1));
    return DL_OK;
}

static dl_status_t direct_all_reduce(const dl_coll_args_t *args, dl_sched_t *s)
{
    DL_TRY(direct_reduce(args, s));
    return direct_broadcast(args, s);
}

static dl_status_t direct_reduce_scatter(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;
    size_t count = args->count, all = (size_t)n * count;

    if (n == 1) {
        DL_TRY(dl_sched_step(s, "copy"));
        DL_TRY(dl_sched_copy(s, 0, IN_AT(0), OUT_AT(0), count, 0));
        return dl__scale_if_avg(s, 0, OUT_AT(0), count);
    }
    s->tmp_count = all;

    /* The root's sum starts as TMP = IN + the first vector, then TMP += next. */
    DL_TRY(dl_sched_step(s, "fan-in"));
    bool first = true;
    for (int r = 0; r < n; r++) {
        if (r == root)
            continue;
        dl_ref_t acc = first ? IN_AT(0) : TMP_AT(0);
        DL_TRY(dl_sched_msg_reduce(s, r, IN_AT(0), root, acc, TMP_AT(0), all, -1));
        first = false;
    }
    DL_TRY(dl__scale_if_avg(s, root, TMP_AT(0), all));

    DL_TRY(dl_sched_step(s, "fan-out"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg(s, root, TMP_AT((size_t)r * count), r, OUT_AT(0), count, r));
    return dl_sched_copy(s, root, TMP_AT((size_t)root * count), OUT_AT(0), count, root);
}

/* The all_to_all given where each other rank's IN starts in the root's TMP. */
static dl_status_t direct_all_to_all_steps(dl_sched_t *s, const size_t *row)
{
    int n = s->args.nranks, root = s->args.root;

    /* Chunk i -> j as the root holds it: in its own IN, or in i's row. */
#define AT_ROOT(i, j)                                                                              \
    ((i) == root ? IN_AT(dl__a2a_in_off(s, root, (j)))                                             \
                 : TMP_AT(row[(i)] + dl__a2a_in_off(s, (i), (j))))
#define OUT_FROM(i, j) OUT_AT(dl__a2a_out_off(s, (i), (j)))
#define LEN(i, j)      dl__a2a_len(s, (i), (j))

    DL_TRY(dl_sched_step(s, "fan-in"));
    for (int i = 0; i < n; i++)
        if (i != root)
            DL_TRY(dl_sched_msg(s, i, IN_AT(0), root, TMP_AT(row[i]),
                                dl_sched_buf_count(s, i, DL_BUF_IN), -1));

    DL_TRY(dl_sched_step(s, "fan-out"));
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < n; i++) {
            if (j == root)
                DL_TRY(dl_sched_copy(s, root, AT_ROOT(i, j), OUT_FROM(i, j), LEN(i, j), i));
            else
                DL_TRY(dl_sched_msg(s, root, AT_ROOT(i, j), j, OUT_FROM(i, j), LEN(i, j), i));
        }
    }
#undef AT_ROOT
#undef OUT_FROM
#undef LEN
    return DL_OK;
}

static dl_status_t direct_all_to_all(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;

    /* TMP on the root holds the IN of every other rank, one after the other. */
    size_t *row = calloc((size_t)n, sizeof(*row));
    if (row == NULL)
        return DL_ERR_NOMEM;
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        if (i == root)
            continue;
        row[i] = used;
        used += dl_sched_buf_count(s, i, DL_BUF_IN);
    }
    s->tmp_count = used;

    dl_status_t st = direct_all_to_all_steps(s, row);
    free(row);
    return st;
}

static dl_status_t direct_barrier(const dl_coll_args_t *args, dl_sched_t *s)
{
    int n = args->nranks, root = args->root;

    DL_TRY(dl_sched_step(s, "fan-in"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg(s, r, IN_AT(0), root, IN_AT(0), 0, -1));
    DL_TRY(dl_sched_step(s, "fan-out"));
    for (int r = 0; r < n; r++)
        if (r != root)
            DL_TRY(dl_sched_msg(s, root, IN_AT(0), r, IN_AT(0), 0, -1));
    return DL_OK;
}

const dl_algo_t dl__algo_direct = {
    .name = "direct",
    .title = "direct (through the root)",
    .summary = "Everyone sends to the root, which reduces or collects and sends back: the "
               "parameter-server pattern.",
    .build =
        {
            [DL_COLL_BROADCAST] = direct_broadcast,
            [DL_COLL_SCATTER] = direct_scatter,
            [DL_COLL_GATHER] = direct_gather,
            [DL_COLL_REDUCE] = direct_reduce,
            [DL_COLL_ALL_GATHER] = direct_all_gather,
            [DL_COLL_ALL_REDUCE] = direct_all_reduce,
            [DL_COLL_REDUCE_SCATTER] = direct_reduce_scatter,
            [DL_COLL_ALL_TO_ALL] = direct_all_to_all,
            [DL_COLL_BARRIER] = direct_barrier,
        },
};
