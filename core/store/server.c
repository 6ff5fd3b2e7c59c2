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
 * A client that cannot be answered is dropped, but its record is freed only
 * when the next frame arrives (or at stop), never synchronously, so the
 * client list stays valid while it is being walked.
 *
 * Accepting, authenticating, the deadline and cap on clients that have not
 * authenticated yet, and the framing are the frame server's
 * (distlab/frame_server.h): a server with a token challenges every client
 * as it connects and serves nothing until the client's first frame answers
 * the challenge. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/frame.h"
#include "distlab/frame_server.h"
#include "distlab/log.h"
#include "distlab/store.h"
#include "store/internal.h"

#define STORE_BACKLOG 1024

typedef struct store_client {
    dl_frame_conn_t *conn;
    dl_store_server_t *srv;
    struct store_client *prev, *next;
    json_t *parked; /* a get or wait request waiting for its keys, or NULL */
    bool dropped;   /* its connection is closed; the record goes at the next reap */
} store_client_t;

struct dl_store_server {
    uv_loop_t *loop;
    dl_frame_server_t *fs;
    int port;
    dl__kv_t kv;
    store_client_t *clients;
    /* Handles (the frame server counts as one) initialised and not yet
     * released: the frame server and, in thread mode, the stop signal. The
     * server is freed when it reaches zero after a stop. */
    int open_handles;
    bool stopping;
    /* Thread mode: the private loop and the thread running it. */
    bool threaded;
    uv_loop_t *own_loop;
    uv_async_t stop_async;
    uv_thread_t thread;
};

/* ---- teardown ---- */

static void server_free(dl_store_server_t *srv)
{
    dl__kv_free(&srv->kv);
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

static void on_frame_server_closed(void *arg)
{
    server_handle_gone(arg);
}

/* ---- clients ---- */

static void client_free(store_client_t *c)
{
    dl_store_server_t *srv = c->srv;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        srv->clients = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    /* A parked waiter dies with its connection. */
    json_decref(c->parked);
    free(c);
}

/* Closes the client's connection; the record stays until the next reap. */
static void client_drop(store_client_t *c)
{
    if (c->dropped)
        return;
    c->dropped = true;
    dl_frame_conn_set_data(c->conn, NULL);
    dl_frame_conn_close(c->conn);
}

/* Frees the records of dropped clients: from a callback's top, where no
 * record is being walked. */
static void reap(dl_store_server_t *srv)
{
    store_client_t *next;
    for (store_client_t *c = srv->clients; c != NULL; c = next) {
        next = c->next;
        if (c->dropped)
            client_free(c);
    }
}

/* ---- responses ---- */

static void client_drop(store_client_t *c);

/* Sends one response frame; takes the reference to json. */
static void client_reply(store_client_t *c, json_t *json, const void *blob, size_t blob_len)
{
    dl_status_t st =
        json != NULL ? dl_frame_conn_send(c->conn, json, blob, blob_len) : DL_ERR_NOMEM;
    json_decref(json);
    if (st != DL_OK) {
        dl_log_info("cannot answer store client %s: %s", dl_frame_conn_peer(c->conn),
                    dl_strerror(st));
        /* A client we cannot answer would wait forever; let it see the close. */
        client_drop(c);
    }
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
        if (c->parked == NULL || c->dropped)
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
        /* Frames it sent meanwhile are served once the current read is. */
        if (!c->dropped)
            dl_frame_conn_resume(c->conn);
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
        dl_frame_conn_hold(c->conn);
    }
}

/* ---- the frame server's callbacks ---- */

static void on_open(dl_frame_conn_t *conn)
{
    dl_store_server_t *srv = dl_frame_conn_arg(conn);
    store_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        dl_log_error("store server out of memory accepting a client");
        dl_frame_conn_close(conn);
        return;
    }
    c->conn = conn;
    c->srv = srv;
    c->next = srv->clients;
    if (srv->clients != NULL)
        srv->clients->prev = c;
    srv->clients = c;
    dl_frame_conn_set_data(conn, c);
    dl_log_debug("store client %s connected", dl_frame_conn_peer(conn));
}

static void on_frame(dl_frame_conn_t *conn, dl_frame_t *f)
{
    store_client_t *c = dl_frame_conn_data(conn);
    if (c == NULL)
        return;
    reap(c->srv);
    handle_request(c, f);
}

static void on_close(dl_frame_conn_t *conn, const char *why)
{
    store_client_t *c = dl_frame_conn_data(conn);
    if (strcmp(why, "connection closed") != 0)
        dl_log_info("dropping store client %s: %s", dl_frame_conn_peer(conn), why);
    if (c != NULL)
        client_free(c);
}

static void on_refused(void *arg, const char *line)
{
    (void)arg;
    dl_log_warn("store server %s", line);
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
    dl_frame_server_opts_t opts = {
        .name = "store server",
        .host = host,
        .port = port,
        .token = token,
        .backlog = STORE_BACKLOG,
    };
    dl_frame_server_cbs_t cbs = {
        .on_open = on_open,
        .on_frame = on_frame,
        .on_close = on_close,
        .on_refused = on_refused,
    };
    dl_status_t st = dl_frame_server_start(loop, &opts, &cbs, srv, &srv->fs);
    if (st != DL_OK) {
        server_free(srv);
        return st;
    }
    srv->open_handles = 1;
    srv->port = dl_frame_server_port(srv->fs);
    *srv_p = srv;
    return DL_OK;
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
    while (srv->clients != NULL)
        client_free(srv->clients);
    dl_frame_server_close(srv->fs, on_frame_server_closed, srv);
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
