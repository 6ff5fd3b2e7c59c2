/* A rank's panel: its frame titled with the rank, host and pid; its life
 * (idle, busy and where, paused before step k, dead and why); then every
 * tensor it has shown, as torch prints it, a line too long cut in the
 * middle with the tensor's length after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor.h"
#include "tui/internal.h"
#include "tui/layout.h"
#include "tui/screen.h"

static tui_role_t life_role(lab_life_t life)
{
    switch (life) {
    case LAB_LIFE_IDLE:
        return TUI_ROLE_IDLE;
    case LAB_LIFE_BUSY:
    case LAB_LIFE_STARTING:
        return TUI_ROLE_BUSY;
    case LAB_LIFE_PAUSED:
        return TUI_ROLE_PAUSED;
    case LAB_LIFE_UNRESPONSIVE:
    case LAB_LIFE_DEAD:
        return TUI_ROLE_DEAD;
    }
    return TUI_ROLE_NORMAL;
}

static void life_text(const lab_model_t *m, int r, char *buf, size_t cap)
{
    const lab_rank_model_t *rm = &m->sess.ranks[r];
    const lab_stepper_t *st = &m->stepper;
    switch (lab_model_life(m, r)) {
    case LAB_LIFE_STARTING:
        snprintf(buf, cap, "starting");
        break;
    case LAB_LIFE_IDLE:
        snprintf(buf, cap, "idle");
        break;
    case LAB_LIFE_BUSY:
        snprintf(buf, cap, "busy%s%s", rm->where[0] ? ": " : "", rm->where);
        break;
    case LAB_LIFE_PAUSED:
        snprintf(buf, cap, "paused before step %d/%d", st->cur, st->steps);
        break;
    case LAB_LIFE_UNRESPONSIVE:
        snprintf(buf, cap, "not responding: %s", m->life[r].cause);
        break;
    case LAB_LIFE_DEAD:
        snprintf(buf, cap, "dead: %s", m->life[r].cause[0] ? m->life[r].cause : "exited");
        break;
    }
}

static int64_t numel(const lab_snap_t *sn)
{
    int64_t n = 1;
    for (int d = 0; d < sn->ndim; d++)
        n *= sn->shape[d];
    return n;
}

/* Draws one snapshot from row *y on, never below y_end; returns false when
 * it did not fit. */
static bool draw_snap(const lab_snap_t *sn, int *y, int y_end, int x, int w)
{
    char prefix[48];
    if (sn->of > 0)
        snprintf(prefix, sizeof(prefix), "%s[%d] = ", sn->name, sn->index);
    else
        snprintf(prefix, sizeof(prefix), "%s = ", sn->name);
    char *text = dl_tensor_format_shown(sn->t->dtype, sn->ndim, sn->shape, sn->device, sn->t->data);
    if (text == NULL)
        return true;
    char note[32], line[1024], fitted[1024];
    snprintf(note, sizeof(note), " (%lld)", (long long)numel(sn));
    const tui_glyphs_t *g = tui_glyphs();
    bool first = true, fit = true;
    /* A tensor of two or more dimensions prints on several lines, each
     * indented under the first as torch aligns them. */
    for (char *p = text; *p != '\0' || first;) {
        if (*y >= y_end) {
            fit = false;
            break;
        }
        char *nl = strchr(p, '\n');
        size_t n = nl != NULL ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof(line), "%*s%.*s", first ? 0 : (int)strlen(prefix), "", (int)n, p);
        char *body = line;
        if (first) {
            snprintf(fitted, sizeof(fitted), "%s%s", prefix, line);
            body = fitted;
        }
        char cut[1024];
        tui_text((*y)++, x, w, TUI_ROLE_NORMAL,
                 tui_elide(body, note, g->ellipsis, g->ellipsis_w, w, cut, sizeof(cut)));
        first = false;
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    free(text);
    return fit;
}

void tui__draw_panel(const tui_t *t, int r, int y, int x, int h, int w, bool focused)
{
    const lab_model_t *m = t->m;
    const lab_rank_model_t *rm = &m->sess.ranks[r];
    char title[128];
    if (rm->pid > 0)
        snprintf(title, sizeof(title), "rank %d  %s  pid %d", r, m->life[r].host, rm->pid);
    else
        snprintf(title, sizeof(title), "rank %d", r);
    tui_frame(y, x, h, w, focused ? TUI_ROLE_FOCUS : TUI_ROLE_BORDER, title);
    int ix = x + 1, iw = w - 2, iy = y + 1, y_end = y + h - 1;
    if (iw <= 0 || iy >= y_end)
        return;
    char life[300];
    life_text(m, r, life, sizeof(life));
    tui_text(iy++, ix, iw, life_role(lab_model_life(m, r)), life);
    for (int i = 0; i < rm->n_shown; i++) {
        int at = iy;
        if (!draw_snap(&rm->shown[i], &iy, y_end, ix, iw)) {
            /* Say what does not fit rather than cutting silently. */
            char more[64];
            snprintf(more, sizeof(more), "(%d more; enter zooms)", rm->n_shown - i);
            tui_blank(y_end - 1 > at ? y_end - 1 : at, ix, iw);
            tui_text(y_end - 1 > at ? y_end - 1 : at, ix, iw, TUI_ROLE_DIM, more);
            break;
        }
    }
}
