/* `distlab train`: the data-parallel training loop, its checkpoints and its
 * signals (trainer.h). */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "distlab/comm.h"
#include "distlab/log.h"
#include "distlab/random.h"
#include "lab/elastic/checkpoint.h"
#include "lab/elastic/model.h"
#include "lab/elastic/trainer.h"

#define DEFAULT_TIMEOUT_S 30.0

void lab_train_defaults(lab_train_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->epochs = 10;
    o->steps_per_epoch = 10;
    o->batch = 32;
    o->lr = 0.01;
}

/* One rank's training. */
typedef struct {
    dl_comm_t *comm;
    const lab_train_opts_t *o;
    int rank, local_rank, world;
    dl_tensor_t *params; /* LAB_MLP_NPARAMS floats */
    dl_tensor_t *grad;   /* the same layout, in the communicator's arena */
    dl_rng_t rng;        /* the batches' generator, seeded for each epoch */
    int64_t epoch;       /* the next epoch to run */
    int64_t steps;       /* optimizer steps taken in all */
    /* A failure that every rank saw at the same point (an unusable
     * checkpoint, weights that differ): the world is intact and is left in
     * order, so that rank 0's store outlives every rank's use of it. */
    bool agreed_failure;
} trainer_t;

/* ---- signals ----
 *
 * SIGTERM (how a launcher stops its workers) and SIGINT end the process at
 * once, by the same signal, so that whoever waits for it sees how it ended.
 * Only a checkpoint being written holds them back until it is in place. */

static volatile sig_atomic_t saving;
static volatile sig_atomic_t pending_signal;
/* The line each signal prints, made beforehand: a handler cannot format. */
static char term_line[128] = "distlab train: terminated (SIGTERM)\n";
static char int_line[128] = "distlab train: interrupted (SIGINT)\n";

static void set_stop_lines(const char *prefix)
{
    snprintf(term_line, sizeof(term_line), "%s: terminated (SIGTERM)\n", prefix);
    snprintf(int_line, sizeof(int_line), "%s: interrupted (SIGINT)\n", prefix);
}

static void die_by(int sig)
{
    const char *line = sig == SIGTERM ? term_line : int_line;
    /* One write(2), async-signal-safe, so that the line stays whole. */
    ssize_t k = write(STDERR_FILENO, line, strlen(line));
    (void)k;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    /* Delivered when the handler returns (or at once outside one). */
    raise(sig);
}

static void on_stop_signal(int sig)
{
    if (saving) {
        pending_signal = sig;
        return;
    }
    die_by(sig);
}

static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

static void begin_saving(void)
{
    saving = 1;
}

static void end_saving(void)
{
    saving = 0;
    if (pending_signal != 0)
        die_by(pending_signal);
}

/* ---- environment ---- */

/* LOCAL_RANK, or -1 when it is unset. */
static bool local_rank_env(int *local_p)
{
    const char *s = getenv("LOCAL_RANK");
    if (s == NULL || *s == '\0') {
        *local_p = -1;
        return true;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 1 << 30) {
        char q[DL_QUOTE_BUF];
        dl_log_error("LOCAL_RANK='%s' is not a non-negative integer", dl_quote(s, q, sizeof(q)));
        return false;
    }
    *local_p = (int)v;
    return true;
}

/* Workers of each restart of an elastic run get their own keys, should the
 * launcher keep one store (DISTLAB_STORE) over its restarts. */
static void world_prefix_from_restart(void)
{
    const char *world = getenv("DISTLAB_WORLD");
    const char *restart = getenv("TORCHELASTIC_RESTART_COUNT");
    if ((world != NULL && *world != '\0') || restart == NULL || *restart == '\0')
        return;
    /* The restart first: core keeps 63 bytes of the prefix, and a long run
     * id must not cut it off. */
    const char *run = getenv("TORCHELASTIC_RUN_ID");
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "dl/%s/%s", restart,
             run != NULL && *run != '\0' ? run : "none");
    setenv("DISTLAB_WORLD", prefix, 1);
}

static void sleep_s(double s)
{
    if (!(s > 0))
        return;
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- checkpoints ---- */

/* Whether a checkpoint that was read holds this trainer's model and
 * optimizer; why says what differs. */
static bool ckpt_fits(const lab_ckpt_t *c, char *why, size_t cap)
{
    if (strcmp(c->optimizer, "sgd") != 0 || c->momentum != 0) {
        snprintf(why, cap,
                 "it holds the state of optimizer %s with momentum %g; this trainer "
                 "runs plain SGD",
                 c->optimizer, c->momentum);
        return false;
    }
    if (c->epoch < 0 || c->epoch >= INT32_MAX) {
        snprintf(why, cap, "its epoch is %" PRId64, c->epoch);
        return false;
    }
    for (size_t i = 0; i < c->ntensors; i++) {
        const lab_ckpt_tensor_t *t = &c->tensors[i];
        bool known = false;
        for (int p = 0; p < LAB_MLP_NTENSORS && !known; p++) {
            const lab_mlp_param_t *d = &lab_mlp_params[p];
            char name[LAB_CKPT_NAME_MAX];
            snprintf(name, sizeof(name), "model.%s", d->name);
            if (strcmp(t->name, name) != 0)
                continue;
            known = true;
            bool same = t->ndim == d->ndim;
            for (int k = 0; same && k < d->ndim; k++)
                same = t->shape[k] == d->shape[k];
            if (!same) {
                snprintf(why, cap, "tensor %s does not have the model's shape", t->name);
                return false;
            }
        }
        if (!known) {
            snprintf(why, cap, "tensor %s is not one of this model's", t->name);
            return false;
        }
    }
    for (int p = 0; p < LAB_MLP_NTENSORS; p++) {
        char name[LAB_CKPT_NAME_MAX];
        snprintf(name, sizeof(name), "model.%s", lab_mlp_params[p].name);
        if (lab_ckpt_find(c, name) == NULL) {
            snprintf(why, cap, "tensor %s is missing", name);
            return false;
        }
    }
    return true;
}

/* Rank 0 reads the checkpoint, if there is one, into the parameters;
 * DL_ERR_NOT_FOUND when there is none. The error line names the file. */
static dl_status_t read_checkpoint(trainer_t *tr, int64_t *epoch_p, int64_t *steps_p)
{
    const char *path = tr->o->checkpoint;
    lab_ckpt_t c;
    char why[512];
    dl_status_t st = lab_ckpt_load(path, &c, why, sizeof(why));
    if (st == DL_ERR_NOT_FOUND) {
        /* Said now rather than after the first epoch. */
        char *copy = strdup(path);
        const char *dir = copy != NULL ? dirname(copy) : ".";
        bool writable = access(dir, W_OK | X_OK) == 0;
        if (!writable)
            dl_log_error("checkpoint %s: cannot write to directory %s: %m", path, dir);
        free(copy);
        return writable ? DL_ERR_NOT_FOUND : DL_ERR_IO;
    }
    if (st != DL_OK) {
        dl_log_error("checkpoint %s: %s", path, why);
        return st;
    }
    if (!ckpt_fits(&c, why, sizeof(why))) {
        dl_log_error("checkpoint %s: %s", path, why);
        lab_ckpt_free(&c);
        return DL_ERR_INVALID;
    }
    float *params = tr->params->data;
    for (int p = 0; p < LAB_MLP_NTENSORS; p++) {
        char name[LAB_CKPT_NAME_MAX];
        snprintf(name, sizeof(name), "model.%s", lab_mlp_params[p].name);
        const lab_ckpt_tensor_t *t = lab_ckpt_find(&c, name);
        memcpy(params + lab_mlp_params[p].offset, t->data, sizeof(float) * t->numel);
    }
    *epoch_p = c.epoch;
    *steps_p = c.steps;
    lab_ckpt_free(&c);
    return DL_OK;
}

/* Every rank starts from rank 0's checkpoint, when it has one: rank 0 tells
 * the others whether it has (broadcast of a small header), then sends the
 * parameters. Ranks on other hosts need no shared file system. *fail_p is
 * set when the run must stop (a checkpoint that cannot be used: rank 0 said
 * why). */
static dl_status_t resume(trainer_t *tr, bool *fail_p)
{
    enum { NONE, LOADED, FAILED };
    *fail_p = false;
    int64_t shape[1] = {3};
    dl_tensor_t *head = NULL;
    dl_status_t st = dl_tensor_new(DL_INT64, 1, shape, NULL, &head);
    if (st != DL_OK)
        return st;
    int64_t *h = head->data;
    if (tr->rank == 0) {
        int64_t epoch = 0, steps = 0;
        dl_status_t rst = read_checkpoint(tr, &epoch, &steps);
        h[0] = rst == DL_OK ? LOADED : rst == DL_ERR_NOT_FOUND ? NONE : FAILED;
        h[1] = epoch;
        h[2] = steps;
    }
    if ((st = dl_comm_broadcast(tr->comm, head, 0, NULL, NULL)) != DL_OK)
        goto out_free;
    if (h[0] == FAILED) {
        *fail_p = true;
        goto out_free;
    }
    if (h[0] == LOADED) {
        if ((st = dl_comm_broadcast(tr->comm, tr->params, 0, NULL, NULL)) != DL_OK)
            goto out_free;
        tr->epoch = h[1] + 1;
        tr->steps = h[2];
        printf("[%ld] resuming from checkpoint %s at epoch %" PRId64 "\n", (long)getpid(),
               tr->o->checkpoint, tr->epoch);
    }
out_free:
    dl_tensor_free(head);
    return st;
}

/* Rank 0, after epoch tr->epoch: the checkpoint, in place before the
 * epoch's line is printed. */
static dl_status_t save_checkpoint(trainer_t *tr)
{
    lab_ckpt_t c;
    memset(&c, 0, sizeof(c));
    c.epoch = tr->epoch;
    c.steps = tr->steps;
    c.world_size = tr->world;
    snprintf(c.optimizer, sizeof(c.optimizer), "sgd");
    c.lr = tr->o->lr;
    c.momentum = 0;
    float *params = tr->params->data;
    for (int p = 0; p < LAB_MLP_NTENSORS; p++) {
        const lab_mlp_param_t *d = &lab_mlp_params[p];
        lab_ckpt_tensor_t *t = &c.tensors[c.ntensors++];
        snprintf(t->name, sizeof(t->name), "model.%s", d->name);
        t->ndim = d->ndim;
        t->numel = 1;
        for (int k = 0; k < d->ndim; k++) {
            t->shape[k] = d->shape[k];
            t->numel *= (size_t)d->shape[k];
        }
        t->data = params + d->offset;
    }
    char why[512];
    begin_saving();
    dl_status_t st = lab_ckpt_save(tr->o->checkpoint, &c, why, sizeof(why));
    end_saving();
    if (st != DL_OK)
        dl_log_error("checkpoint %s: %s", tr->o->checkpoint, why);
    return st;
}

/* ---- training ---- */

/* The weights must be the same on every rank after each epoch: every rank
 * gathers every rank's checksum and compares. */
static dl_status_t check_replicas(trainer_t *tr, uint64_t *sum_p)
{
    uint64_t mine = lab_mlp_checksum(tr->params->data);
    int64_t one[1] = {1}, all[1] = {tr->world};
    dl_tensor_t *t = NULL, *out = NULL;
    dl_status_t st = dl_tensor_new(DL_INT64, 1, one, NULL, &t);
    if (st != DL_OK)
        return st;
    if ((st = dl_tensor_new(DL_INT64, 1, all, NULL, &out)) != DL_OK)
        goto out_free;
    memcpy(t->data, &mine, sizeof(mine));
    if ((st = dl_comm_all_gather_into(tr->comm, out, t, NULL, NULL)) != DL_OK)
        goto out_free;
    const uint64_t *sums = out->data;
    for (int r = 0; r < tr->world; r++) {
        if (sums[r] == sums[0])
            continue;
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "weights differ across ranks after epoch %" PRId64 ": checksum %016" PRIx64
                 " on rank 0, %016" PRIx64 " on rank %d",
                 tr->epoch, sums[0], sums[r], r);
        dl_log_error("%s", msg);
        tr->agreed_failure = true; /* every rank compared the same checksums */
        st = DL_ERR_MISMATCH;
        goto out_free;
    }
    *sum_p = mine;
out_free:
    dl_tensor_free(out);
    dl_tensor_free(t);
    return st;
}

/* One epoch: steps_per_epoch SGD steps on this rank's batches, the
 * gradients averaged over the ranks; *loss_p is this rank's mean loss. */
static dl_status_t run_epoch(trainer_t *tr, float *x, float *y, double *loss_p)
{
    const lab_train_opts_t *o = tr->o;
    dl_rng_seed(&tr->rng, lab_batch_seed(o->seed, tr->epoch, tr->rank));
    double total = 0;
    float *params = tr->params->data, *grad = tr->grad->data;
    for (int step = 0; step < o->steps_per_epoch; step++) {
        double loss = 0;
        dl_status_t st = lab_mlp_batch(&tr->rng, o->batch, x, y);
        if (st == DL_OK)
            st = lab_mlp_loss(params, x, y, o->batch, grad, &loss);
        if (st != DL_OK) {
            dl_log_error("epoch %" PRId64 " step %d: %s", tr->epoch, step, dl_strerror(st));
            return st;
        }
        total += loss;
        /* Data parallelism: every rank steps with the mean gradient. */
        if ((st = dl_comm_all_reduce(tr->comm, tr->grad, DL_OP_AVG, NULL, NULL)) != DL_OK)
            return st;
        lab_sgd_step(params, grad, LAB_MLP_NPARAMS, (float)o->lr);
        tr->steps++;
    }
    *loss_p = total / o->steps_per_epoch;
    return DL_OK;
}

static dl_status_t train(trainer_t *tr)
{
    const lab_train_opts_t *o = tr->o;
    int64_t shape[1] = {LAB_MLP_NPARAMS};
    dl_status_t st = dl_tensor_new(DL_FLOAT32, 1, shape, NULL, &tr->params);
    if (st != DL_OK)
        return st;
    if ((st = dl_tensor_new(DL_FLOAT32, 1, shape, dl_comm_allocator(tr->comm), &tr->grad)) != DL_OK)
        goto out_free;
    float *x = malloc(sizeof(float) * (size_t)o->batch * (LAB_MLP_IN + LAB_MLP_OUT));
    if (x == NULL) {
        st = DL_ERR_NOMEM;
        goto out_free;
    }
    float *y = x + (size_t)o->batch * LAB_MLP_IN;
    /* The same seed on every rank: every replica starts equal. */
    lab_mlp_init(tr->params->data, o->seed);
    tr->epoch = 0;
    if (o->checkpoint != NULL) {
        bool fail = false;
        if ((st = resume(tr, &fail)) != DL_OK)
            goto out_free_x;
        if (fail) {
            tr->agreed_failure = true;
            st = DL_ERR_PROTOCOL;
            goto out_free_x;
        }
    }
    uint64_t sum = lab_mlp_checksum(tr->params->data);
    for (; tr->epoch < o->epochs; tr->epoch++) {
        double loss = 0;
        if ((st = run_epoch(tr, x, y, &loss)) != DL_OK)
            goto out_free_x;
        if ((st = check_replicas(tr, &sum)) != DL_OK)
            goto out_free_x;
        if (tr->rank == 0 && o->checkpoint != NULL && (st = save_checkpoint(tr)) != DL_OK) {
            dl_comm_abort(tr->comm, "rank 0 could not save the checkpoint");
            goto out_free_x;
        }
        printf("[%ld] epoch %" PRId64 " (rank = %d, local_rank = %d, world_size = %d) loss = "
               "%.4f\n",
               (long)getpid(), tr->epoch, tr->rank, tr->local_rank, tr->world, loss);
        if (tr->epoch + 1 < o->epochs)
            sleep_s(o->sleep_s);
    }
    printf("[%ld] final weights checksum = %016" PRIx64 " (rank = %d, world_size = %d)\n",
           (long)getpid(), sum, tr->rank, tr->world);
out_free_x:
    free(x);
out_free:
    dl_tensor_free(tr->grad);
    dl_tensor_free(tr->params);
    return st;
}

int lab_train_main(const lab_train_opts_t *o)
{
    /* One line per epoch, seen as it happens even through a pipe. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    dl_log_set_prefix("distlab train");
    catch_stop_signals();
    world_prefix_from_restart();

    dl_comm_opts_t copts = {0};
    copts.timeout_s = o->timeout_s;
    if (!(copts.timeout_s > 0)) {
        char why[DL_QUOTE_BUF + 128];
        double env = 0;
        if (dl_comm_env_timeout(&env, why, sizeof(why)) != DL_OK) {
            dl_log_error("%s", why);
            return 2;
        }
        copts.timeout_s = env > 0 ? env : DEFAULT_TIMEOUT_S;
    }
    trainer_t tr;
    memset(&tr, 0, sizeof(tr));
    tr.o = o;
    if (!local_rank_env(&tr.local_rank))
        return 2;
    /* A malformed or missing variable is a usage error (core said which). */
    static dl_comm_t *comm; /* kept reachable when a failure skips its destruction */
    dl_status_t st = dl_comm_init_env(&copts, &comm);
    if (st != DL_OK)
        return st == DL_ERR_INVALID ? 2 : 1;
    tr.comm = comm;
    tr.rank = dl_comm_rank(tr.comm);
    tr.world = dl_comm_size(tr.comm);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "distlab train rank %d", tr.rank);
    dl_log_set_prefix(prefix);
    set_stop_lines(prefix);
    /* Without LOCAL_RANK, the ranks are taken to share one host. */
    if (tr.local_rank < 0)
        tr.local_rank = tr.rank;
    st = train(&tr);
    if (st != DL_OK && !tr.agreed_failure) {
        /* The world is down (a peer died, a wait timed out), or goes down
         * now, so that the others do not wait for this rank: leaving it in
         * order would only wait for ranks that will not come. */
        char why[96];
        snprintf(why, sizeof(why), "rank %d failed: %s", tr.rank, dl_strerror(st));
        dl_comm_abort(tr.comm, why);
        return 1;
    }
    dl_comm_destroy(tr.comm);
    return st == DL_OK ? 0 : 1;
}
