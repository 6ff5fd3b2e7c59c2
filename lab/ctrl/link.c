/* See link.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distlab/auth.h"
#include "distlab/guard.h"
#include "distlab/log.h"
#include "lab/ctrl/link.h"

/* Before authentication: the largest frame a peer may send (an answer is a
 * few hundred bytes) and how long it has to answer. How many may wait for
 * their answer at once is the guard's cap (distlab/guard.h). */
#define AUTH_FRAME_MAX  (16u << 10)
#define AUTH_TIMEOUT_MS DL_GUARD_AUTH_TIMEOUT_MS
#define BACKLOG         128

struct lab_link {
    uv_tcp_t tcp;
    uv_timer_t timer; /* the deadline of the answer */
    lab_server_t *srv;
    struct lab_link *prev, *next;
    dl_frame_decoder_t dec;
    char nonce[DL_AUTH_HEX_LEN];
    bool authed;
    bool closing;
    int handles; /* open libuv handles: the link goes when none is left */
    void *data;
    char peer[80];
    char local[64];
    uint64_t last_rx_ms; /* the loop's time when bytes last arrived */
};

struct lab_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    int port;
    char *token;
    size_t max_frame;
    lab_link_cbs_t cbs;
    void *arg;
    lab_link_t *links; /* open links, accepted or not */
    int pending;       /* links still waiting for their answer */
    dl_guard_t guard;
    int open_handles; /* the listener's and every link's */
    bool closing;
    void (*done)(void *arg);
    void *done_arg;
};

typedef struct {
    uv_write_t req;
    uint8_t *buf;
} write_t;

/* ---- teardown ---- */

static void server_handle_gone(lab_server_t *s)
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

static void link_handle_closed(uv_handle_t *h)
{
    lab_link_t *l = h->data;
    if (--l->handles > 0)
        return;
    lab_server_t *s = l->srv;
    dl_frame_decoder_free(&l->dec);
    free(l);
    server_handle_gone(s);
}

static void link_shut(lab_link_t *l)
{
    if (l->closing)
        return;
    l->closing = true;
    lab_server_t *s = l->srv;
    if (!l->authed)
        s->pending--;
    if (l->prev != NULL)
        l->prev->next = l->next;
    else
        s->links = l->next;
    if (l->next != NULL)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
    uv_timer_stop(&l->timer);
    uv_close((uv_handle_t *)&l->tcp, link_handle_closed);
    uv_close((uv_handle_t *)&l->timer, link_handle_closed);
}

void lab_link_close(lab_link_t *l)
{
    link_shut(l);
}

static void say_refused(lab_server_t *s, const char *line)
{
    if (s->cbs.on_refused != NULL)
        s->cbs.on_refused(s->arg, line);
    else
        dl_log_warn("%s", line);
}

static void refuse(lab_link_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drops a connection that was never accepted, saying why in one line. */
static void refuse(lab_link_t *l, const char *fmt, ...)
{
    lab_server_t *s = l->srv;
    char why[256], line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "dropped a connection from %s: %s", l->peer, why);
    link_shut(l);
    say_refused(s, line);
}

/* Drops a connection that did not answer in time or has to make room for a
 * newer one: one line for a whole flood of them (distlab/guard.h). */
static void drop_silent(lab_link_t *l, const char *why)
{
    lab_server_t *s = l->srv;
    if (!dl_guard_should_say(&s->guard)) {
        link_shut(l);
        return;
    }
    refuse(l, "%s (further drops within %d s are not reported one by one)", why,
           AUTH_TIMEOUT_MS / 1000);
}

/* The link that has waited longest for its answer, or NULL. New links go
 * to the head of the list, so that is the last one waiting. */
static lab_link_t *oldest_pending(lab_server_t *s)
{
    lab_link_t *oldest = NULL;
    for (lab_link_t *l = s->links; l != NULL; l = l->next)
        if (!l->authed)
            oldest = l;
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

dl_status_t lab_link_send(lab_link_t *l, const json_t *msg, const void *blob, size_t len)
{
    if (l->closing)
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
    if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &b, 1, write_done) != 0) {
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
static bool header_plausible(lab_link_t *l)
{
    if (l->dec.len < 4)
        return true;
    uint32_t body = be32(l->dec.buf);
    if (body > AUTH_FRAME_MAX) {
        refuse(l, "a frame of %u bytes before authenticating (at most %u): not a distlab peer",
               body, AUTH_FRAME_MAX);
        return false;
    }
    if (body < 4 || (l->dec.len >= 8 && be32(l->dec.buf + 4) > body - 4)) {
        refuse(l, "garbage instead of a frame: not a distlab peer");
        return false;
    }
    return true;
}

static void authenticate(lab_link_t *l, const dl_frame_t *f)
{
    lab_server_t *s = l->srv;
    const char *type = json_string_value(json_object_get(f->json, "type"));
    if (type == NULL || strcmp(type, "auth") != 0) {
        refuse(l, "it did not answer the challenge (a client of another version?)");
        return;
    }
    json_t *welcome = dl_auth_answer(s->token, l->nonce, f->json);
    if (welcome == NULL) {
        refuse(l, "wrong token");
        return;
    }
    char why[200] = "refused";
    if (s->cbs.on_auth != NULL && !s->cbs.on_auth(l, f->json, welcome, why, sizeof(why))) {
        json_decref(welcome);
        if (!l->closing && !s->closing)
            refuse(l, "%s", why);
        return;
    }
    /* A link that on_auth closed was counted out as it closed. */
    if (!l->closing)
        s->pending--;
    l->authed = true;
    uv_timer_stop(&l->timer);
    l->dec.max_frame = s->max_frame;
    lab_link_send(l, welcome, NULL, 0);
    json_decref(welcome);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base != NULL ? suggested : 0;
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    lab_link_t *l = stream->data;
    lab_server_t *s = l->srv;
    if (nread > 0)
        l->last_rx_ms = uv_now(stream->loop);
    if (nread == 0) {
        free(buf->base);
        return;
    }
    if (nread < 0) {
        free(buf->base);
        bool authed = l->authed;
        link_shut(l);
        /* A stranger that leaves is not worth a line. */
        if (authed && s->cbs.on_close != NULL)
            s->cbs.on_close(l, nread == UV_EOF ? "connection closed" : uv_strerror((int)nread));
        return;
    }
    dl_status_t st = dl_frame_decoder_feed(&l->dec, buf->base, (size_t)nread);
    free(buf->base);
    while (st == DL_OK && !l->closing && !s->closing) {
        if (!l->authed && !header_plausible(l))
            return;
        dl_frame_t f = {0};
        st = dl_frame_decoder_next(&l->dec, &f);
        if (st != DL_OK)
            break;
        if (l->authed) {
            if (s->cbs.on_frame != NULL)
                s->cbs.on_frame(l, &f);
        } else {
            authenticate(l, &f);
        }
        dl_frame_clear(&f);
    }
    if (st == DL_OK || st == DL_ERR_AGAIN || l->closing || s->closing)
        return;
    /* The decoder logged what was wrong with the frame. */
    bool authed = l->authed;
    link_shut(l);
    if (authed && s->cbs.on_close != NULL)
        s->cbs.on_close(l, st == DL_ERR_TOO_BIG ? "an oversize frame" : "a malformed frame");
}

static void auth_timeout(uv_timer_t *t)
{
    lab_link_t *l = t->data;
    if (!l->authed)
        drop_silent(l, "no answer to the challenge in time");
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
 * unanswered link's, or the guard's spare to shed those that wait. */
static void out_of_descriptors(lab_server_t *s, int status)
{
    lab_link_t *oldest = oldest_pending(s);
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
    lab_server_t *s = listener->data;
    if (s->closing)
        return;
    if (status == UV_EMFILE || status == UV_ENFILE) {
        out_of_descriptors(s, status);
        return;
    }
    if (status < 0)
        return;
    lab_link_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return;
    l->srv = s;
    dl_frame_decoder_init(&l->dec, AUTH_FRAME_MAX);
    uv_tcp_init(s->loop, &l->tcp);
    uv_timer_init(s->loop, &l->timer);
    l->tcp.data = l->timer.data = l;
    l->handles = 2;
    s->open_handles++;
    s->pending++;
    l->next = s->links;
    if (s->links != NULL)
        s->links->prev = l;
    s->links = l;
    if (uv_accept(listener, (uv_stream_t *)&l->tcp) != 0) {
        link_shut(l);
        return;
    }
    uv_tcp_nodelay(&l->tcp, 1);
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    if (uv_tcp_getpeername(&l->tcp, (struct sockaddr *)&ss, &len) == 0)
        format_addr(&ss, true, l->peer, sizeof(l->peer));
    len = sizeof(ss);
    if (uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len) == 0)
        format_addr(&ss, false, l->local, sizeof(l->local));
    json_t *ch = NULL;
    if (dl_auth_new_nonce(l->nonce) != DL_OK || (ch = dl_auth_challenge(l->nonce)) == NULL ||
        uv_read_start((uv_stream_t *)&l->tcp, alloc_cb, read_cb) != 0) {
        json_decref(ch);
        link_shut(l);
        return;
    }
    lab_link_send(l, ch, NULL, 0);
    json_decref(ch);
    uv_timer_start(&l->timer, auth_timeout, AUTH_TIMEOUT_MS, 0);
    /* A real peer answers within a round trip; the oldest of a flood of
     * silent ones makes room. */
    if (s->pending > dl_guard_cap(&s->guard)) {
        char why[96];
        snprintf(why, sizeof(why), "more than %d connections wait to authenticate, the oldest goes",
                 dl_guard_cap(&s->guard));
        drop_silent(oldest_pending(s), why);
    }
}

dl_status_t lab_server_start(uv_loop_t *loop, const lab_server_opts_t *opts,
                             const lab_link_cbs_t *cbs, void *arg, lab_server_t **s_p)
{
    if (opts->token == NULL || strlen(opts->token) < DL_AUTH_TOKEN_MIN)
        return DL_ERR_INVALID;
    const char *host = opts->host != NULL ? opts->host : "127.0.0.1";
    lab_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL || (s->token = strdup(opts->token)) == NULL) {
        free(s);
        return DL_ERR_NOMEM;
    }
    s->loop = loop;
    dl_guard_init(&s->guard);
    s->cbs = *cbs;
    s->arg = arg;
    s->max_frame = opts->max_frame != 0 ? opts->max_frame : DL_FRAME_MAX;
    int fd = -1;
    dl_status_t st = dl_frame_listen("the shell", host, opts->port, BACKLOG, &fd, &s->port);
    if (st != DL_OK) {
        dl_guard_fini(&s->guard);
        free(s->token);
        free(s);
        return st;
    }
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->open_handles = 1;
    int rc = uv_tcp_open(&s->listener, fd);
    if (rc != 0)
        close(fd);
    else
        rc = uv_listen((uv_stream_t *)&s->listener, BACKLOG, on_connection);
    if (rc != 0) {
        dl_log_error("cannot listen on %s:%d: %s", host, opts->port, uv_strerror(rc));
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, listener_closed);
        return DL_ERR_SYSTEM;
    }
    *s_p = s;
    return DL_OK;
}

int lab_server_port(const lab_server_t *s)
{
    return s->port;
}

void lab_server_close(lab_server_t *s, void (*done)(void *arg), void *arg)
{
    if (s->closing)
        return;
    s->closing = true;
    s->done = done;
    s->done_arg = arg;
    while (s->links != NULL)
        link_shut(s->links);
    uv_close((uv_handle_t *)&s->listener, listener_closed);
}

void *lab_link_arg(const lab_link_t *l)
{
    return l->srv->arg;
}

uint64_t lab_link_last_rx(const lab_link_t *l)
{
    return l->last_rx_ms;
}

void *lab_link_data(const lab_link_t *l)
{
    return l->data;
}

void lab_link_set_data(lab_link_t *l, void *data)
{
    l->data = data;
}

const char *lab_link_peer(const lab_link_t *l)
{
    return l->peer;
}

const char *lab_link_local_ip(const lab_link_t *l)
{
    return l->local;
}

/* ---- addresses ---- */

bool lab_parse_hostport(const char *s, char *host, size_t cap, int *port_p)
{
    const char *port_s;
    if (s == NULL || *s == '\0')
        return false;
    if (strspn(s, "0123456789") == strlen(s)) {
        snprintf(host, cap, "127.0.0.1");
        port_s = s;
    } else if (s[0] == '[') {
        const char *end = strstr(s, "]:");
        if (end == NULL || end == s + 1 || (size_t)(end - s - 1) >= cap)
            return false;
        snprintf(host, cap, "%.*s", (int)(end - s - 1), s + 1);
        port_s = end + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon == NULL || colon == s || memchr(s, ':', (size_t)(colon - s)) != NULL ||
            (size_t)(colon - s) >= cap)
            return false;
        snprintf(host, cap, "%.*s", (int)(colon - s), s);
        port_s = colon + 1;
    }
    if (*port_s == '\0' || strspn(port_s, "0123456789") != strlen(port_s) || strlen(port_s) > 5)
        return false;
    int port = atoi(port_s);
    if (port > 65535)
        return false;
    if (strcmp(host, "*") == 0)
        snprintf(host, cap, "0.0.0.0");
    *port_p = port;
    return true;
}

bool lab_host_is_wildcard(const char *host)
{
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 || strcmp(host, "*") == 0;
}
