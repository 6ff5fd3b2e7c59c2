/* What each key does. The command line, when focused, takes every key;
 * then, while a front end waits for a key (a scenario's pause), space and
 * enter go on; else a box (help, output) closes on any key, and the step
 * keys act as well, so stepping through a collective is one key per step. */
#include <stdlib.h>

#include <curses.h>

#include "tui/internal.h"

#define KEY_CTRL_L 12

/* The step keys, as the shell's step commands. */
static const char *step_command(int key)
{
    switch (key) {
    case ' ':
    case 'n':
        return "next";
    case 'c':
        return "continue";
    case 'b':
    case KEY_LEFT:
        return "back";
    case 'f':
    case KEY_RIGHT:
        return "forward";
    default:
        return NULL;
    }
}

void tui__key(tui_t *t, int key)
{
    if (key == KEY_RESIZE || key == KEY_CTRL_L) {
        clearok(curscr, TRUE);
        tui__dirty(t);
        return;
    }
    if (t->cl.active) {
        if (tui_cmdline_key(&t->cl, key, t->sh) == TUI_CMDLINE_SUBMIT) {
            tui_cmdline_remember(&t->cl, t->cl.buf);
            tui__submit(t, t->cl.buf);
        }
        tui__dirty(t);
        return;
    }
    /* A front end waits for the person: space or enter goes on. */
    bool go_key = key == ' ' || key == '\r' || key == '\n' || key == KEY_ENTER;
    if (t->wait.on && t->wait.what == TUI_WAIT_KEY && go_key) {
        t->help = false;
        free(t->output);
        t->output = NULL;
        if (t->running)
            tui__status(t, true, "a line is still running (Ctrl-C stops it)");
        else
            tui__wait_over(t);
        tui__dirty(t);
        return;
    }
    const char *step = step_command(key);
    /* A long output box scrolls. */
    bool scroll = key == KEY_UP || key == KEY_DOWN || key == KEY_PPAGE || key == KEY_NPAGE;
    if (t->output != NULL && !t->help && t->output_max > 0 && scroll) {
        int page = LINES - 6 > 1 ? LINES - 6 : 1;
        int by = key == KEY_UP ? -1 : key == KEY_DOWN ? 1 : key == KEY_PPAGE ? -page : page;
        int top = t->output_top + by;
        t->output_top = top < 0 ? 0 : top > t->output_max ? t->output_max : top;
        tui__dirty(t);
        return;
    }
    if (t->help || t->output != NULL) {
        t->help = false;
        free(t->output);
        t->output = NULL;
        tui__dirty(t);
        /* Any key closes the box; a step key and ':' also do what they
         * say, so that a command typed as an output arrives is not lost
         * to closing it. */
        if (step == NULL && key != ':')
            return;
    }
    int np = t->m->np;
    if (step != NULL) {
        tui__submit(t, step);
        return;
    }
    switch (key) {
    case 'q':
        tui__leave(t);
        return;
    case ':':
        tui_cmdline_open(&t->cl);
        break;
    case '\t':
        if (np > 0)
            t->focus = (t->focus + 1) % np;
        break;
    case KEY_BTAB:
        if (np > 0)
            t->focus = (t->focus + np - 1) % np;
        break;
    case '\r':
    case '\n':
    case KEY_ENTER:
        t->zoom = !t->zoom;
        break;
    case '?':
        t->help = true;
        break;
    case 'l':
        /* The log pane of point-to-point operations. */
        t->log_on = !(t->log_set ? t->log_on : tui__log_rows(t, 1000) > 0);
        t->log_set = true;
        break;
    case 's':
        /* The shown step's elements as sums of the ranks' inputs. */
        t->symbolic = !t->symbolic;
        if (tui__step_rec(t) == NULL)
            tui__status(t, false, "s: %s when a step is shown",
                        t->symbolic ? "symbolic values" : "numbers");
        break;
    default:
        return;
    }
    tui__dirty(t);
}
