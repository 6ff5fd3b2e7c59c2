/* A server of authenticated framed connections on a libuv loop: the one
 * implementation of accept, authenticate, deadline, cap and frame I/O
 * behind every listening port of distlab (the rendezvous store, the
 * controller's control port, the shell's port for workers).
 *
 * A server listens on host:port. With a token, each connection it accepts
 * is sent a challenge (distlab/auth.h) and is nothing until the peer's
 * first frame answers it; the owner then sees the answer (with the peer's
 * own fields: its role, rank, ...) and may still refuse it. Before that,
 * frames are limited to a few kilobytes and the answer must come within
 * the guard's deadline, and at most the guard's cap of such connections
 * wait at once (distlab/guard.h), so a stranger (a port scanner, garbage, a
 * wrong token) costs nothing and is dropped with one line at most, through
 * on_refused. Without a token a connection is open as soon as it is
 * accepted. */
#ifndef DISTLAB_FRAME_SERVER_H
#define DISTLAB_FRAME_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "distlab/frame.h"
#include "distlab/status.h"

typedef struct dl_frame_server dl_frame_server_t;
typedef struct dl_frame_conn dl_frame_conn_t;

typedef struct {
    /* A peer answered the challenge; auth is its answer. Return true to
     * accept it (fields added to welcome go back to it), or false with a
     * reason in why (one line is said, the connection is closed). NULL:
     * every peer with the token is accepted. */
    bool (*on_auth)(dl_frame_conn_t *c, const json_t *auth, json_t *welcome, char *why, size_t cap);
    /* A connection is open: authenticated, or accepted by a server without
     * a token. Optional. */
    void (*on_open)(dl_frame_conn_t *c);
    /* A frame from an open connection. The callback may take the frame's
     * json or blob (setting the field to NULL); the server clears the rest. */
    void (*on_frame)(dl_frame_conn_t *c, dl_frame_t *f);
    /* An open connection went away by itself (the peer closed it, or sent a
     * bad frame): why says which. Not called for dl_frame_conn_close nor
     * for dl_frame_server_close. */
    void (*on_close)(dl_frame_conn_t *c, const char *why);
    /* One line about a connection refused before it was open; NULL logs it
     * as a warning. */
    void (*on_refused)(void *arg, const char *line);
} dl_frame_server_cbs_t;

typedef struct {
    const char *name;    /* who listens, for messages ("store server"); NULL: "server" */
    const char *host;    /* an address or a name; NULL: 127.0.0.1 */
    int port;            /* 0 picks a free one */
    const char *token;   /* NULL or "": connections need not authenticate */
    size_t max_frame;    /* once open; 0: DL_FRAME_MAX */
    int backlog;         /* 0: 128 */
    int auth_timeout_ms; /* the answer's deadline; 0: dl_guard_auth_timeout_ms() */
} dl_frame_server_opts_t;

dl_status_t dl_frame_server_start(uv_loop_t *loop, const dl_frame_server_opts_t *opts,
                                  const dl_frame_server_cbs_t *cbs, void *arg,
                                  dl_frame_server_t **s_p);
int dl_frame_server_port(const dl_frame_server_t *s);
/* Closes the listener and every connection; no callback runs after this.
 * The server is freed once libuv has released its handles, then done (may
 * be NULL) is called. */
void dl_frame_server_close(dl_frame_server_t *s, void (*done)(void *arg), void *arg);

/* The server's arg, and a pointer of the owner's for this connection. */
void *dl_frame_conn_arg(const dl_frame_conn_t *c);
void *dl_frame_conn_data(const dl_frame_conn_t *c);
void dl_frame_conn_set_data(dl_frame_conn_t *c, void *data);
/* When bytes last arrived on the connection, in milliseconds of uv_now's
 * clock, even in the middle of a frame: a peer sending a large frame is
 * alive. Bytes the kernel holds that this loop has not read yet (it may be
 * busy with another peer's flood) count as arriving now. */
uint64_t dl_frame_conn_last_rx(const dl_frame_conn_t *c);
/* "10.0.0.2:51234", and our own address on this connection ("10.0.0.1"). */
const char *dl_frame_conn_peer(const dl_frame_conn_t *c);
const char *dl_frame_conn_local_ip(const dl_frame_conn_t *c);
/* Queues a frame to the peer. */
dl_status_t dl_frame_conn_send(dl_frame_conn_t *c, const json_t *msg, const void *blob, size_t len);
/* Holds the connection: no further frame of it reaches on_frame (its bytes
 * are still read and buffered) until dl_frame_conn_resume. Resuming from a
 * callback serves the held frames once that callback's read is handled. */
void dl_frame_conn_hold(dl_frame_conn_t *c);
void dl_frame_conn_resume(dl_frame_conn_t *c);
/* Closes the connection; its on_close is not called. */
void dl_frame_conn_close(dl_frame_conn_t *c);

#endif
