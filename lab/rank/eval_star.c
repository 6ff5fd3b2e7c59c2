/* Python's f(*args) and print(*l): a call whose arguments hold a starred
 * iterable runs as the call of its items. The items are bound in a scope
 * of the call's own, under names no line can spell, and the call runs
 * with each starred argument replaced by the names of its items, so that
 * every function and print take them as they take any argument. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

bool lab__eval_has_star(const json_t *args)
{
    size_t i;
    const json_t *a;
    json_array_foreach(args, i, a)
    {
        if (json_object_get(a, "star") != NULL)
            return true;
    }
    return false;
}

/* An argument naming what sc holds as name, placed where at is. */
static json_t *name_arg(const json_t *at, const char *name)
{
    json_t *arg = json_pack("{s:s}", "name", name);
    const char *keys[] = {"col", "line"};
    for (size_t k = 0; arg != NULL && k < 2; k++) {
        json_t *v = json_object_get(at, keys[k]);
        if (v != NULL && json_object_set(arg, keys[k], v) != 0) {
            json_decref(arg);
            return NULL;
        }
    }
    return arg;
}

/* The items of one starred argument bound in sc, their names appended to
 * args; *k_p counts the names. A list variable's items are its own (a
 * tensor changed in the call is the list's), lent as a function's list
 * argument is; anything else is evaluated. */
static dl_status_t bind_items(lab_eval_t *ev, const json_t *star, lab_scope_t *sc, json_t *args,
                              size_t *k_p)
{
    const json_t *expr = json_object_get(star, "star");
    lab_value_t *var = lab__eval_entry(ev, expr), own = {0};
    bool lent = var != NULL && var->kind == LAB_V_LIST;
    dl_status_t st = DL_OK;
    if (lent && (st = lab__eval_lend(ev, var)) != DL_OK)
        return st;
    if (!lent && (st = lab_eval_expr(ev, expr, &own)) != DL_OK)
        return st;
    const lab_value_t *seq = lent ? var : &own;
    int64_t n = lab__eval_seq_len(seq);
    if (seq->kind == LAB_V_NAME)
        st = lab__eval_fail_undefined(ev, expr, seq);
    else if (n < 0)
        st = fail(ev, star, "argument after * must be an iterable, not %s",
                  lab__eval_type_name(seq));
    else if (*k_p + (size_t)n > LAB_LIST_MAX)
        st = fail(ev, star, "too many arguments (at most %u)", LAB_LIST_MAX);
    for (int64_t i = 0; i < n && st == DL_OK; i++) {
        char name[32];
        snprintf(name, sizeof(name), "star %zu", (*k_p)++);
        lab_value_t item = {0};
        if (lent) {
            item = var->items[i];
            item.borrowed = true;
        } else if (own.kind == LAB_V_LIST) {
            item = own.items[i]; /* taken: own's copy is the call's */
            memset(&own.items[i], 0, sizeof(own.items[i]));
        } else if ((st = lab__eval_seq_item(ev, star, &own, i, &item)) != DL_OK) {
            break; /* a tensor's row, a string's character */
        }
        json_t *arg = name_arg(star, name);
        if (arg == NULL || json_array_append_new(args, arg) != 0)
            st = DL_ERR_NOMEM;
        if (st == DL_OK && (st = lab_vars_reserve(&sc->vars)) == DL_OK)
            st = lab_vars_set(&sc->vars, name, &item);
        lab_value_clear(&item);
    }
    lab_value_clear(&own);
    return st;
}

dl_status_t lab__eval_starred(lab_eval_t *ev, const json_t *node, const char *key,
                              lab_star_run_fn run, void *arg)
{
    /* node, or the command inside it (print(*l) is a command statement) */
    const json_t *call = key != NULL ? json_object_get(node, key) : node;
    json_t *args = json_array(), *copy = json_copy((json_t *)node), *call_copy = NULL;
    lab_scope_t sc = {.up = ev->scope};
    size_t lent_mark = ev->n_lent, k = 0;
    dl_status_t st = args != NULL && copy != NULL ? DL_OK : DL_ERR_NOMEM;
    if (st == DL_OK && key != NULL &&
        ((call_copy = json_copy((json_t *)call)) == NULL ||
         json_object_set_new(copy, key, call_copy) != 0))
        st = DL_ERR_NOMEM;
    /* the arguments in order: the starred ones evaluated here, the others
     * where the call evaluates them */
    size_t i;
    const json_t *a;
    json_array_foreach(json_object_get(call, "args"), i, a)
    {
        if (st != DL_OK)
            break;
        if (json_object_get(a, "star") != NULL)
            st = bind_items(ev, a, &sc, args, &k);
        else if (json_array_append(args, (json_t *)a) != 0)
            st = DL_ERR_NOMEM;
    }
    if (st == DL_OK && json_object_set(key != NULL ? call_copy : copy, "args", args) != 0)
        st = DL_ERR_NOMEM;
    /* print(*[]) writes an empty line, as print() does */
    if (st == DL_OK && key != NULL && json_array_size(args) == 0 &&
        json_object_size(json_object_get(call, "kwargs")) == 0 &&
        json_object_set_new(call_copy, "empty_call", json_true()) != 0)
        st = DL_ERR_NOMEM;
    if (st == DL_OK) {
        lab_scope_t *saved = ev->scope;
        ev->scope = &sc;
        st = run(ev, copy, arg);
        ev->scope = saved;
    }
    lab_vars_clear(&sc.vars);
    ev->n_lent = lent_mark;
    json_decref(args);
    json_decref(copy);
    return st;
}
