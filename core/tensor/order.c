/* Orders and running totals along one dimension, with torch's semantics
 * (distlab/tensor_math.h): sort, topk, cumsum and cumprod.
 *
 * A dimension splits a tensor into rows (dl__split_dims). Each row is ordered through an index
 * array: merge-sorted where equal elements must keep their order (sort's stable=True, topk), else
 * as C++'s std::sort leaves them, as torch's default sort does. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "internal.h"

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

/* ---- the order of an unstable sort ----
 *
 * torch's sort without stable=True is C++'s std::sort, an introsort:
 * equal elements of a row of more than 16 come out in the order its
 * partitions leave them. The functions below are that algorithm as
 * libstdc++ (GCC's library, which torch's builds use) writes it, step for
 * step, on the index array, so that such a row's indices are torch's. */

static void swap_idx(int64_t *a, int64_t *b)
{
    int64_t t = *a;
    *a = *b;
    *b = t;
}

/* Moves the median of a, b and c to result (std::__move_median_to_first). */
static void median_to_first(const keys_t *k, int64_t *result, int64_t *a, int64_t *b, int64_t *c)
{
    if (before(k, *a, *b)) {
        if (before(k, *b, *c))
            swap_idx(result, b);
        else if (before(k, *a, *c))
            swap_idx(result, c);
        else
            swap_idx(result, a);
    } else if (before(k, *a, *c)) {
        swap_idx(result, a);
    } else if (before(k, *b, *c)) {
        swap_idx(result, c);
    } else {
        swap_idx(result, b);
    }
}

/* std::__unguarded_partition around the pivot at *pivot. */
static int64_t *partition(const keys_t *k, int64_t *first, int64_t *last, const int64_t *pivot)
{
    for (;;) {
        while (before(k, *first, *pivot))
            first++;
        last--;
        while (before(k, *pivot, *last))
            last--;
        if (!(first < last))
            return first;
        swap_idx(first, last);
        first++;
    }
}

/* std::__adjust_heap and __push_heap: a max-heap of `before` in
 * first[0 .. len-1], the hole at hole filled with v. */
static void adjust_heap(const keys_t *k, int64_t *first, ptrdiff_t hole, ptrdiff_t len, int64_t v)
{
    ptrdiff_t top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (before(k, first[child], first[child - 1]))
            child--;
        first[hole] = first[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        first[hole] = first[child - 1];
        hole = child - 1;
    }
    for (ptrdiff_t parent = (hole - 1) / 2; hole > top && before(k, first[parent], v);
         parent = (hole - 1) / 2) {
        first[hole] = first[parent];
        hole = parent;
    }
    first[hole] = v;
}

/* std::__partial_sort(first, last, last): __heap_select then
 * __sort_heap, the introsort's way out of a deep recursion. */
static void heap_sort(const keys_t *k, int64_t *first, int64_t *last)
{
    ptrdiff_t len = last - first;
    if (len < 2)
        return;
    for (ptrdiff_t parent = (len - 2) / 2;; parent--) {
        adjust_heap(k, first, parent, len, first[parent]);
        if (parent == 0)
            break;
    }
    while (last - first > 1) {
        last--;
        int64_t v = *last;
        *last = *first;
        adjust_heap(k, first, 0, last - first, v);
    }
}

#define INSERTION_MAX 16 /* std::sort's _S_threshold */

static void introsort_loop(const keys_t *k, int64_t *first, int64_t *last, int depth)
{
    while (last - first > INSERTION_MAX) {
        if (depth == 0) {
            heap_sort(k, first, last);
            return;
        }
        depth--;
        int64_t *mid = first + (last - first) / 2;
        median_to_first(k, first, first + 1, mid, last - 1);
        int64_t *cut = partition(k, first + 1, last, first);
        introsort_loop(k, cut, last, depth);
        last = cut;
    }
}

/* std::__unguarded_linear_insert: *at moved down past the larger ones. */
static void linear_insert(const keys_t *k, int64_t *at)
{
    int64_t v = *at;
    for (int64_t *prev = at - 1; before(k, v, *prev); prev--) {
        *at = *prev;
        at = prev;
    }
    *at = v;
}

/* std::__final_insertion_sort. */
static void insertion_sort(const keys_t *k, int64_t *first, int64_t *last)
{
    int64_t *guarded_end = last - first > INSERTION_MAX ? first + INSERTION_MAX : last;
    for (int64_t *i = first + 1; i < guarded_end; i++) {
        if (before(k, *i, *first)) {
            int64_t v = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof(*first));
            *first = v;
        } else {
            linear_insert(k, i);
        }
    }
    for (int64_t *i = guarded_end; i < last; i++)
        linear_insert(k, i);
}

/* std::sort of idx[0 .. n-1] by keys. */
static void intro_sort(const keys_t *k, int64_t *idx, size_t n)
{
    if (n < 2)
        return;
    int lg = 0;
    while (((size_t)1 << (lg + 1)) <= n)
        lg++;
    introsort_loop(k, idx, idx + n, 2 * lg);
    insertion_sort(k, idx, idx + n);
}

#define WHOLE_ROW SIZE_MAX /* order_rows's k: every element of the row */

/* The first k of each row of src in order (WHOLE_ROW: all of them), into
 * values (src's dtype) and indices (int64) of src's shape with k along dim. */
static dl_status_t order_rows(const dl_tensor_t *src, int dim, bool descending, bool stable,
                              size_t k, dl_allocator_t *alloc, dl_tensor_t **values_p,
                              dl_tensor_t **indices_p)
{
    if (src == NULL || values_p == NULL || indices_p == NULL ||
        (src->ndim > 0 && (dim < 0 || dim >= src->ndim)))
        return DL_ERR_INVALID;
    if (src->device.type != DL_DEVICE_CPU)
        return DL_ERR_UNSUPPORTED;
    size_t outer, n, inner;
    dl__split_dims(src, dim, &outer, &n, &inner);
    if (k == WHOLE_ROW)
        k = n;
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
    size_t esz = dl_dtype_size(src->dtype);
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
            if (stable)
                merge_sort(&keys, idx, tmp, n);
            else
                intro_sort(&keys, idx, n);
            size_t out_first = o * k * inner + in;
            for (size_t j = 0; j < k; j++) {
                size_t at = out_first + j * inner;
                memcpy((char *)values->data + at * esz,
                       (const char *)src->data + (first + (size_t)idx[j] * inner) * esz, esz);
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

dl_status_t dl_tensor_sort(const dl_tensor_t *src, int dim, bool descending, bool stable,
                           dl_allocator_t *alloc, dl_tensor_t **values_p, dl_tensor_t **indices_p)
{
    return order_rows(src, dim, descending, stable, WHOLE_ROW, alloc, values_p, indices_p);
}

dl_status_t dl_tensor_topk(const dl_tensor_t *src, int64_t k, int dim, bool largest,
                           dl_allocator_t *alloc, dl_tensor_t **values_p, dl_tensor_t **indices_p)
{
    if (k < 0 || (uint64_t)k >= WHOLE_ROW)
        return DL_ERR_INVALID;
    return order_rows(src, dim, largest, true, (size_t)k, alloc, values_p, indices_p);
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
    dl__split_dims(src, dim, &outer, &n, &inner);
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
