/* Statements of the shell language on a rank: assignments and commands
 * (print, tensors, point to point, collectives, wait). Tensors that a
 * command changes are reported as "after" snapshots, values printed as
 * "print" snapshots; the controller shows them in rank order. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "lab/rank/eval.h"
#include "lab/rank/pins.h"
#include "lab/proto/proto.h"

#define fail lab__eval_fail

/* ---- reading arguments ---- */

typedef struct {
    lab_eval_t *ev;
    const json_t *cmd;
    const char *name;
    const json_t *args;
    const json_t *kwargs;
    dl_comm_t *comm; /* the group= communicator, or the world */
    /* Positional arguments that are slices (send t[2:4] dst=1): a tensor
     * over the variable's memory each, and the variable, reported after. */
    dl_tensor_t view_t[2];
    lab_value_t view_v[2];
    const char *view_of[2];
    bool skip;           /* this rank is not in group= */
    lab_value_t group_v; /* group= of an expression (groups[i]), while the command runs */
    bool async;
    bool printing;   /* print: what it reports shows even inside a function */
    dl_work_t *work; /* what an async call returns */
    /* The tensors an async call reads or writes: pinned while its work
     * runs (lab/rank/pins.h), so that dropping them frees nothing it uses */
    const dl_tensor_t *uses[2];
    /* Inputs given as computed values (dist.send(t * 2, dst=1)), freed
     * when the command ends (kept while async work reads them) */
    lab_value_t temp[2];
    /* A P2POp's tensor taken when the P2POp was made (batch_isend_irecv):
     * the isend's positional tensor, in place of its expression */
    const lab_value_t *given;
    json_int_t irecv_note;  /* work is an irecv's: its notice in the shell's ledger; 0: none */
    const char *irecv_into; /* work is an irecv's: the variable it receives into */
    int sender;             /* a blocking recv's sender, a world rank; -1: none */
} cmd_t;

static const json_t *arg(const cmd_t *c, size_t i)
{
    return json_array_get(c->args, i);
}

static const json_t *kw(const cmd_t *c, const char *key)
{
    return json_object_get(c->kwargs, key);
}

/* The tensor variable a positional argument names (collectives work in
 * place), or a contiguous slice of one, as torch.distributed takes any
 * contiguous tensor. */
static dl_status_t var_tensor(cmd_t *c, size_t i, const char *role, lab_value_t **v_p)
{
    const json_t *node = arg(c, i);
    const char *name = lab_json_str(node, "name", NULL);
    if (node == NULL)
        return fail(c->ev, c->cmd, "%s needs a %s%stensor", c->name, role, role[0] ? " " : "");
    if (json_object_get(node, "index") != NULL && i < 2) {
        lab_view_t v;
        lab_value_t *root;
        dl_status_t st = lab__eval_view(c->ev, node, &root, &c->view_of[i], &v);
        if (st != DL_OK)
            return st;
        if (!lab__view_contiguous(&v))
            return fail(c->ev, node,
                        "%s: tensors must be contiguous (a column or a slice with a step is not)",
                        c->name);
        lab__view_tensor(&v, &c->view_t[i]);
        memset(&c->view_v[i], 0, sizeof(c->view_v[i]));
        c->view_v[i].kind = LAB_V_TENSOR;
        c->view_v[i].borrowed = true;
        c->view_v[i].t = &c->view_t[i];
        *v_p = &c->view_v[i];
        return DL_OK;
    }
    if (name == NULL)
        return fail(c->ev, node,
                    "%s: the %s%stensor must be a variable or a slice of one, not a computed "
                    "value (bind it first: x = ...)",
                    c->name, role, role[0] ? " " : "");
    lab_value_t *v = lab__eval_var(c->ev, name);
    if (v == NULL)
        return fail(c->ev, node, "'%s' is not defined", name);
    if (v->kind != LAB_V_TENSOR)
        return fail(c->ev, node, "'%s' is %s, not a tensor", name, lab_vkind_a(v->kind));
    *v_p = v;
    return DL_OK;
}

/* An input tensor: as var_tensor, or a computed value (t * 2,
 * torch.ones(2)), which nothing reads back and so needs no variable. */
static dl_status_t in_tensor(cmd_t *c, size_t i, const char *role, lab_value_t **v_p)
{
    const json_t *node = arg(c, i);
    if (i == 0 && c->given != NULL) {
        *v_p = (lab_value_t *)c->given; /* borrowed, read only: an isend's */
        return DL_OK;
    }
    const json_t *root = node;
    while (root != NULL && json_object_get(root, "index") != NULL)
        root = json_object_get(root, "index");
    /* t, t[2:4], bufs[i]: a variable's (or its item's) memory, as read in
     * place; (t * 2)[0:2] is computed, indexed and all */
    if (node == NULL || i >= 2 || json_object_get(root, "name") != NULL)
        return var_tensor(c, i, role, v_p);
    lab_value_t *v = &c->temp[i];
    dl_status_t st = lab_eval_expr(c->ev, node, v);
    if (st != DL_OK)
        return st;
    if (v->kind != LAB_V_TENSOR)
        return fail(c->ev, node, "%s: the %s%stensor is %s, not a tensor", c->name, role,
                    role[0] ? " " : "", lab_vkind_a(v->kind));
    *v_p = v;
    return DL_OK;
}

static dl_status_t int_kw(cmd_t *c, const char *key, bool required, int dflt, int *out)
{
    const json_t *node = kw(c, key);
    if (node == NULL) {
        if (required)
            return fail(c->ev, c->cmd, "%s needs %s=RANK", c->name, key);
        *out = dflt;
        return DL_OK;
    }
    lab_value_t v;
    dl_status_t st = lab_eval_expr(c->ev, node, &v);
    if (st != DL_OK)
        return st;
    bool ok = v.kind == LAB_V_INT;
    *out = (int)v.i;
    lab_value_clear(&v);
    return ok ? DL_OK : fail(c->ev, node, "%s= takes an integer", key);
}

/* src=, dst=: a rank of the world, as torch numbers them with group= too;
 * the call takes the rank's number in its group (c->comm). */
static dl_status_t rank_kw(cmd_t *c, const char *key, bool required, int dflt, int *out)
{
    dl_status_t st = int_kw(c, key, required, dflt, out);
    if (st != DL_OK || c->comm == c->ev->r->comm || kw(c, key) == NULL)
        return st;
    int g = dl_comm_group_rank(c->comm, *out);
    if (g < 0)
        return fail(c->ev, kw(c, key), "%s=%d: the global rank %d is not part of the group", key,
                    *out, *out);
    *out = g;
    return DL_OK;
}

/* An op's text, "max" or "ReduceOp.MAX", as op it names. */
static bool op_of_text(const char *s, dl_op_t *op)
{
    return dl_op_parse(strncmp(s, "ReduceOp.", 9) == 0 ? s + 9 : s, op) == DL_OK;
}

static dl_status_t op_kw(cmd_t *c, dl_op_t *op)
{
    const json_t *node = kw(c, "op");
    *op = DL_OP_SUM;
    if (node == NULL)
        return DL_OK;
    const char *word = lab_json_str(node, "name", NULL);
    const lab_value_t *var = word != NULL ? lab__eval_var(c->ev, word) : NULL;
    bool holds_op = var != NULL && var->kind == LAB_V_STR && strcmp(var->name, LAB_REDUCE_OP) == 0;
    /* an op's own name (op=avg, op=dist.ReduceOp.MAX) is the op, where no
     * variable of that name holds one */
    if (word != NULL && !holds_op && op_of_text(word, op))
        return DL_OK;
    if (word != NULL && var == NULL)
        return fail(c->ev, node, "unknown op '%s'; ops: %s", word, dl_op_all_names());
    /* a value: op = dist.ReduceOp.MAX before, ops[i], a loop's op */
    lab_value_t v;
    dl_status_t st = lab_eval_expr(c->ev, node, &v);
    if (st != DL_OK)
        return st;
    bool ok = v.kind == LAB_V_STR && v.s != NULL && strcmp(v.name, LAB_REDUCE_OP) == 0 &&
              op_of_text(v.s, op);
    if (!ok)
        st = fail(c->ev, node, "op= takes a dist.ReduceOp (ReduceOp.SUM, ...), not %s",
                  lab__eval_type_name(&v));
    lab_value_clear(&v);
    return st;
}

static dl_status_t bool_kw(cmd_t *c, const char *key, bool *out)
{
    const json_t *node = kw(c, key);
    *out = false;
    if (node == NULL)
        return DL_OK;
    if (json_object_get(node, "bool") == NULL)
        return fail(c->ev, node, "%s= takes true or false", key);
    *out = json_is_true(json_object_get(node, "bool"));
    return DL_OK;
}

static dl_status_t group_kw(cmd_t *c)
{
    const json_t *node = kw(c, "group");
    c->comm = c->ev->r->comm;
    if (node == NULL)
        return DL_OK;
    const char *name = lab_json_str(node, "name", NULL);
    lab_value_t *g = name != NULL ? lab__eval_var(c->ev, name) : NULL;
    if (g == NULL && name != NULL && (strcmp(name, "None") == 0 || lab__eval_is_world_group(name)))
        return DL_OK; /* torch's group=None or group=dist.group.WORLD: the world */
    if (g == NULL && json_object_get(node, "name") == NULL) {
        /* group=groups[rank // 2]: a value held until the command ends */
        dl_status_t st = lab_eval_expr(c->ev, node, &c->group_v);
        if (st != DL_OK)
            return st;
        g = &c->group_v;
        name = "group=";
    }
    if (g == NULL)
        return fail(c->ev, node, "group= takes a group made by new_group");
    if (g->kind == LAB_V_NONE) {
        c->skip = true; /* new_group gave this rank nothing: it is not a member */
        return DL_OK;
    }
    if (g->kind != LAB_V_GROUP)
        return fail(c->ev, node, "'%s' is %s, not a group", name, lab_vkind_a(g->kind));
    c->comm = g->group;
    return DL_OK;
}

static dl_status_t comm_fail(cmd_t *c)
{
    lab_rank_comm_error(c->comm, c->ev->error, sizeof(c->ev->error));
    return DL_ERR_INVALID;
}

/* A large tensor goes up as the elements its print shows (rank.c's
 * snapshots), so any size fits a control frame. */
static dl_status_t report_bound(lab_eval_t *ev, const char *name, const lab_value_t *v);

static dl_status_t report(cmd_t *c, const char *name, const lab_value_t *v)
{
    lab_rank_t *r = c->ev->r;
    if (lab__eval_quiet(c->ev) && !c->printing)
        return DL_OK;
    if (v->kind == LAB_V_TENSOR)
        return lab_rank_emit_snap(r, "after", name, 0, 0, v->t);
    if (v->kind == LAB_V_LIST) {
        dl_status_t st = DL_OK;
        r->items_of_tuple = v->tuple;
        for (size_t i = 0; i < v->n && st == DL_OK; i++)
            if (v->items[i].kind == LAB_V_TENSOR)
                st = lab_rank_emit_snap(r, "after", name, (int)i, (int)v->n, v->items[i].t);
        r->items_of_tuple = false;
        return st;
    }
    if (v->kind == LAB_V_DICT) /* stats["loss"] written: the dict, as its repr */
        return report_bound(c->ev, name, v);
    return DL_OK;
}

/* Reports the tensor positional argument i names after a command changed
 * it: the whole variable when the argument is a slice of it. */
static dl_status_t report_arg(cmd_t *c, size_t i, const char *dflt, const lab_value_t *v)
{
    if (i < 2 && c->view_of[i] != NULL) {
        const lab_value_t *var = lab__eval_var(c->ev, c->view_of[i]);
        return var != NULL ? report(c, c->view_of[i], var) : DL_OK;
    }
    return report(c, lab_json_str(arg(c, i), "name", dflt), v);
}

/* A list variable of n tensors like t (dtype, shape and device), made
 * (zeros) when missing. */
static dl_status_t list_var(cmd_t *c, const json_t *node, const dl_tensor_t *like, int n,
                            lab_value_t **v_p)
{
    const char *name = lab_json_str(node, "name", NULL);
    if (name == NULL)
        return fail(c->ev, node != NULL ? node : c->cmd, "%s needs the name of a list", c->name);
    if (lab__eval_is_builtin(name) && c->ev->calls == 0)
        return fail(c->ev, node, "cannot assign to '%s': it is read-only, set by the launcher",
                    name);
    lab_value_t *v = lab__eval_var(c->ev, name);
    /* Made when missing; anything else than a list is refused, as torch
     * refuses it, rather than replaced. */
    if (v != NULL && v->kind != LAB_V_LIST)
        return fail(c->ev, node, "%s: %s is %s, and the output is a list of tensors%s", c->name,
                    name, lab_vkind_a(v->kind),
                    strcmp(c->name, "all_gather") == 0 && v->kind == LAB_V_TENSOR
                        ? " (all_gather_into_tensor gathers into one tensor)"
                        : "");
    /* A list given is filled, as torch fills it, and must fit as torch
     * requires: one tensor per rank, each of the tensor's dtype and size. */
    if (v != NULL && v->kind == LAB_V_LIST) {
        if (v->n != (size_t)n)
            return fail(c->ev, node,
                        "%s: %s holds %zu tensor%s, one for each of the %d ranks needed", c->name,
                        name, v->n, v->n == 1 ? "" : "s", n);
        for (size_t i = 0; i < v->n; i++) {
            const lab_value_t *it = &v->items[i];
            if (it->kind != LAB_V_TENSOR)
                return fail(c->ev, node, "%s: %s[%zu] is %s, not a tensor", c->name, name, i,
                            lab_vkind_a(it->kind));
            if (it->t->dtype != like->dtype)
                return fail(c->ev, node, "%s: %s[%zu] is %s and the tensor %s: they must match",
                            c->name, name, i, dl_dtype_name(it->t->dtype),
                            dl_dtype_name(like->dtype));
            if (it->t->numel != like->numel)
                return fail(c->ev, node,
                            "%s: %s[%zu] holds %zu elements and the tensor %zu: they must match",
                            c->name, name, i, it->t->numel, like->numel);
            if (it->t->device.type != like->device.type ||
                it->t->device.index != like->device.index)
                return fail(c->ev, node, "%s: %s[%zu] is on another device than the tensor",
                            c->name, name, i);
        }
    }
    bool fits = v != NULL && v->kind == LAB_V_LIST;
    if (!fits) {
        lab_value_t fresh = {.kind = LAB_V_LIST};
        fresh.items = calloc((size_t)n, sizeof(*fresh.items));
        if (fresh.items == NULL)
            return DL_ERR_NOMEM;
        for (int i = 0; i < n; i++) {
            fresh.items[i].kind = LAB_V_TENSOR;
            dl_status_t st =
                like->device.type == DL_DEVICE_CUDA
                    ? dl_tensor_new_on(like->dtype, like->ndim, like->shape, like->device,
                                       &fresh.items[i].t)
                    : dl_tensor_new(like->dtype, like->ndim, like->shape,
                                    dl_comm_allocator(c->ev->r->comm), &fresh.items[i].t);
            if (st != DL_OK) {
                fresh.n = (size_t)i;
                lab_value_clear(&fresh);
                return DL_ERR_NOMEM;
            }
            fresh.n = (size_t)i + 1;
        }
        /* Bound where the statement runs: a function makes a local list. */
        dl_status_t st = lab_vars_set(lab__eval_vars(c->ev), name, &fresh);
        if (st != DL_OK) {
            lab_value_clear(&fresh);
            return st;
        }
        v = lab_vars_get(lab__eval_vars(c->ev), name);
    }
    *v_p = v;
    return DL_OK;
}

static dl_tensor_t **tensors_of(const lab_value_t *list)
{
    dl_tensor_t **ts = calloc(list->n ? list->n : 1, sizeof(*ts));
    for (size_t i = 0; ts != NULL && i < list->n; i++)
        ts[i] = list->items[i].t;
    return ts;
}

/* ---- the commands ---- */

/* Whether print shows v as the shell shows a result, NAME = value: a
 * number, a tensor, or a list of tensors. */
static bool shown_as_result(const lab_value_t *v)
{
    if (v->kind == LAB_V_LIST) {
        bool tensors = v->n > 0 && v->name[0] == '\0';
        for (size_t i = 0; tensors && i < v->n; i++)
            tensors = v->items[i].kind == LAB_V_TENSOR;
        return tensors;
    }
    return v->kind == LAB_V_TENSOR || v->kind == LAB_V_INT || v->kind == LAB_V_FLOAT ||
           v->kind == LAB_V_BOOL;
}

/* The longest line print makes; a longer one is cut. */
#define PRINT_MAX (1u << 20)

/* print X shows one value as the shell shows a result, NAME = value (a
 * tensor as torch prints it). print(a, b, ...) with several values, or a
 * string, None or a pair, writes what Python's print writes: str() of
 * each, separated by one space, one line for the rank. */
/* One value shown as its name's (node's) result, "t = tensor(...)" or
 * "value = 3": what print of one tensor or number, and an expression alone
 * (t, t + 1), show. */
static dl_status_t show_result(cmd_t *c, const json_t *node, const lab_value_t *v)
{
    const char *name = lab_json_str(node, "name", "value");
    if (v->kind == LAB_V_TENSOR || v->kind == LAB_V_LIST)
        return report(c, name, v);
    if (v->kind == LAB_V_BOOL)
        return lab_rank_note(c->ev->r, "%s = %s", name, v->i ? "True" : "False");
    if (v->kind == LAB_V_INT)
        return lab_rank_note(c->ev->r, "%s = %lld", name, (long long)v->i);
    char num[32];
    return lab_rank_note(c->ev->r, "%s = %s", name, lab__eval_py_float(v->f, num, sizeof(num)));
}

dl_status_t lab__eval_show(lab_eval_t *ev, const json_t *node, const lab_value_t *v)
{
    if (lab__eval_quiet(ev) || v->kind == LAB_V_NONE)
        return DL_OK; /* None shows nothing, as at Python's prompt */
    cmd_t c = {.ev = ev, .printing = true};
    if (shown_as_result(v))
        return show_result(&c, node, v);
    char *text = NULL;
    dl_status_t st = lab__eval_format(ev, node, v, true, &text);
    if (st == DL_OK)
        st = lab_rank_note_text(ev->r, text);
    free(text);
    return st;
}

/* print's sep= or end=: a string, or None for the default. */
static dl_status_t print_kw(cmd_t *c, const char *key, const char *dflt, char **out)
{
    *out = NULL;
    const json_t *node = kw(c, key);
    lab_value_t v = {0};
    dl_status_t st = node != NULL ? lab_eval_expr(c->ev, node, &v) : DL_OK;
    if (st != DL_OK)
        return st;
    if (v.kind != LAB_V_STR && v.kind != LAB_V_NONE)
        st = fail(c->ev, node, "%s must be None or a string, not %s", key, lab_vkind_name(v.kind));
    else if ((*out = strdup(v.kind == LAB_V_STR && v.s != NULL ? v.s : dflt)) == NULL)
        st = DL_ERR_NOMEM;
    lab_value_clear(&v);
    return st;
}

/* Appends add (n bytes) to *line, cut at PRINT_MAX. */
static dl_status_t line_add(char **line, size_t *len, const char *add, size_t n)
{
    if (*len + n > PRINT_MAX)
        n = *len < PRINT_MAX ? PRINT_MAX - *len : 0;
    char *grown = realloc(*line, *len + n + 1);
    if (grown == NULL)
        return DL_ERR_NOMEM;
    *line = grown;
    memcpy(*line + *len, add, n);
    *len += n;
    (*line)[*len] = '\0';
    return DL_OK;
}

/* Sends the complete lines of text as one note, and keeps what follows
 * its last newline as the rank's open line (print(x, end='')), which the
 * next print continues or the statement's end shows. */
static dl_status_t print_lines(lab_eval_t *ev, char *text)
{
    free(ev->open_line);
    ev->open_line = NULL;
    if (ev->open_shown && text[0] == '\n') {
        /* the print() that ends a line the last statement's end showed:
         * the line is ended already, as in Python's output */
        memmove(text, text + 1, strlen(text));
        if (text[0] == '\0') {
            free(text);
            ev->open_shown = false;
            return DL_OK;
        }
    }
    ev->open_shown = false;
    char *last = strrchr(text, '\n');
    if (last == NULL) {
        ev->open_line = text;
        return DL_OK;
    }
    *last = '\0';
    if (last[1] != '\0' && (ev->open_line = strdup(last + 1)) == NULL) {
        free(text);
        return DL_ERR_NOMEM;
    }
    dl_status_t st = lab_rank_note_text(ev->r, text);
    free(text);
    return st;
}

dl_status_t lab_eval_flush_line(lab_eval_t *ev)
{
    char *line = ev->open_line;
    ev->open_line = NULL;
    if (line != NULL)
        ev->open_shown = true; /* until a print: one that ends the line adds none */
    /* what print left open is print's, also under set echo print */
    const char *was = ev->r->shown_as;
    ev->r->shown_as = "print";
    dl_status_t st = line != NULL && line[0] != '\0' ? lab_rank_note_text(ev->r, line) : DL_OK;
    ev->r->shown_as = was;
    free(line);
    return st;
}

static dl_status_t cmd_print(cmd_t *c)
{
    size_t n = json_array_size(c->args);
    bool python = json_object_size(c->kwargs) > 0 || c->ev->open_line != NULL;
    if (n == 0 && !python && json_object_get(c->cmd, "empty_call") == NULL)
        return fail(c->ev, c->cmd, "print what? e.g. print t");
    c->printing = true;
    lab_value_t first = {0};
    dl_status_t st = n > 0 ? lab_eval_expr(c->ev, arg(c, 0), &first) : DL_OK;
    if (st != DL_OK)
        return st;
    if (n == 1 && !python && shown_as_result(&first)) {
        st = show_result(c, arg(c, 0), &first);
        lab_value_clear(&first);
        return st;
    }
    /* What Python's print writes: str() of each value, sep between them,
     * end after (flush= changes nothing: each line goes up at once). */
    char *sep = NULL, *end = NULL, *line = NULL;
    size_t len = 0;
    lab_value_t flush = {0}; /* evaluated for its errors only */
    const json_t *flush_node = kw(c, "flush");
    if ((st = print_kw(c, "sep", " ", &sep)) == DL_OK &&
        (st = print_kw(c, "end", "\n", &end)) == DL_OK && flush_node != NULL &&
        (st = lab_eval_expr(c->ev, flush_node, &flush)) == DL_OK && lab__eval_undefined(&flush))
        st = lab__eval_fail_undefined(c->ev, flush_node, &flush);
    lab_value_clear(&flush);
    if (st != DL_OK) {
        lab_value_clear(&first);
        goto out;
    }
    if (c->ev->open_line != NULL &&
        (st = line_add(&line, &len, c->ev->open_line, strlen(c->ev->open_line))) != DL_OK)
        lab_value_clear(&first);
    for (size_t i = 0; i < n && st == DL_OK; i++) {
        lab_value_t v;
        if (i == 0)
            v = first;
        else if ((st = lab_eval_expr(c->ev, arg(c, i), &v)) != DL_OK)
            break;
        char *text = NULL;
        st = lab__eval_format(c->ev, arg(c, i), &v, false, &text);
        lab_value_clear(&v);
        if (st == DL_OK && i > 0)
            st = line_add(&line, &len, sep, strlen(sep));
        if (st == DL_OK)
            st = line_add(&line, &len, text, strlen(text));
        free(text);
    }
    if (st == DL_OK && (st = line_add(&line, &len, end, strlen(end))) == DL_OK) {
        st = print_lines(c->ev, line);
        line = NULL;
    }
out:
    free(line);
    free(sep);
    free(end);
    return st;
}

static dl_status_t cmd_tensors(cmd_t *c)
{
    lab_vars_t *vs = lab__eval_vars(c->ev);
    for (size_t i = 0; i < vs->n; i++) {
        const lab_value_t *v = &vs->vars[i].v;
        if (v->kind == LAB_V_TENSOR) {
            char shape[DL_MAX_DIMS * 22 + 8]; /* "[" and ", N" of up to 20 digits each */
            lab__eval_shape_text(v->t->ndim, v->t->shape, shape, sizeof(shape));
            char dev[24] = "";
            if (v->t->device.type == DL_DEVICE_CUDA)
                snprintf(dev, sizeof(dev), " cuda:%d", v->t->device.index);
            lab_rank_note(c->ev->r, "%s: %s %s%s", vs->vars[i].name, dl_dtype_name(v->t->dtype),
                          shape, dev);
        } else {
            lab_rank_note(c->ev->r, "%s: %s", vs->vars[i].name, lab_vkind_name(v->kind));
        }
    }
    if (vs->n == 0)
        lab_rank_note(c->ev->r, "no tensors");
    return DL_OK;
}

/* manual_seed SEED: torch.manual_seed on this rank's generator. The rand,
 * randn and randint that follow continue its stream, as in torch. */
static dl_status_t cmd_manual_seed(cmd_t *c)
{
    const json_t *node = kw(c, "seed");
    if (json_array_size(c->args) + (node != NULL) != 1)
        return fail(c->ev, c->cmd, "manual_seed takes one seed, e.g. manual_seed(42)");
    if (node == NULL)
        node = arg(c, 0);
    uint64_t seed;
    dl_status_t st = lab__eval_seed(c->ev, node, "manual_seed", &seed);
    if (st != DL_OK)
        return st;
    dl_rng_seed(lab__eval_rng(c->ev), seed);
    return DL_OK;
}

static dl_status_t cmd_p2p(cmd_t *c, bool send, bool async)
{
    lab_value_t *t = NULL;
    int peer = 0, tag = 0;
    dl_status_t st;
    if ((st = (send ? in_tensor : var_tensor)(c, 0, "", &t)) != DL_OK ||
        (st = rank_kw(c, send ? "dst" : "src", send, DL_ANY_SOURCE, &peer)) != DL_OK ||
        (st = int_kw(c, "tag", false, 0, &tag)) != DL_OK)
        return st;
    if (c->skip)
        return DL_OK;
    /* The shell keeps a ledger of sends and recvs, to report at once a
     * blocking recv that nothing will ever match (lab/session/p2p.h). It
     * numbers ranks in the world: calls on a group stay out of it. */
    lab_rank_t *r = c->ev->r;
    json_int_t note = 0;
    if (r->cur_id > 0 && !r->no_check && c->comm == r->comm) {
        note = ++r->p2p_notes;
        if (lab_rank_emit(r,
                          json_pack("{s:s, s:s, s:i, s:i, s:b, s:b, s:I, s:I}", "type", "p2p", "op",
                                    send ? "send" : "recv", "peer", peer, "tag", tag, "blocking",
                                    !send && !async, "async", async, "bytes",
                                    (json_int_t)dl_tensor_nbytes(t->t), "note", note),
                          NULL, 0) != DL_OK)
            return DL_ERR_IO;
    }
    if (async) {
        st = send ? dl_comm_isend(c->comm, t->t, peer, tag, &c->work)
                  : dl_comm_irecv(c->comm, t->t, peer, tag, &c->work);
        c->irecv_note = send ? 0 : note;
        /* A slice's variable is shown whole, as a recv's report shows it. */
        c->irecv_into = send                    ? NULL
                        : c->view_of[0] != NULL ? c->view_of[0]
                                                : lab_json_str(arg(c, 0), "name", NULL);
        c->uses[0] = t->t;
        return st == DL_OK ? DL_OK : comm_fail(c);
    }
    int src = -1;
    st = send ? dl_comm_send(c->comm, t->t, peer, tag)
              : dl_comm_recv(c->comm, t->t, peer, tag, &src);
    if (st != DL_OK)
        return comm_fail(c);
    if (!send) {
        c->sender = dl_comm_global_rank(c->comm, src);
        if (!lab__eval_quiet(c->ev))
            lab_rank_note(c->ev->r, "received from rank %d", c->sender);
        return report_arg(c, 0, "tensor", t);
    }
    return DL_OK;
}

/* An irecv's tensor holds what came once its wait is over: the views'
 * copy of it is brought up to date, as a recv's report does (the panels
 * would show it as it was before). */
static dl_status_t show_received(lab_eval_t *ev, const lab_value_t *h)
{
    const lab_value_t *v = h->name[0] != '\0' ? lab__eval_var(ev, h->name) : NULL;
    if (v == NULL || v->kind != LAB_V_TENSOR)
        return DL_OK;
    /* Never a print's output, even from inside one (print(h.wait())). */
    const char *was = ev->r->shown_as;
    ev->r->shown_as = NULL;
    dl_status_t st = lab_rank_emit_snap(ev->r, LAB_SNAP_VIEW, h->name, 0, 0, v->t);
    ev->r->shown_as = was;
    return st;
}

dl_status_t lab__eval_wait(lab_eval_t *ev, const json_t *node, const lab_value_t *h,
                           const char *name)
{
    dl_work_t *work = h != NULL && h->kind == LAB_V_WORK ? h->work : NULL;
    if (work == NULL)
        return fail(ev, node, "wait takes a handle from isend, irecv or async_op=true");
    /* Waiting on an irecv holds the rank as a recv does: the shell's ledger
     * then reports at once one that nothing will ever match. */
    lab_rank_t *r = ev->r;
    if (h->irecv_note > 0 && r->cur_id > 0 && !r->no_check && !dl_work_test(work) &&
        lab_rank_emit(r, json_pack("{s:s, s:I}", "type", "p2p_wait", "note", h->irecv_note), NULL,
                      0) != DL_OK)
        return DL_ERR_IO;
    dl_status_t st = dl_work_wait(work, -1);
    int src = dl_work_source(work);
    if (dl_work_test(work))
        lab_pins_release(work); /* what it used can be freed now */
    if (st != DL_OK) {
        lab_rank_comm_error(ev->r->comm, ev->error, sizeof(ev->error));
        return st;
    }
    if (lab__eval_quiet(ev))
        return DL_OK;
    if ((st = show_received(ev, h)) != DL_OK)
        return st;
    /* What the wait did, never a print's or an assignment's output (x =
     * h.wait(), print(h.wait())): `set echo print` leaves it out. */
    const char *was = ev->r->shown_as;
    ev->r->shown_as = NULL;
    if (src >= 0)
        lab_rank_note(ev->r, "%s: done, received from rank %d", name, src);
    else
        lab_rank_note(ev->r, "%s: done", name);
    ev->r->shown_as = was;
    return DL_OK;
}

static dl_status_t cmd_wait(cmd_t *c)
{
    const char *name = lab_json_str(arg(c, 0), "name", NULL);
    lab_value_t *h = name != NULL ? lab__eval_var(c->ev, name) : NULL;
    return lab__eval_wait(c->ev, arg(c, 0) ? arg(c, 0) : c->cmd, h, name);
}

/* The tensor variable positional argument i names, made (zeros of dtype
 * dt and the given shape) when the name is not defined yet, as torch's
 * tutorials allocate the output before the call. */
static dl_status_t out_tensor(cmd_t *c, size_t i, dl_dtype_t dt, int ndim, const int64_t *shape,
                              lab_value_t **v_p)
{
    const json_t *node = arg(c, i);
    const char *name = lab_json_str(node, "name", NULL);
    if (name != NULL && lab__eval_var(c->ev, name) == NULL) {
        if (lab__eval_is_builtin(name) && c->ev->calls == 0)
            return fail(c->ev, node, "cannot assign to '%s': it is read-only, set by the launcher",
                        name);
        lab_value_t fresh = {.kind = LAB_V_TENSOR};
        dl_status_t st =
            dl_tensor_new(dt, ndim, shape, dl_comm_allocator(c->ev->r->comm), &fresh.t);
        if (st != DL_OK)
            return st;
        if ((st = lab_vars_set(lab__eval_vars(c->ev), name, &fresh)) != DL_OK) {
            lab_value_clear(&fresh);
            return st;
        }
    }
    return var_tensor(c, i, "output", v_p);
}

/* The tensors of list v, n of them, of one dtype and element count, copied
 * one after the other into a new 1-D tensor (the staged input of the list
 * forms of reduce_scatter and all_to_all). */
static dl_status_t stage_list(cmd_t *c, const json_t *node, const lab_value_t *v, int n,
                              dl_tensor_t **t_p)
{
    bool ok = v->kind == LAB_V_LIST && v->n == (size_t)n;
    for (size_t i = 0; ok && i < v->n; i++)
        ok = v->items[i].kind == LAB_V_TENSOR && v->items[i].t->device.type == DL_DEVICE_CPU &&
             v->items[i].t->dtype == v->items[0].t->dtype &&
             v->items[i].t->numel == v->items[0].t->numel;
    if (!ok)
        return fail(c->ev, node,
                    "%s: the input list must hold %d host tensors of one dtype and size", c->name,
                    n);
    const dl_tensor_t *first = v->items[0].t;
    size_t nb = dl_tensor_nbytes(first);
    dl_status_t st = dl_tensor_new_1d(first->dtype, first->numel * (size_t)n,
                                      dl_comm_allocator(c->ev->r->comm), t_p);
    if (st != DL_OK)
        return st;
    for (int i = 0; i < n; i++)
        if (nb > 0)
            memcpy((uint8_t *)(*t_p)->data + (size_t)i * nb, v->items[i].t->data, nb);
    return DL_OK;
}

/* The value of split-size keyword key of all_to_all_single, evaluated once:
 * LAB_V_NONE when it is absent, None or [] (torch then splits dim 0
 * evenly), else a list. */
static dl_status_t split_value(cmd_t *c, const char *key, lab_value_t *v)
{
    memset(v, 0, sizeof(*v));
    const json_t *node = kw(c, key);
    if (node == NULL)
        return DL_OK;
    dl_status_t st = lab_eval_expr(c->ev, node, v);
    if (st != DL_OK)
        return st;
    if (v->kind == LAB_V_LIST && v->n == 0)
        lab_value_clear(v);
    if (v->kind != LAB_V_NONE && v->kind != LAB_V_LIST) {
        lab_value_clear(v);
        return fail(c->ev, node, "%s: %s must be a list of sizes, one for each rank", c->name, key);
    }
    return DL_OK;
}

/* The n row counts of dim 0 that split v (a list from split_value, or
 * none: rows in n equal parts, as torch splits them), checked to add up to
 * rows, into rows_out. */
static dl_status_t split_sizes(cmd_t *c, const char *key, const lab_value_t *v, int n, int64_t rows,
                               int64_t *rows_out)
{
    const json_t *node = kw(c, key) != NULL ? kw(c, key) : c->cmd;
    if (v->kind != LAB_V_LIST) {
        if (rows % n != 0)
            return fail(c->ev, node, "Tensor's dim 0 does not divide equally across group size");
        for (int j = 0; j < n; j++)
            rows_out[j] = rows / n;
        return DL_OK;
    }
    bool ok = v->n == (size_t)n;
    int64_t sum = 0;
    for (size_t j = 0; ok && j < v->n; j++) {
        ok = v->items[j].kind == LAB_V_INT && v->items[j].i >= 0;
        rows_out[j] = ok ? v->items[j].i : 0;
        /* Checked before it is added: a sum that wrapped round could
         * match rows. */
        if (ok && rows_out[j] > rows - sum)
            return fail(c->ev, node, "Split sizes doesn't match total dim 0 size");
        sum += rows_out[j];
    }
    if (!ok)
        return fail(c->ev, node, "%s: %s must be a list of %d sizes, one for each rank", c->name,
                    key, n);
    if (sum != rows)
        return fail(c->ev, node, "Split sizes doesn't match total dim 0 size");
    return DL_OK;
}

/* The rows an output not defined yet gets: what its split sizes add up to
 * (sizes that are no counts are refused by split_sizes after). */
static int64_t rows_of_sizes(const lab_value_t *v, int64_t dflt)
{
    if (v->kind != LAB_V_LIST)
        return dflt;
    int64_t sum = 0;
    for (size_t j = 0; j < v->n; j++)
        if (v->items[j].kind == LAB_V_INT && v->items[j].i >= 0 &&
            __builtin_add_overflow(sum, v->items[j].i, &sum))
            return dflt;
    return sum;
}

/* all_to_all_single(output, input, output_split_sizes, input_split_sizes):
 * input_split_sizes[j] rows of in go to rank j, output_split_sizes[i] rows
 * of out come from rank i (rows of dim 0). out is made when not defined
 * yet, with the rows its split sizes say. osz and isz: from split_value. */
static dl_status_t all_to_all_split(cmd_t *c, const lab_value_t *in, const lab_value_t *osz,
                                    const lab_value_t *isz, dl_coll_opts_t *o, dl_work_t **wp)
{
    int n = dl_comm_size(c->comm);
    const dl_tensor_t *t = in->t;
    if (t->ndim == 0)
        return fail(c->ev, arg(c, 1), "%s: the input needs a dimension to split", c->name);
    int64_t row = 1;
    for (int d = 1; d < t->ndim; d++)
        row *= t->shape[d];
    int64_t *rows = calloc((size_t)n * 2, sizeof(*rows));
    size_t *el = calloc((size_t)n * 2, sizeof(*el));
    lab_value_t *out = NULL;
    dl_status_t st = rows == NULL || el == NULL ? DL_ERR_NOMEM : DL_OK;
    if (st == DL_OK)
        st = split_sizes(c, "input_split_sizes", isz, n, t->shape[0], rows + n);
    /* The output's rows: its own, or those its split sizes add up to. */
    const char *out_name = lab_json_str(arg(c, 0), "name", NULL);
    const lab_value_t *have = out_name != NULL ? lab__eval_var(c->ev, out_name) : NULL;
    int64_t out_rows = have != NULL && have->kind == LAB_V_TENSOR && have->t->ndim > 0
                           ? have->t->shape[0]
                           : t->shape[0];
    if (have == NULL)
        out_rows = rows_of_sizes(osz, out_rows);
    if (st == DL_OK)
        st = split_sizes(c, "output_split_sizes", osz, n, out_rows, rows);
    if (st == DL_OK) {
        int64_t shape[DL_MAX_DIMS];
        memcpy(shape, t->shape, sizeof(shape));
        shape[0] = out_rows;
        st = out_tensor(c, 0, t->dtype, t->ndim, shape, &out);
    }
    /* Each count of rows is at most its tensor's dim 0 now, so rows * row
     * is at most the tensor's element count. */
    if (st == DL_OK && (out->t->ndim == 0 || out->t->numel != (size_t)out_rows * (size_t)row))
        st = fail(c->ev, arg(c, 0), "%s: the output must have %lld rows of the input's shape",
                  c->name, (long long)out_rows);
    if (st == DL_OK) {
        for (int j = 0; j < 2 * n; j++)
            el[j] = (size_t)rows[j] * (size_t)row;
        if (dl_comm_all_to_all(c->comm, out->t, t, el, el + n, o, wp) != DL_OK)
            st = comm_fail(c);
        c->uses[0] = out->t;
        c->uses[1] = t;
    }
    free(rows);
    free(el);
    if (st != DL_OK || c->async)
        return st;
    return report_arg(c, 0, "", out);
}

/* reduce_scatter and all_to_all, in torch's forms:
 *   reduce_scatter OUT IN          IN holds nranks times OUT's elements
 *                                  (reduce_scatter_tensor)
 *   reduce_scatter OUT IN_LIST     torch.distributed.reduce_scatter
 *   all_to_all OUT IN              equal chunks (all_to_all_single)
 *   all_to_all OUT_LIST IN_LIST    torch.distributed.all_to_all
 * OUT is made when it is not defined yet, as gather and all_gather make
 * their lists: a tensor of IN's chunk shape, or a list of IN_LIST's. */
static dl_status_t coll_chunks(cmd_t *c, dl_coll_t coll, dl_op_t op, dl_coll_opts_t *o,
                               dl_work_t **wp)
{
    lab_eval_t *ev = c->ev;
    int n = dl_comm_size(c->comm);
    bool rs = coll == DL_COLL_REDUCE_SCATTER;
    const json_t *in_node = arg(c, 1);
    if (arg(c, 0) == NULL || in_node == NULL)
        return fail(ev, c->cmd, "%s needs an output and an input", c->name);
    lab_value_t in_v = {0}, *out = NULL, *in = NULL;
    dl_status_t st;
    const char *in_name = lab_json_str(in_node, "name", NULL);
    lab_value_t *in_var = in_name != NULL ? lab__eval_var(ev, in_name) : NULL;
    bool list_form =
        json_object_get(in_node, "list") != NULL || (in_var != NULL && in_var->kind == LAB_V_LIST);
    if (!list_form) {
        if ((st = in_tensor(c, 1, "input", &in)) != DL_OK)
            return st;
        lab_value_t osz = {0}, isz = {0};
        if (!rs && ((st = split_value(c, "output_split_sizes", &osz)) != DL_OK ||
                    (st = split_value(c, "input_split_sizes", &isz)) != DL_OK)) {
            lab_value_clear(&osz);
            return st;
        }
        if (!rs && (osz.kind == LAB_V_LIST || isz.kind == LAB_V_LIST)) {
            st = all_to_all_split(c, in, &osz, &isz, o, wp);
            lab_value_clear(&osz);
            lab_value_clear(&isz);
            return st;
        }
        const dl_tensor_t *t = in->t;
        int64_t shape[DL_MAX_DIMS];
        int ndim = t->ndim > 0 ? t->ndim : 1;
        for (int d = 0; d < ndim; d++)
            shape[d] = t->ndim > 0 ? t->shape[d] : 1;
        if (rs)
            shape[0] /= n;
        if ((st = out_tensor(c, 0, t->dtype, ndim, shape, &out)) != DL_OK)
            return st;
        st = rs ? dl_comm_reduce_scatter(c->comm, out->t, in->t, op, o, wp)
                : dl_comm_all_to_all(c->comm, out->t, in->t, NULL, NULL, o, wp);
        if (st != DL_OK)
            return comm_fail(c);
        c->uses[0] = out->t;
        c->uses[1] = in->t;
        return c->async ? DL_OK : report_arg(c, 0, "", out);
    }
    if ((st = lab_eval_expr(ev, in_node, &in_v)) != DL_OK)
        return st;
    dl_tensor_t *staged = NULL, *gathered = NULL;
    if ((st = stage_list(c, in_node, &in_v, n, &staged)) != DL_OK)
        goto out_clear;
    const dl_tensor_t *like = in_v.items[0].t;
    o->async = false; /* the staged buffers must live through the call */
    if (rs) {
        if ((st = out_tensor(c, 0, like->dtype, like->ndim, like->shape, &out)) != DL_OK)
            goto out_clear;
        if (out->t->dtype != like->dtype || out->t->numel != like->numel) {
            st = fail(ev, arg(c, 0), "reduce_scatter: the output must be shaped like each input");
            goto out_clear;
        }
        if (dl_comm_reduce_scatter(c->comm, out->t, staged, op, o, NULL) != DL_OK) {
            st = comm_fail(c);
            goto out_clear;
        }
        st = report_arg(c, 0, "", out);
        goto out_clear;
    }
    if ((st = list_var(c, arg(c, 0), like, n, &out)) != DL_OK ||
        (st = dl_tensor_new_1d(like->dtype, like->numel * (size_t)n, dl_comm_allocator(ev->r->comm),
                               &gathered)) != DL_OK)
        goto out_clear;
    if (dl_comm_all_to_all(c->comm, gathered, staged, NULL, NULL, o, NULL) != DL_OK) {
        st = comm_fail(c);
        goto out_clear;
    }
    for (int i = 0; i < n; i++) {
        size_t nb = dl_tensor_nbytes(out->items[i].t);
        if (nb > 0)
            memcpy(out->items[i].t->data, (uint8_t *)gathered->data + (size_t)i * nb, nb);
    }
    st = report(c, lab_json_str(arg(c, 0), "name", ""), out);
out_clear:
    dl_tensor_free(gathered);
    dl_tensor_free(staged);
    lab_value_clear(&in_v);
    return st;
}

static dl_status_t run_coll(cmd_t *c, dl_coll_t coll)
{
    lab_eval_t *ev = c->ev;
    dl_coll_opts_t o = {.async = c->async};
    dl_work_t **wp = c->async ? &c->work : NULL;
    lab_value_t *t = NULL, *out = NULL;
    dl_op_t op;
    int root = 0, n = dl_comm_size(c->comm);
    dl_status_t st = DL_OK;
    if (c->skip)
        return DL_OK;
    switch (coll) {
    case DL_COLL_ALL_REDUCE:
    case DL_COLL_REDUCE:
    case DL_COLL_BROADCAST:
        if ((st = var_tensor(c, 0, "", &t)) != DL_OK || (st = op_kw(c, &op)) != DL_OK)
            return st;
        if (coll != DL_COLL_BROADCAST &&
            (op == DL_OP_BAND || op == DL_OP_BOR || op == DL_OP_BXOR) &&
            dl_dtype_is_float(t->t->dtype)) {
            /* torch's words (a RuntimeError), before anything moves */
            char name[8];
            size_t k = 0;
            for (const char *s = dl_op_name(op); *s != '\0' && k + 1 < sizeof(name); s++)
                name[k++] = (char)toupper((unsigned char)*s);
            name[k] = '\0';
            return fail(ev, kw(c, "op"), "Cannot use ReduceOp.%s with non-integral dtype", name);
        }
        if (coll == DL_COLL_BROADCAST && (st = rank_kw(c, "src", true, 0, &root)) != DL_OK)
            return st;
        if (coll == DL_COLL_REDUCE && (st = rank_kw(c, "dst", true, 0, &root)) != DL_OK)
            return st;
        st = coll == DL_COLL_ALL_REDUCE ? dl_comm_all_reduce(c->comm, t->t, op, &o, wp)
             : coll == DL_COLL_REDUCE   ? dl_comm_reduce(c->comm, t->t, root, op, &o, wp)
                                        : dl_comm_broadcast(c->comm, t->t, root, &o, wp);
        if (st != DL_OK)
            return comm_fail(c);
        c->uses[0] = t->t;
        return c->async ? DL_OK : report_arg(c, 0, "", t);
    case DL_COLL_SCATTER: {
        /* src= and dst= of scatter and gather are 0 where not given, as
         * torch's defaults (broadcast's and reduce's are required) */
        if ((st = var_tensor(c, 0, "output", &t)) != DL_OK ||
            (st = rank_kw(c, "src", false, 0, &root)) != DL_OK)
            return st;
        lab_value_t list = {0};
        dl_tensor_t **ts = NULL;
        if (dl_comm_rank(c->comm) == root) {
            const json_t *node = kw(c, "scatter_list");
            if (node == NULL)
                return fail(ev, c->cmd, "scatter needs scatter_list=[...] on the source rank");
            if ((st = lab_eval_expr(ev, node, &list)) != DL_OK)
                return st;
            bool ok = list.kind == LAB_V_LIST && list.n == (size_t)n;
            for (size_t i = 0; ok && i < list.n; i++)
                ok = list.items[i].kind == LAB_V_TENSOR;
            if (!ok) {
                lab_value_clear(&list);
                return fail(ev, node, "scatter_list must hold %d tensors", n);
            }
            ts = tensors_of(&list);
        }
        o.async = false; /* the staged list must live through the call */
        st = dl_comm_scatter(c->comm, t->t, ts, root, &o, NULL);
        free(ts);
        lab_value_clear(&list);
        if (st != DL_OK)
            return comm_fail(c);
        return report_arg(c, 0, "", t);
    }
    case DL_COLL_GATHER: {
        if ((st = in_tensor(c, 0, "input", &t)) != DL_OK ||
            (st = rank_kw(c, "dst", false, 0, &root)) != DL_OK)
            return st;
        dl_tensor_t **ts = NULL;
        /* gather_list=out if rank == 0 else None: the list the root names */
        const json_t *gl = kw(c, "gather_list");
        while (gl != NULL && json_object_get(gl, "if_exp") != NULL)
            if ((st = lab__eval_if_exp_branch(ev, gl, &gl)) != DL_OK)
                return st;
        if (dl_comm_rank(c->comm) == root) {
            if ((st = list_var(c, gl, t->t, n, &out)) != DL_OK)
                return st;
            ts = tensors_of(out);
        }
        st = dl_comm_gather(c->comm, t->t, ts, root, NULL, NULL);
        free(ts);
        if (st != DL_OK)
            return comm_fail(c);
        return out != NULL ? report(c, lab_json_str(gl, "name", ""), out) : DL_OK;
    }
    case DL_COLL_ALL_GATHER: {
        if ((st = in_tensor(c, 1, "input", &t)) != DL_OK ||
            (st = list_var(c, arg(c, 0), t->t, n, &out)) != DL_OK)
            return st;
        dl_tensor_t **ts = tensors_of(out);
        st = dl_comm_all_gather(c->comm, ts, t->t, NULL, NULL);
        free(ts);
        if (st != DL_OK)
            return comm_fail(c);
        return report_arg(c, 0, "", out);
    }
    case DL_COLL_REDUCE_SCATTER:
    case DL_COLL_ALL_TO_ALL:
        if ((st = op_kw(c, &op)) != DL_OK)
            return st;
        return coll_chunks(c, coll, op, &o, wp);
    case DL_COLL_BARRIER:
        if (dl_comm_barrier(c->comm, &o, wp) != DL_OK)
            return comm_fail(c);
        return c->async || lab__eval_quiet(ev) ? DL_OK : lab_rank_note(ev->r, "passed the barrier");
    default:
        return fail(ev, c->cmd, "%s is not supported", c->name);
    }
}

/* all_gather_into_tensor OUT IN: every rank's IN, in rank order, into the
 * one tensor OUT, which must exist and hold world_size times IN's elements
 * of IN's dtype, on IN's device (as torch requires). The comm layer gets
 * OUT's chunks as the list, one buffer already. */
static dl_status_t cmd_all_gather_into(cmd_t *c)
{
    lab_value_t *t = NULL, *out = NULL;
    dl_status_t st;
    if (c->skip)
        return DL_OK;
    if ((st = in_tensor(c, 1, "input", &t)) != DL_OK ||
        (st = var_tensor(c, 0, "output", &out)) != DL_OK)
        return st;
    int n = dl_comm_size(c->comm);
    const dl_tensor_t *in = t->t, *o = out->t;
    if (o->dtype != in->dtype || o->numel != (size_t)n * in->numel ||
        o->device.type != in->device.type || o->device.index != in->device.index)
        return fail(c->ev, c->cmd,
                    "%s: the output must be %zu elements of %s on the input's device (world size "
                    "%d times the input), not %zu of %s",
                    c->name, (size_t)n * in->numel, dl_dtype_name(in->dtype), n, o->numel,
                    dl_dtype_name(o->dtype));
    dl_coll_opts_t opts = {.async = c->async};
    if (dl_comm_all_gather_into(c->comm, out->t, in, &opts, c->async ? &c->work : NULL) != DL_OK)
        return comm_fail(c);
    c->uses[0] = out->t;
    c->uses[1] = in;
    if (c->async)
        return DL_OK;
    return report_arg(c, 0, "", out);
}

static dl_status_t run_command(lab_eval_t *ev, const json_t *cmd, const lab_value_t *given,
                               lab_value_t *result_p);
static const char *a_kind(const lab_value_t *v);

/* batch_isend_irecv(p2p_op_list): each P2POp's isend or irecv, in the
 * list's order, and the list of their handles (torch's). The list is
 * checked whole before anything is posted. */
static dl_status_t cmd_batch(cmd_t *c, lab_value_t *result_p)
{
    const json_t *node = arg(c, 0);
    lab_value_t ops = {0}, reqs = {0};
    if (node == NULL || arg(c, 1) != NULL || json_object_size(c->kwargs) > 0)
        return fail(c->ev, c->cmd, "batch_isend_irecv takes one list of P2POp");
    dl_status_t st = lab_eval_expr(c->ev, node, &ops);
    if (st != DL_OK)
        return st;
    bool ok = ops.kind == LAB_V_LIST && ops.n > 0;
    for (size_t i = 0; ok && i < ops.n; i++)
        ok = ops.items[i].kind == LAB_V_P2POP;
    if (!ok)
        st = fail(c->ev, node, "batch_isend_irecv takes a list of P2POp, not %s",
                  ops.kind == LAB_V_LIST && ops.n == 0 ? "an empty list" : a_kind(&ops));
    /* Peers checked before anything is posted: a batch that fails half
     * way would leave its posted sends for its peers to match. */
    int world = dl_comm_size(c->ev->r->comm), me = dl_comm_rank(c->ev->r->comm);
    static const char by_default = 0;
    const void *group0 = NULL;
    for (size_t i = 0; st == DL_OK && i < ops.n; i++) {
        const json_t *kwargs = json_object_get(ops.items[i].fn, "kwargs");
        /* torch's own rule: one batch, one group. The groups compared are
         * what each op's group= names (g, groups[0], the world's), not how
         * it is written; as in torch, no group (None) is not
         * dist.group.WORLD, though both run on the world. */
        cmd_t gc = {.ev = c->ev, .cmd = ops.items[i].fn, .kwargs = kwargs};
        const json_t *gnode = json_object_get(kwargs, "group");
        const char *gname = lab_json_str(gnode, "name", NULL);
        bool none = gnode == NULL || (gname != NULL && strcmp(gname, "None") == 0 &&
                                      lab__eval_var(c->ev, gname) == NULL);
        st = group_kw(&gc);
        const void *group = none      ? (const void *)&by_default
                            : gc.skip ? NULL
                                      : (const void *)gc.comm;
        lab_value_clear(&gc.group_v);
        if (st != DL_OK)
            break;
        if (i == 0)
            group0 = group;
        else if (group != group0) {
            st = fail(c->ev, node,
                      "batch_isend_irecv: all ops need to use the same group (P2POp %zu's is not "
                      "P2POp 0's)",
                      i);
            break;
        }
        bool send = json_object_get(kwargs, "dst") != NULL;
        json_int_t peer = json_integer_value(
            json_object_get(json_object_get(kwargs, send ? "dst" : "src"), "num"));
        if (peer == me)
            st = fail(c->ev, node, "batch_isend_irecv: P2POp %zu's peer %lld is this rank", i,
                      (long long)peer);
        else if (peer < 0 || peer >= world)
            st = fail(c->ev, node,
                      "batch_isend_irecv: P2POp %zu's peer %lld does not exist (world size %d)", i,
                      (long long)peer, world);
    }
    if (st == DL_OK)
        st = lab_value_new_list(&reqs, ops.n);
    for (size_t i = 0; st == DL_OK && i < ops.n; i++) {
        lab_value_t h = {0};
        const lab_value_t *op = &ops.items[i];
        lab_value_t taken = {.kind = LAB_V_TENSOR, .t = op->t, .borrowed = true};
        st = run_command(c->ev, op->fn, op->t != NULL ? &taken : NULL, &h);
        reqs.items[reqs.n++] = h;
    }
    if (st == DL_OK) {
        *result_p = reqs;
        memset(&reqs, 0, sizeof(reqs));
    }
    lab_value_clear(&reqs); /* on failure: waits for what was posted */
    lab_value_clear(&ops);
    return st;
}

/* Runs a command; *result_p gets what it returns (a work handle), if any. */
static dl_status_t run_command(lab_eval_t *ev, const json_t *cmd, const lab_value_t *given,
                               lab_value_t *result_p)
{
    cmd_t c = {.ev = ev,
               .given = given,
               .cmd = cmd,
               .name = lab_json_str(cmd, "cmd", ""),
               .args = json_object_get(cmd, "args"),
               .kwargs = json_object_get(cmd, "kwargs"),
               .sender = -1};
    /* Room first for the variable a command may make (an output not
     * defined yet, out_tensor and list_var): the table must not move under
     * the input variables the command has looked up by then. */
    dl_status_t st = lab_vars_reserve(lab__eval_vars(ev));
    if (st != DL_OK || (st = group_kw(&c)) != DL_OK ||
        (st = bool_kw(&c, "async_op", &c.async)) != DL_OK)
        goto out;
    dl_coll_t coll;
    /* What print and tensors send is shown even with `set echo print`. */
    if (strcmp(c.name, "print") == 0 || strcmp(c.name, "tensors") == 0) {
        ev->r->shown_as = "print";
        st = c.name[0] == 'p' ? cmd_print(&c) : cmd_tensors(&c);
        ev->r->shown_as = NULL;
    } else if (strcmp(c.name, "send") == 0 || strcmp(c.name, "recv") == 0)
        st = cmd_p2p(&c, c.name[0] == 's', false);
    else if (strcmp(c.name, "isend") == 0 || strcmp(c.name, "irecv") == 0)
        st = cmd_p2p(&c, c.name[1] == 's', true);
    else if (strcmp(c.name, "wait") == 0)
        st = cmd_wait(&c);
    else if (strcmp(c.name, "manual_seed") == 0)
        st = cmd_manual_seed(&c);
    else if (strcmp(c.name, "all_gather_into_tensor") == 0)
        st = cmd_all_gather_into(&c);
    else if (lab__eval_is_object_coll(c.name))
        st = c.skip ? DL_OK : lab__eval_object_coll(ev, cmd, c.name, c.comm);
    else if (strcmp(c.name, "batch_isend_irecv") == 0)
        st = cmd_batch(&c, result_p);
    else if (strcmp(c.name, "reduce_scatter_tensor") == 0)
        st = run_coll(&c, DL_COLL_REDUCE_SCATTER);
    else if (strcmp(c.name, "all_to_all_single") == 0)
        st = run_coll(&c, DL_COLL_ALL_TO_ALL);
    else if (dl_coll_parse(c.name, &coll) == DL_OK)
        st = run_coll(&c, coll);
    else
        st = fail(ev, cmd, "unknown command '%s' (see help)", c.name);
    if (st == DL_OK && c.async && c.work == NULL && !c.skip &&
        (c.work = dl_work_finished(c.comm, DL_OK)) == NULL)
        /* all_gather(..., async_op=True), which ran whole: torch's handle,
         * finished; its wait() returns at once */
        st = DL_ERR_NOMEM;
    for (int i = 0; i < 2 && st == DL_OK && c.work != NULL; i++)
        if (c.uses[i] != NULL && lab_pins_add(c.work, c.uses[i]) != DL_OK)
            dl_work_wait(c.work, -1); /* no room to pin: done before anything can drop it */
    if (st == DL_OK && c.work != NULL) {
        memset(result_p, 0, sizeof(*result_p));
        result_p->kind = LAB_V_WORK;
        result_p->work = c.work;
        result_p->irecv_note = c.irecv_note;
        if (c.irecv_into != NULL)
            snprintf(result_p->name, sizeof(result_p->name), "%s", c.irecv_into);
        (void)lab_value_share(result_p); /* reqs.append(h) may hold it too */
    } else if (st == DL_OK && c.sender >= 0) {
        /* src = dist.recv(t): torch's recv returns the sender's rank */
        memset(result_p, 0, sizeof(*result_p));
        result_p->kind = LAB_V_INT;
        result_p->i = c.sender;
    }
out:
    lab_value_clear(&c.group_v);
    for (int i = 0; i < 2; i++)
        lab_value_clear(&c.temp[i]); /* kept while async work reads it (pins.h) */
    return st;
}

/* Reports what an assignment binds, before it is bound; nothing inside a
 * function. */
static dl_status_t report_bound(lab_eval_t *ev, const char *name, const lab_value_t *v)
{
    cmd_t c = {.ev = ev};
    if (lab__eval_quiet(ev))
        return DL_OK;
    switch (v->kind) {
    case LAB_V_TENSOR:
        return report(&c, name, v);
    case LAB_V_LIST:
        /* A list of tensors goes up tensor by tensor (the shell's model
         * holds them); any other list, and the pair of t.max(dim=D), as
         * Python's repr writes it. */
        if (shown_as_result(v))
            return report(&c, name, v);
        /* fall through */
    case LAB_V_DICT:
    case LAB_V_STR: {
        /* name = 'text', the text as Python's repr writes it. */
        char *text = NULL, *line = NULL;
        dl_status_t st = lab__eval_format(ev, NULL, v, true, &text);
        if (st == DL_OK && asprintf(&line, "%s = %s", name, text) < 0)
            st = DL_ERR_NOMEM;
        if (st == DL_OK)
            st = lab_rank_note_text(ev->r, line);
        free(line);
        free(text);
        return st;
    }
    case LAB_V_INT:
        return lab_rank_note(ev->r, "%s = %lld", name, (long long)v->i);
    case LAB_V_FLOAT: {
        char num[32];
        return lab_rank_note(ev->r, "%s = %s", name, lab__eval_py_float(v->f, num, sizeof(num)));
    }
    case LAB_V_BOOL:
        return lab_rank_note(ev->r, "%s = %s", name, v->i ? "True" : "False");
    case LAB_V_GROUP:
        return lab_rank_note(ev->r, "%s: group of %d (this rank is %d in it)", name,
                             dl_comm_size(v->group), dl_comm_rank(v->group));
    default:
        return DL_OK;
    }
}

/* Tells the shell a top-level name no longer holds what it showed (del,
 * or a rebinding to something else than a tensor). */
static dl_status_t emit_unbound(lab_rank_t *r, const char *name)
{
    return lab_rank_emit(r, json_pack("{s:s, s:s}", "type", "unbound", "name", name), NULL, 0);
}

/* The shell keeps the tensors a name held (the terminal view's panels,
 * explain's sizes) until a snapshot replaces them: a name that held a
 * tensor or a list (of tensors, maybe) and is bound to something else
 * than a tensor is told unbound first, as `del` tells it. Called before
 * the binding, when the name still holds its old value. */
static dl_status_t report_rebound(lab_eval_t *ev, const char *name, const lab_value_t *v)
{
    if (lab__eval_quiet(ev))
        return DL_OK;
    const lab_value_t *old = lab__eval_var(ev, name);
    if (old == NULL || old == v || v->kind == LAB_V_TENSOR ||
        (old->kind != LAB_V_TENSOR && old->kind != LAB_V_LIST))
        return DL_OK;
    return emit_unbound(ev->r, name);
}

/* What an assignment bound, marked as such: `set echo off` leaves it out.
 * A statement echoes its first LAB_ECHO_ASSIGN_MAX assignments: a loop of
 * a million would otherwise send the shell a million events, which it
 * keeps until the statement ends (lab/rank/rank.c tells how many more). */
static dl_status_t report_assigned(lab_eval_t *ev, const char *name, const lab_value_t *v)
{
    lab_rank_t *r = ev->r;
    if (!lab__eval_quiet(ev) && r->assign_echoed < LAB_ECHO_ASSIGN_MAX) {
        dl_status_t st = report_rebound(ev, name, v);
        if (st != DL_OK)
            return st;
    }
    if (!lab__eval_quiet(ev) && r->assign_echoed >= LAB_ECHO_ASSIGN_MAX) {
        r->assign_unechoed++;
        int k = 0;
        while (k < r->n_unechoed && strcmp(r->unechoed[k], name) != 0)
            k++;
        if (k == r->n_unechoed && k < LAB_ECHO_NAMES)
            snprintf(r->unechoed[r->n_unechoed++], sizeof(r->unechoed[0]), "%s", name);
        return DL_OK;
    }
    if (!lab__eval_quiet(ev))
        r->assign_echoed++;
    const char *was = r->shown_as;
    r->shown_as = "assign";
    dl_status_t st = report_bound(ev, name, v);
    r->shown_as = was;
    return st;
}

dl_status_t lab__eval_report_assigned(lab_eval_t *ev, const char *name, const lab_value_t *v)
{
    return report_assigned(ev, name, v);
}

dl_status_t lab_eval_echo_rest(lab_eval_t *ev)
{
    lab_rank_t *r = ev->r;
    dl_status_t flushed = lab_eval_flush_line(ev);
    if (r->assign_unechoed == 0 || flushed != DL_OK)
        return flushed;
    r->shown_as = "assign";
    dl_status_t st = lab_rank_note(r,
                                   "... and %lld more assignments (a statement echoes its first "
                                   "%d, then the last value of each name)",
                                   r->assign_unechoed, LAB_ECHO_ASSIGN_MAX);
    for (int k = 0; k < r->n_unechoed && st == DL_OK; k++) {
        const lab_value_t *v = lab__eval_var(ev, r->unechoed[k]);
        /* past the echoed ones, a name may have left its tensor unseen */
        if (v != NULL && v->kind != LAB_V_TENSOR)
            st = emit_unbound(r, r->unechoed[k]);
        if (v != NULL && st == DL_OK)
            st = report_bound(ev, r->unechoed[k], v);
    }
    r->shown_as = NULL; /* the counts are reset where a statement starts */
    return st;
}

/* ---- if and for ----
 *
 * A block runs on the rank, as the code of a torch script runs in every
 * process: each rank tests its own conditions and runs its own loops, and
 * the collectives and sends inside them meet those of the other ranks as
 * they would at the top level. */

static dl_status_t eval_stmt(lab_eval_t *ev, const json_t *stmt);

dl_status_t lab__eval_body(lab_eval_t *ev, const json_t *body)
{
    size_t i;
    json_t *stmt;
    json_array_foreach(body, i, stmt)
    {
        dl_status_t st = eval_stmt(ev, stmt);
        if (st != DL_OK)
            return st;
        if (ev->returning || ev->jump != LAB_JUMP_NONE)
            break;
    }
    return DL_OK;
}

/* Python's truth of a condition: a number is true when not zero; a tensor
 * only when it holds one element (torch refuses the others). */
dl_status_t lab__eval_truth(lab_eval_t *ev, const json_t *node, bool *yes)
{
    lab_value_t v;
    dl_status_t st = lab_eval_expr(ev, node, &v);
    if (st != DL_OK)
        return st;
    st = lab__eval_value_truth(ev, node, &v, yes);
    lab_value_clear(&v);
    return st;
}

dl_status_t lab__eval_value_truth(lab_eval_t *ev, const json_t *node, const lab_value_t *vp,
                                  bool *yes)
{
    const lab_value_t v = *vp;
    dl_status_t st = DL_OK;
    switch (v.kind) {
    case LAB_V_INT:
    case LAB_V_BOOL:
        *yes = v.i != 0;
        break;
    case LAB_V_FLOAT:
        *yes = v.f != 0;
        break;
    case LAB_V_LIST:
    case LAB_V_DICT:
        *yes = v.n != 0;
        break;
    case LAB_V_STR:
        *yes = v.s != NULL && v.s[0] != '\0';
        break;
    case LAB_V_NONE:
        *yes = false;
        break;
    case LAB_V_TENSOR:
        if (v.t->numel != 1) {
            st = fail(ev, node, "Boolean value of Tensor with %s than one value is ambiguous",
                      v.t->numel == 0 ? "less" : "more");
            break;
        }
        if (v.t->device.type == DL_DEVICE_CUDA) {
            dl_tensor_t *h = NULL;
            if (dl_tensor_to(v.t, (dl_device_t){DL_DEVICE_CPU, 0}, &h) != DL_OK) {
                st = fail(ev, node, "cannot copy the tensor from the GPU");
                break;
            }
            *yes = dl_dtype_get(h->dtype, h->data, 0) != 0;
            dl_tensor_free(h);
        } else {
            *yes = dl_dtype_get(v.t->dtype, v.t->data, 0) != 0;
        }
        break;
    case LAB_V_NAME:
        st = lab__eval_fail_undefined(ev, node, &v);
        break;
    default:
        st = fail(ev, node, "%s is not a condition", lab_vkind_a(v.kind));
        break;
    }
    return st;
}

static dl_status_t eval_if(lab_eval_t *ev, const json_t *stmt)
{
    size_t i;
    json_t *br;
    json_array_foreach(json_object_get(stmt, "branches"), i, br)
    {
        bool yes = false;
        dl_status_t st = lab__eval_truth(ev, json_object_get(br, "cond"), &yes);
        if (st != DL_OK)
            return st;
        if (yes)
            return lab__eval_body(ev, json_object_get(br, "body"));
    }
    const json_t *otherwise = json_object_get(stmt, "else");
    return otherwise != NULL ? lab__eval_body(ev, otherwise) : DL_OK;
}

/* range(stop), range(start, stop), range(start, stop, step): the numbers
 * are made one at a time, so a long range costs no memory. */
dl_status_t lab__eval_range_args(lab_eval_t *ev, const json_t *call, int64_t *r)
{
    const json_t *args = json_object_get(call, "args");
    size_t n = json_array_size(args);
    if (n < 1 || n > 3 || json_object_size(json_object_get(call, "kwargs")) != 0)
        return fail(ev, call,
                    "range takes 1 to 3 integers: range(stop), range(start, stop) or "
                    "range(start, stop, step)");
    int64_t v[3] = {0, 0, 1};
    for (size_t k = 0; k < n; k++) {
        lab_value_t x;
        dl_status_t st = lab_eval_expr(ev, json_array_get(args, k), &x);
        if (st != DL_OK)
            return st;
        bool ok = x.kind == LAB_V_INT || x.kind == LAB_V_BOOL;
        lab_vkind_t kind = x.kind;
        int64_t i = x.i;
        lab_value_clear(&x);
        if (!ok)
            return fail(ev, json_array_get(args, k), "range takes integers, not %s",
                        lab_vkind_a(kind));
        v[n == 1 ? 1 : k] = i;
    }
    if (v[2] == 0)
        return fail(ev, call, "range() arg 3 must not be zero");
    memcpy(r, v, sizeof(v));
    return DL_OK;
}

/* "an int", "a 0-d tensor": what v is, for a message. */
static const char *a_kind(const lab_value_t *v)
{
    switch (v->kind) {
    case LAB_V_TENSOR:
        return "a 0-d tensor";
    case LAB_V_INT:
        return "an int";
    case LAB_V_NONE:
        return "None";
    default: {
        static const char *const with_a[] = {"a float",       "a bool",  "a list",
                                             "a work handle", "a group", "a str",
                                             "a function",    "a P2POp", "a dict"};
        static const lab_vkind_t kinds[] = {LAB_V_FLOAT, LAB_V_BOOL,  LAB_V_LIST,
                                            LAB_V_WORK,  LAB_V_GROUP, LAB_V_STR,
                                            LAB_V_FUNC,  LAB_V_P2POP, LAB_V_DICT};
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
            if (v->kind == kinds[i])
                return with_a[i];
        return "a value";
    }
    }
}

static dl_status_t unpack_into(lab_eval_t *ev, const json_t *node, const json_t *names,
                               lab_value_t *v, bool echo);

/* Binds a loop's item to its variable where the loop runs, or unpacks it
 * into its names (a plain rebinding, reported to nobody). */
static dl_status_t bind_loop_var(lab_eval_t *ev, const json_t *where, const char *name,
                                 const json_t *names, lab_value_t *v)
{
    if (names != NULL)
        return unpack_into(ev, where, names, v, false);
    lab_vars_t *vars = lab__eval_vars(ev);
    dl_status_t st = lab_vars_reserve(vars);
    if (st == DL_OK)
        st = report_rebound(ev, name, v); /* for t in range(3), t a tensor before */
    if (st != DL_OK) {
        lab_value_clear(v);
        return st;
    }
    return lab_vars_set(vars, name, v);
}

/* Whether the loop goes on to its next item: no error, no return, no
 * break, no Ctrl-C (which is an error at where); a continue is spent
 * here. Each item is progress, which the rank's beats report: a long loop
 * that sends nothing (its assignments no longer echoed) is busy, not stuck
 * (lab/ctrl/controller.c). */
static bool go_on(lab_eval_t *ev, const json_t *where, dl_status_t *st)
{
    if (ev->jump == LAB_JUMP_CONTINUE)
        ev->jump = LAB_JUMP_NONE;
    if (*st != DL_OK || ev->returning || ev->jump == LAB_JUMP_BREAK)
        return false;
    if (lab_rank_interrupted()) {
        *st = fail(ev, where, "interrupted (Ctrl-C)");
        return false;
    }
    atomic_fetch_add_explicit(&ev->r->progress, 1, memory_order_relaxed);
    return true;
}

/* After an item's body: the container's tensor lent to the loop variable
 * (lab_pins_lend) goes back; *last is the item the variable still names. */
static void give_back(lab_eval_t *ev, const char *item_name, dl_tensor_t *item, dl_tensor_t **last)
{
    lab_value_t *lv = lab__eval_var(ev, item_name);
    bool bound = lv != NULL && lv->kind == LAB_V_TENSOR && lv->t == item && lv->borrowed;
    if (lab_pins_unlend(item)) {
        /* The body dropped it from its list or dict (grads = None): the
         * variable keeps it, as Python's keeps its object. */
        if (bound)
            lv->borrowed = false;
        else if (!lab_pins_keep(item))
            dl_tensor_free(item);
    } else if (bound) {
        *last = item;
    }
}

/* After the loop the variable holds its own copy of the last item, as an
 * assignment from the list would (the list's tensor goes with the list). */
static void own_last(lab_eval_t *ev, const char *item_name, dl_tensor_t *last, dl_status_t *st)
{
    lab_value_t *lv = last != NULL ? lab__eval_var(ev, item_name) : NULL;
    if (lv == NULL || lv->kind != LAB_V_TENSOR || lv->t != last || !lv->borrowed)
        return;
    dl_tensor_t *copy = NULL;
    dl_status_t cst = dl_tensor_clone(last, dl_comm_allocator(ev->r->comm), &copy);
    memset(lv, 0, sizeof(*lv)); /* None without memory for the copy */
    if (cst == DL_OK) {
        lv->kind = LAB_V_TENSOR;
        lv->t = copy;
    } else if (*st == DL_OK) {
        *st = cst;
    }
}

/* The list or dict (kind) a loop walks, found again through path: *c_p
 * NULL where its variable was bound anew (the loop goes on over its copy,
 * as Python over the old object); one that moved within its variable
 * stops the loop in one line, where Python would walk on over it. */
static dl_status_t walked(lab_eval_t *ev, const json_t *where, const lab_path_t *path,
                          lab_vkind_t kind, uint64_t binding, lab_value_t **c_p)
{
    lab_value_t *c = lab__eval_path_find(ev, path);
    *c_p = c != NULL && c->kind == kind && c->binding == binding ? c : NULL;
    if (*c_p == NULL && lab__eval_path_root_same(ev, path))
        return fail(ev, where, "the %s this loop walks left its place in '%s'",
                    kind == LAB_V_DICT ? "dict" : "list", lab__eval_path_name(path));
    return DL_OK;
}

/* for k in d (or d.keys()), for v in d.values() and for k, v in
 * d.items(), d a dict variable: v is the dict's own tensor, as in Python,
 * so that dist.all_reduce(v) and v /= n change the dict. Python refuses a
 * dict whose keys change while it is walked; one bound anew is walked on
 * as it began. */
typedef enum { DICT_NONE, DICT_KEYS, DICT_VALUES, DICT_ITEMS } dict_walk_t;

static dict_walk_t dict_walk(lab_eval_t *ev, const json_t *names, const json_t *iter,
                             const json_t **dict_p)
{
    const char *fn = lab_json_str(iter, "call", NULL);
    const json_t *self = fn != NULL ? json_object_get(iter, "self") : iter;
    dict_walk_t w = fn == NULL                  ? DICT_KEYS
                    : strcmp(fn, "keys") == 0   ? DICT_KEYS
                    : strcmp(fn, "values") == 0 ? DICT_VALUES
                    : strcmp(fn, "items") == 0  ? DICT_ITEMS
                                                : DICT_NONE;
    if (w == DICT_NONE || self == NULL ||
        (fn != NULL && (json_array_size(json_object_get(iter, "args")) != 0 ||
                        json_object_get(iter, "attr") != NULL)) ||
        (w == DICT_ITEMS ? json_array_size(names) != 2 : names != NULL))
        return DICT_NONE;
    *dict_p = self;
    const lab_value_t *d = lab__eval_entry(ev, self);
    return d != NULL && d->kind == LAB_V_DICT ? w : DICT_NONE;
}

static dl_status_t each_dict_entry(lab_eval_t *ev, const json_t *where, const char *var,
                                   const json_t *names, dict_walk_t w, const json_t *dnode,
                                   lab_eval_each_fn fn, void *arg)
{
    /* for k, (a, b) in d.items(): a target in parentheses unpacks in turn */
    const char *item_name = w == DICT_ITEMS ? json_string_value(json_array_get(names, 1)) : var;
    const json_t *item_names = item_name == NULL ? json_array_get(names, 1) : NULL;
    const json_t *key_target = json_array_get(names, 0);
    dl_allocator_t *alloc = dl_comm_allocator(ev->r->comm);
    lab_path_t *path = NULL;
    dl_status_t st = lab__eval_path_of(ev, dnode, &path);
    lab_value_t *d0 = st == DL_OK ? lab__eval_path_find(ev, path) : NULL, seq = {0};
    if (st == DL_OK && d0 == NULL)
        st = fail(ev, where, "the dict to walk is gone"); /* dict_walk found it */
    if (st == DL_OK)
        st = lab_value_copy(d0, alloc, &seq); /* what is walked once d is bound anew */
    if (st != DL_OK) {
        lab__eval_path_free(path);
        return st;
    }
    if (d0->binding == 0)
        lab_value_number(d0);
    uint64_t binding = d0->binding;
    dl_tensor_t *last = NULL;
    for (size_t i = 0; go_on(ev, where, &st); i++) {
        lab_value_t *d;
        if ((st = walked(ev, where, path, LAB_V_DICT, binding, &d)) != DL_OK)
            break;
        bool live = d != NULL;
        if (live && d->n != seq.n) {
            st = fail(ev, where, "dictionary changed size during iteration");
            break;
        }
        if (i >= seq.n)
            break;
        bool same = true;
        if (live && ((st = lab__eval_py_equal(ev, where, &seq.items[i].items[0],
                                              &d->items[i].items[0], &same)) != DL_OK ||
                     !same)) {
            if (st == DL_OK)
                st = fail(ev, where, "dictionary keys changed during iteration");
            break;
        }
        lab_value_t *val = live ? &d->items[i].items[1] : &seq.items[i].items[1], v;
        dl_tensor_t *item = NULL;
        if (w == DICT_KEYS) {
            st = lab_value_copy(&seq.items[i].items[0], alloc, &v);
        } else if (live && item_name != NULL && val->kind == LAB_V_TENSOR &&
                   lab_pins_lend(val->t)) {
            item = val->t;
            v = (lab_value_t){.kind = LAB_V_TENSOR, .t = item, .borrowed = true};
        } else {
            st = lab_value_copy(val, alloc, &v);
        }
        if (st != DL_OK)
            break;
        if (w == DICT_ITEMS) {
            lab_value_t key;
            if ((st = lab_value_copy(&seq.items[i].items[0], alloc, &key)) != DL_OK)
                lab_value_clear(&v);
            else if ((st = bind_loop_var(ev, where, json_string_value(key_target),
                                         json_is_array(key_target) ? key_target : NULL, &key)) !=
                     DL_OK)
                lab_value_clear(&v);
            else
                st = bind_loop_var(ev, where, item_name, item_names, &v);
        } else {
            st = bind_loop_var(ev, where, item_name, NULL, &v);
        }
        if (st == DL_OK) {
            last = NULL;
            st = fn(ev, arg);
        }
        if (item != NULL)
            give_back(ev, item_name, item, &last);
    }
    own_last(ev, item_name, last, &st);
    lab_value_clear(&seq);
    lab__eval_path_free(path);
    return st;
}

dl_status_t lab__eval_each(lab_eval_t *ev, const json_t *where, const char *var,
                           const json_t *names, const json_t *iter, lab_eval_each_fn fn, void *arg)
{
    dl_status_t st = DL_OK;
    const json_t *dnode = NULL;
    dict_walk_t w = dict_walk(ev, names, iter, &dnode);
    if (w != DICT_NONE)
        return each_dict_entry(ev, where, var, names, w, dnode, fn, arg);
    if (strcmp(lab_json_str(iter, "call", ""), "range") == 0 &&
        json_object_get(iter, "self") == NULL) {
        int64_t r[3] = {0, 0, 1};
        if ((st = lab__eval_range_args(ev, iter, r)) != DL_OK)
            return st;
        for (int64_t i = r[0]; (r[2] > 0 ? i < r[1] : i > r[1]) && go_on(ev, where, &st);) {
            lab_value_t v = {.kind = LAB_V_INT, .i = i};
            if ((st = bind_loop_var(ev, where, var, names, &v)) == DL_OK)
                st = fn(ev, arg);
            if (__builtin_add_overflow(i, r[2], &i))
                break;
        }
        return st;
    }
    /* Any other iterable: a list (or tuple) is walked item by item, a
     * tensor row by row, as in Python. */
    lab_value_t seq;
    if ((st = lab_eval_expr(ev, iter, &seq)) != DL_OK)
        return st;
    if (seq.kind == LAB_V_NAME) {
        st = lab__eval_fail_undefined(ev, iter, &seq);
    } else if (lab__eval_seq_len(&seq) >= 0) {
        /* for g in grads: the variable is the list's own tensor, as in
         * Python, so that what the body does to it (all_reduce(g), g /= n,
         * async work) is done to the list's item. The loop walks the list
         * as it is at each step, as Python walks a list the body appends
         * to, pops from or writes into; once the name is bound anew (the
         * body's grads = [...]), it goes on over the list as it began, as
         * Python goes on over the old list. */
        const json_t *over = iter, *item_names = NULL;
        const char *item_name = var, *count_name = NULL;
        int64_t start = 0;
        const json_t *args = json_object_get(iter, "args");
        const lab_value_t *entry = NULL;
        if (seq.kind == LAB_V_LIST && json_array_size(names) == 2 &&
            json_is_string(json_array_get(names, 0)) &&
            strcmp(lab_json_str(iter, "call", ""), "enumerate") == 0 &&
            json_object_get(iter, "self") == NULL && json_array_size(args) >= 1 &&
            (entry = lab__eval_entry(ev, json_array_get(args, 0))) != NULL &&
            entry->kind == LAB_V_LIST) {
            /* for i, g in enumerate(grads): as for g in grads, counted (of a
             * tensor, enumerate(m) gives copies of its rows, as any other
             * iterable's items are) */
            over = json_array_get(args, 0);
            count_name = json_string_value(json_array_get(names, 0));
            /* for i, (a, b) in enumerate(pairs): the item unpacked in turn */
            item_name = json_string_value(json_array_get(names, 1));
            item_names = item_name == NULL ? json_array_get(names, 1) : NULL;
            start = seq.n > 0 && seq.items[0].kind == LAB_V_LIST && seq.items[0].n == 2
                        ? seq.items[0].items[0].i
                        : 0;
        }
        /* grads, d["l"], l[0]: walked as it is, where reading it calls nothing */
        const json_t *list_node =
            seq.kind == LAB_V_LIST && (names == NULL || count_name != NULL) ? over : NULL;
        dl_tensor_t *last = NULL;
        lab_path_t *path = NULL; /* its subscripts evaluated once, here */
        dl_status_t pst = list_node != NULL ? lab__eval_path_of(ev, list_node, &path) : DL_OK;
        if (pst != DL_OK && pst != DL_ERR_NOT_FOUND) {
            lab_value_clear(&seq);
            return pst;
        }
        lab_value_t *l0 = path != NULL ? lab__eval_path_find(ev, path) : NULL;
        if (l0 != NULL && l0->binding == 0)
            lab_value_number(l0); /* a value stored other than by lab_vars_set */
        uint64_t binding = l0 != NULL ? l0->binding : 0;
        for (int64_t i = 0; go_on(ev, where, &st); i++) {
            lab_value_t *l = NULL;
            if (binding != 0 && (st = walked(ev, where, path, LAB_V_LIST, binding, &l)) != DL_OK)
                break;
            const lab_value_t *from = l != NULL ? l : &seq;
            if (i >= lab__eval_seq_len(from))
                break;
            lab_value_t v;
            dl_tensor_t *item = NULL;
            if (from == l && item_name != NULL && l->items[i].kind == LAB_V_TENSOR &&
                lab_pins_lend(l->items[i].t)) {
                item = l->items[i].t;
                v = (lab_value_t){.kind = LAB_V_TENSOR, .t = item, .borrowed = true};
            } else if ((st = lab__eval_seq_item(ev, over, from, i, &v)) != DL_OK) {
                break;
            }
            if (from == l && count_name != NULL) {
                /* the count, then the list's item, as Python unpacks them */
                lab_value_t count = {.kind = LAB_V_INT, .i = start + i};
                if ((st = bind_loop_var(ev, where, count_name, NULL, &count)) == DL_OK)
                    st = bind_loop_var(ev, where, item_name, item_names, &v);
                else
                    lab_value_clear(&v);
            } else {
                st = bind_loop_var(ev, where, var, from == l ? NULL : names, &v);
            }
            if (st == DL_OK) {
                last = NULL; /* the variable no longer holds the item before */
                st = fn(ev, arg);
            }
            if (item != NULL)
                give_back(ev, item_name, item, &last);
        }
        own_last(ev, item_name, last, &st);
        lab__eval_path_free(path);
    } else {
        st = fail(ev, iter, "cannot iterate over %s: a loop takes range(...), a list or a tensor",
                  a_kind(&seq));
    }
    lab_value_clear(&seq);
    return st;
}

static dl_status_t run_body(lab_eval_t *ev, void *body)
{
    return lab__eval_body(ev, body);
}

static dl_status_t eval_for(lab_eval_t *ev, const json_t *stmt)
{
    const char *var = lab_json_str(stmt, "var", NULL);
    const json_t *iter = json_object_get(stmt, "iter"), *body = json_object_get(stmt, "body");
    if (var == NULL || iter == NULL)
        return fail(ev, stmt, "bad for statement");
    dl_status_t st =
        lab__eval_each(ev, stmt, var, json_object_get(stmt, "names"), iter, run_body, (void *)body);
    ev->jump = LAB_JUMP_NONE; /* a break, or a continue in the last item, ends here */
    return st;
}

static dl_status_t eval_while(lab_eval_t *ev, const json_t *stmt)
{
    const json_t *cond = json_object_get(stmt, "cond"), *body = json_object_get(stmt, "body");
    if (cond == NULL || body == NULL)
        return fail(ev, stmt, "bad while statement");
    dl_status_t st = DL_OK;
    bool yes;
    while (go_on(ev, stmt, &st) && (st = lab__eval_truth(ev, cond, &yes)) == DL_OK && yes)
        st = lab__eval_body(ev, body);
    ev->jump = LAB_JUMP_NONE;
    return st;
}

/* assert COND[, MSG]: Python's AssertionError, with MSG as str() writes
 * it, where COND is false. */
static dl_status_t eval_assert(lab_eval_t *ev, const json_t *stmt)
{
    bool yes;
    dl_status_t st = lab__eval_truth(ev, json_object_get(stmt, "cond"), &yes);
    if (st != DL_OK || yes)
        return st;
    const json_t *msg = json_object_get(stmt, "msg");
    if (msg == NULL)
        return fail(ev, stmt, "AssertionError");
    lab_value_t v;
    if ((st = lab_eval_expr(ev, msg, &v)) != DL_OK)
        return st;
    char *text = NULL;
    st = lab__eval_format(ev, msg, &v, false, &text);
    lab_value_clear(&v);
    if (st == DL_OK)
        st = fail(ev, stmt, "AssertionError: %s", text);
    free(text);
    return st;
}

/* ---- def, return and unpacking ---- */

/* def NAME(...): binds NAME to the function where the def runs. */
static dl_status_t eval_def(lab_eval_t *ev, const json_t *stmt)
{
    const char *name = lab_json_str(stmt, "name", NULL);
    if (name == NULL || json_object_get(stmt, "body") == NULL)
        return fail(ev, stmt, "bad def statement");
    lab_vars_t *vars = lab__eval_vars(ev);
    dl_status_t st = lab_vars_reserve(vars);
    if (st != DL_OK)
        return st;
    lab_value_t fn;
    if ((st = lab__eval_make_function(ev, stmt, &fn)) != DL_OK)
        return st;
    if ((st = report_rebound(ev, name, &fn)) != DL_OK) {
        lab_value_clear(&fn);
        return st;
    }
    return lab_vars_set(vars, name, &fn);
}

/* return [EXPR]: what the function gives back. A local variable returned
 * is handed over as it is (a work handle or a group included), anything
 * else is evaluated as usual. */
static dl_status_t eval_return(lab_eval_t *ev, const json_t *stmt)
{
    if (ev->calls == 0 || ev->scope == NULL)
        return fail(ev, stmt, "'return' outside function");
    const json_t *node = json_object_get(stmt, "value");
    lab_value_t v = {.kind = LAB_V_NONE};
    const char *name = lab_json_str(node, "name", NULL);
    lab_value_t *local = name != NULL ? lab_vars_get(&ev->scope->vars, name) : NULL;
    if (local != NULL && local->kind == LAB_V_NAME)
        return lab__eval_fail_undefined(ev, node, local); /* del x, then return x */
    if (local != NULL && !local->borrowed && ev->guarded == 0) {
        v = *local;
        memset(local, 0, sizeof(*local));
    } else if (node != NULL) {
        dl_status_t st = lab_eval_expr(ev, node, &v);
        if (st != DL_OK)
            return st;
        const lab_value_t *undefined = lab__eval_undefined_in(&v);
        if (undefined != NULL) {
            st = lab__eval_fail_undefined(ev, node, undefined);
            lab_value_clear(&v);
            return st;
        }
    }
    lab_value_clear(&ev->ret);
    ev->ret = v;
    ev->returning = true;
    return DL_OK;
}

/* rank = dist.get_rank() at a script's top: name (rank or world_size) may
 * be bound only to the value it holds already, which binds nothing new;
 * another would never be read back. DL_OK, with *held_p that value. */
static dl_status_t launcher_value(lab_eval_t *ev, const json_t *node, const char *name,
                                  const lab_value_t *v, lab_value_t *held_p)
{
    *held_p = (lab_value_t){.kind = LAB_V_INT, .i = lab__eval_builtin_value(ev, name)};
    if ((v->kind == LAB_V_INT || v->kind == LAB_V_BOOL) && v->i == held_p->i)
        return DL_OK;
    return fail(ev, node,
                "cannot assign to '%s': it is %lld here, set by the launcher (an assignment of "
                "that value, as %s = dist.get_%s(), is accepted)",
                name, (long long)held_p->i, name, name);
}

/* Whether name is rank or world_size where the launcher set it: outside
 * any function (a def's parameter or local may take the name). */
static bool launcher_name(const lab_eval_t *ev, const char *name)
{
    return name != NULL && lab__eval_is_builtin(name) && ev->calls == 0;
}

static size_t count_leaves(const json_t *names)
{
    size_t i, k = 0;
    const json_t *n;
    json_array_foreach(names, i, n)
    {
        k += json_is_array(n) ? count_leaves(n) : 1; /* a name, or a *name */
    }
    return k;
}

/* One name of an unpacking and the value it is to get. */
typedef struct {
    const char *name;
    lab_value_t v;
} leaf_t;

/* Item i of v for an unpacking: a list's own, taken, or a tensor's row or
 * a string's character. */
static dl_status_t take_item(lab_eval_t *ev, const json_t *node, lab_value_t *v, size_t i,
                             lab_value_t *item)
{
    memset(item, 0, sizeof(*item));
    if (v->kind == LAB_V_LIST) {
        *item = v->items[i];
        memset(&v->items[i], 0, sizeof(v->items[i]));
    } else {
        dl_status_t st = lab__eval_seq_item(ev, node, v, (int64_t)i, item);
        if (st != DL_OK)
            return st;
    }
    if (item->borrowed) {
        /* A handle the list only refers to. */
        memset(item, 0, sizeof(*item));
        return fail(ev, node, "handles and groups cannot be copied");
    }
    return DL_OK;
}

/* The items of v (a list or tuple, a dict's keys, a tensor's rows, a
 * string's characters) matched to names, a nested group unpacked in
 * turn (for i, (a, b) in enumerate(zip(x, y))): appended to leaves at
 * *k_p. v is taken over; what is appended is the caller's. */
static dl_status_t unpack_leaves(lab_eval_t *ev, const json_t *node, const json_t *names,
                                 lab_value_t *v, leaf_t *leaves, size_t *k_p)
{
    size_t n = json_array_size(names);
    dl_status_t st = DL_OK;
    if (v->kind == LAB_V_DICT) {
        /* a, b = d: its keys, as Python unpacks a dict */
        lab_value_t keys;
        if ((st = lab_value_new_list(&keys, v->n)) != DL_OK) {
            lab_value_clear(v);
            return st;
        }
        for (size_t i = 0; i < v->n; i++) {
            keys.items[i] = v->items[i].items[0];
            memset(&v->items[i].items[0], 0, sizeof(keys.items[i]));
        }
        keys.n = v->n;
        lab_value_clear(v);
        *v = keys;
    }
    int64_t len = lab__eval_seq_len(v);
    size_t have = len > 0 ? (size_t)len : 0;
    /* a *name among the targets takes what the others leave */
    size_t star = n, i;
    const json_t *t;
    json_array_foreach(names, i, t)
    {
        if (json_is_object(t))
            star = i;
    }
    size_t fixed = n - (star < n), rest = have > fixed ? have - fixed : 0;
    if (v->kind == LAB_V_NAME)
        st = lab__eval_fail_undefined(ev, node, v);
    else if (len < 0)
        st = fail(ev, node, "cannot unpack %s", a_kind(v));
    else if (have < fixed)
        st = fail(ev, node, "not enough values to unpack (expected %s%zu, got %zu)",
                  star < n ? "at least " : "", fixed, have);
    else if (have > n && star == n)
        st = fail(ev, node, "too many values to unpack (expected %zu)", n);
    for (size_t k = 0; k < n && st == DL_OK; k++) {
        const json_t *target = json_array_get(names, k);
        lab_value_t item = {0};
        if (k == star) {
            if ((st = lab_value_new_list(&item, rest)) != DL_OK)
                break;
            for (; item.n < rest && st == DL_OK; item.n++)
                st = take_item(ev, node, v, k + item.n, &item.items[item.n]);
            if (st != DL_OK) {
                lab_value_clear(&item);
                break;
            }
            target = json_object_get(target, "star");
        } else if ((st = take_item(ev, node, v, k < star ? k : k - 1 + rest, &item)) != DL_OK) {
            break;
        }
        if (json_is_string(target))
            leaves[(*k_p)++] = (leaf_t){json_string_value(target), item};
        else
            st = unpack_leaves(ev, node, target, &item, leaves, k_p);
    }
    lab_value_clear(v);
    return st;
}

/* The items of v bound to names, nested groups included: a, b = EXPR,
 * and a loop's for a, b in ... . Checked whole before anything is bound;
 * echoed when echo. v is taken over. */
static dl_status_t unpack_into(lab_eval_t *ev, const json_t *node, const json_t *names,
                               lab_value_t *v, bool echo)
{
    /* a, (b, c) = 5, (6, nope): nope is not defined, and nothing is bound */
    const lab_value_t *undefined = lab__eval_undefined_in(v);
    if (undefined != NULL) {
        dl_status_t st = lab__eval_fail_undefined(ev, node, undefined);
        lab_value_clear(v);
        return st;
    }
    size_t n = count_leaves(names), k = 0;
    leaf_t *leaves = calloc(n > 0 ? n : 1, sizeof(*leaves));
    if (leaves == NULL) {
        lab_value_clear(v);
        return DL_ERR_NOMEM;
    }
    dl_status_t st = unpack_leaves(ev, node, names, v, leaves, &k);
    /* rank, world_size = dist.get_rank(), dist.get_world_size() */
    for (size_t i = 0; i < k && st == DL_OK; i++) {
        lab_value_t held;
        if (launcher_name(ev, leaves[i].name))
            st = launcher_value(ev, node, leaves[i].name, &leaves[i].v, &held);
    }
    lab_vars_t *vars = lab__eval_vars(ev);
    size_t i = 0;
    for (; i < k && st == DL_OK; i++) {
        const char *name = leaves[i].name;
        lab_value_t *item = &leaves[i].v;
        if (launcher_name(ev, name)) { /* checked above: binds nothing */
            lab_value_clear(item);
            lab_value_t held = {.kind = LAB_V_INT, .i = lab__eval_builtin_value(ev, name)};
            if (echo && (st = report_assigned(ev, name, &held)) != DL_OK)
                break;
            continue;
        }
        if ((st = lab_vars_reserve(vars)) != DL_OK ||
            (echo && (st = report_assigned(ev, name, item)) != DL_OK) ||
            (!echo && (st = report_rebound(ev, name, item)) != DL_OK))
            break;
        st = lab_vars_set(vars, name, item);
    }
    for (; i < k; i++)
        lab_value_clear(&leaves[i].v);
    free(leaves);
    return st;
}

dl_status_t lab__eval_unbind(lab_eval_t *ev, const char *name)
{
    lab_value_t *own = lab_vars_get(lab__eval_vars(ev), name);
    if (own == NULL || own->kind == LAB_V_NAME)
        return DL_ERR_NOT_FOUND;
    if (ev->scope != NULL) {
        /* a function's variable stays its own, unbound: reading it is an
         * error, not the global of that name, as in Python */
        lab_value_clear(own);
        own->kind = LAB_V_NAME;
        snprintf(own->name, sizeof(own->name), "%s", name);
        return DL_OK;
    }
    lab_vars_del(&ev->vars, name);
    if (lab__eval_quiet(ev))
        return DL_OK;
    return emit_unbound(ev->r, name);
}

/* del NAME: the name unbound where the code runs (a function's own
 * variable in a function), and, at the top level, dropped from the
 * shell's model (the terminal view's panels). */
static dl_status_t del_name(lab_eval_t *ev, const json_t *node, const char *name)
{
    if (launcher_name(ev, name))
        return fail(ev, node, "cannot delete '%s': it is set by the launcher", name);
    dl_status_t st = lab__eval_unbind(ev, name);
    if (st != DL_ERR_NOT_FOUND)
        return st;
    if (ev->scope != NULL && lab__eval_var(ev, name) != NULL)
        return fail(ev, node,
                    "cannot access local variable '%s' where it is not associated with a value "
                    "(del in a function deletes its own variables)",
                    name);
    return fail(ev, node, "'%s' is not defined", name);
}

/* The names lab__eval_item_method binds its arguments under, in a scope
 * of their own: no line can spell them (they hold a space). */
static const char *const item_args[] = {"item arg 1", "item arg 2"};

dl_status_t lab__eval_item_method(lab_eval_t *ev, const json_t *node, const json_t *base,
                                  const char *fn, lab_value_t *args, int nargs)
{
    json_t *call = json_pack("{s:s, s:O, s:[], s:{}}", "call", fn, "self", base, "args", "kwargs");
    lab_scope_t sc = {.up = ev->scope};
    dl_status_t st = call != NULL && lab__eval_place(call, node) ? DL_OK : DL_ERR_NOMEM;
    for (int k = 0; k < nargs; k++) {
        if (st == DL_OK && json_array_append_new(json_object_get(call, "args"),
                                                 lab__eval_name_at(node, item_args[k])) != 0)
            st = DL_ERR_NOMEM;
        if (st == DL_OK)
            st = lab_vars_set(&sc.vars, item_args[k], &args[k]);
        lab_value_clear(&args[k]);
    }
    if (st == DL_OK) {
        lab_value_t out;
        lab_scope_t *saved = ev->scope;
        ev->scope = &sc;
        st = lab__eval_list_method(ev, call, fn, &out);
        ev->scope = saved;
        if (st == DL_OK)
            lab_value_clear(&out);
    }
    lab_vars_clear(&sc.vars);
    json_decref(call);
    return st;
}

/* A slice's parts as the tuple (start, stop, step), None where not given. */
dl_status_t lab__eval_slice_tuple(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    static const char *const parts[] = {"start", "stop", "step"};
    const json_t *sl = json_object_get(node, "slice");
    dl_status_t st = lab_value_new_list(out, 3);
    if (st != DL_OK)
        return st;
    out->tuple = true;
    for (size_t k = 0; k < 3; k++)
        out->items[k].kind = LAB_V_NONE;
    out->n = 3;
    for (size_t k = 0; k < 3 && st == DL_OK; k++) {
        const json_t *part = json_object_get(sl, parts[k]);
        if (part != NULL && (st = lab_eval_expr(ev, part, &out->items[k])) == DL_OK &&
            lab__eval_undefined(&out->items[k]))
            st = lab__eval_fail_undefined(ev, part, &out->items[k]);
    }
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

/* del X[K]: the item of a list (by its index) or of a dict (by its key:
 * d[None], d[1, 2] too), as X.pop(K) takes it out, through the list
 * methods' path (X may be an item of another: del d["a"]["b"]); del
 * X[i:j:k], the items of a list that a slice names. */
static dl_status_t del_item(lab_eval_t *ev, const json_t *node)
{
    lab_bracket_t br;
    lab_value_t key = {0};
    dl_status_t st;
    if (json_object_get(node, "slice") != NULL && json_object_get(node, "dim") == NULL) {
        if ((st = lab__eval_slice_tuple(ev, node, &key)) != DL_OK)
            return st;
        return lab__eval_item_method(ev, node, json_object_get(node, "index"), LAB_EVAL_DELSLICE,
                                     &key, 1);
    }
    if (!lab__eval_bracket_of(node, &br))
        return fail(ev, node,
                    "del takes names and items of one subscript (del x, del l[i], del d[k])");
    if ((st = lab__eval_bracket_key(ev, &br, &key)) != DL_OK)
        return st;
    if (lab__eval_undefined(&key)) {
        st = lab__eval_fail_undefined(ev, node, &key);
        lab_value_clear(&key);
        return st;
    }
    return lab__eval_item_method(ev, node, br.base, LAB_EVAL_DELITEM, &key, 1);
}

/* del TARGET, ...: each in turn, as Python's (the ones before an error
 * stay deleted). */
static dl_status_t eval_del(lab_eval_t *ev, const json_t *stmt)
{
    size_t i;
    const json_t *item;
    json_array_foreach(json_object_get(stmt, "del"), i, item)
    {
        const char *name = lab_json_str(item, "name", NULL);
        dl_status_t st = name != NULL ? del_name(ev, item, name) : del_item(ev, item);
        if (st != DL_OK)
            return st;
    }
    return DL_OK;
}

/* a, b = EXPR */
static dl_status_t eval_unpack(lab_eval_t *ev, const json_t *stmt)
{
    const json_t *node = json_object_get(stmt, "value");
    lab_value_t v;
    dl_status_t st = lab_eval_expr(ev, node, &v);
    return st != DL_OK ? st : unpack_into(ev, node, json_object_get(stmt, "names"), &v, true);
}

static dl_status_t run_stmt(lab_eval_t *ev, const json_t *stmt, void *arg)
{
    (void)arg;
    return eval_stmt(ev, stmt);
}

static dl_status_t eval_stmt(lab_eval_t *ev, const json_t *stmt)
{
    const char *kind = lab_json_str(stmt, "kind", "");
    const char *name = lab_json_str(stmt, "name", NULL);
    const json_t *cmd = json_object_get(stmt, "command");
    lab_value_t v = {0};
    dl_status_t st;
    /* An 'on' inside a block: the ranks it does not name pass it by. */
    const json_t *targets = json_object_get(stmt, "targets");
    if (json_is_array(targets)) {
        bool mine = false;
        size_t i;
        json_t *r;
        json_array_foreach(targets, i, r)
        {
            mine = mine || json_integer_value(r) == ev->r->rank;
        }
        if (!mine)
            return DL_OK;
    }
    if (cmd != NULL && lab__eval_has_star(json_object_get(cmd, "args")))
        return lab__eval_starred(ev, stmt, "command", run_stmt, NULL); /* print(*l) */
    /* t += x, t[i] = x, and t.fill_(v) ("inplace": written into all of t) */
    if (json_object_get(stmt, "op") != NULL || json_object_get(stmt, "target") != NULL ||
        json_object_get(stmt, "inplace") != NULL) {
        const char *changed = NULL;
        if ((st = lab__eval_store(ev, stmt, &changed)) != DL_OK)
            return st;
        lab_value_t *var = lab__eval_var(ev, changed);
        return var != NULL ? report_assigned(ev, changed, var) : DL_OK;
    }
    if (strcmp(kind, "if") == 0)
        return eval_if(ev, stmt);
    if (strcmp(kind, "for") == 0)
        return eval_for(ev, stmt);
    if (strcmp(kind, "while") == 0)
        return eval_while(ev, stmt);
    if (strcmp(kind, "break") == 0 || strcmp(kind, "continue") == 0) {
        ev->jump = kind[0] == 'b' ? LAB_JUMP_BREAK : LAB_JUMP_CONTINUE;
        return DL_OK;
    }
    if (strcmp(kind, "def") == 0)
        return eval_def(ev, stmt);
    if (strcmp(kind, "return") == 0)
        return eval_return(ev, stmt);
    if (strcmp(kind, "pass") == 0)
        return DL_OK;
    if (strcmp(kind, "assert") == 0)
        return eval_assert(ev, stmt);
    if (strcmp(kind, "del") == 0)
        return eval_del(ev, stmt);
    if (strcmp(kind, "try") == 0)
        return lab__eval_try(ev, stmt);
    if (strcmp(kind, "raise") == 0)
        return lab__eval_raise(ev, stmt);
    if (strcmp(kind, "setenv") == 0)
        return lab__eval_setenv(ev, stmt);
    if (strcmp(kind, "expr") == 0) {
        /* An expression shown ("show"), as at Python's prompt, and a
         * call's value ("result") where it is not None. */
        const json_t *node = json_object_get(stmt, "value");
        if ((st = lab_eval_expr(ev, node, &v)) != DL_OK)
            return st;
        if (lab__eval_undefined(&v)) {
            /* barier alone: the parser names the command it is near. */
            const char *near = lab_json_str(stmt, "near", NULL);
            st = near != NULL
                     ? fail(ev, node, "'%s' is not defined; did you mean the command '%s'?", v.name,
                            near)
                     : lab__eval_fail_undefined(ev, node, &v);
        } else if (json_is_true(json_object_get(stmt, "show")) ||
                   (json_is_true(json_object_get(stmt, "result")) &&
                    !(v.kind == LAB_V_BOOL &&
                      strcmp(lab_json_str(node, "call", ""), "wait") == 0))) {
            /* nothing in a function's body; h.wait()'s True neither: the
             * wait has said "h: done" */
            st = lab__eval_show(ev, node, &v);
        }
        lab_value_clear(&v);
        return st;
    }
    if (strcmp(kind, "assign") == 0 && json_object_get(stmt, "names") != NULL)
        return eval_unpack(ev, stmt);
    bool launcher = launcher_name(ev, name);
    if (launcher && (cmd != NULL || strcmp(kind, "assign") != 0))
        return fail(ev, stmt, "cannot assign to '%s': it is read-only, set by the launcher", name);
    bool append = json_is_true(json_object_get(stmt, "append"));
    if (append) {
        /* reqs.append(dist.isend(...)): the list is checked before the
         * command runs, so that a failed statement changes nothing */
        lab_value_t *l = lab__eval_var(ev, name);
        if (l == NULL)
            return fail(ev, stmt, "'%s' is not defined", name);
        if (l->kind != LAB_V_LIST || l->tuple || l->name[0] != '\0')
            return fail(ev, stmt, "'%s' object has no attribute 'append'", lab__eval_type_name(l));
        if (l->borrowed || lab__eval_lent(ev, l->items))
            return fail(ev, stmt,
                        "append() on a list a running function was given is not supported "
                        "here: build a new list (l + [x]) and return it");
    }
    if (cmd != NULL) {
        st = run_command(ev, cmd, NULL, &v);
        if (st != DL_OK)
            return st;
        if (append) {
            /* what the command returns, None for most, as Python appends it */
            lab_value_t *l = lab__eval_var(ev, name);
            lab_value_t *items = realloc(l->items, (l->n + 2) * sizeof(*items));
            if (items == NULL) {
                lab_value_clear(&v);
                return DL_ERR_NOMEM;
            }
            l->items = items;
            l->items[l->n++] = v;
            return report_assigned(ev, name, l);
        }
        if (v.kind == LAB_V_WORK && name == NULL) {
            lab_value_clear(&v);
            return fail(ev, cmd, "%s returns a handle: write h = %s ...",
                        lab_json_str(cmd, "cmd", ""), lab_json_str(cmd, "cmd", ""));
        }
        if (name == NULL) {
            lab_value_clear(&v);
            return DL_OK;
        }
        /* r = dist.all_reduce(t) binds None, as torch's call returns it */
        if (v.kind != LAB_V_WORK && v.kind != LAB_V_INT && v.kind != LAB_V_LIST) {
            lab_value_clear(&v);
            v.kind = LAB_V_NONE;
        }
    } else if (strcmp(kind, "assign") == 0 && name != NULL) {
        if ((st = lab_eval_expr(ev, json_object_get(stmt, "value"), &v)) != DL_OK)
            return st;
        const lab_value_t *undefined = lab__eval_undefined_in(&v);
        if (undefined != NULL) {
            st = lab__eval_fail_undefined(ev, json_object_get(stmt, "value"), undefined);
            lab_value_clear(&v);
            return st;
        }
        if (v.borrowed) {
            lab_value_clear(&v);
            return fail(ev, stmt, "handles and groups cannot be copied");
        }
        if (launcher) {
            lab_value_t held;
            st = launcher_value(ev, stmt, name, &v, &held);
            lab_value_clear(&v);
            return st != DL_OK ? st : report_assigned(ev, name, &held);
        }
    } else {
        return fail(ev, stmt, "not a statement");
    }
    /* Everything that can fail comes before the binding, so that a failed
     * assignment leaves the variable as it was. */
    lab_vars_t *vars = lab__eval_vars(ev);
    if ((st = lab_vars_reserve(vars)) != DL_OK || (st = report_assigned(ev, name, &v)) != DL_OK) {
        lab_value_clear(&v);
        return st;
    }
    if ((st = lab_vars_set(vars, name, &v)) != DL_OK)
        return st;
    /* a = b = 0: b gets what a got, as a = 0; b = a would give it */
    size_t i;
    json_t *also;
    json_array_foreach(json_object_get(stmt, "also"), i, also)
    {
        const char *other = json_string_value(also);
        lab_value_t c = {0};
        if ((st = lab_value_copy(lab__eval_var(ev, name), dl_comm_allocator(ev->r->comm), &c)) !=
                DL_OK ||
            (st = lab_vars_reserve(vars)) != DL_OK ||
            (st = report_assigned(ev, other, &c)) != DL_OK ||
            (st = lab_vars_set(vars, other, &c)) != DL_OK) {
            lab_value_clear(&c);
            return st;
        }
    }
    return DL_OK;
}

dl_status_t lab_eval_stmt(lab_eval_t *ev, const json_t *stmt)
{
    ev->error[0] = '\0';
    ev->jump = LAB_JUMP_NONE;
    dl_status_t st = eval_stmt(ev, stmt);
    /* Every failure reaches the shell as one line that says why, also one
     * that comes from below the evaluator with no message of its own. */
    if (st != DL_OK && ev->error[0] == '\0')
        snprintf(ev->error, sizeof(ev->error), "%s: %s",
                 lab_json_str(stmt, "name",
                              lab_json_str(json_object_get(stmt, "command"), "cmd", "statement")),
                 dl_strerror(st));
    return st;
}

void lab_eval_fini(lab_eval_t *ev)
{
    free(ev->open_line);
    ev->open_line = NULL;
    free(ev->lent);
    ev->lent = NULL;
    ev->n_lent = ev->cap_lent = 0;
    lab_value_clear(&ev->ret);
    lab_vars_clear(&ev->vars);
}
