/* Cross-checks the mpi backend against the builtin one, under mpirun.
 *
 * Every process joins two worlds of the same ranks: one on the builtin
 * backend and one on the mpi backend. Each case (a collective, a dtype, an
 * op, a count, a root) runs on both with the same inputs, drawn from a
 * generator seeded by the case and the rank, and the two results must
 * agree: bit for bit where no floating-point arithmetic happens, within
 * the dtype's rounding where the backends may add or multiply in another
 * order. Then point to point (tags, any source, async handles), several
 * async collectives in flight at once, subgroups (and a group of a group),
 * and the mpi backend's failure paths.
 *
 * Run as `mpirun -np N test_mpi` (N >= 2; the groups need 3). Every rank
 * prints a line per failure with both values; the failure count is summed
 * over the ranks, so that all of them exit alike. */
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "distlab/comm.h"
#include "distlab/log.h"

/* ------------------------------------------------------------------------
 * Reporting
 * ------------------------------------------------------------------------ */

static int g_rank, g_size;
static long g_failures, g_cases;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d: FAIL %s\n", g_rank, msg);
    g_failures++;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__VA_ARGS__);                                                                     \
    } while (0)

/* Expected failures log errors too: keep the last message, and keep quiet
 * while a negative test runs. */
static bool g_quiet;
static char g_last_log[1024];

static void log_sink(void *arg, dl_log_level_t level, const char *msg)
{
    (void)arg;
    (void)level;
    snprintf(g_last_log, sizeof(g_last_log), "%s", msg);
    if (!g_quiet)
        fprintf(stderr, "rank %d: %s\n", g_rank, msg);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------
 * Data: a small counter-based generator, so that any (case, rank) can be
 * drawn again anywhere.
 * ------------------------------------------------------------------------ */

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t seed_of(uint64_t id, int rank, uint64_t salt)
{
    return mix(mix(id * 1000003u + (uint64_t)rank) ^ salt);
}

/* Values for a case: small integers where sums and products must not
 * overflow, any bits otherwise; floats in [0.5, 1.5], where sums and
 * products of a few are well conditioned. Bool is 0 or 1. */
static void fill(dl_dtype_t dt, void *p, size_t n, uint64_t seed, bool small)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = mix(seed + i);
        double u = 0.5 + (double)(r >> 11) * 0x1p-53;
        switch (dt) {
        case DL_BOOL:
            ((uint8_t *)p)[i] = (uint8_t)(r & 1);
            break;
        case DL_INT8:
            ((int8_t *)p)[i] = small ? (int8_t)((int)(r % 7) - 3) : (int8_t)r;
            break;
        case DL_UINT8:
            ((uint8_t *)p)[i] = small ? (uint8_t)(r % 4) : (uint8_t)r;
            break;
        case DL_INT32:
            ((int32_t *)p)[i] = small ? (int32_t)(r % 401) - 200 : (int32_t)r;
            break;
        case DL_INT64:
            ((int64_t *)p)[i] = small ? (int64_t)(r % 60001) - 30000 : (int64_t)r;
            break;
        case DL_FLOAT16:
            ((uint16_t *)p)[i] = dl_float_to_half((float)u);
            break;
        case DL_BFLOAT16:
            ((uint16_t *)p)[i] = dl_float_to_bf16((float)u);
            break;
        case DL_FLOAT32:
            ((float *)p)[i] = (float)u;
            break;
        case DL_FLOAT64:
            ((double *)p)[i] = u;
            break;
        case DL_DTYPE__COUNT:
            break;
        }
    }
}

static dl_tensor_t *tensor(dl_dtype_t dt, size_t n)
{
    dl_tensor_t *t = NULL;
    if (dl_tensor_new_1d(dt, n, NULL, &t) != DL_OK) {
        fprintf(stderr, "rank %d: cannot allocate a tensor of %zu elements\n", g_rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return t;
}

static void elem_text(dl_dtype_t dt, const void *base, size_t i, char *buf, size_t cap)
{
    if (dl_dtype_is_float(dt))
        snprintf(buf, cap, "%.9g", dl_dtype_get(dt, base, i));
    else
        snprintf(buf, cap, "%lld", (long long)dl_dtype_get_i64(dt, base, i));
}

/* ------------------------------------------------------------------------
 * One case, run on one communicator
 * ------------------------------------------------------------------------ */

typedef enum { V_PLAIN, V_LIST, V_SPLITS } variant_t;

typedef struct {
    uint64_t id;
    dl_coll_t coll;
    variant_t var; /* all_gather into a list; all_to_all with uneven splits */
    dl_dtype_t dt;
    dl_op_t op;
    size_t count;
    int root;
    bool async;
} case_t;

/* Everything a rank ends up with, as bytes. */
typedef struct {
    uint8_t *data;
    size_t n;
} result_t;

static void case_name(const case_t *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "case %llu %s%s %s%s%s count %zu root %d%s", (unsigned long long)c->id,
             dl_coll_name(c->coll),
             c->var == V_LIST     ? " (list)"
             : c->var == V_SPLITS ? " (splits)"
                                  : "",
             dl_dtype_name(c->dt), dl_coll_has_op(c->coll) ? " op " : "",
             dl_coll_has_op(c->coll) ? dl_op_name(c->op) : "", c->count, c->root,
             c->async ? " async" : "");
}

/* The uneven all_to_all's matrix: elements rank i sends to rank j, some
 * zero, all known to every rank. */
static size_t split_of(const case_t *c, int i, int j)
{
    uint64_t r = mix(c->id * 7919u + (uint64_t)i * 131u + (uint64_t)j);
    return r % 5 == 0 ? 0 : (size_t)(r % (c->count + 1));
}

static void result_set(result_t *res, const void *p, size_t n)
{
    res->data = malloc(n ? n : 1);
    if (n > 0)
        memcpy(res->data, p, n);
    res->n = n;
}

static void result_concat(result_t *res, dl_tensor_t *const *list, int n)
{
    size_t nb = dl_tensor_nbytes(list[0]);
    res->data = malloc(nb * (size_t)n + 1);
    res->n = nb * (size_t)n;
    for (int i = 0; i < n && nb > 0; i++)
        memcpy(res->data + nb * (size_t)i, list[i]->data, nb);
}

static dl_tensor_t **new_list(dl_dtype_t dt, size_t count, int n)
{
    dl_tensor_t **list = calloc((size_t)n, sizeof(*list));
    for (int i = 0; i < n; i++)
        list[i] = tensor(dt, count);
    return list;
}

static void free_list(dl_tensor_t **list, int n)
{
    for (int i = 0; list != NULL && i < n; i++)
        dl_tensor_free(list[i]);
    free(list);
}

/* Waits for an async call's work. w_p, not w: the call sets it, and the
 * order in which arguments are evaluated is unspecified. */
static dl_status_t finish(dl_status_t st, const case_t *c, dl_work_t **w_p)
{
    if (st == DL_OK && c->async) {
        st = dl_work_wait(*w_p, -1);
        dl_work_free(*w_p);
        *w_p = NULL;
    }
    return st;
}

static dl_status_t run_case(dl_comm_t *comm, const case_t *c, result_t *res)
{
    int n = dl_comm_size(comm), me = dl_comm_rank(comm);
    size_t cnt = c->count;
    uint64_t seed = seed_of(c->id, me, 0);
    bool small = dl_coll_has_op(c->coll) &&
                 (c->op == DL_OP_SUM || c->op == DL_OP_PROD || c->op == DL_OP_AVG);
    dl_coll_opts_t o = {.async = c->async};
    dl_work_t *w = NULL;
    dl_status_t st = DL_OK;
    dl_tensor_t *t = NULL, *out = NULL, **list = NULL;
    res->data = NULL;
    res->n = 0;
    switch (c->coll) {
    case DL_COLL_BROADCAST:
        t = tensor(c->dt, cnt);
        fill(c->dt, t->data, cnt, seed, small);
        st = finish(dl_comm_broadcast(comm, t, c->root, &o, &w), c, &w);
        result_set(res, t->data, dl_tensor_nbytes(t));
        break;
    case DL_COLL_SCATTER:
        out = tensor(c->dt, cnt);
        if (me == c->root) {
            list = new_list(c->dt, cnt, n);
            for (int i = 0; i < n; i++)
                fill(c->dt, list[i]->data, cnt, seed_of(c->id, me, (uint64_t)i + 1), small);
        }
        st = finish(dl_comm_scatter(comm, out, list, c->root, &o, &w), c, &w);
        result_set(res, out->data, dl_tensor_nbytes(out));
        break;
    case DL_COLL_GATHER:
        t = tensor(c->dt, cnt);
        fill(c->dt, t->data, cnt, seed, small);
        if (me == c->root)
            list = new_list(c->dt, cnt, n);
        st = finish(dl_comm_gather(comm, t, list, c->root, &o, &w), c, &w);
        if (list != NULL)
            result_concat(res, list, n);
        else
            result_set(res, NULL, 0);
        break;
    case DL_COLL_REDUCE:
        t = tensor(c->dt, cnt);
        fill(c->dt, t->data, cnt, seed, small);
        st = finish(dl_comm_reduce(comm, t, c->root, c->op, &o, &w), c, &w);
        /* Only the root's result is defined (coll.h): builtin's chain leaves
         * partial sums on the other ranks, MPI their inputs. */
        if (me == c->root)
            result_set(res, t->data, dl_tensor_nbytes(t));
        else
            result_set(res, NULL, 0);
        break;
    case DL_COLL_ALL_GATHER:
        t = tensor(c->dt, cnt);
        fill(c->dt, t->data, cnt, seed, small);
        if (c->var == V_LIST) {
            list = new_list(c->dt, cnt, n);
            st = finish(dl_comm_all_gather(comm, list, t, &o, &w), c, &w);
            result_concat(res, list, n);
        } else {
            out = tensor(c->dt, cnt * (size_t)n);
            st = finish(dl_comm_all_gather_into(comm, out, t, &o, &w), c, &w);
            result_set(res, out->data, dl_tensor_nbytes(out));
        }
        break;
    case DL_COLL_ALL_REDUCE:
        t = tensor(c->dt, cnt);
        fill(c->dt, t->data, cnt, seed, small);
        st = finish(dl_comm_all_reduce(comm, t, c->op, &o, &w), c, &w);
        result_set(res, t->data, dl_tensor_nbytes(t));
        break;
    case DL_COLL_REDUCE_SCATTER:
        t = tensor(c->dt, cnt * (size_t)n);
        fill(c->dt, t->data, cnt * (size_t)n, seed, small);
        out = tensor(c->dt, cnt);
        st = finish(dl_comm_reduce_scatter(comm, out, t, c->op, &o, &w), c, &w);
        result_set(res, out->data, dl_tensor_nbytes(out));
        break;
    case DL_COLL_ALL_TO_ALL:
        if (c->var == V_SPLITS) {
            size_t *in_splits = calloc((size_t)n, sizeof(size_t));
            size_t *out_splits = calloc((size_t)n, sizeof(size_t));
            size_t in_n = 0, out_n = 0;
            for (int j = 0; j < n; j++) {
                in_splits[j] = split_of(c, me, j);
                out_splits[j] = split_of(c, j, me);
                in_n += in_splits[j];
                out_n += out_splits[j];
            }
            t = tensor(c->dt, in_n);
            fill(c->dt, t->data, in_n, seed, small);
            out = tensor(c->dt, out_n);
            st = finish(dl_comm_all_to_all(comm, out, t, out_splits, in_splits, &o, &w), c, &w);
            free(in_splits);
            free(out_splits);
        } else {
            t = tensor(c->dt, cnt * (size_t)n);
            fill(c->dt, t->data, cnt * (size_t)n, seed, small);
            out = tensor(c->dt, cnt * (size_t)n);
            st = finish(dl_comm_all_to_all(comm, out, t, NULL, NULL, &o, &w), c, &w);
        }
        result_set(res, out->data, dl_tensor_nbytes(out));
        break;
    case DL_COLL_BARRIER:
        st = finish(dl_comm_barrier(comm, &o, &w), c, &w);
        result_set(res, NULL, 0);
        break;
    case DL_COLL__COUNT:
        break;
    }
    dl_tensor_free(t);
    dl_tensor_free(out);
    free_list(list, n);
    return st;
}

/* ------------------------------------------------------------------------
 * Comparing
 * ------------------------------------------------------------------------ */

static double tolerance(dl_dtype_t dt)
{
    switch (dt) {
    case DL_FLOAT16:
        return 1e-2;
    case DL_BFLOAT16:
        return 2e-2;
    case DL_FLOAT32:
        return 1e-5;
    case DL_FLOAT64:
        return 1e-12;
    default:
        return 0;
    }
}

/* "case 12 all_reduce float32 op sum count 7 root 0 on group {0,2}" */
static void case_label(const case_t *c, const char *where, char *buf, size_t cap)
{
    char name[200];
    case_name(c, name, sizeof(name));
    snprintf(buf, cap, "%s%s%s", name, where[0] ? " on " : "", where);
}

static void compare(const case_t *c, const char *where, const result_t *b, const result_t *m)
{
    char name[300];
    case_label(c, where, name, sizeof(name));
    if (b->n != m->n) {
        fail("%s: builtin gave %zu bytes, mpi %zu", name, b->n, m->n);
        return;
    }
    size_t esz = dl_dtype_size(c->dt), n = b->n / esz;
    /* Min, max and moving data are exact on floats too. */
    bool exact = !dl_dtype_is_float(c->dt) || !dl_coll_has_op(c->coll) || c->op == DL_OP_MIN ||
                 c->op == DL_OP_MAX;
    if (exact && (b->n == 0 || memcmp(b->data, m->data, b->n) == 0))
        return;
    double tol = tolerance(c->dt);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        bool same;
        if (exact) {
            same = memcmp(b->data + i * esz, m->data + i * esz, esz) == 0;
        } else {
            double x = dl_dtype_get(c->dt, b->data, i), y = dl_dtype_get(c->dt, m->data, i);
            same = fabs(x - y) <= tol * fmax(fabs(x), fabs(y));
        }
        if (!same && bad++ == 0)
            first = i;
    }
    if (bad == 0)
        return;
    char x[64], y[64];
    elem_text(c->dt, b->data, first, x, sizeof(x));
    elem_text(c->dt, m->data, first, y, sizeof(y));
    fail("%s: element %zu: builtin %s, mpi %s (%zu of %zu elements differ%s)", name, first, x, y,
         bad, n, exact ? ", bit-exact expected" : "");
}

/* Runs c on both communicators and compares. */
static void cross(dl_comm_t *bc, dl_comm_t *mc, const case_t *c, const char *where)
{
    result_t rb = {0}, rm = {0};
    dl_status_t sb = run_case(bc, c, &rb);
    dl_status_t sm = run_case(mc, c, &rm);
    g_cases++;
    char name[300];
    if (sb != DL_OK || sm != DL_OK) {
        case_label(c, where, name, sizeof(name));
        fail("%s: builtin %s (%s), mpi %s (%s)", name, dl_status_name(sb), dl_comm_last_error(bc),
             dl_status_name(sm), dl_comm_last_error(mc));
    } else {
        compare(c, where, &rb, &rm);
    }
    free(rb.data);
    free(rm.data);
}

/* ------------------------------------------------------------------------
 * The collective matrix
 * ------------------------------------------------------------------------ */

typedef struct {
    const dl_dtype_t *dts;
    size_t n_dts;
    const dl_op_t *ops;
    size_t n_ops;
    const size_t *counts;
    size_t n_counts;
} matrix_t;

/* Case ids (and so the data) come from base, the same on every rank of the
 * group whatever else each rank has run. */
static void run_matrix(dl_comm_t *bc, dl_comm_t *mc, const matrix_t *mx, uint64_t base,
                       const char *where)
{
    int n = dl_comm_size(mc);
    uint64_t next_id = base;
    for (int coll = 0; coll < DL_COLL__COUNT; coll++) {
        dl_coll_t cl = (dl_coll_t)coll;
        if (cl == DL_COLL_BARRIER) {
            for (int async = 0; async < 2; async++) {
                case_t c = {.id = next_id++, .coll = cl, .dt = DL_UINT8, .async = async};
                cross(bc, mc, &c, where);
            }
            continue;
        }
        int n_var = cl == DL_COLL_ALL_GATHER || cl == DL_COLL_ALL_TO_ALL ? 2 : 1;
        for (int var = 0; var < n_var; var++) {
            variant_t v = var == 0 ? V_PLAIN : cl == DL_COLL_ALL_GATHER ? V_LIST : V_SPLITS;
            for (size_t d = 0; d < mx->n_dts; d++) {
                size_t n_ops = dl_coll_has_op(cl) ? mx->n_ops : 1;
                for (size_t k = 0; k < n_ops; k++) {
                    dl_op_t op = dl_coll_has_op(cl) ? mx->ops[k] : DL_OP_SUM;
                    if (dl_op_check(op, mx->dts[d], NULL) != DL_OK)
                        continue;
                    for (size_t ci = 0; ci < mx->n_counts; ci++) {
                        size_t count = mx->counts[ci];
                        int n_roots = dl_coll_has_root(cl) ? n : 1;
                        for (int root = 0; root < n_roots; root++) {
                            uint64_t id = next_id++;
                            case_t c = {
                                .id = id,
                                .coll = cl,
                                .var = v,
                                .dt = mx->dts[d],
                                .op = op,
                                .count = count,
                                .root = root,
                                .async = id % 3 == 0,
                            };
                            cross(bc, mc, &c, where);
                        }
                    }
                }
            }
        }
    }
}

static const dl_dtype_t all_dts[] = {DL_BOOL,    DL_INT8,     DL_UINT8,   DL_INT32,  DL_INT64,
                                     DL_FLOAT16, DL_BFLOAT16, DL_FLOAT32, DL_FLOAT64};
static const dl_op_t all_ops[] = {DL_OP_SUM, DL_OP_PROD, DL_OP_MIN, DL_OP_MAX,
                                  DL_OP_AVG, DL_OP_BAND, DL_OP_BOR, DL_OP_BXOR};
static const size_t all_counts[] = {0, 1, 7, 1000, 100003};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------
 * Point to point
 * ------------------------------------------------------------------------ */

/* A payload that says who sent it, with which tag. */
static double payload(int from, int tag, size_t i)
{
    return (double)(from * 1000 + tag * 10) + (double)(i % 7);
}

static bool holds(const dl_tensor_t *t, int from, int tag)
{
    for (size_t i = 0; i < t->numel; i++)
        if (dl_dtype_get(t->dtype, t->data, i) != payload(from, tag, i))
            return false;
    return true;
}

static dl_tensor_t *message(dl_dtype_t dt, size_t n, int from, int tag)
{
    dl_tensor_t *t = tensor(dt, n);
    for (size_t i = 0; i < n; i++)
        dl_dtype_set(dt, t->data, i, payload(from, tag, i));
    return t;
}

static int source_of(const dl_work_t *w)
{
    return w != NULL ? dl_work_source(w) : -1;
}

static void p2p(dl_comm_t *comm, const char *where)
{
    const char *b = dl_comm_backend(comm);
    int n = dl_comm_size(comm), me = dl_comm_rank(comm);
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    dl_status_t st;

    /* A ring of two tagged messages each, received in the other order. */
    dl_tensor_t *s1 = message(DL_INT32, 7, me, 1), *s2 = message(DL_FLOAT64, 1000, me, 2);
    dl_tensor_t *r1 = tensor(DL_INT32, 7), *r2 = tensor(DL_FLOAT64, 1000);
    dl_work_t *ws1 = NULL, *ws2 = NULL, *wr1 = NULL, *wr2 = NULL;
    CHECK(dl_comm_irecv(comm, r2, prev, 2, &wr2) == DL_OK, "%s %s: irecv tag 2", b, where);
    CHECK(dl_comm_irecv(comm, r1, prev, 1, &wr1) == DL_OK, "%s %s: irecv tag 1", b, where);
    CHECK(dl_comm_isend(comm, s1, next, 1, &ws1) == DL_OK, "%s %s: isend tag 1", b, where);
    CHECK(dl_comm_isend(comm, s2, next, 2, &ws2) == DL_OK, "%s %s: isend tag 2", b, where);
    CHECK((st = dl_work_wait(wr1, -1)) == DL_OK, "%s %s: ring recv tag 1: %s", b, where,
          dl_comm_last_error(comm));
    CHECK((st = dl_work_wait(wr2, -1)) == DL_OK, "%s %s: ring recv tag 2: %s", b, where,
          dl_comm_last_error(comm));
    CHECK(dl_work_wait(ws2, -1) == DL_OK && dl_work_wait(ws1, -1) == DL_OK, "%s %s: ring sends: %s",
          b, where, dl_comm_last_error(comm));
    CHECK(source_of(wr1) == prev && source_of(wr2) == prev,
          "%s %s: ring sources %d and %d, expected %d", b, where, source_of(wr1), source_of(wr2),
          prev);
    CHECK(holds(r1, prev, 1) && holds(r2, prev, 2), "%s %s: ring payloads: got %g and %g", b, where,
          dl_dtype_get(DL_INT32, r1->data, 0), dl_dtype_get(DL_FLOAT64, r2->data, 0));
    dl_work_free(ws1);
    dl_work_free(ws2);
    dl_work_free(wr1);
    dl_work_free(wr2);
    dl_tensor_free(s1);
    dl_tensor_free(s2);
    dl_tensor_free(r1);
    dl_tensor_free(r2);

    /* Same peer, same tag: messages arrive in the order they were sent. */
    dl_work_t *ws[3] = {NULL, NULL, NULL};
    dl_tensor_t *sk[3], *rk[3];
    for (int k = 0; k < 3; k++) {
        sk[k] = message(DL_INT64, 3, me, 5 + k);
        rk[k] = tensor(DL_INT64, 3);
        CHECK(dl_comm_isend(comm, sk[k], next, 5, &ws[k]) == DL_OK, "%s %s: isend", b, where);
    }
    for (int k = 0; k < 3; k++) {
        int src = -1;
        CHECK(dl_comm_recv(comm, rk[k], prev, 5, &src) == DL_OK && src == prev,
              "%s %s: ordered recv %d: %s", b, where, k, dl_comm_last_error(comm));
        CHECK(holds(rk[k], prev, 5 + k), "%s %s: message %d overtaken: got %g, expected %g", b,
              where, k, dl_dtype_get(DL_INT64, rk[k]->data, 0), payload(prev, 5 + k, 0));
    }
    for (int k = 0; k < 3; k++) {
        CHECK(dl_work_wait(ws[k], -1) == DL_OK, "%s %s: ordered send %d", b, where, k);
        dl_work_free(ws[k]);
        dl_tensor_free(sk[k]);
        dl_tensor_free(rk[k]);
    }

    /* Any source: rank 0 hears from everyone and learns who spoke. */
    if (me == 0) {
        int seen = 0;
        for (int k = 1; k < n; k++) {
            dl_tensor_t *t = tensor(DL_INT32, 1);
            int src = -1;
            st = dl_comm_recv(comm, t, DL_ANY_SOURCE, 9, &src);
            int v = (int)dl_dtype_get(DL_INT32, t->data, 0);
            CHECK(st == DL_OK && src >= 1 && src < n && v == src * 1000 + 90,
                  "%s %s: any-source recv: %s, source %d, payload %d", b, where, dl_status_name(st),
                  src, v);
            if (src >= 1 && src < n)
                seen |= 1 << src;
            dl_tensor_free(t);
        }
        CHECK(seen == (1 << n) - 2, "%s %s: any-source senders seen: mask %#x", b, where, seen);
    } else {
        dl_tensor_t *t = message(DL_INT32, 1, me, 9);
        CHECK(dl_comm_send(comm, t, 0, 9) == DL_OK, "%s %s: send to 0: %s", b, where,
              dl_comm_last_error(comm));
        dl_tensor_free(t);
    }

    /* A large message (past any eager limit) and an empty one. */
    if (me == 0 || me == n - 1) {
        size_t big = 100003;
        dl_tensor_t *t = me == 0 ? message(DL_FLOAT64, big, 0, 3) : tensor(DL_FLOAT64, big);
        dl_tensor_t *e = tensor(DL_FLOAT32, 0);
        if (me == 0) {
            CHECK(dl_comm_send(comm, t, n - 1, 3) == DL_OK, "%s %s: big send: %s", b, where,
                  dl_comm_last_error(comm));
            CHECK(dl_comm_send(comm, e, n - 1, 4) == DL_OK, "%s %s: empty send: %s", b, where,
                  dl_comm_last_error(comm));
        } else {
            int src = -1;
            CHECK(dl_comm_recv(comm, t, 0, 3, &src) == DL_OK && src == 0 && holds(t, 0, 3),
                  "%s %s: big recv: %s", b, where, dl_comm_last_error(comm));
            CHECK(dl_comm_recv(comm, e, DL_ANY_SOURCE, 4, &src) == DL_OK && src == 0,
                  "%s %s: empty recv: %s (source %d)", b, where, dl_comm_last_error(comm), src);
        }
        dl_tensor_free(t);
        dl_tensor_free(e);
    }
}

/* Several async collectives and messages in flight at once, waited for in
 * the reverse order; the results go into res for the cross-check. */
static void many_in_flight(dl_comm_t *comm, result_t res[4])
{
    const char *b = dl_comm_backend(comm);
    int n = dl_comm_size(comm), me = dl_comm_rank(comm);
    dl_coll_opts_t o = {.async = true};
    dl_tensor_t *a = tensor(DL_FLOAT32, 1000), *c = tensor(DL_INT64, 7);
    dl_tensor_t *g = tensor(DL_UINT8, 33), *go = tensor(DL_UINT8, 33 * (size_t)n);
    dl_tensor_t *s = message(DL_FLOAT32, 5, me, 6), *r = tensor(DL_FLOAT32, 5);
    fill(DL_FLOAT32, a->data, 1000, seed_of(77, me, 0), true);
    fill(DL_INT64, c->data, 7, seed_of(78, me, 0), false);
    fill(DL_UINT8, g->data, 33, seed_of(79, me, 0), false);
    dl_work_t *w[5] = {NULL};
    CHECK(dl_comm_all_reduce(comm, a, DL_OP_SUM, &o, &w[0]) == DL_OK, "%s: async all_reduce", b);
    CHECK(dl_comm_irecv(comm, r, (me + n - 1) % n, 6, &w[1]) == DL_OK, "%s: async irecv", b);
    CHECK(dl_comm_broadcast(comm, c, n - 1, &o, &w[2]) == DL_OK, "%s: async broadcast", b);
    CHECK(dl_comm_isend(comm, s, (me + 1) % n, 6, &w[3]) == DL_OK, "%s: async isend", b);
    CHECK(dl_comm_all_gather_into(comm, go, g, &o, &w[4]) == DL_OK, "%s: async all_gather", b);
    for (int k = 4; k >= 0; k--) {
        CHECK(dl_work_wait(w[k], -1) == DL_OK, "%s: in-flight work %d: %s", b, k,
              dl_comm_last_error(comm));
        dl_work_free(w[k]);
    }
    CHECK(holds(r, (me + n - 1) % n, 6), "%s: async message payload %g", b,
          dl_dtype_get(DL_FLOAT32, r->data, 0));
    result_set(&res[0], a->data, dl_tensor_nbytes(a));
    result_set(&res[1], c->data, dl_tensor_nbytes(c));
    result_set(&res[2], go->data, dl_tensor_nbytes(go));
    result_set(&res[3], r->data, dl_tensor_nbytes(r));
    dl_tensor_free(a);
    dl_tensor_free(c);
    dl_tensor_free(g);
    dl_tensor_free(go);
    dl_tensor_free(s);
    dl_tensor_free(r);
}

static void cross_in_flight(dl_comm_t *bc, dl_comm_t *mc, const char *where)
{
    result_t rb[4] = {{0}}, rm[4] = {{0}};
    many_in_flight(bc, rb);
    many_in_flight(mc, rm);
    static const case_t kinds[4] = {
        {.coll = DL_COLL_ALL_REDUCE, .dt = DL_FLOAT32, .op = DL_OP_SUM, .count = 1000},
        {.coll = DL_COLL_BROADCAST, .dt = DL_INT64, .count = 7},
        {.coll = DL_COLL_ALL_GATHER, .dt = DL_UINT8, .count = 33},
        {.coll = DL_COLL_BROADCAST, .dt = DL_FLOAT32, .count = 5}, /* the message: exact */
    };
    char w[96];
    snprintf(w, sizeof(w), "%s, in flight together", where);
    for (int k = 0; k < 4; k++) {
        compare(&kinds[k], w, &rb[k], &rm[k]);
        free(rb[k].data);
        free(rm[k].data);
    }
    g_cases += 4;
}

/* torch's in-place all_gather_into_tensor: the input is this rank's own
 * chunk of the output (on rank 0 the very same address). MPI wants the two
 * apart; the backend copies. The builtin backend once took in == out for an
 * in-place collective and got rank 0 wrong. Checked against the inputs. */
static void gather_into_own_chunk(dl_comm_t *m)
{
    int n = dl_comm_size(m), me = dl_comm_rank(m);
    size_t cnt = 1000;
    dl_tensor_t *out = tensor(DL_INT32, cnt * (size_t)n);
    dl_tensor_t *want = tensor(DL_INT32, cnt * (size_t)n);
    for (int r = 0; r < n; r++)
        fill(DL_INT32, (int32_t *)want->data + cnt * (size_t)r, cnt, seed_of(81, r, 0), false);
    int32_t *mine = (int32_t *)out->data + cnt * (size_t)me;
    fill(DL_INT32, mine, cnt, seed_of(81, me, 0), false);
    dl_tensor_t view = {.dtype = DL_INT32,
                        .ndim = 1,
                        .shape = {(int64_t)cnt},
                        .device = {DL_DEVICE_CPU, 0},
                        .numel = cnt,
                        .data = mine};
    dl_status_t st = dl_comm_all_gather_into(m, out, &view, NULL, NULL);
    CHECK(st == DL_OK, "%s all_gather_into from its own chunk: %s", dl_comm_backend(m),
          dl_comm_last_error(m));
    for (size_t i = 0; st == DL_OK && i < out->numel; i++) {
        int32_t got = ((int32_t *)out->data)[i], exp = ((int32_t *)want->data)[i];
        if (got != exp) {
            fail("%s all_gather_into from its own chunk: element %zu: got %d, expected %d",
                 dl_comm_backend(m), i, (int)got, (int)exp);
            break;
        }
    }
    g_cases++;
    dl_tensor_free(out);
    dl_tensor_free(want);
}

/* A step hook on a backend without schedules sees each call as one whole
 * step: before and after it, or before it only when quick. */
typedef struct {
    int before, after;
} hook_count_t;

static int count_hook(void *arg, const dl_step_info_t *in)
{
    hook_count_t *h = arg;
    if (in->done)
        h->after++;
    else
        h->before++;
    return 0;
}

static void whole_step_hooks(dl_comm_t *m)
{
    dl_tensor_t *t = tensor(DL_FLOAT32, 16);
    for (int quick = 0; quick < 2; quick++) {
        hook_count_t h = {0, 0};
        if (quick)
            dl_comm_set_quick_step_hook(m, count_hook, &h);
        else
            dl_comm_set_step_hook(m, count_hook, &h);
        for (int i = 0; i < 3; i++)
            CHECK(dl_comm_all_reduce(m, t, DL_OP_SUM, NULL, NULL) == DL_OK, "all_reduce: %s",
                  dl_comm_last_error(m));
        dl_comm_set_step_hook(m, NULL, NULL);
        CHECK(h.before == 3 && h.after == (quick ? 0 : 3),
              "%s step hook on %s: %d calls before, %d after; expected 3 and %d",
              quick ? "a quick" : "a", dl_comm_backend(m), h.before, h.after, quick ? 0 : 3);
        g_cases++;
    }
    dl_tensor_free(t);
}

/* ------------------------------------------------------------------------
 * Groups
 * ------------------------------------------------------------------------ */

static const dl_dtype_t group_dts[] = {DL_BOOL, DL_INT64, DL_BFLOAT16, DL_FLOAT32};
static const dl_op_t group_ops[] = {DL_OP_SUM, DL_OP_MAX, DL_OP_AVG, DL_OP_BXOR};
static const size_t group_counts[] = {0, 7, 1000};

static void check_group(dl_comm_t *bg, dl_comm_t *mg, const int *ranks, int n, uint64_t base,
                        const char *where)
{
    if ((bg == NULL) != (mg == NULL)) {
        fail("%s: membership differs: builtin %s, mpi %s", where, bg ? "member" : "not",
             mg ? "member" : "not");
        return;
    }
    bool member = false;
    for (int i = 0; i < n; i++)
        member |= ranks[i] == g_rank;
    if (member != (mg != NULL)) {
        fail("%s: this rank is %sa member, but new_group says otherwise", where,
             member ? "" : "not ");
        return;
    }
    if (mg == NULL)
        return;
    CHECK(dl_comm_size(bg) == n && dl_comm_size(mg) == n, "%s: sizes %d and %d, expected %d", where,
          dl_comm_size(bg), dl_comm_size(mg), n);
    CHECK(dl_comm_rank(bg) == dl_comm_rank(mg), "%s: ranks %d and %d", where, dl_comm_rank(bg),
          dl_comm_rank(mg));
    matrix_t mx = {group_dts, N(group_dts), group_ops, N(group_ops), group_counts, N(group_counts)};
    run_matrix(bg, mg, &mx, base, where);
    p2p(bg, where);
    p2p(mg, where);
    cross_in_flight(bg, mg, where);
}

static void groups(dl_comm_t *b, dl_comm_t *m)
{
    int n = g_size;
    if (n < 3)
        return;
    const int ga[] = {0, 2};
    const int gb[] = {n - 1, 1, 0};
    /* Within gb, its ranks 2 and 0: world ranks 0 and n - 1. */
    const int gc[] = {2, 0};
    dl_comm_t *ba = NULL, *ma = NULL, *bb = NULL, *mb = NULL, *bcg = NULL, *mcg = NULL;
    CHECK(dl_comm_new_group(b, ga, 2, &ba) == DL_OK, "builtin new_group {0,2}");
    CHECK(dl_comm_new_group(m, ga, 2, &ma) == DL_OK, "mpi new_group {0,2}: %s",
          dl_comm_last_error(m));
    CHECK(dl_comm_new_group(b, gb, 3, &bb) == DL_OK, "builtin new_group {n-1,1,0}");
    CHECK(dl_comm_new_group(m, gb, 3, &mb) == DL_OK, "mpi new_group {n-1,1,0}: %s",
          dl_comm_last_error(m));
    if (bb != NULL && mb != NULL) {
        CHECK(dl_comm_new_group(bb, gc, 2, &bcg) == DL_OK, "builtin new_group of a group");
        CHECK(dl_comm_new_group(mb, gc, 2, &mcg) == DL_OK, "mpi new_group of a group: %s",
              dl_comm_last_error(mb));
    }
    check_group(ba, ma, ga, 2, 100000, "group {0,2}");
    char name[64];
    snprintf(name, sizeof(name), "group {%d,1,0}", n - 1);
    check_group(bb, mb, gb, 3, 200000, name);
    const int gc_world[] = {0, n - 1};
    snprintf(name, sizeof(name), "group {0,%d} of group {%d,1,0}", n - 1, n - 1);
    check_group(bcg, mcg, gc_world, 2, 300000, name);
    dl_comm_destroy(bcg);
    dl_comm_destroy(mcg);
    dl_comm_destroy(ba);
    dl_comm_destroy(ma);
    dl_comm_destroy(bb);
    dl_comm_destroy(mb);
}

/* ------------------------------------------------------------------------
 * The mpi backend's failure paths
 * ------------------------------------------------------------------------ */

static bool says(const char *msg, const char *what)
{
    return strstr(msg, what) != NULL;
}

static void refusals(dl_comm_t *m)
{
    int n = g_size, me = g_rank;
    dl_status_t st;
    g_quiet = true;

    /* A cuda tensor: this Open MPI is not CUDA-aware. The pointer is never
     * touched: the check comes first. */
    dl_tensor_t cuda = {.dtype = DL_FLOAT32,
                        .ndim = 1,
                        .shape = {4},
                        .device = {DL_DEVICE_CUDA, 0},
                        .numel = 4,
                        .data = (void *)(uintptr_t)0x1000};
    st = dl_comm_all_reduce(m, &cuda, DL_OP_SUM, NULL, NULL);
    CHECK(st == DL_ERR_UNSUPPORTED && says(dl_comm_last_error(m), "cuda"),
          "cuda all_reduce on mpi: %s (%s), expected DL_ERR_UNSUPPORTED", dl_status_name(st),
          dl_comm_last_error(m));
    st = dl_comm_send(m, &cuda, (me + 1) % n, 1);
    CHECK(st == DL_ERR_UNSUPPORTED, "cuda send on mpi: %s, expected DL_ERR_UNSUPPORTED",
          dl_status_name(st));

    /* A tag MPI cannot carry. */
    dl_tensor_t *t4 = tensor(DL_INT32, 4);
    st = dl_comm_send(m, t4, (me + 1) % n, -3);
    CHECK(st == DL_ERR_RANGE && says(dl_comm_last_error(m), "MPI_TAG_UB"),
          "negative tag on mpi: %s (%s), expected DL_ERR_RANGE", dl_status_name(st),
          dl_comm_last_error(m));

    /* A builtin schedule name means nothing to MPI: refused on every rank
     * before anything moves. */
    CHECK(dl_comm_set_algo(m, DL_COLL_ALL_REDUCE, "ring") == DL_OK, "set_algo ring");
    st = dl_comm_all_reduce(m, t4, DL_OP_SUM, NULL, NULL);
    CHECK(st == DL_ERR_UNSUPPORTED && says(dl_comm_last_error(m), "ring"),
          "all_reduce with algo ring on mpi: %s (%s)", dl_status_name(st), dl_comm_last_error(m));
    dl_comm_set_algo(m, DL_COLL_ALL_REDUCE, NULL);

    /* A message larger than the tensor (0 -> 1), and a smaller one (1 -> 0). */
    if (me == 0) {
        dl_tensor_t *big = message(DL_INT32, 16, 0, 7);
        st = dl_comm_send(m, big, 1, 77);
        CHECK(st == DL_OK, "send of 16 elements: %s", dl_comm_last_error(m));
        st = dl_comm_recv(m, t4, 1, 78, NULL);
        CHECK(st == DL_ERR_MISMATCH && says(dl_comm_last_error(m), "8 bytes"),
              "recv of a shorter message: %s (%s), expected DL_ERR_MISMATCH", dl_status_name(st),
              dl_comm_last_error(m));
        dl_tensor_free(big);
    } else if (me == 1) {
        st = dl_comm_recv(m, t4, 0, 77, NULL);
        CHECK(st == DL_ERR_MISMATCH && says(dl_comm_last_error(m), "larger") &&
                  says(dl_comm_last_error(m), "TRUNCATE"),
              "recv into a too-small tensor: %s (%s), expected DL_ERR_MISMATCH", dl_status_name(st),
              dl_comm_last_error(m));
        dl_tensor_t *small = message(DL_INT32, 2, 1, 7);
        CHECK(dl_comm_send(m, small, 0, 78) == DL_OK, "send of 2 elements");
        dl_tensor_free(small);
    }
    dl_tensor_free(t4);
    /* Those errors leave the world usable. */
    st = dl_comm_barrier(m, NULL, NULL);
    CHECK(st == DL_OK, "barrier after the refusals: %s", dl_comm_last_error(m));
    g_quiet = false;
}

/* A world whose RANK/WORLD_SIZE disagree with mpirun's: a one-line error
 * that names both. The store is the builtin world's, which lives on. */
static void wrong_size(int store_port)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%d", g_size + 1);
    setenv("WORLD_SIZE", buf, 1);
    snprintf(buf, sizeof(buf), "127.0.0.1:%d", store_port);
    setenv("DISTLAB_STORE", buf, 1);
    setenv("DISTLAB_WORLD", "mpi-wrong-size", 1);
    g_quiet = true;
    g_last_log[0] = '\0';
    dl_comm_t *c = NULL;
    dl_comm_opts_t opts = {.backend = "mpi", .timeout_s = 20};
    dl_status_t st = dl_comm_init_env(&opts, &c);
    g_quiet = false;
    snprintf(buf, sizeof(buf), "WORLD_SIZE=%d", g_size + 1);
    CHECK(st == DL_ERR_INVALID && says(g_last_log, buf) && says(g_last_log, "MPI_COMM_WORLD"),
          "mpi world of the wrong size: %s (%s)", dl_status_name(st), g_last_log);
    if (c != NULL)
        dl_comm_destroy(c);
    snprintf(buf, sizeof(buf), "%d", g_size);
    setenv("WORLD_SIZE", buf, 1);
    unsetenv("DISTLAB_STORE");
}

/* Last, because they leave the mpi world unusable on the ranks that run
 * them: a timed-out wait (rank 1) and an interrupted one (rank 2). Their
 * receives never get a message. */
static void breakage(dl_comm_t *m)
{
    if (g_rank != 1 && g_rank != 2)
        return;
    g_quiet = true;
    dl_tensor_t *t = tensor(DL_INT32, 4);
    dl_work_t *w = NULL;
    dl_status_t st = dl_comm_irecv(m, t, 0, 4242, &w);
    CHECK(st == DL_OK, "irecv that never completes: %s", dl_comm_last_error(m));
    if (g_rank == 1) {
        double t0 = now_s();
        st = dl_work_wait(w, 0.3);
        double took = now_s() - t0;
        CHECK(st == DL_ERR_TIMEOUT && says(dl_comm_last_error(m), "timed out after 0.3 s") &&
                  took >= 0.3 && took < 5,
              "timed-out wait: %s after %.3f s (%s)", dl_status_name(st), took,
              dl_comm_last_error(m));
    } else {
        dl_comm_interrupt_from_signal();
        st = dl_work_wait(w, 30);
        CHECK(st == DL_ERR_ABORTED && says(dl_comm_last_error(m), "interrupted (Ctrl-C)"),
              "interrupted wait: %s (%s)", dl_status_name(st), dl_comm_last_error(m));
    }
    dl_work_free(w);
    double t0 = now_s();
    st = dl_comm_barrier(m, NULL, NULL);
    CHECK(st == DL_ERR_ABORTED && says(dl_comm_last_error(m), "unusable") && now_s() - t0 < 1,
          "call after an abandoned request: %s (%s), expected a fast DL_ERR_ABORTED",
          dl_status_name(st), dl_comm_last_error(m));
    /* t is not freed: the abandoned receive still points into it. */
    g_quiet = false;
}

/* ------------------------------------------------------------------------
 * Set-up
 * ------------------------------------------------------------------------ */

/* Rank 0 finds a free port and tells everyone. */
static int shared_port(void)
{
    int port = -1;
    if (g_rank == 0) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &len) == 0)
            port = ntohs(a.sin_port);
        if (fd >= 0)
            close(fd);
    }
    MPI_Bcast(&port, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return port;
}

static dl_comm_t *join(const char *backend, int port, const char *prefix)
{
    char buf[96];
    snprintf(buf, sizeof(buf), "%d", port);
    setenv("MASTER_PORT", buf, 1);
    setenv("DISTLAB_WORLD", prefix, 1);
    dl_comm_opts_t opts = {.backend = backend, .timeout_s = 120};
    dl_comm_t *c = NULL;
    dl_status_t st = port > 0 ? dl_comm_init_env(&opts, &c) : DL_ERR_IO;
    if (st != DL_OK) {
        fprintf(stderr, "rank %d: FAIL cannot join the %s world: %s\n", g_rank, backend,
                dl_status_name(st));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return c;
}

int main(int argc, char **argv)
{
    /* The program initialises MPI itself, so the backend must neither
     * initialise nor finalise it. */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_size < 2) {
        fprintf(stderr, "run with mpirun -np N, N >= 2\n");
        MPI_Finalize();
        return 1;
    }
    char buf[96], prefix[96];
    dl_log_set_sink(log_sink, NULL);
    snprintf(buf, sizeof(buf), "%d", g_rank);
    setenv("RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", g_size);
    setenv("WORLD_SIZE", buf, 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("DISTLAB_ARENA_MB", "256", 1);
    unsetenv("DISTLAB_STORE");
    /* Both worlds' names must be the same on every rank and new each run. */
    int tag = (int)getpid();
    MPI_Bcast(&tag, 1, MPI_INT, 0, MPI_COMM_WORLD);

    double t0 = now_s();
    int bport = shared_port();
    snprintf(prefix, sizeof(prefix), "mpix%d-builtin", tag);
    dl_comm_t *b = join("builtin", bport, prefix);
    int mport = shared_port();
    snprintf(prefix, sizeof(prefix), "mpix%d-mpi", tag);
    dl_comm_t *m = join("mpi", mport, prefix);
    CHECK(strcmp(dl_comm_backend(m), "mpi") == 0 && dl_comm_rank(m) == g_rank &&
              dl_comm_size(m) == g_size,
          "mpi world: backend %s rank %d size %d", dl_comm_backend(m), dl_comm_rank(m),
          dl_comm_size(m));

    matrix_t world = {all_dts, N(all_dts), all_ops, N(all_ops), all_counts, N(all_counts)};
    run_matrix(b, m, &world, 1, "world");
    double t1 = now_s();
    p2p(b, "world");
    p2p(m, "world");
    cross_in_flight(b, m, "world");
    gather_into_own_chunk(m);
    gather_into_own_chunk(b);
    whole_step_hooks(m);
    groups(b, m);
    refusals(m);
    wrong_size(bport);
    double t2 = now_s();
    breakage(m);

    dl_comm_destroy(m);
    dl_comm_destroy(b);
    long total = 0, cases = 0;
    MPI_Allreduce(&g_failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&g_cases, &cases, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("mpi cross-check on %d ranks: %ld cases over all ranks, %ld failures "
               "(matrix %.1f s, the rest %.1f s)\n",
               g_size, cases, total, t1 - t0, t2 - t1);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
