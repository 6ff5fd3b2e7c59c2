/* The rank side of the shell's language: evaluates the statements the
 * controller parsed (lab/lang/lang.h describes the JSON AST) against this rank's
 * variables and communicator, and reports what changed as events. */
#ifndef LAB_EVAL_H
#define LAB_EVAL_H

#include <string.h>

#include <jansson.h>

#include "distlab/random.h"
#include "lab/rank/rank.h"
#include "lab/rank/values.h"

/* The variables of a function call, or of a list comprehension, as
 * Python keeps them apart from the globals: what they assign stays theirs.
 * A name is looked up in the innermost scope, then (for a comprehension)
 * in the scopes around it up to the function's, then in the globals. */
typedef struct lab_scope {
    lab_vars_t vars;
    struct lab_scope *up; /* a comprehension's enclosing scope; NULL: the globals come next */
    const json_t *def;    /* the def of the function running; NULL for a comprehension */
    /* a function's scope: its call's number, and the call that called it
     * (the calls running, innermost first: ev->frames) */
    uint64_t id;
    struct lab_scope *caller;
} lab_scope_t;

/* The longest list a list operation makes (list + list, list * n,
 * append, extend, list(), zip): Python's grow, ours stop here. */
#define LAB_LIST_MAX (1u << 20)

/* The longest string + and the string methods make. */
#define LAB_STR_MAX (1u << 20)

/* How deep calls of functions (def) may nest: a recursion that goes on is
 * an error, as Python's RecursionError, before it spends the stack. */
#define LAB_EVAL_MAX_CALLS 100

typedef struct {
    lab_rank_t *r;
    lab_vars_t vars; /* the globals */
    char error[384];
    /* torch's default CPU generator, one per rank as one per process in
     * torch; seeded on first use (lab__eval_rng). */
    dl_rng_t rng;
    bool rng_seeded;
    /* Python's random module's generator, one per rank as one per
     * process; seeded with the rank on first use (eval_pyrandom.c). */
    dl_rng_t pyrng;
    bool pyrng_seeded;
    lab_scope_t *scope; /* the innermost scope, NULL at the top level */
    int calls;          /* calls of functions running */
    bool returning;     /* a return statement ran: the bodies around it stop */
    /* a break or continue ran: the bodies up to its loop stop, and the
     * loop ends (break) or goes on to its next item (continue) */
    enum { LAB_JUMP_NONE, LAB_JUMP_BREAK, LAB_JUMP_CONTINUE } jump;
    lab_value_t ret; /* what it returns */
    /* what print(..., end='') left without its newline: the next print
     * continues it; the statement's end shows it (malloc'd, or NULL) */
    char *open_line;
    /* the items of the list variables running calls were given by
     * reference: such a list may not grow or shrink until they return */
    const lab_value_t **lent;
    size_t n_lent, cap_lent;
    bool open_shown; /* the last print's line was left open, and shown so */
    /* the index node that last indexed by a list or a tensor: an index in
     * the same brackets after it is refused (m[[0, 1], 1]) */
    const json_t *fancy_node;
    /* in an except clause, the error it caught (as ev->error held it),
     * which a raise alone raises again; NULL elsewhere */
    const char *handling;
    /* try blocks with a finally around the running code, in the running
     * function: a return there copies its local, which finally may read */
    int guarded;
    lab_scope_t *frames; /* the functions running, innermost first */
    uint64_t calls_made; /* numbers each call's scope */
} lab_eval_t;

/* Evaluates one expression node into *out_p (a new value; names of
 * variables give copies). On error fills ev->error with a message that
 * names the column. */
dl_status_t lab_eval_expr(lab_eval_t *ev, const json_t *node, lab_value_t *out_p);

/* Runs one statement; emits snap/note events; DL_OK or an error whose
 * message is in ev->error. Nothing is bound when it fails. */
dl_status_t lab_eval_stmt(lab_eval_t *ev, const json_t *stmt);

/* An expression alone (t, t + 1, m.T) shown as Python's prompt shows it:
 * a tensor or number as "t = ..." or "value = ...", anything else as its
 * repr; None and anything inside a function show nothing. */
dl_status_t lab__eval_show(lab_eval_t *ev, const json_t *node, const lab_value_t *v);

/* At a statement's end: the line a print left open, how many of its
 * assignments were not echoed (past LAB_ECHO_ASSIGN_MAX), and the last
 * value of each name they bound, so that the shell's model ends with what
 * the rank holds. */
dl_status_t lab_eval_echo_rest(lab_eval_t *ev);
/* Shows the line print(..., end='') left open, if any. */
dl_status_t lab_eval_flush_line(lab_eval_t *ev);

void lab_eval_fini(lab_eval_t *ev);

/* A view of a tensor variable: t, t[i], t[a:b:c], m[1][0:2], ... Offsets
 * and strides count elements of base's dtype. */
typedef struct {
    dl_tensor_t *base;
    int64_t off;
    int ndim;
    int64_t shape[DL_MAX_DIMS];
    int64_t stride[DL_MAX_DIMS];
} lab_view_t;

/* The view that node (a name with subscripts) names; *var_p and *name_p
 * receive the variable it is a view of. */
dl_status_t lab__eval_view(lab_eval_t *ev, const json_t *node, lab_value_t **var_p,
                           const char **name_p, lab_view_t *v);
bool lab__view_contiguous(const lab_view_t *v);
/* A tensor over the view's memory (it owns nothing); contiguous views only. */
void lab__view_tensor(const lab_view_t *v, dl_tensor_t *t);
/* A copy of host tensor t with its dimensions in the order perm gives
 * (t.permute(perm), t.transpose(a, b), t.t()). */
dl_status_t lab__eval_permute(lab_eval_t *ev, const dl_tensor_t *t, const int *perm,
                              lab_value_t *out);
/* value written into all of host tensor dst as t[...] = value writes it
 * (broadcast, cast to dst's dtype); inplace: as the result of t op= x,
 * refused where torch's can_cast refuses it. */
dl_status_t lab__eval_write_into(lab_eval_t *ev, const json_t *node, dl_tensor_t *dst,
                                 const lab_value_t *value, bool inplace);
/* t[mask] and t[idx] of a host tensor (eval_index.c): whether at is such
 * an index (a bool or integer tensor, a list of ints or bools), and the
 * read and the write (op NULL for =, or the operator of op=). */
bool lab__eval_is_fancy_index(const lab_value_t *at);
/* Whether a fancy index is a mask: a bool or uint8 tensor, or a list of
 * bools. */
bool lab__eval_is_mask_index(const lab_value_t *at);
dl_status_t lab__eval_fancy_get(lab_eval_t *ev, const json_t *node, const dl_tensor_t *base,
                                const lab_value_t *at, lab_value_t *out);
dl_status_t lab__eval_fancy_set(lab_eval_t *ev, const json_t *node, dl_tensor_t *base,
                                const lab_value_t *at, const char *op, const lab_value_t *value);
/* t op= x, t[...] = x and t[...] op= x (a statement with "op" or "target");
 * *name_p receives the variable changed. */
dl_status_t lab__eval_store(lab_eval_t *ev, const json_t *stmt, const char **name_p);

/* How many items v has as a sequence, a list's or tuple's items or a
 * tensor's rows (what a for walks, a, b = unpacks, zip pairs), or -1 when
 * it is none; and item i of it, a copy (a row: a new tensor). */
int64_t lab__eval_seq_len(const lab_value_t *v);
dl_status_t lab__eval_seq_item(lab_eval_t *ev, const json_t *node, const lab_value_t *v, int64_t i,
                               lab_value_t *out);
/* Row i of a tensor or item i of a list (base[i]), a new value. */
dl_status_t lab__eval_row(lab_eval_t *ev, const json_t *node, const lab_value_t *base, int64_t i,
                          lab_value_t *out);

/* Python's and torch's binary operators (+, ==, ...) on two values. */
/* torch.isclose and allclose: rtol, atol and equal_nan as torch's, and
 * whether all of them (a bool) or each (a bool tensor) is asked. */
typedef struct {
    double rtol, atol;
    bool equal_nan, all;
    bool exact;       /* torch.equal: any dtypes, the same shape, the same values */
    const char *name; /* of the function, for messages */
} lab_close_t;
dl_status_t lab__eval_isclose(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                              const lab_value_t *b, const lab_close_t *how, lab_value_t *out);
/* torch.where(cond, a, b): a's element where cond is True, else b's, each
 * a tensor or a number, broadcast together and of torch's result type. */
dl_status_t lab__eval_where(lab_eval_t *ev, const json_t *node, const lab_value_t *cond,
                            const lab_value_t *a, const lab_value_t *b, lab_value_t *out);
/* torch.clamp(x, min, max) of a tensor x and bounds that are tensors,
 * numbers or None (kind LAB_V_NONE), at least one given: in the three's
 * result dtype, a number bound as C++'s std::max and std::min take it
 * (-0.0 kept, one NaN bound ignored; two number bounds with a NaN make
 * every element NaN, as torch fills them), a tensor one as maximum and
 * minimum. */
dl_status_t lab__eval_clamp(lab_eval_t *ev, const json_t *node, const lab_value_t *x,
                            const lab_value_t *lo, const lab_value_t *hi, lab_value_t *out);
/* -v, Python's and torch's unary minus (-0.0 of 0.0; a bool tensor is
 * refused, as torch refuses it). */
dl_status_t lab__eval_negate(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                             lab_value_t *out);
dl_status_t lab__eval_arith(lab_eval_t *ev, const json_t *node, const char *op,
                            const lab_value_t *a, const lab_value_t *b, lab_value_t *out);
/* Whether op is a comparison: ==, <, ..., in, not in, is, is not. */
bool lab__eval_is_compare_op(const char *op);
/* A run of comparisons, a < b <= c, x in l, x is None (eval_compare.c). */
dl_status_t lab__eval_compare(lab_eval_t *ev, const json_t *terms, const json_t *ops,
                              lab_value_t *out);
/* Whether a and b are equal as Python's `in` tests it: a tensor's ==
 * made a bool (refused for more than one element, as bool() is). */
dl_status_t lab__eval_values_equal(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                                   const lab_value_t *b, bool *eq);
/* l.append(x) and Python's other list methods (eval_list.c). */
bool lab__eval_is_list_method(const char *fn);
dl_status_t lab__eval_list_method(lab_eval_t *ev, const json_t *node, const char *fn,
                                  lab_value_t *out);
#define LAB_BRACKET_MAX 8 /* subscripts in one pair of brackets that make a dict's key */

/* The subscripts of one pair of brackets that can name an entry: l[i],
 * d[k], and d[1, 2], d[1,], d[None] or d[None, 1], a dict's tuple or None
 * key. */
typedef struct {
    const json_t *at[LAB_BRACKET_MAX]; /* in order; NULL: None */
    int n;
    bool tuple;
    const json_t *base; /* what the brackets follow */
} lab_bracket_t;

/* node's brackets, node the last subscript of them (not one a later
 * subscript in the same brackets follows, which has "dim"): false where
 * they name no entry (a slice, an ellipsis). */
bool lab__eval_bracket_of(const json_t *node, lab_bracket_t *b);
/* What node names in place, when it calls nothing: a variable, or an
 * entry of a list or dict in one (grads, d["l"], l[0]["t"]); NULL
 * otherwise, or where a key or index names nothing now. */
lab_value_t *lab__eval_entry(lab_eval_t *ev, const json_t *node);
/* A loop's container, as node names it (grads, d["l"], l[0]), its
 * subscripts evaluated once, when the loop begins, as Python evaluates
 * them (eval_list.c). DL_ERR_NOT_FOUND where node is no such path or
 * calls something. */
typedef struct lab_path lab_path_t;
dl_status_t lab__eval_path_of(lab_eval_t *ev, const json_t *node, lab_path_t **path_p);
/* What the path names now (NULL: nothing, a key gone or an index past
 * the end). */
lab_value_t *lab__eval_path_find(lab_eval_t *ev, const lab_path_t *path);
/* Whether its variable is still the one bound when the path was read. */
bool lab__eval_path_root_same(lab_eval_t *ev, const lab_path_t *path);
const char *lab__eval_path_name(const lab_path_t *path);
void lab__eval_path_free(lab_path_t *path);
/* The key brackets b give: one value, a tuple of them, or None. */
dl_status_t lab__eval_bracket_key(lab_eval_t *ev, const lab_bracket_t *b, lab_value_t *key);
/* Python's dict (eval_dict.c). */
dl_status_t lab__eval_new_dict(lab_value_t *out);
/* {k: v, ...}, node its display. */
dl_status_t lab__eval_dict(lab_eval_t *ev, const json_t *node, lab_value_t *out);
/* dict(), dict(other), dict(pairs), dict(name=value, ...). */
dl_status_t lab__eval_dict_call(lab_eval_t *ev, const json_t *node, const lab_value_t *pos,
                                int npos, const json_t *kw, lab_value_t *out);
/* d[k] = v: sets the key (k and v taken over, cleared on failure too). */
dl_status_t lab__eval_dict_put(lab_eval_t *ev, const json_t *node, lab_value_t *d, lab_value_t *k,
                               lab_value_t *v);
/* The value d holds for k, in place; *v_p NULL where it has none (an
 * error only for a k that can be no key). */
dl_status_t lab__eval_dict_entry(lab_eval_t *ev, const json_t *node, lab_value_t *d,
                                 const lab_value_t *k, lab_value_t **v_p);
/* The value d holds for k, in place (Python's KeyError where it has none). */
dl_status_t lab__eval_dict_at(lab_eval_t *ev, const json_t *node, lab_value_t *d,
                              const lab_value_t *k, lab_value_t **v_p);
/* d[k], a copy. */
dl_status_t lab__eval_dict_get(lab_eval_t *ev, const json_t *node, const lab_value_t *d,
                               const lab_value_t *k, lab_value_t *out);
/* k in d. */
dl_status_t lab__eval_dict_has(lab_eval_t *ev, const json_t *node, const lab_value_t *d,
                               const lab_value_t *k, bool *yes);
/* a == b of two dicts: the same keys, with equal values. */
dl_status_t lab__eval_dict_equal(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                                 const lab_value_t *b, bool *eq);
/* Makes d, whose items were filled as (key, value) pairs from elsewhere
 * (the object collectives' bytes), a dict that finds its keys; false
 * where an item is no pair or a key cannot be one. */
bool lab__eval_dict_seal(lab_value_t *d);
/* A copy of key i of d, as iteration over it gives its keys. */
dl_status_t lab__eval_dict_key(lab_eval_t *ev, const lab_value_t *d, int64_t i, lab_value_t *out);
/* A hash of k, a value a key can be (lab__eval_py_equal keys hash alike). */
int64_t lab__eval_key_hash(const lab_value_t *k);
bool lab__eval_is_dict_method(const char *fn);
/* Whether the method changes the dict (pop, update, setdefault, clear). */
bool lab__eval_dict_method_changes(const char *fn);
/* d.fn(arg...) on d (in place for one that changes it). */
dl_status_t lab__eval_dict_method(lab_eval_t *ev, const json_t *node, const char *fn,
                                  lab_value_t *d, lab_value_t *arg, int nargs, lab_value_t *out);
/* torch.linspace and torch.eye, of dtype dt (eval_factory.c). */
bool lab__eval_is_factory(const char *fn);
dl_status_t lab__eval_factory(lab_eval_t *ev, const json_t *node, const char *fn,
                              const lab_value_t *pos, int npos, dl_dtype_t dt, lab_value_t *out);
/* A shape as torch's messages write it, "[2, 3]", into buf. */
void lab__eval_shape_text(int nd, const int64_t *shape, char *buf, size_t cap);
/* torch's name of a dtype in its messages: "Float", "Long", "Bool". */
const char *lab__eval_scalar_type(dl_dtype_t dt);
/* Python's str(), round() and list() (eval_builtins.c). */
bool lab__eval_is_py_builtin(const char *fn);
dl_status_t lab__eval_py_builtin(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *pos, int npos, const json_t *kw,
                                 lab_value_t *out);
/* list(range(...)), the call node range, without a range value. */
dl_status_t lab__eval_list_of_range(lab_eval_t *ev, const json_t *node, const json_t *range,
                                    lab_value_t *out);
/* Python's sum(t), max(t) and min(t) of a tensor, over its rows; and
 * torch.all(t), torch.any(t), t.all() and t.any(), a 0-d bool tensor
 * (eval_fold.c). */
dl_status_t lab__eval_py_tensor_fold(lab_eval_t *ev, const json_t *node, const char *fn,
                                     const lab_value_t *v, const lab_value_t *start,
                                     lab_value_t *out);
/* Python's max(a, b, ...) and min(...) of numbers and one-element
 * tensors: the first largest (smallest) itself. */
dl_status_t lab__eval_py_max_of(lab_eval_t *ev, const json_t *node, const char *fn,
                                const lab_value_t *pos, int npos, lab_value_t *out);
dl_status_t lab__eval_tensor_all_any(lab_eval_t *ev, const json_t *node, const char *fn,
                                     const lab_value_t *pos, int npos, const json_t *kw,
                                     lab_value_t *out);
/* math.NAME(...) of Python's math module, fn without its "math."
 * (eval_pymath.c). */
dl_status_t lab__eval_pymath(lab_eval_t *ev, const json_t *node, const char *fn,
                             const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out);
/* A list's items in the opposite order, where they lie (l.reverse(),
 * reversed(); eval_list.c). */
void lab__eval_items_reverse(lab_value_t *l);
/* dst += alpha * x, element by element in one rounding (a fused
 * multiply-add, as torch's add kernel with alpha=): host tensors of
 * float32 or float64, x of dst's dtype and element count (eval_math.c). */
void lab__eval_fma_into(dl_tensor_t *dst, const dl_tensor_t *x, double alpha);
/* random.NAME(...) of Python's random module, fn without its "random."
 * (eval_pyrandom.c). */
dl_status_t lab__eval_pyrandom(lab_eval_t *ev, const json_t *node, const char *fn,
                               const lab_value_t *pos, int npos, const json_t *kw,
                               lab_value_t *out);
/* abs(x) of a number and max(a, b, ...), min(...) of numbers, Python's:
 * *done says whether fn's arguments were those. */
dl_status_t lab__eval_py_numbers(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *pos, int npos, const json_t *kw, bool *done,
                                 lab_value_t *out);
/* torch.round(t, decimals=d) (what Python's round(t, d) calls): half to
 * even, a copy of the tensor's dtype. */
dl_status_t lab__eval_round_tensor(lab_eval_t *ev, const json_t *node, const dl_tensor_t *t,
                                   int64_t decimals, lab_value_t *out);
/* Python's sum, max and min of a list of numbers. */
dl_status_t lab__eval_py_fold(lab_eval_t *ev, const json_t *node, const char *fn,
                              const lab_value_t *list, lab_value_t *out);
/* range(...)'s start, stop and step, checked as Python checks them. */
dl_status_t lab__eval_range_args(lab_eval_t *ev, const json_t *call, int64_t *r);
/* A string grown piece by piece (eval_strings.c); max, when not 0, is
 * the longest it may get (too_long is set past it), nomem is set once
 * memory runs out: the pieces after either are dropped. */
typedef struct {
    char *s;
    size_t len, cap, max;
    bool nomem, too_long;
} lab_sbuf_t;
void lab__sbuf_put(lab_sbuf_t *b, const char *s, size_t n);
void lab__sbuf_puts(lab_sbuf_t *b, const char *s);

/* Strings (eval_strings.c): one field of a format string, {v!c:spec}
 * (conv 0, 'r' or 's'; spec NULL for none), as f-strings, format() and %
 * share it; the operators with a string operand; s[...] of a string;
 * its methods. */
dl_status_t lab__eval_format_field(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                                   char conv, const char *spec, char **text);
dl_status_t lab__eval_str_arith(lab_eval_t *ev, const json_t *node, const char *op,
                                const lab_value_t *a, const lab_value_t *b, lab_value_t *out);
/* The characters (code points) of the UTF-8 text's first nbytes bytes, as
 * Python's len counts them. */
int64_t lab__eval_str_len(const char *s, size_t nbytes);
/* count characters of s from character start, step apart, as a string. */
dl_status_t lab__eval_str_index(lab_eval_t *ev, const json_t *node, const lab_value_t *s,
                                int64_t start, int64_t step, int64_t count, lab_value_t *out);
bool lab__eval_is_str_method(const char *fn);
dl_status_t lab__eval_str_method(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *self, const lab_value_t *pos, int npos,
                                 const json_t *kw, lab_value_t *out);
/* Whether the items of a list are those a running call was given (then
 * it may not grow or shrink: the call's parameter holds them too). */
bool lab__eval_lent(const lab_eval_t *ev, const lab_value_t *items);
/* Lends list's items to the call about to run: it may not grow or shrink
 * until ev->n_lent is set back below this one (eval_func.c). */
dl_status_t lab__eval_lend(lab_eval_t *ev, const lab_value_t *list);
/* The function a def or a lambda makes where it runs: its defaults
 * evaluated there, and a lambda in a function closing over the names of
 * it that it reads (eval_func.c). */
dl_status_t lab__eval_make_function(lab_eval_t *ev, const json_t *node, lab_value_t *out);
/* f(*args), print(*l) (eval_star.c): whether args holds a starred
 * argument ({"star": EXPR}); and node (or node[key], a command in a
 * statement) run by run with each starred argument replaced by its items,
 * bound in a scope of the call's own. */
bool lab__eval_has_star(const json_t *args);
typedef dl_status_t (*lab_star_run_fn)(lab_eval_t *ev, const json_t *node, void *arg);
dl_status_t lab__eval_starred(lab_eval_t *ev, const json_t *node, const char *key,
                              lab_star_run_fn run, void *arg);
/* A torch.Size (t.shape, t.size()): a list of ints named LAB_SIZE,
 * printed torch.Size([2, 3]), and a tuple to Python. */
#define LAB_SIZE "Size"
static inline bool lab__eval_is_size(const lab_value_t *v)
{
    return v->kind == LAB_V_LIST && strcmp(v->name, LAB_SIZE) == 0;
}
/* Whether a list is a tuple to Python: one written so, or a torch.Size. */
static inline bool lab__eval_is_tuple(const lab_value_t *v)
{
    return v->kind == LAB_V_LIST && (v->tuple || lab__eval_is_size(v));
}
static inline bool lab__eval_is_number(const lab_value_t *v)
{
    return v->kind == LAB_V_INT || v->kind == LAB_V_FLOAT || v->kind == LAB_V_BOOL;
}
/* v's type as Python names it in its messages: 'Tensor', 'tuple',
 * 'torch.Size', 'NoneType', 'int' (eval_list.c). */
const char *lab__eval_type_name(const lab_value_t *v);
/* Whether v is the pair (values, indices) of t.max(dim=D) (eval_list.c). */
bool lab__eval_is_pair(const lab_value_t *v);
/* Reports what the variable name now holds, as an assignment to it. */
dl_status_t lab__eval_report_assigned(lab_eval_t *ev, const char *name, const lab_value_t *v);
/* torch's P2POp(op, tensor, peer, group=None, tag=0), node its call
 * (eval_p2pop.c). */
dl_status_t lab__eval_p2pop(lab_eval_t *ev, const json_t *node, lab_value_t *out);
/* torch's object collectives (eval_object.c): all_gather_object,
 * gather_object, broadcast_object_list, scatter_object_list. */
bool lab__eval_is_object_coll(const char *name);
/* Runs one of them, cmd its command node, on comm (group= or the world). */
dl_status_t lab__eval_object_coll(lab_eval_t *ev, const json_t *cmd, const char *name,
                                  dl_comm_t *comm);
/* Python's == of two values neither a number nor a tensor: lists, tuples,
 * strings, None. */
dl_status_t lab__eval_py_equal(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                               const lab_value_t *b, bool *eq);

/* The method del X[K] runs on a list or dict (eval_list.c, eval_dict.c):
 * pop's, worded as del is. No line can call it (its name is no word). */
#define LAB_EVAL_DELITEM "del item"
/* The methods l[i:j] = x and del l[i:j] run on a list (eval_list.c). Their
 * first argument is the slice as a tuple (start, stop, step), None where
 * a part is not given; l[i:j] = x's second the items. */
#define LAB_EVAL_SETSLICE "set slice"
#define LAB_EVAL_DELSLICE "del slice"
/* Python's slice.indices over n items, start or stop NULL where not given
 * and *step not 0 (clamped to -INT64_MAX, as Python's to -maxsize): the
 * first index, and how many the slice holds. */
void lab__eval_slice_indices(int64_t n, const int64_t *start, const int64_t *stop, int64_t *step,
                             int64_t *start_p, int64_t *count_p);
/* A slice's parts as the tuple (start, stop, step), None where not given. */
dl_status_t lab__eval_slice_tuple(lab_eval_t *ev, const json_t *node, lab_value_t *out);
/* X.fn(args...) for one of the methods above that no line can call, X the
 * list or dict base names (eval_cmd.c); args are taken over. */
dl_status_t lab__eval_item_method(lab_eval_t *ev, const json_t *node, const json_t *base,
                                  const char *fn, lab_value_t *args, int nargs);

/* Python's key= (eval_key.c): the key of each of the n items, computed
 * once an item by the function key (a def, a lambda, or a function's
 * name, key=len), in *keys_p (NULL where key is NULL or None); free them
 * with lab__eval_keys_free. */
dl_status_t lab__eval_keys(lab_eval_t *ev, const json_t *key, const lab_value_t *items, size_t n,
                           lab_value_t **keys_p);
void lab__eval_keys_free(lab_value_t *keys, size_t n);
/* max(l, key=f), min(a, b, key=f): Python's first largest (smallest) item
 * by key, of a list (npos 1) or of the arguments (eval_builtins.c). */
dl_status_t lab__eval_py_extreme(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *pos, int npos, const json_t *key,
                                 lab_value_t *out);

/* Whether name is one of the classes a bare name gives (int, float, bool,
 * str, list, tuple, dict, torch.Tensor), as type(x) gives them: then *out
 * is it, *st_p how making it went (eval_builtins.c). */
bool lab__eval_type_word(const char *name, lab_value_t *out, dl_status_t *st_p);

/* Python's a OP b for OP one of <, <=, >, >=, of numbers, strings, and
 * lists or tuples (item by item); an error for what Python refuses. */
dl_status_t lab__eval_py_order(lab_eval_t *ev, const json_t *node, const char *op,
                               const lab_value_t *a, const lab_value_t *b, bool *yes);

/* Whether name is one the evaluator answers itself (rank, world_size), so
 * that a global of that name could never be read (a function's local
 * variable of that name hides it). */
bool lab__eval_is_builtin(const char *name);
/* Whether node is a variable's name alone (no call, no subscript). */
bool lab__eval_is_plain_name(const json_t *node);
/* The value of rank or world_size, which every rank reads from its
 * communicator. */
int64_t lab__eval_builtin_value(const lab_eval_t *ev, const char *name);
/* Whether the Python number x can be taken as a scalar of dtype dt, as
 * torch's checked conversion takes it; *tname is torch's name for dt in
 * its "value cannot be converted to type T without overflow". */
bool lab__eval_number_fits(dl_dtype_t dt, const lab_value_t *x, const char **tname);
/* Whether name is an op as the parser writes dist.ReduceOp.SUM,
 * "ReduceOp.SUM", and which. As a value it is a string marked
 * LAB_REDUCE_OP in its name, printed without quotes. */
bool lab__eval_is_op_word(const char *name, dl_op_t *op);
#define LAB_REDUCE_OP "ReduceOp"
/* A torch.device (torch.device('cuda', 0), t.device): its string ("cpu",
 * "cuda:0"), marked LAB_DEVICE in its name, which repr writes as torch's
 * device(type='cuda', index=0) and str as the string. */
#define LAB_DEVICE "device"
/* What type(x) gives: "<class 'int'>", marked LAB_TYPE in its name, which
 * prints so, without quotes, in a list too. */
#define LAB_TYPE "type"

/* ---- scopes and functions (eval_func.c) ---- */

/* The variable name refers to where the evaluator is: the scopes, then the
 * globals; NULL when there is none. */
lab_value_t *lab__eval_var(lab_eval_t *ev, const char *name);
/* Where an assignment binds: the innermost scope's variables, or the
 * globals. */
lab_vars_t *lab__eval_vars(lab_eval_t *ev);
/* Whether statements run inside a function call: there assignments and
 * commands report nothing (as a Python function prints nothing), print
 * excepted. */
bool lab__eval_quiet(const lab_eval_t *ev);
/* Calls the function fn (a LAB_V_FUNC) with the arguments of the call
 * node: positional and keyword arguments bound to its parameters as Python
 * binds them, a variable holding a tensor or a list passed by reference
 * (what the function writes into it, the caller sees), anything else by
 * value. *out receives what it returns (LAB_V_NONE without return). */
dl_status_t lab__eval_call_def(lab_eval_t *ev, const json_t *node, const lab_value_t *fn,
                               lab_value_t *out);
/* A call of what an expression gives, {"callee": EXPR, "args", "kwargs"}:
 * f(1)(2), fs[i](x), (lambda: 1)(), (len)(x). */
dl_status_t lab__eval_call_value(lab_eval_t *ev, const json_t *node, lab_value_t *out);
/* Whether v is a class that a call converts to (int, float, bool, str,
 * list, tuple, dict), and that call, of the shell's own function of the
 * class's name: cast = int; cast("5"). */
bool lab__eval_calls_class(const lab_value_t *v);
dl_status_t lab__eval_call_class(lab_eval_t *ev, const json_t *node, const lab_value_t *cls,
                                 lab_value_t *out);
/* [EXPR for NAME in ITER if COND]: a new list. */
dl_status_t lab__eval_comprehension(lab_eval_t *ev, const json_t *node, lab_value_t *out);
/* os.environ[KEY], os.environ.get(KEY, DEFAULT) and os.getenv(KEY,
 * DEFAULT): the rank process's variable, a str ({"getenv": ...} nodes);
 * os.environ alone: the names it has, a list ({"environ": true}); and the
 * statement os.environ[KEY] = VALUE (eval_env.c). */
dl_status_t lab__eval_getenv(lab_eval_t *ev, const json_t *node, lab_value_t *out);
dl_status_t lab__eval_environ(lab_eval_t *ev, const json_t *node, lab_value_t *out);
dl_status_t lab__eval_setenv(lab_eval_t *ev, const json_t *stmt);
/* f"...{EXPR}...": a new string. */
dl_status_t lab__eval_fstring(lab_eval_t *ev, const json_t *node, lab_value_t *out);
/* str(v) as Python prints it (repr when repr: a string in quotes), tensors
 * as torch prints them: a malloc'd string in *text_p, or NULL without
 * memory (ev->error says so). A LAB_V_NAME is "'x' is not defined". */
dl_status_t lab__eval_format(lab_eval_t *ev, const json_t *node, const lab_value_t *v, bool repr,
                             char **text_p);
/* x as Python's repr writes a float. */
const char *lab__eval_py_float(double x, char *buf, size_t cap);
/* v formatted as Python's format(v, spec) does (an f-string's {v:spec}):
 * numbers, bools, strings, and a tensor of no dimensions as its number.
 * *out is malloc'd. An invalid spec, or one v does not take, is an error
 * at node. */
dl_status_t lab__eval_format_spec(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                                  const char *spec, char **out);

/* ---- statements (eval_cmd.c) used by the expressions ---- */

/* Runs the statements of a body in order, up to a return. */
dl_status_t lab__eval_body(lab_eval_t *ev, const json_t *body);
/* Unbinds name where the code runs, as del does: a function's variable
 * is left its own and unbound; a global goes, and the shell's model
 * forgets it (eval_cmd.c). DL_ERR_NOT_FOUND where nothing is bound. */
dl_status_t lab__eval_unbind(lab_eval_t *ev, const char *name);
/* try/except/else/finally and raise (eval_try.c). */
dl_status_t lab__eval_try(lab_eval_t *ev, const json_t *stmt);
dl_status_t lab__eval_raise(lab_eval_t *ev, const json_t *stmt);
/* Python's truth of the condition node. */
dl_status_t lab__eval_truth(lab_eval_t *ev, const json_t *node, bool *yes);
/* The same for a value already evaluated (node: where an error points). */
/* The branch of A if C else B (node an if_exp, its run of conditions
 * tried in turn) whose condition holds, or its else: *branch_p. */
dl_status_t lab__eval_if_exp_branch(lab_eval_t *ev, const json_t *node, const json_t **branch_p);
dl_status_t lab__eval_value_truth(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                                  bool *yes);
/* Calls fn(ev, arg) once per item of iter, range(...) made one number at
 * a time, a list or a tensor's rows, with var bound to the item in the
 * innermost scope; stops at an error, a return, or Ctrl-C (an error at
 * where). */
typedef dl_status_t (*lab_eval_each_fn)(lab_eval_t *ev, void *arg);
dl_status_t lab__eval_each(lab_eval_t *ev, const json_t *where, const char *var,
                           const json_t *names, const json_t *iter, lab_eval_each_fn fn, void *arg);
/* Waits for a work handle (wait h, h.wait()); name names it in the note. */
dl_status_t lab__eval_wait(lab_eval_t *ev, const json_t *node, const lab_value_t *h,
                           const char *name);

/* The rank's generator. torch seeds its own at random when a process
 * starts; a rank seeds it with its rank instead, so that a session can be
 * replayed and every rank draws different numbers. */
dl_rng_t *lab__eval_rng(lab_eval_t *ev);

/* Evaluates node as a seed: any expression that gives an integer (or a
 * bool, as Python's int(True)). A float, a tensor or anything else is a
 * one-line error that names what, e.g. "seed=". */
dl_status_t lab__eval_seed(lab_eval_t *ev, const json_t *node, const char *what, uint64_t *seed_p);

/* The dtype torch gives an operation on tensors of dtypes a and b. */
dl_dtype_t lab__eval_promote(dl_dtype_t a, dl_dtype_t b);
/* The one element of host tensor t as a Python number, as t.item() gives
 * it: a float, an int, or a bool. */
void lab__eval_item(const dl_tensor_t *t, lab_value_t *out);

/* Tensor maths (eval_math.c): whether fn is one of its functions, and fn
 * applied to its evaluated arguments (pos[0] is the tensor of a method
 * call, t.sum()); kw holds the unevaluated keywords. */
bool lab__eval_is_math(const char *fn);
dl_status_t lab__eval_math(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                           int npos, const json_t *kw, lab_value_t *out);
/* sort, argsort, topk, cumsum and cumprod (eval_order.c), and norm,
 * softmax and log_softmax (eval_norm.c), of the host tensor pos[0], as
 * lab__eval_math calls them. */
dl_status_t lab__eval_order(lab_eval_t *ev, const json_t *node, const char *fn,
                            const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out);
dl_status_t lab__eval_norm(lab_eval_t *ev, const json_t *node, const char *fn,
                           const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out);
/* One option of a torch function, as lab__eval_bind found it. */
typedef struct {
    lab_value_t v;       /* a copy of what came (dtype= is left to lab__eval_bound_dtype) */
    const json_t *where; /* the node to point at; NULL: nothing came */
    int position;        /* its position as torch counts it (the tensor of a function call is
                          * 1, a method's is not counted); 0 for a keyword */
} lab_bound_t;

/* Binds a torch function's options as Python binds arguments: pos[1..]
 * (after the tensor) in the order of names (NULL-terminated), at most
 * `positional` of them (the rest are keyword-only), then the keywords kw by
 * name, evaluated, into b[k] for names[k]. dtype=None is as if not given.
 * Too many arguments, an unknown keyword or one given twice are refused
 * in Python's words; on failure nothing is left to clear, else
 * lab__eval_bound_clear(b, n). */
dl_status_t lab__eval_bind(lab_eval_t *ev, const json_t *node, const char *fn,
                           const char *const *names, int positional, const lab_value_t *pos,
                           int npos, const json_t *kw, lab_bound_t *b);
void lab__eval_bound_clear(lab_bound_t *b, int n);
/* A bound option of kind LAB_V_INT (into an int64_t; a 0-d integer tensor
 * too) or LAB_V_BOOL (into a bool), refused as torch refuses another type
 * ("topk(): argument 'k' (position 1) must be int, not float"); and a
 * dtype, from dtype= or the value b holds. */
dl_status_t lab__eval_bound_read(lab_eval_t *ev, const char *fn, const char *name,
                                 const lab_bound_t *b, lab_vkind_t kind, void *out);
dl_status_t lab__eval_bound_dtype(lab_eval_t *ev, const json_t *kw, const lab_bound_t *b,
                                  dl_dtype_t *dt_p);
/* A dimension as torch takes it, -ndim .. ndim - 1 (a 0-d tensor takes -1
 * and 0), into *dim_p as 0 .. ndim - 1; else torch's IndexError. */
dl_status_t lab__eval_bound_dim(lab_eval_t *ev, const json_t *node, int64_t dim, int ndim,
                                int *dim_p);
/* t converted to dtype dt on its own device, as t.to(dt) makes it. */
dl_status_t lab__eval_retype(lab_eval_t *ev, const json_t *node, const dl_tensor_t *t,
                             dl_dtype_t dt, lab_value_t *out);
/* out, cleared, holds the tensor t (its own). */
void lab__eval_set_tensor(lab_value_t *out, dl_tensor_t *t);
/* torch's pair (values, indices) of max(dim=D), sort or topk, named fn:
 * a list that .values, .indices and unpacking read. Takes both tensors
 * (freed on failure). */
dl_status_t lab__eval_pair(const char *fn, dl_tensor_t *values, dl_tensor_t *indices,
                           lab_value_t *out);
/* softmax's (dim, dtype=None) and cumsum's (dim, *, dtype=None), with
 * `positional` 2 and 1: *dim_p as 0 .. ndim - 1
 * of the tensor pos[0], *dt_p set only when dtype= or a second argument
 * gives one (*cast_p says whether). */
dl_status_t lab__eval_dim_dtype(lab_eval_t *ev, const json_t *node, const char *fn, int positional,
                                const lab_value_t *pos, int npos, const json_t *kw, int *dim_p,
                                dl_dtype_t *dt_p, bool *cast_p);
/* *t_p as dtype dt: itself, or a converted copy held in hold (to clear
 * after use) that *t_p then points at. */
dl_status_t lab__eval_as_dtype(lab_eval_t *ev, const json_t *node, const dl_tensor_t **t_p,
                               dl_dtype_t dt, lab_value_t *hold);
/* The result of a kernel that made res with status st: out holds res, or
 * the call fails as "fn(): why". */
dl_status_t lab__eval_made(lab_eval_t *ev, const json_t *node, const char *fn, dl_status_t st,
                           dl_tensor_t *res, lab_value_t *out);
/* a @ b, torch.matmul. */
dl_status_t lab__eval_matmul(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                             const lab_value_t *b, lab_value_t *out);

/* A tensor's attributes and conversions (eval_convert.c): whether fn is
 * one (t.dtype, t.device, t.ndim, t.is_cuda, t.dim(), t.numel(),
 * t.tolist(), t.to(...), t.cuda(), t.cpu(), t.float() and the other
 * casts), and fn applied to pos[0], the tensor. */
bool lab__eval_is_convert(const char *fn);
dl_status_t lab__eval_convert(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                              int npos, const json_t *kw, lab_value_t *out);
/* torch.device(...), torch.cuda's set_device, current_device,
 * device_count and is_available, and dist's init_process_group,
 * destroy_process_group, is_initialized, is_available and get_backend
 * (eval_setup.c): whether fn is one, and fn of its evaluated arguments (kw
 * unevaluated). fn is the name as lab__eval_setup_name gives it. */
bool lab__eval_is_setup_fn(const char *fn);
/* A name the parser kept with its module as written (torch.distributed.X,
 * dist . X) as dist.X, in buf (of cap bytes), which it returns. */
const char *lab__eval_setup_name(const char *fn, char *buf, size_t cap);
/* Whether a name is dist.group.WORLD (or torch.distributed.group.WORLD),
 * and *out that group: the world's communicator, shared, never destroyed. */
bool lab__eval_is_world_group(const char *name);
dl_status_t lab__eval_world_group(lab_eval_t *ev, lab_value_t *out);
dl_status_t lab__eval_setup_fn(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                               int npos, const json_t *kw, lab_value_t *out);
/* *h: v itself (borrowed), or a host copy of v's tensor when it is on a
 * GPU. lab_value_clear(h) releases it either way. */
dl_status_t lab__eval_host_view(lab_eval_t *ev, const lab_value_t *v, lab_value_t *h);
/* Moves the tensor v holds (its own, not borrowed) to dev, as torch's
 * .to(device). On failure v is cleared and ev->error says why. */
dl_status_t lab__eval_to_device(lab_eval_t *ev, lab_value_t *v, dl_device_t dev);
/* dtype= of a call's keywords kw (unevaluated): a dtype word (float32,
 * torch.int, Python's int) or a value that holds a dtype; *given says
 * whether there was one. */
dl_status_t lab__eval_kw_dtype(lab_eval_t *ev, const json_t *kw, dl_dtype_t *dt_p, bool *given);
/* device= of kw: cpu when absent; else cpu, or cuda (this rank's GPU, as a
 * job's --device cuda picks it), as a bare word or a value that names one
 * (see lab__eval_device_value). */
dl_status_t lab__eval_kw_device(lab_eval_t *ev, const json_t *kw, dl_device_t *dev_p);
/* Whether s is a device as torch writes it, 'cpu', 'cuda' or 'cuda:N';
 * *cuda_p says which kind, *index_p gets N (-1 when none is written). */
bool lab__eval_device_name(const char *s, bool *cuda_p, long *index_p);
/* Whether v is a dtype as a value (the word torch.float32, say), and
 * which. */
bool lab__eval_dtype_value(const lab_value_t *v, dl_dtype_t *dt_p);
/* Whether v is a bare word that names nothing a statement may bind or
 * return: a LAB_V_NAME other than a dtype. */
static inline bool lab__eval_undefined(const lab_value_t *v)
{
    return v->kind == LAB_V_NAME && !lab__eval_dtype_value(v, NULL);
}
/* The first undefined name in v, or in its items and theirs if it is a
 * list or tuple; NULL when none. A variable may hold none: Python fails
 * on [nope] as it is made, where a command may read a list of words. */
const lab_value_t *lab__eval_undefined_in(const lab_value_t *v);
/* The device v names: 'cpu', 'cuda', 'cuda:N' or a GPU's number N, which
 * must be this rank's GPU (as device= checks it). */
dl_status_t lab__eval_device_value(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                                   dl_device_t *dev_p);

/* Sets ev->error to "column N: message" (N from node) and returns
 * DL_ERR_INVALID; for the evaluator's own files. */
dl_status_t lab__eval_fail(lab_eval_t *ev, const json_t *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "'NAME' is not defined" for v, an undefined name, at the name's own place
 * in the line where v knows it, else at node. */
dl_status_t lab__eval_fail_undefined(lab_eval_t *ev, const json_t *node, const lab_value_t *v);
/* A node the evaluator makes for itself (a call of a key function, a
 * starred item's name) placed where at stands in the line, so that its
 * errors name that column: at's "col" and "line" copied into node. */
bool lab__eval_place(json_t *node, const json_t *at);
/* {"name": name} placed where at stands, or NULL without memory. */
json_t *lab__eval_name_at(const json_t *at, const char *name);

#endif
