/* `distlab rank`: see rank.h. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "distlab/auth.h"
#include "distlab/cuda.h"
#include "distlab/frame.h"
#include "distlab/log.h"
#include "lab/eval.h"
#include "lab/mpirun.h"
#include "lab/proto.h"
#include "lab/rank.h"

#define CONTROL_TIMEOUT_MS 30000

dl_status_t lab_rank_emit(lab_rank_t *r, json_t *msg, const void *blob, size_t len)
{
    if (r->cur_id > 0 && json_object_get(msg, "id") == NULL)
        json_object_set_new(msg, "id", json_integer(r->cur_id));
    dl_status_t st = dl_frame_send_fd(r->fd, msg, blob, len, CONTROL_TIMEOUT_MS);
    json_decref(msg);
    return st;
}

dl_status_t lab_rank_await(lab_rank_t *r, const char *type, int timeout_ms, dl_frame_t *f)
{
    for (;;) {
        dl_status_t st = dl_frame_recv_fd(r->fd, f, timeout_ms);
        if (st != DL_OK)
            return st;
        const char *t = lab_msg_type(f->json);
        if (strcmp(t, type) == 0)
            return DL_OK;
        if (strcmp(t, "abort") == 0) {
            dl_frame_clear(f);
            return DL_ERR_ABORTED;
        }
        dl_frame_t *d = realloc(r->deferred, sizeof(*d) * (r->n_deferred + 1));
        if (d == NULL) {
            dl_frame_clear(f);
            return DL_ERR_NOMEM;
        }
        r->deferred = d;
        r->deferred[r->n_deferred++] = *f;
        memset(f, 0, sizeof(*f));
    }
}

/* The next control frame: one kept by lab_rank_await first. */
static dl_status_t next_frame(lab_rank_t *r, dl_frame_t *f)
{
    if (r->n_deferred > 0) {
        *f = r->deferred[0];
        memmove(r->deferred, r->deferred + 1, sizeof(*f) * --r->n_deferred);
        return DL_OK;
    }
    /* The controller may sit idle for long (an interactive session). */
    return dl_frame_recv_fd(r->fd, f, -1);
}

dl_status_t lab_rank_emit_snap(lab_rank_t *r, const char *label, const char *name, int index,
                               int of, const dl_tensor_t *t)
{
    /* A snapshot is only printed, and a large tensor prints summarised:
     * send what the print shows, a few elements, not the whole tensor. */
    int64_t shown[DL_MAX_DIMS];
    size_t n = dl_tensor_shown_shape(t->ndim, t->shape, shown);
    bool cut = n < t->numel;
    json_t *msg = lab_snap_json(label, name, index, of, t);
    if (cut)
        json_object_set_new(msg, "shown", json_true());
    if (!cut && t->device.type != DL_DEVICE_CUDA)
        return lab_rank_emit(r, msg, t->data, dl_tensor_nbytes(t));
    /* The shown block, read from the GPU where the tensor lives there. */
    size_t bytes = n * dl_dtype_size(t->dtype);
    void *block = malloc(bytes > 0 ? bytes : 1);
    if (block == NULL) {
        json_decref(msg);
        return DL_ERR_NOMEM;
    }
    dl_status_t st = dl_tensor_copy_shown(t, block);
    if (st != DL_OK) {
        json_decref(msg);
        free(block);
        lab_rank_note(r, "%s: cannot copy it from the GPU: %s", name, dl_cuda_last_error());
        return st;
    }
    st = lab_rank_emit(r, msg, block, bytes);
    free(block);
    return st;
}

dl_status_t lab_rank_note(lab_rank_t *r, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return lab_rank_emit(r, json_pack("{s:s, s:s}", "type", "note", "text", text), NULL, 0);
}

/* Log lines travel to the controller, which prints them in rank order. */
static void forward_log(void *arg, dl_log_level_t level, const char *msg)
{
    lab_rank_t *r = arg;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level == DL_LOG_ERROR)
        snprintf(r->last_error_log, sizeof(r->last_error_log), "%s", msg);
    if (level == DL_LOG_ERROR && r->hold_errors)
        return;
    json_t *j = json_pack("{s:s, s:s, s:s}", "type", "log", "level", names[level], "text", msg);
    if (dl_frame_send_fd(r->fd, j, NULL, 0, CONTROL_TIMEOUT_MS) != DL_OK)
        fprintf(stderr, "rank %d: %s\n", r->rank, msg);
    json_decref(j);
}

static dl_status_t connect_control(lab_rank_t *r)
{
    const char *ctl = getenv("DISTLAB_CONTROL");
    const char *colon = ctl != NULL ? strrchr(ctl, ':') : NULL;
    if (colon == NULL) {
        fprintf(stderr, "distlab rank: DISTLAB_CONTROL (host:port of the controller) is not set; "
                        "ranks are started by `distlab run`, `distlab bench` or `distlab shell`\n");
        return DL_ERR_INVALID;
    }
    char host[256];
    snprintf(host, sizeof(host), "%.*s", (int)(colon - ctl), ctl);
    dl_status_t st = dl_frame_connect(host, atoi(colon + 1), CONTROL_TIMEOUT_MS, &r->fd);
    if (st != DL_OK) {
        fprintf(stderr, "distlab rank: cannot reach the controller at %s: %s\n", ctl,
                dl_strerror(st));
        return st;
    }
    char hostname[256] = "";
    gethostname(hostname, sizeof(hostname) - 1);
    /* The session's token proves we belong, without crossing the wire. */
    const char *token = getenv("DISTLAB_TOKEN");
    if (token == NULL || token[0] == '\0') {
        fprintf(stderr, "distlab rank: DISTLAB_TOKEN (the session's token) is not set\n");
        return DL_ERR_INVALID;
    }
    json_t *who = json_pack("{s:s, s:i, s:i, s:s}", "role", "rank", "rank", r->rank, "pid",
                            (int)getpid(), "host", hostname);
    st = dl_auth_client_fd(r->fd, token, who, CONTROL_TIMEOUT_MS, NULL);
    json_decref(who);
    if (st != DL_OK) {
        fprintf(stderr, "distlab rank: the controller at %s %s\n", ctl,
                st == DL_ERR_DENIED ? "refused our token" : dl_strerror(st));
        return st;
    }
    json_t *hello = json_pack("{s:s, s:i, s:i, s:s}", "type", "hello", "rank", r->rank, "pid",
                              (int)getpid(), "host", hostname);
    return lab_rank_emit(r, hello, NULL, 0);
}

static void parse_fault(lab_rank_t *r)
{
    r->fault_rank = -1;
    const char *f = getenv("DISTLAB_FAULT");
    if (f != NULL && sscanf(f, "%d:%d", &r->fault_rank, &r->fault_step) != 2)
        r->fault_rank = -1;
}

static dl_status_t run_job(lab_rank_t *r, const json_t *msg)
{
    if (lab_job_from_json(msg, &r->job) != DL_OK)
        return lab_rank_emit(r, json_pack("{s:s, s:s}", "type", "error", "message", "bad job"),
                             NULL, 0);
    dl_device_t dev;
    char why[256];
    if (lab_job_device(r, &dev, why, sizeof(why)) != DL_OK)
        return lab_rank_emit(r, json_pack("{s:s, s:s}", "type", "error", "message", why), NULL, 0);
    r->steps_seen = 0;
    if (r->job.algo[0] != '\0' && r->job.prim.kind == LAB_PRIM_COLL &&
        dl_comm_set_algo(r->comm, r->job.prim.coll, r->job.algo) != DL_OK)
        goto err_report;
    dl_comm_set_timeout(r->comm, r->job.timeout_s);
    /* Step events would cost more than a benchmark's small collectives. */
    dl_comm_set_step_hook(r->comm, r->job.bench ? NULL : lab_rank_step_hook, r);
    dl_comm_set_coll_hook(r->comm, NULL, NULL);
    dl_status_t st = r->job.bench ? lab_bench_rank(r) : lab_run_rank(r);
    if (st != DL_OK)
        goto err_report;
    return lab_rank_emit(r, json_pack("{s:s}", "type", "done"), NULL, 0);

err_report:
    return lab_rank_emit(
        r,
        json_pack("{s:s, s:s}", "type", "error", "message",
                  dl_comm_last_error(r->comm)[0] ? dl_comm_last_error(r->comm) : "failed"),
        NULL, 0);
}

/* Session settings from the shell: `set timeout`, `set algo`, `step on`.
 * They were checked by the controller. */
static void apply_config(lab_rank_t *r, const json_t *msg)
{
    double timeout = lab_json_num(msg, "timeout", 0);
    if (timeout > 0) {
        dl_comm_set_timeout(r->comm, timeout);
        r->timeout_s = timeout;
    }
    dl_coll_t c;
    if (dl_coll_parse(lab_json_str(msg, "coll", ""), &c) == DL_OK) {
        const char *algo = lab_json_str(msg, "algo", "");
        dl_comm_set_algo(r->comm, c, algo[0] ? algo : NULL);
    }
    json_t *step = json_object_get(msg, "step");
    if (json_is_boolean(step))
        r->step_mode = json_is_true(step);
    json_t *check = json_object_get(msg, "check");
    if (json_is_boolean(check))
        r->no_check = json_is_false(check);
}

/* One statement of the shell: {"type":"exec","id":N,"batch":B,"stmt":{...}}.
 * The statements of one line segment arrive together; once one fails, the
 * rest of its batch is skipped (the shell reports the failure). */
static dl_status_t exec_stmt(lab_rank_t *r, lab_eval_t *ev, const json_t *msg)
{
    json_int_t id = (json_int_t)lab_json_int(msg, "id", 0);
    json_int_t batch = (json_int_t)lab_json_int(msg, "batch", 0);
    if (batch != 0 && batch == r->failed_batch)
        return lab_rank_emit(r, json_pack("{s:s, s:I}", "type", "skipped", "id", id), NULL, 0);
    r->steps_seen = 0;
    r->cur_id = id;
    r->error_quiet = false;
    dl_comm_set_step_hook(r->comm, lab_rank_step_hook, r);
    dl_comm_set_coll_hook(r->comm, r->no_check ? NULL : lab_rank_coll_hook, r);
    dl_status_t st = lab_eval_stmt(ev, json_object_get(msg, "stmt"));
    r->cur_id = 0;
    if (st != DL_OK) {
        r->failed_batch = batch;
        return lab_rank_emit(r,
                             json_pack("{s:s, s:I, s:s, s:b}", "type", "error", "id", id, "message",
                                       ev->error, "quiet", r->error_quiet),
                             NULL, 0);
    }
    return lab_rank_emit(r, json_pack("{s:s, s:I}", "type", "done", "id", id), NULL, 0);
}

/* Ctrl-C at the shell. The terminal's SIGINT is for the shell: ranks run
 * in a session of their own (lab/spawn.c) and ignore SIGINT besides, should
 * a launcher start them in the terminal's process group. The shell sends
 * SIGUSR2 to the ranks still running the statement it interrupts. The
 * handler only sets core's flag; without SA_RESTART a wait asleep on its
 * futex wakes at once. */
static void on_interrupt(int sig)
{
    (void)sig;
    dl_comm_interrupt_from_signal();
}

static void catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    signal(SIGINT, SIG_IGN);
}

int lab_rank_main(void)
{
    lab_rank_t r;
    memset(&r, 0, sizeof(r));
    r.fd = -1;
    /* Started by mpirun: Open MPI numbers the ranks. */
    lab_mpirun_adopt_env();
    const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
    r.rank = rs != NULL ? atoi(rs) : -1;
    const char *ts = getenv("DISTLAB_TIMEOUT");
    r.timeout_s = ts != NULL && atof(ts) > 0 ? atof(ts) : 30;
    r.size = ws != NULL ? atoi(ws) : -1;
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "rank %d", r.rank);
    dl_log_set_prefix(prefix);
    /* A rank never outlives the controller that spawned it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        return 1;
    catch_interrupts();
    parse_fault(&r);
    if (connect_control(&r) != DL_OK)
        return 1;
    dl_log_set_sink(forward_log, &r);

    dl_comm_opts_t opts = {0};
    const char *backend = getenv("DISTLAB_BACKEND");
    /* Under mpirun without a word from distlab, MPI is what the user meant. */
    opts.backend = backend != NULL && backend[0] != '\0' ? backend
                   : lab_mpirun_env_present()            ? "mpi"
                                                         : "builtin";
    /* A failure here is told once, in the error event. */
    r.hold_errors = true;
    dl_status_t init_st = dl_comm_init_env(&opts, &r.comm);
    r.hold_errors = false;
    if (init_st != DL_OK) {
        char msg[512];
        snprintf(msg, sizeof(msg), "could not set up the communicator (%s backend)%s%s",
                 opts.backend, r.last_error_log[0] ? ": " : "", r.last_error_log);
        lab_rank_emit(&r, json_pack("{s:s, s:s}", "type", "error", "message", msg), NULL, 0);
        close(r.fd);
        return 1;
    }
    lab_rank_emit(&r, json_pack("{s:s}", "type", "ready"), NULL, 0);

    lab_eval_t ev = {.r = &r};
    int code = 0;
    for (;;) {
        dl_frame_t f = {0};
        dl_status_t st = next_frame(&r, &f);
        if (st != DL_OK) {
            code = st == DL_ERR_CLOSED ? 0 : 1;
            break;
        }
        const char *type = lab_msg_type(f.json);
        if (strcmp(type, "exit") == 0) {
            dl_frame_clear(&f);
            break;
        }
        if (strcmp(type, "job") == 0)
            st = run_job(&r, f.json);
        else if (strcmp(type, "exec") == 0)
            st = exec_stmt(&r, &ev, f.json);
        else if (strcmp(type, "config") == 0)
            apply_config(&r, f.json);
        else if (strcmp(type, "interrupted") == 0)
            dl_comm_interrupt_clear(); /* follows SIGUSR2: spares the next statement */
        dl_frame_clear(&f);
        if (st != DL_OK) {
            code = 1;
            break;
        }
    }
    dl_log_set_sink(NULL, NULL);
    for (size_t i = 0; i < r.n_deferred; i++)
        dl_frame_clear(&r.deferred[i]);
    free(r.deferred);
    lab_eval_fini(&ev); /* groups and handles go before the world */
    dl_comm_destroy(r.comm);
    close(r.fd);
    return code;
}
