/* A schedule step as data (distlab/stepdesc.h): describing a step, its JSON
 * form and the one line every front end prints for a message. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/stepdesc.h"

static const char *const buf_names[DL_BUF__COUNT] = {"in", "out", "tmp"};
static const char *const kind_names[DL_MSG__COUNT] = {"copy", "reduce", "local_copy",
                                                      "local_reduce", "scale"};

const char *dl_buf_name(dl_buf_t b)
{
    return (unsigned)b < DL_BUF__COUNT ? buf_names[b] : "?";
}

const char *dl_msg_kind_name(dl_msg_kind_t kind)
{
    return (unsigned)kind < DL_MSG__COUNT ? kind_names[kind] : "?";
}

bool dl_msg_is_local(dl_msg_kind_t kind)
{
    return kind == DL_MSG_LOCAL_COPY || kind == DL_MSG_LOCAL_REDUCE || kind == DL_MSG_LOCAL_SCALE;
}

static bool is_reduce(dl_msg_kind_t kind)
{
    return kind == DL_MSG_REDUCE || kind == DL_MSG_LOCAL_REDUCE;
}

void dl_step_desc_free(dl_step_desc_t *d)
{
    free(d->phase);
    free(d->msgs);
    memset(d, 0, sizeof(*d));
}

/* ======================================================================
 * Describing a step of a schedule
 * ====================================================================== */

static dl_range_t range_of(dl_ref_t r, size_t count)
{
    return (dl_range_t){r.buf, r.off, count};
}

static dl_status_t describe_action(const dl_sched_t *s, const dl_action_t *a, size_t elem_size,
                                   const int *world_ranks, dl_msg_desc_t *m)
{
    int n = s->args.nranks;
    /* Without a map the ranks are written as they are, even wrong ones: a
     * schedule being written is explained before it is valid. */
    if (world_ranks != NULL &&
        (a->src_rank < 0 || a->src_rank >= n || a->dst_rank < 0 || a->dst_rank >= n))
        return DL_ERR_INVALID;
    memset(m, 0, sizeof(*m));
    m->src_rank = world_ranks != NULL ? world_ranks[a->src_rank] : a->src_rank;
    m->dst_rank = world_ranks != NULL ? world_ranks[a->dst_rank] : a->dst_rank;
    m->chunk = a->chunk >= 0 ? a->chunk : -1;
    m->src = range_of(a->src, a->count);
    m->dst = range_of(a->dst, a->count);
    m->bytes = a->count * elem_size;
    switch (a->kind) {
    case DL_ACT_MSG:
        m->kind = a->combine == DL_COMBINE_REDUCE ? DL_MSG_REDUCE : DL_MSG_COPY;
        m->eager = a->eager;
        m->back = a->back;
        break;
    case DL_ACT_COPY:
        m->kind = DL_MSG_LOCAL_COPY;
        break;
    case DL_ACT_REDUCE:
        m->kind = DL_MSG_LOCAL_REDUCE;
        break;
    case DL_ACT_SCALE:
        m->kind = DL_MSG_LOCAL_SCALE;
        m->src = m->dst; /* scaling reads what it writes */
        m->divisor = n;
        break;
    default:
        return DL_ERR_INVALID;
    }
    if (is_reduce(m->kind))
        m->acc = range_of(a->acc, a->count);
    return DL_OK;
}

dl_status_t dl_step_describe(const dl_sched_t *s, size_t step, size_t elem_size,
                             const int *world_ranks, dl_step_desc_t *out)
{
    if (step >= s->n_steps)
        return DL_ERR_INVALID;
    const dl_step_t *st = &s->steps[step];
    dl_step_desc_t d = {0};
    d.phase = strdup(st->phase != NULL ? st->phase : "");
    d.msgs = calloc(st->n ? st->n : 1, sizeof(*d.msgs));
    if (d.phase == NULL || d.msgs == NULL) {
        dl_step_desc_free(&d);
        return DL_ERR_NOMEM;
    }
    d.k = (int)step + 1;
    d.n = (int)s->n_steps;
    /* Messages first, then local actions: the order a rank runs them in. */
    for (int local = 0; local < 2; local++) {
        for (size_t i = st->first; i < st->first + st->n; i++) {
            const dl_action_t *a = &s->actions[i];
            if ((a->kind != DL_ACT_MSG) != local)
                continue;
            dl_status_t rc = describe_action(s, a, elem_size, world_ranks, &d.msgs[d.n_msgs]);
            if (rc != DL_OK) {
                dl_step_desc_free(&d);
                return rc;
            }
            d.n_msgs++;
        }
    }
    *out = d;
    return DL_OK;
}

/* ======================================================================
 * JSON
 * ====================================================================== */

static json_t *range_json(dl_range_t r)
{
    return json_pack("{s:s, s:I, s:I}", "buf", dl_buf_name(r.buf), "first", (json_int_t)r.first,
                     "count", (json_int_t)r.count);
}

static json_t *msg_json(const dl_msg_desc_t *m)
{
    json_t *j =
        json_pack("{s:s, s:i, s:i, s:i, s:o, s:o, s:I}", "kind", dl_msg_kind_name(m->kind),
                  "src_rank", m->src_rank, "dst_rank", m->dst_rank, "chunk", m->chunk, "src",
                  range_json(m->src), "dst", range_json(m->dst), "bytes", (json_int_t)m->bytes);
    if (j == NULL)
        return NULL;
    if ((is_reduce(m->kind) && json_object_set_new(j, "acc", range_json(m->acc)) != 0) ||
        (m->kind == DL_MSG_LOCAL_SCALE &&
         json_object_set_new(j, "divisor", json_integer(m->divisor)) != 0) ||
        (m->eager && json_object_set_new(j, "eager", json_true()) != 0) ||
        (m->back && json_object_set_new(j, "back", json_true()) != 0)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

json_t *dl_step_desc_to_json(const dl_step_desc_t *d)
{
    json_t *msgs = json_array();
    for (size_t i = 0; msgs != NULL && i < d->n_msgs; i++) {
        if (json_array_append_new(msgs, msg_json(&d->msgs[i])) != 0) {
            json_decref(msgs);
            msgs = NULL;
        }
    }
    if (msgs == NULL)
        return NULL;
    return json_pack("{s:s, s:i, s:i, s:o}", "phase", d->phase != NULL ? d->phase : "", "k", d->k,
                     "n", d->n, "msgs", msgs);
}

/* An integer member of obj in [lo, hi]. */
static bool get_int(const json_t *obj, const char *key, json_int_t lo, json_int_t hi,
                    json_int_t *v_p)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return false;
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return false;
    *v_p = x;
    return true;
}

/* Element offsets and counts stay below 2^62, so first + count cannot
 * overflow and bytes fit any size_t of 64 bits. */
#define MAX_ELEMS ((json_int_t)1 << 62)

static bool get_range(const json_t *obj, const char *key, dl_range_t *r_p)
{
    json_t *r = json_object_get(obj, key);
    if (!json_is_object(r))
        return false;
    json_t *name = json_object_get(r, "buf");
    if (!json_is_string(name))
        return false;
    int b = 0;
    while (b < DL_BUF__COUNT && strcmp(json_string_value(name), buf_names[b]) != 0)
        b++;
    json_int_t first, count;
    if (b == DL_BUF__COUNT || !get_int(r, "first", 0, MAX_ELEMS, &first) ||
        !get_int(r, "count", 0, MAX_ELEMS - first, &count))
        return false;
    *r_p = (dl_range_t){(dl_buf_t)b, (size_t)first, (size_t)count};
    return true;
}

static dl_status_t msg_from_json(const json_t *j, int nranks, dl_msg_desc_t *m)
{
    if (!json_is_object(j))
        return DL_ERR_PROTOCOL;
    memset(m, 0, sizeof(*m));
    json_t *kind = json_object_get(j, "kind");
    if (!json_is_string(kind))
        return DL_ERR_PROTOCOL;
    int k = 0;
    while (k < DL_MSG__COUNT && strcmp(json_string_value(kind), kind_names[k]) != 0)
        k++;
    if (k == DL_MSG__COUNT)
        return DL_ERR_PROTOCOL;
    m->kind = (dl_msg_kind_t)k;

    json_int_t src, dst, chunk, bytes, divisor = 0;
    if (!get_int(j, "src_rank", 0, nranks - 1, &src) ||
        !get_int(j, "dst_rank", 0, nranks - 1, &dst) || !get_int(j, "chunk", -1, INT_MAX, &chunk) ||
        !get_int(j, "bytes", 0, INT64_MAX, &bytes) || !get_range(j, "src", &m->src) ||
        !get_range(j, "dst", &m->dst))
        return DL_ERR_PROTOCOL;
    if (dl_msg_is_local(m->kind) && src != dst)
        return DL_ERR_PROTOCOL;
    if (is_reduce(m->kind) && !get_range(j, "acc", &m->acc))
        return DL_ERR_PROTOCOL;
    if (m->kind == DL_MSG_LOCAL_SCALE && !get_int(j, "divisor", 1, INT_MAX, &divisor))
        return DL_ERR_PROTOCOL;
    /* An action reads and writes as many elements as it moves. */
    if (m->src.count != m->dst.count || (is_reduce(m->kind) && m->acc.count != m->dst.count))
        return DL_ERR_PROTOCOL;
    m->src_rank = (int)src;
    m->dst_rank = (int)dst;
    m->chunk = (int)chunk;
    m->bytes = (size_t)bytes;
    m->divisor = (int)divisor;
    json_t *eager = json_object_get(j, "eager");
    if (eager != NULL && (!json_is_boolean(eager) || dl_msg_is_local(m->kind)))
        return DL_ERR_PROTOCOL;
    m->eager = json_is_true(eager);
    json_t *back = json_object_get(j, "back");
    if (back != NULL && (!json_is_boolean(back) || dl_msg_is_local(m->kind)))
        return DL_ERR_PROTOCOL;
    m->back = json_is_true(back);
    return DL_OK;
}

dl_status_t dl_step_desc_from_json(const json_t *j, int nranks, dl_step_desc_t *out)
{
    if (!json_is_object(j) || nranks < 1)
        return DL_ERR_PROTOCOL;
    json_t *phase = json_object_get(j, "phase");
    json_t *msgs = json_object_get(j, "msgs");
    json_int_t n, k;
    if (!json_is_string(phase) || !json_is_array(msgs) || !get_int(j, "n", 1, INT_MAX, &n) ||
        !get_int(j, "k", 1, n, &k))
        return DL_ERR_PROTOCOL;

    dl_step_desc_t d = {0};
    size_t count = json_array_size(msgs);
    d.phase = strdup(json_string_value(phase));
    d.msgs = calloc(count ? count : 1, sizeof(*d.msgs));
    if (d.phase == NULL || d.msgs == NULL) {
        dl_step_desc_free(&d);
        return DL_ERR_NOMEM;
    }
    d.k = (int)k;
    d.n = (int)n;
    for (size_t i = 0; i < count; i++) {
        dl_status_t rc = msg_from_json(json_array_get(msgs, i), nranks, &d.msgs[i]);
        if (rc != DL_OK) {
            dl_step_desc_free(&d);
            return rc;
        }
        d.n_msgs++;
    }
    *out = d;
    return DL_OK;
}

/* ======================================================================
 * The line of a message
 * ====================================================================== */

const char *dl_bytes_format(size_t b, char *buf, size_t cap)
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

static const char *range_text(dl_range_t r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s[%zu:%zu]", dl_buf_name(r.buf), r.first, r.first + r.count);
    return buf;
}

static bool same_range(dl_range_t a, dl_range_t b)
{
    return a.buf == b.buf && a.first == b.first && a.count == b.count;
}

static const char *kind_word(dl_msg_kind_t kind)
{
    switch (kind) {
    case DL_MSG_REDUCE:
    case DL_MSG_LOCAL_REDUCE:
        return "reduce";
    case DL_MSG_LOCAL_SCALE:
        return "scale";
    default:
        return "copy";
    }
}

static bool is_signal(const dl_msg_desc_t *m)
{
    return !dl_msg_is_local(m->kind) && m->src.count == 0;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

void dl_msg_widths_fit(dl_msg_widths_t *w, const dl_msg_desc_t *m)
{
    char buf[64];
    w->rank = max_int(w->rank, snprintf(buf, sizeof(buf), "r%d", m->src_rank));
    w->rank = max_int(w->rank, snprintf(buf, sizeof(buf), "r%d", m->dst_rank));
    if (is_signal(m))
        return;
    if (m->chunk >= 0)
        w->chunk = max_int(w->chunk, snprintf(buf, sizeof(buf), "chunk %d", m->chunk));
    w->kind = max_int(w->kind, (int)strlen(kind_word(m->kind)));
    w->bytes = max_int(w->bytes, (int)strlen(dl_bytes_format(m->bytes, buf, sizeof(buf))));
}

void dl_step_desc_widths(const dl_step_desc_t *d, dl_msg_widths_t *w)
{
    for (size_t i = 0; i < d->n_msgs; i++)
        dl_msg_widths_fit(w, &d->msgs[i]);
}

/* Appends to an snprintf-style buffer, counting what did not fit. */
typedef struct {
    char *buf;
    size_t cap, len;
} line_t;

static void put(line_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(line_t *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = l->len < l->cap ? l->cap - l->len : 0;
    int n = vsnprintf(room > 0 ? l->buf + l->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->len += (size_t)n;
}

size_t dl_msg_format(const dl_msg_desc_t *m, const dl_msg_widths_t *w, char *buf, size_t cap)
{
    static const dl_msg_widths_t none = {0, 0, 0, 0};
    char src_rank[16], dst_rank[16], chunk[32], bytes[32], src[64], dst[64], acc[64];
    line_t l = {buf, cap, 0};
    if (w == NULL)
        w = &none;
    if (cap > 0)
        buf[0] = '\0';

    snprintf(src_rank, sizeof(src_rank), "r%d", m->src_rank);
    snprintf(dst_rank, sizeof(dst_rank), "r%d", m->dst_rank);
    /* Who: "r0 -> r1", or "r2 local" in a column as wide. */
    if (dl_msg_is_local(m->kind))
        put(&l, "%-*s local%*s", w->rank, src_rank, max_int(w->rank - 2, 0), "");
    else
        put(&l, "%-*s -> %-*s", w->rank, src_rank, w->rank, dst_rank);
    if (is_signal(m)) {
        put(&l, "  signal");
        return l.len;
    }

    /* What: the chunk (a column only when some line has one), the kind,
     * the bytes. */
    chunk[0] = '\0';
    if (m->chunk >= 0)
        snprintf(chunk, sizeof(chunk), "chunk %d", m->chunk);
    if (m->chunk >= 0 || w->chunk > 0)
        put(&l, "  %-*s", w->chunk, chunk);
    put(&l, "  %-*s  %*s  ", w->kind, kind_word(m->kind), w->bytes,
        dl_bytes_format(m->bytes, bytes, sizeof(bytes)));

    /* Where: the ranges. */
    range_text(m->dst, dst, sizeof(dst));
    if (m->kind == DL_MSG_LOCAL_SCALE) {
        put(&l, "%s / %d", dst, m->divisor);
        return l.len;
    }
    put(&l, "%s -> %s", range_text(m->src, src, sizeof(src)), dst);
    if (is_reduce(m->kind) && !same_range(m->acc, m->dst))
        put(&l, " (with %s)", range_text(m->acc, acc, sizeof(acc)));
    if (m->eager)
        put(&l, "  eager");
    if (m->back)
        put(&l, "  write-back");
    return l.len;
}
