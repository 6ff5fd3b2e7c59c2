/* The terminal view's life cycle: it takes the terminal, follows the
 * session model's changes, reads keys from the loop, draws the screen, and
 * gives the terminal back. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curses.h>

#include "tui/internal.h"
#include "tui/layout.h"
#include "tui/screen.h"

/* Changes that come together (every rank's snapshot of a collective) are
 * drawn once, this long after the first. */
#define REDRAW_DELAY_MS 15

/* ---- drawing ---- */

static void draw_grid(tui_t *t, int y0, int h, int w)
{
    int np = t->m->np;
    if (np == 0) {
        tui_text(y0 + 1, 1, w - 2, TUI_ROLE_DIM, "no ranks yet");
        t->shown_from = t->shown_to = 0;
        return;
    }
    if (t->focus >= np)
        t->focus = np - 1;
    if (t->zoom) {
        tui__draw_panel(t, t->focus, y0, 0, h, w, true);
        t->shown_from = t->shown_to = t->focus;
        return;
    }
    tui_grid_t g = tui_grid_fit(np, w, h);
    t->first = tui_grid_first(&g, np, t->focus, t->first);
    int last = t->first;
    for (int i = 0; i < g.per_page && t->first + i < np; i++) {
        int y, x, ph, pw, r = t->first + i;
        tui_grid_cell(&g, w, h, i, &y, &x, &ph, &pw);
        tui__draw_panel(t, r, y0 + y, x, ph, pw, r == t->focus);
        last = r;
    }
    t->shown_from = t->first;
    t->shown_to = last;
}

const lab_step_rec_t *tui__step_rec(const tui_t *t)
{
    const lab_stepper_t *st = &t->m->stepper;
    if (!t->stepping || lab_stepper_nrecs(st) == 0)
        return NULL;
    return lab_stepper_rec(st, lab_stepper_viewed(st));
}

static void draw(tui_t *t)
{
    int h = LINES, w = COLS;
    erase();
    const lab_step_rec_t *rec = tui__step_rec(t);
    if (rec != NULL)
        lab_stepview_sync(&t->sv, &t->m->stepper, rec);
    if (h >= 4) {
        /* While a step is shown, its messages take the bottom of the
         * panels' area. */
        /* Zoomed, the list holds the focused rank's messages only. */
        int area = h - 3, msgs = tui__msgs_rows(t, area);
        /* A scenario's narration stays up, the panel zoomed or not. */
        int notes = tui__notes_rows(t, area - msgs, w);
        int log = t->zoom ? 0 : tui__log_rows(t, area - msgs - notes);
        int grid = area - msgs - log - notes;
        draw_grid(t, 1, grid, w);
        if (msgs > 0)
            tui__draw_msgs(t, 1 + grid, msgs, w);
        if (log > 0)
            tui__draw_log(t, 1 + grid + msgs, log, w);
        if (notes > 0)
            tui__draw_notes(t, 1 + grid + msgs + log, notes, w);
    }
    tui__draw_header(t, w);
    tui__draw_status(t, h - 2, w);
    if (t->help)
        tui__draw_help(t, h, w);
    else if (t->output != NULL)
        tui__draw_output(t, h, w);
    if (t->cl.active) {
        tui_cmdline_draw(&t->cl, h - 1, w);
        curs_set(1);
    } else {
        tui__draw_hints(h - 1, w);
        curs_set(0);
    }
    refresh();
}

static void on_redraw(uv_timer_t *h)
{
    tui_t *t = h->data;
    if (t->closing)
        return;
    draw(t);
    /* The stepped collective the view waited on ended by no line of the
     * view's (Ctrl-C, a rank lost): the front end goes on all the same,
     * from the loop rather than from inside the model's news. */
    if (!t->left && t->wait.on && t->wait.what == TUI_WAIT_STEPS && !t->running &&
        lab_shell_idle(t->sh))
        tui__wait_over(t);
}

void tui__dirty(tui_t *t)
{
    if (!t->closing && !uv_is_active((uv_handle_t *)&t->redraw))
        uv_timer_start(&t->redraw, on_redraw, REDRAW_DELAY_MS, 0);
}

void tui__status(tui_t *t, bool error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->status, sizeof(t->status), fmt, ap);
    va_end(ap);
    t->status_error = error;
    tui__dirty(t);
}

/* ---- the shell's text output ---- */

static long out_len(tui_t *t)
{
    fflush(t->out);
    long n = ftell(t->out);
    return n < 0 ? 0 : n;
}

static void out_cut(tui_t *t, long len)
{
    fflush(t->out);
    if (ftruncate(fileno(t->out), len) == 0)
        fseek(t->out, len, SEEK_SET);
    if (t->mark > len)
        t->mark = len;
}

/* What the shell wrote that the panels do not show (a command's output,
 * a step's record) goes into the output box. */
static void show_output(tui_t *t)
{
    long n = out_len(t);
    if (n == 0)
        return;
    if (t->stepping) {
        /* The step's record as text: the panels and the message list
         * show it already. */
        out_cut(t, 0);
        return;
    }
    char *text = malloc((size_t)n + 1);
    if (text != NULL && pread(fileno(t->out), text, (size_t)n, 0) == n) {
        text[n] = '\0';
        bool blank = true;
        for (long i = 0; i < n && blank; i++)
            blank = isspace((unsigned char)text[i]);
        if (!blank) {
            free(t->output);
            t->output = text;
            t->output_top = 0;
            text = NULL;
        }
    }
    free(text);
    out_cut(t, 0);
    tui__dirty(t);
}

/* Whether the printer writes anything for statement s (its results). */
static bool stmt_prints(const lab_model_t *m, const lab_stmt_t *s)
{
    for (int r = 0; r < m->np; r++) {
        const lab_rank_model_t *rm = &s->res.ranks[r];
        if (s->targeted[r] && (rm->n_snaps > 0 || json_array_size(rm->notes) > 0))
            return true;
    }
    return false;
}

/* ---- the model's changes ---- */

/* An error the status line cannot hold, whole in the output box, from
 * its first line; a box already up (a command's output) stays. */
static void error_in_box(tui_t *t, const char *text)
{
    if (t->output == NULL && (t->output = strdup(text)) != NULL)
        t->output_top = 0;
}

/* A statement failed: the status line names the first rank's error; what
 * it cannot hold (an error longer than the screen is wide, or ranks that
 * failed differently) opens whole in the box. */
static void stmt_failed(tui_t *t, const lab_model_t *m, const lab_stmt_t *s)
{
    char all[4096];
    size_t at = 0;
    int first = -1;
    bool differ = false;
    for (int r = 0; r < m->np; r++) {
        if (!s->targeted[r] || !s->res.ranks[r].failed || s->quiet[r])
            continue;
        if (first < 0) {
            first = r;
            tui__status(t, true, "rank %d: %s", r, s->res.ranks[r].error);
        } else
            differ = differ || strcmp(s->res.ranks[r].error, s->res.ranks[first].error) != 0;
        if (at < sizeof(all))
            at += (size_t)snprintf(all + at, sizeof(all) - at, "%srank %d: %s", at ? "\n" : "", r,
                                   s->res.ranks[r].error);
    }
    if (first >= 0 && (differ || (int)strlen(t->status) > COLS))
        error_in_box(t, all);
}

static void on_change(void *arg, const lab_model_t *m, const lab_event_t *ev)
{
    tui_t *t = arg;
    switch (ev->kind) {
    case LAB_EV_SAY:
        tui__status(t, true, "%s", ev->text);
        /* An answer to what the person typed that the status line cannot
         * hold (several lines, or wider than the screen) opens whole in the
         * box. News of a rank (its death) does not: its panel shows it. */
        if (ev->rank < 0 && (strchr(ev->text, '\n') != NULL || (int)strlen(ev->text) > COLS))
            error_in_box(t, ev->text);
        break;
    case LAB_EV_OUTPUT:
        /* The printer writes a statement's results once it is done: what
         * is in out now is not theirs. */
        t->mark = out_len(t);
        break;
    case LAB_EV_STMT_FAILED:
        /* A stepped collective that failed has no step left to show: the
         * header and the panels' marks go with its step view. */
        t->stepping = false;
        stmt_failed(t, m, ev->stmt);
        /* fall through */
    case LAB_EV_STMT_DONE:
        /* The panels show a statement's tensors; its printed copy goes. */
        if (stmt_prints(m, ev->stmt))
            out_cut(t, t->mark);
        break;
    case LAB_EV_STEP_RAN:
    case LAB_EV_STEP_PAUSED:
        t->stepping = true;
        show_output(t);
        break;
    case LAB_EV_WORLD:
        t->status[0] = '\0';
        t->stepping = false;
        break;
    default:
        break;
    }
    tui__dirty(t);
}

/* ---- lines ---- */

/* The column of the parse error of the line the view ran last, or
 * fallback when it parses (the error was in a sourced file's line). The
 * caret's place in the shell's text is not it: a long line shows there as
 * an excerpt around the error ("... 1 + 1 + "). */
static int error_column(const tui_t *t, int fallback)
{
    lab_parse_error_t err = {0};
    json_t *stmts = NULL;
    if (t->line == NULL || lab_parse_line(t->line, &stmts, &err) == DL_OK) {
        json_decref(stmts);
        return fallback;
    }
    return err.col > 0 ? err.col : fallback;
}

/* A line that failed without a message to the views (a parse error, which
 * the shell writes with a caret under the place) has its last line of
 * err on the status line. */
static void show_error(tui_t *t)
{
    fflush(t->err);
    long n = ftell(t->err);
    char buf[4096];
    if (n > 0 && t->status[0] == '\0') {
        long from = n > (long)sizeof(buf) - 1 ? n - (long)sizeof(buf) + 1 : 0;
        ssize_t got = pread(fileno(t->err), buf, (size_t)(n - from), from);
        if (got > 0) {
            buf[got] = '\0';
            while (got > 0 && buf[got - 1] == '\n')
                buf[--got] = '\0';
            char *last = strrchr(buf, '\n');
            const char *text = last != NULL ? last + 1 : buf;
            const char *caret = text + strspn(text, " ");
            if (last != NULL && caret[0] == '^') {
                /* A parse error is the line, then a caret under the
                 * column: on one status line, the column and the line. */
                *last = '\0';
                char *src = strrchr(buf, '\n');
                src = src != NULL ? src + 1 : buf;
                int indent = (int)strspn(src, " ");
                tui__status(t, true, "column %d: %s  (%s)",
                            error_column(t, (int)(caret - text) - indent + 1),
                            caret[1] == ' ' ? caret + 2 : caret + 1, src + indent);
            } else {
                tui__status(t, true, "%s", text);
                /* What the status line cannot hold (several lines, or one
                 * longer than the screen is wide) opens whole in the box,
                 * so that a cause at the end of a long line is read. */
                if (last != NULL || (int)strlen(text) > COLS)
                    error_in_box(t, buf);
            }
        }
    }
    if (ftruncate(fileno(t->err), 0) == 0)
        rewind(t->err);
}

void tui__wait_over(tui_t *t)
{
    void (*go)(void *) = t->wait.go;
    void *arg = t->wait.arg;
    memset(&t->wait, 0, sizeof(t->wait));
    tui__dirty(t);
    if (go != NULL)
        go(arg);
}

static void line_done(void *arg, bool ok)
{
    tui_t *t = arg;
    lab_shell_done_t done = t->done;
    void *done_arg = t->done_arg;
    t->running = false;
    t->done = NULL;
    if (t->closing) {
        if (t->open_handles == 0)
            free(t);
        if (done != NULL)
            done(done_arg, ok);
        return;
    }
    show_output(t);
    if (!ok)
        show_error(t);
    if (lab_shell_quitting(t->sh)) {
        t->left = true;
        t->leave(t->arg, true);
    } else if (t->leaving) {
        tui__leave(t);
    }
    /* The front end's line: it goes on from here (and may close the view). */
    if (done != NULL) {
        done(done_arg, ok);
        return;
    }
    /* A step key's line ended the collective that the view waited on. */
    if (!t->left && t->wait.on && t->wait.what == TUI_WAIT_STEPS && !lab_shell_stepping(t->sh))
        tui__wait_over(t);
}

/* Runs line; done (may be NULL) once it has run. */
static void submit(tui_t *t, const char *line, lab_shell_done_t done, void *done_arg)
{
    if (t->running) {
        tui__status(t, true, "a line is still running (Ctrl-C stops it)");
        if (done != NULL)
            done(done_arg, false);
        return;
    }
    /* A line other than a step command ends the step view. */
    static const char *const step_cmds[] = {"next", "continue", "back", "forward"};
    size_t len = strcspn(line, " \t");
    bool step_cmd = false;
    for (size_t i = 0; i < sizeof(step_cmds) / sizeof(step_cmds[0]); i++)
        step_cmd |= len == strlen(step_cmds[i]) && strncmp(line, step_cmds[i], len) == 0;
    if (!step_cmd)
        t->stepping = false;
    t->running = true;
    t->done = done;
    t->done_arg = done_arg;
    free(t->line);
    t->line = strdup(line);
    t->status[0] = '\0';
    t->mark = out_len(t);
    if (ftruncate(fileno(t->err), 0) == 0)
        rewind(t->err);
    lab_shell_submit(t->sh, line, line_done, t);
    tui__dirty(t);
}

void tui__submit(tui_t *t, const char *line)
{
    submit(t, line, NULL, NULL);
}

void tui_submit(tui_t *t, const char *line)
{
    submit(t, line, NULL, NULL);
}

void tui_run(tui_t *t, const char *line, lab_shell_done_t done, void *arg)
{
    submit(t, line, done, arg);
}

/* ---- the front end's narration ---- */

/* The lines the pane keeps: more than it ever shows. */
#define MAX_NOTES 64

void tui_note(tui_t *t, tui_note_t kind, const char *text)
{
    if (kind == TUI_NOTE_TITLE) {
        snprintf(t->notes_title, sizeof(t->notes_title), "%s", text);
        tui__dirty(t);
        return;
    }
    char *copy = strdup(text);
    if (copy == NULL)
        return;
    if (t->n_notes == MAX_NOTES) {
        free(t->notes[0].text);
        memmove(t->notes, t->notes + 1, sizeof(*t->notes) * (MAX_NOTES - 1));
        t->n_notes--;
    } else if (t->notes == NULL) {
        t->notes = malloc(sizeof(*t->notes) * MAX_NOTES);
        if (t->notes == NULL) {
            free(copy);
            return;
        }
    }
    t->notes[t->n_notes].kind = kind;
    t->notes[t->n_notes].text = copy;
    t->n_notes++;
    tui__dirty(t);
}

void tui_wait(tui_t *t, tui_wait_t what, const char *text, void (*go)(void *arg), void *arg)
{
    t->wait.on = true;
    t->wait.what = what;
    snprintf(t->wait.text, sizeof(t->wait.text), "%s", text != NULL ? text : "");
    t->wait.go = go;
    t->wait.arg = arg;
    tui__dirty(t);
}

void tui__leave(tui_t *t)
{
    if (t->left)
        return;
    if (t->running) {
        t->leaving = true;
        tui__status(t, false, "leaving once the line has run (Ctrl-C stops it)");
        return;
    }
    t->left = true;
    t->leave(t->arg, false);
}

/* ---- keys and the terminal ---- */

static void on_keys(uv_poll_t *h, int status, int events)
{
    tui_t *t = h->data;
    (void)events;
    if (status < 0) { /* the terminal went away */
        uv_poll_stop(h);
        return;
    }
    int key;
    while (!t->closing && (key = getch()) != ERR)
        tui__key(t, key);
}

static void on_winch(uv_signal_t *h, int sig)
{
    tui_t *t = h->data;
    (void)sig;
    tui_screen_resized();
    clearok(curscr, TRUE);
    tui__dirty(t);
}

dl_status_t tui_open(uv_loop_t *loop, lab_shell_t *sh, tui_leave_fn leave, void *arg, tui_t **tui_p)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return DL_ERR_INVALID;
    tui_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return DL_ERR_NOMEM;
    t->loop = loop;
    t->sh = sh;
    t->m = lab_shell_model(sh);
    t->leave = leave;
    t->arg = arg;
    /* The shell's printer writes here; a temporary file, so that a
     * statement's printed results can be cut off again (out_cut). */
    t->out = tmpfile();
    t->err = tmpfile();
    t->in_fd = dup(STDIN_FILENO);
    if (t->out == NULL || t->err == NULL || t->in_fd < 0)
        goto err_close_files;
    if (lab_model_subscribe(t->m, on_change, t) != DL_OK)
        goto err_close_files;
    if (!tui_screen_start())
        goto err_unsubscribe;
    lab_shell_set_output(sh, t->out, t->err, false);
    lab_shell_view_keys(sh, true);
    uv_poll_init(loop, &t->in, t->in_fd);
    uv_signal_init(loop, &t->winch);
    uv_timer_init(loop, &t->redraw);
    t->in.data = t->winch.data = t->redraw.data = t;
    /* Opened again while a collective waits in step mode: its record
     * shows at once, not from the next step on. */
    t->stepping = lab_model_paused(t->m);
    uv_poll_start(&t->in, UV_READABLE, on_keys);
    uv_signal_start(&t->winch, on_winch, SIGWINCH);
    draw(t);
    *tui_p = t;
    return DL_OK;

err_unsubscribe:
    lab_model_unsubscribe(t->m, on_change, t);
err_close_files:
    if (t->in_fd >= 0)
        close(t->in_fd);
    if (t->out != NULL)
        fclose(t->out);
    if (t->err != NULL)
        fclose(t->err);
    free(t);
    return DL_ERR_INVALID;
}

static void on_closed(uv_handle_t *h)
{
    tui_t *t = h->data;
    if (--t->open_handles == 0 && !t->running)
        free(t);
}

void tui_close(tui_t *t, FILE *out, FILE *err, bool color)
{
    if (t == NULL || t->closing)
        return;
    t->closing = true;
    lab_model_unsubscribe(t->m, on_change, t);
    lab_shell_set_output(t->sh, out, err, color);
    lab_shell_view_keys(t->sh, false);
    tui_screen_stop();
    fclose(t->out);
    fclose(t->err);
    t->out = t->err = NULL;
    free(t->output);
    t->output = NULL;
    free(t->line);
    t->line = NULL;
    lab_stepview_fini(&t->sv);
    tui_cmdline_fini(&t->cl);
    tui__notes_fini(t);
    t->open_handles = 3;
    uv_close((uv_handle_t *)&t->in, on_closed);
    uv_close((uv_handle_t *)&t->winch, on_closed);
    uv_close((uv_handle_t *)&t->redraw, on_closed);
    close(t->in_fd);
}
