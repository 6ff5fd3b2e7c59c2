/* The workers of one node: the user's COMMAND, started once per local rank
 * with torchrun's environment, each in a session and process group of its
 * own, and stopped group by group.
 *
 * A watchdog process, forked before anything else, holds the read end of a
 * pipe from the agent and the list of the workers' process groups: when the
 * agent dies, even by SIGKILL, the pipe reads end-of-file and the watchdog
 * kills every group still listed. So no worker (nor anything it started in
 * its group) outlives its agent. */
#ifndef LAB_ELASTIC_WORKERS_H
#define LAB_ELASTIC_WORKERS_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "distlab/status.h"

/* What torchrun puts in each worker's environment. */
typedef struct {
    int rank, local_rank, world_size, local_world_size;
    int group_rank, group_world_size;
    const char *master_addr;
    int master_port;
    int restart_count, max_restarts;
    const char *run_id;
    bool omp_one; /* OMP_NUM_THREADS=1 (several workers, and the user set none) */
} lab_worker_env_t;

typedef struct {
    int local_rank, rank;
    int pid;
    bool spawned, exited, closed;
    int exit_code; /* when term_signal is 0 */
    int term_signal;
    double exit_time;   /* monotonic seconds */
    char exit_wall[32]; /* local time, "2024-05-01_12:00:00" */
    struct lab_workers *ws;
    uv_process_t proc;
} lab_worker_t;

typedef struct lab_workers {
    uv_loop_t *loop;
    int watchdog_fd; /* -1: none */
    int n;
    lab_worker_t *w;
    /* Called when a worker exits (after its fields are set). */
    void (*on_exit)(void *arg, lab_worker_t *w);
    void *on_exit_arg;
} lab_workers_t;

void lab_workers_init(lab_workers_t *ws, uv_loop_t *loop);
/* Forks the watchdog: call before any thread starts. false with errno. */
bool lab_workers_watchdog(lab_workers_t *ws);

/* Where file is found, as execvp looks: itself when it holds a '/', else
 * on PATH. 0 when it is an executable file there; EACCES when only a
 * directory or a file without execute permission is; ENOENT when nothing. */
int lab_workers_find(const char *file, char *path, size_t cap);

/* Starts n workers running argv, worker i with env[i]. On failure, one
 * line in why; the workers already started are left for lab_workers_signal. */
dl_status_t lab_workers_start(lab_workers_t *ws, char *const *argv, int n,
                              const lab_worker_env_t *env, char *why, size_t cap);
/* Sends sig to every worker's process group, including groups whose
 * leader has exited (what it started may still run). */
void lab_workers_signal(lab_workers_t *ws, int sig);
/* Every worker exited, reaped and closed, and every group empty. */
bool lab_workers_quiet(lab_workers_t *ws);
/* Whether every worker has exited. */
bool lab_workers_all_exited(const lab_workers_t *ws);
/* The worker that failed first (non-zero exit or a signal), or NULL. */
const lab_worker_t *lab_workers_first_failure(const lab_workers_t *ws);
/* Forgets the workers (call once quiet; a worker still running is only
 * left to the watchdog). */
void lab_workers_clear(lab_workers_t *ws);
/* Closes the pipe: the watchdog kills what is left and exits. */
void lab_workers_release(lab_workers_t *ws);

#endif
