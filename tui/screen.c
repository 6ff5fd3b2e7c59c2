/* See screen.h. */
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include <curses.h>

#include "tui/screen.h"

static SCREEN *g_screen;
static bool g_utf8;
static int g_attrs[TUI_ROLE__COUNT];
static bool g_color;

/* Chunks' colours, after the roles' pairs. */
static const short chunk_colors[] = {COLOR_CYAN,    COLOR_GREEN, COLOR_YELLOW,
                                     COLOR_MAGENTA, COLOR_BLUE,  COLOR_RED};
#define N_CHUNK_COLORS (int)(sizeof(chunk_colors) / sizeof(chunk_colors[0]))
#define CHUNK_PAIR0    16

static const tui_glyphs_t utf8_glyphs = {"─", "│", "┌", "┐", "└", "┘", "…", 1, "→", "←", 1};
static const tui_glyphs_t ascii_glyphs = {"-", "|", "+", "+", "+", "+", "...", 3, "->", "<-", 2};

/* Colour pairs by role (foreground on the terminal's own background). */
static void color_theme(void)
{
    static const struct {
        tui_role_t role;
        short fg;
        int extra;
    } pairs[] = {
        {TUI_ROLE_HEADER, COLOR_CYAN, A_BOLD},  {TUI_ROLE_BORDER, COLOR_BLUE, 0},
        {TUI_ROLE_FOCUS, COLOR_YELLOW, A_BOLD}, {TUI_ROLE_TITLE, COLOR_WHITE, A_BOLD},
        {TUI_ROLE_IDLE, COLOR_GREEN, 0},        {TUI_ROLE_BUSY, COLOR_YELLOW, 0},
        {TUI_ROLE_PAUSED, COLOR_MAGENTA, 0},    {TUI_ROLE_DEAD, COLOR_RED, A_BOLD},
        {TUI_ROLE_ERROR, COLOR_RED, A_BOLD},    {TUI_ROLE_DIM, COLOR_WHITE, A_DIM},
        {TUI_ROLE_MSGS, COLOR_CYAN, A_BOLD},
    };
    start_color();
    use_default_colors();
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        init_pair((short)(i + 1), pairs[i].fg, -1);
        g_attrs[pairs[i].role] = (int)(COLOR_PAIR(i + 1) | (attr_t)pairs[i].extra);
    }
    for (int c = 0; c < N_CHUNK_COLORS; c++)
        init_pair((short)(CHUNK_PAIR0 + c), chunk_colors[c], -1);
    g_attrs[TUI_ROLE_CHANGED] = A_REVERSE | A_BOLD;
    g_color = true;
}

/* Without colour each role still reads differently. */
static void plain_theme(void)
{
    g_attrs[TUI_ROLE_HEADER] = A_REVERSE;
    g_attrs[TUI_ROLE_FOCUS] = A_BOLD;
    g_attrs[TUI_ROLE_TITLE] = A_BOLD;
    g_attrs[TUI_ROLE_PAUSED] = A_UNDERLINE;
    g_attrs[TUI_ROLE_DEAD] = A_BOLD | A_REVERSE;
    g_attrs[TUI_ROLE_ERROR] = A_BOLD;
    g_attrs[TUI_ROLE_DIM] = A_DIM;
    g_attrs[TUI_ROLE_CHANGED] = A_REVERSE | A_BOLD;
    g_attrs[TUI_ROLE_MSGS] = A_BOLD;
}

bool tui_screen_start(void)
{
    if (g_screen != NULL) { /* again, after tui_screen_stop */
        set_term(g_screen);
        tui_screen_resized();
        clearok(curscr, TRUE);
        return true;
    }
    setlocale(LC_ALL, "");
    g_utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    g_screen = newterm(NULL, stdout, stdin);
    if (g_screen == NULL)
        return false;
    cbreak(); /* Ctrl-C stays a signal: the front end interrupts the ranks */
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE); /* the loop reads only what is there */
    set_escdelay(25);
    curs_set(0);
    if (has_colors() && getenv("NO_COLOR") == NULL)
        color_theme();
    else
        plain_theme();
    return true;
}

void tui_screen_stop(void)
{
    if (g_screen == NULL)
        return;
    curs_set(1);
    endwin();
    fflush(stdout);
}

void tui_screen_resized(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resizeterm(ws.ws_row, ws.ws_col);
}

const tui_glyphs_t *tui_glyphs(void)
{
    return g_utf8 ? &utf8_glyphs : &ascii_glyphs;
}

int tui_attr(tui_role_t role)
{
    return g_attrs[role];
}

int tui_chunk_attr(int c)
{
    if (!g_color || c < 0)
        return 0;
    return (int)COLOR_PAIR(CHUNK_PAIR0 + c % N_CHUNK_COLORS);
}

/* The bytes of text that fill at most w columns: a UTF-8 glyph ("…", "→")
 * is several bytes but one column, and addnstr counts bytes. */
static int bytes_for_columns(const char *text, int w)
{
    if (!g_utf8) {
        size_t n = strlen(text);
        return n < (size_t)w ? (int)n : w;
    }
    mbstate_t st;
    memset(&st, 0, sizeof(st));
    int used = 0, cols = 0;
    while (text[used] != '\0') {
        wchar_t wc;
        size_t n = mbrtowc(&wc, text + used, MB_CUR_MAX, &st);
        if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
            n = 1; /* not UTF-8: a byte, a column */
            memset(&st, 0, sizeof(st));
            wc = L'?';
        }
        int cw = wcwidth(wc);
        if (cw < 0)
            cw = 1;
        if (cols + cw > w)
            break;
        cols += cw;
        used += (int)n;
    }
    return used;
}

void tui_text(int y, int x, int w, tui_role_t role, const char *text)
{
    if (w <= 0)
        return;
    attrset(g_attrs[role]);
    mvaddnstr(y, x, text, bytes_for_columns(text, w));
    attrset(A_NORMAL);
}

void tui_blank(int y, int x, int w)
{
    attrset(A_NORMAL);
    mvhline(y, x, ' ', w);
}

void tui_frame(int y, int x, int h, int w, tui_role_t role, const char *title)
{
    const tui_glyphs_t *g = tui_glyphs();
    if (h < 2 || w < 2)
        return;
    attrset(g_attrs[role]);
    mvaddstr(y, x, g->tl);
    for (int i = 1; i < w - 1; i++)
        addstr(g->h);
    addstr(g->tr);
    for (int r = 1; r < h - 1; r++) {
        mvaddstr(y + r, x, g->v);
        mvaddstr(y + r, x + w - 1, g->v);
    }
    mvaddstr(y + h - 1, x, g->bl);
    for (int i = 1; i < w - 1; i++)
        addstr(g->h);
    addstr(g->br);
    attrset(A_NORMAL);
    if (title != NULL && w > 4) {
        attrset(g_attrs[role == TUI_ROLE_FOCUS ? TUI_ROLE_FOCUS : TUI_ROLE_TITLE]);
        mvaddch(y, x + 1, ' ');
        addnstr(title, w - 4);
        addch(' ');
        attrset(A_NORMAL);
    }
}
