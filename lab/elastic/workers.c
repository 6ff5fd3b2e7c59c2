/* See workers.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab/elastic/workers.h"

static double now_s(void)
{
    return (double)uv_hrtime() / 1e9;
}

void lab_workers_init(lab_workers_t *ws, uv_loop_t *loop)
{
    memset(ws, 0, sizeof(*ws));
    ws->loop = loop;
    ws->watchdog_fd = -1;
}

/* ---- the watchdog ---- */

/* Tells the watchdog about a group: "+PGID" to watch, "-PGID" to forget.
 * One short write each, so lines never interleave. */
static void watchdog_say(lab_workers_t *ws, char sign, int pgid)
{
    if (ws->watchdog_fd < 0)
        return;
    char line[32];
    int len = snprintf(line, sizeof(line), "%c%d\n", sign, pgid);
    ssize_t rc;
    do
        rc = write(ws->watchdog_fd, line, (size_t)len);
    while (rc < 0 && errno == EINTR);
}

static void watchdog_main(int fd)
{
    /* The terminal's signals are for the agent, which stops its workers
     * itself; the watchdog acts only when the agent is gone. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (null > 2)
            close(null);
    }
    int *groups = NULL;
    size_t n = 0, cap = 0;
    char buf[4096], line[32];
    size_t len = 0;
    for (;;) {
        ssize_t got = read(fd, buf, sizeof(buf));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof(line) - 1)
                    line[len++] = buf[i];
                continue;
            }
            line[len] = '\0';
            len = 0;
            int pgid = atoi(line + 1);
            if (pgid <= 1)
                continue;
            if (line[0] == '+') {
                if (n == cap) {
                    size_t ncap = cap ? cap * 2 : 64;
                    int *g = realloc(groups, ncap * sizeof(*g));
                    if (g == NULL)
                        continue;
                    groups = g;
                    cap = ncap;
                }
                groups[n++] = pgid;
            } else {
                for (size_t j = 0; j < n; j++)
                    if (groups[j] == pgid) {
                        groups[j] = groups[--n];
                        break;
                    }
            }
        }
    }
    /* The agent is gone: nothing of its workers may stay. */
    for (size_t j = 0; j < n; j++)
        kill(-groups[j], SIGKILL);
    _exit(0);
}

bool lab_workers_watchdog(lab_workers_t *ws)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return false;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        close(fds[1]);
        watchdog_main(fds[0]);
    }
    close(fds[0]);
    ws->watchdog_fd = fds[1];
    return true;
}

void lab_workers_release(lab_workers_t *ws)
{
    if (ws->watchdog_fd >= 0)
        close(ws->watchdog_fd);
    ws->watchdog_fd = -1;
}

/* ---- finding the command ---- */

/* 0: an executable file; EACCES: there, but a directory or not executable;
 * ENOENT: nothing there. */
static int check_file(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ENOENT;
    return S_ISREG(sb.st_mode) && access(path, X_OK) == 0 ? 0 : EACCES;
}

int lab_workers_find(const char *file, char *path, size_t cap)
{
    if (file[0] == '\0')
        return ENOENT;
    if (strchr(file, '/') != NULL) {
        snprintf(path, cap, "%s", file);
        return check_file(file);
    }
    const char *p = getenv("PATH");
    if (p == NULL)
        p = "/usr/local/bin:/bin:/usr/bin";
    int found = ENOENT;
    while (*p != '\0') {
        const char *colon = strchr(p, ':');
        size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
        int n = snprintf(path, cap, "%.*s/%s", (int)len, len > 0 ? p : ".", file);
        if (n > 0 && (size_t)n < cap) {
            int err = check_file(path);
            if (err == 0)
                return 0;
            /* As execvp: a later directory may still hold an executable one. */
            if (err == EACCES)
                found = EACCES;
        }
        if (colon == NULL)
            break;
        p = colon + 1;
    }
    return found;
}

/* ---- starting ---- */

/* Names the agent sets: an inherited variable of the same name is dropped.
 * DISTLAB_STORE and DISTLAB_CONTROL belong to a distlab session, not to
 * these workers, whose rank 0 serves their store (env://). */
static const char *const owned[] = {
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "ROLE_NAME",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE",
    "DISTLAB_STORE",
    "DISTLAB_CONTROL",
};
#define N_OWNED   (sizeof(owned) / sizeof(owned[0]))
#define N_VARS    20
#define VAR_BYTES 160

static bool is_owned(const char *entry)
{
    for (size_t i = 0; i < N_OWNED; i++) {
        size_t len = strlen(owned[i]);
        if (strncmp(entry, owned[i], len) == 0 && entry[len] == '=')
            return true;
    }
    return false;
}

static char **worker_environ(const lab_worker_env_t *e, char vars[][VAR_BYTES])
{
    extern char **environ;
    int n = 0;
    const int V = VAR_BYTES;
    snprintf(vars[n++], V, "RANK=%d", e->rank);
    snprintf(vars[n++], V, "LOCAL_RANK=%d", e->local_rank);
    snprintf(vars[n++], V, "WORLD_SIZE=%d", e->world_size);
    snprintf(vars[n++], V, "LOCAL_WORLD_SIZE=%d", e->local_world_size);
    snprintf(vars[n++], V, "GROUP_RANK=%d", e->group_rank);
    snprintf(vars[n++], V, "GROUP_WORLD_SIZE=%d", e->group_world_size);
    /* One role, as torchrun runs it: the role's ranks are the world's. */
    snprintf(vars[n++], V, "ROLE_RANK=%d", e->rank);
    snprintf(vars[n++], V, "ROLE_WORLD_SIZE=%d", e->world_size);
    snprintf(vars[n++], V, "ROLE_NAME=default");
    snprintf(vars[n++], V, "MASTER_ADDR=%s", e->master_addr);
    snprintf(vars[n++], V, "MASTER_PORT=%d", e->master_port);
    snprintf(vars[n++], V, "TORCHELASTIC_RESTART_COUNT=%d", e->restart_count);
    snprintf(vars[n++], V, "TORCHELASTIC_MAX_RESTARTS=%d", e->max_restarts);
    snprintf(vars[n++], V, "TORCHELASTIC_RUN_ID=%s", e->run_id);
    /* The workers' env:// store is their rank 0's, not the agent's. */
    snprintf(vars[n++], V, "TORCHELASTIC_USE_AGENT_STORE=False");
    if (e->omp_one)
        snprintf(vars[n++], V, "OMP_NUM_THREADS=1");
    if (getenv("NCCL_ASYNC_ERROR_HANDLING") == NULL)
        snprintf(vars[n++], V, "NCCL_ASYNC_ERROR_HANDLING=1");

    size_t nenv = 0;
    while (environ[nenv] != NULL)
        nenv++;
    char **env = calloc(nenv + (size_t)n + 1, sizeof(char *));
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (!is_owned(environ[i]))
            env[k++] = environ[i];
    for (int i = 0; i < n; i++)
        env[k++] = vars[i];
    env[k] = NULL;
    return env;
}

static void format_wall(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%d_%H:%M:%S", &tm);
}

static void on_closed(uv_handle_t *h)
{
    lab_worker_t *w = h->data;
    w->closed = true;
}

static void worker_exited(uv_process_t *p, int64_t status, int sig)
{
    lab_worker_t *w = p->data;
    w->exited = true;
    w->exit_code = (int)status;
    w->term_signal = sig;
    w->exit_time = now_s();
    format_wall(w->exit_wall, sizeof(w->exit_wall));
    uv_close((uv_handle_t *)p, on_closed);
    if (w->ws->on_exit != NULL)
        w->ws->on_exit(w->ws->on_exit_arg, w);
}

dl_status_t lab_workers_start(lab_workers_t *ws, char *const *argv, int n,
                              const lab_worker_env_t *env, char *why, size_t cap)
{
    ws->w = calloc((size_t)n, sizeof(*ws->w));
    if (ws->w == NULL) {
        snprintf(why, cap, "out of memory");
        return DL_ERR_NOMEM;
    }
    ws->n = 0;
    for (int i = 0; i < n; i++) {
        lab_worker_t *w = &ws->w[i];
        w->ws = ws;
        w->local_rank = env[i].local_rank;
        w->rank = env[i].rank;
        w->proc.data = w;
        ws->n++;
        char vars[N_VARS][VAR_BYTES];
        char **envp = worker_environ(&env[i], vars);
        if (envp == NULL) {
            snprintf(why, cap, "out of memory");
            w->exited = w->closed = true;
            return DL_ERR_NOMEM;
        }
        /* Standard input is /dev/null; output passes straight through. */
        uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                         {.flags = UV_INHERIT_FD, .data.fd = 1},
                                         {.flags = UV_INHERIT_FD, .data.fd = 2}};
        uv_process_options_t po = {0};
        po.file = argv[0];
        po.args = (char **)argv;
        po.env = envp;
        po.exit_cb = worker_exited;
        po.stdio_count = 3;
        po.stdio = stdio;
        /* A session and process group of its own: stopping it reaches what
         * it started, and the terminal's Ctrl-C is the agent's to pass on. */
        po.flags = UV_PROCESS_DETACHED;
        int rc = uv_spawn(ws->loop, &w->proc, &po);
        free(envp);
        if (rc != 0) {
            if (rc == UV_ENOENT)
                snprintf(why, cap, "%s: not found", argv[0]);
            else
                snprintf(why, cap, "cannot start %s: %s", argv[0], uv_strerror(rc));
            w->exited = true;
            /* libuv keeps a failed process handle until it is closed. */
            uv_close((uv_handle_t *)&w->proc, on_closed);
            return DL_ERR_SYSTEM;
        }
        w->spawned = true;
        w->pid = w->proc.pid;
        watchdog_say(ws, '+', w->pid);
    }
    return DL_OK;
}

/* ---- stopping ---- */

/* Whether any process of group pgid is still alive (zombies aside: one
 * whose parent has not reaped it yet is no longer running). */
static bool group_alive(int pgid)
{
    if (kill(-pgid, 0) != 0 && errno == ESRCH)
        return false;
    DIR *proc = opendir("/proc");
    if (proc == NULL)
        return true;
    bool alive = false;
    struct dirent *de;
    while (!alive && (de = readdir(proc)) != NULL) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        char path[300], text[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t len = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[len] = '\0';
        /* pid (comm) state ppid pgrp ...: comm may hold anything. */
        const char *rp = strrchr(text, ')');
        char state;
        int ppid, pgrp;
        if (rp != NULL && sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) == 3)
            alive = pgrp == pgid && state != 'Z' && state != 'X';
    }
    closedir(proc);
    return alive;
}

void lab_workers_signal(lab_workers_t *ws, int sig)
{
    for (int i = 0; i < ws->n; i++)
        if (ws->w[i].spawned)
            kill(-ws->w[i].pid, sig);
}

bool lab_workers_all_exited(const lab_workers_t *ws)
{
    for (int i = 0; i < ws->n; i++)
        if (!ws->w[i].exited)
            return false;
    return true;
}

bool lab_workers_quiet(lab_workers_t *ws)
{
    for (int i = 0; i < ws->n; i++) {
        lab_worker_t *w = &ws->w[i];
        if (!w->exited || !w->closed)
            return false;
    }
    for (int i = 0; i < ws->n; i++)
        if (ws->w[i].spawned && group_alive(ws->w[i].pid))
            return false;
    return true;
}

const lab_worker_t *lab_workers_first_failure(const lab_workers_t *ws)
{
    const lab_worker_t *first = NULL;
    for (int i = 0; i < ws->n; i++) {
        const lab_worker_t *w = &ws->w[i];
        if (!w->spawned || !w->exited || (w->exit_code == 0 && w->term_signal == 0))
            continue;
        if (first == NULL || w->exit_time < first->exit_time)
            first = w;
    }
    return first;
}

void lab_workers_clear(lab_workers_t *ws)
{
    for (int i = 0; i < ws->n; i++) {
        lab_worker_t *w = &ws->w[i];
        if (w->spawned && !group_alive(w->pid))
            watchdog_say(ws, '-', w->pid);
    }
    /* A handle that libuv still holds cannot be freed: its memory is left
     * to it (a worker that outlived SIGKILL, which the agent has reported). */
    bool all_closed = true;
    for (int i = 0; i < ws->n; i++)
        all_closed = all_closed && ws->w[i].closed;
    if (all_closed)
        free(ws->w);
    ws->w = NULL;
    ws->n = 0;
}
