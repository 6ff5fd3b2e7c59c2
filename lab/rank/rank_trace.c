/* Tracing on a rank (see rank.h and lab/proto/trace.h).
 *
 * The recorder is a step hook wrapped around the rank's own (the shell's,
 * or a benchmark's). It is installed only while tracing is on, so a rank
 * that does not trace runs exactly what it ran before: no other hook, no
 * test of a flag. Around the inner hook it reads the clock: a step's slice
 * starts after the inner hook of its start has returned (which, in step
 * mode, waits for a person) and ends before the inner hook of its end runs
 * (which sends the step's event), so that a step's slice is the step alone.
 * A collective's slice starts just before the inner hook of its first step
 * and ends just after that of its last: it encloses its steps strictly.
 *
 * Async collectives progress together from one wait loop, so several may
 * be open at once: each is found by its (ctx, seq). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distlab/frame.h"
#include "lab/proto/trace.h"
#include "lab/rank/rank.h"

/* Collectives that may be open at once on one rank (async ones in flight). */
#define MAX_OPEN 16

typedef struct {
    bool used;
    uint32_t ctx;
    uint64_t seq;
    uint64_t t0;      /* the collective's start */
    uint64_t step_t0; /* the current step's */
    uint64_t bytes;   /* sent so far */
    uint64_t age;     /* when it opened, to evict the oldest */
} open_coll_t;

struct lab_rank_trace {
    bool on;
    dl_step_hook_t inner; /* the hook it wraps (NULL: none) */
    bool inner_quick;     /* it never waits for a person */
    bool installed;       /* the recorder is the communicator's step hook */
    lab_trace_buf_t buf;
    open_coll_t open[MAX_OPEN];
    uint64_t opened;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static open_coll_t *find_open(lab_rank_trace_t *tr, const dl_step_info_t *in)
{
    for (int i = 0; i < MAX_OPEN; i++)
        if (tr->open[i].used && tr->open[i].ctx == in->ctx && tr->open[i].seq == in->seq)
            return &tr->open[i];
    return NULL;
}

/* A collective begins: a free slot, or the oldest one's (a collective that
 * failed mid-way never ends). */
static open_coll_t *open_coll(lab_rank_trace_t *tr, const dl_step_info_t *in, uint64_t t)
{
    open_coll_t *o = find_open(tr, in);
    for (int i = 0; o == NULL && i < MAX_OPEN; i++)
        if (!tr->open[i].used)
            o = &tr->open[i];
    if (o == NULL) {
        o = &tr->open[0];
        for (int i = 1; i < MAX_OPEN; i++)
            if (tr->open[i].age < o->age)
                o = &tr->open[i];
    }
    *o = (open_coll_t){.used = true, .ctx = in->ctx, .seq = in->seq, .t0 = t, .age = tr->opened++};
    return o;
}

static void record_coll(lab_rank_trace_t *tr, const dl_step_info_t *in, const open_coll_t *o,
                        uint64_t t1)
{
    const dl_sched_t *s = in->s;
    lab_trace_ev_t *ev = lab_trace_buf_push(&tr->buf);
    if (ev == NULL)
        return;
    ev->kind = LAB_TRACE_COLL;
    ev->coll = (uint8_t)s->args.coll;
    ev->whole = in->whole;
    ev->algo = lab_trace_buf_intern(&tr->buf, s->algo);
    ev->ctx = in->ctx;
    ev->seq = in->seq;
    ev->steps = in->whole ? 0 : (uint32_t)s->n_steps;
    ev->t0 = o->t0;
    ev->t1 = t1;
    ev->bytes = o->bytes;
    ev->count = s->args.count;
}

/* The step that ran from t0 to t1: its slice, and one record per message
 * of this rank, numbered as dl_step_describe lists the step's messages
 * (every message of the step in action order, to itself included). */
static void record_step(lab_rank_trace_t *tr, const dl_step_info_t *in, open_coll_t *o, uint64_t t0,
                        uint64_t t1)
{
    const dl_sched_t *s = in->s;
    const dl_step_t *st = &s->steps[in->step];
    uint16_t algo = lab_trace_buf_intern(&tr->buf, s->algo);
    uint16_t phase = lab_trace_buf_intern(&tr->buf, st->phase);
    /* The step's record comes first; it is filled once the messages are
     * counted (by index: the buffer may move as it grows). */
    bool kept = lab_trace_buf_push(&tr->buf) != NULL;
    size_t at = tr->buf.n - 1;
    uint64_t sent = 0;
    uint32_t msg = 0;
    for (size_t i = st->first; i < st->first + st->n; i++) {
        const dl_action_t *a = &s->actions[i];
        if (a->kind != DL_ACT_MSG)
            continue;
        bool out = a->src_rank == in->rank, inbound = a->dst_rank == in->rank;
        uint32_t k = msg++;
        if (out == inbound) /* another pair's, or to itself */
            continue;
        uint64_t bytes = (uint64_t)a->count * in->esz;
        if (out)
            sent += bytes;
        lab_trace_ev_t *ev = lab_trace_buf_push(&tr->buf);
        if (ev == NULL)
            continue;
        ev->kind = out ? LAB_TRACE_SEND : LAB_TRACE_RECV;
        ev->coll = (uint8_t)s->args.coll;
        ev->algo = algo;
        ev->phase = phase;
        ev->peer = in->world_ranks[out ? a->dst_rank : a->src_rank];
        ev->chunk = a->chunk;
        ev->ctx = in->ctx;
        ev->seq = in->seq;
        ev->step = (uint32_t)in->step;
        ev->steps = (uint32_t)s->n_steps;
        ev->msg = k;
        ev->t0 = t0;
        ev->t1 = t1;
        ev->bytes = bytes;
    }
    o->bytes += sent;
    if (!kept)
        return;
    lab_trace_ev_t *step = &tr->buf.evs[at];
    step->kind = LAB_TRACE_STEP;
    step->coll = (uint8_t)s->args.coll;
    step->algo = algo;
    step->phase = phase;
    step->ctx = in->ctx;
    step->seq = in->seq;
    step->step = (uint32_t)in->step;
    step->steps = (uint32_t)s->n_steps;
    step->t0 = t0;
    step->t1 = t1;
    step->bytes = sent;
}

/* The hook installed while tracing: the inner hook, timed. */
static int trace_hook(void *arg, const dl_step_info_t *in)
{
    lab_rank_t *r = arg;
    lab_rank_trace_t *tr = r->trace;
    /* Tracing went off while this collective was in flight (its executor
     * keeps the hook it started with): it runs untimed. */
    if (!tr->on)
        return tr->inner != NULL ? tr->inner(arg, in) : 0;
    uint64_t t = now_ns();
    int rc = tr->inner != NULL ? tr->inner(arg, in) : 0;
    uint64_t after = now_ns();
    open_coll_t *o = find_open(tr, in);
    if (!in->done) {
        if (rc != 0) /* refused: the step does not run */
            return rc;
        if (in->step == 0)
            o = open_coll(tr, in, t);
        else if (o == NULL) /* tracing came on mid-collective */
            return rc;
        o->step_t0 = after;
        return rc;
    }
    if (o == NULL) /* tracing came on mid-collective */
        return rc;
    if (!in->whole)
        record_step(tr, in, o, o->step_t0, t);
    if (in->whole || in->step + 1 == in->s->n_steps) {
        record_coll(tr, in, o, after);
        o->used = false;
    }
    return rc;
}

static void install(lab_rank_t *r, dl_step_hook_t hook, bool quick)
{
    if (quick)
        dl_comm_set_quick_step_hook(r->comm, hook, r);
    else
        dl_comm_set_step_hook(r->comm, hook, r);
}

void lab_rank_set_step_hook(lab_rank_t *r, dl_step_hook_t hook, bool quick)
{
    if (r->trace == NULL || !r->trace->on) {
        install(r, hook, quick);
        return;
    }
    r->trace->inner = hook;
    r->trace->inner_quick = quick;
    r->trace->installed = true;
    /* The recorder reads the clock itself: it is installed as a hook that
     * may pause, whatever it wraps. */
    dl_comm_set_step_hook(r->comm, trace_hook, r);
}

dl_status_t lab_rank_trace_on(lab_rank_t *r, bool on)
{
    lab_rank_trace_t *tr = r->trace;
    if (!on) {
        if (tr == NULL || !tr->on)
            return DL_OK;
        /* What was recorded since the last statement goes up first. */
        dl_status_t st = lab_rank_trace_flush(r);
        tr->on = false;
        lab_trace_buf_fini(&tr->buf);
        memset(tr->open, 0, sizeof(tr->open));
        if (tr->installed) /* the hook it wraps comes back */
            install(r, tr->inner, tr->inner_quick);
        tr->installed = false;
        return st;
    }
    if (tr != NULL && tr->on)
        return DL_OK;
    /* The recorder outlives tracing once made: an async collective started
     * while tracing was on may still call it. */
    if (tr == NULL && (tr = calloc(1, sizeof(*tr))) == NULL)
        return DL_ERR_NOMEM;
    r->trace = tr;
    if (lab_trace_buf_init(&tr->buf, LAB_TRACE_CAP) != DL_OK)
        return DL_ERR_NOMEM;
    tr->on = true;
    return DL_OK;
}

dl_status_t lab_rank_trace_flush(lab_rank_t *r)
{
    lab_rank_trace_t *tr = r->trace;
    if (tr == NULL || !tr->on || (tr->buf.n == 0 && tr->buf.dropped == 0))
        return DL_OK;
    dl_status_t st = DL_OK;
    uint64_t dropped = tr->buf.dropped;
    for (size_t first = 0; st == DL_OK && (first < tr->buf.n || dropped > 0);) {
        size_t n = tr->buf.n - first;
        if (n > LAB_TRACE_FRAME_EVENTS)
            n = LAB_TRACE_FRAME_EVENTS;
        uint8_t *blob = NULL;
        size_t len = 0;
        json_t *j = lab_trace_frame(&tr->buf, tr->buf.evs + first, n, dropped, &blob, &len);
        if (j == NULL) {
            st = DL_ERR_NOMEM;
            break;
        }
        st = lab_rank_emit(r, j, blob, len);
        free(blob);
        first += n;
        dropped = 0;
    }
    lab_trace_buf_clear(&tr->buf);
    return st;
}

void lab_rank_trace_free(lab_rank_t *r)
{
    if (r->trace == NULL)
        return;
    lab_trace_buf_fini(&r->trace->buf);
    free(r->trace);
    r->trace = NULL;
}
