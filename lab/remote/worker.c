/* See worker.h. */
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distlab/auth.h"
#include "distlab/frame.h"
#include "distlab/guard.h"
#include "distlab/log.h"
#include "lab/ctrl/controller.h"
#include "lab/ctrl/link.h"
#include "lab/proto/proto.h"
#include "lab/ctrl/spawn.h"
#include "lab/remote/worker.h"

#define SHELL_FRAME_MAX (1u << 20)

typedef struct wk wk_t;

/* One rank process; it lives until its exit has been seen and its
 * standard error has run dry. That goes through us, so that a rank of a
 * world the shell has stopped does not chatter as it is torn down. */
typedef struct wrank {
    uv_process_t proc;
    uv_pipe_t err;
    int handles; /* open: the process and the pipe */
    wk_t *wk;
    int rank;
    long long gen;
    bool exited;
    struct wrank *next;
} wrank_t;

struct wk {
    uv_loop_t loop;
    uv_tcp_t tcp;
    uv_signal_t sigs[3];
    dl_frame_decoder_t dec;
    const lab_worker_opts_t *o;
    char shell[300];      /* HOST:PORT as given */
    char shell_host[256]; /* where the ranks find the controller */
    char host_addr[64];   /* our end of the connection to the shell */
    char *token;
    char exe[4096];
    int id;
    long long gen; /* the current world */
    bool stopped;  /* the shell stopped the current world */
    wrank_t *ranks;
    bool stopping;
    int code;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* The line may echo what the user gave (an address, a path): its
     * control bytes are shown escaped, never sent to the terminal. */
    fputs("distlab worker: ", stderr);
    dl_quote_to(stderr, line, strlen(line), 0);
    fputc('\n', stderr);
    fflush(stderr);
}

/* ---- talking to the shell ---- */

typedef struct {
    uv_write_t req;
    uint8_t *buf;
} write_t;

static void write_done(uv_write_t *req, int status)
{
    (void)status;
    write_t *w = (write_t *)req;
    free(w->buf);
    free(w);
}

/* Sends msg up (takes its reference). */
static void send_up(wk_t *wk, json_t *msg)
{
    write_t *w = calloc(1, sizeof(*w));
    size_t len = 0;
    if (w == NULL || msg == NULL || wk->stopping ||
        dl_frame_encode(msg, NULL, 0, &w->buf, &len) != DL_OK) {
        free(w);
        json_decref(msg);
        return;
    }
    json_decref(msg);
    uv_buf_t b = uv_buf_init((char *)w->buf, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&wk->tcp, &b, 1, write_done) != 0) {
        free(w->buf);
        free(w);
    }
}

/* ---- ranks ---- */

static int running(const wk_t *wk)
{
    int n = 0;
    for (const wrank_t *r = wk->ranks; r != NULL; r = r->next)
        n += !r->exited;
    return n;
}

static void rank_closed(uv_handle_t *h)
{
    wrank_t *r = h->data;
    if (--r->handles > 0)
        return;
    wk_t *wk = r->wk;
    for (wrank_t **pp = &wk->ranks; *pp != NULL; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    free(r);
}

/* Whether what a rank says or how it ends is still news. */
static bool current(const wrank_t *r)
{
    return !r->wk->stopping && !r->wk->stopped && r->gen == r->wk->gen;
}

static void err_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base != NULL ? suggested : 0;
}

static void err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    wrank_t *r = s->data;
    if (nread > 0 && current(r)) {
        fwrite(buf->base, 1, (size_t)nread, stderr);
        fflush(stderr);
    }
    free(buf->base);
    if (nread < 0 && !uv_is_closing((uv_handle_t *)s))
        uv_close((uv_handle_t *)s, rank_closed);
}

static void on_rank_exit(uv_process_t *p, int64_t status, int sig)
{
    wrank_t *r = p->data;
    wk_t *wk = r->wk;
    r->exited = true;
    if (current(r)) {
        char how[96];
        lab_ctrl_describe_exit(how, sizeof(how), status, sig);
        say("rank %d (pid %d) %s", r->rank, p->pid, how);
    }
    send_up(wk,
            json_pack("{s:s, s:I, s:i, s:i, s:I, s:i}", "type", "exit", "gen", (json_int_t)r->gen,
                      "rank", r->rank, "pid", p->pid, "status", (json_int_t)status, "signal", sig));
    uv_close((uv_handle_t *)p, rank_closed);
}

static void kill_ranks(wk_t *wk, long long gen, int rank, int sig)
{
    for (wrank_t *r = wk->ranks; r != NULL; r = r->next)
        if (!r->exited && (gen < 0 || r->gen == gen) && (rank < 0 || r->rank == rank))
            uv_process_kill(&r->proc, sig);
}

/* {"type":"world",...}: this host's share of a new world. */
static void start_world(wk_t *wk, const json_t *msg)
{
    /* Whatever still runs belongs to an older world. */
    kill_ranks(wk, -1, -1, SIGKILL);
    wk->gen = lab_json_int(msg, "gen", 0);
    wk->stopped = false;
    int base = (int)lab_json_int(msg, "base", 0), size = (int)lab_json_int(msg, "size", 0);
    int n = wk->o->nproc;
    const char *transport = lab_json_str(msg, "transport", NULL);
    lab_rank_env_t e = {
        .world_size = size,
        .local_world_size = n,
        .control_host = wk->shell_host,
        .control_port = (int)lab_json_int(msg, "control_port", 0),
        .store_host = wk->shell_host,
        .store_port = (int)lab_json_int(msg, "store_port", 0),
        .token = wk->token,
        .world = lab_json_str(msg, "world", "dl"),
        .timeout_s = lab_json_num(msg, "timeout", 30),
        .transport = transport,
        .host_addr = wk->host_addr,
    };
    say("starting ranks %d-%d of a world of %d", base, base + n - 1, size);
    for (int i = 0; i < n; i++) {
        wrank_t *r = calloc(1, sizeof(*r));
        if (r == NULL)
            break;
        r->wk = wk;
        r->rank = base + i;
        r->gen = wk->gen;
        r->proc.data = r->err.data = r;
        r->handles = 2;
        uv_pipe_init(&wk->loop, &r->err, 0);
        e.rank = base + i;
        e.local_rank = i;
        e.output = &r->err;
        int rc = lab_spawn_rank(&wk->loop, &r->proc, wk->exe, &e, on_rank_exit);
        r->next = wk->ranks;
        wk->ranks = r;
        if (rc == 0 && uv_read_start((uv_stream_t *)&r->err, err_alloc, err_read) != 0)
            uv_close((uv_handle_t *)&r->err, rank_closed);
        if (rc != 0) {
            uv_close((uv_handle_t *)&r->err, rank_closed);
            say("cannot start rank %d (%s rank): %s", r->rank, wk->exe, uv_strerror(rc));
            r->exited = true;
            send_up(wk, json_pack("{s:s, s:I, s:i, s:i, s:i, s:i}", "type", "exit", "gen",
                                  (json_int_t)r->gen, "rank", r->rank, "pid", 0, "status", 127,
                                  "signal", 0));
            uv_close((uv_handle_t *)&r->proc, rank_closed);
            continue;
        }
        send_up(wk, json_pack("{s:s, s:I, s:i, s:i}", "type", "started", "gen", (json_int_t)r->gen,
                              "rank", r->rank, "pid", r->proc.pid));
    }
}

/* ---- stopping ---- */

static void stop(wk_t *wk, int code)
{
    if (wk->stopping)
        return;
    wk->stopping = true;
    wk->code = code;
    kill_ranks(wk, -1, -1, SIGKILL);
    /* The loop ends once the ranks' exits have been seen. */
    uv_close((uv_handle_t *)&wk->tcp, NULL);
    for (int i = 0; i < 3; i++)
        uv_close((uv_handle_t *)&wk->sigs[i], NULL);
}

static void on_signal(uv_signal_t *h, int sig)
{
    wk_t *wk = h->data;
    say("stopped by SIG%s; %d rank%s stopped", sigabbrev_np(sig), running(wk),
        running(wk) == 1 ? "" : "s");
    stop(wk, 128 + sig);
}

static void on_message(wk_t *wk, const json_t *msg)
{
    const char *type = lab_msg_type(msg);
    if (strcmp(type, "world") == 0) {
        start_world(wk, msg);
    } else if (strcmp(type, "kill") == 0) {
        int sig = (int)lab_json_int(msg, "signal", SIGKILL);
        kill_ranks(wk, lab_json_int(msg, "gen", -2), (int)lab_json_int(msg, "rank", -2),
                   sig > 0 && sig < 65 ? sig : SIGKILL);
    } else if (strcmp(type, "stop") == 0) {
        long long gen = lab_json_int(msg, "gen", -2);
        if (gen == wk->gen)
            wk->stopped = true;
        kill_ranks(wk, gen, -1, SIGKILL);
    } else if (strcmp(type, "bye") == 0) {
        say("the shell at %s ended the session", wk->shell);
        stop(wk, 0);
    }
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base != NULL ? suggested : 0;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    wk_t *wk = s->data;
    if (nread == 0 || wk->stopping) {
        free(buf->base);
        return;
    }
    if (nread < 0) {
        free(buf->base);
        int n = running(wk);
        say("lost the shell at %s (%s); %d rank%s stopped", wk->shell,
            nread == UV_EOF ? "connection closed" : uv_strerror((int)nread), n, n == 1 ? "" : "s");
        stop(wk, 1);
        return;
    }
    dl_status_t st = dl_frame_decoder_feed(&wk->dec, buf->base, (size_t)nread);
    free(buf->base);
    while (st == DL_OK && !wk->stopping) {
        dl_frame_t f = {0};
        st = dl_frame_decoder_next(&wk->dec, &f);
        if (st == DL_OK)
            on_message(wk, f.json);
        dl_frame_clear(&f);
    }
    if (st != DL_OK && st != DL_ERR_AGAIN && !wk->stopping) {
        say("the shell at %s sent a bad frame; %d ranks stopped", wk->shell, running(wk));
        stop(wk, 1);
    }
}

/* ---- joining ---- */

/* Connects and answers the challenge, blocking: nothing else to do yet. */
static int join(wk_t *wk, int *fd_p)
{
    const lab_worker_opts_t *o = wk->o;
    int port = 0;
    if (!lab_parse_hostport(o->join, wk->shell_host, sizeof(wk->shell_host), &port) || port == 0) {
        char q[DL_QUOTE_BUF];
        say("--join takes HOST:PORT (the command the shell printed), not '%s'",
            dl_quote(o->join, q, sizeof(q)));
        return 2;
    }
    char err[512];
    if (dl_auth_read_token_file(o->token_file, &wk->token, err, sizeof(err)) != DL_OK) {
        say("%s", err);
        return 1;
    }
    int fd = -1;
    dl_status_t st =
        dl_frame_connect(wk->shell_host, port, (int)(o->connect_timeout_s * 1000), &fd);
    if (st != DL_OK) {
        say("cannot reach the shell at %s: %s", wk->shell,
            st == DL_ERR_TIMEOUT ? "nobody listens there" : dl_strerror(st));
        return 1;
    }
    char host[64] = "";
    const char *id = getenv("DISTLAB_HOST_ID");
    if (id != NULL && id[0] != '\0')
        snprintf(host, sizeof(host), "%s", id);
    else
        gethostname(host, sizeof(host) - 1);
    json_t *who = json_pack("{s:s, s:i, s:s, s:i}", "role", "worker", "nproc", o->nproc, "host",
                            host, "pid", (int)getpid());
    json_t *welcome = NULL;
    st = dl_auth_client_fd(fd, wk->token, who, dl_guard_auth_timeout_ms(), &welcome);
    json_decref(who);
    if (st != DL_OK) {
        close(fd);
        if (st == DL_ERR_DENIED)
            say("the shell at %s did not let us join: is %s the session's token file?", wk->shell,
                o->token_file);
        else
            say("cannot join the shell at %s: %s", wk->shell, dl_strerror(st));
        return 1;
    }
    wk->id = (int)lab_json_int(welcome, "worker", 0);
    json_decref(welcome);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6)
            uv_ip6_name((struct sockaddr_in6 *)&ss, wk->host_addr, sizeof(wk->host_addr));
        else
            uv_ip4_name((struct sockaddr_in *)&ss, wk->host_addr, sizeof(wk->host_addr));
    }
    *fd_p = fd;
    return 0;
}

int lab_worker_run(const lab_worker_opts_t *opts)
{
    wk_t *wk = calloc(1, sizeof(*wk));
    if (wk == NULL)
        return 1;
    wk->o = opts;
    wk->gen = -1;
    snprintf(wk->shell, sizeof(wk->shell), "%s", opts->join);
    int fd = -1, code;
    if (lab_spawn_exe(wk->exe, sizeof(wk->exe)) != 0) {
        say("cannot find the distlab executable");
        code = 1;
        goto out;
    }
    if ((code = join(wk, &fd)) != 0)
        goto out;
    uv_loop_init(&wk->loop);
    uv_tcp_init(&wk->loop, &wk->tcp);
    wk->tcp.data = wk;
    dl_frame_decoder_init(&wk->dec, SHELL_FRAME_MAX);
    if (uv_tcp_open(&wk->tcp, fd) != 0 ||
        uv_read_start((uv_stream_t *)&wk->tcp, alloc_cb, read_cb) != 0) {
        say("cannot read from the shell's connection");
        close(fd);
        uv_close((uv_handle_t *)&wk->tcp, NULL);
        uv_run(&wk->loop, UV_RUN_DEFAULT);
        uv_loop_close(&wk->loop);
        code = 1;
        goto out;
    }
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        uv_signal_init(&wk->loop, &wk->sigs[i]);
        wk->sigs[i].data = wk;
        uv_signal_start(&wk->sigs[i], on_signal, sigs[i]);
    }
    say("joined the shell at %s as worker %d with %d rank%s", wk->shell, wk->id, opts->nproc,
        opts->nproc == 1 ? "" : "s");
    uv_run(&wk->loop, UV_RUN_DEFAULT);
    uv_loop_close(&wk->loop);
    dl_frame_decoder_free(&wk->dec);
    code = wk->code;
out:
    free(wk->token);
    free(wk);
    return code;
}
