/* distlab scenario list | show NAME | run NAME [--step] [--tui] [--np N]
 * [--backend B] [--timeout S]: the scenario library (lab/scenario/), played
 * as text or in the terminal view (tui/); and
 * distlab exercise list | start NAME [--answers FILE] [--report json] |
 * grade NAME DIR [--csv FILE]: its scenarios that ask questions. */
#include <dirent.h>
#include <jansson.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "cli/cli.h"
#include "lab/elastic/demo.h"
#include "lab/lang/lang.h"
#include "lab/scenario/play.h"
#include "lab/scenario/scenario.h"
#include "tui/tui.h"

static const char usage[] =
    "usage: distlab scenario list\n"
    "       distlab scenario show NAME\n"
    "       distlab scenario run NAME [--step] [--tui] [--np N] [--backend B] [--timeout S]\n"
    "       distlab exercise list\n"
    "       distlab exercise start NAME [--answers FILE] [--report json] [--np N]\n"
    "       distlab exercise grade NAME DIR [--csv FILE]\n\n"
    "NAME is a scenario of the library (`distlab scenario list`), or a scenario file's path:\n"
    "one with a '/' or ending in .scenario (./reduce, not reduce, for a file named reduce).\n"
    "run prints the narration, runs every line on live ranks and checks every `expect`;\n"
    "it exits 1 when one fails, naming it. --step shows each collective step by step;\n"
    "on a terminal, pauses and steps wait for Enter. --tui plays it in the terminal view:\n"
    "the narration and checks under the ranks' panels, space goes on from a pause, the\n"
    "step keys step a collective, q leaves at the end.\n"
    "An exercise stops at each question; a wrong answer gets the hint and a second try,\n"
    "then the answer. A `write` question takes code: lines ending with an empty line,\n"
    "or :load FILE; distlab runs it on every rank, compares the result with the built-in\n"
    "collective and counts the messages and bytes each rank sent. --answers takes one\n"
    "line per `ask` and, per `write`, a line of code, `@FILE`, or lines between `code:`\n"
    "and `end`; grade runs every file of DIR as one learner's answers and prints a line\n"
    "per learner (--csv writes a table).\n";

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the scenarios in the library folders, each once (the
 * installed library first), unsorted; *n_p of them. */
static char **library_names(size_t *n_p)
{
    size_t ndirs, n = 0;
    const char *const *dirs = lab_scenario_dirs(&ndirs);
    char **names = NULL;
    for (size_t d = 0; d < ndirs; d++) {
        DIR *dir = opendir(dirs[d]);
        struct dirent *e;
        while (dir != NULL && (e = readdir(dir)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len <= 9 || strcmp(e->d_name + len - 9, ".scenario") != 0)
                continue;
            char *name = strndup(e->d_name, len - 9);
            bool seen = false; /* the installed library comes first */
            for (size_t i = 0; i < n && name != NULL; i++)
                seen = seen || strcmp(names[i], name) == 0;
            char **grown = seen || name == NULL ? NULL : realloc(names, sizeof(*names) * (n + 1));
            if (grown == NULL) {
                free(name);
                continue;
            }
            names = grown;
            names[n++] = name;
        }
        if (dir != NULL)
            closedir(dir);
    }
    *n_p = n;
    return names;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static int list(bool exercises)
{
    size_t ndirs, n = 0;
    const char *const *dirs = lab_scenario_dirs(&ndirs);
    char **names = library_names(&n);
    if (n == 0) {
        free(names);
        return cli_error("no scenarios found (looked in %s%s%s)", dirs[0], ndirs > 1 ? " and " : "",
                         ndirs > 1 ? dirs[1] : "");
    }
    qsort(names, n, sizeof(*names), by_name);
    if (exercises)
        printf("%-24s %5s %9s  %s\n", "exercise", "ranks", "questions", "summary");
    else
        printf("%-24s %5s  %s\n", "scenario", "ranks", "summary");
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096], err[1024];
        lab_scenario_t s;
        if (!lab_scenario_find(names[i], path, sizeof(path)) ||
            lab_scenario_load(path, &s, err, sizeof(err)) != DL_OK) {
            fprintf(stderr, "distlab: %s\n", err);
            rc = 1;
        } else {
            const char *summary = s.summary != NULL ? s.summary : s.title;
            if (!exercises)
                printf("%-24s %5d  %s\n", s.name, s.ranks, summary);
            else if (s.n_questions > 0)
                printf("%-24s %5d %9zu  %s\n", s.name, s.ranks, s.n_questions, summary);
            lab_scenario_free(&s);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* The scenario name names, not found: said in one line, with the nearest
 * name, or where the names are listed (an exercise's or any scenario's). */
static int not_found(const char *name, bool exercise)
{
    struct stat sb;
    /* A path names a file, not the library: say what is wrong with it. */
    size_t len = strlen(name);
    if (strchr(name, '/') != NULL || (len > 9 && strcmp(name + len - 9, ".scenario") == 0)) {
        if (stat(name, &sb) != 0)
            return cli_error("cannot read %s: %s", name, strerror(errno));
        return cli_error("%s is %s, not a scenario file", name,
                         S_ISDIR(sb.st_mode) ? "a folder" : "not a regular file");
    }
    if (stat(name, &sb) == 0 && S_ISREG(sb.st_mode))
        return cli_error("no scenario named '%s' in the library; for the file here, give its "
                         "path: ./%s",
                         name, name);
    size_t n = 0;
    char **names = library_names(&n);
    const char *near = lab_suggest(name, (const char *const *)names, n);
    const char *what = exercise ? "exercise" : "scenario";
    int rc = near != NULL ? cli_error("no %s named '%s'; did you mean '%s'?", what, name, near)
                          : cli_error("no %s named '%s' (distlab %s list shows them; a path to "
                                      "a file works too)",
                                      what, name, what);
    free_names(names, n);
    return rc;
}

static int load(const char *name, bool exercise, lab_scenario_t *s)
{
    char path[4096], err[1024];
    if (!lab_scenario_find(name, path, sizeof(path)))
        return not_found(name, exercise);
    if (lab_scenario_load(path, s, err, sizeof(err)) != DL_OK) {
        fprintf(stderr, "distlab: %s\n", err);
        return 1;
    }
    return 0;
}

static int show(const char *name)
{
    lab_scenario_t s;
    int rc = load(name, false, &s);
    if (rc != 0)
        return rc;
    FILE *fp = fopen(s.path, "r");
    char buf[4096];
    size_t n;
    while (fp != NULL && (n = fread(buf, 1, sizeof(buf), fp)) > 0)
        fwrite(buf, 1, n, stdout);
    if (fp != NULL)
        fclose(fp);
    lab_scenario_free(&s);
    return 0;
}

/* A `write` question's try in the report: the code, whether it ran or
 * why not, and what each rank sent and whether its result matched. */
static json_t *code_try_json(const lab_play_code_t *c)
{
    json_t *ranks = json_array();
    for (int r = 0; !c->refused && r < c->np; r++)
        json_array_append_new(ranks, json_pack("{s:i, s:I, s:I, s:b}", "rank", r, "messages",
                                               (json_int_t)c->messages[r], "bytes",
                                               (json_int_t)c->bytes[r], "matched",
                                               c->ran && c->rank_matched[r]));
    return json_pack("{s:s, s:b, s:b, s:b, s:b, s:o, s:o}", "code", c->code != NULL ? c->code : "",
                     "ran", c->ran, "refused", c->refused, "matched", c->ran && c->matched,
                     "within_limits", c->ran && c->within, "error",
                     c->error[0] != '\0' ? json_string(c->error) : json_null(), "ranks", ranks);
}

/* The JSON report of an exercise: every question, what was given, and
 * the score. */
static json_t *report_json(const lab_scenario_t *s, const lab_play_result_t *res, int rc)
{
    json_t *qs = json_array();
    size_t k = 0;
    for (size_t i = 0; i < s->n_items; i++) {
        const lab_scn_item_t *q = &s->items[i];
        if (q->kind != LAB_SCN_ASK && q->kind != LAB_SCN_WRITE)
            continue;
        const lab_play_answer_t *a = k < res->n ? &res->answers[k] : NULL;
        json_t *given = json_array();
        for (int t = 0; a != NULL && t < a->tries && t < 2; t++) {
            const char *text = a->code ? a->code_tries[t].code : a->given[t];
            json_array_append_new(given, json_string(text != NULL ? text : ""));
        }
        bool write = q->kind == LAB_SCN_WRITE;
        json_t *one =
            json_pack("{s:s, s:i, s:s, s:s, s:o, s:b, s:f}", "kind", write ? "write" : "ask",
                      "line", q->lineno, "question", q->text, "answer",
                      write ? q->write->solution : q->answer, "given", given, "correct",
                      a != NULL && a->points > 0, "points", a != NULL ? a->points : 0.0);
        if (write) {
            json_t *tries = json_array();
            for (int t = 0; a != NULL && t < a->tries && t < 2; t++)
                json_array_append_new(tries, code_try_json(&a->code_tries[t]));
            json_object_set_new(one, "check", json_string(q->write->check));
            json_object_set_new(one, "tries", tries);
        }
        json_array_append_new(qs, one);
        k++;
    }
    return json_pack("{s:s, s:o, s:f, s:I, s:b}", "exercise", s->name, "questions", qs, "score",
                     res->score, "max", (json_int_t)s->n_questions, "checks_passed", rc == 0);
}

typedef struct {
    lab_play_opts_t o;
    char backend[32];
    const char *answers, *report, *csv;
    bool tui;
} run_flags_t;

/* The three commands that play a scenario, each with flags of its own. */
typedef enum { VERB_RUN, VERB_START, VERB_GRADE } verb_t;

enum {
    OPT_STEP = 1000,
    OPT_TUI,
    OPT_NP,
    OPT_BACKEND,
    OPT_TIMEOUT,
    OPT_ANSWERS,
    OPT_REPORT,
    OPT_CSV
};

static const struct option longopts[] = {
    {"step", no_argument, NULL, OPT_STEP},
    {"tui", no_argument, NULL, OPT_TUI},
    {"np", required_argument, NULL, OPT_NP},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"answers", required_argument, NULL, OPT_ANSWERS},
    {"report", required_argument, NULL, OPT_REPORT},
    {"csv", required_argument, NULL, OPT_CSV},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The command a flag belongs to when verb does not take it, else NULL: a
 * flag given to the wrong command is refused, not ignored. */
static const char *flag_home(int opt, verb_t verb)
{
    switch (opt) {
    case OPT_TUI:
        return verb == VERB_RUN ? NULL : "`distlab scenario run`";
    case OPT_STEP:
        return verb != VERB_GRADE ? NULL : "`distlab scenario run` and `distlab exercise start`";
    case OPT_ANSWERS:
    case OPT_REPORT:
        return verb == VERB_START ? NULL : "`distlab exercise start`";
    case OPT_CSV:
        return verb == VERB_GRADE ? NULL : "`distlab exercise grade`";
    default:
        return NULL;
    }
}

/* getopt reads a word with one dash and several letters, such as mpirun's
 * -np, as the short flags -n -p, and would name some other word; such a
 * word is named whole here, with the long flag it likely meant. Returns
 * -1 when there is none, else the exit code. */
static int single_dash_word(int argc, char **argv, const char *cmd)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) == 0) {
            /* A long flag's value is the next word, whatever it looks like. */
            const struct option *o = cli_long_flag(longopts, a + 2, strcspn(a + 2, "="));
            if (o != NULL && o->has_arg == required_argument && strchr(a, '=') == NULL)
                i++;
            continue;
        }
        if (a[0] != '-' || strlen(a) <= 2)
            continue;
        const struct option *o = cli_long_flag(longopts, a + 1, strcspn(a + 1, "="));
        if (o != NULL)
            return cli_error("unknown flag '%s' (did you mean --%s?)", a, o->name);
        return cli_error("unknown flag '%s' (see distlab %s --help)", a, cmd);
    }
    return -1;
}

/* The flags of `scenario run`, `exercise start` and `exercise grade`;
 * *name_p gets the first argument, *dir_p (grade) the second. Returns -1
 * when parsed, else the exit code. */
static int parse_flags(int argc, char **argv, verb_t verb, run_flags_t *f, const char **name_p,
                       const char **dir_p)
{
    bool exercise = verb != VERB_RUN;
    const char *cmd = exercise ? "exercise" : "scenario";
    memset(f, 0, sizeof(*f));
    f->o.out = stdout;
    f->o.err = stderr;
    f->o.launch.timeout_s = 30;
    f->o.exercise = exercise;
    long np = 0;
    int rc = single_dash_word(argc, argv, cmd);
    if (rc >= 0)
        return rc;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const char *home = flag_home(opt, verb);
        if (home != NULL) {
            const struct option *o = longopts;
            while (o->val != opt)
                o++;
            return cli_error("--%s is for %s", o->name, home);
        }
        switch (opt) {
        case OPT_STEP:
            f->o.step = true;
            break;
        case OPT_TUI:
            f->tui = true;
            break;
        case OPT_NP:
            if (!cli_parse_int("--np", optarg, 1, LAB_MAX_NP, &np))
                return CLI_USAGE_ERROR;
            break;
        case OPT_BACKEND:
            if (!cli_parse_backend(optarg, f->backend, sizeof(f->backend)))
                return CLI_USAGE_ERROR;
            break;
        case OPT_TIMEOUT:
            if (!cli_parse_timeout("--timeout", optarg, &f->o.launch.timeout_s))
                return CLI_USAGE_ERROR;
            break;
        case OPT_ANSWERS:
        case OPT_REPORT:
        case OPT_CSV:
            *(opt == OPT_ANSWERS ? &f->answers : opt == OPT_REPORT ? &f->report : &f->csv) = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            if (optopt > 0 && optopt < 256)
                return cli_error("unknown or incomplete flag '-%c' (see distlab %s --help)", optopt,
                                 cmd);
            return cli_error("unknown or incomplete flag '%s' (see distlab %s --help)",
                             argv[optind - 1], cmd);
        }
    }
    if (f->report != NULL && strcmp(f->report, "json") != 0)
        return cli_error("--report takes json, not '%s'", f->report);
    if (optind >= argc)
        return cli_error("a NAME is needed (distlab %s list shows them)", cmd);
    *name_p = argv[optind++];
    if (dir_p != NULL) {
        if (optind >= argc)
            return cli_error("usage: distlab exercise grade NAME DIR [--csv FILE]");
        *dir_p = argv[optind++];
    }
    if (optind < argc)
        return cli_error("unexpected argument '%s'", argv[optind]);
    f->o.launch.np = (int)np;
    return -1;
}

/* --np must be a size the scenario is written for: its numbers and
 * questions hold at those sizes only. */
static int check_size(const run_flags_t *f, const lab_scenario_t *s, const char *name)
{
    if (f->o.launch.np == 0 || lab_scenario_size_ok(s, f->o.launch.np))
        return 0;
    return cli_error("%s is written for %s ranks (its `sizes:`), not %d: its checks and answers "
                     "hold at those sizes only",
                     name, s->sizes, f->o.launch.np);
}

/* The backend: the flag's, else the scenario's. */
static bool pick_backend(run_flags_t *f, const lab_scenario_t *s)
{
    if (f->backend[0] == '\0' && s->backend != NULL &&
        !cli_parse_backend(s->backend, f->backend, sizeof(f->backend)))
        return false;
    f->o.launch.backend =
        f->backend[0] != '\0' && strcmp(f->backend, "builtin") != 0 ? f->backend : NULL;
    /* A lesson that chooses the builtin backend's algorithms cannot run
     * on another: said now, not halfway through it. */
    for (size_t i = 0; f->o.launch.backend != NULL && i < s->n_items; i++) {
        const lab_scn_item_t *it = &s->items[i];
        const char *t = it->kind == LAB_SCN_LINE ? it->text + strspn(it->text, " \t") : "";
        if (strncmp(t, "set", 3) == 0 && strncmp(t + 3 + strspn(t + 3, " \t"), "algo", 4) == 0) {
            cli_error("%s chooses the builtin backend's algorithms (line %d: `%s`): it runs on "
                      "the builtin backend only, not on %s",
                      s->name, it->lineno, it->text, f->backend);
            return false;
        }
    }
    return true;
}

/* ---- in the terminal view ---- */

/* The player's view hooks (lab_play_view_t), on the terminal view. */
typedef struct {
    tui_t *tui;
    lab_play_t *play;
    lab_shell_t *sh;
    uv_signal_t sigint; /* Ctrl-C: the ranks' line is interrupted */
    bool sigint_on;
    bool ended; /* the end is shown: leaving goes on to close */
} view_t;

/* The person pressed q (or a line quit the shell). */
static void view_left(void *arg, bool quit)
{
    view_t *v = arg;
    (void)quit;
    if (v->ended)
        lab_play_go(v->play);
    else
        lab_play_stop(v->play);
}

/* Ctrl-C in the view interrupts what the ranks run, as in the shell's
 * (the line fails, and the scenario stops there); it used to end distlab
 * at once, the ranks' errors on a terminal curses still held. */
static void view_sigint(uv_signal_t *h, int sig)
{
    (void)sig;
    view_t *v = h->data;
    if (v->tui != NULL)
        lab_shell_interrupt(v->sh);
}

static bool view_open(void *arg, lab_play_t *p, uv_loop_t *loop, lab_shell_t *sh)
{
    view_t *v = arg;
    v->play = p;
    v->sh = sh;
    if (tui_open(loop, sh, view_left, v, &v->tui) != DL_OK) {
        fprintf(stderr, "distlab: the terminal view cannot use this terminal\n");
        return false;
    }
    if (uv_signal_init(loop, &v->sigint) == 0) {
        v->sigint.data = v;
        v->sigint_on = uv_signal_start(&v->sigint, view_sigint, SIGINT) == 0;
        if (!v->sigint_on)
            uv_close((uv_handle_t *)&v->sigint, NULL);
    }
    return true;
}

static void view_note(void *arg, lab_play_note_t kind, const char *text)
{
    view_t *v = arg;
    static const tui_note_t as[] = {
        [LAB_PLAY_TITLE] = TUI_NOTE_TITLE, [LAB_PLAY_SAY] = TUI_NOTE_BOLD,
        [LAB_PLAY_TEXT] = TUI_NOTE_PLAIN,  [LAB_PLAY_LINE] = TUI_NOTE_DIM,
        [LAB_PLAY_OK] = TUI_NOTE_GOOD,     [LAB_PLAY_FAIL] = TUI_NOTE_BAD,
        [LAB_PLAY_END] = TUI_NOTE_BOLD,
    };
    char line[1100];
    if (kind == LAB_PLAY_TITLE)
        snprintf(line, sizeof(line), "scenario: %s", text);
    else
        snprintf(line, sizeof(line), "%s%s", lab_play_prefix(kind), text);
    if (v->tui != NULL)
        tui_note(v->tui, as[kind], line);
}

static void view_submit(void *arg, const char *line, lab_shell_done_t done, void *done_arg)
{
    view_t *v = arg;
    if (v->tui != NULL)
        tui_run(v->tui, line, done, done_arg);
    else
        done(done_arg, false);
}

static void view_go(void *arg)
{
    view_t *v = arg;
    lab_play_go(v->play);
}

static void view_wait(void *arg, lab_play_wait_t what, const char *text)
{
    view_t *v = arg;
    if (what == LAB_PLAY_WAIT_END)
        v->ended = true;
    if (v->tui == NULL)
        return;
    switch (what) {
    case LAB_PLAY_WAIT_PAUSE:
        tui_wait(v->tui, TUI_WAIT_KEY, text, view_go, v);
        break;
    case LAB_PLAY_WAIT_STEPS:
        tui_wait(v->tui, TUI_WAIT_STEPS, text, view_go, v);
        break;
    case LAB_PLAY_WAIT_END:
        tui_wait(v->tui, TUI_WAIT_LEAVE, text, NULL, NULL);
        break;
    }
}

static void view_close(void *arg)
{
    view_t *v = arg;
    tui_close(v->tui, stdout, stderr, isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL);
    v->tui = NULL;
    if (v->sigint_on)
        uv_close((uv_handle_t *)&v->sigint, NULL);
    v->sigint_on = false;
}

/* A `demo:` scenario: its title and narration, then the demo itself. */
static int play_demo(lab_scenario_t *s)
{
    printf("%s\n", s->title);
    for (size_t i = 0; i < s->n_items; i++)
        printf("%s\n", s->items[i].text);
    fflush(stdout);
    lab_demo_opts_t o;
    lab_demo_defaults(&o);
    lab_scenario_free(s);
    return cli_demo_elastic(&o);
}

/* An exercise's scenario: one with questions. */
static int load_exercise(const char *name, lab_scenario_t *s)
{
    int rc = load(name, true, s);
    if (rc == 0 && s->n_questions == 0) {
        lab_scenario_free(s);
        return cli_error("%s asks no questions: `distlab scenario run %s` runs it", name, name);
    }
    return rc;
}

/* Opens an answers file. A folder opens but reads as nothing, every
 * question then scoring 0: it is refused (errno EISDIR). */
static FILE *open_answers(const char *path)
{
    FILE *fp = fopen(path, "r");
    struct stat sb;
    if (fp != NULL && fstat(fileno(fp), &sb) != 0)
        sb.st_mode = 0; /* nothing known: read as it comes */
    if (fp != NULL && S_ISDIR(sb.st_mode)) {
        fclose(fp);
        errno = EISDIR;
        return NULL;
    }
    /* A file saved with a UTF-8 byte order mark (Notepad's way): the mark
     * is no part of the first answer. */
    unsigned char bom[3];
    if (fp != NULL && S_ISREG(sb.st_mode) &&
        (fread(bom, 1, 3, fp) != 3 || memcmp(bom, "\xef\xbb\xbf", 3) != 0))
        rewind(fp);
    return fp;
}

/* Where an exercise's answers come from: --answers, else the terminal on
 * standard input. Returns -1, or the exit code of a refusal. */
static int answers_source(run_flags_t *f)
{
    if (f->report != NULL && f->answers == NULL)
        return cli_error("--report json needs --answers FILE: the report takes the questions' "
                         "place on standard output");
    if (f->answers == NULL && !isatty(STDIN_FILENO))
        return cli_error("an exercise asks on a terminal; without one, give --answers FILE");
    if (f->answers != NULL && (f->o.answers = open_answers(f->answers)) == NULL)
        return cli_error("cannot read %s: %s", f->answers, strerror(errno));
    f->o.answers_path = f->answers;
    return -1;
}

static int run(int argc, char **argv, verb_t verb)
{
    run_flags_t f;
    const char *name = NULL;
    bool exercise = verb == VERB_START;
    int rc = parse_flags(argc, argv, verb, &f, &name, NULL);
    if (rc >= 0)
        return rc;
    lab_scenario_t s;
    if ((rc = exercise ? load_exercise(name, &s) : load(name, false, &s)) != 0)
        return rc;
    if (s.demo != NULL) {
        /* The demo takes its own flags (distlab demo elastic --help). */
        const char *given = f.o.launch.np != 0 ? "--np"
                            : f.o.step         ? "--step"
                            : f.tui            ? "--tui"
                            : f.backend[0]     ? "--backend"
                                               : NULL;
        if (given != NULL) {
            rc = cli_error("%s plays `distlab demo %s`, which %s does not apply to (the demo's "
                           "own flags: distlab demo %s --help)",
                           name, s.demo, given, s.demo);
            lab_scenario_free(&s);
            return rc;
        }
        return play_demo(&s);
    }
    if ((rc = check_size(&f, &s, name)) != 0 || !pick_backend(&f, &s)) {
        lab_scenario_free(&s);
        return rc != 0 ? rc : CLI_USAGE_ERROR;
    }
    /* An exercise asks whoever is at the terminal on standard input, its
     * questions going to standard output even when that is a pipe (`| tee
     * log`); a scenario's pauses wait only when both are the terminal. */
    f.o.interactive =
        isatty(STDIN_FILENO) && f.answers == NULL && (exercise || isatty(STDOUT_FILENO));
    f.o.color = isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
    view_t view = {0};
    const lab_play_view_t hooks = {.arg = &view,
                                   .open = view_open,
                                   .note = view_note,
                                   .submit = view_submit,
                                   .wait = view_wait,
                                   .close = view_close};
    if (f.tui) {
        if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
            lab_scenario_free(&s);
            return cli_error("--tui needs a terminal: it plays the scenario in the terminal view");
        }
        f.o.view = &hooks;
        f.o.interactive = false; /* the view reads the keys */
    }
    if (exercise && (rc = answers_source(&f)) >= 0) {
        lab_scenario_free(&s);
        return rc;
    }
    FILE *devnull = NULL;
    if (f.report != NULL) /* the report alone on standard output */
        f.o.out = devnull = fopen("/dev/null", "w");
    lab_play_result_t res = {0};
    rc = lab_scenario_play(&s, &f.o, &res);
    if (f.report != NULL) {
        json_t *j = report_json(&s, &res, rc);
        json_dumpf(j, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(j);
    }
    lab_play_result_free(&res);
    if (f.o.answers != NULL)
        fclose(f.o.answers);
    if (devnull != NULL)
        fclose(devnull);
    lab_scenario_free(&s);
    return rc;
}

/* A CSV field as RFC 4180 writes one: quoted, with its quotes doubled,
 * where it holds a comma, a quote or a line break (a learner's file name
 * may). */
static void csv_field(FILE *f, const char *v)
{
    if (strpbrk(v, ",\"\r\n") == NULL) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

/* Grades a class: each file of dir is a learner's answers. */
static int grade(int argc, char **argv)
{
    run_flags_t f;
    const char *name = NULL, *dir = NULL;
    int rc = parse_flags(argc, argv, VERB_GRADE, &f, &name, &dir);
    if (rc >= 0)
        return rc;
    lab_scenario_t s;
    if ((rc = load_exercise(name, &s)) != 0)
        return rc;
    if ((rc = check_size(&f, &s, name)) != 0) {
        lab_scenario_free(&s);
        return rc;
    }
    DIR *d = opendir(dir);
    if (d == NULL || !pick_backend(&f, &s)) {
        lab_scenario_free(&s);
        if (d != NULL)
            closedir(d);
        return d == NULL ? cli_error("cannot read %s: %s", dir, strerror(errno)) : CLI_USAGE_ERROR;
    }
    char **files = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        char **grown = realloc(files, sizeof(*files) * (n + 1));
        if (grown == NULL)
            break;
        files = grown;
        files[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n == 0) { /* not a class of none: a wrong folder, most likely */
        free(files);
        lab_scenario_free(&s);
        return cli_error("%s holds no answers files: put one file per learner in it", dir);
    }
    qsort(files, n, sizeof(*files), by_name);
    FILE *csv = f.csv != NULL ? fopen(f.csv, "w") : NULL;
    if (f.csv != NULL && csv == NULL)
        rc = cli_error("cannot write %s: %s", f.csv, strerror(errno));
    if (csv != NULL) {
        fprintf(csv, "learner,score,max");
        for (size_t q = 1; q <= s.n_questions; q++)
            fprintf(csv, ",q%zu", q);
        fputc('\n', csv);
    }
    FILE *devnull = fopen("/dev/null", "w");
    for (size_t i = 0; i < n && rc != CLI_USAGE_ERROR && devnull != NULL; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        run_flags_t one = f;
        one.o.out = one.o.err = devnull;
        one.o.answers = open_answers(path);
        one.o.answers_path = path;
        lab_play_result_t res = {0};
        int played = one.o.answers != NULL ? lab_scenario_play(&s, &one.o, &res) : 1;
        char learner[256];
        snprintf(learner, sizeof(learner), "%.*s", (int)strcspn(files[i], "."), files[i]);
        printf("%-24s %g/%zu%s\n", learner, res.score, s.n_questions,
               played != 0 ? "  (the scenario's own checks failed)" : "");
        if (csv != NULL) {
            csv_field(csv, learner);
            fprintf(csv, ",%g,%zu", res.score, s.n_questions);
            for (size_t q = 0; q < s.n_questions; q++)
                fprintf(csv, ",%g", q < res.n ? res.answers[q].points : 0.0);
            fputc('\n', csv);
        }
        if (one.o.answers != NULL)
            fclose(one.o.answers);
        lab_play_result_free(&res);
        rc = played != 0 ? 1 : rc;
    }
    if (devnull != NULL)
        fclose(devnull);
    if (csv != NULL)
        fclose(csv);
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    lab_scenario_free(&s);
    return rc;
}

int cli_scenario(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : NULL;
    if (what == NULL || strcmp(what, "--help") == 0 || strcmp(what, "-h") == 0) {
        fputs(usage, what == NULL ? stderr : stdout);
        return what == NULL ? CLI_USAGE_ERROR : 0;
    }
    if (strcmp(what, "list") == 0)
        return argc == 2 ? list(false) : cli_error("scenario list takes no argument");
    if (strcmp(what, "show") == 0)
        return argc == 3 ? show(argv[2]) : cli_error("usage: distlab scenario show NAME");
    if (strcmp(what, "run") == 0)
        return run(argc - 1, argv + 1, VERB_RUN);
    return cli_error("unknown scenario command '%s' (list, show or run)", what);
}

int cli_exercise(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : NULL;
    if (what == NULL || strcmp(what, "--help") == 0 || strcmp(what, "-h") == 0) {
        fputs(usage, what == NULL ? stderr : stdout);
        return what == NULL ? CLI_USAGE_ERROR : 0;
    }
    if (strcmp(what, "list") == 0)
        return argc == 2 ? list(true) : cli_error("exercise list takes no argument");
    if (strcmp(what, "start") == 0)
        return run(argc - 1, argv + 1, VERB_START);
    if (strcmp(what, "grade") == 0)
        return grade(argc - 1, argv + 1);
    return cli_error("unknown exercise command '%s' (list, start or grade)", what);
}
