#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/rank/pins.h"
#include "lab/rank/values.h"

void lab_value_clear(lab_value_t *v)
{
    if (v->borrowed) {
        memset(v, 0, sizeof(*v));
        return;
    }
    switch (v->kind) {
    case LAB_V_TENSOR:
        if (!lab_pins_keep(v->t)) /* else async work still uses it: the table frees it */
            dl_tensor_free(v->t);
        break;
    case LAB_V_LIST:
    case LAB_V_DICT:
        for (size_t i = 0; i < v->n; i++)
            lab_value_clear(&v->items[i]);
        free(v->items);
        break;
    case LAB_V_WORK:
    case LAB_V_GROUP:
        if (v->refs != NULL && --*v->refs > 0)
            break; /* another value still holds it */
        free(v->refs);
        if (v->kind == LAB_V_WORK) {
            dl_work_free(v->work); /* waits for it */
            lab_pins_release(v->work);
        } else if (!v->i)
            dl_comm_destroy(v->group); /* not the world's (dist.group.WORLD) */
        break;
    case LAB_V_STR:
        free(v->s);
        break;
    case LAB_V_P2POP:
        if (v->t != NULL && !lab_pins_keep(v->t)) /* an isend's tensor, taken when made */
            dl_tensor_free(v->t);
        json_decref((json_t *)v->fn);
        break;
    case LAB_V_FUNC:
        json_decref((json_t *)v->fn);
        for (size_t i = 0; i < v->n; i++) /* what it was made with */
            lab_value_clear(&v->items[i]);
        free(v->items);
        break;
    default:
        break;
    }
    memset(v, 0, sizeof(*v));
}

dl_status_t lab_value_copy(const lab_value_t *v, dl_allocator_t *alloc, lab_value_t *out_p)
{
    lab_value_t out = *v;
    out.borrowed = false;
    out.binding = 0; /* a new object, bound anew where it is bound */
    if (v->kind == LAB_V_STR) {
        if ((out.s = strdup(v->s != NULL ? v->s : "")) == NULL)
            return DL_ERR_NOMEM;
    } else if (v->kind == LAB_V_FUNC || v->kind == LAB_V_P2POP) {
        if (v->kind == LAB_V_P2POP && v->t != NULL) {
            dl_status_t st = dl_tensor_clone(v->t, alloc, &out.t);
            if (st != DL_OK)
                return st;
        }
        json_incref((json_t *)v->fn);
        if (v->kind == LAB_V_FUNC && v->items != NULL) {
            out.fn = NULL; /* until the items are copied: a failure releases nothing twice */
            out.n = 0;
            if ((out.items = calloc(v->n ? v->n : 1, sizeof(*out.items))) == NULL) {
                json_decref((json_t *)v->fn);
                return DL_ERR_NOMEM;
            }
            for (size_t i = 0; i < v->n; i++) {
                dl_status_t st = lab_value_copy(&v->items[i], alloc, &out.items[i]);
                if (st != DL_OK) {
                    lab_value_clear(&out);
                    json_decref((json_t *)v->fn);
                    return st;
                }
                out.n = i + 1;
            }
            out.fn = v->fn;
        }
    } else if (v->kind == LAB_V_TENSOR) {
        dl_status_t st = dl_tensor_clone(v->t, alloc, &out.t);
        if (st != DL_OK)
            return st;
    } else if (v->kind == LAB_V_LIST || v->kind == LAB_V_DICT) {
        out.items = calloc(v->n ? v->n : 1, sizeof(*out.items));
        if (out.items == NULL)
            return DL_ERR_NOMEM;
        for (size_t i = 0; i < v->n; i++) {
            dl_status_t st = lab_value_copy(&v->items[i], alloc, &out.items[i]);
            if (st != DL_OK) {
                out.n = i;
                lab_value_clear(&out);
                return st;
            }
        }
    } else if (v->kind == LAB_V_WORK || v->kind == LAB_V_GROUP) {
        if (v->refs == NULL)
            return DL_ERR_UNSUPPORTED; /* a handle no other value may hold */
        ++*v->refs;
    }
    *out_p = out;
    return DL_OK;
}

dl_status_t lab_value_new_list(lab_value_t *out, size_t n)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_LIST;
    out->items = calloc(n ? n : 1, sizeof(*out->items));
    return out->items != NULL ? DL_OK : DL_ERR_NOMEM;
}

dl_status_t lab_value_share(lab_value_t *v)
{
    if ((v->kind != LAB_V_WORK && v->kind != LAB_V_GROUP) || v->refs != NULL)
        return DL_OK;
    if ((v->refs = malloc(sizeof(*v->refs))) == NULL)
        return DL_ERR_NOMEM;
    *v->refs = 1;
    return DL_OK;
}

const char *lab_vkind_name(lab_vkind_t k)
{
    static const char *const names[] = {"None",     "int",   "float", "bool", "tensor",
                                        "list",     "work",  "group", "name", "str",
                                        "function", "P2POp", "dict"};
    return (size_t)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *lab_vkind_a(lab_vkind_t k)
{
    static const char *const names[] = {
        "None",    "an int", "a float",  "a bool",     "a tensor", "a list", "a work handle",
        "a group", "a name", "a string", "a function", "a P2POp",  "a dict"};
    return (size_t)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

lab_value_t *lab_vars_get(lab_vars_t *vs, const char *name)
{
    for (size_t i = 0; i < vs->n; i++)
        if (strcmp(vs->vars[i].name, name) == 0)
            return &vs->vars[i].v;
    return NULL;
}

dl_status_t lab_vars_reserve(lab_vars_t *vs)
{
    if (vs->n < vs->cap)
        return DL_OK;
    size_t cap = vs->cap ? vs->cap * 2 : 16;
    lab_var_t *n = realloc(vs->vars, cap * sizeof(*n));
    if (n == NULL)
        return DL_ERR_NOMEM;
    vs->vars = n;
    vs->cap = cap;
    return DL_OK;
}

void lab_value_number(lab_value_t *v)
{
    static uint64_t bindings; /* one rank, one session: numbered per process */
    v->binding = ++bindings;
}

dl_status_t lab_vars_set(lab_vars_t *vs, const char *name, lab_value_t *v)
{
    lab_value_number(v);
    lab_value_t *old = lab_vars_get(vs, name);
    if (old != NULL) {
        lab_value_clear(old);
        *old = *v;
        memset(v, 0, sizeof(*v));
        return DL_OK;
    }
    dl_status_t st = lab_vars_reserve(vs);
    if (st != DL_OK)
        return st;
    lab_var_t *slot = &vs->vars[vs->n++];
    snprintf(slot->name, sizeof(slot->name), "%s", name);
    slot->v = *v;
    memset(v, 0, sizeof(*v));
    return DL_OK;
}

bool lab_vars_del(lab_vars_t *vs, const char *name)
{
    for (size_t i = 0; i < vs->n; i++) {
        if (strcmp(vs->vars[i].name, name) != 0)
            continue;
        lab_value_clear(&vs->vars[i].v);
        /* the others keep their order, which is the order they were bound in */
        memmove(&vs->vars[i], &vs->vars[i + 1], (vs->n - i - 1) * sizeof(vs->vars[0]));
        vs->n--;
        return true;
    }
    return false;
}

void lab_vars_clear(lab_vars_t *vs)
{
    /* Work handles first: they may still use tensors and groups. */
    for (size_t i = 0; i < vs->n; i++)
        if (vs->vars[i].v.kind == LAB_V_WORK)
            lab_value_clear(&vs->vars[i].v);
    for (size_t i = vs->n; i-- > 0;)
        lab_value_clear(&vs->vars[i].v);
    free(vs->vars);
    memset(vs, 0, sizeof(*vs));
}
