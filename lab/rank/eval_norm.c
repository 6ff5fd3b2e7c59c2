/* The shell's norm, softmax and log_softmax of a tensor, bound and worded
 * as torch's; the kernels are core's (distlab/tensor_math.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* p= of norm: a number (inf included), 'fro' (the 2-norm) or None. */
static dl_status_t norm_p(lab_eval_t *ev, const lab_bound_t *b, double *p)
{
    const lab_value_t *v = &b->v;
    const json_t *where = b->where;
    if (v->kind == LAB_V_INT || v->kind == LAB_V_FLOAT) {
        *p = v->kind == LAB_V_INT ? (double)v->i : v->f;
        if (isnan(*p))
            return fail(ev, where, "norm(): p must not be NaN");
        return DL_OK;
    }
    if (v->kind == LAB_V_NONE)
        return DL_OK;
    if (v->kind == LAB_V_BOOL)
        return fail(ev, where,
                    "norm_kernel_tensor_iterator_impl expects norm to be integer or float");
    if (v->kind == LAB_V_STR && strcmp(v->s, "fro") == 0)
        return DL_OK;
    if (v->kind == LAB_V_STR && strcmp(v->s, "nuc") == 0)
        return fail(ev, where, "norm(p='nuc'), the nuclear norm, is not supported here");
    if (v->kind == LAB_V_STR)
        return fail(ev, where, "only valid string values are 'fro' and 'nuc', found %s", v->s);
    return fail(ev, where, "norm(): p must be a number or 'fro', not %s", lab__eval_type_name(v));
}

/* dim= of norm: None (every dimension), an int, or a tuple or list of ints
 * named once each; reduce[d] says which. */
static dl_status_t norm_dims(lab_eval_t *ev, const lab_bound_t *b, int ndim, bool *reduce,
                             bool *all)
{
    const lab_value_t *v = &b->v;
    *all = v->kind == LAB_V_NONE;
    if (*all)
        return DL_OK;
    const lab_value_t *items = v->kind == LAB_V_LIST ? v->items : v;
    size_t n = v->kind == LAB_V_LIST ? v->n : 1;
    if (v->kind == LAB_V_LIST && n == 0) {
        *all = true; /* dim=() is every dimension, as torch reads it */
        return DL_OK;
    }
    for (size_t k = 0; k < n; k++) {
        int64_t dim = 0;
        int d = 0;
        lab_bound_t item = {items[k], b->where, b->position};
        dl_status_t st = lab__eval_bound_read(ev, "norm", "dim", &item, LAB_V_INT, &dim);
        if (st == DL_OK)
            st = lab__eval_bound_dim(ev, b->where, dim, ndim, &d);
        if (st != DL_OK)
            return st;
        if (reduce[d] && n > 1) {
            /* torch's words, with the dims as they were written */
            char got[160] = "";
            for (size_t j = 0, at = 0; j < n && at < sizeof(got); j++)
                at += (size_t)snprintf(got + at, sizeof(got) - at, "%s%lld", j ? ", " : "",
                                       (long long)items[j].i);
            return fail(ev, b->where, "Expected dims to be different, got [%s] instead", got);
        }
        reduce[d] = true;
    }
    if (ndim == 0)
        *all = true;
    return DL_OK;
}

/* norm(p='fro', dim=None, keepdim=False): the vector norm of a float
 * tensor over every dimension or those of dim. */
static dl_status_t norm(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                        const json_t *kw, lab_value_t *out)
{
    static const char *const names[] = {"p", "dim", "keepdim", NULL};
    lab_bound_t b[3];
    dl_status_t st = lab__eval_bind(ev, node, "norm", names, 3, pos, npos, kw, b);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *t = pos[0].t;
    double p = 2;
    bool keepdim = false, all = true, reduce[DL_MAX_DIMS] = {false};
    if (b[0].where != NULL)
        st = norm_p(ev, &b[0], &p);
    if (st == DL_OK && b[1].where != NULL)
        st = norm_dims(ev, &b[1], t->ndim, reduce, &all);
    if (st == DL_OK && b[2].where != NULL)
        st = lab__eval_bound_read(ev, "norm", "keepdim", &b[2], LAB_V_BOOL, &keepdim);
    lab__eval_bound_clear(b, 3);
    if (st != DL_OK)
        return st;
    if (!dl_dtype_is_float(t->dtype))
        return fail(ev, node,
                    "norm(): input dtype should be either floating point or complex. Got %s "
                    "instead.",
                    lab__eval_scalar_type(t->dtype));
    dl_tensor_t *res = NULL;
    st = dl_tensor_norm(t, p, all ? NULL : reduce, keepdim, dl_comm_allocator(ev->r->comm), &res);
    return lab__eval_made(ev, node, "norm", st, res, out);
}

/* softmax(dim, dtype=None) and log_softmax: of a float tensor other than
 * float16 (torch's CPU kernels), dtype= converting the input first. */
static dl_status_t softmax(lab_eval_t *ev, const json_t *node, const char *fn,
                           const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    int d = 0;
    bool cast = false;
    dl_dtype_t dt = t->dtype;
    dl_status_t st = lab__eval_dim_dtype(ev, node, fn, 2, pos, npos, kw, &d, &dt, &cast);
    if (st != DL_OK)
        return st;
    if (!dl_dtype_is_float(dt) || dt == DL_FLOAT16)
        /* torch names its kernel "softmax_kernel_impl" off the last
         * dimension for log_softmax too */
        return fail(
            ev, node, "\"%s\" not implemented for '%s'",
            t->ndim == 0 || d == t->ndim - 1
                ? (fn[0] == 'l' ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl")
                : "softmax_kernel_impl",
            lab__eval_scalar_type(dt));
    lab_value_t in = {0};
    if ((st = lab__eval_as_dtype(ev, node, &t, dt, &in)) != DL_OK)
        return st;
    dl_tensor_t *res = NULL;
    st = dl_tensor_softmax(t, d, fn[0] == 'l', dl_comm_allocator(ev->r->comm), &res);
    lab_value_clear(&in);
    return lab__eval_made(ev, node, fn, st, res, out);
}

dl_status_t lab__eval_norm(lab_eval_t *ev, const json_t *node, const char *fn,
                           const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    if (strcmp(fn, "norm") == 0)
        return norm(ev, node, pos, npos, kw, out);
    return softmax(ev, node, fn, pos, npos, kw, out);
}
