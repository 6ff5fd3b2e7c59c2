/* The rank's environment as a torchrun script reads it: os.environ[KEY],
 * os.environ.get(KEY, DEFAULT), os.getenv(KEY, DEFAULT), KEY in
 * os.environ, and os.environ[KEY] = VALUE. Each rank is a process that its
 * launcher gave torchrun's variables (lab/ctrl/spawn.c: RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so these read
 * and write the process's own environment, as Python's os module does;
 * only the rank's own DISTLAB_ variables stay out of reach. */
#include <stdlib.h>
#include <string.h>

#include "lab/rank/eval.h"

#define fail lab__eval_fail

extern char **environ;

/* The rank's own variables (its shell's address and token, its world):
 * a script neither sees nor changes them. */
static bool own_variable(const char *name)
{
    return strncmp(name, "DISTLAB_", 8) == 0;
}

/* The string a key or a value must be, evaluated from node: malloc'd in
 * *s_p, or an error in Python's words. */
static dl_status_t env_string(lab_eval_t *ev, const json_t *node, char **s_p)
{
    lab_value_t v;
    dl_status_t st = lab_eval_expr(ev, node, &v);
    if (st != DL_OK)
        return st;
    if (lab__eval_undefined(&v))
        st = lab__eval_fail_undefined(ev, node, &v);
    else if (v.kind != LAB_V_STR)
        st = fail(ev, node, "str expected, not %s", lab__eval_type_name(&v));
    else if ((*s_p = strdup(v.s != NULL ? v.s : "")) == NULL)
        st = DL_ERR_NOMEM;
    lab_value_clear(&v);
    return st;
}

dl_status_t lab__eval_getenv(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    const json_t *args = json_object_get(node, "getenv");
    bool has_default = json_is_true(json_object_get(node, "default"));
    char *key = NULL;
    dl_status_t st = env_string(ev, json_array_get(args, 0), &key);
    if (st != DL_OK)
        return st;
    const char *found = own_variable(key) ? NULL : getenv(key);
    memset(out, 0, sizeof(*out));
    if (found != NULL) {
        out->kind = LAB_V_STR;
        out->s = strdup(found);
        st = out->s != NULL ? DL_OK : DL_ERR_NOMEM;
    } else if (!has_default) {
        st = fail(ev, node, "KeyError: '%s'", key);
    } else if (json_array_size(args) > 1) {
        st = lab_eval_expr(ev, json_array_get(args, 1), out);
    } else {
        out->kind = LAB_V_NONE;
    }
    free(key);
    return st;
}

dl_status_t lab__eval_environ(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    (void)node;
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_LIST;
    out->items = calloc(n ? n : 1, sizeof(*out->items));
    if (out->items == NULL)
        return DL_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq != NULL ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        if (own_variable(environ[i]))
            continue;
        lab_value_t *item = &out->items[out->n];
        item->kind = LAB_V_STR;
        if ((item->s = strndup(environ[i], len)) == NULL) {
            lab_value_clear(out);
            return fail(ev, node, "out of memory reading the environment");
        }
        out->n++;
    }
    return DL_OK;
}

dl_status_t lab__eval_setenv(lab_eval_t *ev, const json_t *stmt)
{
    char *key = NULL, *value = NULL;
    dl_status_t st = env_string(ev, json_object_get(stmt, "key"), &key);
    if (st == DL_OK)
        st = env_string(ev, json_object_get(stmt, "value"), &value);
    if (st == DL_OK && (key[0] == '\0' || strchr(key, '=') != NULL))
        st = fail(ev, stmt, "illegal environment variable name");
    else if (st == DL_OK && own_variable(key))
        st = fail(ev, stmt, "%s is the rank's own: a script cannot set it", key);
    if (st == DL_OK && setenv(key, value, 1) != 0)
        st = fail(ev, stmt, "cannot set %s in the environment", key);
    free(key);
    free(value);
    return st;
}
