/* Python's functions in the shell language: def'd functions and their
 * calls, the scopes that keep a call's variables (and a comprehension's)
 * apart from the globals, list comprehensions, f-strings, and str() of a
 * value as Python's print writes it.
 *
 * A call runs the def's body on this rank, as a function of a torch script
 * runs in each process: the collectives and sends in it meet the other
 * ranks' as anywhere else. Its parameters are local variables; one bound
 * to a caller's tensor, list or dict variable refers to it (a borrowed value),
 * so that recv[:] = accum[:] in the function writes the caller's tensor,
 * as Python passes objects by reference. */
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lang/lang.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* ---- scopes ---- */

lab_value_t *lab__eval_var(lab_eval_t *ev, const char *name)
{
    for (lab_scope_t *sc = ev->scope; sc != NULL; sc = sc->up) {
        lab_value_t *v = lab_vars_get(&sc->vars, name);
        if (v != NULL)
            return v;
    }
    return lab_vars_get(&ev->vars, name);
}

lab_vars_t *lab__eval_vars(lab_eval_t *ev)
{
    return ev->scope != NULL ? &ev->scope->vars : &ev->vars;
}

bool lab__eval_quiet(const lab_eval_t *ev)
{
    return ev->calls > 0;
}

/* ---- calls ---- */

/* An argument's value: a tensor, list or dict variable by reference,
 * anything else evaluated (a copy). */
static dl_status_t eval_arg(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    const char *name = lab_json_str(node, "name", NULL);
    lab_value_t *var = name != NULL ? lab__eval_var(ev, name) : NULL;
    bool entries = var != NULL && (var->kind == LAB_V_LIST || var->kind == LAB_V_DICT);
    if (var != NULL && (var->kind == LAB_V_TENSOR || entries)) {
        dl_status_t st = entries ? lab__eval_lend(ev, var) : DL_OK;
        if (st != DL_OK)
            return st;
        *out = *var;
        out->borrowed = true;
        return DL_OK;
    }
    dl_status_t st = lab_eval_expr(ev, node, out);
    if (st == DL_OK && out->kind == LAB_V_NAME) {
        char word[sizeof(out->name)];
        snprintf(word, sizeof(word), "%s", out->name);
        lab_value_clear(out);
        return fail(ev, node, "'%s' is not defined", word);
    }
    return st;
}

dl_status_t lab__eval_lend(lab_eval_t *ev, const lab_value_t *list)
{
    if (ev->n_lent == ev->cap_lent) {
        size_t cap = ev->cap_lent ? ev->cap_lent * 2 : 8;
        const lab_value_t **grown = realloc(ev->lent, cap * sizeof(*grown));
        if (grown == NULL)
            return DL_ERR_NOMEM;
        ev->lent = grown;
        ev->cap_lent = cap;
    }
    ev->lent[ev->n_lent++] = list->items; /* until the call returns */
    return DL_OK;
}

static long param_index(const json_t *params, const char *key)
{
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        if (strcmp(json_string_value(p), key) == 0)
            return (long)i;
    }
    return -1;
}

/* "'a'", "'a' and 'b'", "'a', 'b' and 'c'": Python's list of missing
 * arguments. */
static void missing_list(const json_t *params, const bool *given, size_t n, char *buf, size_t cap,
                         size_t *count_p)
{
    size_t count = 0, k = 0, used = 0;
    for (size_t i = 0; i < n; i++)
        count += !given[i];
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++) {
        if (given[i])
            continue;
        k++;
        used += (size_t)snprintf(buf + used, cap - used, "%s'%s'",
                                 k == 1       ? ""
                                 : k == count ? " and "
                                              : ", ",
                                 json_string_value(json_array_get(params, i)));
    }
    *count_p = count;
}

/* ---- functions: what they are made with ---- */

/* The value of the pair named key among what fn was made with, or NULL. */
static lab_value_t *made_with(lab_value_t *fn, const char *key)
{
    for (size_t i = 0; i < fn->n; i++)
        if (strcmp(fn->items[i].items[0].s, key) == 0)
            return &fn->items[i].items[1];
    return NULL;
}

/* Adds the pair (key, v) to what fn is made with, taking v. */
static dl_status_t add_pair(lab_value_t *fn, const char *key, lab_value_t *v)
{
    lab_value_t *items = realloc(fn->items, (fn->n + 1) * sizeof(*items));
    dl_status_t st = items != NULL ? DL_OK : DL_ERR_NOMEM;
    if (items != NULL)
        fn->items = items;
    lab_value_t pair;
    if (st == DL_OK && (st = lab_value_new_list(&pair, 2)) == DL_OK) {
        pair.items[0] = (lab_value_t){.kind = LAB_V_STR, .s = strdup(key)};
        if (pair.items[0].s == NULL) {
            lab_value_clear(&pair);
            st = DL_ERR_NOMEM;
        }
    }
    if (st != DL_OK) {
        lab_value_clear(v);
        return st;
    }
    pair.items[1] = *v;
    memset(v, 0, sizeof(*v));
    pair.n = 2;
    pair.tuple = true;
    fn->items[fn->n++] = pair;
    return DL_OK;
}

/* The names an expression reads ({"name": X}), into set. */
static void names_read(const json_t *node, json_t *set, int depth)
{
    if (depth > 4 * LAB_LANG_MAX_DEPTH)
        return; /* the parser bounds the tree; this only guards the walk */
    if (json_is_array(node)) {
        size_t i;
        const json_t *v;
        json_array_foreach(node, i, v)
        {
            names_read(v, set, depth + 1);
        }
        return;
    }
    if (!json_is_object(node))
        return;
    const char *name = lab_json_str(node, "name", NULL);
    if (name != NULL && json_object_get(node, "kind") == NULL)
        json_object_set_new(set, name, json_true());
    const char *call = lab_json_str(node, "call", NULL); /* f(x): f may be a local lambda */
    if (call != NULL && json_object_get(node, "self") == NULL)
        json_object_set_new(set, call, json_true());
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)node, key, v)
    {
        names_read(v, set, depth + 1);
    }
}

/* Whether v is or holds a function that keeps values it closed over: such
 * a value is not captured again (fs.append(lambda: fs) would copy itself
 * twice over at each turn). */
static bool holds_closure(const lab_value_t *v)
{
    if (v->kind == LAB_V_FUNC) {
        for (size_t i = 0; i < v->n; i++)
            if (v->items[i].items[0].s[0] != '=' && v->items[i].items[0].s[0] != '^')
                return true; /* a value it kept */
        return false;
    }
    for (size_t i = 0; (v->kind == LAB_V_LIST || v->kind == LAB_V_DICT) && i < v->n; i++)
        if (holds_closure(&v->items[i]))
            return true;
    return false;
}

/* A lambda or def made inside a function reads that function's names as a
 * closure does: while the function runs, its variables as they are then
 * (a local lambda may call itself); once it has returned, the values they
 * had when the lambda was made (def h(x): return lambda: x), kept here.
 * "^" holds the number of the function's call. One made at the top reads
 * the globals only. */
static dl_status_t close_over(lab_eval_t *ev, const json_t *node, lab_value_t *fn)
{
    const lab_scope_t *def_sc = ev->scope;
    while (def_sc != NULL && def_sc->def == NULL)
        def_sc = def_sc->up;
    lab_value_t flag = {.kind = LAB_V_INT, .i = def_sc != NULL ? (int64_t)def_sc->id : -1};
    dl_status_t st = add_pair(fn, "^", &flag);
    json_t *set = json_object();
    if (st == DL_OK && set == NULL)
        st = DL_ERR_NOMEM;
    if (st == DL_OK)
        names_read(json_object_get(node, "body"), set, 0);
    const json_t *params = json_object_get(node, "params");
    const char *name;
    const json_t *unused;
    json_object_foreach(set, name, unused)
    {
        if (st != DL_OK)
            break;
        bool param = false;
        size_t i;
        const json_t *p;
        json_array_foreach(params, i, p)
        {
            param = param || strcmp(json_string_value(p), name) == 0;
        }
        const lab_value_t *v = NULL;
        for (lab_scope_t *sc = ev->scope; sc != NULL && v == NULL && !param; sc = sc->up)
            v = lab_vars_get(&sc->vars, name);
        lab_value_t copy;
        if (v == NULL || holds_closure(v) ||
            lab_value_copy(v, dl_comm_allocator(ev->r->comm), &copy) != DL_OK)
            continue; /* a handle is not copied: read where the lambda runs */
        st = add_pair(fn, name, &copy);
    }
    json_decref(set);
    return st;
}

dl_status_t lab__eval_make_function(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_FUNC;
    out->fn = json_incref((json_t *)node);
    /* the defaults, evaluated as the def or lambda runs, as Python's
     * (lambda x, i=i: x + i in a loop keeps each i) */
    const json_t *defaults = json_object_get(node, "defaults");
    dl_status_t st = DL_OK;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(node, "params"), i, p)
    {
        const json_t *d = json_object_get(defaults, json_string_value(p));
        if (d == NULL || st != DL_OK)
            continue;
        lab_value_t v;
        if ((st = lab_eval_expr(ev, d, &v)) != DL_OK)
            break;
        const lab_value_t *undefined = lab__eval_undefined_in(&v);
        if (undefined != NULL) {
            st = lab__eval_fail_undefined(ev, d, undefined);
            lab_value_clear(&v);
            break;
        }
        char key[sizeof(((lab_var_t *)0)->name) + 1];
        snprintf(key, sizeof(key), "=%s", json_string_value(p));
        st = add_pair(out, key, &v);
    }
    if (st == DL_OK && ev->scope != NULL)
        st = close_over(ev, node, out); /* a lambda or a def inside a function */
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

/* Binds the call's arguments to the parameters: vals[i] for params[i]. */
static dl_status_t bind_args(lab_eval_t *ev, const json_t *node, lab_value_t *fn, const char *name,
                             lab_value_t *vals, bool *given)
{
    const json_t *def = fn->fn;
    const json_t *params = json_object_get(def, "params"),
                 *defaults = json_object_get(def, "defaults");
    const json_t *args = json_object_get(node, "args"), *kwargs = json_object_get(node, "kwargs");
    size_t n = json_array_size(params), nargs = json_array_size(args);
    bool star = json_is_true(json_object_get(def, "star"));
    size_t fixed = n - (star ? 1 : 0);
    if (nargs > fixed && !star)
        return fail(ev, node, "%s() takes %zu positional argument%s but %zu %s given", name, n,
                    n == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
    dl_status_t st;
    for (size_t i = 0; i < nargs && i < fixed; i++) {
        if ((st = eval_arg(ev, json_array_get(args, i), &vals[i])) != DL_OK)
            return st;
        given[i] = true;
    }
    if (star) {
        /* *rest: the other positional arguments, a tuple of their values */
        size_t extra = nargs > fixed ? nargs - fixed : 0;
        if ((st = lab_value_new_list(&vals[fixed], extra)) != DL_OK)
            return st;
        vals[fixed].tuple = true;
        given[fixed] = true;
        for (size_t i = 0; i < extra; i++) {
            const json_t *arg = json_array_get(args, fixed + i);
            lab_value_t *item = &vals[fixed].items[i];
            if ((st = lab_eval_expr(ev, arg, item)) != DL_OK)
                return st;
            vals[fixed].n = i + 1;
            const lab_value_t *undefined = lab__eval_undefined_in(item);
            if (undefined != NULL)
                return lab__eval_fail_undefined(ev, arg, undefined);
        }
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)kwargs, key, v)
    {
        long k = param_index(params, key);
        if (k < 0 || (size_t)k >= fixed)
            return fail(ev, v, "%s() got an unexpected keyword argument '%s'", name, key);
        if (given[k])
            return fail(ev, v, "%s() got multiple values for argument '%s'", name, key);
        if ((st = eval_arg(ev, v, &vals[k])) != DL_OK)
            return st;
        given[k] = true;
    }
    /* The defaults, as the def or lambda made them. */
    for (size_t i = 0; i < n; i++) {
        const char *p = json_string_value(json_array_get(params, i));
        if (given[i] || json_object_get(defaults, p) == NULL)
            continue;
        char key[sizeof(((lab_var_t *)0)->name) + 1];
        snprintf(key, sizeof(key), "=%s", p);
        lab_value_t *d = made_with(fn, key);
        if (d == NULL)
            return fail(ev, node, "%s(): the default of '%s' is missing", name, p);
        vals[i] = *d; /* taken: fn is the call's own copy */
        memset(d, 0, sizeof(*d));
        given[i] = true;
    }
    char list[160];
    size_t missing;
    missing_list(params, given, n, list, sizeof(list), &missing);
    if (missing > 0)
        return fail(ev, node, "%s() missing %zu required positional argument%s: %s", name, missing,
                    missing == 1 ? "" : "s", list);
    return DL_OK;
}

static dl_status_t call_def(lab_eval_t *ev, const json_t *node, lab_value_t *fn, lab_value_t *out);

dl_status_t lab__eval_call_def(lab_eval_t *ev, const json_t *node, const lab_value_t *fn,
                               lab_value_t *out)
{
    /* The call's own copy, whose defaults and kept values the call takes:
     * an argument may bind the function's name anew (f(g()) where g
     * assigns f), and the body may, which would free what fn holds. */
    lab_value_t own;
    memset(out, 0, sizeof(*out));
    dl_status_t st = lab_value_copy(fn, dl_comm_allocator(ev->r->comm), &own);
    if (st != DL_OK)
        return st;
    st = call_def(ev, node, &own, out);
    lab_value_clear(&own);
    return st;
}

static dl_status_t call_def(lab_eval_t *ev, const json_t *node, lab_value_t *fn, lab_value_t *out)
{
    const json_t *def = fn->fn;
    const char *name = lab_json_str(def, "name", "<lambda>");
    memset(out, 0, sizeof(*out));
    if (ev->calls >= LAB_EVAL_MAX_CALLS)
        return fail(ev, node, "maximum recursion depth exceeded (%d calls deep in %s())",
                    LAB_EVAL_MAX_CALLS, name);
    if (lab_rank_interrupted())
        return fail(ev, node, "interrupted (Ctrl-C)");
    const json_t *params = json_object_get(def, "params");
    size_t n = json_array_size(params);
    lab_value_t *vals = calloc(n ? n : 1, sizeof(*vals));
    bool *given = calloc(n ? n : 1, sizeof(*given));
    /* A lambda made in a function: that function's scope while it runs,
     * else the values it kept (close_over) */
    const lab_value_t *made_in = made_with(fn, "^");
    lab_scope_t *live = NULL;
    for (lab_scope_t *f = ev->frames; made_in != NULL && f != NULL && live == NULL; f = f->caller)
        if ((int64_t)f->id == made_in->i)
            live = f;
    lab_scope_t outer = {.up = live};
    lab_scope_t sc = {.def = def,
                      .up = made_in != NULL ? &outer : NULL,
                      .id = ++ev->calls_made,
                      .caller = ev->frames};
    dl_status_t st = vals != NULL && given != NULL ? DL_OK : DL_ERR_NOMEM;
    /* The arguments are evaluated where the call is, then bound in the
     * call's own scope. */
    size_t lent_mark = ev->n_lent;
    if (st == DL_OK)
        st = bind_args(ev, node, fn, name, vals, given);
    for (size_t i = 0; st == DL_OK && i < fn->n; i++) {
        const char *key = fn->items[i].items[0].s;
        if (key[0] == '=' || key[0] == '^' || (live != NULL && lab_vars_get(&live->vars, key)))
            continue; /* the running function's own value comes first */
        st = lab_vars_set(&outer.vars, key, &fn->items[i].items[1]); /* taken, as above */
    }
    for (size_t i = 0; st == DL_OK && i < n; i++)
        if ((st = lab_vars_reserve(&sc.vars)) == DL_OK)
            st = lab_vars_set(&sc.vars, json_string_value(json_array_get(params, i)), &vals[i]);
    for (size_t i = 0; vals != NULL && i < n; i++)
        lab_value_clear(&vals[i]);
    free(vals);
    free(given);
    if (st == DL_OK) {
        lab_scope_t *saved = ev->scope;
        int guarded = ev->guarded; /* the caller's try blocks are not the call's */
        ev->scope = &sc;
        ev->frames = &sc;
        ev->guarded = 0;
        ev->calls++;
        st = lab__eval_body(ev, json_object_get(def, "body"));
        ev->calls--;
        ev->guarded = guarded;
        ev->frames = sc.caller;
        ev->scope = saved;
        *out = ev->ret;
        memset(&ev->ret, 0, sizeof(ev->ret));
        ev->returning = false;
        if (st != DL_OK)
            lab_value_clear(out);
    }
    lab_vars_clear(&sc.vars);
    lab_vars_clear(&outer.vars);
    ev->n_lent = lent_mark;
    return st;
}

bool lab__eval_lent(const lab_eval_t *ev, const lab_value_t *items)
{
    for (size_t i = 0; items != NULL && i < ev->n_lent; i++)
        if (ev->lent[i] == items)
            return true;
    return false;
}

/* ---- list comprehensions ---- */

typedef struct {
    const json_t *node;
    lab_value_t *list;
    size_t cap;
    size_t level; /* the clause whose variable was just bound: 0 the first, k "more"[k - 1] */
} comp_t;

/* The most items a comprehension makes, as the parser bounds a literal. */
#define COMP_MAX (1u << 20)

static const json_t *clause_at(const comp_t *c, size_t level)
{
    return level == 0 ? c->node : json_array_get(json_object_get(c->node, "more"), level - 1);
}

static dl_status_t comp_item(lab_eval_t *ev, void *arg)
{
    comp_t *c = arg;
    const json_t *cond = json_object_get(clause_at(c, c->level), "cond");
    bool yes = true;
    dl_status_t st;
    if (cond != NULL && (st = lab__eval_truth(ev, cond, &yes)) != DL_OK)
        return st;
    if (!yes)
        return DL_OK;
    const json_t *next = clause_at(c, c->level + 1);
    if (next != NULL) {
        /* for row in m for x in row: the next clause, for each binding */
        c->level++;
        st =
            lab__eval_each(ev, next, lab_json_str(next, "var", "_"), json_object_get(next, "names"),
                           json_object_get(next, "iter"), comp_item, c);
        c->level--;
        return st;
    }
    lab_value_t *l = c->list;
    if (l->n == COMP_MAX)
        return fail(ev, c->node, "the comprehension makes too many items (at most %u)", COMP_MAX);
    if (l->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        lab_value_t *items = realloc(l->items, cap * sizeof(*items));
        if (items == NULL)
            return DL_ERR_NOMEM;
        l->items = items;
        c->cap = cap;
    }
    const json_t *item = json_object_get(c->node, "comp"), *key = json_object_get(c->node, "key");
    lab_value_t k = {0}, v;
    if (key != NULL && (st = lab_eval_expr(ev, key, &k)) != DL_OK)
        return st;
    if ((st = lab_eval_expr(ev, item, &v)) != DL_OK) {
        lab_value_clear(&k);
        return st;
    }
    if (lab__eval_undefined(&v)) { /* a dtype is a value: [t.dtype for t in ts] */
        st = lab__eval_fail_undefined(ev, item, &v);
        lab_value_clear(&k);
        lab_value_clear(&v);
        return st;
    }
    if (key != NULL) /* {k: v for ...}: set in the dict as it is made */
        return lab__eval_dict_put(ev, key, l, &k, &v);
    l->items[l->n++] = v;
    return DL_OK;
}

dl_status_t lab__eval_comprehension(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    lab_value_t list = {.kind = LAB_V_LIST};
    dl_status_t st = DL_OK;
    if (json_object_get(node, "key") != NULL && (st = lab__eval_new_dict(&list)) != DL_OK)
        return st;
    comp_t c = {.node = node, .list = &list};
    /* Its variable is its own, as in Python 3: it does not leak. */
    lab_scope_t sc = {.up = ev->scope};
    ev->scope = &sc;
    st = lab__eval_each(ev, node, lab_json_str(node, "var", "_"), json_object_get(node, "names"),
                        json_object_get(node, "iter"), comp_item, &c);
    ev->scope = sc.up;
    lab_vars_clear(&sc.vars);
    if (st == DL_OK && list.items == NULL && (list.items = calloc(1, sizeof(*list.items))) == NULL)
        st = DL_ERR_NOMEM;
    if (st != DL_OK) {
        lab_value_clear(&list);
        return st;
    }
    *out = list;
    return DL_OK;
}

/* ---- str() ---- */

/* str() and f-strings grow a lab_sbuf_t of no limit (a print cuts its
 * line later). */

/* The shortest digits of x that read back as x (Python's repr): at each
 * length, the nearest digits, or else the digits one up or one down in the
 * last place, which round back where x's neighbours are not as far apart
 * below as above (a power of two: 2**-24 is 5.960464477539063e-08, whose
 * nearest 16 digits, ...062e-08, read back as the float below). *digits
 * gets them without the point, *exp_p the exponent of the first. */
static void shortest_digits(double x, char *digits, size_t cap, int *exp_p)
{
    char sci[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(sci, sizeof(sci), "%.*e", prec - 1, fabs(x));
        int exp = atoi(strchr(sci, 'e') + 1);
        char d[24];
        size_t n = 0;
        for (const char *c = sci; *c != 'e'; c++)
            if (*c != '.')
                d[n++] = *c;
        d[n] = '\0';
        for (int step = 0; step < 3; step++) {
            char t[24], back[48];
            int e = exp;
            memcpy(t, d, n + 1);
            /* step 1: one up in the last place (a carry may add a digit:
             * 9.99 -> 10.0, written 1.00 one exponent up); step 2: down */
            if (step == 1) {
                size_t i = n;
                while (i > 0 && t[i - 1] == '9')
                    t[--i] = '0';
                if (i == 0) {
                    t[0] = '1';
                    e++;
                } else {
                    t[i - 1]++;
                }
            } else if (step == 2) {
                size_t i = n;
                while (i > 0 && t[i - 1] == '0')
                    t[--i] = '9';
                if (i == 0 || (i == 1 && t[0] == '1' && n > 1))
                    continue; /* fewer digits: an earlier length's */
                t[i - 1]--;
            }
            snprintf(back, sizeof(back), "%c.%se%d", t[0], t + 1, e);
            if (strtod(back, NULL) == fabs(x)) {
                snprintf(digits, cap, "%s", t);
                *exp_p = e;
                return;
            }
        }
    }
    snprintf(sci, sizeof(sci), "%.16e", fabs(x)); /* 17 digits always read back */
    size_t n = 0;
    for (const char *c = sci; *c != 'e' && n + 1 < cap; c++)
        if (*c != '.')
            digits[n++] = *c;
    digits[n] = '\0';
    *exp_p = atoi(strchr(sci, 'e') + 1);
}

const char *lab__eval_py_float(double x, char *buf, size_t cap)
{
    /* The fewest digits that read back as x, positional from 1e-4 up to
     * 1e16 and with ".0" when whole (-0.0, 100.0, 0.1), in exponent
     * notation outside (1e-05, 1e+16). */
    if (x != x)
        return "nan";
    if (x > 1.7976931348623157e308 || x < -1.7976931348623157e308)
        return x > 0 ? "inf" : "-inf";
    char d[24];
    int exp = 0;
    shortest_digits(x, d, sizeof(d), &exp);
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '0') /* 1e+16, not 1.0e+16 */
        d[--n] = '\0';
    char txt[48], *o = txt;
    if (signbit(x))
        *o++ = '-';
    if (exp < -4 || exp >= 16) {
        snprintf(o, sizeof(txt) - 1, "%c%s%se%c%02d", d[0], n > 1 ? "." : "", d + 1,
                 exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) { /* 0.00ddd */
        *o++ = '0';
        *o++ = '.';
        for (int z = 0; z < -exp - 1; z++)
            *o++ = '0';
        snprintf(o, sizeof(txt) - (size_t)(o - txt), "%s", d);
    } else { /* ddd.ddd, ddd00.0 */
        for (int i = 0; i <= exp; i++)
            *o++ = (size_t)i < n ? d[i] : '0';
        *o++ = '.';
        snprintf(o, sizeof(txt) - (size_t)(o - txt), "%s", (size_t)exp + 1 < n ? d + exp + 1 : "0");
    }
    snprintf(buf, cap, "%s", txt);
    return buf;
}

/* A string as Python's repr writes it: in single quotes, or double ones
 * when it holds a single quote and no double one. */
static void put_repr(lab_sbuf_t *b, const char *s)
{
    char q = strchr(s, '\'') != NULL && strchr(s, '"') == NULL ? '"' : '\'';
    lab__sbuf_put(b, &q, 1);
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '\\' || *p == q)
            lab__sbuf_put(b, "\\", 1);
        if (*p == '\n')
            lab__sbuf_puts(b, "\\n");
        else if (*p == '\t')
            lab__sbuf_puts(b, "\\t");
        else if (*p == '\r')
            lab__sbuf_puts(b, "\\r");
        else
            lab__sbuf_put(b, p, 1);
    }
    lab__sbuf_put(b, &q, 1);
}

static dl_status_t format_into(lab_eval_t *ev, const json_t *node, const lab_value_t *v, bool repr,
                               lab_sbuf_t *b, int depth)
{
    char num[48];
    if (depth > 64)
        return fail(ev, node, "a list nested too deeply to print");
    switch (v->kind) {
    case LAB_V_NONE:
        lab__sbuf_puts(b, "None");
        break;
    case LAB_V_INT:
        snprintf(num, sizeof(num), "%lld", (long long)v->i);
        lab__sbuf_puts(b, num);
        break;
    case LAB_V_FLOAT:
        lab__sbuf_puts(b, lab__eval_py_float(v->f, num, sizeof(num)));
        break;
    case LAB_V_BOOL:
        lab__sbuf_puts(b, v->i ? "True" : "False");
        break;
    case LAB_V_STR:
        if (repr && strcmp(v->name, LAB_DEVICE) == 0) {
            /* torch's device(type='cuda', index=0) */
            const char *s = v->s != NULL ? v->s : "", *colon = strchr(s, ':');
            lab__sbuf_puts(b, "device(type='");
            lab__sbuf_put(b, s, colon != NULL ? (size_t)(colon - s) : strlen(s));
            lab__sbuf_puts(b, "'");
            if (colon != NULL) {
                lab__sbuf_puts(b, ", index=");
                lab__sbuf_puts(b, colon + 1);
            }
            lab__sbuf_puts(b, ")");
        } else if (repr && strcmp(v->name, LAB_REDUCE_OP) != 0 && strcmp(v->name, LAB_TYPE) != 0)
            /* a ReduceOp and a type print without quotes */
            put_repr(b, v->s != NULL ? v->s : "");
        else
            lab__sbuf_puts(b, v->s != NULL ? v->s : "");
        break;
    case LAB_V_TENSOR: {
        char *text = dl_tensor_format(v->t);
        if (text == NULL)
            return fail(ev, node, "cannot format the tensor");
        lab__sbuf_puts(b, text);
        free(text);
        break;
    }
    case LAB_V_LIST:
        if (lab__eval_is_size(v)) {
            /* t.shape, as torch prints it: torch.Size([2, 3]). */
            lab__sbuf_puts(b, "torch.Size([");
            for (size_t i = 0; i < v->n; i++) {
                if (i > 0)
                    lab__sbuf_puts(b, ", ");
                dl_status_t st = format_into(ev, node, &v->items[i], true, b, depth + 1);
                if (st != DL_OK)
                    return st;
            }
            lab__sbuf_puts(b, "])");
            break;
        }
        if (lab__eval_is_pair(v)) {
            /* The pair of t.max(dim=D), as torch prints its named tuple. */
            lab__sbuf_puts(b, "torch.return_types.");
            lab__sbuf_puts(b, v->name);
            lab__sbuf_puts(b, "(\nvalues=");
            dl_status_t st = format_into(ev, node, &v->items[0], true, b, depth + 1);
            if (st != DL_OK)
                return st;
            lab__sbuf_puts(b, ",\nindices=");
            if ((st = format_into(ev, node, &v->items[1], true, b, depth + 1)) != DL_OK)
                return st;
            lab__sbuf_puts(b, ")");
            break;
        }
        if (v->name[0] != '\0') { /* d.keys(): dict_keys(['a']) */
            lab__sbuf_puts(b, v->name);
            lab__sbuf_puts(b, "(");
        }
        lab__sbuf_puts(b, v->tuple ? "(" : "[");
        for (size_t i = 0; i < v->n; i++) {
            if (i > 0)
                lab__sbuf_puts(b, ", ");
            dl_status_t st = format_into(ev, node, &v->items[i], true, b, depth + 1);
            if (st != DL_OK)
                return st;
        }
        lab__sbuf_puts(b, !v->tuple ? "]" : v->n == 1 ? ",)" : ")");
        if (v->name[0] != '\0')
            lab__sbuf_puts(b, ")");
        break;
    case LAB_V_DICT:
        lab__sbuf_puts(b, "{");
        for (size_t i = 0; i < v->n; i++) {
            if (i > 0)
                lab__sbuf_puts(b, ", ");
            dl_status_t st = format_into(ev, node, &v->items[i].items[0], true, b, depth + 1);
            lab__sbuf_puts(b, ": ");
            if (st == DL_OK)
                st = format_into(ev, node, &v->items[i].items[1], true, b, depth + 1);
            if (st != DL_OK)
                return st;
        }
        lab__sbuf_puts(b, "}");
        break;
    case LAB_V_WORK:
        lab__sbuf_puts(b, "<Work>");
        break;
    case LAB_V_GROUP:
        snprintf(num, sizeof(num), "<group of %d>", dl_comm_size(v->group));
        lab__sbuf_puts(b, num);
        break;
    case LAB_V_P2POP:
        lab__sbuf_puts(b, "<P2POp>");
        break;
    case LAB_V_FUNC:
        lab__sbuf_puts(b, "<function ");
        lab__sbuf_puts(b, lab_json_str(v->fn, "name", "<lambda>"));
        lab__sbuf_puts(b, ">");
        break;
    case LAB_V_NAME: {
        dl_dtype_t dt;
        if (!lab__eval_dtype_value(v, &dt))
            return lab__eval_fail_undefined(ev, node, v);
        lab__sbuf_puts(b, "torch.");
        lab__sbuf_puts(b, dl_dtype_name(dt));
        break;
    }
    }
    return DL_OK;
}

dl_status_t lab__eval_format(lab_eval_t *ev, const json_t *node, const lab_value_t *v, bool repr,
                             char **text_p)
{
    lab_sbuf_t b = {0};
    lab__sbuf_puts(&b, "");
    dl_status_t st = format_into(ev, node, v, repr, &b, 0);
    if (st == DL_OK && b.nomem) {
        snprintf(ev->error, sizeof(ev->error), "out of memory");
        st = DL_ERR_NOMEM;
    }
    if (st != DL_OK) {
        free(b.s);
        return st;
    }
    *text_p = b.s;
    return DL_OK;
}

/* ---- f-strings ---- */

dl_status_t lab__eval_fstring(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    lab_sbuf_t b = {0};
    lab__sbuf_puts(&b, "");
    size_t i;
    json_t *part;
    dl_status_t st = DL_OK;
    json_array_foreach(json_object_get(node, "fstr"), i, part)
    {
        /* {value:spec} is format(value, spec); {value!r} repr(value)
         * (then the spec, if any); {value} is str(value). */
        const json_t *expr = json_object_get(part, "format");
        const char *spec = lab_json_str(part, "spec", NULL);
        char conv = lab_json_str(part, "conv", "")[0];
        lab_value_t v;
        if ((st = lab_eval_expr(ev, expr != NULL ? expr : part, &v)) != DL_OK)
            break;
        char *text = NULL;
        st = lab__eval_format_field(ev, part, &v, conv, spec, &text);
        lab_value_clear(&v);
        if (st != DL_OK)
            break;
        lab__sbuf_puts(&b, text);
        free(text);
    }
    if (st == DL_OK && b.nomem)
        st = DL_ERR_NOMEM;
    if (st != DL_OK) {
        free(b.s);
        return st;
    }
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_STR;
    out->s = b.s;
    return DL_OK;
}
