/* Conversions between float and the two 16-bit float formats.
 *
 * The bit-level work lives in internal.h as inline functions so the reduce
 * kernels can inline it; this file holds the public entry points and the
 * conversions from double. */
#include <math.h>

#include "distlab/dtype.h"
#include "internal.h"

float dl_half_to_float(uint16_t h)
{
    return dl__half_to_float(h);
}

uint16_t dl_float_to_half(float f)
{
    return dl__float_to_half(f);
}

float dl_bf16_to_float(uint16_t b)
{
    return dl__bf16_to_float(b);
}

uint16_t dl_float_to_bf16(float f)
{
    return dl__float_to_bf16(f);
}

/* Rounding a double to float and then to half would round twice, and a
 * value just above a half's halfway point could land exactly on a float
 * halfway point and then go the wrong way. Rounding the first step "to odd"
 * (truncate, then set the last bit when anything was dropped) keeps the
 * information that the value was not a tie; since float has more than two
 * bits beyond either 16-bit format, the second, nearest-even rounding then
 * gives the correctly rounded result. */
static float double_to_float_round_odd(double v)
{
    float f = (float)v;
    if (isnan(v) || (double)f == v)
        return f;
    uint32_t x = dl__f32_bits(f);
    uint32_t sign = x & 0x80000000u;
    uint32_t mag = x & 0x7fffffffu;
    /* Truncate toward zero: step back one ulp when rounding went outward
     * (this also brings an overflow to infinity back to the largest float). */
    if (fabs((double)f) > fabs(v))
        mag -= 1;
    return dl__f32_from_bits(sign | mag | 1u);
}

uint16_t dl__double_to_half(double v)
{
    return dl__float_to_half(double_to_float_round_odd(v));
}

uint16_t dl__double_to_bf16(double v)
{
    return dl__float_to_bf16(double_to_float_round_odd(v));
}

/* The same idea for integers: keep the top 24 significant bits and fold
 * everything below into the last kept bit, which float then holds exactly. */
static float i64_to_float_round_odd(int64_t v)
{
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (u >= (1ull << 24)) {
        int drop = 64 - 24 - __builtin_clzll(u);
        uint64_t kept = u >> drop;
        if ((kept << drop) != u)
            kept |= 1;
        u = kept << drop;
    }
    float f = (float)u;
    return v < 0 ? -f : f;
}

uint16_t dl__i64_to_half(int64_t v)
{
    return dl__float_to_half(i64_to_float_round_odd(v));
}

uint16_t dl__i64_to_bf16(int64_t v)
{
    return dl__float_to_bf16(i64_to_float_round_odd(v));
}
