/* `distlab run` and `distlab bench`: build a job from the flags, check it,
 * hand it to the runner. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "distlab/cuda.h"
#include "lab/run/runner.h"
#include "lab/proto/sizing.h"
#include "lab/lang/lang.h"
#include "lab/rank/rank.h"

/* A sweep of more rows than this, or of more sizes before rounding to
 * whole elements (each rank steps through them all), is a typo. */
#define MAX_BENCH_ROWS  10000
#define MAX_BENCH_STEPS 1000000

static const char run_usage[] =
    "usage: distlab run PRIMITIVE [--np N] [--algo A] [--dtype T] [--count C] [--op OP]\n"
    "                   [--root R] [--timeout S] [--transport auto|shm|tcp]\n"
    "                   [--backend builtin|mpi|nccl] [--device cpu|cuda]\n"
    "                   [--hostfile FILE] [--host H1,H2,...] [--trace FILE] [--tui]\n"
    "\n"
    "Spawns N rank processes, fills each rank's tensor as torch's examples do\n"
    "(arange(C) + 1 + C*rank), runs PRIMITIVE and prints every rank's tensors\n"
    "before and after (for pingpong, after each leg too), in rank order, as torch\n"
    "prints them.\n"
    "\n"
    "  PRIMITIVE      send, recv, isend, irecv, broadcast, scatter, gather, reduce,\n"
    "                 all_gather, all_reduce, reduce_scatter, all_to_all, barrier, pingpong\n"
    "  --np N         number of ranks (default 4)\n"
    "  --algo A       schedule for a collective (see `distlab explain`); default by size\n"
    "  --dtype T      bool, int8, uint8, int32, int64, float16, bfloat16, float32, float64\n"
    "                 (default int64)\n"
    "  --count C      elements per rank, or per rank and peer (default 2)\n"
    "  --op OP        sum, prod, min, max, avg, band, bor, bxor (default sum)\n"
    "  --root R       src of broadcast/scatter/send, dst of gather/reduce/recv (default 0)\n"
    "  --timeout S    seconds any wait may take before the run fails (default 60)\n"
    "  --transport T  how ranks move data: auto (shared memory within a host, TCP\n"
    "                 between hosts; the default), shm, or tcp between every pair\n"
    "  --backend B    builtin (distlab's schedules, the default), mpi (Open MPI; ranks\n"
    "                 start under mpirun) or nccl (one GPU per rank); `distlab backends`\n"
    "                 shows what each runs\n"
    "  --device D     where tensors live: cpu (default) or cuda\n"
    "  --hostfile F   mpi: mpirun's hostfile, so the run spans its hosts\n"
    "  --host H       mpi: mpirun's --host list (h1,h2:2,...)\n"
    "  --trace FILE   write every rank's collective, its steps and messages to FILE, a\n"
    "                 trace that ui.perfetto.dev and chrome://tracing open\n"
    "  --tui          open the terminal view on a shell session instead, with the same\n"
    "                 tensors, in step mode: the collective waits before step 1\n"
    "                 (space runs a step; q leaves for the shell's prompt)\n"
    "\n"
    "example: distlab run all_reduce --np 4   (every rank ends with tensor([16, 20]))\n";

static const char bench_usage[] =
    "usage: distlab bench COLLECTIVE [--np N] [-b MIN] [-e MAX] [-f FACTOR] [--algo A]\n"
    "                     [--dtype T] [--op OP] [--root R] [-n ITERS] [-w WARMUP] [-c 0|1]\n"
    "                     [--json] [--timeout S] [--transport auto|shm|tcp]\n"
    "                     [--backend B] [--device D] [--hostfile F] [--host H]\n"
    "                     [--trace FILE] [--lists one|apart]\n"
    "\n"
    "Measures a collective over a range of sizes, with nccl-tests' columns and\n"
    "definitions: time is the average over ranks of the time per call; algbw =\n"
    "size / time; busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for all_gather,\n"
    "reduce_scatter, all_to_all, gather and scatter, 1 for broadcast and reduce;\n"
    "#wrong counts elements that fail the correctness check.\n"
    "\n"
    "  -b, --minbytes MIN   smallest size (default 8)        sizes take K, M, G suffixes\n"
    "  -e, --maxbytes MAX   largest size (default 64M)\n"
    "  -f, --stepfactor F   multiply the size by F each row (default 2)\n"
    "  -n, --iters N        timed calls per size (default 20)\n"
    "  -w, --warmup_iters N untimed calls first (default 5)\n"
    "  -c, --check 0|1      check results (default 1)\n"
    "  --dtype T            default float32;  --op OP default sum;  --np N default 4\n"
    "  --json               print JSON instead of the table\n"
    "  --transport T        auto (default), shm, or tcp between every pair of ranks\n"
    "  --backend B          builtin (default), mpi (under mpirun) or nccl\n"
    "  --device D           cpu (default) or cuda\n"
    "  --hostfile F, --host H   mpi: passed to mpirun\n"
    "  --trace FILE         write every call, its steps and messages to FILE, a trace\n"
    "                       that ui.perfetto.dev and chrome://tracing open\n"
    "  --lists L            gather and scatter's tensor lists: one (default), views of\n"
    "                       one buffer, as MPI_Gather and MPI_Scatter take; apart,\n"
    "                       tensors allocated one by one, as a Python list of tensors\n";

enum { OPT_TIMEOUT = CLI_OPT__NEXT, OPT_JSON, OPT_TUI, OPT_LISTS };

/* --tui, read by run_or_bench; cli_parse_run is shared with `distlab rank`,
 * which never sees it. */
static bool run_tui;

/* The collectives' names, in dl_coll_t order (at most cap). */
static size_t coll_names(const char **names, size_t cap)
{
    size_t n = 0;
    for (int c = 0; c < DL_COLL__COUNT && n < cap; c++)
        names[n++] = dl_coll_name((dl_coll_t)c);
    return n;
}

/* Refuses a bench sweep too long to mean: an exit code, or -1 to go on.
 * Rows are counted after rounding to whole elements, as the ranks measure
 * them: -b 8 -e 64 -f 1.0001 is 14 rows of float32. */
static int check_sweep(const lab_job_t *job)
{
    size_t rows, steps;
    lab_bench_sweep(job, MAX_BENCH_ROWS, MAX_BENCH_STEPS, &rows, &steps);
    if (rows > MAX_BENCH_ROWS)
        return cli_error("-b %zu -e %zu -f %.10g makes more than %d sizes%s: take a larger "
                         "-f or -b",
                         job->min_bytes, job->max_bytes, job->factor, MAX_BENCH_ROWS,
                         job->factor == 1 ? " (a factor of 1 steps by -b)" : "");
    if (steps > MAX_BENCH_STEPS)
        return cli_error("-b %zu -e %zu -f %.10g steps through more than %d sizes before they are "
                         "rounded to whole elements: take a larger -f",
                         job->min_bytes, job->max_bytes, job->factor, MAX_BENCH_STEPS);
    return -1;
}

int cli_parse_run(int argc, char **argv, bool bench, lab_job_t *job_p, lab_runner_opts_t *ropts_p)
{
    static const struct option longopts[] = {
        CLI_JOB_LONGOPTS,
        CLI_LAUNCH_LONGOPTS,
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"json", no_argument, NULL, OPT_JSON},
        {"tui", no_argument, NULL, OPT_TUI},
        {"lists", required_argument, NULL, OPT_LISTS},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *usage = bench ? bench_usage : run_usage;
    lab_job_t job;
    lab_job_defaults(&job);
    job.bench = bench;
    if (bench)
        job.dtype = DL_FLOAT32;
    lab_runner_opts_t ropts;
    memset(&ropts, 0, sizeof(ropts));
    long v;
    double d;
    opterr = 0;
    optind = 1;
    int c;
    const char *shortopts = bench ? "+b:e:f:n:w:c:h" : "+h";
    /* mpirun's spelling would read as -n p (bench's iterations) */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-np") == 0)
            return cli_error("the number of ranks is --np N, with two dashes (see distlab %s "
                             "--help)",
                             bench ? "bench" : "run");
    /* Options may come before or after the primitive. */
    const char *prim = NULL;
    bool device_given = false;
    while (optind < argc) {
        if ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) == -1) {
            if (prim != NULL)
                return cli_error("unexpected argument '%s' (see distlab %s --help)", argv[optind],
                                 bench ? "bench" : "run");
            prim = argv[optind++];
            continue;
        }
        if (c == CLI_OPT_COUNT && bench)
            return cli_error("bench takes sizes (-b, -e), not --count");
        device_given |= c == CLI_OPT_DEVICE;
        int applied = cli_job_flag(c, optarg, &job);
        if (applied == 0)
            applied = cli_launch_flag(c, optarg, &ropts.launch);
        if (applied < 0)
            return CLI_USAGE_ERROR;
        if (applied > 0)
            continue;
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case OPT_TIMEOUT:
            if (!cli_parse_timeout("--timeout", optarg, &job.timeout_s))
                return CLI_USAGE_ERROR;
            break;
        case OPT_TUI:
            if (bench)
                return cli_error("--tui is a run option");
            run_tui = true;
            break;
        case OPT_LISTS:
            if (!bench)
                return cli_error("--lists is a bench option");
            if (strcmp(optarg, "one") != 0 && strcmp(optarg, "apart") != 0)
                return cli_error("--lists takes one or apart, not '%s'", optarg);
            job.lists_apart = strcmp(optarg, "apart") == 0;
            break;
        case OPT_JSON:
            if (!bench)
                return cli_error("--json is a bench option");
            ropts.json = true;
            break;
        case 'b':
            if (!cli_parse_size("-b", optarg, &job.min_bytes))
                return CLI_USAGE_ERROR;
            break;
        case 'e':
            if (!cli_parse_size("-e", optarg, &job.max_bytes))
                return CLI_USAGE_ERROR;
            break;
        case 'f':
            if (!cli_parse_double("-f", optarg, 1.0, &d))
                return CLI_USAGE_ERROR;
            job.factor = d;
            break;
        case 'n':
            if (!cli_parse_int("-n", optarg, 1, 1L << 24, &v))
                return CLI_USAGE_ERROR;
            job.iters = (int)v;
            break;
        case 'w':
            if (!cli_parse_int("-w", optarg, 0, 1L << 24, &v))
                return CLI_USAGE_ERROR;
            job.warmup = (int)v;
            break;
        case 'c':
            if (!cli_parse_int("-c", optarg, 0, 1, &v))
                return CLI_USAGE_ERROR;
            job.check = v != 0;
            break;
        default:
            return cli_flag_error(bench ? "bench" : "run", longopts, argc, argv);
        }
    }
    /* Bench measures collectives: its errors offer only those. */
    const char *what = bench ? "collective" : "primitive";
    char choices[256];
    const char *prims[32];
    size_t n_prims = bench ? coll_names(prims, 32) : lab_prim_names(prims, 32);
    snprintf(choices, sizeof(choices), "%s", bench ? "" : lab_prim_all_names());
    for (size_t i = 0; bench && i < n_prims; i++)
        snprintf(choices + strlen(choices), sizeof(choices) - strlen(choices), "%s%s",
                 i ? ", " : "", prims[i]);
    if (prim == NULL)
        return cli_error("which %s? one of: %s", what, choices);
    if (lab_prim_parse(prim, &job.prim) != DL_OK) {
        const char *near = lab_suggest(prim, prims, n_prims);
        if (near != NULL)
            return cli_error("unknown %s '%s'; did you mean '%s'? (%ss: %s)", what, prim, near,
                             what, choices);
        return cli_error("unknown %s '%s'; %ss: %s", what, prim, what, choices);
    }
    if (bench && job.prim.kind != LAB_PRIM_COLL)
        return cli_error("bench measures collectives; '%s' is point to point", prim);
    if (bench && job.min_bytes > job.max_bytes)
        return cli_error("-b %zu is larger than -e %zu", job.min_bytes, job.max_bytes);
    if (bench && job.min_bytes == 0)
        return cli_error("-b must be at least 1 byte");
    int swept = bench ? check_sweep(&job) : -1;
    if (swept >= 0)
        return swept;
    /* NCCL works on GPU memory: as torch's nccl examples, its tensors live
     * on the GPU unless --device says otherwise. */
    if (!device_given && strcmp(job.backend, "nccl") == 0)
        job.device = DL_DEVICE_CUDA;
    if (!cli_check_job(&job))
        return CLI_USAGE_ERROR;
    if (!cli_check_launch(job.backend, &ropts.launch) ||
        !cli_check_algo_transport(&job, &ropts.launch))
        return CLI_USAGE_ERROR;
    *job_p = job;
    *ropts_p = ropts;
    return -1;
}

/* Whether NVIDIA's MPS server is up for this process: its control daemon's
 * pipe, in CUDA_MPS_PIPE_DIRECTORY or the default /tmp/nvidia-mps. */
static bool mps_running(void)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char path[4096];
    snprintf(path, sizeof(path), "%s/control", dir != NULL && dir[0] ? dir : "/tmp/nvidia-mps");
    struct stat st;
    return stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* A bench of ranks sharing a GPU says what its small sizes measure: each
 * rank has a CUDA context of its own, and the GPU time-slices between
 * them, so a small copy waits for its context's turn (docs/benchmarks.md,
 * measured on an H100: 321 us against 28 us under MPS, 1 KiB at np=3). */
static void note_shared_gpu(const lab_job_t *job, int gpus)
{
    if (mps_running())
        printf("# %d ranks share %d GPU%s, under NVIDIA's MPS server\n#\n", job->np, gpus,
               gpus == 1 ? "" : "s");
    else
        printf("# %d ranks share %d GPU%s, each rank in a CUDA context of its own: the GPU "
               "switches between them, which costs a small message about 150 us for each rank "
               "beyond the first; NVIDIA's MPS server (nvidia-cuda-mps-control -d) removes it\n#\n",
               job->np, gpus, gpus == 1 ? "" : "s");
    fflush(stdout);
}

/* The steps a `run` job's one collective takes (its schedule's, or one
 * where the backend runs it as one call), or 0 where they are not known
 * beforehand (a benchmark's or point-to-point's). */
static size_t job_steps(const lab_job_t *job, const lab_launch_opts_t *l, bool local,
                        const char **algo_p)
{
    *algo_p = NULL;
    if (job->bench || job->prim.kind != LAB_PRIM_COLL)
        return 0;
    if (strcmp(job->backend, "builtin") != 0)
        return 1;
    const char *transport = cli_transport(l);
    bool network = !local || (transport != NULL && strcmp(transport, "tcp") == 0);
    dl_coll_args_t args = {.coll = job->prim.coll,
                           .nranks = job->np,
                           .root = job->root,
                           .count = job->count,
                           .op = job->op};
    dl_sched_t *s = NULL;
    if (dl_sched_build_on(job->algo[0] != '\0' ? job->algo : NULL, &args, dl_dtype_size(job->dtype),
                          network, &s) != DL_OK)
        return 0;
    size_t n = s->n_steps;
    *algo_p = s->algo; /* static */
    dl_sched_free(s);
    return n;
}

/* A DISTLAB_FAULT for a rank or a step the job does not have would
 * silently never fire (its form was checked before: lab_rank_env_check):
 * refused in one line. Returns an exit code, or -1 to go on. */
static int fault_fits(const lab_job_t *job, const lab_launch_opts_t *l, bool local)
{
    const char *fault = getenv("DISTLAB_FAULT");
    int fault_rank, fault_step;
    char action[8];
    if (fault == NULL || fault[0] == '\0' ||
        !lab_fault_parse(fault, &fault_rank, &fault_step, action, sizeof(action)))
        return -1;
    if (fault_rank >= job->np) {
        fprintf(stderr,
                "distlab: DISTLAB_FAULT=%s names rank %d, and the job has %d ranks (0 to %d)\n",
                fault, fault_rank, job->np, job->np - 1);
        return 2;
    }
    const char *algo;
    size_t steps = job_steps(job, l, local, &algo);
    if (steps > 0 && (size_t)fault_step > steps) {
        char what[96];
        if (algo != NULL)
            snprintf(what, sizeof(what), "%s (%s)", lab_prim_name(job->prim), algo);
        else
            snprintf(what, sizeof(what), "%s on the %s backend, which runs it as one call,",
                     lab_prim_name(job->prim), job->backend);
        fprintf(stderr,
                "distlab: DISTLAB_FAULT=%s names step %d, and %s at --np %d has %zu step%s\n",
                fault, fault_step, what, job->np, steps, steps == 1 ? "" : "s");
        return 2;
    }
    return -1;
}

/* Before any rank starts: refuses a job that cannot fit in this machine's
 * memory, and sizes the ranks' shared arenas from the job, which the ranks
 * inherit through DISTLAB_ARENA_MB. Returns an exit code, or -1 to go on. */
static int size_job(const lab_job_t *job, const lab_runner_opts_t *ropts)
{
    /* Only ranks that all run here share this host's memory. */
    const lab_launch_opts_t *l = &ropts->launch;
    bool local = l->hostfile == NULL && l->hosts == NULL && !l->attach;
    int rc = fault_fits(job, l, local);
    if (rc >= 0)
        return rc;
    /* GPUs are counted once here, rather than every rank failing alone. */
    if (local && job->device == DL_DEVICE_CUDA) {
        char why[256] = "";
        int gpus = dl_cuda_device_count(why, sizeof(why));
        if (gpus <= 0) {
            fprintf(stderr,
                    "distlab: %s on cuda tensors needs a CUDA GPU, and this machine has none%s%s\n",
                    lab_prim_name(job->prim), why[0] ? ": " : "", why);
            return 1;
        }
        if (strcmp(job->backend, "nccl") == 0 && gpus < job->np) {
            fprintf(stderr,
                    "distlab: the nccl backend runs one rank per GPU: --np %d needs %d GPUs, and "
                    "this machine has %d (use --np %d or fewer, or --backend builtin --device "
                    "cuda to share them)\n",
                    job->np, job->np, gpus, gpus);
            return 1;
        }
        if (job->bench && strcmp(job->backend, "builtin") == 0 && gpus < job->np)
            note_shared_gpu(job, gpus);
    }
    if (local && job->device != DL_DEVICE_CUDA) {
        const char *what = NULL;
        uint64_t avail = lab_mem_available(&what);
        char why[512];
        if (!lab_job_fits_memory(job, avail, what, why, sizeof(why))) {
            fprintf(stderr, "distlab: %s\n", why);
            return 1;
        }
    }
    if (strcmp(job->backend, "builtin") != 0)
        return -1;
    size_t need = lab_job_arena_mb(job);
    const char *env = getenv("DISTLAB_ARENA_MB");
    /* The ranks of a host map every arena of the host: 64 TiB in all. */
    uint64_t most = ((uint64_t)1 << 46 >> 20) / (uint64_t)job->np;
    /* A value that does not fit the job is a usage error, as a malformed
     * one is (lab_rank_env_check) and as a DISTLAB_FAULT for a rank the job
     * lacks is. */
    if (local && env != NULL && atol(env) > 0 && (uint64_t)atol(env) > most)
        return cli_error("DISTLAB_ARENA_MB=%s is too large for %d ranks on one host: at most "
                         "%llu MiB each (64 TiB in all); unset it and distlab sizes the arena "
                         "from the job",
                         env, job->np, (unsigned long long)most);
    if (env != NULL && *env != '\0') {
        if (atol(env) > 0 && (size_t)atol(env) >= need)
            return -1;
        return cli_error("DISTLAB_ARENA_MB=%s is too small for this job: each rank needs a %zu "
                         "MiB shared arena; set it to at least %zu, or unset it and distlab sizes "
                         "the arena from the job",
                         env, need, need);
    }
    char mb[32];
    snprintf(mb, sizeof(mb), "%zu", need > LAB_ARENA_DEFAULT_MB ? need : LAB_ARENA_DEFAULT_MB);
    setenv("DISTLAB_ARENA_MB", mb, 1);
    return -1;
}

/* `run --tui`: the job as a shell line, in a shell session whose terminal
 * view opens at once. */
static int run_in_view(const lab_job_t *job, const lab_runner_opts_t *ropts)
{
    if (job->device == DL_DEVICE_CUDA)
        return cli_error("--tui runs the job's tensors on the host; leave out --device cuda");
    if (ropts->launch.attach)
        return cli_error("--tui starts its own ranks");
    lab_launch_opts_t launch = ropts->launch;
    launch.np = job->np;
    launch.timeout_s = job->timeout_s;
    launch.backend = strcmp(job->backend, "builtin") == 0 ? NULL : job->backend;
    char *line = lab_job_shell_line(job, true);
    if (line == NULL) {
        fprintf(stderr, "distlab: out of memory\n");
        return 1;
    }
    int code = cli_shell_view_line(&launch, job->backend, line);
    free(line);
    return code;
}

static int run_or_bench(int argc, char **argv, bool bench)
{
    lab_job_t job;
    lab_runner_opts_t ropts;
    run_tui = false;
    int code = cli_parse_run(argc, argv, bench, &job, &ropts);
    if (code < 0)
        code = size_job(&job, &ropts);
    if (code < 0 && run_tui)
        return run_in_view(&job, &ropts);
    return code >= 0 ? code : lab_runner_run(&job, &ropts);
}

int cli_run(int argc, char **argv)
{
    return run_or_bench(argc, argv, false);
}

int cli_bench(int argc, char **argv)
{
    return run_or_bench(argc, argv, true);
}
