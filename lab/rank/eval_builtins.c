/* Python's builtins on plain values that tutorials' code calls beside
 * torch's: str(x), round(x[, n]), list(x) (list(range(n)) among them),
 * and abs, max and min of numbers, where the shell's abs, max and min
 * are otherwise torch's, of a tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

bool lab__eval_is_py_builtin(const char *fn)
{
    return strcmp(fn, "str") == 0 || strcmp(fn, "round") == 0 || strcmp(fn, "list") == 0;
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
    int64_t n = x->kind == LAB_V_STR ? (int64_t)strlen(x->s) : lab__eval_seq_len(x);
    if (n < 0)
        return fail(ev, node, "'%s' object is not iterable", lab_vkind_name(x->kind));
    if (n > (int64_t)LAB_LIST_MAX)
        return fail(ev, node, "list too long (at most %u items)", LAB_LIST_MAX);
    dl_status_t st = lab_value_new_list(out, (size_t)n);
    if (st != DL_OK)
        return st;
    for (int64_t i = 0; i < n && st == DL_OK; i++) {
        lab_value_t *item = &out->items[i];
        if (x->kind == LAB_V_STR) {
            item->kind = LAB_V_STR;
            if ((item->s = strndup(x->s + i, 1)) == NULL)
                st = DL_ERR_NOMEM;
        } else {
            st = lab__eval_seq_item(ev, node, x, i, item);
        }
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

dl_status_t lab__eval_py_builtin(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *pos, int npos, const json_t *kw,
                                 lab_value_t *out)
{
    for (int k = 0; k < npos; k++)
        if (lab__eval_undefined(&pos[k]))
            return fail(ev, node, "'%s' is not defined", pos[k].name);
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
    if (json_object_size(kw) != 0)
        return fail(ev, node, "%s() takes no keyword arguments", fn);
    if (strcmp(fn, "round") == 0) {
        if (npos < 1 || npos > 2)
            return fail(ev, node, "round() takes 1 or 2 arguments (%d given)", npos);
        return py_round(ev, node, pos, npos, out);
    }
    if (npos > 1)
        return fail(ev, node, "%s() takes at most 1 argument (%d given)", fn, npos);
    if (strcmp(fn, "list") == 0) {
        if (npos == 0)
            return lab_value_new_list(out, 0);
        return py_list(ev, node, &pos[0], out);
    }
    /* str */
    char *text = NULL;
    if (npos == 1) {
        dl_status_t st = lab__eval_format(ev, node, &pos[0], false, &text);
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
