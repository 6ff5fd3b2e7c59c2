/* A schedule step as data (distlab/stepdesc.h): describing ring all_reduce
 * on 3 ranks, the JSON round trip, JSON from the network that must be
 * refused, and the one line a message is written as. */
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

/* ring all_reduce, np 3, 7 float32 elements: chunks [0:3], [3:5], [5:7]. */
static dl_sched_t *ring3(dl_op_t op)
{
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 3, .count = 7, .op = op};
    dl_sched_t *s = NULL;
    assert_int_equal(dl_sched_build("ring", &a, 4, &s), DL_OK);
    assert_int_equal(s->n_steps, 4);
    return s;
}

static void expect_range(dl_range_t r, dl_buf_t buf, size_t first, size_t count)
{
    assert_int_equal(r.buf, buf);
    assert_int_equal(r.first, first);
    assert_int_equal(r.count, count);
}

static void expect_msg(const dl_msg_desc_t *m, dl_msg_kind_t kind, int src_rank, int dst_rank,
                       int chunk, size_t first, size_t count)
{
    assert_int_equal(m->kind, kind);
    assert_int_equal(m->src_rank, src_rank);
    assert_int_equal(m->dst_rank, dst_rank);
    assert_int_equal(m->chunk, chunk);
    expect_range(m->src, DL_BUF_IN, first, count);
    expect_range(m->dst, DL_BUF_IN, first, count);
    if (kind == DL_MSG_REDUCE)
        expect_range(m->acc, DL_BUF_IN, first, count); /* in place */
    else
        expect_range(m->acc, DL_BUF_IN, 0, 0);
    assert_int_equal(m->bytes, count * 4);
    assert_int_equal(m->divisor, 0);
}

/* Where chunk c of 7 elements on 3 ranks starts, and its length. */
static const size_t chunk_first[3] = {0, 3, 5}, chunk_len[3] = {3, 2, 2};

static void test_describe_ring(void **state)
{
    (void)state;
    dl_sched_t *s = ring3(DL_OP_SUM);
    /* Rank r sends chunk (r - k) mod 3 in reduce-scatter step k, chunk
     * (r + 1 - k) mod 3 in all-gather step k, to rank r + 1. */
    static const char *const phases[4] = {"reduce-scatter", "reduce-scatter", "all-gather",
                                          "all-gather"};
    for (size_t k = 0; k < 4; k++) {
        dl_step_desc_t d;
        assert_int_equal(dl_step_describe(s, k, 4, NULL, &d), DL_OK);
        assert_string_equal(d.phase, phases[k]);
        assert_int_equal(d.k, (int)k + 1);
        assert_int_equal(d.n, 4);
        assert_int_equal(d.n_msgs, 3);
        for (int r = 0; r < 3; r++) {
            bool lap1 = k < 2;
            int c = lap1 ? ((r - (int)k) % 3 + 3) % 3 : ((r + 1 - ((int)k - 2)) % 3 + 3) % 3;
            expect_msg(&d.msgs[r], lap1 ? DL_MSG_REDUCE : DL_MSG_COPY, r, (r + 1) % 3, c,
                       chunk_first[c], chunk_len[c]);
        }
        dl_step_desc_free(&d);
        assert_null(d.phase);
        assert_null(d.msgs);
        assert_int_equal(d.n_msgs, 0);
    }

    /* World ranks through a map. */
    static const int world[3] = {5, 2, 7};
    dl_step_desc_t d;
    assert_int_equal(dl_step_describe(s, 0, 4, world, &d), DL_OK);
    expect_msg(&d.msgs[0], DL_MSG_REDUCE, 5, 2, 0, 0, 3);
    expect_msg(&d.msgs[1], DL_MSG_REDUCE, 2, 7, 1, 3, 2);
    expect_msg(&d.msgs[2], DL_MSG_REDUCE, 7, 5, 2, 5, 2);
    dl_step_desc_free(&d);
    dl_step_desc_free(&d); /* a zeroed one is fine */

    /* A step out of range leaves *out alone. */
    dl_step_desc_t untouched = {.k = 42};
    assert_int_equal(dl_step_describe(s, 4, 4, NULL, &untouched), DL_ERR_INVALID);
    assert_int_equal(untouched.k, 42);
    dl_sched_free(s);

    /* avg: each rank scales the chunk it finished, after the step's messages. */
    s = ring3(DL_OP_AVG);
    assert_int_equal(dl_step_describe(s, 1, 4, NULL, &d), DL_OK);
    assert_int_equal(d.n_msgs, 6);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(d.msgs[r].kind, DL_MSG_REDUCE);
        const dl_msg_desc_t *m = &d.msgs[3 + r];
        int c = (r + 1) % 3;
        assert_int_equal(m->kind, DL_MSG_LOCAL_SCALE);
        assert_true(dl_msg_is_local(m->kind));
        assert_int_equal(m->src_rank, r);
        assert_int_equal(m->dst_rank, r);
        assert_int_equal(m->chunk, -1);
        expect_range(m->dst, DL_BUF_IN, chunk_first[c], chunk_len[c]);
        expect_range(m->src, DL_BUF_IN, chunk_first[c], chunk_len[c]);
        assert_int_equal(m->divisor, 3);
        assert_int_equal(m->bytes, chunk_len[c] * 4);
    }
    dl_step_desc_free(&d);
    dl_sched_free(s);
}

/* A local reduce into a third buffer, and a barrier's empty messages. */
static void test_describe_kinds(void **state)
{
    (void)state;
    dl_sched_t *s = NULL;
    /* 300 int64 are past the eager size: the exchange goes into TMP. */
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 3, .count = 300, .op = DL_OP_SUM};
    assert_int_equal(dl_sched_build("rd", &a, 8, &s), DL_OK);
    dl_step_desc_t d;
    assert_int_equal(dl_step_describe(s, 1, 8, NULL, &d), DL_OK);
    assert_int_equal(d.n_msgs, 2);
    assert_int_equal(d.msgs[0].kind, DL_MSG_REDUCE);
    expect_range(d.msgs[0].src, DL_BUF_IN, 0, 300);
    expect_range(d.msgs[0].dst, DL_BUF_TMP, 0, 300);
    expect_range(d.msgs[0].acc, DL_BUF_IN, 0, 300);
    assert_int_equal(d.msgs[0].bytes, 2400);
    assert_false(d.msgs[0].eager);
    dl_step_desc_free(&d);
    assert_int_equal(dl_step_describe(s, 2, 8, NULL, &d), DL_OK);
    assert_int_equal(d.msgs[0].kind, DL_MSG_COPY);
    assert_int_equal(d.msgs[1].kind, DL_MSG_LOCAL_COPY);
    dl_step_desc_free(&d);
    dl_sched_free(s);

    /* 6 travel eagerly: the exchange adds into IN in place, and the
     * unfold sends from IN with no copy beside it. */
    a.count = 6;
    assert_int_equal(dl_sched_build("rd", &a, 8, &s), DL_OK);
    assert_int_equal(dl_step_describe(s, 1, 8, NULL, &d), DL_OK);
    assert_int_equal(d.n_msgs, 2);
    assert_int_equal(d.msgs[0].kind, DL_MSG_REDUCE);
    expect_range(d.msgs[0].src, DL_BUF_IN, 0, 6);
    expect_range(d.msgs[0].dst, DL_BUF_IN, 0, 6);
    expect_range(d.msgs[0].acc, DL_BUF_IN, 0, 6);
    assert_true(d.msgs[0].eager);
    dl_step_desc_free(&d);
    assert_int_equal(dl_step_describe(s, 2, 8, NULL, &d), DL_OK);
    assert_int_equal(d.n_msgs, 1);
    assert_int_equal(d.msgs[0].kind, DL_MSG_COPY);
    assert_false(d.msgs[0].eager);
    dl_step_desc_free(&d);
    dl_sched_free(s);

    a = (dl_coll_args_t){.coll = DL_COLL_BARRIER, .nranks = 3};
    assert_int_equal(dl_sched_build("dissemination", &a, 4, &s), DL_OK);
    assert_int_equal(dl_step_describe(s, 0, 4, NULL, &d), DL_OK);
    assert_int_equal(d.n_msgs, 3);
    assert_int_equal(d.msgs[0].bytes, 0);
    assert_int_equal(d.msgs[0].src.count, 0);
    dl_step_desc_free(&d);
    dl_sched_free(s);
}

/* ----------------------------------------------------------------------
 * JSON
 * ---------------------------------------------------------------------- */

static void expect_same(const dl_step_desc_t *a, const dl_step_desc_t *b)
{
    assert_string_equal(a->phase, b->phase);
    assert_int_equal(a->k, b->k);
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->n_msgs, b->n_msgs);
    /* Field by field: the structs' padding holds whatever malloc gave. */
    for (size_t i = 0; i < a->n_msgs; i++) {
        const dl_msg_desc_t *x = &a->msgs[i], *y = &b->msgs[i];
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->src_rank, y->src_rank);
        assert_int_equal(x->dst_rank, y->dst_rank);
        assert_int_equal(x->chunk, y->chunk);
        const dl_range_t *rx[3] = {&x->src, &x->dst, &x->acc}, *ry[3] = {&y->src, &y->dst, &y->acc};
        for (int k = 0; k < 3; k++) {
            assert_int_equal(rx[k]->buf, ry[k]->buf);
            assert_int_equal(rx[k]->first, ry[k]->first);
            assert_int_equal(rx[k]->count, ry[k]->count);
        }
        assert_int_equal(x->bytes, y->bytes);
        assert_int_equal(x->divisor, y->divisor);
        assert_int_equal(x->eager, y->eager);
        assert_int_equal(x->back, y->back);
    }
}

/* d's JSON has flag set on message msg, and reads back as d (2 ranks). */
static void expect_flag_round_trip(const dl_step_desc_t *d, size_t msg, const char *flag)
{
    json_t *j = dl_step_desc_to_json(d);
    assert_true(
        json_is_true(json_object_get(json_array_get(json_object_get(j, "msgs"), msg), flag)));
    dl_step_desc_t back;
    assert_int_equal(dl_step_desc_from_json(j, 2, &back), DL_OK);
    expect_same(d, &back);
    json_decref(j);
    dl_step_desc_free(&back);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    static const int world[3] = {1, 2, 0};
    dl_sched_t *s = ring3(DL_OP_AVG);
    for (size_t k = 0; k < s->n_steps; k++) {
        dl_step_desc_t d, back;
        assert_int_equal(dl_step_describe(s, k, 4, world, &d), DL_OK);
        json_t *j = dl_step_desc_to_json(&d);
        assert_non_null(j);
        /* Through text, as it travels. */
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        j = json_loads(text, 0, NULL);
        assert_non_null(j);
        free(text);
        assert_int_equal(dl_step_desc_from_json(j, 3, &back), DL_OK);
        expect_same(&d, &back);
        json_decref(j);
        dl_step_desc_free(&d);
        dl_step_desc_free(&back);
    }
    dl_sched_free(s);

    /* An eager message says so, and comes back eager. */
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 2, .count = 2, .op = DL_OP_SUM};
    assert_int_equal(dl_sched_build("rd", &a, 4, &s), DL_OK);
    dl_step_desc_t e;
    assert_int_equal(dl_step_describe(s, 0, 4, NULL, &e), DL_OK);
    assert_true(e.msgs[0].eager);
    expect_flag_round_trip(&e, 0, "eager");
    dl_step_desc_free(&e);
    dl_sched_free(s);

    /* A write-back message says so, and comes back one, in text too. */
    a.count = 8;
    assert_int_equal(dl_sched_build("share", &a, 4, &s), DL_OK);
    assert_int_equal(dl_step_describe(s, 0, 4, NULL, &e), DL_OK);
    assert_int_equal(e.n_msgs, 2);
    assert_true(e.msgs[0].back && e.msgs[1].back);
    assert_false(e.msgs[0].eager);
    char line[256];
    dl_msg_format(&e.msgs[0], NULL, line, sizeof(line));
    /* rank 0 sums gloo's chunk 1 (share.c), the label of the part it carries */
    assert_string_equal(line, "r1 -> r0  chunk 1  reduce  16 B  in[4:8] -> in[4:8]  write-back");
    expect_flag_round_trip(&e, 1, "back");
    dl_step_desc_free(&e);
    dl_sched_free(s);

    /* The fields as documented, of one message. */
    s = ring3(DL_OP_SUM);
    dl_step_desc_t d;
    assert_int_equal(dl_step_describe(s, 0, 4, NULL, &d), DL_OK);
    json_t *j = dl_step_desc_to_json(&d);
    char *text = json_dumps(json_array_get(json_object_get(j, "msgs"), 1), JSON_COMPACT);
    assert_string_equal(text, "{\"kind\":\"reduce\",\"src_rank\":1,\"dst_rank\":2,\"chunk\":1,"
                              "\"src\":{\"buf\":\"in\",\"first\":3,\"count\":2},"
                              "\"dst\":{\"buf\":\"in\",\"first\":3,\"count\":2},\"bytes\":8,"
                              "\"acc\":{\"buf\":\"in\",\"first\":3,\"count\":2}}");
    free(text);
    assert_string_equal(json_string_value(json_object_get(j, "phase")), "reduce-scatter");
    assert_int_equal(json_integer_value(json_object_get(j, "k")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "n")), 4);
    json_decref(j);
    dl_step_desc_free(&d);
    dl_sched_free(s);
}

static const char valid[] =
    "{\"phase\":\"p\",\"k\":1,\"n\":2,\"msgs\":["
    "{\"kind\":\"reduce\",\"src_rank\":0,\"dst_rank\":1,\"chunk\":0,"
    "\"src\":{\"buf\":\"in\",\"first\":0,\"count\":2},\"dst\":{\"buf\":\"tmp\",\"first\":0,"
    "\"count\":2},\"acc\":{\"buf\":\"in\",\"first\":0,\"count\":2},\"bytes\":8},"
    "{\"kind\":\"scale\",\"src_rank\":2,\"dst_rank\":2,\"chunk\":-1,"
    "\"src\":{\"buf\":\"out\",\"first\":4,\"count\":1},\"dst\":{\"buf\":\"out\",\"first\":4,"
    "\"count\":1},\"bytes\":4,\"divisor\":3}]}";

/* from_json on valid with one change, made by edit on the parsed copy. */
static dl_status_t from_edited(void (*edit)(json_t *j, json_t *m0, json_t *m1))
{
    json_t *j = json_loads(valid, 0, NULL);
    assert_non_null(j);
    json_t *msgs = json_object_get(j, "msgs");
    edit(j, json_array_get(msgs, 0), json_array_get(msgs, 1));
    dl_step_desc_t d = {.k = 42};
    dl_status_t st = dl_step_desc_from_json(j, 3, &d);
    if (st == DL_OK)
        dl_step_desc_free(&d);
    else
        assert_int_equal(d.k, 42); /* untouched */
    json_decref(j);
    return st;
}

#define EDIT(name, body)                                                                           \
    static void name(json_t *j, json_t *m0, json_t *m1)                                            \
    {                                                                                              \
        (void)j;                                                                                   \
        (void)m0;                                                                                  \
        (void)m1;                                                                                  \
        body;                                                                                      \
    }

EDIT(e_none, {})
EDIT(e_no_phase, json_object_del(j, "phase"))
EDIT(e_no_k, json_object_del(j, "k"))
EDIT(e_no_n, json_object_del(j, "n"))
EDIT(e_no_msgs, json_object_del(j, "msgs"))
EDIT(e_phase_int, json_object_set_new(j, "phase", json_integer(1)))
EDIT(e_k_zero, json_object_set_new(j, "k", json_integer(0)))
EDIT(e_k_past_n, json_object_set_new(j, "k", json_integer(3)))
EDIT(e_k_real, json_object_set_new(j, "k", json_real(1.0)))
EDIT(e_n_zero, json_object_set_new(j, "n", json_integer(0)))
EDIT(e_n_huge, json_object_set_new(j, "n", json_integer((json_int_t)1 << 40)))
EDIT(e_msgs_object, json_object_set_new(j, "msgs", json_object()))
EDIT(e_msg_string, json_array_append_new(json_object_get(j, "msgs"), json_string("r0 -> r1")))
EDIT(e_no_kind, json_object_del(m0, "kind"))
EDIT(e_kind_unknown, json_object_set_new(m0, "kind", json_string("teleport")))
EDIT(e_kind_int, json_object_set_new(m0, "kind", json_integer(1)))
EDIT(e_src_rank_past, json_object_set_new(m0, "src_rank", json_integer(3)))
EDIT(e_src_rank_negative, json_object_set_new(m0, "src_rank", json_integer(-1)))
EDIT(e_dst_rank_string, json_object_set_new(m0, "dst_rank", json_string("1")))
EDIT(e_dst_rank_huge, json_object_set_new(m0, "dst_rank", json_integer((json_int_t)1 << 33)))
EDIT(e_no_dst_rank, json_object_del(m0, "dst_rank"))
EDIT(e_chunk_below, json_object_set_new(m0, "chunk", json_integer(-2)))
EDIT(e_chunk_null, json_object_set_new(m0, "chunk", json_null()))
EDIT(e_no_src, json_object_del(m0, "src"))
EDIT(e_src_array, json_object_set_new(m0, "src", json_pack("[s,i,i]", "in", 0, 2)))
EDIT(e_buf_unknown, json_object_set_new(json_object_get(m0, "src"), "buf", json_string("gpu")))
EDIT(e_first_negative, json_object_set_new(json_object_get(m0, "dst"), "first", json_integer(-1)))
EDIT(e_count_real, json_object_set_new(json_object_get(m0, "dst"), "count", json_real(2)))
EDIT(e_range_overflow, json_object_set_new(json_object_get(m0, "src"), "first",
                                           json_integer(((json_int_t)1 << 62) - 1)))
EDIT(e_first_huge,
     json_object_set_new(json_object_get(m0, "src"), "first", json_integer(INT64_MAX)))
EDIT(e_counts_differ, json_object_set_new(json_object_get(m0, "dst"), "count", json_integer(3)))
EDIT(e_reduce_no_acc, json_object_del(m0, "acc"))
EDIT(e_acc_count_differs, json_object_set_new(json_object_get(m0, "acc"), "count", json_integer(1)))
EDIT(e_bytes_negative, json_object_set_new(m0, "bytes", json_integer(-8)))
EDIT(e_no_bytes, json_object_del(m0, "bytes"))
EDIT(e_local_two_ranks, json_object_set_new(m1, "dst_rank", json_integer(1)))
EDIT(e_scale_no_divisor, json_object_del(m1, "divisor"))
EDIT(e_scale_divisor_zero, json_object_set_new(m1, "divisor", json_integer(0)))
/* Accepted: keys it does not know, and no acc on a kind without one. */
EDIT(e_extra_key, json_object_set_new(m0, "colour", json_string("red")))
EDIT(e_copy_no_acc, {
    json_object_set_new(m0, "kind", json_string("copy"));
    json_object_del(m0, "acc");
})

#define BAD(e)                                                                                     \
    {                                                                                              \
#e, e                                                                                      \
    }

static void test_json_rejects(void **state)
{
    (void)state;
    assert_int_equal(from_edited(e_none), DL_OK);
    assert_int_equal(from_edited(e_extra_key), DL_OK);
    assert_int_equal(from_edited(e_copy_no_acc), DL_OK);

    static const struct {
        const char *name;
        void (*edit)(json_t *j, json_t *m0, json_t *m1);
    } bad[] = {
        BAD(e_no_phase),
        BAD(e_no_k),
        BAD(e_no_n),
        BAD(e_no_msgs),
        BAD(e_phase_int),
        BAD(e_k_zero),
        BAD(e_k_past_n),
        BAD(e_k_real),
        BAD(e_n_zero),
        BAD(e_n_huge),
        BAD(e_msgs_object),
        BAD(e_msg_string),
        BAD(e_no_kind),
        BAD(e_kind_unknown),
        BAD(e_kind_int),
        BAD(e_src_rank_past),
        BAD(e_src_rank_negative),
        BAD(e_dst_rank_string),
        BAD(e_dst_rank_huge),
        BAD(e_no_dst_rank),
        BAD(e_chunk_below),
        BAD(e_chunk_null),
        BAD(e_no_src),
        BAD(e_src_array),
        BAD(e_buf_unknown),
        BAD(e_first_negative),
        BAD(e_count_real),
        BAD(e_range_overflow),
        BAD(e_first_huge),
        BAD(e_counts_differ),
        BAD(e_reduce_no_acc),
        BAD(e_acc_count_differs),
        BAD(e_bytes_negative),
        BAD(e_no_bytes),
        BAD(e_local_two_ranks),
        BAD(e_scale_no_divisor),
        BAD(e_scale_divisor_zero),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dl_status_t st = from_edited(bad[i].edit);
        if (st != DL_ERR_PROTOCOL)
            fail_msg("%s: %s, expected DL_ERR_PROTOCOL", bad[i].name, dl_status_name(st));
    }

    /* Not an object at all, or no ranks to be in. */
    dl_step_desc_t d;
    json_t *j = json_loads("[1, 2]", 0, NULL);
    assert_int_equal(dl_step_desc_from_json(j, 3, &d), DL_ERR_PROTOCOL);
    json_decref(j);
    assert_int_equal(dl_step_desc_from_json(NULL, 3, &d), DL_ERR_PROTOCOL);
    j = json_loads(valid, 0, NULL);
    assert_int_equal(dl_step_desc_from_json(j, 0, &d), DL_ERR_PROTOCOL);
    /* Rank 2 is out of range of a world of 2. */
    assert_int_equal(dl_step_desc_from_json(j, 2, &d), DL_ERR_PROTOCOL);
    json_decref(j);
}

/* Every field of the valid description replaced by every kind of JSON value:
 * refused or accepted, never a crash or a leak. */
static void test_json_garbage(void **state)
{
    (void)state;
    json_t *values[] = {json_null(),    json_true(),    json_string("x"), json_array(),
                        json_object(),  json_real(0.5), json_integer(-1), json_integer(INT64_MAX),
                        json_integer(1)};
    size_t nv = sizeof(values) / sizeof(values[0]);
    json_t *top = json_loads(valid, 0, NULL);
    json_t *proto[3] = {top, json_array_get(json_object_get(top, "msgs"), 0),
                        json_object_get(json_array_get(json_object_get(top, "msgs"), 0), "src")};
    for (int level = 0; level < 3; level++) {
        const char *key;
        json_t *v;
        json_object_foreach(proto[level], key, v)
        {
            for (size_t i = 0; i < nv; i++) {
                json_t *j = json_deep_copy(top);
                json_t *obj = j;
                if (level >= 1)
                    obj = json_array_get(json_object_get(j, "msgs"), 0);
                if (level == 2)
                    obj = json_object_get(obj, "src");
                json_object_set(obj, key, values[i]);
                dl_step_desc_t d;
                dl_status_t st = dl_step_desc_from_json(j, 3, &d);
                assert_true(st == DL_OK || st == DL_ERR_PROTOCOL);
                if (st == DL_OK)
                    dl_step_desc_free(&d);
                json_decref(j);
            }
        }
    }
    json_decref(top);
    for (size_t i = 0; i < nv; i++)
        json_decref(values[i]);
}

/* ----------------------------------------------------------------------
 * The line of a message
 * ---------------------------------------------------------------------- */

static dl_msg_desc_t msg(dl_msg_kind_t kind, int src_rank, int dst_rank, int chunk, dl_range_t src,
                         dl_range_t dst, dl_range_t acc, size_t bytes)
{
    return (dl_msg_desc_t){kind, src_rank, dst_rank, chunk, src, dst, acc, bytes, 0, false, false};
}

#define R(b, first, count) ((dl_range_t){DL_BUF_##b, (first), (count)})

static void expect_line(const dl_msg_desc_t *m, const dl_msg_widths_t *w, const char *want)
{
    char buf[256];
    size_t len = dl_msg_format(m, w, buf, sizeof(buf));
    assert_string_equal(buf, want);
    assert_int_equal(len, strlen(want));
}

static void test_format(void **state)
{
    (void)state;
    /* The lines of the header's comment, each alone. */
    dl_msg_desc_t red = msg(DL_MSG_REDUCE, 0, 1, 2, R(IN, 4, 2), R(IN, 4, 2), R(IN, 4, 2), 16);
    dl_msg_desc_t red3 = msg(DL_MSG_REDUCE, 0, 1, -1, R(IN, 0, 6), R(TMP, 0, 6), R(IN, 0, 6), 48);
    dl_msg_desc_t copy = msg(DL_MSG_LOCAL_COPY, 2, 2, 2, R(IN, 0, 2), R(OUT, 4, 2), R(IN, 0, 0), 8);
    dl_msg_desc_t scale =
        msg(DL_MSG_LOCAL_SCALE, 0, 0, -1, R(IN, 0, 8), R(IN, 0, 8), R(IN, 0, 0), 32);
    scale.divisor = 4;
    dl_msg_desc_t sig = msg(DL_MSG_COPY, 2, 0, -1, R(IN, 0, 0), R(IN, 0, 0), R(IN, 0, 0), 0);
    expect_line(&red, NULL, "r0 -> r1  chunk 2  reduce  16 B  in[4:6] -> in[4:6]");
    expect_line(&red3, NULL, "r0 -> r1  reduce  48 B  in[0:6] -> tmp[0:6] (with in[0:6])");
    expect_line(&copy, NULL, "r2 local  chunk 2  copy  8 B  in[0:2] -> out[4:6]");
    expect_line(&scale, NULL, "r0 local  scale  32 B  in[0:8] / 4");
    expect_line(&sig, NULL, "r2 -> r0  signal");
    dl_msg_desc_t eager = msg(DL_MSG_REDUCE, 1, 0, -1, R(IN, 0, 2), R(IN, 0, 2), R(IN, 0, 2), 8);
    eager.eager = true;
    expect_line(&eager, NULL, "r1 -> r0  reduce  8 B  in[0:2] -> in[0:2]  eager");

    /* The same in shared columns. */
    dl_msg_widths_t w = {0};
    const dl_msg_desc_t *all[] = {&red, &red3, &copy, &scale, &sig};
    for (size_t i = 0; i < 5; i++)
        dl_msg_widths_fit(&w, all[i]);
    assert_int_equal(w.rank, 2);
    assert_int_equal(w.chunk, 7);
    assert_int_equal(w.kind, 6);
    assert_int_equal(w.bytes, 4);
    expect_line(&red, &w, "r0 -> r1  chunk 2  reduce  16 B  in[4:6] -> in[4:6]");
    expect_line(&red3, &w, "r0 -> r1           reduce  48 B  in[0:6] -> tmp[0:6] (with in[0:6])");
    expect_line(&copy, &w, "r2 local  chunk 2  copy     8 B  in[0:2] -> out[4:6]");
    expect_line(&scale, &w, "r0 local           scale   32 B  in[0:8] / 4");
    expect_line(&sig, &w, "r2 -> r0  signal");

    /* Wider ranks: "local" starts where the arrow does. */
    dl_msg_desc_t far =
        msg(DL_MSG_COPY, 10, 3, 11, R(OUT, 10, 2), R(OUT, 10, 2), R(IN, 0, 0), 1536);
    dl_msg_widths_fit(&w, &far);
    expect_line(&far, &w, "r10 -> r3   chunk 11  copy    1.5 KiB  out[10:12] -> out[10:12]");
    expect_line(&copy, &w, "r2  local   chunk 2   copy        8 B  in[0:2] -> out[4:6]");

    /* Like snprintf: the whole length, and what fits. */
    char small[12];
    assert_int_equal(dl_msg_format(&red, NULL, small, sizeof(small)),
                     strlen("r0 -> r1  chunk 2  reduce  16 B  in[4:6] -> in[4:6]"));
    assert_string_equal(small, "r0 -> r1  c");
    assert_int_equal(dl_msg_format(&sig, NULL, NULL, 0), strlen("r2 -> r0  signal"));

    char b[32];
    assert_string_equal(dl_bytes_format(0, b, sizeof(b)), "0 B");
    assert_string_equal(dl_bytes_format(4096, b, sizeof(b)), "4 KiB");
    assert_string_equal(dl_bytes_format(12u << 20, b, sizeof(b)), "12 MiB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe_ring),   cmocka_unit_test(test_describe_kinds),
        cmocka_unit_test(test_json_round_trip), cmocka_unit_test(test_json_rejects),
        cmocka_unit_test(test_json_garbage),    cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
