/* See rendezvous.h for the keys and the rules. Every wait here is a poll:
 * short store requests between calls of the agent's wait function, so that
 * a signal or a worker's exit is seen at once and keep-alives keep going. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <jansson.h>
#include <uv.h>

#include "distlab/log.h"
#include "distlab/store.h"
#include "lab/elastic/rendezvous.h"

/* Added to R/joined to close a round: far above any number of joins. */
#define CLOSE_MARK ((int64_t)1 << 40)
/* How often a joining agent looks at the round. */
#define JOIN_POLL_MS 10
/* How long the probe of an endpoint that someone else listens on may take. */
#define PROBE_TIMEOUT_MS 3000
/* How long the host keeps the store up for the others at the end. */
#define LINGER_S 3.0

typedef struct {
    int64_t value;
    double changed; /* when value was last seen to change */
    bool seen;
} liveness_t;

struct lab_rdzv {
    lab_rdzv_opts_t o;
    char run_id[LAB_RDZV_ID_MAX + 1];
    char host[256];
    char endpoint[300];
    char token[256];
    char prefix[LAB_RDZV_ID_MAX + 16];
    dl_store_server_t *srv;
    dl_store_t *store;
    lab_rdzv_node_t me;
    double hb_next;
    /* The round we are a member of (round.round < 0: none yet). */
    lab_rdzv_round_t round;
    bool in_round; /* joined the round (closed or not) */
    int joining;   /* the round we joined last, closed or not; -1: none */
    bool done;     /* marked R/done */
    bool ended;    /* this agent ended the run (lab_rdzv_end_run) */
    bool broken;   /* a store request failed: no more are tried */
    liveness_t live[LAB_RDZV_MAX_NODES];
    double live_next;
    lab_rdzv_outcome_t outcome;
    char why[768];
};

static double now_s(void)
{
    return (double)uv_hrtime() / 1e9;
}

static void say_why(lab_rdzv_t *rz, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_why(lab_rdzv_t *rz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rz->why, sizeof(rz->why), fmt, ap);
    va_end(ap);
}

/* ---- core's log lines ----
 *
 * The store client logs each failure once, where it sees it. The agent
 * says one line of its own instead, with the endpoint and what it means
 * for the run (a port taken by a stranger, a store gone with its agent):
 * the sink keeps core's last line for it, and shows it as well only when
 * DISTLAB_LOG asks for info or more. The store server logs from its
 * thread. */

static uv_mutex_t log_mu;
static uv_once_t log_once = UV_ONCE_INIT;
static bool log_quiet;
static char log_last[512];

static void log_sink(void *arg, dl_log_level_t level, const char *msg)
{
    (void)arg;
    static const char *const tags[] = {"error", "warning", "info", "debug"};
    uv_mutex_lock(&log_mu);
    if (log_quiet)
        snprintf(log_last, sizeof(log_last), "%s", msg);
    if (!log_quiet || dl_log_get_level() >= DL_LOG_INFO)
        fprintf(stderr, "distlab launch: %s: %s\n", tags[level], msg);
    uv_mutex_unlock(&log_mu);
}

static void log_init(void)
{
    uv_mutex_init(&log_mu);
}

static void quiet(bool on)
{
    uv_mutex_lock(&log_mu);
    log_quiet = on;
    if (on)
        log_last[0] = '\0';
    uv_mutex_unlock(&log_mu);
}

static void last_log(char *buf, size_t cap)
{
    uv_mutex_lock(&log_mu);
    snprintf(buf, cap, "%s", log_last);
    uv_mutex_unlock(&log_mu);
}

/* ---- parsing the flags ---- */

void lab_rdzv_conf_init(lab_rdzv_conf_t *c)
{
    c->last_call_timeout_s = 1;
    c->join_timeout_s = 600;
    c->keep_alive_interval_s = 1;
    c->keep_alive_max_attempt = 3;
    c->read_timeout_s = 10;
}

static bool parse_seconds(const char *key, const char *v, double lo, double *out, char *why,
                          size_t cap)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(d >= lo) || d > 1e7) {
        snprintf(why, cap, "--rdzv-conf %s takes a number of seconds of at least %g, not '%s'", key,
                 lo, v);
        return false;
    }
    *out = d;
    return true;
}

bool lab_rdzv_conf_parse(lab_rdzv_conf_t *c, const char *s, char *why, size_t cap)
{
    char *copy = strdup(s);
    if (copy == NULL) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    bool ok = true;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item != NULL && ok;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq == NULL) {
            snprintf(why, cap, "--rdzv-conf takes key=value pairs separated by commas, not '%s'",
                     item);
            ok = false;
            break;
        }
        *eq = '\0';
        const char *key = item, *v = eq + 1;
        if (strcmp(key, "last_call_timeout") == 0) {
            ok = parse_seconds(key, v, 0, &c->last_call_timeout_s, why, cap);
        } else if (strcmp(key, "join_timeout") == 0 || strcmp(key, "timeout") == 0) {
            ok = parse_seconds(key, v, 0.1, &c->join_timeout_s, why, cap);
        } else if (strcmp(key, "keep_alive_interval") == 0) {
            ok = parse_seconds(key, v, 0.01, &c->keep_alive_interval_s, why, cap);
        } else if (strcmp(key, "read_timeout") == 0) {
            ok = parse_seconds(key, v, 0.1, &c->read_timeout_s, why, cap);
        } else if (strcmp(key, "keep_alive_max_attempt") == 0) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (errno != 0 || end == v || *end != '\0' || n < 1 || n > 1000) {
                snprintf(why, cap,
                         "--rdzv-conf keep_alive_max_attempt takes an integer from 1 to 1000, "
                         "not '%s'",
                         v);
                ok = false;
            } else {
                c->keep_alive_max_attempt = (int)n;
            }
        } else {
            snprintf(why, cap,
                     "unknown --rdzv-conf key '%s'; keys: join_timeout, last_call_timeout, "
                     "keep_alive_interval, keep_alive_max_attempt, read_timeout",
                     key);
            ok = false;
        }
    }
    free(copy);
    return ok;
}

static bool parse_count(const char *s, int *v_p)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > LAB_RDZV_MAX_NODES)
        return false;
    *v_p = (int)v;
    return true;
}

bool lab_rdzv_parse_nnodes(const char *s, int *min_p, int *max_p, char *why, size_t cap)
{
    char a[32], b[32];
    const char *colon = strchr(s, ':');
    int lo, hi;
    bool ok;
    if (colon == NULL) {
        ok = strlen(s) < sizeof(a) && parse_count(s, &lo);
        hi = lo;
    } else {
        ok = (size_t)(colon - s) < sizeof(a) && strlen(colon + 1) < sizeof(b);
        if (ok) {
            snprintf(a, sizeof(a), "%.*s", (int)(colon - s), s);
            snprintf(b, sizeof(b), "%s", colon + 1);
            ok = parse_count(a, &lo) && parse_count(b, &hi) && lo <= hi;
        }
    }
    if (!ok) {
        snprintf(why, cap, "--nnodes takes N or MIN:MAX, with 1 <= MIN <= MAX <= %d, not '%s'",
                 LAB_RDZV_MAX_NODES, s);
        return false;
    }
    *min_p = lo;
    *max_p = hi;
    return true;
}

bool lab_rdzv_parse_endpoint(const char *s, char *host, size_t host_cap, int *port_p, char *why,
                             size_t cap)
{
    const char *h = s, *port_s = NULL;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || (close[1] != '\0' && close[1] != ':'))
            goto bad;
        h = s + 1;
        hlen = (size_t)(close - h);
        port_s = close[1] == ':' ? close + 2 : NULL;
    } else {
        const char *colon = strrchr(s, ':');
        /* Two colons or more without brackets: an IPv6 address alone. */
        if (colon != NULL && strchr(s, ':') == colon) {
            hlen = (size_t)(colon - s);
            port_s = colon + 1;
        } else {
            hlen = strlen(s);
        }
    }
    if (hlen == 0 || hlen >= host_cap)
        goto bad;
    int port = LAB_RDZV_DEFAULT_PORT;
    if (port_s != NULL) {
        char *end;
        errno = 0;
        long p = strtol(port_s, &end, 10);
        if (errno != 0 || end == port_s || *end != '\0' || p < 1 || p > 65535)
            goto bad;
        port = (int)p;
    }
    snprintf(host, host_cap, "%.*s", (int)hlen, h);
    *port_p = port;
    return true;
bad:
    snprintf(why, cap, "--rdzv-endpoint takes HOST:PORT (PORT from 1 to 65535), not '%s'", s);
    return false;
}

bool lab_rdzv_check_id(const char *id, char *why, size_t cap)
{
    size_t n = strlen(id);
    bool ok = n >= 1 && n <= LAB_RDZV_ID_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)id[i]) || id[i] == '_' || id[i] == '-' || id[i] == '.';
    if (!ok)
        snprintf(why, cap, "--rdzv-id takes 1 to %d letters, digits, '_', '-' or '.', not '%s'",
                 LAB_RDZV_ID_MAX, id);
    return ok;
}

/* ---- addresses ---- */

/* 0 when host:port can be bound here now, else bind's errno: EADDRINUSE
 * (someone listens there) or EADDRNOTAVAIL (not an address of this host). */
static int bind_probe(const char *host, int port, char *why, size_t cap)
{
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai != 0) {
        snprintf(why, cap, "cannot resolve the rendezvous endpoint's host '%s': %s", host,
                 gai_strerror(gai));
        return -1;
    }
    int err = EADDRNOTAVAIL;
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        err = bind(fd, res->ai_addr, res->ai_addrlen) == 0 ? 0 : errno;
        close(fd);
    }
    freeaddrinfo(res);
    return err;
}

/* The address of this host that reaches host:port: connecting a UDP socket
 * sends nothing, but picks the route. */
static void local_addr_towards(const char *host, int port, char *buf, size_t cap)
{
    snprintf(buf, cap, "127.0.0.1");
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res;
    if (getaddrinfo(host, service, &hints, &res) != 0)
        return;
    int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6)
            uv_ip6_name((struct sockaddr_in6 *)&ss, buf, cap);
        else
            uv_ip4_name((struct sockaddr_in *)&ss, buf, cap);
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
}

/* A port free on addr right now, other than avoid (the last round's). */
static int free_port(const char *addr, int avoid)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        struct sockaddr_storage ss = {0};
        socklen_t len;
        if (strchr(addr, ':') != NULL) {
            uv_ip6_addr(addr, 0, (struct sockaddr_in6 *)&ss);
            len = sizeof(struct sockaddr_in6);
        } else {
            uv_ip4_addr(addr, 0, (struct sockaddr_in *)&ss);
            len = sizeof(struct sockaddr_in);
        }
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        int port = 0;
        if (bind(fd, (struct sockaddr *)&ss, len) == 0 &&
            getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
            port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
        close(fd);
        if (port != avoid)
            return port;
    }
    return 0;
}

/* The process listening on TCP port here, from /proc/net/tcp{,6} and the
 * sockets in /proc/PID/fd (only processes we may look into). */
static bool port_owner(int port, int *pid_p, char *comm, size_t cap)
{
    unsigned long inodes[16];
    int n = 0;
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (f == NULL)
            continue;
        char line[512];
        while (fgets(line, sizeof(line), f) != NULL && n < 16) {
            char local[128];
            unsigned st;
            unsigned long inode;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, " %*d: %127s %*s %x %*s %*s %*s %*d %*d %lu", local, &st, &inode) != 3)
                continue;
            const char *colon = strrchr(local, ':');
            if (colon != NULL && st == 0x0A && (int)strtol(colon + 1, NULL, 16) == port)
                inodes[n++] = inode;
        }
        fclose(f);
    }
    if (n == 0)
        return false;
    DIR *proc = opendir("/proc");
    if (proc == NULL)
        return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(proc)) != NULL) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/proc/%s/fd", de->d_name);
        DIR *fds = opendir(path);
        if (fds == NULL)
            continue;
        struct dirent *fe;
        while (!found && (fe = readdir(fds)) != NULL) {
            char link[600], target[64];
            snprintf(link, sizeof(link), "%s/%s", path, fe->d_name);
            ssize_t len = readlink(link, target, sizeof(target) - 1);
            if (len <= 0)
                continue;
            target[len] = '\0';
            unsigned long inode;
            if (sscanf(target, "socket:[%lu]", &inode) != 1)
                continue;
            for (int i = 0; i < n && !found; i++)
                found = inode == inodes[i];
        }
        closedir(fds);
        if (found) {
            *pid_p = atoi(de->d_name);
            snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
            FILE *f = fopen(path, "r");
            comm[0] = '\0';
            if (f != NULL) {
                if (fgets(comm, (int)cap, f) != NULL)
                    comm[strcspn(comm, "\n")] = '\0';
                fclose(f);
            }
        }
    }
    closedir(proc);
    return found;
}

/* ---- the store ---- */

static const char *key(lab_rdzv_t *rz, char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static const char *key(lab_rdzv_t *rz, char *buf, size_t cap, const char *fmt, ...)
{
    int n = snprintf(buf, cap, "%s/", rz->prefix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return buf;
}

/* A store request failed: the store is gone (or broken), and no later
 * request is tried, so that stopping and leaving take no time. */
static dl_status_t store_lost(lab_rdzv_t *rz, dl_status_t st)
{
    if (rz->broken)
        return st;
    rz->broken = true;
    char last[512];
    last_log(last, sizeof(last));
    if (last[0] == '\0')
        snprintf(last, sizeof(last), "%s", dl_strerror(st));
    if (rz->srv != NULL)
        say_why(rz, "the rendezvous store that this agent serves at %s failed (%s)", rz->endpoint,
                last);
    else
        say_why(rz,
                "lost the rendezvous store at %s (%s): it is served by the agent that started "
                "first; if that node is gone, the run cannot go on",
                rz->endpoint, last);
    return st;
}

static dl_status_t ctr(lab_rdzv_t *rz, const char *k, int64_t delta, int64_t *v_p)
{
    if (rz->broken)
        return DL_ERR_CLOSED;
    int64_t v = 0;
    dl_status_t st = dl_store_add(rz->store, k, delta, &v);
    if (st != DL_OK)
        return store_lost(rz, st);
    if (v_p != NULL)
        *v_p = v;
    return DL_OK;
}

static dl_status_t put_json(lab_rdzv_t *rz, const char *k, json_t *j)
{
    char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
        return DL_ERR_NOMEM;
    if (rz->broken) {
        free(text);
        return DL_ERR_CLOSED;
    }
    dl_status_t st = dl_store_set_str(rz->store, k, text);
    free(text);
    return st == DL_OK ? DL_OK : store_lost(rz, st);
}

/* A key that exists or is about to (it is written right after the counter
 * that told us about it). */
static dl_status_t get_json(lab_rdzv_t *rz, const char *k, json_t **j_p)
{
    void *val;
    size_t len;
    if (rz->broken)
        return DL_ERR_CLOSED;
    dl_status_t st = dl_store_get(rz->store, k, &val, &len);
    if (st != DL_OK)
        return store_lost(rz, st);
    json_t *j = json_loadb(val, len, 0, NULL);
    free(val);
    if (j == NULL) {
        say_why(rz, "the rendezvous store holds a malformed '%s'", k);
        return DL_ERR_PROTOCOL;
    }
    *j_p = j;
    return DL_OK;
}

static json_t *node_to_json(const lab_rdzv_node_t *n)
{
    return json_pack("{s:i,s:s,s:s,s:i,s:i,s:i}", "arrival", n->arrival, "host", n->host, "addr",
                     n->addr, "port", n->port, "nproc", n->nproc, "pid", n->pid);
}

static bool node_from_json(const json_t *j, lab_rdzv_node_t *n)
{
    const char *host, *addr;
    if (json_unpack((json_t *)j, "{s:i,s:s,s:s,s:i,s:i,s:i}", "arrival", &n->arrival, "host", &host,
                    "addr", &addr, "port", &n->port, "nproc", &n->nproc, "pid", &n->pid) != 0)
        return false;
    snprintf(n->host, sizeof(n->host), "%s", host);
    snprintf(n->addr, sizeof(n->addr), "%s", addr);
    return true;
}

/* ---- open ---- */

/* Connects to a store that another agent serves, retrying until the join
 * timeout: it may not be up yet. */
static dl_status_t connect_client(lab_rdzv_t *rz, bool taken_here, char *why, size_t cap)
{
    double t0 = now_s(), limit = rz->o.conf.join_timeout_s;
    const char *token = rz->token[0] != '\0' ? rz->token : NULL;
    quiet(true);
    dl_status_t st;
    for (;;) {
        double left = limit - (now_s() - t0);
        int ms = left > 1.0 ? 1000 : (int)(left * 1000);
        st = ms > 0 ? dl_store_connect_auth(rz->host, rz->o.port, token, ms, &rz->store)
                    : DL_ERR_TIMEOUT;
        if (st == DL_OK || st == DL_ERR_DENIED || st == DL_ERR_INVALID)
            break;
        if (now_s() - t0 >= limit) {
            st = DL_ERR_TIMEOUT;
            break;
        }
        if (!rz->o.wait(rz->o.wait_arg, 100)) {
            st = DL_ERR_ABORTED;
            break;
        }
    }
    char last[512];
    last_log(last, sizeof(last));
    /* Core's own "no store server ... after N ms" says less than our line. */
    if (strncmp(last, "no store server", 15) == 0)
        last[0] = '\0';
    if (st == DL_OK) {
        /* The host writes its run id as it starts; anything else is no
         * rendezvous of ours. */
        dl_store_set_timeout(rz->store, limit * 1000 < PROBE_TIMEOUT_MS ? (int)(limit * 1000)
                                                                        : PROBE_TIMEOUT_MS);
        void *val = NULL;
        size_t len = 0;
        st = dl_store_get(rz->store, "launch/run_id", &val, &len);
        last_log(last, sizeof(last));
        quiet(false);
        if (st != DL_OK) {
            int pid = 0;
            char comm[64] = "";
            if (taken_here && port_owner(rz->o.port, &pid, comm, sizeof(comm)))
                snprintf(why, cap,
                         "%s is in use by another program (pid %d, %s), not a distlab rendezvous "
                         "store: choose another --rdzv-endpoint port",
                         rz->endpoint, pid, comm);
            else if (taken_here)
                snprintf(why, cap,
                         "%s is in use by another program, not a distlab rendezvous store: "
                         "choose another --rdzv-endpoint port",
                         rz->endpoint);
            else
                snprintf(why, cap, "%s does not answer as a distlab rendezvous store (%s)",
                         rz->endpoint, last[0] != '\0' ? last : dl_strerror(st));
            return st == DL_ERR_DENIED ? st : DL_ERR_PROTOCOL;
        }
        bool same = len == strlen(rz->run_id) && memcmp(val, rz->run_id, len) == 0;
        if (!same)
            snprintf(why, cap,
                     "the rendezvous at %s is run '%.*s', not '%s' (--rdzv-id): agents of "
                     "different runs cannot share an endpoint",
                     rz->endpoint, (int)(len > 64 ? 64 : len), (const char *)val, rz->run_id);
        free(val);
        dl_store_set_timeout(rz->store, (int)(rz->o.conf.read_timeout_s * 1000));
        return same ? DL_OK : DL_ERR_MISMATCH;
    }
    quiet(false);
    if (st == DL_ERR_ABORTED)
        snprintf(why, cap, "interrupted while connecting to the rendezvous at %s", rz->endpoint);
    else if (st == DL_ERR_DENIED)
        snprintf(why, cap, "the rendezvous store at %s refused us: %s", rz->endpoint,
                 last[0] != '\0' ? last : "wrong token (DISTLAB_TOKEN)");
    else if (st == DL_ERR_INVALID)
        snprintf(why, cap, "cannot reach the rendezvous at %s: %s", rz->endpoint,
                 last[0] != '\0' ? last : dl_strerror(st));
    else
        snprintf(why, cap,
                 "no rendezvous store answers at %s after %g s (join_timeout)%s%s: is the first "
                 "agent running, and is the endpoint right?",
                 rz->endpoint, limit, last[0] != '\0' ? "; last: " : "", last);
    return st;
}

dl_status_t lab_rdzv_open(const lab_rdzv_opts_t *o, lab_rdzv_t **rz_p, char *why, size_t cap)
{
    uv_once(&log_once, log_init);
    dl_log_set_sink(log_sink, NULL);
    lab_rdzv_t *rz = calloc(1, sizeof(*rz));
    if (rz == NULL) {
        snprintf(why, cap, "out of memory");
        return DL_ERR_NOMEM;
    }
    rz->o = *o;
    snprintf(rz->run_id, sizeof(rz->run_id), "%s", o->run_id);
    snprintf(rz->host, sizeof(rz->host), "%s", o->host);
    snprintf(rz->token, sizeof(rz->token), "%s", o->token != NULL ? o->token : "");
    snprintf(rz->prefix, sizeof(rz->prefix), "launch/%s", rz->run_id);
    rz->o.run_id = rz->run_id;
    rz->o.host = rz->host;
    rz->o.token = NULL;
    rz->round.round = -1;
    rz->joining = -1;
    const char *fmt = strchr(rz->host, ':') != NULL ? "[%s]:%d" : "%s:%d";
    snprintf(rz->endpoint, sizeof(rz->endpoint), fmt, rz->host, o->port);
    const char *token = rz->token[0] != '\0' ? rz->token : NULL;
    dl_status_t st;

    /* Host the store when the endpoint can be bound here. Two agents may
     * race for it: the loser finds it taken and joins as a client. */
    int err = bind_probe(rz->host, o->port, why, cap);
    if (err < 0) {
        st = DL_ERR_INVALID;
        goto err_free;
    }
    if (err == 0) {
        quiet(true);
        st = dl_store_server_start_thread_auth(rz->host, o->port, token, &rz->srv);
        quiet(false);
        if (st == DL_OK) {
            rz->o.port = dl_store_server_port(rz->srv);
            snprintf(rz->endpoint, sizeof(rz->endpoint), fmt, rz->host, rz->o.port);
        } else {
            rz->srv = NULL;
            err = o->port == 0 ? EADDRNOTAVAIL : bind_probe(rz->host, o->port, why, cap);
            if (o->port == 0 || err == 0) {
                snprintf(why, cap, "cannot serve the rendezvous store at %s", rz->endpoint);
                goto err_free;
            }
        }
    }
    if (rz->srv != NULL) {
        st = dl_store_connect_auth(rz->host, rz->o.port, token, 5000, &rz->store);
        if (st == DL_OK)
            st = dl_store_set_str(rz->store, "launch/run_id", rz->run_id);
        if (st != DL_OK) {
            snprintf(why, cap, "cannot use the rendezvous store served here at %s: %s",
                     rz->endpoint, dl_strerror(st));
            goto err_close;
        }
        dl_store_set_timeout(rz->store, (int)(o->conf.read_timeout_s * 1000));
    } else if ((st = connect_client(rz, err == EADDRINUSE, why, cap)) != DL_OK) {
        goto err_close;
    }

    /* Who we are. */
    int64_t arrival;
    char k[256];
    if ((st = ctr(rz, key(rz, k, sizeof(k), "agents"), 1, &arrival)) != DL_OK) {
        snprintf(why, cap, "%s", rz->why);
        goto err_close;
    }
    rz->me.arrival = (int)arrival;
    gethostname(rz->me.host, sizeof(rz->me.host));
    rz->me.host[sizeof(rz->me.host) - 1] = '\0';
    local_addr_towards(rz->host, rz->o.port, rz->me.addr, sizeof(rz->me.addr));
    rz->me.nproc = o->nproc;
    rz->me.pid = (int)getpid();
    if ((st = lab_rdzv_tick(rz)) != DL_OK) {
        snprintf(why, cap, "%s", rz->why);
        goto err_close;
    }
    /* From now on the agent says what a failed request means. */
    quiet(true);
    *rz_p = rz;
    return DL_OK;

err_close:
    dl_store_close(rz->store);
    if (rz->srv != NULL)
        dl_store_server_stop_thread(rz->srv);
err_free:
    free(rz);
    dl_log_set_sink(NULL, NULL);
    return st;
}

bool lab_rdzv_is_host(const lab_rdzv_t *rz)
{
    return rz->srv != NULL;
}

const char *lab_rdzv_endpoint(const lab_rdzv_t *rz)
{
    return rz->endpoint;
}

int lab_rdzv_arrival(const lab_rdzv_t *rz)
{
    return rz->me.arrival;
}

const char *lab_rdzv_error(const lab_rdzv_t *rz)
{
    return rz->why;
}

lab_rdzv_outcome_t lab_rdzv_outcome(const lab_rdzv_t *rz)
{
    return rz->outcome;
}

dl_status_t lab_rdzv_tick(lab_rdzv_t *rz)
{
    double t = now_s();
    if (t < rz->hb_next)
        return DL_OK;
    rz->hb_next = t + rz->o.conf.keep_alive_interval_s;
    char k[256];
    return ctr(rz, key(rz, k, sizeof(k), "hb/%d", rz->me.arrival), 1, NULL);
}

/* Whether agent a's keep-alives still come: seen to change within the
 * allowed number of intervals. Checked at most once an interval. */
static dl_status_t check_alive(lab_rdzv_t *rz, liveness_t *l, int arrival, bool *alive_p)
{
    double t = now_s(),
           tolerance = rz->o.conf.keep_alive_interval_s * rz->o.conf.keep_alive_max_attempt;
    char k[256];
    int64_t v;
    dl_status_t st = ctr(rz, key(rz, k, sizeof(k), "hb/%d", arrival), 0, &v);
    if (st != DL_OK)
        return st;
    if (!l->seen || v != l->value) {
        l->seen = true;
        l->value = v;
        l->changed = t;
    }
    *alive_p = t - l->changed <= tolerance;
    return DL_OK;
}

/* ---- joining a round ---- */

static dl_status_t check_over(lab_rdzv_t *rz, bool *over_p)
{
    char k[256];
    int64_t failed, succeeded;
    dl_status_t st;
    if ((st = ctr(rz, key(rz, k, sizeof(k), "failed"), 0, &failed)) != DL_OK ||
        (st = ctr(rz, key(rz, k, sizeof(k), "succeeded"), 0, &succeeded)) != DL_OK)
        return st;
    *over_p = failed > 0 || succeeded > 0;
    if (failed > 0) {
        rz->outcome = LAB_RDZV_FAILED;
        /* Written before the counter, by the agent that ended the run. */
        void *why = NULL;
        size_t len = 0;
        if (dl_store_get(rz->store, key(rz, k, sizeof(k), "why"), &why, &len) == DL_OK)
            say_why(rz, "the run '%s' has failed on %.*s", rz->run_id, (int)len, (const char *)why);
        else
            say_why(rz, "the run '%s' has failed on another node", rz->run_id);
        free(why);
    } else if (succeeded > 0) {
        rz->outcome = LAB_RDZV_SUCCEEDED;
        say_why(rz, "the run '%s' has already finished", rz->run_id);
    }
    return DL_OK;
}

static dl_status_t round_from_json(lab_rdzv_t *rz, const json_t *j, lab_rdzv_round_t *r)
{
    json_t *nodes;
    if (json_unpack((json_t *)j, "{s:i,s:i,s:i,s:o}", "round", &r->round, "restart_count",
                    &r->restart_count, "max_restarts", &r->max_restarts, "nodes", &nodes) != 0 ||
        !json_is_array(nodes) || json_array_size(nodes) == 0 ||
        json_array_size(nodes) > LAB_RDZV_MAX_NODES) {
        say_why(rz, "the rendezvous store holds a malformed round");
        return DL_ERR_PROTOCOL;
    }
    r->nnodes = (int)json_array_size(nodes);
    r->world_size = 0;
    r->node_rank = -1;
    for (int i = 0; i < r->nnodes; i++) {
        if (!node_from_json(json_array_get(nodes, (size_t)i), &r->nodes[i])) {
            say_why(rz, "the rendezvous store holds a malformed round");
            return DL_ERR_PROTOCOL;
        }
        if (r->nodes[i].arrival == rz->me.arrival) {
            r->node_rank = i;
            r->rank_base = r->world_size;
        }
        r->world_size += r->nodes[i].nproc;
    }
    return DL_OK;
}

static int by_arrival(const void *a, const void *b)
{
    return ((const lab_rdzv_node_t *)a)->arrival - ((const lab_rdzv_node_t *)b)->arrival;
}

/* The closer writes the round: its first min(n, MAX) joiners in arrival
 * order (so node 0 is the oldest agent, and node ranks stay put across
 * restarts), and the restart count: the previous round's, plus one if a
 * worker failure ended it. */
static dl_status_t close_round(lab_rdzv_t *rz, int r, int64_t n, lab_rdzv_node_t *joined,
                               int njoined, const lab_rdzv_round_t *prev)
{
    char k[256];
    dl_status_t st;
    int m = (int)(n < rz->o.max_nodes ? n : rz->o.max_nodes);
    lab_rdzv_node_t *nodes = calloc((size_t)m, sizeof(*nodes));
    if (nodes == NULL)
        return DL_ERR_NOMEM;
    for (int i = 0; i < m; i++) {
        if (i < njoined) {
            nodes[i] = joined[i];
            continue;
        }
        json_t *j;
        if ((st = get_json(rz, key(rz, k, sizeof(k), "r%d/node/%d", r, i + 1), &j)) != DL_OK)
            goto out;
        bool ok = node_from_json(j, &nodes[i]);
        json_decref(j);
        if (!ok) {
            say_why(rz, "the rendezvous store holds a malformed node record");
            st = DL_ERR_PROTOCOL;
            goto out;
        }
    }
    qsort(nodes, (size_t)m, sizeof(*nodes), by_arrival);
    int restarts = 0, max_restarts = rz->o.max_restarts;
    if (prev != NULL) {
        int64_t fail;
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/fail", prev->round), 0, &fail)) != DL_OK)
            goto out;
        restarts = prev->restart_count + (fail > 0);
        max_restarts = prev->max_restarts;
    }
    json_t *arr = json_array();
    for (int i = 0; i < m && arr != NULL; i++)
        json_array_append_new(arr, node_to_json(&nodes[i]));
    json_t *info = json_pack("{s:i,s:i,s:i,s:o}", "round", r, "restart_count", restarts,
                             "max_restarts", max_restarts, "nodes", arr);
    if ((st = put_json(rz, key(rz, k, sizeof(k), "r%d/info", r), info)) != DL_OK)
        goto out;
    st = ctr(rz, key(rz, k, sizeof(k), "r%d/closed", r), 1, NULL);
out:
    free(nodes);
    return st;
}

/* A late agent asks the running round r to make room for it, unless the
 * round is full or already over. */
static dl_status_t ask_for_room(lab_rdzv_t *rz, int r)
{
    char k[256];
    int64_t restart, done;
    json_t *j;
    dl_status_t st;
    if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/restart", r), 0, &restart)) != DL_OK ||
        (st = ctr(rz, key(rz, k, sizeof(k), "r%d/done", r), 0, &done)) != DL_OK)
        return st;
    if (restart > 0 || done > 0)
        return DL_OK;
    if ((st = get_json(rz, key(rz, k, sizeof(k), "r%d/info", r), &j)) != DL_OK)
        return st;
    size_t members = json_array_size(json_object_get(j, "nodes"));
    json_decref(j);
    if ((int)members >= rz->o.max_nodes)
        return DL_OK;
    if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/grow", r), 1, NULL)) != DL_OK)
        return st;
    return ctr(rz, key(rz, k, sizeof(k), "r%d/restart", r), 1, NULL);
}

typedef struct {
    int r;
    int64_t idx;
    lab_rdzv_node_t *joined; /* records 1..njoined */
    int njoined;
    bool prev_ended;
    lab_rdzv_round_t *prev; /* the previous round's members (r > 0) */
    /* Members of the previous round expected back: those not marked lost. */
    int expected[LAB_RDZV_MAX_NODES];
    int nexpected;
    double min_reached;
} join_t;

/* Whether the joining round may close now. */
static dl_status_t ready_to_close(lab_rdzv_t *rz, join_t *j, int64_t n, bool *ready_p)
{
    *ready_p = false;
    if (n >= rz->o.max_nodes) {
        *ready_p = true;
        return DL_OK;
    }
    if (n < rz->o.min_nodes)
        return DL_OK;
    if (j->min_reached < 0)
        j->min_reached = now_s();
    int missing = 0;
    for (int e = 0; e < j->nexpected; e++) {
        bool in = false;
        for (int i = 0; i < j->njoined && !in; i++)
            in = j->joined[i].arrival == j->expected[e];
        if (in)
            continue;
        bool alive = true;
        dl_status_t st =
            check_alive(rz, &rz->live[j->expected[e] % LAB_RDZV_MAX_NODES], j->expected[e], &alive);
        if (st != DL_OK)
            return st;
        missing += alive;
    }
    if (missing > 0)
        return DL_OK;
    /* A restart: every member still alive is back. The first round: the
     * last call for latecomers. */
    *ready_p = j->nexpected > 0 || now_s() - j->min_reached >= rz->o.conf.last_call_timeout_s;
    return DL_OK;
}

/* Once the previous round has ended: who of it to wait for. */
static dl_status_t load_previous(lab_rdzv_t *rz, join_t *j)
{
    char k[256];
    json_t *info;
    dl_status_t st = get_json(rz, key(rz, k, sizeof(k), "r%d/info", j->r - 1), &info);
    if (st != DL_OK)
        return st;
    st = round_from_json(rz, info, j->prev);
    json_decref(info);
    if (st != DL_OK)
        return st;
    j->nexpected = 0;
    for (int i = 0; i < j->prev->nnodes; i++) {
        int a = j->prev->nodes[i].arrival;
        int64_t lost;
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/lost/%d", j->r - 1, a), 0, &lost)) != DL_OK)
            return st;
        if (lost == 0)
            j->expected[j->nexpected++] = a;
        rz->live[a % LAB_RDZV_MAX_NODES].seen = false;
    }
    return DL_OK;
}

/* Registers in round r or a later one that is still open. */
static dl_status_t enter(lab_rdzv_t *rz, join_t *j)
{
    char k[256];
    dl_status_t st;
    for (;;) {
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/joined", j->r), 1, &j->idx)) != DL_OK)
            return st;
        if (j->idx == 1 && j->r > 0 &&
            (st = ctr(rz, key(rz, k, sizeof(k), "round"), 1, NULL)) != DL_OK)
            return st;
        if (j->idx > CLOSE_MARK) {
            /* Closed without us: ask it to make room, then wait in the next. */
            if ((st = ask_for_room(rz, j->r)) != DL_OK)
                return st;
            j->r++;
            continue;
        }
        if (j->idx > rz->o.max_nodes) {
            /* Full: wait in the next round for one that has room. */
            j->r++;
            continue;
        }
        break;
    }
    rz->joining = j->r;
    rz->in_round = true;
    lab_rdzv_node_t me = rz->me;
    /* A fresh port each round: the workers' own store of the last round
     * may still hold the old one. */
    me.port = free_port(me.addr, rz->round.round >= 0 ? rz->round.nodes[0].port : 0);
    rz->me.port = me.port;
    return put_json(rz, key(rz, k, sizeof(k), "r%d/node/%lld", j->r, (long long)j->idx),
                    node_to_json(&me));
}

dl_status_t lab_rdzv_next_round(lab_rdzv_t *rz, const lab_rdzv_round_t **round_p)
{
    char k[256];
    dl_status_t st;
    double t0 = now_s();
    int64_t hint;
    if ((st = ctr(rz, key(rz, k, sizeof(k), "round"), 0, &hint)) != DL_OK)
        return st;
    join_t j = {.r = rz->round.round + 1, .min_reached = -1};
    if (hint > j.r)
        j.r = (int)hint;
    rz->done = false;
    rz->in_round = false;
    j.joined = calloc(LAB_RDZV_MAX_NODES, sizeof(*j.joined));
    j.prev = malloc(sizeof(*j.prev));
    if (j.joined == NULL || j.prev == NULL) {
        st = DL_ERR_NOMEM;
        goto out;
    }
    if ((st = enter(rz, &j)) != DL_OK)
        goto out;

    for (;;) {
        bool over = false;
        if ((st = lab_rdzv_tick(rz)) != DL_OK || (st = check_over(rz, &over)) != DL_OK)
            goto out;
        if (over) {
            st = DL_ERR_ABORTED;
            goto out;
        }
        int64_t closed, n;
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/closed", j.r), 0, &closed)) != DL_OK)
            goto out;
        if (closed > 0) {
            json_t *info;
            if ((st = get_json(rz, key(rz, k, sizeof(k), "r%d/info", j.r), &info)) != DL_OK)
                goto out;
            st = round_from_json(rz, info, &rz->round);
            json_decref(info);
            if (st == DL_OK && rz->round.node_rank < 0) {
                say_why(rz, "round %d closed without this agent", j.r);
                st = DL_ERR_PROTOCOL;
            }
            if (st != DL_OK)
                goto out;
            for (int i = 0; i < rz->round.nnodes; i++)
                rz->live[rz->round.nodes[i].arrival % LAB_RDZV_MAX_NODES].seen = false;
            rz->live_next = now_s() + rz->o.conf.keep_alive_interval_s;
            *round_p = &rz->round;
            goto out;
        }
        if (now_s() - t0 > rz->o.conf.join_timeout_s) {
            int64_t joined = 0;
            ctr(rz, key(rz, k, sizeof(k), "r%d/joined", j.r), 0, &joined);
            if (j.r > 0 && !j.prev_ended)
                say_why(rz,
                        "rendezvous of run '%s' timed out after %g s (join_timeout): round %d is "
                        "full (%d nodes) and has not ended, so there is no room for this node",
                        rz->run_id, rz->o.conf.join_timeout_s, j.r - 1, rz->o.max_nodes);
            else
                say_why(rz,
                        "rendezvous of run '%s' timed out after %g s (join_timeout): %lld of at "
                        "least %d nodes joined at %s",
                        rz->run_id, rz->o.conf.join_timeout_s,
                        (long long)(joined < CLOSE_MARK ? joined : joined - CLOSE_MARK),
                        rz->o.min_nodes, rz->endpoint);
            st = DL_ERR_TIMEOUT;
            goto out;
        }
        if (!rz->o.wait(rz->o.wait_arg, JOIN_POLL_MS)) {
            say_why(rz, "interrupted");
            st = DL_ERR_ABORTED;
            goto out;
        }

        /* A round may close only once the one before it has ended. */
        if (j.r > 0 && !j.prev_ended) {
            int64_t restart;
            if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/restart", j.r - 1), 0, &restart)) != DL_OK)
                goto out;
            if (restart == 0)
                continue;
            j.prev_ended = true;
            if ((st = load_previous(rz, &j)) != DL_OK)
                goto out;
        }
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/joined", j.r), 0, &n)) != DL_OK)
            goto out;
        if (n >= CLOSE_MARK)
            continue; /* being closed: wait for closed */
        int want = (int)(n < rz->o.max_nodes ? n : rz->o.max_nodes);
        while (j.njoined < want) {
            json_t *rec;
            int i = j.njoined + 1;
            if ((st = get_json(rz, key(rz, k, sizeof(k), "r%d/node/%d", j.r, i), &rec)) != DL_OK)
                goto out;
            bool ok = node_from_json(rec, &j.joined[j.njoined]);
            json_decref(rec);
            if (!ok) {
                say_why(rz, "the rendezvous store holds a malformed node record");
                st = DL_ERR_PROTOCOL;
                goto out;
            }
            j.njoined++;
        }
        bool ready;
        if ((st = ready_to_close(rz, &j, n, &ready)) != DL_OK)
            goto out;
        if (!ready)
            continue;
        int64_t v;
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/joined", j.r), CLOSE_MARK, &v)) != DL_OK)
            goto out;
        if (v < 2 * CLOSE_MARK && (st = close_round(rz, j.r, v - CLOSE_MARK, j.joined, j.njoined,
                                                    j.r > 0 ? j.prev : NULL)) != DL_OK)
            goto out;
    }
out:
    free(j.joined);
    free(j.prev);
    return st;
}

/* ---- a running round ---- */

dl_status_t lab_rdzv_poll(lab_rdzv_t *rz, lab_rdzv_event_t *ev_p, const lab_rdzv_node_t **lost_p)
{
    char k[256];
    dl_status_t st;
    int r = rz->round.round;
    int64_t restart, v;
    *ev_p = LAB_RDZV_RUNNING;
    *lost_p = NULL;
    if ((st = lab_rdzv_tick(rz)) != DL_OK ||
        (st = ctr(rz, key(rz, k, sizeof(k), "r%d/restart", r), 0, &restart)) != DL_OK)
        return st;
    if (restart > 0) {
        /* A worker failure first: every agent then decides for itself
         * whether restarts are left (the round says how many). */
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/fail", r), 0, &v)) != DL_OK)
            return st;
        if (v > 0) {
            *ev_p = LAB_RDZV_FAIL;
            return DL_OK;
        }
        bool over;
        if ((st = check_over(rz, &over)) != DL_OK)
            return st;
        if (over && rz->outcome == LAB_RDZV_FAILED) {
            *ev_p = LAB_RDZV_OVER;
            return DL_OK;
        }
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/lost", r), 0, &v)) != DL_OK)
            return st;
        *ev_p = v > 0 ? LAB_RDZV_LOST : LAB_RDZV_GROW;
        return DL_OK;
    }
    if (rz->done) {
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/done", r), 0, &v)) != DL_OK)
            return st;
        if (v >= rz->round.nnodes) {
            *ev_p = LAB_RDZV_DONE;
            return DL_OK;
        }
    }
    if (now_s() < rz->live_next)
        return DL_OK;
    rz->live_next = now_s() + rz->o.conf.keep_alive_interval_s;
    for (int i = 0; i < rz->round.nnodes; i++) {
        const lab_rdzv_node_t *node = &rz->round.nodes[i];
        if (i == rz->round.node_rank)
            continue;
        bool alive;
        if ((st = check_alive(rz, &rz->live[node->arrival % LAB_RDZV_MAX_NODES], node->arrival,
                              &alive)) != DL_OK)
            return st;
        if (alive)
            continue;
        if ((st = ctr(rz, key(rz, k, sizeof(k), "r%d/lost/%d", r, node->arrival), 1, NULL)) !=
                DL_OK ||
            (st = ctr(rz, key(rz, k, sizeof(k), "r%d/lost", r), 1, NULL)) != DL_OK ||
            (st = ctr(rz, key(rz, k, sizeof(k), "r%d/restart", r), 1, NULL)) != DL_OK)
            return st;
        *ev_p = LAB_RDZV_LOST;
        *lost_p = node;
        return DL_OK;
    }
    return DL_OK;
}

static json_t *failure_to_json(const lab_rdzv_failure_t *f)
{
    return json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:s}", "round", f->round, "node_rank",
                     f->node_rank, "local_rank", f->local_rank, "rank", f->rank, "pid", f->pid,
                     "exit_code", f->exit_code, "signal", f->signal, "host", f->host, "time",
                     f->time);
}

dl_status_t lab_rdzv_report_failure(lab_rdzv_t *rz, const lab_rdzv_failure_t *f)
{
    char k[256];
    int r = rz->round.round;
    int64_t v;
    dl_status_t st = ctr(rz, key(rz, k, sizeof(k), "r%d/fail", r), 1, &v);
    if (st == DL_OK && v == 1)
        st = put_json(rz, key(rz, k, sizeof(k), "r%d/failure", r), failure_to_json(f));
    if (st == DL_OK)
        st = ctr(rz, key(rz, k, sizeof(k), "r%d/restart", r), 1, NULL);
    return st;
}

dl_status_t lab_rdzv_first_failure(lab_rdzv_t *rz, lab_rdzv_failure_t *f)
{
    char k[256];
    json_t *j;
    dl_status_t st = get_json(rz, key(rz, k, sizeof(k), "r%d/failure", rz->round.round), &j);
    if (st != DL_OK)
        return st;
    const char *host, *time;
    int bad =
        json_unpack(j, "{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:s}", "round", &f->round, "node_rank",
                    &f->node_rank, "local_rank", &f->local_rank, "rank", &f->rank, "pid", &f->pid,
                    "exit_code", &f->exit_code, "signal", &f->signal, "host", &host, "time", &time);
    if (!bad) {
        snprintf(f->host, sizeof(f->host), "%s", host);
        snprintf(f->time, sizeof(f->time), "%s", time);
    }
    json_decref(j);
    if (bad) {
        say_why(rz, "the rendezvous store holds a malformed failure record");
        return DL_ERR_PROTOCOL;
    }
    return DL_OK;
}

dl_status_t lab_rdzv_mark_done(lab_rdzv_t *rz)
{
    char k[256];
    if (rz->done)
        return DL_OK;
    rz->done = true;
    return ctr(rz, key(rz, k, sizeof(k), "r%d/done", rz->round.round), 1, NULL);
}

dl_status_t lab_rdzv_end_run(lab_rdzv_t *rz, bool failed, const char *why)
{
    char k[256];
    rz->ended = true;
    dl_status_t st = DL_OK;
    if (failed && why != NULL) {
        char text[600];
        snprintf(text, sizeof(text), "node %d (%s): %s", rz->round.node_rank, rz->me.host, why);
        if (dl_store_set_str(rz->store, key(rz, k, sizeof(k), "why"), text) != DL_OK)
            st = store_lost(rz, DL_ERR_CLOSED);
    }
    if (st == DL_OK)
        st = ctr(rz, key(rz, k, sizeof(k), failed ? "failed" : "succeeded"), 1, NULL);
    /* Those still running the round hear of it through R/restart. */
    if (st == DL_OK && failed && rz->round.round >= 0)
        st = ctr(rz, key(rz, k, sizeof(k), "r%d/restart", rz->round.round), 1, NULL);
    return st;
}

void lab_rdzv_leave(lab_rdzv_t *rz)
{
    char k[256];
    if (!rz->in_round || rz->joining < 0)
        return;
    int r = rz->joining;
    /* Best effort: the store may be gone already. */
    if (ctr(rz, key(rz, k, sizeof(k), "r%d/lost/%d", r, rz->me.arrival), 1, NULL) == DL_OK &&
        ctr(rz, key(rz, k, sizeof(k), "r%d/lost", r), 1, NULL) == DL_OK)
        ctr(rz, key(rz, k, sizeof(k), "r%d/restart", r), 1, NULL);
    rz->in_round = false;
}

void lab_rdzv_close(lab_rdzv_t *rz)
{
    char k[256];
    if (rz == NULL)
        return;
    int r = rz->round.round;
    /* Only a run that ended here (success, or no restarts left) has an end
     * that the others may still be reading; a host that left, or whose
     * rendezvous failed, does not wait. */
    if (r >= 0 && rz->in_round &&
        ctr(rz, key(rz, k, sizeof(k), "r%d/exited", r), 1, NULL) == DL_OK && rz->srv != NULL &&
        rz->ended) {
        /* The others may still read the round's end: serve them a little. */
        double t0 = now_s();
        int64_t exited = 0;
        while (now_s() - t0 < LINGER_S &&
               ctr(rz, key(rz, k, sizeof(k), "r%d/exited", r), 0, &exited) == DL_OK &&
               exited < rz->round.nnodes)
            rz->o.wait(rz->o.wait_arg, 20);
    }
    dl_store_close(rz->store);
    if (rz->srv != NULL)
        dl_store_server_stop_thread(rz->srv);
    dl_log_set_sink(NULL, NULL);
    free(rz);
}
