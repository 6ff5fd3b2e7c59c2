/* Orders and running totals along one dimension, with torch's semantics
 * (distlab/tensor_math.h): sort, topk, cumsum and cumprod.
 *
 * A dimension splits a tensor into outer x n x inner elements, as in
 * math.c: the n elements along dim of one (outer, inner) pair are inner
 * apart. Each such row is ordered through an index array, merge-sorted so
 * that equal elements keep their order (torch's CPU sort is stable in both
 * directions: descending is not the reverse of ascending). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor_math.h"

/* The sizes before, at and after dimension dim (a 0-d tensor: one row of
 * one element). */
static void rows_of(const dl_tensor_t *t, int dim, size_t *outer, size_t *n, size_t *inner)
{
    *outer = 1;
    *inner = 1;
    *n = t->ndim > 0 ? (size_t)t->shape[dim] : 1;
    for (int d = 0; d < dim; d++)
        *outer *= (size_t)t->shape[d];
    for (int d = dim + 1; d < t->ndim; d++)
        *inner *= (size_t)t->shape[d];
}

/* One row's keys: doubles for a float dtype, int64 otherwise (an int64
 * past 2^53 keeps its digits). */
typedef struct {
    bool is_float;
    bool descending;
    const double *f;
    const int64_t *i;
} keys_t;

/* Whether element a goes before element b: ascending puts NaN last,
 * descending first, as torch orders them. */
static bool before(const keys_t *k, int64_t a, int64_t b)
{
    if (!k->is_float)
        return k->descending ? k->i[a] > k->i[b] : k->i[a] < k->i[b];
    double x = k->f[a], y = k->f[b];
    if (k->descending)
        return (isnan(x) && !isnan(y)) || x > y;
    return (!isnan(x) && isnan(y)) || x < y;
}

/* Sorts idx[0 .. n-1] stably by keys, through tmp (n entries). */
static void merge_sort(const keys_t *k, int64_t *idx, int64_t *tmp, size_t n)
{
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = before(k, idx[b], idx[a]) ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, n * sizeof(*idx));
    }
}

/* The first k of each row of src in order (k = n: all of them), into
 * values (src's dtype) and indices (int64) of src's shape with k along dim. */
static dl_status_t order_rows(const dl_tensor_t *src, int dim, bool descending, size_t k,
                              dl_allocator_t *alloc, dl_tensor_t **values_p,
                              dl_tensor_t **indices_p)
{
    if (src == NULL || values_p == NULL || indices_p == NULL ||
        (src->ndim > 0 && (dim < 0 || dim >= src->ndim)))
        return DL_ERR_INVALID;
    if (src->device.type != DL_DEVICE_CPU)
        return DL_ERR_UNSUPPORTED;
    size_t outer, n, inner;
    rows_of(src, dim, &outer, &n, &inner);
    if (k > n)
        return DL_ERR_INVALID;
    int64_t shape[DL_MAX_DIMS];
    memcpy(shape, src->shape, sizeof(int64_t) * (size_t)src->ndim);
    if (src->ndim > 0)
        shape[dim] = (int64_t)k;
    dl_tensor_t *values = NULL, *indices = NULL;
    dl_status_t st = dl_tensor_new(src->dtype, src->ndim, shape, alloc, &values);
    if (st == DL_OK)
        st = dl_tensor_new(DL_INT64, src->ndim, shape, alloc, &indices);
    keys_t keys = {dl_dtype_is_float(src->dtype), descending, NULL, NULL};
    size_t m = n > 0 ? n : 1;
    int64_t *idx = malloc(m * sizeof(*idx)), *tmp = malloc(m * sizeof(*tmp));
    void *kv = malloc(m * (keys.is_float ? sizeof(double) : sizeof(int64_t)));
    if (st == DL_OK && (idx == NULL || tmp == NULL || kv == NULL))
        st = DL_ERR_NOMEM;
    keys.f = kv;
    keys.i = kv;
    for (size_t o = 0; st == DL_OK && o < outer; o++) {
        for (size_t in = 0; in < inner; in++) {
            size_t first = o * n * inner + in;
            for (size_t j = 0; j < n; j++) {
                idx[j] = (int64_t)j;
                if (keys.is_float)
                    ((double *)kv)[j] = dl_dtype_get(src->dtype, src->data, first + j * inner);
                else
                    ((int64_t *)kv)[j] = dl_dtype_get_i64(src->dtype, src->data, first + j * inner);
            }
            merge_sort(&keys, idx, tmp, n);
            size_t out_first = o * k * inner + in;
            for (size_t j = 0; j < k; j++) {
                size_t at = out_first + j * inner;
                memcpy((char *)values->data + at * dl_dtype_size(src->dtype),
                       (const char *)src->data +
                           (first + (size_t)idx[j] * inner) * dl_dtype_size(src->dtype),
                       dl_dtype_size(src->dtype));
                ((int64_t *)indices->data)[at] = idx[j];
            }
        }
    }
    free(idx);
    free(tmp);
    free(kv);
    if (st != DL_OK) {
        dl_tensor_free(values);
        dl_tensor_free(indices);
        return st;
    }
    *values_p = values;
    *indices_p = indices;
    return DL_OK;
}

dl_status_t dl_tensor_sort(const dl_tensor_t *src, int dim, bool descending, dl_allocator_t *alloc,
                           dl_tensor_t **values_p, dl_tensor_t **indices_p)
{
    if (src == NULL)
        return DL_ERR_INVALID;
    size_t outer, n, inner;
    if (src->ndim > 0 && (dim < 0 || dim >= src->ndim))
        return DL_ERR_INVALID;
    rows_of(src, dim, &outer, &n, &inner);
    return order_rows(src, dim, descending, n, alloc, values_p, indices_p);
}

dl_status_t dl_tensor_topk(const dl_tensor_t *src, int64_t k, int dim, bool largest,
                           dl_allocator_t *alloc, dl_tensor_t **values_p, dl_tensor_t **indices_p)
{
    if (k < 0)
        return DL_ERR_INVALID;
    return order_rows(src, dim, largest, (size_t)k, alloc, values_p, indices_p);
}

dl_status_t dl_tensor_cumulative(bool prod, const dl_tensor_t *src, int dim, dl_dtype_t odt,
                                 dl_allocator_t *alloc, dl_tensor_t **out_p)
{
    bool fl = dl_dtype_is_float(odt);
    if (src == NULL || out_p == NULL || (src->ndim > 0 && (dim < 0 || dim >= src->ndim)) ||
        odt == DL_FLOAT16 || odt == DL_BOOL || (fl && src->dtype != odt) ||
        (!fl && dl_dtype_is_float(src->dtype)))
        return DL_ERR_INVALID;
    if (src->device.type != DL_DEVICE_CPU)
        return DL_ERR_UNSUPPORTED;
    dl_tensor_t *out = NULL;
    dl_status_t st = dl_tensor_new(odt, src->ndim, src->shape, alloc, &out);
    if (st != DL_OK)
        return st;
    size_t outer, n, inner;
    rows_of(src, dim, &outer, &n, &inner);
    for (size_t o = 0; o < outer; o++) {
        for (size_t in = 0; in < inner; in++) {
            size_t first = o * n * inner + in;
            /* The accumulator is torch's CPU acc_type: int64 for integers
             * (wrapping), double for float32 and float64, float for
             * bfloat16; each total is rounded to the result on its own. */
            uint64_t ai = prod ? 1 : 0;
            double ad = prod ? 1 : 0;
            float af = prod ? 1 : 0;
            for (size_t j = 0; j < n; j++) {
                size_t at = first + j * inner;
                if (!fl) {
                    uint64_t x = (uint64_t)dl_dtype_get_i64(src->dtype, src->data, at);
                    ai = prod ? ai * x : ai + x;
                    dl_dtype_set_i64(odt, out->data, at, (int64_t)ai);
                } else if (odt == DL_BFLOAT16) {
                    float x = (float)dl_dtype_get(src->dtype, src->data, at);
                    af = prod ? af * x : af + x;
                    dl_dtype_set(odt, out->data, at, af);
                } else {
                    double x = dl_dtype_get(src->dtype, src->data, at);
                    ad = prod ? ad * x : ad + x;
                    dl_dtype_set(odt, out->data, at, ad);
                }
            }
        }
    }
    *out_p = out;
    return DL_OK;
}
