/* A script's lines, read one at a time as the shell asks for them: from
 * -c's text, a file, or standard input when it is not a terminal. A pipe is
 * watched on the shell's libuv loop, so the ranks' events keep arriving while
 * the script waits for its next line and a program that pipes commands in
 * sees each one run as soon as it is written. Memory is bounded by the
 * longest allowed line, whatever the input. */
#ifndef CLI_SCRIPT_INPUT_H
#define CLI_SCRIPT_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

/* The longest line a script may have. Longer input is not a script (a
 * binary file, /dev/zero), so it ends the script. */
#define CLI_SCRIPT_MAX_LINE ((size_t)1 << 20)

typedef enum {
    CLI_SCRIPT_LINE,     /* *line_p is the next line */
    CLI_SCRIPT_WAIT,     /* nothing yet: the ready callback runs when there is */
    CLI_SCRIPT_EOF,      /* no more lines */
    CLI_SCRIPT_BAD_LINE, /* this line is unusable (error_p says why); the next may be fine */
    CLI_SCRIPT_FATAL,    /* the input cannot be read on (error_p says why) */
} cli_script_read_t;

typedef struct cli_script_input {
    int fd; /* -1 for -c text */
    char *buf;
    size_t start, len, cap;
    bool eof;
    size_t lineno; /* of the line last returned */
    /* Pipes, terminals and sockets are watched; files are read as needed. */
    uv_poll_t poll;
    bool pollable, polling, readable;
    void (*ready)(void *arg);
    void *arg;
    char error[128];
} cli_script_input_t;

/* From text (-c): the lines of the string, a copy of it is kept. */
int cli_script_input_text(cli_script_input_t *in, const char *text);
/* From a descriptor (a file's or standard input); ready(arg) runs on loop
 * when a line that was waited for may have come. The descriptor is not
 * closed by cli_script_input_close. */
int cli_script_input_fd(cli_script_input_t *in, uv_loop_t *loop, int fd, void (*ready)(void *arg),
                        void *arg);
/* The next line (a NUL-terminated string without its "\n" or "\r\n", valid
 * until the next call), or why there is none. */
cli_script_read_t cli_script_input_next(cli_script_input_t *in, const char **line_p,
                                        const char **error_p);
/* Stops watching and frees; the loop must run for the watcher to close. */
void cli_script_input_close(cli_script_input_t *in);

#endif
