/* TCP transport, the rank's side: opening (listening, connecting to and
 * authenticating with lower-numbered peers, waiting for the others),
 * posting sends into slots, matching received messages, abort and close.
 * The I/O thread is tcp_io.c; tcp_internal.h has what they share, and tcp.h
 * the protocol. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "distlab/frame.h"
#include "distlab/guard.h"
#include "distlab/log.h"
#include "distlab/timedwait.h"
#include "net/internal.h"
#include "transport/tcp_internal.h"

static void list_free(dl_tcp_t *t, msg_list_t *l)
{
    tcp_msg_t *next;
    for (tcp_msg_t *m = l->head; m != NULL; m = next) {
        next = m->next;
        dl__tcp_msg_free(t, m);
    }
    l->head = l->tail = NULL;
}

/* ---- the queue to the I/O thread ---- */

static void enqueue(dl_tcp_t *t, tcp_item_t *it)
{
    it->next = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->q_tail != NULL)
        t->q_tail->next = it;
    else
        t->q_head = it;
    t->q_tail = it;
    pthread_mutex_unlock(&t->lock);
    uv_async_send(&t->async);
}

static dl_status_t enqueue_cmd(dl_tcp_t *t, int kind, int fd, int peer, int culprit,
                               const char *why)
{
    tcp_cmd_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return DL_ERR_NOMEM;
    c->item.kind = kind;
    c->fd = fd;
    c->peer = peer;
    c->culprit = culprit;
    if (why != NULL)
        snprintf(c->why, sizeof(c->why), "%s", why);
    enqueue(t, &c->item);
    return DL_OK;
}
/* ================= the rank's side ================= */

static void free_tcp(dl_tcp_t *t)
{
    for (int r = 0; r < t->size; r++) {
        if (t->slots != NULL)
            free(t->slots[r]);
        if (t->pending != NULL)
            list_free(t, &t->pending[r]);
        if (t->hosts != NULL)
            free(t->hosts[r]);
    }
    list_free(t, &t->incoming);
    tcp_msg_t *next;
    for (tcp_msg_t *m = t->spares; m != NULL; m = next) {
        next = m->next;
        free(m);
    }
    free(t->slots);
    free(t->next_seq);
    free(t->pending);
    free(t->hosts);
    free(t->is_peer);
    free(t->by_peer);
    free(t->token);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Stops the I/O thread (or, when it never started, closes the handles from
 * here) and releases the loop. */
static void stop_io(dl_tcp_t *t)
{
    if (t->thread_started) {
        t->stop_cmd.item.kind = ITEM_STOP;
        enqueue(t, &t->stop_cmd.item);
        pthread_join(t->thread, NULL);
        t->thread_started = false;
    } else {
        dl__tcp_io_stop_all(t);
        uv_run(&t->loop, UV_RUN_DEFAULT);
    }
    /* Items queued after the stop (none by design) still own resources. */
    tcp_item_t *next;
    for (tcp_item_t *it = t->q_head; it != NULL; it = next) {
        next = it->next;
        if (it->kind == ITEM_ADOPT)
            close(((tcp_cmd_t *)it)->fd);
        if (it->kind != ITEM_SEND && it != &t->leave_cmd.item && it != &t->stop_cmd.item)
            free(it);
    }
    t->q_head = t->q_tail = NULL;
    if (uv_loop_close(&t->loop) != 0)
        dl_log_warn("the tcp transport's loop still had handles open at close");
}

void dl__tcp_flush_log(dl_tcp_t *t)
{
    if (t == NULL || atomic_load_explicit(&t->has_notes, memory_order_relaxed) == 0)
        return;
    char notes[MAX_NOTES][NOTE_LEN];
    pthread_mutex_lock(&t->lock);
    int n = t->n_notes, lost = t->notes_lost;
    memcpy(notes, t->notes, sizeof(notes[0]) * (size_t)n);
    t->n_notes = t->notes_lost = 0;
    atomic_store(&t->has_notes, 0);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < n; i++)
        dl_log_warn("%s", notes[i]);
    if (lost > 0)
        dl_log_warn("and %d more such notes from the tcp transport", lost);
}

/* The handshake on a connected socket: this rank's proof, and the peer's
 * welcome, which must name the expected rank of this world. */
static dl_status_t greet(dl_tcp_t *t, int fd, int peer, dl__deadline_t deadline)
{
    json_t *extra = json_pack("{s:s, s:i}", "world", t->prefix, "rank", t->rank);
    json_t *welcome = NULL;
    if (extra == NULL)
        return DL_ERR_NOMEM;
    dl_status_t st =
        dl_auth_client_fd(fd, t->token, extra, dl__net_remaining_ms(deadline), &welcome);
    json_decref(extra);
    if (st == DL_OK) {
        json_t *r = json_object_get(welcome, "rank");
        const char *w = json_string_value(json_object_get(welcome, "world"));
        if (!json_is_integer(r) || json_integer_value(r) != peer || w == NULL ||
            strcmp(w, t->prefix) != 0)
            st = DL_ERR_PROTOCOL;
    }
    json_decref(welcome);
    return st;
}

/* Connects to a lower-numbered peer's published address, authenticates,
 * and hands the socket to the I/O thread. */
static dl_status_t connect_peer(dl_tcp_t *t, dl_store_t *store, int peer, dl__deadline_t deadline,
                                char *err, size_t err_cap)
{
    char key[160], host[ADDR_LEN];
    snprintf(key, sizeof(key), "%s/tcp/%d", t->prefix, peer);
    char *val = NULL;
    size_t len = 0;
    dl_status_t st = dl_store_get(store, key, (void **)&val, &len);
    if (st != DL_OK) {
        snprintf(err, err_cap, "no tcp address for rank %d in the store: %s", peer,
                 dl_strerror(st));
        return st;
    }
    const char *colon = strrchr(val, ':');
    int port = colon != NULL ? atoi(colon + 1) : 0;
    if (colon == NULL || port <= 0 || port > 65535 || (size_t)(colon - val) >= sizeof(host)) {
        snprintf(err, err_cap, "rank %d published a bad tcp address '%.64s'", peer, val);
        free(val);
        return DL_ERR_PROTOCOL;
    }
    /* "[v6addr]:port" or "v4addr:port" */
    const char *h = val;
    size_t hl = (size_t)(colon - val);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    snprintf(host, sizeof(host), "%.*s", (int)hl, h);
    free(val);

    /* A peer not listening yet refuses the connection, and one with too
     * many connections half-way closes it before its challenge
     * (DL_ERR_CLOSED either way): both are tried again until the deadline. */
    int fd = -1;
    bool connected = false;
    for (;;) {
        st = dl__net_connect(host, port, deadline, &fd);
        connected = st == DL_OK;
        if (connected) {
            st = greet(t, fd, peer, deadline);
            if (st != DL_OK) {
                close(fd);
                fd = -1;
            }
        }
        if (st != DL_ERR_CLOSED || dl__net_remaining_ms(deadline) == 0)
            break;
        usleep(CONNECT_TRY * 1000);
    }
    if (st != DL_OK && !connected) {
        snprintf(err, err_cap, "cannot connect to rank %d (host %s) at %s:%d: %s", peer,
                 host_of(t, peer), host, port, dl_strerror(st));
        return st;
    }
    if (st != DL_OK) {
        snprintf(err, err_cap, "rank %d (host %s) at %s:%d %s: %s", peer, host_of(t, peer), host,
                 port,
                 st == DL_ERR_DENIED ? "refused this rank's data connection (is DISTLAB_TOKEN "
                                       "the same on every rank?)"
                                     : "did not complete the handshake",
                 dl_strerror(st));
        return st;
    }
    if ((st = enqueue_cmd(t, ITEM_ADOPT, fd, peer, 0, NULL)) != DL_OK) {
        close(fd);
        snprintf(err, err_cap, "out of memory");
    }
    return st;
}

static dl_status_t listen_on(dl_tcp_t *t, const char *addr, char *where, size_t where_cap)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    bool v6 = strchr(addr, ':') != NULL;
    int rc = v6 ? uv_ip6_addr(addr, 0, (struct sockaddr_in6 *)&ss)
                : uv_ip4_addr(addr, 0, (struct sockaddr_in *)&ss);
    if (rc == 0)
        rc = uv_tcp_bind(&t->listener, (const struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc =
            uv_listen((uv_stream_t *)&t->listener, t->size + MAX_PENDING, dl__tcp_io_on_connection);
    int len = sizeof(ss);
    if (rc == 0)
        rc = uv_tcp_getsockname(&t->listener, (struct sockaddr *)&ss, &len);
    if (rc != 0) {
        dl_log_error("cannot listen for tcp data connections on %s: %s", addr, uv_strerror(rc));
        return DL_ERR_SYSTEM;
    }
    int port = v6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    snprintf(where, where_cap, v6 ? "[%s]:%d" : "%s:%d", addr, port);
    return DL_OK;
}

static dl_status_t start_thread(dl_tcp_t *t)
{
    /* The I/O thread takes no signals: they belong to the rank's own thread,
     * and a write to a closed socket then fails with EPIPE rather than
     * raising SIGPIPE. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t->thread, NULL, dl__tcp_io_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        dl_log_error("cannot start the tcp i/o thread: %m");
        return DL_ERR_SYSTEM;
    }
    t->thread_started = true;
    return DL_OK;
}

static dl_status_t alloc_tcp(const dl_tcp_opts_t *o, dl_tcp_t **t_p)
{
    dl_tcp_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return DL_ERR_NOMEM;
    size_t n = (size_t)o->size;
    t->rank = o->rank;
    t->size = o->size;
    snprintf(t->prefix, sizeof(t->prefix), "%s", o->prefix);
    t->max_msg = o->max_msg;
    t->hs_timeout_ms = dl_guard_auth_timeout_ms();
    t->wake = o->wake;
    t->on_abort = o->on_abort;
    t->arg = o->arg;
    atomic_init(&t->failed_rank, -1);
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);
    t->slots = calloc(n, sizeof(*t->slots));
    t->next_seq = calloc(n, sizeof(*t->next_seq));
    t->pending = calloc(n, sizeof(*t->pending));
    t->hosts = calloc(n, sizeof(*t->hosts));
    t->is_peer = calloc(n, sizeof(*t->is_peer));
    t->by_peer = calloc(n, sizeof(*t->by_peer));
    if (t->slots == NULL || t->next_seq == NULL || t->pending == NULL || t->hosts == NULL ||
        t->is_peer == NULL || t->by_peer == NULL)
        goto err_free;
    if (o->token != NULL && (t->token = strdup(o->token)) == NULL)
        goto err_free;
    for (int r = 0; r < o->size; r++) {
        if (o->hosts[r] != NULL && (t->hosts[r] = strdup(o->hosts[r])) == NULL)
            goto err_free;
        if (r == o->rank || !o->peers[r])
            continue;
        t->is_peer[r] = true;
        t->npeers++;
        if ((t->slots[r] = calloc(NSLOT, sizeof(tcp_slot_t))) == NULL)
            goto err_free;
        for (int i = 0; i < NSLOT; i++) {
            tcp_slot_t *s = &t->slots[r][i];
            s->item.kind = ITEM_SEND;
            s->t = t;
            s->req.data = s;
        }
    }
    *t_p = t;
    return DL_OK;

err_free:
    free_tcp(t);
    return DL_ERR_NOMEM;
}

/* Waits until every peer is connected, or a peer failed, or the deadline. */
static dl_status_t wait_connected(dl_tcp_t *t, dl__deadline_t deadline, char *err, size_t err_cap)
{
    pthread_mutex_lock(&t->lock);
    while (t->n_open < t->npeers && atomic_load(&t->failed_rank) < 0) {
        int left = dl__net_remaining_ms(deadline);
        if (left == 0)
            break;
        dl_cond_wait_ms(&t->cond, &t->lock, CLOCK_MONOTONIC, left < 0 || left > 100 ? 100 : left);
    }
    int open = t->n_open;
    pthread_mutex_unlock(&t->lock);
    if (open == t->npeers)
        return DL_OK;
    int failed = atomic_load(&t->failed_rank);
    if (failed >= 0) {
        snprintf(err, err_cap, "%s", t->failed_why);
        return t->failed_st;
    }
    snprintf(err, err_cap,
             "rank %d has %d of its %d tcp data connections after the timeout; the others' "
             "ranks did not connect",
             t->rank, open, t->npeers);
    return DL_ERR_TIMEOUT;
}

/* Every rank of a world with TCP peers has some (ranks on two hosts each
 * have a peer on the other): all of them count in. */
static dl_status_t ready_barrier(dl_tcp_t *t, dl_store_t *store)
{
    char key[160], done[160];
    snprintf(key, sizeof(key), "%s/tcp/ready", t->prefix);
    snprintf(done, sizeof(done), "%s/tcp/ready/done", t->prefix);
    int64_t n = 0;
    dl_status_t st = dl_store_add(store, key, 1, &n);
    if (st == DL_OK && n == t->size)
        st = dl_store_set_str(store, done, "1");
    if (st != DL_OK)
        return st;
    const char *keys[] = {done};
    return dl_store_wait(store, keys, 1);
}

dl_status_t dl__tcp_open(const dl_tcp_opts_t *o, char *err, size_t err_cap, dl_tcp_t **t_p)
{
    dl_tcp_t *t = NULL;
    dl_status_t st = alloc_tcp(o, &t);
    if (st != DL_OK) {
        snprintf(err, err_cap, "out of memory");
        return st;
    }
    dl__deadline_t deadline = dl__net_deadline(o->timeout_ms);
    int rc = uv_loop_init(&t->loop);
    if (rc != 0) {
        snprintf(err, err_cap, "cannot create the tcp transport's loop: %s", uv_strerror(rc));
        free_tcp(t);
        return DL_ERR_SYSTEM;
    }
    uv_async_init(&t->loop, &t->async, dl__tcp_io_on_async);
    uv_tcp_init(&t->loop, &t->listener);
    t->async.data = t->listener.data = t;

    char where[ADDR_LEN + 16], key[160];
    if ((st = listen_on(t, o->bind_addr, where, sizeof(where))) != DL_OK) {
        snprintf(err, err_cap, "cannot listen for tcp data connections on %s", o->bind_addr);
        goto err_stop;
    }
    snprintf(key, sizeof(key), "%s/tcp/%d", t->prefix, t->rank);
    if ((st = dl_store_set_str(o->store, key, where)) != DL_OK) {
        snprintf(err, err_cap, "cannot publish the tcp address: %s", dl_strerror(st));
        goto err_stop;
    }
    if ((st = start_thread(t)) != DL_OK) {
        snprintf(err, err_cap, "cannot start the tcp i/o thread");
        goto err_stop;
    }
    /* Connect to the lower ranks; the higher ones connect to us. */
    for (int p = 0; p < t->rank; p++)
        if (t->is_peer[p] && (st = connect_peer(t, o->store, p, deadline, err, err_cap)) != DL_OK)
            goto err_stop;
    if ((st = wait_connected(t, deadline, err, err_cap)) != DL_OK)
        goto err_stop;
    /* Nobody starts before everybody is connected: a rank that finished
     * and died at once would otherwise fail the set-up of slower ones. */
    if ((st = ready_barrier(t, o->store)) != DL_OK) {
        snprintf(err, err_cap, "the ranks did not all get connected: %s", dl_strerror(st));
        goto err_stop;
    }
    *t_p = t;
    return DL_OK;

err_stop:
    stop_io(t);
    dl__tcp_flush_log(t);
    free_tcp(t);
    return st;
}

void dl__tcp_close(dl_tcp_t *t)
{
    if (t == NULL)
        return;
    /* Goodbyes go out after every queued write; the peers answer by closing
     * their ends, which is when no byte of ours can be lost any more. */
    t->leave_cmd.item.kind = ITEM_LEAVE;
    enqueue(t, &t->leave_cmd.item);
    dl__deadline_t deadline = dl__net_deadline(LEAVE_TIMEOUT_MS);
    pthread_mutex_lock(&t->lock);
    while (!t->left_done) {
        int left = dl__net_remaining_ms(deadline);
        if (left == 0)
            break;
        dl_cond_wait_ms(&t->cond, &t->lock, CLOCK_MONOTONIC, left > 100 ? 100 : left);
    }
    pthread_mutex_unlock(&t->lock);
    stop_io(t);
    dl__tcp_flush_log(t);
    free_tcp(t);
}

/* ---- sending ---- */

dl_status_t dl__tcp_post(dl_tcp_t *t, int peer, uint32_t ctx, int64_t tag, const void *data,
                         size_t n, dl_tcp_send_t *h_p)
{
    if (peer < 0 || peer >= t->size || !t->is_peer[peer])
        return DL_ERR_INVALID;
    if (n > PIECE * MAX_PIECES) {
        dl_log_error("a %zu-byte message is more than the tcp transport carries", n);
        return DL_ERR_TOO_BIG;
    }
    uint64_t seq = t->next_seq[peer];
    tcp_slot_t *s = &t->slots[peer][seq % NSLOT];
    if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_QUEUED)
        return DL_ERR_AGAIN; /* NSLOT messages to this peer are still being written */
    put_hdr(s->buf, FR_DATA, ctx, tag, n);
    bool eager = n <= DL_TCP_EAGER_MAX;
    if (eager) {
        if (n > 0)
            memcpy(s->buf + HDR_LEN, data, n);
        s->data = NULL;
    } else {
        s->data = data;
    }
    s->n = n;
    s->seq = seq;
    s->peer = peer;
    s->req.data = s;
    atomic_store_explicit(&s->state, SLOT_QUEUED, memory_order_release);
    t->next_seq[peer] = seq + 1;
    enqueue(t, &s->item);
    h_p->peer = peer;
    h_p->seq = seq;
    h_p->eager = eager;
    return DL_OK;
}

bool dl__tcp_send_done(dl_tcp_t *t, const dl_tcp_send_t *h)
{
    if (h->eager)
        return true; /* copied at post; the slot is reclaimed by a later post */
    tcp_slot_t *s = &t->slots[h->peer][h->seq % NSLOT];
    if (s->seq != h->seq)
        return true; /* already reclaimed by a later post */
    uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (state == SLOT_WRITTEN) {
        atomic_store_explicit(&s->state, SLOT_FREE, memory_order_relaxed);
        return true;
    }
    return state == SLOT_FREE;
}

/* ---- receiving ---- */

/* Moves what the I/O thread has read into the per-peer lists. */
static void drain_incoming(dl_tcp_t *t)
{
    if (atomic_load_explicit(&t->n_incoming, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&t->lock);
    tcp_msg_t *m = t->incoming.head;
    t->incoming.head = t->incoming.tail = NULL;
    atomic_store(&t->n_incoming, 0);
    pthread_mutex_unlock(&t->lock);
    tcp_msg_t *next;
    for (; m != NULL; m = next) {
        next = m->next;
        list_push(&t->pending[m->src], m);
    }
}

static dl_status_t try_from(dl_tcp_t *t, int from, uint32_t ctx, int64_t tag, dl_tcp_consume_fn fn,
                            void *arg)
{
    msg_list_t *l = &t->pending[from];
    tcp_msg_t *prev = NULL;
    for (tcp_msg_t *m = l->head; m != NULL; prev = m, m = m->next) {
        if (m->ctx != ctx || m->tag != tag)
            continue;
        dl_status_t st = fn(arg, m->data, m->n);
        if (st != DL_OK)
            return st;
        if (prev != NULL)
            prev->next = m->next;
        else
            l->head = m->next;
        if (l->tail == m)
            l->tail = prev;
        dl__tcp_msg_free(t, m);
        return DL_OK;
    }
    return DL_ERR_AGAIN;
}

dl_status_t dl__tcp_try_recv(dl_tcp_t *t, int peer, uint32_t ctx, int64_t tag, dl_tcp_consume_fn fn,
                             void *arg, int *src_p)
{
    drain_incoming(t);
    if (peer >= 0) {
        if (peer >= t->size || !t->is_peer[peer])
            return DL_ERR_INVALID;
        dl_status_t st = try_from(t, peer, ctx, tag, fn, arg);
        if (st == DL_OK && src_p != NULL)
            *src_p = peer;
        return st;
    }
    for (int i = 0; i < t->size; i++) {
        int from = (t->rr + i) % t->size;
        if (!t->is_peer[from] || t->pending[from].head == NULL)
            continue;
        dl_status_t st = try_from(t, from, ctx, tag, fn, arg);
        if (st == DL_ERR_AGAIN)
            continue;
        if (st == DL_OK) {
            t->rr = (from + 1) % t->size;
            if (src_p != NULL)
                *src_p = from;
        }
        return st;
    }
    return DL_ERR_AGAIN;
}

/* ---- failure ---- */

void dl__tcp_abort(dl_tcp_t *t, int culprit, const char *why)
{
    enqueue_cmd(t, ITEM_ABORT, -1, -1, culprit, why);
}

int dl__tcp_failed_peer(dl_tcp_t *t, char *why, size_t why_cap, dl_status_t *st_p)
{
    int r = atomic_load(&t->failed_rank);
    if (r < 0)
        return -1;
    if (why != NULL)
        snprintf(why, why_cap, "%s", t->failed_why);
    if (st_p != NULL)
        *st_p = t->failed_st;
    return r;
}
