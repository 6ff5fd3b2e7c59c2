/* Blocking socket helpers with deadlines (see internal.h).
 *
 * Sockets are driven with MSG_DONTWAIT and poll() rather than by their
 * blocking mode: a blocking send() of a large buffer would otherwise sleep
 * past the deadline until the peer drains it all. */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "distlab/log.h"
#include "net/internal.h"

int64_t dl__net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

dl__deadline_t dl__net_deadline(int timeout_ms)
{
    if (timeout_ms < 0)
        return DL__NET_FOREVER;
    return dl__net_now_ms() + timeout_ms;
}

int dl__net_remaining_ms(dl__deadline_t deadline)
{
    if (deadline == DL__NET_FOREVER)
        return -1;
    int64_t left = deadline - dl__net_now_ms();
    if (left <= 0)
        return 0;
    return left > INT_MAX ? INT_MAX : (int)left;
}

dl_status_t dl__net_poll(int fd, short events, dl__deadline_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    for (;;) {
        int wait_ms = dl__net_remaining_ms(deadline);
        int n = poll(&pfd, 1, wait_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            dl_log_error("poll on socket %d failed: %m", fd);
            return DL_ERR_SYSTEM;
        }
        if (n > 0) {
            if (pfd.revents & POLLNVAL) {
                dl_log_error("poll on socket %d: not an open descriptor", fd);
                return DL_ERR_INVALID;
            }
            /* POLLERR and POLLHUP are left to the next send or recv, which
             * turns them into the precise status. */
            return DL_OK;
        }
        /* poll() may return early when the wait was clamped to INT_MAX. */
        if (wait_ms == 0)
            return DL_ERR_TIMEOUT;
    }
}

dl_status_t dl__net_writev_all(int fd, struct iovec *iov, int iovcnt, dl__deadline_t deadline)
{
    while (iovcnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            iovcnt--;
            continue;
        }
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
        ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                dl_status_t st = dl__net_poll(fd, POLLOUT, deadline);
                if (st != DL_OK)
                    return st;
                continue;
            }
            if (errno == EPIPE || errno == ECONNRESET)
                return DL_ERR_CLOSED;
            dl_log_error("send on socket %d failed: %m", fd);
            return DL_ERR_IO;
        }
        /* Skip the fully written pieces, then trim the partly written one. */
        size_t done = (size_t)n;
        while (iovcnt > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return DL_OK;
}

dl_status_t dl__net_write_all(int fd, const void *buf, size_t len, dl__deadline_t deadline)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return dl__net_writev_all(fd, &iov, 1, deadline);
}

dl_status_t dl__net_read_all(int fd, void *buf, size_t len, dl__deadline_t deadline)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n == 0)
            return DL_ERR_CLOSED;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                dl_status_t st = dl__net_poll(fd, POLLIN, deadline);
                if (st != DL_OK)
                    return st;
                continue;
            }
            if (errno == ECONNRESET)
                return DL_ERR_CLOSED;
            dl_log_error("recv on socket %d failed: %m", fd);
            return DL_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
    }
    return DL_OK;
}

/* ---- connect ---- */

/* Errors that mean "nobody is there yet": worth another try later. */
static int connect_error_is_transient(int err)
{
    return err == ECONNREFUSED || err == ECONNRESET || err == ECONNABORTED || err == ETIMEDOUT ||
           err == EHOSTUNREACH || err == ENETUNREACH;
}

/* A connect to a free port of the local host can, once in a while, pick that
 * very port as its own source port and connect the socket to itself (TCP
 * simultaneous open). Such a socket talks to no server; treat it as refused. */
static int socket_is_self_connected(int fd)
{
    struct sockaddr_storage local, peer;
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    if (getsockname(fd, (struct sockaddr *)&local, &local_len) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &peer_len) != 0)
        return 0;
    return local_len == peer_len && memcmp(&local, &peer, local_len) == 0;
}

/* One connect attempt to one address. Returns 0 with *fd_p set, or an errno
 * value (ETIMEDOUT when the deadline passed). */
static int connect_addr(const struct addrinfo *ai, dl__deadline_t deadline, int *fd_p)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return errno;
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            err = errno;
            goto err_close_sock;
        }
        dl_status_t st = dl__net_poll(fd, POLLOUT, deadline);
        if (st != DL_OK) {
            err = st == DL_ERR_TIMEOUT ? ETIMEDOUT : EIO;
            goto err_close_sock;
        }
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err != 0)
            goto err_close_sock;
    }
    if (socket_is_self_connected(fd)) {
        err = ECONNREFUSED;
        goto err_close_sock;
    }
    /* Requests are small and latency-bound: send them without Nagle's delay. */
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        err = errno;
        goto err_close_sock;
    }
    *fd_p = fd;
    return 0;

err_close_sock:
    close(fd);
    return err;
}

dl_status_t dl__net_connect(const char *host, int port, dl__deadline_t deadline, int *fd_p)
{
    if (host == NULL || port <= 0 || port > 65535)
        return DL_ERR_INVALID;
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    /* An address literal (what ranks are given) needs no resolver, nor
     * AI_ADDRCONFIG's query of the interfaces: a netlink round trip on every
     * connection of every rank. */
    struct in6_addr lit;
    bool literal = inet_pton(AF_INET, host, &lit) == 1 || inet_pton(AF_INET6, host, &lit) == 1;
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC,
        .ai_socktype = SOCK_STREAM,
        .ai_flags = AI_NUMERICSERV | (literal ? AI_NUMERICHOST : AI_ADDRCONFIG),
    };
    struct addrinfo *res;
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai == EAI_AGAIN) {
        errno = EAGAIN;
        return DL_ERR_CLOSED; /* The resolver may answer on the next try. */
    }
    if (gai != 0) {
        dl_log_error("cannot resolve '%s': %s", host,
                     gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        return DL_ERR_INVALID;
    }

    /* Try every address (localhost may resolve to ::1 and 127.0.0.1 while
     * the server listens on one of them). A hard error (no route for that
     * address family, say) only counts when no address was merely refused. */
    dl_status_t st = DL_ERR_CLOSED;
    int hard_err = 0, transient = 0;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        int err = connect_addr(ai, deadline, fd_p);
        if (err == 0) {
            st = DL_OK;
            break;
        }
        if (err == ETIMEDOUT && dl__net_remaining_ms(deadline) == 0) {
            st = DL_ERR_TIMEOUT;
            break;
        }
        if (connect_error_is_transient(err))
            transient = err;
        else
            hard_err = err;
    }
    freeaddrinfo(res);
    if (st == DL_ERR_CLOSED && transient == 0 && hard_err != 0) {
        errno = hard_err;
        dl_log_error("connect to %s:%d failed: %m", host, port);
        st = DL_ERR_SYSTEM;
    }
    /* The caller may give up after this attempt: errno says why it failed. */
    if (st == DL_ERR_CLOSED)
        errno = transient != 0 ? transient : ECONNREFUSED;
    return st;
}
