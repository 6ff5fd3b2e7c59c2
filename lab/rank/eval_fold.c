/* A tensor given to Python's sum, max and min, and torch's all and any.
 *
 * Python's builtins walk a tensor as any iterable, over its rows (its
 * elements, 0-d tensors, for a vector): sum(m) of a matrix adds its rows,
 * one by one from 0, in the tensor's dtype; max and min compare the rows
 * with > and <, which a row of more than one element cannot answer. torch's
 * sum, max and min (written torch.sum(t) or t.sum()) reduce every element
 * instead (eval_math.c). torch.all(t), torch.any(t), t.all() and t.any()
 * are a 0-d bool tensor, where Python's all(t) and any(t) are a bool. */
#include <string.h>

#include "distlab/comm.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* The result r, made on the host, where the tensor was (dev). */
static dl_status_t give(lab_eval_t *ev, dl_tensor_t *r, dl_device_t dev, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_TENSOR;
    out->t = r;
    return lab__eval_to_device(ev, out, dev);
}

/* acc + x, rounded to dt as torch's addition of two such tensors rounds:
 * float32, float16 and bfloat16 add in float, float64 in double, integers
 * wrap. */
static void add_into(dl_dtype_t dt, void *acc, size_t j, dl_dtype_t xdt, const void *x, size_t i)
{
    if (dt == DL_FLOAT64)
        dl_dtype_set(dt, acc, j, dl_dtype_get(dt, acc, j) + dl_dtype_get(xdt, x, i));
    else if (dl_dtype_is_float(dt))
        dl_dtype_set(dt, acc, j,
                     (double)((float)dl_dtype_get(dt, acc, j) + (float)dl_dtype_get(xdt, x, i)));
    else
        dl_dtype_set_i64(dt, acc, j,
                         (int64_t)((uint64_t)dl_dtype_get_i64(dt, acc, j) +
                                   (uint64_t)dl_dtype_get_i64(xdt, x, i)));
}

dl_status_t lab__eval_py_tensor_fold(lab_eval_t *ev, const json_t *node, const char *fn,
                                     const lab_value_t *v, const lab_value_t *start,
                                     lab_value_t *out)
{
    const dl_tensor_t *t = v->t;
    bool sum = strcmp(fn, "sum") == 0, max = strcmp(fn, "max") == 0;
    if (t->ndim == 0)
        return fail(ev, node, "iteration over a 0-d tensor");
    size_t rows = (size_t)t->shape[0], row = rows > 0 ? t->numel / rows : 0;
    if (rows == 0 && sum) { /* Python's sum of nothing: its start, 0 */
        if (start != NULL)
            return lab_value_copy(start, dl_comm_allocator(ev->r->comm), out);
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_INT;
        return DL_OK;
    }
    if (rows == 0)
        return fail(ev, node, "%s() arg is an empty sequence", fn);
    if (!sum && rows > 1 && row != 1)
        return fail(ev, node,
                    "Boolean value of Tensor with more than one value is ambiguous (%s() compares "
                    "the rows of a tensor of %d dimensions; torch.%s(t) is its largest element)",
                    fn, t->ndim, fn);
    lab_value_t hv;
    dl_status_t st = lab__eval_host_view(ev, v, &hv);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *h = hv.t;
    dl_tensor_t *r = NULL;
    /* 0 + True is 1; 0.5 + an integer tensor is float32 */
    dl_dtype_t dt = sum && t->dtype == DL_BOOL ? DL_INT64 : t->dtype;
    if (sum && start != NULL && start->kind == LAB_V_FLOAT && !dl_dtype_is_float(dt))
        dt = DL_FLOAT32;
    st = dl_tensor_new(dt, t->ndim - 1, t->shape + 1, dl_comm_allocator(ev->r->comm), &r);
    if (st != DL_OK) {
        lab_value_clear(&hv);
        return fail(ev, node, "cannot allocate a tensor: %s", dl_strerror(st));
    }
    if (sum) {
        memset(r->data, 0, dl_tensor_nbytes(r));
        for (size_t j = 0; start != NULL && j < row; j++) /* sum(t, start) */
            if (start->kind == LAB_V_FLOAT || dl_dtype_is_float(dt))
                dl_dtype_set(dt, r->data, j,
                             start->kind == LAB_V_FLOAT ? start->f : (double)start->i);
            else
                dl_dtype_set_i64(dt, r->data, j, start->i);
        for (size_t k = 0; k < rows; k++)
            for (size_t j = 0; j < row; j++)
                add_into(dt, r->data, j, h->dtype, h->data, k * row + j);
    } else {
        /* one row, given back as it is; else elements, the first of the
         * largest (a NaN compares false either way: it stays if first) */
        size_t best = 0;
        for (size_t k = 1; k < rows; k++) {
            bool better;
            if (dl_dtype_is_float(dt)) {
                double x = dl_dtype_get(dt, h->data, k), b = dl_dtype_get(dt, h->data, best);
                better = max ? x > b : x < b;
            } else {
                int64_t x = dl_dtype_get_i64(dt, h->data, k),
                        b = dl_dtype_get_i64(dt, h->data, best);
                better = max ? x > b : x < b;
            }
            if (better)
                best = k;
        }
        memcpy(r->data, (const char *)h->data + best * row * dl_dtype_size(dt),
               row * dl_dtype_size(dt));
    }
    lab_value_clear(&hv);
    return give(ev, r, t->device, out);
}

dl_status_t lab__eval_tensor_all_any(lab_eval_t *ev, const json_t *node, const char *fn,
                                     const lab_value_t *pos, int npos, const json_t *kw,
                                     lab_value_t *out)
{
    bool any = strcmp(fn, "any") == 0;
    if (json_object_size(kw) != 0 || npos != 1)
        return fail(ev, node, "torch.%s(input) takes one tensor here (no dim=)", fn);
    if (pos[0].kind != LAB_V_TENSOR)
        return fail(ev, node, "%s(): argument 'input' (position 1) must be Tensor, not %s", fn,
                    lab__eval_type_name(&pos[0]));
    lab_value_t h;
    dl_status_t st = lab__eval_host_view(ev, &pos[0], &h);
    if (st != DL_OK)
        return st;
    bool result = !any;
    for (size_t i = 0; i < h.t->numel && result == !any; i++)
        if ((dl_dtype_get(h.t->dtype, h.t->data, i) != 0) == any)
            result = any; /* NaN is true, as torch's */
    lab_value_clear(&h);
    dl_tensor_t *r = NULL;
    /* torch 1.13 keeps uint8 for a uint8 tensor's, as NumPy once did */
    dl_dtype_t dt = pos[0].t->dtype == DL_UINT8 ? DL_UINT8 : DL_BOOL;
    if ((st = dl_tensor_new(dt, 0, NULL, dl_comm_allocator(ev->r->comm), &r)) != DL_OK)
        return fail(ev, node, "cannot allocate a tensor: %s", dl_strerror(st));
    dl_dtype_set(dt, r->data, 0, result);
    return give(ev, r, pos[0].t->device, out);
}

dl_status_t lab__eval_py_max_of(lab_eval_t *ev, const json_t *node, const char *fn,
                                const lab_value_t *pos, int npos, lab_value_t *out)
{
    bool max = strcmp(fn, "max") == 0;
    double best = 0;
    int at = -1;
    for (int k = 0; k < npos; k++) {
        const lab_value_t *v = &pos[k];
        double x;
        if (lab__eval_is_number(v)) {
            x = v->kind == LAB_V_FLOAT ? v->f : (double)v->i;
        } else if (v->kind == LAB_V_TENSOR && v->t->numel == 1) {
            lab_value_t h;
            dl_status_t st = lab__eval_host_view(ev, v, &h);
            if (st != DL_OK)
                return st;
            x = dl_dtype_get(h.t->dtype, h.t->data, 0);
            lab_value_clear(&h);
        } else if (v->kind == LAB_V_TENSOR) {
            return fail(ev, node,
                        "Boolean value of Tensor with more than one value is ambiguous (%s(a, b) "
                        "compares; torch.%simum(a, b) is the element-wise %simum)",
                        fn, fn, fn);
        } else {
            return fail(ev, node, "'%s' not supported between instances of '%s' and '%s'",
                        max ? ">" : "<", lab__eval_type_name(v),
                        lab__eval_type_name(&pos[k == 0 ? 1 : 0]));
        }
        /* Python keeps the first of equals, and a NaN compares false */
        if (at < 0 || (max ? x > best : x < best)) {
            best = x;
            at = k;
        }
    }
    return lab_value_copy(&pos[at], dl_comm_allocator(ev->r->comm), out);
}
