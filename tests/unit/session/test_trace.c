/* Traces without ranks: a rank's buffer and the records' wire form
 * (lab/proto/trace.c), the session's trace folded from "trace" frames and
 * written as a Chrome/Perfetto trace (lab/session/trace.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "distlab/coll.h"
#include "lab/proto/trace.h"
#include "lab/session/trace.h"

/* ---- helpers ---- */

/* A fresh directory for files; removed (with what is left in it) by
 * remove_dir. */
static void make_dir(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/distlab-test-trace-XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static size_t files_in(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0;
    assert_int_equal(fscanf(p, "%zu", &n), 1);
    pclose(p);
    return n;
}

static void remove_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The frame a rank would send for b's records (all of them). */
static dl_frame_t frame_of(const lab_trace_buf_t *b, uint64_t dropped)
{
    dl_frame_t f = {0};
    f.json = lab_trace_frame(b, b->evs, b->n, dropped, &f.blob, &f.blob_len);
    assert_non_null(f.json);
    return f;
}

/* ---- a rank's buffer ---- */

static void test_buf_cap_and_drops(void **state)
{
    (void)state;
    lab_trace_buf_t b;
    assert_int_equal(lab_trace_buf_init(&b, 3), DL_OK);
    for (int i = 0; i < 3; i++) {
        lab_trace_ev_t *ev = lab_trace_buf_push(&b);
        assert_non_null(ev);
        ev->seq = (uint64_t)i;
    }
    assert_null(lab_trace_buf_push(&b));
    assert_null(lab_trace_buf_push(&b));
    assert_int_equal(b.n, 3);
    assert_int_equal(b.dropped, 2);
    assert_int_equal(b.evs[2].seq, 2);
    lab_trace_buf_clear(&b);
    assert_int_equal(b.n, 0);
    assert_int_equal(b.dropped, 0);
    assert_non_null(lab_trace_buf_push(&b));
    lab_trace_buf_fini(&b);

    /* It grows past its first allocation up to the cap, keeping what it
     * holds. */
    assert_int_equal(lab_trace_buf_init(&b, 100000), DL_OK);
    for (uint64_t i = 0; i < 50000; i++) {
        lab_trace_ev_t *ev = lab_trace_buf_push(&b);
        assert_non_null(ev);
        ev->t0 = i;
    }
    for (uint64_t i = 0; i < 50000; i += 4999)
        assert_int_equal(b.evs[i].t0, i);
    assert_int_equal(b.dropped, 0);
    lab_trace_buf_fini(&b);
}

static void test_buf_strings(void **state)
{
    (void)state;
    lab_trace_buf_t b;
    assert_int_equal(lab_trace_buf_init(&b, 10), DL_OK);
    char ring[] = "ring";
    uint16_t a = lab_trace_buf_intern(&b, "ring");
    assert_int_not_equal(a, 0);
    assert_int_equal(lab_trace_buf_intern(&b, ring), a); /* by content too */
    uint16_t p = lab_trace_buf_intern(&b, "reduce-scatter");
    assert_int_not_equal(p, a);
    assert_int_equal(lab_trace_buf_intern(&b, NULL), 0);
    assert_string_equal(b.strings[0], "?");
    assert_string_equal(b.strings[p], "reduce-scatter");
    lab_trace_buf_fini(&b);
}

/* ---- the wire ---- */

static void assert_ev_equal(const lab_trace_ev_t *a, const lab_trace_ev_t *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->coll, b->coll);
    assert_int_equal(a->whole, b->whole);
    assert_int_equal(a->algo, b->algo);
    assert_int_equal(a->phase, b->phase);
    assert_int_equal(a->peer, b->peer);
    assert_int_equal(a->chunk, b->chunk);
    assert_int_equal(a->ctx, b->ctx);
    assert_int_equal(a->step, b->step);
    assert_int_equal(a->steps, b->steps);
    assert_int_equal(a->msg, b->msg);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->t0, b->t0);
    assert_int_equal(a->t1, b->t1);
    assert_int_equal(a->bytes, b->bytes);
    assert_int_equal(a->count, b->count);
}

/* Every field set. */
static lab_trace_ev_t sample(void)
{
    lab_trace_ev_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = LAB_TRACE_RECV;
    ev.coll = DL_COLL_REDUCE_SCATTER;
    ev.whole = false;
    ev.algo = 2;
    ev.phase = 3;
    ev.peer = 255;
    ev.chunk = -1;
    ev.ctx = 0x80000001u;
    ev.step = 7;
    ev.steps = 12;
    ev.msg = 65537;
    ev.seq = 0x0102030405060708ull;
    ev.t0 = 1000000000123ull;
    ev.t1 = 1000000000456ull;
    ev.bytes = 1ull << 40;
    ev.count = 0xfedcba9876543210ull;
    return ev;
}

static void test_wire_round_trip(void **state)
{
    (void)state;
    uint8_t buf[LAB_TRACE_WIRE_BYTES + 8];
    memset(buf, 0xa5, sizeof(buf));
    lab_trace_ev_t ev = sample(), back;
    lab_trace_encode(&ev, buf);
    for (size_t i = LAB_TRACE_WIRE_BYTES; i < sizeof(buf); i++)
        assert_int_equal(buf[i], 0xa5); /* exactly LAB_TRACE_WIRE_BYTES */
    assert_int_equal(lab_trace_decode(buf, 4, &back), DL_OK);
    assert_ev_equal(&ev, &back);
    /* Little endian whatever the host: the sequence number's low byte
     * first, after 4 + 2 + 2 + 6 * 4 bytes. */
    assert_int_equal(buf[32], 0x08);
    assert_int_equal(buf[39], 0x01);

    ev.whole = true;
    ev.kind = LAB_TRACE_COLL;
    lab_trace_encode(&ev, buf);
    assert_int_equal(lab_trace_decode(buf, 4, &back), DL_OK);
    assert_true(back.whole);
}

static void test_wire_refuses(void **state)
{
    (void)state;
    uint8_t buf[LAB_TRACE_WIRE_BYTES];
    lab_trace_ev_t ev, out, untouched;
    memset(&out, 0x5a, sizeof(out));
    memset(&untouched, 0x5a, sizeof(untouched));
    ev = sample();
    lab_trace_encode(&ev, buf);
    assert_int_equal(lab_trace_decode(buf, 3, &out), DL_ERR_PROTOCOL); /* phase 3 of 3 strings */
    ev = sample();
    ev.kind = LAB_TRACE__KINDS;
    lab_trace_encode(&ev, buf);
    assert_int_equal(lab_trace_decode(buf, 4, &out), DL_ERR_PROTOCOL);
    ev = sample();
    ev.coll = DL_COLL__COUNT;
    lab_trace_encode(&ev, buf);
    assert_int_equal(lab_trace_decode(buf, 4, &out), DL_ERR_PROTOCOL);
    ev = sample();
    ev.t1 = ev.t0 - 1;
    lab_trace_encode(&ev, buf);
    assert_int_equal(lab_trace_decode(buf, 4, &out), DL_ERR_PROTOCOL);
    ev = sample();
    lab_trace_encode(&ev, buf);
    buf[2] = 2; /* whole is a flag */
    assert_int_equal(lab_trace_decode(buf, 4, &out), DL_ERR_PROTOCOL);
    assert_memory_equal(&out, &untouched, sizeof(out));
}

/* ---- folding ---- */

/* A buffer holding one ring all_reduce of 2 ranks as rank `rank` records
 * it: the collective, 2 steps, a send and a receive in each. Times in ns
 * from t. */
static void ring_of_two(lab_trace_buf_t *b, int rank, uint64_t t, uint64_t seq)
{
    uint16_t algo = lab_trace_buf_intern(b, "ring");
    const char *phases[] = {"reduce-scatter", "all-gather"};
    for (uint32_t k = 0; k < 2; k++) {
        uint64_t t0 = t + 1000 + 2000 * k, t1 = t0 + 1500;
        uint16_t phase = lab_trace_buf_intern(b, phases[k]);
        lab_trace_ev_t *st = lab_trace_buf_push(b);
        *st = (lab_trace_ev_t){.kind = LAB_TRACE_STEP,
                               .coll = DL_COLL_ALL_REDUCE,
                               .algo = algo,
                               .phase = phase,
                               .seq = seq,
                               .step = k,
                               .steps = 2,
                               .t0 = t0,
                               .t1 = t1,
                               .bytes = 8};
        for (uint32_t m = 0; m < 2; m++) {
            /* Message m goes from rank m to rank 1 - m. */
            lab_trace_ev_t *ev = lab_trace_buf_push(b);
            *ev = *st;
            ev->kind = m == (uint32_t)rank ? LAB_TRACE_SEND : LAB_TRACE_RECV;
            ev->peer = 1 - rank;
            ev->msg = m;
            ev->chunk = (int32_t)m;
        }
    }
    /* The collective comes last, as a rank records it once it ends. */
    lab_trace_ev_t *c = lab_trace_buf_push(b);
    *c = (lab_trace_ev_t){.kind = LAB_TRACE_COLL,
                          .coll = DL_COLL_ALL_REDUCE,
                          .algo = algo,
                          .seq = seq,
                          .steps = 2,
                          .t0 = t + 500,
                          .t1 = t + 5000,
                          .bytes = 16,
                          .count = 2};
}

static void test_fold(void **state)
{
    (void)state;
    lab_trace_t *t = NULL;
    assert_int_equal(lab_trace_new(100, &t), DL_OK);
    lab_trace_buf_t b;
    assert_int_equal(lab_trace_buf_init(&b, 100), DL_OK);
    ring_of_two(&b, 0, 1000000, 0);
    dl_frame_t f = frame_of(&b, 0);
    assert_int_equal(lab_trace_fold(t, 1, 0, &f), DL_OK);
    assert_int_equal(lab_trace_count(t), b.n);

    /* A malformed frame adds nothing. */
    size_t held = lab_trace_count(t);
    f.blob_len -= 1;
    assert_int_equal(lab_trace_fold(t, 1, 0, &f), DL_ERR_PROTOCOL);
    f.blob_len += 1;
    json_object_set_new(f.json, "events", json_integer((json_int_t)b.n + 1));
    assert_int_equal(lab_trace_fold(t, 1, 0, &f), DL_ERR_PROTOCOL);
    json_object_set_new(f.json, "events", json_integer(-1));
    assert_int_equal(lab_trace_fold(t, 1, 0, &f), DL_ERR_PROTOCOL);
    json_object_set_new(f.json, "events", json_integer((json_int_t)b.n));
    json_object_set_new(f.json, "strings", json_string("ring"));
    assert_int_equal(lab_trace_fold(t, 1, 0, &f), DL_ERR_PROTOCOL);
    json_object_set_new(f.json, "strings", json_pack("[s]", "?")); /* names past it */
    assert_int_equal(lab_trace_fold(t, 1, 0, &f), DL_ERR_PROTOCOL);
    assert_int_equal(lab_trace_count(t), held);
    char line[256];
    assert_int_equal(lab_trace_dropped(t, line, sizeof(line)), 0);
    assert_string_equal(line, "");
    dl_frame_clear(&f);
    lab_trace_buf_fini(&b);
    lab_trace_free(t);
}

static void test_fold_cap(void **state)
{
    (void)state;
    lab_trace_t *t = NULL;
    assert_int_equal(lab_trace_new(5, &t), DL_OK);
    lab_trace_buf_t b;
    assert_int_equal(lab_trace_buf_init(&b, 100), DL_OK);
    ring_of_two(&b, 1, 0, 0);       /* 7 records */
    dl_frame_t f = frame_of(&b, 3); /* and 3 the rank dropped */
    assert_int_equal(lab_trace_fold(t, 1, 1, &f), DL_OK);
    assert_int_equal(lab_trace_count(t), 5);
    char line[256];
    assert_int_equal(lab_trace_dropped(t, line, sizeof(line)), 5);
    assert_string_equal(line, "rank 1 dropped 5 events (past 5 per rank)");
    dl_frame_clear(&f);
    lab_trace_buf_fini(&b);
    lab_trace_free(t);
}

/* ---- writing ---- */

/* The trace-event objects of a written file, with ph as given. */
static json_t *events_of(json_t *doc, const char *ph)
{
    json_t *all = json_object_get(doc, "traceEvents"), *out = json_array(), *ev;
    size_t i;
    json_array_foreach(all, i, ev)
    {
        if (strcmp(json_string_value(json_object_get(ev, "ph")), ph) == 0)
            json_array_append(out, ev);
    }
    return out;
}

static double num(const json_t *ev, const char *key)
{
    return json_number_value(json_object_get(ev, key));
}

static json_int_t tid(const json_t *ev)
{
    return json_integer_value(json_object_get(ev, "tid"));
}

static const char *s_of(const json_t *ev, const char *key)
{
    return json_string_value(json_object_get(ev, key));
}

static void test_write(void **state)
{
    (void)state;
    char dir[64], path[128], why[256];
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/ring.json", dir);
    lab_trace_t *t = NULL;
    assert_int_equal(lab_trace_new(100, &t), DL_OK);
    for (int r = 0; r < 2; r++) {
        lab_trace_buf_t b;
        assert_int_equal(lab_trace_buf_init(&b, 100), DL_OK);
        /* Rank 1's clock reads a little later: times are rebased to the
         * earliest event of all. */
        ring_of_two(&b, r, 7000000000ull + 100 * (uint64_t)r, 0);
        dl_frame_t f = frame_of(&b, 0);
        assert_int_equal(lab_trace_fold(t, 1, r, &f), DL_OK);
        dl_frame_clear(&f);
        lab_trace_buf_fini(&b);
    }
    assert_int_equal(lab_trace_write(t, path, "distlab run all_reduce", why, sizeof(why)), DL_OK);
    assert_int_equal(files_in(dir), 1); /* no temporary file is left */
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    if (doc == NULL)
        fail_msg("%s: %s (line %d)", path, err.text, err.line);
    assert_string_equal(s_of(doc, "displayTimeUnit"), "ns");

    /* The tracks: one thread per rank, tid rank + 1, named and sorted. */
    json_t *meta = events_of(doc, "M"), *ev;
    size_t i;
    int named = 0;
    json_array_foreach(meta, i, ev)
    {
        json_t *args = json_object_get(ev, "args");
        if (strcmp(s_of(ev, "name"), "process_name") == 0)
            assert_string_equal(s_of(args, "name"), "distlab run all_reduce");
        if (strcmp(s_of(ev, "name"), "thread_name") == 0) {
            char want[32];
            snprintf(want, sizeof(want), "rank %d", (int)tid(ev) - 1);
            assert_string_equal(s_of(args, "name"), want);
            named++;
        }
        if (strcmp(s_of(ev, "name"), "thread_sort_index") == 0)
            assert_int_equal(json_integer_value(json_object_get(args, "sort_index")), tid(ev) - 1);
    }
    assert_int_equal(named, 2);

    /* The slices: per rank the collective first (it encloses its steps,
     * though recorded after them), then its steps in order. */
    json_t *slices = events_of(doc, "X");
    assert_int_equal(json_array_size(slices), 6);
    double earliest = 1e30;
    for (int r = 0; r < 2; r++) {
        json_t *mine = json_array();
        json_array_foreach(slices, i, ev)
        {
            if (tid(ev) == r + 1)
                json_array_append(mine, ev);
        }
        assert_int_equal(json_array_size(mine), 3);
        json_t *c = json_array_get(mine, 0);
        assert_string_equal(s_of(c, "name"), "all_reduce ring");
        assert_string_equal(s_of(c, "cat"), "collective");
        json_t *ca = json_object_get(c, "args");
        assert_int_equal(json_integer_value(json_object_get(ca, "steps")), 2);
        assert_int_equal(json_integer_value(json_object_get(ca, "bytes_sent")), 16);
        assert_int_equal(json_integer_value(json_object_get(ca, "count")), 2);
        for (int k = 0; k < 2; k++) {
            json_t *st = json_array_get(mine, (size_t)k + 1);
            char want[64];
            snprintf(want, sizeof(want), "all_reduce ring step %d/2 %s", k + 1,
                     k == 0 ? "reduce-scatter" : "all-gather");
            assert_string_equal(s_of(st, "name"), want);
            json_t *sa = json_object_get(st, "args");
            assert_string_equal(s_of(sa, "collective"), "all_reduce");
            assert_string_equal(s_of(sa, "algorithm"), "ring");
            assert_string_equal(s_of(sa, "phase"), k == 0 ? "reduce-scatter" : "all-gather");
            assert_int_equal(json_integer_value(json_object_get(sa, "step")), k + 1);
            assert_int_equal(json_integer_value(json_object_get(sa, "bytes_sent")), 8);
            /* Microseconds, to the nanosecond. */
            assert_float_equal(num(st, "dur"), 1.5, 1e-9);
            assert_true(num(st, "ts") > num(c, "ts"));
            assert_true(num(st, "ts") + num(st, "dur") < num(c, "ts") + num(c, "dur"));
        }
        assert_float_equal(num(c, "ts"), 0.1 * r, 1e-9);
        earliest = num(c, "ts") < earliest ? num(c, "ts") : earliest;
        json_decref(mine);
    }
    assert_float_equal(earliest, 0, 1e-12); /* rebased: the earliest event is at 0 */

    /* The arrows: per step, message m from rank m to rank 1 - m, both ends
     * with one id, inside their step's slice; every id its own. */
    json_t *starts = events_of(doc, "s"), *ends = events_of(doc, "f");
    assert_int_equal(json_array_size(starts), 4);
    assert_int_equal(json_array_size(ends), 4);
    json_array_foreach(starts, i, ev)
    {
        json_t *a = json_object_get(ev, "args");
        int from = (int)json_integer_value(json_object_get(a, "from"));
        int to = (int)json_integer_value(json_object_get(a, "to"));
        assert_int_equal(tid(ev), from + 1);
        assert_int_equal(to, 1 - from);
        assert_int_equal(json_integer_value(json_object_get(a, "bytes")), 8);
        assert_int_equal(json_integer_value(json_object_get(a, "chunk")), from);
        assert_int_equal(strlen(s_of(ev, "id")), 16);
        int matched = 0;
        json_t *f;
        size_t j;
        json_array_foreach(ends, j, f)
        {
            if (strcmp(s_of(f, "id"), s_of(ev, "id")) != 0)
                continue;
            matched++;
            assert_int_equal(tid(f), to + 1);
            assert_string_equal(s_of(f, "bp"), "e");
            assert_string_equal(s_of(f, "name"), s_of(ev, "name"));
            assert_string_equal(s_of(f, "cat"), s_of(ev, "cat"));
        }
        assert_int_equal(matched, 1);
        json_t *other;
        size_t k;
        json_array_foreach(starts, k, other)
        {
            if (k != i)
                assert_string_not_equal(s_of(other, "id"), s_of(ev, "id"));
        }
        /* Inside a step of its rank, at its start: 1 ns in. */
        bool inside = false;
        json_t *sl;
        json_array_foreach(slices, k, sl)
        {
            if (tid(sl) == tid(ev) && strcmp(s_of(sl, "cat"), "step") == 0 &&
                num(sl, "ts") < num(ev, "ts") && num(ev, "ts") < num(sl, "ts") + num(sl, "dur")) {
                inside = true;
                assert_float_equal(num(ev, "ts"), num(sl, "ts") + 0.001, 1e-9);
            }
        }
        assert_true(inside);
    }
    /* An arrow ends 1 ns before the end of its receiver's step. */
    json_array_foreach(ends, i, ev)
    {
        bool inside = false;
        json_t *sl;
        size_t k;
        json_array_foreach(slices, k, sl)
        {
            if (tid(sl) == tid(ev) && strcmp(s_of(sl, "cat"), "step") == 0 &&
                num(sl, "ts") < num(ev, "ts") && num(ev, "ts") < num(sl, "ts") + num(sl, "dur")) {
                inside = true;
                assert_float_equal(num(ev, "ts"), num(sl, "ts") + num(sl, "dur") - 0.001, 1e-9);
            }
        }
        assert_true(inside);
    }
    json_decref(starts);
    json_decref(ends);
    json_decref(slices);
    json_decref(meta);
    json_decref(doc);
    lab_trace_free(t);
    remove_dir(dir);
}

/* A world restarted numbers its collectives afresh: the same message of
 * the same collective number gets another id there. */
static void test_write_worlds(void **state)
{
    (void)state;
    char dir[64], path[128], why[256];
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/t.json", dir);
    lab_trace_t *t = NULL;
    assert_int_equal(lab_trace_new(100, &t), DL_OK);
    for (int world = 1; world <= 2; world++) {
        lab_trace_buf_t b;
        assert_int_equal(lab_trace_buf_init(&b, 100), DL_OK);
        ring_of_two(&b, 0, 1000000 * (uint64_t)world, 0);
        dl_frame_t f = frame_of(&b, 0);
        assert_int_equal(lab_trace_fold(t, world, 0, &f), DL_OK);
        dl_frame_clear(&f);
        lab_trace_buf_fini(&b);
    }
    assert_int_equal(lab_trace_write(t, path, "distlab shell", why, sizeof(why)), DL_OK);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    json_t *starts = events_of(doc, "s"), *ev;
    size_t i, j;
    assert_int_equal(json_array_size(starts), 4);
    json_array_foreach(starts, i, ev)
    {
        json_t *other;
        json_array_foreach(starts, j, other)
        {
            if (i != j)
                assert_string_not_equal(s_of(other, "id"), s_of(ev, "id"));
        }
    }
    json_decref(starts);
    json_decref(doc);
    lab_trace_free(t);
    remove_dir(dir);
}

/* A backend without schedules: the call's slice, named by its call. */
static void test_write_whole(void **state)
{
    (void)state;
    char dir[64], path[128], why[256];
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/mpi.json", dir);
    lab_trace_t *t = NULL;
    assert_int_equal(lab_trace_new(100, &t), DL_OK);
    lab_trace_buf_t b;
    assert_int_equal(lab_trace_buf_init(&b, 100), DL_OK);
    lab_trace_ev_t *c = lab_trace_buf_push(&b);
    *c = (lab_trace_ev_t){.kind = LAB_TRACE_COLL,
                          .coll = DL_COLL_BROADCAST,
                          .whole = true,
                          .algo = lab_trace_buf_intern(&b, "MPI_Bcast"),
                          .seq = 3,
                          .t0 = 10,
                          .t1 = 2010,
                          .count = 4};
    dl_frame_t f = frame_of(&b, 0);
    assert_int_equal(lab_trace_fold(t, 1, 0, &f), DL_OK);
    assert_int_equal(lab_trace_write(t, path, "distlab run broadcast", why, sizeof(why)), DL_OK);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    json_t *slices = events_of(doc, "X");
    assert_int_equal(json_array_size(slices), 1);
    json_t *s = json_array_get(slices, 0);
    assert_string_equal(s_of(s, "name"), "broadcast MPI_Bcast");
    assert_string_equal(s_of(json_object_get(s, "args"), "call"), "MPI_Bcast");
    assert_float_equal(num(s, "ts"), 0, 1e-12);
    assert_float_equal(num(s, "dur"), 2.0, 1e-12);
    json_decref(slices);
    json_decref(doc);
    dl_frame_clear(&f);
    lab_trace_buf_fini(&b);
    lab_trace_free(t);
    remove_dir(dir);
}

/* Where a trace cannot go: said before, and if it comes to it, said after
 * with nothing left behind; an old file stays whole until the new one is. */
static void test_paths(void **state)
{
    (void)state;
    char dir[64], path[160], why[256];
    make_dir(dir, sizeof(dir));
    assert_false(lab_trace_path_ok(dir, why, sizeof(why)));
    assert_string_equal(why, "Is a directory");
    snprintf(path, sizeof(path), "%s/no/such/dir/t.json", dir);
    assert_false(lab_trace_path_ok(path, why, sizeof(why)));
    assert_string_equal(why, "No such file or directory");
    assert_false(lab_trace_path_ok("", why, sizeof(why)));
    snprintf(path, sizeof(path), "%s/t.json", dir);
    assert_true(lab_trace_path_ok(path, why, sizeof(why)));
    assert_int_equal(files_in(dir), 0); /* the check leaves nothing */

    lab_trace_t *t = NULL;
    assert_int_equal(lab_trace_new(100, &t), DL_OK);
    snprintf(path, sizeof(path), "%s/no/t.json", dir);
    assert_int_equal(lab_trace_write(t, path, "x", why, sizeof(why)), DL_ERR_SYSTEM);
    char want[256];
    snprintf(want, sizeof(want), "cannot write %s: No such file or directory", path);
    assert_string_equal(why, want);
    /* An empty trace is still a trace. */
    snprintf(path, sizeof(path), "%s/empty.json", dir);
    FILE *old = fopen(path, "w");
    assert_non_null(old);
    fputs("old", old);
    fclose(old);
    assert_int_equal(lab_trace_write(t, path, "x", why, sizeof(why)), DL_OK);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    json_t *x = events_of(doc, "X");
    assert_int_equal(json_array_size(x), 0);
    assert_int_equal(files_in(dir), 1);
    json_decref(x);
    json_decref(doc);
    lab_trace_free(t);
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_cap_and_drops),
        cmocka_unit_test(test_buf_strings),
        cmocka_unit_test(test_wire_round_trip),
        cmocka_unit_test(test_wire_refuses),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_fold_cap),
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_write_worlds),
        cmocka_unit_test(test_write_whole),
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}
