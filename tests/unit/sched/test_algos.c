/* Every algorithm, every collective it implements, np 1..9, several counts,
 * every root, sum and avg: the schedule must validate, and simulating it
 * symbolically (distlab/symsim.h) must give each rank exactly what the collective's
 * definition in coll.h says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "distlab/sched.h"
#include "distlab/symsim.h"

#define MAX_NP 9 /* every root, every count below */

static const size_t counts[] = {0, 1, 2, 5, 17, 64};

/* One case, for the failure message. */
typedef struct {
    const char *algo;
    dl_coll_args_t args;
    int split_kind;   /* -1: equal chunks */
    size_t elem_size; /* 0: 4 bytes */
} case_t;

static void fail_case(const case_t *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    print_error("%s %s np=%d count=%zu root=%d op=%s splits=%d: %s\n", c->algo,
                dl_coll_name(c->args.coll), c->args.nranks, c->args.count, c->args.root,
                c->args.op == DL_OP_AVG ? "avg" : "sum", c->split_kind, msg);
    fail();
}

/* ----------------------------------------------------------------------
 * Expected results
 * ---------------------------------------------------------------------- */

#define EVERYONE (-1)

/* The most ranks a case has (run_algo's big_np). */
#define MAX_RANKS 64

/* Element i of b on rank r must be origin, with contributions exactly once
 * from each rank q with from[q] and none from the others, scaled `scaled`
 * times. */
static void expect_set(const case_t *c, const dl_symsim_t *sim, int r, dl_buf_t b, size_t i,
                       int origin, const bool *from, int scaled)
{
    static const char *const names[] = {"in", "out", "tmp"};
    int got = dl_symsim_origin(sim, r, b, i);
    if (got != origin)
        fail_case(c, "r%d %s[%zu] has origin %d, want %d", r, names[b], i, got, origin);
    for (int q = 0; q < c->args.nranks; q++) {
        int want = from[q] ? 1 : 0;
        int have = dl_symsim_contrib(sim, r, b, i, q);
        if (have != want)
            fail_case(c, "r%d %s[%zu] holds r%d's input %d times, want %d", r, names[b], i, q, have,
                      want);
    }
    if (dl_symsim_scaled(sim, r, b, i) != scaled)
        fail_case(c, "r%d %s[%zu] scaled %d times, want %d", r, names[b], i,
                  dl_symsim_scaled(sim, r, b, i), scaled);
}

/* The same with contributions from `from` alone, or from every rank for
 * EVERYONE. */
static void expect(const case_t *c, const dl_symsim_t *sim, int r, dl_buf_t b, size_t i, int origin,
                   int from, int scaled)
{
    bool set[MAX_RANKS];
    for (int q = 0; q < c->args.nranks; q++)
        set[q] = from == EVERYONE || from == q;
    expect_set(c, sim, r, b, i, origin, set, scaled);
}

/* IN of rank r as it was: element i is r's own i, untouched. */
static void expect_in_unchanged(const case_t *c, const dl_symsim_t *sim, const dl_sched_t *s, int r)
{
    size_t size = dl_sched_buf_count(s, r, DL_BUF_IN);
    for (size_t i = 0; i < size; i++)
        expect(c, sim, r, DL_BUF_IN, i, (int)i, r, 0);
}

/* What a non-root rank's IN holds after a reduce. Only the root's result
 * is defined (coll.h), so it depends on the algorithm: the chain leaves
 * the rank at place v of its line (v = r - root mod n) the partial sum of
 * places v .. n-1, unscaled; the others leave IN as it was. */
static void expect_reduce_other(const case_t *c, const dl_symsim_t *sim, const dl_sched_t *s, int r)
{
    if (strcmp(c->algo, "chain") != 0) {
        expect_in_unchanged(c, sim, s, r);
        return;
    }
    int n = c->args.nranks, root = c->args.root;
    bool behind[MAX_RANKS];
    for (int q = 0; q < n; q++)
        behind[q] = (q - root + n) % n >= (r - root + n) % n;
    for (size_t i = 0; i < c->args.count; i++)
        expect_set(c, sim, r, DL_BUF_IN, i, (int)i, behind, 0);
}

/* The split matrix as the test sees it, computed here independently. */
static size_t a2a_len(const dl_coll_args_t *a, int i, int j)
{
    return a->splits ? a->splits[i * a->nranks + j] : a->count;
}

static void check_result(const case_t *c, const dl_sched_t *s, const dl_symsim_t *sim)
{
    const dl_coll_args_t *a = &c->args;
    int n = a->nranks, root = a->root;
    size_t count = a->count;
    int avg = dl_coll_has_op(a->coll) && a->op == DL_OP_AVG ? 1 : 0;

    for (int r = 0; r < n; r++) {
        switch (a->coll) {
        case DL_COLL_BROADCAST:
            for (size_t i = 0; i < count; i++)
                expect(c, sim, r, DL_BUF_IN, i, (int)i, root, 0);
            break;
        case DL_COLL_SCATTER:
            for (size_t i = 0; i < count; i++)
                expect(c, sim, r, DL_BUF_OUT, i, (int)((size_t)r * count + i), root, 0);
            if (r == root)
                expect_in_unchanged(c, sim, s, r);
            break;
        case DL_COLL_GATHER:
            if (r == root)
                for (int j = 0; j < n; j++)
                    for (size_t i = 0; i < count; i++)
                        expect(c, sim, r, DL_BUF_OUT, (size_t)j * count + i, (int)i, j, 0);
            expect_in_unchanged(c, sim, s, r);
            break;
        case DL_COLL_REDUCE:
            if (r != root) {
                expect_reduce_other(c, sim, s, r);
                break;
            }
            for (size_t i = 0; i < count; i++)
                expect(c, sim, r, DL_BUF_IN, i, (int)i, EVERYONE, avg);
            break;
        case DL_COLL_ALL_GATHER:
            for (int j = 0; j < n; j++)
                for (size_t i = 0; i < count; i++)
                    expect(c, sim, r, DL_BUF_OUT, (size_t)j * count + i, (int)i, j, 0);
            expect_in_unchanged(c, sim, s, r);
            break;
        case DL_COLL_ALL_REDUCE:
            for (size_t i = 0; i < count; i++)
                expect(c, sim, r, DL_BUF_IN, i, (int)i, EVERYONE, avg);
            break;
        case DL_COLL_REDUCE_SCATTER:
            for (size_t i = 0; i < count; i++)
                expect(c, sim, r, DL_BUF_OUT, i, (int)((size_t)r * count + i), EVERYONE, avg);
            expect_in_unchanged(c, sim, s, r);
            break;
        case DL_COLL_ALL_TO_ALL: {
            /* OUT of r: from each rank i in order, the elements i had for r. */
            size_t out = 0;
            for (int i = 0; i < n; i++) {
                size_t in_off = 0;
                for (int k = 0; k < r; k++)
                    in_off += a2a_len(a, i, k);
                for (size_t e = 0; e < a2a_len(a, i, r); e++)
                    expect(c, sim, r, DL_BUF_OUT, out++, (int)(in_off + e), i, 0);
            }
            if (out != dl_sched_buf_count(s, r, DL_BUF_OUT))
                fail_case(c, "r%d OUT has %zu elements, want %zu", r,
                          dl_sched_buf_count(s, r, DL_BUF_OUT), out);
            expect_in_unchanged(c, sim, s, r);
            break;
        }
        case DL_COLL_BARRIER:
            for (int q = 0; q < n; q++)
                if (!dl_symsim_heard(sim, r, q))
                    fail_case(c, "r%d leaves the barrier without hearing from r%d", r, q);
            break;
        case DL_COLL__COUNT:
            break;
        }
    }
}

/* ----------------------------------------------------------------------
 * Running the cases
 * ---------------------------------------------------------------------- */

static void run_case(case_t *c, size_t *n_cases)
{
    dl_sched_t *s = NULL;
    char why[256];

    dl_status_t st = dl_sched_build(c->algo, &c->args, c->elem_size ? c->elem_size : 4, &s);
    if (st != DL_OK)
        fail_case(c, "build failed: %s", dl_strerror(st));
    if (strcmp(s->algo, c->algo) != 0)
        fail_case(c, "schedule names algo %s", s->algo);
    if (dl_sched_validate(s, why, sizeof(why)) != DL_OK)
        fail_case(c, "invalid schedule: %s", why);
    for (size_t k = 0; k < s->n_steps; k++)
        if (s->steps[k].n == 0 || s->steps[k].phase == NULL)
            fail_case(c, "step %zu is empty or has no phase", k + 1);

    dl_symsim_t *sim = NULL;
    assert_int_equal(dl_symsim_new(s, &sim), DL_OK);
    if (dl_symsim_run(sim, why, sizeof(why)) != DL_OK)
        fail_case(c, "simulation: %s", why);
    check_result(c, s, sim);
    dl_symsim_free(sim);
    dl_sched_free(s);
    (*n_cases)++;
}

/* Split matrices with zeros in several places; kind < 0 is none. */
#define N_SPLIT_KINDS 5

static size_t split_value(int kind, int i, int j)
{
    switch (kind) {
    case 0:
        return (size_t)((i * 3 + j * 5 + 1) % 4); /* scattered zeros */
    case 1:
        return 0; /* nothing at all */
    case 2:
        return i == 0 ? (size_t)j + 1 : 0; /* only rank 0 sends */
    case 3:
        return i == j ? 0 : (size_t)(i + 2 * j); /* nothing to oneself */
    default:
        return (size_t)((i * 7 + j * 13) % 6) * 3; /* larger, uneven */
    }
}

/* All cases of one collective on n ranks: the given counts, every root (or
 * only the first and last when all_roots is false), sum and avg, and for
 * all_to_all the split matrices too. */
static void run_np(const char *name, dl_coll_t coll, int n, const size_t *cs, size_t n_cs,
                   bool all_roots, size_t *n_cases)
{
    int roots = dl_coll_has_root(coll) ? n : 1;
    int ops = dl_coll_has_op(coll) ? 2 : 1;
    if (coll == DL_COLL_BARRIER)
        n_cs = 1;
    for (int root = 0; root < roots; root++) {
        if (!all_roots && root != 0 && root != roots - 1)
            continue;
        for (int op = 0; op < ops; op++) {
            for (size_t ci = 0; ci < n_cs; ci++) {
                case_t c = {.algo = name, .split_kind = -1};
                c.args = (dl_coll_args_t){.coll = coll,
                                          .nranks = n,
                                          .root = root,
                                          .count = cs[ci],
                                          .op = op ? DL_OP_AVG : DL_OP_SUM};
                run_case(&c, n_cases);
            }
        }
    }
    if (coll != DL_COLL_ALL_TO_ALL)
        return;
    size_t *splits = calloc((size_t)n * (size_t)n, sizeof(*splits));
    assert_non_null(splits);
    for (int kind = 0; kind < N_SPLIT_KINDS; kind++) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                splits[i * n + j] = split_value(kind, i, j);
        case_t c = {.algo = name, .split_kind = kind};
        c.args = (dl_coll_args_t){.coll = coll, .nranks = n, .count = 0, .splits = splits};
        run_case(&c, n_cases);
    }
    free(splits);
}

static void run_algo(const char *name)
{
    /* Beyond 9 ranks: folds with larger powers of two, a few counts. */
    static const int big_np[] = {12, 16, 23, 32, 33};
    static const size_t big_counts[] = {1, 37};
    const dl_algo_t *algo = dl_algo_find(name);
    size_t n_cases = 0;
    assert_non_null(algo);

    for (int coll = 0; coll < DL_COLL__COUNT; coll++) {
        if (algo->build[coll] == NULL)
            continue;
        for (int n = 1; n <= MAX_NP; n++)
            run_np(name, (dl_coll_t)coll, n, counts, sizeof(counts) / sizeof(counts[0]), true,
                   &n_cases);
        for (size_t i = 0; i < sizeof(big_np) / sizeof(big_np[0]); i++)
            run_np(name, (dl_coll_t)coll, big_np[i], big_counts, 2, false, &n_cases);
    }
    print_message("%s: %zu schedules checked\n", name, n_cases);
}

static void test_algo(void **state)
{
    run_algo((const char *)*state);
}

/* ----------------------------------------------------------------------
 * Step counts against the documented formulas
 * ---------------------------------------------------------------------- */

static size_t steps_of(const char *algo, dl_coll_t coll, int n, size_t count)
{
    dl_coll_args_t a = {.coll = coll, .nranks = n, .count = count, .op = DL_OP_SUM};
    dl_sched_t *s = NULL;
    assert_int_equal(dl_sched_build(algo, &a, 4, &s), DL_OK);
    size_t k = s->n_steps;
    dl_sched_free(s);
    return k;
}

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

static int log2_floor(int n)
{
    int k = 0;
    while ((2 << k) <= n)
        k++;
    return k;
}

static void test_step_counts(void **state)
{
    (void)state;
    for (int n = 2; n <= 33; n++) {
        int lg = log2_floor(n), p = 1 << lg;
        size_t big = 64;
        int fold = p == n ? 0 : 2;
        assert_int_equal(steps_of("ring", DL_COLL_ALL_REDUCE, n, big), 2 * (n - 1));
        assert_int_equal(steps_of("ring", DL_COLL_ALL_GATHER, n, big), n - 1);
        assert_int_equal(steps_of("ring", DL_COLL_REDUCE_SCATTER, n, big), n - 1);
        assert_int_equal(steps_of("tree", DL_COLL_BROADCAST, n, big), ceil_log2(n));
        assert_int_equal(steps_of("tree", DL_COLL_REDUCE, n, big), ceil_log2(n));
        assert_int_equal(steps_of("tree", DL_COLL_GATHER, n, big), ceil_log2(n));
        assert_int_equal(steps_of("tree", DL_COLL_SCATTER, n, big), ceil_log2(n));
        assert_int_equal(steps_of("dissemination", DL_COLL_BARRIER, n, 0), ceil_log2(n));
        assert_int_equal(steps_of("pairwise", DL_COLL_ALL_TO_ALL, n, big), n - 1);
        assert_int_equal(steps_of("linear", DL_COLL_ALL_TO_ALL, n, big), 1);
        /* chain: broadcast, n-1 hops plus P-1 pieces behind the first, P =
         * min(count, 8); reduce, n-1 hops of the whole vector. */
        assert_int_equal(steps_of("chain", DL_COLL_BROADCAST, n, big), n - 1 + 8 - 1);
        assert_int_equal(steps_of("chain", DL_COLL_BROADCAST, n, 1), n - 1);
        assert_int_equal(steps_of("chain", DL_COLL_REDUCE, n, 3), n - 1);
        assert_int_equal(steps_of("chain", DL_COLL_REDUCE, n, big), n - 1);
        /* rd: log2 p exchanges, plus fold and unfold; a power of two with an
         * odd log2 needs one more (local, free) step to copy TMP back,
         * unless the vector is small enough to travel eagerly (at most
         * DL_SCHED_EAGER_MAX bytes): then the last exchange adds in place. */
        size_t past_eager = DL_SCHED_EAGER_MAX / 4 + 1;
        assert_int_equal(steps_of("rd", DL_COLL_ALL_REDUCE, n, past_eager),
                         lg + (fold ? fold : lg % 2));
        assert_int_equal(steps_of("rd", DL_COLL_ALL_REDUCE, n, big), lg + fold);
        assert_int_equal(steps_of("rd", DL_COLL_ALL_REDUCE, n, DL_SCHED_EAGER_MAX / 4), lg + fold);
        assert_int_equal(steps_of("rd", DL_COLL_ALL_GATHER, n, big), lg + fold);
        assert_int_equal(steps_of("rhd", DL_COLL_ALL_REDUCE, n, big), 2 * lg + fold);
        assert_int_equal(steps_of("rhd", DL_COLL_REDUCE_SCATTER, n, big), lg + fold);
        assert_int_equal(steps_of("direct", DL_COLL_ALL_REDUCE, n, big), 2);
        assert_int_equal(steps_of("direct", DL_COLL_BROADCAST, n, big), 1);
        assert_int_equal(steps_of("direct", DL_COLL_BARRIER, n, 0), 2);
        assert_int_equal(steps_of("share", DL_COLL_ALL_REDUCE, n, big), 1);
    }
    /* One rank: nothing to say to anyone. */
    assert_int_equal(steps_of("ring", DL_COLL_ALL_REDUCE, 1, 64), 0);
    assert_int_equal(steps_of("dissemination", DL_COLL_BARRIER, 1, 0), 0);
    assert_int_equal(steps_of("tree", DL_COLL_BROADCAST, 1, 64), 0);
}

/* The ring moves 2(n-1)/n of the vector per rank: the bandwidth optimum. */
static void test_ring_bytes(void **state)
{
    (void)state;
    for (int n = 2; n <= 9; n++) {
        dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = n, .count = (size_t)n * 10};
        dl_sched_t *s = NULL;
        dl_sched_stats_t st;
        assert_int_equal(dl_sched_build("ring", &a, 8, &s), DL_OK);
        dl_sched_stats(s, 8, 1.0, 0.0001, &st);
        assert_int_equal(st.max_bytes_sent, 2 * (size_t)(n - 1) * 10 * 8);
        assert_int_equal(st.n_messages, 2 * (size_t)n * (size_t)(n - 1));
        dl_sched_free(s);
    }
}

/* A vector of 16 MiB and more runs the ring pipelined in segments
 * (core/sched/ring.c): 2(n-1) + S-1 steps, the same bytes, and the same
 * result. Elements of 4 KiB keep the symbolic simulation small. */
static void test_ring_pipelined(void **state)
{
    (void)state;
    size_t n_cases = 0;
    const size_t esz = 4096;
    for (int n = 2; n <= MAX_NP; n++) {
        for (size_t count = 4096; count <= 4099; count += 3) {
            size_t segs = count * esz / (size_t)n / (256 * 1024);
            segs = segs > 16 ? 16 : segs;
            for (int op = 0; op < 2; op++) {
                case_t c = {.algo = "ring", .split_kind = -1, .elem_size = esz};
                c.args = (dl_coll_args_t){.coll = DL_COLL_ALL_REDUCE,
                                          .nranks = n,
                                          .count = count,
                                          .op = op ? DL_OP_AVG : DL_OP_SUM};
                run_case(&c, &n_cases);
                dl_sched_t *s = NULL;
                dl_sched_stats_t st;
                assert_int_equal(dl_sched_build("ring", &c.args, esz, &s), DL_OK);
                assert_int_equal(s->n_steps, 2 * (size_t)(n - 1) + segs - 1);
                dl_sched_stats(s, esz, 1.0, 0.0001, &st);
                /* Every rank sends 2(n-1) chunks, the largest ceil(count/n). */
                size_t big = (count + (size_t)n - 1) / (size_t)n;
                assert_true(st.max_bytes_sent <= 2 * (size_t)(n - 1) * big * esz);
                assert_true(st.max_bytes_sent >= 2 * (size_t)(n - 1) * (count / (size_t)n) * esz);
                dl_sched_free(s);
            }
        }
    }
    /* Below 16 MiB: the plain ring. */
    dl_coll_args_t a = {.coll = DL_COLL_ALL_REDUCE, .nranks = 2, .count = (16 << 20) / 4 - 1};
    dl_sched_t *s = NULL;
    assert_int_equal(dl_sched_build("ring", &a, 4, &s), DL_OK);
    assert_int_equal(s->n_steps, 2);
    dl_sched_free(s);
    print_message("ring pipelined: %zu schedules checked\n", n_cases);
}

int main(void)
{
    static const char *const names[] = {"ring",   "rd",       "rhd",    "tree",          "chain",
                                        "direct", "pairwise", "linear", "dissemination", "share"};
    struct CMUnitTest tests[sizeof(names) / sizeof(names[0]) + 3];
    size_t nt = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        tests[nt] = (struct CMUnitTest)cmocka_unit_test_prestate(test_algo, (void *)names[i]);
        tests[nt++].name = names[i];
    }
    tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_step_counts);
    tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_ring_bytes);
    tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_ring_pipelined);
    /* Every registered algorithm is covered above. */
    size_t registered = 0;
    for (const dl_algo_t *const *a = dl_algos(); *a != NULL; a++)
        registered++;
    if (registered != sizeof(names) / sizeof(names[0])) {
        fprintf(stderr, "the registry has %zu algorithms, this test knows %zu\n", registered,
                sizeof(names) / sizeof(names[0]));
        return 1;
    }
    return _cmocka_run_group_tests("sched_algos", tests, nt, NULL, NULL);
}
