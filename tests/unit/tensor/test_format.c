/* dl_tensor_format against the exact strings torch 1.13 prints for repr(t).
 *
 * Every expected string below was printed by torch itself (the Python
 * expression is in the comment above it), so a difference here is a
 * difference from torch. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/tensor.h"

/* Builds a tensor of the given shape from doubles (NULL values: arange). */
static dl_tensor_t *make(dl_dtype_t dt, int ndim, const int64_t *shape, const double *values)
{
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(dt, ndim, shape, NULL, &t), DL_OK);
    if (values == NULL)
        dl_tensor_arange(t, 0, 1);
    else
        for (size_t i = 0; i < t->numel; i++)
            dl_dtype_set(dt, t->data, i, values[i]);
    return t;
}

/* Formats t, compares with torch's text, and frees both. */
static void check(dl_tensor_t *t, const char *expected)
{
    char *s = dl_tensor_format(t);
    assert_non_null(s);
    assert_string_equal(s, expected);
    free(s);
    dl_tensor_free(t);
}

static void check_1d(dl_dtype_t dt, size_t n, const double *values, const char *expected)
{
    int64_t shape[1] = {(int64_t)n};
    check(make(dt, 1, shape, values), expected);
}

/* ------------------------------------------------------------------------
 * Notation chosen by the formatter
 * ------------------------------------------------------------------------ */

static void test_int64(void **state)
{
    (void)state;
    /* torch.tensor([1, 2]) */
    check_1d(DL_INT64, 2, (double[]){1, 2}, "tensor([1, 2])");
    /* torch.tensor([-1, 20, -300]) */
    check_1d(DL_INT64, 3, (double[]){-1, 20, -300}, "tensor([  -1,   20, -300])");
}

static void test_float_int_mode(void **state)
{
    (void)state;
    /* torch.tensor([1., 2.]) */
    check_1d(DL_FLOAT32, 2, (double[]){1, 2}, "tensor([1., 2.])");
}

static void test_float_fixed(void **state)
{
    (void)state;
    /* torch.tensor([0.5, 1.25]) */
    check_1d(DL_FLOAT32, 2, (double[]){0.5, 1.25}, "tensor([0.5000, 1.2500])");
    /* torch.tensor([-1.5, 2.25, -3.]) */
    check_1d(DL_FLOAT32, 3, (double[]){-1.5, 2.25, -3}, "tensor([-1.5000,  2.2500, -3.0000])");
    /* torch.tensor([0.1, 0.2], dtype=torch.float64) */
    check_1d(DL_FLOAT64, 2, (double[]){0.1, 0.2}, "tensor([0.1000, 0.2000], dtype=torch.float64)");
}

static void test_scalar(void **state)
{
    (void)state;
    /* torch.tensor(2.) */
    check(make(DL_FLOAT32, 0, NULL, (double[]){2}), "tensor(2.)");
    /* torch.tensor(7, dtype=torch.int32) */
    check(make(DL_INT32, 0, NULL, (double[]){7}), "tensor(7, dtype=torch.int32)");
    /* torch.tensor(float('nan')) */
    check(make(DL_FLOAT32, 0, NULL, (double[]){NAN}), "tensor(nan)");
}

static void test_sci_small(void **state)
{
    (void)state;
    /* torch.tensor([1e-5, 1.]) */
    check_1d(DL_FLOAT32, 2, (double[]){1e-5, 1}, "tensor([1.0000e-05, 1.0000e+00])");
}

static void test_sci_big(void **state)
{
    (void)state;
    /* torch.tensor([1., 1e9]) */
    check_1d(DL_FLOAT32, 2, (double[]){1, 1e9}, "tensor([1.0000e+00, 1.0000e+09])");
    /* torch.tensor([1., 1e8]): integral, but the values span 8 decades. */
    check_1d(DL_FLOAT32, 2, (double[]){1, 1e8}, "tensor([1.0000e+00, 1.0000e+08])");
}

static void test_bool(void **state)
{
    (void)state;
    /* torch.tensor([True, False]) */
    check_1d(DL_BOOL, 2, (double[]){1, 0}, "tensor([ True, False])");
    /* torch.tensor([[True, False], [False, True]]) */
    int64_t shape[2] = {2, 2};
    check(make(DL_BOOL, 2, shape, (double[]){1, 0, 0, 1}), "tensor([[ True, False],\n"
                                                           "        [False,  True]])");
}

/* ------------------------------------------------------------------------
 * Line wrapping and nesting
 * ------------------------------------------------------------------------ */

static void test_wrap_lines(void **state)
{
    (void)state;
    /* torch.arange(30.) */
    check_1d(DL_FLOAT32, 30, NULL,
             "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
             "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
             "        28., 29.])");
}

static void test_2d(void **state)
{
    (void)state;
    /* torch.ones(2, 3) */
    int64_t shape[2] = {2, 3};
    dl_tensor_t *t = make(DL_FLOAT32, 2, shape, NULL);
    dl_tensor_fill(t, 1);
    check(t, "tensor([[1., 1., 1.],\n"
             "        [1., 1., 1.]])");
}

static void test_3d_blank_line(void **state)
{
    (void)state;
    /* torch.arange(12.).reshape(2, 2, 3) */
    int64_t shape[3] = {2, 2, 3};
    check(make(DL_FLOAT32, 3, shape, NULL), "tensor([[[ 0.,  1.,  2.],\n"
                                            "         [ 3.,  4.,  5.]],\n"
                                            "\n"
                                            "        [[ 6.,  7.,  8.],\n"
                                            "         [ 9., 10., 11.]]])");
}

static void test_4d(void **state)
{
    (void)state;
    /* torch.arange(16.).reshape(2, 2, 2, 2) */
    int64_t shape[4] = {2, 2, 2, 2};
    check(make(DL_FLOAT32, 4, shape, NULL), "tensor([[[[ 0.,  1.],\n"
                                            "          [ 2.,  3.]],\n"
                                            "\n"
                                            "         [[ 4.,  5.],\n"
                                            "          [ 6.,  7.]]],\n"
                                            "\n"
                                            "\n"
                                            "        [[[ 8.,  9.],\n"
                                            "          [10., 11.]],\n"
                                            "\n"
                                            "         [[12., 13.],\n"
                                            "          [14., 15.]]]])");
}

/* ------------------------------------------------------------------------
 * Summarisation above 1000 elements
 * ------------------------------------------------------------------------ */

static void test_summary_1d(void **state)
{
    (void)state;
    /* torch.arange(2000): the width comes from the shown elements only. */
    check_1d(DL_INT64, 2000, NULL, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
    /* torch.arange(1000): exactly the threshold, so printed in full. */
    char *s;
    int64_t shape[1] = {1000};
    dl_tensor_t *t = make(DL_INT64, 1, shape, NULL);
    s = dl_tensor_format(t);
    assert_non_null(s);
    assert_null(strstr(s, "..."));
    assert_non_null(strstr(s, "997, 998, 999])"));
    free(s);
    dl_tensor_free(t);
}

static void test_summary_2d(void **state)
{
    (void)state;
    /* torch.arange(10000).reshape(100, 100) */
    int64_t shape[2] = {100, 100};
    check(make(DL_INT64, 2, shape, NULL), "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n"
                                          "        [ 100,  101,  102,  ...,  197,  198,  199],\n"
                                          "        [ 200,  201,  202,  ...,  297,  298,  299],\n"
                                          "        ...,\n"
                                          "        [9700, 9701, 9702,  ..., 9797, 9798, 9799],\n"
                                          "        [9800, 9801, 9802,  ..., 9897, 9898, 9899],\n"
                                          "        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])");
}

static void test_summary_half_wraps(void **state)
{
    (void)state;
    /* torch.arange(2000, dtype=torch.float16) / 4: the shown values span
     * more than three decades, so sci mode; the row wraps, then the dtype. */
    int64_t shape[1] = {2000};
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(DL_FLOAT16, 1, shape, NULL, &t), DL_OK);
    dl_tensor_arange(t, 0, 0.25);
    check(t, "tensor([0.0000e+00, 2.5000e-01, 5.0000e-01,  ..., 4.9925e+02, 4.9950e+02,\n"
             "        4.9975e+02], dtype=torch.float16)");
}

/* ------------------------------------------------------------------------
 * Special values
 * ------------------------------------------------------------------------ */

static void test_nan_inf(void **state)
{
    (void)state;
    /* torch.tensor([nan, 1., inf, -inf]): int mode, and no point after the
     * non-finite values. */
    check_1d(DL_FLOAT32, 4, (double[]){NAN, 1, INFINITY, -INFINITY},
             "tensor([nan, 1., inf, -inf])");
    /* torch.tensor([nan, 1.5, -inf]): padded to the finite values' width. */
    check_1d(DL_FLOAT32, 3, (double[]){NAN, 1.5, -INFINITY}, "tensor([   nan, 1.5000,   -inf])");
    /* torch.tensor([nan]) */
    check_1d(DL_FLOAT32, 1, (double[]){NAN}, "tensor([nan])");
    /* A NaN with its sign bit set still prints as "nan", as Python does. */
    check_1d(DL_FLOAT64, 2, (double[]){-NAN, 2}, "tensor([nan, 2.], dtype=torch.float64)");
}

static void test_negative_zero(void **state)
{
    (void)state;
    /* torch.tensor([-0.]) */
    check_1d(DL_FLOAT32, 1, (double[]){-0.0}, "tensor([-0.])");
    /* torch.tensor([0., -0., 1.5]): zeros do not widen the column. */
    check_1d(DL_FLOAT32, 3, (double[]){0.0, -0.0, 1.5}, "tensor([0.0000, -0.0000, 1.5000])");
}

/* ------------------------------------------------------------------------
 * dtypes and suffixes
 * ------------------------------------------------------------------------ */

static void test_int32_suffix(void **state)
{
    (void)state;
    /* torch.tensor([1, 2], dtype=torch.int32) */
    check_1d(DL_INT32, 2, (double[]){1, 2}, "tensor([1, 2], dtype=torch.int32)");
}

static void test_half_types(void **state)
{
    (void)state;
    /* torch.tensor([1.5, -2., 0.1], dtype=torch.float16) */
    check_1d(DL_FLOAT16, 3, (double[]){1.5, -2, 0.1},
             "tensor([ 1.5000, -2.0000,  0.1000], dtype=torch.float16)");
    /* torch.tensor([1.5, -2., 0.1], dtype=torch.bfloat16): 0.1 is 0.10009765625. */
    check_1d(DL_BFLOAT16, 3, (double[]){1.5, -2, 0.1},
             "tensor([ 1.5000, -2.0000,  0.1001], dtype=torch.bfloat16)");
}

static void test_int8_uint8(void **state)
{
    (void)state;
    /* torch.tensor([-128, 0, 127], dtype=torch.int8) */
    check_1d(DL_INT8, 3, (double[]){-128, 0, 127}, "tensor([-128,    0,  127], dtype=torch.int8)");
    /* torch.tensor([0, 255], dtype=torch.uint8) */
    check_1d(DL_UINT8, 2, (double[]){0, 255}, "tensor([  0, 255], dtype=torch.uint8)");
}

static void test_empty(void **state)
{
    (void)state;
    /* torch.tensor([]) */
    check_1d(DL_FLOAT32, 0, NULL, "tensor([])");
    /* torch.zeros(0, 3) */
    int64_t shape[2] = {0, 3};
    check(make(DL_FLOAT32, 2, shape, NULL), "tensor([], size=(0, 3))");
    /* torch.zeros(0, dtype=torch.int64): int64 is named when nothing shows it. */
    check_1d(DL_INT64, 0, NULL, "tensor([], dtype=torch.int64)");
    /* torch.zeros(2, 0, 3, dtype=torch.bool) */
    int64_t shape3[3] = {2, 0, 3};
    check(make(DL_BOOL, 3, shape3, NULL), "tensor([], size=(2, 0, 3), dtype=torch.bool)");
}

static void test_suffix_wraps(void **state)
{
    (void)state;
    /* torch.arange(11, dtype=torch.int32) * 10000000: ", dtype=torch.int32)"
     * would pass column 80 after the last row, so it goes on a line of its
     * own, indented to the opening parenthesis. */
    int64_t shape[1] = {11};
    dl_tensor_t *t = make(DL_INT32, 1, shape, NULL);
    for (size_t i = 0; i < t->numel; i++)
        ((int32_t *)t->data)[i] *= 10000000;
    check(t, "tensor([        0,  10000000,  20000000,  30000000,  40000000,  50000000,\n"
             "         60000000,  70000000,  80000000,  90000000, 100000000],\n"
             "       dtype=torch.int32)");
}

/* Formats host data as if it lived on dev (a cuda tensor's storage is GPU
 * memory, which dl_tensor_format copies to the host first: test_cuda.c). */
static void check_on(dl_tensor_t *t, dl_device_t dev, const char *expected)
{
    char *s = dl_tensor_format_raw(t->dtype, t->ndim, t->shape, dev, t->data);
    assert_non_null(s);
    assert_string_equal(s, expected);
    free(s);
    dl_tensor_free(t);
}

static void test_cuda_device(void **state)
{
    (void)state;
    /* torch.tensor([1., 2.], device='cuda:0') and, with a dtype, the device
     * comes first: torch.tensor([1, 2], dtype=torch.int32, device='cuda:1'). */
    dl_tensor_t *t = make(DL_FLOAT32, 1, (int64_t[]){2}, (double[]){1, 2});
    check_on(t, (dl_device_t){DL_DEVICE_CUDA, 0}, "tensor([1., 2.], device='cuda:0')");
    t = make(DL_INT32, 1, (int64_t[]){2}, (double[]){1, 2});
    check_on(t, (dl_device_t){DL_DEVICE_CUDA, 1},
             "tensor([1, 2], device='cuda:1', dtype=torch.int32)");
    /* torch.tensor([], device='cuda:0', dtype=torch.float16) */
    t = make(DL_FLOAT16, 1, (int64_t[]){0}, NULL);
    check_on(t, (dl_device_t){DL_DEVICE_CUDA, 0},
             "tensor([], device='cuda:0', dtype=torch.float16)");
}

static void test_raw_and_invalid(void **state)
{
    (void)state;
    int32_t data[3] = {4, 5, 6};
    int64_t shape[1] = {3};
    dl_device_t cpu = {DL_DEVICE_CPU, 0};
    char *s = dl_tensor_format_raw(DL_INT32, 1, shape, cpu, data);
    assert_non_null(s);
    assert_string_equal(s, "tensor([4, 5, 6], dtype=torch.int32)");
    free(s);
    assert_null(dl_tensor_format(NULL));
    assert_null(dl_tensor_format_raw(DL_DTYPE__COUNT, 1, shape, cpu, data));
    assert_null(dl_tensor_format_raw(DL_INT32, DL_MAX_DIMS + 1, shape, cpu, data));
    assert_null(dl_tensor_format_raw(DL_INT32, 1, shape, cpu, NULL));
}

/* ------------------------------------------------------------------------
 * Printing from the shown elements only
 * ------------------------------------------------------------------------ */

/* The shown block of t prints exactly as t does. */
static void check_shown_same(const dl_tensor_t *t)
{
    int64_t shown[DL_MAX_DIMS];
    size_t n = dl_tensor_shown_shape(t->ndim, t->shape, shown);
    void *block = malloc(n * dl_dtype_size(t->dtype) + 1);
    assert_non_null(block);
    assert_int_equal(dl_tensor_copy_shown(t, block), DL_OK);
    char *want = dl_tensor_format(t);
    char *got = dl_tensor_format_shown(t->dtype, t->ndim, t->shape, t->device, block);
    assert_non_null(want);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(want);
    free(got);
    free(block);
}

static void test_shown_shape(void **state)
{
    (void)state;
    int64_t shown[DL_MAX_DIMS];
    /* At the threshold nothing is cut; one more element and long dims are. */
    assert_int_equal(dl_tensor_shown_shape(1, (int64_t[]){1000}, shown), 1000);
    assert_int_equal(shown[0], 1000);
    assert_int_equal(dl_tensor_shown_shape(1, (int64_t[]){1001}, shown), 6);
    assert_int_equal(shown[0], 6);
    assert_int_equal(dl_tensor_shown_shape(1, (int64_t[]){50000000}, shown), 6);
    /* Short dimensions keep their length. */
    assert_int_equal(dl_tensor_shown_shape(3, (int64_t[]){4, 1000, 6}, shown), 4 * 6 * 6);
    assert_int_equal(shown[0], 4);
    assert_int_equal(shown[1], 6);
    assert_int_equal(shown[2], 6);
    assert_int_equal(dl_tensor_shown_shape(0, NULL, shown), 1);
    assert_int_equal(dl_tensor_shown_shape(2, (int64_t[]){0, 5000}, shown), 0);
    assert_int_equal(dl_tensor_shown_shape(1, (int64_t[]){-1}, shown), 0);
}

static void test_shown_prints_the_same(void **state)
{
    (void)state;
    static const int64_t shapes[][5] = {
        {1, 5},          {1, 1000},   {1, 1001},      {1, 123457},     {2, 2, 501},
        {2, 1000, 1000}, {2, 7, 150}, {3, 4, 300, 5}, {3, 12, 12, 12}, {4, 2, 3, 7, 30},
    };
    const dl_dtype_t dts[] = {DL_INT64, DL_FLOAT32, DL_FLOAT16, DL_INT8, DL_BOOL};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        for (size_t j = 0; j < sizeof(dts) / sizeof(dts[0]); j++) {
            dl_tensor_t *t = make(dts[j], (int)shapes[i][0], &shapes[i][1], NULL);
            check_shown_same(t);
            dl_tensor_free(t);
        }
    }
    /* Scalars and empty tensors. */
    dl_tensor_t *t = make(DL_FLOAT64, 0, NULL, (double[]){2.5});
    check_shown_same(t);
    dl_tensor_free(t);
    t = make(DL_FLOAT32, 2, (int64_t[]){0, 3000}, NULL);
    check_shown_same(t);
    dl_tensor_free(t);
}

/* The formatter's width and notation come from the shown elements alone: a
 * huge value that is cut out changes nothing, in either form. */
static void test_shown_width_from_edges(void **state)
{
    (void)state;
    dl_tensor_t *t = make(DL_FLOAT32, 1, (int64_t[]){2000}, NULL);
    dl_dtype_set(DL_FLOAT32, t->data, 1000, 1e30);
    dl_dtype_set(DL_FLOAT32, t->data, 1, 0.5);
    check_shown_same(t);
    char *s = dl_tensor_format(t);
    assert_string_equal(
        s, "tensor([0.0000e+00, 5.0000e-01, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
           "        1.9990e+03])");
    free(s);
    dl_tensor_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int64),
        cmocka_unit_test(test_float_int_mode),
        cmocka_unit_test(test_float_fixed),
        cmocka_unit_test(test_scalar),
        cmocka_unit_test(test_sci_small),
        cmocka_unit_test(test_sci_big),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_wrap_lines),
        cmocka_unit_test(test_2d),
        cmocka_unit_test(test_3d_blank_line),
        cmocka_unit_test(test_4d),
        cmocka_unit_test(test_summary_1d),
        cmocka_unit_test(test_summary_2d),
        cmocka_unit_test(test_summary_half_wraps),
        cmocka_unit_test(test_nan_inf),
        cmocka_unit_test(test_negative_zero),
        cmocka_unit_test(test_int32_suffix),
        cmocka_unit_test(test_half_types),
        cmocka_unit_test(test_int8_uint8),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_suffix_wraps),
        cmocka_unit_test(test_cuda_device),
        cmocka_unit_test(test_raw_and_invalid),
        cmocka_unit_test(test_shown_shape),
        cmocka_unit_test(test_shown_prints_the_same),
        cmocka_unit_test(test_shown_width_from_edges),
    };
    return cmocka_run_group_tests_name("tensor_format", tests, NULL, NULL);
}
