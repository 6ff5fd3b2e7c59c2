/* Guarding a listening socket against connections that never authenticate.
 *
 * Every connection a stranger opens costs a descriptor until it is dropped,
 * and descriptors are few (a shell may run with `ulimit -n 256`). So each
 * listener of distlab (the store, the control port, the shell's port for
 * workers) gives a connection that has not authenticated yet
 * dl_guard_auth_timeout_ms() to answer its challenge, and keeps at most
 * dl_guard_cap() of them at once, dropping the oldest to make room for a new
 * one. A flood of silent connections then holds a bounded number of
 * descriptors, and a real peer, which answers within a round trip, still gets
 * in while the flood goes on.
 *
 * Should accept() still fail for want of descriptors (EMFILE, ENFILE), the
 * frame server (distlab/frame_server.h, which applies all of this) first
 * drops its oldest unauthenticated connection; with none to drop,
 * dl_guard_shed() gives up a spare descriptor kept for that purpose to
 * accept and close the connections that wait, so that the listener does not spin on
 * a readiness it cannot clear (the classic EMFILE problem of event loops).
 *
 * Drops are said in one line per flood, not one per connection: see
 * dl_guard_should_say(). */
#ifndef DISTLAB_GUARD_H
#define DISTLAB_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"

/* How long a connection may take to answer its challenge, unless
 * DISTLAB_AUTH_TIMEOUT says otherwise. */
#define DL_GUARD_AUTH_TIMEOUT_MS 10000
/* DISTLAB_AUTH_TIMEOUT's range, in seconds: below a tenth of a second a
 * real peer on a loaded host would not make it. */
#define DL_GUARD_AUTH_TIMEOUT_MIN_S 0.1
#define DL_GUARD_AUTH_TIMEOUT_MAX_S 3600

/* DISTLAB_AUTH_TIMEOUT, the seconds a connection has to authenticate (as
 * sshd's LoginGraceTime): *ms_p the deadline in milliseconds (the default
 * where it is unset or empty). DL_ERR_INVALID, with one line in why, when it
 * is not a number of seconds in the range above;
 * the command line refuses it so before anything starts. */
dl_status_t dl_guard_env_auth_timeout(int *ms_p, char *why, size_t cap);
/* The deadline in milliseconds: DISTLAB_AUTH_TIMEOUT's, else the default.
 * Each listener reads it once, when it starts. */
int dl_guard_auth_timeout_ms(void);

typedef struct {
    int spare_fd;    /* reserved for dl_guard_shed, or -1 */
    int cap;         /* unauthenticated connections kept at once */
    int deadline_ms; /* to authenticate; also the quiet spell before a drop is said again */
    int64_t last_drop_ms;
} dl_guard_t;

/* Reserves the spare descriptor, sizes the cap from RLIMIT_NOFILE (an
 * eighth of the limit, from 16 to 1024) and reads the deadline. */
void dl_guard_init(dl_guard_t *g);
void dl_guard_fini(dl_guard_t *g);
int dl_guard_cap(const dl_guard_t *g);

/* Notes one connection dropped by the guard (the cap, the deadline, a
 * shed). True when it deserves a line: the first drop after a quiet spell of
 * deadline_ms; the ones that follow it closely go unsaid. */
bool dl_guard_should_say(dl_guard_t *g);

/* accept() failed with EMFILE or ENFILE on listen_fd (a non-blocking
 * listening socket) and there is no connection to drop: accepts and closes
 * every connection waiting there through the spare descriptor, then
 * reserves it again. Returns how many were closed. */
int dl_guard_shed(dl_guard_t *g, int listen_fd);

#endif
