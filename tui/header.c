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
 * rank's last step event. Empty when no collective runs. */
static void collective_text(const tui_t *t, char *buf, size_t cap)
{
    const lab_model_t *m = t->m;
    const lab_stepper_t *st = &m->stepper;
    const lab_step_rec_t *rec = tui__step_rec(t);
    buf[0] = '\0';
    if (!st->active && rec != NULL) { /* a recorded step, shown again */
        snprintf(buf, cap, "%s  %s%s%s  step %d of %d", rec->coll, rec->algo,
                 rec->desc.phase != NULL ? "  " : "",
                 rec->desc.phase != NULL ? rec->desc.phase : "", rec->k, rec->n);
        return;
    }
    if (st->active && st->steps > 0) {
        int k = st->cur > 0 ? st->cur : st->recorded > 0 ? st->recorded : 0;
        const char *phase = "";
        /* The step's description: in descs until it ran, in its record after. */
        if (k > 0 && k <= st->steps && st->descs != NULL && st->descs[k].phase != NULL)
            phase = st->descs[k].phase;
        for (size_t i = 0; phase[0] == '\0' && i < st->nrecs; i++)
            if (st->recs[i]->k == k && st->recs[i]->desc.phase != NULL)
                phase = st->recs[i]->desc.phase;
        snprintf(buf, cap, "%s  %s%s%s  step %d of %d%s", st->coll, st->algo, phase[0] ? "  " : "",
                 phase, k, st->steps, lab_model_paused(m) ? " (paused)" : "");
        return;
    }
    for (int r = 0; r < m->np; r++) {
        const lab_rank_model_t *rm = &m->sess.ranks[r];
        if (lab_model_life(m, r) == LAB_LIFE_BUSY && rm->where[0] != '\0') {
            snprintf(buf, cap, "%s%s%s", rm->where, rm->algo[0] ? "  " : "", rm->algo);
            return;
        }
    }
}

/* While a step is shown: the bytes its steps moved so far, what the
 * alpha-beta model says the whole collective costs, and how long the
 * steps so far took. */
static void cost_text(tui_t *t, char *buf, size_t cap)
{
    const lab_step_rec_t *rec = tui__step_rec(t);
    buf[0] = '\0';
    if (rec == NULL)
        return;
    char moved[32];
    lab_stepview_bytes_text(lab_stepview_bytes(&t->m->stepper, rec->k), moved, sizeof(moved));
    if (t->sv.s == NULL) {
        snprintf(buf, cap, "  |  moved %s", moved);
        return;
    }
    char total[32], took[32];
    lab_stepview_bytes_text(t->sv.stats.total_bytes, total, sizeof(total));
    /* Measured as the session saw the steps: with the control messages'
     * latency, so far above the estimate for small tensors. */
    double us = lab_stepview_took_us(&t->m->stepper, rec->k);
    if (us >= 1000)
        snprintf(took, sizeof(took), "  took %.1f ms", us / 1000);
    else if (rec->k > 0)
        snprintf(took, sizeof(took), "  took %.0f us", us);
    else
        took[0] = '\0';
    snprintf(buf, cap, "  |  moved %s/%s  est %.1f us%s", moved, total, t->sv.stats.cost_us, took);
}

void tui__draw_header(tui_t *t, int w)
{
    const lab_model_t *m = t->m;
    char line[512], coll[256], cost[128];
    collective_text(t, coll, sizeof(coll));
    cost_text(t, cost, sizeof(cost));
    int n = m->np == 0 ? snprintf(line, sizeof(line), " no ranks")
                       : snprintf(line, sizeof(line), " ranks %d-%d of %d", t->shown_from,
                                  t->shown_to, m->np);
    if (coll[0] != '\0')
        snprintf(line + n, sizeof(line) - (size_t)n, "  |  %s%s", coll, cost);
    /* Too wide: the step first, without the ranks on screen. */
    if (cost[0] != '\0' && (int)strlen(line) > w) {
        collective_text(t, coll, sizeof(coll));
        char *paused = strstr(coll, " (paused)");
        if (paused != NULL)
            *paused = '\0';
        snprintf(line, sizeof(line), " %s%s", coll, cost);
    }
    /* Still too wide (80 columns): the measured time goes first. */
    char *took = strstr(line, "  took ");
    if (took != NULL && (int)strlen(line) > w)
        *took = '\0';
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
