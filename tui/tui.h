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
/* Gives the terminal back and unsubscribes; the shell's output goes to out
 * and err again. The memory goes once the loop has closed the view's
 * handles. */
void tui_close(tui_t *t, FILE *out, FILE *err, bool color);

#endif
