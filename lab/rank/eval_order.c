/* The shell's sort, argsort, topk, cumsum and cumprod of a tensor, bound as
 * torch binds their arguments and worded as torch refuses them; the
 * kernels are core's (distlab/tensor_math.h). sort and topk give torch's
 * pair (values, indices), printed as torch.return_types.sort(...). Also
 * the binder that these and eval_norm.c share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor_math.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

dl_status_t lab__eval_bind(lab_eval_t *ev, const json_t *node, const char *fn,
                           const char *const *names, int positional, const lab_value_t *pos,
                           int npos, const json_t *kw, lab_bound_t *b)
{
    int n = 0;
    while (names[n] != NULL)
        n++;
    memset(b, 0, (size_t)n * sizeof(*b));
    if (npos - 1 > positional)
        return fail(ev, node, "%s() takes at most %d positional argument%s (%d given)", fn,
                    positional, positional == 1 ? "" : "s", npos - 1);
    /* torch counts the tensor of a function call, not a method's */
    int first = json_object_get(node, "self") != NULL ? 1 : 2;
    dl_status_t st = DL_OK;
    for (int k = 0; k + 1 < npos && st == DL_OK; k++) {
        st = lab_value_copy(&pos[k + 1], NULL, &b[k].v);
        b[k].where = node;
        b[k].position = first + k;
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
        const char *word = lab_json_str(value, "name", NULL);
        if (k == n)
            st = fail(ev, value, "%s() got an unexpected keyword argument '%s'", fn, key);
        else if (b[k].where != NULL)
            st = fail(ev, value, "%s() got multiple values for argument '%s'", fn, key);
        else if (strcmp(key, "dtype") == 0 && word != NULL && strcmp(word, "None") == 0)
            continue; /* dtype=None: as if not given */
        else if (strcmp(key, "dtype") == 0)
            b[k].where = value; /* read by lab__eval_bound_dtype */
        else if ((st = lab_eval_expr(ev, value, &b[k].v)) == DL_OK)
            b[k].where = value;
    }
    for (int k = 0; k < n && st == DL_OK; k++)
        if (b[k].where != NULL && lab__eval_undefined(&b[k].v) &&
            (strcmp(names[k], "dtype") != 0 || b[k].v.kind != LAB_V_NAME))
            st = lab__eval_fail_undefined(ev, b[k].where, &b[k].v);
    if (st != DL_OK)
        lab__eval_bound_clear(b, n);
    return st;
}

void lab__eval_bound_clear(lab_bound_t *b, int n)
{
    for (int k = 0; k < n; k++)
        lab_value_clear(&b[k].v);
}

dl_status_t lab__eval_bound_read(lab_eval_t *ev, const char *fn, const char *name,
                                 const lab_bound_t *b, lab_vkind_t kind, void *out)
{
    const lab_value_t *v = &b->v;
    int64_t i = v->i;
    /* a 0-d integer tensor is an int, as torch reads it (t.topk(torch.tensor(2))) */
    bool int_tensor = kind == LAB_V_INT && v->kind == LAB_V_TENSOR && v->t->numel == 1 &&
                      v->t->ndim == 0 && !dl_dtype_is_float(v->t->dtype) &&
                      v->t->dtype != DL_BOOL && v->t->device.type == DL_DEVICE_CPU;
    if (int_tensor)
        i = dl_dtype_get_i64(v->t->dtype, v->t->data, 0);
    else if (v->kind != kind) {
        char at[24] = "";
        if (b->position > 0)
            snprintf(at, sizeof(at), " (position %d)", b->position);
        return fail(ev, b->where, "%s(): argument '%s'%s must be %s, not %s", fn, name, at,
                    lab_vkind_name(kind), lab__eval_type_name(v));
    }
    if (kind == LAB_V_BOOL)
        *(bool *)out = i != 0;
    else
        *(int64_t *)out = i;
    return DL_OK;
}

dl_status_t lab__eval_bound_dtype(lab_eval_t *ev, const json_t *kw, const lab_bound_t *b,
                                  dl_dtype_t *dt_p)
{
    const lab_value_t *v = &b->v;
    if (json_object_get(kw, "dtype") != NULL) {
        bool given;
        return lab__eval_kw_dtype(ev, kw, dt_p, &given);
    }
    const char *name = v->kind == LAB_V_NAME ? v->name : "";
    if (strncmp(name, "torch.", 6) == 0)
        name += 6;
    if (dl_dtype_parse(name, dt_p) == DL_OK)
        return DL_OK;
    return fail(ev, b->where, "dtype must be a dtype such as torch.float32, not %s",
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
    lab__eval_set_tensor(out, res);
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

/* sort(dim=-1, descending=False, *, stable=False) and argsort, the same
 * order's indices alone. */
static dl_status_t sort(lab_eval_t *ev, const json_t *node, const char *fn, const lab_value_t *pos,
                        int npos, const json_t *kw, lab_value_t *out)
{
    static const char *const names[] = {"dim", "descending", "stable", NULL};
    lab_bound_t b[3];
    dl_status_t st = lab__eval_bind(ev, node, fn, names, 2, pos, npos, kw, b);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *t = pos[0].t;
    int64_t dim = -1;
    bool descending = false, stable = false;
    int d = 0;
    if (b[0].where != NULL)
        st = lab__eval_bound_read(ev, fn, "dim", &b[0], LAB_V_INT, &dim);
    if (st == DL_OK && b[1].where != NULL)
        st = lab__eval_bound_read(ev, fn, "descending", &b[1], LAB_V_BOOL, &descending);
    if (st == DL_OK && b[2].where != NULL)
        st = lab__eval_bound_read(ev, fn, "stable", &b[2], LAB_V_BOOL, &stable);
    lab__eval_bound_clear(b, 3);
    if (st == DL_OK)
        st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d);
    if (st != DL_OK)
        return st;
    dl_tensor_t *values = NULL, *indices = NULL;
    if ((st = dl_tensor_sort(t, d, descending, stable, dl_comm_allocator(ev->r->comm), &values,
                             &indices)) != DL_OK)
        return fail(ev, node, "%s(): %s", fn, dl_strerror(st));
    if (strcmp(fn, "argsort") == 0) {
        dl_tensor_free(values);
        lab__eval_set_tensor(out, indices);
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
    lab_bound_t b[4];
    dl_status_t st = lab__eval_bind(ev, node, "topk", names, 4, pos, npos, kw, b);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *t = pos[0].t;
    int64_t k = 0, dim = -1;
    bool largest = true, sorted = true;
    int d = 0;
    if (b[0].where == NULL)
        st = fail(ev, node, "topk() missing 1 required positional arguments: \"k\"");
    else
        st = lab__eval_bound_read(ev, "topk", "k", &b[0], LAB_V_INT, &k);
    if (st == DL_OK && b[1].where != NULL)
        st = lab__eval_bound_read(ev, "topk", "dim", &b[1], LAB_V_INT, &dim);
    if (st == DL_OK && b[2].where != NULL)
        st = lab__eval_bound_read(ev, "topk", "largest", &b[2], LAB_V_BOOL, &largest);
    if (st == DL_OK && b[3].where != NULL)
        st = lab__eval_bound_read(ev, "topk", "sorted", &b[3], LAB_V_BOOL, &sorted);
    lab__eval_bound_clear(b, 4);
    if (st == DL_OK)
        st = lab__eval_bound_dim(ev, node, dim, t->ndim, &d);
    if (st != DL_OK)
        return st;
    if (t->dtype == DL_BOOL || t->dtype == DL_FLOAT16)
        return fail(ev, node, "\"topk_cpu\" not implemented for '%s'",
                    lab__eval_scalar_type(t->dtype));
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

dl_status_t lab__eval_dim_dtype(lab_eval_t *ev, const json_t *node, const char *fn, int positional,
                                const lab_value_t *pos, int npos, const json_t *kw, int *dim_p,
                                dl_dtype_t *dt_p, bool *cast_p)
{
    static const char *const names[] = {"dim", "dtype", NULL};
    lab_bound_t b[2];
    dl_status_t st = lab__eval_bind(ev, node, fn, names, positional, pos, npos, kw, b);
    if (st != DL_OK)
        return st;
    int64_t dim = 0;
    *cast_p = b[1].where != NULL;
    if (b[0].where == NULL)
        st = fail(ev, node, "%s() missing 1 required positional argument: 'dim'", fn);
    else
        st = lab__eval_bound_read(ev, fn, "dim", &b[0], LAB_V_INT, &dim);
    if (st == DL_OK && *cast_p)
        st = lab__eval_bound_dtype(ev, kw, &b[1], dt_p);
    lab__eval_bound_clear(b, 2);
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
    dl_status_t st = lab__eval_dim_dtype(ev, node, fn, 1, pos, npos, kw, &d, &odt, &cast);
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
