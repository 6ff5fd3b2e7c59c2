/* CUDA tensors (distlab/cuda.h, dl_tensor_new_on, dl_tensor_to, printing)
 * and the builtin backend's staging of cuda tensors through host memory,
 * on a 2-rank world whose ranks share the GPUs there are.
 *
 * Without a GPU (or without CUDA in the build) only the failure paths run:
 * every call that needs a GPU must fail cleanly with a reason. Then the
 * executable exits 77 (meson's "skipped") and says why the GPU tests did
 * not run.
 *
 * CUDA does not survive fork(): a child cannot use CUDA once its parent
 * has. So the device count is asked in a child of its own, and the tests
 * that fork ranks run before any test that uses CUDA in this process. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../comm/world.h"
#include "distlab/comm.h"
#include "distlab/cuda.h"
#include "distlab/tensor.h"
#include "transport/arena.h"

static const dl_device_t cpu = {DL_DEVICE_CPU, 0};
static int n_gpus;

static dl_device_t gpu(int index)
{
    return (dl_device_t){DL_DEVICE_CUDA, index};
}

/* A tensor on dev holding start, start + 1, ... (filled on the host). */
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

/* Element i of a tensor on any device (NAN when it cannot be read). */
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
    return text != NULL && strstr(text, part) != NULL;
}

/* ------------------------------------------------------------------------
 * Without a GPU: clean failures
 * ------------------------------------------------------------------------ */

static void test_no_gpu_count(void **state)
{
    (void)state;
    char why[256] = "";
    assert_int_equal(dl_cuda_device_count(why, sizeof(why)), 0);
    printf("no CUDA device: %s\n", why);
    assert_true(why[0] != '\0');
    assert_int_equal(dl_cuda_device_count(NULL, 0), 0);
    assert_null(dl_cuda_allocator(0));
    assert_true(dl_cuda_last_error()[0] != '\0');
}

static void test_no_gpu_tensors(void **state)
{
    (void)state;
    int64_t shape[1] = {3};
    dl_tensor_t *t = (dl_tensor_t *)0x1;
    assert_int_equal(dl_tensor_new_on(DL_FLOAT32, 1, shape, gpu(0), &t), DL_ERR_UNSUPPORTED);
    assert_ptr_equal(t, (dl_tensor_t *)0x1); /* untouched on error */
    assert_true(dl_cuda_last_error()[0] != '\0');
    /* The cpu paths work as ever, through the same calls. */
    assert_int_equal(dl_tensor_new_on(DL_FLOAT32, 1, shape, cpu, &t), DL_OK);
    assert_int_equal(t->device.type, DL_DEVICE_CPU);
    assert_true(at(t, 2) == 0);
    dl_tensor_arange(t, 1, 1);
    dl_tensor_t *c = NULL;
    assert_int_equal(dl_tensor_to(t, cpu, &c), DL_OK);
    assert_ptr_not_equal(c->data, t->data);
    assert_true(at(c, 0) == 1 && at(c, 2) == 3);
    dl_tensor_t *g = (dl_tensor_t *)0x1;
    assert_int_equal(dl_tensor_to(t, gpu(0), &g), DL_ERR_UNSUPPORTED);
    assert_ptr_equal(g, (dl_tensor_t *)0x1);
    /* Copies between host buffers need no GPU; any other copy fails. */
    float a[2] = {1, 2}, b[2] = {0, 0};
    assert_int_equal(dl_cuda_copy(b, cpu, a, cpu, sizeof(a)), DL_OK);
    assert_true(b[1] == 2);
    assert_int_not_equal(dl_cuda_copy(b, gpu(0), a, cpu, sizeof(a)), DL_OK);
    assert_true(dl_cuda_last_error()[0] != '\0');
    dl_tensor_free(t);
    dl_tensor_free(c);
}

/* Page-locking fails without a GPU, says why, and leaves the memory as it
 * was; an arena asked to pin stays pageable and works. */
static void test_no_gpu_pin(void **state)
{
    (void)state;
    size_t n = 1 << 16;
    uint8_t *buf = aligned_alloc(4096, n);
    assert_non_null(buf);
    assert_int_not_equal(dl_cuda_pin(buf, n), DL_OK);
    assert_true(dl_cuda_last_error()[0] != '\0');
    memset(buf, 7, n);
    dl_arena_t a;
    assert_int_equal(dl__arena_init(&a, buf, n), DL_OK);
    void *p = a.allocator.alloc(&a.allocator, 100);
    assert_non_null(p);
    dl__arena_pin(&a, p, 100);
    assert_true(a.pin_failed && a.pinned == NULL);
    dl__arena_pin(&a, p, 100); /* not tried again */
    a.allocator.free(&a.allocator, p, 100);
    dl__arena_destroy(&a);
    free(buf);
}

/* A cuda tensor handed to the builtin backend with no GPU to copy it from
 * (its storage is host memory here: it is never read) fails the call with
 * a message, on a CUDA build because staging it fails, on a build without
 * CUDA because the builtin backend then takes no cuda tensors. */
static int no_gpu_staging(dl_comm_t *comm, void *arg)
{
    (void)arg;
    float data[4] = {1, 2, 3, 4};
    dl_tensor_t t = {.dtype = DL_FLOAT32,
                     .ndim = 1,
                     .shape = {4},
                     .numel = 4,
                     .device = {DL_DEVICE_CUDA, 0},
                     .data = data};
    dl_status_t st = dl_comm_all_reduce(comm, &t, DL_OP_SUM, NULL, NULL);
    fprintf(stderr, "all_reduce of a cuda tensor without a GPU: %s: %s\n", dl_status_name(st),
            dl_comm_last_error(comm));
    RANK_CHECK(st != DL_OK && says(dl_comm_last_error(comm), "cuda"));
    RANK_CHECK(data[3] == 4);
    /* The communicator is still fine for cpu tensors. */
    dl_tensor_t *c = vec_on(cpu, DL_INT32, 3, 5);
    RANK_CHECK(c != NULL && dl_comm_all_reduce(comm, c, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(c, 0) == 5 && at(c, 2) == 7);
    dl_tensor_free(c);
    return 0;
}

static void test_no_gpu_staging(void **state)
{
    (void)state;
    assert_int_equal(world_run(1, no_gpu_staging, NULL, 60), 0);
}

/* ------------------------------------------------------------------------
 * Builtin staging: two ranks with cuda tensors (forked: run first)
 * ------------------------------------------------------------------------ */

static int staged_colls(dl_comm_t *comm, void *arg)
{
    int ngpu = *(const int *)arg;
    int me = dl_comm_rank(comm), n = dl_comm_size(comm);
    dl_device_t dev = gpu(me % ngpu);

    /* all_reduce in place: rank r holds 10r + i. */
    dl_tensor_t *t = vec_on(dev, DL_FLOAT32, 5, 10.0 * me);
    RANK_CHECK(t != NULL && t->device.index == me % ngpu);
    RANK_CHECK(dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL) == DL_OK);
    for (size_t i = 0; i < 5; i++)
        RANK_CHECK(at(t, i) == 10.0 * n * (n - 1) / 2 + (double)(n * (int)i));

    /* The same, async. */
    dl_coll_opts_t async = {.async = true};
    dl_work_t *w = NULL;
    dl_tensor_t *m = vec_on(dev, DL_INT32, 3, me);
    RANK_CHECK(dl_comm_all_reduce(comm, m, DL_OP_MAX, &async, &w) == DL_OK);
    RANK_CHECK(dl_work_wait(w, -1) == DL_OK);
    dl_work_free(w);
    RANK_CHECK(at(m, 0) == n - 1 && at(m, 2) == n + 1);

    /* broadcast in place from the last rank. */
    dl_tensor_t *b = vec_on(dev, DL_INT64, 3, 100.0 * me);
    RANK_CHECK(dl_comm_broadcast(comm, b, n - 1, NULL, NULL) == DL_OK);
    RANK_CHECK(at(b, 0) == 100.0 * (n - 1) && at(b, 2) == 100.0 * (n - 1) + 2);

    /* reduce to rank 0: of two ranks, rank 1 only sends, so it keeps its tensor. */
    dl_tensor_t *r = vec_on(dev, DL_FLOAT64, 2, me + 1);
    RANK_CHECK(dl_comm_reduce(comm, r, 0, DL_OP_PROD, NULL, NULL) == DL_OK);
    if (me == 0)
        RANK_CHECK(at(r, 0) == 2 && at(r, 1) == 6); /* n = 2: 1*2, 2*3 */
    else
        RANK_CHECK(at(r, 0) == me + 1);

    /* all_to_all, equal chunks of 2: out chunk i = in chunk me of rank i. */
    dl_tensor_t *in = vec_on(dev, DL_INT32, 2 * (size_t)n, 100.0 * me);
    dl_tensor_t *out = zeros_on(dev, DL_INT32, 2 * (size_t)n);
    RANK_CHECK(in != NULL && out != NULL);
    RANK_CHECK(dl_comm_all_to_all(comm, out, in, NULL, NULL, NULL, NULL) == DL_OK);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            RANK_CHECK(at(out, (size_t)(2 * i + k)) == 100.0 * i + 2 * me + k);

    /* all_to_all with splits: rank r sends j + 1 elements to rank j. */
    size_t in_splits[8], out_splits[8], in_n = 0;
    for (int j = 0; j < n; j++) {
        in_splits[j] = (size_t)j + 1;
        out_splits[j] = (size_t)me + 1;
        in_n += in_splits[j];
    }
    dl_tensor_t *sin = vec_on(dev, DL_FLOAT32, in_n, 100.0 * me);
    dl_tensor_t *sout = zeros_on(dev, DL_FLOAT32, (size_t)n * ((size_t)me + 1));
    RANK_CHECK(dl_comm_all_to_all(comm, sout, sin, out_splits, in_splits, NULL, NULL) == DL_OK);
    for (int i = 0; i < n; i++)
        for (int k = 0; k <= me; k++)
            RANK_CHECK(at(sout, (size_t)(i * (me + 1) + k)) == 100.0 * i + me * (me + 1) / 2 + k);

    /* Tensor lists on the GPU: all_gather, gather and scatter. */
    dl_tensor_t *list[8] = {0};
    for (int i = 0; i < n; i++)
        RANK_CHECK((list[i] = zeros_on(dev, DL_INT64, 2)) != NULL);
    dl_tensor_t *mine = vec_on(dev, DL_INT64, 2, 10.0 * me);
    RANK_CHECK(dl_comm_all_gather(comm, list, mine, NULL, NULL) == DL_OK);
    for (int i = 0; i < n; i++)
        RANK_CHECK(at(list[i], 0) == 10.0 * i && at(list[i], 1) == 10.0 * i + 1);
    for (int i = 0; i < n; i++)
        dl_tensor_fill(list[i], -1);
    RANK_CHECK(dl_comm_gather(comm, mine, me == 0 ? list : NULL, 0, NULL, NULL) == DL_OK);
    if (me == 0)
        for (int i = 0; i < n; i++)
            RANK_CHECK(at(list[i], 1) == 10.0 * i + 1);
    for (int i = 0; i < n; i++)
        dl_tensor_fill(list[i], 7 * i);
    RANK_CHECK(dl_comm_scatter(comm, mine, me == 1 ? list : NULL, 1, NULL, NULL) == DL_OK);
    RANK_CHECK(at(mine, 0) == 7 * me && at(mine, 1) == 7 * me);

    /* reduce_scatter into a cuda output from a cuda input. */
    dl_tensor_t *rs_in = vec_on(dev, DL_FLOAT32, 2 * (size_t)n, 0);
    dl_tensor_t *rs_out = zeros_on(dev, DL_FLOAT32, 2);
    RANK_CHECK(dl_comm_reduce_scatter(comm, rs_out, rs_in, DL_OP_SUM, NULL, NULL) == DL_OK);
    RANK_CHECK(at(rs_out, 0) == (double)(n * 2 * me) &&
               at(rs_out, 1) == (double)(n * (2 * me + 1)));

    /* Point to point: rank 0 sends a cuda tensor, rank 1 receives into one. */
    dl_tensor_t *p = me == 0 ? vec_on(dev, DL_UINT8, 4, 40) : zeros_on(dev, DL_UINT8, 4);
    if (me == 0) {
        RANK_CHECK(dl_comm_send(comm, p, 1, 3) == DL_OK);
    } else if (me == 1) {
        dl_work_t *rw = NULL;
        RANK_CHECK(dl_comm_irecv(comm, p, 0, 3, &rw) == DL_OK);
        RANK_CHECK(dl_work_wait(rw, -1) == DL_OK);
        dl_work_free(rw);
        RANK_CHECK(at(p, 0) == 40 && at(p, 3) == 43);
    }
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);

    dl_tensor_t *all[] = {t, m, b, r, in, out, sin, sout, mine, rs_in, rs_out, p};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        dl_tensor_free(all[i]);
    for (int i = 0; i < n; i++)
        dl_tensor_free(list[i]);
    return 0;
}

static void test_staged_colls(void **state)
{
    (void)state;
    assert_int_equal(world_run(2, staged_colls, &n_gpus, 120), 0);
}

/* ------------------------------------------------------------------------
 * Tensors on a GPU (this process)
 * ------------------------------------------------------------------------ */

static void test_new_on(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new_on(DL_FLOAT32, 2, shape, gpu(0), &t), DL_OK);
    assert_int_equal(t->device.type, DL_DEVICE_CUDA);
    assert_int_equal(t->device.index, 0);
    assert_int_equal(t->numel, 6);
    assert_non_null(t->alloc);
    for (size_t i = 0; i < 6; i++)
        assert_true(at(t, i) == 0); /* zero-filled */
    dl_tensor_free(t);
    /* Empty: no storage, like on the host. */
    shape[0] = 0;
    assert_int_equal(dl_tensor_new_on(DL_INT8, 2, shape, gpu(0), &t), DL_OK);
    assert_null(t->data);
    dl_tensor_free(t);
    /* A GPU that does not exist. */
    t = (dl_tensor_t *)0x1;
    assert_int_equal(dl_tensor_new_on(DL_FLOAT32, 2, shape, gpu(n_gpus), &t), DL_ERR_INVALID);
    assert_ptr_equal(t, (dl_tensor_t *)0x1);
    assert_true(says(dl_cuda_last_error(), "does not exist"));
}

static void test_to_and_back(void **state)
{
    (void)state;
    for (int dt = 0; dt < DL_DTYPE__COUNT; dt++) {
        dl_tensor_t *h = NULL, *d = NULL, *d2 = NULL, *back = NULL;
        assert_int_equal(dl_tensor_new_1d((dl_dtype_t)dt, 17, NULL, &h), DL_OK);
        dl_tensor_arange(h, dt == DL_BOOL ? 0 : -3, dt == DL_BOOL ? 0.5 : 1);
        assert_int_equal(dl_tensor_to(h, gpu(n_gpus - 1), &d), DL_OK);
        assert_int_equal(d->device.index, n_gpus - 1);
        /* GPU to GPU (the same one, or the first), then back to the host. */
        assert_int_equal(dl_tensor_to(d, gpu(0), &d2), DL_OK);
        assert_ptr_not_equal(d2->data, d->data);
        assert_int_equal(dl_tensor_to(d2, cpu, &back), DL_OK);
        assert_int_equal(back->device.type, DL_DEVICE_CPU);
        assert_memory_equal(back->data, h->data, dl_tensor_nbytes(h));
        dl_tensor_free(h);
        dl_tensor_free(d);
        dl_tensor_free(d2);
        dl_tensor_free(back);
    }
}

static void test_clone_fill(void **state)
{
    (void)state;
    dl_tensor_t *d = vec_on(gpu(0), DL_INT32, 4, 1), *c = NULL;
    assert_non_null(d);
    /* A clone of a GPU tensor stays on its GPU (alloc is for host memory). */
    assert_int_equal(dl_tensor_clone(d, NULL, &c), DL_OK);
    assert_int_equal(c->device.type, DL_DEVICE_CUDA);
    assert_ptr_not_equal(c->data, d->data);
    dl_tensor_fill(d, 9);
    assert_true(at(d, 3) == 9);
    assert_true(at(c, 0) == 1 && at(c, 3) == 4);
    dl_tensor_arange(c, 10, -2);
    assert_true(at(c, 0) == 10 && at(c, 3) == 4);
    dl_tensor_free(d);
    dl_tensor_free(c);
}

static void check_format(dl_tensor_t *t, const char *expected)
{
    assert_non_null(t);
    char *s = dl_tensor_format(t);
    assert_non_null(s);
    assert_string_equal(s, expected);
    free(s);
    dl_tensor_free(t);
}

static void test_format(void **state)
{
    (void)state;
    /* torch.tensor([1., 2.], device='cuda:0') */
    check_format(vec_on(gpu(0), DL_FLOAT32, 2, 1), "tensor([1., 2.], device='cuda:0')");
    /* torch.arange(3, dtype=torch.int32, device='cuda:0') */
    check_format(vec_on(gpu(0), DL_INT32, 3, 0),
                 "tensor([0, 1, 2], device='cuda:0', dtype=torch.int32)");
    /* torch.zeros(0, device='cuda:0') */
    check_format(zeros_on(gpu(0), DL_FLOAT32, 0), "tensor([], device='cuda:0')");
    if (n_gpus > 1)
        /* torch.tensor([5, 6], device='cuda:1') */
        check_format(vec_on(gpu(1), DL_INT64, 2, 5), "tensor([5, 6], device='cuda:1')");
}

static void test_allocator(void **state)
{
    (void)state;
    dl_allocator_t *a = dl_cuda_allocator(0);
    assert_non_null(a);
    assert_ptr_equal(dl_cuda_allocator(0), a);
    void *p = a->alloc(a, 1000), *q = a->alloc(a, 0);
    assert_non_null(p);
    assert_non_null(q);
    assert_ptr_not_equal(p, q);
    assert_int_equal((uintptr_t)p % 256, 0);
    uint8_t src[1000], dst[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (uint8_t)(i * 7);
    assert_int_equal(dl_cuda_copy(p, gpu(0), src, cpu, sizeof(src)), DL_OK);
    assert_int_equal(dl_cuda_copy(dst, cpu, p, gpu(0), sizeof(dst)), DL_OK);
    assert_memory_equal(src, dst, sizeof(src));
    a->free(a, p, 1000);
    a->free(a, q, 0);
    assert_null(dl_cuda_allocator(n_gpus));
    assert_true(says(dl_cuda_last_error(), "does not exist"));
    assert_null(dl_cuda_allocator(-1));
}

/* Page-locked host memory copies to and from the GPU; a range cannot be
 * locked twice, and can again once unlocked. */
static void test_pin(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    uint8_t *host = aligned_alloc(4096, n), *back = malloc(n);
    assert_non_null(host);
    assert_non_null(back);
    for (size_t i = 0; i < n; i++)
        host[i] = (uint8_t)(i * 13);
    assert_int_equal(dl_cuda_pin(host, n), DL_OK);
    assert_int_not_equal(dl_cuda_pin(host, n), DL_OK);
    assert_true(says(dl_cuda_last_error(), "cudaHostRegister"));
    dl_allocator_t *g = dl_cuda_allocator(0);
    void *d = g->alloc(g, n);
    assert_non_null(d);
    assert_int_equal(dl_cuda_copy(d, gpu(0), host, cpu, n), DL_OK);
    assert_int_equal(dl_cuda_copy(back, cpu, d, gpu(0), n), DL_OK);
    assert_memory_equal(host, back, n);
    dl_cuda_unpin(host);
    assert_int_equal(dl_cuda_pin(host, n), DL_OK);
    dl_cuda_unpin(host);
    g->free(g, d, n);
    free(host);
    free(back);
}

/* An arena locks its pages as far as staging uses them, from its first
 * page (a region that starts mid-page included), growing in doubling steps
 * and never past its last page; destroyed, it unlocks them. A buffer that
 * spans the end of an earlier step copies (CUDA fails a copy across two
 * registrations, so each step registers the whole range again). */
static void test_arena_pin(void **state)
{
    (void)state;
    const size_t mib = 1 << 20, n = 16 * mib;
    uint8_t *host = aligned_alloc(4096, n);
    assert_non_null(host);
    dl_arena_t a;
    assert_int_equal(dl__arena_init(&a, host + 64, n - 4096), DL_OK);
    dl__arena_pin(&a, host + 64, 100);
    assert_ptr_equal(a.pinned, host);
    assert_true(a.pinned_end == (uintptr_t)host + 4 * mib);
    dl__arena_pin(&a, host + mib, mib); /* inside: nothing to do */
    assert_true(a.pinned_end == (uintptr_t)host + 4 * mib);
    dl__arena_pin(&a, host + 3 * mib, 2 * mib); /* doubles */
    assert_ptr_equal(a.pinned, host);
    assert_true(a.pinned_end == (uintptr_t)host + 8 * mib);

    /* [3 MiB, 5 MiB) crosses the first step's end. */
    dl_allocator_t *g = dl_cuda_allocator(0);
    size_t m = 2 * mib;
    uint8_t *src = malloc(m);
    void *d = g->alloc(g, m);
    assert_non_null(src);
    assert_non_null(d);
    for (size_t i = 0; i < m; i++)
        src[i] = (uint8_t)(i * 5);
    assert_int_equal(dl_cuda_copy(d, gpu(0), src, cpu, m), DL_OK);
    assert_int_equal(dl_cuda_copy(host + 3 * mib, cpu, d, gpu(0), m), DL_OK);
    assert_memory_equal(host + 3 * mib, src, m);
    assert_int_equal(dl_cuda_copy(d, gpu(0), host + 3 * mib, cpu, m), DL_OK);

    dl__arena_pin(&a, host + 8 * mib, 7 * mib); /* to the end, page-rounded */
    assert_true(a.pinned_end == (uintptr_t)host + n);
    dl__arena_pin(&a, host, 10); /* not the arena's: ignored */
    assert_true(a.pinned_end == (uintptr_t)host + n);
    dl__arena_destroy(&a);
    assert_null(a.pinned);
    assert_int_equal(dl_cuda_pin(host, n), DL_OK); /* the arena let go */
    dl_cuda_unpin(host);
    g->free(g, d, m);
    free(src);
    free(host);
}

int main(void)
{
    char why[256] = "";
    n_gpus = world_gpu_count(why, sizeof(why));
    if (n_gpus == 0) {
        const struct CMUnitTest no_gpu[] = {
            cmocka_unit_test(test_no_gpu_count),
            cmocka_unit_test(test_no_gpu_tensors),
            cmocka_unit_test(test_no_gpu_staging),
            cmocka_unit_test(test_no_gpu_pin),
        };
        if (cmocka_run_group_tests_name("cuda without a GPU", no_gpu, NULL, NULL) != 0)
            return 1;
        printf("SKIP: the GPU tests need a CUDA device: %s\n", why);
        return 77;
    }
    /* Forked ranks first: this process has not used CUDA yet. */
    const struct CMUnitTest ranks[] = {
        cmocka_unit_test(test_staged_colls),
    };
    const struct CMUnitTest tensors[] = {
        cmocka_unit_test(test_new_on),     cmocka_unit_test(test_to_and_back),
        cmocka_unit_test(test_clone_fill), cmocka_unit_test(test_format),
        cmocka_unit_test(test_allocator),  cmocka_unit_test(test_pin),
        cmocka_unit_test(test_arena_pin),
    };
    int failed = cmocka_run_group_tests_name("cuda ranks", ranks, NULL, NULL);
    failed += cmocka_run_group_tests_name("cuda tensors", tensors, NULL, NULL);
    return failed != 0;
}
