/* The shared-memory transport: one segment per host that every local rank
 * maps. It holds, per rank, a doorbell (a futex word that peers ring), a
 * descriptor ring per (sender, receiver) channel, and an arena from which the
 * rank allocates tensors. A send posts a descriptor (where the data is in the
 * sender's arena); the receiver copies or reduces straight from there and
 * retires the descriptor (the ring's low mark passes it), which completes
 * the send. No data is copied into an intermediate buffer.
 *
 * The segment is a memfd: it has no name in /dev/shm, so nothing is left
 * behind when ranks are killed; peers open it through /proc/PID/fd/N. */
#ifndef DL_TRANSPORT_SHM_H
#define DL_TRANSPORT_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"
#include "distlab/store.h"
#include "distlab/tensor.h"
#include "transport/arena.h"

#define DL_SHM_MAX_RANKS 256
/* Messages up to this size travel inside the descriptor (eager). */
#define DL_SHM_EAGER_MAX 2016

typedef struct dl_shm dl_shm_t;

/* A posted send: complete once the receiver has consumed it. */
typedef struct {
    int peer;
    uint64_t seq;
    bool eager; /* copied when posted (into the descriptor or a bounce buffer): complete */
} dl_shm_send_t;

/* A message matched by dl__shm_hold, until dl__shm_release. */
typedef struct {
    int from; /* local index of the sender */
    uint64_t seq;
} dl_shm_held_t;

/* Applies received bytes: copy or reduce from the peer's memory. */
typedef dl_status_t (*dl_shm_consume_fn)(void *arg, const void *remote, size_t nbytes);

/* Creates (lowest local rank) or attaches to the host's segment through the
 * store; every local rank calls it. ranks: the world ranks on this host in
 * order; me: this rank's world rank. key_prefix keeps worlds apart. */
dl_status_t dl__shm_open(dl_store_t *store, const char *key_prefix, const int *ranks, int nlocal,
                         int me, size_t arena_bytes, dl_shm_t **shm_p);
void dl__shm_close(dl_shm_t *shm);

/* The allocator of this rank's arena. */
dl_allocator_t *dl__shm_allocator(dl_shm_t *shm);
/* Whether sends too large for a descriptor but of at most a few KiB are
 * copied when posted (complete at once) rather than read in place (complete
 * when consumed). Off by default: worth it only where a sender's wait for
 * its receiver costs a context switch, with more ranks than cores. */
void dl__shm_copy_medium(dl_shm_t *shm, bool on);
/* This rank's arena, for dl__arena_owns (where a tensor lies). */
const dl_arena_t *dl__shm_arena(const dl_shm_t *shm);
/* Page-locks this rank's arena up to ptr + n, for copies to and from GPUs
 * (dl__arena_pin). */
void dl__shm_pin_arena(dl_shm_t *shm, const void *ptr, size_t n);
/* Whether world rank r is on this host (has a slot in the segment). */
bool dl__shm_has_rank(const dl_shm_t *shm, int r);

/* Posts n bytes at data to world rank peer under (ctx, tag). Small messages
 * are copied into the descriptor, and so are medium ones into a bounce
 * buffer when dl__shm_copy_medium is on: those complete at once. Others
 * must lie in this rank's arena and stay untouched until
 * dl__shm_send_done. DL_ERR_AGAIN: the channel is full, or (a medium
 * copy) the pair's bounce buffers are all unread; try again later. */
dl_status_t dl__shm_post(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag, const void *data,
                         size_t n, dl_shm_send_t *h_p);
/* The same, but the descriptor always points at the data in this rank's
 * arena, however small: its receiver may hold it and write into it
 * (dl__shm_hold). */
dl_status_t dl__shm_post_ref(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag, const void *data,
                             size_t n, dl_shm_send_t *h_p);
/* Whether a posted send was consumed; releases its slot once it was. */
bool dl__shm_send_done(dl_shm_t *shm, const dl_shm_send_t *h);
/* Matches the oldest message from peer (or any peer when peer < 0) under
 * (ctx, tag) and consumes it through fn. DL_ERR_AGAIN: nothing yet.
 * *src_p receives the sender's world rank. */
dl_status_t dl__shm_try_recv(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag,
                             dl_shm_consume_fn fn, void *arg, int *src_p);
/* Matches the oldest message from peer under (ctx, tag), as try_recv does,
 * but keeps it: *remote_p is the sender's memory (n_p bytes), which this
 * rank may read and write until dl__shm_release; the send completes then.
 * DL_ERR_AGAIN: nothing yet; DL_ERR_PROTOCOL: the message is a copy (in
 * its descriptor or a bounce buffer; not posted with dl__shm_post_ref). */
dl_status_t dl__shm_hold(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag, void **remote_p,
                         size_t *n_p, dl_shm_held_t *h_p);
void dl__shm_release(dl_shm_t *shm, const dl_shm_held_t *h);

/* ---- waiting ---- */

/* A peer rings a rank's doorbell only while the rank is armed: a message
 * to a rank that is spinning then moves no shared counter (the doorbell's
 * cache line crossing cores with every message cost a small collective
 * about a tenth of its time). To sleep: dl__shm_arm, check the condition
 * you wait for once more (what peers did before the arm is seen there,
 * what they do after it rings), dl__shm_sleep unless it holds, and
 * dl__shm_disarm in either case. dl__shm_arm returns the doorbell value to
 * pass to dl__shm_sleep. */
uint32_t dl__shm_arm(dl_shm_t *shm);
/* How a post orders its message before its look at the receiver's
 * sleepers (see ring in shm.c): with a fence each time (always, or where
 * the kernel lacks membarrier's expedited global barrier), or, where this
 * rank and its receiver both registered here for that barrier, with none:
 * the receiver runs the barrier each time it arms. Called once, after
 * dl__shm_open and before the first post; ranks may choose differently. */
void dl__shm_fence(dl_shm_t *shm, bool always);
/* Registers this process for membarrier's expedited global barrier (what
 * dl__shm_fence needs); false where the kernel lacks it. The kernel makes
 * a process that already has threads wait a grace period for it (about
 * 10 ms), one thread not at all: see dl_comm_prepare_process. */
bool dl__shm_register_barrier(void);
void dl__shm_disarm(dl_shm_t *shm);
/* Sleeps until the doorbell moves past seen, a signal arrives or
 * timeout_ms passes; true when the doorbell moved (a peer rang). */
bool dl__shm_sleep(dl_shm_t *shm, uint32_t seen, int timeout_ms);
/* Rings this rank's own doorbell (another thread of the rank, such as the
 * TCP transport's, has something for it). */
void dl__shm_wake(dl_shm_t *shm);

/* ---- failure ---- */

/* Marks the segment aborted (first reason wins) and wakes every rank. */
void dl__shm_abort(dl_shm_t *shm, int culprit, const char *why);
/* Non-zero when aborted; *why_p gets the reason. */
bool dl__shm_aborted(dl_shm_t *shm, const char **why_p);
/* The word dl__shm_aborted reads: zero while the world is whole. It stays
 * where it is while the segment is open. */
const _Atomic uint32_t *dl__shm_aborted_word(dl_shm_t *shm);
/* An interrupt (dl_comm_interrupt_from_signal): unlike an abort it passes.
 * The segment counts interrupts; work remembers the count when it starts
 * and fails once the count has moved on. Messages posted before an
 * interrupt and not yet received are dropped by their receiver. Wakes every
 * local rank. */
void dl__shm_interrupt(dl_shm_t *shm);
/* How many interrupts the segment has seen: a counter in the segment, read
 * with atomic_load. It stays where it is while the segment is open. */
const _Atomic uint32_t *dl__shm_interrupts(dl_shm_t *shm);
/* The world rank of a local rank whose process is gone, or -1. Each call
 * looks at up to 16 peers, the next ones the next call (round robin). */
int dl__shm_find_dead(dl_shm_t *shm);
pid_t dl__shm_pid(dl_shm_t *shm, int r);

#endif
