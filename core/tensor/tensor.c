/* Tensors: allocation, cloning, moving between devices and filling.
 * Formatting is in format.c, CUDA memory in cuda.c. */
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "distlab/tensor.h"
#include "internal.h"

/* ------------------------------------------------------------------------
 * The heap allocator
 * ------------------------------------------------------------------------ */

#define DL_HEAP_ALIGN 64

/* 64-byte alignment puts every tensor on its own cache lines and lets the
 * reduce kernels use aligned vector loads from the first element. */
static void *heap_alloc(dl_allocator_t *self, size_t nbytes)
{
    (void)self;
    /* Rounding up to whole cache lines means a zero-byte request still gets
     * a distinct pointer instead of malloc's implementation-defined answer. */
    size_t rounded = (nbytes + DL_HEAP_ALIGN - 1) & ~(size_t)(DL_HEAP_ALIGN - 1);
    if (rounded < nbytes)
        return NULL;
    if (rounded == 0)
        rounded = DL_HEAP_ALIGN;
    void *p = NULL;
    if (posix_memalign(&p, DL_HEAP_ALIGN, rounded) != 0)
        return NULL;
    return p;
}

static void heap_free(dl_allocator_t *self, void *ptr, size_t nbytes)
{
    (void)self;
    (void)nbytes;
    free(ptr);
}

static dl_allocator_t heap_allocator = {heap_alloc, heap_free};

dl_allocator_t *dl_heap_allocator(void)
{
    return &heap_allocator;
}

/* ------------------------------------------------------------------------
 * Tensors
 * ------------------------------------------------------------------------ */

/* A zero-filled tensor on dev with storage from alloc (memory on dev). */
static dl_status_t tensor_make(dl_dtype_t dt, int ndim, const int64_t *shape, dl_allocator_t *alloc,
                               dl_device_t dev, dl_tensor_t **t_p)
{
    if ((unsigned)dt >= DL_DTYPE__COUNT || ndim < 0 || ndim > DL_MAX_DIMS || t_p == NULL ||
        (ndim > 0 && shape == NULL))
        return DL_ERR_INVALID;

    size_t esz = dl_dtype_size(dt);
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return DL_ERR_INVALID;
        /* Check the product in bytes so that numel * esz cannot wrap later. */
        if (shape[d] != 0 && numel > SIZE_MAX / esz / (uint64_t)shape[d])
            return DL_ERR_TOO_BIG;
        numel *= (size_t)shape[d];
    }

    dl_tensor_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return DL_ERR_NOMEM;
    t->dtype = dt;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    t->device = dev;
    t->numel = numel;

    /* An empty tensor has no storage to own: data stays NULL and so does
     * alloc, which spares an arena allocator a zero-byte request. */
    size_t nbytes = numel * esz;
    dl_status_t st = DL_ERR_NOMEM;
    if (nbytes > 0) {
        t->data = alloc->alloc(alloc, nbytes);
        if (t->data == NULL)
            goto err_free_tensor;
        /* Zero-fill here rather than trusting the allocator: an arena may
         * hand back memory that a previous collective wrote. */
        if ((st = dl__cuda_zero(t->data, dev, nbytes)) != DL_OK)
            goto err_free_data;
        t->alloc = alloc;
    }
    *t_p = t;
    return DL_OK;

err_free_data:
    alloc->free(alloc, t->data, nbytes);
err_free_tensor:
    free(t);
    return st;
}

dl_status_t dl_tensor_new(dl_dtype_t dt, int ndim, const int64_t *shape, dl_allocator_t *alloc,
                          dl_tensor_t **t_p)
{
    dl_device_t cpu = {DL_DEVICE_CPU, 0};
    return tensor_make(dt, ndim, shape, alloc != NULL ? alloc : dl_heap_allocator(), cpu, t_p);
}

dl_status_t dl_tensor_new_on(dl_dtype_t dt, int ndim, const int64_t *shape, dl_device_t dev,
                             dl_tensor_t **t_p)
{
    if (dev.type == DL_DEVICE_CPU)
        return dl_tensor_new(dt, ndim, shape, NULL, t_p);
    if (dev.type != DL_DEVICE_CUDA)
        return DL_ERR_INVALID;
    /* No GPU at all is "not supported here"; a GPU that does not exist is
     * a bad argument. dl_cuda_last_error says which. */
    if (dl_cuda_device_count(NULL, 0) == 0)
        return DL_ERR_UNSUPPORTED;
    dl_allocator_t *alloc = dl_cuda_allocator(dev.index);
    if (alloc == NULL)
        return DL_ERR_INVALID;
    return tensor_make(dt, ndim, shape, alloc, dev, t_p);
}

dl_status_t dl_tensor_to(const dl_tensor_t *src, dl_device_t dev, dl_tensor_t **t_p)
{
    if (src == NULL || t_p == NULL)
        return DL_ERR_INVALID;
    dl_tensor_t *t;
    dl_status_t st = dl_tensor_new_on(src->dtype, src->ndim, src->shape, dev, &t);
    if (st != DL_OK)
        return st;
    if ((st = dl_cuda_copy(t->data, t->device, src->data, src->device, dl_tensor_nbytes(t))) !=
        DL_OK) {
        dl_tensor_free(t);
        return st;
    }
    *t_p = t;
    return DL_OK;
}

dl_status_t dl_tensor_new_1d(dl_dtype_t dt, size_t n, dl_allocator_t *alloc, dl_tensor_t **t_p)
{
    if (n > (size_t)INT64_MAX)
        return DL_ERR_TOO_BIG;
    int64_t shape[1] = {(int64_t)n};
    return dl_tensor_new(dt, 1, shape, alloc, t_p);
}

dl_status_t dl_tensor_clone(const dl_tensor_t *src, dl_allocator_t *alloc, dl_tensor_t **t_p)
{
    if (src == NULL || t_p == NULL)
        return DL_ERR_INVALID;
    /* alloc hands out host memory: a GPU tensor is copied on its device. */
    if (src->device.type == DL_DEVICE_CUDA)
        return dl_tensor_to(src, src->device, t_p);
    dl_tensor_t *t;
    dl_status_t st = dl_tensor_new(src->dtype, src->ndim, src->shape, alloc, &t);
    if (st != DL_OK)
        return st;
    size_t nbytes = dl_tensor_nbytes(t);
    if (nbytes > 0)
        memcpy(t->data, src->data, nbytes);
    /* The device is part of what the tensor is, so the copy keeps it. */
    t->device = src->device;
    *t_p = t;
    return DL_OK;
}

void dl_tensor_free(dl_tensor_t *t)
{
    if (t == NULL)
        return;
    if (t->alloc != NULL && t->data != NULL)
        t->alloc->free(t->alloc, t->data, dl_tensor_nbytes(t));
    free(t);
}

size_t dl_tensor_nbytes(const dl_tensor_t *t)
{
    return t->numel * dl_dtype_size(t->dtype);
}

/* Fills a tensor through fill_host, which writes host memory: a GPU
 * tensor is filled in a host buffer that is then copied over. On failure
 * (no memory, a CUDA error) the tensor is left as it was. */
static void fill_through_host(dl_tensor_t *t, void (*fill_host)(dl_tensor_t *, double, double),
                              double a, double b)
{
    if (t->device.type != DL_DEVICE_CUDA) {
        fill_host(t, a, b);
        return;
    }
    dl_tensor_t host = *t;
    host.device = (dl_device_t){DL_DEVICE_CPU, 0};
    host.data = malloc(dl_tensor_nbytes(t));
    if (host.data == NULL)
        return;
    fill_host(&host, a, b);
    (void)dl_cuda_copy(t->data, t->device, host.data, host.device, dl_tensor_nbytes(t));
    free(host.data);
}

static void arange_host(dl_tensor_t *t, double start, double step)
{
    for (size_t i = 0; i < t->numel; i++)
        dl_dtype_set(t->dtype, t->data, i, start + (double)i * step);
}

static void fill_host(dl_tensor_t *t, double v, double unused)
{
    (void)unused;
    /* Convert once, then double the filled prefix with memcpy: log2(n)
     * copies instead of n conversions. */
    dl_dtype_set(t->dtype, t->data, 0, v);
    size_t total = dl_tensor_nbytes(t);
    size_t done = dl_dtype_size(t->dtype);
    uint8_t *p = t->data;
    while (done < total) {
        size_t chunk = done < total - done ? done : total - done;
        memcpy(p + done, p, chunk);
        done += chunk;
    }
}

void dl_tensor_arange(dl_tensor_t *t, double start, double step)
{
    if (t->numel > 0)
        fill_through_host(t, arange_host, start, step);
}

void dl_tensor_fill(dl_tensor_t *t, double v)
{
    if (t->numel > 0)
        fill_through_host(t, fill_host, v, 0);
}
