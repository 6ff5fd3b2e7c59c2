/* The symbolic simulator stepped one step at a time, and how it writes an
 * element: the ring all-reduce at np 4 as the textbook draws it, and the
 * chain reduce's partial sums. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/symsim.h"

static dl_sched_t *build(const char *algo, dl_coll_t coll, int np, size_t count, dl_op_t op)
{
    dl_coll_args_t args = {.coll = coll, .nranks = np, .count = count, .op = op};
    dl_sched_t *s = NULL;
    assert_int_equal(dl_sched_build(algo, &args, 4, &s), DL_OK);
    return s;
}

static void expect_el(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i, const char *want)
{
    char got[128];
    size_t len = dl_symsim_format(sim, r, b, i, got, sizeof(got));
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
}

static void ring_step_by_step(void **state)
{
    (void)state;
    dl_sched_t *s = build("ring", DL_COLL_ALL_REDUCE, 4, 4, DL_OP_SUM);
    dl_symsim_t *sim = NULL;
    char why[256];
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    assert_int_equal(dl_symsim_steps_run(sim), 0);
    expect_el(sim, 2, DL_BUF_IN, 3, "c3");

    /* Step 1: each rank adds its left neighbour's chunk. */
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 1, DL_BUF_IN, 0, "a0+b0");
    expect_el(sim, 0, DL_BUF_IN, 3, "a3+d3");
    expect_el(sim, 2, DL_BUF_IN, 0, "c0");
    /* Step 3: the last reduce-scatter step leaves one full sum per rank. */
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_OK);
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 3, DL_BUF_IN, 0, "a0+b0+c0+d0");
    expect_el(sim, 3, DL_BUF_IN, 1, "b1+c1+d1");
    assert_int_equal(dl_symsim_steps_run(sim), 3);
    /* The rest: every element is the sum of every rank's. */
    assert_int_equal(dl_symsim_run(sim, why, sizeof(why)), DL_OK);
    for (int r = 0; r < 4; r++)
        expect_el(sim, r, DL_BUF_IN, 2, "a2+b2+c2+d2");
    /* Nothing is left to run. */
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_ERR_INVALID);
    assert_non_null(strstr(why, "every step"));
    dl_symsim_free(sim);
    dl_sched_free(s);
}

/* The chain reduce of core/sched/chain.c at np 4: r3 -> r2 -> r1 -> r0, each
 * rank adding in place, so the other ranks keep partial sums. */
static void chain_reduce_step_by_step(void **state)
{
    (void)state;
    dl_sched_t *s = build("chain", DL_COLL_REDUCE, 4, 2, DL_OP_SUM);
    dl_symsim_t *sim = NULL;
    char why[256];
    assert_int_equal(s->n_steps, 3);
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 2, DL_BUF_IN, 0, "c0+d0");
    expect_el(sim, 1, DL_BUF_IN, 0, "b0");
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 1, DL_BUF_IN, 1, "b1+c1+d1");
    expect_el(sim, 0, DL_BUF_IN, 1, "a1");
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 0, DL_BUF_IN, 0, "a0+b0+c0+d0");
    expect_el(sim, 0, DL_BUF_IN, 1, "a1+b1+c1+d1");
    expect_el(sim, 1, DL_BUF_IN, 0, "b0+c0+d0");
    expect_el(sim, 2, DL_BUF_IN, 1, "c1+d1");
    expect_el(sim, 3, DL_BUF_IN, 0, "d0");
    dl_symsim_free(sim);
    dl_sched_free(s);

    /* Another root: the line runs root+3 -> root+2 -> root+1 -> root. */
    dl_coll_args_t args = {.coll = DL_COLL_REDUCE, .nranks = 4, .root = 2, .count = 1};
    assert_int_equal(dl_sched_build("chain", &args, 4, &s), DL_OK);
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    assert_int_equal(dl_symsim_run(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 2, DL_BUF_IN, 0, "a0+b0+c0+d0");
    expect_el(sim, 3, DL_BUF_IN, 0, "a0+b0+d0");
    expect_el(sim, 0, DL_BUF_IN, 0, "a0+b0");
    expect_el(sim, 1, DL_BUF_IN, 0, "b0");
    dl_symsim_free(sim);
    dl_sched_free(s);
}

static void formats(void **state)
{
    (void)state;
    /* avg: the sum over the ranks, divided by their number. */
    dl_sched_t *s = build("rd", DL_COLL_ALL_REDUCE, 2, 2, DL_OP_AVG);
    dl_symsim_t *sim = NULL;
    char why[256], small[4];
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    assert_int_equal(dl_symsim_run(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 1, DL_BUF_IN, 1, "(a1+b1)/2");
    /* Cut like snprintf; the length is the whole. */
    assert_int_equal(dl_symsim_format(sim, 1, DL_BUF_IN, 1, small, sizeof(small)), 9);
    assert_string_equal(small, "(a1");
    dl_symsim_free(sim);
    dl_sched_free(s);

    /* A gather's root: slots not yet received are "-". */
    s = build("tree", DL_COLL_GATHER, 4, 1, DL_OP_SUM);
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    expect_el(sim, 0, DL_BUF_OUT, 3, "-");
    assert_int_equal(dl_symsim_run(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 0, DL_BUF_OUT, 3, "d0");
    dl_symsim_free(sim);
    dl_sched_free(s);

    /* Past 26 ranks, letters give way to rank numbers. */
    s = build("ring", DL_COLL_ALL_GATHER, 30, 1, DL_OP_SUM);
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    assert_int_equal(dl_symsim_run(sim, why, sizeof(why)), DL_OK);
    expect_el(sim, 5, DL_BUF_OUT, 29, "r29.0");
    dl_symsim_free(sim);
    dl_sched_free(s);
}

/* A schedule that reads memory nobody wrote is caught, with the step. */
static void broken_schedule(void **state)
{
    (void)state;
    dl_coll_args_t args = {.coll = DL_COLL_ALL_REDUCE, .nranks = 2, .count = 2, .op = DL_OP_SUM};
    dl_sched_t *s = NULL;
    assert_int_equal(dl_sched_build("ring", &args, 4, &s), DL_OK);
    /* Point the first message at TMP, which nothing wrote. */
    s->tmp_count = 2;
    s->actions[s->steps[0].first].src.buf = DL_BUF_TMP;
    dl_symsim_t *sim = NULL;
    char why[256];
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    assert_int_equal(dl_symsim_step(sim, why, sizeof(why)), DL_ERR_INVALID);
    assert_non_null(strstr(why, "step 1"));
    assert_int_equal(dl_symsim_steps_run(sim), 0);
    dl_symsim_free(sim);
    dl_sched_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_step_by_step),
        cmocka_unit_test(chain_reduce_step_by_step),
        cmocka_unit_test(formats),
        cmocka_unit_test(broken_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
