/* The header (row 0): which ranks of the world are on screen, and during a
 * collective its name, algorithm, phase and step; the status line: the last
 * message; the keys' hints where the command line is when it is closed. */
#include <stdio.h>
#include <string.h>

#include <curses.h>

#include "tui/internal.h"
#include "tui/screen.h"

/* "all_reduce  ring  reduce-scatter  step 2 of 6", from step
 * mode's record while a collective is stepped, else from the first busy
 * rank's last step event. Empty when no collective runs. For a narrow
 * screen, level 1 leaves out "(paused)", level 2 the phase too. */
static void collective_text(const tui_t *t, int level, char *buf, size_t cap)
{
    const lab_model_t *m = t->m;
    const lab_stepper_t *st = &m->stepper;
    const lab_step_rec_t *rec = tui__step_rec(t);
    buf[0] = '\0';
    bool brief = level >= 2, plain = level >= 1;
    int live = st->active && st->steps > 0 ? (st->cur > 0        ? st->cur
                                              : st->recorded > 0 ? st->recorded
                                                                 : 0)
                                           : -1;
    /* A recorded step, shown again (b/f), or the collective's end: the
     * header names the step the panels show. */
    bool again = st->active && lab_stepper_viewed(st) + 1 < lab_stepper_nrecs(st);
    if (rec != NULL && (!st->active || again)) {
        const char *phase = brief || rec->desc.phase == NULL ? "" : rec->desc.phase;
        snprintf(buf, cap, "%s  %s%s%s  step %d of %d%s", rec->coll, rec->algo,
                 phase[0] ? "  " : "", phase, rec->k, rec->n,
                 st->active && !plain ? " (shown again; f goes on)" : "");
        return;
    }
    if (live >= 0) {
        int k = live;
        const char *phase = "";
        /* The step's description: in descs until it ran, in its record after. */
        if (k > 0 && k <= st->steps && st->descs != NULL && st->descs[k].phase != NULL)
            phase = st->descs[k].phase;
        for (size_t i = 0; phase[0] == '\0' && i < st->nrecs; i++)
            if (st->recs[i]->k == k && st->recs[i]->desc.phase != NULL)
                phase = st->recs[i]->desc.phase;
        if (brief)
            phase = "";
        snprintf(buf, cap, "%s  %s%s%s  step %d of %d%s", st->coll, st->algo, phase[0] ? "  " : "",
                 phase, k, st->steps, lab_model_paused(m) && !plain ? " (paused)" : "");
        return;
    }
    for (int r = 0; r < m->np; r++) {
        const lab_rank_model_t *rm = &m->sess.ranks[r];
        if (lab_model_life(m, r) == LAB_LIFE_BUSY && rm->where[0] != '\0') {
            snprintf(buf, cap, "%s%s%s", rm->where, rm->algo[0] && !brief ? "  " : "",
                     brief ? "" : rm->algo);
            return;
        }
    }
}

/* While a step is shown: the bytes its steps moved so far, what the
 * alpha-beta model says the whole collective costs, and how long the
 * steps so far took; each "" when there is nothing to say. */
static void cost_text(tui_t *t, char *moved, char *est, char *took, size_t cap)
{
    const lab_step_rec_t *rec = tui__step_rec(t);
    moved[0] = est[0] = took[0] = '\0';
    if (rec == NULL)
        return;
    char so_far[32];
    lab_stepview_bytes_text(lab_stepview_bytes(&t->m->stepper, rec->k), so_far, sizeof(so_far));
    if (t->sv.s == NULL) {
        snprintf(moved, cap, "moved %s", so_far);
        return;
    }
    char total[32];
    lab_stepview_bytes_text(t->sv.stats.total_bytes, total, sizeof(total));
    snprintf(moved, cap, "moved %s/%s", so_far, total);
    snprintf(est, cap, "est %.1f us", t->sv.stats.cost_us);
    /* Measured as the session saw the steps: with the control messages'
     * latency, so far above the estimate for small tensors. */
    double us = lab_stepview_took_us(&t->m->stepper, rec->k);
    if (us >= 1000)
        snprintf(took, cap, "took %.1f ms", us / 1000);
    else if (rec->k > 0)
        snprintf(took, cap, "took %.0f us", us);
}

/* The header from its parts, those left out being NULL or "":
 * " ranks 0-5 of 8  |  all_reduce  ring ...  |  moved 128 B/1.8 KiB  est 14.0 us  took 3 ms" */
static int join_header(char *line, size_t cap, const char *ranks, const char *coll,
                       const char *moved, const char *est, const char *took)
{
    const char *parts[] = {ranks, coll, moved, est, took};
    size_t at = 0;
    int last = -1; /* the part written last */
    line[0] = '\0';
    for (int i = 0; i < 5; i++) {
        if (parts[i] == NULL || parts[i][0] == '\0' || at >= cap)
            continue;
        /* A bar between the ranks, the collective and its numbers; blanks
         * between the numbers. */
        const char *sep = last < 0 ? " " : i >= 3 && last >= 2 ? "  " : "  |  ";
        at += (size_t)snprintf(line + at, cap - at, "%s%s", sep, parts[i]);
        last = i;
    }
    return (int)strlen(line);
}

void tui__draw_header(tui_t *t, int w)
{
    const lab_model_t *m = t->m;
    char line[512], coll[256], moved[96], est[96], took[96], ranks[64];
    if (m->np == 0)
        snprintf(ranks, sizeof(ranks), "no ranks");
    else if (t->shown_from == t->shown_to) /* one panel: zoomed, or a small screen */
        snprintf(ranks, sizeof(ranks), "rank %d of %d", t->shown_from, m->np);
    else
        snprintf(ranks, sizeof(ranks), "ranks %d-%d of %d", t->shown_from, t->shown_to, m->np);
    /* Every rank on screen: the grid says as much, and the ranks go first
     * when the line is too wide. */
    bool all_shown = m->np == 0 || (t->shown_from == 0 && t->shown_to == m->np - 1);
    collective_text(t, 0, coll, sizeof(coll));
    cost_text(t, moved, est, took, sizeof(moved));
    /* Too wide (80 columns): what matters least goes first, whole parts
     * rather than a number cut in two. */
    int len = join_header(line, sizeof(line), ranks, coll, moved, est, took);
    if (len > w)
        len = join_header(line, sizeof(line), ranks, coll, moved, est, NULL);
    if (len > w && all_shown)
        len = join_header(line, sizeof(line), NULL, coll, moved, est, NULL);
    if (len > w) {
        collective_text(t, 1, coll, sizeof(coll));
        len = join_header(line, sizeof(line), all_shown ? NULL : ranks, coll, moved, est, NULL);
    }
    if (len > w)
        len = join_header(line, sizeof(line), all_shown ? NULL : ranks, coll, moved, NULL, NULL);
    if (len > w) {
        collective_text(t, 2, coll, sizeof(coll));
        len = join_header(line, sizeof(line), all_shown ? NULL : ranks, coll, moved, NULL, NULL);
    }
    if (len > w)
        len = join_header(line, sizeof(line), all_shown ? NULL : ranks, coll, NULL, NULL, NULL);
    attrset(tui_attr(TUI_ROLE_HEADER));
    mvhline(0, 0, ' ', w);
    attrset(0);
    tui_text(0, 0, w, TUI_ROLE_HEADER, line);
}

void tui__draw_status(const tui_t *t, int y, int w)
{
    tui_blank(y, 0, w);
    if (t->cl.active && t->cl.hint[0] != '\0') {
        tui_text(y, 0, w, TUI_ROLE_DIM, t->cl.hint);
    } else if (t->status[0] != '\0') {
        /* A message of several lines shows its first; the plain shell
         * (`q`) has them all. */
        char first[512];
        snprintf(first, sizeof(first), "%.*s", (int)strcspn(t->status, "\n"), t->status);
        tui_text(y, 0, w, t->status_error ? TUI_ROLE_ERROR : TUI_ROLE_NORMAL, first);
    }
}

void tui__draw_hints(int y, int w)
{
    tui_blank(y, 0, w);
    tui_text(y, 0, w, TUI_ROLE_DIM,
             "n next  c cont  b/f back/fwd  s sums  : command  enter zoom  ? help  q leave");
}
