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

/* v rounded to dtype dt and read back, as torch's scalar_t holds it. */
static double as_dtype(dl_dtype_t dt, double v)
{
    uint8_t buf[8];
    dl_dtype_set(dt, buf, 0, v);
    return dl_dtype_get(dt, buf, 0);
}

/* Element i of torch's float32 and float64 linspace as its CPU kernel
 * makes it on x86 (AVX2, the capability torch picks on most machines),
 * so that the printed digits are torch's (linspace(-1, 1, 11, dtype=
 * torch.float64) has 5.5511e-17 where 0 would be). The kernel's loop
 * takes two vectors at a time (of 8 floats or 4 doubles) while two fit,
 * and the rest one element at a time. An element alone, and a vector's
 * first, is start + step * i below halfway and end - step * (steps - i -
 * 1) from there, in one rounding (it is compiled to a fused multiply-add);
 * a vector's others are its first plus k * step, rounded twice. */
static double linspace_at(bool f32, double s, double e, double step, int64_t steps, int64_t i)
{
    int64_t half = steps / 2, width = f32 ? 8 : 4, first = i - i % width;
    int64_t paired = steps / (2 * width) * (2 * width);
    int64_t at = i < paired ? first : i;
    double base = at < half
                      ? (f32 ? fmaf((float)step, (float)at, (float)s) : fma(step, (double)at, s))
                      : (f32 ? fmaf((float)-step, (float)(steps - at - 1), (float)e)
                             : fma(-step, (double)(steps - at - 1), e));
    if (at == i)
        return base;
    return f32 ? (double)((float)base + (float)(i - first) * (float)step)
               : base + (double)(i - first) * step;
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
    int64_t shape[1] = {steps};
    dl_status_t st = dl_tensor_new(dt, 1, shape, dl_comm_allocator(ev->r->comm), t_p);
    if (st != DL_OK)
        return fail(ev, node, "cannot allocate a tensor: %s", dl_strerror(st));
    dl_tensor_t *t = *t_p;
    /* As torch's kernel: start and end in the dtype, the step in the
     * dtype's own precision (double for integers), the first half counted
     * up from start and the rest down from end, each in that precision. */
    double start = as_dtype(dt, number(&pos[0])), end = as_dtype(dt, number(&pos[1]));
    if (steps == 1) {
        dl_dtype_set(dt, t->data, 0, start);
    } else if (dt == DL_FLOAT32 || dt == DL_FLOAT64) {
        bool f32 = dt == DL_FLOAT32;
        double step = f32 ? (double)(((float)end - (float)start) / (float)(steps - 1))
                          : (end - start) / (double)(steps - 1);
        for (int64_t i = 0; i < steps; i++)
            dl_dtype_set(dt, t->data, (size_t)i, linspace_at(f32, start, end, step, steps, i));
    } else {
        /* integers: the step in double, the values truncated; 16-bit
         * floats: in float, rounded once */
        double step = (end - start) / (double)(steps - 1);
        int64_t half = steps / 2;
        for (int64_t i = 0; i < steps; i++) {
            double r = i < half ? start + step * (double)i : end - step * (double)(steps - i - 1);
            dl_dtype_set(dt, t->data, (size_t)i, r);
        }
    }
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
            return fail(ev, node, "'%s' is not defined", pos[k].name);
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
