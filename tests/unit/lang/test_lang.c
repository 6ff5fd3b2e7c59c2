/* The command language (lab/lang/lang.h): every example line to its exact AST,
 * precedence and associativity, targets, statements and comments, raw-word
 * commands, every error path with its column and message, the limits, the
 * caret display, the command table, completion, and out-of-memory paths.
 *
 * Expected ASTs are written as JSON with single quotes (no C escaping) and
 * compared with json_equal; a mismatch prints both trees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lab/lang/lang.h"
#include "lab/lang/internal.h"

/* ======================================================================
 * Helpers
 * ====================================================================== */

static json_t *load_quoted(const char *text)
{
    char *s = strdup(text);
    assert_non_null(s);
    for (char *c = s; *c != '\0'; c++)
        if (*c == '\'')
            *c = '"';
    json_error_t jerr;
    json_t *j = json_loads(s, 0, &jerr);
    if (j == NULL)
        fail_msg("bad expected JSON (%s): %s", jerr.text, text);
    free(s);
    return j;
}

static json_t *parse_ok(const char *line)
{
    json_t *stmts = NULL;
    lab_parse_error_t err;
    dl_status_t st = lab_parse_line(line, &stmts, &err);
    if (st != DL_OK)
        fail_msg("'%s' failed at col %d: %s", line, err.col, err.msg);
    assert_non_null(stmts);
    return stmts;
}

static void check_ast(const char *line, const char *expected)
{
    json_t *want = load_quoted(expected);
    json_t *got = parse_ok(line);
    if (!json_equal(want, got)) {
        char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
        print_error("line:     %s\nexpected: %s\ngot:      %s\n", line, w, g);
        free(g);
        free(w);
        fail();
    }
    json_decref(want);
    json_decref(got);
}

static void check_error(const char *line, dl_status_t want_st, int want_col, const char *want_msg)
{
    json_t *stmts = (json_t *)0x1;
    lab_parse_error_t err;
    dl_status_t st = lab_parse_line(line, &stmts, &err);
    if (st != want_st || err.col != want_col || strcmp(err.msg, want_msg) != 0) {
        print_error("line:     %s\nexpected: %d col %d '%s'\ngot:      %d col %d '%s'\n", line,
                    want_st, want_col, want_msg, st, err.col, err.msg);
        fail();
    }
    /* Outputs are set only on success. */
    assert_ptr_equal(stmts, (json_t *)0x1);
}

/* A compact rendering of an expression for precedence tests:
 * (+ a b), (- a) for negation, (@ t i) for indexing, [a b], (call f a k=v). */
static void sexpr(const json_t *e, char *buf, size_t cap, size_t *o)
{
#define OUT(...) (*o += (size_t)snprintf(buf + *o, *o < cap ? cap - *o : 0, __VA_ARGS__))
    json_t *v;
    if ((v = json_object_get(e, "num")) != NULL) {
        if (json_is_integer(v))
            OUT("%lld", (long long)json_integer_value(v));
        else
            OUT("%gf", json_real_value(v));
    } else if ((v = json_object_get(e, "bool")) != NULL) {
        OUT("%s", json_is_true(v) ? "true" : "false");
    } else if ((v = json_object_get(e, "name")) != NULL) {
        OUT("%s", json_string_value(v));
    } else if ((v = json_object_get(e, "chain")) != NULL) {
        /* Drawn as the left-nested tree it means: a - b + c is (+ (- a b) c). */
        json_t *ops = json_object_get(e, "ops");
        assert_int_equal(json_array_size(ops) + 1, json_array_size(v));
        for (size_t i = json_array_size(ops); i-- > 0;)
            OUT("(%s ", json_string_value(json_object_get(json_array_get(ops, i), "op")));
        sexpr(json_array_get(v, 0), buf, cap, o);
        for (size_t i = 1; i < json_array_size(v); i++) {
            OUT(" ");
            sexpr(json_array_get(v, i), buf, cap, o);
            OUT(")");
        }
    } else if ((v = json_object_get(e, "neg")) != NULL) {
        OUT("(- ");
        sexpr(v, buf, cap, o);
        OUT(")");
    } else if ((v = json_object_get(e, "index")) != NULL) {
        OUT("(@ ");
        sexpr(v, buf, cap, o);
        OUT(" ");
        sexpr(json_object_get(e, "at"), buf, cap, o);
        OUT(")");
    } else if ((v = json_object_get(e, "list")) != NULL) {
        OUT("[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            OUT(i > 0 ? " " : "");
            sexpr(json_array_get(v, i), buf, cap, o);
        }
        OUT("]");
    } else if ((v = json_object_get(e, "call")) != NULL) {
        OUT("(call %s", json_string_value(v));
        json_t *args = json_object_get(e, "args");
        for (size_t i = 0; i < json_array_size(args); i++) {
            OUT(" ");
            sexpr(json_array_get(args, i), buf, cap, o);
        }
        const char *key;
        json_t *val;
        json_object_foreach(json_object_get(e, "kwargs"), key, val)
        {
            OUT(" %s=", key);
            sexpr(val, buf, cap, o);
        }
        OUT(")");
    } else {
        OUT("?");
    }
#undef OUT
}

/* Parses "x = " + expr and checks the rendering of its value. */
static void check_expr(const char *expr, const char *want)
{
    char line[256], got[512];
    snprintf(line, sizeof(line), "x = %s", expr);
    json_t *stmts = parse_ok(line);
    size_t o = 0;
    sexpr(json_object_get(json_array_get(stmts, 0), "value"), got, sizeof(got), &o);
    if (strcmp(got, want) != 0) {
        print_error("expr: %s\nexpected: %s\ngot:      %s\n", expr, want, got);
        fail();
    }
    json_decref(stmts);
}

/* The rendering of every positional argument of the first command. */
static void check_args(const char *line, const char *want)
{
    char got[512];
    size_t o = 0;
    json_t *stmts = parse_ok(line);
    json_t *args = json_object_get(json_object_get(json_array_get(stmts, 0), "command"), "args");
    for (size_t i = 0; i < json_array_size(args); i++) {
        o += (size_t)snprintf(got + o, sizeof(got) - o, i > 0 ? " | " : "");
        sexpr(json_array_get(args, i), got, sizeof(got), &o);
    }
    got[o < sizeof(got) ? o : sizeof(got) - 1] = '\0';
    if (strcmp(got, want) != 0) {
        print_error("line: %s\nexpected: %s\ngot:      %s\n", line, want, got);
        fail();
    }
    json_decref(stmts);
}

typedef struct {
    const char *line, *json;
} ast_case_t;

static void check_ast_cases(const ast_case_t *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_ast(cases[i].line, cases[i].json);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ======================================================================
 * Example lines to their exact AST
 * ====================================================================== */

static void test_primitives(void **state)
{
    (void)state;
    static const ast_case_t cases[] = {
        {"h = isend t dst=1",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'h', 'command': {'col': 5, "
         "'cmd': 'isend', 'args': [{'col': 11, 'name': 't'}], 'kwargs': {'dst': {'col': 17, "
         "'num': 1}}}}]"},
        {"g = new_group([0, 2])",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'g', 'value': {'col': 5, "
         "'call': 'new_group', 'args': [{'col': 15, 'list': [{'col': 16, 'num': 0}, {'col': 19, "
         "'num': 2}]}], 'kwargs': {}}}]"},
        {"w = all_reduce t async_op=true",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'w', 'command': {'col': 5, "
         "'cmd': 'all_reduce', 'args': [{'col': 16, 'name': 't'}], 'kwargs': {'async_op': "
         "{'col': 27, 'bool': true}}}}]"},
        {"send t dst=1",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'send', "
         "'args': [{'col': 6, 'name': 't'}], 'kwargs': {'dst': {'col': 12, 'num': 1}}}}]"},
        {"recv t src=0",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'recv', "
         "'args': [{'col': 6, 'name': 't'}], 'kwargs': {'src': {'col': 12, 'num': 0}}}}]"},
        {"wait h",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'wait', "
         "'args': [{'col': 6, 'name': 'h'}], 'kwargs': {}}}]"},
        {"broadcast t src=0",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
         "'broadcast', 'args': [{'col': 11, 'name': 't'}], 'kwargs': {'src': {'col': 17, 'num': "
         "0}}}}]"},
        {"scatter t src=0 scatter_list=[a, b, c, d]",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
         "'scatter', 'args': [{'col': 9, 'name': 't'}], 'kwargs': {'src': {'col': 15, 'num': 0}, "
         "'scatter_list': {'col': 30, 'list': [{'col': 31, 'name': 'a'}, {'col': 34, 'name': "
         "'b'}, {'col': 37, 'name': 'c'}, {'col': 40, 'name': 'd'}]}}}}]"},
        {"gather t dst=0 gather_list=out",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'gather', "
         "'args': [{'col': 8, 'name': 't'}], 'kwargs': {'dst': {'col': 14, 'num': 0}, "
         "'gather_list': {'col': 28, 'name': 'out'}}}}]"},
        {"reduce t dst=3 op=sum",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'reduce', "
         "'args': [{'col': 8, 'name': 't'}], 'kwargs': {'dst': {'col': 14, 'num': 3}, 'op': "
         "{'col': 19, 'name': 'sum'}}}}]"},
        {"all_gather out t",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
         "'all_gather', 'args': [{'col': 12, 'name': 'out'}, {'col': 16, 'name': 't'}], "
         "'kwargs': {}}}]"},
        {"all_reduce t op=max group=g",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
         "'all_reduce', 'args': [{'col': 12, 'name': 't'}], 'kwargs': {'op': {'col': 17, "
         "'name': 'max'}, 'group': {'col': 27, 'name': 'g'}}}}]"},
        {"reduce_scatter out in op=sum",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
         "'reduce_scatter', 'args': [{'col': 16, 'name': 'out'}, {'col': 20, 'name': 'in'}], "
         "'kwargs': {'op': {'col': 26, 'name': 'sum'}}}}]"},
        {"all_to_all out in",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
         "'all_to_all', 'args': [{'col': 12, 'name': 'out'}, {'col': 16, 'name': 'in'}], "
         "'kwargs': {}}}]"},
        {"barrier", "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
                    "'barrier', 'args': [], 'kwargs': {}}}]"},
        {"print t",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'print', "
         "'args': [{'col': 7, 'name': 't'}], 'kwargs': {}}}]"},
        {"print t[0]",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'print', "
         "'args': [{'col': 8, 'index': {'col': 7, 'name': 't'}, 'at': {'col': 9, 'num': 0}}], "
         "'kwargs': {}}}]"},
        {"tensors", "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
                    "'tensors', 'args': [], 'kwargs': {}}}]"},
    };
    check_ast_cases(cases, N_OF(cases));
}

/* A raw-word command's AST: words (argv style, the name first) and their
 * columns; words and cols list what follows the name, each with ", " first. */
#define RAW(cmd, words, cols)                                                                      \
    "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': '" cmd           \
    "', 'words': ['" cmd "'" words "], 'word_cols': [1" cols "]}}]"

static void test_session_commands(void **state)
{
    (void)state;
    static const ast_case_t cases[] = {
        {"ranks", RAW("ranks", "", "")},
        {"kill 2", RAW("kill", ", '2'", ", 6")},
        {"respawn", RAW("respawn", "", "")},
        {"spawn 8", RAW("spawn", ", '8'", ", 7")},
        {"set algo all_reduce ring", RAW("set", ", 'algo', 'all_reduce', 'ring'", ", 5, 10, 21")},
        {"set timeout 10", RAW("set", ", 'timeout', '10'", ", 5, 13")},
        {"set check on", RAW("set", ", 'check', 'on'", ", 5, 11")},
        {"explain all_reduce", RAW("explain", ", 'all_reduce'", ", 9")},
        {"history", RAW("history", "", "")},
        {"source ~/labs/ring-1.dl", RAW("source", ", '~/labs/ring-1.dl'", ", 8")},
        {"source ./a_b.c-d", RAW("source", ", './a_b.c-d'", ", 8")},
        {"help", RAW("help", "", "")},
        {"help all_reduce", RAW("help", ", 'all_reduce'", ", 6")},
        {"quit", RAW("quit", "", "")},
        {"exit", RAW("exit", "", "")},
        {"step on", RAW("step", ", 'on'", ", 6")},
        {"step off", RAW("step", ", 'off'", ", 6")},
        {"next", RAW("next", "", "")},
        {"continue", RAW("continue", "", "")},
        {"back", RAW("back", "", "")},
        {"forward", RAW("forward", "", "")},
        {"tui", RAW("tui", "", "")},
        {"clear", RAW("clear", "", "")},
        /* Words keep what expressions would reject; only ';', blanks, '#'
         * at a word's start and quotes are special. */
        {"kill 2)", RAW("kill", ", '2)'", ", 6")},
        {"help on|off 3-1 a#b", RAW("help", ", 'on|off', '3-1', 'a#b'", ", 6, 13, 17")},
        {"source \"my file;1.dl\" 'x y'", RAW("source", ", 'my file;1.dl', 'x y'", ", 8, 23")},
        {"source \"\"", RAW("source", ", ''", ", 8")},
        {"help   all_reduce   # all of it", RAW("help", ", 'all_reduce'", ", 8")},
        {"source ~/été.dl", RAW("source", ", '~/été.dl'", ", 8")},
    };
    check_ast_cases(cases, N_OF(cases));

    /* A quote inside a word, which the single-quote notation cannot show. */
    json_t *stmts = parse_ok("source it's");
    json_t *words = json_object_get(json_object_get(json_array_get(stmts, 0), "command"), "words");
    assert_string_equal(json_string_value(json_array_get(words, 0)), "source");
    assert_string_equal(json_string_value(json_array_get(words, 1)), "it's");
    json_decref(stmts);
}

static void test_tensor_expressions(void **state)
{
    (void)state;
    static const ast_case_t cases[] = {
        {"t = arange(2) + 1 + 2*rank",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 't', 'value': {'col': 15, "
         "'chain': [{'col': 5, 'call': 'arange', 'args': [{'col': 12, 'num': 2}], 'kwargs': {}}, "
         "{'col': 17, 'num': 1}, {'col': 22, 'chain': [{'col': 21, 'num': 2}, {'col': 23, 'name': "
         "'rank'}], 'ops': [{'col': 22, 'op': '*'}]}], 'ops': [{'col': 15, 'op': '+'}, {'col': 19, "
         "'op': '+'}]}}]"},
        {"z = zeros(4)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'z', 'value': {'col': 5, "
         "'call': 'zeros', 'args': [{'col': 11, 'num': 4}], 'kwargs': {}}}]"},
        {"o = ones(3, dtype=float32)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'o', 'value': {'col': 5, "
         "'call': 'ones', 'args': [{'col': 10, 'num': 3}], 'kwargs': {'dtype': {'col': 19, "
         "'name': 'float32'}}}}]"},
        {"f = full(2, 7)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'f', 'value': {'col': 5, "
         "'call': 'full', 'args': [{'col': 10, 'num': 2}, {'col': 13, 'num': 7}], 'kwargs': "
         "{}}}]"},
        {"r = rand(5, seed=1)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'r', 'value': {'col': 5, "
         "'call': 'rand', 'args': [{'col': 10, 'num': 5}], 'kwargs': {'seed': {'col': 18, "
         "'num': 1}}}}]"},
        {"l = [1, 2, 3]",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'l', 'value': {'col': 5, "
         "'list': [{'col': 6, 'num': 1}, {'col': 9, 'num': 2}, {'col': 12, 'num': 3}]}}]"},
        {"m = [[1, 2], [3, 4]]",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'm', 'value': {'col': 5, "
         "'list': [{'col': 6, 'list': [{'col': 7, 'num': 1}, {'col': 10, 'num': 2}]}, {'col': "
         "14, 'list': [{'col': 15, 'num': 3}, {'col': 18, 'num': 4}]}]}}]"},
        {"u = tensor([1.5, -2])",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'u', 'value': {'col': 5, "
         "'call': 'tensor', 'args': [{'col': 12, 'list': [{'col': 13, 'num': 1.5, 'float': "
         "true}, {'col': 18, 'neg': {'col': 19, 'num': 2}}]}], 'kwargs': {}}}]"},
        {"x = 1e-3 + .5 + 2. + 7",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 10, "
         "'chain': [{'col': 5, 'num': 0.001, 'float': true}, {'col': 12, 'num': 0.5, 'float': "
         "true}, {'col': 17, 'num': 2.0, 'float': true}, {'col': 22, 'num': 7}], 'ops': [{'col': "
         "10, 'op': '+'}, {'col': 15, 'op': '+'}, {'col': 20, 'op': '+'}]}}]"},
        {"x = t[1][2] + t[-1]",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 13, "
         "'chain': [{'col': 9, 'index': {'col': 6, 'index': {'col': 5, 'name': 't'}, 'at': {'col': "
         "7, 'num': 1}}, 'at': {'col': 10, 'num': 2}}, {'col': 16, 'index': {'col': 15, 'name': "
         "'t'}, 'at': {'col': 17, 'neg': {'col': 18, 'num': 1}}}], 'ops': [{'col': 13, 'op': "
         "'+'}]}}]"},
        {"b = True; c = false",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'b', 'value': {'col': 5, "
         "'bool': true}}, {'col': 11, 'kind': 'assign', 'targets': null, 'name': 'c', 'value': "
         "{'col': 15, 'bool': false}}]"},
        {"x = []",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 5, "
         "'list': []}}]"},
        /* Tuples, as torch writes sizes: a list node marked "tuple". */
        {"t = randint(0, 10, (3,))",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 't', 'value': {'col': 5, "
         "'call': 'randint', 'args': [{'col': 13, 'num': 0}, {'col': 16, 'num': 10}, {'col': 20, "
         "'list': [{'col': 21, 'num': 3}], 'tuple': true}], 'kwargs': {}}}]"},
        {"s = (2, 3); e = (); x = (1)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 's', 'value': {'col': 5, "
         "'list': [{'col': 6, 'num': 2}, {'col': 9, 'num': 3}], 'tuple': true}}, {'col': 13, "
         "'kind': 'assign', 'targets': null, 'name': 'e', 'value': {'col': 17, 'list': [], "
         "'tuple': true}}, {'col': 21, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': "
         "{'col': 26, 'num': 1}}]"},
        {"print (1, 2)",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'print', "
         "'args': [{'col': 7, 'list': [{'col': 8, 'num': 1}, {'col': 11, 'num': 2}], 'tuple': "
         "true}], 'kwargs': {}}}]"},
        {"manual_seed(42)",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
         "'manual_seed', 'args': [{'col': 13, 'num': 42}], 'kwargs': {}}}]"},
    };
    check_ast_cases(cases, N_OF(cases));
}

static void test_numbers(void **state)
{
    (void)state;
    check_expr("0", "0");
    check_expr("000", "0");
    check_expr("007.5", "7.5f");
    /* Python's other spellings of an int */
    check_expr("1_000", "1000");
    check_expr("0x1F", "31");
    check_expr("0o17", "15");
    check_expr("0b101", "5");
    check_expr("1_0.5_0", "10.5f");
    check_expr("9223372036854775807", "9223372036854775807");
    check_expr("2.", "2f");
    check_expr(".25", "0.25f");
    check_expr("1e3", "1000f");
    check_expr("2.5E+2", "250f");
    check_expr("1.e-2", "0.01f");
    check_expr("1e-400", "0f"); /* underflow is zero, not an error */
    check_expr("[1, 2.0, True, False]", "[1 2f true false]");

    /* Integer literals are JSON integers, floats JSON reals with float:true,
     * even when the value is whole. */
    json_t *stmts = parse_ok("x = 2.; y = 2");
    json_t *a = json_object_get(json_array_get(stmts, 0), "value");
    json_t *b = json_object_get(json_array_get(stmts, 1), "value");
    assert_true(json_is_real(json_object_get(a, "num")));
    assert_true(json_is_true(json_object_get(a, "float")));
    assert_true(json_is_integer(json_object_get(b, "num")));
    assert_null(json_object_get(b, "float"));
    json_decref(stmts);
}

static void test_precedence(void **state)
{
    (void)state;
    check_expr("1 + 2 * 3", "(+ 1 (* 2 3))");
    check_expr("1 * 2 + 3", "(+ (* 1 2) 3)");
    check_expr("(1 + 2) * 3", "(* (+ 1 2) 3)");
    check_expr("1 - 2 - 3", "(- (- 1 2) 3)");
    check_expr("8 / 4 / 2", "(/ (/ 8 4) 2)");
    check_expr("8 / 4 * 2", "(* (/ 8 4) 2)");
    check_expr("7 // 2 * 3", "(* (// 7 2) 3)");
    check_expr("1 + 64 // world_size", "(+ 1 (// 64 world_size))");
    check_expr("1 - 2 + 3", "(+ (- 1 2) 3)");
    check_expr("1 + 2 * 3 * 4 - 5 / 6", "(- (+ 1 (* (* 2 3) 4)) (/ 5 6))");
    check_expr("-2 * 3", "(* (- 2) 3)");
    check_expr("2 * -3", "(* 2 (- 3))");
    check_expr("- - 1", "(- (- 1))");
    check_expr("-t[0]", "(- (@ t 0))");
    check_expr("-(a + b)", "(- (+ a b))");
    check_expr("a - -b", "(- a (- b))");
    check_expr("t[i + 1][0]", "(@ (@ t (+ i 1)) 0)");
    check_expr("[1, 2][0]", "(@ [1 2] 0)");
    check_expr("arange(4)[1]", "(@ (call arange 4) 1)");
    check_expr("arange(2) + 1 + 2*rank", "(+ (+ (call arange 2) 1) (* 2 rank))");
    check_expr("x*world_size/2 - rank", "(- (/ (* x world_size) 2) rank)");
    check_expr("((((1))))", "1");
    check_expr("full(2, -7, dtype=int32)", "(call full 2 (- 7) dtype=int32)");
    check_expr("f(a, b=[1, 2],)", "(call f a b=[1 2])");
    /* Python's random module: random.NAME(...) is a call of that name. */
    check_expr("random.randint(1, 6)", "(call random.randint 1 6)");
    check_expr("[random.shuffle(l), random.random()]",
               "[(call random.shuffle l) (call random.random)]");
    check_expr("[1, 2,]", "[1 2]");
    check_expr("[[1, 2], [3, 4]]", "[[1 2] [3 4]]");
    check_expr("[a, b]", "[a b]");
    /* Blanks never matter outside command arguments. */
    check_expr("t [0] + arange (3)", "(+ (@ t 0) (call arange 3))");
    check_expr("None", "None");
}

static void test_command_arguments(void **state)
{
    (void)state;
    /* Blanks separate arguments; '[' or '(' after a blank starts a new one. */
    check_args("print t[0]", "(@ t 0)");
    check_args("print t [0]", "t | [0]");
    check_args("print f(x)", "(call f x)");
    check_args("print f (x)", "f | x");
    check_args("all_gather [a, b] t", "[a b] | t");
    /* Operators continue an argument, as in Python. */
    check_args("print t -1", "(- t 1)");
    check_args("print t - 1 u", "(- t 1) | u");
    check_args("print -1 2", "(- 1) | 2");
    check_args("print (t + 1) * 2", "(* (+ t 1) 2)");
    check_args("print t[ 0 ] [1]", "(@ t 0) | [1]");
    check_args("print [t [0]]", "[(@ t 0)]");

    /* Keyword arguments may come before positional ones in space style. */
    check_ast("send dst=1 t",
              "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
              "'send', 'args': [{'col': 12, 'name': 't'}], 'kwargs': {'dst': {'col': 10, 'num': "
              "1}}}}]");
    check_ast("send t dst = 1",
              "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
              "'send', 'args': [{'col': 6, 'name': 't'}], 'kwargs': {'dst': {'col': 14, 'num': "
              "1}}}}]");
    /* Torch style gives the same command node. */
    check_ast("all_reduce(t, op=sum)",
              "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
              "'all_reduce', 'args': [{'col': 12, 'name': 't'}], 'kwargs': {'op': {'col': 18, "
              "'name': 'sum'}}}}]");
    check_ast("h = isend(t, dst=1)",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'h', 'command': {'col': 5, "
              "'cmd': 'isend', 'args': [{'col': 11, 'name': 't'}], 'kwargs': {'dst': {'col': 18, "
              "'num': 1}}}}]");
    check_args("barrier()", "");
    /* With a blank, '(' opens an ordinary parenthesised argument. */
    check_args("print (t)", "t");
    /* A keyword's value is a whole expression. */
    check_ast("reduce t dst=world_size-1",
              "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
              "'reduce', 'args': [{'col': 8, 'name': 't'}], 'kwargs': {'dst': {'col': 24, 'chain': "
              "[{'col': 14, 'name': 'world_size'}, {'col': 25, 'num': 1}], 'ops': [{'col': 24, "
              "'op': '-'}]}}}}]");
}

static void test_targets(void **state)
{
    (void)state;
    static const ast_case_t cases[] = {
        {"on 0: send t dst=1",
         "[{'col': 7, 'kind': 'command', 'targets': [0], 'targets_col': 1, 'command': {'col': 7, "
         "'cmd': 'send', 'args': [{'col': 12, 'name': 't'}], 'kwargs': {'dst': {'col': 18, "
         "'num': 1}}}}]"},
        {"on 1,3: recv t src=0",
         "[{'col': 9, 'kind': 'command', 'targets': [1, 3], 'targets_col': 1, 'command': {'col': "
         "9, 'cmd': 'recv', 'args': [{'col': 14, 'name': 't'}], 'kwargs': {'src': {'col': 20, "
         "'num': 0}}}}]"},
        {"on 0-2: barrier",
         "[{'col': 9, 'kind': 'command', 'targets': [0, 1, 2], 'targets_col': 1, 'command': "
         "{'col': 9, 'cmd': 'barrier', 'args': [], 'kwargs': {}}}]"},
        {"on 0-2,5: print t",
         "[{'col': 11, 'kind': 'command', 'targets': [0, 1, 2, 5], 'targets_col': 1, 'command': "
         "{'col': 11, 'cmd': 'print', 'args': [{'col': 17, 'name': 't'}], 'kwargs': {}}}]"},
        /* Ranks come back sorted, whatever order they were written in. */
        {"on 3,0-1: x = rank",
         "[{'col': 11, 'kind': 'assign', 'targets': [0, 1, 3], 'targets_col': 1, 'name': 'x', "
         "'value': {'col': 15, 'name': 'rank'}}]"},
        {"  on 2 - 2 , 0 :kill 1",
         "[{'col': 17, 'kind': 'command', 'targets': [0, 2], 'targets_col': 3, 'command': "
         "{'col': 17, 'cmd': 'kill', 'words': ['kill', '1'], 'word_cols': [17, 22]}}]"},
        {"on 0: h = isend t dst=1; on 1: h = irecv t src=0",
         "[{'col': 7, 'kind': 'assign', 'targets': [0], 'targets_col': 1, 'name': 'h', "
         "'command': {'col': 11, 'cmd': 'isend', 'args': [{'col': 17, 'name': 't'}], 'kwargs': "
         "{'dst': {'col': 23, 'num': 1}}}}, {'col': 32, 'kind': 'assign', 'targets': [1], "
         "'targets_col': 26, 'name': 'h', 'command': {'col': 36, 'cmd': 'irecv', 'args': "
         "[{'col': 42, 'name': 't'}], 'kwargs': {'src': {'col': 48, 'num': 0}}}}]"},
    };
    check_ast_cases(cases, N_OF(cases));

    /* 'on' is a keyword only where a statement starts. */
    check_args("print on", "on");
}

static void test_statements_and_comments(void **state)
{
    (void)state;
    static const ast_case_t cases[] = {
        {"", "[]"},
        {"   ", "[]"},
        {"# only a comment", "[]"},
        {";;  ; ", "[]"},
        {"barrier;", "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
                     "'barrier', 'args': [], 'kwargs': {}}}]"},
        {"x = 1;y = 2 # x = 3; y = 4",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 5, 'num': "
         "1}}, {'col': 7, 'kind': 'assign', 'targets': null, 'name': 'y', 'value': {'col': 11, "
         "'num': 2}}]"},
        {"x=1#c",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 3, 'num': "
         "1}}]"},
        {"help all_reduce; barrier",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'help', "
         "'words': ['help', 'all_reduce'], 'word_cols': [1, 6]}}, {'col': 18, 'kind': 'command', "
         "'targets': "
         "null, 'command': {'col': 18, 'cmd': 'barrier', 'args': [], 'kwargs': {}}}]"},
        {"\tbarrier\r\n",
         "[{'col': 2, 'kind': 'command', 'targets': null, 'command': {'col': 2, 'cmd': "
         "'barrier', 'args': [], 'kwargs': {}}}]"},
        /* A name that merely starts like a command is a name. */
        {"sendx = 1",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'sendx', 'value': {'col': 9, "
         "'num': 1}}]"},
        {"tensor = arange(3)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'tensor', 'value': {'col': 10, "
         "'call': 'arange', 'args': [{'col': 17, 'num': 3}], 'kwargs': {}}}]"},
        {"x = y", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 5, "
                  "'name': 'y'}}]"},
    };
    check_ast_cases(cases, N_OF(cases));
}

/* ======================================================================
 * Errors
 * ====================================================================== */

typedef struct {
    const char *line;
    dl_status_t st;
    int col;
    const char *msg;
} err_case_t;

static void test_errors(void **state)
{
    (void)state;
    static const err_case_t cases[] = {
        /* statements */
        {"send t)", DL_ERR_INVALID, 7, "unexpected ')'"},
        {")", DL_ERR_INVALID, 1, "expected a command or NAME = ..."},
        {"foo t", DL_ERR_INVALID, 1, "unknown command 'foo'"},
        {"snd t dst=1", DL_ERR_INVALID, 1, "unknown command 'snd'; did you mean 'send'?"},
        {"all_reduc t", DL_ERR_INVALID, 1,
         "unknown command 'all_reduc'; did you mean 'all_reduce'?"},
        {"all_reduce t op=sum;;x y", DL_ERR_INVALID, 22, "unknown command 'x'"},
        {"x = 1 2", DL_ERR_INVALID, 7, "unexpected '2'"},
        {"send(t) x", DL_ERR_INVALID, 9, "unexpected 'x'"},
        {"true = 1", DL_ERR_INVALID, 1, "cannot assign to 'true'"},
        {"False = 1", DL_ERR_INVALID, 1, "cannot assign to 'False'"},
        {"send = 1", DL_ERR_INVALID, 1, "cannot assign to 'send': it is a command"},
        {"barrier = 1", DL_ERR_INVALID, 1, "cannot assign to 'barrier': it is a command"},
        /* Names every rank answers itself: a variable could never be read
         * back. A plain rank = value parses (the ranks take the value they
         * hold, rank = dist.get_rank()); any other binding is refused. */
        {"rank += 1", DL_ERR_INVALID, 1,
         "cannot assign to 'rank': it is read-only, set by the launcher"},
        {"on 1: world_size[0] = 2", DL_ERR_INVALID, 7,
         "cannot assign to 'world_size': it is read-only, set by the launcher"},
        {"x =", DL_ERR_INVALID, 4, "expected a value after '='"},
        {"x = )", DL_ERR_INVALID, 5, "expected a value after '='"},
        {"x = ; y = 1", DL_ERR_INVALID, 5, "expected a value after '='"},
        /* targets */
        {"on 3-1: barrier", DL_ERR_INVALID, 4, "rank range 3-1 is reversed"},
        {"on : barrier", DL_ERR_INVALID, 4, "expected a rank after 'on'"},
        {"on", DL_ERR_INVALID, 3, "expected a rank after 'on'"},
        {"on = 1", DL_ERR_INVALID, 4, "expected a rank after 'on'"},
        {"on 0, : barrier", DL_ERR_INVALID, 7, "expected a rank after ','"},
        {"on 0- : x", DL_ERR_INVALID, 7, "expected a rank after '-'"},
        {"on -1: barrier", DL_ERR_INVALID, 4, "ranks are non-negative integers"},
        {"on 1.5: barrier", DL_ERR_INVALID, 4, "ranks are non-negative integers"},
        {"on 1,1: barrier", DL_ERR_INVALID, 6, "rank 1 is listed twice"},
        {"on 0-2,1: barrier", DL_ERR_INVALID, 8, "rank 1 is listed twice"},
        {"on 1,0-2: barrier", DL_ERR_INVALID, 6, "rank 1 is listed twice"},
        {"on 0 barrier", DL_ERR_INVALID, 6, "expected ':' after the ranks, found 'barrier'"},
        {"on 0$ barrier", DL_ERR_INVALID, 5, "unexpected character '$'"},
        {"on 0:", DL_ERR_INVALID, 6, "expected an indented block after ':'"},
        {"on 0: ; barrier", DL_ERR_INVALID, 7, "expected a command after ':'"},
        {"on 0: on 1: barrier", DL_ERR_INVALID, 7, "a statement takes one 'on' clause"},
        {"on 1x: barrier", DL_ERR_INVALID, 4, "malformed number '1x'"},
        /* brackets */
        {"x = [1, 2", DL_ERR_INVALID, 5, "unterminated list"},
        {"x = [1, 2; y = 1", DL_ERR_INVALID, 5, "unterminated list"},
        {"x = {1: 2", DL_ERR_INVALID, 5, "unterminated dict"},
        {"x = {1, 2}", DL_ERR_INVALID, 6,
         "sets are not supported here: a dict is {key: value, ...}"},
        {"x = {k for k in l}", DL_ERR_INVALID, 6,
         "sets are not supported here: a dict is {key: value, ...}"},
        {"x = {1 2}", DL_ERR_INVALID, 8, "expected ':', found '2'"},
        {"x = {1: 2 3}", DL_ERR_INVALID, 11, "expected ',' or '}', found '3'"},
        {"x = [1 2]", DL_ERR_INVALID, 8, "expected ',' or ']', found '2'"},
        {"x = [1, 2)", DL_ERR_INVALID, 10, "expected ',' or ']', found ')'"},
        {"x = [,]", DL_ERR_INVALID, 6, "unexpected ','"},
        {"x = [1,,2]", DL_ERR_INVALID, 8, "unexpected ','"},
        {"x = (1 + 2", DL_ERR_INVALID, 5, "unclosed '('"},
        {"x = (1 2)", DL_ERR_INVALID, 8, "expected ')', found '2'"},
        {"x = (1,", DL_ERR_INVALID, 5, "unclosed '('"},
        {"x = (1, 2", DL_ERR_INVALID, 5, "unclosed '('"},
        {"x = (1, 2 3)", DL_ERR_INVALID, 11, "expected ')', found '3'"},
        {"x = (,)", DL_ERR_INVALID, 6, "expected a value after '('"},
        {"x = (1,,)", DL_ERR_INVALID, 8, "unexpected ','"},
        {"x = (", DL_ERR_INVALID, 5, "unclosed '('"},
        {"x = t[0", DL_ERR_INVALID, 6, "unclosed '['"},
        {"x = t[", DL_ERR_INVALID, 6, "unclosed '['"},
        {"x = t[]", DL_ERR_INVALID, 7, "expected a value after '['"},
        {"x = t[0 1]", DL_ERR_INVALID, 9, "expected ']', found '1'"},
        {"x = t[1:2:3:4]", DL_ERR_INVALID, 12, "expected ']', found ':'"},
        {"x = arange(3", DL_ERR_INVALID, 11, "unterminated call to 'arange'"},
        {"x = arange(3,", DL_ERR_INVALID, 11, "unterminated call to 'arange'"},
        {"x = arange(3 4)", DL_ERR_INVALID, 14, "expected ',' or ')', found '4'"},
        {"x = f(,)", DL_ERR_INVALID, 7, "unexpected ','"},
        {"send(t, dst=1", DL_ERR_INVALID, 5, "unterminated call to 'send'"},
        /* arguments */
        {"all_reduce t op=", DL_ERR_INVALID, 17, "expected a value after 'op='"},
        {"all_reduce t op=   ", DL_ERR_INVALID, 17, "expected a value after 'op='"},
        {"all_reduce t op= # max", DL_ERR_INVALID, 17, "expected a value after 'op='"},
        {"all_reduce t op=; barrier", DL_ERR_INVALID, 17, "expected a value after 'op='"},
        {"all_reduce t op=)", DL_ERR_INVALID, 17, "expected a value after 'op='"},
        {"send t dst=1 2; barrier group=", DL_ERR_INVALID, 31, "expected a value after 'group='"},
        {"x = ones(3, dtype=)", DL_ERR_INVALID, 19, "expected a value after 'dtype='"},
        {"send t dst=1 dst=2", DL_ERR_INVALID, 14, "duplicate keyword 'dst'"},
        {"x = ones(3, dtype=int32, dtype=int64)", DL_ERR_INVALID, 26, "duplicate keyword 'dtype'"},
        {"x = f(a=1, a=2)", DL_ERR_INVALID, 12, "duplicate keyword 'a'"},
        {"x = ones(dtype=float32, 3)", DL_ERR_INVALID, 25,
         "positional argument after keyword arguments"},
        {"send(dst=1, t)", DL_ERR_INVALID, 13, "positional argument after keyword arguments"},
        {"x = ones(3, dtyp=int32)", DL_ERR_INVALID, 13,
         "unknown keyword 'dtyp' for ones(); did you mean 'dtype'?"},
        {"x = ones(3, foo=1)", DL_ERR_INVALID, 13,
         "unknown keyword 'foo' for ones() (it takes dtype=, device=)"},
        {"send t dest=1", DL_ERR_INVALID, 8,
         "unknown keyword 'dest' for send; did you mean 'dst'?"},
        {"barrier extra=1", DL_ERR_INVALID, 9,
         "unknown keyword 'extra' for barrier (it takes group=, async_op=)"},
        {"print t x=1", DL_ERR_INVALID, 9,
         "unknown keyword 'x' for print (it takes sep=, end=, flush=)"},
        {"send t, dst=1", DL_ERR_INVALID, 7,
         "unexpected ','; command arguments are separated by blanks"},
        {"send t : 1", DL_ERR_INVALID, 8, "unexpected ':'"},
        {"print send(t)", DL_ERR_INVALID, 7,
         "'send' is a command and cannot be used inside an expression"},
        {"x = 1 + barrier()", DL_ERR_INVALID, 9,
         "'barrier' is a command and cannot be used inside an expression"},
        /* operators */
        {"x = 1 +", DL_ERR_INVALID, 8, "expected a value after '+'"},
        {"x = 2 * * 3", DL_ERR_INVALID, 9, "expected a value after '*'"},
        {"x = 2 / )", DL_ERR_INVALID, 9, "expected a value after '/'"},
        {"x = -", DL_ERR_INVALID, 6, "expected a value after '-'"},
        {"x = +", DL_ERR_INVALID, 6, "expected a value after '+'"},
        {"print t +", DL_ERR_INVALID, 10, "expected a value after '+'"},
        /* lexical */
        {"x = 2x", DL_ERR_INVALID, 5, "malformed number '2x'"},
        {"x = 007", DL_ERR_INVALID, 5,
         "leading zeros in decimal integer literals are not permitted; use an 0o prefix for "
         "octal integers ('007')"},
        {"x = 1__0", DL_ERR_INVALID, 5, "malformed number '1__0'"},
        {"x = 0b2", DL_ERR_INVALID, 5, "malformed number '0b2'"},
        {"x = 1e", DL_ERR_INVALID, 5, "malformed number '1e'"},
        {"x = 1e+", DL_ERR_INVALID, 5, "malformed number '1e+'"},
        {"x = 1.2.3", DL_ERR_INVALID, 5, "malformed number '1.2.3'"},
        {"x = 2.t", DL_ERR_INVALID, 5, "malformed number '2.t'"},
        {"x = 9223372036854775808", DL_ERR_INVALID, 5,
         "integer '9223372036854775808' is too large"},
        {"x = 1e999", DL_ERR_INVALID, 5, "number '1e999' is out of range"},
        {"x = $", DL_ERR_INVALID, 5, "unexpected character '$'"},
        {"x = t.sum2()", DL_ERR_INVALID, 7,
         "a tensor has no method 'sum2' here; did you mean 'sum'?"},
        {"x = \"a", DL_ERR_INVALID, 5, "unterminated string"},
        {"x = 'a\"", DL_ERR_INVALID, 5, "unterminated string"},
        {"x = 'a\\", DL_ERR_INVALID, 7, "unterminated string"},
        {"x = '\\d'", DL_ERR_INVALID, 6,
         "unknown escape '\\d' in a string (write '\\\\' for a backslash)"},
        {"x = 'a\x01'", DL_ERR_INVALID, 7, "unexpected byte 0x01 in a string"},
        {"x = 'a\xff'", DL_ERR_INVALID, 7, "unexpected byte 0xff in a string"},
        {"x = 'a'b", DL_ERR_INVALID, 8, "unexpected 'b'"},
        {"x = \xc3\xa9", DL_ERR_INVALID, 5, "unexpected character '\xc3\xa9'"},
        {"x = \x01", DL_ERR_INVALID, 5, "unexpected byte 0x01"},
        {"x = \xff", DL_ERR_INVALID, 5, "unexpected byte 0xff"},
        {"x = \xc3", DL_ERR_INVALID, 5, "unexpected byte 0xc3"},
        {"x = \xed\xa0\x80", DL_ERR_INVALID, 5, "unexpected byte 0xed"}, /* a surrogate */
        {"$", DL_ERR_INVALID, 1, "unexpected character '$'"},
        /* words */
        {"source \"abc", DL_ERR_INVALID, 8, "unterminated string"},
        {"source 'a\"", DL_ERR_INVALID, 8, "unterminated string"},
        {"source \"a\"b", DL_ERR_INVALID, 11, "expected a blank after the closing quote"},
        {"kill \x01", DL_ERR_INVALID, 6, "unexpected byte 0x01"},
        {"source a\xff", DL_ERR_INVALID, 9, "unexpected byte 0xff"},
        {"source \"a\x7f\"", DL_ERR_INVALID, 10, "unexpected byte 0x7f"},
    };
    for (size_t i = 0; i < N_OF(cases); i++)
        check_error(cases[i].line, cases[i].st, cases[i].col, cases[i].msg);

    /* Long names are cut short in messages. */
    char line[200];
    memset(line, 'a', 100);
    snprintf(line + 100, sizeof(line) - 100, " t");
    check_error(line, DL_ERR_INVALID, 1, "unknown command 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'");

    /* A NULL error pointer is allowed, and bad arguments are refused. */
    json_t *stmts = NULL;
    assert_int_equal(lab_parse_line("send t)", &stmts, NULL), DL_ERR_INVALID);
    assert_null(stmts);
    lab_parse_error_t err;
    assert_int_equal(lab_parse_line(NULL, &stmts, &err), DL_ERR_INVALID);
    assert_int_equal(err.col, 0);
    assert_int_equal(lab_parse_line("barrier", NULL, &err), DL_ERR_INVALID);
}

/* ======================================================================
 * Limits
 * ====================================================================== */

/* A line of n bytes: prefix, then fill repeated, then suffix. */
static char *make_line(const char *prefix, const char *fill, size_t times, const char *suffix)
{
    size_t lp = strlen(prefix), lf = strlen(fill), ls = strlen(suffix);
    char *s = malloc(lp + lf * times + ls + 1);
    assert_non_null(s);
    memcpy(s, prefix, lp);
    for (size_t i = 0; i < times; i++)
        memcpy(s + lp + i * lf, fill, lf);
    memcpy(s + lp + lf * times, suffix, ls + 1);
    return s;
}

static void check_line_ok(const char *line)
{
    json_t *stmts = parse_ok(line);
    json_decref(stmts);
}

static void check_line_error(const char *line, dl_status_t st, int col, const char *msg)
{
    check_error(line, st, col, msg);
}

static void test_limits(void **state)
{
    (void)state;
    /* Line length: exactly the limit parses, one byte more does not. */
    char *line = make_line("barrier", " ", LAB_LANG_MAX_LINE - 7, "");
    assert_int_equal(strlen(line), LAB_LANG_MAX_LINE);
    check_line_ok(line);
    free(line);
    line = make_line("barrier", " ", LAB_LANG_MAX_LINE - 6, "");
    check_line_error(line, DL_ERR_TOO_BIG, LAB_LANG_MAX_LINE + 1,
                     "line is too long (at most 65536 bytes)");
    free(line);

    /* Depth: 64 nested lists, parentheses, minus signs or operators parse;
     * one more is refused where it starts. */
    line = make_line("x = ", "[", 64, "");
    char *full = make_line(line, "]", 64, "");
    check_line_ok(full);
    free(full);
    free(line);
    line = make_line("x = ", "[", 65, "");
    full = make_line(line, "]", 65, "");
    check_line_error(full, DL_ERR_TOO_BIG, 4 + 65,
                     "expression is nested too deeply (at most 64 levels)");
    free(full);
    free(line);

    line = make_line("x = ", "(", 64, "1");
    full = make_line(line, ")", 64, "");
    check_line_ok(full);
    free(full);
    free(line);
    /* Without the closing half: the limit trips before the missing ')'. */
    line = make_line("x = ", "(", 100000 / 2, "1");
    check_line_error(line, DL_ERR_TOO_BIG, 4 + 65,
                     "expression is nested too deeply (at most 64 levels)");
    free(line);

    /* Tuples are brackets too: (((1,),),) ... */
    line = make_line("x = ", "(", 64, "1");
    full = make_line(line, ",)", 64, "");
    check_line_ok(full);
    free(full);
    free(line);
    line = make_line("x = ", "(", 65, "1");
    full = make_line(line, ",)", 65, "");
    check_line_error(full, DL_ERR_TOO_BIG, 4 + 65,
                     "expression is nested too deeply (at most 64 levels)");
    free(full);
    free(line);

    line = make_line("x = ", "-", 64, "1");
    check_line_ok(line);
    free(line);
    line = make_line("x = ", "-", 65, "1");
    check_line_error(line, DL_ERR_TOO_BIG, 4 + 65,
                     "expression is nested too deeply (at most 64 levels)");
    free(line);

    /* A run of binary operators is not nesting: 66 terms, 500, or as many
     * as a line holds parse, into one flat node. */
    line = make_line("x = 1", "+1", 65, "");
    check_line_ok(line);
    free(line);
    line = make_line("t = 1", "+1", 499, "");
    json_t *stmts = parse_ok(line);
    json_t *chain = json_object_get(json_object_get(json_array_get(stmts, 0), "value"), "chain");
    assert_int_equal(json_array_size(chain), 500);
    json_decref(stmts);
    free(line);
    line = make_line("x = 1", "-1", (LAB_LANG_MAX_LINE - 5) / 2, "");
    check_line_ok(line);
    free(line);
    line = make_line("x = 2", "*2+2", (LAB_LANG_MAX_LINE - 5) / 4, "");
    check_line_ok(line);
    free(line);
    /* Inside 64 parentheses a chain still parses; the parentheses are what counts. */
    line = make_line("x = ", "(", 64, "1+1+1+1");
    full = make_line(line, ")", 64, "");
    check_line_ok(full);
    free(full);
    free(line);
    line = make_line("x = ", "(", 65, "1+1+1+1");
    full = make_line(line, ")", 65, "");
    check_line_error(full, DL_ERR_TOO_BIG, 4 + 65,
                     "expression is nested too deeply (at most 64 levels)");
    free(full);
    free(line);
    /* The deepest AST the limits allow, operators at every level, survives a
     * round trip through JSON text, as statements travel to the ranks
     * (jansson's decoder refuses more than 2048 levels). */
    line = make_line("x = ", "-(1*2+[", 21, "1");
    full = make_line(line, "])", 21, "");
    stmts = parse_ok(full);
    char *text = json_dumps(stmts, JSON_COMPACT);
    assert_non_null(text);
    json_t *back = json_loads(text, 0, NULL);
    assert_true(json_equal(back, stmts));
    json_decref(back);
    free(text);
    json_decref(stmts);
    free(full);
    free(line);
    line = make_line("x = t", "[0]", 65, "");
    check_line_error(line, DL_ERR_TOO_BIG, 6 + 3 * 64,
                     "expression is nested too deeply (at most 64 levels)");
    free(line);
    line = make_line("x = ", "f(", 65, "");
    check_line_error(line, DL_ERR_TOO_BIG, 4 + 2 * 64 + 2,
                     "expression is nested too deeply (at most 64 levels)");
    free(line);
    /* A long flat list is not deep. */
    line = make_line("x = [0", ", 0", 20000, "]");
    check_line_ok(line);
    free(line);

    /* Ranks. */
    check_line_ok("on 65535: barrier");
    check_line_error("on 65536: barrier", DL_ERR_TOO_BIG, 4,
                     "rank 65536 is too large (at most 65535)");
    check_line_error("on 0-99999999999: barrier", DL_ERR_TOO_BIG, 6,
                     "rank 99999999999 is too large (at most 65535)");
    stmts = parse_ok("on 0-65535: barrier");
    assert_int_equal(json_array_size(json_object_get(json_array_get(stmts, 0), "targets")), 65536);
    json_decref(stmts);
    check_line_error("on 0-65535: barrier; on 0: barrier", DL_ERR_TOO_BIG, 25,
                     "too many target ranks on one line (at most 65536)");

    /* Numbers too long to be sensible. */
    line = make_line("x = 0.", "0", 500, "1");
    check_line_error(line, DL_ERR_TOO_BIG, 5,
                     "number '0.000000000000000000000000000000...' is too long");
    free(line);

    /* List length, under a lowered limit (a 64 KiB line cannot reach 1<<20). */
    lab__limits_t lim = lab__default_limits;
    lim.max_list = 4;
    lab_parse_error_t err;
    stmts = NULL;
    assert_int_equal(lab__parse_line_limits("x = [1, 2, 3, 4]", &lim, &stmts, &err), DL_OK);
    json_decref(stmts);
    stmts = NULL;
    assert_int_equal(lab__parse_line_limits("x = [1, 2, 3, 4, 5]", &lim, &stmts, &err),
                     DL_ERR_TOO_BIG);
    assert_int_equal(err.col, 18);
    assert_string_equal(err.msg, "list is too long (at most 4 items)");
    assert_int_equal(lab__parse_line_limits("x = f(1, 2, 3, 4, 5)", &lim, &stmts, &err),
                     DL_ERR_TOO_BIG);
    assert_string_equal(err.msg, "too many arguments (at most 4)");
    assert_int_equal(lab__parse_line_limits("print 1 2 3 4 5", &lim, &stmts, &err), DL_ERR_TOO_BIG);
    assert_int_equal(err.col, 15);
    assert_int_equal(lab__parse_line_limits("help a b c d e", &lim, &stmts, &err), DL_ERR_TOO_BIG);
    assert_string_equal(err.msg, "too many words (at most 4)");
    assert_null(stmts);
}

/* ======================================================================
 * The caret display
 * ====================================================================== */

static void check_show(const char *line, int col, const char *msg, int width, const char *want)
{
    lab_parse_error_t err = {.col = col};
    snprintf(err.msg, sizeof(err.msg), "%s", msg);
    char *text = NULL;
    assert_int_equal(lab_parse_error_show(line, &err, width, &text), DL_OK);
    if (strcmp(text, want) != 0) {
        print_error("expected:\n%s\ngot:\n%s\n", want, text);
        fail();
    }
    free(text);
}

static void test_error_show(void **state)
{
    (void)state;
    /* The example from the shell's design. */
    lab_parse_error_t err;
    json_t *stmts;
    const char *line = "all_reduce t op=";
    assert_int_equal(lab_parse_line(line, &stmts, &err), DL_ERR_INVALID);
    char *text = NULL;
    assert_int_equal(lab_parse_error_show(line, &err, 80, &text), DL_OK);
    assert_string_equal(text, "  all_reduce t op=\n"
                              "                  ^ expected a value after 'op='");
    free(text);

    check_show("send t)", 7, "unexpected ')'", 0, "  send t)\n        ^ unexpected ')'");
    /* A tab shows as one blank so the caret stays under its character. */
    check_show("x =\t$", 5, "m", 0, "  x = $\n      ^ m");
    /* A UTF-8 character is one cell; bad bytes show as '?'. */
    check_show("x = \xc3\xa9 $", 8, "m", 0, "  x = \xc3\xa9 $\n        ^ m");
    check_show("x = \x01\xff $", 8, "m", 0, "  x = ?? $\n         ^ m");
    /* No column: the message alone. */
    check_show("barrier", 0, "out of memory", 80, "  out of memory");
    /* A column past the end points one past the last character. */
    check_show("ab", 9, "m", 0, "  ab\n    ^ m");

    /* A long line is cut to a window around the caret. */
    char lng[201];
    for (int i = 0; i < 200; i++)
        lng[i] = (char)('a' + i % 26);
    lng[200] = '\0';
    char want[256];
    /* width 40: 32 cells of context, caret 16 cells into them. */
    snprintf(want, sizeof(want), "  ...%.32s...\n     %16s^ m", lng + 133, "");
    check_show(lng, 150, "m", 40, want);
    snprintf(want, sizeof(want), "  %.32s...\n  %4s^ m", lng, "");
    check_show(lng, 5, "m", 40, want);
    snprintf(want, sizeof(want), "  ...%.32s\n     %32s^ m", lng + 168, "");
    check_show(lng, 201, "m", 40, want);
    /* Too narrow to help: no clipping. */
    snprintf(want, sizeof(want), "  %s\n  %4s^ m", lng, "");
    check_show(lng, 5, "m", 10, want);

    assert_int_equal(lab_parse_error_show(NULL, &err, 0, &text), DL_ERR_INVALID);

    /* The fixed-buffer form: the same text with a newline, clipped to 80
     * columns so that LAB_PARSE_ERROR_TEXT_MAX always holds it. */
    char buf[LAB_PARSE_ERROR_TEXT_MAX];
    assert_int_equal(lab_parse_line(line, &stmts, &err), DL_ERR_INVALID);
    size_t n = lab_parse_error_format(line, &err, buf, sizeof(buf));
    assert_string_equal(buf, "  all_reduce t op=\n"
                             "                  ^ expected a value after 'op='\n");
    assert_int_equal(n, strlen(buf));
    /* A 60 KB line of three-byte characters still fits, window and all. */
    char *huge = make_line("source ", "\xe2\x9c\x93", 20000, " \x01");
    assert_int_equal(lab_parse_line(huge, &stmts, &err), DL_ERR_INVALID);
    assert_int_equal(err.col, 7 + 3 * 20000 + 2);
    n = lab_parse_error_format(huge, &err, buf, sizeof(buf));
    assert_true(n < sizeof(buf));
    assert_int_equal(strncmp(buf, "  ...\xe2\x9c\x93", 8), 0);
    assert_non_null(strstr(buf, "\xe2\x9c\x93 ?\n"));
    assert_non_null(strstr(buf, "^ unexpected byte 0x01\n"));
    free(huge);
    /* Truncated like snprintf. */
    assert_int_equal(lab_parse_line(line, &stmts, &err), DL_ERR_INVALID);
    n = lab_parse_error_format(line, &err, buf, 8);
    assert_string_equal(buf, "  all_r");
    assert_int_equal(n, strlen("  all_reduce t op=\n") + 18 + 2 + strlen(err.msg) + 1);
}

/* ======================================================================
 * The command table
 * ====================================================================== */

/* Whether e (an AST node) calls name anywhere. */
static bool calls(const json_t *e, const char *name)
{
    if (json_is_object(e)) {
        json_t *c = json_object_get(e, "call");
        if (c != NULL && strcmp(json_string_value(c), name) == 0)
            return true;
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)e, key, v)
        {
            if (calls(v, name))
                return true;
        }
    } else if (json_is_array(e)) {
        for (size_t i = 0; i < json_array_size(e); i++)
            if (calls(json_array_get(e, i), name))
                return true;
    }
    return false;
}

static void test_table(void **state)
{
    (void)state;
    size_t n = 0;
    const lab_cmd_t *all = lab_cmd_all(&n);
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        const lab_cmd_t *c = &all[i];
        assert_non_null(c->name);
        assert_ptr_equal(lab_cmd_find(c->name), c); /* names are unique */
        assert_non_null(c->usage);
        assert_non_null(c->summary);
        assert_non_null(c->example);
        assert_non_null(c->keywords);
        assert_true((unsigned)c->category < LAB_CAT__COUNT);
        /* The usage line starts with the name (or with "H = name"). */
        const char *u = strncmp(c->usage, "H = ", 4) == 0 ? c->usage + 4 : c->usage;
        if (c->flags & LAB_CMD_METHOD_ONLY) {
            /* A method or attribute only: "TENSOR.item()", "TENSOR.T", and
             * of the pair max(dim=D) gives, "PAIR.values". */
            const char *of = (c->flags & LAB_CMD_OBJECT_METHOD) ? "PAIR." : "TENSOR.";
            if (strncmp(u, "LIST.", 5) == 0 && (c->flags & LAB_CMD_OBJECT_METHOD))
                of = "LIST."; /* l.append(x) */
            if (strncmp(u, "STR.", 4) == 0 && (c->flags & LAB_CMD_OBJECT_METHOD))
                of = "STR."; /* s.upper() */
            if (strncmp(u, "DICT.", 5) == 0 && (c->flags & LAB_CMD_OBJECT_METHOD))
                of = "DICT."; /* d.keys() */
            if (strncmp(u, "HANDLE.", 7) == 0 && (c->flags & LAB_CMD_OBJECT_METHOD))
                of = "HANDLE."; /* h.is_completed() */
            assert_int_equal(strncmp(u, of, strlen(of)), 0);
            u += strlen(of);
        }
        assert_int_equal(strncmp(u, c->name, strlen(c->name)), 0);
        /* Torch's signature is given wherever torch has the operation. */
        if (c->category == LAB_CAT_P2P || c->category == LAB_CAT_COLLECTIVE ||
            (c->flags & LAB_CMD_FUNCTION))
            assert_non_null(c->torch);
        /* Every keyword shows in the usage line. */
        for (const char *const *k = c->keywords; *k != NULL; k++) {
            char kw[64];
            snprintf(kw, sizeof(kw), "%s=", *k);
            if (strstr(c->usage, kw) == NULL)
                fail_msg("usage of %s lacks %s", c->name, kw);
            assert_true(lab_cmd_has_keyword(c, *k));
        }
        assert_false(lab_cmd_has_keyword(c, "no_such_keyword"));
        /* Every example parses and uses its entry. */
        json_t *stmts = parse_ok(c->example);
        json_t *last = json_array_get(stmts, json_array_size(stmts) - 1);
        if ((c->flags & LAB_CMD_FUNCTION) && c->name[strlen(c->name) - 1] == '_') {
            /* t.add_(1) is the assignment t += 1 it stands for. */
            assert_string_equal(json_string_value(json_object_get(last, "kind")), "assign");
        } else if (strcmp(c->name, "data") == 0) {
            /* p.data is p itself: p.data -= ... is the store into p */
            assert_string_equal(json_string_value(json_object_get(last, "name")), "p");
        } else if (c->flags & LAB_CMD_FUNCTION) {
            assert_true(calls(stmts, c->name));
        } else {
            json_t *cmd = json_object_get(last, "command");
            assert_string_equal(json_string_value(json_object_get(cmd, "cmd")), c->name);
            assert_int_equal(json_object_get(cmd, "words") != NULL,
                             (c->flags & LAB_CMD_RAW_WORDS) != 0);
        }
        json_decref(stmts);
    }

    /* Every command the shell promises, with the right kind: a session
     * command (S) runs in the controller, one that needs a world (W) waits
     * for every rank to be ready, and P may run while a collective is
     * paused in step mode. */
#define S  LAB_CMD_SESSION
#define W  LAB_CMD_NEEDS_WORLD
#define P  LAB_CMD_WHILE_PAUSED
#define M  LAB_CMD_METHOD
#define MO LAB_CMD_METHOD_ONLY
    static const struct {
        const char *name;
        unsigned flags;
        lab_cmd_category_t cat;
        lab_cmd_id_t id;
    } want[] = {
        {"arange", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"zeros", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"ones", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"empty", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"full", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"zeros_like", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"ones_like", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"empty_like", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"rand_like", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"randn_like", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"full_like", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"rand", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"randn", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"randint", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"randperm", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"linspace", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"eye", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"manual_seed", 0, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"initial_seed", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"tensor", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"float", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"int", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"len", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"type", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"isinstance", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"str", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"repr", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"round", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sorted", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"reversed", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"any", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"all", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"dict", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"list", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"tuple", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"enumerate", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"zip", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"print", 0, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"tensors", 0, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sum", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"mean", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"max", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"min", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"argmax", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"argmin", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"prod", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"var", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"std", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"t", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"transpose", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"permute", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"append", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"extend", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"insert", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"pop", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"remove", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sort", LAB_CMD_FUNCTION | M | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"reverse", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"index", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"count", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"keys", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"items", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"get", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"update", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"setdefault", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR,
         LAB_CMD_ID_NONE},
        {"popitem", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"copy", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"format", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"join", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"strip", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"lstrip", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"rstrip", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"upper", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"lower", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"startswith", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR,
         LAB_CMD_ID_NONE},
        {"endswith", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR,
         LAB_CMD_ID_NONE},
        {"replace", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"find", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"values", LAB_CMD_FUNCTION | MO | LAB_CMD_ATTRIBUTE | LAB_CMD_OBJECT_METHOD,
         LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"indices", LAB_CMD_FUNCTION | MO | LAB_CMD_ATTRIBUTE | LAB_CMD_OBJECT_METHOD,
         LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sqrt", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"exp", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"abs", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"relu", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"log", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"log2", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"log10", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sin", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"cos", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"tanh", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sigmoid", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"rsqrt", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"reciprocal", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"floor", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"ceil", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"trunc", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sign", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"square", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"pow", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"add", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sub", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"subtract", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"mul", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"multiply", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"div", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"divide", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"true_divide", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"floor_divide", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"remainder", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"neg", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"negative", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"eq", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"ne", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"gt", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"ge", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"lt", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"le", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"maximum", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"minimum", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"where", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"allclose", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"isclose", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"equal", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"clamp", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"clip", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"matmul", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"dot", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"mm", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"norm", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"argsort", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"topk", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"cumsum", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"cumprod", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"softmax", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"log_softmax", LAB_CMD_FUNCTION | M | LAB_CMD_FREE_NAME, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"T", LAB_CMD_FUNCTION | M | MO | LAB_CMD_ATTRIBUTE, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"data", LAB_CMD_FUNCTION | M | MO | LAB_CMD_ATTRIBUTE, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"shape", LAB_CMD_FUNCTION | M | MO | LAB_CMD_ATTRIBUTE, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"size", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"reshape", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"view", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"flatten", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"squeeze", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"unsqueeze", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"clone", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"detach", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"contiguous", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"item", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"tolist", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"dtype", LAB_CMD_FUNCTION | M | MO | LAB_CMD_ATTRIBUTE, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"device", LAB_CMD_FUNCTION | M | MO | LAB_CMD_ATTRIBUTE, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"is_cuda", LAB_CMD_FUNCTION | M | MO | LAB_CMD_ATTRIBUTE, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"ndim", LAB_CMD_FUNCTION | M | MO | LAB_CMD_ATTRIBUTE, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"dim", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"numel", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"to", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"cuda", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"cpu", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"double", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"half", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"bfloat16", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"long", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"bool", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"add_", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"sub_", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"mul_", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"div_", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"zero_", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"fill_", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"copy_", LAB_CMD_FUNCTION | M | MO, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"cat", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"stack", LAB_CMD_FUNCTION, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"chunk", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"split", LAB_CMD_FUNCTION | M, LAB_CAT_TENSOR, LAB_CMD_ID_NONE},
        {"send", 0, LAB_CAT_P2P, LAB_CMD_ID_NONE},
        {"recv", 0, LAB_CAT_P2P, LAB_CMD_ID_NONE},
        {"isend", 0, LAB_CAT_P2P, LAB_CMD_ID_NONE},
        {"irecv", 0, LAB_CAT_P2P, LAB_CMD_ID_NONE},
        {"wait", LAB_CMD_OBJECT_METHOD, LAB_CAT_P2P, LAB_CMD_ID_NONE},
        {"is_completed", LAB_CMD_FUNCTION | MO | LAB_CMD_OBJECT_METHOD, LAB_CAT_P2P,
         LAB_CMD_ID_NONE},
        {"broadcast", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"scatter", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"gather", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"reduce", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"all_gather", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"all_reduce", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"reduce_scatter", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"all_to_all", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"all_gather_into_tensor", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"reduce_scatter_tensor", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"all_to_all_single", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"P2POp", LAB_CMD_FUNCTION, LAB_CAT_P2P, LAB_CMD_ID_NONE},
        {"batch_isend_irecv", 0, LAB_CAT_P2P, LAB_CMD_ID_NONE},
        {"all_gather_object", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"gather_object", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"broadcast_object_list", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"scatter_object_list", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"barrier", 0, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"new_group", LAB_CMD_FUNCTION, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"get_rank", LAB_CMD_FUNCTION, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"get_world_size", LAB_CMD_FUNCTION, LAB_CAT_COLLECTIVE, LAB_CMD_ID_NONE},
        {"ranks", LAB_CMD_RAW_WORDS | S | W | P, LAB_CAT_SESSION, LAB_CMD_ID_RANKS},
        {"kill", LAB_CMD_RAW_WORDS | S | W | P, LAB_CAT_SESSION, LAB_CMD_ID_KILL},
        {"respawn", LAB_CMD_RAW_WORDS | S, LAB_CAT_SESSION, LAB_CMD_ID_RESPAWN},
        {"spawn", LAB_CMD_RAW_WORDS | S, LAB_CAT_SESSION, LAB_CMD_ID_SPAWN},
        {"set", LAB_CMD_RAW_WORDS | S | W, LAB_CAT_SESSION, LAB_CMD_ID_SET},
        {"explain", LAB_CMD_RAW_WORDS | S | W | P, LAB_CAT_SESSION, LAB_CMD_ID_EXPLAIN},
        {"trace", LAB_CMD_RAW_WORDS | S | W, LAB_CAT_SESSION, LAB_CMD_ID_TRACE},
        {"history", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_SESSION, LAB_CMD_ID_HISTORY},
        {"source", LAB_CMD_RAW_WORDS | S, LAB_CAT_SESSION, LAB_CMD_ID_SOURCE},
        {"help", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_SESSION, LAB_CMD_ID_HELP},
        {"tui", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_SESSION, LAB_CMD_ID_TUI},
        {"clear", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_SESSION, LAB_CMD_ID_CLEAR},
        {"quit", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_SESSION, LAB_CMD_ID_QUIT},
        {"exit", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_SESSION, LAB_CMD_ID_EXIT},
        {"step", LAB_CMD_RAW_WORDS | S | W | P, LAB_CAT_STEP, LAB_CMD_ID_STEP},
        {"next", LAB_CMD_RAW_WORDS | S | W | P, LAB_CAT_STEP, LAB_CMD_ID_NEXT},
        {"continue", LAB_CMD_RAW_WORDS | S | W | P, LAB_CAT_STEP, LAB_CMD_ID_CONTINUE},
        {"back", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_STEP, LAB_CMD_ID_BACK},
        {"forward", LAB_CMD_RAW_WORDS | S | P, LAB_CAT_STEP, LAB_CMD_ID_FORWARD},
    };
    assert_int_equal(N_OF(want), n);
    for (size_t i = 0; i < N_OF(want); i++) {
        const lab_cmd_t *c = lab_cmd_find(want[i].name);
        if (c == NULL)
            fail_msg("%s is missing from the table", want[i].name);
        assert_int_equal(c->flags, want[i].flags);
        assert_int_equal(c->category, want[i].cat);
        assert_int_equal(c->id, want[i].id);
    }
#undef S
#undef W
#undef P
#undef M
#undef MO
    /* A row is a session command exactly when it has an id, ids are used
     * once, and only session commands carry the flags that say when they
     * run. */
    bool id_used[LAB_CMD_ID__COUNT] = {false};
    for (size_t i = 0; i < n; i++) {
        const lab_cmd_t *c = &all[i];
        bool session = (c->flags & LAB_CMD_SESSION) != 0;
        if (session != (c->id != LAB_CMD_ID_NONE))
            fail_msg("%s: LAB_CMD_SESSION and its id disagree", c->name);
        assert_true((unsigned)c->id < LAB_CMD_ID__COUNT);
        if (c->id != LAB_CMD_ID_NONE) {
            if (id_used[c->id])
                fail_msg("%s: its id is another row's too", c->name);
            id_used[c->id] = true;
        }
        if (!session)
            assert_int_equal(c->flags & (LAB_CMD_NEEDS_WORLD | LAB_CMD_WHILE_PAUSED), 0);
        assert_int_equal(lab_lang_is_session(c->name), session);
    }
    for (int id = LAB_CMD_ID_NONE + 1; id < LAB_CMD_ID__COUNT; id++)
        if (!id_used[id])
            fail_msg("session command id %d has no row", id);
    const lab_cmd_t *ar = lab_cmd_find("all_reduce");
    assert_string_equal(ar->usage, "all_reduce TENSOR [op=sum] [group=G] [async_op=false]");
    assert_string_equal(ar->torch, "torch.distributed.all_reduce(tensor, op=ReduceOp.SUM, "
                                   "group=None, async_op=False)");
    assert_null(lab_cmd_find("nope"));
    assert_null(lab_cmd_find(NULL));
    assert_null(lab_cmd_find("all_reduce "));
    assert_string_equal(lab_cmd_category_name(LAB_CAT_P2P), "point-to-point");
    assert_string_equal(lab_cmd_category_name(LAB_CAT_STEP), "step");
    assert_string_equal(lab_cmd_category_name(LAB_CAT__COUNT), "unknown");
    assert_false(lab_cmd_has_keyword(NULL, "op"));
}

/* The session command of a statement, and the names a statement defines,
 * come from the AST the shell runs. */
static void test_statement_helpers(void **state)
{
    (void)state;
    json_t *stmts = parse_ok("set algo all_reduce ring; on 1: step on; all_reduce t; t = ones(2); "
                             "h = isend t dst=1; print t");
    const lab_cmd_t *c = lab_stmt_session_cmd(json_array_get(stmts, 0));
    assert_non_null(c);
    assert_int_equal(c->id, LAB_CMD_ID_SET);
    assert_true(c->flags & LAB_CMD_NEEDS_WORLD);
    assert_false(c->flags & LAB_CMD_WHILE_PAUSED);
    c = lab_stmt_session_cmd(json_array_get(stmts, 1));
    assert_non_null(c);
    assert_int_equal(c->id, LAB_CMD_ID_STEP);
    for (size_t i = 2; i < json_array_size(stmts); i++)
        assert_null(lab_stmt_session_cmd(json_array_get(stmts, i)));
    assert_null(lab_stmt_session_cmd(NULL));
    json_decref(stmts);

    static const struct {
        const char *line;
        const char *names; /* space separated, as defined */
    } cases[] = {
        {"t = ones(2)", "t"},
        {"on 0: h = isend t dst=1", "h"},
        {"gather t dst=0 gather_list=out", "out"},
        {"h = gather t dst=0 gather_list=out async_op=true", "h out"},
        {"all_gather out t", "out"},
        {"all_gather(parts, t)", "parts"},
        {"h = all_gather out t async_op=true", "h out"},
        {"gather t dst=0 gather_list=[a, b]", ""},
        {"all_reduce t", ""},
        {"a, (b, c), d = l", "a b c"},
        {"print t", ""},
        {"respawn", ""},
        {"set algo all_reduce ring", ""},
    };
    for (size_t i = 0; i < N_OF(cases); i++) {
        stmts = parse_ok(cases[i].line);
        const char *names[LAB_STMT_MAX_DEFINED];
        size_t n = lab_stmt_defined_names(json_array_get(stmts, 0), names);
        char got[256] = "";
        for (size_t k = 0; k < n; k++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "", names[k]);
        if (strcmp(got, cases[i].names) != 0)
            fail_msg("%s: defines '%s', want '%s'", cases[i].line, got, cases[i].names);
        json_decref(stmts);
    }
}

static void test_help(void **state)
{
    (void)state;
    assert_true(lab_lang_is_session("quit"));
    assert_true(lab_lang_is_session("set"));
    assert_true(lab_lang_is_session("next"));
    assert_false(lab_lang_is_session("all_reduce"));
    assert_false(lab_lang_is_session("print"));
    assert_false(lab_lang_is_session("arange"));
    assert_false(lab_lang_is_session("nope"));
    assert_false(lab_lang_is_session(NULL));

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(lab_lang_print_help(out, "all_reduce"), DL_OK);
    fflush(out);
    assert_string_equal(text,
                        "all_reduce TENSOR [op=sum] [group=G] [async_op=false]\n"
                        "  combine every rank's TENSOR with op and leave the result on every rank\n"
                        "  torch:   torch.distributed.all_reduce(tensor, op=ReduceOp.SUM, "
                        "group=None, async_op=False)\n"
                        "  example: all_reduce t op=max\n");
    rewind(out);
    assert_int_equal(lab_lang_print_help(out, "nope"), DL_ERR_NOT_FOUND);
    assert_int_equal(lab_lang_print_help(out, NULL), DL_OK);
    fflush(out);
    /* Every entry is listed once, under its category. */
    assert_non_null(strstr(text, "tensor:\n  arange "));
    assert_non_null(strstr(text, "\npoint-to-point:\n  send "));
    assert_non_null(strstr(text, "\nstep:\n  step "));
    size_t n;
    const lab_cmd_t *all = lab_cmd_all(&n);
    for (size_t i = 0; i < n; i++) {
        char row[64];
        snprintf(row, sizeof(row), "\n  %-15s %s", all[i].name, all[i].summary);
        assert_non_null(strstr(text, row));
    }
    fclose(out);
    free(text);
    assert_int_equal(lab_lang_print_help(NULL, NULL), DL_ERR_INVALID);
}

/* ======================================================================
 * Completion
 * ====================================================================== */

static const char *const tensor_names[] = {"t", "out", "in", "g", "h", "grad"};

/* Completes at the end of line (or at cursor when >= 0) and checks the
 * matches, given as one space-separated string, and the word's start. */
static void check_complete_at(const char *line, int cursor, const char *want, int want_start)
{
    char **m = NULL;
    size_t n = 99;
    int start = -1;
    if (cursor < 0)
        cursor = (int)strlen(line);
    assert_int_equal(lab_complete(line, cursor, tensor_names, N_OF(tensor_names), &m, &n, &start),
                     DL_OK);
    char got[2048] = "";
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%s", i > 0 ? " " : "", m[i]);
    if (strcmp(got, want) != 0 || (want_start >= 0 && start != want_start)) {
        print_error("line: '%s' cursor %d\nexpected: [%s] at %d\ngot:      [%s] at %d\n", line,
                    cursor, want, want_start, got, start);
        fail();
    }
    if (n == 0)
        assert_null(m);
    lab_complete_free(m, n);
}

static void check_complete(const char *line, const char *want)
{
    check_complete_at(line, -1, want, -1);
}

static void test_complete_commands(void **state)
{
    (void)state;
    /* At the start of a statement: every command, no function. */
    char **m = NULL;
    size_t n = 0, commands = 0, total;
    const lab_cmd_t *all = lab_cmd_all(&total);
    for (size_t i = 0; i < total; i++)
        commands += !(all[i].flags & LAB_CMD_FUNCTION);
    assert_int_equal(lab_complete("", 0, NULL, 0, &m, &n, NULL), DL_OK);
    assert_int_equal(n, commands);
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(m[i - 1], m[i]) < 0); /* sorted, no duplicates */
    lab_complete_free(m, n);

    check_complete_at("all_r", -1, "all_reduce", 0);
    check_complete("a", "all_gather all_gather_into_tensor all_gather_object all_reduce all_to_all "
                        "all_to_all_single");
    check_complete("re", "recv reduce reduce_scatter reduce_scatter_tensor respawn");
    check_complete("on 0-2: all_", "all_gather all_gather_into_tensor all_gather_object all_reduce "
                                   "all_to_all all_to_all_single");
    check_complete_at("on 0-2:all_r", -1, "all_reduce", 7);
    check_complete_at("send t dst=1; rec", -1, "recv", 14);
    check_complete("x = 1;b", "back barrier batch_isend_irecv broadcast broadcast_object_list");
    /* In the middle of a word, the part before the cursor counts. */
    check_complete_at("all_reduce t", 5, "all_reduce", 0);
    check_complete_at("all_reduce t", 999,
                      "t tanh tensor topk transpose true_divide trunc tuple type", 11);
    /* After 'NAME =': value-returning commands, functions and names. */
    check_complete("h = is", "isclose isend isinstance");
    check_complete("x = ra", "rand rand_like randint randn randn_like randperm rank");
    check_complete("x = all_r", "all_reduce");
    check_complete("g = new", "new_group");
    check_complete("x = arange(3) + w", "where world_size");
    check_complete("x = g", "g gather gather_object ge get_rank get_world_size grad gt");
    /* Nothing in a rank list, a comment or a number. */
    check_complete("on 0-", "");
    check_complete("on 1", "");
    check_complete("print t # all_r", "");
    check_complete("# a", "");
    check_complete("x = 12", "");
    check_complete("x = 1e", "");
    check_complete("t + ", "");
    check_complete("foo ", "");
}

static void test_complete_arguments(void **state)
{
    (void)state;
    check_complete("all_reduce t o", "ones ones_like op= out");
    check_complete("all_reduce t op=max o", "ones ones_like out");
    check_complete(
        "all_reduce t ",
        "P2POp abs add all allclose any arange argmax argmin argsort async_op= bool cat ceil chunk "
        "clamp clip clone cos cumprod cumsum dict div divide dot empty empty_like enumerate eq "
        "equal exp eye flatten float floor floor_divide full full_like g ge get_rank "
        "get_world_size grad group= gt h in initial_seed int isclose isinstance le len linspace "
        "list log "
        "log10 log2 log_softmax lt matmul max maximum mean min minimum mm mul multiply ne neg "
        "negative new_group norm ones ones_like op= out permute pow prod rand rand_like randint "
        "randn randn_like randperm rank reciprocal relu remainder repr reshape reversed round "
        "rsqrt "
        "sigmoid sign sin softmax sort sorted split sqrt square squeeze stack std str sub "
        "subtract sum t tanh tensor topk transpose true_divide trunc tuple type unsqueeze var "
        "where "
        "world_size zeros zeros_like zip");
    check_complete("all_reduce t op=", "avg band bor bxor max min prod sum");
    check_complete("all_reduce t op=m", "max min");
    check_complete("all_reduce t async_op=", "false true");
    check_complete("all_reduce t group=g", "g ge get_rank get_world_size grad gt");
    check_complete("w = all_reduce t a",
                   "abs add all allclose any arange argmax argmin argsort async_op=");
    check_complete("send t d", "dict div divide dot dst=");
    check_complete(
        "send t dst=1 ",
        "P2POp abs add all allclose any arange argmax argmin argsort bool cat ceil chunk clamp "
        "clip "
        "clone cos cumprod cumsum dict div divide dot empty empty_like enumerate eq equal exp "
        "eye flatten float floor floor_divide full full_like g ge get_rank get_world_size grad "
        "group= gt h in initial_seed int isclose isinstance le len linspace list log log10 log2 "
        "log_softmax lt matmul max maximum mean min minimum mm mul multiply ne neg negative "
        "new_group norm ones ones_like out permute pow prod rand rand_like randint randn "
        "randn_like randperm rank reciprocal relu remainder repr reshape reversed round rsqrt "
        "sigmoid sign sin softmax sort sorted split sqrt square squeeze stack std str sub "
        "subtract sum t tag= tanh tensor topk transpose true_divide trunc tuple type unsqueeze var "
        "where world_size zeros zeros_like zip");
    check_complete("barrier g", "g ge get_rank get_world_size grad group= gt");
    check_complete("print t[0] + g", "g ge get_rank get_world_size grad gt");
    check_complete(
        "print ",
        "P2POp abs add all allclose any arange argmax argmin argsort bool cat ceil chunk clamp "
        "clip "
        "clone cos cumprod cumsum dict div divide dot empty empty_like end= enumerate eq equal "
        "exp eye flatten float floor floor_divide flush= full full_like g ge get_rank "
        "get_world_size grad gt h in initial_seed int isclose isinstance le len linspace list log "
        "log10 "
        "log2 log_softmax lt matmul max maximum mean min minimum mm mul multiply ne neg "
        "negative new_group norm ones ones_like out permute pow prod rand rand_like randint "
        "randn randn_like randperm rank reciprocal relu remainder repr reshape reversed round "
        "rsqrt "
        "sep= sigmoid sign sin softmax sort sorted split sqrt square squeeze stack std str sub "
        "subtract sum t tanh tensor topk transpose true_divide trunc tuple type unsqueeze var "
        "where "
        "world_size zeros zeros_like zip");
    check_complete("scatter t src=0 scatter_list=[g", "g ge get_rank get_world_size grad gt");
    check_complete("scatter t src=0 scatter_list=[a, b] sr", "");
    check_complete("scatter t scatter_list=[a, b] sr", "src=");
    /* Calls: the function's keywords at the start of an argument. */
    check_complete("t = ones(3, d", "device= dict div divide dot dtype=");
    check_complete("t = ones(3, dtype=float32, d", "device= dict div divide dot");
    check_complete("t = ones(3, dtype=f", "float16 float32 float64");
    check_complete("t = ones(3, dtype=b", "bfloat16 bool");
    check_complete("t = ones(3, device=", "cpu cuda");
    check_complete("t = rand(5, s",
                   "seed= sigmoid sign sin size= softmax sort sorted split sqrt square "
                   "squeeze stack std str sub subtract sum");
    check_complete(
        "t = randint(0, 10, (3,), s",
        "seed= sigmoid sign sin size= softmax sort sorted split sqrt square squeeze stack "
        "std str sub subtract sum");
    check_complete("t = randint(h", "h high=");
    check_complete("man", "manual_seed");
    check_complete("manual_seed(s",
                   "seed= sigmoid sign sin softmax sort sorted split sqrt square squeeze "
                   "stack std str sub subtract sum");
    check_complete("t = ones(3 + g", "g ge get_rank get_world_size grad gt");
    check_complete("t = f(3, g", "g ge get_rank get_world_size grad gt");
    check_complete("g = new_group(r",
                   "rand rand_like randint randn randn_like randperm rank ranks= reciprocal relu "
                   "remainder repr reshape reversed round rsqrt");
    /* Torch-style commands complete like calls. */
    check_complete("all_reduce(t, o", "ones ones_like op= out");
    check_complete("all_reduce(t, op=", "avg band bor bxor max min prod sum");
}

static void test_complete_words(void **state)
{
    (void)state;
    check_complete("help all_r", "all_reduce");
    check_complete("help ar", "arange argmax argmin argsort");
    check_complete(
        "help s",
        "scatter scatter_object_list send set sigmoid sign sin softmax sort sorted source spawn "
        "split sqrt "
        "square squeeze stack std step str sub subtract sum");
    check_complete("help all_reduce ", "");
    check_complete("explain a", "all_gather all_reduce all_to_all");
    check_complete("explain ", "all_gather all_reduce all_to_all barrier broadcast gather reduce "
                               "reduce_scatter scatter");
    check_complete("explain all_reduce ", "direct linear rd rhd ring share");
    check_complete("explain all_reduce ring ", "");
    check_complete("set ", "algo check echo timeout");
    check_complete("set a", "algo");
    check_complete("set algo r", "reduce reduce_scatter");
    check_complete("set algo all_reduce ", "direct linear rd rhd ring share");
    check_complete("set algo all_reduce r", "rd rhd ring");
    check_complete("set algo all-reduce r", "rd rhd ring");
    check_complete("set algo nope ", "");
    check_complete("set check ", "off on");
    check_complete("set timeout ", "");
    check_complete("step o", "off on");
    check_complete("on 0: step ", "off on");
    check_complete("kill ", "");
    check_complete("source ~/fo", "");
    check_complete("source \"a b", "");
    check_complete("help x; help all_r", "all_reduce");
}

static void test_complete_errors(void **state)
{
    (void)state;
    char **m = (char **)0x1;
    size_t n = 7;
    assert_int_equal(lab_complete("x", -1, NULL, 0, &m, &n, NULL), DL_ERR_INVALID);
    assert_int_equal(lab_complete(NULL, 0, NULL, 0, &m, &n, NULL), DL_ERR_INVALID);
    assert_int_equal(lab_complete("x", 0, NULL, 3, &m, &n, NULL), DL_ERR_INVALID);
    assert_ptr_equal(m, (char **)0x1);
    char *line = make_line("", "x", LAB_LANG_MAX_LINE + 1, "");
    assert_int_equal(lab_complete(line, 3, NULL, 0, &m, &n, NULL), DL_ERR_TOO_BIG);
    free(line);
    lab_complete_free(NULL, 0);
    /* A long line costs linear time: a rank list that never closes, and a
     * long raw-word command. */
    line = make_line("on", " 0", LAB_LANG_MAX_LINE / 2 - 1, "");
    assert_int_equal(lab_complete(line, LAB_LANG_MAX_LINE, NULL, 0, &m, &n, NULL), DL_OK);
    assert_int_equal(n, 0);
    free(line);
    line = make_line("help", " x", LAB_LANG_MAX_LINE / 2 - 6, "; set ");
    assert_int_equal(lab_complete(line, LAB_LANG_MAX_LINE, NULL, 0, &m, &n, NULL), DL_OK);
    assert_int_equal(n, 4); /* algo check echo timeout */
    lab_complete_free(m, n);
    free(line);
    /* A NULL entry in the caller's names is skipped. */
    const char *names[] = {"tx", NULL};
    assert_int_equal(lab_complete("print t", 7, names, 2, &m, &n, NULL), DL_OK);
    assert_int_equal(n, 9);
    assert_string_equal(m[0], "tanh");
    assert_string_equal(m[1], "tensor");
    assert_string_equal(m[2], "topk");
    assert_string_equal(m[3], "transpose");
    assert_string_equal(m[4], "true_divide");
    assert_string_equal(m[5], "trunc");
    assert_string_equal(m[6], "tuple");
    assert_string_equal(m[7], "tx");
    assert_string_equal(m[8], "type");
    lab_complete_free(m, n);
}

/* ======================================================================
 * Out of memory: every allocation jansson makes fails in turn
 * ====================================================================== */

static long alloc_count, alloc_fail_at, alloc_live;

static void *counting_malloc(size_t size)
{
    if (alloc_count++ == alloc_fail_at)
        return NULL;
    void *p = malloc(size);
    if (p != NULL)
        alloc_live++;
    return p;
}

static void counting_free(void *p)
{
    if (p != NULL)
        alloc_live--;
    free(p);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "on 0-2,5: h = isend t[0] dst=1; all_reduce t op=max group=g async_op=true",
        "x = -arange(2, dtype=int32)[1] + [[1, 2.5], [true, c]] * (3 - t) / 2",
        "set algo all_reduce ring; help; all_reduce(t, op=sum)",
        "x = [1, 2, 3",
    };
    json_set_alloc_funcs(counting_malloc, counting_free);
    for (size_t l = 0; l < N_OF(lines); l++) {
        for (alloc_fail_at = 0;; alloc_fail_at++) {
            alloc_count = 0;
            alloc_live = 0;
            json_t *stmts = NULL;
            lab_parse_error_t err;
            dl_status_t st = lab_parse_line(lines[l], &stmts, &err);
            json_decref(stmts);
            if (alloc_live != 0)
                fail_msg("'%s' leaks %ld blocks when allocation %ld fails", lines[l], alloc_live,
                         alloc_fail_at);
            if (alloc_count <= alloc_fail_at) {
                /* Every allocation succeeded: the plain result. */
                assert_true(st == DL_OK || st == DL_ERR_INVALID);
                break;
            }
            /* Every failed allocation is reported, never swallowed. */
            assert_int_equal(st, DL_ERR_NOMEM);
            assert_int_equal(err.col, 0);
            assert_string_equal(err.msg, "out of memory");
        }
    }
    json_set_alloc_funcs(malloc, free);
}

/* ======================================================================
 * Blocks: on RANKS:, if/elif/else, for, over one line or several
 * ====================================================================== */

static void test_blocks(void **state)
{
    (void)state;
    /* 'on' covers the rest of the line, up to the next 'on'. */
    check_ast("on 0: a = 1; b = 2; on 1: c = 3",
              "[{'col': 7, 'kind': 'assign', 'targets': [0], 'targets_col': 1, 'name': 'a', "
              "'value': {'col': 11, 'num': 1}}, {'col': 14, 'kind': 'assign', 'targets': [0], "
              "'targets_col': 1, 'name': 'b', 'value': {'col': 18, 'num': 2}}, {'col': 27, 'kind': "
              "'assign', 'targets': [1], 'targets_col': 21, 'name': 'c', 'value': {'col': 31, "
              "'num': 3}}]");
    /* An 'on' block over the lines below it; nested, the inner ranks. */
    check_ast("on 0,1:\n    on 1: x = 1\n    y = 2",
              "[{'col': 11, 'line': 2, 'kind': 'assign', 'targets': [1], 'targets_col': 5, "
              "'name': 'x', 'value': {'col': 15, 'line': 2, 'num': 1}}, {'col': 5, 'line': 3, "
              "'kind': 'assign', 'targets': [0, 1], 'targets_col': 1, 'name': 'y', 'value': "
              "{'col': 9, 'line': 3, 'num': 2}}]");
    check_ast("if rank == 0:\n    print t\nelif rank < 2: print t\nelse:\n    x = 1",
              "[{'col': 1, 'kind': 'if', 'targets': null, 'branches': [{'col': 1, 'cond': "
              "{'col': 9, 'chain': [{'col': 4, 'name': 'rank'}, {'col': 12, 'num': 0}], 'ops': "
              "[{'col': 9, 'op': '=='}]}, 'body': [{'col': 5, 'line': 2, 'kind': 'command', "
              "'targets': null, 'command': {'col': 5, 'line': 2, 'cmd': 'print', 'args': "
              "[{'col': 11, 'line': 2, 'name': 't'}], 'kwargs': {}}}]}, {'col': 1, 'line': 3, "
              "'cond': {'col': 11, 'line': 3, 'chain': [{'col': 6, 'line': 3, 'name': 'rank'}, "
              "{'col': 13, 'line': 3, 'num': 2}], 'ops': [{'col': 11, 'line': 3, 'op': '<'}]}, "
              "'body': [{'col': 16, 'line': 3, 'kind': 'command', 'targets': null, 'command': "
              "{'col': 16, 'line': 3, 'cmd': 'print', 'args': [{'col': 22, 'line': 3, 'name': "
              "'t'}], 'kwargs': {}}}]}], 'else': [{'col': 5, 'line': 5, 'kind': 'assign', "
              "'targets': null, 'name': 'x', 'value': {'col': 9, 'line': 5, 'num': 1}}]}]");
    /* An 'on' inside a loop's body picks ranks on the rank. */
    check_ast("for i in range(3): on 0: send t dst=1",
              "[{'col': 1, 'kind': 'for', 'targets': null, 'var': 'i', 'iter': {'col': 10, "
              "'call': 'range', 'args': [{'col': 16, 'num': 3}], 'kwargs': {}}, 'body': "
              "[{'col': 26, 'kind': 'command', 'targets': [0], 'targets_col': 20, 'command': "
              "{'col': 26, 'cmd': 'send', 'args': [{'col': 31, 'name': 't'}], 'kwargs': {'dst': "
              "{'col': 37, 'num': 1}}}}]}]");
    check_ast("on 2: for i in range(2):\n    all_reduce t\n\n  # a comment\nb = 1",
              "[{'col': 7, 'kind': 'for', 'targets': [2], 'targets_col': 1, 'var': 'i', 'iter': "
              "{'col': 16, 'call': 'range', 'args': [{'col': 22, 'num': 2}], 'kwargs': {}}, "
              "'body': [{'col': 5, 'line': 2, 'kind': 'command', 'targets': null, 'command': "
              "{'col': 5, 'line': 2, 'cmd': 'all_reduce', 'args': [{'col': 16, 'line': 2, "
              "'name': 't'}], 'kwargs': {}}}]}, {'col': 1, 'line': 5, 'kind': 'assign', "
              "'targets': null, 'name': 'b', 'value': {'col': 5, 'line': 5, 'num': 1}}]");

    static const struct {
        const char *line;
        int line_no, col;
        const char *msg;
    } errors[] = {
        {"if rank == 0:", 1, 14, "expected an indented block after ':'"},
        {"if rank == 0:\nprint t", 1, 14, "expected an indented block after ':'"},
        {"if rank == 0: ;", 1, 15, "expected an indented block after ':'"},
        {"for i in range(2):\n    x = 1\n  y = 2", 3, 1,
         "unindent does not match any outer indentation level"},
        {"x = 1\n    y = 2", 2, 1, "unexpected indent"},
        {"else: x = 1", 1, 1, "'else' without an 'if' before it"},
        {"x = 1\nelif x: y = 1", 2, 1, "'elif' without an 'if' before it"},
        {"if x print t", 1, 6, "expected ':', found 'print'"},
        {"if: x = 1", 1, 3, "expected a value after 'if'"},
        {"for i in: x = 1", 1, 9, "expected a value after 'in'"},
        {"for 1 in x: y = 1", 1, 5, "expected a name after 'for', found '1'"},
        {"for i of x: y = 1", 1, 7, "expected 'in', found 'of'"},
        {"for rank in x: y = 1", 1, 5,
         "cannot assign to 'rank': it is read-only, set by the launcher"},
        {"if x:\n    kill 1", 2, 5,
         "'kill' is a command of the shell, not of the ranks: it cannot be in an if, a for or a "
         "def"},
        {"on 0:\n    on 1:\n        x = 1", 2, 5,
         "rank 1 is not one of the ranks of the 'on' around it"},
        {"x = 1 < 2 not 3", 1, 11, "unexpected 'not'"},
        {"in = 1", 1, 1, "cannot assign to 'in'"},
        /* lines joined inside a bracket: the error on its own line */
        {"z = [1,\n     2 +]", 2, 9, "expected a value after '+'"},
        {"f(1,  # one\n  2,\n  3 3)", 3, 5, "expected ',' or ')', found '3'"},
        {"x = (1 +\n     2)\n  y = 1", 3, 1, "unexpected indent"},
    };
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        json_t *stmts = NULL;
        lab_parse_error_t err;
        dl_status_t st = lab_parse_line(errors[i].line, &stmts, &err);
        int line_no = err.line == 0 ? 1 : err.line;
        if (st != DL_ERR_INVALID || line_no != errors[i].line_no || err.col != errors[i].col ||
            strcmp(err.msg, errors[i].msg) != 0) {
            print_error("text:     %s\nexpected: line %d col %d '%s'\ngot:      %d line %d col "
                        "%d '%s'\n",
                        errors[i].line, errors[i].line_no, errors[i].col, errors[i].msg, st,
                        line_no, err.col, err.msg);
            fail();
        }
    }
    /* The caret goes under the line the error is on. */
    lab_parse_error_t err;
    json_t *stmts = NULL;
    assert_int_equal(lab_parse_line("for i in range(2):\n    send t dst=", &stmts, &err),
                     DL_ERR_INVALID);
    char *text = NULL;
    assert_int_equal(lab_parse_error_show("for i in range(2):\n    send t dst=", &err, 0, &text),
                     DL_OK);
    assert_string_equal(text,
                        "      send t dst=\n                 ^ expected a value after 'dst='");
    free(text);
}

static void test_needs_more(void **state)
{
    (void)state;
    assert_true(lab_lang_needs_more("on 0:"));
    assert_true(lab_lang_needs_more("x = [1,"));
    assert_true(lab_lang_needs_more("x = f(1,\n\n"));
    assert_false(lab_lang_needs_more("x = f(1,\n  2)"));
    assert_false(lab_lang_needs_more("x = ')'  # ("));
    assert_true(lab_lang_open_brackets("t[0] = (1 +  # )"));
    assert_false(lab_lang_open_brackets("x = ']'"));
    lab_lang_gather_t g;
    lab_lang_gather_start(&g, "x = [1,");
    assert_true(lab_lang_gather_open(&g));
    assert_true(lab_lang_gather_takes(&g, "2,"));
    assert_true(lab_lang_gather_takes(&g, "3]"));
    assert_false(lab_lang_gather_takes(&g, "y = 1"));
    lab_lang_gather_start(&g, "x = [1]");
    assert_false(lab_lang_gather_open(&g));
    assert_false(lab_lang_gather_takes(&g, "    2"));
    lab_lang_gather_start(&g, "for i in x:");
    assert_true(lab_lang_gather_takes(&g, "    y = f(1,"));
    assert_true(lab_lang_gather_takes(&g, "2)"));
    assert_false(lab_lang_gather_takes(&g, "z = 1"));
    assert_true(lab_lang_needs_more("if rank == 0:  # the root"));
    assert_true(lab_lang_needs_more("for i in range(3):"));
    /* a try waits for its except or finally, even with its body on its line */
    assert_true(lab_lang_needs_more("try:"));
    assert_true(lab_lang_needs_more("try: x = 1 / 0"));
    assert_true(lab_lang_needs_more("try: x = 1 / 0\nexcept ZeroDivisionError:"));
    assert_false(lab_lang_needs_more("try: x = 1 / 0\nexcept ZeroDivisionError: pass\n\n"));
    assert_false(lab_lang_needs_more("try_count = 3"));
    assert_true(lab_lang_continues_block("except ValueError as e:"));
    assert_true(lab_lang_continues_block("finally:"));
    assert_true(lab_lang_starts_block("try:"));
    assert_true(lab_lang_needs_more("for i in range(3):\n    all_reduce t"));
    assert_true(lab_lang_needs_more("if x:\n    a = 1\nelse:"));
    assert_false(lab_lang_needs_more("for i in range(3):\n    all_reduce t\n"));
    assert_false(lab_lang_needs_more("for i in range(3):\n    all_reduce t\n   "));
    assert_false(lab_lang_needs_more("on 0: send t dst=1"));
    assert_false(lab_lang_needs_more("t = 1"));
    assert_false(lab_lang_needs_more("source ex:"));
    assert_false(lab_lang_needs_more(""));

    assert_true(lab_lang_starts_block("on 0: send t dst=1"));
    assert_true(lab_lang_starts_block("if x:"));
    assert_true(lab_lang_starts_block("for i in range(2):"));
    assert_false(lab_lang_starts_block("t = 1"));
    assert_false(lab_lang_starts_block("  # on"));

    assert_true(lab_lang_continues_block("    t = 1"));
    assert_true(lab_lang_continues_block("\tt = 1"));
    assert_true(lab_lang_continues_block(""));
    assert_true(lab_lang_continues_block("elif rank == 1:"));
    assert_true(lab_lang_continues_block("else:"));
    assert_false(lab_lang_continues_block("t = 1"));
    assert_false(lab_lang_continues_block("for i in range(2):"));
}

/* ======================================================================
 * Operators, in-place assignment and slices
 * ====================================================================== */

/* Methods, @, and torch's spellings: torch. and dist. prefixes, ReduceOp,
 * and torch.distributed's parameters bound by position or by name. */
static void test_maths_and_torch_spellings(void **state)
{
    (void)state;
    static const ast_case_t cases[] = {
        {"x = t.sum()",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':7,'call':'sum','s"
         "elf':{'col':5,'name':'t'},'args':[],'kwargs':{}}}]"},
        {"x = t.sum(dim=0, keepdim=True)",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':7,'call':'sum','s"
         "elf':{'col':5,'name':'t'},'args':[],'kwargs':{'dim':{'col':15,'num':0},'keepdim':{'c"
         "ol':26,'bool':true}}}}]"},
        {"x = m @ v * 2",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':7,'chain':[{'col'"
         ":5,'name':'m'},{'col':9,'name':'v'},{'col':13,'num':2}],'ops':[{'col':7,'op':'@'},{'"
         "col':11,'op':'*'}]}}]"},
        {"x = m.T",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':7,'call':'T','sel"
         "f':{'col':5,'name':'m'},'args':[],'kwargs':{},'attr':true}}]"},
        {"x = t[0].item()",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':10,'call':'item',"
         "'self':{'col':6,'index':{'col':5,'name':'t'},'at':{'col':7,'num':0}},'args':[],'kwar"
         "gs':{}}}]"},
        {"x = (a + b).reshape(2, 3).T",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':27,'call':'T','se"
         "lf':{'col':13,'call':'reshape','self':{'col':8,'chain':[{'col':6,'name':'a'},{'col':"
         "10,'name':'b'}],'ops':[{'col':8,'op':'+'}]},'args':[{'col':21,'num':2},{'col':24,'nu"
         "m':3}],'kwargs':{}},'args':[],'kwargs':{},'attr':true}}]"},
        {"x = torch.arange(4)",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':11,'call':'arange"
         "','args':[{'col':18,'num':4}],'kwargs':{}}}]"},
        {"x = torch.zeros(2, dtype=torch.int64)",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':11,'call':'zeros'"
         ",'args':[{'col':17,'num':2}],'kwargs':{'dtype':{'col':26,'name':'torch.int64'}}}}]"},
        {"x = dist.get_rank()",
         "[{'col':1,'kind':'assign','targets':null,'name':'x','value':{'col':10,'call':'get_ra"
         "nk','args':[],'kwargs':{}}}]"},
        {"dist.all_reduce(t, op=dist.ReduceOp.SUM)",
         "[{'col':1,'kind':'command','targets':null,'command':{'col':6,'cmd':'all_reduce','arg"
         "s':[{'col':17,'name':'t'}],'kwargs':{'op':{'col':28,'name':'ReduceOp.SUM'}}}}]"},
        {"all_reduce t op=ReduceOp.MAX",
         "[{'col':1,'kind':'command','targets':null,'command':{'col':1,'cmd':'all_reduce','arg"
         "s':[{'col':12,'name':'t'}],'kwargs':{'op':{'col':17,'name':'ReduceOp.MAX'}}}}]"},
        {"torch.distributed.broadcast(t, 0)",
         "[{'col':1,'kind':'command','targets':null,'command':{'col':19,'cmd':'broadcast','arg"
         "s':[{'col':29,'name':'t'}],'kwargs':{'src':{'col':32,'num':0}}}}]"},
        {"dist.send(tensor=t, dst=1)",
         "[{'col':1,'kind':'command','targets':null,'command':{'col':6,'cmd':'send','args':[{'"
         "col':18,'name':'t'}],'kwargs':{'dst':{'col':25,'num':1}}}}]"},
        {"h = dist.isend(t, 1)",
         "[{'col':1,'kind':'assign','targets':null,'name':'h','command':{'col':10,'cmd':'isend"
         "','args':[{'col':16,'name':'t'}],'kwargs':{'dst':{'col':19,'num':1}}}}]"},
        {"dist.all_gather(tensor_list=out, tensor=t)",
         "[{'col':1,'kind':'command','targets':null,'command':{'col':6,'cmd':'all_gather','arg"
         "s':[{'col':29,'name':'out'},{'col':41,'name':'t'}],'kwargs':{}}}]"},
        {"torch.manual_seed(42)",
         "[{'col':1,'kind':'command','targets':null,'command':{'col':7,'cmd':'manual_seed','ar"
         "gs':[{'col':19,'num':42}],'kwargs':{}}}]"},
    };
    check_ast_cases(cases, N_OF(cases));
    check_error("x = t.foo()", DL_ERR_INVALID, 7,
                "a tensor has no method 'foo' here (`help` lists its 109 methods and attributes)");
    check_error("x = t.sum", DL_ERR_INVALID, 7, "'sum' is a method: call it, x.sum()");
    check_error("x = random.seed", DL_ERR_INVALID, 12,
                "random.seed is not supported here: call one of random's functions, as "
                "random.random()");
    check_error("x = t.T()", DL_ERR_INVALID, 8, "'T' is an attribute, not a method: write x.T");
    check_error("x = item(t)", DL_ERR_INVALID, 5, "'item' is a tensor method: write x.item()");
    check_error("dist.foo(t)", DL_ERR_INVALID, 6,
                "unknown name 'dist.foo' ('help' lists the names the shell knows)");
    check_error("x = torch.nosuch(3)", DL_ERR_INVALID, 11,
                "unknown name 'torch.nosuch' ('help' lists the names the shell knows)");
    check_error("x = dist.ReduceOp.SUMM", DL_ERR_INVALID, 19,
                "unknown op 'ReduceOp.SUMM'; ops: SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR, BXOR");
    check_error("dist.send(t, 1, dst=2)", DL_ERR_INVALID, 14,
                "send() got multiple values for argument 'dst'");
    check_error("dist.send(t, 1, None, 0, 5)", DL_ERR_INVALID, 26,
                "send() takes at most 4 positional arguments");
    check_error("dist.all_gather(tensor=t)", DL_ERR_INVALID, 24,
                "all_gather() is missing its argument 'tensor_list'");
    check_error("dist.send(t, tensor=t)", DL_ERR_INVALID, 21,
                "send() got multiple values for argument 'tensor'");
    check_error("x = t.", DL_ERR_INVALID, 7, "expected a method name after '.', found end of line");
    check_error("x = torch.send(t)", DL_ERR_INVALID, 11,
                "'send' is torch.distributed's: write dist.send");
    check_error("x = torch.distributed", DL_ERR_INVALID, 22,
                "expected '.' after 'torch.distributed', found end of line");
    check_error("x = 2 @", DL_ERR_INVALID, 8, "expected a value after '@'");
    check_error("x = dist.get_rnk()", DL_ERR_INVALID, 10,
                "unknown name 'dist.get_rnk'; did you mean 'dist.get_rank'?");
}

static void test_operators_and_slices(void **state)
{
    (void)state;
    check_ast("x = 1 % 2",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 7, "
              "'chain': [{'col': 5, 'num': 1}, {'col': 9, 'num': 2}], 'ops': [{'col': 7, 'op': "
              "'%'}]}}]");
    /* ** binds tighter than unary minus and is right associative. */
    check_ast("x = -2**2",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 5, "
              "'neg': {'col': 7, 'chain': [{'col': 6, 'num': 2}, {'col': 9, 'num': 2}], 'ops': "
              "[{'col': 7, 'op': '**'}]}}}]");
    check_ast("x = 2**3**2",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'chain': [{'col': 5, 'num': 2}, {'col': 9, 'chain': [{'col': 8, 'num': 3}, "
              "{'col': 11, 'num': 2}], 'ops': [{'col': 9, 'op': '**'}]}], 'ops': [{'col': 6, "
              "'op': '**'}]}}]");
    check_ast("t += 1", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 't', 'op': '+', "
                        "'value': {'col': 6, 'num': 1}}]");
    check_ast("t[1] = 5",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'target': {'col': 2, 'index': "
              "{'col': 1, 'name': 't'}, 'at': {'col': 3, 'num': 1}}, 'name': 't', 'value': "
              "{'col': 8, 'num': 5}}]");
    check_ast("m[0][1:] *= 2",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'target': {'col': 5, 'index': "
              "{'col': 2, 'index': {'col': 1, 'name': 'm'}, 'at': {'col': 3, 'num': 0}}, 'slice': "
              "{'start': {'col': 6, 'num': 1}}}, 'name': 'm', 'op': '*', 'value': {'col': 13, "
              "'num': 2}}]");
    check_ast("send t[2:4] dst=1",
              "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': "
              "'send', 'args': [{'col': 7, 'index': {'col': 6, 'name': 't'}, 'slice': {'start': "
              "{'col': 8, 'num': 2}, 'stop': {'col': 10, 'num': 4}}}], 'kwargs': {'dst': {'col': "
              "17, 'num': 1}}}}]");
    check_ast("x = t[::-2]",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'index': {'col': 5, 'name': 't'}, 'slice': {'step': {'col': 9, 'neg': {'col': 10, "
              "'num': 2}}}}}]");
    check_ast("x = t[:]", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': "
                          "{'col': 6, 'index': {'col': 5, 'name': 't'}, 'slice': {}}}]");

    check_error("x = t[1:2:3:4]", DL_ERR_INVALID, 12, "expected ']', found ':'");
    check_error("x = 2 **", DL_ERR_INVALID, 9, "expected a value after '**'");
    check_error("t[1] 5", DL_ERR_INVALID, 6, "expected '=' after the subscript, found '5'");
    check_error("rank += 1", DL_ERR_INVALID, 1,
                "cannot assign to 'rank': it is read-only, set by the launcher");
    check_error("t +=", DL_ERR_INVALID, 5, "expected a value after '+='");
    check_error("x = t[1:", DL_ERR_INVALID, 6, "unclosed '['");
    check_error("x = 1 % ", DL_ERR_INVALID, 8, "expected a value after '%'");

    /* m[1, 2] is m[1][2] (each a level at the bracket's column), m[1, 0:2]
     * m[1][0:2]; an index after a slice takes the dimension past the
     * slices kept ("dim": m[:, 1] is a column). */
    check_ast("x = m[1, 2:]",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'index': {'col': 6, 'index': {'col': 5, 'name': 'm'}, 'at': {'col': 7, 'num': "
              "1}}, 'slice': {'start': {'col': 10, 'num': 2}}, 'dim': 0}}]");
    check_ast("x = m[:, 1]",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'index': {'col': 6, 'index': {'col': 5, 'name': 'm'}, 'slice': {}}, 'at': {'col': "
              "10, 'num': 1}, 'dim': 1}}]");
    check_ast("x = v[0, :, 1:, 2]",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'index': {'col': 6, 'index': {'col': 6, 'index': {'col': 6, 'index': {'col': 5, "
              "'name': 'v'}, 'at': {'col': 7, 'num': 0}}, 'slice': {}, 'dim': 0}, 'slice': "
              "{'start': {'col': "
              "13, 'num': 1}}, 'dim': 1}, 'at': {'col': 17, 'num': 2}, 'dim': 2}}]");
    /* A trailing comma: Python's tuple of the indices. Alone, an index
     * is marked ("tuple": a list refuses it, a tensor takes it as is). */
    check_ast("x = m[1, ]", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', "
                            "'value': {'col': 6, 'index': {'col': 5, 'name': 'm'}, 'at': "
                            "{'col': 7, 'num': 1}, 'tuple': true}}]");
    check_ast("x = m[1, 2,]",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'index': {'col': 6, 'index': {'col': 5, 'name': 'm'}, 'at': {'col': 7, 'num': "
              "1}}, 'at': {'col': 10, 'num': 2}, 'dim': 0}}]");
    check_error("x = m[1,,]", DL_ERR_INVALID, 9, "expected a value after ','");
    /* an index that holds a slice is an index, not the slice */
    check_ast("x = a[ix[1:]]",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'index': {'col': 5, 'name': 'a'}, 'at': {'col': 9, 'index': {'col': 7, 'name': "
              "'ix'}, 'slice': {'start': {'col': 10, 'num': 1}}}}}]");
    check_error("x = m[,]", DL_ERR_INVALID, 7, "expected a value after '['");
    /* None adds a dimension ("newaxis"); after an ellipsis the indices
     * count from the last dimension ("dim" below 0), and the first node
     * of the brackets says how many dimensions they take ("indices"). */
    check_ast("x = m[..., None, 1]",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 6, "
              "'index': {'col': 6, 'index': {'col': 6, 'index': {'col': 5, 'name': 'm'}, "
              "'ellipsis': true, 'indices': 1}, 'newaxis': true, 'dim': -2}, 'at': {'col': 18, "
              "'num': 1}, 'dim': -1}}]");
    check_ast("x = m[None]", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', "
                             "'value': {'col': 6, 'index': {'col': 5, 'name': 'm'}, 'newaxis': "
                             "true, 'indices': 0}}]");
    check_ast("x = +t", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': "
                        "{'col': 5, 'pos': {'col': 6, 'name': 't'}}}]");
    check_error("x = m[1, ...", DL_ERR_INVALID, 6, "unclosed '['");

    /* torch's in-place methods are the statements they stand for. */
    check_ast("t.add_(1)", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 't', 'op': '+', "
                           "'method': 'add_', 'value': {'col': 8, 'num': 1}}]");
    check_ast("t.fill_(2)", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 't', "
                            "'method': 'fill_', 'inplace': true, 'value': {'col': 9, 'num': 2}}]");
    check_ast("t.zero_()", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 't', "
                           "'method': 'zero_', 'inplace': true, 'value': {'col': 3, 'num': 0}}]");
    check_ast("t[1].div_(2)",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 't', 'op': '/', 'method': "
              "'div_', 'target': {'col': 2, 'index': {'col': 1, 'name': 't'}, 'at': {'col': 3, "
              "'num': 1}}, 'value': "
              "{'col': 11, 'num': 2}}]");
    check_error("rank.add_(1)", DL_ERR_INVALID, 1,
                "cannot assign to 'rank': it is read-only, set by the launcher");
    check_error("t.zero_(1)", DL_ERR_INVALID, 3, "zero_() takes no arguments");
    /* alpha= of add_ and sub_: the value added is alpha * x, alpha beside x. */
    check_ast("p.add_(g, alpha=-lr)",
              "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'p', 'op': '+', 'method': "
              "'add_', 'value': {'col': 8, 'name': 'g'}, 'alpha': {'col': 17, 'neg': {'col': 18, "
              "'name': 'lr'}}}]");
    check_error("t.add_(alpha=2)", DL_ERR_INVALID, 3, "add_() takes one value (and alpha=)");
    check_error("t.mul_(2, alpha=2)", DL_ERR_INVALID, 11, "mul_() takes no keyword arguments");
}

/* ======================================================================
 * Python's constructs: strings and f-strings, def and return, calls as
 * statements, unpacking, list comprehensions, dim= of the reductions
 * ====================================================================== */

/* A session command's name followed by '=', an augmented assignment, a
 * call, an index, a '.' or a ',' is the learner's (a training loop's step,
 * a model's forward); followed by words or nothing, the command. */
static void test_session_words_as_names(void **state)
{
    (void)state;
    static const char *const names[] = {"step = 0", "step += 1", "next, t = 1, 2",
                                        "for step in range(3):\n    print(step)",
                                        "def forward(x):\n    return x * 2"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_t *stmts = parse_ok(names[i]);
        const char *kind = json_string_value(json_object_get(json_array_get(stmts, 0), "kind"));
        if (kind == NULL || strcmp(kind, "command") == 0)
            fail_msg("'%s' parsed as a command", names[i]);
        json_decref(stmts);
    }
    json_t *stmts = parse_ok("y = forward(t)");
    json_t *value = json_object_get(json_array_get(stmts, 0), "value");
    assert_string_equal(json_string_value(json_object_get(value, "call")), "forward");
    json_decref(stmts);
    stmts = parse_ok("step on");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(stmts, 0), "command"), "cmd")),
                        "step");
    json_decref(stmts);
    check_error("if x:\n    step on", DL_ERR_INVALID, 5,
                "'step' is a command of the shell, not of the ranks: it cannot be in an if, a for "
                "or a def");
}

static void test_python_constructs(void **state)
{
    (void)state;
    static const ast_case_t cases[] = {
        /* print as Python writes it, strings in either quotes. */
        {"print('Rank ', rank, ' has data ', tensor[0])",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'print', "
         "'args': [{'col': 7, 'str': 'Rank '}, {'col': 16, 'name': 'rank'}, {'col': 22, 'str': "
         "' has data '}, {'col': 42, 'index': {'col': 36, 'name': 'tensor'}, 'at': {'col': 43, "
         "'num': 0}}], 'kwargs': {}}}]"},
        /* Escapes decoded; triple quotes hold the other quote. */
        {"s = \"a\\tb\" ; u = '''it's'''",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 's', 'value': {'col': 5, 'str': "
         "'a\\tb'}}, {'col': 14, 'kind': 'assign', 'targets': null, 'name': 'u', 'value': {'col': "
         "18, 'str': 'it\\u0027s'}}]"},
        /* f-strings: text parts and fields, each at its own column. */
        {"print(f\"rank {rank}: {t}\")",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'print', "
         "'args': [{'col': 7, 'fstr': [{'col': 9, 'str': 'rank '}, {'col': 15, 'name': 'rank'}, "
         "{'col': 20, 'str': ': '}, {'col': 23, 'name': 't'}]}], 'kwargs': {}}}]"},
        {"x = f'{{x}} {a + 1}!'",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 5, "
         "'fstr': [{'col': 7, 'str': '{x} '}, {'col': 16, 'chain': [{'col': 14, 'name': 'a'}, "
         "{'col': 18, 'num': 1}], 'ops': [{'col': 16, 'op': '+'}]}, {'col': 20, 'str': '!'}]}}]"},
        /* dicts: a display, a comprehension (its "key" beside "comp"),
         * d.values() a call where the pair's values is an attribute, and
         * d.clear() the method, not the shell's clear; a dict in an
         * f-string's field. */
        {"d = {1: a, \"k\": []}",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'd', 'value': {'col': 5, 'dict': "
         "[{'col': 6, 'num': 1}, {'col': 9, 'name': 'a'}, {'col': 12, 'str': 'k'}, {'col': 17, "
         "'list': []}]}}]"},
        {"e = {k: v for k, v in d.items() if v}",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'e', 'value': {'col': 5, 'comp': "
         "{'col': 9, 'name': 'v'}, 'key': {'col': 6, 'name': 'k'}, 'var': 'k', 'names': ['k', "
         "'v'], 'iter': {'col': 25, 'call': 'items', 'self': {'col': 23, 'name': 'd'}, 'args': "
         "[], 'kwargs': {}}, 'cond': {'col': 36, 'name': 'v'}}}]"},
        {"x = d.values()",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 7, 'call': "
         "'values', 'self': {'col': 5, 'name': 'd'}, 'args': [], 'kwargs': {}}}]"},
        {"d.clear()",
         "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 3, 'call': 'clear', "
         "'self': {'col': 1, 'name': 'd'}, 'args': [], 'kwargs': {}}, 'result': true}]"},
        {"d.update(lr=1)",
         "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 3, 'call': 'update', "
         "'self': {'col': 1, 'name': 'd'}, 'args': [], 'kwargs': {'lr': {'col': 13, 'num': "
         "1}}}, 'result': true}]"},
        {"print(f\"{ {1: 2} }\")",
         "[{'col': 1, 'kind': 'command', 'targets': null, 'command': {'col': 1, 'cmd': 'print', "
         "'args': [{'col': 7, 'fstr': [{'col': 11, 'dict': [{'col': 12, 'num': 1}, {'col': 15, "
         "'num': 2}]}]}], 'kwargs': {}}}]"},
        /* with torch.no_grad(): the block is its body, if True's node. */
        {"with torch.no_grad(): x = 1",
         "[{'col': 1, 'kind': 'if', 'targets': null, 'branches': [{'col': 1, 'cond': {'col': 6, "
         "'bool': true}, 'body': [{'col': 23, 'kind': 'assign', 'targets': null, 'name': 'x', "
         "'value': {'col': 27, 'num': 1}}]}]}]"},
        /* def with a default, a body and return; a one-line def. */
        {"def f(a, b=2):\n    c = a + b\n    return c",
         "[{'col': 1, 'kind': 'def', 'targets': null, 'name': 'f', 'params': ['a', 'b'], "
         "'defaults': {'b': {'col': 12, 'num': 2}}, 'body': [{'col': 5, 'line': 2, 'kind': "
         "'assign', 'targets': null, 'name': 'c', 'value': {'col': 11, 'line': 2, 'chain': "
         "[{'col': 9, 'line': 2, 'name': 'a'}, {'col': 13, 'line': 2, 'name': 'b'}], 'ops': "
         "[{'col': 11, 'line': 2, 'op': '+'}]}}, {'col': 5, 'line': 3, 'kind': 'return', "
         "'targets': null, 'value': {'col': 12, 'line': 3, 'name': 'c'}}]}]"},
        {"def run(rank, size): pass",
         "[{'col': 1, 'kind': 'def', 'targets': null, 'name': 'run', 'params': ['rank', 'size'], "
         "'body': [{'col': 22, 'kind': 'pass', 'targets': null}]}]"},
        /* assert, with and without a message */
        {"assert x > 1, 'm'",
         "[{'col': 1, 'kind': 'assert', 'targets': null, 'cond': {'col': 10, 'chain': [{'col': "
         "8, 'name': 'x'}, {'col': 12, 'num': 1}], 'ops': [{'col': 10, 'op': '>'}]}, 'msg': "
         "{'col': 15, 'str': 'm'}}]"},
        {"assert ok", "[{'col': 1, 'kind': 'assert', 'targets': null, 'cond': {'col': 8, 'name': "
                      "'ok'}}]"},
        /* the environment, as torchrun scripts read and write it */
        {"r = os.environ['RANK']",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'r', 'value': {'col': 5, "
         "'getenv': [{'col': 16, 'str': 'RANK'}]}}]"},
        {"r = os.environ.get('A', 1)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'r', 'value': {'col': 5, "
         "'getenv': [{'col': 20, 'str': 'A'}, {'col': 25, 'num': 1}], 'default': true}}]"},
        {"r = os.getenv('A')", "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'r', "
                               "'value': {'col': 5, 'getenv': [{'col': 15, 'str': 'A'}], "
                               "'default': true}}]"},
        {"os.environ['A'] = 'b'", "[{'col': 1, 'kind': 'setenv', 'targets': null, 'key': {'col': "
                                  "12, 'str': 'A'}, 'value': {'col': 19, 'str': 'b'}}]"},
        /* In a def, rank may be assigned, and parameters named like commands
         * are variables; dist.recv is still the command. */
        {"def allreduce(send, recv):\n    rank = dist.get_rank()\n    send_req = dist.isend(send, "
         "1)\n    dist.recv(recv, 0)\n    recv[:] = send[:]\n    send_req.wait()",
         "[{'col': 1, 'kind': 'def', 'targets': null, 'name': 'allreduce', 'params': ['send', "
         "'recv'], 'body': [{'col': 5, 'line': 2, 'kind': 'assign', 'targets': null, 'name': "
         "'rank', 'value': {'col': 17, 'line': 2, 'call': 'get_rank', 'args': [], 'kwargs': {}}}, "
         "{'col': 5, 'line': 3, 'kind': 'assign', 'targets': null, 'name': 'send_req', "
         "'command': {'col': 21, 'line': 3, 'cmd': 'isend', 'args': [{'col': 27, 'line': 3, "
         "'name': 'send'}], 'kwargs': {'dst': {'col': 33, 'line': 3, 'num': 1}}}}, {'col': 5, "
         "'line': 4, 'kind': 'command', 'targets': null, 'command': {'col': 10, 'line': 4, "
         "'cmd': 'recv', 'args': [{'col': 15, 'line': 4, 'name': 'recv'}], 'kwargs': {'src': "
         "{'col': 21, 'line': 4, 'num': 0}}}}, {'col': 5, 'line': 5, 'kind': 'assign', "
         "'targets': null, 'target': {'col': 9, 'line': 5, 'index': {'col': 5, 'line': 5, "
         "'name': 'recv'}, 'slice': {}}, 'name': 'recv', 'value': {'col': 19, 'line': 5, "
         "'index': {'col': 15, 'line': 5, 'name': 'send'}, 'slice': {}}}, {'col': 5, 'line': 6, "
         "'kind': 'expr', 'targets': null, 'value': {'col': 14, 'line': 6, 'call': 'wait', "
         "'self': {'col': 5, 'line': 6, 'name': 'send_req'}, 'args': [], 'kwargs': {}}, 'result': "
         "true}]}]"},
        /* Calls of functions as statements, and a docstring. */
        {"allreduce(t, out); f(x=1)",
         "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 1, 'call': 'allreduce', "
         "'args': [{'col': 11, 'name': 't'}, {'col': 14, 'name': 'out'}], 'kwargs': {}}, "
         "'result': true}, "
         "{'col': 20, 'kind': 'expr', 'targets': null, 'value': {'col': 20, 'call': 'f', "
         "'args': [], 'kwargs': {'x': {'col': 24, 'num': 1}}}, 'result': true}]"},
        {"\"\"\"A docstring.\"\"\"",
         "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 1, 'str': "
         "'A docstring.'}}]"},
        /* An expression alone is shown, as at Python's prompt ("show");
         * a call's value is dropped, as a script drops it. */
        {"t", "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 1, 'name': 't'}, "
              "'show': true}]"},
        {"t + 1; m.T; x[0]",
         "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 3, 'chain': [{'col': 1, "
         "'name': 't'}, {'col': 5, 'num': 1}], 'ops': [{'col': 3, 'op': '+'}]}, 'show': true}, "
         "{'col': 8, 'kind': 'expr', 'targets': null, 'value': {'col': 10, 'call': 'T', 'self': "
         "{'col': 8, 'name': 'm'}, 'args': [], 'kwargs': {}, 'attr': true}, 'show': true}, "
         "{'col': 13, 'kind': 'expr', 'targets': null, 'value': {'col': 14, 'index': {'col': 13, "
         "'name': 'x'}, 'at': {'col': 15, 'num': 0}}, 'show': true}]"},
        {"[1, 2]",
         "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 1, 'list': [{'col': 2, "
         "'num': 1}, {'col': 5, 'num': 2}]}, 'show': true}]"},
        {"barier",
         "[{'col': 1, 'kind': 'expr', 'targets': null, 'value': {'col': 1, 'name': 'barier'}, "
         "'show': true, 'near': 'barrier'}]"},
        /* Unpacking, from a call or a bare tuple. */
        {"v, i = t.max(dim=0)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'names': ['v', 'i'], 'value': {'col': "
         "10, 'call': 'max', 'self': {'col': 8, 'name': 't'}, 'args': [], 'kwargs': {'dim': "
         "{'col': 18, 'num': 0}}}}]"},
        {"a, b = b, a",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'names': ['a', 'b'], 'value': {'col': "
         "8, 'list': [{'col': 8, 'name': 'b'}, {'col': 11, 'name': 'a'}], 'tuple': true}}]"},
        /* List comprehensions, over range or a list, with a condition. */
        {"x = [torch.zeros(2, dtype=torch.int64) for _ in range(2)]",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 5, "
         "'comp': {'col': 12, 'call': 'zeros', 'args': [{'col': 18, 'num': 2}], 'kwargs': "
         "{'dtype': {'col': 27, 'name': 'torch.int64'}}}, 'var': '_', 'iter': {'col': 49, 'call': "
         "'range', 'args': [{'col': 55, 'num': 2}], 'kwargs': {}}}}]"},
        {"x = [i * i for i in l if i > 0]",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 5, "
         "'comp': {'col': 8, 'chain': [{'col': 6, 'name': 'i'}, {'col': 10, 'name': 'i'}], "
         "'ops': [{'col': 8, 'op': '*'}]}, 'var': 'i', 'iter': {'col': 21, 'name': 'l'}, "
         "'cond': {'col': 28, 'chain': [{'col': 26, 'name': 'i'}, {'col': 30, 'num': 0}], "
         "'ops': [{'col': 28, 'op': '>'}]}}}]"},
        /* A if C else B, looser than or; a run of them is flat, each
         * condition with its value; in a comprehension's item, not in its
         * iterable or condition (an 'if' there is the filter). */
        {"x = 1 if rank == 0 or b else 2",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'x', 'value': {'col': 7, "
         "'if_exp': [[{'col': 20, 'bool_op': 'or', 'args': [{'col': 15, 'chain': [{'col': 10, "
         "'name': 'rank'}, {'col': 18, 'num': 0}], 'ops': [{'col': 15, 'op': '=='}]}, {'col': "
         "23, 'name': 'b'}]}, {'col': 5, 'num': 1}]], 'else': {'col': 30, 'num': 2}}}]"},
        {"y = a if p else b if q else c",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'y', 'value': {'col': 7, "
         "'if_exp': [[{'col': 10, 'name': 'p'}, {'col': 5, 'name': 'a'}], [{'col': 22, 'name': "
         "'q'}, {'col': 17, 'name': 'b'}]], 'else': {'col': 29, 'name': 'c'}}}]"},
        {"z = [i if i else -1 for i in l if i > 0]",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'z', 'value': {'col': 5, "
         "'comp': {'col': 8, 'if_exp': [[{'col': 11, 'name': 'i'}, {'col': 6, 'name': 'i'}]], "
         "'else': {'col': 18, 'neg': {'col': 19, 'num': 1}}}, 'var': 'i', 'iter': {'col': 30, "
         "'name': 'l'}, 'cond': {'col': 37, 'chain': [{'col': 35, 'name': 'i'}, {'col': 39, "
         "'num': 0}], 'ops': [{'col': 37, 'op': '>'}]}}}]"},
        /* dim= and keepdim=, the pair's attributes, dim by position. */
        {"m = torch.max(t, 0).values; i = t.argmax(dim=1, keepdim=True)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'm', 'value': {'col': 21, "
         "'call': 'values', 'self': {'col': 5, 'call': 'torch.max', 'args': [{'col': 15, 'name': "
         "'t'}, {'col': 18, 'num': 0}], 'kwargs': {}}, 'args': [], 'kwargs': {}, 'attr': true}}, "
         "{'col': 29, 'kind': 'assign', 'targets': null, 'name': 'i', 'value': {'col': 35, "
         "'call': 'argmax', 'self': {'col': 33, 'name': 't'}, 'args': [], 'kwargs': {'dim': "
         "{'col': 46, 'num': 1}, 'keepdim': {'col': 57, 'bool': true}}}}]"},
        {"y = x.mean(dim=0) + t.sum(1)",
         "[{'col': 1, 'kind': 'assign', 'targets': null, 'name': 'y', 'value': {'col': 19, "
         "'chain': [{'col': 7, 'call': 'mean', 'self': {'col': 5, 'name': 'x'}, 'args': [], "
         "'kwargs': {'dim': {'col': 16, 'num': 0}}}, {'col': 23, 'call': 'sum', 'self': {'col': "
         "21, 'name': 't'}, 'args': [{'col': 27, 'num': 1}], 'kwargs': {}}], 'ops': [{'col': 19, "
         "'op': '+'}]}}]"},
    };
    check_ast_cases(cases, N_OF(cases));

    /* while, and break and continue in loops (in a def's own loop too). */
    json_t *stmts =
        parse_ok("while i < 3:\n    i += 1\n    if i == 2:\n        continue\n    break");
    json_t *w = json_array_get(stmts, 0);
    assert_string_equal(json_string_value(json_object_get(w, "kind")), "while");
    assert_non_null(json_object_get(w, "cond"));
    json_t *body = json_object_get(w, "body");
    assert_int_equal(json_array_size(body), 3);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(
                json_object_get(
                    json_array_get(json_object_get(json_array_get(body, 1), "branches"), 0),
                    "body"),
                0),
            "kind")),
        "continue");
    assert_string_equal(json_string_value(json_object_get(json_array_get(body, 2), "kind")),
                        "break");
    json_decref(stmts);
    stmts = parse_ok("def f():\n    for i in l:\n        break");
    json_decref(stmts);
    /* for a, b in ...: every name in "names", the first in "var" too. */
    stmts = parse_ok("for i, x in enumerate(l):\n    pass\ny = [a * b for a, b in zip(p, q)]");
    json_t *f = json_array_get(stmts, 0);
    assert_string_equal(json_string_value(json_object_get(f, "var")), "i");
    assert_int_equal(json_array_size(json_object_get(f, "names")), 2);
    json_t *comp = json_object_get(json_array_get(stmts, 1), "value");
    assert_int_equal(json_array_size(json_object_get(comp, "names")), 2);
    json_decref(stmts);
    /* A field with a spec keeps the spec's text. */
    stmts = parse_ok("x = f'{loss:.4f} {n:>3}'");
    json_t *parts = json_object_get(json_object_get(json_array_get(stmts, 0), "value"), "fstr");
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 0), "spec")),
                        ".4f");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(parts, 0), "format"), "name")),
                        "loss");
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 2), "spec")), ">3");
    json_decref(stmts);
    /* A script's imports stay, and do nothing. */
    stmts = parse_ok("import os, torch\nimport torch.distributed as dist\n"
                     "from torch.multiprocessing import Process as P, Queue\nfrom math import *");
    assert_int_equal(json_array_size(stmts), 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(stmts, i), "kind")),
                            "pass");
    json_decref(stmts);

    /* Comments at line ends and on lines of their own inside a def. */
    stmts = parse_ok("def f(x):  # doubles\n    # alone\n    y = x * 2  # twice\n\n"
                     "    return y\nz = f(1)");
    assert_int_equal(json_array_size(stmts), 2);
    assert_int_equal(json_array_size(json_object_get(json_array_get(stmts, 0), "body")), 2);
    json_decref(stmts);

    static const err_case_t errors[] = {
        {"return 1", DL_ERR_INVALID, 1, "'return' outside function"},
        {"if x:\n    return 1", DL_ERR_INVALID, 5, "'return' outside function"},
        {"break", DL_ERR_INVALID, 1, "'break' outside loop"},
        {"for i, 1 in l: pass", DL_ERR_INVALID, 8, "expected a name after ',', found '1'"},
        {"for i, (a b) in l: pass", DL_ERR_INVALID, 11, "expected ')', found 'b'"},
        {"for i, rank in l: pass", DL_ERR_INVALID, 8,
         "cannot assign to 'rank': it is read-only, set by the launcher"},
        {"with open('f') as f:\n    pass", DL_ERR_INVALID, 6,
         "with: the shell knows torch.no_grad(), torch.enable_grad() and torch.inference_mode(), "
         "which change nothing here (it keeps no autograd)"},
        {"with torch.no_grad() as g: pass", DL_ERR_INVALID, 22, "expected ':', found 'as'"},
        {"import torch.distributed as d", DL_ERR_INVALID, 29,
         "the shell names torch.distributed 'dist' only: write 'as dist'"},
        {"from torch import distributed as d2", DL_ERR_INVALID, 34,
         "the shell names torch.distributed 'dist' only: write 'as dist'"},
        {"import os.", DL_ERR_INVALID, 11, "expected a module name, found end of line"},
        {"def f():\n    continue", DL_ERR_INVALID, 5, "'continue' not properly in loop"},
        {"if x:\n    continue", DL_ERR_INVALID, 5, "'continue' not properly in loop"},
        {"for i in l:\n    def f():\n        break", DL_ERR_INVALID, 9, "'break' outside loop"},
        {"while :\n    pass", DL_ERR_INVALID, 7, "expected a value after 'while'"},
        {"while x\n    pass", DL_ERR_INVALID, 8, "expected ':', found end of line"},
        {"while = 1", DL_ERR_INVALID, 7, "expected a value after 'while'"},
        {"def f(a, a): pass", DL_ERR_INVALID, 10, "duplicate argument 'a' in function definition"},
        {"def f(a=1, b): pass", DL_ERR_INVALID, 12,
         "non-default argument 'b' follows default argument"},
        {"def zeros(n): pass", DL_ERR_INVALID, 5,
         "cannot define 'zeros': the shell has a function of that name"},
        {"def send(t): pass", DL_ERR_INVALID, 5, "cannot define 'send': it is a command"},
        {"def f: pass", DL_ERR_INVALID, 6, "expected '(' after the function's name, found ':'"},
        {"def f(1): pass", DL_ERR_INVALID, 7, "expected a parameter name, found '1'"},
        {"def f(True): pass", DL_ERR_INVALID, 7, "expected a parameter name, found 'True'"},
        {"def f(a", DL_ERR_INVALID, 6, "unclosed '('"},
        {"def f(a):", DL_ERR_INVALID, 10, "expected an indented block after ':'"},
        {"def f(a) pass", DL_ERR_INVALID, 10, "expected ':', found 'pass'"},
        {"assert", DL_ERR_INVALID, 7, "expected a value after 'assert'"},
        {"assert x,", DL_ERR_INVALID, 10, "expected a value after ','"},
        {"x = os.path", DL_ERR_INVALID, 8,
         "os.path is not supported here: os.environ and os.getenv are"},
        {"x = os.environ.keys()", DL_ERR_INVALID, 16,
         "os.environ.keys is not supported here: os.environ[KEY] and os.environ.get(KEY, "
         "DEFAULT) are"},
        {"x = os.getenv('A', 1, 2)", DL_ERR_INVALID, 21, "expected ')', found ','"},
        {"x = os.environ['A'", DL_ERR_INVALID, 15, "unclosed '['"},
        {"def f():\n    kill 1", DL_ERR_INVALID, 5,
         "'kill' is a command of the shell, not of the ranks: it cannot be in an if, a for or a "
         "def"},
        {"x = f'{}'", DL_ERR_INVALID, 7, "f-string: empty expression not allowed"},
        {"x = f'{a'", DL_ERR_INVALID, 7, "f-string: expecting '}'"},
        {"x = f'{a!x}'", DL_ERR_INVALID, 9,
         "f-string: invalid conversion character: expected 's', 'r', or 'a'"},
        {"x = f'{a:3'", DL_ERR_INVALID, 10, "f-string: expecting '}'"},
        {"x = f'{a:{w}}'", DL_ERR_INVALID, 10,
         "f-string: a field inside a format spec is not supported"},
        {"x = f'a}'", DL_ERR_INVALID, 8, "f-string: single '}' is not allowed"},
        {"x = f'{a b}'", DL_ERR_INVALID, 10, "expected '}', found 'b'"},
        {"x = [i for 1 in l]", DL_ERR_INVALID, 12, "expected a name after 'for', found '1'"},
        {"x = [i for i l]", DL_ERR_INVALID, 14, "expected 'in', found 'l'"},
        {"x = [i for i in l", DL_ERR_INVALID, 5, "unclosed '['"},
        {"x = [i for i in]", DL_ERR_INVALID, 16, "expected a value after 'in'"},
        {"x = 1 if c", DL_ERR_INVALID, 11, "expected 'else' (A if C else B), found end of line"},
        {"x = 1 if", DL_ERR_INVALID, 9, "expected a value after 'if'"},
        {"x = 1 if c else", DL_ERR_INVALID, 16, "expected a value after 'else'"},
        {"x = [i for i in l if i else 2]", DL_ERR_INVALID, 24, "expected ']', found 'else'"},
        {"v, 1 = t", DL_ERR_INVALID, 4, "expected a name to assign to, found '1'"},
        {"v, w", DL_ERR_INVALID, 5, "expected '=' after the names, found end of line"},
        {"v, None = t", DL_ERR_INVALID, 4, "cannot assign to 'None'"},
        {"v, send = t", DL_ERR_INVALID, 4, "cannot assign to 'send': it is a command"},
        /* A bare expression is still no statement; a call of a function is. */
        {"None = 1", DL_ERR_INVALID, 1, "cannot assign to 'None'"},
        /* A store's target is t[...], never a method's result. */
        {"t[0].sum() += 1", DL_ERR_INVALID, 6, "cannot assign to a method call or an attribute"},
        {"t[2:4].wait() = 1", DL_ERR_INVALID, 8, "cannot assign to a method call or an attribute"},
        {"m[0].T = 1", DL_ERR_INVALID, 6, "cannot assign to a method call or an attribute"},
    };
    for (size_t i = 0; i < N_OF(errors); i++)
        check_error(errors[i].line, errors[i].st, errors[i].col, errors[i].msg);

    /* A def typed at the prompt goes on over several lines. */
    assert_true(lab_lang_needs_more("def f(a, b):"));
    assert_true(lab_lang_needs_more("def f(a, b):\n    c = a + b"));
    assert_true(lab_lang_needs_more("def f(a):\n    for i in range(2):\n        a += i"));
    assert_false(lab_lang_needs_more("def f(a):\n    return a\n"));
    assert_false(lab_lang_needs_more("def f(a): return a"));
    assert_true(lab_lang_starts_block("def f(a):"));

    /* What a def and an unpacking define, for completion. */
    static const struct {
        const char *line, *names;
    } defined[] = {
        {"def f(a): pass", "f"},
        {"v, i = t.max(dim=0)", "v i"},
        {"a, b, c, d = l", "a b c"},
        {"f(1)", ""},
    };
    for (size_t i = 0; i < N_OF(defined); i++) {
        stmts = parse_ok(defined[i].line);
        const char *names[LAB_STMT_MAX_DEFINED];
        size_t n = lab_stmt_defined_names(json_array_get(stmts, 0), names);
        char got[128] = "";
        for (size_t k = 0; k < n; k++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "", names[k]);
        if (strcmp(got, defined[i].names) != 0)
            fail_msg("%s: defines '%s', want '%s'", defined[i].line, got, defined[i].names);
        json_decref(stmts);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primitives),
        cmocka_unit_test(test_session_commands),
        cmocka_unit_test(test_tensor_expressions),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_command_arguments),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_statements_and_comments),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_error_show),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_statement_helpers),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_complete_commands),
        cmocka_unit_test(test_complete_arguments),
        cmocka_unit_test(test_complete_words),
        cmocka_unit_test(test_complete_errors),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_needs_more),
        cmocka_unit_test(test_operators_and_slices),
        cmocka_unit_test(test_maths_and_torch_spellings),
        cmocka_unit_test(test_session_words_as_names),
        cmocka_unit_test(test_python_constructs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
