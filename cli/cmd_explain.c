/* `distlab explain`: a schedule, step by step, with its cost. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "distlab/sched.h"

static const char usage[] =
    "usage: distlab explain COLLECTIVE [--algo A] [--np N] [--count C] [--dtype T] [--op OP]\n"
    "                       [--root R] [--transport shm|tcp] [--symbolic] [--list]\n"
    "\n"
    "Prints the schedule a collective runs: every step with its phase and its\n"
    "messages, the totals, and the alpha-beta cost estimate. With no --algo, the\n"
    "default for that size (--count, default 8 elements) over the transport\n"
    "(--transport tcp: the default of `run --transport tcp` and of ranks on\n"
    "several hosts; shm, the default, within one host). `distlab explain --list`\n"
    "lists the algorithms.\n"
    "\n"
    "  --symbolic   also show what every rank's buffer holds before the first step\n"
    "               and after each one, as sums of the ranks' inputs: a0 is rank\n"
    "               0's element 0, a2+c2 the sum of ranks 0's and 2's element 2\n"
    "  --np 2,4,8 and/or --algo ring,direct\n"
    "               lists compare instead: a row per algorithm and world size with\n"
    "               its steps, messages, the most one rank sends and receives, and\n"
    "               the cost\n"
    "\n"
    "example: distlab explain all_reduce --algo direct,ring --np 2,4,8,16\n";

enum { OPT_LIST = CLI_OPT__NEXT, OPT_SYMBOLIC, OPT_TRANSPORT };

/* At most this many world sizes or algorithms in a comparison. */
#define MAX_LIST 16

/* What --symbolic may simulate: a few hundred MB at most. */
#define SYMBOLIC_MAX_CELLS (16 << 20)

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

/* "2,4,8" into nps; false (said) on a bad or out-of-range size. */
static bool parse_nps(const char *arg, int *nps, size_t *n_p)
{
    const char *bad = NULL;
    switch (lab_nps_parse(arg, nps, MAX_LIST, n_p, &bad)) {
    case LAB_NPS_OK:
        return true;
    case LAB_NPS_NONE:
        cli_error("--np: no world size in '%s'", arg);
        return false;
    case LAB_NPS_EMPTY:
        cli_error("--np: an empty world size in '%s'", arg);
        return false;
    case LAB_NPS_TOO_MANY:
        cli_error("--np: at most %d world sizes to compare", MAX_LIST);
        return false;
    case LAB_NPS_BAD:
        break;
    }
    cli_error("--np takes an integer from 1 to %d, not '%.*s'", LAB_MAX_NP, (int)strcspn(bad, ","),
              bad);
    return false;
}

/* "ring,direct" into names (pointers into buf), each checked against c. */
static bool parse_algos(char *buf, dl_coll_t c, const char **names, size_t *n_p)
{
    size_t n = 0;
    char known[256];
    dl_algo_names_for(c, known, sizeof(known));
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w != NULL;
         w = strtok_r(NULL, ",", &save)) {
        const dl_algo_t *a = dl_algo_find(w);
        if (n == MAX_LIST) {
            cli_error("--algo: at most %d algorithms to compare", MAX_LIST);
            return false;
        }
        if (a == NULL || a->build[c] == NULL) {
            cli_error("%s '%s'%s; algorithms for %s: %s", a == NULL ? "unknown" : "the", w,
                      a == NULL ? " algorithm" : " algorithm does not implement it",
                      dl_coll_name(c), known);
            return false;
        }
        names[n++] = w;
    }
    if (n == 0) {
        cli_error("--algo: no algorithm in '%s'; algorithms for %s: %s", buf, dl_coll_name(c),
                  known);
        return false;
    }
    *n_p = n;
    return true;
}

/* An algorithm that writes into its peers' memory cannot run over TCP. */
static bool check_transport(const lab_job_t *job, bool network)
{
    lab_launch_opts_t l = {.transport = network ? "tcp" : "shm"};
    return cli_check_algo_transport(job, &l);
}

/* Every row of a comparison is a job of its own, checked as a single
 * explain checks its one: the op against the dtype, the algorithm against
 * the collective and the transport. */
static bool check_rows(const lab_job_t *job, const int *nps, size_t n_nps, const char *const *algos,
                       size_t n_algos, bool network)
{
    for (size_t j = 0; j < n_nps; j++) {
        for (size_t i = 0; i < (n_algos > 0 ? n_algos : 1); i++) {
            lab_job_t row = *job;
            row.np = nps[j];
            snprintf(row.algo, sizeof(row.algo), "%s", n_algos > 0 ? algos[i] : "");
            if (!cli_check_job(&row) || !check_transport(&row, network))
                return false;
        }
    }
    return true;
}

/* `--np 2,4,8` and/or `--algo a,b`: a row per algorithm and world size. */
static int compare(lab_job_t *job, const char *np_list, char *algo_list, bool symbolic,
                   bool network)
{
    int nps[MAX_LIST] = {job->np};
    size_t n_nps = 1, n_algos = 0;
    const char *algos[MAX_LIST];
    dl_coll_t c = job->prim.coll;
    if (symbolic)
        return cli_error("--symbolic shows one schedule; give one --np and one --algo");
    if (np_list != NULL && !parse_nps(np_list, nps, &n_nps))
        return CLI_USAGE_ERROR;
    /* A root is a rank of every world size compared. */
    for (size_t i = 0; dl_coll_has_root(c) && i < n_nps; i++)
        if (job->root >= nps[i])
            return cli_error("--root %d does not exist at --np %d (ranks 0 to %d)", job->root,
                             nps[i], nps[i] - 1);
    if (algo_list[0] == '\0' && job->algo[0] != '\0')
        snprintf(algo_list, 256, "%s", job->algo);
    if (algo_list[0] != '\0' && !parse_algos(algo_list, c, algos, &n_algos))
        return CLI_USAGE_ERROR;
    if (!check_rows(job, nps, n_nps, algos, n_algos, network))
        return CLI_USAGE_ERROR;
    dl_coll_args_t args = {.coll = c, .root = job->root, .count = job->count, .op = job->op};
    dl_status_t st =
        dl_sched_explain_scaling_on(&args, algos, n_algos, nps, n_nps, dl_dtype_size(job->dtype),
                                    dl_dtype_name(job->dtype), network, stdout);
    if (st != DL_OK)
        return cli_error("cannot compare: %s", dl_strerror(st));
    return 0;
}

int cli_explain(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_JOB_LONGOPTS,
        {"list", no_argument, NULL, OPT_LIST},
        {"symbolic", no_argument, NULL, OPT_SYMBOLIC},
        {"transport", required_argument, NULL, OPT_TRANSPORT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    lab_job_t job;
    lab_job_defaults(&job);
    job.count = 8;
    const char *coll = NULL;
    bool list = false, symbolic = false, network = false;
    const char *np_list = NULL;
    char algo_list[256] = "";
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
        /* A list of world sizes or algorithms asks for a comparison; as
         * for every flag, the last --np (or --algo) wins, list or not. */
        bool is_list = (c == CLI_OPT_NP || c == CLI_OPT_ALGO) && strchr(optarg, ',') != NULL;
        if (c == CLI_OPT_NP)
            np_list = is_list ? optarg : NULL;
        if (c == CLI_OPT_ALGO) {
            snprintf(algo_list, sizeof(algo_list), "%s", is_list ? optarg : "");
            job.algo[0] = '\0';
        }
        if (is_list)
            continue;
        /* A schedule is the builtin engine's, and the same on any device. */
        if (c == CLI_OPT_BACKEND || c == CLI_OPT_DEVICE)
            return cli_error("%s is a flag of run and bench: explain shows the builtin backend's "
                             "schedules, the same on every device",
                             c == CLI_OPT_BACKEND ? "--backend" : "--device");
        int applied = cli_job_flag(c, optarg, &job);
        if (applied < 0)
            return CLI_USAGE_ERROR;
        if (applied > 0)
            continue;
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case OPT_LIST:
            list = true;
            break;
        case OPT_SYMBOLIC:
            symbolic = true;
            break;
        case OPT_TRANSPORT:
            /* The default algorithm differs over a network (registry.c). */
            if (strcmp(optarg, "shm") != 0 && strcmp(optarg, "tcp") != 0 &&
                strcmp(optarg, "auto") != 0)
                return cli_error("--transport takes shm or tcp, not '%s'", optarg);
            network = strcmp(optarg, "tcp") == 0;
            break;
        default:
            return cli_flag_error("explain", longopts, argc, argv);
        }
    }
    /* --list takes no collective: a word beside it is a mistake to say. */
    if (list) {
        if (coll != NULL)
            return cli_error("unexpected argument '%s' (--list takes none)", coll);
        list_algos();
        return 0;
    }
    if (coll == NULL)
        return cli_error(
            "which collective? one of: broadcast, scatter, gather, reduce, all_gather, "
            "all_reduce, reduce_scatter, all_to_all, barrier");
    if (lab_prim_parse(coll, &job.prim) != DL_OK || job.prim.kind != LAB_PRIM_COLL)
        return cli_error("unknown collective '%s'; collectives: broadcast, scatter, gather, "
                         "reduce, all_gather, all_reduce, reduce_scatter, all_to_all, barrier",
                         coll);
    if (np_list != NULL || algo_list[0] != '\0')
        return compare(&job, np_list, algo_list, symbolic, network);
    if (!cli_check_job(&job) || !check_transport(&job, network))
        return CLI_USAGE_ERROR;
    /* The simulator follows every rank's contribution to every element of
     * every rank: np * np * count cells per buffer. */
    if (symbolic && (double)job.np * job.np * (double)job.count > SYMBOLIC_MAX_CELLS)
        return cli_error("--symbolic follows every element on every rank: np x np x count must "
                         "be at most %d (here %d x %d x %zu); use a smaller --count or --np",
                         SYMBOLIC_MAX_CELLS, job.np, job.np, job.count);
    dl_coll_args_t args = {.coll = job.prim.coll,
                           .nranks = job.np,
                           .root = job.root,
                           .count = job.count,
                           .op = job.op};
    dl_sched_t *s = NULL;
    size_t esz = dl_dtype_size(job.dtype);
    dl_status_t st = dl_sched_build_on(job.algo[0] ? job.algo : NULL, &args, esz, network, &s);
    if (st != DL_OK)
        return cli_error("cannot build the schedule: %s", dl_strerror(st));
    if (symbolic)
        st = dl_sched_explain_symbolic(s, esz, dl_dtype_name(job.dtype), stdout);
    else
        dl_sched_explain(s, esz, dl_dtype_name(job.dtype), stdout);
    dl_sched_free(s);
    if (st != DL_OK)
        return cli_error("cannot simulate the schedule: %s", dl_strerror(st));
    return 0;
}
