/* The TCP transport's private structures and small helpers, shared by its
 * two sides: tcp_io.c (the I/O thread: the libuv loop, the handshake,
 * framing, reading and writing) and tcp.c (the rank's side: open and close,
 * posting sends, matching receives, abort). See tcp.h for the protocol.
 *
 * Threads. The rank's thread (the "main" thread here) posts sends, matches
 * receives and waits; the I/O thread owns the libuv loop and every handle.
 * They meet in a few places, all under t->lock: the queue of items the main
 * thread hands to the I/O thread (sends, adopted connections, abort, leave,
 * stop: woken by uv_async_send), the list of messages the I/O thread has
 * read, the connection count the set-up waits for, and the log notes. A send
 * slot's state word is the only other shared field (atomic). */
#ifndef DL_TCP_INTERNAL_H
#define DL_TCP_INTERNAL_H

#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <uv.h>

#include "distlab/auth.h"
#include "transport/tcp.h"

#define WIRE_MAGIC 0x50544c44u /* "DLTP" as little-endian bytes */
#define HDR_LEN    32
#define NSLOT      32 /* send slots per peer: messages in flight to it */
/* The handshake: a frame is at most HS_MAX bytes, and an accepted
 * connection must authenticate within hs_timeout_ms (DISTLAB_AUTH_TIMEOUT,
 * distlab/guard.h, read when the transport starts). Every peer may be
 * half-way at once (a world's start), and MAX_PENDING more; more are
 * refused, and a refused peer tries again until its deadline. */
#define HS_MAX           4096
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
    int hs_timeout_ms;
    bool leaving, stopping, abort_sent, abort_seen;
    tcp_cmd_t leave_cmd, stop_cmd; /* queued at close, which must not fail */
    pthread_t thread;
    bool thread_started;
};

/* ---- small helpers ---- */

static inline void put_hdr(uint8_t *p, uint16_t type, uint32_t ctx, int64_t tag, uint64_t n)
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

static inline const char *host_of(const dl_tcp_t *t, int r)
{
    return r >= 0 && r < t->size && t->hosts[r] != NULL ? t->hosts[r] : "?";
}

static inline void list_push(msg_list_t *l, tcp_msg_t *m)
{
    m->next = NULL;
    if (l->tail != NULL)
        l->tail->next = m;
    else
        l->head = m;
    l->tail = m;
}

/* ---- across the two sides ---- */

/* Frees a received message, or keeps its buffer as a spare (tcp_io.c). */
void dl__tcp_msg_free(dl_tcp_t *t, tcp_msg_t *m);
/* The I/O thread's libuv callbacks and entry point, set up by the rank's
 * side (tcp_io.c). */
void dl__tcp_io_on_connection(uv_stream_t *server, int status);
void dl__tcp_io_on_async(uv_async_t *a);
void *dl__tcp_io_main(void *arg);
/* Closes every handle of the loop (also when the thread never started). */
void dl__tcp_io_stop_all(dl_tcp_t *t);

#endif
