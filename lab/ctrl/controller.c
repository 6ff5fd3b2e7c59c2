/* See controller.h. */
#include <signal.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "distlab/auth.h"
#include "distlab/log.h"
#include "lab/ctrl/controller.h"
#include "lab/ctrl/link.h"
#include "lab/ctrl/mpirun.h"
#include "lab/proto/proto.h"
#include "lab/ctrl/remote.h"
#include "lab/ctrl/spawn.h"

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
    lab_server_t *server; /* the control port */
    lab_remote_t *remote;
    int np_local; /* ranks 0 .. np_local-1 run here */
    int np;       /* the whole world */
    lab_rank_info_t *info;
    proc_t *procs;          /* [np_local] */
    lab_link_t **rank_link; /* [np]: each rank's control connection */
    char *token;
    int open_handles; /* process handles, and the control port's server */
    bool closing;
    char hostname[64];

    /* Under mpirun: one process starts every rank. */
    bool mpi;
    uv_process_t mpirun;
    uv_pipe_t mpirun_err; /* its standard error, read for the death notice */
    uv_timer_t mpirun_grace;
    char err_line[512];
    size_t err_len;
    lab_mpirun_death_t death;
    bool mpirun_started, mpirun_exited, mpirun_err_eof, mpirun_done;
    int64_t mpirun_status;
    int mpirun_signal;
    int *killed_with; /* [np]: the signal we sent a rank, 0: none */

    bool attach; /* ranks started by someone else join (lab_ctrl_opts_t) */

    /* Liveness: see the section below. */
    uv_timer_t live;
    uint64_t last_tick;
    double timeout_s;
    lab_rank_env_t env;
    char env_here[256], env_world[48];
};

/* The controller goes once its last libuv handle has been closed. */
static void ctrl_free(lab_ctrl_t *c)
{
    free(c->killed_with);
    free(c->info);
    free(c->procs);
    free(c->rank_link);
    free(c->token);
    free(c);
}

static void release_handle(lab_ctrl_t *c)
{
    if (--c->open_handles == 0 && c->closing)
        ctrl_free(c);
}

static void handle_closed(uv_handle_t *h)
{
    release_handle(h->data);
}

static void server_gone(void *arg)
{
    release_handle(arg);
}

/* ---- control connections ---- */

static int link_rank(const lab_link_t *l)
{
    return (int)(intptr_t)lab_link_data(l) - 1;
}

/* The answer to the challenge names the rank; it must exist and not be
 * connected already. */
static bool on_auth(lab_link_t *l, const json_t *auth, json_t *welcome, char *why, size_t cap)
{
    (void)welcome;
    lab_ctrl_t *c = lab_link_arg(l);
    int rank = (int)lab_json_int(auth, "rank", -1);
    if (strcmp(lab_json_str(auth, "role", ""), "rank") != 0) {
        snprintf(why, cap, "this is a rank's control port, not one for a %s",
                 lab_json_str(auth, "role", "stranger"));
        return false;
    }
    if (rank < 0 || rank >= c->np || c->rank_link[rank] != NULL) {
        snprintf(why, cap, "rank %d %s", rank,
                 rank < 0 || rank >= c->np ? "is not in this world" : "is connected already");
        return false;
    }
    lab_link_set_data(l, (void *)(intptr_t)(rank + 1));
    c->rank_link[rank] = l;
    c->info[rank].connected = true;
    c->info[rank].pid = (int)lab_json_int(auth, "pid", c->info[rank].pid);
    return true;
}

static void on_frame(lab_link_t *l, const dl_frame_t *f)
{
    lab_ctrl_t *c = lab_link_arg(l);
    int rank = link_rank(l);
    lab_rank_info_t *in = &c->info[rank];
    if (strcmp(lab_msg_type(f->json), "beat") == 0) {
        long long progress = lab_json_int(f->json, "progress", 0);
        bool busy = json_is_true(json_object_get(f->json, "busy"));
        if (progress != in->progress || busy != in->busy)
            in->progress_ms = uv_now(c->loop);
        in->progress = progress;
        in->busy = busy;
    } else {
        in->progress_ms = uv_now(c->loop);
    }
    if (strcmp(lab_msg_type(f->json), "hello") == 0) {
        c->info[rank].pid = (int)lab_json_int(f->json, "pid", c->info[rank].pid);
        /* mpirun places ranks itself: each says where it landed. */
        if (c->mpi)
            snprintf(c->info[rank].host, sizeof(c->info[rank].host), "%s",
                     lab_json_str(f->json, "host", c->hostname));
    }
    if (c->cbs.on_event != NULL)
        c->cbs.on_event(c, rank, f, c->arg);
}

static void on_link_close(lab_link_t *l, const char *why)
{
    lab_ctrl_t *c = lab_link_arg(l);
    int rank = link_rank(l);
    if (c->rank_link[rank] == l) {
        c->rank_link[rank] = NULL;
        c->info[rank].connected = false;
        /* A rank we did not start: its connection is all we see of it. */
        if (c->attach && !c->info[rank].exited) {
            c->info[rank].exited = true;
            snprintf(c->info[rank].lost, sizeof(c->info[rank].lost),
                     "closed its connection (its launcher knows how it ended)");
            if (c->cbs.on_exit != NULL && !c->closing)
                c->cbs.on_exit(c, rank, 0, 0, c->arg);
        }
    }
    /* A rank that ends closes its connection, maybe with a reset: its exit
     * is the news. A bad frame is worth a line. */
    if (strstr(why, "frame") != NULL)
        dl_log_warn("dropping rank %d's control connection: %s", rank, why);
}

dl_status_t lab_ctrl_send(lab_ctrl_t *c, int rank, const json_t *msg)
{
    if (rank < 0 || rank >= c->np || c->rank_link[rank] == NULL)
        return DL_ERR_CLOSED;
    return lab_link_send(c->rank_link[rank], msg, NULL, 0);
}

/* ---- local processes ---- */

static void on_proc_exit(uv_process_t *p, int64_t status, int sig)
{
    proc_t *pr = (proc_t *)p;
    lab_ctrl_t *c = pr->ctrl;
    lab_rank_info_t *in = &c->info[pr->rank];
    in->exited = true;
    in->exit_status = status;
    in->term_signal = sig;
    bool closing = c->closing;
    uv_close((uv_handle_t *)p, handle_closed); /* may free c when closing */
    if (c->cbs.on_exit != NULL && !closing)
        c->cbs.on_exit(c, pr->rank, status, sig, c->arg);
}

static dl_status_t spawn_rank(lab_ctrl_t *c, int rank, const char *exe, const lab_rank_env_t *base)
{
    lab_rank_env_t e = *base;
    e.rank = rank;
    e.local_rank = rank;
    proc_t *pr = &c->procs[rank];
    pr->ctrl = c;
    pr->rank = rank;
    pr->proc.data = c;
    int rc = lab_spawn_rank(c->loop, &pr->proc, exe, &e, on_proc_exit);
    c->open_handles++;
    if (rc != 0) {
        dl_log_error("cannot start rank %d (%s rank): %s", rank, exe, uv_strerror(rc));
        /* libuv keeps a failed process handle registered until it is closed. */
        uv_close((uv_handle_t *)&pr->proc, handle_closed);
        return DL_ERR_SYSTEM;
    }
    pr->spawned = true;
    c->info[rank].pid = pr->proc.pid;
    return DL_OK;
}

/* ---- ranks under mpirun ---- */

/* mpirun is done and has said all it will: every rank still counted alive
 * ended with the job. The rank mpirun names went first; the others were
 * stopped by mpirun because of it (or ended normally). */
static void mpirun_finish(lab_ctrl_t *c)
{
    if (c->mpirun_done || !c->mpirun_exited ||
        (!c->mpirun_err_eof && uv_is_active((uv_handle_t *)&c->mpirun_grace)))
        return;
    c->mpirun_done = true;
    uv_timer_stop(&c->mpirun_grace);
    int first = c->death.rank >= 0 && c->death.rank < c->np ? c->death.rank : -1;
    for (int k = -1; k < c->np; k++) {
        int r = k < 0 ? first : k;
        if (r < 0 || (k >= 0 && r == first) || c->info[r].exited)
            continue;
        lab_rank_info_t *in = &c->info[r];
        in->exited = true;
        if (r == first) {
            in->term_signal = c->death.signal;
            in->exit_status = c->death.code;
        } else if (c->killed_with[r] != 0) {
            in->term_signal = c->killed_with[r];
        } else if (c->mpirun_status != 0 || c->mpirun_signal != 0) {
            in->exit_status = c->mpirun_status;
            in->term_signal = c->mpirun_signal;
            snprintf(in->lost, sizeof(in->lost), "was stopped by mpirun, which %s",
                     first >= 0              ? "ended the job when a rank failed"
                     : c->mpirun_signal != 0 ? "was killed"
                                             : "failed");
        }
        if (c->cbs.on_exit != NULL && !c->closing)
            c->cbs.on_exit(c, r, in->exit_status, in->term_signal, c->arg);
    }
}

static void mpirun_grace_over(uv_timer_t *t)
{
    lab_ctrl_t *c = t->data;
    mpirun_finish(c);
}

static void on_mpirun_exit(uv_process_t *p, int64_t status, int sig)
{
    lab_ctrl_t *c = p->data;
    c->mpirun_exited = true;
    c->mpirun_status = status;
    c->mpirun_signal = sig;
    bool closing = c->closing;
    uv_close((uv_handle_t *)p, handle_closed); /* may free c when closing */
    if (closing)
        return;
    /* Its last words may still be in the pipe: wait for them, briefly. */
    if (!c->mpirun_err_eof)
        uv_timer_start(&c->mpirun_grace, mpirun_grace_over, 1000, 0);
    mpirun_finish(c);
}

/* mpirun's own messages pass through, one line at a time, minus its
 * boxes; the death notice is remembered. */
static void mpirun_line(lab_ctrl_t *c, const char *line)
{
    lab_mpirun_parse_line(&c->death, line);
    if (c->closing || line[strspn(line, "- \t")] == '\0')
        return;
    fprintf(stderr, "mpirun: %s\n", line);
}

static void mpirun_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    lab_ctrl_t *c = h->data;
    size_t room = sizeof(c->err_line) - 1 - c->err_len;
    *buf = uv_buf_init(c->err_line + c->err_len, (unsigned)room);
}

static void on_mpirun_err(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    lab_ctrl_t *c = s->data;
    if (n < 0) {
        if (c->err_len > 0) {
            c->err_line[c->err_len] = '\0';
            mpirun_line(c, c->err_line);
            c->err_len = 0;
        }
        c->mpirun_err_eof = true;
        uv_close((uv_handle_t *)s, handle_closed);
        if (!c->closing)
            mpirun_finish(c);
        return;
    }
    c->err_len += (size_t)n;
    char *nl;
    while ((nl = memchr(c->err_line, '\n', c->err_len)) != NULL ||
           c->err_len == sizeof(c->err_line) - 1) {
        size_t len = nl != NULL ? (size_t)(nl - c->err_line) : c->err_len;
        char line[sizeof(c->err_line)];
        memcpy(line, c->err_line, len);
        line[len] = '\0';
        size_t used = nl != NULL ? len + 1 : len;
        memmove(c->err_line, c->err_line + used, c->err_len - used);
        c->err_len -= used;
        mpirun_line(c, line);
    }
}

static dl_status_t spawn_mpirun(lab_ctrl_t *c, const char *exe, const lab_ctrl_opts_t *opts,
                                const lab_rank_env_t *env)
{
    lab_mpirun_opts_t mo = {.np = c->np,
                            .hostfile = opts->hostfile,
                            .hosts = opts->hosts,
                            .env = *env,
                            .output = &c->mpirun_err};
    uv_pipe_init(c->loop, &c->mpirun_err, 0);
    uv_timer_init(c->loop, &c->mpirun_grace);
    c->mpirun_err.data = c->mpirun_grace.data = c->mpirun.data = c;
    c->open_handles += 3;
    lab_mpirun_death_init(&c->death);
    int rc = lab_mpirun_spawn(c->loop, &c->mpirun, exe, &mo, on_mpirun_exit);
    if (rc != 0) {
        char cmd[512];
        lab_mpirun_describe(&mo, exe, cmd, sizeof(cmd));
        dl_log_error("cannot start mpirun (%s): %s%s", cmd, uv_strerror(rc),
                     rc == UV_ENOENT ? "; install openmpi-bin, or set DISTLAB_MPIRUN" : "");
        uv_close((uv_handle_t *)&c->mpirun, handle_closed);
        uv_close((uv_handle_t *)&c->mpirun_err, handle_closed);
        uv_close((uv_handle_t *)&c->mpirun_grace, handle_closed);
        return DL_ERR_SYSTEM;
    }
    c->mpirun_started = true;
    uv_read_start((uv_stream_t *)&c->mpirun_err, mpirun_alloc, on_mpirun_err);
    return DL_OK;
}

void lab_ctrl_rank_env(const lab_ctrl_t *c, lab_rank_env_t *e)
{
    *e = c->env;
}

bool lab_ctrl_under_mpirun(const lab_ctrl_t *c)
{
    return c->mpi;
}

/* ---- the workers' ranks (called by lab/ctrl/remote.c) ---- */

void lab__ctrl_remote_placed(lab_ctrl_t *c, int rank, int worker, const char *host)
{
    if (rank < c->np_local || rank >= c->np)
        return;
    c->info[rank].worker = worker;
    snprintf(c->info[rank].host, sizeof(c->info[rank].host), "%s", host);
}

void lab__ctrl_remote_started(lab_ctrl_t *c, int rank, int pid)
{
    if (rank >= c->np_local && rank < c->np && !c->info[rank].exited)
        c->info[rank].pid = pid;
}

void lab__ctrl_remote_exited(lab_ctrl_t *c, int rank, int64_t status, int sig, const char *lost)
{
    if (rank < c->np_local || rank >= c->np || c->info[rank].exited)
        return;
    lab_rank_info_t *in = &c->info[rank];
    in->exited = true;
    in->exit_status = status;
    in->term_signal = sig;
    if (lost != NULL)
        snprintf(in->lost, sizeof(in->lost), "%s", lost);
    if (c->cbs.on_exit != NULL && !c->closing)
        c->cbs.on_exit(c, rank, status, sig, c->arg);
}

/* ---- liveness ----
 *
 * A rank that stops answering (SIGSTOPped, wedged, or stuck in a loop) must
 * be named, not waited for until some outer timeout. Ranks beat every
 * LAB_BEAT_MS from a thread that does no computing (lab/rank/rank.c), so a
 * slow-but-alive rank on an oversubscribed machine still beats; bytes of
 * any frame count as well (a large snapshot may take a while to arrive).
 * A rank is declared not responding when
 *   - it has sent nothing for the session's timeout (at least
 *     MIN_QUIET_MS: a beat thread may be starved for a moment), or
 *   - it runs on this host and /proc/PID/stat has said "stopped" (T or t)
 *     for as long (this also covers a rank stopped before it connected), or
 *   - it beats but its progress count has not moved for as long while it
 *     is busy and every other rank has finished (the owner's alone_busy):
 *     its peers' waits have timed out on it by then, so this cannot blame
 *     a rank whose peers still wait for it in good faith.
 * The timeout is the one every wait of the ranks has already, so nothing is
 * declared dead that the ranks themselves would still wait for. If this
 * loop itself did not run for a while (the controller was stopped, or busy)
 * the clocks restart rather than blaming the ranks for our absence. */

#define LIVE_TICK_MS 250
#define MIN_QUIET_MS 1500

/* The state letter of /proc/PID/stat, or 0. */
static char proc_state(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the command name may hold anything */
    return paren != NULL && paren[1] == ' ' ? paren[2] : 0;
}

static bool runs_here(const lab_ctrl_t *c, const lab_rank_info_t *in)
{
    return in->pid > 0 && in->worker == 0 && strcmp(in->host, c->hostname) == 0;
}

static void liveness_tick(uv_timer_t *t)
{
    lab_ctrl_t *c = t->data;
    uint64_t now = uv_now(c->loop);
    bool absent = c->last_tick != 0 && now - c->last_tick > 4 * LIVE_TICK_MS;
    c->last_tick = now;
    uint64_t limit = (uint64_t)(c->timeout_s * 1e3);
    if (limit < MIN_QUIET_MS)
        limit = MIN_QUIET_MS;
    for (int r = 0; r < c->np && !c->closing; r++) {
        lab_rank_info_t *in = &c->info[r];
        if (in->exited)
            continue;
        char state = runs_here(c, in) ? proc_state(in->pid) : 0;
        bool stopped = state == 'T' || state == 't';
        if (stopped && (!in->stopped || absent))
            in->stopped_ms = now;
        in->stopped = stopped;
        lab_link_t *l = c->rank_link[r];
        if (absent || in->progress_ms == 0)
            in->progress_ms = now;
        uint64_t heard = l != NULL ? lab_link_last_rx(l) : 0;
        uint64_t quiet = 0;
        if (l != NULL && !absent && heard != 0 && now > heard)
            quiet = now - heard;
        if (stopped && now - in->stopped_ms > quiet)
            quiet = now - in->stopped_ms;
        if (absent)
            quiet = 0;
        bool stuck = quiet < limit && l != NULL && in->busy && now - in->progress_ms >= limit &&
                     c->cbs.alone_busy != NULL && c->cbs.alone_busy(c, r, c->arg);
        bool unresponsive = quiet >= limit || stuck;
        if (unresponsive == in->unresponsive)
            continue;
        in->unresponsive = unresponsive;
        in->stuck = stuck;
        in->quiet_s = (double)(stuck ? now - in->progress_ms : quiet) / 1e3;
        if (c->cbs.on_unresponsive != NULL)
            c->cbs.on_unresponsive(c, r, c->arg);
    }
}

void lab_ctrl_set_timeout(lab_ctrl_t *c, double timeout_s)
{
    if (timeout_s > 0)
        c->timeout_s = timeout_s;
}

void lab_ctrl_describe_unresponsive(const lab_ctrl_t *c, int rank, char *buf, size_t cap)
{
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    if (in == NULL || !in->unresponsive)
        snprintf(buf, cap, "is responding");
    else if (in->stuck)
        snprintf(buf, cap, "not responding: no progress for %.1f s (it is alive but stuck)",
                 in->quiet_s);
    else
        snprintf(buf, cap, "not responding: silent for %.1f s%s", in->quiet_s,
                 in->stopped ? " (the process is stopped)" : "");
}

/* ---- start ---- */

dl_status_t lab_ctrl_start(uv_loop_t *loop, const lab_ctrl_opts_t *opts, const lab_ctrl_cbs_t *cbs,
                           void *arg, lab_ctrl_t **c_p)
{
    static int worlds; /* numbers the worlds of this process */
    dl_status_t st = DL_ERR_NOMEM;
    lab_ctrl_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return DL_ERR_NOMEM;
    c->loop = loop;
    c->cbs = *cbs;
    c->arg = arg;
    c->remote = opts->remote;
    c->np_local = opts->np;
    c->np = opts->np + (c->remote != NULL ? lab_remote_nranks(c->remote) : 0);
    c->mpi = opts->backend != NULL && strcmp(opts->backend, "mpi") == 0;
    if (c->mpi && c->remote != NULL) {
        dl_log_error("the mpi backend starts its ranks with mpirun (--hostfile, --host), not "
                     "with distlab workers");
        free(c);
        return DL_ERR_UNSUPPORTED;
    }
    /* Other hosts under mpirun reach us on every interface (the token
     * guards the ports). */
    bool mpi_hosts = (c->mpi && (opts->hostfile != NULL || opts->hosts != NULL)) ||
                     (opts->attach && opts->attach_any_host);
    c->attach = opts->attach;
    if (c->attach)
        c->mpi = false; /* the user's launcher started them */
    c->info = calloc((size_t)c->np + 1, sizeof(*c->info));
    c->procs = calloc((size_t)c->np_local + 1, sizeof(*c->procs));
    c->rank_link = calloc((size_t)c->np + 1, sizeof(*c->rank_link));
    c->killed_with = calloc((size_t)c->np + 1, sizeof(*c->killed_with));
    if (c->info == NULL || c->procs == NULL || c->rank_link == NULL || c->killed_with == NULL)
        goto err_free;
    gethostname(c->hostname, sizeof(c->hostname) - 1);
    for (int r = 0; r < c->np; r++) {
        c->info[r].rank = r;
        snprintf(c->info[r].host, sizeof(c->info[r].host), "%s", c->hostname);
    }
    /* The token keeps strangers off the control port and the store. */
    char fresh[DL_AUTH_HEX_LEN];
    if (c->remote != NULL)
        c->token = strdup(lab_remote_token(c->remote));
    else if ((st = dl_auth_new_token(fresh)) != DL_OK)
        goto err_free;
    else
        c->token = strdup(fresh);
    if (c->token == NULL) {
        st = DL_ERR_NOMEM;
        goto err_free;
    }

    /* Where the workers' ranks can reach us: the address the shell listens
     * on for workers; without workers, the loopback. Local ranks connect to
     * the loopback when that address is the wildcard. */
    const char *bind = c->remote != NULL ? lab_remote_bind_host(c->remote)
                       : mpi_hosts       ? "0.0.0.0"
                                         : "127.0.0.1";
    const char *here = !lab_host_is_wildcard(bind) ? bind : strchr(bind, ':') ? "::1" : "127.0.0.1";
    if (mpi_hosts) { /* what the other hosts can resolve */
        const char *addr = getenv("DISTLAB_HOST_ADDR");
        here = addr != NULL && addr[0] != '\0' ? addr : c->hostname;
    }
    if ((st = dl_store_server_start_auth(loop, bind, 0, c->token, &c->store)) != DL_OK)
        goto err_free;
    lab_server_opts_t so = {.host = bind, .port = 0, .token = c->token};
    lab_link_cbs_t lc = {.on_auth = on_auth, .on_frame = on_frame, .on_close = on_link_close};
    if ((st = lab_server_start(loop, &so, &lc, c, &c->server)) != DL_OK) {
        c->server = NULL;
        goto err_close;
    }
    c->open_handles++; /* released when the server is gone */
    c->timeout_s = opts->timeout_s > 0 ? opts->timeout_s : 30;
    uv_timer_init(loop, &c->live);
    c->live.data = c;
    c->open_handles++;
    uv_timer_start(&c->live, liveness_tick, LIVE_TICK_MS, LIVE_TICK_MS);

    char exe[4096];
    if (opts->exe != NULL)
        snprintf(exe, sizeof(exe), "%s", opts->exe);
    else if (lab_spawn_exe(exe, sizeof(exe)) != 0) {
        st = DL_ERR_SYSTEM;
        goto err_close;
    }
    char world[48];
    snprintf(world, sizeof(world), "w%d-%d", (int)getpid(), ++worlds);
    const char *transport = opts->transport != NULL ? opts->transport : getenv("DISTLAB_TRANSPORT");
    if (transport != NULL && transport[0] == '\0')
        transport = NULL;
    lab_rank_env_t env = {
        .world_size = c->np,
        .local_world_size = c->np_local,
        .control_host = here,
        .control_port = lab_server_port(c->server),
        .store_host = here,
        .store_port = dl_store_server_port(c->store),
        .token = c->token,
        .world = world,
        .timeout_s = opts->timeout_s,
        .transport = transport,
        .host_addr = c->remote != NULL ? lab_remote_host_addr(c->remote) : NULL,
        .backend = opts->backend,
    };
    c->env = env;
    snprintf(c->env_here, sizeof(c->env_here), "%s", here);
    snprintf(c->env_world, sizeof(c->env_world), "%s", world);
    c->env.control_host = c->env.store_host = c->env_here;
    c->env.world = c->env_world;
    c->env.token = c->token;
    c->env.transport = NULL;
    if (c->attach) {
        /* lab_ctrl_rank_env tells the launcher what to pass. */
    } else if (c->mpi) {
        if ((st = spawn_mpirun(c, exe, opts, &env)) != DL_OK)
            goto err_close;
    } else {
        for (int r = 0; r < c->np_local; r++)
            if ((st = spawn_rank(c, r, exe, &env)) != DL_OK)
                goto err_close;
    }
    if (c->remote != NULL && c->np > c->np_local) {
        lab_remote_world_t w = {.base = c->np_local,
                                .size = c->np,
                                .control_port = env.control_port,
                                .store_port = env.store_port,
                                .world = world,
                                .timeout_s = opts->timeout_s,
                                .transport = transport};
        lab__remote_world_start(c->remote, c, &w);
    }
    *c_p = c;
    return DL_OK;

err_close:
    /* Handles must be closed through the loop; lab_ctrl_close frees c. */
    lab_ctrl_close(c);
    return st;
err_free:
    ctrl_free(c);
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
    if (rank < 0 || rank >= c->np || c->info[rank].exited)
        return;
    if (rank >= c->np_local) {
        /* Its worker sends the signal and reports the end. */
        if (c->remote != NULL)
            lab__remote_kill(c->remote, c, rank, sig);
        return;
    }
    if (c->mpi || c->attach) {
        /* mpirun started it: signal it where it runs, when that is here. */
        const lab_rank_info_t *in = &c->info[rank];
        if (in->pid <= 0)
            return; /* not connected yet: lab_ctrl_kill_all stops mpirun itself */
        if (strcmp(in->host, c->hostname) != 0) {
            dl_log_warn("rank %d runs on %s under mpirun: distlab signals only ranks on this host",
                        rank, in->host);
            return;
        }
        c->killed_with[rank] = sig;
        uv_kill(in->pid, sig);
        return;
    }
    if (c->procs[rank].spawned)
        uv_process_kill(&c->procs[rank].proc, sig);
}

void lab_ctrl_kill_all(lab_ctrl_t *c, int sig)
{
    /* mpirun passes SIGTERM on to every rank, on every host. */
    if (c->mpi && c->mpirun_started && !c->mpirun_exited && sig == SIGKILL)
        uv_process_kill(&c->mpirun, SIGTERM);
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

void lab_ctrl_describe_rank(const lab_ctrl_t *c, int rank, char *buf, size_t cap)
{
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    if (in == NULL)
        snprintf(buf, cap, "rank %d", rank);
    else if (in->worker == 0 && strcmp(in->host, c->hostname) == 0)
        snprintf(buf, cap, "rank %d (pid %d)", rank, in->pid);
    else if (in->worker == 0)
        snprintf(buf, cap, "rank %d (pid %d on %s)", rank, in->pid, in->host);
    else
        snprintf(buf, cap, "rank %d (pid %d on %s, worker %d)", rank, in->pid, in->host,
                 in->worker);
}

void lab_ctrl_describe_rank_exit(const lab_ctrl_t *c, int rank, char *buf, size_t cap)
{
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    if (in == NULL || !in->exited)
        snprintf(buf, cap, "is running");
    else if (in->lost[0] != '\0' && in->worker == 0)
        snprintf(buf, cap, "%s", in->lost);
    else if (in->lost[0] != '\0')
        snprintf(buf, cap, "was lost with worker %d on %s (%s)", in->worker, in->host, in->lost);
    else
        lab_ctrl_describe_exit(buf, cap, in->exit_status, in->term_signal);
}

bool lab_ctrl_all_exited(const lab_ctrl_t *c)
{
    if (c->mpi)
        return !c->mpirun_started || c->mpirun_done;
    if (c->attach) {
        for (int r = 0; r < c->np; r++)
            if (!c->info[r].exited)
                return false;
        return true;
    }
    for (int r = 0; r < c->np; r++)
        if ((r >= c->np_local || c->procs[r].spawned) && !c->info[r].exited)
            return false;
    return true;
}

void lab_ctrl_close(lab_ctrl_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    if (c->mpi && c->mpirun_started) {
        /* mpirun passes SIGTERM on to every rank, on every host, and exits. */
        if (!c->mpirun_exited)
            uv_process_kill(&c->mpirun, SIGTERM);
        uv_timer_stop(&c->mpirun_grace);
        uv_close((uv_handle_t *)&c->mpirun_grace, handle_closed);
        if (!c->mpirun_err_eof) {
            c->mpirun_err_eof = true;
            uv_close((uv_handle_t *)&c->mpirun_err, handle_closed);
        }
    }
    for (int r = 0; r < c->np_local && !c->mpi; r++)
        lab_ctrl_kill(c, r, SIGKILL);
    if (c->server != NULL) { /* the liveness timer starts with the server */
        uv_timer_stop(&c->live);
        uv_close((uv_handle_t *)&c->live, handle_closed);
    }
    /* The workers kill this world's ranks; their ends are no longer news. */
    if (c->remote != NULL)
        lab__remote_world_stop(c->remote, c);
    if (c->store != NULL) {
        dl_store_server_stop(c->store);
        c->store = NULL;
    }
    /* Processes still running close their handle from the exit callback. */
    if (c->server != NULL)
        lab_server_close(c->server, server_gone, c);
    else if (c->open_handles == 0)
        ctrl_free(c);
}
