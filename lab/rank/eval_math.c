/* Tensor maths of the shell language: sum, mean, max, min (with dim, the
 * pair of values and indices), argmax, argmin, sqrt, exp, abs,
 * relu, matmul (and @), dot, mm, t.T, reshape, clone, t.item(), cat,
 * stack, chunk and split, as functions and as torch's methods (t.sum() is
 * sum(t)); sort, topk, cumsum (eval_order.c), norm and softmax
 * (eval_norm.c) are bound there.
 *
 * The kernels are core's (distlab/tensor_math.h); this file binds the
 * arguments as torch does and words torch's errors. Tensors on a GPU are
 * computed on host copies and the result moved back, as elsewhere in the
 * evaluator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

static const dl_device_t host_dev = {DL_DEVICE_CPU, 0};

static dl_allocator_t *alloc_of(lab_eval_t *ev)
{
    return dl_comm_allocator(ev->r->comm);
}

/* How torch's C++ errors name a dtype ("Got: Long"). */
const char *lab__eval_scalar_type(dl_dtype_t dt)
{
    static const char *const names[DL_DTYPE__COUNT] = {
        [DL_BOOL] = "Bool",         [DL_INT8] = "Char",     [DL_UINT8] = "Byte",
        [DL_INT32] = "Int",         [DL_INT64] = "Long",    [DL_FLOAT16] = "Half",
        [DL_BFLOAT16] = "BFloat16", [DL_FLOAT32] = "Float", [DL_FLOAT64] = "Double",
    };
    return (unsigned)dt < DL_DTYPE__COUNT ? names[dt] : "?";
}

/* Checks that argument v of fn is a tensor. */
static dl_status_t need_tensor(lab_eval_t *ev, const json_t *node, const char *fn,
                               const lab_value_t *v, int position)
{
    if (v->kind == LAB_V_TENSOR)
        return DL_OK;
    if (v->kind == LAB_V_NAME)
        return lab__eval_fail_undefined(ev, node, v);
    return fail(ev, node, "%s(): argument %d must be a tensor, not %s", fn, position,
                lab_vkind_a(v->kind));
}

/* A cuda tensor in v (or in the items of a list v) replaced by a host copy;
 * *dev_p receives its device (the first one met), else stays as it was. */
static dl_status_t to_host(lab_eval_t *ev, lab_value_t *v, dl_device_t *dev_p)
{
    if (v->kind == LAB_V_LIST) {
        for (size_t i = 0; i < v->n; i++) {
            dl_status_t st = to_host(ev, &v->items[i], dev_p);
            if (st != DL_OK)
                return st;
        }
        return DL_OK;
    }
    if (v->kind != LAB_V_TENSOR || v->t->device.type != DL_DEVICE_CUDA)
        return DL_OK;
    dl_tensor_t *h = NULL;
    if (dl_tensor_to(v->t, host_dev, &h) != DL_OK) {
        snprintf(ev->error, sizeof(ev->error), "cannot copy the tensor from the GPU");
        return DL_ERR_SYSTEM;
    }
    if (dev_p->type == DL_DEVICE_CPU)
        *dev_p = v->t->device;
    if (!v->borrowed)
        dl_tensor_free(v->t);
    v->borrowed = false;
    v->t = h;
    return DL_OK;
}

/* Moves the tensors of out (a tensor or a list of them) to dev. */
static dl_status_t to_dev(lab_eval_t *ev, lab_value_t *out, dl_device_t dev)
{
    if (dev.type == DL_DEVICE_CPU)
        return DL_OK;
    if (out->kind == LAB_V_LIST) {
        for (size_t i = 0; i < out->n; i++) {
            dl_status_t st = to_dev(ev, &out->items[i], dev);
            if (st != DL_OK)
                return st;
        }
        return DL_OK;
    }
    if (out->kind != LAB_V_TENSOR)
        return DL_OK;
    dl_tensor_t *g = NULL;
    if (dl_tensor_to(out->t, dev, &g) != DL_OK) {
        snprintf(ev->error, sizeof(ev->error), "cannot copy the result to the GPU");
        return DL_ERR_SYSTEM;
    }
    dl_tensor_free(out->t);
    out->t = g;
    return DL_OK;
}

/* An integer argument: the positional one at index at, or keyword key, or
 * def when neither is given (*given_p, when not NULL, says which). fn, when
 * not NULL, names the function in the messages. */
static dl_status_t int_arg(lab_eval_t *ev, const json_t *node, const char *fn,
                           const lab_value_t *pos, int npos, int at, const json_t *kw,
                           const char *key, int64_t def, bool *given_p, int64_t *v_p)
{
    const char *of = fn != NULL ? fn : "", *call = fn != NULL ? "() " : "";
    const json_t *knode = json_object_get(kw, key);
    *v_p = def;
    if (given_p != NULL)
        *given_p = false;
    if (knode != NULL && npos > at)
        return fail(ev, knode, "%s%sgot multiple values for argument '%s'", of, call, key);
    lab_value_t v = {0};
    const lab_value_t *d = npos > at ? &pos[at] : NULL;
    if (knode != NULL) {
        dl_status_t st = lab_eval_expr(ev, knode, &v);
        if (st != DL_OK)
            return st;
        d = &v;
    }
    if (d == NULL)
        return DL_OK;
    bool ok = d->kind == LAB_V_INT;
    lab_vkind_t kind = d->kind;
    *v_p = d->i;
    lab_value_clear(&v);
    if (!ok)
        return fail(ev, knode != NULL ? knode : node, "%s%s%s must be an integer, not %s", of,
                    fn != NULL ? "(): " : "", key, lab_vkind_a(kind));
    if (given_p != NULL)
        *given_p = true;
    return DL_OK;
}

/* dim= (or the positional argument at index pos), an integer; *given_p
 * says whether there was one. */
static dl_status_t dim_arg(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                           int at, const json_t *kw, bool *given_p, int64_t *dim_p)
{
    if (npos > at + 1 && json_object_get(kw, "dim") == NULL) {
        *given_p = false;
        return fail(ev, node, "too many arguments");
    }
    return int_arg(ev, node, NULL, pos, npos, at, kw, "dim", 0, given_p, dim_p);
}

/* ---- reductions and element-wise functions ---- */

/* keepdim=, or the positional argument after dim (t.max(0, True)). */
static dl_status_t keepdim_arg(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                               const json_t *kw, bool *keepdim_p)
{
    const json_t *knode = json_object_get(kw, "keepdim");
    *keepdim_p = false;
    if (knode != NULL) {
        if (json_object_get(knode, "bool") == NULL)
            return fail(ev, knode, "keepdim= takes True or False");
        *keepdim_p = json_is_true(json_object_get(knode, "bool"));
    } else if (npos > 2) {
        if (pos[2].kind != LAB_V_BOOL)
            return fail(ev, node, "keepdim takes True or False, not %s", lab_vkind_a(pos[2].kind));
        *keepdim_p = pos[2].i != 0;
    }
    return DL_OK;
}

/* The index of the extreme along d (0-d tensors: along their one
 * element), as torch words an empty dimension. */
static dl_status_t arg_extreme(lab_eval_t *ev, const json_t *node, const char *fn, dl_reduction_t r,
                               const dl_tensor_t *t, int d, bool keepdim, dl_tensor_t **res_p)
{
    dl_tensor_t flat = *t;
    if (t->ndim == 0) {
        flat.ndim = 1;
        flat.shape[0] = 1;
        keepdim = false;
    }
    if (flat.shape[d] == 0)
        return fail(ev, node, "%s(): Expected reduction dim %d to have non-zero size.", fn, d);
    dl_status_t st = dl_tensor_arg_reduce_dim(r, &flat, d, keepdim, alloc_of(ev), res_p);
    if (st != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    return DL_OK;
}

/* t.max(dim=D) and t.min(dim=D): the pair (values, indices), a list that
 * .values, .indices and a, b = ... read (torch's named tuple). */
static dl_status_t extreme_dim(lab_eval_t *ev, const json_t *node, const char *fn, dl_reduction_t r,
                               const dl_tensor_t *t, int64_t dim, bool keepdim, lab_value_t *out)
{
    int d = 0;
    dl_status_t st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d);
    if (st != DL_OK)
        return st;
    dl_tensor_t *values = NULL, *indices = NULL;
    if ((st = arg_extreme(ev, node, fn, r, t, d, keepdim, &indices)) != DL_OK)
        return st;
    st = t->ndim == 0 ? dl_tensor_reduce_all(r, t, alloc_of(ev), &values)
                      : dl_tensor_reduce_dim(r, t, d, keepdim, alloc_of(ev), &values);
    if (st != DL_OK) {
        dl_tensor_free(indices);
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    }
    return lab__eval_pair(fn, values, indices, out);
}

/* argmax and argmin: the index in the flattened tensor, or along dim. */
static dl_status_t arg_reduction(lab_eval_t *ev, const json_t *node, const char *fn,
                                 dl_reduction_t r, lab_value_t *pos, int npos, const json_t *kw,
                                 lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    bool has_dim = false, keepdim = false;
    int64_t dim = 0;
    dl_status_t st;
    if (npos > 3)
        return fail(ev, node, "%s(): too many arguments", fn);
    if ((st = dim_arg(ev, node, pos, npos > 2 ? 2 : npos, 1, kw, &has_dim, &dim)) != DL_OK ||
        (st = keepdim_arg(ev, node, pos, npos, kw, &keepdim)) != DL_OK)
        return st;
    if (t->dtype == DL_BOOL)
        return fail(ev, node, "\"%s_cpu\" not implemented for 'Bool'", fn);
    dl_tensor_t *res = NULL;
    if (has_dim) {
        int d = 0;
        if ((st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d)) != DL_OK ||
            (st = arg_extreme(ev, node, fn, r, t, d, keepdim, &res)) != DL_OK)
            return st;
    } else {
        if (t->numel == 0)
            return fail(ev, node,
                        "%s(): Expected reduction dim to be specified for input.numel() == 0.", fn);
        dl_tensor_t flat = *t;
        flat.ndim = 1;
        flat.shape[0] = (int64_t)t->numel;
        if ((st = arg_extreme(ev, node, fn, r, &flat, 0, false, &res)) != DL_OK)
            return st;
        if (keepdim) {
            /* Every dimension kept, of size 1. */
            res->ndim = t->ndim;
            for (int k = 0; k < t->ndim; k++)
                res->shape[k] = 1;
        }
    }
    lab__eval_set_tensor(out, res);
    return DL_OK;
}

static dl_status_t reduction(lab_eval_t *ev, const json_t *node, const char *fn, dl_reduction_t r,
                             lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    dl_dtype_t odt;
    bool has_dim = false, keepdim = false;
    int64_t dim = 0;
    dl_status_t st;
    bool extreme = r == DL_RED_MAX || r == DL_RED_MIN;
    if (extreme && npos > 1 && pos[1].kind == LAB_V_TENSOR)
        return fail(ev, node, "%s(input, other), the element-wise %s, is not supported", fn,
                    r == DL_RED_MAX ? "maximum" : "minimum");
    if (npos > 3)
        return fail(ev, node, "%s(): too many arguments", fn);
    if ((st = dim_arg(ev, node, pos, npos > 2 ? 2 : npos, 1, kw, &has_dim, &dim)) != DL_OK ||
        (st = keepdim_arg(ev, node, pos, npos, kw, &keepdim)) != DL_OK)
        return st;
    if (extreme && has_dim)
        return extreme_dim(ev, node, fn, r, t, dim, keepdim, out);
    if (dl_reduction_dtype(r, t->dtype, &odt) != DL_OK)
        return fail(ev, node,
                    "%s(): could not infer output dtype. Input dtype must be either a floating "
                    "point or complex dtype. Got: %s",
                    fn, lab__eval_scalar_type(t->dtype));
    if (!has_dim && t->numel == 0 && (r == DL_RED_MAX || r == DL_RED_MIN))
        return fail(ev, node,
                    "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument.",
                    fn);
    dl_tensor_t *res = NULL;
    if (has_dim) {
        int d = 0;
        if ((st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d)) != DL_OK)
            return st;
        st = t->ndim == 0 ? dl_tensor_reduce_all(r, t, alloc_of(ev), &res)
                          : dl_tensor_reduce_dim(r, t, d, keepdim, alloc_of(ev), &res);
    } else {
        st = dl_tensor_reduce_all(r, t, alloc_of(ev), &res);
    }
    if (st != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    lab__eval_set_tensor(out, res);
    return DL_OK;
}

/* A bool keyword argument (unbiased=, keepdim=), when given. */
static dl_status_t bool_kwarg(lab_eval_t *ev, const json_t *kw, const char *key, bool *v_p)
{
    const json_t *knode = json_object_get(kw, key);
    if (knode == NULL)
        return DL_OK;
    lab_value_t v; /* unbiased=flag: a variable too */
    dl_status_t st = lab_eval_expr(ev, knode, &v);
    if (st != DL_OK)
        return st;
    bool ok = v.kind == LAB_V_BOOL;
    *v_p = ok ? v.i != 0 : *v_p;
    lab_value_clear(&v);
    return ok ? DL_OK : fail(ev, knode, "%s= takes True or False", key);
}

/* var and std as torch 1.13 takes them: t.var(), t.var(False) (unbiased),
 * t.var(dim), t.var(dim, unbiased, keepdim), and dim=, unbiased=,
 * keepdim=, correction= by name. */
static dl_status_t moments(lab_eval_t *ev, const json_t *node, const char *fn, bool std,
                           lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    bool unbiased = true, keepdim = false, has_dim = false;
    int64_t dim = 0, correction = 1;
    dl_status_t st;
    if (npos > 4)
        return fail(ev, node, "%s(): too many arguments", fn);
    if (npos == 2 && pos[1].kind == LAB_V_BOOL) {
        unbiased = pos[1].i != 0; /* t.var(False) */
    } else if (npos > 1) {
        if (pos[1].kind != LAB_V_INT)
            return fail(ev, node, "%s(): dim must be an integer, not %s", fn,
                        lab_vkind_a(pos[1].kind));
        has_dim = true;
        dim = pos[1].i;
        for (int k = 2; k < npos; k++) {
            if (pos[k].kind != LAB_V_BOOL)
                return fail(ev, node, "%s(): %s takes True or False, not %s", fn,
                            k == 2 ? "unbiased" : "keepdim", lab_vkind_a(pos[k].kind));
            *(k == 2 ? &unbiased : &keepdim) = pos[k].i != 0;
        }
    }
    const json_t *knode = json_object_get(kw, "dim");
    if (knode != NULL) {
        if (has_dim)
            return fail(ev, knode, "%s() got multiple values for argument 'dim'", fn);
        if ((st = int_arg(ev, node, fn, pos, 0, 0, kw, "dim", 0, &has_dim, &dim)) != DL_OK)
            return st;
    }
    if ((st = bool_kwarg(ev, kw, "unbiased", &unbiased)) != DL_OK ||
        (st = bool_kwarg(ev, kw, "keepdim", &keepdim)) != DL_OK)
        return st;
    if (json_object_get(kw, "correction") != NULL) {
        if (json_object_get(kw, "unbiased") != NULL || npos > 2)
            return fail(ev, node, "%s(): give unbiased or correction, not both", fn);
        if ((st = int_arg(ev, node, fn, pos, 0, 0, kw, "correction", 1, NULL, &correction)) !=
            DL_OK)
            return st;
    } else {
        correction = unbiased ? 1 : 0;
    }
    if (!dl_dtype_is_float(t->dtype))
        return fail(ev, node, "std and var only support floating point and complex dtypes");
    int d = -1;
    if (has_dim && (st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d)) != DL_OK)
        return st;
    if (t->ndim == 0)
        d = -1;
    dl_tensor_t *res = NULL;
    if ((st = dl_tensor_var(t, d, keepdim, (double)correction, std, alloc_of(ev), &res)) != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    lab__eval_set_tensor(out, res);
    return DL_OK;
}

/* t.t() (a matrix's transpose; a vector or a number as it is),
 * t.transpose(a, b) (two dimensions swapped) and t.permute(...) (every
 * dimension placed), as torch gives them: copies here, where torch's are
 * views. */
static dl_status_t reorder(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                           int npos, const json_t *kw, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    int n = t->ndim, perm[DL_MAX_DIMS];
    for (int d = 0; d < n; d++)
        perm[d] = d;
    dl_status_t st;
    if (strcmp(fn, "t") == 0) {
        if (npos != 1)
            return fail(ev, node, "t() takes no arguments");
        if (n > 2)
            return fail(ev, node, "t() expects a tensor with <= 2 dimensions, but self is %dD", n);
        if (n == 2) {
            perm[0] = 1;
            perm[1] = 0;
        }
    } else if (strcmp(fn, "transpose") == 0) {
        int64_t a = 0, b = 0;
        int da = 0, db = 0;
        if ((st = int_arg(ev, node, fn, pos, npos, 1, kw, "dim0", INT64_MIN, NULL, &a)) != DL_OK ||
            (st = int_arg(ev, node, fn, pos, npos, 2, kw, "dim1", INT64_MIN, NULL, &b)) != DL_OK)
            return st;
        if (a == INT64_MIN || b == INT64_MIN || npos > 3)
            return fail(ev, node, "transpose() takes two dimensions, e.g. transpose(0, 1)");
        if ((st = lab__eval_bound_dim(ev, node, a, n, &da)) != DL_OK ||
            (st = lab__eval_bound_dim(ev, node, b, n, &db)) != DL_OK)
            return st;
        if (n > 0) {
            perm[da] = db;
            perm[db] = da;
        }
    } else {
        /* permute(2, 0, 1) or permute((2, 0, 1)) */
        const lab_value_t *dims = pos + 1;
        int nd = npos - 1;
        if (npos == 2 && pos[1].kind == LAB_V_LIST) {
            dims = pos[1].items;
            nd = (int)pos[1].n;
        }
        if (nd != n)
            return fail(ev, node,
                        "permute(sparse_coo): number of dimensions in the tensor input does not "
                        "match the length of the desired ordering of dimensions i.e. input.dim() "
                        "= %d is not equal to len(dims) = %d",
                        n, nd);
        bool seen[DL_MAX_DIMS] = {false};
        for (int d = 0; d < nd; d++) {
            int k = 0;
            if (dims[d].kind != LAB_V_INT)
                return fail(ev, node, "permute() takes integers, not %s",
                            lab_vkind_a(dims[d].kind));
            if ((st = lab__eval_bound_dim(ev, node, dims[d].i, n, &k)) != DL_OK)
                return st;
            if (seen[k])
                return fail(ev, node, "permute(): duplicate dims are not allowed.");
            seen[k] = true;
            perm[d] = k;
        }
    }
    return lab__eval_permute(ev, t, perm, out);
}

dl_status_t lab__eval_round_tensor(lab_eval_t *ev, const json_t *node, const dl_tensor_t *t,
                                   int64_t decimals, lab_value_t *out)
{
    dl_dtype_t dt = t->dtype;
    if (decimals == 0 && (dt == DL_BOOL || dt == DL_FLOAT16))
        return fail(ev, node, "\"round_vml_cpu\" not implemented for '%s'",
                    lab__eval_scalar_type(dt));
    if (decimals != 0 && !dl_dtype_is_float(dt))
        return fail(ev, node, "\"round_cpu\" not implemented for '%s'", lab__eval_scalar_type(dt));
    if (decimals > 400 || decimals < -400)
        decimals = decimals > 0 ? 400 : -400;
    lab_value_t h = {.kind = LAB_V_TENSOR, .t = (dl_tensor_t *)t, .borrowed = true};
    dl_device_t dev = host_dev;
    dl_status_t st = to_host(ev, &h, &dev);
    if (st != DL_OK)
        return st;
    dl_tensor_t *res = NULL;
    if ((st = dl_tensor_clone(h.t, alloc_of(ev), &res)) != DL_OK) {
        lab_value_clear(&h);
        return fail(ev, node, "round(): %s", dl_strerror(st));
    }
    /* as torch: x * 10^d rounded half to even, then divided back, in the
     * tensor's own precision (float32 for float32, whose 2.675 * 100 is
     * 267.5 and rounds to 268) */
    double p = pow(10.0, (double)(decimals < 0 ? -decimals : decimals));
    float pf = (float)p;
    for (size_t i = 0; dl_dtype_is_float(dt) && i < res->numel; i++) {
        double x = dl_dtype_get(dt, res->data, i), r;
        if (dt == DL_FLOAT64)
            r = decimals == 0  ? nearbyint(x)
                : decimals > 0 ? nearbyint(x * p) / p
                               : nearbyint(x / p) * p;
        else
            r = decimals == 0  ? nearbyintf((float)x)
                : decimals > 0 ? nearbyintf((float)x * pf) / pf
                               : nearbyintf((float)x / pf) * pf;
        dl_dtype_set(dt, res->data, i, r);
    }
    lab_value_clear(&h);
    lab__eval_set_tensor(out, res);
    return to_dev(ev, out, dev);
}

static dl_status_t unary(lab_eval_t *ev, const json_t *node, const char *fn, dl_unary_t op,
                         int npos, const lab_value_t *pos, lab_value_t *out)
{
    if (npos != 1)
        return fail(ev, node, "%s() takes one tensor", fn);
    const dl_tensor_t *t = pos[0].t;
    dl_dtype_t odt;
    if (dl_unary_dtype(op, t->dtype, &odt) != DL_OK)
        return op == DL_UNARY_RELU ? fail(ev, node, "Boolean inputs not supported for relu")
               : op == DL_UNARY_ABS
                   ? fail(ev, node, "\"abs_cpu\" not implemented for 'Bool'")
                   : fail(ev, node, "\"%s_vml_cpu\" not implemented for 'Bool'", fn);
    dl_tensor_t *res = NULL;
    dl_status_t st = dl_tensor_unary(op, t, alloc_of(ev), &res);
    if (st != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    lab__eval_set_tensor(out, res);
    return DL_OK;
}

/* ---- matmul and @ ---- */

static void shape_text(const dl_tensor_t *t, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int d = 0; d < t->ndim && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%lld", d ? "x" : "", (long long)t->shape[d]);
}

static dl_status_t matmul_host(lab_eval_t *ev, const json_t *node, const dl_tensor_t *a,
                               const dl_tensor_t *b, lab_value_t *out)
{
    if (a->ndim == 0 || b->ndim == 0)
        return fail(ev, node,
                    "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                    a->ndim, b->ndim);
    if (a->ndim > 2 || b->ndim > 2)
        return fail(ev, node, "matmul of tensors with more than 2 dimensions is not supported");
    bool dot = a->ndim == 1 && b->ndim == 1;
    if (!dot && a->shape[a->ndim - 1] != b->shape[0]) {
        /* before the dtypes, as torch checks them: a vector first is a row
         * (1xN), a vector second is mv's */
        if (b->ndim == 1)
            return fail(ev, node, "size mismatch, got %lld, %lldx%lld,%lld", (long long)a->shape[0],
                        (long long)a->shape[0], (long long)a->shape[1], (long long)b->shape[0]);
        char x[48], y[48];
        if (a->ndim == 1)
            snprintf(x, sizeof(x), "1x%lld", (long long)a->shape[0]);
        else
            shape_text(a, x, sizeof(x));
        shape_text(b, y, sizeof(y));
        return fail(ev, node, "mat1 and mat2 shapes cannot be multiplied (%s and %s)", x, y);
    }
    if (a->dtype != b->dtype) {
        if (dot)
            return fail(ev, node,
                        "dot : expected both vectors to have same dtype, but found %s and %s",
                        lab__eval_scalar_type(a->dtype), lab__eval_scalar_type(b->dtype));
        return fail(ev, node, "expected scalar type %s but found %s",
                    lab__eval_scalar_type(a->dtype), lab__eval_scalar_type(b->dtype));
    }
    if (a->dtype == DL_BOOL)
        return fail(ev, node, "\"%s\" not implemented for 'Bool'", dot ? "dot" : "addmm_impl_cpu_");
    if (a->shape[a->ndim - 1] != b->shape[0]) /* two vectors */
        return fail(ev, node,
                    "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have "
                    "the same number of elements, but got %lld and %lld elements respectively",
                    (long long)a->numel, (long long)b->numel, (long long)a->numel,
                    (long long)b->numel);
    dl_tensor_t *res = NULL;
    dl_status_t st = dl_tensor_matmul(a, b, alloc_of(ev), &res);
    if (st != DL_OK)
        return fail(ev, node, "matmul: %s", dl_strerror(st));
    lab__eval_set_tensor(out, res);
    return DL_OK;
}

dl_status_t lab__eval_matmul(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                             const lab_value_t *b, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    dl_status_t st;
    if ((st = need_tensor(ev, node, "matmul", a, 1)) != DL_OK ||
        (st = need_tensor(ev, node, "matmul", b, 2)) != DL_OK)
        return st;
    lab_value_t ha = *a, hb = *b;
    ha.borrowed = hb.borrowed = true;
    dl_device_t dev = host_dev;
    if ((st = to_host(ev, &ha, &dev)) == DL_OK && (st = to_host(ev, &hb, &dev)) == DL_OK &&
        (st = matmul_host(ev, node, ha.t, hb.t, out)) == DL_OK)
        st = to_dev(ev, out, dev);
    lab_value_clear(&ha);
    lab_value_clear(&hb);
    return st;
}

/* ---- shapes ---- */

/* A copy of t in the shape given (its element count checked by the
 * caller): reshape, view, flatten, squeeze and unsqueeze all make one, as
 * assignment copies (docs/guide.md, "Assignment copies"). */
static dl_status_t reshaped(lab_eval_t *ev, const json_t *node, const char *fn,
                            const dl_tensor_t *t, int ndim, const int64_t *shape, lab_value_t *out)
{
    dl_tensor_t *res = NULL;
    dl_status_t st = dl_tensor_clone(t, alloc_of(ev), &res);
    if (st != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    res->ndim = ndim;
    memset(res->shape, 0, sizeof(res->shape));
    memcpy(res->shape, shape, (size_t)ndim * sizeof(shape[0]));
    lab__eval_set_tensor(out, res);
    return DL_OK;
}

/* reshape(t, (2, 3)), t.reshape(2, 3), t.reshape((2, 3)), and t.view(...)
 * alike (fn names which). */
static dl_status_t reshape(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                           int npos, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    int64_t shape[DL_MAX_DIMS];
    int ndim = 0, infer = -1;
    const lab_value_t *items = &pos[1];
    size_t n = (size_t)(npos - 1);
    if (npos == 2 && pos[1].kind == LAB_V_LIST) {
        items = pos[1].items;
        n = pos[1].n;
    }
    if (npos < 2)
        return fail(ev, node, "%s() needs a shape, e.g. t.%s(2, 3)", fn, fn);
    if (n > DL_MAX_DIMS)
        return fail(ev, node, "too many dimensions (at most %d)", DL_MAX_DIMS);
    char text[96] = "";
    size_t o = 0;
    int64_t known = 1;
    bool overflow = false;
    for (size_t k = 0; k < n; k++) {
        if (items[k].kind != LAB_V_INT)
            return fail(ev, node, "%s(): the shape holds integers, not %s", fn,
                        lab_vkind_a(items[k].kind));
        int64_t d = items[k].i;
        o += (size_t)snprintf(text + o, o < sizeof(text) ? sizeof(text) - o : 0, "%s%lld",
                              k ? ", " : "", (long long)d);
        if (d == -1) {
            if (infer >= 0)
                return fail(ev, node, "only one dimension can be inferred");
            infer = (int)k;
        } else if (d < 0) {
            return fail(ev, node, "invalid shape dimension %lld", (long long)d);
        } else if (__builtin_mul_overflow(known, d, &known)) {
            /* A product past int64 is no shape of this tensor (and must
             * not wrap round to its size). */
            overflow = true;
        }
        shape[ndim++] = d;
    }
    bool ok = !overflow && (infer >= 0 ? known != 0 && (int64_t)t->numel % known == 0
                                       : known == (int64_t)t->numel);
    if (!ok)
        return fail(ev, node, "shape '[%s]' is invalid for input of size %zu", text, t->numel);
    if (infer >= 0)
        shape[infer] = (int64_t)t->numel / known;
    return reshaped(ev, node, fn, t, ndim, shape, out);
}

/* t.flatten(start_dim=0, end_dim=-1): the dimensions from start to end
 * made one (a 0-d tensor becomes 1-d, as in torch). */
static dl_status_t flatten(lab_eval_t *ev, const json_t *node, lab_value_t *pos, int npos,
                           const json_t *kw, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    int64_t a, b;
    int start = 0, end = 0;
    dl_status_t st;
    if (npos > 3)
        return fail(ev, node, "flatten() takes at most start_dim and end_dim");
    if ((st = int_arg(ev, node, "flatten", pos, npos, 1, kw, "start_dim", 0, NULL, &a)) != DL_OK ||
        (st = int_arg(ev, node, "flatten", pos, npos, 2, kw, "end_dim", -1, NULL, &b)) != DL_OK ||
        (st = lab__eval_bound_dim(ev, node, a, t->ndim, &start)) != DL_OK ||
        (st = lab__eval_bound_dim(ev, node, b, t->ndim, &end)) != DL_OK)
        return st;
    if (t->ndim == 0) {
        int64_t one = 1;
        return reshaped(ev, node, "flatten", t, 1, &one, out);
    }
    if (start > end)
        return fail(ev, node, "flatten() has invalid args: start_dim cannot come after end_dim");
    int64_t shape[DL_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d > start && d <= end)
            shape[ndim - 1] *= t->shape[d];
        else
            shape[ndim++] = t->shape[d];
    }
    return reshaped(ev, node, "flatten", t, ndim, shape, out);
}

/* t.unsqueeze(dim): a dimension of size 1 inserted at dim (-ndim-1 ..
 * ndim); t.squeeze() every dimension of size 1 removed, t.squeeze(dim)
 * that one if its size is 1. */
static dl_status_t squeeze(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                           int npos, const json_t *kw, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    bool un = fn[0] == 'u';
    if (npos > 2)
        return fail(ev, node, "%s() takes one dimension", fn);
    bool given = npos > 1 || json_object_get(kw, "dim") != NULL;
    if (un && !given)
        return fail(ev, node, "unsqueeze() missing 1 required positional arguments: \"dim\"");
    int64_t d = 0;
    int dim = -1;
    dl_status_t st = int_arg(ev, node, fn, pos, npos, 1, kw, "dim", 0, NULL, &d);
    if (st == DL_OK && given)
        st = lab__eval_bound_dim(ev, node, d, t->ndim + (un ? 1 : 0), &dim);
    if (st != DL_OK)
        return st;
    int64_t shape[DL_MAX_DIMS + 1];
    int ndim = 0;
    if (un && t->ndim >= DL_MAX_DIMS)
        return fail(ev, node, "too many dimensions (at most %d)", DL_MAX_DIMS);
    for (int k = 0; k <= t->ndim; k++) {
        if (un && k == dim)
            shape[ndim++] = 1;
        if (k == t->ndim)
            break;
        if (!un && t->shape[k] == 1 && (!given || k == dim))
            continue;
        shape[ndim++] = t->shape[k];
    }
    return reshaped(ev, node, fn, t, ndim, shape, out);
}

/* The tensors of a list argument (cat, stack). */
static dl_status_t tensor_list(lab_eval_t *ev, const json_t *node, const char *fn,
                               const lab_value_t *v, const dl_tensor_t ***ts_p)
{
    if (v->kind != LAB_V_LIST)
        return fail(ev, node, "%s() takes a list of tensors, e.g. %s([a, b])", fn, fn);
    if (v->n == 0)
        return fail(ev, node, "torch.%s(): expected a non-empty list of Tensors", fn);
    const dl_tensor_t **ts = calloc(v->n, sizeof(*ts));
    if (ts == NULL)
        return DL_ERR_NOMEM;
    for (size_t i = 0; i < v->n; i++) {
        if (v->items[i].kind != LAB_V_TENSOR) {
            free(ts);
            return fail(ev, node, "%s(): item %zu of the list is %s, not a tensor", fn, i,
                        lab_vkind_a(v->items[i].kind));
        }
        ts[i] = v->items[i].t;
    }
    *ts_p = ts;
    return DL_OK;
}

/* Whether cat skips t, as torch still does a 1-D tensor of no elements,
 * whatever the others' shapes (torch.zeros(0) beside a matrix). */
static bool cat_skips(const dl_tensor_t *t)
{
    return t->ndim == 1 && t->numel == 0;
}

static dl_dtype_t promote_all(const dl_tensor_t *const *ts, size_t n)
{
    dl_dtype_t dt = ts[0]->dtype;
    for (size_t i = 1; i < n; i++)
        dt = lab__eval_promote(dt, ts[i]->dtype);
    return dt;
}

static dl_status_t cat_or_stack(lab_eval_t *ev, const json_t *node, bool stack,
                                const lab_value_t *pos, int npos, const json_t *kw,
                                lab_value_t *out)
{
    const char *fn = stack ? "stack" : "cat";
    const dl_tensor_t **ts = NULL;
    bool given;
    int64_t dim;
    dl_status_t st;
    if ((st = dim_arg(ev, node, pos, npos, 1, kw, &given, &dim)) != DL_OK ||
        (st = tensor_list(ev, node, fn, &pos[0], &ts)) != DL_OK)
        return st;
    size_t n = pos[0].n;
    const dl_tensor_t *first = ts[0];
    dl_tensor_t *views = NULL, *res = NULL;
    dl_dtype_t dt = DL_FLOAT32;
    int d = 0;
    if (stack) {
        for (size_t i = 1; i < n; i++) {
            bool same = ts[i]->ndim == first->ndim;
            for (int k = 0; same && k < first->ndim; k++)
                same = ts[i]->shape[k] == first->shape[k];
            if (!same) {
                char x[96], y[96];
                lab__eval_shape_text(first->ndim, first->shape, x, sizeof(x));
                lab__eval_shape_text(ts[i]->ndim, ts[i]->shape, y, sizeof(y));
                st = fail(ev, node,
                          "stack expects each tensor to be equal size, but got %s at entry 0 "
                          "and %s at entry %zu",
                          x, y, i);
                goto out_free;
            }
        }
        if (first->ndim >= DL_MAX_DIMS) {
            st = fail(ev, node, "stack(): too many dimensions (at most %d)", DL_MAX_DIMS);
            goto out_free;
        }
        if ((st = lab__eval_bound_dim(ev, node, dim, first->ndim + 1, &d)) != DL_OK)
            goto out_free;
        /* Each tensor seen with a dimension of 1 inserted at d, then cat. */
        views = calloc(n, sizeof(*views));
        if (views == NULL) {
            st = DL_ERR_NOMEM;
            goto out_free;
        }
        for (size_t i = 0; i < n; i++) {
            views[i] = *ts[i];
            views[i].alloc = NULL;
            views[i].ndim = first->ndim + 1;
            for (int k = 0, j = 0; k < views[i].ndim; k++)
                views[i].shape[k] = k == d ? 1 : ts[i]->shape[j++];
            ts[i] = &views[i];
        }
    } else {
        /* the skipped count in the dtype */
        dt = promote_all(ts, n);
        size_t f = 0; /* the first tensor not skipped: the shape the others match */
        while (f + 1 < n && cat_skips(ts[f]))
            f++;
        first = ts[f];
        for (size_t i = 0; i < n; i++) {
            if (ts[i]->ndim == 0) {
                st = fail(ev, node,
                          "zero-dimensional tensor (at position %zu) cannot be "
                          "concatenated",
                          i);
                goto out_free;
            }
            if (ts[i]->ndim != first->ndim && !cat_skips(ts[i])) {
                st = fail(ev, node, "Tensors must have same number of dimensions: got %d and %d",
                          first->ndim, ts[i]->ndim);
                goto out_free;
            }
        }
        if ((st = lab__eval_bound_dim(ev, node, dim, first->ndim, &d)) != DL_OK)
            goto out_free;
        for (size_t i = f + 1; i < n; i++) {
            if (cat_skips(ts[i]))
                continue;
            for (int k = 0; k < first->ndim; k++) {
                if (k != d && ts[i]->shape[k] != first->shape[k]) {
                    st = fail(ev, node,
                              "Sizes of tensors must match except in dimension %d. Expected size "
                              "%lld but got size %lld for tensor number %zu in the list.",
                              d, (long long)first->shape[k], (long long)ts[i]->shape[k], i);
                    goto out_free;
                }
            }
        }
        /* the messages above name positions in the list; the skipped go now */
        size_t kept = 0;
        for (size_t i = 0; i < n; i++)
            if (!cat_skips(ts[i]))
                ts[kept++] = ts[i];
        if (kept > 0)
            n = kept;
    }
    st = dl_tensor_cat(ts, n, d, stack ? promote_all(ts, n) : dt, alloc_of(ev), &res);
    if (st != DL_OK) {
        st = fail(ev, node, "%s(): %s", fn, dl_strerror(st));
        goto out_free;
    }
    lab__eval_set_tensor(out, res);
out_free:
    free(views);
    free(ts);
    return st;
}

/* chunk and split: a tuple of the pieces along dim, of the sizes given. */
static dl_status_t pieces(lab_eval_t *ev, const json_t *node, const dl_tensor_t *t, int d,
                          const int64_t *sizes, size_t n, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_LIST;
    out->tuple = true; /* torch gives a tuple */
    out->items = calloc(n ? n : 1, sizeof(*out->items));
    if (out->items == NULL)
        return DL_ERR_NOMEM;
    int64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        dl_tensor_t *piece = NULL;
        dl_status_t st = dl_tensor_narrow(t, d, at, sizes[i], alloc_of(ev), &piece);
        if (st != DL_OK) {
            lab_value_clear(out);
            return fail(ev, node, "cannot split the tensor: %s", dl_strerror(st));
        }
        lab__eval_set_tensor(&out->items[i], piece);
        out->n = i + 1;
        at += sizes[i];
    }
    return DL_OK;
}

static dl_status_t chunk_or_split(lab_eval_t *ev, const json_t *node, bool split,
                                  const lab_value_t *pos, int npos, const json_t *kw,
                                  lab_value_t *out)
{
    const char *fn = split ? "split" : "chunk";
    const dl_tensor_t *t = pos[0].t;
    bool given;
    int64_t dim;
    int d = 0;
    dl_status_t st;
    if (npos < 2)
        return fail(ev, node,
                    split ? "split() needs a size or a list of sizes, e.g. split(t, 2)"
                          : "chunk() needs a number of chunks, e.g. chunk(t, 2)");
    if ((st = dim_arg(ev, node, pos, npos, 2, kw, &given, &dim)) != DL_OK)
        return st;
    if (t->ndim == 0)
        return fail(ev, node, "%s expects at least a 1-dimensional tensor", fn);
    if ((st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d)) != DL_OK)
        return st;
    int64_t len = t->shape[d];
    const lab_value_t *arg = &pos[1];
    int64_t *sizes = NULL;
    size_t n = 0;
    if (split && arg->kind == LAB_V_LIST) {
        sizes = calloc(arg->n ? arg->n : 1, sizeof(*sizes));
        if (sizes == NULL)
            return DL_ERR_NOMEM;
        int64_t total = 0;
        char text[128] = "";
        size_t o = 0;
        for (size_t i = 0; i < arg->n; i++) {
            if (arg->items[i].kind != LAB_V_INT || arg->items[i].i < 0) {
                free(sizes);
                return fail(ev, node, "split(): the sizes are non-negative integers");
            }
            sizes[n++] = arg->items[i].i;
            total += arg->items[i].i;
            if (o < sizeof(text))
                o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%lld", i ? ", " : "",
                                      (long long)arg->items[i].i);
        }
        if (total != len) {
            free(sizes);
            return fail(ev, node,
                        "split_with_sizes expects split_sizes to sum exactly to %lld (input "
                        "tensor's size at dimension %d), but got split_sizes=[%s]",
                        (long long)len, d, text);
        }
    } else {
        if (arg->kind != LAB_V_INT)
            return fail(ev, node, "%s(): %s must be an integer, not %s", fn,
                        split ? "the size" : "chunks", lab_vkind_a(arg->kind));
        int64_t k = arg->i, size;
        if (!split) {
            if (k <= 0)
                return fail(ev, node, "chunk expects `chunks` to be greater than 0, got: %lld",
                            (long long)k);
            size = (len + k - 1) / k;
        } else {
            if (k < 0)
                return fail(ev, node,
                            "split expects split_size be non-negative, but got split_size=%lld",
                            (long long)k);
            if (k == 0 && len != 0)
                return fail(ev, node,
                            "split_size can only be 0 if dimension size is 0, but got dimension "
                            "size of %lld",
                            (long long)len);
            size = k;
        }
        size_t count = size > 0 ? (size_t)((len + size - 1) / size) : 1;
        if (count == 0)
            count = 1; /* an empty dimension gives one empty piece */
        if (!split && len == 0) {
            /* ... but chunks empty ones when chunked, as torch's chunk */
            if (k > 65536)
                return fail(ev, node, "chunk: %lld empty chunks is too many", (long long)k);
            count = (size_t)k;
        }
        sizes = calloc(count, sizeof(*sizes));
        if (sizes == NULL)
            return DL_ERR_NOMEM;
        for (int64_t at = 0; n < count; at += size)
            sizes[n++] = at + size <= len ? size : len - at;
    }
    st = pieces(ev, node, t, d, sizes, n, out);
    free(sizes);
    return st;
}

/* ---- the entry point ---- */

static const struct {
    const char *name;
    /* 0 reduction, 1 unary, 2 other, 3 argmax and argmin, 4 var and std,
     * 5 element-wise, 6 orders (eval_order.c), 7 norms (eval_norm.c) */
    int kind;
    int which;
} math_fns[] = {
    {"sum", 0, DL_RED_SUM},
    {"mean", 0, DL_RED_MEAN},
    {"max", 0, DL_RED_MAX},
    {"min", 0, DL_RED_MIN},
    {"prod", 0, DL_RED_PROD},
    {"var", 4, DL_RED_VAR},
    {"std", 4, DL_RED_STD},
    {"t", 2, 0},
    {"transpose", 2, 0},
    {"permute", 2, 0},
    {"argmax", 3, DL_RED_MAX},
    {"argmin", 3, DL_RED_MIN},
    {"sqrt", 1, DL_UNARY_SQRT},
    {"exp", 1, DL_UNARY_EXP},
    {"abs", 1, DL_UNARY_ABS},
    {"relu", 1, DL_UNARY_RELU},
    {"log", 1, DL_UNARY_LOG},
    {"log2", 1, DL_UNARY_LOG2},
    {"log10", 1, DL_UNARY_LOG10},
    {"sin", 1, DL_UNARY_SIN},
    {"cos", 1, DL_UNARY_COS},
    {"tanh", 1, DL_UNARY_TANH},
    {"sigmoid", 1, DL_UNARY_SIGMOID},
    {"rsqrt", 1, DL_UNARY_RSQRT},
    {"reciprocal", 1, DL_UNARY_RECIPROCAL},
    {"floor", 1, DL_UNARY_FLOOR},
    {"ceil", 1, DL_UNARY_CEIL},
    {"trunc", 1, DL_UNARY_TRUNC},
    {"sign", 1, DL_UNARY_SIGN},
    {"square", 1, DL_UNARY_SQUARE},
    {"matmul", 2, 0},
    {"dot", 2, 0},
    {"mm", 2, 0},
    {"sort", 6, 0},
    {"argsort", 6, 0},
    {"topk", 6, 0},
    {"cumsum", 6, 0},
    {"cumprod", 6, 0},
    {"norm", 7, 0},
    {"softmax", 7, 0},
    {"log_softmax", 7, 0},
    {"pow", 5, 0},
    {"add", 5, 0},
    {"sub", 5, 0},
    {"subtract", 5, 0},
    {"mul", 5, 0},
    {"multiply", 5, 0},
    {"div", 5, 0},
    {"divide", 5, 0},
    {"true_divide", 5, 0},
    {"floor_divide", 5, 0},
    {"remainder", 5, 0},
    {"neg", 5, 0},
    {"negative", 5, 0},
    {"eq", 5, 0},
    {"ne", 5, 0},
    {"gt", 5, 0},
    {"ge", 5, 0},
    {"lt", 5, 0},
    {"le", 5, 0},
    {"maximum", 5, 0},
    {"minimum", 5, 0},
    {"where", 5, 0},
    {"allclose", 5, 0},
    {"isclose", 5, 0},
    {"equal", 5, 0},
    {"clamp", 5, 0},
    {"clip", 5, 0},
    {"T", 2, 0},
    {"shape", 2, 0},
    {"size", 2, 0},
    {"reshape", 2, 0},
    {"view", 2, 0},
    {"flatten", 2, 0},
    {"squeeze", 2, 0},
    {"unsqueeze", 2, 0},
    {"clone", 2, 0},
    {"detach", 2, 0},
    {"contiguous", 2, 0},
    {"item", 2, 0},
    {"cat", 2, 0},
    {"stack", 2, 0},
    {"chunk", 2, 0},
    {"split", 2, 0},
};

bool lab__eval_is_math(const char *fn)
{
    for (size_t i = 0; i < sizeof(math_fns) / sizeof(math_fns[0]); i++)
        if (strcmp(math_fns[i].name, fn) == 0)
            return true;
    return false;
}

/* t.shape and t.size(): torch.Size, a list of ints named LAB_SIZE;
 * t.size(d): the size of dimension d (negative counts from the end). */
static dl_status_t shape_of(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                            lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    memset(out, 0, sizeof(*out));
    if (npos > 2)
        return fail(ev, node, "size() takes at most one dimension");
    if (npos == 2) {
        if (pos[1].kind != LAB_V_INT)
            return fail(ev, node, "size(): the dimension must be an integer, not %s",
                        lab_vkind_a(pos[1].kind));
        int64_t d = pos[1].i, nd = t->ndim;
        if (d < -nd || d >= nd || nd == 0)
            return fail(ev, node,
                        "Dimension out of range (expected to be in range of [%lld, %lld], but "
                        "got %lld)",
                        (long long)(nd ? -nd : -1), (long long)(nd ? nd - 1 : 0), (long long)d);
        out->kind = LAB_V_INT;
        out->i = t->shape[d < 0 ? d + nd : d];
        return DL_OK;
    }
    out->items = calloc(t->ndim ? (size_t)t->ndim : 1, sizeof(*out->items));
    if (out->items == NULL)
        return DL_ERR_NOMEM;
    out->kind = LAB_V_LIST;
    out->n = (size_t)t->ndim;
    snprintf(out->name, sizeof(out->name), "%s", LAB_SIZE);
    for (int d = 0; d < t->ndim; d++) {
        out->items[d].kind = LAB_V_INT;
        out->items[d].i = t->shape[d];
    }
    return DL_OK;
}

static dl_status_t product(lab_eval_t *ev, const json_t *node, bool dot, const dl_tensor_t *a,
                           const dl_tensor_t *b, lab_value_t *out);

/* t.dot(u) of two 1-D tensors and m.mm(n) of two matrices: matmul's
 * products, with torch's stricter checks and words. */
static dl_status_t dot_or_mm(lab_eval_t *ev, const json_t *node, const char *fn,
                             const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    bool dot = fn[0] == 'd';
    const char *other = dot ? "tensor" : "mat2";
    static const char *const dot_names[] = {"tensor", NULL}, *const mm_names[] = {"mat2", NULL};
    lab_bound_t bound;
    dl_status_t st =
        lab__eval_bind(ev, node, fn, dot ? dot_names : mm_names, 1, pos, npos, kw, &bound);
    if (st != DL_OK)
        return st;
    if (bound.where == NULL)
        st = fail(ev, node, "%s() missing 1 required positional arguments: \"%s\"", fn, other);
    else if (bound.v.kind != LAB_V_TENSOR) {
        char at[24] = "";
        if (bound.position > 0)
            snprintf(at, sizeof(at), " (position %d)", bound.position);
        st = fail(ev, bound.where, "%s(): argument '%s'%s must be Tensor, not %s", fn, other, at,
                  lab__eval_type_name(&bound.v));
    } else
        st = product(ev, node, dot, pos[0].t, bound.v.t, out);
    lab__eval_bound_clear(&bound, 1);
    return st;
}

/* dot_or_mm's product of a and b, checked as torch checks them. */
static dl_status_t product(lab_eval_t *ev, const json_t *node, bool dot, const dl_tensor_t *a,
                           const dl_tensor_t *b, lab_value_t *out)
{
    if (dot && (a->ndim != 1 || b->ndim != 1))
        return fail(ev, node, "1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
    if (!dot && (a->ndim != 2 || b->ndim != 2))
        return fail(ev, node, "%s must be a matrix", a->ndim != 2 ? "self" : "mat2");
    if (a->dtype == DL_FLOAT16 && b->dtype == DL_FLOAT16 &&
        (dot ? a->numel == b->numel : a->shape[1] == b->shape[0]))
        return fail(ev, node, "\"%s\" not implemented for 'Half'", dot ? "dot" : "addmm_impl_cpu_");
    return matmul_host(ev, node, a, b, out);
}

static dl_status_t math_host(lab_eval_t *ev, const json_t *node, const char *fn, int kind,
                             int which, lab_value_t *pos, int npos, const json_t *kw,
                             lab_value_t *out)
{
    if (kind == 0)
        return reduction(ev, node, fn, (dl_reduction_t)which, pos, npos, kw, out);
    if (kind == 1)
        return unary(ev, node, fn, (dl_unary_t)which, npos, pos, out);
    if (kind == 3)
        return arg_reduction(ev, node, fn, (dl_reduction_t)which, pos, npos, kw, out);
    if (kind == 4)
        return moments(ev, node, fn, which == DL_RED_STD, pos, npos, kw, out);
    if (strcmp(fn, "t") == 0 || strcmp(fn, "transpose") == 0 || strcmp(fn, "permute") == 0)
        return reorder(ev, node, fn, pos, npos, kw, out);
    if (kind == 6)
        return lab__eval_order(ev, node, fn, pos, npos, kw, out);
    if (kind == 7)
        return lab__eval_norm(ev, node, fn, pos, npos, kw, out);
    if (strcmp(fn, "dot") == 0 || strcmp(fn, "mm") == 0)
        return dot_or_mm(ev, node, fn, pos, npos, kw, out);
    if (strcmp(fn, "matmul") == 0) {
        if (npos != 2)
            return fail(ev, node, "matmul() takes two tensors");
        dl_status_t st = need_tensor(ev, node, fn, &pos[1], 2);
        return st == DL_OK ? matmul_host(ev, node, pos[0].t, pos[1].t, out) : st;
    }
    if (strcmp(fn, "T") == 0) {
        if (pos[0].t->ndim > 2)
            return fail(ev, node,
                        "x.T of a tensor of more than 2 dimensions is not supported (torch "
                        "reverses its dimensions)");
        dl_tensor_t *res = NULL;
        dl_status_t st = dl_tensor_transpose(pos[0].t, alloc_of(ev), &res);
        if (st != DL_OK)
            return fail(ev, node, "x.T: %s", dl_strerror(st));
        lab__eval_set_tensor(out, res);
        return DL_OK;
    }
    if (strcmp(fn, "reshape") == 0 || strcmp(fn, "view") == 0)
        return reshape(ev, node, fn, pos, npos, out);
    if (strcmp(fn, "flatten") == 0)
        return flatten(ev, node, pos, npos, kw, out);
    if (strcmp(fn, "squeeze") == 0 || strcmp(fn, "unsqueeze") == 0)
        return squeeze(ev, node, fn, pos, npos, kw, out);
    if (strcmp(fn, "shape") == 0 || strcmp(fn, "size") == 0)
        return shape_of(ev, node, pos, npos, out);
    bool copy =
        strcmp(fn, "clone") == 0 || strcmp(fn, "detach") == 0 || strcmp(fn, "contiguous") == 0;
    if (npos != 1 && (copy || strcmp(fn, "item") == 0))
        return fail(ev, node, "%s() takes no arguments but the tensor", fn);
    if (copy) {
        /* detach() and contiguous() are copies here: a tensor has no
         * gradient to leave behind, and every tensor is contiguous */
        dl_tensor_t *res = NULL;
        dl_status_t st = dl_tensor_clone(pos[0].t, alloc_of(ev), &res);
        if (st != DL_OK)
            return fail(ev, node, "clone(): %s", dl_strerror(st));
        lab__eval_set_tensor(out, res);
        return DL_OK;
    }
    if (strcmp(fn, "item") == 0) {
        const dl_tensor_t *t = pos[0].t;
        if (t->numel != 1)
            return fail(ev, node, "only one element tensors can be converted to Python scalars");
        lab__eval_item(t, out);
        return DL_OK;
    }
    if (strcmp(fn, "cat") == 0 || strcmp(fn, "stack") == 0)
        return cat_or_stack(ev, node, fn[0] == 's', pos, npos, kw, out);
    return chunk_or_split(ev, node, fn[0] == 's', pos, npos, kw, out);
}

void lab__eval_item(const dl_tensor_t *t, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    if (dl_dtype_is_float(t->dtype)) {
        out->kind = LAB_V_FLOAT;
        out->f = dl_dtype_get(t->dtype, t->data, 0);
    } else {
        out->kind = t->dtype == DL_BOOL ? LAB_V_BOOL : LAB_V_INT;
        out->i = dl_dtype_get_i64(t->dtype, t->data, 0);
    }
}

/* Python's own sum, max and min of a list of numbers (sum(splits)), where
 * torch's take a tensor. sum: an int unless a float is among them (bools
 * count as ints); max and min: the first of the largest (smallest), of its
 * own type, ints compared as ints. */
dl_status_t lab__eval_py_fold(lab_eval_t *ev, const json_t *node, const char *fn,
                              const lab_value_t *list, lab_value_t *out)
{
    bool is_sum = fn[1] == 'u', is_max = strcmp(fn, "max") == 0;
    if (!is_sum && list->n == 0)
        return fail(ev, node, "%s() arg is an empty sequence", fn);
    bool tensors = false;
    for (size_t k = 0; is_sum && k < list->n; k++)
        tensors = tensors || list->items[k].kind == LAB_V_TENSOR;
    if (tensors) {
        /* sum(outs) of a list of tensors, as Python folds it: 0 + a + b */
        lab_value_t acc = {.kind = LAB_V_INT};
        for (size_t k = 0; k < list->n; k++) {
            lab_value_t next;
            dl_status_t st = lab__eval_arith(ev, node, "+", &acc, &list->items[k], &next);
            lab_value_clear(&acc);
            if (st != DL_OK)
                return st;
            acc = next;
        }
        *out = acc;
        return DL_OK;
    }
    for (size_t k = 0; k < list->n; k++) {
        lab_vkind_t kind = list->items[k].kind;
        if (kind != LAB_V_INT && kind != LAB_V_BOOL && kind != LAB_V_FLOAT)
            return fail(ev, node, "%s() of a list takes numbers, not %s (%s(t) of a tensor)", fn,
                        lab_vkind_a(kind), fn);
    }
    memset(out, 0, sizeof(*out));
    if (is_sum) {
        out->kind = LAB_V_INT;
        for (size_t k = 0; k < list->n; k++) {
            const lab_value_t *x = &list->items[k];
            if (x->kind == LAB_V_FLOAT && out->kind == LAB_V_INT) {
                out->kind = LAB_V_FLOAT;
                out->f = (double)out->i;
            }
            if (out->kind == LAB_V_FLOAT)
                out->f += x->kind == LAB_V_FLOAT ? x->f : (double)x->i;
            else if (__builtin_add_overflow(out->i, x->i, &out->i))
                return fail(ev, node, "sum(): integer overflow (the shell's ints are 64-bit)");
        }
        return DL_OK;
    }
    const lab_value_t *best = &list->items[0];
    for (size_t k = 1; k < list->n; k++) {
        const lab_value_t *x = &list->items[k];
        bool fl = x->kind == LAB_V_FLOAT || best->kind == LAB_V_FLOAT;
        double xd = x->kind == LAB_V_FLOAT ? x->f : (double)x->i;
        double bd = best->kind == LAB_V_FLOAT ? best->f : (double)best->i;
        bool better =
            fl ? (is_max ? xd > bd : xd < bd) : (is_max ? x->i > best->i : x->i < best->i);
        if (better)
            best = x;
    }
    *out = *best; /* a number: nothing in it is owned */
    return DL_OK;
}

/* A bound of clamp: positional at k, or min= / max=; None (or left out)
 * is no bound. *v_p is cleared first; *given_p says whether one came. */
static dl_status_t clamp_bound(lab_eval_t *ev, const json_t *kw, const char *name,
                               const lab_value_t *pos, int npos, int k, lab_value_t *v,
                               bool *given_p)
{
    memset(v, 0, sizeof(*v));
    const json_t *node = json_object_get(kw, name);
    if (node != NULL && npos > k)
        return fail(ev, node, "clamp() got multiple values for argument '%s'", name);
    dl_status_t st = DL_OK;
    if (node != NULL)
        st = lab_eval_expr(ev, node, v);
    else if (npos > k)
        st = lab_value_copy(&pos[k], alloc_of(ev), v);
    if (st == DL_OK && lab__eval_undefined(v)) /* by keyword: elementwise checked the rest */
        st = lab__eval_fail_undefined(ev, node, v);
    *given_p = st == DL_OK && v->kind != LAB_V_NONE;
    return st;
}

/* A number keyword of allclose and isclose (rtol=, atol=), or a truth
 * (equal_nan=); *x keeps its default where the keyword is not given. */
static dl_status_t close_kw(lab_eval_t *ev, const json_t *kw, const char *name, bool truth,
                            double *x, bool *yes)
{
    const json_t *node = json_object_get(kw, name);
    if (node == NULL)
        return DL_OK;
    lab_value_t v = {0};
    dl_status_t st = lab_eval_expr(ev, node, &v);
    if (st == DL_OK && truth)
        st = lab__eval_value_truth(ev, node, &v, yes);
    else if (st == DL_OK && !lab__eval_is_number(&v))
        st = fail(ev, node, "%s= takes a number", name);
    else if (st == DL_OK)
        *x = v.kind == LAB_V_FLOAT ? v.f : (double)v.i;
    lab_value_clear(&v);
    return st;
}

/* allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) (a bool),
 * isclose (a bool tensor) and equal(a, b) (the same shape and values). */
static dl_status_t close_fn(lab_eval_t *ev, const json_t *node, const char *fn,
                            const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    lab_close_t how = {.rtol = 1e-05,
                       .atol = 1e-08,
                       .all = strcmp(fn, "isclose") != 0,
                       .exact = strcmp(fn, "equal") == 0};
    if (npos != 2)
        return fail(ev, node, "%s() takes two tensors", fn);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)kw, key, v)
    {
        if (how.exact ||
            (strcmp(key, "rtol") != 0 && strcmp(key, "atol") != 0 && strcmp(key, "equal_nan") != 0))
            return fail(ev, node, "%s() got an unexpected keyword argument '%s'", fn, key);
    }
    dl_status_t st;
    if ((st = close_kw(ev, kw, "rtol", false, &how.rtol, NULL)) != DL_OK ||
        (st = close_kw(ev, kw, "atol", false, &how.atol, NULL)) != DL_OK ||
        (st = close_kw(ev, kw, "equal_nan", true, NULL, &how.equal_nan)) != DL_OK)
        return st;
    if (how.exact)
        how.rtol = how.atol = 0;
    if (!(how.rtol >= 0) || !(how.atol >= 0))
        return fail(ev, node, "%s must be greater than or equal to zero, but got %g",
                    how.rtol >= 0 ? "atol" : "rtol", how.rtol >= 0 ? how.atol : how.rtol);
    how.name = fn;
    return lab__eval_isclose(ev, node, &pos[0], &pos[1], &how, out);
}

/* The operator torch names fn (torch.add(a, b) is a + b), or NULL. */
static const char *operator_named(const char *fn)
{
    static const char *const ops[][2] = {
        {"add", "+"},       {"sub", "-"},         {"subtract", "-"},
        {"mul", "*"},       {"multiply", "*"},    {"div", "/"},
        {"divide", "/"},    {"true_divide", "/"}, {"floor_divide", "//"},
        {"remainder", "%"}, {"eq", "=="},         {"ne", "!="},
        {"gt", ">"},        {"ge", ">="},         {"lt", "<"},
        {"le", "<="},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(fn, ops[i][0]) == 0)
            return ops[i][1];
    return NULL;
}

/* A float32 or float64 result of add or sub with alpha= of two tensors,
 * computed again as torch's kernel computes it: input + alpha * other in
 * one rounding (a fused multiply-add), alpha and both operands in the
 * result's dtype, where the product rounded on its own differs in the last
 * bit now and then (checked against torch 1.13, tests/integration/
 * test_math.py). float16 already rounds as torch's does (the product on
 * its own); bfloat16 and a number as other can still differ from torch in
 * the last bit (docs/guide.md). out already holds the result's shape,
 * dtype and checks. */
void lab__eval_fma_into(dl_tensor_t *dst, const dl_tensor_t *x, double alpha)
{
    if (dst->dtype == DL_FLOAT64) {
        double *d = dst->data;
        const double *s = x->data;
        for (size_t i = 0; i < dst->numel; i++)
            d[i] = fma(alpha, s[i], d[i]);
    } else {
        float *d = dst->data, a = (float)alpha;
        const float *s = x->data;
        for (size_t i = 0; i < dst->numel; i++)
            d[i] = fmaf(a, s[i], d[i]);
    }
}

static dl_status_t fuse_alpha(lab_eval_t *ev, const json_t *node, bool sub, const lab_value_t *x,
                              const lab_value_t *y, const lab_value_t *alpha, lab_value_t *out)
{
    dl_tensor_t *r = out->kind == LAB_V_TENSOR ? out->t : NULL;
    if (r == NULL || (r->dtype != DL_FLOAT32 && r->dtype != DL_FLOAT64) ||
        r->device.type != DL_DEVICE_CPU || x->kind != LAB_V_TENSOR || y->kind != LAB_V_TENSOR ||
        x->t->device.type != DL_DEVICE_CPU || y->t->device.type != DL_DEVICE_CPU)
        return DL_OK;
    /* the result becomes input, then input + alpha * other: both broadcast
     * to its shape and cast to its dtype, as the kernel reads them */
    dl_tensor_t *ys = NULL;
    dl_status_t st = dl_tensor_clone(r, dl_heap_allocator(), &ys);
    if (st == DL_OK)
        st = lab__eval_write_into(ev, node, r, x, false);
    if (st == DL_OK)
        st = lab__eval_write_into(ev, node, ys, y, false);
    if (st == DL_OK) {
        double al = alpha->kind == LAB_V_FLOAT ? alpha->f : (double)alpha->i;
        lab__eval_fma_into(r, ys, sub ? -al : al);
    }
    dl_tensor_free(ys);
    return st;
}

/* torch.add(a, b), a.sub(b, alpha=2), t.neg(), a.gt(0): the operators by
 * name; a tensor first, then a tensor or a number. */
static dl_status_t named_operator(lab_eval_t *ev, const json_t *node, const char *fn,
                                  const lab_value_t *pos, int npos, const json_t *kw,
                                  lab_value_t *out)
{
    bool neg = strcmp(fn, "neg") == 0 || strcmp(fn, "negative") == 0;
    const json_t *alpha = json_object_get(kw, "alpha");
    bool scaled = strcmp(fn, "add") == 0 || strcmp(fn, "sub") == 0 || strcmp(fn, "subtract") == 0;
    if (json_object_size(kw) != (alpha != NULL && scaled ? 1u : 0u))
        return fail(ev, node, "%s() takes %s", fn, scaled ? "alpha= only" : "no keyword arguments");
    if (npos != (neg ? 1 : 2))
        return fail(ev, node, "%s() takes %s (%d given)", fn, neg ? "one tensor" : "two values",
                    npos);
    if (pos[0].kind != LAB_V_TENSOR)
        return fail(ev, node, "%s(): argument 'input' (position 1) must be Tensor, not %s", fn,
                    lab__eval_type_name(&pos[0]));
    if (neg)
        return lab__eval_negate(ev, node, &pos[0], out);
    if (pos[1].kind != LAB_V_TENSOR && !lab__eval_is_number(&pos[1]))
        return fail(ev, node,
                    "%s(): argument 'other' (position 2) must be Tensor or a number, not %s", fn,
                    lab__eval_type_name(&pos[1]));
    if (alpha == NULL)
        return lab__eval_arith(ev, node, operator_named(fn), &pos[0], &pos[1], out);
    lab_value_t a = {0}, other = {0};
    dl_status_t st = lab_eval_expr(ev, alpha, &a);
    if (st == DL_OK && !lab__eval_is_number(&a))
        st = fail(ev, node, "%s(): alpha must be a number, not %s", fn, lab__eval_type_name(&a));
    bool ints = !dl_dtype_is_float(pos[0].t->dtype) &&
                (pos[1].kind != LAB_V_TENSOR || !dl_dtype_is_float(pos[1].t->dtype));
    if (st == DL_OK && a.kind == LAB_V_BOOL &&
        !(pos[0].t->dtype == DL_BOOL &&
          (pos[1].kind == LAB_V_BOOL ||
           (pos[1].kind == LAB_V_TENSOR && pos[1].t->dtype == DL_BOOL))))
        st = fail(ev, node, "Boolean alpha only supported for Boolean results.");
    if (st == DL_OK && ints && a.kind == LAB_V_FLOAT)
        st =
            fail(ev, node,
                 "For integral input tensors, argument alpha must not be a floating point number.");
    if (st == DL_OK)
        st = lab__eval_arith(ev, node, "*", &pos[1], &a, &other);
    if (st == DL_OK)
        st = lab__eval_arith(ev, node, operator_named(fn), &pos[0], &other, out);
    if (st == DL_OK)
        st = fuse_alpha(ev, node, fn[0] == 's', &pos[0], &pos[1], &a, out);
    lab_value_clear(&a);
    lab_value_clear(&other);
    return st;
}

/* torch's element-wise functions of two or three values: pow (a ** b),
 * maximum and minimum (of tensors), where, and clamp (clip) as a maximum
 * with min= and a minimum with max=; each as its operator's arithmetic,
 * broadcast and of torch's result type. */
static dl_status_t elementwise(lab_eval_t *ev, const json_t *node, const char *fn,
                               const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    for (int k = 0; k < npos; k++)
        if (lab__eval_undefined(&pos[k]))
            return lab__eval_fail_undefined(ev, node, &pos[k]);
    if (operator_named(fn) != NULL || strcmp(fn, "neg") == 0 || strcmp(fn, "negative") == 0)
        return named_operator(ev, node, fn, pos, npos, kw, out);
    bool clamp = strcmp(fn, "clamp") == 0 || strcmp(fn, "clip") == 0;
    bool close = strcmp(fn, "allclose") == 0 || strcmp(fn, "isclose") == 0;
    if (!clamp && !close && json_object_size(kw) != 0)
        return fail(ev, node, "%s() takes no keyword arguments", fn);
    if (close || strcmp(fn, "equal") == 0)
        return close_fn(ev, node, fn, pos, npos, kw, out);
    if (strcmp(fn, "where") == 0) {
        if (npos != 3)
            return fail(ev, node, "where() takes a condition and two values (where(c, a, b))");
        return lab__eval_where(ev, node, &pos[0], &pos[1], &pos[2], out);
    }
    if (!clamp) {
        if (npos != 2)
            return fail(ev, node, "%s() takes two values", fn);
        bool pow = strcmp(fn, "pow") == 0;
        for (int k = 0; k < 2 && !pow; k++)
            if (pos[k].kind != LAB_V_TENSOR)
                return fail(ev, node, "%s(): argument '%s' (position %d) must be Tensor, not %s",
                            fn, k ? "other" : "input", k + 1, lab__eval_type_name(&pos[k]));
        return lab__eval_arith(ev, node, fn, &pos[0], &pos[1], out);
    }
    if (npos < 1 || npos > 3 || pos[0].kind != LAB_V_TENSOR)
        return fail(ev, node, "%s() takes a tensor, then min and max", fn);
    lab_value_t lo = {0}, hi = {0};
    bool has_lo = false, has_hi = false;
    dl_status_t st = clamp_bound(ev, kw, "min", pos, npos, 1, &lo, &has_lo);
    if (st == DL_OK)
        st = clamp_bound(ev, kw, "max", pos, npos, 2, &hi, &has_hi);
    if (st == DL_OK && !has_lo && !has_hi)
        st = fail(ev, node, "torch.clamp: At least one of 'min' or 'max' must not be None");
    if (st == DL_OK)
        st = lab__eval_clamp(ev, node, &pos[0], &lo, &hi, out);
    lab_value_clear(&lo);
    lab_value_clear(&hi);
    return st;
}

/* Whether max or min of pos is Python's ordering of values other than
 * numbers: strings, tuples, lists (max('ab', 'b'), max([(1, 2), (1, 3)])),
 * where numbers alone are folded as numbers and tensors are torch's. */
static bool py_ordered(const lab_value_t *pos, int npos)
{
    const lab_value_t *items = npos == 1 && pos[0].kind == LAB_V_LIST ? pos[0].items : pos;
    size_t n = npos == 1 && pos[0].kind == LAB_V_LIST ? pos[0].n : (size_t)npos;
    if (npos == 1 && pos[0].kind == LAB_V_STR)
        return true; /* max('abc'): its characters */
    if (npos == 1 && pos[0].kind != LAB_V_LIST)
        return false;
    bool other = false;
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind == LAB_V_TENSOR || items[i].kind == LAB_V_NAME)
            return false;
        other = other || !lab__eval_is_number(&items[i]);
    }
    return other;
}

dl_status_t lab__eval_math(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                           int npos, const json_t *kw, lab_value_t *out)
{
    size_t i = 0;
    while (i < sizeof(math_fns) / sizeof(math_fns[0]) && strcmp(math_fns[i].name, fn) != 0)
        i++;
    if (i == sizeof(math_fns) / sizeof(math_fns[0]))
        return fail(ev, node, "unknown function '%s'", fn);
    if (math_fns[i].kind == 5)
        return elementwise(ev, node, fn, pos, npos, kw, out);
    const json_t *key = json_object_get(kw, "key");
    bool extreme = strcmp(fn, "max") == 0 || strcmp(fn, "min") == 0;
    if (key != NULL && extreme) {
        /* max(l, key=len): Python's, by key */
        if (json_object_size(kw) != 1)
            return fail(ev, node, "%s() takes key= alone (dim= and keepdim= are a tensor's)", fn);
        return lab__eval_py_extreme(ev, node, fn, pos, npos, key, out);
    }
    if (extreme && json_object_size(kw) == 0 && py_ordered(pos, npos))
        return lab__eval_py_extreme(ev, node, fn, pos, npos, NULL, out); /* max((1, 2), (1, 3)) */
    bool done = false;
    dl_status_t st = lab__eval_py_numbers(ev, node, fn, pos, npos, kw, &done, out);
    if (done || st != DL_OK)
        return st; /* abs(-3), max(a, b) of numbers: Python's */
    bool lists = strcmp(fn, "cat") == 0 || strcmp(fn, "stack") == 0;
    if (npos == 1 && pos[0].kind == LAB_V_LIST && json_object_size(kw) == 0 &&
        (strcmp(fn, "sum") == 0 || strcmp(fn, "max") == 0 || strcmp(fn, "min") == 0))
        return lab__eval_py_fold(ev, node, fn, &pos[0], out);
    if (npos < 1)
        return fail(ev, node, "%s() needs a %s", fn, lists ? "list of tensors" : "tensor");
    if (!lists && (st = need_tensor(ev, node, fn, &pos[0], 1)) != DL_OK)
        return st;
    /* On a GPU: the host copies compute, the result goes back. */
    dl_device_t dev = host_dev;
    for (int k = 0; k < npos; k++)
        if ((st = to_host(ev, &pos[k], &dev)) != DL_OK)
            return st;
    st = math_host(ev, node, fn, math_fns[i].kind, math_fns[i].which, pos, npos, kw, out);
    return st == DL_OK ? to_dev(ev, out, dev) : st;
}
