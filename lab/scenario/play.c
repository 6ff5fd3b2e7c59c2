/* See play.h. The scenario's items run one at a time from the shell's done
 * callback; a pause reads standard input on the same loop, so the ranks'
 * events (and their liveness) are served while the reader reads. In a view
 * (opts.view) the view shows what would be printed, runs the lines as if
 * typed there and waits for the person itself, calling lab_play_go. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "distlab/tensor.h"
#include "lab/scenario/play.h"
#include "lab/session/model.h"
#include "lab/shell/shell.h"

typedef struct lab_play {
    const lab_scenario_t *s;
    const lab_play_opts_t *o;
    uv_loop_t loop;
    uv_tty_t in; /* standard input, for pauses */
    bool in_open, reading;
    lab_shell_t *sh;
    size_t next;
    int failures;
    bool stopped;     /* a line failed: the rest is not run */
    const char *line; /* the shell line running, and its line in the file */
    int lineno;
    /* An expectation reads the tensor as it is now: the rank prints it to
     * the session (not to the reader), then the check reads the model. */
    const lab_scn_item_t *expecting;
    FILE *devnull;
    /* A line being read from standard input, and what it is for. */
    char input[512];
    size_t input_len;
    void (*on_line)(struct lab_play *p, const char *line);
    /* Questions: the one being answered, and every answer so far. */
    const lab_scn_item_t *asking;
    lab_play_result_t res;
    /* In a view: the view waits for the person; the end was reached (and
     * shown); the person left. checks: expectations that held. */
    bool waiting, ended, left;
    int checks;
    char end[160]; /* how it ended, as the view showed it */
} player_t;

static void run_next(player_t *p);

const char *lab_play_prefix(lab_play_note_t kind)
{
    switch (kind) {
    case LAB_PLAY_LINE:
        return ">>> ";
    case LAB_PLAY_OK:
        return "ok   ";
    case LAB_PLAY_FAIL:
        return "FAIL ";
    default:
        return "";
    }
}

/* Prints a note (narration in bold, a failure to err with FAIL in red), or
 * hands it to the view. */
static void tell(player_t *p, lab_play_note_t kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void tell(player_t *p, lab_play_note_t kind, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    const lab_play_view_t *v = p->o->view;
    if (v != NULL) {
        v->note(v->arg, kind, text);
        return;
    }
    bool color = p->o->color;
    FILE *f = kind == LAB_PLAY_FAIL ? p->o->err : p->o->out;
    if (kind == LAB_PLAY_FAIL) {
        fflush(p->o->out);
        fprintf(f, "%sFAIL%s %s\n", color ? "\033[31m" : "", color ? "\033[0m" : "", text);
    } else if (kind == LAB_PLAY_SAY || kind == LAB_PLAY_TITLE) {
        fprintf(f, "%s%s%s\n", color ? "\033[1m" : "", text, color ? "\033[0m" : "");
    } else {
        /* A block prints as it would be typed at the prompt. */
        for (const char *l = text; l != NULL;) {
            const char *nl = strchr(l, '\n');
            fprintf(f, "%s%.*s\n", l == text ? lab_play_prefix(kind) : "... ",
                    nl != NULL ? (int)(nl - l) : (int)strlen(l), l);
            l = nl != NULL ? nl + 1 : NULL;
        }
    }
    fflush(f);
}

/* Runs a shell line, in the view when there is one. */
static void submit(player_t *p, const char *line, lab_shell_done_t done)
{
    const lab_play_view_t *v = p->o->view;
    if (v != NULL)
        v->submit(v->arg, line, done, p);
    else
        lab_shell_submit(p->sh, line, done, p);
}

/* The view waits for the person: lab_play_go goes on. */
static void view_wait(player_t *p, lab_play_wait_t what, const char *text)
{
    p->waiting = true;
    p->o->view->wait(p->o->view->arg, what, text);
}

static void fail(player_t *p, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(player_t *p, int lineno, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    tell(p, LAB_PLAY_FAIL, "%s:%d: %s", p->s->path, lineno, text);
    p->failures++;
}

/* ---- expect ---- */

/* The latest snapshot of name on rank r, or NULL; "out[2]" names item 2
 * of a list. */
static const lab_snap_t *shown(const lab_model_t *m, int r, const char *name)
{
    char base[64];
    int index = -1;
    const char *br = strchr(name, '[');
    if (br != NULL && sscanf(br, "[%d]", &index) != 1)
        return NULL;
    snprintf(base, sizeof(base), "%.*s", br != NULL ? (int)(br - name) : 63, name);
    const lab_rank_model_t *rm = &m->sess.ranks[r];
    for (int i = 0; i < rm->n_shown; i++) {
        const lab_snap_t *sn = &rm->shown[i];
        if (strcmp(sn->name, base) == 0 &&
            (index < 0 ? sn->of == 0 : sn->of > 0 && sn->index == index))
            return sn;
    }
    return NULL;
}

static bool close_enough(double got, double want)
{
    if (isnan(want))
        return isnan(got);
    return fabs(got - want) <= 1e-5 * fmax(1.0, fabs(want));
}

static void check_rank(player_t *p, const lab_scn_item_t *it, int r)
{
    const lab_model_t *m = lab_shell_model(p->sh);
    const lab_snap_t *sn = shown(m, r, it->name);
    if (sn == NULL) {
        fail(p, it->lineno, "expect %d %s == %s: rank %d has shown no tensor named %s", r, it->name,
             it->text, r, it->name);
        return;
    }
    size_t numel = 1;
    for (int d = 0; d < sn->ndim; d++)
        numel *= (size_t)sn->shape[d];
    bool ok = (size_t)sn->t->numel == numel && numel == it->n_values;
    for (size_t i = 0; ok && i < numel; i++)
        ok = close_enough(dl_dtype_get(sn->t->dtype, sn->t->data, i), it->values[i]);
    if (ok) {
        tell(p, LAB_PLAY_OK, "expect %d %s == %s", r, it->name, it->text);
        p->checks++;
        return;
    }
    char *text = dl_tensor_format_shown(sn->t->dtype, sn->ndim, sn->shape, sn->device, sn->t->data);
    fail(p, it->lineno, "expect %d %s == %s, but rank %d has %s = %s", r, it->name, it->text, r,
         it->name, text != NULL ? text : "?");
    free(text);
}

static void checked(void *arg, bool ok)
{
    (void)ok; /* a tensor that is not there is named by check_rank */
    player_t *p = arg;
    const lab_scn_item_t *it = p->expecting;
    p->expecting = NULL;
    if (p->o->view == NULL)
        lab_shell_set_output(p->sh, p->o->out, p->o->err, p->o->color);
    int np = lab_shell_world_size(p->sh);
    for (int r = it->rank < 0 ? 0 : it->rank; r < (it->rank < 0 ? np : it->rank + 1); r++)
        check_rank(p, it, r);
    fflush(p->o->out);
    run_next(p);
}

/* Starts checking an expectation; false when it was refused at once. */
static bool check(player_t *p, const lab_scn_item_t *it)
{
    int np = lab_shell_world_size(p->sh);
    if (it->rank >= np) {
        fail(p, it->lineno, "expect: rank %d does not exist (world size %d)", it->rank, np);
        return false;
    }
    char line[160];
    /* The whole list of "out[2]" is printed: the check picks the item. */
    int base = (int)strcspn(it->name, "[");
    if (it->rank < 0)
        snprintf(line, sizeof(line), "print %.*s", base, it->name);
    else
        snprintf(line, sizeof(line), "on %d: print %.*s", it->rank, base, it->name);
    p->expecting = it;
    /* A view shows the print in the ranks' panels, not as text. */
    if (p->o->view == NULL)
        lab_shell_set_output(p->sh, p->devnull, p->devnull, false);
    submit(p, line, checked);
    return true;
}

/* ---- pauses ---- */

static void alloc_in(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    static char chunk[256];
    (void)suggested;
    *buf = uv_buf_init(chunk, sizeof(chunk));
}

static void on_input(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    player_t *p = s->data;
    /* A line, or the end of input (which also stops asking). */
    const char *nl = n > 0 ? memchr(buf->base, '\n', (size_t)n) : NULL;
    size_t take = n > 0 ? (nl != NULL ? (size_t)(nl - buf->base) : (size_t)n) : 0;
    if (take > sizeof(p->input) - 1 - p->input_len)
        take = sizeof(p->input) - 1 - p->input_len;
    memcpy(p->input + p->input_len, buf->base, take);
    p->input_len += take;
    if (n >= 0 && nl == NULL)
        return;
    uv_read_stop(s);
    p->reading = false;
    if (n < 0)
        p->in_open = false;
    p->input[p->input_len] = '\0';
    p->input_len = 0;
    p->on_line(p, p->input);
}

static void read_line(player_t *p, void (*on_line)(player_t *, const char *))
{
    p->reading = true;
    p->on_line = on_line;
    uv_read_start((uv_stream_t *)&p->in, alloc_in, on_input);
}

static void go_on(player_t *p, const char *line)
{
    (void)line;
    run_next(p);
}

static bool wait_for_enter(player_t *p, const char *what)
{
    if (p->o->view != NULL) {
        view_wait(p, LAB_PLAY_WAIT_PAUSE, what);
        return true;
    }
    if (!p->o->interactive || !p->in_open)
        return false;
    fprintf(p->o->out, "%s(Enter to go on)%s ", what, what[0] ? " " : "");
    fflush(p->o->out);
    read_line(p, go_on);
    return true;
}

/* ---- questions ---- */

static void say_answer(player_t *p, const lab_scn_item_t *q)
{
    tell(p, LAB_PLAY_TEXT, "  the answer: %s", q->answer);
    if (q->explain != NULL)
        tell(p, LAB_PLAY_TEXT, "  %s", q->explain);
}

static void answered(player_t *p, const char *given);

/* The learner's next try: from the answers file, or typed. */
static bool next_try(player_t *p)
{
    lab_play_answer_t *a = &p->res.answers[p->res.n - 1];
    if (p->o->answers != NULL) {
        char line[256];
        if (a->tries > 0 || fgets(line, sizeof(line), p->o->answers) == NULL)
            return false;
        line[strcspn(line, "\n")] = '\0';
        fprintf(p->o->out, "> %s\n", line);
        answered(p, line);
        return true;
    }
    if (!p->in_open || a->tries >= 2)
        return false;
    fprintf(p->o->out, "> ");
    fflush(p->o->out);
    read_line(p, answered);
    return true;
}

static void answered(player_t *p, const char *given)
{
    const lab_scn_item_t *q = p->asking;
    lab_play_answer_t *a = &p->res.answers[p->res.n - 1];
    snprintf(a->given[a->tries < 2 ? a->tries : 1], sizeof(a->given[0]), "%s", given);
    a->tries++;
    if (lab_scenario_answer_ok(q, given)) {
        a->points = a->tries == 1 ? 1.0 : 0.5;
        p->res.score += a->points;
        fprintf(p->o->out, "  right%s\n", a->tries == 1 ? "" : " (second try)");
        if (q->explain != NULL)
            fprintf(p->o->out, "  %s\n", q->explain);
    } else {
        fprintf(p->o->out, "  not quite%s%s\n", q->hint != NULL ? ": " : "",
                q->hint != NULL ? q->hint : "");
        if (a->tries < 2 && p->o->answers == NULL && next_try(p))
            return;
        say_answer(p, q);
    }
    fflush(p->o->out);
    p->asking = NULL;
    run_next(p);
}

/* Asks a question; false when the scenario goes on at once. */
static bool ask(player_t *p, const lab_scn_item_t *q)
{
    tell(p, LAB_PLAY_TEXT, "? %s", q->text);
    if (!p->o->exercise) { /* a narrated question */
        say_answer(p, q);
        return false;
    }
    lab_play_answer_t *grown = realloc(p->res.answers, sizeof(*grown) * (p->res.n + 1));
    if (grown == NULL)
        return false;
    p->res.answers = grown;
    lab_play_answer_t *a = &p->res.answers[p->res.n++];
    memset(a, 0, sizeof(*a));
    a->lineno = q->lineno;
    p->asking = q;
    if (next_try(p))
        return true;
    fprintf(p->o->out, "  (no answer)\n");
    say_answer(p, q);
    p->asking = NULL;
    return false;
}

/* ---- lines ---- */

static void line_done(void *arg, bool ok)
{
    player_t *p = arg;
    if (!ok && !lab_shell_stepping(p->sh) && !p->left) {
        fail(p, p->lineno, "`%s` failed; the scenario stops here", p->line);
        p->stopped = true;
    }
    run_next(p);
}

/* A collective waits in step mode: the next step, when the reader says. */
static void step_on(player_t *p)
{
    if (p->o->view != NULL) { /* the view's own keys step it */
        view_wait(p, LAB_PLAY_WAIT_STEPS, "");
        return;
    }
    if (wait_for_enter(p, ""))
        return;
    lab_shell_submit(p->sh, "next", line_done, p);
}

/* In a view, the end is shown until the person leaves. */
static bool show_end(player_t *p)
{
    if (p->o->view == NULL || p->left || p->ended)
        return false;
    p->ended = true;
    const char *s = p->checks == 1 ? "" : "s";
    if (p->stopped) /* by a line that failed: one of the failures is the line's */
        snprintf(p->end, sizeof(p->end), "stopped at line %d: %d check%s held, %d failed",
                 p->lineno, p->checks, s, p->failures - 1);
    else if (p->failures > 0)
        snprintf(p->end, sizeof(p->end), "the end: %d check%s held, %d failed", p->checks, s,
                 p->failures);
    else
        snprintf(p->end, sizeof(p->end), "the end: every check held (%d)", p->checks);
    tell(p, LAB_PLAY_END, "%s", p->end);
    view_wait(p, LAB_PLAY_WAIT_END, "");
    return true;
}

static void finish(player_t *p)
{
    if (show_end(p))
        return;
    if (p->o->view != NULL)
        p->o->view->close(p->o->view->arg);
    lab_shell_close(p->sh);
    p->sh = NULL;
    if (p->in_open)
        uv_close((uv_handle_t *)&p->in, NULL);
    p->in_open = false;
}

static void run_next(player_t *p)
{
    if (p->sh == NULL || p->reading || p->waiting || p->expecting != NULL || p->asking != NULL)
        return;
    if (lab_shell_stepping(p->sh) && !p->stopped) {
        step_on(p);
        return;
    }
    while (!p->stopped && !lab_shell_quitting(p->sh) && p->next < p->s->n_items) {
        const lab_scn_item_t *it = &p->s->items[p->next++];
        switch (it->kind) {
        case LAB_SCN_SAY:
            tell(p, LAB_PLAY_SAY, "%s", it->text);
            break;
        case LAB_SCN_PAUSE:
            if (it->text[0] != '\0' && !p->o->interactive && p->o->view == NULL)
                tell(p, LAB_PLAY_TEXT, "%s", it->text);
            if (wait_for_enter(p, it->text))
                return;
            break;
        case LAB_SCN_EXPECT:
            if (check(p, it))
                return;
            break;
        case LAB_SCN_ASK:
            if (ask(p, it))
                return;
            break;
        case LAB_SCN_LINE:
            tell(p, LAB_PLAY_LINE, "%s", it->text);
            p->line = it->text;
            p->lineno = it->lineno;
            submit(p, it->text, line_done);
            return;
        }
    }
    finish(p);
}

void lab_play_go(lab_play_t *p)
{
    if (!p->waiting)
        return;
    p->waiting = false;
    if (p->ended)
        finish(p);
    else
        run_next(p);
}

void lab_play_stop(lab_play_t *p)
{
    if (p->sh == NULL || p->left)
        return;
    p->left = true;
    if (!p->ended)
        p->stopped = true;
    /* Else the line running calls run_next when it is done. */
    if (p->waiting) {
        p->waiting = false;
        finish(p);
    }
}

void lab_play_result_free(lab_play_result_t *res)
{
    free(res->answers);
    memset(res, 0, sizeof(*res));
}

int lab_scenario_play(const lab_scenario_t *s, const lab_play_opts_t *o, lab_play_result_t *res)
{
    player_t p = {.s = s, .o = o};
    p.devnull = fopen("/dev/null", "w");
    if (p.devnull == NULL || uv_loop_init(&p.loop) != 0) {
        if (p.devnull != NULL)
            fclose(p.devnull);
        return 1;
    }
    if (o->interactive && uv_tty_init(&p.loop, &p.in, 0, 1) == 0) {
        p.in_open = true;
        p.in.data = &p;
    }
    lab_shell_opts_t so = {.launch = o->launch, .color = o->color, .out = o->out, .err = o->err};
    if (so.launch.np == 0)
        so.launch.np = s->ranks;
    if (so.launch.backend == NULL && s->backend != NULL && strcmp(s->backend, "builtin") != 0)
        so.launch.backend = s->backend;
    int rc = 1;
    if (lab_shell_new(&p.loop, &so, &p.sh) != DL_OK) {
        fprintf(o->err, "distlab: could not start %d ranks for %s\n", so.launch.np, s->name);
        goto out;
    }
    if (o->view != NULL && !o->view->open(o->view->arg, &p, &p.loop, p.sh)) {
        lab_shell_close(p.sh);
        uv_run(&p.loop, UV_RUN_DEFAULT);
        goto out;
    }
    if (o->view != NULL)
        tell(&p, LAB_PLAY_TITLE, "%s (%d ranks)", s->title, so.launch.np);
    else
        fprintf(o->out, "%s%s%s (%d ranks)\n", o->color ? "\033[1m" : "", s->title,
                o->color ? "\033[0m" : "", so.launch.np);
    if (o->step) {
        p.line = "step on";
        submit(&p, p.line, line_done); /* then the first item */
    } else
        run_next(&p);
    uv_run(&p.loop, UV_RUN_DEFAULT);
    rc = p.failures == 0 && !p.stopped ? 0 : 1;
    /* The view is gone: the plain terminal says how it went. */
    if (p.ended)
        fprintf(o->out, "%s: %s\n", s->name, p.end);
    else if (p.left)
        fprintf(o->err, "%s: left at line %d, before its end\n", s->name, p.lineno);
    if (p.failures > 0 && !p.ended) /* else the end said it */
        fprintf(o->err, "%s: %d check%s failed\n", s->name, p.failures, p.failures == 1 ? "" : "s");
    if (o->exercise) {
        fprintf(o->out, "score: %g/%zu\n", p.res.score, s->n_asks);
        fflush(o->out);
    }
out:
    if (p.in_open)
        uv_close((uv_handle_t *)&p.in, NULL);
    uv_run(&p.loop, UV_RUN_DEFAULT);
    uv_loop_close(&p.loop);
    fclose(p.devnull);
    if (res != NULL)
        *res = p.res;
    else
        lab_play_result_free(&p.res);
    return rc;
}
