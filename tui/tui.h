/* The terminal view: a curses screen over a shell session's model
 * (lab/session/model.h), one panel per rank with its life and tensors, a
 * header naming the collective and its step, a status line for every
 * message, and a command line that submits shell lines. It runs on the
 * shell's libuv loop and never blocks it: keys are read as they come, so
 * rank events keep arriving and show at once. */
#ifndef TUI_TUI_H
#define TUI_TUI_H

#include <stdbool.h>

#include <uv.h>

#include "distlab/status.h"
#include "lab/shell/shell.h"

typedef struct tui tui_t;

/* The person left the view (`q`), or a line quit the shell (quit is then
 * true). Called once, from the loop; the front end then calls tui_close
 * and takes the terminal back. */
typedef void (*tui_leave_fn)(void *arg, bool quit);

/* Takes the terminal, subscribes to the shell's model and sends the
 * shell's text output into the view. DL_ERR_INVALID when stdin or stdout
 * is not a terminal curses can use. */
dl_status_t tui_open(uv_loop_t *loop, lab_shell_t *sh, tui_leave_fn leave, void *arg,
                     tui_t **tui_p);
/* Runs a line as if typed on the view's command line (`distlab run --tui`
 * gives the line that sets up and runs its primitive). */
void tui_submit(tui_t *t, const char *line);
/* The same, then done (as the shell's) once the line has run. While
 * another line runs the view refuses it: done(arg, false) at once. */
void tui_run(tui_t *t, const char *line, lab_shell_done_t done, void *arg);

/* The narration pane, over the status line (`distlab scenario run
 * --tui`): the newest lines given, each drawn as its kind says; a TITLE
 * is the pane's title instead. */
typedef enum {
    TUI_NOTE_TITLE,
    TUI_NOTE_PLAIN,
    TUI_NOTE_BOLD, /* narration */
    TUI_NOTE_DIM,  /* a line that runs */
    TUI_NOTE_GOOD, /* a check that held */
    TUI_NOTE_BAD,  /* one that failed */
} tui_note_t;
void tui_note(tui_t *t, tui_note_t kind, const char *text);

/* Waits for the person, saying so (with text, when not empty) on the
 * narration pane's last line: TUI_WAIT_KEY: space or enter calls go;
 * TUI_WAIT_STEPS: the step keys act on the stepped collective and go is
 * called once it has ended; TUI_WAIT_LEAVE: only `q` (the leave callback)
 * ends it, go is not called. go runs from the loop, once. */
typedef enum { TUI_WAIT_KEY, TUI_WAIT_STEPS, TUI_WAIT_LEAVE } tui_wait_t;
void tui_wait(tui_t *t, tui_wait_t what, const char *text, void (*go)(void *arg), void *arg);
/* Gives the terminal back and unsubscribes; the shell's output goes to out
 * and err again. The memory goes once the loop has closed the view's
 * handles. */
void tui_close(tui_t *t, FILE *out, FILE *err, bool color);

#endif
