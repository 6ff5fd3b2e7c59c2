/* lab/elastic/rendezvous.c: the flags' parsers, and the rendezvous rounds
 * between agents that are threads of this process, on a real store (the
 * first agent hosts it on a free port): node ranks in arrival order, the
 * world and rank bases from each node's workers, a failure that ends the
 * round and counts a restart, every node done, a latecomer that makes the
 * running round grow, a member whose keep-alives stop, the join timeout
 * and a mismatched run id. No process is started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "lab/elastic/rendezvous.h"

/* ---- the flags ---- */

static void test_parse(void **state)
{
    (void)state;
    char why[256], host[64];
    int lo, hi, port;
    assert_true(lab_rdzv_parse_nnodes("3", &lo, &hi, why, sizeof(why)));
    assert_int_equal(lo, 3);
    assert_int_equal(hi, 3);
    assert_true(lab_rdzv_parse_nnodes("1:4", &lo, &hi, why, sizeof(why)));
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 4);
    const char *bad_nnodes[] = {"", "0", "4:1", "1:", ":2", "a", "1:2:3", "1:100000"};
    for (size_t i = 0; i < sizeof(bad_nnodes) / sizeof(bad_nnodes[0]); i++) {
        assert_false(lab_rdzv_parse_nnodes(bad_nnodes[i], &lo, &hi, why, sizeof(why)));
        assert_non_null(strstr(why, "--nnodes takes N or MIN:MAX"));
    }

    assert_true(lab_rdzv_parse_endpoint("node0:1234", host, sizeof(host), &port, why, sizeof(why)));
    assert_string_equal(host, "node0");
    assert_int_equal(port, 1234);
    assert_true(lab_rdzv_parse_endpoint("10.0.0.1", host, sizeof(host), &port, why, sizeof(why)));
    assert_string_equal(host, "10.0.0.1");
    assert_int_equal(port, LAB_RDZV_DEFAULT_PORT);
    assert_true(lab_rdzv_parse_endpoint("[::1]:99", host, sizeof(host), &port, why, sizeof(why)));
    assert_string_equal(host, "::1");
    assert_int_equal(port, 99);
    const char *bad_ep[] = {"", ":80", "h:0", "h:70000", "h:x", "[::1", "[::1]x"};
    for (size_t i = 0; i < sizeof(bad_ep) / sizeof(bad_ep[0]); i++)
        assert_false(
            lab_rdzv_parse_endpoint(bad_ep[i], host, sizeof(host), &port, why, sizeof(why)));

    lab_rdzv_conf_t c;
    lab_rdzv_conf_init(&c);
    assert_true(c.join_timeout_s == 600 && c.last_call_timeout_s == 1);
    assert_true(lab_rdzv_conf_parse(
        &c, "join_timeout=5,last_call_timeout=0.5,keep_alive_interval=0.2,keep_alive_max_attempt=4",
        why, sizeof(why)));
    assert_true(c.join_timeout_s == 5 && c.last_call_timeout_s == 0.5);
    assert_true(c.keep_alive_interval_s == 0.2 && c.keep_alive_max_attempt == 4);
    assert_false(lab_rdzv_conf_parse(&c, "join_timeout=-1", why, sizeof(why)));
    assert_false(lab_rdzv_conf_parse(&c, "bogus=1", why, sizeof(why)));
    assert_non_null(strstr(why, "unknown --rdzv-conf key 'bogus'"));
    assert_false(lab_rdzv_conf_parse(&c, "join_timeout", why, sizeof(why)));

    assert_true(lab_rdzv_check_id("job-1.a_b", why, sizeof(why)));
    assert_false(lab_rdzv_check_id("a/b", why, sizeof(why)));
    assert_false(lab_rdzv_check_id("", why, sizeof(why)));
}

/* ---- agents as threads ---- */

static bool nap(void *arg, int ms)
{
    (void)arg;
    uv_sleep((unsigned)ms);
    return true;
}

static lab_rdzv_opts_t opts(int port, int min, int max, int nproc)
{
    lab_rdzv_opts_t o = {
        .run_id = "unit",
        .host = "127.0.0.1",
        .port = port,
        .min_nodes = min,
        .max_nodes = max,
        .nproc = nproc,
        .max_restarts = 5,
        .wait = nap,
    };
    lab_rdzv_conf_init(&o.conf);
    o.conf.join_timeout_s = 10;
    o.conf.last_call_timeout_s = 0.05;
    o.conf.keep_alive_interval_s = 0.05;
    o.conf.keep_alive_max_attempt = 2;
    return o;
}

static lab_rdzv_t *open_agent(const lab_rdzv_opts_t *o)
{
    lab_rdzv_t *rz = NULL;
    char why[512] = "";
    dl_status_t st = lab_rdzv_open(o, &rz, why, sizeof(why));
    if (st != DL_OK)
        fail_msg("open: %s", why);
    return rz;
}

static int port_of(const lab_rdzv_t *rz)
{
    return atoi(strrchr(lab_rdzv_endpoint(rz), ':') + 1);
}

typedef struct {
    lab_rdzv_t *rz;
    dl_status_t st;
    lab_rdzv_round_t round;
    uv_thread_t thread;
} joiner_t;

static void join_main(void *arg)
{
    joiner_t *j = arg;
    const lab_rdzv_round_t *r = NULL;
    j->st = lab_rdzv_next_round(j->rz, &r);
    if (j->st == DL_OK)
        j->round = *r;
}

static void join_start(joiner_t *j, lab_rdzv_t *rz)
{
    j->rz = rz;
    assert_int_equal(uv_thread_create(&j->thread, join_main, j), 0);
}

static void join_end(joiner_t *j)
{
    uv_thread_join(&j->thread);
    if (j->st != DL_OK)
        fail_msg("next round: %s", lab_rdzv_error(j->rz));
}

/* Polls until the round's event is not RUNNING (or a few seconds). */
static lab_rdzv_event_t poll_until(lab_rdzv_t *rz, const lab_rdzv_node_t **lost_p)
{
    lab_rdzv_event_t ev = LAB_RDZV_RUNNING;
    for (int i = 0; i < 400 && ev == LAB_RDZV_RUNNING; i++) {
        assert_int_equal(lab_rdzv_poll(rz, &ev, lost_p), DL_OK);
        if (ev == LAB_RDZV_RUNNING)
            uv_sleep(10);
    }
    return ev;
}

static void test_fixed_world(void **state)
{
    (void)state;
    lab_rdzv_opts_t o1 = opts(0, 2, 2, 2);
    lab_rdzv_t *a = open_agent(&o1);
    assert_true(lab_rdzv_is_host(a));
    lab_rdzv_opts_t o2 = opts(port_of(a), 2, 2, 3);
    lab_rdzv_t *b = open_agent(&o2);
    assert_false(lab_rdzv_is_host(b));
    assert_int_equal(lab_rdzv_arrival(a), 1);
    assert_int_equal(lab_rdzv_arrival(b), 2);

    /* Round 0: node ranks in arrival order, the world from 2 + 3 workers. */
    joiner_t ja, jb;
    join_start(&jb, b);
    join_start(&ja, a);
    join_end(&ja);
    join_end(&jb);
    assert_int_equal(ja.round.round, 0);
    assert_int_equal(jb.round.round, 0);
    assert_int_equal(ja.round.nnodes, 2);
    assert_int_equal(ja.round.node_rank, 0);
    assert_int_equal(jb.round.node_rank, 1);
    assert_int_equal(ja.round.world_size, 5);
    assert_int_equal(jb.round.world_size, 5);
    assert_int_equal(ja.round.rank_base, 0);
    assert_int_equal(jb.round.rank_base, 2);
    assert_int_equal(ja.round.nodes[0].port, jb.round.nodes[0].port);
    assert_int_equal(ja.round.restart_count, 0);
    assert_int_equal(ja.round.max_restarts, 5);
    int port0 = ja.round.nodes[0].port;

    /* B's worker fails: A sees it, and the first failure is B's record. */
    lab_rdzv_failure_t f = {.round = 0,
                            .node_rank = 1,
                            .local_rank = 0,
                            .rank = 2,
                            .pid = 4242,
                            .exit_code = 3,
                            .host = "b",
                            .time = "now"};
    assert_int_equal(lab_rdzv_report_failure(b, &f), DL_OK);
    const lab_rdzv_node_t *lost;
    assert_int_equal(poll_until(a, &lost), LAB_RDZV_FAIL);
    lab_rdzv_failure_t got;
    assert_int_equal(lab_rdzv_first_failure(a, &got), DL_OK);
    assert_int_equal(got.pid, 4242);
    assert_int_equal(got.rank, 2);
    assert_int_equal(got.exit_code, 3);
    assert_string_equal(got.host, "b");

    /* Round 1: the restart is counted, and node 0 offers a fresh port. */
    join_start(&ja, a);
    join_start(&jb, b);
    join_end(&ja);
    join_end(&jb);
    assert_int_equal(ja.round.round, 1);
    assert_int_equal(ja.round.restart_count, 1);
    assert_int_equal(jb.round.restart_count, 1);
    assert_int_not_equal(ja.round.nodes[0].port, port0);

    /* Done only when every node is. */
    assert_int_equal(lab_rdzv_mark_done(a), DL_OK);
    lab_rdzv_event_t ev;
    assert_int_equal(lab_rdzv_poll(a, &ev, &lost), DL_OK);
    assert_int_equal(ev, LAB_RDZV_RUNNING);
    assert_int_equal(lab_rdzv_mark_done(b), DL_OK);
    assert_int_equal(poll_until(a, &lost), LAB_RDZV_DONE);
    assert_int_equal(poll_until(b, &lost), LAB_RDZV_DONE);
    lab_rdzv_end_run(a, false, NULL);
    lab_rdzv_close(b);
    lab_rdzv_close(a);
}

static void test_grow_and_lose(void **state)
{
    (void)state;
    lab_rdzv_opts_t o1 = opts(0, 1, 2, 1);
    lab_rdzv_t *a = open_agent(&o1);
    joiner_t ja, jb;
    /* Alone: the round closes after the last call. */
    join_start(&ja, a);
    join_end(&ja);
    assert_int_equal(ja.round.nnodes, 1);
    assert_int_equal(ja.round.world_size, 1);

    /* A latecomer asks the running round for room: A sees GROW. */
    lab_rdzv_opts_t o2 = opts(port_of(a), 1, 2, 1);
    lab_rdzv_t *b = open_agent(&o2);
    join_start(&jb, b);
    const lab_rdzv_node_t *lost;
    assert_int_equal(poll_until(a, &lost), LAB_RDZV_GROW);
    join_start(&ja, a);
    join_end(&ja);
    join_end(&jb);
    assert_int_equal(ja.round.round, 1);
    assert_int_equal(ja.round.nnodes, 2);
    assert_int_equal(jb.round.node_rank, 1);
    assert_int_equal(ja.round.restart_count, 0);

    /* B goes silent (no more keep-alives): A finds it lost, and the next
     * round does not wait for it. */
    assert_int_equal(poll_until(a, &lost), LAB_RDZV_LOST);
    assert_non_null(lost);
    assert_int_equal(lost->arrival, lab_rdzv_arrival(b));
    join_start(&ja, a);
    join_end(&ja);
    assert_int_equal(ja.round.round, 2);
    assert_int_equal(ja.round.nnodes, 1);
    assert_int_equal(ja.round.restart_count, 0);
    lab_rdzv_close(b);
    lab_rdzv_close(a);
}

static void test_timeout_and_mismatch(void **state)
{
    (void)state;
    lab_rdzv_opts_t o1 = opts(0, 2, 2, 1);
    o1.conf.join_timeout_s = 0.3;
    lab_rdzv_t *a = open_agent(&o1);
    const lab_rdzv_round_t *r;
    assert_int_equal(lab_rdzv_next_round(a, &r), DL_ERR_TIMEOUT);
    assert_non_null(strstr(lab_rdzv_error(a), "timed out after 0.3 s (join_timeout): 1 of at "
                                              "least 2 nodes joined"));

    lab_rdzv_opts_t o2 = opts(port_of(a), 2, 2, 1);
    o2.run_id = "other";
    lab_rdzv_t *b = NULL;
    char why[512];
    assert_int_equal(lab_rdzv_open(&o2, &b, why, sizeof(why)), DL_ERR_MISMATCH);
    assert_null(b);
    assert_non_null(strstr(why, "is run 'unit', not 'other' (--rdzv-id)"));
    lab_rdzv_close(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_fixed_world),
        cmocka_unit_test(test_grow_and_lose),
        cmocka_unit_test(test_timeout_and_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
