/* How a world's ranks are launched: the options that run, bench and shell
 * share, and the launchers that start the ranks.
 *
 * The controller (lab/ctrl/controller.h) owns what every world has: the
 * control port, the rendezvous store, one control link per rank, the ranks'
 * exits and the kills. Starting the rank processes is a launcher's job. Each
 * launcher fills an ops table and registers it by name:
 *
 *   local    spawns `distlab rank` processes on this host (lab/ctrl/spawn.h)
 *   mpirun   one mpirun starts every rank, for the mpi backend (mpirun.h)
 *   attach   starts nothing: a launcher of the user's starts the ranks, and
 *            they join with the session's variables (lab_ctrl_rank_env)
 *   remote   the workers of `distlab shell --listen` add their ranks after
 *            the local ones (lab/remote/remote.h registers it)
 *
 * A world has one main launcher, picked by name from the options (attach,
 * the mpi backend, else local), for ranks 0 .. np-1, and at most one more
 * (opts->workers) that brings ranks of its own after those. A launcher
 * reports what happens to its ranks through lab_launch_placed, _started and
 * _exited below. */
#ifndef LAB_LAUNCH_H
#define LAB_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "distlab/status.h"
#include "lab/ctrl/spawn.h"

typedef struct lab_ctrl lab_ctrl_t;
typedef struct lab_launcher_ops lab_launcher_ops_t;

/* A launcher with an object of its own that outlives a world (the workers
 * that have joined a shell): its ops, and the object they are given. */
typedef struct {
    const lab_launcher_ops_t *ops;
    void *self;
} lab_launcher_t;

/* How a world's ranks are launched, for `distlab run`, `bench`, `shell` and
 * a job under the user's mpirun alike. */
typedef struct {
    int np;           /* ranks started here (a workers launcher's come on top) */
    double timeout_s; /* every wait of the ranks (DISTLAB_TIMEOUT), and liveness */
    /* The ranks' backend (DISTLAB_BACKEND): "builtin" (or NULL), "mpi" or
     * "nccl". The mpi backend's ranks are started by one mpirun, on the hosts
     * of hostfile or hosts when given. */
    const char *backend;
    /* The builtin backend's data transport (DISTLAB_TRANSPORT): "auto",
     * "shm" or "tcp"; NULL: as inherited. */
    const char *transport;
    const char *hostfile; /* mpirun --hostfile */
    const char *hosts;    /* mpirun --host (h1,h2:2,...) */
    /* Start no ranks: a launcher of the user's (their own mpirun) starts
     * them. A rank whose control connection closes counts as ended. */
    bool attach;
    /* attach: listen on every interface, for ranks on other hosts. */
    bool attach_any_host;
    /* Ranks from elsewhere after the np local ones; NULL: none. */
    const lab_launcher_t *workers;
    /* --trace FILE: the runner or the shell turns tracing on in the ranks
     * and writes their collectives to FILE as a Chrome/Perfetto trace
     * (lab/session/trace.h); NULL: no trace. Launchers ignore it. */
    const char *trace;
} lab_launch_opts_t;

/* What a launcher asks of the world before it starts. Fields left NULL (or
 * false) leave the controller's defaults. */
typedef struct {
    int nranks;            /* ranks it brings by itself, beyond np (workers) */
    const char *token;     /* the session's token; NULL: a fresh one */
    const char *bind_host; /* where the control port and store listen; NULL: 127.0.0.1 */
    /* Ranks on other hosts reach the ports by this host's name (or
     * DISTLAB_HOST_ADDR), not by the address they listen on. */
    bool by_name;
    const char *host_addr; /* DISTLAB_HOST_ADDR of the local ranks */
} lab_launch_plan_t;

/* One world, as a launcher's start sees it. */
typedef struct {
    uv_loop_t *loop;
    int base, n;     /* its ranks: base .. base+n-1 */
    const char *exe; /* the distlab binary */
    const lab_launch_opts_t *opts;
    const lab_rank_env_t *env; /* the world's; the rank fields are 0 */
} lab_launch_world_t;

struct lab_launcher_ops {
    const char *name;
    /* It starts the whole world itself: no other launcher adds ranks. */
    bool whole_world;
    /* Its ranks are placed by someone else: each one's hello says on which
     * host it landed. */
    bool ranks_say_host;
    /* Fills p (zeroed first) from self and the options; NULL: asks nothing. */
    void (*plan)(void *self, const lab_launch_opts_t *opts, lab_launch_plan_t *p);
    /* Starts w's ranks in c's world; *state_p receives what the other ops
     * are given. On failure (logged) *state_p may still be set: it is closed
     * as usual. */
    dl_status_t (*start)(void *self, lab_ctrl_t *c, const lab_launch_world_t *w, void **state_p);
    /* Signals one of its ranks, which has not exited. */
    void (*kill)(void *state, int rank, int sig);
    /* Before every rank is signalled (by kill): what the launcher itself
     * must do; NULL: nothing. */
    void (*kill_all)(void *state, int sig);
    /* Whether every rank it started has ended (and been reported). */
    bool (*all_exited)(void *state);
    /* A rank's control connection closed; NULL: its exit is the news. */
    void (*disconnected)(void *state, int rank);
    /* The world is over: stop its ranks and report nothing more; state is
     * freed once its handles are (the loop must run). */
    void (*close)(void *state);
};

/* The launchers by name. lab_launcher_register adds one (another room's);
 * registering a name again replaces it. At most LAB_LAUNCHERS_MAX. */
#define LAB_LAUNCHERS_MAX 8
dl_status_t lab_launcher_register(const lab_launcher_ops_t *ops);
const lab_launcher_ops_t *lab_launcher_find(const char *name);
/* The name of the main launcher the options call for: "attach", "mpirun"
 * (the mpi backend) or "local". */
const char *lab_launch_launcher_name(const lab_launch_opts_t *opts);
/* The ranks a launcher brings by itself (its plan's nranks); 0 for NULL. */
int lab_launcher_nranks(const lab_launcher_t *l);

/* ---- for launchers: what happens to their ranks ---- */

/* Rank runs on host; worker > 0 numbers the worker that started it. */
void lab_launch_placed(lab_ctrl_t *c, int rank, int worker, const char *host);
void lab_launch_started(lab_ctrl_t *c, int rank, int pid);
/* Its process ended with status or signal sig; or, with lost, it is gone
 * and lost says how (its worker went away, mpirun stopped it, ...). Told
 * to the controller's owner like any exit; a rank ends once. */
void lab_launch_exited(lab_ctrl_t *c, int rank, int64_t status, int sig, const char *lost);

#endif
