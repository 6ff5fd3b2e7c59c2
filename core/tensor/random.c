/* torch's CPU random numbers (distlab/random.h).
 *
 * Every function here reproduces one step of torch's CPU kernels, in the
 * same order and with the same roundings, because learners compare the
 * values with torch's. The arithmetic is written one rounding per
 * statement: where torch's compiled kernel fuses a multiply and an add, the
 * code says fmaf, and the library is built with -ffp-contract=off so that
 * the compiler fuses nothing else. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/random.h"
#include "internal.h"

/* ======================================================================
 * mt19937
 *
 * 624 words of state. Seeding fills them from the seed with Knuth's
 * multiplier; every 624 draws the whole state is "twisted" (each word mixed
 * with its neighbour and the word 397 further on), and each draw hands out
 * one word "tempered" by shifts and masks. These are the reference
 * constants of Matsumoto and Nishimura, which torch uses unchanged.
 * ====================================================================== */

#define MT_N      DL_RNG_MT_WORDS
#define MT_M      397
#define MT_MATRIX 0x9908b0dfu
#define MT_UPPER  0x80000000u
#define MT_LOWER  0x7fffffffu

static void mt_twist(dl_rng_t *g)
{
    for (int k = 0; k < MT_N; k++) {
        uint32_t y = (g->mt[k] & MT_UPPER) | (g->mt[(k + 1) % MT_N] & MT_LOWER);
        g->mt[k] = g->mt[(k + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? MT_MATRIX : 0u);
    }
    g->next = 0;
}

uint32_t dl_rng_next32(dl_rng_t *g)
{
    if (g->next >= MT_N)
        mt_twist(g);
    uint32_t y = g->mt[g->next++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint64_t dl_rng_next64(dl_rng_t *g)
{
    uint64_t hi = dl_rng_next32(g);
    uint64_t lo = dl_rng_next32(g);
    return hi << 32 | lo;
}

dl_rng_cpu_t dl_rng_cpu_detect(void)
{
    const char *cap = getenv("ATEN_CPU_CAPABILITY");
    if (cap != NULL && (strcmp(cap, "default") == 0 || strcmp(cap, "avx512") == 0))
        return DL_RNG_CPU_DEFAULT;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return DL_RNG_CPU_AVX2;
#endif
    return DL_RNG_CPU_DEFAULT;
}

void dl_rng_seed(dl_rng_t *g, uint64_t seed)
{
    /* A zero-filled generator has never been seeded: pick its kernel now. */
    static const dl_rng_t fresh;
    if (memcmp(g, &fresh, sizeof(fresh)) == 0)
        g->cpu = dl_rng_cpu_detect();
    g->seed = seed;
    g->mt[0] = (uint32_t)seed; /* torch keeps the low 32 bits */
    for (uint32_t i = 1; i < MT_N; i++)
        g->mt[i] = 1812433253u * (g->mt[i - 1] ^ (g->mt[i - 1] >> 30)) + i;
    g->next = MT_N;
    g->has_normal = false;
    g->normal = 0;
}

/* ======================================================================
 * Uniform values in [0, 1)
 *
 * torch keeps as many low bits of a draw as the dtype has mantissa digits
 * (24 for float32, 53 for float64, 11 for float16, 8 for bfloat16) and
 * scales them by 2^-digits, so every value is exact in its dtype.
 * ====================================================================== */

static float uniform_f32(dl_rng_t *g)
{
    return (float)(dl_rng_next32(g) & 0xffffffu) * 0x1p-24f;
}

static double uniform_f64(dl_rng_t *g)
{
    return (double)(dl_rng_next64(g) & ((UINT64_C(1) << 53) - 1)) * 0x1p-53;
}

static bool is_float(dl_dtype_t dt)
{
    return dt == DL_FLOAT16 || dt == DL_BFLOAT16 || dt == DL_FLOAT32 || dt == DL_FLOAT64;
}

dl_status_t dl_rng_uniform(dl_rng_t *g, dl_tensor_t *t)
{
    if (!is_float(t->dtype))
        return DL_ERR_INVALID;
    for (size_t i = 0; i < t->numel; i++) {
        switch (t->dtype) {
        case DL_FLOAT64:
            ((double *)t->data)[i] = uniform_f64(g);
            break;
        case DL_FLOAT32:
            ((float *)t->data)[i] = uniform_f32(g);
            break;
        case DL_FLOAT16:
            ((uint16_t *)t->data)[i] =
                dl__float_to_half((float)(dl_rng_next32(g) & 0x7ffu) * 0x1p-11f);
            break;
        default: /* DL_BFLOAT16 */
            ((uint16_t *)t->data)[i] =
                dl__float_to_bf16((float)(dl_rng_next32(g) & 0xffu) * 0x1p-8f);
            break;
        }
    }
    return DL_OK;
}

/* ======================================================================
 * Integers in [low, high)
 * ====================================================================== */

/* The values an integer or bool dtype holds. */
static void int_bounds(dl_dtype_t dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case DL_BOOL:
        *lo = 0, *hi = 1;
        break;
    case DL_INT8:
        *lo = INT8_MIN, *hi = INT8_MAX;
        break;
    case DL_UINT8:
        *lo = 0, *hi = UINT8_MAX;
        break;
    case DL_INT32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        break;
    default:
        *lo = INT64_MIN, *hi = INT64_MAX;
        break;
    }
}

/* v stored in the float dtype dt and read back as an int64, as C++'s casts
 * do it on x86-64: a value out of int64's range reads back as INT64_MIN. */
static int64_t through_float(dl_dtype_t dt, int64_t v)
{
    double x;
    switch (dt) {
    case DL_FLOAT64:
        x = (double)v;
        break;
    case DL_FLOAT16:
        x = dl__half_to_float(dl__float_to_half((float)v));
        break;
    case DL_BFLOAT16:
        x = dl__bf16_to_float(dl__float_to_bf16((float)v));
        break;
    default:
        x = (float)v;
        break;
    }
    return x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN;
}

static int float_digits(dl_dtype_t dt)
{
    return dt == DL_FLOAT64 ? 53 : dt == DL_FLOAT32 ? 24 : dt == DL_FLOAT16 ? 11 : 8;
}

static int floor_log2(uint64_t v)
{
    int n = 0;
    while (v >>= 1)
        n++;
    return n;
}

/* For a float dtype torch first moves the ends of [low, high) inward until
 * low + 1 and high - 1 survive a round trip through the dtype, so that no
 * value can round to high: high 2^31 in float32 becomes 2^31 - 128. */
static void float_range(dl_dtype_t dt, int64_t *low, int64_t *high)
{
    int digits = float_digits(dt);
    int64_t low1 = through_float(dt, *low + 1);
    if (low1 < *low) {
        int n = floor_log2((uint64_t)llabs(*low + 1));
        *low = low1 + (INT64_C(1) << (n - digits + 1));
    }
    int64_t high1 = through_float(dt, *high - 1);
    if (high1 >= *high) {
        int n = floor_log2((uint64_t)llabs(*high - 1));
        *high = high1 - (INT64_C(1) << (n - digits + 1));
    }
}

/* Element i of t, an integer value v: torch converts the int64 to the
 * dtype in one step (to float first for the half types), not by way of a
 * double. */
static void put_int(dl_tensor_t *t, size_t i, int64_t v)
{
    switch (t->dtype) {
    case DL_FLOAT64:
        ((double *)t->data)[i] = (double)v;
        break;
    case DL_FLOAT32:
        ((float *)t->data)[i] = (float)v;
        break;
    case DL_FLOAT16:
        ((uint16_t *)t->data)[i] = dl__float_to_half((float)v);
        break;
    case DL_BFLOAT16:
        ((uint16_t *)t->data)[i] = dl__float_to_bf16((float)v);
        break;
    default:
        dl_dtype_set_i64(t->dtype, t->data, i, v);
        break;
    }
}

dl_status_t dl_rng_randint(dl_rng_t *g, dl_tensor_t *t, int64_t low, int64_t high, char *why,
                           size_t cap)
{
    char scratch[8];
    if (why == NULL) {
        why = scratch;
        cap = sizeof(scratch);
    }
    if (low >= high) {
        snprintf(why, cap, "low must be less than high, but got low=%lld >= high=%lld",
                 (long long)low, (long long)high);
        return DL_ERR_INVALID;
    }
    int64_t lo, hi;
    if (is_float(t->dtype)) {
        float_range(t->dtype, &low, &high);
        if (low >= high) {
            snprintf(why, cap,
                     "low must be less than high in %s, but got low=%lld >= high=%lld there",
                     dl_dtype_name(t->dtype), (long long)low, (long long)high);
            return DL_ERR_INVALID;
        }
        /* float16 is the one float dtype with a largest value that int64
         * can pass; torch only warns when the others lose precision. */
        lo = t->dtype == DL_FLOAT16 ? -65504 : INT64_MIN;
        hi = t->dtype == DL_FLOAT16 ? 65504 : INT64_MAX;
    } else {
        int_bounds(t->dtype, &lo, &hi);
    }
    if (low < lo || low > hi) {
        snprintf(why, cap, "low=%lld is out of bounds for %s", (long long)low,
                 dl_dtype_name(t->dtype));
        return DL_ERR_INVALID;
    }
    if (high - 1 > hi) {
        snprintf(why, cap, "high - 1 = %lld is out of bounds for %s", (long long)(high - 1),
                 dl_dtype_name(t->dtype));
        return DL_ERR_INVALID;
    }
    /* The range may not fit in int64 (low -2^63, high 2^63 - 1); its
     * unsigned difference is exact. A range of 2^32 or more needs a 64-bit
     * draw, which torch makes only for the dtypes that can hold such
     * values. */
    uint64_t range = (uint64_t)high - (uint64_t)low;
    bool wide = range >= (UINT64_C(1) << 32) && (t->dtype == DL_INT64 || t->dtype == DL_FLOAT64 ||
                                                 t->dtype == DL_FLOAT32 || t->dtype == DL_BFLOAT16);
    for (size_t i = 0; i < t->numel; i++) {
        uint64_t draw = wide ? dl_rng_next64(g) : dl_rng_next32(g);
        put_int(t, i, (int64_t)(draw % range + (uint64_t)low));
    }
    return DL_OK;
}

dl_status_t dl_rng_randperm(dl_rng_t *g, dl_tensor_t *t, char *why, size_t cap)
{
    char scratch[8];
    if (why == NULL) {
        why = scratch;
        cap = sizeof(scratch);
    }
    int64_t n = (int64_t)t->numel, lo, hi;
    if (t->dtype == DL_BOOL) {
        snprintf(why, cap, "\"randperm\" not implemented for 'Bool'");
        return DL_ERR_INVALID;
    }
    if (t->dtype == DL_FLOAT16 && n > 2049) {
        snprintf(why, cap, "n cannot be greater than 2049 for Half type.");
        return DL_ERR_INVALID;
    }
    if (t->dtype == DL_FLOAT32 && n > (INT64_C(1) << 24) + 1) {
        snprintf(why, cap, "n cannot be greater than 2^24+1 for Float type.");
        return DL_ERR_INVALID;
    }
    if (!is_float(t->dtype)) {
        int_bounds(t->dtype, &lo, &hi);
        if (n - 1 > hi) {
            /* torch names the C++ type */
            snprintf(why, cap, "value cannot be converted to type %s without overflow",
                     t->dtype == DL_INT8    ? "int8_t"
                     : t->dtype == DL_UINT8 ? "uint8_t"
                                            : "int");
            return DL_ERR_INVALID;
        }
    }
    for (int64_t i = 0; i < n; i++)
        put_int(t, (size_t)i, i);
    /* torch's shuffle: element i swaps with one drawn from i to n - 1, by
     * a 32-bit draw modulo the count left (torch 1.13's CPU kernel). */
    size_t esz = dl_dtype_size(t->dtype);
    uint8_t *d = t->data, tmp[8];
    for (int64_t i = 0; i + 1 < n; i++) {
        int64_t z = i + (int64_t)(dl_rng_next32(g) % (uint64_t)(n - i));
        memcpy(tmp, d + (size_t)i * esz, esz);
        memcpy(d + (size_t)i * esz, d + (size_t)z * esz, esz);
        memcpy(d + (size_t)z * esz, tmp, esz);
    }
    return DL_OK;
}

/* ======================================================================
 * Normal values (Box-Muller)
 *
 * Two uniforms u1, u2 give the radius r = sqrt(-2 log(1 - u)) of one and
 * the angle theta = 2 pi u of the other; r cos(theta) and r sin(theta) are
 * two independent standard normal values. Small tensors and large ones take
 * different roads in torch; both are here.
 * ====================================================================== */

static const double two_pi = 6.283185307179586; /* 2 * pi, as a double */

/* Fewer than 16 elements: one value at a time in float64, from float64
 * uniforms; the pair's second value waits in the generator. */
static double normal_scalar(dl_rng_t *g)
{
    if (g->has_normal) {
        g->has_normal = false;
        return g->normal;
    }
    double u1 = uniform_f64(g);
    double u2 = uniform_f64(g);
    /* torch 1.13 takes log(1 - u2), exact in float64; newer versions write
     * log1p(-u2), which may differ in the last bit of a float64 value. */
    double r = sqrt(-2.0 * log(1.0 - u2));
    double theta = two_pi * u1;
    g->normal = r * sin(theta);
    g->has_normal = true;
    return r * cos(theta);
}

/* ---- float32 as the C library computes it (torch's default kernel) ---- */

static void box_muller16_f32(float *d)
{
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float radius = sqrtf(-2.0f * logf(u1));
        float theta = (float)(two_pi * (double)u2);
        d[j] = radius * cosf(theta);
        d[j + 8] = radius * sinf(theta);
    }
}

static void box_muller16_f64(double *d)
{
    for (int j = 0; j < 8; j++) {
        double u1 = 1.0 - d[j];
        double u2 = d[j + 8];
        double radius = sqrt(-2.0 * log(u1));
        double theta = two_pi * u2;
        d[j] = radius * cos(theta);
        d[j + 8] = radius * sin(theta);
    }
}

/* ---- float32 as torch's AVX2 kernel computes it ----
 *
 * torch evaluates eight lanes at once with Cephes' single-precision
 * polynomials (by way of Pommier's sse_mathfun). Written here for one lane:
 * the same reductions and coefficients, each multiply and add rounded as
 * the compiled kernel rounds it, fused where it fuses. Only the results
 * for arguments in (0, 1] (the logarithm) and [0, 2 pi) (sine and cosine)
 * matter here. */

static float bits_float(uint32_t u)
{
    return dl__f32_from_bits(u);
}

/* log(x) for x in (0, 1]: x = m * 2^e with m in [sqrt(1/2), sqrt(2)),
 * log(x) = log1p(m - 1) + e log(2), the log1p by a degree-9 polynomial, e
 * log(2) in two parts (0.693359375 is exact in few bits). */
static float cephes_logf(float x)
{
    uint32_t bits = dl__f32_bits(x);
    float e = (float)((int32_t)(bits >> 23) - 0x7f) + 1.0f;
    float m = bits_float((bits & ~0x7f800000u) | 0x3f000000u); /* in [0.5, 1) */
    if (m < 0.707106781186547524f) {
        e = e - 1.0f;
        m = (m - 1.0f) + m;
    } else {
        m = m - 1.0f;
    }
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = fmaf(y, m, -1.1514610310e-1f);
    y = fmaf(y, m, 1.1676998740e-1f);
    y = fmaf(y, m, -1.2420140846e-1f);
    y = fmaf(y, m, 1.4249322787e-1f);
    y = fmaf(y, m, -1.6668057665e-1f);
    y = fmaf(y, m, 2.0000714765e-1f);
    y = fmaf(y, m, -2.4999993993e-1f);
    y = fmaf(y, m, 3.3333331174e-1f);
    y = y * m;
    y = fmaf(y, z, e * -2.12194440e-4f);
    y = y - z * 0.5f;
    m = m + y;
    return m + e * 0.693359375f;
}

/* sin and cos of x in [0, 2 pi): x is reduced by the multiple j of pi/4
 * nearest below it, rounded up to even, in three parts of pi/4 (so the
 * reduction is nearly exact); a sine and a cosine polynomial on [-pi/4,
 * pi/4] then give both results, picked and signed by j. */
static void cephes_sincosf(float x, float *s_p, float *c_p)
{
    int32_t j = (int32_t)(x * 1.27323954473516f); /* 4 / pi */
    j = (j + 1) & ~1;
    float y = (float)j;
    bool sin_negative = (j & 4) != 0;
    bool cos_negative = ((j - 2) & 4) == 0;
    bool swap = (j & 2) != 0; /* the cosine polynomial gives the sine */
    x = x + y * -0.78515625f;
    x = x + y * -2.4187564849853515625e-4f;
    x = x + y * -3.77489497744594108e-8f;
    float z = x * x;
    float c = 2.443315711809948e-5f;
    c = fmaf(c, z, -1.388731625493765e-3f);
    c = fmaf(c, z, 4.166664568298827e-2f);
    c = c * z;
    c = fmaf(c, z, -(z * 0.5f));
    c = c + 1.0f;
    float s = -1.9515295891e-4f;
    s = fmaf(s, z, 8.3321608736e-3f);
    s = fmaf(s, z, -1.6666654611e-1f);
    s = s * z;
    s = fmaf(s, x, x);
    float sin_v = swap ? c : s, cos_v = swap ? s : c;
    *s_p = sin_negative ? -sin_v : sin_v;
    *c_p = cos_negative ? -cos_v : cos_v;
}

static void box_muller16_f32_avx2(float *d)
{
    const float two_pi_f = (float)two_pi;
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float radius = sqrtf(-2.0f * cephes_logf(u1));
        float s, c;
        cephes_sincosf(two_pi_f * u2, &s, &c);
        d[j] = radius * c;
        d[j + 8] = radius * s;
    }
}

/* 16 and more elements: uniforms for all, then blocks of 16. When 16 does
 * not divide n, the last 16 elements get fresh uniforms and are transformed
 * again (they overlap the last whole block). */
static void normal_fill_f32(dl_rng_t *g, float *d, size_t n)
{
    void (*block)(float *) = g->cpu == DL_RNG_CPU_AVX2 ? box_muller16_f32_avx2 : box_muller16_f32;
    for (size_t i = 0; i < n; i++)
        d[i] = uniform_f32(g);
    for (size_t i = 0; i + 16 <= n; i += 16)
        block(d + i);
    if (n % 16 != 0) {
        float *tail = d + n - 16;
        for (size_t i = 0; i < 16; i++)
            tail[i] = uniform_f32(g);
        block(tail);
    }
}

static void normal_fill_f64(dl_rng_t *g, double *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = uniform_f64(g);
    for (size_t i = 0; i + 16 <= n; i += 16)
        box_muller16_f64(d + i);
    if (n % 16 != 0) {
        double *tail = d + n - 16;
        for (size_t i = 0; i < 16; i++)
            tail[i] = uniform_f64(g);
        box_muller16_f64(tail);
    }
}

dl_status_t dl_rng_normal(dl_rng_t *g, dl_tensor_t *t)
{
    if (t->dtype != DL_FLOAT32 && t->dtype != DL_FLOAT64)
        return DL_ERR_INVALID;
    if (t->numel >= 16) {
        if (t->dtype == DL_FLOAT32)
            normal_fill_f32(g, t->data, t->numel);
        else
            normal_fill_f64(g, t->data, t->numel);
        return DL_OK;
    }
    for (size_t i = 0; i < t->numel; i++) {
        double v = normal_scalar(g);
        if (t->dtype == DL_FLOAT32)
            ((float *)t->data)[i] = (float)v;
        else
            ((double *)t->data)[i] = v;
    }
    return DL_OK;
}
