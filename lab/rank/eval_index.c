/* torch's indexing by a tensor or a list along the first dimensions:
 * t[mask] with a bool mask (the elements, or rows, where it is True, in
 * order) and t[idx] with integers (those rows, repeats allowed), read as
 * a new tensor, and written: t[t < 0] = 0, t[idx] += 1. A host tensor's
 * rows are blocks of the elements past the indexed dimensions. */
#include <stdlib.h>
#include <string.h>

#include "distlab/comm.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

bool lab__eval_is_fancy_index(const lab_value_t *at)
{
    /* a tensor of no dimensions is a mask when bool or uint8, else an int
     * (index_scalar); an empty list selects no row */
    if (at->kind == LAB_V_TENSOR)
        return !dl_dtype_is_float(at->t->dtype) &&
               (at->t->ndim > 0 || at->t->dtype == DL_BOOL || at->t->dtype == DL_UINT8);
    if (at->kind != LAB_V_LIST || at->tuple || at->name[0] != '\0')
        return false;
    for (size_t i = 0; i < at->n; i++)
        if (at->items[i].kind != LAB_V_INT && at->items[i].kind != LAB_V_BOOL)
            return false;
    return true;
}

bool lab__eval_is_mask_index(const lab_value_t *at)
{
    if (at->kind == LAB_V_TENSOR)
        return at->t->dtype == DL_BOOL || at->t->dtype == DL_UINT8;
    bool bools = at->kind == LAB_V_LIST && at->n > 0;
    for (size_t i = 0; bools && i < at->n; i++)
        bools = at->items[i].kind == LAB_V_BOOL;
    return bools;
}

/* The index as a host tensor of its own (a list made into one: bools a
 * mask only when all of them are, as torch reads [True, False]). */
static dl_status_t index_tensor(const lab_value_t *at, dl_tensor_t **t_p)
{
    if (at->kind == LAB_V_TENSOR)
        return dl_tensor_to(at->t, (dl_device_t){DL_DEVICE_CPU, 0}, t_p);
    bool bools = at->n > 0; /* [] is an empty int64 index, as torch reads it */
    for (size_t i = 0; i < at->n; i++)
        bools = bools && at->items[i].kind == LAB_V_BOOL;
    int64_t shape[1] = {(int64_t)at->n};
    dl_status_t st = dl_tensor_new(bools ? DL_BOOL : DL_INT64, 1, shape, NULL, t_p);
    if (st != DL_OK)
        return st;
    for (size_t i = 0; i < at->n; i++)
        dl_dtype_set_i64((*t_p)->dtype, (*t_p)->data, i, at->items[i].i);
    return DL_OK;
}

/* The rows of a tensor an index selects, in order, each a block of
 * `block` elements, and the shape of what they make. */
typedef struct {
    int64_t *rows;
    size_t n, block;
    int ndim;
    int64_t shape[DL_MAX_DIMS];
} selection_t;

/* The rows of base that at selects (sel->rows malloc'd on success). */
static dl_status_t select_rows(lab_eval_t *ev, const json_t *node, const dl_tensor_t *base,
                               const lab_value_t *at, selection_t *sel)
{
    dl_tensor_t *idx = NULL;
    dl_status_t st = index_tensor(at, &idx);
    if (st != DL_OK)
        return fail(ev, node, "cannot read the index: %s", dl_strerror(st));
    /* uint8 is a mask too, as torch 1.13 still reads it (with a warning) */
    bool mask = idx->dtype == DL_BOOL || idx->dtype == DL_UINT8;
    int k = mask ? idx->ndim : 1; /* the dimensions of base the index takes */
    if (k > base->ndim) {
        int n = base->ndim;
        dl_tensor_free(idx);
        return fail(ev, node, "too many indices for tensor of dimension %d", n);
    }
    if (mask) {
        for (int d = 0; d < k; d++) {
            if (idx->shape[d] != base->shape[d]) {
                st = fail(ev, node,
                          "The shape of the mask [%lld] at index %d does not match the shape of "
                          "the indexed tensor [%lld] at index %d",
                          (long long)idx->shape[d], d, (long long)base->shape[d], d);
                dl_tensor_free(idx);
                return st;
            }
        }
    }
    sel->block = 1;
    for (int d = k; d < base->ndim; d++)
        sel->block *= (size_t)base->shape[d];
    if ((sel->rows = malloc((idx->numel ? idx->numel : 1) * sizeof(*sel->rows))) == NULL) {
        dl_tensor_free(idx);
        return DL_ERR_NOMEM;
    }
    sel->n = 0;
    for (size_t i = 0; i < idx->numel; i++) {
        int64_t v = dl_dtype_get_i64(idx->dtype, idx->data, i);
        if (mask) {
            if (v != 0)
                sel->rows[sel->n++] = (int64_t)i;
            continue;
        }
        int64_t size = base->shape[0], r = v < 0 ? v + size : v;
        if (r < 0 || r >= size) {
            free(sel->rows);
            dl_tensor_free(idx);
            return fail(ev, node, "index %lld is out of bounds for dimension 0 with size %lld",
                        (long long)v, (long long)size);
        }
        sel->rows[sel->n++] = r;
    }
    /* mask: (count, rest...); integers: (idx's shape..., rest...) */
    int nd = 0;
    if (mask)
        sel->shape[nd++] = (int64_t)sel->n;
    else
        for (int d = 0; d < idx->ndim && nd < DL_MAX_DIMS; d++)
            sel->shape[nd++] = idx->shape[d];
    dl_tensor_free(idx);
    for (int d = k; d < base->ndim; d++) {
        if (nd == DL_MAX_DIMS) {
            free(sel->rows);
            return fail(ev, node, "the result would have more than %d dimensions", DL_MAX_DIMS);
        }
        sel->shape[nd++] = base->shape[d];
    }
    sel->ndim = nd;
    return DL_OK;
}

/* The selected rows of base copied into a new tensor. */
static dl_status_t gather(lab_eval_t *ev, const json_t *node, const dl_tensor_t *base,
                          const selection_t *sel, lab_value_t *out)
{
    dl_tensor_t *t = NULL;
    dl_status_t st =
        dl_tensor_new(base->dtype, sel->ndim, sel->shape, dl_comm_allocator(ev->r->comm), &t);
    if (st != DL_OK)
        return fail(ev, node, "cannot allocate a tensor: %s", dl_strerror(st));
    size_t bytes = sel->block * dl_dtype_size(base->dtype);
    for (size_t i = 0; bytes > 0 && i < sel->n; i++)
        memcpy((uint8_t *)t->data + i * bytes, (const uint8_t *)base->data + sel->rows[i] * bytes,
               bytes);
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_TENSOR;
    out->t = t;
    return DL_OK;
}

dl_status_t lab__eval_fancy_get(lab_eval_t *ev, const json_t *node, const dl_tensor_t *base,
                                const lab_value_t *at, lab_value_t *out)
{
    selection_t sel;
    dl_status_t st = select_rows(ev, node, base, at, &sel);
    if (st != DL_OK)
        return st;
    st = gather(ev, node, base, &sel, out);
    free(sel.rows);
    return st;
}

dl_status_t lab__eval_fancy_set(lab_eval_t *ev, const json_t *node, dl_tensor_t *base,
                                const lab_value_t *at, const char *op, const lab_value_t *value)
{
    /* The selected rows gathered, the new values written into them (with
     * torch's broadcast and casts, or op applied first), scattered back. */
    if (op == NULL && value->kind == LAB_V_TENSOR && value->t->dtype != base->dtype &&
        !(lab__eval_is_mask_index(at) && value->t->ndim == 0))
        /* torch's index_put; a mask and a value of no dimensions is its
         * masked_fill, which casts */
        return fail(ev, node,
                    "Index put requires the source and destination dtypes match, got %s for the "
                    "destination and %s for the source.",
                    lab__eval_scalar_type(base->dtype), lab__eval_scalar_type(value->t->dtype));
    selection_t sel;
    dl_status_t st = select_rows(ev, node, base, at, &sel);
    if (st != DL_OK)
        return st;
    lab_value_t cur = {0}, res = {0};
    const lab_value_t *src = value;
    if ((st = gather(ev, node, base, &sel, &cur)) != DL_OK)
        goto out;
    if (op != NULL) {
        if ((st = lab__eval_arith(ev, node, op, &cur, value, &res)) != DL_OK)
            goto out;
        bool same = res.t->ndim == cur.t->ndim;
        for (int d = 0; same && d < res.t->ndim; d++)
            same = res.t->shape[d] == cur.t->shape[d];
        if (!same) {
            /* t[mask] += y keeps the selection's shape, as x += y does */
            char want[96], got[96];
            lab__eval_shape_text(cur.t->ndim, cur.t->shape, want, sizeof(want));
            lab__eval_shape_text(res.t->ndim, res.t->shape, got, sizeof(got));
            st = fail(ev, node, "output with shape %s doesn't match the broadcast shape %s", want,
                      got);
            goto out;
        }
        src = &res;
    }
    if ((st = lab__eval_write_into(ev, node, cur.t, src, op != NULL)) != DL_OK)
        goto out;
    size_t bytes = sel.block * dl_dtype_size(base->dtype);
    for (size_t i = 0; bytes > 0 && i < sel.n; i++) /* a row named twice keeps its last value */
        memcpy((uint8_t *)base->data + sel.rows[i] * bytes,
               (const uint8_t *)cur.t->data + i * bytes, bytes);
out:
    free(sel.rows);
    lab_value_clear(&res);
    lab_value_clear(&cur);
    return st;
}
