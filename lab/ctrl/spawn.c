/* See spawn.h. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distlab/log.h"
#include "lab/ctrl/forkserver.h"
#include "lab/ctrl/launch.h"
#include "lab/ctrl/launchers.h"
#include "lab/ctrl/spawn.h"

char **lab_spawn_env(const lab_rank_env_t *e, char vars[][LAB_SPAWN_VAR_LEN], int *n_vars_p)
{
    extern char **environ;
    /* Our own variables win over inherited ones of the same name. */
    static const char *const ours[] = {
        "RANK=",          "WORLD_SIZE=",    "LOCAL_RANK=",      "LOCAL_WORLD_SIZE=",
        "MASTER_ADDR=",   "MASTER_PORT=",   "DISTLAB_STORE=",   "DISTLAB_CONTROL=",
        "DISTLAB_TOKEN=", "DISTLAB_WORLD=", "DISTLAB_TIMEOUT=", "DISTLAB_BACKEND="};
    enum { N_OURS = sizeof(ours) / sizeof(ours[0]) };
    _Static_assert(N_OURS + 2 <= LAB_SPAWN_MAX_VARS, "LAB_SPAWN_MAX_VARS is too small");
    const int V = LAB_SPAWN_VAR_LEN;
    int n = 0;
    if (!e->launcher_numbers) {
        snprintf(vars[n++], V, "RANK=%d", e->rank);
        snprintf(vars[n++], V, "LOCAL_RANK=%d", e->local_rank);
        snprintf(vars[n++], V, "LOCAL_WORLD_SIZE=%d", e->local_world_size);
    }
    snprintf(vars[n++], V, "WORLD_SIZE=%d", e->world_size);
    snprintf(vars[n++], V, "MASTER_ADDR=%s", e->store_host);
    snprintf(vars[n++], V, "MASTER_PORT=%d", e->store_port);
    /* An IPv6 literal is fine here: readers split at the last colon. */
    snprintf(vars[n++], V, "DISTLAB_STORE=%s:%d", e->store_host, e->store_port);
    snprintf(vars[n++], V, "DISTLAB_CONTROL=%s:%d", e->control_host, e->control_port);
    snprintf(vars[n++], V, "DISTLAB_TOKEN=%s", e->token);
    snprintf(vars[n++], V, "DISTLAB_WORLD=%s", e->world);
    snprintf(vars[n++], V, "DISTLAB_TIMEOUT=%g", e->timeout_s);
    snprintf(vars[n++], V, "DISTLAB_BACKEND=%s", e->backend != NULL ? e->backend : "builtin");
    /* These two only when given: otherwise the inherited value stands. */
    if (e->transport != NULL)
        snprintf(vars[n++], V, "DISTLAB_TRANSPORT=%s", e->transport);
    if (e->host_addr != NULL)
        snprintf(vars[n++], V, "DISTLAB_HOST_ADDR=%s", e->host_addr);

    size_t nenv = 0;
    while (environ[nenv] != NULL)
        nenv++;
    char **env = calloc(nenv + (size_t)n + 1, sizeof(char *));
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++) {
        const char *v = environ[i];
        bool skip = (e->transport != NULL && strncmp(v, "DISTLAB_TRANSPORT=", 18) == 0) ||
                    (e->host_addr != NULL && strncmp(v, "DISTLAB_HOST_ADDR=", 18) == 0);
        for (size_t j = 0; j < N_OURS && !skip; j++)
            skip = strncmp(v, ours[j], strlen(ours[j])) == 0;
        if (!skip)
            env[k++] = environ[i];
    }
    for (int i = 0; i < n; i++)
        env[k++] = vars[i];
    env[k] = NULL;
    *n_vars_p = n;
    return env;
}

int lab_spawn_rank(uv_loop_t *loop, uv_process_t *proc, const char *exe, const lab_rank_env_t *e,
                   uv_exit_cb exit_cb)
{
    char vars[LAB_SPAWN_MAX_VARS][LAB_SPAWN_VAR_LEN];
    int n_vars = 0;
    char **env = lab_spawn_env(e, vars, &n_vars);
    if (env == NULL)
        return UV_ENOMEM;
    char *args[] = {(char *)exe, "rank", NULL};
    uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2}};
    if (e->output != NULL) {
        stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
        stdio[2].data.stream = (uv_stream_t *)e->output;
    }
    uv_process_options_t po = {0};
    po.file = exe;
    po.args = args;
    po.env = env;
    po.exit_cb = exit_cb;
    po.stdio_count = 3;
    po.stdio = stdio;
    /* A session of its own: the terminal's Ctrl-C, Ctrl-Z and hang-up are
     * for the shell, which interrupts ranks on purpose (lab/rank/rank.c), even
     * one still starting. The rank dies with us all the same (PDEATHSIG). */
    po.flags = UV_PROCESS_DETACHED;
    int rc = uv_spawn(loop, proc, &po);
    free(env);
    return rc;
}

int lab_spawn_exe(char *buf, size_t cap)
{
    const char *exe = getenv("DISTLAB_EXE");
    if (exe != NULL && exe[0] != '\0') {
        snprintf(buf, cap, "%s", exe);
        return 0;
    }
    size_t len = cap;
    return uv_exepath(buf, &len);
}

/* ---- the local launcher: one `distlab rank` process per rank, here ---- */

/* A rank is forked by the fork server (lab/ctrl/forkserver.h) when one
 * runs, and then watched through the pipe that receives its wait status;
 * otherwise spawned by exec, and watched through its process handle. */
typedef struct {
    union {
        uv_process_t proc; /* by exec */
        uv_pipe_t status;  /* by the fork server */
    } h;
    struct local *l;
    int rank;
    pid_t pid;
    bool forked; /* by the fork server */
    /* Forked: the rank's pidfd. The server reaps the rank as soon as it
     * ends, before its status reaches us, so its pid may be reused while
     * we still think it runs: signals go through the pidfd. pidfd_open
     * failing with ESRCH means it had ended already (gone); on a kernel
     * without pidfds (before 5.3) signals go by pid. */
    int pidfd;
    bool gone;
    bool spawned, exited;
    int wait_status; /* forked: what the status pipe said */
    size_t status_got;
} local_proc_t;

typedef struct local {
    lab_ctrl_t *c;
    int base, n;
    local_proc_t *procs; /* [n] */
    int open_handles;
    bool closed;
} local_t;

static void local_release(local_t *l)
{
    if (--l->open_handles == 0 && l->closed) {
        free(l->procs);
        free(l);
    }
}

static void local_proc_closed(uv_handle_t *h)
{
    local_release(((local_proc_t *)h->data)->l);
}

static void local_proc_ended(local_proc_t *pr, int64_t status, int sig)
{
    local_t *l = pr->l;
    pr->exited = true;
    if (pr->pidfd >= 0) {
        close(pr->pidfd);
        pr->pidfd = -1;
    }
    /* The world may be over: then its end is no news. */
    if (!l->closed)
        lab_launch_exited(l->c, pr->rank, status, sig, NULL);
    uv_close((uv_handle_t *)&pr->h, local_proc_closed); /* may free l */
}

static void local_proc_exit(uv_process_t *p, int64_t status, int sig)
{
    local_proc_ended(p->data, status, sig);
}

static void status_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    local_proc_t *pr = h->data;
    buf->base = (char *)&pr->wait_status + pr->status_got;
    buf->len = sizeof(pr->wait_status) - pr->status_got;
}

/* The fork server writes the wait status, then closes the pipe. Without a
 * status (the server itself was killed, taking the rank with it) the rank
 * counts as killed. */
static void status_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    local_proc_t *pr = s->data;
    if (n > 0)
        pr->status_got += (size_t)n;
    if (n >= 0 && pr->status_got < sizeof(pr->wait_status))
        return;
    uv_read_stop(s);
    int st = pr->wait_status;
    if (pr->status_got < sizeof(pr->wait_status))
        local_proc_ended(pr, 0, SIGKILL);
    else
        local_proc_ended(pr, WIFEXITED(st) ? WEXITSTATUS(st) : 0,
                         WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Starts rank pr through the fork server: 1 done; 0 the caller spawns it
 * by exec (the server is not running, or failed); -1 it cannot be watched
 * (its handle is closing). */
static int local_fork(uv_loop_t *loop, local_proc_t *pr, const lab_rank_env_t *e)
{
    if (!lab_forkserver_running() || e->output != NULL)
        return 0;
    char vars[LAB_SPAWN_MAX_VARS][LAB_SPAWN_VAR_LEN];
    int n_vars = 0;
    char **env = lab_spawn_env(e, vars, &n_vars);
    if (env == NULL)
        return 0;
    int status_fd = -1;
    int rc = lab_forkserver_spawn(env, 2, &pr->pid, &status_fd);
    free(env);
    if (rc != 0)
        return 0;
    if (uv_pipe_init(loop, &pr->h.status, 0) != 0) {
        close(status_fd);
        kill(pr->pid, SIGKILL); /* the server reaps it */
        return 0;
    }
    pr->h.status.data = pr;
    pr->l->open_handles++;
    if (uv_pipe_open(&pr->h.status, status_fd) != 0 ||
        uv_read_start((uv_stream_t *)&pr->h.status, status_alloc, status_read) != 0) {
        /* Watched from nowhere, the rank would be a stray: it goes now. */
        kill(pr->pid, SIGKILL);
        uv_close((uv_handle_t *)&pr->h.status, local_proc_closed);
        return -1;
    }
    pr->forked = true;
    pr->pidfd = (int)syscall(SYS_pidfd_open, pr->pid, 0);
    pr->gone = pr->pidfd < 0 && errno == ESRCH;
    return 1;
}

static dl_status_t local_start(void *self, lab_ctrl_t *c, const lab_launch_world_t *w,
                               void **state_p)
{
    (void)self;
    local_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return DL_ERR_NOMEM;
    l->procs = calloc((size_t)w->n + 1, sizeof(*l->procs));
    if (l->procs == NULL) {
        free(l);
        return DL_ERR_NOMEM;
    }
    for (int i = 0; i <= w->n; i++)
        l->procs[i].pidfd = -1;
    l->c = c;
    l->base = w->base;
    l->n = w->n;
    *state_p = l;
    for (int i = 0; i < w->n; i++) {
        lab_rank_env_t e = *w->env;
        e.rank = w->base + i;
        e.local_rank = w->base + i;
        local_proc_t *pr = &l->procs[i];
        pr->l = l;
        pr->rank = w->base + i;
        int forked = local_fork(w->loop, pr, &e);
        if (forked < 0) {
            dl_log_error("cannot watch rank %d: %m", pr->rank);
            return DL_ERR_SYSTEM;
        }
        if (forked == 0) {
            pr->h.proc.data = pr;
            int rc = lab_spawn_rank(w->loop, &pr->h.proc, w->exe, &e, local_proc_exit);
            l->open_handles++;
            if (rc != 0) {
                dl_log_error("cannot start rank %d (%s rank): %s", pr->rank, w->exe,
                             uv_strerror(rc));
                /* libuv keeps a failed process handle registered until it is closed. */
                uv_close((uv_handle_t *)&pr->h.proc, local_proc_closed);
                return DL_ERR_SYSTEM;
            }
            pr->pid = pr->h.proc.pid;
        }
        pr->spawned = true;
        lab_launch_started(c, pr->rank, pr->pid);
    }
    return DL_OK;
}

static void local_kill(void *state, int rank, int sig)
{
    local_t *l = state;
    local_proc_t *pr = &l->procs[rank - l->base];
    if (!pr->spawned || pr->exited || pr->gone)
        return;
    if (pr->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, pr->pidfd, sig, NULL, 0);
    else
        kill(pr->pid, sig);
}

static bool local_all_exited(void *state)
{
    local_t *l = state;
    for (int i = 0; i < l->n; i++)
        if (l->procs[i].spawned && !l->procs[i].exited)
            return false;
    return true;
}

static void local_close(void *state)
{
    local_t *l = state;
    /* Processes still running close their handle from the exit callback. */
    for (int i = 0; i < l->n; i++)
        local_kill(l, l->base + i, SIGKILL);
    l->closed = true;
    if (l->open_handles == 0) {
        free(l->procs);
        free(l);
    }
}

const lab_launcher_ops_t lab__launcher_local = {
    .name = "local",
    .start = local_start,
    .kill = local_kill,
    .all_exited = local_all_exited,
    .close = local_close,
};
