/* The floor side of tests/bench/shm_floor.py: the memory traffic that no
 * shared-memory all_reduce can avoid, timed as distlab bench times.
 *
 * N processes share one mapping that holds every rank's input (float32).
 * The vector is cut into N shares; rank r owns share r. In each call rank r
 * reads share r of all N buffers, adds them and writes the sum into share r
 * of all N buffers, so every rank ends with the whole result in its own
 * buffer. Per rank that is B read and B written (B = one buffer's bytes),
 * each byte touched once: there is no partial sum written and read again,
 * no bounce buffer, no message, no wait. Shares are disjoint, so calls
 * need no synchronisation between them; a barrier before and after the
 * timed loop is the only one.
 *
 * An all_reduce cannot skip it: a rank may read a peer's buffer only once
 * the peer has called (its input is there), and a call's result is whole
 * only once every rank has written its share. With "synced", every call
 * starts with a barrier, the least that makes the loop a correct in-place
 * all_reduce called back to back (at barrier k every rank has finished
 * call k-1's writes and is in call k), so the cost of that one
 * synchronisation can be told apart from the engine's own.
 *
 * usage: shm_floor NP BYTES ITERS WARMUP [synced]
 * prints "bytes time_us", the time per call (the same on every rank, as
 * it runs from barrier to barrier). */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_NP 64
/* The sum of a block is built in a stack buffer that stays in L1, then
 * stored into every rank's buffer. Blocks of 512 elements (2 KiB) measured
 * fastest on the development machine, at np 2 and 4, among 128 to 8192:
 * the floor is the best this program can do. */
#define BLOCK             512
#define BARRIER_TIMEOUT_S 60.0

/* The widest vector unit the CPU has, picked when the program loads. */
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

typedef struct {
    _Atomic uint32_t count;
    _Atomic uint32_t gen;
    char pad_[56];
} barrier_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* More ranks than cores is the case to measure too, so a waiting rank
 * yields its core instead of spinning on it. */
static void barrier(barrier_t *b, int np)
{
    uint32_t gen = atomic_load(&b->gen);
    if (atomic_fetch_add(&b->count, 1) + 1 == (uint32_t)np) {
        atomic_store(&b->count, 0);
        atomic_fetch_add(&b->gen, 1);
        return;
    }
    double t0 = now_s();
    while (atomic_load(&b->gen) == gen) {
        sched_yield();
        if (now_s() - t0 > BARRIER_TIMEOUT_S) {
            fprintf(stderr, "shm_floor: a rank did not reach the barrier in %g s\n",
                    BARRIER_TIMEOUT_S);
            exit(1);
        }
    }
}

CLONES static void add2(float *restrict acc, const float *restrict a, const float *restrict b,
                        size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] = a[i] + b[i];
}

CLONES static void add_into(float *restrict acc, const float *restrict a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] += a[i];
}

CLONES static void store(float *restrict dst, const float *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

/* One call: share [lo, hi) of every buffer becomes the sum over ranks. */
static void all_reduce_share(float *const *bufs, int np, size_t lo, size_t hi)
{
    float acc[BLOCK] __attribute__((aligned(64)));
    for (size_t i = lo; i < hi; i += BLOCK) {
        size_t n = hi - i < BLOCK ? hi - i : BLOCK;
        add2(acc, bufs[0] + i, bufs[1] + i, n);
        for (int r = 2; r < np; r++)
            add_into(acc, bufs[r] + i, n);
        for (int r = 0; r < np; r++)
            store(bufs[r] + i, acc, n);
    }
}

static int run_rank(int me, int np, size_t count, int iters, int warmup, bool synced,
                    float *const *bufs, barrier_t *bar)
{
    for (size_t i = 0; i < count; i++)
        bufs[me][i] = (float)((me * 3 + (int)(i % 7)) % 7 - 3);
    size_t lo = count * (size_t)me / (size_t)np, hi = count * (size_t)(me + 1) / (size_t)np;
    barrier(bar, np);
    for (int i = 0; i < warmup; i++)
        all_reduce_share(bufs, np, lo, hi);
    barrier(bar, np);
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        if (synced)
            barrier(bar, np);
        all_reduce_share(bufs, np, lo, hi);
    }
    barrier(bar, np);
    double us = (now_s() - t0) * 1e6 / (iters > 0 ? iters : 1);
    if (me == 0)
        printf("%zu %.3f\n", count * sizeof(float), us);
    fflush(stdout); /* the rank ends with _exit, which does not flush */
    return 0;
}

int main(int argc, char **argv)
{
    bool synced = argc == 6 && strcmp(argv[5], "synced") == 0;
    if (argc != 5 && !synced) {
        fprintf(stderr, "usage: shm_floor NP BYTES ITERS WARMUP [synced]\n");
        return 2;
    }
    int np = atoi(argv[1]), iters = atoi(argv[3]), warmup = atoi(argv[4]);
    size_t bytes = strtoull(argv[2], NULL, 10);
    if (np < 2 || np > MAX_NP || bytes < sizeof(float) * (size_t)np || iters < 1 || warmup < 0) {
        fprintf(stderr, "shm_floor: NP must be 2..%d, BYTES at least 4*NP, ITERS at least 1\n",
                MAX_NP);
        return 2;
    }
    size_t count = bytes / sizeof(float);
    /* Each buffer starts on its own page, as distlab's arenas do. */
    size_t stride = (count * sizeof(float) + 4095) / 4096 * 4096;
    size_t total = 4096 + stride * (size_t)np;
    uint8_t *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("shm_floor: mmap");
        return 1;
    }
    barrier_t *bar = (barrier_t *)base;
    float *bufs[MAX_NP];
    for (int r = 0; r < np; r++)
        bufs[r] = (float *)(base + 4096 + stride * (size_t)r);
    fflush(stdout);
    pid_t pids[MAX_NP];
    for (int r = 0; r < np; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("shm_floor: fork");
            return 1;
        }
        if (pids[r] == 0)
            _exit(run_rank(r, np, count, iters, warmup, synced, bufs, bar));
    }
    int rc = 0;
    for (int r = 0; r < np; r++) {
        int status = 0;
        if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = 1;
    }
    return rc;
}
