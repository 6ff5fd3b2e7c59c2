/* The controller: one libuv loop that serves the rendezvous store, spawns
 * the rank processes (`distlab rank`) and observes their exits, and holds
 * one framed control connection per rank. What the events mean is the
 * business of whoever drives it (a job runner, the shell). */
#ifndef LAB_CONTROLLER_H
#define LAB_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "distlab/frame.h"
#include "distlab/store.h"

typedef struct lab_ctrl lab_ctrl_t;

typedef struct {
    /* A frame from a rank that has said hello (hello itself included). */
    void (*on_event)(lab_ctrl_t *c, int rank, const dl_frame_t *f, void *arg);
    /* A rank's process ended. signal is 0 when it exited by itself. */
    void (*on_exit)(lab_ctrl_t *c, int rank, int64_t status, int signal, void *arg);
} lab_ctrl_cbs_t;

typedef struct {
    int rank;
    int pid;
    bool connected;
    bool exited;
    int64_t exit_status;
    int term_signal;
} lab_rank_info_t;

typedef struct {
    int np;
    const char *exe;  /* the distlab binary (NULL: this process's own) */
    double timeout_s; /* passed to ranks as DISTLAB_TIMEOUT */
} lab_ctrl_opts_t;

dl_status_t lab_ctrl_start(uv_loop_t *loop, const lab_ctrl_opts_t *opts, const lab_ctrl_cbs_t *cbs,
                           void *arg, lab_ctrl_t **c_p);
int lab_ctrl_np(const lab_ctrl_t *c);
const lab_rank_info_t *lab_ctrl_rank(const lab_ctrl_t *c, int rank);
/* Queues a frame to a rank. */
dl_status_t lab_ctrl_send(lab_ctrl_t *c, int rank, const json_t *msg);
void lab_ctrl_kill(lab_ctrl_t *c, int rank, int sig);
void lab_ctrl_kill_all(lab_ctrl_t *c, int sig);
bool lab_ctrl_all_exited(const lab_ctrl_t *c);
/* "was killed by signal 9 (SIGKILL)" or "exited with code 1". */
void lab_ctrl_describe_exit(char *buf, size_t cap, int64_t status, int sig);
/* Closes every handle; the loop must run afterwards to release them, and
 * then c is freed. Kills ranks that are still alive. */
void lab_ctrl_close(lab_ctrl_t *c);

#endif
