/* Remote ranks: the shell's side of `distlab worker`.
 *
 * `distlab shell --listen ADDR:PORT` listens for workers. A worker connects,
 * proves that it holds the session's token (the challenge of distlab/auth.h;
 * the token never crosses the wire) and says how many ranks it brings. From
 * then on every world the controller starts (lab/ctrl/controller.h) with
 * lab_remote_launcher as its workers puts the workers' ranks after the
 * local ones, in the order the workers joined; each
 * worker starts its share with libuv on its host, pointing them at the
 * controller's control port and store, and relays how each one ends.
 *
 * The shell <-> worker protocol, framed JSON (distlab/frame.h), after the
 * challenge (the worker's answer carries "role":"worker", "nproc", "host",
 * "pid"; the welcome carries "worker", its number):
 *
 *   down {"type":"world","gen","base","size","control_port","store_port",
 *         "world","timeout"[,"transport"]}
 *                      start ranks base .. base+nproc-1 of a world of size
 *                      (killing those of an older world first)
 *   down {"type":"kill","gen","rank","signal"}   signal one of them
 *   down {"type":"stop","gen"}                   kill the world's ranks
 *   down {"type":"bye"}                          the session is over
 *   up   {"type":"started","gen","rank","pid"}
 *   up   {"type":"exit","gen","rank","pid","status","signal"}
 *
 * gen numbers the worlds, so the end of a rank of an older world is never
 * taken for one of the current world. A worker that goes away takes its
 * ranks with it (they die with their parent); they are reported as lost. */
#ifndef LAB_REMOTE_H
#define LAB_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "distlab/auth.h"
#include "lab/ctrl/launch.h"

typedef struct lab_remote lab_remote_t;

typedef struct {
    const char *host; /* where to listen for workers */
    int port;         /* 0 picks a free one */
    const char *token;
    /* A worker joined: the world should be restarted to include it. Called
     * from the loop, never from inside another lab_remote call. */
    void (*on_change)(void *arg);
    /* A line for the person at the shell (a worker joined or left, a
     * connection was refused). */
    void (*say)(void *arg, const char *line);
    void *arg;
} lab_remote_opts_t;

dl_status_t lab_remote_start(uv_loop_t *loop, const lab_remote_opts_t *opts, lab_remote_t **r_p);
/* The workers as a launcher, for lab_launch_opts_t's workers: each world
 * places their ranks after the local ones. NULL for NULL. */
const lab_launcher_t *lab_remote_launcher(lab_remote_t *r);
/* The port actually bound. */
int lab_remote_port(const lab_remote_t *r);
/* The command that joins this session: `distlab worker --join HOST:PORT
 * --token-file FILE` (HOST: this host's name when listening everywhere). */
void lab_remote_join_command(const lab_remote_t *r, const char *token_file, char *buf, size_t cap);
/* The workers that have joined, and their ranks all together. */
int lab_remote_nworkers(const lab_remote_t *r);
int lab_remote_nranks(const lab_remote_t *r);
const char *lab_remote_token(const lab_remote_t *r);
/* Where the controller listens so that the workers' ranks reach it. */
const char *lab_remote_bind_host(const lab_remote_t *r);
/* This host's address as the workers see it (DISTLAB_HOST_ADDR of local
 * ranks), or NULL while unknown. */
const char *lab_remote_host_addr(const lab_remote_t *r);
/* Says goodbye to the workers and closes; run the loop afterwards. */
void lab_remote_close(lab_remote_t *r);

/* Creates a fresh token in a new file of mode 0600, in a directory of mode
 * 0700: $XDG_RUNTIME_DIR/distlab, or /tmp/distlab-UID. */
dl_status_t lab_token_file_create(char *path, size_t cap, char token[DL_AUTH_HEX_LEN], char *err,
                                  size_t err_cap);

#endif
