/* The rendezvous store server: a key-value table served over TCP on a libuv
 * loop (protocol in internal.h).
 *
 * Each client connection has its own frame decoder and handles one request at
 * a time, in order. A get or wait whose keys are missing parks the connection:
 * its request is kept and no further frame of that client is looked at until
 * every key exists. Each set or add then rechecks the parked connections, so
 * a waiter is answered in the same loop iteration as the write it waited for.
 * There is no server-side timeout; a client that gives up closes its socket,
 * and closing a connection frees whatever it had parked.
 *
 * Answering a waiter may unblock further frames it had already sent. Rather
 * than serving those from inside the set that woke it (recursion as deep as a
 * chain of waiters), the waiter is marked ready and served from the read
 * callback's drain loop.
 *
 * Connections are unlinked and freed only in their close callback, never
 * synchronously, so the client list stays valid while it is being walked even
 * when a write failure closes a client mid-walk.
 *
 * A server with a token challenges every client as it connects (auth.h) and
 * serves nothing until the client's first frame answers the challenge; until
 * then its frames may be at most STORE_AUTH_FRAME_MAX bytes, so a stranger
 * cannot make us buffer much. Nor can it hold a descriptor for long: a client
 * that has not answered within DL_GUARD_AUTH_TIMEOUT_MS is dropped by a sweep
 * that runs every STORE_SWEEP_MS, and beyond the guard's cap the oldest
 * unanswered client makes room for a new one (guard.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distlab/auth.h"
#include "distlab/frame.h"
#include "distlab/guard.h"
#include "distlab/log.h"
#include "distlab/store.h"
#include "store/internal.h"

#define STORE_READ_BUF_LEN   (64u << 10)
#define STORE_BACKLOG        1024
#define STORE_AUTH_FRAME_MAX (16u << 10)
#define STORE_SWEEP_MS       1000

typedef struct store_client {
    uv_tcp_t tcp;
    dl_store_server_t *srv;
    struct store_client *prev, *next;
    dl_frame_decoder_t dec;
    json_t *parked; /* a get or wait request waiting for its keys, or NULL */
    bool ready;     /* unparked with frames possibly still buffered */
    bool closing;
    bool authed;       /* answered the challenge (or the server has no token) */
    bool pending;      /* counted in the server's pending: waits for its answer */
    uint64_t since_ms; /* when it was accepted, in loop time */
    char nonce[DL_AUTH_HEX_LEN];
    char peer[64];
} store_client_t;

typedef struct {
    uv_write_t req;
    uint8_t *buf;
} store_write_t;

struct dl_store_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    int port;
    char *token; /* NULL: clients need not authenticate */
    dl__kv_t kv;
    store_client_t *clients;
    /* Clients that have not answered the challenge yet, their deadline's
     * sweep, and the cap on how many may wait at once. */
    int pending;
    uv_timer_t sweep;
    bool sweep_started;
    dl_guard_t guard;
    /* Handles initialised and not yet closed: the listener, the sweep, the
     * clients and, in thread mode, the stop signal. The server is freed when
     * it reaches zero after a stop. */
    int open_handles;
    bool stopping;
    /* Thread mode: the private loop and the thread running it. */
    bool threaded;
    uv_loop_t *own_loop;
    uv_async_t stop_async;
    uv_thread_t thread;
    /* Reads on one loop never overlap, so one buffer serves every client
     * before its bytes are copied into the client's decoder. */
    char read_buf[STORE_READ_BUF_LEN];
};

static void client_close(store_client_t *c);

/* ---- teardown ---- */

static void server_free(dl_store_server_t *srv)
{
    dl_guard_fini(&srv->guard);
    dl__kv_free(&srv->kv);
    free(srv->token);
    free(srv);
}

static void server_handle_gone(dl_store_server_t *srv)
{
    srv->open_handles--;
    /* In thread mode the stopping thread frees the server after the join,
     * because it still reads the thread fields. */
    if (srv->stopping && srv->open_handles == 0 && !srv->threaded)
        server_free(srv);
}

static void on_server_handle_closed(uv_handle_t *h)
{
    server_handle_gone(h->data);
}

/* ---- unauthenticated clients ---- */

static void client_unpend(store_client_t *c)
{
    if (!c->pending)
        return;
    c->pending = false;
    c->srv->pending--;
}

/* The client that has waited longest for its answer, or NULL. New clients
 * go to the head of the list, so that is the last pending one. */
static store_client_t *oldest_pending(dl_store_server_t *srv)
{
    store_client_t *oldest = NULL;
    for (store_client_t *c = srv->clients; c != NULL; c = c->next)
        if (c->pending && !c->closing)
            oldest = c;
    return oldest;
}

/* Drops a client that did not answer in time or had to make room, with one
 * line for a whole flood of them (guard.h). */
static void drop_pending(store_client_t *c, const char *why)
{
    dl_store_server_t *srv = c->srv;
    if (dl_guard_should_say(&srv->guard))
        dl_log_warn("store server dropped a connection from %s: %s (further drops within %d s "
                    "are not reported one by one)",
                    c->peer, why, DL_GUARD_AUTH_TIMEOUT_MS / 1000);
    client_close(c);
}

static void on_sweep(uv_timer_t *t)
{
    dl_store_server_t *srv = t->data;
    uint64_t now = uv_now(srv->loop);
    for (store_client_t *c = srv->clients; c != NULL; c = c->next)
        if (c->pending && !c->closing && now - c->since_ms >= DL_GUARD_AUTH_TIMEOUT_MS)
            drop_pending(c, "no answer to the challenge in time");
}

/* ---- responses ---- */

static void on_write_done(uv_write_t *req, int status)
{
    store_write_t *w = (store_write_t *)req;
    store_client_t *c = req->handle->data;
    free(w->buf);
    free(w);
    if (status < 0 && status != UV_ECANCELED) {
        dl_log_info("store client %s went away before its response: %s", c->peer,
                    uv_strerror(status));
        client_close(c);
    }
}

/* Sends one response frame; takes the reference to json. */
static void client_reply(store_client_t *c, json_t *json, const void *blob, size_t blob_len)
{
    store_write_t *w = malloc(sizeof(*w));
    if (w == NULL)
        goto err_close_client;
    size_t len;
    if (dl_frame_encode(json, blob, blob_len, &w->buf, &len) != DL_OK)
        goto err_free_write;
    uv_buf_t buf = uv_buf_init((char *)w->buf, (unsigned int)len);
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_write_done);
    if (rc < 0) {
        dl_log_info("cannot answer store client %s: %s", c->peer, uv_strerror(rc));
        goto err_free_buf;
    }
    json_decref(json);
    return;

err_free_buf:
    free(w->buf);
err_free_write:
    free(w);
err_close_client:
    json_decref(json);
    /* A client we cannot answer would wait forever; let it see the close. */
    client_close(c);
}

static void reply_ok(store_client_t *c)
{
    client_reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
}

static void reply_value(store_client_t *c, json_int_t value)
{
    client_reply(c, json_pack("{s:b,s:I}", "ok", 1, "value", value), NULL, 0);
}

static void reply_error(store_client_t *c, dl_status_t st, const char *msg)
{
    client_reply(c, json_pack("{s:b,s:s,s:i}", "ok", 0, "error", msg, "code", (int)st), NULL, 0);
}

/* ---- parked requests ---- */

/* Answers a parked or fresh get/wait if all its keys exist. */
static bool try_answer(store_client_t *c, const json_t *req)
{
    dl__kv_t *kv = &c->srv->kv;
    const char *op = json_string_value(json_object_get(req, "op"));
    if (strcmp(op, DL__STORE_OP_GET) == 0) {
        dl__kv_entry_t *e = dl__kv_find(kv, json_string_value(json_object_get(req, "key")));
        if (e == NULL)
            return false;
        client_reply(c, json_pack("{s:b}", "ok", 1), e->val, e->len);
        return true;
    }
    size_t i;
    json_t *key;
    json_array_foreach(json_object_get(req, "keys"), i, key)
    {
        if (dl__kv_find(kv, json_string_value(key)) == NULL)
            return false;
    }
    reply_ok(c);
    return true;
}

/* Called after every write to the table: answers the waiters it satisfied. */
static void wake_waiters(dl_store_server_t *srv)
{
    for (store_client_t *c = srv->clients; c != NULL; c = c->next) {
        if (c->parked == NULL || c->closing)
            continue;
        /* Unpark before answering: a failed answer closes the client, and the
         * close must not free the request a second time. */
        json_t *req = c->parked;
        c->parked = NULL;
        if (!try_answer(c, req)) {
            c->parked = req;
            continue;
        }
        json_decref(req);
        if (!c->closing && c->dec.len > 0)
            c->ready = true;
    }
}

/* ---- request handlers ---- */

static void handle_set(store_client_t *c, const char *key, dl_frame_t *f)
{
    /* The table takes the blob as it is: values can be megabytes. */
    dl_status_t st = dl__kv_put(&c->srv->kv, key, f->blob, f->blob_len);
    f->blob = NULL;
    f->blob_len = 0;
    if (st != DL_OK) {
        reply_error(c, st, "store server out of memory");
        return;
    }
    reply_ok(c);
    wake_waiters(c->srv);
}

/* Parses a stored counter: a decimal integer as strtoll reads it, with
 * nothing after it. */
static bool parse_counter(const dl__kv_entry_t *e, int64_t *v_p)
{
    char text[32];
    if (e->len == 0 || e->len >= sizeof(text))
        return false;
    memcpy(text, e->val, e->len);
    text[e->len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *v_p = v;
    return true;
}

static void handle_add(store_client_t *c, const char *key, const json_t *req)
{
    json_t *delta_json = json_object_get(req, "delta");
    if (!json_is_integer(delta_json)) {
        reply_error(c, DL_ERR_INVALID, "add needs an integer 'delta'");
        return;
    }
    int64_t value = 0;
    dl__kv_entry_t *e = dl__kv_find(&c->srv->kv, key);
    if (e != NULL && !parse_counter(e, &value)) {
        reply_error(c, DL_ERR_INVALID, "add to a key whose value is not an integer");
        return;
    }
    if (__builtin_add_overflow(value, (int64_t)json_integer_value(delta_json), &value)) {
        reply_error(c, DL_ERR_RANGE, "add overflows a 64-bit integer");
        return;
    }
    char text[32];
    int len = snprintf(text, sizeof(text), "%lld", (long long)value);
    uint8_t *val = malloc((size_t)len);
    if (val == NULL) {
        reply_error(c, DL_ERR_NOMEM, "store server out of memory");
        return;
    }
    memcpy(val, text, (size_t)len);
    dl_status_t st = dl__kv_put(&c->srv->kv, key, val, (size_t)len);
    if (st != DL_OK) {
        reply_error(c, st, "store server out of memory");
        return;
    }
    reply_value(c, value);
    wake_waiters(c->srv);
}

static bool keys_are_strings(const json_t *keys)
{
    if (!json_is_array(keys))
        return false;
    size_t i;
    json_t *key;
    json_array_foreach(keys, i, key)
    {
        if (!json_is_string(key))
            return false;
    }
    return true;
}

static bool op_is_known(const char *op)
{
    static const char *const ops[] = {DL__STORE_OP_SET,    DL__STORE_OP_GET,
                                      DL__STORE_OP_ADD,    DL__STORE_OP_WAIT,
                                      DL__STORE_OP_DELETE, DL__STORE_OP_NUM_KEYS};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* Serves one request; a get or wait whose keys are missing parks the client.
 * A well-framed but malformed request is answered with an error rather than
 * dropped: the frame boundaries are intact, so the connection still is. */
static void handle_request(store_client_t *c, dl_frame_t *f)
{
    json_t *req = f->json;
    const char *op = json_string_value(json_object_get(req, "op"));
    const char *key = json_string_value(json_object_get(req, "key"));
    if (op == NULL || !op_is_known(op)) {
        reply_error(c, DL_ERR_UNSUPPORTED, "unknown store op");
        return;
    }
    if (strcmp(op, DL__STORE_OP_NUM_KEYS) == 0) {
        reply_value(c, (json_int_t)c->srv->kv.count);
        return;
    }
    if (strcmp(op, DL__STORE_OP_WAIT) == 0) {
        if (!keys_are_strings(json_object_get(req, "keys"))) {
            reply_error(c, DL_ERR_INVALID, "wait needs 'keys', an array of strings");
            return;
        }
    } else if (key == NULL) {
        reply_error(c, DL_ERR_INVALID, "request has no string 'key'");
        return;
    }

    if (strcmp(op, DL__STORE_OP_SET) == 0) {
        handle_set(c, key, f);
    } else if (strcmp(op, DL__STORE_OP_ADD) == 0) {
        handle_add(c, key, req);
    } else if (strcmp(op, DL__STORE_OP_DELETE) == 0) {
        if (dl__kv_delete(&c->srv->kv, key) == DL_OK)
            reply_ok(c);
        else
            reply_error(c, DL_ERR_NOT_FOUND, "no such key");
    } else if (!try_answer(c, req)) {
        c->parked = json_incref(req);
    }
}

/* The first frame of a client of a server with a token must answer the
 * challenge; anything else drops the client, unanswered. */
static void client_authenticate(store_client_t *c, const dl_frame_t *f)
{
    json_t *welcome = dl_auth_answer(c->srv->token, c->nonce, f->json);
    if (welcome == NULL) {
        dl_log_info("dropping store client %s: it did not prove it holds the session's token",
                    c->peer);
        client_close(c);
        return;
    }
    c->authed = true;
    client_unpend(c);
    c->dec.max_frame = DL_FRAME_MAX;
    client_reply(c, welcome, NULL, 0);
}

/* Serves the client's buffered frames until it parks, runs dry or is
 * dropped. */
static void client_run(store_client_t *c)
{
    while (c->parked == NULL && !c->closing) {
        dl_frame_t f = {0};
        dl_status_t st = dl_frame_decoder_next(&c->dec, &f);
        if (st == DL_ERR_AGAIN)
            break;
        if (st != DL_OK) {
            /* The decoder logged the fault; only the connection pays. */
            dl_log_info("dropping store client %s: %s", c->peer, dl_strerror(st));
            client_close(c);
            break;
        }
        if (c->authed)
            handle_request(c, &f);
        else
            client_authenticate(c, &f);
        dl_frame_clear(&f);
    }
}

/* Serves the clients that waking unblocked; serving them may wake more. */
static void drain_ready(dl_store_server_t *srv)
{
    bool progress = true;
    while (progress) {
        progress = false;
        for (store_client_t *c = srv->clients; c != NULL; c = c->next) {
            if (!c->ready)
                continue;
            c->ready = false;
            client_run(c);
            progress = true;
        }
    }
}

/* ---- connections ---- */

static void on_client_closed(uv_handle_t *h)
{
    store_client_t *c = h->data;
    dl_store_server_t *srv = c->srv;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        srv->clients = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    dl_frame_decoder_free(&c->dec);
    free(c);
    server_handle_gone(srv);
}

static void client_close(store_client_t *c)
{
    if (c->closing)
        return;
    client_unpend(c);
    c->closing = true;
    c->ready = false;
    /* A parked waiter dies with its connection. */
    json_decref(c->parked);
    c->parked = NULL;
    uv_close((uv_handle_t *)&c->tcp, on_client_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    store_client_t *c = h->data;
    *buf = uv_buf_init(c->srv->read_buf, sizeof(c->srv->read_buf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    store_client_t *c = s->data;
    if (nread == 0)
        return;
    if (nread < 0) {
        if (nread != UV_EOF)
            dl_log_info("store client %s: %s", c->peer, uv_strerror((int)nread));
        client_close(c);
        return;
    }
    if (dl_frame_decoder_feed(&c->dec, buf->base, (size_t)nread) != DL_OK) {
        dl_log_error("store client %s: out of memory buffering its request", c->peer);
        client_close(c);
        return;
    }
    client_run(c);
    drain_ready(c->srv);
}

static void format_peer(uv_tcp_t *tcp, char *out, size_t size)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            uv_ip6_name(a, ip, sizeof(ip));
            port = ntohs(a->sin6_port);
        } else if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            uv_ip4_name(a, ip, sizeof(ip));
            port = ntohs(a->sin_port);
        }
    }
    snprintf(out, size, "%s:%d", ip, port);
}

/* accept() failed for want of descriptors. libuv calls again at once while
 * connections wait, so a descriptor must be freed here: the oldest
 * unanswered client's, or the guard's spare to shed those that wait. */
static void out_of_descriptors(dl_store_server_t *srv, int status)
{
    store_client_t *oldest = oldest_pending(srv);
    if (oldest != NULL) {
        drop_pending(oldest, "out of descriptors, the oldest unauthenticated connection goes");
        return;
    }
    int fd = -1;
    int shed =
        uv_fileno((uv_handle_t *)&srv->listener, &fd) == 0 ? dl_guard_shed(&srv->guard, fd) : 0;
    if (dl_guard_should_say(&srv->guard))
        dl_log_warn("store server cannot accept: %s; closed %d waiting connection%s",
                    uv_strerror(status), shed, shed == 1 ? "" : "s");
}

static void on_connection(uv_stream_t *listener, int status)
{
    dl_store_server_t *srv = listener->data;
    if (status == UV_EMFILE || status == UV_ENFILE) {
        out_of_descriptors(srv, status);
        return;
    }
    if (status < 0) {
        dl_log_error("store server accept failed: %s", uv_strerror(status));
        return;
    }
    store_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        dl_log_error("store server out of memory accepting a client");
        return;
    }
    c->srv = srv;
    c->authed = srv->token == NULL;
    dl_frame_decoder_init(&c->dec, c->authed ? 0 : STORE_AUTH_FRAME_MAX);
    int rc = uv_tcp_init(srv->loop, &c->tcp);
    if (rc < 0) {
        dl_log_error("store server cannot create a client handle: %s", uv_strerror(rc));
        free(c);
        return;
    }
    c->tcp.data = c;
    srv->open_handles++;
    c->next = srv->clients;
    if (srv->clients != NULL)
        srv->clients->prev = c;
    srv->clients = c;

    rc = uv_accept(listener, (uv_stream_t *)&c->tcp);
    if (rc < 0) {
        dl_log_error("store server accept failed: %s", uv_strerror(rc));
        goto err_close_client;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    format_peer(&c->tcp, c->peer, sizeof(c->peer));
    rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rc < 0) {
        dl_log_error("store server cannot read from %s: %s", c->peer, uv_strerror(rc));
        goto err_close_client;
    }
    if (!c->authed) {
        if (dl_auth_new_nonce(c->nonce) != DL_OK)
            goto err_close_client;
        c->pending = true;
        c->since_ms = uv_now(srv->loop);
        srv->pending++;
        client_reply(c, dl_auth_challenge(c->nonce), NULL, 0);
        /* A real client answers within a round trip; the oldest of a flood
         * of silent ones makes room. */
        if (srv->pending > dl_guard_cap(&srv->guard)) {
            store_client_t *oldest = oldest_pending(srv);
            if (oldest != NULL) {
                char why[96];
                snprintf(why, sizeof(why),
                         "more than %d connections wait to authenticate, the oldest goes",
                         dl_guard_cap(&srv->guard));
                drop_pending(oldest, why);
            }
        }
    }
    dl_log_debug("store client %s connected", c->peer);
    return;

err_close_client:
    client_close(c);
}

/* ---- start and stop ---- */

dl_status_t dl_store_server_start(uv_loop_t *loop, const char *host, int port,
                                  dl_store_server_t **srv_p)
{
    return dl_store_server_start_auth(loop, host, port, NULL, srv_p);
}

dl_status_t dl_store_server_start_auth(uv_loop_t *loop, const char *host, int port,
                                       const char *token, dl_store_server_t **srv_p)
{
    if (loop == NULL || port < 0 || port > 65535)
        return DL_ERR_INVALID;
    dl_store_server_t *srv = calloc(1, sizeof(*srv));
    if (srv == NULL)
        return DL_ERR_NOMEM;
    srv->loop = loop;
    dl__kv_init(&srv->kv);
    dl_guard_init(&srv->guard);
    if (token != NULL && token[0] != '\0' && (srv->token = strdup(token)) == NULL) {
        server_free(srv);
        return DL_ERR_NOMEM;
    }
    int fd;
    dl_status_t st = dl_frame_listen("store server", host, port, STORE_BACKLOG, &fd, &srv->port);
    if (st != DL_OK)
        goto err_free_srv;

    int rc = uv_tcp_init(loop, &srv->listener);
    if (rc < 0) {
        dl_log_error("store server cannot create its listener: %s", uv_strerror(rc));
        st = DL_ERR_SYSTEM;
        goto err_close_fd;
    }
    srv->listener.data = srv;
    srv->open_handles = 1;
    rc = uv_tcp_open(&srv->listener, fd);
    if (rc < 0) {
        dl_log_error("store server cannot adopt its socket: %s", uv_strerror(rc));
        st = DL_ERR_SYSTEM;
        close(fd);
        goto err_close_listener;
    }
    /* From here the handle owns fd and closing the handle closes it. */
    rc = uv_listen((uv_stream_t *)&srv->listener, STORE_BACKLOG, on_connection);
    if (rc < 0) {
        dl_log_error("store server cannot listen: %s", uv_strerror(rc));
        st = DL_ERR_SYSTEM;
        goto err_close_listener;
    }
    /* The sweep alone must not keep a loop running. */
    uv_timer_init(loop, &srv->sweep);
    srv->sweep.data = srv;
    srv->open_handles++;
    srv->sweep_started = true;
    uv_timer_start(&srv->sweep, on_sweep, STORE_SWEEP_MS, STORE_SWEEP_MS);
    uv_unref((uv_handle_t *)&srv->sweep);
    dl_log_debug("store server listening on port %d", srv->port);
    *srv_p = srv;
    return DL_OK;

err_close_listener:
    /* The handle exists now, so only its close callback may free srv; it
     * runs on the caller's next loop turn. */
    srv->stopping = true;
    uv_close((uv_handle_t *)&srv->listener, on_server_handle_closed);
    return st;
err_close_fd:
    close(fd);
err_free_srv:
    server_free(srv);
    return st;
}

int dl_store_server_port(const dl_store_server_t *srv)
{
    return srv->port;
}

void dl_store_server_stop(dl_store_server_t *srv)
{
    if (srv == NULL || srv->stopping)
        return;
    srv->stopping = true;
    uv_close((uv_handle_t *)&srv->listener, on_server_handle_closed);
    if (srv->sweep_started)
        uv_close((uv_handle_t *)&srv->sweep, on_server_handle_closed);
    for (store_client_t *c = srv->clients; c != NULL; c = c->next)
        client_close(c);
}

/* ---- thread mode ---- */

static void on_stop_async(uv_async_t *async)
{
    dl_store_server_t *srv = async->data;
    uv_close((uv_handle_t *)async, on_server_handle_closed);
    dl_store_server_stop(srv);
}

static void server_thread_main(void *arg)
{
    dl_store_server_t *srv = arg;
    uv_run(srv->own_loop, UV_RUN_DEFAULT);
}

/* Runs the loop until its closing handles are released, then closes it. */
static void loop_destroy(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
    if (uv_loop_close(loop) != 0)
        dl_log_error("store server loop still has open handles at exit");
    free(loop);
}

dl_status_t dl_store_server_start_thread(const char *host, int port, dl_store_server_t **srv_p)
{
    return dl_store_server_start_thread_auth(host, port, NULL, srv_p);
}

dl_status_t dl_store_server_start_thread_auth(const char *host, int port, const char *token,
                                              dl_store_server_t **srv_p)
{
    uv_loop_t *loop = malloc(sizeof(*loop));
    if (loop == NULL)
        return DL_ERR_NOMEM;
    int rc = uv_loop_init(loop);
    if (rc < 0) {
        dl_log_error("store server cannot create its loop: %s", uv_strerror(rc));
        free(loop);
        return DL_ERR_SYSTEM;
    }
    dl_store_server_t *srv;
    dl_status_t st = dl_store_server_start_auth(loop, host, port, token, &srv);
    if (st != DL_OK)
        goto err_destroy_loop;
    srv->own_loop = loop;
    rc = uv_async_init(loop, &srv->stop_async, on_stop_async);
    if (rc < 0) {
        dl_log_error("store server cannot create its stop signal: %s", uv_strerror(rc));
        st = DL_ERR_SYSTEM;
        goto err_stop_server;
    }
    srv->stop_async.data = srv;
    srv->open_handles++;
    srv->threaded = true;
    rc = uv_thread_create(&srv->thread, server_thread_main, srv);
    if (rc < 0) {
        dl_log_error("store server cannot start its thread: %s", uv_strerror(rc));
        st = DL_ERR_SYSTEM;
        srv->threaded = false;
        uv_close((uv_handle_t *)&srv->stop_async, on_server_handle_closed);
        goto err_stop_server;
    }
    *srv_p = srv;
    return DL_OK;

err_stop_server:
    dl_store_server_stop(srv);
err_destroy_loop:
    loop_destroy(loop);
    return st;
}

void dl_store_server_stop_thread(dl_store_server_t *srv)
{
    if (srv == NULL)
        return;
    /* The loop belongs to the server thread: ask it to stop itself, and once
     * its loop has run dry every handle is closed. */
    uv_async_send(&srv->stop_async);
    uv_thread_join(&srv->thread);
    loop_destroy(srv->own_loop);
    server_free(srv);
}
