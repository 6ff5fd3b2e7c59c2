/* `distlab rank`: see rank.h. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "distlab/auth.h"
#include "distlab/cuda.h"
#include "distlab/frame.h"
#include "distlab/log.h"
#include "distlab/timedwait.h"
#include "lab/rank/eval.h"
#include "lab/ctrl/mpirun.h"
#include "lab/proto/proto.h"
#include "lab/rank/rank.h"

#define CONTROL_TIMEOUT_MS 30000

dl_status_t lab_rank_emit(lab_rank_t *r, json_t *msg, const void *blob, size_t len)
{
    if (r->cur_id > 0 && json_object_get(msg, "id") == NULL)
        json_object_set_new(msg, "id", json_integer(r->cur_id));
    atomic_fetch_add(&r->progress, 1);
    pthread_mutex_lock(&r->send_lock);
    dl_status_t st = dl_frame_send_fd(r->fd, msg, blob, len, CONTROL_TIMEOUT_MS);
    pthread_mutex_unlock(&r->send_lock);
    json_decref(msg);
    return st;
}

/* The frames that take effect the moment they are read, wherever that is
 * (the main loop, a hook's wait, the look before a statement); true when f
 * was one. "peer_died": the shell saw a rank die, and every later call is
 * refused (dl_comm_world_down) until `respawn`, so that every survivor reads
 * the same, a rank paused in a hook too. "given_up": the shell gave this
 * rank's batch up; deferred, it would sit behind the statements it gives
 * up, which would then run. */
static bool take_at_once(lab_rank_t *r, const dl_frame_t *f)
{
    const char *type = lab_msg_type(f->json);
    if (strcmp(type, "peer_died") == 0) {
        if (r->comm != NULL && strcmp(dl_comm_backend(r->comm), "builtin") == 0)
            dl_comm_abort(r->comm, lab_json_str(f->json, "why", "a rank died"));
        return true;
    }
    if (strcmp(type, "given_up") == 0) {
        r->failed_batch = (json_int_t)lab_json_int(f->json, "batch", 0);
        return true;
    }
    return false;
}

static dl_status_t defer_frame(lab_rank_t *r, dl_frame_t *f)
{
    dl_frame_t *d = realloc(r->deferred, sizeof(*d) * (r->n_deferred + 1));
    if (d == NULL) {
        dl_frame_clear(f);
        return DL_ERR_NOMEM;
    }
    r->deferred = d;
    r->deferred[r->n_deferred++] = *f;
    memset(f, 0, sizeof(*f));
    return DL_OK;
}

/* The frames that have arrived already, taken without waiting for more.
 * A rank held with SIGSTOP finds, once continued, the statements it was
 * sent and, after them, the shell's "given_up" for their batch: the
 * statements must not run, or the rank would apply what the shell reported
 * failed. Other frames keep their order for the main loop. */
static void take_arrived(lab_rank_t *r)
{
    struct pollfd p = {.fd = r->fd, .events = POLLIN};
    while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
        dl_frame_t f = {0};
        /* The frame has begun to arrive: the rest of it follows at once. */
        if (dl_frame_recv_fd(r->fd, &f, CONTROL_TIMEOUT_MS) != DL_OK)
            return; /* the main loop's next read reports the socket's state */
        if (take_at_once(r, &f))
            dl_frame_clear(&f);
        else if (defer_frame(r, &f) != DL_OK)
            return;
    }
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
        if (strcmp(t, "abort") == 0)
            return DL_ERR_ABORTED;
        if (take_at_once(r, f)) {
            dl_frame_clear(f);
            continue;
        }
        if ((st = defer_frame(r, f)) != DL_OK)
            return st;
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

/* Set by SIGUSR2 (Ctrl-C at the shell), cleared by the "interrupted" frame
 * that follows it: the shell discards what is left of the line, so the
 * rank builds and sends no more snapshots of it (a large tensor's would
 * hold the prompt back while the controller takes it in). */
static atomic_bool interrupted;

void lab_rank_comm_error(dl_comm_t *comm, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", dl_comm_last_error(comm),
             dl_comm_world_down(comm) ? "; `respawn` restarts the ranks" : "");
}

bool lab_rank_interrupted(void)
{
    return atomic_load(&interrupted);
}

dl_status_t lab_rank_emit_snap(lab_rank_t *r, const char *label, const char *name, int index,
                               int of, const dl_tensor_t *t)
{
    if (atomic_load(&interrupted))
        return DL_OK;
    /* A snapshot is only printed, and a large tensor prints summarised:
     * send what the print shows, a few elements, not the whole tensor. */
    int64_t shown[DL_MAX_DIMS];
    size_t n = dl_tensor_shown_shape(t->ndim, t->shape, shown);
    if (r->shown_as != NULL)
        label = r->shown_as;
    bool cut = n < t->numel && !(r->snap_whole && dl_tensor_nbytes(t) <= LAB_SNAP_WHOLE_MAX);
    json_t *msg = lab_snap_json(label, name, index, of, t);
    if (cut)
        json_object_set_new(msg, "shown", json_true());
    if (of > 0 && r->items_of_tuple)
        json_object_set_new(msg, "tuple", json_true());
    if (!cut && t->device.type != DL_DEVICE_CUDA)
        return lab_rank_emit(r, msg, t->data, dl_tensor_nbytes(t));
    /* The shown block or the whole, read from the GPU where the tensor
     * lives there. */
    size_t bytes = (cut ? n : t->numel) * dl_dtype_size(t->dtype);
    void *block = malloc(bytes > 0 ? bytes : 1);
    if (block == NULL) {
        json_decref(msg);
        return DL_ERR_NOMEM;
    }
    dl_status_t st =
        cut ? dl_tensor_copy_shown(t, block)
            : dl_cuda_copy(block, (dl_device_t){DL_DEVICE_CPU, 0}, t->data, t->device, bytes);
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

dl_status_t lab_rank_emit_none(lab_rank_t *r, const char *label, const char *name)
{
    if (atomic_load(&interrupted))
        return DL_OK;
    return lab_rank_emit(r, lab_snap_none_json(label, name), NULL, 0);
}

dl_status_t lab_rank_note(lab_rank_t *r, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return lab_rank_note_text(r, text);
}

dl_status_t lab_rank_note_text(lab_rank_t *r, const char *text)
{
    json_t *msg = json_pack("{s:s, s:s}", "type", "note", "text", text);
    if (msg == NULL)
        return DL_ERR_NOMEM;
    if (r->shown_as != NULL)
        json_object_set_new(msg, "of", json_string(r->shown_as));
    return lab_rank_emit(r, msg, NULL, 0);
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
    /* A shell shows a log with the statement it came from (one logged from
     * another thread too, such as the mpi backend's watchdog ending the
     * rank in the middle of a statement). */
    json_int_t id = __atomic_load_n(&r->cur_id, __ATOMIC_RELAXED);
    if (id != 0)
        json_object_set_new(j, "id", json_integer(id));
    pthread_mutex_lock(&r->send_lock);
    dl_status_t st = dl_frame_send_fd(r->fd, j, NULL, 0, CONTROL_TIMEOUT_MS);
    pthread_mutex_unlock(&r->send_lock);
    if (st != DL_OK)
        fprintf(stderr, "rank %d: %s\n", r->rank, msg);
    json_decref(j);
}

/* Splits HOST:PORT at its last colon (an IPv6 host has colons of its own):
 * a host, and a port from 1 to 65535 in decimal. */
static bool parse_control(const char *s, char *host, size_t cap, int *port_p)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s || (size_t)(colon - s) >= cap)
        return false;
    const char *p = colon + 1;
    if (*p == '\0' || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p))
        return false;
    int port = atoi(p);
    if (port < 1 || port > 65535)
        return false;
    snprintf(host, cap, "%.*s", (int)(colon - s), s);
    *port_p = port;
    return true;
}

static dl_status_t connect_control(lab_rank_t *r)
{
    const char *ctl = getenv("DISTLAB_CONTROL");
    if (ctl == NULL || ctl[0] == '\0') {
        fprintf(stderr, "distlab rank: DISTLAB_CONTROL (host:port of the controller) is not set; "
                        "ranks are started by `distlab run`, `distlab bench` or `distlab shell`\n");
        return DL_ERR_INVALID;
    }
    char host[256], q[DL_QUOTE_BUF];
    int port = 0;
    if (!parse_control(ctl, host, sizeof(host), &port)) {
        fprintf(stderr,
                "distlab rank: DISTLAB_CONTROL='%s' is malformed: expected HOST:PORT, the "
                "controller's address (such as 127.0.0.1:5000), as `distlab run`, `distlab "
                "bench` or `distlab shell` set it\n",
                dl_quote(ctl, q, sizeof(q)));
        return DL_ERR_INVALID;
    }
    /* The session's timeout bounds reaching the controller too. */
    int timeout_ms = (int)(r->timeout_s * 1000);
    dl_status_t st = dl_frame_connect(host, port, timeout_ms, &r->fd);
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
    st = dl_auth_client_fd(r->fd, token, who, timeout_ms, NULL);
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

bool lab_fault_parse(const char *s, int *rank_p, int *step_p, char *action, size_t cap)
{
    const char *colon = strchr(s, ':');
    if (colon == NULL)
        return false;
    char *end = NULL;
    errno = 0;
    long rank = strtol(s, &end, 10);
    if (end != colon || colon == s || s[0] == '-' || s[0] == '+' || errno != 0 || rank > INT_MAX)
        return false;
    const char *st = colon + 1;
    long step = strtol(st, &end, 10);
    if (end == st || (*end != '\0' && *end != ':') || st[0] == '-' || st[0] == '+' || errno != 0 ||
        step < 1 || step > INT_MAX)
        return false;
    const char *act = *end == ':' ? end + 1 : "kill";
    if (strcmp(act, "kill") != 0 && strcmp(act, "stop") != 0 && strcmp(act, "hang") != 0)
        return false;
    *rank_p = (int)rank;
    *step_p = (int)step;
    snprintf(action, cap, "%s", act);
    return true;
}

bool lab_rank_env_check(char *why, size_t cap)
{
    double timeout_s = 0;
    int copy, fence, bind;
    if (dl_comm_env_timeout(&timeout_s, why, cap) != DL_OK ||
        dl_comm_env_shm_copy(&copy, why, cap) != DL_OK ||
        dl_comm_env_shm_fence(&fence, why, cap) != DL_OK ||
        dl_comm_env_bind(&bind, why, cap) != DL_OK)
        return false;
    char q[DL_QUOTE_BUF];
    const char *log = getenv("DISTLAB_LOG");
    dl_log_level_t level;
    if (log != NULL && log[0] != '\0' && !dl_log_level_parse(log, &level)) {
        snprintf(why, cap, "DISTLAB_LOG='%s' is not a level: expected error, warn, info or debug",
                 dl_quote(log, q, sizeof(q)));
        return false;
    }
    const char *mb = getenv("DISTLAB_ARENA_MB");
    char *end = NULL;
    if (mb != NULL && mb[0] != '\0' && (strtol(mb, &end, 10) <= 0 || *end != '\0')) {
        snprintf(why, cap,
                 "DISTLAB_ARENA_MB='%s' is not a size: expected a whole number of MiB above 0, "
                 "such as 2048",
                 dl_quote(mb, q, sizeof(q)));
        return false;
    }
    const char *f = getenv("DISTLAB_FAULT");
    int rank, step;
    char action[8];
    if (f != NULL && f[0] != '\0' && !lab_fault_parse(f, &rank, &step, action, sizeof(action))) {
        snprintf(why, cap,
                 "DISTLAB_FAULT='%s' is malformed: expected RANK:STEP[:kill|stop|hang], such as "
                 "2:3 (rank 2 kills itself as it begins its step 3)",
                 dl_quote(f, q, sizeof(q)));
        return false;
    }
    return true;
}

/* The checks of lab_rank_env_check were made before this rank started. */
static void parse_fault(lab_rank_t *r)
{
    r->fault_rank = -1;
    snprintf(r->fault_action, sizeof(r->fault_action), "kill");
    const char *f = getenv("DISTLAB_FAULT");
    if (f == NULL || !lab_fault_parse(f, &r->fault_rank, &r->fault_step, r->fault_action,
                                      sizeof(r->fault_action)))
        r->fault_rank = -1;
}

/* ---- liveness ----
 *
 * The controller must tell a rank that stopped answering (SIGSTOPped, or a
 * whole process wedged) from one that is merely slow: on an oversubscribed
 * machine a rank can spend seconds in one step. Beats therefore come from a
 * thread of their own that does no computing and takes no lock of the
 * communicator, so a slow rank still beats on time and the controller can
 * use a threshold of the session's timeout (lab/ctrl/controller.c). A stopped
 * process stops beating as a whole. A rank whose computing thread is stuck
 * while it still beats shows it by its progress count not moving: each
 * event sent and each step begun moves it. */

static pthread_mutex_t beat_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t beat_cv = PTHREAD_COND_INITIALIZER;

static json_t *beat_json(lab_rank_t *r)
{
    /* Progress: each event sent and each step begun moves it. */
    dl_step_pos_t at = {0};
    bool whole = dl_step_board_read(&r->board, &at);
    if (!whole)
        at.begun = atomic_load_explicit(&r->board.begun, memory_order_relaxed);
    json_t *j = json_pack("{s:s, s:I, s:b}", "type", "beat", "progress",
                          (json_int_t)(atomic_load(&r->progress) + (long long)at.begun), "busy",
                          atomic_load(&r->busy));
    if (whole && at.n_steps > 0) {
        json_t *pos =
            json_pack("{s:s, s:i, s:i, s:s}", "coll", dl_coll_name((dl_coll_t)at.coll), "step",
                      at.step, "steps", at.n_steps, "phase", at.phase != NULL ? at.phase : "?");
        json_object_update(j, pos);
        json_decref(pos);
    }
    return j;
}

static void *beat_main(void *arg)
{
    lab_rank_t *r = arg;
    pthread_mutex_lock(&beat_mu);
    while (!atomic_load(&r->beat_stop)) {
        dl_cond_wait_ms(&beat_cv, &beat_mu, CLOCK_REALTIME, LAB_BEAT_MS);
        if (atomic_load(&r->beat_stop))
            break;
        /* The position is read under the lock, so a beat never tells an
         * older step than a step event sent before it. */
        pthread_mutex_lock(&r->send_lock);
        json_t *j = beat_json(r);
        dl_status_t st = dl_frame_send_fd(r->fd, j, NULL, 0, CONTROL_TIMEOUT_MS);
        pthread_mutex_unlock(&r->send_lock);
        json_decref(j);
        if (st != DL_OK)
            break; /* the controller is gone: the main thread finds out too */
    }
    pthread_mutex_unlock(&beat_mu);
    return NULL;
}

/* The beat thread blocks every signal: SIGUSR2 (Ctrl-C at the shell) must
 * reach the thread that waits in the communicator. */
static void start_beats(lab_rank_t *r)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r->beating = pthread_create(&r->beat_thread, NULL, beat_main, r) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void stop_beats(lab_rank_t *r)
{
    if (!r->beating)
        return;
    pthread_mutex_lock(&beat_mu);
    atomic_store(&r->beat_stop, true);
    pthread_cond_signal(&beat_cv);
    pthread_mutex_unlock(&beat_mu);
    pthread_join(r->beat_thread, NULL);
    r->beating = false;
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
    /* Step events would cost more than a benchmark's small collectives:
     * a benchmark's hook only records where it is, for the beats, and never
     * pauses. */
    if (r->job.bench)
        lab_rank_set_step_hook(r, lab_rank_bench_step_hook, true);
    else
        lab_rank_set_step_hook(r, lab_rank_step_hook, false);
    dl_comm_set_coll_hook(r->comm, NULL, NULL);
    atomic_store(&r->busy, true);
    dl_status_t st = r->job.bench ? lab_bench_rank(r) : lab_run_rank(r);
    atomic_store(&r->busy, false);
    /* The trace goes up before the end is told, failed or not. */
    if (lab_rank_trace_flush(r) != DL_OK && st == DL_OK)
        return DL_ERR_CLOSED;
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
    json_t *trace = json_object_get(msg, "trace");
    if (json_is_boolean(trace) && lab_rank_trace_on(r, json_is_true(trace)) != DL_OK)
        dl_log_error("cannot trace: out of memory");
}

/* One statement of the shell: {"type":"exec","id":N,"batch":B,"stmt":{...}},
 * with "whole": true when its snapshots must carry every element.
 * The statements of one line segment arrive together; once one fails, the
 * rest of its batch is skipped (the shell reports the failure). */
static dl_status_t exec_stmt(lab_rank_t *r, lab_eval_t *ev, const json_t *msg)
{
    json_int_t id = (json_int_t)lab_json_int(msg, "id", 0);
    json_int_t batch = (json_int_t)lab_json_int(msg, "batch", 0);
    take_arrived(r);
    if (batch != 0 && batch == r->failed_batch)
        return lab_rank_emit(r, json_pack("{s:s, s:I}", "type", "skipped", "id", id), NULL, 0);
    r->steps_seen = 0;
    r->cur_id = id;
    r->cur_batch = batch;
    r->error_quiet = false;
    r->assign_echoed = r->assign_unechoed = 0;
    r->n_unechoed = 0;
    r->snap_whole = json_is_true(json_object_get(msg, "whole"));
    lab_rank_set_step_hook(r, lab_rank_step_hook, false);
    /* Installed with `set check off` too: step mode learns the dtype here. */
    dl_comm_set_coll_hook(r->comm, lab_rank_coll_hook, r);
    atomic_store(&r->busy, true);
    dl_status_t st = lab_eval_stmt(ev, json_object_get(msg, "stmt"));
    atomic_store(&r->busy, false);
    if (lab_eval_echo_rest(ev) != DL_OK)
        return DL_ERR_CLOSED;
    /* The statement's trace goes up before its end is told. */
    if (lab_rank_trace_flush(r) != DL_OK)
        return DL_ERR_CLOSED;
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
 * in a session of their own (lab/ctrl/spawn.c) and ignore SIGINT besides, should
 * a launcher start them in the terminal's process group. The shell sends
 * SIGUSR2 to the ranks still running the statement it interrupts. The
 * handler only sets core's flag; without SA_RESTART a wait asleep on its
 * futex wakes at once. */
static void on_interrupt(int sig)
{
    (void)sig;
    atomic_store(&interrupted, true);
    dl_comm_interrupt_from_signal();
}

/* SIGUSR1: the shell found that what this rank waits for can never
 * complete (a recv nothing will match): only this rank's wait gives up. An
 * interrupt would fail the other ranks' work in flight too. */
static void on_refused(int sig)
{
    (void)sig;
    dl_comm_cancel_from_signal();
}

static void catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_refused;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGINT, SIG_IGN);
}

int lab_rank_main(void)
{
    lab_rank_t r;
    memset(&r, 0, sizeof(r));
    r.fd = -1;
    pthread_mutex_init(&r.send_lock, NULL);
    /* Before the first thread (heartbeats, the store's server, TCP's I/O). */
    dl_comm_prepare_process();
    /* Started by mpirun: Open MPI numbers the ranks. */
    lab_mpirun_adopt_env();
    const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
    r.rank = rs != NULL ? atoi(rs) : -1;
    /* The session's timeout comes in DISTLAB_TIMEOUT, as run, bench and
     * shell pass it; a rank started otherwise waits 30 s for its
     * controller. */
    char why[DL_QUOTE_BUF + 128];
    if (!lab_rank_env_check(why, sizeof(why))) {
        fprintf(stderr, "distlab rank: %s\n", why);
        return 2;
    }
    dl_comm_env_timeout(&r.timeout_s, why, sizeof(why));
    if (r.timeout_s <= 0)
        r.timeout_s = CONTROL_TIMEOUT_MS / 1000.0;
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
    /* A malformed environment is a usage error, like a bad flag. */
    dl_status_t cst = connect_control(&r);
    if (cst != DL_OK)
        return cst == DL_ERR_INVALID ? 2 : 1;
    start_beats(&r);
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
        stop_beats(&r);
        close(r.fd);
        return 1;
    }
    dl_comm_set_step_board(r.comm, &r.board);
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
        else if (strcmp(type, "interrupted") == 0) {
            dl_comm_interrupt_clear(); /* follows SIGUSR2: spares the next statement */
            atomic_store(&interrupted, false);
        } else
            take_at_once(&r, &f);
        dl_frame_clear(&f);
        if (st != DL_OK) {
            code = 1;
            break;
        }
    }
    dl_log_set_sink(NULL, NULL);
    stop_beats(&r);
    for (size_t i = 0; i < r.n_deferred; i++)
        dl_frame_clear(&r.deferred[i]);
    free(r.deferred);
    lab_eval_fini(&ev); /* groups and handles go before the world */
    dl_comm_destroy(r.comm);
    lab_rank_trace_free(&r);
    close(r.fd);
    return code;
}
