/* The rendezvous store: a thread-mode server on 127.0.0.1 and blocking
 * clients in this process, in threads and in forked processes. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "distlab/auth.h"
#include "distlab/frame.h"
#include "distlab/store.h"

#define HOST "127.0.0.1"

typedef struct {
    dl_store_server_t *srv;
    int port;
    dl_store_t *store;
} fixture_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    fixture_t *fx = calloc(1, sizeof(*fx));
    assert_int_equal(dl_store_server_start_thread(HOST, 0, &fx->srv), DL_OK);
    fx->port = dl_store_server_port(fx->srv);
    assert_true(fx->port > 0);
    assert_int_equal(dl_store_connect(HOST, fx->port, 5000, &fx->store), DL_OK);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    dl_store_close(fx->store);
    dl_store_server_stop_thread(fx->srv);
    free(fx);
    return 0;
}

static void assert_store_value(dl_store_t *store, const char *key, const void *want,
                               size_t want_len)
{
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(dl_store_get(store, key, &val, &len), DL_OK);
    assert_int_equal(len, want_len);
    assert_memory_equal(val, want, want_len);
    assert_int_equal(((char *)val)[len], '\0');
    free(val);
}

/* A port on which nobody listens, found by binding and letting go. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- a helper thread that sets keys after a delay ---- */

typedef struct {
    int port;
    int delay_ms;
    const char *const *keys;
    size_t nkeys;
    dl_status_t st;
} setter_t;

static void *setter_main(void *arg)
{
    setter_t *s = arg;
    dl_store_t *store;
    s->st = dl_store_connect(HOST, s->port, 5000, &store);
    if (s->st != DL_OK)
        return NULL;
    for (size_t i = 0; i < s->nkeys && s->st == DL_OK; i++) {
        sleep_ms(s->delay_ms);
        s->st = dl_store_set_str(store, s->keys[i], s->keys[i]);
    }
    dl_store_close(store);
    return NULL;
}

/* ---- tests ---- */

static void test_set_get(void **state)
{
    fixture_t *fx = *state;
    assert_int_equal(dl_store_set_str(fx->store, "a", "hello"), DL_OK);
    assert_store_value(fx->store, "a", "hello", 5);
    /* Overwrite, binary values with NULs, and an empty value. */
    assert_int_equal(dl_store_set_str(fx->store, "a", "bye"), DL_OK);
    assert_store_value(fx->store, "a", "bye", 3);
    const char bin[] = {'x', 0, 'y', 0};
    assert_int_equal(dl_store_set(fx->store, "bin", bin, sizeof(bin)), DL_OK);
    assert_store_value(fx->store, "bin", bin, sizeof(bin));
    assert_int_equal(dl_store_set(fx->store, "empty", NULL, 0), DL_OK);
    assert_store_value(fx->store, "empty", "", 0);
}

static void test_large_value(void **state)
{
    fixture_t *fx = *state;
    size_t len = (5u << 20) + 3;
    uint8_t *big = malloc(len);
    for (size_t i = 0; i < len; i++)
        big[i] = (uint8_t)(i * 31 + 7);
    assert_int_equal(dl_store_set(fx->store, "big", big, len), DL_OK);
    assert_store_value(fx->store, "big", big, len);
    free(big);
}

static void test_get_blocks_until_set(void **state)
{
    fixture_t *fx = *state;
    const char *keys[] = {"late"};
    setter_t s = {.port = fx->port, .delay_ms = 150, .keys = keys, .nkeys = 1};
    pthread_t th;
    int64_t t0 = now_ms();
    assert_int_equal(pthread_create(&th, NULL, setter_main, &s), 0);
    assert_store_value(fx->store, "late", "late", 4);
    assert_true(now_ms() - t0 >= 100);
    pthread_join(th, NULL);
    assert_int_equal(s.st, DL_OK);
}

static void test_get_blocks_until_other_process_sets(void **state)
{
    fixture_t *fx = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dl_store_t *store;
        sleep_ms(150);
        if (dl_store_connect(HOST, fx->port, 5000, &store) != DL_OK)
            _exit(1);
        dl_status_t st = dl_store_set_str(store, "from/child", "42");
        dl_store_close(store);
        _exit(st == DL_OK ? 0 : 2);
    }
    assert_store_value(fx->store, "from/child", "42", 2);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_add_concurrent_processes(void **state)
{
    fixture_t *fx = *state;
    enum { NPROC = 4, NADD = 50 };
    pid_t pids[NPROC];
    for (int p = 0; p < NPROC; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            dl_store_t *store;
            if (dl_store_connect(HOST, fx->port, 5000, &store) != DL_OK)
                _exit(1);
            int64_t prev = 0;
            for (int i = 0; i < NADD; i++) {
                int64_t v;
                /* The counter only grows, as seen by any one client. */
                if (dl_store_add(store, "counter", 1, &v) != DL_OK || v <= prev)
                    _exit(2);
                prev = v;
            }
            dl_store_close(store);
            _exit(0);
        }
    }
    for (int p = 0; p < NPROC; p++) {
        int status;
        assert_int_equal(waitpid(pids[p], &status, 0), pids[p]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    int64_t total = -1;
    assert_int_equal(dl_store_add(fx->store, "counter", 0, &total), DL_OK);
    assert_int_equal(total, NPROC * NADD);
    assert_int_equal(dl_store_add(fx->store, "counter", -5, &total), DL_OK);
    assert_int_equal(total, NPROC * NADD - 5);
    /* The counter is stored as decimal text. */
    assert_store_value(fx->store, "counter", "195", 3);
}

static void test_add_errors(void **state)
{
    fixture_t *fx = *state;
    int64_t v = 77;
    assert_int_equal(dl_store_set_str(fx->store, "text", "abc"), DL_OK);
    assert_int_equal(dl_store_add(fx->store, "text", 1, &v), DL_ERR_INVALID);
    assert_int_equal(v, 77);
    assert_int_equal(dl_store_add(fx->store, "max", INT64_MAX, &v), DL_OK);
    assert_int_equal(dl_store_add(fx->store, "max", 1, &v), DL_ERR_RANGE);
    assert_int_equal(v, INT64_MAX);
    /* The connection is still good after error answers. */
    assert_int_equal(dl_store_add(fx->store, "fresh", 3, &v), DL_OK);
    assert_int_equal(v, 3);
}

static void test_wait_multiple_keys(void **state)
{
    fixture_t *fx = *state;
    const char *keys[] = {"w/0", "w/1", "w/2"};
    setter_t s = {.port = fx->port, .delay_ms = 50, .keys = keys, .nkeys = 3};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, setter_main, &s), 0);
    int64_t t0 = now_ms();
    assert_int_equal(dl_store_wait(fx->store, keys, 3), DL_OK);
    assert_true(now_ms() - t0 >= 100);
    pthread_join(th, NULL);
    assert_int_equal(s.st, DL_OK);
    /* All present now, so a second wait answers at once. */
    assert_int_equal(dl_store_wait(fx->store, keys, 3), DL_OK);
    assert_int_equal(dl_store_wait(fx->store, NULL, 0), DL_OK);
    int64_t n;
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 3);
}

static void test_get_timeout(void **state)
{
    fixture_t *fx = *state;
    dl_store_set_timeout(fx->store, 200);
    void *val = (void *)0x1;
    size_t len = 99;
    int64_t t0 = now_ms();
    assert_int_equal(dl_store_get(fx->store, "never", &val, &len), DL_ERR_TIMEOUT);
    int64_t dt = now_ms() - t0;
    assert_in_range(dt, 190, 2000);
    assert_ptr_equal(val, (void *)0x1);
    assert_int_equal(len, 99);
    const char *keys[] = {"x", "never"};
    assert_int_equal(dl_store_set_str(fx->store, "x", "1"), DL_OK);
    assert_int_equal(dl_store_wait(fx->store, keys, 2), DL_ERR_TIMEOUT);

    /* The abandoned get must not be answered on the next request: the
     * client reconnects, and the server frees the parked waiter. */
    assert_int_equal(dl_store_set_str(fx->store, "never", "now"), DL_OK);
    assert_store_value(fx->store, "never", "now", 3);
    int64_t n;
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 2);
}

static void test_delete_num_keys(void **state)
{
    fixture_t *fx = *state;
    int64_t n = -1;
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 0);
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "rank/%d", i);
        assert_int_equal(dl_store_set_str(fx->store, key, key), DL_OK);
    }
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 100);
    assert_int_equal(dl_store_delete(fx->store, "rank/7"), DL_OK);
    assert_int_equal(dl_store_delete(fx->store, "rank/7"), DL_ERR_NOT_FOUND);
    assert_int_equal(dl_store_delete(fx->store, "nothing"), DL_ERR_NOT_FOUND);
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 99);
    assert_store_value(fx->store, "rank/99", "rank/99", 7);
}

/* ---- a misbehaving client ---- */

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* True when the server closes fd within two seconds. */
static int server_hung_up(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    for (;;) {
        if (poll(&pfd, 1, 2000) <= 0)
            return 0;
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 1;
        if (n < 0)
            return 0;
    }
}

typedef struct {
    int port;
    dl_status_t st;
    char *val;
} getter_t;

static void *getter_main(void *arg)
{
    getter_t *g = arg;
    dl_store_t *store;
    g->st = dl_store_connect(HOST, g->port, 5000, &store);
    if (g->st != DL_OK)
        return NULL;
    size_t len;
    g->st = dl_store_get(store, "after/garbage", (void **)&g->val, &len);
    dl_store_close(store);
    return NULL;
}

static void test_garbage_client_dropped(void **state)
{
    fixture_t *fx = *state;
    /* A second client waits through the whole episode. */
    getter_t g = {.port = fx->port};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, getter_main, &g), 0);

    static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, '{', '}'};
    static const uint8_t not_object[] = {0, 0, 0, 9, 0, 0, 0, 5, '[', '1', ',', '2', ']'};
    static const uint8_t json_past_body[] = {0, 0, 0, 6, 0, 0, 1, 0, '{', '}'};
    const struct {
        const uint8_t *p;
        size_t len;
    } garbage[] = {
        {huge, sizeof(huge)},
        {not_object, sizeof(not_object)},
        {json_past_body, sizeof(json_past_body)},
        {(const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18},
    };
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        int fd = raw_connect(fx->port);
        assert_int_equal(send(fd, garbage[i].p, garbage[i].len, MSG_NOSIGNAL),
                         (ssize_t)garbage[i].len);
        assert_true(server_hung_up(fd));
        close(fd);
    }
    /* A client that vanishes mid-frame is dropped too. */
    int fd = raw_connect(fx->port);
    assert_int_equal(send(fd, not_object, 6, MSG_NOSIGNAL), 6);
    close(fd);

    /* The well-behaved clients never noticed. */
    assert_int_equal(dl_store_set_str(fx->store, "after/garbage", "fine"), DL_OK);
    pthread_join(th, NULL);
    assert_int_equal(g.st, DL_OK);
    assert_string_equal(g.val, "fine");
    free(g.val);
    assert_store_value(fx->store, "after/garbage", "fine", 4);
}

static void test_bad_request_answered(void **state)
{
    fixture_t *fx = *state;
    /* A well-framed request with an unknown op gets an error answer and
     * the connection stays usable. */
    int fd = raw_connect(fx->port);
    static const uint8_t req[] = {0,   0,   0,   16,  0,   0,   0,   12,  '{', '"',
                                  'o', 'p', '"', ':', '"', 'z', 'a', 'p', '"', '}'};
    assert_int_equal(send(fd, req, sizeof(req), MSG_NOSIGNAL), (ssize_t)sizeof(req));
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    assert_true(n > 8);
    buf[n] = '\0';
    assert_non_null(strstr(buf + 8, "\"ok\":false"));
    close(fd);
    assert_int_equal(dl_store_set_str(fx->store, "still", "here"), DL_OK);
}

/* Sends one request frame over a raw socket. */
static void raw_request(int fd, json_t *req)
{
    assert_int_equal(dl_frame_send_fd(fd, req, NULL, 0, 2000), DL_OK);
    json_decref(req);
}

/* Reads one response and checks it: ok, the "value" (when value >= 0) and
 * the blob (when blob is not NULL). */
static void raw_expect(int fd, json_int_t value, const char *blob)
{
    dl_frame_t f = {0};
    assert_int_equal(dl_frame_recv_fd(fd, &f, 2000), DL_OK);
    assert_true(json_is_true(json_object_get(f.json, "ok")));
    if (value >= 0)
        assert_int_equal(json_integer_value(json_object_get(f.json, "value")), value);
    if (blob != NULL) {
        assert_int_equal(f.blob_len, strlen(blob));
        assert_memory_equal(f.blob, blob, f.blob_len);
    }
    dl_frame_clear(&f);
}

static void test_pipelined_requests_keep_order(void **state)
{
    fixture_t *fx = *state;
    /* Requests queued behind a parked get wait for it, then run in order. */
    int fd = raw_connect(fx->port);
    raw_request(fd, json_pack("{s:s,s:s}", "op", "get", "key", "p/missing"));
    raw_request(fd, json_pack("{s:s,s:s,s:i}", "op", "add", "key", "p/n", "delta", 1));
    raw_request(fd, json_pack("{s:s,s:s}", "op", "get", "key", "p/n"));
    /* A second connection waits for a key that an add will create. */
    int fd2 = raw_connect(fx->port);
    raw_request(fd2, json_pack("{s:s,s:[s]}", "op", "wait", "keys", "p/cnt"));

    sleep_ms(50);
    int64_t n;
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 0);
    assert_int_equal(dl_store_add(fx->store, "p/cnt", 5, &n), DL_OK);
    raw_expect(fd2, -1, NULL);
    assert_int_equal(dl_store_set_str(fx->store, "p/missing", "v"), DL_OK);
    raw_expect(fd, -1, "v");
    raw_expect(fd, 1, NULL);
    raw_expect(fd, -1, "1");
    close(fd);
    close(fd2);
}

/* ---- connecting and stopping ---- */

static void test_connect_no_server_times_out(void **state)
{
    (void)state;
    int port = free_port();
    dl_store_t *store = (dl_store_t *)0x1;
    int64_t t0 = now_ms();
    assert_int_equal(dl_store_connect(HOST, port, 300, &store), DL_ERR_TIMEOUT);
    assert_in_range(now_ms() - t0, 290, 3000);
    assert_ptr_equal(store, (dl_store_t *)0x1);
}

typedef struct {
    int port;
    dl_store_server_t *srv;
} late_server_t;

static void *late_server_main(void *arg)
{
    late_server_t *ls = arg;
    sleep_ms(200);
    assert_int_equal(dl_store_server_start_thread(HOST, ls->port, &ls->srv), DL_OK);
    return NULL;
}

static void test_connect_waits_for_server(void **state)
{
    (void)state;
    late_server_t ls = {.port = free_port()};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, late_server_main, &ls), 0);
    dl_store_t *store;
    assert_int_equal(dl_store_connect(HOST, ls.port, 5000, &store), DL_OK);
    pthread_join(th, NULL);
    assert_int_equal(dl_store_set_str(store, "k", "v"), DL_OK);
    assert_store_value(store, "k", "v", 1);
    dl_store_close(store);
    dl_store_server_stop_thread(ls.srv);
}

static void test_port_in_use(void **state)
{
    fixture_t *fx = *state;
    dl_store_server_t *srv = (dl_store_server_t *)0x1;
    assert_int_not_equal(dl_store_server_start_thread(HOST, fx->port, &srv), DL_OK);
    assert_ptr_equal(srv, (dl_store_server_t *)0x1);
}

static void test_stop_with_parked_client(void **state)
{
    (void)state;
    dl_store_server_t *srv;
    assert_int_equal(dl_store_server_start_thread(HOST, 0, &srv), DL_OK);
    getter_t g = {.port = dl_store_server_port(srv)};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, getter_main, &g), 0);
    sleep_ms(100);
    /* Stopping frees the parked get and closes its connection. */
    dl_store_server_stop_thread(srv);
    pthread_join(th, NULL);
    assert_int_equal(g.st, DL_ERR_CLOSED);
    assert_null(g.val);
}

static void test_server_on_caller_loop(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    dl_store_server_t *srv;
    assert_int_equal(dl_store_server_start(&loop, HOST, 0, &srv), DL_OK);
    assert_true(dl_store_server_port(srv) > 0);
    dl_store_server_stop(srv);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- a session's token ---- */

#define TOKEN "0123456789abcdef-the-session-token"

static int setup_auth(void **state)
{
    fixture_t *fx = calloc(1, sizeof(*fx));
    assert_int_equal(dl_store_server_start_thread_auth(HOST, 0, TOKEN, &fx->srv), DL_OK);
    fx->port = dl_store_server_port(fx->srv);
    assert_int_equal(dl_store_connect_auth(HOST, fx->port, TOKEN, 5000, &fx->store), DL_OK);
    *state = fx;
    return 0;
}

static void test_auth_good_token(void **state)
{
    fixture_t *fx = *state;
    assert_int_equal(dl_store_set_str(fx->store, "a", "hello"), DL_OK);
    assert_store_value(fx->store, "a", "hello", 5);
    /* A request that times out drops the connection; the next request
     * reconnects and must authenticate again. */
    dl_store_set_timeout(fx->store, 100);
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(dl_store_get(fx->store, "never", &val, &len), DL_ERR_TIMEOUT);
    dl_store_set_timeout(fx->store, 5000);
    assert_store_value(fx->store, "a", "hello", 5);
}

static void test_auth_wrong_token(void **state)
{
    fixture_t *fx = *state;
    dl_store_t *store = (dl_store_t *)0x1;
    assert_int_equal(dl_store_connect_auth(HOST, fx->port, "not-the-session-token", 2000, &store),
                     DL_ERR_DENIED);
    assert_ptr_equal(store, (dl_store_t *)0x1);
    /* The session's own client never noticed. */
    assert_int_equal(dl_store_set_str(fx->store, "still", "here"), DL_OK);
    assert_store_value(fx->store, "still", "here", 4);
}

static void test_auth_client_without_token(void **state)
{
    fixture_t *fx = *state;
    /* The TCP connection opens, but the first request is refused. */
    dl_store_t *store;
    assert_int_equal(dl_store_connect(HOST, fx->port, 2000, &store), DL_OK);
    assert_int_equal(dl_store_set_str(store, "intruder", "x"), DL_ERR_DENIED);
    dl_store_close(store);
    int64_t n = -1;
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 0);
}

/* Reads the challenge a token server sends first. */
static void raw_expect_challenge(int fd, char nonce[DL_AUTH_HEX_LEN])
{
    dl_frame_t f = {0};
    assert_int_equal(dl_frame_recv_fd(fd, &f, 2000), DL_OK);
    assert_string_equal(json_string_value(json_object_get(f.json, "type")), "challenge");
    const char *n = json_string_value(json_object_get(f.json, "nonce"));
    assert_non_null(n);
    assert_int_equal(strlen(n), DL_AUTH_HEX_LEN - 1);
    if (nonce != NULL)
        snprintf(nonce, DL_AUTH_HEX_LEN, "%s", n);
    dl_frame_clear(&f);
}

static void test_auth_request_before_auth_dropped(void **state)
{
    fixture_t *fx = *state;
    /* A request in place of the answer: dropped unanswered, nothing set. */
    int fd = raw_connect(fx->port);
    raw_expect_challenge(fd, NULL);
    raw_request(fd, json_pack("{s:s,s:s}", "op", "set", "key", "sneaky"));
    assert_true(server_hung_up(fd));
    close(fd);

    /* A reflected challenge (our nonce sent back as theirs) is refused. */
    char nonce[DL_AUTH_HEX_LEN], mac[DL_AUTH_HEX_LEN];
    fd = raw_connect(fx->port);
    raw_expect_challenge(fd, nonce);
    dl_auth_mac(TOKEN, "client", nonce, nonce, mac);
    raw_request(fd, json_pack("{s:s,s:s,s:s}", "type", "auth", "nonce", nonce, "mac", mac));
    assert_true(server_hung_up(fd));
    close(fd);

    /* A frame header announcing a megabyte before authenticating. */
    fd = raw_connect(fx->port);
    raw_expect_challenge(fd, NULL);
    static const uint8_t big[] = {0, 0x10, 0, 0, 0, 0, 0, 2, '{', '}'};
    assert_int_equal(send(fd, big, sizeof(big), MSG_NOSIGNAL), (ssize_t)sizeof(big));
    assert_true(server_hung_up(fd));
    close(fd);

    /* Garbage bytes. */
    fd = raw_connect(fx->port);
    assert_int_equal(send(fd, "GET / HTTP/1.1\r\n\r\n", 18, MSG_NOSIGNAL), 18);
    assert_true(server_hung_up(fd));
    close(fd);

    int64_t n = -1;
    assert_int_equal(dl_store_num_keys(fx->store, &n), DL_OK);
    assert_int_equal(n, 0);
}

static void test_auth_raw_answer_then_requests(void **state)
{
    fixture_t *fx = *state;
    /* The exchange by hand, then a request pipelined behind the answer. */
    int fd = raw_connect(fx->port);
    char nonce[DL_AUTH_HEX_LEN], cn[DL_AUTH_HEX_LEN], mac[DL_AUTH_HEX_LEN];
    raw_expect_challenge(fd, nonce);
    assert_int_equal(dl_auth_new_nonce(cn), DL_OK);
    dl_auth_mac(TOKEN, "client", nonce, cn, mac);
    raw_request(fd, json_pack("{s:s,s:s,s:s}", "type", "auth", "nonce", cn, "mac", mac));
    raw_request(fd, json_pack("{s:s,s:s,s:i}", "op", "add", "key", "n", "delta", 3));
    dl_frame_t f = {0};
    assert_int_equal(dl_frame_recv_fd(fd, &f, 2000), DL_OK);
    assert_string_equal(json_string_value(json_object_get(f.json, "type")), "welcome");
    assert_true(dl_auth_check(TOKEN, "server", nonce, cn,
                              json_string_value(json_object_get(f.json, "mac"))));
    dl_frame_clear(&f);
    raw_expect(fd, 3, NULL);
    close(fd);
}

static void test_auth_token_client_plain_server(void **state)
{
    fixture_t *fx = *state;
    /* A server without a token sends no challenge: the client gives up at
     * its deadline instead of sending requests to the wrong session. */
    dl_store_t *store = (dl_store_t *)0x1;
    assert_int_equal(dl_store_connect_auth(HOST, fx->port, TOKEN, 300, &store), DL_ERR_TIMEOUT);
    assert_ptr_equal(store, (dl_store_t *)0x1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_blocks_until_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_blocks_until_other_process_sets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_concurrent_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_multiple_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_num_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_client_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_request_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_requests_keep_order, setup, teardown),
        cmocka_unit_test(test_connect_no_server_times_out),
        cmocka_unit_test(test_connect_waits_for_server),
        cmocka_unit_test_setup_teardown(test_port_in_use, setup, teardown),
        cmocka_unit_test(test_stop_with_parked_client),
        cmocka_unit_test(test_server_on_caller_loop),
        cmocka_unit_test_setup_teardown(test_auth_good_token, setup_auth, teardown),
        cmocka_unit_test_setup_teardown(test_auth_wrong_token, setup_auth, teardown),
        cmocka_unit_test_setup_teardown(test_auth_client_without_token, setup_auth, teardown),
        cmocka_unit_test_setup_teardown(test_auth_request_before_auth_dropped, setup_auth,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_auth_raw_answer_then_requests, setup_auth, teardown),
        cmocka_unit_test_setup_teardown(test_auth_token_client_plain_server, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
