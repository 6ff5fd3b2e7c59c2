/* Runs a function on N real rank processes started from env:// variables,
 * as any launcher would start them, and reports whether every rank passed. */
#ifndef TEST_WORLD_H
#define TEST_WORLD_H

#include "distlab/comm.h"

/* Returns 0 when the rank's checks passed. */
typedef int (*world_fn_t)(dl_comm_t *comm, void *arg);

/* Forks n ranks; each runs fn and exits with its result. Returns the number
 * of ranks that failed (a rank killed by a signal counts), or -1 when the
 * world did not finish within timeout_s. */
int world_run(int n, world_fn_t fn, void *arg, double timeout_s);

/* Runs in a rank's process before it joins the world (to set its
 * environment: DISTLAB_HOST_ID, DISTLAB_TRANSPORT, ...). */
typedef void (*world_setup_fn_t)(int rank, void *arg);

/* world_run with a setup function. When the rank cannot join the world,
 * fn is called with comm NULL to judge that (its result is the rank's). */
int world_run_setup(int n, world_setup_fn_t setup, world_fn_t fn, void *arg, double timeout_s);

/* A TCP port on the loopback that was free a moment ago. */
int world_free_port(void);

/* The number of CUDA devices, asked in a child process so that this one
 * has not touched CUDA before it forks its ranks; why gets the reason when
 * there is none. */
int world_gpu_count(char *why, size_t cap);

/* Inside a rank: fails the rank with a message when cond is false. */
#define RANK_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#endif
