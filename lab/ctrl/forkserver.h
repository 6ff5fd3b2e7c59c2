/* The fork server: a copy of the distlab process made at the very start of
 * `distlab run` and `distlab bench`, before any thread, loop or socket, that
 * forks local ranks on request. A rank so started is a fork of a process that
 * has already loaded and relocated distlab's libraries, so it skips exec and
 * the dynamic loader, about half of a rank's start-up. See forkserver.c. */
#ifndef LAB_FORKSERVER_H
#define LAB_FORKSERVER_H

#include <stdbool.h>
#include <sys/types.h>

/* Forks the server, which first runs prepare() (NULL: nothing), once for
 * every rank it will start: what each rank would otherwise do on its own;
 * then its children run entry() and exit with its value. Call from main()
 * while the process has one thread and no open files but the standard
 * three. Without it (it failed, or was never started) ranks are spawned by
 * exec as before. */
void lab_forkserver_start(void (*prepare)(void), int (*entry)(void));
bool lab_forkserver_running(void);

/* Starts a rank with environment env (NULL-terminated), its standard output
 * and error on err_fd and its standard input on /dev/null, in a session of
 * its own. On success *pid_p is its pid and *status_fd_p a pipe (close it)
 * that receives the rank's wait status (an int) once it has exited, then
 * end-of-file. Returns 0 or a negative errno, and the caller spawns that
 * rank by exec. When the server failed (rather than its fork) it is given
 * up, and callers spawn by exec from then on; the ranks it had started run
 * on. */
int lab_forkserver_spawn(char **env, int err_fd, pid_t *pid_p, int *status_fd_p);

#endif
