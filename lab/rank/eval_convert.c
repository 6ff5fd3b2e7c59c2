/* A tensor's attributes and conversions, as torch spells them: t.dtype,
 * t.device, t.ndim, t.is_cuda, t.dim(), t.numel(), t.tolist(), t.to(...),
 * t.cuda(), t.cpu() and t.float(), t.double(), t.half(), t.bfloat16(),
 * t.long(), t.int(), t.bool(); and the values they give: a dtype is the
 * word torch.float32 (a LAB_V_NAME), a device its string, 'cuda:0'. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/comm.h"
#include "distlab/cuda.h"
#include "distlab/dtype.h"
#include "lab/rank/eval.h"
#include "lab/rank/rank.h"

#define fail lab__eval_fail

static const dl_device_t host_dev = {DL_DEVICE_CPU, 0};

/* The conversions to a dtype by name, t.float() ... t.bool(). */
static const struct {
    const char *name;
    dl_dtype_t dt;
} casts[] = {
    {"float", DL_FLOAT32}, {"double", DL_FLOAT64}, {"half", DL_FLOAT16}, {"bfloat16", DL_BFLOAT16},
    {"long", DL_INT64},    {"int", DL_INT32},      {"bool", DL_BOOL},
};

static const char *const methods[] = {"dtype", "device", "ndim", "is_cuda", "dim",
                                      "numel", "tolist", "to",   "cuda",    "cpu"};

bool lab__eval_is_convert(const char *fn)
{
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strcmp(fn, methods[i]) == 0)
            return true;
    for (size_t i = 0; i < sizeof(casts) / sizeof(casts[0]); i++)
        if (strcmp(fn, casts[i].name) == 0)
            return true;
    return false;
}

bool lab__eval_dtype_value(const lab_value_t *v, dl_dtype_t *dt_p)
{
    if (v->kind != LAB_V_NAME || strncmp(v->name, "torch.", 6) != 0)
        return false;
    dl_dtype_t dt;
    if (dl_dtype_parse(v->name + 6, &dt) != DL_OK)
        return false;
    if (dt_p != NULL)
        *dt_p = dt;
    return true;
}

bool lab__eval_device_name(const char *s, bool *cuda_p, long *index_p)
{
    *index_p = -1;
    *cuda_p = strncmp(s, "cuda", 4) == 0;
    if (strcmp(s, "cpu") == 0 || strcmp(s, "cuda") == 0)
        return true;
    char *end = NULL;
    if (!*cuda_p || s[4] != ':' || s[5] < '0' || s[5] > '9')
        return false;
    *index_p = strtol(s + 5, &end, 10);
    return *end == '\0';
}

dl_status_t lab__eval_device_value(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                                   dl_device_t *dev_p)
{
    bool cuda = true;
    long index = -1;
    *dev_p = host_dev;
    if (v->kind == LAB_V_INT) {
        /* torch reads a number as a GPU's: .to(rank) is cuda:rank */
        if (v->i < 0)
            return fail(ev, node, "device=%lld: a GPU number is 0 or more", (long long)v->i);
        index = (long)v->i;
    } else if (v->kind != LAB_V_STR || v->s == NULL) {
        return fail(ev, node, "a device is 'cpu', 'cuda', 'cuda:N' or a GPU's number, not %s",
                    lab_vkind_a(v->kind));
    } else if (!lab__eval_device_name(v->s, &cuda, &index)) {
        return fail(ev, node, "unknown device '%s'; devices: cpu, cuda, cuda:N", v->s);
    }
    if (!cuda)
        return DL_OK;
    char why[200];
    if (lab_rank_device(ev->r->rank, DL_DEVICE_CUDA, dev_p, why, sizeof(why)) != DL_OK)
        return fail(ev, node, "device=cuda: %s", why);
    /* Each rank has its GPU (lab_rank_device): cuda:N must name it. */
    if (index >= 0 && index != dev_p->index)
        return fail(ev, node, "device=cuda:%ld: rank %d's GPU is cuda:%d", index, ev->r->rank,
                    dev_p->index);
    return DL_OK;
}

/* A copy of t on dev as dtype dt (torch's t.to(dev, dt)), into out. */
static dl_status_t convert(lab_eval_t *ev, const json_t *node, const dl_tensor_t *t,
                           dl_device_t dev, dl_dtype_t dt, lab_value_t *out)
{
    /* Made on the host from t (or a host copy of it), then moved. */
    dl_tensor_t *host = NULL, *res = NULL;
    const dl_tensor_t *src = t;
    if (t->device.type == DL_DEVICE_CUDA) {
        if (dl_tensor_to(t, host_dev, &host) != DL_OK)
            return fail(ev, node, "cannot copy the tensor from the GPU: %s", dl_cuda_last_error());
        src = host;
    }
    dl_status_t st = dl_tensor_new(dt, t->ndim, t->shape, dl_comm_allocator(ev->r->comm), &res);
    if (st != DL_OK) {
        dl_tensor_free(host);
        return fail(ev, node, "cannot make the copy: %s", dl_strerror(st));
    }
    if (dt == src->dtype) {
        if (src->numel > 0) /* an empty tensor may have no storage */
            memcpy(res->data, src->data, dl_tensor_nbytes(src));
    } else {
        /* As torch converts: floats to integers towards zero (and out of
         * range as on x86, dl_dtype_set), to bool by != 0. */
        for (size_t i = 0; i < t->numel; i++) {
            if (dl_dtype_is_float(src->dtype) || dl_dtype_is_float(dt)) {
                dl_dtype_set(dt, res->data, i, dl_dtype_get(src->dtype, src->data, i));
            } else {
                dl_dtype_set_i64(dt, res->data, i, dl_dtype_get_i64(src->dtype, src->data, i));
            }
        }
    }
    dl_tensor_free(host);
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_TENSOR;
    out->t = res;
    return lab__eval_to_device(ev, out, dev);
}

dl_status_t lab__eval_retype(lab_eval_t *ev, const json_t *node, const dl_tensor_t *t,
                             dl_dtype_t dt, lab_value_t *out)
{
    return convert(ev, node, t, t->device, dt, out);
}

/* t.tolist(): nested lists of Python numbers, dimension d on from. */
static dl_status_t tolist(const dl_tensor_t *h, int d, size_t from, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    if (d == h->ndim) {
        dl_tensor_t one = *h;
        one.ndim = 0;
        one.numel = 1;
        one.data = (uint8_t *)h->data + from * dl_dtype_size(h->dtype);
        lab__eval_item(&one, out);
        return DL_OK;
    }
    size_t n = (size_t)h->shape[d], stride = 1;
    for (int k = d + 1; k < h->ndim; k++)
        stride *= (size_t)h->shape[k];
    out->kind = LAB_V_LIST;
    out->items = calloc(n ? n : 1, sizeof(*out->items));
    if (out->items == NULL)
        return DL_ERR_NOMEM;
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        dl_status_t st = tolist(h, d + 1, from + i * stride, &out->items[i]);
        if (st != DL_OK)
            return st;
    }
    return DL_OK;
}

/* t.to(...): a dtype, a device or both, positional or as dtype= and
 * device= (read as a tensor constructor's are). */
static dl_status_t to(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                      const json_t *kw, dl_device_t *dev_p, dl_dtype_t *dt_p)
{
    dl_status_t st;
    for (int k = 1; k < npos; k++) {
        if (lab__eval_dtype_value(&pos[k], dt_p))
            continue;
        if (pos[k].kind == LAB_V_NAME)
            return lab__eval_fail_undefined(ev, node, &pos[k]);
        if ((st = lab__eval_device_value(ev, node, &pos[k], dev_p)) != DL_OK)
            return st;
    }
    bool given;
    if ((json_object_get(kw, "device") != NULL &&
         (st = lab__eval_kw_device(ev, kw, dev_p)) != DL_OK) ||
        (st = lab__eval_kw_dtype(ev, kw, dt_p, &given)) != DL_OK)
        return st;
    return DL_OK;
}

dl_status_t lab__eval_convert(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                              int npos, const json_t *kw, lab_value_t *out)
{
    if (npos < 1 || pos[0].kind != LAB_V_TENSOR)
        return fail(ev, node, "'%s' object has no attribute '%s' (it is a tensor's)",
                    npos < 1 ? "None" : lab_vkind_name(pos[0].kind), fn);
    const dl_tensor_t *t = pos[0].t;
    bool takes_args = strcmp(fn, "to") == 0 || strcmp(fn, "cuda") == 0;
    if (!takes_args && (npos > 1 || json_object_size(kw) > 0))
        return fail(ev, node, "%s() takes no arguments", fn);
    memset(out, 0, sizeof(*out));
    if (strcmp(fn, "dtype") == 0) {
        out->kind = LAB_V_NAME;
        snprintf(out->name, sizeof(out->name), "torch.%s", dl_dtype_name(t->dtype));
        return DL_OK;
    }
    if (strcmp(fn, "device") == 0) {
        char name[32] = "cpu";
        if (t->device.type == DL_DEVICE_CUDA)
            snprintf(name, sizeof(name), "cuda:%d", t->device.index);
        out->kind = LAB_V_STR;
        snprintf(out->name, sizeof(out->name), "%s", LAB_DEVICE);
        out->s = strdup(name);
        return out->s != NULL ? DL_OK : DL_ERR_NOMEM;
    }
    if (strcmp(fn, "is_cuda") == 0) {
        out->kind = LAB_V_BOOL;
        out->i = t->device.type == DL_DEVICE_CUDA;
        return DL_OK;
    }
    if (strcmp(fn, "ndim") == 0 || strcmp(fn, "dim") == 0 || strcmp(fn, "numel") == 0) {
        out->kind = LAB_V_INT;
        out->i = fn[0] == 'n' && fn[1] == 'u' ? (int64_t)t->numel : t->ndim;
        return DL_OK;
    }
    if (strcmp(fn, "tolist") == 0) {
        dl_tensor_t *host = NULL;
        if (dl_tensor_to(t, host_dev, &host) != DL_OK)
            return fail(ev, node, "cannot copy the tensor from the GPU: %s", dl_cuda_last_error());
        dl_status_t st = tolist(host, 0, 0, out);
        dl_tensor_free(host);
        if (st != DL_OK)
            lab_value_clear(out);
        return st;
    }
    dl_device_t dev = t->device;
    dl_dtype_t dt = t->dtype;
    if (strcmp(fn, "cpu") == 0) {
        dev = host_dev;
    } else if (strcmp(fn, "cuda") == 0) {
        if (json_object_size(kw) > 0 || npos > 2)
            return fail(ev, node, "cuda() takes at most a GPU's number");
        lab_value_t cuda = {.kind = LAB_V_STR, .s = (char *)"cuda"};
        dl_status_t st = lab__eval_device_value(ev, node, npos == 2 ? &pos[1] : &cuda, &dev);
        if (st != DL_OK)
            return st;
        if (dev.type != DL_DEVICE_CUDA)
            return fail(ev, node, "cuda() moves a tensor to a GPU, not to the cpu");
    } else if (strcmp(fn, "to") == 0) {
        dl_status_t st = to(ev, node, pos, npos, kw, &dev, &dt);
        if (st != DL_OK)
            return st;
    } else {
        for (size_t i = 0; i < sizeof(casts) / sizeof(casts[0]); i++)
            if (strcmp(fn, casts[i].name) == 0)
                dt = casts[i].dt;
    }
    return convert(ev, node, t, dev, dt, out);
}
