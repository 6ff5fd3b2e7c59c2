/* The TCP transport's I/O thread: the libuv loop, accepting and the
 * handshake, framing, reading into messages, writing send slots, leaving
 * and aborting. It never logs: it leaves notes for the rank's thread (see
 * tcp_internal.h for what the two threads share). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "distlab/frame.h"
#include "net/internal.h"
#include "transport/tcp_internal.h"

typedef struct {
    uint32_t magic;
    uint16_t type;
    uint32_t ctx;
    int64_t tag;
    uint64_t n;
} wire_hdr_t;

static wire_hdr_t get_hdr(const uint8_t *p)
{
    uint32_t magic, ctx;
    uint16_t ty;
    uint64_t tag, n;
    memcpy(&magic, p, 4);
    memcpy(&ty, p + 4, 2);
    memcpy(&ctx, p + 8, 4);
    memcpy(&tag, p + 16, 8);
    memcpy(&n, p + 24, 8);
    return (wire_hdr_t){le32toh(magic), le16toh(ty), le32toh(ctx), (int64_t)le64toh(tag),
                        le64toh(n)};
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Records a line for the main thread to log (the I/O thread never logs). */
static void note(dl_tcp_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(dl_tcp_t *t, const char *fmt, ...)
{
    char line[NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&t->lock);
    if (t->n_notes < MAX_NOTES)
        memcpy(t->notes[t->n_notes++], line, sizeof(line));
    else
        t->notes_lost++;
    atomic_store(&t->has_notes, 1);
    pthread_mutex_unlock(&t->lock);
}

/* ---- message buffers ---- */

static tcp_msg_t *msg_alloc(dl_tcp_t *t, size_t n)
{
    if (n >= SPARE_MIN) {
        pthread_mutex_lock(&t->lock);
        tcp_msg_t **best = NULL;
        for (tcp_msg_t **pp = &t->spares; *pp != NULL; pp = &(*pp)->next)
            if ((*pp)->cap >= n && (best == NULL || (*pp)->cap < (*best)->cap))
                best = pp;
        tcp_msg_t *m = NULL;
        if (best != NULL) {
            m = *best;
            *best = m->next;
            t->n_spares--;
        }
        pthread_mutex_unlock(&t->lock);
        if (m != NULL) {
            m->n = n;
            m->next = NULL;
            return m;
        }
    }
    if (n > SIZE_MAX - sizeof(tcp_msg_t))
        return NULL;
    tcp_msg_t *m = malloc(sizeof(*m) + n);
    if (m != NULL) {
        m->next = NULL;
        m->n = m->cap = n;
    }
    return m;
}

void dl__tcp_msg_free(dl_tcp_t *t, tcp_msg_t *m)
{
    if (m == NULL)
        return;
    if (m->cap >= SPARE_MIN) {
        /* Keep the largest few: a small spare gives way to a larger one. */
        pthread_mutex_lock(&t->lock);
        tcp_msg_t **smallest = NULL;
        for (tcp_msg_t **pp = &t->spares; *pp != NULL; pp = &(*pp)->next)
            if (smallest == NULL || (*pp)->cap < (*smallest)->cap)
                smallest = pp;
        if (t->n_spares == SPARE_KEEP && (*smallest)->cap < m->cap) {
            tcp_msg_t *out = *smallest; /* freed below, in m's place */
            *smallest = out->next;
            m->next = t->spares;
            t->spares = m;
            m = out;
        } else if (t->n_spares < SPARE_KEEP) {
            m->next = t->spares;
            t->spares = m;
            t->n_spares++;
            m = NULL;
        }
        pthread_mutex_unlock(&t->lock);
    }
    free(m);
}

/* ================= the I/O thread ================= */

static void slot_done(dl_tcp_t *t, tcp_slot_t *s)
{
    atomic_store_explicit(&s->state, SLOT_WRITTEN, memory_order_release);
    t->wake(t->arg);
}

static void on_conn_closed(uv_handle_t *h)
{
    tcp_conn_t *c = h->data;
    if (--c->handles > 0)
        return;
    dl_tcp_t *t = c->t;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    dl__tcp_msg_free(t, c->cur);
    free(c->in);
    free(c);
}

/* Tells a leaving main thread once every peer has said goodbye. */
static void check_left(dl_tcp_t *t)
{
    if (!t->leaving || t->n_live > 0)
        return;
    pthread_mutex_lock(&t->lock);
    t->left_done = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void conn_close(tcp_conn_t *c)
{
    if (c->state == CONN_CLOSING)
        return;
    dl_tcp_t *t = c->t;
    if (c->state == CONN_HANDSHAKE)
        t->n_handshaking--;
    if (c->state == CONN_OPEN) {
        t->n_live--;
        if (c->peer >= 0 && t->by_peer[c->peer] == c)
            t->by_peer[c->peer] = NULL;
    }
    c->state = CONN_CLOSING;
    uv_close((uv_handle_t *)&c->h, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
    check_left(t);
}

static tcp_conn_t *conn_new(dl_tcp_t *t)
{
    tcp_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->t = t;
    c->peer = -1;
    c->state = CONN_HANDSHAKE;
    uv_tcp_init(&t->loop, &c->h);
    uv_timer_init(&t->loop, &c->timer);
    c->h.data = c->timer.data = c;
    c->handles = 2;
    t->n_handshaking++;
    c->next = t->conns;
    if (t->conns != NULL)
        t->conns->prev = c;
    t->conns = c;
    return c;
}

static void tune_socket(tcp_conn_t *c)
{
    uv_tcp_nodelay(&c->h, 1);
    uv_tcp_keepalive(&c->h, 1, KEEPALIVE_S);
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->h, &fd) == 0) {
        int intvl = KEEPINTVL_S, cnt = KEEPCNT;
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    c->addr[0] = '\0';
    if (uv_tcp_getpeername(&c->h, (struct sockaddr *)&ss, &len) == 0) {
        char ip[INET6_ADDRSTRLEN] = "?";
        int port = 0;
        if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        } else {
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        }
        snprintf(c->addr, sizeof(c->addr), "%s:%d", ip, port);
    }
}

/* Writes a malloc'd buffer; frees it once written. */
static void on_owned_written(uv_write_t *req, int status)
{
    (void)status; /* a failed connection is noticed by its reader */
    free(req->data);
    free(req);
}

static void write_owned(tcp_conn_t *c, uint8_t *buf, size_t len)
{
    uv_write_t *req = malloc(sizeof(*req));
    if (req == NULL) {
        free(buf);
        return;
    }
    req->data = buf;
    uv_buf_t b = uv_buf_init((char *)buf, (unsigned)len);
    if (uv_write(req, (uv_stream_t *)&c->h, &b, 1, on_owned_written) != 0) {
        free(buf);
        free(req);
    }
}

static void write_frame(tcp_conn_t *c, json_t *msg)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (msg != NULL && dl_frame_encode(msg, NULL, 0, &buf, &len) == DL_OK)
        write_owned(c, buf, len);
    json_decref(msg);
}

static void send_abort_all(dl_tcp_t *t, int culprit, const char *why)
{
    size_t n = strnlen(why, ABORT_WHY_MAX);
    t->abort_sent = true;
    for (tcp_conn_t *c = t->conns; c != NULL; c = c->next) {
        if (c->state != CONN_OPEN || c->peer_left)
            continue;
        uint8_t *buf = malloc(HDR_LEN + n);
        if (buf == NULL)
            continue;
        put_hdr(buf, FR_ABORT, 0, culprit, n);
        memcpy(buf + HDR_LEN, why, n);
        write_owned(c, buf, HDR_LEN + n);
    }
}

/* A peer's connection failed: the peer is gone, or unusable. The first
 * failure is recorded for the main thread, aborts the local world and is
 * passed on to every other peer. */
static void peer_failed(dl_tcp_t *t, int peer, dl_status_t st, const char *why)
{
    int none = -1;
    if (t->leaving || t->stopping || t->abort_sent || t->abort_seen)
        return;
    if (!atomic_compare_exchange_strong(&t->failed_rank, &none, -2))
        return;
    snprintf(t->failed_why, sizeof(t->failed_why), "%s", why);
    t->failed_st = st;
    atomic_store(&t->failed_rank, peer);
    t->on_abort(t->arg, peer, why);
    send_abort_all(t, peer, why);
}

/* An authenticated connection breaks the protocol: there is no way to
 * resynchronise the stream, so the peer is as good as dead. */
static void conn_broken(tcp_conn_t *c, const char *what)
{
    char why[ABORT_WHY_MAX];
    dl_tcp_t *t = c->t;
    int peer = c->peer;
    snprintf(why, sizeof(why), "rank %d (host %s) broke the tcp protocol: %s", peer,
             host_of(t, peer), what);
    conn_close(c);
    peer_failed(t, peer, DL_ERR_PROTOCOL, why);
}

static void conn_lost(tcp_conn_t *c, ssize_t err)
{
    dl_tcp_t *t = c->t;
    if (c->state == CONN_HANDSHAKE) {
        if (c->in_len > 0)
            note(t, "dropped a data connection from %s: it closed mid-handshake", c->addr);
        conn_close(c);
        return;
    }
    if (c->state != CONN_OPEN)
        return;
    int peer = c->peer;
    bool expected = c->peer_left || t->leaving;
    conn_close(c);
    if (expected)
        return;
    char why[ABORT_WHY_MAX];
    if (err == UV_EOF)
        snprintf(why, sizeof(why), "rank %d (host %s) died: its tcp connection closed", peer,
                 host_of(t, peer));
    else
        snprintf(why, sizeof(why), "rank %d (host %s) died: its tcp connection failed (%s)", peer,
                 host_of(t, peer), uv_strerror((int)err));
    peer_failed(t, peer, DL_ERR_PEER_DEAD, why);
}

/* ---- the handshake (accepting side) ---- */

static void refuse(tcp_conn_t *c, const char *why)
{
    note(c->t, "dropped a data connection from %s: %s", c->addr[0] ? c->addr : "?", why);
    conn_close(c);
}

static void on_hs_timeout(uv_timer_t *timer)
{
    tcp_conn_t *c = timer->data;
    if (c->state == CONN_HANDSHAKE)
        refuse(c, "it did not authenticate in time");
}

static void conn_opened(dl_tcp_t *t, tcp_conn_t *c, int peer)
{
    t->n_handshaking--;
    c->peer = peer;
    c->state = CONN_OPEN;
    t->by_peer[peer] = c;
    t->n_live++;
    pthread_mutex_lock(&t->lock);
    t->n_open++;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

/* Checks an "auth" frame: the token's MAC first when there is a token (so
 * that nobody without it learns anything), then the right world and a rank
 * that should connect here and has not yet. Returns the welcome to send, or
 * NULL with the reason in why. */
static json_t *check_auth(tcp_conn_t *c, const json_t *msg, int *peer_p, const char **why)
{
    dl_tcp_t *t = c->t;
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (type == NULL || strcmp(type, "auth") != 0) {
        *why = "its first frame is not an auth frame";
        return NULL;
    }
    json_t *welcome = t->token != NULL ? dl_auth_answer(t->token, c->nonce, msg)
                                       : json_pack("{s:s}", "type", "welcome");
    if (welcome == NULL) {
        *why = t->token != NULL ? "it failed authentication" : "out of memory";
        return NULL;
    }
    const char *world = json_string_value(json_object_get(msg, "world"));
    json_t *rank = json_object_get(msg, "rank");
    json_int_t r = json_is_integer(rank) ? json_integer_value(rank) : -1;
    if (world == NULL || strcmp(world, t->prefix) != 0)
        *why = "it belongs to another world";
    else if (r <= t->rank || r >= t->size || !t->is_peer[r])
        *why = "it claims a rank that does not connect here";
    else if (t->by_peer[r] != NULL)
        *why = "it claims a rank that is already connected";
    else
        *why = NULL;
    if (*why != NULL) {
        json_decref(welcome);
        return NULL;
    }
    json_object_set_new(welcome, "world", json_string(t->prefix));
    json_object_set_new(welcome, "rank", json_integer(t->rank));
    *peer_p = (int)r;
    return welcome;
}

/* Handshake bytes arrived: once a whole frame is in, judge it. The frame is
 * parsed here rather than by frame.h's decoder, which logs. */
static void handshake_input(tcp_conn_t *c)
{
    if (c->in_len < 4)
        return;
    uint32_t body = get_be32(c->in);
    if (body < 4 || body > HS_MAX - 4) {
        refuse(c, body < 4 ? "it sent a malformed frame" : "it sent a frame over the size limit");
        return;
    }
    if (c->in_len < 8)
        return;
    uint32_t json_len = get_be32(c->in + 4);
    if (json_len > body - 4) {
        refuse(c, "it sent a malformed frame");
        return;
    }
    if (c->in_len < 4 + (size_t)body)
        return;
    if (c->in_len > 4 + (size_t)body) {
        refuse(c, "it sent data before it was welcomed");
        return;
    }
    json_t *msg = json_loadb((const char *)c->in + 8, json_len, 0, NULL);
    c->in_len = 0;
    if (!json_is_object(msg)) {
        json_decref(msg);
        refuse(c, "it sent a frame that is not a JSON object");
        return;
    }
    const char *why = NULL;
    int peer = -1;
    json_t *welcome = check_auth(c, msg, &peer, &why);
    json_decref(msg);
    if (welcome == NULL) {
        refuse(c, why);
        return;
    }
    dl_tcp_t *t = c->t;
    uv_timer_stop(&c->timer);
    conn_opened(t, c, peer);
    write_frame(c, welcome);
}

/* ---- reading data frames ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    tcp_conn_t *c = h->data;
    if (c->cur != NULL) {
        size_t left = c->cur->n - c->cur_got;
        *buf =
            uv_buf_init((char *)c->cur->data + c->cur_got, (unsigned)(left < PIECE ? left : PIECE));
        return;
    }
    size_t cap = c->state == CONN_HANDSHAKE ? HS_MAX : IN_CHUNK;
    if (c->in_cap < cap) {
        uint8_t *in = realloc(c->in, cap);
        if (in == NULL) {
            *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
            return;
        }
        c->in = in;
        c->in_cap = cap;
    }
    *buf = uv_buf_init((char *)c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

/* Parses the complete frames in c->in; a DATA frame whose payload is not
 * all there yet becomes c->cur and is read straight into its buffer. */
static bool parse_frames(tcp_conn_t *c, msg_list_t *batch)
{
    dl_tcp_t *t = c->t;
    size_t off = 0;
    char what[128];
    while (c->in_len - off >= HDR_LEN) {
        const uint8_t *p = c->in + off;
        wire_hdr_t h = get_hdr(p);
        size_t avail = c->in_len - off - HDR_LEN;
        if (h.magic != WIRE_MAGIC) {
            conn_broken(c, "a frame with a bad magic number");
            return false;
        }
        if (h.type == FR_DATA) {
            if (h.n > t->max_msg) {
                snprintf(what, sizeof(what), "a %llu-byte message, over the %zu-byte limit",
                         (unsigned long long)h.n, t->max_msg);
                conn_broken(c, what);
                return false;
            }
            tcp_msg_t *m = msg_alloc(t, (size_t)h.n);
            if (m == NULL) {
                conn_broken(c, "no memory for its message");
                return false;
            }
            m->src = c->peer;
            m->ctx = h.ctx;
            m->tag = h.tag;
            if (avail >= m->n) {
                if (m->n > 0)
                    memcpy(m->data, p + HDR_LEN, m->n);
                list_push(batch, m);
                off += HDR_LEN + m->n;
                continue;
            }
            memcpy(m->data, p + HDR_LEN, avail);
            c->cur = m;
            c->cur_got = avail;
            off = c->in_len;
            break;
        }
        if (h.type == FR_LEAVING && h.n == 0) {
            c->peer_left = true;
            off += HDR_LEN;
            continue;
        }
        if (h.type == FR_ABORT && h.n <= ABORT_WHY_MAX) {
            if (avail < h.n)
                break; /* the reason is not all here yet */
            char why[ABORT_WHY_MAX + 1];
            memcpy(why, p + HDR_LEN, h.n);
            why[h.n] = '\0';
            int culprit = h.tag >= -1 && h.tag < t->size ? (int)h.tag : c->peer;
            t->abort_seen = true;
            t->on_abort(t->arg, culprit, why);
            off += HDR_LEN + h.n;
            continue;
        }
        conn_broken(c, "a frame of an unknown type");
        return false;
    }
    if (off > 0) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    return true;
}

static void deliver(dl_tcp_t *t, msg_list_t *batch)
{
    if (batch->head == NULL)
        return;
    uint32_t n = 0;
    for (tcp_msg_t *m = batch->head; m != NULL; m = m->next)
        n++;
    pthread_mutex_lock(&t->lock);
    if (t->incoming.tail != NULL)
        t->incoming.tail->next = batch->head;
    else
        t->incoming.head = batch->head;
    t->incoming.tail = batch->tail;
    atomic_fetch_add(&t->n_incoming, n);
    pthread_mutex_unlock(&t->lock);
    t->wake(t->arg);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    tcp_conn_t *c = s->data;
    if (nread == 0)
        return;
    if (nread < 0) {
        conn_lost(c, nread);
        return;
    }
    if (c->state == CONN_HANDSHAKE) {
        c->in_len += (size_t)nread;
        handshake_input(c);
        return;
    }
    if (c->state != CONN_OPEN)
        return;
    msg_list_t batch = {NULL, NULL};
    if (c->cur != NULL) {
        c->cur_got += (size_t)nread;
        if (c->cur_got == c->cur->n) {
            list_push(&batch, c->cur);
            c->cur = NULL;
        }
    } else {
        c->in_len += (size_t)nread;
        parse_frames(c, &batch);
    }
    deliver(c->t, &batch);
}

/* ---- connections ---- */

void dl__tcp_io_on_connection(uv_stream_t *server, int status)
{
    dl_tcp_t *t = server->data;
    if (status < 0)
        return;
    tcp_conn_t *c = conn_new(t);
    if (c == NULL)
        return;
    if (uv_accept(server, (uv_stream_t *)&c->h) != 0) {
        conn_close(c);
        return;
    }
    tune_socket(c);
    if (t->leaving || t->n_handshaking > t->size + MAX_PENDING) {
        refuse(c, t->leaving ? "this rank is leaving" : "too many connections are half-way");
        return;
    }
    if (dl_auth_new_nonce(c->nonce) != DL_OK) {
        refuse(c, "no random bytes for its challenge");
        return;
    }
    write_frame(c, dl_auth_challenge(c->nonce));
    uv_timer_start(&c->timer, on_hs_timeout, (uint64_t)t->hs_timeout_ms, 0);
    uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
}

/* A connection the main thread opened and authenticated. */
static void adopt(dl_tcp_t *t, int fd, int peer)
{
    tcp_conn_t *c = NULL;
    if (t->leaving || t->stopping || (c = conn_new(t)) == NULL) {
        close(fd);
        return;
    }
    if (uv_tcp_open(&c->h, fd) != 0) {
        close(fd);
        conn_close(c);
        return;
    }
    tune_socket(c);
    conn_opened(t, c, peer);
    uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
}

static void on_slot_written(uv_write_t *req, int status)
{
    (void)status; /* a failed connection is noticed by its reader */
    tcp_slot_t *s = req->data;
    slot_done(s->t, s);
}

static void write_slot(dl_tcp_t *t, tcp_slot_t *s)
{
    tcp_conn_t *c = t->by_peer[s->peer];
    if (c == NULL || c->state != CONN_OPEN || c->peer_left) {
        /* The peer has left (or failed, which aborts the world): nobody will
         * read this, and nothing should wait for it. */
        slot_done(t, s);
        return;
    }
    /* A libuv buffer holds less than 4 GiB: a larger payload goes in pieces. */
    uv_buf_t bufs[1 + MAX_PIECES];
    unsigned nbufs = 1;
    if (s->data == NULL) {
        bufs[0] = uv_buf_init((char *)s->buf, (unsigned)(HDR_LEN + s->n));
    } else {
        bufs[0] = uv_buf_init((char *)s->buf, HDR_LEN);
        for (size_t off = 0; off < s->n; off += PIECE)
            bufs[nbufs++] = uv_buf_init((char *)s->data + off,
                                        (unsigned)(s->n - off < PIECE ? s->n - off : PIECE));
    }
    if (uv_write(&s->req, (uv_stream_t *)&c->h, bufs, nbufs, on_slot_written) != 0)
        slot_done(t, s);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status;
}

static void on_listener_closed(uv_handle_t *h)
{
    (void)h;
}

/* Says LEAVING on every connection, after what is queued, and half-closes
 * it; each closes fully once the peer's end of stream arrives. */
static void begin_leave(dl_tcp_t *t)
{
    t->leaving = true;
    if (!t->listener_closed) {
        t->listener_closed = true;
        uv_close((uv_handle_t *)&t->listener, on_listener_closed);
    }
    tcp_conn_t *next;
    for (tcp_conn_t *c = t->conns; c != NULL; c = next) {
        next = c->next;
        if (c->state == CONN_HANDSHAKE) {
            conn_close(c);
            continue;
        }
        if (c->state != CONN_OPEN)
            continue;
        put_hdr(c->leave_hdr, FR_LEAVING, 0, 0, 0);
        uv_buf_t b = uv_buf_init((char *)c->leave_hdr, HDR_LEN);
        if (uv_write(&c->leave_req, (uv_stream_t *)&c->h, &b, 1, NULL) != 0 ||
            uv_shutdown(&c->shut_req, (uv_stream_t *)&c->h, on_shutdown) != 0) {
            conn_close(c);
            continue;
        }
    }
    check_left(t);
}

void dl__tcp_io_stop_all(dl_tcp_t *t)
{
    t->stopping = true;
    if (!t->listener_closed) {
        t->listener_closed = true;
        uv_close((uv_handle_t *)&t->listener, on_listener_closed);
    }
    tcp_conn_t *next;
    for (tcp_conn_t *c = t->conns; c != NULL; c = next) {
        next = c->next;
        conn_close(c);
    }
    uv_close((uv_handle_t *)&t->async, NULL);
}

void dl__tcp_io_on_async(uv_async_t *a)
{
    dl_tcp_t *t = a->data;
    pthread_mutex_lock(&t->lock);
    tcp_item_t *it = t->q_head;
    t->q_head = t->q_tail = NULL;
    pthread_mutex_unlock(&t->lock);
    tcp_item_t *next;
    for (; it != NULL; it = next) {
        next = it->next;
        if (it->kind == ITEM_SEND) {
            tcp_slot_t *s = (tcp_slot_t *)it;
            if (t->stopping)
                slot_done(t, s);
            else
                write_slot(t, s);
            continue;
        }
        tcp_cmd_t *cmd = (tcp_cmd_t *)it;
        switch (it->kind) {
        case ITEM_ADOPT:
            adopt(t, cmd->fd, cmd->peer);
            break;
        case ITEM_ABORT:
            if (!t->stopping)
                send_abort_all(t, cmd->culprit, cmd->why);
            break;
        case ITEM_LEAVE:
            if (!t->stopping)
                begin_leave(t);
            break;
        case ITEM_STOP:
            if (!t->stopping)
                dl__tcp_io_stop_all(t);
            break;
        }
        if (cmd != &t->leave_cmd && cmd != &t->stop_cmd)
            free(cmd);
    }
}

void *dl__tcp_io_main(void *arg)
{
    dl_tcp_t *t = arg;
    uv_run(&t->loop, UV_RUN_DEFAULT);
    return NULL;
}
