/* Step mode on backends without schedules (mpi, nccl). Their collectives
 * are single library calls that distlab cannot pause inside, so the step
 * hook sees each as a schedule of one step with no actions of its own:
 * called before the call (data not yet moved) and after it completes, with
 * this rank's buffers as they are then. */
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "exec/exec.h"

const char dl__whole_step_phase[] = "whole collective (this backend runs it as one call)";

struct dl_whole_step {
    dl_sched_t s;
    dl_step_t step;
    void *bufs[DL_BUF__COUNT];
    dl_step_info_t info; /* what the hook sees, pointing into this record */
};

static int call_hook(dl_work_t *w, bool done, char *why, size_t why_cap)
{
    dl_whole_step_t *ws = w->whole;
    dl_world_t *world = w->comm->world;
    if (world->step_hook == NULL || (done && world->step_hook_quick))
        return 0; /* a quick hook is called before the step only */
    ws->info.done = done;
    ws->info.why = why;
    ws->info.why_cap = why_cap;
    if (why != NULL)
        why[0] = '\0';
    /* A person stepping holds the process here: not waiting (wait.c). */
    return dl__exec_run_hook(world->step_hook, world->step_hook_arg, world->step_hook_quick,
                             &ws->info);
}

dl_status_t dl__whole_step_begin_slow(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    dl_world_t *world = comm->world;
    dl_whole_step_t *ws = world->spare_whole;
    if (ws != NULL) {
        /* Kept from the last call: what is the same for every call (the
         * one step, the fields left zero) is set already, and the hook
         * only reads it. No memset: this runs for every call. */
        world->spare_whole = NULL;
    } else {
        if ((ws = calloc(1, sizeof(*ws))) == NULL)
            return DL_ERR_NOMEM;
        ws->step.phase = dl__whole_step_phase;
        ws->s.steps = &ws->step;
        ws->s.n_steps = 1;
        ws->info.s = &ws->s;
        ws->info.step = 0;
        ws->info.bufs = ws->bufs;
        ws->info.whole = true;
    }
    const dl_coll_args_t *a = &call->args;
    const char *name = world->call_names != NULL ? world->call_names[a->coll] : NULL;
    /* Field by field: the caller has just written them one by one, and a
     * copy of the whole struct would read them back in wider loads, which
     * the store buffer cannot forward (a stall on every call). */
    ws->s.args.coll = a->coll;
    ws->s.args.nranks = a->nranks;
    ws->s.args.root = a->root;
    ws->s.args.count = a->count;
    ws->s.args.op = a->op;
    ws->s.args.splits = NULL; /* only counts are shown; the call has its own copy */
    ws->s.algo = name != NULL ? name : comm->ops->name;
    ws->s.kernel_op = call->args.op;
    /* Device memory (nccl) is not shown: the hook reads host memory. */
    bool shown = comm->ops->caps[DL_DEVICE_CPU] != 0 && call->args.splits == NULL;
    ws->bufs[DL_BUF_IN] = shown ? call->in : NULL;
    ws->bufs[DL_BUF_OUT] = shown ? call->out : NULL;
    ws->info.rank = comm->rank;
    ws->info.world_ranks = comm->world_ranks;
    ws->info.esz = dl_dtype_size(call->dtype);
    /* The sequence number moves on once the call has started. */
    ws->info.ctx = comm->ctx;
    ws->info.seq = comm->coll_seq;
    w->whole = ws;
    char why[256];
    if (call_hook(w, false, why, sizeof(why)) != 0) {
        dl__comm_fail(comm, DL_ERR_ABORTED, "%s: %s", w->what,
                      why[0] ? why : "stopped before it started");
        return DL_ERR_ABORTED;
    }
    return DL_OK;
}

void dl__whole_step_end_slow(dl_work_t *w, dl_status_t st)
{
    if (st == DL_OK)
        call_hook(w, true, NULL, 0); /* the call has run: nothing to give up */
    dl_world_t *world = w->comm->world;
    if (world->spare_whole == NULL)
        world->spare_whole = w->whole;
    else
        free(w->whole);
    w->whole = NULL;
}
