/* Python's list methods: l.append(x), l.extend(items), l.insert(i, x),
 * l.pop([i]), l.remove(x), l.clear(), l.sort(reverse=False) (t.sort() of a
 * tensor is torch's, eval_order.c), l.reverse(),
 * which change the list variable or a
 * list inside it (l[i].append(x), d["loss"].append(x)) in place and report
 * the variable, as an assignment to it is reported, and l.index(x),
 * l.count(x), l.copy(), which read any list or tuple. A dict's methods
 * (eval_dict.c) are found the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

static const struct {
    const char *name;
    int min, max; /* positional arguments */
    bool changes;
} methods[] = {
    {"append", 1, 1, true},          {"extend", 1, 1, true},
    {"insert", 2, 2, true},          {"pop", 0, 1, true},
    {"remove", 1, 1, true},          {"clear", 0, 0, true},
    {"index", 1, 1, false},          {"count", 1, 1, false},
    {"copy", 0, 0, false},           {"sort", 0, 0, true},
    {"reverse", 0, 0, true},         {LAB_EVAL_DELITEM, 1, 1, true}, /* del l[i] */
    {LAB_EVAL_SETSLICE, 2, 2, true},                                 /* l[i:j] = x */
    {LAB_EVAL_DELSLICE, 1, 1, true},                                 /* del l[i:j] */
};

static int method_of(const char *fn)
{
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strcmp(fn, methods[i].name) == 0)
            return (int)i;
    return -1;
}

bool lab__eval_is_list_method(const char *fn)
{
    return method_of(fn) >= 0 || (lab__eval_is_dict_method(fn) && strcmp(fn, "values") != 0);
}

bool lab__eval_is_pair(const lab_value_t *v)
{
    return v->kind == LAB_V_LIST && v->n == 2 && v->name[0] != '\0' && !lab__eval_is_size(v) &&
           strncmp(v->name, "dict_", 5) != 0;
}

/* Whether fn changes what it is called on, a list or a dict. */
static bool changes(const char *fn)
{
    int m = method_of(fn);
    return (m >= 0 && methods[m].changes) || lab__eval_dict_method_changes(fn);
}

const char *lab__eval_type_name(const lab_value_t *v)
{
    if (v->kind == LAB_V_TENSOR)
        return "Tensor";
    if (v->kind == LAB_V_NONE)
        return "NoneType";
    if (lab__eval_is_size(v))
        return "torch.Size";
    if (v->kind == LAB_V_LIST && strncmp(v->name, "dict_", 5) == 0)
        return v->name; /* d.keys(): dict_keys */
    return v->kind == LAB_V_LIST && v->tuple ? "tuple" : lab_vkind_name(v->kind);
}

void lab__eval_items_reverse(lab_value_t *l)
{
    for (size_t i = 0, j = l->n; i + 1 < j; i++, j--) {
        lab_value_t tmp = l->items[i];
        l->items[i] = l->items[j - 1];
        l->items[j - 1] = tmp;
    }
}

/* Room for add more items in l. */
static dl_status_t grow(lab_eval_t *ev, const json_t *node, lab_value_t *l, size_t add)
{
    if (add > LAB_LIST_MAX || l->n + add > LAB_LIST_MAX)
        return fail(ev, node, "list too long (at most %u items)", LAB_LIST_MAX);
    lab_value_t *items = realloc(l->items, (l->n + add) * sizeof(*items) + sizeof(*items));
    if (items == NULL)
        return DL_ERR_NOMEM;
    l->items = items;
    return DL_OK;
}

/* The position of the first item of l equal to x (-1: none), and how
 * many are (the first only, when count is NULL). */
static dl_status_t find(lab_eval_t *ev, const json_t *node, const lab_value_t *l,
                        const lab_value_t *x, int64_t *at, int64_t *count)
{
    *at = -1;
    int64_t seen = 0;
    for (size_t i = 0; i < l->n && (count != NULL || *at < 0); i++) {
        bool eq = false;
        dl_status_t st = lab__eval_values_equal(ev, node, &l->items[i], x, &eq);
        if (st != DL_OK)
            return st;
        if (eq && *at < 0)
            *at = (int64_t)i;
        seen += eq;
    }
    if (count != NULL)
        *count = seen;
    return DL_OK;
}

/* The first index, step and length of the slice sl (a tuple (start, stop,
 * step), as lab__eval_slice_tuple makes it) over l's items. */
static dl_status_t slice_in(lab_eval_t *ev, const json_t *node, const lab_value_t *l,
                            const lab_value_t *sl, int64_t *start, int64_t *step, int64_t *count)
{
    int64_t part[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; k++) {
        const lab_value_t *v = &sl->items[k];
        if (v->kind == LAB_V_NONE)
            continue;
        if (v->kind != LAB_V_INT && v->kind != LAB_V_BOOL)
            return fail(ev, node,
                        "slice indices must be integers or None or have an __index__ method");
        part[k] = v->i;
        given[k] = true;
    }
    if (part[2] == 0)
        return fail(ev, node, "slice step cannot be zero");
    lab__eval_slice_indices((int64_t)l->n, given[0] ? &part[0] : NULL, given[1] ? &part[1] : NULL,
                            &part[2], start, count);
    *step = part[2];
    return DL_OK;
}

/* l[i:j] = x: the items the slice names replaced by x's (a step of 1 may
 * change the list's length, another step takes as many as it names);
 * x == NULL: del l[i:j], which takes them out. fixed: l is a list a
 * running function shares, whose length must stay. */
static dl_status_t change_slice(lab_eval_t *ev, const json_t *node, lab_value_t *l,
                                const lab_value_t *sl, lab_value_t *x, bool fixed)
{
    int64_t start = 0, step = 1, count = 0;
    dl_status_t st = slice_in(ev, node, l, sl, &start, &step, &count);
    if (st != DL_OK)
        return st;
    size_t sz = sizeof(l->items[0]), n = l->n;
    if (x == NULL) {
        if (count == 0)
            return DL_OK;
        if (step < 0) { /* the same items, walked upwards */
            start += (count - 1) * step;
            step = -step;
        }
        size_t to = (size_t)start;
        for (size_t i = (size_t)start; i < n; i++) {
            size_t off = i - (size_t)start; /* no start + count * step: a huge step passes n */
            bool named = off % (size_t)step == 0 && off / (size_t)step < (size_t)count;
            if (named)
                lab_value_clear(&l->items[i]);
            else
                l->items[to++] = l->items[i];
        }
        l->n = to;
        return DL_OK;
    }
    if (x->kind != LAB_V_LIST && x->kind != LAB_V_STR && x->kind != LAB_V_DICT &&
        x->kind != LAB_V_TENSOR)
        return fail(ev, node,
                    step == 1 ? "can only assign an iterable"
                              : "must assign iterable to extended slice");
    /* the new items made first, so that a failure leaves l as it was */
    lab_value_t more = {0};
    if ((st = lab__eval_py_builtin(ev, node, "list", x, 1, NULL, &more)) != DL_OK)
        return st;
    size_t m = more.n;
    if (step != 1 && (int64_t)m != count) {
        st = fail(ev, node, "attempt to assign sequence of size %zu to extended slice of size %lld",
                  m, (long long)count);
    } else if (fixed && (int64_t)m != count) {
        st = fail(ev, node,
                  "a slice assignment that changes the length of a list a running function was "
                  "given is not supported here: build a new one and return it");
    } else if (step != 1) {
        for (size_t k = 0; k < m; k++) {
            lab_value_t *item = &l->items[start + (int64_t)k * step];
            lab_value_clear(item);
            *item = more.items[k];
        }
        more.n = 0;
    } else if (m <= (size_t)count || (st = grow(ev, node, l, m - (size_t)count)) == DL_OK) {
        for (int64_t k = 0; k < count; k++)
            lab_value_clear(&l->items[start + k]);
        memmove(&l->items[(size_t)start + m], &l->items[start + count],
                (n - (size_t)(start + count)) * sz);
        memcpy(&l->items[start], more.items, m * sz);
        l->n = n - (size_t)count + m;
        more.n = 0;
    }
    lab_value_clear(&more);
    return st;
}

/* What changes l, the list variable named name: its items then hold what
 * the arguments in arg gave (taken over, so *arg is left empty). */
static dl_status_t change(lab_eval_t *ev, const json_t *node, int m, lab_value_t *l,
                          lab_value_t *arg, int nargs, lab_value_t *out)
{
    const char *fn = methods[m].name;
    dl_status_t st = DL_OK;
    if (strcmp(fn, "append") == 0) {
        if ((st = grow(ev, node, l, 1)) == DL_OK) {
            l->items[l->n++] = arg[0];
            memset(&arg[0], 0, sizeof(arg[0]));
        }
    } else if (strcmp(fn, "extend") == 0) {
        /* the new items made first, so that a failure leaves l as it was */
        lab_value_t more = {0};
        if ((st = lab__eval_py_builtin(ev, node, "list", &arg[0], 1, NULL, &more)) != DL_OK)
            return st;
        if ((st = grow(ev, node, l, more.n)) == DL_OK) {
            memcpy(&l->items[l->n], more.items, more.n * sizeof(*more.items));
            l->n += more.n;
            more.n = 0;
        }
        lab_value_clear(&more);
    } else if (strcmp(fn, "insert") == 0) {
        if (arg[0].kind != LAB_V_INT)
            return fail(ev, node, "'%s' object cannot be interpreted as an integer",
                        lab__eval_type_name(&arg[0]));
        /* Python clamps the position to the list */
        int64_t n = (int64_t)l->n, i = arg[0].i < 0 ? arg[0].i + n : arg[0].i;
        i = i < 0 ? 0 : i > n ? n : i;
        if ((st = grow(ev, node, l, 1)) != DL_OK)
            return st;
        memmove(&l->items[i + 1], &l->items[i], (size_t)(n - i) * sizeof(l->items[0]));
        l->items[i] = arg[1];
        memset(&arg[1], 0, sizeof(arg[1]));
        l->n++;
    } else if (strcmp(fn, LAB_EVAL_DELITEM) == 0) {
        if (arg[0].kind != LAB_V_INT && arg[0].kind != LAB_V_BOOL)
            return fail(ev, node, "list indices must be integers or slices, not %s",
                        lab__eval_type_name(&arg[0]));
        int64_t n = (int64_t)l->n, i = arg[0].i < 0 ? arg[0].i + n : arg[0].i;
        if (i < 0 || i >= n)
            return fail(ev, node, "list assignment index out of range");
        *out = l->items[i];
        memmove(&l->items[i], &l->items[i + 1], (size_t)(n - i - 1) * sizeof(l->items[0]));
        l->n--;
    } else if (strcmp(fn, "pop") == 0) {
        if (nargs == 1 && arg[0].kind != LAB_V_INT)
            return fail(ev, node, "'%s' object cannot be interpreted as an integer",
                        lab__eval_type_name(&arg[0]));
        int64_t n = (int64_t)l->n, i = nargs == 1 ? arg[0].i : -1;
        if (n == 0)
            return fail(ev, node, "pop from empty list");
        if (i < 0)
            i += n;
        if (i < 0 || i >= n)
            return fail(ev, node, "pop index out of range");
        *out = l->items[i];
        memmove(&l->items[i], &l->items[i + 1], (size_t)(n - i - 1) * sizeof(l->items[0]));
        l->n--;
    } else if (strcmp(fn, LAB_EVAL_SETSLICE) == 0 || strcmp(fn, LAB_EVAL_DELSLICE) == 0) {
        st = change_slice(ev, node, l, &arg[0], strcmp(fn, LAB_EVAL_SETSLICE) == 0 ? &arg[1] : NULL,
                          false);
    } else if (strcmp(fn, "clear") == 0) {
        for (size_t i = 0; i < l->n; i++)
            lab_value_clear(&l->items[i]);
        l->n = 0;
    } else if (strcmp(fn, "reverse") == 0) {
        lab__eval_items_reverse(l);
    } else { /* remove */
        int64_t at;
        if ((st = find(ev, node, l, &arg[0], &at, NULL)) != DL_OK)
            return st;
        if (at < 0)
            return fail(ev, node, "list.remove(x): x not in list");
        lab_value_clear(&l->items[at]);
        memmove(&l->items[at], &l->items[at + 1], (l->n - (size_t)at - 1) * sizeof(l->items[0]));
        l->n--;
    }
    return st;
}

#define ITEM_DEPTH_MAX 16 /* l[i][j]...: how many indices deep a change reaches */

/* The value that self names for a method that changes it: a variable, or
 * an item of a list or a dict in one (l[i], l[i][j], d["k"], d["k"][0],
 * d[None], d[1, 2]). */
typedef struct {
    const json_t *chain[ITEM_DEPTH_MAX]; /* the brackets' last subscripts, innermost first */
    lab_bracket_t br[ITEM_DEPTH_MAX];
    lab_value_t at[ITEM_DEPTH_MAX]; /* their indices or keys */
    int depth;
    const json_t *root; /* the variable's node */
    const char *name;
} item_path_t;

static void item_path_clear(item_path_t *p)
{
    for (int k = 0; k < p->depth; k++)
        lab_value_clear(&p->at[k]);
}

/* Reads self's path and evaluates its indices, left to right, once;
 * DL_ERR_NOT_FOUND (nothing recorded) where self is no such thing. On
 * failure nothing is left to clear. */
static dl_status_t item_path(lab_eval_t *ev, const json_t *self, item_path_t *p)
{
    p->depth = 0;
    const json_t *e = self;
    while (json_object_get(e, "index") != NULL) {
        if (p->depth == ITEM_DEPTH_MAX || !lab__eval_bracket_of(e, &p->br[p->depth]))
            return DL_ERR_NOT_FOUND;
        p->chain[p->depth] = e;
        e = p->br[p->depth++].base;
    }
    p->root = e;
    p->name = json_object_get(e, "call") == NULL ? lab_json_str(e, "name", NULL) : NULL;
    int depth = p->depth;
    p->depth = 0; /* how many keys are held, to clear */
    if (p->name == NULL)
        return DL_ERR_NOT_FOUND;
    memset(p->at, 0, sizeof(p->at));
    for (int k = depth - 1; k >= 0; k--) {
        const json_t *at_node = p->chain[k];
        dl_status_t st = lab__eval_bracket_key(ev, &p->br[k], &p->at[k]);
        if (st == DL_OK && lab__eval_undefined(&p->at[k]))
            st = fail(ev, at_node, "'%s' is not defined", p->at[k].name);
        if (st != DL_OK) {
            for (int j = k; j < depth; j++)
                lab_value_clear(&p->at[j]);
            return st;
        }
    }
    p->depth = depth;
    return DL_OK;
}

/* The value the path names now, in Python's words where it names none
 * (quiet: DL_ERR_NOT_FOUND, nothing recorded). absolute: a negative list
 * index is made the position it names now (p changes), as a loop reads
 * l[-1] once. */
static dl_status_t item_find(lab_eval_t *ev, const json_t *self, const char *fn, item_path_t *p,
                             bool quiet, bool absolute, lab_value_t **v_p)
{
    lab_value_t *v = lab__eval_var(ev, p->name);
    if (v == NULL)
        return quiet ? DL_ERR_NOT_FOUND : fail(ev, p->root, "'%s' is not defined", p->name);
    for (int k = p->depth - 1; k >= 0; k--) {
        lab_value_t *at = &p->at[k];
        if (v->kind == LAB_V_DICT) {
            lab_value_t *found = NULL;
            dl_status_t st = quiet ? lab__eval_dict_entry(ev, p->chain[k], v, at, &found)
                                   : lab__eval_dict_at(ev, p->chain[k], v, at, &found);
            if (st != DL_OK || found == NULL)
                return quiet ? DL_ERR_NOT_FOUND : st;
            v = found;
            continue;
        }
        bool is_int = at->kind == LAB_V_INT || at->kind == LAB_V_BOOL;
        if (quiet &&
            (v->kind != LAB_V_LIST || !is_int || at->i >= (int64_t)v->n || at->i < -(int64_t)v->n))
            return DL_ERR_NOT_FOUND;
        if (v->kind == LAB_V_TENSOR && strcmp(fn, "sort") == 0)
            return DL_ERR_NOT_FOUND; /* t[0].sort(): torch's, of the row (the caller's) */
        if (v->kind == LAB_V_TENSOR || v->kind == LAB_V_STR)
            return fail(ev, self, "'%s' object has no attribute '%s'", lab__eval_type_name(v), fn);
        if (v->kind != LAB_V_LIST)
            return fail(ev, p->chain[k], "'%s' object is not subscriptable",
                        lab__eval_type_name(v));
        if (!is_int)
            return fail(ev, p->chain[k], "list indices must be integers or slices, not %s",
                        lab__eval_type_name(at));
        int64_t i = at->i < 0 ? at->i + (int64_t)v->n : at->i;
        if (i < 0 || i >= (int64_t)v->n)
            return fail(ev, p->chain[k], "%s index out of range", v->tuple ? "tuple" : "list");
        if (absolute)
            at->i = i;
        v = &v->items[i];
    }
    *v_p = v;
    return DL_OK;
}

/* ---- a loop's container, found again at each step ---- */

struct lab_path {
    item_path_t p;
    uint64_t root; /* the variable's binding when the loop began */
};

static lab_value_t *path_find(lab_eval_t *ev, lab_path_t *path, bool absolute);

dl_status_t lab__eval_path_of(lab_eval_t *ev, const json_t *node, lab_path_t **path_p)
{
    *path_p = NULL;
    if (!lab__eval_is_plain_name(node) && lab__eval_entry(ev, node) == NULL)
        return DL_ERR_NOT_FOUND; /* a call in it, or no entry */
    lab_path_t *path = calloc(1, sizeof(*path));
    if (path == NULL)
        return DL_ERR_NOMEM;
    dl_status_t st = item_path(ev, node, &path->p);
    lab_value_t *v = st == DL_OK ? lab__eval_var(ev, path->p.name) : NULL;
    if (v == NULL) {
        free(path);
        return st != DL_OK ? st : DL_ERR_NOT_FOUND;
    }
    if (v->binding == 0)
        lab_value_number(v);
    path->root = v->binding;
    /* l[-1] names the list that is last now, as Python reads it once */
    (void)path_find(ev, path, true);
    *path_p = path;
    return DL_OK;
}

bool lab__eval_path_root_same(lab_eval_t *ev, const lab_path_t *path)
{
    const lab_value_t *v = lab__eval_var(ev, path->p.name);
    return v != NULL && v->binding == path->root;
}

/* What the path names now, quietly (a key that can be no key writes its
 * message, which is not the caller's); absolute as item_find. */
static lab_value_t *path_find(lab_eval_t *ev, lab_path_t *path, bool absolute)
{
    lab_value_t *v = NULL;
    char saved[sizeof(ev->error)];
    memcpy(saved, ev->error, sizeof(saved));
    if (item_find(ev, path->p.root, "", &path->p, true, absolute, &v) != DL_OK)
        v = NULL;
    memcpy(ev->error, saved, sizeof(saved));
    return v;
}

lab_value_t *lab__eval_path_find(lab_eval_t *ev, const lab_path_t *path)
{
    return path_find(ev, (lab_path_t *)path, false);
}

const char *lab__eval_path_name(const lab_path_t *path)
{
    return path->p.name;
}

void lab__eval_path_free(lab_path_t *path)
{
    if (path == NULL)
        return;
    item_path_clear(&path->p);
    free(path);
}

/* Whether fn is a method of what v is. */
/* l.sort(): sorted's order (stable, key=, reverse=). A key runs the
 * learner's code, which may change any list, l or the one that holds it.
 * So the sorted copy is made first, l is found again along its path, and
 * it takes the copy's items only if it is the same list, as long as it
 * was: else Python's ValueError. */
static dl_status_t sort_list(lab_eval_t *ev, const json_t *node, const json_t *self,
                             item_path_t *path, lab_value_t *l)
{
    if (l->binding == 0)
        lab_value_number(l);
    uint64_t binding = l->binding;
    size_t n = l->n;
    lab_value_t sorted = {0};
    dl_status_t st = lab__eval_py_builtin(ev, node, "sorted", l, 1, json_object_get(node, "kwargs"),
                                          &sorted); /* l may be gone once it returns */
    if (st != DL_OK)
        return st;
    if (item_find(ev, self, "sort", path, true, false, &l) != DL_OK || l->kind != LAB_V_LIST ||
        l->binding != binding || l->n != n || sorted.n != n) {
        lab_value_clear(&sorted);
        return fail(ev, node, "list modified during sort");
    }
    for (size_t i = 0; i < l->n; i++)
        lab_value_clear(&l->items[i]);
    memcpy(l->items, sorted.items, n * sizeof(*sorted.items));
    sorted.n = 0;
    lab_value_clear(&sorted);
    return lab__eval_report_assigned(ev, path->name, lab__eval_var(ev, path->name));
}

/* "'Tensor' object has no attribute 'append'"; of del, Python's words. */
static dl_status_t no_method(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                             const char *fn)
{
    if (v->kind == LAB_V_DICT &&
        (strcmp(fn, LAB_EVAL_SETSLICE) == 0 || strcmp(fn, LAB_EVAL_DELSLICE) == 0))
        return fail(ev, node, "unhashable type: 'slice'");
    if (strcmp(fn, LAB_EVAL_DELITEM) == 0) /* Python's words differ for a slice */
        return fail(ev, node, "'%s' object doesn't support item deletion", lab__eval_type_name(v));
    if (strcmp(fn, LAB_EVAL_DELSLICE) == 0)
        return fail(ev, node, "'%s' object does not support item deletion", lab__eval_type_name(v));
    if (strcmp(fn, LAB_EVAL_SETSLICE) == 0)
        return fail(ev, node, "'%s' object does not support item assignment",
                    lab__eval_type_name(v));
    return fail(ev, node, "'%s' object has no attribute '%s'", lab__eval_type_name(v), fn);
}

static bool method_of_kind(const char *fn, const lab_value_t *v)
{
    if (v->kind == LAB_V_DICT)
        return lab__eval_is_dict_method(fn);
    return v->kind == LAB_V_LIST && method_of(fn) >= 0 &&
           (!changes(fn) || (!v->tuple && v->name[0] == '\0'));
}

/* t.sort(...) where the list method's path found a tensor: torch's sort
 * of self, its arguments bound as the math functions bind theirs. */
static dl_status_t tensor_sort(lab_eval_t *ev, const json_t *node, const lab_value_t *self,
                               lab_value_t *out)
{
    const json_t *args = json_object_get(node, "args");
    lab_value_t pos[4] = {{0}};
    int npos = 1;
    if (json_array_size(args) > 3)
        return fail(ev, node, "sort() takes at most 2 positional arguments (%d given)",
                    (int)json_array_size(args));
    /* A copy, taken before the arguments run, as Python takes t first. */
    dl_status_t st = lab_value_copy(self, dl_comm_allocator(ev->r->comm), &pos[0]);
    for (size_t k = 0; st == DL_OK && k < json_array_size(args); k++)
        st = lab_eval_expr(ev, json_array_get(args, k), &pos[npos++]);
    if (st == DL_OK)
        st = lab__eval_math(ev, node, "sort", pos, npos, json_object_get(node, "kwargs"), out);
    for (int k = 0; k < 4; k++)
        lab_value_clear(&pos[k]);
    return st;
}

dl_status_t lab__eval_list_method(lab_eval_t *ev, const json_t *node, const char *fn,
                                  lab_value_t *out)
{
    int m = method_of(fn);
    bool changing = changes(fn);
    const json_t *self = json_object_get(node, "self"), *args = json_object_get(node, "args");
    int nargs = (int)json_array_size(args);
    memset(out, 0, sizeof(*out));
    /* A change is made to the variable itself (or a list or dict inside
     * it): its path is read and checked first, as Python finds the list
     * before it evaluates the arguments, and followed again after them,
     * so that an argument that changes the list (l[0].append(l.pop()))
     * leaves no stale pointer. A read may be of any value. */
    const char *name = NULL;
    lab_value_t own = {0}, *l = NULL, arg[2] = {{0}};
    item_path_t path = {.depth = 0};
    /* the list or dict found first, by its number: one that took its
     * place has another (a variable stays itself) */
    uint64_t first = 0;
    dl_status_t st = DL_OK;
    if (changing) {
        st = item_path(ev, self, &path);
        if (st == DL_OK)
            st = item_find(ev, self, fn, &path, false, false, &l);
        if (st == DL_ERR_NOT_FOUND && strcmp(fn, "sort") == 0) {
            /* (t * 2).sort(), torch.arange(3).sort(): a tensor's sort */
            if ((st = lab_eval_expr(ev, self, &own)) != DL_OK)
                return st;
            if (own.kind == LAB_V_TENSOR) {
                st = tensor_sort(ev, node, &own, out);
                lab_value_clear(&own);
                return st;
            }
            lab_value_clear(&own);
            st = DL_ERR_NOT_FOUND;
        }
        if (st == DL_ERR_NOT_FOUND &&
            (strcmp(fn, LAB_EVAL_DELITEM) == 0 || strcmp(fn, LAB_EVAL_DELSLICE) == 0))
            return fail(ev, node,
                        "del X[K] deletes an item of a list or dict variable (or of "
                        "an item of one: del d[k][i])");
        if (st == DL_ERR_NOT_FOUND && strcmp(fn, LAB_EVAL_SETSLICE) == 0)
            return fail(ev, node,
                        "l[i:j] = x changes a list variable in place (or a list inside one: "
                        "d[k][i:j] = x)");
        if (st == DL_ERR_NOT_FOUND)
            return m >= 0 ? fail(ev, node,
                                 "%s() changes a list in place: call it on a list variable "
                                 "(l.%s(...)) or an item of one (l[i].%s(...))",
                                 fn, fn, fn)
                          : fail(ev, node,
                                 "%s() changes a dict in place: call it on a dict variable "
                                 "(d.%s(...)) or an item of one (d[k].%s(...))",
                                 fn, fn, fn);
        if (st == DL_OK && l->kind == LAB_V_TENSOR && strcmp(fn, "sort") == 0) {
            st = tensor_sort(ev, node, l, out);
            goto out;
        }
        if (st == DL_OK && !method_of_kind(fn, l))
            st = no_method(ev, node, l, fn);
        if (st != DL_OK)
            goto out;
        name = path.name;
        if (l->binding == 0)
            lab_value_number(l);
        first = l->binding;
    } else {
        if ((st = lab_eval_expr(ev, self, &own)) != DL_OK)
            return st;
        l = &own;
        if (own.kind == LAB_V_STR) {
            /* s.count('a'), s.index('b'): a string's own methods */
            if (m < 0 || nargs != 1)
                st = fail(ev, node, "'str' object has no attribute '%s'", fn);
            else if ((st = lab_eval_expr(ev, json_array_get(args, 0), &arg[0])) == DL_OK)
                st = lab__eval_str_method(ev, node, fn, &own, arg, nargs, NULL, out);
            goto out;
        }
    }
    const json_t *kwargs = json_object_get(node, "kwargs");
    bool sort_kw =
        strcmp(fn, "sort") == 0 &&
        json_object_size(kwargs) == (size_t)(json_object_get(kwargs, "reverse") != NULL) +
                                        (size_t)(json_object_get(kwargs, "key") != NULL);
    if (l->kind != LAB_V_DICT && (m < 0 || (json_object_size(kwargs) && !sort_kw))) {
        /* d.get(...) of what is not a dict; l.pop(i=0) */
        st = m < 0 || lab__eval_undefined(l) ? DL_OK
             : strcmp(fn, "sort") == 0
                 ? fail(ev, node,
                        "sort() of a list takes key= and reverse= only (dim=, descending= and "
                        "stable= are a tensor's)")
                 : fail(ev, node, "%s() takes no keyword arguments", fn);
        if (st == DL_OK && lab__eval_undefined(l))
            st = lab__eval_fail_undefined(ev, self, l);
        else if (st == DL_OK)
            st = no_method(ev, node, l, fn);
        goto out;
    }
    if (l->kind != LAB_V_DICT && (nargs < methods[m].min || nargs > methods[m].max)) {
        st = fail(ev, node, "%s() takes %s (%d given)", fn,
                  methods[m].max == 0   ? "no arguments"
                  : methods[m].min == 2 ? "exactly 2 arguments"
                  : methods[m].min == 0 ? "at most 1 argument"
                                        : "exactly one argument",
                  nargs);
        goto out;
    }
    for (int k = 0; k < nargs && k < 2 && st == DL_OK; k++)
        st = lab_eval_expr(ev, json_array_get(args, (size_t)k), &arg[k]);
    for (int k = 0; k < nargs && k < 2 && st == DL_OK; k++)
        if (lab__eval_undefined(&arg[k]))
            st = fail(ev, json_array_get(args, (size_t)k), "'%s' is not defined", arg[k].name);
    if (st == DL_OK && nargs > 2)
        st = fail(ev, node, "%s() takes at most 2 arguments (%d given)", fn, nargs);
    if (st != DL_OK)
        goto out;
    if (changing && (item_find(ev, self, fn, &path, true, false, &l) != DL_OK ||
                     !method_of_kind(fn, l) || (path.depth > 0 && l->binding != first))) {
        /* An argument took the list out of the variable (l[0].append(l.pop(0))):
         * Python changes that list, which nothing here holds any more, so
         * the variable stays as the argument left it. pop must give an
         * item of it, which is gone. */
        if (strcmp(fn, "pop") == 0)
            st = fail(ev, node, "pop(): the list left '%s' while the argument ran", name);
        goto out;
    }
    if (lab__eval_undefined(l)) {
        st = lab__eval_fail_undefined(ev, self, l);
        goto out;
    }
    if (!method_of_kind(fn, l) || (strcmp(fn, "copy") == 0 && l->tuple)) {
        st = no_method(ev, node, l, fn);
        goto out;
    }
    /* These change no list's or dict's length (sort and reverse reorder
     * the items where they lie). */
    bool keeps_entries =
        (l->kind == LAB_V_DICT && (strcmp(fn, "update") == 0 || strcmp(fn, "setdefault") == 0)) ||
        (l->kind == LAB_V_LIST && (strcmp(fn, "sort") == 0 || strcmp(fn, "reverse") == 0));
    /* A function's parameter shares the caller's items: neither may make
     * them longer or shorter while the call runs (l[i:j] = x of as many
     * items replaces them where they lie: buf[:] = [x / s for x in buf]). */
    bool shared = changing && !keeps_entries && (l->borrowed || lab__eval_lent(ev, l->items));
    if (shared && l->kind == LAB_V_LIST && strcmp(fn, LAB_EVAL_SETSLICE) == 0) {
        if ((st = change_slice(ev, node, l, &arg[0], &arg[1], true)) == DL_OK)
            st = lab__eval_report_assigned(ev, name, lab__eval_var(ev, name));
        goto out;
    }
    if (shared) {
        bool del = strcmp(fn, LAB_EVAL_DELITEM) == 0 || strcmp(fn, LAB_EVAL_DELSLICE) == 0;
        st = fail(ev, node,
                  "%s%s on a %s a running function was given is not supported here: build a "
                  "new one and return it",
                  del ? "del" : fn, del ? "" : "()", l->kind == LAB_V_DICT ? "dict" : "list");
        goto out;
    }
    if (l->kind == LAB_V_LIST && strcmp(fn, "sort") == 0) {
        st = sort_list(ev, node, self, &path, l);
        goto out;
    }
    if (l->kind == LAB_V_DICT) {
        st = lab__eval_dict_method(ev, node, fn, l, arg, nargs, out);
        if (st == DL_OK && changing)
            st = lab__eval_report_assigned(ev, name, lab__eval_var(ev, name));
    } else if (changing) {
        if ((st = change(ev, node, m, l, arg, nargs, out)) == DL_OK)
            st = lab__eval_report_assigned(ev, name, lab__eval_var(ev, name));
    } else if (strcmp(fn, "copy") == 0) {
        *out = own;
        memset(&own, 0, sizeof(own));
    } else {
        int64_t at, count = 0;
        if ((st = find(ev, node, l, &arg[0], &at, strcmp(fn, "count") == 0 ? &count : NULL)) ==
            DL_OK) {
            if (strcmp(fn, "index") == 0 && at < 0) {
                char *text = NULL;
                if (lab__eval_format(ev, node, &arg[0], true, &text) == DL_OK)
                    st = fail(ev, node, "%s is not in %s", text, l->tuple ? "tuple" : "list");
                else
                    st = DL_ERR_NOMEM;
                free(text);
            } else {
                out->kind = LAB_V_INT;
                out->i = strcmp(fn, "index") == 0 ? at : count;
            }
        }
    }
out:
    for (int k = 0; k < 2; k++)
        lab_value_clear(&arg[k]);
    lab_value_clear(&own);
    item_path_clear(&path);
    return st;
}
