/* torch.distributed's object collectives: all_gather_object, gather_object,
 * broadcast_object_list and scatter_object_list. As torch pickles each
 * object into a byte tensor, a rank encodes its values (numbers, strings,
 * None, tensors and lists or tuples of them) into bytes, the ranks agree on
 * the longest encoding first (an all_reduce of its length with max, or a
 * broadcast from the source) and then move equal byte tensors with the
 * tensor collective of the same shape. The encoding ends itself, so the
 * padding after it is never read. Work handles, groups and functions, which
 * torch cannot pickle either, are refused before anything moves. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "lab/rank/eval.h"

/* How deep lists may nest in an object: deeper ones are refused, so that
 * decoding what a peer sent cannot run out of stack. */
#define OBJ_MAX_DEPTH 32

enum {
    T_NONE = 'N',
    T_TRUE = 'T',
    T_FALSE = 'F',
    T_INT = 'I',
    T_FLOAT = 'D',
    T_STR = 'S',
    T_LIST = 'L',
    T_TUPLE = 'U',
    T_TENSOR = 'X',
    T_DICT = 'M' /* its (key, value) tuples, in order */
};

/* ---- encoding ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool nomem;
} buf_t;

static void put(buf_t *b, const void *data, size_t n)
{
    if (b->nomem)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL) {
            b->nomem = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (data != NULL && n > 0)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u8(buf_t *b, uint8_t v)
{
    put(b, &v, 1);
}

static void put_u64(buf_t *b, uint64_t v)
{
    put(b, &v, sizeof(v));
}

/* The text of a string and its marker (a ReduceOp's, lab_value_t name). */
static void put_text(buf_t *b, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    put_u64(b, n);
    put(b, s, n);
}

static const char *encode(buf_t *b, const lab_value_t *v, int depth);

/* The count of v's items, then each. */
static const char *encode_items(buf_t *b, const lab_value_t *v, int depth)
{
    put_u64(b, v->n);
    for (size_t i = 0; i < v->n; i++) {
        const char *bad = encode(b, &v->items[i], depth + 1);
        if (bad != NULL)
            return bad;
    }
    return NULL;
}

/* Encodes v into b; NULL, or the kind that cannot be sent. */
static const char *encode(buf_t *b, const lab_value_t *v, int depth)
{
    switch (v->kind) {
    case LAB_V_NONE:
        put_u8(b, T_NONE);
        return NULL;
    case LAB_V_BOOL:
        put_u8(b, v->i ? T_TRUE : T_FALSE);
        return NULL;
    case LAB_V_INT:
        put_u8(b, T_INT);
        put_u64(b, (uint64_t)v->i);
        return NULL;
    case LAB_V_FLOAT:
        put_u8(b, T_FLOAT);
        put(b, &v->f, sizeof(v->f));
        return NULL;
    case LAB_V_STR:
        put_u8(b, T_STR);
        put_text(b, v->s);
        put_text(b, v->name);
        return NULL;
    case LAB_V_LIST:
        if (depth >= OBJ_MAX_DEPTH)
            return "a list nested this deep";
        put_u8(b, v->tuple ? T_TUPLE : T_LIST);
        put_text(b, v->name);
        return encode_items(b, v, depth);
    case LAB_V_DICT:
        if (depth >= OBJ_MAX_DEPTH)
            return "a dict nested this deep";
        put_u8(b, T_DICT);
        return encode_items(b, v, depth); /* its (key, value) tuples */
    case LAB_V_TENSOR: {
        const dl_tensor_t *t = v->t;
        put_u8(b, T_TENSOR);
        put_u8(b, (uint8_t)t->dtype);
        put_u8(b, (uint8_t)t->ndim);
        for (int d = 0; d < t->ndim; d++)
            put_u64(b, (uint64_t)t->shape[d]);
        size_t nb = dl_tensor_nbytes(t);
        size_t at = b->n;
        put(b, NULL, nb); /* room, filled from the tensor's device */
        if (!b->nomem && nb > 0 &&
            dl_cuda_copy(b->p + at, (dl_device_t){DL_DEVICE_CPU, 0}, t->data, t->device, nb) !=
                DL_OK)
            return "a tensor its GPU would not copy";
        return NULL;
    }
    default:
        return lab_vkind_a(v->kind);
    }
}

/* ---- decoding ---- */

typedef struct {
    const uint8_t *p, *end;
    dl_allocator_t *alloc;
} rd_t;

static bool get(rd_t *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return false;
    if (n > 0) /* a tensor of no elements has no data to copy into */
        memcpy(out, r->p, n);
    r->p += n;
    return true;
}

static bool get_text(rd_t *r, char **s_p)
{
    uint64_t n;
    if (!get(r, &n, sizeof(n)) || n > (size_t)(r->end - r->p) || (*s_p = malloc(n + 1)) == NULL)
        return false;
    memcpy(*s_p, r->p, n);
    (*s_p)[n] = '\0';
    r->p += n;
    return true;
}

/* A marker (lab_value_t name) read into name. */
static bool get_name(rd_t *r, char *name, size_t cap)
{
    char *s = NULL;
    if (!get_text(r, &s))
        return false;
    snprintf(name, cap, "%s", s);
    free(s);
    return true;
}

static bool decode(rd_t *r, lab_value_t *out, int depth);

/* The count of a list's (or a dict's) items, then each, into out, a new
 * list; false (out left to clear) where the bytes are no such thing. */
static bool decode_items(rd_t *r, lab_value_t *out, int depth)
{
    uint64_t n;
    /* Every item takes a byte at least: a count past the bytes left is no
     * list this rank's peers encoded. */
    if (!get(r, &n, sizeof(n)) || n > (size_t)(r->end - r->p) ||
        lab_value_new_list(out, (size_t)n) != DL_OK)
        return false;
    for (; out->n < n; out->n++)
        if (!decode(r, &out->items[out->n], depth + 1)) {
            out->n++; /* what the item holds is cleared with the rest */
            return false;
        }
    return true;
}

static bool decode(rd_t *r, lab_value_t *out, int depth)
{
    memset(out, 0, sizeof(*out));
    uint8_t tag;
    if (!get(r, &tag, 1))
        return false;
    switch (tag) {
    case T_NONE:
        out->kind = LAB_V_NONE;
        return true;
    case T_TRUE:
    case T_FALSE:
        out->kind = LAB_V_BOOL;
        out->i = tag == T_TRUE;
        return true;
    case T_INT: {
        uint64_t u;
        out->kind = LAB_V_INT;
        if (!get(r, &u, sizeof(u)))
            return false;
        out->i = (int64_t)u;
        return true;
    }
    case T_FLOAT:
        out->kind = LAB_V_FLOAT;
        return get(r, &out->f, sizeof(out->f));
    case T_STR:
        out->kind = LAB_V_STR;
        return get_text(r, &out->s) && get_name(r, out->name, sizeof(out->name));
    case T_LIST:
    case T_TUPLE: {
        char name[sizeof(out->name)];
        if (depth >= OBJ_MAX_DEPTH || !get_name(r, name, sizeof(name)) ||
            !decode_items(r, out, depth))
            return false;
        out->tuple = tag == T_TUPLE;
        memcpy(out->name, name, sizeof(name));
        return true;
    }
    case T_DICT:
        if (depth >= OBJ_MAX_DEPTH || !decode_items(r, out, depth))
            return false;
        out->kind = LAB_V_DICT;
        return lab__eval_dict_seal(out);
    case T_TENSOR: {
        uint8_t dt, ndim;
        int64_t shape[DL_MAX_DIMS];
        if (!get(r, &dt, 1) || !get(r, &ndim, 1) || dt >= DL_DTYPE__COUNT || ndim > DL_MAX_DIMS)
            return false;
        /* No more elements than the bytes left hold (a dim of 0 allows
         * any other): a shape no peer encoded cannot make a huge tensor. */
        uint64_t numel = 1;
        for (int d = 0; d < ndim; d++) {
            if (!get(r, &shape[d], sizeof(shape[d])) || shape[d] < 0)
                return false;
            if (numel != 0 && __builtin_mul_overflow(numel, (uint64_t)shape[d], &numel))
                return false;
        }
        if (numel > (size_t)(r->end - r->p) / dl_dtype_size((dl_dtype_t)dt))
            return false;
        dl_tensor_t *t = NULL;
        if (dl_tensor_new((dl_dtype_t)dt, ndim, shape, r->alloc, &t) != DL_OK)
            return false;
        out->kind = LAB_V_TENSOR;
        out->t = t;
        return get(r, t->data, dl_tensor_nbytes(t));
    }
    default:
        return false;
    }
}

/* ---- the collectives ---- */

typedef struct {
    lab_eval_t *ev;
    const json_t *cmd, *args, *kwargs;
    const char *name;
    dl_comm_t *comm;
    int n, me;
    const char *list_name; /* the list variable the call writes into (list_arg) */
} obj_call_t;

static const json_t *arg(const obj_call_t *c, size_t i)
{
    return json_array_get(c->args, i);
}

static dl_status_t comm_fail(obj_call_t *c)
{
    lab_rank_comm_error(c->comm, c->ev->error, sizeof(c->ev->error));
    return DL_ERR_INVALID;
}

/* src= or dst=: a world rank (default 0), as the group numbers it. */
static dl_status_t root_kw(obj_call_t *c, const char *key, int *root_p)
{
    const json_t *node = json_object_get(c->kwargs, key);
    *root_p = 0;
    if (node != NULL) {
        lab_value_t v;
        dl_status_t st = lab_eval_expr(c->ev, node, &v);
        if (st != DL_OK)
            return st;
        bool ok = v.kind == LAB_V_INT;
        int64_t r = v.i;
        lab_value_clear(&v);
        if (!ok)
            return lab__eval_fail(c->ev, node, "%s= takes an integer", key);
        int g = r >= 0 && r < INT32_MAX ? dl_comm_group_rank(c->comm, (int)r) : -1;
        if (c->comm == c->ev->r->comm)
            g = r >= 0 && r < c->n ? (int)r : -1;
        if (g < 0)
            return lab__eval_fail(c->ev, node, "%s: %s rank %lld is not part of the group", c->name,
                                  key, (long long)r);
        *root_p = g;
    }
    return DL_OK;
}

/* The node an argument chooses, as Python would evaluate it: out if
 * rank == 0 else None. */
static dl_status_t chosen(lab_eval_t *ev, const json_t **node_p)
{
    dl_status_t st = DL_OK;
    while (st == DL_OK && *node_p != NULL && json_object_get(*node_p, "if_exp") != NULL)
        st = lab__eval_if_exp_branch(ev, *node_p, node_p);
    return st;
}

/* The list variable argument node names, with at least `need` items. The
 * argument may choose it (out if rank == 0 else None). */
static dl_status_t list_arg(obj_call_t *c, const json_t *node, const char *what, size_t need,
                            lab_value_t **l_p)
{
    dl_status_t st = chosen(c->ev, &node);
    if (st != DL_OK)
        return st;
    const char *name = json_string_value(json_object_get(node, "name"));
    if (name != NULL && strcmp(name, "None") == 0 && lab__eval_var(c->ev, name) == NULL)
        node = NULL;
    lab_value_t *l = name != NULL ? lab__eval_var(c->ev, name) : NULL;
    if (node == NULL)
        return lab__eval_fail(c->ev, c->cmd, "%s needs %s", c->name, what);
    if (name == NULL)
        return lab__eval_fail(c->ev, node, "%s: %s must be a list variable", c->name, what);
    if (l == NULL)
        return lab__eval_fail(c->ev, node, "'%s' is not defined", name);
    if (l->kind != LAB_V_LIST || l->tuple || l->name[0] != '\0')
        return lab__eval_fail(c->ev, node, "%s: %s must be a list, not %s", c->name, what,
                              l->tuple ? "a tuple" : lab_vkind_a(l->kind));
    if (l->n < need)
        return lab__eval_fail(c->ev, node,
                              "%s: %s holds %zu items; it needs %zu, one for each rank", c->name,
                              what, l->n, need);
    *l_p = l;
    c->list_name = name;
    return DL_OK;
}

static dl_status_t encode_value(obj_call_t *c, const json_t *node, const lab_value_t *v, buf_t *b)
{
    const char *bad = encode(b, v, 0);
    if (b->nomem)
        return DL_ERR_NOMEM;
    if (bad != NULL)
        return lab__eval_fail(c->ev, node, "%s: cannot send %s", c->name, bad);
    return DL_OK;
}

/* The byte tensor of n * len bytes, the object's bytes at chunk `at`. */
static dl_status_t bytes_tensor(obj_call_t *c, size_t n, size_t len, const buf_t *b, int at,
                                dl_tensor_t **t_p)
{
    dl_status_t st = dl_tensor_new_1d(DL_UINT8, n * len, dl_comm_allocator(c->comm), t_p);
    if (st == DL_OK && at >= 0 && b->n > 0)
        memcpy((uint8_t *)(*t_p)->data + (size_t)at * len, b->p, b->n);
    return st;
}

/* The length every rank's chunk takes: the longest encoding, found by an
 * all_reduce with max (root < 0) or given by the root. */
static dl_status_t agree_len(obj_call_t *c, int root, size_t mine, size_t *len_p)
{
    dl_tensor_t *t = NULL;
    dl_status_t st = dl_tensor_new_1d(DL_INT64, 1, dl_comm_allocator(c->comm), &t);
    if (st != DL_OK)
        return st;
    *(int64_t *)t->data = (int64_t)mine;
    st = root < 0 ? dl_comm_all_reduce(c->comm, t, DL_OP_MAX, NULL, NULL)
                  : dl_comm_broadcast(c->comm, t, root, NULL, NULL);
    int64_t len = *(int64_t *)t->data;
    dl_tensor_free(t);
    if (st != DL_OK)
        return comm_fail(c);
    *len_p = len > 0 ? (size_t)len : 0;
    return DL_OK;
}

/* Decodes the object at chunk i of t (chunks of len bytes) into out. */
static dl_status_t decode_chunk(obj_call_t *c, const dl_tensor_t *t, size_t i, size_t len,
                                lab_value_t *out)
{
    const uint8_t *p = (const uint8_t *)t->data + i * len;
    rd_t r = {p, p + len, dl_comm_allocator(c->ev->r->comm)};
    if (decode(&r, out, 0))
        return DL_OK;
    lab_value_clear(out);
    return lab__eval_fail(c->ev, c->cmd, "%s: what rank %zu sent is no object", c->name, i);
}

/* Replaces item i of list l with v (taken over). */
static void set_item(lab_value_t *l, size_t i, lab_value_t *v)
{
    lab_value_clear(&l->items[i]);
    l->items[i] = *v;
    memset(v, 0, sizeof(*v));
}

static dl_status_t report_list(obj_call_t *c, const lab_value_t *l)
{
    return lab__eval_report_assigned(c->ev, c->list_name, l);
}

/* Decodes every rank's chunk of t into list l's first n items. */
static dl_status_t fill_list(obj_call_t *c, const dl_tensor_t *t, size_t len, lab_value_t *l)
{
    lab_value_t *got = calloc((size_t)c->n, sizeof(*got));
    if (got == NULL)
        return DL_ERR_NOMEM;
    dl_status_t st = DL_OK;
    for (int i = 0; i < c->n && st == DL_OK; i++)
        st = decode_chunk(c, t, (size_t)i, len, &got[i]);
    for (int i = 0; i < c->n; i++) {
        if (st == DL_OK) /* all or nothing */
            set_item(l, (size_t)i, &got[i]);
        else
            lab_value_clear(&got[i]);
    }
    free(got);
    return st;
}

/* Tensors over the n chunks of len bytes of t, for a list collective
 * (adjacent: the backend takes them as the one buffer they are). */
static dl_tensor_t **chunk_views(const dl_tensor_t *t, int n, size_t len)
{
    if (n <= 0)
        return NULL;
    dl_tensor_t **ptrs = calloc((size_t)n, sizeof(*ptrs) + sizeof(dl_tensor_t));
    if (ptrs == NULL)
        return NULL;
    dl_tensor_t *views = (dl_tensor_t *)(ptrs + n);
    for (int i = 0; i < n; i++) {
        views[i] = *t;
        views[i].numel = len;
        views[i].shape[0] = (int64_t)len;
        views[i].data = (uint8_t *)t->data + (size_t)i * len;
        views[i].alloc = NULL; /* t's */
        ptrs[i] = &views[i];
    }
    return ptrs;
}

/* all_gather_object(object_list, obj) and gather_object(obj,
 * object_gather_list=None, dst=0). */
static dl_status_t gather_object(obj_call_t *c, bool all)
{
    const json_t *list_node = all ? arg(c, 0) : json_object_get(c->kwargs, "object_gather_list");
    const json_t *obj_node = all ? arg(c, 1) : arg(c, 0);
    int root = -1;
    lab_value_t *l = NULL, obj = {0};
    buf_t b = {0};
    dl_tensor_t *in = NULL, *out = NULL, **views = NULL;
    dl_status_t st = all ? DL_OK : root_kw(c, "dst", &root);
    bool receives = all || c->me == root;
    if (st == DL_OK && obj_node == NULL)
        st = lab__eval_fail(c->ev, c->cmd, "%s needs an object to send", c->name);
    if (st == DL_OK && receives)
        st = list_arg(c, list_node, all ? "object_list" : "object_gather_list", (size_t)c->n, &l);
    if (st == DL_OK && (st = lab_eval_expr(c->ev, obj_node, &obj)) == DL_OK)
        st = encode_value(c, obj_node, &obj, &b);
    size_t len = 0;
    if (st == DL_OK)
        st = agree_len(c, -1, b.n, &len);
    if (st == DL_OK && (st = bytes_tensor(c, 1, len, &b, 0, &in)) == DL_OK && receives &&
        (st = bytes_tensor(c, (size_t)c->n, len, &b, -1, &out)) == DL_OK && !all &&
        (views = chunk_views(out, c->n, len)) == NULL)
        st = DL_ERR_NOMEM;
    if (st == DL_OK) {
        st = all ? dl_comm_all_gather_into(c->comm, out, in, NULL, NULL)
                 : dl_comm_gather(c->comm, in, views, root, NULL, NULL);
        if (st != DL_OK)
            st = comm_fail(c);
    }
    if (st == DL_OK && l != NULL && (st = fill_list(c, out, len, l)) == DL_OK)
        st = report_list(c, l);
    free(views);
    dl_tensor_free(in);
    dl_tensor_free(out);
    free(b.p);
    lab_value_clear(&obj);
    return st;
}

/* broadcast_object_list(object_list, src=0, device=None): src's items
 * replace every other rank's, which must be as many. device= is read and
 * checked, as torch's example passes it; the bytes move on the group's
 * own device, which gives the same objects. */
static dl_status_t broadcast_object_list(obj_call_t *c)
{
    const json_t *list_node = arg(c, 0);
    int root = 0;
    lab_value_t *l = NULL, got = {0};
    buf_t b = {0};
    dl_tensor_t *t = NULL;
    dl_device_t dev;
    dl_status_t st = root_kw(c, "src", &root);
    const char *dev_word =
        json_string_value(json_object_get(json_object_get(c->kwargs, "device"), "name"));
    if (st == DL_OK && !(dev_word != NULL && strcmp(dev_word, "None") == 0))
        st = lab__eval_kw_device(c->ev, c->kwargs, &dev);
    if (st == DL_OK)
        st = list_arg(c, list_node, "object_list", 0, &l);
    if (st == DL_OK && c->me == root)
        st = encode_value(c, list_node, l, &b);
    size_t len = 0;
    if (st == DL_OK)
        st = agree_len(c, root, b.n, &len);
    if (st == DL_OK && (st = bytes_tensor(c, 1, len, &b, c->me == root ? 0 : -1, &t)) == DL_OK &&
        dl_comm_broadcast(c->comm, t, root, NULL, NULL) != DL_OK)
        st = comm_fail(c);
    if (st == DL_OK && c->me != root && (st = decode_chunk(c, t, 0, len, &got)) == DL_OK) {
        if (got.kind != LAB_V_LIST || got.n != l->n) {
            st = lab__eval_fail(c->ev, list_node,
                                "broadcast_object_list: rank %d sent %zu objects; this rank's "
                                "object_list holds %zu",
                                root, got.n, l->n);
        } else {
            for (size_t i = 0; i < l->n; i++)
                set_item(l, i, &got.items[i]);
        }
    }
    if (st == DL_OK && c->me != root)
        st = report_list(c, l);
    lab_value_clear(&got);
    dl_tensor_free(t);
    free(b.p);
    return st;
}

/* scatter_object_list(scatter_object_output_list,
 * scatter_object_input_list, src=0): item i of src's input list becomes
 * the first item of rank i's output list. */
static dl_status_t scatter_object_list(obj_call_t *c)
{
    const json_t *out_node = arg(c, 0), *in_node = arg(c, 1);
    int root = 0;
    lab_value_t *l = NULL, in = {0}, got = {0};
    buf_t *bs = NULL;
    dl_tensor_t *t = NULL, *mine = NULL, **views = NULL;
    size_t most = 0, len = 0;
    dl_status_t st = root_kw(c, "src", &root);
    if (st == DL_OK)
        st = list_arg(c, out_node, "scatter_object_output_list", 1, &l);
    if (st == DL_OK && c->me == root) {
        if (in_node == NULL || json_is_null(in_node))
            st = lab__eval_fail(c->ev, c->cmd, "%s needs scatter_object_input_list on rank %d",
                                c->name, root);
        else if ((st = lab_eval_expr(c->ev, in_node, &in)) == DL_OK &&
                 (in.kind != LAB_V_LIST || in.n != (size_t)c->n))
            st = lab__eval_fail(c->ev, in_node,
                                "%s: scatter_object_input_list must hold %d objects, one for "
                                "each rank",
                                c->name, c->n);
        if (st == DL_OK && (bs = calloc((size_t)c->n, sizeof(*bs))) == NULL)
            st = DL_ERR_NOMEM;
        for (int i = 0; st == DL_OK && i < c->n; i++) {
            st = encode_value(c, in_node, &in.items[i], &bs[i]);
            most = bs[i].n > most ? bs[i].n : most;
        }
    }
    if (st == DL_OK)
        st = agree_len(c, root, most, &len);
    if (st == DL_OK && c->me == root &&
        (st = bytes_tensor(c, (size_t)c->n, len, NULL, -1, &t)) == DL_OK) {
        for (int i = 0; i < c->n; i++)
            if (bs[i].n > 0)
                memcpy((uint8_t *)t->data + (size_t)i * len, bs[i].p, bs[i].n);
        if ((views = chunk_views(t, c->n, len)) == NULL)
            st = DL_ERR_NOMEM;
    }
    if (st == DL_OK && (st = bytes_tensor(c, 1, len, NULL, -1, &mine)) == DL_OK &&
        dl_comm_scatter(c->comm, mine, views, root, NULL, NULL) != DL_OK)
        st = comm_fail(c);
    if (st == DL_OK && (st = decode_chunk(c, mine, 0, len, &got)) == DL_OK) {
        set_item(l, 0, &got);
        st = report_list(c, l);
    }
    for (int i = 0; bs != NULL && i < c->n; i++)
        free(bs[i].p);
    free(bs);
    free(views);
    dl_tensor_free(t);
    dl_tensor_free(mine);
    lab_value_clear(&in);
    lab_value_clear(&got);
    return st;
}

static const char *const object_colls[] = {"all_gather_object", "gather_object",
                                           "broadcast_object_list", "scatter_object_list"};

bool lab__eval_is_object_coll(const char *name)
{
    for (size_t i = 0; i < sizeof(object_colls) / sizeof(object_colls[0]); i++)
        if (strcmp(name, object_colls[i]) == 0)
            return true;
    return false;
}

dl_status_t lab__eval_object_coll(lab_eval_t *ev, const json_t *cmd, const char *name,
                                  dl_comm_t *comm)
{
    obj_call_t c = {.ev = ev,
                    .cmd = cmd,
                    .args = json_object_get(cmd, "args"),
                    .kwargs = json_object_get(cmd, "kwargs"),
                    .name = name,
                    .comm = comm,
                    .n = dl_comm_size(comm),
                    .me = dl_comm_rank(comm)};
    /* Its broadcasts and gathers are reported as the call written. */
    const char *was = ev->r != NULL ? ev->r->coll_as : NULL;
    if (ev->r != NULL) {
        ev->r->coll_as = name;
        ev->r->coll_as_parts = 0;
    }
    dl_status_t st = strcmp(name, "broadcast_object_list") == 0 ? broadcast_object_list(&c)
                     : strcmp(name, "scatter_object_list") == 0 ? scatter_object_list(&c)
                                                                : gather_object(&c, name[0] == 'a');
    if (ev->r != NULL)
        ev->r->coll_as = was;
    return st;
}
