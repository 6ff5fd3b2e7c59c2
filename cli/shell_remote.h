/* The remote side of `distlab shell --listen`: the token file, the listening
 * port and the join command it prints, restarting the world when a worker
 * joins (between lines), and --expect-ranks for scripts. */
#ifndef CLI_SHELL_REMOTE_H
#define CLI_SHELL_REMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "lab/remote/remote.h"
#include "lab/shell/shell.h"

typedef struct {
    lab_remote_t *remote;
    lab_shell_t *sh;
    uv_timer_t timer; /* waits for the shell to be idle, and for --expect-ranks */
    bool timer_open;
    bool rebuild_pending;
    /* --expect-ranks */
    int expect;
    uint64_t deadline_ms;
    double expect_timeout_s;
    void (*expected)(void *arg, bool ok);
    void *expected_arg;
    /* Asynchronous output goes around the prompt. */
    void (*before_output)(void *arg);
    void (*after_output)(void *arg);
    void *output_arg;
    char token_file[1024];
    bool own_token_file; /* made by us, removed at the end */
    char join[1400];     /* the command a worker runs */
} cli_remote_t;

/* Reads the token (token_file, or a fresh one in a new file), listens on
 * listen ("HOST:PORT" or "PORT") and prints how to join. Returns 0, or an
 * exit code after printing the error. The output hooks may be NULL. */
int cli_remote_start(cli_remote_t *r, uv_loop_t *loop, const char *listen, const char *token_file,
                     void (*before)(void *), void (*after)(void *), void *arg);
void cli_remote_attach(cli_remote_t *r, lab_shell_t *sh);
/* Calls expected(arg, true) once the world has n ranks and they are ready,
 * or expected(arg, false) after timeout_s, having said so. */
void cli_remote_expect(cli_remote_t *r, int n, double timeout_s, void (*expected)(void *, bool),
                       void *arg);
/* Before a line: a worker that joined since the last one enters the world
 * now, so that the line runs on it. */
void cli_remote_sync(cli_remote_t *r);
/* After lab_shell_close: tells the workers the session is over. */
void cli_remote_close(cli_remote_t *r);

#endif
