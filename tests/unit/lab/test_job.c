/* lab/proto/job.c: a job written as the shell line `distlab run --tui`
 * runs, with the tensors a rank of `distlab run` fills; and as the JSON
 * the controller sends its ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lab/proto/job.h"

static char *line_of(const char *prim, int np, const char *algo, bool step)
{
    lab_job_t job;
    lab_job_defaults(&job);
    assert_int_equal(lab_prim_parse(prim, &job.prim), DL_OK);
    job.np = np;
    snprintf(job.algo, sizeof(job.algo), "%s", algo);
    char *line = lab_job_shell_line(&job, step);
    assert_non_null(line);
    return line;
}

static void test_all_reduce(void **state)
{
    (void)state;
    char *line = line_of("all_reduce", 4, "ring", true);
    assert_string_equal(line, "set algo all_reduce ring; step on; tensor = arange(2, dtype=int64) "
                              "+ 1 + 2*rank; all_reduce tensor op=sum");
    free(line);
    line = line_of("reduce_scatter", 2, "", false);
    assert_string_equal(line, "input = arange(4, dtype=int64) + 1 + 4*rank; output = zeros(2, "
                              "dtype=int64); reduce_scatter output input op=sum");
    free(line);
}

static void test_scatter(void **state)
{
    (void)state;
    char *line = line_of("scatter", 2, "", false);
    assert_string_equal(line,
                        "tensor = zeros(2, dtype=int64); on 0: scatter_list = [arange(1, 3, "
                        "dtype=int64), arange(3, 5, dtype=int64)]; on 0-1: scatter tensor src=0 "
                        "scatter_list=scatter_list");
    free(line);
}

static void test_p2p(void **state)
{
    (void)state;
    char *line = line_of("send", 3, "", false);
    assert_string_equal(line, "tensor = arange(2, dtype=int64) + 1 + 2*rank; on 0: send tensor "
                              "dst=1; on 1: recv tensor src=0; on 0: send tensor dst=2; on 2: recv "
                              "tensor src=0");
    free(line);
    /* recv: the root files every rank's tensor under its source. */
    line = line_of("recv", 2, "", false);
    assert_string_equal(line, "tensor = arange(2, dtype=int64) + 1 + 2*rank; on 0: r1 = zeros(2, "
                              "dtype=int64); on 1: send tensor dst=0; on 0: recv r1 src=1; on 0: "
                              "recv_list = [tensor, r1]");
    free(line);
}

/* Bool tensors hold run's values as bools, all True: a bool arange is
 * refused, as torch refuses it. */
static void test_bool(void **state)
{
    (void)state;
    lab_job_t job;
    lab_job_defaults(&job);
    assert_int_equal(lab_prim_parse("all_reduce", &job.prim), DL_OK);
    job.np = 2;
    job.dtype = DL_BOOL;
    job.op = DL_OP_BOR;
    char *line = lab_job_shell_line(&job, false);
    assert_string_equal(line, "tensor = ones(2, dtype=bool); all_reduce tensor op=bor");
    free(line);
    assert_int_equal(lab_prim_parse("scatter", &job.prim), DL_OK);
    line = lab_job_shell_line(&job, false);
    assert_string_equal(line, "tensor = zeros(2, dtype=bool); on 0: scatter_list = [ones(2, "
                              "dtype=bool), ones(2, dtype=bool)]; on 0-1: scatter tensor src=0 "
                              "scatter_list=scatter_list");
    free(line);
}

/* The job as the controller sends it to its ranks and back: the bench's
 * fields survive, lists_apart among them (false when a sender leaves it
 * out). */
static void test_json_round_trip(void **state)
{
    (void)state;
    for (int apart = 0; apart < 2; apart++) {
        lab_job_t job, back;
        lab_job_defaults(&job);
        job.bench = true;
        assert_int_equal(lab_prim_parse("scatter", &job.prim), DL_OK);
        job.np = 3;
        job.root = 2;
        job.iters = 7;
        job.check = false;
        job.lists_apart = apart == 1;
        json_t *j = lab_job_to_json(&job);
        assert_non_null(j);
        assert_int_equal(lab_job_from_json(j, &back), DL_OK);
        assert_true(back.bench);
        assert_int_equal(back.np, 3);
        assert_int_equal(back.root, 2);
        assert_int_equal(back.iters, 7);
        assert_false(back.check);
        assert_int_equal(back.lists_apart, apart == 1);
        json_object_del(j, "lists_apart");
        assert_int_equal(lab_job_from_json(j, &back), DL_OK);
        assert_false(back.lists_apart);
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_reduce),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_p2p),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_json_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
