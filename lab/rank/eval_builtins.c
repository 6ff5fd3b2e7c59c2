/* Python's builtins on plain values that tutorials' code calls beside
 * torch's: str(x), repr(x), bool(x), round(x[, n]), list(x) (list(range(n))
 * among them), sorted(x), any(x) and all(x), and abs, max and min of numbers, where the
 * shell's abs, max and min are otherwise torch's, of a tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

bool lab__eval_is_py_builtin(const char *fn)
{
    return strcmp(fn, "str") == 0 || strcmp(fn, "round") == 0 || strcmp(fn, "list") == 0 ||
           strcmp(fn, "tuple") == 0 || strcmp(fn, "sorted") == 0 || strcmp(fn, "any") == 0 ||
           strcmp(fn, "all") == 0 || strcmp(fn, "type") == 0 || strcmp(fn, "reversed") == 0 ||
           strcmp(fn, "isinstance") == 0 || strcmp(fn, "bool") == 0 || strcmp(fn, "repr") == 0;
}

/* The classes a bare name gives where no variable has it: int, float,
 * bool, str, list, tuple, dict, and torch.Tensor (type(x) == int,
 * isinstance(x, (int, float))). */
static const char *const type_words[][2] = {
    {"int", "int"},   {"float", "float"}, {"bool", "bool"}, {"str", "str"},
    {"list", "list"}, {"tuple", "tuple"}, {"dict", "dict"}, {"torch.Tensor", "torch.Tensor"},
};

/* "<class 'NAME'>", marked as type(x) marks it. */
static dl_status_t class_value(const char *name, lab_value_t *out)
{
    size_t cap = strlen(name) + 12;
    memset(out, 0, sizeof(*out));
    if ((out->s = malloc(cap)) == NULL)
        return DL_ERR_NOMEM;
    snprintf(out->s, cap, "<class '%s'>", name);
    out->kind = LAB_V_STR;
    snprintf(out->name, sizeof(out->name), "%s", LAB_TYPE);
    return DL_OK;
}

bool lab__eval_type_word(const char *name, lab_value_t *out, dl_status_t *st_p)
{
    for (size_t i = 0; i < sizeof(type_words) / sizeof(type_words[0]); i++)
        if (strcmp(name, type_words[i][0]) == 0) {
            *st_p = class_value(type_words[i][1], out);
            return true;
        }
    return false;
}

/* x's class as type(x) names it: 'torch.Tensor', 'int', 'tuple', ... */
static const char *class_name(const lab_value_t *x)
{
    return x->kind == LAB_V_TENSOR                                ? "torch.Tensor"
           : lab__eval_dtype_value(x, NULL)                       ? "torch.dtype"
           : x->kind == LAB_V_STR && !strcmp(x->name, LAB_DEVICE) ? "torch.device"
           : x->kind == LAB_V_STR && !strcmp(x->name, LAB_TYPE)   ? "type"
           : x->kind == LAB_V_FUNC                                ? "function"
                                                                  : lab__eval_type_name(x);
}

/* Python's round(): half to even; with digits, the float nearest the
 * decimal rounding of x's exact value, as printf's %.*f rounds. */
static dl_status_t py_round(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                            lab_value_t *out)
{
    const lab_value_t *x = &pos[0];
    if (npos == 2 && pos[1].kind != LAB_V_INT && pos[1].kind != LAB_V_BOOL &&
        pos[1].kind != LAB_V_NONE)
        return fail(ev, node, "'%s' object cannot be interpreted as an integer",
                    lab_vkind_name(pos[1].kind));
    bool digits = npos == 2 && pos[1].kind != LAB_V_NONE;
    if (x->kind == LAB_V_TENSOR) /* Tensor.__round__ is torch.round */
        return lab__eval_round_tensor(ev, node, x->t, digits ? pos[1].i : 0, out);
    if (!lab__eval_is_number(x))
        return fail(ev, node, "type %s doesn't define __round__ method", lab_vkind_name(x->kind));
    int64_t nd = digits ? pos[1].i : 0;
    memset(out, 0, sizeof(*out));
    if (x->kind != LAB_V_FLOAT) {
        /* an int rounds to an int: to tens, hundreds, ... for nd < 0 */
        out->kind = LAB_V_INT;
        out->i = x->i;
        if (nd >= 0)
            return DL_OK;
        if (nd < -18) {
            /* 10^19 and beyond: 0, or what no int64 holds */
            if (x->i > 5000000000000000000 || x->i < -5000000000000000000)
                return fail(ev, node, "round(): integer overflow (the shell's ints are 64-bit)");
            out->i = 0;
            return DL_OK;
        }
        int64_t p = 1;
        for (int64_t k = 0; k < -nd; k++)
            p *= 10;
        int64_t q = x->i / p, r = x->i % p;
        if (r < 0) {
            q--;
            r += p;
        }
        if (2 * r > p || (2 * r == p && (q & 1)))
            q++;
        if (__builtin_mul_overflow(q, p, &out->i))
            return fail(ev, node, "round(): integer overflow (the shell's ints are 64-bit)");
        return DL_OK;
    }
    if (!digits) {
        if (isnan(x->f))
            return fail(ev, node, "cannot convert float NaN to integer");
        if (isinf(x->f))
            return fail(ev, node, "cannot convert float infinity to integer");
        double r = nearbyint(x->f); /* the default mode: half to even */
        if (fabs(r) >= 9.2233720368547758e18)
            return fail(ev, node, "round(): %g does not fit in an int64", r);
        out->kind = LAB_V_INT;
        out->i = (int64_t)r;
        return DL_OK;
    }
    out->kind = LAB_V_FLOAT;
    if (!isfinite(x->f) || nd > 330) {
        out->f = x->f;
    } else if (nd >= 0) {
        int len = snprintf(NULL, 0, "%.*f", (int)nd, x->f);
        char *buf = malloc((size_t)len + 1);
        if (buf == NULL)
            return DL_ERR_NOMEM;
        snprintf(buf, (size_t)len + 1, "%.*f", (int)nd, x->f);
        out->f = strtod(buf, NULL);
        free(buf);
    } else {
        double p = pow(10.0, (double)-nd);
        out->f = nd < -308 ? 0.0 * x->f : nearbyint(x->f / p) * p;
    }
    return DL_OK;
}

/* list(x): a new list of x's items, a tensor's rows, a string's
 * characters. */
static dl_status_t py_list(lab_eval_t *ev, const json_t *node, const lab_value_t *x,
                           lab_value_t *out)
{
    int64_t n = lab__eval_seq_len(x);
    if (n < 0)
        return fail(ev, node, "'%s' object is not iterable", lab_vkind_name(x->kind));
    if (n > (int64_t)LAB_LIST_MAX)
        return fail(ev, node, "list too long (at most %u items)", LAB_LIST_MAX);
    dl_status_t st = lab_value_new_list(out, (size_t)n);
    if (st != DL_OK)
        return st;
    for (int64_t i = 0; i < n && st == DL_OK; i++) {
        lab_value_t *item = &out->items[i];
        st = lab__eval_seq_item(ev, node, x, i, item);
        if (st == DL_OK)
            out->n = (size_t)i + 1;
    }
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

dl_status_t lab__eval_list_of_range(lab_eval_t *ev, const json_t *node, const json_t *range,
                                    lab_value_t *out)
{
    int64_t r[3];
    dl_status_t st = lab__eval_range_args(ev, range, r);
    if (st != DL_OK)
        return st;
    /* how many numbers: ceil((stop - start) / step), in 128 bits */
    __int128 span = (__int128)r[1] - r[0];
    __int128 n = r[2] > 0 ? (span + r[2] - 1) / r[2] : (span + r[2] + 1) / r[2];
    if (n < 0)
        n = 0;
    if (n > (__int128)LAB_LIST_MAX)
        return fail(ev, node, "list too long (at most %u items)", LAB_LIST_MAX);
    if ((st = lab_value_new_list(out, (size_t)n)) != DL_OK)
        return st;
    for (int64_t i = 0; i < (int64_t)n; i++) {
        out->items[i].kind = LAB_V_INT;
        out->items[i].i = r[0] + i * r[2];
    }
    out->n = (size_t)n;
    return DL_OK;
}

/* reversed(x) of a list, a tuple, a range or a string: a new list of the
 * items (characters) from the last, where Python gives an iterator over
 * them; a loop and list() see the same items. */
static dl_status_t py_reversed(lab_eval_t *ev, const json_t *node, int npos, const lab_value_t *pos,
                               lab_value_t *out)
{
    if (npos != 1)
        return fail(ev, node, "reversed expected 1 argument, got %d", npos);
    const lab_value_t *x = &pos[0];
    if (x->kind == LAB_V_TENSOR)
        return fail(ev, node, "reversed() of a tensor is not supported here");
    if (x->kind != LAB_V_STR && (x->kind != LAB_V_LIST || lab__eval_is_pair(x)))
        return fail(ev, node, "'%s' object is not reversible", lab__eval_type_name(x));
    lab_value_t items = {0};
    dl_status_t st = py_list(ev, node, x, &items);
    if (st != DL_OK)
        return st;
    lab__eval_items_reverse(&items);
    items.tuple = false;
    *out = items;
    return DL_OK;
}

/* sorted(x, key=None, reverse=False): a new list, stable as Python's
 * (equal items keep their order, reversed or not): a merge sort of the
 * items' places, by their keys (key=) or by the items. */
static dl_status_t py_sorted(lab_eval_t *ev, const json_t *node, const lab_value_t *x,
                             const json_t *key, bool reverse, lab_value_t *out)
{
    lab_value_t items = {0};
    dl_status_t st = py_list(ev, node, x, &items);
    if (st != DL_OK)
        return st;
    size_t n = items.n;
    lab_value_t *keys = NULL;
    if ((st = lab__eval_keys(ev, key, items.items, n, &keys)) != DL_OK) {
        lab_value_clear(&items);
        return st;
    }
    const lab_value_t *by = keys != NULL ? keys : items.items;
    size_t *at = malloc((n > 0 ? n : 1) * sizeof(*at)),
           *tmp = malloc((n > 0 ? n : 1) * sizeof(*tmp));
    lab_value_t *sorted = malloc((n > 0 ? n : 1) * sizeof(*sorted));
    if (at == NULL || tmp == NULL || sorted == NULL)
        st = DL_ERR_NOMEM;
    for (size_t i = 0; st == DL_OK && i < n; i++)
        at[i] = i;
    for (size_t w = 1; w < n && st == DL_OK; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                /* the right one first only when it comes strictly before */
                bool right = false;
                if (st == DL_OK)
                    st = reverse
                             ? lab__eval_py_order(ev, node, "<", &by[at[i]], &by[at[j]], &right)
                             : lab__eval_py_order(ev, node, "<", &by[at[j]], &by[at[i]], &right);
                tmp[k++] = right ? at[j++] : at[i++];
            }
            while (i < mid)
                tmp[k++] = at[i++];
            while (j < hi)
                tmp[k++] = at[j++];
        }
        memcpy(at, tmp, n * sizeof(*tmp));
    }
    if (st == DL_OK) {
        for (size_t i = 0; i < n; i++)
            sorted[i] = items.items[at[i]];
        memcpy(items.items, sorted, n * sizeof(*sorted));
    }
    free(at);
    free(tmp);
    free(sorted);
    lab__eval_keys_free(keys, n);
    if (st != DL_OK) {
        lab_value_clear(&items);
        return st;
    }
    items.tuple = false;
    *out = items;
    return DL_OK;
}

dl_status_t lab__eval_py_extreme(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *pos, int npos, const json_t *key,
                                 lab_value_t *out)
{
    if (npos < 1)
        return fail(ev, node, "%s expected at least 1 argument, got 0", fn);
    lab_value_t items = {0};
    dl_status_t st =
        npos == 1 ? py_list(ev, node, &pos[0], &items) : lab_value_new_list(&items, (size_t)npos);
    for (int k = 0; npos != 1 && st == DL_OK && k < npos; k++)
        if ((st = lab_value_copy(&pos[k], dl_comm_allocator(ev->r->comm), &items.items[k])) ==
            DL_OK)
            items.n = (size_t)k + 1;
    if (st != DL_OK) {
        lab_value_clear(&items);
        return st;
    }
    if (npos < 1 || items.n == 0) {
        lab_value_clear(&items);
        return fail(ev, node, "%s() arg is an empty sequence", fn);
    }
    lab_value_t *keys = NULL;
    st = lab__eval_keys(ev, key, items.items, items.n, &keys);
    const lab_value_t *by = keys != NULL ? keys : items.items;
    const char *op = strcmp(fn, "max") == 0 ? ">" : "<";
    size_t best = 0;
    for (size_t i = 1; st == DL_OK && i < items.n; i++) {
        bool better = false;
        st = lab__eval_py_order(ev, node, op, &by[i], &by[best], &better);
        if (better)
            best = i;
    }
    lab__eval_keys_free(keys, items.n);
    if (st == DL_OK) {
        *out = items.items[best];
        memset(&items.items[best], 0, sizeof(items.items[best]));
    }
    lab_value_clear(&items);
    return st;
}

/* any(x) and all(x): Python's truth of each item, stopping at the first
 * that decides. */
static dl_status_t py_any_all(lab_eval_t *ev, const json_t *node, bool any, const lab_value_t *x,
                              lab_value_t *out)
{
    lab_value_t items = {0};
    dl_status_t st = py_list(ev, node, x, &items);
    if (st != DL_OK)
        return st;
    bool result = !any;
    for (size_t i = 0; i < items.n && st == DL_OK; i++) {
        bool yes = false;
        st = lab__eval_value_truth(ev, node, &items.items[i], &yes);
        if (st == DL_OK && yes == any) {
            result = any;
            break;
        }
    }
    lab_value_clear(&items);
    if (st != DL_OK)
        return st;
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_BOOL;
    out->i = result;
    return DL_OK;
}

/* type(x): its class as Python prints it, <class 'torch.Tensor'>. */
static dl_status_t py_type(lab_eval_t *ev, const json_t *node, int npos, const lab_value_t *pos,
                           lab_value_t *out)
{
    if (npos != 1)
        return fail(ev, node, "type() takes 1 argument here (%d given)", npos);
    return class_value(class_name(&pos[0]), out);
}

/* Whether x is an instance of the class cls names ("<class 'int'>"): its
 * own, or one it derives from as Python's does (bool from int, torch.Size
 * and t.max(dim=0)'s pair from tuple). */
static bool instance_of(const lab_value_t *x, const char *cls)
{
    char own[64];
    snprintf(own, sizeof(own), "<class '%s'>", class_name(x));
    return strcmp(own, cls) == 0 || (x->kind == LAB_V_BOOL && strcmp(cls, "<class 'int'>") == 0) ||
           ((lab__eval_is_size(x) || lab__eval_is_pair(x)) && strcmp(cls, "<class 'tuple'>") == 0);
}

/* isinstance(x, cls): cls a class (int, torch.Tensor, type(y)) or a tuple
 * of them. */
static dl_status_t py_isinstance(lab_eval_t *ev, const json_t *node, int npos,
                                 const lab_value_t *pos, lab_value_t *out)
{
    if (npos != 2)
        return fail(ev, node, "isinstance expected 2 arguments, got %d", npos);
    const lab_value_t *cls = &pos[1];
    bool many = cls->kind == LAB_V_LIST && lab__eval_is_tuple(cls);
    size_t n = many ? cls->n : 1;
    bool yes = false;
    for (size_t i = 0; i < n; i++) {
        const lab_value_t *c = many ? &cls->items[i] : cls;
        if (c->kind != LAB_V_STR || strcmp(c->name, LAB_TYPE) != 0 || c->s == NULL)
            return fail(ev, node,
                        "isinstance() arg 2 must be a type, a tuple of types, or a union (the "
                        "shell's are int, float, bool, str, list, tuple, dict, torch.Tensor)");
        yes = yes || instance_of(&pos[0], c->s);
    }
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_BOOL;
    out->i = yes;
    return DL_OK;
}

dl_status_t lab__eval_py_builtin(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *pos, int npos, const json_t *kw,
                                 lab_value_t *out)
{
    for (int k = 0; k < npos; k++)
        if (lab__eval_undefined(&pos[k]))
            return lab__eval_fail_undefined(ev, node, &pos[k]);
    const json_t *decimals = json_object_get(kw, "decimals");
    if (strcmp(fn, "round") == 0 && decimals != NULL && json_object_size(kw) == 1) {
        /* torch.round(t, decimals=2) */
        lab_value_t d = {0};
        dl_status_t st = lab_eval_expr(ev, decimals, &d);
        if (st == DL_OK && (npos != 1 || pos[0].kind != LAB_V_TENSOR || d.kind != LAB_V_INT))
            st = fail(ev, node, "round(input, *, decimals=0) takes a tensor and an int");
        if (st == DL_OK)
            st = lab__eval_round_tensor(ev, node, pos[0].t, d.i, out);
        lab_value_clear(&d);
        return st;
    }
    if (strcmp(fn, "sorted") == 0) {
        const json_t *rev = json_object_get(kw, "reverse"), *key = json_object_get(kw, "key");
        if (json_object_size(kw) != (rev != NULL ? 1u : 0u) + (key != NULL ? 1u : 0u))
            return fail(ev, node, "sorted() takes key= and reverse= only");
        if (npos != 1)
            return fail(ev, node, "sorted expected 1 argument, got %d", npos);
        bool reverse = false;
        if (rev != NULL) {
            lab_value_t r = {0};
            dl_status_t st = lab_eval_expr(ev, rev, &r);
            if (st == DL_OK)
                st = lab__eval_value_truth(ev, rev, &r, &reverse);
            lab_value_clear(&r);
            if (st != DL_OK)
                return st;
        }
        return py_sorted(ev, node, &pos[0], key, reverse, out);
    }
    if (json_object_size(kw) != 0)
        return fail(ev, node, "%s() takes no keyword arguments", fn);
    if (strcmp(fn, "isinstance") == 0)
        return py_isinstance(ev, node, npos, pos, out);
    if (strcmp(fn, "any") == 0 || strcmp(fn, "all") == 0) {
        if (npos != 1)
            return fail(ev, node, "%s() takes exactly one argument (%d given)", fn, npos);
        return py_any_all(ev, node, fn[1] == 'n', &pos[0], out);
    }
    if (strcmp(fn, "round") == 0) {
        if (npos < 1 || npos > 2)
            return fail(ev, node, "round() takes 1 or 2 arguments (%d given)", npos);
        return py_round(ev, node, pos, npos, out);
    }
    if (npos > 1)
        return fail(ev, node, "%s() takes at most 1 argument (%d given)", fn, npos);
    if (strcmp(fn, "bool") == 0) {
        /* bool(x): x's truth, as if reads it; bool() is False */
        bool truth = false;
        dl_status_t st = npos == 1 ? lab__eval_value_truth(ev, node, &pos[0], &truth) : DL_OK;
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_BOOL;
        out->i = truth;
        return st;
    }
    if (strcmp(fn, "repr") == 0 && npos != 1)
        return fail(ev, node, "repr() takes exactly one argument (%d given)", npos);
    if (strcmp(fn, "type") == 0)
        return py_type(ev, node, npos, pos, out);
    if (strcmp(fn, "reversed") == 0)
        return py_reversed(ev, node, npos, pos, out);
    if (strcmp(fn, "list") == 0 || strcmp(fn, "tuple") == 0) {
        dl_status_t st = npos == 0 ? lab_value_new_list(out, 0) : py_list(ev, node, &pos[0], out);
        if (st == DL_OK)
            out->tuple = fn[0] == 't';
        return st;
    }
    /* str, repr */
    char *text = NULL;
    if (npos == 1) {
        dl_status_t st = lab__eval_format(ev, node, &pos[0], fn[0] == 'r', &text);
        if (st != DL_OK)
            return st;
    } else if ((text = strdup("")) == NULL) {
        return DL_ERR_NOMEM;
    }
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_STR;
    out->s = text;
    return DL_OK;
}

dl_status_t lab__eval_py_numbers(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *pos, int npos, const json_t *kw, bool *done,
                                 lab_value_t *out)
{
    *done = false;
    if (npos < 1 || !lab__eval_is_number(&pos[0]))
        return DL_OK;
    if (json_object_size(kw) != 0) {
        *done = true;
        return fail(ev, node, "%s() of numbers takes no keyword arguments", fn);
    }
    if (strcmp(fn, "abs") == 0 && npos != 1) {
        *done = true;
        return fail(ev, node, "abs() takes exactly one argument (%d given)", npos);
    }
    if ((strcmp(fn, "max") == 0 || strcmp(fn, "min") == 0) && npos == 1) {
        *done = true;
        return fail(ev, node, "'%s' object is not iterable", lab_vkind_name(pos[0].kind));
    }
    if (strcmp(fn, "abs") == 0 && npos == 1) {
        *done = true;
        memset(out, 0, sizeof(*out));
        if (pos[0].kind == LAB_V_FLOAT) {
            out->kind = LAB_V_FLOAT;
            out->f = fabs(pos[0].f);
            return DL_OK;
        }
        if (pos[0].i == INT64_MIN)
            return fail(ev, node, "abs(): integer overflow (the shell's ints are 64-bit)");
        out->kind = LAB_V_INT;
        out->i = pos[0].i < 0 ? -pos[0].i : pos[0].i;
        return DL_OK;
    }
    if ((strcmp(fn, "max") == 0 || strcmp(fn, "min") == 0) && npos >= 2) {
        /* max(a, b, ...) is max([a, b, ...]) */
        *done = true;
        lab_value_t list = {.kind = LAB_V_LIST, .items = (lab_value_t *)pos, .n = (size_t)npos};
        return lab__eval_py_fold(ev, node, fn, &list, out);
    }
    return DL_OK;
}
