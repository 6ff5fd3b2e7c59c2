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
#include "lab/ctrl/launch.h"
#include "lab/proto/proto.h"
#include "lab/ctrl/spawn.h"

/* A launcher at work in this world: its ranks are base .. base+n-1. */
typedef struct {
    const lab_launcher_ops_t *ops;
    void *self;  /* the launcher's own object */
    void *state; /* what its start gave back; NULL: not started */
    int base, n;
} launched_t;

struct lab_ctrl {
    uv_loop_t *loop;
    lab_ctrl_cbs_t cbs;
    void *arg;
    dl_store_server_t *store;
    lab_server_t *server; /* the control port */
    int np;               /* the whole world */
    lab_rank_info_t *info;
    lab_link_t **rank_link; /* [np]: each rank's control connection */
    char *token;
    int open_handles; /* the liveness timer, and the control port's server */
    bool closing;
    char hostname[64];

    /* The main launcher (ranks 0 .. np-1 of the options), then the one that
     * brings workers' ranks, if any. */
    launched_t launched[2];
    int n_launched;

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
    free(c->info);
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

static launched_t *launcher_of(lab_ctrl_t *c, int rank);

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
        /* A launcher that does not place its ranks itself (mpirun) learns
         * from each where it landed. */
        if (c->launched[0].ops->ranks_say_host)
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
        launched_t *ld = launcher_of(c, rank);
        if (ld != NULL && ld->state != NULL && ld->ops->disconnected != NULL && !c->closing)
            ld->ops->disconnected(ld->state, rank);
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

void lab_ctrl_rank_env(const lab_ctrl_t *c, lab_rank_env_t *e)
{
    *e = c->env;
}

bool lab_ctrl_under_mpirun(const lab_ctrl_t *c)
{
    return c->launched[0].ops->whole_world;
}

/* ---- what the launchers tell ---- */

/* The launcher that started a rank, or NULL. */
static launched_t *launcher_of(lab_ctrl_t *c, int rank)
{
    for (int i = 0; i < c->n_launched; i++)
        if (rank >= c->launched[i].base && rank < c->launched[i].base + c->launched[i].n)
            return &c->launched[i];
    return NULL;
}

void lab_launch_placed(lab_ctrl_t *c, int rank, int worker, const char *host)
{
    if (rank < 0 || rank >= c->np)
        return;
    c->info[rank].worker = worker;
    snprintf(c->info[rank].host, sizeof(c->info[rank].host), "%s", host);
}

void lab_launch_started(lab_ctrl_t *c, int rank, int pid)
{
    if (rank >= 0 && rank < c->np && !c->info[rank].exited)
        c->info[rank].pid = pid;
}

void lab_launch_exited(lab_ctrl_t *c, int rank, int64_t status, int sig, const char *lost)
{
    if (rank < 0 || rank >= c->np || c->info[rank].exited)
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
 * declared dead that the ranks themselves would still wait for. A stuck
 * rank gets STUCK_GRACE_MS more: its own waits time out at the same moment
 * and say more precisely where it is (the mpi backend's watchdog names the
 * call), and on a loaded machine their report must not lose the race. If this
 * loop itself did not run for a while (the controller was stopped, or busy)
 * the clocks restart rather than blaming the ranks for our absence. */

#define LIVE_TICK_MS   250
#define MIN_QUIET_MS   1500
#define STUCK_GRACE_MS 1500

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
        bool stuck = quiet < limit && l != NULL && in->busy &&
                     now - in->progress_ms >= limit + STUCK_GRACE_MS && c->cbs.alone_busy != NULL &&
                     c->cbs.alone_busy(c, r, c->arg);
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

/* Asks a launcher what it needs of the world, over what is asked already. */
static void plan_of(const lab_launcher_ops_t *ops, void *self, const lab_launch_opts_t *opts,
                    lab_launch_plan_t *p)
{
    lab_launch_plan_t q;
    memset(&q, 0, sizeof(q));
    if (ops->plan != NULL)
        ops->plan(self, opts, &q);
    p->nranks = q.nranks;
    if (q.token != NULL)
        p->token = q.token;
    if (q.bind_host != NULL)
        p->bind_host = q.bind_host;
    if (q.host_addr != NULL)
        p->host_addr = q.host_addr;
    p->by_name = p->by_name || q.by_name;
}

dl_status_t lab_ctrl_start(uv_loop_t *loop, const lab_launch_opts_t *opts,
                           const lab_ctrl_cbs_t *cbs, void *arg, lab_ctrl_t **c_p)
{
    static int worlds; /* numbers the worlds of this process */
    dl_status_t st = DL_ERR_NOMEM;
    const char *name = lab_launch_launcher_name(opts);
    const lab_launcher_ops_t *main_ops = lab_launcher_find(name);
    const lab_launcher_t *workers = opts->workers;
    if (main_ops == NULL) {
        dl_log_error("no launcher named %s", name);
        return DL_ERR_UNSUPPORTED;
    }
    if (main_ops->whole_world && workers != NULL) {
        dl_log_error("the mpi backend starts its ranks with mpirun (--hostfile, --host), not "
                     "with distlab workers");
        return DL_ERR_UNSUPPORTED;
    }
    lab_launch_plan_t plan;
    memset(&plan, 0, sizeof(plan));
    plan_of(main_ops, NULL, opts, &plan);
    int n_workers = 0;
    if (workers != NULL) {
        plan_of(workers->ops, workers->self, opts, &plan);
        n_workers = plan.nranks;
    }

    lab_ctrl_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return DL_ERR_NOMEM;
    c->loop = loop;
    c->cbs = *cbs;
    c->arg = arg;
    c->np = opts->np + n_workers;
    c->launched[c->n_launched++] = (launched_t){.ops = main_ops, .base = 0, .n = opts->np};
    if (workers != NULL)
        c->launched[c->n_launched++] = (launched_t){
            .ops = workers->ops, .self = workers->self, .base = opts->np, .n = n_workers};
    c->info = calloc((size_t)c->np + 1, sizeof(*c->info));
    c->rank_link = calloc((size_t)c->np + 1, sizeof(*c->rank_link));
    if (c->info == NULL || c->rank_link == NULL)
        goto err_free;
    gethostname(c->hostname, sizeof(c->hostname) - 1);
    for (int r = 0; r < c->np; r++) {
        c->info[r].rank = r;
        snprintf(c->info[r].host, sizeof(c->info[r].host), "%s", c->hostname);
    }
    /* The token keeps strangers off the control port and the store. */
    char fresh[DL_AUTH_HEX_LEN];
    if (plan.token != NULL)
        c->token = strdup(plan.token);
    else if ((st = dl_auth_new_token(fresh)) != DL_OK)
        goto err_free;
    else
        c->token = strdup(fresh);
    if (c->token == NULL) {
        st = DL_ERR_NOMEM;
        goto err_free;
    }

    /* Where the ranks can reach us: where a launcher asked us to listen (the
     * address the shell listens on for workers, every interface for other
     * hosts under mpirun); otherwise the loopback. Local ranks connect to the
     * loopback when that address is the wildcard. */
    const char *bind = plan.bind_host != NULL ? plan.bind_host : "127.0.0.1";
    const char *here = !lab_host_is_wildcard(bind) ? bind : strchr(bind, ':') ? "::1" : "127.0.0.1";
    if (plan.by_name) { /* what the other hosts can resolve */
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
    if (lab_spawn_exe(exe, sizeof(exe)) != 0) {
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
        .local_world_size = opts->np,
        .control_host = here,
        .control_port = lab_server_port(c->server),
        .store_host = here,
        .store_port = dl_store_server_port(c->store),
        .token = c->token,
        .world = world,
        .timeout_s = opts->timeout_s,
        .transport = transport,
        .host_addr = plan.host_addr,
        .backend = opts->backend,
    };
    c->env = env;
    snprintf(c->env_here, sizeof(c->env_here), "%s", here);
    snprintf(c->env_world, sizeof(c->env_world), "%s", world);
    c->env.control_host = c->env.store_host = c->env_here;
    c->env.world = c->env_world;
    c->env.token = c->token;
    c->env.transport = NULL;
    for (int i = 0; i < c->n_launched; i++) {
        launched_t *ld = &c->launched[i];
        if (i > 0 && ld->n == 0)
            continue; /* no worker has joined yet */
        lab_launch_world_t w = {
            .loop = loop, .base = ld->base, .n = ld->n, .exe = exe, .opts = opts, .env = &env};
        if ((st = ld->ops->start(ld->self, c, &w, &ld->state)) != DL_OK)
            goto err_close;
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
    launched_t *ld = launcher_of(c, rank);
    if (ld != NULL && ld->state != NULL)
        ld->ops->kill(ld->state, rank, sig);
}

void lab_ctrl_kill_all(lab_ctrl_t *c, int sig)
{
    for (int i = 0; i < c->n_launched; i++)
        if (c->launched[i].state != NULL && c->launched[i].ops->kill_all != NULL)
            c->launched[i].ops->kill_all(c->launched[i].state, sig);
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
    for (int i = 0; i < c->n_launched; i++)
        if (c->launched[i].state != NULL && !c->launched[i].ops->all_exited(c->launched[i].state))
            return false;
    return true;
}

void lab_ctrl_close(lab_ctrl_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    /* The launchers stop their ranks (mpirun passes SIGTERM on to every
     * rank; the workers kill theirs); their ends are no longer news. */
    for (int i = 0; i < c->n_launched; i++) {
        launched_t *ld = &c->launched[i];
        if (ld->state != NULL)
            ld->ops->close(ld->state);
        ld->state = NULL;
    }
    if (c->server != NULL) { /* the liveness timer starts with the server */
        uv_timer_stop(&c->live);
        uv_close((uv_handle_t *)&c->live, handle_closed);
    }
    if (c->store != NULL) {
        dl_store_server_stop(c->store);
        c->store = NULL;
    }
    if (c->server != NULL)
        lab_server_close(c->server, server_gone, c);
    else if (c->open_handles == 0)
        ctrl_free(c);
}
