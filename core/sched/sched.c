/* The schedule object: the helpers builders append with, buffer sizes, and
 * the checker of a schedule's own rules (dl_sched_validate). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/sched.h"
#include "internal.h"

/* ======================================================================
 * Growing the arrays
 * ====================================================================== */

/* dl_sched_t keeps no capacities, so the arrays grow to the next power of
 * two whenever their length reaches one: the allocation is then always at
 * least the next power of two >= the length, and appends stay amortised
 * O(1). (Compacting only shrinks lengths, which keeps that true.) */
static dl_status_t grow(void **arr, size_t len, size_t elem)
{
    if (len != 0 && (len & (len - 1)) != 0)
        return DL_OK;
    size_t cap = len == 0 ? 8 : 2 * len;
    if (cap > SIZE_MAX / elem)
        return DL_ERR_NOMEM;
    void *p = realloc(*arr, cap * elem);
    if (p == NULL)
        return DL_ERR_NOMEM;
    *arr = p;
    return DL_OK;
}

/* ======================================================================
 * Builder helpers
 * ====================================================================== */

dl_status_t dl_sched_step(dl_sched_t *s, const char *phase)
{
    DL_TRY(grow((void **)&s->steps, s->n_steps, sizeof(*s->steps)));
    s->steps[s->n_steps++] = (dl_step_t){.phase = phase, .first = s->n_actions, .n = 0};
    return DL_OK;
}

/* Empty actions are dropped here, once, instead of in every builder: only a
 * barrier's messages may carry no data (coll.h). */
static bool drop_empty(const dl_sched_t *s, dl_act_kind_t kind, size_t count)
{
    return count == 0 && !(kind == DL_ACT_MSG && s->args.coll == DL_COLL_BARRIER);
}

static dl_status_t push(dl_sched_t *s, const dl_action_t *a)
{
    if (drop_empty(s, a->kind, a->count))
        return DL_OK;
    if (s->n_steps == 0)
        return DL_ERR_INVALID; /* a builder bug: actions belong to a step */
    DL_TRY(grow((void **)&s->actions, s->n_actions, sizeof(*s->actions)));
    s->actions[s->n_actions++] = *a;
    s->steps[s->n_steps - 1].n++;
    return DL_OK;
}

/* A copying message; eager: its sender may write its src in the same step. */
static dl_status_t push_msg_copy(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                 dl_ref_t dst, size_t count, int chunk, bool eager)
{
    dl_action_t a = {.kind = DL_ACT_MSG,
                     .combine = DL_COMBINE_COPY,
                     .src_rank = src_rank,
                     .dst_rank = dst_rank,
                     .src = src,
                     .dst = dst,
                     .acc = dst,
                     .count = count,
                     .chunk = chunk,
                     .eager = eager};
    return push(s, &a);
}

dl_status_t dl_sched_msg(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank, dl_ref_t dst,
                         size_t count, int chunk)
{
    return push_msg_copy(s, src_rank, src, dst_rank, dst, count, chunk, false);
}

dl_status_t dl_sched_msg_eager(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                               dl_ref_t dst, size_t count, int chunk)
{
    if (src_rank == dst_rank || !dl_sched_fits_eager(s, count))
        return DL_ERR_INVALID;
    return push_msg_copy(s, src_rank, src, dst_rank, dst, count, chunk, true);
}

/* A reducing message; eager: its sender may write its src in the same step;
 * back: the receiver writes its dst back into the sender's src (sched.h). */
static dl_status_t push_msg_reduce(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                   dl_ref_t acc, dl_ref_t dst, size_t count, int chunk, bool eager,
                                   bool back)
{
    dl_action_t a = {.kind = DL_ACT_MSG,
                     .combine = DL_COMBINE_REDUCE,
                     .src_rank = src_rank,
                     .dst_rank = dst_rank,
                     .src = src,
                     .dst = dst,
                     .acc = acc,
                     .count = count,
                     .chunk = chunk,
                     .eager = eager,
                     .back = back};
    return push(s, &a);
}

dl_status_t dl_sched_msg_reduce(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                dl_ref_t acc, dl_ref_t dst, size_t count, int chunk)
{
    return push_msg_reduce(s, src_rank, src, dst_rank, acc, dst, count, chunk, false, false);
}

bool dl_sched_fits_eager(const dl_sched_t *s, size_t count)
{
    return s->elem_size > 0 && count <= DL_SCHED_EAGER_MAX / s->elem_size;
}

dl_status_t dl_sched_msg_reduce_eager(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                      dl_ref_t acc, dl_ref_t dst, size_t count, int chunk)
{
    if (src_rank == dst_rank || !dl_sched_fits_eager(s, count))
        return DL_ERR_INVALID;
    return push_msg_reduce(s, src_rank, src, dst_rank, acc, dst, count, chunk, true, false);
}

dl_status_t dl_sched_msg_reduce_back(dl_sched_t *s, int src_rank, dl_ref_t src, int dst_rank,
                                     dl_ref_t acc, dl_ref_t dst, size_t count, int chunk)
{
    if (src_rank == dst_rank)
        return DL_ERR_INVALID;
    if (s->network)
        return DL_ERR_UNSUPPORTED;
    return push_msg_reduce(s, src_rank, src, dst_rank, acc, dst, count, chunk, false, true);
}

dl_status_t dl_sched_copy(dl_sched_t *s, int rank, dl_ref_t src, dl_ref_t dst, size_t count,
                          int chunk)
{
    dl_action_t a = {.kind = DL_ACT_COPY,
                     .combine = DL_COMBINE_COPY,
                     .src_rank = rank,
                     .dst_rank = rank,
                     .src = src,
                     .dst = dst,
                     .acc = dst,
                     .count = count,
                     .chunk = chunk};
    return push(s, &a);
}

dl_status_t dl_sched_reduce_local(dl_sched_t *s, int rank, dl_ref_t acc, dl_ref_t src, dl_ref_t dst,
                                  size_t count, int chunk)
{
    dl_action_t a = {.kind = DL_ACT_REDUCE,
                     .combine = DL_COMBINE_REDUCE,
                     .src_rank = rank,
                     .dst_rank = rank,
                     .src = src,
                     .dst = dst,
                     .acc = acc,
                     .count = count,
                     .chunk = chunk};
    return push(s, &a);
}

dl_status_t dl_sched_scale(dl_sched_t *s, int rank, dl_ref_t dst, size_t count)
{
    dl_action_t a = {.kind = DL_ACT_SCALE,
                     .combine = DL_COMBINE_COPY,
                     .src_rank = rank,
                     .dst_rank = rank,
                     .src = dst,
                     .dst = dst,
                     .acc = dst,
                     .count = count,
                     .chunk = -1};
    return push(s, &a);
}

dl_status_t dl__scale_if_avg(dl_sched_t *s, int rank, dl_ref_t dst, size_t count)
{
    if (s->args.op != DL_OP_AVG)
        return DL_OK;
    return dl_sched_scale(s, rank, dst, count);
}

void dl_sched_compact(dl_sched_t *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n_steps; i++)
        if (s->steps[i].n > 0)
            s->steps[kept++] = s->steps[i];
    s->n_steps = kept;
}

void dl_sched_free(dl_sched_t *s)
{
    if (s == NULL)
        return;
    free(s->steps);
    free(s->actions);
    free(s->splits_copy);
    free(s);
}

/* ======================================================================
 * Buffer sizes (coll.h)
 * ====================================================================== */

size_t dl__a2a_len(const dl_sched_t *s, int i, int j)
{
    const size_t *splits = s->args.splits;
    return splits != NULL ? splits[(size_t)i * (size_t)s->args.nranks + (size_t)j] : s->args.count;
}

size_t dl__a2a_in_off(const dl_sched_t *s, int i, int j)
{
    size_t off = 0;
    for (int k = 0; k < j; k++)
        off += dl__a2a_len(s, i, k);
    return off;
}

size_t dl__a2a_out_off(const dl_sched_t *s, int i, int j)
{
    size_t off = 0;
    for (int k = 0; k < i; k++)
        off += dl__a2a_len(s, k, j);
    return off;
}

/* In-place collectives (broadcast, reduce, all_reduce) name only IN: their
 * OUT is IN, so a schedule that names OUT for them is wrong and OUT has no
 * elements of its own here. */
size_t dl_sched_buf_count(const dl_sched_t *s, int rank, dl_buf_t b)
{
    const dl_coll_args_t *a = &s->args;
    size_t n = (size_t)a->nranks, count = a->count;
    bool root = rank == a->root;

    if (rank < 0 || rank >= a->nranks)
        return 0;
    if (b == DL_BUF_TMP)
        return s->tmp_count;
    if (b != DL_BUF_IN && b != DL_BUF_OUT)
        return 0;
    bool in = b == DL_BUF_IN;

    switch (a->coll) {
    case DL_COLL_BROADCAST:
    case DL_COLL_REDUCE:
    case DL_COLL_ALL_REDUCE:
        return in ? count : 0;
    case DL_COLL_SCATTER:
        return in ? (root ? n * count : 0) : count;
    case DL_COLL_GATHER:
        return in ? count : (root ? n * count : 0);
    case DL_COLL_ALL_GATHER:
        return in ? count : n * count;
    case DL_COLL_REDUCE_SCATTER:
        return in ? n * count : count;
    case DL_COLL_ALL_TO_ALL:
        if (a->splits == NULL)
            return n * count;
        return in ? dl__a2a_in_off(s, rank, a->nranks) : dl__a2a_out_off(s, a->nranks, rank);
    case DL_COLL_BARRIER:
    case DL_COLL__COUNT:
        break;
    }
    return 0;
}

/* ======================================================================
 * Validation
 * ====================================================================== */

static const char *const buf_names[] = {"in", "out", "tmp"};

void dl__sched_say(char *why, size_t cap, const char *fmt, ...)
{
    if (why == NULL || cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

/* Whether [ref.off, ref.off + count) lies in buffer ref.buf of rank. */
static bool region_ok(const dl_sched_t *s, int rank, dl_ref_t ref, size_t count)
{
    if ((unsigned)ref.buf >= DL_BUF__COUNT)
        return false;
    size_t size = dl_sched_buf_count(s, rank, ref.buf);
    return ref.off <= size && count <= size - ref.off;
}

static bool rank_ok(const dl_sched_t *s, int rank)
{
    return rank >= 0 && rank < s->args.nranks;
}

/* One region a rank touches in a step, for the send-versus-write rule. */
typedef struct {
    int rank;
    int buf;
    size_t lo, hi;
    bool is_send;
    size_t action; /* index in s->actions, for the message */
} touch_t;

static int touch_cmp(const void *pa, const void *pb)
{
    const touch_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->buf != b->buf)
        return a->buf < b->buf ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return 0;
}

static dl_status_t check_action(const dl_sched_t *s, size_t step, const dl_action_t *a, char *why,
                                size_t cap)
{
    size_t k = step + 1;
    const char *what = a->kind == DL_ACT_MSG ? "message" : "local action";

    if (!rank_ok(s, a->src_rank) || !rank_ok(s, a->dst_rank)) {
        dl__sched_say(why, cap, "step %zu: %s r%d -> r%d names a rank outside 0..%d", k, what,
                      a->src_rank, a->dst_rank, s->args.nranks - 1);
        return DL_ERR_INVALID;
    }
    switch (a->kind) {
    case DL_ACT_MSG:
        if (a->combine != DL_COMBINE_COPY && a->combine != DL_COMBINE_REDUCE) {
            dl__sched_say(why, cap, "step %zu: message r%d -> r%d has no valid combine", k,
                          a->src_rank, a->dst_rank);
            return DL_ERR_INVALID;
        }
        if (a->eager && (a->src_rank == a->dst_rank || !dl_sched_fits_eager(s, a->count))) {
            dl__sched_say(why, cap,
                          "step %zu: eager message r%d -> r%d %s (at most %d bytes, to "
                          "another rank)",
                          k, a->src_rank, a->dst_rank,
                          a->src_rank == a->dst_rank ? "goes to its sender" : "is too large",
                          DL_SCHED_EAGER_MAX);
            return DL_ERR_INVALID;
        }
        if (a->back && (a->src_rank == a->dst_rank || a->eager || s->network)) {
            dl__sched_say(why, cap, "step %zu: write-back message r%d -> r%d %s", k, a->src_rank,
                          a->dst_rank,
                          a->src_rank == a->dst_rank ? "goes to its sender"
                          : a->eager                 ? "is also eager"
                                                     : "in a schedule for a network");
            return DL_ERR_INVALID;
        }
        if (a->count == 0 && s->args.coll != DL_COLL_BARRIER) {
            dl__sched_say(why, cap,
                          "step %zu: empty message r%d -> r%d (only a barrier sends those)", k,
                          a->src_rank, a->dst_rank);
            return DL_ERR_INVALID;
        }
        break;
    case DL_ACT_COPY:
    case DL_ACT_REDUCE:
    case DL_ACT_SCALE:
        if (a->eager || a->back) {
            dl__sched_say(why, cap, "step %zu: local action on r%d marked %s", k, a->src_rank,
                          a->eager ? "eager" : "write-back");
            return DL_ERR_INVALID;
        }
        if (a->src_rank != a->dst_rank) {
            dl__sched_say(why, cap, "step %zu: local action with two ranks r%d and r%d", k,
                          a->src_rank, a->dst_rank);
            return DL_ERR_INVALID;
        }
        break;
    default:
        dl__sched_say(why, cap, "step %zu: unknown action kind %d", k, (int)a->kind);
        return DL_ERR_INVALID;
    }

    /* Which regions the action reads and writes, on which rank. */
    struct {
        int rank;
        dl_ref_t ref;
        bool used;
    } regs[3] = {
        {a->src_rank, a->src, a->kind != DL_ACT_SCALE},
        {a->dst_rank, a->dst, true},
        {a->dst_rank, a->acc,
         a->kind == DL_ACT_REDUCE || (a->kind == DL_ACT_MSG && a->combine == DL_COMBINE_REDUCE)},
    };
    for (int i = 0; i < 3; i++) {
        if (!regs[i].used || region_ok(s, regs[i].rank, regs[i].ref, a->count))
            continue;
        unsigned b = (unsigned)regs[i].ref.buf;
        dl__sched_say(why, cap, "step %zu: r%d %s[%zu:%zu] is outside the buffer (%zu elements)", k,
                      regs[i].rank, b < DL_BUF__COUNT ? buf_names[b] : "?", regs[i].ref.off,
                      regs[i].ref.off + a->count,
                      b < DL_BUF__COUNT ? dl_sched_buf_count(s, regs[i].rank, regs[i].ref.buf) : 0);
        return DL_ERR_RANGE;
    }
    return DL_OK;
}

/* A rank's send regions must not overlap what that rank writes in the same
 * step (its receives' dst and its local actions' dst): peers read the
 * sender's buffer directly while the step runs. An eager message's region
 * is exempt: it is copied when posted, before the rank writes. A
 * write-back message's region counts as written on its sender (its
 * receiver writes it), so that the sender sends no other part of it. Sorting the step's regions
 * by (rank, buffer, start) lets one sweep find any such overlap. */
static dl_status_t check_step_overlap(const dl_sched_t *s, size_t step, touch_t *t, char *why,
                                      size_t cap)
{
    const dl_step_t *st = &s->steps[step];
    size_t nt = 0;
    for (size_t i = st->first; i < st->first + st->n; i++) {
        const dl_action_t *a = &s->actions[i];
        if (a->count == 0)
            continue;
        if (a->kind == DL_ACT_MSG && a->back) /* its receiver writes the sender's region */
            t[nt++] =
                (touch_t){a->src_rank, a->src.buf, a->src.off, a->src.off + a->count, false, i};
        else if (a->kind == DL_ACT_MSG && !a->eager)
            t[nt++] =
                (touch_t){a->src_rank, a->src.buf, a->src.off, a->src.off + a->count, true, i};
        t[nt++] = (touch_t){a->dst_rank, a->dst.buf, a->dst.off, a->dst.off + a->count, false, i};
    }
    qsort(t, nt, sizeof(*t), touch_cmp);

    size_t send_hi = 0, write_hi = 0, send_at = 0, write_at = 0;
    for (size_t i = 0; i < nt; i++) {
        if (i == 0 || t[i].rank != t[i - 1].rank || t[i].buf != t[i - 1].buf)
            send_hi = write_hi = 0;
        /* Anything that started earlier and ends after this start overlaps. */
        size_t other_hi = t[i].is_send ? write_hi : send_hi;
        if (t[i].lo < other_hi) {
            size_t send = t[i].is_send ? t[i].action : send_at;
            size_t write = t[i].is_send ? write_at : t[i].action;
            const dl_action_t *sa = &s->actions[send], *wa = &s->actions[write];
            dl__sched_say(
                why, cap, "step %zu: r%d sends %s[%zu:%zu] and writes %s[%zu:%zu] in the same step",
                step + 1, t[i].rank, buf_names[sa->src.buf], sa->src.off, sa->src.off + sa->count,
                buf_names[wa->dst.buf], wa->dst.off, wa->dst.off + wa->count);
            return DL_ERR_INVALID;
        }
        if (t[i].is_send && t[i].hi > send_hi) {
            send_hi = t[i].hi;
            send_at = t[i].action;
        } else if (!t[i].is_send && t[i].hi > write_hi) {
            write_hi = t[i].hi;
            write_at = t[i].action;
        }
    }
    return DL_OK;
}

dl_status_t dl_sched_validate(const dl_sched_t *s, char *why, size_t why_cap)
{
    dl__sched_say(why, why_cap, "ok");
    if (s == NULL || s->args.nranks < 1 || (unsigned)s->args.coll >= DL_COLL__COUNT) {
        dl__sched_say(why, why_cap, "not a schedule (no ranks or no collective)");
        return DL_ERR_INVALID;
    }
    if (s->n_actions > 0 && s->actions == NULL) {
        dl__sched_say(why, why_cap, "%zu actions but no action array", s->n_actions);
        return DL_ERR_INVALID;
    }

    size_t max_step = 0;
    for (size_t k = 0; k < s->n_steps; k++) {
        const dl_step_t *st = &s->steps[k];
        if (st->first > s->n_actions || st->n > s->n_actions - st->first) {
            dl__sched_say(why, why_cap, "step %zu: actions [%zu, %zu) beyond the %zu actions",
                          k + 1, st->first, st->first + st->n, s->n_actions);
            return DL_ERR_INVALID;
        }
        for (size_t i = st->first; i < st->first + st->n; i++) {
            dl_status_t rc = check_action(s, k, &s->actions[i], why, why_cap);
            if (rc != DL_OK)
                return rc;
        }
        if (st->n > max_step)
            max_step = st->n;
    }

    touch_t *t = malloc((2 * max_step + 1) * sizeof(*t));
    if (t == NULL) {
        dl__sched_say(why, why_cap, "out of memory");
        return DL_ERR_NOMEM;
    }
    dl_status_t rc = DL_OK;
    for (size_t k = 0; k < s->n_steps && rc == DL_OK; k++)
        rc = check_step_overlap(s, k, t, why, why_cap);
    free(t);
    return rc;
}
