/* `distlab launch`: the elastic agent's flags (lab/elastic/agent.h), spelled
 * as torchrun spells them (with '-' or '_'). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "cli/cli.h"
#include "lab/elastic/agent.h"

static const char usage[] =
    "usage: distlab launch [FLAGS] [--] COMMAND [ARGS...]\n"
    "\n"
    "The elastic launcher, in the manner of torchrun: run one agent per node, each\n"
    "with the same COMMAND. The agents meet at the rendezvous endpoint, agree on the\n"
    "world, and each starts COMMAND once per local worker with torchrun's\n"
    "environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,\n"
    "ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT,\n"
    "TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID),\n"
    "so a script written for torchrun runs unchanged. A worker that fails stops\n"
    "and restarts every node's workers (counted against --max-restarts); a node\n"
    "that joins or leaves restarts them at the new world size (not counted).\n"
    "\n"
    "  --nnodes N | MIN:MAX       nodes in the run (1:1)\n"
    "  --nproc-per-node K         workers on this node (1)\n"
    "  --max-restarts R           restarts after worker failures before giving up (0)\n"
    "  --rdzv-id ID               the run's name, the same on every node (none)\n"
    "  --rdzv-endpoint HOST:PORT  the rendezvous store; the first agent to bind it\n"
    "                             serves it (127.0.0.1:29400)\n"
    "  --rdzv-backend c10d        for torchrun's command lines: the only backend\n"
    "  --rdzv-conf KEY=VALUE,...  join_timeout (600 s), last_call_timeout (1 s),\n"
    "                             keep_alive_interval (1 s), keep_alive_max_attempt (3),\n"
    "                             read_timeout (10 s)\n"
    "  --standalone               one node, on a private endpoint (a free port)\n"
    "  --monitor-interval S       how often the agent looks at its workers and the\n"
    "                             round (0.1 s; torchrun's is 5)\n"
    "  --stop-timeout S           stopping workers: SIGTERM, then SIGKILL after S (5)\n"
    "\n"
    "Exit status: 0 when every worker of the last round exited 0; 1 when a failure\n"
    "outlasted the restarts (a root-cause report comes first) or the rendezvous\n"
    "failed; 127 when COMMAND is not found (126: not executable); 128+N after\n"
    "signal N.\n"
    "\n"
    "examples:\n"
    "  distlab launch --standalone --nproc-per-node 2 -- python3 train.py\n"
    "  distlab launch --nnodes 1:2 --nproc-per-node 2 --max-restarts 3 \\\n"
    "      --rdzv-id job1 --rdzv-endpoint node0:29400 -- python3 train.py\n";

int cli_launch(int argc, char **argv)
{
    enum {
        OPT_NNODES = 256,
        OPT_NPROC,
        OPT_MAX_RESTARTS,
        OPT_RDZV_ID,
        OPT_RDZV_ENDPOINT,
        OPT_RDZV_BACKEND,
        OPT_RDZV_CONF,
        OPT_STANDALONE,
        OPT_MONITOR,
        OPT_STOP_TIMEOUT,
    };
    static const struct option longopts[] = {
        {"nnodes", required_argument, NULL, OPT_NNODES},
        {"nproc-per-node", required_argument, NULL, OPT_NPROC},
        {"nproc_per_node", required_argument, NULL, OPT_NPROC},
        {"max-restarts", required_argument, NULL, OPT_MAX_RESTARTS},
        {"max_restarts", required_argument, NULL, OPT_MAX_RESTARTS},
        {"rdzv-id", required_argument, NULL, OPT_RDZV_ID},
        {"rdzv_id", required_argument, NULL, OPT_RDZV_ID},
        {"rdzv-endpoint", required_argument, NULL, OPT_RDZV_ENDPOINT},
        {"rdzv_endpoint", required_argument, NULL, OPT_RDZV_ENDPOINT},
        {"rdzv-backend", required_argument, NULL, OPT_RDZV_BACKEND},
        {"rdzv_backend", required_argument, NULL, OPT_RDZV_BACKEND},
        {"rdzv-conf", required_argument, NULL, OPT_RDZV_CONF},
        {"rdzv_conf", required_argument, NULL, OPT_RDZV_CONF},
        {"standalone", no_argument, NULL, OPT_STANDALONE},
        {"monitor-interval", required_argument, NULL, OPT_MONITOR},
        {"monitor_interval", required_argument, NULL, OPT_MONITOR},
        {"stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT},
        {"stop_timeout", required_argument, NULL, OPT_STOP_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    lab_elastic_opts_t o;
    lab_elastic_opts_init(&o);
    char host[256] = "127.0.0.1", why[512];
    const char *endpoint = NULL;
    bool standalone = false, nnodes_given = false;
    long v;
    opterr = 0;
    optind = 1;
    int opt;
    /* '+': the first word that is not a flag is COMMAND; its own flags are
     * its own. */
    while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case OPT_NNODES:
            if (!lab_rdzv_parse_nnodes(optarg, &o.min_nodes, &o.max_nodes, why, sizeof(why)))
                return cli_error("%s", why);
            nnodes_given = true;
            break;
        case OPT_NPROC:
            if (!cli_parse_int("--nproc-per-node", optarg, 1, 1024, &v))
                return CLI_USAGE_ERROR;
            o.nproc = (int)v;
            break;
        case OPT_MAX_RESTARTS:
            if (!cli_parse_int("--max-restarts", optarg, 0, 1000000, &v))
                return CLI_USAGE_ERROR;
            o.max_restarts = (int)v;
            break;
        case OPT_RDZV_ID:
            if (!lab_rdzv_check_id(optarg, why, sizeof(why)))
                return cli_error("%s", why);
            o.run_id = optarg;
            break;
        case OPT_RDZV_ENDPOINT:
            if (!lab_rdzv_parse_endpoint(optarg, host, sizeof(host), &o.port, why, sizeof(why)))
                return cli_error("%s", why);
            endpoint = optarg;
            break;
        case OPT_RDZV_BACKEND:
            if (strcmp(optarg, "c10d") != 0)
                return cli_error("--rdzv-backend '%s' is not supported: distlab launch has one "
                                 "rendezvous, c10d's (a store served by the first agent)",
                                 optarg);
            break;
        case OPT_RDZV_CONF:
            if (!lab_rdzv_conf_parse(&o.conf, optarg, why, sizeof(why)))
                return cli_error("%s", why);
            break;
        case OPT_STANDALONE:
            standalone = true;
            break;
        case OPT_MONITOR:
            if (!cli_parse_double("--monitor-interval", optarg, 0.001, &o.monitor_interval_s))
                return CLI_USAGE_ERROR;
            break;
        case OPT_STOP_TIMEOUT:
            if (!cli_parse_double("--stop-timeout", optarg, 0, &o.stop_timeout_s))
                return CLI_USAGE_ERROR;
            break;
        default:
            return cli_flag_error("launch", longopts, argc, argv);
        }
    }
    if (optind >= argc)
        return cli_error("launch needs a COMMAND to run on every worker, e.g. distlab launch "
                         "--nproc-per-node 2 -- python3 train.py");
    if (standalone) {
        if (endpoint != NULL)
            return cli_error("--standalone picks its own endpoint: leave out --rdzv-endpoint");
        if (nnodes_given && o.max_nodes > 1)
            return cli_error("--standalone runs one node, not --nnodes %d:%d", o.min_nodes,
                             o.max_nodes);
        o.min_nodes = o.max_nodes = 1;
        o.port = 0;
        /* A private run: a name of its own. */
        static char id[40];
        unsigned char rnd[8];
        if (uv_random(NULL, NULL, rnd, sizeof(rnd), 0, NULL) != 0)
            memset(rnd, 0, sizeof(rnd));
        int n = snprintf(id, sizeof(id), "standalone-");
        for (size_t i = 0; i < sizeof(rnd); i++)
            n += snprintf(id + n, sizeof(id) - (size_t)n, "%02x", rnd[i]);
        o.run_id = id;
    }
    o.host = host;
    o.argv = argv + optind;
    return lab_elastic_run(&o);
}
