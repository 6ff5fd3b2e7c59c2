/* Runs a schedule step by step; see sched.h for a step's semantics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distlab/op.h"
#include "exec/board.h"
#include "exec/exec.h"

/* The fused write-back pass sums and writes back a share this many bytes
 * at a time, so that a block is still in the first-level cache when it is
 * copied. 512 B measured best among 512 B to 2 KiB at np=4 (16 MiB float32
 * with tests/bench/shm_floor.py: a fraction of the floor of 0.79 to 0.91
 * against 0.72 to 0.82); at np=2 all were at the floor. */
#define FUSED_BLOCK 512

typedef struct {
    dl_exec_t *e;
    const dl_action_t *a;
    char *why;
    size_t why_cap;
} combine_t;

/* Byte `at` of region r, and in *len_p (at most its value on entry) how
 * many bytes from there lie in one piece of memory: all of them in a
 * block, up to the segment's end in a segmented buffer. */
static uint8_t *piece(const dl_exec_t *e, dl_ref_t r, size_t at, size_t *len_p)
{
    size_t pos = r.off * e->esz + at;
    const dl_segs_t *sg = &e->segs[r.buf];
    if (!e->segmented || sg->ptrs == NULL)
        return e->buf[r.buf] + pos;
    size_t i = pos / sg->seg_bytes, in = pos % sg->seg_bytes;
    if (i >= (size_t)sg->n) /* the end: an empty region there */
        return (uint8_t *)sg->ptrs[sg->n - 1] + sg->seg_bytes;
    if (*len_p > sg->seg_bytes - in)
        *len_p = sg->seg_bytes - in;
    return (uint8_t *)sg->ptrs[i] + in;
}

/* The start of a region that lies in one piece (a message's source). */
static uint8_t *region(const dl_exec_t *e, dl_ref_t r)
{
    size_t len = 0;
    return piece(e, r, 0, &len);
}

/* e->kern, looked up at e's first reduction: DL_OK, or dl_op_check's error
 * when the op is not defined for the dtype (e->kern.k2 stays NULL). */
static dl_status_t kernels(dl_exec_t *e)
{
    return e->kern.k2 != NULL ? DL_OK : dl_reduce_kernels(e->s->kernel_op, e->dtype, &e->kern);
}

/* dst = dst op src over len bytes, where dst and src do not overlap: the
 * kernel straight away. Anything else goes through dl_reduce. */
static dl_status_t reduce_into(dl_exec_t *e, uint8_t *dst, const uint8_t *acc, const uint8_t *src,
                               size_t len)
{
    bool apart = src + len <= dst || dst + len <= src;
    if (dst == acc && apart && kernels(e) == DL_OK) {
        e->kern.k2(dst, src, len / e->esz);
        return DL_OK;
    }
    return dl_reduce(e->s->kernel_op, e->dtype, dst, acc, src, len / e->esz);
}

/* a's combine on this rank: dst = src or dst = acc op src, where src is
 * remote (a peer's memory, one piece) or, when NULL, a's own src region.
 * Piece by piece where a region crosses a segment's edge. */
static dl_status_t apply(dl_exec_t *e, const dl_action_t *a, dl_combine_t how,
                         const uint8_t *remote)
{
    size_t nbytes = a->count * e->esz;
    for (size_t at = 0; at < nbytes;) {
        size_t len = nbytes - at;
        uint8_t *dst = piece(e, a->dst, at, &len);
        const uint8_t *src = remote != NULL ? remote + at : piece(e, a->src, at, &len);
        if (how == DL_COMBINE_COPY && remote != NULL) {
            memcpy(dst, src, len);
        } else if (how == DL_COMBINE_COPY) {
            memmove(dst, src, len); /* a local copy may overlap */
        } else {
            /* acc may cut len shorter: dst and src start where they did. */
            uint8_t *acc = piece(e, a->acc, at, &len);
            dl_status_t st = reduce_into(e, dst, acc, src, len);
            if (st != DL_OK)
                return st;
        }
        at += len;
    }
    return DL_OK;
}

/* Applies a received message: straight from the peer's memory into ours. */
static dl_status_t combine(void *arg, const void *remote, size_t nbytes)
{
    combine_t *c = arg;
    dl_exec_t *e = c->e;
    const dl_action_t *a = c->a;
    size_t want = a->count * e->esz;
    if (nbytes != want) {
        snprintf(c->why, c->why_cap, "rank %d sent %zu bytes where rank %d expected %zu",
                 a->src_rank, nbytes, a->dst_rank, want);
        return DL_ERR_MISMATCH;
    }
    if (a->count == 0)
        return DL_OK;
    return apply(e, a, a->combine, remote);
}

dl_status_t dl__exec_init_segs(dl_exec_t *e, const dl_segs_t *segs)
{
    for (int b = 0; b < DL_BUF__COUNT; b++) {
        e->segs[b] = (dl_segs_t){NULL, 0, 0};
        if (segs[b].ptrs == NULL)
            continue;
        if (segs[b].seg_bytes == 0 || segs[b].seg_bytes % e->esz != 0 ||
            dl__exec_plan_sends_span(e->plan, (dl_buf_t)b, segs[b].seg_bytes / e->esz))
            return DL_ERR_INVALID;
        e->segs[b] = segs[b];
        e->buf[b] = NULL;
        e->segmented = true;
    }
    return DL_OK;
}

void dl__exec_release(dl_exec_t *e)
{
    /* A failed step may leave write-backs held: let their senders go (their
     * own work has failed too, or will time out). */
    for (size_t i = 0; i < e->nheld; i++)
        dl__link_release(e->link, &e->held[i].h);
    e->nheld = 0;
    if (e->held != e->held_inline)
        free(e->held);
    e->held = NULL;
    if (e->sends != e->sends_inline) {
        free(e->sends);
        free(e->send_peers);
    }
    e->sends = NULL;
    e->send_peers = NULL;
}

/* The action at i of a step's plan. */
static const dl_action_t *planned(const dl_exec_t *e, const dl_exec_plan_step_t *ps, size_t i)
{
    return &e->s->actions[e->plan->idx[ps->first + i]];
}

static dl_status_t post_sends(dl_exec_t *e, const dl_exec_plan_step_t *ps)
{
    for (; e->next < ps->n_sends; e->next++) {
        const dl_action_t *a = planned(e, ps, e->next);
        if (e->nsends == e->sends_cap) {
            bool inl = e->sends == e->sends_inline;
            size_t cap = e->sends_cap * 2;
            dl_link_send_t *n = realloc(inl ? NULL : e->sends, cap * sizeof(*n));
            if (n == NULL)
                return DL_ERR_NOMEM;
            if (inl)
                memcpy(n, e->sends_inline, sizeof(e->sends_inline));
            int *p = realloc(inl ? NULL : e->send_peers, cap * sizeof(*p));
            if (p == NULL) {
                if (inl)
                    free(n);
                else
                    e->sends = n;
                return DL_ERR_NOMEM;
            }
            if (inl)
                memcpy(p, e->send_peers_inline, sizeof(e->send_peers_inline));
            e->sends = n;
            e->send_peers = p;
            e->sends_cap = cap;
        }
        dl_status_t (*post)(dl_link_t *, int, uint32_t, int64_t, const void *, size_t,
                            dl_link_send_t *) = a->back ? dl__link_post_ref : dl__link_post;
        dl_status_t st2 = post(e->link, e->world_ranks[a->dst_rank], e->ctx, e->tag,
                               region(e, a->src), a->count * e->esz, &e->sends[e->nsends]);
        if (st2 != DL_OK) {
            e->waiting_for = a->dst_rank;
            return st2; /* DL_ERR_AGAIN: the channel is full, retry */
        }
        e->send_peers[e->nsends++] = a->dst_rank;
    }
    return DL_OK;
}

/* Whether this rank's part of the step is one share summed from every
 * sender and written back, run as one pass (fused_pass) whose sums are
 * those of the receives in action order: so the plan says, unless that
 * share is a segmented buffer. */
static bool step_fuses(const dl_exec_t *e, const dl_exec_plan_step_t *ps)
{
    return ps->fuse_buf >= 0 && (!e->segmented || e->segs[ps->fuse_buf].ptrs == NULL);
}

static dl_status_t hold_one(dl_exec_t *e, const dl_action_t *a, char *why, size_t why_cap)
{
    if (e->nheld == e->held_cap) {
        bool inl = e->held == e->held_inline;
        dl_exec_held_t *n = realloc(inl ? NULL : e->held, 2 * e->held_cap * sizeof(*n));
        if (n == NULL)
            return DL_ERR_NOMEM;
        if (inl)
            memcpy(n, e->held_inline, sizeof(e->held_inline));
        e->held = n;
        e->held_cap *= 2;
    }
    dl_exec_held_t *h = &e->held[e->nheld];
    void *remote = NULL;
    size_t nbytes = 0, want = a->count * e->esz;
    dl_status_t st = dl__link_hold(e->link, e->world_ranks[a->src_rank], e->ctx, e->tag, &remote,
                                   &nbytes, &h->h);
    if (st == DL_ERR_UNSUPPORTED) {
        snprintf(why, why_cap, "rank %d writes back into rank %d over TCP (%s needs shared memory)",
                 a->dst_rank, a->src_rank, e->s->algo != NULL ? e->s->algo : "this schedule");
        return st;
    }
    if (st == DL_ERR_PROTOCOL)
        snprintf(why, why_cap, "rank %d sent a copy where rank %d writes back", a->src_rank,
                 a->dst_rank);
    if (st != DL_OK)
        return st;
    h->a = a;
    h->remote = remote;
    e->nheld++;
    if (nbytes != want) {
        snprintf(why, why_cap, "rank %d sent %zu bytes where rank %d expected %zu", a->src_rank,
                 nbytes, a->dst_rank, want);
        return DL_ERR_MISMATCH;
    }
    /* Unfused, a write-back's receive is applied now, in action order. */
    return e->fused ? DL_OK : apply(e, a, a->combine, h->remote);
}

/* The fused step: block by block, the share's sum over the held messages
 * in their order (then the scale of an avg), written at once into every
 * sender's memory while the block is in the cache. */
static dl_status_t fused_pass(dl_exec_t *e, const dl_exec_plan_step_t *ps)
{
    const dl_action_t *a0 = e->held[0].a;
    uint8_t *dst = region(e, a0->dst);
    size_t nbytes = a0->count * e->esz, blk = FUSED_BLOCK / e->esz * e->esz;
    if (blk == 0)
        blk = e->esz;
    /* The sum is built in a block of the stack and stored into every
     * buffer from there: each buffer's lines are read once and written once. */
    uint8_t sum[FUSED_BLOCK] __attribute__((aligned(64)));
    /* The kernels once, not dl_reduce's checks on every block: the sum is
     * on the stack, apart from every buffer. */
    dl_status_t rk = kernels(e);
    if (rk != DL_OK)
        return rk;
    const dl_reduce_kernels_t *k = &e->kern;
    for (size_t at = 0; at < nbytes; at += blk) {
        size_t len = nbytes - at < blk ? nbytes - at : blk, n = len / e->esz;
        k->k3(sum, dst + at, e->held[0].remote + at, n);
        for (size_t j = 1; j < e->nheld; j++)
            k->k2(sum, e->held[j].remote + at, n);
        if (ps->fuse_scale) {
            dl_status_t rc = dl_op_scale(e->dtype, sum, n, e->s->args.nranks);
            if (rc != DL_OK)
                return rc;
        }
        memcpy(dst + at, sum, len);
        for (size_t j = 0; j < e->nheld; j++)
            memcpy(e->held[j].remote + at, sum, len);
    }
    return DL_OK;
}

/* Step 4: every held message gets the receiver's dst, and its sender its
 * completion. */
static dl_status_t write_back(dl_exec_t *e, const dl_exec_plan_step_t *ps)
{
    if (e->fused && e->nheld > 0) {
        dl_status_t rc = fused_pass(e, ps);
        if (rc != DL_OK)
            return rc;
    } else {
        for (size_t j = 0; j < e->nheld; j++) {
            const dl_action_t *a = e->held[j].a;
            for (size_t at = 0, nbytes = a->count * e->esz; at < nbytes;) {
                size_t len = nbytes - at;
                const uint8_t *dst = piece(e, a->dst, at, &len);
                memcpy(e->held[j].remote + at, dst, len);
                at += len;
            }
        }
    }
    for (size_t j = 0; j < e->nheld; j++)
        dl__link_release(e->link, &e->held[j].h);
    e->nheld = 0;
    return DL_OK;
}

static dl_status_t recv_all(dl_exec_t *e, const dl_exec_plan_step_t *ps, char *why, size_t why_cap)
{
    for (; e->next < ps->n_recvs; e->next++) {
        const dl_action_t *a = planned(e, ps, ps->n_sends + e->next);
        if (a->back) {
            dl_status_t st2 = hold_one(e, a, why, why_cap);
            if (st2 == DL_ERR_AGAIN)
                e->waiting_for = a->src_rank;
            if (st2 != DL_OK)
                return st2;
            continue;
        }
        combine_t c = {e, a, why, why_cap};
        if (a->src_rank == e->me) {
            /* A message to itself is a local combine. */
            dl_status_t st2 = a->count > 0 ? apply(e, a, a->combine, NULL) : DL_OK;
            if (st2 != DL_OK)
                return st2;
            continue;
        }
        dl_status_t st2 = dl__link_try_recv(e->link, e->world_ranks[a->src_rank], e->ctx, e->tag,
                                            combine, &c, NULL);
        if (st2 != DL_OK) {
            e->waiting_for = a->src_rank;
            return st2;
        }
    }
    return DL_OK;
}

static dl_status_t run_locals(dl_exec_t *e, const dl_exec_plan_step_t *ps)
{
    for (size_t i = 0; i < ps->n_locals; i++) {
        const dl_action_t *a = planned(e, ps, ps->n_sends + ps->n_recvs + i);
        dl_status_t rc = DL_OK;
        switch (a->kind) {
        case DL_ACT_COPY:
            rc = apply(e, a, DL_COMBINE_COPY, NULL);
            break;
        case DL_ACT_REDUCE:
            rc = apply(e, a, DL_COMBINE_REDUCE, NULL);
            break;
        case DL_ACT_SCALE:
            for (size_t at = 0, nbytes = a->count * e->esz; at < nbytes && rc == DL_OK;) {
                size_t len = nbytes - at;
                uint8_t *dst = piece(e, a->dst, at, &len);
                rc = dl_op_scale(e->dtype, dst, len / e->esz, e->s->args.nranks);
                at += len;
            }
            break;
        case DL_ACT_MSG:
            break;
        }
        if (rc != DL_OK)
            return rc;
    }
    return DL_OK;
}

static bool sends_done(dl_exec_t *e)
{
    while (e->nsends > 0) {
        if (!dl__link_send_done(e->link, &e->sends[e->nsends - 1])) {
            e->waiting_for = e->send_peers[e->nsends - 1]; /* named in a timeout */
            return false;
        }
        e->nsends--;
    }
    return true;
}

double dl__exec_paused_s;

/* The coarse clock (a few ms, read in a few ns): the paused time only moves
 * deadlines of seconds, and a precise clock read around every step would
 * cost a small collective a fifth of its time. Short hooks add a tick now
 * and then, on average their true length. */
static double coarse_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int dl__exec_run_hook(dl_step_hook_t hook, void *arg, bool quick, const dl_step_info_t *info)
{
    if (quick)
        return hook(arg, info);
    double t0 = coarse_s();
    int rc = hook(arg, info);
    dl__exec_paused_s += coarse_s() - t0;
    return rc;
}

/* Non-zero: the hook gives the step up, and why holds its reason (or
 * "interrupted before/after step N"). */
static int call_hook(dl_exec_t *e, bool done, char *why, size_t why_cap)
{
    e->info.step = e->step;
    e->info.done = done;
    e->info.why = why;
    e->info.why_cap = why_cap;
    why[0] = '\0';
    int rc = dl__exec_run_hook(e->hook, e->hook_arg, e->hook_quick, &e->info);
    if (rc != 0 && why[0] == '\0')
        snprintf(why, why_cap, "interrupted %s step %zu", done ? "after" : "before", e->step + 1);
    return rc;
}

dl_status_t dl__exec_progress(dl_exec_t *e, char *why, size_t why_cap)
{
    const dl_sched_t *s = e->s;
    while (e->step < s->n_steps) {
        const dl_exec_plan_step_t *ps = &e->plan->steps[e->step];
        dl_status_t rc;
        switch (e->stage) {
        case DL__EXEC_BEGIN:
            if (!e->hook_ran) { /* a full channel brings us back here: once a step */
                if (e->board != NULL)
                    dl__step_board_note(e->board, (int)s->args.coll, (int)e->step + 1,
                                        (int)s->n_steps, s->steps[e->step].phase);
                if (e->hook != NULL && call_hook(e, false, why, why_cap) != 0)
                    return DL_ERR_ABORTED;
                e->hook_ran = true;
            }
            if ((rc = post_sends(e, ps)) != DL_OK) {
                if (rc == DL_ERR_UNSUPPORTED)
                    snprintf(why, why_cap,
                             "%s writes back into its peers over TCP; it needs "
                             "shared memory",
                             s->algo != NULL ? s->algo : "this schedule");
                return rc;
            }
            e->stage = DL__EXEC_RECV;
            e->next = 0;
            e->fused = step_fuses(e, ps);
            /* fall through */
        case DL__EXEC_RECV:
            if ((rc = recv_all(e, ps, why, why_cap)) != DL_OK)
                return rc;
            e->stage = DL__EXEC_LOCAL;
            /* fall through */
        case DL__EXEC_LOCAL:
            /* A fused step's only local action, an avg's scale, is part of its pass. */
            if (!e->fused && (rc = run_locals(e, ps)) != DL_OK) {
                snprintf(why, why_cap, "local action failed: %s", dl_strerror(rc));
                return rc;
            }
            e->stage = DL__EXEC_BACK;
            /* fall through */
        case DL__EXEC_BACK:
            if ((rc = write_back(e, ps)) != DL_OK) {
                snprintf(why, why_cap, "write-back failed: %s", dl_strerror(rc));
                return rc;
            }
            e->stage = DL__EXEC_SENDS;
            /* fall through */
        case DL__EXEC_SENDS:
            if (!sends_done(e))
                return DL_ERR_AGAIN;
            e->waiting_for = -1;
            if (e->hook != NULL && !e->hook_quick && call_hook(e, true, why, why_cap) != 0)
                return DL_ERR_ABORTED;
            e->step++;
            e->hook_ran = false;
            e->stage = DL__EXEC_BEGIN;
            e->next = 0;
            break;
        }
    }
    e->stage = DL__EXEC_DONE;
    return DL_OK;
}

void dl__exec_where(const dl_exec_t *e, char *buf, size_t cap)
{
    const dl_sched_t *s = e->s;
    if (e->step >= s->n_steps) {
        snprintf(buf, cap, "after the last step");
        return;
    }
    int n =
        snprintf(buf, cap, "step %zu/%zu (%s)", e->step + 1, s->n_steps, s->steps[e->step].phase);
    if (e->waiting_for >= 0 && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ", waiting for rank %d", e->waiting_for);
}

dl_status_t dl_step_info_read(const dl_step_info_t *info, dl_buf_t b, size_t n, void *dst)
{
    if ((unsigned)b >= DL_BUF__COUNT)
        return DL_ERR_INVALID;
    size_t nbytes = n * info->esz;
    const dl_segs_t *sg = info->segs != NULL ? &info->segs[b] : NULL;
    if (sg == NULL || sg->ptrs == NULL) {
        if (info->bufs[b] == NULL)
            return nbytes == 0 ? DL_OK : DL_ERR_INVALID;
        memcpy(dst, info->bufs[b], nbytes);
        return DL_OK;
    }
    if (nbytes > sg->seg_bytes * (size_t)sg->n)
        return DL_ERR_INVALID;
    for (size_t at = 0; at < nbytes;) {
        size_t i = at / sg->seg_bytes, len = sg->seg_bytes;
        if (len > nbytes - at)
            len = nbytes - at;
        memcpy((uint8_t *)dst + at, sg->ptrs[i], len);
        at += len;
    }
    return DL_OK;
}
