/* Tensor maths with torch's semantics (distlab/tensor_math.h).
 *
 * The loops read and write elements through dl_dtype_get / _set (doubles)
 * and their int64 twins, so one loop serves every dtype; integer results
 * are computed in int64 with two's complement wrapping, as torch's integer
 * tensors wrap, and float results in double, rounded once to the result
 * dtype. A dimension splits a tensor into outer x n x inner elements: the
 * elements along dim of one (outer, inner) pair are inner apart. */
#include <math.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "internal.h"

static bool is_host(const dl_tensor_t *t)
{
    return t->device.type == DL_DEVICE_CPU;
}

/* Copies element i of src (dtype sdt) to element j of dst (dtype ddt),
 * through int64 when both are integers so that no digit is lost. */
static void copy_elem(dl_dtype_t ddt, void *dst, size_t j, dl_dtype_t sdt, const void *src,
                      size_t i)
{
    if (dl_dtype_is_float(ddt) || dl_dtype_is_float(sdt))
        dl_dtype_set(ddt, dst, j, dl_dtype_get(sdt, src, i));
    else
        dl_dtype_set_i64(ddt, dst, j, dl_dtype_get_i64(sdt, src, i));
}

/* ------------------------------------------------------------------------
 * Reductions
 * ------------------------------------------------------------------------ */

dl_status_t dl_reduction_dtype(dl_reduction_t r, dl_dtype_t dt, dl_dtype_t *out_p)
{
    if ((unsigned)dt >= DL_DTYPE__COUNT || out_p == NULL)
        return DL_ERR_INVALID;
    switch (r) {
    case DL_RED_SUM:
    case DL_RED_PROD:
        *out_p = dl_dtype_is_float(dt) ? dt : DL_INT64;
        return DL_OK;
    case DL_RED_MEAN:
    case DL_RED_VAR:
    case DL_RED_STD:
        if (!dl_dtype_is_float(dt))
            return DL_ERR_INVALID;
        *out_p = dt;
        return DL_OK;
    case DL_RED_MAX:
    case DL_RED_MIN:
        *out_p = dt;
        return DL_OK;
    default:
        return DL_ERR_INVALID;
    }
}

/* ---- torch's order of a float sum ----
 *
 * A float sum's last bits depend on the order of its additions, and a
 * learner compares them with torch's (a tutorial's loss printed to 8
 * digits). torch 1.13 on the CPU (its AVX2 kernels, what it runs on x86)
 * sums in its own order, in float for float32, float16 and bfloat16 and
 * in double for float64. Its building block sums rows of k columns (k is
 * 1 or 4), each column on its own: the rows in order, cascaded over up to
 * 4 levels (every 2^p rows, p = max(4, ceil_log2(rows) / 4), level 0 is
 * added into level 1, and so on, which keeps large sums accurate), then
 * the levels together.
 *
 * Summing e elements "as a row" (torch's row_sum): as e / 4 rows of 4
 * columns as above; the last e % 4 elements are added to column 0, then
 * columns 1, 2 and 3 to it.
 *
 * n contiguous elements (the last dimension):
 *   - n >= L, the lanes of a vector (8 floats, 4 doubles): the n / L whole
 *     vectors are summed as a row, lane by lane, each "element" a vector;
 *     then a scalar starts from 0, adds the last n % L elements in order,
 *     then the lanes 0 to L-1;
 *   - else the elements themselves as a row, one lane wide.
 *
 * Along another dimension, each of the `cols` sums (one per element of the
 * dimensions after it, flattened) runs down its column: with cols >= L,
 * the columns of whole blocks of 4 vectors (4 L columns) are cascaded one
 * by one; with fewer, those of whole groups of 4 columns; every other
 * column is summed as a row.
 *
 * Checked against torch 1.13 for sizes up to 32767 (past that torch
 * splits a sum across its threads, which depends on their number). */

#define TORCH_SUM_LANES 8 /* the most lanes: a vector of floats */

static size_t ceil_log2(size_t x)
{
    size_t b = 0;
    if (x <= 2)
        return 1;
    for (x -= 1; x != 0; x >>= 1)
        b++;
    return b;
}

/* torch_sum_float and torch_sum_double: the same order in float and in
 * double (an addition rounded once to the type, as torch's is). In
 * NAME##_rows, element (row i, column c, lane l) lies at
 * first + ((k i + c) w + l) stride. */
#define DEFINE_TORCH_SUM(NAME, T, LANES)                                                           \
    static T NAME##_at(const dl_tensor_t *s, size_t at)                                            \
    {                                                                                              \
        return (T)dl_dtype_get(s->dtype, s->data, at);                                             \
    }                                                                                              \
    static void NAME##_rows(const dl_tensor_t *s, size_t first, size_t stride, size_t rows,        \
                            size_t k, size_t w, T out[4][TORCH_SUM_LANES])                         \
    {                                                                                              \
        T acc[4][4][TORCH_SUM_LANES] = {{{0}}};                                                    \
        size_t p = ceil_log2(rows) / 4 < 4 ? 4 : ceil_log2(rows) / 4;                              \
        size_t step = (size_t)1 << p, i = 0;                                                       \
        while (i < rows) {                                                                         \
            bool cascade = i + step <= rows; /* else the last rows, added at level 0 */            \
            for (size_t r = 0, todo = cascade ? step : rows - i; r < todo; r++, i++)               \
                for (size_t c = 0; c < k; c++)                                                     \
                    for (size_t l = 0; l < w; l++)                                                 \
                        acc[0][c][l] += NAME##_at(s, first + ((k * i + c) * w + l) * stride);      \
            for (size_t v = 1; cascade && v < 4; v++) {                                            \
                for (size_t c = 0; c < k; c++)                                                     \
                    for (size_t l = 0; l < w; l++) {                                               \
                        acc[v][c][l] += acc[v - 1][c][l];                                          \
                        acc[v - 1][c][l] = 0;                                                      \
                    }                                                                              \
                if ((i & ((step - 1) << (v * p))) != 0)                                            \
                    break;                                                                         \
            }                                                                                      \
        }                                                                                          \
        for (size_t v = 1; v < 4; v++)                                                             \
            for (size_t c = 0; c < k; c++)                                                         \
                for (size_t l = 0; l < w; l++)                                                     \
                    acc[0][c][l] += acc[v][c][l];                                                  \
        memcpy(out, acc[0], sizeof(acc[0]));                                                       \
    }                                                                                              \
    static void NAME##_as_row(const dl_tensor_t *s, size_t first, size_t stride, size_t e,         \
                              size_t w, T out[TORCH_SUM_LANES])                                    \
    {                                                                                              \
        T cols[4][TORCH_SUM_LANES];                                                                \
        NAME##_rows(s, first, stride, e / 4, 4, w, cols);                                          \
        for (size_t x = e / 4 * 4; x < e; x++)                                                     \
            for (size_t l = 0; l < w; l++)                                                         \
                cols[0][l] += NAME##_at(s, first + (x * w + l) * stride);                          \
        for (size_t c = 1; c < 4; c++)                                                             \
            for (size_t l = 0; l < w; l++)                                                         \
                cols[0][l] += cols[c][l];                                                          \
        memcpy(out, cols[0], sizeof(T) * w);                                                       \
    }                                                                                              \
    static T NAME(const dl_tensor_t *s, size_t first, size_t n)                                    \
    {                                                                                              \
        T lanes[TORCH_SUM_LANES];                                                                  \
        if (n < (LANES)) {                                                                         \
            NAME##_as_row(s, first, 1, n, 1, lanes);                                               \
            return lanes[0];                                                                       \
        }                                                                                          \
        size_t vectors = n / (LANES);                                                              \
        NAME##_as_row(s, first, 1, vectors, (LANES), lanes);                                       \
        T sum = 0;                                                                                 \
        for (size_t x = vectors * (LANES); x < n; x++)                                             \
            sum += NAME##_at(s, first + x);                                                        \
        for (size_t l = 0; l < (LANES); l++)                                                       \
            sum += lanes[l];                                                                       \
        return sum;                                                                                \
    }                                                                                              \
    static T NAME##_column(const dl_tensor_t *s, size_t first, size_t cols, size_t n)              \
    {                                                                                              \
        size_t col = first % cols, block = cols >= (LANES) ? 4 * (LANES) : 4;                      \
        T out[4][TORCH_SUM_LANES];                                                                 \
        if (col < cols / block * block)                                                            \
            NAME##_rows(s, first, cols, n, 1, 1, out);                                             \
        else                                                                                       \
            NAME##_as_row(s, first, cols, n, 1, out[0]);                                           \
        return out[0][0];                                                                          \
    }

DEFINE_TORCH_SUM(torch_sum_float, float, 8)
DEFINE_TORCH_SUM(torch_sum_double, double, 4)

/* torch 1.13's order of a float product (binary_kernel_reduce_vec), in
 * float for float32 (where it overflows: the product of 1 .. 40 is inf)
 * and in double for float64. n contiguous elements (step 1): past 4
 * vectors' worth (32 floats, 16 doubles), four vectors multiply lane by
 * lane through the whole blocks, then together ((0 * 1) * (2 * 3)), then
 * their lanes in order, then the last n % (4 L) elements one by one; the
 * product of arange(1200.) is nan there (0 * inf), where in order it is 0.
 * Elements a step apart: in order. float16 and bfloat16 round each
 * product to their own precision. */
#define DEFINE_TORCH_PROD(NAME, T, LANES)                                                          \
    static T NAME##_mul(dl_dtype_t dt, T a, T b)                                                   \
    {                                                                                              \
        return dt == DL_FLOAT16 || dt == DL_BFLOAT16 ? (T)dl_dtype_round(dt, a * b) : a * b;       \
    }                                                                                              \
    static T NAME(const dl_tensor_t *s, size_t first, size_t step, size_t n)                       \
    {                                                                                              \
        dl_dtype_t dt = s->dtype;                                                                  \
        size_t block = 4 * (LANES), k = 0;                                                         \
        T out = 1;                                                                                 \
        if (step == 1 && n >= block) {                                                             \
            T acc[4 * (LANES)];                                                                    \
            for (size_t l = 0; l < block; l++)                                                     \
                acc[l] = (T)dl_dtype_get(dt, s->data, first + l);                                  \
            for (k = block; k + block <= n; k += block)                                            \
                for (size_t l = 0; l < block; l++)                                                 \
                    acc[l] = NAME##_mul(dt, acc[l], (T)dl_dtype_get(dt, s->data, first + k + l));  \
            for (size_t l = 0; l < (LANES); l++)                                                   \
                acc[l] = NAME##_mul(dt, NAME##_mul(dt, acc[l], acc[(LANES) + l]),                  \
                                    NAME##_mul(dt, acc[2 * (LANES) + l], acc[3 * (LANES) + l]));   \
            for (size_t l = 1; l < (LANES); l++)                                                   \
                acc[0] = NAME##_mul(dt, acc[0], acc[l]);                                           \
            out = acc[0];                                                                          \
        }                                                                                          \
        for (; k < n; k++)                                                                         \
            out = NAME##_mul(dt, out, (T)dl_dtype_get(dt, s->data, first + k * step));             \
        return out;                                                                                \
    }

DEFINE_TORCH_PROD(torch_prod_float, float, 8)
DEFINE_TORCH_PROD(torch_prod_double, double, 4)

/* Reduces the n elements of src at first, first + step, ... into element
 * j of dst (dtype odt); var and std divide by n - correction. */
static void reduce_run(dl_reduction_t r, const dl_tensor_t *src, size_t first, size_t step,
                       size_t n, dl_dtype_t odt, void *dst, size_t j, double correction)
{
    dl_dtype_t dt = src->dtype;
    bool fl = dl_dtype_is_float(dt);
    if (r == DL_RED_VAR || r == DL_RED_STD) {
        /* torch 1.13's two ways, both in double: a reduction to one number
         * (of a float32 or float64 tensor) takes the mean as t.mean() gives
         * it, then sums the squared deviations from it; one of several
         * numbers, or a float16 or bfloat16 tensor, runs Welford's update
         * over the elements in order. The two differ in the last bits
         * (var([9.866, 11.876]) is 2.02004999..., each row of
         * [[9.866, 11.876], [5, -6.38]] 2.02005000...1). Welford's m2 is
         * updated with a fused multiply-add, as GCC compiles torch's loop. A
         * divisor of 0 or less divides by 0, as torch's does (inf, or nan
         * for 0 / 0). */
        double ss = 0;
        if (step == 1 && n == src->numel && (dt == DL_FLOAT32 || dt == DL_FLOAT64)) {
            double mean = dt == DL_FLOAT64 ? torch_sum_double(src, first, n) / (double)n
                                           : (double)(torch_sum_float(src, first, n) / (float)n);
            for (size_t k = 0; k < n; k++) {
                double d = dl_dtype_get(dt, src->data, first + k) - mean;
                ss += d * d;
            }
        } else {
            double mean = 0;
            for (size_t k = 0; k < n; k++) {
                double x = dl_dtype_get(dt, src->data, first + k * step);
                double delta = x - mean;
                mean += delta / (double)(k + 1);
                ss = fma(delta, x - mean, ss);
            }
        }
        double div = (double)n - correction;
        double v = ss / (div > 0 ? div : 0);
        dl_dtype_set(odt, dst, j, r == DL_RED_STD ? sqrt(v) : v);
        return;
    }
    if (r == DL_RED_PROD) {
        if (fl) {
            dl_dtype_set(odt, dst, j,
                         dt == DL_FLOAT64 ? torch_prod_double(src, first, step, n)
                                          : (double)torch_prod_float(src, first, step, n));
        } else {
            uint64_t acc = 1; /* wraps, as torch's int64 product does */
            for (size_t k = 0; k < n; k++)
                acc *= (uint64_t)dl_dtype_get_i64(dt, src->data, first + k * step);
            dl_dtype_set_i64(odt, dst, j, (int64_t)acc);
        }
        return;
    }
    if ((r == DL_RED_SUM || r == DL_RED_MEAN) && fl) {
        /* torch's order; its mean is the sum, in the dtype, divided by n.
         * Elements a step apart are a column of a contiguous tensor, one
         * of `step` columns (reduce_dim), whose position first % step is. */
        double sum;
        if (step == 1)
            sum = dt == DL_FLOAT64 ? torch_sum_double(src, first, n)
                                   : (double)torch_sum_float(src, first, n);
        else
            sum = dt == DL_FLOAT64 ? torch_sum_double_column(src, first, step, n)
                                   : (double)torch_sum_float_column(src, first, step, n);
        dl_dtype_set(odt, dst, j, sum);
        if (r == DL_RED_MEAN) {
            /* n as the dtype holds it: bfloat16's 257 is 256, as torch divides */
            uint64_t held = 0;
            dl_dtype_set(odt, &held, 0, (double)n);
            dl_dtype_set(odt, dst, j, dl_dtype_get(odt, dst, j) / dl_dtype_get(odt, &held, 0));
        }
        return;
    }
    if (r == DL_RED_SUM) { /* of integers (a mean is of floats only) */
        uint64_t acc = 0;
        for (size_t k = 0; k < n; k++)
            acc += (uint64_t)dl_dtype_get_i64(dt, src->data, first + k * step);
        dl_dtype_set_i64(odt, dst, j, (int64_t)acc);
        return;
    }
    bool want_max = r == DL_RED_MAX;
    if (fl) {
        double best = dl_dtype_get(dt, src->data, first);
        for (size_t k = 1; k < n && !isnan(best); k++) {
            double x = dl_dtype_get(dt, src->data, first + k * step);
            if (isnan(x) || (want_max ? x > best : x < best))
                best = x;
        }
        dl_dtype_set(odt, dst, j, best);
    } else {
        int64_t best = dl_dtype_get_i64(dt, src->data, first);
        for (size_t k = 1; k < n; k++) {
            int64_t x = dl_dtype_get_i64(dt, src->data, first + k * step);
            if (want_max ? x > best : x < best)
                best = x;
        }
        dl_dtype_set_i64(odt, dst, j, best);
    }
}

dl_status_t dl_tensor_reduce_all(dl_reduction_t r, const dl_tensor_t *src, dl_allocator_t *alloc,
                                 dl_tensor_t **out_p)
{
    dl_dtype_t odt;
    if (src == NULL || out_p == NULL || dl_reduction_dtype(r, src->dtype, &odt) != DL_OK)
        return DL_ERR_INVALID;
    if (!is_host(src))
        return DL_ERR_UNSUPPORTED;
    if (src->numel == 0 && (r == DL_RED_MAX || r == DL_RED_MIN))
        return DL_ERR_INVALID;
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(odt, 0, NULL, alloc, &out);
    if (st != DL_OK)
        return st;
    reduce_run(r, src, 0, 1, src->numel, odt, out->data, 0, 1.0);
    *out_p = out;
    return DL_OK;
}

static dl_status_t reduce_dim(dl_reduction_t r, const dl_tensor_t *src, int dim, bool keepdim,
                              double correction, dl_allocator_t *alloc, dl_tensor_t **out_p);

dl_status_t dl_tensor_reduce_dim(dl_reduction_t r, const dl_tensor_t *src, int dim, bool keepdim,
                                 dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    return reduce_dim(r, src, dim, keepdim, 1.0, alloc, out_p);
}

dl_status_t dl_tensor_var(const dl_tensor_t *src, int dim, bool keepdim, double correction,
                          bool std, dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    dl_reduction_t r = std ? DL_RED_STD : DL_RED_VAR;
    if (src == NULL || dim >= 0)
        return reduce_dim(r, src, dim, keepdim, correction, alloc, out_p);
    dl_dtype_t odt;
    if (out_p == NULL || dl_reduction_dtype(r, src->dtype, &odt) != DL_OK)
        return DL_ERR_INVALID;
    if (!is_host(src))
        return DL_ERR_UNSUPPORTED;
    int64_t ones[DL_MAX_DIMS];
    for (int d = 0; d < src->ndim; d++)
        ones[d] = 1;
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(odt, keepdim ? src->ndim : 0, ones, alloc, &out);
    if (st != DL_OK)
        return st;
    reduce_run(r, src, 0, 1, src->numel, odt, out->data, 0, correction);
    *out_p = out;
    return DL_OK;
}

static dl_status_t reduce_dim(dl_reduction_t r, const dl_tensor_t *src, int dim, bool keepdim,
                              double correction, dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    dl_dtype_t odt;
    if (src == NULL || out_p == NULL || dim < 0 || dim >= src->ndim ||
        dl_reduction_dtype(r, src->dtype, &odt) != DL_OK)
        return DL_ERR_INVALID;
    if (!is_host(src))
        return DL_ERR_UNSUPPORTED;
    size_t outer, n, inner;
    dl__split_dims(src, dim, &outer, &n, &inner);
    if (n == 0 && (r == DL_RED_MAX || r == DL_RED_MIN))
        return DL_ERR_INVALID;
    int64_t shape[DL_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < src->ndim; d++) {
        if (d != dim)
            shape[ndim++] = src->shape[d];
        else if (keepdim)
            shape[ndim++] = 1;
    }
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(odt, ndim, shape, alloc, &out);
    if (st != DL_OK)
        return st;
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++)
            reduce_run(r, src, o * n * inner + i, inner, n, odt, out->data, o * inner + i,
                       correction);
    *out_p = out;
    return DL_OK;
}

/* The position k (0 .. n - 1) of the extreme of the n elements of src at
 * first, first + step, ...: the first of equal ones, the first NaN. */
static int64_t arg_run(bool want_max, const dl_tensor_t *src, size_t first, size_t step, size_t n)
{
    dl_dtype_t dt = src->dtype;
    size_t at = 0;
    if (dl_dtype_is_float(dt)) {
        double best = dl_dtype_get(dt, src->data, first);
        for (size_t k = 1; k < n && !isnan(best); k++) {
            double x = dl_dtype_get(dt, src->data, first + k * step);
            if (isnan(x) || (want_max ? x > best : x < best)) {
                best = x;
                at = k;
            }
        }
    } else {
        int64_t best = dl_dtype_get_i64(dt, src->data, first);
        for (size_t k = 1; k < n; k++) {
            int64_t x = dl_dtype_get_i64(dt, src->data, first + k * step);
            if (want_max ? x > best : x < best) {
                best = x;
                at = k;
            }
        }
    }
    return (int64_t)at;
}

dl_status_t dl_tensor_arg_reduce_dim(dl_reduction_t r, const dl_tensor_t *src, int dim,
                                     bool keepdim, dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    if (src == NULL || out_p == NULL || dim < 0 || dim >= src->ndim ||
        (r != DL_RED_MAX && r != DL_RED_MIN))
        return DL_ERR_INVALID;
    if (!is_host(src))
        return DL_ERR_UNSUPPORTED;
    size_t outer, n, inner;
    dl__split_dims(src, dim, &outer, &n, &inner);
    if (n == 0)
        return DL_ERR_INVALID;
    int64_t shape[DL_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < src->ndim; d++) {
        if (d != dim)
            shape[ndim++] = src->shape[d];
        else if (keepdim)
            shape[ndim++] = 1;
    }
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(DL_INT64, ndim, shape, alloc, &out);
    if (st != DL_OK)
        return st;
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++)
            dl_dtype_set_i64(DL_INT64, out->data, o * inner + i,
                             arg_run(r == DL_RED_MAX, src, o * n * inner + i, inner, n));
    *out_p = out;
    return DL_OK;
}

/* ------------------------------------------------------------------------
 * Element-wise functions
 * ------------------------------------------------------------------------ */

dl_status_t dl_unary_dtype(dl_unary_t op, dl_dtype_t dt, dl_dtype_t *out_p)
{
    if ((unsigned)dt >= DL_DTYPE__COUNT || out_p == NULL)
        return DL_ERR_INVALID;
    if ((unsigned)op > DL_UNARY_SQUARE)
        return DL_ERR_INVALID;
    if (op < DL_UNARY_ABS)
        *out_p = dl_dtype_is_float(dt) ? dt : DL_FLOAT32;
    else if (op < DL_UNARY_SIGN && dt == DL_BOOL)
        return DL_ERR_INVALID;
    else
        *out_p = op == DL_UNARY_SQUARE && dt == DL_BOOL ? DL_INT64 : dt;
    return DL_OK;
}

static double unary_d(dl_unary_t op, double x, bool float_ulps)
{
    switch (op) {
    case DL_UNARY_SQRT:
        return sqrt(x);
    case DL_UNARY_EXP:
        return exp(x);
    case DL_UNARY_LOG:
        return log(x);
    case DL_UNARY_LOG2:
        return log2(x);
    case DL_UNARY_LOG10:
        return log10(x);
    case DL_UNARY_SIN:
        return sin(x);
    case DL_UNARY_COS:
        return cos(x);
    case DL_UNARY_TANH:
        /* +-1 past Sleef's bounds, as torch's vectorised tanh gives them:
         * tanh(9.) is 1 there, where 0.99999994 is nearer in float32 */
        return fabs(x) > 18.714973875 || (float_ulps && fabs(x) > 8.664339742) ? copysign(1.0, x)
                                                                               : tanh(x);
    case DL_UNARY_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case DL_UNARY_RSQRT:
        return 1.0 / sqrt(x);
    case DL_UNARY_RECIPROCAL:
        return 1.0 / x;
    case DL_UNARY_ABS:
        return fabs(x);
    case DL_UNARY_FLOOR:
        return floor(x);
    case DL_UNARY_CEIL:
        return ceil(x);
    case DL_UNARY_TRUNC:
        return trunc(x);
    case DL_UNARY_SIGN:
        /* torch's (0 < x) - (x < 0): 0 for -0.0 and NaN */
        return (double)((0 < x) - (x < 0));
    case DL_UNARY_SQUARE:
        return x * x;
    default:
        /* relu keeps NaN, as torch's clamp_min does. */
        return x < 0 ? 0.0 : x;
    }
}

/* op of an integer (or bool) element whose result keeps an integer dtype:
 * abs of the minimum wraps to itself and a square wraps, through unsigned
 * arithmetic, as torch's do. */
static int64_t unary_i(dl_unary_t op, int64_t x)
{
    switch (op) {
    case DL_UNARY_RELU:
        return x < 0 ? 0 : x;
    case DL_UNARY_ABS:
        return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case DL_UNARY_SIGN:
        return (0 < x) - (x < 0);
    case DL_UNARY_SQUARE:
        return (int64_t)((uint64_t)x * (uint64_t)x);
    default:
        return x; /* floor, ceil and trunc of an integer */
    }
}

dl_status_t dl_tensor_unary(dl_unary_t op, const dl_tensor_t *src, dl_allocator_t *alloc,
                            dl_tensor_t **out_p)
{
    dl_dtype_t odt;
    if (src == NULL || out_p == NULL || dl_unary_dtype(op, src->dtype, &odt) != DL_OK)
        return DL_ERR_INVALID;
    if (!is_host(src))
        return DL_ERR_UNSUPPORTED;
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(odt, src->ndim, src->shape, alloc, &out);
    if (st != DL_OK)
        return st;
    bool fl = dl_dtype_is_float(odt);
    for (size_t i = 0; i < src->numel; i++) {
        if (fl && op == DL_UNARY_SIGMOID && odt != DL_FLOAT64) {
            /* in float, as torch's: exp(100) overflows there, and the
             * sigmoid of -100 is 0, not a subnormal double rounded */
            float x = (float)dl_dtype_get(src->dtype, src->data, i);
            dl_dtype_set(odt, out->data, i, 1.0f / (1.0f + expf(-x)));
            continue;
        }
        if (fl) {
            /* an integer is a float32 first, as torch casts it:
             * sin(123456789) is that of 123456792 */
            double x = dl_dtype_round(odt, dl_dtype_get(src->dtype, src->data, i));
            dl_dtype_set(odt, out->data, i, unary_d(op, x, odt != DL_FLOAT64));
            continue;
        }
        dl_dtype_set_i64(odt, out->data, i,
                         unary_i(op, dl_dtype_get_i64(src->dtype, src->data, i)));
    }
    *out_p = out;
    return DL_OK;
}

/* ------------------------------------------------------------------------
 * Matrix products
 * ------------------------------------------------------------------------ */

dl_status_t dl_tensor_matmul(const dl_tensor_t *a, const dl_tensor_t *b, dl_allocator_t *alloc,
                             dl_tensor_t **out_p)
{
    if (a == NULL || b == NULL || out_p == NULL || a->dtype != b->dtype || a->dtype == DL_BOOL ||
        a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
        return DL_ERR_INVALID;
    if (!is_host(a) || !is_host(b))
        return DL_ERR_UNSUPPORTED;
    /* As matrices: a is rows x inner, b is inner x cols; a 1-D a is one
     * row, a 1-D b one column, and those dimensions leave the result. */
    size_t rows = a->ndim == 2 ? (size_t)a->shape[0] : 1;
    size_t inner = (size_t)a->shape[a->ndim - 1];
    size_t inner_b = (size_t)b->shape[0];
    size_t cols = b->ndim == 2 ? (size_t)b->shape[1] : 1;
    if (inner != inner_b)
        return DL_ERR_INVALID;
    int64_t shape[2];
    int ndim = 0;
    if (a->ndim == 2)
        shape[ndim++] = (int64_t)rows;
    if (b->ndim == 2)
        shape[ndim++] = (int64_t)cols;
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(a->dtype, ndim, shape, alloc, &out);
    if (st != DL_OK)
        return st;
    dl_dtype_t dt = a->dtype;
    bool fl = dl_dtype_is_float(dt);
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = 0; j < cols; j++) {
            double acc = 0;
            uint64_t iacc = 0;
            for (size_t k = 0; k < inner; k++) {
                size_t ia = i * inner + k, ib = k * cols + j;
                if (fl)
                    acc += dl_dtype_get(dt, a->data, ia) * dl_dtype_get(dt, b->data, ib);
                else
                    iacc += (uint64_t)dl_dtype_get_i64(dt, a->data, ia) *
                            (uint64_t)dl_dtype_get_i64(dt, b->data, ib);
            }
            if (fl)
                dl_dtype_set(dt, out->data, i * cols + j, acc);
            else
                dl_dtype_set_i64(dt, out->data, i * cols + j, (int64_t)iacc);
        }
    }
    *out_p = out;
    return DL_OK;
}

dl_status_t dl_tensor_transpose(const dl_tensor_t *src, dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    if (src == NULL || out_p == NULL || src->ndim > 2)
        return DL_ERR_INVALID;
    if (!is_host(src))
        return DL_ERR_UNSUPPORTED;
    if (src->ndim < 2)
        return dl_tensor_clone(src, alloc, out_p);
    int64_t shape[2] = {src->shape[1], src->shape[0]};
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(src->dtype, 2, shape, alloc, &out);
    if (st != DL_OK)
        return st;
    size_t rows = (size_t)src->shape[0], cols = (size_t)src->shape[1];
    size_t es = dl_dtype_size(src->dtype);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            memcpy((uint8_t *)out->data + (j * rows + i) * es,
                   (const uint8_t *)src->data + (i * cols + j) * es, es);
    *out_p = out;
    return DL_OK;
}

/* ------------------------------------------------------------------------
 * Concatenation and pieces
 * ------------------------------------------------------------------------ */

dl_status_t dl_tensor_cat(const dl_tensor_t *const *ts, size_t n, int dim, dl_dtype_t dt,
                          dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    if (ts == NULL || n == 0 || out_p == NULL || ts[0] == NULL || (unsigned)dt >= DL_DTYPE__COUNT)
        return DL_ERR_INVALID;
    const dl_tensor_t *first = ts[0];
    if (dim < 0 || dim >= first->ndim)
        return DL_ERR_INVALID;
    int64_t shape[DL_MAX_DIMS];
    memcpy(shape, first->shape, sizeof(shape));
    shape[dim] = 0;
    for (size_t k = 0; k < n; k++) {
        const dl_tensor_t *t = ts[k];
        if (t == NULL || t->ndim != first->ndim)
            return DL_ERR_INVALID;
        if (!is_host(t))
            return DL_ERR_UNSUPPORTED;
        for (int d = 0; d < t->ndim; d++)
            if (d != dim && t->shape[d] != first->shape[d])
                return DL_ERR_INVALID;
        shape[dim] += t->shape[dim];
    }
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(dt, first->ndim, shape, alloc, &out);
    if (st != DL_OK)
        return st;
    size_t outer, total, inner;
    dl__split_dims(out, dim, &outer, &total, &inner);
    size_t at = 0; /* where along dim the next tensor goes */
    for (size_t k = 0; k < n; k++) {
        const dl_tensor_t *t = ts[k];
        size_t len = (size_t)t->shape[dim], run = len * inner;
        for (size_t o = 0; o < outer; o++)
            for (size_t e = 0; e < run; e++)
                copy_elem(dt, out->data, o * total * inner + at * inner + e, t->dtype, t->data,
                          o * run + e);
        at += len;
    }
    *out_p = out;
    return DL_OK;
}

dl_status_t dl_tensor_narrow(const dl_tensor_t *src, int dim, int64_t start, int64_t len,
                             dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    if (src == NULL || out_p == NULL || dim < 0 || dim >= src->ndim || start < 0 || len < 0 ||
        start + len > src->shape[dim])
        return DL_ERR_INVALID;
    if (!is_host(src))
        return DL_ERR_UNSUPPORTED;
    int64_t shape[DL_MAX_DIMS];
    memcpy(shape, src->shape, sizeof(shape));
    shape[dim] = len;
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(src->dtype, src->ndim, shape, alloc, &out);
    if (st != DL_OK)
        return st;
    size_t outer, n, inner;
    dl__split_dims(src, dim, &outer, &n, &inner);
    size_t es = dl_dtype_size(src->dtype), run = (size_t)len * inner * es;
    for (size_t o = 0; o < outer && run > 0; o++)
        memcpy((uint8_t *)out->data + o * run,
               (const uint8_t *)src->data + (o * n + (size_t)start) * inner * es, run);
    *out_p = out;
    return DL_OK;
}
