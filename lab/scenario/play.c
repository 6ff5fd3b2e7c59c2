/* See play.h. The scenario's items run one at a time from the shell's done
 * callback; a pause reads standard input on the same loop, so the ranks'
 * events (and their liveness) are served while the reader reads. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "distlab/tensor.h"
#include "lab/scenario/play.h"
#include "lab/session/model.h"
#include "lab/shell/shell.h"

typedef struct {
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
} player_t;

static void run_next(player_t *p);

static void fail(player_t *p, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(player_t *p, int lineno, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fflush(p->o->out);
    fprintf(p->o->err, "%sFAIL%s %s:%d: %s\n", p->o->color ? "\033[31m" : "",
            p->o->color ? "\033[0m" : "", p->s->path, lineno, text);
    fflush(p->o->err);
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
        fprintf(p->o->out, "ok   expect %d %s == %s\n", r, it->name, it->text);
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
    lab_shell_set_output(p->sh, p->devnull, p->devnull, false);
    lab_shell_submit(p->sh, line, checked, p);
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
    /* Enter goes on; the end of input goes on too and stops asking. */
    if (n < 0 || memchr(buf->base, '\n', (size_t)n) != NULL) {
        uv_read_stop(s);
        p->reading = false;
        if (n < 0)
            p->in_open = false;
        run_next(p);
    }
}

static bool wait_for_enter(player_t *p, const char *what)
{
    if (!p->o->interactive || !p->in_open)
        return false;
    fprintf(p->o->out, "%s(Enter to go on)%s ", what, what[0] ? " " : "");
    fflush(p->o->out);
    p->reading = true;
    uv_read_start((uv_stream_t *)&p->in, alloc_in, on_input);
    return true;
}

/* ---- lines ---- */

static void line_done(void *arg, bool ok)
{
    player_t *p = arg;
    if (!ok && !lab_shell_stepping(p->sh)) {
        fail(p, p->lineno, "`%s` failed; the scenario stops here", p->line);
        p->stopped = true;
    }
    run_next(p);
}

/* A collective waits in step mode: the next step, when the reader says. */
static void step_on(player_t *p)
{
    if (wait_for_enter(p, ""))
        return;
    lab_shell_submit(p->sh, "next", line_done, p);
}

static void finish(player_t *p)
{
    lab_shell_close(p->sh);
    p->sh = NULL;
    if (p->in_open)
        uv_close((uv_handle_t *)&p->in, NULL);
    p->in_open = false;
}

static void run_next(player_t *p)
{
    if (p->sh == NULL || p->reading || p->expecting != NULL)
        return;
    if (lab_shell_stepping(p->sh) && !p->stopped) {
        step_on(p);
        return;
    }
    while (!p->stopped && !lab_shell_quitting(p->sh) && p->next < p->s->n_items) {
        const lab_scn_item_t *it = &p->s->items[p->next++];
        switch (it->kind) {
        case LAB_SCN_SAY:
            fprintf(p->o->out, "%s%s%s\n", p->o->color ? "\033[1m" : "", it->text,
                    p->o->color ? "\033[0m" : "");
            fflush(p->o->out);
            break;
        case LAB_SCN_PAUSE:
            if (it->text[0] != '\0' && !p->o->interactive)
                fprintf(p->o->out, "%s\n", it->text);
            if (wait_for_enter(p, it->text))
                return;
            break;
        case LAB_SCN_EXPECT:
            if (check(p, it))
                return;
            break;
        case LAB_SCN_LINE:
            fprintf(p->o->out, ">>> %s\n", it->text);
            fflush(p->o->out);
            p->line = it->text;
            p->lineno = it->lineno;
            lab_shell_submit(p->sh, it->text, line_done, p);
            return;
        }
    }
    finish(p);
}

int lab_scenario_play(const lab_scenario_t *s, const lab_play_opts_t *o)
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
    fprintf(o->out, "%s%s%s (%d ranks)\n", o->color ? "\033[1m" : "", s->title,
            o->color ? "\033[0m" : "", so.launch.np);
    if (o->step) {
        p.line = "step on";
        lab_shell_submit(p.sh, p.line, line_done, &p); /* then the first item */
    } else
        run_next(&p);
    uv_run(&p.loop, UV_RUN_DEFAULT);
    rc = p.failures == 0 && !p.stopped ? 0 : 1;
    if (p.failures > 0)
        fprintf(o->err, "%s: %d check%s failed\n", s->name, p.failures, p.failures == 1 ? "" : "s");
out:
    if (p.in_open)
        uv_close((uv_handle_t *)&p.in, NULL);
    uv_run(&p.loop, UV_RUN_DEFAULT);
    uv_loop_close(&p.loop);
    fclose(p.devnull);
    return rc;
}
