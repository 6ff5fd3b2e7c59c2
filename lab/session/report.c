/* See report.h. */
#include <stdlib.h>
#include <string.h>

#include "distlab/sched.h"
#include "lab/proto/proto.h"
#include "distlab/backends.h"
#include "lab/session/report.h"
#include "lab/proto/sizing.h"

/* ---- run ---- */

/* Prints text after prefix, indenting continuation lines under the first,
 * so that torch's multi-line tensors keep their alignment. */
static void print_indented(FILE *out, const char *prefix, const char *text)
{
    size_t pad = strlen(prefix);
    fputs(prefix, out);
    for (const char *p = text; *p != '\0'; p++) {
        fputc(*p, out);
        if (*p == '\n' && p[1] != '\0')
            fprintf(out, "%*s", (int)pad, "");
    }
    fputc('\n', out);
}

static const char *root_name(const lab_job_t *job)
{
    if (job->prim.kind == LAB_PRIM_COLL)
        return job->prim.coll == DL_COLL_GATHER || job->prim.coll == DL_COLL_REDUCE ? "dst" : "src";
    return job->prim.kind == LAB_PRIM_RECV || job->prim.kind == LAB_PRIM_IRECV ? "dst" : "src";
}

static void print_header(FILE *out, const lab_job_t *job, const lab_session_t *s)
{
    fprintf(out, "%s  np=%d  backend=%s", lab_prim_name(job->prim), job->np, job->backend);
    const char *call =
        job->prim.kind == LAB_PRIM_COLL ? dl_backend_call_name(job->backend, job->prim.coll) : NULL;
    if (call != NULL) {
        fprintf(out, "  call=%s", call);
    } else if (job->prim.kind == LAB_PRIM_COLL) {
        dl_coll_args_t args = {.coll = job->prim.coll, .nranks = job->np, .count = job->count};
        /* The ranks name the algorithm that ran (the default depends on
         * the transport); before they have, the default for shared memory. */
        const char *algo = job->algo[0] ? job->algo
                           : s->ranks[0].algo[0]
                               ? s->ranks[0].algo
                               : dl_algo_default_for(&args, dl_dtype_size(job->dtype));
        long long steps = s->ranks[0].steps;
        fprintf(out, "  algo=%s (%lld step%s)", algo, steps, steps == 1 ? "" : "s");
    }
    if (job->prim.kind != LAB_PRIM_PINGPONG &&
        !(job->prim.kind == LAB_PRIM_COLL && job->prim.coll == DL_COLL_BARRIER))
        fprintf(out, "  dtype=%s  count=%zu", dl_dtype_name(job->dtype), job->count);
    if (lab_prim_has_op(job->prim))
        fprintf(out, "  op=%s", dl_op_name(job->op));
    if (lab_prim_has_root(job->prim))
        fprintf(out, "  %s=%d", root_name(job), job->root);
    fputc('\n', out);
}

/* The text of snapshot i and, when it opens a list, the rest of the list,
 * as Python prints a list (or a tuple) of tensors. Returns a malloc'd
 * string. */
static char *format_group(const lab_rank_model_t *m, int i)
{
    const lab_snap_t *sn = &m->snaps[i];
    size_t cap = 64, len = 0;
    char *text = malloc(cap);
    if (text == NULL)
        return NULL;
    text[0] = '\0';
    int of = sn->of;
    for (int j = i; j < m->n_snaps && (of == 0 ? j == i : 1); j++) {
        const lab_snap_t *e = &m->snaps[j];
        if (of > 0 && (strcmp(e->name, sn->name) != 0 || strcmp(e->label, sn->label) != 0))
            continue;
        char *one = lab_snap_text(e);
        if (one == NULL)
            continue;
        size_t need = len + strlen(one) + 8;
        if (need > cap) {
            cap = need * 2;
            char *n = realloc(text, cap);
            if (n == NULL) {
                free(one);
                break;
            }
            text = n;
        }
        /* A tuple prints (a, b), and one of a single item (a,). */
        const char *close = !sn->tuple ? "]" : of == 1 ? ",)" : ")";
        len += (size_t)sprintf(text + len, "%s%s%s",
                               of > 0 && e->index == 0 ? (sn->tuple ? "(" : "[") : "", one,
                               of > 0 ? (e->index == of - 1 ? close : ", ") : "");
        free(one);
        if (of > 0 && e->index == of - 1)
            break;
    }
    return text;
}

static void print_snap(FILE *out, int r, const lab_rank_model_t *m, int i)
{
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "  rank %d: %s = ", r, m->snaps[i].name);
    char *text = format_group(m, i);
    if (text != NULL)
        print_indented(out, prefix, text);
    free(text);
}

/* One line per (rank, name) under a heading: "before:", "after:", or a
 * state between them that the job reports ("after r0 -> r1:"). */
static void print_label(FILE *out, const lab_session_t *s, const char *label)
{
    bool any = false;
    for (int r = 0; r < s->np; r++) {
        const lab_rank_model_t *m = &s->ranks[r];
        for (int i = 0; i < m->n_snaps; i++) {
            if (strcmp(m->snaps[i].label, label) != 0 || m->snaps[i].index != 0)
                continue;
            if (!any)
                fprintf(out, "%s:\n", label);
            any = true;
            print_snap(out, r, m, i);
        }
    }
}

/* Whether `set echo` shows what was sent as `of` ("assign", "print", ""). */
static bool echoed(lab_echo_t echo, const char *of)
{
    return echo == LAB_ECHO_ALL || (echo == LAB_ECHO_NO_ASSIGN && strcmp(of, "assign") != 0) ||
           strcmp(of, "print") == 0;
}

/* Notes [from, to) of a rank that echo shows; a note of several lines
 * (print of a 2-D tensor) keeps its lines aligned under the first. */
static void print_notes(FILE *out, int r, const lab_rank_model_t *m, size_t from, size_t to,
                        lab_echo_t echo)
{
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "  rank %d: ", r);
    for (size_t i = from; i < to && i < json_array_size(m->notes); i++) {
        const json_t *note = json_array_get(m->notes, i);
        if (echoed(echo, lab_json_str(note, "of", "")))
            print_indented(out, prefix, lab_json_str(note, "text", ""));
    }
}

void lab_report_rank_results(FILE *out, int r, const lab_rank_model_t *m, lab_echo_t echo)
{
    /* Notes and tensors in the order the rank sent them. */
    size_t done = 0;
    for (int k = 0; k < m->n_snaps; k++) {
        if (m->snaps[k].index != 0)
            continue;
        size_t before = (size_t)m->snaps[k].notes_before;
        if (before > done) {
            print_notes(out, r, m, done, before, echo);
            done = before;
        }
        if (echoed(echo, m->snaps[k].label))
            print_snap(out, r, m, k);
    }
    print_notes(out, r, m, done, json_array_size(m->notes), echo);
}

/* Whether label is one of the snapshots' labels before rank r's snapshot k. */
static bool label_seen(const lab_session_t *s, int r, int k, const char *label)
{
    for (int q = 0; q <= r; q++)
        for (int i = 0; i < (q < r ? s->ranks[q].n_snaps : k); i++)
            if (strcmp(s->ranks[q].snaps[i].label, label) == 0)
                return true;
    return false;
}

void lab_report_run(FILE *out, const lab_job_t *job, const lab_session_t *s)
{
    print_header(out, job, s);
    /* Every label once, in the order the ranks reported them, each rank's
     * states in the order it went through them. */
    for (int r = 0; r < s->np; r++)
        for (int k = 0; k < s->ranks[r].n_snaps; k++)
            if (!label_seen(s, r, k, s->ranks[r].snaps[k].label))
                print_label(out, s, s->ranks[r].snaps[k].label);
    for (int r = 0; r < s->np; r++) {
        size_t i;
        json_t *note;
        json_array_foreach(s->ranks[r].notes, i, note)
        {
            fprintf(out, "  rank %d: %s\n", r, lab_json_str(note, "text", ""));
        }
    }
}

/* ---- bench ---- */

/* nccl-tests' bus bandwidth factors: what a link must carry, relative to
 * the algorithm bandwidth, for an optimal algorithm. */
static double bus_factor(dl_coll_t c, int n)
{
    switch (c) {
    case DL_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case DL_COLL_ALL_GATHER:
    case DL_COLL_REDUCE_SCATTER:
    case DL_COLL_ALL_TO_ALL:
    case DL_COLL_GATHER:
    case DL_COLL_SCATTER:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

typedef struct {
    long long size, count, wrong;
    double time_us, algbw, busbw;
    const char *algo;
} bench_row_t;

/* Row i: the time averaged over ranks (nccl-tests' default), wrong summed. */
static bench_row_t bench_row(const lab_job_t *job, const lab_session_t *s, size_t i)
{
    bench_row_t row = {0};
    json_t *r0 = json_array_get(s->ranks[0].bench, i);
    row.size = lab_json_int(r0, "size", 0);
    row.count = lab_json_int(r0, "count", 0);
    row.algo = lab_json_str(r0, "algo", "");
    for (int r = 0; r < s->np; r++) {
        json_t *e = json_array_get(s->ranks[r].bench, i);
        row.time_us += lab_json_num(e, "time_us", 0);
        row.wrong += lab_json_int(e, "wrong", 0);
    }
    row.time_us /= s->np;
    row.algbw = row.time_us > 0 ? (double)row.size / (row.time_us * 1e3) : 0; /* GB/s */
    row.busbw = row.algbw * bus_factor(job->prim.coll, s->np);
    return row;
}

static const char *redop_name(const lab_job_t *job)
{
    return dl_coll_has_op(job->prim.coll) ? dl_op_name(job->op) : "none";
}

void lab_report_bench_rows(FILE *out, const lab_job_t *job, const lab_session_t *s,
                           lab_bench_out_t *o, size_t upto)
{
    if (!o->head) {
        o->head = true;
        fprintf(out,
                "# distlab bench %s: np %d, backend %s, algo %s, %d iterations after %d "
                "warm-up\n#\n",
                dl_coll_name(job->prim.coll), job->np, job->backend,
                job->algo[0] ? job->algo : "default", job->iters, job->warmup);
        /* nccl-tests measures whatever size it is given; a size below one
         * element (one per rank where the buffer is split) has no elements,
         * so it runs as the smallest size that has, and the table says so. */
        size_t smallest = lab_bench_count(job, job->np, 0) * dl_dtype_size(job->dtype);
        if (job->prim.coll != DL_COLL_BARRIER && job->min_bytes < smallest)
            fprintf(out,
                    "# -b %zu is below the smallest %s of %s on %d ranks (%zu bytes): it runs "
                    "as %zu\n#\n",
                    job->min_bytes, dl_coll_name(job->prim.coll), dl_dtype_name(job->dtype),
                    job->np, smallest, smallest);
        fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %s\n", "size", "count",
                "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "algo");
        fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "",
                "", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    size_t n = json_array_size(s->ranks[0].bench);
    for (size_t i = o->printed; i < upto && i < n; i++) {
        bench_row_t row = bench_row(job, s, i);
        char t[32], wrong[32];
        if (row.time_us >= 10000.0)
            snprintf(t, sizeof(t), "%7.0f", row.time_us);
        else if (row.time_us >= 100.0)
            snprintf(t, sizeof(t), "%7.1f", row.time_us);
        else
            snprintf(t, sizeof(t), "%7.2f", row.time_us);
        /* Unchecked (-c 0), the column says so, as nccl-tests' N/A. */
        if (job->check)
            snprintf(wrong, sizeof(wrong), "%6lld", row.wrong);
        else
            snprintf(wrong, sizeof(wrong), "%6s", "N/A");
        fprintf(out, "  %10lld  %12lld  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %s  %s\n", row.size,
                row.count, dl_dtype_bench_name(job->dtype), redop_name(job),
                dl_coll_has_root(job->prim.coll) ? job->root : -1, t, row.algbw, row.busbw, wrong,
                row.algo);
        o->sum_bw += row.busbw;
        o->wrong += row.wrong;
        o->printed = i + 1;
    }
}

void lab_report_bench_end(FILE *out, const lab_job_t *job, const lab_bench_out_t *o)
{
    if (job->check)
        fprintf(out, "# Out of bounds values : %lld %s\n", o->wrong,
                o->wrong == 0 ? "OK" : "FAILED");
    else
        fprintf(out, "# Out of bounds values : N/A (-c 0: results not checked)\n");
    fprintf(out, "# Avg bus bandwidth    : %g\n",
            o->printed > 0 ? o->sum_bw / (double)o->printed : 0.0);
}

void lab_report_bench(FILE *out, const lab_job_t *job, const lab_session_t *s)
{
    lab_bench_out_t o = {0};
    lab_report_bench_rows(out, job, s, &o, SIZE_MAX);
    lab_report_bench_end(out, job, &o);
}

void lab_report_bench_json(FILE *out, const lab_job_t *job, const lab_session_t *s)
{
    json_t *rows = json_array();
    size_t n = json_array_size(s->ranks[0].bench);
    double sum_bw = 0;
    for (size_t i = 0; i < n; i++) {
        bench_row_t row = bench_row(job, s, i);
        /* Unchecked (-c 0), nothing was counted: null, as the table's N/A. */
        json_t *wrong = job->check ? json_integer((json_int_t)row.wrong) : json_null();
        json_array_append_new(
            rows, json_pack("{s:I, s:I, s:s, s:s, s:i, s:f, s:f, s:f, s:o, s:s}", "size",
                            (json_int_t)row.size, "count", (json_int_t)row.count, "type",
                            dl_dtype_bench_name(job->dtype), "redop", redop_name(job), "root",
                            dl_coll_has_root(job->prim.coll) ? job->root : -1, "time_us",
                            row.time_us, "algbw_gbps", row.algbw, "busbw_gbps", row.busbw, "wrong",
                            wrong, "algo", row.algo));
        sum_bw += row.busbw;
    }
    /* The op is the rows' redop: "none" for a collective that has none. */
    json_t *doc =
        json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:i, s:o, s:f}", "primitive",
                  dl_coll_name(job->prim.coll), "np", job->np, "backend", job->backend, "dtype",
                  dl_dtype_name(job->dtype), "op", redop_name(job), "iters", job->iters, "warmup",
                  job->warmup, "rows", rows, "avg_busbw_gbps", n > 0 ? sum_bw / (double)n : 0.0);
    char *text = json_dumps(doc, JSON_INDENT(2));
    if (text != NULL)
        fprintf(out, "%s\n", text);
    free(text);
    json_decref(doc);
}

/* ---- failures ---- */

void lab_report_errors(FILE *out, const lab_session_t *s)
{
    for (int r = 0; r < s->np; r++) {
        const lab_rank_model_t *m = &s->ranks[r];
        size_t i;
        json_t *line;
        /* The causes first, then the rank's summary of what failed. */
        json_array_foreach(m->logs, i, line)
        {
            /* The error event repeats the last logged error; say it once. */
            if (m->failed && strcmp(json_string_value(line), m->error) == 0)
                continue;
            fprintf(out, "distlab: rank %d: %s\n", r, json_string_value(line));
        }
        if (m->failed)
            fprintf(out, "distlab: rank %d: %s\n", r, m->error);
    }
}

void lab_report_rank_list(const bool *in, int np, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int r = 0; r < np; r++) {
        if (!in[r])
            continue;
        int end = r;
        while (end + 1 < np && in[end + 1])
            end++;
        len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%d", len ? ", " : "", r);
        if (end > r)
            len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%d",
                                    end > r + 1 ? "-" : ", ", end);
        r = end;
    }
}
