/* The frame server (distlab/frame_server.h) on a real loop and a real
 * socket: a client that authenticates and exchanges a frame each way, one
 * with a wrong token, a silent one dropped at its deadline, a server
 * without a token, and bytes that wait unread while the loop is busy.
 * The loop runs on the test's thread; each client is a thread using the
 * blocking helpers of distlab/frame.h and auth.h. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "distlab/auth.h"
#include "distlab/frame.h"
#include "distlab/frame_server.h"

#define TOKEN "an-example-session-token-0123456789"

typedef struct {
    uv_loop_t loop;
    uv_timer_t tick;
    dl_frame_server_t *srv;
    int port;
    /* What the server saw. */
    int opened, frames, closed, refused;
    char last_refused[400];
    char last_close[64];
    /* The client thread. */
    pthread_t th;
    const char *token;
    bool silent;
    bool busy; /* the server's first frame keeps the loop busy; a second waits */
    atomic_int busy_entered, second_sent; /* the handshake of the two */
    uint64_t busy_rx_age_ms;              /* now - dl_frame_conn_last_rx, late in that frame */
    atomic_int client_done;
    dl_status_t client_st;
    json_t *reply;
} fx_t;

/* ---- the server's side ---- */

static bool on_auth(dl_frame_conn_t *c, const json_t *auth, json_t *welcome, char *why, size_t cap)
{
    (void)c;
    (void)why;
    (void)cap;
    const char *role = json_string_value(json_object_get(auth, "role"));
    assert_non_null(role);
    json_object_set_new(welcome, "hello", json_string(role));
    return true;
}

static void on_open(dl_frame_conn_t *c)
{
    fx_t *fx = dl_frame_conn_arg(c);
    fx->opened++;
}

/* Echoes each frame's "n" back, plus one. */
static void on_frame(dl_frame_conn_t *c, dl_frame_t *f)
{
    fx_t *fx = dl_frame_conn_arg(c);
    fx->frames++;
    json_int_t n = json_integer_value(json_object_get(f->json, "n"));
    if (fx->busy && fx->frames == 1) {
        /* The loop is busy for 300 ms, and the client sends its second
         * frame only once this frame is being handled (so that one read
         * cannot take both): its bytes wait in the kernel, and they count. */
        uint64_t t0 = uv_hrtime() / 1000000;
        atomic_store(&fx->busy_entered, 1);
        for (int k = 0; k < 5000 && !atomic_load(&fx->second_sent); k++)
            usleep(1000);
        uint64_t waited = uv_hrtime() / 1000000 - t0;
        if (waited < 300)
            usleep((useconds_t)(300 - waited) * 1000);
        uint64_t now = uv_hrtime() / 1000000, rx = dl_frame_conn_last_rx(c);
        fx->busy_rx_age_ms = now > rx ? now - rx : 0;
    }
    json_t *r = json_pack("{s:I}", "n", n + 1);
    assert_int_equal(dl_frame_conn_send(c, r, f->blob, f->blob_len), DL_OK);
    json_decref(r);
}

static void on_close(dl_frame_conn_t *c, const char *why)
{
    fx_t *fx = dl_frame_conn_arg(c);
    fx->closed++;
    snprintf(fx->last_close, sizeof(fx->last_close), "%s", why);
}

static void on_refused(void *arg, const char *line)
{
    fx_t *fx = arg;
    fx->refused++;
    snprintf(fx->last_refused, sizeof(fx->last_refused), "%s", line);
}

static const dl_frame_server_cbs_t cbs = {
    .on_auth = on_auth,
    .on_open = on_open,
    .on_frame = on_frame,
    .on_close = on_close,
    .on_refused = on_refused,
};

/* ---- the client's side ---- */

static void *client_main(void *arg)
{
    fx_t *fx = arg;
    int fd = -1;
    dl_status_t st = dl_frame_connect("127.0.0.1", fx->port, 2000, &fd);
    if (st != DL_OK)
        goto out;
    if (fx->silent) {
        /* Reads the challenge, then says nothing: the server must hang up. */
        dl_frame_t f = {0};
        st = dl_frame_recv_fd(fd, &f, 2000);
        dl_frame_clear(&f);
        if (st == DL_OK)
            st = dl_frame_recv_fd(fd, &f, 5000);
        goto out_close;
    }
    if (fx->token != NULL) {
        json_t *extra = json_pack("{s:s}", "role", "tester");
        json_t *welcome = NULL;
        st = dl_auth_client_fd(fd, fx->token, extra, 2000, &welcome);
        json_decref(extra);
        if (st != DL_OK)
            goto out_close;
        assert_string_equal(json_string_value(json_object_get(welcome, "hello")), "tester");
        json_decref(welcome);
    }
    json_t *msg = json_pack("{s:i}", "n", 41);
    st = dl_frame_send_fd(fd, msg, "blob", 4, 2000);
    if (st == DL_OK && fx->busy) {
        for (int k = 0; k < 5000 && !atomic_load(&fx->busy_entered); k++)
            usleep(1000);
        st = dl_frame_send_fd(fd, msg, "blob", 4, 2000);
        atomic_store(&fx->second_sent, 1);
    }
    json_decref(msg);
    if (st != DL_OK)
        goto out_close;
    dl_frame_t f = {0};
    st = dl_frame_recv_fd(fd, &f, 2000);
    if (st == DL_OK) {
        assert_int_equal(f.blob_len, 4);
        assert_memory_equal(f.blob, "blob", 4);
        fx->reply = json_incref(f.json);
    }
    dl_frame_clear(&f);
    if (st == DL_OK && fx->busy) {
        st = dl_frame_recv_fd(fd, &f, 2000);
        dl_frame_clear(&f);
    }
out_close:
    close(fd);
out:
    fx->client_st = st;
    atomic_store(&fx->client_done, 1);
    return NULL;
}

/* ---- the loop ---- */

static void on_tick(uv_timer_t *t)
{
    fx_t *fx = t->data;
    /* Once the client has finished, give the server a moment to see the
     * close, then stop. */
    static int after;
    if (!atomic_load(&fx->client_done)) {
        after = 0;
        return;
    }
    if (++after < 10)
        return;
    after = 0;
    uv_close((uv_handle_t *)&fx->tick, NULL);
    dl_frame_server_close(fx->srv, NULL, NULL);
}

static void run(fx_t *fx, const char *server_token, int auth_timeout_ms)
{
    assert_int_equal(uv_loop_init(&fx->loop), 0);
    dl_frame_server_opts_t opts = {
        .name = "test server",
        .token = server_token,
        .auth_timeout_ms = auth_timeout_ms,
    };
    assert_int_equal(dl_frame_server_start(&fx->loop, &opts, &cbs, fx, &fx->srv), DL_OK);
    fx->port = dl_frame_server_port(fx->srv);
    assert_true(fx->port > 0);
    uv_timer_init(&fx->loop, &fx->tick);
    fx->tick.data = fx;
    uv_timer_start(&fx->tick, on_tick, 10, 10);
    assert_int_equal(pthread_create(&fx->th, NULL, client_main, fx), 0);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    pthread_join(fx->th, NULL);
    assert_int_equal(uv_loop_close(&fx->loop), 0);
}

static void test_authenticated_exchange(void **state)
{
    (void)state;
    fx_t fx = {.token = TOKEN};
    run(&fx, TOKEN, 0);
    assert_int_equal(fx.client_st, DL_OK);
    assert_int_equal(json_integer_value(json_object_get(fx.reply, "n")), 42);
    json_decref(fx.reply);
    assert_int_equal(fx.opened, 1);
    assert_int_equal(fx.frames, 1);
    assert_int_equal(fx.closed, 1);
    assert_string_equal(fx.last_close, "connection closed");
    assert_int_equal(fx.refused, 0);
}

static void test_wrong_token_refused(void **state)
{
    (void)state;
    fx_t fx = {.token = "another-token-that-is-long-enough-000"};
    run(&fx, TOKEN, 0);
    assert_int_not_equal(fx.client_st, DL_OK);
    assert_int_equal(fx.opened, 0);
    assert_int_equal(fx.frames, 0);
    assert_int_equal(fx.refused, 1);
    assert_non_null(strstr(fx.last_refused, "wrong token"));
}

static void test_silent_dropped_at_deadline(void **state)
{
    (void)state;
    fx_t fx = {.silent = true};
    run(&fx, TOKEN, 200);
    assert_int_equal(fx.client_st, DL_ERR_CLOSED);
    assert_int_equal(fx.opened, 0);
    assert_int_equal(fx.refused, 1);
    assert_non_null(strstr(fx.last_refused, "no answer to the challenge in time"));
}

static void test_without_token(void **state)
{
    (void)state;
    fx_t fx = {.token = NULL};
    run(&fx, NULL, 0);
    assert_int_equal(fx.client_st, DL_OK);
    assert_int_equal(json_integer_value(json_object_get(fx.reply, "n")), 42);
    json_decref(fx.reply);
    assert_int_equal(fx.opened, 1);
    assert_int_equal(fx.frames, 1);
}

/* A loop that is busy (a flood from one peer, a slow callback) must not
 * take another peer for silent: bytes waiting unread are as good as read. */
static void test_waiting_bytes_are_heard(void **state)
{
    (void)state;
    fx_t fx = {.token = NULL, .busy = true};
    run(&fx, NULL, 0);
    assert_int_equal(fx.client_st, DL_OK);
    json_decref(fx.reply);
    assert_int_equal(fx.frames, 2);
    /* Read 300 ms before; heard at most a few ms ago. */
    assert_true(fx.busy_rx_age_ms < 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authenticated_exchange),
        cmocka_unit_test(test_wrong_token_refused),
        cmocka_unit_test(test_silent_dropped_at_deadline),
        cmocka_unit_test(test_without_token),
        cmocka_unit_test(test_waiting_bytes_are_heard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
