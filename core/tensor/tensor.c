/* Tensors: allocation, cloning and filling. Formatting is in format.c. */
#include <stdlib.h>
#include <string.h>

#include "distlab/tensor.h"

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

dl_status_t dl_tensor_new(dl_dtype_t dt, int ndim, const int64_t *shape, dl_allocator_t *alloc,
                          dl_tensor_t **t_p)
{
    if ((unsigned)dt >= DL_DTYPE__COUNT || ndim < 0 || ndim > DL_MAX_DIMS || t_p == NULL ||
        (ndim > 0 && shape == NULL))
        return DL_ERR_INVALID;
    if (alloc == NULL)
        alloc = dl_heap_allocator();

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
    t->device.type = DL_DEVICE_CPU;
    t->device.index = 0;
    t->numel = numel;

    /* An empty tensor has no storage to own: data stays NULL and so does
     * alloc, which spares an arena allocator a zero-byte request. */
    size_t nbytes = numel * esz;
    if (nbytes > 0) {
        t->data = alloc->alloc(alloc, nbytes);
        if (t->data == NULL)
            goto err_free_tensor;
        /* Zero-fill here rather than trusting the allocator: an arena may
         * hand back memory that a previous collective wrote. */
        memset(t->data, 0, nbytes);
        t->alloc = alloc;
    }
    *t_p = t;
    return DL_OK;

err_free_tensor:
    free(t);
    return DL_ERR_NOMEM;
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

void dl_tensor_arange(dl_tensor_t *t, double start, double step)
{
    for (size_t i = 0; i < t->numel; i++)
        dl_dtype_set(t->dtype, t->data, i, start + (double)i * step);
}

void dl_tensor_fill(dl_tensor_t *t, double v)
{
    if (t->numel == 0)
        return;
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
