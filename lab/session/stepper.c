/* See stepper.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distlab/dtype.h"
#include "lab/proto/proto.h"
#include "lab/session/stepper.h"

dl_status_t lab_stepper_init(lab_stepper_t *st, int np)
{
    memset(st, 0, sizeof(*st));
    st->np = np;
    st->recorded = -1;
    return DL_OK;
}

/* Drops the per-step state of the collective in flight. */
static void drop_steps(lab_stepper_t *st)
{
    for (int k = 0; st->descs != NULL && k <= st->steps; k++) {
        dl_step_desc_free(&st->descs[k]);
        for (int r = 0; r < st->np; r++) {
            dl_tensor_free(st->states[(size_t)k * (size_t)st->np + (size_t)r]);
            dl_tensor_free(st->tmps[(size_t)k * (size_t)st->np + (size_t)r]);
        }
    }
    free(st->descs);
    free(st->npaused);
    free(st->nran);
    free(st->states);
    free(st->lens);
    free(st->tmps);
    free(st->tmp_lens);
    free(st->group);
    st->tmps = NULL;
    st->tmp_lens = NULL;
    st->descs = NULL;
    st->npaused = st->nran = NULL;
    st->states = NULL;
    st->lens = NULL;
    st->group = NULL;
    st->ngroup = 0;
    st->active = false;
    st->cur = 0;
    st->recorded = -1;
    st->free_run = false;
}

static void rec_free(lab_step_rec_t *rec)
{
    if (rec == NULL)
        return;
    dl_step_desc_free(&rec->desc);
    for (int r = 0; r < rec->np; r++) {
        if (rec->bufs != NULL)
            dl_tensor_free(rec->bufs[r]);
        if (rec->changed != NULL)
            free(rec->changed[r]);
        if (rec->tmps != NULL)
            dl_tensor_free(rec->tmps[r]);
        if (rec->tmp_changed != NULL)
            free(rec->tmp_changed[r]);
    }
    free(rec->tmps);
    free(rec->tmp_lens);
    free(rec->tmp_changed);
    free(rec->tmp_written);
    free(rec->bufs);
    free(rec->lens);
    free(rec->changed);
    free(rec->group);
    free(rec);
}

static void drop_recs(lab_stepper_t *st)
{
    for (size_t i = 0; i < st->nrecs; i++)
        rec_free(st->recs[i]);
    free(st->recs);
    st->recs = NULL;
    st->nrecs = st->view = 0;
}

void lab_stepper_fini(lab_stepper_t *st)
{
    drop_steps(st);
    drop_recs(st);
}

void lab_stepper_abort(lab_stepper_t *st)
{
    drop_steps(st);
}

/* ---- rendering ---- */

/* The text of a 1-D tensor with a line of carets under the elements whose
 * changed[] is set. The element tokens between the brackets are, in order,
 * the shown elements (all of them, or torch's first and last three around
 * "..."), so token k is changed[k]. */
char *lab_stepper_mark(const char *prefix, const char *txt, const bool *changed, size_t n)
{
    size_t plen = strlen(prefix);
    const char *open = strchr(txt, '['), *close = strrchr(txt, ']');
    char *out = NULL;
    size_t out_len = 0;
    FILE *fp = open_memstream(&out, &out_len);
    if (fp == NULL)
        return NULL;
    size_t tok = 0;
    const char *line = txt;
    while (*line) {
        size_t llen = strcspn(line, "\n");
        if (line == txt)
            fputs(prefix, fp);
        fwrite(line, 1, llen, fp);
        fputc('\n', fp);
        /* Continuation lines are indented by torch already; the prefix
         * shifts every line's columns alike. */
        size_t shift = line == txt ? plen : 0;
        char *carets = calloc(llen + shift + 1, 1);
        bool any = false;
        if (carets != NULL) {
            memset(carets, ' ', llen + shift);
            for (size_t i = 0; i < llen;) {
                const char *p = line + i;
                if (open == NULL || p <= open || p >= close) {
                    i++;
                    continue;
                }
                size_t len = strcspn(p, " ,[]\n");
                if (len == 0) {
                    i++;
                    continue;
                }
                if (len != 3 || strncmp(p, "...", 3) != 0) {
                    if (tok < n && changed[tok]) {
                        memset(carets + shift + i, '^', len);
                        any = true;
                    }
                    tok++;
                }
                i += len;
            }
            if (any) {
                size_t end = llen + shift;
                while (end > 0 && carets[end - 1] == ' ')
                    end--;
                fwrite(carets, 1, end, fp);
                fputc('\n', fp);
            }
            free(carets);
        }
        line += llen;
        if (*line == '\n')
            line++;
    }
    fclose(fp);
    return out;
}

/* One rank's buffer (the elements its print shows, of a buffer of len),
 * with the changed ones marked. */
static void render_buf(FILE *fp, const char *prefix, const dl_tensor_t *t, int64_t len,
                       const bool *changed)
{
    if (t == NULL) {
        fprintf(fp, "%s(no state)\n", prefix);
        return;
    }
    char *txt = dl_tensor_format_shown(t->dtype, 1, &len, t->device, t->data);
    char *marked = NULL;
    if (changed != NULL && txt != NULL)
        marked = lab_stepper_mark(prefix, txt, changed, t->numel);
    if (marked != NULL)
        fputs(marked, fp);
    free(marked);
    free(txt);
}

/* The messages of a step, one per line, in the columns they share. */
static void render_msgs(FILE *fp, const dl_step_desc_t *d)
{
    dl_msg_widths_t w = {0};
    dl_step_desc_widths(d, &w);
    for (size_t i = 0; i < d->n_msgs; i++) {
        size_t len = dl_msg_format(&d->msgs[i], &w, NULL, 0);
        char *line = malloc(len + 1);
        if (line == NULL)
            continue;
        dl_msg_format(&d->msgs[i], &w, line, len + 1);
        fprintf(fp, "  %s\n", line);
        free(line);
    }
}

char *lab_step_render(const lab_step_rec_t *rec)
{
    char *out = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len);
    if (fp == NULL)
        return NULL;
    if (rec->ran_from > 0)
        fprintf(fp, "steps %d-%d ran (`back` shows each)\n", rec->ran_from, rec->k);
    if (rec->k == 0) {
        fprintf(fp,
                "%s with %s: %d step%s; before step 1 (`next` runs a step, `continue` the rest)\n",
                rec->coll, rec->algo, rec->n, rec->n == 1 ? "" : "s");
    } else {
        fprintf(fp, "step %d/%d  %s\n", rec->k, rec->n,
                rec->desc.phase != NULL ? rec->desc.phase : "");
        render_msgs(fp, &rec->desc);
    }
    for (int i = 0; i < rec->ngroup; i++) {
        int r = rec->group[i];
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "  rank %-3d ", r);
        render_buf(fp, prefix, rec->bufs[r], rec->lens[r], rec->changed[r]);
        if (rec->tmps[r] != NULL && rec->tmp_written[r])
            render_buf(fp, "    tmp    ", rec->tmps[r], rec->tmp_lens[r], rec->tmp_changed[r]);
    }
    if (fclose(fp) != 0) {
        free(out);
        return NULL;
    }
    if (len > 0 && out[len - 1] == '\n')
        out[len - 1] = '\0';
    return out;
}

/* ---- recording ---- */

/* Which shown elements of t differ from prev's (none without prev, or when
 * the two are not alike). */
static bool *changed_since(const dl_tensor_t *t, const dl_tensor_t *prev)
{
    bool *changed = calloc(t->numel ? t->numel : 1, sizeof(bool));
    if (changed == NULL || prev == NULL || prev->numel != t->numel || prev->dtype != t->dtype)
        return changed;
    size_t esz = dl_dtype_size(t->dtype);
    for (size_t i = 0; i < t->numel; i++)
        changed[i] =
            memcmp((const char *)t->data + i * esz, (const char *)prev->data + i * esz, esz) != 0;
    return changed;
}

/* Records step k, which every rank of the group has run: the record takes
 * the step's description and states; what changed is against the record
 * of step k - 1. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static lab_step_rec_t *record(lab_stepper_t *st, int k)
{
    size_t np = (size_t)st->np;
    lab_step_rec_t *rec = calloc(1, sizeof(*rec));
    lab_step_rec_t **recs = realloc(st->recs, sizeof(*recs) * (st->nrecs + 1));
    if (recs != NULL)
        st->recs = recs;
    if (rec == NULL || recs == NULL)
        goto err_free_rec;
    rec->np = st->np;
    rec->bufs = calloc(np, sizeof(*rec->bufs));
    rec->lens = calloc(np, sizeof(*rec->lens));
    rec->changed = calloc(np, sizeof(*rec->changed));
    rec->group = calloc((size_t)st->ngroup, sizeof(*rec->group));
    rec->tmps = calloc(np, sizeof(*rec->tmps));
    rec->tmp_lens = calloc(np, sizeof(*rec->tmp_lens));
    rec->tmp_changed = calloc(np, sizeof(*rec->tmp_changed));
    rec->tmp_written = calloc(np, sizeof(*rec->tmp_written));
    if (rec->bufs == NULL || rec->lens == NULL || rec->changed == NULL || rec->group == NULL ||
        rec->tmps == NULL || rec->tmp_lens == NULL || rec->tmp_changed == NULL ||
        rec->tmp_written == NULL)
        goto err_free_rec;
    uint64_t now = now_ns();
    if (k > 0 && st->mark_ns != 0)
        rec->took_us = (double)(now - st->mark_ns) / 1e3;
    st->mark_ns = now;
    const lab_step_rec_t *prev =
        st->nrecs > 0 && st->recs[st->nrecs - 1]->k == k - 1 ? st->recs[st->nrecs - 1] : NULL;
    for (int i = 0; i < st->ngroup; i++) {
        size_t r = (size_t)st->group[i], at = (size_t)k * np + r;
        if (st->states[at] == NULL)
            continue;
        rec->changed[r] = changed_since(st->states[at], prev != NULL ? prev->bufs[r] : NULL);
        if (rec->changed[r] == NULL)
            goto err_free_rec;
        rec->bufs[r] = st->states[at];
        rec->lens[r] = st->lens[at];
        st->states[at] = NULL;
        if (st->tmps[at] == NULL)
            continue;
        rec->tmp_changed[r] = changed_since(st->tmps[at], prev != NULL ? prev->tmps[r] : NULL);
        if (rec->tmp_changed[r] == NULL)
            goto err_free_rec;
        rec->tmps[r] = st->tmps[at];
        rec->tmp_lens[r] = st->tmp_lens[at];
        st->tmps[at] = NULL;
        /* It holds data once a step has written it. */
        const dl_step_desc_t *d = &st->descs[k];
        rec->tmp_written[r] = prev != NULL && prev->tmp_written[r];
        for (size_t m = 0; m < d->n_msgs && k > 0; m++)
            rec->tmp_written[r] |=
                d->msgs[m].dst_rank == (int)r && d->msgs[m].dst.buf == DL_BUF_TMP;
    }
    memcpy(rec->group, st->group, sizeof(*rec->group) * (size_t)st->ngroup);
    rec->ngroup = st->ngroup;
    rec->k = k;
    rec->n = st->steps;
    memcpy(rec->coll, st->coll, sizeof(rec->coll));
    memcpy(rec->algo, st->algo, sizeof(rec->algo));
    rec->args = st->args;
    rec->args_known = st->args_known;
    rec->desc = st->descs[k];
    memset(&st->descs[k], 0, sizeof(st->descs[k]));
    st->recs[st->nrecs++] = rec;
    st->view = st->nrecs - 1;
    return rec;

err_free_rec:
    rec_free(rec);
    return NULL;
}

/* ---- folding events ---- */

static dl_status_t begin_collective(lab_stepper_t *st, const json_t *ev)
{
    drop_steps(st);
    drop_recs(st);
    json_t *group = json_object_get(ev, "group");
    int steps = (int)lab_json_int(ev, "steps", 0);
    if (!json_is_array(group) || json_array_size(group) < 1 ||
        json_array_size(group) > (size_t)st->np || steps < 1 || steps > 100000)
        return DL_ERR_PROTOCOL;
    st->steps = steps;
    st->ngroup = (int)json_array_size(group);
    size_t nk = (size_t)steps + 1;
    st->group = calloc((size_t)st->ngroup, sizeof(int));
    st->descs = calloc(nk, sizeof(*st->descs));
    st->npaused = calloc(nk, sizeof(int));
    st->nran = calloc(nk, sizeof(int));
    st->states = calloc(nk * (size_t)st->np, sizeof(dl_tensor_t *));
    st->lens = calloc(nk * (size_t)st->np, sizeof(int64_t));
    st->tmps = calloc(nk * (size_t)st->np, sizeof(dl_tensor_t *));
    st->tmp_lens = calloc(nk * (size_t)st->np, sizeof(int64_t));
    if (st->group == NULL || st->descs == NULL || st->npaused == NULL || st->nran == NULL ||
        st->states == NULL || st->lens == NULL || st->tmps == NULL || st->tmp_lens == NULL) {
        drop_steps(st);
        return DL_ERR_NOMEM;
    }
    for (int i = 0; i < st->ngroup; i++) {
        long long g = json_integer_value(json_array_get(group, (size_t)i));
        if (g < 0 || g >= st->np) {
            drop_steps(st);
            return DL_ERR_PROTOCOL;
        }
        st->group[i] = (int)g;
    }
    st->descs[0].n = steps;
    snprintf(st->coll, sizeof(st->coll), "%s", lab_json_str(ev, "coll", "?"));
    snprintf(st->algo, sizeof(st->algo), "%s", lab_json_str(ev, "algo", "?"));
    memset(&st->args, 0, sizeof(st->args));
    st->args_known = dl_coll_parse(st->coll, &st->args.coll) == DL_OK &&
                     lab_json_int(ev, "count", -1) >= 0 &&
                     dl_op_parse(lab_json_str(ev, "op", ""), &st->args.op) == DL_OK;
    st->args.nranks = st->ngroup;
    st->args.count = (size_t)lab_json_int(ev, "count", 0);
    st->args.root = (int)lab_json_int(ev, "root", 0);
    if (st->args.root < 0 || st->args.root >= st->ngroup)
        st->args_known = false;
    st->active = true;
    return DL_OK;
}

bool lab_stepper_in_group(const lab_stepper_t *st, int rank)
{
    for (int i = 0; i < st->ngroup; i++)
        if (st->group[i] == rank)
            return true;
    return false;
}

/* A state event's blob is the buffer's shown elements, then (with
 * "tmp_shape") tmp_bytes of the scratch buffer's: buf_p gets a frame of the
 * first, tmp_p one of the second (its json is new; NULL without one). */
static dl_status_t split_tmp(const dl_frame_t *f, dl_frame_t *buf_p, dl_frame_t *tmp_p)
{
    json_t *shape = json_object_get(f->json, "tmp_shape");
    if (shape == NULL)
        return DL_OK;
    long long bytes = lab_json_int(f->json, "tmp_bytes", -1);
    if (bytes < 0 || (size_t)bytes > f->blob_len)
        return DL_ERR_PROTOCOL;
    buf_p->blob_len = f->blob_len - (size_t)bytes;
    tmp_p->json = json_pack("{s:O, s:O, s:b}", "dtype", json_object_get(f->json, "dtype"), "shape",
                            shape, "shown", json_is_true(json_object_get(f->json, "tmp_shown")));
    if (tmp_p->json == NULL)
        return DL_ERR_PROTOCOL;
    tmp_p->blob = (uint8_t *)f->blob + buf_p->blob_len;
    tmp_p->blob_len = (size_t)bytes;
    return DL_OK;
}

/* A 1-D state from a frame into *t_p (its whole length in *len_p); a
 * malformed one is dropped. */
static void keep_state(const dl_frame_t *f, dl_tensor_t **t_p, int64_t *len_p)
{
    dl_tensor_t *t = NULL;
    int ndim = 0;
    int64_t shape[DL_MAX_DIMS];
    if (lab_snap_shown(f, &ndim, shape, &t) == DL_OK && ndim == 1) {
        dl_tensor_free(*t_p);
        *t_p = t;
        *len_p = shape[0];
    } else {
        dl_tensor_free(t);
    }
}

/* What step `step` does: the description the group's rank 0 sends, or at
 * least the phase every rank's event names. */
static void fold_desc(lab_stepper_t *st, int step, const json_t *ev)
{
    dl_step_desc_t *d = &st->descs[step];
    json_t *j = json_object_get(ev, "desc");
    dl_step_desc_t got;
    if (j != NULL && dl_step_desc_from_json(j, st->np, &got) == DL_OK) {
        if (got.k == step && got.n == st->steps) {
            dl_step_desc_free(d);
            *d = got;
        } else {
            dl_step_desc_free(&got);
        }
    }
    if (d->phase == NULL) {
        d->phase = strdup(lab_json_str(ev, "phase", ""));
        d->k = step;
        d->n = st->steps;
    }
}

/* Records every step that every rank has run, in order. Returns the record
 * to show now, if any. */
static const lab_step_rec_t *record_ready(lab_stepper_t *st, lab_step_event_t *ev_p)
{
    const lab_step_rec_t *show = NULL;
    while (st->recorded < st->steps && st->recorded >= 0 &&
           st->nran[st->recorded + 1] == st->ngroup) {
        int k = ++st->recorded;
        lab_step_rec_t *rec = record(st, k);
        *ev_p = LAB_STEP_RAN;
        bool last = k == st->steps;
        if (!st->free_run || last)
            show = rec;
        if (last) {
            /* Finished: the records stay for back/forward. */
            if (rec != NULL && st->free_run && k > st->free_from)
                rec->ran_from = st->free_from;
            drop_steps(st);
            break;
        }
    }
    return show;
}

lab_step_event_t lab_stepper_fold(lab_stepper_t *st, int rank, const dl_frame_t *f,
                                  const lab_step_rec_t **rec_p)
{
    const json_t *ev = f->json;
    *rec_p = NULL;
    int step = (int)lab_json_int(ev, "step", 0);
    bool done = json_is_true(json_object_get(ev, "done"));
    if (!done && step == 1 && !(st->active && st->cur <= 1 && st->recorded <= 0)) {
        if (begin_collective(st, ev) != DL_OK)
            return LAB_STEP_NOTHING;
    }
    if (!st->active || step < 1 || step > st->steps || !lab_stepper_in_group(st, rank))
        return LAB_STEP_NOTHING;
    /* A state: before step 1 (with its begin event) or after `step`. */
    int k = done ? step : step - 1;
    if (f->blob != NULL || json_object_get(ev, "shape") != NULL) {
        if (done || step == 1) {
            size_t at = (size_t)k * (size_t)st->np + (size_t)rank;
            dl_frame_t buf = *f, tmp = {0};
            if (split_tmp(f, &buf, &tmp) == DL_OK) {
                keep_state(&buf, &st->states[at], &st->lens[at]);
                if (tmp.json != NULL)
                    keep_state(&tmp, &st->tmps[at], &st->tmp_lens[at]);
            }
            json_decref(tmp.json);
        }
    }
    lab_step_event_t what = LAB_STEP_NOTHING;
    if (done) {
        st->nran[step]++;
        *rec_p = record_ready(st, &what);
        return what;
    }
    fold_desc(st, step, ev);
    if (step == 1 && ++st->nran[0] == st->ngroup) {
        /* Every rank's state before the first step. */
        *rec_p = record(st, 0);
        st->recorded = 0;
    }
    if (json_is_true(json_object_get(ev, "pause")) && ++st->npaused[step] == st->ngroup) {
        st->cur = step;
        return LAB_STEP_PAUSED;
    }
    return *rec_p != NULL ? LAB_STEP_RAN : LAB_STEP_NOTHING;
}

bool lab_stepper_paused(const lab_stepper_t *st)
{
    return st->active && st->cur > 0 && st->npaused[st->cur] == st->ngroup;
}

void lab_stepper_go(lab_stepper_t *st, bool run)
{
    if (!st->active || st->cur == 0)
        return;
    if (run && !st->free_run) {
        st->free_run = true;
        st->free_from = st->cur;
    }
    st->npaused[st->cur] = 0;
    st->cur = 0;
    st->mark_ns = now_ns();
}

const lab_step_rec_t *lab_stepper_back(lab_stepper_t *st, const char **why_p)
{
    if (st->nrecs == 0) {
        *why_p = "no step recorded yet: `step on`, then run a collective";
        return NULL;
    }
    if (st->view == 0) {
        *why_p = "already at the state before the first step";
        return NULL;
    }
    return st->recs[--st->view];
}

const lab_step_rec_t *lab_stepper_forward(lab_stepper_t *st, const char **why_p)
{
    if (st->nrecs == 0) {
        *why_p = "no step recorded yet: `step on`, then run a collective";
        return NULL;
    }
    if (st->view + 1 >= st->nrecs) {
        *why_p = st->active ? "at the latest step; `next` runs the next one"
                            : "at the last recorded step";
        return NULL;
    }
    return st->recs[++st->view];
}

size_t lab_stepper_nrecs(const lab_stepper_t *st)
{
    return st->nrecs;
}

const lab_step_rec_t *lab_stepper_rec(const lab_stepper_t *st, size_t i)
{
    return i < st->nrecs ? st->recs[i] : NULL;
}

size_t lab_stepper_viewed(const lab_stepper_t *st)
{
    return st->view;
}

char *lab_step_buf_text(const lab_step_rec_t *rec, int r)
{
    if (r < 0 || r >= rec->np || rec->bufs[r] == NULL)
        return NULL;
    const dl_tensor_t *b = rec->bufs[r];
    int64_t len = rec->lens[r];
    return dl_tensor_format_shown(b->dtype, 1, &len, b->device, b->data);
}

char *lab_step_tmp_text(const lab_step_rec_t *rec, int r)
{
    if (r < 0 || r >= rec->np || rec->tmps[r] == NULL || !rec->tmp_written[r])
        return NULL;
    const dl_tensor_t *b = rec->tmps[r];
    int64_t len = rec->tmp_lens[r];
    return dl_tensor_format_shown(b->dtype, 1, &len, b->device, b->data);
}
