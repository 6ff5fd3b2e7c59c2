/* distlab: the command line entry point. One table drives dispatch and
 * the help text. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "distlab/log.h"
#include "dl_config.h"
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
 * ignored by every rank. */
static int check_env(int argc, char **argv, int (*fn)(int, char **))
{
    bool help = false;
    for (int i = 1; i < argc; i++)
        help = help || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
    char why[DL_QUOTE_BUF + 128];
    if (!help && !lab_rank_env_check(why, sizeof(why)))
        return cli_error("%s", why);
    return fn(argc, argv);
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

int main(int argc, char **argv)
{
    /* A peer that closes its socket must give an error, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    cli_set_args(argc, argv);
    if (argc < 2)
        return check_env(argc, argv, cli_shell);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("distlab %s\n", DL_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].ranks ? check_env(argc - 1, argv + 1, commands[i].fn)
                                     : commands[i].fn(argc - 1, argv + 1);
    /* The list comes from the table, so a new command is named here too. */
    char names[256] = "";
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
                 commands[i].name);
    return cli_error("unknown command '%s'; commands: %s", cmd, names);
}
