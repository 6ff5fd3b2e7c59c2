/* Frame codec: encode/decode round trips, incremental feeding, garbage
 * rejection, and the blocking socket helpers over a socketpair. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "distlab/frame.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint8_t *random_bytes(size_t len, unsigned seed)
{
    uint8_t *p = malloc(len > 0 ? len : 1);
    assert_non_null(p);
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
    return p;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A hand-made frame: body length, JSON length, JSON text, blob. */
static size_t raw_frame(uint8_t *out, uint32_t body_len, uint32_t json_len, const char *text)
{
    put_be32(out, body_len);
    put_be32(out + 4, json_len);
    size_t n = strlen(text);
    memcpy(out + 8, text, n);
    return 8 + n;
}

static void expect_frame(dl_frame_decoder_t *d, const json_t *json, const void *blob,
                         size_t blob_len)
{
    dl_frame_t f = {0};
    assert_int_equal(dl_frame_decoder_next(d, &f), DL_OK);
    assert_true(json_equal(f.json, (json_t *)json));
    assert_int_equal(f.blob_len, blob_len);
    if (blob_len == 0)
        assert_null(f.blob);
    else
        assert_memory_equal(f.blob, blob, blob_len);
    dl_frame_clear(&f);
}

/* ---- round trips ---- */

static void test_round_trip_no_blob(void **state)
{
    (void)state;
    json_t *json = json_pack("{s:s,s:s}", "op", "get", "key", "k");
    uint8_t *buf;
    size_t len;
    assert_int_equal(dl_frame_encode(json, NULL, 0, &buf, &len), DL_OK);

    dl_frame_decoder_t d;
    dl_frame_decoder_init(&d, 0);
    assert_int_equal(d.max_frame, DL_FRAME_MAX);
    assert_int_equal(dl_frame_decoder_feed(&d, buf, len), DL_OK);
    expect_frame(&d, json, NULL, 0);
    dl_frame_t f = {0};
    assert_int_equal(dl_frame_decoder_next(&d, &f), DL_ERR_AGAIN);
    assert_null(f.json);

    dl_frame_decoder_free(&d);
    free(buf);
    json_decref(json);
}

static void test_round_trip_blob(void **state)
{
    (void)state;
    json_t *json = json_pack("{s:s,s:s,s:i}", "op", "set", "key", "weights", "n", 7);
    size_t blob_len = (3u << 20) + 17;
    uint8_t *blob = random_bytes(blob_len, 1);
    uint8_t *buf;
    size_t len;
    assert_int_equal(dl_frame_encode(json, blob, blob_len, &buf, &len), DL_OK);

    dl_frame_decoder_t d;
    dl_frame_decoder_init(&d, 0);
    assert_int_equal(dl_frame_decoder_feed(&d, buf, len), DL_OK);
    expect_frame(&d, json, blob, blob_len);
    dl_frame_decoder_free(&d);
    free(buf);
    free(blob);
    json_decref(json);
}

static void test_encode_rejects_non_object(void **state)
{
    (void)state;
    json_t *json = json_array();
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(dl_frame_encode(json, NULL, 0, &buf, &len), DL_ERR_INVALID);
    assert_null(buf);
    json_decref(json);
}

static void test_byte_at_a_time(void **state)
{
    (void)state;
    json_t *json = json_pack("{s:s}", "op", "hello");
    const char blob[] = "some bytes\0with a NUL";
    uint8_t *buf;
    size_t len;
    assert_int_equal(dl_frame_encode(json, blob, sizeof(blob), &buf, &len), DL_OK);

    dl_frame_decoder_t d;
    dl_frame_decoder_init(&d, 0);
    for (size_t i = 0; i < len; i++) {
        dl_frame_t f = {0};
        assert_int_equal(dl_frame_decoder_next(&d, &f), DL_ERR_AGAIN);
        assert_int_equal(dl_frame_decoder_feed(&d, buf + i, 1), DL_OK);
    }
    expect_frame(&d, json, blob, sizeof(blob));
    assert_int_equal(d.len, 0);
    dl_frame_decoder_free(&d);
    free(buf);
    json_decref(json);
}

static void test_several_frames_in_one_feed(void **state)
{
    (void)state;
    enum { N = 3 };
    json_t *json[N];
    uint8_t *blob[N];
    size_t blob_len[N] = {0, 100, 70000};
    uint8_t *all = NULL;
    size_t all_len = 0;
    for (int i = 0; i < N; i++) {
        json[i] = json_pack("{s:i}", "seq", i);
        blob[i] = random_bytes(blob_len[i], (unsigned)i + 7);
        uint8_t *buf;
        size_t len;
        assert_int_equal(dl_frame_encode(json[i], blob[i], blob_len[i], &buf, &len), DL_OK);
        all = realloc(all, all_len + len);
        memcpy(all + all_len, buf, len);
        all_len += len;
        free(buf);
    }

    /* Everything at once, then the same stream cut at an awkward place. */
    for (size_t cut = all_len; cut >= all_len - 1; cut--) {
        dl_frame_decoder_t d;
        dl_frame_decoder_init(&d, 0);
        assert_int_equal(dl_frame_decoder_feed(&d, all, cut), DL_OK);
        for (int i = 0; i < N - 1; i++)
            expect_frame(&d, json[i], blob[i], blob_len[i]);
        if (cut < all_len) {
            dl_frame_t f = {0};
            assert_int_equal(dl_frame_decoder_next(&d, &f), DL_ERR_AGAIN);
            assert_int_equal(dl_frame_decoder_feed(&d, all + cut, all_len - cut), DL_OK);
        }
        expect_frame(&d, json[N - 1], blob[N - 1], blob_len[N - 1]);
        dl_frame_decoder_free(&d);
    }
    for (int i = 0; i < N; i++) {
        json_decref(json[i]);
        free(blob[i]);
    }
    free(all);
}

/* ---- garbage ---- */

/* Feeds bytes to a fresh decoder and returns the status that ended decoding;
 * frames decoded along the way are discarded. */
static dl_status_t decode_bytes(const void *data, size_t len, size_t max_frame)
{
    dl_frame_decoder_t d;
    dl_frame_decoder_init(&d, max_frame);
    assert_int_equal(dl_frame_decoder_feed(&d, data, len), DL_OK);
    dl_status_t st;
    dl_frame_t f = {0};
    while ((st = dl_frame_decoder_next(&d, &f)) == DL_OK)
        dl_frame_clear(&f);
    dl_frame_decoder_free(&d);
    return st;
}

static void test_garbage_random(void **state)
{
    (void)state;
    /* Every rejected frame logs its fault; thousands of lines would bury the
     * rest of the output. */
    fflush(stderr);
    int saved_stderr = dup(STDERR_FILENO);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDERR_FILENO);
    close(devnull);
    for (unsigned seed = 0; seed < 2000; seed++) {
        size_t len = seed % 300;
        uint8_t *p = random_bytes(len, seed);
        /* Small lengths make plausible headers more frequent. */
        if (len >= 4 && seed % 2 == 0)
            put_be32(p, (uint32_t)(len - 4));
        if (len >= 8 && seed % 4 == 0)
            put_be32(p + 4, (uint32_t)(seed % (len - 4)));
        dl_status_t st = decode_bytes(p, len, 4096);
        free(p);
        if (st != DL_ERR_AGAIN && st != DL_ERR_PROTOCOL && st != DL_ERR_TOO_BIG) {
            dup2(saved_stderr, STDERR_FILENO);
            fail_msg("seed %u: decoder returned %s", seed, dl_status_name(st));
        }
    }
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
}

static void test_garbage_huge_length(void **state)
{
    (void)state;
    /* Rejected from the 4-byte header alone, before any body arrives. */
    uint8_t hdr[4];
    put_be32(hdr, 0xffffffffu);
    assert_int_equal(decode_bytes(hdr, sizeof(hdr), 0), DL_ERR_TOO_BIG);
    put_be32(hdr, DL_FRAME_MAX + 1);
    assert_int_equal(decode_bytes(hdr, sizeof(hdr), 0), DL_ERR_TOO_BIG);
    put_be32(hdr, 2000);
    assert_int_equal(decode_bytes(hdr, sizeof(hdr), 1024), DL_ERR_TOO_BIG);
    /* Exactly at the limit is fine: just incomplete. */
    put_be32(hdr, 1024);
    assert_int_equal(decode_bytes(hdr, sizeof(hdr), 1024), DL_ERR_AGAIN);
}

static void test_garbage_bad_lengths(void **state)
{
    (void)state;
    uint8_t buf[64];
    /* The JSON length runs past the body: caught from the header. */
    size_t n = raw_frame(buf, 10, 20, "");
    assert_int_equal(decode_bytes(buf, n, 0), DL_ERR_PROTOCOL);
    n = raw_frame(buf, 6, 0xfffffff0u, "{}");
    assert_int_equal(decode_bytes(buf, n, 0), DL_ERR_PROTOCOL);
    /* A body too short for its own JSON length field. */
    put_be32(buf, 3);
    assert_int_equal(decode_bytes(buf, 7, 0), DL_ERR_PROTOCOL);
    /* An empty JSON text is not an object. */
    n = raw_frame(buf, 4, 0, "");
    assert_int_equal(decode_bytes(buf, n, 0), DL_ERR_PROTOCOL);
}

static void test_garbage_json(void **state)
{
    (void)state;
    static const char *const bad[] = {"[1,2]", "42",       "\"s\"", "null",
                                      "{",     "{\"a\":}", "{}x",   "\xff\xfe"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t buf[64];
        uint32_t jl = (uint32_t)strlen(bad[i]);
        size_t n = raw_frame(buf, 4 + jl, jl, bad[i]);
        assert_int_equal(decode_bytes(buf, n, 0), DL_ERR_PROTOCOL);
    }
    /* The JSON may be followed by a blob, which is not parsed. */
    uint8_t buf[64];
    size_t n = raw_frame(buf, 4 + 2 + 3, 2, "{}[[[");
    assert_int_equal(decode_bytes(buf, n, 0), DL_ERR_AGAIN);
}

/* ---- blocking helpers ---- */

typedef struct {
    int fd;
    json_t *json;
    const uint8_t *blob;
    size_t blob_len;
    dl_status_t st;
} sender_t;

static void *sender_main(void *arg)
{
    sender_t *s = arg;
    s->st = dl_frame_send_fd(s->fd, s->json, s->blob, s->blob_len, 10000);
    return NULL;
}

static void test_fd_round_trip(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    /* Bigger than the socket buffer, so the sender has to wait for us. */
    size_t blob_len = 4u << 20;
    uint8_t *blob = random_bytes(blob_len, 3);
    sender_t s = {
        .fd = sv[0], .json = json_pack("{s:s}", "op", "set"), .blob = blob, .blob_len = blob_len};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sender_main, &s), 0);

    dl_frame_t f = {0};
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 10000), DL_OK);
    pthread_join(th, NULL);
    assert_int_equal(s.st, DL_OK);
    assert_true(json_equal(f.json, s.json));
    assert_int_equal(f.blob_len, blob_len);
    assert_memory_equal(f.blob, blob, blob_len);
    dl_frame_clear(&f);

    /* And a frame without a blob. */
    assert_int_equal(dl_frame_send_fd(sv[0], s.json, NULL, 0, 1000), DL_OK);
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 1000), DL_OK);
    assert_true(json_equal(f.json, s.json));
    assert_null(f.blob);
    dl_frame_clear(&f);

    json_decref(s.json);
    free(blob);
    close(sv[0]);
    close(sv[1]);
}

static void test_fd_timeout_and_close(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    dl_frame_t f = {0};
    int64_t t0 = now_ms();
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 100), DL_ERR_TIMEOUT);
    int64_t dt = now_ms() - t0;
    assert_in_range(dt, 90, 2000);
    assert_null(f.json);

    /* Half a frame, then the peer goes: closed, not a hang. */
    uint8_t half[6] = {0, 0, 0, 10, 0, 0};
    assert_int_equal(write(sv[0], half, sizeof(half)), sizeof(half));
    close(sv[0]);
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 1000), DL_ERR_CLOSED);
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 1000), DL_ERR_CLOSED);

    /* Sending to a closed peer must not raise SIGPIPE. */
    json_t *json = json_object();
    dl_status_t st = DL_OK;
    for (int i = 0; i < 3 && st == DL_OK; i++)
        st = dl_frame_send_fd(sv[1], json, "x", 1, 1000);
    assert_int_equal(st, DL_ERR_CLOSED);
    json_decref(json);
    close(sv[1]);
}

static void test_fd_send_timeout(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    /* Nobody reads, so a large frame cannot be sent in time. */
    size_t blob_len = 16u << 20;
    uint8_t *blob = calloc(1, blob_len);
    json_t *json = json_object();
    int64_t t0 = now_ms();
    assert_int_equal(dl_frame_send_fd(sv[0], json, blob, blob_len, 100), DL_ERR_TIMEOUT);
    assert_in_range(now_ms() - t0, 90, 2000);
    json_decref(json);
    free(blob);
    close(sv[0]);
    close(sv[1]);
}

static void test_fd_rejects_garbage(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    uint8_t buf[64];
    size_t n = raw_frame(buf, 4 + 5, 5, "[1,2]");
    assert_int_equal(write(sv[0], buf, n), (ssize_t)n);
    dl_frame_t f = {0};
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 1000), DL_ERR_PROTOCOL);
    put_be32(buf, 0xffffffffu);
    assert_int_equal(write(sv[0], buf, 8), 8);
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 1000), DL_ERR_TOO_BIG);
    n = raw_frame(buf, 8, 100, "");
    assert_int_equal(write(sv[0], buf, n), (ssize_t)n);
    assert_int_equal(dl_frame_recv_fd(sv[1], &f, 1000), DL_ERR_PROTOCOL);
    assert_null(f.json);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_no_blob),
        cmocka_unit_test(test_round_trip_blob),
        cmocka_unit_test(test_encode_rejects_non_object),
        cmocka_unit_test(test_byte_at_a_time),
        cmocka_unit_test(test_several_frames_in_one_feed),
        cmocka_unit_test(test_garbage_random),
        cmocka_unit_test(test_garbage_huge_length),
        cmocka_unit_test(test_garbage_bad_lengths),
        cmocka_unit_test(test_garbage_json),
        cmocka_unit_test(test_fd_round_trip),
        cmocka_unit_test(test_fd_timeout_and_close),
        cmocka_unit_test(test_fd_send_timeout),
        cmocka_unit_test(test_fd_rejects_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
