/* See remote.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab/ctrl/controller.h"
#include "lab/ctrl/launch.h"
#include "lab/ctrl/link.h"
#include "lab/proto/job.h"
#include "lab/proto/proto.h"
#include "lab/remote/remote.h"

/* A worker says little: small frames only. */
#define WORKER_FRAME_MAX (64u << 10)

typedef struct worker {
    lab_remote_t *rem;
    lab_link_t *link;
    int id;
    char host[64];
    int nproc;
    int base; /* its first rank in the current world; -1 when in none */
    struct worker *next;
} worker_t;

struct lab_remote {
    uv_loop_t *loop;
    lab_remote_opts_t o;
    lab_server_t *server;
    uv_timer_t change; /* defers on_change to the next loop turn */
    char host[256];
    char token[512];
    char host_addr[256];
    int port;
    worker_t *workers; /* in the order they joined */
    int next_id;
    lab_launcher_t launcher; /* its ops and this */
    /* The current world. */
    lab_ctrl_t *ctrl;
    int base, n; /* the world's ranks that the workers run */
    long gen;
    int open_handles;
    bool closing;
};

static void say(lab_remote_t *rem, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(lab_remote_t *rem, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (rem->o.say != NULL)
        rem->o.say(rem->o.arg, line);
    else
        fprintf(stderr, "distlab: %s\n", line);
}

static void on_refused(void *arg, const char *line)
{
    say(arg, "%s", line);
}

static void send_to(worker_t *w, json_t *msg)
{
    if (msg != NULL)
        lab_link_send(w->link, msg, NULL, 0);
    json_decref(msg);
}

/* ---- teardown ---- */

static void release(lab_remote_t *rem)
{
    if (--rem->open_handles > 0)
        return;
    while (rem->workers != NULL) {
        worker_t *w = rem->workers;
        rem->workers = w->next;
        free(w);
    }
    free(rem);
}

static void server_gone(void *arg)
{
    release(arg);
}

static void timer_closed(uv_handle_t *h)
{
    release(h->data);
}

/* ---- workers ---- */

static void change_fired(uv_timer_t *t)
{
    lab_remote_t *rem = t->data;
    if (!rem->closing && rem->o.on_change != NULL)
        rem->o.on_change(rem->o.arg);
}

static bool on_auth(lab_link_t *l, const json_t *auth, json_t *welcome, char *why, size_t cap)
{
    lab_remote_t *rem = lab_link_arg(l);
    if (strcmp(lab_json_str(auth, "role", ""), "worker") != 0) {
        snprintf(why, cap, "this port is for workers, not for a %s",
                 lab_json_str(auth, "role", "stranger"));
        return false;
    }
    long long nproc = lab_json_int(auth, "nproc", 0);
    if (nproc < 1 || nproc > LAB_MAX_NP || lab_remote_nranks(rem) + nproc > LAB_MAX_NP) {
        snprintf(why, cap, "a worker with %lld ranks would make more than %d", nproc, LAB_MAX_NP);
        return false;
    }
    worker_t *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    w->rem = rem;
    w->link = l;
    w->id = ++rem->next_id;
    w->nproc = (int)nproc;
    w->base = -1;
    snprintf(w->host, sizeof(w->host), "%s", lab_json_str(auth, "host", "?"));
    worker_t **pp = &rem->workers;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = w;
    lab_link_set_data(l, w);
    json_object_set_new(welcome, "worker", json_integer(w->id));
    if (rem->host_addr[0] == '\0')
        snprintf(rem->host_addr, sizeof(rem->host_addr), "%s", lab_link_local_ip(l));
    say(rem, "worker %d joined from %s (%s) with %d rank%s; the world restarts with them", w->id,
        w->host, lab_link_peer(l), w->nproc, w->nproc == 1 ? "" : "s");
    /* After the welcome has gone out: the new world's orders come next. */
    uv_timer_start(&rem->change, change_fired, 0, 0);
    return true;
}

/* Whether rank is one of w's in the current world of generation gen. */
static bool owns(const worker_t *w, long long gen, int rank)
{
    const lab_remote_t *rem = w->rem;
    return rem->ctrl != NULL && gen == rem->gen && w->base >= 0 && rank >= w->base &&
           rank < w->base + w->nproc;
}

static void on_frame(lab_link_t *l, const dl_frame_t *f)
{
    worker_t *w = lab_link_data(l);
    lab_remote_t *rem = w->rem;
    const char *type = lab_msg_type(f->json);
    long long gen = lab_json_int(f->json, "gen", -1);
    int rank = (int)lab_json_int(f->json, "rank", -1);
    if (!owns(w, gen, rank))
        return; /* a rank of an older world */
    if (strcmp(type, "started") == 0)
        lab_launch_started(rem->ctrl, rank, (int)lab_json_int(f->json, "pid", 0));
    else if (strcmp(type, "exit") == 0)
        lab_launch_exited(rem->ctrl, rank, lab_json_int(f->json, "status", 0),
                          (int)lab_json_int(f->json, "signal", 0), NULL);
}

static void on_close(lab_link_t *l, const char *why)
{
    worker_t *w = lab_link_data(l);
    lab_remote_t *rem = w->rem;
    for (worker_t **pp = &rem->workers; *pp != NULL; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    say(rem, "worker %d on %s went away (%s); `respawn` restarts the world without it", w->id,
        w->host, why);
    /* Its ranks died with it (or soon will): report each one. Reporting may
     * stop the world, so look again after each. */
    long gen = rem->gen;
    for (int i = 0; i < w->nproc && w->base >= 0; i++) {
        if (rem->closing || rem->ctrl == NULL || rem->gen != gen)
            break;
        lab_launch_exited(rem->ctrl, w->base + i, -1, 0, why);
    }
    free(w);
}

/* ---- the world: the workers as a launcher (lab/ctrl/launch.h) ---- */

static void remote_plan(void *self, const lab_launch_opts_t *opts, lab_launch_plan_t *p)
{
    (void)opts;
    lab_remote_t *rem = self;
    p->nranks = lab_remote_nranks(rem);
    p->token = rem->token;
    /* The workers' ranks reach the controller where the shell listens for
     * the workers; local ranks learn the address the workers see. */
    p->bind_host = rem->host;
    p->host_addr = lab_remote_host_addr(rem);
}

/* Places the workers' ranks after the local ones, in the order the workers
 * joined, and has each start its share. */
static dl_status_t remote_start(void *self, lab_ctrl_t *c, const lab_launch_world_t *wd,
                                void **state_p)
{
    lab_remote_t *rem = self;
    const lab_rank_env_t *env = wd->env;
    rem->ctrl = c;
    rem->base = wd->base;
    rem->n = wd->n;
    rem->gen++;
    int base = wd->base;
    for (worker_t *w = rem->workers; w != NULL; w = w->next) {
        if (base + w->nproc > env->world_size) {
            w->base = -1; /* joined since the world was sized: next time */
            continue;
        }
        w->base = base;
        for (int i = 0; i < w->nproc; i++)
            lab_launch_placed(c, base + i, w->id, w->host);
        json_t *msg = json_pack("{s:s, s:I, s:i, s:i, s:i, s:i, s:s, s:f}", "type", "world", "gen",
                                (json_int_t)rem->gen, "base", base, "size", env->world_size,
                                "control_port", env->control_port, "store_port", env->store_port,
                                "world", env->world, "timeout", env->timeout_s);
        if (msg != NULL && env->transport != NULL)
            json_object_set_new(msg, "transport", json_string(env->transport));
        send_to(w, msg);
        base += w->nproc;
    }
    *state_p = rem;
    return DL_OK;
}

static void remote_kill(void *state, int rank, int sig)
{
    lab_remote_t *rem = state;
    if (rem->ctrl == NULL)
        return;
    for (worker_t *w = rem->workers; w != NULL; w = w->next)
        if (owns(w, rem->gen, rank)) {
            send_to(w, json_pack("{s:s, s:I, s:i, s:i}", "type", "kill", "gen",
                                 (json_int_t)rem->gen, "rank", rank, "signal", sig));
            return;
        }
}

static bool remote_all_exited(void *state)
{
    lab_remote_t *rem = state;
    for (int r = rem->base; rem->ctrl != NULL && r < rem->base + rem->n; r++)
        if (!lab_ctrl_rank(rem->ctrl, r)->exited)
            return false;
    return true;
}

/* Has the workers kill the world's ranks; nothing more of it is reported. */
static void remote_close(void *state)
{
    lab_remote_t *rem = state;
    if (rem->ctrl == NULL)
        return;
    for (worker_t *w = rem->workers; w != NULL; w = w->next) {
        if (w->base < 0)
            continue;
        send_to(w, json_pack("{s:s, s:I}", "type", "stop", "gen", (json_int_t)rem->gen));
        w->base = -1;
    }
    rem->ctrl = NULL;
}

static const lab_launcher_ops_t remote_ops = {
    .name = "remote",
    .plan = remote_plan,
    .start = remote_start,
    .kill = remote_kill,
    .all_exited = remote_all_exited,
    .close = remote_close,
};

const lab_launcher_t *lab_remote_launcher(lab_remote_t *rem)
{
    return rem != NULL ? &rem->launcher : NULL;
}

/* ---- life cycle ---- */

dl_status_t lab_remote_start(uv_loop_t *loop, const lab_remote_opts_t *opts, lab_remote_t **r_p)
{
    lab_remote_t *rem = calloc(1, sizeof(*rem));
    if (rem == NULL)
        return DL_ERR_NOMEM;
    rem->loop = loop;
    rem->o = *opts;
    /* Registered by name like every launcher; the shell's world reaches it
     * through lab_remote_launcher. */
    lab_launcher_register(&remote_ops);
    rem->launcher = (lab_launcher_t){.ops = &remote_ops, .self = rem};
    snprintf(rem->host, sizeof(rem->host), "%s", opts->host);
    snprintf(rem->token, sizeof(rem->token), "%s", opts->token);
    rem->o.host = rem->host;
    rem->o.token = rem->token;
    lab_server_opts_t so = {
        .host = rem->host, .port = opts->port, .token = rem->token, .max_frame = WORKER_FRAME_MAX};
    lab_link_cbs_t cbs = {
        .on_auth = on_auth, .on_frame = on_frame, .on_close = on_close, .on_refused = on_refused};
    dl_status_t st = lab_server_start(loop, &so, &cbs, rem, &rem->server);
    if (st != DL_OK) {
        free(rem);
        return st;
    }
    rem->port = lab_server_port(rem->server);
    uv_timer_init(loop, &rem->change);
    rem->change.data = rem;
    rem->open_handles = 2;
    if (!lab_host_is_wildcard(rem->host))
        snprintf(rem->host_addr, sizeof(rem->host_addr), "%s", rem->host);
    *r_p = rem;
    return DL_OK;
}

int lab_remote_port(const lab_remote_t *rem)
{
    return rem->port;
}

void lab_remote_join_command(const lab_remote_t *rem, const char *token_file, char *buf, size_t cap)
{
    char host[256];
    if (lab_host_is_wildcard(rem->host)) {
        host[0] = '\0';
        gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = '\0';
    } else {
        snprintf(host, sizeof(host), "%s", rem->host);
    }
    bool v6 = strchr(host, ':') != NULL;
    snprintf(buf, cap, "distlab worker --join %s%s%s:%d --token-file %s", v6 ? "[" : "", host,
             v6 ? "]" : "", rem->port, token_file);
}

int lab_remote_nworkers(const lab_remote_t *rem)
{
    int n = 0;
    for (const worker_t *w = rem->workers; w != NULL; w = w->next)
        n++;
    return n;
}

int lab_remote_nranks(const lab_remote_t *rem)
{
    int n = 0;
    for (const worker_t *w = rem->workers; w != NULL; w = w->next)
        n += w->nproc;
    return n;
}

const char *lab_remote_token(const lab_remote_t *rem)
{
    return rem->token;
}

const char *lab_remote_bind_host(const lab_remote_t *rem)
{
    return rem->host;
}

const char *lab_remote_host_addr(const lab_remote_t *rem)
{
    return rem->host_addr[0] != '\0' ? rem->host_addr : NULL;
}

void lab_remote_close(lab_remote_t *rem)
{
    if (rem->closing)
        return;
    rem->closing = true;
    rem->ctrl = NULL;
    for (worker_t *w = rem->workers; w != NULL; w = w->next)
        send_to(w, json_pack("{s:s}", "type", "bye"));
    uv_timer_stop(&rem->change);
    uv_close((uv_handle_t *)&rem->change, timer_closed);
    lab_server_close(rem->server, server_gone, rem);
}

/* ---- token files ---- */

/* A private directory of ours: created 0700, or checked to be one. */
static bool private_dir(const char *dir, char *err, size_t cap)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, cap, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    struct stat sb;
    if (lstat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != getuid() ||
        (sb.st_mode & 077) != 0) {
        snprintf(err, cap, "%s is not a private directory of ours (mode 0700)", dir);
        return false;
    }
    return true;
}

dl_status_t lab_token_file_create(char *path, size_t cap, char token[DL_AUTH_HEX_LEN], char *err,
                                  size_t err_cap)
{
    char dir[512];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat sb;
    if (xdg != NULL && xdg[0] == '/' && stat(xdg, &sb) == 0 && S_ISDIR(sb.st_mode))
        snprintf(dir, sizeof(dir), "%s/distlab", xdg);
    else
        snprintf(dir, sizeof(dir), "/tmp/distlab-%u", (unsigned)getuid());
    if (!private_dir(dir, err, err_cap))
        return DL_ERR_DENIED;
    dl_status_t st = dl_auth_new_token(token);
    if (st != DL_OK) {
        snprintf(err, err_cap, "no random bytes for a token");
        return st;
    }
    snprintf(path, cap, "%s/session-%d.token", dir, (int)getpid());
    /* A file of a dead session that had our pid is stale. */
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, err_cap, "cannot create %s: %s", path, strerror(errno));
        return DL_ERR_IO;
    }
    char line[DL_AUTH_HEX_LEN + 1];
    int n = snprintf(line, sizeof(line), "%s\n", token);
    bool ok = write(fd, line, (size_t)n) == n;
    if (close(fd) != 0 || !ok) {
        snprintf(err, err_cap, "cannot write %s: %s", path, strerror(errno));
        unlink(path);
        return DL_ERR_IO;
    }
    return DL_OK;
}
