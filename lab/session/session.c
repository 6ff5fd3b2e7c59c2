#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/session/session.h"

dl_status_t lab_session_init(lab_session_t *s, int np)
{
    s->np = np;
    s->ranks = calloc((size_t)np, sizeof(*s->ranks));
    if (s->ranks == NULL)
        return DL_ERR_NOMEM;
    for (int r = 0; r < np; r++) {
        s->ranks[r].notes = json_array();
        s->ranks[r].logs = json_array();
        s->ranks[r].bench = json_array();
        s->ranks[r].tensors = json_object();
    }
    return DL_OK;
}

void lab_session_clear_results(lab_session_t *s)
{
    for (int r = 0; r < s->np; r++) {
        lab_rank_model_t *m = &s->ranks[r];
        for (int i = 0; i < m->n_snaps; i++)
            dl_tensor_free(m->snaps[i].t);
        free(m->snaps);
        m->snaps = NULL;
        m->n_snaps = 0;
        json_array_clear(m->notes);
        json_array_clear(m->bench);
        m->done = m->failed = false;
        m->error[0] = m->where[0] = m->ended[0] = m->last_error[0] = '\0';
        m->where_from_beat = false;
    }
}

/* Rank m is out of the collective it was in: where it stood is kept as
 * ended, for fold_beat to know the board's last step when a beat tells it. */
static void leave_collective(lab_rank_model_t *m)
{
    if (m->where[0] != '\0')
        memcpy(m->ended, m->where, sizeof(m->ended));
    m->where[0] = '\0';
    m->where_from_beat = false;
}

void lab_session_left(lab_session_t *s, int rank)
{
    if (rank >= 0 && rank < s->np)
        leave_collective(&s->ranks[rank]);
}

void lab_session_fini(lab_session_t *s)
{
    if (s->ranks == NULL)
        return;
    lab_session_clear_results(s);
    for (int r = 0; r < s->np; r++) {
        json_decref(s->ranks[r].notes);
        json_decref(s->ranks[r].logs);
        json_decref(s->ranks[r].bench);
        json_decref(s->ranks[r].tensors);
        for (int i = 0; i < s->ranks[r].n_shown; i++)
            dl_tensor_free(s->ranks[r].shown[i].t);
        free(s->ranks[r].shown);
    }
    free(s->ranks);
    s->ranks = NULL;
}

/* Reads a snapshot frame into *sn (its tensor is the caller's to free). */
static bool read_snap(const dl_frame_t *f, lab_snap_t *sn)
{
    memset(sn, 0, sizeof(*sn));
    if (!lab_snap_is_none(f) && lab_snap_shown(f, &sn->ndim, sn->shape, &sn->t) != DL_OK)
        return false;
    snprintf(sn->label, sizeof(sn->label), "%s", lab_json_str(f->json, "label", ""));
    snprintf(sn->name, sizeof(sn->name), "%s", lab_json_str(f->json, "name", ""));
    sn->index = (int)lab_json_int(f->json, "index", 0);
    sn->of = (int)lab_json_int(f->json, "of", 0);
    sn->tuple = json_is_true(json_object_get(f->json, "tuple"));
    sn->device = lab_snap_device(f);
    return true;
}

static void fold_snap(lab_rank_model_t *m, const dl_frame_t *f)
{
    lab_snap_t sn;
    if (!read_snap(f, &sn))
        return;
    lab_snap_t *n = realloc(m->snaps, sizeof(*n) * (size_t)(m->n_snaps + 1));
    if (n == NULL) {
        dl_tensor_free(sn.t);
        return;
    }
    sn.notes_before = (int)json_array_size(m->notes);
    m->snaps = n;
    m->snaps[m->n_snaps++] = sn;
}

/* "all_reduce step 2/6 (reduce-scatter)", of a step event or a beat. */
static void where_text(const dl_frame_t *f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s step %lld/%lld (%s)", lab_json_str(f->json, "coll", "?"),
             lab_json_int(f->json, "step", 0), lab_json_int(f->json, "steps", 0),
             lab_json_str(f->json, "phase", "?"));
}

/* A step begins, or ends ("done"): after its last step the collective is
 * over, and the rank is in none until its next step event. */
static void fold_step(lab_rank_model_t *m, const dl_frame_t *f)
{
    snprintf(m->algo, sizeof(m->algo), "%s", lab_json_str(f->json, "algo", ""));
    m->steps = lab_json_int(f->json, "steps", 0);
    where_text(f, m->where, sizeof(m->where));
    m->where_from_beat = false;
    m->ended[0] = '\0';
    if (json_is_true(json_object_get(f->json, "done")) &&
        lab_json_int(f->json, "step", 0) >= m->steps)
        leave_collective(m);
}

/* A beat tells the step its board holds: where a benchmark is, as it sends
 * no step events. An idle rank's board, or one still at the last step of
 * a collective that ended, is from the past. */
static void fold_beat(lab_rank_model_t *m, const dl_frame_t *f)
{
    if (json_object_get(f->json, "coll") == NULL || json_is_false(json_object_get(f->json, "busy")))
        return;
    char where[sizeof(m->where)];
    where_text(f, where, sizeof(where));
    if (strcmp(where, m->ended) == 0 || strcmp(where, m->where) == 0)
        return;
    memcpy(m->where, where, sizeof(where));
    m->where_from_beat = true;
}

void lab_session_fold(lab_session_t *s, int rank, const dl_frame_t *f)
{
    if (rank < 0 || rank >= s->np)
        return;
    lab_rank_model_t *m = &s->ranks[rank];
    const char *type = lab_msg_type(f->json);
    if (strcmp(type, "hello") == 0) {
        m->connected = true;
        m->pid = (int)lab_json_int(f->json, "pid", 0);
    } else if (strcmp(type, "ready") == 0) {
        m->ready = true;
    } else if (strcmp(type, "snap") == 0) {
        fold_snap(m, f);
    } else if (strcmp(type, "step") == 0) {
        fold_step(m, f);
    } else if (strcmp(type, "beat") == 0) {
        fold_beat(m, f);
    } else if (strcmp(type, "note") == 0) {
        json_array_append_new(m->notes,
                              json_pack("{s:s, s:s}", "text", lab_json_str(f->json, "text", ""),
                                        "of", lab_json_str(f->json, "of", "")));
    } else if (strcmp(type, "log") == 0) {
        if (strcmp(lab_json_str(f->json, "level", ""), "error") == 0)
            snprintf(m->last_error, sizeof(m->last_error), "%s", lab_json_str(f->json, "text", ""));
        json_array_append_new(m->logs, json_string(lab_json_str(f->json, "text", "")));
    } else if (strcmp(type, "bench") == 0) {
        json_array_append(m->bench, f->json);
    } else if (strcmp(type, "done") == 0) {
        m->done = true;
    } else if (strcmp(type, "error") == 0) {
        m->failed = true;
        snprintf(m->error, sizeof(m->error), "%s", lab_json_str(f->json, "message", "failed"));
    }
}

static void learn_name(lab_session_t *s, int rank, const dl_frame_t *f)
{
    const char *name = lab_json_str(f->json, "name", "");
    json_t *shape = json_object_get(f->json, "shape");
    /* A list's items are not a tensor of that name. */
    if (name[0] == '\0' || lab_json_int(f->json, "of", 0) != 0 || !json_is_array(shape))
        return;
    json_object_set_new(
        s->ranks[rank].tensors, name,
        json_pack("{s:s, s:O}", "dtype", lab_json_str(f->json, "dtype", ""), "shape", shape));
}

/* Puts sn in m's shown table. A single tensor or a list's first item
 * replaces every entry of its name, where the first of them stood (so the
 * panels keep their order); a later item of a list goes after its
 * predecessors. */
static void learn_shown(lab_rank_model_t *m, lab_snap_t *sn)
{
    lab_snap_t *n = realloc(m->shown, sizeof(*n) * (size_t)(m->n_shown + 1));
    if (n == NULL) {
        dl_tensor_free(sn->t);
        return;
    }
    m->shown = n;
    int at = -1, kept = 0;
    bool restart = sn->of == 0 || sn->index == 0;
    for (int i = 0; i < m->n_shown; i++) {
        bool same = strcmp(m->shown[i].name, sn->name) == 0;
        if (same && at < 0 && restart)
            at = kept;
        if (same && restart) {
            dl_tensor_free(m->shown[i].t);
            continue;
        }
        if (same)
            at = kept + 1;
        m->shown[kept++] = m->shown[i];
    }
    if (at < 0)
        at = kept;
    memmove(&m->shown[at + 1], &m->shown[at], sizeof(*n) * (size_t)(kept - at));
    m->shown[at] = *sn;
    m->n_shown = kept + 1;
}

void lab_session_learn_tensor(lab_session_t *s, int rank, const dl_frame_t *f)
{
    if (rank < 0 || rank >= s->np || strcmp(lab_msg_type(f->json), "snap") != 0)
        return;
    learn_name(s, rank, f);
    lab_snap_t sn;
    /* A name that holds None has no tensor to show in a panel. */
    if (lab_json_str(f->json, "name", "")[0] != '\0' && !lab_snap_is_none(f) && read_snap(f, &sn))
        learn_shown(&s->ranks[rank], &sn);
}

void lab_session_forget(lab_session_t *s, int rank, const char *name)
{
    if (rank < 0 || rank >= s->np)
        return;
    lab_rank_model_t *m = &s->ranks[rank];
    json_object_del(m->tensors, name);
    int kept = 0;
    for (int i = 0; i < m->n_shown; i++) {
        if (strcmp(m->shown[i].name, name) == 0)
            dl_tensor_free(m->shown[i].t);
        else
            m->shown[kept++] = m->shown[i];
    }
    m->n_shown = kept;
}

size_t lab_snap_numel(const lab_snap_t *sn)
{
    size_t numel = 1;
    for (int d = 0; d < sn->ndim; d++)
        numel *= (size_t)sn->shape[d];
    return numel;
}

bool lab_snap_is_whole(const lab_snap_t *sn)
{
    return sn->t != NULL && (size_t)sn->t->numel == lab_snap_numel(sn);
}

char *lab_snap_text(const lab_snap_t *sn)
{
    if (sn->t == NULL)
        return strdup("None");
    if (lab_snap_is_whole(sn))
        return dl_tensor_format_raw(sn->t->dtype, sn->ndim, sn->shape, sn->device, sn->t->data);
    return dl_tensor_format_shown(sn->t->dtype, sn->ndim, sn->shape, sn->device, sn->t->data);
}
