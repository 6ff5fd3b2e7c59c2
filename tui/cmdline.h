/* The view's command line (`:`): a one-line editor with history and the
 * shell language's completion. It edits and draws; what a line does is the
 * shell's (lab_shell_submit). */
#ifndef TUI_CMDLINE_H
#define TUI_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "lab/lang/lang.h"
#include "lab/shell/shell.h"

/* As long a line as the shell takes, and its terminating NUL. */
#define TUI_CMDLINE_MAX (LAB_LANG_MAX_LINE + 1)
#define TUI_HISTORY_MAX 200

typedef struct {
    bool active; /* focused: keys edit the line */
    char buf[TUI_CMDLINE_MAX];
    size_t len, pos;
    char *hist[TUI_HISTORY_MAX];
    size_t n_hist, hist_at; /* hist_at == n_hist: the line being typed */
    char hint[256];         /* completions to show, when several; or why a key was refused */
} tui_cmdline_t;

typedef enum {
    TUI_CMDLINE_EDITED, /* the key was the line's */
    TUI_CMDLINE_SUBMIT, /* Enter: buf holds the line */
    TUI_CMDLINE_CANCEL, /* Esc, or backspace on an empty line */
} tui_cmdline_result_t;

void tui_cmdline_open(tui_cmdline_t *cl);
/* One key (a curses key code); sh gives completion its names. */
tui_cmdline_result_t tui_cmdline_key(tui_cmdline_t *cl, int key, lab_shell_t *sh);
/* Adds a submitted line to the history (not twice in a row). */
void tui_cmdline_remember(tui_cmdline_t *cl, const char *line);
/* Draws ":" and the line on row y, w columns, with the cursor. */
void tui_cmdline_draw(const tui_cmdline_t *cl, int y, int w);
void tui_cmdline_fini(tui_cmdline_t *cl);

#endif
