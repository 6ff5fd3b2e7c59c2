/* Step mode's records (lab/session/stepper.c), fed the step events that
 * ranks send for ring all_reduce on 3 ranks, without ranks: what each record
 * holds (step, messages, buffers, changed elements), its text, `continue`,
 * `back` and `forward`, and events that do not make sense. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/sched.h"
#include "distlab/stepdesc.h"
#include "lab/session/stepper.h"

#define NP    3
#define COUNT 7 /* chunks [0:3], [3:5], [5:7] */

/* Three ranks running ring all_reduce on int64 vectors, rank r's element i
 * starting as 10 r + i + 1, step by step as the schedule says. */
typedef struct {
    lab_stepper_t st;
    dl_sched_t *s;
    int64_t vals[NP][COUNT];
    int64_t before[NP][COUNT]; /* the values before the last step */
} world_t;

static void world_init(world_t *w)
{
    memset(w, 0, sizeof(*w));
    assert_int_equal(lab_stepper_init(&w->st, NP), DL_OK);
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = NP, .count = COUNT, .op = DL_OP_SUM};
    assert_int_equal(dl_sched_build("ring", &a, 8, &w->s), DL_OK);
    assert_int_equal(w->s->n_steps, 4);
    for (int r = 0; r < NP; r++)
        for (int i = 0; i < COUNT; i++)
            w->vals[r][i] = 10 * r + i + 1;
}

static void world_fini(world_t *w)
{
    lab_stepper_fini(&w->st);
    dl_sched_free(w->s);
}

/* The ranks run step k (0-based): every message reduces or copies IN. */
static void world_run(world_t *w, size_t k)
{
    dl_step_desc_t d;
    assert_int_equal(dl_step_describe(w->s, k, 8, NULL, &d), DL_OK);
    memcpy(w->before, w->vals, sizeof(w->vals));
    for (size_t m = 0; m < d.n_msgs; m++) {
        const dl_msg_desc_t *msg = &d.msgs[m];
        for (size_t i = 0; i < msg->src.count; i++) {
            int64_t v = w->before[msg->src_rank][msg->src.first + i];
            if (msg->kind == DL_MSG_REDUCE)
                v += w->before[msg->dst_rank][msg->acc.first + i];
            w->vals[msg->dst_rank][msg->dst.first + i] = v;
        }
    }
    dl_step_desc_free(&d);
}

/* A step event of rank r as lab/rank/rank_hooks.c sends it: before step
 * `step` (1-based) or after it (done), with the rank's buffer before the
 * first step and after every step, and the description from rank 0. */
static lab_step_event_t fold(world_t *w, int r, int step, bool done, bool pause,
                             const lab_step_rec_t **rec_p)
{
    const dl_sched_t *s = w->s;
    json_t *ev = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:b, s:b, s:i, s:[iii]}", "type", "step",
                           "coll", "all_reduce", "algo", "ring", "step", step, "steps",
                           (int)s->n_steps, "phase", s->steps[step - 1].phase, "done", done,
                           "pause", pause && !done, "group_rank", r, "group", 0, 1, 2);
    assert_non_null(ev);
    dl_frame_t f = {ev, NULL, 0};
    if (!done && r == 0) {
        dl_step_desc_t d;
        assert_int_equal(dl_step_describe(s, (size_t)step - 1, 8, NULL, &d), DL_OK);
        json_object_set_new(ev, "desc", dl_step_desc_to_json(&d));
        dl_step_desc_free(&d);
    }
    if (done || step == 1) {
        json_object_set_new(ev, "dtype", json_string("int64"));
        json_object_set_new(ev, "shape", json_pack("[i]", COUNT));
        json_object_set_new(ev, "buf", json_string("in"));
        f.blob = malloc(sizeof(w->vals[r]));
        assert_non_null(f.blob);
        memcpy(f.blob, w->vals[r], sizeof(w->vals[r]));
        f.blob_len = sizeof(w->vals[r]);
    }
    lab_step_event_t what = lab_stepper_fold(&w->st, r, &f, rec_p);
    dl_frame_clear(&f);
    return what;
}

/* Every rank begins step `step`; the last one's event says what happened. */
static lab_step_event_t begin_all(world_t *w, int step, bool pause, const lab_step_rec_t **rec_p)
{
    lab_step_event_t what = LAB_STEP_NOTHING;
    for (int r = 0; r < NP; r++) {
        what = fold(w, r, step, false, pause, rec_p);
        if (r < NP - 1) {
            assert_int_equal(what, LAB_STEP_NOTHING);
            assert_null(*rec_p);
        }
    }
    return what;
}

static lab_step_event_t end_all(world_t *w, int step, const lab_step_rec_t **rec_p)
{
    world_run(w, (size_t)step - 1);
    lab_step_event_t what = LAB_STEP_NOTHING;
    for (int r = 0; r < NP; r++) {
        what = fold(w, r, step, true, false, rec_p);
        if (r < NP - 1) {
            assert_int_equal(what, LAB_STEP_NOTHING);
            assert_null(*rec_p);
        }
    }
    return what;
}

/* What a record of step k must hold, after the world ran it. */
static void expect_rec(const world_t *w, const lab_step_rec_t *rec, int k)
{
    assert_non_null(rec);
    assert_int_equal(rec->k, k);
    assert_int_equal(rec->n, 4);
    assert_string_equal(rec->coll, "all_reduce");
    assert_string_equal(rec->algo, "ring");
    assert_int_equal(rec->np, NP);
    assert_int_equal(rec->ngroup, NP);
    if (k == 0) {
        assert_int_equal(rec->desc.n_msgs, 0);
    } else {
        assert_string_equal(rec->desc.phase, k <= 2 ? "reduce-scatter" : "all-gather");
        assert_int_equal(rec->desc.k, k);
        assert_int_equal(rec->desc.n, 4);
        assert_int_equal(rec->desc.n_msgs, NP);
        for (int r = 0; r < NP; r++) {
            const dl_msg_desc_t *m = &rec->desc.msgs[r];
            assert_int_equal(m->kind, k <= 2 ? DL_MSG_REDUCE : DL_MSG_COPY);
            assert_int_equal(m->src_rank, r);
            assert_int_equal(m->dst_rank, (r + 1) % NP);
        }
    }
    for (int r = 0; r < NP; r++) {
        assert_int_equal(rec->group[r], r);
        assert_non_null(rec->bufs[r]);
        assert_non_null(rec->changed[r]);
        assert_int_equal(rec->lens[r], COUNT);
        assert_int_equal(rec->bufs[r]->numel, COUNT);
        assert_memory_equal(rec->bufs[r]->data, w->vals[r], sizeof(w->vals[r]));
        for (int i = 0; i < COUNT; i++)
            assert_int_equal(rec->changed[r][i], k > 0 && w->vals[r][i] != w->before[r][i]);
    }
}

static const char step1_text[] = "step 1/4  reduce-scatter\n"
                                 "  r0 -> r1  chunk 0  reduce  24 B  in[0:3] -> in[0:3]\n"
                                 "  r1 -> r2  chunk 1  reduce  16 B  in[3:5] -> in[3:5]\n"
                                 "  r2 -> r0  chunk 2  reduce  16 B  in[5:7] -> in[5:7]\n"
                                 "  rank 0   tensor([ 1,  2,  3,  4,  5, 32, 34])\n"
                                 "                                       ^^  ^^\n"
                                 "  rank 1   tensor([12, 14, 16, 14, 15, 16, 17])\n"
                                 "                   ^^  ^^  ^^\n"
                                 "  rank 2   tensor([21, 22, 23, 38, 40, 26, 27])\n"
                                 "                               ^^  ^^";

static void expect_text(const lab_step_rec_t *rec, const char *want)
{
    char *text = lab_step_render(rec);
    assert_non_null(text);
    if (strcmp(text, want) != 0) {
        print_error("rendered:\n%s\n", text);
        fail_msg("the record's text differs");
    }
    free(text);
}

/* `next` through every step: a record before step 1 and after each. */
static void test_step_records(void **state)
{
    (void)state;
    world_t w;
    world_init(&w);
    const lab_step_rec_t *rec = NULL;

    /* The state before step 1 comes with the pause before it. */
    assert_int_equal(begin_all(&w, 1, true, &rec), LAB_STEP_PAUSED);
    expect_rec(&w, rec, 0);
    assert_true(lab_stepper_paused(&w.st));
    assert_int_equal(w.st.cur, 1);
    expect_text(rec, "all_reduce with ring: 4 steps; before step 1 (`next` runs a step, "
                     "`continue` the rest)\n"
                     "  rank 0   tensor([1, 2, 3, 4, 5, 6, 7])\n"
                     "  rank 1   tensor([11, 12, 13, 14, 15, 16, 17])\n"
                     "  rank 2   tensor([21, 22, 23, 24, 25, 26, 27])");

    for (int step = 1; step <= 4; step++) {
        if (step > 1) {
            assert_int_equal(begin_all(&w, step, true, &rec), LAB_STEP_PAUSED);
            assert_null(rec);
        }
        lab_stepper_go(&w.st, false);
        assert_false(lab_stepper_paused(&w.st));
        assert_int_equal(end_all(&w, step, &rec), LAB_STEP_RAN);
        expect_rec(&w, rec, step);
        assert_int_equal(rec->ran_from, 0);
        assert_int_equal(lab_stepper_nrecs(&w.st), (size_t)step + 1);
        assert_ptr_equal(lab_stepper_rec(&w.st, (size_t)step), rec);
        if (step == 1) {
            /* Chunk 0 went to rank 1, chunk 1 to rank 2, chunk 2 to rank 0. */
            static const bool want[NP][COUNT] = {
                {0, 0, 0, 0, 0, 1, 1}, {1, 1, 1, 0, 0, 0, 0}, {0, 0, 0, 1, 1, 0, 0}};
            for (int r = 0; r < NP; r++)
                assert_memory_equal(rec->changed[r], want[r], sizeof(want[r]));
            expect_text(rec, step1_text);
        }
    }
    assert_false(w.st.active);
    for (int r = 0; r < NP; r++)
        for (int i = 0; i < COUNT; i++)
            assert_int_equal(w.vals[r][i], 3 * i + 33);

    /* Every record stays, in order, for back and forward. */
    assert_int_equal(lab_stepper_nrecs(&w.st), 5);
    assert_null(lab_stepper_rec(&w.st, 5));
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(lab_stepper_rec(&w.st, i)->k, (int)i);
    const char *why = NULL;
    assert_int_equal(lab_stepper_viewed(&w.st), 4);
    assert_null(lab_stepper_forward(&w.st, &why));
    assert_string_equal(why, "at the last recorded step");
    for (int k = 3; k >= 0; k--)
        assert_int_equal(lab_stepper_back(&w.st, &why)->k, k);
    assert_null(lab_stepper_back(&w.st, &why));
    assert_string_equal(why, "already at the state before the first step");
    rec = lab_stepper_forward(&w.st, &why);
    assert_int_equal(rec->k, 1);
    assert_int_equal(lab_stepper_viewed(&w.st), 1);
    expect_text(rec, step1_text);
    world_fini(&w);
}

/* `continue` after step 1: the rest is recorded, only the end is shown. */
static void test_continue(void **state)
{
    (void)state;
    world_t w;
    world_init(&w);
    const lab_step_rec_t *rec = NULL;
    assert_int_equal(begin_all(&w, 1, true, &rec), LAB_STEP_PAUSED);
    lab_stepper_go(&w.st, false);
    assert_int_equal(end_all(&w, 1, &rec), LAB_STEP_RAN);
    assert_int_equal(begin_all(&w, 2, true, &rec), LAB_STEP_PAUSED);
    lab_stepper_go(&w.st, true);
    /* The ranks run freely: no pause, and nothing shown until the end. */
    assert_int_equal(end_all(&w, 2, &rec), LAB_STEP_RAN);
    assert_null(rec);
    assert_int_equal(begin_all(&w, 3, false, &rec), LAB_STEP_NOTHING);
    assert_int_equal(end_all(&w, 3, &rec), LAB_STEP_RAN);
    assert_null(rec);
    assert_int_equal(begin_all(&w, 4, false, &rec), LAB_STEP_NOTHING);
    assert_int_equal(end_all(&w, 4, &rec), LAB_STEP_RAN);
    expect_rec(&w, rec, 4);
    assert_int_equal(rec->ran_from, 2);
    char *text = lab_step_render(rec);
    assert_non_null(text);
    assert_non_null(strstr(text, "steps 2-4 ran (`back` shows each)\nstep 4/4  all-gather\n"
                                 "  r0 -> r1  chunk 0  copy  24 B  in[0:3] -> in[0:3]\n"));
    assert_ptr_equal(text, strstr(text, "steps 2-4 ran"));
    free(text);

    /* Steps 2 and 3 were recorded too, without the note. */
    assert_int_equal(lab_stepper_nrecs(&w.st), 5);
    const char *why = NULL;
    rec = lab_stepper_back(&w.st, &why);
    assert_int_equal(rec->k, 3);
    assert_int_equal(rec->ran_from, 0);
    assert_int_equal(rec->desc.n_msgs, NP);

    /* A new collective forgets the records of the last. */
    world_fini(&w);
    world_init(&w);
    assert_int_equal(begin_all(&w, 1, true, &rec), LAB_STEP_PAUSED);
    assert_int_equal(lab_stepper_nrecs(&w.st), 1);
    world_fini(&w);
}

/* A description that does not parse is dropped (the phase still shows);
 * a rank outside the group has no buffer in the record. */
static void test_bad_events(void **state)
{
    (void)state;
    lab_stepper_t st;
    assert_int_equal(lab_stepper_init(&st, 4), DL_OK);
    const lab_step_rec_t *rec = NULL;
    int64_t v[2] = {1, 2};
    for (int pass = 0; pass < 2; pass++) {
        bool done = pass == 1;
        for (int i = 0; i < 2; i++) {
            int r = i == 0 ? 1 : 3;
            json_t *ev = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:b, s:b, s:[ii], s:s, "
                                   "s:[i], s:s}",
                                   "type", "step", "coll", "broadcast", "algo", "tree", "step", 1,
                                   "steps", 1, "phase", "fan-out", "done", done, "pause", !done,
                                   "group", 1, 3, "dtype", "int64", "shape", 2, "buf", "in");
            if (!done && i == 0)
                json_object_set_new(ev, "desc",
                                    json_pack("{s:s, s:i, s:i, s:[{s:s}]}", "phase", "fan-out", "k",
                                              1, "n", 1, "msgs", "kind", "warp"));
            dl_frame_t f = {ev, malloc(sizeof(v)), sizeof(v)};
            memcpy(f.blob, v, sizeof(v));
            if (done)
                v[0] = 5;
            lab_step_event_t what = lab_stepper_fold(&st, r, &f, &rec);
            dl_frame_clear(&f);
            if (i == 1)
                assert_int_equal(what, done ? LAB_STEP_RAN : LAB_STEP_PAUSED);
        }
        if (!done) {
            assert_non_null(rec);
            assert_int_equal(rec->k, 0);
            lab_stepper_go(&st, false);
        }
    }
    assert_non_null(rec);
    assert_int_equal(rec->k, 1);
    assert_string_equal(rec->desc.phase, "fan-out");
    assert_int_equal(rec->desc.n_msgs, 0);
    assert_null(rec->bufs[0]);
    assert_null(rec->changed[0]);
    assert_null(rec->bufs[2]);
    assert_non_null(rec->bufs[1]);
    /* Rank 1 sent {1, 2} after the step too, rank 3 {5, 2}. */
    assert_false(rec->changed[1][0]);
    assert_true(rec->changed[3][0]);
    assert_false(rec->changed[3][1]);
    char *text = lab_step_render(rec);
    assert_string_equal(text, "step 1/1  fan-out\n"
                              "  rank 1   tensor([1, 2])\n"
                              "  rank 3   tensor([5, 2])\n"
                              "                   ^");
    free(text);
    lab_stepper_fini(&st);
}

/* rd's two steps on 2 ranks, as one message each way: step 1 reduces the
 * peer's buffer into the scratch buffer, step 2 copies it back. */
static json_t *rd_desc(int k)
{
    dl_msg_desc_t msgs[2];
    for (int r = 0; r < 2; r++) {
        dl_range_t in = {DL_BUF_IN, 0, 2}, tmp = {DL_BUF_TMP, 0, 2};
        msgs[r] = (dl_msg_desc_t){.kind = k == 1 ? DL_MSG_REDUCE : DL_MSG_LOCAL_COPY,
                                  .src_rank = k == 1 ? 1 - r : r,
                                  .dst_rank = r,
                                  .chunk = -1,
                                  .src = k == 1 ? in : tmp,
                                  .dst = k == 1 ? tmp : in,
                                  .acc = k == 1 ? in : (dl_range_t){0},
                                  .bytes = 16};
    }
    dl_step_desc_t d = {.phase = "butterfly", .k = k, .n = 2, .msgs = msgs, .n_msgs = 2};
    return dl_step_desc_to_json(&d);
}

/* A rank's step event with its buffer and its scratch buffer in one blob,
 * as rank_hooks.c sends them. */
static lab_step_event_t fold_tmp(lab_stepper_t *st, int r, int step, bool done, const int64_t in[2],
                                 const int64_t tmp[2], const lab_step_rec_t **rec_p)
{
    json_t *ev = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:b, s:b, s:[ii]}", "type", "step",
                           "coll", "all_reduce", "algo", "rd", "step", step, "steps", 2, "phase",
                           "butterfly", "done", done, "pause", !done, "group", 0, 1);
    dl_frame_t f = {ev, NULL, 0};
    if (!done && r == 0)
        json_object_set_new(ev, "desc", rd_desc(step));
    if (done || step == 1) {
        json_object_set_new(ev, "dtype", json_string("int64"));
        json_object_set_new(ev, "shape", json_pack("[i]", 2));
        json_object_set_new(ev, "buf", json_string("in"));
        json_object_set_new(ev, "tmp_shape", json_pack("[i]", 2));
        json_object_set_new(ev, "tmp_bytes", json_integer(16));
        f.blob = malloc(32);
        assert_non_null(f.blob);
        memcpy(f.blob, in, 16);
        memcpy(f.blob + 16, tmp, 16);
        f.blob_len = 32;
    }
    lab_step_event_t what = lab_stepper_fold(st, r, &f, rec_p);
    dl_frame_clear(&f);
    return what;
}

/* The scratch buffer: recorded per rank with what changed, shown under the
 * rank's buffer once a step has written it; a blob shorter than tmp_bytes
 * is refused. */
static void test_tmp_buffer(void **state)
{
    (void)state;
    lab_stepper_t st;
    assert_int_equal(lab_stepper_init(&st, 2), DL_OK);
    const lab_step_rec_t *rec = NULL;
    int64_t in[2][2] = {{1, 2}, {3, 4}}, tmp[2][2] = {{0, 0}, {0, 0}};
    for (int r = 0; r < 2; r++)
        fold_tmp(&st, r, 1, false, in[r], tmp[r], &rec);
    assert_non_null(rec);
    assert_int_equal(rec->k, 0);
    assert_non_null(rec->tmps[0]);
    assert_false(rec->tmp_written[0]);
    assert_null(lab_step_tmp_text(rec, 0));
    char *text = lab_step_render(rec);
    assert_null(strstr(text, "tmp"));
    free(text);
    lab_stepper_go(&st, false);
    /* Step 1: tmp = in + the peer's in, on both ranks. */
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 2; i++)
            tmp[r][i] = in[0][i] + in[1][i];
    for (int r = 0; r < 2; r++)
        fold_tmp(&st, r, 1, true, in[r], tmp[r], &rec);
    assert_non_null(rec);
    assert_int_equal(rec->k, 1);
    assert_true(rec->tmp_written[1]);
    assert_true(rec->tmp_changed[1][0] && rec->tmp_changed[1][1]);
    assert_false(rec->changed[1][0]);
    text = lab_step_render(rec);
    assert_string_equal(text, "step 1/2  butterfly\n"
                              "  r1 -> r0  reduce  16 B  in[0:2] -> tmp[0:2] (with in[0:2])\n"
                              "  r0 -> r1  reduce  16 B  in[0:2] -> tmp[0:2] (with in[0:2])\n"
                              "  rank 0   tensor([1, 2])\n"
                              "    tmp    tensor([4, 6])\n"
                              "                   ^  ^\n"
                              "  rank 1   tensor([3, 4])\n"
                              "    tmp    tensor([4, 6])\n"
                              "                   ^  ^");
    free(text);
    char *t = lab_step_tmp_text(rec, 0);
    assert_string_equal(t, "tensor([4, 6])");
    free(t);
    /* Step 2 copies it back: tmp still holds data and shows, unchanged. */
    for (int r = 0; r < 2; r++)
        fold_tmp(&st, r, 2, false, in[r], tmp[r], &rec);
    lab_stepper_go(&st, false);
    for (int r = 0; r < 2; r++)
        memcpy(in[r], tmp[r], sizeof(in[r]));
    for (int r = 0; r < 2; r++)
        fold_tmp(&st, r, 2, true, in[r], tmp[r], &rec);
    assert_non_null(rec);
    assert_int_equal(rec->k, 2);
    assert_true(rec->tmp_written[0]);
    assert_false(rec->tmp_changed[0][0]);
    assert_true(rec->changed[0][0]);
    lab_stepper_fini(&st);

    /* tmp_bytes past the blob: the state is dropped, no crash. */
    assert_int_equal(lab_stepper_init(&st, 1), DL_OK);
    json_t *ev =
        json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:b, s:b, s:[i], s:s, s:[i], s:s, "
                  "s:[i], s:i}",
                  "type", "step", "coll", "all_reduce", "algo", "rd", "step", 1, "steps", 1,
                  "phase", "butterfly", "done", false, "pause", true, "group", 0, "dtype", "int64",
                  "shape", 2, "buf", "in", "tmp_shape", 2, "tmp_bytes", 64);
    dl_frame_t f = {ev, calloc(1, 32), 32};
    lab_stepper_fold(&st, 0, &f, &rec);
    dl_frame_clear(&f);
    assert_non_null(rec);
    assert_null(rec->bufs[0]);
    assert_null(rec->tmps[0]);
    lab_stepper_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_records),
        cmocka_unit_test(test_continue),
        cmocka_unit_test(test_bad_events),
        cmocka_unit_test(test_tmp_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
