/* Communicator set-up and teardown: env:// and store initialisation,
 * subgroups, options. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "distlab/env.h"
#include "distlab/log.h"

#define DEFAULT_TIMEOUT_S 300.0

void dl__comm_fail(dl_comm_t *comm, dl_status_t st, const char *fmt, ...)
{
    (void)st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(comm->last_error, sizeof(comm->last_error), fmt, ap);
    va_end(ap);
    dl_log_error("%s", comm->last_error);
}

dl_status_t dl_comm_env_timeout(double *timeout_s_p, char *why, size_t cap)
{
    return dl_env_seconds("DISTLAB_TIMEOUT", 0, DL_MAX_TIMEOUT_S, "30 or 2.5", timeout_s_p, why,
                          cap);
}

/* A variable of three values: unset, empty or `auto` (*choice_p -1), on
 * (1) or off (0), or of two where off is NULL; anything else is refused in
 * one line. */
static dl_status_t env_choice(const char *name, const char *on, const char *off, int *choice_p,
                              char *why, size_t cap)
{
    const char *env = getenv(name);
    *choice_p = -1;
    if (env == NULL || env[0] == '\0' || strcmp(env, "auto") == 0)
        return DL_OK;
    if (strcmp(env, on) == 0 || (off != NULL && strcmp(env, off) == 0)) {
        *choice_p = strcmp(env, on) == 0;
        return DL_OK;
    }
    char q[DL_QUOTE_BUF];
    if (off == NULL)
        snprintf(why, cap, "%s='%s' is not a choice: expected auto or %s", name,
                 dl_quote(env, q, sizeof(q)), on);
    else
        snprintf(why, cap, "%s='%s' is not a choice: expected auto, %s or %s", name,
                 dl_quote(env, q, sizeof(q)), on, off);
    return DL_ERR_INVALID;
}

dl_status_t dl_comm_env_shm_copy(int *choice_p, char *why, size_t cap)
{
    return env_choice("DISTLAB_SHM_COPY", "on", "off", choice_p, why, cap);
}

dl_status_t dl_comm_env_shm_fence(int *choice_p, char *why, size_t cap)
{
    return env_choice("DISTLAB_SHM_FENCE", "always", NULL, choice_p, why, cap);
}

dl_status_t dl_comm_env_bind(int *choice_p, char *why, size_t cap)
{
    return env_choice("DISTLAB_BIND", "core", "none", choice_p, why, cap);
}

dl_status_t dl_comm_env_transport(int *choice_p, char *why, size_t cap)
{
    return env_choice("DISTLAB_TRANSPORT", "shm", "tcp", choice_p, why, cap);
}

/* The options' timeout, else DISTLAB_TIMEOUT's, else the default. A
 * malformed DISTLAB_TIMEOUT is refused rather than silently ignored. */
static dl_status_t default_timeout(const dl_comm_opts_t *opts, double *timeout_s_p)
{
    if (opts != NULL && opts->timeout_s > 0) {
        *timeout_s_p = opts->timeout_s;
        return DL_OK;
    }
    char why[DL_QUOTE_BUF + 128];
    double env = 0;
    if (dl_comm_env_timeout(&env, why, sizeof(why)) != DL_OK) {
        dl_log_error("%s", why);
        return DL_ERR_INVALID;
    }
    *timeout_s_p = env > 0 ? env : DEFAULT_TIMEOUT_S;
    return DL_OK;
}

dl_status_t dl_comm_init_store(dl_store_t *store, int rank, int size, const dl_comm_opts_t *opts,
                               dl_comm_t **comm_p)
{
    if (size < 1 || rank < 0 || rank >= size) {
        dl_log_error("rank %d is not in a world of size %d", rank, size);
        return DL_ERR_INVALID;
    }
    double timeout_s;
    dl_status_t st = default_timeout(opts, &timeout_s);
    if (st != DL_OK)
        return st;
    const char *bname = opts != NULL && opts->backend != NULL ? opts->backend : "builtin";
    char why[600];
    const dl_backend_ops_t *ops = dl__backend_find(bname, why, sizeof(why));
    if (ops == NULL) {
        dl_log_error("backend '%s': %s", bname, why);
        return DL_ERR_NOT_FOUND;
    }
    st = DL_ERR_NOMEM;
    dl_comm_t *comm = calloc(1, sizeof(*comm));
    dl_world_t *world = calloc(1, sizeof(*world));
    if (comm == NULL || world == NULL)
        goto err_free;
    comm->world_ranks = malloc(sizeof(int) * (size_t)size);
    if (comm->world_ranks == NULL)
        goto err_free;
    for (int i = 0; i < size; i++)
        comm->world_ranks[i] = i;
    world->rank = rank;
    world->size = size;
    world->store = store;
    world->next_ctx = 1;
    const char *prefix = getenv("DISTLAB_WORLD");
    snprintf(world->prefix, sizeof(world->prefix), "%s", prefix != NULL ? prefix : "dl");
    comm->world = world;
    comm->is_world = true;
    comm->rank = rank;
    comm->size = size;
    comm->ctx = 0;
    comm->ops = ops;
    world->call_names = dl__backend_call_names(ops->name);
    comm->timeout_s = timeout_s;
    dl_store_set_timeout(store, (int)(comm->timeout_s * 1000));
    if ((st = ops->init(comm)) != DL_OK)
        goto err_free;
    *comm_p = comm;
    return DL_OK;

err_free:
    if (comm != NULL)
        free(comm->world_ranks);
    free(comm);
    free(world);
    return st;
}

static dl_status_t env_int(const char *name, int *v_p)
{
    const char *s = getenv(name);
    char *end = NULL;
    if (s == NULL || *s == '\0') {
        dl_log_error("%s is not set (env:// needs MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE)",
                     name);
        return DL_ERR_INVALID;
    }
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > 1 << 30) {
        dl_log_error("%s='%s' is not a non-negative integer", name, s);
        return DL_ERR_INVALID;
    }
    *v_p = (int)v;
    return DL_OK;
}

dl_status_t dl_comm_init_env(const dl_comm_opts_t *opts, dl_comm_t **comm_p)
{
    int rank = 0, size = 0, port = 0;
    dl_status_t st;
    if ((st = env_int("RANK", &rank)) != DL_OK || (st = env_int("WORLD_SIZE", &size)) != DL_OK)
        return st;
    if (rank >= size) {
        dl_log_error("RANK=%d is not below WORLD_SIZE=%d", rank, size);
        return DL_ERR_INVALID;
    }
    const char *addr = getenv("MASTER_ADDR");
    if (addr == NULL || *addr == '\0')
        addr = "127.0.0.1";
    char host[256];
    /* A session's token (set by whoever spawned us) guards its store. */
    const char *token = getenv("DISTLAB_TOKEN");
    const char *ext = getenv("DISTLAB_STORE");
    dl_store_server_t *srv = NULL;
    if (ext != NULL && *ext != '\0') {
        /* A store that the launcher serves, as host:port. */
        const char *colon = strrchr(ext, ':');
        if (colon == NULL || (size_t)(colon - ext) >= sizeof(host) || atoi(colon + 1) <= 0 ||
            atoi(colon + 1) > 65535) {
            dl_log_error("DISTLAB_STORE='%s' is not host:port", ext);
            return DL_ERR_INVALID;
        }
        snprintf(host, sizeof(host), "%.*s", (int)(colon - ext), ext);
        port = atoi(colon + 1);
    } else {
        if ((st = env_int("MASTER_PORT", &port)) != DL_OK)
            return st;
        if (port < 1 || port > 65535) {
            dl_log_error("MASTER_PORT=%d is not a port (1 to 65535)", port);
            return DL_ERR_INVALID;
        }
        snprintf(host, sizeof(host), "%s", addr);
        /* As torch's env:// does, rank 0 serves the store. */
        if (rank == 0 && (st = dl_store_server_start_thread_auth(host, port, token, &srv)) != DL_OK)
            return st;
    }
    dl_store_t *store = NULL;
    double timeout_s;
    if ((st = default_timeout(opts, &timeout_s)) != DL_OK)
        goto err_stop_server;
    if ((st = dl_store_connect_auth(host, port, token, (int)(timeout_s * 1000), &store)) != DL_OK)
        goto err_stop_server;
    dl_comm_t *comm = NULL;
    if ((st = dl_comm_init_store(store, rank, size, opts, &comm)) != DL_OK) {
        dl_store_close(store);
        goto err_stop_server;
    }
    comm->world->store_srv = srv;
    *comm_p = comm;
    return DL_OK;

err_stop_server:
    if (srv != NULL)
        dl_store_server_stop_thread(srv);
    return st;
}

dl_status_t dl_comm_new_group(dl_comm_t *comm, const int *ranks, int n, dl_comm_t **group_p)
{
    /* Every rank takes the next context id, members or not, so that ids
     * agree everywhere (torch requires every rank to call new_group). */
    uint32_t ctx = comm->world->next_ctx++;
    if (n < 1 || n > comm->size) {
        dl__comm_fail(comm, DL_ERR_INVALID, "new_group: %d ranks in a group of %d", n, comm->size);
        return DL_ERR_INVALID;
    }
    int mine = -1;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= comm->size) {
            dl__comm_fail(comm, DL_ERR_INVALID, "new_group: rank %d does not exist (size %d)",
                          ranks[i], comm->size);
            return DL_ERR_INVALID;
        }
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i]) {
                dl__comm_fail(comm, DL_ERR_INVALID, "new_group: rank %d is listed twice", ranks[i]);
                return DL_ERR_INVALID;
            }
        if (ranks[i] == comm->rank)
            mine = i;
    }
    if (mine < 0) {
        *group_p = NULL;
        return DL_OK;
    }
    dl_comm_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return DL_ERR_NOMEM;
    g->world_ranks = malloc(sizeof(int) * (size_t)n);
    if (g->world_ranks == NULL) {
        free(g);
        return DL_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++)
        g->world_ranks[i] = comm->world_ranks[ranks[i]];
    g->world = comm->world;
    g->rank = mine;
    g->size = n;
    g->ctx = ctx;
    g->ops = comm->ops;
    g->timeout_s = comm->timeout_s;
    dl_status_t st = g->ops->new_group(comm, g);
    if (st != DL_OK) {
        free(g->world_ranks);
        free(g);
        return st;
    }
    *group_p = g;
    return DL_OK;
}

/* Every rank checks out through the store; the rank that serves it waits
 * (at most 5 s) for all of them, so that it does not take the store away
 * from ranks still setting up or finishing. In a world that is down (a rank
 * died, timed out or aborted) some never check out: it does not wait. */
static void leave_world(dl_world_t *world, bool down)
{
    char key[128], done[128];
    snprintf(key, sizeof(key), "%s/left", world->prefix);
    snprintf(done, sizeof(done), "%s/left/done", world->prefix);
    int64_t n = 0;
    dl_store_set_timeout(world->store, 5000);
    if (dl_store_add(world->store, key, 1, &n) != DL_OK)
        return;
    if (n == world->size)
        dl_store_set_str(world->store, done, "1");
    if (world->store_srv != NULL && !down) {
        const char *keys[] = {done};
        dl_store_wait(world->store, keys, 1);
    }
}

/* Work still pending on comm would be progressed through it after it is
 * gone (every wait progresses the world's pending work): each is waited
 * for, with the communicator's timeout, and finished as aborted if that
 * fails. Its handle stays valid, finished. */
static void settle_pending(dl_comm_t *comm)
{
    for (;;) {
        dl_work_t *w = comm->world->active;
        while (w != NULL && w->comm != comm)
            w = w->next_active;
        if (w == NULL)
            return;
        dl_work_wait(w, -1);
        if (!w->done)
            dl__work_finish(w, DL_ERR_ABORTED);
    }
}

void dl_comm_destroy(dl_comm_t *comm)
{
    if (comm == NULL)
        return;
    settle_pending(comm);
    dl_world_t *world = comm->world;
    if (comm->is_world)
        leave_world(world, dl_comm_world_down(comm));
    comm->ops->destroy(comm);
    for (int c = 0; c < DL_COLL__COUNT; c++)
        free(comm->algo[c]);
    free(comm->world_ranks);
    if (comm->is_world) {
        dl_store_close(world->store);
        if (world->store_srv != NULL)
            dl_store_server_stop_thread(world->store_srv);
        dl__world_free_spares(world);
        free(world);
    }
    free(comm);
}

void dl_comm_abort(dl_comm_t *comm, const char *why)
{
    comm->ops->abort(comm, why);
}

dl_status_t dl__comm_world_failed(dl_comm_t *comm, char *why, size_t cap)
{
    why[0] = '\0';
    return comm->ops->wait_check != NULL ? comm->ops->wait_check(comm, false, why, cap) : DL_OK;
}

bool dl_comm_world_down(dl_comm_t *comm)
{
    char why[256];
    return dl__comm_world_failed(comm, why, sizeof(why)) != DL_OK;
}

int dl_comm_rank(const dl_comm_t *comm)
{
    return comm->rank;
}

int dl_comm_size(const dl_comm_t *comm)
{
    return comm->size;
}

int dl_comm_group_rank(const dl_comm_t *comm, int world_rank)
{
    for (int r = 0; r < comm->size; r++)
        if (comm->world_ranks[r] == world_rank)
            return r;
    return -1;
}

int dl_comm_global_rank(const dl_comm_t *comm, int group_rank)
{
    return group_rank >= 0 && group_rank < comm->size ? comm->world_ranks[group_rank] : -1;
}

const char *dl_comm_backend(const dl_comm_t *comm)
{
    return comm->ops->name;
}

const char *dl_comm_last_error(const dl_comm_t *comm)
{
    return comm->last_error;
}

const char *dl_comm_last_algo(const dl_comm_t *comm)
{
    return comm->last_algo;
}

void dl_comm_set_timeout(dl_comm_t *comm, double timeout_s)
{
    if (timeout_s > 0)
        comm->timeout_s = timeout_s;
}

dl_status_t dl_comm_set_algo(dl_comm_t *comm, dl_coll_t c, const char *algo)
{
    if ((int)c < 0 || c >= DL_COLL__COUNT)
        return DL_ERR_INVALID;
    if (algo != NULL) {
        const dl_algo_t *a = dl_algo_find(algo);
        if (a == NULL || a->build[c] == NULL) {
            char names[256];
            dl_algo_names_for(c, names, sizeof(names));
            dl__comm_fail(comm, a == NULL ? DL_ERR_NOT_FOUND : DL_ERR_UNSUPPORTED,
                          "%s '%s'%s; algorithms for %s: %s",
                          a == NULL ? "unknown algorithm" : "algorithm", algo,
                          a == NULL ? "" : " does not implement this collective", dl_coll_name(c),
                          names);
            return a == NULL ? DL_ERR_NOT_FOUND : DL_ERR_UNSUPPORTED;
        }
    }
    char *copy = algo != NULL ? strdup(algo) : NULL;
    if (algo != NULL && copy == NULL)
        return DL_ERR_NOMEM;
    free(comm->algo[c]);
    comm->algo[c] = copy;
    return DL_OK;
}

void dl_comm_set_step_hook(dl_comm_t *comm, dl_step_hook_t hook, void *arg)
{
    comm->world->step_hook = hook;
    comm->world->step_hook_arg = arg;
    comm->world->step_hook_quick = false;
}

void dl_comm_set_quick_step_hook(dl_comm_t *comm, dl_step_hook_t hook, void *arg)
{
    dl_comm_set_step_hook(comm, hook, arg);
    comm->world->step_hook_quick = true;
}

void dl_comm_set_step_board(dl_comm_t *comm, dl_step_board_t *board)
{
    comm->world->step_board = board;
}

void dl_comm_set_coll_hook(dl_comm_t *comm, dl_coll_hook_t hook, void *arg)
{
    comm->world->coll_hook = hook;
    comm->world->coll_hook_arg = arg;
}

dl_allocator_t *dl_comm_allocator(dl_comm_t *comm)
{
    return comm->ops->allocator != NULL ? comm->ops->allocator(comm) : dl_heap_allocator();
}
