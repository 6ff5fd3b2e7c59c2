/* See model.h. The model folds; it never sends anything to a rank. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/session/model.h"

const char *lab_life_name(lab_life_t life)
{
    static const char *const names[] = {"starting", "idle",           "busy",
                                        "paused",   "not responding", "dead"};
    return (unsigned)life < sizeof(names) / sizeof(names[0]) ? names[life] : "?";
}

/* ---- views ---- */

static void emit(lab_model_t *m, const lab_event_t *ev)
{
    /* Views must not subscribe or unsubscribe from inside a call. */
    for (size_t i = 0; i < m->n_views; i++)
        m->views[i].fn(m->views[i].arg, m, ev);
}

static void emit_kind(lab_model_t *m, lab_event_kind_t kind, int rank)
{
    lab_event_t ev = {.kind = kind, .rank = rank};
    emit(m, &ev);
}

dl_status_t lab_model_subscribe(lab_model_t *m, lab_view_fn fn, void *arg)
{
    lab_view_t *v = realloc(m->views, sizeof(*v) * (m->n_views + 1));
    if (v == NULL)
        return DL_ERR_NOMEM;
    m->views = v;
    m->views[m->n_views++] = (lab_view_t){fn, arg};
    return DL_OK;
}

void lab_model_unsubscribe(lab_model_t *m, lab_view_fn fn, void *arg)
{
    for (size_t i = 0; i < m->n_views; i++)
        if (m->views[i].fn == fn && m->views[i].arg == arg) {
            memmove(&m->views[i], &m->views[i + 1], sizeof(*m->views) * (m->n_views - i - 1));
            m->n_views--;
            return;
        }
}

void lab_model_say(lab_model_t *m, int rank, bool async, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    lab_event_t ev = {.kind = LAB_EV_SAY, .rank = rank, .text = text, .async = async};
    emit(m, &ev);
}

void lab_model_show_step(lab_model_t *m, const lab_step_rec_t *rec, bool recorded)
{
    lab_event_t ev = {.kind = LAB_EV_STEP_RAN, .rank = -1, .step = rec, .recorded = recorded};
    emit(m, &ev);
}

/* ---- ranks' lives ---- */

bool lab_model_busy(const lab_model_t *m, int r)
{
    return m->batch.inflight && m->batch.outstanding[r] > 0;
}

bool lab_model_paused(const lab_model_t *m)
{
    return m->batch.inflight && lab_stepper_paused(&m->stepper);
}

static lab_life_t derive_life(const lab_model_t *m, int r)
{
    const lab_rank_model_t *rm = &m->sess.ranks[r];
    if (rm->died)
        return LAB_LIFE_DEAD;
    if (rm->unresponsive)
        return LAB_LIFE_UNRESPONSIVE;
    if (!rm->ready)
        return LAB_LIFE_STARTING;
    if (lab_model_paused(m) && lab_stepper_in_group(&m->stepper, r))
        return LAB_LIFE_PAUSED;
    return lab_model_busy(m, r) ? LAB_LIFE_BUSY : LAB_LIFE_IDLE;
}

lab_life_t lab_model_life(const lab_model_t *m, int r)
{
    return derive_life(m, r);
}

void lab_model_sync(lab_model_t *m)
{
    for (int r = 0; r < m->np; r++) {
        lab_life_t now = derive_life(m, r);
        if (now == m->life[r].life)
            continue;
        lab_event_t ev = {.kind = LAB_EV_RANK, .rank = r, .from = m->life[r].life, .to = now};
        m->life[r].life = now;
        emit(m, &ev);
    }
}

/* Whether a statement of the line in flight failed on rank r. */
static bool failed_in_batch(const lab_model_t *m, int r)
{
    for (size_t i = 0; m->batch.inflight && i < m->batch.n; i++) {
        const lab_stmt_t *s = &m->batch.stmts[i];
        if (s->targeted[r] && s->finished[r] && s->res.ranks[r].failed)
            return true;
    }
    return false;
}

lab_rank_state_t *lab_model_rank_states(const lab_model_t *m)
{
    lab_rank_state_t *state = calloc((size_t)(m->np > 0 ? m->np : 1), sizeof(*state));
    for (int r = 0; state != NULL && r < m->np; r++)
        state[r] = m->sess.ranks[r].died           ? LAB_RANK_DEAD
                   : m->sess.ranks[r].unresponsive ? LAB_RANK_UNRESPONSIVE
                   : lab_model_busy(m, r)          ? LAB_RANK_RUNNING
                   : failed_in_batch(m, r)         ? LAB_RANK_FAILED
                                                   : LAB_RANK_IDLE;
    return state;
}

void lab_model_place(lab_model_t *m, int r, int pid, const char *host, int worker)
{
    if (r < 0 || r >= m->np)
        return;
    m->sess.ranks[r].pid = pid;
    snprintf(m->life[r].host, sizeof(m->life[r].host), "%s", host != NULL ? host : "");
    m->life[r].worker = worker;
}

void lab_model_rank_exited(lab_model_t *m, int r, const char *cause)
{
    if (r < 0 || r >= m->np)
        return;
    m->sess.ranks[r].died = true;
    snprintf(m->life[r].cause, sizeof(m->life[r].cause), "%s", cause != NULL ? cause : "died");
    lab_match_forget(&m->match, r);
    lab_model_sync(m);
}

void lab_model_rank_unresponsive(lab_model_t *m, int r, const char *cause)
{
    if (r < 0 || r >= m->np)
        return;
    m->sess.ranks[r].unresponsive = cause != NULL;
    if (cause != NULL)
        snprintf(m->life[r].cause, sizeof(m->life[r].cause), "%s", cause);
    else if (!m->sess.ranks[r].died)
        m->life[r].cause[0] = '\0';
    lab_model_sync(m);
}

/* ---- the world ---- */

static void stmt_free(lab_stmt_t *s)
{
    free(s->targeted);
    free(s->finished);
    free(s->quiet);
    json_decref(s->stmt);
    lab_session_fini(&s->res);
}

void lab_model_batch_drop(lab_model_t *m)
{
    lab_batch_t *b = &m->batch;
    /* Refusals belong to the batch's collectives. */
    lab_match_clear_refusals(&m->match);
    for (size_t i = 0; i < b->n; i++)
        stmt_free(&b->stmts[i]);
    free(b->stmts);
    free(b->outstanding);
    memset(b, 0, sizeof(*b));
}

static void world_free(lab_model_t *m)
{
    lab_model_batch_drop(m);
    lab_session_fini(&m->sess);
    lab_match_fini(&m->match);
    lab_p2p_fini(&m->p2p);
    lab_stepper_fini(&m->stepper);
    free(m->life);
    m->life = NULL;
    m->np = 0;
    m->ready = false;
    m->n_ready = 0;
}

void lab_model_init(lab_model_t *m)
{
    memset(m, 0, sizeof(*m));
}

void lab_model_fini(lab_model_t *m)
{
    world_free(m);
    free(m->views);
    m->views = NULL;
    m->n_views = 0;
    lab_trace_free(m->trace);
    m->trace = NULL;
}

dl_status_t lab_model_new_world(lab_model_t *m, int np)
{
    world_free(m);
    m->generation++;
    if (np > 0) {
        m->life = calloc((size_t)np, sizeof(*m->life));
        if (m->life == NULL || lab_session_init(&m->sess, np) != DL_OK ||
            lab_match_init(&m->match, np) != DL_OK || lab_p2p_init(&m->p2p, np) != DL_OK ||
            lab_stepper_init(&m->stepper, np) != DL_OK) {
            world_free(m);
            return DL_ERR_NOMEM;
        }
        m->np = np;
    }
    emit_kind(m, LAB_EV_WORLD, -1);
    return DL_OK;
}

void lab_model_end_world(lab_model_t *m)
{
    m->ready = false;
    lab_model_batch_drop(m);
    lab_stepper_abort(&m->stepper);
    for (int r = 0; r < m->match.np; r++)
        lab_match_forget(&m->match, r);
}

/* ---- statements ---- */

dl_status_t lab_model_batch_new(lab_model_t *m, const json_t *stmts, size_t first, size_t n)
{
    lab_batch_t *b = &m->batch;
    lab_model_batch_drop(m);
    b->stmts = calloc(n > 0 ? n : 1, sizeof(*b->stmts));
    b->outstanding = calloc((size_t)m->np, sizeof(int));
    if (b->stmts == NULL || b->outstanding == NULL) {
        lab_model_batch_drop(m);
        return DL_ERR_NOMEM;
    }
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        lab_stmt_t *s = &b->stmts[i];
        s->targeted = calloc((size_t)m->np, sizeof(bool));
        s->finished = calloc((size_t)m->np, sizeof(bool));
        s->quiet = calloc((size_t)m->np, sizeof(bool));
        s->stmt = json_incref(json_array_get(stmts, first + i));
        if (s->targeted == NULL || s->finished == NULL || s->quiet == NULL ||
            lab_session_init(&s->res, m->np) != DL_OK) {
            lab_model_batch_drop(m);
            return DL_ERR_NOMEM;
        }
    }
    b->id = ++m->next_id;
    for (size_t i = 0; i < n; i++)
        b->stmts[i].id = ++m->next_id;
    b->inflight = true;
    return DL_OK;
}

dl_status_t lab_model_job_new(lab_model_t *m)
{
    dl_status_t st = lab_model_batch_new(m, NULL, 0, 1);
    if (st != DL_OK)
        return st;
    m->batch.job = true;
    for (int r = 0; r < m->np; r++)
        m->batch.stmts[0].targeted[r] = true;
    return DL_OK;
}

lab_stmt_t *lab_model_job(lab_model_t *m)
{
    return m->batch.job ? &m->batch.stmts[0] : NULL;
}

void lab_model_batch_sent(lab_model_t *m, size_t i, int r, bool sent)
{
    lab_stmt_t *s = &m->batch.stmts[i];
    if (sent) {
        s->awaiting++;
        m->batch.outstanding[r]++;
        return;
    }
    s->finished[r] = true;
    s->res.ranks[r].failed = true;
    snprintf(s->res.ranks[r].error, sizeof(s->res.ranks[r].error), "cannot reach the rank");
}

/* Rank r is through with statement s. Returns whether it has nothing left
 * to run. */
static bool finish_on_rank(lab_model_t *m, lab_stmt_t *s, int r, bool quiet)
{
    if (!s->targeted[r] || s->finished[r])
        return false;
    s->finished[r] = true;
    /* A recv refused as hopeless was reported already. */
    s->quiet[r] = quiet || m->life[r].p2p_refused;
    m->life[r].p2p_refused = false;
    s->awaiting--;
    lab_p2p_done(&m->p2p, r, !s->res.ranks[r].failed);
    if (--m->batch.outstanding[r] > 0)
        return false;
    /* A collective that failed, or ran where no step event ends it (a
     * whole-step backend), ends with the line. */
    lab_session_left(&m->sess, r);
    return true;
}

bool lab_model_give_up(lab_model_t *m, size_t i, int r, const char *error, bool quiet)
{
    lab_stmt_t *s = &m->batch.stmts[i];
    if (!s->targeted[r] || s->finished[r])
        return false;
    s->res.ranks[r].failed = true;
    if (error != NULL)
        snprintf(s->res.ranks[r].error, sizeof(s->res.ranks[r].error), "%s", error);
    return finish_on_rank(m, s, r, quiet);
}

bool lab_model_report_finished(lab_model_t *m)
{
    lab_batch_t *b = &m->batch;
    while (b->reported < b->n && b->stmts[b->reported].awaiting == 0) {
        lab_stmt_t *s = &b->stmts[b->reported++];
        bool failed = false;
        for (int r = 0; r < m->np; r++)
            failed |= s->targeted[r] && s->res.ranks[r].failed;
        lab_event_t ev = {
            .kind = failed ? LAB_EV_STMT_FAILED : LAB_EV_STMT_DONE, .rank = -1, .stmt = s};
        emit(m, &ev);
    }
    if (!b->inflight || b->reported < b->n)
        return false;
    lab_model_batch_drop(m);
    lab_model_sync(m);
    return true;
}

lab_stmt_t *lab_model_stmt_of(lab_model_t *m, const json_t *ev)
{
    lab_batch_t *b = &m->batch;
    if (b->job)
        return &b->stmts[0];
    json_int_t id = (json_int_t)lab_json_int(ev, "id", -1);
    if (!b->inflight || b->n == 0 || id < b->stmts[0].id || id >= b->stmts[0].id + (json_int_t)b->n)
        return NULL;
    return &b->stmts[id - b->stmts[0].id];
}

/* ---- folding a rank's events ---- */

static lab_fold_t fold_step(lab_model_t *m, int rank, const dl_frame_t *f)
{
    const lab_step_rec_t *rec = NULL;
    lab_step_event_t what = lab_stepper_fold(&m->stepper, rank, f, &rec);
    if (rec != NULL)
        lab_model_show_step(m, rec, false);
    if (what != LAB_STEP_PAUSED)
        return LAB_FOLD_NOTHING;
    lab_model_sync(m);
    size_t n = lab_stepper_nrecs(&m->stepper);
    lab_event_t ev = {.kind = LAB_EV_STEP_PAUSED,
                      .rank = -1,
                      .step = n > 0 ? lab_stepper_rec(&m->stepper, n - 1) : NULL};
    emit(m, &ev);
    return LAB_FOLD_PAUSED;
}

static lab_fold_t fold_stmt_event(lab_model_t *m, int rank, const dl_frame_t *f, const char *type)
{
    lab_stmt_t *s = lab_model_stmt_of(m, f->json);
    if (s == NULL || !s->targeted[rank])
        return LAB_FOLD_NOTHING;
    lab_session_learn_tensor(&m->sess, rank, f);
    if (strcmp(type, "snap") == 0 && strcmp(lab_json_str(f->json, "label", ""), LAB_SNAP_VIEW) == 0)
        return LAB_FOLD_NOTHING; /* for the panels only */
    lab_session_fold(&s->res, rank, f);
    if (strcmp(type, "unbound") == 0) /* del NAME */
        lab_session_forget(&m->sess, rank, lab_json_str(f->json, "name", ""));
    if (strcmp(type, "done") == 0 || strcmp(type, "error") == 0 || strcmp(type, "skipped") == 0) {
        finish_on_rank(m, s, rank, json_is_true(json_object_get(f->json, "quiet")));
        return LAB_FOLD_FINISHED;
    }
    static const char *const outputs[] = {"snap", "note", "log", "bench"};
    for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++)
        if (strcmp(type, outputs[i]) == 0) {
            lab_event_t ev = {.kind = LAB_EV_OUTPUT, .rank = rank, .stmt = s, .frame = f};
            emit(m, &ev);
        }
    return LAB_FOLD_NOTHING;
}

lab_fold_t lab_model_fold(lab_model_t *m, int rank, const dl_frame_t *f)
{
    if (rank < 0 || rank >= m->np)
        return LAB_FOLD_NOTHING;
    const char *type = lab_msg_type(f->json);
    if (strcmp(type, "ready") == 0 || strcmp(type, "hello") == 0 || strcmp(type, "step") == 0 ||
        strcmp(type, "beat") == 0)
        lab_session_fold(&m->sess, rank, f);
    /* A rank's last error, that a death reported later can name as its
     * cause (the mpi backend's watchdog logs why it ends the rank). */
    if (strcmp(type, "log") == 0 && strcmp(lab_json_str(f->json, "level", ""), "error") == 0)
        snprintf(m->sess.ranks[rank].last_error, sizeof(m->sess.ranks[rank].last_error), "%s",
                 lab_json_str(f->json, "text", ""));
    if (strcmp(type, "beat") == 0 || strcmp(type, "hello") == 0)
        return LAB_FOLD_NOTHING;
    if (strcmp(type, "ready") == 0) {
        lab_model_sync(m);
        if (++m->n_ready != m->np)
            return LAB_FOLD_NOTHING;
        m->ready = true;
        return LAB_FOLD_READY;
    }
    if (strcmp(type, "error") == 0 && !m->ready) {
        if (lab_model_job(m) != NULL) /* the job's report names it */
            lab_session_fold(&lab_model_job(m)->res, rank, f);
        return LAB_FOLD_START_FAIL;
    }
    if (strcmp(type, "coll") == 0)
        return lab_match_post(&m->match, rank, f->json) == DL_OK ? LAB_FOLD_COLL
                                                                 : LAB_FOLD_COLL_BAD;
    if (strcmp(type, "p2p_wait") == 0) {
        lab_p2p_wait(&m->p2p, rank, f->json);
        return LAB_FOLD_P2P;
    }
    if (strcmp(type, "p2p") == 0) {
        if (lab_p2p_post(&m->p2p, rank, f->json) != DL_OK)
            return LAB_FOLD_NOTHING;
        lab_event_t ev = {.kind = LAB_EV_P2P, .rank = rank, .frame = f};
        emit(m, &ev);
        return LAB_FOLD_P2P;
    }
    if (strcmp(type, "step") == 0 && json_object_get(f->json, "group") != NULL)
        return fold_step(m, rank, f);
    if (strcmp(type, "trace") == 0) {
        /* A malformed one is left out of the trace; the session goes on. */
        if (m->trace != NULL)
            lab_trace_fold(m->trace, m->generation, rank, f);
        return LAB_FOLD_NOTHING;
    }
    return fold_stmt_event(m, rank, f, type);
}
