/* Reduce kernels: every op on every dtype against a scalar reference, the
 * three aliasing shapes, NaN propagation, integer wraparound, half
 * rounding, avg scaling and the dtype rules. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/op.h"

/* A small deterministic generator, so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Fills n elements with values that reach the interesting corners of dt:
 * both signs, the integer limits, and for floats NaN, infinities and
 * signed zeros now and then. */
static void fill_random(dl_dtype_t dt, void *p, size_t n)
{
    static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng();
        if (dl_dtype_is_float(dt)) {
            double v;
            if (r % 16 == 0)
                v = specials[(r >> 8) % (sizeof(specials) / sizeof(specials[0]))];
            else
                v = ((double)(int64_t)(r >> 11) / 0x1p52 - 1.0) * 300.0;
            dl_dtype_set(dt, p, i, v);
        } else if (dt == DL_BOOL) {
            /* Nonzero bytes other than 1 are true too. */
            ((uint8_t *)p)[i] = (uint8_t)(r % 3 == 0 ? 0 : (r >> 8) % 4);
        } else {
            dl_dtype_set_i64(dt, p, i, (int64_t)(r * 0x2545f4914f6cdd1dull));
        }
    }
}

/* The reference: one element at a time through int64 or double, written
 * independently of the kernels' macros. */
static int64_t ref_int(dl_op_t op, int64_t x, int64_t y)
{
    switch (op) {
    case DL_OP_SUM:
    case DL_OP_AVG:
        return (int64_t)((uint64_t)x + (uint64_t)y);
    case DL_OP_PROD:
        return (int64_t)((uint64_t)x * (uint64_t)y);
    case DL_OP_MIN:
        return x < y ? x : y;
    case DL_OP_MAX:
        return x > y ? x : y;
    case DL_OP_BAND:
        return x & y;
    case DL_OP_BOR:
        return x | y;
    case DL_OP_BXOR:
        return x ^ y;
    default:
        fail();
    }
    return 0;
}

static int64_t ref_bool(dl_op_t op, int64_t x, int64_t y)
{
    bool a = x != 0, b = y != 0;
    switch (op) {
    case DL_OP_SUM:
    case DL_OP_MAX:
    case DL_OP_BOR:
        return a || b;
    case DL_OP_PROD:
    case DL_OP_MIN:
    case DL_OP_BAND:
        return a && b;
    case DL_OP_BXOR:
        return a != b;
    default:
        fail();
    }
    return 0;
}

/* For two float32 (or narrower) operands the double result rounded once to
 * float equals the float operation, since double has more than twice
 * float's precision. */
static double ref_float(dl_op_t op, double x, double y)
{
    switch (op) {
    case DL_OP_SUM:
    case DL_OP_AVG:
        return x + y;
    case DL_OP_PROD:
        return x * y;
    case DL_OP_MIN:
        if (isnan(x) || isnan(y))
            return NAN;
        return x < y ? x : y;
    case DL_OP_MAX:
        if (isnan(x) || isnan(y))
            return NAN;
        return x > y ? x : y;
    default:
        fail();
    }
    return 0;
}

/* Checks element i of dst against the reference for a[i] op b[i]. */
static void check_elem(dl_op_t op, dl_dtype_t dt, const void *dst, const void *a, const void *b,
                       size_t i)
{
    if (!dl_dtype_is_float(dt)) {
        int64_t x = dl_dtype_get_i64(dt, a, i), y = dl_dtype_get_i64(dt, b, i);
        int64_t r = dt == DL_BOOL ? ref_bool(op, x, y) : ref_int(op, x, y);
        /* Store the reference to wrap it to dt's width, then compare. */
        uint8_t want[8];
        dl_dtype_set_i64(dt, want, 0, r);
        assert_memory_equal((const uint8_t *)dst + i * dl_dtype_size(dt), want, dl_dtype_size(dt));
        return;
    }
    double x = dl_dtype_get(dt, a, i), y = dl_dtype_get(dt, b, i);
    double r = ref_float(op, x, y);
    if (dt != DL_FLOAT64)
        r = (float)r;
    double got = dl_dtype_get(dt, dst, i);
    if (isnan(r)) {
        assert_true(isnan(got));
        return;
    }
    /* Round the reference to dt the way a store does, then compare values
     * (min and max may pick either of two equal zeros). */
    uint8_t want[8];
    dl_dtype_set(dt, want, 0, r);
    double w = dl_dtype_get(dt, want, 0);
    if (got != w) {
        print_error("%s %s [%zu]: %.17g op %.17g = %.17g, want %.17g\n", dl_op_name(op),
                    dl_dtype_name(dt), i, x, y, got, w);
        fail();
    }
}

static bool op_defined(dl_op_t op, dl_dtype_t dt)
{
    return dl_op_check(op, dt, NULL) == DL_OK;
}

/* ------------------------------------------------------------------------
 * Every op on every dtype, in every aliasing shape
 * ------------------------------------------------------------------------ */

/* Lengths around vector widths, so both the vector body and the scalar
 * tail of each loop run. */
static const size_t lengths[] = {1, 3, 15, 16, 17, 63, 64, 65, 1000};
#define MAXN 1000

static void test_all_ops_out_of_place(void **state)
{
    (void)state;
    static uint8_t a[MAXN * 8], b[MAXN * 8], dst[MAXN * 8];
    for (int op = 0; op < DL_OP__COUNT; op++) {
        for (int dt = 0; dt < DL_DTYPE__COUNT; dt++) {
            if (!op_defined((dl_op_t)op, (dl_dtype_t)dt))
                continue;
            for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
                size_t n = lengths[k];
                fill_random((dl_dtype_t)dt, a, n);
                fill_random((dl_dtype_t)dt, b, n);
                assert_int_equal(dl_reduce((dl_op_t)op, (dl_dtype_t)dt, dst, a, b, n), DL_OK);
                for (size_t i = 0; i < n; i++)
                    check_elem((dl_op_t)op, (dl_dtype_t)dt, dst, a, b, i);
            }
        }
    }
}

static void test_all_ops_in_place(void **state)
{
    (void)state;
    static uint8_t a[MAXN * 8], b[MAXN * 8], acc[MAXN * 8];
    for (int op = 0; op < DL_OP__COUNT; op++) {
        for (int dt = 0; dt < DL_DTYPE__COUNT; dt++) {
            if (!op_defined((dl_op_t)op, (dl_dtype_t)dt))
                continue;
            size_t esz = dl_dtype_size((dl_dtype_t)dt);
            for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
                size_t n = lengths[k];
                fill_random((dl_dtype_t)dt, a, n);
                fill_random((dl_dtype_t)dt, b, n);
                /* dst == a */
                memcpy(acc, a, n * esz);
                assert_int_equal(dl_reduce((dl_op_t)op, (dl_dtype_t)dt, acc, acc, b, n), DL_OK);
                for (size_t i = 0; i < n; i++)
                    check_elem((dl_op_t)op, (dl_dtype_t)dt, acc, a, b, i);
                /* dst == b */
                memcpy(acc, b, n * esz);
                assert_int_equal(dl_reduce((dl_op_t)op, (dl_dtype_t)dt, acc, a, acc, n), DL_OK);
                for (size_t i = 0; i < n; i++)
                    check_elem((dl_op_t)op, (dl_dtype_t)dt, acc, a, b, i);
                /* dst == a == b */
                memcpy(acc, a, n * esz);
                assert_int_equal(dl_reduce((dl_op_t)op, (dl_dtype_t)dt, acc, acc, acc, n), DL_OK);
                for (size_t i = 0; i < n; i++)
                    check_elem((dl_op_t)op, (dl_dtype_t)dt, acc, a, a, i);
            }
        }
    }
}

/* dl_reduce_kernels: the same kernels, so the same bits, as dl_reduce;
 * a pair dl_op_check refuses gets its error and no kernels. */
static void test_kernels(void **state)
{
    (void)state;
    static uint8_t a[MAXN * 8], b[MAXN * 8], dst[MAXN * 8];
    for (int op = 0; op < DL_OP__COUNT; op++) {
        for (int dt = 0; dt < DL_DTYPE__COUNT; dt++) {
            dl_reduce_kernels_t k = {NULL, NULL};
            if (!op_defined((dl_op_t)op, (dl_dtype_t)dt)) {
                assert_int_not_equal(dl_reduce_kernels((dl_op_t)op, (dl_dtype_t)dt, &k), DL_OK);
                assert_null(k.k3);
                continue;
            }
            assert_int_equal(dl_reduce_kernels((dl_op_t)op, (dl_dtype_t)dt, &k), DL_OK);
            size_t n = 65, esz = dl_dtype_size((dl_dtype_t)dt);
            fill_random((dl_dtype_t)dt, a, n);
            fill_random((dl_dtype_t)dt, b, n);
            k.k3(dst, a, b, n);
            for (size_t i = 0; i < n; i++)
                check_elem((dl_op_t)op, (dl_dtype_t)dt, dst, a, b, i);
            memcpy(dst, a, n * esz);
            k.k2(dst, b, n);
            for (size_t i = 0; i < n; i++)
                check_elem((dl_op_t)op, (dl_dtype_t)dt, dst, a, b, i);
        }
    }
}

static void test_inputs_may_overlap(void **state)
{
    (void)state;
    /* a and b are only read, so they may overlap each other. */
    int32_t buf[10], dst[8];
    for (int i = 0; i < 10; i++)
        buf[i] = i;
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_INT32, dst, buf, buf + 2, 8), DL_OK);
    for (int i = 0; i < 8; i++)
        assert_int_equal(dst[i], 2 * i + 2);
}

static void test_partial_overlap_refused(void **state)
{
    (void)state;
    float buf[16] = {0};
    float other[8] = {0};
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_FLOAT32, buf + 1, buf, other, 8), DL_ERR_INVALID);
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_FLOAT32, buf, buf, buf + 4, 8), DL_ERR_INVALID);
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_FLOAT32, buf, other, buf + 7, 8), DL_ERR_INVALID);
    /* Adjacent ranges do not overlap. */
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_FLOAT32, buf, buf, buf + 8, 8), DL_OK);
}

/* ------------------------------------------------------------------------
 * Specific semantics
 * ------------------------------------------------------------------------ */

static void test_nan_propagates(void **state)
{
    (void)state;
    /* NaN on either side wins for min and max, as in torch.minimum. */
    float a[4] = {NAN, 1.0f, NAN, -INFINITY};
    float b[4] = {1.0f, NAN, NAN, NAN};
    float d[4];
    assert_int_equal(dl_reduce(DL_OP_MIN, DL_FLOAT32, d, a, b, 4), DL_OK);
    for (int i = 0; i < 4; i++)
        assert_true(isnan(d[i]));
    assert_int_equal(dl_reduce(DL_OP_MAX, DL_FLOAT32, d, a, b, 4), DL_OK);
    for (int i = 0; i < 4; i++)
        assert_true(isnan(d[i]));
    double da[2] = {NAN, 2.0}, db[2] = {3.0, NAN}, dd[2];
    assert_int_equal(dl_reduce(DL_OP_MIN, DL_FLOAT64, dd, da, db, 2), DL_OK);
    assert_true(isnan(dd[0]) && isnan(dd[1]));
    uint16_t ha[2] = {0x7e00, 0x3c00}, hb[2] = {0x3c00, 0x7e00}, hd[2];
    assert_int_equal(dl_reduce(DL_OP_MAX, DL_FLOAT16, hd, ha, hb, 2), DL_OK);
    assert_int_equal(hd[0] & 0x7e00, 0x7e00);
    assert_int_equal(hd[1] & 0x7e00, 0x7e00);
    assert_int_equal(dl_reduce(DL_OP_MIN, DL_BFLOAT16, hd, (uint16_t[]){0x7fc0, 0x3f80},
                               (uint16_t[]){0x3f80, 0xffc0}, 2),
                     DL_OK);
    assert_int_equal(hd[0] & 0x7f80, 0x7f80);
    assert_int_equal(hd[1] & 0x7f80, 0x7f80);
    /* Without NaNs, infinities order as usual. */
    float x[2] = {-INFINITY, 2.0f}, y[2] = {1.0f, INFINITY};
    assert_int_equal(dl_reduce(DL_OP_MIN, DL_FLOAT32, d, x, y, 2), DL_OK);
    assert_true(d[0] == -INFINITY && d[1] == 2.0f);
}

static void test_integer_wraparound(void **state)
{
    (void)state;
    int32_t a32[2] = {INT32_MAX, INT32_MIN}, b32[2] = {1, -1}, d32[2];
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_INT32, d32, a32, b32, 2), DL_OK);
    assert_int_equal(d32[0], INT32_MIN);
    assert_int_equal(d32[1], INT32_MAX);
    int32_t m32[2] = {65536, INT32_MIN};
    int32_t n32[2] = {65536, -1};
    assert_int_equal(dl_reduce(DL_OP_PROD, DL_INT32, d32, m32, n32, 2), DL_OK);
    assert_int_equal(d32[0], 0);         /* 2^32 wraps to 0 */
    assert_int_equal(d32[1], INT32_MIN); /* -INT32_MIN wraps to itself */

    int64_t a64[1] = {INT64_MAX}, b64[1] = {2}, d64[1];
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_INT64, d64, a64, b64, 1), DL_OK);
    assert_true(d64[0] == INT64_MIN + 1);
    assert_int_equal(dl_reduce(DL_OP_PROD, DL_INT64, d64, a64, b64, 1), DL_OK);
    assert_true(d64[0] == -2);

    int8_t a8[2] = {127, -128}, b8[2] = {1, -1}, d8[2];
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_INT8, d8, a8, b8, 2), DL_OK);
    assert_int_equal(d8[0], -128);
    assert_int_equal(d8[1], 127);
    int8_t p8[1] = {16}, q8[1] = {16};
    assert_int_equal(dl_reduce(DL_OP_PROD, DL_INT8, d8, p8, q8, 1), DL_OK);
    assert_int_equal(d8[0], 0);

    uint8_t u[2] = {250, 16}, v[2] = {10, 17}, du[2];
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_UINT8, du, u, v, 2), DL_OK);
    assert_int_equal(du[0], 4);
    assert_int_equal(du[1], 33);
    assert_int_equal(dl_reduce(DL_OP_PROD, DL_UINT8, du, u, v, 2), DL_OK);
    assert_int_equal(du[0], (250 * 10) % 256);
    assert_int_equal(du[1], (16 * 17) % 256);
    /* uint8 min/max compare as unsigned. */
    assert_int_equal(dl_reduce(DL_OP_MAX, DL_UINT8, du, u, v, 2), DL_OK);
    assert_int_equal(du[0], 250);
}

static void test_bool_logic(void **state)
{
    (void)state;
    /* Bytes 2 and 4 are true too; results are always 0 or 1. */
    uint8_t a[4] = {0, 0, 2, 4}, b[4] = {0, 2, 0, 1}, d[4];
    static const struct {
        dl_op_t op;
        uint8_t want[4];
    } rows[] = {
        {DL_OP_SUM, {0, 1, 1, 1}},  {DL_OP_MAX, {0, 1, 1, 1}}, {DL_OP_BOR, {0, 1, 1, 1}},
        {DL_OP_PROD, {0, 0, 0, 1}}, {DL_OP_MIN, {0, 0, 0, 1}}, {DL_OP_BAND, {0, 0, 0, 1}},
        {DL_OP_BXOR, {0, 1, 1, 0}},
    };
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        assert_int_equal(dl_reduce(rows[k].op, DL_BOOL, d, a, b, 4), DL_OK);
        assert_memory_equal(d, rows[k].want, 4);
    }
}

static void test_half_rounding(void **state)
{
    (void)state;
    /* 2048 + 1 is a tie between 2048 and 2050 in float16: the even 2048.
     * 2048 + 3 = 2051 is a tie between 2050 and 2052: 2052. */
    uint16_t a[3], b[3], d[3];
    dl_dtype_set(DL_FLOAT16, a, 0, 2048);
    dl_dtype_set(DL_FLOAT16, b, 0, 1);
    dl_dtype_set(DL_FLOAT16, a, 1, 2048);
    dl_dtype_set(DL_FLOAT16, b, 1, 3);
    /* 65504 + 16 = 65520 rounds to infinity. */
    dl_dtype_set(DL_FLOAT16, a, 2, 65504);
    dl_dtype_set(DL_FLOAT16, b, 2, 16);
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_FLOAT16, d, a, b, 3), DL_OK);
    assert_true(dl_half_to_float(d[0]) == 2048.0f);
    assert_true(dl_half_to_float(d[1]) == 2052.0f);
    assert_true(isinf(dl_half_to_float(d[2])));

    /* bfloat16 keeps 8 significant bits: 256 + 1 ties to 256, 256 + 3 to 260. */
    dl_dtype_set(DL_BFLOAT16, a, 0, 256);
    dl_dtype_set(DL_BFLOAT16, b, 0, 1);
    dl_dtype_set(DL_BFLOAT16, a, 1, 256);
    dl_dtype_set(DL_BFLOAT16, b, 1, 3);
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_BFLOAT16, d, a, b, 2), DL_OK);
    assert_true(dl_bf16_to_float(d[0]) == 256.0f);
    assert_true(dl_bf16_to_float(d[1]) == 260.0f);
}

static void test_avg_and_scale(void **state)
{
    (void)state;
    /* avg accumulates as a sum; the caller divides once at the end. */
    int32_t a[4] = {7, -7, 5, INT32_MIN}, b[4] = {0, 0, 0, 0};
    assert_int_equal(dl_reduce(DL_OP_AVG, DL_INT32, a, a, b, 4), DL_OK);
    assert_int_equal(dl_op_scale(DL_INT32, a, 3, 2), DL_OK);
    assert_int_equal(a[0], 3);  /* truncation toward zero */
    assert_int_equal(a[1], -3); /* not floor */
    assert_int_equal(a[2], 2);
    /* Dividing by -1 cannot trap on the most negative value. */
    assert_int_equal(dl_op_scale(DL_INT32, a + 3, 1, -1), DL_OK);
    assert_int_equal(a[3], INT32_MIN);
    int64_t l[2] = {INT64_MIN, -9};
    assert_int_equal(dl_op_scale(DL_INT64, l, 2, -1), DL_OK);
    assert_true(l[0] == INT64_MIN && l[1] == 9);
    assert_int_equal(dl_op_scale(DL_INT64, l + 1, 1, 4), DL_OK);
    assert_true(l[1] == 2);

    int8_t c[2] = {-127, 100};
    assert_int_equal(dl_op_scale(DL_INT8, c, 2, 3), DL_OK);
    assert_int_equal(c[0], -42);
    assert_int_equal(c[1], 33);
    uint8_t u[1] = {255};
    assert_int_equal(dl_op_scale(DL_UINT8, u, 1, 4), DL_OK);
    assert_int_equal(u[0], 63);

    float f[2] = {3.0f, -1.0f};
    assert_int_equal(dl_op_scale(DL_FLOAT32, f, 2, 4), DL_OK);
    assert_true(f[0] == 0.75f && f[1] == -0.25f);
    double g[1] = {1.0};
    assert_int_equal(dl_op_scale(DL_FLOAT64, g, 1, 3), DL_OK);
    assert_true(g[0] == 1.0 / 3.0);
    uint16_t h[1];
    dl_dtype_set(DL_FLOAT16, h, 0, 1.0);
    assert_int_equal(dl_op_scale(DL_FLOAT16, h, 1, 3), DL_OK);
    assert_int_equal(h[0], dl_float_to_half(1.0f / 3.0f));
    dl_dtype_set(DL_BFLOAT16, h, 0, 1.0);
    assert_int_equal(dl_op_scale(DL_BFLOAT16, h, 1, 3), DL_OK);
    assert_int_equal(h[0], dl_float_to_bf16(1.0f / 3.0f));

    uint8_t bools[1] = {1};
    assert_int_equal(dl_op_scale(DL_BOOL, bools, 1, 2), DL_ERR_DTYPE);
    assert_int_equal(dl_op_scale(DL_FLOAT32, f, 2, 0), DL_ERR_INVALID);
    assert_int_equal(dl_op_scale(DL_FLOAT32, NULL, 0, 2), DL_OK);
}

/* ------------------------------------------------------------------------
 * Rules, names and argument checks
 * ------------------------------------------------------------------------ */

static void test_check_rules(void **state)
{
    (void)state;
    const char *why = NULL;
    assert_int_equal(dl_op_check(DL_OP_BAND, DL_FLOAT32, &why), DL_ERR_DTYPE);
    assert_string_equal(why, "bitwise op band is not defined for float32");
    assert_int_equal(dl_op_check(DL_OP_BXOR, DL_BFLOAT16, &why), DL_ERR_DTYPE);
    assert_string_equal(why, "bitwise op bxor is not defined for bfloat16");
    assert_int_equal(dl_op_check(DL_OP_BOR, DL_FLOAT16, &why), DL_ERR_DTYPE);
    assert_string_equal(why, "bitwise op bor is not defined for float16");
    assert_int_equal(dl_op_check(DL_OP_AVG, DL_BOOL, &why), DL_ERR_DTYPE);
    assert_string_equal(why, "op avg is not defined for bool");
    assert_int_equal(dl_op_check(DL_OP_BAND, DL_FLOAT64, NULL), DL_ERR_DTYPE);

    /* why_p is left alone on success. */
    why = "unchanged";
    assert_int_equal(dl_op_check(DL_OP_BAND, DL_INT8, &why), DL_OK);
    assert_int_equal(dl_op_check(DL_OP_BXOR, DL_BOOL, &why), DL_OK);
    assert_int_equal(dl_op_check(DL_OP_AVG, DL_FLOAT16, &why), DL_OK);
    assert_string_equal(why, "unchanged");
    assert_int_equal(dl_op_check(DL_OP__COUNT, DL_INT8, &why), DL_ERR_INVALID);
    assert_int_equal(dl_op_check(DL_OP_SUM, DL_DTYPE__COUNT, &why), DL_ERR_INVALID);

    /* The kernels enforce the same rules. */
    float f[1] = {1.0f};
    uint8_t b[1] = {1};
    assert_int_equal(dl_reduce(DL_OP_BAND, DL_FLOAT32, f, f, f, 1), DL_ERR_DTYPE);
    assert_int_equal(dl_reduce(DL_OP_AVG, DL_BOOL, b, b, b, 1), DL_ERR_DTYPE);
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_FLOAT32, NULL, f, f, 1), DL_ERR_INVALID);
    assert_int_equal(dl_reduce(DL_OP_SUM, DL_FLOAT32, NULL, NULL, NULL, 0), DL_OK);
}

static void test_names(void **state)
{
    (void)state;
    static const char *const names[DL_OP__COUNT] = {"sum", "prod", "min", "max",
                                                    "avg", "band", "bor", "bxor"};
    for (int op = 0; op < DL_OP__COUNT; op++) {
        assert_string_equal(dl_op_name((dl_op_t)op), names[op]);
        dl_op_t got = DL_OP__COUNT;
        assert_int_equal(dl_op_parse(names[op], &got), DL_OK);
        assert_int_equal(got, op);
    }
    assert_string_equal(dl_op_all_names(), "sum, prod, min, max, avg, band, bor, bxor");
    dl_op_t op = DL_OP__COUNT;
    assert_int_equal(dl_op_parse("PRODUCT", &op), DL_OK);
    assert_int_equal(op, DL_OP_PROD);
    assert_int_equal(dl_op_parse("Max", &op), DL_OK);
    assert_int_equal(op, DL_OP_MAX);
    op = DL_OP__COUNT;
    assert_int_equal(dl_op_parse("mean", &op), DL_ERR_INVALID);
    assert_int_equal(dl_op_parse("", &op), DL_ERR_INVALID);
    assert_int_equal(dl_op_parse(NULL, &op), DL_ERR_INVALID);
    assert_int_equal(op, DL_OP__COUNT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_ops_out_of_place),
        cmocka_unit_test(test_all_ops_in_place),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_inputs_may_overlap),
        cmocka_unit_test(test_partial_overlap_refused),
        cmocka_unit_test(test_nan_propagates),
        cmocka_unit_test(test_integer_wraparound),
        cmocka_unit_test(test_bool_logic),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_avg_and_scale),
        cmocka_unit_test(test_check_rules),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests_name("tensor_reduce", tests, NULL, NULL);
}
