/* `distlab demo elastic`: the elastic-restart demo (lab/elastic/demo.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/ctrl/spawn.h"
#include "lab/elastic/demo.h"

static const char usage[] =
    "usage: distlab demo elastic [--epochs N] [--sleep S] [--join-at E] [--kill-at E]\n"
    "\n"
    "Plays, on this machine, what an elastic job does on a cluster: node 0 starts\n"
    "`distlab launch` with 2 workers of `distlab train`; node 1 joins with 2 more\n"
    "and every worker restarts at WORLD_SIZE 4 from the checkpoint; a worker is\n"
    "killed and the group fails over; training ends with the same weights on every\n"
    "rank. Each event is told as it happens; at the end, the time from node 1's\n"
    "start to the first epoch at 4 workers, and from the kill to the first epoch\n"
    "after the restart. Also: distlab scenario run elastic-restart.\n"
    "\n"
    "  --epochs N   epochs of training in all (default 12)\n"
    "  --sleep S    extra seconds per epoch, to follow it (default 0.5, at least 0.1:\n"
    "               node 1 must join while node 0 still trains; at most 86400)\n"
    "  --join-at E  node 1 starts once epoch E is done at 2 workers (default 3)\n"
    "  --kill-at E  a worker is killed once epoch E is done at 4 workers (default 6)\n";

int cli_demo(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"epochs", required_argument, NULL, 'e'},  {"sleep", required_argument, NULL, 's'},
        {"join-at", required_argument, NULL, 'j'}, {"kill-at", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    lab_demo_opts_t o;
    lab_demo_defaults(&o);
    const char *which = NULL;
    long v;
    opterr = 0;
    optind = 1;
    while (optind < argc) {
        int c = getopt_long(argc, argv, "+h", longopts, NULL);
        if (c == -1) {
            if (which != NULL)
                return cli_error("unexpected argument '%s' (see distlab demo --help)",
                                 argv[optind]);
            which = argv[optind++];
            continue;
        }
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case 'e':
            if (!cli_parse_int("--epochs", optarg, 2, 1000, &v))
                return CLI_USAGE_ERROR;
            o.epochs = (int)v;
            break;
        case 's':
            if (!cli_parse_double("--sleep", optarg, 0, &o.sleep_s))
                return CLI_USAGE_ERROR;
            if (o.sleep_s < 0.1)
                return cli_error("--sleep %s is too short: node 0 would end its training before "
                                 "node 1 could join (at least 0.1)",
                                 optarg);
            /* The workers' own limit (distlab train --sleep). */
            if (!(o.sleep_s <= 86400))
                return cli_error("--sleep takes at most 86400 seconds, not '%s'", optarg);
            break;
        case 'j':
            if (!cli_parse_int("--join-at", optarg, 0, 1000, &v))
                return CLI_USAGE_ERROR;
            o.join_at = (int)v;
            break;
        case 'k':
            if (!cli_parse_int("--kill-at", optarg, 0, 1000, &v))
                return CLI_USAGE_ERROR;
            o.kill_at = (int)v;
            break;
        default:
            return cli_flag_error("demo", longopts, argc, argv);
        }
    }
    if (which == NULL || strcmp(which, "elastic") != 0)
        return which == NULL ? cli_error("name the demo to run: distlab demo elastic (the demos: "
                                         "elastic)")
                             : cli_error("no demo named '%s'; the demos: elastic", which);
    if (!(o.join_at < o.kill_at && o.kill_at + 2 < o.epochs))
        return cli_error("the demo needs --join-at < --kill-at < --epochs - 2 (here %d, %d, %d)",
                         o.join_at, o.kill_at, o.epochs);
    return cli_demo_elastic(&o);
}

int cli_demo_elastic(struct lab_demo_opts *o)
{
    char exe[4096];
    if (lab_spawn_exe(exe, sizeof(exe)) != 0)
        return cli_error("cannot find the distlab binary to start the agents");
    o->exe = exe;
    return lab_elastic_demo(o);
}
