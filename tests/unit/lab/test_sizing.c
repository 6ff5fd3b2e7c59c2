/* lab/proto/sizing.c: the sizes a bench sweeps, the bytes each rank of a job
 * holds, the arena that must hold them, and the memory check that refuses a
 * job before any rank starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lab/proto/sizing.h"

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

static lab_job_t job_of(dl_coll_t coll, int np, dl_dtype_t dt, size_t count)
{
    lab_job_t job;
    lab_job_defaults(&job);
    job.prim = (lab_prim_t){LAB_PRIM_COLL, coll};
    job.np = np;
    job.dtype = dt;
    job.count = count;
    return job;
}

static lab_job_t bench_of(dl_coll_t coll, int np, size_t min, size_t max)
{
    lab_job_t job = job_of(coll, np, DL_FLOAT32, 0);
    job.bench = true;
    job.min_bytes = min;
    job.max_bytes = max;
    return job;
}

static void test_bench_count(void **state)
{
    (void)state;
    lab_job_t ar = bench_of(DL_COLL_ALL_REDUCE, 4, 1, 1);
    /* Below one float32 the smallest valid size, one element, runs. */
    assert_int_equal(lab_bench_count(&ar, 4, 0), 1);
    assert_int_equal(lab_bench_count(&ar, 4, 1), 1);
    assert_int_equal(lab_bench_count(&ar, 4, 8), 2);
    assert_int_equal(lab_bench_count(&ar, 4, 9), 2);
    /* A split buffer holds a whole number of elements per rank. */
    lab_job_t ag = bench_of(DL_COLL_ALL_GATHER, 3, 1, 1);
    assert_int_equal(lab_bench_count(&ag, 3, 1), 3);
    assert_int_equal(lab_bench_count(&ag, 3, 16), 3);
    assert_int_equal(lab_bench_count(&ag, 3, 32), 6);
    lab_job_t bar = bench_of(DL_COLL_BARRIER, 3, 1, 1);
    assert_int_equal(lab_bench_count(&bar, 3, 1024), 0);
}

static void test_bench_next_size(void **state)
{
    (void)state;
    lab_job_t job = bench_of(DL_COLL_ALL_REDUCE, 2, 8, 64);
    double want[] = {8, 16, 32, 64};
    double size = (double)job.min_bytes;
    for (size_t i = 0; i < 4; i++) {
        assert_true(size == want[i]);
        size = lab_bench_next_size(&job, size);
    }
    assert_true(size == 0);
    /* -f 1 steps by -b; -b = -e is one row. */
    job.factor = 1;
    assert_true(lab_bench_next_size(&job, 8) == 16);
    job.max_bytes = 8;
    assert_true(lab_bench_next_size(&job, 8) == 0);
}

static void test_bench_sweep(void **state)
{
    (void)state;
    size_t rows, steps;
    /* -f 1.0001 steps about 20000 times from 8 to 64 bytes, which round to
     * the float32 counts 2 to 15: 14 rows. */
    lab_job_t job = bench_of(DL_COLL_ALL_REDUCE, 2, 8, 64);
    job.factor = 1.0001;
    lab_bench_sweep(&job, 10000, 1000000, &rows, &steps);
    assert_int_equal(rows, 14);
    assert_true(steps > 20000 && steps < 21000);
    /* Counting stops past either limit. */
    lab_bench_sweep(&job, 10, 1000000, &rows, &steps);
    assert_int_equal(rows, 11);
    lab_bench_sweep(&job, 10000, 100, &rows, &steps);
    assert_int_equal(steps, 101);
    /* -f 1 steps by -b: a row each. */
    job.factor = 1;
    lab_bench_sweep(&job, 10000, 1000000, &rows, &steps);
    assert_int_equal(rows, 8);
    assert_int_equal(steps, 8);
    /* A barrier is one row, whatever the sizes. */
    lab_job_t bar = bench_of(DL_COLL_BARRIER, 2, 8, 1 << 30);
    bar.factor = 1;
    lab_bench_sweep(&bar, 10000, 1000000, &rows, &steps);
    assert_int_equal(rows, 1);
}

static void test_run_rank_bytes(void **state)
{
    (void)state;
    /* The ring all_reduce works in its one tensor. */
    lab_job_t job = job_of(DL_COLL_ALL_REDUCE, 4, DL_INT64, 1000);
    snprintf(job.algo, sizeof(job.algo), "ring");
    assert_int_equal(lab_job_rank_bytes(&job, 0), 8000);
    assert_int_equal(lab_job_total_bytes(&job), 32000);
    /* The ring reduce_scatter: an input of four chunks, an output, and on
     * more than two ranks a chunk of scratch. */
    job.prim.coll = DL_COLL_REDUCE_SCATTER;
    assert_int_equal(lab_job_rank_bytes(&job, 0), (4 + 1 + 1) * 1000 * 8);
    job.np = 2;
    assert_int_equal(lab_job_rank_bytes(&job, 0), (2 + 1) * 1000 * 8);
    /* all_to_all holds an input and an output of count per peer. */
    job = job_of(DL_COLL_ALL_TO_ALL, 4, DL_INT32, 10);
    snprintf(job.algo, sizeof(job.algo), "pairwise");
    assert_true(lab_job_rank_bytes(&job, 1) >= 2 * 4 * 10 * 4);
    /* recv: only the root keeps a list and a buffer per rank. */
    job = job_of(DL_COLL_ALL_REDUCE, 3, DL_FLOAT64, 100);
    job.prim = (lab_prim_t){LAB_PRIM_RECV, DL_COLL_ALL_REDUCE};
    job.root = 1;
    assert_int_equal(lab_job_rank_bytes(&job, 1), (100 + 2 * 3 * 100) * 8);
    assert_int_equal(lab_job_rank_bytes(&job, 0), 100 * 8);
    /* Sizes far past what anything holds saturate instead of wrapping. */
    job = job_of(DL_COLL_ALL_TO_ALL, 256, DL_FLOAT64, (size_t)1 << 30);
    assert_true(lab_job_total_bytes(&job) > ((uint64_t)1 << 40));
}

static void test_bench_rank_bytes(void **state)
{
    (void)state;
    /* The peak is the largest size: 1 MiB of input and its chunk of output. */
    lab_job_t job = bench_of(DL_COLL_REDUCE_SCATTER, 4, 8, MIB);
    snprintf(job.algo, sizeof(job.algo), "ring");
    uint64_t bytes = lab_job_rank_bytes(&job, 0);
    assert_true(bytes >= MIB + MIB / 4);
    assert_true(bytes <= 3 * MIB);
    /* gather: the root holds every rank's chunk besides its own. */
    job = bench_of(DL_COLL_GATHER, 4, MIB, MIB);
    snprintf(job.algo, sizeof(job.algo), "direct");
    assert_true(lab_job_rank_bytes(&job, 0) >= MIB + MIB / 4);
    assert_true(lab_job_rank_bytes(&job, 1) < MIB);
    job = bench_of(DL_COLL_BARRIER, 4, 8, MIB);
    assert_int_equal(lab_job_rank_bytes(&job, 0), 0);
}

static void test_arena_mb(void **state)
{
    (void)state;
    /* 2 GiB per rank, with a little headroom. */
    lab_job_t job = bench_of(DL_COLL_ALL_REDUCE, 2, 2 * GIB, 2 * GIB);
    assert_int_equal(lab_job_arena_mb(&job), 2048 + 32 + 1);
    job = job_of(DL_COLL_ALL_REDUCE, 2, DL_INT64, 2);
    assert_int_equal(lab_job_arena_mb(&job), 2);
}

static void test_fits_memory(void **state)
{
    (void)state;
    char why[512] = "";
    lab_job_t job = bench_of(DL_COLL_ALL_REDUCE, 4, 64 * GIB, 64 * GIB);
    assert_false(lab_job_fits_memory(&job, 20 * GIB, "MemAvailable", why, sizeof(why)));
    assert_non_null(strstr(why, "-e 64G on 4 ranks"));
    assert_non_null(strstr(why, "256.1 GiB"));
    assert_non_null(strstr(why, "20.0 GiB is available (MemAvailable)"));
    assert_non_null(strstr(why, "fewer ranks (--np)"));
    assert_null(strchr(why, '\n'));
    assert_true(lab_job_fits_memory(&job, 300 * GIB, "MemAvailable", why, sizeof(why)));
    job = job_of(DL_COLL_ALL_REDUCE, 4, DL_INT64, 300000000);
    assert_false(lab_job_fits_memory(&job, 4 * GIB, "MemAvailable", why, sizeof(why)));
    assert_non_null(strstr(why, "run all_reduce --count 300000000 on 4 ranks"));
    assert_non_null(strstr(why, "a smaller --count"));
    const char *what = NULL;
    assert_true(lab_mem_available(&what) > 0);
    assert_non_null(what);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bench_count),      cmocka_unit_test(test_bench_next_size),
        cmocka_unit_test(test_bench_sweep),      cmocka_unit_test(test_run_rank_bytes),
        cmocka_unit_test(test_bench_rank_bytes), cmocka_unit_test(test_arena_mb),
        cmocka_unit_test(test_fits_memory),
    };
    return cmocka_run_group_tests_name("sizing", tests, NULL, NULL);
}
