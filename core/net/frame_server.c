/* See distlab/frame_server.h.
 *
 * Connections are unlinked from the server's list as they close and freed
 * in their handles' close callbacks, never synchronously, so a callback may
 * close any connection (its own included) while the server walks the list.
 * A connection held by its owner keeps reading into its decoder; resuming
 * it marks it ready, and the read callback that is running serves the
 * ready ones before it returns (rather than from inside the callback that
 * resumed them: a chain of resumptions would recurse as deep). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distlab/auth.h"
#include "distlab/frame_server.h"
#include "distlab/guard.h"
#include "distlab/log.h"

/* Before authentication: the largest frame a peer may send (an answer is a
 * few hundred bytes). How long it has to answer and how many may wait for
 * their answer at once are the guard's (distlab/guard.h). */
#define AUTH_FRAME_MAX (16u << 10)
/* Every rank of a job connects at once: a backlog smaller than the job
 * drops their SYNs, and each dropped one costs a second before the kernel
 * tries again (the kernel caps it at net.core.somaxconn). */
#define DEFAULT_BACKLOG 4096
#define READ_BUF_LEN    (64u << 10)

struct dl_frame_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* the deadline of the answer */
    dl_frame_server_t *srv;
    struct dl_frame_conn *prev, *next;
    dl_frame_decoder_t dec;
    char nonce[DL_AUTH_HEX_LEN];
    bool authed; /* open: answered the challenge, or the server has no token */
    bool closing;
    bool held;   /* see dl_frame_conn_hold */
    bool ready;  /* resumed with frames possibly still buffered */
    int handles; /* open libuv handles: the connection goes when none is left */
    void *data;
    char peer[80];
    char local[64];
    uint64_t last_rx_ms; /* the time (ms, uv_hrtime's clock) bytes were last read */
};

struct dl_frame_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    int port;
    char name[48];
    char *token; /* NULL: connections need not authenticate */
    size_t max_frame;
    dl_frame_server_cbs_t cbs;
    void *arg;
    dl_frame_conn_t *conns; /* open connections, authenticated or not */
    int pending;            /* connections still waiting for their answer */
    dl_guard_t guard;       /* its deadline_ms: opts' auth_timeout_ms, else the variable's */
    int open_handles;       /* the listener's and every connection's */
    bool closing;
    void (*done)(void *arg);
    void *done_arg;
    /* Reads on one loop never overlap, so one buffer serves every
     * connection before its bytes are copied into the connection's decoder. */
    char read_buf[READ_BUF_LEN];
};

typedef struct {
    uv_write_t req;
    uint8_t *buf;
} write_t;

/* ---- teardown ---- */

static void server_handle_gone(dl_frame_server_t *s)
{
    if (--s->open_handles > 0 || !s->closing)
        return;
    void (*done)(void *) = s->done;
    void *done_arg = s->done_arg;
    dl_guard_fini(&s->guard);
    free(s->token);
    free(s);
    if (done != NULL)
        done(done_arg);
}

static void listener_closed(uv_handle_t *h)
{
    server_handle_gone(h->data);
}

static void conn_handle_closed(uv_handle_t *h)
{
    dl_frame_conn_t *c = h->data;
    if (--c->handles > 0)
        return;
    dl_frame_server_t *s = c->srv;
    dl_frame_decoder_free(&c->dec);
    free(c);
    server_handle_gone(s);
}

static void conn_shut(dl_frame_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    c->ready = false;
    dl_frame_server_t *s = c->srv;
    if (!c->authed)
        s->pending--;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

void dl_frame_conn_close(dl_frame_conn_t *c)
{
    conn_shut(c);
}

static void say_refused(dl_frame_server_t *s, const char *line)
{
    if (s->cbs.on_refused != NULL)
        s->cbs.on_refused(s->arg, line);
    else
        dl_log_warn("%s: %s", s->name, line);
}

static void refuse(dl_frame_conn_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drops a connection that was never open, saying why in one line. */
static void refuse(dl_frame_conn_t *c, const char *fmt, ...)
{
    dl_frame_server_t *s = c->srv;
    char why[256], line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "dropped a connection from %s: %s", c->peer, why);
    conn_shut(c);
    say_refused(s, line);
}

/* Drops a connection that did not answer in time or has to make room for a
 * newer one: one line for a whole flood of them (distlab/guard.h). */
static void drop_silent(dl_frame_conn_t *c, const char *why)
{
    dl_frame_server_t *s = c->srv;
    if (!dl_guard_should_say(&s->guard)) {
        conn_shut(c);
        return;
    }
    refuse(c, "%s (further drops within %g s are not reported one by one)", why,
           s->guard.deadline_ms / 1000.0);
}

/* The connection that has waited longest for its answer, or NULL. New
 * connections go to the head of the list, so that is the last one waiting. */
static dl_frame_conn_t *oldest_pending(dl_frame_server_t *s)
{
    dl_frame_conn_t *oldest = NULL;
    for (dl_frame_conn_t *c = s->conns; c != NULL; c = c->next)
        if (!c->authed)
            oldest = c;
    return oldest;
}

/* ---- writing ---- */

static void write_done(uv_write_t *req, int status)
{
    (void)status; /* a failed write shows up as a failed read too */
    write_t *w = (write_t *)req;
    free(w->buf);
    free(w);
}

dl_status_t dl_frame_conn_send(dl_frame_conn_t *c, const json_t *msg, const void *blob, size_t len)
{
    if (c->closing)
        return DL_ERR_CLOSED;
    write_t *w = calloc(1, sizeof(*w));
    size_t n = 0;
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_status_t st = dl_frame_encode(msg, blob, len, &w->buf, &n);
    if (st != DL_OK) {
        free(w);
        return st;
    }
    uv_buf_t b = uv_buf_init((char *)w->buf, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, write_done) != 0) {
        free(w->buf);
        free(w);
        return DL_ERR_CLOSED;
    }
    return DL_OK;
}

/* ---- reading ---- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Looks at the header of a stranger's first frame before the decoder does,
 * so that garbage is refused with one line naming the peer. */
static bool header_plausible(dl_frame_conn_t *c)
{
    if (c->dec.len < 4)
        return true;
    uint32_t body = be32(c->dec.buf);
    if (body > AUTH_FRAME_MAX) {
        refuse(c, "a frame of %u bytes before authenticating (at most %u): not a distlab peer",
               body, AUTH_FRAME_MAX);
        return false;
    }
    if (body < 4 || (c->dec.len >= 8 && be32(c->dec.buf + 4) > body - 4)) {
        refuse(c, "garbage instead of a frame: not a distlab peer");
        return false;
    }
    return true;
}

/* The connection is open: frames of any size, and the owner knows it. */
static void conn_open(dl_frame_conn_t *c)
{
    c->authed = true;
    c->dec.max_frame = c->srv->max_frame;
    if (c->srv->cbs.on_open != NULL)
        c->srv->cbs.on_open(c);
}

static void authenticate(dl_frame_conn_t *c, const dl_frame_t *f)
{
    dl_frame_server_t *s = c->srv;
    const char *type = json_string_value(json_object_get(f->json, "type"));
    if (type == NULL || strcmp(type, "auth") != 0) {
        refuse(c, "it did not answer the challenge (a client of another version?)");
        return;
    }
    json_t *welcome = dl_auth_answer(s->token, c->nonce, f->json);
    if (welcome == NULL) {
        refuse(c, "wrong token");
        return;
    }
    char why[200] = "refused";
    if (s->cbs.on_auth != NULL && !s->cbs.on_auth(c, f->json, welcome, why, sizeof(why))) {
        json_decref(welcome);
        if (!c->closing && !s->closing)
            refuse(c, "%s", why);
        return;
    }
    /* A connection that on_auth closed was counted out as it closed. */
    if (c->closing) {
        json_decref(welcome);
        return;
    }
    s->pending--;
    uv_timer_stop(&c->timer);
    dl_frame_conn_send(c, welcome, NULL, 0);
    json_decref(welcome);
    conn_open(c);
}

/* Serves the connection's buffered frames until it is held, runs dry or
 * goes. */
static void conn_run(dl_frame_conn_t *c)
{
    dl_frame_server_t *s = c->srv;
    dl_status_t st = DL_OK;
    while (!c->held && !c->closing && !s->closing) {
        if (!c->authed && !header_plausible(c))
            return;
        dl_frame_t f = {0};
        st = dl_frame_decoder_next(&c->dec, &f);
        if (st != DL_OK)
            break;
        if (c->authed) {
            if (s->cbs.on_frame != NULL)
                s->cbs.on_frame(c, &f);
        } else {
            authenticate(c, &f);
        }
        dl_frame_clear(&f);
    }
    if (st == DL_OK || st == DL_ERR_AGAIN || c->closing || s->closing)
        return;
    /* The decoder logged what was wrong with the frame. */
    bool authed = c->authed;
    conn_shut(c);
    if (authed && s->cbs.on_close != NULL)
        s->cbs.on_close(c, st == DL_ERR_TOO_BIG ? "an oversize frame" : "a malformed frame");
}

/* Serves the connections that were resumed; serving them may resume more. */
static void drain_ready(dl_frame_server_t *s)
{
    bool progress = true;
    while (progress && !s->closing) {
        progress = false;
        for (dl_frame_conn_t *c = s->conns; c != NULL; c = c->next) {
            if (!c->ready)
                continue;
            c->ready = false;
            conn_run(c);
            progress = true;
            break; /* conn_run may have closed others: walk again from the head */
        }
    }
}

void dl_frame_conn_hold(dl_frame_conn_t *c)
{
    c->held = true;
}

void dl_frame_conn_resume(dl_frame_conn_t *c)
{
    c->held = false;
    if (!c->closing && c->dec.len > 0)
        c->ready = true;
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    dl_frame_conn_t *c = h->data;
    *buf = uv_buf_init(c->srv->read_buf, sizeof(c->srv->read_buf));
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    dl_frame_conn_t *c = stream->data;
    dl_frame_server_t *s = c->srv;
    if (nread == 0)
        return;
    if (nread < 0) {
        bool authed = c->authed;
        conn_shut(c);
        /* A stranger that leaves is not worth a line. */
        if (authed && s->cbs.on_close != NULL)
            s->cbs.on_close(c, nread == UV_EOF ? "connection closed" : uv_strerror((int)nread));
        return;
    }
    /* The clock, not the loop's time: the loop's time is that of the last
     * poll, and a loop busy with a flood from one peer reads the others'
     * bytes long after it. */
    c->last_rx_ms = uv_hrtime() / 1000000;
    if (dl_frame_decoder_feed(&c->dec, buf->base, (size_t)nread) != DL_OK) {
        dl_log_error("%s: out of memory buffering a frame from %s", s->name, c->peer);
        bool authed = c->authed;
        conn_shut(c);
        if (authed && s->cbs.on_close != NULL)
            s->cbs.on_close(c, "out of memory");
        return;
    }
    conn_run(c);
    drain_ready(s);
}

static void auth_timeout(uv_timer_t *t)
{
    dl_frame_conn_t *c = t->data;
    if (!c->authed)
        drop_silent(c, "no answer to the challenge in time");
}

/* ---- accepting ---- */

static void format_addr(const struct sockaddr_storage *ss, bool with_port, char *out, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        uv_ip6_name(a, ip, sizeof(ip));
        port = ntohs(a->sin6_port);
        if (with_port)
            snprintf(out, cap, "[%s]:%d", ip, port);
        else
            snprintf(out, cap, "%s", ip);
        return;
    }
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        uv_ip4_name(a, ip, sizeof(ip));
        port = ntohs(a->sin_port);
    }
    if (with_port)
        snprintf(out, cap, "%s:%d", ip, port);
    else
        snprintf(out, cap, "%s", ip);
}

/* accept() failed for want of descriptors. libuv calls again at once while
 * connections wait, so a descriptor must be freed here: the oldest
 * unanswered connection's, or the guard's spare to shed those that wait. */
static void out_of_descriptors(dl_frame_server_t *s, int status)
{
    dl_frame_conn_t *oldest = oldest_pending(s);
    if (oldest != NULL) {
        drop_silent(oldest, "out of descriptors, the oldest unauthenticated connection goes");
        return;
    }
    int fd = -1;
    int shed = uv_fileno((uv_handle_t *)&s->listener, &fd) == 0 ? dl_guard_shed(&s->guard, fd) : 0;
    if (dl_guard_should_say(&s->guard)) {
        char line[200];
        snprintf(line, sizeof(line), "cannot accept connections: %s; closed %d waiting",
                 uv_strerror(status), shed);
        say_refused(s, line);
    }
}

static void on_connection(uv_stream_t *listener, int status)
{
    dl_frame_server_t *s = listener->data;
    if (s->closing)
        return;
    if (status == UV_EMFILE || status == UV_ENFILE) {
        out_of_descriptors(s, status);
        return;
    }
    if (status < 0) {
        dl_log_debug("%s: accept failed: %s", s->name, uv_strerror(status));
        return;
    }
    dl_frame_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->srv = s;
    dl_frame_decoder_init(&c->dec, AUTH_FRAME_MAX);
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->handles = 2;
    s->open_handles++;
    s->pending++;
    c->next = s->conns;
    if (s->conns != NULL)
        s->conns->prev = c;
    s->conns = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_shut(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0)
        format_addr(&ss, true, c->peer, sizeof(c->peer));
    len = sizeof(ss);
    if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&ss, &len) == 0)
        format_addr(&ss, false, c->local, sizeof(c->local));
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0) {
        conn_shut(c);
        return;
    }
    if (s->token == NULL) {
        s->pending--;
        conn_open(c);
        return;
    }
    json_t *ch = NULL;
    if (dl_auth_new_nonce(c->nonce) != DL_OK || (ch = dl_auth_challenge(c->nonce)) == NULL) {
        json_decref(ch);
        conn_shut(c);
        return;
    }
    dl_frame_conn_send(c, ch, NULL, 0);
    json_decref(ch);
    uv_timer_start(&c->timer, auth_timeout, (uint64_t)s->guard.deadline_ms, 0);
    /* A real peer answers within a round trip; the oldest of a flood of
     * silent ones makes room. */
    if (s->pending > dl_guard_cap(&s->guard)) {
        char why[96];
        snprintf(why, sizeof(why), "more than %d connections wait to authenticate, the oldest goes",
                 dl_guard_cap(&s->guard));
        drop_silent(oldest_pending(s), why);
    }
}

dl_status_t dl_frame_server_start(uv_loop_t *loop, const dl_frame_server_opts_t *opts,
                                  const dl_frame_server_cbs_t *cbs, void *arg,
                                  dl_frame_server_t **s_p)
{
    if (loop == NULL || opts->port < 0 || opts->port > 65535)
        return DL_ERR_INVALID;
    const char *host = opts->host != NULL ? opts->host : "127.0.0.1";
    dl_frame_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return DL_ERR_NOMEM;
    bool with_token = opts->token != NULL && opts->token[0] != '\0';
    if (with_token && (s->token = strdup(opts->token)) == NULL) {
        free(s);
        return DL_ERR_NOMEM;
    }
    snprintf(s->name, sizeof(s->name), "%s", opts->name != NULL ? opts->name : "server");
    s->loop = loop;
    dl_guard_init(&s->guard);
    s->cbs = *cbs;
    s->arg = arg;
    s->max_frame = opts->max_frame != 0 ? opts->max_frame : DL_FRAME_MAX;
    if (opts->auth_timeout_ms > 0)
        s->guard.deadline_ms = opts->auth_timeout_ms;
    int backlog = opts->backlog > 0 ? opts->backlog : DEFAULT_BACKLOG;
    int fd = -1;
    dl_status_t st = dl_frame_listen(s->name, host, opts->port, backlog, &fd, &s->port);
    if (st != DL_OK)
        goto err_free_server;
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->open_handles = 1;
    int rc = uv_tcp_open(&s->listener, fd);
    if (rc != 0)
        close(fd);
    else
        rc = uv_listen((uv_stream_t *)&s->listener, backlog, on_connection);
    if (rc != 0) {
        dl_log_error("%s cannot listen on %s:%d: %s", s->name, host, opts->port, uv_strerror(rc));
        /* The handle exists now, so only its close callback may free s; it
         * runs on the caller's next loop turn. */
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, listener_closed);
        return DL_ERR_SYSTEM;
    }
    dl_log_debug("%s listening on port %d", s->name, s->port);
    *s_p = s;
    return DL_OK;

err_free_server:
    dl_guard_fini(&s->guard);
    free(s->token);
    free(s);
    return st;
}

int dl_frame_server_port(const dl_frame_server_t *s)
{
    return s->port;
}

void dl_frame_server_close(dl_frame_server_t *s, void (*done)(void *arg), void *arg)
{
    if (s->closing)
        return;
    s->closing = true;
    s->done = done;
    s->done_arg = arg;
    while (s->conns != NULL)
        conn_shut(s->conns);
    uv_close((uv_handle_t *)&s->listener, listener_closed);
}

void *dl_frame_conn_arg(const dl_frame_conn_t *c)
{
    return c->srv->arg;
}

uint64_t dl_frame_conn_last_rx(const dl_frame_conn_t *c)
{
    /* Bytes that wait in the kernel arrived, and the peer is not to blame
     * that this loop has not read them yet. */
    uv_os_fd_t fd;
    int waiting = 0;
    if (!c->closing && uv_fileno((const uv_handle_t *)&c->tcp, &fd) == 0 &&
        ioctl(fd, FIONREAD, &waiting) == 0 && waiting > 0)
        return uv_hrtime() / 1000000;
    return c->last_rx_ms;
}

void *dl_frame_conn_data(const dl_frame_conn_t *c)
{
    return c->data;
}

void dl_frame_conn_set_data(dl_frame_conn_t *c, void *data)
{
    c->data = data;
}

const char *dl_frame_conn_peer(const dl_frame_conn_t *c)
{
    return c->peer;
}

const char *dl_frame_conn_local_ip(const dl_frame_conn_t *c)
{
    return c->local;
}
