/* The one wait loop (core/comm/wait.c) over a fake backend: work that
 * completes after a number of progress passes, work that never does (the
 * deadline), Ctrl-C, a world that fails its health check, the sleep hook
 * taking over once the spinning is over, and the pass between arming and
 * sleeping that finds what came before the arm. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "comm/internal.h"

typedef struct {
    int passes_left; /* progress passes until the work completes; < 0: never */
    int progress_calls;
    int sleeps;
    int arms, armed;  /* wait_arm calls; arms not yet disarmed */
    bool done_on_arm; /* the work completes on the first pass after an arm */
    int give_ups;
    dl_status_t gave_up_with;
    dl_status_t fail_check; /* what the periodic check reports */
    double spin_s;
} fake_t;

static fake_t fake;

static dl_status_t fake_progress(dl_work_t *w)
{
    (void)w;
    fake.progress_calls++;
    if (fake.done_on_arm && fake.armed > 0)
        return DL_OK;
    if (fake.passes_left < 0)
        return DL_ERR_AGAIN;
    return --fake.passes_left <= 0 ? DL_OK : DL_ERR_AGAIN;
}

static void fake_plan(dl_comm_t *comm, dl_wait_plan_t *plan)
{
    (void)comm;
    plan->spin_s = fake.spin_s;
    plan->spin_yield = true;
    plan->check_s = 0.01;
}

static uint32_t fake_arm(dl_comm_t *comm)
{
    (void)comm;
    fake.arms++;
    fake.armed++;
    return 0;
}

static void fake_disarm(dl_comm_t *comm)
{
    (void)comm;
    assert_true(fake.armed > 0);
    fake.armed--;
}

static bool fake_sleep(dl_comm_t *comm, uint32_t seen, int max_ms)
{
    (void)comm;
    (void)seen;
    assert_true(max_ms >= 1 && max_ms <= 10); /* capped by the check period */
    assert_int_equal(fake.armed, 1);          /* only ever armed */
    fake.sleeps++;
    return false;
}

static dl_status_t fake_check(dl_comm_t *comm, bool periodic, char *why, size_t cap)
{
    (void)comm;
    if (!periodic || fake.fail_check == DL_OK)
        return DL_OK;
    snprintf(why, cap, "a peer went away");
    return fake.fail_check;
}

static void fake_give_up(dl_comm_t *comm, dl_work_t *waited, dl_status_t st, const char *why,
                         double timeout_s)
{
    (void)waited;
    (void)why;
    (void)timeout_s;
    fake.give_ups++;
    fake.gave_up_with = st;
    while (comm->world->active != NULL)
        dl__work_finish(comm->world->active, st);
}

static const dl_backend_ops_t fake_ops = {
    .name = "fake",
    .progress = fake_progress,
    .wait_plan = fake_plan,
    .wait_arm = fake_arm,
    .wait_sleep = fake_sleep,
    .wait_disarm = fake_disarm,
    .wait_check = fake_check,
    .wait_give_up = fake_give_up,
};

typedef struct {
    dl_world_t world;
    dl_comm_t comm;
} fixture_t;

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof(*fx));
    fx->comm.world = &fx->world;
    fx->comm.is_world = true;
    fx->comm.size = 1;
    fx->comm.timeout_s = 5;
    fx->comm.ops = &fake_ops;
    fake = (fake_t){.spin_s = 1e-3};
    dl_comm_interrupt_clear();
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    free(*state);
    return 0;
}

static dl_work_t *start(fixture_t *fx)
{
    dl_work_t *w = dl__work_new(&fx->comm, "fake work");
    assert_non_null(w);
    dl__world_add_active(&fx->world, w);
    return w;
}

static void test_completes_after_passes(void **state)
{
    fixture_t *fx = *state;
    fake.passes_left = 50;
    dl_work_t *w = start(fx);
    assert_int_equal(dl_work_wait(w, 5), DL_OK);
    assert_int_equal(fake.progress_calls, 50);
    assert_int_equal(fake.give_ups, 0);
    assert_null(fx->world.active);
    dl_work_free(w);
}

static void test_pending_status_is_again(void **state)
{
    fixture_t *fx = *state;
    fake.passes_left = 2;
    dl_work_t *w = start(fx);
    assert_false(dl_work_test(w));
    assert_int_equal(dl_work_status(w), DL_ERR_AGAIN);
    assert_true(dl_work_test(w));
    assert_int_equal(dl_work_status(w), DL_OK);
    dl_work_free(w);
}

static void test_never_completes_times_out(void **state)
{
    fixture_t *fx = *state;
    fake.passes_left = -1;
    dl_work_t *w = start(fx);
    assert_int_equal(dl_work_wait(w, 0.05), DL_ERR_TIMEOUT);
    assert_int_equal(fake.give_ups, 1);
    assert_int_equal(fake.gave_up_with, DL_ERR_TIMEOUT);
    /* Spinning first, then sleeping through the backend's hook, armed
     * for each sleep and disarmed after it. */
    assert_true(fake.sleeps > 0);
    assert_int_equal(fake.arms, fake.sleeps);
    assert_int_equal(fake.armed, 0);
    dl_work_free(w);
}

/* What a peer did before the arm (no wake-up will come for it) is found by
 * the pass after the arm: the loop does not sleep, and disarms. */
static void test_pass_after_arm_finds_work(void **state)
{
    fixture_t *fx = *state;
    fake.passes_left = -1;
    fake.done_on_arm = true;
    dl_work_t *w = start(fx);
    assert_int_equal(dl_work_wait(w, 5), DL_OK);
    assert_int_equal(fake.arms, 1);
    assert_int_equal(fake.sleeps, 0);
    assert_int_equal(fake.armed, 0);
    dl_work_free(w);
}

static void test_interrupt_aborts(void **state)
{
    fixture_t *fx = *state;
    fake.passes_left = -1;
    dl_work_t *w = start(fx);
    dl_comm_interrupt_from_signal();
    assert_int_equal(dl_work_wait(w, 5), DL_ERR_ABORTED);
    assert_int_equal(fake.gave_up_with, DL_ERR_ABORTED);
    assert_int_equal(fake.progress_calls, 1); /* one pass, then the interrupt */
    dl_work_free(w);
}

static void test_failed_world_fails_work(void **state)
{
    fixture_t *fx = *state;
    fake.passes_left = -1;
    fake.fail_check = DL_ERR_PEER_DEAD;
    dl_work_t *w = start(fx);
    assert_int_equal(dl_work_wait(w, 5), DL_ERR_PEER_DEAD);
    assert_int_equal(fake.gave_up_with, DL_ERR_PEER_DEAD);
    dl_work_free(w);
}

/* A handle made finished: its wait returns its status at once, with no
 * pass of the backend, and it frees as any other. */
static void test_finished_handle(void **state)
{
    fixture_t *fx = *state;
    (void)fx;
    fake.passes_left = -1;
    dl_work_t *w = dl_work_finished(NULL, DL_ERR_MISMATCH);
    assert_non_null(w);
    assert_true(dl_work_test(w));
    assert_int_equal(dl_work_status(w), DL_ERR_MISMATCH);
    assert_int_equal(dl_work_wait(w, 5), DL_ERR_MISMATCH);
    assert_int_equal(fake.progress_calls, 0);
    dl_work_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_completes_after_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_status_is_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_never_completes_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pass_after_arm_finds_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_aborts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_world_fails_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finished_handle, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
