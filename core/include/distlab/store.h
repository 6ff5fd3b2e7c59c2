/* The rendezvous store: a TCP key-value store with set, get, wait and add,
 * in the manner of torch's TCPStore. The controller (or rank 0 when ranks are
 * started by another launcher) serves it; ranks are clients.
 *
 * Values are byte strings. get and wait block until the keys exist or the
 * timeout expires. add treats the value as a decimal integer. */
#ifndef DISTLAB_STORE_H
#define DISTLAB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "distlab/status.h"

/* ---- server: runs on a libuv loop ---- */

typedef struct dl_store_server dl_store_server_t;

/* Binds host:port (port 0 picks a free one) and serves on loop. */
dl_status_t dl_store_server_start(uv_loop_t *loop, const char *host, int port,
                                  dl_store_server_t **srv_p);
/* The same, for a session with a token: every client must first prove that it
 * holds the token (challenge-response, distlab/auth.h, so the token never
 * crosses the wire); a client that does not, or that sends anything else
 * first, is dropped without an answer. token NULL or "": no authentication. */
dl_status_t dl_store_server_start_auth(uv_loop_t *loop, const char *host, int port,
                                       const char *token, dl_store_server_t **srv_p);
/* The port actually bound. */
int dl_store_server_port(const dl_store_server_t *srv);
/* Closes the listener and every client connection; frees srv once libuv has
 * released the handles (run the loop afterwards). */
void dl_store_server_stop(dl_store_server_t *srv);

/* Serves on a private thread with its own loop (for rank 0 of an env://
 * launch, which has no controller). */
dl_status_t dl_store_server_start_thread(const char *host, int port, dl_store_server_t **srv_p);
dl_status_t dl_store_server_start_thread_auth(const char *host, int port, const char *token,
                                              dl_store_server_t **srv_p);
void dl_store_server_stop_thread(dl_store_server_t *srv);

/* ---- client: blocking calls with timeouts ---- */

typedef struct dl_store dl_store_t;

/* Connects, retrying until timeout_ms (the server may start later). */
dl_status_t dl_store_connect(const char *host, int port, int timeout_ms, dl_store_t **store_p);
/* The same, answering the server's challenge with token on every connection
 * (reconnections included). token NULL or "": none. DL_ERR_DENIED when the
 * server refuses the token, or asks for one that we do not have. */
dl_status_t dl_store_connect_auth(const char *host, int port, const char *token, int timeout_ms,
                                  dl_store_t **store_p);
void dl_store_close(dl_store_t *store);
/* Default timeout for get/wait/add, in milliseconds. */
void dl_store_set_timeout(dl_store_t *store, int timeout_ms);

dl_status_t dl_store_set(dl_store_t *store, const char *key, const void *val, size_t len);
dl_status_t dl_store_set_str(dl_store_t *store, const char *key, const char *val);
/* Waits for key, then returns a malloc'd copy of its value (NUL-terminated
 * for convenience; *len_p excludes the NUL). */
dl_status_t dl_store_get(dl_store_t *store, const char *key, void **val_p, size_t *len_p);
/* Atomically adds delta to the integer at key (missing: 0); returns the new value. */
dl_status_t dl_store_add(dl_store_t *store, const char *key, int64_t delta, int64_t *new_p);
/* Waits until every key exists. */
dl_status_t dl_store_wait(dl_store_t *store, const char *const *keys, size_t nkeys);
/* Removes key; DL_ERR_NOT_FOUND if it was absent. */
dl_status_t dl_store_delete(dl_store_t *store, const char *key);
/* Number of keys held. */
dl_status_t dl_store_num_keys(dl_store_t *store, int64_t *n_p);

#endif
