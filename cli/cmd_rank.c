/* `distlab rank`: the rank process.
 *
 * Started by distlab (run, bench, shell, or the mpirun that distlab starts
 * for the mpi backend), it takes no arguments and reads its session from
 * the environment. Started by a launcher of the user's own with a job,
 *
 *     mpirun -np 4 distlab rank all_reduce --count 4
 *
 * it runs that job like `distlab run`: rank 0 first forks a controller for
 * it (before MPI starts, as forking after MPI_Init is unsafe), and every
 * rank learns where that controller listens through MPI_Bcast. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "distlab/comm.h"
#include "distlab/log.h"
#include "dl_config.h"
#include "lab/ctrl/mpirun.h"
#include "lab/rank/rank.h"

#if DL_HAVE_MPI
#include <mpi.h>
#endif

static const char usage[] =
    "usage: distlab rank\n"
    "       mpirun -np N distlab rank [run|bench] PRIMITIVE [run or bench flags]\n"
    "\n"
    "The rank process. Started by distlab, it reads RANK, WORLD_SIZE, MASTER_ADDR,\n"
    "MASTER_PORT and DISTLAB_CONTROL (the controller's address) from the\n"
    "environment. Started by your own mpirun with a primitive, it runs that job\n"
    "as `distlab run` (or `distlab bench`) would, on the mpi backend unless\n"
    "--backend says otherwise, and rank 0 prints the report.\n";

#if DL_HAVE_MPI

#define SESSION_CAP 2048

/* In the controller's process: the session, for rank 0 to pass on. */
static void tell_rank0(lab_ctrl_t *c, void *arg)
{
    int fd = *(int *)arg;
    lab_rank_env_t e;
    lab_ctrl_rank_env(c, &e);
    char s[SESSION_CAP];
    int n = snprintf(s, sizeof(s),
                     "DISTLAB_CONTROL=%s:%d\nDISTLAB_STORE=%s:%d\nMASTER_ADDR=%s\nMASTER_PORT=%d\n"
                     "DISTLAB_TOKEN=%s\nDISTLAB_WORLD=%s\nDISTLAB_TIMEOUT=%g\nDISTLAB_BACKEND=%s\n",
                     e.control_host, e.control_port, e.store_host, e.store_port, e.store_host,
                     e.store_port, e.token, e.world, e.timeout_s,
                     e.backend != NULL ? e.backend : "builtin");
    if (n > 0 && n < (int)sizeof(s) && write(fd, s, (size_t)n) != n)
        perror("distlab rank: telling rank 0 the session");
    close(fd);
}

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

static int self_launched(int argc, char **argv)
{
    int world = atoi(getenv("OMPI_COMM_WORLD_SIZE"));
    int me = atoi(getenv("OMPI_COMM_WORLD_RANK"));
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
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

    int pipefd[2] = {-1, -1};
    pid_t ctl = -1;
    char session[SESSION_CAP] = "";
    if (me == 0) {
        if (pipe(pipefd) != 0) {
            perror("distlab rank: pipe");
            return 1;
        }
        fflush(NULL);
        ctl = fork();
        if (ctl == 0) {
            close(pipefd[0]);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            ro.attach = true;
            /* Ranks on other hosts must reach the controller. */
            ro.attach_any_host = ls != NULL && atoi(ls) < world;
            ro.started = tell_rank0;
            ro.started_arg = &pipefd[1];
            _exit(lab_runner_run(&job, &ro));
        }
        close(pipefd[1]);
        size_t len = 0;
        ssize_t n;
        while (ctl > 0 && len < sizeof(session) - 1 &&
               (n = read(pipefd[0], session + len, sizeof(session) - 1 - len)) > 0)
            len += (size_t)n;
        session[len] = '\0';
        close(pipefd[0]);
    }
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    MPI_Bcast(session, sizeof(session), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (session[0] == '\0') {
        if (me == 0)
            fprintf(stderr, "distlab rank: the controller for this job did not start\n");
        MPI_Finalize();
        return 1;
    }
    for (char *line = strtok(session, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (eq != NULL) {
            *eq = '\0';
            setenv(line, eq + 1, 1);
        }
    }
    code = lab_rank_main();
    if (me == 0) {
        /* The controller prints the report once every rank has gone. */
        int status = 0;
        if (waitpid(ctl, &status, 0) == ctl)
            code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    MPI_Finalize();
    return code;
}
#endif

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
#if DL_HAVE_MPI
    return self_launched(argc, argv);
#else
    return cli_error("this distlab was built without Open MPI, so it cannot join mpirun's world");
#endif
}
