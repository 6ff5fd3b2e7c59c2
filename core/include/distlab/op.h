/* Reduce operations and their kernels. */
#ifndef DISTLAB_OP_H
#define DISTLAB_OP_H

#include <stddef.h>

#include "distlab/dtype.h"
#include "distlab/status.h"

typedef enum {
    DL_OP_SUM,
    DL_OP_PROD,
    DL_OP_MIN,
    DL_OP_MAX,
    DL_OP_AVG,
    DL_OP_BAND,
    DL_OP_BOR,
    DL_OP_BXOR,
    DL_OP__COUNT
} dl_op_t;

/* "sum", "prod", ... as on the command line. */
const char *dl_op_name(dl_op_t op);
/* Parses "sum", "prod"/"product", "min", "max", "avg", "band", "bor", "bxor"
 * (case-insensitive). *op_p is set only on success. */
dl_status_t dl_op_parse(const char *name, dl_op_t *op_p);
/* "sum, prod, min, max, avg, band, bor, bxor" */
const char *dl_op_all_names(void);

/* Whether op is defined for dt, as torch defines it: bitwise ops only for
 * integers and bool, avg not for bool. On DL_ERR_DTYPE, *why_p (when not
 * NULL) points to a static message such as "bitwise op band is not defined
 * for float32". */
dl_status_t dl_op_check(dl_op_t op, dl_dtype_t dt, const char **why_p);

/* dst[i] = a[i] op b[i] for i < n. dst may alias a or b. For avg this is the
 * sum (the caller divides at the end with dl_op_scale). float16 and bfloat16
 * are computed in float32 and rounded to nearest even per element. Bool: sum
 * and max are logical or, prod and min logical and. */
dl_status_t dl_reduce(dl_op_t op, dl_dtype_t dt, void *dst, const void *a, const void *b, size_t n);
/* dl_reduce's kernels for (op, dt), for a caller that reduces a buffer
 * block by block into its own accumulator: dl_reduce's checks cost as much
 * as a kernel run over a few hundred bytes. k3: dst = a op b, k2: dst = dst
 * op b; neither checks anything, and dst must not overlap a or b. DL_OK,
 * or dl_op_check's error when op is not defined for dt. */
typedef struct {
    void (*k3)(void *restrict dst, const void *restrict a, const void *restrict b, size_t n);
    void (*k2)(void *restrict dst, const void *restrict b, size_t n);
} dl_reduce_kernels_t;
dl_status_t dl_reduce_kernels(dl_op_t op, dl_dtype_t dt, dl_reduce_kernels_t *k_p);
/* dst[i] /= divisor (integers: truncation toward zero), for avg. */
dl_status_t dl_op_scale(dl_dtype_t dt, void *dst, size_t n, int divisor);

#endif
