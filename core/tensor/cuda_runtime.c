/* The cuda module: CUDA devices, memory on them and copies, over the CUDA
 * runtime API, for core/tensor/cuda.c, which loads this module the first
 * time a tensor or a copy involves a GPU.
 *
 * Ordering. Every copy and memset here runs on the legacy default stream
 * of the device that owns the memory (made current for the call, and the
 * caller's device restored after). The NCCL backend makes its stream wait
 * for that stream's work so far before each operation, and completes an
 * operation only once the GPU has finished it; so a tensor filled here is
 * complete before a collective reads it, and a copy made after a completed
 * collective sees its result, with no explicit synchronisation. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "distlab/cuda.h"
#include "tensor/cuda_module.h"

#define MAX_DEVICES 64

/* ------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------ */

/* The reason a CUDA call failed, with a hint where CUDA's own words mislead:
 * with no driver at all the runtime says the driver is "insufficient". */
static const char *reason(cudaError_t err, char *buf, size_t cap)
{
    int driver = -1;
    if (err == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess &&
        driver == 0)
        snprintf(buf, cap, "%s (no NVIDIA driver is loaded)", cudaGetErrorString(err));
    else
        snprintf(buf, cap, "%s", cudaGetErrorString(err));
    return buf;
}

static int device_count(char *why, size_t cap)
{
    int n = 0;
    char buf[160];
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it for later calls */
        dl__cuda_set_error("%s", reason(err, buf, sizeof(buf)));
        n = 0;
    } else if (n == 0) {
        dl__cuda_set_error("the CUDA runtime found no device");
    }
    if (n == 0 && why != NULL && cap > 0)
        snprintf(why, cap, "%s", dl_cuda_last_error());
    return n;
}

/* Makes device current for the calling thread and returns the one that
 * was (to restore), or -1 after setting the error. */
static int enter_device(int device, const char *what)
{
    int prev = 0;
    cudaError_t err = cudaGetDevice(&prev);
    if (err == cudaSuccess)
        err = cudaSetDevice(device);
    if (err != cudaSuccess) {
        char buf[160];
        (void)cudaGetLastError();
        dl__cuda_set_error("%s: cannot use cuda:%d: %s", what, device,
                           reason(err, buf, sizeof(buf)));
        return -1;
    }
    return prev;
}

static void leave_device(int prev)
{
    if (prev >= 0)
        (void)cudaSetDevice(prev);
}

/* ------------------------------------------------------------------------
 * The per-device allocator
 * ------------------------------------------------------------------------ */

typedef struct {
    dl_allocator_t base; /* first: the allocator's functions get &base */
    int device;
} cuda_allocator_t;

static void *cuda_alloc(dl_allocator_t *self, size_t nbytes)
{
    int device = ((cuda_allocator_t *)self)->device;
    int prev = enter_device(device, "cudaMalloc");
    if (prev < 0)
        return NULL;
    void *p = NULL;
    /* A zero-byte request still gets its own pointer, as from the heap. */
    cudaError_t err = cudaMalloc(&p, nbytes > 0 ? nbytes : 1);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        dl__cuda_set_error("cudaMalloc of %zu bytes on cuda:%d failed: %s", nbytes, device,
                           cudaGetErrorString(err));
        p = NULL;
    }
    leave_device(prev);
    return p;
}

static void cuda_free(dl_allocator_t *self, void *ptr, size_t nbytes)
{
    (void)nbytes;
    if (ptr == NULL)
        return;
    int prev = enter_device(((cuda_allocator_t *)self)->device, "cudaFree");
    /* cudaFree waits for work still using ptr; its error (a dead context)
     * has no one to report to: a destructor never fails. */
    if (cudaFree(ptr) != cudaSuccess)
        (void)cudaGetLastError();
    leave_device(prev);
}

static cuda_allocator_t allocators[MAX_DEVICES];

static dl_allocator_t *allocator(int device)
{
    char why[160];
    int n = device_count(why, sizeof(why));
    if (n == 0) {
        dl__cuda_set_error("cuda:%d: no CUDA device: %s", device, why);
        return NULL;
    }
    if (device < 0 || device >= n || device >= MAX_DEVICES) {
        dl__cuda_set_error("cuda:%d does not exist: this process sees %d CUDA device%s", device, n,
                           n == 1 ? "" : "s");
        return NULL;
    }
    /* Filling the entry again with the same values is harmless, so
     * concurrent first calls need no lock. */
    cuda_allocator_t *a = &allocators[device];
    a->base.alloc = cuda_alloc;
    a->base.free = cuda_free;
    a->device = device;
    return &a->base;
}

/* ------------------------------------------------------------------------
 * Copies
 * ------------------------------------------------------------------------ */

static dl_status_t copy(void *dst, dl_device_t dst_dev, const void *src, dl_device_t src_dev,
                        size_t n)
{
    bool dst_gpu = dst_dev.type == DL_DEVICE_CUDA, src_gpu = src_dev.type == DL_DEVICE_CUDA;
    if (n == 0)
        return DL_OK;
    enum cudaMemcpyKind kind = !src_gpu   ? cudaMemcpyHostToDevice
                               : !dst_gpu ? cudaMemcpyDeviceToHost
                                          : cudaMemcpyDeviceToDevice;
    /* The device whose default stream orders the copy: the one that owns
     * the device side (for device to device, the destination). */
    int device = dst_gpu ? dst_dev.index : src_dev.index;
    int prev = enter_device(device, "cudaMemcpy");
    if (prev < 0)
        return DL_ERR_SYSTEM;
    cudaError_t err = cudaMemcpy(dst, src, n, kind);
    leave_device(prev);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        dl__cuda_set_error("cudaMemcpy of %zu bytes (%s to %s) failed: %s", n,
                           src_gpu ? "cuda" : "cpu", dst_gpu ? "cuda" : "cpu",
                           cudaGetErrorString(err));
        return DL_ERR_SYSTEM;
    }
    return DL_OK;
}

static dl_status_t zero(void *ptr, dl_device_t dev, size_t n)
{
    if (n == 0)
        return DL_OK;
    int prev = enter_device(dev.index, "cudaMemset");
    if (prev < 0)
        return DL_ERR_SYSTEM;
    cudaError_t err = cudaMemset(ptr, 0, n);
    leave_device(prev);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        dl__cuda_set_error("cudaMemset of %zu bytes on cuda:%d failed: %s", n, dev.index,
                           cudaGetErrorString(err));
        return DL_ERR_SYSTEM;
    }
    return DL_OK;
}

/* ------------------------------------------------------------------------
 * Page-locked host memory
 * ------------------------------------------------------------------------ */

static dl_status_t pin(void *ptr, size_t n)
{
    /* Portable: the lock holds for every device this process uses. */
    cudaError_t err = cudaHostRegister(ptr, n, cudaHostRegisterPortable);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        dl__cuda_set_error("cudaHostRegister of %zu bytes failed: %s", n, cudaGetErrorString(err));
        return DL_ERR_SYSTEM;
    }
    return DL_OK;
}

static void unpin(void *ptr)
{
    if (cudaHostUnregister(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}

/* ------------------------------------------------------------------------
 * The module's entry
 * ------------------------------------------------------------------------ */

/* What core/tensor/cuda.c looks up in this module. */
const dl__cuda_ops_t dl__cuda_ops = {
    .device_count = device_count,
    .allocator = allocator,
    .copy = copy,
    .zero = zero,
    .pin = pin,
    .unpin = unpin,
};
