/* Status codes shared by every layer of distlab.
 *
 * Functions return dl_status_t: 0 is success, a negative value names the
 * error. The table below is the single source of the names and messages.
 *
 * DL_ERR_AGAIN is not a failure but "not yet": the work is still in flight,
 * a channel is full, a decoder needs more bytes. The caller retries later.
 * DL_ERR_NOT_FOUND always means that something named does not exist. */
#ifndef DISTLAB_STATUS_H
#define DISTLAB_STATUS_H

#define DL_STATUS_MAP(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(ERR_INVALID, -1, "invalid argument")                                                         \
    X(ERR_NOMEM, -2, "out of memory")                                                              \
    X(ERR_TIMEOUT, -3, "timed out")                                                                \
    X(ERR_PEER_DEAD, -4, "peer rank died")                                                         \
    X(ERR_ABORTED, -5, "operation aborted")                                                        \
    X(ERR_MISMATCH, -6, "mismatched collective")                                                   \
    X(ERR_UNSUPPORTED, -7, "not supported")                                                        \
    X(ERR_IO, -8, "input/output error")                                                            \
    X(ERR_PROTOCOL, -9, "protocol error")                                                          \
    X(ERR_CLOSED, -10, "connection closed")                                                        \
    X(ERR_NOT_FOUND, -11, "not found")                                                             \
    X(ERR_DTYPE, -12, "dtype not supported for this operation")                                    \
    X(ERR_RANGE, -13, "value out of range")                                                        \
    X(ERR_TOO_BIG, -14, "too big")                                                                 \
    X(ERR_SYSTEM, -15, "system call failed")                                                       \
    X(ERR_DENIED, -16, "authentication failed")                                                    \
    X(ERR_REFUSED, -17, "connection refused")                                                      \
    X(ERR_UNREACHABLE, -18, "host unreachable")                                                    \
    X(ERR_AGAIN, -19, "not done yet, try again")

typedef enum {
#define DL_STATUS_ENUM(name, value, msg) DL_##name = value,
    DL_STATUS_MAP(DL_STATUS_ENUM)
#undef DL_STATUS_ENUM
} dl_status_t;

/* A human message for a status ("timed out"). Never NULL. */
const char *dl_strerror(dl_status_t st);
/* The status's symbolic name ("DL_ERR_TIMEOUT"). Never NULL. */
const char *dl_status_name(dl_status_t st);

#endif
