/* The narration pane: what a front end tells the person while it runs
 * lines in the view (a scenario's narration, the lines it runs, its checks),
 * the newest at the bottom, wrapped at words, and under them what the view
 * waits for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "tui/internal.h"
#include "tui/screen.h"

/* The pane's text rows at most: the panels keep the rest. While a step
 * is shown its panels and messages need the room: the newest line and what
 * the view waits for. */
#define NOTES_MAX_ROWS      5
#define NOTES_MAX_ROWS_STEP 2

static tui_role_t note_role(tui_note_t kind)
{
    switch (kind) {
    case TUI_NOTE_BOLD:
        return TUI_ROLE_TITLE;
    case TUI_NOTE_DIM:
        return TUI_ROLE_DIM;
    case TUI_NOTE_GOOD:
        return TUI_ROLE_IDLE;
    case TUI_NOTE_BAD:
        return TUI_ROLE_ERROR;
    default:
        return TUI_ROLE_NORMAL;
    }
}

/* Columns of the first n bytes of s (UTF-8: continuation bytes take none). */
static int cols(const char *s, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n && s[i] != '\0'; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* The bytes of text's first row at width w: up to the last blank that
 * fits, or w columns when no blank does. *next_p: where the next row
 * starts (after the blank). */
static size_t row_len(const char *text, int w, const char **next_p)
{
    size_t n = strlen(text);
    if (cols(text, n) <= w) {
        *next_p = text + n;
        return n;
    }
    size_t fit = 0, blank = 0;
    while (fit < n && cols(text, fit + 1) <= w)
        fit++;
    while (fit < n && ((unsigned char)text[fit] & 0xC0) == 0x80)
        fit--; /* not inside a character */
    for (size_t i = fit; i > 0 && blank == 0; i--)
        if (text[i] == ' ')
            blank = i;
    if (blank == 0) {
        *next_p = text + (fit > 0 ? fit : 1);
        return fit > 0 ? fit : 1;
    }
    *next_p = text + blank + 1;
    return blank;
}

static int rows_of(const char *text, int w)
{
    int rows = 0;
    const char *next;
    do {
        row_len(text, w, &next);
        text = next;
        rows++;
    } while (*text != '\0');
    return rows;
}

/* What the view waits for, as the pane's last line. */
static void wait_text(const tui_t *t, char *buf, size_t cap)
{
    const char *text = t->wait.text, *sep = text[0] != '\0' ? "  " : "";
    switch (t->wait.what) {
    case TUI_WAIT_KEY:
        snprintf(buf, cap, "%s%s(space or enter goes on)", text, sep);
        break;
    case TUI_WAIT_STEPS:
        snprintf(buf, cap, "%s%s(n runs a step, c the rest; then the scenario goes on)", text, sep);
        break;
    case TUI_WAIT_LEAVE:
        snprintf(buf, cap, "%s%s(q leaves)", text, sep);
        break;
    }
}

int tui__notes_rows(tui_t *t, int avail, int w)
{
    if (t->n_notes == 0 && !t->wait.on)
        return 0;
    int max = avail / 3 - 2, most = tui__step_rec(t) != NULL ? NOTES_MAX_ROWS_STEP : NOTES_MAX_ROWS;
    if (max > most)
        max = most;
    /* On a small screen the narration gives way to the panels, but not
     * what the view waits for: a key nobody knows to press. */
    if (max < 1 && t->wait.on && avail >= 6)
        max = 1;
    if (max < 1)
        return 0;
    int rows = 0;
    if (t->wait.on) {
        char text[512];
        wait_text(t, text, sizeof(text));
        rows += rows_of(text, w - 4);
    }
    for (size_t i = t->n_notes; i > 0 && rows < max; i--)
        rows += rows_of(t->notes[i - 1].text, w - 4);
    return 2 + (rows < max ? rows : max);
}

/* Draws text's rows ending at row *end (exclusive) and moves *end up past
 * them. When they do not all fit under top: the newest line (first) shows
 * its first rows, an older one its last, as a terminal scrolls. Returns
 * whether there is room left above. */
static bool draw_up(const char *text, tui_role_t role, int top, int *end, int w, bool first)
{
    int n = rows_of(text, w - 4), row = *end - n, stop = *end;
    if (row < top && first) {
        row = top;
    }
    const char *next;
    for (const char *p = text; row < stop; p = next) {
        size_t len = row_len(p, w - 4, &next);
        if (row >= top) {
            attrset(tui_attr(role));
            mvaddnstr(row, 2, p, (int)len);
            attrset(A_NORMAL);
        }
        row++;
        if (*next == '\0')
            break;
    }
    *end -= n;
    return *end > top;
}

void tui__draw_notes(tui_t *t, int y, int h, int w)
{
    if (h < 3)
        return;
    char title[200];
    snprintf(title, sizeof(title), " %s ", t->notes_title[0] ? t->notes_title : "narration");
    tui_frame(y, 0, h, w, TUI_ROLE_BORDER, NULL);
    tui_text(y, 1, w - 2, TUI_ROLE_MSGS, title);
    int top = y + 1, end = y + h - 1;
    bool more = true;
    if (t->wait.on) {
        char text[512];
        wait_text(t, text, sizeof(text));
        more = draw_up(text, TUI_ROLE_FOCUS, top, &end, w, true);
    }
    for (size_t i = t->n_notes; i > 0 && more && end > top; i--)
        more = draw_up(t->notes[i - 1].text, note_role(t->notes[i - 1].kind), top, &end, w,
                       !t->wait.on && i == t->n_notes);
}

void tui__notes_fini(tui_t *t)
{
    for (size_t i = 0; i < t->n_notes; i++)
        free(t->notes[i].text);
    free(t->notes);
    t->notes = NULL;
    t->n_notes = 0;
}
