/* Point-to-point matching (see p2p.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/proto/proto.h"
#include "lab/session/p2p.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

dl_status_t lab_p2p_init(lab_p2p_t *p, int np)
{
    memset(p, 0, sizeof(*p));
    p->np = np;
    p->t0 = now_s();
    if (np > 0) {
        p->sent = calloc((size_t)np, sizeof(*p->sent));
        p->sent_bytes = calloc((size_t)np, sizeof(*p->sent_bytes));
        if (p->sent == NULL || p->sent_bytes == NULL) {
            lab_p2p_fini(p);
            return DL_ERR_NOMEM;
        }
    }
    return DL_OK;
}

void lab_p2p_fini(lab_p2p_t *p)
{
    free(p->sends);
    free(p->recvs);
    free(p->sent);
    free(p->sent_bytes);
    memset(p, 0, sizeof(*p));
}

static void drop(lab_p2p_msg_t *list, size_t *n, size_t i)
{
    memmove(list + i, list + i + 1, (*n - i - 1) * sizeof(*list));
    (*n)--;
}

static dl_status_t push(lab_p2p_msg_t **list, size_t *n, lab_p2p_msg_t m)
{
    lab_p2p_msg_t *l = realloc(*list, (*n + 1) * sizeof(*l));
    if (l == NULL)
        return DL_ERR_NOMEM;
    l[(*n)++] = m;
    *list = l;
    return DL_OK;
}

/* ---- the log ---- */

size_t lab_p2p_log_len(const lab_p2p_t *p)
{
    return p->n_log < LAB_P2P_LOG_MAX ? (size_t)p->n_log : LAB_P2P_LOG_MAX;
}

const lab_p2p_entry_t *lab_p2p_log_seq(const lab_p2p_t *p, uint64_t seq)
{
    if (seq == 0 || seq > p->n_log || p->n_log - seq >= LAB_P2P_LOG_MAX)
        return NULL;
    return &p->log[(seq - 1) % LAB_P2P_LOG_MAX];
}

/* A recv that failed leaves the ledger; its log entry says it failed
 * rather than waiting on. */
static void forget_failed(lab_p2p_t *p, size_t i)
{
    lab_p2p_entry_t *e = (lab_p2p_entry_t *)lab_p2p_log_seq(p, p->recvs[i].seq);
    if (e != NULL && e->matched == 0)
        e->failed = true;
    drop(p->recvs, &p->n_recvs, i);
}

const lab_p2p_entry_t *lab_p2p_log_at(const lab_p2p_t *p, size_t i)
{
    size_t n = lab_p2p_log_len(p);
    return i < n ? lab_p2p_log_seq(p, p->n_log - n + 1 + i) : NULL;
}

const char *lab_p2p_op_name(const lab_p2p_entry_t *e)
{
    return e->send ? (e->async ? "isend" : "send") : (e->async ? "irecv" : "recv");
}

static uint64_t log_post(lab_p2p_t *p, const lab_p2p_entry_t *e)
{
    uint64_t seq = ++p->n_log;
    lab_p2p_entry_t *slot = &p->log[(seq - 1) % LAB_P2P_LOG_MAX];
    *slot = *e;
    slot->seq = seq;
    return seq;
}

/* The ledger paired operations a and b: each entry still kept says so. */
static void log_match(lab_p2p_t *p, uint64_t a, uint64_t b)
{
    double t = now_s() - p->t0;
    lab_p2p_entry_t *ea = (lab_p2p_entry_t *)lab_p2p_log_seq(p, a),
                    *eb = (lab_p2p_entry_t *)lab_p2p_log_seq(p, b);
    if (ea != NULL) {
        ea->matched = b;
        ea->t_matched = t;
    }
    if (eb != NULL) {
        eb->matched = a;
        eb->t_matched = t;
    }
}

/* ---- the ledger ---- */

static bool matches(const lab_p2p_msg_t *send, const lab_p2p_msg_t *recv)
{
    return send->dst == recv->dst && send->tag == recv->tag &&
           (recv->src < 0 || recv->src == send->src);
}

dl_status_t lab_p2p_post(lab_p2p_t *p, int rank, const json_t *ev)
{
    const char *op = lab_json_str(ev, "op", "");
    bool send = strcmp(op, "send") == 0;
    long long peer = lab_json_int(ev, "peer", -2), tag = lab_json_int(ev, "tag", 0);
    if (rank < 0 || rank >= p->np || (!send && strcmp(op, "recv") != 0) || peer >= p->np ||
        peer < (send ? 0 : -1))
        return DL_ERR_PROTOCOL;
    lab_p2p_msg_t m = {.src = send ? rank : (int)peer,
                       .dst = send ? (int)peer : rank,
                       .tag = (int)tag,
                       .blocking = !send && json_is_true(json_object_get(ev, "blocking")),
                       .waits_on = -1,
                       .note = lab_json_int(ev, "note", 0)};
    lab_p2p_entry_t e = {.t = now_s() - p->t0,
                         .rank = rank,
                         .send = send,
                         .async = json_is_true(json_object_get(ev, "async")),
                         .peer = (int)peer,
                         .tag = (int)tag,
                         .bytes = lab_json_int(ev, "bytes", -1)};
    m.seq = log_post(p, &e);
    if (send) {
        p->sent[rank]++;
        if (e.bytes > 0)
            p->sent_bytes[rank] += e.bytes;
        for (size_t i = 0; i < p->n_recvs; i++)
            if (matches(&m, &p->recvs[i])) {
                log_match(p, p->recvs[i].seq, m.seq);
                drop(p->recvs, &p->n_recvs, i);
                return DL_OK;
            }
        return push(&p->sends, &p->n_sends, m);
    }
    for (size_t i = 0; i < p->n_sends; i++)
        if (matches(&p->sends[i], &m)) {
            log_match(p, p->sends[i].seq, m.seq);
            drop(p->sends, &p->n_sends, i);
            return DL_OK;
        }
    return push(&p->recvs, &p->n_recvs, m);
}

void lab_p2p_wait(lab_p2p_t *p, int rank, const json_t *ev)
{
    long long note = lab_json_int(ev, "note", 0);
    for (size_t i = 0; i < p->n_recvs && note > 0; i++) {
        lab_p2p_msg_t *m = &p->recvs[i];
        if (m->dst == rank && m->note == note) {
            m->blocking = true;
            return;
        }
    }
}

void lab_p2p_done(lab_p2p_t *p, int rank, bool completed)
{
    for (size_t i = 0; i < p->n_recvs; i++)
        if (p->recvs[i].dst == rank && p->recvs[i].blocking) {
            /* A recv that completed took a send whose notice is still on
             * its way: each rank tells the shell on its own connection, so
             * the receiver's "done" can arrive first. It stays, no longer
             * waiting, to be paired with that send when it arrives. */
            if (completed) {
                p->recvs[i].blocking = false;
            } else {
                forget_failed(p, i);
            }
            return;
        }
}

/* Whether rank q can still send anything on this line. */
static bool may_send(const lab_rank_state_t *state, int q)
{
    return state[q] == LAB_RANK_RUNNING || state[q] == LAB_RANK_UNRESPONSIVE;
}

/* The longest cycle of blocking recvs looked for (a longer one waits for
 * the timeout, as before). */
#define DL_P2P_MAX_CYCLE 64

/* Rank q's oldest blocking recv, or NULL (it is not in one). */
static lab_p2p_msg_t *blocking_recv(lab_p2p_t *p, int q)
{
    for (size_t i = 0; i < p->n_recvs; i++)
        if (p->recvs[i].blocking && p->recvs[i].dst == q)
            return &p->recvs[i];
    return NULL;
}

/* Whether rank r's blocking recv m closes a cycle of blocking recvs from
 * given sources (r waits for m->src, which waits for another, ..., one of
 * them for r): none of them can send until its own recv completes, so none
 * ever will. Marks every recv of the cycle with the rank its source waits
 * on, so that all of them are refused at once, each saying why. */
static bool mark_cycle(lab_p2p_t *p, lab_p2p_msg_t *m)
{
    /* The recvs the ranks wait in, following sources from m; at most one a
     * rank (its oldest blocking one: a rank may hold a second only while
     * the send notice of a recv it completed is on its way, and then no
     * cycle is claimed). */
    if (blocking_recv(p, m->dst) != m)
        return false;
    lab_p2p_msg_t *chain[DL_P2P_MAX_CYCLE];
    int n = 0;
    chain[n++] = m;
    for (int q = m->src; q != m->dst; n++) {
        lab_p2p_msg_t *b = q >= 0 ? blocking_recv(p, q) : NULL;
        if (b == NULL || b->src < 0 || n == p->np || n == DL_P2P_MAX_CYCLE)
            return false; /* no cycle back to m (one m only leads into finds itself) */
        chain[n] = b;
        q = b->src;
    }
    /* Each recv of the cycle is marked with the rank its source waits on. */
    for (int i = 0; i < n; i++)
        chain[i]->waits_on = chain[(i + 1) % n]->src;
    return true;
}

/* Which ranks may still send on this line (a least fixpoint): one that
 * runs and is not held in a blocking recv, and one held in a recv that such
 * a rank may still answer (its source, or from any rank another). A cycle
 * of recvs from given sources is found by mark_cycle, which names it; this
 * also sees ranks that all wait in recvs from any rank. NULL: no memory. */
static bool *may_proceed(lab_p2p_t *p, const lab_rank_state_t *state)
{
    bool *can = calloc((size_t)p->np, sizeof(bool));
    for (int q = 0; can != NULL && q < p->np; q++)
        can[q] = may_send(state, q) && blocking_recv(p, q) == NULL;
    for (bool changed = can != NULL; changed;) {
        changed = false;
        for (int q = 0; q < p->np; q++) {
            const lab_p2p_msg_t *b = can[q] || !may_send(state, q) ? NULL : blocking_recv(p, q);
            bool freed = false;
            for (int x = 0; b != NULL && x < p->np && !freed; x++)
                freed = x != q && can[x] && (b->src < 0 || b->src == x);
            if (freed)
                can[q] = changed = true;
        }
    }
    return can;
}

int lab_p2p_hopeless(lab_p2p_t *p, const lab_rank_state_t *state, char *why, size_t cap)
{
    bool *can = may_proceed(p, state);
    if (can == NULL)
        return -1;
    int hopeless = -1;
    for (size_t i = 0; i < p->n_recvs && hopeless < 0; i++) {
        lab_p2p_msg_t *m = &p->recvs[i];
        if (!m->blocking)
            continue;
        int r = m->dst;
        if (m->src >= 0 && m->waits_on < 0 && may_send(state, m->src))
            mark_cycle(p, m);
        if (m->waits_on >= 0 && m->src == r) {
            snprintf(why, cap,
                     "recv from rank %d (tag %d) can never complete: that is this rank, which "
                     "sent nothing it could receive and waits in this recv (a deadlock)",
                     m->src, m->tag);
        } else if (m->waits_on >= 0) {
            snprintf(why, cap,
                     "recv from rank %d (tag %d) can never complete: rank %d waits in a recv "
                     "itself (from rank %d), a cycle of blocking recvs that no send can "
                     "break (a deadlock)",
                     m->src, m->tag, m->src, m->waits_on);
        } else if (m->src >= 0 && may_send(state, m->src)) {
            if (can[m->src])
                continue;
            snprintf(why, cap,
                     "recv from rank %d (tag %d) can never complete: rank %d waits in a recv "
                     "itself, which only ranks that wait in recvs could answer (a deadlock)",
                     m->src, m->tag, m->src);
        } else if (m->src >= 0) {
            snprintf(why, cap,
                     "recv from rank %d (tag %d) can never complete: rank %d %s and sent "
                     "nothing that it could receive",
                     m->src, m->tag, m->src,
                     state[m->src] == LAB_RANK_DEAD     ? "is dead"
                     : state[m->src] == LAB_RANK_FAILED ? "stopped at an error"
                                                        : "has no statement left to run");
        } else {
            bool any = false, running = false;
            for (int q = 0; q < p->np && !any; q++) {
                any = q != r && can[q];
                running |= q != r && may_send(state, q);
            }
            if (any)
                continue;
            if (running)
                snprintf(why, cap,
                         "recv from any rank (tag %d) can never complete: every other rank "
                         "waits in a recv itself or has no statement left to run, and none sent "
                         "anything that it could receive (a deadlock)",
                         m->tag);
            else
                snprintf(why, cap,
                         "recv from any rank (tag %d) can never complete: no other rank has a "
                         "statement left to run, and none sent anything that it could receive",
                         m->tag);
        }
        forget_failed(p, i);
        hopeless = r;
    }
    free(can);
    return hopeless;
}
