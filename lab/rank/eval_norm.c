/* The shell's norm, softmax and log_softmax of a tensor, bound and worded
 * as torch's; the kernels are core's (distlab/tensor_math.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* p= of norm: a number (inf included), 'fro' (the 2-norm) or None. */
static dl_status_t norm_p(lab_eval_t *ev, const lab_value_t *v, const json_t *where, double *p)
{
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
static dl_status_t norm_dims(lab_eval_t *ev, const lab_value_t *v, const json_t *where, int ndim,
                             bool *reduce, bool *all)
{
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
        dl_status_t st = lab__eval_bound_read(ev, "norm", "dim", &items[k], where, LAB_V_INT, &dim);
        if (st == DL_OK)
            st = lab__eval_bound_dim(ev, where, dim, ndim, &d);
        if (st != DL_OK)
            return st;
        if (ndim == 0)
            continue; /* a 0-d tensor's one "dimension" */
        if (reduce[d])
            return fail(ev, where, "dim %d appears multiple times in the list of dims", d);
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
    lab_value_t vals[3];
    const json_t *where[3];
    dl_status_t st = lab__eval_bind(ev, node, "norm", names, pos, npos, kw, vals, where);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *t = pos[0].t;
    double p = 2;
    bool keepdim = false, all = true, reduce[DL_MAX_DIMS] = {false};
    if (where[0] != NULL)
        st = norm_p(ev, &vals[0], where[0], &p);
    if (st == DL_OK && where[1] != NULL)
        st = norm_dims(ev, &vals[1], where[1], t->ndim, reduce, &all);
    if (st == DL_OK && where[2] != NULL)
        st = lab__eval_bound_read(ev, "norm", "keepdim", &vals[2], where[2], LAB_V_BOOL, &keepdim);
    for (int k = 0; k < 3; k++)
        lab_value_clear(&vals[k]);
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
    dl_status_t st = lab__eval_dim_dtype(ev, node, fn, pos, npos, kw, &d, &dt, &cast);
    if (st != DL_OK)
        return st;
    if (!dl_dtype_is_float(dt) || dt == DL_FLOAT16)
        return fail(ev, node, "\"%s%s_kernel_impl\" not implemented for '%s'", fn,
                    t->ndim == 0 || d == t->ndim - 1 ? "_lastdim" : "", lab__eval_scalar_type(dt));
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
