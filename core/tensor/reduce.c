/* Reduce operations: names, the dtype rules, and the element-wise kernels
 * that every reducing collective runs in its inner loop.
 *
 * Each (op, dtype) pair gets its own plain loop, so that gcc -O3 can
 * vectorise it: no per-element switch, no function call, and restrict
 * pointers so that the compiler need not guard against overlap. Because
 * dl_reduce allows dst to be a or b, every kernel comes in three shapes,
 * chosen by how the pointers alias:
 *
 *   k3  dst, a, b all distinct      dst[i] = a[i] op b[i]
 *   k2  dst is one of the inputs    dst[i] = dst[i] op other[i]
 *   k1  dst, a and b all the same   dst[i] = dst[i] op dst[i]
 *
 * k2 serves both dst == a and dst == b because every op here commutes. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "distlab/op.h"
#include "internal.h"

/* ------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------ */

static const char *const op_names[DL_OP__COUNT] = {
    [DL_OP_SUM] = "sum", [DL_OP_PROD] = "prod", [DL_OP_MIN] = "min", [DL_OP_MAX] = "max",
    [DL_OP_AVG] = "avg", [DL_OP_BAND] = "band", [DL_OP_BOR] = "bor", [DL_OP_BXOR] = "bxor",
};

const char *dl_op_name(dl_op_t op)
{
    return (unsigned)op < DL_OP__COUNT ? op_names[op] : "unknown";
}

dl_status_t dl_op_parse(const char *name, dl_op_t *op_p)
{
    if (name == NULL || op_p == NULL)
        return DL_ERR_INVALID;
    for (int i = 0; i < DL_OP__COUNT; i++) {
        if (strcasecmp(name, op_names[i]) == 0) {
            *op_p = (dl_op_t)i;
            return DL_OK;
        }
    }
    /* torch spells it ReduceOp.PRODUCT. */
    if (strcasecmp(name, "product") == 0) {
        *op_p = DL_OP_PROD;
        return DL_OK;
    }
    return DL_ERR_INVALID;
}

const char *dl_op_all_names(void)
{
    return "sum, prod, min, max, avg, band, bor, bxor";
}

/* ------------------------------------------------------------------------
 * Which ops each dtype has
 * ------------------------------------------------------------------------ */

static bool op_is_bitwise(dl_op_t op)
{
    return op == DL_OP_BAND || op == DL_OP_BOR || op == DL_OP_BXOR;
}

/* The messages must be static, so spell out each combination once. */
#define BITWISE_MSG(op)                                                                            \
    {                                                                                              \
        "bitwise op " op " is not defined for float16",                                            \
            "bitwise op " op " is not defined for bfloat16",                                       \
            "bitwise op " op " is not defined for float32",                                        \
            "bitwise op " op " is not defined for float64",                                        \
    }

static const char *const bitwise_msgs[3][4] = {
    BITWISE_MSG("band"),
    BITWISE_MSG("bor"),
    BITWISE_MSG("bxor"),
};

dl_status_t dl_op_check(dl_op_t op, dl_dtype_t dt, const char **why_p)
{
    const char *why = NULL;
    dl_status_t st = DL_OK;
    if ((unsigned)op >= DL_OP__COUNT) {
        st = DL_ERR_INVALID;
        why = "unknown reduce op";
    } else if ((unsigned)dt >= DL_DTYPE__COUNT) {
        st = DL_ERR_INVALID;
        why = "unknown dtype";
    } else if (op_is_bitwise(op) && dl_dtype_is_float(dt)) {
        /* The float dtypes are the last four of the enum, in message order. */
        st = DL_ERR_DTYPE;
        why = bitwise_msgs[op - DL_OP_BAND][dt - DL_FLOAT16];
    } else if (op == DL_OP_AVG && dt == DL_BOOL) {
        /* The mean of truth values is not a truth value; torch refuses it. */
        st = DL_ERR_DTYPE;
        why = "op avg is not defined for bool";
    }
    if (st != DL_OK && why_p != NULL)
        *why_p = why;
    return st;
}

/* ------------------------------------------------------------------------
 * Element ops
 *
 * Signed integers add and multiply through their unsigned type, where
 * overflow wraps by definition instead of being undefined; the conversion
 * back is two's complement in gcc. Float min and max return a NaN operand
 * whichever side it is on, as torch.minimum and torch.maximum do. The
 * 16-bit floats compute in float and round back once per element.
 * ------------------------------------------------------------------------ */

#define WRAP_ADD(T, U, x, y) ((T)((U)(x) + (U)(y)))
#define WRAP_MUL(T, U, x, y) ((T)((U)(x) * (U)(y)))
#define MIN_OF(x, y)         ((x) < (y) ? (x) : (y))
#define MAX_OF(x, y)         ((x) > (y) ? (x) : (y))
#define FMIN_NAN(x, y)       (((x) < (y) || (x) != (x)) ? (x) : (y))
#define FMAX_NAN(x, y)       (((x) > (y) || (x) != (x)) ? (x) : (y))

#define I8_SUM(x, y)  WRAP_ADD(int8_t, uint8_t, x, y)
#define I8_PROD(x, y) WRAP_MUL(int8_t, uint8_t, x, y)
#define U8_SUM(x, y)  ((uint8_t)((x) + (y)))
#define U8_PROD(x, y) ((uint8_t)((x) * (y)))
#define I32_SUM(x, y) WRAP_ADD(int32_t, uint32_t, x, y)
/* uint32_t is unsigned int, so the product is not promoted to signed int. */
#define I32_PROD(x, y) WRAP_MUL(int32_t, uint32_t, x, y)
#define I64_SUM(x, y)  WRAP_ADD(int64_t, uint64_t, x, y)
#define I64_PROD(x, y) WRAP_MUL(int64_t, uint64_t, x, y)
#define BIT_AND(x, y)  ((x) & (y))
#define BIT_OR(x, y)   ((x) | (y))
#define BIT_XOR(x, y)  ((x) ^ (y))

/* Bool bytes: any nonzero byte is true, and results are always 0 or 1. */
#define B_OR(x, y)  ((uint8_t)(((x) | (y)) != 0))
#define B_AND(x, y) ((uint8_t)(((x) != 0) & ((y) != 0)))
#define B_XOR(x, y) ((uint8_t)(((x) != 0) ^ ((y) != 0)))

#define F_SUM(x, y)  ((x) + (y))
#define F_PROD(x, y) ((x) * (y))

/* Functions rather than macros for the 16-bit types, so that each operand
 * is converted once although min and max name it twice. */
static inline float f32_min(float x, float y)
{
    return FMIN_NAN(x, y);
}

static inline float f32_max(float x, float y)
{
    return FMAX_NAN(x, y);
}

#define H_OP(FOP, x, y)  dl__float_to_half(FOP(dl__half_to_float(x), dl__half_to_float(y)))
#define H_SUM(x, y)      H_OP(F_SUM, x, y)
#define H_PROD(x, y)     H_OP(F_PROD, x, y)
#define H_MIN(x, y)      H_OP(f32_min, x, y)
#define H_MAX(x, y)      H_OP(f32_max, x, y)
#define BF_OP(FOP, x, y) dl__float_to_bf16(FOP(dl__bf16_to_float(x), dl__bf16_to_float(y)))
#define BF_SUM(x, y)     BF_OP(F_SUM, x, y)
#define BF_PROD(x, y)    BF_OP(F_PROD, x, y)
#define BF_MIN(x, y)     BF_OP(f32_min, x, y)
#define BF_MAX(x, y)     BF_OP(f32_max, x, y)

/* ------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------ */

typedef void (*kernel3_fn)(void *restrict dst, const void *restrict a, const void *restrict b,
                           size_t n);
typedef void (*kernel2_fn)(void *restrict dst, const void *restrict b, size_t n);
typedef void (*kernel1_fn)(void *dst, size_t n);

typedef struct {
    kernel3_fn k3;
    kernel2_fn k2;
    kernel1_fn k1;
} kernel_t;

/* The two shapes the collectives run are compiled for the widest vector
 * unit of each x86-64 generation, and the loader picks the one the CPU has
 * (an ifunc), so one binary stays portable. Vectorising across elements
 * keeps each element's own operations in the same order: results are the
 * same bits on every path. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define KERNEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KERNEL_CLONES
#endif

/* Defines the three shapes of one kernel, named name##_k3 and so on, and
 * a kernel_t called name that collects them. */
#define DEFINE_KERNEL(name, T, OP)                                                                 \
    KERNEL_CLONES static void name##_k3(void *restrict dst_, const void *restrict a_,              \
                                        const void *restrict b_, size_t n)                         \
    {                                                                                              \
        T *restrict dst = dst_;                                                                    \
        const T *restrict a = a_;                                                                  \
        const T *restrict b = b_;                                                                  \
        for (size_t i = 0; i < n; i++)                                                             \
            dst[i] = OP(a[i], b[i]);                                                               \
    }                                                                                              \
    KERNEL_CLONES static void name##_k2(void *restrict dst_, const void *restrict b_, size_t n)    \
    {                                                                                              \
        T *restrict dst = dst_;                                                                    \
        const T *restrict b = b_;                                                                  \
        for (size_t i = 0; i < n; i++)                                                             \
            dst[i] = OP(dst[i], b[i]);                                                             \
    }                                                                                              \
    static void name##_k1(void *dst_, size_t n)                                                    \
    {                                                                                              \
        T *dst = dst_;                                                                             \
        for (size_t i = 0; i < n; i++)                                                             \
            dst[i] = OP(dst[i], dst[i]);                                                           \
    }                                                                                              \
    static const kernel_t name = {name##_k3, name##_k2, name##_k1};

/* The four ops every dtype has, then the three bitwise ones. */
#define DEFINE_ARITH(pfx, T, SUM, PROD, MIN, MAX)                                                  \
    DEFINE_KERNEL(pfx##_sum, T, SUM)                                                               \
    DEFINE_KERNEL(pfx##_prod, T, PROD)                                                             \
    DEFINE_KERNEL(pfx##_min, T, MIN)                                                               \
    DEFINE_KERNEL(pfx##_max, T, MAX)
#define DEFINE_BITWISE(pfx, T, AND, OR, XOR)                                                       \
    DEFINE_KERNEL(pfx##_band, T, AND)                                                              \
    DEFINE_KERNEL(pfx##_bor, T, OR)                                                                \
    DEFINE_KERNEL(pfx##_bxor, T, XOR)

DEFINE_ARITH(k_bool, uint8_t, B_OR, B_AND, B_AND, B_OR)
DEFINE_BITWISE(k_bool, uint8_t, B_AND, B_OR, B_XOR)
DEFINE_ARITH(k_i8, int8_t, I8_SUM, I8_PROD, MIN_OF, MAX_OF)
DEFINE_BITWISE(k_i8, int8_t, BIT_AND, BIT_OR, BIT_XOR)
DEFINE_ARITH(k_u8, uint8_t, U8_SUM, U8_PROD, MIN_OF, MAX_OF)
DEFINE_BITWISE(k_u8, uint8_t, BIT_AND, BIT_OR, BIT_XOR)
DEFINE_ARITH(k_i32, int32_t, I32_SUM, I32_PROD, MIN_OF, MAX_OF)
DEFINE_BITWISE(k_i32, int32_t, BIT_AND, BIT_OR, BIT_XOR)
DEFINE_ARITH(k_i64, int64_t, I64_SUM, I64_PROD, MIN_OF, MAX_OF)
DEFINE_BITWISE(k_i64, int64_t, BIT_AND, BIT_OR, BIT_XOR)
DEFINE_ARITH(k_f16, uint16_t, H_SUM, H_PROD, H_MIN, H_MAX)
DEFINE_ARITH(k_bf16, uint16_t, BF_SUM, BF_PROD, BF_MIN, BF_MAX)
DEFINE_ARITH(k_f32, float, F_SUM, F_PROD, FMIN_NAN, FMAX_NAN)
DEFINE_ARITH(k_f64, double, F_SUM, F_PROD, FMIN_NAN, FMAX_NAN)

/* A row of the kernel table for a dtype with every op, or only the
 * arithmetic ones. Avg accumulates as a sum; dl_op_scale divides later. */
#define ROW_ALL(pfx)                                                                               \
    {                                                                                              \
        [DL_OP_SUM] = &pfx##_sum, [DL_OP_PROD] = &pfx##_prod, [DL_OP_MIN] = &pfx##_min,            \
        [DL_OP_MAX] = &pfx##_max, [DL_OP_AVG] = &pfx##_sum, [DL_OP_BAND] = &pfx##_band,            \
        [DL_OP_BOR] = &pfx##_bor, [DL_OP_BXOR] = &pfx##_bxor,                                      \
    }
#define ROW_ARITH(pfx)                                                                             \
    {                                                                                              \
        [DL_OP_SUM] = &pfx##_sum, [DL_OP_PROD] = &pfx##_prod, [DL_OP_MIN] = &pfx##_min,            \
        [DL_OP_MAX] = &pfx##_max, [DL_OP_AVG] = &pfx##_sum,                                        \
    }

/* NULL entries are the combinations dl_op_check refuses. */
static const kernel_t *const kernels[DL_DTYPE__COUNT][DL_OP__COUNT] = {
    [DL_BOOL] = ROW_ALL(k_bool),       [DL_INT8] = ROW_ALL(k_i8),
    [DL_UINT8] = ROW_ALL(k_u8),        [DL_INT32] = ROW_ALL(k_i32),
    [DL_INT64] = ROW_ALL(k_i64),       [DL_FLOAT16] = ROW_ARITH(k_f16),
    [DL_BFLOAT16] = ROW_ARITH(k_bf16), [DL_FLOAT32] = ROW_ARITH(k_f32),
    [DL_FLOAT64] = ROW_ARITH(k_f64),
};

static bool overlaps(const void *p, const void *q, size_t nbytes)
{
    uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
    return x < y + nbytes && y < x + nbytes;
}

dl_status_t dl_reduce(dl_op_t op, dl_dtype_t dt, void *dst, const void *a, const void *b, size_t n)
{
    dl_status_t st = dl_op_check(op, dt, NULL);
    if (st != DL_OK)
        return st;
    if (n == 0)
        return DL_OK;
    if (dst == NULL || a == NULL || b == NULL)
        return DL_ERR_INVALID;
    const kernel_t *k = kernels[dt][op];
    size_t nbytes = n * dl_dtype_size(dt);

    /* Exact aliasing is allowed and common (the collective engine reduces
     * into its accumulator in place). Partial overlap would make the result
     * depend on the loop order, so it is refused rather than guessed at. */
    if (dst == a && dst == b) {
        k->k1(dst, n);
    } else if (dst == a || dst == b) {
        const void *other = dst == a ? b : a;
        if (overlaps(dst, other, nbytes))
            return DL_ERR_INVALID;
        k->k2(dst, other, n);
    } else {
        /* a and b are only read, so restrict allows them to overlap. */
        if (overlaps(dst, a, nbytes) || overlaps(dst, b, nbytes))
            return DL_ERR_INVALID;
        k->k3(dst, a, b, n);
    }
    return DL_OK;
}

dl_status_t dl_reduce_kernels(dl_op_t op, dl_dtype_t dt, dl_reduce_kernels_t *k_p)
{
    dl_status_t st = dl_op_check(op, dt, NULL);
    if (st != DL_OK)
        return st;
    *k_p = (dl_reduce_kernels_t){kernels[dt][op]->k3, kernels[dt][op]->k2};
    return DL_OK;
}

/* ------------------------------------------------------------------------
 * Scaling for avg
 * ------------------------------------------------------------------------ */

/* C's integer division truncates toward zero, which is what avg promises.
 * The one quotient that overflows, INT_MIN / -1, is avoided by negating
 * through the unsigned type instead of dividing by -1. */
#define SCALE_INT(T, U)                                                                            \
    do {                                                                                           \
        T *p = dst;                                                                                \
        if (divisor == -1) {                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                p[i] = (T)(0 - (U)p[i]);                                                           \
        } else {                                                                                   \
            T d = (T)divisor;                                                                      \
            for (size_t i = 0; i < n; i++)                                                         \
                p[i] = (T)(p[i] / d);                                                              \
        }                                                                                          \
    } while (0)

dl_status_t dl_op_scale(dl_dtype_t dt, void *dst, size_t n, int divisor)
{
    if ((unsigned)dt >= DL_DTYPE__COUNT || divisor == 0 || (n > 0 && dst == NULL))
        return DL_ERR_INVALID;
    switch (dt) {
    case DL_BOOL:
        return DL_ERR_DTYPE;
    case DL_INT8:
        /* A divisor outside int8's range gives quotient 0 (or, for -128
         * itself, 1); dividing as int does that without a narrowing cast. */
        for (size_t i = 0; i < n; i++)
            ((int8_t *)dst)[i] = (int8_t)(((int8_t *)dst)[i] / divisor);
        break;
    case DL_UINT8: {
        /* A negative divisor would convert to a huge unsigned one; divide
         * as int so that 200 / -2 is -100 and wraps like any uint8 store. */
        uint8_t *p = dst;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(p[i] / divisor);
        break;
    }
    case DL_INT32:
        SCALE_INT(int32_t, uint32_t);
        break;
    case DL_INT64:
        SCALE_INT(int64_t, uint64_t);
        break;
    case DL_FLOAT16: {
        uint16_t *p = dst;
        float d = (float)divisor;
        for (size_t i = 0; i < n; i++)
            p[i] = dl__float_to_half(dl__half_to_float(p[i]) / d);
        break;
    }
    case DL_BFLOAT16: {
        uint16_t *p = dst;
        float d = (float)divisor;
        for (size_t i = 0; i < n; i++)
            p[i] = dl__float_to_bf16(dl__bf16_to_float(p[i]) / d);
        break;
    }
    case DL_FLOAT32: {
        float *p = dst;
        float d = (float)divisor;
        for (size_t i = 0; i < n; i++)
            p[i] = p[i] / d;
        break;
    }
    case DL_FLOAT64: {
        double *p = dst;
        double d = (double)divisor;
        for (size_t i = 0; i < n; i++)
            p[i] = p[i] / d;
        break;
    }
    case DL_DTYPE__COUNT:
        break;
    }
    return DL_OK;
}
