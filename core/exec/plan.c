/* A rank's plan of a schedule: see plan.h. */
#include <assert.h>
#include <stdlib.h>

#include "exec/plan.h"

bool dl__exec_sends_span(const dl_sched_t *s, int me, dl_buf_t b, size_t seg_count)
{
    for (size_t i = 0; i < s->n_actions && seg_count > 0; i++) {
        const dl_action_t *a = &s->actions[i];
        if (a->kind != DL_ACT_MSG || a->src_rank != me || a->dst_rank == me || a->src.buf != b ||
            a->count == 0)
            continue;
        if (a->src.off / seg_count != (a->src.off + a->count - 1) / seg_count)
            return true;
    }
    return false;
}

/* Whether rank me's part of step st is one share summed from every sender
 * and written back (share.c): only write-backs that reduce into one region
 * in place, and at most a scale of that region. Its buffer, or -1. */
static int fuse_buf(const dl_sched_t *s, const dl_step_t *st, int me)
{
    const dl_action_t *first = NULL;
    for (size_t i = 0; i < st->n; i++) {
        const dl_action_t *a = &s->actions[st->first + i];
        if (a->dst_rank != me || a->count == 0)
            continue;
        if (first == NULL) {
            if (a->kind != DL_ACT_MSG || !a->back)
                return -1;
            first = a;
        }
        bool same = a->dst.buf == first->dst.buf && a->dst.off == first->dst.off &&
                    a->count == first->count;
        if (a->kind == DL_ACT_SCALE && same)
            continue;
        if (a->kind != DL_ACT_MSG || !a->back || a->combine != DL_COMBINE_REDUCE || !same ||
            a->acc.buf != a->dst.buf || a->acc.off != a->dst.off)
            return -1;
    }
    return first != NULL ? (int)first->dst.buf : -1;
}

static bool is_send(const dl_action_t *a, int me)
{
    return a->kind == DL_ACT_MSG && a->src_rank == me && a->dst_rank != me;
}

static bool is_recv(const dl_action_t *a, int me)
{
    return a->kind == DL_ACT_MSG && a->dst_rank == me;
}

static bool is_local(const dl_action_t *a, int me)
{
    return a->kind != DL_ACT_MSG && a->src_rank == me && a->count > 0;
}

dl_exec_plan_t *dl__exec_plan_new(const dl_sched_t *s, int me)
{
    dl_exec_plan_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->s = s;
    p->me = me;
    p->steps = calloc(s->n_steps > 0 ? s->n_steps : 1, sizeof(*p->steps));
    p->idx = malloc((s->n_actions > 0 ? s->n_actions : 1) * sizeof(*p->idx));
    if (p->steps == NULL || p->idx == NULL) {
        dl__exec_plan_free(p);
        return NULL;
    }
    /* Each action is in one list at most: idx holds them all. */
    bool (*const kinds[3])(const dl_action_t *, int) = {is_send, is_recv, is_local};
    size_t at = 0;
    for (size_t k = 0; k < s->n_steps; k++) {
        const dl_step_t *st = &s->steps[k];
        dl_exec_plan_step_t *ps = &p->steps[k];
        ps->first = at;
        uint32_t *counts[3] = {&ps->n_sends, &ps->n_recvs, &ps->n_locals};
        for (int kind = 0; kind < 3; kind++)
            for (size_t i = st->first; i < st->first + st->n; i++)
                if (kinds[kind](&s->actions[i], me)) {
                    assert(at < s->n_actions); /* steps do not share actions */
                    p->idx[at++] = (uint32_t)i;
                    (*counts[kind])++;
                }
        ps->fuse_buf = fuse_buf(s, st, me);
        for (size_t i = st->first; i < st->first + st->n; i++)
            ps->fuse_scale |= s->actions[i].kind == DL_ACT_SCALE && s->actions[i].dst_rank == me;
    }
    for (int b = 0; b < DL_BUF__COUNT; b++)
        p->spans[b] = dl__exec_sends_span(s, me, (dl_buf_t)b, s->args.count);
    return p;
}

void dl__exec_plan_free(dl_exec_plan_t *p)
{
    if (p == NULL)
        return;
    free(p->steps);
    free(p->idx);
    free(p);
}
