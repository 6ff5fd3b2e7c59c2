/* The algorithm registry and dl_sched_build, the one entry point that turns
 * (algorithm, collective call) into a schedule. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/log.h"
#include "distlab/sched.h"
#include "internal.h"

/* In the order `distlab algos` lists them: the bandwidth and latency
 * classics first, the simple teaching baselines after. */
static const dl_algo_t *const algos[] = {
    &dl__algo_ring,
    &dl__algo_rd,
    &dl__algo_rhd,
    &dl__algo_tree,
    &dl__algo_chain,
    &dl__algo_direct,
    &dl__algo_pairwise,
    &dl__algo_linear,
    &dl__algo_dissemination,
    &dl__algo_share,
    NULL,
};

const dl_algo_t *const *dl_algos(void)
{
    return algos;
}

const dl_algo_t *dl_algo_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (const dl_algo_t *const *a = algos; *a != NULL; a++)
        if (strcmp((*a)->name, name) == 0)
            return *a;
    return NULL;
}

const char *dl_algo_names_for(dl_coll_t c, char *buf, size_t cap)
{
    static char fallback[256];
    if (buf == NULL || cap == 0) {
        buf = fallback;
        cap = sizeof(fallback);
    }
    size_t len = 0;
    buf[0] = '\0';
    for (const dl_algo_t *const *a = algos; *a != NULL; a++) {
        if ((unsigned)c >= DL_COLL__COUNT || (*a)->build[c] == NULL)
            continue;
        int w = snprintf(buf + len, cap - len, "%s%s", len > 0 ? ", " : "", (*a)->name);
        if (w < 0 || (size_t)w >= cap - len) {
            buf[len] = '\0'; /* a list of whole names, never half of one */
            break;
        }
        len += (size_t)w;
    }
    return buf;
}

/* Below 32 KiB an all-reduce is latency bound: recursive doubling's log2(n)
 * steps beat the ring's 2(n-1). Above, the ring's bandwidth-optimal
 * 2(n-1)/n of the data per rank wins. */
#define ALL_REDUCE_RD_MAX_BYTES (32 * 1024)

/* A reduce of up to 4 KiB per rank, the size of the examples a person reads
 * element by element, runs as the chain: its other ranks end with partial
 * sums, as torch's reduce example leaves them with gloo (core/sched/chain.c).
 * Above, the tree's ceil(log2 n) steps beat the chain's n-1. */
#define REDUCE_CHAIN_MAX_BYTES 4096

/* Past the examples' sizes (those of the reduce's chain) and up to 64 KiB,
 * a broadcast over 3 or 4 ranks goes from the root to every rank in one
 * step: the root's n-1 messages cost less than the tree's two rounds, where
 * a middle rank must receive before it can pass on (with more ranks than
 * cores, a wait that gives the core away). Measured against the tree with
 * tests/bench/colls_vs_mpi.py (docs/benchmarks.md); a reduce gains nothing
 * from the same change, its root then reducing n-1 messages alone. */
#define BCAST_DIRECT_MAX_BYTES (64 * 1024)
#define BCAST_DIRECT_MAX_RANKS 4

static bool bcast_direct(int nranks, size_t bytes)
{
    return nranks >= 3 && nranks <= BCAST_DIRECT_MAX_RANKS && bytes > REDUCE_CHAIN_MAX_BYTES &&
           bytes <= BCAST_DIRECT_MAX_BYTES;
}

/* Past the examples' sizes a gather or scatter goes direct: every rank
 * sends its block to the root, or receives it from the root, in one step,
 * as MPI's gather and scatter do for large messages. The tree's inner
 * ranks receive their subtree's blocks and pass them on (the data crosses
 * memory twice), and their rounds wait on one another; the root moves the
 * same (n-1) blocks either way. Measured with tests/bench/colls_vs_mpi.py
 * and `distlab bench --algo` at 3, 4 and 8 ranks (docs/benchmarks.md). */
#define GATHER_DIRECT_MIN_BYTES REDUCE_CHAIN_MAX_BYTES

/* Up to 8 KiB in all (the whole output of an all_gather, the whole input of
 * a reduce_scatter), over a power of two of at least 4 ranks (in effect from
 * 16: up to 8 ranks linear, below, goes first), recursive doubling
 * (all_gather) and halving (reduce_scatter) take log2(n) steps where the
 * ring takes n-1: at these sizes a step costs its latency, not
 * its bytes. Open MPI picks the same below its own thresholds. Measured
 * against the ring at np=4 (docs/benchmarks.md): 64 B and 1 KiB 20 to 35%
 * faster, 8 KiB even. */
#define RD_GATHER_MAX_BYTES (8 * 1024)

static bool rd_gather(int nranks, size_t total)
{
    return nranks >= 4 && (nranks & (nranks - 1)) == 0 && total <= RD_GATHER_MAX_BYTES;
}

/* Up to 64 KiB of input per rank, an all_to_all sends every chunk in one
 * step (linear.c) and waits once, where pairwise waits n-1 times; Open MPI
 * too posts them all below its threshold. Above, over a network or past 8
 * ranks (shared memory over 3 to 8 goes linear at any size: see
 * dl_algo_default_on), pairwise's one message per rank and step keeps the
 * links from contending. Measured against pairwise at np 3, 4 and 8
 * (docs/benchmarks.md): 12 B to 64 KiB at np=3 2.5 against 5.4 us and up,
 * at np=4 5 against 8.3. */
#define A2A_LINEAR_MAX_BYTES (64 * 1024)

/* Over 3 to 8 ranks, small vectors go linear (linear.c): every rank sends
 * to every other rank in one step and waits once, where rd and rhd wait
 * log2(n) times (plus a fold and an unfold off a power of two), the ring
 * n-1 times and dissemination ceil(log2 n) times. An all_reduce up to the
 * eager size (its one step), an all_gather or reduce_scatter up to 8 KiB
 * in all, any barrier. Measured against the others at np 3 and 4 on the
 * development machine (docs/benchmarks.md): all_reduce 8 B to 512 B at np=3
 * 3.2 against 4.8 us, at np=4 3.8 against 5.9; all_gather and
 * reduce_scatter 25 to 40% faster; barrier at np=3 2.5 against 4.3. Past 8
 * ranks a rank's n-1 messages outweigh the waits they save. At 2 ranks
 * every algorithm is one exchange, and rd's is in place. */
#define LINEAR_MIN_RANKS        3
#define LINEAR_MAX_RANKS        8
#define LINEAR_MAX_BYTES        (8 * 1024)
#define LINEAR_RS_SHM_MAX_BYTES ((size_t)16 << 20) /* see dl_algo_default_on */

static bool linear_fits(int nranks)
{
    return nranks >= LINEAR_MIN_RANKS && nranks <= LINEAR_MAX_RANKS;
}

/* Past the eager size, an all-reduce over shared memory is one step of
 * share (share.c): every rank sums its part straight from its peers'
 * buffers and writes the sum back, where the ring takes 2(n-1) steps and
 * reads what a neighbour wrote the step before. Measured against rd and
 * ring at 2, 3 and 4 ranks (docs/benchmarks.md, "The shared-memory floor"):
 * from 4 KiB share is 2 to 10 times faster; at 1 KiB and below rd's eager
 * exchange is as fast or faster. */
#define ALL_REDUCE_SHARE_MIN_BYTES (DL_SCHED_EAGER_MAX + 1)

static const char *default_any(dl_coll_t c, int nranks, size_t bytes);

const char *dl_algo_default_on(dl_coll_t c, int nranks, size_t bytes, bool network)
{
    if (c == DL_COLL_ALL_REDUCE && !network && nranks > 1 && bytes >= ALL_REDUCE_SHARE_MIN_BYTES)
        return "share";
    /* Over shared memory a receiver copies a message straight from its
     * sender's buffer, so linear moves the ring's bytes (all_gather: every
     * block to every rank; reduce_scatter and all_to_all: every chunk to
     * its rank) in one step instead of n-1: at np 3 and 4, 48 KiB to 12 MiB,
     * 1.1 to 6 times faster than the ring, and as fast or faster up to
     * 256 MiB, but for a reduce_scatter, whose chunks land in scratch before
     * they are summed: from 64 MiB at np=4 the ring, which sums as it
     * receives, was 1.2 to 1.4 times faster (docs/benchmarks.md). */
    if (!network && linear_fits(nranks) &&
        (c == DL_COLL_ALL_GATHER || c == DL_COLL_ALL_TO_ALL ||
         (c == DL_COLL_REDUCE_SCATTER && bytes <= LINEAR_RS_SHM_MAX_BYTES)))
        return "linear";
    return default_any(c, nranks, bytes);
}

const char *dl_algo_default(dl_coll_t c, int nranks, size_t bytes)
{
    return dl_algo_default_on(c, nranks, bytes, false);
}

/* The defaults that hold on any transport. */
static const char *default_any(dl_coll_t c, int nranks, size_t bytes)
{
    switch (c) {
    case DL_COLL_ALL_REDUCE:
        if (linear_fits(nranks) && bytes <= DL_SCHED_EAGER_MAX)
            return "linear";
        return bytes <= ALL_REDUCE_RD_MAX_BYTES ? "rd" : "ring";
    case DL_COLL_ALL_GATHER: { /* bytes: one rank's block */
        size_t n = nranks > 0 ? (size_t)nranks : 1;
        size_t total = bytes <= SIZE_MAX / n ? bytes * n : SIZE_MAX;
        if (linear_fits(nranks) && total <= LINEAR_MAX_BYTES)
            return "linear";
        return rd_gather(nranks, total) ? "rd" : "ring";
    }
    case DL_COLL_REDUCE_SCATTER: /* bytes: the whole input */
        if (linear_fits(nranks) && bytes <= LINEAR_MAX_BYTES)
            return "linear";
        return rd_gather(nranks, bytes) ? "rhd" : "ring";
    case DL_COLL_REDUCE:
        return bytes <= REDUCE_CHAIN_MAX_BYTES ? "chain" : "tree";
    case DL_COLL_BROADCAST:
        return bcast_direct(nranks, bytes) ? "direct" : "tree";
    case DL_COLL_GATHER:
    case DL_COLL_SCATTER:
        return bytes > GATHER_DIRECT_MIN_BYTES ? "direct" : "tree";
    case DL_COLL_ALL_TO_ALL: /* bytes: one rank's whole input (uneven splits: see above) */
        return bytes <= A2A_LINEAR_MAX_BYTES ? "linear" : "pairwise";
    case DL_COLL_BARRIER:
        return linear_fits(nranks) ? "linear" : "dissemination";
    case DL_COLL__COUNT:
        break;
    }
    return NULL;
}

/* ======================================================================
 * dl_sched_build
 * ====================================================================== */

/* Checks a call's arguments, and that every buffer size of coll.h (up to
 * n*n*count for a direct all_to_all's scratch) fits in a size_t. */
static dl_status_t check_args(const dl_coll_args_t *a)
{
    if ((unsigned)a->coll >= DL_COLL__COUNT) {
        dl_log_error("unknown collective %d", (int)a->coll);
        return DL_ERR_INVALID;
    }
    const char *coll = dl_coll_name(a->coll);
    if (a->nranks < 1) {
        dl_log_error("%s needs at least one rank, got %d", coll, a->nranks);
        return DL_ERR_INVALID;
    }
    if (dl_coll_has_root(a->coll) && (a->root < 0 || a->root >= a->nranks)) {
        dl_log_error("%s root %d is not a rank of 0..%d", coll, a->root, a->nranks - 1);
        return DL_ERR_INVALID;
    }
    if (dl_coll_has_op(a->coll) && (unsigned)a->op >= DL_OP__COUNT) {
        dl_log_error("%s with unknown reduce op %d", coll, (int)a->op);
        return DL_ERR_INVALID;
    }
    size_t n = (size_t)a->nranks;
    if (n > SIZE_MAX / n) {
        dl_log_error("%s over %d ranks is too big", coll, a->nranks);
        return DL_ERR_TOO_BIG;
    }
    size_t cells = n * n;
    if (a->coll == DL_COLL_ALL_TO_ALL && a->splits != NULL) {
        size_t total = 0;
        for (size_t i = 0; i < cells; i++) {
            if (a->splits[i] > SIZE_MAX - total) {
                dl_log_error("all_to_all splits add up to more than memory");
                return DL_ERR_TOO_BIG;
            }
            total += a->splits[i];
        }
    } else if (a->coll != DL_COLL_BARRIER && a->count > SIZE_MAX / cells) {
        dl_log_error("%s of %zu elements over %d ranks is too big", coll, a->count, a->nranks);
        return DL_ERR_TOO_BIG;
    }
    return DL_OK;
}

/* Bytes per rank of IN, which decides the default algorithm. */
static size_t in_bytes(const dl_coll_args_t *a, size_t elem_size)
{
    size_t n = (size_t)a->nranks, count = a->count;
    switch (a->coll) {
    case DL_COLL_SCATTER:
    case DL_COLL_REDUCE_SCATTER:
    case DL_COLL_ALL_TO_ALL:
        count *= n;
        break;
    case DL_COLL_BARRIER:
        count = 0;
        break;
    default:
        break;
    }
    return count <= SIZE_MAX / (elem_size ? elem_size : 1) ? count * elem_size : SIZE_MAX;
}

const char *dl_algo_default_for(const dl_coll_args_t *args, size_t elem_size)
{
    return dl_algo_default_for_on(args, elem_size, false);
}

const char *dl_algo_default_for_on(const dl_coll_args_t *args, size_t elem_size, bool network)
{
    /* Uneven splits: a rank knows its own row and column of the matrix
     * only, so a size-based choice could differ between ranks. */
    if (args->coll == DL_COLL_ALL_TO_ALL && args->splits != NULL)
        return "pairwise";
    return dl_algo_default_on(args->coll, args->nranks, in_bytes(args, elem_size), network);
}

dl_status_t dl_sched_build(const char *algo, const dl_coll_args_t *args, size_t elem_size,
                           dl_sched_t **s_p)
{
    return dl_sched_build_on(algo, args, elem_size, false, s_p);
}

dl_status_t dl_sched_build_on(const char *algo, const dl_coll_args_t *args, size_t elem_size,
                              bool network, dl_sched_t **s_p)
{
    dl_status_t st;
    char names[256];

    if (args == NULL || s_p == NULL)
        return DL_ERR_INVALID;
    st = check_args(args);
    if (st != DL_OK)
        return st;

    if (algo == NULL)
        algo = dl_algo_default_for_on(args, elem_size, network);
    const dl_algo_t *a = dl_algo_find(algo);
    if (a == NULL) {
        dl_log_error("unknown algorithm '%s' (%s has: %s)", algo, dl_coll_name(args->coll),
                     dl_algo_names_for(args->coll, names, sizeof(names)));
        return DL_ERR_NOT_FOUND;
    }
    dl_sched_builder_t build = a->build[args->coll];
    if (build == NULL) {
        dl_log_error("algorithm %s does not implement %s (it has: %s)", a->name,
                     dl_coll_name(args->coll), dl_algo_names_for(args->coll, names, sizeof(names)));
        return DL_ERR_UNSUPPORTED;
    }

    dl_sched_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return DL_ERR_NOMEM;
    s->args = *args;
    s->algo = a->name;
    s->elem_size = elem_size;
    s->network = network;
    /* Fields a collective ignores are normalised, so that builders and
     * views can use them without asking which collective this is. */
    if (!dl_coll_has_root(args->coll))
        s->args.root = 0;
    if (!dl_coll_has_op(args->coll))
        s->args.op = DL_OP_SUM;
    s->kernel_op = s->args.op == DL_OP_AVG ? DL_OP_SUM : s->args.op;
    s->args.splits = NULL;
    if (args->coll == DL_COLL_ALL_TO_ALL && args->splits != NULL) {
        size_t cells = (size_t)args->nranks * (size_t)args->nranks;
        s->splits_copy = malloc(cells * sizeof(*s->splits_copy));
        if (s->splits_copy == NULL) {
            st = DL_ERR_NOMEM;
            goto err_free_sched;
        }
        memcpy(s->splits_copy, args->splits, cells * sizeof(*s->splits_copy));
        s->args.splits = s->splits_copy;
    }
    if (args->coll == DL_COLL_BARRIER || s->args.splits != NULL)
        s->args.count = 0;

    st = build(&s->args, s);
    if (st == DL_ERR_UNSUPPORTED && network)
        goto err_free_sched; /* needs shared memory (share.c): the caller says so */
    if (st != DL_OK) {
        dl_log_error("building %s %s failed: %s", a->name, dl_coll_name(args->coll),
                     dl_strerror(st));
        goto err_free_sched;
    }
    dl_sched_compact(s);
    *s_p = s;
    return DL_OK;

err_free_sched:
    dl_sched_free(s);
    return st;
}
