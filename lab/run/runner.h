/* Runs one job (`distlab run`, `distlab bench`) on freshly spawned ranks:
 * spawn, wait for every rank to be ready, send the job, fold the events,
 * stop the ranks, print the report. A rank that dies, or a run that outlives
 * its timeout, ends the job with a report that names the rank and where it
 * was; every rank process is gone when this returns. */
#ifndef LAB_RUNNER_H
#define LAB_RUNNER_H

#include <stdbool.h>

#include "lab/ctrl/controller.h"
#include "lab/proto/job.h"

typedef struct {
    bool json; /* bench: print JSON instead of the table */
    /* How the ranks are launched. The job says how many, on which backend,
     * with which timeout: those fields of launch are the job's. */
    lab_launch_opts_t launch;
    /* Called once the world listens: with launch.attach, to tell the ranks
     * that the user's launcher starts how to join. */
    void (*started)(lab_ctrl_t *c, void *arg);
    void *started_arg;
} lab_runner_opts_t;

/* Returns the process exit code: 0 when every rank finished the job. */
int lab_runner_run(const lab_job_t *job, const lab_runner_opts_t *opts);

/* Runs job from inside a world that the user's own mpirun started
 * (lab_mpirun_env_present): this process is one of its ranks, rank 0 also
 * forks the controller that prints the report (lab/run/mpirun_job.c).
 * Returns this rank's exit code (rank 0: the report's). */
int lab_runner_run_under_mpirun(const lab_job_t *job, const lab_runner_opts_t *opts);
/* Whether this binary can join mpirun's world (it was built with Open MPI). */
bool lab_runner_can_join_mpirun(void);

#endif
