/* The values a rank's shell session holds: scalars, tensors, lists of them,
 * work handles of async calls, and groups. Names bind values in a
 * per-rank variable table. */
#ifndef LAB_VALUES_H
#define LAB_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "distlab/comm.h"

typedef enum {
    LAB_V_NONE,
    LAB_V_INT,
    LAB_V_FLOAT,
    LAB_V_BOOL,
    LAB_V_TENSOR,
    LAB_V_LIST,
    LAB_V_WORK,
    LAB_V_GROUP,
    LAB_V_NAME, /* a bare word such as sum or float32, for the command to read */
    LAB_V_STR,  /* a string: 'text', f"..." */
    LAB_V_FUNC, /* a function a def made */
    /* torch's P2POp, for batch_isend_irecv: fn holds the isend or irecv
     * command it runs (its tensor an expression, read when it runs) */
    LAB_V_P2POP,
    /* Python's dict: items holds its n entries in insertion order, each a
     * (key, value) tuple (lab/rank/eval_dict.c) */
    LAB_V_DICT,
} lab_vkind_t;

typedef struct lab_value {
    lab_vkind_t kind;
    bool borrowed; /* refers to a variable's handle: clearing it frees nothing */
    int64_t i;
    double f;
    dl_tensor_t *t;
    /* LAB_V_LIST and LAB_V_DICT use items and n for their items; a
     * LAB_V_FUNC for what it was made with (eval_func.c): pairs (name,
     * value), "=p" the default of parameter p, others the names of the
     * function around it that a lambda reads. */
    struct lab_value *items;
    size_t n;
    dl_work_t *work;
    /* LAB_V_WORK of an irecv the shell's ledger knows: its notice's number
     * there (lab_rank_t p2p_notes), which a wait on it names (it then
     * blocks as a recv does); 0 otherwise */
    json_int_t irecv_note;
    dl_comm_t *group; /* LAB_V_GROUP; i = 1: the world's, which clearing keeps */
    /* LAB_V_WORK and LAB_V_GROUP: how many values hold the handle (a
     * variable, list items, copies made to read it), shared by them and
     * malloc'd; the last one cleared frees the handle. NULL: the value is
     * its only holder and cannot be copied. */
    int *refs;
    char *s; /* LAB_V_STR: the text (malloc'd) */
    const json_t
        *fn; /* LAB_V_FUNC: the def statement; LAB_V_P2POP: the command (references held) */
    /* LAB_V_NAME: the word; LAB_V_LIST: "max" or "min" for the pair
     * (values, indices) of t.max(dim=D), "Size" for t.shape, else empty;
     * LAB_V_WORK of an irecv: the variable it receives into, which its
     * wait shows again. */
    char name[48];
    /* LAB_V_NAME: where the word stands in its line (0: not known), for a
     * message about it ("'nope' is not defined" at nope's column, not at
     * the operator that reads it). */
    int name_line, name_col;
    /* LAB_V_LIST: a tuple, printed (a, b) and not written into: (a, b)
     * written so, and what chunk and split give, as in torch. */
    bool tuple;
    /* A variable's value: which binding of a name it is (lab_vars_set
     * numbers them), so that a loop over a list variable can tell the
     * list it walks, changed in place, from a list bound anew. */
    uint64_t binding;
} lab_value_t;

/* Frees what v owns and resets it to LAB_V_NONE. */
void lab_value_clear(lab_value_t *v);
/* *out a new list of room for n items (zeroed; n stays 0 until they are
 * filled); DL_ERR_NOMEM without memory. */
dl_status_t lab_value_new_list(lab_value_t *out, size_t n);
/* Makes v, a handle just made (LAB_V_WORK, LAB_V_GROUP), one that copies
 * share (lab_value_copy); DL_ERR_NOMEM leaves it a sole holder. */
dl_status_t lab_value_share(lab_value_t *v);
/* A deep copy (tensors copied into alloc; a shared handle is the same
 * handle, held once more), never borrowed. */
dl_status_t lab_value_copy(const lab_value_t *v, dl_allocator_t *alloc, lab_value_t *out_p);
const char *lab_vkind_name(lab_vkind_t k);
/* The kind with its article, for a message: "an int", "a tensor", "None". */
const char *lab_vkind_a(lab_vkind_t k);

typedef struct {
    char name[48];
    lab_value_t v;
} lab_var_t;

typedef struct {
    lab_var_t *vars;
    size_t n, cap;
} lab_vars_t;

lab_value_t *lab_vars_get(lab_vars_t *vs, const char *name);
/* Gives v, a variable's value, a binding number of its own (lab_vars_set
 * numbers each value it binds). */
void lab_value_number(lab_value_t *v);
/* Makes room for one more variable, so that the next lab_vars_set cannot
 * fail: a statement reserves first, then does what may fail (reporting its
 * result), and binds last, so that a failed statement changes nothing. */
dl_status_t lab_vars_reserve(lab_vars_t *vs);
/* Binds name to v (taking ownership of what v holds); the old value goes.
 * Fails (DL_ERR_NOMEM, v untouched) only when no room was reserved. */
dl_status_t lab_vars_set(lab_vars_t *vs, const char *name, lab_value_t *v);
void lab_vars_clear(lab_vars_t *vs);
/* Removes name and clears its value (Python's del); false where it is not bound. */
bool lab_vars_del(lab_vars_t *vs, const char *name);

#endif
