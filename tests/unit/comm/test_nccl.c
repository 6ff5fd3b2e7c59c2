/* The NCCL backend on real rank processes, one GPU each: a 1-rank world
 * (every collective, the calls NCCL refuses, groups, async work), then a
 * world of as many ranks as there are GPUs, and the set-up errors.
 *
 * Without a GPU only the set-up error runs ("no CUDA device: ..."), then
 * the executable exits 77 (meson's "skipped") and says why.
 *
 * CUDA does not survive fork(): this process never uses CUDA itself; the
 * device count is asked in a child, and every world is made of children. */
#include <math.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "distlab/comm.h"
#include "distlab/cuda.h"
#include "distlab/log.h"
#include "world.h"

static const dl_device_t cpu = {DL_DEVICE_CPU, 0};
static int n_gpus;

/* ------------------------------------------------------------------------
 * Worlds on the nccl backend
 * ------------------------------------------------------------------------ */

/* The error lines a rank logged, so that a test can read why set-up failed
 * (the world that failed is gone, and its last error with it). */
static char logged[2048];

static void capture_log(void *arg, dl_log_level_t level, const char *msg)
{
    (void)arg;
    size_t len = strlen(logged);
    snprintf(logged + len, sizeof(logged) - len, "%s\n", msg);
    if (level == DL_LOG_ERROR)
        fprintf(stderr, "rank error: %s\n", msg);
}

/* fn runs on every rank with its communicator, or with NULL when the rank
 * could not join (then logged holds why). */
typedef int (*nccl_fn_t)(dl_comm_t *comm, void *arg);

/* Like world_run (world.c), on the nccl backend; env: "NAME=VALUE" pairs
 * set in every rank before it joins (NULL-terminated, may be NULL). Returns
 * the number of ranks that failed, or -1 when the world did not finish in
 * timeout_s. */
static int nccl_world_run(int n, const char *const *env, nccl_fn_t fn, void *arg, double timeout_s)
{
    static int worlds;
    int port = world_free_port();
    pid_t pids[64];
    char buf[64];
    fflush(NULL);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] != 0)
            continue;
        snprintf(buf, sizeof(buf), "%d", r);
        setenv("RANK", buf, 1);
        snprintf(buf, sizeof(buf), "%d", n);
        setenv("WORLD_SIZE", buf, 1);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        snprintf(buf, sizeof(buf), "%d", port);
        setenv("MASTER_PORT", buf, 1);
        snprintf(buf, sizeof(buf), "nccl%d-%d", (int)getppid(), worlds);
        setenv("DISTLAB_WORLD", buf, 1);
        unsetenv("DISTLAB_STORE");
        unsetenv("LOCAL_RANK");
        unsetenv("LOCAL_WORLD_SIZE");
        for (size_t i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        dl_log_set_sink(capture_log, NULL);
        dl_comm_opts_t opts = {.backend = "nccl", .timeout_s = 60};
        dl_comm_t *comm = NULL;
        if (dl_comm_init_env(&opts, &comm) != DL_OK)
            _exit(fn(NULL, arg));
        int rc = fn(comm, arg);
        dl_comm_destroy(comm);
        _exit(rc);
    }
    worlds++;
    int failed = 0, left = n;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (left > 0) {
        int status = 0;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            left--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "rank (pid %d) ended with %s %d\n", (int)p,
                        WIFEXITED(status) ? "code" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                failed++;
            }
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) > timeout_s) {
            for (int r = 0; r < n; r++)
                kill(pids[r], SIGKILL);
            while (waitpid(-1, NULL, 0) > 0)
                ;
            return -1;
        }
        usleep(2000);
    }
    return failed;
}

/* ------------------------------------------------------------------------
 * Helpers inside a rank
 * ------------------------------------------------------------------------ */

/* This rank's GPU, as the backend picked it (LOCAL_RANK = rank here). */
static dl_device_t my_gpu(dl_comm_t *comm)
{
    return (dl_device_t){DL_DEVICE_CUDA, dl_comm_rank(comm) % n_gpus};
}

static dl_tensor_t *vec_on(dl_device_t dev, dl_dtype_t dt, size_t n, double start)
{
    dl_tensor_t *h = NULL, *t = NULL;
    if (dl_tensor_new_1d(dt, n, NULL, &h) != DL_OK)
        return NULL;
    dl_tensor_arange(h, start, 1);
    if (dl_tensor_to(h, dev, &t) != DL_OK)
        t = NULL;
    dl_tensor_free(h);
    return t;
}

static dl_tensor_t *zeros_on(dl_device_t dev, dl_dtype_t dt, size_t n)
{
    dl_tensor_t *t = NULL;
    int64_t shape[1] = {(int64_t)n};
    return dl_tensor_new_on(dt, 1, shape, dev, &t) == DL_OK ? t : NULL;
}

static double at(const dl_tensor_t *t, size_t i)
{
    uint8_t buf[8];
    size_t esz = dl_dtype_size(t->dtype);
    if (dl_cuda_copy(buf, cpu, (const uint8_t *)t->data + i * esz, t->device, esz) != DL_OK)
        return NAN;
    return dl_dtype_get(t->dtype, buf, 0);
}

static bool says(const char *text, const char *part)
{
    if (text == NULL || strstr(text, part) == NULL) {
        fprintf(stderr, "expected \"%s\" in: %s\n", part, text != NULL ? text : "(null)");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------
 * Set-up errors
 * ------------------------------------------------------------------------ */

static int expect_init_error(dl_comm_t *comm, void *arg)
{
    if (comm != NULL) {
        fprintf(stderr, "the nccl world came up; expected: %s\n", (const char *)arg);
        return 1;
    }
    return says(logged, arg) ? 0 : 1;
}

static void test_no_gpu(void **state)
{
    (void)state;
    assert_int_equal(nccl_world_run(1, NULL, expect_init_error, "no CUDA device: ", 60), 0);
}

static void test_more_ranks_than_gpus(void **state)
{
    (void)state;
    /* One rank, but LOCAL_WORLD_SIZE says this host runs one more than it
     * has GPUs. */
    static char local[32], expected[96];
    snprintf(local, sizeof(local), "LOCAL_WORLD_SIZE=%d", n_gpus + 1);
    snprintf(expected, sizeof(expected), "NCCL needs one GPU per rank: %d ranks, %d GPUs",
             n_gpus + 1, n_gpus);
    const char *env[] = {local, NULL};
    assert_int_equal(nccl_world_run(1, env, expect_init_error, expected, 60), 0);
}

/* ------------------------------------------------------------------------
 * One rank
 * ------------------------------------------------------------------------ */

static int one_rank(dl_comm_t *comm, void *arg)
{
    (void)arg;
    RANK_CHECK(comm != NULL);
    RANK_CHECK(strcmp(dl_comm_backend(comm), "nccl") == 0);
    dl_device_t dev = my_gpu(comm);

    dl_tensor_t *t = vec_on(dev, DL_FLOAT32, 4, 1);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(t, 0) == 1 && at(t, 3) == 4);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_AVG, NULL, NULL) == DL_OK);
    RANK_CHECK(at(t, 2) == 3);
    RANK_CHECK(dl_comm_broadcast(comm, t, 0, NULL, NULL) == DL_OK);
    RANK_CHECK(at(t, 1) == 2);
    RANK_CHECK(dl_comm_reduce(comm, t, 0, DL_OP_MAX, NULL, NULL) == DL_OK);
    RANK_CHECK(at(t, 3) == 4);

    /* bool travels as bytes; sum is "or". */
    dl_tensor_t *flags = vec_on(dev, DL_BOOL, 3, 0);
    RANK_CHECK(dl_comm_all_reduce(comm, flags, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(flags, 0) == 0 && at(flags, 1) == 1);

    dl_tensor_t *out = zeros_on(dev, DL_FLOAT32, 4);
    RANK_CHECK(dl_comm_all_gather_into(comm, out, t, NULL, NULL) == DL_OK);
    RANK_CHECK(at(out, 0) == 1 && at(out, 3) == 4);
    dl_tensor_t *list[1] = {zeros_on(dev, DL_FLOAT32, 4)};
    RANK_CHECK(dl_comm_all_gather(comm, list, t, NULL, NULL) == DL_OK);
    RANK_CHECK(at(list[0], 2) == 3);
    RANK_CHECK(dl_comm_reduce_scatter(comm, out, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(out, 1) == 2);
    dl_tensor_fill(out, 0);
    RANK_CHECK(dl_comm_scatter(comm, out, list, 0, NULL, NULL) == DL_OK);
    RANK_CHECK(at(out, 3) == 4);
    dl_tensor_fill(list[0], 0);
    RANK_CHECK(dl_comm_gather(comm, t, list, 0, NULL, NULL) == DL_OK);
    RANK_CHECK(at(list[0], 3) == 4);
    dl_tensor_fill(out, 0);
    RANK_CHECK(dl_comm_all_to_all(comm, out, t, NULL, NULL, NULL, NULL) == DL_OK);
    RANK_CHECK(at(out, 0) == 1 && at(out, 3) == 4);
    size_t splits[1] = {4};
    dl_tensor_fill(out, 0);
    RANK_CHECK(dl_comm_all_to_all(comm, out, t, splits, splits, NULL, NULL) == DL_OK);
    RANK_CHECK(at(out, 2) == 3);
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);

    /* Async, then wait. */
    dl_coll_opts_t async = {.async = true};
    dl_work_t *w = NULL;
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_PROD, &async, &w) == DL_OK);
    RANK_CHECK(dl_work_wait(w, -1) == DL_OK);
    dl_work_free(w);
    RANK_CHECK(at(t, 3) == 4);

    /* A group of the one rank. */
    int ranks[1] = {0};
    dl_comm_t *g = NULL;
    RANK_CHECK(dl_comm_new_group(comm, ranks, 1, &g) == DL_OK && g != NULL);
    RANK_CHECK(dl_comm_all_reduce(g, t, DL_OP_MIN, NULL, NULL) == DL_OK);
    RANK_CHECK(dl_comm_barrier(g, NULL, NULL) == DL_OK);
    dl_comm_destroy(g);

    /* What NCCL refuses, and what a 1-rank world cannot do. */
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_BAND, NULL, NULL) != DL_OK);
    dl_tensor_t *ints = vec_on(dev, DL_INT32, 2, 1);
    RANK_CHECK(dl_comm_all_reduce(comm, ints, DL_OP_BXOR, NULL, NULL) == DL_ERR_UNSUPPORTED);
    RANK_CHECK(says(dl_comm_last_error(comm), "bitwise ops (bxor) are not supported by NCCL"));
    dl_tensor_t *host = vec_on(cpu, DL_FLOAT32, 2, 0);
    RANK_CHECK(dl_comm_all_reduce(comm, host, DL_OP_SUM, NULL, NULL) == DL_ERR_UNSUPPORTED);
    RANK_CHECK(says(dl_comm_last_error(comm), "does not support all_reduce on cpu tensors"));
    RANK_CHECK(dl_comm_send(comm, t, 0, 0) == DL_ERR_INVALID);
    RANK_CHECK(says(dl_comm_last_error(comm), "cannot send to itself"));
    RANK_CHECK(dl_comm_send(comm, t, 1, 0) == DL_ERR_INVALID);
    RANK_CHECK(says(dl_comm_last_error(comm), "does not exist"));
    dl_work_t *rw = NULL;
    RANK_CHECK(dl_comm_irecv(comm, t, DL_ANY_SOURCE, 0, &rw) == DL_ERR_UNSUPPORTED);
    RANK_CHECK(says(dl_comm_last_error(comm), "NCCL has no wildcard receive"));
    /* The world is still fine after refusals. */
    RANK_CHECK(dl_comm_all_reduce(comm, ints, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(ints, 1) == 2);

    dl_tensor_t *all[] = {t, flags, out, list[0], ints, host};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        dl_tensor_free(all[i]);
    return 0;
}

static void test_one_rank(void **state)
{
    (void)state;
    assert_int_equal(nccl_world_run(1, NULL, one_rank, NULL, 120), 0);
}

/* ------------------------------------------------------------------------
 * One rank per GPU
 * ------------------------------------------------------------------------ */

static int every_gpu(dl_comm_t *comm, void *arg)
{
    (void)arg;
    RANK_CHECK(comm != NULL);
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    dl_device_t dev = my_gpu(comm);

    dl_tensor_t *t = vec_on(dev, DL_FLOAT32, 5, 10.0 * me);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    for (size_t i = 0; i < 5; i++)
        RANK_CHECK(at(t, i) == 10.0 * n * (n - 1) / 2 + (double)(n * (int)i));
    dl_tensor_t *avg = vec_on(dev, DL_FLOAT64, 2, 2.0 * me);
    RANK_CHECK(dl_comm_all_reduce(comm, avg, DL_OP_AVG, NULL, NULL) == DL_OK);
    RANK_CHECK(fabs(at(avg, 0) - (n - 1)) < 1e-12);

    dl_tensor_t *b = vec_on(dev, DL_INT64, 3, 100.0 * me);
    RANK_CHECK(dl_comm_broadcast(comm, b, n - 1, NULL, NULL) == DL_OK);
    RANK_CHECK(at(b, 2) == 100.0 * (n - 1) + 2);

    dl_tensor_t *r = vec_on(dev, DL_INT32, 2, me);
    RANK_CHECK(dl_comm_reduce(comm, r, 1, DL_OP_MAX, NULL, NULL) == DL_OK);
    RANK_CHECK(at(r, 0) == (me == 1 ? n - 1 : me));

    /* all_to_all, equal chunks and uneven splits (j + 1 elements to j). */
    dl_tensor_t *in = vec_on(dev, DL_INT32, 2 * (size_t)n, 100.0 * me);
    dl_tensor_t *out = zeros_on(dev, DL_INT32, 2 * (size_t)n);
    RANK_CHECK(dl_comm_all_to_all(comm, out, in, NULL, NULL, NULL, NULL) == DL_OK);
    for (int i = 0; i < n; i++)
        RANK_CHECK(at(out, (size_t)(2 * i + 1)) == 100.0 * i + 2 * me + 1);
    size_t in_splits[64], out_splits[64], in_n = 0;
    for (int j = 0; j < n; j++) {
        in_splits[j] = (size_t)j + 1;
        out_splits[j] = (size_t)me + 1;
        in_n += in_splits[j];
    }
    dl_tensor_t *sin = vec_on(dev, DL_FLOAT16, in_n, 0);
    dl_tensor_t *sout = zeros_on(dev, DL_FLOAT16, (size_t)n * ((size_t)me + 1));
    RANK_CHECK(dl_comm_all_to_all(comm, sout, sin, out_splits, in_splits, NULL, NULL) == DL_OK);
    for (int i = 0; i < n; i++)
        RANK_CHECK(at(sout, (size_t)(i * (me + 1) + me)) == me * (me + 1) / 2 + me);

    /* Lists: gather to 0, scatter from the last rank. */
    dl_tensor_t *list[64] = {0};
    for (int i = 0; i < n; i++)
        RANK_CHECK((list[i] = zeros_on(dev, DL_BFLOAT16, 2)) != NULL);
    dl_tensor_t *mine = vec_on(dev, DL_BFLOAT16, 2, 4.0 * me);
    RANK_CHECK(dl_comm_gather(comm, mine, me == 0 ? list : NULL, 0, NULL, NULL) == DL_OK);
    if (me == 0)
        for (int i = 0; i < n; i++)
            RANK_CHECK(at(list[i], 1) == 4.0 * i + 1);
    for (int i = 0; i < n; i++)
        dl_tensor_fill(list[i], 3 * i);
    RANK_CHECK(dl_comm_scatter(comm, mine, me == n - 1 ? list : NULL, n - 1, NULL, NULL) == DL_OK);
    RANK_CHECK(at(mine, 0) == 3 * me);
    RANK_CHECK(dl_comm_all_gather(comm, list, mine, NULL, NULL) == DL_OK);
    RANK_CHECK(at(list[n - 1], 1) == 3 * (n - 1));
    dl_tensor_t *rs_in = vec_on(dev, DL_FLOAT32, 2 * (size_t)n, 0);
    dl_tensor_t *rs_out = zeros_on(dev, DL_FLOAT32, 2);
    RANK_CHECK(dl_comm_reduce_scatter(comm, rs_out, rs_in, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(rs_out, 1) == (double)(n * (2 * me + 1)));

    /* Point to point around a ring: receive from the left, send right,
     * in the order that cannot deadlock (even ranks send first). */
    dl_tensor_t *tok = vec_on(dev, DL_UINT8, 3, me), *got = zeros_on(dev, DL_UINT8, 3);
    int right = (me + 1) % n, left = (me + n - 1) % n;
    if (me % 2 == 0) {
        RANK_CHECK(dl_comm_send(comm, tok, right, 0) == DL_OK);
        RANK_CHECK(dl_comm_recv(comm, got, left, 0, NULL) == DL_OK);
    } else {
        RANK_CHECK(dl_comm_recv(comm, got, left, 0, NULL) == DL_OK);
        RANK_CHECK(dl_comm_send(comm, tok, right, 0) == DL_OK);
    }
    RANK_CHECK(at(got, 0) == left && at(got, 2) == left + 2);

    /* A group of all but the last rank: members only, the last rank
     * stays out (and never calls the backend). */
    int ranks[64];
    for (int i = 0; i < n - 1; i++)
        ranks[i] = i;
    dl_comm_t *g = NULL;
    RANK_CHECK(dl_comm_new_group(comm, ranks, n - 1, &g) == DL_OK);
    if (me < n - 1) {
        RANK_CHECK(g != NULL && dl_comm_size(g) == n - 1);
        dl_tensor_t *gt = vec_on(dev, DL_INT64, 1, 1);
        RANK_CHECK(dl_comm_all_reduce(g, gt, DL_OP_SUM, NULL, NULL) == DL_OK);
        RANK_CHECK(at(gt, 0) == n - 1);
        dl_tensor_free(gt);
        dl_comm_destroy(g);
    } else {
        RANK_CHECK(g == NULL);
    }
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);

    dl_tensor_t *all[] = {t, avg, b, r, in, out, sin, sout, mine, rs_in, rs_out, tok, got};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        dl_tensor_free(all[i]);
    for (int i = 0; i < n; i++)
        dl_tensor_free(list[i]);
    return 0;
}

static void test_every_gpu(void **state)
{
    (void)state;
    if (n_gpus < 2) {
        skip(); /* one GPU: the 1-rank world covered it */
        return;
    }
    int n = n_gpus < 64 ? n_gpus : 64;
    assert_int_equal(nccl_world_run(n, NULL, every_gpu, NULL, 300), 0);
}

int main(void)
{
    char why[256] = "";
    n_gpus = world_gpu_count(why, sizeof(why));
    if (n_gpus == 0) {
        const struct CMUnitTest no_gpu[] = {
            cmocka_unit_test(test_no_gpu),
        };
        if (cmocka_run_group_tests_name("nccl without a GPU", no_gpu, NULL, NULL) != 0)
            return 1;
        printf("SKIP: the NCCL tests need a CUDA device: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_more_ranks_than_gpus),
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_every_gpu),
    };
    return cmocka_run_group_tests_name("nccl", tests, NULL, NULL) != 0;
}
