/* The log pane: the session's point-to-point operations (send, recv,
 * isend, irecv) in the order the shell heard of them, from the session
 * model's log (lab/session/p2p.h), newest at the bottom, each with the
 * operation it was matched with. */
#include <stdio.h>

#include <curses.h>

#include "tui/internal.h"
#include "tui/screen.h"

/* Whether the pane is up: as `l` last said, else while no step is shown
 * and there is something to show. */
static bool log_wanted(tui_t *t)
{
    if (t->log_set)
        return t->log_on;
    return tui__step_rec(t) == NULL && lab_p2p_log_len(&t->m->p2p) > 0;
}

int tui__log_rows(tui_t *t, int avail)
{
    if (!log_wanted(t))
        return 0;
    size_t n = lab_p2p_log_len(&t->m->p2p);
    int want = 2 + (n > 0 ? (int)(n < 100 ? n : 100) : 1);
    if (want > avail / 2)
        want = avail / 2;
    return want < 3 ? 0 : want;
}

/* One entry as a line: "#2  0.014 s  r0 send  -> r1  tag 0  16 B  matched #3 recv". */
static void entry_line(const lab_p2p_t *p, const lab_p2p_entry_t *e, char *buf, size_t cap)
{
    char peer[16], bytes[32], match[64];
    if (e->peer < 0)
        snprintf(peer, sizeof(peer), "any");
    else
        snprintf(peer, sizeof(peer), "r%d", e->peer);
    if (e->bytes >= 0)
        snprintf(bytes, sizeof(bytes), "%lld B", e->bytes);
    else
        snprintf(bytes, sizeof(bytes), "? B");
    if (e->matched == 0) {
        snprintf(match, sizeof(match), "%s", e->failed ? "failed" : "waiting");
    } else {
        const lab_p2p_entry_t *o = lab_p2p_log_seq(p, e->matched);
        snprintf(match, sizeof(match), "matched #%llu%s%s at %.3f s",
                 (unsigned long long)e->matched, o != NULL ? " " : "",
                 o != NULL ? lab_p2p_op_name(o) : "", e->t_matched);
    }
    snprintf(buf, cap, "#%-3llu %8.3f s  r%d %-5s %s %-3s  tag %d  %s  %s",
             (unsigned long long)e->seq, e->t, e->rank, lab_p2p_op_name(e), e->send ? "->" : "<-",
             peer, e->tag, bytes, match);
}

void tui__draw_log(tui_t *t, int y, int h, int w)
{
    if (h < 3)
        return;
    const lab_p2p_t *p = &t->m->p2p;
    size_t n = lab_p2p_log_len(p);
    char title[96];
    snprintf(title, sizeof(title), " point-to-point: %llu operation%s  (l hides) ",
             (unsigned long long)p->n_log, p->n_log == 1 ? "" : "s");
    tui_frame(y, 0, h, w, TUI_ROLE_BORDER, NULL);
    tui_text(y, 1, w - 2, TUI_ROLE_MSGS, title);
    int rows = h - 2;
    if (n == 0) {
        tui_text(y + 1, 2, w - 4, TUI_ROLE_DIM, "(no send or recv yet)");
        return;
    }
    /* The newest that fit, oldest first. */
    size_t from = n > (size_t)rows ? n - (size_t)rows : 0;
    for (size_t i = from; i < n; i++) {
        char line[256];
        const lab_p2p_entry_t *e = lab_p2p_log_at(p, i);
        entry_line(p, e, line, sizeof(line));
        tui_text(y + 1 + (int)(i - from), 2, w - 4, e->matched ? TUI_ROLE_NORMAL : TUI_ROLE_PAUSED,
                 line);
    }
}
