/* Guarding listeners against unauthenticated connections (see guard.h). */
#include "distlab/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distlab/log.h"
#include "net/internal.h"

#define GUARD_CAP_MIN 16
#define GUARD_CAP_MAX 1024

dl_status_t dl_guard_env_auth_timeout(int *ms_p, char *why, size_t cap)
{
    *ms_p = DL_GUARD_AUTH_TIMEOUT_MS;
    const char *env = getenv("DISTLAB_AUTH_TIMEOUT");
    if (env == NULL || env[0] == '\0')
        return DL_OK;
    char *end = NULL;
    errno = 0;
    double v = strtod(env, &end);
    if (errno != 0 || end == env || *end != '\0' || !isfinite(v) ||
        !(v >= DL_GUARD_AUTH_TIMEOUT_MIN_S) || v > DL_GUARD_AUTH_TIMEOUT_MAX_S) {
        char q[DL_QUOTE_BUF];
        snprintf(why, cap,
                 "DISTLAB_AUTH_TIMEOUT='%s' is not a timeout: expected a number of seconds "
                 "from %g to %d, such as 10 or 2.5",
                 dl_quote(env, q, sizeof(q)), DL_GUARD_AUTH_TIMEOUT_MIN_S,
                 DL_GUARD_AUTH_TIMEOUT_MAX_S);
        return DL_ERR_INVALID;
    }
    *ms_p = (int)(v * 1000);
    return DL_OK;
}

int dl_guard_auth_timeout_ms(void)
{
    char why[DL_QUOTE_BUF + 128];
    int ms;
    dl_guard_env_auth_timeout(&ms, why, sizeof(why));
    return ms;
}

void dl_guard_init(dl_guard_t *g)
{
    g->last_drop_ms = 0;
    g->quiet_ms = dl_guard_auth_timeout_ms();
    /* An eighth of the descriptors per listener leaves most of them to the
     * connections that authenticated, even with three listeners flooded. */
    struct rlimit rl;
    rlim_t lim = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        lim = rl.rlim_cur == RLIM_INFINITY ? (rlim_t)GUARD_CAP_MAX * 8 : rl.rlim_cur;
    rlim_t cap = lim / 8;
    g->cap = cap < GUARD_CAP_MIN ? GUARD_CAP_MIN : cap > GUARD_CAP_MAX ? GUARD_CAP_MAX : (int)cap;
    g->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void dl_guard_fini(dl_guard_t *g)
{
    if (g->spare_fd >= 0)
        close(g->spare_fd);
    g->spare_fd = -1;
}

int dl_guard_cap(const dl_guard_t *g)
{
    return g->cap;
}

bool dl_guard_should_say(dl_guard_t *g)
{
    int64_t now = dl__net_now_ms();
    bool say = g->last_drop_ms == 0 || now - g->last_drop_ms >= g->quiet_ms;
    g->last_drop_ms = now;
    return say;
}

int dl_guard_shed(dl_guard_t *g, int listen_fd)
{
    if (g->spare_fd < 0)
        g->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (g->spare_fd < 0)
        return 0;
    close(g->spare_fd);
    g->spare_fd = -1;
    int n = 0;
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            close(fd);
            n++;
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        break;
    }
    g->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return n;
}
