/* Calls of what a value holds rather than of a name: f(1)(2), fs[i](x),
 * d["op"](a, b), (lambda: 1)(), and a class held by a variable
 * (cast = int; cast("5")). The call is run as a call of a name: the
 * function under a name no line can spell, in a scope of its own, or the
 * shell's function by its own name. */
#include <stdio.h>
#include <string.h>

#include "lab/lang/lang.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

#define CALLED "called value"

/* The call node again, as a call of name: {"call": name, "args", "kwargs"}
 * where node has them; marked "builtin" for the shell's own function of
 * that name, which no variable then stands for (int = float; cast(x)). */
static dl_status_t call_named(lab_eval_t *ev, const json_t *node, const char *name, bool builtin,
                              lab_value_t *out)
{
    json_t *call = json_copy((json_t *)node);
    if (call != NULL)
        json_object_del(call, "callee"); /* a call of a name has none */
    if (call == NULL || json_object_set_new(call, "call", json_string(name)) != 0 ||
        (builtin && json_object_set_new(call, "builtin", json_true()) != 0)) {
        json_decref(call);
        return DL_ERR_NOMEM;
    }
    dl_status_t st = lab_eval_expr(ev, call, out);
    json_decref(call);
    return st;
}

/* The class word of a class value ("<class 'int'>" is int), into buf; false
 * for one that cannot be called here. */
static bool class_word(const lab_value_t *v, char *buf, size_t cap)
{
    static const char *const callable[] = {"int", "float", "bool", "str", "list", "tuple", "dict"};
    if (v->kind != LAB_V_STR || strcmp(v->name, LAB_TYPE) != 0 || v->s == NULL)
        return false;
    for (size_t i = 0; i < sizeof(callable) / sizeof(callable[0]); i++) {
        snprintf(buf, cap, "<class '%s'>", callable[i]);
        if (strcmp(v->s, buf) == 0) {
            snprintf(buf, cap, "%s", callable[i]);
            return true;
        }
    }
    return false;
}

bool lab__eval_calls_class(const lab_value_t *v)
{
    char word[32];
    return class_word(v, word, sizeof(word));
}

dl_status_t lab__eval_call_class(lab_eval_t *ev, const json_t *node, const lab_value_t *cls,
                                 lab_value_t *out)
{
    char word[32];
    memset(out, 0, sizeof(*out));
    if (!class_word(cls, word, sizeof(word)))
        return fail(ev, node, "'%s' cannot be called here", cls->s != NULL ? cls->s : "type");
    return call_named(ev, node, word, true, out);
}

dl_status_t lab__eval_call_value(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    const json_t *callee = json_object_get(node, "callee");
    lab_value_t fn;
    memset(out, 0, sizeof(*out));
    dl_status_t st = lab_eval_expr(ev, callee, &fn);
    if (st != DL_OK)
        return st;
    if (fn.kind == LAB_V_FUNC) {
        /* bound in a scope of its own, where the call's arguments still
         * read the caller's names */
        lab_scope_t sc = {.up = ev->scope};
        if ((st = lab_vars_set(&sc.vars, CALLED, &fn)) == DL_OK) {
            lab_scope_t *saved = ev->scope;
            ev->scope = &sc;
            st = call_named(ev, node, CALLED, false, out);
            ev->scope = saved;
        }
        lab_vars_clear(&sc.vars);
        lab_value_clear(&fn); /* not taken when the set failed */
        return st;
    }
    if (fn.kind == LAB_V_NAME) {
        /* (len)(x), or a name defined nowhere */
        const lab_cmd_t *entry = lab_cmd_find(fn.name);
        if (entry != NULL && (entry->flags & LAB_CMD_FUNCTION) &&
            !(entry->flags & LAB_CMD_METHOD_ONLY)) {
            /* the keywords the parser checks in len(x, k=1), checked here */
            const char *kw;
            const json_t *unused;
            json_object_foreach((json_t *)json_object_get(node, "kwargs"), kw, unused)
            {
                if (!lab_cmd_has_keyword(entry, kw)) {
                    st =
                        fail(ev, node, "%s() got an unexpected keyword argument '%s'", fn.name, kw);
                    lab_value_clear(&fn);
                    return st;
                }
            }
            char name[sizeof(fn.name)];
            snprintf(name, sizeof(name), "%s", fn.name);
            lab_value_clear(&fn);
            return call_named(ev, node, name, true, out);
        }
        st = lab__eval_fail_undefined(ev, callee, &fn);
    } else if (lab__eval_calls_class(&fn)) {
        st = lab__eval_call_class(ev, node, &fn, out);
    } else {
        st = fail(ev, node, "'%s' object is not callable", lab__eval_type_name(&fn));
    }
    lab_value_clear(&fn);
    return st;
}
