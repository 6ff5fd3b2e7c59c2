/* Python's key= of sorted(), list.sort(), min() and max(): a function of
 * one argument, called once an item: a def, a lambda, one of the shell's
 * functions by its name (key=len, key=abs) or a class (key=str, key=int). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lang/lang.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* Names no line can spell (they hold a space): the call below reads the
 * function and the item from a scope of its own under these. */
#define KEY_FN   "key function"
#define KEY_ITEM "key item"

/* A call of fn (a function's name, or KEY_FN) on KEY_ITEM, placed where
 * the key= is, for its messages. */
static json_t *key_call(const json_t *at, const char *fn)
{
    /* "o" takes the argument's reference, also when the pack fails */
    json_t *call = json_pack("{s:s, s:[o]}", "call", fn, "args", lab__eval_name_at(at, KEY_ITEM));
    if (call != NULL && !lab__eval_place(call, at)) {
        json_decref(call);
        return NULL;
    }
    return call;
}

/* A call of the value under KEY_FN (a class: str(item)), as fn(item) is. */
static json_t *key_callee(const json_t *at)
{
    json_t *call = json_pack("{s:o, s:[o]}", "callee", lab__eval_name_at(at, KEY_FN), "args",
                             lab__eval_name_at(at, KEY_ITEM));
    if (call != NULL && !lab__eval_place(call, at)) {
        json_decref(call);
        return NULL;
    }
    return call;
}

dl_status_t lab__eval_keys(lab_eval_t *ev, const json_t *key, const lab_value_t *items, size_t n,
                           lab_value_t **keys_p)
{
    *keys_p = NULL;
    if (key == NULL)
        return DL_OK;
    lab_value_t fn;
    dl_status_t st = lab_eval_expr(ev, key, &fn);
    if (st != DL_OK)
        return st;
    const char *name = lab_json_str(key, "name", NULL);
    if (fn.kind == LAB_V_NONE)
        return DL_OK; /* key=None: the items themselves */
    if (fn.kind == LAB_V_NAME && (name == NULL || lab_cmd_find(name) == NULL)) {
        st = lab__eval_fail_undefined(ev, key, &fn); /* key=nope */
        lab_value_clear(&fn);
        return st;
    }
    bool cls = lab__eval_calls_class(&fn);
    if (fn.kind != LAB_V_FUNC && fn.kind != LAB_V_NAME && !cls) {
        st = fail(ev, key, "'%s' object is not callable (key= takes a function of one argument)",
                  lab__eval_type_name(&fn));
        lab_value_clear(&fn);
        return st;
    }
    json_t *call = cls ? key_callee(key) : key_call(key, fn.kind == LAB_V_FUNC ? KEY_FN : name);
    lab_value_t *keys = calloc(n > 0 ? n : 1, sizeof(*keys));
    lab_scope_t sc = {.up = ev->scope};
    if (call == NULL || keys == NULL)
        st = DL_ERR_NOMEM;
    if (st == DL_OK && (fn.kind == LAB_V_FUNC || cls))
        st = lab_vars_set(&sc.vars, KEY_FN, &fn);
    lab_value_clear(&fn);
    lab_scope_t *saved = ev->scope;
    ev->scope = &sc;
    for (size_t i = 0; i < n && st == DL_OK; i++) {
        /* the item itself, as Python passes it: not a copy */
        lab_value_t item = items[i];
        item.borrowed = true;
        if ((st = lab_vars_set(&sc.vars, KEY_ITEM, &item)) == DL_OK)
            st = lab_eval_expr(ev, call, &keys[i]);
        if (st == DL_OK && keys[i].kind == LAB_V_NAME)
            st = lab__eval_fail_undefined(ev, key, &keys[i]);
    }
    ev->scope = saved;
    lab_vars_clear(&sc.vars);
    json_decref(call);
    if (st != DL_OK) {
        for (size_t i = 0; keys != NULL && i < n; i++)
            lab_value_clear(&keys[i]);
        free(keys);
        return st;
    }
    *keys_p = keys;
    return DL_OK;
}

void lab__eval_keys_free(lab_value_t *keys, size_t n)
{
    for (size_t i = 0; keys != NULL && i < n; i++)
        lab_value_clear(&keys[i]);
    free(keys);
}
