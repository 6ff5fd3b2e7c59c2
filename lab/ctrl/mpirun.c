/* See mpirun.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/ctrl/mpirun.h"

#define MAX_ARGS (16 + 2 * LAB_SPAWN_MAX_VARS)

/* mpirun's arguments before the program: the flags a user on this machine
 * would need, and -x for each of the session's variables. */
static int build_args(const lab_mpirun_opts_t *o, char vars[][LAB_SPAWN_VAR_LEN], int n_vars,
                      char names[][64], const char **args)
{
    static char np[16];
    int n = 0;
    const char *mpirun = getenv("DISTLAB_MPIRUN");
    args[n++] = mpirun != NULL && mpirun[0] != '\0' ? mpirun : "mpirun";
    /* Open MPI refuses root unless told; a container's root is common. */
    if (geteuid() == 0)
        args[n++] = "--allow-run-as-root";
    /* More ranks than cores is normal in a lab; a hostfile's slots decide
     * for themselves. Binding to cores would pile ranks onto few cores. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (o->hostfile == NULL && o->hosts == NULL && cores > 0 && o->np > cores)
        args[n++] = "--oversubscribe";
    args[n++] = "--bind-to";
    args[n++] = "none";
    snprintf(np, sizeof(np), "%d", o->np);
    args[n++] = "-np";
    args[n++] = np;
    if (o->hostfile != NULL) {
        args[n++] = "--hostfile";
        args[n++] = o->hostfile;
    }
    if (o->hosts != NULL) {
        args[n++] = "--host";
        args[n++] = o->hosts;
    }
    for (int i = 0; i < n_vars; i++) {
        const char *eq = strchr(vars[i], '=');
        snprintf(names[i], 64, "%.*s", eq != NULL ? (int)(eq - vars[i]) : 0, vars[i]);
        args[n++] = "-x";
        args[n++] = names[i];
    }
    return n;
}

int lab_mpirun_spawn(uv_loop_t *loop, uv_process_t *proc, const char *exe,
                     const lab_mpirun_opts_t *o, uv_exit_cb exit_cb)
{
    char vars[LAB_SPAWN_MAX_VARS][LAB_SPAWN_VAR_LEN];
    char names[LAB_SPAWN_MAX_VARS][64];
    int n_vars = 0;
    lab_rank_env_t e = o->env;
    e.launcher_numbers = true;
    e.world_size = o->np;
    char **env = lab_spawn_env(&e, vars, &n_vars);
    if (env == NULL)
        return UV_ENOMEM;
    const char *args[MAX_ARGS + 3];
    int n = build_args(o, vars, n_vars, names, args);
    args[n++] = exe;
    args[n++] = "rank";
    args[n] = NULL;

    uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2}};
    if (o->output != NULL) { /* ranks print nothing on stdout; mpirun talks on stderr */
        stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
        stdio[2].data.stream = (uv_stream_t *)o->output;
    }
    uv_process_options_t po = {0};
    po.file = args[0];
    po.args = (char **)args;
    po.env = env;
    po.exit_cb = exit_cb;
    po.stdio_count = 3;
    po.stdio = stdio;
    /* As for our own ranks (lab/ctrl/spawn.c): the terminal's signals are the
     * shell's, which interrupts ranks on purpose. */
    po.flags = UV_PROCESS_DETACHED;
    int rc = uv_spawn(loop, proc, &po);
    free(env);
    return rc;
}

void lab_mpirun_describe(const lab_mpirun_opts_t *o, const char *exe, char *buf, size_t cap)
{
    char vars[LAB_SPAWN_MAX_VARS][LAB_SPAWN_VAR_LEN];
    char names[LAB_SPAWN_MAX_VARS][64];
    const char *args[MAX_ARGS + 3];
    /* Only the flags, not the session's variables: those hold the token. */
    int n = build_args(o, vars, 0, names, args);
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s ", args[i]);
    if (len < cap)
        snprintf(buf + len, cap - len, "%s rank", exe);
}

void lab_mpirun_death_init(lab_mpirun_death_t *d)
{
    d->rank = d->pending_rank = -1;
    d->signal = d->code = 0;
}

void lab_mpirun_parse_line(lab_mpirun_death_t *d, const char *line)
{
    if (d->rank >= 0)
        return; /* mpirun names the first failure; later lines are echoes */
    int rank = -1, sig = 0, code = 0, job = 0, pid = 0;
    const char *p;
    /* "mpirun noticed that process rank 1 with PID 0 on node vm exited on
     * signal 9 (Killed)." */
    if ((p = strstr(line, "noticed that process rank ")) != NULL &&
        sscanf(p, "noticed that process rank %d with PID %d", &rank, &pid) == 2) {
        const char *s = strstr(p, "exited on signal ");
        if (s != NULL && sscanf(s, "exited on signal %d", &sig) == 1) {
            d->rank = rank;
            d->signal = sig;
        }
        return;
    }
    /* "  Process name: [[29006,1],2]" then "  Exit code:    3" */
    if ((p = strstr(line, "Process name: [[")) != NULL &&
        sscanf(p, "Process name: [[%d,%*d],%d]", &job, &rank) == 2) {
        d->pending_rank = rank;
        return;
    }
    if (d->pending_rank >= 0 && (p = strstr(line, "Exit code:")) != NULL &&
        sscanf(p, "Exit code: %d", &code) == 1) {
        d->rank = d->pending_rank;
        d->code = code;
    }
}

bool lab_mpirun_env_present(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    return r != NULL && r[0] != '\0';
}

static void adopt(const char *ours, const char *ompi)
{
    const char *v = getenv(ompi);
    const char *have = getenv(ours);
    if (v != NULL && v[0] != '\0' && (have == NULL || have[0] == '\0'))
        setenv(ours, v, 1);
}

void lab_mpirun_adopt_env(void)
{
    if (!lab_mpirun_env_present())
        return;
    adopt("RANK", "OMPI_COMM_WORLD_RANK");
    adopt("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");
    adopt("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
    adopt("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE");
}
