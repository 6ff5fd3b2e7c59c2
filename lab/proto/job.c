#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/job.h"
#include "lab/proto/proto.h"

static const struct {
    const char *name;
    lab_prim_kind_t kind;
} p2p_names[] = {
    {"send", LAB_PRIM_SEND},   {"recv", LAB_PRIM_RECV},         {"isend", LAB_PRIM_ISEND},
    {"irecv", LAB_PRIM_IRECV}, {"pingpong", LAB_PRIM_PINGPONG},
};

lab_nps_t lab_nps_parse(const char *s, int *nps, size_t cap, size_t *n_p, const char **bad_p)
{
    size_t n = 0;
    *n_p = 0;
    if (*s == '\0')
        return LAB_NPS_NONE;
    size_t all = strlen(s);
    if (s[0] == ',' || s[all - 1] == ',' || strstr(s, ",,") != NULL)
        return LAB_NPS_EMPTY;
    for (const char *p = s;; p++) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (n == cap)
            return LAB_NPS_TOO_MANY;
        char item[32], *end = NULL;
        snprintf(item, sizeof(item), "%.*s", (int)(len < sizeof(item) - 1 ? len : sizeof(item) - 1),
                 p);
        errno = 0;
        long v = strtol(item, &end, 10);
        if (len >= sizeof(item) || errno != 0 || end == item || *end != '\0' || v < 1 ||
            v > LAB_MAX_NP) {
            *bad_p = p;
            return LAB_NPS_BAD;
        }
        nps[n++] = (int)v;
        if (comma == NULL)
            break;
        p = comma;
    }
    *n_p = n;
    return LAB_NPS_OK;
}

const char *lab_prim_name(lab_prim_t p)
{
    if (p.kind == LAB_PRIM_COLL)
        return dl_coll_name(p.coll);
    for (size_t i = 0; i < sizeof(p2p_names) / sizeof(p2p_names[0]); i++)
        if (p2p_names[i].kind == p.kind)
            return p2p_names[i].name;
    return "?";
}

dl_status_t lab_prim_parse(const char *name, lab_prim_t *p_p)
{
    dl_coll_t c;
    if (dl_coll_parse(name, &c) == DL_OK) {
        *p_p = (lab_prim_t){LAB_PRIM_COLL, c};
        return DL_OK;
    }
    for (size_t i = 0; i < sizeof(p2p_names) / sizeof(p2p_names[0]); i++)
        if (strcmp(name, p2p_names[i].name) == 0) {
            *p_p = (lab_prim_t){p2p_names[i].kind, DL_COLL_BARRIER};
            return DL_OK;
        }
    return DL_ERR_INVALID;
}

size_t lab_prim_names(const char **names, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(p2p_names) / sizeof(p2p_names[0]) && n < cap; i++)
        names[n++] = p2p_names[i].name;
    for (int c = 0; c < DL_COLL__COUNT && n < cap; c++)
        names[n++] = dl_coll_name((dl_coll_t)c);
    return n;
}

const char *lab_prim_all_names(void)
{
    return "send, recv, isend, irecv, broadcast, scatter, gather, reduce, all_gather, "
           "all_reduce, reduce_scatter, all_to_all, barrier, pingpong";
}

bool lab_prim_has_root(lab_prim_t p)
{
    return p.kind == LAB_PRIM_COLL ? dl_coll_has_root(p.coll) != 0 : p.kind != LAB_PRIM_PINGPONG;
}

bool lab_prim_has_op(lab_prim_t p)
{
    return p.kind == LAB_PRIM_COLL && dl_coll_has_op(p.coll);
}

void lab_job_defaults(lab_job_t *job)
{
    memset(job, 0, sizeof(*job));
    job->prim = (lab_prim_t){LAB_PRIM_COLL, DL_COLL_ALL_REDUCE};
    job->np = 4;
    job->dtype = DL_INT64;
    job->count = 2;
    job->op = DL_OP_SUM;
    job->timeout_s = 60;
    job->min_bytes = 8;
    job->max_bytes = 64u << 20;
    job->factor = 2;
    job->iters = 20;
    job->warmup = 5;
    job->check = true;
    snprintf(job->backend, sizeof(job->backend), "builtin");
    job->device = DL_DEVICE_CPU;
}

json_t *lab_job_to_json(const lab_job_t *job)
{
    return json_pack("{s:s, s:b, s:s, s:i, s:s, s:s, s:I, s:s, s:i, s:f, s:I, s:I, s:f, s:i, "
                     "s:i, s:b, s:b, s:s, s:s}",
                     "type", "job", "bench", job->bench, "prim", lab_prim_name(job->prim), "np",
                     job->np, "algo", job->algo, "dtype", dl_dtype_name(job->dtype), "count",
                     (json_int_t)job->count, "op", dl_op_name(job->op), "root", job->root,
                     "timeout", job->timeout_s, "min_bytes", (json_int_t)job->min_bytes,
                     "max_bytes", (json_int_t)job->max_bytes, "factor", job->factor, "iters",
                     job->iters, "warmup", job->warmup, "check", job->check, "lists_apart",
                     job->lists_apart, "backend", job->backend, "device",
                     job->device == DL_DEVICE_CUDA ? "cuda" : "cpu");
}

dl_status_t lab_job_from_json(const json_t *j, lab_job_t *job)
{
    lab_job_t out;
    lab_job_defaults(&out);
    out.bench = json_is_true(json_object_get(j, "bench"));
    if (lab_prim_parse(lab_json_str(j, "prim", ""), &out.prim) != DL_OK ||
        dl_dtype_parse(lab_json_str(j, "dtype", ""), &out.dtype) != DL_OK ||
        dl_op_parse(lab_json_str(j, "op", ""), &out.op) != DL_OK)
        return DL_ERR_PROTOCOL;
    snprintf(out.algo, sizeof(out.algo), "%s", lab_json_str(j, "algo", ""));
    out.np = (int)lab_json_int(j, "np", 0);
    out.count = (size_t)lab_json_int(j, "count", 0);
    out.root = (int)lab_json_int(j, "root", 0);
    out.timeout_s = lab_json_num(j, "timeout", 60);
    out.min_bytes = (size_t)lab_json_int(j, "min_bytes", 8);
    out.max_bytes = (size_t)lab_json_int(j, "max_bytes", 8);
    out.factor = lab_json_num(j, "factor", 2);
    out.iters = (int)lab_json_int(j, "iters", 20);
    out.warmup = (int)lab_json_int(j, "warmup", 5);
    out.check = !json_is_false(json_object_get(j, "check"));
    out.lists_apart = json_is_true(json_object_get(j, "lists_apart"));
    snprintf(out.backend, sizeof(out.backend), "%s", lab_json_str(j, "backend", "builtin"));
    out.device =
        strcmp(lab_json_str(j, "device", "cpu"), "cuda") == 0 ? DL_DEVICE_CUDA : DL_DEVICE_CPU;
    *job = out;
    return DL_OK;
}

/* ---- the job as a shell line ---- */

/* "NAME = arange(N, dtype=D) + 1 + N*rank", run's rank_data(). A bool
 * arange is refused, as torch refuses it; run's values, which start at 1,
 * are all True as bools. */
static void line_rank_data(FILE *f, const char *name, size_t n, dl_dtype_t dt)
{
    if (dt == DL_BOOL)
        fprintf(f, "%s = ones(%zu, dtype=bool); ", name, n);
    else
        fprintf(f, "%s = arange(%zu, dtype=%s) + 1 + %zu*rank; ", name, n, dl_dtype_name(dt), n);
}

static void line_zeros(FILE *f, const char *name, size_t n, dl_dtype_t dt)
{
    fprintf(f, "%s = zeros(%zu, dtype=%s); ", name, n, dl_dtype_name(dt));
}

/* send/isend: the root sends its tensor to every other rank; recv/irecv:
 * every other rank sends its tensor to the root, which receives each one
 * into recv_list[i] (by source, as run files them). */
static void line_p2p(FILE *f, const lab_job_t *job)
{
    int n = job->np, root = job->root;
    size_t c = job->count;
    bool async = job->prim.kind == LAB_PRIM_ISEND || job->prim.kind == LAB_PRIM_IRECV;
    line_rank_data(f, "tensor", c, job->dtype);
    if (job->prim.kind == LAB_PRIM_SEND || job->prim.kind == LAB_PRIM_ISEND) {
        for (int d = 0; d < n; d++) {
            if (d == root)
                continue;
            if (async)
                fprintf(f, "on %d: h%d = isend tensor dst=%d; on %d: h = irecv tensor src=%d; ",
                        root, d, d, d, root);
            else
                fprintf(f, "on %d: send tensor dst=%d; on %d: recv tensor src=%d; ", root, d, d,
                        root);
        }
        for (int d = 0; async && d < n; d++)
            if (d != root)
                fprintf(f, "on %d: wait h%d; on %d: wait h; ", root, d, d);
        return;
    }
    for (int s = 0; s < n; s++) {
        if (s == root)
            continue;
        fprintf(f, "on %d: r%d = zeros(%zu, dtype=%s); ", root, s, c, dl_dtype_name(job->dtype));
        if (async)
            fprintf(f, "on %d: h = isend tensor dst=%d; on %d: h%d = irecv r%d src=%d; ", s, root,
                    root, s, s, s);
        else
            fprintf(f, "on %d: send tensor dst=%d; on %d: recv r%d src=%d; ", s, root, root, s, s);
    }
    for (int s = 0; async && s < n; s++)
        if (s != root)
            fprintf(f, "on %d: wait h; on %d: wait h%d; ", s, root, s);
    fprintf(f, "on %d: recv_list = [", root);
    for (int s = 0; s < n; s++) {
        if (s == root)
            fprintf(f, "%stensor", s > 0 ? ", " : "");
        else
            fprintf(f, "%sr%d", s > 0 ? ", " : "", s);
    }
    fputs("]; ", f);
}

char *lab_job_shell_line(const lab_job_t *job, bool step)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return NULL;
    const char *dt = dl_dtype_name(job->dtype), *op = dl_op_name(job->op);
    size_t c = job->count, total = c * (size_t)job->np;
    int root = job->root;
    if (job->prim.kind == LAB_PRIM_COLL && job->algo[0] != '\0')
        fprintf(f, "set algo %s %s; ", dl_coll_name(job->prim.coll), job->algo);
    if (step)
        fputs("step on; ", f);
    switch (job->prim.kind) {
    case LAB_PRIM_PINGPONG:
        fputs("tensor = zeros(1); on 0: tensor = tensor + 1; on 0: send tensor dst=1; "
              "on 1: recv tensor src=0; on 1: tensor = tensor + 1; on 1: send tensor dst=0; "
              "on 0: recv tensor src=1",
              f);
        break;
    case LAB_PRIM_COLL:
        switch (job->prim.coll) {
        case DL_COLL_ALL_REDUCE:
            line_rank_data(f, "tensor", c, job->dtype);
            fprintf(f, "all_reduce tensor op=%s", op);
            break;
        case DL_COLL_BROADCAST:
            line_rank_data(f, "tensor", c, job->dtype);
            fprintf(f, "broadcast tensor src=%d", root);
            break;
        case DL_COLL_REDUCE:
            line_rank_data(f, "tensor", c, job->dtype);
            fprintf(f, "reduce tensor dst=%d op=%s", root, op);
            break;
        case DL_COLL_SCATTER:
            /* The root's scatter_list holds arange(C) + 1 + C*i for rank i,
             * spelled so that it keeps the dtype; all True for bool, as
             * line_rank_data says. */
            line_zeros(f, "tensor", c, job->dtype);
            fprintf(f, "on %d: scatter_list = [", root);
            for (int i = 0; i < job->np; i++) {
                if (job->dtype == DL_BOOL)
                    fprintf(f, "%sones(%zu, dtype=bool)", i > 0 ? ", " : "", c);
                else
                    fprintf(f, "%sarange(%zu, %zu, dtype=%s)", i > 0 ? ", " : "", 1 + c * (size_t)i,
                            1 + c * (size_t)(i + 1), dt);
            }
            /* `on` covers the rest of its line: the collective names
             * every rank again. */
            fprintf(f, "]; on 0-%d: scatter tensor src=%d scatter_list=scatter_list", job->np - 1,
                    root);
            break;
        case DL_COLL_GATHER:
            line_rank_data(f, "tensor", c, job->dtype);
            fprintf(f, "gather tensor dst=%d gather_list=gather_list", root);
            break;
        case DL_COLL_ALL_GATHER:
            line_rank_data(f, "tensor", c, job->dtype);
            fputs("all_gather tensor_list tensor", f);
            break;
        case DL_COLL_REDUCE_SCATTER:
            line_rank_data(f, "input", total, job->dtype);
            line_zeros(f, "output", c, job->dtype);
            fprintf(f, "reduce_scatter output input op=%s", op);
            break;
        case DL_COLL_ALL_TO_ALL:
            line_rank_data(f, "input", total, job->dtype);
            line_zeros(f, "output", total, job->dtype);
            fputs("all_to_all output input", f);
            break;
        default:
            fputs("barrier", f);
            break;
        }
        break;
    default:
        line_p2p(f, job);
        break;
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    /* A line ends without "; ". */
    while (len >= 2 && strcmp(text + len - 2, "; ") == 0)
        text[len -= 2] = '\0';
    return text;
}
