/* `distlab launch`: the elastic agent, one per node, in the manner of
 * torchrun. It rendezvouses with the other nodes' agents (rendezvous.h),
 * starts this node's workers with torchrun's environment (workers.h),
 * watches them, and on a failure anywhere stops them and starts again in a
 * new round, counting against max_restarts; a node that joins or leaves
 * changes the world at the next round without counting. docs/elastic.md
 * has the whole story. */
#ifndef LAB_ELASTIC_AGENT_H
#define LAB_ELASTIC_AGENT_H

#include <stdbool.h>

#include "lab/elastic/rendezvous.h"

typedef struct {
    int min_nodes, max_nodes;  /* --nnodes (1:1) */
    int nproc;                 /* --nproc-per-node (1) */
    int max_restarts;          /* --max-restarts (0) */
    const char *run_id;        /* --rdzv-id ("none") */
    const char *host;          /* --rdzv-endpoint (127.0.0.1:29400) */
    int port;                  /* 0: a free one (--standalone) */
    lab_rdzv_conf_t conf;      /* --rdzv-conf */
    double monitor_interval_s; /* --monitor-interval (0.1) */
    double stop_timeout_s;     /* --stop-timeout: SIGTERM, then SIGKILL after this (5) */
    char **argv;               /* COMMAND and its arguments, NULL-terminated */
} lab_elastic_opts_t;

void lab_elastic_opts_init(lab_elastic_opts_t *o);

/* Runs the agent until the run ends: 0 when every worker of the last round
 * on every node exited 0; 1 when a failure outlasted the restarts (after
 * the root-cause report) or the rendezvous failed (one line); 127 when
 * COMMAND cannot be found, 126 when it is no executable file; 128 + N
 * after signal N (the workers stopped). */
int lab_elastic_run(const lab_elastic_opts_t *o);

#endif
