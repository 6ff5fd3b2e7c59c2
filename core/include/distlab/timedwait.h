/* Waiting on a condition variable for at most a number of milliseconds.
 * Every wait in distlab has a timeout; this is the one place that turns
 * "at most ms from now" into the absolute time pthread asks for. */
#ifndef DISTLAB_TIMEDWAIT_H
#define DISTLAB_TIMEDWAIT_H

#include <pthread.h>
#include <time.h>

/* pthread_cond_timedwait until ms milliseconds from now on clock, which
 * must be the clock the condition variable was made with
 * (pthread_condattr_setclock; CLOCK_REALTIME when none was set). Returns
 * what pthread_cond_timedwait returns (0, or ETIMEDOUT). */
int dl_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clock, long ms);

#endif
