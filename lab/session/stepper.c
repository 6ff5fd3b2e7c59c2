/* See stepper.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/dtype.h"
#include "lab/proto/proto.h"
#include "lab/session/stepper.h"

dl_status_t lab_stepper_init(lab_stepper_t *st, int np)
{
    memset(st, 0, sizeof(*st));
    st->np = np;
    st->rendered = -1;
    return DL_OK;
}

/* Drops the per-step state of the collective in flight. */
static void drop_steps(lab_stepper_t *st)
{
    for (int k = 0; st->phase != NULL && k <= st->steps; k++) {
        free(st->phase[k]);
        free(st->acts[k]);
        for (int r = 0; r < st->np; r++)
            dl_tensor_free(st->states[(size_t)k * (size_t)st->np + (size_t)r]);
    }
    free(st->phase);
    free(st->acts);
    free(st->npaused);
    free(st->nran);
    free(st->states);
    free(st->lens);
    free(st->group);
    st->phase = st->acts = NULL;
    st->npaused = st->nran = NULL;
    st->states = NULL;
    st->lens = NULL;
    st->group = NULL;
    st->ngroup = 0;
    st->active = false;
    st->cur = 0;
    st->rendered = -1;
    st->free_run = false;
}

static void drop_recs(lab_stepper_t *st)
{
    for (size_t i = 0; i < st->nrecs; i++)
        free(st->recs[i]);
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

static dl_tensor_t *state(const lab_stepper_t *st, int k, int rank)
{
    return st->states[(size_t)k * (size_t)st->np + (size_t)rank];
}

/* One rank's buffer (the elements its print shows, of a buffer of len),
 * with what changed since `prev` marked. */
static void render_rank(FILE *fp, int rank, const dl_tensor_t *t, int64_t len,
                        const dl_tensor_t *prev)
{
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "  rank %-3d ", rank);
    if (t == NULL) {
        fprintf(fp, "%s(no state)\n", prefix);
        return;
    }
    bool *changed = calloc(t->numel ? t->numel : 1, sizeof(bool));
    char *txt = dl_tensor_format_shown(t->dtype, 1, &len, t->device, t->data);
    char *marked = NULL;
    size_t esz = dl_dtype_size(t->dtype);
    for (size_t i = 0; changed != NULL && prev != NULL && prev->numel == t->numel && i < t->numel;
         i++)
        changed[i] =
            memcmp((const char *)t->data + i * esz, (const char *)prev->data + i * esz, esz) != 0;
    if (changed != NULL && txt != NULL)
        marked = lab_stepper_mark(prefix, txt, changed, t->numel);
    if (marked != NULL)
        fputs(marked, fp);
    free(marked);
    free(txt);
    free(changed);
}

static char *render_state(lab_stepper_t *st, int k, const char *header)
{
    char *out = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len);
    if (fp == NULL)
        return NULL;
    fputs(header, fp);
    if (k > 0 && st->acts[k] != NULL)
        fputs(st->acts[k], fp);
    for (int i = 0; i < st->ngroup; i++) {
        int r = st->group[i];
        render_rank(fp, r, state(st, k, r), st->lens[(size_t)k * (size_t)st->np + (size_t)r],
                    k > 0 ? state(st, k - 1, r) : NULL);
    }
    fclose(fp);
    if (len > 0 && out[len - 1] == '\n')
        out[len - 1] = '\0';
    return out;
}

static void record(lab_stepper_t *st, char *text)
{
    char **n = realloc(st->recs, sizeof(char *) * (st->nrecs + 1));
    if (n == NULL || text == NULL) {
        free(text);
        return;
    }
    st->recs = n;
    st->recs[st->nrecs++] = text;
    st->view = st->nrecs - 1;
}

/* The messages and local actions of a step, one per line. */
static char *render_actions(const json_t *acts)
{
    char *out = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len);
    if (fp == NULL)
        return NULL;
    size_t i;
    json_t *a;
    json_array_foreach(acts, i, a)
    {
        const char *kind = lab_json_str(a, "kind", "?");
        long long src = lab_json_int(a, "src", 0), dst = lab_json_int(a, "dst", 0);
        long long chunk = lab_json_int(a, "chunk", -1), count = lab_json_int(a, "count", 0);
        char ch[32] = "";
        if (chunk >= 0)
            snprintf(ch, sizeof(ch), "chunk %lld  ", chunk);
        if (strcmp(kind, "msg") == 0) {
            char from[16], to[16];
            snprintf(from, sizeof(from), "r%lld", src);
            snprintf(to, sizeof(to), "r%lld", dst);
            if (count == 0)
                fprintf(fp, "  %-4s -> %-4s signal\n", from, to);
            else
                fprintf(fp, "  %-4s -> %-4s %s%-6s (%lld element%s)\n", from, to, ch,
                        lab_json_str(a, "combine", "copy"), count, count == 1 ? "" : "s");
        } else {
            fprintf(fp, "  r%-3lld local %s%s (%lld element%s)\n", src, ch, kind, count,
                    count == 1 ? "" : "s");
        }
    }
    fclose(fp);
    return out;
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
    st->phase = calloc(nk, sizeof(char *));
    st->acts = calloc(nk, sizeof(char *));
    st->npaused = calloc(nk, sizeof(int));
    st->nran = calloc(nk, sizeof(int));
    st->states = calloc(nk * (size_t)st->np, sizeof(dl_tensor_t *));
    st->lens = calloc(nk * (size_t)st->np, sizeof(int64_t));
    if (st->group == NULL || st->phase == NULL || st->acts == NULL || st->npaused == NULL ||
        st->nran == NULL || st->states == NULL || st->lens == NULL) {
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
    snprintf(st->coll, sizeof(st->coll), "%s", lab_json_str(ev, "coll", "?"));
    snprintf(st->algo, sizeof(st->algo), "%s", lab_json_str(ev, "algo", "?"));
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

/* Records every step that every rank has run, in order. Returns the text to
 * show now, if any. */
static const char *render_ready(lab_stepper_t *st, lab_step_event_t *ev_p)
{
    const char *show = NULL;
    while (st->rendered < st->steps && st->rendered >= 0 &&
           st->nran[st->rendered + 1] == st->ngroup) {
        int k = ++st->rendered;
        char header[160];
        snprintf(header, sizeof(header), "step %d/%d  %s\n", k, st->steps,
                 st->phase[k] ? st->phase[k] : "");
        record(st, render_state(st, k, header));
        *ev_p = LAB_STEP_RAN;
        bool last = k == st->steps;
        if (!st->free_run || last)
            show = st->nrecs ? st->recs[st->nrecs - 1] : NULL;
        if (last) {
            /* Finished: the records stay for back/forward. */
            if (st->free_run && k > st->free_from) {
                char *both = NULL;
                if (asprintf(&both, "steps %d-%d ran (`back` shows each)\n%s", st->free_from,
                             st->steps, st->recs[st->nrecs - 1]) >= 0) {
                    free(st->recs[st->nrecs - 1]);
                    st->recs[st->nrecs - 1] = both;
                    show = both;
                }
            }
            drop_steps(st);
            break;
        }
    }
    return show;
}

lab_step_event_t lab_stepper_fold(lab_stepper_t *st, int rank, const dl_frame_t *f,
                                  const char **text_p)
{
    const json_t *ev = f->json;
    *text_p = NULL;
    int step = (int)lab_json_int(ev, "step", 0);
    bool done = json_is_true(json_object_get(ev, "done"));
    if (!done && step == 1 && !(st->active && st->cur <= 1 && st->rendered <= 0)) {
        if (begin_collective(st, ev) != DL_OK)
            return LAB_STEP_NOTHING;
    }
    if (!st->active || step < 1 || step > st->steps || !lab_stepper_in_group(st, rank))
        return LAB_STEP_NOTHING;
    /* A state: before step 1 (with its begin event) or after `step`. */
    int k = done ? step : step - 1;
    if (f->blob != NULL || json_object_get(ev, "shape") != NULL) {
        if (done || step == 1) {
            dl_tensor_t *t = NULL;
            int ndim = 0;
            int64_t shape[DL_MAX_DIMS];
            if (lab_snap_shown(f, &ndim, shape, &t) == DL_OK && ndim == 1) {
                size_t at = (size_t)k * (size_t)st->np + (size_t)rank;
                dl_tensor_free(st->states[at]);
                st->states[at] = t;
                st->lens[at] = shape[0];
            } else {
                dl_tensor_free(t);
            }
        }
    }
    lab_step_event_t what = LAB_STEP_NOTHING;
    if (done) {
        st->nran[step]++;
        *text_p = render_ready(st, &what);
        return what;
    }
    if (json_object_get(ev, "actions") != NULL) {
        free(st->acts[step]);
        st->acts[step] = render_actions(json_object_get(ev, "actions"));
    }
    if (st->phase[step] == NULL)
        st->phase[step] = strdup(lab_json_str(ev, "phase", ""));
    if (step == 1 && ++st->nran[0] == st->ngroup) {
        /* Every rank's state before the first step. */
        char header[200];
        snprintf(header, sizeof(header),
                 "%s with %s: %d step%s; before step 1 (`next` runs a step, `continue` the rest)\n",
                 st->coll, st->algo, st->steps, st->steps == 1 ? "" : "s");
        record(st, render_state(st, 0, header));
        st->rendered = 0;
        *text_p = st->recs[st->nrecs - 1];
    }
    if (json_is_true(json_object_get(ev, "pause")) && ++st->npaused[step] == st->ngroup) {
        st->cur = step;
        return LAB_STEP_PAUSED;
    }
    return *text_p != NULL ? LAB_STEP_RAN : LAB_STEP_NOTHING;
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
}

const char *lab_stepper_back(lab_stepper_t *st, const char **why_p)
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

const char *lab_stepper_forward(lab_stepper_t *st, const char **why_p)
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
