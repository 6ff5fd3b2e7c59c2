/* Element types, named as torch names them. */
#ifndef DISTLAB_DTYPE_H
#define DISTLAB_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"

typedef enum {
    DL_BOOL,
    DL_INT8,
    DL_UINT8,
    DL_INT32,
    DL_INT64,
    DL_FLOAT16,
    DL_BFLOAT16,
    DL_FLOAT32,
    DL_FLOAT64,
    DL_DTYPE__COUNT
} dl_dtype_t;

/* Size of one element in bytes. */
size_t dl_dtype_size(dl_dtype_t dt);
/* Short name used on the command line: "float32", "int64", "bool". */
const char *dl_dtype_name(dl_dtype_t dt);
/* torch's name as printed in a tensor's suffix: "torch.float32". */
const char *dl_dtype_torch_name(dl_dtype_t dt);
/* nccl-tests' type column: "float", "half", "bfloat16", "double", "int32", "int64", ... */
const char *dl_dtype_bench_name(dl_dtype_t dt);
bool dl_dtype_is_float(dl_dtype_t dt);
/* Parses a name ("float32", "float", "f32", "int64", "long", "half", ...).
 * Returns DL_ERR_INVALID for an unknown name; *dt_p is set only on success. */
dl_status_t dl_dtype_parse(const char *name, dl_dtype_t *dt_p);
/* "bool, int8, uint8, int32, int64, float16, bfloat16, float32, float64" */
const char *dl_dtype_all_names(void);

/* IEEE half and bfloat16 conversions, round to nearest even. */
float dl_half_to_float(uint16_t h);
uint16_t dl_float_to_half(float f);
float dl_bf16_to_float(uint16_t b);
uint16_t dl_float_to_bf16(float f);

/* Element access as double (for printing, checking, tests). For integer
 * dtypes the value is exact up to 2^53. */
double dl_dtype_get(dl_dtype_t dt, const void *base, size_t i);
/* Stores v converted to dt (truncation toward zero for integers, nonzero
 * means true for bool, round to nearest even for the half types). */
void dl_dtype_set(dl_dtype_t dt, void *base, size_t i, double v);
/* v as a value of dt holds it, read back: dl_dtype_set's conversion, as
 * a kernel's intermediate in that dtype rounds. */
double dl_dtype_round(dl_dtype_t dt, double v);
/* Exact int64 access for integer dtypes and bool. */
int64_t dl_dtype_get_i64(dl_dtype_t dt, const void *base, size_t i);
void dl_dtype_set_i64(dl_dtype_t dt, void *base, size_t i, int64_t v);

#endif
