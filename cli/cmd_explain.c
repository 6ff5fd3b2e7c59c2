/* `distlab explain`: a schedule, step by step, with its cost. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "distlab/sched.h"

static const char usage[] =
    "usage: distlab explain COLLECTIVE [--algo A] [--np N] [--count C] [--dtype T] [--op OP]\n"
    "                       [--root R] [--list]\n"
    "\n"
    "Prints the schedule a collective runs: every step with its phase and its\n"
    "messages, the totals, and the alpha-beta cost estimate. With no --algo, the\n"
    "default for that size. `distlab explain --list` lists the algorithms.\n";

enum { OPT_NP = 256, OPT_ALGO, OPT_DTYPE, OPT_COUNT, OPT_OP, OPT_ROOT, OPT_LIST };

static void list_algos(void)
{
    const dl_algo_t *const *all = dl_algos();
    for (int i = 0; all[i] != NULL; i++) {
        printf("%-14s %s\n%-14s implements:", all[i]->name, all[i]->summary, "");
        for (int c = 0; c < DL_COLL__COUNT; c++)
            if (all[i]->build[c] != NULL)
                printf(" %s", dl_coll_name((dl_coll_t)c));
        printf("\n");
    }
}

int cli_explain(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"np", required_argument, NULL, OPT_NP},
        {"algo", required_argument, NULL, OPT_ALGO},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"count", required_argument, NULL, OPT_COUNT},
        {"op", required_argument, NULL, OPT_OP},
        {"root", required_argument, NULL, OPT_ROOT},
        {"list", no_argument, NULL, OPT_LIST},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    lab_job_t job;
    lab_job_defaults(&job);
    job.count = 8;
    long v;
    const char *coll = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while (optind < argc) {
        if ((c = getopt_long(argc, argv, "+h", longopts, NULL)) == -1) {
            if (coll != NULL)
                return cli_error("unexpected argument '%s'", argv[optind]);
            coll = argv[optind++];
            continue;
        }
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case OPT_LIST:
            list_algos();
            return 0;
        case OPT_NP:
            if (!cli_parse_int("--np", optarg, 1, 256, &v))
                return CLI_USAGE_ERROR;
            job.np = (int)v;
            break;
        case OPT_ALGO:
            snprintf(job.algo, sizeof(job.algo), "%s", optarg);
            break;
        case OPT_DTYPE:
            if (!cli_parse_dtype(optarg, &job.dtype))
                return CLI_USAGE_ERROR;
            break;
        case OPT_COUNT:
            if (!cli_parse_int("--count", optarg, 0, 1L << 30, &v))
                return CLI_USAGE_ERROR;
            job.count = (size_t)v;
            break;
        case OPT_OP:
            if (!cli_parse_op(optarg, &job.op))
                return CLI_USAGE_ERROR;
            break;
        case OPT_ROOT:
            if (!cli_parse_int("--root", optarg, 0, 255, &v))
                return CLI_USAGE_ERROR;
            job.root = (int)v;
            break;
        default:
            return cli_error("unknown or incomplete flag '%s' (see distlab explain --help)",
                             argv[optind - 1]);
        }
    }
    if (coll == NULL)
        return cli_error("which collective? (distlab explain all_reduce --algo ring --np 4)");
    if (lab_prim_parse(coll, &job.prim) != DL_OK || job.prim.kind != LAB_PRIM_COLL)
        return cli_error("unknown collective '%s'; collectives: broadcast, scatter, gather, "
                         "reduce, all_gather, all_reduce, reduce_scatter, all_to_all, barrier",
                         coll);
    if (!cli_check_job(&job))
        return CLI_USAGE_ERROR;
    dl_coll_args_t args = {.coll = job.prim.coll,
                           .nranks = job.np,
                           .root = job.root,
                           .count = job.count,
                           .op = job.op};
    dl_sched_t *s = NULL;
    size_t esz = dl_dtype_size(job.dtype);
    dl_status_t st = dl_sched_build(job.algo[0] ? job.algo : NULL, &args, esz, &s);
    if (st != DL_OK)
        return cli_error("cannot build the schedule: %s", dl_strerror(st));
    dl_sched_explain(s, esz, dl_dtype_name(job.dtype), stdout);
    dl_sched_free(s);
    return 0;
}
