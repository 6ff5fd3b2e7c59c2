/* The store under a flood of connections that never authenticate, in a
 * process with few descriptors: a real client still gets in at once, the
 * silent ones are dropped (beyond the cap at once, the rest at the
 * deadline), and running out of descriptors does not make the server spin.
 *
 * The descriptor limit is lowered for this whole executable, so these tests
 * live apart from test_store.c. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "distlab/guard.h"
#include "distlab/store.h"

#define HOST     "127.0.0.1"
#define TOKEN    "0123456789abcdef0123456789abcdef"
#define FD_LIMIT 200
#define N_SILENT 150

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A connection that says nothing; -1 when the system refuses a socket. */
static int silent_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, HOST, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether the server has closed fd by the deadline (the challenge it sent
 * first is read and ignored). */
static bool closed_by(int fd, int64_t deadline)
{
    char buf[512];
    for (;;) {
        int left = (int)(deadline - now_ms());
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left > 0 ? left : 0) <= 0)
            return false;
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

static void test_silent_flood(void **state)
{
    (void)state;
    dl_store_server_t *srv;
    assert_int_equal(dl_store_server_start_thread_auth(HOST, 0, TOKEN, &srv), DL_OK);
    int port = dl_store_server_port(srv);
    int fds[N_SILENT];
    int64_t opened = now_ms();
    for (int i = 0; i < N_SILENT; i++) {
        fds[i] = silent_connect(port);
        assert_true(fds[i] >= 0);
    }

    /* Both ends of every silent connection live in this process: without a
     * cap the server would have run out of descriptors by now. */
    int64_t t0 = now_ms();
    dl_store_t *store = NULL;
    assert_int_equal(dl_store_connect_auth(HOST, port, TOKEN, 5000, &store), DL_OK);
    assert_int_equal(dl_store_set_str(store, "k", "v"), DL_OK);
    int64_t n = -1;
    assert_int_equal(dl_store_num_keys(store, &n), DL_OK);
    assert_int_equal(n, 1);
    /* In well under the deadline: it did not wait for the silent ones to go. */
    assert_true(now_ms() - t0 < dl_guard_auth_timeout_ms() / 2);

    /* The oldest made room at once, while the newest (within the cap) wait
     * for the deadline, which has not come yet; then they all go. */
    assert_true(closed_by(fds[0], now_ms() + 1000));
    assert_true(now_ms() - opened < dl_guard_auth_timeout_ms() - 500);
    assert_false(closed_by(fds[N_SILENT - 1], now_ms()));
    int64_t deadline = opened + dl_guard_auth_timeout_ms() + 3000;
    for (int i = 0; i < N_SILENT; i++) {
        assert_true(closed_by(fds[i], deadline));
        close(fds[i]);
    }
    /* The client that authenticated is still served. */
    assert_int_equal(dl_store_num_keys(store, &n), DL_OK);
    dl_store_close(store);
    dl_store_server_stop_thread(srv);
}

static void test_out_of_descriptors(void **state)
{
    (void)state;
    dl_store_server_t *srv;
    assert_int_equal(dl_store_server_start_thread_auth(HOST, 0, TOKEN, &srv), DL_OK);
    int port = dl_store_server_port(srv);

    /* Take every descriptor but a few, then let clients connect: the server
     * cannot accept them. */
    int fillers[FD_LIMIT];
    int n_fill = 0;
    for (int fd; n_fill < FD_LIMIT && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
        fillers[n_fill++] = fd;
    assert_true(n_fill > 3);
    for (int i = 0; i < 3; i++)
        close(fillers[--n_fill]);
    int socks[3];
    int n_socks = 0;
    for (int i = 0; i < 3; i++)
        if ((socks[n_socks] = silent_connect(port)) >= 0)
            n_socks++;
    assert_true(n_socks > 0);

    /* The server must not spin on a listener it cannot drain. */
    int64_t cpu0 = cpu_ms();
    struct timespec second = {.tv_sec = 1};
    nanosleep(&second, NULL);
    assert_true(cpu_ms() - cpu0 < 500);

    for (int i = 0; i < n_socks; i++)
        close(socks[i]);
    while (n_fill > 0)
        close(fillers[--n_fill]);
    /* With descriptors back, a real client gets in. */
    dl_store_t *store = NULL;
    assert_int_equal(dl_store_connect_auth(HOST, port, TOKEN, 5000, &store), DL_OK);
    assert_int_equal(dl_store_set_str(store, "k", "v"), DL_OK);
    dl_store_close(store);
    dl_store_server_stop_thread(srv);
}

/* DISTLAB_AUTH_TIMEOUT: seconds, as sshd's LoginGraceTime; anything else is
 * refused with one line naming it, and reads as the default meanwhile. */
static void test_auth_timeout_variable(void **state)
{
    (void)state;
    char why[512];
    int ms = 0;
    const struct {
        const char *value;
        int ms;
    } good[] = {{"", DL_GUARD_AUTH_TIMEOUT_MS},
                {"2.5", 2500},
                {"3600", 3600000},
                {"0.1", 100},
                {"4", 4000}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        setenv("DISTLAB_AUTH_TIMEOUT", good[i].value, 1);
        assert_int_equal(dl_guard_env_auth_timeout(&ms, why, sizeof(why)), DL_OK);
        assert_int_equal(ms, good[i].ms);
        assert_int_equal(dl_guard_auth_timeout_ms(), good[i].ms);
    }
    const char *bad[] = {"abc", "0", "-1", "0.05", "3601", "nan", "5s"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("DISTLAB_AUTH_TIMEOUT", bad[i], 1);
        assert_int_equal(dl_guard_env_auth_timeout(&ms, why, sizeof(why)), DL_ERR_INVALID);
        assert_non_null(strstr(why, "DISTLAB_AUTH_TIMEOUT='"));
        assert_null(strchr(why, '\n'));
        assert_int_equal(dl_guard_auth_timeout_ms(), DL_GUARD_AUTH_TIMEOUT_MS);
    }
    setenv("DISTLAB_AUTH_TIMEOUT", "4", 1); /* the other tests' deadline */
}

int main(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max < FD_LIMIT) {
        fprintf(stderr, "cannot set a descriptor limit of %d: skipped\n", FD_LIMIT);
        return 77;
    }
    /* The deadline of 10 s, shortened as DISTLAB_AUTH_TIMEOUT allows: the
     * silent connections are waited for until it passes, and what happens
     * at once must still happen well before it. */
    setenv("DISTLAB_AUTH_TIMEOUT", "4", 1);
    rl.rlim_cur = FD_LIMIT;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        perror("setrlimit");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth_timeout_variable),
        cmocka_unit_test(test_silent_flood),
        cmocka_unit_test(test_out_of_descriptors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
