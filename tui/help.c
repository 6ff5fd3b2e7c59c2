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
    "up/down      scroll a long output box (pgup/pgdn a page)",
    "q            back to the plain shell; the ranks keep running",
    "Ctrl-C       interrupt what the ranks run",
    "",
    "Step mode: :step on, then a collective (:all_reduce t).",
    "A scenario (--tui): space or enter goes on from a pause.",
};

/* A box centred in h x w holding lines, at least min_w wide; clears its
 * inside. */
static void centred_box(const char *title, const char *const *lines, int n, int h, int w, int min_w)
{
    int bw = min_w - 4;
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

void tui__draw_help(const tui_t *t, int h, int w)
{
    enum { N = (int)(sizeof(help_lines) / sizeof(help_lines[0])) };
    const char *lines[N];
    memcpy(lines, help_lines, sizeof(lines));
    /* A scenario's view (a front end narrates in it) has no plain shell
     * to go back to: `q` leaves the scenario. */
    for (int i = 0; i < N && t->notes_title[0] != '\0'; i++)
        if (strncmp(lines[i], "q ", 2) == 0)
            lines[i] = "q            leave the scenario (its exit code at the end, 1 before)";
    centred_box("keys (any key closes)", lines, N, h, w, 0);
}

void tui__draw_output(tui_t *t, int h, int w)
{
    enum { MAX_ROWS = 1024 };
    static char rows[MAX_ROWS][256];
    const char *lines[MAX_ROWS];
    /* Long lines wrap at the box's width, indented as they began. */
    int width = w - 4 < (int)sizeof(rows[0]) - 1 ? w - 4 : (int)sizeof(rows[0]) - 1;
    if (width < 8)
        return;
    int n = 0;
    for (const char *p = t->output; *p != '\0' && n < MAX_ROWS;) {
        size_t len = strcspn(p, "\n");
        size_t indent = strspn(p, " "), at = 0;
        do {
            size_t lead = at > 0 ? indent + 2 : 0;
            if (lead > (size_t)width / 2)
                lead = 0;
            size_t take = len - at < (size_t)width - lead ? len - at : (size_t)width - lead;
            size_t next = at + take;
            if (at + take < len) { /* at a blank, where the line has one */
                size_t b = take;
                while (b > take / 2 && p[at + b] != ' ')
                    b--;
                if (p[at + b] == ' ') {
                    take = b;
                    next = at + b + 1;
                }
            }
            snprintf(rows[n], sizeof(rows[n]), "%*s%.*s", (int)lead, "", (int)take, p + at);
            lines[n] = rows[n];
            n++;
            at = next;
        } while (at < len && n < MAX_ROWS);
        p += len + (p[len] == '\n');
    }
    int room = h - 4;
    if (room < 1)
        return;
    t->output_max = n > room ? n - room : 0;
    if (t->output_top > t->output_max)
        t->output_top = t->output_max;
    char title[96];
    if (n > room)
        snprintf(title, sizeof(title),
                 "output, lines %d-%d of %d (up/down, pgup/pgdn scroll; any other key closes)",
                 t->output_top + 1, t->output_top + room, n);
    else
        snprintf(title, sizeof(title), "output (any key closes)");
    /* Wrapped, the box takes the screen's width, as its lines were cut to. */
    centred_box(title, lines + t->output_top, n - t->output_top < room ? n - t->output_top : room,
                h, w, n > room || strlen(t->output) > (size_t)width ? w : 0);
}
