/* Framed messages: a JSON object plus an optional blob (see frame.h).
 *
 *   +-----------+-----------+----------------+------------------+
 *   | body len  | JSON len  | JSON text      | blob             |
 *   | u32 BE    | u32 BE    | JSON len bytes | the rest of body |
 *   +-----------+-----------+----------------+------------------+
 *               \_____________________ body _____________________/
 *
 * Lengths arrive from the network before the bytes they describe, so every
 * length is checked against the limit and against the enclosing length before
 * anything is allocated from it. A bad frame is logged here, where its fault
 * is known precisely; callers only drop the connection. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distlab/frame.h"
#include "distlab/log.h"
#include "net/internal.h"

/* The body length and the JSON length. */
#define FRAME_HEADER_LEN 8u
/* Decoder buffers above this size are released once drained, so that one
 * large value does not pin memory for the rest of a connection. */
#define DECODER_KEEP_CAP (64u << 10)

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

void dl_frame_clear(dl_frame_t *f)
{
    json_decref(f->json);
    free(f->blob);
    f->json = NULL;
    f->blob = NULL;
    f->blob_len = 0;
}

/* ---- encoding ---- */

/* Writes the 8-byte header and the compact JSON text into one malloc'd
 * buffer; the blob is left for the caller to append or send beside it. */
static dl_status_t encode_head(const json_t *json, const void *blob, size_t blob_len,
                               uint8_t **head_p, size_t *head_len_p)
{
    if (!json_is_object(json)) {
        dl_log_error("frame header must be a JSON object");
        return DL_ERR_INVALID;
    }
    if (blob == NULL && blob_len > 0) {
        dl_log_error("frame blob of %zu bytes has no data", blob_len);
        return DL_ERR_INVALID;
    }
    size_t json_len = json_dumpb(json, NULL, 0, JSON_COMPACT);
    if (json_len == 0) {
        dl_log_error("frame header cannot be serialised as JSON");
        return DL_ERR_INVALID;
    }
    if (json_len > DL_FRAME_MAX || blob_len > DL_FRAME_MAX - 4 - json_len) {
        dl_log_error("frame of %zu JSON and %zu blob bytes exceeds the %u byte limit", json_len,
                     blob_len, DL_FRAME_MAX);
        return DL_ERR_TOO_BIG;
    }
    uint8_t *head = malloc(FRAME_HEADER_LEN + json_len);
    if (head == NULL)
        return DL_ERR_NOMEM;
    put_be32(head, (uint32_t)(4 + json_len + blob_len));
    put_be32(head + 4, (uint32_t)json_len);
    json_dumpb(json, (char *)head + FRAME_HEADER_LEN, json_len, JSON_COMPACT);
    *head_p = head;
    *head_len_p = FRAME_HEADER_LEN + json_len;
    return DL_OK;
}

dl_status_t dl_frame_encode(const json_t *json, const void *blob, size_t blob_len, uint8_t **buf_p,
                            size_t *len_p)
{
    uint8_t *head;
    size_t head_len;
    dl_status_t st = encode_head(json, blob, blob_len, &head, &head_len);
    if (st != DL_OK)
        return st;
    if (blob_len > 0) {
        uint8_t *buf = realloc(head, head_len + blob_len);
        if (buf == NULL) {
            free(head);
            return DL_ERR_NOMEM;
        }
        memcpy(buf + head_len, blob, blob_len);
        head = buf;
    }
    *buf_p = head;
    *len_p = head_len + blob_len;
    return DL_OK;
}

/* ---- validation shared by the decoder and the blocking receiver ---- */

static dl_status_t check_body_len(uint32_t body_len, size_t max_frame)
{
    if (body_len > max_frame) {
        dl_log_error("frame body of %u bytes exceeds the %zu byte limit", body_len, max_frame);
        return DL_ERR_TOO_BIG;
    }
    if (body_len < 4) {
        dl_log_error("frame body of %u bytes is too short to hold a JSON length", body_len);
        return DL_ERR_PROTOCOL;
    }
    return DL_OK;
}

static dl_status_t check_json_len(uint32_t json_len, uint32_t body_len)
{
    if (json_len > body_len - 4) {
        dl_log_error("frame JSON length %u runs past its %u byte body", json_len, body_len);
        return DL_ERR_PROTOCOL;
    }
    return DL_OK;
}

static dl_status_t parse_json(const uint8_t *text, size_t len, json_t **json_p)
{
    json_error_t err;
    json_t *json = json_loadb((const char *)text, len, 0, &err);
    if (json == NULL) {
        dl_log_error("frame JSON is invalid: %s", err.text);
        return DL_ERR_PROTOCOL;
    }
    if (!json_is_object(json)) {
        dl_log_error("frame JSON is not an object");
        json_decref(json);
        return DL_ERR_PROTOCOL;
    }
    *json_p = json;
    return DL_OK;
}

/* ---- incremental decoder ---- */

void dl_frame_decoder_init(dl_frame_decoder_t *d, size_t max_frame)
{
    d->buf = NULL;
    d->len = 0;
    d->cap = 0;
    d->max_frame = max_frame != 0 ? max_frame : DL_FRAME_MAX;
}

void dl_frame_decoder_free(dl_frame_decoder_t *d)
{
    free(d->buf);
    d->buf = NULL;
    d->len = 0;
    d->cap = 0;
}

dl_status_t dl_frame_decoder_feed(dl_frame_decoder_t *d, const void *data, size_t len)
{
    if (len == 0)
        return DL_OK;
    if (len > SIZE_MAX - d->len)
        return DL_ERR_TOO_BIG;
    size_t need = d->len + len;
    if (need > d->cap) {
        /* Grow with the bytes actually received, never with a length the
         * peer merely announced: a lying header cannot make us allocate. */
        size_t cap = d->cap != 0 ? d->cap : 4096;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        uint8_t *buf = realloc(d->buf, cap);
        if (buf == NULL)
            return DL_ERR_NOMEM;
        d->buf = buf;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, data, len);
    d->len = need;
    return DL_OK;
}

dl_status_t dl_frame_decoder_next(dl_frame_decoder_t *d, dl_frame_t *f)
{
    if (d->len < 4)
        return DL_ERR_AGAIN;
    uint32_t body_len = get_be32(d->buf);
    dl_status_t st = check_body_len(body_len, d->max_frame);
    if (st != DL_OK)
        return st;
    if (d->len < FRAME_HEADER_LEN)
        return DL_ERR_AGAIN;
    /* Reject a bad JSON length now rather than after the whole body came. */
    uint32_t json_len = get_be32(d->buf + 4);
    st = check_json_len(json_len, body_len);
    if (st != DL_OK)
        return st;
    size_t frame_len = 4 + (size_t)body_len;
    if (d->len < frame_len)
        return DL_ERR_AGAIN;

    json_t *json;
    st = parse_json(d->buf + FRAME_HEADER_LEN, json_len, &json);
    if (st != DL_OK)
        return st;
    size_t blob_len = body_len - 4 - json_len;
    uint8_t *blob = NULL;
    if (blob_len > 0) {
        blob = malloc(blob_len);
        if (blob == NULL) {
            json_decref(json);
            return DL_ERR_NOMEM;
        }
        memcpy(blob, d->buf + FRAME_HEADER_LEN + json_len, blob_len);
    }

    d->len -= frame_len;
    if (d->len > 0) {
        memmove(d->buf, d->buf + frame_len, d->len);
    } else if (d->cap > DECODER_KEEP_CAP) {
        free(d->buf);
        d->buf = NULL;
        d->cap = 0;
    }
    f->json = json;
    f->blob = blob;
    f->blob_len = blob_len;
    return DL_OK;
}

/* ---- blocking socket helpers ---- */

dl_status_t dl_frame_connect(const char *host, int port, int timeout_ms, int *fd_p)
{
    dl__deadline_t deadline = dl__net_deadline(timeout_ms);
    for (;;) {
        dl_status_t st = dl__net_connect(host, port, deadline, fd_p);
        if (st != DL_ERR_CLOSED)
            return st;
        if (dl__net_remaining_ms(deadline) == 0) {
            /* Say why the last attempt failed, not merely that it did. */
            if (errno == ECONNREFUSED)
                return DL_ERR_REFUSED;
            if (errno == EHOSTUNREACH || errno == ENETUNREACH)
                return DL_ERR_UNREACHABLE;
            return st;
        }
        usleep(20 * 1000);
    }
}

dl_status_t dl_frame_send_fd(int fd, const json_t *json, const void *blob, size_t blob_len,
                             int timeout_ms)
{
    dl__deadline_t deadline = dl__net_deadline(timeout_ms);
    uint8_t *head;
    size_t head_len;
    dl_status_t st = encode_head(json, blob, blob_len, &head, &head_len);
    if (st != DL_OK)
        return st;
    /* Send the blob from the caller's memory: values can be megabytes, and
     * one sendmsg of both pieces keeps small frames in one segment. */
    struct iovec iov[2] = {
        {.iov_base = head, .iov_len = head_len},
        {.iov_base = (void *)blob, .iov_len = blob_len},
    };
    st = dl__net_writev_all(fd, iov, blob_len > 0 ? 2 : 1, deadline);
    free(head);
    return st;
}

dl_status_t dl_frame_recv_fd(int fd, dl_frame_t *f, int timeout_ms)
{
    dl__deadline_t deadline = dl__net_deadline(timeout_ms);
    uint8_t head[FRAME_HEADER_LEN];
    dl_status_t st = dl__net_read_all(fd, head, sizeof(head), deadline);
    if (st != DL_OK)
        return st;
    uint32_t body_len = get_be32(head), json_len = get_be32(head + 4);
    st = check_body_len(body_len, DL_FRAME_MAX);
    if (st != DL_OK)
        return st;
    st = check_json_len(json_len, body_len);
    if (st != DL_OK)
        return st;

    uint8_t *text = malloc(json_len > 0 ? json_len : 1);
    if (text == NULL)
        return DL_ERR_NOMEM;
    st = dl__net_read_all(fd, text, json_len, deadline);
    json_t *json = NULL;
    if (st == DL_OK)
        st = parse_json(text, json_len, &json);
    free(text);
    if (st != DL_OK)
        return st;

    size_t blob_len = body_len - 4 - json_len;
    uint8_t *blob = NULL;
    if (blob_len > 0) {
        blob = malloc(blob_len);
        if (blob == NULL) {
            st = DL_ERR_NOMEM;
            goto err_decref_json;
        }
        st = dl__net_read_all(fd, blob, blob_len, deadline);
        if (st != DL_OK)
            goto err_free_blob;
    }
    f->json = json;
    f->blob = blob;
    f->blob_len = blob_len;
    return DL_OK;

err_free_blob:
    free(blob);
err_decref_json:
    json_decref(json);
    return st;
}

dl_status_t dl_frame_listen(const char *what, const char *host, int port, int backlog, int *fd_p,
                            int *port_p)
{
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC,
        .ai_socktype = SOCK_STREAM,
        .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
    };
    if (host != NULL && host[0] == '\0')
        host = NULL;
    struct addrinfo *res;
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai != 0) {
        dl_log_error("%s cannot resolve '%s': %s", what, host != NULL ? host : "*",
                     gai_strerror(gai));
        return DL_ERR_INVALID;
    }
    dl_status_t st = DL_ERR_SYSTEM;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        /* A restarted server must be able to rebind while old connections
         * linger in TIME_WAIT. */
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0 &&
            getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
            *port_p = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                     : ((struct sockaddr_in *)&ss)->sin_port);
            *fd_p = fd;
            st = DL_OK;
            break;
        }
        /* Only the last address's failure is reported. */
        if (ai->ai_next == NULL)
            dl_log_error("%s cannot listen on %s:%d: %m", what, host != NULL ? host : "*", port);
        close(fd);
    }
    freeaddrinfo(res);
    return st;
}
