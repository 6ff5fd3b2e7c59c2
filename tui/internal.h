/* The terminal view's state, shared by its files: tui.c (life cycle,
 * events, drawing the screen), keys.c (what each key does), header.c and
 * panel.c (what they draw from it). */
#ifndef TUI_INTERNAL_H
#define TUI_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include <uv.h>

#include "lab/session/model.h"
#include "lab/shell/shell.h"
#include "tui/cmdline.h"
#include "lab/session/stepview.h"
#include "tui/tui.h"

/* A line of the narration pane. */
typedef struct {
    tui_note_t kind;
    char *text;
} tui_note_line_t;

struct tui {
    uv_loop_t *loop;
    lab_shell_t *sh;
    lab_model_t *m;
    tui_leave_fn leave;
    void *arg;

    int in_fd;         /* a duplicate of stdin: the front end polls its own */
    uv_poll_t in;      /* keys, read when they come (nodelay) */
    uv_signal_t winch; /* the terminal's size changed */
    uv_timer_t redraw; /* coalesces a burst of changes into one redraw */
    int open_handles;  /* while closing: handles whose close callback is due */
    bool closing;

    /* The shell's text output while the view has the terminal: a command's
     * (help, ranks, history) is shown in a box; statement results are the
     * panels' already and are dropped. err: the last failed line's
     * message, when the views were not told it. */
    FILE *out, *err;

    bool running;          /* a line submitted from the view has not finished */
    char *line;            /* the last line submitted (malloc'd): a parse error's column */
    bool leaving;          /* `q` while a line runs: leave when it ends */
    bool left;             /* leave was called */
    lab_shell_done_t done; /* tui_run's: called once that line has run */
    void *done_arg;

    int focus;      /* the panel tab moves and enter zooms */
    int first;      /* the first rank on screen when the grid scrolls */
    int shown_from; /* what the header says is on screen: ranks [from, to] */
    int shown_to;
    bool zoom;      /* the focused panel fills the screen */
    bool help;      /* the help box is up */
    char *output;   /* a command's text in a box, until a key closes it */
    int output_top; /* the box's first row shown: up/down and page keys scroll */
    int output_max; /* the largest output_top the box had room for when drawn */
    long mark;      /* out's length before the printer wrote a statement's results */

    /* Step mode: the panels show the record `lab_stepper_viewed` names
     * (a step that ran, or one `back`/`forward` shows) until a line other
     * than a step command runs; symbolic: `s` shows sums of inputs. */
    bool stepping;
    bool symbolic;
    lab_stepview_t sv;

    /* The log pane of point-to-point operations: log_set once `l` was
     * pressed, then log_on says whether it is up. */
    bool log_set, log_on;

    /* The narration pane (tui_note): its title, the newest lines, and
     * what the view waits for (tui_wait), if anything. */
    char notes_title[160];
    tui_note_line_t *notes;
    size_t n_notes;
    struct {
        bool on;
        tui_wait_t what;
        char text[256];
        void (*go)(void *arg);
        void *arg;
    } wait;

    char status[512]; /* the last message (LAB_EV_SAY) or what a key did */
    bool status_error;

    tui_cmdline_t cl;
};

/* tui.c: something changed; the screen is redrawn soon, once. */
void tui__dirty(tui_t *t);
/* tui.c: runs a line as typed on the command line (or a key's command). */
void tui__submit(tui_t *t, const char *line);
/* tui.c: sets the status line. */
void tui__status(tui_t *t, bool error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* tui.c: the person asked to leave. */
void tui__leave(tui_t *t);

/* tui.c: the wait is over: calls its go. */
void tui__wait_over(tui_t *t);

/* tui.c: the step record the panels show, or NULL when not stepping. */
const lab_step_rec_t *tui__step_rec(const tui_t *t);

/* keys.c: one key read from the terminal. */
void tui__key(tui_t *t, int key);

/* header.c: the top line at row 0 and the status line at row y. */
void tui__draw_header(tui_t *t, int w);
void tui__draw_status(const tui_t *t, int y, int w);
/* header.c: the keys, on the command line's row while it is closed. */
void tui__draw_hints(int y, int w);
/* panel.c: rank r's panel at (y, x), h x w. */
void tui__draw_panel(tui_t *t, int r, int y, int x, int h, int w, bool focused);
/* panel.c: the rows the message list of the shown step wants (0 when not
 * stepping), and the list itself at row y, h rows. */
int tui__msgs_rows(tui_t *t, int avail);
void tui__draw_msgs(tui_t *t, int y, int h, int w);
/* p2plog.c: the rows the log pane wants (0 when it is not up), and the
 * pane at row y, h rows. */
int tui__log_rows(tui_t *t, int avail);
void tui__draw_log(tui_t *t, int y, int h, int w);
/* narrate.c: the rows the narration pane wants (0 when it has nothing),
 * and the pane at row y, h rows; the lines it keeps go when the view does. */
int tui__notes_rows(tui_t *t, int avail, int w);
void tui__draw_notes(tui_t *t, int y, int h, int w);
void tui__notes_fini(tui_t *t);
/* help.c: the keys, in a box over the screen. */
void tui__draw_help(const tui_t *t, int h, int w);
/* help.c: a command's output in a box over the screen. */
void tui__draw_output(tui_t *t, int h, int w);

#endif
