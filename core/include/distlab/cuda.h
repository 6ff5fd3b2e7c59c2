/* CUDA devices: how many there are, memory on them, and copies between
 * host and device memory. Tensors on a GPU (dl_tensor_new_on, dl_tensor_to)
 * are built on these.
 *
 * Every call that needs a GPU is bounded and reports failure: a status (or
 * NULL / 0) and a message in dl_cuda_last_error. Built without CUDA, they
 * fail with DL_ERR_UNSUPPORTED and the message "built without CUDA"; copies
 * between two host buffers still work, so callers need no special case.
 *
 * CUDA cannot be used in a child forked after the parent has used it: call
 * these only in the process that will use the GPU (a test that forks ranks
 * asks for the device count in a child of its own). */
#ifndef DISTLAB_CUDA_H
#define DISTLAB_CUDA_H

#include <stddef.h>

#include "distlab/status.h"
#include "distlab/tensor.h"

/* The number of CUDA devices this process can use. 0 when there is none,
 * and then why (when not NULL) receives the reason, CUDA's own when it has
 * one (e.g. no driver). */
int dl_cuda_device_count(char *why, size_t cap);

/* An allocator of memory on cuda:device (cudaMalloc: 256-byte aligned,
 * not zero-filled). One static allocator per device, never freed. NULL
 * when there is no such device (see dl_cuda_last_error). */
dl_allocator_t *dl_cuda_allocator(int device);

/* Copies n bytes from src on src_dev to dst on dst_dev, in any direction
 * (cudaMemcpy on the device's default stream, ordered after work already
 * queued there). A copy to the host has finished when this returns; a copy
 * between two GPUs may still be running, so its reader must use the same
 * stream or wait for it. Host to host is a plain memcpy. On failure dst is
 * unspecified and dl_cuda_last_error says why. */
dl_status_t dl_cuda_copy(void *dst, dl_device_t dst_dev, const void *src, dl_device_t src_dev,
                         size_t n);

/* Page-locks n bytes of host memory at ptr (cudaHostRegister), so that
 * copies between it and a GPU run at the bus's speed rather than through
 * the driver's bounce buffer; dl_cuda_unpin releases it. Fails (with
 * dl_cuda_last_error) without a GPU or where the memory cannot be locked;
 * the memory stays usable either way, only slower to copy. */
dl_status_t dl_cuda_pin(void *ptr, size_t n);
void dl_cuda_unpin(void *ptr);

/* The message of this thread's last failed dl_cuda_* call ("" when none). */
const char *dl_cuda_last_error(void);

#endif
