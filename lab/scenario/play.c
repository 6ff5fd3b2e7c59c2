/* See play.h. The scenario's items run one at a time from the shell's done
 * callback; a pause reads standard input on the same loop, so the ranks'
 * events (and their liveness) are served while the reader reads. In a view
 * (opts.view) the view shows what would be printed, runs the lines as if
 * typed there and waits for the person itself, calling lab_play_go. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "distlab/tensor.h"
#include "lab/proto/proto.h"
#include "lab/scenario/play.h"
#include "lab/session/model.h"
#include "lab/shell/shell.h"

typedef struct lab_play {
    const lab_scenario_t *s;
    const lab_play_opts_t *o;
    uv_loop_t loop;
    uv_tty_t in;           /* standard input, for pauses */
    bool in_handle;        /* the handle is open (closed at the end) */
    bool in_open, reading; /* input can still be read; a line is being read */
    lab_shell_t *sh;
    size_t next;
    int failures;
    bool stopped;     /* a line failed: the rest is not run */
    const char *line; /* the shell line running, and its line in the file */
    int lineno;
    /* An expectation reads the tensor as it is now: the rank prints it to
     * the session (not to the reader), then the check reads the model. */
    const lab_scn_item_t *expecting;
    /* While a check prints NAME: which ranks showed a tensor of that name
     * (fresh[r]). A name rebound to a number keeps its last tensor in the
     * model, which the check must not take for what the name holds now. */
    char fresh_name[64];
    bool *fresh;
    int n_fresh;
    FILE *devnull;
    /* Standard input read but not yet handed out as lines (a pasted block
     * comes in one read), whether it has ended, and what the next line is
     * for. */
    char input[8192];
    size_t input_len;
    bool in_eof;
    void (*on_line)(struct lab_play *p, const char *line);
    /* Questions: the one being answered, and every answer so far. */
    const lab_scn_item_t *asking;
    lab_play_result_t res;
    /* In a view: the view waits for the person; the end was reached (and
     * shown); the person left. checks: expectations that held. */
    bool waiting, ended, left;
    int checks;
    char end[160]; /* how it ended, as the view showed it */
    bool quiet;    /* the line running is the player's own: its output goes nowhere */
    /* In a view, a collective stepped by the view's keys: their lines are
     * the view's, so its failure is heard here (a statement failed). */
    bool steps_wait, step_failed;
    /* A `write` question being answered (see the section below). */
    struct {
        const lab_scn_item_t *q;
        bool solution;           /* the model solution runs, not the learner's code */
        lab_play_code_t *c;      /* what this run records */
        lab_play_code_t scratch; /* the solution's run */
        size_t given;            /* the next `given` line */
        bool told;               /* the limits were told */
        bool recording;          /* the code runs: its first error is kept */
        long long *msgs0, *bytes0;
        double max_msgs, max_bytes; /* -1: no limit */
        /* What the built-in collective made of the `given` start, rank by
         * rank: copies held here, out of the code's reach. */
        lab_snap_t *want;
        int n_want;
        /* Seeds every rank's generator before the `given` lines: one
         * random seed a rank, drawn once a question (seed_line). */
        char *seeds;
        char *typed; /* code being typed */
        size_t typed_len;
    } w;
} player_t;

static void run_next(player_t *p);

#define MAX_WHAT 320 /* a failure's text */
/* The longest answer to an `ask` that is read (lab_play_answer_t.given). */
#define MAX_ANSWER ((int)sizeof(((lab_play_answer_t *)NULL)->given[0]) - 1)

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
    /* Whole, however long: a failure's end says what the rank has. */
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    const lab_play_view_t *v = p->o->view;
    if (v != NULL) {
        v->note(v->arg, kind, text);
        free(text);
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
    free(text);
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
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    tell(p, LAB_PLAY_FAIL, "%s:%d: %s", p->s->path, lineno, n >= 0 ? text : "out of memory");
    if (n >= 0)
        free(text);
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

/* An expectation's value as written, cut after its first values when
 * long (a thousand zeros say little, and what the rank has comes after). */
static void written(const lab_scn_item_t *it, char *buf, size_t cap)
{
    size_t keep = strlen(it->text);
    if (keep <= 72) {
        snprintf(buf, cap, "%s", it->text);
        return;
    }
    for (keep = 60; keep > 0 && it->text[keep] != ','; keep--)
        ;
    keep = keep > 0 ? keep : 60; /* one long number */
    snprintf(buf, cap, "%.*s, ... (%zu values)", (int)keep, it->text, it->n_values);
}

/* torch's print of a tensor wrapped over lines, as one line: each line
 * break and the blanks around it become one space. */
static void unwrap(char *text)
{
    char *w = text;
    for (const char *r = text; *r != '\0';) {
        if (*r != '\n') {
            *w++ = *r++;
            continue;
        }
        while (w > text && isblank((unsigned char)w[-1]))
            w--;
        while (*r == '\n' || isblank((unsigned char)*r))
            r++;
        *w++ = ' ';
    }
    *w = '\0';
}

/* From now on, notes which ranks show a tensor named name[0:len]. */
static void watch_fresh(player_t *p, const char *name, size_t len)
{
    int np = lab_shell_world_size(p->sh);
    free(p->fresh);
    p->fresh = calloc((size_t)np + 1, sizeof(*p->fresh));
    p->n_fresh = p->fresh != NULL ? np : 0;
    snprintf(p->fresh_name, sizeof(p->fresh_name), "%.*s", (int)len, name);
}

static bool is_fresh(const player_t *p, int r)
{
    return r >= 0 && r < p->n_fresh && p->fresh[r];
}

static void check_rank(player_t *p, const lab_scn_item_t *it, int r)
{
    const lab_model_t *m = lab_shell_model(p->sh);
    const lab_snap_t *sn = shown(m, r, it->name);
    char want[96];
    written(it, want, sizeof(want));
    if (sn == NULL) {
        fail(p, it->lineno, "expect %d %s == %s: rank %d has shown no tensor named %s", r, it->name,
             want, r, it->name);
        return;
    }
    if (!is_fresh(p, r)) { /* the last tensor it showed, not what it holds */
        fail(p, it->lineno, "expect %d %s == %s, but rank %d's %s holds no tensor now", r, it->name,
             want, r, it->name);
        return;
    }
    size_t numel = lab_snap_numel(sn);
    bool ok = lab_snap_is_whole(sn) && numel == it->n_values;
    for (size_t i = 0; ok && i < numel; i++)
        ok = lab_scenario_close(dl_dtype_get(sn->t->dtype, sn->t->data, i), it->values[i]);
    if (ok) {
        tell(p, LAB_PLAY_OK, "expect %d %s == %s", r, it->name, want);
        p->checks++;
        return;
    }
    char *text = lab_snap_text(sn);
    if (text != NULL)
        unwrap(text);
    fail(p, it->lineno, "expect %d %s == %s, but rank %d has %s = %s", r, it->name, want, r,
         it->name, text != NULL ? text : "?");
    free(text);
}

static void checked(void *arg, bool ok)
{
    (void)ok; /* a tensor that is not there is named by check_rank */
    player_t *p = arg;
    const lab_scn_item_t *it = p->expecting;
    p->expecting = NULL;
    lab_shell_whole(p->sh, false);
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
    watch_fresh(p, it->name, (size_t)base);
    /* A view shows the print in the ranks' panels, not as text. */
    if (p->o->view == NULL)
        lab_shell_set_output(p->sh, p->devnull, p->devnull, false);
    /* Every element is compared, not only those a print shows. */
    lab_shell_whole(p->sh, true);
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

/* Hands out the next line read (without its newline), once one is
 * complete or the input has ended (then what is left, maybe ""). */
static void deliver(player_t *p)
{
    if (!p->reading)
        return;
    char *nl = memchr(p->input, '\n', p->input_len);
    if (nl == NULL && !p->in_eof && p->input_len < sizeof(p->input) - 1)
        return;
    size_t take = nl != NULL ? (size_t)(nl - p->input) : p->input_len;
    char line[sizeof(p->input)];
    memcpy(line, p->input, take);
    line[take] = '\0';
    size_t used = take + (nl != NULL);
    memmove(p->input, p->input + used, p->input_len - used);
    p->input_len -= used;
    uv_read_stop((uv_stream_t *)&p->in);
    p->reading = false;
    if (nl == NULL && p->in_eof) {
        p->in_open = false;
        /* Ctrl-D ended no line: what is said next starts one of its own,
         * not after the prompt (or what was typed before it). */
        fputc('\n', p->o->out);
        fflush(p->o->out);
    }
    p->on_line(p, line);
}

static void on_input(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    player_t *p = s->data;
    if (n < 0)
        p->in_eof = true;
    size_t take = n > 0 ? (size_t)n : 0;
    if (take > sizeof(p->input) - 1 - p->input_len)
        take = sizeof(p->input) - 1 - p->input_len;
    memcpy(p->input + p->input_len, buf->base, take);
    p->input_len += take;
    deliver(p);
}

static void read_line(player_t *p, void (*on_line)(player_t *, const char *))
{
    p->reading = true;
    p->on_line = on_line;
    if (memchr(p->input, '\n', p->input_len) != NULL || p->in_eof)
        deliver(p); /* read already */
    else
        uv_read_start((uv_stream_t *)&p->in, alloc_in, on_input);
}

static bool quit_word(const char *w);

/* What was typed at a pause (or a step's prompt) is `quit`, `exit` or
 * `q`: the person leaves there, as at a question (it used to go on). */
static bool quit_typed(const char *line)
{
    char w[16];
    const char *t = line + strspn(line, " \t");
    size_t n = strcspn(t, " \t\r");
    if (n >= sizeof(w) || t[n + strspn(t + n, " \t\r")] != '\0')
        return false;
    snprintf(w, sizeof(w), "%.*s", (int)n, t);
    return quit_word(w);
}

static void leave_at_pause(player_t *p)
{
    fprintf(p->o->out, "  (left the %s)\n", p->o->exercise ? "exercise" : "scenario");
    fflush(p->o->out);
    p->stopped = p->left = true;
    run_next(p); /* nothing more runs: the end */
}

static void go_on(player_t *p, const char *line)
{
    if (quit_typed(line)) {
        leave_at_pause(p);
        return;
    }
    run_next(p);
}

/* A pause: waits for Enter (on a terminal), then calls then. False when
 * nobody is there to press it (the scenario goes straight on). */
static bool wait_for_enter(player_t *p, const char *what, void (*then)(player_t *, const char *),
                           const char *prompt)
{
    if (p->o->view != NULL) {
        view_wait(p, LAB_PLAY_WAIT_PAUSE, what);
        return true;
    }
    if (!p->o->interactive || !p->in_open)
        return false;
    fprintf(p->o->out, "%s%s%s ", what, what[0] ? " " : "", prompt);
    fflush(p->o->out);
    read_line(p, then);
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
static void leave_at_question(player_t *p);

/* The learner's next try: from the answers file, or typed. */
static bool next_try(player_t *p)
{
    lab_play_answer_t *a = &p->res.answers[p->res.n - 1];
    if (p->o->answers != NULL) {
        /* A line whole, however long: the next answer is the next line. */
        char *line = NULL;
        size_t cap = 0;
        if (a->tries > 0 || getline(&line, &cap, p->o->answers) < 0) {
            free(line);
            return false;
        }
        line[strcspn(line, "\n")] = '\0';
        fprintf(p->o->out, "> %.*s%s\n", MAX_ANSWER, line, strlen(line) > MAX_ANSWER ? " ..." : "");
        answered(p, line);
        free(line);
        return true;
    }
    if (a->tries >= 2)
        return false;
    if (!p->in_open) {
        if (a->tries == 0) {
            leave_at_question(p); /* the input ended before this question */
            return true;
        }
        return false;
    }
    fprintf(p->o->out, "> ");
    fflush(p->o->out);
    read_line(p, answered);
    return true;
}

static void write_end(player_t *p);

/* The learner leaves at a question, asked or code (`quit`, or the end of
 * the input): what was typed is no try, the questions left are not asked,
 * and the exercise ends as stopped. */
static void leave_at_question(player_t *p)
{
    fprintf(p->o->out, "  (left the exercise)\n");
    fflush(p->o->out);
    p->stopped = p->left = true;
    if (p->lineno == 0 && p->res.n > 0)
        p->lineno = p->res.answers[p->res.n - 1].lineno;
    if (p->w.q != NULL) {
        write_end(p); /* goes on (to the end) from there */
        return;
    }
    p->asking = NULL;
    run_next(p);
}

/* The words typed at a question (an `ask` or a `write`) that are for the
 * exercise itself: leaving it, and asking for the hint. */
static bool quit_word(const char *w)
{
    return strcmp(w, "quit") == 0 || strcmp(w, "exit") == 0 || strcmp(w, "q") == 0;
}

static bool hint_word(const char *w)
{
    return strcmp(w, "hint") == 0 || strcmp(w, "?") == 0 || strcmp(w, "help") == 0;
}

/* What typed at a question is for the exercise itself, not an answer:
 * `quit` leaves, `hint` (or `?`, `help`) shows the hint, and words where
 * numbers are asked for are refused. None of them is a try. */
static bool not_an_answer(player_t *p, const lab_scn_item_t *q, const char *given)
{
    char w[16];
    size_t n = strlen(given + strspn(given, " \t"));
    snprintf(w, sizeof(w), "%.*s", (int)(n < 15 ? n : 15), given + strspn(given, " \t"));
    w[strcspn(w, " \t")] = '\0';
    if (quit_word(w)) {
        leave_at_question(p);
        return true;
    }
    if (hint_word(w))
        fprintf(p->o->out, "  %s%s\n", q->hint != NULL ? q->hint : "no hint for this one",
                q->n_values > 0 ? " (answer with numbers, such as [1, 2]; quit leaves)"
                                : " (quit leaves)");
    else if (strlen(given) > MAX_ANSWER)
        fprintf(p->o->out,
                "  an answer is at most %d bytes, and that one has %zu: that was no try\n",
                MAX_ANSWER, strlen(given));
    else if (given[strspn(given, " \t")] != '\0' && !lab_scenario_answer_readable(q, given))
        fprintf(p->o->out, "  answer with numbers, such as 6 or [1, 2] (hint shows the hint, "
                           "quit leaves): that was no try\n");
    else if (given[strspn(given, " \t")] != '\0')
        return false;
    /* Enter alone, a hint asked for, or words: ask again. */
    fprintf(p->o->out, "> ");
    fflush(p->o->out);
    read_line(p, answered);
    return true;
}

static void answered(player_t *p, const char *given)
{
    const lab_scn_item_t *q = p->asking;
    lab_play_answer_t *a = &p->res.answers[p->res.n - 1];
    if (p->o->answers == NULL && !p->in_open && given[strspn(given, " \t")] == '\0') {
        leave_at_question(p); /* Ctrl-D */
        return;
    }
    if (p->o->answers == NULL && not_an_answer(p, q, given))
        return;
    /* From a file every line is a try: one too long to read is a wrong one. */
    bool too_long = strlen(given) > MAX_ANSWER;
    if (too_long)
        fprintf(p->o->out, "  an answer is at most %d bytes, and that one has %zu: not read\n",
                MAX_ANSWER, strlen(given));
    snprintf(a->given[a->tries < 2 ? a->tries : 1], sizeof(a->given[0]), "%s",
             too_long ? "" : given);
    a->tries++;
    if (!too_long && lab_scenario_answer_ok(q, given)) {
        a->points = a->tries == 1 ? 1.0 : 0.5;
        p->res.score += a->points;
        fprintf(p->o->out, "  right%s\n", a->tries == 1 ? "" : " (second try)");
        if (q->explain != NULL)
            fprintf(p->o->out, "  %s\n", q->explain);
    } else {
        /* The hint goes with the first wrong try; the second gets the answer. */
        bool hint = q->hint != NULL && a->tries == 1;
        fprintf(p->o->out, "  not quite%s%s\n", hint ? ": " : "", hint ? q->hint : "");
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

/* ---- write questions ----
 *
 * A `write` question runs as a chain of lines on the ranks, each started
 * from the done callback of the one before:
 *
 *   respawn     every run starts on fresh ranks (the session's settings
 *               stay): nothing the last run left behind reaches it
 *   seed        manual_seed on every rank, a seed of its own drawn at
 *               random for the question: a start made with randint or
 *               rand is the same for every try, and no rank can make up
 *               another's (its default seed is its rank), so the right
 *               result cannot be had without the messages
 *   given       the set-up lines, one at a time, shown as they run
 *   save        _builtin_NAME = NAME.clone(), printed: its size is the
 *               nbytes of the limits
 *   reference   COLL(_builtin_NAME, ...): the built-in collective, then
 *               printed; the player keeps a copy of every rank's result,
 *               so that nothing the code does (it could write into
 *               _builtin_NAME too) changes what it is compared with
 *   the code    the learner's (typed, or from the answers file) or the
 *               solution; each rank's sends are counted around it from
 *               the session model's point-to-point ledger
 *   compare     NAME printed, then compared rank by rank from the model's
 *               snapshot with the reference kept
 *
 * The player's own lines (respawn, save, reference, compare) print
 * nowhere. In step mode a collective in the chain's lines runs to its end
 * (`continue`): the question's code is checked whole. A wrong try gets the hint and, on a terminal,
 * a second try from the set-up again; after the last one the solution runs, so that the rest of the
 * scenario goes on from a right result. */

static void code_reset(player_t *p);
static void code_run(player_t *p, const char *code);
static void code_verdict(player_t *p);

static void quietly(player_t *p, const char *line, lab_shell_done_t done)
{
    if (p->o->view == NULL)
        lab_shell_set_output(p->sh, p->devnull, p->devnull, false);
    p->quiet = true;
    lab_shell_whole(p->sh, true); /* what is compared comes whole */
    submit(p, line, done);
}

static void loud(player_t *p)
{
    if (p->quiet && p->o->view == NULL)
        lab_shell_set_output(p->sh, p->o->out, p->o->err, p->o->color);
    p->quiet = false;
    lab_shell_whole(p->sh, false);
}

/* The kept reference, dropped. */
static void want_free(player_t *p)
{
    for (int r = 0; r < p->w.n_want; r++)
        dl_tensor_free(p->w.want[r].t);
    free(p->w.want);
    p->w.want = NULL;
    p->w.n_want = 0;
}

/* The reference, kept: a copy of every rank's snapshot of ref. False when
 * a rank has none (or out of memory). */
static bool want_keep(player_t *p, const char *ref)
{
    want_free(p);
    const lab_model_t *m = lab_shell_model(p->sh);
    int np = lab_shell_world_size(p->sh);
    if (np > m->np || (p->w.want = calloc((size_t)np, sizeof(*p->w.want))) == NULL)
        return false;
    p->w.n_want = np;
    for (int r = 0; r < np; r++) {
        const lab_snap_t *sn = shown(m, r, ref);
        if (sn == NULL)
            return false;
        p->w.want[r] = *sn;
        p->w.want[r].t = NULL;
        if (sn->t != NULL && dl_tensor_clone(sn->t, NULL, &p->w.want[r].t) != DL_OK)
            return false;
    }
    return true;
}

static const lab_snap_t *wanted(const player_t *p, int r)
{
    return r < p->w.n_want ? &p->w.want[r] : NULL;
}

static void code_free(lab_play_code_t *c)
{
    free(c->code);
    free(c->messages);
    free(c->bytes);
    free(c->rank_matched);
    memset(c, 0, sizeof(*c));
}

static const lab_scn_write_t *question(const player_t *p)
{
    return p->w.q->write;
}

/* The question is over. */
static void write_end(player_t *p)
{
    code_free(&p->w.scratch);
    free(p->w.msgs0);
    free(p->w.bytes0);
    free(p->w.typed);
    free(p->w.seeds);
    want_free(p);
    memset(&p->w, 0, sizeof(p->w));
    run_next(p);
}

/* Whether the chain stops here: the person left the view (the question
 * ends at once), or, in step mode, a collective of the line waits (it is
 * run to its end with `continue`, and done is called again). */
static bool chain_held(player_t *p, lab_shell_done_t done)
{
    if (p->left) {
        loud(p);
        write_end(p);
        return true;
    }
    if (lab_shell_stepping(p->sh)) {
        submit(p, "continue", done);
        return true;
    }
    return false;
}

/* The scenario's own part of the question failed: the scenario stops. */
static void write_broken(player_t *p, const char *what)
{
    fail(p, p->w.q->lineno, "%s; the scenario stops here", what);
    p->stopped = true;
    write_end(p);
}

/* A report of several lines (a headline ending in ':', then a line per
 * rank) made one line that reads whole: its lines joined by "; ", each
 * one's runs of blanks made one; lines that do not fit in cap are left
 * out whole, and the headline's ':' with them when none fits. */
static void one_line(char *out, size_t cap, const char *text)
{
    size_t n = 0;
    const char *sep = "";
    out[0] = '\0';
    for (const char *l = text; *l != '\0';) {
        size_t len = strcspn(l, "\n"), m = 0;
        char part[MAX_WHAT];
        for (size_t i = 0; i < len && m < sizeof(part) - 1; i++)
            if (!isblank((unsigned char)l[i]) || (m > 0 && !isblank((unsigned char)part[m - 1])))
                part[m++] = l[i];
        while (m > 0 && isblank((unsigned char)part[m - 1]))
            m--;
        part[m] = '\0';
        l += len + (l[len] == '\n');
        if (m == 0)
            continue;
        if (n > 0 && n + strlen(sep) + m >= cap)
            break;
        n += (size_t)snprintf(out + n, cap - n, "%s%s", sep, part);
        if (n >= cap)
            return; /* the headline alone is longer than cap: cut */
        sep = out[n - 1] == ':' ? " " : "; ";
    }
    if (n > 0 && out[n - 1] == ':')
        out[n - 1] = '\0';
}

/* The model's changes while the code runs: its first error is kept, in
 * one line ("rank 1: recv from rank 0 (tag 0) aborted: ... timed out"). */
static void on_change(void *arg, const lab_model_t *m, const lab_event_t *ev)
{
    player_t *p = arg;
    if (ev->kind == LAB_EV_STMT_FAILED && p->steps_wait)
        p->step_failed = true;
    if (ev->kind == LAB_EV_OUTPUT && ev->frame != NULL && ev->rank >= 0 && ev->rank < p->n_fresh &&
        strcmp(lab_msg_type(ev->frame->json), "snap") == 0 &&
        strcmp(lab_json_str(ev->frame->json, "name", ""), p->fresh_name) == 0)
        p->fresh[ev->rank] = true;
    lab_play_code_t *c = p->w.c;
    if (!p->w.recording || c == NULL || c->error[0] != '\0')
        return;
    if (ev->kind == LAB_EV_SAY && ev->text != NULL) {
        one_line(c->error, sizeof(c->error), ev->text);
        /* The shell's advice is for its prompt: here each run of the code
         * starts on fresh ranks, and code may not hold `respawn`. */
        char *advice = strstr(c->error, "; `respawn` restarts the ranks");
        if (advice != NULL)
            *advice = '\0';
    } else if (ev->kind == LAB_EV_STMT_FAILED && ev->stmt != NULL) {
        for (int r = 0; r < m->np; r++) {
            const lab_rank_model_t *rm = &ev->stmt->res.ranks[r];
            if (ev->stmt->targeted[r] && rm->failed && rm->error[0] != '\0') {
                int n = snprintf(c->error, sizeof(c->error), "rank %d: ", r);
                one_line(c->error + n, sizeof(c->error) - (size_t)n, rm->error);
                break;
            }
        }
    }
}

/* What each rank has sent in this world, from the ledger. */
static void sent_so_far(player_t *p, long long *msgs, long long *bytes, int np)
{
    const lab_p2p_t *l = &lab_shell_model(p->sh)->p2p;
    for (int r = 0; r < np; r++) {
        bool known = l->sent != NULL && r < l->np;
        msgs[r] = known ? l->sent[r] : 0;
        bytes[r] = known ? l->sent_bytes[r] : 0;
    }
}

static void solution_run(player_t *p)
{
    p->w.solution = true;
    code_free(&p->w.scratch);
    p->w.c = &p->w.scratch;
    code_reset(p);
}

static void no_answer(player_t *p)
{
    fprintf(p->o->out, "  (no answer)\n");
    fflush(p->o->out);
    solution_run(p);
}

/* ---- the learner's code, typed ---- */

static void code_line(player_t *p, const char *line);

static void prompt_code(player_t *p, bool more)
{
    fprintf(p->o->out, "%s", more ? "... " : "> ");
    fflush(p->o->out);
    read_line(p, code_line);
}

static void code_line(player_t *p, const char *line)
{
    bool blank = line[strspn(line, " \t\r")] == '\0';
    if (!p->in_open && blank) {
        leave_at_question(p); /* Ctrl-D */
        return;
    }
    if (p->w.typed_len == 0) {
        const char *rest = line + strspn(line, " \t");
        if (strncmp(rest, ":load", 5) == 0 && (rest[5] == '\0' || rest[5] == ' ')) {
            char path[4096];
            snprintf(path, sizeof(path), "%s", rest + 5 + strspn(rest + 5, " \t"));
            path[strcspn(path, "\r")] = '\0';
            if (path[0] == '\0') { /* no try: nothing was read */
                fprintf(p->o->out, "  :load needs a file: :load FILE\n");
                prompt_code(p, false);
                return;
            }
            char *text = lab_scenario_read_file(path);
            if (text == NULL) {
                fprintf(p->o->out, "  cannot read %s: %s\n", path, strerror(errno));
                if (p->in_open)
                    prompt_code(p, false);
                else
                    no_answer(p);
                return;
            }
            tell(p, LAB_PLAY_LINE, "%s", text);
            code_run(p, text);
            free(text);
            return;
        }
        if (blank) {
            if (p->in_open)
                prompt_code(p, false);
            else
                no_answer(p);
            return;
        }
        /* A word alone, as at an `ask` question, is for the exercise and
         * costs no try: `quit` leaves, `hint` shows the hint. As code
         * neither could run (a session command, a name not defined). */
        char w[16];
        snprintf(w, sizeof(w), "%s", rest);
        w[strcspn(w, " \t\r")] = '\0';
        bool alone = rest[strlen(w) + strspn(rest + strlen(w), " \t\r")] == '\0';
        if (alone && quit_word(w)) {
            leave_at_question(p);
            return;
        }
        if (alone && hint_word(w)) {
            const char *hint = p->w.q->hint;
            fprintf(p->o->out, "  %s (quit leaves)\n",
                    hint != NULL ? hint : "no hint for this one");
            prompt_code(p, false);
            return;
        }
    }
    if (!blank) {
        size_t n = strlen(line);
        char *grown = realloc(p->w.typed, p->w.typed_len + n + 2);
        if (grown != NULL) {
            p->w.typed = grown;
            memcpy(grown + p->w.typed_len, line, n);
            p->w.typed_len += n;
            grown[p->w.typed_len++] = '\n';
            grown[p->w.typed_len] = '\0';
        }
    }
    if (!blank && p->in_open) {
        prompt_code(p, true);
        return;
    }
    char *code = p->w.typed;
    p->w.typed = NULL;
    p->w.typed_len = 0;
    code_run(p, code != NULL ? code : "");
    free(code);
}

/* The learner's next try: from the answers file (one), or typed. */
static void next_code(player_t *p)
{
    lab_play_answer_t *a = &p->res.answers[p->res.n - 1];
    p->w.c = &a->code_tries[a->tries];
    if (p->o->answers != NULL) {
        char *code = NULL, why[300];
        dl_status_t st =
            lab_scenario_read_code(p->o->answers, p->o->answers_path, &code, why, sizeof(why));
        if (st == DL_ERR_NOT_FOUND) {
            no_answer(p);
            return;
        }
        if (st != DL_OK) {
            p->w.c->code = strdup("");
            p->w.c->refused = true;
            snprintf(p->w.c->error, sizeof(p->w.c->error), "%s", why);
            code_verdict(p);
            return;
        }
        for (const char *l = code; l != NULL;) {
            const char *nl = strchr(l, '\n');
            fprintf(p->o->out, "> %.*s\n", nl != NULL ? (int)(nl - l) : (int)strlen(l), l);
            l = nl != NULL ? nl + 1 : NULL;
        }
        fflush(p->o->out);
        code_run(p, code);
        free(code);
        return;
    }
    if (!p->in_open) {
        no_answer(p);
        return;
    }
    if (a->tries == 0)
        fprintf(p->o->out, "  Type your code; an empty line ends it (:load FILE reads a file).\n");
    prompt_code(p, false);
}

/* ---- the chain ---- */

/* The rules the code must keep, told once per question. */
static void tell_rules(player_t *p)
{
    const lab_scn_write_t *w = question(p);
    char text[640];
    int n = snprintf(text, sizeof(text), "  On every rank %s must end as %s(%s%s) leaves it",
                     w->name, w->coll, w->name, w->coll_more);
    if (p->w.max_msgs >= 0 && n > 0 && (size_t)n < sizeof(text))
        n += snprintf(text + n, sizeof(text) - (size_t)n, "; at most %.15g message%s",
                      p->w.max_msgs, p->w.max_msgs == 1 ? "" : "s");
    if (p->w.max_bytes >= 0 && n > 0 && (size_t)n < sizeof(text))
        n += snprintf(text + n, sizeof(text) - (size_t)n, "%s %.15g B",
                      p->w.max_msgs >= 0 ? " and" : "; at most", p->w.max_bytes);
    if ((p->w.max_msgs >= 0 || p->w.max_bytes >= 0) && n > 0 && (size_t)n < sizeof(text))
        n += snprintf(text + n, sizeof(text) - (size_t)n, " sent per rank");
    for (size_t i = 0; i < w->n_forbid && n > 0 && (size_t)n < sizeof(text); i++)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "%s%s", i == 0 ? "; not allowed: " : ", ",
                      w->forbid[i]);
    tell(p, LAB_PLAY_TEXT, "%s.", text);
}

static void ref_done(void *arg, bool ok);

static void saved(void *arg, bool ok)
{
    player_t *p = arg;
    if (chain_held(p, saved))
        return;
    loud(p);
    const lab_scn_write_t *w = question(p);
    char ref[80], why[200];
    lab_scenario_ref_name(w, ref, sizeof(ref));
    const lab_snap_t *sn = ok ? shown(lab_shell_model(p->sh), 0, ref) : NULL;
    if (sn == NULL) {
        char what[160];
        snprintf(what, sizeof(what), "check: there is no tensor %s after the `given` lines",
                 w->name);
        write_broken(p, what);
        return;
    }
    double nbytes = (double)lab_snap_numel(sn) * (double)dl_dtype_size(sn->t->dtype);
    if (nbytes > LAB_SNAP_WHOLE_MAX) {
        char what[200];
        snprintf(what, sizeof(what),
                 "check: %s holds %.0f MiB on a rank, and a write question compares at most "
                 "%u MiB",
                 w->name, nbytes / (1 << 20), LAB_SNAP_WHOLE_MAX >> 20);
        write_broken(p, what);
        return;
    }
    int np = lab_shell_world_size(p->sh);
    p->w.max_msgs = p->w.max_bytes = -1;
    if ((w->limit_messages != NULL &&
         lab_scenario_limit_eval(w->limit_messages, np, nbytes, &p->w.max_msgs, why, sizeof(why)) !=
             DL_OK) ||
        (w->limit_bytes != NULL &&
         lab_scenario_limit_eval(w->limit_bytes, np, nbytes, &p->w.max_bytes, why, sizeof(why)) !=
             DL_OK)) {
        char what[260];
        snprintf(what, sizeof(what), "limit: %s", why);
        write_broken(p, what);
        return;
    }
    /* In step mode the reference is not stepped: it is the player's. */
    char line[MAX_WHAT];
    snprintf(line, sizeof(line), "%s%s(%s%s); print %s%s", p->o->step ? "step off; " : "", w->coll,
             ref, w->coll_more, ref, p->o->step ? "; step on" : "");
    quietly(p, line, ref_done);
}

/* The reference ran on the `given` start: kept, then the code runs. */
static void ref_done(void *arg, bool ok)
{
    player_t *p = arg;
    if (chain_held(p, ref_done))
        return;
    loud(p);
    const lab_scn_write_t *w = question(p);
    char ref[80];
    lab_scenario_ref_name(w, ref, sizeof(ref));
    if (!ok || !want_keep(p, ref)) {
        char what[MAX_WHAT];
        snprintf(what, sizeof(what), "check: the built-in %s(%s%s) failed on the `given` start",
                 w->coll, w->name, w->coll_more);
        write_broken(p, what);
        return;
    }
    if (!p->w.told) {
        p->w.told = true;
        tell_rules(p);
    }
    if (p->w.solution) {
        tell(p, LAB_PLAY_TEXT, "  the solution:");
        tell(p, LAB_PLAY_LINE, "%s", w->solution);
        code_run(p, w->solution);
        return;
    }
    next_code(p);
}

/* The set-up lines, one at a time, after the respawn. */
static void given_done(void *arg, bool ok)
{
    player_t *p = arg;
    if (chain_held(p, given_done))
        return;
    loud(p);
    const lab_scn_write_t *w = question(p);
    if (!ok) {
        char what[MAX_WHAT];
        if (p->w.given == 0)
            snprintf(what, sizeof(what), "the ranks could not be seeded");
        else
            snprintf(what, sizeof(what), "given `%.200s` failed", w->given[p->w.given - 1]);
        write_broken(p, what);
        return;
    }
    if (p->w.given < w->n_given) {
        const char *line = w->given[p->w.given++];
        tell(p, LAB_PLAY_LINE, "%s", line);
        p->line = line;
        p->lineno = p->w.q->lineno;
        submit(p, line, given_done);
        return;
    }
    char ref[80], line[200];
    lab_scenario_ref_name(w, ref, sizeof(ref));
    snprintf(line, sizeof(line), "%s = %s.clone(); print %s", ref, w->name, ref);
    quietly(p, line, saved);
}

/* Fresh ranks: seeded, then the `given` lines. */
static void respawned(void *arg, bool ok)
{
    player_t *p = arg;
    if (chain_held(p, respawned))
        return;
    loud(p);
    if (!ok) {
        write_broken(p, "the ranks could not be started again");
        return;
    }
    quietly(p, p->w.seeds, given_done);
}

/* Every run starts on fresh ranks: a message the last one sent and no
 * one received, a rank it left stuck or dead, cannot reach this one. */
static void code_reset(player_t *p)
{
    p->w.given = 0;
    quietly(p, "respawn", respawned);
}

static bool same_tensor(const lab_snap_t *a, const lab_snap_t *b)
{
    if (a == NULL || b == NULL || a->ndim != b->ndim ||
        memcmp(a->shape, b->shape, sizeof(a->shape[0]) * (size_t)a->ndim) != 0)
        return false;
    /* Both came whole (quietly sets lab_shell_whole). */
    if (!lab_snap_is_whole(a) || !lab_snap_is_whole(b))
        return false;
    size_t numel = lab_snap_numel(a);
    for (size_t i = 0; i < numel; i++)
        if (!lab_scenario_close(dl_dtype_get(a->t->dtype, a->t->data, i),
                                dl_dtype_get(b->t->dtype, b->t->data, i)))
            return false;
    return true;
}

static void compared(void *arg, bool ok)
{
    player_t *p = arg;
    if (chain_held(p, compared))
        return;
    loud(p);
    const lab_scn_write_t *w = question(p);
    lab_play_code_t *c = p->w.c;
    const lab_model_t *m = lab_shell_model(p->sh);
    c->matched = true;
    c->within = true;
    for (int r = 0; r < c->np; r++) {
        c->rank_matched[r] =
            ok && r < m->np && is_fresh(p, r) && same_tensor(shown(m, r, w->name), wanted(p, r));
        c->matched = c->matched && c->rank_matched[r];
        if ((p->w.max_msgs >= 0 && (double)c->messages[r] > p->w.max_msgs + 1e-9) ||
            (p->w.max_bytes >= 0 && (double)c->bytes[r] > p->w.max_bytes + 1e-9))
            c->within = false;
    }
    code_verdict(p);
}

static void code_ran(void *arg, bool ok)
{
    player_t *p = arg;
    if (chain_held(p, code_ran))
        return;
    const lab_scn_write_t *w = question(p);
    lab_play_code_t *c = p->w.c;
    p->w.recording = false;
    sent_so_far(p, c->messages, c->bytes, c->np);
    for (int r = 0; r < c->np; r++) {
        c->messages[r] -= p->w.msgs0[r];
        c->bytes[r] -= p->w.bytes0[r];
    }
    if (!ok) {
        if (c->error[0] == '\0')
            snprintf(c->error, sizeof(c->error), "it stopped with an error");
        code_verdict(p);
        return;
    }
    c->ran = true;
    char line[MAX_WHAT];
    snprintf(line, sizeof(line), "print %s", w->name);
    watch_fresh(p, w->name, strlen(w->name));
    quietly(p, line, compared);
}

static void code_run(player_t *p, const char *code)
{
    lab_play_code_t *c = p->w.c;
    int np = lab_shell_world_size(p->sh);
    free(c->code);
    free(c->messages);
    free(c->bytes);
    free(c->rank_matched);
    c->code = strdup(code);
    c->np = np;
    c->messages = calloc((size_t)np + 1, sizeof(*c->messages));
    c->bytes = calloc((size_t)np + 1, sizeof(*c->bytes));
    c->rank_matched = calloc((size_t)np + 1, sizeof(*c->rank_matched));
    free(p->w.msgs0);
    free(p->w.bytes0);
    p->w.msgs0 = calloc((size_t)np + 1, sizeof(*p->w.msgs0));
    p->w.bytes0 = calloc((size_t)np + 1, sizeof(*p->w.bytes0));
    if (c->code == NULL || c->messages == NULL || c->bytes == NULL || c->rank_matched == NULL ||
        p->w.msgs0 == NULL || p->w.bytes0 == NULL) {
        write_broken(p, "out of memory");
        return;
    }
    char why[300];
    if (!lab_scenario_code_ok(question(p), code, why, sizeof(why))) {
        c->refused = true;
        snprintf(c->error, sizeof(c->error), "%s", why);
        code_verdict(p);
        return;
    }
    sent_so_far(p, p->w.msgs0, p->w.bytes0, np);
    p->w.recording = true;
    p->line = c->code;
    p->lineno = p->w.q->lineno;
    submit(p, c->code, code_ran);
}

/* What a run did, told; then the question goes on (another try, the
 * solution) or ends. */
static void code_verdict(player_t *p)
{
    const lab_scn_item_t *q = p->w.q;
    const lab_scn_write_t *w = q->write;
    const lab_model_t *m = lab_shell_model(p->sh);
    lab_play_code_t *c = p->w.c;
    bool right = c->ran && c->matched && c->within;
    const char *who = p->w.solution ? "the solution" : "your code";
    if (c->refused)
        tell(p, LAB_PLAY_TEXT, "  %s was not run: %s", who, c->error);
    for (int r = 0; !c->refused && r < c->np; r++)
        tell(p, LAB_PLAY_TEXT, "  rank %d sent %lld message%s, %lld B", r, c->messages[r],
             c->messages[r] == 1 ? "" : "s", c->bytes[r]);
    if (!c->refused && !c->ran)
        tell(p, LAB_PLAY_TEXT, "  %s failed: %s", who, c->error);
    int wrong = 0;
    for (int r = 0; c->ran && r < c->np; r++) {
        if (c->rank_matched[r] || wrong++ >= 4)
            continue;
        const lab_snap_t *got = r < m->np && is_fresh(p, r) ? shown(m, r, w->name) : NULL;
        const lab_snap_t *want = wanted(p, r);
        char *g = got != NULL ? lab_snap_text(got) : NULL;
        char *x = want != NULL ? lab_snap_text(want) : NULL;
        if (g == NULL) /* rebound to a number, or deleted */
            tell(p, LAB_PLAY_TEXT, "  rank %d: %s holds no tensor, but %s(%s%s) gives %s", r,
                 w->name, w->coll, w->name, w->coll_more, x != NULL ? x : "?");
        else
            tell(p, LAB_PLAY_TEXT, "  rank %d: %s = %s, but %s(%s%s) gives %s", r, w->name, g,
                 w->coll, w->name, w->coll_more, x != NULL ? x : "?");
        free(g);
        free(x);
    }
    if (wrong > 4)
        tell(p, LAB_PLAY_TEXT, "  ... and %d more ranks", wrong - 4);
    for (int r = 0; c->ran && r < c->np; r++) {
        if (p->w.max_msgs >= 0 && (double)c->messages[r] > p->w.max_msgs + 1e-9)
            tell(p, LAB_PLAY_TEXT, "  rank %d sent %lld messages, more than the %.15g allowed", r,
                 c->messages[r], p->w.max_msgs);
        if (p->w.max_bytes >= 0 && (double)c->bytes[r] > p->w.max_bytes + 1e-9)
            tell(p, LAB_PLAY_TEXT, "  rank %d sent %lld B, more than the %.15g B allowed", r,
                 c->bytes[r], p->w.max_bytes);
    }
    if (p->w.solution) {
        if (right) {
            tell(p, LAB_PLAY_OK, "check %s on every rank, within the limits", w->check);
            p->checks++;
        } else {
            fail(p, w->solution_lineno, "the solution does not pass `check %s`%s%s", w->check,
                 c->error[0] ? ": " : "", c->error);
        }
        if (q->explain != NULL)
            tell(p, LAB_PLAY_TEXT, "  %s", q->explain);
        write_end(p);
        return;
    }
    lab_play_answer_t *a = &p->res.answers[p->res.n - 1];
    a->tries++;
    if (right) {
        a->points = a->tries == 1 ? 1.0 : 0.5;
        p->res.score += a->points;
        fprintf(p->o->out, "  right%s: every rank's %s is %s(%s%s)'s, within the limits\n",
                a->tries == 1 ? "" : " (second try)", w->name, w->coll, w->name, w->coll_more);
        if (q->explain != NULL)
            fprintf(p->o->out, "  %s\n", q->explain);
        fflush(p->o->out);
        write_end(p);
        return;
    }
    /* As at an `ask`: the hint goes with the first wrong try only. */
    bool hint = q->hint != NULL && a->tries == 1;
    fprintf(p->o->out, "  not quite%s%s\n", hint ? ": " : "", hint ? q->hint : "");
    fflush(p->o->out);
    if (a->tries < 2 && p->o->answers == NULL && p->in_open) {
        code_reset(p);
        return;
    }
    solution_run(p);
}

/* `manual_seed([s0, s1, ...][rank])`, a seed drawn at random for each of
 * np ranks; NULL when out of memory. */
static char *seed_line(int np)
{
    size_t cap = 32 + (size_t)np * 12;
    char *line = malloc(cap);
    if (line == NULL)
        return NULL;
    size_t n = (size_t)snprintf(line, cap, "manual_seed([");
    for (int r = 0; r < np; r++)
        n += (size_t)snprintf(line + n, cap - n, "%s%u", r > 0 ? ", " : "",
                              arc4random_uniform(1u << 31));
    snprintf(line + n, cap - n, "][rank])");
    return line;
}

/* Asks a `write` question: the chain above answers it. */
static void write_question(player_t *p, const lab_scn_item_t *q)
{
    tell(p, LAB_PLAY_TEXT, "? %s", q->text);
    memset(&p->w, 0, sizeof(p->w));
    p->w.q = q;
    p->w.solution = !p->o->exercise;
    p->w.c = &p->w.scratch;
    if (p->o->exercise) {
        lab_play_answer_t *grown = realloc(p->res.answers, sizeof(*grown) * (p->res.n + 1));
        if (grown == NULL) {
            write_broken(p, "out of memory");
            return;
        }
        p->res.answers = grown;
        lab_play_answer_t *a = &p->res.answers[p->res.n++];
        memset(a, 0, sizeof(*a));
        a->lineno = q->lineno;
        a->code = true;
        p->w.c = &a->code_tries[0];
    }
    if ((p->w.seeds = seed_line(lab_shell_world_size(p->sh))) == NULL) {
        write_broken(p, "out of memory");
        return;
    }
    code_reset(p);
}

/* ---- lines ---- */

/* The line running failed: the scenario stops (what follows depends on it). */
static void line_failed(player_t *p)
{
    /* A block is named by its first line: the FAIL stays one line. */
    int first = (int)strcspn(p->line, "\n");
    if (lab_shell_start_failed(p->sh)) /* the line is not to blame */
        fail(p, p->lineno, "the ranks could not start (said above); the scenario stops here");
    else
        fail(p, p->lineno, "`%.*s%s` failed; the scenario stops here", first, p->line,
             p->line[first] != '\0' ? " ..." : "");
    p->stopped = true;
}

static void line_done(void *arg, bool ok)
{
    player_t *p = arg;
    if (!ok && !lab_shell_stepping(p->sh) && !p->left)
        line_failed(p);
    run_next(p);
}

/* Enter (or `next`) runs the paused collective's next step, `continue`
 * (or `c`) the rest of it. Either way the scenario goes on from line_done
 * once the step has run: it steps again while the collective is paused. */
static void step_typed(player_t *p, const char *line)
{
    if (quit_typed(line)) {
        leave_at_pause(p);
        return;
    }
    const char *w = line + strspn(line, " \t");
    bool rest =
        strncmp(w, "continue", 8) == 0 || (w[0] == 'c' && strspn(w + 1, " \t") == strlen(w + 1));
    lab_shell_submit(p->sh, rest ? "continue" : "next", line_done, p);
}

/* A collective waits in step mode: the next step, when the reader says. */
static void step_on(player_t *p)
{
    if (p->o->view != NULL) { /* the view's own keys step it */
        p->steps_wait = true;
        p->step_failed = false;
        view_wait(p, LAB_PLAY_WAIT_STEPS, "");
        return;
    }
    if (wait_for_enter(p, "", step_typed, "(Enter runs the next step, c the rest)"))
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
    if (p->in_handle)
        uv_close((uv_handle_t *)&p->in, NULL);
    p->in_handle = p->in_open = false;
}

static void run_next(player_t *p)
{
    if (p->sh == NULL || p->reading || p->waiting || p->expecting != NULL || p->asking != NULL ||
        p->w.q != NULL)
        return;
    if (lab_shell_stepping(p->sh) && !p->stopped) {
        step_on(p);
        return;
    }
    while (!p->stopped && !lab_shell_quitting(p->sh) && p->next < p->s->n_items) {
        const lab_scn_item_t *it = &p->s->items[p->next++];
        /* Where the scenario is: a person who leaves at a pause or a
         * question left there ("left at line N"), not at the last line run. */
        p->lineno = it->lineno;
        switch (it->kind) {
        case LAB_SCN_SAY:
            tell(p, LAB_PLAY_SAY, "%s", it->text);
            break;
        case LAB_SCN_PAUSE:
            if (it->text[0] != '\0' && !p->o->interactive && p->o->view == NULL)
                tell(p, LAB_PLAY_TEXT, "%s", it->text);
            if (wait_for_enter(p, it->text, go_on, "(Enter to go on)"))
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
        case LAB_SCN_WRITE:
            write_question(p, it);
            return;
        case LAB_SCN_LINE:
            tell(p, LAB_PLAY_LINE, "%s", it->text);
            p->line = it->text;
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
    /* The stepped collective ended: failed (Ctrl-C, a rank lost), it
     * stops the scenario as any line that fails. */
    bool failed = p->steps_wait && p->step_failed && !p->left;
    p->steps_wait = p->step_failed = false;
    if (failed)
        line_failed(p);
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
    for (size_t i = 0; i < res->n; i++)
        for (int t = 0; t < 2; t++)
            code_free(&res->answers[i].code_tries[t]);
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
        p.in_open = p.in_handle = true;
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
    if (lab_model_subscribe(lab_shell_model(p.sh), on_change, &p) != DL_OK) {
        lab_shell_close(p.sh);
        uv_run(&p.loop, UV_RUN_DEFAULT);
        goto out;
    }
    if (o->view != NULL && !o->view->open(o->view->arg, &p, &p.loop, p.sh)) {
        lab_shell_close(p.sh);
        uv_run(&p.loop, UV_RUN_DEFAULT);
        goto out;
    }
    const char *ranks = so.launch.np == 1 ? "rank" : "ranks";
    if (o->view != NULL)
        tell(&p, LAB_PLAY_TITLE, "%s (%d %s)", s->title, so.launch.np, ranks);
    else
        fprintf(o->out, "%s%s%s (%d %s)\n", o->color ? "\033[1m" : "", s->title,
                o->color ? "\033[0m" : "", so.launch.np, ranks);
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
    if (p.failures > 0 && !p.ended && p.stopped && !p.left) {
        /* By a line that failed, one of the failures: it is no check. */
        int checks = p.failures - 1;
        fprintf(o->err, "%s: stopped at line %d", s->name, p.lineno);
        if (checks > 0)
            fprintf(o->err, "; %d check%s failed before it", checks, checks == 1 ? "" : "s");
        fprintf(o->err, "\n");
    } else if (p.failures > 0 && !p.ended) /* else the end said it */
        fprintf(o->err, "%s: %d check%s failed\n", s->name, p.failures, p.failures == 1 ? "" : "s");
    if (o->exercise) {
        fprintf(o->out, "score: %g/%zu\n", p.res.score, s->n_questions);
        fflush(o->out);
    }
out:
    if (p.in_handle)
        uv_close((uv_handle_t *)&p.in, NULL);
    uv_run(&p.loop, UV_RUN_DEFAULT);
    uv_loop_close(&p.loop);
    fclose(p.devnull);
    free(p.fresh);
    if (res != NULL)
        *res = p.res;
    else
        lab_play_result_free(&p.res);
    return rc;
}
