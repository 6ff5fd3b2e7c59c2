/* See stepview.h. */
#include <stdlib.h>
#include <string.h>

#include "distlab/dtype.h"
#include "lab/session/stepview.h"

static void drop(lab_stepview_t *v)
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

void lab_stepview_fini(lab_stepview_t *v)
{
    drop(v);
}

size_t lab_stepview_index(int64_t len, size_t shown, size_t i)
{
    if ((int64_t)shown >= len)
        return i;
    size_t head = shown / 2;
    return i < head ? i : (size_t)len - (shown - i);
}

/* Builds the schedule the records were made by, with every step's
 * description in world ranks. */
static bool build(lab_stepview_t *v, const lab_step_rec_t *rec)
{
    dl_sched_t *s = NULL;
    if (dl_sched_build(rec->algo, &rec->args, v->elem_size, &s) != DL_OK)
        return false;
    dl_step_desc_t *descs = calloc(s->n_steps ? s->n_steps : 1, sizeof(*descs));
    size_t k = 0;
    if (descs == NULL || (int)s->n_steps != rec->n)
        goto err_free_descs;
    for (; k < s->n_steps; k++)
        if (dl_step_describe(s, k, v->elem_size, rec->group, &descs[k]) != DL_OK)
            goto err_free_descs;
    v->s = s;
    v->descs = descs;
    return true;

err_free_descs:
    while (k-- > 0)
        dl_step_desc_free(&descs[k]);
    free(descs);
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
static bool chunk_map(lab_stepview_t *v, const lab_step_rec_t *rec)
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

bool lab_stepview_sync(lab_stepview_t *v, const lab_stepper_t *st, const lab_step_rec_t *rec)
{
    (void)st;
    const dl_tensor_t *t = NULL;
    for (int g = 0; g < rec->ngroup && t == NULL; g++)
        t = rec->bufs[rec->group[g]];
    if (t == NULL || !rec->args_known)
        return false;
    size_t esz = dl_dtype_size(t->dtype);
    if (v->tried && strcmp(v->coll, rec->coll) == 0 && strcmp(v->algo, rec->algo) == 0 &&
        v->ngroup == rec->ngroup && v->elem_size == esz && v->args.count == rec->args.count &&
        v->args.root == rec->args.root && v->args.op == rec->args.op)
        return v->s != NULL;
    drop(v);
    memcpy(v->coll, rec->coll, sizeof(v->coll));
    memcpy(v->algo, rec->algo, sizeof(v->algo));
    v->args = rec->args;
    v->ngroup = rec->ngroup;
    v->elem_size = esz;
    v->tried = true;
    if (!build(v, rec) || !chunk_map(v, rec)) {
        drop(v);
        v->tried = true;
        return false;
    }
    for (size_t k = 0; k < v->s->n_steps; k++)
        dl_step_desc_widths(&v->descs[k], &v->widths);
    dl_sched_stats(v->s, esz, -1, -1, &v->stats);
    return true;
}

int lab_stepview_chunk(const lab_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i)
{
    int g = group_rank(rec, r);
    if (v->s == NULL || g < 0 || rec->bufs[r] == NULL || g >= v->ngroup)
        return -1;
    size_t at = lab_stepview_index(rec->lens[r], rec->bufs[r]->numel, i);
    return at < v->nelem[g] ? v->chunk[g][at] : -1;
}

const dl_step_desc_t *lab_stepview_desc(const lab_stepview_t *v, int k)
{
    if (v->s == NULL || k < 1 || (size_t)k > v->s->n_steps)
        return NULL;
    return &v->descs[k - 1];
}

size_t lab_stepview_bytes(const lab_stepper_t *st, int k)
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

bool lab_stepview_symbol(lab_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i, char *buf,
                         size_t cap)
{
    return lab_stepview_symbol_in(v, rec, r, false, i, buf, cap);
}

bool lab_stepview_symbol_in(lab_stepview_t *v, const lab_step_rec_t *rec, int r, bool tmp, size_t i,
                            char *buf, size_t cap)
{
    int g = group_rank(rec, r);
    const dl_tensor_t *b = tmp ? rec->tmps[r] : rec->bufs[r];
    if (v->s == NULL || g < 0 || b == NULL || rec->k < 0 || (size_t)rec->k > v->s->n_steps)
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
    size_t at = lab_stepview_index(tmp ? rec->tmp_lens[r] : rec->lens[r], b->numel, i);
    size_t n = tmp ? dl_sched_buf_count(v->s, g, DL_BUF_TMP) : v->nelem[g];
    if (at >= n)
        return false;
    dl_symsim_format(v->sim, g, tmp ? DL_BUF_TMP : v->shown[g], at, buf, cap);
    return true;
}

size_t lab_stepview_msg_line(const lab_stepview_t *v, const dl_step_desc_t *d, size_t m, char *buf,
                             size_t cap)
{
    dl_msg_widths_t w = v->s != NULL ? v->widths : (dl_msg_widths_t){0};
    dl_step_desc_widths(d, &w);
    return dl_msg_format(&d->msgs[m], &w, buf, cap);
}

const char *lab_stepview_bytes_text(size_t bytes, char *buf, size_t cap)
{
    return dl_bytes_format(bytes, buf, cap);
}

const char *lab_stepview_buf_name(const lab_stepview_t *v)
{
    return v->s != NULL && v->shown != NULL ? dl_buf_name(v->shown[0]) : "buf";
}

double lab_stepview_took_us(const lab_stepper_t *st, int k)
{
    double sum = 0;
    for (size_t i = 0; i < lab_stepper_nrecs(st); i++) {
        const lab_step_rec_t *x = lab_stepper_rec(st, i);
        if (x->k >= 1 && x->k <= k)
            sum += x->took_us;
    }
    return sum;
}
