#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "distlab/cuda.h"
#include "world.h"

int world_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int world_run(int n, world_fn_t fn, void *arg, double timeout_s)
{
    return world_run_setup(n, NULL, fn, arg, timeout_s);
}

int world_run_setup(int n, world_setup_fn_t setup, world_fn_t fn, void *arg, double timeout_s)
{
    static int worlds;
    int port = world_free_port();
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    char buf[64];
    fflush(NULL);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            snprintf(buf, sizeof(buf), "%d", r);
            setenv("RANK", buf, 1);
            snprintf(buf, sizeof(buf), "%d", n);
            setenv("WORLD_SIZE", buf, 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            snprintf(buf, sizeof(buf), "%d", port);
            setenv("MASTER_PORT", buf, 1);
            snprintf(buf, sizeof(buf), "t%d-%d", (int)getppid(), worlds);
            setenv("DISTLAB_WORLD", buf, 1);
            unsetenv("DISTLAB_STORE");
            setenv("DISTLAB_ARENA_MB", "64", 1);
            if (setup != NULL)
                setup(r, arg);
            /* As a rank does first (lab_rank_main), once its environment
             * (DISTLAB_SHM_FENCE) is set. */
            dl_comm_prepare_process();
            dl_comm_t *comm = NULL;
            if (dl_comm_init_env(NULL, &comm) != DL_OK)
                _exit(setup != NULL ? fn(NULL, arg) : 3);
            int rc = fn(comm, arg);
            dl_comm_destroy(comm);
            _exit(rc);
        }
    }
    worlds++;
    int failed = 0, left = n;
    double deadline = now() + timeout_s;
    while (left > 0) {
        int status = 0;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            for (int r = 0; r < n; r++)
                if (pids[r] == p) {
                    pids[r] = 0;
                    left--;
                    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "rank %d ended with %s %d\n", r,
                                WIFEXITED(status) ? "code" : "signal",
                                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                        failed++;
                    }
                }
            continue;
        }
        if (now() > deadline) {
            for (int r = 0; r < n; r++)
                if (pids[r] > 0)
                    kill(pids[r], SIGKILL);
            while (waitpid(-1, NULL, 0) > 0)
                ;
            free(pids);
            return -1;
        }
        usleep(2000);
    }
    free(pids);
    return failed;
}

int world_gpu_count(char *why, size_t cap)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char buf[256] = "";
        int n = dl_cuda_device_count(buf, sizeof(buf));
        dprintf(fds[1], "%d %s", n, buf);
        _exit(0);
    }
    close(fds[1]);
    char out[300] = "";
    size_t len = 0;
    ssize_t r;
    while (len < sizeof(out) - 1 && (r = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)r;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    const char *sp = strchr(out, ' ');
    snprintf(why, cap, "%s", sp != NULL ? sp + 1 : "the probe failed");
    return atoi(out);
}
