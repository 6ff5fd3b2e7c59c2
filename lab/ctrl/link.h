/* Authenticated framed connections accepted on a libuv loop: the server
 * side of every control connection of a session (ranks to the controller,
 * workers to the shell). A thin wrapper of core's frame server
 * (distlab/frame_server.h), which says how a peer authenticates and how a
 * stranger is dropped; a server here always has a token. */
#ifndef LAB_LINK_H
#define LAB_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "distlab/frame.h"
#include "distlab/frame_server.h"
#include "distlab/status.h"

typedef struct lab_server lab_server_t;
/* A link is a connection of core's frame server. */
typedef dl_frame_conn_t lab_link_t;

typedef struct {
    /* A peer answered the challenge; auth is its answer. Return true to
     * accept it (fields added to welcome go back to it), or false with a
     * reason in why (one line is said, the link is closed). */
    bool (*on_auth)(lab_link_t *l, const json_t *auth, json_t *welcome, char *why, size_t cap);
    /* A frame from an accepted link. */
    void (*on_frame)(lab_link_t *l, const dl_frame_t *f);
    /* An accepted link went away by itself (the peer closed it, or sent a
     * bad frame): why says which. Not called for lab_link_close. */
    void (*on_close)(lab_link_t *l, const char *why);
    /* One line about a connection refused before it was accepted; NULL
     * logs it as a warning. */
    void (*on_refused)(void *arg, const char *line);
} lab_link_cbs_t;

typedef struct {
    const char *host; /* an address or a name; NULL: 127.0.0.1 */
    int port;         /* 0 picks a free one */
    const char *token;
    size_t max_frame; /* after authentication; 0: DL_FRAME_MAX */
} lab_server_opts_t;

dl_status_t lab_server_start(uv_loop_t *loop, const lab_server_opts_t *opts,
                             const lab_link_cbs_t *cbs, void *arg, lab_server_t **s_p);
int lab_server_port(const lab_server_t *s);
/* Closes the listener and every link; no callback runs after this. The
 * server is freed once libuv has released its handles, then done (may be
 * NULL) is called. */
void lab_server_close(lab_server_t *s, void (*done)(void *arg), void *arg);

/* The server's arg, and a pointer of the owner's for this link. */
void *lab_link_arg(const lab_link_t *l);
void *lab_link_data(const lab_link_t *l);
void lab_link_set_data(lab_link_t *l, void *data);
/* The loop's time (uv_now) when bytes last arrived on the link, even in
 * the middle of a frame: a peer sending a large frame is alive. */
uint64_t lab_link_last_rx(const lab_link_t *l);
/* "10.0.0.2:51234", and our own address on this connection ("10.0.0.1"). */
const char *lab_link_peer(const lab_link_t *l);
const char *lab_link_local_ip(const lab_link_t *l);
/* Queues a frame to the peer. */
dl_status_t lab_link_send(lab_link_t *l, const json_t *msg, const void *blob, size_t len);
/* Closes the link; its on_close is not called. */
void lab_link_close(lab_link_t *l);

/* Splits "HOST:PORT", "[V6]:PORT" or a bare "PORT" (host: 127.0.0.1, the
 * loopback: a port is never opened to the network unless asked for). */
bool lab_parse_hostport(const char *s, char *host, size_t cap, int *port_p);
/* Whether host is the wildcard address ("0.0.0.0", "::", "*"). */
bool lab_host_is_wildcard(const char *host);

#endif
