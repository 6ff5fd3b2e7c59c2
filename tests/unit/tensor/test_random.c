/* torch's CPU random numbers (distlab/random.h): the mt19937 stream against
 * the reference values of C++'s std::mt19937, and every way torch turns it
 * into values against what torch 1.13 printed for the same seeds (written
 * as hex floats, so the comparison is bit for bit). Sizes, dtypes and
 * stream continuations are compared wholesale with real torch by the
 * integration test random (tests/integration/test_random.py). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/random.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static dl_rng_t *seeded(uint64_t seed)
{
    static dl_rng_t g;
    memset(&g, 0, sizeof(g));
    dl_rng_seed(&g, seed);
    return &g;
}

/* The first draw after seeding, from a generator of its own. */
static uint32_t first_draw(uint64_t seed)
{
    dl_rng_t g;
    memset(&g, 0, sizeof(g));
    dl_rng_seed(&g, seed);
    return dl_rng_next32(&g);
}

static dl_tensor_t *tensor_1d(dl_dtype_t dt, int64_t n)
{
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new(dt, 1, &n, NULL, &t), DL_OK);
    return t;
}

/* Both lists element by element, bit for bit, naming the first that differs. */
static void check_f32(const dl_tensor_t *t, const float *want, size_t n)
{
    assert_int_equal(t->numel, n);
    const float *got = t->data;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            fail_msg("element %zu: got %a (%.9g), want %a (%.9g)", i, (double)got[i],
                     (double)got[i], (double)want[i], (double)want[i]);
}

static void check_f64(const dl_tensor_t *t, const double *want, size_t n)
{
    assert_int_equal(t->numel, n);
    const double *got = t->data;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(double)) != 0)
            fail_msg("element %zu: got %a (%.17g), want %a (%.17g)", i, got[i], got[i], want[i],
                     want[i]);
}

static void check_i64(const dl_tensor_t *t, const int64_t *want, size_t n)
{
    assert_int_equal(t->numel, n);
    for (size_t i = 0; i < n; i++)
        if (dl_dtype_get_i64(t->dtype, t->data, i) != want[i])
            fail_msg("element %zu: got %lld, want %lld", i,
                     (long long)dl_dtype_get_i64(t->dtype, t->data, i), (long long)want[i]);
}

/* ---- the generator ---- */

static void test_mt19937_reference(void **state)
{
    (void)state;
    /* std::mt19937's default seed, 5489: its first draws, and the 10000th
     * draw that the C++ standard requires of a conforming engine. */
    dl_rng_t *g = seeded(5489);
    static const uint32_t first[] = {3499211612u, 581869302u, 3890346734u, 3586334585u, 545404204u};
    for (size_t i = 0; i < N_OF(first); i++)
        assert_int_equal(dl_rng_next32(g), first[i]);
    for (int i = (int)N_OF(first) + 1; i < 10000; i++)
        dl_rng_next32(g);
    assert_int_equal(dl_rng_next32(g), 4123659995u);

    /* A 64-bit draw is two draws, the first the high half. */
    g = seeded(5489);
    assert_int_equal(dl_rng_next64(g), ((uint64_t)3499211612u << 32) | 581869302u);
}

static void test_seed(void **state)
{
    (void)state;
    /* torch keeps the low 32 bits: 2^32 + 5 is 5, and -1 is 2^32 - 1. */
    dl_rng_t a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    dl_rng_seed(&a, (UINT64_C(1) << 32) + 5);
    dl_rng_seed(&b, 5);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(dl_rng_next32(&a), dl_rng_next32(&b));
    assert_int_equal(a.seed, (UINT64_C(1) << 32) + 5); /* initial_seed() as given */
    dl_rng_seed(&a, (uint64_t)-1);
    dl_rng_seed(&b, 0xffffffffu);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(dl_rng_next32(&a), dl_rng_next32(&b));

    /* Seeding again restarts the stream and keeps the kernel choice. */
    dl_rng_t *g = seeded(7);
    g->cpu = DL_RNG_CPU_AVX2;
    uint32_t x = dl_rng_next32(g);
    dl_rng_next32(g);
    dl_rng_seed(g, 7);
    assert_int_equal(dl_rng_next32(g), x);
    assert_int_equal(g->cpu, DL_RNG_CPU_AVX2);
}

static void test_cpu_detect(void **state)
{
    (void)state;
    /* torch's own variable picks its kernels; distlab follows it. */
    const char *old = getenv("ATEN_CPU_CAPABILITY");
    char *saved = old != NULL ? strdup(old) : NULL;
    setenv("ATEN_CPU_CAPABILITY", "default", 1);
    assert_int_equal(dl_rng_cpu_detect(), DL_RNG_CPU_DEFAULT);
    setenv("ATEN_CPU_CAPABILITY", "avx512", 1);
    assert_int_equal(dl_rng_cpu_detect(), DL_RNG_CPU_DEFAULT);
#if !defined(__x86_64__) && !defined(__i386__)
    unsetenv("ATEN_CPU_CAPABILITY");
    assert_int_equal(dl_rng_cpu_detect(), DL_RNG_CPU_DEFAULT);
#endif
    if (saved != NULL)
        setenv("ATEN_CPU_CAPABILITY", saved, 1);
    else
        unsetenv("ATEN_CPU_CAPABILITY");
    free(saved);
}

/* ---- rand ---- */

static void test_uniform(void **state)
{
    (void)state;
    /* torch.manual_seed(0); torch.rand(5): the low 24 bits of each draw.
     * The first draw is 2357136044, whose low 24 bits are 8325804:
     * 8325804 / 2^24 = 0.49625658988952637. */
    dl_tensor_t *t = tensor_1d(DL_FLOAT32, 5);
    assert_int_equal(dl_rng_uniform(seeded(0), t), DL_OK);
    static const float want[] = {0x1.fc2abp-2f, 0x1.89545ep-1f, 0x1.6a675p-4f, 0x1.0e66p-3f,
                                 0x1.3acd0cp-2f};
    check_f32(t, want, N_OF(want));
    assert_true(((float *)t->data)[0] == 8325804.0f / 16777216.0f);
    dl_tensor_free(t);

    /* float64: 53 bits of a 64-bit draw. */
    t = tensor_1d(DL_FLOAT64, 3);
    assert_int_equal(dl_rng_uniform(seeded(0), t), DL_OK);
    static const double want64[] = {0x1.f0aac97c4aa2fp-1, 0x1.6a675d821ccc0p-1,
                                    0x1.d6687b744a5f6p-2};
    check_f64(t, want64, N_OF(want64));
    dl_tensor_free(t);

    /* float16 and bfloat16: 11 and 8 bits (torch's bit patterns). */
    static const struct {
        dl_dtype_t dt;
        uint16_t want[3];
    } halves[] = {
        {DL_FLOAT16, {13656, 13406, 14965}},
        {DL_BFLOAT16, {16172, 15932, 16106}},
    };
    for (size_t k = 0; k < N_OF(halves); k++) {
        t = tensor_1d(halves[k].dt, 3);
        assert_int_equal(dl_rng_uniform(seeded(0), t), DL_OK);
        for (int i = 0; i < 3; i++)
            assert_int_equal(((uint16_t *)t->data)[i], halves[k].want[i]);
        dl_tensor_free(t);
    }

    /* Seeds as torch takes them: -1 and 2^32 + 5 (which is 5). */
    t = tensor_1d(DL_FLOAT32, 2);
    assert_int_equal(dl_rng_uniform(seeded((uint64_t)-1), t), DL_OK);
    check_f32(t, (const float[]){0x1.fcd346p-1f, 0x1.248244p-1f}, 2);
    assert_int_equal(dl_rng_uniform(seeded((UINT64_C(1) << 32) + 5), t), DL_OK);
    check_f32(t, (const float[]){0x1.a916c6p-1f, 0x1.02467p-3f}, 2);
    dl_tensor_free(t);

    /* A stream past the first 624 words (one twist). */
    t = tensor_1d(DL_FLOAT32, 700);
    assert_int_equal(dl_rng_uniform(seeded(0), t), DL_OK);
    static const float tail[] = {0x1.08c1p-3f, 0x1.3ad8e6p-1f, 0x1.25338cp-1f};
    for (int i = 0; i < 3; i++)
        assert_true(((float *)t->data)[697 + i] == tail[i]);
    dl_tensor_free(t);

    /* Integer dtypes are refused, and nothing is drawn. */
    dl_rng_t *g = seeded(3);
    t = tensor_1d(DL_INT64, 2);
    assert_int_equal(dl_rng_uniform(g, t), DL_ERR_INVALID);
    assert_int_equal(dl_rng_normal(g, t), DL_ERR_INVALID);
    assert_int_equal(dl_rng_next32(g), first_draw(3));
    dl_tensor_free(t);
}

/* ---- randn ---- */

static void test_normal_small(void **state)
{
    (void)state;
    /* Fewer than 16 elements: float64 Box-Muller pairs, the second value
     * kept for the next element, even across calls:
     * torch.manual_seed(0); torch.randn(3); torch.randn(3). */
    dl_rng_t *g = seeded(0);
    dl_tensor_t *t = tensor_1d(DL_FLOAT32, 3);
    assert_int_equal(dl_rng_normal(g, t), DL_OK);
    check_f32(t, (const float[]){0x1.8a7eb8p+0f, -0x1.2c78ap-2f, -0x1.16e292p+1f}, 3);
    assert_true(g->has_normal);
    assert_int_equal(dl_rng_normal(g, t), DL_OK);
    check_f32(t, (const float[]){0x1.23096cp-1f, -0x1.15a342p+0f, -0x1.660a5ap+0f}, 3);

    /* manual_seed forgets the kept value. */
    dl_rng_seed(g, 0);
    assert_false(g->has_normal);
    assert_int_equal(dl_rng_normal(g, t), DL_OK);
    check_f32(t, (const float[]){0x1.8a7eb8p+0f, -0x1.2c78ap-2f, -0x1.16e292p+1f}, 3);
    dl_tensor_free(t);

    /* float64 keeps every bit of the same values. */
    t = tensor_1d(DL_FLOAT64, 5);
    assert_int_equal(dl_rng_normal(seeded(0), t), DL_OK);
    static const double want64[] = {0x1.8a7eb8902be3ap+0, -0x1.2c78a087c6feap-2,
                                    -0x1.16e2920a70ee5p+1, 0x1.23096ca3e350dp-1,
                                    -0x1.15a341987e136p+0};
    check_f64(t, want64, N_OF(want64));
    dl_tensor_free(t);
}

static void test_normal_fill(void **state)
{
    (void)state;
    /* 16 and more: uniforms first, then blocks of 16; 17 elements redo the
     * last 16 with fresh uniforms. torch.manual_seed(0); torch.randn(17),
     * with torch's AVX2 kernel and with its default one (the two differ in
     * the last bit of some elements). */
    static const float avx2[] = {
        -0x1.20370ap+0f, -0x1.b2288cp+0f, 0x1.222008p-1f, 0x1.9646bap-1f, 0x1.329b16p-1f,
        -0x1.8e1ab6p+0f, -0x1.5d8d94p-2f, 0x1.da5e9cp+0f, 0x1.df54aap-2f, -0x1.2bc656p-1f,
        -0x1.631dd6p-3f, 0x1.77c348p-3f,  0x1.63ad8p+0f,  0x1.961ap+0f,   0x1.e48138p-1f,
        -0x1.aff666p-1f, 0x1.dd186p-1f,
    };
    static const float dflt[] = {
        -0x1.20370ap+0f, -0x1.b2288ep+0f, 0x1.222004p-1f, 0x1.9646bcp-1f, 0x1.329b16p-1f,
        -0x1.8e1ab6p+0f, -0x1.5d8d8ep-2f, 0x1.da5e9cp+0f, 0x1.df54aap-2f, -0x1.2bc648p-1f,
        -0x1.631dfap-3f, 0x1.77c346p-3f,  0x1.63ad8p+0f,  0x1.961a02p+0f, 0x1.e48138p-1f,
        -0x1.aff668p-1f, 0x1.dd1862p-1f,
    };
    dl_tensor_t *t = tensor_1d(DL_FLOAT32, 17);
    dl_rng_t *g = seeded(0);
    g->cpu = DL_RNG_CPU_AVX2;
    assert_int_equal(dl_rng_normal(g, t), DL_OK);
    check_f32(t, avx2, N_OF(avx2));
    g = seeded(0);
    g->cpu = DL_RNG_CPU_DEFAULT;
    assert_int_equal(dl_rng_normal(g, t), DL_OK);
    check_f32(t, dflt, N_OF(dflt));
    assert_false(g->has_normal); /* the block path keeps nothing */
    dl_tensor_free(t);

    /* float64 has one kernel. */
    static const double want64[] = {
        -0x1.27bb92e9262dcp+1, -0x1.443c91ccf2402p-1, -0x1.42cbf54f08f8ep+0, -0x1.7432edfaba107p-1,
        -0x1.471a3c0e2f22ap-6, 0x1.aeb1b572b6a04p-3,  0x1.6ae2402b7b62bp-3,  -0x1.a9389d082941dp-1,
        0x1.e8e503666016dp-3,  -0x1.f101e358981adp-3, -0x1.8bc82256d975bp-1, -0x1.985dd0627b1f0p+0,
        -0x1.5fbef2bc4be3bp-1, 0x1.7cf270386ca66p+0,  -0x1.cb2d8340fb171p-2, -0x1.c8318cc163de5p-1,
        0x1.5986ed8e63e98p-1,
    };
    t = tensor_1d(DL_FLOAT64, 17);
    assert_int_equal(dl_rng_normal(seeded(0), t), DL_OK);
    check_f64(t, want64, N_OF(want64));
    dl_tensor_free(t);
}

/* FNV-1a over n bytes, to compare long runs of values with torch's. */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

#define FNV_START UINT64_C(0xcbf29ce484222325)

static void test_normal_many(void **state)
{
    (void)state;
    /* Over many values the kernels' last bits show: the hash of the bytes
     * of torch.manual_seed(0); torch.randn(100003) (a tail block too), of
     * its float64 form, and of 2000 calls of torch.randn(15, dtype=float64)
     * after torch.manual_seed(1) (small calls, the kept value crossing
     * from call to call). */
    dl_tensor_t *t = tensor_1d(DL_FLOAT32, 100003);
    dl_rng_t *g = seeded(0);
    g->cpu = DL_RNG_CPU_AVX2;
    assert_int_equal(dl_rng_normal(g, t), DL_OK);
    assert_int_equal(fnv1a(t->data, dl_tensor_nbytes(t), FNV_START), UINT64_C(0xc5046e5886a31170));
    g = seeded(0);
    g->cpu = DL_RNG_CPU_DEFAULT;
    assert_int_equal(dl_rng_normal(g, t), DL_OK);
    assert_int_equal(fnv1a(t->data, dl_tensor_nbytes(t), FNV_START), UINT64_C(0xcb293eb46ce2f3de));
    dl_tensor_free(t);

    t = tensor_1d(DL_FLOAT64, 100003);
    assert_int_equal(dl_rng_normal(seeded(0), t), DL_OK);
    assert_int_equal(fnv1a(t->data, dl_tensor_nbytes(t), FNV_START), UINT64_C(0xe0fec172711095c6));
    dl_tensor_free(t);

    t = tensor_1d(DL_FLOAT64, 15);
    g = seeded(1);
    uint64_t h = FNV_START;
    for (int i = 0; i < 2000; i++) {
        assert_int_equal(dl_rng_normal(g, t), DL_OK);
        h = fnv1a(t->data, dl_tensor_nbytes(t), h);
    }
    assert_int_equal(h, UINT64_C(0xd13eefc60d16c01));
    dl_tensor_free(t);
}

/* ---- randint ---- */

static void test_randint(void **state)
{
    (void)state;
    char why[160];
    static const struct {
        dl_dtype_t dt;
        int64_t low, high;
        int64_t want[8];
        size_t n;
    } cases[] = {
        /* torch.manual_seed(0); torch.randint(LOW, HIGH, (n,), dtype=D) */
        {DL_INT64, 0, 10, {4, 9, 3, 0, 3, 9, 7, 3}, 8},
        /* A range of 2^32 or more takes 64-bit draws. */
        {DL_INT64,
         0,
         INT64_C(1) << 40,
         {741280623151, 506137267392, 291447657211, 841157541223},
         4},
        /* The whole of int64 but its last value: a range of 2^64 - 1. */
        {DL_INT64, INT64_MIN, INT64_MAX, {900450186894289455, 3969543146641149120}, 2},
        {DL_INT8, -128, 128, {44, -81, -11, 64, -61, 123}, 6},
        {DL_BOOL, 0, 2, {0, 1, 1, 0, 1, 1}, 6},
        /* float32 first moves high in until high - 1 survives float32:
         * 2^31 becomes 2^31 - 128. */
        {DL_FLOAT32, 0, INT64_C(1) << 31, {209652528, 398764704, 924231424, 1478610176}, 4},
    };
    for (size_t k = 0; k < N_OF(cases); k++) {
        dl_tensor_t *t = tensor_1d(cases[k].dt, (int64_t)cases[k].n);
        assert_int_equal(
            dl_rng_randint(seeded(0), t, cases[k].low, cases[k].high, why, sizeof(why)), DL_OK);
        check_i64(t, cases[k].want, cases[k].n);
        dl_tensor_free(t);
    }

    /* torch's refusals, and nothing is drawn for them. */
    static const struct {
        dl_dtype_t dt;
        int64_t low, high;
        const char *why;
    } bad[] = {
        {DL_INT64, 5, 5, "low must be less than high, but got low=5 >= high=5"},
        {DL_UINT8, 0, 300, "high - 1 = 299 is out of bounds for uint8"},
        {DL_UINT8, -1, 5, "low=-1 is out of bounds for uint8"},
        {DL_INT32, 0, INT64_C(1) << 40, "high - 1 = 1099511627775 is out of bounds for int32"},
        {DL_BOOL, 0, 3, "high - 1 = 2 is out of bounds for bool"},
        {DL_FLOAT16, 0, 70000, "high - 1 = 69999 is out of bounds for float16"},
    };
    for (size_t k = 0; k < N_OF(bad); k++) {
        dl_rng_t *g = seeded(9);
        dl_tensor_t *t = tensor_1d(bad[k].dt, 2);
        assert_int_equal(dl_rng_randint(g, t, bad[k].low, bad[k].high, why, sizeof(why)),
                         DL_ERR_INVALID);
        assert_string_equal(why, bad[k].why);
        assert_int_equal(dl_rng_randint(g, t, bad[k].low, bad[k].high, NULL, 0), DL_ERR_INVALID);
        assert_int_equal(dl_rng_next32(g), first_draw(9));
        dl_tensor_free(t);
    }
}

/* ---- randperm ---- */

static void test_randperm(void **state)
{
    (void)state;
    char why[160];
    static const struct {
        dl_dtype_t dt;
        int64_t want[8];
        size_t n, shown;
    } cases[] = {
        /* torch.manual_seed(0); torch.randperm(n, dtype=D)[:shown] */
        {DL_INT64, {4, 0, 7, 3, 2, 5, 1, 6}, 8, 8},
        {DL_UINT8, {172, 55, 225, 105, 47, 214}, 256, 6},
        {DL_FLOAT64, {4, 0, 1, 3, 2}, 5, 5},
    };
    for (size_t k = 0; k < N_OF(cases); k++) {
        dl_tensor_t *t = tensor_1d(cases[k].dt, (int64_t)cases[k].n);
        assert_int_equal(dl_rng_randperm(seeded(0), t, why, sizeof(why)), DL_OK);
        for (size_t i = 0; i < cases[k].shown; i++)
            assert_int_equal(dl_dtype_get_i64(t->dtype, t->data, i), cases[k].want[i]);
        dl_tensor_free(t);
    }
    /* Every value once. */
    dl_tensor_t *t = tensor_1d(DL_INT32, 1000);
    assert_int_equal(dl_rng_randperm(seeded(5), t, NULL, 0), DL_OK);
    bool seen[1000] = {false};
    for (size_t i = 0; i < 1000; i++) {
        int32_t v = ((const int32_t *)t->data)[i];
        assert_true(v >= 0 && v < 1000 && !seen[v]);
        seen[v] = true;
    }
    dl_tensor_free(t);

    /* torch's refusals, and nothing is drawn for them. */
    static const struct {
        dl_dtype_t dt;
        int64_t n;
        const char *why;
    } bad[] = {
        {DL_INT8, 130, "value cannot be converted to type int8_t without overflow"},
        {DL_UINT8, 257, "value cannot be converted to type uint8_t without overflow"},
        {DL_FLOAT16, 2050, "n cannot be greater than 2049 for Half type."},
        {DL_BOOL, 2, "\"randperm\" not implemented for 'Bool'"},
    };
    for (size_t k = 0; k < N_OF(bad); k++) {
        dl_rng_t *g = seeded(9);
        dl_tensor_t *b = tensor_1d(bad[k].dt, bad[k].n);
        assert_int_equal(dl_rng_randperm(g, b, why, sizeof(why)), DL_ERR_INVALID);
        assert_string_equal(why, bad[k].why);
        assert_int_equal(dl_rng_randperm(g, b, NULL, 0), DL_ERR_INVALID);
        assert_int_equal(dl_rng_next32(g), first_draw(9));
        dl_tensor_free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mt19937_reference), cmocka_unit_test(test_seed),
        cmocka_unit_test(test_cpu_detect),        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_normal_small),      cmocka_unit_test(test_normal_fill),
        cmocka_unit_test(test_normal_many),       cmocka_unit_test(test_randint),
        cmocka_unit_test(test_randperm),
    };
    return cmocka_run_group_tests_name("tensor_random", tests, NULL, NULL);
}
