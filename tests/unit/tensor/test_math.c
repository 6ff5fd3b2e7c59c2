/* Tensor maths (distlab/tensor_math.h): reductions and their dtypes,
 * element-wise functions, matmul, transpose, cat and narrow, sort, topk,
 * cumsum, norm and softmax, checked
 * against the values and printing torch gives. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/tensor.h"
#include "distlab/tensor_math.h"

/* A tensor of the given dtype and shape holding vals (row-major). */
static dl_tensor_t *make(dl_dtype_t dt, int ndim, const int64_t *shape, const double *vals)
{
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(dt, ndim, shape, NULL, &t), DL_OK);
    for (size_t i = 0; i < t->numel; i++)
        dl_dtype_set(dt, t->data, i, vals[i]);
    return t;
}

static dl_tensor_t *arange(dl_dtype_t dt, int ndim, const int64_t *shape)
{
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(dt, ndim, shape, NULL, &t), DL_OK);
    dl_tensor_arange(t, 0, 1);
    return t;
}

/* Frees t and checks that it prints as torch prints it. */
static void check_print(dl_tensor_t *t, const char *want)
{
    assert_non_null(t);
    char *s = dl_tensor_format(t);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
    dl_tensor_free(t);
}

static void test_reduction_dtypes(void **state)
{
    (void)state;
    dl_dtype_t dt;
    assert_int_equal(dl_reduction_dtype(DL_RED_SUM, DL_INT32, &dt), DL_OK);
    assert_int_equal(dt, DL_INT64);
    assert_int_equal(dl_reduction_dtype(DL_RED_SUM, DL_BOOL, &dt), DL_OK);
    assert_int_equal(dt, DL_INT64);
    assert_int_equal(dl_reduction_dtype(DL_RED_SUM, DL_FLOAT16, &dt), DL_OK);
    assert_int_equal(dt, DL_FLOAT16);
    assert_int_equal(dl_reduction_dtype(DL_RED_MEAN, DL_INT64, &dt), DL_ERR_INVALID);
    assert_int_equal(dl_reduction_dtype(DL_RED_MEAN, DL_BOOL, &dt), DL_ERR_INVALID);
    assert_int_equal(dl_reduction_dtype(DL_RED_MAX, DL_BOOL, &dt), DL_OK);
    assert_int_equal(dt, DL_BOOL);
    assert_int_equal(dl_reduction_dtype(DL_RED_MIN, DL_UINT8, &dt), DL_OK);
    assert_int_equal(dt, DL_UINT8);
}

static void test_reduce_all(void **state)
{
    (void)state;
    int64_t six[1] = {6};
    dl_tensor_t *t = arange(DL_INT64, 1, six), *out = NULL;
    assert_int_equal(dl_tensor_reduce_all(DL_RED_SUM, t, NULL, &out), DL_OK);
    check_print(out, "tensor(15)");
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MAX, t, NULL, &out), DL_OK);
    check_print(out, "tensor(5)");
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MIN, t, NULL, &out), DL_OK);
    check_print(out, "tensor(0)");
    out = NULL;
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MEAN, t, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(t);

    t = arange(DL_FLOAT32, 1, six);
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MEAN, t, NULL, &out), DL_OK);
    check_print(out, "tensor(2.5000)");
    dl_tensor_free(t);

    /* uint8 and int32 sum to int64 without wrapping at their own width. */
    int64_t two[1] = {2};
    t = make(DL_UINT8, 1, two, (double[]){1, 200});
    assert_int_equal(dl_tensor_reduce_all(DL_RED_SUM, t, NULL, &out), DL_OK);
    check_print(out, "tensor(201)");
    dl_tensor_free(t);
    t = make(DL_FLOAT16, 1, two, (double[]){1, 2});
    assert_int_equal(dl_tensor_reduce_all(DL_RED_SUM, t, NULL, &out), DL_OK);
    check_print(out, "tensor(3., dtype=torch.float16)");
    dl_tensor_free(t);

    /* an integer is a float32 before the function, as torch casts it:
     * 123456789 is 123456792 there */
    int64_t one[1] = {1};
    t = make(DL_INT64, 1, one, (double[]){123456789});
    assert_int_equal(dl_tensor_unary(DL_UNARY_SIN, t, NULL, &out), DL_OK);
    check_print(out, "tensor([-0.9604])");
    dl_tensor_free(t);

    int64_t three[1] = {3};
    t = make(DL_BOOL, 1, three, (double[]){1, 0, 1});
    assert_int_equal(dl_tensor_reduce_all(DL_RED_SUM, t, NULL, &out), DL_OK);
    check_print(out, "tensor(2)");
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MAX, t, NULL, &out), DL_OK);
    check_print(out, "tensor(True)");
    dl_tensor_free(t);

    /* NaN wins max and min, as in torch. */
    t = make(DL_FLOAT32, 1, three, (double[]){1, NAN, 3});
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MAX, t, NULL, &out), DL_OK);
    check_print(out, "tensor(nan)");
    dl_tensor_free(t);

    /* Empty: sum 0, mean NaN, max refused. */
    int64_t none[1] = {0};
    t = arange(DL_FLOAT32, 1, none);
    assert_int_equal(dl_tensor_reduce_all(DL_RED_SUM, t, NULL, &out), DL_OK);
    check_print(out, "tensor(0.)");
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MEAN, t, NULL, &out), DL_OK);
    check_print(out, "tensor(nan)");
    out = NULL;
    assert_int_equal(dl_tensor_reduce_all(DL_RED_MAX, t, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(t);
}

static void test_reduce_dim(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    dl_tensor_t *t = arange(DL_INT64, 2, shape), *out = NULL;
    assert_int_equal(dl_tensor_reduce_dim(DL_RED_SUM, t, 0, false, NULL, &out), DL_OK);
    check_print(out, "tensor([3, 5, 7])");
    assert_int_equal(dl_tensor_reduce_dim(DL_RED_SUM, t, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor([ 3, 12])");
    assert_int_equal(dl_tensor_reduce_dim(DL_RED_SUM, t, 0, true, NULL, &out), DL_OK);
    check_print(out, "tensor([[3, 5, 7]])");
    assert_int_equal(dl_tensor_reduce_dim(DL_RED_MAX, t, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor([2, 5])");
    out = NULL;
    assert_int_equal(dl_tensor_reduce_dim(DL_RED_SUM, t, 2, false, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(t);
    t = arange(DL_FLOAT32, 2, shape);
    assert_int_equal(dl_tensor_reduce_dim(DL_RED_MEAN, t, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor([1., 4.])");
    dl_tensor_free(t);
}

/* The index of the extreme along a dimension, as torch.max(t, dim) gives
 * it: the first of equal elements, the first NaN (values checked against
 * torch 1.13). */
/* prod, var and std, the values torch gives for the same tensors. */
static void test_prod_var_std(void **state)
{
    (void)state;
    int64_t four[1] = {4}, two_by_two[2] = {2, 2};
    dl_tensor_t *t = make(DL_FLOAT32, 1, four, (double[]){1, 3, 5, 7}), *out = NULL;
    assert_int_equal(dl_tensor_var(t, -1, false, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor(6.6667)");
    assert_int_equal(dl_tensor_var(t, -1, false, 0, false, NULL, &out), DL_OK);
    check_print(out, "tensor(5.)");
    assert_int_equal(dl_tensor_var(t, 0, true, 0, true, NULL, &out), DL_OK);
    check_print(out, "tensor([2.2361])");
    assert_int_equal(dl_tensor_reduce_all(DL_RED_PROD, t, NULL, &out), DL_OK);
    check_print(out, "tensor(105.)");
    dl_tensor_free(t);
    /* one element, unbiased: no degrees of freedom left, NaN as in torch */
    int64_t one[1] = {1};
    t = make(DL_FLOAT64, 1, one, (double[]){2});
    assert_int_equal(dl_tensor_var(t, -1, false, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor(nan, dtype=torch.float64)");
    dl_tensor_free(t);
    /* along a dimension, and an integer product that wraps in int64 */
    t = make(DL_FLOAT32, 2, two_by_two, (double[]){1, 2, 3, 5});
    assert_int_equal(dl_tensor_var(t, 1, false, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor([0.5000, 2.0000])");
    dl_tensor_free(t);
    int64_t three[1] = {3};
    t = make(DL_INT64, 1, three, (double[]){4294967296.0, 4294967296.0, 3});
    assert_int_equal(dl_tensor_reduce_all(DL_RED_PROD, t, NULL, &out), DL_OK);
    check_print(out, "tensor(0)");
    out = NULL;
    assert_int_equal(dl_tensor_var(t, -1, false, 1, false, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(t);
}

static void test_arg_reduce_dim(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    dl_tensor_t *t = make(DL_FLOAT32, 2, shape, (double[]){1, 5, 5, 7, NAN, 7}), *out = NULL;
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MAX, t, 0, false, NULL, &out), DL_OK);
    check_print(out, "tensor([1, 1, 1])");
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MAX, t, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor([1, 1])");
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MIN, t, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor([0, 1])");
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MAX, t, 1, true, NULL, &out), DL_OK);
    check_print(out, "tensor([[1],\n        [1]])");
    out = NULL;
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_SUM, t, 0, false, NULL, &out), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MAX, t, 2, false, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(t);

    int64_t four[1] = {4}, none[2] = {0, 3};
    t = make(DL_INT64, 1, four, (double[]){3, 9, 9, 1});
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MAX, t, 0, false, NULL, &out), DL_OK);
    check_print(out, "tensor(1)");
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MIN, t, 0, false, NULL, &out), DL_OK);
    check_print(out, "tensor(3)");
    dl_tensor_free(t);
    /* An empty dimension has no extreme; along the other one, no elements. */
    t = make(DL_FLOAT32, 2, none, NULL);
    out = NULL;
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MAX, t, 0, false, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    assert_int_equal(dl_tensor_arg_reduce_dim(DL_RED_MAX, t, 1, false, NULL, &out), DL_OK);
    check_print(out, "tensor([], dtype=torch.int64)");
    dl_tensor_free(t);
}

static void test_unary(void **state)
{
    (void)state;
    int64_t six[1] = {6};
    dl_tensor_t *t = arange(DL_INT64, 1, six), *out = NULL;
    assert_int_equal(dl_tensor_unary(DL_UNARY_SQRT, t, NULL, &out), DL_OK);
    check_print(out, "tensor([0.0000, 1.0000, 1.4142, 1.7321, 2.0000, 2.2361])");
    dl_tensor_free(t);

    int64_t two[1] = {2};
    t = make(DL_INT32, 1, two, (double[]){1, -2});
    assert_int_equal(dl_tensor_unary(DL_UNARY_EXP, t, NULL, &out), DL_OK);
    check_print(out, "tensor([2.7183, 0.1353])");
    assert_int_equal(dl_tensor_unary(DL_UNARY_ABS, t, NULL, &out), DL_OK);
    check_print(out, "tensor([1, 2], dtype=torch.int32)");
    assert_int_equal(dl_tensor_unary(DL_UNARY_RELU, t, NULL, &out), DL_OK);
    check_print(out, "tensor([1, 0], dtype=torch.int32)");
    dl_tensor_free(t);

    t = make(DL_FLOAT32, 1, two, (double[]){-1.5, 2});
    assert_int_equal(dl_tensor_unary(DL_UNARY_RELU, t, NULL, &out), DL_OK);
    check_print(out, "tensor([0., 2.])");
    assert_int_equal(dl_tensor_unary(DL_UNARY_SQRT, t, NULL, &out), DL_OK);
    check_print(out, "tensor([   nan, 1.4142])");
    dl_tensor_free(t);

    int64_t three[1] = {3};
    t = make(DL_BOOL, 1, three, (double[]){1, 0, 1});
    assert_int_equal(dl_tensor_unary(DL_UNARY_SQRT, t, NULL, &out), DL_OK);
    check_print(out, "tensor([1., 0., 1.])");
    out = NULL;
    assert_int_equal(dl_tensor_unary(DL_UNARY_ABS, t, NULL, &out), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_unary(DL_UNARY_RELU, t, NULL, &out), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_unary(DL_UNARY_FLOOR, t, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    /* torch's dtypes for bool: sign keeps it, square makes int64, log float32 */
    assert_int_equal(dl_tensor_unary(DL_UNARY_SIGN, t, NULL, &out), DL_OK);
    check_print(out, "tensor([ True, False,  True])");
    assert_int_equal(dl_tensor_unary(DL_UNARY_SQUARE, t, NULL, &out), DL_OK);
    check_print(out, "tensor([1, 0, 1])");
    assert_int_equal(dl_tensor_unary(DL_UNARY_LOG, t, NULL, &out), DL_OK);
    check_print(out, "tensor([0., -inf, 0.])");
    dl_tensor_free(t);

    /* Integers keep their dtype through floor, sign and square, which
     * wraps as torch's does. */
    t = make(DL_INT8, 1, three, (double[]){-100, 0, 12});
    assert_int_equal(dl_tensor_unary(DL_UNARY_FLOOR, t, NULL, &out), DL_OK);
    check_print(out, "tensor([-100,    0,   12], dtype=torch.int8)");
    assert_int_equal(dl_tensor_unary(DL_UNARY_SIGN, t, NULL, &out), DL_OK);
    check_print(out, "tensor([-1,  0,  1], dtype=torch.int8)");
    assert_int_equal(dl_tensor_unary(DL_UNARY_SQUARE, t, NULL, &out), DL_OK);
    check_print(out, "tensor([  16,    0, -112], dtype=torch.int8)");
    dl_tensor_free(t);

    /* sign of -0.0 and NaN is 0; the float functions round once */
    t = make(DL_FLOAT32, 1, three, (double[]){-0.0, NAN, -2.5});
    assert_int_equal(dl_tensor_unary(DL_UNARY_SIGN, t, NULL, &out), DL_OK);
    check_print(out, "tensor([ 0.,  0., -1.])");
    assert_int_equal(dl_tensor_unary(DL_UNARY_TRUNC, t, NULL, &out), DL_OK);
    check_print(out, "tensor([-0., nan, -2.])");
    assert_int_equal(dl_tensor_unary(DL_UNARY_RECIPROCAL, t, NULL, &out), DL_OK);
    check_print(out, "tensor([   -inf,     nan, -0.4000])");
    dl_tensor_free(t);
}

static void test_matmul(void **state)
{
    (void)state;
    int64_t six[1] = {6}, s23[2] = {2, 3}, s32[2] = {3, 2}, three[1] = {3};
    dl_tensor_t *v = arange(DL_INT64, 1, six), *a = arange(DL_INT64, 2, s23);
    dl_tensor_t *b = arange(DL_INT64, 2, s32), *v3 = arange(DL_INT64, 1, three), *out = NULL;
    assert_int_equal(dl_tensor_matmul(v, v, NULL, &out), DL_OK);
    check_print(out, "tensor(55)");
    assert_int_equal(dl_tensor_matmul(a, b, NULL, &out), DL_OK);
    check_print(out, "tensor([[10, 13],\n        [28, 40]])");
    assert_int_equal(dl_tensor_matmul(a, v3, NULL, &out), DL_OK);
    check_print(out, "tensor([ 5, 14])");
    assert_int_equal(dl_tensor_matmul(v3, b, NULL, &out), DL_OK);
    check_print(out, "tensor([10, 13])");
    out = NULL;
    assert_int_equal(dl_tensor_matmul(v, v3, NULL, &out), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_matmul(a, a, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(v);
    v = arange(DL_FLOAT32, 1, six);
    assert_int_equal(dl_tensor_matmul(v, v3, NULL, &out), DL_ERR_INVALID); /* dtypes differ */
    assert_null(out);
    dl_tensor_free(v);
    dl_tensor_free(a);
    dl_tensor_free(b);
    dl_tensor_free(v3);
}

static void test_sort_and_topk(void **state)
{
    (void)state;
    int64_t seven[1] = {7}, s23[2] = {2, 3};
    const double g[7] = {3, 1, 2, 1, NAN, -0.0, 0};
    dl_tensor_t *t = make(DL_FLOAT32, 1, seven, g), *v = NULL, *i = NULL;
    /* stable both ways: -0 before 0 and the first 1 before the second */
    assert_int_equal(dl_tensor_sort(t, 0, false, true, NULL, &v, &i), DL_OK);
    check_print(v, "tensor([-0., 0., 1., 1., 2., 3., nan])");
    check_print(i, "tensor([5, 6, 1, 3, 2, 0, 4])");
    assert_int_equal(dl_tensor_sort(t, 0, true, true, NULL, &v, &i), DL_OK);
    check_print(v, "tensor([nan, 3., 2., 1., 1., -0., 0.])");
    check_print(i, "tensor([4, 0, 2, 1, 3, 5, 6])");
    assert_int_equal(dl_tensor_topk(t, 2, 0, true, NULL, &v, &i), DL_OK);
    check_print(v, "tensor([nan, 3.])");
    check_print(i, "tensor([4, 0])");
    v = NULL;
    assert_int_equal(dl_tensor_topk(t, 8, 0, true, NULL, &v, &i), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_topk(t, -1, 0, true, NULL, &v, &i), DL_ERR_INVALID);
    assert_null(v);
    dl_tensor_free(t);
    /* along dim 0 of a matrix; int64 past 2^53 keeps its order */
    t = arange(DL_INT64, 2, s23);
    assert_int_equal(dl_tensor_sort(t, 0, true, true, NULL, &v, &i), DL_OK);
    check_print(v, "tensor([[3, 4, 5],\n        [0, 1, 2]])");
    check_print(i, "tensor([[1, 1, 1],\n        [0, 0, 0]])");
    ((int64_t *)t->data)[0] = INT64_MAX;
    ((int64_t *)t->data)[1] = INT64_MAX - 1;
    assert_int_equal(dl_tensor_sort(t, 1, false, true, NULL, &v, &i), DL_OK);
    check_print(i, "tensor([[2, 1, 0],\n        [0, 1, 2]])");
    dl_tensor_free(v);
    dl_tensor_free(t);
    /* without stable, std::sort's order: torch's [1, 0] * 8 + [1] */
    int64_t n17[1] = {17};
    double alt[17];
    for (int k = 0; k < 17; k++)
        alt[k] = (k + 1) % 2;
    t = make(DL_INT64, 1, n17, alt);
    assert_int_equal(dl_tensor_sort(t, 0, false, false, NULL, &v, &i), DL_OK);
    check_print(i, "tensor([ 1,  3, 15,  5,  7, 13,  9, 11, 16,  0, 14, 12, 10,  8,  6,  4,  2])");
    dl_tensor_free(v);
    assert_int_equal(dl_tensor_sort(t, 0, true, false, NULL, &v, &i), DL_OK);
    check_print(i, "tensor([ 8, 16, 14, 12, 10,  0,  6,  4,  2,  7,  5,  9, 11,  3, 13, 15,  1])");
    dl_tensor_free(v);
    dl_tensor_free(t);
}

static void test_cumulative(void **state)
{
    (void)state;
    int64_t six[1] = {6}, s23[2] = {2, 3};
    dl_tensor_t *t = arange(DL_INT64, 2, s23), *out = NULL;
    assert_int_equal(dl_tensor_cumulative(false, t, 1, DL_INT64, NULL, &out), DL_OK);
    check_print(out, "tensor([[ 0,  1,  3],\n        [ 3,  7, 12]])");
    assert_int_equal(dl_tensor_cumulative(false, t, 0, DL_INT64, NULL, &out), DL_OK);
    check_print(out, "tensor([[0, 1, 2],\n        [3, 5, 7]])");
    out = NULL;
    assert_int_equal(dl_tensor_cumulative(false, t, 0, DL_FLOAT32, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(t);
    /* int8 into int32: the products wrap as int32's (torch's cumprod(dtype=torch.int32)) */
    const double big[6] = {100, 100, 100, 100, 100, 100};
    t = make(DL_INT8, 1, six, big);
    assert_int_equal(dl_tensor_cumulative(true, t, 0, DL_INT32, NULL, &out), DL_OK);
    check_print(out, "tensor([       100,      10000,    1000000,  100000000, 1410065408, "
                     "-727379968],\n       dtype=torch.int32)");
    dl_tensor_free(t);
    /* float32 sums in double and rounds each, as torch: 0.3333 stays */
    const double thirds[6] = {0, 1.0 / 3, 2.0 / 3, 1, 4.0 / 3, 5.0 / 3};
    t = make(DL_FLOAT32, 1, six, thirds);
    assert_int_equal(dl_tensor_cumulative(false, t, 0, DL_FLOAT32, NULL, &out), DL_OK);
    check_print(out, "tensor([0.0000, 0.3333, 1.0000, 2.0000, 3.3333, 5.0000])");
    dl_tensor_free(t);
    t = make(DL_BFLOAT16, 1, six, thirds);
    assert_int_equal(dl_tensor_cumulative(false, t, 0, DL_BFLOAT16, NULL, &out), DL_OK);
    check_print(out,
                "tensor([0.0000, 0.3340, 1.0000, 2.0000, 3.3438, 5.0000], dtype=torch.bfloat16)");
    assert_int_equal(dl_tensor_cumulative(false, t, 0, DL_FLOAT16, NULL, &out), DL_ERR_INVALID);
    dl_tensor_free(t);
}

static void test_norm_and_softmax(void **state)
{
    (void)state;
    int64_t six[1] = {6}, two[1] = {2}, s23[2] = {2, 3};
    dl_tensor_t *f = arange(DL_FLOAT32, 1, six), *out = NULL;
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(7.4162)");
    assert_int_equal(dl_tensor_norm(f, 1, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(15.)");
    assert_int_equal(dl_tensor_norm(f, INFINITY, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(5.)");
    assert_int_equal(dl_tensor_norm(f, -INFINITY, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(0.)");
    assert_int_equal(dl_tensor_norm(f, 0, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(5.)");
    assert_int_equal(dl_tensor_norm(f, 3, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(6.0822)");
    assert_int_equal(dl_tensor_softmax(f, 0, false, NULL, &out), DL_OK);
    check_print(out, "tensor([0.0043, 0.0116, 0.0315, 0.0858, 0.2331, 0.6337])");
    assert_int_equal(dl_tensor_softmax(f, 0, true, NULL, &out), DL_OK);
    check_print(out, "tensor([-5.4562, -4.4562, -3.4562, -2.4562, -1.4562, -0.4562])");
    dl_tensor_free(f);
    /* along one dimension, kept */
    f = arange(DL_FLOAT32, 2, s23);
    bool rows[2] = {false, true};
    assert_int_equal(dl_tensor_norm(f, 2, rows, true, NULL, &out), DL_OK);
    check_print(out, "tensor([[2.2361],\n        [7.0711]])");
    assert_int_equal(dl_tensor_softmax(f, 0, false, NULL, &out), DL_OK);
    check_print(out, "tensor([[0.0474, 0.0474, 0.0474],\n        [0.9526, 0.9526, 0.9526]])");
    dl_tensor_free(f);
    /* float32 accumulates in float32 (torch: inf and 0), float64 does not */
    const double huge[2] = {1e20, 1e20}, tiny[2] = {1e-30, 1e-30}, nan0[2] = {0, NAN};
    f = make(DL_FLOAT32, 1, two, huge);
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(inf)");
    dl_tensor_free(f);
    f = make(DL_FLOAT64, 1, two, huge);
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(1.4142e+20, dtype=torch.float64)");
    dl_tensor_free(f);
    f = make(DL_FLOAT32, 1, two, tiny);
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(0.)");
    dl_tensor_free(f);
    /* NaN makes every norm NaN but the count of non-zeros */
    f = make(DL_FLOAT32, 1, two, nan0);
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(nan)");
    assert_int_equal(dl_tensor_norm(f, 0, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(1.)");
    dl_tensor_free(f);
    /* float16 adds in float16 (torch: 2048 and 45.25), a bfloat16 2-norm
     * of the whole tensor in float32 (54.75); none is 0 for any p */
    int64_t n3000[1] = {3000}, none[1] = {0};
    double *ones = malloc(3000 * sizeof(*ones));
    assert_non_null(ones);
    for (int k = 0; k < 3000; k++)
        ones[k] = 1;
    f = make(DL_FLOAT16, 1, n3000, ones);
    assert_int_equal(dl_tensor_norm(f, 1, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(2048., dtype=torch.float16)");
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(45.2500, dtype=torch.float16)");
    dl_tensor_free(f);
    f = make(DL_BFLOAT16, 1, n3000, ones);
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(54.7500, dtype=torch.bfloat16)");
    assert_int_equal(dl_tensor_norm(f, 1, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(256., dtype=torch.bfloat16)");
    dl_tensor_free(f);
    free(ones);
    f = make(DL_FLOAT32, 1, none, NULL);
    assert_int_equal(dl_tensor_norm(f, -INFINITY, NULL, false, NULL, &out), DL_OK);
    check_print(out, "tensor(0.)");
    dl_tensor_free(f);
    f = arange(DL_INT64, 1, six);
    out = NULL;
    assert_int_equal(dl_tensor_norm(f, 2, NULL, false, NULL, &out), DL_ERR_INVALID);
    assert_int_equal(dl_tensor_softmax(f, 0, false, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(f);
}

static void test_transpose(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, six[1] = {6};
    dl_tensor_t *a = arange(DL_INT64, 2, s23), *out = NULL;
    assert_int_equal(dl_tensor_transpose(a, NULL, &out), DL_OK);
    check_print(out, "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
    dl_tensor_free(a);
    a = arange(DL_INT64, 1, six);
    assert_int_equal(dl_tensor_transpose(a, NULL, &out), DL_OK);
    check_print(out, "tensor([0, 1, 2, 3, 4, 5])");
    dl_tensor_free(a);
}

static void test_cat_and_narrow(void **state)
{
    (void)state;
    int64_t six[1] = {6}, three[1] = {3}, s23[2] = {2, 3};
    dl_tensor_t *t = arange(DL_INT64, 1, six), *f = arange(DL_FLOAT32, 1, three), *out = NULL;
    const dl_tensor_t *pair[2] = {t, f};
    assert_int_equal(dl_tensor_cat(pair, 2, 0, DL_FLOAT32, NULL, &out), DL_OK);
    check_print(out, "tensor([0., 1., 2., 3., 4., 5., 0., 1., 2.])");
    dl_tensor_t *m = arange(DL_INT64, 2, s23);
    const dl_tensor_t *mm[2] = {m, m};
    assert_int_equal(dl_tensor_cat(mm, 2, 1, DL_INT64, NULL, &out), DL_OK);
    check_print(out, "tensor([[0, 1, 2, 0, 1, 2],\n        [3, 4, 5, 3, 4, 5]])");
    assert_int_equal(dl_tensor_cat(mm, 2, 0, DL_INT64, NULL, &out), DL_OK);
    check_print(out, "tensor([[0, 1, 2],\n        [3, 4, 5],\n        [0, 1, 2],\n"
                     "        [3, 4, 5]])");
    const dl_tensor_t *mixed[2] = {t, m};
    out = NULL;
    assert_int_equal(dl_tensor_cat(mixed, 2, 0, DL_INT64, NULL, &out), DL_ERR_INVALID);
    assert_null(out);

    assert_int_equal(dl_tensor_narrow(t, 0, 2, 3, NULL, &out), DL_OK);
    check_print(out, "tensor([2, 3, 4])");
    assert_int_equal(dl_tensor_narrow(m, 1, 1, 2, NULL, &out), DL_OK);
    check_print(out, "tensor([[1, 2],\n        [4, 5]])");
    out = NULL;
    assert_int_equal(dl_tensor_narrow(t, 0, 4, 3, NULL, &out), DL_ERR_INVALID);
    assert_null(out);
    dl_tensor_free(t);
    dl_tensor_free(f);
    dl_tensor_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduction_dtypes), cmocka_unit_test(test_reduce_all),
        cmocka_unit_test(test_reduce_dim),       cmocka_unit_test(test_prod_var_std),
        cmocka_unit_test(test_arg_reduce_dim),   cmocka_unit_test(test_unary),
        cmocka_unit_test(test_matmul),           cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_cat_and_narrow),   cmocka_unit_test(test_sort_and_topk),
        cmocka_unit_test(test_cumulative),       cmocka_unit_test(test_norm_and_softmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
