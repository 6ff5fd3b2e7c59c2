/* Vector norms and softmax, with torch's semantics (distlab/tensor_math.h).
 *
 * A norm accumulates as torch 1.13's CPU kernel does, in float32 for
 * float32, in the tensor's own precision for float16 and bfloat16 (but a
 * bfloat16 2-norm over its last dimensions in float32) and in double for
 * float64, so that it overflows, underflows and stops growing
 * where torch's does (the 2-norm of [1e20, 1e20] is inf in float32); a
 * float32 or bfloat16 2-norm over the last dimensions adds in the order of
 * torch's vectorised loop (norm2_lanes), any other in the elements' own. Softmax is computed in
 * double and rounded once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "internal.h"

/* One norm's running state, in the accumulator's precision (float or
 * double, both carried here as their own type). */
typedef struct {
    double p;
    dl_dtype_t dt;
    bool wide; /* float64: double; else float */
    double d;
    float f;
    bool nan;
    bool any; /* an element was added: the norm of none is 0, whatever p */
} norm_acc_t;

static void norm_start(norm_acc_t *a, double p, dl_dtype_t dt)
{
    a->p = p;
    a->dt = dt;
    a->wide = dt == DL_FLOAT64;
    a->nan = false;
    a->any = false;
    a->d = p == -INFINITY ? INFINITY : 0;
    a->f = (float)a->d;
}

/* float16 and bfloat16 round every term and every partial sum to their
 * own precision, as torch 1.13's kernel adds in the tensor's dtype (the
 * 1-norm of 3000 float16 ones is 2048 there). */
static float in_dtype(const norm_acc_t *a, float v)
{
    return a->dt == DL_FLOAT32 ? v : (float)dl_dtype_round(a->dt, v);
}

/* p as torch's kernel holds it: a float (its norm kernel reads p into
 * one; the 0.3-norm of float64 takes 0.30000001), then the accumulator's
 * type (acc_t(p): 0.2998 in float16); the root's exponent is 1 / p
 * divided there too. */
static float norm_p(const norm_acc_t *a)
{
    return in_dtype(a, (float)a->p);
}

static void norm_add(norm_acc_t *a, double x)
{
    double ax = fabs(x);
    a->any = true;
    if (isnan(x))
        a->nan = true;
    if (a->p == INFINITY || a->p == -INFINITY) {
        bool up = a->p > 0;
        a->d = up ? (ax > a->d ? ax : a->d) : (ax < a->d ? ax : a->d);
        a->f = (float)a->d;
        return;
    }
    if (a->p == 0) {
        a->d += x != 0;
        a->f = (float)a->d;
        return;
    }
    if (a->wide) {
        /* a 2-norm adds each square with a fused multiply-add, as torch's
         * loop compiles (GCC contracts acc + x * x) */
        a->d = a->p == 2 ? fma(x, x, a->d) : a->d + (a->p == 1 ? ax : pow(ax, norm_p(a)));
    } else {
        float fx = (float)ax;
        if (a->p == 2 && a->dt == DL_FLOAT32) {
            a->f = fmaf(fx, fx, a->f);
            return;
        }
        /* a p-th power of bfloat16 is rounded to bfloat16 (its pow returns
         * one), of float16 kept in float until the sum is rounded */
        float term = a->p == 1 ? fx : a->p == 2 ? in_dtype(a, fx * fx) : powf(fx, norm_p(a));
        a->f = in_dtype(a, a->f + (a->dt == DL_BFLOAT16 ? in_dtype(a, term) : term));
    }
}

static double norm_end(const norm_acc_t *a)
{
    if (!a->any)
        return 0;
    if (a->nan && a->p != 0) /* the 0-norm counts a NaN as non-zero */
        return NAN;
    if (a->p == INFINITY || a->p == -INFINITY || a->p == 0)
        return a->d;
    if (a->wide)
        return a->p == 1 ? a->d : a->p == 2 ? sqrt(a->d) : pow(a->d, 1.0 / norm_p(a));
    return a->p == 1   ? a->f
           : a->p == 2 ? sqrtf(a->f)
                       : powf(a->f, in_dtype(a, in_dtype(a, 1.0f) / norm_p(a)));
}

/* torch 1.13's vectorised 2-norm of n contiguous float32 or bfloat16
 * elements at first (over the tensor's last dimensions), in float: the
 * squares are added into the 8 lanes of a vector, a fused multiply-add
 * each (as GCC builds torch; a bfloat16 vector of 16 is two float
 * vectors, its first 8 elements added, then its last 8); the lanes are
 * added in order, then the last n % L elements (L: 16 for bfloat16, else
 * 8): four at a time with their squares rounded first, then one by one
 * with fused multiply-adds. The order shows in the printed digits: the
 * 2-norm of arange(1200.) is 23984.9941 there, 23984.9863 added in order. */
static double norm2_lanes(const dl_tensor_t *s, size_t first, size_t n)
{
    dl_dtype_t dt = s->dtype;
    size_t block = dt == DL_BFLOAT16 ? 16 : 8, d = 0;
    float lane[8] = {0};
    for (; d + block <= n; d += block)
        for (size_t l = 0; l < block; l++) {
            float x = (float)dl_dtype_get(dt, s->data, first + d + l);
            lane[l % 8] = fmaf(x, x, lane[l % 8]);
        }
    float sum = lane[0];
    for (size_t l = 1; l < 8; l++)
        sum += lane[l];
    size_t fours = d + (n - d) / 4 * 4;
    for (; d < n; d++) {
        float x = (float)dl_dtype_get(dt, s->data, first + d);
        if (d < fours) {
            float sq = x * x;
            sum += sq;
        } else {
            sum = fmaf(x, x, sum);
        }
    }
    return sqrtf(sum);
}

dl_status_t dl_tensor_norm(const dl_tensor_t *src, double p, const bool *reduce, bool keepdim,
                           dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    if (src == NULL || out_p == NULL || !dl_dtype_is_float(src->dtype) || isnan(p))
        return DL_ERR_INVALID;
    if (src->device.type != DL_DEVICE_CPU)
        return DL_ERR_UNSUPPORTED;
    /* The result's shape, and each source element's place in it. */
    bool all[DL_MAX_DIMS];
    for (int d = 0; d < src->ndim; d++)
        all[d] = reduce == NULL || reduce[d];
    int64_t shape[DL_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < src->ndim; d++) {
        if (!all[d])
            shape[ndim++] = src->shape[d];
        else if (keepdim)
            shape[ndim++] = 1;
    }
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(src->dtype, ndim, shape, alloc, &out);
    if (st != DL_OK)
        return st;
    size_t nout = out->numel > 0 ? out->numel : 1;
    norm_acc_t *acc = malloc(nout * sizeof(*acc));
    if (acc == NULL) {
        dl_tensor_free(out);
        return DL_ERR_NOMEM;
    }
    /* torch's float32 and bfloat16 2-norm over the last dimensions (the
     * whole tensor too) takes its vectorised path, which adds bfloat16 in
     * float32; every other bfloat16 and float16 norm adds in the tensor's
     * own precision. */
    bool suffix = true;
    for (int d = 0; d + 1 < src->ndim; d++)
        suffix = suffix && (!all[d] || all[d + 1]);
    if (p == 2 && suffix && (src->dtype == DL_FLOAT32 || src->dtype == DL_BFLOAT16)) {
        size_t n = out->numel > 0 ? src->numel / out->numel : 0;
        for (size_t j = 0; j < out->numel; j++)
            dl_dtype_set(src->dtype, out->data, j, norm2_lanes(src, j * n, n));
        free(acc);
        *out_p = out;
        return DL_OK;
    }
    for (size_t j = 0; j < nout; j++)
        norm_start(&acc[j], p, src->dtype);
    int64_t at[DL_MAX_DIMS] = {0};
    for (size_t i = 0; i < src->numel; i++) {
        size_t j = 0;
        for (int d = 0; d < src->ndim; d++)
            if (!all[d])
                j = j * (size_t)src->shape[d] + (size_t)at[d];
        norm_add(&acc[j], dl_dtype_get(src->dtype, src->data, i));
        for (int d = src->ndim - 1; d >= 0 && ++at[d] == src->shape[d]; d--)
            at[d] = 0;
    }
    for (size_t j = 0; j < out->numel; j++)
        dl_dtype_set(src->dtype, out->data, j, norm_end(&acc[j]));
    free(acc);
    *out_p = out;
    return DL_OK;
}

dl_status_t dl_tensor_softmax(const dl_tensor_t *src, int dim, bool log_of, dl_allocator_t *alloc,
                              dl_tensor_t **out_p)
{
    if (src == NULL || out_p == NULL || !dl_dtype_is_float(src->dtype) ||
        (src->ndim > 0 && (dim < 0 || dim >= src->ndim)))
        return DL_ERR_INVALID;
    if (src->device.type != DL_DEVICE_CPU)
        return DL_ERR_UNSUPPORTED;
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(src->dtype, src->ndim, src->shape, alloc, &out);
    if (st != DL_OK)
        return st;
    size_t outer, n, inner;
    dl__split_dims(src, dim, &outer, &n, &inner);
    for (size_t o = 0; o < outer; o++) {
        for (size_t in = 0; in < inner; in++) {
            size_t first = o * n * inner + in;
            /* exp(x - max) keeps every term at most 1: no overflow */
            double mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < n; j++) {
                double x = dl_dtype_get(src->dtype, src->data, first + j * inner);
                mx = isnan(x) || x > mx ? x : mx;
            }
            for (size_t j = 0; j < n; j++)
                sum += exp(dl_dtype_get(src->dtype, src->data, first + j * inner) - mx);
            for (size_t j = 0; j < n; j++) {
                double x = dl_dtype_get(src->dtype, src->data, first + j * inner) - mx;
                dl_dtype_set(src->dtype, out->data, first + j * inner,
                             log_of ? x - log(sum) : exp(x) / sum);
            }
        }
    }
    *out_p = out;
    return DL_OK;
}
