/* Private helpers of the tensor module: how a dimension splits a tensor,
 * and the half-precision conversions as inline functions, so that the
 * reduce kernels can inline them into their loops instead of calling
 * through the public wrappers in half.c. */
#ifndef DISTLAB_TENSOR_INTERNAL_H
#define DISTLAB_TENSOR_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "distlab/dtype.h"
#include "distlab/tensor.h"

/* The sizes before, at and after dimension dim of t: the n elements along
 * dim of one (outer, inner) pair lie inner apart. A 0-d tensor is one row
 * of one element. */
static inline void dl__split_dims(const dl_tensor_t *t, int dim, size_t *outer, size_t *n,
                                  size_t *inner)
{
    *outer = 1;
    *inner = 1;
    *n = t->ndim > 0 ? (size_t)t->shape[dim] : 1;
    for (int d = 0; d < dim; d++)
        *outer *= (size_t)t->shape[d];
    for (int d = dim + 1; d < t->ndim; d++)
        *inner *= (size_t)t->shape[d];
}

/* Bit casts through memcpy are the defined way to reinterpret a float in C;
 * the compiler turns them into plain register moves. */
static inline uint32_t dl__f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float dl__f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* ------------------------------------------------------------------------
 * IEEE binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
 * ------------------------------------------------------------------------ */

static inline float dl__half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) /* Infinity or NaN: the payload moves up with the mantissa. */
        return dl__f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) /* Normal: rebias the exponent from 15 to 127. */
        return dl__f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    /* Zero or subnormal: the value is mant * 2^-24, which float holds
     * exactly, so one multiplication normalises it. */
    float mag = (float)mant * 0x1p-24f;
    return dl__f32_from_bits(sign | dl__f32_bits(mag));
}

static inline uint16_t dl__float_to_half(float f)
{
    uint32_t x = dl__f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t mag = x & 0x7fffffffu;

    if (mag > 0x7f800000u) /* NaN: keep the top payload bits and make it quiet, as F16C does. */
        return (uint16_t)(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
    /* 65520 is halfway between the largest half (65504, odd mantissa) and
     * 65536, so it and everything above rounds to infinity. */
    if (mag >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (mag >= 0x38800000u) {
        /* Normal half (>= 2^-14). Rebias the exponent by -112 and round the
         * 13 dropped bits to nearest even: adding 0xfff plus the lowest kept
         * bit carries into the kept bits exactly when we must round up, and
         * a carry out of the mantissa correctly bumps the exponent. */
        uint32_t odd = (mag >> 13) & 1u;
        mag = mag - 0x38000000u + 0xfffu + odd;
        return (uint16_t)(sign | (mag >> 13));
    }
    /* Subnormal half: the result is round(|f| / 2^-24). Below 2^-25 every
     * value rounds to zero (2^-25 itself is a tie that goes to the even 0). */
    uint32_t e = mag >> 23;
    if (e < 102)
        return sign;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u)))
        q++; /* May carry into 0x400, the smallest normal: still correct. */
    return (uint16_t)(sign | q);
}

/* ------------------------------------------------------------------------
 * bfloat16: the top 16 bits of a float32 (8 exponent bits, 7 mantissa bits).
 * ------------------------------------------------------------------------ */

static inline float dl__bf16_to_float(uint16_t b)
{
    return dl__f32_from_bits((uint32_t)b << 16);
}

static inline uint16_t dl__float_to_bf16(float f)
{
    uint32_t x = dl__f32_bits(f);
    /* A NaN must stay a NaN even when its payload sits in the low half
     * that truncation drops, so force the quiet bit. */
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    /* Round to nearest even; a carry out of the mantissa bumps the exponent,
     * which also turns values past the largest bfloat16 into infinity. */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* Conversions straight from double, rounded once (half.c). */
uint16_t dl__double_to_half(double v);
uint16_t dl__double_to_bf16(double v);
uint16_t dl__i64_to_half(int64_t v);
uint16_t dl__i64_to_bf16(int64_t v);

/* Zero-fills n bytes at ptr on dev: memset on the host, cudaMemset on a
 * GPU (cuda.c; DL_ERR_UNSUPPORTED without CUDA, see dl_cuda_last_error). */
dl_status_t dl__cuda_zero(void *ptr, dl_device_t dev, size_t n);

#endif
