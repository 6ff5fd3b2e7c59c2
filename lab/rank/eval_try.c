/* Python's try/except/else/finally and raise on a rank. An error is the
 * message the evaluator wrote (ev->error); its class is read from its
 * words (lab_lang_exc_class_of), and `as e` binds str(e), the message
 * without its place and its class. Ctrl-C, a lost shell and a line the
 * shell gave up are never caught: they end the line, as they must. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lang/lang.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* The message of an error without its place ("column 7: ", "line 2,
 * column 3: ", "in f(), line 2 of its def, column 9: "). */
static const char *message_of(const char *error)
{
    if (strncmp(error, "column ", 7) != 0 && strncmp(error, "line ", 5) != 0 &&
        strncmp(error, "in ", 3) != 0)
        return error;
    const char *col = strstr(error, "column ");
    if (col == NULL)
        return error;
    col += 7;
    while (*col >= '0' && *col <= '9')
        col++;
    return strncmp(col, ": ", 2) == 0 ? col + 2 : error;
}

/* str(e): the message without its class ("KeyError: 'k'" gives "'k'"). */
static const char *str_of(const char *message, const char *cls)
{
    size_t n = strlen(cls);
    if (strncmp(message, cls, n) != 0)
        return message;
    return message[n] == '\0' ? "" : strncmp(message + n, ": ", 2) == 0 ? message + n + 2 : message;
}

static bool catchable(const lab_eval_t *ev, dl_status_t st)
{
    const lab_rank_t *r = ev->r;
    bool given_up = r->cur_batch != 0 && r->cur_batch == r->failed_batch;
    return st != DL_OK && st != DL_ERR_NOMEM && st != DL_ERR_CLOSED && !lab_rank_interrupted() &&
           !given_up;
}

/* The handler of handlers that catches cls, or NULL. */
static const json_t *handler_for(const json_t *handlers, const char *cls)
{
    size_t i;
    const json_t *h;
    json_array_foreach(handlers, i, h)
    {
        const json_t *classes = json_object_get(h, "classes");
        if (classes == NULL)
            return h; /* except: */
        size_t k;
        const json_t *c;
        json_array_foreach(classes, k, c)
        {
            if (lab_lang_exc_catches(json_string_value(c), cls))
                return h;
        }
    }
    return NULL;
}

/* Runs handler h for the error in ev->error, of class cls: its name bound
 * to str(e) while it runs, as Python binds and then deletes it. */
static dl_status_t handle(lab_eval_t *ev, const json_t *h, const char *cls)
{
    char caught[sizeof(ev->error)];
    memcpy(caught, ev->error, sizeof(caught));
    ev->error[0] = '\0';
    ev->r->error_quiet = false; /* nothing failed, once caught */
    const char *as = lab_json_str(h, "as", NULL);
    lab_vars_t *vars = lab__eval_vars(ev);
    dl_status_t st = DL_OK;
    if (as != NULL) {
        lab_value_t e = {.kind = LAB_V_STR, .s = strdup(str_of(message_of(caught), cls))};
        if (e.s == NULL)
            return DL_ERR_NOMEM;
        st = lab_vars_set(vars, as, &e);
        lab_value_clear(&e);
        if (st != DL_OK)
            return st;
    }
    const char *outer = ev->handling;
    ev->handling = caught;
    st = lab__eval_body(ev, json_object_get(h, "body"));
    ev->handling = outer;
    if (as != NULL) {
        dl_status_t ust = lab__eval_unbind(ev, as);
        if (st == DL_OK && ust != DL_ERR_NOT_FOUND) /* the body may have deleted it */
            st = ust;
    }
    return st;
}

dl_status_t lab__eval_try(lab_eval_t *ev, const json_t *stmt)
{
    const json_t *handlers = json_object_get(stmt, "handlers");
    const json_t *fin = json_object_get(stmt, "finally");
    ev->guarded += fin != NULL;
    dl_status_t st = lab__eval_body(ev, json_object_get(stmt, "body"));
    const json_t *h = NULL;
    const char *cls = NULL;
    if (handlers != NULL && catchable(ev, st)) {
        cls = lab_lang_exc_class_of(message_of(ev->error));
        h = handler_for(handlers, cls);
    }
    if (h != NULL)
        st = handle(ev, h, cls);
    else if (st == DL_OK && !ev->returning && ev->jump == LAB_JUMP_NONE &&
             json_object_get(stmt, "else") != NULL)
        st = lab__eval_body(ev, json_object_get(stmt, "else"));
    ev->guarded -= fin != NULL;
    if (fin == NULL)
        return st;
    /* finally runs whatever happened; what it does itself (an error, a
     * return, a break) takes the place of what was pending, as in Python */
    char pending[sizeof(ev->error)];
    memcpy(pending, ev->error, sizeof(pending));
    bool returning = ev->returning;
    int jump = ev->jump;
    lab_value_t ret = ev->ret;
    memset(&ev->ret, 0, sizeof(ev->ret));
    ev->returning = false;
    ev->jump = LAB_JUMP_NONE;
    ev->error[0] = '\0';
    /* a raise alone in finally raises again what is on its way out */
    const char *outer = ev->handling;
    if (st != DL_OK)
        ev->handling = pending;
    dl_status_t fst = lab__eval_body(ev, fin);
    ev->handling = outer;
    if (fst != DL_OK || ev->returning || ev->jump != LAB_JUMP_NONE) {
        lab_value_clear(&ret);
        ev->r->error_quiet = false; /* what was pending is dropped, quiet or not */
        return fst;
    }
    ev->returning = returning;
    ev->jump = jump;
    ev->ret = ret;
    memcpy(ev->error, pending, sizeof(pending));
    return st;
}

dl_status_t lab__eval_raise(lab_eval_t *ev, const json_t *stmt)
{
    const char *cls = lab_json_str(stmt, "class", NULL);
    if (cls == NULL) {
        /* raise alone: what the except clause around it caught */
        if (ev->handling == NULL)
            return fail(ev, stmt, "RuntimeError: No active exception to reraise");
        snprintf(ev->error, sizeof(ev->error), "%s", ev->handling);
        return DL_ERR_INVALID;
    }
    const json_t *msg = json_object_get(stmt, "msg");
    if (msg == NULL)
        return fail(ev, stmt, "%s", cls);
    lab_value_t v;
    dl_status_t st = lab_eval_expr(ev, msg, &v);
    if (st != DL_OK)
        return st;
    char *text = NULL;
    /* a KeyError shows its key as repr writes it, KeyError: 'k' */
    st = lab__eval_undefined(&v)
             ? lab__eval_fail_undefined(ev, msg, &v)
             : lab__eval_format(ev, msg, &v, strcmp(cls, "KeyError") == 0, &text);
    lab_value_clear(&v);
    if (st == DL_OK)
        st = fail(ev, stmt, "%s: %s", cls, text);
    free(text);
    return st;
}
