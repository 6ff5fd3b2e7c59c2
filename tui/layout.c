/* See layout.h. */
#include <stdio.h>
#include <string.h>

#include "tui/layout.h"

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

tui_grid_t tui_grid_fit(int n, int w, int h)
{
    tui_grid_t g = {.cols = 1, .rows = 1, .panel_w = w, .panel_h = h, .per_page = 1};
    if (n < 1 || w < TUI_PANEL_MIN_W || h < TUI_PANEL_MIN_H)
        return g;
    int best = -1;
    for (int cols = 1; cols <= n; cols++) {
        int rows = (n + cols - 1) / cols;
        int pw = w / cols, ph = h / rows;
        if (pw < TUI_PANEL_MIN_W || ph < TUI_PANEL_MIN_H)
            continue;
        int score = min_int(pw, 3 * ph);
        if (score > best) {
            best = score;
            g = (tui_grid_t){cols, rows, pw, ph, cols * rows};
        }
    }
    if (best >= 0)
        return g;
    /* Not all fit: as many as do, in full rows. */
    g.cols = min_int(w / TUI_PANEL_MIN_W, n);
    g.rows = min_int(h / TUI_PANEL_MIN_H, (n + g.cols - 1) / g.cols);
    g.panel_w = w / g.cols;
    g.panel_h = h / g.rows;
    g.per_page = g.cols * g.rows;
    return g;
}

int tui_grid_first(const tui_grid_t *g, int n, int focus, int first)
{
    if (n <= g->per_page)
        return 0;
    int row = focus / g->cols, first_row = first / g->cols;
    if (row < first_row)
        first_row = row;
    else if (row >= first_row + g->rows)
        first_row = row - g->rows + 1;
    int last_row = (n + g->cols - 1) / g->cols - g->rows;
    if (first_row > last_row)
        first_row = last_row;
    return (first_row < 0 ? 0 : first_row) * g->cols;
}

void tui_grid_cell(const tui_grid_t *g, int w, int h, int i, int *y_p, int *x_p, int *h_p, int *w_p)
{
    int c = i % g->cols, r = i / g->cols;
    *x_p = c * g->panel_w;
    *y_p = r * g->panel_h;
    *w_p = c == g->cols - 1 ? w - *x_p : g->panel_w;
    *h_p = r == g->rows - 1 ? h - *y_p : g->panel_h;
}

char *tui_elide(const char *text, const char *note, const char *mark, int mark_w, int width,
                char *out, size_t cap)
{
    int len = (int)strlen(text), note_len = (int)strlen(note);
    if (cap == 0)
        return out;
    if (width < 0)
        width = 0;
    if (len <= width) {
        snprintf(out, cap, "%s", text);
        return out;
    }
    int room = width - note_len - mark_w;
    if (room < 2) { /* no room for both ends: the head, cut */
        snprintf(out, cap, "%.*s", width, text);
        return out;
    }
    int head = (room + 1) / 2, tail = room - head;
    snprintf(out, cap, "%.*s%s%s%s", head, text, mark, text + len - tail, note);
    return out;
}
