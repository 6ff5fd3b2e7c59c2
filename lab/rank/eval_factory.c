/* torch's factories that lay values out rather than fill them:
 * torch.linspace(start, end, steps) and torch.eye(n, m), with torch's
 * dtypes and its CPU kernel's arithmetic, so that the printed digits are
 * torch's. */
#include <math.h>
#include <string.h>

#include "distlab/comm.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

static double number(const lab_value_t *v)
{
    return v->kind == LAB_V_FLOAT ? v->f : (double)v->i;
}

/* torch's linspace kernel, as it runs on x86 (AVX2, the capability torch
 * picks on most machines), so that the printed digits are torch's
 * (linspace(-1, 1, 11, dtype=torch.float64) has 5.5511e-17 where 0 would
 * be). start and end are in the dtype; the step in the dtype's precision
 * (double for integers). The loop takes two vectors of 32 bytes at a time
 * while two fit, and the rest one element at a time. An element alone,
 * and a vector's first, is start + step * i below halfway and end - step *
 * (steps - i - 1) from there: one rounding in float32 and float64 (it is
 * compiled to a fused multiply-add), a rounding after each operation in
 * float16 and bfloat16 (c10's Half arithmetic, which takes an integer
 * operand in the dtype too), truncated for integers. A
 * vector's others are its first plus k * step, the product and the sum
 * each rounded to the dtype. */
typedef struct {
    dl_dtype_t dt;
    double start, end, step;
    int64_t steps;
} lin_t;

static double lin_scalar(const lin_t *l, int64_t at)
{
    bool up = at < l->steps / 2;
    double n = (double)(up ? at : l->steps - at - 1), d = up ? l->step : -l->step;
    double from = up ? l->start : l->end;
    switch (l->dt) {
    case DL_FLOAT32:
        return fmaf((float)d, (float)n, (float)from);
    case DL_FLOAT16:
    case DL_BFLOAT16:
        /* c10's Half and BFloat16 take an integer operand in their dtype */
        return dl_dtype_round(l->dt, from + dl_dtype_round(l->dt, d * dl_dtype_round(l->dt, n)));
    default:
        return dl_dtype_round(l->dt, fma(d, n, from));
    }
}

static double lin_at(const lin_t *l, int64_t i)
{
    int64_t width = 32 / (int64_t)dl_dtype_size(l->dt), first = i - i % width;
    int64_t paired = l->steps / (2 * width) * (2 * width);
    if (i >= paired || i == first)
        return lin_scalar(l, i);
    double base = lin_scalar(l, first), k = (double)(i - first);
    if (l->dt == DL_FLOAT32)
        return (double)((float)base + (float)k * (float)l->step);
    return dl_dtype_round(
        l->dt, base + dl_dtype_round(dl_dtype_is_float(l->dt) ? l->dt : DL_FLOAT64, k * l->step));
}

static dl_status_t linspace(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                            dl_dtype_t dt, dl_tensor_t **t_p)
{
    if (npos != 3 || !lab__eval_is_number(&pos[0]) || !lab__eval_is_number(&pos[1]) ||
        pos[2].kind != LAB_V_INT)
        return fail(ev, node, "linspace(start, end, steps) takes two numbers and an int");
    int64_t steps = pos[2].i;
    if (steps < 0)
        return fail(ev, node, "number of steps must be non-negative");
    if (steps > (1 << 28))
        return fail(ev, node, "linspace: %lld steps is too many", (long long)steps);
    if (dt == DL_BOOL)
        return fail(ev, node, "\"linspace_cpu\" not implemented for 'Bool'");
    for (int k = 0; k < 2; k++) {
        const char *tname = NULL;
        if (!lab__eval_number_fits(dt, &pos[k], &tname))
            return fail(ev, node, "value cannot be converted to type %s without overflow", tname);
    }
    int64_t shape[1] = {steps};
    dl_status_t st = dl_tensor_new(dt, 1, shape, dl_comm_allocator(ev->r->comm), t_p);
    if (st != DL_OK)
        return fail(ev, node, "cannot allocate a tensor: %s", dl_strerror(st));
    dl_tensor_t *t = *t_p;
    lin_t l = {dt, dl_dtype_round(dt, number(&pos[0])), dl_dtype_round(dt, number(&pos[1])), 0,
               steps};
    if (steps > 1) {
        double n = (double)(steps - 1);
        l.step =
            dt == DL_FLOAT32 ? (double)(((float)l.end - (float)l.start) / (float)n)
            : dl_dtype_is_float(dt)
                ? dl_dtype_round(dt, dl_dtype_round(dt, l.end - l.start) / dl_dtype_round(dt, n))
                : (l.end - l.start) / n;
    }
    for (int64_t i = 0; i < steps; i++)
        dl_dtype_set(dt, t->data, (size_t)i, steps == 1 ? l.start : lin_at(&l, i));
    return DL_OK;
}

static dl_status_t eye(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                       dl_dtype_t dt, dl_tensor_t **t_p)
{
    if (npos < 1 || npos > 2 || pos[0].kind != LAB_V_INT || (npos == 2 && pos[1].kind != LAB_V_INT))
        return fail(ev, node, "eye(n, m=n) takes one or two ints");
    int64_t n = pos[0].i, m = npos == 2 ? pos[1].i : n;
    if (n < 0 || m < 0)
        return fail(ev, node, "%s must be greater or equal to 0, got %lld", n < 0 ? "n" : "m",
                    (long long)(n < 0 ? n : m));
    if (n > 0 && m > (1 << 28) / n)
        return fail(ev, node, "eye: %lld x %lld elements is too many", (long long)n, (long long)m);
    int64_t shape[2] = {n, m};
    dl_status_t st = dl_tensor_new(dt, 2, shape, dl_comm_allocator(ev->r->comm), t_p);
    if (st != DL_OK)
        return fail(ev, node, "cannot allocate a tensor: %s", dl_strerror(st));
    memset((*t_p)->data, 0, dl_tensor_nbytes(*t_p));
    for (int64_t i = 0; i < n && i < m; i++)
        dl_dtype_set(dt, (*t_p)->data, (size_t)(i * m + i), 1);
    return DL_OK;
}

bool lab__eval_is_factory(const char *fn)
{
    return strcmp(fn, "linspace") == 0 || strcmp(fn, "eye") == 0;
}

dl_status_t lab__eval_factory(lab_eval_t *ev, const json_t *node, const char *fn,
                              const lab_value_t *pos, int npos, dl_dtype_t dt, lab_value_t *out)
{
    for (int k = 0; k < npos; k++)
        if (lab__eval_undefined(&pos[k]))
            return lab__eval_fail_undefined(ev, node, &pos[k]);
    dl_tensor_t *t = NULL;
    dl_status_t st =
        fn[0] == 'l' ? linspace(ev, node, pos, npos, dt, &t) : eye(ev, node, pos, npos, dt, &t);
    if (st != DL_OK)
        return st;
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_TENSOR;
    out->t = t;
    return DL_OK;
}
