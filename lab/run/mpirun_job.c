/* A job under the user's own mpirun (lab/run/runner.h):
 *
 *     mpirun -np 4 distlab rank all_reduce --count 4
 *
 * Every process mpirun starts is a rank. Rank 0 first forks a controller for
 * the job (the runner, attached: it starts no ranks of its own), before MPI
 * starts, as forking after MPI_Init is unsafe. The controller writes the
 * session's variables (its ports, the token, the world) to a pipe; rank 0
 * reads them and passes them to every rank with MPI_Bcast; each rank sets
 * them and runs as any rank does. The controller prints the report once
 * every rank has gone, and rank 0 exits with its code. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distlab/backends.h"
#include "dl_config.h"
#include "lab/ctrl/mpirun.h"
#include "lab/rank/rank.h"
#include "lab/run/runner.h"

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

int lab_runner_run_under_mpirun(const lab_job_t *job, const lab_runner_opts_t *opts)
{
    int me = 0, world = 0, local = 0;
    lab_mpirun_world(&me, &world, &local);
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
            lab_runner_opts_t ro = *opts;
            ro.launch.attach = true;
            /* Ranks on other hosts must reach the controller. */
            ro.launch.attach_any_host = local > 0 && local < world;
            ro.started = tell_rank0;
            ro.started_arg = &pipefd[1];
            _exit(lab_runner_run(job, &ro));
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
    /* MPI starts through the mpi module; without it, every rank says why
     * (each fails alike, and mpirun ends the job). */
    char why[600];
    if (dl_mpi_join(session, sizeof(session), why, sizeof(why)) != DL_OK) {
        fprintf(stderr, "distlab rank: cannot join mpirun's world: %s\n", why);
        if (ctl > 0)
            kill(ctl, SIGTERM);
        return 1;
    }
    if (session[0] == '\0') {
        if (me == 0)
            fprintf(stderr, "distlab rank: the controller for this job did not start\n");
        dl_mpi_leave();
        return 1;
    }
    for (char *line = strtok(session, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (eq != NULL) {
            *eq = '\0';
            setenv(line, eq + 1, 1);
        }
    }
    int code = lab_rank_main();
    if (me == 0) {
        /* The controller prints the report once every rank has gone. */
        int status = 0;
        if (waitpid(ctl, &status, 0) == ctl)
            code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    dl_mpi_leave();
    return code;
}

#else

int lab_runner_run_under_mpirun(const lab_job_t *job, const lab_runner_opts_t *opts)
{
    (void)job;
    (void)opts;
    fprintf(stderr, "distlab: this distlab was built without Open MPI, so it cannot join "
                    "mpirun's world\n");
    return 2;
}

#endif

bool lab_runner_can_join_mpirun(void)
{
    return DL_HAVE_MPI != 0;
}
