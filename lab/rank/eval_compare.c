/* Python's comparisons beyond the arithmetic ones: a chain of them
 * (0 <= i < n), membership (x in l, x not in t), identity (x is None) and
 * == between values that are not numbers or tensors (lists, tuples,
 * None), each as Python, or torch for a tensor, gives it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* Whether a and b, host tensors, hold the same elements alike. */
static bool same_tensor(const dl_tensor_t *a, const dl_tensor_t *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->device.type != DL_DEVICE_CPU ||
        b->device.type != DL_DEVICE_CPU)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    size_t nb = dl_tensor_nbytes(a);
    return a->data == b->data || nb == 0 || memcmp(a->data, b->data, nb) == 0;
}

/* A view of a dict, d.keys() or d.items(), equals another of the same
 * kind with the same items, in any order, as Python's set-like views; a
 * values view equals nothing but itself, which a copy here is not. */
static dl_status_t view_equal(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                              const lab_value_t *b, bool *eq)
{
    *eq = strcmp(a->name, b->name) == 0 && strcmp(a->name, "dict_values") != 0 && a->n == b->n;
    bool items = strcmp(a->name, "dict_items") == 0; /* (key, value): found by the key's hash */
    int64_t *hb = *eq ? malloc((b->n ? b->n : 1) * sizeof(*hb)) : NULL;
    if (*eq && hb == NULL)
        return DL_ERR_NOMEM;
    for (size_t j = 0; *eq && j < b->n; j++)
        hb[j] = lab__eval_key_hash(items ? &b->items[j].items[0] : &b->items[j]);
    dl_status_t st = DL_OK;
    for (size_t i = 0; *eq && st == DL_OK && i < a->n; i++) {
        bool in = false;
        int64_t h = lab__eval_key_hash(items ? &a->items[i].items[0] : &a->items[i]);
        for (size_t j = 0; !in && st == DL_OK && j < b->n; j++)
            if (hb[j] == h)
                st = lab__eval_values_equal(ev, node, &a->items[i], &b->items[j], &in);
        *eq = in;
    }
    free(hb);
    return st;
}

/* == of two values as Python's `in` and list.index() test it; a tensor's answer is its == made a
 * bool, so that [t] == [u] is refused for a t of more than one element,
 * as Python's bool() of it is. */
dl_status_t lab__eval_values_equal(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                                   const lab_value_t *b, bool *eq)
{
    if (a->kind == LAB_V_TENSOR && b->kind == LAB_V_TENSOR && same_tensor(a->t, b->t)) {
        /* Python finds the same object equal before it asks the tensor
         * ([t] == [t], d == d.copy()); copies here, the same values */
        *eq = true;
        return DL_OK;
    }
    if (a->kind == LAB_V_TENSOR || b->kind == LAB_V_TENSOR ||
        (lab__eval_is_number(a) && lab__eval_is_number(b))) {
        lab_value_t r;
        dl_status_t st = lab__eval_arith(ev, node, "==", a, b, &r);
        if (st != DL_OK)
            return st;
        st = lab__eval_value_truth(ev, node, &r, eq);
        lab_value_clear(&r);
        return st;
    }
    return lab__eval_py_equal(ev, node, a, b, eq);
}

dl_status_t lab__eval_py_equal(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                               const lab_value_t *b, bool *eq)
{
    *eq = false;
    if (a->kind != b->kind) {
        /* a number and a bool compare by value; anything else differs */
        if (lab__eval_is_number(a) && lab__eval_is_number(b))
            return lab__eval_values_equal(ev, node, a, b, eq);
        return DL_OK;
    }
    switch (a->kind) {
    case LAB_V_NONE:
        *eq = true;
        return DL_OK;
    case LAB_V_STR:
        /* a ReduceOp (a string marked so) equals only the same op */
        *eq = strcmp(a->s != NULL ? a->s : "", b->s != NULL ? b->s : "") == 0 &&
              strcmp(a->name, b->name) == 0;
        return DL_OK;
    case LAB_V_NAME:
        *eq = strcmp(a->name, b->name) == 0;
        return DL_OK;
    case LAB_V_LIST: {
        if (strncmp(a->name, "dict_", 5) == 0 || strncmp(b->name, "dict_", 5) == 0)
            return view_equal(ev, node, a, b, eq);
        /* torch.Size is a tuple; a list is never equal to a tuple */
        if (lab__eval_is_tuple(a) != lab__eval_is_tuple(b) || a->n != b->n)
            return DL_OK;
        for (size_t i = 0; i < a->n; i++) {
            dl_status_t st = lab__eval_values_equal(ev, node, &a->items[i], &b->items[i], eq);
            if (st != DL_OK || !*eq)
                return st;
        }
        *eq = true;
        return DL_OK;
    }
    case LAB_V_DICT:
        return lab__eval_dict_equal(ev, node, a, b, eq);
    case LAB_V_INT:
    case LAB_V_FLOAT:
    case LAB_V_BOOL:
    case LAB_V_TENSOR:
        return lab__eval_values_equal(ev, node, a, b, eq);
    default:
        /* handles, groups and functions: the same object only */
        *eq = a->work == b->work && a->group == b->group && a->fn == b->fn;
        return DL_OK;
    }
}

/* x in y: an item of a list or tuple equal to x, a substring of a string,
 * or, for a tensor, torch's Tensor.__contains__: (y == x).any(). */
static dl_status_t contains(lab_eval_t *ev, const json_t *node, const lab_value_t *x,
                            const lab_value_t *y, bool *yes)
{
    *yes = false;
    switch (y->kind) {
    case LAB_V_DICT: /* a key of it */
        return lab__eval_dict_has(ev, node, y, x, yes);
    case LAB_V_LIST:
        for (size_t i = 0; i < y->n && !*yes; i++) {
            dl_status_t st = lab__eval_values_equal(ev, node, x, &y->items[i], yes);
            if (st != DL_OK)
                return st;
        }
        return DL_OK;
    case LAB_V_STR:
        if (x->kind != LAB_V_STR)
            return fail(ev, node, "'in <string>' requires string as left operand, not %s",
                        lab_vkind_name(x->kind));
        *yes = strstr(y->s != NULL ? y->s : "", x->s != NULL ? x->s : "") != NULL;
        return DL_OK;
    case LAB_V_TENSOR: {
        if (x->kind != LAB_V_TENSOR && !lab__eval_is_number(x))
            return fail(ev, node,
                        "Tensor.__contains__ only supports Tensor or scalar, but you passed in "
                        "%s",
                        lab_vkind_a(x->kind));
        lab_value_t r;
        dl_status_t st = lab__eval_arith(ev, node, "==", y, x, &r);
        if (st != DL_OK)
            return st;
        dl_tensor_t *h = NULL; /* a GPU's answer is read from a host copy */
        if (r.t->device.type == DL_DEVICE_CUDA &&
            dl_tensor_to(r.t, (dl_device_t){DL_DEVICE_CPU, 0}, &h) != DL_OK) {
            lab_value_clear(&r);
            return fail(ev, node, "cannot copy the tensor from the GPU: %s", dl_cuda_last_error());
        }
        const dl_tensor_t *e = h != NULL ? h : r.t;
        for (size_t i = 0; i < e->numel && !*yes; i++)
            *yes = dl_dtype_get(e->dtype, e->data, i) != 0;
        dl_tensor_free(h);
        lab_value_clear(&r);
        return DL_OK;
    }
    default:
        return fail(ev, node, "argument of type '%s' is not iterable", lab_vkind_name(y->kind));
    }
}

/* what v is, for a message: "a tuple", "an int", "a tensor" */
static const char *a_kind(const lab_value_t *v)
{
    return v->kind == LAB_V_LIST && v->tuple ? "a tuple" : lab_vkind_a(v->kind);
}

/* x is y. The shell copies a value when it binds it (b = a is a copy), so
 * it keeps no identity of tensors and lists to compare: is answers for
 * None, True and False (x is None, done is True), as Python's style guides
 * use it, and refuses the rest rather than guess. */
static dl_status_t identical(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                             const lab_value_t *b, bool *yes)
{
    for (int k = 0; k < 2; k++) {
        const lab_value_t *v = k ? b : a, *o = k ? a : b;
        if (v->kind == LAB_V_NONE || v->kind == LAB_V_BOOL) {
            *yes = o->kind == v->kind && o->i == v->i;
            return DL_OK;
        }
    }
    /* type(x) is int: each class is one object in Python */
    bool ca = a->kind == LAB_V_STR && strcmp(a->name, LAB_TYPE) == 0;
    bool cb = b->kind == LAB_V_STR && strcmp(b->name, LAB_TYPE) == 0;
    if (ca || cb) {
        *yes = ca && cb && a->s != NULL && b->s != NULL && strcmp(a->s, b->s) == 0;
        return DL_OK;
    }
    return fail(
        ev, node,
        "'is' compares with None, True, False or classes here (%s and %s: values are copied "
        "when bound, so use ==)",
        a_kind(a), a_kind(b));
}

bool lab__eval_is_compare_op(const char *op)
{
    static const char *const ops[] = {"==", "!=", "<",  "<=",     ">",
                                      ">=", "in", "is", "not in", "is not"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* Whether a plain list or tuple (not a dict's view). */
static bool is_seq(const lab_value_t *v)
{
    return v->kind == LAB_V_LIST && strncmp(v->name, "dict_", 5) != 0;
}

/* c (below 0, 0, above 0) read through op: <, <=, > or >=. */
static bool order_holds(const char *op, int c)
{
    return op[0] == '<' ? (op[1] == '=' ? c <= 0 : c < 0) : (op[1] == '=' ? c >= 0 : c > 0);
}

dl_status_t lab__eval_py_order(lab_eval_t *ev, const json_t *node, const char *op,
                               const lab_value_t *a, const lab_value_t *b, bool *yes)
{
    *yes = false;
    if (a->kind == LAB_V_TENSOR || b->kind == LAB_V_TENSOR) {
        /* torch's t < u, then its truth: one element, as bool(t < u) */
        lab_value_t r;
        dl_status_t st = lab__eval_arith(ev, node, op, a, b, &r);
        if (st == DL_OK) {
            st = lab__eval_value_truth(ev, node, &r, yes);
            lab_value_clear(&r);
        }
        return st;
    }
    if (lab__eval_is_number(a) && lab__eval_is_number(b)) {
        if (a->kind != LAB_V_FLOAT && b->kind != LAB_V_FLOAT) {
            *yes = order_holds(op, (a->i > b->i) - (a->i < b->i));
            return DL_OK;
        }
        double x = a->kind == LAB_V_FLOAT ? a->f : (double)a->i;
        double y = b->kind == LAB_V_FLOAT ? b->f : (double)b->i;
        /* NaN: every order is false, as in Python */
        *yes = x == x && y == y && order_holds(op, (x > y) - (x < y));
        return DL_OK;
    }
    if (a->kind == LAB_V_STR && b->kind == LAB_V_STR && a->s != NULL && b->s != NULL &&
        a->name[0] == '\0' && b->name[0] == '\0') {
        *yes = order_holds(op, strcmp(a->s, b->s));
        return DL_OK;
    }
    if (is_seq(a) && is_seq(b) && lab__eval_is_tuple(a) == lab__eval_is_tuple(b)) {
        /* the first items that differ decide, as Python's; else the lengths */
        for (size_t i = 0; i < a->n && i < b->n; i++) {
            bool eq;
            dl_status_t st = lab__eval_py_equal(ev, node, &a->items[i], &b->items[i], &eq);
            if (st != DL_OK || !eq)
                return st != DL_OK
                           ? st
                           : lab__eval_py_order(ev, node, op, &a->items[i], &b->items[i], yes);
        }
        *yes = order_holds(op, (a->n > b->n) - (a->n < b->n));
        return DL_OK;
    }
    return fail(ev, node, "'%s' not supported between instances of '%s' and '%s'", op,
                lab__eval_type_name(a), lab__eval_type_name(b));
}

static dl_status_t compare_pair(lab_eval_t *ev, const json_t *op_node, const lab_value_t *a,
                                const lab_value_t *b, lab_value_t *out)
{
    const char *op = lab_json_str(op_node, "op", "");
    bool negate = strncmp(op, "not ", 4) == 0 || strcmp(op, "is not") == 0, yes = false;
    dl_status_t st;
    for (int k = 0; k < 2; k++)
        if (lab__eval_undefined(k ? b : a)) /* Python's NameError, not False */
            return lab__eval_fail_undefined(ev, op_node, k ? b : a);
    if (strcmp(op, "in") == 0 || strcmp(op, "not in") == 0)
        st = contains(ev, op_node, a, b, &yes);
    else if (strcmp(op, "is") == 0 || strcmp(op, "is not") == 0)
        st = identical(ev, op_node, a, b, &yes);
    else if ((op[0] == '<' || op[0] == '>') && op[1] != op[0] &&
             ((is_seq(a) && b->kind != LAB_V_TENSOR) || (is_seq(b) && a->kind != LAB_V_TENSOR)))
        st = lab__eval_py_order(ev, op_node, op, a, b, &yes); /* (1, 2) < (1, 3) */
    else
        return lab__eval_arith(ev, op_node, op, a, b, out);
    if (st != DL_OK)
        return st;
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_BOOL;
    out->i = yes != negate;
    return DL_OK;
}

/* a < b < c is (a < b) and (b < c) with b evaluated once, as in Python: a
 * false link is the answer, and the terms after it are not evaluated. */
dl_status_t lab__eval_compare(lab_eval_t *ev, const json_t *terms, const json_t *ops,
                              lab_value_t *out)
{
    size_t n = json_array_size(terms);
    lab_value_t left, right;
    dl_status_t st = lab_eval_expr(ev, json_array_get(terms, 0), &left);
    for (size_t i = 1; i < n && st == DL_OK; i++) {
        if ((st = lab_eval_expr(ev, json_array_get(terms, i), &right)) != DL_OK)
            break;
        const json_t *op_node = json_array_get(ops, i - 1);
        st = compare_pair(ev, op_node, &left, &right, out);
        lab_value_clear(&left);
        left = right;
        bool go_on = true;
        if (st != DL_OK || i == n - 1)
            break;
        if ((st = lab__eval_value_truth(ev, op_node, out, &go_on)) != DL_OK)
            lab_value_clear(out);
        if (st != DL_OK || !go_on)
            break;
        lab_value_clear(out);
    }
    lab_value_clear(&left);
    return st;
}
