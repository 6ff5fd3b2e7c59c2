/* Framed messages, the wire format of the control plane and the store.
 *
 * A frame is: u32 body length (big endian), then the body: u32 JSON length
 * (big endian), the JSON text (an object), then an optional binary blob that
 * fills the rest of the body. A frame larger than DL_FRAME_MAX, a JSON length
 * past the body, or JSON that is not an object is a protocol error: the
 * receiver drops the connection rather than guess. */
#ifndef DISTLAB_FRAME_H
#define DISTLAB_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "distlab/status.h"

#define DL_FRAME_MAX (256u << 20)

typedef struct {
    json_t *json;  /* owned by the frame */
    uint8_t *blob; /* malloc'd, may be NULL */
    size_t blob_len;
} dl_frame_t;

void dl_frame_clear(dl_frame_t *f);

/* Encodes a frame into one malloc'd buffer. */
dl_status_t dl_frame_encode(const json_t *json, const void *blob, size_t blob_len, uint8_t **buf_p,
                            size_t *len_p);

/* Incremental decoder for stream sockets (libuv reads arrive in pieces). */
typedef struct {
    uint8_t *buf;
    size_t len, cap;
    size_t max_frame; /* defaults to DL_FRAME_MAX when 0 */
} dl_frame_decoder_t;

void dl_frame_decoder_init(dl_frame_decoder_t *d, size_t max_frame);
void dl_frame_decoder_free(dl_frame_decoder_t *d);
/* Appends bytes. */
dl_status_t dl_frame_decoder_feed(dl_frame_decoder_t *d, const void *data, size_t len);
/* Takes the next complete frame: DL_OK with *f filled, DL_ERR_AGAIN when
 * no complete frame is buffered yet, DL_ERR_PROTOCOL/DL_ERR_TOO_BIG on a bad
 * frame (the stream is then unusable). */
dl_status_t dl_frame_decoder_next(dl_frame_decoder_t *d, dl_frame_t *f);

/* Opens a blocking TCP connection to host:port for framed messages,
 * retrying refusals until timeout_ms (the listener may not be up yet). When
 * it gives up, the status says why the last attempt failed:
 * DL_ERR_REFUSED (nobody listens), DL_ERR_UNREACHABLE, DL_ERR_TIMEOUT (no
 * answer at all) or DL_ERR_CLOSED (the peer reset the connection). */
dl_status_t dl_frame_connect(const char *host, int port, int timeout_ms, int *fd_p);

/* Opens a listening TCP socket on host:port (host NULL or "": every
 * address; port 0: a free port) with plain system calls, so that the usual
 * failures (a taken port, an unknown host) happen before any libuv handle
 * exists. *port_p gets the port it listens on. Failures are logged, naming
 * what listens ("store server"). */
dl_status_t dl_frame_listen(const char *what, const char *host, int port, int backlog, int *fd_p,
                            int *port_p);

/* Blocking helpers for a plain socket, with a timeout in milliseconds
 * (negative: wait forever). DL_ERR_CLOSED when the peer closed. */
dl_status_t dl_frame_send_fd(int fd, const json_t *json, const void *blob, size_t blob_len,
                             int timeout_ms);
dl_status_t dl_frame_recv_fd(int fd, dl_frame_t *f, int timeout_ms);

#endif
