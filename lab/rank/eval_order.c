/* The shell's sort, argsort, topk, cumsum and cumprod of a tensor, bound as
 * torch binds their arguments and worded as torch refuses them; the
 * kernels are core's (distlab/tensor_math.h). sort and topk give torch's
 * pair (values, indices), printed as torch.return_types.sort(...). Also
 * the binder that these and eval_norm.c share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

dl_status_t lab__eval_bind(lab_eval_t *ev, const json_t *node, const char *fn,
                           const char *const *names, const lab_value_t *pos, int npos,
                           const json_t *kw, lab_value_t *vals, const json_t **where)
{
    int n = 0;
    while (names[n] != NULL)
        n++;
    for (int k = 0; k < n; k++) {
        memset(&vals[k], 0, sizeof(vals[k]));
        where[k] = NULL;
    }
    if (npos - 1 > n)
        return fail(ev, node, "%s() takes at most %d argument%s (%d given)", fn, n,
                    n == 1 ? "" : "s", npos - 1);
    dl_status_t st = DL_OK;
    for (int k = 0; k + 1 < npos && st == DL_OK; k++) {
        st = lab_value_copy(&pos[k + 1], NULL, &vals[k]);
        where[k] = node;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)kw, key, value)
    {
        if (st != DL_OK)
            break;
        int k = 0;
        while (k < n && strcmp(names[k], key) != 0)
            k++;
        if (k == n)
            st = fail(ev, value, "%s() got an unexpected keyword argument '%s'", fn, key);
        else if (where[k] != NULL)
            st = fail(ev, value, "%s() got multiple values for argument '%s'", fn, key);
        else if (strcmp(key, "dtype") == 0)
            where[k] = value; /* read by lab__eval_bound_dtype */
        else if ((st = lab_eval_expr(ev, value, &vals[k])) == DL_OK)
            where[k] = value;
    }
    for (int k = 0; k < n && st == DL_OK; k++)
        if (where[k] != NULL && lab__eval_undefined(&vals[k]) &&
            (strcmp(names[k], "dtype") != 0 || vals[k].kind != LAB_V_NAME))
            st = lab__eval_fail_undefined(ev, where[k], &vals[k]);
    if (st != DL_OK)
        for (int k = 0; k < n; k++)
            lab_value_clear(&vals[k]);
    return st;
}

dl_status_t lab__eval_bound_read(lab_eval_t *ev, const char *fn, const char *name,
                                 const lab_value_t *v, const json_t *where, lab_vkind_t kind,
                                 void *out)
{
    if (v->kind != kind)
        return fail(ev, where, "%s(): argument '%s' must be %s, not %s", fn, name,
                    lab_vkind_name(kind), lab__eval_type_name(v));
    if (kind == LAB_V_BOOL)
        *(bool *)out = v->i != 0;
    else
        *(int64_t *)out = v->i;
    return DL_OK;
}

dl_status_t lab__eval_bound_dtype(lab_eval_t *ev, const json_t *kw, const lab_value_t *v,
                                  const json_t *where, dl_dtype_t *dt_p)
{
    if (json_object_get(kw, "dtype") != NULL) {
        bool given;
        return lab__eval_kw_dtype(ev, kw, dt_p, &given);
    }
    const char *name = v->kind == LAB_V_NAME ? v->name : "";
    if (strncmp(name, "torch.", 6) == 0)
        name += 6;
    if (dl_dtype_parse(name, dt_p) == DL_OK)
        return DL_OK;
    return fail(ev, where, "dtype must be a dtype such as torch.float32, not %s",
                lab__eval_type_name(v));
}

dl_status_t lab__eval_as_dtype(lab_eval_t *ev, const json_t *node, const dl_tensor_t **t_p,
                               dl_dtype_t dt, lab_value_t *hold)
{
    if ((*t_p)->dtype == dt)
        return DL_OK;
    dl_status_t st = lab__eval_retype(ev, node, *t_p, dt, hold);
    if (st == DL_OK)
        *t_p = hold->t;
    return st;
}

dl_status_t lab__eval_made(lab_eval_t *ev, const json_t *node, const char *fn, dl_status_t st,
                           dl_tensor_t *res, lab_value_t *out)
{
    if (st != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_TENSOR;
    out->t = res;
    return DL_OK;
}

dl_status_t lab__eval_bound_dim(lab_eval_t *ev, const json_t *node, int64_t dim, int ndim,
                                int *dim_p)
{
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n)
        return fail(ev, node,
                    "Dimension out of range (expected to be in range of [%d, %d], but got %lld)",
                    -n, n - 1, (long long)dim);
    *dim_p = (int)(dim < 0 ? dim + n : dim);
    return DL_OK;
}

dl_status_t lab__eval_pair(const char *fn, dl_tensor_t *values, dl_tensor_t *indices,
                           lab_value_t *out)
{
    lab_value_t *items = calloc(2, sizeof(*items));
    if (items == NULL) {
        dl_tensor_free(values);
        dl_tensor_free(indices);
        return DL_ERR_NOMEM;
    }
    items[0].kind = LAB_V_TENSOR;
    items[0].t = values;
    items[1].kind = LAB_V_TENSOR;
    items[1].t = indices;
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_LIST;
    out->items = items;
    out->n = 2;
    snprintf(out->name, sizeof(out->name), "%s", fn);
    return DL_OK;
}

static void clear_all(lab_value_t *vals, int n)
{
    for (int k = 0; k < n; k++)
        lab_value_clear(&vals[k]);
}

/* sort(dim=-1, descending=False, stable=False) and argsort, the same
 * order's indices alone. stable= is taken: the order is always stable. */
static dl_status_t sort(lab_eval_t *ev, const json_t *node, const char *fn, const lab_value_t *pos,
                        int npos, const json_t *kw, lab_value_t *out)
{
    static const char *const names[] = {"dim", "descending", "stable", NULL};
    lab_value_t vals[3];
    const json_t *where[3];
    dl_status_t st = lab__eval_bind(ev, node, fn, names, pos, npos, kw, vals, where);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *t = pos[0].t;
    int64_t dim = -1;
    bool descending = false, stable = false;
    int d = 0;
    if (where[0] != NULL)
        st = lab__eval_bound_read(ev, fn, "dim", &vals[0], where[0], LAB_V_INT, &dim);
    if (st == DL_OK && where[1] != NULL)
        st =
            lab__eval_bound_read(ev, fn, "descending", &vals[1], where[1], LAB_V_BOOL, &descending);
    if (st == DL_OK && where[2] != NULL)
        st = lab__eval_bound_read(ev, fn, "stable", &vals[2], where[2], LAB_V_BOOL, &stable);
    clear_all(vals, 3);
    if (st == DL_OK)
        st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d);
    if (st != DL_OK)
        return st;
    dl_tensor_t *values = NULL, *indices = NULL;
    if ((st = dl_tensor_sort(t, d, descending, dl_comm_allocator(ev->r->comm), &values,
                             &indices)) != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    if (strcmp(fn, "argsort") == 0) {
        dl_tensor_free(values);
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_TENSOR;
        out->t = indices;
        return DL_OK;
    }
    return lab__eval_pair("sort", values, indices, out);
}

/* topk(k, dim=-1, largest=True, sorted=True): sorted= is taken, the
 * values always come in order. */
static dl_status_t topk(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                        const json_t *kw, lab_value_t *out)
{
    static const char *const names[] = {"k", "dim", "largest", "sorted", NULL};
    lab_value_t vals[4];
    const json_t *where[4];
    dl_status_t st = lab__eval_bind(ev, node, "topk", names, pos, npos, kw, vals, where);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *t = pos[0].t;
    int64_t k = 0, dim = -1;
    bool largest = true, sorted = true;
    int d = 0;
    if (where[0] == NULL)
        st = fail(ev, node, "topk() missing 1 required positional argument: 'k'");
    else
        st = lab__eval_bound_read(ev, "topk", "k", &vals[0], where[0], LAB_V_INT, &k);
    if (st == DL_OK && where[1] != NULL)
        st = lab__eval_bound_read(ev, "topk", "dim", &vals[1], where[1], LAB_V_INT, &dim);
    if (st == DL_OK && where[2] != NULL)
        st = lab__eval_bound_read(ev, "topk", "largest", &vals[2], where[2], LAB_V_BOOL, &largest);
    if (st == DL_OK && where[3] != NULL)
        st = lab__eval_bound_read(ev, "topk", "sorted", &vals[3], where[3], LAB_V_BOOL, &sorted);
    clear_all(vals, 4);
    if (st == DL_OK)
        st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d);
    if (st != DL_OK)
        return st;
    if (t->dtype == DL_BOOL)
        return fail(ev, node, "\"topk_cpu\" not implemented for 'Bool'");
    int64_t n = t->ndim > 0 ? t->shape[d] : 1;
    if (k < 0 || k > n)
        return fail(ev, node, "selected index k out of range");
    if (t->ndim == 0)
        k = 1; /* torch gives the element for k = 0 too */
    dl_tensor_t *values = NULL, *indices = NULL;
    if ((st = dl_tensor_topk(t, k, d, largest, dl_comm_allocator(ev->r->comm), &values,
                             &indices)) != DL_OK)
        return fail(ev, node, "topk(): %s", dl_strerror(st));
    return lab__eval_pair("topk", values, indices, out);
}

dl_status_t lab__eval_dim_dtype(lab_eval_t *ev, const json_t *node, const char *fn,
                                const lab_value_t *pos, int npos, const json_t *kw, int *dim_p,
                                dl_dtype_t *dt_p, bool *cast_p)
{
    static const char *const names[] = {"dim", "dtype", NULL};
    lab_value_t vals[2];
    const json_t *where[2];
    dl_status_t st = lab__eval_bind(ev, node, fn, names, pos, npos, kw, vals, where);
    if (st != DL_OK)
        return st;
    int64_t dim = 0;
    *cast_p = where[1] != NULL;
    if (where[0] == NULL)
        st = fail(ev, node, "%s() missing 1 required positional argument: 'dim'", fn);
    else
        st = lab__eval_bound_read(ev, fn, "dim", &vals[0], where[0], LAB_V_INT, &dim);
    if (st == DL_OK && *cast_p)
        st = lab__eval_bound_dtype(ev, kw, &vals[1], where[1], dt_p);
    clear_all(vals, 2);
    return st == DL_OK ? lab__eval_bound_dim(ev, node, dim, pos[0].t->ndim, dim_p) : st;
}

/* cumsum(dim, *, dtype=None) and cumprod: int64 of an integer or bool
 * tensor, a float dtype kept; dtype= converts the input first. */
static dl_status_t cumulative(lab_eval_t *ev, const json_t *node, const char *fn,
                              const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    const dl_tensor_t *t = pos[0].t;
    int d = 0;
    bool cast = false;
    dl_dtype_t odt = dl_dtype_is_float(t->dtype) ? t->dtype : DL_INT64;
    dl_status_t st = lab__eval_dim_dtype(ev, node, fn, pos, npos, kw, &d, &odt, &cast);
    if (st != DL_OK)
        return st;
    if (odt == DL_FLOAT16 || odt == DL_BOOL)
        return fail(ev, node, "\"%s_out_cpu\" not implemented for '%s'", fn,
                    lab__eval_scalar_type(odt));
    lab_value_t in = {0};
    if (cast && (st = lab__eval_as_dtype(ev, node, &t, odt, &in)) != DL_OK)
        return st;
    dl_tensor_t *res = NULL;
    st = dl_tensor_cumulative(strcmp(fn, "cumprod") == 0, t, d, odt, dl_comm_allocator(ev->r->comm),
                              &res);
    lab_value_clear(&in);
    return lab__eval_made(ev, node, fn, st, res, out);
}

dl_status_t lab__eval_order(lab_eval_t *ev, const json_t *node, const char *fn,
                            const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    if (strcmp(fn, "topk") == 0)
        return topk(ev, node, pos, npos, kw, out);
    if (strcmp(fn, "cumsum") == 0 || strcmp(fn, "cumprod") == 0)
        return cumulative(ev, node, fn, pos, npos, kw, out);
    return sort(ev, node, fn, pos, npos, kw, out);
}
