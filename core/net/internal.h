/* Blocking socket helpers with deadlines, shared by the frame codec, the
 * store client and the TCP transport.
 *
 * Every helper takes a deadline instead of a per-call timeout so that a
 * request made of several reads and writes is bounded as a whole. Timeouts and
 * closed connections are returned, not logged: the caller knows what was being
 * waited for and says so once. System call failures are logged here, with %m,
 * because only here is errno still meaningful. */
#ifndef DISTLAB_NET_INTERNAL_H
#define DISTLAB_NET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "distlab/status.h"

/* A point in CLOCK_MONOTONIC time, in milliseconds; DL__NET_FOREVER never
 * expires. */
typedef int64_t dl__deadline_t;
#define DL__NET_FOREVER INT64_MAX

int64_t dl__net_now_ms(void);
/* Turns a timeout in milliseconds (negative: forever) into a deadline. */
dl__deadline_t dl__net_deadline(int timeout_ms);
/* The milliseconds left before the deadline as a poll() timeout: -1 for
 * forever, 0 once it has passed. */
int dl__net_remaining_ms(dl__deadline_t deadline);

/* Waits until fd is ready for events (POLLIN or POLLOUT), EINTR-safe.
 * DL_ERR_TIMEOUT once the deadline passes. */
dl_status_t dl__net_poll(int fd, short events, dl__deadline_t deadline);

/* Writes every byte described by iov (modified in place as it goes) without
 * raising SIGPIPE. DL_ERR_CLOSED when the peer has gone. */
dl_status_t dl__net_writev_all(int fd, struct iovec *iov, int iovcnt, dl__deadline_t deadline);
dl_status_t dl__net_write_all(int fd, const void *buf, size_t len, dl__deadline_t deadline);
/* Reads exactly len bytes. DL_ERR_CLOSED on end of stream, even mid-way. */
dl_status_t dl__net_read_all(int fd, void *buf, size_t len, dl__deadline_t deadline);

/* Opens a TCP connection to host:port, trying each resolved address, and
 * returns a blocking, close-on-exec socket with TCP_NODELAY set. One attempt
 * only: DL_ERR_CLOSED when the peer refused (nobody listens yet) or could not
 * be reached for now, with errno saying which (ECONNREFUSED, EHOSTUNREACH,
 * ...), DL_ERR_TIMEOUT when the deadline passed first. Refusals are not
 * logged, so that callers can retry quietly. */
dl_status_t dl__net_connect(const char *host, int port, dl__deadline_t deadline, int *fd_p);

#endif
