/* float16 and bfloat16 conversions: rounding to nearest even at ties,
 * overflow to infinity, subnormals, and NaNs that stay NaNs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/dtype.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static void test_half_basic(void **state)
{
    (void)state;
    assert_int_equal(dl_float_to_half(0.0f), 0x0000);
    assert_int_equal(dl_float_to_half(-0.0f), 0x8000);
    assert_int_equal(dl_float_to_half(1.0f), 0x3c00);
    assert_int_equal(dl_float_to_half(-2.0f), 0xc000);
    assert_int_equal(dl_float_to_half(0.5f), 0x3800);
    assert_int_equal(dl_float_to_half(65504.0f), 0x7bff);
    /* 0.1 is 614.4 units of 2^-14 above 2^-4: it rounds down to 0x2e66. */
    assert_int_equal(dl_float_to_half(0.1f), 0x2e66);
    assert_true(dl_half_to_float(0x3c00) == 1.0f);
    assert_true(dl_half_to_float(0x7bff) == 65504.0f);
    assert_true(dl_half_to_float(0xc000) == -2.0f);
}

static void test_half_ties_to_even(void **state)
{
    (void)state;
    /* Halfway between 1 and the next half (1 + 2^-10): the even one, 1. */
    assert_int_equal(dl_float_to_half(1.0f + 0x1p-11f), 0x3c00);
    /* Halfway between 1 + 2^-10 (odd) and 1 + 2^-9: up to the even one. */
    assert_int_equal(dl_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* Just past a tie rounds up, just below rounds down. */
    assert_int_equal(dl_float_to_half(nextafterf(1.0f + 0x1p-11f, 2.0f)), 0x3c01);
    assert_int_equal(dl_float_to_half(nextafterf(1.0f + 3 * 0x1p-11f, 0.0f)), 0x3c01);
    /* In integers: 2049 is a tie between 2048 and 2050, goes to 2048. */
    assert_int_equal(dl_float_to_half(2049.0f), dl_float_to_half(2048.0f));
    assert_int_equal(dl_float_to_half(2051.0f), dl_float_to_half(2052.0f));
}

static void test_half_overflow(void **state)
{
    (void)state;
    /* 65520 is halfway between 65504 (odd mantissa) and 65536: infinity. */
    assert_int_equal(dl_float_to_half(65520.0f), 0x7c00);
    assert_int_equal(dl_float_to_half(nextafterf(65520.0f, 0.0f)), 0x7bff);
    assert_int_equal(dl_float_to_half(-1e6f), 0xfc00);
    assert_int_equal(dl_float_to_half(INFINITY), 0x7c00);
    assert_int_equal(dl_float_to_half(-INFINITY), 0xfc00);
    assert_true(isinf(dl_half_to_float(0x7c00)) && dl_half_to_float(0x7c00) > 0);
    assert_true(isinf(dl_half_to_float(0xfc00)) && dl_half_to_float(0xfc00) < 0);
}

static void test_half_subnormal(void **state)
{
    (void)state;
    /* The smallest subnormal is 2^-24, the smallest normal 2^-14. */
    assert_int_equal(dl_float_to_half(0x1p-24f), 0x0001);
    assert_int_equal(dl_float_to_half(0x1p-14f), 0x0400);
    assert_int_equal(dl_float_to_half(1023 * 0x1p-24f), 0x03ff);
    /* 2^-25 is a tie between 0 and 2^-24: the even one is 0. */
    assert_int_equal(dl_float_to_half(0x1p-25f), 0x0000);
    assert_int_equal(dl_float_to_half(-0x1p-25f), 0x8000);
    assert_int_equal(dl_float_to_half(nextafterf(0x1p-25f, 1.0f)), 0x0001);
    /* 1.5 * 2^-24 is a tie between 1 and 2 units: the even 2. */
    assert_int_equal(dl_float_to_half(3 * 0x1p-25f), 0x0002);
    /* Rounding up from the largest subnormal lands on the smallest normal. */
    assert_int_equal(dl_float_to_half(1023.5f * 0x1p-24f), 0x0400);
    /* Float subnormals are far below half's range. */
    assert_int_equal(dl_float_to_half(from_bits(0x00000001)), 0x0000);
    assert_true(dl_half_to_float(0x0001) == 0x1p-24f);
    assert_true(dl_half_to_float(0x03ff) == 1023 * 0x1p-24f);
    assert_true(dl_half_to_float(0x8001) == -0x1p-24f);
}

static void test_half_nan(void **state)
{
    (void)state;
    uint16_t h = dl_float_to_half(NAN);
    assert_int_equal(h & 0x7c00, 0x7c00);
    assert_int_not_equal(h & 0x03ff, 0);
    /* A signalling NaN whose payload sits only in bits half drops must not
     * turn into infinity. */
    h = dl_float_to_half(from_bits(0x7f800001));
    assert_int_equal(h & 0x7e00, 0x7e00);
    h = dl_float_to_half(from_bits(0xff800001));
    assert_int_equal(h, 0xfe00);
    assert_true(isnan(dl_half_to_float(0x7e00)));
    assert_true(isnan(dl_half_to_float(0x7c01)));
}

static void test_half_round_trip_all(void **state)
{
    (void)state;
    /* Every half converts to float exactly and back to itself. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = dl_half_to_float((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0) {
            assert_true(isnan(f));
            continue;
        }
        assert_int_equal(dl_float_to_half(f), h);
    }
}

static void test_bf16_basic(void **state)
{
    (void)state;
    assert_int_equal(dl_float_to_bf16(1.0f), 0x3f80);
    assert_int_equal(dl_float_to_bf16(-2.0f), 0xc000);
    assert_int_equal(dl_float_to_bf16(-0.0f), 0x8000);
    /* 0.1f is 0x3dcccccd: the dropped half 0xcccd is above the tie. */
    assert_int_equal(dl_float_to_bf16(0.1f), 0x3dcd);
    assert_true(dl_bf16_to_float(0x3f80) == 1.0f);
    assert_true(dl_bf16_to_float(0x3dcd) == from_bits(0x3dcd0000));
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    /* Ties: 0x3f808000 sits between 0x3f80 (even) and 0x3f81. */
    assert_int_equal(dl_float_to_bf16(from_bits(0x3f808000)), 0x3f80);
    assert_int_equal(dl_float_to_bf16(from_bits(0x3f818000)), 0x3f82);
    assert_int_equal(dl_float_to_bf16(from_bits(0x3f808001)), 0x3f81);
    assert_int_equal(dl_float_to_bf16(from_bits(0x3f807fff)), 0x3f80);
    /* The largest float rounds past the largest bfloat16: infinity. */
    assert_int_equal(dl_float_to_bf16(from_bits(0x7f7fffff)), 0x7f80);
    assert_int_equal(dl_float_to_bf16(from_bits(0x7f7f7fff)), 0x7f7f);
    assert_int_equal(dl_float_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(dl_float_to_bf16(-INFINITY), 0xff80);
    /* Subnormals round like everything else. */
    assert_int_equal(dl_float_to_bf16(from_bits(0x00008000)), 0x0000);
    assert_int_equal(dl_float_to_bf16(from_bits(0x00018000)), 0x0002);
}

static void test_bf16_nan(void **state)
{
    (void)state;
    /* Truncating 0x7f800001 would give 0x7f80, infinity. */
    assert_true(isnan(dl_bf16_to_float(dl_float_to_bf16(from_bits(0x7f800001)))));
    assert_true(isnan(dl_bf16_to_float(dl_float_to_bf16(from_bits(0xffffffff)))));
    assert_true(isnan(dl_bf16_to_float(dl_float_to_bf16(NAN))));
    assert_int_equal(dl_float_to_bf16(from_bits(0x7fc00000)), 0x7fc0);
}

static void test_bf16_round_trip_all(void **state)
{
    (void)state;
    for (uint32_t b = 0; b < 0x10000; b++) {
        float f = dl_bf16_to_float((uint16_t)b);
        assert_int_equal(bits_of(f), b << 16);
        if (!isnan(f))
            assert_int_equal(dl_float_to_bf16(f), b);
    }
}

static void test_from_double_rounds_once(void **state)
{
    (void)state;
    /* 1 + 2^-11 + 2^-40 is just above the tie between 1 and 1 + 2^-10.
     * Through float it would land on the tie and round down to 1; rounded
     * once, correctly, it goes up. */
    uint16_t h;
    dl_dtype_set(DL_FLOAT16, &h, 0, 1.0 + 0x1p-11 + 0x1p-40);
    assert_int_equal(h, 0x3c01);
    dl_dtype_set(DL_FLOAT16, &h, 0, 1.0 + 0x1p-11);
    assert_int_equal(h, 0x3c00);
    /* The same for bfloat16, whose ulp at 1 is 2^-7. */
    uint16_t b;
    dl_dtype_set(DL_BFLOAT16, &b, 0, 1.0 + 0x1p-8 + 0x1p-40);
    assert_int_equal(b, 0x3f81);
    dl_dtype_set(DL_BFLOAT16, &b, 0, 1.0 + 0x1p-8);
    assert_int_equal(b, 0x3f80);
    /* Doubles beyond float's range still become infinity, and tiny ones
     * zero with their sign. */
    dl_dtype_set(DL_FLOAT16, &h, 0, 1e300);
    assert_int_equal(h, 0x7c00);
    dl_dtype_set(DL_BFLOAT16, &b, 0, -1e300);
    assert_int_equal(b, 0xff80);
    dl_dtype_set(DL_FLOAT16, &h, 0, -1e-300);
    assert_int_equal(h, 0x8000);
    dl_dtype_set(DL_FLOAT16, &h, 0, NAN);
    assert_true(isnan(dl_half_to_float(h)));
    /* From int64: 2^40 + 2^32 + 1 is just above a bfloat16 tie. */
    dl_dtype_set_i64(DL_BFLOAT16, &b, 0, (INT64_C(1) << 40) + (INT64_C(1) << 32) + 1);
    assert_true(dl_bf16_to_float(b) == 0x1p40f + 0x1p33f);
    dl_dtype_set_i64(DL_BFLOAT16, &b, 0, (INT64_C(1) << 40) + (INT64_C(1) << 32));
    assert_true(dl_bf16_to_float(b) == 0x1p40f);
    /* Above 2^53 a detour through double would round twice: 2^60 + 2^52 + 1
     * would become the tie 2^60 + 2^52 and then 2^60. */
    dl_dtype_set_i64(DL_BFLOAT16, &b, 0, (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1);
    assert_true(dl_bf16_to_float(b) == 0x1p60f + 0x1p53f);
    dl_dtype_set_i64(DL_BFLOAT16, &b, 0, INT64_MIN);
    assert_true(dl_bf16_to_float(b) == -0x1p63f);
    dl_dtype_set_i64(DL_FLOAT16, &h, 0, -2049);
    assert_int_equal(h, 0xe800); /* -2048 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_basic),
        cmocka_unit_test(test_half_ties_to_even),
        cmocka_unit_test(test_half_overflow),
        cmocka_unit_test(test_half_subnormal),
        cmocka_unit_test(test_half_nan),
        cmocka_unit_test(test_half_round_trip_all),
        cmocka_unit_test(test_bf16_basic),
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_bf16_nan),
        cmocka_unit_test(test_bf16_round_trip_all),
        cmocka_unit_test(test_from_double_rounds_once),
    };
    return cmocka_run_group_tests_name("tensor_half", tests, NULL, NULL);
}
