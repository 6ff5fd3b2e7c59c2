/* The controller: one libuv loop that serves the rendezvous store, holds
 * one framed control connection per rank, and observes the ranks' exits.
 * Launchers (lab/ctrl/launch.h) start the rank processes (`distlab rank`)
 * and report how they end: locally, under mpirun, on workers, or not at all
 * when the user's own launcher starts them. What the events mean is the
 * business of whoever drives it (a job runner, the shell).
 *
 * Every connection it accepts, to the control port and to the store, must
 * prove that it holds the session's token (distlab/auth.h); the ranks find
 * it in DISTLAB_TOKEN. */
#ifndef LAB_CONTROLLER_H
#define LAB_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "distlab/frame.h"
#include "distlab/store.h"
#include "lab/ctrl/launch.h"
#include "lab/ctrl/spawn.h"

typedef struct lab_ctrl lab_ctrl_t;

typedef struct {
    /* A frame from a rank that has said hello (hello itself included). */
    void (*on_event)(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg);
    /* A rank's process ended. signal is 0 when it exited by itself. */
    void (*on_exit)(lab_ctrl_t *c, int rank, int64_t status, int signal, void *arg);
    /* A rank's info->unresponsive changed: it stopped answering (see
     * "Liveness" in lab/ctrl/controller.c), or answers again. */
    void (*on_unresponsive)(lab_ctrl_t *c, int rank, void *arg);
    /* Whether every rank but this one has finished what it was given, so
     * that this one alone holds the work up; lets a rank that beats but
     * makes no progress be declared stuck. NULL: never. */
    bool (*alone_busy)(lab_ctrl_t *c, int rank, void *arg);
} lab_ctrl_cbs_t;

typedef struct {
    int rank;
    int pid;
    bool connected;
    bool exited;
    int64_t exit_status;
    int term_signal;
    /* Where it runs: worker 0 is this process's host, otherwise the worker
     * that started it on host (lab_launch_placed). */
    int worker;
    char host[64];
    /* It is gone without an exit of its own to tell (its worker went away,
     * mpirun stopped it, its connection closed): how. */
    char lost[96];

    /* Liveness (lab/ctrl/controller.c). */
    bool busy;            /* its last beat said it runs a job or a statement */
    long long progress;   /* its last beat's progress count */
    uint64_t progress_ms; /* when that count, or any other event, last moved */
    bool stopped;         /* on this host, and /proc says it is stopped */
    uint64_t stopped_ms;  /* since when */
    bool unresponsive;    /* declared not responding */
    bool stuck;           /* ... because it beats without progress */
    double quiet_s;       /* how long it had not answered when declared */
} lab_rank_info_t;

/* Starts a world: the store, the control port, and the ranks, by the
 * launcher the options call for (and opts->workers' after them). */
dl_status_t lab_ctrl_start(uv_loop_t *loop, const lab_launch_opts_t *opts,
                           const lab_ctrl_cbs_t *cbs, void *arg, lab_ctrl_t **c_p);
/* Every rank of the world, the workers' included. */
int lab_ctrl_np(const lab_ctrl_t *c);
const lab_rank_info_t *lab_ctrl_rank(const lab_ctrl_t *c, int rank);
/* Queues a frame to a rank. */
dl_status_t lab_ctrl_send(lab_ctrl_t *c, int rank, const json_t *msg);
void lab_ctrl_kill(lab_ctrl_t *c, int rank, int sig);
/* The session's timeout changed (`set timeout`): the liveness threshold
 * follows it. */
void lab_ctrl_set_timeout(lab_ctrl_t *c, double timeout_s);
/* "not responding after 5.0 s (stopped)": why an unresponsive rank is
 * one, for reports. */
void lab_ctrl_describe_unresponsive(const lab_ctrl_t *c, int rank, char *buf, size_t cap);
void lab_ctrl_kill_all(lab_ctrl_t *c, int sig);
bool lab_ctrl_all_exited(const lab_ctrl_t *c);
/* "was killed by signal 9 (SIGKILL)" or "exited with code 1". */
void lab_ctrl_describe_exit(char *buf, size_t cap, int64_t status, int sig);
/* "rank 3 (pid 4242)", or "rank 3 (pid 4242 on hostb, worker 1)". */
void lab_ctrl_describe_rank(const lab_ctrl_t *c, int rank, char *buf, size_t cap);
/* How a rank that exited ended: lab_ctrl_describe_exit's words, or "was
 * lost with worker 1 on hostb (connection closed)". */
void lab_ctrl_describe_rank_exit(const lab_ctrl_t *c, int rank, char *buf, size_t cap);
/* The variables a rank needs to join this world (the rank fields are
 * left 0); the strings belong to c. */
void lab_ctrl_rank_env(const lab_ctrl_t *c, lab_rank_env_t *e);
/* Whether the ranks were started by mpirun (then a rank's death ends the
 * whole world, as mpirun stops the job). */
bool lab_ctrl_under_mpirun(const lab_ctrl_t *c);
/* Closes every handle; the loop must run afterwards to release them, and
 * then c is freed. Kills ranks that are still alive. */
void lab_ctrl_close(lab_ctrl_t *c);

#endif
