/* dtype names, parsing and element access. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/dtype.h"

static void test_sizes_and_names(void **state)
{
    (void)state;
    static const struct {
        dl_dtype_t dt;
        size_t size;
        const char *name, *torch, *bench;
        bool is_float;
    } rows[] = {
        {DL_BOOL, 1, "bool", "torch.bool", "bool", false},
        {DL_INT8, 1, "int8", "torch.int8", "int8", false},
        {DL_UINT8, 1, "uint8", "torch.uint8", "uint8", false},
        {DL_INT32, 4, "int32", "torch.int32", "int32", false},
        {DL_INT64, 8, "int64", "torch.int64", "int64", false},
        {DL_FLOAT16, 2, "float16", "torch.float16", "half", true},
        {DL_BFLOAT16, 2, "bfloat16", "torch.bfloat16", "bfloat16", true},
        {DL_FLOAT32, 4, "float32", "torch.float32", "float", true},
        {DL_FLOAT64, 8, "float64", "torch.float64", "double", true},
    };
    assert_int_equal(sizeof(rows) / sizeof(rows[0]), DL_DTYPE__COUNT);
    for (size_t i = 0; i < DL_DTYPE__COUNT; i++) {
        assert_int_equal(dl_dtype_size(rows[i].dt), rows[i].size);
        assert_string_equal(dl_dtype_name(rows[i].dt), rows[i].name);
        assert_string_equal(dl_dtype_torch_name(rows[i].dt), rows[i].torch);
        assert_string_equal(dl_dtype_bench_name(rows[i].dt), rows[i].bench);
        assert_int_equal(dl_dtype_is_float(rows[i].dt), rows[i].is_float);
        /* Every name parses back to its dtype. */
        dl_dtype_t dt = DL_DTYPE__COUNT;
        assert_int_equal(dl_dtype_parse(rows[i].name, &dt), DL_OK);
        assert_int_equal(dt, rows[i].dt);
    }
    assert_string_equal(dl_dtype_all_names(),
                        "bool, int8, uint8, int32, int64, float16, bfloat16, float32, float64");
    /* Out-of-range values do not crash the name lookups. */
    assert_int_equal(dl_dtype_size(DL_DTYPE__COUNT), 0);
    assert_non_null(dl_dtype_name(DL_DTYPE__COUNT));
    assert_false(dl_dtype_is_float(DL_DTYPE__COUNT));
}

static void test_parse_aliases(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        dl_dtype_t dt;
    } rows[] = {
        {"float", DL_FLOAT32}, {"f32", DL_FLOAT32},     {"double", DL_FLOAT64}, {"f64", DL_FLOAT64},
        {"half", DL_FLOAT16},  {"f16", DL_FLOAT16},     {"bf16", DL_BFLOAT16},  {"long", DL_INT64},
        {"i64", DL_INT64},     {"int", DL_INT32},       {"i32", DL_INT32},      {"u8", DL_UINT8},
        {"i8", DL_INT8},       {"Float32", DL_FLOAT32}, {"BF16", DL_BFLOAT16},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        dl_dtype_t dt = DL_DTYPE__COUNT;
        assert_int_equal(dl_dtype_parse(rows[i].name, &dt), DL_OK);
        assert_int_equal(dt, rows[i].dt);
    }
}

static void test_parse_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {"",         "short",     "int16",
                                      "float128", "complex64", "torch.float32",
                                      "float32 ", "uint32",    "i16"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        /* The output stays untouched on failure. */
        dl_dtype_t dt = DL_DTYPE__COUNT;
        assert_int_equal(dl_dtype_parse(bad[i], &dt), DL_ERR_INVALID);
        assert_int_equal(dt, DL_DTYPE__COUNT);
    }
    dl_dtype_t dt;
    assert_int_equal(dl_dtype_parse(NULL, &dt), DL_ERR_INVALID);
    assert_int_equal(dl_dtype_parse("float", NULL), DL_ERR_INVALID);
}

static void test_get_set_round_trip(void **state)
{
    (void)state;
    uint8_t buf[8 * 4];
    static const double values[] = {0, 1, -1, 2.5, -3.75, 100, 0.5};
    for (int dt = 0; dt < DL_DTYPE__COUNT; dt++) {
        for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++) {
            double v = values[k];
            memset(buf, 0xaa, sizeof(buf));
            dl_dtype_set((dl_dtype_t)dt, buf, 2, v);
            double want;
            if (dt == DL_BOOL)
                want = v != 0;
            else if (dt == DL_UINT8 && v < 0)
                want = 256 + trunc(v); /* wraps */
            else if (!dl_dtype_is_float((dl_dtype_t)dt))
                want = trunc(v);
            else
                want = v; /* all of these are exact in every float type */
            assert_true(dl_dtype_get((dl_dtype_t)dt, buf, 2) == want);
            assert_true(dl_dtype_round((dl_dtype_t)dt, v) == want); /* the same, in one call */
            /* Neighbouring elements are left alone. */
            size_t esz = dl_dtype_size((dl_dtype_t)dt);
            assert_int_equal(buf[esz - 1], 0xaa);
            assert_int_equal(buf[3 * esz], 0xaa);
        }
    }
}

/* dl_dtype_round: a value as the dtype holds it, rounded to nearest even. */
static void test_round(void **state)
{
    (void)state;
    assert_true(dl_dtype_round(DL_FLOAT64, 0.1) == 0.1);
    assert_true(dl_dtype_round(DL_FLOAT32, 0.1) == (double)0.1f);
    assert_true(dl_dtype_round(DL_FLOAT32, 123456789) == 123456792);
    assert_true(dl_dtype_round(DL_FLOAT16, 2049) == 2048);  /* a tie, to even */
    assert_true(dl_dtype_round(DL_BFLOAT16, -335) == -336); /* a tie, to even */
    assert_true(dl_dtype_round(DL_INT8, -3.7) == -3);
}

static void test_integer_conversions(void **state)
{
    (void)state;
    int8_t i8;
    uint8_t u8;
    int32_t i32;
    int64_t i64;
    /* Truncation toward zero. */
    dl_dtype_set(DL_INT32, &i32, 0, -2.9);
    assert_int_equal(i32, -2);
    dl_dtype_set(DL_INT32, &i32, 0, 2.9);
    assert_int_equal(i32, 2);
    /* Narrow types wrap modulo 2^N. */
    dl_dtype_set(DL_INT8, &i8, 0, 130);
    assert_int_equal(i8, -126);
    dl_dtype_set(DL_UINT8, &u8, 0, 300);
    assert_int_equal(u8, 44);
    dl_dtype_set_i64(DL_INT32, &i32, 0, INT64_C(0x100000005));
    assert_int_equal(i32, 5);
    /* NaN and what the type cannot hold give its minimum, as x86's
     * conversions (torch's casts) do, instead of C's undefined behaviour:
     * int64 and uint8 through 64 bits, int32 and int8 through 32. */
    dl_dtype_set(DL_INT64, &i64, 0, NAN);
    assert_true(i64 == INT64_MIN);
    dl_dtype_set(DL_INT64, &i64, 0, 1e30);
    assert_true(i64 == INT64_MIN);
    dl_dtype_set(DL_INT64, &i64, 0, -1e30);
    assert_true(i64 == INT64_MIN);
    dl_dtype_set(DL_INT64, &i64, 0, 1e10);
    assert_true(i64 == INT64_C(10000000000));
    dl_dtype_set(DL_INT32, &i32, 0, 1e10);
    assert_true(i32 == INT32_MIN);
    dl_dtype_set(DL_INT32, &i32, 0, 2147483647.5);
    assert_int_equal(i32, 2147483647);
    dl_dtype_set(DL_INT8, &i8, 0, 3000000007.0);
    assert_int_equal(i8, 0);
    dl_dtype_set(DL_UINT8, &u8, 0, 3000000007.0);
    assert_int_equal(u8, 7);
    dl_dtype_set(DL_UINT8, &u8, 0, -1.5);
    assert_int_equal(u8, 255);
    /* int64 is exact through the i64 accessors beyond 2^53. */
    int64_t big = (INT64_C(1) << 62) + 1;
    dl_dtype_set_i64(DL_INT64, &i64, 0, big);
    assert_true(dl_dtype_get_i64(DL_INT64, &i64, 0) == big);
    /* Float dtypes through the i64 accessors truncate. */
    float f;
    dl_dtype_set_i64(DL_FLOAT32, &f, 0, 7);
    assert_true(f == 7.0f);
    f = -7.9f;
    assert_int_equal(dl_dtype_get_i64(DL_FLOAT32, &f, 0), -7);
}

static void test_bool(void **state)
{
    (void)state;
    uint8_t b;
    dl_dtype_set(DL_BOOL, &b, 0, 0.25);
    assert_int_equal(b, 1);
    dl_dtype_set(DL_BOOL, &b, 0, -0.0);
    assert_int_equal(b, 0);
    dl_dtype_set(DL_BOOL, &b, 0, NAN);
    assert_int_equal(b, 1);
    dl_dtype_set_i64(DL_BOOL, &b, 0, 256);
    assert_int_equal(b, 1);
    /* Any nonzero byte reads as true. */
    b = 7;
    assert_true(dl_dtype_get(DL_BOOL, &b, 0) == 1.0);
    assert_int_equal(dl_dtype_get_i64(DL_BOOL, &b, 0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_and_names),
        cmocka_unit_test(test_parse_aliases),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_get_set_round_trip),
        cmocka_unit_test(test_integer_conversions),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_round),
    };
    return cmocka_run_group_tests_name("tensor_dtype", tests, NULL, NULL);
}
