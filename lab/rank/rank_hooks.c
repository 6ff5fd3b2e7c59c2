/* The hooks a rank runs inside shell statements (see rank.h).
 *
 * The step hook reports every schedule step to the shell (so it knows where
 * a rank was if it dies) and, in step mode, pauses before each step until the
 * shell says "go", sending the step's description (distlab/stepdesc.h) and
 * this rank's buffer before and after so the shell can show what changed.
 *
 * The collective hook sends the collective's fingerprint to the shell and
 * waits for its verdict before any data moves: the shell compares the
 * fingerprints of every rank of the group, so a mismatch is reported rank by
 * rank instead of hanging. */
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "distlab/stepdesc.h"
#include "lab/proto/proto.h"
#include "lab/rank/rank.h"

/* The buffer step mode shows: OUT (the result being built), or IN on a rank
 * whose OUT is empty (a gather's non-root). */
static dl_buf_t shown_buf(const dl_step_info_t *in, size_t *count_p)
{
    size_t n = dl_sched_buf_count(in->s, in->rank, DL_BUF_OUT);
    dl_buf_t b = DL_BUF_OUT;
    if (n == 0) {
        b = DL_BUF_IN;
        n = dl_sched_buf_count(in->s, in->rank, DL_BUF_IN);
    }
    if (in->bufs[b] == NULL && (in->segs == NULL || in->segs[b].ptrs == NULL))
        n = 0;
    *count_p = n;
    return b;
}

/* Buffer b's first n elements as one block: the buffer itself, or a copy
 * of a segmented one (a root's tensor list used in place) in *copy_p, to
 * free. NULL with *copy_p NULL where there is nothing to show. */
static const void *whole_buf(const dl_step_info_t *in, dl_buf_t b, size_t n, void **copy_p)
{
    *copy_p = NULL;
    if (in->segs == NULL || in->segs[b].ptrs == NULL || n == 0)
        return in->bufs[b];
    void *p = malloc(n * in->esz);
    if (p == NULL || dl_step_info_read(in, b, n, p) != DL_OK) {
        free(p);
        return NULL;
    }
    *copy_p = p;
    return p;
}

/* The step's description (distlab/stepdesc.h), with world ranks, for the
 * shell to show; NULL if it cannot be made. */
static json_t *step_desc(const dl_step_info_t *in)
{
    dl_step_desc_t d;
    if (dl_step_describe(in->s, in->step, in->esz, in->world_ranks, &d) != DL_OK)
        return NULL;
    json_t *j = dl_step_desc_to_json(&d);
    dl_step_desc_free(&d);
    return j;
}

/* DISTLAB_FAULT, as the rank begins a step: counted from the start of the
 * job or statement. A stopped rank and a hung one are for liveness tests;
 * the hung one loops in pause() while its beat thread goes on. */
static void apply_fault(lab_rank_t *r)
{
    if (++r->steps_seen != r->fault_step || r->rank != r->fault_rank)
        return;
    if (strcmp(r->fault_action, "stop") == 0)
        raise(SIGSTOP);
    else if (strcmp(r->fault_action, "hang") == 0)
        for (;;)
            pause();
    else
        raise(SIGKILL);
}

static json_t *step_json(const dl_step_info_t *in)
{
    const dl_sched_t *s = in->s;
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:b}", "type", "step", "coll",
                     dl_coll_name(s->args.coll), "algo", s->algo, "step", (json_int_t)in->step + 1,
                     "steps", (json_int_t)s->n_steps, "phase", s->steps[in->step].phase, "done",
                     in->done);
}

/* The steps a benchmark tells the shell about (see below), and the fault. */
static int __attribute__((noinline)) bench_step_told(lab_rank_t *r, const dl_step_info_t *in)
{
    if (lab_rank_emit(r, step_json(in), NULL, 0) != DL_OK)
        return 1;
    apply_fault(r);
    return 0;
}

int lab_rank_bench_step_hook(void *arg, const dl_step_info_t *in)
{
    lab_rank_t *r = arg;
    if (in->done)
        return 0;
    /* The step a fault strikes in is told exactly, as in a run; and so is
     * the first step of the benchmark, so that a rank killed before its
     * first beat is not said to have died before it began. */
    bool first = r->steps_seen == 0;
    bool faulted = r->rank == r->fault_rank && r->steps_seen + 1 == r->fault_step;
    int rc = 0;
    if (first || faulted)
        rc = bench_step_told(r, in);
    else
        r->steps_seen++; /* apply_fault's count, on a step it does not strike */
    /* Past its first step, a rank that no fault strikes needs the hook no
     * more: the beats learn where it is from the step board, and a call a
     * step would cost small collectives a tenth of their time. The
     * collective running keeps it to its end. */
    if (r->rank != r->fault_rank)
        lab_rank_set_step_hook(r, NULL, true);
    return rc;
}

/* The bytes of the elements a print of a buffer of n elements shows (all of
 * them, or torch's first and last three when it is long: *cut_p), so that
 * a buffer of any size fits a frame. */
static size_t shown_bytes(const void *data, size_t n, size_t esz, bool *cut_p)
{
    int64_t shape[1] = {(int64_t)n}, shown_len;
    size_t m = data != NULL && n > 0 ? dl_tensor_shown_shape(1, shape, &shown_len) : n;
    *cut_p = m < n;
    return (m < n ? m : n) * esz;
}

/* Copies those elements of a buffer of n elements to dst. */
static dl_status_t copy_shown(const lab_rank_t *r, const void *data, size_t n, void *dst)
{
    if (n == 0 || data == NULL)
        return DL_OK;
    dl_tensor_t view = {
        .dtype = r->cur_dtype, .ndim = 1, .shape = {(int64_t)n}, .numel = n, .data = (void *)data};
    return dl_tensor_copy_shown(&view, dst);
}

int lab_rank_step_hook(void *arg, const dl_step_info_t *in)
{
    lab_rank_t *r = arg;
    const dl_sched_t *s = in->s;
    bool stepping = r->step_mode && r->cur_id > 0;
    if (!in->done && in->step == 0)
        r->free_run = false; /* a new collective */
    json_t *j = step_json(in);
    const void *blob = NULL;
    void *shown = NULL, *main_copy = NULL;
    size_t len = 0;
    if (stepping) {
        bool pause = !in->done && !r->free_run;
        json_object_set_new(j, "pause", json_boolean(pause));
        json_object_set_new(j, "group_rank", json_integer(in->rank));
        json_t *group = json_array();
        for (int i = 0; i < s->args.nranks; i++)
            json_array_append_new(group, json_integer(in->world_ranks[i]));
        json_object_set_new(j, "group", group);
        /* What the schedule was built for, so that a view can build it
         * again (chunks, cost, symbolic contents) without guessing. */
        json_object_set_new(j, "count", json_integer((json_int_t)s->args.count));
        json_object_set_new(j, "root", json_integer(s->args.root));
        json_object_set_new(j, "op", json_string(dl_op_name(s->args.op)));
        if (!in->done && in->rank == 0)
            json_object_set_new(j, "desc", step_desc(in));
        /* The state before the first step, and after every step. */
        if (in->done || in->step == 0) {
            size_t n = 0;
            dl_buf_t b = shown_buf(in, &n);
            const void *main_buf = whole_buf(in, b, n, &main_copy);
            if (main_buf == NULL && n > 0) {
                json_decref(j);
                return 1;
            }
            json_object_set_new(j, "dtype", json_string(dl_dtype_name(r->cur_dtype)));
            json_object_set_new(j, "shape", json_pack("[I]", (json_int_t)n));
            json_object_set_new(j, "buf", json_string(b == DL_BUF_OUT ? "out" : "in"));
            size_t n_tmp = dl_sched_buf_count(s, in->rank, DL_BUF_TMP);
            if (in->bufs[DL_BUF_TMP] == NULL)
                n_tmp = 0;
            bool main_cut, tmp_cut;
            size_t main_len = shown_bytes(main_buf, n, in->esz, &main_cut);
            size_t tmp_len = shown_bytes(in->bufs[DL_BUF_TMP], n_tmp, in->esz, &tmp_cut);
            /* Without scratch space and a short buffer: the buffer itself. */
            if (n_tmp == 0 && !main_cut) {
                blob = main_buf;
                len = n * in->esz;
            } else {
                /* The buffer's shown elements, then the scratch buffer's
                 * (tmp_bytes of them), each bounded as a print shows it. */
                len = main_len + tmp_len;
                shown = calloc(len ? len : 1, 1);
                if (shown == NULL || copy_shown(r, main_buf, n, shown) != DL_OK ||
                    copy_shown(r, in->bufs[DL_BUF_TMP], n_tmp, (char *)shown + main_len) != DL_OK) {
                    free(shown);
                    free(main_copy);
                    json_decref(j);
                    return 1;
                }
                blob = shown;
                if (main_cut)
                    json_object_set_new(j, "shown", json_true());
                if (n_tmp > 0) {
                    json_object_set_new(j, "tmp_shape", json_pack("[I]", (json_int_t)n_tmp));
                    json_object_set_new(j, "tmp_bytes", json_integer((json_int_t)tmp_len));
                    if (tmp_cut)
                        json_object_set_new(j, "tmp_shown", json_true());
                }
            }
        }
    }
    dl_status_t emitted = lab_rank_emit(r, j, blob, len);
    free(shown);
    free(main_copy);
    if (emitted != DL_OK)
        return 1;
    /* After the event, so the controller knows the step it died in. */
    if (!in->done)
        apply_fault(r);
    if (!stepping || in->done || r->free_run)
        return 0;
    /* A person decides when the step runs: no timeout here. If the shell
     * goes away the socket closes and the wait ends. */
    dl_frame_t f = {0};
    dl_status_t st = lab_rank_await(r, "go", -1, &f);
    if (st != DL_OK) {
        if (st == DL_ERR_ABORTED && in->why != NULL)
            snprintf(in->why, in->why_cap, "gave up before step %zu: %s", in->step + 1,
                     lab_json_str(f.json, "why", "interrupted"));
        dl_frame_clear(&f);
        return 1;
    }
    if (json_is_true(json_object_get(f.json, "run")))
        r->free_run = true;
    if (json_is_false(json_object_get(f.json, "step")))
        r->step_mode = false;
    dl_frame_clear(&f);
    return 0;
}

/* The number of the call written that this collective is (1 for the
 * group's first), the seq a report would otherwise give: an object
 * collective's parts are one call. */
static uint64_t call_number(lab_rank_t *r, const dl_coll_info_t *in)
{
    int i = 0;
    while (i < r->n_parts_past && r->parts_past[i].ctx != in->ctx)
        i++;
    if (r->coll_as != NULL && r->coll_as_parts++ > 0) {
        if (i == r->n_parts_past && i < LAB_RANK_GROUPS_NUMBERED)
            r->parts_past[r->n_parts_past++] = (lab_rank_parts_t){in->ctx, 0};
        if (i < r->n_parts_past)
            r->parts_past[i].extra++;
    }
    uint64_t extra = i < r->n_parts_past ? r->parts_past[i].extra : 0;
    return in->seq + 1 - extra;
}

int lab_rank_coll_hook(void *arg, const dl_coll_info_t *in, char *why, size_t why_cap)
{
    lab_rank_t *r = arg;
    r->cur_dtype = in->dtype;
    uint64_t call = call_number(r, in);
    if (r->cur_id == 0 || r->no_check)
        return 0; /* the shell checks no fingerprints */
    json_t *group = json_array();
    for (int i = 0; i < in->nranks; i++)
        json_array_append_new(group, json_integer(in->world_ranks[i]));
    json_t *j = json_pack("{s:s, s:I, s:I, s:o, s:s, s:s, s:I, s:i, s:b}", "type", "coll", "ctx",
                          (json_int_t)in->ctx, "seq", (json_int_t)in->seq, "group", group, "coll",
                          r->coll_as != NULL ? r->coll_as : dl_coll_name(in->coll), "dtype",
                          dl_dtype_name(in->dtype), "count", (json_int_t)in->count, "root",
                          in->root, "async", in->async);
    if (dl_coll_has_op(in->coll))
        json_object_set_new(j, "op", json_string(dl_op_name(in->op)));
    json_object_set_new(j, "call", json_integer((json_int_t)call));
    if (in->split) {
        /* what this rank sends to each rank of the group and expects from
         * each, for the shell to pair them before anything moves */
        json_t *send = json_array(), *recv = json_array();
        for (int i = 0; i < in->nranks; i++) {
            json_array_append_new(
                send,
                json_integer(
                    (json_int_t)in->splits[(size_t)in->rank * (size_t)in->nranks + (size_t)i]));
            json_array_append_new(
                recv,
                json_integer(
                    (json_int_t)in->splits[(size_t)i * (size_t)in->nranks + (size_t)in->rank]));
        }
        json_object_set_new(j, "split", json_true());
        json_object_set_new(j, "send", send);
        json_object_set_new(j, "recv", recv);
    }
    if (lab_rank_emit(r, j, NULL, 0) != DL_OK) {
        snprintf(why, why_cap, "lost the connection to the shell");
        return 1;
    }
    /* The shell answers once every rank of the group has called a
     * collective, or as soon as it knows one never will. */
    dl_frame_t f = {0};
    int timeout_ms = (int)(r->timeout_s * 1e3) + 5000;
    dl_status_t st = lab_rank_await(r, "verdict", timeout_ms, &f);
    if (st == DL_ERR_ABORTED) {
        /* "all_reduce interrupted (Ctrl-C)", or "all_reduce gave up: rank 2
         * (pid 9104) was killed by signal 9 (SIGKILL)" */
        const char *cause = lab_json_str(f.json, "why", "interrupted (Ctrl-C)");
        snprintf(why, why_cap, "%s %s%s", dl_coll_name(in->coll),
                 strncmp(cause, "interrupted", 11) == 0 ? "" : "gave up: ", cause);
        dl_frame_clear(&f);
        return 1;
    }
    if (st != DL_OK) {
        snprintf(why, why_cap, "%s: no answer from the shell's fingerprint check: %s",
                 dl_coll_name(in->coll), dl_strerror(st));
        return 1;
    }
    int rc = 0;
    if (!json_is_true(json_object_get(f.json, "ok"))) {
        snprintf(why, why_cap, "%s", lab_json_str(f.json, "message", "collective refused"));
        r->error_quiet = json_is_true(json_object_get(f.json, "quiet"));
        rc = 1;
    }
    dl_frame_clear(&f);
    return rc;
}
