/* `distlab rank`: the rank process.
 *
 * Started by distlab (run, bench, shell, or the mpirun that distlab starts
 * for the mpi backend), it takes no arguments and reads its session from
 * the environment. Started by a launcher of the user's own with a job,
 *
 *     mpirun -np 4 distlab rank all_reduce --count 4
 *
 * it runs that job like `distlab run`: this file parses the job's flags,
 * lab_runner_run_under_mpirun runs it in mpirun's world. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "distlab/comm.h"
#include "distlab/log.h"
#include "lab/ctrl/mpirun.h"
#include "lab/rank/rank.h"
#include "lab/run/runner.h"

static const char usage[] =
    "usage: distlab rank\n"
    "       mpirun -np N distlab rank [run|bench] PRIMITIVE [run or bench flags]\n"
    "\n"
    "The rank process. Started by distlab, it reads RANK, WORLD_SIZE, MASTER_ADDR,\n"
    "MASTER_PORT and DISTLAB_CONTROL (the controller's address) from the\n"
    "environment. Started by your own mpirun with a primitive, it runs that job\n"
    "as `distlab run` (or `distlab bench`) would, on the mpi backend unless\n"
    "--backend says otherwise, and rank 0 prints the report.\n";

/* The job's arguments with the defaults of a user's mpirun: the mpi
 * backend, and --np from Open MPI. */
static char **job_args(int argc, char **argv, int world, int *argc_p)
{
    bool has_backend = false;
    for (int i = 1; i < argc; i++)
        has_backend = has_backend || strcmp(argv[i], "--backend") == 0 ||
                      strncmp(argv[i], "--backend=", 10) == 0;
    char **args = calloc((size_t)argc + 5, sizeof(char *));
    if (args == NULL)
        return NULL;
    static char np[16];
    snprintf(np, sizeof(np), "%d", world);
    int n = 0;
    args[n++] = argv[0];
    args[n++] = "--np";
    args[n++] = np;
    if (!has_backend) {
        args[n++] = "--backend";
        args[n++] = "mpi";
    }
    for (int i = 1; i < argc; i++)
        args[n++] = argv[i];
    *argc_p = n;
    return args;
}

/* Parses the job as `distlab run` (or `bench`) would, then runs it in
 * mpirun's world (lab/run/runner.h). */
static int self_launched(int argc, char **argv)
{
    int me = 0, world = 0;
    lab_mpirun_world(&me, &world, NULL);
    bool bench = argc > 1 && strcmp(argv[1], "bench") == 0;
    if (argc > 1 && (bench || strcmp(argv[1], "run") == 0)) {
        argc--;
        argv++;
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--np") == 0 || strncmp(argv[i], "--np=", 5) == 0)
            return me == 0 ? cli_error("--np comes from mpirun here (-np %d)", world) : 2;
    int n_args = 0;
    char **args = job_args(argc, argv, world, &n_args);
    if (args == NULL)
        return 1;
    /* Every rank parses the same words; rank 0 alone says what is wrong. */
    int saved = dup(STDERR_FILENO);
    if (me != 0 && freopen("/dev/null", "w", stderr) == NULL)
        return 1;
    lab_job_t job;
    lab_runner_opts_t ro;
    int code = cli_parse_run(n_args, args, bench, &job, &ro);
    free(args);
    if (me != 0) {
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
    }
    close(saved);
    if (code >= 0)
        return code;
    /* DISTLAB_TIMEOUT is the job's timeout unless --timeout says otherwise,
     * as it is for every rank that distlab starts (main checked its form). */
    bool has_timeout = false;
    for (int i = 1; i < argc; i++)
        has_timeout = has_timeout || strcmp(argv[i], "--timeout") == 0 ||
                      strncmp(argv[i], "--timeout=", 10) == 0;
    double env_timeout = 0;
    char why[DL_QUOTE_BUF + 128];
    if (!has_timeout && dl_comm_env_timeout(&env_timeout, why, sizeof(why)) == DL_OK &&
        env_timeout > 0)
        job.timeout_s = env_timeout;
    return lab_runner_run_under_mpirun(&job, &ro);
}

int cli_rank(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc == 1)
        return lab_rank_main();
    const char *ctl = getenv("DISTLAB_CONTROL");
    if (ctl != NULL && ctl[0] != '\0')
        return cli_error("a rank that distlab started takes no arguments; it reads its "
                         "environment");
    if (!lab_mpirun_env_present()) {
        /* `distlab rank bench all_reduce` is `distlab bench all_reduce`. */
        const char *cmd = "run", *prim = argv[1];
        if (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "bench") == 0) {
            cmd = argv[1];
            prim = argc > 2 ? argv[2] : "PRIMITIVE";
        }
        return cli_error("`distlab rank PRIMITIVE ...` runs under a launcher of your own "
                         "(mpirun -np 4 distlab rank all_reduce); here, use `distlab %s %s ...`",
                         cmd, prim);
    }
    if (!lab_runner_can_join_mpirun())
        return cli_error("this distlab was built without Open MPI, so it cannot join mpirun's "
                         "world");
    return self_launched(argc, argv);
}
