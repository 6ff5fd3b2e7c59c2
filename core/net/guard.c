/* Guarding listeners against unauthenticated connections (see guard.h). */
#include "distlab/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distlab/env.h"
#include "distlab/log.h"
#include "net/internal.h"

#define GUARD_CAP_MIN 16
#define GUARD_CAP_MAX 1024

dl_status_t dl_guard_env_auth_timeout(int *ms_p, char *why, size_t cap)
{
    double s = 0;
    dl_status_t st = dl_env_seconds("DISTLAB_AUTH_TIMEOUT", DL_GUARD_AUTH_TIMEOUT_MIN_S,
                                    DL_GUARD_AUTH_TIMEOUT_MAX_S, "10 or 2.5", &s, why, cap);
    *ms_p = st == DL_OK && s > 0 ? (int)(s * 1000) : DL_GUARD_AUTH_TIMEOUT_MS;
    return st;
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
    g->deadline_ms = dl_guard_auth_timeout_ms();
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
    bool say = g->last_drop_ms == 0 || now - g->last_drop_ms >= g->deadline_ms;
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
