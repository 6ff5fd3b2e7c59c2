/* See launch.h: the launchers by name, and the attach launcher. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "distlab/log.h"
#include "lab/ctrl/controller.h"
#include "lab/ctrl/launch.h"
#include "lab/ctrl/launchers.h"

/* ---- the registry ----
 *
 * This room's launchers are always there; another room's (the workers')
 * registers itself when it is first used. The program is one loop, so the
 * table needs no lock. */

static const lab_launcher_ops_t *registered[LAB_LAUNCHERS_MAX] = {
    &lab__launcher_local,
    &lab__launcher_mpirun,
    &lab__launcher_attach,
};

dl_status_t lab_launcher_register(const lab_launcher_ops_t *ops)
{
    if (ops == NULL || ops->name == NULL || ops->start == NULL)
        return DL_ERR_INVALID;
    for (int i = 0; i < LAB_LAUNCHERS_MAX; i++)
        if (registered[i] == NULL || strcmp(registered[i]->name, ops->name) == 0) {
            registered[i] = ops;
            return DL_OK;
        }
    return DL_ERR_NOMEM;
}

const lab_launcher_ops_t *lab_launcher_find(const char *name)
{
    for (int i = 0; i < LAB_LAUNCHERS_MAX && registered[i] != NULL; i++)
        if (strcmp(registered[i]->name, name) == 0)
            return registered[i];
    return NULL;
}

const char *lab_launch_launcher_name(const lab_launch_opts_t *opts)
{
    if (opts->attach)
        return "attach";
    if (opts->backend != NULL && strcmp(opts->backend, "mpi") == 0)
        return "mpirun";
    return "local";
}

int lab_launcher_nranks(const lab_launcher_t *l)
{
    if (l == NULL || l->ops->plan == NULL)
        return 0;
    lab_launch_plan_t p;
    memset(&p, 0, sizeof(p));
    lab_launch_opts_t none;
    memset(&none, 0, sizeof(none));
    l->ops->plan(l->self, &none, &p);
    return p.nranks;
}

/* ---- ranks that someone else started ---- */

bool lab__launch_signal_here(lab_ctrl_t *c, int rank, int sig)
{
    const lab_rank_info_t *in = lab_ctrl_rank(c, rank);
    if (in == NULL || in->pid <= 0)
        return false; /* not connected yet: its launcher stops it */
    char here[64] = "";
    gethostname(here, sizeof(here) - 1);
    if (strcmp(in->host, here) != 0) {
        dl_log_warn("rank %d runs on %s under mpirun: distlab signals only ranks on this host",
                    rank, in->host);
        return false;
    }
    kill(in->pid, sig);
    return true;
}

/* ---- attach: the user's launcher starts the ranks ---- */

typedef struct {
    lab_ctrl_t *c;
    int base, n;
    bool closed;
} attach_t;

static void attach_plan(void *self, const lab_launch_opts_t *opts, lab_launch_plan_t *p)
{
    (void)self;
    /* Ranks on other hosts reach us on every interface (the token guards
     * the ports). */
    if (opts->attach_any_host) {
        p->bind_host = "0.0.0.0";
        p->by_name = true;
    }
}

static dl_status_t attach_start(void *self, lab_ctrl_t *c, const lab_launch_world_t *w,
                                void **state_p)
{
    (void)self;
    attach_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return DL_ERR_NOMEM;
    a->c = c;
    a->base = w->base;
    a->n = w->n;
    /* lab_ctrl_rank_env tells the user's launcher what to pass. */
    *state_p = a;
    return DL_OK;
}

static void attach_kill(void *state, int rank, int sig)
{
    attach_t *a = state;
    lab__launch_signal_here(a->c, rank, sig);
}

static bool attach_all_exited(void *state)
{
    attach_t *a = state;
    for (int r = a->base; r < a->base + a->n; r++)
        if (!lab_ctrl_rank(a->c, r)->exited)
            return false;
    return true;
}

/* A rank we did not start: its connection is all we see of it. */
static void attach_disconnected(void *state, int rank)
{
    attach_t *a = state;
    if (!a->closed)
        lab_launch_exited(a->c, rank, 0, 0,
                          "closed its connection (its launcher knows how it ended)");
}

static void attach_close(void *state)
{
    attach_t *a = state;
    /* Those still here on this host go with the world, as spawned ones do. */
    for (int r = a->base; r < a->base + a->n; r++)
        if (!lab_ctrl_rank(a->c, r)->exited)
            attach_kill(a, r, SIGKILL);
    a->closed = true;
    free(a);
}

const lab_launcher_ops_t lab__launcher_attach = {
    .name = "attach",
    .plan = attach_plan,
    .start = attach_start,
    .kill = attach_kill,
    .all_exited = attach_all_exited,
    .disconnected = attach_disconnected,
    .close = attach_close,
};
