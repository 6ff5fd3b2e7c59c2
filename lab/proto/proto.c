#include <string.h>

#include "lab/proto/proto.h"

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

json_t *lab_snap_none_json(const char *label, const char *name)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:b}", "type", "snap", "label", label, "name", name,
                     "index", 0, "of", 0, "none", 1);
}

bool lab_snap_is_none(const dl_frame_t *f)
{
    return json_is_true(json_object_get(f->json, "none"));
}

dl_device_t lab_snap_device(const dl_frame_t *f)
{
    json_t *d = json_object_get(f->json, "device");
    if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > 1024)
        return (dl_device_t){DL_DEVICE_CPU, 0};
    return (dl_device_t){DL_DEVICE_CUDA, (int)json_integer_value(d)};
}

/* The dtype and shape of a snapshot or step frame. */
static dl_status_t frame_shape(const dl_frame_t *f, dl_dtype_t *dt_p, int *ndim_p, int64_t *dims)
{
    json_t *shape = json_object_get(f->json, "shape");
    if (dl_dtype_parse(lab_json_str(f->json, "dtype", ""), dt_p) != DL_OK ||
        !json_is_array(shape) || json_array_size(shape) > DL_MAX_DIMS)
        return DL_ERR_PROTOCOL;
    *ndim_p = (int)json_array_size(shape);
    for (int d = 0; d < *ndim_p; d++) {
        json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return DL_ERR_PROTOCOL;
        dims[d] = json_integer_value(v);
    }
    return DL_OK;
}

/* A heap tensor of dt and shape holding the frame's blob, which must be
 * exactly its size: checked before allocating, so that a forged shape
 * cannot make us allocate. */
static dl_status_t blob_tensor(const dl_frame_t *f, dl_dtype_t dt, int ndim, const int64_t *dims,
                               dl_tensor_t **t_p)
{
    uint64_t bytes = dl_dtype_size(dt);
    for (int d = 0; d < ndim; d++)
        if (dims[d] == 0)
            bytes = 0; /* an empty tensor of any shape, (0, 3) or (2, 0): no blob */
    for (int d = 0; d < ndim && bytes > 0; d++) {
        if ((uint64_t)dims[d] > f->blob_len)
            return DL_ERR_PROTOCOL;
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

dl_status_t lab_snap_tensor(const dl_frame_t *f, dl_tensor_t **t_p)
{
    dl_dtype_t dt;
    int ndim;
    int64_t dims[DL_MAX_DIMS];
    dl_status_t st = frame_shape(f, &dt, &ndim, dims);
    return st != DL_OK ? st : blob_tensor(f, dt, ndim, dims, t_p);
}

dl_status_t lab_snap_shown(const dl_frame_t *f, int *ndim_p, int64_t *shape, dl_tensor_t **t_p)
{
    dl_dtype_t dt;
    int ndim;
    int64_t dims[DL_MAX_DIMS], shown[DL_MAX_DIMS];
    dl_status_t st = frame_shape(f, &dt, &ndim, dims);
    if (st != DL_OK)
        return st;
    /* Without "shown" the blob is the whole tensor, as a step event's is. */
    bool cut = json_is_true(json_object_get(f->json, "shown"));
    if (cut)
        dl_tensor_shown_shape(ndim, dims, shown);
    if ((st = blob_tensor(f, dt, ndim, cut ? shown : dims, t_p)) != DL_OK)
        return st;
    *ndim_p = ndim;
    memcpy(shape, dims, sizeof(dims[0]) * (size_t)ndim);
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
