/* Point-to-point matching (see p2p.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/session/p2p.h"

dl_status_t lab_p2p_init(lab_p2p_t *p, int np)
{
    memset(p, 0, sizeof(*p));
    p->np = np;
    return DL_OK;
}

void lab_p2p_fini(lab_p2p_t *p)
{
    free(p->sends);
    free(p->recvs);
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
                       .blocking = !send && json_is_true(json_object_get(ev, "blocking"))};
    if (send) {
        for (size_t i = 0; i < p->n_recvs; i++)
            if (matches(&m, &p->recvs[i])) {
                drop(p->recvs, &p->n_recvs, i);
                return DL_OK;
            }
        return push(&p->sends, &p->n_sends, m);
    }
    for (size_t i = 0; i < p->n_sends; i++)
        if (matches(&p->sends[i], &m)) {
            drop(p->sends, &p->n_sends, i);
            return DL_OK;
        }
    return push(&p->recvs, &p->n_recvs, m);
}

void lab_p2p_done(lab_p2p_t *p, int rank)
{
    for (size_t i = 0; i < p->n_recvs; i++)
        if (p->recvs[i].dst == rank && p->recvs[i].blocking) {
            drop(p->recvs, &p->n_recvs, i);
            return;
        }
}

/* Whether rank q can still send anything on this line. */
static bool may_send(const lab_rank_state_t *state, int q)
{
    return state[q] == LAB_RANK_RUNNING || state[q] == LAB_RANK_UNRESPONSIVE;
}

int lab_p2p_hopeless(lab_p2p_t *p, const lab_rank_state_t *state, char *why, size_t cap)
{
    for (size_t i = 0; i < p->n_recvs; i++) {
        const lab_p2p_msg_t *m = &p->recvs[i];
        if (!m->blocking)
            continue;
        int r = m->dst;
        if (m->src >= 0) {
            if (may_send(state, m->src))
                continue;
            snprintf(why, cap,
                     "recv from rank %d (tag %d) can never complete: rank %d %s and sent "
                     "nothing that it could receive",
                     m->src, m->tag, m->src,
                     state[m->src] == LAB_RANK_DEAD ? "is dead" : "has no statement left to run");
        } else {
            bool any = false;
            for (int q = 0; q < p->np && !any; q++)
                any = q != r && may_send(state, q);
            if (any)
                continue;
            snprintf(why, cap,
                     "recv from any rank (tag %d) can never complete: no other rank has a "
                     "statement left to run, and none sent anything that it could receive",
                     m->tag);
        }
        drop(p->recvs, &p->n_recvs, i);
        return r;
    }
    return -1;
}
