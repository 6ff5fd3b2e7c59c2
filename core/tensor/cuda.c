/* CUDA devices, memory on them and copies (distlab/cuda.h). Always
 * compiled, and free of the CUDA runtime: copies and memsets in host memory
 * are done here, and the rest goes to the cuda module (cuda_runtime.c),
 * loaded the first time a GPU is involved. Without CUDA, or without the
 * module, every call that needs a GPU fails with DL_ERR_UNSUPPORTED and
 * says why. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/module.h"
#include "distlab/cuda.h"
#include "dl_config.h"
#include "tensor/cuda_module.h"
#include "tensor/internal.h"

static _Thread_local char last_error[512];

void dl__cuda_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

const char *dl_cuda_last_error(void)
{
    return last_error;
}

/* The cuda module's calls, or NULL with why filled. */
static const dl__cuda_ops_t *cuda_ops(char *why, size_t cap)
{
#if DL_HAVE_CUDA
    return dl__module_symbol("cuda", "dl__cuda_ops", why, cap);
#else
    snprintf(why, cap,
             "built without CUDA (it needs -Dcuda=enabled and the CUDA runtime under "
             "-Dcudadir)");
    return NULL;
#endif
}

/* The cuda module's calls; without them NULL, after setting
 * dl_cuda_last_error to "WHAT: why" (why alone when what is NULL) and
 * copying why to why_out (when not NULL). */
static const dl__cuda_ops_t *ops_for(const char *what, char *why_out, size_t cap)
{
    char reason[512];
    const dl__cuda_ops_t *ops = cuda_ops(reason, sizeof(reason));
    if (ops != NULL)
        return ops;
    dl__cuda_set_error("%s%s%s", what != NULL ? what : "", what != NULL ? ": " : "", reason);
    if (why_out != NULL && cap > 0)
        snprintf(why_out, cap, "%s", reason);
    return NULL;
}

int dl_cuda_device_count(char *why, size_t cap)
{
    const dl__cuda_ops_t *ops = ops_for(NULL, why, cap);
    return ops != NULL ? ops->device_count(why, cap) : 0;
}

dl_allocator_t *dl_cuda_allocator(int device)
{
    char what[32];
    snprintf(what, sizeof(what), "cuda:%d", device);
    const dl__cuda_ops_t *ops = ops_for(what, NULL, 0);
    return ops != NULL ? ops->allocator(device) : NULL;
}

dl_status_t dl_cuda_copy(void *dst, dl_device_t dst_dev, const void *src, dl_device_t src_dev,
                         size_t n)
{
    if (dst_dev.type != DL_DEVICE_CUDA && src_dev.type != DL_DEVICE_CUDA) {
        if (n > 0)
            memcpy(dst, src, n);
        return DL_OK;
    }
    const dl__cuda_ops_t *ops = ops_for("copy to or from cuda", NULL, 0);
    return ops != NULL ? ops->copy(dst, dst_dev, src, src_dev, n) : DL_ERR_UNSUPPORTED;
}

dl_status_t dl_cuda_pin(void *ptr, size_t n)
{
    const dl__cuda_ops_t *ops = ops_for("cudaHostRegister", NULL, 0);
    return ops != NULL ? ops->pin(ptr, n) : DL_ERR_UNSUPPORTED;
}

void dl_cuda_unpin(void *ptr)
{
    const dl__cuda_ops_t *ops = ops_for("cudaHostUnregister", NULL, 0);
    if (ops != NULL)
        ops->unpin(ptr);
}

dl_status_t dl__cuda_zero(void *ptr, dl_device_t dev, size_t n)
{
    if (dev.type != DL_DEVICE_CUDA) {
        if (n > 0)
            memset(ptr, 0, n);
        return DL_OK;
    }
    const dl__cuda_ops_t *ops = ops_for("cudaMemset", NULL, 0);
    return ops != NULL ? ops->zero(ptr, dev, n) : DL_ERR_UNSUPPORTED;
}
