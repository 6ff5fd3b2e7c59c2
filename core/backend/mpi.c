/* The OpenMPI backend. Every distlab call becomes one MPI operation on a
 * communicator of this world's own: a duplicate of MPI_COMM_WORLD for the
 * world, one made with MPI_Comm_create_group for each subgroup. A
 * synchronous collective is the blocking call (MPI_Allreduce, ...), which
 * Open MPI runs with its tuned algorithms and without a wait loop of ours
 * around it; the watchdog (mpi_watch.c) ends the rank when it times out or
 * is interrupted. Async collectives and send/recv are the non-blocking
 * calls (MPI_Iallreduce, MPI_Isend, ...): work handles hold the MPI
 * request; whoever waits tests every pending request of the world, spins
 * briefly, then sleeps a little longer each time, so that many ranks on
 * few cores leave each other the CPU. Collectives run MPI's own algorithms,
 * one opaque step each (schedules = false). distlab adds what MPI lacks:
 * float16 and bfloat16, the avg op (mpi_types.c, and a division at
 * completion), and waits that are bounded and can be interrupted.
 *
 * Launching: every rank comes from mpirun, and RANK and WORLD_SIZE (from
 * which the communicator is made, as env:// makes it) must agree with
 * MPI_COMM_WORLD, e.g. RANK=$OMPI_COMM_WORLD_RANK.
 *
 * What MPI cannot do, and what follows from it:
 *   - A blocking call cannot be interrupted: on a timeout or Ctrl-C the
 *     watchdog says why in one line and ends the process, and mpirun ends
 *     the job (a rank that died ends it the same way).
 *   - A non-blocking collective cannot be cancelled: MPI_Cancel and
 *     MPI_Request_free are erroneous on one (MPI 3.1, 5.12). A wait that
 *     times out or is interrupted therefore abandons its request, and every
 *     other request of the world, and the backend is broken for good in
 *     this process: later calls fail at once, and no MPI call is made
 *     again (not even MPI_Comm_free or MPI_Finalize), so that an abandoned
 *     request never gets the progress that would let it write into memory
 *     the caller has been given back. The ranks must be restarted. (MPI's
 *     progress is per process, so this holds for every mpi world of it.)
 *   - dl_comm_abort is MPI_Abort: it ends every process of the job.
 *   - Debian's Open MPI is not CUDA-aware: cpu tensors only.
 *   - MPI_Comm_create_group blocks, without distlab's timeout: new_group
 *     waits for every member of the new group to call it. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "backend/backend.h"
#include "backend/mpi_types.h"
#include "backend/mpi_watch.h"
#include "comm/internal.h"
#include "distlab/log.h"

/* Open MPI moves a large message only while some MPI call runs (it has no
 * progress thread for shared memory or TCP): a wait that naps stalls the
 * transfer. So a wait tests in a loop, yielding the core each time, for as
 * long as a large collective takes, and only then naps. */
#define SPIN_NS (100 * 1000 * 1000) /* test in a loop, yielding, this long */
/* MPI guarantees tags up to 32767 everywhere (MPI_TAG_UB is at least that). */
#define SAFE_TAG_MASK 0x7fff

/* ------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------ */

/* MPI is initialised once per process, whatever the number of worlds, and
 * any MPI call progresses every request of the process: an abandoned
 * request makes the backend unusable in the whole process, not only in
 * its own world. */
static bool mpi_ours;            /* we called MPI_Init_thread, so we call MPI_Finalize */
static int live_worlds;          /* mpi worlds not yet destroyed */
static bool abandonment;         /* a request was abandoned: no more MPI calls */
static char abandoned_what[160]; /* what was abandoned, for the fail-fast message */

/* Per communicator (the world and each group). */
typedef struct {
    MPI_Comm comm;
} mpi_comm_t;

/* Per world. */
typedef struct {
    int tag_ub; /* MPI_TAG_UB */
} mpi_world_t;

typedef enum { MW_SEND, MW_RECV, MW_COLL } mw_kind_t;

typedef struct {
    mw_kind_t kind;
    MPI_Request req;
    size_t nbytes; /* receives: the tensor's size, that the message must fill */
    /* avg: the result to divide by the group's size once it is there */
    void *avg_buf;
    size_t avg_n;
    dl_dtype_t dtype;
    void *tmp; /* a copy of an input that overlaps the output */
    int *v;    /* all_to_all with splits: counts and displacements, 4 n ints */
    /* The request was left to MPI (see the top): what it may still read
     * or write stays allocated. */
    bool abandoned;
} mpi_work_t;

static MPI_Comm comm_of(const dl_comm_t *comm)
{
    return ((const mpi_comm_t *)comm->backend)->comm;
}

static mpi_world_t *mworld(const dl_comm_t *comm)
{
    return comm->world->backend;
}

/* ------------------------------------------------------------------------
 * Errors: every MPI error code becomes a status and a message with MPI's
 * own words. The communicators return errors (MPI_ERRORS_RETURN) instead
 * of killing the process, so each call's code is checked where it is made.
 * ------------------------------------------------------------------------ */

static int error_class(int rc)
{
    int cls = MPI_ERR_OTHER;
    if (MPI_Error_class(rc, &cls) != MPI_SUCCESS)
        cls = MPI_ERR_OTHER;
    return cls;
}

static dl_status_t status_of(int rc)
{
    switch (error_class(rc)) {
    case MPI_ERR_TRUNCATE:
        return DL_ERR_MISMATCH;
    case MPI_ERR_NO_MEM:
        return DL_ERR_NOMEM;
    case MPI_ERR_BUFFER:
    case MPI_ERR_COUNT:
    case MPI_ERR_TYPE:
    case MPI_ERR_TAG:
    case MPI_ERR_COMM:
    case MPI_ERR_RANK:
    case MPI_ERR_ROOT:
    case MPI_ERR_GROUP:
    case MPI_ERR_OP:
    case MPI_ERR_ARG:
        return DL_ERR_INVALID;
    default:
        return DL_ERR_IO;
    }
}

static void error_text(int rc, char text[MPI_MAX_ERROR_STRING])
{
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, MPI_MAX_ERROR_STRING, "MPI error code %d", rc);
}

/* Fails comm with MPI error rc: what was being done, the MPI call, and
 * MPI's message. */
static dl_status_t mpi_fail(dl_comm_t *comm, int rc, const char *what, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    error_text(rc, text);
    dl_status_t st = status_of(rc);
    dl__comm_fail(comm, st, "%s: %s failed on the mpi backend: %s", what, call, text);
    return st;
}

static dl_status_t check_usable(dl_comm_t *comm, const char *what)
{
    if (!abandonment)
        return DL_OK;
    dl__comm_fail(comm, DL_ERR_ABORTED,
                  "%s: the mpi world is unusable after a timed-out/interrupted operation (%s); "
                  "restart the ranks",
                  what, abandoned_what);
    return DL_ERR_ABORTED;
}

/* MPI counts are ints. */
static dl_status_t to_int(dl_comm_t *comm, const char *what, size_t n, const char *unit, int *n_p)
{
    if (n > (size_t)INT_MAX) {
        dl__comm_fail(comm, DL_ERR_TOO_BIG,
                      "%s: %zu %s is more than MPI takes in one call on the mpi backend (an int "
                      "count, at most %d); split the tensor",
                      what, n, unit, INT_MAX);
        return DL_ERR_TOO_BIG;
    }
    *n_p = (int)n;
    return DL_OK;
}

/* ------------------------------------------------------------------------
 * Set-up and teardown
 * ------------------------------------------------------------------------ */

static dl_status_t mpi_init(dl_comm_t *world)
{
    dl_world_t *w = world->world;
    int initialized = 0, finalized = 0, rc;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (abandonment)
        return check_usable(world, "mpi backend");
    if (finalized) {
        dl__comm_fail(world, DL_ERR_UNSUPPORTED,
                      "the mpi backend cannot start: MPI was finalized already in this process, "
                      "and MPI cannot be initialized twice");
        return DL_ERR_UNSUPPORTED;
    }
    if (!initialized) {
        /* Single, as a bare MPI program's MPI_Init: in a distlab rank only
         * the main thread calls MPI (the beat thread and the watchdog never
         * do), and Open MPI 4.1 runs an 8-byte MPI_Allreduce at np=2 27%
         * slower at any higher level (0.245 against 0.19 us). A program
         * that uses distlab's communicators from several threads
         * initialises MPI itself, at the level it needs: distlab then keeps
         * it (see docs/backends.md). */
        int provided = 0;
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided);
        if (rc != MPI_SUCCESS)
            return mpi_fail(world, rc, "mpi backend", "MPI_Init_thread");
        mpi_ours = true;
        /* MPI is ours, so its errors that concern no communicator of ours
         * (datatypes, ops, groups) may return too rather than end the
         * process. An application that initialised MPI keeps its choice. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    int mrank = -1, msize = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mrank);
    MPI_Comm_size(MPI_COMM_WORLD, &msize);
    if (mrank != w->rank || msize != w->size) {
        /* MPI stays initialised: MPI_Finalize would wait for ranks that
         * may never get there. */
        dl__comm_fail(world, DL_ERR_INVALID,
                      "mpi backend: RANK=%d WORLD_SIZE=%d, but MPI_COMM_WORLD has this process "
                      "as rank %d of %d (start the ranks with mpirun -np %d and take RANK and "
                      "WORLD_SIZE from OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE)",
                      w->rank, w->size, mrank, msize, w->size);
        return DL_ERR_INVALID;
    }
    dl_status_t st = DL_ERR_NOMEM;
    mpi_world_t *mw = calloc(1, sizeof(*mw));
    mpi_comm_t *mc = calloc(1, sizeof(*mc));
    if (mw == NULL || mc == NULL) {
        dl__comm_fail(world, st, "mpi backend: out of memory");
        goto err_free;
    }
    /* A communicator of our own keeps distlab's messages apart from the
     * application's own on MPI_COMM_WORLD. */
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &mc->comm)) != MPI_SUCCESS) {
        st = mpi_fail(world, rc, "mpi backend", "MPI_Comm_dup");
        goto err_free;
    }
    if ((rc = MPI_Comm_set_errhandler(mc->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS) {
        st = mpi_fail(world, rc, "mpi backend", "MPI_Comm_set_errhandler");
        goto err_free_comm;
    }
    MPI_Comm_set_name(mc->comm, "distlab world");
    void *attr = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag);
    mw->tag_ub = flag && attr != NULL ? *(int *)attr : SAFE_TAG_MASK;
    int err = dl__mpi_watch_start();
    if (err != 0) {
        dl__comm_fail(world, DL_ERR_SYSTEM, "mpi backend: cannot start the watchdog thread: %s",
                      strerror(err));
        st = DL_ERR_SYSTEM;
        goto err_free_comm;
    }
    if ((rc = dl__mpi_types_acquire()) != MPI_SUCCESS) {
        st = mpi_fail(world, rc, "mpi backend", "creating the float16 datatypes");
        goto err_stop_watch;
    }
    live_worlds++;
    world->backend = mc;
    w->backend = mw;
    return DL_OK;

err_stop_watch:
    if (live_worlds == 0)
        dl__mpi_watch_stop();
err_free_comm:
    MPI_Comm_free(&mc->comm);
err_free:
    free(mc);
    free(mw);
    return st;
}

static dl_status_t mpi_new_group(dl_comm_t *parent, dl_comm_t *group)
{
    const char *what = "new_group";
    dl_status_t st = check_usable(parent, what);
    if (st != DL_OK)
        return st;
    int n = group->size, rc = MPI_SUCCESS;
    const char *call = "";
    MPI_Group pgroup = MPI_GROUP_NULL, ngroup = MPI_GROUP_NULL;
    mpi_comm_t *mc = calloc(1, sizeof(*mc));
    int *ranks = malloc(sizeof(int) * (size_t)n);
    if (mc == NULL || ranks == NULL) {
        dl__comm_fail(parent, DL_ERR_NOMEM, "%s: out of memory", what);
        st = DL_ERR_NOMEM;
        goto err_free;
    }
    mc->comm = MPI_COMM_NULL;
    /* The group names world ranks; the parent's MPI communicator numbers
     * its members by their rank in the parent (itself perhaps a group). */
    for (int i = 0; i < n; i++) {
        ranks[i] = -1;
        for (int p = 0; p < parent->size; p++)
            if (parent->world_ranks[p] == group->world_ranks[i])
                ranks[i] = p;
        if (ranks[i] < 0) {
            dl__comm_fail(parent, DL_ERR_INVALID, "%s: world rank %d is not in the parent group",
                          what, group->world_ranks[i]);
            st = DL_ERR_INVALID;
            goto err_free;
        }
    }
    MPI_Comm pc = comm_of(parent);
    if ((rc = MPI_Comm_group(pc, &pgroup)) != MPI_SUCCESS) {
        call = "MPI_Comm_group";
        goto err_mpi;
    }
    if ((rc = MPI_Group_incl(pgroup, n, ranks, &ngroup)) != MPI_SUCCESS) {
        call = "MPI_Group_incl";
        goto err_mpi;
    }
    /* Only the members call it. The tag keeps this creation apart from
     * another one in flight on the parent; context ids differ between the
     * groups of a world, and are taken modulo the tags MPI guarantees. */
    int tag = (int)(group->ctx & SAFE_TAG_MASK);
    if ((rc = MPI_Comm_create_group(pc, ngroup, tag, &mc->comm)) != MPI_SUCCESS) {
        call = "MPI_Comm_create_group";
        goto err_mpi;
    }
    if ((rc = MPI_Comm_set_errhandler(mc->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS) {
        call = "MPI_Comm_set_errhandler";
        goto err_mpi;
    }
    int mrank = -1;
    MPI_Comm_rank(mc->comm, &mrank);
    if (mrank != group->rank) {
        dl__comm_fail(parent, DL_ERR_PROTOCOL, "%s: MPI numbers this rank %d in the group, not %d",
                      what, mrank, group->rank);
        st = DL_ERR_PROTOCOL;
        goto err_free;
    }
    MPI_Group_free(&ngroup);
    MPI_Group_free(&pgroup);
    free(ranks);
    group->backend = mc;
    return DL_OK;

err_mpi:
    st = mpi_fail(parent, rc, what, call);
err_free:
    if (mc != NULL && mc->comm != MPI_COMM_NULL)
        MPI_Comm_free(&mc->comm);
    if (ngroup != MPI_GROUP_NULL)
        MPI_Group_free(&ngroup);
    if (pgroup != MPI_GROUP_NULL)
        MPI_Group_free(&pgroup);
    free(ranks);
    free(mc);
    return st;
}

/* Whether MPI may be called at teardown: not after an abandonment (see the
 * top), nor once the application has finalized MPI itself. */
static bool mpi_callable(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    return !abandonment && !finalized;
}

static void mpi_destroy(dl_comm_t *comm)
{
    bool callable = mpi_callable();
    mpi_comm_t *mc = comm->backend;
    if (mc != NULL) {
        if (callable && mc->comm != MPI_COMM_NULL)
            MPI_Comm_free(&mc->comm);
        free(mc);
        comm->backend = NULL;
    }
    if (!comm->is_world || comm->world->backend == NULL)
        return;
    free(comm->world->backend);
    comm->world->backend = NULL;
    live_worlds--;
    if (live_worlds == 0)
        dl__mpi_watch_stop();
    if (!callable) {
        if (abandonment && live_worlds == 0 && mpi_ours)
            dl_log_warn("mpi backend: not finalizing MPI, because an abandoned request is still "
                        "in flight; mpirun will report that this rank exited without "
                        "MPI_Finalize");
        return;
    }
    dl__mpi_types_release();
    if (live_worlds == 0 && mpi_ours) {
        MPI_Finalize();
        mpi_ours = false;
    }
}

static void mpi_abort(dl_comm_t *comm, const char *why)
{
    dl_world_t *world = comm->world;
    dl_log_error("rank %d aborts the mpi world: %s", world->rank, why);
    /* MPI cannot fail the other ranks' waits and leave them running:
     * MPI_Abort ends every process of the job, this one included, and
     * mpirun reports it. */
    MPI_Abort(comm_of(comm), 1);
}

/* ------------------------------------------------------------------------
 * Point to point: bytes, matched by (source, tag) in the order they were
 * sent, as MPI's non-overtaking rule promises and distlab requires.
 * ------------------------------------------------------------------------ */

static mpi_work_t *mwork_new(dl_comm_t *comm, dl_work_t *w, mw_kind_t kind)
{
    mpi_work_t *mw = calloc(1, sizeof(*mw));
    if (mw == NULL) {
        dl__comm_fail(comm, DL_ERR_NOMEM, "%s: out of memory", w->what);
        return NULL;
    }
    mw->kind = kind;
    mw->req = MPI_REQUEST_NULL;
    w->backend = mw;
    return mw;
}

static dl_status_t check_tag(dl_comm_t *comm, const char *what, int tag)
{
    int ub = mworld(comm)->tag_ub;
    if (tag >= 0 && tag <= ub)
        return DL_OK;
    dl__comm_fail(comm, DL_ERR_RANGE, "%s: tag %d is out of MPI's range (0 to MPI_TAG_UB = %d)",
                  what, tag, ub);
    return DL_ERR_RANGE;
}

static dl_status_t mpi_isend(dl_comm_t *comm, const void *data, size_t nbytes, int dst, int tag,
                             dl_work_t *w)
{
    dl_status_t st;
    int n = 0;
    if ((st = check_usable(comm, w->what)) != DL_OK ||
        (st = check_tag(comm, w->what, tag)) != DL_OK ||
        (st = to_int(comm, w->what, nbytes, "bytes", &n)) != DL_OK)
        return st;
    mpi_work_t *mw = mwork_new(comm, w, MW_SEND);
    if (mw == NULL)
        return DL_ERR_NOMEM;
    int rc = MPI_Isend(data, n, MPI_BYTE, dst, tag, comm_of(comm), &mw->req);
    return rc == MPI_SUCCESS ? DL_OK : mpi_fail(comm, rc, w->what, "MPI_Isend");
}

static dl_status_t mpi_irecv(dl_comm_t *comm, void *data, size_t nbytes, int src, int tag,
                             dl_work_t *w)
{
    dl_status_t st;
    int n = 0;
    if ((st = check_usable(comm, w->what)) != DL_OK ||
        (st = check_tag(comm, w->what, tag)) != DL_OK ||
        (st = to_int(comm, w->what, nbytes, "bytes", &n)) != DL_OK)
        return st;
    mpi_work_t *mw = mwork_new(comm, w, MW_RECV);
    if (mw == NULL)
        return DL_ERR_NOMEM;
    mw->nbytes = nbytes;
    int from = src == DL_ANY_SOURCE ? MPI_ANY_SOURCE : src;
    int rc = MPI_Irecv(data, n, MPI_BYTE, from, tag, comm_of(comm), &mw->req);
    return rc == MPI_SUCCESS ? DL_OK : mpi_fail(comm, rc, w->what, "MPI_Irecv");
}

/* ------------------------------------------------------------------------
 * Collectives: coll.h's buffers map onto MPI's arguments directly, one
 * non-blocking call each.
 * ------------------------------------------------------------------------ */

/* all_to_all with splits: this rank's row of the matrix (what it sends to
 * each rank) and column (what it receives from each), with displacements,
 * as MPI_Ialltoallv's ints. MPI reads them until the operation completes,
 * so they live in the work. */
static dl_status_t alltoallv_counts(dl_comm_t *comm, const char *what, const size_t *splits,
                                    mpi_work_t *mw, size_t *in_n_p, size_t *out_n_p)
{
    int n = comm->size, r = comm->rank;
    int *v = malloc(sizeof(int) * 4 * (size_t)n);
    if (v == NULL) {
        dl__comm_fail(comm, DL_ERR_NOMEM, "%s: out of memory", what);
        return DL_ERR_NOMEM;
    }
    int *scount = v, *sdispl = v + n, *rcount = v + 2 * n, *rdispl = v + 3 * n;
    size_t soff = 0, roff = 0;
    for (int j = 0; j < n; j++) {
        size_t s = splits[(size_t)r * (size_t)n + (size_t)j];
        size_t t = splits[(size_t)j * (size_t)n + (size_t)r];
        if (s > INT_MAX || t > INT_MAX || soff > INT_MAX || roff > INT_MAX) {
            dl__comm_fail(comm, DL_ERR_TOO_BIG,
                          "%s: the split sizes reach past %d elements, and MPI_Ialltoallv takes "
                          "int counts and offsets; split the tensor",
                          what, INT_MAX);
            free(v);
            return DL_ERR_TOO_BIG;
        }
        scount[j] = (int)s;
        sdispl[j] = (int)soff;
        rcount[j] = (int)t;
        rdispl[j] = (int)roff;
        soff += s;
        roff += t;
    }
    mw->v = v;
    *in_n_p = soff;
    *out_n_p = roff;
    return DL_OK;
}

static bool overlaps(const void *p, size_t pn, const void *q, size_t qn)
{
    uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
    return pn > 0 && qn > 0 && x < y + qn && y < x + pn;
}

/* MPI requires the send and receive buffers of a collective to be apart
 * (but for MPI_IN_PLACE); an input that overlaps the output (all_gather's
 * input as its own chunk of the output, say) is copied first. */
static dl_status_t separate(dl_comm_t *comm, const char *what, mpi_work_t *mw, const void **in_p,
                            size_t in_bytes, const void *out, size_t out_bytes)
{
    if (*in_p == NULL || !overlaps(*in_p, in_bytes, out, out_bytes))
        return DL_OK;
    mw->tmp = malloc(in_bytes);
    if (mw->tmp == NULL) {
        dl__comm_fail(comm, DL_ERR_NOMEM, "%s: out of memory", what);
        return DL_ERR_NOMEM;
    }
    memcpy(mw->tmp, *in_p, in_bytes);
    *in_p = mw->tmp;
    return DL_OK;
}

/* Why run_coll cannot run call (out of line: it runs for every call). */
static dl_status_t __attribute__((noinline))
refuse(dl_comm_t *comm, const dl_coll_call_t *call, const char *what)
{
    if (call->algo != NULL) {
        dl__comm_fail(comm, DL_ERR_UNSUPPORTED,
                      "%s: algorithm '%s' is a builtin schedule; the mpi backend runs MPI's own "
                      "algorithms (unset it)",
                      what, call->algo);
        return DL_ERR_UNSUPPORTED;
    }
    dl__comm_fail(comm, DL_ERR_UNSUPPORTED, "%s: op %s on %s has no MPI op", what,
                  dl_op_name(call->args.op), dl_dtype_name(call->dtype));
    return DL_ERR_UNSUPPORTED;
}

/* Runs call as one MPI call: the blocking one (MPI_Allreduce) when
 * blocking, else the non-blocking one (MPI_Iallreduce) whose request goes
 * in mw->req. What MPI reads until the end (a copy of an input, the
 * counts of alltoallv) goes in mw, and so does the avg to divide. Inlined
 * into its two callers, so that each has only its own calls. */
static inline __attribute__((always_inline)) dl_status_t
run_coll(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w, mpi_work_t *mw, bool blocking)
{
    const dl_coll_args_t *a = &call->args;
    const char *what = w->what;
    dl_status_t st;
    if ((st = check_usable(comm, what)) != DL_OK)
        return st;
    if (call->algo != NULL)
        return refuse(comm, call, what);
    MPI_Comm mc = comm_of(comm);
    MPI_Datatype dt = dl__mpi_datatype(call->dtype);
    size_t n = (size_t)comm->size;
    int count = 0, root = a->root;
    bool at_root = comm->rank == root;
    if (a->coll != DL_COLL_BARRIER && a->splits == NULL &&
        (st = to_int(comm, what, a->count, "elements", &count)) != DL_OK)
        return st;
    MPI_Op op = MPI_OP_NULL;
    if (a->coll == DL_COLL_ALL_REDUCE || dl_coll_has_op(a->coll)) {
        op = dl__mpi_op(a->op, call->dtype);
        if (op == MPI_OP_NULL)
            return refuse(comm, call, what);
        if (a->op == DL_OP_AVG) {
            /* The sum, divided where the result lives once it is there. */
            mw->dtype = call->dtype;
            mw->avg_n = a->count;
            if (a->coll != DL_COLL_REDUCE || at_root)
                mw->avg_buf = call->out;
        }
    }
    const void *in = call->in;
    void *out = call->out;
    /* Element and chunk sizes, for the collectives that copy or separate
     * buffers (not all_reduce, reduce or barrier). */
    size_t esz = 0, cb = 0;
    if (a->coll != DL_COLL_ALL_REDUCE && a->coll != DL_COLL_REDUCE && a->coll != DL_COLL_BARRIER) {
        esz = dl_dtype_size(call->dtype);
        cb = a->count * esz;
    }
    const char *fn = "";
    int rc = MPI_SUCCESS;
    switch (a->coll) {
    case DL_COLL_BROADCAST:
        fn = blocking ? "MPI_Bcast" : "MPI_Ibcast";
        if (at_root && in != out && cb > 0)
            memcpy(out, in, cb);
        rc = blocking ? MPI_Bcast(out, count, dt, root, mc)
                      : MPI_Ibcast(out, count, dt, root, mc, &mw->req);
        break;
    case DL_COLL_SCATTER:
        fn = blocking ? "MPI_Scatter" : "MPI_Iscatter";
        if (!at_root)
            in = NULL;
        if ((st = separate(comm, what, mw, &in, n * cb, out, cb)) != DL_OK)
            return st;
        rc = blocking ? MPI_Scatter(in, count, dt, out, count, dt, root, mc)
                      : MPI_Iscatter(in, count, dt, out, count, dt, root, mc, &mw->req);
        break;
    case DL_COLL_GATHER:
        fn = blocking ? "MPI_Gather" : "MPI_Igather";
        if (!at_root)
            out = NULL;
        if ((st = separate(comm, what, mw, &in, cb, out, n * cb)) != DL_OK)
            return st;
        rc = blocking ? MPI_Gather(in, count, dt, out, count, dt, root, mc)
                      : MPI_Igather(in, count, dt, out, count, dt, root, mc, &mw->req);
        break;
    case DL_COLL_REDUCE:
        /* In place at the root; elsewhere the buffer is only read. */
        fn = blocking ? "MPI_Reduce" : "MPI_Ireduce";
        {
            const void *src = at_root && in == out ? MPI_IN_PLACE : in;
            void *dst = at_root ? out : NULL;
            rc = blocking ? MPI_Reduce(src, dst, count, dt, op, root, mc)
                          : MPI_Ireduce(src, dst, count, dt, op, root, mc, &mw->req);
        }
        break;
    case DL_COLL_ALL_GATHER:
        fn = blocking ? "MPI_Allgather" : "MPI_Iallgather";
        if ((st = separate(comm, what, mw, &in, cb, out, n * cb)) != DL_OK)
            return st;
        rc = blocking ? MPI_Allgather(in, count, dt, out, count, dt, mc)
                      : MPI_Iallgather(in, count, dt, out, count, dt, mc, &mw->req);
        break;
    case DL_COLL_ALL_REDUCE:
        fn = blocking ? "MPI_Allreduce" : "MPI_Iallreduce";
        {
            const void *src = in == out ? MPI_IN_PLACE : in;
            rc = blocking ? MPI_Allreduce(src, out, count, dt, op, mc)
                          : MPI_Iallreduce(src, out, count, dt, op, mc, &mw->req);
        }
        break;
    case DL_COLL_REDUCE_SCATTER:
        fn = blocking ? "MPI_Reduce_scatter_block" : "MPI_Ireduce_scatter_block";
        if ((st = separate(comm, what, mw, &in, n * cb, out, cb)) != DL_OK)
            return st;
        rc = blocking ? MPI_Reduce_scatter_block(in, out, count, dt, op, mc)
                      : MPI_Ireduce_scatter_block(in, out, count, dt, op, mc, &mw->req);
        break;
    case DL_COLL_ALL_TO_ALL:
        if (a->splits != NULL) {
            fn = blocking ? "MPI_Alltoallv" : "MPI_Ialltoallv";
            size_t in_n = 0, out_n = 0;
            if ((st = alltoallv_counts(comm, what, a->splits, mw, &in_n, &out_n)) != DL_OK ||
                (st = separate(comm, what, mw, &in, in_n * esz, out, out_n * esz)) != DL_OK)
                return st;
            int *v = mw->v, k = comm->size;
            rc = blocking ? MPI_Alltoallv(in, v, v + k, dt, out, v + 2 * k, v + 3 * k, dt, mc)
                          : MPI_Ialltoallv(in, v, v + k, dt, out, v + 2 * k, v + 3 * k, dt, mc,
                                           &mw->req);
        } else {
            fn = blocking ? "MPI_Alltoall" : "MPI_Ialltoall";
            if ((st = separate(comm, what, mw, &in, n * cb, out, n * cb)) != DL_OK)
                return st;
            rc = blocking ? MPI_Alltoall(in, count, dt, out, count, dt, mc)
                          : MPI_Ialltoall(in, count, dt, out, count, dt, mc, &mw->req);
        }
        break;
    case DL_COLL_BARRIER:
        fn = blocking ? "MPI_Barrier" : "MPI_Ibarrier";
        rc = blocking ? MPI_Barrier(mc) : MPI_Ibarrier(mc, &mw->req);
        break;
    case DL_COLL__COUNT:
        dl__comm_fail(comm, DL_ERR_INVALID, "%s: unknown collective", what);
        return DL_ERR_INVALID;
    }
    return rc == MPI_SUCCESS ? DL_OK : mpi_fail(comm, rc, what, fn);
}

static dl_status_t mpi_coll(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    mpi_work_t *mw = mwork_new(comm, w, MW_COLL);
    if (mw == NULL)
        return DL_ERR_NOMEM;
    return run_coll(comm, call, w, mw, false);
}

/* A synchronous collective: the blocking MPI call, which Open MPI runs
 * with its tuned algorithms (the non-blocking ones go through libnbc's,
 * slower for large messages) and without a wait loop around it. It cannot
 * be cancelled, so the watchdog (mpi_watch.c) stands by: on a timeout or
 * Ctrl-C it ends the process with one line, and mpirun ends the job. */
static dl_status_t mpi_coll_blocking(dl_comm_t *comm, const dl_coll_call_t *call, dl_work_t *w)
{
    /* Ctrl-C before the call: nothing has moved, the world stays usable. */
    if (dl__comm_interrupt_pending() && dl__comm_interrupt_take()) {
        dl__comm_fail(comm, DL_ERR_ABORTED, "%s aborted: %s", w->what, DL__INTERRUPTED_WHY);
        return DL_ERR_ABORTED;
    }
    mpi_work_t mw = {.kind = MW_COLL, .req = MPI_REQUEST_NULL};
    dl__mpi_watch_arm(call->args.coll, comm->timeout_s);
    dl_status_t st = run_coll(comm, call, w, &mw, true);
    dl__mpi_watch_disarm();
    if (mw.v != NULL || mw.tmp != NULL) { /* rarely: this runs for every call */
        free(mw.v);
        free(mw.tmp);
    }
    if (st == DL_OK && mw.avg_buf != NULL &&
        (st = dl_op_scale(mw.dtype, mw.avg_buf, mw.avg_n, comm->size)) != DL_OK)
        dl__comm_fail(comm, st, "%s: cannot divide the avg: %s", w->what, dl_strerror(st));
    return st;
}

/* ------------------------------------------------------------------------
 * Progress and waiting
 * ------------------------------------------------------------------------ */

/* A request has completed: check a message's size, divide an avg. */
static dl_status_t complete(dl_work_t *w, const MPI_Status *status)
{
    mpi_work_t *mw = w->backend;
    if (mw->kind == MW_RECV) {
        int got = 0;
        MPI_Get_count(status, MPI_BYTE, &got);
        w->source = status->MPI_SOURCE; /* the rank in this communicator */
        if ((size_t)got != mw->nbytes) {
            /* A shorter message is legal in MPI; distlab, like torch, wants
             * the tensor filled, as the builtin backend does. */
            dl__comm_fail(w->comm, DL_ERR_MISMATCH,
                          "%s: the message from rank %d has %d bytes, the tensor %zu", w->what,
                          status->MPI_SOURCE, got, mw->nbytes);
            return DL_ERR_MISMATCH;
        }
    }
    if (mw->avg_buf != NULL) {
        dl_status_t st = dl_op_scale(mw->dtype, mw->avg_buf, mw->avg_n, w->comm->size);
        if (st != DL_OK) {
            dl__comm_fail(w->comm, st, "%s: cannot divide the avg: %s", w->what, dl_strerror(st));
            return st;
        }
    }
    return DL_OK;
}

static dl_status_t mpi_progress(dl_work_t *w)
{
    mpi_work_t *mw = w->backend;
    MPI_Status status;
    memset(&status, 0, sizeof(status));
    int done = 0;
    int rc = MPI_Test(&mw->req, &done, &status);
    if (rc != MPI_SUCCESS) {
        /* Open MPI frees a request that failed. */
        mw->req = MPI_REQUEST_NULL;
        if (mw->kind == MW_RECV && error_class(rc) == MPI_ERR_TRUNCATE) {
            char text[MPI_MAX_ERROR_STRING];
            error_text(rc, text);
            dl__comm_fail(w->comm, DL_ERR_MISMATCH,
                          "%s: the message is larger than the tensor's %zu bytes (%s)", w->what,
                          mw->nbytes, text);
            return DL_ERR_MISMATCH;
        }
        return mpi_fail(w->comm, rc, w->what, "MPI_Test");
    }
    return done ? complete(w, &status) : DL_ERR_AGAIN;
}

/* Gives up every pending work of the world after a timeout or an
 * interrupt. Their requests cannot be cancelled (see the top): they are
 * left to MPI, with the memory they use, and no MPI call is made again. */
static void abandon_all(dl_world_t *world, dl_work_t *waited, dl_status_t st, double timeout_s)
{
    char cause[320];
    if (st == DL_ERR_TIMEOUT)
        snprintf(cause, sizeof(cause),
                 "%s timed out after %g s on the mpi backend (a peer may be stuck or dead)",
                 waited->what, timeout_s);
    else
        snprintf(cause, sizeof(cause), "%s aborted: %s", waited->what, DL__INTERRUPTED_WHY);
    abandonment = true;
    snprintf(abandoned_what, sizeof(abandoned_what), "%s %s", waited->what,
             st == DL_ERR_TIMEOUT ? "timed out" : "interrupted");
    dl_work_t *next;
    for (dl_work_t *w = world->active; w != NULL; w = next) {
        next = w->next_active;
        ((mpi_work_t *)w->backend)->abandoned = true;
        if (w == waited)
            continue;
        if (st == DL_ERR_TIMEOUT)
            dl__comm_fail(w->comm, st, "%s abandoned: %s", w->what, cause);
        else
            dl__comm_fail(w->comm, st, "%s aborted: %s", w->what, DL__INTERRUPTED_WHY);
        dl__work_finish(w, st);
    }
    if (!waited->done) {
        dl__comm_fail(waited->comm, st, "%s", cause);
        dl__work_finish(waited, st);
    }
}

/* Tests in a loop, yielding, for as long as a large collective takes, and
 * only then naps (see SPIN_NS). */
static void mpi_wait_plan(dl_comm_t *comm, dl_wait_plan_t *plan)
{
    (void)comm;
    plan->spin_s = SPIN_NS * 1e-9;
    plan->spin_yield = true;
    plan->check_s = 0;
}

static void mpi_wait_give_up(dl_comm_t *comm, dl_work_t *waited, dl_status_t st, const char *why,
                             double timeout_s)
{
    (void)why; /* the mpi backend has no wait_check: st is a timeout or Ctrl-C */
    abandon_all(comm->world, waited, st, timeout_s);
}

static void mpi_work_fini(dl_work_t *w)
{
    mpi_work_t *mw = w->backend;
    if (mw == NULL)
        return;
    if (!mw->abandoned) {
        free(mw->v);
        free(mw->tmp);
    }
    free(mw);
    w->backend = NULL;
}

const dl_backend_ops_t dl__mpi_ops = {
    .name = "mpi",
    /* Debian's Open MPI is not CUDA-aware: no cuda tensors. */
    .caps = {DL_CAP_ALL, 0},
    .schedules = false,
    .check_op = NULL, /* every op dl_op_check allows has an MPI op (mpi_types.c) */
    .init = mpi_init,
    .new_group = mpi_new_group,
    .destroy = mpi_destroy,
    .abort = mpi_abort,
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .coll = mpi_coll,
    .coll_blocking = mpi_coll_blocking,
    .progress = mpi_progress,
    .wait_plan = mpi_wait_plan,
    .wait_give_up = mpi_wait_give_up,
    .work_fini = mpi_work_fini,
    .allocator = NULL,
};
