/* The shell's matcher, step marks and command dispatch, without ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lab/lang/lang.h"
#include "lab/session/match.h"
#include "lab/session/p2p.h"
#include "lab/session/stepper.h"
#include "lab/shell/shell_internal.h"

typedef struct {
    int ok[8], refused[8]; /* verdicts per rank */
    int reports;
    char last_report[4096];
} seen_t;

static void on_verdict(void *arg, int rank, bool ok, const char *message)
{
    seen_t *s = arg;
    (void)message;
    if (ok)
        s->ok[rank]++;
    else
        s->refused[rank]++;
}

static void on_report(void *arg, const char *text)
{
    seen_t *s = arg;
    s->reports++;
    snprintf(s->last_report, sizeof(s->last_report), "%s", text);
}

static json_t *fp(const char *coll, const char *group, int seq, int count, const char *op)
{
    json_t *g = json_loads(group, 0, NULL);
    json_t *j = json_pack("{s:s, s:i, s:i, s:o, s:s, s:s, s:i, s:i}", "type", "coll", "ctx",
                          json_array_size(g) == 4 ? 0 : 1, "seq", seq, "group", g, "coll", coll,
                          "dtype", "float32", "count", count, "root", -1);
    if (op != NULL)
        json_object_set_new(j, "op", json_string(op));
    return j;
}

static void post(lab_match_t *m, int rank, json_t *j)
{
    assert_int_equal(lab_match_post(m, rank, j), DL_OK);
    json_decref(j);
}

static void decide(lab_match_t *m, const lab_rank_state_t *st, seen_t *s)
{
    lab_match_cbs_t cbs = {on_verdict, on_report, s};
    lab_match_decide(m, st, false, &cbs);
}

static void decide_patiently(lab_match_t *m, const lab_rank_state_t *st, seen_t *s)
{
    lab_match_cbs_t cbs = {on_verdict, on_report, s};
    lab_match_decide(m, st, true, &cbs);
}

/* Ranks 0 and 1 call a world collective that rank 2 never will: reported
 * once, naming both callers, however their calls interleave. */
static void test_never_reported_once(void **state)
{
    (void)state;
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[3] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING, LAB_RANK_IDLE};
    assert_int_equal(lab_match_init(&m, 3), DL_OK);
    post(&m, 0, fp("all_reduce", "[0,1,2]", 0, 4, "sum"));
    /* Patient: rank 1 is still running and may be about to call it. */
    decide_patiently(&m, st, &s);
    assert_int_equal(s.reports, 0);
    assert_true(lab_match_waits_on_running(&m, st));
    post(&m, 1, fp("all_reduce", "[0,1,2]", 0, 4, "sum"));
    decide_patiently(&m, st, &s);
    assert_int_equal(s.reports, 1);
    assert_int_equal(s.refused[0], 1);
    assert_int_equal(s.refused[1], 1);
    assert_non_null(strstr(s.last_report, "rank 1   all_reduce float32[4] op=sum"));
    assert_null(strstr(s.last_report, "still running"));
    lab_match_fini(&m);

    /* Impatient (rank 1 took too long): refused without it, and when rank
     * 1 calls it after all it is refused quietly, with no second report. */
    memset(&s, 0, sizeof(s));
    assert_int_equal(lab_match_init(&m, 3), DL_OK);
    post(&m, 0, fp("all_reduce", "[0,1,2]", 0, 4, "sum"));
    decide(&m, st, &s);
    assert_int_equal(s.reports, 1);
    assert_non_null(strstr(s.last_report, "rank 1   still running other statements"));
    post(&m, 1, fp("all_reduce", "[0,1,2]", 0, 4, "sum"));
    decide(&m, st, &s);
    assert_int_equal(s.reports, 1);
    assert_int_equal(s.refused[1], 1);
    assert_false(lab_match_pending(&m));
    /* The line is over: the same sequence number is a new collective. */
    lab_match_clear_refusals(&m);
    lab_rank_state_t all[3] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING, LAB_RANK_RUNNING};
    for (int r = 0; r < 3; r++)
        post(&m, r, fp("all_reduce", "[0,1,2]", 0, 4, "sum"));
    decide(&m, all, &s);
    for (int r = 0; r < 3; r++)
        assert_int_equal(s.ok[r], 1);
    lab_match_fini(&m);
}

static json_t *split_fp(const char *send, const char *recv)
{
    json_t *j = fp("all_to_all", "[0,1,2]", 0, 0, NULL);
    json_object_set_new(j, "split", json_true());
    json_object_set_new(j, "send", json_loads(send, 0, NULL));
    json_object_set_new(j, "recv", json_loads(recv, 0, NULL));
    return j;
}

/* An all_to_all with split sizes: what each rank sends must be what its
 * peer expects, or every rank is refused before anything moves, with the
 * pairs that disagree named. */
static void test_split_sizes_pair_up(void **state)
{
    (void)state;
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[3] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING, LAB_RANK_RUNNING};
    assert_int_equal(lab_match_init(&m, 3), DL_OK);
    post(&m, 0, split_fp("[1,1,1]", "[1,1,1]"));
    post(&m, 1, split_fp("[1,1,2]", "[1,1,1]"));
    post(&m, 2, split_fp("[1,1,1]", "[1,1,1]"));
    decide(&m, st, &s);
    assert_int_equal(s.reports, 1);
    for (int r = 0; r < 3; r++)
        assert_int_equal(s.refused[r], 1);
    assert_non_null(strstr(s.last_report, "the split sizes do not pair up; nothing was sent"));
    assert_non_null(strstr(s.last_report, "rank 1 sends 2 elements to rank 2, which expects 1"));
    assert_null(strstr(s.last_report, "rank 0 sends"));
    assert_false(lab_match_pending(&m));

    /* Uneven but paired: rank 0 sends 2 to rank 1, which expects 2. */
    memset(&s, 0, sizeof(s));
    post(&m, 0, split_fp("[1,2,0]", "[1,1,1]"));
    post(&m, 1, split_fp("[1,1,1]", "[2,1,1]"));
    post(&m, 2, split_fp("[1,1,1]", "[0,1,1]"));
    decide(&m, st, &s);
    assert_int_equal(s.reports, 0);
    for (int r = 0; r < 3; r++)
        assert_int_equal(s.ok[r], 1);

    /* A list of sizes that is not one per rank is a malformed event. */
    json_t *j = split_fp("[1,1]", "[1,1,1]");
    assert_int_equal(lab_match_post(&m, 0, j), DL_ERR_PROTOCOL);
    json_decref(j);
    lab_match_fini(&m);
}

static void p2p_post(lab_p2p_t *p, int rank, const char *op, int peer, int tag, bool blocking)
{
    json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:b}", "type", "p2p", "op", op, "peer", peer, "tag",
                          tag, "blocking", blocking);
    assert_int_equal(lab_p2p_post(p, rank, j), DL_OK);
    json_decref(j);
}

static void p2p_post_bytes(lab_p2p_t *p, int rank, const char *op, int peer, long long bytes)
{
    json_t *j =
        json_pack("{s:s, s:s, s:i, s:i, s:b, s:b, s:I}", "type", "p2p", "op", op, "peer", peer,
                  "tag", 0, "blocking", false, "async", true, "bytes", (json_int_t)bytes);
    assert_int_equal(lab_p2p_post(p, rank, j), DL_OK);
    json_decref(j);
}

/* Each rank's sends and their bytes are counted for the world, whatever
 * the log keeps: recvs count for nothing, a send of unknown size counts as
 * a message of no bytes. */
static void test_p2p_sent_counts(void **state)
{
    (void)state;
    lab_p2p_t p;
    assert_int_equal(lab_p2p_init(&p, 3), DL_OK);
    for (int i = 0; i < LAB_P2P_LOG_MAX + 50; i++) {
        p2p_post_bytes(&p, 0, "send", 1, 8);
        p2p_post_bytes(&p, 1, "recv", 0, 8);
    }
    p2p_post_bytes(&p, 2, "send", 0, 32);
    p2p_post(&p, 2, "send", 1, 0, false); /* no bytes said */
    assert_int_equal(p.sent[0], LAB_P2P_LOG_MAX + 50);
    assert_int_equal(p.sent_bytes[0], 8 * (LAB_P2P_LOG_MAX + 50));
    assert_int_equal(p.sent[1], 0);
    assert_int_equal(p.sent_bytes[1], 0);
    assert_int_equal(p.sent[2], 2);
    assert_int_equal(p.sent_bytes[2], 32);
    lab_p2p_fini(&p);
    assert_null(p.sent);
}

/* The send/recv ledger: matching in order, across lines, and a blocking
 * recv whose sender has nothing left to run found hopeless. */
static void test_p2p_ledger(void **state)
{
    (void)state;
    lab_p2p_t p;
    char why[256];
    lab_rank_state_t busy[3] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING, LAB_RANK_RUNNING};
    lab_rank_state_t idle1[3] = {LAB_RANK_RUNNING, LAB_RANK_IDLE, LAB_RANK_RUNNING};
    lab_rank_state_t idle12[3] = {LAB_RANK_RUNNING, LAB_RANK_IDLE, LAB_RANK_DEAD};
    assert_int_equal(lab_p2p_init(&p, 3), DL_OK);
    /* A send waits for its recv, even on a later line. */
    p2p_post(&p, 1, "send", 0, 0, false);
    p2p_post(&p, 0, "recv", 1, 0, true);
    assert_int_equal(lab_p2p_hopeless(&p, idle1, why, sizeof(why)), -1);
    /* A recv with no send, the sender still running: it may yet send. */
    p2p_post(&p, 0, "recv", 1, 7, true);
    assert_int_equal(lab_p2p_hopeless(&p, busy, why, sizeof(why)), -1);
    /* Another tag does not match it. */
    p2p_post(&p, 1, "send", 0, 8, false);
    assert_int_equal(lab_p2p_hopeless(&p, idle1, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "recv from rank 1 (tag 7) can never complete"));
    assert_int_equal(lab_p2p_hopeless(&p, idle1, why, sizeof(why)), -1); /* reported once */
    /* From any source: hopeless only when no other rank can send. */
    p2p_post(&p, 0, "recv", -1, 9, true);
    assert_int_equal(lab_p2p_hopeless(&p, idle1, why, sizeof(why)), -1);
    assert_int_equal(lab_p2p_hopeless(&p, idle12, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "from any rank (tag 9)"));
    /* A finished statement's blocking recv no longer waits; an irecv is
     * never hopeless by itself (its rank goes on). */
    p2p_post(&p, 2, "recv", 1, 0, true);
    lab_p2p_done(&p, 2, false);
    p2p_post(&p, 2, "recv", 1, 1, false);
    assert_int_equal(lab_p2p_hopeless(&p, idle1, why, sizeof(why)), -1);
    /* Malformed events. */
    json_t *j = json_pack("{s:s, s:s, s:i}", "type", "p2p", "op", "send", "peer", 5);
    assert_int_equal(lab_p2p_post(&p, 0, j), DL_ERR_PROTOCOL);
    json_decref(j);
    lab_p2p_fini(&p);
}

/* Recvs that only other recvs could answer: from any rank on every rank,
 * and from a rank that itself waits in a recv from any rank. */
static void test_p2p_recv_deadlocks(void **state)
{
    (void)state;
    lab_p2p_t p;
    char why[256];
    lab_rank_state_t busy[3] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING, LAB_RANK_RUNNING};
    assert_int_equal(lab_p2p_init(&p, 3), DL_OK);
    p2p_post(&p, 0, "recv", -1, 0, true);
    p2p_post(&p, 1, "recv", -1, 0, true);
    /* Rank 2 runs and holds no recv: it may still send. */
    assert_int_equal(lab_p2p_hopeless(&p, busy, why, sizeof(why)), -1);
    p2p_post(&p, 2, "recv", 0, 0, true);
    int first = lab_p2p_hopeless(&p, busy, why, sizeof(why));
    assert_true(first >= 0 && first <= 2);
    assert_non_null(strstr(why, "(a deadlock)"));
    lab_p2p_fini(&p);

    /* A recv from rank 1, which waits in a recv from any rank that only
     * rank 0 (waiting on it) could answer. */
    lab_rank_state_t two[2] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING};
    assert_int_equal(lab_p2p_init(&p, 2), DL_OK);
    p2p_post(&p, 1, "recv", -1, 0, true);
    p2p_post(&p, 0, "recv", 1, 0, true);
    assert_true(lab_p2p_hopeless(&p, two, why, sizeof(why)) >= 0);
    assert_non_null(strstr(why, "(a deadlock)"));
    lab_p2p_fini(&p);
}

/* A member that stopped at an error: one line naming it, and every waiting
 * rank let go. */
static void test_failed_member(void **state)
{
    (void)state;
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[3] = {LAB_RANK_FAILED, LAB_RANK_RUNNING, LAB_RANK_RUNNING};
    assert_int_equal(lab_match_init(&m, 3), DL_OK);
    post(&m, 1, fp("all_reduce", "[0,1,2]", 0, 4, "sum"));
    post(&m, 2, fp("all_reduce", "[0,1,2]", 0, 4, "sum"));
    decide(&m, st, &s);
    assert_int_equal(s.reports, 1);
    assert_string_equal(s.last_report,
                        "all_reduce #1 on group [0, 1, 2] can never complete: rank 0 "
                        "stopped at an error before calling it; nothing was sent");
    assert_int_equal(s.refused[1] + s.refused[2], 2);
    lab_match_fini(&m);
}

/* Each rank tells the shell on its own connection, so a receiver's "done"
 * can arrive before its sender's notice: the completed recv is paired with
 * that send when it comes, and the send does not wait for a later recv. */
static void test_p2p_late_send_notice(void **state)
{
    (void)state;
    lab_p2p_t p;
    char why[256];
    lab_rank_state_t idle0[2] = {LAB_RANK_IDLE, LAB_RANK_RUNNING};
    assert_int_equal(lab_p2p_init(&p, 2), DL_OK);
    p2p_post(&p, 1, "recv", 0, 0, true);
    lab_p2p_done(&p, 1, true);
    assert_int_equal(lab_p2p_hopeless(&p, idle0, why, sizeof(why)), -1);
    p2p_post(&p, 0, "send", 1, 0, false);
    assert_int_equal(lab_p2p_log_len(&p), 2);
    assert_int_equal(lab_p2p_log_at(&p, 0)->matched, 2);
    assert_int_equal(lab_p2p_log_at(&p, 1)->matched, 1);
    /* The next line's recv finds no stale send to take. */
    p2p_post(&p, 1, "recv", 0, 0, true);
    assert_int_equal(lab_p2p_log_at(&p, 2)->matched, 0);
    assert_int_equal(lab_p2p_hopeless(&p, idle0, why, sizeof(why)), 1);
    lab_p2p_fini(&p);
}

static void test_all_agree(void **state)
{
    (void)state;
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[4] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING, LAB_RANK_RUNNING,
                              LAB_RANK_RUNNING};
    assert_int_equal(lab_match_init(&m, 4), DL_OK);
    for (int r = 0; r < 3; r++)
        post(&m, r, fp("all_reduce", "[0,1,2,3]", 0, 4, "sum"));
    decide(&m, st, &s);
    assert_int_equal(s.ok[0] + s.refused[0], 0); /* rank 3 is still running: wait */
    post(&m, 3, fp("all_reduce", "[0,1,2,3]", 0, 4, "sum"));
    decide(&m, st, &s);
    for (int r = 0; r < 4; r++)
        assert_int_equal(s.ok[r], 1);
    assert_false(lab_match_pending(&m));
    lab_match_fini(&m);
}

static void test_mismatch_reported_rank_by_rank(void **state)
{
    (void)state;
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[4] = {0};
    assert_int_equal(lab_match_init(&m, 4), DL_OK);
    post(&m, 0, fp("all_reduce", "[0,1,2,3]", 0, 4, "sum"));
    post(&m, 1, fp("broadcast", "[0,1,2,3]", 0, 4, NULL));
    post(&m, 2, fp("all_reduce", "[0,1,2,3]", 0, 4, "sum"));
    post(&m, 3, fp("all_reduce", "[0,1,2,3]", 0, 5, "sum"));
    decide(&m, st, &s);
    for (int r = 0; r < 4; r++)
        assert_int_equal(s.refused[r], 1);
    assert_int_equal(s.reports, 1);
    assert_non_null(strstr(s.last_report, "does not match"));
    assert_non_null(strstr(s.last_report, "rank 1   broadcast float32[4]   <- differs"));
    assert_non_null(strstr(s.last_report, "rank 3   all_reduce float32[5] op=sum"));
    /* The odd ones out are marked, the majority is not. */
    const char *r1 = strstr(s.last_report, "rank 1"), *r2 = strstr(s.last_report, "rank 2");
    assert_non_null(strstr(r1, "<- differs"));
    assert_true(strstr(r1, "<- differs") < r2);
    const char *r3 = strstr(s.last_report, "rank 3");
    const char *d2 = strstr(r2, "<- differs");
    assert_true(d2 != NULL && d2 > r3); /* rank 2's line has no mark; rank 3's has */
    lab_match_fini(&m);
}

static void test_idle_rank_means_never(void **state)
{
    (void)state;
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[4] = {LAB_RANK_RUNNING, LAB_RANK_IDLE, LAB_RANK_IDLE, LAB_RANK_DEAD};
    assert_int_equal(lab_match_init(&m, 4), DL_OK);
    post(&m, 0, fp("all_reduce", "[0,1,2,3]", 0, 4, "sum"));
    decide(&m, st, &s);
    assert_int_equal(s.refused[0], 1);
    assert_non_null(strstr(s.last_report, "can never complete"));
    assert_non_null(strstr(s.last_report, "rank 1   not calling it"));
    assert_non_null(strstr(s.last_report, "rank 3   dead"));
    lab_match_fini(&m);
}

static void test_waits_on_a_subgroup_that_can_finish(void **state)
{
    (void)state;
    /* Rank 1 first runs an all_reduce on [1, 2] (rank 2 still running),
     * rank 0 waits in the world's: nothing is decided yet. */
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[4] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING, LAB_RANK_RUNNING,
                              LAB_RANK_RUNNING};
    assert_int_equal(lab_match_init(&m, 4), DL_OK);
    post(&m, 0, fp("all_reduce", "[0,1,2,3]", 0, 4, "sum"));
    post(&m, 1, fp("all_reduce", "[1,2]", 0, 4, "sum"));
    post(&m, 3, fp("all_reduce", "[0,1,2,3]", 0, 4, "sum"));
    decide(&m, st, &s);
    assert_int_equal(s.reports, 0);
    /* Rank 2 joins the subgroup's: that one goes, the world's still waits. */
    post(&m, 2, fp("all_reduce", "[1,2]", 0, 4, "sum"));
    decide(&m, st, &s);
    assert_int_equal(s.ok[1], 1);
    assert_int_equal(s.ok[2], 1);
    assert_int_equal(s.ok[0] + s.refused[0], 0);
    lab_match_fini(&m);
}

static void test_cycle_is_a_deadlock(void **state)
{
    (void)state;
    /* Rank 0 waits in the world's #1, rank 1 in the world's #2 (it ran one
     * more before): both posted, nobody else runs: never. */
    lab_match_t m;
    seen_t s = {0};
    lab_rank_state_t st[2] = {LAB_RANK_RUNNING, LAB_RANK_RUNNING};
    assert_int_equal(lab_match_init(&m, 2), DL_OK);
    json_t *a =
        json_pack("{s:s, s:i, s:i, s:[i,i], s:s, s:s, s:i, s:i}", "type", "coll", "ctx", 0, "seq",
                  0, "group", 0, 1, "coll", "barrier", "dtype", "uint8", "count", 0, "root", -1);
    json_t *b = json_deep_copy(a);
    json_object_set_new(b, "seq", json_integer(1));
    post(&m, 0, a);
    post(&m, 1, b);
    decide(&m, st, &s);
    assert_int_equal(s.refused[0], 1);
    assert_int_equal(s.refused[1], 1);
    lab_match_fini(&m);
}

static void test_malformed_fingerprints(void **state)
{
    (void)state;
    lab_match_t m;
    assert_int_equal(lab_match_init(&m, 2), DL_OK);
    json_t *j = json_pack("{s:s}", "type", "coll");
    assert_int_equal(lab_match_post(&m, 0, j), DL_ERR_PROTOCOL);
    json_decref(j);
    j = fp("all_reduce", "[0,5]", 0, 1, "sum"); /* rank 5 does not exist */
    assert_int_equal(lab_match_post(&m, 0, j), DL_ERR_PROTOCOL);
    json_decref(j);
    j = fp("all_reduce", "[1]", 0, 1, "sum"); /* not a member */
    assert_int_equal(lab_match_post(&m, 0, j), DL_ERR_PROTOCOL);
    assert_int_equal(lab_match_post(&m, 7, j), DL_ERR_PROTOCOL);
    json_decref(j);
    assert_false(lab_match_pending(&m));
    lab_match_fini(&m);
}

static void test_marks_under_changed_elements(void **state)
{
    (void)state;
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new_1d(DL_FLOAT32, 4, NULL, &t), DL_OK);
    dl_tensor_arange(t, 1, 1);
    ((float *)t->data)[2] = 12;
    bool changed[4] = {false, false, true, false};
    char *text = dl_tensor_format(t);
    char *txt = lab_stepper_mark("  rank 0  ", text, changed, 4);
    assert_string_equal(txt, "  rank 0  tensor([ 1.,  2., 12.,  4.])\n"
                             "                            ^^^\n");
    free(txt);
    bool none[4] = {false};
    txt = lab_stepper_mark("> ", text, none, 4);
    assert_string_equal(txt, "> tensor([ 1.,  2., 12.,  4.])\n");
    free(txt);
    free(text);
    dl_tensor_free(t);
}

static void test_marks_on_summarised_tensor(void **state)
{
    (void)state;
    dl_tensor_t *t = NULL;
    assert_int_equal(dl_tensor_new_1d(DL_INT64, 2000, NULL, &t), DL_OK);
    dl_tensor_arange(t, 0, 1);
    /* Only the shown elements travel: the first and last three. */
    bool changed[6] = {false, false, false, false, false, true};
    char *text = dl_tensor_format(t);
    char *txt = lab_stepper_mark("", text, changed, 6);
    assert_string_equal(txt, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])\n"
                             "                                            ^^^^\n");
    free(txt);
    free(text);
    dl_tensor_free(t);
}

/* The command table says which commands the shell runs itself; the shell
 * must have a handler for each of them, found by the row's id, and none for
 * an id no row has. */
static void test_every_session_command_has_a_handler(void **state)
{
    (void)state;
    size_t n = 0;
    const lab_cmd_t *all = lab_cmd_all(&n);
    int rows_of[LAB_CMD_ID__COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        const lab_cmd_t *c = &all[i];
        if (!(c->flags & LAB_CMD_SESSION)) {
            assert_int_equal(c->id, LAB_CMD_ID_NONE);
            continue;
        }
        if (lab__shell_handler(c->id) == NULL)
            fail_msg("session command %s has no handler", c->name);
        rows_of[c->id]++;
    }
    for (int id = 0; id < LAB_CMD_ID__COUNT; id++) {
        if (id == LAB_CMD_ID_NONE) {
            assert_null(lab__shell_handler(LAB_CMD_ID_NONE));
            assert_int_equal(rows_of[id], 0);
        } else if (rows_of[id] != 1) {
            fail_msg("session command id %d is on %d rows, not one", id, rows_of[id]);
        }
    }
    assert_null(lab__shell_handler(LAB_CMD_ID__COUNT));

    /* The flags that decide when a command runs, for the commands whose
     * behaviour the shell's users rely on. */
    assert_true(lab_cmd_find("set")->flags & LAB_CMD_NEEDS_WORLD);
    assert_false(lab_cmd_find("respawn")->flags & LAB_CMD_NEEDS_WORLD);
    assert_true(lab_cmd_find("next")->flags & LAB_CMD_WHILE_PAUSED);
    assert_false(lab_cmd_find("set")->flags & LAB_CMD_WHILE_PAUSED);
    assert_false(lab_cmd_find("all_reduce")->flags & LAB_CMD_SESSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_agree),
        cmocka_unit_test(test_never_reported_once),
        cmocka_unit_test(test_split_sizes_pair_up),
        cmocka_unit_test(test_p2p_ledger),
        cmocka_unit_test(test_p2p_recv_deadlocks),
        cmocka_unit_test(test_failed_member),
        cmocka_unit_test(test_p2p_late_send_notice),
        cmocka_unit_test(test_p2p_sent_counts),
        cmocka_unit_test(test_mismatch_reported_rank_by_rank),
        cmocka_unit_test(test_idle_rank_means_never),
        cmocka_unit_test(test_waits_on_a_subgroup_that_can_finish),
        cmocka_unit_test(test_cycle_is_a_deadlock),
        cmocka_unit_test(test_malformed_fingerprints),
        cmocka_unit_test(test_marks_under_changed_elements),
        cmocka_unit_test(test_marks_on_summarised_tensor),
        cmocka_unit_test(test_every_session_command_has_a_handler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
