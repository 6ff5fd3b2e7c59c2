/* The TCP transport: the builtin backend's data path between ranks that do
 * not share memory (ranks on different hosts, or every pair of ranks when
 * DISTLAB_TRANSPORT=tcp).
 *
 * Each rank runs one I/O thread with its own libuv loop. It listens on an
 * ephemeral port, published in the store as PREFIX/tcp/RANK = "addr:port";
 * every rank connects to its lower-numbered TCP peers and accepts the
 * higher-numbered ones, so each pair shares one connection. A connection
 * opens with a handshake in ordinary frames (frame.h): the accepting side
 * sends a challenge, the connecting side answers with its world prefix and
 * rank (and, when DISTLAB_TOKEN is set, the HMAC of auth.h), and the
 * accepting side welcomes it. A connection that fails the handshake, sends
 * garbage or takes too long is dropped; the session does not notice.
 *
 * After the handshake a connection carries binary frames, in both
 * directions:
 *
 *   +--------+------+------+-------+--------+-----------------+
 *   | magic  | type | pad  | ctx   | tag    | nbytes | payload |
 *   | u32    | u16  | u16  | u32   | i64    | u64    |         |
 *   +--------+------+------+-------+--------+-----------------+
 *     (little endian; a 32-byte header, one pad word after ctx)
 *
 *   DATA     a message under (ctx, tag); nbytes of payload
 *   LEAVING  the sender closed its communicator: its end of stream that
 *            follows is a goodbye, not a death
 *   ABORT    the sender's world is aborted; tag holds the culprit rank,
 *            the payload the reason (at most 256 bytes)
 *
 * Sending: dl__tcp_post fills one of the peer's send slots and queues it
 * to the I/O thread, which writes the header and then the payload straight
 * from the caller's buffer. A message up to DL_TCP_EAGER_MAX bytes is
 * copied into the slot (eager) and its send is complete at once; a larger
 * one is complete when its write callback has run, and its buffer must stay
 * untouched until then. Receiving: the I/O thread reads every frame into a
 * buffer of its own, queues it for the rank and rings the rank's doorbell;
 * dl__tcp_try_recv matches the oldest message from a peer (or any peer)
 * under (ctx, tag), as the shared-memory channels do.
 *
 * Failure: an authenticated connection that ends without LEAVING means the
 * peer is dead. The I/O thread records it, aborts the local world through
 * the on_abort callback and sends ABORT to every other peer; an ABORT
 * received is handed to on_abort as well. */
#ifndef DL_TRANSPORT_TCP_H
#define DL_TRANSPORT_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"
#include "distlab/store.h"

/* Messages up to this size travel inside the send slot (eager). */
#define DL_TCP_EAGER_MAX 2016

typedef struct dl_tcp dl_tcp_t;

typedef struct {
    int peer;
    uint64_t seq;
    bool eager; /* copied into the slot at post: complete already */
} dl_tcp_send_t;

/* Applies received bytes (the same contract as dl_shm_consume_fn). */
typedef dl_status_t (*dl_tcp_consume_fn)(void *arg, const void *data, size_t nbytes);

typedef struct {
    dl_store_t *store;
    const char *prefix; /* the world's store key prefix */
    int rank, size;
    const bool *peers;        /* [size]: the ranks this rank talks to over TCP */
    const char *const *hosts; /* [size]: each rank's host, for messages */
    const char *bind_addr;    /* the address to listen on and publish */
    const char *token;        /* NULL: connections state world and rank only */
    int timeout_ms;           /* for connecting and authenticating */
    size_t max_msg;           /* larger incoming messages break the connection */
    /* Called from the I/O thread: a message arrived or a send completed. */
    void (*wake)(void *arg);
    /* Called from the I/O thread: the world must be aborted. */
    void (*on_abort)(void *arg, int culprit, const char *why);
    void *arg;
} dl_tcp_opts_t;

/* Listens, publishes the address, connects to and accepts from every TCP
 * peer, and returns once each connection is authenticated (or fails after
 * timeout_ms with the reason in err). */
dl_status_t dl__tcp_open(const dl_tcp_opts_t *opts, char *err, size_t err_cap, dl_tcp_t **t_p);
/* Says LEAVING to every peer after the writes already queued, waits (a
 * little) for them to close their ends, and stops the I/O thread. */
void dl__tcp_close(dl_tcp_t *t);

/* Posts n bytes at data to world rank peer under (ctx, tag). A message
 * larger than DL_TCP_EAGER_MAX must stay untouched until dl__tcp_send_done.
 * DL_ERR_AGAIN: every send slot to that peer is in flight, retry. */
dl_status_t dl__tcp_post(dl_tcp_t *t, int peer, uint32_t ctx, int64_t tag, const void *data,
                         size_t n, dl_tcp_send_t *h_p);
/* Whether a posted send has been written out; releases its slot once so. */
bool dl__tcp_send_done(dl_tcp_t *t, const dl_tcp_send_t *h);
/* Matches the oldest message from peer (any TCP peer when peer < 0) under
 * (ctx, tag) and consumes it through fn; a message fn refuses stays queued.
 * DL_ERR_AGAIN: nothing yet. *src_p receives the sender's world rank. */
dl_status_t dl__tcp_try_recv(dl_tcp_t *t, int peer, uint32_t ctx, int64_t tag, dl_tcp_consume_fn fn,
                             void *arg, int *src_p);

/* Sends ABORT (culprit, why) to every peer. */
void dl__tcp_abort(dl_tcp_t *t, int culprit, const char *why);
/* The rank whose connection failed (died, or broke the protocol) with the
 * reason in why and its status in *st_p; -1 when none did. */
int dl__tcp_failed_peer(dl_tcp_t *t, char *why, size_t why_cap, dl_status_t *st_p);
/* Logs what the I/O thread noticed (dropped connections) from the calling
 * thread: the I/O thread itself never logs, since a rank's log sink writes
 * to its control connection. */
void dl__tcp_flush_log(dl_tcp_t *t);

#endif
