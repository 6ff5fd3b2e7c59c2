/* The step board (core/exec/board.c): each step begun is counted, the last
 * one is read whole, and a reader that keeps finding its writer at work
 * gives up rather than read a torn position. (The liveness tests of
 * tests/integration/test_failure.py read it through the beats of ranks
 * stopped in a benchmark.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/comm.h"
#include "exec/board.h"

static const char *const reduce = "reduce", *const share = "share";

static void test_counts_and_position(void **state)
{
    (void)state;
    dl_step_board_t b = {0};
    dl_step_pos_t at;
    assert_true(dl_step_board_read(&b, &at));
    assert_int_equal(at.begun, 0);
    assert_int_equal(at.n_steps, 0); /* no step yet */

    dl__step_board_note(&b, DL_COLL_ALL_REDUCE, 1, 2, reduce);
    dl__step_board_note(&b, DL_COLL_ALL_REDUCE, 2, 2, share);
    assert_true(dl_step_board_read(&b, &at));
    assert_int_equal(at.begun, 2);
    assert_int_equal(at.coll, DL_COLL_ALL_REDUCE);
    assert_int_equal(at.step, 2);
    assert_int_equal(at.n_steps, 2);
    assert_ptr_equal(at.phase, share);

    /* The same position again: counted, not written (the sequence count
     * stays), and read as it was. */
    uint32_t seq = atomic_load(&b.seq);
    dl__step_board_note(&b, DL_COLL_ALL_REDUCE, 2, 2, share);
    assert_int_equal(atomic_load(&b.seq), seq);
    assert_true(dl_step_board_read(&b, &at));
    assert_int_equal(at.begun, 3);
    assert_int_equal(at.step, 2);

    /* Another collective of as many steps is written. */
    dl__step_board_note(&b, DL_COLL_BROADCAST, 2, 2, share);
    assert_true(dl_step_board_read(&b, &at));
    assert_int_equal(at.coll, DL_COLL_BROADCAST);
    assert_int_equal(atomic_load(&b.seq), seq + 2);
}

static void test_writer_at_work(void **state)
{
    (void)state;
    dl_step_board_t b = {0};
    dl__step_board_note(&b, DL_COLL_GATHER, 1, 1, reduce);
    atomic_store(&b.seq, atomic_load(&b.seq) + 1); /* as if the writer stopped halfway */
    dl_step_pos_t at;
    assert_false(dl_step_board_read(&b, &at));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_position),
        cmocka_unit_test(test_writer_at_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
