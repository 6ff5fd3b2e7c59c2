/* See controller.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "distlab/log.h"
#include "lab/controller.h"
#include "lab/proto.h"

/* A control connection; before its hello it belongs to no rank. */
typedef struct conn {
    uv_tcp_t tcp;
    lab_ctrl_t *ctrl;
    int rank; /* -1 until hello */
    dl_frame_decoder_t dec;
    struct conn *next;
} conn_t;

typedef struct {
    uv_process_t proc;
    lab_ctrl_t *ctrl;
    int rank;
    bool spawned;
} proc_t;

struct lab_ctrl {
    uv_loop_t *loop;
    lab_ctrl_cbs_t cbs;
    void *arg;
    dl_store_server_t *store;
    uv_tcp_t listener;
    int port;
    int np;
    lab_rank_info_t *info;
    proc_t *procs;
    conn_t **rank_conn; /* [rank] */
    conn_t *conns;      /* every open connection */
    char token[33];
    int open_handles;
    bool closing;
};

/* The controller goes once its last libuv handle has been closed. */
static void release_handle(lab_ctrl_t *c)
{
    if (--c->open_handles == 0 && c->closing) {
        free(c->info);
        free(c->procs);
        free(c->rank_conn);
        free(c);
    }
}

static void handle_closed(uv_handle_t *h)
{
    release_handle(h->data);
}

/* ---- connections ---- */

static void conn_free(uv_handle_t *h)
{
    conn_t *cn = (conn_t *)h;
    lab_ctrl_t *c = cn->ctrl;
    dl_frame_decoder_free(&cn->dec);
    free(cn);
    release_handle(c);
}

static void conn_close(conn_t *cn)
{
    lab_ctrl_t *c = cn->ctrl;
    for (conn_t **pp = &c->conns; *pp != NULL; pp = &(*pp)->next)
        if (*pp == cn) {
            *pp = cn->next;
            break;
        }
    if (cn->rank >= 0 && c->rank_conn[cn->rank] == cn) {
        c->rank_conn[cn->rank] = NULL;
        c->info[cn->rank].connected = false;
    }
    if (!uv_is_closing((uv_handle_t *)&cn->tcp))
        uv_close((uv_handle_t *)&cn->tcp, conn_free);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base != NULL ? suggested : 0;
}

/* The first frame must be a hello with the session's token, for a rank
 * that exists and has not connected yet; anything else is dropped. */
static bool accept_hello(conn_t *cn, const dl_frame_t *f)
{
    lab_ctrl_t *c = cn->ctrl;
    int rank = (int)lab_json_int(f->json, "rank", -1);
    if (strcmp(lab_msg_type(f->json), "hello") != 0 ||
        strcmp(lab_json_str(f->json, "token", ""), c->token) != 0 || rank < 0 || rank >= c->np ||
        c->rank_conn[rank] != NULL)
        return false;
    cn->rank = rank;
    c->rank_conn[rank] = cn;
    c->info[rank].connected = true;
    c->info[rank].pid = (int)lab_json_int(f->json, "pid", c->info[rank].pid);
    return true;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    conn_t *cn = (conn_t *)s;
    lab_ctrl_t *c = cn->ctrl;
    if (nread < 0) {
        free(buf->base);
        conn_close(cn);
        return;
    }
    dl_status_t st = dl_frame_decoder_feed(&cn->dec, buf->base, (size_t)nread);
    free(buf->base);
    while (st == DL_OK) {
        dl_frame_t f = {0};
        st = dl_frame_decoder_next(&cn->dec, &f);
        if (st != DL_OK)
            break;
        if (cn->rank < 0 && !accept_hello(cn, &f)) {
            dl_frame_clear(&f);
            st = DL_ERR_PROTOCOL;
            break;
        }
        if (c->cbs.on_event != NULL)
            c->cbs.on_event(c, cn->rank, &f, c->arg);
        dl_frame_clear(&f);
        if (c->closing)
            return;
    }
    if (st != DL_ERR_NOT_FOUND) {
        if (cn->rank >= 0)
            dl_log_warn("dropping rank %d's control connection: bad frame", cn->rank);
        conn_close(cn);
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    lab_ctrl_t *c = server->data;
    if (status < 0)
        return;
    conn_t *cn = calloc(1, sizeof(*cn));
    if (cn == NULL)
        return;
    cn->ctrl = c;
    cn->rank = -1;
    dl_frame_decoder_init(&cn->dec, 0);
    uv_tcp_init(c->loop, &cn->tcp);
    c->open_handles++;
    if (uv_accept(server, (uv_stream_t *)&cn->tcp) != 0) {
        uv_close((uv_handle_t *)&cn->tcp, conn_free);
        return;
    }
    uv_tcp_nodelay(&cn->tcp, 1);
    cn->next = c->conns;
    c->conns = cn;
    uv_read_start((uv_stream_t *)&cn->tcp, alloc_cb, read_cb);
}

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

dl_status_t lab_ctrl_send(lab_ctrl_t *c, int rank, const json_t *msg)
{
    if (rank < 0 || rank >= c->np || c->rank_conn[rank] == NULL)
        return DL_ERR_CLOSED;
    write_t *w = calloc(1, sizeof(*w));
    size_t len = 0;
    if (w == NULL)
        return DL_ERR_NOMEM;
    dl_status_t st = dl_frame_encode(msg, NULL, 0, &w->buf, &len);
    if (st != DL_OK) {
        free(w);
        return st;
    }
    uv_buf_t b = uv_buf_init((char *)w->buf, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&c->rank_conn[rank]->tcp, &b, 1, write_done) != 0) {
        free(w->buf);
        free(w);
        return DL_ERR_CLOSED;
    }
    return DL_OK;
}

/* ---- processes ---- */

static void on_proc_exit(uv_process_t *p, int64_t status, int sig)
{
    proc_t *pr = (proc_t *)p;
    lab_ctrl_t *c = pr->ctrl;
    lab_rank_info_t *in = &c->info[pr->rank];
    in->exited = true;
    in->exit_status = status;
    in->term_signal = sig;
    uv_close((uv_handle_t *)p, handle_closed);
    if (c->cbs.on_exit != NULL && !c->closing)
        c->cbs.on_exit(c, pr->rank, status, sig, c->arg);
}

static dl_status_t spawn_rank(lab_ctrl_t *c, int rank, const char *exe, double timeout_s,
                              const char *world)
{
    extern char **environ;
    size_t nenv = 0;
    while (environ[nenv] != NULL)
        nenv++;
    char **env = calloc(nenv + 16, sizeof(char *));
    char vars[12][160];
    if (env == NULL)
        return DL_ERR_NOMEM;
    size_t k = 0;
    /* Our own variables win over inherited ones of the same name. */
    static const char *const ours[] = {
        "RANK=",          "WORLD_SIZE=",    "LOCAL_RANK=",     "LOCAL_WORLD_SIZE=",
        "MASTER_ADDR=",   "MASTER_PORT=",   "DISTLAB_STORE=",  "DISTLAB_CONTROL=",
        "DISTLAB_TOKEN=", "DISTLAB_WORLD=", "DISTLAB_TIMEOUT="};
    for (size_t i = 0; i < nenv; i++) {
        bool skip = false;
        for (size_t j = 0; j < sizeof(ours) / sizeof(ours[0]); j++)
            if (strncmp(environ[i], ours[j], strlen(ours[j])) == 0)
                skip = true;
        if (!skip)
            env[k++] = environ[i];
    }
    int port = dl_store_server_port(c->store);
    int n = 0;
    snprintf(vars[n++], 160, "RANK=%d", rank);
    snprintf(vars[n++], 160, "WORLD_SIZE=%d", c->np);
    snprintf(vars[n++], 160, "LOCAL_RANK=%d", rank);
    snprintf(vars[n++], 160, "LOCAL_WORLD_SIZE=%d", c->np);
    snprintf(vars[n++], 160, "MASTER_ADDR=127.0.0.1");
    snprintf(vars[n++], 160, "MASTER_PORT=%d", port);
    snprintf(vars[n++], 160, "DISTLAB_STORE=127.0.0.1:%d", port);
    snprintf(vars[n++], 160, "DISTLAB_CONTROL=127.0.0.1:%d", c->port);
    snprintf(vars[n++], 160, "DISTLAB_TOKEN=%s", c->token);
    snprintf(vars[n++], 160, "DISTLAB_WORLD=%s", world);
    snprintf(vars[n++], 160, "DISTLAB_TIMEOUT=%g", timeout_s);
    for (int i = 0; i < n; i++)
        env[k++] = vars[i];
    env[k] = NULL;

    char *args[] = {(char *)exe, "rank", NULL};
    uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2}};
    uv_process_options_t po = {0};
    po.file = exe;
    po.args = args;
    po.env = env;
    po.exit_cb = on_proc_exit;
    po.stdio_count = 3;
    po.stdio = stdio;
    proc_t *pr = &c->procs[rank];
    pr->ctrl = c;
    pr->rank = rank;
    pr->proc.data = c;
    int rc = uv_spawn(c->loop, &pr->proc, &po);
    free(env);
    if (rc != 0) {
        dl_log_error("cannot start rank %d (%s rank): %s", rank, exe, uv_strerror(rc));
        /* libuv keeps a failed process handle registered until it is closed. */
        c->open_handles++;
        uv_close((uv_handle_t *)&pr->proc, handle_closed);
        return DL_ERR_SYSTEM;
    }
    pr->spawned = true;
    c->open_handles++;
    c->info[rank].pid = pr->proc.pid;
    return DL_OK;
}

dl_status_t lab_ctrl_start(uv_loop_t *loop, const lab_ctrl_opts_t *opts, const lab_ctrl_cbs_t *cbs,
                           void *arg, lab_ctrl_t **c_p)
{
    dl_status_t st = DL_ERR_NOMEM;
    lab_ctrl_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return DL_ERR_NOMEM;
    c->loop = loop;
    c->cbs = *cbs;
    c->arg = arg;
    c->np = opts->np;
    c->info = calloc((size_t)c->np, sizeof(*c->info));
    c->procs = calloc((size_t)c->np, sizeof(*c->procs));
    c->rank_conn = calloc((size_t)c->np, sizeof(*c->rank_conn));
    if (c->info == NULL || c->procs == NULL || c->rank_conn == NULL)
        goto err_free;
    for (int r = 0; r < c->np; r++)
        c->info[r].rank = r;
    /* The token keeps stray connections from posing as a rank. */
    uint8_t rnd[16];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        st = DL_ERR_SYSTEM;
        goto err_free;
    }
    for (int i = 0; i < 16; i++)
        snprintf(c->token + 2 * i, 3, "%02x", rnd[i]);

    if ((st = dl_store_server_start(loop, "127.0.0.1", 0, &c->store)) != DL_OK)
        goto err_free;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    uv_tcp_init(loop, &c->listener);
    c->listener.data = c;
    c->open_handles++;
    int rc = uv_tcp_bind(&c->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&c->listener, 128, on_connection);
    if (rc != 0) {
        dl_log_error("cannot listen for ranks on 127.0.0.1: %s", uv_strerror(rc));
        st = DL_ERR_SYSTEM;
        goto err_close;
    }
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    uv_tcp_getsockname(&c->listener, (struct sockaddr *)&bound, &len);
    c->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);

    char exe[4096];
    size_t exe_len = sizeof(exe);
    if (opts->exe != NULL)
        snprintf(exe, sizeof(exe), "%s", opts->exe);
    else if (uv_exepath(exe, &exe_len) != 0) {
        st = DL_ERR_SYSTEM;
        goto err_close;
    }
    char world[32];
    snprintf(world, sizeof(world), "w%d", (int)getpid());
    for (int r = 0; r < c->np; r++)
        if ((st = spawn_rank(c, r, exe, opts->timeout_s, world)) != DL_OK)
            goto err_close;
    *c_p = c;
    return DL_OK;

err_close:
    /* Handles must be closed through the loop; lab_ctrl_close frees c. */
    lab_ctrl_close(c);
    return st;
err_free:
    free(c->info);
    free(c->procs);
    free(c->rank_conn);
    free(c);
    return st;
}

int lab_ctrl_np(const lab_ctrl_t *c)
{
    return c->np;
}

const lab_rank_info_t *lab_ctrl_rank(const lab_ctrl_t *c, int rank)
{
    return rank >= 0 && rank < c->np ? &c->info[rank] : NULL;
}

void lab_ctrl_kill(lab_ctrl_t *c, int rank, int sig)
{
    if (rank >= 0 && rank < c->np && c->procs[rank].spawned && !c->info[rank].exited)
        uv_process_kill(&c->procs[rank].proc, sig);
}

void lab_ctrl_kill_all(lab_ctrl_t *c, int sig)
{
    for (int r = 0; r < c->np; r++)
        lab_ctrl_kill(c, r, sig);
}

void lab_ctrl_describe_exit(char *buf, size_t cap, int64_t status, int sig)
{
    if (sig != 0)
        snprintf(buf, cap, "was killed by signal %d (SIG%s)", sig, sigabbrev_np(sig));
    else
        snprintf(buf, cap, "exited with code %lld", (long long)status);
}

bool lab_ctrl_all_exited(const lab_ctrl_t *c)
{
    for (int r = 0; r < c->np; r++)
        if (c->procs[r].spawned && !c->info[r].exited)
            return false;
    return true;
}

void lab_ctrl_close(lab_ctrl_t *c)
{
    c->closing = true;
    lab_ctrl_kill_all(c, SIGKILL);
    while (c->conns != NULL)
        conn_close(c->conns);
    if (c->store != NULL) {
        dl_store_server_stop(c->store);
        c->store = NULL;
    }
    /* Processes still running close their handle from the exit callback. */
    if (!uv_is_closing((uv_handle_t *)&c->listener))
        uv_close((uv_handle_t *)&c->listener, handle_closed);
}
