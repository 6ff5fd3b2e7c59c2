/* torch's P2POp(op, tensor, peer, group=None, tag=0): the isend or irecv
 * that batch_isend_irecv runs (eval_cmd.c). The value holds the command
 * it is, as the parser would have made it from dist.isend(tensor,
 * dst=peer, group=group, tag=tag): its tensor and group are expressions,
 * read when the batch runs it, so that an irecv writes into the variable
 * the script named; its peer and tag are numbers, taken now. */
#include <string.h>

#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

/* node with the indices and slice bounds in its subscripts evaluated to
 * numbers now (r[p], t[2*i:2*i+2]), so that the batch finds the tensor
 * this P2POp names even where p or i are gone by then (a comprehension's
 * variable): a new node, or NULL after recording why. */
static json_t *frozen(lab_eval_t *ev, const json_t *node, dl_status_t *st_p)
{
    json_t *out = json_deep_copy(node);
    if (out == NULL) {
        *st_p = DL_ERR_NOMEM;
        return NULL;
    }
    for (json_t *n = out; n != NULL && json_object_get(n, "index") != NULL;
         n = json_object_get(n, "index")) {
        static const char *const keys[] = {"at", "start", "stop", "step"};
        json_t *slice = json_object_get(n, "slice");
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            json_t *holder = k == 0 ? n : slice;
            json_t *e = json_object_get(holder, keys[k]);
            if (e == NULL || json_object_get(e, "num") != NULL)
                continue;
            lab_value_t v;
            if ((*st_p = lab_eval_expr(ev, e, &v)) != DL_OK) {
                json_decref(out);
                return NULL;
            }
            if (v.kind == LAB_V_INT)
                json_object_set_new(holder, keys[k],
                                    json_pack("{s:I, s:O}", "num", (json_int_t)v.i, "col",
                                              json_object_get(e, "col")));
            lab_value_clear(&v);
        }
    }
    return out;
}

/* Positional argument i of the call, or its keyword name. */
static const json_t *param(const json_t *node, size_t i, const char *name)
{
    const json_t *kw = json_object_get(json_object_get(node, "kwargs"), name);
    return kw != NULL ? kw : json_array_get(json_object_get(node, "args"), i);
}

static dl_status_t int_param(lab_eval_t *ev, const json_t *node, size_t i, const char *name,
                             bool required, int64_t dflt, int64_t *out)
{
    const json_t *p = param(node, i, name);
    *out = dflt;
    if (p == NULL)
        return required ? lab__eval_fail(ev, node, "P2POp needs %s", name) : DL_OK;
    lab_value_t v;
    dl_status_t st = lab_eval_expr(ev, p, &v);
    if (st != DL_OK)
        return st;
    bool ok = v.kind == LAB_V_INT;
    *out = v.i;
    lab_value_clear(&v);
    return ok ? DL_OK : lab__eval_fail(ev, p, "P2POp: %s takes an integer", name);
}

dl_status_t lab__eval_p2pop(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    static const char *const names[] = {"op", "tensor", "peer", "group", "tag"};
    size_t nargs = json_array_size(json_object_get(node, "args"));
    const char *key;
    const json_t *val;
    json_object_foreach(json_object_get(node, "kwargs"), key, val)
    {
        size_t i = 0;
        while (i < sizeof(names) / sizeof(names[0]) && strcmp(key, names[i]) != 0)
            i++;
        if (i == sizeof(names) / sizeof(names[0]))
            return lab__eval_fail(ev, val, "P2POp got an unexpected keyword '%s'", key);
        if (i < nargs)
            return lab__eval_fail(ev, val, "P2POp got two values for %s", key);
    }
    if (nargs > 5)
        return lab__eval_fail(ev, node, "P2POp takes at most 5 arguments (%zu given)", nargs);
    const json_t *op = param(node, 0, "op"), *tensor = param(node, 1, "tensor");
    const char *op_name = lab_json_str(op, "name", "");
    if (strcmp(op_name, "isend") != 0 && strcmp(op_name, "irecv") != 0)
        return lab__eval_fail(ev, op != NULL ? op : node,
                              "P2POp's op must be dist.isend or dist.irecv");
    if (tensor == NULL)
        return lab__eval_fail(ev, node, "P2POp needs a tensor");
    int64_t peer, tag;
    dl_status_t st;
    if ((st = int_param(ev, node, 2, "peer", true, 0, &peer)) != DL_OK ||
        (st = int_param(ev, node, 4, "tag", false, 0, &tag)) != DL_OK)
        return st;
    bool send = op_name[1] == 's';
    /* An isend of a computed tensor (torch.ones(2) * p) takes it now: its
     * names may be gone when the batch runs. */
    lab_value_t taken = {0};
    bool computed =
        json_object_get(tensor, "name") == NULL && json_object_get(tensor, "index") == NULL;
    if (send && computed) {
        if ((st = lab_eval_expr(ev, tensor, &taken)) != DL_OK)
            return st;
        if (taken.kind != LAB_V_TENSOR) {
            lab_value_clear(&taken);
            return lab__eval_fail(ev, tensor, "P2POp's tensor is %s, not a tensor",
                                  lab_vkind_a(taken.kind));
        }
    }
    json_t *arg0 = frozen(ev, tensor, &st);
    if (arg0 == NULL) {
        lab_value_clear(&taken);
        return st;
    }
    json_int_t col = json_integer_value(json_object_get(node, "col"));
    json_t *cmd =
        json_pack("{s:s, s:I, s:[o], s:{s:{s:I, s:I}, s:{s:I, s:I}}}", "cmd", op_name, "col", col,
                  "args", arg0, "kwargs", send ? "dst" : "src", "num", (json_int_t)peer, "col", col,
                  "tag", "num", (json_int_t)tag, "col", col);
    const json_t *group = param(node, 3, "group");
    if (cmd == NULL || (group != NULL && json_object_set(json_object_get(cmd, "kwargs"), "group",
                                                         (json_t *)group) != 0)) {
        json_decref(cmd);
        lab_value_clear(&taken);
        return DL_ERR_NOMEM;
    }
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_P2POP;
    out->fn = cmd;
    out->t = taken.t; /* NULL but for a computed isend tensor */
    return DL_OK;
}
