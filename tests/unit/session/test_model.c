/* The session model (lab/session/model.h): frames in, typed changes out;
 * and `run`'s transcript of it (lab/session/report.h). */
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
#include "lab/proto/proto.h"
#include "lab/session/model.h"
#include "lab/session/report.h"
#include "lab/session/stepview.h"

#define MAX_SEEN 64

/* What a view saw: each change's kind, rank and, for a life, its end. */
typedef struct {
    lab_event_kind_t kind[MAX_SEEN];
    int rank[MAX_SEEN];
    lab_life_t to[MAX_SEEN];
    json_int_t stmt_id[MAX_SEEN];
    int step_k[MAX_SEEN]; /* the step record's k, -1 when none */
    char text[MAX_SEEN][128];
    int n;
} seen_t;

static void record(void *arg, const lab_model_t *m, const lab_event_t *ev)
{
    (void)m;
    seen_t *s = arg;
    assert_true(s->n < MAX_SEEN);
    s->kind[s->n] = ev->kind;
    s->rank[s->n] = ev->rank;
    s->to[s->n] = ev->to;
    s->stmt_id[s->n] = ev->stmt != NULL ? ev->stmt->id : -1;
    s->step_k[s->n] = ev->step != NULL ? ev->step->k : -1;
    snprintf(s->text[s->n], sizeof(s->text[0]), "%s", ev->text != NULL ? ev->text : "");
    s->n++;
}

static lab_fold_t fold(lab_model_t *m, int rank, const char *json)
{
    json_error_t err;
    dl_frame_t f = {.json = json_loads(json, 0, &err)};
    assert_non_null(f.json);
    lab_fold_t what = lab_model_fold(m, rank, &f);
    json_decref(f.json);
    return what;
}

/* A model with np ranks, all ready, and a view recording from then on. */
static void ready_world(lab_model_t *m, seen_t *s, int np)
{
    lab_model_init(m);
    assert_int_equal(lab_model_new_world(m, np), DL_OK);
    for (int r = 0; r < np; r++)
        assert_int_equal(fold(m, r, "{\"type\":\"ready\"}"),
                         r == np - 1 ? LAB_FOLD_READY : LAB_FOLD_NOTHING);
    memset(s, 0, sizeof(*s));
    assert_int_equal(lab_model_subscribe(m, record, s), DL_OK);
}

/* Sends a batch of n statements, each targeting every rank. */
static void send_batch(lab_model_t *m, size_t n)
{
    json_t *stmts = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(stmts, json_pack("{s:s}", "kind", "expr"));
    assert_int_equal(lab_model_batch_new(m, stmts, 0, n), DL_OK);
    json_decref(stmts);
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < m->np; r++) {
            m->batch.stmts[i].targeted[r] = true;
            lab_model_batch_sent(m, i, r, true);
        }
    lab_model_sync(m);
}

static char *frame_of(const char *type, json_int_t id)
{
    static char buf[128];
    snprintf(buf, sizeof(buf), "{\"type\":\"%s\",\"id\":%lld,\"message\":\"boom\"}", type,
             (long long)id);
    return buf;
}

static void test_world_and_ready(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s = {0};
    lab_model_init(&m);
    assert_int_equal(lab_model_subscribe(&m, record, &s), DL_OK);
    assert_int_equal(lab_model_new_world(&m, 2), DL_OK);
    assert_int_equal(m.generation, 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.kind[0], LAB_EV_WORLD);
    assert_int_equal(lab_model_life(&m, 0), LAB_LIFE_STARTING);

    assert_int_equal(fold(&m, 0, "{\"type\":\"hello\",\"pid\":41}"), LAB_FOLD_NOTHING);
    assert_int_equal(m.sess.ranks[0].pid, 41);
    assert_int_equal(fold(&m, 0, "{\"type\":\"ready\"}"), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 1, "{\"type\":\"ready\"}"), LAB_FOLD_READY);
    assert_true(m.ready);
    /* Each rank's start is a change of life. */
    assert_int_equal(s.n, 3);
    assert_int_equal(s.kind[1], LAB_EV_RANK);
    assert_int_equal(s.rank[1], 0);
    assert_int_equal(s.to[1], LAB_LIFE_IDLE);
    assert_int_equal(s.rank[2], 1);

    /* A restart is a new world: a new generation, every rank starting. */
    assert_int_equal(lab_model_new_world(&m, 3), DL_OK);
    assert_int_equal(m.generation, 2);
    assert_int_equal(m.np, 3);
    assert_false(m.ready);
    assert_int_equal(s.kind[3], LAB_EV_WORLD);
    assert_int_equal(lab_model_life(&m, 2), LAB_LIFE_STARTING);
    lab_model_fini(&m);
}

static void test_statements_report_in_order(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 2);
    send_batch(&m, 2);
    /* Both ranks became busy. */
    assert_int_equal(s.n, 2);
    assert_int_equal(s.kind[0], LAB_EV_RANK);
    assert_int_equal(s.to[0], LAB_LIFE_BUSY);
    assert_int_equal(s.to[1], LAB_LIFE_BUSY);
    json_int_t id1 = m.batch.stmts[0].id, id2 = m.batch.stmts[1].id;

    /* Output is a change of its own, tied to its statement. */
    char note[128];
    snprintf(note, sizeof(note), "{\"type\":\"note\",\"id\":%lld,\"text\":\"hi\"}", (long long)id1);
    assert_int_equal(fold(&m, 1, note), LAB_FOLD_NOTHING);
    assert_int_equal(s.kind[2], LAB_EV_OUTPUT);
    assert_int_equal(s.rank[2], 1);
    assert_int_equal(s.stmt_id[2], id1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(m.batch.stmts[0].res.ranks[1].notes, 0), "text")),
                        "hi");

    /* The second statement finishing first is held back: views hear of
     * statements in order. */
    assert_int_equal(fold(&m, 0, frame_of("done", id2)), LAB_FOLD_FINISHED);
    assert_int_equal(fold(&m, 1, frame_of("error", id2)), LAB_FOLD_FINISHED);
    assert_false(lab_model_report_finished(&m));
    assert_int_equal(s.n, 3);
    assert_int_equal(fold(&m, 0, frame_of("done", id1)), LAB_FOLD_FINISHED);
    assert_int_equal(fold(&m, 1, frame_of("done", id1)), LAB_FOLD_FINISHED);
    assert_true(lab_model_report_finished(&m));
    assert_int_equal(s.kind[3], LAB_EV_STMT_DONE);
    assert_int_equal(s.stmt_id[3], id1);
    assert_int_equal(s.kind[4], LAB_EV_STMT_FAILED);
    assert_int_equal(s.stmt_id[4], id2);
    /* The batch is over: both ranks idle again. */
    assert_int_equal(s.kind[5], LAB_EV_RANK);
    assert_int_equal(s.to[5], LAB_LIFE_IDLE);
    assert_int_equal(s.to[6], LAB_LIFE_IDLE);
    assert_int_equal(s.n, 7);
    assert_false(m.batch.inflight);
    lab_model_fini(&m);
}

static void test_death_and_silence(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 3);
    send_batch(&m, 1);
    s.n = 0;
    lab_model_rank_exited(&m, 2, "was killed by signal 9 (SIGKILL)");
    assert_int_equal(s.n, 1);
    assert_int_equal(s.kind[0], LAB_EV_RANK);
    assert_int_equal(s.rank[0], 2);
    assert_int_equal(s.to[0], LAB_LIFE_DEAD);
    assert_string_equal(m.life[2].cause, "was killed by signal 9 (SIGKILL)");
    /* Its statement fails for it, with the reason. */
    assert_true(lab_model_give_up(&m, 0, 2, "died", true));
    assert_true(m.batch.stmts[0].res.ranks[2].failed);
    assert_string_equal(m.batch.stmts[0].res.ranks[2].error, "died");

    lab_model_rank_unresponsive(&m, 1, "not responding after 2.0 s");
    assert_int_equal(s.to[s.n - 1], LAB_LIFE_UNRESPONSIVE);
    lab_rank_state_t *st = lab_model_rank_states(&m);
    assert_int_equal(st[0], LAB_RANK_RUNNING);
    assert_int_equal(st[1], LAB_RANK_UNRESPONSIVE);
    assert_int_equal(st[2], LAB_RANK_DEAD);
    free(st);
    lab_model_rank_unresponsive(&m, 1, NULL);
    assert_int_equal(s.rank[s.n - 1], 1);
    assert_int_equal(s.to[s.n - 1], LAB_LIFE_BUSY);
    lab_model_fini(&m);
}

/* Where a rank is lasts as long as its collective: the step after the
 * last one, or the end of the line, clears it, and a beat that still tells
 * the finished collective's step (the rank's step board keeps it) does not
 * bring it back. */
static void test_where_ends_with_the_collective(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 2);
    send_batch(&m, 1);
    json_int_t id = m.batch.stmts[0].id;
    const char *step = "{\"type\":\"step\",\"coll\":\"all_reduce\",\"algo\":\"rd\","
                       "\"step\":1,\"steps\":1,\"phase\":\"butterfly\",\"done\":%s}";
    char begun[256], ended[256];
    snprintf(begun, sizeof(begun), step, "false");
    snprintf(ended, sizeof(ended), step, "true");
    const char *beat = "{\"type\":\"beat\",\"busy\":true,\"coll\":\"all_reduce\",\"step\":1,"
                       "\"steps\":1,\"phase\":\"butterfly\"}";
    fold(&m, 0, begun);
    assert_string_equal(m.sess.ranks[0].where, "all_reduce step 1/1 (butterfly)");
    fold(&m, 0, ended);
    assert_string_equal(m.sess.ranks[0].where, "");
    fold(&m, 0, beat);
    assert_string_equal(m.sess.ranks[0].where, "");

    /* Rank 1 fails in the middle of it: the end of its line ends it. */
    fold(&m, 1, begun);
    assert_string_equal(m.sess.ranks[1].where, "all_reduce step 1/1 (butterfly)");
    fold(&m, 1, frame_of("error", id));
    assert_string_equal(m.sess.ranks[1].where, "");
    fold(&m, 1, beat);
    assert_string_equal(m.sess.ranks[1].where, "");
    lab_model_fini(&m);
}

static void test_garbage_changes_nothing(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 2);
    send_batch(&m, 1);
    s.n = 0;
    /* A rank that does not exist, a statement that is not in flight, an
     * unknown type, a malformed fingerprint and a malformed p2p notice. */
    assert_int_equal(fold(&m, 7, "{\"type\":\"done\",\"id\":2}"), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, -1, "{\"type\":\"ready\"}"), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 0, frame_of("done", 999)), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 0, "{\"type\":\"done\"}"), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 0, "{\"type\":\"zzz\",\"id\":2}"), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 0, "{\"type\":\"coll\",\"group\":\"x\"}"), LAB_FOLD_COLL_BAD);
    assert_int_equal(fold(&m, 0, "{\"type\":\"p2p\",\"op\":\"send\",\"peer\":9}"),
                     LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 0, "[1,2]"), LAB_FOLD_NOTHING);
    assert_int_equal(s.n, 0);
    assert_int_equal(m.batch.outstanding[0], 1);
    assert_false(lab_model_paused(&m));
    lab_model_fini(&m);
}

static void test_p2p_and_say(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 2);
    send_batch(&m, 1);
    s.n = 0;
    assert_int_equal(
        fold(&m, 0, "{\"type\":\"p2p\",\"op\":\"send\",\"peer\":1,\"tag\":0,\"blocking\":true}"),
        LAB_FOLD_P2P);
    assert_int_equal(s.kind[0], LAB_EV_P2P);
    assert_int_equal(s.rank[0], 0);
    assert_int_equal(m.p2p.n_sends, 1);
    lab_model_say(&m, 1, true, "rank %d: %s", 1, "gone");
    assert_int_equal(s.kind[1], LAB_EV_SAY);
    assert_string_equal(s.text[1], "rank 1: gone");
    lab_model_fini(&m);
}

/* The log of point-to-point operations: in order, with their sizes, and
 * each send paired with the recv that matched it; bounded, the oldest
 * going first. */
static void test_p2p_log(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 3);
    lab_model_unsubscribe(&m, record, &s); /* the events are test_p2p_and_say's */
    send_batch(&m, 1);
    /* on 1: irecv from any (tag 5); on 0: send to 2; on 2: recv from 0;
     * on 0: isend to 1 (tag 5). */
    fold(&m, 1,
         "{\"type\":\"p2p\",\"op\":\"recv\",\"peer\":-1,\"tag\":5,"
         "\"blocking\":false,\"async\":true,\"bytes\":16}");
    fold(&m, 0,
         "{\"type\":\"p2p\",\"op\":\"send\",\"peer\":2,\"tag\":0,"
         "\"blocking\":false,\"async\":false,\"bytes\":32}");
    fold(&m, 2,
         "{\"type\":\"p2p\",\"op\":\"recv\",\"peer\":0,\"tag\":0,"
         "\"blocking\":true,\"async\":false,\"bytes\":32}");
    fold(&m, 0,
         "{\"type\":\"p2p\",\"op\":\"send\",\"peer\":1,\"tag\":5,"
         "\"blocking\":false,\"async\":true,\"bytes\":16}");
    assert_int_equal(lab_p2p_log_len(&m.p2p), 4);
    const lab_p2p_entry_t *e[4];
    for (size_t i = 0; i < 4; i++) {
        e[i] = lab_p2p_log_at(&m.p2p, i);
        assert_non_null(e[i]);
        assert_int_equal(e[i]->seq, i + 1);
        assert_true(e[i]->t >= 0);
        assert_true(i == 0 || e[i]->t >= e[i - 1]->t);
    }
    assert_null(lab_p2p_log_at(&m.p2p, 4));
    assert_string_equal(lab_p2p_op_name(e[0]), "irecv");
    assert_string_equal(lab_p2p_op_name(e[1]), "send");
    assert_string_equal(lab_p2p_op_name(e[2]), "recv");
    assert_string_equal(lab_p2p_op_name(e[3]), "isend");
    assert_int_equal(e[0]->rank, 1);
    assert_int_equal(e[0]->peer, -1);
    assert_int_equal(e[0]->tag, 5);
    assert_int_equal(e[1]->bytes, 32);
    /* The send to 2 met its recv (entries 2 and 3); the isend met the
     * irecv from any source posted first. */
    assert_int_equal(e[1]->matched, 3);
    assert_int_equal(e[2]->matched, 2);
    assert_int_equal(e[0]->matched, 4);
    assert_int_equal(e[3]->matched, 1);
    assert_true(e[2]->t_matched >= e[1]->t);
    /* A send nobody received yet waits unmatched; the log keeps the last
     * LAB_P2P_LOG_MAX, the oldest going first. */
    for (int i = 0; i < LAB_P2P_LOG_MAX; i++)
        fold(&m, 0,
             "{\"type\":\"p2p\",\"op\":\"send\",\"peer\":1,\"tag\":9,"
             "\"blocking\":false}");
    assert_int_equal(lab_p2p_log_len(&m.p2p), LAB_P2P_LOG_MAX);
    const lab_p2p_entry_t *first = lab_p2p_log_at(&m.p2p, 0);
    assert_int_equal(first->seq, 5);
    assert_int_equal(first->matched, 0);
    assert_int_equal(first->bytes, -1);
    assert_null(lab_p2p_log_seq(&m.p2p, 4));
    assert_int_equal(lab_p2p_log_at(&m.p2p, LAB_P2P_LOG_MAX - 1)->seq, LAB_P2P_LOG_MAX + 4);
    /* A recv matches the oldest waiting send (seq 5), whose entry has just
     * left the log: the recv's own entry still names it. */
    fold(&m, 1,
         "{\"type\":\"p2p\",\"op\":\"recv\",\"peer\":0,\"tag\":9,"
         "\"blocking\":true}");
    assert_null(lab_p2p_log_seq(&m.p2p, 5));
    assert_int_equal(lab_p2p_log_seq(&m.p2p, LAB_P2P_LOG_MAX + 5)->matched, 5);
    assert_int_equal(lab_p2p_log_seq(&m.p2p, 6)->matched, 0);
    /* A new world starts a new log. */
    assert_int_equal(lab_model_new_world(&m, 3), DL_OK);
    assert_int_equal(lab_p2p_log_len(&m.p2p), 0);
    lab_model_fini(&m);
}

static void test_job(void **state)
{
    (void)state;
    lab_model_t m;
    lab_model_init(&m);
    assert_int_equal(lab_model_new_world(&m, 2), DL_OK);
    assert_int_equal(lab_model_job_new(&m), DL_OK);
    /* A rank that fails before the world is up fails the job. */
    assert_int_equal(fold(&m, 1, "{\"type\":\"error\",\"message\":\"no GPU\"}"),
                     LAB_FOLD_START_FAIL);
    assert_true(lab_model_job(&m)->res.ranks[1].failed);
    assert_string_equal(lab_model_job(&m)->res.ranks[1].error, "no GPU");
    assert_int_equal(fold(&m, 0, "{\"type\":\"ready\"}"), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 1, "{\"type\":\"ready\"}"), LAB_FOLD_READY);
    for (int r = 0; r < 2; r++)
        lab_model_batch_sent(&m, 0, r, true);
    /* A job's events carry no id. */
    assert_int_equal(fold(&m, 0, "{\"type\":\"note\",\"text\":\"after\"}"), LAB_FOLD_NOTHING);
    assert_int_equal(fold(&m, 0, "{\"type\":\"done\"}"), LAB_FOLD_FINISHED);
    assert_true(lab_model_job(&m)->res.ranks[0].done);
    assert_int_equal(json_array_size(lab_model_job(&m)->res.ranks[0].notes), 1);
    lab_model_fini(&m);
}

/* A step event of rank r running ring all_reduce on 3 int64 elements,
 * rank r's element i being vals[r][i]: before step `step` (paused) or
 * after it (done), as lab/rank/rank_hooks.c sends them. */
static lab_fold_t fold_step(lab_model_t *m, const dl_sched_t *s, int r, int step, bool done,
                            const int64_t *vals)
{
    json_t *ev = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:b, s:b, s:i, s:[iii]}", "type", "step",
                           "coll", "all_reduce", "algo", "ring", "step", step, "steps",
                           (int)s->n_steps, "phase", s->steps[step - 1].phase, "done", done,
                           "pause", !done, "group_rank", r, "group", 0, 1, 2);
    /* The collective's arguments, as the ranks send them. */
    json_object_set_new(ev, "count", json_integer(3));
    json_object_set_new(ev, "root", json_integer(0));
    json_object_set_new(ev, "op", json_string("sum"));
    dl_frame_t f = {ev, NULL, 0};
    if (!done && r == 0) {
        dl_step_desc_t d;
        assert_int_equal(dl_step_describe(s, (size_t)step - 1, 8, NULL, &d), DL_OK);
        json_object_set_new(ev, "desc", dl_step_desc_to_json(&d));
        dl_step_desc_free(&d);
    }
    if (done || step == 1) {
        json_object_set_new(ev, "dtype", json_string("int64"));
        json_object_set_new(ev, "shape", json_pack("[i]", 3));
        json_object_set_new(ev, "buf", json_string("in"));
        f.blob = malloc(3 * sizeof(int64_t));
        assert_non_null(f.blob);
        memcpy(f.blob, vals, 3 * sizeof(int64_t));
        f.blob_len = 3 * sizeof(int64_t);
    }
    lab_fold_t what = lab_model_fold(m, r, &f);
    dl_frame_clear(&f);
    return what;
}

static void test_step_mode(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 3);
    send_batch(&m, 1);
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 3, .count = 3, .op = DL_OP_SUM};
    dl_sched_t *sched = NULL;
    assert_int_equal(dl_sched_build("ring", &a, 8, &sched), DL_OK);
    int64_t vals[3][3] = {{1, 2, 3}, {10, 20, 30}, {100, 200, 300}};
    s.n = 0;
    /* Every rank pauses before step 1: the state before it is shown, then
     * the pause, and every rank's life is PAUSED. */
    assert_int_equal(fold_step(&m, sched, 0, 1, false, vals[0]), LAB_FOLD_NOTHING);
    assert_int_equal(fold_step(&m, sched, 1, 1, false, vals[1]), LAB_FOLD_NOTHING);
    assert_int_equal(fold_step(&m, sched, 2, 1, false, vals[2]), LAB_FOLD_PAUSED);
    assert_true(lab_model_paused(&m));
    int ran = -1, paused = -1, lives = 0;
    for (int i = 0; i < s.n; i++) {
        if (s.kind[i] == LAB_EV_STEP_RAN)
            ran = i;
        if (s.kind[i] == LAB_EV_STEP_PAUSED)
            paused = i;
        lives += s.kind[i] == LAB_EV_RANK && s.to[i] == LAB_LIFE_PAUSED;
    }
    assert_true(ran >= 0 && paused > ran);
    assert_int_equal(s.step_k[ran], 0);
    assert_int_equal(s.step_k[paused], 0);
    assert_int_equal(lives, 3);
    assert_int_equal(lab_model_life(&m, 1), LAB_LIFE_PAUSED);

    /* Step 1 runs: its record holds its messages and what changed. */
    s.n = 0;
    int64_t after[3][3];
    memcpy(after, vals, sizeof(vals));
    dl_step_desc_t d;
    assert_int_equal(dl_step_describe(sched, 0, 8, NULL, &d), DL_OK);
    for (size_t k = 0; k < d.n_msgs; k++)
        for (size_t i = 0; i < d.msgs[k].src.count; i++)
            after[d.msgs[k].dst_rank][d.msgs[k].dst.first + i] +=
                vals[d.msgs[k].src_rank][d.msgs[k].src.first + i];
    for (int r = 0; r < 3; r++)
        fold_step(&m, sched, r, 1, true, after[r]);
    assert_int_equal(s.kind[s.n - 1], LAB_EV_STEP_RAN);
    assert_int_equal(s.step_k[s.n - 1], 1);
    const lab_step_rec_t *rec = lab_stepper_rec(&m.stepper, lab_stepper_nrecs(&m.stepper) - 1);
    assert_int_equal((int)rec->desc.n_msgs, (int)d.n_msgs);
    for (size_t k = 0; k < d.n_msgs; k++) {
        int dst = d.msgs[k].dst_rank;
        size_t i = d.msgs[k].dst.first;
        assert_true(rec->changed[dst][i]);
        assert_int_equal(((int64_t *)rec->bufs[dst]->data)[i], after[dst][i]);
    }

    /* A view can rebuild the schedule from the record's arguments: each
     * element a message reduced holds the sum of both ranks' inputs. */
    assert_true(rec->args_known);
    assert_int_equal((int)rec->args.count, 3);
    lab_stepview_t v = {0};
    assert_true(lab_stepview_sync(&v, &m.stepper, rec));
    for (size_t k = 0; k < d.n_msgs; k++) {
        char sym[64], want[64];
        int src = d.msgs[k].src_rank, dst = d.msgs[k].dst_rank;
        size_t i = d.msgs[k].dst.first;
        assert_true(lab_stepview_symbol(&v, rec, dst, i, sym, sizeof(sym)));
        snprintf(want, sizeof(want), "%c%zu+%c%zu", 'a' + (src < dst ? src : dst), i,
                 'a' + (src < dst ? dst : src), i);
        assert_string_equal(sym, want);
        assert_int_equal(lab_stepview_chunk(&v, rec, dst, i), d.msgs[k].chunk);
    }
    char line[128];
    lab_stepview_msg_line(&v, &rec->desc, 0, line, sizeof(line));
    assert_non_null(strstr(line, "reduce"));
    lab_stepview_fini(&v);
    dl_step_desc_free(&d);
    dl_sched_free(sched);
    lab_model_fini(&m);
}

/* Folds a snapshot of rank 0 under label: name (index of a list of `of`)
 * holding the int64 values vals[0..n), for statement id. */
static void fold_snap_as(lab_model_t *m, json_int_t id, const char *label, const char *name,
                         int index, int of, const int64_t *vals, int n)
{
    dl_frame_t f = {.json = json_pack("{s:s, s:I, s:s, s:s, s:i, s:i, s:s, s:[i]}", "type", "snap",
                                      "id", id, "label", label, "name", name, "index", index, "of",
                                      of, "dtype", "int64", "shape", n)};
    f.blob = malloc(sizeof(int64_t) * (size_t)n);
    assert_non_null(f.blob);
    memcpy(f.blob, vals, sizeof(int64_t) * (size_t)n);
    f.blob_len = sizeof(int64_t) * (size_t)n;
    lab_model_fold(m, 0, &f);
    dl_frame_clear(&f);
}

static void fold_snap(lab_model_t *m, json_int_t id, const char *name, int index, int of,
                      const int64_t *vals, int n)
{
    fold_snap_as(m, id, "", name, index, of, vals, n);
}

/* The text of the k-th shown tensor of rank 0, "name[index]=tensor(...)". */
static const char *shown_text(const lab_model_t *m, int k)
{
    static char buf[128];
    const lab_snap_t *sn = &m->sess.ranks[0].shown[k];
    char *t = dl_tensor_format_shown(sn->t->dtype, sn->ndim, sn->shape, sn->device, sn->t->data);
    assert_non_null(t);
    snprintf(buf, sizeof(buf), "%s[%d]=%s", sn->name, sn->index, t);
    free(t);
    return buf;
}

/* The model keeps the last snapshot of each name per rank, in the order
 * the names first came; a list shown again replaces all its items. */
static void test_shown_tensors(void **state)
{
    (void)state;
    lab_model_t m;
    seen_t s;
    ready_world(&m, &s, 2);
    send_batch(&m, 1);
    json_int_t id = m.batch.stmts[0].id;
    const int64_t a[] = {0, 1}, b[] = {5, 6, 7}, c[] = {9};
    fold_snap(&m, id, "t", 0, 0, a, 2);
    fold_snap(&m, id, "l", 0, 2, a, 2);
    fold_snap(&m, id, "l", 1, 2, c, 1);
    fold_snap(&m, id, "u", 0, 0, c, 1);
    assert_int_equal(m.sess.ranks[0].n_shown, 4);
    assert_int_equal(m.sess.ranks[1].n_shown, 0);
    fold_snap(&m, id, "t", 0, 0, b, 3);
    assert_int_equal(m.sess.ranks[0].n_shown, 4);
    assert_string_equal(shown_text(&m, 0), "t[0]=tensor([5, 6, 7])");
    assert_string_equal(shown_text(&m, 1), "l[0]=tensor([0, 1])");
    assert_string_equal(shown_text(&m, 2), "l[1]=tensor([9])");
    assert_string_equal(shown_text(&m, 3), "u[0]=tensor([9])");
    /* The list again, one item shorter: its old items all go. */
    fold_snap(&m, id, "l", 0, 1, b, 3);
    assert_int_equal(m.sess.ranks[0].n_shown, 3);
    assert_string_equal(shown_text(&m, 1), "l[0]=tensor([5, 6, 7])");
    assert_string_equal(shown_text(&m, 2), "u[0]=tensor([9])");
    /* A snapshot for the views alone (an irecv's tensor once waited on)
     * changes the panel's copy, and is no result to print. */
    int snaps = m.batch.stmts[0].res.ranks[0].n_snaps, events = s.n;
    fold_snap_as(&m, id, LAB_SNAP_VIEW, "u", 0, 0, a, 2);
    assert_string_equal(shown_text(&m, 2), "u[0]=tensor([0, 1])");
    assert_int_equal(m.batch.stmts[0].res.ranks[0].n_snaps, snaps);
    assert_int_equal(s.n, events);
    /* A job's results are forgotten; what the rank showed is not. */
    lab_session_clear_results(&m.sess);
    assert_int_equal(m.sess.ranks[0].n_shown, 3);
    lab_model_fini(&m);
}

/* A frame of rank r's job: a snapshot under label of name (index of a list
 * of `of`) holding the int64 values vals[0..n), or None when vals is NULL. */
static void fold_job_snap(lab_session_t *sess, int r, const char *label, const char *name,
                          int index, int of, const int64_t *vals, int n)
{
    dl_frame_t f = {0};
    if (vals == NULL) {
        f.json = lab_snap_none_json(label, name);
    } else {
        f.json = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:[i]}", "type", "snap", "label", label,
                           "name", name, "index", index, "of", of, "dtype", "int64", "shape", n);
        f.blob = malloc(sizeof(int64_t) * (size_t)n);
        assert_non_null(f.blob);
        memcpy(f.blob, vals, sizeof(int64_t) * (size_t)n);
        f.blob_len = sizeof(int64_t) * (size_t)n;
    }
    lab_session_fold(sess, r, &f);
    lab_session_learn_tensor(sess, r, &f);
    dl_frame_clear(&f);
}

/* `run`'s transcript: every label once, in the order the ranks went through
 * them (states between before and after too), and a name that holds None
 * printed as torch prints it, without a panel entry. */
static void test_run_report(void **state)
{
    (void)state;
    lab_session_t sess;
    assert_int_equal(lab_session_init(&sess, 2), DL_OK);
    const int64_t a[] = {1, 2}, b[] = {3, 4};
    for (int r = 0; r < 2; r++) {
        fold_job_snap(&sess, r, "before", "tensor", 0, 0, r == 0 ? a : b, 2);
        fold_job_snap(&sess, r, "after r1 -> r0", "tensor", 0, 0, b, 2);
    }
    fold_job_snap(&sess, 0, "after", "gather_list", 0, 2, a, 2);
    fold_job_snap(&sess, 0, "after", "gather_list", 1, 2, b, 2);
    fold_job_snap(&sess, 1, "after", "gather_list", 0, 0, NULL, 0);
    assert_int_equal(sess.ranks[1].n_shown, 1); /* tensor; None shows nowhere */

    lab_job_t job;
    lab_job_defaults(&job);
    job.prim = (lab_prim_t){LAB_PRIM_PINGPONG, DL_COLL_BARRIER};
    job.np = 2;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    lab_report_run(out, &job, &sess);
    fclose(out);
    assert_string_equal(text, "pingpong  np=2  backend=builtin\n"
                              "before:\n"
                              "  rank 0: tensor = tensor([1, 2])\n"
                              "  rank 1: tensor = tensor([3, 4])\n"
                              "after r1 -> r0:\n"
                              "  rank 0: tensor = tensor([3, 4])\n"
                              "  rank 1: tensor = tensor([3, 4])\n"
                              "after:\n"
                              "  rank 0: gather_list = [tensor([1, 2]), tensor([3, 4])]\n"
                              "  rank 1: gather_list = None\n");
    free(text);
    lab_session_fini(&sess);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world_and_ready),
        cmocka_unit_test(test_statements_report_in_order),
        cmocka_unit_test(test_death_and_silence),
        cmocka_unit_test(test_where_ends_with_the_collective),
        cmocka_unit_test(test_garbage_changes_nothing),
        cmocka_unit_test(test_p2p_and_say),
        cmocka_unit_test(test_p2p_log),
        cmocka_unit_test(test_job),
        cmocka_unit_test(test_step_mode),
        cmocka_unit_test(test_shown_tensors),
        cmocka_unit_test(test_run_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
