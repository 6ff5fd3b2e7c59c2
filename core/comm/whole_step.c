/* Step mode on backends without schedules (mpi, nccl). Their collectives
 * are single library calls that distlab cannot pause inside, so the step
 * hook sees each as a schedule of one step with no actions of its own:
 * called before the call (data not yet moved) and after it completes, with
 * this rank's buffers as they are then. */
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "distlab/backends.h"

struct dl_whole_step {
    dl_sched_t s;
    dl_step_t step;
    void *bufs[DL_BUF__COUNT];
    size_t esz;
    uint32_t ctx;
    uint64_t seq;
};

static int call_hook(dl_work_t *w, bool done)
{
    dl_whole_step_t *ws = w->whole;
    dl_world_t *world = w->comm->world;
    if (world->step_hook == NULL)
        return 0;
    dl_step_info_t info = {
        .s = &ws->s,
        .step = 0,
        .done = done,
        .rank = w->comm->rank,
        .world_ranks = w->comm->world_ranks,
        .bufs = ws->bufs,
        .esz = ws->esz,
        .ctx = ws->ctx,
        .seq = ws->seq,
        .whole = true,
    };
    return world->step_hook(world->step_hook_arg, &info);
}

dl_status_t dl__whole_step_begin(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    if (comm->world->step_hook == NULL || comm->ops->schedules)
        return DL_OK;
    dl_world_t *world = comm->world;
    dl_whole_step_t *ws = world->spare_whole;
    if (ws != NULL) {
        world->spare_whole = NULL;
        memset(ws, 0, sizeof(*ws));
    } else if ((ws = calloc(1, sizeof(*ws))) == NULL) {
        return DL_ERR_NOMEM;
    }
    const char *name = dl_backend_call_name(comm->ops->name, call->args.coll);
    ws->s.args = call->args;
    ws->s.args.splits = NULL; /* only counts are shown; the call has its own copy */
    ws->s.algo = name != NULL ? name : comm->ops->name;
    ws->s.kernel_op = call->args.op;
    ws->step.phase = "whole collective (this backend runs it as one call)";
    ws->s.steps = &ws->step;
    ws->s.n_steps = 1;
    /* Device memory (nccl) is not shown: the hook reads host memory. */
    if (comm->ops->caps[DL_DEVICE_CPU] != 0 && call->args.splits == NULL) {
        ws->bufs[DL_BUF_IN] = call->in;
        ws->bufs[DL_BUF_OUT] = call->out;
    }
    ws->esz = dl_dtype_size(call->dtype);
    /* The sequence number moves on once the call has started. */
    ws->ctx = comm->ctx;
    ws->seq = comm->coll_seq;
    w->whole = ws;
    if (call_hook(w, false) != 0) {
        dl__comm_fail(comm, DL_ERR_ABORTED, "%s: stopped before it started", w->what);
        return DL_ERR_ABORTED;
    }
    return DL_OK;
}

void dl__whole_step_end(dl_work_t *w, dl_status_t st)
{
    if (w->whole == NULL)
        return;
    if (st == DL_OK)
        call_hook(w, true);
    dl_world_t *world = w->comm->world;
    if (world->spare_whole == NULL)
        world->spare_whole = w->whole;
    else
        free(w->whole);
    w->whole = NULL;
}
