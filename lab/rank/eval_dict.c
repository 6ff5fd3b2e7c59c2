/* Python's dict: {k: v} displays and comprehensions, dict(...), d[k] read
 * and written, len, in, iteration over the keys, ==, and the methods keys,
 * values, items, get, pop, popitem, update, setdefault, copy and clear, as the
 * object collectives' examples and training scripts use them
 * ({"loss": loss}, d["loss"].append(x), for k, v in d.items()).
 *
 * A dict keeps its entries in the order their keys were first set, each a
 * (key, value) tuple in items. Keys are numbers, strings, None and tuples
 * of them, equal as Python's are (1, 1.0 and True are one key). A dict is
 * a value, as a list is here: e = d copies it; what is written into d[k]
 * (d[k] += 1, dist.all_reduce(d["grad"])) is written into the dict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* The most entries a dict holds: a key is found by a walk over the
 * entries' hashes (65536 keys set one by one take a second or two). */
#define DICT_MAX (1u << 16)

static lab_value_t *key_of(const lab_value_t *d, size_t i)
{
    return &d->items[i].items[0];
}

static lab_value_t *value_of(const lab_value_t *d, size_t i)
{
    return &d->items[i].items[1];
}

dl_status_t lab__eval_new_dict(lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_DICT;
    out->items = calloc(1, sizeof(*out->items));
    return out->items != NULL ? DL_OK : DL_ERR_NOMEM;
}

/* The first part of k that cannot be a key (NULL: none). */
static const lab_value_t *unhashable(const lab_value_t *k)
{
    switch (k->kind) {
    case LAB_V_NONE:
    case LAB_V_INT:
    case LAB_V_FLOAT:
    case LAB_V_BOOL:
    case LAB_V_STR:
        return NULL;
    case LAB_V_LIST:
        if (!lab__eval_is_tuple(k))
            return k;
        for (size_t i = 0; i < k->n; i++)
            if (unhashable(&k->items[i]) != NULL)
                return unhashable(&k->items[i]);
        return NULL;
    default:
        return k;
    }
}

/* A hash of a key (one that can be one), equal for keys Python takes as
 * equal: 1, 1.0 and True hash alike. An entry keeps its key's in the
 * pair's i, so that a walk compares numbers before values. */
int64_t lab__eval_key_hash(const lab_value_t *k)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    const unsigned char *p = NULL;
    size_t n = 0;
    double x;
    int64_t whole;
    switch (k->kind) {
    case LAB_V_INT:
    case LAB_V_BOOL:
        whole = k->i;
        p = (const unsigned char *)&whole;
        n = sizeof(whole);
        break;
    case LAB_V_FLOAT:
        x = k->f;
        if (x >= -0x1p63 && x < 0x1p63 && x == (double)(int64_t)x) {
            whole = (int64_t)x;
            p = (const unsigned char *)&whole;
            n = sizeof(whole);
        } else {
            if (x == 0)
                x = 0; /* -0.0 */
            p = (const unsigned char *)&x;
            n = sizeof(x);
        }
        break;
    case LAB_V_STR:
        p = (const unsigned char *)(k->s != NULL ? k->s : "");
        n = strlen((const char *)p);
        break;
    case LAB_V_LIST: /* a tuple: of its items' */
        for (size_t i = 0; i < k->n; i++)
            h = (h ^ (uint64_t)lab__eval_key_hash(&k->items[i])) * 1099511628211ull;
        return (int64_t)(h ^ 0x7475706c65ull);
    default: /* None */
        return 0x4e6f6e65;
    }
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return (int64_t)h;
}

static dl_status_t check_key(lab_eval_t *ev, const json_t *node, const lab_value_t *k)
{
    const lab_value_t *bad = unhashable(k);
    if (bad == NULL)
        return DL_OK;
    if (lab__eval_undefined(bad))
        return lab__eval_fail_undefined(ev, node, bad);
    if (bad->kind == LAB_V_LIST || bad->kind == LAB_V_DICT)
        return fail(ev, node, "unhashable type: '%s'", lab__eval_type_name(bad));
    return fail(ev, node,
                "%s as a dict key is not supported here: keys are numbers, strings, None and "
                "tuples of them",
                lab_vkind_a(bad->kind));
}

bool lab__eval_dict_seal(lab_value_t *d)
{
    for (size_t i = 0; i < d->n; i++) {
        lab_value_t *pair = &d->items[i];
        if (pair->kind != LAB_V_LIST || pair->n != 2 || unhashable(&pair->items[0]) != NULL)
            return false;
        pair->tuple = true;
        pair->i = lab__eval_key_hash(&pair->items[0]);
    }
    return true;
}

/* The entry of d whose key equals k (-1: none); k is checked first. */
static dl_status_t find(lab_eval_t *ev, const json_t *node, const lab_value_t *d,
                        const lab_value_t *k, int64_t *at)
{
    *at = -1;
    dl_status_t st = check_key(ev, node, k);
    int64_t h = st == DL_OK ? lab__eval_key_hash(k) : 0;
    for (size_t i = 0; st == DL_OK && i < d->n; i++) {
        bool eq = false;
        if (d->items[i].i != h)
            continue;
        if ((st = lab__eval_py_equal(ev, node, key_of(d, i), k, &eq)) == DL_OK && eq) {
            *at = (int64_t)i;
            break;
        }
    }
    return st;
}

static dl_status_t key_error(lab_eval_t *ev, const json_t *node, const lab_value_t *k)
{
    char *text = NULL;
    dl_status_t st = lab__eval_format(ev, node, k, true, &text);
    if (st == DL_OK)
        st = fail(ev, node, "KeyError: %s", text);
    free(text);
    return st;
}

/* Whether d may take `added` new keys: at most DICT_MAX in all, and none
 * where a running function's parameter shares d's entries (eval_func.c). */
static dl_status_t room_for(lab_eval_t *ev, const json_t *node, const lab_value_t *d, size_t added)
{
    if (added > 0 && d->n + added > DICT_MAX)
        return fail(ev, node, "dict too long (at most %u items)", DICT_MAX);
    if (added > 0 && (d->borrowed || lab__eval_lent(ev, d->items)))
        return fail(ev, node,
                    "a new key in a dict a running function was given is not supported here: "
                    "set the keys it has, or build a new dict and return it");
    return DL_OK;
}

dl_status_t lab__eval_dict_put(lab_eval_t *ev, const json_t *node, lab_value_t *d, lab_value_t *k,
                               lab_value_t *v)
{
    int64_t at;
    dl_status_t st = find(ev, node, d, k, &at);
    if (st == DL_OK && at >= 0) {
        /* the key first set stays, as in Python ({1: 'a', 1.0: 'b'} is {1: 'b'}) */
        lab_value_clear(value_of(d, (size_t)at));
        *value_of(d, (size_t)at) = *v;
        memset(v, 0, sizeof(*v));
    } else if (st == DL_OK && (st = room_for(ev, node, d, 1)) == DL_OK) {
        lab_value_t pair;
        lab_value_t *items = realloc(d->items, (d->n + 1) * sizeof(*items));
        if (items == NULL || lab_value_new_list(&pair, 2) != DL_OK) {
            if (items != NULL)
                d->items = items;
            st = DL_ERR_NOMEM;
        } else {
            d->items = items;
            pair.tuple = true;
            pair.i = lab__eval_key_hash(k);
            pair.items[0] = *k;
            pair.items[1] = *v;
            pair.n = 2;
            memset(k, 0, sizeof(*k));
            memset(v, 0, sizeof(*v));
            d->items[d->n++] = pair;
        }
    }
    lab_value_clear(k);
    lab_value_clear(v);
    return st;
}

dl_status_t lab__eval_dict_entry(lab_eval_t *ev, const json_t *node, lab_value_t *d,
                                 const lab_value_t *k, lab_value_t **v_p)
{
    int64_t at;
    dl_status_t st = find(ev, node, d, k, &at);
    *v_p = st == DL_OK && at >= 0 ? value_of(d, (size_t)at) : NULL;
    return st;
}

dl_status_t lab__eval_dict_at(lab_eval_t *ev, const json_t *node, lab_value_t *d,
                              const lab_value_t *k, lab_value_t **v_p)
{
    dl_status_t st = lab__eval_dict_entry(ev, node, d, k, v_p);
    return st == DL_OK && *v_p == NULL ? key_error(ev, node, k) : st;
}

dl_status_t lab__eval_dict_get(lab_eval_t *ev, const json_t *node, const lab_value_t *d,
                               const lab_value_t *k, lab_value_t *out)
{
    lab_value_t *v;
    dl_status_t st = lab__eval_dict_at(ev, node, (lab_value_t *)d, k, &v);
    return st == DL_OK ? lab_value_copy(v, dl_comm_allocator(ev->r->comm), out) : st;
}

dl_status_t lab__eval_dict_has(lab_eval_t *ev, const json_t *node, const lab_value_t *d,
                               const lab_value_t *k, bool *yes)
{
    int64_t at;
    dl_status_t st = find(ev, node, d, k, &at);
    *yes = at >= 0;
    return st;
}

dl_status_t lab__eval_dict_equal(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                                 const lab_value_t *b, bool *eq)
{
    /* the same keys, each with an equal value, in any order */
    *eq = a->n == b->n;
    for (size_t i = 0; *eq && i < a->n; i++) {
        int64_t at;
        dl_status_t st = find(ev, node, b, key_of(a, i), &at);
        if (st != DL_OK)
            return st;
        *eq = at >= 0;
        if (*eq && (st = lab__eval_values_equal(ev, node, value_of(a, i), value_of(b, (size_t)at),
                                                eq)) != DL_OK)
            return st;
    }
    return DL_OK;
}

dl_status_t lab__eval_dict(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    const json_t *kv = json_object_get(node, "dict");
    dl_status_t st = lab__eval_new_dict(out);
    for (size_t i = 0; st == DL_OK && i + 1 < json_array_size(kv); i += 2) {
        lab_value_t k = {0}, v = {0};
        const json_t *vnode = json_array_get(kv, i + 1);
        if ((st = lab_eval_expr(ev, json_array_get(kv, i), &k)) == DL_OK &&
            (st = lab_eval_expr(ev, vnode, &v)) == DL_OK && lab__eval_undefined(&v))
            st = lab__eval_fail_undefined(ev, vnode, &v);
        if (st == DL_OK)
            st = lab__eval_dict_put(ev, json_array_get(kv, i), out, &k, &v);
        lab_value_clear(&k);
        lab_value_clear(&v);
    }
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

/* Sets in d the (key, value) pairs of from: another dict, or a list or
 * tuple of pairs (zip(keys, values), [("a", 1)]), as dict() and
 * d.update() take them. */
static dl_status_t put_all(lab_eval_t *ev, const json_t *node, lab_value_t *d,
                           const lab_value_t *from, const char *fn)
{
    dl_allocator_t *alloc = dl_comm_allocator(ev->r->comm);
    if (from->kind != LAB_V_DICT && from->kind != LAB_V_LIST)
        return fail(ev, node, "'%s' object is not iterable", lab__eval_type_name(from));
    for (size_t i = 0; i < from->n; i++) {
        const lab_value_t *pair = &from->items[i];
        if (from->kind == LAB_V_LIST && (pair->kind != LAB_V_LIST || pair->n != 2))
            return fail(ev, node, "%s(): item #%zu of the sequence is %s, not a (key, value) pair",
                        fn, i,
                        pair->kind == LAB_V_LIST ? "of another length" : lab_vkind_a(pair->kind));
        lab_value_t k = {0}, v = {0};
        dl_status_t st = lab_value_copy(&pair->items[0], alloc, &k);
        if (st == DL_OK && (st = lab_value_copy(&pair->items[1], alloc, &v)) != DL_OK)
            lab_value_clear(&k);
        if (st == DL_OK)
            st = lab__eval_dict_put(ev, node, d, &k, &v);
        if (st != DL_OK)
            return st;
    }
    return DL_OK;
}

/* name=value keyword arguments set as string keys. */
static dl_status_t put_kwargs(lab_eval_t *ev, const json_t *kw, lab_value_t *d)
{
    const char *key;
    json_t *vnode;
    json_object_foreach((json_t *)kw, key, vnode)
    {
        lab_value_t k = {.kind = LAB_V_STR}, v = {0};
        dl_status_t st = lab_eval_expr(ev, vnode, &v);
        if (st == DL_OK && lab__eval_undefined(&v))
            st = lab__eval_fail_undefined(ev, vnode, &v);
        if (st == DL_OK && (k.s = strdup(key)) == NULL)
            st = DL_ERR_NOMEM;
        if (st == DL_OK)
            st = lab__eval_dict_put(ev, vnode, d, &k, &v);
        lab_value_clear(&v);
        if (st != DL_OK)
            return st;
    }
    return DL_OK;
}

dl_status_t lab__eval_dict_call(lab_eval_t *ev, const json_t *node, const lab_value_t *pos,
                                int npos, const json_t *kw, lab_value_t *out)
{
    if (npos > 1)
        return fail(ev, node, "dict expected at most 1 argument, got %d", npos);
    dl_status_t st = lab__eval_new_dict(out);
    if (st == DL_OK && npos == 1)
        st = put_all(ev, node, out, &pos[0], "dict");
    if (st == DL_OK)
        st = put_kwargs(ev, kw, out);
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

dl_status_t lab__eval_dict_key(lab_eval_t *ev, const lab_value_t *d, int64_t i, lab_value_t *out)
{
    return lab_value_copy(key_of(d, (size_t)i), dl_comm_allocator(ev->r->comm), out);
}

/* d.keys(), d.values(), d.items(): a list of copies, marked so that it
 * prints as Python's view does (dict_keys(['a'])). */
static dl_status_t view(lab_eval_t *ev, const lab_value_t *d, const char *fn, lab_value_t *out)
{
    dl_status_t st = lab_value_new_list(out, d->n);
    snprintf(out->name, sizeof(out->name), "dict_%s", fn);
    dl_allocator_t *alloc = dl_comm_allocator(ev->r->comm);
    for (size_t i = 0; st == DL_OK && i < d->n; i++) {
        const lab_value_t *from = fn[0] == 'k'   ? key_of(d, i)
                                  : fn[0] == 'v' ? value_of(d, i)
                                                 : &d->items[i];
        if ((st = lab_value_copy(from, alloc, &out->items[i])) == DL_OK)
            out->n = i + 1;
    }
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

static dl_status_t nargs_fail(lab_eval_t *ev, const json_t *node, const char *fn, int min, int max,
                              int n)
{
    if (min == max)
        return fail(ev, node, "%s() takes %s (%d given)", fn,
                    min == 0 ? "no arguments" : "exactly one argument", n);
    return n < min ? fail(ev, node, "%s expected at least %d argument%s, got %d", fn, min,
                          min == 1 ? "" : "s", n)
                   : fail(ev, node, "%s expected at most %d argument%s, got %d", fn, max,
                          max == 1 ? "" : "s", n);
}

static const struct {
    const char *name;
    int min, max;
    bool changes;
} methods[] = {
    {"keys", 0, 0, false},   {"values", 0, 0, false},        {"items", 0, 0, false},
    {"get", 1, 2, false},    {"copy", 0, 0, false},          {"pop", 1, 2, true},
    {"update", 0, 1, true},  {"setdefault", 1, 2, true},     {"clear", 0, 0, true},
    {"popitem", 0, 0, true}, {LAB_EVAL_DELITEM, 1, 1, true}, /* del d[k] */
};

static int method_of(const char *fn)
{
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strcmp(fn, methods[i].name) == 0)
            return (int)i;
    return -1;
}

bool lab__eval_is_dict_method(const char *fn)
{
    return method_of(fn) >= 0;
}

bool lab__eval_dict_method_changes(const char *fn)
{
    int m = method_of(fn);
    return m >= 0 && methods[m].changes;
}

dl_status_t lab__eval_dict_method(lab_eval_t *ev, const json_t *node, const char *fn,
                                  lab_value_t *d, lab_value_t *arg, int nargs, lab_value_t *out)
{
    int m = method_of(fn);
    const json_t *kw = json_object_get(node, "kwargs");
    memset(out, 0, sizeof(*out));
    if (m < 0)
        return fail(ev, node, "'dict' object has no attribute '%s'", fn);
    if (json_object_size(kw) != 0 && strcmp(fn, "update") != 0)
        return fail(ev, node, "%s() takes no keyword arguments", fn);
    if (nargs < methods[m].min || nargs > methods[m].max)
        return nargs_fail(ev, node, fn, methods[m].min, methods[m].max, nargs);
    if (fn[0] == 'k' || fn[0] == 'v' || fn[0] == 'i')
        return view(ev, d, fn, out);
    if (strcmp(fn, "copy") == 0)
        return lab_value_copy(d, dl_comm_allocator(ev->r->comm), out);
    if (strcmp(fn, "clear") == 0) {
        lab_value_t empty;
        if (lab__eval_new_dict(&empty) != DL_OK)
            return DL_ERR_NOMEM;
        empty.binding = d->binding;
        lab_value_clear(d);
        *d = empty;
        return DL_OK;
    }
    if (strcmp(fn, "update") == 0) {
        /* The new items gathered and checked first, in a dict of their
         * own, so that a failure changes nothing; then set in d, whose
         * other values stay the tensors they are (a receive or a loop
         * may be writing into one). */
        lab_value_t more;
        dl_status_t st = lab__eval_new_dict(&more);
        if (st == DL_OK && nargs == 1)
            st = put_all(ev, node, &more, &arg[0], "update");
        if (st == DL_OK)
            st = put_kwargs(ev, kw, &more);
        size_t added = 0;
        for (size_t i = 0; st == DL_OK && i < more.n; i++) {
            int64_t at;
            if ((st = find(ev, node, d, key_of(&more, i), &at)) == DL_OK && at < 0)
                added++;
        }
        if (st == DL_OK)
            st = room_for(ev, node, d, added);
        for (size_t i = 0; st == DL_OK && i < more.n; i++)
            st = lab__eval_dict_put(ev, node, d, key_of(&more, i), value_of(&more, i));
        lab_value_clear(&more);
        return st;
    }
    if (strcmp(fn, "popitem") == 0) {
        /* the last (key, value) pair set, taken out */
        if (d->n == 0)
            return fail(ev, node, "KeyError: 'popitem(): dictionary is empty'");
        *out = d->items[--d->n];
        out->i = 0; /* the key's hash, kept by the dict only */
        return DL_OK;
    }
    int64_t at;
    dl_status_t st = find(ev, node, d, &arg[0], &at);
    if (st != DL_OK)
        return st;
    if (strcmp(fn, "get") == 0) {
        if (at >= 0)
            return lab_value_copy(value_of(d, (size_t)at), dl_comm_allocator(ev->r->comm), out);
        if (nargs == 2) {
            *out = arg[1];
            memset(&arg[1], 0, sizeof(arg[1]));
        }
        return DL_OK;
    }
    if (strcmp(fn, "pop") == 0 || strcmp(fn, LAB_EVAL_DELITEM) == 0) {
        if (at < 0 && nargs == 1)
            return key_error(ev, node, &arg[0]);
        if (at < 0) {
            *out = arg[1];
            memset(&arg[1], 0, sizeof(arg[1]));
            return DL_OK;
        }
        lab_value_t *pair = &d->items[at];
        *out = pair->items[1];
        memset(&pair->items[1], 0, sizeof(pair->items[1]));
        lab_value_clear(pair);
        memmove(pair, pair + 1, (d->n - (size_t)at - 1) * sizeof(*pair));
        d->n--;
        return DL_OK;
    }
    /* setdefault */
    if (at < 0) {
        lab_value_t k, v = {0};
        if ((st = lab_value_copy(&arg[0], dl_comm_allocator(ev->r->comm), &k)) != DL_OK)
            return st;
        if (nargs == 2 &&
            (st = lab_value_copy(&arg[1], dl_comm_allocator(ev->r->comm), &v)) != DL_OK) {
            lab_value_clear(&k);
            return st;
        }
        if ((st = lab__eval_dict_put(ev, node, d, &k, &v)) != DL_OK)
            return st;
        at = (int64_t)d->n - 1;
    }
    return lab_value_copy(value_of(d, (size_t)at), dl_comm_allocator(ev->r->comm), out);
}
