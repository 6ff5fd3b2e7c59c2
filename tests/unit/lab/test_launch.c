/* lab/ctrl/launch.c and the controller's side of launchers: the registry by
 * name, which launcher the options call for, and a world whose ranks come
 * from two fake launchers (the main one and a workers one), so that every
 * op is seen to be called for the right ranks without starting a process. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lab/ctrl/controller.h"
#include "lab/ctrl/launch.h"

/* ---- the registry ---- */

static void test_builtin_launchers(void **state)
{
    (void)state;
    const char *names[] = {"local", "mpirun", "attach"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const lab_launcher_ops_t *ops = lab_launcher_find(names[i]);
        assert_non_null(ops);
        assert_string_equal(ops->name, names[i]);
        assert_non_null(ops->start);
        assert_non_null(ops->kill);
        assert_non_null(ops->all_exited);
        assert_non_null(ops->close);
    }
    assert_null(lab_launcher_find("remote")); /* registered by its own room */
    assert_null(lab_launcher_find("slurm"));
    /* Only mpirun starts the whole world and learns where ranks landed. */
    assert_true(lab_launcher_find("mpirun")->whole_world);
    assert_true(lab_launcher_find("mpirun")->ranks_say_host);
    assert_false(lab_launcher_find("local")->whole_world);
    assert_false(lab_launcher_find("attach")->whole_world);
}

static void test_launcher_name(void **state)
{
    (void)state;
    lab_launch_opts_t o = {.np = 4};
    assert_string_equal(lab_launch_launcher_name(&o), "local");
    o.backend = "builtin";
    assert_string_equal(lab_launch_launcher_name(&o), "local");
    o.backend = "nccl";
    assert_string_equal(lab_launch_launcher_name(&o), "local");
    o.backend = "mpi";
    assert_string_equal(lab_launch_launcher_name(&o), "mpirun");
    /* The user's launcher started them, whatever the backend. */
    o.attach = true;
    assert_string_equal(lab_launch_launcher_name(&o), "attach");
}

static dl_status_t start_nothing(void *self, lab_ctrl_t *c, const lab_launch_world_t *w,
                                 void **state_p)
{
    (void)self, (void)c, (void)w, (void)state_p;
    return DL_OK;
}

static void test_register(void **state)
{
    (void)state;
    static const lab_launcher_ops_t a = {.name = "test-a", .start = start_nothing};
    static const lab_launcher_ops_t a2 = {.name = "test-a", .start = start_nothing};
    static const lab_launcher_ops_t nameless = {.start = start_nothing};
    static const lab_launcher_ops_t no_start = {.name = "test-b"};
    assert_int_equal(lab_launcher_register(&a), DL_OK);
    assert_ptr_equal(lab_launcher_find("test-a"), &a);
    /* The same name again replaces it, and takes no second slot. */
    assert_int_equal(lab_launcher_register(&a2), DL_OK);
    assert_ptr_equal(lab_launcher_find("test-a"), &a2);
    assert_int_equal(lab_launcher_register(&nameless), DL_ERR_INVALID);
    assert_int_equal(lab_launcher_register(&no_start), DL_ERR_INVALID);
    assert_int_equal(lab_launcher_register(NULL), DL_ERR_INVALID);
    assert_null(lab_launcher_find("test-b"));
    /* The table is bounded: the built-ins and test-a hold 4 slots. */
    static lab_launcher_ops_t more[LAB_LAUNCHERS_MAX];
    static char names[LAB_LAUNCHERS_MAX][16];
    int ok = 0;
    for (int i = 0; i < LAB_LAUNCHERS_MAX; i++) {
        snprintf(names[i], sizeof(names[i]), "test-%d", i);
        more[i] = (lab_launcher_ops_t){.name = names[i], .start = start_nothing};
        ok += lab_launcher_register(&more[i]) == DL_OK;
    }
    assert_int_equal(ok, LAB_LAUNCHERS_MAX - 4);
    assert_non_null(lab_launcher_find("local"));
}

/* ---- a world of fake launchers ---- */

typedef struct {
    const char *name;
    int nranks; /* what its plan says it brings */
    int starts, closes;
    int base, n, world_size;
    int killed_rank, killed_sig, kill_alls;
    bool exited;
    lab_ctrl_t *c;
} fake_t;

static fake_t fake_main = {.name = "local"}, fake_workers = {.name = "workers", .nranks = 1};

static void fake_plan(void *self, const lab_launch_opts_t *opts, lab_launch_plan_t *p)
{
    (void)opts;
    fake_t *f = self != NULL ? self : &fake_main;
    p->nranks = f->nranks;
}

static dl_status_t fake_start(void *self, lab_ctrl_t *c, const lab_launch_world_t *w,
                              void **state_p)
{
    fake_t *f = self != NULL ? self : &fake_main;
    f->starts++;
    f->c = c;
    f->base = w->base;
    f->n = w->n;
    f->world_size = w->env->world_size;
    for (int r = w->base; r < w->base + w->n; r++) {
        if (f == &fake_workers)
            lab_launch_placed(c, r, 1, "hostb");
        lab_launch_started(c, r, 1000 + r);
    }
    *state_p = f;
    return DL_OK;
}

static void fake_kill(void *state, int rank, int sig)
{
    fake_t *f = state;
    f->killed_rank = rank;
    f->killed_sig = sig;
}

static void fake_kill_all(void *state, int sig)
{
    (void)sig;
    ((fake_t *)state)->kill_alls++;
}

static bool fake_all_exited(void *state)
{
    return ((fake_t *)state)->exited;
}

static void fake_close(void *state)
{
    ((fake_t *)state)->closes++;
}

static const lab_launcher_ops_t fake_ops = {
    .name = "local",
    .plan = fake_plan,
    .start = fake_start,
    .kill = fake_kill,
    .kill_all = fake_kill_all,
    .all_exited = fake_all_exited,
    .close = fake_close,
};

typedef struct {
    int exits, last_rank, last_status;
} seen_t;

static void on_exit_cb(lab_ctrl_t *c, int rank, int64_t status, int sig, void *arg)
{
    (void)c, (void)sig;
    seen_t *s = arg;
    s->exits++;
    s->last_rank = rank;
    s->last_status = (int)status;
}

static void test_world_of_launchers(void **state)
{
    (void)state;
    /* A launcher registered under a built-in's name replaces it. */
    assert_int_equal(lab_launcher_register(&fake_ops), DL_OK);
    lab_launcher_t workers = {.ops = &fake_ops, .self = &fake_workers};
    assert_int_equal(lab_launcher_nranks(&workers), 1);
    assert_int_equal(lab_launcher_nranks(NULL), 0);

    uv_loop_t loop;
    uv_loop_init(&loop);
    lab_launch_opts_t o = {.np = 2, .timeout_s = 5, .workers = &workers};
    lab_ctrl_cbs_t cbs = {.on_exit = on_exit_cb};
    seen_t seen = {0};
    lab_ctrl_t *c = NULL;
    assert_int_equal(lab_ctrl_start(&loop, &o, &cbs, &seen, &c), DL_OK);

    /* The main launcher has ranks 0 and 1, the workers' rank 2. */
    assert_int_equal(lab_ctrl_np(c), 3);
    assert_int_equal(fake_main.starts, 1);
    assert_int_equal(fake_main.base, 0);
    assert_int_equal(fake_main.n, 2);
    assert_int_equal(fake_workers.starts, 1);
    assert_int_equal(fake_workers.base, 2);
    assert_int_equal(fake_workers.n, 1);
    assert_int_equal(fake_workers.world_size, 3);
    assert_int_equal(lab_ctrl_rank(c, 1)->pid, 1001);
    char buf[128];
    lab_ctrl_describe_rank(c, 2, buf, sizeof(buf));
    assert_string_equal(buf, "rank 2 (pid 1002 on hostb, worker 1)");

    /* Kills go to the launcher of the rank. */
    lab_ctrl_kill(c, 2, SIGTERM);
    assert_int_equal(fake_workers.killed_rank, 2);
    assert_int_equal(fake_workers.killed_sig, SIGTERM);
    assert_int_equal(fake_main.killed_sig, 0);
    lab_ctrl_kill(c, 0, SIGKILL);
    assert_int_equal(fake_main.killed_rank, 0);
    lab_ctrl_kill_all(c, SIGKILL);
    assert_int_equal(fake_main.kill_alls, 1);
    assert_int_equal(fake_workers.kill_alls, 1);

    /* An exit is told once; a lost rank says how. */
    lab_launch_exited(c, 1, 3, 0, NULL);
    lab_launch_exited(c, 1, 4, 0, NULL);
    assert_int_equal(seen.exits, 1);
    assert_int_equal(seen.last_rank, 1);
    assert_int_equal(seen.last_status, 3);
    lab_launch_exited(c, 2, -1, 0, "connection closed");
    lab_ctrl_describe_rank_exit(c, 2, buf, sizeof(buf));
    assert_string_equal(buf, "was lost with worker 1 on hostb (connection closed)");
    /* A rank that has ended is signalled no more. */
    fake_workers.killed_rank = -1;
    lab_ctrl_kill(c, 2, SIGKILL);
    assert_int_equal(fake_workers.killed_rank, -1);

    /* Every launcher must say its ranks have ended. */
    assert_false(lab_ctrl_all_exited(c));
    fake_main.exited = true;
    assert_false(lab_ctrl_all_exited(c));
    fake_workers.exited = true;
    assert_true(lab_ctrl_all_exited(c));

    lab_ctrl_close(c);
    assert_int_equal(fake_main.closes, 1);
    assert_int_equal(fake_workers.closes, 1);
    assert_int_equal(seen.exits, 2);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_launchers),
        cmocka_unit_test(test_launcher_name),
        cmocka_unit_test(test_register),
        cmocka_unit_test(test_world_of_launchers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
