/* lab/scenario/scenario.c: a `write` question's directives (given, check,
 * limit, forbid, hint, explain, solution as an indented block or a file),
 * the expressions of its limits, the rules a learner's code must keep,
 * the code answers of an answers file (a line, `code:` ... `end`,
 * `@FILE`, long ones), and numeric answers as learners word them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lab/scenario/scenario.h"

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/dl-scenario-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to a file of the temporary folder; returns its path. */
static const char *put(const char *name, const char *text)
{
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static const char ring[] = "title: Ring\n"
                           "ranks: 4\n"
                           "set echo off\n"
                           "write Write the ring all-reduce of t.\n"
                           "given t = arange(world_size) + rank\n"
                           "given buf = zeros(1, dtype=int64)\n"
                           "check t == all_reduce(t, op=sum)\n"
                           "limit messages 2 * (world_size - 1)\n"
                           "limit bytes 2 * (world_size - 1) * nbytes / world_size\n"
                           "forbid all_reduce, reduce_scatter all_gather\n"
                           "hint Around the ring.\n"
                           "solution\n"
                           "    right = (rank + 1) % world_size\n"
                           "\n"
                           "    for k in range(world_size - 1):\n"
                           "        h = isend t[k:k+1] dst=right\n"
                           "        wait h\n"
                           "\n"
                           "explain 2(n-1) messages.\n"
                           "say done\n";

static void test_write_parsed(void **state)
{
    (void)state;
    lab_scenario_t s;
    char err[512] = "";
    assert_int_equal(lab_scenario_load(put("ring.scenario", ring), &s, err, sizeof(err)), DL_OK);
    assert_int_equal(s.n_questions, 1);
    assert_int_equal(s.n_items, 3); /* set, write, say */
    const lab_scn_item_t *q = &s.items[1];
    assert_int_equal(q->kind, LAB_SCN_WRITE);
    assert_int_equal(q->lineno, 4);
    assert_string_equal(q->text, "Write the ring all-reduce of t.");
    assert_string_equal(q->hint, "Around the ring.");
    assert_string_equal(q->explain, "2(n-1) messages.");
    assert_null(q->answer);
    const lab_scn_write_t *w = q->write;
    assert_int_equal(w->n_given, 2);
    assert_string_equal(w->given[1], "buf = zeros(1, dtype=int64)");
    assert_string_equal(w->name, "t");
    assert_string_equal(w->coll, "all_reduce");
    assert_string_equal(w->coll_more, ", op=sum");
    assert_string_equal(w->check, "t == all_reduce(t, op=sum)");
    assert_string_equal(w->limit_messages, "2 * (world_size - 1)");
    assert_int_equal(w->n_forbid, 3);
    assert_string_equal(w->forbid[0], "all_reduce");
    assert_string_equal(w->forbid[2], "all_gather");
    /* The block, its common indentation gone and its blank lines kept
     * inside, but not at its end. */
    assert_string_equal(w->solution, "right = (rank + 1) % world_size\n"
                                     "\n"
                                     "for k in range(world_size - 1):\n"
                                     "    h = isend t[k:k+1] dst=right\n"
                                     "    wait h");
    assert_int_equal(w->solution_lineno, 12);
    char ref[80];
    lab_scenario_ref_name(w, ref, sizeof(ref));
    assert_string_equal(ref, "_builtin_t");
    lab_scenario_free(&s);
}

static void test_solution_file(void **state)
{
    (void)state;
    put("ring.dlab", "t = t + 0\n\n");
    lab_scenario_t s;
    char err[512] = "";
    const char *path = put("file.scenario", "title: F\nwrite W\ncheck t == broadcast(t, src=0)\n"
                                            "solution ring.dlab\n");
    assert_int_equal(lab_scenario_load(path, &s, err, sizeof(err)), DL_OK);
    assert_string_equal(s.items[0].write->solution, "t = t + 0");
    assert_string_equal(s.items[0].write->coll_more, ", src=0");
    lab_scenario_free(&s);
}

/* Each malformed file is refused with its line and what is wrong. */
static void test_write_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int line;
        const char *what;
    } bad[] = {
        {"title: B\ngiven t = 1\n", 2, "given must follow a `write` line"},
        {"title: B\nsay x\nsolution\n", 3, "solution must follow a `write` line"},
        {"title: B\nwrite\n", 2, "write needs the question's text"},
        {"title: B\nwrite W\ncheck t == all_reduce(t)\n", 2, "has no `solution`"},
        {"title: B\nwrite W\nsolution\n    t = t\n", 2, "has no `check` line"},
        {"title: B\nwrite W\ncheck t all_reduce(t)\n", 3, "check needs NAME == COLLECTIVE"},
        {"title: B\nwrite W\ncheck t == frob(t)\n", 3, "'frob' is not a collective"},
        {"title: B\nwrite W\ncheck t == all_reduce(u)\n", 3, "first argument must be t"},
        {"title: B\nwrite W\ncheck t == all_reduce(t)\ncheck t == all_reduce(t)\n", 4,
         "a second check"},
        {"title: B\nwrite W\nlimit messages 2 * (world_size\n", 3, "without its ')'"},
        {"title: B\nwrite W\nlimit packets 3\n", 3, "limit needs messages or bytes"},
        {"title: B\nwrite W\nlimit bytes 2 * n\n", 3, "'n' is not known here"},
        {"title: B\nwrite W\nlimit bytes 3\nlimit bytes 4\n", 4, "a second `limit bytes`"},
        {"title: B\nwrite W\nforbid all_reduce frob\n", 3, "'frob' is no command"},
        {"title: B\nwrite W\ngiven t = (1 +\n", 3, "does not parse"},
        {"title: B\nwrite W\nsolution\nsay x\n", 3, "solution: no code under it"},
        {"title: B\nwrite W\nanswer 3\n", 3, "answer must follow an `ask` line"},
        {"title: B\nwrite W\ncheck t == all_reduce(t)\nforbid all_reduce\nsolution\n"
         "    all_reduce t\n",
         5, "the solution: line 1: it calls all_reduce"},
        {"title: B\nwrite W\ncheck t == all_reduce(t)\nsolution nofile.dlab\n", 4, "cannot read"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        lab_scenario_t s;
        char err[512] = "", want[300];
        const char *path = put("bad.scenario", bad[i].text);
        assert_int_equal(lab_scenario_load(path, &s, err, sizeof(err)), DL_ERR_INVALID);
        snprintf(want, sizeof(want), "%s:%d: ", path, bad[i].line);
        if (strncmp(err, want, strlen(want)) != 0 || strstr(err, bad[i].what) == NULL)
            fail_msg("file %zu: '%s', wanted '%s...%s'", i, err, want, bad[i].what);
    }
}

static void test_limit_eval(void **state)
{
    (void)state;
    double v = 0;
    char why[160];
    assert_int_equal(lab_scenario_limit_eval("2 * (world_size - 1)", 4, 32, &v, why, sizeof(why)),
                     DL_OK);
    assert_true(v == 6);
    assert_int_equal(
        lab_scenario_limit_eval("2*(world_size-1)*nbytes/world_size", 8, 64, &v, why, sizeof(why)),
        DL_OK);
    assert_true(v == 112);
    assert_int_equal(lab_scenario_limit_eval("-3 + 10 / 4", 1, 0, &v, why, sizeof(why)), DL_OK);
    assert_true(v == -0.5);
    assert_int_equal(lab_scenario_limit_eval("1 / (world_size - 1)", 1, 0, &v, why, sizeof(why)),
                     DL_ERR_INVALID);
    assert_non_null(strstr(why, "division by zero"));
    assert_int_equal(lab_scenario_limit_eval("3 4", 1, 0, &v, why, sizeof(why)), DL_ERR_INVALID);
    assert_int_equal(lab_scenario_limit_eval("", 1, 0, &v, why, sizeof(why)), DL_ERR_INVALID);
}

static void test_code_ok(void **state)
{
    (void)state;
    lab_scenario_t s;
    char err[512] = "", why[320];
    assert_int_equal(lab_scenario_load(put("ring.scenario", ring), &s, err, sizeof(err)), DL_OK);
    const lab_scn_write_t *w = s.items[1].write;
    assert_true(lab_scenario_code_ok(w, "h = isend t dst=1\nrecv t src=0\nwait h", why, 320));
    /* A forbidden command anywhere, in either spelling, names its line. */
    assert_false(lab_scenario_code_ok(w, "u = t + 0\nall_reduce u", why, sizeof(why)));
    assert_string_equal(why, "line 2: it calls all_reduce, which this exercise rules out");
    assert_false(lab_scenario_code_ok(w, "for k in range(2):\n    dist.all_gather(out, t)", why,
                                      sizeof(why)));
    assert_non_null(strstr(why, "all_gather"));
    assert_false(lab_scenario_code_ok(w, "t = (1 +", why, sizeof(why)));
    assert_non_null(strstr(why, "does not parse: line 1, column"));
    assert_false(lab_scenario_code_ok(w, "t = t + 1\nrespawn", why, sizeof(why)));
    assert_string_equal(why, "line 2: `respawn` is a command of the session, not of the ranks");
    assert_false(lab_scenario_code_ok(w, "# nothing\n", why, sizeof(why)));
    assert_string_equal(why, "there is no code");
    lab_scenario_free(&s);
}

static void test_read_code(void **state)
{
    (void)state;
    put("mine.dlab", "t = t * 2\nprint t\n");
    const char *answers = put("ada.txt", "3\n"
                                         "all_reduce t; print t\n"
                                         "code:\n"
                                         "for k in range(2):\n"
                                         "    t = t + 1\n"
                                         "\n"
                                         "end\n"
                                         "@mine.dlab\n"
                                         "@none.dlab\n"
                                         "code:\n"
                                         "t = 1\n");
    FILE *f = fopen(answers, "r");
    assert_non_null(f);
    char line[64], why[300], *code = NULL;
    assert_non_null(fgets(line, sizeof(line), f)); /* an `ask`'s answer */
    assert_int_equal(lab_scenario_read_code(f, answers, &code, why, sizeof(why)), DL_OK);
    assert_string_equal(code, "all_reduce t; print t");
    free(code);
    assert_int_equal(lab_scenario_read_code(f, answers, &code, why, sizeof(why)), DL_OK);
    assert_string_equal(code, "for k in range(2):\n    t = t + 1");
    free(code);
    assert_int_equal(lab_scenario_read_code(f, answers, &code, why, sizeof(why)), DL_OK);
    assert_string_equal(code, "t = t * 2\nprint t");
    free(code);
    code = NULL;
    assert_int_equal(lab_scenario_read_code(f, answers, &code, why, sizeof(why)), DL_ERR_IO);
    assert_null(code);
    assert_non_null(strstr(why, "none.dlab: No such file"));
    assert_int_equal(lab_scenario_read_code(f, answers, &code, why, sizeof(why)), DL_ERR_INVALID);
    assert_null(code);
    assert_non_null(strstr(why, "no `end` line"));
    assert_int_equal(lab_scenario_read_code(f, answers, &code, why, sizeof(why)), DL_ERR_NOT_FOUND);
    fclose(f);
}

/* Writes n bytes of c then a line break to f. */
static void put_run(FILE *f, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        fputc(c, f);
    fputc('\n', f);
}

/* Code up to 64 KiB reads whole, a line or a block; longer code is
 * refused, read to its end, and the next answer is the next one. */
static void test_read_code_long(void **state)
{
    (void)state;
    char path[256], why[300], *code = NULL;
    snprintf(path, sizeof(path), "%s/long.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    put_run(f, 5000, 'a');
    put_run(f, 70000, 'b');
    fputs("after the line\ncode:\n", f);
    for (int i = 0; i < 20; i++)
        put_run(f, 4000, 'c');
    fputs("end\nafter the block\n", f);
    fclose(f);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(lab_scenario_read_code(f, path, &code, why, sizeof(why)), DL_OK);
    assert_int_equal(strlen(code), 5000);
    free(code);
    code = NULL;
    assert_int_equal(lab_scenario_read_code(f, path, &code, why, sizeof(why)), DL_ERR_INVALID);
    assert_null(code);
    assert_string_equal(why, "a line of code longer than 65536 bytes");
    assert_int_equal(lab_scenario_read_code(f, path, &code, why, sizeof(why)), DL_OK);
    assert_string_equal(code, "after the line");
    free(code);
    code = NULL;
    assert_int_equal(lab_scenario_read_code(f, path, &code, why, sizeof(why)), DL_ERR_INVALID);
    assert_null(code);
    assert_string_equal(why, "a `code:` block longer than 65536 bytes");
    assert_int_equal(lab_scenario_read_code(f, path, &code, why, sizeof(why)), DL_OK);
    assert_string_equal(code, "after the block");
    free(code);
    fclose(f);
}

/* A numeric answer worded: "no" with a unit is 0, "no" alone is no number. */
static void test_answer_words(void **state)
{
    (void)state;
    double zero = 0;
    lab_scn_item_t ask = {.kind = LAB_SCN_ASK, .answer = "0", .values = &zero, .n_values = 1};
    assert_true(lab_scenario_answer_ok(&ask, "no bytes"));
    assert_true(lab_scenario_answer_ok(&ask, "No messages"));
    assert_true(lab_scenario_answer_ok(&ask, "0 bytes"));
    assert_true(lab_scenario_answer_ok(&ask, "none"));
    assert_false(lab_scenario_answer_ok(&ask, "no"));
    assert_false(lab_scenario_answer_ok(&ask, "1 byte"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_parsed),    cmocka_unit_test(test_solution_file),
        cmocka_unit_test(test_write_malformed), cmocka_unit_test(test_limit_eval),
        cmocka_unit_test(test_code_ok),         cmocka_unit_test(test_read_code),
        cmocka_unit_test(test_read_code_long),  cmocka_unit_test(test_answer_words),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
