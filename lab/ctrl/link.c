/* See link.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/auth.h"
#include "distlab/log.h"
#include "lab/ctrl/link.h"

struct lab_server {
    dl_frame_server_t *fs;
    lab_link_cbs_t cbs;
    void *arg;
    void (*done)(void *arg);
    void *done_arg;
};

/* ---- the frame server's callbacks, passed on ---- */

static bool on_auth(dl_frame_conn_t *c, const json_t *auth, json_t *welcome, char *why, size_t cap)
{
    lab_server_t *s = dl_frame_conn_arg(c);
    return s->cbs.on_auth == NULL || s->cbs.on_auth(c, auth, welcome, why, cap);
}

static void on_frame(dl_frame_conn_t *c, dl_frame_t *f)
{
    lab_server_t *s = dl_frame_conn_arg(c);
    if (s->cbs.on_frame != NULL)
        s->cbs.on_frame(c, f);
}

static void on_close(dl_frame_conn_t *c, const char *why)
{
    lab_server_t *s = dl_frame_conn_arg(c);
    if (s->cbs.on_close != NULL)
        s->cbs.on_close(c, why);
}

static void on_refused(void *arg, const char *line)
{
    lab_server_t *s = arg;
    if (s->cbs.on_refused != NULL)
        s->cbs.on_refused(s->arg, line);
    else
        dl_log_warn("%s", line);
}

static void frame_server_closed(void *arg)
{
    lab_server_t *s = arg;
    void (*done)(void *) = s->done;
    void *done_arg = s->done_arg;
    free(s);
    if (done != NULL)
        done(done_arg);
}

/* ---- the server ---- */

dl_status_t lab_server_start(uv_loop_t *loop, const lab_server_opts_t *opts,
                             const lab_link_cbs_t *cbs, void *arg, lab_server_t **s_p)
{
    if (opts->token == NULL || strlen(opts->token) < DL_AUTH_TOKEN_MIN)
        return DL_ERR_INVALID;
    lab_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return DL_ERR_NOMEM;
    s->cbs = *cbs;
    s->arg = arg;
    dl_frame_server_opts_t fo = {
        .name = "the shell",
        .host = opts->host,
        .port = opts->port,
        .token = opts->token,
        .max_frame = opts->max_frame,
    };
    dl_frame_server_cbs_t fc = {
        .on_auth = on_auth,
        .on_frame = on_frame,
        .on_close = on_close,
        .on_refused = on_refused,
    };
    dl_status_t st = dl_frame_server_start(loop, &fo, &fc, s, &s->fs);
    if (st != DL_OK) {
        free(s);
        return st;
    }
    *s_p = s;
    return DL_OK;
}

int lab_server_port(const lab_server_t *s)
{
    return dl_frame_server_port(s->fs);
}

void lab_server_close(lab_server_t *s, void (*done)(void *arg), void *arg)
{
    s->done = done;
    s->done_arg = arg;
    dl_frame_server_close(s->fs, frame_server_closed, s);
}

/* ---- links ---- */

void *lab_link_arg(const lab_link_t *l)
{
    return ((lab_server_t *)dl_frame_conn_arg(l))->arg;
}

void *lab_link_data(const lab_link_t *l)
{
    return dl_frame_conn_data(l);
}

void lab_link_set_data(lab_link_t *l, void *data)
{
    dl_frame_conn_set_data(l, data);
}

uint64_t lab_link_last_rx(const lab_link_t *l)
{
    return dl_frame_conn_last_rx(l);
}

const char *lab_link_peer(const lab_link_t *l)
{
    return dl_frame_conn_peer(l);
}

const char *lab_link_local_ip(const lab_link_t *l)
{
    return dl_frame_conn_local_ip(l);
}

dl_status_t lab_link_send(lab_link_t *l, const json_t *msg, const void *blob, size_t len)
{
    return dl_frame_conn_send(l, msg, blob, len);
}

void lab_link_close(lab_link_t *l)
{
    dl_frame_conn_close(l);
}

/* ---- addresses ---- */

bool lab_parse_hostport(const char *s, char *host, size_t cap, int *port_p)
{
    const char *port_s;
    if (s == NULL || *s == '\0')
        return false;
    if (strspn(s, "0123456789") == strlen(s)) {
        snprintf(host, cap, "127.0.0.1");
        port_s = s;
    } else if (s[0] == '[') {
        const char *end = strstr(s, "]:");
        if (end == NULL || end == s + 1 || (size_t)(end - s - 1) >= cap)
            return false;
        snprintf(host, cap, "%.*s", (int)(end - s - 1), s + 1);
        port_s = end + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon == NULL || colon == s || memchr(s, ':', (size_t)(colon - s)) != NULL ||
            (size_t)(colon - s) >= cap)
            return false;
        snprintf(host, cap, "%.*s", (int)(colon - s), s);
        port_s = colon + 1;
    }
    if (*port_s == '\0' || strspn(port_s, "0123456789") != strlen(port_s) || strlen(port_s) > 5)
        return false;
    int port = atoi(port_s);
    if (port > 65535)
        return false;
    if (strcmp(host, "*") == 0)
        snprintf(host, cap, "0.0.0.0");
    *port_p = port;
    return true;
}

bool lab_host_is_wildcard(const char *host)
{
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 || strcmp(host, "*") == 0;
}
