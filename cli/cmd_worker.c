/* `distlab worker`: adds ranks on this host to a `distlab shell --listen`
 * session (lab/remote/worker.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/remote/worker.h"

static const char usage[] =
    "usage: distlab worker --join HOST:PORT --token-file FILE [--nproc K] [--timeout S]\n"
    "\n"
    "Adds K ranks on this host (default 1) to the shell that listens at HOST:PORT\n"
    "(`distlab shell --listen` prints the exact command). FILE holds the session's\n"
    "token; it must be readable by you alone (chmod 600). The worker runs until\n"
    "the shell ends the session; if the shell goes away, it stops its ranks and\n"
    "exits 1. --timeout is how long to keep trying to reach the shell (default 30).\n";

int cli_worker(int argc, char **argv)
{
    enum { OPT_JOIN = 256, OPT_TOKEN_FILE, OPT_NPROC, OPT_TIMEOUT };
    static const struct option longopts[] = {
        {"join", required_argument, NULL, OPT_JOIN},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"nproc", required_argument, NULL, OPT_NPROC},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    lab_worker_opts_t o = {.nproc = 1, .connect_timeout_s = 30};
    long nproc = 1;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case OPT_JOIN:
            o.join = optarg;
            break;
        case OPT_TOKEN_FILE:
            o.token_file = optarg;
            break;
        case OPT_NPROC:
            if (!cli_parse_int("--nproc", optarg, 1, LAB_MAX_NP, &nproc))
                return CLI_USAGE_ERROR;
            o.nproc = (int)nproc;
            break;
        case OPT_TIMEOUT:
            if (!cli_parse_timeout("--timeout", optarg, &o.connect_timeout_s))
                return CLI_USAGE_ERROR;
            break;
        default:
            return cli_flag_error("worker", longopts, argc, argv);
        }
    }
    if (optind < argc)
        return cli_error("unexpected argument '%s'", argv[optind]);
    if (o.join == NULL || o.token_file == NULL)
        return cli_error("worker needs --join HOST:PORT and --token-file FILE (the shell's "
                         "--listen prints both)");
    return lab_worker_run(&o);
}
