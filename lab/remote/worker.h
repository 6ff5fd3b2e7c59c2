/* `distlab worker`: adds ranks on this host to a shell on another one.
 *
 * It joins the shell's listening port (proving that it holds the session's
 * token, lab/remote/remote.h has the protocol), then starts its ranks whenever the
 * shell starts a world, relays how each one ends, and kills one when asked.
 * If the shell goes away, it kills its ranks and exits with a message; if the
 * worker dies, its ranks die with it (PR_SET_PDEATHSIG). */
#ifndef LAB_WORKER_H
#define LAB_WORKER_H

typedef struct {
    const char *join;       /* HOST:PORT of the shell */
    const char *token_file; /* the session's token */
    int nproc;              /* ranks on this host */
    double connect_timeout_s;
} lab_worker_opts_t;

/* Runs until the shell ends the session (0), goes away or refuses us (1),
 * or a signal stops us (128 + the signal). */
int lab_worker_run(const lab_worker_opts_t *opts);

#endif
