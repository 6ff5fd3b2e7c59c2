/* See stepview.h. */
#include <stdlib.h>
#include <string.h>

#include "distlab/coll.h"
#include "distlab/dtype.h"
#include "tui/stepview.h"

static void drop(tui_stepview_t *v)
{
    if (v->s != NULL) {
        for (size_t k = 0; k < v->s->n_steps; k++)
            dl_step_desc_free(&v->descs[k]);
        for (int g = 0; g < v->ngroup; g++)
            free(v->chunk != NULL ? v->chunk[g] : NULL);
    }
    free(v->descs);
    free(v->chunk);
    free(v->nelem);
    free(v->shown);
    dl_symsim_free(v->sim);
    dl_sched_free(v->s);
    memset(v, 0, sizeof(*v));
}

void tui_stepview_fini(tui_stepview_t *v)
{
    drop(v);
}

size_t tui_stepview_index(int64_t len, size_t shown, size_t i)
{
    if ((int64_t)shown >= len)
        return i;
    size_t head = shown / 2;
    return i < head ? i : (size_t)len - (shown - i);
}

/* Whether two messages are the same move: ranks, ranges and bytes. */
static bool same_msg(const dl_msg_desc_t *a, const dl_msg_desc_t *b)
{
    return a->kind == b->kind && a->src_rank == b->src_rank && a->dst_rank == b->dst_rank &&
           a->src.buf == b->src.buf && a->src.first == b->src.first &&
           a->src.count == b->src.count && a->dst.buf == b->dst.buf &&
           a->dst.first == b->dst.first && a->bytes == b->bytes;
}

/* Whether schedule s, described in descs, is what the records show: its
 * step count, every rank's shown buffer length and every recorded step's
 * messages. */
static bool matches(const dl_sched_t *s, const dl_step_desc_t *descs, const lab_stepper_t *st,
                    const lab_step_rec_t *rec)
{
    if ((int)s->n_steps != rec->n)
        return false;
    for (int g = 0; g < rec->ngroup; g++) {
        int r = rec->group[g];
        size_t n = dl_sched_buf_count(s, g, DL_BUF_OUT);
        if (n == 0)
            n = dl_sched_buf_count(s, g, DL_BUF_IN);
        if (rec->bufs[r] != NULL && (int64_t)n != rec->lens[r])
            return false;
    }
    for (size_t i = 0; i < lab_stepper_nrecs(st); i++) {
        const lab_step_rec_t *x = lab_stepper_rec(st, i);
        if (x->k < 1 || x->k > rec->n || x->desc.msgs == NULL)
            continue;
        const dl_step_desc_t *d = &descs[x->k - 1];
        if (d->n_msgs != x->desc.n_msgs)
            return false;
        for (size_t m = 0; m < d->n_msgs; m++)
            if (!same_msg(&d->msgs[m], &x->desc.msgs[m]))
                return false;
    }
    return true;
}

/* Builds the schedule for one guess of the arguments the records do not
 * carry (count, root, op); keeps it in v when it matches. */
static bool try_build(tui_stepview_t *v, const lab_stepper_t *st, const lab_step_rec_t *rec,
                      dl_coll_args_t *args)
{
    dl_sched_t *s = NULL;
    if (dl_sched_build(rec->algo, args, v->elem_size, &s) != DL_OK)
        return false;
    dl_step_desc_t *descs = calloc(s->n_steps ? s->n_steps : 1, sizeof(*descs));
    size_t k = 0;
    if (descs == NULL)
        goto err_free_sched;
    for (; k < s->n_steps; k++)
        if (dl_step_describe(s, k, v->elem_size, rec->group, &descs[k]) != DL_OK)
            goto err_free_descs;
    if (!matches(s, descs, st, rec))
        goto err_free_descs;
    v->s = s;
    v->descs = descs;
    return true;

err_free_descs:
    while (k-- > 0)
        dl_step_desc_free(&descs[k]);
    free(descs);
err_free_sched:
    dl_sched_free(s);
    return false;
}

static int group_rank(const lab_step_rec_t *rec, int r)
{
    for (int g = 0; g < rec->ngroup; g++)
        if (rec->group[g] == r)
            return g;
    return -1;
}

/* Every element of a rank's shown buffer takes the chunk of the last
 * message (or local action) of the schedule that writes it. */
static bool chunk_map(tui_stepview_t *v, const lab_step_rec_t *rec)
{
    int n = rec->ngroup;
    v->chunk = calloc((size_t)n, sizeof(*v->chunk));
    v->nelem = calloc((size_t)n, sizeof(*v->nelem));
    v->shown = calloc((size_t)n, sizeof(*v->shown));
    if (v->chunk == NULL || v->nelem == NULL || v->shown == NULL)
        return false;
    for (int g = 0; g < n; g++) {
        v->shown[g] = DL_BUF_OUT;
        v->nelem[g] = dl_sched_buf_count(v->s, g, DL_BUF_OUT);
        if (v->nelem[g] == 0) {
            v->shown[g] = DL_BUF_IN;
            v->nelem[g] = dl_sched_buf_count(v->s, g, DL_BUF_IN);
        }
        v->chunk[g] = malloc((v->nelem[g] ? v->nelem[g] : 1) * sizeof(int));
        if (v->chunk[g] == NULL)
            return false;
        for (size_t i = 0; i < v->nelem[g]; i++)
            v->chunk[g][i] = -1;
    }
    for (size_t k = 0; k < v->s->n_steps; k++) {
        const dl_step_desc_t *d = &v->descs[k];
        for (size_t m = 0; m < d->n_msgs; m++) {
            const dl_msg_desc_t *msg = &d->msgs[m];
            int g = group_rank(rec, msg->dst_rank);
            if (msg->chunk < 0 || g < 0 || msg->dst.buf != v->shown[g])
                continue;
            for (size_t i = msg->dst.first; i < msg->dst.first + msg->dst.count; i++)
                if (i < v->nelem[g])
                    v->chunk[g][i] = msg->chunk;
        }
    }
    return true;
}

bool tui_stepview_sync(tui_stepview_t *v, const lab_stepper_t *st, const lab_step_rec_t *rec)
{
    const dl_tensor_t *t = NULL;
    int64_t len = 0;
    for (int g = 0; g < rec->ngroup && t == NULL; g++) {
        t = rec->bufs[rec->group[g]];
        len = rec->lens[rec->group[g]];
    }
    if (t == NULL)
        return false;
    size_t esz = dl_dtype_size(t->dtype);
    if (v->tried && strcmp(v->coll, rec->coll) == 0 && strcmp(v->algo, rec->algo) == 0 &&
        v->ngroup == rec->ngroup && v->len == len && v->elem_size == esz)
        return v->s != NULL;
    drop(v);
    memcpy(v->coll, rec->coll, sizeof(v->coll));
    memcpy(v->algo, rec->algo, sizeof(v->algo));
    v->ngroup = rec->ngroup;
    v->len = len;
    v->elem_size = esz;
    v->tried = true;
    dl_coll_t c;
    if (dl_coll_parse(rec->coll, &c) != DL_OK)
        return false;
    /* The count is the buffer's length or its share of it (coll.h); the
     * root and the op (avg adds a scale step) are tried in turn. */
    size_t counts[2] = {(size_t)len, (size_t)len / (size_t)rec->ngroup};
    int roots = dl_coll_has_root(c) ? rec->ngroup : 1;
    dl_op_t ops[2] = {DL_OP_SUM, DL_OP_AVG};
    for (int ci = 0; ci < 2; ci++)
        for (int root = 0; root < roots; root++)
            for (int oi = 0; oi < (dl_coll_has_op(c) ? 2 : 1); oi++) {
                dl_coll_args_t args = {.coll = c,
                                       .nranks = rec->ngroup,
                                       .root = root,
                                       .count = counts[ci],
                                       .op = ops[oi]};
                if (try_build(v, st, rec, &args))
                    goto built;
            }
    return false;

built:
    if (!chunk_map(v, rec)) {
        drop(v);
        v->tried = true;
        return false;
    }
    for (size_t k = 0; k < v->s->n_steps; k++)
        dl_step_desc_widths(&v->descs[k], &v->widths);
    dl_sched_stats(v->s, esz, -1, -1, &v->stats);
    return true;
}

int tui_stepview_chunk(const tui_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i)
{
    int g = group_rank(rec, r);
    if (v->s == NULL || g < 0 || rec->bufs[r] == NULL || g >= v->ngroup)
        return -1;
    size_t at = tui_stepview_index(rec->lens[r], rec->bufs[r]->numel, i);
    return at < v->nelem[g] ? v->chunk[g][at] : -1;
}

const dl_step_desc_t *tui_stepview_desc(const tui_stepview_t *v, int k)
{
    if (v->s == NULL || k < 1 || (size_t)k > v->s->n_steps)
        return NULL;
    return &v->descs[k - 1];
}

size_t tui_stepview_bytes(const lab_stepper_t *st, int k)
{
    size_t sum = 0;
    for (size_t i = 0; i < lab_stepper_nrecs(st); i++) {
        const lab_step_rec_t *x = lab_stepper_rec(st, i);
        if (x->k < 1 || x->k > k)
            continue;
        for (size_t m = 0; m < x->desc.n_msgs; m++)
            if (!dl_msg_is_local(x->desc.msgs[m].kind))
                sum += x->desc.msgs[m].bytes;
    }
    return sum;
}

bool tui_stepview_symbol(tui_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i, char *buf,
                         size_t cap)
{
    int g = group_rank(rec, r);
    if (v->s == NULL || g < 0 || rec->bufs[r] == NULL || rec->k < 0 ||
        (size_t)rec->k > v->s->n_steps)
        return false;
    if (v->sim != NULL && dl_symsim_steps_run(v->sim) > (size_t)rec->k) {
        dl_symsim_free(v->sim);
        v->sim = NULL;
    }
    if (v->sim == NULL && dl_symsim_new(v->s, &v->sim) != DL_OK)
        return false;
    char why[256];
    while (dl_symsim_steps_run(v->sim) < (size_t)rec->k)
        if (dl_symsim_step(v->sim, why, sizeof(why)) != DL_OK)
            return false;
    size_t at = tui_stepview_index(rec->lens[r], rec->bufs[r]->numel, i);
    if (at >= v->nelem[g])
        return false;
    dl_symsim_format(v->sim, g, v->shown[g], at, buf, cap);
    return true;
}
