/* The builtin backend's TCP transport on real rank processes started from
 * env:// variables:
 *
 *   - DISTLAB_TRANSPORT=tcp (every pair of ranks over TCP): every collective
 *     with every algorithm, small and multi-MiB, send/recv, any source and
 *     many outstanding isends and irecvs, values checked;
 *   - a dead peer over TCP is reported, naming the rank and its host;
 *   - garbage and unauthenticated connections to a rank's data port are
 *     dropped while the collective still succeeds;
 *   - a mixed world (DISTLAB_HOST_ID: two "hosts" of two ranks each): shared
 *     memory within a host, TCP across; a death and an abort on one host
 *     reach the other;
 *   - DISTLAB_TRANSPORT=shm across hosts, and an unknown transport, are
 *     refused with a message naming the problem. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
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
#include "distlab/comm.h"
#include "distlab/frame.h"
#include "distlab/log.h"
#include "distlab/store.h"
#include "world.h"

/* Ints so that sums are exact; odd so that chunks split unevenly; large is
 * 2 MiB and a bit per rank. */
#define SMALL 5
#define LARGE 524289
#define SPAN  (1 << 22) /* rank r's values start at r * SPAN */
#define TOKEN "0123456789abcdef0123456789abcdef-test-token"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static dl_tensor_t *vec(dl_comm_t *comm, size_t n, double start)
{
    dl_tensor_t *t = NULL;
    if (dl_tensor_new_1d(DL_INT32, n, comm != NULL ? dl_comm_allocator(comm) : NULL, &t) != DL_OK)
        return NULL;
    dl_tensor_arange(t, start, 1);
    return t;
}

static int64_t at(const dl_tensor_t *t, size_t i)
{
    return ((const int32_t *)t->data)[i];
}

/* Whether t[i] == base + i for every i; says where it is not. */
static bool is_arange(const dl_tensor_t *t, int64_t base, const char *what)
{
    const int32_t *v = t->data;
    for (size_t i = 0; i < t->numel; i++)
        if (v[i] != base + (int64_t)i) {
            fprintf(stderr, "%s: element %zu is %lld, expected %lld\n", what, i,
                    (long long)at(t, i), (long long)(base + (int64_t)i));
            return false;
        }
    return true;
}

/* ---- environments ---- */

/* A store served outside the ranks (DISTLAB_STORE) rather than by rank 0:
 * for worlds that fail, so that no rank waits on a store that went away
 * with rank 0, nor rank 0 for ranks that will never check out. It runs in a
 * process of its own, not a thread of this one: ranks are forked from here,
 * and forking a process with threads can deadlock the child (the sanitizers'
 * allocators). It is no child of ours either (world_run waits for every
 * child): it stops when we close our end of ext_ctl. */
static int ext_port, ext_ctl = -1;

static void ext_store_start(void)
{
    int port_pipe[2], ctl_pipe[2];
    assert_int_equal(pipe(port_pipe), 0);
    assert_int_equal(pipe(ctl_pipe), 0);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        if (fork() != 0)
            _exit(0);
        close(port_pipe[0]);
        close(ctl_pipe[1]);
        dl_store_server_t *srv = NULL;
        int port = -1;
        if (dl_store_server_start_thread("127.0.0.1", 0, &srv) == DL_OK)
            port = dl_store_server_port(srv);
        if (write(port_pipe[1], &port, sizeof(port)) != (ssize_t)sizeof(port))
            _exit(1);
        char b;
        while (read(ctl_pipe[0], &b, 1) > 0)
            ;
        _exit(0);
    }
    assert_true(child > 0);
    waitpid(child, NULL, 0);
    close(port_pipe[1]);
    close(ctl_pipe[0]);
    int port = -1;
    assert_int_equal(read(port_pipe[0], &port, sizeof(port)), sizeof(port));
    close(port_pipe[0]);
    assert_true(port > 0);
    ext_port = port;
    ext_ctl = ctl_pipe[1];
}

static void ext_store_stop(void)
{
    close(ext_ctl);
    ext_ctl = -1;
    ext_port = 0;
}

static void use_ext_store(void)
{
    char where[64];
    snprintf(where, sizeof(where), "127.0.0.1:%d", ext_port);
    setenv("DISTLAB_STORE", where, 1);
}

static void setup_tcp(int rank, void *arg)
{
    (void)rank;
    (void)arg;
    setenv("DISTLAB_TRANSPORT", "tcp", 1);
}

static void setup_tcp_ext(int rank, void *arg)
{
    setup_tcp(rank, arg);
    use_ext_store();
}

static void setup_tcp_token(int rank, void *arg)
{
    setup_tcp(rank, arg);
    setenv("DISTLAB_TOKEN", TOKEN, 1);
}

/* Two "hosts" of two ranks; host-b's ranks name their address themselves. */
static void setup_two_hosts(int rank, void *arg)
{
    (void)arg;
    setenv("DISTLAB_HOST_ID", rank < 2 ? "host-a" : "host-b", 1);
    if (rank >= 2)
        setenv("DISTLAB_HOST_ADDR", "127.0.0.1", 1);
    unsetenv("DISTLAB_TRANSPORT");
}

static void setup_two_hosts_ext(int rank, void *arg)
{
    setup_two_hosts(rank, arg);
    use_ext_store();
}

static dl_store_t *open_store(void)
{
    dl_store_t *store = NULL;
    const char *token = getenv("DISTLAB_TOKEN");
    if (dl_store_connect_auth(getenv("MASTER_ADDR"), atoi(getenv("MASTER_PORT")), token, 10000,
                              &store) != DL_OK)
        return NULL;
    return store;
}

/* ---- every collective ---- */

static int all_reduce_with(dl_comm_t *comm, const char *algo, size_t n)
{
    int me = dl_comm_rank(comm), np = dl_comm_size(comm);
    dl_tensor_t *t = vec(comm, n, (double)me * SPAN);
    dl_coll_opts_t o = {.algo = algo};
    RANK_CHECK(t != NULL && dl_comm_all_reduce(comm, t, DL_OP_SUM, &o, NULL) == DL_OK);
    for (size_t i = 0; i < n; i++)
        RANK_CHECK(at(t, i) == (int64_t)SPAN * np * (np - 1) / 2 + (int64_t)np * (int64_t)i);
    dl_tensor_free(t);
    return 0;
}

static int broadcast_with(dl_comm_t *comm, const char *algo, size_t n)
{
    int me = dl_comm_rank(comm), np = dl_comm_size(comm), root = np - 1;
    dl_tensor_t *t = vec(comm, n, (double)me * SPAN);
    dl_coll_opts_t o = {.algo = algo};
    RANK_CHECK(t != NULL && dl_comm_broadcast(comm, t, root, &o, NULL) == DL_OK);
    RANK_CHECK(is_arange(t, (int64_t)root * SPAN, "broadcast"));
    dl_tensor_free(t);
    return 0;
}

static int reduce_with(dl_comm_t *comm, const char *algo, size_t n)
{
    int me = dl_comm_rank(comm), np = dl_comm_size(comm), root = 1 % np;
    dl_tensor_t *t = vec(comm, n, (double)me * SPAN);
    dl_coll_opts_t o = {.algo = algo};
    RANK_CHECK(t != NULL && dl_comm_reduce(comm, t, root, DL_OP_MAX, &o, NULL) == DL_OK);
    if (me == root)
        RANK_CHECK(is_arange(t, (int64_t)(np - 1) * SPAN, "reduce"));
    dl_tensor_free(t);
    return 0;
}

static int all_gather_with(dl_comm_t *comm, const char *algo, size_t n)
{
    int me = dl_comm_rank(comm), np = dl_comm_size(comm);
    dl_tensor_t *t = vec(comm, n, (double)me * SPAN), *list[8];
    for (int j = 0; j < np; j++)
        list[j] = vec(comm, n, -1);
    dl_coll_opts_t o = {.algo = algo};
    RANK_CHECK(dl_comm_all_gather(comm, list, t, &o, NULL) == DL_OK);
    for (int j = 0; j < np; j++) {
        RANK_CHECK(is_arange(list[j], (int64_t)j * SPAN, "all_gather"));
        dl_tensor_free(list[j]);
    }
    dl_tensor_free(t);
    return 0;
}

static int reduce_scatter_with(dl_comm_t *comm, const char *algo, size_t n)
{
    int me = dl_comm_rank(comm), np = dl_comm_size(comm);
    /* in[k] = me * SPAN + k over np chunks of n */
    dl_tensor_t *in = vec(comm, n * (size_t)np, (double)me * SPAN), *out = vec(comm, n, -1);
    dl_coll_opts_t o = {.algo = algo};
    RANK_CHECK(dl_comm_reduce_scatter(comm, out, in, DL_OP_SUM, &o, NULL) == DL_OK);
    for (size_t i = 0; i < n; i++)
        RANK_CHECK(at(out, i) ==
                   (int64_t)SPAN * np * (np - 1) / 2 + (int64_t)np * (int64_t)((size_t)me * n + i));
    dl_tensor_free(in);
    dl_tensor_free(out);
    return 0;
}

static int all_to_all_with(dl_comm_t *comm, const char *algo, size_t n)
{
    int me = dl_comm_rank(comm), np = dl_comm_size(comm);
    dl_tensor_t *in = vec(comm, n * (size_t)np, (double)me * SPAN), *out = vec(comm, n * np, -1);
    dl_coll_opts_t o = {.algo = algo};
    RANK_CHECK(dl_comm_all_to_all(comm, out, in, NULL, NULL, &o, NULL) == DL_OK);
    /* Chunk j of out is chunk me of rank j's input. */
    for (int j = 0; j < np; j++)
        for (size_t i = 0; i < n; i++)
            RANK_CHECK(at(out, (size_t)j * n + i) ==
                       (int64_t)j * SPAN + (int64_t)((size_t)me * n + i));
    dl_tensor_free(in);
    dl_tensor_free(out);
    return 0;
}

static int gather_scatter_with(dl_comm_t *comm, const char *algo, size_t n)
{
    int me = dl_comm_rank(comm), np = dl_comm_size(comm);
    dl_tensor_t *t = vec(comm, n, (double)me * SPAN), *list[8];
    for (int j = 0; j < np; j++)
        list[j] = vec(comm, n, -1);
    dl_coll_opts_t o = {.algo = algo};
    RANK_CHECK(dl_comm_gather(comm, t, me == 0 ? list : NULL, 0, &o, NULL) == DL_OK);
    if (me == 0)
        for (int j = 0; j < np; j++)
            RANK_CHECK(is_arange(list[j], (int64_t)j * SPAN, "gather"));
    /* Scatter it back from the last rank: list[j] = 7 * SPAN + j... */
    for (int j = 0; j < np; j++)
        dl_tensor_arange(list[j], (double)(np + j) * SPAN, 1);
    RANK_CHECK(dl_comm_scatter(comm, t, me == np - 1 ? list : NULL, np - 1, &o, NULL) == DL_OK);
    RANK_CHECK(is_arange(t, (int64_t)(np + me) * SPAN, "scatter"));
    for (int j = 0; j < np; j++)
        dl_tensor_free(list[j]);
    dl_tensor_free(t);
    return 0;
}

typedef int (*coll_fn_t)(dl_comm_t *comm, const char *algo, size_t n);

static const struct {
    coll_fn_t fn;
    const char *algos[6]; /* NULL-terminated; the default is tried too */
} COLLS[] = {
    {all_reduce_with, {"ring", "rd", "rhd", "direct", NULL}},
    {broadcast_with, {"tree", "chain", "direct", NULL}},
    {reduce_with, {"tree", "chain", "direct", NULL}},
    {all_gather_with, {"ring", "rd", "direct", NULL}},
    {reduce_scatter_with, {"ring", "rhd", "direct", NULL}},
    {all_to_all_with, {"direct", "pairwise", "linear", NULL}},
    {gather_scatter_with, {"tree", "direct", NULL}},
};

/* Every algorithm of every collective, small; with arg, multi-MiB too with
 * the first algorithm and the default. */
static int every_collective(dl_comm_t *comm, void *arg)
{
    bool large = arg != NULL;
    RANK_CHECK(comm != NULL);
    for (size_t c = 0; c < sizeof(COLLS) / sizeof(COLLS[0]); c++) {
        for (int a = 0;; a++) {
            const char *algo = COLLS[c].algos[a];
            RANK_CHECK(COLLS[c].fn(comm, algo, SMALL) == 0);
            if (large && (a == 0 || algo == NULL))
                RANK_CHECK(COLLS[c].fn(comm, algo, LARGE) == 0);
            if (algo == NULL)
                break;
        }
    }
    dl_coll_opts_t o = {.algo = "dissemination"};
    RANK_CHECK(dl_comm_barrier(comm, &o, NULL) == DL_OK);
    o.algo = "direct";
    RANK_CHECK(dl_comm_barrier(comm, &o, NULL) == DL_OK);
    return 0;
}

static void test_tcp_collectives(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(4, setup_tcp, every_collective, (void *)1, 120), 0);
    assert_int_equal(world_run_setup(3, setup_tcp, every_collective, NULL, 60), 0);
}

/* ---- point to point ---- */

static int p2p(dl_comm_t *comm, void *arg)
{
    (void)arg;
    RANK_CHECK(comm != NULL);
    int me = dl_comm_rank(comm), np = dl_comm_size(comm);
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    /* A ring of small, then multi-MiB messages. */
    size_t sizes[] = {1, SMALL, 600, 5 * LARGE / 2};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        dl_tensor_t *out = vec(comm, sizes[k], (double)me * SPAN), *in = vec(comm, sizes[k], -1);
        dl_work_t *w = NULL;
        RANK_CHECK(dl_comm_isend(comm, out, next, (int)k, &w) == DL_OK);
        int src = -1;
        RANK_CHECK(dl_comm_recv(comm, in, prev, (int)k, &src) == DL_OK && src == prev);
        RANK_CHECK(dl_work_wait(w, -1) == DL_OK);
        dl_work_free(w);
        RANK_CHECK(is_arange(in, (int64_t)prev * SPAN, "ring recv"));
        dl_tensor_free(out);
        dl_tensor_free(in);
    }
    /* Any source, small and large (tags apart): everyone sends to rank 0. */
    for (size_t n = SMALL; n <= LARGE; n += LARGE - SMALL) {
        dl_tensor_t *t = vec(comm, n, (double)me * SPAN);
        int tag = n == SMALL ? 9 : 10;
        if (me != 0) {
            RANK_CHECK(dl_comm_send(comm, t, 0, tag) == DL_OK);
        } else {
            int seen = 0;
            for (int i = 1; i < np; i++) {
                int src = -1;
                RANK_CHECK(dl_comm_recv(comm, t, DL_ANY_SOURCE, tag, &src) == DL_OK);
                RANK_CHECK(src >= 1 && src < np && !(seen & (1 << src)));
                RANK_CHECK(is_arange(t, (int64_t)src * SPAN, "any-source recv"));
                seen |= 1 << src;
            }
        }
        dl_tensor_free(t);
    }
    /* Many outstanding isends and irecvs both ways between ranks 0 and 1,
     * large ones among them: they match in order. */
    enum { N = 600 };
    if (me < 2) {
        int peer = 1 - me;
        dl_tensor_t *out[N], *in[N];
        dl_work_t *ws[N], *wr[N];
        for (int i = 0; i < N; i++) {
            size_t n = i % 40 == 0 ? (size_t)(64 << 10) + 3 : 2;
            out[i] = vec(comm, n, (double)me * SPAN + i);
            in[i] = vec(comm, n, -1);
            RANK_CHECK(dl_comm_irecv(comm, in[i], peer, 3, &wr[i]) == DL_OK);
            RANK_CHECK(dl_comm_isend(comm, out[i], peer, 3, &ws[i]) == DL_OK);
        }
        for (int i = 0; i < N; i++) {
            RANK_CHECK(dl_work_wait(wr[i], -1) == DL_OK);
            RANK_CHECK(is_arange(in[i], (int64_t)peer * SPAN + i, "outstanding irecv"));
            RANK_CHECK(dl_work_wait(ws[i], -1) == DL_OK);
            dl_work_free(wr[i]);
            dl_work_free(ws[i]);
            dl_tensor_free(out[i]);
            dl_tensor_free(in[i]);
        }
    }
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    return 0;
}

static void test_tcp_p2p(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(4, setup_tcp, p2p, NULL, 60), 0);
}

/* ---- a dead peer ---- */

static int dead_peer(dl_comm_t *comm, void *arg)
{
    int victim = (int)(intptr_t)arg;
    RANK_CHECK(comm != NULL);
    if (dl_comm_rank(comm) == victim)
        _exit(0); /* gone without a goodbye */
    dl_tensor_t *t = vec(comm, 1000, 0);
    double t0 = now_s();
    dl_status_t st = dl_comm_all_reduce(comm, t, DL_OP_SUM, NULL, NULL);
    RANK_CHECK(st == DL_ERR_PEER_DEAD || st == DL_ERR_ABORTED);
    RANK_CHECK(now_s() - t0 < 5);
    char want[32];
    snprintf(want, sizeof(want), "rank %d", victim);
    RANK_CHECK(strstr(dl_comm_last_error(comm), want) != NULL);
    RANK_CHECK(strstr(dl_comm_last_error(comm), "died") != NULL);
    dl_tensor_free(t);
    return 0;
}

/* Every rank has its own segment, so only the TCP connection can tell. */
static int dead_peer_tcp(dl_comm_t *comm, void *arg)
{
    int rc = dead_peer(comm, arg);
    RANK_CHECK(rc == 0);
    RANK_CHECK(strstr(dl_comm_last_error(comm), "host") != NULL);
    return 0;
}

static void test_tcp_dead_peer(void **state)
{
    (void)state;
    ext_store_start();
    assert_int_equal(world_run_setup(3, setup_tcp_ext, dead_peer_tcp, (void *)1, 30), 0);
    ext_store_stop();
}

/* ---- unwelcome connections ---- */

static int raw_connect(const char *where)
{
    char host[64];
    const char *colon = strrchr(where, ':');
    if (colon == NULL || (size_t)(colon - where) >= sizeof(host))
        return -1;
    snprintf(host, sizeof(host), "%.*s", (int)(colon - where), where);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Whether the other end closes fd within a few seconds (reading and
 * discarding what it sends first: its challenge). */
static bool dropped(int fd)
{
    double end = now_s() + 5;
    char buf[4096];
    while (now_s() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
    }
    return false;
}

static bool send_all(int fd, const void *buf, size_t n)
{
    return send(fd, buf, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/* One framed JSON message, as frame.h encodes it. */
static bool send_json(int fd, json_t *j)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    bool ok = dl_frame_encode(j, NULL, 0, &buf, &len) == DL_OK && send_all(fd, buf, len);
    free(buf);
    json_decref(j);
    return ok;
}

/* Rank 2 attacks rank 0's data port in every way it can think of while
 * ranks 0 and 1 wait in a collective; then the collective must succeed. */
static int unwelcome(dl_comm_t *comm, void *arg)
{
    (void)arg;
    RANK_CHECK(comm != NULL);
    int me = dl_comm_rank(comm);
    int idle = -1, partial = -1;
    if (me == 2) {
        dl_store_t *store = open_store();
        RANK_CHECK(store != NULL);
        char key[128], *where = NULL;
        size_t len = 0;
        snprintf(key, sizeof(key), "%s/tcp/0", getenv("DISTLAB_WORLD"));
        RANK_CHECK(dl_store_get(store, key, (void **)&where, &len) == DL_OK);
        dl_store_close(store);
        int fd;

        /* Garbage: text, then a length over any limit. */
        RANK_CHECK((fd = raw_connect(where)) >= 0);
        RANK_CHECK(send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27) && dropped(fd));
        close(fd);
        RANK_CHECK((fd = raw_connect(where)) >= 0);
        RANK_CHECK(send_all(fd, "\xff\xff\xff\xff\x00\x00\x00\x02{}", 10) && dropped(fd));
        close(fd);
        /* A data frame without a handshake. */
        uint8_t hdr[32] = {'D', 'L', 'T', 'P', 1, 0};
        RANK_CHECK((fd = raw_connect(where)) >= 0);
        RANK_CHECK(send_all(fd, hdr, sizeof(hdr)) && dropped(fd));
        close(fd);
        /* Well-formed frames that are not an authentication. */
        RANK_CHECK((fd = raw_connect(where)) >= 0);
        RANK_CHECK(send_json(fd, json_pack("{s:s}", "type", "hello")) && dropped(fd));
        close(fd);
        /* A rank's claim without the token's MAC, then with a wrong token. */
        RANK_CHECK((fd = raw_connect(where)) >= 0);
        RANK_CHECK(send_json(fd, json_pack("{s:s, s:s, s:i}", "type", "auth", "world",
                                           getenv("DISTLAB_WORLD"), "rank", 1)) &&
                   dropped(fd));
        close(fd);
        RANK_CHECK((fd = raw_connect(where)) >= 0);
        json_t *extra = json_pack("{s:s, s:i}", "world", getenv("DISTLAB_WORLD"), "rank", 1);
        RANK_CHECK(dl_auth_client_fd(fd, "not-the-token-but-long-enough", extra, 5000, NULL) ==
                   DL_ERR_DENIED);
        json_decref(extra);
        close(fd);
        /* Connections that say nothing, or half a frame, stay open while
         * the collective runs. */
        RANK_CHECK((idle = raw_connect(where)) >= 0);
        RANK_CHECK((partial = raw_connect(where)) >= 0);
        RANK_CHECK(send_all(partial, "\x00\x00\x00\x40\x00", 5));
        free(where);
    }
    RANK_CHECK(all_reduce_with(comm, NULL, SMALL) == 0);
    RANK_CHECK(all_reduce_with(comm, "ring", LARGE) == 0);
    RANK_CHECK(dl_comm_barrier(comm, NULL, NULL) == DL_OK);
    if (idle >= 0)
        close(idle);
    if (partial >= 0)
        close(partial);
    return 0;
}

static void test_tcp_unwelcome(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(3, setup_tcp_token, unwelcome, NULL, 60), 0);
}

/* ---- two hosts: shared memory within, TCP across ---- */

static int two_hosts(dl_comm_t *comm, void *arg)
{
    (void)arg;
    RANK_CHECK(comm != NULL);
    /* The ranks of a host share one segment (named by its lowest rank), and
     * every rank listens for TCP. */
    dl_store_t *store = open_store();
    RANK_CHECK(store != NULL);
    char key[128], *val = NULL;
    size_t len = 0;
    const char *world = getenv("DISTLAB_WORLD");
    for (int g = 0; g < 4; g++) {
        snprintf(key, sizeof(key), "%s/g%d/shm/where", world, g);
        dl_status_t st = g % 2 == 0 ? dl_store_get(store, key, (void **)&val, &len)
                                    : dl_store_delete(store, key);
        RANK_CHECK(st == (g % 2 == 0 ? DL_OK : DL_ERR_NOT_FOUND));
        free(val);
        val = NULL;
        snprintf(key, sizeof(key), "%s/tcp/%d", world, g);
        RANK_CHECK(dl_store_get(store, key, (void **)&val, &len) == DL_OK);
        RANK_CHECK(strncmp(val, "127.0.0.1:", 10) == 0);
        free(val);
        val = NULL;
    }
    dl_store_close(store);
    RANK_CHECK(every_collective(comm, NULL) == 0);
    RANK_CHECK(all_reduce_with(comm, "ring", LARGE) == 0);
    RANK_CHECK(all_reduce_with(comm, "direct", LARGE) == 0);
    RANK_CHECK(all_to_all_with(comm, "pairwise", LARGE / 4) == 0);
    RANK_CHECK(broadcast_with(comm, "chain", LARGE) == 0);
    /* Any source mixes both transports: rank 0 hears from 1 (shm), 2 and 3. */
    RANK_CHECK(p2p(comm, NULL) == 0);
    return 0;
}

static void test_two_hosts(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(4, setup_two_hosts, two_hosts, NULL, 120), 0);
}

/* Rank 3 dies: its host-mate sees the process gone, host-a sees its
 * connection close; everyone names it. */
static void test_two_hosts_dead_peer(void **state)
{
    (void)state;
    ext_store_start();
    assert_int_equal(world_run_setup(4, setup_two_hosts_ext, dead_peer, (void *)3, 30), 0);
    ext_store_stop();
}

/* An abort on host-a reaches host-b. */
static int abort_across(dl_comm_t *comm, void *arg)
{
    (void)arg;
    RANK_CHECK(comm != NULL);
    int me = dl_comm_rank(comm);
    dl_tensor_t *t = vec(comm, 4, 0);
    /* Rank 0 may leave the barrier, and abort, before the others have. */
    dl_status_t st = dl_comm_barrier(comm, NULL, NULL);
    RANK_CHECK(st == DL_OK || (me != 0 && st == DL_ERR_ABORTED));
    if (me == 0) {
        dl_comm_abort(comm, "the teacher stopped the exercise");
    } else {
        double t0 = now_s();
        if (st == DL_OK)
            RANK_CHECK(dl_comm_recv(comm, t, 0, 0, NULL) == DL_ERR_ABORTED);
        RANK_CHECK(now_s() - t0 < 5);
        RANK_CHECK(strstr(dl_comm_last_error(comm), "the teacher stopped the exercise") != NULL);
    }
    dl_tensor_free(t);
    return 0;
}

static void test_two_hosts_abort(void **state)
{
    (void)state;
    assert_int_equal(world_run_setup(4, setup_two_hosts, abort_across, NULL, 30), 0);
}

/* ---- refused settings ---- */

static char logged[2048];
static int log_rank;

static void capture(void *arg, dl_log_level_t level, const char *msg)
{
    (void)arg;
    (void)level;
    size_t n = strlen(logged);
    snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
    fprintf(stderr, "rank %d: %s\n", log_rank, msg);
}

static void setup_shm_two_hosts(int rank, void *arg)
{
    setup_two_hosts_ext(rank, arg);
    setenv("DISTLAB_TRANSPORT", "shm", 1);
    log_rank = rank;
    dl_log_set_sink(capture, NULL);
}

static void setup_bogus(int rank, void *arg)
{
    (void)arg;
    use_ext_store();
    setenv("DISTLAB_TRANSPORT", "pigeon", 1);
    log_rank = rank;
    dl_log_set_sink(capture, NULL);
}

/* The world must not form, and every rank must say why: what arg names. */
static int refused(dl_comm_t *comm, void *arg)
{
    RANK_CHECK(comm == NULL);
    for (const char *const *w = arg; *w != NULL; w++)
        RANK_CHECK(strstr(logged, *w) != NULL);
    return 0;
}

static void test_refused_transports(void **state)
{
    (void)state;
    ext_store_start();
    const char *shm_words[] = {"DISTLAB_TRANSPORT=shm", "host-a", "host-b", "several hosts", NULL};
    assert_int_equal(world_run_setup(4, setup_shm_two_hosts, refused, shm_words, 30), 0);
    const char *bogus_words[] = {
        "DISTLAB_TRANSPORT='pigeon' is not a choice: expected auto, shm or tcp", NULL};
    assert_int_equal(world_run_setup(2, setup_bogus, refused, bogus_words, 30), 0);
    ext_store_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_collectives), cmocka_unit_test(test_tcp_p2p),
        cmocka_unit_test(test_tcp_dead_peer),   cmocka_unit_test(test_tcp_unwelcome),
        cmocka_unit_test(test_two_hosts),       cmocka_unit_test(test_two_hosts_dead_peer),
        cmocka_unit_test(test_two_hosts_abort), cmocka_unit_test(test_refused_transports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
