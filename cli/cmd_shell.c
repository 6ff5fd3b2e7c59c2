/* `distlab shell` (and `distlab` alone): the interactive shell, or a script
 * from -c, a file or standard input. The shell session (lab/shell/shell.c) runs
 * on one libuv loop; readline's callback interface reads the terminal from
 * the same loop, so rank events arrive while the prompt waits. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>
#include <uv.h>

#include "cli/cli.h"
#include "cli/script_input.h"
#include "distlab/log.h"
#include "lab/lang/lang.h"
#include "cli/shell_complete.h"
#include "cli/shell_remote.h"
#include "lab/shell/shell.h"
#include "tui/tui.h"

#define PROMPT          "distlab> "
#define CONTINUE_PROMPT "... "

static const char usage[] =
    "usage: distlab shell [--np N] [--timeout S] [--transport auto|shm|tcp] [-k]\n"
    "                     [--backend builtin|mpi|nccl] [--hostfile F] [--host H]\n"
    "                     [--trace FILE] [--tui] [-c 'CMD; CMD'] [FILE]\n"
    "\n"
    "Starts N ranks (default 4) and a shell in which you run torch.distributed's\n"
    "primitives on them. With -c, a FILE, or commands on standard input, runs\n"
    "them and stops at the first error (exit 1, naming the line); with -k\n"
    "(--keep-going) it runs every line and exits 1 if any failed. `help` in the\n"
    "shell lists the commands.\n"
    "\n"
    "  --tui                  open the terminal view: a panel per rank with its\n"
    "                         tensors (`tui` in the shell opens it too; q leaves it)\n"
    "  --transport T          how ranks move data: auto (shared memory within a\n"
    "                         host, TCP between hosts; the default), shm, or tcp\n"
    "                         between every pair of ranks\n"
    "  --backend B            builtin (default), mpi (ranks start under mpirun;\n"
    "                         step mode then steps whole collectives) or nccl\n"
    "  --hostfile F, --host H mpi: passed to mpirun, so the world spans hosts\n"
    "  --trace FILE           write the session's collectives, their steps and messages\n"
    "                         to FILE when it ends, as a trace for ui.perfetto.dev\n"
    "                         (`trace on FILE` and `trace off` in the shell)\n"
    "\n"
    "Remote ranks:\n"
    "  --listen [HOST:]PORT   let workers on other hosts add ranks (`distlab worker`,\n"
    "                         whose exact command is printed); HOST defaults to\n"
    "                         127.0.0.1, PORT 0 picks a free port. --np may be 0.\n"
    "  --token-file FILE      the session's token (mode 600); default: a fresh one\n"
    "  --expect-ranks N       a script waits until the world has N ranks, workers'\n"
    "                         included, before its first line...\n"
    "  --expect-timeout S     ...for at most S seconds (default 60), else exit 1\n";

typedef struct {
    uv_loop_t loop;
    lab_shell_t *sh;
    uv_poll_t stdin_poll;
    uv_signal_t sigint, sigterm, sighup;
    bool interactive;
    bool finished;
    bool keep_going; /* -k: a script goes on after a failed line (exit 1 at the end) */
    bool busy;
    bool color; /* the shell's, for when the view gives the terminal back */
    /* Script mode: where the lines come from, the one running. */
    cli_script_input_t input;
    bool have_input;
    int script_fd; /* a script FILE's descriptor, else -1 */
    char *line;
    size_t line_no; /* the first line of the running text (a block spans several) */
    /* A block being read (if, for, on RANKS:), and the line read after it
     * that ended it, which runs next. */
    char *block;
    size_t block_no;
    lab_lang_gather_t gather; /* what block is open for */
    char *held;
    bool pumping, pump_again; /* see next_line() */
    const char *source;       /* "-c", a file name, or "stdin" */
    int code;
    cli_remote_t remote; /* --listen */
    /* The terminal view (tui/), while it has the terminal; want_tui: open
     * it once the line that asked for it (`tui`) is done. */
    tui_t *tui;
    bool want_tui;
    /* `distlab run --tui`: the line the view runs once it is open. */
    const char *first_line;
    char history_path[4096];
} shell_cli_t;

static shell_cli_t *g_cli; /* readline's callbacks take no argument */

static void finish(shell_cli_t *c)
{
    if (c->finished)
        return;
    c->finished = true;
    if (c->have_input)
        cli_script_input_close(&c->input);
    if (c->tui != NULL) {
        tui_close(c->tui, stdout, stderr, c->color);
        c->tui = NULL;
    }
    if (c->interactive) {
        rl_callback_handler_remove();
        uv_poll_stop(&c->stdin_poll);
        uv_close((uv_handle_t *)&c->stdin_poll, NULL);
        if (c->history_path[0] != '\0')
            write_history(c->history_path);
        cli_complete_fini();
    }
    uv_close((uv_handle_t *)&c->sigint, NULL);
    uv_close((uv_handle_t *)&c->sigterm, NULL);
    uv_close((uv_handle_t *)&c->sighup, NULL);
    if (!lab_shell_trace_end(c->sh) && c->code == 0)
        c->code = 1;
    lab_shell_close(c->sh);
    cli_remote_close(&c->remote); /* the workers are told the session is over */
}

/* ---- script mode ---- */

static void next_line(shell_cli_t *c);

static void script_done(void *arg, bool ok)
{
    shell_cli_t *c = arg;
    if (!ok) {
        /* The line as typed, but never raw: it may hold terminal escapes.
         * Ranks that could not start are the cause, said already: the
         * line is not to blame. */
        if (!lab_shell_start_failed(c->sh)) {
            fprintf(stderr, "distlab: %s: line %zu failed: ", c->source, c->line_no);
            dl_quote_to(stderr, c->line, strlen(c->line), 200);
            fputc('\n', stderr);
        }
        c->code = 1;
        if (!c->keep_going) {
            finish(c);
            return;
        }
    }
    if (lab_shell_quitting(c->sh)) {
        finish(c);
        return;
    }
    next_line(c);
}

/* The script has no more lines. A line left waiting in step mode would
 * silently lose the statements after its paused collective. */
static void end_of_script(shell_cli_t *c)
{
    char where[128];
    if (lab_shell_paused_at(c->sh, where, sizeof(where))) {
        fprintf(stderr,
                "distlab: %s: the script ended while %s; the rest of its line did not run "
                "(end the script with `continue`, or `step off` before it)\n",
                c->source, where);
        c->code = 1;
    }
    finish(c);
}

/* Runs text (malloc'd, taken) as the script's next line, numbered no. */
static void submit_text(shell_cli_t *c, char *text, size_t no)
{
    free(c->line);
    c->line = text;
    c->line_no = no;
    cli_remote_sync(&c->remote); /* a worker that joined enters the world now */
    lab_shell_submit(c->sh, c->line, script_done, c);
}

/* Appends "\n" and line to the open block. */
static bool extend_block(shell_cli_t *c, const char *line)
{
    size_t a = strlen(c->block), b = strlen(line);
    char *grown = realloc(c->block, a + b + 2);
    if (grown == NULL)
        return false;
    grown[a] = '\n';
    memcpy(grown + a + 1, line, b + 1);
    c->block = grown;
    return true;
}

static void out_of_memory(shell_cli_t *c)
{
    fprintf(stderr, "distlab: %s: out of memory\n", c->source);
    c->code = 1;
    finish(c);
}

/* Submits lines until one has to wait (for the ranks or for input). A
 * block (a line that starts with if, for or on) takes the lines after it
 * while they are indented (or elif, else), and runs as one text once the
 * first line that is not has been read; that line runs next. */
static void pump_lines(shell_cli_t *c)
{
    for (;;) {
        const char *line, *error;
        char *held = c->held;
        size_t no;
        c->held = NULL;
        if (held != NULL) {
            line = held;
            no = c->input.lineno;
        } else {
            cli_script_read_t got = cli_script_input_next(&c->input, &line, &error);
            if (got == CLI_SCRIPT_WAIT)
                return; /* script_input_ready runs when more has come */
            if (got == CLI_SCRIPT_EOF) {
                if (c->block != NULL) {
                    char *block = c->block;
                    c->block = NULL;
                    submit_text(c, block, c->block_no);
                    return;
                }
                end_of_script(c);
                return;
            }
            if (got != CLI_SCRIPT_LINE) {
                fprintf(stderr, "distlab: %s: %s\n", c->source, error);
                c->code = 1;
                if (got == CLI_SCRIPT_FATAL || !c->keep_going) {
                    finish(c);
                    return;
                }
                continue;
            }
            no = c->input.lineno;
        }
        if (c->block != NULL) {
            if (lab_lang_gather_takes(&c->gather, line)) {
                bool ok = extend_block(c, line);
                free(held);
                if (!ok) {
                    out_of_memory(c);
                    return;
                }
                continue;
            }
            c->held = held != NULL ? held : strdup(line);
            char *block = c->block;
            c->block = NULL;
            if (c->held == NULL) {
                free(block);
                out_of_memory(c);
                return;
            }
            submit_text(c, block, c->block_no);
            return;
        }
        const char *p = line + strspn(line, " \t");
        if (*p == '\0' || *p == '#') {
            free(held);
            continue;
        }
        char *text = held != NULL ? held : strdup(line);
        if (text == NULL) {
            out_of_memory(c);
            return;
        }
        lab_lang_gather_start(&c->gather, text);
        if (lab_lang_gather_open(&c->gather)) {
            c->block = text;
            c->block_no = no;
            continue;
        }
        submit_text(c, text, no);
        return;
    }
}

/* Many lines finish inside lab_shell_submit itself (session commands,
 * parse errors), and their completion asks for the next line: a loop here
 * instead of that recursion keeps a script's length from being bounded by
 * the stack. */
static void next_line(shell_cli_t *c)
{
    if (c->pumping) {
        c->pump_again = true;
        return;
    }
    c->pumping = true;
    do {
        c->pump_again = false;
        pump_lines(c);
    } while (c->pump_again && !c->finished);
    c->pumping = false;
}

static void script_input_ready(void *arg)
{
    shell_cli_t *c = arg;
    if (!c->finished)
        next_line(c);
}

/* ---- interactive mode ---- */

static void on_line(char *line);
static void on_stdin(uv_poll_t *h, int status, int events);

/* "distlab> ", or while a collective waits in step mode the step it has
 * reached: "distlab [all_reduce 2/6]> " once two of its six steps ran. */
static const char *prompt(shell_cli_t *c)
{
    static char buf[96];
    int done = 0, steps = 0;
    const char *coll = lab_shell_paused_step(c->sh, &done, &steps);
    if (coll == NULL)
        return PROMPT;
    snprintf(buf, sizeof(buf), "distlab [%s %d/%d]> ", coll, done, steps);
    return buf;
}

static void prompt_again(shell_cli_t *c)
{
    c->busy = false;
    rl_callback_handler_install(prompt(c), on_line);
    uv_poll_start(&c->stdin_poll, UV_READABLE, on_stdin);
}

/* ---- the terminal view ---- */

static void open_tui(shell_cli_t *c);

/* The view gives the terminal back: the plain prompt again, the ranks
 * still up; or the shell was told to quit there. */
static void tui_left(void *arg, bool quit)
{
    shell_cli_t *c = arg;
    tui_close(c->tui, stdout, stderr, c->color);
    c->tui = NULL;
    if (quit) {
        finish(c);
        return;
    }
    prompt_again(c);
}

/* `tui`: the view opens once the line is done (interactive_done). */
static void want_view(void *arg)
{
    shell_cli_t *c = arg;
    if (c->tui == NULL)
        c->want_tui = true;
}

static void open_tui(shell_cli_t *c)
{
    c->want_tui = false;
    /* readline lets go of the terminal; the view reads keys itself. */
    c->busy = true;
    rl_callback_handler_remove();
    uv_poll_stop(&c->stdin_poll);
    if (tui_open(&c->loop, c->sh, tui_left, c, &c->tui) != DL_OK) {
        fprintf(stderr, "distlab: the terminal view cannot use this terminal\n");
        prompt_again(c);
        return;
    }
    if (c->first_line != NULL) {
        tui_submit(c->tui, c->first_line);
        c->first_line = NULL;
    }
}

static void interactive_done(void *arg, bool ok)
{
    shell_cli_t *c = arg;
    (void)ok;
    if (lab_shell_quitting(c->sh)) {
        finish(c);
        return;
    }
    if (c->want_tui) {
        open_tui(c);
        return;
    }
    prompt_again(c);
}

static void on_stdin(uv_poll_t *h, int status, int events)
{
    (void)h;
    (void)status;
    (void)events;
    if (!g_cli->busy)
        rl_callback_read_char();
}

static void on_line(char *line)
{
    shell_cli_t *c = g_cli;
    if (line == NULL) { /* Ctrl-D */
        printf("\n");
        free(line);
        finish(c);
        return;
    }
    const char *p = line + strspn(line, " \t");
    /* A block (if COND:, for ...:, on RANKS:) goes on over "... " prompts
     * until an empty line, and then runs as one text. */
    if (c->block != NULL || lab_lang_needs_more(line)) {
        if (*p != '\0')
            add_history(line);
        bool ok = c->block == NULL ? (c->block = strdup(line)) != NULL : extend_block(c, line);
        free(line);
        if (!ok) {
            out_of_memory(c);
            return;
        }
        if (lab_lang_needs_more(c->block)) {
            rl_set_prompt(CONTINUE_PROMPT);
            return;
        }
        line = c->block;
        c->block = NULL;
        p = line;
    }
    /* Enter alone does nothing, except in step mode where it is `next`. */
    if (*p == '\0' && !lab_shell_stepping(c->sh)) {
        free(line);
        return;
    }
    if (*p != '\0')
        add_history(line);
    /* While the command runs the prompt is gone and typing waits. */
    c->busy = true;
    rl_callback_handler_remove();
    uv_poll_stop(&c->stdin_poll);
    cli_remote_sync(&c->remote); /* a worker that joined enters the world now */
    lab_shell_submit(c->sh, line, interactive_done, c);
    free(line);
}

static char *saved_line;
static int saved_point;

static void hide_prompt(void *arg)
{
    shell_cli_t *c = arg;
    if (!c->interactive || c->busy || c->tui != NULL)
        return;
    saved_point = rl_point;
    saved_line = rl_copy_text(0, rl_end);
    rl_save_prompt();
    rl_replace_line("", 0);
    rl_redisplay();
}

static void show_prompt(void *arg)
{
    shell_cli_t *c = arg;
    if (!c->interactive || c->busy || c->tui != NULL)
        return;
    rl_restore_prompt();
    rl_replace_line(saved_line != NULL ? saved_line : "", 0);
    rl_point = saved_point;
    rl_redisplay();
    free(saved_line);
    saved_line = NULL;
}

static void on_sigint(uv_signal_t *h, int sig)
{
    (void)sig;
    shell_cli_t *c = h->data;
    if (!c->interactive) {
        /* A script stops where it was, saying so, as run and bench do. */
        fprintf(stderr, "distlab: %s: interrupted by SIGINT at line %zu; stopping the ranks\n",
                c->source, c->line_no);
        c->code = 130;
        finish(c);
        return;
    }
    if (c->busy) {
        /* The view shows the ranks' errors on its status line. */
        if (c->tui != NULL) {
            lab_shell_interrupt(c->sh);
            return;
        }
        /* The terminal has echoed ^C; the ranks' errors follow on their own
         * lines, then the prompt. */
        fputc('\n', stderr);
        lab_shell_interrupt(c->sh);
        return;
    }
    /* As in bash: drop the line, fresh prompt. A collective paused in step
     * mode is given up as well. */
    printf("^C\n");
    fflush(stdout);
    bool stepping = lab_shell_stepping(c->sh);
    if (c->block != NULL) { /* the block typed so far goes too */
        free(c->block);
        c->block = NULL;
        rl_set_prompt(prompt(c));
    }
    if (stepping) /* given up below: the step it had reached is no more */
        rl_set_prompt(PROMPT);
    rl_free_line_state();
    rl_callback_sigcleanup();
    rl_replace_line("", 0);
    rl_on_new_line();
    rl_redisplay();
    if (stepping)
        lab_shell_interrupt(c->sh);
}

/* SIGTERM, or SIGHUP when the terminal closes: end as `quit` does (the
 * ranks and workers stopped, the session's token file removed), with one
 * line that says why. */
static void on_sigterm(uv_signal_t *h, int sig)
{
    shell_cli_t *c = h->data;
    if (c->tui != NULL) { /* the message goes to the plain terminal */
        tui_close(c->tui, stdout, stderr, c->color);
        c->tui = NULL;
    } else if (c->interactive && !c->busy) {
        fputc('\n', stderr);
    }
    fprintf(stderr, "distlab: %s: stopping the ranks and leaving\n",
            sig == SIGHUP ? "hangup (SIGHUP)" : "terminated (SIGTERM)");
    c->code = 128 + sig;
    finish(c);
}

static void history_file(shell_cli_t *c)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char dir[4000];
    if (state != NULL && *state != '\0')
        snprintf(dir, sizeof(dir), "%s/distlab", state);
    else if (home != NULL && *home != '\0')
        snprintf(dir, sizeof(dir), "%s/.local/state/distlab", home);
    else
        return;
    /* mkdir -p, quietly: without a history file the shell still works. */
    for (char *p = dir + 1; *p != '\0'; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    mkdir(dir, 0700);
    snprintf(c->history_path, sizeof(c->history_path), "%s/history", dir);
    read_history(c->history_path);
    stifle_history(1000);
}

/* ---- entry point ---- */

/* --expect-ranks: the script starts once the world has its ranks. */
static void expected(void *arg, bool ok)
{
    shell_cli_t *c = arg;
    if (ok) {
        next_line(c);
        return;
    }
    c->code = 1;
    finish(c);
}

typedef struct {
    lab_launch_opts_t launch;
    int np;
    const char *backend;
    const char *cmds, *file; /* -c, FILE */
    const char *listen, *token_file;
    int expect;
    double expect_timeout;
    bool keep_going;
    bool want_tui;
    const char *first_line;
} shell_args_t;

static int shell_main(const shell_args_t *a)
{
    shell_cli_t c;
    memset(&c, 0, sizeof(c));
    g_cli = &c;
    lab_launch_opts_t launch = a->launch;
    long np = a->np;
    const char *backend = a->backend, *cmds = a->cmds, *file = a->file;
    const char *listen = a->listen, *token_file = a->token_file;
    long expect = a->expect;
    double expect_timeout = a->expect_timeout;
    c.keep_going = a->keep_going;
    c.want_tui = a->want_tui;
    c.first_line = a->first_line;
    bool builtin = strcmp(backend, "builtin") == 0;
    launch.np = (int)np;
    launch.backend = builtin ? NULL : backend;
    if (!cli_check_launch(backend, &launch))
        return CLI_USAGE_ERROR;
    if (listen != NULL && !builtin)
        return cli_error("--listen takes ranks from distlab workers, which run the builtin "
                         "backend; the %s backend starts its ranks itself%s",
                         backend, strcmp(backend, "mpi") == 0 ? " (use --hostfile or --host)" : "");

    c.script_fd = -1;
    if (cmds != NULL) {
        c.source = "-c";
    } else if (file != NULL) {
        c.script_fd = open(file, O_RDONLY | O_CLOEXEC);
        if (c.script_fd < 0)
            return cli_error("cannot read %s: %s", file, strerror(errno));
        c.source = file;
    } else if (!isatty(STDIN_FILENO)) {
        c.source = "stdin";
    } else {
        c.interactive = true;
    }
    if (c.want_tui && !c.interactive)
        return cli_error("--tui needs a terminal (and no -c or FILE)");
    if (c.interactive && expect > 0)
        return cli_error("--expect-ranks is for scripts (-c, a FILE or standard input); "
                         "interactively, the shell says when a worker joins");

    int rc = 0;
    uv_loop_init(&c.loop);
    if (listen != NULL) {
        rc = cli_remote_start(&c.remote, &c.loop, listen, token_file, hide_prompt, show_prompt, &c);
        if (rc != 0)
            goto out_run_loop;
    }
    launch.workers = lab_remote_launcher(c.remote.remote);
    c.color = isatty(STDERR_FILENO) && getenv("NO_COLOR") == NULL;
    lab_shell_opts_t so = {.launch = launch,
                           .color = c.color,
                           .out = stdout,
                           .err = stderr,
                           .before_async_output = hide_prompt,
                           .after_async_output = show_prompt,
                           .open_view = c.interactive ? want_view : NULL,
                           .arg = &c};
    if (lab_shell_new(&c.loop, &so, &c.sh) != DL_OK) {
        cli_remote_close(&c.remote);
        rc = 1;
        goto out_run_loop;
    }
    cli_remote_attach(&c.remote, c.sh);
    /* Before readline's handlers, which pass these signals on to them. */
    uv_signal_t *sigs[] = {&c.sigint, &c.sigterm, &c.sighup};
    int signums[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        uv_signal_init(&c.loop, sigs[i]);
        sigs[i]->data = &c;
        uv_signal_start(sigs[i], signums[i] == SIGINT ? on_sigint : on_sigterm, signums[i]);
    }
    if (c.interactive) {
        history_file(&c);
        cli_complete_init(c.sh);
        uv_poll_init(&c.loop, &c.stdin_poll, STDIN_FILENO);
        c.stdin_poll.data = &c;
        if (c.want_tui) {
            open_tui(&c);
        } else {
            printf("distlab shell: %ld ranks starting; `help` lists the commands, Ctrl-D quits\n",
                   np);
            rl_callback_handler_install(PROMPT, on_line);
            uv_poll_start(&c.stdin_poll, UV_READABLE, on_stdin);
        }
    } else {
        int in_rc = cmds != NULL
                        ? cli_script_input_text(&c.input, cmds)
                        : cli_script_input_fd(&c.input, &c.loop,
                                              c.script_fd >= 0 ? c.script_fd : STDIN_FILENO,
                                              script_input_ready, &c);
        c.have_input = in_rc == 0;
        if (!c.have_input) {
            fprintf(stderr, "distlab: %s: out of memory\n", c.source);
            c.code = 1;
            finish(&c);
        } else if (expect > 0) {
            cli_remote_expect(&c.remote, (int)expect, expect_timeout, expected, &c);
        } else {
            next_line(&c);
        }
    }
    uv_run(&c.loop, UV_RUN_DEFAULT);
    rc = c.code;
    goto out_close_loop;

out_run_loop:
    uv_run(&c.loop, UV_RUN_DEFAULT);
out_close_loop:
    uv_loop_close(&c.loop);
    free(c.line);
    free(c.block);
    free(c.held);
    if (c.script_fd >= 0)
        close(c.script_fd);
    return rc;
}

int cli_shell(int argc, char **argv)
{
    enum {
        OPT_NP = CLI_OPT__NEXT,
        OPT_TIMEOUT,
        OPT_LISTEN,
        OPT_TOKEN_FILE,
        OPT_EXPECT,
        OPT_EXPECT_TIMEOUT,
        OPT_BACKEND,
        OPT_TUI
    };
    static const struct option longopts[] = {
        {"np", required_argument, NULL, OPT_NP},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"backend", required_argument, NULL, OPT_BACKEND},
        CLI_LAUNCH_LONGOPTS,
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"expect-ranks", required_argument, NULL, OPT_EXPECT},
        {"expect-timeout", required_argument, NULL, OPT_EXPECT_TIMEOUT},
        {"keep-going", no_argument, NULL, 'k'},
        {"tui", no_argument, NULL, OPT_TUI},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool want_tui = false;
    long np = 4;
    lab_launch_opts_t launch = {.timeout_s = 30};
    const char *cmds = NULL, *file = NULL;
    const char *listen = NULL, *token_file = NULL;
    char backend[16] = "builtin";
    long expect = 0;
    double expect_timeout = 60;
    bool keep_going = false;
    opterr = 0;
    optind = 1;
    int opt, applied;
    while ((opt = getopt_long(argc, argv, "+c:hk", longopts, NULL)) != -1) {
        switch (opt) {
        case 'k':
            keep_going = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case 'c':
            cmds = optarg;
            break;
        case OPT_NP:
            if (!cli_parse_int("--np", optarg, 0, LAB_MAX_NP, &np))
                return CLI_USAGE_ERROR;
            break;
        case OPT_LISTEN:
            listen = optarg;
            break;
        case OPT_TOKEN_FILE:
            token_file = optarg;
            break;
        case OPT_EXPECT:
            if (!cli_parse_int("--expect-ranks", optarg, 1, LAB_MAX_NP, &expect))
                return CLI_USAGE_ERROR;
            break;
        case OPT_EXPECT_TIMEOUT:
            if (!cli_parse_double("--expect-timeout", optarg, 0.1, &expect_timeout))
                return CLI_USAGE_ERROR;
            break;
        case OPT_TIMEOUT:
            if (!cli_parse_timeout("--timeout", optarg, &launch.timeout_s))
                return CLI_USAGE_ERROR;
            break;
        case OPT_TUI:
            want_tui = true;
            break;
        case OPT_BACKEND:
            if (!cli_parse_backend(optarg, backend, sizeof(backend)))
                return CLI_USAGE_ERROR;
            break;
        default:
            applied = cli_launch_flag(opt, optarg, &launch);
            if (applied > 0)
                break;
            if (applied < 0)
                return CLI_USAGE_ERROR;
            return cli_flag_error("shell", longopts, argc, argv);
        }
    }
    if (optind < argc)
        file = argv[optind++];
    if (optind < argc)
        return cli_error("unexpected argument '%s'", argv[optind]);
    if (cmds != NULL && file != NULL)
        return cli_error("give -c or a FILE, not both");
    if (listen == NULL && (np == 0 || token_file != NULL || expect > 0))
        return cli_error("%s goes with --listen (ranks from workers)", np == 0 ? "--np 0"
                                                                       : token_file != NULL
                                                                           ? "--token-file"
                                                                           : "--expect-ranks");

    shell_args_t a = {.launch = launch,
                      .np = (int)np,
                      .backend = backend,
                      .cmds = cmds,
                      .file = file,
                      .listen = listen,
                      .token_file = token_file,
                      .expect = (int)expect,
                      .expect_timeout = expect_timeout,
                      .keep_going = keep_going,
                      .want_tui = want_tui};
    return shell_main(&a);
}

int cli_shell_view_line(const lab_launch_opts_t *launch, const char *backend, const char *line)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return cli_error("--tui needs a terminal: it opens the terminal view");
    shell_args_t a = {.launch = *launch,
                      .np = launch->np,
                      .backend = backend,
                      .expect_timeout = 60,
                      .want_tui = true,
                      .first_line = line};
    return shell_main(&a);
}
