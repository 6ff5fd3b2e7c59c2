/* A tensor: dtype, shape (0 to 8 dimensions), device and contiguous storage.
 *
 * Storage comes from an allocator: plain heap memory by default, or a
 * communicator's shared-memory arena (dl_comm_allocator) so that peers on the
 * same host can read it directly. */
#ifndef DISTLAB_TENSOR_H
#define DISTLAB_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/dtype.h"
#include "distlab/status.h"

#define DL_MAX_DIMS 8

typedef enum { DL_DEVICE_CPU, DL_DEVICE_CUDA } dl_device_type_t;

typedef struct {
    dl_device_type_t type;
    int index; /* cuda:N; 0 for cpu */
} dl_device_t;

typedef struct dl_allocator {
    /* Returns memory aligned to at least 64 bytes, or NULL. */
    void *(*alloc)(struct dl_allocator *self, size_t nbytes);
    void (*free)(struct dl_allocator *self, void *ptr, size_t nbytes);
} dl_allocator_t;

typedef struct {
    dl_dtype_t dtype;
    int ndim;
    int64_t shape[DL_MAX_DIMS];
    dl_device_t device;
    size_t numel;
    void *data;
    dl_allocator_t *alloc; /* who frees data; NULL when data is borrowed */
} dl_tensor_t;

/* The process-wide heap allocator (aligned malloc). */
dl_allocator_t *dl_heap_allocator(void);

/* Allocates a zero-filled tensor. alloc NULL means the heap allocator.
 * ndim 0 is a scalar (numel 1). *t_p is set only on success. */
dl_status_t dl_tensor_new(dl_dtype_t dt, int ndim, const int64_t *shape, dl_allocator_t *alloc,
                          dl_tensor_t **t_p);
/* A zero-filled tensor on dev: the heap for cpu, cudaMalloc'd memory (and
 * cudaMemset) for cuda:N. DL_ERR_UNSUPPORTED when there is no CUDA device
 * (or no CUDA in this build), DL_ERR_INVALID for a device that does not
 * exist; dl_cuda_last_error (distlab/cuda.h) says why. */
dl_status_t dl_tensor_new_on(dl_dtype_t dt, int ndim, const int64_t *shape, dl_device_t dev,
                             dl_tensor_t **t_p);
/* A copy of src on dev (torch's tensor.to(device)), in either direction or
 * between two GPUs; on cpu the copy's storage comes from the heap. */
dl_status_t dl_tensor_to(const dl_tensor_t *src, dl_device_t dev, dl_tensor_t **t_p);
/* A 1-D tensor of n elements. */
dl_status_t dl_tensor_new_1d(dl_dtype_t dt, size_t n, dl_allocator_t *alloc, dl_tensor_t **t_p);
/* A copy of src (data included) in memory from alloc; a cuda tensor is
 * copied on its own device instead (alloc hands out host memory). */
dl_status_t dl_tensor_clone(const dl_tensor_t *src, dl_allocator_t *alloc, dl_tensor_t **t_p);
/* Frees the tensor and, when it owns it, its storage. NULL is fine. */
void dl_tensor_free(dl_tensor_t *t);
size_t dl_tensor_nbytes(const dl_tensor_t *t);

/* Fills element i with start + i * step (torch.arange semantics). A cuda
 * tensor is filled on the host and copied over; should that fail, it is
 * left as it was (dl_cuda_last_error says why). */
void dl_tensor_arange(dl_tensor_t *t, double start, double step);
void dl_tensor_fill(dl_tensor_t *t, double v);

/* Formats the tensor exactly as torch 1.13+ prints it, e.g. "tensor([1, 2])",
 * "tensor([0.5000, 1.2500])", "tensor(2.)", "tensor([1, 2], dtype=torch.int32)",
 * with torch's scientific notation, line wrapping at 80 columns and "..."
 * summarisation above 1000 elements. A cuda tensor is copied to the host
 * first and printed with torch's suffix, "tensor([1., 2.], device='cuda:0')".
 * Returns a malloc'd string or NULL. */
char *dl_tensor_format(const dl_tensor_t *t);
/* The same for raw data in host memory: numel elements of dt with the
 * given shape; dev only decides the device suffix. */
char *dl_tensor_format_raw(dl_dtype_t dt, int ndim, const int64_t *shape, dl_device_t dev,
                           const void *data);

/* What a print shows of a large tensor is all anyone reads of it, so a
 * tensor that travels only to be printed need carry no more. The shown
 * elements form a dense block: a dimension that a summarised print cuts to
 * its first and last 3 entries has 6 there, the others keep their length.
 * dl_tensor_shown_shape writes that block's shape to shown (ndim entries)
 * and returns its element count (0 for an invalid shape); the whole tensor
 * when it has at most 1000 elements. */
size_t dl_tensor_shown_shape(int ndim, const int64_t *shape, int64_t *shown);
/* Copies the shown elements of t, in row-major order of the shown block,
 * to out in host memory (dl_tensor_shown_shape's count of elements); a
 * cuda tensor is read from its GPU. */
dl_status_t dl_tensor_copy_shown(const dl_tensor_t *t, void *out);
/* Formats a tensor of the given shape from only its shown elements, as
 * dl_tensor_copy_shown wrote them: the same text as dl_tensor_format_raw
 * gives for all of them. */
char *dl_tensor_format_shown(dl_dtype_t dt, int ndim, const int64_t *shape, dl_device_t dev,
                             const void *shown);

#endif
