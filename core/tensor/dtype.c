/* Element types: names, sizes and element access as double or int64. */
#include <math.h>
#include <stdint.h>
#include <strings.h>

#include "distlab/dtype.h"
#include "internal.h"

/* One row per dtype, in enum order: size, our name, torch's name, and the
 * name in nccl-tests' type column. */
static const struct {
    size_t size;
    const char *name;
    const char *torch_name;
    const char *bench_name;
    bool is_float;
} dtype_info[DL_DTYPE__COUNT] = {
    [DL_BOOL] = {1, "bool", "torch.bool", "bool", false},
    [DL_INT8] = {1, "int8", "torch.int8", "int8", false},
    [DL_UINT8] = {1, "uint8", "torch.uint8", "uint8", false},
    [DL_INT32] = {4, "int32", "torch.int32", "int32", false},
    [DL_INT64] = {8, "int64", "torch.int64", "int64", false},
    [DL_FLOAT16] = {2, "float16", "torch.float16", "half", true},
    [DL_BFLOAT16] = {2, "bfloat16", "torch.bfloat16", "bfloat16", true},
    [DL_FLOAT32] = {4, "float32", "torch.float32", "float", true},
    [DL_FLOAT64] = {8, "float64", "torch.float64", "double", true},
};

/* Names that torch and common shorthand use for the same types. */
static const struct {
    const char *alias;
    dl_dtype_t dt;
} dtype_aliases[] = {
    {"float", DL_FLOAT32}, {"f32", DL_FLOAT32}, {"double", DL_FLOAT64}, {"f64", DL_FLOAT64},
    {"half", DL_FLOAT16},  {"f16", DL_FLOAT16}, {"bf16", DL_BFLOAT16},  {"long", DL_INT64},
    {"i64", DL_INT64},     {"int", DL_INT32},   {"i32", DL_INT32},      {"u8", DL_UINT8},
    {"i8", DL_INT8},
};

static bool dtype_valid(dl_dtype_t dt)
{
    return (unsigned)dt < DL_DTYPE__COUNT;
}

size_t dl_dtype_size(dl_dtype_t dt)
{
    return dtype_valid(dt) ? dtype_info[dt].size : 0;
}

const char *dl_dtype_name(dl_dtype_t dt)
{
    return dtype_valid(dt) ? dtype_info[dt].name : "unknown";
}

const char *dl_dtype_torch_name(dl_dtype_t dt)
{
    return dtype_valid(dt) ? dtype_info[dt].torch_name : "torch.unknown";
}

const char *dl_dtype_bench_name(dl_dtype_t dt)
{
    return dtype_valid(dt) ? dtype_info[dt].bench_name : "unknown";
}

bool dl_dtype_is_float(dl_dtype_t dt)
{
    return dtype_valid(dt) && dtype_info[dt].is_float;
}

dl_status_t dl_dtype_parse(const char *name, dl_dtype_t *dt_p)
{
    if (name == NULL || dt_p == NULL)
        return DL_ERR_INVALID;
    /* Case does not carry meaning in a type name, so "Float32" is float32,
     * as the op names are matched case-insensitively too. */
    for (int i = 0; i < DL_DTYPE__COUNT; i++) {
        if (strcasecmp(name, dtype_info[i].name) == 0) {
            *dt_p = (dl_dtype_t)i;
            return DL_OK;
        }
    }
    for (size_t i = 0; i < sizeof(dtype_aliases) / sizeof(dtype_aliases[0]); i++) {
        if (strcasecmp(name, dtype_aliases[i].alias) == 0) {
            *dt_p = dtype_aliases[i].dt;
            return DL_OK;
        }
    }
    return DL_ERR_INVALID;
}

const char *dl_dtype_all_names(void)
{
    return "bool, int8, uint8, int32, int64, float16, bfloat16, float32, float64";
}

/* ------------------------------------------------------------------------
 * Element access
 * ------------------------------------------------------------------------ */

/* Converting an out-of-range double to an integer type is undefined in C,
 * so clamp first: NaN becomes 0 and anything beyond int64 saturates. The
 * narrower integer types then wrap. Kept for reading a float as an integer
 * inside distlab (dl_dtype_get_i64); a tensor's cast uses torch's rules
 * below. */
static int64_t double_to_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 0x1p63)
        return INT64_MAX;
    if (v <= -0x1p63)
        return INT64_MIN;
    return (int64_t)v;
}

/* A float cast to an integer dtype as torch's casts come out on x86-64,
 * whose truncating conversions give the "integer indefinite" value (the
 * type's minimum) for NaN and for anything out of range: int64 and uint8
 * convert through 64 bits, int32 and int8 through 32 bits, and the narrow
 * types keep the low bits (so float 1e10 is int32 -2147483648 and uint8
 * 0, and 300.5 is uint8 44), as torch prints them. */
static int64_t float_cast_i64(dl_dtype_t dt, double v)
{
    double t = trunc(v);
    if (dt == DL_INT64 || dt == DL_UINT8)
        return t >= -0x1p63 && t < 0x1p63 ? (int64_t)t : INT64_MIN;
    return t >= -0x1p31 && t < 0x1p31 ? (int64_t)t : INT32_MIN;
}

double dl_dtype_get(dl_dtype_t dt, const void *base, size_t i)
{
    switch (dt) {
    case DL_BOOL:
        return ((const uint8_t *)base)[i] != 0 ? 1.0 : 0.0;
    case DL_INT8:
        return ((const int8_t *)base)[i];
    case DL_UINT8:
        return ((const uint8_t *)base)[i];
    case DL_INT32:
        return ((const int32_t *)base)[i];
    case DL_INT64:
        return (double)((const int64_t *)base)[i];
    case DL_FLOAT16:
        return dl__half_to_float(((const uint16_t *)base)[i]);
    case DL_BFLOAT16:
        return dl__bf16_to_float(((const uint16_t *)base)[i]);
    case DL_FLOAT32:
        return ((const float *)base)[i];
    case DL_FLOAT64:
        return ((const double *)base)[i];
    case DL_DTYPE__COUNT:
        break;
    }
    return 0.0;
}

void dl_dtype_set(dl_dtype_t dt, void *base, size_t i, double v)
{
    switch (dt) {
    case DL_BOOL:
        /* NaN is nonzero, so it is true, as bool(float('nan')) is. */
        ((uint8_t *)base)[i] = v != 0.0;
        break;
    case DL_INT8:
    case DL_UINT8:
    case DL_INT32:
    case DL_INT64:
        dl_dtype_set_i64(dt, base, i, float_cast_i64(dt, v));
        break;
    case DL_FLOAT16:
        ((uint16_t *)base)[i] = dl__double_to_half(v);
        break;
    case DL_BFLOAT16:
        ((uint16_t *)base)[i] = dl__double_to_bf16(v);
        break;
    case DL_FLOAT32:
        ((float *)base)[i] = (float)v;
        break;
    case DL_FLOAT64:
        ((double *)base)[i] = v;
        break;
    case DL_DTYPE__COUNT:
        break;
    }
}

double dl_dtype_round(dl_dtype_t dt, double v)
{
    if (dt == DL_FLOAT64)
        return v;
    uint64_t buf;
    dl_dtype_set(dt, &buf, 0, v);
    return dl_dtype_get(dt, &buf, 0);
}

int64_t dl_dtype_get_i64(dl_dtype_t dt, const void *base, size_t i)
{
    switch (dt) {
    case DL_BOOL:
        return ((const uint8_t *)base)[i] != 0;
    case DL_INT8:
        return ((const int8_t *)base)[i];
    case DL_UINT8:
        return ((const uint8_t *)base)[i];
    case DL_INT32:
        return ((const int32_t *)base)[i];
    case DL_INT64:
        return ((const int64_t *)base)[i];
    case DL_FLOAT16:
    case DL_BFLOAT16:
    case DL_FLOAT32:
    case DL_FLOAT64:
        return double_to_i64(dl_dtype_get(dt, base, i));
    case DL_DTYPE__COUNT:
        break;
    }
    return 0;
}

void dl_dtype_set_i64(dl_dtype_t dt, void *base, size_t i, int64_t v)
{
    /* The narrowing casts below go through the unsigned type, whose
     * conversion is defined as modulo 2^N, and gcc defines the final
     * unsigned-to-signed step as two's complement. */
    switch (dt) {
    case DL_BOOL:
        ((uint8_t *)base)[i] = v != 0;
        break;
    case DL_INT8:
        ((int8_t *)base)[i] = (int8_t)(uint8_t)(uint64_t)v;
        break;
    case DL_UINT8:
        ((uint8_t *)base)[i] = (uint8_t)(uint64_t)v;
        break;
    case DL_INT32:
        ((int32_t *)base)[i] = (int32_t)(uint32_t)(uint64_t)v;
        break;
    case DL_INT64:
        ((int64_t *)base)[i] = v;
        break;
    case DL_FLOAT16:
        ((uint16_t *)base)[i] = dl__i64_to_half(v);
        break;
    case DL_BFLOAT16:
        ((uint16_t *)base)[i] = dl__i64_to_bf16(v);
        break;
    case DL_FLOAT64:
        ((double *)base)[i] = (double)v;
        break;
    case DL_FLOAT32:
        /* A direct conversion rounds once, where going through double
         * could round twice for values above 2^53. */
        ((float *)base)[i] = (float)v;
        break;
    case DL_DTYPE__COUNT:
        break;
    }
}
