/* The elastic-restart demo (demo.h): two `distlab launch` agents on this
 * machine, their `distlab train` workers, one node joining and one worker
 * killed, told as it happens from what the processes print. */
#include "lab/elastic/demo.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_NODES   2
#define PER_NODE  2
#define MAX_RANKS (N_NODES * PER_NODE)

void lab_demo_defaults(lab_demo_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->epochs = 12;
    o->sleep_s = 0.5;
    o->join_at = 3;
    o->kill_at = 6;
    o->timeout_s = 120;
    o->out = stdout;
}

/* One agent: its process (the leader of its own process group) and the
 * pipe its agent and workers print into. */
typedef struct {
    pid_t pid;
    int fd;
    char buf[8192];
    size_t len;
    bool exited;
    int status;
} node_t;

typedef enum {
    PH_ALONE,    /* node 0 trains with 2 workers */
    PH_JOINING,  /* node 1 started: waiting for the first epoch at 4 workers */
    PH_GROWN,    /* training at 4 workers, until the kill */
    PH_FAILOVER, /* a worker killed: waiting for the first epoch after the restart */
    PH_FINISHING /* waiting for the agents to end */
} phase_t;

typedef struct {
    const lab_demo_opts_t *o;
    node_t nodes[N_NODES];
    int n_nodes;
    phase_t phase;
    double t_join, t_grown, t_kill, t_resumed;
    pid_t pid_of_rank[MAX_RANKS]; /* from the latest epoch line of each rank */
    int resumed_at[MAX_RANKS];    /* the epoch each rank said it resumed at, this round */
    int n_resumed;
    char checksum[MAX_RANKS][40];
    int n_checksums;
    int failures;
    /* From the agents' "round N: W workers ... restarts R/M" lines: the
     * round that grew the world, and the one after the kill. */
    int grow_round, grow_restarts, fail_round, fail_restarts;
    char dir[64], ckpt[96];
    int port; /* the rendezvous endpoint's, on 127.0.0.1 */
} demo_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say(demo_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(demo_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(d->o->out, fmt, ap);
    va_end(ap);
    fputc('\n', d->o->out);
    fflush(d->o->out);
}

/* A check, printed as a scenario prints its `expect` lines. */
static void check(demo_t *d, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(demo_t *d, bool ok, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (ok) {
        say(d, "ok   expect %s", what);
    } else {
        fprintf(stderr, "FAIL elastic-restart: expect %s\n", what);
        d->failures++;
    }
}

/* A port nobody listens on now, for the rendezvous endpoint. */
static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1;
    if (bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

/* Starts node k's agent: `distlab launch` with the trainer as its command,
 * its output (and its workers') into a pipe. */
static bool start_node(demo_t *d, int k)
{
    const lab_demo_opts_t *o = d->o;
    char endpoint[64], epochs[16], sleep_s[32];
    snprintf(endpoint, sizeof(endpoint), "127.0.0.1:%d", d->port);
    snprintf(epochs, sizeof(epochs), "%d", o->epochs);
    snprintf(sleep_s, sizeof(sleep_s), "%g", o->sleep_s);
    char *argv[] = {(char *)o->exe,
                    "launch",
                    "--nnodes",
                    "1:2",
                    "--nproc-per-node",
                    "2",
                    "--rdzv-endpoint",
                    endpoint,
                    "--rdzv-id",
                    "elastic-demo",
                    "--max-restarts",
                    "3",
                    "--",
                    (char *)o->exe,
                    "train",
                    "--epochs",
                    epochs,
                    "--sleep",
                    sleep_s,
                    "--checkpoint",
                    d->ckpt,
                    NULL};
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        fprintf(stderr, "distlab demo: cannot make a pipe: %s\n", strerror(errno));
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "distlab demo: cannot start node %d: %s\n", k, strerror(errno));
        close(p[0]);
        close(p[1]);
        return false;
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[1], STDOUT_FILENO);
        dup2(p[1], STDERR_FILENO);
        execv(o->exe, argv);
        _exit(127);
    }
    setpgid(pid, pid);
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    node_t *n = &d->nodes[k];
    memset(n, 0, sizeof(*n));
    n->pid = pid;
    n->fd = p[0];
    d->n_nodes = k + 1;
    return true;
}

/* ---- what the lines say ---- */

static void on_epoch(demo_t *d, pid_t pid, int epoch, int rank, int world)
{
    if (rank >= 0 && rank < MAX_RANKS)
        d->pid_of_rank[rank] = pid;
    double t = now_s();
    switch (d->phase) {
    case PH_ALONE:
        if (world == PER_NODE && rank == 0 && epoch >= d->o->join_at) {
            say(d, "\n-- Node 1 starts an agent with 2 more workers. The agents see a node "
                   "waiting: they stop their workers and meet again in a new round, now with "
                   "4 workers. Growing is not a failure: it does not count against "
                   "--max-restarts.");
            d->t_join = now_s();
            d->n_resumed = 0;
            if (start_node(d, 1))
                d->phase = PH_JOINING;
            else
                d->failures++;
        }
        break;
    case PH_JOINING:
        if (world == MAX_RANKS) {
            d->t_grown = t;
            d->phase = PH_GROWN;
            say(d, "\n-- Training goes on at WORLD_SIZE 4, %.2f s after node 1 started.",
                d->t_grown - d->t_join);
        }
        break;
    case PH_GROWN:
        if (world == MAX_RANKS && epoch >= d->o->kill_at && d->pid_of_rank[3] > 0) {
            check(d, d->n_resumed == MAX_RANKS, "every worker of the 4 resumed (%d said so)",
                  d->n_resumed);
            say(d,
                "\n-- Worker rank 3 (pid %d) is killed with SIGKILL, as a crash or the "
                "kernel's OOM killer would. Its agent sees it exit by a signal and asks "
                "every agent to restart; the workers that are left are stopped, and the "
                "group starts again from the last checkpoint. This restart counts: 1 of 3.",
                (int)d->pid_of_rank[3]);
            d->n_resumed = 0;
            d->t_kill = now_s();
            kill(d->pid_of_rank[3], SIGKILL);
            d->phase = PH_FAILOVER;
        }
        break;
    case PH_FAILOVER:
        if (world == MAX_RANKS && d->n_resumed > 0) {
            d->t_resumed = t;
            d->phase = PH_FINISHING;
            say(d, "\n-- The group failed over: training goes on, %.2f s after the worker died.",
                d->t_resumed - d->t_kill);
        }
        break;
    default:
        break;
    }
}

static void on_resumed(demo_t *d, int epoch)
{
    if (d->n_resumed == 0)
        say(d,
            "\n-- The workers read the checkpoint that rank 0 wrote after each epoch: they "
            "go on at epoch %d instead of starting over.",
            epoch);
    if (d->n_resumed < MAX_RANKS)
        d->resumed_at[d->n_resumed] = epoch;
    d->n_resumed++;
}

/* "distlab launch: round 2: 4 workers on 2 nodes (...) ..., restarts 1/3". */
static void on_round(demo_t *d, const char *line)
{
    int round, workers, restarts, max;
    const char *r = strstr(line, "restarts ");
    if (sscanf(line, "distlab launch: round %d: %d workers", &round, &workers) != 2 || r == NULL ||
        sscanf(r, "restarts %d/%d", &restarts, &max) != 2 || workers != MAX_RANKS)
        return;
    if (d->phase == PH_JOINING || d->phase == PH_GROWN) {
        d->grow_round = round;
        d->grow_restarts = restarts;
    } else if (d->phase == PH_FAILOVER || d->phase == PH_FINISHING) {
        d->fail_round = round;
        d->fail_restarts = restarts;
    }
}

static void on_line(demo_t *d, int k, char *line)
{
    fprintf(d->o->out, "  node%d | %s\n", k, line);
    fflush(d->o->out);
    int pid, epoch, rank, local, world;
    double loss;
    char sum[40], path[256];
    if (sscanf(line, "[%d] epoch %d (rank = %d, local_rank = %d, world_size = %d) loss = %lf", &pid,
               &epoch, &rank, &local, &world, &loss) == 6)
        on_epoch(d, (pid_t)pid, epoch, rank, world);
    else if (sscanf(line, "[%d] resuming from checkpoint %255s at epoch %d", &pid, path, &epoch) ==
             3)
        on_resumed(d, epoch);
    else if (strncmp(line, "distlab launch: round ", 22) == 0)
        on_round(d, line);
    else if (sscanf(line, "[%d] final weights checksum = %39s (rank = %d, world_size = %d)", &pid,
                    sum, &rank, &world) == 4 &&
             d->n_checksums < MAX_RANKS)
        snprintf(d->checksum[d->n_checksums++], sizeof(d->checksum[0]), "%s", sum);
}

/* Reads what node k printed; false at the end of its output. */
static bool read_node(demo_t *d, int k)
{
    node_t *n = &d->nodes[k];
    ssize_t got = read(n->fd, n->buf + n->len, sizeof(n->buf) - 1 - n->len);
    if (got < 0)
        return errno == EAGAIN || errno == EINTR;
    n->len += (size_t)got;
    n->buf[n->len] = '\0';
    char *start = n->buf, *nl;
    while ((nl = strchr(start, '\n')) != NULL) {
        *nl = '\0';
        on_line(d, k, start);
        start = nl + 1;
    }
    n->len -= (size_t)(start - n->buf);
    memmove(n->buf, start, n->len);
    if (got == 0 || n->len == sizeof(n->buf) - 1) {
        if (n->len > 0) {
            n->buf[n->len] = '\0';
            on_line(d, k, n->buf);
            n->len = 0;
        }
        return got != 0;
    }
    return true;
}

/* Ends what is still running: SIGTERM to each agent (it stops its workers),
 * SIGKILL after 10 s (its watchdog then kills the workers). */
static void stop_nodes(demo_t *d)
{
    for (int k = 0; k < d->n_nodes; k++)
        if (!d->nodes[k].exited)
            kill(-d->nodes[k].pid, SIGTERM);
    double end = now_s() + 10;
    for (int k = 0; k < d->n_nodes; k++) {
        node_t *n = &d->nodes[k];
        while (!n->exited) {
            pid_t w = waitpid(n->pid, &n->status, WNOHANG);
            if (w == n->pid) {
                n->exited = true;
            } else if (now_s() > end) {
                kill(-n->pid, SIGKILL);
                waitpid(n->pid, &n->status, 0);
                n->exited = true;
            } else {
                usleep(20000);
            }
        }
    }
}

/* SIGINT (Ctrl-C), SIGTERM or SIGHUP (the terminal closed): the agents
 * run in process groups of their own, out of the terminal's reach, so the
 * demo stops them itself. */
static volatile sig_atomic_t stop_signal;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_STOP_SIGNALS (sizeof(stop_signals) / sizeof(stop_signals[0]))

static void on_stop(int sig)
{
    stop_signal = sig;
}

/* Catches the stop signals, keeping their old actions in old. */
static void catch_stops(struct sigaction old[N_STOP_SIGNALS])
{
    struct sigaction stop = {.sa_handler = on_stop};
    sigemptyset(&stop.sa_mask);
    stop_signal = 0;
    for (size_t i = 0; i < N_STOP_SIGNALS; i++)
        sigaction(stop_signals[i], &stop, &old[i]); /* no SA_RESTART: poll returns at once */
}

static void restore_stops(const struct sigaction old[N_STOP_SIGNALS])
{
    for (size_t i = 0; i < N_STOP_SIGNALS; i++)
        sigaction(stop_signals[i], &old[i], NULL);
}

static const char *stop_name(int sig)
{
    return sig == SIGINT ? "Ctrl-C" : sig == SIGHUP ? "SIGHUP" : "SIGTERM";
}

/* " (round 2: restarts 1)" of a round the agents told, or " (no WHAT
 * was seen)" when they told none (the demo ended before it). */
static void round_text(int round, int restarts, const char *what, char *buf, size_t cap)
{
    if (restarts < 0)
        snprintf(buf, cap, " (no %s was seen)", what);
    else
        snprintf(buf, cap, " (round %d: restarts %d)", round, restarts);
}

static void cleanup(demo_t *d)
{
    for (int k = 0; k < d->n_nodes; k++)
        if (d->nodes[k].fd >= 0)
            close(d->nodes[k].fd);
    /* The checkpoint and the files a killed writer may have left. */
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", d->dir);
    if (d->dir[0] != '\0' && system(cmd) != 0)
        fprintf(stderr, "distlab demo: could not remove %s\n", d->dir);
}

int lab_elastic_demo(const lab_demo_opts_t *o)
{
    demo_t d;
    memset(&d, 0, sizeof(d));
    d.o = o;
    d.grow_restarts = d.fail_restarts = -1;
    for (int k = 0; k < N_NODES; k++)
        d.nodes[k].fd = -1;
    snprintf(d.dir, sizeof(d.dir), "/tmp/distlab-elastic-XXXXXX");
    if (mkdtemp(d.dir) == NULL) {
        fprintf(stderr, "distlab demo: cannot make a directory for the checkpoint: %s\n",
                strerror(errno));
        return 1;
    }
    snprintf(d.ckpt, sizeof(d.ckpt), "%s/ckpt", d.dir);
    d.port = free_port();
    if (d.port < 0) {
        fprintf(stderr, "distlab demo: no free port on 127.0.0.1 for the rendezvous\n");
        cleanup(&d);
        return 1;
    }
    say(&d,
        "-- Node 0 starts `distlab launch --nnodes 1:2 --nproc-per-node 2 "
        "--rdzv-endpoint 127.0.0.1:%d --max-restarts 3 -- distlab train --epochs %d "
        "--checkpoint CKPT`. Its agent is the first at the endpoint, so it hosts the "
        "rendezvous store; one node is enough (MIN 1), so after a last call it starts "
        "its 2 workers: WORLD_SIZE 2.",
        d.port, o->epochs);
    if (!start_node(&d, 0)) {
        cleanup(&d);
        return 1;
    }
    /* The limit grows with the training the options ask for. */
    double limit = fmax(o->timeout_s, 30 + 3 * o->epochs * o->sleep_s);
    double deadline = now_s() + limit;
    bool timed_out = false;
    struct sigaction old[N_STOP_SIGNALS];
    catch_stops(old);
    while (stop_signal == 0) {
        struct pollfd pfd[N_NODES];
        int n = 0, which[N_NODES];
        for (int k = 0; k < d.n_nodes; k++)
            if (d.nodes[k].fd >= 0) {
                pfd[n] = (struct pollfd){.fd = d.nodes[k].fd, .events = POLLIN};
                which[n++] = k;
            }
        if (n == 0)
            break;
        if (now_s() > deadline) {
            timed_out = true;
            break;
        }
        if (poll(pfd, (nfds_t)n, 100) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            /* Reading may start node 1 (on_epoch): the next poll has it. */
            if (!read_node(&d, which[i])) {
                close(d.nodes[which[i]].fd);
                d.nodes[which[i]].fd = -1;
            }
        }
    }
    if (stop_signal != 0) {
        int sig = stop_signal;
        fprintf(stderr, "distlab demo: interrupted (%s): stopping the agents and their workers\n",
                stop_name(sig));
        stop_nodes(&d);
        cleanup(&d);
        restore_stops(old);
        return 128 + sig;
    }
    restore_stops(old);
    if (timed_out)
        fprintf(stderr, "distlab demo: the demo did not end within %g s; stopping it\n", limit);
    /* The agents have closed their output: they are ending. */
    double end = now_s() + 15;
    for (int k = 0; k < d.n_nodes; k++) {
        node_t *nd = &d.nodes[k];
        while (!timed_out && !nd->exited && now_s() < end) {
            if (waitpid(nd->pid, &nd->status, WNOHANG) == nd->pid)
                nd->exited = true;
            else
                usleep(20000);
        }
    }
    stop_nodes(&d);
    fputc('\n', o->out);
    static const char *const acts[] = {"node 0 alone", "node 1 joining", "training at 4 workers",
                                       "the failover", "the end"};
    check(&d, d.phase == PH_FINISHING,
          "a node joined, a worker died and training resumed (the demo got as far as %s)",
          acts[d.phase]);
    char round[64];
    round_text(d.grow_round, d.grow_restarts, "round at 4 workers", round, sizeof(round));
    check(&d, d.grow_restarts == 0, "growing to 4 workers counted no restart%s", round);
    round_text(d.fail_round, d.fail_restarts, "failed round", round, sizeof(round));
    check(&d, d.fail_restarts == 1, "the failover counted one restart%s", round);
    for (int k = 0; k < d.n_nodes; k++)
        check(&d, WIFEXITED(d.nodes[k].status) && WEXITSTATUS(d.nodes[k].status) == 0,
              "node %d's agent ends with exit code 0", k);
    bool same = d.n_checksums == MAX_RANKS;
    for (int i = 1; i < d.n_checksums; i++)
        same = same && strcmp(d.checksum[i], d.checksum[0]) == 0;
    check(&d, same, "the 4 workers end with the same weights (%d checksums, the first %s)",
          d.n_checksums, d.n_checksums > 0 ? d.checksum[0] : "none");
    if (d.phase == PH_FINISHING)
        say(&d,
            "\nnode 1 started -> first epoch at WORLD_SIZE 4:  %.2f s\n"
            "worker killed  -> first epoch after the restart: %.2f s",
            d.t_grown - d.t_join, d.t_resumed - d.t_kill);
    cleanup(&d);
    return d.failures == 0 && !timed_out ? 0 : 1;
}
