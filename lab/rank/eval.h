/* The rank side of the shell's language: evaluates the statements the
 * controller parsed (lab/lang/lang.h describes the JSON AST) against this rank's
 * variables and communicator, and reports what changed as events. */
#ifndef LAB_EVAL_H
#define LAB_EVAL_H

#include <jansson.h>

#include "distlab/random.h"
#include "lab/rank/rank.h"
#include "lab/rank/values.h"

typedef struct {
    lab_rank_t *r;
    lab_vars_t vars;
    char error[256];
    /* torch's default CPU generator, one per rank as one per process in
     * torch; seeded on first use (lab__eval_rng). */
    dl_rng_t rng;
    bool rng_seeded;
} lab_eval_t;

/* Evaluates one expression node into *out_p (a new value; names of
 * variables give copies). On error fills ev->error with a message that
 * names the column. */
dl_status_t lab_eval_expr(lab_eval_t *ev, const json_t *node, lab_value_t *out_p);

/* Runs one statement; emits snap/note events; DL_OK or an error whose
 * message is in ev->error. Nothing is bound when it fails. */
dl_status_t lab_eval_stmt(lab_eval_t *ev, const json_t *stmt);

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
/* t op= x, t[...] = x and t[...] op= x (a statement with "op" or "target");
 * *name_p receives the variable changed. */
dl_status_t lab__eval_store(lab_eval_t *ev, const json_t *stmt, const char **name_p);

/* Row i of a tensor or item i of a list (base[i]), a new value. */
dl_status_t lab__eval_row(lab_eval_t *ev, const json_t *node, const lab_value_t *base, int64_t i,
                          lab_value_t *out);

/* Whether name is one the evaluator answers itself (rank, world_size), so
 * that a variable of that name could never be read. */
bool lab__eval_is_builtin(const char *name);

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

/* Tensor maths (eval_math.c): whether fn is one of its functions, and fn
 * applied to its evaluated arguments (pos[0] is the tensor of a method
 * call, t.sum()); kw holds the unevaluated keywords. */
bool lab__eval_is_math(const char *fn);
dl_status_t lab__eval_math(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                           int npos, const json_t *kw, lab_value_t *out);
/* a @ b, torch.matmul. */
dl_status_t lab__eval_matmul(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                             const lab_value_t *b, lab_value_t *out);

/* Sets ev->error to "column N: message" (N from node) and returns
 * DL_ERR_INVALID; for the evaluator's own files. */
dl_status_t lab__eval_fail(lab_eval_t *ev, const json_t *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
