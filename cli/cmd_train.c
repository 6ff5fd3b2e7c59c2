/* `distlab train`: the data-parallel trainer with checkpoints
 * (lab/elastic/trainer.h). This file parses its flags. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "cli/cli.h"
#include "lab/elastic/trainer.h"

static const char usage[] =
    "usage: distlab train [--epochs N] [--steps-per-epoch K] [--batch B] [--lr LR]\n"
    "                     [--sleep S] [--checkpoint PATH] [--seed N] [--timeout S]\n"
    "\n"
    "One rank of a data-parallel training of Linear(10,10)-ReLU-Linear(10,5) with\n"
    "SGD, the gradients averaged over the ranks with all_reduce after every step.\n"
    "Start one process per rank with torchrun's environment: MASTER_ADDR,\n"
    "MASTER_PORT, RANK, WORLD_SIZE (and LOCAL_RANK); rank 0 serves the store, as\n"
    "`distlab launch` or torchrun start them, or by hand:\n"
    "\n"
    "  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 distlab train &\n"
    "  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 distlab train\n"
    "\n"
    "  --epochs N           epochs in all, numbered from 0 (default 10)\n"
    "  --steps-per-epoch K  SGD steps per epoch (default 10)\n"
    "  --batch B            examples per step on each rank (default 32)\n"
    "  --lr LR              learning rate (default 0.01)\n"
    "  --sleep S            seconds to pause after each epoch, to slow a demo (default 0)\n"
    "  --checkpoint PATH    rank 0 saves model and optimizer there after every epoch;\n"
    "                       a run that finds it resumes at the next epoch, at any\n"
    "                       world size (default: no checkpoints)\n"
    "  --seed N             seed of the initial weights and the batches (default 0)\n"
    "  --timeout S          how long any wait for the other ranks may take\n"
    "                       (default DISTLAB_TIMEOUT, else 30)\n"
    "\n"
    "Each rank prints one line per epoch,\n"
    "  [PID] epoch E (rank = R, local_rank = L, world_size = W) loss = X\n"
    "then its final weights checksum; a rank that resumes says so first. A dead\n"
    "peer, a timeout or a corrupt checkpoint ends every rank with one line and\n"
    "exit status 1; a missing or malformed variable with status 2.\n";

int cli_train(int argc, char **argv)
{
    enum {
        OPT_EPOCHS = 256,
        OPT_STEPS,
        OPT_BATCH,
        OPT_LR,
        OPT_SLEEP,
        OPT_CHECKPOINT,
        OPT_SEED,
        OPT_TIMEOUT
    };
    static const struct option longopts[] = {
        {"epochs", required_argument, NULL, OPT_EPOCHS},
        {"steps-per-epoch", required_argument, NULL, OPT_STEPS},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"lr", required_argument, NULL, OPT_LR},
        {"sleep", required_argument, NULL, OPT_SLEEP},
        {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
        {"seed", required_argument, NULL, OPT_SEED},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    lab_train_opts_t o;
    lab_train_defaults(&o);
    long v = 0;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case OPT_EPOCHS:
            if (!cli_parse_int("--epochs", optarg, 0, 1000000, &v))
                return CLI_USAGE_ERROR;
            o.epochs = v;
            break;
        case OPT_STEPS:
            if (!cli_parse_int("--steps-per-epoch", optarg, 1, 1000000, &v))
                return CLI_USAGE_ERROR;
            o.steps_per_epoch = (int)v;
            break;
        case OPT_BATCH:
            if (!cli_parse_int("--batch", optarg, 1, 65536, &v))
                return CLI_USAGE_ERROR;
            o.batch = (int)v;
            break;
        case OPT_LR:
            if (!cli_parse_double("--lr", optarg, 0, &o.lr))
                return CLI_USAGE_ERROR;
            if (!isfinite(o.lr))
                return cli_error("--lr takes a finite number, not '%s'", optarg);
            break;
        case OPT_SLEEP:
            if (!cli_parse_double("--sleep", optarg, 0, &o.sleep_s))
                return CLI_USAGE_ERROR;
            if (!(o.sleep_s <= 86400))
                return cli_error("--sleep takes at most 86400 seconds, not '%s'", optarg);
            break;
        case OPT_CHECKPOINT:
            if (optarg[0] == '\0')
                return cli_error("--checkpoint takes a file name");
            o.checkpoint = optarg;
            break;
        case OPT_SEED:
            if (!cli_parse_int("--seed", optarg, 0, LONG_MAX, &v))
                return CLI_USAGE_ERROR;
            o.seed = (uint64_t)v;
            break;
        case OPT_TIMEOUT:
            if (!cli_parse_timeout("--timeout", optarg, &o.timeout_s))
                return CLI_USAGE_ERROR;
            if (!isfinite(o.timeout_s))
                return cli_error("--timeout takes a finite number of seconds, not '%s'", optarg);
            break;
        default:
            return cli_flag_error("train", longopts, argc, argv);
        }
    }
    if (optind < argc)
        return cli_error("unexpected argument '%s'", argv[optind]);
    return lab_train_main(&o);
}
