/* Between core/tensor/cuda.c and the cuda module (cuda_runtime.c): the
 * calls that need the CUDA runtime. cuda.c handles everything that stays in
 * host memory itself, so a copy or a memset reaches the module only when a
 * GPU is involved. */
#ifndef DL_TENSOR_CUDA_MODULE_H
#define DL_TENSOR_CUDA_MODULE_H

#include <stddef.h>

#include "distlab/tensor.h"

typedef struct {
    int (*device_count)(char *why, size_t cap);
    dl_allocator_t *(*allocator)(int device);
    /* At least one side is on a GPU; n > 0 need not hold. */
    dl_status_t (*copy)(void *dst, dl_device_t dst_dev, const void *src, dl_device_t src_dev,
                        size_t n);
    /* ptr is on a GPU. */
    dl_status_t (*zero)(void *ptr, dl_device_t dev, size_t n);
    /* ptr is host memory. */
    dl_status_t (*pin)(void *ptr, size_t n);
    void (*unpin)(void *ptr);
} dl__cuda_ops_t;

/* Sets what dl_cuda_last_error() returns, for the calling thread. */
void dl__cuda_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
