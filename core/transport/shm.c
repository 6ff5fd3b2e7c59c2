/* Shared-memory transport: segment set-up, doorbells, descriptor channels
 * and the per-rank arena. See shm.h for the protocol. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "distlab/log.h"
#include "transport/arena.h"
#include "transport/shm.h"

/* "dlshmv06": slots published by their mark, a low mark per channel, a
 * rank's barrier flag, 32-byte slot headers */
#define SHM_MAGIC 0x646c73686d763036ull
/* Slots per channel: messages a sender may have posted to one receiver and
 * not yet seen consumed. A rank that sends more (a rooted collective called
 * in a loop, whose root falls behind) waits for its receiver; with more
 * ranks than cores that wait gives the core away, each time. As many slots
 * as the channels' memory budget allows, from NSLOT_MIN to NSLOT_MAX (a
 * power of two): 128 up to 31 ranks on a host, 64 up to 45, 32 from 46 on.
 * Gather, scatter and broadcast of 16 to 256 B at np=4 on 2 cores took 0.8
 * to 1.8 us with 32 slots, 0.4 to 0.8 with 128 (docs/benchmarks.md). */
#define NSLOT_MIN    32
#define NSLOT_MAX    128
#define CHANS_BUDGET ((size_t)256 << 20)
/* Messages up to this size (2 KiB less the header) travel inside the descriptor (eager): the send
 * completes when it is posted, which halves a small step's latency. Larger
 * ones are read from the sender's arena (zero copy) and complete when the
 * receiver has consumed them. */
#define INLINE_MAX DL_SHM_EAGER_MAX
#define LEN_FAR    UINT32_MAX /* a slot's len: the message lies elsewhere (far) */
/* With more ranks than cores (dl__shm_copy_medium), messages too large
 * for a slot but up to this size are copied too, into one of the pair's
 * NBOUNCE bounce buffers, round robin (a region of the segment beside the
 * channels, apart from the arenas: it never takes room from tensors, and
 * its pages take memory only once used), and complete when posted as well.
 * Read in place, they make the sender wait for its receiver, and there
 * that wait gives the core away (a 2 KiB broadcast at np=4 on 2 cores took
 * 7 to 12 us where 1 KiB took 0.7). With a core per rank the wait is a
 * round trip, cheaper than the copy and the bounce buffers' cache lines
 * (2 to 8 KiB rows at np=2 ran 2 to 4 times slower copied;
 * docs/benchmarks.md). */
#define BOUNCE_MAX  ((size_t)8 << 10)
#define NBOUNCE     32 /* bounce buffers per (sender, receiver) pair, used round robin */
#define BOUNCE_AREA ((size_t)NBOUNCE * BOUNCE_MAX)
/* Arenas lie this far apart beyond their size. Arenas a power of two apart
 * (1 GiB by default) put the tensors of two ranks, allocated alike, at
 * addresses a power of two apart, and a core that streams through both (a
 * sum of its share from a peer's buffer and its own) ran at half speed:
 * 16 MiB at np=2 took 2.1 to 2.9 ms with buffers 1 GiB apart against 0.89
 * to 0.95 ms 1 GiB + 1 MiB apart, measured on the development machine
 * (docs/benchmarks.md, "The shared-memory floor"). */
#define ARENA_STAGGER ((size_t)1 << 20)

/* A slot's state once its message has arrived (its mark says which
 * message that is). CONSUMED is written only for a message consumed out of
 * order, past an older one still pending: the channel's low mark tells the
 * rest. HELD: the receiver has matched it and is still working in the
 * sender's memory (a write-back, dl__shm_hold); the send is not complete. */
enum { SLOT_POSTED = 1, SLOT_CONSUMED = 2, SLOT_HELD = 3 };
enum { FAULTED_OUT = 1, FAULTED_IN = 2, BOUNCE_OUT = 4, BOUNCE_IN = 8 };

/* ---- the segment's layout ---- */

/* A slot starts a cache line, and its header (32 bytes) leaves the rest
 * of that line to the payload: a message of up to 32 bytes is one line for
 * the receiver to fetch. (A 48-byte header left 16, and 17 to 32 bytes a
 * message cost a second line: docs/benchmarks.md.) A message that does not
 * travel inside the slot says where it lies in the payload's first bytes. */
typedef struct {
    /* 1 + the sequence number of the message it holds (0: never used).
     * Written last, it publishes the message: a receiver polls the next
     * slot's mark, on the very line it then reads, rather than a counter
     * of its own that the sender would write on every message. */
    _Atomic uint64_t mark;
    int64_t tag;
    uint32_t ctx;
    _Atomic uint32_t state;
    uint32_t gen; /* the segment's interrupt count when it was posted */
    uint32_t len; /* an inline message's size, or LEN_FAR */
    union {
        uint8_t data[INLINE_MAX]; /* the payload of an inline message */
        struct {
            uint64_t off; /* from the segment base */
            uint64_t nbytes;
            uint32_t copied; /* a bounce buffer's copy: nothing to write back into */
        } far;
    };
} shm_slot_t;

_Static_assert(sizeof(shm_slot_t) == 2048, "slots are 2 KiB, whole cache lines");
_Static_assert(offsetof(shm_slot_t, data) == 32, "the header is 32 bytes");
_Static_assert(INLINE_MAX < LEN_FAR, "LEN_FAR is no inline message's size");
_Static_assert(sizeof(((shm_slot_t *)0)->far) <= INLINE_MAX, "far fits the payload");

/* The channel from one sender to one receiver: nslot slots used round
 * robin, message seq in slot seq % nslot. Only the sender writes a slot's
 * fields; the receiver writes low, the oldest message it has not consumed
 * (or still holds), and the state of a message it consumes out of order or
 * holds. A sender reuses a slot once low has passed the message in it,
 * reading low (a line of its own) once per nslot messages. So a small
 * message moves one line from the sender's cache to the receiver's and
 * nothing back: a counter of posted messages beside the slots, and a state
 * written back into every slot, cost two more transfers per message (a
 * third of a small scatter's time at its root). Messages are posted in
 * order and each needs the one nslot before it consumed, so waiting for
 * low waits exactly when looking at each slot would. */
typedef struct {
    _Atomic uint64_t low;
    char pad_[56];
    shm_slot_t slots[]; /* the segment's nslot */
} shm_chan_t;

_Static_assert(sizeof(shm_chan_t) == 64, "the slots start a cache line");

typedef struct {
    _Atomic uint32_t doorbell;
    _Atomic uint32_t sleepers;
    /* Set once the rank runs membarrier's global barrier each time it arms
     * (dl__shm_fence): a registered peer may then ring it without a fence.
     * Beside sleepers, which a ring reads anyway: no other line. */
    _Atomic uint32_t barrier;
    int32_t pid;
    int32_t world_rank;
    _Atomic uint32_t left; /* closed its communicator: gone, but not dead */
    char pad_[40];
} shm_rank_t;

_Static_assert(sizeof(shm_rank_t) == 64, "a rank's words are one cache line");

typedef struct {
    uint64_t magic;
    uint32_t nlocal;
    uint32_t nslot; /* slots per channel */
    uint64_t arena_bytes;
    uint64_t ranks_off, chans_off, bounce_off, arenas_off, total;
    _Atomic uint32_t aborted;
    int32_t abort_rank;
    char abort_why[256];
    _Atomic uint32_t interrupts; /* dl__shm_interrupt calls so far */
    int32_t world_ranks[DL_SHM_MAX_RANKS];
} shm_header_t;

struct dl_shm {
    int fd;
    uint8_t *base;
    size_t total;
    shm_header_t *hdr;
    shm_rank_t *ranks;
    shm_chan_t *chans; /* [sender * nlocal + receiver], chan_bytes each */
    size_t chan_bytes;
    uint64_t nslot;
    int nlocal;
    int me;                             /* local index */
    int local_of[DL_SHM_MAX_RANKS * 4]; /* world rank -> local index, -1 when remote */
    int world_max;
    uint64_t *next_seq; /* [peer]: next sequence number this rank sends on */
    uint64_t *low;      /* [peer]: oldest message from peer this rank has not consumed */
    uint64_t *room;     /* [peer]: sequence numbers below it are free to post on (low + nslot) */
    uint8_t *faulted;   /* [peer]: FAULTED_OUT, FAULTED_IN, BOUNCE_*: prefaulted */
    /* [peer * NBOUNCE + i]: 1 + the last message to peer copied into its
     * bounce buffer i, or 0 */
    uint64_t *bounce_seq;
    bool copy_medium; /* dl__shm_copy_medium */
    /* for membarrier's expedited global barrier (dl__shm_fence); read by
     * the TCP transport's thread too, in ring */
    _Atomic bool registered;
    bool blind;    /* a membarrier failed: its wake-ups may be missed, so sleeps are short */
    int rr;        /* where an any-source scan starts, for fairness */
    int dead_next; /* the peer dl__shm_find_dead looks at first, from 1 after me */
    dl_arena_t arena;
};

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* The index of the (sender, receiver) pair of local ranks: of its channel
 * and of its bounce buffers. */
static size_t pair_of(const dl_shm_t *shm, int from, int to)
{
    return (size_t)from * (size_t)shm->nlocal + (size_t)to;
}

static shm_chan_t *chan(dl_shm_t *shm, int from, int to)
{
    return (shm_chan_t *)((uint8_t *)shm->chans + pair_of(shm, from, to) * shm->chan_bytes);
}

static shm_slot_t *slot_of(dl_shm_t *shm, shm_chan_t *c, uint64_t seq)
{
    return &c->slots[seq & (shm->nslot - 1)];
}

static size_t chan_size(uint32_t nslot)
{
    return sizeof(shm_chan_t) + (size_t)nslot * sizeof(shm_slot_t);
}

/* The most slots per channel that keep nlocal^2 channels within budget. */
static uint32_t slots_for(int nlocal)
{
    size_t pairs = (size_t)nlocal * (size_t)nlocal;
    uint32_t n = NSLOT_MAX;
    while (n > NSLOT_MIN && pairs * chan_size(n) > CHANS_BUDGET)
        n /= 2;
    return n;
}

static int futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return (int)syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

/* Wakes local rank `local` if it is armed to sleep (dl__shm_arm). What the
 * caller published (a message, a freed slot, an abort) must be ordered
 * before the look at the rank's sleepers, as dl__shm_arm orders its
 * announcement before its last look for work: either that look finds what
 * was published, or this one finds the rank armed and rings.
 *
 * A fence does that, and costs a small message most of its sender's time:
 * it waits until the slot's line, which the receiver polls, is taken back
 * from the receiver's cache. Where both ranks registered for membarrier's
 * global barrier, the rank about to sleep runs that barrier instead: it
 * makes every running registered process execute a fence there and then,
 * so that either the message is visible to the sleeper's last look, or the
 * sender has not yet looked at sleepers (an asymmetric fence: the rare
 * side, sleeping, pays for the frequent one, posting). */
static void ring(dl_shm_t *shm, int local)
{
    shm_rank_t *rk = &shm->ranks[local];
    if (atomic_load_explicit(&shm->registered, memory_order_relaxed) &&
        atomic_load_explicit(&rk->barrier, memory_order_relaxed))
        atomic_signal_fence(memory_order_seq_cst); /* the compiler's order only */
    else
        atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&rk->sleepers, memory_order_relaxed) == 0)
        return;
    atomic_fetch_add(&rk->doorbell, 1);
    futex(&rk->doorbell, FUTEX_WAKE, INT_MAX, NULL);
}

/* ---- set-up ---- */

static void layout(shm_header_t *h, int nlocal, size_t arena_bytes)
{
    size_t off = align_up(sizeof(shm_header_t), 4096);
    h->ranks_off = off;
    off = align_up(off + sizeof(shm_rank_t) * (size_t)nlocal, 4096);
    h->chans_off = off;
    h->nslot = slots_for(nlocal);
    off = align_up(off + chan_size(h->nslot) * (size_t)nlocal * (size_t)nlocal, 4096);
    h->bounce_off = off;
    off += BOUNCE_AREA * (size_t)nlocal * (size_t)nlocal;
    h->arenas_off = off;
    h->total = off + (arena_bytes + ARENA_STAGGER) * (size_t)nlocal;
    h->nlocal = (uint32_t)nlocal;
    h->arena_bytes = arena_bytes;
}

static dl_status_t map_segment(dl_shm_t *shm, int fd, size_t total)
{
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        dl_log_error("mmap of the shared segment (%zu bytes) failed: %m", total);
        return DL_ERR_SYSTEM;
    }
    shm->base = p;
    shm->total = total;
    shm->hdr = p;
    return DL_OK;
}

/* Points at the rank blocks and channels, once the header is valid. */
static void bind_layout(dl_shm_t *shm)
{
    shm->ranks = (shm_rank_t *)(shm->base + shm->hdr->ranks_off);
    shm->chans = (shm_chan_t *)(shm->base + shm->hdr->chans_off);
    shm->nslot = shm->hdr->nslot;
    shm->chan_bytes = chan_size(shm->hdr->nslot);
}

static dl_status_t create_segment(dl_shm_t *shm, const int *ranks, int nlocal, size_t arena_bytes)
{
    shm_header_t h;
    memset(&h, 0, sizeof(h));
    layout(&h, nlocal, arena_bytes);
    int fd = memfd_create("distlab", MFD_CLOEXEC);
    if (fd < 0) {
        dl_log_error("memfd_create failed: %m");
        return DL_ERR_SYSTEM;
    }
    /* The file is sparse: only pages that ranks touch take memory. */
    if (ftruncate(fd, (off_t)h.total) != 0) {
        dl_log_error("sizing the shared segment to %zu bytes failed: %m", (size_t)h.total);
        goto err_close_fd;
    }
    shm->fd = fd;
    if (map_segment(shm, fd, h.total) != DL_OK)
        goto err_close_fd;
    memcpy(shm->hdr, &h, sizeof(h));
    for (int i = 0; i < nlocal; i++)
        shm->hdr->world_ranks[i] = ranks[i];
    atomic_thread_fence(memory_order_release);
    shm->hdr->magic = SHM_MAGIC;
    bind_layout(shm);
    return DL_OK;

err_close_fd:
    close(fd);
    return DL_ERR_SYSTEM;
}

static dl_status_t attach_segment(dl_shm_t *shm, const char *where)
{
    int pid = 0, fd = -1;
    if (sscanf(where, "%d %d", &pid, &fd) != 2) {
        dl_log_error("bad shared segment address '%s' in the store", where);
        return DL_ERR_PROTOCOL;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    int myfd = open(path, O_RDWR | O_CLOEXEC);
    if (myfd < 0) {
        dl_log_error("opening the shared segment at %s failed: %m", path);
        return DL_ERR_SYSTEM;
    }
    shm_header_t h;
    if (pread(myfd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != SHM_MAGIC ||
        h.nslot < NSLOT_MIN || h.nslot > NSLOT_MAX || (h.nslot & (h.nslot - 1)) != 0) {
        dl_log_error("the shared segment at %s is not a distlab segment", path);
        close(myfd);
        return DL_ERR_PROTOCOL;
    }
    shm->fd = myfd;
    if (map_segment(shm, myfd, h.total) != DL_OK) {
        close(myfd);
        return DL_ERR_SYSTEM;
    }
    bind_layout(shm);
    return DL_OK;
}

/* Maps n bytes at p into this process, for writing or for reading. */
static void prefault(const void *p, size_t n, bool write)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)p, end = start + n;
    uintptr_t first = start / page * page, last = (end + page - 1) / page * page;
    /* One system call maps them all; before Linux 5.14 (or glibc 2.35's
     * headers), one fault each. */
#if defined(MADV_POPULATE_WRITE) && defined(MADV_POPULATE_READ)
    if (madvise((void *)first, last - first, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
        return;
#endif
    for (uintptr_t q = first; q < last; q += page)
        (void)*(const volatile char *)q;
}

/* Touches every page of one channel, so that the messages that follow do
 * not pay page faults one by one (a slot holds up to INLINE_MAX bytes, and
 * slots are used round robin). Done for a channel on its first use, not for
 * all of them at set-up: there are nlocal^2 channels (at 128 ranks, 16384
 * of 17 pages: 1.1 GB of shared memory and 280,000 page faults), while
 * most algorithms use a few channels per rank. */
static void prefault_channel(dl_shm_t *shm, int from, int to)
{
    prefault(chan(shm, from, to), shm->chan_bytes, from == shm->me);
}

/* Every local rank adds itself to a counter; the last one sets a flag that
 * all wait for. The segment's creator must not close its descriptor before
 * everybody has opened it, hence this barrier. */
static dl_status_t store_barrier(dl_store_t *store, const char *prefix, const char *name, int n)
{
    char key[256], done[256];
    snprintf(key, sizeof(key), "%s/%s/count", prefix, name);
    snprintf(done, sizeof(done), "%s/%s/done", prefix, name);
    int64_t v = 0;
    dl_status_t st = dl_store_add(store, key, 1, &v);
    if (st != DL_OK)
        return st;
    if (v == n && (st = dl_store_set_str(store, done, "1")) != DL_OK)
        return st;
    const char *keys[] = {done};
    return dl_store_wait(store, keys, 1);
}

dl_status_t dl__shm_open(dl_store_t *store, const char *key_prefix, const int *ranks, int nlocal,
                         int me, size_t arena_bytes, dl_shm_t **shm_p)
{
    if (arena_bytes == 0 || arena_bytes > ((size_t)1 << 46) / (size_t)(nlocal > 0 ? nlocal : 1)) {
        dl_log_error("a %zu MiB arena per rank for %d ranks is too large", arena_bytes >> 20,
                     nlocal);
        return DL_ERR_RANGE;
    }
    if (nlocal < 1 || nlocal > DL_SHM_MAX_RANKS) {
        dl_log_error("%d ranks on one host; at most %d are supported", nlocal, DL_SHM_MAX_RANKS);
        return DL_ERR_RANGE;
    }
    dl_status_t st = DL_ERR_NOMEM;
    dl_shm_t *shm = calloc(1, sizeof(*shm));
    if (shm == NULL)
        return DL_ERR_NOMEM;
    shm->fd = -1;
    shm->nlocal = nlocal;
    shm->me = -1;
    for (size_t i = 0; i < sizeof(shm->local_of) / sizeof(shm->local_of[0]); i++)
        shm->local_of[i] = -1;
    for (int i = 0; i < nlocal; i++) {
        if (ranks[i] < 0 || ranks[i] >= (int)(sizeof(shm->local_of) / sizeof(int))) {
            st = DL_ERR_RANGE;
            goto err_free;
        }
        shm->local_of[ranks[i]] = i;
        if (ranks[i] > shm->world_max)
            shm->world_max = ranks[i];
        if (ranks[i] == me)
            shm->me = i;
    }
    if (shm->me < 0) {
        st = DL_ERR_INVALID;
        goto err_free;
    }
    shm->next_seq = calloc((size_t)nlocal, sizeof(uint64_t));
    shm->low = calloc((size_t)nlocal, sizeof(uint64_t));
    shm->room = calloc((size_t)nlocal, sizeof(uint64_t));
    shm->faulted = calloc((size_t)nlocal, 1);
    shm->bounce_seq = calloc((size_t)nlocal * NBOUNCE, sizeof(uint64_t));
    if (shm->next_seq == NULL || shm->low == NULL || shm->room == NULL || shm->faulted == NULL ||
        shm->bounce_seq == NULL)
        goto err_free;

    char key[256];
    snprintf(key, sizeof(key), "%s/shm/where", key_prefix);
    if (shm->me == 0) {
        if ((st = create_segment(shm, ranks, nlocal, arena_bytes)) != DL_OK)
            goto err_free;
        char where[64];
        snprintf(where, sizeof(where), "%d %d", (int)getpid(), shm->fd);
        if ((st = dl_store_set_str(store, key, where)) != DL_OK)
            goto err_unmap;
    } else {
        char *where = NULL;
        size_t len = 0;
        if ((st = dl_store_get(store, key, (void **)&where, &len)) != DL_OK)
            goto err_free;
        st = attach_segment(shm, where);
        free(where);
        if (st != DL_OK)
            goto err_free;
        if ((int)shm->hdr->nlocal != nlocal) {
            dl_log_error("the shared segment holds %u ranks, expected %d", shm->hdr->nlocal,
                         nlocal);
            st = DL_ERR_PROTOCOL;
            goto err_unmap;
        }
    }
    shm_rank_t *mine = &shm->ranks[shm->me];
    mine->pid = (int32_t)getpid();
    mine->world_rank = me;
    uint8_t *arena_base = shm->base + shm->hdr->arenas_off +
                          (shm->hdr->arena_bytes + ARENA_STAGGER) * (size_t)shm->me;
    if ((st = dl__arena_init(&shm->arena, arena_base, shm->hdr->arena_bytes)) != DL_OK)
        goto err_unmap;
    if ((st = store_barrier(store, key_prefix, "shm/attached", nlocal)) != DL_OK)
        goto err_arena;
    *shm_p = shm;
    return DL_OK;

err_arena:
    dl__arena_destroy(&shm->arena);
err_unmap:
    munmap(shm->base, shm->total);
    close(shm->fd);
err_free:
    free(shm->next_seq);
    free(shm->low);
    free(shm->room);
    free(shm->faulted);
    free(shm->bounce_seq);
    free(shm);
    return st;
}

void dl__shm_close(dl_shm_t *shm)
{
    if (shm == NULL)
        return;
    atomic_store(&shm->ranks[shm->me].left, 1);
    dl__arena_destroy(&shm->arena);
    munmap(shm->base, shm->total);
    close(shm->fd);
    free(shm->next_seq);
    free(shm->low);
    free(shm->room);
    free(shm->faulted);
    free(shm->bounce_seq);
    free(shm);
}

dl_allocator_t *dl__shm_allocator(dl_shm_t *shm)
{
    return &shm->arena.allocator;
}

void dl__shm_copy_medium(dl_shm_t *shm, bool on)
{
    shm->copy_medium = on;
}

const dl_arena_t *dl__shm_arena(const dl_shm_t *shm)
{
    return &shm->arena;
}

void dl__shm_pin_arena(dl_shm_t *shm, const void *ptr, size_t n)
{
    dl__arena_pin(&shm->arena, ptr, n);
}

bool dl__shm_has_rank(const dl_shm_t *shm, int r)
{
    return r >= 0 && r <= shm->world_max && shm->local_of[r] >= 0;
}

pid_t dl__shm_pid(dl_shm_t *shm, int r)
{
    return dl__shm_has_rank(shm, r) ? shm->ranks[shm->local_of[r]].pid : -1;
}

/* ---- channels ---- */

/* The bounce buffers (NBOUNCE of BOUNCE_MAX) of the messages from local rank
 * `from` to local rank `to`. */
static uint8_t *bounce_area(dl_shm_t *shm, int from, int to)
{
    return shm->base + shm->hdr->bounce_off + pair_of(shm, from, to) * BOUNCE_AREA;
}

/* Reads the low mark of the channel to local rank `to` (a line the
 * receiver writes) into room[to]: the slots this rank may post in. */
static uint64_t refresh_room(dl_shm_t *shm, shm_chan_t *c, int to)
{
    uint64_t low = atomic_load_explicit(&c->low, memory_order_acquire);
    shm->room[to] = low + shm->nslot;
    return low;
}

/* Whether local rank `to` has consumed message seq from this rank: the low
 * mark passed it (as last read, else read afresh), or it was consumed out of
 * order (its slot holds it until low passes it). */
static bool consumed(dl_shm_t *shm, shm_chan_t *c, int to, uint64_t seq)
{
    if (seq + shm->nslot < shm->room[to])
        return true;
    return seq < refresh_room(shm, c, to) ||
           atomic_load_explicit(&slot_of(shm, c, seq)->state, memory_order_acquire) ==
               SLOT_CONSUMED;
}

/* The bounce buffer for message seq from this rank to local rank `to`, or
 * NULL while the message that last used it is not consumed yet (there are
 * fewer bounce buffers than slots: a free slot does not mean a free buffer).
 * The area is mapped in one go when first used, as a channel is: page by
 * page, the faults would fall in the first calls that copy. */
static uint8_t *bounce_for(dl_shm_t *shm, shm_chan_t *c, int to, uint64_t seq)
{
    uint64_t *last = &shm->bounce_seq[(size_t)to * NBOUNCE + seq % NBOUNCE];
    if (*last != 0 && !consumed(shm, c, to, *last - 1))
        return NULL;
    uint8_t *area = bounce_area(shm, shm->me, to);
    if (!(shm->faulted[to] & BOUNCE_OUT)) {
        prefault(area, BOUNCE_AREA, true);
        shm->faulted[to] |= BOUNCE_OUT;
    }
    *last = seq + 1;
    return area + (seq % NBOUNCE) * BOUNCE_MAX;
}

/* byref: the descriptor points at the data even when it is small enough
 * to travel inside it (or to be copied into a bounce buffer). */
static dl_status_t post(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag, const void *data,
                        size_t n, bool byref, dl_shm_send_t *h_p)
{
    int to = shm->local_of[peer];
    shm_chan_t *c = chan(shm, shm->me, to);
    if (!(shm->faulted[to] & FAULTED_OUT)) {
        prefault_channel(shm, shm->me, to);
        shm->faulted[to] |= FAULTED_OUT;
    }
    uint64_t seq = shm->next_seq[to];
    if (seq >= shm->room[to] && (refresh_room(shm, c, to), seq >= shm->room[to]))
        return DL_ERR_AGAIN; /* the receiver has nslot messages pending */
    shm_slot_t *slot = slot_of(shm, c, seq);
    bool copied = !byref && n <= INLINE_MAX;
    if (copied) {
        if (n > 0)
            memcpy(slot->data, data, n);
        slot->len = (uint32_t)n;
    } else {
        uint64_t off;
        if (!byref && n <= BOUNCE_MAX && shm->copy_medium) {
            uint8_t *bounce = bounce_for(shm, c, to, seq);
            if (bounce == NULL)
                return DL_ERR_AGAIN;
            memcpy(bounce, data, n);
            off = (uint64_t)(bounce - shm->base);
            copied = true;
        } else {
            if (!dl__arena_owns(&shm->arena, data, n))
                return DL_ERR_INVALID;
            off = (uint64_t)((const uint8_t *)data - shm->base);
        }
        slot->len = LEN_FAR;
        slot->far.off = off;
        slot->far.nbytes = n;
        slot->far.copied = copied;
    }
    slot->ctx = ctx;
    slot->tag = tag;
    slot->gen = atomic_load_explicit(&shm->hdr->interrupts, memory_order_relaxed);
    atomic_store_explicit(&slot->state, SLOT_POSTED, memory_order_relaxed);
    atomic_store_explicit(&slot->mark, seq + 1, memory_order_release);
    shm->next_seq[to] = seq + 1;
    ring(shm, to);
    h_p->peer = to;
    h_p->seq = seq;
    h_p->eager = copied;
    return DL_OK;
}

dl_status_t dl__shm_post(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag, const void *data,
                         size_t n, dl_shm_send_t *h_p)
{
    return post(shm, peer, ctx, tag, data, n, false, h_p);
}

dl_status_t dl__shm_post_ref(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag, const void *data,
                             size_t n, dl_shm_send_t *h_p)
{
    return post(shm, peer, ctx, tag, data, n, true, h_p);
}

bool dl__shm_send_done(dl_shm_t *shm, const dl_shm_send_t *h)
{
    if (h->eager)
        return true; /* copied when posted */
    return consumed(shm, chan(shm, shm->me, h->peer), h->peer, h->seq);
}

/* Moves the channel's low mark up to `low` and past the messages after it
 * consumed out of order, and publishes it to the sender. */
static void advance_low(dl_shm_t *shm, shm_chan_t *c, int from, uint64_t low)
{
    for (;; low++) {
        shm_slot_t *ls = slot_of(shm, c, low);
        if (atomic_load_explicit(&ls->mark, memory_order_acquire) != low + 1 ||
            atomic_load_explicit(&ls->state, memory_order_relaxed) != SLOT_CONSUMED)
            break;
    }
    shm->low[from] = low;
    atomic_store_explicit(&c->low, low, memory_order_release);
}

/* The receiver is done with message seq from local rank `from`: the oldest
 * one moves the low mark, another is marked consumed in its slot. */
static void retire(dl_shm_t *shm, shm_chan_t *c, int from, uint64_t seq, shm_slot_t *slot)
{
    if (seq == shm->low[from])
        advance_low(shm, c, from, seq + 1);
    else
        atomic_store_explicit(&slot->state, SLOT_CONSUMED, memory_order_release);
}

/* The oldest message on the channel from local rank `from` that matches
 * (ctx, tag), or NULL; *seq_p gets its sequence number. A message posted
 * before the last interrupt belongs to an operation that was aborted: it
 * is dropped on the way, so that it neither matches a later receive nor
 * holds its slot forever (the sender has forgotten it). Inline, as try_chan
 * is: every receive runs both, and their calls cost a message of a few
 * bytes 3% of its instructions. */
static inline __attribute__((always_inline)) shm_slot_t *
match(dl_shm_t *shm, int from, uint32_t ctx, int64_t tag, uint64_t *seq_p)
{
    shm_chan_t *c = chan(shm, from, shm->me);
    uint64_t low = shm->low[from];
    if (atomic_load_explicit(&slot_of(shm, c, low)->mark, memory_order_acquire) != low + 1)
        return NULL; /* nothing pending */
    /* Only once something arrives: an any-source receive looks at every
     * channel's first page, and should not fault in the rest of each. */
    if (!(shm->faulted[from] & FAULTED_IN)) {
        prefault_channel(shm, from, shm->me);
        shm->faulted[from] |= FAULTED_IN;
    }
    uint32_t gen = atomic_load_explicit(&shm->hdr->interrupts, memory_order_relaxed);
    bool dropped = false;
    /* Up to the first slot that does not hold the next message: the sender
     * has not posted it (one nslot past low never is). */
    for (uint64_t s = low;; s++) {
        shm_slot_t *slot = slot_of(shm, c, s);
        if (atomic_load_explicit(&slot->mark, memory_order_acquire) != s + 1)
            break;
        if (atomic_load_explicit(&slot->state, memory_order_relaxed) != SLOT_POSTED)
            continue; /* consumed out of order, or held */
        if ((int32_t)(slot->gen - gen) < 0) {
            retire(shm, c, from, s, slot);
            dropped = true;
            continue;
        }
        if (slot->ctx == ctx && slot->tag == tag) {
            *seq_p = s;
            return slot;
        }
    }
    if (dropped)
        ring(shm, from); /* a sender may wait for the slots */
    return NULL;
}

/* Consumes the oldest matching message on one channel through fn. */
static inline __attribute__((always_inline)) dl_status_t
try_chan(dl_shm_t *shm, int from, uint32_t ctx, int64_t tag, dl_shm_consume_fn fn, void *arg)
{
    uint64_t seq;
    shm_slot_t *slot = match(shm, from, ctx, tag, &seq);
    if (slot == NULL)
        return DL_ERR_AGAIN;
    bool far = slot->len == LEN_FAR;
    const void *src = far ? shm->base + slot->far.off : slot->data;
    if (far && slot->far.copied && !(shm->faulted[from] & BOUNCE_IN)) {
        prefault(bounce_area(shm, from, shm->me), BOUNCE_AREA, false);
        shm->faulted[from] |= BOUNCE_IN;
    }
    dl_status_t st = fn(arg, src, far ? slot->far.nbytes : slot->len);
    if (st != DL_OK)
        return st;
    retire(shm, chan(shm, from, shm->me), from, seq, slot);
    ring(shm, from);
    return DL_OK;
}

dl_status_t dl__shm_hold(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag, void **remote_p,
                         size_t *n_p, dl_shm_held_t *h_p)
{
    int from = shm->local_of[peer];
    uint64_t seq;
    shm_slot_t *slot = match(shm, from, ctx, tag, &seq);
    if (slot == NULL)
        return DL_ERR_AGAIN;
    if (slot->len != LEN_FAR || slot->far.copied)
        return DL_ERR_PROTOCOL; /* a copy: nothing to write back into */
    atomic_store_explicit(&slot->state, SLOT_HELD, memory_order_relaxed);
    *remote_p = shm->base + slot->far.off;
    *n_p = slot->far.nbytes;
    h_p->from = from;
    h_p->seq = seq;
    return DL_OK;
}

void dl__shm_release(dl_shm_t *shm, const dl_shm_held_t *h)
{
    shm_chan_t *c = chan(shm, h->from, shm->me);
    retire(shm, c, h->from, h->seq, slot_of(shm, c, h->seq));
    ring(shm, h->from);
}

dl_status_t dl__shm_try_recv(dl_shm_t *shm, int peer, uint32_t ctx, int64_t tag,
                             dl_shm_consume_fn fn, void *arg, int *src_p)
{
    if (peer >= 0) {
        int from = shm->local_of[peer];
        dl_status_t st = try_chan(shm, from, ctx, tag, fn, arg);
        if (st == DL_OK && src_p != NULL)
            *src_p = peer;
        return st;
    }
    for (int i = 0; i < shm->nlocal; i++) {
        int from = (shm->rr + i) % shm->nlocal;
        dl_status_t st = try_chan(shm, from, ctx, tag, fn, arg);
        if (st == DL_ERR_AGAIN)
            continue;
        if (st == DL_OK) {
            shm->rr = (from + 1) % shm->nlocal;
            if (src_p != NULL)
                *src_p = shm->hdr->world_ranks[from];
        }
        return st;
    }
    return DL_ERR_AGAIN;
}

/* ---- waiting ---- */

bool dl__shm_register_barrier(void)
{
    /* Registering again is one look at the process's flags. */
    long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    return cmds >= 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
           membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

void dl__shm_fence(dl_shm_t *shm, bool always)
{
    if (always || atomic_load(&shm->registered))
        return;
    if (!dl__shm_register_barrier()) {
        dl_log_debug("membarrier is not available: every shared-memory post runs a fence");
        return;
    }
    atomic_store(&shm->registered, true);
    atomic_store(&shm->ranks[shm->me].barrier, 1);
}

uint32_t dl__shm_arm(dl_shm_t *shm)
{
    shm_rank_t *rk = &shm->ranks[shm->me];
    atomic_fetch_add(&rk->sleepers, 1);
    atomic_thread_fence(memory_order_seq_cst); /* see ring */
    if (atomic_load_explicit(&rk->barrier, memory_order_relaxed) &&
        membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) {
        /* Peers ring without a fence from now on only where they read
         * the flag before this; their wake-ups may be missed meanwhile. */
        atomic_store(&rk->barrier, 0);
        shm->blind = true;
    }
    return atomic_load(&rk->doorbell);
}

void dl__shm_disarm(dl_shm_t *shm)
{
    atomic_fetch_sub(&shm->ranks[shm->me].sleepers, 1);
}

bool dl__shm_sleep(dl_shm_t *shm, uint32_t seen, int timeout_ms)
{
    shm_rank_t *rk = &shm->ranks[shm->me];
    if (shm->blind && timeout_ms > 1)
        timeout_ms = 1; /* see dl__shm_arm */
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    futex(&rk->doorbell, FUTEX_WAIT, seen, &ts);
    return atomic_load(&rk->doorbell) != seen;
}

void dl__shm_wake(dl_shm_t *shm)
{
    ring(shm, shm->me);
}

/* ---- failure ---- */

void dl__shm_abort(dl_shm_t *shm, int culprit, const char *why)
{
    uint32_t expected = 0;
    if (atomic_compare_exchange_strong(&shm->hdr->aborted, &expected, 2)) {
        shm->hdr->abort_rank = culprit;
        snprintf(shm->hdr->abort_why, sizeof(shm->hdr->abort_why), "%s", why);
        atomic_store(&shm->hdr->aborted, 1);
    }
    for (int i = 0; i < shm->nlocal; i++)
        ring(shm, i);
}

void dl__shm_interrupt(dl_shm_t *shm)
{
    atomic_fetch_add(&shm->hdr->interrupts, 1);
    for (int i = 0; i < shm->nlocal; i++)
        ring(shm, i);
}

const _Atomic uint32_t *dl__shm_interrupts(dl_shm_t *shm)
{
    return &shm->hdr->interrupts;
}

const _Atomic uint32_t *dl__shm_aborted_word(dl_shm_t *shm)
{
    return &shm->hdr->aborted;
}

bool dl__shm_aborted(dl_shm_t *shm, const char **why_p)
{
    uint32_t a = atomic_load(&shm->hdr->aborted);
    if (a == 0)
        return false;
    /* 2: the aborting rank (or thread) is writing its reason; it takes a
     * moment, and "aborted" alone would hide the reason. */
    for (int spins = 0; a == 2 && spins < 100000; spins++) {
        sched_yield();
        a = atomic_load(&shm->hdr->aborted);
    }
    if (why_p != NULL)
        *why_p = a == 1 ? shm->hdr->abort_why : "aborted";
    return true;
}

#define DEAD_LOOK_MAX 16 /* peers dl__shm_find_dead looks at a time */

static bool pid_gone(pid_t pid)
{
    if (pid <= 0)
        return false;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    /* A killed process stays a zombie until its parent reaps it. */
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren != NULL && (paren[2] == 'Z' || paren[2] == 'X');
}

int dl__shm_find_dead(dl_shm_t *shm)
{
    /* A look at a peer is a kill(0) and a read of its /proc stat; every
     * waiting rank of a host looking at every peer made that nlocal² a
     * period (6% of a 128-rank job's CPU). So a look covers DEAD_LOOK_MAX
     * peers, the next ones the next time round: any rank that waits still
     * finds a dead peer within (nlocal - 1) / DEAD_LOOK_MAX periods,
     * rounded up, and the first to find it takes the world down for all. */
    int n = shm->nlocal - 1, i = shm->dead_next;
    for (int k = 0; k < n && k < DEAD_LOOK_MAX; k++, i++) {
        int peer = (shm->me + 1 + i % n) % shm->nlocal;
        if (!atomic_load(&shm->ranks[peer].left) && pid_gone(shm->ranks[peer].pid)) {
            shm->dead_next = i % n;
            return shm->hdr->world_ranks[peer];
        }
    }
    shm->dead_next = n > 0 ? i % n : 0;
    return -1;
}
