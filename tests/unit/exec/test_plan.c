/* A rank's plan of a schedule (core/exec/plan.h): for every algorithm,
 * collective and rank, each action that concerns a rank is in its plan
 * once, in the right list and in action order, and none that does not;
 * then a tree's scatter and the share all_reduce as explain shows them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "distlab/coll.h"
#include "distlab/sched.h"
#include "exec/plan.h"

static dl_sched_t *build_op(const char *algo, dl_coll_t c, int n, size_t count, int root,
                            dl_op_t op)
{
    dl_coll_args_t args = {.coll = c, .nranks = n, .count = count, .root = root, .op = op};
    dl_sched_t *s = NULL;
    if (dl_sched_build_on(algo, &args, 4, false, &s) != DL_OK)
        return NULL;
    return s;
}

static dl_sched_t *build(const char *algo, dl_coll_t c, int n, size_t count, int root)
{
    return build_op(algo, c, n, count, root, DL_OP_SUM);
}

/* The lists of step k of p: 0 sends, 1 receives, 2 local actions. */
static void list_of(const dl_exec_plan_t *p, size_t k, int which, const uint32_t **idx_p,
                    uint32_t *n_p)
{
    const dl_exec_plan_step_t *ps = &p->steps[k];
    size_t at = ps->first;
    if (which > 0)
        at += ps->n_sends;
    if (which > 1)
        at += ps->n_recvs;
    *idx_p = &p->idx[at];
    *n_p = which == 0 ? ps->n_sends : which == 1 ? ps->n_recvs : ps->n_locals;
}

/* Which list action a belongs in for rank me, or -1. */
static int list_for(const dl_action_t *a, int me)
{
    if (a->kind == DL_ACT_MSG)
        return a->src_rank == me && a->dst_rank != me ? 0 : a->dst_rank == me ? 1 : -1;
    return a->src_rank == me && a->count > 0 ? 2 : -1;
}

static void check_plan(const dl_sched_t *s, int me)
{
    dl_exec_plan_t *p = dl__exec_plan_new(s, me);
    assert_non_null(p);
    assert_ptr_equal(p->s, s);
    assert_int_equal(p->me, me);
    for (size_t k = 0; k < s->n_steps; k++) {
        const dl_step_t *st = &s->steps[k];
        for (int which = 0; which < 3; which++) {
            const uint32_t *idx;
            uint32_t n, seen = 0;
            list_of(p, k, which, &idx, &n);
            /* The scan the plan replaces, in action order. */
            for (size_t i = st->first; i < st->first + st->n; i++) {
                if (list_for(&s->actions[i], me) != which)
                    continue;
                assert_true(seen < n);
                assert_int_equal(idx[seen], i);
                seen++;
            }
            assert_int_equal(seen, n);
        }
    }
    for (int b = 0; b < DL_BUF__COUNT; b++) {
        assert_int_equal(p->spans[b], dl__exec_sends_span(s, me, (dl_buf_t)b, s->args.count));
        /* Another segment size is counted, not looked up. */
        assert_int_equal(dl__exec_plan_sends_span(p, (dl_buf_t)b, 1),
                         dl__exec_sends_span(s, me, (dl_buf_t)b, 1));
    }
    dl__exec_plan_free(p);
}

static void test_every_algorithm(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 5, 64};
    int built = 0;
    for (const dl_algo_t *const *a = dl_algos(); *a != NULL; a++)
        for (int c = 0; c < DL_COLL__COUNT; c++)
            for (int n = 1; n <= 6 && (*a)->build[c] != NULL; n++)
                for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
                    for (int v = 0; v < 3; v++) {
                        /* root n-1 and 0, and avg (which scales) */
                        dl_sched_t *s =
                            build_op((*a)->name, (dl_coll_t)c, n, counts[i], v == 1 ? 0 : n - 1,
                                     v == 2 ? DL_OP_AVG : DL_OP_SUM);
                        if (s == NULL)
                            continue; /* not for this size */
                        for (int me = 0; me < n; me++)
                            check_plan(s, me);
                        dl_sched_free(s);
                        built++;
                    }
    assert_true(built > 100);
}

/* explain scatter --np 4 --count 2 --algo tree: step 1, r0 sends in[4:8]
 * to r2 and copies its chunk, r2 copies its own from tmp; step 2, r0 sends
 * to r1 and r2 to r3. */
static void test_tree_scatter(void **state)
{
    (void)state;
    dl_sched_t *s = build("tree", DL_COLL_SCATTER, 4, 2, 0);
    assert_non_null(s);
    assert_int_equal(s->n_steps, 2);
    dl_exec_plan_t *r0 = dl__exec_plan_new(s, 0), *r2 = dl__exec_plan_new(s, 2);
    dl_exec_plan_t *r3 = dl__exec_plan_new(s, 3);
    assert_non_null(r0);
    assert_non_null(r2);
    assert_non_null(r3);
    assert_int_equal(r0->steps[0].n_sends, 1);
    assert_int_equal(r0->steps[0].n_recvs, 0);
    assert_int_equal(r0->steps[0].n_locals, 1);
    assert_int_equal(s->actions[r0->idx[r0->steps[0].first]].dst_rank, 2);
    assert_int_equal(r2->steps[0].n_sends, 0);
    assert_int_equal(r2->steps[0].n_recvs, 1);
    assert_int_equal(r2->steps[0].n_locals, 1);
    assert_int_equal(r2->steps[1].n_sends, 1);
    assert_int_equal(r3->steps[0].n_sends + r3->steps[0].n_recvs + r3->steps[0].n_locals, 0);
    assert_int_equal(r3->steps[1].n_recvs, 1);
    /* The root's message to r2 spans two chunks of a list (two tensors):
     * a list given as separate tensors is staged for it. r2 sends from
     * its scratch, not from a list. */
    assert_true(r0->spans[DL_BUF_IN]);
    assert_true(dl__exec_plan_sends_span(r0, DL_BUF_IN, 2));
    assert_false(dl__exec_plan_sends_span(r0, DL_BUF_IN, 4)); /* one segment of 4 holds it */
    assert_false(r2->spans[DL_BUF_IN]);
    assert_int_equal(r0->steps[0].fuse_buf, -1);
    dl__exec_plan_free(r0);
    dl__exec_plan_free(r2);
    dl__exec_plan_free(r3);
    dl_sched_free(s);
}

/* share (all_reduce): each rank sums its share from every peer and writes
 * it back: a fused step, on the input buffer; avg scales it. */
static void test_share_fuses(void **state)
{
    (void)state;
    for (int avg = 0; avg < 2; avg++) {
        dl_coll_args_t args = {.coll = DL_COLL_ALL_REDUCE,
                               .nranks = 3,
                               .count = 12,
                               .op = avg ? DL_OP_AVG : DL_OP_SUM};
        dl_sched_t *s = NULL;
        assert_int_equal(dl_sched_build_on("share", &args, 4, false, &s), DL_OK);
        for (int me = 0; me < 3; me++) {
            dl_exec_plan_t *p = dl__exec_plan_new(s, me);
            assert_non_null(p);
            assert_int_equal(p->steps[0].n_sends, 2);
            assert_int_equal(p->steps[0].n_recvs, 2);
            assert_int_equal(p->steps[0].fuse_buf, DL_BUF_IN);
            assert_int_equal(p->steps[0].fuse_scale, avg == 1);
            dl__exec_plan_free(p);
        }
        dl_sched_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_algorithm),
        cmocka_unit_test(test_tree_scatter),
        cmocka_unit_test(test_share_fuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
