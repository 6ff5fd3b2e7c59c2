#include <string.h>

#include "lab/proto.h"

json_t *lab_snap_json(const char *label, const char *name, int index, int of, const dl_tensor_t *t)
{
    json_t *shape = json_array();
    for (int d = 0; d < t->ndim; d++)
        json_array_append_new(shape, json_integer(t->shape[d]));
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:o}", "type", "snap", "label", label, "name",
                  name, "index", index, "of", of, "dtype", dl_dtype_name(t->dtype), "shape", shape);
    /* The data travels as host bytes; where it lived is printed, as torch
     * prints device='cuda:0'. */
    if (t->device.type == DL_DEVICE_CUDA)
        json_object_set_new(j, "device", json_integer(t->device.index));
    return j;
}

dl_device_t lab_snap_device(const dl_frame_t *f)
{
    json_t *d = json_object_get(f->json, "device");
    if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > 1024)
        return (dl_device_t){DL_DEVICE_CPU, 0};
    return (dl_device_t){DL_DEVICE_CUDA, (int)json_integer_value(d)};
}

dl_status_t lab_snap_tensor(const dl_frame_t *f, dl_tensor_t **t_p)
{
    dl_dtype_t dt;
    json_t *shape = json_object_get(f->json, "shape");
    if (dl_dtype_parse(lab_json_str(f->json, "dtype", ""), &dt) != DL_OK || !json_is_array(shape) ||
        json_array_size(shape) > DL_MAX_DIMS)
        return DL_ERR_PROTOCOL;
    int64_t dims[DL_MAX_DIMS];
    int ndim = (int)json_array_size(shape);
    /* The shape must describe exactly the blob that came with it: check
     * before allocating, so a forged shape cannot make us allocate. */
    uint64_t bytes = dl_dtype_size(dt);
    for (int d = 0; d < ndim; d++) {
        json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > (json_int_t)f->blob_len)
            return DL_ERR_PROTOCOL;
        dims[d] = json_integer_value(v);
        bytes *= (uint64_t)dims[d];
        if (bytes > f->blob_len)
            return DL_ERR_PROTOCOL;
    }
    if (bytes != f->blob_len)
        return DL_ERR_PROTOCOL;
    dl_tensor_t *t = NULL;
    dl_status_t st = dl_tensor_new(dt, ndim, dims, NULL, &t);
    if (st != DL_OK)
        return st;
    if (dl_tensor_nbytes(t) != f->blob_len) {
        dl_tensor_free(t);
        return DL_ERR_PROTOCOL;
    }
    if (f->blob_len > 0)
        memcpy(t->data, f->blob, f->blob_len);
    *t_p = t;
    return DL_OK;
}

const char *lab_msg_type(const json_t *msg)
{
    return lab_json_str(msg, "type", "");
}

const char *lab_json_str(const json_t *obj, const char *key, const char *dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

long long lab_json_int(const json_t *obj, const char *key, long long dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

double lab_json_num(const json_t *obj, const char *key, double dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}
