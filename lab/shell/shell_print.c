/* The shell's printer: a view of the session model (lab/session/model.h)
 * that writes its changes as text. Results go to the shell's out in rank
 * order, a statement at a time; messages go to its err as "distlab: ...".
 * Output that arrives while the prompt waits for input (a rank died
 * between lines, a step ran while a line is suspended) is wrapped in the
 * front end's before/after calls, so that readline can move its line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/session/report.h"
#include "lab/shell/shell_internal.h"

static void begin_async(lab_shell_t *sh, bool async)
{
    if (async && sh->o.before_async_output != NULL)
        sh->o.before_async_output(sh->o.arg);
}

static void end_async(lab_shell_t *sh, bool async)
{
    if (async && sh->o.after_async_output != NULL)
        sh->o.after_async_output(sh->o.arg);
}

static void print_error(lab_shell_t *sh, bool async, const char *text)
{
    begin_async(sh, async);
    fflush(sh->o.out);
    fprintf(sh->o.err, "%s%s\n", sh->o.color ? "\033[31mdistlab:\033[0m " : "distlab: ", text);
    fflush(sh->o.err);
    end_async(sh, async);
}

/* Each failed rank's error, once per distinct message: "ranks 0-3: ..."
 * rather than the same line four times. */
static void print_errors(lab_shell_t *sh, const lab_model_t *m, const lab_stmt_t *s)
{
    bool *done = calloc((size_t)m->np, sizeof(bool)), *same = calloc((size_t)m->np, sizeof(bool));
    for (int r = 0; done != NULL && same != NULL && r < m->np; r++) {
        const lab_rank_model_t *rm = &s->res.ranks[r];
        if (done[r] || !s->targeted[r] || !rm->failed || s->quiet[r])
            continue;
        int n = 0;
        for (int q = r; q < m->np; q++) {
            const lab_rank_model_t *qm = &s->res.ranks[q];
            same[q] = !done[q] && s->targeted[q] && qm->failed && !s->quiet[q] &&
                      strcmp(qm->error, rm->error) == 0;
            done[q] = done[q] || same[q];
            n += same[q];
        }
        char who[256], text[800];
        lab_report_rank_list(same, m->np, who, sizeof(who));
        snprintf(text, sizeof(text), "rank%s %s: %s", n > 1 ? "s" : "", who, rm->error);
        print_error(sh, sh->done == NULL, text);
        memset(same, 0, sizeof(bool) * (size_t)m->np);
    }
    free(done);
    free(same);
}

/* Each targeted rank's outputs in rank order (what assignments bound, also
 * inside blocks, only when echo is on), then the errors. */
static void print_statement(lab_shell_t *sh, const lab_model_t *m, const lab_stmt_t *s)
{
    for (int r = 0; r < m->np; r++)
        if (s->targeted[r])
            lab_report_rank_results(sh->o.out, r, &s->res.ranks[r], sh->echo);
    fflush(sh->o.out);
    print_errors(sh, m, s);
}

static void on_change(void *arg, const lab_model_t *m, const lab_event_t *ev)
{
    lab_shell_t *sh = arg;
    switch (ev->kind) {
    case LAB_EV_SAY:
        print_error(sh, ev->async, ev->text);
        break;
    case LAB_EV_STMT_DONE:
    case LAB_EV_STMT_FAILED:
        print_statement(sh, m, ev->stmt);
        break;
    case LAB_EV_STEP_RAN: {
        /* A step can run while the prompt waits for input (`next` hands
         * the prompt back at once). */
        bool async = sh->done == NULL && !ev->recorded;
        char *text = lab_step_render(ev->step);
        begin_async(sh, async);
        fprintf(sh->o.out, "%s%s\n", ev->recorded ? "(recorded) " : "",
                text != NULL ? text : "(out of memory)");
        fflush(sh->o.out);
        end_async(sh, async);
        free(text);
        break;
    }
    default:
        break;
    }
}

dl_status_t lab__shell_print_subscribe(lab_shell_t *sh)
{
    return lab_model_subscribe(&sh->m, on_change, sh);
}
