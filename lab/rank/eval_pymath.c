/* Python's math module, which tutorials import beside torch: math.sqrt(2),
 * math.log(x, base), math.floor(x) and the rest of its functions of
 * floats. The parser makes math.NAME(...) a call of "math.NAME" and the
 * constants (math.pi, math.e, math.tau, math.inf, math.nan) numbers. An
 * argument is a number or, as Python converts it, a one-element tensor. */
#include <fenv.h>
#include <math.h>
#include <string.h>

#include "lab/rank/eval.h"

#define fail lab__eval_fail

typedef enum { F1, F2, INT1, BOOL1, LOG } kind_t;

static double degrees(double x)
{
    return x * (180.0 / M_PI);
}

static double radians(double x)
{
    return x * (M_PI / 180.0);
}

typedef struct {
    const char *name;
    kind_t kind;
    double (*f1)(double);
    double (*f2)(double, double);
} func_t;

static const func_t funcs[] = {
    {"sqrt", F1, sqrt, NULL},         {"exp", F1, exp, NULL},         {"log", LOG, log, NULL},
    {"log2", F1, log2, NULL},         {"log10", F1, log10, NULL},     {"log1p", F1, log1p, NULL},
    {"expm1", F1, expm1, NULL},       {"sin", F1, sin, NULL},         {"cos", F1, cos, NULL},
    {"tan", F1, tan, NULL},           {"asin", F1, asin, NULL},       {"acos", F1, acos, NULL},
    {"atan", F1, atan, NULL},         {"sinh", F1, sinh, NULL},       {"cosh", F1, cosh, NULL},
    {"tanh", F1, tanh, NULL},         {"fabs", F1, fabs, NULL},       {"erf", F1, erf, NULL},
    {"degrees", F1, degrees, NULL},   {"radians", F1, radians, NULL}, {"floor", INT1, floor, NULL},
    {"ceil", INT1, ceil, NULL},       {"trunc", INT1, trunc, NULL},   {"pow", F2, NULL, pow},
    {"atan2", F2, NULL, atan2},       {"hypot", F2, NULL, hypot},     {"fmod", F2, NULL, fmod},
    {"copysign", F2, NULL, copysign}, {"isnan", BOOL1, NULL, NULL},   {"isinf", BOOL1, NULL, NULL},
    {"isfinite", BOOL1, NULL, NULL},
};

/* x as Python's float(x) reads it for math. */
static dl_status_t as_float(lab_eval_t *ev, const json_t *node, const char *fn,
                            const lab_value_t *v, double *x_p)
{
    if (lab__eval_undefined(v))
        return lab__eval_fail_undefined(ev, node, v);
    if (lab__eval_is_number(v)) {
        *x_p = v->kind == LAB_V_FLOAT ? v->f : (double)v->i;
        return DL_OK;
    }
    if (v->kind == LAB_V_TENSOR) {
        if (v->t->numel != 1)
            return fail(ev, node, "only one element tensors can be converted to Python scalars");
        lab_value_t h;
        dl_status_t st = lab__eval_host_view(ev, v, &h);
        if (st != DL_OK)
            return st;
        *x_p = dl_dtype_get(h.t->dtype, h.t->data, 0);
        lab_value_clear(&h);
        return DL_OK;
    }
    return fail(ev, node, "math.%s(): must be real number, not %s", fn, lab__eval_type_name(v));
}

/* Python raises ValueError where the C library's call raised the invalid
 * or divide-by-zero exception (an argument outside the domain, a pole:
 * log(0), pow(0, -1)) and OverflowError where it overflowed. */
static dl_status_t checked(lab_eval_t *ev, const json_t *node, double r, lab_value_t *out)
{
    if (fetestexcept(FE_INVALID | FE_DIVBYZERO))
        return fail(ev, node, "math domain error");
    if (fetestexcept(FE_OVERFLOW))
        return fail(ev, node, "math range error");
    out->kind = LAB_V_FLOAT;
    out->f = r;
    return DL_OK;
}

dl_status_t lab__eval_pymath(lab_eval_t *ev, const json_t *node, const char *fn,
                             const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    if (json_object_size(kw) != 0)
        return fail(ev, node, "math.%s() takes no keyword arguments", fn);
    const func_t *row = NULL;
    for (size_t i = 0; row == NULL && i < sizeof(funcs) / sizeof(funcs[0]); i++)
        if (strcmp(fn, funcs[i].name) == 0)
            row = &funcs[i];
    if (row == NULL)
        return fail(ev, node,
                    "math.%s is not supported here (math has sqrt, exp, log, pow, the "
                    "trigonometric functions, floor, ceil and the constants)",
                    fn);
    kind_t kind = row->kind;
    int want = kind == F2 ? 2 : 1;
    if (npos < want || npos > (kind == LOG ? 2 : want))
        return fail(ev, node, "math.%s() takes %s%d argument%s (%d given)", fn,
                    kind == LOG ? "1 or " : "exactly ", kind == LOG ? 2 : want,
                    want == 1 && kind != LOG ? "" : "s", npos);
    double x[2] = {0, 0};
    for (int k = 0; k < npos; k++) {
        dl_status_t st = as_float(ev, node, fn, &pos[k], &x[k]);
        if (st != DL_OK)
            return st;
    }
    feclearexcept(FE_ALL_EXCEPT);
    switch (kind) {
    case BOOL1:
        out->kind = LAB_V_BOOL;
        out->i = fn[2] == 'n' ? isnan(x[0]) : fn[2] == 'i' ? isinf(x[0]) : isfinite(x[0]);
        return DL_OK;
    case INT1: {
        /* floor, ceil and trunc give ints, as Python's do */
        double r = row->f1(x[0]);
        if (isnan(r))
            return fail(ev, node, "cannot convert float NaN to integer");
        if (isinf(r))
            return fail(ev, node, "cannot convert float infinity to integer");
        if (r >= 9.2233720368547758e18 || r < -9.2233720368547758e18)
            return fail(ev, node, "math.%s(): the result is past the shell's 64-bit ints", fn);
        if (pos[0].kind == LAB_V_INT || pos[0].kind == LAB_V_BOOL) {
            out->kind = LAB_V_INT;
            out->i = pos[0].i; /* exact, also past 2^53 */
            return DL_OK;
        }
        out->kind = LAB_V_INT;
        out->i = (int64_t)r;
        return DL_OK;
    }
    case LOG:
        if (x[0] <= 0 || (npos == 2 && (x[1] <= 0 || x[1] == 1)))
            return fail(ev, node,
                        npos == 2 && x[1] == 1 ? "float division by zero" : "math domain error");
        return checked(ev, node, npos == 2 ? log(x[0]) / log(x[1]) : log(x[0]), out);
    case F2: {
        double r = row->f2(x[0], x[1]);
        if (row->f2 == fmod && x[1] == 0)
            return fail(ev, node, "math domain error");
        return checked(ev, node, r, out);
    }
    default:
        return checked(ev, node, row->f1(x[0]), out);
    }
}
