/* See mpirun.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "distlab/comm.h"
#include "distlab/log.h"
#include "lab/ctrl/controller.h"
#include "lab/ctrl/launch.h"
#include "lab/ctrl/launchers.h"
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
     * for themselves. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (o->hostfile == NULL && o->hosts == NULL && cores > 0 && o->np > cores)
        args[n++] = "--oversubscribe";
    /* DISTLAB_BIND (refused before any rank starts when malformed): auto
     * is mpirun's own default (each rank to a core where they fit the
     * cores, none where they outnumber them). */
    int bind = -1;
    char why[128];
    if (dl_comm_env_bind(&bind, why, sizeof(why)) == DL_OK && bind >= 0) {
        args[n++] = "--bind-to";
        args[n++] = bind == 1 ? "core:overload-allowed" : "none";
    }
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

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v != NULL ? atoi(v) : 0;
}

bool lab_mpirun_world(int *rank_p, int *size_p, int *local_size_p)
{
    if (!lab_mpirun_env_present())
        return false;
    if (rank_p != NULL)
        *rank_p = env_int("OMPI_COMM_WORLD_RANK");
    if (size_p != NULL)
        *size_p = env_int("OMPI_COMM_WORLD_SIZE");
    if (local_size_p != NULL)
        *local_size_p = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
    return true;
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

/* ---- the mpirun launcher ----
 *
 * One mpirun starts every rank of the world. Its standard error is read
 * line by line: its own messages pass through, and its notice of the first
 * rank that failed says how that rank ended. Once mpirun has exited and
 * said all it will, every rank still counted alive ended with the job. */

typedef struct {
    lab_ctrl_t *c;
    int np;
    uv_process_t proc;
    uv_pipe_t err;    /* its standard error, read for the death notice */
    uv_timer_t grace; /* how long its last words may take after it exits */
    int open_handles;
    bool closed;
    char err_line[512];
    size_t err_len;
    /* Where its output is in one of Open MPI's help messages, the boxes
     * of dashes: outside one, in its first sentence (read into summary),
     * or past it. */
    enum { BOX_NONE, BOX_FIRST, BOX_REST } box;
    char summary[512];
    lab_mpirun_death_t death;
    bool started, exited, err_eof, done;
    int64_t status;
    int signal;
    int *killed_with; /* [np]: the signal we sent a rank, 0: none */
} mpirun_t;

static void mpirun_release(mpirun_t *m)
{
    if (--m->open_handles == 0 && m->closed) {
        free(m->killed_with);
        free(m);
    }
}

static void mpirun_handle_closed(uv_handle_t *h)
{
    mpirun_release(h->data);
}

/* mpirun is done and has said all it will: every rank still counted alive
 * ended with the job. The rank mpirun names went first; the others were
 * stopped by mpirun because of it (or ended normally). */
static void mpirun_finish(mpirun_t *m)
{
    if (m->done || !m->exited || (!m->err_eof && uv_is_active((uv_handle_t *)&m->grace)))
        return;
    m->done = true;
    uv_timer_stop(&m->grace);
    int first = m->death.rank >= 0 && m->death.rank < m->np ? m->death.rank : -1;
    for (int k = -1; k < m->np && !m->closed; k++) {
        int r = k < 0 ? first : k;
        if (r < 0 || (k >= 0 && r == first) || lab_ctrl_rank(m->c, r)->exited)
            continue;
        char lost[96] = "";
        int64_t status = 0;
        int sig = 0;
        if (r == first) {
            sig = m->death.signal;
            status = m->death.code;
        } else if (m->killed_with[r] != 0) {
            sig = m->killed_with[r];
        } else if (m->status != 0 || m->signal != 0) {
            status = m->status;
            sig = m->signal;
            snprintf(lost, sizeof(lost), "was stopped by mpirun, which %s",
                     first >= 0       ? "ended the job when a rank failed"
                     : m->signal != 0 ? "was killed"
                                      : "failed");
        }
        lab_launch_exited(m->c, r, status, sig, lost[0] != '\0' ? lost : NULL);
    }
}

static void mpirun_grace_over(uv_timer_t *t)
{
    mpirun_finish(t->data);
}

static void mpirun_exit(uv_process_t *p, int64_t status, int sig)
{
    mpirun_t *m = p->data;
    m->exited = true;
    m->status = status;
    m->signal = sig;
    if (!m->closed) {
        /* Its last words may still be in the pipe: wait for them, briefly. */
        if (!m->err_eof)
            uv_timer_start(&m->grace, mpirun_grace_over, 1000, 0);
        mpirun_finish(m);
    }
    uv_close((uv_handle_t *)p, mpirun_handle_closed); /* may free m */
}

/* The help message's first sentence, said once. */
static void box_said(mpirun_t *m)
{
    if (m->box == BOX_FIRST && m->summary[0] != '\0')
        fprintf(stderr, "mpirun: %s\n", m->summary);
    m->summary[0] = '\0';
    m->box = BOX_REST;
}

/* The end of the summary's first sentence: a full stop at the end or
 * before a space, not e.g.'s or i.e.'s; NULL when there is none yet. */
static char *sentence_end(char *s)
{
    for (char *p = strchr(s, '.'); p != NULL; p = strchr(p + 1, '.')) {
        bool abbrev =
            p - s >= 3 && (strncmp(p - 3, "e.g", 3) == 0 || strncmp(p - 3, "i.e", 3) == 0);
        if (!abbrev && (p[1] == '\0' || p[1] == ' '))
            return p;
    }
    return NULL;
}

/* A line of a help message: its first sentence is what went wrong ("ORTE
 * was unable to reliably start one or more daemons."), with what a colon
 * announces ("... requested by the application: distlab"); the twenty
 * lines of possible causes after it are at DISTLAB_LOG=debug. */
static void box_line(mpirun_t *m, const char *line)
{
    if (m->box == BOX_REST) {
        dl_log_debug("mpirun: %s", line);
        return;
    }
    size_t len = strlen(m->summary);
    if (line[0] == '\0') {
        /* a paragraph ended before a full stop: said, unless a colon at
         * its end announces the next */
        if (len > 0 && m->summary[len - 1] != ':')
            box_said(m);
        return;
    }
    snprintf(m->summary + len, sizeof(m->summary) - len, "%s%s", len > 0 ? " " : "", line);
    char *stop = sentence_end(m->summary);
    if (stop != NULL) {
        stop[1] = '\0';
        box_said(m);
    }
}

/* mpirun's own messages pass through, one line at a time, its help
 * messages cut to their first sentence; the death notice is remembered. */
static void mpirun_line(mpirun_t *m, char *line)
{
    line[strcspn(line, "\r")] = '\0'; /* ssh's lines end in \r\n */
    lab_mpirun_parse_line(&m->death, line);
    if (m->closed)
        return;
    const char *text = line + strspn(line, " \t");
    if (text[0] == '-' && text[strspn(text, "- \t")] == '\0') {
        if (m->box == BOX_NONE) {
            m->box = BOX_FIRST;
        } else {
            box_said(m);
            m->box = BOX_NONE;
        }
        return;
    }
    if (m->box != BOX_NONE)
        box_line(m, text);
    else if (text[0] != '\0')
        fprintf(stderr, "mpirun: %s\n", line);
}

static void mpirun_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    mpirun_t *m = h->data;
    size_t room = sizeof(m->err_line) - 1 - m->err_len;
    *buf = uv_buf_init(m->err_line + m->err_len, (unsigned)room);
}

static void mpirun_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    mpirun_t *m = s->data;
    if (n < 0) {
        if (m->err_len > 0) {
            m->err_line[m->err_len] = '\0';
            mpirun_line(m, m->err_line);
            m->err_len = 0;
        }
        if (!m->closed)
            box_said(m); /* a box its end never closed */
        m->err_eof = true;
        if (!m->closed)
            mpirun_finish(m);
        uv_close((uv_handle_t *)s, mpirun_handle_closed); /* may free m */
        return;
    }
    m->err_len += (size_t)n;
    char *nl;
    while ((nl = memchr(m->err_line, '\n', m->err_len)) != NULL ||
           m->err_len == sizeof(m->err_line) - 1) {
        size_t len = nl != NULL ? (size_t)(nl - m->err_line) : m->err_len;
        char line[sizeof(m->err_line)];
        memcpy(line, m->err_line, len);
        line[len] = '\0';
        size_t used = nl != NULL ? len + 1 : len;
        memmove(m->err_line, m->err_line + used, m->err_len - used);
        m->err_len -= used;
        mpirun_line(m, line);
    }
}

static void mpirun_plan(void *self, const lab_launch_opts_t *opts, lab_launch_plan_t *p)
{
    (void)self;
    /* Other hosts under mpirun reach us on every interface (the token
     * guards the ports), by this host's name. */
    if (opts->hostfile != NULL || opts->hosts != NULL) {
        p->bind_host = "0.0.0.0";
        p->by_name = true;
    }
}

static dl_status_t mpirun_start(void *self, lab_ctrl_t *c, const lab_launch_world_t *w,
                                void **state_p)
{
    (void)self;
    mpirun_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return DL_ERR_NOMEM;
    m->killed_with = calloc((size_t)w->n + 1, sizeof(*m->killed_with));
    if (m->killed_with == NULL) {
        free(m);
        return DL_ERR_NOMEM;
    }
    m->c = c;
    m->np = w->n;
    *state_p = m;
    lab_mpirun_opts_t mo = {.np = w->n,
                            .hostfile = w->opts->hostfile,
                            .hosts = w->opts->hosts,
                            .env = *w->env,
                            .output = &m->err};
    uv_pipe_init(w->loop, &m->err, 0);
    uv_timer_init(w->loop, &m->grace);
    m->err.data = m->grace.data = m->proc.data = m;
    m->open_handles = 3;
    lab_mpirun_death_init(&m->death);
    int rc = lab_mpirun_spawn(w->loop, &m->proc, w->exe, &mo, mpirun_exit);
    if (rc != 0) {
        char cmd[512];
        lab_mpirun_describe(&mo, w->exe, cmd, sizeof(cmd));
        dl_log_error("cannot start mpirun (%s): %s%s", cmd, uv_strerror(rc),
                     rc == UV_ENOENT ? "; install openmpi-bin, or set DISTLAB_MPIRUN" : "");
        /* Nothing started: the handles go now, and close finds nothing to do. */
        m->exited = m->err_eof = true;
        uv_close((uv_handle_t *)&m->proc, mpirun_handle_closed);
        uv_close((uv_handle_t *)&m->err, mpirun_handle_closed);
        uv_close((uv_handle_t *)&m->grace, mpirun_handle_closed);
        return DL_ERR_SYSTEM;
    }
    m->started = true;
    uv_read_start((uv_stream_t *)&m->err, mpirun_alloc, mpirun_read);
    return DL_OK;
}

/* mpirun started the rank: signal it where it runs, when that is here. */
static void mpirun_kill(void *state, int rank, int sig)
{
    mpirun_t *m = state;
    if (lab__launch_signal_here(m->c, rank, sig))
        m->killed_with[rank] = sig;
}

/* mpirun passes SIGTERM on to every rank, on every host. */
static void mpirun_kill_all(void *state, int sig)
{
    mpirun_t *m = state;
    if (m->started && !m->exited && sig == SIGKILL)
        uv_process_kill(&m->proc, SIGTERM);
}

static bool mpirun_all_exited(void *state)
{
    mpirun_t *m = state;
    return !m->started || m->done;
}

static void mpirun_close(void *state)
{
    mpirun_t *m = state;
    m->closed = true;
    if (m->started) {
        /* mpirun passes SIGTERM on to every rank, on every host, and exits. */
        if (!m->exited)
            uv_process_kill(&m->proc, SIGTERM);
        uv_timer_stop(&m->grace);
        uv_close((uv_handle_t *)&m->grace, mpirun_handle_closed);
        if (!m->err_eof) {
            m->err_eof = true;
            uv_close((uv_handle_t *)&m->err, mpirun_handle_closed);
        }
    }
    if (m->open_handles == 0) {
        free(m->killed_with);
        free(m);
    }
}

const lab_launcher_ops_t lab__launcher_mpirun = {
    .name = "mpirun",
    .whole_world = true,
    .ranks_say_host = true,
    .plan = mpirun_plan,
    .start = mpirun_start,
    .kill = mpirun_kill,
    .kill_all = mpirun_kill_all,
    .all_exited = mpirun_all_exited,
    .close = mpirun_close,
};
