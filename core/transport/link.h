/* The builtin backend's routing layer: one post / send_done / try_recv API
 * over the two transports, picked per peer at set-up.
 *
 *   peer on this host      shared memory (shm.h): zero copy from its arena
 *   peer on another host   TCP (tcp.h)
 *
 * DISTLAB_TRANSPORT chooses: "auto" (or unset) as above; "shm" refuses a
 * world that spans hosts; "tcp" uses TCP between every pair of ranks, even
 * on one host. A rank's host is the name it publishes in the store:
 * DISTLAB_HOST_ID when set (tests pretend to be several hosts with it),
 * else gethostname(). Every rank has a shared-memory segment, alone in it if
 * need be: its arena holds the rank's tensors, and its doorbell is what a
 * waiting rank sleeps on, rung by local peers and by the TCP I/O thread.
 *
 * The TCP listener binds to DISTLAB_HOST_ADDR when set, else 127.0.0.1 when
 * every rank is on this host, else the local address of the rank's
 * connection to the store (an address the store's host could reach).
 *
 * The contract is shm.h's: per-peer order, matching on (ctx, tag), any
 * source, DL_ERR_AGAIN for "not yet", consume callbacks that copy or
 * reduce from the transport's memory. A send is complete when the receiver
 * consumed it (shm) or when it was written to the socket (TCP); messages up
 * to the eager size complete when posted. */
#ifndef DL_TRANSPORT_LINK_H
#define DL_TRANSPORT_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"
#include "distlab/store.h"
#include "distlab/tensor.h"
#include "transport/shm.h"
#include "transport/tcp.h"

typedef struct dl_link dl_link_t;

typedef struct {
    bool tcp;
    union {
        dl_shm_send_t shm;
        dl_tcp_send_t tcp;
    } u;
} dl_link_send_t;

typedef dl_shm_consume_fn dl_link_consume_fn;

/* Publishes this rank's host, opens its shared-memory segment with the
 * ranks it shares it with, and connects to its TCP peers. shm is
 * DISTLAB_TRANSPORT as dl_comm_env_transport reads it: -1 (auto: shared
 * memory within a host, TCP between hosts), 1 (shared memory only, refused
 * across hosts) or 0 (TCP between every pair). On failure err says why,
 * naming ranks and hosts. */
dl_status_t dl__link_open(dl_store_t *store, const char *prefix, int rank, int size,
                          size_t arena_bytes, int shm, int timeout_ms, char *err, size_t err_cap,
                          dl_link_t **link_p);
/* Says goodbye to the TCP peers, stops the I/O thread, unmaps the segment. */
void dl__link_close(dl_link_t *l);

dl_allocator_t *dl__link_allocator(dl_link_t *l);
/* See dl__shm_copy_medium. */
void dl__link_copy_medium(dl_link_t *l, bool on);
/* See dl__shm_fence. */
void dl__link_shm_fence(dl_link_t *l, bool always);
/* See dl__shm_register_barrier. */
bool dl__link_register_barrier(void);
/* This rank's arena (dl__shm_arena), for dl__arena_owns. */
const dl_arena_t *dl__link_arena(const dl_link_t *l);
/* See dl__shm_pin_arena. */
void dl__link_pin_arena(dl_link_t *l, const void *ptr, size_t n);
/* The ranks on this host (this one included), and whether any peer is
 * reached over TCP (then each rank also runs an I/O thread). */
int dl__link_host_ranks(const dl_link_t *l);
/* This rank's place among its host's ranks, from 0. */
int dl__link_host_index(const dl_link_t *l);
bool dl__link_uses_tcp(const dl_link_t *l);

dl_status_t dl__link_post(dl_link_t *l, int peer, uint32_t ctx, int64_t tag, const void *data,
                          size_t n, dl_link_send_t *h_p);
/* Whether the send completed. Its callers ask until it did, and then no
 * more: dl__link_moves counts each completion once. */
bool dl__link_send_done(dl_link_t *l, const dl_link_send_t *h);

/* Write-back messages (sched.h, step 4), over shared memory only: a peer
 * over TCP gets DL_ERR_UNSUPPORTED. post_ref posts data by reference
 * however small; hold matches a message without consuming it and gives
 * the sender's memory to read and write until release, which completes
 * the send (shm.h). */
typedef dl_shm_held_t dl_link_held_t;
dl_status_t dl__link_post_ref(dl_link_t *l, int peer, uint32_t ctx, int64_t tag, const void *data,
                              size_t n, dl_link_send_t *h_p);
dl_status_t dl__link_hold(dl_link_t *l, int peer, uint32_t ctx, int64_t tag, void **remote_p,
                          size_t *n_p, dl_link_held_t *h_p);
void dl__link_release(dl_link_t *l, const dl_link_held_t *h);
/* Whether world rank peer is reached over TCP. */
bool dl__link_via_tcp(const dl_link_t *l, int peer);
dl_status_t dl__link_try_recv(dl_link_t *l, int peer, uint32_t ctx, int64_t tag,
                              dl_link_consume_fn fn, void *arg, int *src_p);

/* Messages this rank posted, saw sent (a peer consumed one read in place)
 * or received so far: a wait that sees it move knows its peers are moving
 * (a count of its own, read for free). */
uint32_t dl__link_moves(const dl_link_t *l);
/* dl__shm_arm, dl__shm_disarm and dl__shm_sleep on the link's segment,
 * whose doorbell the TCP transport's thread rings too. */
uint32_t dl__link_arm(dl_link_t *l);
void dl__link_disarm(dl_link_t *l);
bool dl__link_sleep(dl_link_t *l, uint32_t seen, int timeout_ms);

/* Aborts the world: every rank on this host through the segment, every TCP
 * peer with an abort frame. */
void dl__link_abort(dl_link_t *l, int culprit, const char *why);
/* DL_OK while the world is whole. Once aborted: DL_ERR_PEER_DEAD when this
 * rank saw the culprit's TCP connection die, else DL_ERR_ABORTED; *why_p is
 * the first reason given. Also logs what the TCP I/O thread noticed. */
dl_status_t dl__link_failed(dl_link_t *l, const char **why_p);
/* A word that stays zero while dl__link_failed would say DL_OK and do
 * nothing else, for a check before every call: the segment's abort word,
 * or NULL where the link uses TCP (dl__link_failed logs its thread's notes). */
const _Atomic uint32_t *dl__link_down_word(dl_link_t *l);
/* Interrupts (see dl__shm_interrupt): counted in this host's segment only.
 * Over TCP nothing is dropped: an interrupted operation's messages still
 * arrive, and match by (ctx, tag) as usual. */
void dl__link_interrupt(dl_link_t *l);
const _Atomic uint32_t *dl__link_interrupts(dl_link_t *l);
/* A local rank whose process is gone ("rank 2 (pid 4242) died" in why), or
 * -1; each call looks at up to 16 local peers (dl__shm_find_dead). Remote
 * ranks are watched by their TCP connections. */
int dl__link_find_dead(dl_link_t *l, char *why, size_t why_cap);

#endif
