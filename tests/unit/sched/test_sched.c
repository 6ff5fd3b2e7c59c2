/* The schedule object itself: builder helpers, the validator's rules, the
 * registry and dl_sched_build's errors, the cost model, explain's output
 * and the collective names of coll.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/coll.h"
#include "distlab/sched.h"

/* ----------------------------------------------------------------------
 * Hand-made schedules
 * ---------------------------------------------------------------------- */

static dl_sched_t *hand_made(dl_coll_t coll, int n, size_t count)
{
    dl_sched_t *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->args = (dl_coll_args_t){.coll = coll, .nranks = n, .count = count, .op = DL_OP_SUM};
    return s;
}

static const dl_ref_t in0 = {DL_BUF_IN, 0};

static dl_ref_t at(dl_buf_t b, size_t off)
{
    return (dl_ref_t){b, off};
}

static void expect_invalid(dl_sched_t *s, const char *needle)
{
    char why[256];
    assert_int_not_equal(dl_sched_validate(s, why, sizeof(why)), DL_OK);
    if (strstr(why, needle) == NULL)
        fail_msg("reason \"%s\" does not mention \"%s\"", why, needle);
}

static void test_helpers(void **state)
{
    (void)state;
    dl_sched_t *s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);

    /* An action before any step is a builder bug. */
    assert_int_equal(dl_sched_msg(s, 0, in0, 1, in0, 8, -1), DL_ERR_INVALID);

    assert_int_equal(dl_sched_step(s, "a"), DL_OK);
    /* Empty actions are not real outside a barrier: they are dropped. */
    assert_int_equal(dl_sched_msg(s, 0, in0, 1, in0, 0, -1), DL_OK);
    assert_int_equal(dl_sched_copy(s, 0, in0, in0, 0, -1), DL_OK);
    assert_int_equal(s->n_actions, 0);
    assert_int_equal(dl_sched_step(s, "b"), DL_OK);
    assert_int_equal(
        dl_sched_msg_reduce(s, 0, at(DL_BUF_IN, 4), 1, at(DL_BUF_IN, 4), at(DL_BUF_IN, 4), 4, 1),
        DL_OK);
    assert_int_equal(dl_sched_scale(s, 1, at(DL_BUF_IN, 4), 4), DL_OK);
    assert_int_equal(dl_sched_step(s, "c"), DL_OK);
    /* Many actions in one step make the arrays grow several times. */
    for (int i = 0; i < 100; i++)
        assert_int_equal(dl_sched_msg(s, 1, at(DL_BUF_IN, 4), 0, at(DL_BUF_IN, 4), 4, 1), DL_OK);
    assert_int_equal(s->n_steps, 3);
    assert_int_equal(s->n_actions, 102);

    dl_sched_compact(s);
    assert_int_equal(s->n_steps, 2);
    assert_string_equal(s->steps[0].phase, "b");
    assert_int_equal(s->steps[0].first, 0);
    assert_int_equal(s->steps[0].n, 2);
    assert_int_equal(s->steps[1].first, 2);
    assert_int_equal(s->steps[1].n, 100);
    assert_int_equal(s->actions[0].kind, DL_ACT_MSG);
    assert_int_equal(s->actions[0].combine, DL_COMBINE_REDUCE);
    assert_int_equal(s->actions[1].kind, DL_ACT_SCALE);
    assert_int_equal(dl_sched_validate(s, NULL, 0), DL_OK);
    dl_sched_free(s);

    /* A barrier's empty messages are real. */
    s = hand_made(DL_COLL_BARRIER, 2, 0);
    assert_int_equal(dl_sched_step(s, "signal"), DL_OK);
    assert_int_equal(dl_sched_msg(s, 0, in0, 1, in0, 0, -1), DL_OK);
    assert_int_equal(s->n_actions, 1);
    assert_int_equal(dl_sched_validate(s, NULL, 0), DL_OK);
    dl_sched_free(s);
    dl_sched_free(NULL);
}

static void test_validate_rejects(void **state)
{
    (void)state;
    dl_sched_t *s;

    /* The zero-copy rule: r1 sends in[0:4] while a receive writes in[2:6]. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_msg(s, 1, at(DL_BUF_IN, 0), 0, at(DL_BUF_IN, 0), 4, -1);
    dl_sched_msg(s, 0, at(DL_BUF_IN, 4), 1, at(DL_BUF_IN, 2), 4, -1);
    expect_invalid(s, "r1 sends in[0:4] and writes in[2:6]");
    dl_sched_free(s);

    /* The same with a local action, and in the other order. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_copy(s, 0, at(DL_BUF_IN, 0), at(DL_BUF_IN, 7), 1, -1);
    dl_sched_msg(s, 0, at(DL_BUF_IN, 4), 1, at(DL_BUF_IN, 4), 4, -1);
    expect_invalid(s, "r0 sends in[4:8] and writes in[7:8]");
    dl_sched_free(s);

    /* Sending and writing in different steps is fine, and so is writing a
     * region of another buffer, or reading (acc) what one sends. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    s->tmp_count = 8;
    dl_sched_step(s, "ok");
    dl_sched_msg(s, 0, at(DL_BUF_IN, 0), 1, at(DL_BUF_TMP, 0), 8, -1);
    dl_sched_msg_reduce(s, 1, at(DL_BUF_IN, 0), 0, at(DL_BUF_IN, 0), at(DL_BUF_TMP, 0), 8, -1);
    dl_sched_step(s, "ok");
    dl_sched_copy(s, 0, at(DL_BUF_TMP, 0), at(DL_BUF_IN, 0), 8, -1);
    assert_int_equal(dl_sched_validate(s, NULL, 0), DL_OK);
    dl_sched_free(s);

    /* An eager message may be written by its sender in the same step: the
     * butterfly in place. Not one too large for the eager size, nor one to
     * its own sender, nor a local action marked eager. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    s->elem_size = 4;
    dl_sched_step(s, "ok");
    assert_int_equal(dl_sched_msg_reduce_eager(s, 1, in0, 0, in0, in0, 8, -1), DL_OK);
    assert_int_equal(dl_sched_msg_reduce_eager(s, 0, in0, 1, in0, in0, 8, -1), DL_OK);
    assert_int_equal(dl_sched_validate(s, NULL, 0), DL_OK);
    s->actions[0].eager = false;
    expect_invalid(s, "r1 sends in[0:8] and writes in[0:8]");
    s->actions[0].eager = true;
    s->elem_size = DL_SCHED_EAGER_MAX / 8 + 1;
    expect_invalid(s, "eager message r1 -> r0 is too large");
    s->elem_size = 0; /* an unknown element size cannot be eager */
    expect_invalid(s, "eager message r1 -> r0 is too large");
    s->elem_size = 4;
    s->actions[0].src_rank = 0;
    expect_invalid(s, "eager message r0 -> r0 goes to its sender");
    assert_int_equal(dl_sched_msg_reduce_eager(s, 0, in0, 0, in0, in0, 8, -1), DL_ERR_INVALID);
    assert_int_equal(dl_sched_msg_reduce_eager(s, 0, in0, 1, in0, in0, DL_SCHED_EAGER_MAX, -1),
                     DL_ERR_INVALID);
    dl_sched_free(s);

    /* A write-back message: its region counts as written on its sender, so
     * the sender may not send it elsewhere in the step; never to itself,
     * never eager, never in a schedule for a network. */
    s = hand_made(DL_COLL_ALL_REDUCE, 3, 8);
    s->elem_size = 4;
    dl_sched_step(s, "ok");
    assert_int_equal(dl_sched_msg_reduce_back(s, 1, in0, 0, in0, in0, 4, 0), DL_OK);
    assert_int_equal(dl_sched_validate(s, NULL, 0), DL_OK);
    assert_int_equal(dl_sched_msg(s, 1, in0, 2, in0, 4, -1), DL_OK);
    expect_invalid(s, "r1 sends in[0:4] and writes in[0:4]");
    s->n_actions--;
    s->steps[0].n--;
    s->actions[0].eager = true;
    expect_invalid(s, "write-back message r1 -> r0 is also eager");
    s->actions[0].eager = false;
    s->actions[0].src_rank = 0;
    expect_invalid(s, "write-back message r0 -> r0 goes to its sender");
    assert_int_equal(dl_sched_msg_reduce_back(s, 0, in0, 0, in0, in0, 4, 0), DL_ERR_INVALID);
    s->actions[0].src_rank = 1;
    s->network = true;
    expect_invalid(s, "write-back message r1 -> r0 in a schedule for a network");
    assert_int_equal(dl_sched_msg_reduce_back(s, 1, in0, 0, in0, in0, 4, 0), DL_ERR_UNSUPPORTED);
    dl_sched_free(s);

    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    s->elem_size = 4;
    dl_sched_step(s, "bad");
    dl_sched_copy(s, 0, in0, in0, 8, -1);
    s->actions[0].eager = true;
    expect_invalid(s, "local action on r0 marked eager");
    dl_sched_free(s);

    /* Regions beyond the buffer sizes of coll.h. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_msg(s, 0, at(DL_BUF_IN, 6), 1, at(DL_BUF_IN, 6), 4, -1);
    expect_invalid(s, "in[6:10] is outside");
    dl_sched_free(s);

    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_msg(s, 0, at(DL_BUF_IN, 0), 1, at(DL_BUF_OUT, 0), 8, -1);
    expect_invalid(s, "out[0:8] is outside"); /* in place: all_reduce has no OUT */
    dl_sched_free(s);

    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    s->tmp_count = 4;
    dl_sched_step(s, "bad");
    dl_sched_copy(s, 0, at(DL_BUF_IN, 0), at(DL_BUF_TMP, 2), 4, -1);
    expect_invalid(s, "tmp[2:6] is outside");
    dl_sched_free(s);

    s = hand_made(DL_COLL_GATHER, 3, 2); /* only the root (0) has OUT */
    dl_sched_step(s, "bad");
    dl_sched_msg(s, 0, at(DL_BUF_IN, 0), 1, at(DL_BUF_OUT, 0), 2, -1);
    expect_invalid(s, "r1 out[0:2] is outside");
    dl_sched_free(s);

    /* Ranks out of range, and a local action naming two ranks. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_msg(s, 0, in0, 2, in0, 8, -1);
    expect_invalid(s, "outside 0..1");
    dl_sched_free(s);

    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_copy(s, 0, in0, in0, 8, -1);
    s->actions[0].dst_rank = 1;
    expect_invalid(s, "two ranks");
    dl_sched_free(s);

    /* An empty message outside a barrier. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_msg(s, 0, in0, 1, in0, 8, -1);
    s->actions[0].count = 0;
    expect_invalid(s, "empty message");
    dl_sched_free(s);

    /* A step that points past the actions. */
    s = hand_made(DL_COLL_ALL_REDUCE, 2, 8);
    dl_sched_step(s, "bad");
    dl_sched_msg(s, 0, in0, 1, in0, 8, -1);
    s->steps[0].n = 2;
    expect_invalid(s, "beyond");
    dl_sched_free(s);
}

static void test_buf_count(void **state)
{
    (void)state;
    size_t splits[] = {1, 2, 0, 3, 0, 4, 5, 6, 7}; /* 3 x 3 */
    dl_coll_args_t a = {.coll = DL_COLL_ALL_TO_ALL, .nranks = 3, .splits = splits};
    dl_sched_t *s = NULL;
    assert_int_equal(dl_sched_build("pairwise", &a, 4, &s), DL_OK);
    assert_int_equal(dl_sched_buf_count(s, 0, DL_BUF_IN), 3);
    assert_int_equal(dl_sched_buf_count(s, 1, DL_BUF_IN), 7);
    assert_int_equal(dl_sched_buf_count(s, 2, DL_BUF_IN), 18);
    assert_int_equal(dl_sched_buf_count(s, 0, DL_BUF_OUT), 1 + 3 + 5);
    assert_int_equal(dl_sched_buf_count(s, 2, DL_BUF_OUT), 0 + 4 + 7);
    assert_int_equal(dl_sched_buf_count(s, 3, DL_BUF_IN), 0);
    /* The schedule keeps its own copy of the splits. */
    splits[0] = 100;
    assert_int_equal(dl_sched_buf_count(s, 0, DL_BUF_IN), 3);
    assert_ptr_equal(s->args.splits, s->splits_copy);
    dl_sched_free(s);

    a = (dl_coll_args_t){.coll = DL_COLL_SCATTER, .nranks = 4, .root = 2, .count = 5};
    assert_int_equal(dl_sched_build("tree", &a, 4, &s), DL_OK);
    assert_int_equal(dl_sched_buf_count(s, 2, DL_BUF_IN), 20);
    assert_int_equal(dl_sched_buf_count(s, 1, DL_BUF_IN), 0);
    assert_int_equal(dl_sched_buf_count(s, 1, DL_BUF_OUT), 5);
    dl_sched_free(s);

    a = (dl_coll_args_t){.coll = DL_COLL_REDUCE_SCATTER, .nranks = 4, .count = 5};
    assert_int_equal(dl_sched_build("ring", &a, 4, &s), DL_OK);
    assert_int_equal(dl_sched_buf_count(s, 1, DL_BUF_IN), 20);
    assert_int_equal(dl_sched_buf_count(s, 1, DL_BUF_OUT), 5);
    assert_int_equal(dl_sched_buf_count(s, 1, DL_BUF_TMP), s->tmp_count);
    dl_sched_free(s);
}

/* ----------------------------------------------------------------------
 * Registry and dl_sched_build
 * ---------------------------------------------------------------------- */

static void test_registry(void **state)
{
    (void)state;
    char buf[128];

    assert_non_null(dl_algo_find("ring"));
    assert_null(dl_algo_find("nope"));
    assert_null(dl_algo_find(NULL));
    assert_string_equal(dl_algo_find("rd")->title, "recursive doubling");
    for (const dl_algo_t *const *a = dl_algos(); *a != NULL; a++) {
        assert_non_null((*a)->title);
        assert_non_null((*a)->summary);
        assert_ptr_equal(dl_algo_find((*a)->name), *a);
    }

    assert_string_equal(dl_algo_names_for(DL_COLL_ALL_REDUCE, buf, sizeof(buf)),
                        "ring, rd, rhd, direct, linear, share");
    assert_string_equal(dl_algo_names_for(DL_COLL_BARRIER, buf, sizeof(buf)),
                        "direct, linear, dissemination");
    assert_string_equal(dl_algo_names_for(DL_COLL_ALL_TO_ALL, buf, sizeof(buf)),
                        "direct, pairwise, linear");
    assert_string_equal(dl_algo_names_for(DL_COLL_BROADCAST, buf, sizeof(buf)),
                        "tree, chain, direct");
    /* A short buffer truncates at a whole name. */
    assert_string_equal(dl_algo_names_for(DL_COLL_ALL_REDUCE, buf, 12), "ring, rd");

    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 8, 32 * 1024, true), "rd");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 8, 32 * 1024 + 1, true), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_REDUCE, 8, 32 * 1024), "share");
    /* 3 to 8 ranks: linear (an all_reduce up to the eager size, any
     * barrier; an all_gather, reduce_scatter or all_to_all over shared
     * memory at any size, over a network up to 8 KiB in all, 64 KiB for
     * all_to_all). */
    assert_string_equal(dl_algo_default(DL_COLL_ALL_REDUCE, 3, 1), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_REDUCE, 8, 2016), "linear");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 8, 2017, true), "rd");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_REDUCE, 2, 8), "rd");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_REDUCE, 9, 8), "rd");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_GATHER, 8, 1024), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_GATHER, 3, 2730), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_GATHER, 4, 1 << 20), "linear");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_GATHER, 4, 2048, true), "linear");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_GATHER, 4, 2049, true), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_GATHER, 2, 1), "ring");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_GATHER, 4, SIZE_MAX / 2, true), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE_SCATTER, 3, 1), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE_SCATTER, 4, 16 << 20), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE_SCATTER, 4, (16 << 20) + 1), "ring");
    assert_string_equal(dl_algo_default_on(DL_COLL_REDUCE_SCATTER, 4, 8192, true), "linear");
    assert_string_equal(dl_algo_default_on(DL_COLL_REDUCE_SCATTER, 4, 8193, true), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE_SCATTER, 9, 8193), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_BARRIER, 3, 0), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_BARRIER, 8, 0), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_BARRIER, 2, 0), "dissemination");
    assert_string_equal(dl_algo_default(DL_COLL_BARRIER, 9, 0), "dissemination");
    /* Past 8 ranks, up to 8 KiB in all over a power of two: recursive
     * doubling (a block of all_gather's, reduce_scatter's whole input). */
    assert_string_equal(dl_algo_default(DL_COLL_ALL_GATHER, 16, 512), "rd");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_GATHER, 16, 513), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_GATHER, 12, 1), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE_SCATTER, 16, 8192), "rhd");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE_SCATTER, 16, 8193), "ring");
    assert_string_equal(dl_algo_default(DL_COLL_BROADCAST, 8, 1), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE, 8, 1), "chain");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE, 8, 4096), "chain");
    assert_string_equal(dl_algo_default(DL_COLL_REDUCE, 8, 4097), "tree");
    /* 3 or 4 ranks, past the examples' sizes up to 64 KiB: from the root
     * directly; the tree otherwise. */
    assert_string_equal(dl_algo_default(DL_COLL_BROADCAST, 4, 4096), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_BROADCAST, 4, 4097), "direct");
    assert_string_equal(dl_algo_default(DL_COLL_BROADCAST, 3, 64 * 1024), "direct");
    assert_string_equal(dl_algo_default(DL_COLL_BROADCAST, 3, 64 * 1024 + 1), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_BROADCAST, 5, 8192), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_BROADCAST, 2, 8192), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_GATHER, 8, 1), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_SCATTER, 8, 1), "tree");
    /* Past the examples' sizes, gather and scatter go direct. */
    assert_string_equal(dl_algo_default(DL_COLL_GATHER, 4, 4096), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_GATHER, 4, 4097), "direct");
    assert_string_equal(dl_algo_default(DL_COLL_SCATTER, 3, 4096), "tree");
    assert_string_equal(dl_algo_default(DL_COLL_SCATTER, 3, 4097), "direct");
    assert_string_equal(dl_algo_default(DL_COLL_GATHER, 16, 64 << 20), "direct");
    /* For a call: a gather's IN is count elements, a scatter's nranks *
     * count; what dl_sched_build picks. */
    dl_coll_args_t g = {.coll = DL_COLL_GATHER, .nranks = 4, .count = 1024};
    assert_string_equal(dl_algo_default_for(&g, 4), "tree");
    g.count = 1025;
    assert_string_equal(dl_algo_default_for(&g, 4), "direct");
    dl_coll_args_t sc = {.coll = DL_COLL_SCATTER, .nranks = 4, .count = 256};
    assert_string_equal(dl_algo_default_for(&sc, 4), "tree");
    sc.count = 257;
    assert_string_equal(dl_algo_default_for(&sc, 4), "direct");
    dl_sched_t *built = NULL;
    assert_int_equal(dl_sched_build(NULL, &sc, 4, &built), DL_OK);
    assert_string_equal(built->algo, "direct");
    dl_sched_free(built);
    assert_string_equal(dl_algo_default(DL_COLL_ALL_TO_ALL, 8, 1), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_TO_ALL, 3, 64 * 1024), "linear");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_TO_ALL, 3, 64 * 1024 + 1), "linear");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_TO_ALL, 3, 64 * 1024 + 1, true), "pairwise");
    assert_string_equal(dl_algo_default(DL_COLL_ALL_TO_ALL, 9, 64 * 1024 + 1), "pairwise");
    /* Uneven splits: pairwise whatever the size (each rank knows only its
     * row and column of the matrix, and all must pick the same). */
    size_t tiny[] = {1, 1, 1, 1};
    dl_coll_args_t uneven = {.coll = DL_COLL_ALL_TO_ALL, .nranks = 2, .splits = tiny};
    assert_string_equal(dl_algo_default_for(&uneven, 4), "pairwise");
    assert_string_equal(dl_algo_default(DL_COLL_BARRIER, 16, 0), "dissemination");
    /* Every default implements its collective. */
    for (int c = 0; c < DL_COLL__COUNT; c++) {
        const dl_algo_t *a = dl_algo_find(dl_algo_default((dl_coll_t)c, 4, 100));
        assert_non_null(a);
        assert_non_null(a->build[c]);
    }
}

static void test_build_errors(void **state)
{
    (void)state;
    dl_sched_t *s = (dl_sched_t *)0x1; /* must stay untouched on error */
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 4, .count = 8, .op = DL_OP_SUM};

    assert_int_equal(dl_sched_build("nope", &a, 4, &s), DL_ERR_NOT_FOUND);
    assert_int_equal(dl_sched_build("pairwise", &a, 4, &s), DL_ERR_UNSUPPORTED);
    assert_int_equal(dl_sched_build("dissemination", &a, 4, &s), DL_ERR_UNSUPPORTED);

    a.nranks = 0;
    assert_int_equal(dl_sched_build("ring", &a, 4, &s), DL_ERR_INVALID);
    a.nranks = -3;
    assert_int_equal(dl_sched_build("ring", &a, 4, &s), DL_ERR_INVALID);

    dl_coll_args_t b = {.coll = DL_COLL_BROADCAST, .nranks = 4, .root = 4, .count = 8};
    assert_int_equal(dl_sched_build("tree", &b, 4, &s), DL_ERR_INVALID);
    b.root = -1;
    assert_int_equal(dl_sched_build("tree", &b, 4, &s), DL_ERR_INVALID);
    b.root = 3;
    b.coll = DL_COLL__COUNT;
    assert_int_equal(dl_sched_build("tree", &b, 4, &s), DL_ERR_INVALID);
    assert_int_equal(dl_sched_build("tree", NULL, 4, &s), DL_ERR_INVALID);
    assert_ptr_equal(s, (dl_sched_t *)0x1);

    /* A root is ignored (and normalised to 0) where the collective has none. */
    a = (dl_coll_args_t){.coll = DL_COLL_ALL_REDUCE, .nranks = 4, .root = 9, .count = 8};
    assert_int_equal(dl_sched_build("direct", &a, 4, &s), DL_OK);
    assert_int_equal(s->args.root, 0);
    dl_sched_free(s);
}

static void test_build_fields(void **state)
{
    (void)state;
    dl_sched_t *s = NULL;
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 4, .count = 8, .op = DL_OP_AVG};

    /* NULL picks the default for the size: 8 floats over 4 ranks is small,
     * so linear. */
    assert_int_equal(dl_sched_build(NULL, &a, 4, &s), DL_OK);
    assert_string_equal(s->algo, "linear");
    assert_int_equal(s->kernel_op, DL_OP_SUM);
    assert_int_equal(s->args.op, DL_OP_AVG);
    assert_int_equal(s->args.nranks, 4);
    dl_sched_free(s);

    /* Past the eager size: share over shared memory, which a network has
     * not (rd up to 32 KiB there, then the ring). */
    a.count = 1 << 20;
    assert_int_equal(dl_sched_build(NULL, &a, 4, &s), DL_OK);
    assert_string_equal(s->algo, "share");
    dl_sched_free(s);
    assert_int_equal(dl_sched_build_on(NULL, &a, 4, true, &s), DL_OK);
    assert_string_equal(s->algo, "ring");
    dl_sched_free(s);
    assert_int_equal(dl_sched_build_on("share", &a, 4, true, &s), DL_ERR_UNSUPPORTED);
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 4, 2016, false), "linear");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 16, 2016, false), "rd");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 4, 2017, false), "share");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 4, 2017, true), "rd");
    assert_string_equal(dl_algo_default_on(DL_COLL_ALL_REDUCE, 1, 1 << 20, false), "ring");

    a.op = DL_OP_MAX;
    assert_int_equal(dl_sched_build("rhd", &a, 4, &s), DL_OK);
    assert_int_equal(s->kernel_op, DL_OP_MAX);
    dl_sched_free(s);
}

/* ----------------------------------------------------------------------
 * Cost model and explain
 * ---------------------------------------------------------------------- */

static dl_sched_t *ring4(void)
{
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 4, .count = 8, .op = DL_OP_SUM};
    dl_sched_t *s = NULL;
    assert_int_equal(dl_sched_build("ring", &a, 8, &s), DL_OK);
    return s;
}

static void test_stats(void **state)
{
    (void)state;
    dl_sched_t *s = ring4();
    dl_sched_stats_t st;

    /* 6 steps, 4 messages of 2 int64 (16 B) each. */
    dl_sched_stats(s, 8, -1, -1, &st);
    assert_int_equal(st.n_steps, 6);
    assert_int_equal(st.n_messages, 24);
    assert_int_equal(st.max_bytes_sent, 96);
    assert_int_equal(st.total_bytes, 384);
    assert_float_equal(st.alpha_us, 1.0, 1e-12);
    assert_float_equal(st.beta_us_per_byte, 1e-4, 1e-12);
    assert_float_equal(st.cost_us, 6 * 1.0 + 96 * 1e-4, 1e-9);

    dl_sched_stats(s, 8, 2.0, 0.5, &st);
    assert_float_equal(st.cost_us, 6 * 2.0 + 96 * 0.5, 1e-9);
    dl_sched_free(s);

    /* A step that only copies locally pays no latency: rd on 2 ranks is one
     * exchange into TMP and a local copy back, past the eager size. */
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 2, .count = 1024, .op = DL_OP_SUM};
    assert_int_equal(dl_sched_build("rd", &a, 4, &s), DL_OK);
    dl_sched_stats(s, 4, 1.0, 0.0, &st);
    assert_int_equal(st.n_steps, 2);
    assert_float_equal(st.cost_us, 1.0, 1e-12);
    dl_sched_free(s);
    /* Up to it, the exchange adds in place (eager) and is the only step. */
    a.count = 4;
    assert_int_equal(dl_sched_build("rd", &a, 4, &s), DL_OK);
    dl_sched_stats(s, 4, 1.0, 0.0, &st);
    assert_int_equal(st.n_steps, 1);
    assert_int_equal(s->tmp_count, 0);
    assert_true(s->actions[0].eager);
    assert_float_equal(st.cost_us, 1.0, 1e-12);
    dl_sched_free(s);

    /* A fan-in is as slow as the root's link: direct all_reduce on 8 ranks
     * has the root take in 7 x 32 B in one step and send 7 x 32 B in the
     * next, while each sender sends 32 B. */
    a = (dl_coll_args_t){.coll = DL_COLL_ALL_REDUCE, .nranks = 8, .count = 8, .op = DL_OP_SUM};
    assert_int_equal(dl_sched_build("direct", &a, 4, &s), DL_OK);
    dl_sched_stats(s, 4, 1.0, 1.0, &st);
    assert_int_equal(st.n_steps, 2);
    assert_int_equal(st.max_bytes_sent, 7 * 32);
    assert_int_equal(st.max_bytes_recv, 7 * 32);
    assert_float_equal(st.cost_us, 2 * 1.0 + 2 * 7 * 32 * 1.0, 1e-9);
    dl_sched_free(s);

    /* A barrier's empty messages pay alpha only. */
    a = (dl_coll_args_t){.coll = DL_COLL_BARRIER, .nranks = 8};
    assert_int_equal(dl_sched_build("dissemination", &a, 4, &s), DL_OK);
    dl_sched_stats(s, 4, 1.0, 1.0, &st);
    assert_int_equal(st.n_messages, 24);
    assert_int_equal(st.total_bytes, 0);
    assert_float_equal(st.cost_us, 3.0, 1e-12);
    dl_sched_free(s);
}

static char *explain_of(const dl_sched_t *s, size_t elem_size, const char *dtype)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    dl_sched_explain(s, elem_size, dtype, f);
    fclose(f);
    return text;
}

static const char ring4_explain[] =
    "all_reduce with ring: np 4, count 8 int64 (64 B), op sum\n"
    "Each rank sends to its right neighbour; chunks travel the ring. Bandwidth-optimal, n-1 "
    "steps per lap.\n"
    "\n"
    "step 1/6  reduce-scatter\n"
    "  r0 -> r1  chunk 0  reduce  16 B  in[0:2] -> in[0:2]\n"
    "  r1 -> r2  chunk 1  reduce  16 B  in[2:4] -> in[2:4]\n"
    "  r2 -> r3  chunk 2  reduce  16 B  in[4:6] -> in[4:6]\n"
    "  r3 -> r0  chunk 3  reduce  16 B  in[6:8] -> in[6:8]\n"
    "\n"
    "step 2/6  reduce-scatter\n"
    "  r0 -> r1  chunk 3  reduce  16 B  in[6:8] -> in[6:8]\n"
    "  r1 -> r2  chunk 0  reduce  16 B  in[0:2] -> in[0:2]\n"
    "  r2 -> r3  chunk 1  reduce  16 B  in[2:4] -> in[2:4]\n"
    "  r3 -> r0  chunk 2  reduce  16 B  in[4:6] -> in[4:6]\n"
    "\n"
    "step 3/6  reduce-scatter\n"
    "  r0 -> r1  chunk 2  reduce  16 B  in[4:6] -> in[4:6]\n"
    "  r1 -> r2  chunk 3  reduce  16 B  in[6:8] -> in[6:8]\n"
    "  r2 -> r3  chunk 0  reduce  16 B  in[0:2] -> in[0:2]\n"
    "  r3 -> r0  chunk 1  reduce  16 B  in[2:4] -> in[2:4]\n"
    "\n"
    "step 4/6  all-gather\n"
    "  r0 -> r1  chunk 1  copy    16 B  in[2:4] -> in[2:4]\n"
    "  r1 -> r2  chunk 2  copy    16 B  in[4:6] -> in[4:6]\n"
    "  r2 -> r3  chunk 3  copy    16 B  in[6:8] -> in[6:8]\n"
    "  r3 -> r0  chunk 0  copy    16 B  in[0:2] -> in[0:2]\n"
    "\n"
    "step 5/6  all-gather\n"
    "  r0 -> r1  chunk 0  copy    16 B  in[0:2] -> in[0:2]\n"
    "  r1 -> r2  chunk 1  copy    16 B  in[2:4] -> in[2:4]\n"
    "  r2 -> r3  chunk 2  copy    16 B  in[4:6] -> in[4:6]\n"
    "  r3 -> r0  chunk 3  copy    16 B  in[6:8] -> in[6:8]\n"
    "\n"
    "step 6/6  all-gather\n"
    "  r0 -> r1  chunk 3  copy    16 B  in[6:8] -> in[6:8]\n"
    "  r1 -> r2  chunk 0  copy    16 B  in[0:2] -> in[0:2]\n"
    "  r2 -> r3  chunk 1  copy    16 B  in[2:4] -> in[2:4]\n"
    "  r3 -> r0  chunk 2  copy    16 B  in[4:6] -> in[4:6]\n"
    "\n"
    "steps 6, messages 24, most sent by one rank 96 B, most received by one rank 96 B, total "
    "sent 384 B\n"
    "cost: 6 x alpha + 96 B x beta = 6.01 us (alpha 1 us, beta 0.1 ns/B)\n";

static void test_explain_ring(void **state)
{
    (void)state;
    dl_sched_t *s = ring4();
    char *text = explain_of(s, 8, "int64");
    if (strcmp(text, ring4_explain) != 0) {
        print_error("explain output:\n%s", text);
        fail_msg("explain output differs from the snapshot");
    }
    free(text);
    dl_sched_free(s);
}

/* The comparison table: a row per algorithm and world size, the server's
 * load growing with n where the ring's stays near 2 B. */
static void test_explain_scaling(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .count = 8, .op = DL_OP_SUM};
    const char *algos[] = {"direct", "ring"};
    const int nps[] = {2, 8};
    assert_int_equal(dl_sched_explain_scaling(&a, algos, 2, nps, 2, 4, "float32", f), DL_OK);
    fclose(f);
    static const char want[] =
        "all_reduce of 8 float32 (32 B) per rank, op sum\n"
        "algorithm        np  steps  messages   most sent  most received  total sent       cost\n"
        "direct            2      2         2        32 B           32 B        64 B    2.01 us\n"
        "direct            8      2        14       224 B          224 B       448 B    2.04 us\n"
        "ring              2      2         4        32 B           32 B        64 B    2.00 us\n"
        "ring              8     14       112        56 B           56 B       448 B   14.01 us\n"
        "most sent, most received: by the busiest rank over the whole collective\n"
        "cost: alpha 1 us per step, plus beta 0.1 ns/B on each step's busiest link\n";
    if (strcmp(text, want) != 0) {
        print_error("scaling table:\n%s", text);
        fail_msg("the scaling table differs from the snapshot");
    }
    free(text);

    /* No world size, or one below 1, is refused. */
    f = open_memstream(&text, &len);
    const int bad[] = {0};
    assert_int_equal(dl_sched_explain_scaling(&a, algos, 2, bad, 1, 4, "float32", f),
                     DL_ERR_INVALID);
    assert_int_equal(dl_sched_explain_scaling(&a, algos, 2, nps, 0, 4, "float32", f),
                     DL_ERR_INVALID);
    fclose(f);
    free(text);
}

/* Local actions, empty messages and avg print readably. */
static void test_explain_misc(void **state)
{
    (void)state;
    dl_sched_t *s = NULL;
    char *text;

    dl_coll_args_t a = {.coll = DL_COLL_ALL_GATHER, .nranks = 4, .count = 2};
    assert_int_equal(dl_sched_build("ring", &a, 4, &s), DL_OK);
    text = explain_of(s, 4, "float32");
    assert_non_null(strstr(text, "  r2 local  chunk 2  copy  8 B  in[0:2] -> out[4:6]\n"));
    free(text);
    dl_sched_free(s);

    a = (dl_coll_args_t){.coll = DL_COLL_ALL_REDUCE, .nranks = 4, .count = 8, .op = DL_OP_AVG};
    assert_int_equal(dl_sched_build("direct", &a, 4, &s), DL_OK);
    text = explain_of(s, 4, "float32");
    assert_non_null(strstr(text, "  r0 local  scale   32 B  in[0:8] / 4\n"));
    assert_non_null(strstr(text, "op avg"));
    free(text);
    dl_sched_free(s);

    a = (dl_coll_args_t){.coll = DL_COLL_BARRIER, .nranks = 3};
    assert_int_equal(dl_sched_build("dissemination", &a, 4, &s), DL_OK);
    text = explain_of(s, 4, "float32");
    assert_non_null(strstr(text, "barrier with dissemination: np 3\n"));
    assert_non_null(strstr(text, "  r2 -> r0  signal\n"));
    free(text);
    dl_sched_free(s);

    a = (dl_coll_args_t){.coll = DL_COLL_BROADCAST, .nranks = 2, .root = 1, .count = 3 << 20};
    assert_int_equal(dl_sched_build("tree", &a, 4, &s), DL_OK);
    text = explain_of(s, 4, "float32");
    assert_non_null(strstr(text, "count 3145728 float32 (12 MiB), root 1\n"));
    assert_non_null(strstr(text, "  r1 -> r0  copy  12 MiB  in[0:3145728] -> in[0:3145728]\n"));
    free(text);
    dl_sched_free(s);
}

/* ----------------------------------------------------------------------
 * coll.h
 * ---------------------------------------------------------------------- */

static void test_coll_names(void **state)
{
    (void)state;
    for (int c = 0; c < DL_COLL__COUNT; c++) {
        dl_coll_t back = DL_COLL__COUNT;
        assert_int_equal(dl_coll_parse(dl_coll_name((dl_coll_t)c), &back), DL_OK);
        assert_int_equal(back, c);
    }
    dl_coll_t c = DL_COLL__COUNT;
    assert_string_equal(dl_coll_name(DL_COLL_ALL_REDUCE), "all_reduce");
    assert_int_equal(dl_coll_parse("allreduce", &c), DL_OK);
    assert_int_equal(c, DL_COLL_ALL_REDUCE);
    assert_int_equal(dl_coll_parse("All-To-All", &c), DL_OK);
    assert_int_equal(c, DL_COLL_ALL_TO_ALL);
    c = DL_COLL__COUNT;
    assert_int_equal(dl_coll_parse("all_reduc", &c), DL_ERR_INVALID);
    assert_int_equal(dl_coll_parse("", &c), DL_ERR_INVALID);
    assert_int_equal(c, DL_COLL__COUNT);

    assert_true(dl_coll_has_root(DL_COLL_BROADCAST));
    assert_true(dl_coll_has_root(DL_COLL_SCATTER));
    assert_true(dl_coll_has_root(DL_COLL_GATHER));
    assert_true(dl_coll_has_root(DL_COLL_REDUCE));
    assert_false(dl_coll_has_root(DL_COLL_ALL_REDUCE));
    assert_false(dl_coll_has_root(DL_COLL_BARRIER));
    assert_true(dl_coll_has_op(DL_COLL_REDUCE));
    assert_true(dl_coll_has_op(DL_COLL_ALL_REDUCE));
    assert_true(dl_coll_has_op(DL_COLL_REDUCE_SCATTER));
    assert_false(dl_coll_has_op(DL_COLL_ALL_GATHER));
    assert_false(dl_coll_has_op(DL_COLL_ALL_TO_ALL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helpers),         cmocka_unit_test(test_validate_rejects),
        cmocka_unit_test(test_buf_count),       cmocka_unit_test(test_registry),
        cmocka_unit_test(test_build_errors),    cmocka_unit_test(test_build_fields),
        cmocka_unit_test(test_stats),           cmocka_unit_test(test_explain_ring),
        cmocka_unit_test(test_explain_scaling), cmocka_unit_test(test_explain_misc),
        cmocka_unit_test(test_coll_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
