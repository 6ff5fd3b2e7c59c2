/* libFuzzer target for the command language (lab/lang/lang.h): lab_parse_line,
 * lab_parse_error_show and lab_complete on the same input.
 *
 * Beyond "no crash, no leak", it checks the contract the evaluator relies
 * on: a successful parse yields exactly the AST shapes lang.h documents, with
 * every column inside the line, and serialises to JSON; a failed one gives a
 * message and a column inside the line (or one past it). Any violation
 * aborts, which libFuzzer reports as a crash with the input that caused it. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lang/internal.h"
#include "lab/lang/lang.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_parser: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Whether o has exactly the keys listed (NULL-terminated), besides the
 * "line" of a node past the text's first line. */
static int has_exactly(const json_t *o, const char *const *keys)
{
    size_t n = 0;
    for (; keys[n] != NULL; n++)
        if (json_object_get(o, keys[n]) == NULL)
            return 0;
    json_t *line = json_object_get(o, "line");
    if (line != NULL && (!json_is_integer(line) || json_integer_value(line) < 2))
        return 0;
    return json_object_size(o) == n + (line != NULL);
}

static void check_col(const json_t *o, size_t len)
{
    json_t *col = json_object_get(o, "col");
    CHECK(json_is_integer(col));
    CHECK(json_integer_value(col) >= 1 && (size_t)json_integer_value(col) <= len);
}

static void check_loop_names(const json_t *var, const json_t *names);

static void check_expr(const json_t *e, size_t len, int depth);
static void check_params(const json_t *params, const json_t *defaults, bool star, size_t len);
static void check_statement(const json_t *s, size_t len, bool in_def);

static void check_args(const json_t *args, const json_t *kwargs, size_t len, int depth)
{
    static const char *const k_star[] = {"star", "col", NULL};
    CHECK(json_is_array(args) && json_is_object(kwargs));
    for (size_t i = 0; i < json_array_size(args); i++) {
        json_t *a = json_array_get(args, i);
        if (json_object_get(a, "star") != NULL) {
            /* f(*args): an iterable whose items are the arguments there */
            CHECK(has_exactly(a, k_star));
            check_col(a, len);
            a = json_object_get(a, "star");
        }
        check_expr(a, len, depth + 1);
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)kwargs, key, v)
    {
        CHECK(key[0] != '\0');
        check_expr(v, len, depth + 1);
    }
}

static void check_expr(const json_t *e, size_t len, int depth)
{
    static const char *const k_num[] = {"num", "col", NULL};
    static const char *const k_float[] = {"num", "float", "col", NULL};
    static const char *const k_bool[] = {"bool", "col", NULL};
    static const char *const k_name[] = {"name", "col", NULL};
    static const char *const k_call[] = {"call", "args", "kwargs", "col", NULL};
    static const char *const k_method[] = {"call", "self", "args", "kwargs", "col", NULL};
    static const char *const k_attr[] = {"call", "self", "args", "kwargs", "attr", "col", NULL};
    static const char *const k_list[] = {"list", "col", NULL};
    static const char *const k_dict[] = {"dict", "col", NULL};
    static const char *const k_tuple[] = {"list", "tuple", "col", NULL};
    static const char *const k_chain[] = {"chain", "ops", "col", NULL};
    static const char *const k_op[] = {"op", "col", NULL};
    static const char *const k_neg[] = {"neg", "col", NULL};
    static const char *const k_invert[] = {"invert", "col", NULL};
    static const char *const k_pos[] = {"pos", "col", NULL};
    static const char *const k_str[] = {"str", "col", NULL};
    static const char *const k_getenv[] = {"getenv", "col", NULL};
    static const char *const k_getenv_d[] = {"getenv", "default", "col", NULL};
    static const char *const k_environ[] = {"environ", "col", NULL};
    static const char *const k_fstr[] = {"fstr", "col", NULL};
    static const char *const k_comp[] = {"comp", "var", "iter", "col", NULL};
    static const char *const k_comp_if[] = {"comp", "var", "iter", "cond", "col", NULL};
    static const char *const k_comp_n[] = {"comp", "var", "names", "iter", "col", NULL};
    static const char *const k_comp_if_n[] = {"comp", "var", "names", "iter", "cond", "col", NULL};
    static const char *const k_clause[] = {"var", "iter", "col", NULL};
    static const char *const k_clause_if[] = {"var", "iter", "cond", "col", NULL};
    static const char *const k_clause_n[] = {"var", "names", "iter", "col", NULL};
    static const char *const k_clause_if_n[] = {"var", "names", "iter", "cond", "col", NULL};
    static const char *const k_bool_op[] = {"bool_op", "args", "col", NULL};
    static const char *const k_not[] = {"not", "col", NULL};
    static const char *const k_if_exp[] = {"if_exp", "else", "col", NULL};

    CHECK(depth <= LAB_LANG_MAX_DEPTH + 2);
    CHECK(json_is_object(e));
    check_col(e, len);
    json_t *v;
    if ((v = json_object_get(e, "num")) != NULL) {
        if (json_object_get(e, "float") != NULL) {
            CHECK(has_exactly(e, k_float) && json_is_real(v));
            CHECK(json_is_true(json_object_get(e, "float")));
        } else {
            CHECK(has_exactly(e, k_num) && json_is_integer(v) && json_integer_value(v) >= 0);
        }
    } else if ((v = json_object_get(e, "bool")) != NULL) {
        CHECK(has_exactly(e, k_bool) && json_is_boolean(v));
    } else if ((v = json_object_get(e, "name")) != NULL) {
        CHECK(has_exactly(e, k_name) && json_is_string(v) && json_string_length(v) > 0);
    } else if ((v = json_object_get(e, "str")) != NULL) {
        CHECK(has_exactly(e, k_str) && json_is_string(v));
    } else if ((v = json_object_get(e, "getenv")) != NULL) {
        /* os.environ[KEY] (one argument), os.environ.get and os.getenv
         * ("default": one or two) */
        bool d = json_object_get(e, "default") != NULL;
        CHECK(has_exactly(e, d ? k_getenv_d : k_getenv) && json_is_array(v));
        CHECK(json_array_size(v) >= 1 && json_array_size(v) <= (d ? 2u : 1u));
        CHECK(!d || json_is_true(json_object_get(e, "default")));
        for (size_t i = 0; i < json_array_size(v); i++)
            check_expr(json_array_get(v, i), len, depth + 1);
    } else if ((v = json_object_get(e, "environ")) != NULL) {
        CHECK(has_exactly(e, k_environ) && json_is_true(v));
    } else if ((v = json_object_get(e, "fstr")) != NULL) {
        /* The text between the fields, and the fields' expressions, a
         * field with a spec as {"format": EXPR, "spec": TEXT}. */
        static const char *const k_format[] = {"format", "spec", "col", NULL};
        static const char *const k_conv[] = {"format", "conv", "col", NULL};
        static const char *const k_both[] = {"format", "conv", "spec", "col", NULL};
        CHECK(has_exactly(e, k_fstr) && json_is_array(v));
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *part = json_array_get(v, i);
            if (json_object_get(part, "format") != NULL) {
                json_t *spec = json_object_get(part, "spec"), *conv = json_object_get(part, "conv");
                CHECK(has_exactly(part, spec == NULL ? k_conv : conv == NULL ? k_format : k_both));
                CHECK(spec == NULL || json_is_string(spec));
                const char *c = json_string_value(conv);
                CHECK(conv == NULL || (c != NULL && (strcmp(c, "r") == 0 || strcmp(c, "s") == 0)));
                check_col(part, len);
                part = json_object_get(part, "format");
            }
            check_expr(part, len, depth + 1);
        }
    } else if ((v = json_object_get(e, "lambda")) != NULL) {
        /* lambda PARAMS: EXPR, a def of one return */
        static const char *const k_lambda[] = {"lambda", "params", "body", "col", NULL};
        static const char *const k_lambda_d[] = {"lambda", "params", "defaults",
                                                 "body",   "col",    NULL};
        json_t *defaults = json_object_get(e, "defaults"), *body = json_object_get(e, "body");
        json_t *star = json_object_get(e, "star");
        json_t *rest = json_copy((json_t *)e); /* "star": true when *NAME ends them */
        CHECK(rest != NULL && (star == NULL || json_is_true(star)));
        json_object_del(rest, "star");
        CHECK(has_exactly(rest, defaults != NULL ? k_lambda_d : k_lambda) && json_is_true(v));
        json_decref(rest);
        check_params(json_object_get(e, "params"), defaults, star != NULL, len);
        CHECK(json_is_array(body) && json_array_size(body) == 1);
        json_t *ret = json_array_get(body, 0);
        CHECK(strcmp(json_string_value(json_object_get(ret, "kind")), "return") == 0);
        CHECK(json_object_get(ret, "value") != NULL);
        check_statement(ret, len, true);
    } else if ((v = json_object_get(e, "comp")) != NULL) {
        json_t *var = json_object_get(e, "var"), *cond = json_object_get(e, "cond");
        json_t *names = json_object_get(e, "names"), *key = json_object_get(e, "key");
        /* a dict comprehension has "key" beside the list's keys */
        json_t *rest = json_deep_copy(e), *more = json_object_get(e, "more");
        CHECK(rest != NULL);
        json_object_del(rest, "key");
        json_object_del(rest, "more");
        /* further clauses: each a loop target, its iterable and its condition */
        CHECK(more == NULL || (json_is_array(more) && json_array_size(more) > 0));
        for (size_t i = 0; more != NULL && i < json_array_size(more); i++) {
            json_t *c = json_array_get(more, i), *cv = json_object_get(c, "var");
            json_t *cn = json_object_get(c, "names"), *cc = json_object_get(c, "cond");
            CHECK(json_is_object(c) &&
                  has_exactly(c, cn != NULL ? (cc != NULL ? k_clause_if_n : k_clause_n)
                                            : (cc != NULL ? k_clause_if : k_clause)));
            CHECK(json_is_string(cv) && json_string_length(cv) > 0);
            check_loop_names(cv, cn);
            check_col(c, len);
            check_expr(json_object_get(c, "iter"), len, depth + 1);
            if (cc != NULL)
                check_expr(cc, len, depth + 1);
        }
        CHECK(has_exactly(rest, names != NULL ? (cond != NULL ? k_comp_if_n : k_comp_n)
                                              : (cond != NULL ? k_comp_if : k_comp)));
        json_decref(rest);
        CHECK(json_is_string(var) && json_string_length(var) > 0);
        check_loop_names(var, names);
        if (key != NULL)
            check_expr(key, len, depth + 1);
        check_expr(v, len, depth + 1);
        check_expr(json_object_get(e, "iter"), len, depth + 1);
        if (cond != NULL)
            check_expr(cond, len, depth + 1);
    } else if ((v = json_object_get(e, "call")) != NULL && json_object_get(e, "self") != NULL) {
        /* t.sum(), t.T, h.wait(): a method or attribute of the table, on a value. */
        const char *fn = json_string_value(v);
        const lab_cmd_t *entry = lab__cmd_find_method(fn, fn != NULL ? strlen(fn) : 0);
        CHECK(entry != NULL && (entry->flags & (LAB_CMD_METHOD | LAB_CMD_OBJECT_METHOD)));
        if ((entry->flags & LAB_CMD_ATTRIBUTE) && json_object_get(e, "attr") != NULL) {
            /* PAIR.values; a dict's d.values() is a call */
            CHECK(has_exactly(e, k_attr) && json_is_true(json_object_get(e, "attr")));
            CHECK(json_array_size(json_object_get(e, "args")) == 0);
        } else {
            CHECK(has_exactly(e, k_method));
        }
        check_expr(json_object_get(e, "self"), len, depth + 1);
        check_args(json_object_get(e, "args"), json_object_get(e, "kwargs"), len, depth);
    } else if ((v = json_object_get(e, "callee")) != NULL) {
        /* f(1)(2), (lambda: 1)(): a call of what an expression gives */
        static const char *const k_callee[] = {"callee", "args", "kwargs", "col", NULL};
        CHECK(has_exactly(e, k_callee));
        check_expr(v, len, depth + 1);
        check_args(json_object_get(e, "args"), json_object_get(e, "kwargs"), len, depth);
    } else if ((v = json_object_get(e, "call")) != NULL) {
        CHECK(has_exactly(e, k_call) && json_is_string(v));
        const lab_cmd_t *entry = lab_cmd_find(json_string_value(v));
        CHECK(entry == NULL || !(entry->flags & LAB_CMD_METHOD_ONLY));
        check_args(json_object_get(e, "args"), json_object_get(e, "kwargs"), len, depth);
    } else if ((v = json_object_get(e, "dict")) != NULL) {
        CHECK(has_exactly(e, k_dict) && json_is_array(v) && json_array_size(v) % 2 == 0);
        for (size_t i = 0; i < json_array_size(v); i++)
            check_expr(json_array_get(v, i), len, depth + 1);
    } else if ((v = json_object_get(e, "list")) != NULL) {
        if (json_object_get(e, "tuple") != NULL)
            CHECK(has_exactly(e, k_tuple) && json_is_true(json_object_get(e, "tuple")));
        else
            CHECK(has_exactly(e, k_list));
        CHECK(json_is_array(v));
        for (size_t i = 0; i < json_array_size(v); i++)
            check_expr(json_array_get(v, i), len, depth + 1);
    } else if ((v = json_object_get(e, "bool_op")) != NULL) {
        json_t *args = json_object_get(e, "args");
        CHECK(has_exactly(e, k_bool_op) && json_is_string(v) && json_is_array(args));
        CHECK(strcmp(json_string_value(v), "and") == 0 || strcmp(json_string_value(v), "or") == 0);
        /* A run of one word is flat, as a chain is. */
        CHECK(json_array_size(args) >= 2);
        for (size_t i = 0; i < json_array_size(args); i++)
            check_expr(json_array_get(args, i), len, depth);
    } else if ((v = json_object_get(e, "if_exp")) != NULL) {
        /* A if C else B ...: flat, each [condition, value] at its own depth. */
        CHECK(has_exactly(e, k_if_exp) && json_is_array(v) && json_array_size(v) >= 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *pair = json_array_get(v, i);
            CHECK(json_is_array(pair) && json_array_size(pair) == 2);
            check_expr(json_array_get(pair, 0), len, depth);
            check_expr(json_array_get(pair, 1), len, depth);
        }
        check_expr(json_object_get(e, "else"), len, depth);
    } else if ((v = json_object_get(e, "not")) != NULL) {
        CHECK(has_exactly(e, k_not));
        check_expr(v, len, depth + 1);
    } else if ((v = json_object_get(e, "chain")) != NULL) {
        /* A run of operators is flat: its terms sit at the chain's own depth. */
        json_t *ops = json_object_get(e, "ops");
        CHECK(has_exactly(e, k_chain) && json_is_array(v) && json_is_array(ops));
        CHECK(json_array_size(v) >= 2 && json_array_size(ops) == json_array_size(v) - 1);
        for (size_t i = 0; i < json_array_size(ops); i++) {
            json_t *op = json_array_get(ops, i);
            CHECK(json_is_object(op) && has_exactly(op, k_op));
            check_col(op, len);
            const char *text = json_string_value(json_object_get(op, "op"));
            static const char *const ops_known[] = {
                "+",  "-",  "*",  "/", "//", "%", "@",  "**", "&",  "|",      "^",      "<<",
                ">>", "==", "!=", "<", "<=", ">", ">=", "in", "is", "not in", "is not", NULL};
            bool known = false;
            for (size_t k = 0; text != NULL && ops_known[k] != NULL; k++)
                known = known || strcmp(text, ops_known[k]) == 0;
            CHECK(known);
            /* a chain is all comparisons or none: the evaluator tells
             * which by its first operator */
            static const char *const arith[] = {"+",  "-", "*", "/", "//", "%",  "@",
                                                "**", "&", "|", "^", "<<", ">>", NULL};
            bool is_arith = false, first_arith = false;
            const char *first = json_string_value(json_object_get(json_array_get(ops, 0), "op"));
            for (size_t k = 0; arith[k] != NULL; k++) {
                is_arith = is_arith || strcmp(text, arith[k]) == 0;
                first_arith = first_arith || strcmp(first, arith[k]) == 0;
            }
            CHECK(is_arith == first_arith);
            /* The chain's column is its first operator's. */
            if (i == 0)
                CHECK(json_equal(json_object_get(op, "col"), json_object_get(e, "col")));
        }
        for (size_t i = 0; i < json_array_size(v); i++)
            check_expr(json_array_get(v, i), len, depth);
    } else if ((v = json_object_get(e, "invert")) != NULL) {
        CHECK(has_exactly(e, k_invert));
        check_expr(v, len, depth + 1);
    } else if ((v = json_object_get(e, "pos")) != NULL) {
        CHECK(has_exactly(e, k_pos));
        check_expr(v, len, depth + 1);
    } else if ((v = json_object_get(e, "neg")) != NULL) {
        CHECK(has_exactly(e, k_neg));
        check_expr(v, len, depth + 1);
    } else if ((v = json_object_get(e, "index")) != NULL) {
        /* One of "at" (an expression), "slice", "newaxis" (None) and
         * "ellipsis" (...); "dim": where it applies, on every index after
         * the first in its brackets (below 0: counted from the last
         * dimension, after an ellipsis); "indices": on the first of
         * brackets that hold None or ..., the dimensions they take;
         * "tuple": on a lone index with a trailing comma (t[0,]). */
        json_t *dim = json_object_get(e, "dim");
        json_t *indices = json_object_get(e, "indices");
        json_t *sl = json_object_get(e, "slice");
        json_t *at = json_object_get(e, "at");
        json_t *newaxis = json_object_get(e, "newaxis");
        json_t *ellipsis = json_object_get(e, "ellipsis");
        json_t *tuple = json_object_get(e, "tuple");
        CHECK(tuple == NULL || (json_is_true(tuple) && dim == NULL));
        CHECK(dim == NULL || json_is_integer(dim));
        CHECK(indices == NULL || (json_is_integer(indices) && json_integer_value(indices) >= 0));
        CHECK(dim == NULL || indices == NULL);
        CHECK((sl != NULL) + (at != NULL) + (newaxis != NULL) + (ellipsis != NULL) == 1);
        CHECK(newaxis == NULL || json_is_true(newaxis));
        CHECK(ellipsis == NULL || json_is_true(ellipsis));
        json_t *line = json_object_get(e, "line");
        CHECK(json_object_size(e) ==
              (size_t)(3 + (dim != NULL) + (indices != NULL) + (tuple != NULL) +
                       (line != NULL && json_is_integer(line))));
        CHECK(json_object_get(e, "col") != NULL);
        check_expr(v, len, depth + 1);
        if (sl != NULL) {
            CHECK(json_is_object(sl));
            const char *key;
            json_t *part;
            json_object_foreach(sl, key, part)
            {
                CHECK(strcmp(key, "start") == 0 || strcmp(key, "stop") == 0 ||
                      strcmp(key, "step") == 0);
                check_expr(part, len, depth + 1);
            }
        } else if (at != NULL) {
            check_expr(at, len, depth + 1);
        }
    } else {
        CHECK(!"unknown expression node");
    }
}

static void check_command(const json_t *c, size_t len)
{
    static const char *const k_args[] = {"cmd", "args", "kwargs", "col", NULL};
    static const char *const k_words[] = {"cmd", "words", "word_cols", "col", NULL};
    CHECK(json_is_object(c));
    check_col(c, len);
    const lab_cmd_t *entry = lab_cmd_find(json_string_value(json_object_get(c, "cmd")));
    CHECK(entry != NULL && !(entry->flags & LAB_CMD_FUNCTION));
    if (entry->flags & LAB_CMD_RAW_WORDS) {
        CHECK(has_exactly(c, k_words));
        json_t *words = json_object_get(c, "words"), *cols = json_object_get(c, "word_cols");
        CHECK(json_is_array(words) && json_is_array(cols));
        CHECK(json_array_size(words) == json_array_size(cols) && json_array_size(words) >= 1);
        CHECK(strcmp(json_string_value(json_array_get(words, 0)), entry->name) == 0);
        CHECK(json_integer_value(json_array_get(cols, 0)) ==
              json_integer_value(json_object_get(c, "col")));
        for (size_t i = 0; i < json_array_size(words); i++) {
            CHECK(json_is_string(json_array_get(words, i)));
            json_int_t col = json_integer_value(json_array_get(cols, i));
            CHECK(col >= 1 && (size_t)col <= len);
        }
    } else {
        /* print(): an empty line, where print alone asks what to print */
        static const char *const k_empty[] = {"cmd", "args", "kwargs", "empty_call", "col", NULL};
        if (json_object_get(c, "empty_call") != NULL) {
            CHECK(has_exactly(c, k_empty) && strcmp(entry->name, "print") == 0);
            CHECK(json_is_true(json_object_get(c, "empty_call")));
            CHECK(json_array_size(json_object_get(c, "args")) == 0);
        } else {
            CHECK(has_exactly(c, k_args));
        }
        check_args(json_object_get(c, "args"), json_object_get(c, "kwargs"), len, 0);
        /* of the commands, only print takes *ITERABLE */
        for (size_t i = 0; i < json_array_size(json_object_get(c, "args")); i++)
            CHECK(json_object_get(json_array_get(json_object_get(c, "args"), i), "star") == NULL ||
                  strcmp(entry->name, "print") == 0);
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(c, "kwargs"), key, v)
        {
            CHECK(lab_cmd_has_keyword(entry, key));
        }
    }
}

static void check_statement(const json_t *s, size_t len, bool in_def);

static void check_body(const json_t *body, size_t len, bool in_def)
{
    CHECK(json_is_array(body) && json_array_size(body) > 0);
    for (size_t i = 0; i < json_array_size(body); i++)
        check_statement(json_array_get(body, i), len, in_def);
}

/* A list of distinct non-empty names. */
static void check_names(const json_t *names, size_t min)
{
    CHECK(json_is_array(names) && json_array_size(names) >= min);
    for (size_t i = 0; i < json_array_size(names); i++) {
        json_t *n = json_array_get(names, i);
        CHECK(json_is_string(n) && json_string_length(n) > 0);
    }
}

/* A def's or a lambda's parameters, distinct names, and the defaults of
 * the last ones before a *NAME (star: the last parameter is one). */
static void check_params(const json_t *params, const json_t *defaults, bool star, size_t len)
{
    check_names(params, 0);
    for (size_t i = 0; i < json_array_size(params); i++)
        for (size_t j = 0; j < i; j++)
            CHECK(!json_equal(json_array_get(params, i), json_array_get(params, j)));
    CHECK(!star || json_array_size(params) > 0);
    size_t fixed = json_array_size(params) - (star ? 1 : 0);
    if (star)
        CHECK(defaults == NULL ||
              json_object_get(defaults, json_string_value(json_array_get(params, fixed))) == NULL);
    if (defaults == NULL)
        return;
    /* Defaults are for the last parameters, every one after the first. */
    CHECK(json_is_object(defaults) && json_object_size(defaults) > 0);
    size_t first = fixed - json_object_size(defaults);
    CHECK(first <= fixed);
    for (size_t i = 0; i < fixed; i++) {
        json_t *d = json_object_get(defaults, json_string_value(json_array_get(params, i)));
        CHECK((d != NULL) == (i >= first));
        if (d != NULL)
            check_expr(d, len, 0);
    }
}

/* An unpacking's targets: names, and groups of one or more targets,
 * nested no deeper than the parser's bound. */
static void check_targets(const json_t *targets, size_t min, bool star_ok, int depth)
{
    CHECK(depth <= LAB_LANG_MAX_DEPTH);
    CHECK(json_is_array(targets) && json_array_size(targets) >= min);
    size_t stars = 0;
    for (size_t i = 0; i < json_array_size(targets); i++) {
        json_t *t = json_array_get(targets, i);
        if (json_is_object(t)) {
            /* *NAME of an assignment, at most one a group */
            static const char *const k_star[] = {"star", NULL};
            CHECK(star_ok && has_exactly(t, k_star) && ++stars == 1);
            t = json_object_get(t, "star");
        }
        if (json_is_array(t))
            check_targets(t, 1, star_ok, depth + 1);
        else
            CHECK(json_is_string(t) && json_string_length(t) > 0);
    }
}

/* A loop's target: "var" alone, or with "names" when each item is
 * unpacked, var being the first name of the targets. */
static void check_loop_names(const json_t *var, const json_t *names)
{
    if (names == NULL)
        return;
    check_targets(names, 1, false, 0);
    const json_t *first = names;
    while (json_is_array(first))
        first = json_array_get(first, 0);
    CHECK(json_equal(first, var));
}

static void check_statement(const json_t *s, size_t len, bool in_def)
{
    CHECK(json_is_object(s));
    check_col(s, len);
    const char *kind = json_string_value(json_object_get(s, "kind"));
    CHECK(kind != NULL);
    json_t *targets = json_object_get(s, "targets");
    size_t keys = 3; /* kind, targets, col */
    CHECK(targets != NULL);
    if (json_is_array(targets)) {
        CHECK(json_array_size(targets) > 0);
        for (size_t i = 0; i < json_array_size(targets); i++) {
            json_int_t r = json_integer_value(json_array_get(targets, i));
            CHECK(r >= 0 && r <= LAB_LANG_MAX_RANK);
            if (i > 0)
                CHECK(r > json_integer_value(json_array_get(targets, i - 1)));
        }
        check_col(s, len);
        CHECK(json_is_integer(json_object_get(s, "targets_col")));
        keys++;
    } else {
        CHECK(json_is_null(targets));
    }
    if (json_object_get(s, "line") != NULL)
        keys++;
    if (strcmp(kind, "command") == 0) {
        check_command(json_object_get(s, "command"), len);
        keys++;
    } else if (strcmp(kind, "if") == 0) {
        static const char *const k_branch[] = {"cond", "body", "col", NULL};
        json_t *branches = json_object_get(s, "branches");
        CHECK(json_is_array(branches) && json_array_size(branches) > 0);
        for (size_t i = 0; i < json_array_size(branches); i++) {
            json_t *br = json_array_get(branches, i);
            CHECK(has_exactly(br, k_branch));
            check_expr(json_object_get(br, "cond"), len, 0);
            check_body(json_object_get(br, "body"), len, in_def);
        }
        keys++;
        if (json_object_get(s, "else") != NULL) {
            check_body(json_object_get(s, "else"), len, in_def);
            keys++;
        }
    } else if (strcmp(kind, "for") == 0) {
        CHECK(json_is_string(json_object_get(s, "var")));
        check_loop_names(json_object_get(s, "var"), json_object_get(s, "names"));
        check_expr(json_object_get(s, "iter"), len, 0);
        check_body(json_object_get(s, "body"), len, in_def);
        keys += 3 + (json_object_get(s, "names") != NULL);
    } else if (strcmp(kind, "try") == 0) {
        /* try: body, handlers {"classes", "as", "body"}, else, finally */
        json_t *handlers = json_object_get(s, "handlers");
        check_body(json_object_get(s, "body"), len, in_def);
        keys++;
        CHECK(handlers != NULL || json_object_get(s, "finally") != NULL);
        CHECK(handlers != NULL || json_object_get(s, "else") == NULL);
        for (size_t i = 0; i < json_array_size(handlers); i++) {
            json_t *h = json_array_get(handlers, i), *classes = json_object_get(h, "classes");
            json_t *as = json_object_get(h, "as");
            check_col(h, len);
            CHECK(json_object_size(h) == (size_t)(2 + (classes != NULL) + (as != NULL) +
                                                  (json_object_get(h, "line") != NULL)));
            /* a bare except comes last */
            CHECK(classes != NULL || i + 1 == json_array_size(handlers));
            for (size_t k = 0; k < json_array_size(classes); k++)
                CHECK(lab_lang_is_exc_class(json_string_value(json_array_get(classes, k))));
            CHECK(classes == NULL || json_array_size(classes) > 0);
            CHECK(as == NULL || (json_is_string(as) && json_string_length(as) > 0));
            check_body(json_object_get(h, "body"), len, in_def);
        }
        CHECK(handlers == NULL || (json_is_array(handlers) && json_array_size(handlers) > 0));
        keys += handlers != NULL;
        if (json_object_get(s, "else") != NULL) {
            check_body(json_object_get(s, "else"), len, in_def);
            keys++;
        }
        if (json_object_get(s, "finally") != NULL) {
            check_body(json_object_get(s, "finally"), len, in_def);
            keys++;
        }
    } else if (strcmp(kind, "raise") == 0) {
        json_t *cls = json_object_get(s, "class"), *msg = json_object_get(s, "msg");
        CHECK(cls == NULL || lab_lang_is_exc_class(json_string_value(cls)));
        CHECK(msg == NULL || cls != NULL);
        if (msg != NULL)
            check_expr(msg, len, 0);
        keys += (cls != NULL) + (msg != NULL);
    } else if (strcmp(kind, "while") == 0) {
        check_expr(json_object_get(s, "cond"), len, 0);
        check_body(json_object_get(s, "body"), len, in_def);
        keys += 2;
    } else if (strcmp(kind, "break") == 0 || strcmp(kind, "continue") == 0) {
        /* nothing else; the parser keeps them to loops */
    } else if (strcmp(kind, "def") == 0) {
        json_t *defaults = json_object_get(s, "defaults"), *star = json_object_get(s, "star");
        CHECK(json_is_string(json_object_get(s, "name")));
        CHECK(star == NULL || json_is_true(star));
        check_params(json_object_get(s, "params"), defaults, star != NULL, len);
        keys += (defaults != NULL) + (star != NULL);
        check_body(json_object_get(s, "body"), len, true);
        keys += 3;
    } else if (strcmp(kind, "return") == 0) {
        CHECK(in_def);
        if (json_object_get(s, "value") != NULL) {
            check_expr(json_object_get(s, "value"), len, 0);
            keys++;
        }
    } else if (strcmp(kind, "pass") == 0) {
        /* nothing else */
    } else if (strcmp(kind, "setenv") == 0) {
        check_expr(json_object_get(s, "key"), len, 0);
        check_expr(json_object_get(s, "value"), len, 0);
        keys += 2;
    } else if (strcmp(kind, "del") == 0) {
        /* del x, l[i], d[k][j]: names and subscripts of one index */
        json_t *items = json_object_get(s, "del");
        CHECK(json_is_array(items) && json_array_size(items) >= 1);
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *item = json_array_get(items, i);
            CHECK(json_object_get(item, "name") != NULL ||
                  (json_object_get(item, "index") != NULL &&
                   json_object_get(item, "ellipsis") == NULL));
            check_expr(item, len, 0);
        }
        keys++;
    } else if (strcmp(kind, "assert") == 0) {
        check_expr(json_object_get(s, "cond"), len, 0);
        keys++;
        if (json_object_get(s, "msg") != NULL) {
            check_expr(json_object_get(s, "msg"), len, 0);
            keys++;
        }
    } else if (strcmp(kind, "expr") == 0) {
        /* A call (not an attribute), whose value shows where it is not None
         * ("result"); a string, whose value is dropped; any other
         * expression is shown ("show"). */
        json_t *value = json_object_get(s, "value"), *show = json_object_get(s, "show");
        json_t *result = json_object_get(s, "result");
        check_expr(value, len, 0);
        bool call =
            (json_object_get(value, "call") != NULL && json_object_get(value, "attr") == NULL) ||
            json_object_get(value, "callee") != NULL;
        bool str = json_object_get(value, "str") != NULL || json_object_get(value, "fstr") != NULL;
        CHECK(call ? show == NULL && json_is_true(result)
                   : result == NULL && (str ? show == NULL : json_is_true(show)));
        keys += result != NULL;
        /* "near": the command a name alone is near. */
        json_t *near = json_object_get(s, "near");
        CHECK(near == NULL || (show != NULL && json_object_get(value, "name") != NULL &&
                               lab_cmd_find(json_string_value(near)) != NULL));
        keys += 1 + (show != NULL) + (near != NULL);
    } else if (json_object_get(s, "names") != NULL) {
        CHECK(strcmp(kind, "assign") == 0);
        check_targets(json_object_get(s, "names"), 1, true, 0);
        check_expr(json_object_get(s, "value"), len, 0);
        keys += 2;
    } else {
        CHECK(strcmp(kind, "assign") == 0);
        CHECK(json_is_string(json_object_get(s, "name")));
        json_t *op = json_object_get(s, "op"), *target = json_object_get(s, "target");
        /* a = b = v: the names after the first, plain names bound to the value */
        json_t *also = json_object_get(s, "also");
        if (also != NULL) {
            CHECK(op == NULL && target == NULL && json_object_get(s, "value") != NULL);
            check_names(also, 1);
            keys++;
        }
        if (op != NULL) {
            const char *text = json_string_value(op);
            CHECK(text != NULL &&
                  (strcmp(text, "+") == 0 || strcmp(text, "-") == 0 || strcmp(text, "*") == 0 ||
                   strcmp(text, "/") == 0 || strcmp(text, "//") == 0 || strcmp(text, "%") == 0 ||
                   strcmp(text, "**") == 0 || strcmp(text, "&") == 0 || strcmp(text, "|") == 0 ||
                   strcmp(text, "^") == 0 || strcmp(text, "<<") == 0 || strcmp(text, ">>") == 0));
            CHECK(json_object_get(s, "value") != NULL);
            keys++;
        }
        if (target != NULL) {
            CHECK(json_object_get(target, "index") != NULL);
            check_expr(target, len, 0);
            keys++;
        }
        /* t.add_(x), t.fill_(v): the method it came from; "inplace" (true)
         * where it writes into all of the name's tensor, with no op and
         * no target. */
        json_t *method = json_object_get(s, "method"), *inplace = json_object_get(s, "inplace");
        if (method != NULL) {
            const char *m = json_string_value(method);
            CHECK(m != NULL && strlen(m) > 1 && m[strlen(m) - 1] == '_');
            CHECK(json_object_get(s, "value") != NULL);
            keys++;
        }
        if (inplace != NULL) {
            CHECK(json_is_true(inplace) && method != NULL && op == NULL && target == NULL);
            keys++;
        }
        /* p.add_(g, alpha=-lr): the alpha of an add_ or sub_, for its one rounding */
        json_t *alpha = json_object_get(s, "alpha");
        if (alpha != NULL) {
            CHECK(method != NULL && op != NULL);
            check_expr(alpha, len, 0);
            keys++;
        }
        json_t *value = json_object_get(s, "value"), *cmd = json_object_get(s, "command");
        CHECK((value == NULL) != (cmd == NULL));
        /* NAME.append(COMMAND(...)): the command's result goes on the list */
        json_t *append = json_object_get(s, "append");
        if (append != NULL) {
            CHECK(json_is_true(append) && cmd != NULL && op == NULL && target == NULL);
            keys++;
        }
        if (value != NULL)
            check_expr(value, len, 0);
        else
            check_command(cmd, len);
        keys += 2;
    }
    CHECK(json_object_size(s) == keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The line ends at the first NUL, as a C string does; a byte after that
     * NUL places the completion cursor, which otherwise sits at the end. So
     * seed files are plain text, and the fuzzer still reaches every cursor. */
    const uint8_t *nul = memchr(data, '\0', size);
    size_t len = nul != NULL ? (size_t)(nul - data) : size;
    char *line = malloc(len + 1);
    if (line == NULL)
        return 0;
    memcpy(line, data, len);
    line[len] = '\0';
    int cursor = (int)len;
    if (nul != NULL && len + 1 < size)
        cursor = (int)(data[len + 1] * (len + 1) / 256);

    /* The front ends' questions about blocks never fail. */
    (void)lab_lang_needs_more(line);
    (void)lab_lang_starts_block(line);
    (void)lab_lang_continues_block(line);

    json_t *stmts = NULL;
    lab_parse_error_t err;
    dl_status_t st = lab_parse_line(line, &stmts, &err);
    if (st == DL_OK) {
        CHECK(json_is_array(stmts));
        for (size_t i = 0; i < json_array_size(stmts); i++)
            check_statement(json_array_get(stmts, i), len, false);
        char *text = json_dumps(stmts, JSON_COMPACT);
        CHECK(text != NULL);
        json_t *back = json_loads(text, 0, NULL);
        CHECK(back != NULL && json_equal(back, stmts));
        json_decref(back);
        free(text);
        json_decref(stmts);
    } else {
        /* Nothing in a fuzzer runs out of memory. */
        CHECK(st == DL_ERR_INVALID || st == DL_ERR_TOO_BIG);
        CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        CHECK(err.col >= 1 && (size_t)err.col <= len + 1);
        char *text = NULL;
        CHECK(lab_parse_error_show(line, &err, 80, &text) == DL_OK);
        free(text);
        CHECK(lab_parse_error_show(line, &err, 0, &text) == DL_OK);
        free(text);
    }

    static const char *const names[] = {"t", "out", "in", "g", "h"};
    char **m = NULL;
    size_t n = 0;
    int start = -1;
    st = lab_complete(line, cursor, names, sizeof(names) / sizeof(names[0]), &m, &n, &start);
    CHECK(st == DL_OK || (st == DL_ERR_TOO_BIG && len > LAB_LANG_MAX_LINE));
    if (st == DL_OK) {
        CHECK(start >= 0 && start <= cursor);
        for (size_t i = 0; i < n; i++) {
            CHECK(strncmp(m[i], line + start, (size_t)(cursor - start)) == 0);
            if (i > 0)
                CHECK(strcmp(m[i - 1], m[i]) < 0);
        }
        lab_complete_free(m, n);
    }
    free(line);
    return 0;
}
