/* The rendezvous store client: blocking requests over one TCP connection
 * (protocol in internal.h).
 *
 * Each request, from sending to the last byte of its response, runs under one
 * deadline, the store's timeout. When a request fails mid-way (timeout, lost
 * connection, garbled response) the connection is closed: a late response
 * would otherwise be read as the answer to the next request. Closing it is
 * also how the client cancels a get or wait that the server still holds. The
 * next request reconnects.
 *
 * With a token, every connection (reconnections included) first answers the
 * server's challenge (auth.h): the token itself never crosses the wire.
 *
 * A dl_store_t serves one request at a time; threads that share one must
 * serialise their calls. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "distlab/auth.h"
#include "distlab/frame.h"
#include "distlab/log.h"
#include "distlab/store.h"
#include "net/internal.h"
#include "store/internal.h"

#define STORE_DEFAULT_TIMEOUT_MS 30000
/* Pause between connection attempts while the server is not up yet. */
#define STORE_CONNECT_RETRY_MS 20

struct dl_store {
    int fd; /* -1 after a failed request, until the next one reconnects */
    char *host;
    int port;
    char *token; /* NULL: the server asks for none */
    int timeout_ms;
};

/* "30 s" or "250 ms", for log lines. */
static const char *format_timeout(int timeout_ms, char *buf, size_t size)
{
    if (timeout_ms % 1000 == 0)
        snprintf(buf, size, "%d s", timeout_ms / 1000);
    else
        snprintf(buf, size, "%d ms", timeout_ms);
    return buf;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Connects, retrying while nobody listens, until the deadline, and answers
 * the server's challenge when we hold a token. */
static dl_status_t connect_retry(const char *host, int port, const char *token,
                                 dl__deadline_t deadline, int *fd_p)
{
    for (;;) {
        dl_status_t st = dl__net_connect(host, port, deadline, fd_p);
        if (st == DL_OK && token != NULL) {
            st = dl_auth_client_fd(*fd_p, token, NULL, dl__net_remaining_ms(deadline), NULL);
            if (st != DL_OK) {
                close(*fd_p);
                if (st == DL_ERR_DENIED)
                    dl_log_error("the store at %s:%d refused our token (DISTLAB_TOKEN)", host,
                                 port);
                else if (st == DL_ERR_TIMEOUT)
                    dl_log_error("the store at %s:%d sent no challenge: it does not expect a "
                                 "token",
                                 host, port);
                /* A protocol error was logged where it was seen; a closed
                 * connection is reported by the caller. */
                return st;
            }
        }
        if (st != DL_ERR_CLOSED)
            return st;
        int left = dl__net_remaining_ms(deadline);
        if (left == 0)
            return DL_ERR_TIMEOUT;
        sleep_ms(left < 0 || left > STORE_CONNECT_RETRY_MS ? STORE_CONNECT_RETRY_MS : left);
    }
}

dl_status_t dl_store_connect(const char *host, int port, int timeout_ms, dl_store_t **store_p)
{
    return dl_store_connect_auth(host, port, NULL, timeout_ms, store_p);
}

dl_status_t dl_store_connect_auth(const char *host, int port, const char *token, int timeout_ms,
                                  dl_store_t **store_p)
{
    if (host == NULL || port <= 0 || port > 65535)
        return DL_ERR_INVALID;
    dl_store_t *store = calloc(1, sizeof(*store));
    if (store == NULL)
        return DL_ERR_NOMEM;
    store->host = strdup(host);
    if (token != NULL && token[0] != '\0')
        store->token = strdup(token);
    if (store->host == NULL || (token != NULL && token[0] != '\0' && store->token == NULL)) {
        free(store->host);
        free(store);
        return DL_ERR_NOMEM;
    }
    store->port = port;
    store->timeout_ms = STORE_DEFAULT_TIMEOUT_MS;
    dl_status_t st =
        connect_retry(host, port, store->token, dl__net_deadline(timeout_ms), &store->fd);
    if (st != DL_OK) {
        char t[32];
        if (st == DL_ERR_TIMEOUT && store->token == NULL)
            dl_log_error("no store server at %s:%d after %s", host, port,
                         format_timeout(timeout_ms, t, sizeof(t)));
        free(store->host);
        free(store->token);
        free(store);
        return st;
    }
    *store_p = store;
    return DL_OK;
}

void dl_store_close(dl_store_t *store)
{
    if (store == NULL)
        return;
    if (store->fd >= 0)
        close(store->fd);
    free(store->host);
    free(store->token);
    free(store);
}

void dl_store_set_timeout(dl_store_t *store, int timeout_ms)
{
    store->timeout_ms = timeout_ms;
}

dl_status_t dl__store_local_addr(dl_store_t *store, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (store->fd < 0)
        return DL_ERR_CLOSED;
    if (getsockname(store->fd, (struct sockaddr *)&ss, &len) != 0) {
        dl_log_error("getsockname on the store connection failed: %m");
        return DL_ERR_SYSTEM;
    }
    const void *ip = ss.ss_family == AF_INET6
                         ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                         : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
    if (inet_ntop(ss.ss_family, ip, buf, (socklen_t)cap) == NULL)
        return DL_ERR_RANGE;
    return DL_OK;
}

/* ---- requests ---- */

/* What a request was about, for its error line: "get of 'rank/3'" or
 * "wait for 'a', 'b'". */
static void describe(const char *op, const char *const *keys, size_t nkeys, char *buf, size_t size)
{
    const char *prep = strcmp(op, DL__STORE_OP_WAIT) == 0  ? "for"
                       : strcmp(op, DL__STORE_OP_ADD) == 0 ? "to"
                                                           : "of";
    size_t n = (size_t)snprintf(buf, size, nkeys > 0 ? "%s %s " : "%s", op, prep);
    for (size_t i = 0; i < nkeys && n < size; i++) {
        if (n + 16 >= size) {
            snprintf(buf + n, size - n, "...");
            break;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s'%s'", i > 0 ? ", " : "", keys[i]);
    }
}

/* Sends req (and blob) and reads the response under the store's timeout.
 * On success *resp_p holds the response; on failure the error is logged
 * once, here, naming the op and its keys. */
static dl_status_t store_request(dl_store_t *store, const char *op, const char *const *keys,
                                 size_t nkeys, json_t *req, const void *blob, size_t blob_len,
                                 dl_frame_t *resp_p)
{
    dl__deadline_t deadline = dl__net_deadline(store->timeout_ms);
    dl_frame_t resp = {0};
    dl_status_t st = DL_OK;
    char what[256], t[32];
    if (req == NULL) {
        st = DL_ERR_NOMEM;
        goto out;
    }

    if (store->fd < 0) {
        st = connect_retry(store->host, store->port, store->token, deadline, &store->fd);
        if (st != DL_OK) {
            store->fd = -1;
            goto err_log;
        }
    }
    st = dl_frame_send_fd(store->fd, req, blob, blob_len, dl__net_remaining_ms(deadline));
    if (st != DL_OK)
        goto err_drop_connection;
    st = dl_frame_recv_fd(store->fd, &resp, dl__net_remaining_ms(deadline));
    if (st != DL_OK)
        goto err_drop_connection;

    json_t *ok = json_object_get(resp.json, "ok");
    const char *type = json_string_value(json_object_get(resp.json, "type"));
    if (!json_is_boolean(ok) && type != NULL && strcmp(type, "challenge") == 0) {
        dl_log_error("the store at %s:%d wants a token and we have none (DISTLAB_TOKEN)",
                     store->host, store->port);
        st = DL_ERR_DENIED;
        goto err_clear_resp;
    }
    if (!json_is_boolean(ok)) {
        describe(op, keys, nkeys, what, sizeof(what));
        dl_log_error("store %s: response has no 'ok'", what);
        st = DL_ERR_PROTOCOL;
        goto err_clear_resp;
    }
    if (json_is_false(ok)) {
        json_t *code = json_object_get(resp.json, "code");
        const char *msg = json_string_value(json_object_get(resp.json, "error"));
        st = json_is_integer(code) && json_integer_value(code) < 0
                 ? (dl_status_t)json_integer_value(code)
                 : DL_ERR_PROTOCOL;
        /* A missing key on delete is an answer, not a failure. */
        if (st != DL_ERR_NOT_FOUND) {
            describe(op, keys, nkeys, what, sizeof(what));
            dl_log_error("store %s failed: %s", what, msg != NULL ? msg : dl_strerror(st));
        }
        dl_frame_clear(&resp);
        goto out;
    }
    *resp_p = resp;
    goto out;

err_clear_resp:
    dl_frame_clear(&resp);
err_drop_connection:
    close(store->fd);
    store->fd = -1;
err_log:
    describe(op, keys, nkeys, what, sizeof(what));
    if (st == DL_ERR_TIMEOUT)
        dl_log_error("store %s timed out after %s", what,
                     format_timeout(store->timeout_ms, t, sizeof(t)));
    else if (st == DL_ERR_CLOSED)
        dl_log_error("store %s failed: connection to %s:%d closed", what, store->host, store->port);
    /* Other failures were logged where they were detected. */
out:
    json_decref(req);
    return st;
}

dl_status_t dl_store_set(dl_store_t *store, const char *key, const void *val, size_t len)
{
    if (key == NULL || (val == NULL && len > 0))
        return DL_ERR_INVALID;
    dl_frame_t resp = {0};
    json_t *req = json_pack("{s:s,s:s}", "op", DL__STORE_OP_SET, "key", key);
    dl_status_t st = store_request(store, DL__STORE_OP_SET, &key, 1, req, val, len, &resp);
    dl_frame_clear(&resp);
    return st;
}

dl_status_t dl_store_set_str(dl_store_t *store, const char *key, const char *val)
{
    if (val == NULL)
        return DL_ERR_INVALID;
    return dl_store_set(store, key, val, strlen(val));
}

dl_status_t dl_store_get(dl_store_t *store, const char *key, void **val_p, size_t *len_p)
{
    if (key == NULL)
        return DL_ERR_INVALID;
    dl_frame_t resp = {0};
    json_t *req = json_pack("{s:s,s:s}", "op", DL__STORE_OP_GET, "key", key);
    dl_status_t st = store_request(store, DL__STORE_OP_GET, &key, 1, req, NULL, 0, &resp);
    if (st != DL_OK)
        return st;
    /* Hand the blob over with room for the terminating NUL. */
    uint8_t *val = realloc(resp.blob, resp.blob_len + 1);
    if (val == NULL) {
        dl_frame_clear(&resp);
        return DL_ERR_NOMEM;
    }
    val[resp.blob_len] = '\0';
    *val_p = val;
    *len_p = resp.blob_len;
    resp.blob = NULL;
    dl_frame_clear(&resp);
    return DL_OK;
}

dl_status_t dl_store_add(dl_store_t *store, const char *key, int64_t delta, int64_t *new_p)
{
    if (key == NULL)
        return DL_ERR_INVALID;
    dl_frame_t resp = {0};
    json_t *req =
        json_pack("{s:s,s:s,s:I}", "op", DL__STORE_OP_ADD, "key", key, "delta", (json_int_t)delta);
    dl_status_t st = store_request(store, DL__STORE_OP_ADD, &key, 1, req, NULL, 0, &resp);
    if (st != DL_OK)
        return st;
    json_t *value = json_object_get(resp.json, "value");
    if (!json_is_integer(value)) {
        dl_log_error("store add to '%s': response has no integer 'value'", key);
        st = DL_ERR_PROTOCOL;
    } else if (new_p != NULL) {
        *new_p = json_integer_value(value);
    }
    dl_frame_clear(&resp);
    return st;
}

dl_status_t dl_store_wait(dl_store_t *store, const char *const *keys, size_t nkeys)
{
    if (nkeys > 0 && keys == NULL)
        return DL_ERR_INVALID;
    json_t *arr = json_array();
    if (arr == NULL)
        return DL_ERR_NOMEM;
    for (size_t i = 0; i < nkeys; i++) {
        if (keys[i] == NULL) {
            json_decref(arr);
            return DL_ERR_INVALID;
        }
        if (json_array_append_new(arr, json_string(keys[i])) != 0) {
            json_decref(arr);
            return DL_ERR_NOMEM;
        }
    }
    dl_frame_t resp = {0};
    json_t *req = json_pack("{s:s,s:o}", "op", DL__STORE_OP_WAIT, "keys", arr);
    dl_status_t st = store_request(store, DL__STORE_OP_WAIT, keys, nkeys, req, NULL, 0, &resp);
    dl_frame_clear(&resp);
    return st;
}

dl_status_t dl_store_delete(dl_store_t *store, const char *key)
{
    if (key == NULL)
        return DL_ERR_INVALID;
    dl_frame_t resp = {0};
    json_t *req = json_pack("{s:s,s:s}", "op", DL__STORE_OP_DELETE, "key", key);
    dl_status_t st = store_request(store, DL__STORE_OP_DELETE, &key, 1, req, NULL, 0, &resp);
    dl_frame_clear(&resp);
    return st;
}

dl_status_t dl_store_num_keys(dl_store_t *store, int64_t *n_p)
{
    if (n_p == NULL)
        return DL_ERR_INVALID;
    dl_frame_t resp = {0};
    json_t *req = json_pack("{s:s}", "op", DL__STORE_OP_NUM_KEYS);
    dl_status_t st = store_request(store, DL__STORE_OP_NUM_KEYS, NULL, 0, req, NULL, 0, &resp);
    if (st != DL_OK)
        return st;
    json_t *value = json_object_get(resp.json, "value");
    if (!json_is_integer(value)) {
        dl_log_error("store num_keys: response has no integer 'value'");
        st = DL_ERR_PROTOCOL;
    } else {
        *n_p = json_integer_value(value);
    }
    dl_frame_clear(&resp);
    return st;
}
