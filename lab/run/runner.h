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
    bool json;             /* bench: print JSON instead of the table */
    const char *transport; /* DISTLAB_TRANSPORT for the ranks; NULL: inherited */
    const char *hostfile;  /* mpi backend: mpirun --hostfile */
    const char *hosts;     /* mpi backend: mpirun --host */
    /* Ranks started by the user's own launcher join (lab_ctrl_opts_t's
     * attach): started is called once the world listens, to tell them how. */
    bool attach, attach_any_host;
    void (*started)(lab_ctrl_t *c, void *arg);
    void *started_arg;
} lab_runner_opts_t;

/* Returns the process exit code: 0 when every rank finished the job. */
int lab_runner_run(const lab_job_t *job, const lab_runner_opts_t *opts);

#endif
