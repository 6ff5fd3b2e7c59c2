/* Work handles: what an async call returns, and what every blocking call
 * uses inside. Completion performs the copy-outs (staged results into the
 * user's tensors) and frees staging memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "distlab/cuda.h"

dl_work_t *dl__work_new(dl_comm_t *comm, const char *what)
{
    dl_world_t *world = comm->world;
    dl_work_t *w = world->spare_work;
    if (w != NULL) {
        /* Field by field, not memset: this runs for every call, and a
         * memset of the whole record (its name buffer included) is a
         * `rep stos` that costs more than the rest of the call's set-up on
         * some CPUs. A spare has finished (dl__work_recycle): it has left
         * the world's list and its whole step, and released what it owned
         * and copied out, so that those fields are as calloc leaves them;
         * its backend part is gone only where the backend has work_fini. */
        world->spare_work = NULL;
        w->done = false;
        w->status = DL_OK;
        w->backend = NULL;
    } else if ((w = calloc(1, sizeof(*w))) == NULL) {
        return NULL;
    }
    w->comm = comm;
    w->source = -1;
    w->what = what;
    return w;
}

void dl__work_name(dl_work_t *w, const char *what)
{
    snprintf(w->name, sizeof(w->name), "%s", what);
    w->what = w->name;
}

void dl__work_recycle(dl_work_t *w)
{
    dl_world_t *world = w->comm->world;
    if (world->spare_work == NULL)
        world->spare_work = w;
    else
        free(w);
}

void dl__world_free_spares(dl_world_t *world)
{
    free(world->spare_work);
    free(world->spare_whole);
    world->spare_work = NULL;
    world->spare_whole = NULL;
}

dl_status_t dl__work_copyout_dev(dl_work_t *w, void *dst, dl_device_t dst_dev, const void *src,
                                 dl_device_t src_dev, size_t n)
{
    dl_copyout_t *c = realloc(w->copyouts, (w->n_copyouts + 1) * sizeof(*c));
    if (c == NULL)
        return DL_ERR_NOMEM;
    c[w->n_copyouts++] = (dl_copyout_t){dst, dst_dev, src, src_dev, n};
    w->copyouts = c;
    return DL_OK;
}

dl_status_t dl__work_copyout(dl_work_t *w, void *dst, const void *src, size_t n)
{
    dl_device_t cpu = {DL_DEVICE_CPU, 0};
    return dl__work_copyout_dev(w, dst, cpu, src, cpu, n);
}

/* Runs the copy-outs, newest first (see dl__work_copyout). */
static dl_status_t run_copyouts(dl_work_t *w)
{
    for (size_t i = w->n_copyouts; i-- > 0;) {
        const dl_copyout_t *c = &w->copyouts[i];
        if (c->n == 0) /* empty tensors have no storage */
            continue;
        if (c->dst_dev.type == DL_DEVICE_CPU && c->src_dev.type == DL_DEVICE_CPU) {
            memcpy(c->dst, c->src, c->n);
            continue;
        }
        dl_status_t st = dl_cuda_copy(c->dst, c->dst_dev, c->src, c->src_dev, c->n);
        if (st != DL_OK) {
            dl__comm_fail(w->comm, st, "%s: copying the result into the tensor failed: %s", w->what,
                          dl_cuda_last_error());
            return st;
        }
    }
    return DL_OK;
}

dl_status_t dl__work_own(dl_work_t *w, dl_allocator_t *a, void *ptr, size_t n)
{
    dl_owned_t *o = realloc(w->owned, (w->n_owned + 1) * sizeof(*o));
    if (o == NULL)
        return DL_ERR_NOMEM;
    o[w->n_owned++] = (dl_owned_t){a, ptr, n};
    w->owned = o;
    return DL_OK;
}

/* Most calls own nothing, copy nothing out and have no backend part (a
 * blocking collective on host tensors): they cost no call here. */
static void release(dl_work_t *w)
{
    if (w->owned != NULL) {
        for (size_t i = 0; i < w->n_owned; i++)
            w->owned[i].alloc->free(w->owned[i].alloc, w->owned[i].ptr, w->owned[i].n);
        free(w->owned);
        w->owned = NULL;
        w->n_owned = 0;
    }
    if (w->copyouts != NULL) {
        free(w->copyouts);
        w->copyouts = NULL;
        w->n_copyouts = 0;
    }
    if (w->backend != NULL && w->comm->ops->work_fini != NULL)
        w->comm->ops->work_fini(w);
}

/* Static, so that dl__work_finish has it inline: the work it finishes is
 * mostly the first in the list. */
static void remove_active(dl_world_t *world, dl_work_t *w)
{
    for (dl_work_t **pp = &world->active; *pp != NULL; pp = &(*pp)->next_active) {
        if (*pp == w) {
            *pp = w->next_active;
            w->next_active = NULL;
            return;
        }
    }
}

void dl__work_finish(dl_work_t *w, dl_status_t st)
{
    if (w->done)
        return;
    if (st == DL_OK)
        st = run_copyouts(w);
    w->done = true;
    w->status = st;
    remove_active(w->comm->world, w);
    dl__whole_step_end(w, st); /* sees the results, copied out */
    release(w);
}

void dl__world_add_active(dl_world_t *world, dl_work_t *w)
{
    /* Appended, so older work is progressed first. */
    dl_work_t **pp = &world->active;
    while (*pp != NULL)
        pp = &(*pp)->next_active;
    w->next_active = NULL;
    *pp = w;
}

dl_status_t dl_work_wait(dl_work_t *w, double timeout_s)
{
    if (w == NULL)
        return DL_ERR_INVALID;
    if (w->done)
        return w->status;
    if (timeout_s < 0)
        timeout_s = w->comm->timeout_s;
    return dl__comm_wait(w, timeout_s);
}

bool dl_work_test(dl_work_t *w)
{
    if (w == NULL || w->done)
        return true;
    dl_status_t st = w->comm->ops->progress(w);
    if (st != DL_ERR_AGAIN)
        dl__work_finish(w, st);
    return w->done;
}

dl_status_t dl_work_status(const dl_work_t *w)
{
    return w->done ? w->status : DL_ERR_AGAIN;
}

int dl_work_source(const dl_work_t *w)
{
    return w->source;
}

/* Waits for w if it has not finished, and finishes it in any case. */
static void settle(dl_work_t *w)
{
    if (!w->done)
        dl_work_wait(w, -1);
    if (!w->done) /* the wait itself failed to start: drop it anyway */
        dl__work_finish(w, DL_ERR_ABORTED);
}

dl_work_t *dl_work_finished(dl_comm_t *comm, dl_status_t st)
{
    dl_work_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->comm = comm;
    w->source = -1;
    w->what = "finished";
    w->done = true;
    w->status = st;
    return w;
}

void dl_work_free(dl_work_t *w)
{
    if (w == NULL)
        return;
    settle(w);
    free(w);
}

dl_status_t dl__work_drop(dl_work_t *w)
{
    settle(w);
    dl_status_t st = w->status;
    dl__work_recycle(w);
    return st;
}
