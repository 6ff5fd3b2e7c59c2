/* TCP transport: the I/O thread, the handshake, framing, send slots and
 * inboxes. See tcp.h for the protocol.
 *
 * Threads. The rank's thread (the "main" thread here) posts sends, matches
 * receives and waits; the I/O thread owns the libuv loop and every handle.
 * They meet in a few places, all under t->lock: the queue of items the main
 * thread hands to the I/O thread (sends, adopted connections, abort, leave,
 * stop: woken by uv_async_send), the list of messages the I/O thread has
 * read, the connection count the set-up waits for, and the log notes. A send
 * slot's state word is the only other shared field (atomic). */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "distlab/auth.h"
#include "distlab/frame.h"
#include "distlab/log.h"
#include "net/internal.h"
#include "transport/tcp.h"

#define WIRE_MAGIC 0x50544c44u /* "DLTP" as little-endian bytes */
#define HDR_LEN    32
#define NSLOT      32 /* send slots per peer: messages in flight to it */
/* The handshake: a frame is at most HS_MAX bytes, and an accepted
 * connection must authenticate within HS_TIMEOUT_MS. At most MAX_PENDING
 * connections may be half-way at once; more are refused. */
#define HS_MAX           4096
#define HS_TIMEOUT_MS    10000
#define MAX_PENDING      32
#define ABORT_WHY_MAX    256
#define IN_CHUNK         (256u << 10) /* read buffer for headers and small messages */
#define LEAVE_TIMEOUT_MS 5000         /* how long a leaving rank waits for its peers' goodbyes */
#define MAX_NOTES        16
/* Received buffers this large are kept for reuse (a few of them), so that
 * large messages do not pay for fresh pages every time. */
#define SPARE_MIN   (64u << 10)
#define SPARE_KEEP  4
#define KEEPALIVE_S 5 /* idle seconds before TCP probes a silent peer */
#define KEEPINTVL_S 2
#define KEEPCNT     3
#define CONNECT_TRY 20 /* ms between connection attempts */
#define NOTE_LEN    256
#define PIECE       ((size_t)1 << 30) /* at most this much per libuv buffer */
#define MAX_PIECES  64                /* so a message is at most 64 GiB */
#define ADDR_LEN    64

enum { FR_DATA = 1, FR_LEAVING = 2, FR_ABORT = 3 };
enum { SLOT_FREE = 0, SLOT_QUEUED = 1, SLOT_WRITTEN = 2 };
enum { ITEM_SEND, ITEM_ADOPT, ITEM_ABORT, ITEM_LEAVE, ITEM_STOP };
enum { CONN_HANDSHAKE, CONN_OPEN, CONN_CLOSING };

/* ---- structures ---- */

/* What the main thread hands to the I/O thread, in order. */
typedef struct tcp_item {
    struct tcp_item *next;
    int kind;
} tcp_item_t;

typedef struct {
    tcp_item_t item; /* first: a slot is queued as an item */
    uv_write_t req;
    struct dl_tcp *t;
    _Atomic uint32_t state;
    int peer;
    uint64_t seq;
    const void *data; /* a large payload, written from the caller's memory */
    size_t n;
    uint8_t buf[HDR_LEN + DL_TCP_EAGER_MAX]; /* the header, then an eager payload */
} tcp_slot_t;

typedef struct {
    tcp_item_t item;
    int fd, peer; /* ITEM_ADOPT */
    int culprit;  /* ITEM_ABORT */
    char why[ABORT_WHY_MAX];
} tcp_cmd_t;

typedef struct tcp_msg {
    struct tcp_msg *next;
    int src;
    uint32_t ctx;
    int64_t tag;
    size_t n, cap;
    uint8_t data[];
} tcp_msg_t;

typedef struct {
    tcp_msg_t *head, *tail;
} msg_list_t;

typedef struct tcp_conn {
    uv_tcp_t h;
    uv_timer_t timer; /* the handshake's deadline */
    uv_write_t leave_req;
    uv_shutdown_t shut_req;
    uint8_t leave_hdr[HDR_LEN];
    struct dl_tcp *t;
    int peer; /* world rank, -1 until authenticated */
    int state;
    int handles; /* open libuv handles; freed at 0 */
    bool peer_left;
    char addr[ADDR_LEN];
    char nonce[DL_AUTH_HEX_LEN];
    uint8_t *in; /* handshake frames, data headers, small messages */
    size_t in_len, in_cap;
    tcp_msg_t *cur; /* a large message being read straight into its buffer */
    size_t cur_got;
    struct tcp_conn *prev, *next;
} tcp_conn_t;

struct dl_tcp {
    /* Fixed at open. */
    int rank, size;
    char prefix[64];
    char *token;
    size_t max_msg;
    char **hosts;
    bool *is_peer;
    int npeers;
    void (*wake)(void *arg);
    void (*on_abort)(void *arg, int culprit, const char *why);
    void *arg;

    /* Main thread only. */
    tcp_slot_t **slots;  /* [size]: NSLOT each for TCP peers */
    uint64_t *next_seq;  /* [size] */
    msg_list_t *pending; /* [size]: received, not yet matched */
    int rr;              /* where an any-source scan starts */

    /* Shared, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    tcp_item_t *q_head, *q_tail;
    msg_list_t incoming;
    _Atomic uint32_t n_incoming;
    int n_open; /* connections authenticated so far */
    bool left_done;
    char notes[MAX_NOTES][NOTE_LEN];
    int n_notes, notes_lost;
    _Atomic int has_notes;
    tcp_msg_t *spares;
    int n_spares;
    _Atomic int failed_rank;
    dl_status_t failed_st;
    char failed_why[ABORT_WHY_MAX];

    /* I/O thread only. */
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t async;
    bool listener_closed;
    tcp_conn_t **by_peer; /* [size] */
    tcp_conn_t *conns;
    int n_handshaking, n_live;
    bool leaving, stopping, abort_sent, abort_seen;
    tcp_cmd_t leave_cmd, stop_cmd; /* queued at close, which must not fail */
    pthread_t thread;
    bool thread_started;
};

/* ---- small helpers ---- */

static void put_hdr(uint8_t *p, uint16_t type, uint32_t ctx, int64_t tag, uint64_t n)
{
    uint32_t magic = htole32(WIRE_MAGIC), c = htole32(ctx), zero = 0;
    uint16_t ty = htole16(type), pad = 0;
    uint64_t tg = htole64((uint64_t)tag), nn = htole64(n);
    memcpy(p, &magic, 4);
    memcpy(p + 4, &ty, 2);
    memcpy(p + 6, &pad, 2);
    memcpy(p + 8, &c, 4);
    memcpy(p + 12, &zero, 4);
    memcpy(p + 16, &tg, 8);
    memcpy(p + 24, &nn, 8);
}

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

static const char *host_of(const dl_tcp_t *t, int r)
{
    return r >= 0 && r < t->size && t->hosts[r] != NULL ? t->hosts[r] : "?";
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

static void msg_free(dl_tcp_t *t, tcp_msg_t *m)
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

static void list_push(msg_list_t *l, tcp_msg_t *m)
{
    m->next = NULL;
    if (l->tail != NULL)
        l->tail->next = m;
    else
        l->head = m;
    l->tail = m;
}

static void list_free(dl_tcp_t *t, msg_list_t *l)
{
    tcp_msg_t *next;
    for (tcp_msg_t *m = l->head; m != NULL; m = next) {
        next = m->next;
        msg_free(t, m);
    }
    l->head = l->tail = NULL;
}

/* ---- the queue to the I/O thread ---- */

static void enqueue(dl_tcp_t *t, tcp_item_t *it)
{
    it->next = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->q_tail != NULL)
        t->q_tail->next = it;
    else
        t->q_head = it;
    t->q_tail = it;
    pthread_mutex_unlock(&t->lock);
    uv_async_send(&t->async);
}

static dl_status_t enqueue_cmd(dl_tcp_t *t, int kind, int fd, int peer, int culprit,
                               const char *why)
{
    tcp_cmd_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return DL_ERR_NOMEM;
    c->item.kind = kind;
    c->fd = fd;
    c->peer = peer;
    c->culprit = culprit;
    if (why != NULL)
        snprintf(c->why, sizeof(c->why), "%s", why);
    enqueue(t, &c->item);
    return DL_OK;
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
    msg_free(t, c->cur);
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

static void on_connection(uv_stream_t *server, int status)
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
    if (t->leaving || t->n_handshaking > MAX_PENDING) {
        refuse(c, t->leaving ? "this rank is leaving" : "too many connections are half-way");
        return;
    }
    if (dl_auth_new_nonce(c->nonce) != DL_OK) {
        refuse(c, "no random bytes for its challenge");
        return;
    }
    write_frame(c, dl_auth_challenge(c->nonce));
    uv_timer_start(&c->timer, on_hs_timeout, HS_TIMEOUT_MS, 0);
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

static void stop_all(dl_tcp_t *t)
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

static void on_async(uv_async_t *a)
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
                stop_all(t);
            break;
        }
        if (cmd != &t->leave_cmd && cmd != &t->stop_cmd)
            free(cmd);
    }
}

static void *io_main(void *arg)
{
    dl_tcp_t *t = arg;
    uv_run(&t->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* ================= the rank's side ================= */

static void free_tcp(dl_tcp_t *t)
{
    for (int r = 0; r < t->size; r++) {
        if (t->slots != NULL)
            free(t->slots[r]);
        if (t->pending != NULL)
            list_free(t, &t->pending[r]);
        if (t->hosts != NULL)
            free(t->hosts[r]);
    }
    list_free(t, &t->incoming);
    tcp_msg_t *next;
    for (tcp_msg_t *m = t->spares; m != NULL; m = next) {
        next = m->next;
        free(m);
    }
    free(t->slots);
    free(t->next_seq);
    free(t->pending);
    free(t->hosts);
    free(t->is_peer);
    free(t->by_peer);
    free(t->token);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Stops the I/O thread (or, when it never started, closes the handles from
 * here) and releases the loop. */
static void stop_io(dl_tcp_t *t)
{
    if (t->thread_started) {
        t->stop_cmd.item.kind = ITEM_STOP;
        enqueue(t, &t->stop_cmd.item);
        pthread_join(t->thread, NULL);
        t->thread_started = false;
    } else {
        stop_all(t);
        uv_run(&t->loop, UV_RUN_DEFAULT);
    }
    /* Items queued after the stop (none by design) still own resources. */
    tcp_item_t *next;
    for (tcp_item_t *it = t->q_head; it != NULL; it = next) {
        next = it->next;
        if (it->kind == ITEM_ADOPT)
            close(((tcp_cmd_t *)it)->fd);
        if (it->kind != ITEM_SEND && it != &t->leave_cmd.item && it != &t->stop_cmd.item)
            free(it);
    }
    t->q_head = t->q_tail = NULL;
    if (uv_loop_close(&t->loop) != 0)
        dl_log_warn("the tcp transport's loop still had handles open at close");
}

void dl__tcp_flush_log(dl_tcp_t *t)
{
    if (t == NULL || atomic_load_explicit(&t->has_notes, memory_order_relaxed) == 0)
        return;
    char notes[MAX_NOTES][NOTE_LEN];
    pthread_mutex_lock(&t->lock);
    int n = t->n_notes, lost = t->notes_lost;
    memcpy(notes, t->notes, sizeof(notes[0]) * (size_t)n);
    t->n_notes = t->notes_lost = 0;
    atomic_store(&t->has_notes, 0);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < n; i++)
        dl_log_warn("%s", notes[i]);
    if (lost > 0)
        dl_log_warn("and %d more such notes from the tcp transport", lost);
}

/* Connects to a lower-numbered peer's published address, authenticates,
 * and hands the socket to the I/O thread. */
static dl_status_t connect_peer(dl_tcp_t *t, dl_store_t *store, int peer, dl__deadline_t deadline,
                                char *err, size_t err_cap)
{
    char key[160], host[ADDR_LEN];
    snprintf(key, sizeof(key), "%s/tcp/%d", t->prefix, peer);
    char *val = NULL;
    size_t len = 0;
    dl_status_t st = dl_store_get(store, key, (void **)&val, &len);
    if (st != DL_OK) {
        snprintf(err, err_cap, "no tcp address for rank %d in the store: %s", peer,
                 dl_strerror(st));
        return st;
    }
    const char *colon = strrchr(val, ':');
    int port = colon != NULL ? atoi(colon + 1) : 0;
    if (colon == NULL || port <= 0 || port > 65535 || (size_t)(colon - val) >= sizeof(host)) {
        snprintf(err, err_cap, "rank %d published a bad tcp address '%.64s'", peer, val);
        free(val);
        return DL_ERR_PROTOCOL;
    }
    /* "[v6addr]:port" or "v4addr:port" */
    const char *h = val;
    size_t hl = (size_t)(colon - val);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    snprintf(host, sizeof(host), "%.*s", (int)hl, h);
    free(val);

    int fd = -1;
    for (;;) {
        st = dl__net_connect(host, port, deadline, &fd);
        if (st != DL_ERR_CLOSED || dl__net_remaining_ms(deadline) == 0)
            break;
        usleep(CONNECT_TRY * 1000);
    }
    if (st != DL_OK) {
        snprintf(err, err_cap, "cannot connect to rank %d (host %s) at %s:%d: %s", peer,
                 host_of(t, peer), host, port, dl_strerror(st));
        return st;
    }
    json_t *extra = json_pack("{s:s, s:i}", "world", t->prefix, "rank", t->rank);
    json_t *welcome = NULL;
    int left = dl__net_remaining_ms(deadline);
    if (extra == NULL)
        st = DL_ERR_NOMEM;
    else
        st = dl_auth_client_fd(fd, t->token, extra, left, &welcome);
    json_decref(extra);
    if (st == DL_OK) {
        json_t *r = json_object_get(welcome, "rank");
        const char *w = json_string_value(json_object_get(welcome, "world"));
        if (!json_is_integer(r) || json_integer_value(r) != peer || w == NULL ||
            strcmp(w, t->prefix) != 0)
            st = DL_ERR_PROTOCOL;
    }
    json_decref(welcome);
    if (st != DL_OK) {
        snprintf(err, err_cap, "rank %d (host %s) at %s:%d %s: %s", peer, host_of(t, peer), host,
                 port,
                 st == DL_ERR_DENIED ? "refused this rank's data connection (is DISTLAB_TOKEN "
                                       "the same on every rank?)"
                                     : "did not complete the handshake",
                 dl_strerror(st));
        close(fd);
        return st;
    }
    if ((st = enqueue_cmd(t, ITEM_ADOPT, fd, peer, 0, NULL)) != DL_OK) {
        close(fd);
        snprintf(err, err_cap, "out of memory");
    }
    return st;
}

static dl_status_t listen_on(dl_tcp_t *t, const char *addr, char *where, size_t where_cap)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    bool v6 = strchr(addr, ':') != NULL;
    int rc = v6 ? uv_ip6_addr(addr, 0, (struct sockaddr_in6 *)&ss)
                : uv_ip4_addr(addr, 0, (struct sockaddr_in *)&ss);
    if (rc == 0)
        rc = uv_tcp_bind(&t->listener, (const struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&t->listener, t->size + MAX_PENDING, on_connection);
    int len = sizeof(ss);
    if (rc == 0)
        rc = uv_tcp_getsockname(&t->listener, (struct sockaddr *)&ss, &len);
    if (rc != 0) {
        dl_log_error("cannot listen for tcp data connections on %s: %s", addr, uv_strerror(rc));
        return DL_ERR_SYSTEM;
    }
    int port = v6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    snprintf(where, where_cap, v6 ? "[%s]:%d" : "%s:%d", addr, port);
    return DL_OK;
}

static dl_status_t start_thread(dl_tcp_t *t)
{
    /* The I/O thread takes no signals: they belong to the rank's own thread,
     * and a write to a closed socket then fails with EPIPE rather than
     * raising SIGPIPE. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t->thread, NULL, io_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        dl_log_error("cannot start the tcp i/o thread: %m");
        return DL_ERR_SYSTEM;
    }
    t->thread_started = true;
    return DL_OK;
}

static dl_status_t alloc_tcp(const dl_tcp_opts_t *o, dl_tcp_t **t_p)
{
    dl_tcp_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return DL_ERR_NOMEM;
    size_t n = (size_t)o->size;
    t->rank = o->rank;
    t->size = o->size;
    snprintf(t->prefix, sizeof(t->prefix), "%s", o->prefix);
    t->max_msg = o->max_msg;
    t->wake = o->wake;
    t->on_abort = o->on_abort;
    t->arg = o->arg;
    atomic_init(&t->failed_rank, -1);
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);
    t->slots = calloc(n, sizeof(*t->slots));
    t->next_seq = calloc(n, sizeof(*t->next_seq));
    t->pending = calloc(n, sizeof(*t->pending));
    t->hosts = calloc(n, sizeof(*t->hosts));
    t->is_peer = calloc(n, sizeof(*t->is_peer));
    t->by_peer = calloc(n, sizeof(*t->by_peer));
    if (t->slots == NULL || t->next_seq == NULL || t->pending == NULL || t->hosts == NULL ||
        t->is_peer == NULL || t->by_peer == NULL)
        goto err_free;
    if (o->token != NULL && (t->token = strdup(o->token)) == NULL)
        goto err_free;
    for (int r = 0; r < o->size; r++) {
        if (o->hosts[r] != NULL && (t->hosts[r] = strdup(o->hosts[r])) == NULL)
            goto err_free;
        if (r == o->rank || !o->peers[r])
            continue;
        t->is_peer[r] = true;
        t->npeers++;
        if ((t->slots[r] = calloc(NSLOT, sizeof(tcp_slot_t))) == NULL)
            goto err_free;
        for (int i = 0; i < NSLOT; i++) {
            tcp_slot_t *s = &t->slots[r][i];
            s->item.kind = ITEM_SEND;
            s->t = t;
            s->req.data = s;
        }
    }
    *t_p = t;
    return DL_OK;

err_free:
    free_tcp(t);
    return DL_ERR_NOMEM;
}

/* Waits until every peer is connected, or a peer failed, or the deadline. */
static dl_status_t wait_connected(dl_tcp_t *t, dl__deadline_t deadline, char *err, size_t err_cap)
{
    pthread_mutex_lock(&t->lock);
    while (t->n_open < t->npeers && atomic_load(&t->failed_rank) < 0) {
        int left = dl__net_remaining_ms(deadline);
        if (left == 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int step = left < 0 || left > 100 ? 100 : left;
        ts.tv_nsec += (long)step * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&t->cond, &t->lock, &ts);
    }
    int open = t->n_open;
    pthread_mutex_unlock(&t->lock);
    if (open == t->npeers)
        return DL_OK;
    int failed = atomic_load(&t->failed_rank);
    if (failed >= 0) {
        snprintf(err, err_cap, "%s", t->failed_why);
        return t->failed_st;
    }
    snprintf(err, err_cap,
             "rank %d has %d of its %d tcp data connections after the timeout; the others' "
             "ranks did not connect",
             t->rank, open, t->npeers);
    return DL_ERR_TIMEOUT;
}

/* Every rank of a world with TCP peers has some (ranks on two hosts each
 * have a peer on the other): all of them count in. */
static dl_status_t ready_barrier(dl_tcp_t *t, dl_store_t *store)
{
    char key[160], done[160];
    snprintf(key, sizeof(key), "%s/tcp/ready", t->prefix);
    snprintf(done, sizeof(done), "%s/tcp/ready/done", t->prefix);
    int64_t n = 0;
    dl_status_t st = dl_store_add(store, key, 1, &n);
    if (st == DL_OK && n == t->size)
        st = dl_store_set_str(store, done, "1");
    if (st != DL_OK)
        return st;
    const char *keys[] = {done};
    return dl_store_wait(store, keys, 1);
}

dl_status_t dl__tcp_open(const dl_tcp_opts_t *o, char *err, size_t err_cap, dl_tcp_t **t_p)
{
    dl_tcp_t *t = NULL;
    dl_status_t st = alloc_tcp(o, &t);
    if (st != DL_OK) {
        snprintf(err, err_cap, "out of memory");
        return st;
    }
    dl__deadline_t deadline = dl__net_deadline(o->timeout_ms);
    int rc = uv_loop_init(&t->loop);
    if (rc != 0) {
        snprintf(err, err_cap, "cannot create the tcp transport's loop: %s", uv_strerror(rc));
        free_tcp(t);
        return DL_ERR_SYSTEM;
    }
    uv_async_init(&t->loop, &t->async, on_async);
    uv_tcp_init(&t->loop, &t->listener);
    t->async.data = t->listener.data = t;

    char where[ADDR_LEN + 16], key[160];
    if ((st = listen_on(t, o->bind_addr, where, sizeof(where))) != DL_OK) {
        snprintf(err, err_cap, "cannot listen for tcp data connections on %s", o->bind_addr);
        goto err_stop;
    }
    snprintf(key, sizeof(key), "%s/tcp/%d", t->prefix, t->rank);
    if ((st = dl_store_set_str(o->store, key, where)) != DL_OK) {
        snprintf(err, err_cap, "cannot publish the tcp address: %s", dl_strerror(st));
        goto err_stop;
    }
    if ((st = start_thread(t)) != DL_OK) {
        snprintf(err, err_cap, "cannot start the tcp i/o thread");
        goto err_stop;
    }
    /* Connect to the lower ranks; the higher ones connect to us. */
    for (int p = 0; p < t->rank; p++)
        if (t->is_peer[p] && (st = connect_peer(t, o->store, p, deadline, err, err_cap)) != DL_OK)
            goto err_stop;
    if ((st = wait_connected(t, deadline, err, err_cap)) != DL_OK)
        goto err_stop;
    /* Nobody starts before everybody is connected: a rank that finished
     * and died at once would otherwise fail the set-up of slower ones. */
    if ((st = ready_barrier(t, o->store)) != DL_OK) {
        snprintf(err, err_cap, "the ranks did not all get connected: %s", dl_strerror(st));
        goto err_stop;
    }
    *t_p = t;
    return DL_OK;

err_stop:
    stop_io(t);
    dl__tcp_flush_log(t);
    free_tcp(t);
    return st;
}

void dl__tcp_close(dl_tcp_t *t)
{
    if (t == NULL)
        return;
    /* Goodbyes go out after every queued write; the peers answer by closing
     * their ends, which is when no byte of ours can be lost any more. */
    t->leave_cmd.item.kind = ITEM_LEAVE;
    enqueue(t, &t->leave_cmd.item);
    dl__deadline_t deadline = dl__net_deadline(LEAVE_TIMEOUT_MS);
    pthread_mutex_lock(&t->lock);
    while (!t->left_done) {
        int left = dl__net_remaining_ms(deadline);
        if (left == 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)(left > 100 ? 100 : left) * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&t->cond, &t->lock, &ts);
    }
    pthread_mutex_unlock(&t->lock);
    stop_io(t);
    dl__tcp_flush_log(t);
    free_tcp(t);
}

/* ---- sending ---- */

dl_status_t dl__tcp_post(dl_tcp_t *t, int peer, uint32_t ctx, int64_t tag, const void *data,
                         size_t n, dl_tcp_send_t *h_p)
{
    if (peer < 0 || peer >= t->size || !t->is_peer[peer])
        return DL_ERR_INVALID;
    if (n > PIECE * MAX_PIECES) {
        dl_log_error("a %zu-byte message is more than the tcp transport carries", n);
        return DL_ERR_TOO_BIG;
    }
    uint64_t seq = t->next_seq[peer];
    tcp_slot_t *s = &t->slots[peer][seq % NSLOT];
    if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_QUEUED)
        return DL_ERR_AGAIN; /* NSLOT messages to this peer are still being written */
    put_hdr(s->buf, FR_DATA, ctx, tag, n);
    bool eager = n <= DL_TCP_EAGER_MAX;
    if (eager) {
        if (n > 0)
            memcpy(s->buf + HDR_LEN, data, n);
        s->data = NULL;
    } else {
        s->data = data;
    }
    s->n = n;
    s->seq = seq;
    s->peer = peer;
    s->req.data = s;
    atomic_store_explicit(&s->state, SLOT_QUEUED, memory_order_release);
    t->next_seq[peer] = seq + 1;
    enqueue(t, &s->item);
    h_p->peer = peer;
    h_p->seq = seq;
    h_p->eager = eager;
    return DL_OK;
}

bool dl__tcp_send_done(dl_tcp_t *t, const dl_tcp_send_t *h)
{
    if (h->eager)
        return true; /* copied at post; the slot is reclaimed by a later post */
    tcp_slot_t *s = &t->slots[h->peer][h->seq % NSLOT];
    if (s->seq != h->seq)
        return true; /* already reclaimed by a later post */
    uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (state == SLOT_WRITTEN) {
        atomic_store_explicit(&s->state, SLOT_FREE, memory_order_relaxed);
        return true;
    }
    return state == SLOT_FREE;
}

/* ---- receiving ---- */

/* Moves what the I/O thread has read into the per-peer lists. */
static void drain_incoming(dl_tcp_t *t)
{
    if (atomic_load_explicit(&t->n_incoming, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&t->lock);
    tcp_msg_t *m = t->incoming.head;
    t->incoming.head = t->incoming.tail = NULL;
    atomic_store(&t->n_incoming, 0);
    pthread_mutex_unlock(&t->lock);
    tcp_msg_t *next;
    for (; m != NULL; m = next) {
        next = m->next;
        list_push(&t->pending[m->src], m);
    }
}

static dl_status_t try_from(dl_tcp_t *t, int from, uint32_t ctx, int64_t tag, dl_tcp_consume_fn fn,
                            void *arg)
{
    msg_list_t *l = &t->pending[from];
    tcp_msg_t *prev = NULL;
    for (tcp_msg_t *m = l->head; m != NULL; prev = m, m = m->next) {
        if (m->ctx != ctx || m->tag != tag)
            continue;
        dl_status_t st = fn(arg, m->data, m->n);
        if (st != DL_OK)
            return st;
        if (prev != NULL)
            prev->next = m->next;
        else
            l->head = m->next;
        if (l->tail == m)
            l->tail = prev;
        msg_free(t, m);
        return DL_OK;
    }
    return DL_ERR_AGAIN;
}

dl_status_t dl__tcp_try_recv(dl_tcp_t *t, int peer, uint32_t ctx, int64_t tag, dl_tcp_consume_fn fn,
                             void *arg, int *src_p)
{
    drain_incoming(t);
    if (peer >= 0) {
        if (peer >= t->size || !t->is_peer[peer])
            return DL_ERR_INVALID;
        dl_status_t st = try_from(t, peer, ctx, tag, fn, arg);
        if (st == DL_OK && src_p != NULL)
            *src_p = peer;
        return st;
    }
    for (int i = 0; i < t->size; i++) {
        int from = (t->rr + i) % t->size;
        if (!t->is_peer[from] || t->pending[from].head == NULL)
            continue;
        dl_status_t st = try_from(t, from, ctx, tag, fn, arg);
        if (st == DL_ERR_AGAIN)
            continue;
        if (st == DL_OK) {
            t->rr = (from + 1) % t->size;
            if (src_p != NULL)
                *src_p = from;
        }
        return st;
    }
    return DL_ERR_AGAIN;
}

/* ---- failure ---- */

void dl__tcp_abort(dl_tcp_t *t, int culprit, const char *why)
{
    enqueue_cmd(t, ITEM_ABORT, -1, -1, culprit, why);
}

int dl__tcp_failed_peer(dl_tcp_t *t, char *why, size_t why_cap, dl_status_t *st_p)
{
    int r = atomic_load(&t->failed_rank);
    if (r < 0)
        return -1;
    if (why != NULL)
        snprintf(why, why_cap, "%s", t->failed_why);
    if (st_p != NULL)
        *st_p = t->failed_st;
    return r;
}
