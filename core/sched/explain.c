/* Reading a schedule: the alpha-beta cost (dl_sched_stats) and the text
 * `distlab explain` prints (dl_sched_explain). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/sched.h"
#include "distlab/symsim.h"
#include "internal.h"

#define DEFAULT_ALPHA_US 1.0
#define DEFAULT_BETA_US  1e-4 /* 0.1 ns per byte: 10 GB/s */

/* ======================================================================
 * The alpha-beta model
 * ====================================================================== */

/* The two terms of the cost: the steps that pay alpha and the bytes that
 * pay beta. A step costs alpha (the latency of a message) plus beta times
 * the bytes its busiest sender sends, because all ranks send at once and
 * the step ends when the slowest one is done. A step with no message at
 * all (only local copies or scaling) talks to nobody, so it pays no alpha. */
typedef struct {
    dl_sched_stats_t st;
    size_t alpha_steps;
    size_t beta_bytes;
} terms_t;

static void count_terms(const dl_sched_t *s, size_t elem_size, terms_t *t)
{
    size_t n = (size_t)s->args.nranks;
    size_t *total = calloc(n, sizeof(*total));
    size_t *in_step = calloc(n, sizeof(*in_step));
    if (total == NULL || in_step == NULL)
        goto out_free;

    t->st.n_steps = s->n_steps;
    for (size_t k = 0; k < s->n_steps; k++) {
        const dl_step_t *step = &s->steps[k];
        size_t msgs = 0, busiest = 0;
        memset(in_step, 0, n * sizeof(*in_step));
        for (size_t i = step->first; i < step->first + step->n; i++) {
            const dl_action_t *a = &s->actions[i];
            if (a->kind != DL_ACT_MSG || a->src_rank < 0 || (size_t)a->src_rank >= n)
                continue;
            size_t bytes = a->count * elem_size;
            msgs++;
            in_step[a->src_rank] += bytes;
            total[a->src_rank] += bytes;
            t->st.total_bytes += bytes;
            if (in_step[a->src_rank] > busiest)
                busiest = in_step[a->src_rank];
        }
        t->st.n_messages += msgs;
        t->alpha_steps += msgs > 0;
        t->beta_bytes += busiest;
    }
    for (size_t r = 0; r < n; r++)
        if (total[r] > t->st.max_bytes_sent)
            t->st.max_bytes_sent = total[r];

out_free:
    free(in_step);
    free(total);
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

static const char *const buf_names[] = {"in", "out", "tmp"};

/* 48 B, 4 KiB, 1.5 MiB: exact values without decimals. */
static const char *human_bytes(size_t b, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024;
        u++;
    }
    if (u == 0 || v == (double)(size_t)v)
        snprintf(buf, cap, "%.0f %s", v, units[u]);
    else
        snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

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

static const char *region(dl_ref_t r, size_t count, char *buf, size_t cap)
{
    const char *name = (unsigned)r.buf < DL_BUF__COUNT ? buf_names[r.buf] : "?";
    snprintf(buf, cap, "%s[%zu:%zu]", name, r.off, r.off + count);
    return buf;
}

/* What a message carries: its chunk label, or else the region it reads. */
static const char *msg_what(const dl_action_t *a, char *buf, size_t cap)
{
    if (a->count == 0)
        snprintf(buf, cap, "signal");
    else if (a->chunk >= 0)
        snprintf(buf, cap, "chunk %d", a->chunk);
    else
        region(a->src, a->count, buf, cap);
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
                human_bytes(most * elem_size, b1, sizeof(b1)));
    } else if (a->coll != DL_COLL_BARRIER) {
        fprintf(out, ", count %zu %s (%s)", a->count, dtype,
                human_bytes(a->count * elem_size, b1, sizeof(b1)));
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

static bool same_ref(dl_ref_t a, dl_ref_t b)
{
    return a.buf == b.buf && a.off == b.off;
}

/* Where a message goes, when that is not simply "the same place on the
 * receiver": "in[0:2] -> out[4:6]", or for a reduce into a third buffer
 * "tmp[0:8] -> in[0:8] (with tmp[0:8])", i.e. in = tmp + the message. The
 * source is left out when the label column already shows it. */
static const char *msg_where(const dl_action_t *a, char *buf, size_t cap)
{
    char src[48], dst[48], acc[48];
    bool reduce3 = a->combine == DL_COMBINE_REDUCE && !same_ref(a->acc, a->dst);
    buf[0] = '\0';
    if (same_ref(a->src, a->dst) && !reduce3)
        return buf;
    region(a->src, a->count, src, sizeof(src));
    region(a->dst, a->count, dst, sizeof(dst));
    region(a->acc, a->count, acc, sizeof(acc));
    snprintf(buf, cap, "%s%s-> %s%s%s%s", a->chunk >= 0 ? src : "", a->chunk >= 0 ? " " : "", dst,
             reduce3 ? " (with " : "", reduce3 ? acc : "", reduce3 ? ")" : "");
    return buf;
}

typedef struct {
    int rank, what, combine, bytes;
} widths_t;

static void explain_action(const dl_sched_t *s, const dl_action_t *a, size_t elem_size,
                           const widths_t *w, FILE *out)
{
    char src[16], dst[16], what[64], where[160], b1[48], b2[48], b3[48];
    snprintf(src, sizeof(src), "r%d", a->src_rank);
    snprintf(dst, sizeof(dst), "r%d", a->dst_rank);

    switch (a->kind) {
    case DL_ACT_MSG:
        if (a->count == 0) {
            fprintf(out, "  %-*s -> %-*s  signal\n", w->rank, src, w->rank, dst);
            break;
        }
        msg_where(a, where, sizeof(where));
        fprintf(out, "  %-*s -> %-*s  %-*s  %-*s  %*s%s%s\n", w->rank, src, w->rank, dst, w->what,
                msg_what(a, what, sizeof(what)), w->combine,
                a->combine == DL_COMBINE_REDUCE ? "reduce" : "copy", w->bytes,
                human_bytes(a->count * elem_size, b1, sizeof(b1)), where[0] ? "  " : "", where);
        break;
    case DL_ACT_COPY:
        fprintf(out, "  %-*s  copy %s -> %s\n", w->rank, src,
                region(a->src, a->count, b1, sizeof(b1)), region(a->dst, a->count, b2, sizeof(b2)));
        break;
    case DL_ACT_REDUCE:
        fprintf(out, "  %-*s  reduce %s, %s -> %s\n", w->rank, src,
                region(a->acc, a->count, b1, sizeof(b1)), region(a->src, a->count, b2, sizeof(b2)),
                region(a->dst, a->count, b3, sizeof(b3)));
        break;
    case DL_ACT_SCALE:
        fprintf(out, "  %-*s  scale %s / %d\n", w->rank, src,
                region(a->dst, a->count, b1, sizeof(b1)), s->args.nranks);
        break;
    }
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
    fprintf(out, "  %-*s  %-3s [", rank_width, rank, buf_names[b]);
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
    char what[64], b1[32], b2[32];
    const char *dtype = dtype_name != NULL ? dtype_name : "elements";

    explain_header(s, elem_size, dtype, out);

    /* Column widths over the whole schedule, so that every step lines up. */
    widths_t w = {1 + digits(s->args.nranks > 1 ? s->args.nranks - 1 : 0), 0, 4, 0};
    for (size_t i = 0; i < s->n_actions; i++) {
        const dl_action_t *a = &s->actions[i];
        if (a->kind != DL_ACT_MSG)
            continue;
        int len = (int)strlen(msg_what(a, what, sizeof(what)));
        w.what = len > w.what ? len : w.what;
        len = (int)strlen(human_bytes(a->count * elem_size, b1, sizeof(b1)));
        w.bytes = len > w.bytes ? len : w.bytes;
        if (a->combine == DL_COMBINE_REDUCE)
            w.combine = 6; /* "reduce" */
    }

    if (sim != NULL) {
        fprintf(out, "\nbefore step 1 (rank q's input element i is written as letter q, i: "
                     "a0 is rank 0's element 0)\n");
        symbolic_state(s, sim, w.rank, out);
    }
    /* Each step as it runs: first the messages, then the local actions. */
    for (size_t k = 0; k < s->n_steps; k++) {
        const dl_step_t *st = &s->steps[k];
        fprintf(out, "\nstep %zu/%zu  %s\n", k + 1, s->n_steps, st->phase ? st->phase : "");
        for (int local = 0; local < 2; local++)
            for (size_t i = st->first; i < st->first + st->n; i++)
                if ((s->actions[i].kind != DL_ACT_MSG) == local)
                    explain_action(s, &s->actions[i], elem_size, &w, out);
        if (sim != NULL) {
            char why[256];
            if (dl_symsim_step(sim, why, sizeof(why)) != DL_OK) {
                fprintf(out, "  the schedule is wrong here: %s\n", why);
                sim = NULL;
                continue;
            }
            fprintf(out, "  after it:\n");
            symbolic_state(s, sim, w.rank, out);
        }
    }

    terms_t t = {{0}, 0, 0};
    count_terms(s, elem_size, &t);
    dl_sched_stats_t st;
    dl_sched_stats(s, elem_size, -1, -1, &st);

    fprintf(out, "\nsteps %zu, messages %zu, most sent by one rank %s, total sent %s\n", st.n_steps,
            st.n_messages, human_bytes(st.max_bytes_sent, b1, sizeof(b1)),
            human_bytes(st.total_bytes, b2, sizeof(b2)));
    fprintf(out, "cost: %zu x alpha + %s x beta = %s (alpha %g us, beta %g ns/B)\n", t.alpha_steps,
            human_bytes(t.beta_bytes, b1, sizeof(b1)), human_time(st.cost_us, b2, sizeof(b2)),
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
