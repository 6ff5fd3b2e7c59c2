/* A script's set-up lines, as torch spells them: torch.device(...),
 * torch.cuda's set_device, current_device, device_count and is_available,
 * dist's init_process_group, destroy_process_group, is_initialized,
 * is_available and get_backend, and dist.group.WORLD. The shell's ranks
 * are set up already (each with its GPU, lab_rank_device), so these check
 * what a script says against them, or answer, and change nothing. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "distlab/comm.h"
#include "distlab/cuda.h"
#include "lab/rank/eval.h"
#include "lab/rank/rank.h"

#define fail lab__eval_fail

const char *lab__eval_setup_name(const char *fn, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *c = fn; *c != '\0' && n + 1 < cap; c++)
        if (!isspace((unsigned char)*c))
            buf[n++] = *c;
    buf[n] = '\0';
    static const char long_form[] = "torch.distributed.";
    size_t k = sizeof(long_form) - 1;
    if (strncmp(buf, long_form, k) == 0) {
        memcpy(buf, "dist.", 5);
        memmove(buf + 5, buf + k, strlen(buf + k) + 1);
    }
    return buf;
}

bool lab__eval_is_world_group(const char *name)
{
    char buf[64];
    return strchr(name, '.') != NULL &&
           strcmp(lab__eval_setup_name(name, buf, sizeof(buf)), "dist.group.WORLD") == 0;
}

dl_status_t lab__eval_world_group(lab_eval_t *ev, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_GROUP;
    out->group = ev->r->comm;
    out->i = 1; /* the world's: clearing the value leaves the communicator be */
    /* held by copies (g = dist.group.WORLD); without memory, its own only */
    (void)lab_value_share(out);
    return DL_OK;
}

bool lab__eval_is_setup_fn(const char *fn)
{
    static const char *const fns[] = {"torch.device",
                                      "torch.cuda.set_device",
                                      "torch.cuda.current_device",
                                      "torch.cuda.device_count",
                                      "torch.cuda.is_available",
                                      "dist.init_process_group",
                                      "dist.destroy_process_group",
                                      "dist.is_initialized",
                                      "dist.is_available",
                                      "dist.get_backend"};
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        if (strcmp(fn, fns[i]) == 0)
            return true;
    return false;
}

/* torch.device('cuda', 0), torch.device(f'cuda:{rank}'), torch.device('cpu'):
 * the device's string. */
static dl_status_t make_device(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                               lab_value_t *out)
{
    if (npos < 1 || npos > 2 || pos[0].kind != LAB_V_STR ||
        (npos == 2 && (pos[1].kind != LAB_V_INT || pos[1].i < 0)))
        return fail(ev, node,
                    "torch.device() takes a type and an optional number: torch.device('cuda', "
                    "0), torch.device('cuda:0'), torch.device('cpu')");
    const char *s = pos[0].s;
    bool cuda;
    long index;
    if (!lab__eval_device_name(s, &cuda, &index))
        return fail(ev, node, "unknown device '%s'; devices: cpu, cuda, cuda:N", s);
    if (npos == 2 && (!cuda || index >= 0))
        return fail(ev, node, "torch.device('%s', %lld): a number goes with 'cuda' alone", s,
                    (long long)pos[1].i);
    char name[48];
    if (npos == 2)
        snprintf(name, sizeof(name), "cuda:%lld", (long long)pos[1].i);
    else
        snprintf(name, sizeof(name), "%s", s);
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_STR;
    snprintf(out->name, sizeof(out->name), "%s", LAB_DEVICE);
    out->s = strdup(name);
    return out->s != NULL ? DL_OK : DL_ERR_NOMEM;
}

/* dist.init_process_group(backend, ..., rank=, world_size=): the shell's
 * ranks are set up already; what the call says must agree with them. gloo
 * is torch's CPU backend, which the builtin and mpi backends stand in for. */
static dl_status_t init_group(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                              const json_t *kw)
{
    const char *have = dl_comm_backend(ev->r->comm);
    const json_t *b = json_object_get(kw, "backend");
    lab_value_t v = {0};
    if (b != NULL && lab_eval_expr(ev, b, &v) != DL_OK)
        return DL_ERR_INVALID;
    const lab_value_t *want = b != NULL ? &v : npos > 0 ? &pos[0] : NULL;
    dl_status_t st = DL_OK;
    if (want != NULL && want->kind == LAB_V_STR) {
        bool nccl = strcasecmp(want->s, "nccl") == 0;
        bool cpu = strcasecmp(want->s, "gloo") == 0 || strcasecmp(want->s, "mpi") == 0;
        if (!nccl && !cpu)
            st = fail(ev, node, "init_process_group: unknown backend '%s' (gloo, mpi or nccl)",
                      want->s);
        else if (nccl != (strcmp(have, "nccl") == 0))
            st = fail(ev, node,
                      "init_process_group: the ranks run on the %s backend, not %s; start the "
                      "shell with --backend %s for it",
                      have, want->s, nccl ? "nccl" : "builtin");
    }
    lab_value_clear(&v);
    const char *keys[] = {"rank", "world_size"};
    for (int k = 0; k < 2 && st == DL_OK; k++) {
        const json_t *n = json_object_get(kw, keys[k]);
        if (n == NULL)
            continue;
        lab_value_t x;
        if ((st = lab_eval_expr(ev, n, &x)) != DL_OK)
            break;
        int64_t is = lab__eval_builtin_value(ev, keys[k]);
        if (x.kind != LAB_V_INT || x.i != is)
            st = fail(ev, n, "init_process_group: %s= must be this rank's, %lld", keys[k],
                      (long long)is);
        lab_value_clear(&x);
    }
    return st;
}

dl_status_t lab__eval_setup_fn(lab_eval_t *ev, const json_t *node, const char *fn, lab_value_t *pos,
                               int npos, const json_t *kw, lab_value_t *out)
{
    if (strcmp(fn, "torch.device") == 0)
        return json_object_size(kw) != 0 ? fail(ev, node, "torch.device() takes no keywords here")
                                         : make_device(ev, node, pos, npos, out);
    memset(out, 0, sizeof(*out));
    if (strcmp(fn, "dist.init_process_group") == 0)
        return init_group(ev, node, pos, npos, kw);
    if (strcmp(fn, "dist.destroy_process_group") == 0)
        return DL_OK; /* the shell's ranks live on; `quit` ends them */
    if (strcmp(fn, "dist.is_initialized") == 0 || strcmp(fn, "dist.is_available") == 0) {
        out->kind = LAB_V_BOOL;
        out->i = 1;
        return DL_OK;
    }
    if (strcmp(fn, "dist.get_backend") == 0) {
        out->kind = LAB_V_STR;
        out->s = strdup(dl_comm_backend(ev->r->comm));
        return out->s != NULL ? DL_OK : DL_ERR_NOMEM;
    }
    if (json_object_size(kw) != 0)
        return fail(ev, node, "%s() takes no keywords here", fn);
    if (strcmp(fn, "torch.cuda.set_device") == 0) {
        /* Each rank has its GPU already (lab_rank_device): set_device may
         * only name it, as the scripts do with set_device(rank). */
        dl_device_t dev;
        if (npos != 1)
            return fail(ev, node, "torch.cuda.set_device() takes one device");
        return lab__eval_device_value(ev, node, &pos[0], &dev);
    }
    if (npos != 0)
        return fail(ev, node, "%s() takes no arguments", fn);
    char why[200];
    int n = dl_cuda_device_count(why, sizeof(why));
    bool count = strcmp(fn, "torch.cuda.device_count") == 0;
    if (count || strcmp(fn, "torch.cuda.is_available") == 0) {
        out->kind = count ? LAB_V_INT : LAB_V_BOOL;
        out->i = count ? n : n > 0;
        return DL_OK;
    }
    dl_device_t dev;
    if (lab_rank_device(ev->r->rank, DL_DEVICE_CUDA, &dev, why, sizeof(why)) != DL_OK)
        return fail(ev, node, "torch.cuda.current_device(): %s", why);
    out->kind = LAB_V_INT;
    out->i = dev.index;
    return DL_OK;
}
