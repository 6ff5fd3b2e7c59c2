/* The routing layer: which transport reaches which peer, and the calls that
 * dispatch on it. See link.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <unistd.h>

#include "distlab/log.h"
#include "store/internal.h"
#include "transport/link.h"
#include "distlab/sched.h"

/* A schedule's eager messages may be overwritten by their sender once
 * posted (sched.h): both transports must copy them at post. */
_Static_assert(DL_SCHED_EAGER_MAX <= DL_SHM_EAGER_MAX, "shm copies every eager message");
_Static_assert(DL_SCHED_EAGER_MAX <= DL_TCP_EAGER_MAX, "tcp copies every eager message");

/* Incoming TCP messages larger than this (or than the arena, when larger)
 * break the connection: a message is sent from the sender's arena, so a
 * bigger one cannot be genuine. */
#define MIN_MAX_MSG ((size_t)64 << 20)

struct dl_link {
    dl_shm_t *shm;
    dl_tcp_t *tcp;  /* NULL when every peer shares the segment */
    bool *via_tcp;  /* [size] */
    int host_ranks; /* ranks with this rank's host name */
    int host_index; /* of those, the ones before this rank */
    bool tcp_first; /* where the next any-source receive looks first */
    char why[256];  /* dl__link_failed's answer, kept for the caller */
    uint32_t moves; /* messages posted, done and received so far (dl__link_moves) */
};

/* ---- callbacks from the TCP I/O thread ---- */

static void tcp_wake(void *arg)
{
    dl_link_t *l = arg;
    dl__shm_wake(l->shm);
}

static void tcp_abort(void *arg, int culprit, const char *why)
{
    dl_link_t *l = arg;
    dl__shm_abort(l->shm, culprit, why);
}

/* ---- set-up ---- */

/* Rank 0's part of exchange_hosts: reads every rank's host and publishes
 * them all under one key, as a JSON array. */
static dl_status_t gather_hosts(dl_store_t *store, const char *prefix, int size, char **hosts)
{
    char key[320], list_key[320];
    dl_status_t st = DL_OK;
    for (int r = 0; r < size && st == DL_OK; r++) {
        size_t len = 0;
        snprintf(key, sizeof(key), "%s/host/%d", prefix, r);
        st = dl_store_get(store, key, (void **)&hosts[r], &len);
    }
    json_t *list = json_array();
    for (int r = 0; r < size && st == DL_OK && list != NULL; r++)
        if (json_array_append_new(list, json_string(hosts[r])) != 0)
            st = DL_ERR_NOMEM;
    char *text = list != NULL && st == DL_OK ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    if (st == DL_OK && text == NULL)
        st = DL_ERR_NOMEM;
    snprintf(list_key, sizeof(list_key), "%s/hosts", prefix);
    if (st == DL_OK)
        st = dl_store_set_str(store, list_key, text);
    free(text);
    return st;
}

/* Publishes this rank's host and learns everybody's. Rank 0 collects them
 * and publishes the list; the others read the list: a number of store
 * requests linear in the ranks, where every rank reading every key would
 * make size^2 (16384 round trips through the controller at 128 ranks). */
static dl_status_t exchange_hosts(dl_store_t *store, const char *prefix, int rank, int size,
                                  char **hosts)
{
    char host[256] = "", key[320];
    const char *id = getenv("DISTLAB_HOST_ID");
    if (id != NULL && *id != '\0')
        snprintf(host, sizeof(host), "%s", id);
    else
        gethostname(host, sizeof(host) - 1);
    snprintf(key, sizeof(key), "%s/host/%d", prefix, rank);
    dl_status_t st = dl_store_set_str(store, key, host);
    if (st != DL_OK || rank == 0)
        return st != DL_OK ? st : gather_hosts(store, prefix, size, hosts);
    char *text = NULL;
    size_t len = 0;
    snprintf(key, sizeof(key), "%s/hosts", prefix);
    if ((st = dl_store_get(store, key, (void **)&text, &len)) != DL_OK)
        return st;
    json_t *list = json_loadb(text, len, 0, NULL);
    free(text);
    if (!json_is_array(list) || json_array_size(list) != (size_t)size) {
        dl_log_error("the store's list of hosts (%s) is not %d host names", key, size);
        json_decref(list);
        return DL_ERR_PROTOCOL;
    }
    for (int r = 0; r < size && st == DL_OK; r++) {
        const char *h = json_string_value(json_array_get(list, (size_t)r));
        if (h == NULL || (hosts[r] = strdup(h)) == NULL)
            st = h == NULL ? DL_ERR_PROTOCOL : DL_ERR_NOMEM;
    }
    json_decref(list);
    return st;
}

/* Where the TCP listener binds (see link.h). */
static dl_status_t bind_addr(dl_store_t *store, bool all_local, char *buf, size_t cap)
{
    const char *env = getenv("DISTLAB_HOST_ADDR");
    if (env != NULL && *env != '\0') {
        snprintf(buf, cap, "%s", env);
        return DL_OK;
    }
    if (all_local) {
        snprintf(buf, cap, "127.0.0.1");
        return DL_OK;
    }
    return dl__store_local_addr(store, buf, cap);
}

dl_status_t dl__link_open(dl_store_t *store, const char *prefix, int rank, int size,
                          size_t arena_bytes, int shm, int timeout_ms, char *err, size_t err_cap,
                          dl_link_t **link_p)
{
    err[0] = '\0';
    dl_status_t st = DL_ERR_NOMEM;
    dl_link_t *l = calloc(1, sizeof(*l));
    char **hosts = calloc((size_t)size, sizeof(char *));
    int *group = calloc((size_t)size, sizeof(int));
    if (l == NULL || hosts == NULL || group == NULL ||
        (l->via_tcp = calloc((size_t)size, sizeof(bool))) == NULL)
        goto err_free;
    if ((st = exchange_hosts(store, prefix, rank, size, hosts)) != DL_OK) {
        snprintf(err, err_cap, "cannot learn the ranks' hosts from the store: %s", dl_strerror(st));
        goto err_free;
    }
    int other = -1;
    for (int r = 0; r < size; r++) {
        if (strcmp(hosts[r], hosts[rank]) == 0) {
            l->host_ranks++;
            l->host_index += r < rank;
        } else if (other < 0)
            other = r;
    }
    bool all_local = other < 0;
    if (shm == 1 && !all_local) {
        snprintf(err, err_cap,
                 "ranks span several hosts (rank %d on %s, rank %d on %s), but the shm "
                 "transport (--transport shm, DISTLAB_TRANSPORT=shm) moves data through shared "
                 "memory, which only reaches ranks on one host: use the auto or tcp transport",
                 rank, hosts[rank], other, hosts[other]);
        st = DL_ERR_UNSUPPORTED;
        goto err_free;
    }

    /* The ranks this one shares a segment with: its host's, or itself alone. */
    int ngroup = 0;
    for (int r = 0; r < size; r++) {
        bool shared = shm == 0 ? r == rank : strcmp(hosts[r], hosts[rank]) == 0;
        if (shared)
            group[ngroup++] = r;
        else
            l->via_tcp[r] = true;
    }
    char key[128];
    snprintf(key, sizeof(key), "%s/g%d", prefix, group[0]);
    if ((st = dl__shm_open(store, key, group, ngroup, rank, arena_bytes, &l->shm)) != DL_OK) {
        snprintf(err, err_cap, "cannot set up shared memory with the ranks on host %s: %s",
                 hosts[rank], dl_strerror(st));
        goto err_free;
    }
    if (ngroup < size) {
        char addr[128];
        if ((st = bind_addr(store, all_local, addr, sizeof(addr))) != DL_OK) {
            snprintf(err, err_cap,
                     "cannot tell which address to listen on (set "
                     "DISTLAB_HOST_ADDR)");
            goto err_close_shm;
        }
        const char *token = getenv("DISTLAB_TOKEN");
        dl_tcp_opts_t o = {
            .store = store,
            .prefix = prefix,
            .rank = rank,
            .size = size,
            .peers = l->via_tcp,
            .hosts = (const char *const *)hosts,
            .bind_addr = addr,
            .token = token != NULL && *token != '\0' ? token : NULL,
            .timeout_ms = timeout_ms,
            .max_msg = arena_bytes > MIN_MAX_MSG ? arena_bytes : MIN_MAX_MSG,
            .wake = tcp_wake,
            .on_abort = tcp_abort,
            .arg = l,
        };
        if ((st = dl__tcp_open(&o, err, err_cap, &l->tcp)) != DL_OK)
            goto err_close_shm;
    }
    for (int r = 0; r < size; r++)
        free(hosts[r]);
    free(hosts);
    free(group);
    *link_p = l;
    return DL_OK;

err_close_shm:
    dl__shm_close(l->shm);
err_free:
    if (hosts != NULL)
        for (int r = 0; r < size; r++)
            free(hosts[r]);
    free(hosts);
    free(group);
    if (l != NULL)
        free(l->via_tcp);
    free(l);
    return st;
}

void dl__link_close(dl_link_t *l)
{
    if (l == NULL)
        return;
    /* The I/O thread rings the segment's doorbell: stop it first. */
    dl__tcp_close(l->tcp);
    dl__shm_close(l->shm);
    free(l->via_tcp);
    free(l);
}

dl_allocator_t *dl__link_allocator(dl_link_t *l)
{
    return dl__shm_allocator(l->shm);
}

void dl__link_copy_medium(dl_link_t *l, bool on)
{
    dl__shm_copy_medium(l->shm, on);
}

void dl__link_shm_fence(dl_link_t *l, bool always)
{
    dl__shm_fence(l->shm, always);
}

bool dl__link_register_barrier(void)
{
    return dl__shm_register_barrier();
}

const dl_arena_t *dl__link_arena(const dl_link_t *l)
{
    return dl__shm_arena(l->shm);
}

void dl__link_pin_arena(dl_link_t *l, const void *ptr, size_t n)
{
    dl__shm_pin_arena(l->shm, ptr, n);
}

int dl__link_host_ranks(const dl_link_t *l)
{
    return l->host_ranks;
}

int dl__link_host_index(const dl_link_t *l)
{
    return l->host_index;
}

bool dl__link_uses_tcp(const dl_link_t *l)
{
    return l->tcp != NULL;
}

/* ---- messages ---- */

/* Counts a message that went out or came in, for dl__link_moves. */
static dl_status_t moved(dl_link_t *l, dl_status_t st)
{
    if (st == DL_OK)
        l->moves++;
    return st;
}

dl_status_t dl__link_post(dl_link_t *l, int peer, uint32_t ctx, int64_t tag, const void *data,
                          size_t n, dl_link_send_t *h_p)
{
    h_p->tcp = l->via_tcp[peer];
    if (h_p->tcp)
        return moved(l, dl__tcp_post(l->tcp, peer, ctx, tag, data, n, &h_p->u.tcp));
    return moved(l, dl__shm_post(l->shm, peer, ctx, tag, data, n, &h_p->u.shm));
}

dl_status_t dl__link_post_ref(dl_link_t *l, int peer, uint32_t ctx, int64_t tag, const void *data,
                              size_t n, dl_link_send_t *h_p)
{
    h_p->tcp = l->via_tcp[peer];
    if (h_p->tcp)
        return DL_ERR_UNSUPPORTED;
    return moved(l, dl__shm_post_ref(l->shm, peer, ctx, tag, data, n, &h_p->u.shm));
}

dl_status_t dl__link_hold(dl_link_t *l, int peer, uint32_t ctx, int64_t tag, void **remote_p,
                          size_t *n_p, dl_link_held_t *h_p)
{
    if (l->via_tcp[peer])
        return DL_ERR_UNSUPPORTED;
    return moved(l, dl__shm_hold(l->shm, peer, ctx, tag, remote_p, n_p, h_p));
}

void dl__link_release(dl_link_t *l, const dl_link_held_t *h)
{
    dl__shm_release(l->shm, h);
}

bool dl__link_via_tcp(const dl_link_t *l, int peer)
{
    return l->via_tcp[peer];
}

bool dl__link_send_done(dl_link_t *l, const dl_link_send_t *h)
{
    bool done =
        h->tcp ? dl__tcp_send_done(l->tcp, &h->u.tcp) : dl__shm_send_done(l->shm, &h->u.shm);
    l->moves += done; /* its callers see a send done once */
    return done;
}

static dl_status_t try_recv(dl_link_t *l, int peer, uint32_t ctx, int64_t tag,
                            dl_link_consume_fn fn, void *arg, int *src_p)
{
    if (peer >= 0)
        return l->via_tcp[peer] ? dl__tcp_try_recv(l->tcp, peer, ctx, tag, fn, arg, src_p)
                                : dl__shm_try_recv(l->shm, peer, ctx, tag, fn, arg, src_p);
    if (l->tcp == NULL)
        return dl__shm_try_recv(l->shm, -1, ctx, tag, fn, arg, src_p);
    /* Any source: both transports, taking turns at going first. */
    for (int i = 0; i < 2; i++) {
        bool tcp = l->tcp_first != (i == 1);
        dl_status_t st = tcp ? dl__tcp_try_recv(l->tcp, -1, ctx, tag, fn, arg, src_p)
                             : dl__shm_try_recv(l->shm, -1, ctx, tag, fn, arg, src_p);
        if (st == DL_ERR_AGAIN)
            continue;
        if (st == DL_OK)
            l->tcp_first = !tcp;
        return st;
    }
    return DL_ERR_AGAIN;
}

dl_status_t dl__link_try_recv(dl_link_t *l, int peer, uint32_t ctx, int64_t tag,
                              dl_link_consume_fn fn, void *arg, int *src_p)
{
    return moved(l, try_recv(l, peer, ctx, tag, fn, arg, src_p));
}

/* ---- waiting ---- */

uint32_t dl__link_moves(const dl_link_t *l)
{
    return l->moves;
}

uint32_t dl__link_arm(dl_link_t *l)
{
    return dl__shm_arm(l->shm);
}

void dl__link_disarm(dl_link_t *l)
{
    dl__shm_disarm(l->shm);
}

bool dl__link_sleep(dl_link_t *l, uint32_t seen, int timeout_ms)
{
    return dl__shm_sleep(l->shm, seen, timeout_ms);
}

/* ---- failure ---- */

void dl__link_abort(dl_link_t *l, int culprit, const char *why)
{
    dl__shm_abort(l->shm, culprit, why);
    if (l->tcp != NULL)
        dl__tcp_abort(l->tcp, culprit, why);
}

dl_status_t dl__link_failed(dl_link_t *l, const char **why_p)
{
    if (l->tcp != NULL)
        dl__tcp_flush_log(l->tcp);
    const char *why = NULL;
    if (!dl__shm_aborted(l->shm, &why))
        return DL_OK;
    *why_p = why;
    dl_status_t st = DL_ERR_ABORTED;
    /* This rank saw the culprit's connection die, and that is the reason the
     * world went down (not some earlier one). */
    if (l->tcp != NULL && dl__tcp_failed_peer(l->tcp, l->why, sizeof(l->why), &st) >= 0 &&
        strcmp(l->why, why) == 0 && st == DL_ERR_PEER_DEAD)
        return DL_ERR_PEER_DEAD;
    return DL_ERR_ABORTED;
}

const _Atomic uint32_t *dl__link_down_word(dl_link_t *l)
{
    return l->tcp != NULL ? NULL : dl__shm_aborted_word(l->shm);
}

void dl__link_interrupt(dl_link_t *l)
{
    dl__shm_interrupt(l->shm);
}

const _Atomic uint32_t *dl__link_interrupts(dl_link_t *l)
{
    return dl__shm_interrupts(l->shm);
}

int dl__link_find_dead(dl_link_t *l, char *why, size_t why_cap)
{
    int dead = dl__shm_find_dead(l->shm);
    if (dead >= 0)
        snprintf(why, why_cap, "rank %d (pid %d) died", dead, (int)dl__shm_pid(l->shm, dead));
    return dead;
}
