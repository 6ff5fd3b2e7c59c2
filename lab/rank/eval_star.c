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
#include "lab/rank/pins.h"

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

/* The most items starred arguments give one call: each is a name of the
 * call's scope, found by a walk of its names. */
#define STAR_MAX 4096

/* The tensors of list variables a call was given through *l: the list's
 * own (a tensor the call changes is the list's), lent as a loop's item is
 * (lab/rank/pins.h), so that the list may drop one meanwhile. */
typedef struct {
    dl_tensor_t **t;
    size_t n, cap;
} lent_t;

static bool lend(lent_t *l, dl_tensor_t *t)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        dl_tensor_t **grown = realloc(l->t, cap * sizeof(*grown));
        if (grown == NULL)
            return false;
        l->t = grown;
        l->cap = cap;
    }
    if (!lab_pins_lend(t))
        return false;
    l->t[l->n++] = t;
    return true;
}

/* The call has ended: a tensor its list dropped meanwhile is freed. */
static void give_back_all(lent_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (lab_pins_unlend(l->t[i]) && !lab_pins_keep(l->t[i]))
            dl_tensor_free(l->t[i]);
    free(l->t);
}

/* The items of one starred argument bound in sc, their names appended to
 * args; *k_p counts the names. A list variable's tensors are lent (above),
 * its other items copied; anything else is evaluated. */
static dl_status_t bind_items(lab_eval_t *ev, const json_t *star, lab_scope_t *sc, json_t *args,
                              size_t *k_p, lent_t *lent)
{
    const json_t *expr = json_object_get(star, "star");
    lab_value_t *var = lab__eval_entry(ev, expr), own = {0};
    bool list_var = var != NULL && var->kind == LAB_V_LIST;
    dl_status_t st = DL_OK;
    if (!list_var && (st = lab_eval_expr(ev, expr, &own)) != DL_OK)
        return st;
    const lab_value_t *seq = list_var ? var : &own;
    const lab_value_t *undefined = lab__eval_undefined_in(seq);
    int64_t n = lab__eval_seq_len(seq);
    if (undefined != NULL)
        st = lab__eval_fail_undefined(ev, expr, undefined);
    else if (n < 0)
        st = fail(ev, star, "argument after * must be an iterable, not %s",
                  lab__eval_type_name(seq));
    else if (*k_p + (size_t)n > STAR_MAX)
        st = fail(ev, star, "too many arguments from * (at most %d here)", STAR_MAX);
    for (int64_t i = 0; i < n && st == DL_OK; i++) {
        char name[32];
        snprintf(name, sizeof(name), "star %zu", (*k_p)++);
        lab_value_t item = {0};
        if (list_var && var->items[i].kind == LAB_V_TENSOR && lend(lent, var->items[i].t)) {
            item = var->items[i];
            item.borrowed = true;
        } else if (list_var) {
            st = lab_value_copy(&var->items[i], dl_comm_allocator(ev->r->comm), &item);
        } else if (own.kind == LAB_V_LIST) {
            item = own.items[i]; /* taken: own's copy is the call's */
            memset(&own.items[i], 0, sizeof(own.items[i]));
        } else {
            st = lab__eval_seq_item(ev, star, &own, i, &item); /* a row, a character */
        }
        if (st != DL_OK)
            break;
        json_t *arg = lab__eval_name_at(star, name);
        if (arg == NULL || json_array_append_new(args, arg) != 0)
            st = DL_ERR_NOMEM;
        if (st == DL_OK)
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
    lent_t lent = {0};
    size_t k = 0;
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
            st = bind_items(ev, a, &sc, args, &k, &lent);
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
    give_back_all(&lent);
    json_decref(args);
    json_decref(copy);
    return st;
}
