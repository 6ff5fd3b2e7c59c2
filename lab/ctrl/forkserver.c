/* See forkserver.h.
 *
 *     controller ──request: env, [stderr fd, status pipe's write end]──▶ server
 *                ◀──────────────── reply: pid or -errno ────────────────
 *     server ──fork──▶ rank (parent: the server; session: its own)
 *     server ──wait status, then close──▶ status pipe ──▶ controller
 *
 * The server reaps its children, so it passes each one's wait status on
 * through the pipe the controller gave it for that rank; the controller
 * watches that pipe as it would watch a process handle. The server dies
 * with the controller (PDEATHSIG), and the ranks with the server, as ranks
 * spawned by exec die with the controller. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/ctrl/forkserver.h"

/* A request is the environment's strings, each with its NUL, in one
 * packet. A packet must fit the socket's send buffer (net.core.wmem_default,
 * 208 KiB by default): a larger environment is spawned by exec. */
#define MAX_REQUEST      (192 * 1024)
#define REPLY_TIMEOUT_MS 10000

static int server_fd = -1;    /* the controller's end; -1: no server */
static pid_t server_pid = -1; /* to reap it once it has been given up */

/* ------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------ */

typedef struct {
    pid_t pid;
    int status_fd;
} child_t;

typedef struct {
    child_t *v;
    size_t n, cap;
} children_t;

/* In the new rank: its standard files, session and environment, then the
 * rank itself. Never returns. */
static void run_rank(int (*entry)(void), char *req, size_t len, int err_fd, int status_fd, int sock,
                     int sig_fd, const children_t *ch)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGCHLD, SIG_DFL);
    close(sock);
    close(sig_fd);
    close(status_fd);
    for (size_t i = 0; i < ch->n; i++)
        close(ch->v[i].status_fd);
    setsid();
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd > 0) {
        dup2(null_fd, 0);
        close(null_fd);
    }
    dup2(err_fd, 1);
    dup2(err_fd, 2);
    if (err_fd > 2)
        close(err_fd);
    size_t n = 0;
    for (size_t i = 0; i < len; i += strlen(req + i) + 1)
        n++;
    char **env = calloc(n + 1, sizeof(char *));
    if (env == NULL)
        _exit(1);
    n = 0;
    for (size_t i = 0; i < len; i += strlen(req + i) + 1)
        env[n++] = req + i;
    extern char **environ;
    environ = env;
    exit(entry());
}

/* Receives one request with its two descriptors; false when the controller
 * has gone (or sent something malformed: the server then ends). */
static bool take_request(int sock, char *buf, size_t *len_p, int *err_fd_p, int *status_fd_p)
{
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {buf, MAX_REQUEST};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = ctl.buf,
                         .msg_controllen = sizeof(ctl.buf)};
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0 || buf[n - 1] != '\0')
        return false;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
        return false;
    int fds[2];
    memcpy(fds, CMSG_DATA(c), sizeof(fds));
    *err_fd_p = fds[0];
    *status_fd_p = fds[1];
    *len_p = (size_t)n;
    return true;
}

/* Passes on the wait status of every child that has ended. */
static void reap(children_t *ch)
{
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < ch->n; i++) {
            if (ch->v[i].pid != pid)
                continue;
            /* A controller that has gone no longer reads: nothing to do. */
            if (write(ch->v[i].status_fd, &status, sizeof(status)) < 0)
                (void)0;
            close(ch->v[i].status_fd);
            ch->v[i] = ch->v[--ch->n];
            break;
        }
    }
}

static void serve(int sock, void (*prepare)(void), int (*entry)(void))
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        _exit(0);
    /* Out of the terminal's reach, as the ranks are: Ctrl-C is for the
     * controller, which interrupts ranks on purpose, not for us. */
    setsid();
    /* Nor do we hold the controller's standard input and output open (a
     * reader of its output waits for every writer to close): a rank's come
     * with its request. */
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd > 1) {
        dup2(null_fd, 0);
        dup2(null_fd, 1);
        close(null_fd);
    }
    if (prepare != NULL)
        prepare();
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sig_fd = signalfd(-1, &chld, SFD_CLOEXEC);
    char *buf = malloc(MAX_REQUEST);
    children_t ch = {0};
    if (sig_fd < 0 || buf == NULL)
        _exit(1);
    /* Closed: the controller stopped asking (it gave us up, or it has
     * gone). The ranks started so far are its ranks still: they die with us
     * (PDEATHSIG), so we stay, reaping them and passing their statuses on,
     * until the last has ended. A controller that died killed us anyway. */
    bool closed = false;
    for (;;) {
        if (closed && ch.n == 0)
            _exit(0);
        struct pollfd p[2] = {{closed ? -1 : sock, POLLIN, 0}, {sig_fd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            _exit(1);
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sig_fd, &si, sizeof(si)) < 0)
                (void)0; /* reap looks at every child regardless */
            reap(&ch);
        }
        if (closed || !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        size_t len = 0;
        int err_fd = -1, status_fd = -1;
        if (!take_request(sock, buf, &len, &err_fd, &status_fd)) {
            close(sock);
            closed = true;
            continue;
        }
        if (ch.n == ch.cap) {
            size_t cap = ch.cap ? 2 * ch.cap : 64;
            child_t *v = realloc(ch.v, cap * sizeof(*v));
            if (v == NULL)
                _exit(1);
            ch.v = v;
            ch.cap = cap;
        }
        pid_t pid = fork();
        if (pid == 0)
            run_rank(entry, buf, len, err_fd, status_fd, sock, sig_fd, &ch);
        int32_t reply = pid > 0 ? (int32_t)pid : -errno;
        close(err_fd);
        if (pid > 0)
            ch.v[ch.n++] = (child_t){pid, status_fd};
        else
            close(status_fd);
        if (send(sock, &reply, sizeof(reply), MSG_NOSIGNAL) != (ssize_t)sizeof(reply)) {
            /* The controller stopped waiting (it timed out): it never
             * learned of this rank and spawns its own. */
            if (pid > 0)
                kill(pid, SIGKILL);
            close(sock);
            closed = true;
        }
    }
}

void lab_forkserver_start(void (*prepare)(void), int (*entry)(void))
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return;
    }
    if (pid == 0) {
        close(sv[0]);
        serve(sv[1], prepare, entry);
        _exit(0);
    }
    close(sv[1]);
    server_fd = sv[0];
    server_pid = pid;
}

bool lab_forkserver_running(void)
{
    return server_fd >= 0;
}

/* ------------------------------------------------------------------------
 * The controller's side
 * ------------------------------------------------------------------------ */

static int give_up(int err)
{
    /* The server is gone or confused: spawn by exec from now on. It ends
     * once it sees the socket close and the ranks it started have ended. */
    close(server_fd);
    server_fd = -1;
    return err;
}

int lab_forkserver_spawn(char **env, int err_fd, pid_t *pid_p, int *status_fd_p)
{
    if (server_fd < 0) {
        /* Not to leave it a zombie in a long-lived controller (a shell's
         * respawn comes here). */
        if (server_pid > 0 && waitpid(server_pid, NULL, WNOHANG) != 0)
            server_pid = -1;
        return -ENOTCONN;
    }
    size_t len = 0;
    for (size_t i = 0; env[i] != NULL; i++)
        len += strlen(env[i]) + 1;
    if (len == 0 || len > MAX_REQUEST)
        return -E2BIG; /* the caller spawns this one by exec */
    char *req = malloc(len);
    if (req == NULL)
        return -ENOMEM;
    len = 0;
    for (size_t i = 0; env[i] != NULL; i++) {
        size_t n = strlen(env[i]) + 1;
        memcpy(req + len, env[i], n);
        len += n;
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        free(req);
        return -errno;
    }
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    struct iovec iov = {req, len};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = ctl.buf,
                         .msg_controllen = sizeof(ctl.buf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int fds[2] = {err_fd, pipefd[1]};
    memcpy(CMSG_DATA(c), fds, sizeof(fds));
    ssize_t sent = sendmsg(server_fd, &msg, MSG_NOSIGNAL);
    free(req);
    close(pipefd[1]);
    int32_t reply = -EPROTO;
    struct pollfd p = {server_fd, POLLIN, 0};
    if (sent != (ssize_t)len || poll(&p, 1, REPLY_TIMEOUT_MS) != 1 ||
        recv(server_fd, &reply, sizeof(reply), 0) != (ssize_t)sizeof(reply) || reply == 0) {
        close(pipefd[0]);
        return give_up(-EPROTO);
    }
    if (reply < 0) {
        /* The server's fork failed (no memory, no process left): this
         * rank goes by exec, and the server stays for the next. */
        close(pipefd[0]);
        return reply;
    }
    *pid_p = (pid_t)reply;
    *status_fd_p = pipefd[0];
    return 0;
}
