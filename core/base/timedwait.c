/* Condition-variable waits bounded in milliseconds (distlab/timedwait.h). */
#include "distlab/timedwait.h"

int dl_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, clockid_t clock, long ms)
{
    struct timespec until;
    clock_gettime(clock, &until);
    if (ms < 0)
        ms = 0;
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(cv, mu, &until);
}
