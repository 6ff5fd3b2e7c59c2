/* Starting `distlab rank` processes: the environment a rank reads and the
 * libuv spawn, shared by the controller (local ranks) and `distlab worker`
 * (a session's ranks on another host). */
#ifndef LAB_SPAWN_H
#define LAB_SPAWN_H

#include <uv.h>

typedef struct {
    int rank, world_size;
    int local_rank, local_world_size;
    const char *control_host; /* the controller's control port */
    int control_port;
    const char *store_host; /* the rendezvous store */
    int store_port;
    const char *token;     /* DISTLAB_TOKEN */
    const char *world;     /* DISTLAB_WORLD: the world's key prefix in the store */
    double timeout_s;      /* DISTLAB_TIMEOUT */
    const char *transport; /* DISTLAB_TRANSPORT; NULL: whatever is inherited */
    const char *host_addr; /* DISTLAB_HOST_ADDR; NULL: whatever is inherited */
    uv_pipe_t *output;     /* its standard error (a rank prints nothing else); NULL: ours */
} lab_rank_env_t;

/* Spawns `exe rank` with e's variables over this process's environment
 * (ours win over inherited ones of the same name); standard input is
 * closed, its output goes to our standard error (or e->output). Returns a
 * libuv error code; on failure the handle must still be closed (libuv
 * keeps it). */
int lab_spawn_rank(uv_loop_t *loop, uv_process_t *proc, const char *exe, const lab_rank_env_t *e,
                   uv_exit_cb exit_cb);

/* The distlab binary to start ranks from: DISTLAB_EXE, or this process's
 * own executable. */
int lab_spawn_exe(char *buf, size_t cap);

#endif
