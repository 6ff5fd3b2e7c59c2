/* Reading a script a line at a time (see script_input.h). */
#include "cli/script_input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIRST_CAP ((size_t)64 << 10)

int cli_script_input_text(cli_script_input_t *in, const char *text)
{
    memset(in, 0, sizeof(*in));
    in->fd = -1;
    in->len = strlen(text);
    in->cap = in->len + 1;
    in->buf = malloc(in->cap);
    if (in->buf == NULL)
        return -1;
    memcpy(in->buf, text, in->len + 1);
    in->eof = true;
    return 0;
}

static void on_readable(uv_poll_t *h, int status, int events)
{
    (void)events;
    cli_script_input_t *in = h->data;
    uv_poll_stop(h);
    in->polling = false;
    /* An error on the descriptor (a hung-up pipe) shows up in read(). */
    (void)status;
    in->readable = true;
    in->ready(in->arg);
}

int cli_script_input_fd(cli_script_input_t *in, uv_loop_t *loop, int fd, void (*ready)(void *arg),
                        void *arg)
{
    memset(in, 0, sizeof(*in));
    in->fd = fd;
    in->ready = ready;
    in->arg = arg;
    in->cap = FIRST_CAP;
    in->buf = malloc(in->cap);
    if (in->buf == NULL)
        return -1;
    /* epoll refuses regular files (and some devices, /dev/zero): those never
     * block long, so they are read when a line is needed. */
    in->pollable = uv_poll_init(loop, &in->poll, fd) == 0;
    in->poll.data = in;
    return 0;
}

/* Makes room to read: the consumed part goes, the buffer grows up to the
 * longest line. Returns the bytes that may be read now. */
static size_t make_room(cli_script_input_t *in)
{
    if (in->start > 0) {
        memmove(in->buf, in->buf + in->start, in->len - in->start);
        in->len -= in->start;
        in->start = 0;
    }
    size_t limit = CLI_SCRIPT_MAX_LINE + 2; /* the line, its "\n", a NUL */
    if (in->cap - in->len - 1 < in->cap / 4 && in->cap < limit) {
        size_t cap = in->cap * 2 < limit ? in->cap * 2 : limit;
        char *b = realloc(in->buf, cap);
        if (b != NULL) {
            in->buf = b;
            in->cap = cap;
        }
    }
    return in->cap - in->len - 1;
}

/* One read(2). Returns false with the error set when the input is broken. */
static bool fill(cli_script_input_t *in)
{
    size_t room = make_room(in);
    if (room == 0) {
        snprintf(in->error, sizeof(in->error), "out of memory for a line");
        return false;
    }
    ssize_t n;
    do
        n = read(in->fd, in->buf + in->len, room);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true; /* nothing after all: the watcher waits for more */
    if (n < 0) {
        snprintf(in->error, sizeof(in->error), "cannot read: %s", strerror(errno));
        return false;
    }
    if (n == 0)
        in->eof = true;
    in->len += (size_t)n;
    return true;
}

cli_script_read_t cli_script_input_next(cli_script_input_t *in, const char **line_p,
                                        const char **error_p)
{
    *error_p = in->error;
    for (;;) {
        char *begin = in->buf + in->start;
        size_t avail = in->len - in->start;
        char *nl = memchr(begin, '\n', avail);
        size_t n = nl != NULL ? (size_t)(nl - begin) : avail;
        if (n > CLI_SCRIPT_MAX_LINE) {
            in->lineno++;
            snprintf(in->error, sizeof(in->error),
                     "line %zu is longer than %zu bytes; the input is not a script", in->lineno,
                     CLI_SCRIPT_MAX_LINE);
            return CLI_SCRIPT_FATAL;
        }
        if (nl != NULL || (in->eof && avail > 0)) {
            in->start += n + (nl != NULL);
            in->lineno++;
            begin[n] = '\0'; /* over the "\n", or the spare byte past the end */
            if (memchr(begin, '\0', n) != NULL) {
                snprintf(in->error, sizeof(in->error), "line %zu contains a NUL byte", in->lineno);
                return CLI_SCRIPT_BAD_LINE;
            }
            if (n > 0 && begin[n - 1] == '\r')
                begin[n - 1] = '\0';
            *line_p = begin;
            return CLI_SCRIPT_LINE;
        }
        if (in->eof)
            return CLI_SCRIPT_EOF;
        if (in->pollable && !in->readable) {
            if (!in->polling && uv_poll_start(&in->poll, UV_READABLE, on_readable) == 0)
                in->polling = true;
            return CLI_SCRIPT_WAIT;
        }
        in->readable = false;
        if (!fill(in))
            return CLI_SCRIPT_FATAL;
    }
}

static void free_input(uv_handle_t *h)
{
    cli_script_input_t *in = h->data;
    free(in->buf);
    in->buf = NULL;
}

void cli_script_input_close(cli_script_input_t *in)
{
    if (in->pollable) {
        in->pollable = false;
        uv_close((uv_handle_t *)&in->poll, free_input);
        return;
    }
    free(in->buf);
    in->buf = NULL;
}
