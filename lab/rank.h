/* The rank runtime: `distlab rank`. It connects to the controller's control
 * channel, brings up its communicator from env:// variables, then runs the
 * jobs it is sent and reports events up. */
#ifndef LAB_RANK_H
#define LAB_RANK_H

#include <jansson.h>

#include "distlab/comm.h"
#include "lab/job.h"

typedef struct {
    int fd; /* control channel */
    dl_comm_t *comm;
    int rank, size;
    lab_job_t job;
    int fault_rank, fault_step; /* DISTLAB_FAULT: kill this rank at this step */
    int steps_seen;
} lab_rank_t;

/* main() of `distlab rank`: returns the process exit code. */
int lab_rank_main(void);

/* Sends an event up (takes msg's reference). */
dl_status_t lab_rank_emit(lab_rank_t *r, json_t *msg, const void *blob, size_t len);
dl_status_t lab_rank_emit_snap(lab_rank_t *r, const char *label, const char *name, int index,
                               int of, const dl_tensor_t *t);
dl_status_t lab_rank_note(lab_rank_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The jobs (lab/run_rank.c, lab/bench_rank.c): DL_OK, or an error already
 * reported in comm's last error / an error event. */
dl_status_t lab_run_rank(lab_rank_t *r);
dl_status_t lab_bench_rank(lab_rank_t *r);

#endif
