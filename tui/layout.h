/* The terminal view's geometry, as pure functions of sizes (no curses), so
 * that the unit tests can check them: how rank panels tile a screen, which
 * ranks a scrolled grid shows, and how a line too long for its panel is cut
 * in the middle. */
#ifndef TUI_LAYOUT_H
#define TUI_LAYOUT_H

#include <stddef.h>

/* The smallest panel worth drawing: a border, the life line and two
 * tensors, each wide enough for "t = tensor([0, 1, 2])". */
#define TUI_PANEL_MIN_W 24
#define TUI_PANEL_MIN_H 5

typedef struct {
    int cols, rows;       /* panels across and down */
    int panel_w, panel_h; /* every panel's size; the last column and row take the rest */
    int per_page;         /* cols * rows: the panels shown at once */
} tui_grid_t;

/* Tiles n panels (n >= 1) in a w x h area. When all fit at the minimum
 * size, the tiling whose panels are closest to a readable shape wins
 * (width counts a third of height: text lines are wide); else as many as
 * fit are shown at once and the grid scrolls. An area smaller than one
 * minimum panel still gets one panel, of the whole area. */
tui_grid_t tui_grid_fit(int n, int w, int h);

/* The first panel to show so that panel focus is on screen, moving the
 * previous first (first) by whole rows, and never past the last row. */
int tui_grid_first(const tui_grid_t *g, int n, int focus, int first);

/* Where the i-th panel shown (0 .. per_page-1) goes in the area. */
void tui_grid_cell(const tui_grid_t *g, int w, int h, int i, int *y_p, int *x_p, int *h_p,
                   int *w_p);

/* Fits text (ASCII, as torch prints numbers) into width columns: as it is
 * when it fits, else its head, mark, its tail and note (e.g. " (100)", the
 * tensor's length), so that both ends of a long tensor stay visible. mark
 * counts as mark_w columns (a UTF-8 "…" is one). Writes at most cap bytes
 * into out, NUL-terminated; returns out. */
char *tui_elide(const char *text, const char *note, const char *mark, int mark_w, int width,
                char *out, size_t cap);

#endif
