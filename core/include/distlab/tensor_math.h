/* Tensor maths with torch's semantics and result dtypes: whole-tensor and
 * per-dimension reductions (sum, mean, max, min), element-wise functions
 * (sqrt, exp, abs, relu), matrix products, the 2-D transpose,
 * concatenation, sorting, running totals, norms and softmax. The shell's language calls them
 * (t.sum(), m @ v, cat); they are plain loops over host tensors, for teaching, not for speed.
 *
 * Every function makes a new tensor from alloc (NULL: the heap) and sets
 * *out_p only on success. Inputs must be host tensors; a cuda tensor is
 * DL_ERR_UNSUPPORTED (callers copy it to the host first). Shapes and dtypes
 * that torch refuses are DL_ERR_INVALID; the caller words torch's message. */
#ifndef DISTLAB_TENSOR_MATH_H
#define DISTLAB_TENSOR_MATH_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/tensor.h"

typedef enum {
    DL_RED_SUM,
    DL_RED_MEAN,
    DL_RED_MAX,
    DL_RED_MIN,
    DL_RED_PROD,
    DL_RED_VAR, /* with Bessel's correction (n - 1), torch's default */
    DL_RED_STD,
} dl_reduction_t;

/* The dtype torch gives a reduction of a tensor of dtype dt: sum and prod
 * make int64 of any integer or bool tensor and keep a float dtype; mean,
 * var and std keep a float dtype; max and min keep any dtype.
 * DL_ERR_INVALID for mean, var or std of an integer or bool tensor (torch:
 * "could not infer output dtype"). */
dl_status_t dl_reduction_dtype(dl_reduction_t r, dl_dtype_t dt, dl_dtype_t *out_p);

/* The reduction over every element: a 0-dimensional tensor. Sums and means
 * accumulate in double (int64 for integers, wrapping as torch does); max
 * and min propagate NaN. The sum of no elements is 0 and their mean NaN, as
 * in torch; max and min of no elements are DL_ERR_INVALID. */
dl_status_t dl_tensor_reduce_all(dl_reduction_t r, const dl_tensor_t *src, dl_allocator_t *alloc,
                                 dl_tensor_t **out_p);
/* The reduction along dimension dim (0 <= dim < ndim): the result has that
 * dimension removed, or kept with size 1 when keepdim. */
dl_status_t dl_tensor_reduce_dim(dl_reduction_t r, const dl_tensor_t *src, int dim, bool keepdim,
                                 dl_allocator_t *alloc, dl_tensor_t **out_p);

/* var (or std, its square root) over every element (dim -1) or along dim,
 * dividing the squared deviations by n - correction (1: torch's default,
 * unbiased; 0: the population's); NaN where that is 0 or less, as in
 * torch. Accumulates in double. */
dl_status_t dl_tensor_var(const dl_tensor_t *src, int dim, bool keepdim, double correction,
                          bool std, dl_allocator_t *alloc, dl_tensor_t **out_p);

/* The index (int64) of the largest (DL_RED_MAX) or smallest (DL_RED_MIN)
 * element along dimension dim, as torch.max(input, dim) and argmax give it:
 * the first of equal elements, the first NaN where there is one. The
 * result has that dimension removed, or kept with size 1 when keepdim.
 * DL_ERR_INVALID for another reduction or a dimension of size 0. */
dl_status_t dl_tensor_arg_reduce_dim(dl_reduction_t r, const dl_tensor_t *src, int dim,
                                     bool keepdim, dl_allocator_t *alloc, dl_tensor_t **out_p);

typedef enum {
    /* float32 of an integer or bool tensor, a float dtype kept */
    DL_UNARY_SQRT,
    DL_UNARY_EXP,
    DL_UNARY_LOG,
    DL_UNARY_LOG2,
    DL_UNARY_LOG10,
    DL_UNARY_SIN,
    DL_UNARY_COS,
    DL_UNARY_TANH,
    DL_UNARY_SIGMOID,
    DL_UNARY_RSQRT,
    DL_UNARY_RECIPROCAL,
    /* the dtype kept; none of bool */
    DL_UNARY_ABS,
    DL_UNARY_RELU,
    DL_UNARY_FLOOR,
    DL_UNARY_CEIL,
    DL_UNARY_TRUNC,
    /* the dtype kept, bool too */
    DL_UNARY_SIGN,
    /* the dtype kept; int64 of bool */
    DL_UNARY_SQUARE,
} dl_unary_t;

/* The dtype of op applied to a tensor of dtype dt, as torch's (see the
 * groups above). DL_ERR_INVALID where torch refuses bool. */
dl_status_t dl_unary_dtype(dl_unary_t op, dl_dtype_t dt, dl_dtype_t *out_p);
/* op on every element (computed in double, rounded to the result dtype;
 * integer abs wraps at the minimum as torch's does). */
dl_status_t dl_tensor_unary(dl_unary_t op, const dl_tensor_t *src, dl_allocator_t *alloc,
                            dl_tensor_t **out_p);

/* torch.matmul for 1-D and 2-D operands of one dtype (not bool): 1-D . 1-D
 * is a 0-dimensional dot product, 2-D @ 2-D a matrix, 2-D @ 1-D and
 * 1-D @ 2-D a vector. Integers multiply and add with wrapping; floats
 * accumulate in double. DL_ERR_INVALID when the inner sizes differ, the
 * dtypes differ or an operand has 0 or more than 2 dimensions. */
dl_status_t dl_tensor_matmul(const dl_tensor_t *a, const dl_tensor_t *b, dl_allocator_t *alloc,
                             dl_tensor_t **out_p);

/* The transpose of a 2-D tensor, as a new contiguous tensor; a tensor of 0
 * or 1 dimension is copied as it is (torch's t.T leaves it alone). */
dl_status_t dl_tensor_transpose(const dl_tensor_t *src, dl_allocator_t *alloc, dl_tensor_t **out_p);

/* torch.cat: the n tensors (n >= 1, the same number of dimensions, at
 * least 1, and the same sizes except along dim) one after the other along
 * dim, converted to dtype dt (the caller promotes, as torch does). */
dl_status_t dl_tensor_cat(const dl_tensor_t *const *ts, size_t n, int dim, dl_dtype_t dt,
                          dl_allocator_t *alloc, dl_tensor_t **out_p);

/* A copy of src's elements start .. start + len - 1 along dim (torch's
 * narrow), the piece that chunk and split give. */
dl_status_t dl_tensor_narrow(const dl_tensor_t *src, int dim, int64_t start, int64_t len,
                             dl_allocator_t *alloc, dl_tensor_t **out_p);

/* torch.sort along dim (0 for a 0-d tensor): the values (src's dtype) and
 * their indices (int64). Ascending puts NaN last, descending first. With
 * stable, equal elements keep their order; without, they come out in the
 * order C++'s std::sort (libstdc++'s introsort, which torch's CPU sort
 * calls) leaves them: the same up to 16 elements a row, not beyond. */
dl_status_t dl_tensor_sort(const dl_tensor_t *src, int dim, bool descending, bool stable,
                           dl_allocator_t *alloc, dl_tensor_t **values_p, dl_tensor_t **indices_p);
/* torch.topk: the first k of that order along dim (descending when
 * largest), sorted. Among equal elements the lower index comes first,
 * where torch's selection leaves their order unspecified. DL_ERR_INVALID
 * when k is negative or more than the dimension holds. */
dl_status_t dl_tensor_topk(const dl_tensor_t *src, int64_t k, int dim, bool largest,
                           dl_allocator_t *alloc, dl_tensor_t **values_p, dl_tensor_t **indices_p);
/* cumsum (prod false) and cumprod along dim into dtype odt: an integer odt
 * of an integer or bool src, accumulated in int64 with wrapping, or src's
 * own float dtype (not float16), accumulated as torch's CPU kernel does (in
 * double, float for bfloat16) and rounded at each element. */
dl_status_t dl_tensor_cumulative(bool prod, const dl_tensor_t *src, int dim, dl_dtype_t odt,
                                 dl_allocator_t *alloc, dl_tensor_t **out_p);
/* torch.norm of a float tensor over the dimensions d with reduce[d] (NULL:
 * all of them): p = 2 (the Euclidean norm), 1, INFINITY (the largest
 * magnitude), -INFINITY (the smallest), 0 (the count of non-zeros) or any
 * other (sum |x|^p)^(1/p); in src's dtype, accumulated as torch's kernel
 * does (float32 in float32, float16 and bfloat16 in their own precision,
 * float64 in double); the norm of no elements is 0. */
dl_status_t dl_tensor_norm(const dl_tensor_t *src, double p, const bool *reduce, bool keepdim,
                           dl_allocator_t *alloc, dl_tensor_t **out_p);
/* softmax (or log_softmax) of a float tensor along dim, in double,
 * rounded once to src's dtype. */
dl_status_t dl_tensor_softmax(const dl_tensor_t *src, int dim, bool log_of, dl_allocator_t *alloc,
                              dl_tensor_t **out_p);

#endif
