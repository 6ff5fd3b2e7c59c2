/* Boxes over the screen: the keys (`?`) and a command's text output. */
#include <string.h>

#include <curses.h>

#include "tui/internal.h"
#include "tui/screen.h"

static const char *const help_lines[] = {
    "space, n     run the next step (step mode)",
    "c            continue: run the collective to its end",
    "b, left      show the previous recorded step",
    "f, right     show the next recorded step",
    "s            a step's elements as sums of the ranks' inputs",
    "l            the log of sends and recvs (shown when no step is)",
    ":            command line: any shell line (tab completes,",
    "             up/down history, esc cancels)",
    "tab          next panel (the grid scrolls to it)",
    "shift-tab    previous panel",
    "enter        zoom the panel to the whole screen, and back",
    "?            this help",
    "q            back to the plain shell; the ranks keep running",
    "",
    "Step mode: :step on, then a collective (:all_reduce t).",
    "A scenario (--tui): space or enter goes on from a pause.",
};

/* A box centred in h x w holding lines; clears its inside. */
static void centred_box(const char *title, const char *const *lines, int n, int h, int w)
{
    int bw = 0;
    for (int i = 0; i < n; i++)
        if ((int)strlen(lines[i]) > bw)
            bw = (int)strlen(lines[i]);
    bw += 4;
    int bh = n + 2;
    if (bw > w)
        bw = w;
    if (bh > h - 2)
        bh = h - 2;
    if (bh < 3)
        return;
    int y = (h - bh) / 2, x = (w - bw) / 2;
    for (int r = 0; r < bh; r++)
        tui_blank(y + r, x, bw);
    tui_frame(y, x, bh, bw, TUI_ROLE_FOCUS, title);
    for (int i = 0; i < n && i < bh - 2; i++)
        tui_text(y + 1 + i, x + 2, bw - 4, TUI_ROLE_NORMAL, lines[i]);
}

void tui__draw_help(int h, int w)
{
    centred_box("keys (any key closes)", help_lines,
                (int)(sizeof(help_lines) / sizeof(help_lines[0])), h, w);
}

void tui__draw_output(const char *text, int h, int w)
{
    enum { MAX_LINES = 256 };
    const char *lines[MAX_LINES];
    char copy[16384];
    snprintf(copy, sizeof(copy), "%s", text);
    int n = 0;
    for (char *p = copy, *save = NULL, *l; n < MAX_LINES && (l = strtok_r(p, "\n", &save));
         p = NULL)
        lines[n++] = l;
    /* What does not fit: its last lines matter most (a command's end). */
    int room = h - 4;
    int from = n > room && room > 0 ? n - room : 0;
    centred_box("output (any key closes)", lines + from, n - from, h, w);
}
