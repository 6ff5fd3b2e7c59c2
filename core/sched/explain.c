/* Reading a schedule: the alpha-beta cost (dl_sched_stats) and the text
 * `distlab explain` prints (dl_sched_explain). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/sched.h"
#include "distlab/stepdesc.h"
#include "distlab/symsim.h"
#include "internal.h"

#define DEFAULT_ALPHA_US 1.0
#define DEFAULT_BETA_US  1e-4 /* 0.1 ns per byte: 10 GB/s */

/* ======================================================================
 * The alpha-beta model
 * ====================================================================== */

/* The two terms of the cost: the steps that pay alpha and the bytes that
 * pay beta. A step costs alpha (the latency of a message) plus beta times
 * the bytes of its busiest link, because all ranks send at once and the
 * step ends when the slowest one is done. A link is full duplex: a rank
 * sends and receives at once, so its load in a step is the larger of what
 * it sends and what it receives. Counting receives matters for a fan-in:
 * n-1 senders of B bytes each finish only when the root has taken in
 * (n-1) B. A step with no message at all (only local copies or scaling)
 * talks to nobody, so it pays no alpha. */
typedef struct {
    dl_sched_stats_t st;
    size_t alpha_steps;
    size_t beta_bytes;
} terms_t;

/* Per-rank loads: what each rank sends and receives, over the schedule and
 * in the current step, and the busiest link of the step so far. */
typedef struct {
    size_t n;
    size_t *total, *total_in, *in_step, *in_step_recv;
    size_t busiest, total_bytes;
} loads_t;

/* bytes from rank `from` to rank `to` (out of range: nobody receives). */
static void carry(loads_t *l, int from, int to, size_t bytes)
{
    if (from < 0 || (size_t)from >= l->n)
        return;
    l->in_step[from] += bytes;
    l->total[from] += bytes;
    l->total_bytes += bytes;
    if (l->in_step[from] > l->busiest)
        l->busiest = l->in_step[from];
    if (to < 0 || (size_t)to >= l->n)
        return;
    l->in_step_recv[to] += bytes;
    l->total_in[to] += bytes;
    if (l->in_step_recv[to] > l->busiest)
        l->busiest = l->in_step_recv[to];
}

static void count_terms(const dl_sched_t *s, size_t elem_size, terms_t *t)
{
    size_t n = (size_t)s->args.nranks;
    loads_t l = {.n = n,
                 .total = calloc(n, sizeof(size_t)),
                 .total_in = calloc(n, sizeof(size_t)),
                 .in_step = calloc(n, sizeof(size_t)),
                 .in_step_recv = calloc(n, sizeof(size_t))};
    if (l.total == NULL || l.total_in == NULL || l.in_step == NULL || l.in_step_recv == NULL)
        goto out_free;

    t->st.n_steps = s->n_steps;
    for (size_t k = 0; k < s->n_steps; k++) {
        const dl_step_t *step = &s->steps[k];
        size_t msgs = 0;
        l.busiest = 0;
        memset(l.in_step, 0, n * sizeof(size_t));
        memset(l.in_step_recv, 0, n * sizeof(size_t));
        for (size_t i = step->first; i < step->first + step->n; i++) {
            const dl_action_t *a = &s->actions[i];
            if (a->kind != DL_ACT_MSG || a->src_rank < 0 || (size_t)a->src_rank >= n)
                continue;
            size_t bytes = a->count * elem_size;
            msgs++;
            carry(&l, a->src_rank, a->dst_rank, bytes);
            /* A write-back carries the bytes again, the other way. */
            if (a->back)
                carry(&l, a->dst_rank, a->src_rank, bytes);
        }
        t->st.n_messages += msgs;
        t->alpha_steps += msgs > 0;
        t->beta_bytes += l.busiest;
    }
    t->st.total_bytes = l.total_bytes;
    for (size_t r = 0; r < n; r++)
        if (l.total[r] > t->st.max_bytes_sent)
            t->st.max_bytes_sent = l.total[r];
    for (size_t r = 0; r < n; r++)
        if (l.total_in[r] > t->st.max_bytes_recv)
            t->st.max_bytes_recv = l.total_in[r];

out_free:
    free(l.in_step_recv);
    free(l.in_step);
    free(l.total_in);
    free(l.total);
}

void dl_sched_stats(const dl_sched_t *s, size_t elem_size, double alpha_us, double beta_us_per_byte,
                    dl_sched_stats_t *st_p)
{
    terms_t t = {{0}, 0, 0};
    count_terms(s, elem_size, &t);
    /* Negative (or NaN) parameters ask for the defaults. */
    t.st.alpha_us = alpha_us >= 0 ? alpha_us : DEFAULT_ALPHA_US;
    t.st.beta_us_per_byte = beta_us_per_byte >= 0 ? beta_us_per_byte : DEFAULT_BETA_US;
    t.st.cost_us =
        (double)t.alpha_steps * t.st.alpha_us + (double)t.beta_bytes * t.st.beta_us_per_byte;
    *st_p = t.st;
}

/* ======================================================================
 * Explain
 * ====================================================================== */

static const char *human_time(double us, char *buf, size_t cap)
{
    if (us < 1000)
        snprintf(buf, cap, "%.2f us", us);
    else if (us < 1e6)
        snprintf(buf, cap, "%.2f ms", us / 1e3);
    else
        snprintf(buf, cap, "%.2f s", us / 1e6);
    return buf;
}

static const char *algo_title(const char *name)
{
    const dl_algo_t *a = dl_algo_find(name);
    return a != NULL ? a->title : name;
}

static void explain_header(const dl_sched_t *s, size_t elem_size, const char *dtype, FILE *out)
{
    const dl_coll_args_t *a = &s->args;
    char b1[32];
    const dl_algo_t *algo = s->algo != NULL ? dl_algo_find(s->algo) : NULL;

    fprintf(out, "%s with %s: np %d", dl_coll_name(a->coll),
            s->algo != NULL ? algo_title(s->algo) : "a hand-made schedule", a->nranks);
    if (a->coll == DL_COLL_ALL_TO_ALL && a->splits != NULL) {
        size_t most = 0;
        for (int r = 0; r < a->nranks; r++) {
            size_t in = dl_sched_buf_count(s, r, DL_BUF_IN);
            if (in > most)
                most = in;
        }
        fprintf(out, ", uneven splits of %s, up to %zu elements (%s) per rank", dtype, most,
                dl_bytes_format(most * elem_size, b1, sizeof(b1)));
    } else if (a->coll != DL_COLL_BARRIER) {
        fprintf(out, ", count %zu %s (%s)", a->count, dtype,
                dl_bytes_format(a->count * elem_size, b1, sizeof(b1)));
    }
    if (dl_coll_has_op(a->coll))
        fprintf(out, ", op %s", dl_op_name(a->op));
    if (dl_coll_has_root(a->coll))
        fprintf(out, ", root %d", a->root);
    fprintf(out, "\n");
    if (algo != NULL && algo->summary != NULL)
        fprintf(out, "%s\n", algo->summary);
}

static int digits(int v)
{
    int d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* One message or local action, as every front end writes it. */
static void explain_msg(const dl_msg_desc_t *m, const dl_msg_widths_t *w, FILE *out)
{
    char line[256];
    size_t len = dl_msg_format(m, w, line, sizeof(line));
    if (len < sizeof(line)) {
        fprintf(out, "  %s\n", line);
        return;
    }
    char *big = malloc(len + 1);
    if (big != NULL) {
        dl_msg_format(m, w, big, len + 1);
        fprintf(out, "  %s\n", big);
    }
    free(big);
}

/* Longer buffers show their first and last elements only, as torch prints a
 * long tensor. */
#define SYMBOLIC_EDGE 3
#define SYMBOLIC_FULL 12

static void symbolic_buf(const dl_symsim_t *sim, int r, dl_buf_t b, size_t n, int rank_width,
                         FILE *out)
{
    char rank[16], el[256];
    snprintf(rank, sizeof(rank), "r%d", r);
    fprintf(out, "  %-*s  %-3s [", rank_width, rank, dl_buf_name(b));
    for (size_t i = 0; i < n; i++) {
        if (n > SYMBOLIC_FULL && i == SYMBOLIC_EDGE) {
            fputs(", ...", out);
            i = n - SYMBOLIC_EDGE - 1;
            continue;
        }
        dl_symsim_format(sim, r, b, i, el, sizeof(el));
        fprintf(out, "%s%s", i > 0 ? ", " : "", el);
    }
    fputs("]\n", out);
}

/* What every rank's buffers hold now: the result it builds (OUT, or IN
 * on a rank whose OUT is empty), and scratch space while it holds data. */
static void symbolic_state(const dl_sched_t *s, const dl_symsim_t *sim, int rank_width, FILE *out)
{
    for (int r = 0; r < s->args.nranks; r++) {
        size_t n_out = dl_sched_buf_count(s, r, DL_BUF_OUT);
        dl_buf_t shown = n_out > 0 ? DL_BUF_OUT : DL_BUF_IN;
        symbolic_buf(sim, r, shown, dl_sched_buf_count(s, r, shown), rank_width, out);
        size_t n_tmp = dl_sched_buf_count(s, r, DL_BUF_TMP);
        bool written = false;
        for (size_t i = 0; i < n_tmp && !written; i++)
            written = dl_symsim_origin(sim, r, DL_BUF_TMP, i) >= 0;
        if (written)
            symbolic_buf(sim, r, DL_BUF_TMP, n_tmp, rank_width, out);
    }
}

static void explain(const dl_sched_t *s, size_t elem_size, const char *dtype_name, dl_symsim_t *sim,
                    FILE *out)
{
    char b1[32], b2[32];
    const char *dtype = dtype_name != NULL ? dtype_name : "elements";

    explain_header(s, elem_size, dtype, out);

    /* Every step described, and column widths over the whole schedule, so
     * that every step lines up. */
    int rank_width = 1 + digits(s->args.nranks > 1 ? s->args.nranks - 1 : 0);
    dl_msg_widths_t w = {.rank = rank_width};
    dl_step_desc_t *descs = calloc(s->n_steps ? s->n_steps : 1, sizeof(*descs));
    if (descs == NULL) {
        fprintf(out, "(out of memory)\n");
        return;
    }
    for (size_t k = 0; k < s->n_steps; k++)
        if (dl_step_describe(s, k, elem_size, NULL, &descs[k]) == DL_OK)
            dl_step_desc_widths(&descs[k], &w);

    if (sim != NULL) {
        fprintf(out, "\nbefore step 1 (rank q's input element i is written as letter q, i: "
                     "a0 is rank 0's element 0)\n");
        symbolic_state(s, sim, rank_width, out);
    }
    /* Each step as it runs: first the messages, then the local actions. */
    for (size_t k = 0; k < s->n_steps; k++) {
        const dl_step_t *st = &s->steps[k];
        fprintf(out, "\nstep %zu/%zu  %s\n", k + 1, s->n_steps, st->phase ? st->phase : "");
        for (size_t i = 0; i < descs[k].n_msgs; i++)
            explain_msg(&descs[k].msgs[i], &w, out);
        if (sim != NULL) {
            char why[256];
            if (dl_symsim_step(sim, why, sizeof(why)) != DL_OK) {
                fprintf(out, "  the schedule is wrong here: %s\n", why);
                sim = NULL;
                continue;
            }
            fprintf(out, "  after it:\n");
            symbolic_state(s, sim, rank_width, out);
        }
    }
    for (size_t k = 0; k < s->n_steps; k++)
        dl_step_desc_free(&descs[k]);
    free(descs);

    terms_t t = {{0}, 0, 0};
    count_terms(s, elem_size, &t);
    dl_sched_stats_t st;
    dl_sched_stats(s, elem_size, -1, -1, &st);

    char b3[32];
    fprintf(out,
            "\nsteps %zu, messages %zu, most sent by one rank %s, most received by one rank %s, "
            "total sent %s\n",
            st.n_steps, st.n_messages, dl_bytes_format(st.max_bytes_sent, b1, sizeof(b1)),
            dl_bytes_format(st.max_bytes_recv, b3, sizeof(b3)),
            dl_bytes_format(st.total_bytes, b2, sizeof(b2)));
    fprintf(out, "cost: %zu x alpha + %s x beta = %s (alpha %g us, beta %g ns/B)\n", t.alpha_steps,
            dl_bytes_format(t.beta_bytes, b1, sizeof(b1)), human_time(st.cost_us, b2, sizeof(b2)),
            st.alpha_us, st.beta_us_per_byte * 1e3);
}

void dl_sched_explain(const dl_sched_t *s, size_t elem_size, const char *dtype_name, FILE *out)
{
    explain(s, elem_size, dtype_name, NULL, out);
}

dl_status_t dl_sched_explain_symbolic(const dl_sched_t *s, size_t elem_size, const char *dtype_name,
                                      FILE *out)
{
    dl_symsim_t *sim = NULL;
    dl_status_t st = dl_symsim_new(s, &sim);
    if (st != DL_OK)
        return st;
    explain(s, elem_size, dtype_name, sim, out);
    dl_symsim_free(sim);
    return DL_OK;
}

/* ======================================================================
 * How algorithms scale
 * ====================================================================== */

dl_status_t dl_sched_explain_scaling(const dl_coll_args_t *base, const char *const *algos,
                                     size_t n_algos, const int *nps, size_t n_nps, size_t elem_size,
                                     const char *dtype_name, FILE *out)
{
    return dl_sched_explain_scaling_on(base, algos, n_algos, nps, n_nps, elem_size, dtype_name,
                                       false, out);
}

dl_status_t dl_sched_explain_scaling_on(const dl_coll_args_t *base, const char *const *algos,
                                        size_t n_algos, const int *nps, size_t n_nps,
                                        size_t elem_size, const char *dtype_name, bool network,
                                        FILE *out)
{
    char b1[32], b2[32], b3[32], b4[32];
    if (base == NULL || nps == NULL || n_nps == 0 || elem_size == 0)
        return DL_ERR_INVALID;
    for (size_t j = 0; j < n_nps; j++)
        if (nps[j] < 1)
            return DL_ERR_INVALID;

    fprintf(out, "%s of %zu %s (%s) per rank", dl_coll_name(base->coll), base->count,
            dtype_name != NULL ? dtype_name : "elements",
            dl_bytes_format(base->count * elem_size, b1, sizeof(b1)));
    if (dl_coll_has_op(base->coll))
        fprintf(out, ", op %s", dl_op_name(base->op));
    fprintf(out, "\n%-14s %4s %6s %9s %11s %14s %11s %10s\n", "algorithm", "np", "steps",
            "messages", "most sent", "most received", "total sent", "cost");
    /* No algorithm named: the default, which may change with the size. */
    size_t rows = n_algos > 0 ? n_algos : 1;
    for (size_t i = 0; i < rows; i++) {
        const char *algo = n_algos > 0 ? algos[i] : NULL;
        for (size_t j = 0; j < n_nps; j++) {
            dl_coll_args_t args = *base;
            args.nranks = nps[j];
            if (args.root >= args.nranks)
                args.root = 0;
            dl_sched_t *s = NULL;
            dl_status_t st = dl_sched_build_on(algo, &args, elem_size, network, &s);
            if (st != DL_OK) {
                fprintf(out, "%-14s %4d  cannot build: %s\n", algo != NULL ? algo : "default",
                        nps[j], dl_strerror(st));
                continue;
            }
            dl_sched_stats_t t;
            dl_sched_stats(s, elem_size, -1, -1, &t);
            fprintf(out, "%-14s %4d %6zu %9zu %11s %14s %11s %10s\n",
                    s->algo != NULL ? s->algo : "default", nps[j], t.n_steps, t.n_messages,
                    dl_bytes_format(t.max_bytes_sent, b1, sizeof(b1)),
                    dl_bytes_format(t.max_bytes_recv, b2, sizeof(b2)),
                    dl_bytes_format(t.total_bytes, b3, sizeof(b3)),
                    human_time(t.cost_us, b4, sizeof(b4)));
            dl_sched_free(s);
        }
    }
    fprintf(out,
            "most sent, most received: by the busiest rank over the whole collective\n"
            "cost: alpha %g us per step, plus beta %g ns/B on each step's busiest link\n",
            DEFAULT_ALPHA_US, DEFAULT_BETA_US * 1e3);
    return DL_OK;
}
