/* Tensor allocation, ownership, cloning, arange and fill. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/tensor.h"

/* An allocator that counts what passes through it and can be told to fail,
 * standing in for a communicator's shared-memory arena. */
typedef struct {
    dl_allocator_t base;
    int allocs;
    int frees;
    size_t live_bytes;
    bool fail;
} counting_alloc_t;

static void *counting_alloc(dl_allocator_t *self, size_t nbytes)
{
    counting_alloc_t *c = (counting_alloc_t *)self;
    if (c->fail)
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 1) != 0)
        return NULL;
    /* Dirty memory, so that the zero-fill of dl_tensor_new is tested. */
    memset(p, 0x5a, nbytes);
    c->allocs++;
    c->live_bytes += nbytes;
    return p;
}

static void counting_free(dl_allocator_t *self, void *ptr, size_t nbytes)
{
    counting_alloc_t *c = (counting_alloc_t *)self;
    c->frees++;
    c->live_bytes -= nbytes;
    free(ptr);
}

static counting_alloc_t counting(void)
{
    return (counting_alloc_t){.base = {counting_alloc, counting_free}};
}

static void test_new_zero_filled_aligned(void **state)
{
    (void)state;
    int64_t shape[3] = {3, 5, 7};
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(DL_FLOAT64, 3, shape, NULL, &t), DL_OK);
    assert_non_null(t);
    assert_int_equal(t->dtype, DL_FLOAT64);
    assert_int_equal(t->ndim, 3);
    assert_int_equal(t->shape[0], 3);
    assert_int_equal(t->shape[2], 7);
    assert_int_equal(t->numel, 105);
    assert_int_equal(dl_tensor_nbytes(t), 105 * 8);
    assert_int_equal(t->device.type, DL_DEVICE_CPU);
    assert_ptr_equal(t->alloc, dl_heap_allocator());
    assert_int_equal((uintptr_t)t->data % 64, 0);
    for (size_t i = 0; i < t->numel; i++)
        assert_true(((double *)t->data)[i] == 0.0);
    dl_tensor_free(t);
}

static void test_scalar_and_1d(void **state)
{
    (void)state;
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(DL_INT32, 0, NULL, NULL, &t), DL_OK);
    assert_int_equal(t->ndim, 0);
    assert_int_equal(t->numel, 1);
    assert_non_null(t->data);
    dl_tensor_free(t);

    assert_int_equal(dl_tensor_new_1d(DL_BFLOAT16, 33, NULL, &t), DL_OK);
    assert_int_equal(t->ndim, 1);
    assert_int_equal(t->shape[0], 33);
    assert_int_equal(dl_tensor_nbytes(t), 66);
    dl_tensor_free(t);
}

static void test_invalid_leaves_output(void **state)
{
    (void)state;
    dl_tensor_t *sentinel = (dl_tensor_t *)(uintptr_t)0x1234;
    dl_tensor_t *t = sentinel;
    int64_t shape[DL_MAX_DIMS + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(dl_tensor_new(DL_FLOAT32, DL_MAX_DIMS + 1, shape, NULL, &t), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_new(DL_FLOAT32, -1, shape, NULL, &t), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_new(DL_DTYPE__COUNT, 1, shape, NULL, &t), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_new(DL_FLOAT32, 1, NULL, NULL, &t), DL_ERR_INVALID);
    int64_t negative[2] = {2, -1};
    assert_int_equal(dl_tensor_new(DL_FLOAT32, 2, negative, NULL, &t), DL_ERR_INVALID);
    /* A byte count that does not fit size_t is refused before allocating. */
    int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 30};
    assert_int_equal(dl_tensor_new(DL_FLOAT32, 2, huge, NULL, &t), DL_ERR_TOO_BIG);
    assert_ptr_equal(t, sentinel);
    assert_int_equal(dl_tensor_new(DL_FLOAT32, 1, shape, NULL, NULL), DL_ERR_INVALID);
}

static void test_custom_allocator(void **state)
{
    (void)state;
    counting_alloc_t c = counting();
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new_1d(DL_INT64, 100, &c.base, &t), DL_OK);
    assert_ptr_equal(t->alloc, &c.base);
    assert_int_equal(c.allocs, 1);
    assert_int_equal(c.live_bytes, 800);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(((int64_t *)t->data)[i], 0);
    dl_tensor_free(t);
    assert_int_equal(c.frees, 1);
    assert_int_equal(c.live_bytes, 0);

    /* A failing allocator gives DL_ERR_NOMEM and leaves *t_p alone. */
    c.fail = true;
    t = NULL;
    assert_int_equal(dl_tensor_new_1d(DL_INT64, 100, &c.base, &t), DL_ERR_NOMEM);
    assert_null(t);
}

static void test_empty_owns_nothing(void **state)
{
    (void)state;
    counting_alloc_t c = counting();
    int64_t shape[2] = {0, 3};
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(DL_FLOAT32, 2, shape, &c.base, &t), DL_OK);
    assert_int_equal(t->numel, 0);
    assert_int_equal(dl_tensor_nbytes(t), 0);
    assert_int_equal(c.allocs, 0);
    dl_tensor_arange(t, 0, 1);
    dl_tensor_fill(t, 1);
    dl_tensor_free(t);
    assert_int_equal(c.frees, 0);
}

static void test_borrowed_data_not_freed(void **state)
{
    (void)state;
    /* A tensor whose alloc is NULL borrows its data: free leaves it. */
    static float data[4] = {1, 2, 3, 4};
    dl_tensor_t *t = malloc(sizeof(*t));
    assert_non_null(t);
    *t = (dl_tensor_t){.dtype = DL_FLOAT32, .ndim = 1, .shape = {4}, .numel = 4, .data = data};
    dl_tensor_free(t);
    assert_true(data[3] == 4.0f);
    dl_tensor_free(NULL);
}

static void test_clone(void **state)
{
    (void)state;
    counting_alloc_t c = counting();
    int64_t shape[2] = {4, 5};
    dl_tensor_t *src = NULL, *dst = NULL;
    assert_int_equal(dl_tensor_new(DL_INT32, 2, shape, NULL, &src), DL_OK);
    dl_tensor_arange(src, 10, 3);
    assert_int_equal(dl_tensor_clone(src, &c.base, &dst), DL_OK);
    assert_ptr_equal(dst->alloc, &c.base);
    assert_int_equal(dst->ndim, 2);
    assert_int_equal(dst->shape[1], 5);
    /* (A cuda tensor is cloned on its GPU: test_cuda.c.) */
    assert_int_equal(dst->device.type, DL_DEVICE_CPU);
    assert_ptr_not_equal(dst->data, src->data);
    assert_memory_equal(dst->data, src->data, dl_tensor_nbytes(src));
    /* The copy is independent. */
    ((int32_t *)src->data)[0] = -1;
    assert_int_equal(((int32_t *)dst->data)[0], 10);
    dl_tensor_free(src);
    dl_tensor_free(dst);
    assert_int_equal(c.live_bytes, 0);
    assert_int_equal(dl_tensor_clone(NULL, NULL, &dst), DL_ERR_INVALID);
}

static void test_arange(void **state)
{
    (void)state;
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new_1d(DL_FLOAT32, 5, NULL, &t), DL_OK);
    dl_tensor_arange(t, 1.5, -0.5);
    static const float want[5] = {1.5f, 1.0f, 0.5f, 0.0f, -0.5f};
    assert_memory_equal(t->data, want, sizeof(want));
    dl_tensor_free(t);

    assert_int_equal(dl_tensor_new_1d(DL_UINT8, 300, NULL, &t), DL_OK);
    dl_tensor_arange(t, 0, 1);
    assert_int_equal(((uint8_t *)t->data)[255], 255);
    assert_int_equal(((uint8_t *)t->data)[256], 0); /* wraps like a uint8 cast */
    dl_tensor_free(t);

    assert_int_equal(dl_tensor_new_1d(DL_FLOAT16, 4, NULL, &t), DL_OK);
    dl_tensor_arange(t, 0, 0.25);
    assert_int_equal(((uint16_t *)t->data)[1], 0x3400); /* 0.25 */
    assert_int_equal(((uint16_t *)t->data)[3], 0x3a00); /* 0.75 */
    dl_tensor_free(t);
}

static void test_fill(void **state)
{
    (void)state;
    /* Odd sizes exercise the last, partial doubling step. */
    static const size_t sizes[] = {1, 2, 3, 7, 64, 1001};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        for (int dt = 0; dt < DL_DTYPE__COUNT; dt++) {
            dl_tensor_t *t = NULL;
            assert_int_equal(dl_tensor_new_1d((dl_dtype_t)dt, sizes[k], NULL, &t), DL_OK);
            dl_tensor_fill(t, 3.0);
            double want = dt == DL_BOOL ? 1.0 : 3.0;
            for (size_t i = 0; i < t->numel; i++)
                assert_true(dl_dtype_get((dl_dtype_t)dt, t->data, i) == want);
            dl_tensor_free(t);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_zero_filled_aligned),
        cmocka_unit_test(test_scalar_and_1d),
        cmocka_unit_test(test_invalid_leaves_output),
        cmocka_unit_test(test_custom_allocator),
        cmocka_unit_test(test_empty_owns_nothing),
        cmocka_unit_test(test_borrowed_data_not_freed),
        cmocka_unit_test(test_clone),
        cmocka_unit_test(test_arange),
        cmocka_unit_test(test_fill),
    };
    return cmocka_run_group_tests_name("tensor_tensor", tests, NULL, NULL);
}
