/* The terminal itself: the one place that starts and ends curses, picks
 * colours or plain attributes, and UTF-8 or ASCII line drawing. The other
 * files of tui/ only draw, through these roles. */
#ifndef TUI_SCREEN_H
#define TUI_SCREEN_H

#include <stdbool.h>

/* What a piece of the screen means; the theme maps each to colour or, on
 * a monochrome terminal or with NO_COLOR, to bold/reverse/underline. */
typedef enum {
    TUI_ROLE_NORMAL,
    TUI_ROLE_HEADER, /* the top line */
    TUI_ROLE_BORDER, /* a panel's frame */
    TUI_ROLE_FOCUS,  /* the focused panel's frame */
    TUI_ROLE_TITLE,  /* "rank 3" */
    TUI_ROLE_IDLE,
    TUI_ROLE_BUSY,
    TUI_ROLE_PAUSED,
    TUI_ROLE_DEAD,
    TUI_ROLE_ERROR,   /* the status line's errors */
    TUI_ROLE_DIM,     /* hints */
    TUI_ROLE_CHANGED, /* an element the shown step wrote */
    TUI_ROLE_MSGS,    /* the message list's title */
    TUI_ROLE__COUNT
} tui_role_t;

/* The line-drawing pieces: UTF-8 box drawing, or ASCII when the locale's
 * character set is not UTF-8. */
typedef struct {
    const char *h, *v, *tl, *tr, *bl, *br;
    const char *ellipsis; /* "…" or "..." */
    int ellipsis_w;
    const char *to, *from; /* a panel's sends and receives: "→" "←", or "->" "<-" */
    int arrow_w;
} tui_glyphs_t;

/* Takes the terminal (curses on stdin/stdout); the first call sets the
 * locale and the theme. Returns false when the terminal cannot be used. */
bool tui_screen_start(void);
/* Gives the terminal back as it was (the cursor at the bottom). */
void tui_screen_stop(void);
/* The terminal changed size: curses learns it from the tty. */
void tui_screen_resized(void);

const tui_glyphs_t *tui_glyphs(void);
/* The curses attributes of a role. */
int tui_attr(tui_role_t role);

/* The colour of chunk c (a label of the schedule's messages), cycling
 * through a few; 0 on a monochrome terminal or with NO_COLOR, and for
 * c < 0. */
int tui_chunk_attr(int c);

/* Draws a frame at (y, x) of h x w, with title on its top edge. */
void tui_frame(int y, int x, int h, int w, tui_role_t role, const char *title);
/* Writes text at (y, x), at most w columns, in role. */
void tui_text(int y, int x, int w, tui_role_t role, const char *text);
/* Fills the rest of row y from x with blanks. */
void tui_blank(int y, int x, int w);

#endif
