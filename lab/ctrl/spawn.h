/* Starting `distlab rank` processes: the environment a rank reads and the
 * libuv spawn, shared by the controller (local ranks) and `distlab worker`
 * (a session's ranks on another host). */
#ifndef LAB_SPAWN_H
#define LAB_SPAWN_H

#include <stdbool.h>

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
    const char *backend;   /* DISTLAB_BACKEND; NULL: builtin */
    /* Leave RANK and LOCAL_RANK out: a launcher (mpirun) numbers the ranks. */
    bool launcher_numbers;
    uv_pipe_t *output; /* its standard error (a rank prints nothing else); NULL: ours */
} lab_rank_env_t;

/* Spawns `exe rank` with e's variables over this process's environment
 * (ours win over inherited ones of the same name); standard input is
 * closed, its output goes to our standard error (or e->output). Returns a
 * libuv error code; on failure the handle must still be closed (libuv
 * keeps it). */
/* The environment of a rank: ours over this process's (ours win over
 * inherited variables of the same name). The strings live in vars, which
 * must hold LAB_SPAWN_MAX_VARS entries; *names_p (may be NULL) receives the
 * names of ours, for a launcher that forwards them (mpirun -x). Returns a
 * calloc'd NULL-terminated array (free it, not its strings) or NULL. */
#define LAB_SPAWN_MAX_VARS 16
#define LAB_SPAWN_VAR_LEN  320
char **lab_spawn_env(const lab_rank_env_t *e, char vars[][LAB_SPAWN_VAR_LEN], int *n_vars_p);

int lab_spawn_rank(uv_loop_t *loop, uv_process_t *proc, const char *exe, const lab_rank_env_t *e,
                   uv_exit_cb exit_cb);

/* The distlab binary to start ranks from: DISTLAB_EXE, or this process's
 * own executable. */
int lab_spawn_exe(char *buf, size_t cap);

#endif
