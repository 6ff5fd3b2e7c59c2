/* See shell_remote.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "distlab/log.h"
#include "cli/shell_remote.h"
#include "lab/ctrl/link.h"

#define POLL_MS 50

static void say(cli_remote_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(cli_remote_t *r, const char *fmt, ...)
{
    if (r->before_output != NULL)
        r->before_output(r->output_arg);
    va_list ap;
    va_start(ap, fmt);
    fputs("distlab: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    if (r->after_output != NULL)
        r->after_output(r->output_arg);
}

static void say_line(void *arg, const char *line)
{
    say(arg, "%s", line);
}

/* Runs every POLL_MS while there is something to wait for. */
static void tick(uv_timer_t *t)
{
    cli_remote_t *r = t->data;
    if (r->sh == NULL)
        return;
    /* A worker joined: restart the world between lines, never under one. */
    if (r->rebuild_pending && lab_shell_idle(r->sh)) {
        r->rebuild_pending = false;
        lab_shell_rebuild(r->sh);
    }
    if (r->expected != NULL) {
        int have = lab_shell_world_size(r->sh);
        bool ok = have >= r->expect && lab_shell_ready(r->sh) && !r->rebuild_pending;
        if (ok || uv_now(t->loop) >= r->deadline_ms) {
            void (*expected)(void *, bool) = r->expected;
            r->expected = NULL;
            if (!ok)
                say(r,
                    "--expect-ranks %d: the world has %d rank%s%s after %g s (%d from %d "
                    "worker%s); workers join with: %s",
                    r->expect, have, have == 1 ? "" : "s",
                    have >= r->expect ? " but they are not ready" : "", r->expect_timeout_s,
                    lab_remote_nranks(r->remote), lab_remote_nworkers(r->remote),
                    lab_remote_nworkers(r->remote) == 1 ? "" : "s", r->join);
            expected(r->expected_arg, ok);
        }
    }
    if (!r->rebuild_pending && r->expected == NULL)
        uv_timer_stop(t);
}

static void on_change(void *arg)
{
    cli_remote_t *r = arg;
    r->rebuild_pending = true;
    tick(&r->timer);
    if (r->rebuild_pending)
        uv_timer_start(&r->timer, tick, POLL_MS, POLL_MS);
}

int cli_remote_start(cli_remote_t *r, uv_loop_t *loop, const char *listen, const char *token_file,
                     void (*before)(void *), void (*after)(void *), void *arg)
{
    memset(r, 0, sizeof(*r));
    r->before_output = before;
    r->after_output = after;
    r->output_arg = arg;
    char host[256];
    int port = 0;
    if (!lab_parse_hostport(listen, host, sizeof(host), &port)) {
        cli_error("--listen takes PORT, HOST:PORT or [V6]:PORT (e.g. 7000, 0.0.0.0:7000), not '%s'",
                  listen);
        return CLI_USAGE_ERROR;
    }
    char err[600], fresh[DL_AUTH_HEX_LEN];
    char *token = NULL;
    if (token_file != NULL) {
        if (dl_auth_read_token_file(token_file, &token, err, sizeof(err)) != DL_OK) {
            fprintf(stderr, "distlab: %s\n", err);
            return 1;
        }
        snprintf(r->token_file, sizeof(r->token_file), "%s", token_file);
    } else {
        if (lab_token_file_create(r->token_file, sizeof(r->token_file), fresh, err, sizeof(err)) !=
            DL_OK) {
            fprintf(stderr, "distlab: cannot make a token file: %s\n", err);
            return 1;
        }
        r->own_token_file = true;
        token = strdup(fresh);
    }
    lab_remote_opts_t ro = {.host = host,
                            .port = port,
                            .token = token,
                            .on_change = on_change,
                            .say = say_line,
                            .arg = r};
    unsigned said = dl_log_errors();
    dl_status_t st = token != NULL ? lab_remote_start(loop, &ro, &r->remote) : DL_ERR_NOMEM;
    free(token);
    if (st != DL_OK) {
        if (dl_log_errors() == said) /* else the cause was said, in one line */
            fprintf(stderr, "distlab: cannot listen for workers on %s\n", listen);
        if (r->own_token_file)
            unlink(r->token_file);
        return 1;
    }
    uv_timer_init(loop, &r->timer);
    r->timer.data = r;
    r->timer_open = true;
    lab_remote_join_command(r->remote, r->token_file, r->join, sizeof(r->join));
    bool loopback =
        strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strcmp(host, "localhost") == 0;
    fprintf(stderr,
            "distlab: listening for workers on %s%s%s:%d%s; to add K ranks, run where they "
            "should live%s:\n  %s --nproc K\n",
            strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
            lab_remote_port(r->remote),
            loopback ? " (this host only: --listen 0.0.0.0:PORT opens it to others)" : "",
            r->own_token_file ? " (with a copy of the token file, mode 600)" : "", r->join);
    fflush(stderr);
    return 0;
}

void cli_remote_attach(cli_remote_t *r, lab_shell_t *sh)
{
    r->sh = sh;
}

void cli_remote_expect(cli_remote_t *r, int n, double timeout_s, void (*expected)(void *, bool),
                       void *arg)
{
    r->expect = n;
    r->expect_timeout_s = timeout_s;
    r->expected = expected;
    r->expected_arg = arg;
    r->deadline_ms = uv_now(r->timer.loop) + (uint64_t)(timeout_s * 1000);
    uv_timer_start(&r->timer, tick, 0, POLL_MS);
}

void cli_remote_sync(cli_remote_t *r)
{
    if (r->sh != NULL && r->rebuild_pending && lab_shell_idle(r->sh)) {
        r->rebuild_pending = false;
        lab_shell_rebuild(r->sh);
    }
}

void cli_remote_close(cli_remote_t *r)
{
    if (r->remote == NULL)
        return;
    r->sh = NULL;
    r->expected = NULL;
    if (r->timer_open) {
        uv_timer_stop(&r->timer);
        uv_close((uv_handle_t *)&r->timer, NULL);
        r->timer_open = false;
    }
    lab_remote_close(r->remote);
    r->remote = NULL;
    if (r->own_token_file)
        unlink(r->token_file);
}
