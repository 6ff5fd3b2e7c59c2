/* See match.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/session/match.h"
#include "lab/proto/proto.h"

dl_status_t lab_match_init(lab_match_t *m, int np)
{
    memset(m, 0, sizeof(*m));
    m->np = np;
    m->fp = calloc((size_t)np, sizeof(*m->fp));
    return m->fp != NULL ? DL_OK : DL_ERR_NOMEM;
}

void lab_match_forget(lab_match_t *m, int rank)
{
    if (rank < 0 || rank >= m->np)
        return;
    free(m->fp[rank].group);
    free(m->fp[rank].send);
    free(m->fp[rank].recv);
    memset(&m->fp[rank], 0, sizeof(m->fp[rank]));
}

void lab_match_clear_refusals(lab_match_t *m)
{
    for (int i = 0; i < m->n_refused; i++)
        free(m->refused[i].late);
    free(m->refused);
    m->refused = NULL;
    m->n_refused = 0;
}

void lab_match_fini(lab_match_t *m)
{
    lab_match_clear_refusals(m);
    for (int r = 0; r < m->np; r++)
        lab_match_forget(m, r);
    free(m->fp);
    m->fp = NULL;
    m->np = 0;
}

bool lab_match_pending(const lab_match_t *m)
{
    for (int r = 0; r < m->np; r++)
        if (m->fp[r].posted)
            return true;
    return false;
}

/* The root's name as torch spells it for each collective. */
static const char *root_word(const char *coll)
{
    /* broadcast_object_list and scatter_object_list too */
    return strncmp(coll, "broadcast", 9) == 0 || strncmp(coll, "scatter", 7) == 0 ? "src" : "dst";
}

dl_status_t lab_match_post(lab_match_t *m, int rank, const json_t *ev)
{
    json_t *group = json_object_get(ev, "group");
    const char *coll = lab_json_str(ev, "coll", NULL);
    const char *dtype = lab_json_str(ev, "dtype", NULL);
    if (rank < 0 || rank >= m->np || coll == NULL || dtype == NULL || !json_is_array(group) ||
        json_array_size(group) < 1 || json_array_size(group) > (size_t)m->np)
        return DL_ERR_PROTOCOL;
    lab_match_forget(m, rank);
    lab_fp_t *fp = &m->fp[rank];
    fp->ngroup = (int)json_array_size(group);
    if ((fp->group = malloc(sizeof(int) * (size_t)fp->ngroup)) == NULL)
        return DL_ERR_NOMEM;
    bool member = false;
    for (int i = 0; i < fp->ngroup; i++) {
        long long g = json_integer_value(json_array_get(group, (size_t)i));
        if (g < 0 || g >= m->np) {
            lab_match_forget(m, rank);
            return DL_ERR_PROTOCOL;
        }
        fp->group[i] = (int)g;
        member |= g == rank;
    }
    if (!member) {
        lab_match_forget(m, rank);
        return DL_ERR_PROTOCOL;
    }
    json_t *send = json_object_get(ev, "send"), *recv = json_object_get(ev, "recv");
    if (send != NULL || recv != NULL) {
        if (!json_is_array(send) || !json_is_array(recv) ||
            json_array_size(send) != (size_t)fp->ngroup ||
            json_array_size(recv) != (size_t)fp->ngroup) {
            lab_match_forget(m, rank);
            return DL_ERR_PROTOCOL;
        }
        fp->send = malloc(sizeof(long long) * (size_t)fp->ngroup);
        fp->recv = malloc(sizeof(long long) * (size_t)fp->ngroup);
        if (fp->send == NULL || fp->recv == NULL) {
            lab_match_forget(m, rank);
            return DL_ERR_NOMEM;
        }
        for (int i = 0; i < fp->ngroup; i++) {
            fp->send[i] = json_integer_value(json_array_get(send, (size_t)i));
            fp->recv[i] = json_integer_value(json_array_get(recv, (size_t)i));
        }
    }
    fp->ctx = (uint64_t)lab_json_int(ev, "ctx", 0);
    fp->seq = (uint64_t)lab_json_int(ev, "seq", 0);
    fp->call = (uint64_t)lab_json_int(ev, "call", (long long)fp->seq + 1);
    snprintf(fp->coll, sizeof(fp->coll), "%s", coll);
    /* An uneven all_to_all's counts are each rank's own: it agrees on
     * being one, not on a count. */
    int n = json_is_true(json_object_get(ev, "split"))
                ? snprintf(fp->what, sizeof(fp->what), "%s %s (split sizes)", coll, dtype)
                : snprintf(fp->what, sizeof(fp->what), "%s %s[%lld]", coll, dtype,
                           lab_json_int(ev, "count", 0));
    const char *op = lab_json_str(ev, "op", NULL);
    if (op != NULL && n < (int)sizeof(fp->what))
        n += snprintf(fp->what + n, sizeof(fp->what) - (size_t)n, " op=%s", op);
    long long root = lab_json_int(ev, "root", -1);
    if (root >= 0 && n < (int)sizeof(fp->what))
        snprintf(fp->what + n, sizeof(fp->what) - (size_t)n, " %s=%lld", root_word(coll), root);
    fp->posted = true;
    return DL_OK;
}

static bool same_key(const lab_fp_t *a, const lab_fp_t *b)
{
    return a->posted && b->posted && a->ctx == b->ctx && a->seq == b->seq;
}

static void group_label(const lab_fp_t *fp, char *buf, size_t cap)
{
    if (fp->ctx == 0) {
        snprintf(buf, cap, "the world group");
        return;
    }
    size_t len = (size_t)snprintf(buf, cap, "group [");
    for (int i = 0; i < fp->ngroup && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? ", " : "", fp->group[i]);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

/* Whether the group lists agree too: ranks that built their groups
 * differently do not agree on what a context id means. */
static bool same_group(const lab_fp_t *a, const lab_fp_t *b)
{
    return a->ngroup == b->ngroup &&
           memcmp(a->group, b->group, sizeof(int) * (size_t)a->ngroup) == 0;
}

/* The fingerprint most ranks of the group sent, to mark the others. */
static const lab_fp_t *majority(const lab_match_t *m, const lab_fp_t *key)
{
    const lab_fp_t *best = NULL;
    int best_n = 0;
    for (int i = 0; i < key->ngroup; i++) {
        const lab_fp_t *a = &m->fp[key->group[i]];
        int n = 0;
        for (int j = 0; j < key->ngroup; j++) {
            const lab_fp_t *b = &m->fp[key->group[j]];
            n += strcmp(a->what, b->what) == 0 && same_group(a, b);
        }
        if (n > best_n) {
            best_n = n;
            best = a;
        }
    }
    return best;
}

typedef struct {
    char *buf;
    size_t len, cap;
} text_t;

static void add(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(text_t *t, const char *fmt, ...)
{
    if (t->len >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* One line per rank of key's group: what it is doing instead. */
static void describe_members(text_t *t, const lab_match_t *m, const lab_fp_t *key,
                             const lab_rank_state_t *state, const lab_fp_t *expect)
{
    for (int i = 0; i < key->ngroup; i++) {
        int r = key->group[i];
        const lab_fp_t *fp = &m->fp[r];
        add(t, "\n  rank %-3d ", r);
        if (!fp->posted) {
            add(t, "%s",
                state[r] == LAB_RANK_DEAD           ? "dead"
                : state[r] == LAB_RANK_UNRESPONSIVE ? "not responding"
                : state[r] == LAB_RANK_IDLE   ? "not calling it (no statement left to run there)"
                : state[r] == LAB_RANK_FAILED ? "stopped at an error before calling it"
                                              : "still running other statements");
            continue;
        }
        add(t, "%s", fp->what);
        if (!same_key(fp, key) || !same_group(fp, key)) {
            char g[128];
            group_label(fp, g, sizeof(g));
            add(t, " (#%llu on %s)", (unsigned long long)fp->call, g);
        }
        if (expect != NULL && (strcmp(fp->what, expect->what) != 0 || !same_group(fp, expect)))
            add(t, "   <- differs");
    }
}

/* For an all_to_all with split sizes that every rank of key's group
 * called: one line per pair of ranks whose sizes do not pair up (what one
 * sends the other must expect); false when they all do. */
static bool describe_splits(text_t *t, const lab_match_t *m, const lab_fp_t *key)
{
    bool bad = false;
    for (int i = 0; i < key->ngroup; i++) {
        const lab_fp_t *a = &m->fp[key->group[i]];
        for (int j = 0; j < key->ngroup; j++) {
            const lab_fp_t *b = &m->fp[key->group[j]];
            if (a->send == NULL || b->recv == NULL || a->send[j] == b->recv[i])
                continue;
            add(t, "\n  rank %d sends %lld element%s to rank %d, which expects %lld from it",
                key->group[i], a->send[j], a->send[j] == 1 ? "" : "s", key->group[j], b->recv[i]);
            bad = true;
        }
    }
    return bad;
}

/* The first rank of key's group that has not called it because a statement
 * failed there, or -1. */
static int first_failed(const lab_fp_t *key, const lab_rank_state_t *state)
{
    for (int i = 0; i < key->ngroup; i++)
        if (state[key->group[i]] == LAB_RANK_FAILED)
            return key->group[i];
    return -1;
}

bool lab_match_waits_on_running(const lab_match_t *m, const lab_rank_state_t *state)
{
    for (int r = 0; r < m->np; r++) {
        const lab_fp_t *fp = &m->fp[r];
        for (int i = 0; fp->posted && i < fp->ngroup; i++)
            if (!m->fp[fp->group[i]].posted && state[fp->group[i]] == LAB_RANK_RUNNING)
                return true;
    }
    return false;
}

/* A rank that calls a collective already refused on this line is refused
 * at once, quietly: the report said it all. */
static void refuse_late_callers(lab_match_t *m, const lab_match_cbs_t *cbs)
{
    for (int i = 0; i < m->n_refused; i++) {
        lab_refusal_t *rf = &m->refused[i];
        for (int r = 0; r < m->np; r++) {
            const lab_fp_t *fp = &m->fp[r];
            if (rf->late[r] && fp->posted && fp->ctx == rf->ctx && fp->seq == rf->seq) {
                rf->late[r] = false;
                lab_match_forget(m, r);
                cbs->verdict(cbs->arg, r, false, rf->message);
            }
        }
    }
}

static void remember_refusal(lab_match_t *m, const lab_fp_t *key, const lab_rank_state_t *state,
                             const char *msg)
{
    bool *late = calloc((size_t)m->np, sizeof(bool));
    lab_refusal_t *n = realloc(m->refused, sizeof(*n) * (size_t)(m->n_refused + 1));
    if (late == NULL || n == NULL) {
        free(late);
        if (n != NULL)
            m->refused = n;
        return;
    }
    m->refused = n;
    for (int i = 0; i < key->ngroup; i++) {
        int g = key->group[i];
        late[g] = !m->fp[g].posted && state[g] == LAB_RANK_RUNNING;
    }
    lab_refusal_t *rf = &m->refused[m->n_refused++];
    rf->ctx = key->ctx;
    rf->seq = key->seq;
    rf->late = late;
    snprintf(rf->message, sizeof(rf->message), "%s", msg);
}

void lab_match_decide(lab_match_t *m, const lab_rank_state_t *state, bool patient,
                      const lab_match_cbs_t *cbs)
{
    int np = m->np;
    refuse_late_callers(m, cbs);
    /* Which posted ranks can still proceed: least fixpoint of "every member
     * of my group has posted my key, is running, or waits on a collective
     * that can proceed". Waits that only depend on each other stay false. */
    bool *can = calloc((size_t)np, sizeof(bool));
    if (can == NULL)
        return;
    for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < np; r++) {
            const lab_fp_t *fp = &m->fp[r];
            if (!fp->posted || can[r])
                continue;
            bool ok = true;
            for (int i = 0; i < fp->ngroup && ok; i++) {
                int g = fp->group[i];
                const lab_fp_t *o = &m->fp[g];
                if (o->posted)
                    ok = same_key(o, fp) || can[g];
                else
                    ok = state[g] == LAB_RANK_RUNNING;
            }
            if (ok) {
                can[r] = true;
                changed = true;
            }
        }
    }
    char buf[8192];
    for (int r = 0; r < np; r++) {
        lab_fp_t *fp = &m->fp[r];
        if (!fp->posted)
            continue;
        bool complete = true, agree = true;
        for (int i = 0; i < fp->ngroup; i++) {
            const lab_fp_t *o = &m->fp[fp->group[i]];
            complete &= same_key(o, fp);
            agree &= same_key(o, fp) && strcmp(o->what, fp->what) == 0 && same_group(o, fp);
        }
        if (!(complete || !can[r]))
            continue; /* someone may still call it */
        bool running = false;
        for (int i = 0; i < fp->ngroup; i++)
            running |= !m->fp[fp->group[i]].posted && state[fp->group[i]] == LAB_RANK_RUNNING;
        if (!complete && patient && running)
            continue; /* the report waits a moment for the ranks about to call it */
        text_t t = {buf, 0, sizeof(buf)};
        char g[128];
        group_label(fp, g, sizeof(g));
        lab_fp_t key = *fp; /* the members' entries are cleared below */
        int members[256];
        int nm = fp->ngroup < 256 ? fp->ngroup : 256;
        memcpy(members, fp->group, sizeof(int) * (size_t)nm);
        key.group = members;
        key.ngroup = nm;
        bool paired = true;
        if (complete && agree && fp->send != NULL) {
            add(&t, "%s #%llu on %s: the split sizes do not pair up; nothing was sent:", key.coll,
                (unsigned long long)key.call, g);
            paired = !describe_splits(&t, m, &key);
        }
        if (complete && agree && paired) {
            for (int i = 0; i < nm; i++) {
                lab_match_forget(m, members[i]);
                cbs->verdict(cbs->arg, members[i], true, NULL);
            }
            continue;
        }
        const char *msg;
        int stopped;
        if (!paired) {
            msg = "split sizes that do not pair up across ranks (see the report above)";
        } else if (complete) {
            add(&t, "collective #%llu on %s does not match across ranks; nothing was sent:",
                (unsigned long long)key.call, g);
            describe_members(&t, m, &key, state, majority(m, &key));
            msg = "mismatched collectives across ranks (see the report above)";
        } else if ((stopped = first_failed(&key, state)) >= 0) {
            /* Its own error says why: one line, no lesson on the order of
             * calls, which was not at fault. */
            add(&t,
                "%s #%llu on %s can never complete: rank %d stopped at an error before "
                "calling it; nothing was sent",
                key.coll, (unsigned long long)key.call, g, stopped);
            msg = "a rank stopped at an error before calling it";
        } else {
            add(&t, "%s #%llu on %s can never complete; nothing was sent:", key.coll,
                (unsigned long long)key.call, g);
            describe_members(&t, m, &key, state, NULL);
            add(&t, "\n  every rank of a group must call its collectives in the same order"
                    " (a line without `on` runs on every rank)");
            msg = "collective cannot complete across ranks (see the report above)";
        }
        cbs->report(cbs->arg, buf);
        if (!complete)
            remember_refusal(m, &key, state, msg);
        /* Every rank of the group that waits is released with the error. */
        for (int i = 0; i < nm; i++) {
            int q = members[i];
            /* A rank waiting on another collective that can still run is
             * left alone. */
            if (m->fp[q].posted && (same_key(&m->fp[q], &key) || !can[q])) {
                lab_match_forget(m, q);
                cbs->verdict(cbs->arg, q, false, msg);
            }
        }
    }
    free(can);
}
