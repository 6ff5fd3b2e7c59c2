/* distlab: the command line entry point. One table drives dispatch and
 * the help text. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "distlab/auth.h"
#include "distlab/guard.h"
#include "distlab/log.h"
#include "dl_config.h"
#include "lab/ctrl/forkserver.h"
#include "lab/rank/rank.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    bool ranks; /* starts ranks or is one: reads DISTLAB_TIMEOUT and DISTLAB_FAULT */
} cli_command_t;

static const cli_command_t commands[] = {
    {"shell", cli_shell, "the interactive shell over live ranks (also: distlab alone)", true},
    {"run", cli_run, "spawn N ranks, run one primitive, print every rank's tensors", true},
    {"bench", cli_bench, "measure a collective over sizes (nccl-tests' columns)", true},
    {"scenario", cli_scenario, "narrated, checked lessons: list, show NAME, run NAME", true},
    {"exercise", cli_exercise, "lessons that ask: list, start NAME, grade NAME DIR", true},
    {"explain", cli_explain, "print a collective's schedule, its steps and its cost", false},
    {"backends", cli_backends, "which primitives each backend runs on cpu and cuda", false},
    {"launch", cli_launch, "the elastic launcher: COMMAND's workers on every node, as torchrun",
     false},
    {"worker", cli_worker, "add ranks on this host to a shell that listens (--listen)", true},
    {"rank", cli_rank, "the rank process (started by the controller or any launcher)", true},
    {"train", cli_train, "a data-parallel trainer with checkpoints (one rank; env://)", true},
    {"demo", cli_demo, "the elastic-restart demo: a node joins, a worker dies, training goes on",
     false},
};

/* A malformed variable is refused before anything starts, rather than
 * ignored by every rank: DISTLAB_AUTH_TIMEOUT for every command (each may
 * listen), the ranks' own variables for those that start ranks or are one. */
static int check_env_of(int argc, char **argv, int (*fn)(int, char **), bool ranks)
{
    bool help = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) /* past --: COMMAND's own */
        help = help || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
    char why[DL_QUOTE_BUF + 128];
    int auth_ms;
    if (!help && (dl_guard_env_auth_timeout(&auth_ms, why, sizeof(why)) != DL_OK ||
                  (ranks && !lab_rank_env_check(why, sizeof(why)))))
        return cli_error("%s", why);
    return fn(argc, argv);
}

static int check_env(int argc, char **argv, int (*fn)(int, char **))
{
    return check_env_of(argc, argv, fn, true);
}

static void usage(FILE *out)
{
    fprintf(out,
            "distlab %s: a lab for the communication primitives of distributed training\n\n"
            "usage: distlab COMMAND [ARGS]   (distlab COMMAND --help for its flags)\n\n",
            DL_VERSION);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexamples:\n"
                 "  distlab run all_reduce --np 4\n"
                 "  distlab explain all_reduce --algo ring --np 4\n"
                 "  distlab scenario run all_reduce --step\n"
                 "  distlab backends\n"
                 "  distlab bench all_reduce --np 2 -b 8 -e 64M -f 2\n");
}

/* A rank that the fork server started: `distlab rank`, as exec'd. */
static char *rank_args[] = {"distlab", "rank", NULL};
static int main_argc;
static char **main_argv;

/* Makes the forked rank's command line read `distlab rank`, as an exec'd
 * rank's does, for ps and for whoever looks for ranks in /proc: the words
 * after argv[0] are one run of memory, rewritten in place. Its environment
 * is the one the fork server gave it, but /proc/PID/environ still shows the
 * process's first one (only exec changes that): so its name says which
 * rank it is ("rank 2" in ps -o comm, top, /proc/PID/comm). */
static void retitle_as_rank(void)
{
    const char *rank = getenv("RANK");
    char name[16];
    snprintf(name, sizeof(name), "rank %s", rank != NULL ? rank : "?");
    prctl(PR_SET_NAME, name);
    char *start = main_argv[1], *last = main_argv[main_argc - 1];
    size_t room = (size_t)(last + strlen(last) + 1 - start);
    if (room < sizeof("rank"))
        return;
    memset(start, 0, room);
    memcpy(start, "rank", sizeof("rank"));
}

/* What every rank does first, done once in the fork server: OpenSSL's
 * set-up for the HMAC of the ranks' authentication and for the random
 * bytes of its nonce (a forked rank's generator reseeds from the kernel
 * on its first use: OpenSSL sees the fork). */
static void rank_prepare(void)
{
    char mac[DL_AUTH_HEX_LEN], nonce[DL_AUTH_HEX_LEN];
    dl_auth_mac("token", "client", "nonce", "nonce", mac);
    dl_auth_new_nonce(nonce);
}

static int rank_entry(void)
{
    retitle_as_rank();
    cli_set_args(2, rank_args);
    return check_env(1, rank_args + 1, cli_rank);
}

/* Standard input, output and error open on /dev/null where they were
 * closed (`distlab ... >&-`): the next file opened would take their number,
 * and output meant for the terminal would go into it (or libuv, handed it
 * as a terminal, would abort when closing it). */
static void std_fds_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        int nul = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (nul >= 0 && nul != fd) {
            dup2(nul, fd);
            close(nul);
        }
    }
}

static int dispatch(int argc, char **argv)
{
    /* A peer that closes its socket must give an error, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    /* Commands that start local ranks fork them from a copy of this
     * process made now, while it is bare (lab/ctrl/forkserver.h); unless
     * ranks are to run another binary. */
    const char *other_exe = getenv("DISTLAB_EXE");
    if (argc >= 2 && (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "bench") == 0) &&
        (other_exe == NULL || other_exe[0] == '\0')) {
        rank_args[0] = argv[0];
        main_argc = argc;
        main_argv = argv;
        lab_forkserver_start(rank_prepare, rank_entry);
    }
    cli_set_args(argc, argv);
    if (argc < 2)
        return check_env(argc, argv, cli_shell);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        /* `distlab help run` is `distlab run --help`, as git's help is. */
        for (size_t i = 0;
             argc >= 3 && strcmp(cmd, "help") == 0 && i < sizeof(commands) / sizeof(commands[0]);
             i++)
            if (strcmp(argv[2], commands[i].name) == 0) {
                char *help_argv[] = {argv[2], "--help", NULL};
                return commands[i].fn(2, help_argv);
            }
        if (argc < 3 || strcmp(cmd, "help") != 0) {
            usage(stdout);
            return 0;
        }
        cmd = argv[2]; /* `distlab help frobnicate`: an unknown command, said below */
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("distlab %s\n", DL_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return check_env_of(argc - 1, argv + 1, commands[i].fn, commands[i].ranks);
    /* The list comes from the table, so a new command is named here too. */
    char names[256] = "";
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
                 commands[i].name);
    return cli_error("unknown command '%s'; commands: %s", cmd, names);
}

/* Whether standard output is a pipe or socket whose reader has gone: what
 * made an earlier write fail with EPIPE, whose errno is long gone. */
static bool reader_left(void)
{
    struct stat st;
    struct pollfd pfd = {.fd = STDOUT_FILENO, .events = POLLOUT};
    return fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) &&
           poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP)) != 0;
}

/* Output that could not be written fails the command, as it would fail a
 * `cat`: a result lost on a full disk is not a success. A reader that left
 * (`distlab bench | head -1`) is not worth a word. */
static int output_written(int rc)
{
    int err = fflush(stdout) != 0 ? errno : 0;
    if ((err == 0 && !ferror(stdout)) || err == EPIPE)
        return rc;
    if (err == 0 && reader_left())
        return rc;
    /* An earlier write's error is flagged, its errno long gone. */
    fprintf(stderr, "distlab: cannot write the output%s%s\n", err != 0 ? ": " : "",
            err != 0 ? strerror(err) : "");
    return rc != 0 ? rc : 1;
}

int main(int argc, char **argv)
{
    std_fds_open();
    return output_written(dispatch(argc, argv));
}
