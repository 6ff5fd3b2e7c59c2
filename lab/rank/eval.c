/* Expressions of the shell language: literals, rank and world_size, tensor
 * constructors (device=cuda puts the tensor on this rank's GPU), + - * / %
 * ** and comparisons with torch's type promotion, indexing and slicing. */
#include <errno.h>
#include <limits.h>
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

/* Sets ev->error to msg at (line, col) of the statement: where in the
 * def when a function runs, as its def may come from a line typed long
 * before the call. */
static dl_status_t fail_at(lab_eval_t *ev, long long line, long long col, const char *msg)
{
    const lab_scope_t *sc = ev->scope;
    while (sc != NULL && sc->def == NULL)
        sc = sc->up;
    if (sc != NULL && col > 0) {
        long long first = lab_json_int(sc->def, "line", 1);
        snprintf(ev->error, sizeof(ev->error), "in %s(), line %lld of its def, column %lld: %s",
                 lab_json_str(sc->def, "name", "<lambda>"), (line > 0 ? line : 1) - first + 1, col,
                 msg);
        return DL_ERR_INVALID;
    }
    if (col > 0 && line > 1)
        snprintf(ev->error, sizeof(ev->error), "line %lld, column %lld: %s", line, col, msg);
    else if (col > 0)
        snprintf(ev->error, sizeof(ev->error), "column %lld: %s", col, msg);
    else
        snprintf(ev->error, sizeof(ev->error), "%s", msg);
    return DL_ERR_INVALID;
}

dl_status_t lab__eval_fail(lab_eval_t *ev, const json_t *node, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fail_at(ev, lab_json_int(node, "line", 0), lab_json_int(node, "col", 0), msg);
}

dl_status_t lab__eval_fail_undefined(lab_eval_t *ev, const json_t *node, const lab_value_t *v)
{
    char msg[200];
    snprintf(msg, sizeof(msg), "'%s' is not defined", v->name);
    if (v->name_col > 0)
        return fail_at(ev, v->name_line, v->name_col, msg);
    return lab__eval_fail(ev, node, "%s", msg);
}

bool lab__eval_place(json_t *node, const json_t *at)
{
    static const char *const keys[] = {"col", "line"};
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        json_t *v = json_object_get(at, keys[k]);
        if (v != NULL && json_object_set(node, keys[k], v) != 0)
            return false;
    }
    return true;
}

json_t *lab__eval_name_at(const json_t *at, const char *name)
{
    json_t *node = json_pack("{s:s}", "name", name);
    if (node != NULL && !lab__eval_place(node, at)) {
        json_decref(node);
        return NULL;
    }
    return node;
}

const lab_value_t *lab__eval_undefined_in(const lab_value_t *v)
{
    if (lab__eval_undefined(v))
        return v;
    for (size_t i = 0; v->kind == LAB_V_LIST && i < v->n; i++) {
        const lab_value_t *in = lab__eval_undefined_in(&v->items[i]);
        if (in != NULL)
            return in;
    }
    return NULL;
}

static dl_allocator_t *alloc_of(lab_eval_t *ev)
{
    return dl_comm_allocator(ev->r->comm);
}

/* ---- dtype promotion, as torch does it ---- */

static int category(dl_dtype_t dt)
{
    return dt == DL_BOOL ? 0 : dl_dtype_is_float(dt) ? 2 : 1;
}

static int rank_in_category(dl_dtype_t dt)
{
    switch (dt) {
    case DL_INT8:
    case DL_UINT8:
        return 1;
    case DL_INT32:
        return 2;
    case DL_INT64:
        return 3;
    case DL_FLOAT16:
    case DL_BFLOAT16:
        return 1;
    case DL_FLOAT32:
        return 2;
    case DL_FLOAT64:
        return 3;
    default:
        return 0;
    }
}

static dl_dtype_t promote_tensors(dl_dtype_t a, dl_dtype_t b)
{
    if (a == b)
        return a;
    if (category(a) != category(b))
        return category(a) > category(b) ? a : b;
    /* Same category: the wider wins; mixed 8-bit ints and mixed halves
     * meet one level up, as in torch. */
    if ((a == DL_FLOAT16 && b == DL_BFLOAT16) || (a == DL_BFLOAT16 && b == DL_FLOAT16))
        return DL_FLOAT32;
    if ((a == DL_INT8 && b == DL_UINT8) || (a == DL_UINT8 && b == DL_INT8))
        return DL_INT32; /* torch picks int16, which distlab does not have */
    return rank_in_category(a) >= rank_in_category(b) ? a : b;
}

dl_dtype_t lab__eval_promote(dl_dtype_t a, dl_dtype_t b)
{
    return promote_tensors(a, b);
}

/* A tensor of no dimensions (zd, t.sum()) meets one of some (d): as a
 * Python number does, it decides the dtype only from a higher category
 * (int32 + tensor(7) is int32, int32 + tensor(1.5, float64) float64). */
static dl_dtype_t promote_zero_dim(dl_dtype_t d, dl_dtype_t zd)
{
    return category(zd) <= category(d) ? d : promote_tensors(d, zd);
}

/* A Python scalar of category c meets a tensor of dtype dt: the tensor's
 * dtype wins unless the scalar is of a higher category. */
static dl_dtype_t promote_scalar(dl_dtype_t dt, int c)
{
    if (c <= category(dt))
        return dt;
    return c == 2 ? DL_FLOAT32 : DL_INT64;
}

static int scalar_category(const lab_value_t *v)
{
    return v->kind == LAB_V_BOOL ? 0 : v->kind == LAB_V_FLOAT ? 2 : 1;
}

static double scalar_value(const lab_value_t *v)
{
    return v->kind == LAB_V_FLOAT ? v->f : (double)v->i;
}

/* Whether the Python number x can be written into dtype dt: torch refuses
 * one out of range ("value cannot be converted to type uint8_t without
 * overflow") where a tensor's values would wrap. An unsigned type takes
 * down to minus its maximum (-1 is 255 in uint8), as torch's check does.
 * *tname is torch's name for the type in that message: literal's for
 * torch.tensor([...]), else the C++ one of an assignment or full(). */
static bool number_fits(dl_dtype_t dt, const lab_value_t *x, bool literal, const char **tname)
{
    double v = scalar_value(x);
    bool integral = x->kind != LAB_V_FLOAT;
    double lo, hi;
    switch (dt) {
    case DL_UINT8:
        /* torch lets an integer wrap from minus the maximum, a float not */
        lo = integral ? -255 : 0, hi = 255, *tname = literal ? "uint8" : "uint8_t";
        break;
    case DL_INT8:
        lo = -128, hi = 127, *tname = literal ? "int8" : "int8_t";
        break;
    case DL_INT32:
        lo = -2147483648.0, hi = 2147483647.0, *tname = literal ? "int32" : "int";
        break;
    case DL_INT64:
        if (integral)
            return true;
        lo = -9223372036854775808.0, hi = 9223372036854775807.0;
        *tname = literal ? "int64" : "int64_t";
        return v >= lo && v < hi; /* 2^63 itself does not fit */
    case DL_FLOAT16:
        lo = -65504, hi = 65504, *tname = "at::Half";
        break;
    case DL_BFLOAT16:
        lo = -3.3895313892515355e38, hi = 3.3895313892515355e38, *tname = "at::BFloat16";
        break;
    case DL_FLOAT32:
        lo = -3.4028234663852886e38, hi = 3.4028234663852886e38, *tname = "float";
        break;
    default: /* bool takes anything; float64 every double */
        return true;
    }
    /* A float past a float type's range is inf in torch.tensor([...]); only
     * an assignment or full() is checked. */
    if (dl_dtype_is_float(dt) && (literal || !isfinite(v)))
        return true;
    if (integral && (dt == DL_UINT8 || dt == DL_INT8 || dt == DL_INT32))
        return x->i >= (int64_t)lo && x->i <= (int64_t)hi;
    if (isnan(v)) /* a NaN is a float's, and no integer's */
        return dl_dtype_is_float(dt);
    return v >= lo && v <= hi;
}

bool lab__eval_number_fits(dl_dtype_t dt, const lab_value_t *x, const char **tname)
{
    return number_fits(dt, x, false, tname);
}

/* Element i of host tensor t = the Python number x, cast to t's dtype (an
 * integer exactly, where a double would round a large int64). */
static void set_number(dl_tensor_t *t, size_t i, const lab_value_t *x)
{
    if (x->kind == LAB_V_FLOAT || dl_dtype_is_float(t->dtype))
        dl_dtype_set(t->dtype, t->data, i, scalar_value(x));
    else
        dl_dtype_set_i64(t->dtype, t->data, i, x->i);
}

static dl_status_t fail_overflow(lab_eval_t *ev, const json_t *node, const char *tname)
{
    return fail(ev, node, "value cannot be converted to type %s without overflow", tname);
}

/* ---- tensors ---- */

static dl_status_t new_tensor(lab_eval_t *ev, dl_dtype_t dt, int ndim, const int64_t *shape,
                              dl_tensor_t **t_p)
{
    dl_status_t st = dl_tensor_new(dt, ndim, shape, alloc_of(ev), t_p);
    if (st != DL_OK)
        snprintf(ev->error, sizeof(ev->error), "cannot allocate a tensor: %s", dl_strerror(st));
    return st;
}

void lab__eval_set_tensor(lab_value_t *out, dl_tensor_t *t)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_TENSOR;
    out->t = t;
}

/* ---- tensors on a GPU ----
 *
 * Tensors are made and computed on the host; one on a GPU is moved there
 * once made, and an expression that reads one (arithmetic, indexing) reads
 * a host copy and moves its result back to that GPU. torch would compute
 * on the GPU; the values are the same. */

static const dl_device_t host_dev = {DL_DEVICE_CPU, 0};

static bool on_gpu(const lab_value_t *v)
{
    return v->kind == LAB_V_TENSOR && v->t->device.type == DL_DEVICE_CUDA;
}

static const char *device_name(dl_device_t dev, char *buf, size_t cap)
{
    if (dev.type != DL_DEVICE_CUDA)
        return "cpu";
    snprintf(buf, cap, "cuda:%d", dev.index);
    return buf;
}

dl_status_t lab__eval_to_device(lab_eval_t *ev, lab_value_t *v, dl_device_t dev)
{
    if (v->kind != LAB_V_TENSOR ||
        (v->t->device.type == dev.type && v->t->device.index == dev.index))
        return DL_OK;
    dl_tensor_t *t = NULL;
    dl_status_t st = dl_tensor_to(v->t, dev, &t);
    if (st != DL_OK) {
        char name[32];
        snprintf(ev->error, sizeof(ev->error), "cannot copy the tensor to %s: %s",
                 device_name(dev, name, sizeof(name)), dl_cuda_last_error());
        lab_value_clear(v);
        return st;
    }
    dl_tensor_free(v->t);
    v->t = t;
    return DL_OK;
}

dl_status_t lab__eval_host_view(lab_eval_t *ev, const lab_value_t *v, lab_value_t *h)
{
    *h = *v;
    h->borrowed = true;
    if (!on_gpu(v))
        return DL_OK;
    h->borrowed = false;
    h->t = NULL;
    if (dl_tensor_to(v->t, host_dev, &h->t) != DL_OK) {
        memset(h, 0, sizeof(*h));
        snprintf(ev->error, sizeof(ev->error), "cannot copy the tensor from the GPU: %s",
                 dl_cuda_last_error());
        return DL_ERR_SYSTEM;
    }
    return DL_OK;
}

/* An integer tensor in x's place the int it holds, where torch and Python
 * index with it as with the int: as a tensor's index one of no dimensions
 * (t[t.argmax()]; a bool or uint8 one is a mask there, one new dimension
 * of size 1 or 0), and as a number (a slice's bound, a list's index:
 * t[2:torch.tensor(4)], l[torch.tensor(1)]) any of one element, bools
 * too. Anything else is left as it is. */
static dl_status_t index_scalar(lab_eval_t *ev, lab_value_t *x, bool as_number)
{
    if (x->kind != LAB_V_TENSOR || dl_dtype_is_float(x->t->dtype) ||
        (as_number ? x->t->numel != 1
                   : x->t->ndim != 0 || x->t->dtype == DL_BOOL || x->t->dtype == DL_UINT8))
        return DL_OK;
    lab_value_t h;
    dl_status_t st = lab__eval_host_view(ev, x, &h);
    if (st != DL_OK)
        return st;
    int64_t i = dl_dtype_get_i64(h.t->dtype, h.t->data, 0);
    lab_value_clear(&h);
    lab_value_clear(x);
    x->kind = LAB_V_INT;
    x->i = i;
    return DL_OK;
}

dl_status_t lab__eval_kw_device(lab_eval_t *ev, const json_t *kw, dl_device_t *dev_p)
{
    json_t *node = json_object_get(kw, "device");
    *dev_p = host_dev;
    if (node == NULL)
        return DL_OK;
    /* device=cuda, a bare word; else a value, as torch reads it:
     * device='cuda', f"cuda:{rank}", a variable, t.device, a GPU's number. */
    const char *word = lab_json_str(node, "name", NULL);
    if (word != NULL && lab__eval_var(ev, word) == NULL && !lab__eval_is_builtin(word)) {
        lab_value_t w = {.kind = LAB_V_STR, .s = (char *)word};
        return lab__eval_device_value(ev, node, &w, dev_p);
    }
    lab_value_t v;
    dl_status_t st = lab_eval_expr(ev, node, &v);
    if (st == DL_OK) {
        st = lab__eval_device_value(ev, node, &v, dev_p);
        lab_value_clear(&v);
    }
    return st;
}

/* Element i of v as a double (v a tensor or a scalar broadcast). */
static double elem(const lab_value_t *v, size_t i)
{
    if (v->kind == LAB_V_TENSOR)
        return dl_dtype_get(v->t->dtype, v->t->data, v->t->numel == 1 ? 0 : i);
    return scalar_value(v);
}

/* Element i of v as an operand of dt, as torch casts every operand (a
 * Python number too) to the operation's dtype before computing: 0.1 is
 * float32's 0.1 beside a float32 tensor, so t == 0.1 holds where t was
 * made of 0.1, and t % 0.3 divides by float32's 0.3. */
static double elem_as(const lab_value_t *v, size_t i, dl_dtype_t dt)
{
    double x = elem(v, i);
    if (v->kind == LAB_V_TENSOR && v->t->dtype == dt)
        return x; /* already a value of dt */
    return dl_dtype_round(dt, x);
}

static int64_t elem_i(const lab_value_t *v, size_t i)
{
    if (v->kind == LAB_V_TENSOR) {
        const dl_tensor_t *t = v->t;
        size_t k = t->numel == 1 ? 0 : i;
        return dl_dtype_is_float(t->dtype) ? (int64_t)dl_dtype_get(t->dtype, t->data, k)
                                           : dl_dtype_get_i64(t->dtype, t->data, k);
    }
    return v->kind == LAB_V_FLOAT ? (int64_t)v->f : v->i;
}

static dl_status_t arith(lab_eval_t *ev, const json_t *node, const char *op, const lab_value_t *a,
                         const lab_value_t *b, lab_value_t *out);

/* As in torch, tensors a and b on two devices do not mix, except when o
 * (one of them) is a 0-dimensional cpu tensor, which counts as a scalar. */
static dl_status_t devices_mix(lab_eval_t *ev, const json_t *node, const dl_tensor_t *a,
                               const dl_tensor_t *b, const dl_tensor_t *o)
{
    bool same = a->device.type == b->device.type && a->device.index == b->device.index;
    if (same || (o->device.type == DL_DEVICE_CPU && o->ndim == 0))
        return DL_OK;
    char x[32], y[32];
    return fail(ev, node, "expected all tensors on the same device, but found %s and %s",
                device_name(a->device, x, sizeof(x)), device_name(b->device, y, sizeof(y)));
}

/* Host views of the operands a and b (one of them a tensor) of an
 * element-wise operation, once their devices are found to mix; *dev_p
 * gets the device the result belongs on: a GPU where either is on one. */
static dl_status_t host_pair(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                             const lab_value_t *b, lab_value_t *ha, lab_value_t *hb,
                             dl_device_t *dev_p)
{
    const dl_tensor_t *g = on_gpu(a) || !on_gpu(b) ? a->t : b->t;
    if (a->kind != LAB_V_TENSOR)
        g = b->t;
    dl_status_t st;
    if (a->kind == LAB_V_TENSOR && b->kind == LAB_V_TENSOR &&
        (st = devices_mix(ev, node, a->t, b->t, g == a->t ? b->t : a->t)) != DL_OK)
        return st;
    *dev_p = g->device;
    if ((st = lab__eval_host_view(ev, a, ha)) != DL_OK)
        return st;
    if ((st = lab__eval_host_view(ev, b, hb)) != DL_OK)
        lab_value_clear(ha);
    return st;
}

/* arith with a tensor on a GPU: computed on host copies, the result moved
 * to that GPU; the other operand on its device or a scalar. */
static dl_status_t arith_gpu(lab_eval_t *ev, const json_t *node, const char *op,
                             const lab_value_t *a, const lab_value_t *b, lab_value_t *out)
{
    dl_device_t dev;
    lab_value_t ha, hb;
    dl_status_t st = host_pair(ev, node, a, b, &ha, &hb, &dev);
    if (st != DL_OK)
        return st;
    st = arith(ev, node, op, &ha, &hb, out);
    lab_value_clear(&ha);
    lab_value_clear(&hb);
    return st == DL_OK ? lab__eval_to_device(ev, out, dev) : st;
}

/* The binary operators, by the text the parser gives them. */
typedef enum {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_FLOORDIV,
    OP_POW,
    OP_BAND, /* & | ^: integers and bools only */
    OP_BOR,
    OP_BXOR,
    OP_SHL, /* << >>: integers (and bools, as 0 and 1) only */
    OP_SHR,
    OP_MAXIMUM, /* torch.maximum and minimum (and clamp): no operator of their own */
    OP_MINIMUM,
    OP_CLAMP_MIN, /* clamp's number bounds, as C++'s std::max and std::min */
    OP_CLAMP_MAX,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP__BAD
} binop_t;

static binop_t binop_of(const char *s)
{
    static const char *const names[] = {
        "+",  "-",       "*",       "/",         "%",         "//", "**", "&", "|",  "^", "<<",
        ">>", "maximum", "minimum", "clamp_min", "clamp_max", "==", "!=", "<", "<=", ">", ">="};
    for (int i = 0; i < OP__BAD; i++)
        if (strcmp(s, names[i]) == 0)
            return (binop_t)i;
    return OP__BAD;
}

static bool is_compare(binop_t op)
{
    return op >= OP_EQ;
}

static bool compare_d(binop_t op, double x, double y)
{
    switch (op) {
    case OP_EQ:
        return x == y;
    case OP_NE:
        return x != y;
    case OP_LT:
        return x < y;
    case OP_LE:
        return x <= y;
    case OP_GT:
        return x > y;
    default:
        return x >= y;
    }
}

static bool compare_i(binop_t op, int64_t x, int64_t y)
{
    switch (op) {
    case OP_EQ:
        return x == y;
    case OP_NE:
        return x != y;
    case OP_LT:
        return x < y;
    case OP_LE:
        return x <= y;
    case OP_GT:
        return x > y;
    default:
        return x >= y;
    }
}

/* Python's float %: the result takes the divisor's sign (torch.remainder). */
static double mod_d(double x, double y)
{
    double r = fmod(x, y);
    if (r != 0 && (r < 0) != (y < 0))
        r += y;
    return r;
}

/* x // y of floats, as torch's div_floor_floating and Python compute it:
 * not floor(x / y), whose quotient rounds (1.5 // 0.1 is 14, floor(1.5 /
 * 0.1) 15; inf // 2 is NaN). The steps are in the dtype's arithmetic,
 * float for float16 (std::fmod of a Half gives a float; bfloat16's are
 * each rounded to it, as torch 1.13 gives them), and the quotient is
 * rounded to the dtype before its last correction. */
static double floordiv_d(dl_dtype_t dt, double x, double y)
{
    dl_dtype_t at = dt == DL_FLOAT16 ? DL_FLOAT32 : dt;
    if (y == 0)
        return dl_dtype_round(dt, x / y);
    double mod = dl_dtype_round(at, fmod(x, y));
    double div = dl_dtype_round(at, dl_dtype_round(at, x - mod) / y);
    if (mod != 0 && (y < 0) != (mod < 0))
        div = dl_dtype_round(at, div - 1);
    if (div == 0)
        return copysign(0.0, x / y);
    double q = dl_dtype_round(dt, floor(div));
    if (div - q > 0.5)
        q = dl_dtype_round(dt, q + 1);
    return q;
}

static double arith_d(binop_t op, double x, double y)
{
    switch (op) {
    case OP_ADD:
        return x + y;
    case OP_SUB:
        return x - y;
    case OP_MUL:
        return x * y;
    case OP_DIV:
        return x / y;
    case OP_MOD:
        return mod_d(x, y);
    case OP_FLOORDIV:
        return floordiv_d(DL_FLOAT64, x, y);
    case OP_CLAMP_MIN:
        return x < y ? y : x; /* a NaN bound leaves x, and -0.0 stays */
    case OP_CLAMP_MAX:
        return y < x ? y : x;
    case OP_MAXIMUM:
    case OP_MINIMUM:
        /* torch's: a NaN on either side is the result, else std::max or
         * std::min, which keep x when the two are equal (0.0 and -0.0) */
        if (isnan(x) || isnan(y))
            return NAN;
        return op == OP_MAXIMUM ? (x < y ? y : x) : (y < x ? y : x);
    default:
        return pow(x, y);
    }
}

/* x ** e of a float tensor's element and a Python number e, as torch's
 * pow_tensor_scalar computes it: 0 and 1 fill and copy; 0.5, -0.5 and -1
 * are sqrt, rsqrt and reciprocal (sqrt(-0.0) is -0.0 where pow gives 0.0;
 * float16 excepted); 2, 3 and -2 products in the dtype (not float16);
 * float16 and bfloat16 take e in their dtype and compute in float. */
static double pow_scalar_d(dl_dtype_t dt, double x, double e)
{
    bool half = dt == DL_FLOAT16, bf16 = dt == DL_BFLOAT16;
    if (e == 0)
        return 1;
    if (e == 1)
        return x;
    if (!half && e == 0.5)
        return dl_dtype_round(dt, sqrt(x));
    if (!half && e == -0.5)
        return dl_dtype_round(dt, 1 / dl_dtype_round(dt, sqrt(x)));
    if (!half && e == -1)
        return dl_dtype_round(dt, 1 / x);
    if (half || bf16)
        e = dl_dtype_round(dt, e);
    if (!half && e == 2)
        return dl_dtype_round(dt, x * x);
    if (!half && e == 3)
        return dl_dtype_round(dt, dl_dtype_round(dt, x * x) * x);
    if (!half && e == -2)
        return dl_dtype_round(dt, 1 / dl_dtype_round(dt, x * x));
    if (half || bf16)
        return dl_dtype_round(dt, powf((float)x, (float)e));
    return dl_dtype_round(dt, pow(x, e));
}

/* Integer arithmetic that wraps as two's complement (torch's integer
 * tensors); y is not 0 for %, and not negative for **. */
static bool is_bitwise(binop_t op)
{
    return op == OP_BAND || op == OP_BOR || op == OP_BXOR;
}

static bool is_shift(binop_t op)
{
    return op == OP_SHL || op == OP_SHR;
}

/* x << y or x >> y as torch 1.13's CPU kernel shifts an integer tensor: in
 * 64 bits for int64, else in C's int (32 bits, which the caller narrows to
 * the dtype), the count taken modulo the width as x86's shifts take it
 * (t << 64 leaves t; int8 1 << 9 is 0 once narrowed). */
static int64_t shift_i(binop_t op, int64_t x, int64_t y, dl_dtype_t dt)
{
    if (dt == DL_INT64) {
        unsigned c = (unsigned)y & 63u;
        return op == OP_SHL ? (int64_t)((uint64_t)x << c) : x >> c;
    }
    unsigned c = (unsigned)y & 31u;
    int32_t v = (int32_t)x;
    return op == OP_SHL ? (int32_t)((uint32_t)v << c) : v >> c;
}

/* Python's x << y and x >> y of ints: a negative count is refused, a
 * left shift past 64 bits overflows (the shell's ints are 64-bit), a
 * right shift floors. */
static dl_status_t shift_scalar(lab_eval_t *ev, const json_t *node, binop_t op, int64_t x,
                                int64_t y, lab_value_t *out)
{
    if (y < 0)
        return fail(ev, node, "negative shift count");
    out->kind = LAB_V_INT;
    if (op == OP_SHR) {
        out->i = y >= 64 ? (x < 0 ? -1 : 0) : x >> y;
        return DL_OK;
    }
    /* -1 << 63 fits; 1 << 63 and anything << 64 but 0 do not */
    if (x != 0 && (y >= 64 || (x > 0 ? x > (INT64_MAX >> y) : x < (INT64_MIN >> y))))
        return fail(ev, node, "integer overflow (the shell's ints are 64-bit)");
    /* 0 << 64 and beyond is 0 (a C shift by 64 or more is undefined) */
    out->i = x == 0 ? 0 : (int64_t)((uint64_t)x << y);
    return DL_OK;
}

static int64_t arith_i(binop_t op, int64_t x, int64_t y)
{
    uint64_t a = (uint64_t)x, b = (uint64_t)y;
    switch (op) {
    case OP_MAXIMUM:
    case OP_CLAMP_MIN:
        return x > y ? x : y;
    case OP_MINIMUM:
    case OP_CLAMP_MAX:
        return x < y ? x : y;
    case OP_BAND:
        return x & y;
    case OP_BOR:
        return x | y;
    case OP_BXOR:
        return x ^ y;
    case OP_ADD:
        return (int64_t)(a + b);
    case OP_SUB:
        return (int64_t)(a - b);
    case OP_MUL:
        return (int64_t)(a * b);
    case OP_MOD: {
        if (y == -1)
            return 0;
        int64_t r = x % y;
        return r != 0 && (r < 0) != (y < 0) ? r + y : r;
    }
    case OP_FLOORDIV: {
        /* Python's and torch's //: rounded towards minus infinity. */
        if (y == -1)
            return (int64_t)(0 - a);
        int64_t q = x / y;
        return x % y != 0 && (x < 0) != (y < 0) ? q - 1 : q;
    }
    default: {
        /* torch's integer power: a negative exponent leaves 1 and -1 their
         * sign's power, and every other base 0. */
        if (y < 0)
            return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
        uint64_t r = 1;
        for (; b > 0; b >>= 1, a *= a)
            if (b & 1)
                r *= a;
        return (int64_t)r;
    }
    }
}

/* Python's operators on two scalars (bools count as 0 and 1). */
static dl_status_t arith_scalar(lab_eval_t *ev, const json_t *node, binop_t op, const char *text,
                                const lab_value_t *a, const lab_value_t *b, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    bool fl = a->kind == LAB_V_FLOAT || b->kind == LAB_V_FLOAT;
    double x = scalar_value(a), y = scalar_value(b);
    if (op == OP_MAXIMUM || op == OP_MINIMUM || op == OP_CLAMP_MIN || op == OP_CLAMP_MAX) {
        out->kind = fl ? LAB_V_FLOAT : LAB_V_INT;
        if (fl)
            out->f = arith_d(op, x, y);
        else
            out->i = arith_i(op, a->i, b->i);
        return DL_OK;
    }
    if (is_bitwise(op) || is_shift(op)) {
        /* Python's: of ints, an int; of two bools, a bool (an int shifted) */
        if (fl)
            return fail(ev, node, "unsupported operand type(s) for %s: '%s' and '%s'", text,
                        lab_vkind_name(a->kind), lab_vkind_name(b->kind));
        if (is_shift(op))
            return shift_scalar(ev, node, op, a->i, b->i, out);
        out->kind = a->kind == LAB_V_BOOL && b->kind == LAB_V_BOOL ? LAB_V_BOOL : LAB_V_INT;
        out->i = arith_i(op, a->i, b->i);
        return DL_OK;
    }
    if (is_compare(op)) {
        out->kind = LAB_V_BOOL;
        out->i = fl ? compare_d(op, x, y) : compare_i(op, a->i, b->i);
        return DL_OK;
    }
    if ((op == OP_DIV || op == OP_MOD || op == OP_FLOORDIV) && y == 0)
        return fail(ev, node,
                    fl && op == OP_FLOORDIV ? "float floor division by zero"
                    : fl                    ? "float division by zero"
                    : op == OP_MOD          ? "integer modulo by zero"
                    : op == OP_FLOORDIV     ? "integer division or modulo by zero"
                                            : "division by zero");
    if (op == OP_POW && !fl && b->i < 0) {
        if (a->i == 0)
            return fail(ev, node, "0 cannot be raised to a negative power");
        fl = true; /* 2 ** -1 is 0.5 in Python */
    }
    if (fl || op == OP_DIV) {
        out->kind = LAB_V_FLOAT;
        out->f = arith_d(op, x, y);
        if (op == OP_MOD && out->f == 0)
            out->f = copysign(0.0, y); /* Python's float %: 0.0 % -2.5 is -0.0 */
        if (op == OP_POW && isnan(out->f) && !isnan(x) && !isnan(y))
            return fail(ev, node, "a negative number cannot be raised to a fractional power");
        return DL_OK;
    }
    /* Python's integers never overflow; ours are 64 bits, so a result that
     * does not fit is refused rather than wrapped. */
    out->kind = LAB_V_INT;
    bool over = false;
    switch (op) {
    case OP_ADD:
        over = __builtin_add_overflow(a->i, b->i, &out->i);
        break;
    case OP_SUB:
        over = __builtin_sub_overflow(a->i, b->i, &out->i);
        break;
    case OP_MUL:
        over = __builtin_mul_overflow(a->i, b->i, &out->i);
        break;
    case OP_MOD:
    case OP_FLOORDIV:
        /* INT64_MIN // -1 is the one quotient that does not fit. */
        over = op == OP_FLOORDIV && a->i == INT64_MIN && b->i == -1;
        out->i = arith_i(op, a->i, b->i);
        break;
    default: {
        int64_t r = 1, base = a->i;
        for (int64_t e = b->i; e > 0 && !over; e--)
            over = __builtin_mul_overflow(r, base, &r);
        out->i = r;
        break;
    }
    }
    if (over)
        return fail(ev, node, "integer overflow: %lld %s %lld does not fit in 64 bits",
                    (long long)a->i, text, (long long)b->i);
    return DL_OK;
}

/* A shape as torch's messages write it: "[2, 3]". */
void lab__eval_shape_text(int nd, const int64_t *shape, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < nd && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

/* torch's broadcasting: shapes line up from the right, and each pair of
 * sizes must be equal or one of them 1 (a missing dimension counts as 1; a
 * number has none). *nd_p and shape get the result's shape; false (said)
 * when the shapes do not broadcast, with torch's words. */
static bool broadcast_shape(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                            const lab_value_t *b, int *nd_p, int64_t *shape)
{
    int na = a->kind == LAB_V_TENSOR ? a->t->ndim : 0;
    int nb = b->kind == LAB_V_TENSOR ? b->t->ndim : 0;
    int nd = na > nb ? na : nb;
    for (int d = nd - 1; d >= 0; d--) {
        int da = d - (nd - na), db = d - (nd - nb);
        int64_t sa = da >= 0 ? a->t->shape[da] : 1, sb = db >= 0 ? b->t->shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            fail(ev, node,
                 "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                 "non-singleton dimension %d",
                 (long long)sa, (long long)sb, d);
            return false;
        }
        shape[d] = sa == 1 ? sb : sa;
    }
    *nd_p = nd;
    return true;
}

/* Where element i of a result of shape (nd, shape) reads from v: v's
 * dimensions of size 1, and those it lacks, repeat. */
static size_t broadcast_at(const lab_value_t *v, int nd, const int64_t *shape, size_t i)
{
    if (v->kind != LAB_V_TENSOR || v->t->numel == 1)
        return 0;
    const dl_tensor_t *t = v->t;
    bool same = t->ndim == nd;
    for (int d = 0; d < nd && same; d++)
        same = t->shape[d] == shape[d];
    if (same)
        return i;
    size_t at = 0, stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        size_t idx = i % (size_t)shape[d];
        i /= (size_t)shape[d];
        int td = d - (nd - t->ndim);
        if (td < 0)
            break;
        if (t->shape[td] != 1)
            at += idx * stride;
        stride *= (size_t)t->shape[td];
    }
    return at;
}

/* 'a' + 'b', 'a' == 'b' and 'a' != 'b'. */
static dl_status_t str_op(lab_eval_t *ev, binop_t op, const lab_value_t *a, const lab_value_t *b,
                          lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    if (op != OP_ADD) {
        out->kind = LAB_V_BOOL;
        /* a ReduceOp (a string marked so) equals only the same op */
        out->i = (strcmp(a->s, b->s) == 0 && strcmp(a->name, b->name) == 0) == (op == OP_EQ);
        return DL_OK;
    }
    size_t la = strlen(a->s), lb = strlen(b->s);
    if (la + lb > LAB_STR_MAX) {
        snprintf(ev->error, sizeof(ev->error), "string too long (at most %u bytes)", LAB_STR_MAX);
        return DL_ERR_TOO_BIG;
    }
    if ((out->s = malloc(la + lb + 1)) == NULL)
        return DL_ERR_NOMEM;
    memcpy(out->s, a->s, la);
    memcpy(out->s + la, b->s, lb + 1);
    out->kind = LAB_V_STR;
    return DL_OK;
}

/* Python's list + list and list * n (and n * list): new lists, of copies
 * of the items; a tuple with a tuple stays one, and a torch.Size with a
 * tuple after it, or times n, stays a torch.Size. */
static dl_status_t list_op(lab_eval_t *ev, const json_t *node, binop_t op, const lab_value_t *a,
                           const lab_value_t *b, lab_value_t *out)
{
    const lab_value_t *l = a->kind == LAB_V_LIST ? a : b, *k = l == a ? b : a;
    /* the count in 64 bits: a times above the bound is past it whatever n is */
    uint64_t times = op == OP_MUL ? (k->i > 0 ? (uint64_t)k->i : 0) : 1;
    uint64_t n = op == OP_ADD           ? (uint64_t)a->n + b->n
                 : times > LAB_LIST_MAX ? (uint64_t)LAB_LIST_MAX + 1
                                        : times * l->n;
    if (n > LAB_LIST_MAX)
        return fail(ev, node, "the list would hold too many items (at most %u)", LAB_LIST_MAX);
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_LIST;
    out->tuple =
        l->tuple || (lab__eval_is_size(l) && !lab__eval_is_size(a)); /* (1,) + shape: a tuple */
    if (lab__eval_is_size(op == OP_ADD ? a : l))
        snprintf(out->name, sizeof(out->name), "%s", LAB_SIZE);
    if ((out->items = calloc(n > 0 ? n : 1, sizeof(*out->items))) == NULL)
        return DL_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const lab_value_t *from =
            op == OP_ADD ? (i < a->n ? &a->items[i] : &b->items[i - a->n]) : &l->items[i % l->n];
        dl_status_t st = lab_value_copy(from, alloc_of(ev), &out->items[i]);
        if (st != DL_OK) {
            lab_value_clear(out);
            return st;
        }
        out->n = i + 1;
    }
    return DL_OK;
}

/* v as an integer of dtype dt holds it (wrapped), as torch converts an
 * operand to the result's dtype. */
static int64_t narrow(dl_dtype_t dt, int64_t v)
{
    uint64_t buf = 0;
    dl_dtype_set_i64(dt, &buf, 0, v);
    return dl_dtype_get_i64(dt, &buf, 0);
}

/* torch's result type of a and b, one of them a tensor: a tensor of no
 * dimensions gives way to one with dimensions of its category, a number
 * to any tensor of its category. */
static dl_dtype_t result_dtype(const lab_value_t *a, const lab_value_t *b)
{
    bool ta = a->kind == LAB_V_TENSOR, tb = b->kind == LAB_V_TENSOR;
    if (ta && tb && (a->t->ndim == 0) != (b->t->ndim == 0))
        return a->t->ndim == 0 ? promote_zero_dim(b->t->dtype, a->t->dtype)
                               : promote_zero_dim(a->t->dtype, b->t->dtype);
    return ta && tb ? promote_tensors(a->t->dtype, b->t->dtype)
           : ta     ? promote_scalar(a->t->dtype, scalar_category(b))
                    : promote_scalar(b->t->dtype, scalar_category(a));
}

/* Where torch takes a Python number beside a tensor as a scalar of the
 * result's dtype, it refuses one that does not fit, where arithmetic's
 * numbers wrap (int8 + 1000): pow's exponent (float32 and float64 take it
 * as a double) and clamp's bounds. A number ** a tensor is
 * torch.tensor(number, dtype=...) ** tensor, checked as a literal is;
 * torch.pow(number, tensor) wraps it. */
static dl_status_t number_dl_dtype_round(lab_eval_t *ev, const json_t *node, binop_t op,
                                         bool pow_fn, const lab_value_t *a, const lab_value_t *b,
                                         dl_dtype_t dt)
{
    const char *tname = NULL;
    bool checked = (op == OP_CLAMP_MIN || op == OP_CLAMP_MAX ||
                    (op == OP_POW && dt != DL_FLOAT32 && dt != DL_FLOAT64)) &&
                   b->kind != LAB_V_TENSOR;
    if (checked && !number_fits(dt, b, false, &tname))
        return fail_overflow(ev, node, tname);
    if (op == OP_POW && !pow_fn && a->kind != LAB_V_TENSOR && !number_fits(dt, a, true, &tname))
        return fail_overflow(ev, node, tname);
    return DL_OK;
}

/* a op b, in dtype *force where given (clamp's, of three values), else
 * in torch's result dtype of the two. */
static dl_status_t arith_dt(lab_eval_t *ev, const json_t *node, const char *text,
                            const lab_value_t *a, const lab_value_t *b, const dl_dtype_t *force,
                            lab_value_t *out)
{
    /* torch.pow(x, y) is x ** y, except that a number x wraps (below) */
    bool pow_fn = strcmp(text, "pow") == 0;
    binop_t op = pow_fn ? OP_POW : binop_of(text);
    if (op == OP__BAD)
        return fail(ev, node, "bad operator '%s'", text);
    bool ta = a->kind == LAB_V_TENSOR, tb = b->kind == LAB_V_TENSOR;
    if ((op == OP_ADD && a->kind == LAB_V_LIST && b->kind == LAB_V_LIST &&
         lab__eval_is_tuple(a) == lab__eval_is_tuple(b)) ||
        (op == OP_MUL && ((a->kind == LAB_V_LIST && b->kind == LAB_V_INT) ||
                          (a->kind == LAB_V_INT && b->kind == LAB_V_LIST))))
        return list_op(ev, node, op, a, b, out);
    if (a->kind == LAB_V_STR && b->kind == LAB_V_STR && op == OP_ADD &&
        (strcmp(a->name, LAB_REDUCE_OP) == 0 || strcmp(b->name, LAB_REDUCE_OP) == 0))
        return fail(ev, node, "unsupported operand type(s) for +: '%s' and '%s'",
                    a->name[0] ? a->name : "str", b->name[0] ? b->name : "str");
    if (a->kind == LAB_V_STR && b->kind == LAB_V_STR &&
        (op == OP_ADD || op == OP_EQ || op == OP_NE))
        return str_op(ev, op, a, b, out);
    dl_dtype_t da, db;
    if ((op == OP_EQ || op == OP_NE) && lab__eval_dtype_value(a, &da) &&
        lab__eval_dtype_value(b, &db)) {
        /* t.dtype == torch.float32 */
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_BOOL;
        out->i = (da == db) == (op == OP_EQ);
        return DL_OK;
    }
    for (int k = 0; k < 2; k++)
        if (lab__eval_undefined(k ? b : a))
            return lab__eval_fail_undefined(ev, node, k ? b : a);
    static const lab_vkind_t objects[] = {LAB_V_LIST,  LAB_V_NONE, LAB_V_STR,   LAB_V_WORK,
                                          LAB_V_GROUP, LAB_V_FUNC, LAB_V_P2POP, LAB_V_DICT};
    bool object = false;
    for (size_t k = 0; k < sizeof(objects) / sizeof(objects[0]); k++)
        object = object || a->kind == objects[k] || b->kind == objects[k];
    if ((op == OP_EQ || op == OP_NE) && ta != tb && object) {
        /* t == None, t == 'a', t == [1., 1.]: torch 1.13's Tensor.__eq__
         * gives False for what is no number or tensor */
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_BOOL;
        out->i = op == OP_NE;
        return DL_OK;
    }
    if ((op == OP_EQ || op == OP_NE) && !ta && !tb && object) {
        /* [1, 2] == [1, 2], t.shape == (2, 3), x == None, 'a' == 1 */
        bool eq;
        dl_status_t st = lab__eval_py_equal(ev, node, a, b, &eq);
        if (st != DL_OK)
            return st;
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_BOOL;
        out->i = eq == (op == OP_EQ);
        return DL_OK;
    }
    if ((a->kind == LAB_V_STR && b->kind != LAB_V_NAME) ||
        (b->kind == LAB_V_STR && a->kind != LAB_V_NAME))
        return lab__eval_str_arith(ev, node, text, a, b, out); /* '-' * 20, 'Rank %d' % rank */
    for (int k = 0; k < 2; k++) {
        const lab_value_t *v = k ? b : a;
        if (v->kind == LAB_V_NAME)
            return lab__eval_fail_undefined(ev, node, v);
        if (v->kind != LAB_V_TENSOR && v->kind != LAB_V_INT && v->kind != LAB_V_FLOAT &&
            v->kind != LAB_V_BOOL)
            return fail(ev, node, "'%s' needs numbers or tensors, not %s", text,
                        lab_vkind_a(v->kind));
    }
    if (!ta && !tb)
        return arith_scalar(ev, node, op, text, a, b, out);
    if (on_gpu(a) || on_gpu(b))
        return arith_gpu(ev, node, text, a, b, out);
    /* torch refuses a bool on either side of a tensor's subtraction */
    bool bool_a = a->kind == LAB_V_BOOL || (ta && a->t->dtype == DL_BOOL);
    bool bool_b = b->kind == LAB_V_BOOL || (tb && b->t->dtype == DL_BOOL);
    if (op == OP_SUB && bool_a && bool_b)
        return fail(ev, node,
                    "Subtraction, the `-` operator, with two bool tensors is not "
                    "supported. Use the `^` or `logical_xor()` operator instead.");
    if (op == OP_SUB && (bool_a || bool_b))
        return fail(ev, node,
                    "Subtraction, the `-` operator, with a bool tensor is not supported. "
                    "If you are trying to invert a mask, use the `~` or "
                    "`logical_not()` operator instead.");
    int nd;
    int64_t shape[DL_MAX_DIMS];
    if (!broadcast_shape(ev, node, a, b, &nd, shape))
        return DL_ERR_INVALID;
    dl_status_t st;
    dl_dtype_t dt = force != NULL ? *force : result_dtype(a, b);
    if (op == OP_DIV && !dl_dtype_is_float(dt))
        dt = DL_FLOAT32; /* true division */
    if (is_bitwise(op) && dl_dtype_is_float(dt))
        return fail(ev, node, "\"bitwise_%s_cpu\" not implemented for '%s'",
                    op == OP_BAND  ? "and"
                    : op == OP_BOR ? "or"
                                   : "xor",
                    lab__eval_scalar_type(dt));
    if (is_shift(op) && (dl_dtype_is_float(dt) || dt == DL_BOOL))
        return fail(ev, node, "\"%cshift_cpu\" not implemented for '%s'", op == OP_SHL ? 'l' : 'r',
                    lab__eval_scalar_type(dt));
    if (dt == DL_BOOL && (op == OP_MOD || op == OP_POW || op == OP_FLOORDIV))
        dt = DL_INT64; /* torch computes these on bools as integers */
    /* An integer result is computed in its dtype: every operand, a number
     * or a wider tensor of no dimensions, is cast to it first and wraps,
     * as torch 1.13 casts it (int8 // 1000 divides by -24, int8 < 1000
     * compares with -24). */
    bool fl = dl_dtype_is_float(dt);
    size_t numel = 1;
    for (int d = 0; d < nd; d++)
        numel *= (size_t)shape[d];
    if (!fl && (op == OP_MOD || op == OP_POW || op == OP_FLOORDIV)) {
        const lab_value_t *d = b;
        for (size_t i = 0; i < (d->kind == LAB_V_TENSOR ? d->t->numel : 1); i++) {
            /* i8 // 256 too; torch's kernel checks each element it
             * computes, and with none there is no error */
            if ((op == OP_MOD || op == OP_FLOORDIV) && numel > 0 && narrow(dt, elem_i(d, i)) == 0)
                return fail(ev, node, "RuntimeError: ZeroDivisionError"); /* torch's words */
            /* torch refuses a negative Python exponent only; a tensor's
             * negative exponents are computed (arith_i). */
            if (op == OP_POW && d->kind != LAB_V_TENSOR && elem_i(d, i) < 0)
                return fail(ev, node, "Integers to negative integer powers are not allowed.");
        }
    }
    if ((st = number_dl_dtype_round(ev, node, op, pow_fn, a, b, dt)) != DL_OK)
        return st;
    dl_dtype_t out_dt = is_compare(op) ? DL_BOOL : dt;
    dl_tensor_t *t = NULL;
    st = new_tensor(ev, out_dt, nd, shape, &t);
    if (st != DL_OK)
        return st;
    for (size_t i = 0; i < t->numel; i++) {
        size_t ia = broadcast_at(a, nd, shape, i), ib = broadcast_at(b, nd, shape, i);
        if (is_compare(op)) {
            bool r = fl ? compare_d(op, elem_as(a, ia, dt), elem_as(b, ib, dt))
                        : compare_i(op, narrow(dt, elem_i(a, ia)), narrow(dt, elem_i(b, ib)));
            dl_dtype_set_i64(DL_BOOL, t->data, i, r);
        } else if (fl && op == OP_FLOORDIV) {
            dl_dtype_set(dt, t->data, i, floordiv_d(dt, elem_as(a, ia, dt), elem_as(b, ib, dt)));
        } else if (fl && op == OP_POW && b->kind != LAB_V_TENSOR) {
            dl_dtype_set(dt, t->data, i, pow_scalar_d(dt, elem_as(a, ia, dt), scalar_value(b)));
        } else if (fl) {
            dl_dtype_set(dt, t->data, i, arith_d(op, elem_as(a, ia, dt), elem_as(b, ib, dt)));
        } else if (dt == DL_BOOL) {
            int64_t x = elem_i(a, ia) != 0, y = elem_i(b, ib) != 0;
            dl_dtype_set_i64(dt, t->data, i,
                             is_bitwise(op) ? arith_i(op, x, y)
                             : op == OP_MUL || op == OP_MINIMUM || op == OP_CLAMP_MAX ? (x && y)
                                                                                      : (x || y));
        } else if (is_shift(op)) {
            dl_dtype_set_i64(dt, t->data, i,
                             shift_i(op, narrow(dt, elem_i(a, ia)), narrow(dt, elem_i(b, ib)), dt));
        } else {
            dl_dtype_set_i64(dt, t->data, i,
                             arith_i(op, narrow(dt, elem_i(a, ia)), narrow(dt, elem_i(b, ib))));
        }
    }
    lab__eval_set_tensor(out, t);
    return DL_OK;
}

static dl_status_t arith(lab_eval_t *ev, const json_t *node, const char *text, const lab_value_t *a,
                         const lab_value_t *b, lab_value_t *out)
{
    return arith_dt(ev, node, text, a, b, NULL, out);
}

/* h[k]: a host view of each of three values that is a tensor (on a GPU, a
 * host copy, whose device *dev_p then names), the others as they are. */
static dl_status_t host_views(lab_eval_t *ev, const lab_value_t *const *args, lab_value_t *h,
                              dl_device_t *dev_p)
{
    dl_status_t st = DL_OK;
    for (int k = 0; k < 3 && st == DL_OK; k++) {
        if (args[k]->kind == LAB_V_TENSOR) {
            if (on_gpu(args[k]))
                *dev_p = args[k]->t->device;
            st = lab__eval_host_view(ev, args[k], &h[k]);
        } else {
            h[k] = *args[k];
        }
    }
    return st;
}

/* Undoes host_views: the views of the tensors go, the others were not
 * copied. */
static void clear_views(const lab_value_t *const *args, lab_value_t *h)
{
    for (int k = 0; k < 3; k++)
        if (args[k]->kind == LAB_V_TENSOR)
            lab_value_clear(&h[k]);
}

dl_status_t lab__eval_clamp(lab_eval_t *ev, const json_t *node, const lab_value_t *x,
                            const lab_value_t *lo, const lab_value_t *hi, lab_value_t *out)
{
    const lab_value_t *args[] = {x, lo, hi};
    bool has_lo = lo->kind != LAB_V_NONE, has_hi = hi->kind != LAB_V_NONE;
    /* the three's dtype, before either bound applies: an int8 tensor
     * clamped to (-1000, 1.5) is float32, and -1000 fits that */
    dl_dtype_t dt = has_lo ? result_dtype(x, lo) : x->t->dtype;
    if (has_hi) {
        bool dims = x->t->ndim > 0 || (lo->kind == LAB_V_TENSOR && lo->t->ndim > 0);
        dl_tensor_t sofar = {.dtype = dt, .ndim = dims ? 1 : 0};
        lab_value_t sv = {.kind = LAB_V_TENSOR, .t = &sofar};
        dt = result_dtype(&sv, hi);
    }
    /* Devices mix as in arithmetic; on a GPU, host copies compute and the
     * result goes back. */
    dl_status_t st = DL_OK;
    for (int k = 1; k < 3 && st == DL_OK; k++)
        if (args[k]->kind == LAB_V_TENSOR)
            st = devices_mix(ev, node, x->t, args[k]->t, args[k]->t);
    if (st != DL_OK)
        return st;
    dl_device_t dev = x->t->device;
    lab_value_t h[3] = {{0}};
    st = host_views(ev, args, h, &dev);
    lab_value_t mid = {0};
    if (st == DL_OK && has_lo)
        st = arith_dt(ev, node, lo->kind == LAB_V_TENSOR ? "maximum" : "clamp_min", &h[0], &h[1],
                      &dt, has_hi ? &mid : out);
    if (st == DL_OK && has_hi)
        st = arith_dt(ev, node, hi->kind == LAB_V_TENSOR ? "minimum" : "clamp_max",
                      has_lo ? &mid : &h[0], &h[2], &dt, out);
    lab_value_clear(&mid);
    /* Two number bounds, one of them NaN: torch fills the result with NaN
     * (where one alone is ignored). */
    bool nan_bound =
        (lo->kind == LAB_V_FLOAT && isnan(lo->f)) || (hi->kind == LAB_V_FLOAT && isnan(hi->f));
    if (st == DL_OK && has_lo && has_hi && nan_bound && lo->kind != LAB_V_TENSOR &&
        hi->kind != LAB_V_TENSOR)
        for (size_t i = 0; i < out->t->numel; i++)
            dl_dtype_set(out->t->dtype, out->t->data, i, NAN);
    clear_views(args, h);
    return st == DL_OK ? lab__eval_to_device(ev, out, dev) : st;
}

/* ~v, as Python and torch invert: an int's bits (~5 is -6, ~True is -2),
 * an integer tensor's in its dtype, a bool tensor's logical not; a float
 * has none. */
static dl_status_t invert(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                          lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    if (v->kind == LAB_V_INT || v->kind == LAB_V_BOOL) {
        out->kind = LAB_V_INT;
        out->i = ~v->i;
        return DL_OK;
    }
    if (v->kind != LAB_V_TENSOR)
        return fail(ev, node, "bad operand type for unary ~: '%s'", lab__eval_type_name(v));
    if (dl_dtype_is_float(v->t->dtype))
        return fail(ev, node,
                    "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    lab_value_t h;
    dl_status_t st = lab__eval_host_view(ev, v, &h);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *src = h.t;
    dl_tensor_t *t = NULL;
    if ((st = new_tensor(ev, src->dtype, src->ndim, src->shape, &t)) == DL_OK) {
        for (size_t i = 0; i < t->numel; i++) {
            int64_t x = dl_dtype_get_i64(src->dtype, src->data, i);
            dl_dtype_set_i64(src->dtype, t->data, i, src->dtype == DL_BOOL ? !x : ~x);
        }
        lab__eval_set_tensor(out, t);
    }
    lab_value_clear(&h);
    return st == DL_OK && on_gpu(v) ? lab__eval_to_device(ev, out, v->t->device) : st;
}

/* +x: Python's (a bool becomes an int) and torch's (refused on bool
 * tensors); x, a value of its own, moves into *out. */
static dl_status_t positive(lab_eval_t *ev, const json_t *node, lab_value_t *x, lab_value_t *out)
{
    if (x->kind == LAB_V_TENSOR && x->t->dtype == DL_BOOL)
        return fail(ev, node, "The `+` operator, on a bool tensor is not supported.");
    if (x->kind != LAB_V_INT && x->kind != LAB_V_BOOL && x->kind != LAB_V_FLOAT &&
        x->kind != LAB_V_TENSOR)
        return fail(ev, node, "bad operand type for unary +: '%s'", lab__eval_type_name(x));
    *out = *x;
    if (out->kind == LAB_V_BOOL)
        out->kind = LAB_V_INT;
    memset(x, 0, sizeof(*x));
    return DL_OK;
}

/* -v, as Python and torch negate: a float keeps its sign bit (-0.0 is not
 * 0 - 0.0), -True is the int -1, integer tensors keep their dtype and wrap
 * (uint8 too), and bool tensors have no negation. */
dl_status_t lab__eval_negate(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                             lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    switch (v->kind) {
    case LAB_V_INT:
    case LAB_V_BOOL:
        /* Python's ints grow; ours are 64-bit, and -INT64_MIN is an
         * overflow as 2 ** 63 is. */
        if (v->i == INT64_MIN)
            return fail(ev, node, "integer overflow: -(%lld) does not fit in 64 bits",
                        (long long)v->i);
        out->kind = LAB_V_INT;
        out->i = -v->i;
        return DL_OK;
    case LAB_V_FLOAT:
        out->kind = LAB_V_FLOAT;
        out->f = -v->f;
        return DL_OK;
    case LAB_V_TENSOR:
        break;
    default:
        return fail(ev, node, "bad operand type for unary -: '%s'", lab__eval_type_name(v));
    }
    if (v->t->dtype == DL_BOOL)
        return fail(ev, node,
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                    "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    lab_value_t h;
    dl_status_t st = lab__eval_host_view(ev, v, &h);
    if (st != DL_OK)
        return st;
    const dl_tensor_t *src = h.t;
    dl_tensor_t *t = NULL;
    if ((st = new_tensor(ev, src->dtype, src->ndim, src->shape, &t)) != DL_OK) {
        lab_value_clear(&h);
        return st;
    }
    bool fl = dl_dtype_is_float(src->dtype);
    for (size_t i = 0; i < t->numel; i++) {
        if (fl)
            dl_dtype_set(t->dtype, t->data, i, -dl_dtype_get(src->dtype, src->data, i));
        else
            dl_dtype_set_i64(t->dtype, t->data, i,
                             (int64_t)(0 - (uint64_t)dl_dtype_get_i64(src->dtype, src->data, i)));
    }
    lab_value_clear(&h);
    lab__eval_set_tensor(out, t);
    return on_gpu(v) ? lab__eval_to_device(ev, out, v->t->device) : DL_OK;
}

/* ---- literals and constructors ---- */

/* The elements of a tensor literal, evaluated in order. Like Python, which
 * evaluates a list before torch.tensor sees it, an element may be any
 * expression that gives a number: -1, 0 - 1, 2*rank, 1/3. */
typedef struct {
    lab_value_t *v; /* LAB_V_INT, LAB_V_FLOAT or LAB_V_BOOL */
    size_t n, cap;
} leaves_t;

/* Room for one more leaf. */
static dl_status_t leaf_room(lab_eval_t *ev, leaves_t *lv)
{
    if (lv->n < lv->cap)
        return DL_OK;
    size_t cap = lv->cap ? lv->cap * 2 : 16;
    lab_value_t *v = realloc(lv->v, cap * sizeof(*v));
    if (v == NULL) {
        snprintf(ev->error, sizeof(ev->error), "out of memory");
        return DL_ERR_NOMEM;
    }
    lv->v = v;
    lv->cap = cap;
    return DL_OK;
}

static dl_status_t add_leaf(lab_eval_t *ev, const json_t *node, leaves_t *lv, int *kind)
{
    if (leaf_room(ev, lv) != DL_OK)
        return DL_ERR_NOMEM;
    lab_value_t *x = &lv->v[lv->n];
    dl_status_t st = lab_eval_expr(ev, node, x);
    if (st != DL_OK)
        return st;
    if (x->kind != LAB_V_INT && x->kind != LAB_V_FLOAT && x->kind != LAB_V_BOOL) {
        char word[48];
        snprintf(word, sizeof(word), "%s", x->name);
        lab_vkind_t k = x->kind;
        lab_value_clear(x);
        if (k == LAB_V_NAME)
            return fail(ev, node, "'%s' is not defined", word);
        return fail(ev, node, "a tensor literal holds numbers, not %s", lab_vkind_a(k));
    }
    lv->n++;
    int c = scalar_category(x);
    *kind = *kind > c ? *kind : c;
    return DL_OK;
}

/* Shape and kind of a nested list literal (all leaves at one depth), and its
 * leaves' values. */
static dl_status_t list_shape(lab_eval_t *ev, const json_t *node, int depth, int64_t *shape,
                              int *ndim, int *kind, leaves_t *lv)
{
    json_t *items = json_object_get(node, "list");
    if (items == NULL) {
        if (depth != *ndim && *ndim >= 0)
            return fail(ev, node, "ragged list: every row needs the same depth");
        *ndim = depth;
        return add_leaf(ev, node, lv, kind);
    }
    /* A list where a number was ([3, []]): as ragged as the reverse. */
    if (*ndim >= 0 && depth >= *ndim)
        return fail(ev, node, "ragged list: every row needs the same depth");
    if (depth >= DL_MAX_DIMS)
        return fail(ev, node, "more than %d dimensions", DL_MAX_DIMS);
    int64_t n = (int64_t)json_array_size(items);
    if (shape[depth] >= 0 && shape[depth] != n)
        return fail(ev, node, "ragged list: rows of %lld and %lld elements",
                    (long long)shape[depth], (long long)n);
    shape[depth] = n;
    if (n == 0) {
        if (*ndim < 0)
            *ndim = depth + 1;
        return DL_OK;
    }
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        dl_status_t st = list_shape(ev, it, depth + 1, shape, ndim, kind, lv);
        if (st != DL_OK)
            return st;
    }
    return DL_OK;
}

/* The tensor of a nested list's leaves (shape and kind as list_shape
 * found them): int64, float32 or bool as torch.tensor infers, or *want.
 * Frees the leaves. */
static dl_status_t leaves_tensor(lab_eval_t *ev, const json_t *node, int64_t *shape, int ndim,
                                 int kind, leaves_t *lv, const dl_dtype_t *want, lab_value_t *out)
{
    dl_status_t st = DL_OK;
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0)
            shape[d] = 0;
    dl_dtype_t dt = want != NULL ? *want : kind == 2 ? DL_FLOAT32 : kind == 0 ? DL_BOOL : DL_INT64;
    if (kind < 0 && want == NULL)
        dt = DL_FLOAT32; /* torch.tensor([]) is float32 */
    for (size_t i = 0; i < lv->n; i++) {
        const char *tname;
        if (!number_fits(dt, &lv->v[i], true, &tname)) {
            st = fail_overflow(ev, node, tname);
            goto out_free_leaves;
        }
    }
    dl_tensor_t *t = NULL;
    if ((st = new_tensor(ev, dt, ndim < 0 ? 1 : ndim, shape, &t)) != DL_OK)
        goto out_free_leaves;
    for (size_t i = 0; i < lv->n && i < t->numel; i++)
        set_number(t, i, &lv->v[i]);
    lab__eval_set_tensor(out, t);
out_free_leaves:
    /* Leaves are scalars: there is nothing in them to clear. */
    free(lv->v);
    return st;
}

/* A shape for list_shape and value_shape to fill: -1, no row seen yet at
 * any depth. */
static void shape_unknown(int64_t shape[DL_MAX_DIMS])
{
    for (int d = 0; d < DL_MAX_DIMS; d++)
        shape[d] = -1;
}

/* [1, 2, 3] as a tensor: int64, float32 or bool as torch.tensor infers. */
static dl_status_t literal_tensor(lab_eval_t *ev, const json_t *node, const dl_dtype_t *want,
                                  lab_value_t *out)
{
    int64_t shape[DL_MAX_DIMS];
    shape_unknown(shape);
    int ndim = -1, kind = -1;
    leaves_t lv = {0};
    dl_status_t st = list_shape(ev, node, 0, shape, &ndim, &kind, &lv);
    if (st != DL_OK) {
        free(lv.v);
        return st;
    }
    return leaves_tensor(ev, node, shape, ndim, kind, &lv, want, out);
}

/* Shape, kind and leaves of a list value (torch.tensor(splits)), as
 * list_shape finds them of a literal. */
static dl_status_t value_shape(lab_eval_t *ev, const json_t *node, const lab_value_t *v, int depth,
                               int64_t *shape, int *ndim, int *kind, leaves_t *lv)
{
    if (v->kind != LAB_V_LIST) {
        if (depth != *ndim && *ndim >= 0)
            return fail(ev, node, "ragged list: every row needs the same depth");
        *ndim = depth;
        if (v->kind != LAB_V_INT && v->kind != LAB_V_FLOAT && v->kind != LAB_V_BOOL)
            return fail(ev, node, "a tensor literal holds numbers, not %s", lab_vkind_a(v->kind));
        if (leaf_room(ev, lv) != DL_OK)
            return DL_ERR_NOMEM;
        lv->v[lv->n++] = *v; /* a number: nothing in it is owned */
        int c = scalar_category(v);
        *kind = *kind > c ? *kind : c;
        return DL_OK;
    }
    if (*ndim >= 0 && depth >= *ndim)
        return fail(ev, node, "ragged list: every row needs the same depth");
    if (depth >= DL_MAX_DIMS)
        return fail(ev, node, "more than %d dimensions", DL_MAX_DIMS);
    int64_t n = (int64_t)v->n;
    if (shape[depth] >= 0 && shape[depth] != n)
        return fail(ev, node, "ragged list: rows of %lld and %lld elements",
                    (long long)shape[depth], (long long)n);
    shape[depth] = n;
    if (n == 0 && *ndim < 0)
        *ndim = depth + 1;
    for (size_t i = 0; i < v->n; i++) {
        dl_status_t st = value_shape(ev, node, &v->items[i], depth + 1, shape, ndim, kind, lv);
        if (st != DL_OK)
            return st;
    }
    return DL_OK;
}

/* torch.tensor(3.5) or torch.tensor(rank): a tensor of no dimensions
 * holding the number node gives, of dtype *want or the number's; or
 * torch.tensor(l) of a list l, as of the literal it holds. */
static dl_status_t number_tensor(lab_eval_t *ev, const json_t *node, const dl_dtype_t *want,
                                 lab_value_t *out)
{
    lab_value_t x;
    dl_status_t st = lab_eval_expr(ev, node, &x);
    if (st != DL_OK)
        return st;
    dl_dtype_t dt = want != NULL            ? *want
                    : x.kind == LAB_V_FLOAT ? DL_FLOAT32
                    : x.kind == LAB_V_BOOL  ? DL_BOOL
                                            : DL_INT64;
    const char *tname;
    dl_tensor_t *t = NULL;
    if (x.kind == LAB_V_LIST && strcmp(x.name, "max") != 0 && strcmp(x.name, "min") != 0) {
        /* A list (or tuple, or t.shape) held in a variable, as a literal. */
        int64_t shape[DL_MAX_DIMS];
        shape_unknown(shape);
        int ndim = -1, kind = -1;
        leaves_t lv = {0};
        if ((st = value_shape(ev, node, &x, 0, shape, &ndim, &kind, &lv)) == DL_OK)
            st = leaves_tensor(ev, node, shape, ndim, kind, &lv, want, out);
        else
            free(lv.v);
    } else if (x.kind == LAB_V_NAME)
        st = lab__eval_fail_undefined(ev, node, &x);
    else if (x.kind != LAB_V_INT && x.kind != LAB_V_FLOAT && x.kind != LAB_V_BOOL)
        st = fail(ev, node, "tensor() takes a number or a list such as [1, 2, 3], not %s",
                  lab_vkind_a(x.kind));
    else if (!number_fits(dt, &x, true, &tname))
        st = fail_overflow(ev, node, tname);
    else if ((st = new_tensor(ev, dt, 0, (int64_t[1]){0}, &t)) == DL_OK) {
        set_number(t, 0, &x);
        lab__eval_set_tensor(out, t);
    }
    lab_value_clear(&x);
    return st;
}

/* Positional and keyword arguments of a call, evaluated: room for a
 * method's tensor and a size for each dimension a tensor may have
 * (x.reshape(2, 2, 2, 2, 2, 2, 2, 2)), and one more. */
#define CALL_POS_MAX (DL_MAX_DIMS + 2)

typedef struct {
    lab_value_t pos[CALL_POS_MAX];
    int npos;
    const json_t *kw; /* unevaluated: each function reads its own */
} call_args_t;

static void args_clear(call_args_t *a)
{
    for (int i = 0; i < a->npos; i++)
        lab_value_clear(&a->pos[i]);
    a->npos = 0;
}

dl_status_t lab__eval_kw_dtype(lab_eval_t *ev, const json_t *kw, dl_dtype_t *dt_p, bool *given)
{
    json_t *node = json_object_get(kw, "dtype");
    *given = false;
    if (node == NULL)
        return DL_OK;
    const char *name = lab_json_str(node, "name", NULL);
    if (name == NULL || lab__eval_var(ev, name) != NULL) {
        /* A value: a variable that holds a dtype, t.dtype. */
        lab_value_t v;
        dl_status_t st = lab_eval_expr(ev, node, &v);
        if (st != DL_OK)
            return st;
        *given = lab__eval_dtype_value(&v, dt_p);
        lab_value_clear(&v);
        return *given ? DL_OK
                      : fail(ev, node, "dtype= takes a dtype such as torch.float32 or int64");
    }
    bool of_torch = strncmp(name, "torch.", 6) == 0;
    if (of_torch)
        name += 6;
    *given = true;
    /* Python's own types, as torch reads them: dtype=float is float64 and
     * dtype=int int64, where torch.float and torch.int are 32-bit. */
    if (!of_torch && strcmp(name, "float") == 0) {
        *dt_p = DL_FLOAT64;
        return DL_OK;
    }
    if (!of_torch && strcmp(name, "int") == 0) {
        *dt_p = DL_INT64;
        return DL_OK;
    }
    *given = false;
    if (dl_dtype_parse(name, dt_p) != DL_OK)
        return fail(ev, node, "unknown dtype '%s'; dtypes: %s", name, dl_dtype_all_names());
    *given = true;
    return DL_OK;
}

/* Appends the dimensions that v gives, an int or a list (or tuple) of ints,
 * to shape. */
static dl_status_t add_dims(lab_eval_t *ev, const json_t *node, const lab_value_t *v, int *ndim,
                            int64_t *shape)
{
    const lab_value_t *items = v->kind == LAB_V_LIST ? v->items : v;
    size_t n = v->kind == LAB_V_LIST ? v->n : 1;
    for (size_t k = 0; k < n; k++) {
        if (items[k].kind != LAB_V_INT || items[k].i < 0)
            return fail(ev, node,
                        "a size must be a non-negative integer, or a list or tuple of them");
        if (*ndim == DL_MAX_DIMS)
            return fail(ev, node, "too many dimensions (at most %d)", DL_MAX_DIMS);
        shape[(*ndim)++] = items[k].i;
    }
    return DL_OK;
}

static dl_status_t shape_args(lab_eval_t *ev, const json_t *node, const call_args_t *a, int first,
                              int last, int *ndim, int64_t *shape)
{
    *ndim = 0;
    for (int i = first; i < last; i++) {
        dl_status_t st = add_dims(ev, node, &a->pos[i], ndim, shape);
        if (st != DL_OK)
            return st;
    }
    int64_t total = 1;
    for (int d = 0; d < *ndim; d++) {
        if (shape[d] < 0 || shape[d] > (1 << 28) || (total *= shape[d]) > (1 << 28))
            return fail(ev, node, "too many elements (at most 2^28)");
    }
    return DL_OK;
}

/* ---- random numbers ---- */

dl_rng_t *lab__eval_rng(lab_eval_t *ev)
{
    if (!ev->rng_seeded) {
        dl_rng_seed(&ev->rng, (uint64_t)ev->r->rank);
        ev->rng_seeded = true;
    }
    return &ev->rng;
}

dl_status_t lab__eval_seed(lab_eval_t *ev, const json_t *node, const char *what, uint64_t *seed_p)
{
    lab_value_t v;
    dl_status_t st = lab_eval_expr(ev, node, &v);
    if (st != DL_OK)
        return st;
    lab_vkind_t kind = v.kind;
    int64_t i = v.i;
    char word[sizeof(v.name)];
    snprintf(word, sizeof(word), "%s", v.name);
    lab_value_clear(&v);
    switch (kind) {
    case LAB_V_INT:
    case LAB_V_BOOL:
        *seed_p = (uint64_t)i; /* torch takes a negative seed modulo 2^64 */
        return DL_OK;
    case LAB_V_NAME:
        return fail(ev, node, "'%s' is not defined", word);
    default:
        return fail(ev, node, "%s takes an integer, not %s", what, lab_vkind_a(kind));
    }
}

/* The positional and keyword arguments of randint, bound as Python binds
 * torch's two signatures: randint(high, size) and randint(low, high, size). */
static dl_status_t randint_args(lab_eval_t *ev, const json_t *node, call_args_t *a, int64_t *low_p,
                                int64_t *high_p, int *ndim, int64_t *shape)
{
    static const char *const names[] = {"low", "high", "size"};
    const json_t *kw_nodes[3];
    int nkw = 0;
    for (int k = 0; k < 3; k++) {
        kw_nodes[k] = json_object_get(a->kw, names[k]);
        nkw += kw_nodes[k] != NULL;
    }
    int total = a->npos + nkw;
    if (total != 2 && total != 3)
        return fail(ev, node,
                    "randint takes (high, size) or (low, high, size), e.g. randint(0, 10, (3,))");
    /* Positional arguments fill the signature's slots in order. */
    int first = total == 2 ? 1 : 0;
    lab_value_t kw_vals[3] = {{0}};
    const lab_value_t *slot[3] = {NULL, NULL, NULL};
    const json_t *slot_node[3] = {node, node, node};
    dl_status_t st = DL_OK;
    for (int k = 0; k < a->npos; k++)
        slot[first + k] = &a->pos[k];
    for (int k = 0; k < 3 && st == DL_OK; k++) {
        if (kw_nodes[k] == NULL)
            continue;
        if (k < first) {
            st = fail(ev, kw_nodes[k], "randint: low= needs high= and size= too");
        } else if (slot[k] != NULL) {
            st = fail(ev, kw_nodes[k], "randint got two values for %s", names[k]);
        } else if ((st = lab_eval_expr(ev, kw_nodes[k], &kw_vals[k])) == DL_OK) {
            slot[k] = &kw_vals[k];
            slot_node[k] = kw_nodes[k];
        }
    }
    for (int k = first; k < 2 && st == DL_OK; k++) {
        if (slot[k]->kind != LAB_V_INT)
            st = fail(ev, slot_node[k], "randint: %s must be an integer, not %s", names[k],
                      lab_vkind_a(slot[k]->kind));
    }
    if (st == DL_OK && slot[2]->kind != LAB_V_LIST)
        st = fail(ev, slot_node[2],
                  "randint: size must be a tuple or list of integers, such as (3,) or (2, 3)");
    if (st == DL_OK) {
        *low_p = first == 0 ? slot[0]->i : 0;
        *high_p = slot[1]->i;
        *ndim = 0;
        st = add_dims(ev, slot_node[2], slot[2], ndim, shape);
    }
    for (int k = 0; k < 3; k++)
        lab_value_clear(&kw_vals[k]);
    return st;
}

/* randperm's n, by position or as n=: a tensor of n elements. */
static dl_status_t randperm_args(lab_eval_t *ev, const json_t *node, call_args_t *a, int *ndim,
                                 int64_t *shape)
{
    const json_t *n_node = json_object_get(a->kw, "n");
    if (a->npos + (n_node != NULL) != 1)
        return fail(ev, node, "randperm takes one argument, n, e.g. randperm(5)");
    lab_value_t kw = {0};
    const lab_value_t *n = a->npos == 1 ? &a->pos[0] : &kw;
    dl_status_t st = n_node != NULL ? lab_eval_expr(ev, n_node, &kw) : DL_OK;
    if (st == DL_OK && (n->kind != LAB_V_INT || n->i < 0))
        st = fail(ev, n_node != NULL ? n_node : node,
                  "randperm: n must be a non-negative integer, not %s",
                  n->kind == LAB_V_INT ? "a negative one" : lab_vkind_a(n->kind));
    if (st == DL_OK) {
        *ndim = 1;
        shape[0] = n->i;
    }
    lab_value_clear(&kw);
    return st;
}

/* rand, randn, randint and randperm: torch's values from the rank's generator, or
 * with seed=S from a generator of their own seeded with S (torch's
 * generator=torch.Generator().manual_seed(S)), which leaves the rank's
 * stream where it was. */
static dl_status_t call_random(lab_eval_t *ev, const json_t *node, const char *fn, call_args_t *a,
                               dl_dtype_t dt, bool dt_given, lab_value_t *out)
{
    bool is_int = strcmp(fn, "randint") == 0, is_normal = strcmp(fn, "randn") == 0;
    bool is_perm = strcmp(fn, "randperm") == 0;
    int64_t shape[DL_MAX_DIMS], low = 0, high = 0;
    int ndim = 0;
    dl_status_t st;
    if (is_int) {
        st = randint_args(ev, node, a, &low, &high, &ndim, shape);
    } else if (is_perm) {
        st = randperm_args(ev, node, a, &ndim, shape);
    } else {
        const json_t *size_node = json_object_get(a->kw, "size");
        if (size_node != NULL && a->npos > 0)
            return fail(ev, size_node, "%s: give the size once, as arguments or as size=", fn);
        if (size_node != NULL) {
            lab_value_t v;
            if ((st = lab_eval_expr(ev, size_node, &v)) != DL_OK)
                return st;
            st = add_dims(ev, size_node, &v, &ndim, shape);
            lab_value_clear(&v);
        } else {
            st = shape_args(ev, node, a, 0, a->npos, &ndim, shape);
        }
    }
    if (st != DL_OK)
        return st;
    int64_t total = 1;
    for (int d = 0; d < ndim; d++)
        if (shape[d] > (1 << 28) || (total *= shape[d]) > (1 << 28))
            return fail(ev, node, "too many elements (at most 2^28)");
    if (!dt_given)
        dt = is_int || is_perm ? DL_INT64 : DL_FLOAT32;
    if (is_normal && dt != DL_FLOAT32 && dt != DL_FLOAT64)
        return fail(ev, json_object_get(a->kw, "dtype"), "randn makes float32 or float64, not %s",
                    dl_dtype_name(dt));
    if (!is_int && !is_perm && !is_normal && !dl_dtype_is_float(dt))
        return fail(ev, json_object_get(a->kw, "dtype"),
                    "rand makes float16, bfloat16, float32 or float64, not %s", dl_dtype_name(dt));

    dl_rng_t own, *g = lab__eval_rng(ev);
    const json_t *seed_node = json_object_get(a->kw, "seed");
    if (seed_node != NULL) {
        uint64_t seed;
        if ((st = lab__eval_seed(ev, seed_node, "seed=", &seed)) != DL_OK)
            return st;
        memset(&own, 0, sizeof(own));
        dl_rng_seed(&own, seed);
        g = &own;
    }
    dl_tensor_t *t = NULL;
    if ((st = new_tensor(ev, dt, ndim, shape, &t)) != DL_OK)
        return st;
    char why[160] = "";
    st = is_int      ? dl_rng_randint(g, t, low, high, why, sizeof(why))
         : is_perm   ? dl_rng_randperm(g, t, why, sizeof(why))
         : is_normal ? dl_rng_normal(g, t)
                     : dl_rng_uniform(g, t);
    if (st != DL_OK) {
        dl_tensor_free(t);
        return fail(ev, node, "%s: %s", fn, why);
    }
    lab__eval_set_tensor(out, t);
    return DL_OK;
}

/* get_rank(group=None) and get_world_size(group=None): the world's, or a
 * group's, new_group's. None written so is the world, as torch's default;
 * a variable holding None, what new_group gives a rank outside the group,
 * gives -1 there, as torch's non-member group does (group= of a
 * collective skips such a rank the same way). */
static dl_status_t rank_in_group(lab_eval_t *ev, const json_t *node, const char *fn, call_args_t *a,
                                 lab_value_t *out)
{
    const json_t *g_node = json_object_get(a->kw, "group");
    const json_t *g_expr =
        g_node != NULL ? g_node : json_array_get(json_object_get(node, "args"), 0);
    const char *g_word = lab_json_str(g_expr, "name", NULL);
    bool literal_none =
        g_word != NULL && strcmp(g_word, "None") == 0 && lab__eval_var(ev, "None") == NULL;
    if (a->npos > 1 || (a->npos == 1 && g_node != NULL))
        return fail(ev, node, "%s() takes one argument, group", fn);
    const lab_value_t *g = a->npos == 1 ? &a->pos[0] : NULL;
    lab_value_t kw_g = {0};
    if (g_node != NULL) {
        dl_status_t st = lab_eval_expr(ev, g_node, &kw_g);
        if (st != DL_OK)
            return st;
        g = &kw_g;
    }
    bool rank = fn[4] == 'r';
    out->kind = LAB_V_INT;
    out->i = lab__eval_builtin_value(ev, fn + 4); /* get_rank: rank */
    dl_status_t st = DL_OK;
    if (g != NULL && lab__eval_undefined(g))
        st = lab__eval_fail_undefined(ev, node, g);
    else if (g != NULL && g->kind == LAB_V_GROUP && g->group != NULL)
        out->i = rank ? dl_comm_rank(g->group) : dl_comm_size(g->group);
    else if (g != NULL && g->kind == LAB_V_NONE && !literal_none)
        out->i = -1; /* not a member of the group new_group made */
    else if (g != NULL && g->kind != LAB_V_NONE)
        st = fail(ev, node, "%s(): group= takes a group from new_group, not %s", fn,
                  lab_vkind_a(g->kind));
    lab_value_clear(&kw_g);
    return st;
}

/* The methods that are not tensor maths: h.wait() on a work handle, and
 * .values and .indices of the pair t.max(dim=D) gives. a->pos[0] is the
 * object. */
static dl_status_t call_method(lab_eval_t *ev, const json_t *node, const char *fn, call_args_t *a,
                               lab_value_t *out)
{
    lab_value_t *obj = &a->pos[0];
    if (lab__eval_undefined(obj))
        return lab__eval_fail_undefined(ev, node, obj);
    if (strcmp(fn, "wait") == 0) {
        if (a->npos != 1 || json_object_size(a->kw) != 0)
            return fail(ev, node, "wait() takes no arguments");
        if (obj->kind != LAB_V_WORK)
            return fail(ev, node,
                        "'%s' object has no attribute 'wait' (wait() is a method of the handle "
                        "that isend, irecv and async_op=True return)",
                        lab__eval_type_name(obj));
        dl_status_t st = lab__eval_wait(
            ev, node, obj, lab_json_str(json_object_get(node, "self"), "name", "work"));
        if (st == DL_OK) {
            out->kind = LAB_V_BOOL; /* torch's Work.wait() returns True */
            out->i = 1;
        }
        return st;
    }
    if (strcmp(fn, "is_completed") == 0) {
        if (a->npos != 1 || json_object_size(a->kw) != 0)
            return fail(ev, node, "is_completed() takes no arguments");
        if (obj->kind != LAB_V_WORK)
            return fail(ev, node,
                        "'%s' object has no attribute 'is_completed' (is_completed() is a "
                        "method of the handle that isend, irecv and async_op=True return)",
                        lab__eval_type_name(obj));
        /* torch's Work.is_completed(): whether it has finished, without
         * waiting (a finished one frees what it held, as a wait does) */
        out->kind = LAB_V_BOOL;
        out->i = obj->work == NULL || dl_work_test(obj->work);
        if (obj->work != NULL && out->i)
            lab_pins_release(obj->work);
        return DL_OK;
    }
    bool attr = json_object_get(node, "attr") != NULL;
    if (obj->kind == LAB_V_DICT && strcmp(fn, "values") == 0)
        return attr ? fail(ev, node, "values is a method of a dict: call it, d.values()")
                    : lab__eval_dict_method(ev, node, fn, obj, a->pos + 1, a->npos - 1, out);
    bool pair = obj->kind == LAB_V_LIST && lab__eval_is_pair(obj);
    if (pair && !attr) /* t.max(dim=0).values() */
        return fail(ev, node, "'Tensor' object is not callable (%s is an attribute: write x.%s)",
                    fn, fn);
    if (!pair)
        return fail(ev, node,
                    "'%s' is an attribute of the pair that max(dim=D), min(dim=D), sort() and "
                    "topk() give, not "
                    "of %s",
                    fn, lab_vkind_a(obj->kind));
    size_t k = strcmp(fn, "values") == 0 ? 0 : 1;
    *out = obj->items[k];
    memset(&obj->items[k], 0, sizeof(obj->items[k]));
    return DL_OK;
}

int64_t lab__eval_seq_len(const lab_value_t *v)
{
    if (v->kind == LAB_V_LIST || v->kind == LAB_V_DICT) /* a dict: its keys */
        return (int64_t)v->n;
    if (v->kind == LAB_V_STR) /* its characters */
        return lab__eval_str_len(v->s, strlen(v->s));
    return v->kind == LAB_V_TENSOR && v->t->ndim > 0 ? v->t->shape[0] : -1;
}

dl_status_t lab__eval_seq_item(lab_eval_t *ev, const json_t *node, const lab_value_t *v, int64_t i,
                               lab_value_t *out)
{
    if (v->kind == LAB_V_LIST)
        return lab_value_copy(&v->items[i], alloc_of(ev), out);
    if (v->kind == LAB_V_DICT)
        return lab__eval_dict_key(ev, v, i, out);
    if (v->kind == LAB_V_STR)
        return lab__eval_str_index(ev, node, v, i, 1, 1, out);
    return lab__eval_row(ev, node, v, i, out);
}

/* enumerate(x, start=0) and zip(a, b, ...): a list of tuples, as
 * list(enumerate(x)) and list(zip(a, b)) give them, which a for unpacks
 * (for i, t in enumerate(tensor_list):). zip stops at the shortest. */
/* zeros_like(x), ones_like(x), empty_like(x) and full_like(x, v): a tensor
 * of x's shape, dtype and device, unless dtype= or device= say otherwise. */
static bool is_like(const char *fn)
{
    return strcmp(fn, "zeros_like") == 0 || strcmp(fn, "ones_like") == 0 ||
           strcmp(fn, "empty_like") == 0 || strcmp(fn, "full_like") == 0;
}

static dl_status_t call_like(lab_eval_t *ev, const json_t *node, const char *fn,
                             const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    bool full = strcmp(fn, "full_like") == 0;
    if (npos != (full ? 2 : 1) || pos[0].kind != LAB_V_TENSOR ||
        (full && pos[1].kind != LAB_V_INT && pos[1].kind != LAB_V_FLOAT &&
         pos[1].kind != LAB_V_BOOL))
        return fail(ev, node,
                    full ? "full_like(input, fill_value) takes a tensor and a number"
                         : "%s(input) takes a tensor",
                    fn);
    const dl_tensor_t *x = pos[0].t;
    dl_dtype_t dt = x->dtype;
    bool dt_given;
    dl_device_t dev = x->device;
    dl_status_t st = lab__eval_kw_dtype(ev, kw, &dt, &dt_given);
    if (st == DL_OK && json_object_get(kw, "device") != NULL)
        st = lab__eval_kw_device(ev, kw, &dev);
    if (st != DL_OK)
        return st;
    const char *tname;
    if (full && !number_fits(dt, &pos[1], false, &tname))
        return fail_overflow(ev, node, tname);
    dl_tensor_t *t = NULL;
    if ((st = new_tensor(ev, dt, x->ndim, x->shape, &t)) != DL_OK)
        return st;
    if (full || strcmp(fn, "ones_like") == 0)
        dl_tensor_fill(t, full ? scalar_value(&pos[1]) : 1);
    lab__eval_set_tensor(out, t);
    return lab__eval_to_device(ev, out, dev);
}

/* rand_like(x) and randn_like(x): rand and randn of x's shape, dtype and
 * device (unless dtype= or device= say otherwise), from the same
 * generator, so they draw what rand(x.shape) would. */
static dl_status_t call_random_like(lab_eval_t *ev, const json_t *node, const char *fn,
                                    const call_args_t *a, lab_value_t *out)
{
    if (a->npos != 1 || a->pos[0].kind != LAB_V_TENSOR)
        return fail(ev, node, "%s(input) takes a tensor", fn);
    const dl_tensor_t *x = a->pos[0].t;
    dl_dtype_t dt = x->dtype;
    bool dt_given;
    dl_device_t dev = x->device;
    dl_status_t st = lab__eval_kw_dtype(ev, a->kw, &dt, &dt_given);
    if (st == DL_OK && json_object_get(a->kw, "device") != NULL)
        st = lab__eval_kw_device(ev, a->kw, &dev);
    if (st != DL_OK)
        return st;
    call_args_t sized = {.kw = NULL, .npos = x->ndim};
    for (int d = 0; d < x->ndim; d++) {
        sized.pos[d].kind = LAB_V_INT;
        sized.pos[d].i = x->shape[d];
    }
    st = call_random(ev, node, strcmp(fn, "rand_like") == 0 ? "rand" : "randn", &sized, dt, true,
                     out);
    return st == DL_OK ? lab__eval_to_device(ev, out, dev) : st;
}

static dl_status_t call_enumerate_zip(lab_eval_t *ev, const json_t *node, const char *fn,
                                      const call_args_t *a, lab_value_t *out)
{
    bool en = fn[0] == 'e';
    int nseq = en ? 1 : a->npos;
    int64_t start = 0, n = INT64_MAX;
    const json_t *kw_start = json_object_get(a->kw, "start");
    if (json_object_size(a->kw) > (en && kw_start != NULL ? 1u : 0u))
        return fail(ev, node, "%s() takes no keyword arguments%s", fn, en ? " but start=" : "");
    if (en && (a->npos < 1 || a->npos > 2 || (a->npos == 2 && kw_start != NULL)))
        return fail(ev, node, "enumerate() takes an iterable and a start");
    if (!en && a->npos < 1)
        return fail(ev, node, "zip() takes one iterable or more");
    if (en && (a->npos == 2 || kw_start != NULL)) {
        lab_value_t sv;
        dl_status_t st = a->npos == 2 ? lab_value_copy(&a->pos[1], alloc_of(ev), &sv)
                                      : lab_eval_expr(ev, kw_start, &sv);
        if (st != DL_OK)
            return st;
        bool ok = sv.kind == LAB_V_INT;
        start = sv.i;
        lab_value_clear(&sv);
        if (!ok)
            return fail(ev, node, "enumerate(): start must be an integer");
    }
    for (int k = 0; k < nseq; k++) {
        int64_t len = lab__eval_seq_len(&a->pos[k]);
        if (len < 0)
            return fail(ev, node,
                        "%s(): '%s' object is not iterable (a list, a tuple or a tensor is)", fn,
                        lab_vkind_name(a->pos[k].kind));
        n = len < n ? len : n;
    }
    if (n > (int64_t)LAB_LIST_MAX) /* also what the compiler cannot rule out: no sequence */
        return fail(ev, node, "%s(): too many items (at most %u)", fn, LAB_LIST_MAX);
    int width = en ? 2 : nseq;
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_LIST;
    out->items = calloc(n > 0 ? (size_t)n : 1, sizeof(*out->items));
    if (out->items == NULL)
        return DL_ERR_NOMEM;
    dl_status_t st = DL_OK;
    for (int64_t i = 0; i < n && st == DL_OK; i++) {
        lab_value_t *tup = &out->items[i];
        tup->kind = LAB_V_LIST;
        tup->tuple = true;
        if ((tup->items = calloc((size_t)width, sizeof(*tup->items))) == NULL) {
            st = DL_ERR_NOMEM;
            break;
        }
        out->n = (size_t)i + 1;
        for (int k = 0; k < width && st == DL_OK; k++) {
            if (en && k == 0) {
                tup->items[0].kind = LAB_V_INT;
                tup->items[0].i = start + i;
            } else {
                st = lab__eval_seq_item(ev, node, &a->pos[en ? 0 : k], i, &tup->items[k]);
            }
            if (st == DL_OK)
                tup->n = (size_t)k + 1;
        }
    }
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

/* Python's float(), int() and len(), with Python's errors. */
static dl_status_t call_python(lab_eval_t *ev, const json_t *node, const char *fn,
                               const call_args_t *a, lab_value_t *out)
{
    if (a->npos != 1 || json_object_size(a->kw) != 0)
        return fail(ev, node, "%s() takes exactly one argument (%d given)", fn, a->npos);
    const lab_value_t *x = &a->pos[0];
    if (fn[0] == 'l') {
        int64_t n = -1;
        if (x->kind == LAB_V_LIST || x->kind == LAB_V_DICT)
            n = (int64_t)x->n;
        else if (x->kind == LAB_V_STR)
            n = lab__eval_str_len(x->s, strlen(x->s));
        else if (x->kind == LAB_V_TENSOR && x->t->ndim > 0)
            n = x->t->shape[0];
        else if (x->kind == LAB_V_TENSOR)
            return fail(ev, node, "len() of a 0-d tensor");
        if (n < 0)
            return fail(ev, node, "object of type '%s' has no len()", lab_vkind_name(x->kind));
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_INT;
        out->i = n;
        return DL_OK;
    }
    /* A one-element tensor is its number, as t.item() gives it. */
    lab_value_t item;
    if (x->kind == LAB_V_TENSOR) {
        if (x->t->numel != 1)
            return fail(ev, node, "only one element tensors can be converted to Python scalars");
        lab__eval_item(x->t, &item);
        x = &item;
    }
    double v = 0;
    bool is_float = false;
    if (x->kind == LAB_V_INT || x->kind == LAB_V_BOOL || x->kind == LAB_V_FLOAT) {
        is_float = x->kind == LAB_V_FLOAT;
        v = scalar_value(x);
    } else if (x->kind == LAB_V_STR) {
        /* float('1.5'), float('nan'), int(' 42 '): Python's spellings */
        char *end = x->s;
        long long n = 0;
        errno = 0;
        if (fn[0] == 'f')
            v = strtod(x->s, &end);
        else
            n = strtoll(x->s, &end, 10);
        bool read = end != x->s && errno == 0;
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (!read || *end != '\0')
            return fn[0] == 'f'
                       ? fail(ev, node, "could not convert string to float: '%s'", x->s)
                       : fail(ev, node, "invalid literal for int() with base 10: '%s'", x->s);
        memset(out, 0, sizeof(*out));
        out->kind = fn[0] == 'f' ? LAB_V_FLOAT : LAB_V_INT;
        out->f = v;
        out->i = n;
        return DL_OK;
    } else
        return fail(ev, node, "%s() argument must be a number, a string or a tensor, not '%s'", fn,
                    lab_vkind_name(x->kind));
    memset(out, 0, sizeof(*out));
    if (fn[0] == 'f') {
        out->kind = LAB_V_FLOAT;
        out->f = v;
        return DL_OK;
    }
    if (is_float && !isfinite(v))
        return fail(ev, node, "cannot convert float %s to integer", isnan(v) ? "NaN" : "infinity");
    if (is_float && fabs(v) >= 9.2233720368547758e18)
        return fail(ev, node, "int(): %g does not fit in an int64", v);
    out->kind = LAB_V_INT;
    out->i = x->kind == LAB_V_INT || x->kind == LAB_V_BOOL ? x->i : (int64_t)trunc(v);
    return DL_OK;
}

/* torch.arange as torch computes it. For an integer dtype torch first
 * truncates start, end and step to int64 (so a step of 0.5 is 0, and
 * refused) and fills in int64 arithmetic, wrapping into a narrower dtype;
 * the length is then ceil((end - start) / step) of the int64s for int64
 * and of the numbers as given for the narrower types, a quirk kept so
 * that arange(2.9, dtype=torch.int32) has 3 elements and the int64 one 2,
 * as in torch. */
static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static dl_status_t call_arange(lab_eval_t *ev, const json_t *node, const call_args_t *a,
                               dl_dtype_t dt, bool dt_given, lab_value_t *out)
{
    double v[3] = {0, 0, 1}; /* start, end, step */
    int64_t iv[3] = {0, 0, 1};
    bool fl = false, ints = true;
    if (a->npos < 1 || a->npos > 3)
        return fail(ev, node, "arange(end), arange(start, end) or arange(start, end, step)");
    for (int k = 0; k < a->npos; k++) {
        const lab_value_t *x = &a->pos[k];
        if (x->kind != LAB_V_INT && x->kind != LAB_V_FLOAT && x->kind != LAB_V_BOOL)
            return fail(ev, node, "arange takes numbers");
        fl = fl || x->kind == LAB_V_FLOAT;
        int at = a->npos == 1 ? 1 : k;
        v[at] = scalar_value(x);
        iv[at] = x->i;
    }
    ints = !fl;
    if (!dt_given)
        dt = fl ? DL_FLOAT32 : DL_INT64;
    if (dt == DL_BOOL)
        return fail(ev, node, "arange: \"arange_cpu\" not implemented for 'Bool'");
    if (!isfinite(v[0]) || !isfinite(v[1]))
        return fail(ev, node, "arange: unsupported range: %g -> %g", v[0], v[1]);
    bool float_dt = dl_dtype_is_float(dt);
    if (!float_dt && !ints) {
        /* the numbers as torch's int64 casts make them */
        for (int k = 0; k < 3; k++) {
            double t = trunc(v[k]);
            if (!(t >= -0x1p63 && t < 0x1p63))
                return fail(ev, node, "arange: %g does not fit in int64", v[k]);
            iv[k] = (int64_t)t;
        }
    }
    double n;
    if (float_dt) {
        if (v[2] == 0 || isnan(v[2]))
            return fail(ev, node, "step must be nonzero");
        if ((v[2] > 0 && v[1] < v[0]) || (v[2] < 0 && v[1] > v[0]))
            return fail(ev, node, "upper bound and larger bound inconsistent with step sign");
        n = ceil((v[1] - v[0]) / v[2]);
    } else {
        if (iv[2] == 0)
            return fail(ev, node, "step must be nonzero");
        if ((iv[2] > 0 && iv[1] < iv[0]) || (iv[2] < 0 && iv[1] > iv[0]))
            return fail(ev, node, "upper bound and larger bound inconsistent with step sign");
        if (dt == DL_INT64 || ints) {
            /* exactly, past 2^53 too */
            __int128 span = (__int128)iv[1] - iv[0], st = iv[2];
            __int128 q = st > 0 ? (span + st - 1) / st : (span + st + 1) / st;
            n = q > (__int128)(1 << 29) ? (double)(1 << 29) : (double)q;
        } else {
            n = ceil((v[1] - v[0]) / v[2]);
        }
    }
    if (!(n < 0x1p63))
        return fail(ev, node, "invalid size, possible overflow?");
    if (n > (double)(1 << 28))
        return fail(ev, node, "arange: %.0f elements is too many", n);
    int64_t shape[1] = {n > 0 ? (int64_t)n : 0};
    dl_tensor_t *t = NULL;
    dl_status_t st = new_tensor(ev, dt, 1, shape, &t);
    if (st != DL_OK)
        return st;
    if (float_dt)
        dl_tensor_arange(t, v[0], v[2]);
    else
        for (int64_t i = 0; i < shape[0]; i++) /* int64 arithmetic, wrapping */
            dl_dtype_set_i64(dt, t->data, (size_t)i,
                             (int64_t)((uint64_t)iv[0] + (uint64_t)i * (uint64_t)iv[2]));
    lab__eval_set_tensor(out, t);
    return DL_OK;
}

/* Whether an argument is range(...) written out, which the shell has as
 * numbers only where a list can stand for it. */
static bool is_range_call(const json_t *arg)
{
    return strcmp(lab_json_str(arg, "call", ""), "range") == 0 &&
           json_object_get(arg, "self") == NULL;
}

/* Python's builtins of an iterable, which take range(...) as its numbers. */
static bool range_taker(const char *fn)
{
    static const char *const names[] = {"sorted", "reversed", "sum", "max",  "min",
                                        "any",    "all",      "len", "tuple"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(fn, names[i]) == 0)
            return true;
    return false;
}

static dl_status_t run_expanded(lab_eval_t *ev, const json_t *node, void *out)
{
    return lab_eval_expr(ev, node, out);
}

static dl_status_t call_fn(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    if (lab__eval_has_star(json_object_get(node, "args"))) {
        memset(out, 0, sizeof(*out));
        return lab__eval_starred(ev, node, NULL, run_expanded, out); /* f(*args) */
    }
    const char *fn = lab_json_str(node, "call", "");
    call_args_t a = {.kw = json_object_get(node, "kwargs")};
    json_t *args = json_object_get(node, "args");
    dl_status_t st = DL_OK;
    if (json_object_get(node, "self") == NULL && !json_is_true(json_object_get(node, "builtin"))) {
        /* A function a def made; a variable of another kind is no function. */
        lab_value_t *var = lab__eval_var(ev, fn);
        if (var != NULL && var->kind == LAB_V_FUNC)
            return lab__eval_call_def(ev, node, var, out);
        if (var != NULL && lab__eval_calls_class(var)) {
            lab_value_t cls; /* the call may bind the name anew */
            if ((st = lab_value_copy(var, alloc_of(ev), &cls)) != DL_OK)
                return st;
            st = lab__eval_call_class(ev, node, &cls, out);
            lab_value_clear(&cls);
            return st;
        }
    }
    /* torch.sum and torch.max, min, all and any keep their module (the
     * parser's resolve_prefix): the bare names are Python's builtins. So do
     * torch.add, torch.norm and the others whose bare name a def may take:
     * the module says they are torch's. */
    bool torch_form =
        strncmp(fn, "torch.", 6) == 0 &&
        (strcmp(fn + 6, "all") == 0 || strcmp(fn + 6, "any") == 0 || lab__eval_is_math(fn + 6));
    if (torch_form)
        fn += 6;
    if (json_object_get(node, "self") != NULL && lab__eval_is_list_method(fn))
        return lab__eval_list_method(ev, node, fn, out);
    if (json_object_get(node, "self") == NULL && strcmp(fn, "list") == 0 &&
        json_array_size(args) == 1 && is_range_call(json_array_get(args, 0)))
        return lab__eval_list_of_range(ev, node, json_array_get(args, 0), out);
    if (json_array_size(args) > CALL_POS_MAX)
        return fail(ev, node, "%s: too many arguments", fn);
    size_t i;
    json_t *arg;
    const json_t *self = json_object_get(node, "self");
    if (self != NULL) {
        /* A method, t.sum(): the tensor is the first argument. */
        if ((st = lab_eval_expr(ev, self, &a.pos[0])) != DL_OK)
            goto out;
        a.npos = 1;
        if (json_array_size(args) > CALL_POS_MAX - 1) {
            st = fail(ev, node, "%s: too many arguments", fn);
            goto out;
        }
    }
    json_array_foreach(args, i, arg)
    {
        /* tensor([...]) keeps its literal for dtype inference. */
        if (strcmp(fn, "tensor") == 0)
            break;
        /* range(...) given to a Python builtin that takes an iterable
         * (sorted(range(n)), reversed(range(n)), sum(range(n))): its
         * numbers, as list(range(...)) has them */
        if (self == NULL && !torch_form && range_taker(fn) && is_range_call(arg))
            st = lab__eval_list_of_range(ev, arg, arg, &a.pos[a.npos]);
        else
            st = lab_eval_expr(ev, arg, &a.pos[a.npos]);
        if (st != DL_OK)
            goto out;
        a.npos++;
    }
    if (self != NULL && a.pos[0].kind == LAB_V_STR && lab__eval_is_str_method(fn)) {
        st = lab__eval_str_method(ev, node, fn, &a.pos[0], a.pos + 1, a.npos - 1, a.kw, out);
        goto out;
    }
    if (self != NULL && lab__eval_is_str_method(fn) && strcmp(fn, "split") != 0) {
        /* x.upper() of what is not a string */
        st = lab__eval_undefined(&a.pos[0]) ? lab__eval_fail_undefined(ev, self, &a.pos[0])
                                            : fail(ev, node, "'%s' object has no attribute '%s'",
                                                   lab__eval_type_name(&a.pos[0]), fn);
        goto out;
    }
    if (self != NULL && (strcmp(fn, "wait") == 0 || strcmp(fn, "is_completed") == 0 ||
                         strcmp(fn, "values") == 0 || strcmp(fn, "indices") == 0)) {
        st = call_method(ev, node, fn, &a, out);
        goto out;
    }
    if (self != NULL && lab__eval_is_size(&a.pos[0]) && strcmp(fn, "numel") == 0) {
        /* t.shape.numel(): the elements a tensor of that shape holds */
        int64_t n = 1;
        for (size_t k = 0; k < a.pos[0].n; k++)
            n *= a.pos[0].items[k].i;
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_INT;
        out->i = n;
        goto out;
    }
    if ((torch_form || (self != NULL && a.pos[0].kind == LAB_V_TENSOR)) &&
        (strcmp(fn, "all") == 0 || strcmp(fn, "any") == 0)) {
        st = lab__eval_tensor_all_any(ev, node, fn, a.pos, a.npos, a.kw, out);
        goto out;
    }
    bool any_tensor = false;
    for (int k = 0; k < a.npos; k++)
        any_tensor |= a.pos[k].kind == LAB_V_TENSOR;
    if (!torch_form && self == NULL && json_object_size(a.kw) == 0 &&
        a.pos[0].kind == LAB_V_TENSOR &&
        ((a.npos == 1 &&
          (strcmp(fn, "sum") == 0 || strcmp(fn, "max") == 0 || strcmp(fn, "min") == 0)) ||
         (a.npos == 2 && strcmp(fn, "sum") == 0 && lab__eval_is_number(&a.pos[1])))) {
        /* Python's sum(t[, start]), max(t), min(t): over the rows */
        st = lab__eval_py_tensor_fold(ev, node, fn, &a.pos[0], a.npos == 2 ? &a.pos[1] : NULL, out);
        goto out;
    }
    if (!torch_form && self == NULL && a.npos == 2 && json_object_size(a.kw) == 0 &&
        strcmp(fn, "sum") == 0 && a.pos[0].kind == LAB_V_LIST && !any_tensor) {
        /* Python's sum(l, start): start + l[0] + l[1] + ..., in that order */
        lab_value_t *items = malloc((a.pos[0].n + 1) * sizeof(*items));
        if (items == NULL) {
            st = DL_ERR_NOMEM;
            goto out;
        }
        items[0] = a.pos[1];
        if (a.pos[0].n > 0)
            memcpy(items + 1, a.pos[0].items, a.pos[0].n * sizeof(*items));
        lab_value_t list = {.kind = LAB_V_LIST, .items = items, .n = a.pos[0].n + 1};
        st = lab__eval_py_fold(ev, node, fn, &list, out);
        free(items); /* the items are still the arguments' */
        goto out;
    }
    if (!torch_form && self == NULL && a.npos >= 2 && json_object_size(a.kw) == 0 &&
        (strcmp(fn, "max") == 0 || strcmp(fn, "min") == 0) && any_tensor) {
        st = lab__eval_py_max_of(ev, node, fn, a.pos, a.npos, out);
        goto out;
    }
    if (self == NULL && strncmp(fn, "math.", 5) == 0) {
        st = lab__eval_pymath(ev, node, fn + 5, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (self == NULL && strncmp(fn, "random.", 7) == 0) {
        st = lab__eval_pyrandom(ev, node, fn + 7, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (lab__eval_is_math(fn)) {
        st = lab__eval_math(ev, node, fn, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (self != NULL && fn[0] != '\0' && fn[strlen(fn) - 1] == '_') {
        /* The parser made t.add_(x) alone the t += x it is. */
        st = fail(ev, node,
                  "%s() changes its tensor in place and gives nothing here: write it as a "
                  "statement of its own (t.%s(...)), or use the operators for a new tensor",
                  fn, fn);
        goto out;
    }
    char setup[64];
    if (self == NULL && lab__eval_is_setup_fn(lab__eval_setup_name(fn, setup, sizeof(setup)))) {
        st = lab__eval_setup_fn(ev, node, setup, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (self != NULL && lab__eval_is_convert(fn)) {
        st = lab__eval_convert(ev, node, fn, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (strcmp(fn, "float") == 0 || strcmp(fn, "int") == 0 || strcmp(fn, "len") == 0) {
        st = call_python(ev, node, fn, &a, out);
        goto out;
    }
    if ((self == NULL && lab__eval_is_py_builtin(fn)) ||
        (self != NULL && strcmp(fn, "round") == 0)) {
        st = lab__eval_py_builtin(ev, node, fn, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (self == NULL && strcmp(fn, "dict") == 0) {
        st = lab__eval_dict_call(ev, node, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (self == NULL && (strcmp(fn, "enumerate") == 0 || strcmp(fn, "zip") == 0)) {
        st = call_enumerate_zip(ev, node, fn, &a, out);
        goto out;
    }
    if (self == NULL && is_like(fn)) {
        st = call_like(ev, node, fn, a.pos, a.npos, a.kw, out);
        goto out;
    }
    if (self == NULL && (strcmp(fn, "rand_like") == 0 || strcmp(fn, "randn_like") == 0)) {
        st = call_random_like(ev, node, fn, &a, out);
        goto out;
    }
    if (strcmp(fn, "get_rank") == 0 || strcmp(fn, "get_world_size") == 0) {
        st = rank_in_group(ev, node, fn, &a, out);
        goto out;
    }
    if (self == NULL && strcmp(fn, "P2POp") == 0) {
        st = lab__eval_p2pop(ev, node, out);
        goto out;
    }
    dl_dtype_t dt = DL_FLOAT32;
    bool dt_given = false;
    dl_device_t dev = host_dev;
    if ((st = lab__eval_kw_dtype(ev, a.kw, &dt, &dt_given)) != DL_OK ||
        (st = lab__eval_kw_device(ev, a.kw, &dev)) != DL_OK)
        goto out;
    int64_t shape[DL_MAX_DIMS];
    int ndim = 0;
    dl_tensor_t *t = NULL;
    if (strcmp(fn, "tensor") == 0) {
        if (json_array_size(args) != 1) {
            st = fail(ev, node, "tensor() takes one number or list");
            goto out;
        }
        /* Made on the host, then moved to device= with the others below. */
        json_t *lit = json_array_get(args, 0);
        st = json_object_get(lit, "list") != NULL
                 ? literal_tensor(ev, lit, dt_given ? &dt : NULL, out)
                 : number_tensor(ev, lit, dt_given ? &dt : NULL, out);
        if (st != DL_OK)
            goto out;
    } else if (strcmp(fn, "zeros") == 0 || strcmp(fn, "ones") == 0 || strcmp(fn, "empty") == 0) {
        if ((st = shape_args(ev, node, &a, 0, a.npos, &ndim, shape)) != DL_OK ||
            (st = new_tensor(ev, dt, ndim, shape, &t)) != DL_OK)
            goto out;
        if (strcmp(fn, "ones") == 0)
            dl_tensor_fill(t, 1);
        lab__eval_set_tensor(out, t);
    } else if (strcmp(fn, "full") == 0) {
        if (a.npos != 2 || (a.pos[1].kind != LAB_V_INT && a.pos[1].kind != LAB_V_FLOAT &&
                            a.pos[1].kind != LAB_V_BOOL)) {
            st = fail(ev, node, "full(size, value) takes a size and a number");
            goto out;
        }
        if (!dt_given)
            dt = a.pos[1].kind == LAB_V_FLOAT  ? DL_FLOAT32
                 : a.pos[1].kind == LAB_V_BOOL ? DL_BOOL
                                               : DL_INT64;
        if ((st = shape_args(ev, node, &a, 0, 1, &ndim, shape)) != DL_OK ||
            (st = new_tensor(ev, dt, ndim, shape, &t)) != DL_OK)
            goto out;
        const char *tname;
        if (!number_fits(dt, &a.pos[1], false, &tname)) {
            dl_tensor_free(t);
            st = fail_overflow(ev, node, tname);
            goto out;
        }
        dl_tensor_fill(t, scalar_value(&a.pos[1]));
        lab__eval_set_tensor(out, t);
    } else if (strcmp(fn, "arange") == 0) {
        st = call_arange(ev, node, &a, dt, dt_given, out);
    } else if (lab__eval_is_factory(fn)) {
        st = lab__eval_factory(ev, node, fn, a.pos, a.npos, dt, out); /* linspace, eye */
    } else if (strcmp(fn, "rand") == 0 || strcmp(fn, "randn") == 0 || strcmp(fn, "randint") == 0 ||
               strcmp(fn, "randperm") == 0) {
        st = call_random(ev, node, fn, &a, dt, dt_given, out);
    } else if (strcmp(fn, "initial_seed") == 0) {
        if (a.npos != 0) {
            st = fail(ev, node, "initial_seed() takes no arguments");
            goto out;
        }
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_INT;
        out->i = (int64_t)lab__eval_rng(ev)->seed;
    } else if (strcmp(fn, "new_group") == 0) {
        /* torch's: the ranks sorted (a group's rank i is its i-th lowest
         * world rank, whatever order they were listed in); none: all */
        int ranks[256], nr = a.npos == 0 ? dl_comm_size(ev->r->comm) : 0;
        if (a.npos > 1 ||
            (a.npos == 1 && (a.pos[0].kind != LAB_V_LIST || a.pos[0].n == 0 || a.pos[0].n > 256))) {
            st = fail(ev, node, "new_group takes a list of ranks, e.g. new_group([0, 2])");
            goto out;
        }
        for (int k = 0; k < nr; k++)
            ranks[k] = k;
        for (size_t k = 0; a.npos == 1 && k < a.pos[0].n; k++) {
            const lab_value_t *r = &a.pos[0].items[k];
            if (r->kind != LAB_V_INT) {
                st = fail(ev, node, "new_group: a rank is a number, not %s", lab_vkind_a(r->kind));
                goto out;
            }
            ranks[nr++] = r->i < INT_MIN ? INT_MIN : r->i > INT_MAX ? INT_MAX : (int)r->i;
        }
        qsort(ranks, (size_t)nr, sizeof(ranks[0]), cmp_int);
        dl_comm_t *g = NULL;
        if ((st = dl_comm_new_group(ev->r->comm, ranks, nr, &g)) != DL_OK) {
            st = fail(ev, node, "%s", dl_comm_last_error(ev->r->comm));
            goto out;
        }
        memset(out, 0, sizeof(*out));
        out->kind = g != NULL ? LAB_V_GROUP : LAB_V_NONE;
        out->group = g;
        /* a list may hold it too, groups = [new_group(...), ...]; without
         * memory for that it stays its variable's alone */
        (void)lab_value_share(out);
    } else if (lab__eval_var(ev, fn) != NULL) {
        st = fail(ev, node, "'%s' is %s, not a function", fn,
                  lab_vkind_a(lab__eval_var(ev, fn)->kind));
    } else {
        st = fail(ev, node, "unknown function '%s' (`help` lists the shell's functions)", fn);
    }
    /* device=cuda: made on the host, then moved to the GPU. */
    if (st == DL_OK)
        st = lab__eval_to_device(ev, out, dev);
out:
    args_clear(&a);
    return st;
}

/* ---- slices and views ----
 *
 * t[i], t[a:b], t[a:b:c] and rows of a 2-D tensor, as torch takes them:
 * each subscript works on the first dimension left, and the result is a
 * view of the tensor's storage (an offset, a shape and strides). A view is
 * read by copying its elements out, written element by element (t[1:3] =
 * 0, recv t[2:4] ...), and given to the communicator as a tensor of its own
 * over the same memory when its elements are contiguous. */

static void view_init(lab_view_t *v, dl_tensor_t *t)
{
    memset(v, 0, sizeof(*v));
    v->base = t;
    v->ndim = t->ndim;
    int64_t s = 1;
    for (int d = t->ndim; d-- > 0;) {
        v->shape[d] = t->shape[d];
        v->stride[d] = s;
        s *= t->shape[d];
    }
}

static size_t view_numel(const lab_view_t *v)
{
    size_t n = 1;
    for (int d = 0; d < v->ndim; d++)
        n *= (size_t)v->shape[d];
    return n;
}

/* The storage offset (in elements) of the view's i-th element in row-major
 * order. */
static size_t view_at(const lab_view_t *v, size_t i)
{
    int64_t off = v->off;
    for (int d = v->ndim; d-- > 0;) {
        off += (int64_t)(i % (size_t)v->shape[d]) * v->stride[d];
        i /= (size_t)v->shape[d];
    }
    return (size_t)off;
}

bool lab__view_contiguous(const lab_view_t *v)
{
    int64_t s = 1;
    for (int d = v->ndim; d-- > 0;) {
        if (v->shape[d] != 1 && v->stride[d] != s)
            return false;
        s *= v->shape[d];
    }
    return true;
}

static dl_status_t int_of(lab_eval_t *ev, const json_t *node, lab_value_t *x, bool *given,
                          int64_t *out);

/* The integer that x, node's value, holds, as an index reads it; x is
 * cleared. */
static dl_status_t int_of(lab_eval_t *ev, const json_t *node, lab_value_t *x, bool *given,
                          int64_t *out)
{
    dl_status_t st = index_scalar(ev, x, true);
    if (st != DL_OK) {
        lab_value_clear(x);
        return st;
    }
    if (x->kind == LAB_V_TENSOR) {
        lab_value_clear(x);
        return fail(ev, node,
                    "only integer tensors of a single element can be converted to an "
                    "index");
    }
    bool ok = x->kind == LAB_V_INT || x->kind == LAB_V_BOOL;
    *out = x->i;
    char word[sizeof(x->name)];
    snprintf(word, sizeof(word), "%s", x->name);
    lab_vkind_t kind = x->kind;
    lab_value_clear(x);
    if (kind == LAB_V_NAME)
        return fail(ev, node, "'%s' is not defined", word);
    if (!ok)
        return fail(ev, node, "slice indices must be integers, not %s", lab_vkind_a(kind));
    *given = true;
    return DL_OK;
}

/* How many dimensions the integer indices before node in its brackets
 * took away: torch names a dimension by its place in the tensor indexed
 * (None's included), not in what is left of it. The nodes of one pair of
 * brackets share its column. */
static int dims_taken_before(const json_t *node)
{
    int taken = 0;
    json_int_t col = lab_json_int(node, "col", -1);
    for (const json_t *in = json_object_get(node, "index");
         in != NULL && json_object_get(in, "index") != NULL && lab_json_int(in, "col", -2) == col;
         in = json_object_get(in, "index")) {
        if (json_object_get(in, "at") != NULL)
            taken++;
    }
    return taken;
}

/* A part of a slice: an integer, or None as if it were left out (t[None:2]
 * is t[:2]). */
static dl_status_t slice_part(lab_eval_t *ev, const json_t *node, bool *given, int64_t *out)
{
    *given = false;
    if (node == NULL)
        return DL_OK;
    lab_value_t x;
    dl_status_t st = lab_eval_expr(ev, node, &x);
    if (st != DL_OK || x.kind == LAB_V_NONE)
        return st;
    return int_of(ev, node, &x, given, out);
}

/* start, stop and step of a slice over n items, clamped as Python does;
 * *count_p receives its length. neg_step_ok: lists take a negative step,
 * tensors do not (torch: "step must be greater than zero"). */
static dl_status_t slice_bounds(lab_eval_t *ev, const json_t *node, int64_t n, bool neg_step_ok,
                                int64_t *start_p, int64_t *step_p, int64_t *count_p)
{
    const json_t *sl = json_object_get(node, "slice");
    int64_t start = 0, stop = 0, step = 1;
    bool has_start, has_stop, has_step;
    dl_status_t st;
    if ((st = slice_part(ev, json_object_get(sl, "start"), &has_start, &start)) != DL_OK ||
        (st = slice_part(ev, json_object_get(sl, "stop"), &has_stop, &stop)) != DL_OK ||
        (st = slice_part(ev, json_object_get(sl, "step"), &has_step, &step)) != DL_OK)
        return st;
    if (!has_step)
        step = 1;
    if (step == 0)
        return fail(ev, node, "slice step cannot be zero");
    if (step < 0 && !neg_step_ok)
        return fail(ev, node, "step must be greater than zero");
    lab__eval_slice_indices(n, has_start ? &start : NULL, has_stop ? &stop : NULL, &step, start_p,
                            count_p);
    if (!neg_step_ok && *count_p > 0 && step > n) {
        /* torch's length, (stop - start + step - 1) / step, wraps in int64
         * past a huge step: t[::2**63 - 1] is empty there */
        int64_t b = !has_stop ? n : stop < 0 ? (stop + n < 0 ? 0 : stop + n) : stop > n ? n : stop;
        int64_t wrapped = (int64_t)((uint64_t)(b - *start_p) + (uint64_t)step - 1) / step;
        *count_p = wrapped < 0 ? 0 : wrapped;
    }
    *step_p = step;
    return DL_OK;
}

/* A slice's start or stop over n items, clamped to [lo, hi] as Python
 * clamps it (a negative one counted from the end); dflt where not given. */
static int64_t slice_end(const int64_t *v, int64_t n, int64_t lo, int64_t hi, int64_t dflt)
{
    if (v == NULL)
        return dflt;
    if (*v < 0)
        return *v + n < lo ? lo : *v + n;
    return *v > hi ? hi : *v;
}

void lab__eval_slice_indices(int64_t n, const int64_t *start, const int64_t *stop, int64_t *step_p,
                             int64_t *start_p, int64_t *count_p)
{
    /* Python's: a step below -maxsize is -maxsize, so that -step is one */
    int64_t step = *step_p < -INT64_MAX ? -INT64_MAX : *step_p;
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? n - 1 : n;
    int64_t a = slice_end(start, n, lo, hi, step < 0 ? hi : lo);
    int64_t b = slice_end(stop, n, lo, hi, step < 0 ? lo : hi);
    int64_t count = 0; /* as Python counts, with no sum past INT64_MAX for a huge step */
    if (step > 0 && b > a)
        count = (b - a - 1) / step + 1;
    else if (step < 0 && b < a)
        count = (a - b - 1) / -step + 1;
    *step_p = step;
    *start_p = a;
    *count_p = count;
}

/* A list or a tensor as an index beside others in its brackets. */
static dl_status_t paired_fail(lab_eval_t *ev, const json_t *node)
{
    return fail(ev, node,
                "a list or tensor index with another index in the same brackets "
                "(m[[0, 1], 1]) is not supported here: index in two steps, m[[0, 1]][:, 1]");
}

/* None in brackets: a dimension of size 1 at "dim" (from the end where
 * below 0, as after an ellipsis), as torch's unsqueeze. */
static dl_status_t view_newaxis(lab_eval_t *ev, const json_t *node, lab_view_t *v)
{
    json_int_t at_dim = lab_json_int(node, "dim", 0);
    json_int_t pos = at_dim < 0 ? v->ndim + 1 + at_dim : at_dim;
    if (v->ndim >= DL_MAX_DIMS)
        return fail(ev, node, "the result would have more than %d dimensions", DL_MAX_DIMS);
    if (pos < 0 || pos > v->ndim)
        return fail(ev, node, "too many indices for tensor of dimension %d", v->ndim);
    for (int d = v->ndim; d > (int)pos; d--) {
        v->shape[d] = v->shape[d - 1];
        v->stride[d] = v->stride[d - 1];
    }
    v->shape[pos] = 1;
    v->stride[pos] = pos < v->ndim ? v->shape[pos + 1] * v->stride[pos + 1] : 1;
    v->ndim++;
    return DL_OK;
}

/* Applies one subscript node (an index, a slice, None or an ellipsis) to
 * the view, at its dimension: the first, or "dim" past those the indices
 * before it in one pair of brackets kept (m[:, 1]), counted from the last
 * where below 0 (m[..., 1]). */
static dl_status_t view_apply(lab_eval_t *ev, const json_t *node, lab_view_t *v)
{
    if (json_object_get(node, "ellipsis") != NULL)
        return DL_OK; /* its dimensions stay; the indices after it count from the end */
    if (json_object_get(node, "newaxis") != NULL)
        return view_newaxis(ev, node, v);
    json_int_t at_dim = lab_json_int(node, "dim", 0);
    int before = dims_taken_before(node);
    if (v->ndim == 0 && before == 0)
        return fail(ev, node, "%s",
                    json_object_get(node, "slice") != NULL
                        ? "slice() cannot be applied to a 0-dim tensor."
                        : "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                          "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    if (at_dim < 0)
        at_dim += v->ndim;
    if (at_dim < 0 || at_dim >= v->ndim)
        return fail(ev, node, "too many indices for tensor of dimension %d", v->ndim + before);
    int dim = (int)at_dim;
    int64_t n = v->shape[dim];
    if (json_object_get(node, "slice") != NULL) {
        int64_t start, step, count;
        dl_status_t st = slice_bounds(ev, node, n, false, &start, &step, &count);
        if (st != DL_OK)
            return st;
        v->off += start * v->stride[dim];
        v->shape[dim] = count;
        /* a huge step's stride: the product's low bits, as torch's */
        v->stride[dim] = (int64_t)((uint64_t)v->stride[dim] * (uint64_t)step);
        return DL_OK;
    }
    bool given;
    int64_t i = 0;
    lab_value_t x;
    dl_status_t st = lab_eval_expr(ev, json_object_get(node, "at"), &x);
    if (st == DL_OK)
        st = index_scalar(ev, &x, false);
    if (st != DL_OK) {
        lab_value_clear(&x);
        return st;
    }
    if (lab__eval_is_fancy_index(&x)) {
        lab_value_clear(&x);
        return paired_fail(ev, node);
    }
    if (x.kind == LAB_V_BOOL) {
        /* torch reads it as a mask of no dimensions (a new one of size 1
         * or 0), not as 1 or 0 */
        lab_value_clear(&x);
        return fail(ev, node,
                    "True or False beside other indices is not supported here (torch reads it "
                    "as a mask)");
    }
    if ((st = int_of(ev, json_object_get(node, "at"), &x, &given, &i)) != DL_OK)
        return st;
    int64_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n)
        return fail(ev, node, "index %lld is out of bounds for dimension %d with size %lld",
                    (long long)i, dim + before, (long long)n);
    v->off += k * v->stride[dim];
    for (int d = dim + 1; d < v->ndim; d++) {
        v->shape[d - 1] = v->shape[d];
        v->stride[d - 1] = v->stride[d];
    }
    v->ndim--;
    return DL_OK;
}

/* torch's first check of brackets that hold None or an ellipsis: they
 * take no more dimensions than the tensor has ("indices", on the first
 * node of the brackets). */
static dl_status_t check_indices(lab_eval_t *ev, const json_t *node, int ndim)
{
    json_int_t n = lab_json_int(node, "indices", 0);
    if (n > ndim)
        return fail(ev, node, "too many indices for tensor of dimension %d", ndim);
    return DL_OK;
}

static bool pure(const json_t *n);

/* ---- entries of lists and dicts ----
 *
 * grads[i] of a list variable, stats["loss"] of a dict, and deeper
 * (d["n"]["t"], l[0]["a"]): the entry itself, so that
 * dist.all_reduce(grads[i]), dist.irecv(bufs[0], src=0) and
 * d["n"]["b"] = 2 write into the list or dict as torch and Python write
 * into the object it holds. */

/* node's brackets, node the last subscript of them (not one a later
 * subscript in the same brackets follows: that one has "dim"). */
bool lab__eval_bracket_of(const json_t *node, lab_bracket_t *b)
{
    memset(b, 0, sizeof(*b));
    const json_t *e = node;
    const json_t *rev[LAB_BRACKET_MAX];
    for (;; e = json_object_get(e, "index")) {
        if (json_object_get(e, "index") == NULL || json_object_get(e, "slice") != NULL ||
            json_object_get(e, "ellipsis") != NULL || b->n == LAB_BRACKET_MAX)
            return false;
        bool none = json_object_get(e, "newaxis") != NULL;
        if (!none && json_object_get(e, "at") == NULL)
            return false;
        b->tuple = b->tuple || json_object_get(e, "tuple") != NULL;
        rev[b->n++] = none ? NULL : json_object_get(e, "at");
        if (json_object_get(e, "dim") == NULL)
            break; /* the first subscript of the brackets */
    }
    for (int i = 0; i < b->n; i++)
        b->at[i] = rev[b->n - 1 - i];
    b->tuple = b->tuple || b->n > 1;
    b->base = json_object_get(e, "index");
    return true;
}

/* The key brackets b give: one value, a tuple of them, or None. */
dl_status_t lab__eval_bracket_key(lab_eval_t *ev, const lab_bracket_t *b, lab_value_t *key)
{
    memset(key, 0, sizeof(*key));
    if (!b->tuple)
        return b->at[0] != NULL ? lab_eval_expr(ev, b->at[0], key) : DL_OK;
    dl_status_t st = lab_value_new_list(key, (size_t)b->n);
    key->tuple = true;
    for (int i = 0; st == DL_OK && i < b->n; i++)
        if (b->at[i] == NULL || (st = lab_eval_expr(ev, b->at[i], &key->items[i])) == DL_OK)
            key->n = (size_t)i + 1;
    if (st != DL_OK)
        lab_value_clear(key);
    return st;
}

/* The position in list c that key names (*k_p -1: past its end; *i_p the
 * index as written), in Python's words where key is no index. */
static dl_status_t list_index(lab_eval_t *ev, const json_t *node, const lab_value_t *c,
                              const lab_value_t *key, int64_t *k_p, int64_t *i_p)
{
    if (key->kind != LAB_V_INT && key->kind != LAB_V_BOOL && key->kind != LAB_V_TENSOR)
        return fail(ev, node, "%s indices must be integers or slices, not %s",
                    c->tuple ? "tuple" : "list", lab__eval_type_name(key));
    lab_value_t x;
    bool given;
    dl_status_t st = lab_value_copy(key, alloc_of(ev), &x);
    if (st == DL_OK)
        st = int_of(ev, node, &x, &given, i_p);
    if (st != DL_OK)
        return st;
    int64_t k = *i_p < 0 ? *i_p + (int64_t)c->n : *i_p;
    *k_p = k >= 0 && k < (int64_t)c->n ? k : -1;
    return DL_OK;
}

/* The entry of c (a list or a dict) that key names; Python's error where
 * it has none. */
static dl_status_t entry_in(lab_eval_t *ev, const json_t *node, lab_value_t *c,
                            const lab_value_t *key, lab_value_t **v_p)
{
    if (c->kind == LAB_V_DICT)
        return lab__eval_dict_at(ev, node, c, key, v_p);
    int64_t k = -1, i = 0;
    dl_status_t st = list_index(ev, node, c, key, &k, &i);
    if (st == DL_OK && k < 0)
        st = fail(ev, node, "%s index out of range", c->tuple ? "tuple" : "list");
    if (st == DL_OK)
        *v_p = &c->items[k];
    return st;
}

/* What node names in place, where it runs nothing (pure): a variable, or
 * an entry of a list or dict in one (l[i], d["k"]["j"], d[1, 2]); *v_p
 * NULL where node is no such thing. *name_p: the variable's name. */
static dl_status_t entry_of(lab_eval_t *ev, const json_t *node, lab_value_t **v_p,
                            const char **name_p)
{
    *v_p = NULL;
    if (lab__eval_is_plain_name(node)) {
        *name_p = lab_json_str(node, "name", "");
        *v_p = lab__eval_var(ev, *name_p);
        return DL_OK;
    }
    lab_bracket_t b;
    lab_value_t *c = NULL, key;
    if (!lab__eval_bracket_of(node, &b) || !pure(node))
        return DL_OK;
    dl_status_t st = entry_of(ev, b.base, &c, name_p);
    if (st != DL_OK || c == NULL || (c->kind != LAB_V_LIST && c->kind != LAB_V_DICT))
        return st;
    if ((st = lab__eval_bracket_key(ev, &b, &key)) == DL_OK)
        st = entry_in(ev, node, c, &key, v_p);
    lab_value_clear(&key);
    return st;
}

lab_value_t *lab__eval_entry(lab_eval_t *ev, const json_t *node)
{
    lab_value_t *v = NULL;
    const char *name;
    char saved[sizeof(ev->error)];
    memcpy(saved, ev->error, sizeof(saved));
    if (entry_of(ev, node, &v, &name) != DL_OK)
        v = NULL; /* a key gone: no entry; the message is not this caller's */
    memcpy(ev->error, saved, sizeof(saved));
    return v;
}

/* The list or dict node's brackets follow, where they name an entry of
 * it, and the key or index they give (*c_p NULL, nothing in key,
 * otherwise). The key is evaluated once, after the container is seen to
 * be one and before it is found again for good: a call in the key may
 * have moved its memory. */
static dl_status_t entry_box(lab_eval_t *ev, const json_t *node, lab_bracket_t *b, lab_value_t *key,
                             lab_value_t **c_p, const char **name_p)
{
    *c_p = NULL;
    memset(key, 0, sizeof(*key));
    if (!lab__eval_bracket_of(node, b) || (!lab__eval_is_plain_name(b->base) && !pure(b->base)))
        return DL_OK;
    lab_value_t *c = NULL;
    dl_status_t st = entry_of(ev, b->base, &c, name_p);
    if (st != DL_OK || c == NULL || (c->kind != LAB_V_LIST && c->kind != LAB_V_DICT))
        return st;
    if ((st = lab__eval_bracket_key(ev, b, key)) != DL_OK)
        return st;
    if ((st = entry_of(ev, b->base, &c, name_p)) == DL_OK &&
        (c == NULL || (c->kind != LAB_V_LIST && c->kind != LAB_V_DICT)))
        st = fail(ev, node, "the list or dict was replaced while its subscript ran");
    if (st != DL_OK) {
        lab_value_clear(key);
        return st;
    }
    *c_p = c;
    return DL_OK;
}

/* The tensor an entry of a list or dict holds, viewed whole. */
static dl_status_t entry_view(lab_eval_t *ev, const json_t *node, lab_value_t *c,
                              const lab_bracket_t *b, const lab_value_t *key, const char *name,
                              lab_value_t **var_p, const char **name_p, lab_view_t *v)
{
    lab_value_t *item = NULL;
    dl_status_t st = entry_in(ev, node, c, key, &item);
    if (st != DL_OK)
        return st;
    if (item->kind != LAB_V_TENSOR) {
        char *text = NULL;
        if ((st = lab__eval_format(ev, node, key, true, &text)) == DL_OK)
            st = fail(ev, node, "%s%s[%s] is %s, not a tensor", name,
                      lab__eval_is_plain_name(b->base) ? "" : "[...]", text,
                      lab_vkind_a(item->kind));
        free(text);
        return st;
    }
    *var_p = item;
    *name_p = name;
    view_init(v, item->t);
    return DL_OK;
}

/* lab__eval_view of node; part: node is a subscript a later one in the
 * same brackets follows (m[0] of m[0, 1]), no entry of its own. */
static dl_status_t view_of_node(lab_eval_t *ev, const json_t *node, bool part, lab_value_t **var_p,
                                const char **name_p, lab_view_t *v);

dl_status_t lab__eval_view(lab_eval_t *ev, const json_t *node, lab_value_t **var_p,
                           const char **name_p, lab_view_t *v)
{
    return view_of_node(ev, node, false, var_p, name_p, v);
}

static dl_status_t view_of_node(lab_eval_t *ev, const json_t *node, bool part, lab_value_t **var_p,
                                const char **name_p, lab_view_t *v)
{
    const json_t *inner = json_object_get(node, "index");
    if (inner == NULL) {
        const char *name = lab_json_str(node, "name", NULL);
        lab_value_t *var = name != NULL ? lab__eval_var(ev, name) : NULL;
        if (name == NULL)
            return fail(ev, node, "expected a tensor variable or a slice of one");
        if (var == NULL)
            return fail(ev, node, "'%s' is not defined", name);
        if (var->kind != LAB_V_TENSOR)
            return fail(ev, node, "'%s' is %s, not a tensor", name, lab_vkind_a(var->kind));
        *var_p = var;
        *name_p = name;
        view_init(v, var->t);
        return DL_OK;
    }
    lab_bracket_t b;
    lab_value_t *box = NULL, key;
    const char *box_name = NULL;
    dl_status_t st = part ? DL_OK : entry_box(ev, node, &b, &key, &box, &box_name);
    if (st != DL_OK)
        return st;
    if (box != NULL) {
        st = entry_view(ev, node, box, &b, &key, box_name, var_p, name_p, v);
        lab_value_clear(&key);
        return st;
    }
    st = view_of_node(ev, inner, json_object_get(node, "dim") != NULL, var_p, name_p, v);
    if (st == DL_OK)
        st = check_indices(ev, node, v->ndim);
    return st == DL_OK ? view_apply(ev, node, v) : st;
}

void lab__view_tensor(const lab_view_t *v, dl_tensor_t *t)
{
    memset(t, 0, sizeof(*t));
    t->dtype = v->base->dtype;
    t->ndim = v->ndim;
    memcpy(t->shape, v->shape, sizeof(t->shape));
    t->device = v->base->device;
    t->numel = view_numel(v);
    t->data = (uint8_t *)v->base->data + (size_t)v->off * dl_dtype_size(v->base->dtype);
    t->alloc = NULL; /* the variable owns the storage */
}

/* A new tensor with the view's elements (host storage only). */
static dl_status_t view_copy(lab_eval_t *ev, const lab_view_t *v, lab_value_t *out)
{
    dl_tensor_t *t = NULL;
    dl_status_t st = new_tensor(ev, v->base->dtype, v->ndim, v->shape, &t);
    if (st != DL_OK)
        return st;
    size_t es = dl_dtype_size(t->dtype);
    for (size_t i = 0; i < t->numel; i++)
        memcpy((uint8_t *)t->data + i * es, (const uint8_t *)v->base->data + view_at(v, i) * es,
               es);
    lab__eval_set_tensor(out, t);
    return DL_OK;
}

dl_status_t lab__eval_permute(lab_eval_t *ev, const dl_tensor_t *t, const int *perm,
                              lab_value_t *out)
{
    lab_view_t v, p;
    view_init(&v, (dl_tensor_t *)t);
    p = v;
    for (int d = 0; d < v.ndim; d++) {
        p.shape[d] = v.shape[perm[d]];
        p.stride[d] = v.stride[perm[d]];
    }
    return view_copy(ev, &p, out);
}

static bool can_cast(dl_dtype_t from, dl_dtype_t to);
/* How a value is written: t[...] = v (its leading dimensions of size 1
 * dropped), t[mask] = v (so, in index_put's words), or t.copy_(v) and the
 * in-place operations (as it is). */
typedef enum { WRITE_SET, WRITE_INDEX, WRITE_COPY } write_kind_t;
static dl_status_t view_write(lab_eval_t *ev, const json_t *node, const lab_view_t *v,
                              const lab_value_t *value, write_kind_t how);

dl_status_t lab__eval_write_into(lab_eval_t *ev, const json_t *node, dl_tensor_t *dst,
                                 const lab_value_t *value, bool inplace)
{
    if (inplace && value->kind == LAB_V_TENSOR && !can_cast(value->t->dtype, dst->dtype))
        return fail(ev, node, "result type %s can't be cast to the desired output type %s",
                    lab__eval_scalar_type(value->t->dtype), lab__eval_scalar_type(dst->dtype));
    lab_view_t v;
    view_init(&v, dst);
    return view_write(ev, node, &v, value, inplace ? WRITE_COPY : WRITE_INDEX);
}

/* base[slice] (a list's items, or a tensor's view copied out), and a
 * tensor's base[:, i] past a slice. */
static dl_status_t slice_value(lab_eval_t *ev, const json_t *node, const lab_value_t *base,
                               lab_value_t *out)
{
    const char *odd = json_object_get(node, "dim") != NULL        ? "tuple"
                      : json_object_get(node, "newaxis") != NULL  ? "NoneType"
                      : json_object_get(node, "ellipsis") != NULL ? "ellipsis"
                                                                  : NULL;
    if (base->kind == LAB_V_LIST && odd != NULL)
        return fail(ev, node, "list indices must be integers or slices, not %s", odd);
    if (base->kind == LAB_V_STR && odd != NULL)
        return fail(ev, node, "string indices must be integers, not '%s'", odd);
    if (base->kind == LAB_V_LIST) {
        int64_t start, step, count;
        dl_status_t st = slice_bounds(ev, node, (int64_t)base->n, true, &start, &step, &count);
        if (st != DL_OK)
            return st;
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_LIST;
        out->tuple = base->tuple; /* a tuple's slice is a tuple, a torch.Size's one */
        if (lab__eval_is_size(base))
            snprintf(out->name, sizeof(out->name), "%s", LAB_SIZE);
        out->items = calloc(count > 0 ? (size_t)count : 1, sizeof(*out->items));
        if (out->items == NULL)
            return DL_ERR_NOMEM;
        for (int64_t k = 0; k < count; k++) {
            st = lab_value_copy(&base->items[start + k * step], alloc_of(ev), &out->items[k]);
            if (st != DL_OK) {
                lab_value_clear(out);
                return st;
            }
            out->n = (size_t)k + 1;
        }
        return DL_OK;
    }
    if (base->kind == LAB_V_STR && json_object_get(node, "dim") == NULL) {
        int64_t start, step, count;
        const char *t = base->s != NULL ? base->s : "";
        dl_status_t st =
            slice_bounds(ev, node, lab__eval_str_len(t, strlen(t)), true, &start, &step, &count);
        return st == DL_OK ? lab__eval_str_index(ev, node, base, start, step, count, out) : st;
    }
    if (base->kind != LAB_V_TENSOR)
        return fail(ev, node, "only tensors, lists and strings can be sliced, not %s",
                    lab_vkind_a(base->kind));
    lab_value_t h;
    dl_status_t st = lab__eval_host_view(ev, base, &h);
    if (st != DL_OK)
        return st;
    lab_view_t v;
    view_init(&v, h.t);
    if ((st = view_apply(ev, node, &v)) == DL_OK)
        st = view_copy(ev, &v, out);
    lab_value_clear(&h);
    return st == DL_OK && on_gpu(base) ? lab__eval_to_device(ev, out, base->t->device) : st;
}

/* Whether a value of dtype from may be written into dtype to by an
 * in-place operation (torch's can_cast: no float into an integer, nothing
 * but bool into bool). */
static bool can_cast(dl_dtype_t from, dl_dtype_t to)
{
    if (dl_dtype_is_float(from) && !dl_dtype_is_float(to))
        return false;
    return !(to == DL_BOOL && from != DL_BOOL);
}

/* Whether a tensor of t's shape broadcasts to the view's (torch's rule:
 * from the right, each size equal or 1, and no more dimensions). */
/* t.copy_(v) of a value that does not broadcast to t's shape, in the
 * words of torch's element-wise loops. */
static dl_status_t copy_shape_fail(lab_eval_t *ev, const json_t *node, const dl_tensor_t *t,
                                   const lab_view_t *v)
{
    int nd = t->ndim > v->ndim ? t->ndim : v->ndim;
    int64_t shape[DL_MAX_DIMS];
    for (int d = 1; d <= nd; d++) {
        int64_t a = d <= v->ndim ? v->shape[v->ndim - d] : 1;
        int64_t b = d <= t->ndim ? t->shape[t->ndim - d] : 1;
        if (a != b && a != 1 && b != 1)
            return fail(ev, node,
                        "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                        "non-singleton dimension %d",
                        (long long)a, (long long)b, nd - d);
        shape[nd - d] = a == 1 ? b : a;
    }
    char want[96], got[96];
    lab__eval_shape_text(v->ndim, v->shape, want, sizeof(want));
    lab__eval_shape_text(nd, shape, got, sizeof(got));
    return fail(ev, node, "output with shape %s doesn't match the broadcast shape %s", want, got);
}

static bool same_shape(const dl_tensor_t *t, const lab_view_t *v)
{
    bool same = t->ndim == v->ndim;
    for (int d = 0; same && d < v->ndim; d++)
        same = t->shape[d] == v->shape[d];
    return same;
}

static bool broadcasts_to(const dl_tensor_t *t, const lab_view_t *v)
{
    if (t->ndim > v->ndim)
        return false;
    for (int d = 1; d <= t->ndim; d++) {
        int64_t s = t->shape[t->ndim - d];
        if (s != 1 && s != v->shape[v->ndim - d])
            return false;
    }
    return true;
}

/* Writes value (a number, or a tensor that broadcasts to the view's
 * shape, m[0:2] = row) into the view, cast to its dtype; how says which
 * of torch's rules and words apply (write_kind_t). */
static dl_status_t view_write(lab_eval_t *ev, const json_t *node, const lab_view_t *v,
                              const lab_value_t *value, write_kind_t how)
{
    size_t n = view_numel(v);
    bool spread = false; /* the value repeats over the view (broadcast) */
    dl_tensor_t shown;   /* the value's shape as torch compares it */
    if (value->kind == LAB_V_TENSOR) {
        shown = *value->t;
        int lead = 0;
        while (how != WRITE_COPY && lead < shown.ndim && shown.shape[lead] == 1)
            lead++;
        memmove(shown.shape, shown.shape + lead, (size_t)(shown.ndim - lead) * sizeof(int64_t));
        shown.ndim -= lead;
        bool same = shown.ndim == v->ndim;
        for (int d = 0; same && d < v->ndim; d++)
            same = shown.shape[d] == v->shape[d];
        spread = !same;
    }
    if (spread) {
        if (!broadcasts_to(&shown, v)) {
            /* torch's words, for each of its two checks */
            const dl_tensor_t *t = &shown;
            char vs[96], is[96];
            lab__eval_shape_text(t->ndim, t->shape, vs, sizeof(vs));
            lab__eval_shape_text(v->ndim, v->shape, is, sizeof(is));
            if (how == WRITE_COPY)
                return copy_shape_fail(ev, node, t, v);
            if (t->ndim > v->ndim && how == WRITE_INDEX)
                return fail(ev, node,
                            "shape mismatch: value tensor of shape %s cannot be broadcast to "
                            "indexing result of shape %s",
                            vs, is);
            if (t->ndim > v->ndim)
                return fail(ev, node,
                            "expand(torch.%sTensor{%s}, size=%s): the number of sizes provided "
                            "(%d) must be greater or equal to the number of dimensions in the "
                            "tensor (%d)",
                            lab__eval_scalar_type(t->dtype), vs, is, v->ndim, t->ndim);
            int d = 1;
            while (t->shape[t->ndim - d] == 1 || t->shape[t->ndim - d] == v->shape[v->ndim - d])
                d++;
            return fail(ev, node,
                        "The expanded size of the tensor (%lld) must match the existing size "
                        "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
                        "sizes: %s",
                        (long long)v->shape[v->ndim - d], (long long)t->shape[t->ndim - d],
                        v->ndim - d, is, vs);
        }
    }
    if (value->kind != LAB_V_TENSOR && value->kind != LAB_V_INT && value->kind != LAB_V_FLOAT &&
        value->kind != LAB_V_BOOL)
        return fail(ev, node, "can assign a number or a tensor, not %s", lab_vkind_a(value->kind));
    dl_dtype_t dt = v->base->dtype;
    const char *tname;
    if (value->kind != LAB_V_TENSOR && !number_fits(dt, value, false, &tname))
        return fail_overflow(ev, node, tname);
    bool fl_src = value->kind == LAB_V_TENSOR ? dl_dtype_is_float(value->t->dtype)
                                              : value->kind == LAB_V_FLOAT;
    for (size_t i = 0; i < n; i++) {
        size_t at = view_at(v, i);
        size_t from = spread ? broadcast_at(value, v->ndim, v->shape, i) : i;
        if (dl_dtype_is_float(dt) || fl_src)
            dl_dtype_set(dt, v->base->data, at, elem(value, from));
        else
            dl_dtype_set_i64(dt, v->base->data, at, elem_i(value, from));
    }
    return DL_OK;
}

/* Writing into a tensor on a GPU (t += 1, t[0] = 5, t.zero_()) is done on
 * a host copy standing in for it as var->t; write_back then copies its
 * bytes into the GPU tensor's own memory and puts that tensor back. The
 * memory stays the same, not a new tensor: an async collective may still
 * be using it, as it would be in torch. A value on a GPU is read from a
 * host copy. Devices mix as in torch: a copy (t[...] = v, t.copy_(v))
 * takes a tensor from any device, an in-place operator only one on the
 * same device or a 0-dimensional cpu tensor. */
static dl_status_t write_on_host(lab_eval_t *ev, const json_t *node, const char *op,
                                 lab_value_t *var, lab_value_t *value, dl_tensor_t **gpu_p)
{
    dl_status_t st;
    if (value->kind == LAB_V_TENSOR && op != NULL &&
        (st = devices_mix(ev, node, var->t, value->t, value->t)) != DL_OK)
        return st;
    if (on_gpu(value)) {
        lab_value_t h;
        st = lab__eval_host_view(ev, value, &h);
        if (st != DL_OK)
            return st;
        lab_value_clear(value);
        *value = h;
    }
    if (on_gpu(var)) {
        dl_tensor_t *h = NULL;
        if (dl_tensor_to(var->t, host_dev, &h) != DL_OK)
            return fail(ev, node, "cannot copy the tensor from the GPU: %s", dl_cuda_last_error());
        *gpu_p = var->t;
        var->t = h;
    }
    return DL_OK;
}

static dl_status_t write_back(lab_eval_t *ev, const json_t *node, lab_value_t *var,
                              dl_tensor_t *gpu, dl_status_t st)
{
    if (st == DL_OK && dl_cuda_copy(gpu->data, gpu->device, var->t->data, host_dev,
                                    dl_tensor_nbytes(gpu)) != DL_OK)
        st = fail(ev, node, "cannot copy the tensor to the GPU: %s", dl_cuda_last_error());
    dl_tensor_free(var->t);
    var->t = gpu;
    return st;
}

/* Whether an expression runs nothing but reads and operators, so that
 * evaluating it twice does what once does (a call might print). */
static bool pure(const json_t *n)
{
    size_t i;
    const char *key;
    json_t *val;
    if (json_is_array(n)) {
        json_array_foreach(n, i, val)
        {
            if (!pure(val))
                return false;
        }
        return true;
    }
    if (!json_is_object(n))
        return true;
    static const char *const makers[] = {"tensor", "arange", "zeros", "ones", "full",
                                         "bool",   "long",   "int",   "float"};
    const char *call = lab_json_str(n, "call", NULL);
    bool maker = false; /* torch.tensor([...]), mask.bool(): they only make a value */
    for (size_t k = 0; call != NULL && k < sizeof(makers) / sizeof(makers[0]); k++)
        maker = maker || strcmp(call, makers[k]) == 0;
    if ((call != NULL && !maker) || json_object_get(n, "comp") != NULL ||
        json_object_get(n, "callee") != NULL)
        return false;
    json_object_foreach((json_t *)n, key, val)
    {
        if (!pure(val))
            return false;
    }
    return true;
}

bool lab__eval_is_plain_name(const json_t *n)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)n, key, val)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "col") != 0 && strcmp(key, "line") != 0)
            return false; /* a call, an attribute, ... */
    }
    return json_object_get(n, "name") != NULL;
}

/* Whether node is a variable or a subscript of one that can be taken
 * again as a view without running anything twice (a call in t[f():]). */
static bool plain_view(const json_t *n)
{
    const json_t *base = json_object_get(n, "index");
    if (base != NULL)
        return plain_view(base) && pure(n);
    return lab__eval_is_plain_name(n);
}

static const char overlap_message[] =
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation.";

/* torch refuses a write whose source is part of the memory it writes
 * (t[1:] = t[:-1], t[1:4] += t[0:3]) rather than give a result that
 * depends on the order of its loop; distlab, whose source is a copy,
 * would give the clone()'s result. So where the value is a slice of the
 * written tensor, the two are compared as torch compares them: both
 * dense, ranges of memory that meet but are not the same range with the
 * same strides. (A strided view is too hard for torch's test, which lets
 * it pass; so does distlab.) A 0-dim source of a plain = or of fill_ is
 * a fill in torch, and is let through too; setitem says the write is a
 * plain =, whose source torch strips of leading dimensions of size 1. */
static dl_status_t refuse_partial_overlap(lab_eval_t *ev, const json_t *stmt, const json_t *vnode,
                                          const lab_view_t *dst, bool fill, bool setitem)
{
    lab_value_t *root;
    const char *root_name;
    lab_view_t src;
    if (!plain_view(vnode) || lab__eval_view(ev, vnode, &root, &root_name, &src) != DL_OK)
        return DL_OK; /* computed, or not a tensor's view: a value of its own */
    if (src.base != dst->base || (fill && src.ndim == 0) || !lab__view_contiguous(&src) ||
        !lab__view_contiguous(dst))
        return DL_OK;
    bool same_shape = src.ndim == dst->ndim;
    for (int d = 0; same_shape && d < dst->ndim; d++)
        same_shape = src.shape[d] == dst->shape[d];
    if (setitem && !same_shape) {
        /* t[0] = t[0:1], t[None] = t: torch drops the source's leading
         * dimensions of size 1 and expands it to the target's shape as its
         * expand lays it out (a new leading dimension's stride is the
         * extent of the one after it; a source of no dimensions has
         * strides 0). A source of the target's shape is compared as it
         * is, and a broadcast one is no dense tensor, which torch does not
         * check. An in-place operation compares the source as written. */
        int lead = 0;
        while (lead < src.ndim && src.shape[lead] == 1)
            lead++;
        memmove(src.shape, src.shape + lead, (size_t)(src.ndim - lead) * sizeof(src.shape[0]));
        memmove(src.stride, src.stride + lead, (size_t)(src.ndim - lead) * sizeof(src.stride[0]));
        src.ndim -= lead;
        if (src.ndim > dst->ndim)
            return DL_OK; /* refused for its shape, later */
        int64_t stride[DL_MAX_DIMS];
        for (int i = dst->ndim - 1; i >= 0; i--) {
            int d = src.ndim - (dst->ndim - i);
            if ((d >= 0 ? src.shape[d] : 1) != dst->shape[i])
                return DL_OK;
            stride[i] = src.ndim == 0       ? 0
                        : d >= 0            ? src.stride[d]
                        : i + 1 < dst->ndim ? dst->shape[i + 1] * stride[i + 1]
                                            : 1;
        }
        memcpy(src.shape, dst->shape, (size_t)dst->ndim * sizeof(src.shape[0]));
        memcpy(src.stride, stride, (size_t)dst->ndim * sizeof(src.stride[0]));
        src.ndim = dst->ndim;
    }
    int64_t a0 = dst->off, a1 = a0 + (int64_t)view_numel(dst);
    int64_t b0 = src.off, b1 = b0 + (int64_t)view_numel(&src);
    if (a0 == a1 || b0 == b1 || a1 <= b0 || b1 <= a0)
        return DL_OK;
    bool same = a0 == b0 && a1 == b1 && dst->ndim == src.ndim;
    for (int d = 0; same && d < dst->ndim; d++)
        same = dst->stride[d] == src.stride[d];
    if (same)
        return DL_OK;
    return fail(ev, stmt, "%s", overlap_message);
}

/* torch's index_put refuses a source that shares any memory with the
 * tensor it writes (z[[0]] = z[1]), where the source is dense: the
 * source's view is in the target's memory, and not empty. */
static dl_status_t refuse_any_overlap(lab_eval_t *ev, const json_t *stmt, const json_t *vnode,
                                      const dl_tensor_t *dst)
{
    lab_value_t *root;
    const char *root_name;
    lab_view_t src;
    if (!plain_view(vnode) || lab__eval_view(ev, vnode, &root, &root_name, &src) != DL_OK ||
        src.base != dst || view_numel(&src) == 0 || !lab__view_contiguous(&src))
        return DL_OK;
    return fail(ev, stmt, "%s", overlap_message);
}

/* l += items: items (a list value, emptied) moved onto the end of l. */
static dl_status_t extend_in_place(lab_eval_t *ev, const json_t *stmt, lab_value_t *l,
                                   lab_value_t *items)
{
    if (items->n > LAB_LIST_MAX || l->n + items->n > LAB_LIST_MAX)
        return fail(ev, stmt, "list too long (at most %u items)", LAB_LIST_MAX);
    if (items->n == 0)
        return DL_OK;
    lab_value_t *grown = realloc(l->items, (l->n + items->n) * sizeof(*grown));
    if (grown == NULL)
        return DL_ERR_NOMEM;
    l->items = grown;
    memcpy(l->items + l->n, items->items, items->n * sizeof(*items->items));
    l->n += items->n;
    items->n = 0; /* moved: clearing items frees its array alone */
    return DL_OK;
}

/* l *= n: l's items, then n - 1 copies of them; n <= 0 empties it. */
static dl_status_t repeat_in_place(lab_eval_t *ev, const json_t *stmt, lab_value_t *l, int64_t n)
{
    if (n <= 0) {
        for (size_t i = 0; i < l->n; i++)
            lab_value_clear(&l->items[i]);
        l->n = 0;
        return DL_OK;
    }
    size_t was = l->n;
    if (was > 0 && (uint64_t)n > LAB_LIST_MAX / was)
        return fail(ev, stmt, "list too long (at most %u items)", LAB_LIST_MAX);
    lab_value_t copies;
    dl_status_t st = lab_value_new_list(&copies, was * (size_t)(n - 1));
    for (size_t k = 0; st == DL_OK && k < was * (size_t)(n - 1); k++)
        if ((st = lab_value_copy(&l->items[k % was], alloc_of(ev), &copies.items[k])) == DL_OK)
            copies.n++;
    if (st == DL_OK)
        st = extend_in_place(ev, stmt, l, &copies);
    lab_value_clear(&copies);
    return st;
}

/* l[i] += x or d[k] += x of an item that is no tensor: Python rebinds
 * the item to the result. */
static dl_status_t rebind_item(lab_eval_t *ev, const json_t *stmt, const char *op,
                               lab_value_t *item, const lab_value_t *value)
{
    lab_value_t r;
    dl_status_t st = arith(ev, stmt, op, item, value, &r);
    if (st == DL_OK) {
        lab_value_clear(item);
        *item = r;
    }
    return st;
}

/* t.add_(x, alpha=a) and t.sub_(x, alpha=a): where t is a whole host
 * tensor of float32 or float64 and x one of its dtype and shape, done here
 * in one rounding a element (a fused multiply-add, as torch's kernel and
 * fuse_alpha in eval_math.c), and *fused_p set; anywhere else *value
 * becomes a * x, for the statement t += a * x (or -=) to add. */
static dl_status_t scale_by_alpha(lab_eval_t *ev, const json_t *anode, const json_t *target,
                                  lab_value_t *var, const char *op, lab_value_t *value,
                                  bool *fused_p)
{
    *fused_p = false;
    lab_value_t a;
    dl_status_t st = lab_eval_expr(ev, anode, &a);
    if (st != DL_OK)
        return st;
    dl_tensor_t *t = var->kind == LAB_V_TENSOR ? var->t : NULL;
    const dl_tensor_t *x = value->kind == LAB_V_TENSOR ? value->t : NULL;
    bool ints =
        t != NULL && !dl_dtype_is_float(t->dtype) && (x == NULL || !dl_dtype_is_float(x->dtype));
    if (!lab__eval_is_number(&a))
        st = fail(ev, anode, "alpha must be a number, not %s", lab__eval_type_name(&a));
    else if (a.kind == LAB_V_BOOL && (t == NULL || t->dtype != DL_BOOL))
        st = fail(ev, anode, "Boolean alpha only supported for Boolean results.");
    else if (ints && a.kind == LAB_V_FLOAT)
        st =
            fail(ev, anode,
                 "For integral input tensors, argument alpha must not be a floating point number.");
    if (st != DL_OK) {
        lab_value_clear(&a);
        return st;
    }
    if (target == NULL && t != NULL && x != NULL && t->device.type == DL_DEVICE_CPU &&
        x->device.type == DL_DEVICE_CPU && (t->dtype == DL_FLOAT32 || t->dtype == DL_FLOAT64) &&
        x->dtype == t->dtype && x->ndim == t->ndim &&
        memcmp(x->shape, t->shape, (size_t)t->ndim * sizeof(t->shape[0])) == 0) {
        double al = a.kind == LAB_V_FLOAT ? a.f : (double)a.i;
        lab__eval_fma_into(t, x, op != NULL && op[0] == '-' ? -al : al);
        *fused_p = true;
        lab_value_clear(&a);
        return DL_OK;
    }
    lab_value_t scaled;
    st = arith(ev, anode, "*", &a, value, &scaled);
    lab_value_clear(&a);
    if (st == DL_OK) {
        lab_value_clear(value);
        *value = scaled;
    }
    return st;
}

/* l[i:j] = x and l[i:j] op= x, c what l names: the list methods' slice
 * assignment, with the value (taken over) or, for op=, what Python
 * computes, l[i:j] op x. */
static dl_status_t store_slice(lab_eval_t *ev, const json_t *stmt, const json_t *target,
                               const char *op, const char *method, const lab_value_t *c,
                               lab_value_t *value)
{
    if (method != NULL)
        return fail(ev, stmt, "'%s' object has no attribute '%s'", lab__eval_type_name(c), method);
    lab_value_t args[2] = {{0}};
    dl_status_t st = lab__eval_slice_tuple(ev, target, &args[0]);
    if (st != DL_OK)
        return st;
    if (op != NULL) {
        /* l[i:j] read with the parts just computed (bound in a scope of
         * their own, under names no line can spell), so that i and j run
         * once, as in Python */
        static const char *const parts[] = {"start", "stop", "step"};
        static const char *const names[] = {"slice start", "slice stop", "slice step"};
        const json_t *sl = json_object_get(target, "slice");
        json_t *read = json_copy((json_t *)target), *rsl = json_object();
        lab_scope_t sc = {.up = ev->scope};
        if (read == NULL || rsl == NULL || json_object_set(read, "slice", rsl) != 0)
            st = DL_ERR_NOMEM;
        for (size_t k = 0; k < 3 && st == DL_OK; k++) {
            const json_t *part = json_object_get(sl, parts[k]);
            lab_value_t copy = {0};
            if (part == NULL)
                continue;
            if (json_object_set_new(rsl, parts[k], lab__eval_name_at(part, names[k])) != 0)
                st = DL_ERR_NOMEM;
            else if ((st = lab_value_copy(&args[0].items[k], alloc_of(ev), &copy)) == DL_OK &&
                     (st = lab_vars_set(&sc.vars, names[k], &copy)) != DL_OK)
                lab_value_clear(&copy);
        }
        lab_value_t cur = {0};
        if (st == DL_OK) {
            lab_scope_t *saved = ev->scope;
            ev->scope = &sc;
            st = lab_eval_expr(ev, read, &cur);
            ev->scope = saved;
        }
        lab_vars_clear(&sc.vars);
        json_decref(rsl);
        json_decref(read);
        if (st == DL_OK)
            st = arith(ev, stmt, op, &cur, value, &args[1]);
        lab_value_clear(&cur);
    } else {
        args[1] = *value;
        memset(value, 0, sizeof(*value));
    }
    if (st != DL_OK) {
        lab_value_clear(&args[0]);
        return st;
    }
    return lab__eval_item_method(ev, target, json_object_get(target, "index"), LAB_EVAL_SETSLICE,
                                 args, 2);
}

dl_status_t lab__eval_store(lab_eval_t *ev, const json_t *stmt, const char **name_p)
{
    json_t *literal_target = NULL; /* the target with its index evaluated, when it ran a call */
    lab_value_t key = {0};         /* an entry's key or index, evaluated once */
    const char *name = lab_json_str(stmt, "name", NULL);
    const char *op = lab_json_str(stmt, "op", NULL);
    const json_t *target = json_object_get(stmt, "target");
    const json_t *vnode = json_object_get(stmt, "value");
    lab_value_t *var = name != NULL ? lab__eval_var(ev, name) : NULL;
    dl_tensor_t *gpu = NULL; /* var's own tensor, while a host copy stands in */
    *name_p = name;
    /* x += 1 in a function makes x local, as in Python: it must be bound
     * there first (t[0] = 1 writes into whichever t it finds, and so does
     * an in-place method, w.add_(g), a call in Python, which binds nothing). */
    if (var != NULL && target == NULL && ev->calls > 0 && ev->scope != NULL &&
        json_object_get(stmt, "method") == NULL && lab_vars_get(&ev->scope->vars, name) == NULL)
        return fail(ev, stmt, "local variable '%s' referenced before assignment", name);
    if (var == NULL)
        return fail(ev, target != NULL ? target : stmt, "'%s' is not defined", name);
    lab_value_t value;
    dl_status_t st = lab_eval_expr(ev, vnode, &value);
    if (st != DL_OK)
        return st;
    const lab_value_t *undefined = lab__eval_undefined_in(&value);
    if (undefined != NULL) {
        st = lab__eval_fail_undefined(ev, vnode, undefined);
        goto out_clear_value;
    }
    const json_t *alpha = json_object_get(stmt, "alpha");
    bool fused = false;
    if (alpha != NULL && (st = scale_by_alpha(ev, alpha, target, var, op, &value, &fused)) != DL_OK)
        goto out_clear_value;
    if (fused)
        goto out_clear_value; /* t.add_(x, alpha=a) done, as torch's kernel does it */
    const char *method = lab_json_str(stmt, "method", NULL);
    if (target == NULL && var->kind != LAB_V_TENSOR && method != NULL) {
        /* x.add_(1) on a number: Python has no such method */
        st = fail(ev, stmt, "'%s' object has no attribute '%s' (%s is not a tensor)",
                  lab_vkind_name(var->kind), method, name);
        goto out_clear_value;
    }
    if (target == NULL && var->kind == LAB_V_LIST && !var->tuple && var->name[0] == '\0' &&
        op != NULL && strcmp(op, "+") == 0 && value.kind == LAB_V_LIST && !var->borrowed &&
        !lab__eval_lent(ev, var->items)) {
        /* l += [x]: Python extends the list in place, the same list (a
         * loop walking it goes on over it, lab__eval_each) */
        st = extend_in_place(ev, stmt, var, &value);
        goto out_clear_value;
    }
    if (target == NULL && var->kind == LAB_V_LIST && !var->tuple && var->name[0] == '\0' &&
        op != NULL && strcmp(op, "*") == 0 && value.kind == LAB_V_INT && !var->borrowed &&
        !lab__eval_lent(ev, var->items)) {
        /* l *= n: Python repeats the list in place (its items stay, copies
         * of them follow here, as l + l copies) */
        st = repeat_in_place(ev, stmt, var, value.i);
        goto out_clear_value;
    }
    if (target == NULL && var->kind != LAB_V_TENSOR) {
        /* x += 1 on a number: Python rebinds x. The same binding stays. */
        lab_value_t r;
        if ((st = arith(ev, stmt, op, var, &value, &r)) == DL_OK) {
            uint64_t binding = var->binding;
            lab_value_clear(var);
            *var = r;
            var->binding = binding;
        }
        goto out_clear_value;
    }
    if (target != NULL && json_object_get(target, "slice") != NULL &&
        json_object_get(target, "dim") == NULL) {
        /* l[i:j] = x of a list (or a tuple, a string, a dict, which
         * refuse it as Python does); a tensor's slice is written below */
        lab_value_t *c = NULL;
        const char *c_name;
        if ((st = entry_of(ev, json_object_get(target, "index"), &c, &c_name)) != DL_OK)
            goto out_clear_value;
        if (c != NULL && c->kind != LAB_V_TENSOR) {
            st = store_slice(ev, stmt, target, op, method, c, &value);
            goto out_clear_value;
        }
    }
    /* The list or dict the target's last brackets index, where they name
     * an entry of it: l[i], d[k], d["n"]["b"], l[0][1] of a list of lists. */
    lab_bracket_t b;
    lab_value_t *box = NULL;
    const char *box_name = NULL;
    bool entry_tensor = false; /* var is the tensor an entry holds, target its subscript */
    if (target != NULL && (var->kind == LAB_V_LIST || var->kind == LAB_V_DICT) &&
        (st = entry_box(ev, target, &b, &key, &box, &box_name)) != DL_OK)
        goto out_clear_value;
    bool deep = box != NULL && !lab__eval_is_plain_name(b.base);
    if (box != NULL && box->kind == LAB_V_LIST) {
        /* l[i] = x replaces the item; l[i] += x and l[i].add_(x) change
         * it as Python runs them: a tensor in place (then the code below
         * runs on the item, as on a variable), a number rebound. */
        int64_t k = -1, i = 0;
        if (box->tuple && method == NULL)
            st = fail(ev, target, "'tuple' object does not support item assignment");
        else if (b.tuple) /* l[0,] = x */
            st = fail(ev, target, "list indices must be integers or slices, not tuple");
        else if ((st = list_index(ev, target, box, &key, &k, &i)) == DL_OK && k < 0)
            /* Python's words: the read of l[i] += x fails first. */
            st = fail(ev, target, "%s %sindex out of range", box->tuple ? "tuple" : "list",
                      method != NULL || op != NULL ? "" : "assignment ");
        if (st != DL_OK)
            goto out_clear_value;
        lab_value_t *item = &box->items[k];
        if (op == NULL && method == NULL) {
            lab_value_clear(item);
            *item = value;
            lab_value_clear(&key);
            return DL_OK;
        }
        if (item->kind != LAB_V_TENSOR && method != NULL) {
            st = fail(ev, stmt, "'%s' object has no attribute '%s' (%s%s[%lld] is not a tensor)",
                      lab_vkind_name(item->kind), method, name, deep ? "[...]" : "", (long long)i);
            goto out_clear_value;
        }
        if (item->kind != LAB_V_TENSOR) {
            st = rebind_item(ev, stmt, op, item, &value);
            goto out_clear_value;
        }
        var = item;
        target = NULL;
    } else if (box != NULL) {
        /* d[k] = x sets the key; d[k] += x and d[k].add_(x) change its
         * value as l[i] += x changes an item */
        lab_value_t *item = NULL;
        if (op == NULL && method == NULL) {
            st = lab__eval_dict_put(ev, target, box, &key, &value);
            goto out_clear_value;
        }
        st = lab__eval_dict_at(ev, target, box, &key, &item);
        if (st == DL_OK && item->kind != LAB_V_TENSOR && method != NULL)
            st = fail(ev, stmt, "'%s' object has no attribute '%s' (the value is not a tensor)",
                      lab_vkind_name(item->kind), method);
        if (st != DL_OK)
            goto out_clear_value;
        if (item->kind != LAB_V_TENSOR) {
            st = rebind_item(ev, stmt, op, item, &value);
            goto out_clear_value;
        }
        var = item;
        target = NULL;
    } else if (target != NULL && (var->kind == LAB_V_LIST || var->kind == LAB_V_DICT)) {
        /* d["t"][0] = x, l[1][0:2] += x: a subscript of a tensor an entry
         * holds, written below as a variable's (the view finds it again,
         * so the subscripts must run nothing) */
        if (!pure(target)) {
            st = fail(ev, target,
                      "a subscript that calls a function, below an entry of a list or dict, is "
                      "not supported here: bind it first (i = f(); %s[...][i] = x)",
                      name);
            goto out_clear_value;
        }
        const json_t *e = target;
        /* a slice's or an ellipsis's brackets name no entry: they follow
         * the tensor's path, the base of their first subscript */
        bool named = lab__eval_bracket_of(e, &b);
        if (!named) {
            while (json_object_get(e, "dim") != NULL)
                e = json_object_get(e, "index");
            b.base = json_object_get(e, "index");
            named = b.base != NULL;
        }
        for (bool first = true; st == DL_OK && named;
             first = false, named = lab__eval_bracket_of(e, &b)) {
            lab_value_t *t = NULL;
            const char *root_name;
            e = b.base;
            if ((st = entry_of(ev, e, &t, &root_name)) != DL_OK || t == NULL)
                break;
            if (t->kind == LAB_V_TENSOR) {
                var = t;
                entry_tensor = first;
                break;
            }
            if (first && t->kind != LAB_V_LIST && t->kind != LAB_V_DICT) {
                st = fail(ev, target, "'%s' object does not support item assignment",
                          lab__eval_type_name(t));
                break;
            }
        }
        if (st != DL_OK)
            goto out_clear_value;
    }
    if (var->kind == LAB_V_LIST || var->kind == LAB_V_DICT) {
        st = fail(ev, target,
                  "'%s' is a %s: %s[%s] = x and %s[%s] += x change an item, but writing into "
                  "part of one (%s[%s][j] = x) is not supported here",
                  name, var->kind == LAB_V_DICT ? "dict" : "list", name,
                  var->kind == LAB_V_DICT ? "k" : "i", name, var->kind == LAB_V_DICT ? "k" : "i",
                  name, var->kind == LAB_V_DICT ? "k" : "i");
        goto out_clear_value;
    }
    if (var->kind == LAB_V_STR) {
        st = fail(ev, target, "'str' object does not support item assignment");
        goto out_clear_value;
    }
    if (var->kind != LAB_V_TENSOR) {
        st = fail(ev, target, "'%s' is %s: only tensors and lists take t[...] = ...", name,
                  lab_vkind_a(var->kind));
        goto out_clear_value;
    }
    if ((st = write_on_host(ev, stmt, op, var, &value, &gpu)) != DL_OK)
        goto out_clear_value;
    if (target != NULL && json_object_get(target, "at") != NULL &&
        json_object_get(target, "dim") == NULL &&
        (json_object_get(json_object_get(target, "index"), "name") != NULL || entry_tensor)) {
        /* t[mask] = x, t[idx] += x: an index that is a tensor or a list.
         * The index is evaluated once: a number goes on below as a
         * literal in a copy of the target. */
        const json_t *at_node = json_object_get(target, "at");
        lab_value_t at;
        if ((st = lab_eval_expr(ev, at_node, &at)) != DL_OK)
            goto out_clear_value;
        if ((st = index_scalar(ev, &at, false)) != DL_OK) {
            lab_value_clear(&at);
            goto out_clear_value;
        }
        bool fancy = lab__eval_is_fancy_index(&at) &&
                     (var->t->ndim > 0 || (at.kind == LAB_V_TENSOR && at.t->ndim == 0));
        if (var->t->ndim == 0 && at.kind == LAB_V_LIST) {
            st = fail(ev, target, "too many indices for tensor of dimension 0"); /* s[[0]] = 1 */
        } else if (fancy && method != NULL) {
            /* t[mask].fill_(0): torch's t[mask] is a copy, which the
             * method would change, leaving t as it was */
            st = fail(ev, target,
                      "%s() here changes a copy: indexing by a mask or a list copies in torch, "
                      "and t keeps its values; write t[...] = v or t[...] op= v",
                      method);
        } else if (fancy) {
            /* index_put refuses a source from the target's memory, but for
             * a mask and a value of no dimensions (masked_fill) */
            if (op == NULL && value.kind == LAB_V_TENSOR &&
                !(lab__eval_is_mask_index(&at) && value.t->ndim == 0))
                st = refuse_any_overlap(ev, stmt, vnode, var->t);
            if (st == DL_OK)
                st = lab__eval_fancy_set(ev, target, var->t, &at, op, &value);
        } else if (at.kind == LAB_V_INT && !pure(at_node) &&
                   (literal_target = json_copy((json_t *)target)) != NULL) {
            json_object_set_new(literal_target, "at",
                                json_pack("{s:I, s:O}", "num", (json_int_t)at.i, "col",
                                          json_object_get(at_node, "col")));
            target = literal_target;
        }
        lab_value_clear(&at);
        if (fancy || st != DL_OK)
            goto out_clear_value;
    }
    lab_view_t v;
    lab_value_t *root;
    const char *root_name;
    if (target != NULL)
        st = lab__eval_view(ev, target, &root, &root_name, &v);
    else
        view_init(&v, var->t);
    if (st == DL_OK && method != NULL && strcmp(method, "fill_") == 0 &&
        value.kind == LAB_V_TENSOR && value.t->ndim != 0)
        st = fail(ev, stmt,
                  "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                  value.t->ndim);
    if (st == DL_OK && method != NULL && strcmp(method, "fill_") == 0 &&
        value.kind == LAB_V_TENSOR) {
        /* torch fills with the value's item(), a number that must fit */
        lab_value_t h, item;
        if ((st = lab__eval_host_view(ev, &value, &h)) == DL_OK) {
            lab__eval_item(h.t, &item);
            lab_value_clear(&h);
            lab_value_clear(&value);
            value = item;
        }
    }
    if (st != DL_OK ||
        (st = refuse_partial_overlap(ev, stmt, vnode, &v,
                                     (op == NULL && method == NULL) ||
                                         (method != NULL && strcmp(method, "fill_") == 0),
                                     op == NULL && method == NULL)) != DL_OK)
        goto out_clear_value;
    if (op != NULL) {
        /* In place, as torch's add_ and friends: the result keeps the
         * tensor's dtype and shape. */
        lab_value_t cur, r;
        if ((st = view_copy(ev, &v, &cur)) != DL_OK)
            goto out_clear_value;
        st = arith(ev, stmt, op, &cur, &value, &r);
        lab_value_clear(&cur);
        if (st != DL_OK)
            goto out_clear_value;
        if (!can_cast(r.t->dtype, v.base->dtype))
            st = fail(ev, stmt, "result type %s can't be cast to the desired output type %s",
                      lab__eval_scalar_type(r.t->dtype), lab__eval_scalar_type(v.base->dtype));
        else if (!same_shape(r.t, &v)) {
            char want[96], got[96];
            lab__eval_shape_text(r.t->ndim, r.t->shape, got, sizeof(got));
            lab__eval_shape_text(v.ndim, v.shape, want, sizeof(want));
            st = fail(ev, stmt, "output with shape %s doesn't match the broadcast shape %s", want,
                      got);
        } else
            st = view_write(ev, stmt, &v, &r, WRITE_COPY);
        lab_value_clear(&r);
        goto out_clear_value;
    }
    st = view_write(ev, target != NULL ? target : stmt, &v, &value,
                    op == NULL && method == NULL ? WRITE_SET : WRITE_COPY);
out_clear_value:
    if (gpu != NULL)
        st = write_back(ev, stmt, var, gpu, st);
    lab_value_clear(&key);
    lab_value_clear(&value);
    json_decref(literal_target);
    return st;
}

/* ---- expressions ---- */

static dl_status_t index_value(lab_eval_t *ev, const json_t *node, const lab_value_t *base,
                               const lab_value_t *at, lab_value_t *out)
{
    if (base->kind == LAB_V_DICT)
        return lab__eval_dict_get(ev, node, base, at, out);
    bool seq = base->kind == LAB_V_LIST || base->kind == LAB_V_STR;
    if (at->kind == LAB_V_TENSOR && (seq || at->t->ndim == 0)) {
        /* t[t.argmax()], l[torch.tensor(1)]: the int it holds */
        lab_value_t x;
        dl_status_t st = lab_value_copy(at, alloc_of(ev), &x);
        if (st == DL_OK)
            st = index_scalar(ev, &x, seq);
        bool done = st != DL_OK || x.kind == LAB_V_INT || seq;
        if (st == DL_OK && x.kind == LAB_V_INT)
            st = index_value(ev, node, base, &x, out);
        else if (st == DL_OK && seq)
            st = fail(ev, node,
                      "only integer tensors of a single element can be converted to an index");
        lab_value_clear(&x);
        if (done)
            return st;
    }
    if (at->kind == LAB_V_BOOL && seq) {
        lab_value_t x = {.kind = LAB_V_INT, .i = at->i}; /* Python's l[True] is l[1] */
        return index_value(ev, node, base, &x, out);
    }
    if (base->kind == LAB_V_TENSOR && base->t->ndim == 0 && at->kind == LAB_V_LIST)
        return fail(ev, node, "too many indices for tensor of dimension 0");
    bool mask0 = at->kind == LAB_V_TENSOR && at->t->ndim == 0; /* s[s > 0] */
    if (base->kind == LAB_V_TENSOR && (base->t->ndim > 0 || mask0) &&
        lab__eval_is_fancy_index(at)) {
        /* t[mask], t[idx]: on a host copy of a GPU tensor, moved back */
        ev->fancy_node = node;
        lab_value_t h;
        dl_status_t st = lab__eval_host_view(ev, base, &h);
        if (st != DL_OK)
            return st;
        st = lab__eval_fancy_get(ev, node, h.t, at, out);
        lab_value_clear(&h);
        return st == DL_OK && on_gpu(base) ? lab__eval_to_device(ev, out, base->t->device) : st;
    }
    if (at->kind != LAB_V_INT && (base->kind == LAB_V_LIST || base->kind == LAB_V_STR))
        return fail(ev, node, "%s indices must be integers or slices, not %s",
                    base->kind == LAB_V_STR ? "string"
                    : base->tuple           ? "tuple"
                                            : "list",
                    lab__eval_type_name(at));
    if (at->kind == LAB_V_TENSOR)
        return fail(ev, node, "tensors used as indices must be long, byte or bool tensors");
    if (at->kind != LAB_V_INT)
        return fail(ev, node, "an index must be an integer (or a bool or integer tensor)");
    if (base->kind == LAB_V_LIST) {
        int64_t i = at->i < 0 ? at->i + (int64_t)base->n : at->i;
        if (i < 0 || i >= (int64_t)base->n)
            return fail(ev, node, "%s index out of range", base->tuple ? "tuple" : "list");
        return lab_value_copy(&base->items[i], alloc_of(ev), out);
    }
    if (base->kind == LAB_V_STR) {
        const char *t = base->s != NULL ? base->s : "";
        int64_t n = lab__eval_str_len(t, strlen(t));
        int64_t i = at->i < 0 ? at->i + n : at->i;
        if (i < 0 || i >= n)
            return fail(ev, node, "string index out of range");
        return lab__eval_str_index(ev, node, base, i, 1, 1, out);
    }
    if (base->kind == LAB_V_TENSOR && base->t->ndim == 0)
        return fail(ev, node,
                    "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                    "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    if (base->kind != LAB_V_TENSOR)
        return fail(ev, node, "'%s' object is not subscriptable", lab__eval_type_name(base));
    if (on_gpu(base)) {
        /* The row of a host copy, moved to the tensor's GPU. */
        lab_value_t h;
        dl_status_t st = lab__eval_host_view(ev, base, &h);
        if (st != DL_OK)
            return st;
        st = index_value(ev, node, &h, at, out);
        lab_value_clear(&h);
        return st == DL_OK ? lab__eval_to_device(ev, out, base->t->device) : st;
    }
    const dl_tensor_t *t = base->t;
    int64_t n = t->shape[0], i = at->i < 0 ? at->i + n : at->i;
    if (i < 0 || i >= n)
        return fail(ev, node, "index %lld is out of bounds for dimension 0 with size %lld",
                    (long long)at->i, (long long)n);
    /* The row (a copy): one element for 1-D, a slice otherwise. */
    dl_tensor_t *row = NULL;
    dl_status_t st = new_tensor(ev, t->dtype, t->ndim - 1, t->shape + 1, &row);
    if (st != DL_OK)
        return st;
    size_t nb = dl_tensor_nbytes(row);
    if (nb > 0)
        memcpy(row->data, (const uint8_t *)t->data + (size_t)i * nb, nb);
    lab__eval_set_tensor(out, row);
    return DL_OK;
}

dl_status_t lab__eval_row(lab_eval_t *ev, const json_t *node, const lab_value_t *base, int64_t i,
                          lab_value_t *out)
{
    lab_value_t at = {.kind = LAB_V_INT, .i = i};
    return index_value(ev, node, base, &at, out);
}

bool lab__eval_is_op_word(const char *name, dl_op_t *op)
{
    /* ReduceOp.SUM, as the parser writes dist.ReduceOp.SUM */
    return strncmp(name, "ReduceOp.", 9) == 0 && dl_op_parse(name + 9, op) == DL_OK;
}

bool lab__eval_is_builtin(const char *name)
{
    return strcmp(name, "rank") == 0 || strcmp(name, "world_size") == 0;
}

int64_t lab__eval_builtin_value(const lab_eval_t *ev, const char *name)
{
    return strcmp(name, "rank") == 0 ? ev->r->rank : ev->r->size;
}

/* a + b - c ...: a chain node's terms folded left to right. Errors name the
 * operator's column, as torch's traceback would point at it. */
dl_status_t lab__eval_arith(lab_eval_t *ev, const json_t *node, const char *op,
                            const lab_value_t *a, const lab_value_t *b, lab_value_t *out)
{
    return arith(ev, node, op, a, b, out);
}

dl_status_t lab__eval_isclose(lab_eval_t *ev, const json_t *node, const lab_value_t *a,
                              const lab_value_t *b, const lab_close_t *how, lab_value_t *out)
{
    if (a->kind != LAB_V_TENSOR || b->kind != LAB_V_TENSOR)
        return fail(ev, node, "%s(): argument '%s' (position %d) must be Tensor, not %s", how->name,
                    a->kind != LAB_V_TENSOR ? "input" : "other", a->kind != LAB_V_TENSOR ? 1 : 2,
                    lab__eval_type_name(a->kind != LAB_V_TENSOR ? a : b));
    if (a->t->dtype != b->t->dtype && !how->exact)
        return fail(ev, node, "%s did not match %s", lab__eval_scalar_type(a->t->dtype),
                    lab__eval_scalar_type(b->t->dtype));
    bool same = a->t->ndim == b->t->ndim;
    for (int d = 0; same && d < a->t->ndim; d++)
        same = a->t->shape[d] == b->t->shape[d];
    if (how->exact && !same) {
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_BOOL; /* torch.equal of two shapes is False */
        return DL_OK;
    }
    dl_device_t dev;
    lab_value_t ha, hb;
    dl_status_t st = host_pair(ev, node, a, b, &ha, &hb, &dev);
    if (st != DL_OK)
        return st;
    int nd = 0;
    int64_t shape[DL_MAX_DIMS];
    dl_tensor_t *t = NULL;
    if (!broadcast_shape(ev, node, &ha, &hb, &nd, shape)) {
        st = DL_ERR_INVALID;
        nd = 0; /* no elements to walk */
    } else if (!how->all)
        st = new_tensor(ev, DL_BOOL, nd, shape, &t);
    bool every = true;
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    for (size_t i = 0; st == DL_OK && i < n; i++) {
        /* torch's: equal (infinities too), or both NaN where equal_nan, or
         * a finite |a - b| <= atol + rtol * |b|, in the inputs' dtype */
        size_t ia = broadcast_at(&ha, nd, shape, i), ib = broadcast_at(&hb, nd, shape, i);
        double x = elem_as(&ha, ia, DL_FLOAT64), y = elem_as(&hb, ib, DL_FLOAT64);
        bool close;
        if (!dl_dtype_is_float(ha.t->dtype) && !dl_dtype_is_float(hb.t->dtype)) {
            /* integers: their difference exactly, not two rounded doubles */
            int64_t p = elem_i(&ha, ia), q = elem_i(&hb, ib);
            uint64_t diff = p > q ? (uint64_t)p - (uint64_t)q : (uint64_t)q - (uint64_t)p;
            close = diff == 0 || (double)diff <= how->atol + how->rtol * fabs(y);
        } else if (ha.t->dtype == DL_FLOAT32 && hb.t->dtype == DL_FLOAT32) {
            /* in float32, as torch computes it: a difference may overflow */
            float fx = (float)x, fy = (float)y;
            close = fx == fy || (how->equal_nan && isnan(fx) && isnan(fy)) ||
                    (isfinite(fx - fy) &&
                     fabsf(fx - fy) <= (float)how->atol + (float)how->rtol * fabsf(fy));
        } else {
            close = x == y || (how->equal_nan && isnan(x) && isnan(y)) ||
                    (isfinite(x - y) && fabs(x - y) <= how->atol + how->rtol * fabs(y));
        }
        if (t != NULL)
            dl_dtype_set_i64(DL_BOOL, t->data, i, close);
        every = every && close;
    }
    lab_value_clear(&ha);
    lab_value_clear(&hb);
    if (st != DL_OK) {
        dl_tensor_free(t);
        return st;
    }
    if (how->all) {
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_BOOL;
        out->i = every;
        return DL_OK;
    }
    lab__eval_set_tensor(out, t);
    return lab__eval_to_device(ev, out, dev);
}

/* The dtype torch.where gives two numbers: bool of two bools, float32 (the
 * default) where a float is, else int64. */
static dl_dtype_t numbers_dtype(const lab_value_t *a, const lab_value_t *b)
{
    if (a->kind == LAB_V_BOOL && b->kind == LAB_V_BOOL)
        return DL_BOOL;
    return a->kind == LAB_V_FLOAT || b->kind == LAB_V_FLOAT ? DL_FLOAT32 : DL_INT64;
}

dl_status_t lab__eval_where(lab_eval_t *ev, const json_t *node, const lab_value_t *cond,
                            const lab_value_t *a, const lab_value_t *b, lab_value_t *out)
{
    static const char *const roles[] = {"condition", "input", "other"};
    const lab_value_t *args[] = {cond, a, b};
    for (int k = 0; k < 3; k++) {
        const lab_value_t *v = args[k];
        if (lab__eval_undefined(v))
            return lab__eval_fail_undefined(ev, node, v);
        if (v->kind != LAB_V_TENSOR &&
            (k == 0 || (v->kind != LAB_V_INT && v->kind != LAB_V_FLOAT && v->kind != LAB_V_BOOL)))
            return fail(ev, node, "where(): argument '%s' (position %d) must be Tensor, not %s",
                        roles[k], k + 1, lab__eval_type_name(v));
    }
    if (cond->t->dtype != DL_BOOL)
        return fail(ev, node,
                    "where expected condition to be a boolean tensor, but got a tensor with "
                    "dtype %s",
                    lab__eval_scalar_type(cond->t->dtype));
    /* Devices mix as in arithmetic; on a GPU, host copies compute and the
     * result goes back. */
    dl_status_t st = DL_OK;
    for (int k = 1; k < 3 && st == DL_OK; k++)
        if (args[k]->kind == LAB_V_TENSOR)
            st = devices_mix(ev, node, cond->t, args[k]->t, args[k]->t);
    if (st == DL_OK && a->kind == LAB_V_TENSOR && b->kind == LAB_V_TENSOR)
        st = devices_mix(ev, node, a->t, b->t, b->t);
    if (st != DL_OK)
        return st;
    dl_device_t dev = cond->t->device;
    lab_value_t h[3] = {{0}};
    st = host_views(ev, args, h, &dev);
    int nd = 0, nd2 = 0;
    int64_t ab[DL_MAX_DIMS], shape[DL_MAX_DIMS];
    dl_tensor_t *t = NULL;
    if (st == DL_OK && broadcast_shape(ev, node, &h[1], &h[2], &nd, ab)) {
        /* the condition broadcast against a's and b's shape */
        dl_tensor_t abt = {.ndim = nd};
        memcpy(abt.shape, ab, sizeof(ab));
        lab_value_t abv = {.kind = LAB_V_TENSOR, .t = &abt};
        if (!broadcast_shape(ev, node, &h[0], &abv, &nd2, shape))
            st = DL_ERR_INVALID;
    } else if (st == DL_OK) {
        st = DL_ERR_INVALID;
    }
    dl_dtype_t dt = h[1].kind != LAB_V_TENSOR && h[2].kind != LAB_V_TENSOR
                        ? numbers_dtype(&h[1], &h[2])
                        : result_dtype(&h[1], &h[2]);
    /* a number must fit the result's dtype (torch.where(c, int8, 1000)) */
    const char *tname = NULL;
    for (int k = 1; k < 3 && st == DL_OK; k++)
        if (h[k].kind != LAB_V_TENSOR && !number_fits(dt, &h[k], false, &tname))
            st = fail_overflow(ev, node, tname);
    if (st == DL_OK && (st = new_tensor(ev, dt, nd2, shape, &t)) == DL_OK) {
        bool fl = dl_dtype_is_float(dt);
        for (size_t i = 0; i < t->numel; i++) {
            bool c = elem_i(&h[0], broadcast_at(&h[0], nd2, shape, i)) != 0;
            const lab_value_t *v = c ? &h[1] : &h[2];
            size_t at = broadcast_at(v, nd2, shape, i);
            if (fl)
                dl_dtype_set(dt, t->data, i, elem_as(v, at, dt));
            else
                dl_dtype_set_i64(dt, t->data, i, elem_i(v, at));
        }
        lab__eval_set_tensor(out, t);
    }
    clear_views(args, h);
    return st == DL_OK ? lab__eval_to_device(ev, out, dev) : st;
}

static dl_status_t eval_chain(lab_eval_t *ev, const json_t *terms, const json_t *ops,
                              lab_value_t *out)
{
    size_t n = json_array_size(terms);
    if (n < 2 || json_array_size(ops) != n - 1)
        return fail(ev, NULL, "bad operator chain");
    /* a chain is all comparisons or all of one level of arithmetic */
    if (lab__eval_is_compare_op(lab_json_str(json_array_get(ops, 0), "op", "")))
        return lab__eval_compare(ev, terms, ops, out);
    lab_value_t acc;
    dl_status_t st = lab_eval_expr(ev, json_array_get(terms, 0), &acc);
    for (size_t i = 1; i < n && st == DL_OK; i++) {
        const json_t *op_node = json_array_get(ops, i - 1);
        const char *op = lab_json_str(op_node, "op", "");
        lab_value_t rhs, next;
        if ((st = lab_eval_expr(ev, json_array_get(terms, i), &rhs)) != DL_OK)
            break;
        st = strcmp(op, "@") == 0 ? lab__eval_matmul(ev, op_node, &acc, &rhs, &next)
                                  : arith(ev, op_node, op, &acc, &rhs, &next);
        lab_value_clear(&rhs);
        if (st != DL_OK)
            break;
        lab_value_clear(&acc);
        acc = next;
    }
    if (st != DL_OK) {
        lab_value_clear(&acc);
        return st;
    }
    *out = acc;
    return DL_OK;
}

dl_status_t lab__eval_if_exp_branch(lab_eval_t *ev, const json_t *node, const json_t **branch_p)
{
    size_t i;
    const json_t *pair;
    json_array_foreach(json_object_get(node, "if_exp"), i, pair)
    {
        const json_t *cond = json_array_get(pair, 0);
        lab_value_t c;
        bool yes = false;
        dl_status_t st = lab_eval_expr(ev, cond, &c);
        if (st == DL_OK)
            st = lab__eval_value_truth(ev, cond, &c, &yes);
        lab_value_clear(&c);
        if (st != DL_OK)
            return st;
        if (yes) {
            *branch_p = json_array_get(pair, 1);
            return DL_OK;
        }
    }
    *branch_p = json_object_get(node, "else");
    return DL_OK;
}

dl_status_t lab_eval_expr(lab_eval_t *ev, const json_t *node, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    json_t *v;
    dl_status_t st;
    if ((v = json_object_get(node, "num")) != NULL) {
        if (json_is_integer(v) && json_object_get(node, "float") == NULL) {
            out->kind = LAB_V_INT;
            out->i = json_integer_value(v);
        } else {
            out->kind = LAB_V_FLOAT;
            out->f = json_number_value(v);
        }
        return DL_OK;
    }
    if ((v = json_object_get(node, "bool")) != NULL) {
        out->kind = LAB_V_BOOL;
        out->i = json_is_true(v);
        return DL_OK;
    }
    if ((v = json_object_get(node, "name")) != NULL) {
        const char *name = json_string_value(v);
        if (name == NULL)
            return fail(ev, node, "bad name");
        /* A function's local variable may be named rank (the tutorial's
         * rank = dist.get_rank()); it hides the rank's own. */
        lab_value_t *var = lab__eval_var(ev, name);
        if (var == NULL && lab__eval_is_builtin(name)) {
            out->kind = LAB_V_INT;
            out->i = lab__eval_builtin_value(ev, name);
            return DL_OK;
        }
        if (var == NULL && strcmp(name, "None") == 0)
            return DL_OK; /* LAB_V_NONE */
        if (var == NULL && lab__eval_is_world_group(name))
            return lab__eval_world_group(ev, out);
        dl_status_t st;
        if (var == NULL && lab__eval_type_word(name, out, &st))
            return st; /* type(x) == int */
        dl_op_t op;
        if (var == NULL && lab__eval_is_op_word(name, &op)) {
            /* dist.ReduceOp.MAX as a value (op = dist.ReduceOp.MAX; for op
             * in [...]), which op= takes back: its text, marked */
            out->kind = LAB_V_STR;
            snprintf(out->name, sizeof(out->name), "%s", LAB_REDUCE_OP);
            out->s = strdup(name);
            return out->s != NULL ? DL_OK : DL_ERR_NOMEM;
        }
        if (var == NULL) {
            /* A bare word: an op or dtype name for the command to read. */
            out->kind = LAB_V_NAME;
            snprintf(out->name, sizeof(out->name), "%s", name);
            out->name_line = (int)lab_json_int(node, "line", 0);
            out->name_col = (int)lab_json_int(node, "col", 0);
            return DL_OK;
        }
        if ((var->kind == LAB_V_WORK || var->kind == LAB_V_GROUP) && var->refs == NULL) {
            /* A handle only its variable may hold: lent, not copied. */
            *out = *var;
            out->borrowed = true;
            return DL_OK;
        }
        return lab_value_copy(var, alloc_of(ev), out);
    }
    if (json_object_get(node, "call") != NULL)
        return call_fn(ev, node, out);
    if (json_object_get(node, "callee") != NULL)
        return lab__eval_call_value(ev, node, out);
    if ((v = json_object_get(node, "str")) != NULL) {
        out->kind = LAB_V_STR;
        out->s = strdup(json_string_value(v) != NULL ? json_string_value(v) : "");
        return out->s != NULL ? DL_OK : DL_ERR_NOMEM;
    }
    if (json_object_get(node, "fstr") != NULL)
        return lab__eval_fstring(ev, node, out);
    if (json_object_get(node, "getenv") != NULL)
        return lab__eval_getenv(ev, node, out);
    if (json_object_get(node, "environ") != NULL)
        return lab__eval_environ(ev, node, out);
    if (json_object_get(node, "comp") != NULL)
        return lab__eval_comprehension(ev, node, out);
    if (json_object_get(node, "dict") != NULL)
        return lab__eval_dict(ev, node, out);
    if ((v = json_object_get(node, "list")) != NULL) {
        size_t n = json_array_size(v);
        out->kind = LAB_V_LIST;
        out->tuple = json_is_true(json_object_get(node, "tuple"));
        out->items = calloc(n ? n : 1, sizeof(*out->items));
        if (out->items == NULL)
            return DL_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            if ((st = lab_eval_expr(ev, json_array_get(v, i), &out->items[i])) != DL_OK) {
                out->n = i;
                lab_value_clear(out);
                return st;
            }
            out->n = i + 1;
        }
        return DL_OK;
    }
    if ((v = json_object_get(node, "neg")) != NULL ||
        (v = json_object_get(node, "invert")) != NULL ||
        (v = json_object_get(node, "pos")) != NULL) {
        lab_value_t inner;
        if ((st = lab_eval_expr(ev, v, &inner)) != DL_OK)
            return st;
        if (lab__eval_undefined(&inner))
            st = lab__eval_fail_undefined(ev, v, &inner);
        else
            st = json_object_get(node, "neg") != NULL      ? lab__eval_negate(ev, node, &inner, out)
                 : json_object_get(node, "invert") != NULL ? invert(ev, node, &inner, out)
                                                           : positive(ev, node, &inner, out);
        lab_value_clear(&inner);
        return st;
    }
    if ((v = json_object_get(node, "index")) != NULL) {
        lab_value_t base, at;
        ev->fancy_node = NULL;
        lab_bracket_t b;
        lab_value_t *d = NULL;
        const char *d_name;
        if (lab__eval_bracket_of(node, &b) && (b.tuple || b.at[0] == NULL) &&
            (st = entry_of(ev, b.base, &d, &d_name)) != DL_OK)
            return st;
        if (d != NULL && d->kind == LAB_V_DICT) {
            /* d[1, 2], d[None]: a dict's key, a tuple or None (a tensor's
             * subscripts otherwise, below); the dict read in place */
            if ((st = lab__eval_bracket_key(ev, &b, &at)) == DL_OK &&
                (st = entry_of(ev, b.base, &d, &d_name)) == DL_OK)
                st = d != NULL && d->kind == LAB_V_DICT
                         ? lab__eval_dict_get(ev, node, d, &at, out)
                         : fail(ev, node, "the dict was replaced while its key ran");
            lab_value_clear(&at);
            return st;
        }
        if ((st = lab_eval_expr(ev, v, &base)) != DL_OK)
            return st;
        if (lab__eval_undefined(&base)) {
            st = lab__eval_fail_undefined(ev, v, &base);
            lab_value_clear(&base);
            return st;
        }
        if (json_object_get(node, "dim") != NULL && ev->fancy_node == v) {
            /* m[[0, 1], 1]: torch pairs the list with the 1 (elements
             * (0, 1) and (1, 1)), where m[[0, 1]][1] would be a row */
            lab_value_clear(&base);
            return paired_fail(ev, node);
        }
        if (base.kind == LAB_V_TENSOR && (st = check_indices(ev, node, base.t->ndim)) != DL_OK) {
            lab_value_clear(&base);
            return st;
        }
        if (base.kind == LAB_V_DICT &&
            (json_object_get(node, "slice") != NULL || json_object_get(node, "dim") != NULL ||
             json_object_get(node, "tuple") != NULL || json_object_get(node, "newaxis") != NULL ||
             json_object_get(node, "ellipsis") != NULL)) {
            /* a slice is no key; d[1, 2] of a dict a call gave would run
             * the call twice, and is read only from a variable */
            st = json_object_get(node, "slice") != NULL ? fail(ev, node, "unhashable type: 'slice'")
                 : json_object_get(node, "ellipsis") != NULL
                     ? fail(ev, node, "an ellipsis as a dict key is not supported here")
                     : fail(ev, node,
                            "a tuple or None key of a dict a call gives is not supported "
                            "here: bind the dict first (d = f(); d[a, b])");
            lab_value_clear(&base);
            return st;
        }
        if (json_object_get(node, "tuple") != NULL &&
            (base.kind == LAB_V_LIST || base.kind == LAB_V_STR)) {
            /* l[0,]: Python indexes with the tuple (0,), which a tensor
             * takes as its one index */
            st = base.kind == LAB_V_LIST
                     ? fail(ev, node, "list indices must be integers or slices, not tuple")
                     : fail(ev, node, "string indices must be integers, not 'tuple'");
            lab_value_clear(&base);
            return st;
        }
        /* A slice, an index past one (m[:, 1]), None or an ellipsis:
         * through a view. */
        if (json_object_get(node, "slice") != NULL || json_object_get(node, "dim") != NULL ||
            json_object_get(node, "newaxis") != NULL || json_object_get(node, "ellipsis") != NULL) {
            st = slice_value(ev, node, &base, out);
            lab_value_clear(&base);
            return st;
        }
        if ((st = lab_eval_expr(ev, json_object_get(node, "at"), &at)) == DL_OK)
            st = index_value(ev, node, &base, &at, out);
        lab_value_clear(&at);
        lab_value_clear(&base);
        return st;
    }
    if ((v = json_object_get(node, "chain")) != NULL)
        return eval_chain(ev, v, json_object_get(node, "ops"), out);
    if ((v = json_object_get(node, "not")) != NULL) {
        bool yes;
        dl_status_t st = lab__eval_truth(ev, v, &yes);
        if (st == DL_OK) {
            memset(out, 0, sizeof(*out));
            out->kind = LAB_V_BOOL;
            out->i = !yes;
        }
        return st;
    }
    if ((v = json_object_get(node, "bool_op")) != NULL) {
        /* Python's and / or: the left value when it decides, else the
         * right one, which is then evaluated only. */
        const json_t *args = json_object_get(node, "args");
        bool is_and = strcmp(json_string_value(v), "and") == 0;
        size_t n = json_array_size(args);
        for (size_t i = 0; i < n; i++) {
            const json_t *arg = json_array_get(args, i);
            dl_status_t st = lab_eval_expr(ev, arg, out);
            if (st != DL_OK || i + 1 == n)
                return st;
            bool yes;
            if ((st = lab__eval_value_truth(ev, arg, out, &yes)) != DL_OK) {
                lab_value_clear(out);
                return st;
            }
            if (yes != is_and)
                return DL_OK;
            lab_value_clear(out);
        }
        return fail(ev, node, "not an expression");
    }
    if (json_object_get(node, "lambda") != NULL) {
        /* lambda x: ..., a function as a def's value is */
        return lab__eval_make_function(ev, node, out);
    }
    if (json_object_get(node, "if_exp") != NULL) {
        /* Python's A if C else B: only the value chosen is evaluated. */
        const json_t *branch = NULL;
        dl_status_t st = lab__eval_if_exp_branch(ev, node, &branch);
        return st != DL_OK ? st : lab_eval_expr(ev, branch, out);
    }
    return fail(ev, node, "not an expression");
}
