/* The communicator API on real rank processes: point to point with tags and
 * any source, async work, groups, uneven all_to_all, staging of tensors that
 * live outside the shared arena, and the failure paths (bad arguments, a
 * dead peer, a timeout, a size mismatch). */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/bind.h"
#include "distlab/comm.h"
#include "world.h"

static dl_tensor_t *vec(dl_comm_t *comm, dl_dtype_t dt, size_t n, double start)
{
    dl_tensor_t *t = NULL;
    if (dl_tensor_new_1d(dt, n, comm != NULL ? dl_comm_allocator(comm) : NULL, &t) != DL_OK)
        return NULL;
    dl_tensor_arange(t, start, 1);
    return t;
}

static double at(const dl_tensor_t *t, size_t i)
{
    return dl_dtype_get(t->dtype, t->data, i);
}

/* Whether this run's ranks talk over TCP (unit_comm_over_tcp), not shared
 * memory. */
static bool transport_is_tcp(void)
{
    const char *transport = getenv("DISTLAB_TRANSPORT");
    return transport != NULL && strcmp(transport, "tcp") == 0;
}

/* ---- point to point ---- */

static int p2p_tags(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm);
    dl_tensor_t *a = vec(comm, DL_INT32, 3, me * 10), *b = vec(comm, DL_INT32, 3, me * 10 + 5);
    if (me == 0) {
        dl_work_t *w1 = NULL, *w2 = NULL;
        RANK_CHECK(dl_comm_isend(comm, a, 1, 7, &w1) == DL_OK);
        RANK_CHECK(dl_comm_isend(comm, b, 1, 8, &w2) == DL_OK);
        RANK_CHECK(dl_work_wait(w2, -1) == DL_OK);
        RANK_CHECK(dl_work_wait(w1, -1) == DL_OK);
        dl_work_free(w1);
        dl_work_free(w2);
    } else if (me == 1) {
        /* Tag 8 first: matching is by tag, not by arrival. */
        int src = -1;
        RANK_CHECK(dl_comm_recv(comm, b, 0, 8, &src) == DL_OK && src == 0);
        RANK_CHECK(at(b, 0) == 5 && at(b, 2) == 7);
        RANK_CHECK(dl_comm_recv(comm, a, DL_ANY_SOURCE, 7, &src) == DL_OK && src == 0);
        RANK_CHECK(at(a, 0) == 0 && at(a, 2) == 2);
    }
    dl_tensor_free(a);
    dl_tensor_free(b);
    return 0;
}

static void test_p2p_tags(void **state)
{
    (void)state;
    assert_int_equal(world_run(2, p2p_tags, NULL, 30), 0);
}

static int any_source(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    /* A tensor from the heap, not the arena: staged by the send. */
    dl_tensor_t *t = vec(NULL, DL_INT64, 2, me * 100);
    if (me != 0) {
        RANK_CHECK(dl_comm_send(comm, t, 0, 0) == DL_OK);
    } else {
        int seen = 0;
        for (int i = 1; i < n; i++) {
            int src = -1;
            RANK_CHECK(dl_comm_recv(comm, t, DL_ANY_SOURCE, 0, &src) == DL_OK);
            RANK_CHECK(src >= 1 && src < n && at(t, 0) == src * 100 && at(t, 1) == src * 100 + 1);
            seen |= 1 << src;
        }
        RANK_CHECK(seen == (1 << n) - 2);
    }
    dl_tensor_free(t);
    return 0;
}

static void test_any_source(void **state)
{
    (void)state;
    assert_int_equal(world_run(5, any_source, NULL, 30), 0);
}

/* Many outstanding isends and irecvs with one tag still match in order. */
static int p2p_order(dl_comm_t *comm, void *arg)
{
    (void)arg;
    enum { N = 2000 }; /* far more than a channel holds, so sends wait for slots */
    int me = dl_comm_rank(comm);
    dl_tensor_t *t[N];
    dl_work_t *w[N];
    for (int i = 0; i < N; i++) {
        /* Some messages are large, so zero-copy and eager ones mix. */
        t[i] = vec(comm, DL_INT64, i % 50 == 0 ? 1000 : 1, me == 0 ? i : -1);
        RANK_CHECK(me == 0 ? dl_comm_isend(comm, t[i], 1, 5, &w[i]) == DL_OK
                           : dl_comm_irecv(comm, t[i], 0, 5, &w[i]) == DL_OK);
    }
    for (int i = 0; i < N; i++) {
        RANK_CHECK(dl_work_wait(w[i], -1) == DL_OK);
        RANK_CHECK(at(t[i], 0) == i);
        dl_work_free(w[i]);
        dl_tensor_free(t[i]);
    }
    return 0;
}

static void test_p2p_order(void **state)
{
    (void)state;
    assert_int_equal(world_run(2, p2p_order, NULL, 60), 0);
}

/* A rank that finished and left is not a dead peer. */
static int left_peer(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm);
    dl_tensor_t *t = vec(comm, DL_INT32, 2, me);
    if (me == 1)
        RANK_CHECK(dl_comm_send(comm, t, 0, 0) == DL_OK);
    else if (me == 2) {
        usleep(600 * 1000);
        RANK_CHECK(dl_comm_send(comm, t, 0, 0) == DL_OK);
    } else {
        RANK_CHECK(dl_comm_recv(comm, t, 1, 0, NULL) == DL_OK);
        RANK_CHECK(dl_comm_recv(comm, t, 2, 0, NULL) == DL_OK && at(t, 0) == 2);
    }
    dl_tensor_free(t);
    return 0;
}

static void test_left_peer(void **state)
{
    (void)state;
    assert_int_equal(world_run(3, left_peer, NULL, 30), 0);
}

/* A send too large for a descriptor but of at most 8 KiB. With
 * DISTLAB_SHM_COPY=on it is copied when posted: it completes at once, and
 * its tensor may be written before the receiver has read it. With off it
 * is read in place, and completes only once received. */
static void shm_copy_setup(int rank, void *arg)
{
    (void)rank;
    setenv("DISTLAB_SHM_COPY", (const char *)arg, 1);
    /* A small arena: the copies must not take room from tensors. */
    setenv("DISTLAB_ARENA_MB", "2", 1);
}

static int medium_sends(dl_comm_t *comm, void *arg)
{
    /* Over TCP (unit_comm_over_tcp) the choice does not apply: only the
     * values are checked. */
    bool shm = !transport_is_tcp();
    bool copy = shm && strcmp((const char *)arg, "on") == 0;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    dl_tensor_t *t = vec(comm, DL_INT64, 512, me == 0 ? 7 : -1); /* 4 KiB */
    dl_tensor_t *go = vec(comm, DL_INT32, 1, 0);
    if (me == 0) {
        dl_work_t *w = NULL;
        RANK_CHECK(dl_comm_isend(comm, t, 1, 0, &w) == DL_OK);
        RANK_CHECK(!shm || dl_work_test(w) == copy);
        if (copy)
            dl_tensor_fill(t, 1000);
        RANK_CHECK(dl_comm_send(comm, go, 1, 1) == DL_OK);
        RANK_CHECK(dl_work_wait(w, -1) == DL_OK);
        dl_work_free(w);
    } else if (me == 1) {
        RANK_CHECK(dl_comm_recv(comm, go, 0, 1, NULL) == DL_OK);
        RANK_CHECK(dl_comm_recv(comm, t, 0, 0, NULL) == DL_OK);
        for (size_t i = 0; i < 512; i++)
            RANK_CHECK(at(t, i) == 7 + (double)i);
    }
    /* Collectives of medium messages, more of them than a pair of ranks
     * has bounce buffers, so that every bounce buffer is used again. */
    dl_tensor_t *b = vec(comm, DL_INT64, 1024, 0);             /* 8 KiB */
    dl_tensor_t *in = vec(comm, DL_INT64, 256 * (size_t)n, 0); /* 2 KiB to each rank */
    dl_tensor_t *out = vec(comm, DL_INT64, 256 * (size_t)n, 0);
    for (int it = 0; it < 40; it++) {
        dl_tensor_arange(b, me == it % n ? it : -1, 1);
        RANK_CHECK(dl_comm_broadcast(comm, b, it % n, NULL, NULL) == DL_OK);
        RANK_CHECK(at(b, 0) == it && at(b, 1023) == it + 1023);
        dl_tensor_arange(in, 1000 * me + it, 1);
        RANK_CHECK(dl_comm_all_to_all(comm, out, in, NULL, NULL, NULL, NULL) == DL_OK);
        for (int src = 0; src < n; src++)
            RANK_CHECK(at(out, 256 * (size_t)src) == 1000 * src + it + 256 * me &&
                       at(out, 256 * (size_t)src + 255) == 1000 * src + it + 256 * me + 255);
    }
    dl_tensor_free(b);
    dl_tensor_free(in);
    dl_tensor_free(out);
    dl_tensor_free(go);
    dl_tensor_free(t);
    /* After copies to every peer, the arena still holds a tensor of most
     * of its size. */
    dl_tensor_t *big = vec(comm, DL_INT8, (size_t)3 << 19, 0); /* 1.5 MiB of 2 */
    RANK_CHECK(big != NULL);
    dl_tensor_free(big);
    return 0;
}

/* More medium isends than a pair of ranks has bounce buffers (32), before
 * the receiver reads any: the first 32 complete when posted; the next wait
 * for a buffer, though their slots are free, and go out as the receiver
 * frees buffers. Every message arrives whole and in order. (A barrier holds
 * the receiver back: a send would queue behind the waiting isends.) */
static int bounce_reuse(dl_comm_t *comm, void *arg)
{
    (void)arg;
    bool shm = !transport_is_tcp();
    enum { N = 80, LEN = 512 }; /* 4 KiB each */
    int me = dl_comm_rank(comm);
    dl_tensor_t *t[N];
    dl_work_t *w[N];
    for (int i = 0; i < N; i++) {
        t[i] = vec(comm, DL_INT64, LEN, me == 0 ? 1000 * i : -1);
        RANK_CHECK(t[i] != NULL);
    }
    if (me == 0) {
        for (int i = 0; i < N; i++) {
            RANK_CHECK(dl_comm_isend(comm, t[i], 1, 3, &w[i]) == DL_OK);
            RANK_CHECK(!shm || dl_work_test(w[i]) == (i < 32));
        }
    }
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    if (me == 1) {
        for (int i = 0; i < N; i++)
            RANK_CHECK(dl_comm_irecv(comm, t[i], 0, 3, &w[i]) == DL_OK);
    }
    for (int i = 0; i < N; i++) {
        RANK_CHECK(dl_work_wait(w[i], -1) == DL_OK);
        RANK_CHECK(at(t[i], 0) == 1000 * i && at(t[i], LEN - 1) == 1000 * i + LEN - 1);
        dl_work_free(w[i]);
        dl_tensor_free(t[i]);
    }
    return 0;
}

static void test_shm_copy(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(2, shm_copy_setup, medium_sends, "off", 60), 0);
    assert_int_equal(world_run_setup(2, shm_copy_setup, medium_sends, "on", 60), 0);
    assert_int_equal(world_run_setup(4, shm_copy_setup, medium_sends, "on", 60), 0);
    assert_int_equal(world_run_setup(2, shm_copy_setup, bounce_reuse, "on", 60), 0);
}

/* DISTLAB_SHM_FENCE: a post orders its message with a fence, or (auto,
 * where the kernel has membarrier) the rank about to sleep runs the
 * barrier that stands in for it. Either way a sleeping rank gets what is
 * sent to it: here the root is late each time, by more than a wait spins,
 * so that the others arm and sleep; then a full channel makes the root
 * sleep until a receiver frees a slot. "mixed": rank 0 fences, the others
 * do not, as where one rank's registration failed. A wake-up missed would
 * show as delay only (a sleep ends at the next liveness check, 100 ms
 * later), which this test does not time: the results and the run's end
 * are what it checks. */
static void shm_fence_setup(int rank, void *arg)
{
    const char *mode = arg;
    if (strcmp(mode, "mixed") == 0)
        mode = rank == 0 ? "always" : "auto";
    setenv("DISTLAB_SHM_FENCE", mode, 1);
}

static int late_root(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm);
    dl_tensor_t *t = vec(comm, DL_INT64, 3, 0);
    for (int i = 1; i <= 8; i++) {
        if (me == 0) {
            usleep(5000);
            dl_tensor_fill(t, i);
        }
        RANK_CHECK(dl_comm_broadcast(comm, t, 0, NULL, NULL) == DL_OK);
        RANK_CHECK(at(t, 0) == i && at(t, 2) == i);
    }
    /* More sends than a channel has slots, to a receiver that is late. */
    for (int i = 0; i < 300; i++) {
        if (me == 0) {
            dl_tensor_fill(t, i);
            RANK_CHECK(dl_comm_send(comm, t, 1, 0) == DL_OK);
        } else if (me == 1) {
            if (i == 0)
                usleep(5000);
            RANK_CHECK(dl_comm_recv(comm, t, 0, 0, NULL) == DL_OK);
            RANK_CHECK(at(t, 1) == i);
        }
    }
    dl_tensor_free(t);
    return 0;
}

static void test_shm_fence(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(3, shm_fence_setup, late_root, "auto", 60), 0);
    assert_int_equal(world_run_setup(3, shm_fence_setup, late_root, "always", 60), 0);
    assert_int_equal(world_run_setup(3, shm_fence_setup, late_root, "mixed", 60), 0);
}

/* DISTLAB_BIND: a bound rank runs on one CPU of those its process could
 * use before it joined: the rank-th where the ranks fit them, else the
 * (rank * CPUs / ranks)-th (blocks of consecutive ranks); an unbound one
 * keeps them all. auto binds where the ranks (and over TCP their I/O
 * threads) fit the CPUs, or split evenly over them. */
static cpu_set_t bind_before;

static void bind_setup(int rank, void *arg)
{
    (void)rank;
    setenv("DISTLAB_BIND", (const char *)arg, 1);
    sched_getaffinity(0, sizeof(bind_before), &bind_before);
}

static int nth_cpu(const cpu_set_t *set, int n)
{
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, set) && n-- == 0)
            return cpu;
    return -1;
}

static int bound_as_asked(dl_comm_t *comm, void *arg)
{
    const char *choice = arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    int cpus = CPU_COUNT(&bind_before);
    int threads = n * (transport_is_tcp() ? 2 : 1);
    bool fits = threads <= cpus || n % cpus == 0;
    bool bound = cpus > 1 && (strcmp(choice, "core") == 0 || (strcmp(choice, "auto") == 0 && fits));
    int place = n <= cpus ? me : me * cpus / n;
    cpu_set_t now;
    RANK_CHECK(sched_getaffinity(0, sizeof(now), &now) == 0);
    if (bound)
        RANK_CHECK(CPU_COUNT(&now) == 1 && CPU_ISSET(nth_cpu(&bind_before, place), &now));
    else
        RANK_CHECK(CPU_EQUAL(&now, &bind_before));
    dl_tensor_t *t = vec(comm, DL_INT64, 4, me);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(t, 3) == 3 * n + n * (n - 1) / 2);
    dl_tensor_free(t);
    return 0;
}

static void test_bind(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(2, bind_setup, bound_as_asked, "core", 60), 0);
    assert_int_equal(world_run_setup(3, bind_setup, bound_as_asked, "core", 60), 0);
    assert_int_equal(world_run_setup(2, bind_setup, bound_as_asked, "none", 60), 0);
    assert_int_equal(world_run_setup(2, bind_setup, bound_as_asked, "auto", 60), 0);
    /* More ranks than CPUs: auto binds them two a CPU, and leaves an
     * uneven split unbound. */
    int cpus = dl__bind_cpus();
    if (cpus > 1 && cpus <= 4) {
        assert_int_equal(world_run_setup(cpus + 1, bind_setup, bound_as_asked, "auto", 60), 0);
        assert_int_equal(world_run_setup(2 * cpus, bind_setup, bound_as_asked, "auto", 60), 0);
    }
}

/* A binding is undone: the thread gets back every CPU it had. */
static void test_bind_undo(void **state)
{
    (void)state;
    cpu_set_t before, during, after;
    assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
    dl_bind_t b;
    bool bound = dl__bind_core(&b, 1);
    assert_int_equal(sched_getaffinity(0, sizeof(during), &during), 0);
    if (CPU_COUNT(&before) > 1) {
        assert_true(bound);
        assert_int_equal(CPU_COUNT(&during), 1);
        assert_true(CPU_ISSET(nth_cpu(&before, 1), &during));
    } else {
        assert_false(bound);
    }
    dl__bind_undo(&b);
    assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
    assert_true(CPU_EQUAL(&after, &before));
}

/* Ranks that are done at once: the store's host must not leave early. */
static int quick(dl_comm_t *comm, void *arg)
{
    (void)comm;
    (void)arg;
    return 0;
}

static void test_quick_worlds(void **state)
{
    (void)state;
    for (int i = 0; i < 10; i++)
        assert_int_equal(world_run(8, quick, NULL, 30), 0);
}

/* ---- step hooks ---- */

typedef struct {
    int before, after; /* calls with done false, true */
    int bad;           /* calls out of order: an after with no before */
} hook_count_t;

static int count_hook(void *arg, const dl_step_info_t *in)
{
    hook_count_t *h = arg;
    if (in->done)
        h->bad += h->after++ >= h->before;
    else
        h->before++;
    return 0;
}

/* A step hook is called before and after every step; a quick one (which
 * only learns where the rank is) before every step only. */
static int hook_calls(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int n = dl_comm_size(comm);
    dl_tensor_t *t = vec(comm, DL_FLOAT32, 64, 1);
    RANK_CHECK(t != NULL);
    dl_coll_opts_t o = {.algo = "ring"}; /* 2(n-1) steps */
    for (int quick = 0; quick < 2; quick++) {
        hook_count_t h = {0};
        if (quick)
            dl_comm_set_quick_step_hook(comm, count_hook, &h);
        else
            dl_comm_set_step_hook(comm, count_hook, &h);
        for (int i = 0; i < 3; i++)
            RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, &o, NULL) == DL_OK);
        dl_comm_set_step_hook(comm, NULL, NULL);
        RANK_CHECK(h.before == 3 * 2 * (n - 1));
        RANK_CHECK(h.after == (quick ? 0 : h.before));
        RANK_CHECK(h.bad == 0);
    }
    dl_tensor_free(t);
    return 0;
}

static void test_hook_calls(void **state)
{
    (void)state;
    assert_int_equal(world_run(3, hook_calls, NULL, 60), 0);
}

/* ---- a collective called again ---- */

/* A collective called again as before runs the executor it left prepared
 * (core/backend/builtin.c, "a collective kept prepared"). Each call must
 * still read its buffers afresh, and a call that differs in anything (a
 * buffer, a tensor of a list, the algorithm, the hook, the communicator)
 * must run what it asks for. */
static int repeat_calls(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    double ranks = n * (n - 1) / 2.0;
    dl_tensor_t *a = vec(comm, DL_FLOAT32, 8, 0), *b = vec(comm, DL_FLOAT32, 8, 0);
    RANK_CHECK(a != NULL && b != NULL);
    for (int k = 0; k < 3; k++) {
        dl_tensor_fill(a, me + 10 * k);
        RANK_CHECK(dl_comm_all_reduce(comm, a, DL_OP_SUM, NULL, NULL) == DL_OK);
        RANK_CHECK(at(a, 0) == ranks + 10.0 * k * n && at(a, 7) == at(a, 0));
    }
    dl_tensor_fill(a, 1);
    dl_tensor_fill(b, me);
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(b, 0) == ranks && at(a, 0) == 1); /* b's call, not a's */
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_MAX, NULL, NULL) == DL_OK);
    RANK_CHECK(at(b, 3) == ranks); /* the max of equal values: another op, run */

    /* A tensor outside the arena goes through a copy on every call. */
    dl_tensor_t *heap = vec(NULL, DL_FLOAT32, 8, 0);
    for (int k = 0; k < 2; k++) {
        dl_tensor_fill(heap, me + k);
        RANK_CHECK(dl_comm_all_reduce(comm, heap, DL_OP_SUM, NULL, NULL) == DL_OK);
        RANK_CHECK(at(heap, 0) == ranks + (double)k * n);
    }
    dl_tensor_free(heap);

    /* Another algorithm, chosen by option or for the communicator. */
    dl_coll_opts_t ring = {.algo = "ring"};
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, &ring, NULL) == DL_OK);
    RANK_CHECK(strcmp(dl_comm_last_algo(comm), "ring") == 0 && at(b, 0) == ranks * n);
    RANK_CHECK(dl_comm_set_algo(comm, DL_COLL_ALL_REDUCE, "direct") == DL_OK);
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(strcmp(dl_comm_last_algo(comm), "direct") == 0 && at(b, 0) == ranks * n * n);
    RANK_CHECK(dl_comm_set_algo(comm, DL_COLL_ALL_REDUCE, NULL) == DL_OK);

    /* A hook set between two calls alike sees the second. */
    hook_count_t h = {0};
    dl_tensor_fill(b, 1);
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    dl_comm_set_quick_step_hook(comm, count_hook, &h);
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    dl_comm_set_step_hook(comm, NULL, NULL);
    RANK_CHECK(h.before > 0 && at(b, 0) == (double)n * n);
    int seen = h.before;
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(h.before == seen); /* and one taken away is not called */

    /* A root's tensor list, its tensors apart (not one buffer) and each
     * sent as it lies (direct: one message a tensor): the same tensors
     * again, then one replaced. */
    dl_coll_opts_t direct = {.algo = "direct"};
    dl_tensor_t *list[4], *gap[4], *other = vec(comm, DL_INT64, 2, 0),
                                   *out = vec(comm, DL_INT64, 2, 0);
    for (int i = 0; i < n; i++) {
        list[i] = vec(comm, DL_INT64, 2, 100 * i);
        gap[i] = vec(comm, DL_INT64, 16, 0);
    }
    for (int k = 0; k < 2; k++) {
        if (me == 0)
            dl_tensor_arange(list[1], 100 + k, 1);
        RANK_CHECK(dl_comm_scatter(comm, out, me == 0 ? list : NULL, 0, &direct, NULL) == DL_OK);
        RANK_CHECK(at(out, 0) == 100 * me + (me == 1 ? k : 0));
    }
    dl_tensor_arange(other, -5, 1);
    dl_tensor_t *swapped[4] = {list[0], other, list[2], list[3]};
    RANK_CHECK(dl_comm_scatter(comm, out, me == 0 ? swapped : NULL, 0, &direct, NULL) == DL_OK);
    RANK_CHECK(at(out, 0) == (me == 1 ? -5 : 100 * me) && at(out, 1) == at(out, 0) + 1);

    /* The same call on a group of the same size: ranks in another order. */
    int reversed[] = {3, 2, 1, 0};
    dl_comm_t *rev = NULL;
    RANK_CHECK(dl_comm_new_group(comm, reversed, 4, &rev) == DL_OK);
    for (int k = 0; k < 2; k++) {
        dl_tensor_fill(b, me);
        RANK_CHECK(dl_comm_broadcast(k == 0 ? comm : rev, b, 0, NULL, NULL) == DL_OK);
        RANK_CHECK(at(b, 0) == (k == 0 ? 0 : 3));
    }
    dl_comm_destroy(rev);

    /* The same tensor on a group, then the world again once the group,
     * which ran last, is gone. */
    int evens[] = {0, 2}, odds[] = {1, 3};
    dl_comm_t *ge = NULL, *go = NULL;
    RANK_CHECK(dl_comm_new_group(comm, evens, 2, &ge) == DL_OK);
    RANK_CHECK(dl_comm_new_group(comm, odds, 2, &go) == DL_OK);
    dl_comm_t *g = me % 2 == 0 ? ge : go;
    dl_tensor_fill(b, me);
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    dl_tensor_fill(b, me);
    RANK_CHECK(dl_comm_all_reduce(g, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(b, 0) == (me % 2 == 0 ? 0 + 2 : 1 + 3));
    dl_comm_destroy(ge);
    dl_comm_destroy(go);
    dl_tensor_fill(b, me);
    RANK_CHECK(dl_comm_all_reduce(comm, b, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(b, 0) == ranks);

    for (int i = 0; i < n; i++) {
        dl_tensor_free(list[i]);
        dl_tensor_free(gap[i]);
    }
    dl_tensor_free(other);
    dl_tensor_free(out);
    dl_tensor_free(a);
    dl_tensor_free(b);
    return 0;
}

static void test_repeat_calls(void **state)
{
    (void)state;
    assert_int_equal(world_run(4, repeat_calls, NULL, 60), 0);
}

/* ---- async collectives and groups ---- */

static int async_colls(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    dl_tensor_t *a = vec(comm, DL_FLOAT32, 1000, me), *b = vec(comm, DL_INT64, 4, me * 4);
    dl_coll_opts_t o = {.async = true};
    dl_work_t *wa = NULL, *wb = NULL;
    RANK_CHECK(dl_comm_all_reduce(comm, a, DL_OP_SUM, &o, &wa) == DL_OK);
    RANK_CHECK(dl_comm_broadcast(comm, b, n - 1, &o, &wb) == DL_OK);
    while (!dl_work_test(wb))
        ;
    RANK_CHECK(dl_work_status(wb) == DL_OK);
    RANK_CHECK(dl_work_wait(wa, -1) == DL_OK);
    for (size_t i = 0; i < 1000; i++)
        RANK_CHECK(at(a, i) == (double)(n * (n - 1) / 2) + (double)(n * i));
    for (size_t i = 0; i < 4; i++)
        RANK_CHECK(at(b, i) == (double)((n - 1) * 4 + (int)i));
    dl_work_free(wa);
    dl_work_free(wb);
    dl_tensor_free(a);
    dl_tensor_free(b);
    return 0;
}

static void test_async_colls(void **state)
{
    (void)state;
    assert_int_equal(world_run(3, async_colls, NULL, 30), 0);
}

static int groups(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm);
    int even[] = {0, 2}, odd[] = {3, 1};
    dl_comm_t *ge = NULL, *go = NULL;
    RANK_CHECK(dl_comm_new_group(comm, even, 2, &ge) == DL_OK);
    RANK_CHECK(dl_comm_new_group(comm, odd, 2, &go) == DL_OK);
    dl_comm_t *g = me % 2 == 0 ? ge : go;
    RANK_CHECK((me % 2 == 0 ? go : ge) == NULL);
    /* Ranks are numbered within the group, in the order given. */
    int want_rank = me == 0 ? 0 : me == 2 ? 1 : me == 3 ? 0 : 1;
    RANK_CHECK(dl_comm_rank(g) == want_rank && dl_comm_size(g) == 2);
    dl_tensor_t *t = vec(comm, DL_INT32, 2, me);
    RANK_CHECK(dl_comm_all_reduce(g, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    double want = me % 2 == 0 ? 0 + 2 : 1 + 3;
    RANK_CHECK(at(t, 0) == want && at(t, 1) == want + 2);
    /* The world still works alongside the groups. */
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    dl_tensor_free(t);
    dl_comm_destroy(ge);
    dl_comm_destroy(go);
    return 0;
}

static void test_groups(void **state)
{
    (void)state;
    assert_int_equal(world_run(4, groups, NULL, 30), 0);
}

/* ---- all_to_all with uneven splits ---- */

static size_t split(int from, int to)
{
    return (size_t)((from + 2 * to) % 3);
}

static int uneven_all_to_all(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    size_t in_splits[8], out_splits[8], nin = 0, nout = 0;
    for (int j = 0; j < n; j++) {
        in_splits[j] = split(me, j);
        out_splits[j] = split(j, me);
        nin += in_splits[j];
        nout += out_splits[j];
    }
    dl_tensor_t *in = vec(comm, DL_INT64, nin, 0), *out = vec(comm, DL_INT64, nout, 0);
    /* Element k of the chunk for rank j encodes (me, j, k). */
    size_t pos = 0;
    for (int j = 0; j < n; j++)
        for (size_t k = 0; k < in_splits[j]; k++)
            dl_dtype_set(DL_INT64, in->data, pos++, me * 10000 + j * 100 + (double)k);
    /* Sizes whose sum wraps round to the tensor's size are refused here,
     * before anything is sent (SIZE_MAX + in[j1] + in[j0] + 1 is their sum). */
    size_t bad[8];
    memcpy(bad, in_splits, sizeof(bad));
    int j0 = (me + 1) % n, j1 = (me + 2) % n;
    bad[j0] = SIZE_MAX;
    bad[j1] = in_splits[j0] + in_splits[j1] + 1;
    RANK_CHECK(dl_comm_all_to_all(comm, out, in, out_splits, bad, NULL, NULL) == DL_ERR_INVALID);
    RANK_CHECK(dl_comm_all_to_all(comm, out, in, out_splits, in_splits, NULL, NULL) == DL_OK);
    pos = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < out_splits[i]; k++)
            RANK_CHECK(at(out, pos++) == i * 10000 + me * 100 + (double)k);
    dl_tensor_free(in);
    dl_tensor_free(out);
    return 0;
}

static void test_uneven_all_to_all(void **state)
{
    (void)state;
    assert_int_equal(world_run(4, uneven_all_to_all, NULL, 30), 0);
}

/* ---- tensor lists and heap tensors (staged through the arena) ---- */

static int lists(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    dl_tensor_t *t = vec(NULL, DL_FLOAT64, 3, me * 3), *list[4],
                *big = vec(NULL, DL_FLOAT64, 12, 0);
    for (int i = 0; i < n; i++)
        list[i] = vec(NULL, DL_FLOAT64, 3, -1);
    RANK_CHECK(dl_comm_all_gather(comm, list, t, NULL, NULL) == DL_OK);
    for (int i = 0; i < n; i++)
        RANK_CHECK(at(list[i], 0) == i * 3 && at(list[i], 2) == i * 3 + 2);
    RANK_CHECK(dl_comm_all_gather_into(comm, big, t, NULL, NULL) == DL_OK);
    for (size_t i = 0; i < 12; i++)
        RANK_CHECK(at(big, i) == (double)i);
    dl_tensor_t *out = vec(NULL, DL_FLOAT64, 3, 0);
    RANK_CHECK(dl_comm_reduce_scatter(comm, out, big, DL_OP_MAX, NULL, NULL) == DL_OK);
    RANK_CHECK(at(out, 0) == me * 3 && at(out, 2) == me * 3 + 2);
    RANK_CHECK(dl_comm_gather(comm, t, me == 1 ? list : NULL, 1, NULL, NULL) == DL_OK);
    RANK_CHECK(dl_comm_scatter(comm, out, me == 2 ? list : NULL, 2, NULL, NULL) == DL_OK);
    RANK_CHECK(at(out, 0) == me * 3);
    for (int i = 0; i < n; i++)
        dl_tensor_free(list[i]);
    dl_tensor_free(t);
    dl_tensor_free(big);
    dl_tensor_free(out);
    return 0;
}

static void test_lists(void **state)
{
    (void)state;
    assert_int_equal(world_run(4, lists, NULL, 30), 0);
}

/* ---- tensor lists used where they lie ----
 *
 * The root of a gather or scatter, and every rank of an all_gather, reads
 * and writes its list's tensors in place (core/backend/builtin.c,
 * list_buf): tensors of their own in the arena or on the heap, views of
 * one tensor in order (one buffer) or out of order, and a list that
 * overlaps the call's other tensor (then copied, as before). The tree's
 * root receives a subtree's blocks in one message across two tensors
 * (gather) and sends them so (scatter, which copies the list); with root 1
 * the subtrees wrap past the last rank. A step hook reads the root's
 * gathered list as one buffer after the last step. */

enum { L_ARENA, L_HEAP, L_VIEWS, L_REVERSED, L_ALIAS, L__COUNT };

typedef struct {
    int gathers_seen; /* the root's gathers whose last step the hook read */
    int bad;          /* elements the hook read wrong */
    size_t count;
} list_hook_t;

static list_hook_t list_hook;

static int read_list_hook(void *arg, const dl_step_info_t *in)
{
    list_hook_t *h = arg;
    const dl_sched_t *s = in->s;
    if (!in->done || in->step + 1 != s->n_steps || s->args.coll != DL_COLL_GATHER ||
        in->rank != s->args.root)
        return 0;
    size_t n = dl_sched_buf_count(s, in->rank, DL_BUF_OUT);
    int64_t *got = malloc(n * in->esz);
    if (got == NULL || dl_step_info_read(in, DL_BUF_OUT, n, got) != DL_OK) {
        h->bad++;
    } else {
        for (size_t i = 0; i < n; i++)
            h->bad += got[i] != (int64_t)((i / h->count) * 1000000 + i % h->count);
    }
    free(got);
    h->gathers_seen++;
    return 0;
}

/* A list of n tensors of count int64 elements, as kind makes it; *whole_p
 * holds the views' storage. other is the tensor an L_ALIAS list shares
 * (at index alias). */
static int make_list(dl_comm_t *comm, int kind, int n, size_t count, dl_tensor_t *other, int alias,
                     dl_tensor_t **list, dl_tensor_t *views, dl_tensor_t **whole_p)
{
    *whole_p = NULL;
    if (kind == L_VIEWS || kind == L_REVERSED) {
        if ((*whole_p = vec(comm, DL_INT64, count * (size_t)n, -1)) == NULL)
            return 1;
        for (int i = 0; i < n; i++) {
            int at = kind == L_VIEWS ? i : n - 1 - i;
            views[i] = **whole_p;
            views[i].shape[0] = (int64_t)count;
            views[i].numel = count;
            views[i].data = (int64_t *)(*whole_p)->data + (size_t)at * count;
            views[i].alloc = NULL;
            list[i] = &views[i];
        }
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (kind == L_ALIAS && i == alias)
            list[i] = other;
        else if ((list[i] = vec(kind == L_HEAP ? NULL : comm, DL_INT64, count, -1)) == NULL)
            return 1;
    }
    return 0;
}

static void free_list(int kind, int n, dl_tensor_t **list, dl_tensor_t *other, dl_tensor_t *whole)
{
    if (whole != NULL) {
        dl_tensor_free(whole);
        return;
    }
    (void)kind;
    for (int i = 0; i < n; i++)
        if (list[i] != other)
            dl_tensor_free(list[i]);
}

/* The element k of rank j's block. */
#define BLOCK_AT(j, k) ((double)(j)*1000000 + (double)(k))

static int lists_in_place(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    const char *algos[] = {NULL, "tree", "direct"};
    const size_t counts[] = {5, 100000};
    int roots_gathered = 0;
    list_hook = (list_hook_t){0};
    dl_comm_set_step_hook(comm, read_list_hook, &list_hook);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t count = counts[c];
        list_hook.count = count;
        for (int kind = 0; kind < L__COUNT; kind++) {
            for (int root = 0; root < 2; root++) {
                for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
                    dl_coll_opts_t o = {.algo = algos[a]};
                    dl_tensor_t *list[16], views[16], *whole = NULL;
                    int alias = (root + 1) % n;
                    /* gather: rank j's block is BLOCK_AT(j, k). */
                    dl_tensor_t *t = vec(comm, DL_INT64, count, BLOCK_AT(me, 0));
                    RANK_CHECK(t != NULL);
                    if (me == root) {
                        RANK_CHECK(make_list(comm, kind, n, count, t, alias, list, views, &whole) ==
                                   0);
                        roots_gathered++;
                    }
                    RANK_CHECK(dl_comm_gather(comm, t, me == root ? list : NULL, root, &o, NULL) ==
                               DL_OK);
                    if (me == root) {
                        for (int j = 0; j < n; j++)
                            for (size_t k = 0; k < count; k += count / 5)
                                RANK_CHECK(at(list[j], k) == BLOCK_AT(j, k));
                        free_list(kind, n, list, t, whole);
                    }
                    /* scatter: rank j gets the root's list[j]. */
                    dl_tensor_t *out = vec(comm, DL_INT64, count, -1);
                    RANK_CHECK(out != NULL);
                    if (me == root) {
                        RANK_CHECK(
                            make_list(comm, kind, n, count, out, alias, list, views, &whole) == 0);
                        for (int j = 0; j < n; j++)
                            dl_tensor_arange(list[j], BLOCK_AT(j, 0), 1);
                    }
                    RANK_CHECK(dl_comm_scatter(comm, out, me == root ? list : NULL, root, &o,
                                               NULL) == DL_OK);
                    for (size_t k = 0; k < count; k += count / 5)
                        RANK_CHECK(at(out, k) == BLOCK_AT(me, k));
                    if (me == root) {
                        /* The list is the input: only the aliased tensor, the
                         * root's out, has changed (to the root's block). */
                        for (int j = 0; j < n; j++)
                            RANK_CHECK(at(list[j], 1) == BLOCK_AT(list[j] == out ? root : j, 1));
                        free_list(kind, n, list, out, whole);
                    }
                    /* all_gather: every rank's list, with ring or direct. */
                    if (a != 1) {
                        dl_tensor_arange(t, BLOCK_AT(me, 0), 1);
                        RANK_CHECK(make_list(comm, kind, n, count, t, me, list, views, &whole) ==
                                   0);
                        RANK_CHECK(dl_comm_all_gather(comm, list, t, &o, NULL) == DL_OK);
                        for (int j = 0; j < n; j++)
                            for (size_t k = 0; k < count; k += count / 5)
                                RANK_CHECK(at(list[j], k) == BLOCK_AT(j, k));
                        free_list(kind, n, list, t, whole);
                    }
                    dl_tensor_free(t);
                    dl_tensor_free(out);
                }
            }
        }
    }
    dl_comm_set_step_hook(comm, NULL, NULL);
    RANK_CHECK(list_hook.gathers_seen == roots_gathered);
    RANK_CHECK(list_hook.bad == 0);
    return 0;
}

static void over_tcp(int rank, void *arg)
{
    (void)rank;
    (void)arg;
    setenv("DISTLAB_TRANSPORT", "tcp", 1);
}

static void test_lists_in_place(void **state)
{
    (void)state;
    assert_int_equal(world_run(4, lists_in_place, NULL, 120), 0);
    assert_int_equal(world_run(3, lists_in_place, NULL, 120), 0);
    /* Over TCP a message arrives in the receiver's memory and is copied
     * from there: the same pieces, another transport. */
    assert_int_equal(world_run_setup(4, over_tcp, lists_in_place, NULL, 120), 0);
}

/* ---- many ranks on few cores ---- */

static int many(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int n = dl_comm_size(comm);
    dl_tensor_t *t = vec(comm, DL_INT64, 100, dl_comm_rank(comm));
    for (int it = 0; it < 20; it++) {
        dl_tensor_arange(t, dl_comm_rank(comm), 1);
        RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
        RANK_CHECK(at(t, 99) == (double)(n * (n - 1) / 2 + n * 99));
    }
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    dl_tensor_free(t);
    return 0;
}

static void test_sixteen_ranks(void **state)
{
    (void)state;
    assert_int_equal(world_run(16, many, NULL, 120), 0);
}

/* ---- failures ---- */

static int bad_args(dl_comm_t *comm, void *arg)
{
    (void)arg;
    dl_tensor_t *t = vec(comm, DL_FLOAT32, 2, 0);
    RANK_CHECK(dl_comm_send(comm, t, 5, 0) == DL_ERR_INVALID);
    RANK_CHECK(strstr(dl_comm_last_error(comm), "rank 5 does not exist") != NULL);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_BAND, NULL, NULL) == DL_ERR_DTYPE);
    RANK_CHECK(dl_comm_broadcast(comm, t, -1, NULL, NULL) == DL_ERR_INVALID);
    dl_coll_opts_t o = {.algo = "tree"};
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, &o, NULL) == DL_ERR_UNSUPPORTED);
    RANK_CHECK(strstr(dl_comm_last_error(comm), "ring") != NULL);
    /* Nothing was sent: the world still works. */
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    /* The op check remembers the (op, dtype) pair that passed last, not the
     * op or the dtype alone: band on float32 stays refused after band
     * passed on int32, and after sum passed on float32. */
    dl_tensor_t *ints = vec(comm, DL_INT32, 2, 0);
    RANK_CHECK(dl_comm_all_reduce(comm, ints, DL_OP_BAND, NULL, NULL) == DL_OK);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_BAND, NULL, NULL) == DL_ERR_DTYPE);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_BAND, NULL, NULL) == DL_ERR_DTYPE);
    RANK_CHECK(strstr(dl_comm_last_error(comm), "all_reduce") != NULL);
    /* A root's list is checked tensor by tensor before anything is sent, and
     * the first that does not pass is named: the root alone calls. */
    dl_tensor_t *l0 = vec(comm, DL_FLOAT32, 2, 0), *l1 = vec(comm, DL_FLOAT32, 2, 2);
    dl_tensor_t *wide = vec(comm, DL_FLOAT64, 2, 0), *longer = vec(comm, DL_FLOAT32, 3, 0);
    dl_tensor_t *list[2] = {l0, l1};
    if (dl_comm_rank(comm) == 0) {
        RANK_CHECK(dl_comm_scatter(comm, t, NULL, 0, NULL, NULL) == DL_ERR_INVALID);
        RANK_CHECK(strcmp(dl_comm_last_error(comm), "scatter: this rank needs a scatter_list") ==
                   0);
        list[1] = wide;
        RANK_CHECK(dl_comm_scatter(comm, t, list, 0, NULL, NULL) == DL_ERR_INVALID);
        RANK_CHECK(strcmp(dl_comm_last_error(comm),
                          "scatter: scatter_list[1] is float64, expected float32") == 0);
        list[1] = longer;
        RANK_CHECK(dl_comm_gather(comm, t, list, 0, NULL, NULL) == DL_ERR_INVALID);
        RANK_CHECK(strcmp(dl_comm_last_error(comm),
                          "gather: gather_list[1] has 3 elements, expected 2") == 0);
        list[1] = l1;
        list[0] = NULL;
        RANK_CHECK(dl_comm_scatter(comm, t, list, 0, NULL, NULL) == DL_ERR_INVALID);
        RANK_CHECK(strcmp(dl_comm_last_error(comm), "scatter: missing tensor") == 0);
        list[0] = l0;
    }
    RANK_CHECK(dl_comm_scatter(comm, t, dl_comm_rank(comm) == 0 ? list : NULL, 0, NULL, NULL) ==
               DL_OK);
    RANK_CHECK(at(t, 0) == 2 * dl_comm_rank(comm) && at(t, 1) == 2 * dl_comm_rank(comm) + 1);
    dl_tensor_free(l0);
    dl_tensor_free(l1);
    dl_tensor_free(wide);
    dl_tensor_free(longer);
    dl_tensor_free(ints);
    dl_tensor_free(t);
    return 0;
}

static void test_bad_args(void **state)
{
    (void)state;
    assert_int_equal(world_run(2, bad_args, NULL, 30), 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dead_peer(dl_comm_t *comm, void *arg)
{
    (void)arg;
    if (dl_comm_rank(comm) == 1)
        _exit(0); /* leaves without joining the collective */
    dl_tensor_t *t = vec(comm, DL_FLOAT32, 4, 0);
    double t0 = now_s();
    dl_status_t st = dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL);
    RANK_CHECK(st == DL_ERR_PEER_DEAD || st == DL_ERR_ABORTED);
    RANK_CHECK(now_s() - t0 < 5);
    RANK_CHECK(strstr(dl_comm_last_error(comm), "rank 1") != NULL);
    dl_tensor_free(t);
    return 0;
}

static void test_dead_peer(void **state)
{
    (void)state;
    assert_int_equal(world_run(3, dead_peer, NULL, 30), 0);
}

/* A waiting rank looks at 16 peers a period (dl__shm_find_dead), the next
 * 16 the next time: rank 0, alone in waiting, still finds rank 30 of 40
 * gone, in its second look. */
#define FAR_RANKS 40
#define FAR_DEAD  30

static int far_dead_peer(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm);
    if (me == FAR_DEAD)
        _exit(0);
    if (me != 0)
        return 0; /* leaves: not a dead peer */
    dl_tensor_t *t = vec(comm, DL_FLOAT32, 4, 0);
    double t0 = now_s();
    dl_status_t st = dl_comm_recv(comm, t, FAR_DEAD, 0, NULL);
    RANK_CHECK(st == DL_ERR_PEER_DEAD || st == DL_ERR_ABORTED); /* over TCP: its connection */
    RANK_CHECK(now_s() - t0 < 5);
    char dead[32];
    snprintf(dead, sizeof(dead), "rank %d", FAR_DEAD);
    RANK_CHECK(strstr(dl_comm_last_error(comm), dead) != NULL);
    dl_tensor_free(t);
    return 0;
}

static void test_far_dead_peer(void **state)
{
    (void)state;
    assert_int_equal(world_run(FAR_RANKS, far_dead_peer, NULL, 30), 0);
}

/* Rank 0 times out, which takes the world down: from then on every call,
 * on every rank, is refused before it sends anything, even a send small
 * enough to complete when posted (else a peer could complete a call that
 * the others fail, and the ranks would part ways). */
static int timeout(dl_comm_t *comm, void *arg)
{
    (void)arg;
    dl_tensor_t *t = vec(comm, DL_FLOAT32, 4, 0);
    if (dl_comm_rank(comm) == 1) {
        RANK_CHECK(!dl_comm_world_down(comm));
        usleep(1500 * 1000);
    } else {
        dl_comm_set_timeout(comm, 0.3);
        double t0 = now_s();
        RANK_CHECK(dl_comm_recv(comm, t, 1, 0, NULL) == DL_ERR_TIMEOUT);
        RANK_CHECK(now_s() - t0 < 1.2);
        RANK_CHECK(strstr(dl_comm_last_error(comm), "timed out") != NULL);
    }
    RANK_CHECK(dl_comm_world_down(comm));
    int peer = 1 - dl_comm_rank(comm);
    RANK_CHECK(dl_comm_send(comm, t, peer, 5) == DL_ERR_ABORTED);
    RANK_CHECK(strstr(dl_comm_last_error(comm), "send to rank") != NULL &&
               strstr(dl_comm_last_error(comm), "refused: the world was taken down: rank 0 timed "
                                                "out after 0.3 s") != NULL);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_ERR_ABORTED);
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_ERR_ABORTED);
    dl_tensor_free(t);
    return 0;
}

static void test_timeout(void **state)
{
    (void)state;
    assert_int_equal(world_run(2, timeout, NULL, 30), 0);
}

static int size_mismatch(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm);
    dl_tensor_t *t = vec(comm, DL_FLOAT32, me == 0 ? 4 : 2, 0);
    if (me == 0) {
        dl_work_t *w = NULL;
        RANK_CHECK(dl_comm_isend(comm, t, 1, 0, &w) == DL_OK);
        dl_work_wait(w, 1.0); /* never consumed: times out */
        dl_work_free(w);
    } else {
        RANK_CHECK(dl_comm_recv(comm, t, 0, 0, NULL) == DL_ERR_MISMATCH);
        RANK_CHECK(strstr(dl_comm_last_error(comm), "16 bytes") != NULL);
    }
    dl_tensor_free(t);
    return 0;
}

static void test_size_mismatch(void **state)
{
    (void)state;
    assert_int_equal(world_run(2, size_mismatch, NULL, 30), 0);
}

/* ---- interrupts ---- */

static void on_alarm(int sig)
{
    (void)sig;
    dl_comm_interrupt_from_signal();
}

/* Calls handler from SIGALRM in 300 ms, installed without SA_RESTART so
 * that a wait asleep on its futex wakes at once. */
static void alarm_soon(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {.it_value = {0, 300 * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* Ctrl-C in the shell: a signal interrupts rank 0's receive, which ends the
 * work in flight on every rank of its host (rank 1's receive, rank 2's
 * collective on a group); the world stays usable, and a
 * message posted before the interrupt and never received is dropped. Over
 * TCP every rank is alone in its segment: each is signalled (as the shell
 * does), and messages already sent still arrive. */
static int interrupt(dl_comm_t *comm, void *arg)
{
    (void)arg;
    bool tcp = transport_is_tcp();
    int me = dl_comm_rank(comm);
    dl_comm_set_timeout(comm, 20);
    dl_tensor_t *t = vec(comm, DL_INT64, 2, me), *stale = vec(comm, DL_INT64, 1, 7);
    dl_work_t *w = NULL, *s = NULL;
    const int all[] = {0, 1, 2};
    dl_comm_t *g = NULL;
    RANK_CHECK(dl_comm_new_group(comm, all, 3, &g) == DL_OK);
    /* Started before the barrier, so before the interrupt: they fail too. */
    if (me == 1 && !tcp) {
        RANK_CHECK(dl_comm_isend(comm, stale, 0, 5, &s) == DL_OK);
        RANK_CHECK(dl_work_wait(s, -1) == DL_OK); /* eager: done when posted */
        dl_work_free(s);
    }
    dl_coll_opts_t async = {.async = true};
    if (me == 1)
        RANK_CHECK(dl_comm_irecv(comm, t, 2, 9, &w) == DL_OK);
    else if (me == 2) /* rank 0 never joins it */
        RANK_CHECK(dl_comm_all_reduce(g, t, DL_OP_SUM, &async, &w) == DL_OK);
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    double t0 = now_s();
    if (me == 0 || tcp)
        alarm_soon(on_alarm);
    if (me == 0) {
        RANK_CHECK(dl_comm_recv(comm, t, 1, 0, NULL) == DL_ERR_ABORTED);
    } else {
        RANK_CHECK(dl_work_wait(w, -1) == DL_ERR_ABORTED);
        dl_work_free(w);
    }
    RANK_CHECK(now_s() - t0 < 10);
    RANK_CHECK(strstr(dl_comm_last_error(me == 2 ? g : comm), "interrupted (Ctrl-C)") != NULL);
    dl_comm_destroy(g); /* rank 2 is a collective ahead on it */

    /* The world goes on. */
    dl_tensor_arange(t, me, 0);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(t, 0) == 3 && at(t, 1) == 3);
    /* Rank 1's message from before the interrupt is gone; a new one comes. */
    if (me == 0 && !tcp) {
        RANK_CHECK(dl_comm_irecv(comm, stale, 1, 5, &s) == DL_OK);
        for (int i = 0; i < 20; i++) {
            RANK_CHECK(!dl_work_test(s));
            usleep(5000);
        }
    }
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    if (me == 1) {
        dl_tensor_arange(stale, 42, 0);
        RANK_CHECK(dl_comm_send(comm, stale, 0, 5) == DL_OK);
    } else if (me == 0) {
        if (tcp)
            RANK_CHECK(dl_comm_irecv(comm, stale, 1, 5, &s) == DL_OK);
        RANK_CHECK(dl_work_wait(s, -1) == DL_OK && at(stale, 0) == 42);
        dl_work_free(s);
    }
    /* An interrupt nobody took yet can be forgotten. */
    dl_comm_interrupt_from_signal();
    dl_comm_interrupt_clear();
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    dl_tensor_free(t);
    dl_tensor_free(stale);
    return 0;
}

static void test_interrupt(void **state)
{
    (void)state;
    assert_int_equal(world_run(3, interrupt, NULL, 60), 0);
}

static void on_alarm_cancel(int sig)
{
    (void)sig;
    dl_comm_cancel_from_signal();
}

/* A cancel (the shell found that rank 0's receive can never complete)
 * fails rank 0's wait alone: rank 1's receive in flight goes on and
 * completes, and a message rank 2 posted before is still there. */
static int cancel(dl_comm_t *comm, void *arg)
{
    (void)arg;
    int me = dl_comm_rank(comm);
    dl_comm_set_timeout(comm, 20);
    dl_tensor_t *t = vec(comm, DL_INT64, 2, me);
    dl_work_t *w = NULL;
    if (me == 2)
        RANK_CHECK(dl_comm_send(comm, t, 0, 5) == DL_OK); /* eager: done when posted */
    if (me == 1)
        RANK_CHECK(dl_comm_irecv(comm, t, 2, 9, &w) == DL_OK);
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    if (me == 0) {
        alarm_soon(on_alarm_cancel);
        double t0 = now_s();
        RANK_CHECK(dl_comm_recv(comm, t, 1, 0, NULL) == DL_ERR_ABORTED);
        RANK_CHECK(now_s() - t0 < 10);
        RANK_CHECK(dl_comm_recv(comm, t, 2, 5, NULL) == DL_OK && at(t, 0) == 2);
    } else if (me == 1) {
        usleep(600 * 1000); /* past the cancel */
        RANK_CHECK(!dl_work_test(w) || dl_work_status(w) == DL_OK);
    } else {
        usleep(600 * 1000);
        RANK_CHECK(dl_comm_send(comm, t, 1, 9) == DL_OK);
    }
    if (me == 1) {
        RANK_CHECK(dl_work_wait(w, -1) == DL_OK && at(t, 0) == 2);
        dl_work_free(w);
    }
    RANK_CHECK(!dl_comm_world_down(comm));
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    dl_tensor_free(t);
    return 0;
}

static void test_cancel(void **state)
{
    (void)state;
    assert_int_equal(world_run(3, cancel, NULL, 30), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p2p_tags),      cmocka_unit_test(test_any_source),
        cmocka_unit_test(test_p2p_order),     cmocka_unit_test(test_left_peer),
        cmocka_unit_test(test_quick_worlds),  cmocka_unit_test(test_hook_calls),
        cmocka_unit_test(test_repeat_calls),  cmocka_unit_test(test_async_colls),
        cmocka_unit_test(test_groups),        cmocka_unit_test(test_uneven_all_to_all),
        cmocka_unit_test(test_lists),         cmocka_unit_test(test_lists_in_place),
        cmocka_unit_test(test_sixteen_ranks), cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_dead_peer),     cmocka_unit_test(test_far_dead_peer),
        cmocka_unit_test(test_timeout),       cmocka_unit_test(test_size_mismatch),
        cmocka_unit_test(test_interrupt),     cmocka_unit_test(test_shm_copy),
        cmocka_unit_test(test_shm_fence),     cmocka_unit_test(test_bind),
        cmocka_unit_test(test_bind_undo),     cmocka_unit_test(test_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
