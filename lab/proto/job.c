#include <string.h>

#include "lab/proto/job.h"
#include "lab/proto/proto.h"

static const struct {
    const char *name;
    lab_prim_kind_t kind;
} p2p_names[] = {
    {"send", LAB_PRIM_SEND},   {"recv", LAB_PRIM_RECV},         {"isend", LAB_PRIM_ISEND},
    {"irecv", LAB_PRIM_IRECV}, {"pingpong", LAB_PRIM_PINGPONG},
};

const char *lab_prim_name(lab_prim_t p)
{
    if (p.kind == LAB_PRIM_COLL)
        return dl_coll_name(p.coll);
    for (size_t i = 0; i < sizeof(p2p_names) / sizeof(p2p_names[0]); i++)
        if (p2p_names[i].kind == p.kind)
            return p2p_names[i].name;
    return "?";
}

dl_status_t lab_prim_parse(const char *name, lab_prim_t *p_p)
{
    dl_coll_t c;
    if (dl_coll_parse(name, &c) == DL_OK) {
        *p_p = (lab_prim_t){LAB_PRIM_COLL, c};
        return DL_OK;
    }
    for (size_t i = 0; i < sizeof(p2p_names) / sizeof(p2p_names[0]); i++)
        if (strcmp(name, p2p_names[i].name) == 0) {
            *p_p = (lab_prim_t){p2p_names[i].kind, DL_COLL_BARRIER};
            return DL_OK;
        }
    return DL_ERR_INVALID;
}

const char *lab_prim_all_names(void)
{
    return "send, recv, isend, irecv, broadcast, scatter, gather, reduce, all_gather, "
           "all_reduce, reduce_scatter, all_to_all, barrier, pingpong";
}

bool lab_prim_has_root(lab_prim_t p)
{
    return p.kind == LAB_PRIM_COLL ? dl_coll_has_root(p.coll) != 0 : p.kind != LAB_PRIM_PINGPONG;
}

bool lab_prim_has_op(lab_prim_t p)
{
    return p.kind == LAB_PRIM_COLL && dl_coll_has_op(p.coll);
}

void lab_job_defaults(lab_job_t *job)
{
    memset(job, 0, sizeof(*job));
    job->prim = (lab_prim_t){LAB_PRIM_COLL, DL_COLL_ALL_REDUCE};
    job->np = 4;
    job->dtype = DL_INT64;
    job->count = 2;
    job->op = DL_OP_SUM;
    job->timeout_s = 60;
    job->min_bytes = 8;
    job->max_bytes = 64u << 20;
    job->factor = 2;
    job->iters = 20;
    job->warmup = 5;
    job->check = true;
    snprintf(job->backend, sizeof(job->backend), "builtin");
    job->device = DL_DEVICE_CPU;
}

json_t *lab_job_to_json(const lab_job_t *job)
{
    return json_pack("{s:s, s:b, s:s, s:i, s:s, s:s, s:I, s:s, s:i, s:f, s:I, s:I, s:f, s:i, "
                     "s:i, s:b, s:s, s:s}",
                     "type", "job", "bench", job->bench, "prim", lab_prim_name(job->prim), "np",
                     job->np, "algo", job->algo, "dtype", dl_dtype_name(job->dtype), "count",
                     (json_int_t)job->count, "op", dl_op_name(job->op), "root", job->root,
                     "timeout", job->timeout_s, "min_bytes", (json_int_t)job->min_bytes,
                     "max_bytes", (json_int_t)job->max_bytes, "factor", job->factor, "iters",
                     job->iters, "warmup", job->warmup, "check", job->check, "backend",
                     job->backend, "device", job->device == DL_DEVICE_CUDA ? "cuda" : "cpu");
}

dl_status_t lab_job_from_json(const json_t *j, lab_job_t *job)
{
    lab_job_t out;
    lab_job_defaults(&out);
    out.bench = json_is_true(json_object_get(j, "bench"));
    if (lab_prim_parse(lab_json_str(j, "prim", ""), &out.prim) != DL_OK ||
        dl_dtype_parse(lab_json_str(j, "dtype", ""), &out.dtype) != DL_OK ||
        dl_op_parse(lab_json_str(j, "op", ""), &out.op) != DL_OK)
        return DL_ERR_PROTOCOL;
    snprintf(out.algo, sizeof(out.algo), "%s", lab_json_str(j, "algo", ""));
    out.np = (int)lab_json_int(j, "np", 0);
    out.count = (size_t)lab_json_int(j, "count", 0);
    out.root = (int)lab_json_int(j, "root", 0);
    out.timeout_s = lab_json_num(j, "timeout", 60);
    out.min_bytes = (size_t)lab_json_int(j, "min_bytes", 8);
    out.max_bytes = (size_t)lab_json_int(j, "max_bytes", 8);
    out.factor = lab_json_num(j, "factor", 2);
    out.iters = (int)lab_json_int(j, "iters", 20);
    out.warmup = (int)lab_json_int(j, "warmup", 5);
    out.check = !json_is_false(json_object_get(j, "check"));
    snprintf(out.backend, sizeof(out.backend), "%s", lab_json_str(j, "backend", "builtin"));
    out.device =
        strcmp(lab_json_str(j, "device", "cpu"), "cuda") == 0 ? DL_DEVICE_CUDA : DL_DEVICE_CPU;
    *job = out;
    return DL_OK;
}
