/* The parser of the command language: a line to a JSON array of statements
 * (the grammar and the AST are in lang.h).
 *
 * It is a recursive-descent parser over a pulled token stream with one token
 * of lookahead (p->cur) and a second one on demand (peek), which is all the
 * grammar needs: 'NAME =' starts an assignment or a keyword argument.
 *
 * Every parse function returns a new reference or NULL. NULL means an error
 * has been recorded in the parser; the first error wins, so a function may
 * fail without checking whether a callee already said why. Ownership is
 * simple because jansson's *_new setters take their value's reference even
 * when they fail.
 *
 * Input from a keyboard or a fuzzer is hostile by assumption: recursion and
 * the AST's depth are bounded (LAB_LANG_MAX_DEPTH) before they are spent,
 * list and target counts are bounded before they are allocated, and nothing
 * reads past the line's length. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/dtype.h"
#include "distlab/op.h"
#include "lab/lang/internal.h"

const lab__limits_t lab__default_limits = {
    .max_line = LAB_LANG_MAX_LINE,
    .max_depth = LAB_LANG_MAX_DEPTH,
    .max_list = LAB_LANG_MAX_LIST,
    .max_rank = LAB_LANG_MAX_RANK,
    .max_targets = LAB_LANG_MAX_TARGETS,
};

/* One logical line of the text that holds a statement (blank and
 * comment-only lines are dropped): a physical line, or several joined
 * while a bracket is open, as Python joins them. */
typedef struct {
    size_t start, len; /* its bytes in the text, without the last '\n' */
    int indent;        /* columns of leading blanks, a tab to the next multiple of 8 */
    int no;            /* 1-based line number in the text */
} pline_t;

typedef struct {
    lab__lexer_t lx;
    lab__tok_t cur;
    const char *text;  /* the whole text; lx reads one line of it */
    pline_t *lines;    /* the lines that hold statements */
    size_t nlines, li; /* how many; the one being parsed */
    int lineno;        /* the line number of lines[li], for columns and errors */
    bool joined;       /* lines[li] spans several physical lines */
    /* pos_of's walk over a joined line: the newlines before seen_to are
     * counted (seen_line; seen_from is where the last one ends), so that
     * the nodes of a long joined line, made left to right, each walk on
     * from the one before rather than from the line's start. */
    size_t seen_to, seen_from;
    int seen_line;
    int body;             /* bodies of if, for and def open around the statement */
    int defs;             /* bodies of def open around the statement */
    int loops;            /* bodies of for and while around it, within its def */
    bool star_targets;    /* an assignment's targets: *NAME may stand among them */
    const json_t *params; /* the parameter names of the innermost def, or NULL */
    const json_t *outer;  /* the ranks of the 'on' around the statement, or NULL */
    const lab__limits_t *lim;
    int nest;               /* brackets and unary minus open around the current token */
    size_t targets_total;   /* target ranks over the statements so far */
    dl_status_t st;         /* DL_OK until the first error */
    lab_parse_error_t *err; /* where the first error goes; never NULL */
} parser_t;

/* ---- errors ---- */

static void fail_at(parser_t *p, dl_status_t st, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* pos, a byte of the line being parsed, as the physical line that holds it
 * and a 1-based column in that line. */
static void pos_of(parser_t *p, size_t pos, int *line, int *col)
{
    if (!p->joined) {
        *line = p->lineno;
        *col = (int)pos + 1;
        return;
    }
    if (pos < p->seen_to) {
        p->seen_to = p->seen_from = 0;
        p->seen_line = p->lineno;
    }
    for (; p->seen_to < pos && p->seen_to < p->lx.len; p->seen_to++)
        if (p->lx.s[p->seen_to] == '\n') {
            p->seen_line++;
            p->seen_from = p->seen_to + 1;
        }
    *line = p->seen_line;
    *col = (int)(pos - p->seen_from) + 1;
}

/* The column alone, as nodes and words carry it. */
static int col_of(parser_t *p, size_t pos)
{
    int line, col;
    pos_of(p, pos, &line, &col);
    return col;
}

static void fail_at(parser_t *p, dl_status_t st, size_t pos, const char *fmt, ...)
{
    if (p->st != DL_OK)
        return;
    p->st = st;
    pos_of(p, pos, &p->err->line, &p->err->col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
    va_end(ap);
}

static void fail_nomem(parser_t *p)
{
    if (p->st != DL_OK)
        return;
    p->st = DL_ERR_NOMEM;
    p->err->col = 0;
    p->err->line = 0;
    snprintf(p->err->msg, sizeof(p->err->msg), "out of memory");
}

static void fail_lex(parser_t *p, const lab__tok_t *tok)
{
    char msg[sizeof(p->err->msg)];
    lab__lex_error_msg(&p->lx, tok, msg, sizeof(msg));
    /* A number too long to convert is a limit, not a typo. */
    dl_status_t st = tok->err == LAB__LEX_NUM_TOO_LONG ? DL_ERR_TOO_BIG : DL_ERR_INVALID;
    fail_at(p, st, tok->start, "%s", msg);
}

/* "unexpected ')'", or the lexer's own message for a token it could not
 * make sense of. */
static void fail_unexpected(parser_t *p, const lab__tok_t *tok)
{
    if (tok->kind == LAB__T_ERROR) {
        fail_lex(p, tok);
        return;
    }
    char what[64];
    lab__tok_describe(&p->lx, tok, what, sizeof(what));
    fail_at(p, DL_ERR_INVALID, tok->start, "unexpected %s", what);
}

/* "expected ']', found 'x'" */
static void fail_expected(parser_t *p, const char *expected, const lab__tok_t *tok)
{
    if (tok->kind == LAB__T_ERROR) {
        fail_lex(p, tok);
        return;
    }
    char what[64];
    lab__tok_describe(&p->lx, tok, what, sizeof(what));
    fail_at(p, DL_ERR_INVALID, tok->start, "expected %s, found %s", expected, what);
}

static void fail_too_deep(parser_t *p, size_t pos)
{
    fail_at(p, DL_ERR_TOO_BIG, pos, "expression is nested too deeply (at most %d levels)",
            p->lim->max_depth);
}

/* ---- tokens ---- */

static void advance(parser_t *p)
{
    lab__lex_next(&p->lx, &p->cur);
}

/* The token after p->cur, without consuming anything. */
static void peek(const parser_t *p, lab__tok_t *tok)
{
    lab__lexer_t lx = p->lx;
    lab__lex_next(&lx, tok);
}

static const char *tok_text(const parser_t *p, const lab__tok_t *tok)
{
    return p->lx.s + tok->start;
}

static bool tok_is(const parser_t *p, const lab__tok_t *tok, const char *word)
{
    size_t n = strlen(word);
    return tok->kind == LAB__T_NAME && tok->len == n && memcmp(tok_text(p, tok), word, n) == 0;
}

static bool at_end(const parser_t *p)
{
    return p->cur.kind == LAB__T_EOF || p->cur.kind == LAB__T_SEMI;
}

static bool starts_expr(const lab__tok_t *tok)
{
    switch (tok->kind) {
    case LAB__T_INT:
    case LAB__T_FLOAT:
    case LAB__T_STRING:
    case LAB__T_FSTRING:
    case LAB__T_NAME:
    case LAB__T_LPAREN:
    case LAB__T_LBRACK:
    case LAB__T_LBRACE:
    case LAB__T_PLUS:
    case LAB__T_MINUS:
    case LAB__T_TILDE:
        return true;
    default:
        return false;
    }
}

/* Checks that p->cur can start the value that `after` calls for, so that
 * "op=" at the end of a line says what is missing rather than "unexpected
 * end of line". */
static bool expect_value(parser_t *p, const char *after)
{
    if (starts_expr(&p->cur))
        return true;
    if (p->cur.kind == LAB__T_ERROR)
        fail_lex(p, &p->cur);
    else
        fail_at(p, DL_ERR_INVALID, p->cur.start, "expected a value after '%s'", after);
    return false;
}

/* Message text for a name: names can be as long as the line, messages not. */
static void short_name(const parser_t *p, const lab__tok_t *tok, char *buf, size_t cap)
{
    if (tok->len <= 32)
        snprintf(buf, cap, "%.*s", (int)tok->len, tok_text(p, tok));
    else
        snprintf(buf, cap, "%.32s...", tok_text(p, tok));
}

/* ---- JSON helpers ---- */

static json_t *new_node(parser_t *p, size_t pos)
{
    json_t *o = json_object();
    int line, col;
    pos_of(p, pos, &line, &col);
    if (o == NULL || json_object_set_new(o, "col", json_integer(col)) != 0 ||
        (line > 1 && json_object_set_new(o, "line", json_integer(line)) != 0)) {
        json_decref(o);
        fail_nomem(p);
        return NULL;
    }
    return o;
}

/* Sets o[key] = v, taking v's reference; on failure releases o too, so a
 * caller can write `if (!set(p, o, k, v)) return NULL;`. A NULL v means the
 * caller's parse already failed and recorded why. */
static bool set(parser_t *p, json_t *o, const char *key, json_t *v)
{
    if (v == NULL) {
        fail_nomem(p);
        json_decref(o);
        return false;
    }
    if (json_object_set_new(o, key, v) != 0) {
        fail_nomem(p);
        json_decref(o);
        return false;
    }
    return true;
}

static json_t *new_name_string(parser_t *p, const lab__tok_t *tok)
{
    json_t *s = json_stringn(tok_text(p, tok), tok->len);
    if (s == NULL)
        fail_nomem(p);
    return s;
}

/* Raises *depth_p to 1 + child and checks the limit at pos. */
static bool add_level(parser_t *p, int *depth_p, int child, size_t pos)
{
    if (child + 1 > *depth_p)
        *depth_p = child + 1;
    if (*depth_p > p->lim->max_depth) {
        fail_too_deep(p, pos);
        return false;
    }
    return true;
}

/* Enters a bracket or unary minus at pos; the C recursion this bounds is the
 * parser's own stack, so it is checked before descending. */
static bool enter(parser_t *p, size_t pos)
{
    if (p->nest >= p->lim->max_depth) {
        fail_too_deep(p, pos);
        return false;
    }
    p->nest++;
    return true;
}

/* ---- expressions ---- */

static json_t *parse_expr(parser_t *p, bool cmdarg, int *depth_p);
static json_t *parse_disjunction(parser_t *p, int *depth_p);

/* Whether key names one of the positional parameters of command entry
 * (tensor=, tensor_list=, ...), which the call form also takes by name. */
static bool is_param(const lab_cmd_t *entry, const char *key)
{
    size_t nargs;
    const char *const *params = lab__cmd_params(entry, &nargs);
    for (size_t i = 0; params != NULL && i < nargs; i++)
        if (strcmp(params[i], key) == 0)
            return true;
    return false;
}

/* One keyword argument NAME '=' EXPR into kwargs. entry, when known, says
 * which keywords are allowed; owner names the call in messages ("send",
 * "ones()"). */
static bool parse_kwarg(parser_t *p, const lab_cmd_t *entry, const char *owner, json_t *kwargs,
                        bool cmdarg, int *depth_p)
{
    lab__tok_t key_tok = p->cur;
    char shown[48];
    short_name(p, &key_tok, shown, sizeof(shown));
    char *key = strndup(tok_text(p, &key_tok), key_tok.len);
    if (key == NULL) {
        fail_nomem(p);
        return false;
    }
    bool ok = false;
    /* s.format(name=x): any keyword names a field; dict(a=1) and
     * d.update(a=1) a key */
    bool any =
        entry != NULL && (strcmp(entry->name, "format") == 0 || strcmp(entry->name, "dict") == 0 ||
                          strcmp(entry->name, "update") == 0);
    if (entry != NULL && !any && !lab_cmd_has_keyword(entry, key) && !is_param(entry, key)) {
        const char *near = lab_suggest(key, entry->keywords, SIZE_MAX);
        if (entry->keywords[0] == NULL) {
            fail_at(p, DL_ERR_INVALID, key_tok.start, "%s takes no keyword arguments", owner);
        } else if (near != NULL) {
            fail_at(p, DL_ERR_INVALID, key_tok.start,
                    "unknown keyword '%s' for %s; did you mean '%s'?", shown, owner, near);
        } else {
            char list[96] = "";
            size_t used = 0;
            for (const char *const *k = entry->keywords; *k != NULL && used < sizeof(list); k++)
                used += (size_t)snprintf(list + used, sizeof(list) - used,
                                         "%s%s=", k == entry->keywords ? "" : ", ", *k);
            fail_at(p, DL_ERR_INVALID, key_tok.start, "unknown keyword '%s' for %s (it takes %s)",
                    shown, owner, list);
        }
        goto out_free_key;
    }
    if (json_object_get(kwargs, key) != NULL) {
        fail_at(p, DL_ERR_INVALID, key_tok.start, "duplicate keyword '%s'", shown);
        goto out_free_key;
    }
    advance(p); /* the name */
    advance(p); /* '=' */
    char after[64];
    snprintf(after, sizeof(after), "%s=", shown);
    if (!expect_value(p, after))
        goto out_free_key;
    int d = 0;
    json_t *v = parse_expr(p, cmdarg, &d);
    if (v == NULL)
        goto out_free_key;
    if (json_object_set_new(kwargs, key, v) != 0) {
        fail_nomem(p);
        goto out_free_key;
    }
    if (d > *depth_p)
        *depth_p = d;
    ok = true;
out_free_key:
    free(key);
    return ok;
}

/* *ITERABLE among a call's arguments, {"star": EXPR}: its items are the
 * arguments there (f(*args), print(*l)). p->cur is the '*'. */
static json_t *parse_star_arg(parser_t *p, int *depth_p)
{
    lab__tok_t star = p->cur;
    advance(p);
    if (!expect_value(p, "*"))
        return NULL;
    json_t *node = new_node(p, star.start);
    int d = 0;
    json_t *e = node != NULL ? parse_expr(p, false, &d) : NULL;
    if (e == NULL || !add_level(p, &d, d, star.start)) {
        json_decref(e);
        json_decref(node);
        return NULL;
    }
    if (d > *depth_p)
        *depth_p = d;
    return set(p, node, "star", e) ? node : NULL;
}

/* The parenthesised arguments of a call or a torch-style command; p->cur is
 * the '('. Fills args and kwargs; *depth_p receives the deepest argument.
 * star_ok: whether *ITERABLE may stand among them (a function's call and
 * print's; a command binds its parameters by position as it is parsed). */
static bool parse_call_args(parser_t *p, const lab_cmd_t *entry, const char *owner,
                            const char *fname, json_t *args, json_t *kwargs, bool star_ok,
                            int *depth_p)
{
    lab__tok_t open = p->cur;
    if (!enter(p, open.start))
        return false;
    advance(p);
    bool seen_kw = false;
    size_t n = 0;
    *depth_p = 0;
    for (;;) {
        if (p->cur.kind == LAB__T_RPAREN)
            break;
        if (at_end(p)) {
            fail_at(p, DL_ERR_INVALID, open.start, "unterminated call to '%s'", fname);
            return false;
        }
        if (n >= p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, p->cur.start, "too many arguments (at most %zu)",
                    p->lim->max_list);
            return false;
        }
        lab__tok_t next;
        peek(p, &next);
        if (p->cur.kind == LAB__T_STAR) {
            if (!star_ok) {
                fail_at(p, DL_ERR_INVALID, p->cur.start,
                        "*ITERABLE is not taken by %s here: give its arguments one by one", owner);
                return false;
            }
            if (seen_kw) {
                fail_at(p, DL_ERR_INVALID, p->cur.start,
                        "*ITERABLE goes before the keyword arguments here");
                return false;
            }
            json_t *e = parse_star_arg(p, depth_p);
            if (e == NULL)
                return false;
            if (json_array_append_new(args, e) != 0) {
                fail_nomem(p);
                return false;
            }
        } else if (p->cur.kind == LAB__T_NAME && next.kind == LAB__T_EQ) {
            if (!parse_kwarg(p, entry, owner, kwargs, false, depth_p))
                return false;
            seen_kw = true;
        } else {
            if (seen_kw && starts_expr(&p->cur)) {
                fail_at(p, DL_ERR_INVALID, p->cur.start,
                        "positional argument after keyword arguments");
                return false;
            }
            int d = 0;
            json_t *e = parse_expr(p, false, &d);
            if (e == NULL)
                return false;
            if (json_array_append_new(args, e) != 0) {
                fail_nomem(p);
                return false;
            }
            if (d > *depth_p)
                *depth_p = d;
        }
        n++;
        if (p->cur.kind == LAB__T_COMMA) {
            advance(p);
            continue;
        }
        if (p->cur.kind == LAB__T_RPAREN)
            break;
        if (at_end(p)) {
            fail_at(p, DL_ERR_INVALID, open.start, "unterminated call to '%s'", fname);
            return false;
        }
        fail_expected(p, "',' or ')'", &p->cur);
        return false;
    }
    advance(p); /* ')' */
    p->nest--;
    return true;
}

/* node's "args" and "kwargs", parsed (parse_call_args) from p->cur, the
 * '('; on failure node is released. */
static bool add_call_args(parser_t *p, json_t *node, const lab_cmd_t *entry, const char *owner,
                          const char *fname, int *depth_p)
{
    json_t *args = json_array(), *kwargs = json_object();
    if (!set(p, node, "args", args)) {
        json_decref(kwargs);
        return false;
    }
    if (!set(p, node, "kwargs", kwargs))
        return false;
    if (!parse_call_args(p, entry, owner, fname, args, kwargs, true, depth_p)) {
        json_decref(node);
        return false;
    }
    return true;
}

/* Whether the n bytes at s are one of the torch functions that keep their
 * module in a call's name, torch.sum as against Python's sum
 * (resolve_prefix). */
static bool torch_kept(const char *s, size_t n)
{
    static const char *const kept[] = {"sum", "max", "min", "all", "any"};
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        if (n == strlen(kept[i]) && strncmp(s, kept[i], n) == 0)
            return true;
    /* add, norm, softmax: the bare name may be the learner's def, while
     * torch.add stays torch's */
    const lab_cmd_t *row = lab__cmd_findn(s, n);
    return row != NULL && (row->flags & LAB_CMD_FREE_NAME);
}

static json_t *parse_call(parser_t *p, const lab__tok_t *name_tok, int *depth_p)
{
    /* torch.sum(...) keeps its module in its name (resolve_prefix): its
     * row is sum's, whose keywords it takes */
    const char *text = tok_text(p, name_tok);
    size_t len = name_tok->len;
    bool torch_named = len > 6 && strncmp(text, "torch.", 6) == 0 && torch_kept(text + 6, len - 6);
    const lab_cmd_t *entry =
        lab__cmd_findn(torch_named ? text + 6 : text, torch_named ? len - 6 : len);
    if (entry != NULL && (entry->flags & LAB_CMD_SESSION))
        entry = NULL; /* forward(x): the learner's def (session_word_is_name) */
    if (entry != NULL && (entry->flags & LAB_CMD_FREE_NAME) && !torch_named)
        entry = NULL; /* add(a, b): maybe the learner's def; checked where it runs */
    char fname[48], owner[56];
    short_name(p, name_tok, fname, sizeof(fname));
    if (entry != NULL && !(entry->flags & LAB_CMD_FUNCTION)) {
        fail_at(p, DL_ERR_INVALID, name_tok->start,
                "'%s' is a command and cannot be used inside an expression", fname);
        return NULL;
    }
    if (entry != NULL && (entry->flags & LAB_CMD_METHOD_ONLY)) {
        fail_at(p, DL_ERR_INVALID, name_tok->start, "'%s' is a tensor %s: write x.%s%s", fname,
                (entry->flags & LAB_CMD_ATTRIBUTE) ? "attribute" : "method", fname,
                (entry->flags & LAB_CMD_ATTRIBUTE) ? "" : "()");
        return NULL;
    }
    snprintf(owner, sizeof(owner), "%s()", fname);
    json_t *node = new_node(p, name_tok->start);
    if (node == NULL || !set(p, node, "call", new_name_string(p, name_tok)))
        return NULL;
    int d = 0;
    if (!add_call_args(p, node, entry, owner, fname, &d))
        return NULL;
    if (!add_level(p, depth_p, d, name_tok->start)) {
        json_decref(node);
        return NULL;
    }
    return node;
}

static bool check_assignable_as(parser_t *p, const lab__tok_t *name_tok, bool launcher_ok);
static bool check_assignable(parser_t *p, const lab__tok_t *name_tok)
{
    return check_assignable_as(p, name_tok, false);
}
static bool is_keyword_tok(const parser_t *p, const lab__tok_t *tok);
static bool close_bracket(parser_t *p, const lab__tok_t *open, lab__tok_kind_t kind, char opener,
                          char closer);

/* One target of an unpacking: NAME, or a group in parentheses, (A, B)
 * or (A,), whose item is unpacked in turn (for i, (a, b) in
 * enumerate(zip(x, y))). A group is a JSON array of targets; (A) alone
 * is the name. what names the expected token for an error. Appends the
 * number of names to *n_p, which is bounded. */
/* Whether a group of targets holds more than one *NAME ({"star": NAME}),
 * which Python refuses; fails at pos if so. */
static bool one_star(parser_t *p, const json_t *group, size_t pos)
{
    size_t i, stars = 0;
    const json_t *t;
    json_array_foreach(group, i, t)
    {
        stars += json_is_object(t);
    }
    if (stars > 1)
        fail_at(p, DL_ERR_INVALID, pos, "multiple starred expressions in assignment");
    return stars <= 1;
}

static json_t *parse_target(parser_t *p, bool launcher_ok, const char *what, size_t *n_p)
{
    lab__tok_t tok = p->cur;
    if (tok.kind == LAB__T_STAR && p->star_targets) {
        /* first, *rest = l: the items the others leave, as a list */
        advance(p);
        if (p->cur.kind != LAB__T_NAME || is_keyword_tok(p, &p->cur)) {
            fail_expected(p, "a name after '*'", &p->cur);
            return NULL;
        }
        json_t *name = parse_target(p, launcher_ok, what, n_p), *star = NULL;
        if (name != NULL &&
            ((star = json_object()) == NULL || json_object_set_new(star, "star", name) != 0)) {
            json_decref(star);
            fail_nomem(p);
            return NULL;
        }
        return star;
    }
    if (tok.kind == LAB__T_NAME && !is_keyword_tok(p, &tok)) {
        if (!check_assignable_as(p, &tok, launcher_ok))
            return NULL;
        if (++*n_p > p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, tok.start, "too many names (at most %zu)", p->lim->max_list);
            return NULL;
        }
        json_t *name = new_name_string(p, &tok);
        if (name == NULL)
            fail_nomem(p);
        advance(p);
        return name;
    }
    /* (a, b) or [a, b]: Python takes both */
    bool square = tok.kind == LAB__T_LBRACK;
    lab__tok_kind_t closer = square ? LAB__T_RBRACK : LAB__T_RPAREN;
    if (tok.kind != LAB__T_LPAREN && !square) {
        fail_expected(p, what, &tok);
        return NULL;
    }
    if (!enter(p, tok.start))
        return NULL;
    advance(p);
    json_t *group = json_array();
    bool comma = square; /* [a] is a group of one, (a) is a */
    if (group == NULL)
        fail_nomem(p);
    while (group != NULL) {
        json_t *item = parse_target(p, launcher_ok, "a name or '(' to unpack into", n_p);
        if (item == NULL || json_array_append_new(group, item) != 0) {
            if (item != NULL)
                fail_nomem(p);
            json_decref(group);
            group = NULL;
            break;
        }
        if (p->cur.kind != LAB__T_COMMA)
            break;
        comma = true;
        advance(p);
        if (p->cur.kind == closer)
            break; /* (a, b,) and (a,) */
    }
    p->nest--;
    if (group != NULL && !close_bracket(p, &tok, closer, square ? '[' : '(', square ? ']' : ')')) {
        json_decref(group);
        return NULL;
    }
    if (group != NULL && !one_star(p, group, tok.start)) {
        json_decref(group);
        return NULL;
    }
    if (group != NULL && !comma && json_is_object(json_array_get(group, 0))) {
        fail_at(p, DL_ERR_INVALID, tok.start, "cannot use starred expression here"); /* (*a) */
        json_decref(group);
        return NULL;
    }
    if (group != NULL && !comma) { /* (a) is a */
        json_t *only = json_incref(json_array_get(group, 0));
        json_decref(group);
        return only;
    }
    return group;
}

/* The first name of a target, depth first. */
static json_t *first_name(json_t *target)
{
    while (json_is_array(target))
        target = json_array_get(target, 0);
    return target;
}

/* The target of a for or of a comprehension, NAME or NAME, NAME, ... (each
 * item unpacked into the names, as Python's for a, b in zip(x, y)), a
 * name being a group in parentheses as well: the first name into "var",
 * and the targets into "names" when the item is unpacked. p->cur is the
 * first target. On failure node is released. */
static bool parse_loop_target(parser_t *p, json_t *node)
{
    json_t *names = json_array();
    if (names == NULL) {
        fail_nomem(p);
        json_decref(node);
        return false;
    }
    size_t n = 0;
    bool comma = false;
    for (;;) {
        json_t *target = parse_target(
            p, false, json_array_size(names) ? "a name after ','" : "a name after 'for'", &n);
        if (target == NULL)
            goto err_decref;
        if (json_array_append_new(names, target) != 0) {
            fail_nomem(p);
            goto err_decref;
        }
        if (p->cur.kind != LAB__T_COMMA)
            break;
        comma = true;
        advance(p);
        if (tok_is(p, &p->cur, "in"))
            break; /* for a, in pairs */
    }
    /* for (a, b) in pairs: the group is the names */
    json_t *only = json_array_get(names, 0);
    if (!comma && json_array_size(names) == 1 && json_is_array(only)) {
        json_incref(only);
        json_decref(names);
        names = only;
        comma = true;
    }
    if (!set(p, node, "var", json_incref(first_name(names)))) {
        json_decref(names);
        return false;
    }
    if (comma)
        return set(p, node, "names", names);
    json_decref(names);
    return true;

err_decref:
    json_decref(names);
    json_decref(node);
    return false;
}

/* A comprehension's clause after its names: 'in' ITER ['if' COND], set on
 * clause as "iter" and "cond"; *deepest_p grows to their depth. */
static bool clause_rest(parser_t *p, json_t *clause, int *deepest_p)
{
    if (!tok_is(p, &p->cur, "in")) {
        fail_expected(p, "'in'", &p->cur);
        return false;
    }
    advance(p);
    static const char *const parts[] = {"iter", "cond"}, *const after[] = {"in", "if"};
    for (int k = 0; k < 2; k++) {
        if (!expect_value(p, after[k]))
            return false;
        int dk = 0;
        json_t *e = parse_disjunction(p, &dk);
        if (e == NULL)
            return false;
        if (json_object_set_new(clause, parts[k], e) != 0) {
            fail_nomem(p);
            return false;
        }
        if (dk > *deepest_p)
            *deepest_p = dk;
        if (k == 1 && tok_is(p, &p->cur, "if")) {
            fail_at(p, DL_ERR_INVALID, p->cur.start,
                    "one 'if' a clause here: join the conditions with 'and'");
            return false;
        }
        if (k == 1 || !tok_is(p, &p->cur, "if"))
            break;
        advance(p); /* if */
    }
    return true;
}

/* [EXPR for NAME in ITER] or [EXPR for NAME in ITER if COND]: a list
 * comprehension, {"comp": EXPR, "var", "iter", ["cond",] ["more",] "col"}; a dict
 * comprehension {KEY: EXPR for ...} has "key" too (key not NULL). p->cur is
 * the 'for'; item and key (the deeper of them d) are taken over. */
static json_t *parse_comprehension(parser_t *p, const lab__tok_t *open, json_t *key, json_t *item,
                                   int d, int *depth_p)
{
    json_t *node = new_node(p, open->start);
    if (node == NULL || !set(p, node, "comp", item)) {
        if (node == NULL)
            json_decref(item);
        json_decref(key);
        return NULL;
    }
    if (key != NULL && !set(p, node, "key", key))
        return NULL;
    int deepest = d;
    /* The first clause's names, iterable and condition go into the node
     * itself; further ones, [x for row in m for x in row if x], each into
     * one of "more", {"var", ["names",] "iter", ["cond",] "col"}, nested in
     * order. */
    json_t *more = NULL;
    for (json_t *clause = node; clause != NULL;) {
        advance(p); /* for */
        /* parse_loop_target releases the node it is given when it fails:
         * it is given a reference of its own, dropped after a success, so
         * that the node (or the "more" array holding it) stays the owner */
        if (!parse_loop_target(p, json_incref(clause)))
            goto err_decref_node;
        json_decref(clause);
        if (!clause_rest(p, clause, &deepest))
            goto err_decref_node;
        clause = NULL;
        if (tok_is(p, &p->cur, "for")) {
            if ((clause = new_node(p, p->cur.start)) == NULL)
                goto err_decref_node;
            if (more == NULL && !set(p, node, "more", more = json_array())) {
                json_decref(clause);
                return NULL;
            }
            if (json_array_append_new(more, clause) != 0) {
                fail_nomem(p);
                goto err_decref_node;
            }
        }
    }
    if (!(key != NULL ? close_bracket(p, open, LAB__T_RBRACE, '{', '}')
                      : close_bracket(p, open, LAB__T_RBRACK, '[', ']')))
        goto err_decref_node;
    /* each further clause nests the evaluator one call deeper, as a
     * bracket would: counted as a level, so that the depth bound holds */
    if (!add_level(p, depth_p, deepest + (int)json_array_size(more), open->start))
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* One item of a display: an EXPR of a list, or a KEY ':' VALUE of a dict
 * (*v_p its VALUE). A set's {a, b} is refused at its first item. */
static json_t *display_item(parser_t *p, bool dict, bool first, json_t **v_p, int *depth_p)
{
    size_t key_at = p->cur.start;
    json_t *k = parse_expr(p, false, depth_p);
    if (k == NULL || !dict)
        return k;
    if (p->cur.kind != LAB__T_COLON) {
        json_decref(k);
        if (first && (p->cur.kind == LAB__T_COMMA || p->cur.kind == LAB__T_RBRACE ||
                      tok_is(p, &p->cur, "for")))
            fail_at(p, DL_ERR_INVALID, key_at,
                    "sets are not supported here: a dict is {key: value, ...}");
        else
            fail_expected(p, "':'", &p->cur);
        return NULL;
    }
    advance(p); /* ':' */
    int dv = 0;
    if ((*v_p = parse_expr(p, false, &dv)) == NULL) {
        json_decref(k);
        return NULL;
    }
    if (dv > *depth_p)
        *depth_p = dv;
    return k;
}

/* [EXPR, ...], a list: {"list": [EXPR...]}; or {KEY: VALUE, ...}, Python's
 * dict display: {"dict": [KEY, VALUE, KEY, VALUE, ...]}. Either may be a
 * comprehension, [EXPR for ...] or {KEY: VALUE for ...}. */
static json_t *parse_display(parser_t *p, bool dict, int *depth_p)
{
    const char *what = dict ? "dict" : "list";
    lab__tok_kind_t closer = dict ? LAB__T_RBRACE : LAB__T_RBRACK;
    lab__tok_t open = p->cur;
    if (!enter(p, open.start))
        return NULL;
    advance(p);
    json_t *node = new_node(p, open.start);
    json_t *items = node != NULL ? json_array() : NULL;
    if (node == NULL || !set(p, node, what, items))
        return NULL;
    size_t n = 0;
    int deepest = 0;
    while (p->cur.kind != closer) {
        if (at_end(p)) {
            fail_at(p, DL_ERR_INVALID, open.start, "unterminated %s", what);
            goto err_decref_node;
        }
        if (n >= p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, p->cur.start, "%s is too long (at most %zu items)", what,
                    p->lim->max_list);
            goto err_decref_node;
        }
        int d = 0;
        json_t *v = NULL, *e = display_item(p, dict, n == 0, &v, &d);
        if (e == NULL)
            goto err_decref_node;
        if (n == 0 && tok_is(p, &p->cur, "for")) {
            json_decref(node);
            return dict ? parse_comprehension(p, &open, e, v, d, depth_p)
                        : parse_comprehension(p, &open, NULL, e, d, depth_p);
        }
        if (json_array_append_new(items, e) != 0) {
            json_decref(v); /* the failed append took e */
            fail_nomem(p);
            goto err_decref_node;
        }
        if (v != NULL && json_array_append_new(items, v) != 0) {
            fail_nomem(p);
            goto err_decref_node;
        }
        if (d > deepest)
            deepest = d;
        n++;
        if (p->cur.kind == LAB__T_COMMA) {
            advance(p);
            continue;
        }
        if (p->cur.kind == closer)
            break;
        if (at_end(p)) {
            fail_at(p, DL_ERR_INVALID, open.start, "unterminated %s", what);
            goto err_decref_node;
        }
        fail_expected(p, dict ? "',' or '}'" : "',' or ']'", &p->cur);
        goto err_decref_node;
    }
    advance(p); /* the closer */
    p->nest--;
    if (!add_level(p, depth_p, deepest, open.start))
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* The bracket that closes open (kind closer): consumed, leaving its level of
 * nesting; otherwise "unclosed" at the opener when the line ended, or what
 * was expected at the token found. */
static bool close_bracket(parser_t *p, const lab__tok_t *open, lab__tok_kind_t kind, char opener,
                          char closer)
{
    if (p->cur.kind != kind) {
        char want[4] = {'\'', closer, '\'', '\0'};
        if (at_end(p))
            fail_at(p, DL_ERR_INVALID, open->start, "unclosed '%c'", opener);
        else
            fail_expected(p, want, &p->cur);
        return false;
    }
    advance(p);
    p->nest--;
    return true;
}

/* A tuple, Python's (a, b), (a,) or (): a list node marked "tuple", so
 * that torch's sizes read as torch writes them, randint(0, 10, (3,)).
 * p->cur is the ',' after the first item, or the ')' of "()" (first NULL). */
static json_t *parse_tuple(parser_t *p, const lab__tok_t *open, json_t *first, int *depth_p)
{
    json_t *node = new_node(p, open->start);
    json_t *items = node != NULL ? json_array() : NULL;
    if (node == NULL || !set(p, node, "list", items) || !set(p, node, "tuple", json_true())) {
        json_decref(first);
        return NULL;
    }
    if (first != NULL && json_array_append_new(items, first) != 0) {
        fail_nomem(p);
        goto err_decref_node;
    }
    int deepest = *depth_p;
    size_t n = first != NULL ? 1 : 0;
    while (first != NULL && p->cur.kind == LAB__T_COMMA) {
        advance(p);
        if (p->cur.kind == LAB__T_RPAREN)
            break; /* a trailing comma, as in (3,) */
        if (at_end(p))
            break; /* close_bracket says "unclosed '('" */
        if (n >= p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, p->cur.start, "tuple is too long (at most %zu items)",
                    p->lim->max_list);
            goto err_decref_node;
        }
        int d = 0;
        json_t *e = parse_expr(p, false, &d);
        if (e == NULL)
            goto err_decref_node;
        if (json_array_append_new(items, e) != 0) {
            fail_nomem(p);
            goto err_decref_node;
        }
        if (d > deepest)
            deepest = d;
        n++;
    }
    if (!close_bracket(p, open, LAB__T_RPAREN, '(', ')'))
        goto err_decref_node;
    *depth_p = 0;
    if (!add_level(p, depth_p, deepest, open->start))
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* '(' expr ')': no node of its own, but a level of nesting for the parser;
 * with a comma inside, or nothing, a tuple. */
static json_t *parse_group(parser_t *p, int *depth_p)
{
    lab__tok_t open = p->cur;
    if (!enter(p, open.start))
        return NULL;
    advance(p);
    if (p->cur.kind == LAB__T_RPAREN)
        return parse_tuple(p, &open, NULL, depth_p);
    if (at_end(p)) {
        fail_at(p, DL_ERR_INVALID, open.start, "unclosed '('");
        return NULL;
    }
    if (!expect_value(p, "("))
        return NULL;
    json_t *e = parse_expr(p, false, depth_p);
    if (e == NULL)
        return NULL;
    if (p->cur.kind == LAB__T_COMMA)
        return parse_tuple(p, &open, e, depth_p);
    if (!close_bracket(p, &open, LAB__T_RPAREN, '(', ')')) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* ---- torch. and dist. ----
 *
 * A line from a torch script names the shell's functions and commands with
 * their module: torch.arange, torch.manual_seed, torch.float32,
 * dist.all_reduce, torch.distributed.send, dist.ReduceOp.SUM (also
 * ReduceOp.SUM). The module is dropped and the name stands for itself, the
 * token of the line without its prefix; a name the module does not have
 * here is an error, never ignored. */

static bool is_prefix_tok(const parser_t *p, const lab__tok_t *tok)
{
    return tok_is(p, tok, "torch") || tok_is(p, tok, "dist") || tok_is(p, tok, "ReduceOp");
}

/* Whether a row is torch's under torch.: its torch spelling names torch
 * or a Tensor method, where a Python builtin's (len(s), print(...)) does
 * not, so torch.len is no name. */
static bool torch_spelled(const lab_cmd_t *c)
{
    return c->torch != NULL && (strstr(c->torch, "torch.") != NULL || strstr(c->torch, "Tensor."));
}

/* The names of dist. (or of torch. when dist is false), for a message and
 * for suggestions. */
static size_t module_names(bool dist, const char **names, size_t cap, char *list, size_t lcap)
{
    size_t n = 0, used = 0, all;
    const lab_cmd_t *rows = lab_cmd_all(&all);
    list[0] = '\0';
    for (size_t i = 0; i < all && n < cap; i++) {
        const lab_cmd_t *c = &rows[i];
        bool of_dist = c->category == LAB_CAT_P2P || c->category == LAB_CAT_COLLECTIVE;
        if (of_dist != dist || (c->flags & (LAB_CMD_SESSION | LAB_CMD_METHOD_ONLY)) ||
            c->torch == NULL || (!dist && !torch_spelled(c)))
            continue;
        names[n++] = c->name;
        if (used < lcap)
            used += (size_t)snprintf(list + used, lcap - used, "%s%s", used ? ", " : "", c->name);
    }
    if (dist && n < cap)
        names[n++] = "ReduceOp";
    return n;
}

/* "unknown name 'dist.foo'", with a suggestion from the module's names. */
static void fail_module_name(parser_t *p, const char *module, bool dist, const lab__tok_t *tok)
{
    const char *names[256];
    char list[400], shown[48];
    size_t n = module_names(dist, names, sizeof(names) / sizeof(names[0]), list, sizeof(list));
    short_name(p, tok, shown, sizeof(shown));
    char *key = strndup(tok_text(p, tok), tok->len);
    const char *near = key != NULL ? lab_suggest(key, names, n) : NULL;
    if (near != NULL)
        fail_at(p, DL_ERR_INVALID, tok->start, "unknown name '%s.%s'; did you mean '%s.%s'?",
                module, shown, module, near);
    else
        fail_at(p, DL_ERR_INVALID, tok->start,
                "unknown name '%s.%s' ('help' lists the names the shell knows)", module, shown);
    free(key);
}

/* The NAME after the '.' at p->cur, consumed into *tok; false (an error
 * recorded) when there is none. */
static bool dotted_name(parser_t *p, lab__tok_t *tok)
{
    advance(p); /* '.' */
    if (p->cur.kind != LAB__T_NAME) {
        fail_expected(p, "a name after '.'", &p->cur);
        return false;
    }
    *tok = p->cur;
    advance(p);
    return true;
}

/* p->cur is the '.' after torch.cuda: reads the function's name into tok,
 * one of those the shell has (eval_setup.c), or fails. */
static bool cuda_function(parser_t *p, lab__tok_t *tok)
{
    static const char *const fns[] = {"set_device", "current_device", "device_count",
                                      "is_available"};
    if (!dotted_name(p, tok))
        return false;
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        if (tok_is(p, tok, fns[i]))
            return true;
    char shown[48];
    short_name(p, tok, shown, sizeof(shown));
    fail_at(p, DL_ERR_INVALID, tok->start,
            "unknown name 'torch.cuda.%s'; torch.cuda has set_device, current_device, "
            "device_count and is_available here",
            shown);
    return false;
}

/* tok is torch, dist or ReduceOp and p->cur the '.' after it: reads the
 * qualified name and leaves in *tok the name it stands for. */
static bool resolve_prefix(parser_t *p, lab__tok_t *tok)
{
    bool torch = tok_is(p, tok, "torch"), dist = tok_is(p, tok, "dist");
    size_t module_start = tok->start;
    if (!dotted_name(p, tok))
        return false;
    if (torch && tok_is(p, tok, "distributed")) {
        if (p->cur.kind != LAB__T_DOT) {
            fail_expected(p, "'.' after 'torch.distributed'", &p->cur);
            return false;
        }
        if (!dotted_name(p, tok))
            return false;
        torch = false;
        dist = true;
    }
    if (!torch && (!dist || tok_is(p, tok, "ReduceOp"))) {
        /* ReduceOp.OP, or dist.ReduceOp.OP: the name "ReduceOp.OP", which
         * no variable can take (op=, and a ReduceOp as a value) */
        size_t rop_start = dist ? tok->start : module_start;
        if (dist) {
            if (p->cur.kind != LAB__T_DOT) {
                fail_expected(p, "'.' after 'ReduceOp'", &p->cur);
                return false;
            }
            if (!dotted_name(p, tok))
                return false;
        }
        char op[32];
        dl_op_t ignored;
        snprintf(op, sizeof(op), "%.*s", tok->len < 31 ? (int)tok->len : 31, tok_text(p, tok));
        if (tok->len >= 31 || dl_op_parse(op, &ignored) != DL_OK) {
            char shown[48];
            short_name(p, tok, shown, sizeof(shown));
            fail_at(p, DL_ERR_INVALID, tok->start, "unknown op 'ReduceOp.%s'; ops: %s", shown,
                    "SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR, BXOR");
            return false;
        }
        if (tok->start == rop_start + 9) { /* "ReduceOp." as written, no blanks */
            tok->len += 9;
            tok->start = rop_start;
        }
        return true;
    }
    /* A script's set-up, which the shell's ranks have done (dist's
     * init_process_group and the others), torch.device(...) and
     * torch.cuda.set_device(...) and the others keep their module: the
     * functions of that name, which the table (and so completion) leaves
     * out. */
    bool call = p->cur.kind == LAB__T_LPAREN;
    bool setup = dist && call &&
                 (tok_is(p, tok, "init_process_group") || tok_is(p, tok, "destroy_process_group") ||
                  tok_is(p, tok, "is_initialized") || tok_is(p, tok, "get_backend") ||
                  tok_is(p, tok, "is_available"));
    if (dist && tok_is(p, tok, "group") && p->cur.kind == LAB__T_DOT) {
        /* dist.group.WORLD, the world's group: a name that keeps its
         * module, as the set-up functions do */
        if (!dotted_name(p, tok))
            return false;
        if (!tok_is(p, tok, "WORLD")) {
            char shown[48];
            short_name(p, tok, shown, sizeof(shown));
            fail_at(p, DL_ERR_INVALID, tok->start,
                    "unknown name 'dist.group.%s'; dist.group has WORLD here", shown);
            return false;
        }
        tok->len += tok->start - module_start;
        tok->start = module_start;
        return true;
    }
    bool cuda = torch && tok_is(p, tok, "cuda") && p->cur.kind == LAB__T_DOT;
    if (setup || cuda || (torch && call && tok_is(p, tok, "device"))) {
        if (cuda && !cuda_function(p, tok))
            return false;
        tok->len += tok->start - module_start;
        tok->start = module_start;
        return true;
    }
    if (torch) {
        /* torch.float32, torch.long: dtypes (torch.float is one, not Python's
         * float()). */
        char name[32];
        dl_dtype_t ignored;
        snprintf(name, sizeof(name), "%.*s", tok->len < 31 ? (int)tok->len : 31, tok_text(p, tok));
        if (tok->len < 31 && dl_dtype_parse(name, &ignored) == DL_OK) {
            /* The dtype keeps its module, "torch.int": torch.int is int32
             * where Python's int (dtype=int) is int64 (kw_dtype). */
            if (tok->start == module_start + 6) {
                tok->len += 6;
                tok->start = module_start;
            }
            return true;
        }
    }
    /* torch.Tensor, the class (isinstance(x, torch.Tensor)) */
    if (torch && !call && tok_is(p, tok, "Tensor") && tok->start == module_start + 6) {
        tok->len += 6;
        tok->start = module_start;
        return true;
    }
    /* torch.sum, torch.max, torch.min, torch.all and torch.any keep their
     * module: the bare names are Python's builtins, which differ (of a
     * matrix, sum(m) adds its rows; all(t) is a bool, torch.all(t) a
     * tensor). So do torch.add and the other names a def may take. */
    if (torch && call && tok->start == module_start + 6 && torch_kept(tok_text(p, tok), tok->len)) {
        tok->len += 6;
        tok->start = module_start;
        return true;
    }
    const lab_cmd_t *entry = lab__cmd_findn(tok_text(p, tok), tok->len);
    bool of_dist =
        entry != NULL && (entry->category == LAB_CAT_P2P || entry->category == LAB_CAT_COLLECTIVE);
    /* torch.len is no more torch's than print is: a Python builtin's row
     * names no torch. spelling */
    if (entry != NULL && entry->torch != NULL && of_dist == dist &&
        !(entry->flags & (LAB_CMD_SESSION | LAB_CMD_METHOD_ONLY)) &&
        (!torch || torch_spelled(entry)))
        return true;
    if (torch && entry != NULL && of_dist) {
        char shown[48];
        short_name(p, tok, shown, sizeof(shown));
        fail_at(p, DL_ERR_INVALID, tok->start, "'%s' is torch.distributed's: write dist.%s", shown,
                shown);
        return false;
    }
    fail_module_name(p, torch ? "torch" : "dist", dist, tok);
    return false;
}

/* ---- strings ---- */

/* {"str": TEXT} for the bytes [from, to) of the line, escapes decoded. */
static json_t *string_node(parser_t *p, size_t col_pos, size_t from, size_t to, bool fstring)
{
    char *text = lab__string_value(p->lx.s, from, to, fstring);
    json_t *node = text != NULL ? new_node(p, col_pos) : NULL;
    if (node == NULL) {
        free(text);
        fail_nomem(p);
        return NULL;
    }
    json_t *v = json_string(text);
    free(text);
    return set(p, node, "str", v) ? node : NULL;
}

/* The expression of one {...} of an f-string, whose '{' is at brace: read
 * by the ordinary lexer over the line up to the f-string's closing quote
 * (at end), so its columns are the line's. Leaves *next_p after the '}'. */
static json_t *fstring_field(parser_t *p, size_t brace, size_t end, size_t *next_p, int *depth_p)
{
    lab__lex_init(&p->lx, p->lx.s, end);
    p->lx.pos = brace + 1;
    advance(p);
    const char *s = p->lx.s;
    bool closing = p->cur.kind == LAB__T_RBRACE;
    if (p->cur.kind == LAB__T_EOF || closing) {
        fail_at(p, DL_ERR_INVALID, brace,
                closing ? "f-string: empty expression not allowed" : "f-string: expecting '}'");
        return NULL;
    }
    if (!expect_value(p, "{"))
        return NULL;
    json_t *e = parse_expr(p, false, depth_p);
    if (e == NULL)
        return NULL;
    if (p->cur.kind == LAB__T_RBRACE) {
        *next_p = p->cur.start + 1;
        return e;
    }
    char conv = 0;
    size_t colon = 0;
    if (p->cur.kind == LAB__T_ERROR && s[p->cur.start] == '!') {
        /* {value!r}, {value!s:>8}: repr() or str() first */
        size_t bang = p->cur.start;
        conv = bang + 1 < end ? s[bang + 1] : 0;
        char after = bang + 2 < end ? s[bang + 2] : 0;
        if ((conv != 'r' && conv != 's' && conv != 'a') || (after != ':' && after != '}')) {
            json_decref(e);
            fail_at(p, DL_ERR_INVALID, bang,
                    "f-string: invalid conversion character: expected 's', 'r', or 'a'");
            return NULL;
        }
        if (after == '}') {
            json_t *node = new_node(p, brace + 1);
            if (node == NULL) {
                json_decref(e);
                return NULL;
            }
            char text[2] = {conv == 'a' ? 'r' : conv, '\0'};
            if (!set(p, node, "format", e) || !set(p, node, "conv", json_string(text)))
                return NULL;
            *next_p = bang + 3;
            return node;
        }
        colon = bang + 2;
    } else if (p->cur.kind == LAB__T_COLON) {
        colon = p->cur.start;
    }
    if (colon != 0) {
        /* {value:spec}: the spec is the text up to the '}', as Python
         * reads it (a field inside the spec is not taken). */
        size_t at = colon + 1, close = at;
        while (close < end && s[close] != '}' && s[close] != '{')
            close++;
        if (close >= end || s[close] == '{') {
            json_decref(e);
            fail_at(p, DL_ERR_INVALID, at,
                    close >= end ? "f-string: expecting '}'"
                                 : "f-string: a field inside a format spec is not supported");
            return NULL;
        }
        json_t *node = new_node(p, brace + 1);
        if (node == NULL) {
            json_decref(e);
            return NULL;
        }
        char text[2] = {conv == 'a' ? 'r' : conv, '\0'};
        if (!set(p, node, "format", e) || !set(p, node, "spec", json_stringn(s + at, close - at)) ||
            (conv != 0 && !set(p, node, "conv", json_string(text))))
            return NULL; /* set released node, e with it */
        *next_p = close + 1;
        return node;
    }
    json_decref(e);
    if (p->cur.kind == LAB__T_EOF)
        fail_at(p, DL_ERR_INVALID, brace, "f-string: expecting '}'");
    else
        fail_expected(p, "'}'", &p->cur);
    return NULL;
}

/* f"text {expr} text": {"fstr": [PART...]}, each part a {"str"} of the
 * text between fields or the expression of a field. tok is the FSTRING
 * token, already consumed. */
static json_t *parse_fstring(parser_t *p, const lab__tok_t *tok, int *depth_p)
{
    if (!enter(p, tok->start))
        return NULL;
    size_t from = tok->start + 1 + tok->quote, end = tok->start + tok->len - tok->quote;
    lab__lexer_t saved_lx = p->lx;
    lab__tok_t saved_cur = p->cur;
    json_t *node = new_node(p, tok->start), *parts = node != NULL ? json_array() : NULL;
    if (node == NULL || !set(p, node, "fstr", parts))
        return NULL;
    const char *s = p->lx.s;
    size_t lit = from, i = from;
    int deepest = 0;
    while (i <= end && p->st == DL_OK) {
        char c = i < end ? s[i] : '\0';
        if (i < end && c == '\\') {
            i = i + 2 < end ? i + 2 : end;
            continue;
        }
        if (i < end && (c == '{' || c == '}') && i + 1 < end && s[i + 1] == c) {
            i += 2;
            continue;
        }
        if (i < end && c == '}') {
            fail_at(p, DL_ERR_INVALID, i, "f-string: single '}' is not allowed");
            break;
        }
        if (i < end && c != '{') {
            i++;
            continue;
        }
        /* A field, or the end: the text before it is a part of its own. */
        if (i > lit) {
            json_t *part = string_node(p, lit, lit, i, true);
            if (part == NULL || json_array_append_new(parts, part) != 0) {
                fail_nomem(p);
                break;
            }
        }
        if (i == end)
            break;
        int d = 0;
        json_t *e = fstring_field(p, i, end, &i, &d);
        if (e == NULL || json_array_append_new(parts, e) != 0) {
            fail_nomem(p);
            break;
        }
        if (d > deepest)
            deepest = d;
        lit = i;
    }
    p->lx = saved_lx;
    p->cur = saved_cur;
    p->nest--;
    if (p->st != DL_OK || !add_level(p, depth_p, deepest, tok->start)) {
        json_decref(node);
        return NULL;
    }
    return node;
}

/* The rank's environment, where torchrun's variables are (RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
 * os.environ[KEY] is {"getenv": [KEY]}; os.environ.get(KEY[, DEFAULT])
 * and os.getenv(KEY[, DEFAULT]) are {"getenv": [KEY, DEFAULT?], "default":
 * true}; os.environ alone is {"environ": true}, its names. p->cur is the
 * '.' after os, at os_tok. */
static json_t *parse_os(parser_t *p, const lab__tok_t *os_tok, int *depth_p)
{
    lab__tok_t name;
    if (!dotted_name(p, &name))
        return NULL;
    bool environ_ = tok_is(p, &name, "environ");
    if (!environ_ && !tok_is(p, &name, "getenv")) {
        char shown[48];
        short_name(p, &name, shown, sizeof(shown));
        fail_at(p, DL_ERR_INVALID, name.start,
                "os.%s is not supported here: os.environ and os.getenv are", shown);
        return NULL;
    }
    json_t *node = new_node(p, os_tok->start), *args = NULL;
    if (node == NULL)
        return NULL;
    lab__tok_t open = p->cur;
    bool index = environ_ && open.kind == LAB__T_LBRACK;
    if (environ_ && open.kind == LAB__T_DOT) {
        lab__tok_t m;
        if (!dotted_name(p, &m))
            goto err;
        if (!tok_is(p, &m, "get")) {
            char shown[48];
            short_name(p, &m, shown, sizeof(shown));
            fail_at(p, DL_ERR_INVALID, m.start,
                    "os.environ.%s is not supported here: os.environ[KEY] and "
                    "os.environ.get(KEY, DEFAULT) are",
                    shown);
            goto err;
        }
        open = p->cur;
    } else if (environ_ && !index) {
        return set(p, node, "environ", json_true()) ? node : NULL;
    }
    if (!index && open.kind != LAB__T_LPAREN) {
        fail_expected(p, "'('", &open);
        goto err;
    }
    if (!set(p, node, "getenv", args = json_array()) ||
        (!index && !set(p, node, "default", json_true())))
        return NULL;
    if (!enter(p, open.start))
        goto err;
    advance(p);
    for (size_t n = 0; n < (index ? 1u : 2u); n++) {
        lab__tok_t next;
        peek(p, &next);
        bool named = n == 1 && tok_is(p, &p->cur, "default") && next.kind == LAB__T_EQ;
        if (named) {
            advance(p); /* os.getenv(KEY, default=VALUE), as Python takes it */
            advance(p);
        }
        if (!expect_value(p, n == 0 ? (index ? "[" : "(") : named ? "=" : ","))
            goto err;
        int d = 0;
        json_t *v = parse_expr(p, false, &d);
        if (v == NULL || json_array_append_new(args, v) != 0 ||
            !add_level(p, depth_p, d, open.start)) {
            if (v != NULL)
                fail_nomem(p);
            goto err;
        }
        if (index || n == 1 || p->cur.kind != LAB__T_COMMA)
            break; /* a third argument is close_bracket's "expected ')'" */
        advance(p);
    }
    if (!close_bracket(p, &open, index ? LAB__T_RBRACK : LAB__T_RPAREN, index ? '[' : '(',
                       index ? ']' : ')'))
        goto err;
    return node;

err:
    json_decref(node);
    return NULL;
}

/* The NAME of MODULE.NAME after the '.' at p->cur: its token, its text as
 * shown in messages and "MODULE.NAME". */
static bool module_member(parser_t *p, const char *module, lab__tok_t *name, char shown[48],
                          char fname[56])
{
    if (!dotted_name(p, name))
        return false;
    short_name(p, name, shown, 48);
    snprintf(fname, 56, "%s.%s", module, shown);
    return true;
}

/* {"call": fname, "args": [], "kwargs": {}} at `at`, or NULL (an error
 * recorded). */
static json_t *module_call_node(parser_t *p, size_t at, const char *fname)
{
    json_t *node = new_node(p, at);
    if (node == NULL)
        return NULL;
    if (!set(p, node, "call", json_string(fname)) || !set(p, node, "args", json_array()) ||
        !set(p, node, "kwargs", json_object()))
        return NULL; /* set freed node */
    return node;
}

/* The arguments of a module's function (math.NAME, random.NAME) into the
 * call node's args and kwargs: node, or NULL with node freed. */
static json_t *module_call_args(parser_t *p, const lab__tok_t *mod_tok, const char *fname,
                                json_t *node, int *depth_p)
{
    int d = 0;
    char owner[64];
    snprintf(owner, sizeof(owner), "%s()", fname);
    if (!parse_call_args(p, NULL, owner, fname, json_object_get(node, "args"),
                         json_object_get(node, "kwargs"), true, &d) ||
        !add_level(p, depth_p, d, mod_tok->start)) {
        json_decref(node);
        return NULL;
    }
    return node;
}

/* Python's math module: math.NAME(...) is {"call": "math.NAME", ...}
 * (lab/rank/eval_pymath.c), math.pi, math.e and math.tau are numbers, and
 * math.inf and math.nan float('inf') and float('nan'), which JSON cannot
 * hold as numbers. p->cur is the '.' after math, at math_tok. */
static json_t *parse_math(parser_t *p, const lab__tok_t *math_tok, int *depth_p)
{
    lab__tok_t name;
    char shown[48], fname[56];
    if (!module_member(p, "math", &name, shown, fname))
        return NULL;
    static const struct {
        const char *name;
        double v;
    } consts[] = {{"pi", M_PI}, {"e", M_E}, {"tau", 2 * M_PI}};
    for (size_t i = 0; i < sizeof(consts) / sizeof(consts[0]); i++) {
        if (!tok_is(p, &name, consts[i].name))
            continue;
        json_t *num = new_node(p, math_tok->start);
        return num != NULL && set(p, num, "num", json_real(consts[i].v)) &&
                       set(p, num, "float", json_true())
                   ? num
                   : NULL;
    }
    bool call = p->cur.kind == LAB__T_LPAREN && !p->cur.space_before;
    json_t *node = module_call_node(p, math_tok->start, call ? fname : "float");
    if (node == NULL)
        return NULL;
    if (!call && (tok_is(p, &name, "inf") || tok_is(p, &name, "nan"))) {
        json_t *word = new_node(p, name.start);
        if (word == NULL || !set(p, word, "str", json_string(shown)) ||
            json_array_append_new(json_object_get(node, "args"), word) != 0) {
            json_decref(node);
            return NULL;
        }
        return node;
    }
    if (!call) {
        fail_at(p, DL_ERR_INVALID, name.start,
                "math.%s is not supported here: math's functions, pi, e, tau, inf and nan are",
                shown);
        json_decref(node);
        return NULL;
    }
    return module_call_args(p, math_tok, fname, node, depth_p);
}

/* Whether the '.' at p->cur is followed by a name of Python's random
 * module (the shell's, and the common ones it refuses): random.seed(1) is
 * the module, where random.sum() or random.shape of a variable named
 * random is that variable's. */
static bool random_member_next(const parser_t *p)
{
    static const char *const names[] = {
        "seed",        "random", "uniform", "randint", "randrange",     "choice", "shuffle",
        "getrandbits", "gauss",  "sample",  "choices", "normalvariate", "Random"};
    lab__tok_t next;
    peek(p, &next);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (tok_is(p, &next, names[i]))
            return true;
    return false;
}

/* Python's random module: random.NAME(...) is {"call": "random.NAME", ...}
 * (lab/rank/eval_pyrandom.c). p->cur is the '.' after random, at mod_tok. */
static json_t *parse_random(parser_t *p, const lab__tok_t *mod_tok, int *depth_p)
{
    lab__tok_t name;
    char shown[48], fname[56];
    if (!module_member(p, "random", &name, shown, fname))
        return NULL;
    if (p->cur.kind != LAB__T_LPAREN || p->cur.space_before) {
        fail_at(p, DL_ERR_INVALID, name.start,
                "random.%s is not supported here: call one of random's functions, as "
                "random.random()",
                shown);
        return NULL;
    }
    json_t *node = module_call_node(p, mod_tok->start, fname);
    return node != NULL ? module_call_args(p, mod_tok, fname, node, depth_p) : NULL;
}

static json_t *parse_primary(parser_t *p, bool cmdarg, int *depth_p)
{
    lab__tok_t tok = p->cur;
    json_t *node;
    *depth_p = 0;
    switch (tok.kind) {
    case LAB__T_INT:
    case LAB__T_FLOAT:
        advance(p);
        node = new_node(p, tok.start);
        if (node == NULL)
            return NULL;
        if (tok.kind == LAB__T_INT)
            return set(p, node, "num", json_integer((json_int_t)tok.ival)) ? node : NULL;
        if (!set(p, node, "num", json_real(tok.fval)))
            return NULL;
        return set(p, node, "float", json_true()) ? node : NULL;
    case LAB__T_STRING:
        advance(p);
        return string_node(p, tok.start, tok.start + tok.quote, tok.start + tok.len - tok.quote,
                           false);
    case LAB__T_FSTRING:
        advance(p);
        return parse_fstring(p, &tok, depth_p);
    case LAB__T_NAME:
        advance(p);
        if (tok_is(p, &tok, "os") && p->cur.kind == LAB__T_DOT)
            return parse_os(p, &tok, depth_p);
        if (tok_is(p, &tok, "math") && p->cur.kind == LAB__T_DOT && !p->cur.space_before)
            return parse_math(p, &tok, depth_p);
        if (tok_is(p, &tok, "random") && p->cur.kind == LAB__T_DOT && !p->cur.space_before &&
            random_member_next(p))
            return parse_random(p, &tok, depth_p);
        if (is_prefix_tok(p, &tok) && p->cur.kind == LAB__T_DOT && !resolve_prefix(p, &tok))
            return NULL;
        if (tok_is(p, &tok, "true") || tok_is(p, &tok, "True") || tok_is(p, &tok, "false") ||
            tok_is(p, &tok, "False")) {
            node = new_node(p, tok.start);
            if (node == NULL)
                return NULL;
            bool v = tok_text(p, &tok)[0] == 't' || tok_text(p, &tok)[0] == 'T';
            return set(p, node, "bool", json_boolean(v)) ? node : NULL;
        }
        /* In a command's arguments "f (x)" is two arguments; see lang.h. */
        if (p->cur.kind == LAB__T_LPAREN && !(cmdarg && p->cur.space_before))
            return parse_call(p, &tok, depth_p);
        node = new_node(p, tok.start);
        if (node == NULL)
            return NULL;
        return set(p, node, "name", new_name_string(p, &tok)) ? node : NULL;
    case LAB__T_LBRACK:
    case LAB__T_LBRACE:
        return parse_display(p, tok.kind == LAB__T_LBRACE, depth_p);
    case LAB__T_LPAREN:
        return parse_group(p, depth_p);
    default:
        fail_unexpected(p, &tok);
        return NULL;
    }
}

/* The rest of a slice after its start (NULL when none was written); p->cur
 * is the first ':'. Returns {"slice": {"start", "stop", "step"}}, the parts
 * that were written. */
static json_t *parse_slice(parser_t *p, json_t *start, int *depth_p)
{
    json_t *wrap = json_object(), *sl = json_object();
    if (wrap == NULL || sl == NULL || json_object_set_new(wrap, "slice", sl) != 0 ||
        (start != NULL && json_object_set_new(sl, "start", start) != 0)) {
        json_decref(wrap);
        fail_nomem(p);
        return NULL;
    }
    static const char *const parts[] = {"stop", "step"};
    for (int k = 0; k < 2 && p->cur.kind == LAB__T_COLON; k++) {
        advance(p);
        if (p->cur.kind == LAB__T_RBRACK || p->cur.kind == LAB__T_COMMA || at_end(p) ||
            (k == 0 && p->cur.kind == LAB__T_COLON))
            continue; /* close_bracket (or the comma's check) says what is missing */
        if (!expect_value(p, ":"))
            goto err_decref_wrap;
        int d = 0;
        json_t *v = parse_expr(p, false, &d);
        if (v == NULL || json_object_set_new(sl, parts[k], v) != 0) {
            fail_nomem(p);
            goto err_decref_wrap;
        }
        if (d > *depth_p)
            *depth_p = d;
    }
    return wrap;

err_decref_wrap:
    json_decref(wrap);
    return NULL;
}

/* The names that may follow '.' after a value, for a message. */
static void method_names(char *buf, size_t cap, const char **names, size_t names_cap, size_t *n_p)
{
    size_t n = 0, used = 0, all;
    const lab_cmd_t *rows = lab_cmd_all(&all);
    buf[0] = '\0';
    for (size_t i = 0; i < all; i++) {
        if (!(rows[i].flags & LAB_CMD_METHOD))
            continue;
        if (n < names_cap)
            names[n] = rows[i].name;
        n++;
        if (used < cap)
            used +=
                (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", rows[i].name);
    }
    if (n_p != NULL)
        *n_p = n;
}

/* NAME.data (torch's t.data, the tensor itself) stands as NAME: skips
 * the attribute after a statement's first name, as parse_method drops it
 * in an expression. p->cur is what follows the name. */
static void skip_data_attr(parser_t *p)
{
    while (p->cur.kind == LAB__T_DOT) {
        lab__lexer_t lx = p->lx;
        lab__tok_t dot = p->cur;
        advance(p);
        if (p->cur.kind == LAB__T_NAME && tok_is(p, &p->cur, "data")) {
            advance(p);
            if (p->cur.kind != LAB__T_LPAREN)
                continue;
        }
        p->lx = lx; /* another attribute or method: read it as it was */
        p->cur = dot;
        return;
    }
}

/* VALUE.NAME(...) or VALUE.NAME: a method or an attribute of a tensor,
 * {"call": NAME, "self": VALUE, "args", "kwargs"} ("attr": true for an
 * attribute). p->cur is the '.'; self is consumed either way. */
static json_t *parse_method(parser_t *p, json_t *self, int *depth_p)
{
    lab__tok_t dot = p->cur;
    advance(p);
    lab__tok_t name = p->cur;
    if (name.kind != LAB__T_NAME) {
        fail_expected(p, "a method name after '.'", &name);
        goto err_decref_self;
    }
    advance(p);
    char fname[48];
    short_name(p, &name, fname, sizeof(fname));
    const lab_cmd_t *entry = lab__cmd_find_method(tok_text(p, &name), name.len);
    if (entry == NULL || !(entry->flags & (LAB_CMD_METHOD | LAB_CMD_OBJECT_METHOD))) {
        const char *cands[256];
        size_t n = 0;
        char list[320];
        method_names(list, sizeof(list), cands, sizeof(cands) / sizeof(cands[0]), &n);
        char *key = strndup(tok_text(p, &name), name.len);
        size_t ncands = n < sizeof(cands) / sizeof(cands[0]) ? n : sizeof(cands) / sizeof(cands[0]);
        const char *near = key != NULL ? lab_suggest(key, cands, ncands) : NULL;
        if (near != NULL)
            fail_at(p, DL_ERR_INVALID, name.start,
                    "a tensor has no method '%s' here; did you mean '%s'?", fname, near);
        else
            fail_at(p, DL_ERR_INVALID, name.start,
                    "a tensor has no method '%s' here (`help` lists its %zu methods and "
                    "attributes)",
                    fname, n);
        free(key);
        goto err_decref_self;
    }
    bool attr = (entry->flags & LAB_CMD_ATTRIBUTE) != 0;
    bool paren = p->cur.kind == LAB__T_LPAREN && !p->cur.space_before;
    if (attr && paren && strcmp(entry->name, "values") == 0)
        attr = false; /* a dict's d.values(), where the pair's is an attribute */
    if (attr && paren) {
        fail_at(p, DL_ERR_INVALID, p->cur.start, "'%s' is an attribute, not a method: write x.%s",
                fname, fname);
        goto err_decref_self;
    }
    if (strcmp(entry->name, "data") == 0)
        return self; /* t.data is t: reading it, writing through it, sending it */
    if (!attr && !paren) {
        fail_at(p, DL_ERR_INVALID, name.start, "'%s' is a method: call it, x.%s()", fname, fname);
        goto err_decref_self;
    }
    json_t *node = new_node(p, name.start);
    if (node == NULL || !set(p, node, "call", json_string(entry->name)))
        goto err_decref_self;
    if (!set(p, node, "self", self))
        return NULL;
    json_t *args = json_array(), *kwargs = json_object();
    if (!set(p, node, "args", args)) {
        json_decref(kwargs);
        return NULL;
    }
    if (!set(p, node, "kwargs", kwargs))
        return NULL;
    if (attr)
        return set(p, node, "attr", json_true()) && add_level(p, depth_p, *depth_p, dot.start)
                   ? node
                   : NULL;
    char owner[64];
    snprintf(owner, sizeof(owner), "%s()", fname);
    int d = 0;
    if (!parse_call_args(p, entry, owner, fname, args, kwargs, true, &d) ||
        !add_level(p, depth_p, d > *depth_p ? d : *depth_p, dot.start)) {
        json_decref(node);
        return NULL;
    }
    return node;

err_decref_self:
    json_decref(self);
    return NULL;
}

/* The dimensions after an ellipsis count from the last one: "dim" -k on
 * the index that takes the k-th dimension from the end (None: the one it
 * adds), the indices after it taking those after that one. The first
 * node of the brackets gets "indices", how many dimensions they take in
 * all, for torch's check against the tensor before any of them runs. */
static bool mark_ellipsis(parser_t *p, json_t *made, size_t ellipsis)
{
    json_int_t taken = 0;
    for (size_t i = json_array_size(made); i-- > 0;) {
        json_t *node = json_array_get(made, i);
        bool adds = json_object_get(node, "newaxis") != NULL;
        bool takes = !adds && json_object_get(node, "ellipsis") == NULL;
        taken += takes;
        if (i > ellipsis && json_object_set_new(node, "dim", json_integer(-taken - adds)) != 0) {
            fail_nomem(p);
            return false;
        }
    }
    if (json_object_set_new(json_array_get(made, 0), "indices", json_integer(taken)) != 0) {
        fail_nomem(p);
        return false;
    }
    return true;
}

/* The subscripts of e in one pair of brackets, whose '[' (open) the
 * parser has passed: m[1, 2] is m[1][2], each index a level of the AST.
 * An index takes the first dimension left, past those the indices before
 * it in the brackets kept ("dim": m[:, 1] takes dimension 1 of m[:], a
 * column; m[1, 2] has "dim" 0 on the 2). A slice keeps its dimension,
 * None adds one of size 1 where it stands ({"newaxis"}), and ... stands
 * for the dimensions no other index takes ({"ellipsis"}; see
 * mark_ellipsis). Takes e; NULL on failure. */
static json_t *parse_subscripts(parser_t *p, json_t *e, const lab__tok_t *open, int *depth_p)
{
    json_t *made = json_array(); /* this pair's nodes, for mark_ellipsis */
    if (made == NULL) {
        fail_nomem(p);
        goto err_decref_e;
    }
    int kept = 0;
    bool marks = false; /* a None or an ellipsis: "indices" on the first node */
    size_t ellipsis = SIZE_MAX;
    bool second = false; /* a second ellipsis, which only the end may follow */
    for (bool more = true, first = true; more; first = false) {
        int d = 0;
        json_t *at = NULL;
        const char *mark = NULL; /* "newaxis" or "ellipsis" */
        if (second) {
            /* torch moves past the first one's dimensions again at a
             * second one: the indices after it would take dimensions
             * beyond the last */
            fail_at(p, DL_ERR_INVALID, p->cur.start,
                    "an index after a second ellipsis ('...') is not supported");
            goto err_decref_e;
        }
        if (p->cur.kind == LAB__T_ELLIPSIS) {
            /* torch takes a second one at the end as taking no dimension
             * (m[..., 0, ...] is m[..., 0]), where numpy refuses it */
            second = ellipsis != SIZE_MAX;
            if (!second)
                ellipsis = json_array_size(made);
            mark = "ellipsis";
            advance(p);
        } else if (p->cur.kind != LAB__T_COLON) {
            if (!expect_value(p, first ? "[" : ","))
                goto err_decref_e;
            if ((at = parse_expr(p, false, &d)) == NULL)
                goto err_decref_e;
        }
        /* A slice, start:stop:step, each part optional: parse_slice's
         * wrapper, {"slice": ...}; an index that holds a slice (a[ix[1:]])
         * is an expression. */
        bool is_slice = mark == NULL && p->cur.kind == LAB__T_COLON;
        if (is_slice) {
            json_t *sl = parse_slice(p, at, &d);
            if (sl == NULL)
                goto err_decref_e;
            at = sl;
        }
        const char *word = json_string_value(json_object_get(at, "name"));
        if (word != NULL && strcmp(word, "None") == 0 &&
            json_object_size(at) == 2 + (json_object_get(at, "line") != NULL)) {
            mark = "newaxis";
            json_decref(at);
            at = NULL;
        }
        marks = marks || mark != NULL;
        more = p->cur.kind == LAB__T_COMMA;
        bool trailing = false; /* t[0,]: a tuple of one index, as Python reads it */
        if (more) {
            advance(p);
            trailing = p->cur.kind == LAB__T_RBRACK;
            more = !trailing;
        }
        if (!more && !close_bracket(p, open, LAB__T_RBRACK, '[', ']')) {
            json_decref(at);
            goto err_decref_e;
        }
        json_t *node = new_node(p, open->start);
        if (node == NULL) {
            json_decref(at);
            goto err_decref_e;
        }
        if (!set(p, node, "index", e)) {
            json_decref(at);
            goto err_decref_made;
        }
        if (mark != NULL ? !set(p, node, mark, json_true())
                         : !set(p, node, is_slice ? "slice" : "at",
                                is_slice ? json_incref(json_object_get(at, "slice")) : at)) {
            if (is_slice)
                json_decref(at); /* the wrapper, which set did not take */
            goto err_decref_made;
        }
        if (is_slice)
            json_decref(at);
        /* "dim" on every index after the first in its brackets, 0 when
         * nothing kept a dimension before it: m[a, b] is not m[a][b] where
         * a is a list or a tensor (torch pairs them), which the evaluator
         * then tells apart */
        if (!first && !set(p, node, "dim", json_integer(kept)))
            goto err_decref_made;
        /* a tensor takes t[i,] as t[i]; a list or a string refuses it */
        if (first && trailing && !set(p, node, "tuple", json_true()))
            goto err_decref_made;
        kept += is_slice || (mark != NULL && strcmp(mark, "newaxis") == 0);
        e = node;
        if (json_array_append(made, node) != 0) {
            fail_nomem(p);
            goto err_decref_e;
        }
        /* t[0][0]...: every index is a level of the AST. */
        if (!add_level(p, depth_p, d > *depth_p ? d : *depth_p, open->start))
            goto err_decref_e;
    }
    if (marks && !mark_ellipsis(p, made, ellipsis))
        goto err_decref_e;
    json_decref(made);
    return e;

err_decref_e:
    json_decref(e);
err_decref_made:
    json_decref(made);
    return NULL;
}

/* A call of what an expression gives, f(1)(2), fs[0](x), (lambda: 1)():
 * {"callee": EXPR, "args", "kwargs"}, placed where EXPR is; p->cur is the
 * '('. Takes e's reference. */
static json_t *parse_callee_call(parser_t *p, json_t *e, int *depth_p)
{
    json_t *node = json_object();
    if (node == NULL)
        json_decref(e);
    if (node == NULL || json_object_set_new(node, "callee", e) != 0) { /* takes e, failing too */
        json_decref(node);
        fail_nomem(p);
        return NULL;
    }
    const char *keys[] = {"col", "line"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(e, keys[i]);
        if (v != NULL && !set(p, node, keys[i], json_incref(v)))
            return NULL;
    }
    /* the callee is evaluated inside the call: one level more than either */
    int d = 0, callee_d = *depth_p;
    *depth_p = 0;
    if (!add_call_args(p, node, NULL, "the call", "the call", &d))
        return NULL;
    if (!add_level(p, depth_p, d > callee_d ? d : callee_d, p->cur.start)) {
        json_decref(node);
        return NULL;
    }
    return node;
}

static json_t *parse_postfix(parser_t *p, bool cmdarg, int *depth_p)
{
    json_t *e = parse_primary(p, cmdarg, depth_p);
    /* In a command's arguments "x [0]" and "f(1) (2)" are two arguments. */
    while (e != NULL && (p->cur.kind == LAB__T_DOT ||
                         ((p->cur.kind == LAB__T_LBRACK || p->cur.kind == LAB__T_LPAREN) &&
                          !(cmdarg && p->cur.space_before)))) {
        if (p->cur.kind == LAB__T_DOT) {
            e = parse_method(p, e, depth_p);
            continue;
        }
        if (p->cur.kind == LAB__T_LPAREN) {
            e = parse_callee_call(p, e, depth_p);
            continue;
        }
        lab__tok_t open = p->cur;
        if (!enter(p, open.start))
            goto err_decref_e;
        advance(p);
        if (at_end(p)) {
            fail_at(p, DL_ERR_INVALID, open.start, "unclosed '['");
            goto err_decref_e;
        }
        if ((e = parse_subscripts(p, e, &open, depth_p)) == NULL)
            return NULL;
    }
    return e;

err_decref_e:
    json_decref(e);
    return NULL;
}

static json_t *parse_unary(parser_t *p, bool cmdarg, int *depth_p);

/* Appends the operator {"op": text} at pos to a chain's ops; false (an
 * error recorded) when memory runs out. */
static bool add_op(parser_t *p, json_t *ops, size_t pos, const char *text)
{
    json_t *op_node = new_node(p, pos);
    if (op_node == NULL || !set(p, op_node, "op", json_string(text)))
        return false;
    if (json_array_append_new(ops, op_node) != 0) {
        fail_nomem(p);
        return false;
    }
    return true;
}

/* base ** exponent: tighter than unary minus on its left, right associative,
 * as in Python (-2 ** 2 is -4, 2 ** -1 is 0.5, 2 ** 3 ** 2 is 2 ** 9). */
static json_t *parse_power(parser_t *p, bool cmdarg, int *depth_p)
{
    json_t *base = parse_postfix(p, cmdarg, depth_p);
    if (base == NULL || p->cur.kind != LAB__T_POW)
        return base;
    lab__tok_t op = p->cur;
    advance(p);
    json_t *node = new_node(p, op.start);
    json_t *terms = node != NULL ? json_array() : NULL;
    if (node == NULL || !set(p, node, "chain", terms) || json_array_append_new(terms, base) != 0) {
        if (node == NULL || terms == NULL)
            json_decref(base);
        fail_nomem(p);
        return NULL;
    }
    json_t *ops = json_array();
    if (!set(p, node, "ops", ops))
        return NULL;
    if (!add_op(p, ops, op.start, "**"))
        goto err_decref_node;
    if (!expect_value(p, "**") || !enter(p, op.start))
        goto err_decref_node;
    int d = 0;
    json_t *exp = parse_unary(p, cmdarg, &d);
    p->nest--;
    if (exp == NULL || json_array_append_new(terms, exp) != 0) {
        fail_nomem(p);
        goto err_decref_node;
    }
    if (!add_level(p, depth_p, d > *depth_p ? d : *depth_p, op.start))
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* A prefix operator at p->cur (text: '-' or 'not'), then its operand
 * from operand: {key: OPERAND}, a level of nesting. */
static json_t *parse_prefix(parser_t *p, const char *text, const char *key,
                            json_t *(*operand)(parser_t *, bool, int *), bool cmdarg, int *depth_p)
{
    lab__tok_t op = p->cur;
    advance(p);
    if (!expect_value(p, text) || !enter(p, op.start))
        return NULL;
    int d = 0;
    json_t *e = operand(p, cmdarg, &d);
    p->nest--;
    if (e == NULL)
        return NULL;
    json_t *node = new_node(p, op.start);
    if (node == NULL) {
        json_decref(e);
        return NULL;
    }
    if (!set(p, node, key, e)) /* set frees both when it fails */
        return NULL;
    *depth_p = 0;
    if (!add_level(p, depth_p, d, op.start)) {
        json_decref(node);
        return NULL;
    }
    return node;
}

static json_t *parse_unary(parser_t *p, bool cmdarg, int *depth_p)
{
    if (p->cur.kind == LAB__T_TILDE) /* ~mask: {"invert": X}, as - is {"neg": X} */
        return parse_prefix(p, "~", "invert", parse_unary, cmdarg, depth_p);
    if (p->cur.kind == LAB__T_PLUS) /* +x: {"pos": X} */
        return parse_prefix(p, "+", "pos", parse_unary, cmdarg, depth_p);
    if (p->cur.kind != LAB__T_MINUS)
        return parse_power(p, cmdarg, depth_p);
    return parse_prefix(p, "-", "neg", parse_unary, cmdarg, depth_p);
}

/* A node at pos holding an empty array at key, *arr_p; NULL (an error
 * recorded) when memory runs out. */
static json_t *array_node(parser_t *p, size_t pos, const char *key, json_t **arr_p)
{
    json_t *node = new_node(p, pos);
    json_t *arr = node != NULL ? json_array() : NULL;
    if (arr == NULL) {
        fail_nomem(p);
        json_decref(node);
        return NULL;
    }
    if (!set(p, node, key, arr)) /* set frees both when it fails */
        return NULL;
    *arr_p = arr;
    return node;
}

/* A flat node of operands at pos: {key: [first]}, the run's first term;
 * NULL (first freed, an error recorded) when memory runs out. *terms_p
 * gets the array the next operands go into. */
static json_t *flat_node(parser_t *p, size_t pos, const char *key, json_t *first, json_t **terms_p)
{
    json_t *node = array_node(p, pos, key, terms_p);
    if (node == NULL) {
        json_decref(first);
        return NULL;
    }
    if (json_array_append_new(*terms_p, first) != 0) { /* it took first */
        fail_nomem(p);
        json_decref(node);
        return NULL;
    }
    return node;
}

/* Appends the next operand of a flat run (parsed d levels deep) to terms;
 * false (an error recorded) when there is none, or no memory for it. */
static bool add_operand(parser_t *p, json_t *terms, json_t *operand, int d, int *depth_p)
{
    if (operand == NULL)
        return false;
    if (json_array_append_new(terms, operand) != 0) {
        fail_nomem(p);
        return false;
    }
    if (d > *depth_p)
        *depth_p = d;
    return true;
}

/* Both precedence levels of the left-associative binary operators:
 * level 0 is + and -, level 1 is *, /, //, % and @. A run of operators of one level,
 * a + b - c + ..., becomes one flat "chain" node rather than a tree as deep
 * as the run is long: a long sum is not nesting, and a flat node keeps the
 * AST (and whatever walks it, the evaluator and the JSON coder of the
 * control channel) as shallow as the brackets and minus signs written. */
static json_t *parse_binary(parser_t *p, int level, bool cmdarg, int *depth_p)
{
    lab__tok_kind_t a = level == 0 ? LAB__T_PLUS : LAB__T_STAR;
    lab__tok_kind_t b = level == 0 ? LAB__T_MINUS : LAB__T_SLASH;
    lab__tok_kind_t c = level == 0 ? LAB__T_MINUS : LAB__T_PERCENT;
    lab__tok_kind_t e = level == 0 ? LAB__T_MINUS : LAB__T_AT;
    lab__tok_kind_t f = level == 0 ? LAB__T_MINUS : LAB__T_FLOORDIV;
    json_t *first =
        level == 0 ? parse_binary(p, 1, cmdarg, depth_p) : parse_unary(p, cmdarg, depth_p);
    if (first == NULL || (p->cur.kind != a && p->cur.kind != b && p->cur.kind != c &&
                          p->cur.kind != e && p->cur.kind != f))
        return first;
    json_t *terms = NULL, *ops = NULL;
    json_t *node = flat_node(p, p->cur.start, "chain", first, &terms);
    if (node == NULL || !set(p, node, "ops", ops = json_array()))
        return NULL;
    while (p->cur.kind == a || p->cur.kind == b || p->cur.kind == c || p->cur.kind == e ||
           p->cur.kind == f) {
        lab__tok_t op = p->cur;
        advance(p);
        char text[3] = {tok_text(p, &op)[0], op.kind == LAB__T_FLOORDIV ? '/' : '\0', '\0'};
        if (!expect_value(p, text))
            goto err_decref_node;
        if (!add_op(p, ops, op.start, text))
            goto err_decref_node;
        int d = 0;
        json_t *rhs = level == 0 ? parse_binary(p, 1, cmdarg, &d) : parse_unary(p, cmdarg, &d);
        if (!add_operand(p, terms, rhs, d, depth_p))
            goto err_decref_node;
    }
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* The text of the bitwise operator of level (| ^ & or a shift) that
 * p->cur is, or NULL. */
static const char *bit_op(const parser_t *p, int level)
{
    static const char *const ops[4][3] = {{"|"}, {"^"}, {"&"}, {"<<", ">>"}};
    if (p->cur.kind != LAB__T_BITOP)
        return NULL;
    for (int k = 0; ops[level][k] != NULL; k++)
        if (p->cur.len == strlen(ops[level][k]) &&
            strncmp(tok_text(p, &p->cur), ops[level][k], p->cur.len) == 0)
            return ops[level][k];
    return NULL;
}

/* The bitwise operators, between the comparisons and + and - as in
 * Python: level 0 is |, 1 is ^, 2 is &, 3 the shifts << and >>, each a
 * flat "chain" as the arithmetic levels are (a & b & c is one node of
 * three terms). */
static json_t *parse_bitwise(parser_t *p, int level, bool cmdarg, int *depth_p)
{
    json_t *first = level == 3 ? parse_binary(p, 0, cmdarg, depth_p)
                               : parse_bitwise(p, level + 1, cmdarg, depth_p);
    if (first == NULL || bit_op(p, level) == NULL)
        return first;
    json_t *terms = NULL, *list = NULL;
    json_t *node = flat_node(p, p->cur.start, "chain", first, &terms);
    if (node == NULL || !set(p, node, "ops", list = json_array()))
        return NULL;
    const char *text;
    while ((text = bit_op(p, level)) != NULL) {
        if (!add_op(p, list, p->cur.start, text))
            goto err_decref_node;
        advance(p);
        if (!expect_value(p, text))
            goto err_decref_node;
        int d = 0;
        json_t *rhs =
            level == 3 ? parse_binary(p, 0, cmdarg, &d) : parse_bitwise(p, level + 1, cmdarg, &d);
        if (!add_operand(p, terms, rhs, d, depth_p))
            goto err_decref_node;
    }
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* The comparison operator p->cur starts, its text in buf (<, ==, in,
 * not in, is, is not) and the number of tokens it spans in *ntok; NULL
 * where p->cur starts none (or, at the top of a space-style command's
 * argument, is a word: reduce_scatter out in takes a variable in). */
static const char *compare_op(const parser_t *p, bool cmdarg, char buf[8], int *ntok)
{
    lab__tok_t next;
    *ntok = 1;
    if (p->cur.kind == LAB__T_CMP && p->cur.len < 8) {
        memcpy(buf, tok_text(p, &p->cur), p->cur.len);
        buf[p->cur.len] = '\0';
        return buf;
    }
    if (cmdarg)
        return NULL; /* reduce_scatter out in: words there are arguments */
    if (tok_is(p, &p->cur, "in"))
        return strcpy(buf, "in");
    if (tok_is(p, &p->cur, "is")) {
        peek(p, &next);
        *ntok = tok_is(p, &next, "not") ? 2 : 1;
        return strcpy(buf, *ntok == 2 ? "is not" : "is");
    }
    if (tok_is(p, &p->cur, "not")) {
        peek(p, &next);
        *ntok = 2;
        return tok_is(p, &next, "in") ? strcpy(buf, "not in") : NULL;
    }
    return NULL;
}

/* A comparison, or what binds tighter. A run of them, a < b <= c or x not
 * in l, is a flat "chain" node as the arithmetic ones are, its ops all
 * comparisons (the evaluator tells them apart by the first); below + and
 * - as in Python. */
static json_t *parse_compare(parser_t *p, bool cmdarg, int *depth_p)
{
    *depth_p = 0;
    char text[8];
    int ntok = 0;
    json_t *lhs = parse_bitwise(p, 0, cmdarg, depth_p);
    if (lhs == NULL || compare_op(p, cmdarg, text, &ntok) == NULL)
        return lhs;
    json_t *terms = NULL, *ops = NULL;
    json_t *node = flat_node(p, p->cur.start, "chain", lhs, &terms);
    if (node == NULL || !set(p, node, "ops", ops = json_array()))
        return NULL;
    while (compare_op(p, cmdarg, text, &ntok) != NULL) {
        if (!add_op(p, ops, p->cur.start, text))
            goto err_decref_node;
        for (int k = 0; k < ntok; k++)
            advance(p);
        if (!expect_value(p, text))
            goto err_decref_node;
        if (p->cur.kind == LAB__T_NAME &&
            (is_keyword_tok(p, &p->cur) || tok_is(p, &p->cur, "not") || tok_is(p, &p->cur, "and") ||
             tok_is(p, &p->cur, "or") || tok_is(p, &p->cur, "is"))) {
            /* x = 1 in in, 1 in not l: Python's syntax error */
            fail_at(p, DL_ERR_INVALID, p->cur.start, "expected a value after '%s'", text);
            goto err_decref_node;
        }
        int d = 0;
        json_t *rhs = parse_bitwise(p, 0, cmdarg, &d);
        if (!add_operand(p, terms, rhs, d, depth_p))
            goto err_decref_node;
    }
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* not X: {"not": X}, looser than comparisons as in Python; a level of
 * nesting, as a unary minus is. */
static json_t *parse_not(parser_t *p, bool cmdarg, int *depth_p)
{
    if (p->cur.kind != LAB__T_NAME || !tok_is(p, &p->cur, "not"))
        return parse_compare(p, cmdarg, depth_p);
    return parse_prefix(p, "not", "not", parse_not, cmdarg, depth_p);
}

/* A and B and C, A or B: {"bool_op": "and", "args": [A, B, C]}, flat as a
 * chain is (a long run is not nesting); and binds tighter than or. level
 * 1: and, level 0: or. */
static json_t *parse_bool(parser_t *p, int level, bool cmdarg, int *depth_p)
{
    const char *word = level == 0 ? "or" : "and";
    json_t *first = level == 0 ? parse_bool(p, 1, cmdarg, depth_p) : parse_not(p, cmdarg, depth_p);
    if (first == NULL || p->cur.kind != LAB__T_NAME || !tok_is(p, &p->cur, word))
        return first;
    json_t *args = NULL;
    json_t *node = flat_node(p, p->cur.start, "args", first, &args);
    if (node == NULL || !set(p, node, "bool_op", json_string(word)))
        return NULL;
    while (p->cur.kind == LAB__T_NAME && tok_is(p, &p->cur, word)) {
        advance(p);
        if (!expect_value(p, word))
            goto err_decref_node;
        int d = 0;
        json_t *next = level == 0 ? parse_bool(p, 1, cmdarg, &d) : parse_not(p, cmdarg, &d);
        if (!add_operand(p, args, next, d, depth_p))
            goto err_decref_node;
    }
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* A if C else B: {"if_exp": [[C, A]], "else": B}, looser than or, as in
 * Python. B may be another (A if C else B if D else E): the run is flat,
 * {"if_exp": [[C, A], [D, B]], "else": E}, each condition tried in turn,
 * as a chain of operators is flat. first (its depth d) is the A, taken
 * over; p->cur is the 'if'. */
static json_t *parse_if_exp(parser_t *p, json_t *first, bool cmdarg, int *depth_p)
{
    json_t *cases = NULL;
    json_t *node = array_node(p, p->cur.start, "if_exp", &cases);
    if (node == NULL) {
        json_decref(first);
        return NULL;
    }
    json_t *value = first;
    for (;;) {
        advance(p); /* if */
        int d = 0;
        json_t *cond = expect_value(p, "if") ? parse_bool(p, 0, cmdarg, &d) : NULL;
        if (cond == NULL) {
            json_decref(value);
            goto err_decref_node;
        }
        if (d > *depth_p)
            *depth_p = d;
        json_t *pair = json_pack("[oo]", cond, value); /* takes both */
        if (pair == NULL || json_array_append_new(cases, pair) != 0) {
            fail_nomem(p);
            goto err_decref_node;
        }
        if (!tok_is(p, &p->cur, "else")) {
            fail_expected(p, "'else' (A if C else B)", &p->cur);
            goto err_decref_node;
        }
        advance(p); /* else */
        if (!expect_value(p, "else"))
            goto err_decref_node;
        d = 0;
        json_t *next = parse_bool(p, 0, cmdarg, &d);
        if (next == NULL)
            goto err_decref_node;
        if (d > *depth_p)
            *depth_p = d;
        if (p->cur.kind != LAB__T_NAME || !tok_is(p, &p->cur, "if"))
            return set(p, node, "else", next) ? node : NULL;
        value = next;
    }

err_decref_node:
    json_decref(node);
    return NULL;
}

/* An expression. cmdarg marks the top level of a space-style command
 * argument, where a blank before '[' or '(' ends the argument. */
static json_t *parse_lambda(parser_t *p, int *depth_p);

static json_t *parse_expr(parser_t *p, bool cmdarg, int *depth_p)
{
    *depth_p = 0;
    if (p->cur.kind == LAB__T_NAME && tok_is(p, &p->cur, "lambda"))
        return parse_lambda(p, depth_p);
    json_t *first = parse_bool(p, 0, cmdarg, depth_p);
    if (first == NULL || p->cur.kind != LAB__T_NAME || !tok_is(p, &p->cur, "if"))
        return first;
    return parse_if_exp(p, first, cmdarg, depth_p);
}

/* An expression that an 'if' may follow without starting A if C else B: a
 * comprehension's iterable and its condition, as in Python's grammar. */
static json_t *parse_disjunction(parser_t *p, int *depth_p)
{
    *depth_p = 0;
    return parse_bool(p, 0, false, depth_p);
}

/* ---- commands ---- */

static json_t *parse_words(parser_t *p, json_t *cmd, const lab__tok_t *name_tok)
{
    json_t *words = json_array(), *cols = json_array();
    if (!set(p, cmd, "words", words)) {
        json_decref(cols);
        return NULL;
    }
    if (!set(p, cmd, "word_cols", cols))
        return NULL;
    /* words[0] is the command's own name, as argv[0] is a program's. */
    json_t *name = json_stringn(tok_text(p, name_tok), name_tok->len);
    if (name == NULL || json_array_append_new(words, name) != 0 ||
        json_array_append_new(cols, json_integer(col_of(p, name_tok->start))) != 0) {
        fail_nomem(p);
        goto err_decref_cmd;
    }
    /* Re-read what follows the name in word mode; the expression-mode token
     * already in p->cur is dropped unread. */
    p->lx.pos = name_tok->start + name_tok->len;
    for (;;) {
        lab__tok_t tok;
        lab__lex_word(&p->lx, &tok);
        if (tok.kind == LAB__T_ERROR) {
            fail_lex(p, &tok);
            goto err_decref_cmd;
        }
        if (tok.kind != LAB__T_WORD) {
            p->cur = tok;
            return cmd;
        }
        if (json_array_size(words) > p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, tok.start, "too many words (at most %zu)", p->lim->max_list);
            goto err_decref_cmd;
        }
        size_t skip = tok.quoted ? 1 : 0;
        json_t *w = json_stringn(tok_text(p, &tok) + skip, tok.len - 2 * skip);
        if (w == NULL || json_array_append_new(words, w) != 0 ||
            json_array_append_new(cols, json_integer(col_of(p, tok.start))) != 0) {
            fail_nomem(p);
            goto err_decref_cmd;
        }
    }

err_decref_cmd:
    json_decref(cmd);
    return NULL;
}

/* Space-style arguments: items separated by blanks up to ';' or the end. */
static bool parse_space_args(parser_t *p, const lab_cmd_t *entry, json_t *args, json_t *kwargs)
{
    size_t n = 0;
    while (!at_end(p)) {
        if (n >= p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, p->cur.start, "too many arguments (at most %zu)",
                    p->lim->max_list);
            return false;
        }
        lab__tok_t next;
        peek(p, &next);
        int d = 0;
        if (p->cur.kind == LAB__T_NAME && next.kind == LAB__T_EQ) {
            if (!parse_kwarg(p, entry, entry->name, kwargs, true, &d))
                return false;
        } else if (p->cur.kind == LAB__T_COMMA) {
            fail_at(p, DL_ERR_INVALID, p->cur.start,
                    "unexpected ','; command arguments are separated by blanks");
            return false;
        } else {
            if (!starts_expr(&p->cur)) {
                fail_unexpected(p, &p->cur);
                return false;
            }
            json_t *e = parse_expr(p, true, &d);
            if (e == NULL)
                return false;
            if (json_array_append_new(args, e) != 0) {
                fail_nomem(p);
                return false;
            }
        }
        n++;
    }
    return true;
}

static size_t node_pos(const json_t *node)
{
    json_int_t col = json_integer_value(json_object_get(node, "col"));
    return col > 0 ? (size_t)col - 1 : 0;
}

/* The call form's arguments as torch.distributed binds them: the tensors
 * given by name (send(tensor=t, dst=1)) become positional, positional
 * arguments after the tensors become the keywords of their parameters
 * (send(t, 1) is send(t, dst=1)). See lab__cmd_params. */
static bool bind_params(parser_t *p, const lab_cmd_t *entry, json_t *args, json_t *kwargs)
{
    size_t nargs, nparams = 0;
    const char *const *params = lab__cmd_params(entry, &nargs);
    if (params == NULL)
        return true;
    while (params[nparams] != NULL)
        nparams++;
    for (size_t j = 0; j < nargs; j++) {
        json_t *v = json_object_get(kwargs, params[j]);
        if (v == NULL)
            continue;
        if (json_array_size(args) > j) {
            fail_at(p, DL_ERR_INVALID, node_pos(v), "%s() got multiple values for argument '%s'",
                    entry->name, params[j]);
            return false;
        }
        if (json_array_size(args) < j) {
            fail_at(p, DL_ERR_INVALID, node_pos(v), "%s() is missing its argument '%s'",
                    entry->name, params[json_array_size(args)]);
            return false;
        }
        if (json_array_append(args, v) != 0 || json_object_del(kwargs, params[j]) != 0) {
            fail_nomem(p);
            return false;
        }
    }
    for (size_t i = nargs; i < json_array_size(args); i++) {
        json_t *v = json_array_get(args, i);
        if (i >= nparams) {
            fail_at(p, DL_ERR_INVALID, node_pos(v), "%s() takes at most %zu positional arguments",
                    entry->name, nparams);
            return false;
        }
        if (json_object_get(kwargs, params[i]) != NULL) {
            fail_at(p, DL_ERR_INVALID, node_pos(v), "%s() got multiple values for argument '%s'",
                    entry->name, params[i]);
            return false;
        }
        if (json_object_set(kwargs, params[i], v) != 0) {
            fail_nomem(p);
            return false;
        }
    }
    while (json_array_size(args) > nargs) {
        if (json_array_remove(args, nargs) != 0) {
            fail_nomem(p);
            return false;
        }
    }
    return true;
}

/* A command; name_tok is its name and p->cur the token after it. */
static json_t *parse_command(parser_t *p, const lab__tok_t *name_tok, const lab_cmd_t *entry)
{
    json_t *cmd = new_node(p, name_tok->start);
    if (cmd == NULL || !set(p, cmd, "cmd", json_string(entry->name)))
        return NULL;
    if (entry->flags & LAB_CMD_RAW_WORDS)
        return parse_words(p, cmd, name_tok);
    json_t *args = json_array(), *kwargs = json_object();
    if (!set(p, cmd, "args", args)) {
        json_decref(kwargs);
        return NULL;
    }
    if (!set(p, cmd, "kwargs", kwargs))
        return NULL;
    bool ok;
    if (p->cur.kind == LAB__T_LPAREN && !p->cur.space_before) {
        /* Torch style, all_reduce(t, op=sum): the call's rules apply, and
         * torch's parameters bind as Python binds them. */
        int d = 0;
        ok = parse_call_args(p, entry, entry->name, entry->name, args, kwargs,
                             strcmp(entry->name, "print") == 0, &d) &&
             bind_params(p, entry, args, kwargs);
        /* print() writes an empty line, where print alone asks what */
        if (ok && json_array_size(args) == 0 && json_object_size(kwargs) == 0 &&
            strcmp(entry->name, "print") == 0)
            ok = set(p, cmd, "empty_call", json_true());
    } else {
        ok = parse_space_args(p, entry, args, kwargs);
    }
    if (!ok) {
        json_decref(cmd);
        return NULL;
    }
    return cmd;
}

/* ---- statements ---- */

static bool parse_rank(parser_t *p, const char *after, int64_t *rank_p)
{
    lab__tok_t tok = p->cur;
    if (tok.kind == LAB__T_ERROR) {
        fail_lex(p, &tok);
        return false;
    }
    if (tok.kind == LAB__T_MINUS || tok.kind == LAB__T_FLOAT) {
        fail_at(p, DL_ERR_INVALID, tok.start, "ranks are non-negative integers");
        return false;
    }
    if (tok.kind != LAB__T_INT) {
        fail_at(p, DL_ERR_INVALID, tok.start, "expected a rank after '%s'", after);
        return false;
    }
    if (tok.ival > p->lim->max_rank) {
        fail_at(p, DL_ERR_TOO_BIG, tok.start, "rank %lld is too large (at most %lld)",
                (long long)tok.ival, (long long)p->lim->max_rank);
        return false;
    }
    *rank_p = tok.ival;
    advance(p);
    return true;
}

/* 'on' ranks: a sorted array of distinct ranks. p->cur is the 'on'. A
 * bitmap catches duplicates across ranges and yields the ranks in order. */
static json_t *parse_targets(parser_t *p)
{
    size_t words = (size_t)p->lim->max_rank / 64 + 1;
    uint64_t *seen = calloc(words, sizeof(*seen));
    if (seen == NULL) {
        fail_nomem(p);
        return NULL;
    }
    json_t *ranks = NULL;
    const char *after = "on";
    advance(p);
    for (;;) {
        lab__tok_t first = p->cur;
        int64_t lo, hi;
        if (!parse_rank(p, after, &lo))
            goto out_free_seen;
        hi = lo;
        if (p->cur.kind == LAB__T_MINUS) {
            advance(p);
            if (!parse_rank(p, "-", &hi))
                goto out_free_seen;
            if (hi < lo) {
                fail_at(p, DL_ERR_INVALID, first.start, "rank range %lld-%lld is reversed",
                        (long long)lo, (long long)hi);
                goto out_free_seen;
            }
        }
        if ((size_t)(hi - lo) + 1 > p->lim->max_targets - p->targets_total) {
            fail_at(p, DL_ERR_TOO_BIG, first.start,
                    "too many target ranks on one line (at most %zu)", p->lim->max_targets);
            goto out_free_seen;
        }
        for (int64_t r = lo; r <= hi; r++) {
            uint64_t bit = (uint64_t)1 << (r % 64);
            if (seen[r / 64] & bit) {
                fail_at(p, DL_ERR_INVALID, first.start, "rank %lld is listed twice", (long long)r);
                goto out_free_seen;
            }
            seen[r / 64] |= bit;
        }
        p->targets_total += (size_t)(hi - lo) + 1;
        if (p->cur.kind != LAB__T_COMMA)
            break;
        advance(p);
        after = ",";
    }
    ranks = json_array();
    if (ranks == NULL) {
        fail_nomem(p);
        goto out_free_seen;
    }
    for (size_t w = 0; w < words; w++) {
        for (uint64_t bits = seen[w]; bits != 0; bits &= bits - 1) {
            int64_t r = (int64_t)(w * 64) + __builtin_ctzll(bits);
            if (json_array_append_new(ranks, json_integer((json_int_t)r)) != 0) {
                fail_nomem(p);
                json_decref(ranks);
                ranks = NULL;
                goto out_free_seen;
            }
        }
    }
out_free_seen:
    free(seen);
    return ranks;
}

/* Why a statement cannot start with name_tok (p->cur is the token after it). */
static void fail_not_command(parser_t *p, const lab__tok_t *name_tok, const lab_cmd_t *entry)
{
    const lab__tok_t *next = &p->cur;
    bool looks_like_command =
        next->kind == LAB__T_EOF || next->kind == LAB__T_SEMI || next->kind == LAB__T_NAME ||
        next->kind == LAB__T_INT || next->kind == LAB__T_FLOAT || next->kind == LAB__T_ERROR ||
        ((next->kind == LAB__T_LBRACK || next->kind == LAB__T_LPAREN) && next->space_before);
    if (entry == NULL && looks_like_command) {
        char shown[48];
        short_name(p, name_tok, shown, sizeof(shown));
        char *name = strndup(tok_text(p, name_tok), name_tok->len);
        const char *near = name != NULL ? lab__suggest_command(name) : NULL;
        if (near != NULL)
            fail_at(p, DL_ERR_INVALID, name_tok->start, "unknown command '%s'; did you mean '%s'?",
                    shown, near);
        else
            fail_at(p, DL_ERR_INVALID, name_tok->start, "unknown command '%s'", shown);
        free(name);
        return;
    }
    fail_at(p, DL_ERR_INVALID, name_tok->start, "expected a command or NAME = ...");
}

/* Whether tok names a parameter of the def around it: there it is a
 * variable, even one named like a command (def allreduce(send, recv)). */
static bool is_def_param(const parser_t *p, const lab__tok_t *tok)
{
    size_t i;
    json_t *name;
    json_array_foreach(p->params, i, name)
    {
        if (json_string_length(name) == tok->len &&
            memcmp(json_string_value(name), tok_text(p, tok), tok->len) == 0)
            return true;
    }
    return false;
}

/* launcher_ok: NAME = value or A, B = value, which may name rank or world_size:
 * the evaluator lets it bind the value they hold (rank = dist.get_rank(),
 * as a torchrun script begins) and refuses any other. */
static bool check_assignable_as(parser_t *p, const lab__tok_t *name_tok, bool launcher_ok)
{
    char shown[48];
    short_name(p, name_tok, shown, sizeof(shown));
    static const char *const reserved[] = {
        "true",   "false", "True",   "False", "None",   "on",     "if",      "elif",
        "else",   "for",   "in",     "def",   "return", "pass",   "while",   "break",
        "assert", "with",  "lambda", "del",   "try",    "except", "finally", "raise"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        if (tok_is(p, name_tok, reserved[i])) {
            fail_at(p, DL_ERR_INVALID, name_tok->start, "cannot assign to '%s'", shown);
            return false;
        }
    }
    /* Every rank reads these from its communicator; a variable of the same
     * name could never be read back, so an assignment would do nothing. */
    static const char *const builtin[] = {"rank", "world_size"};
    for (size_t i = 0; p->defs == 0 && !launcher_ok && i < sizeof(builtin) / sizeof(builtin[0]);
         i++) {
        if (tok_is(p, name_tok, builtin[i])) {
            fail_at(p, DL_ERR_INVALID, name_tok->start,
                    "cannot assign to '%s': it is read-only, set by the launcher", shown);
            return false;
        }
    }
    const lab_cmd_t *entry = lab__cmd_findn(tok_text(p, name_tok), name_tok->len);
    if (entry != NULL && !(entry->flags & (LAB_CMD_FUNCTION | LAB_CMD_SESSION)) &&
        !is_def_param(p, name_tok)) {
        fail_at(p, DL_ERR_INVALID, name_tok->start, "cannot assign to '%s': it is a command",
                shown);
        return false;
    }
    return true;
}

/* Whether a session command's name (step, next, forward, set) is the
 * learner's name here rather than the command: followed by '=', an
 * augmented assignment, a call with arguments, an index, a '.' or a ',',
 * the word is a name (step = 0, step += 1, forward(x), a training loop's
 * names); else it is the command, which takes words or nothing (step on,
 * next, and exit() as Python writes it). */
static bool session_word_is_name(const parser_t *p, const lab_cmd_t *entry)
{
    if (entry == NULL || !(entry->flags & LAB_CMD_SESSION))
        return false;
    const lab__tok_t *n = &p->cur;
    lab__tok_t after;
    peek(p, &after);
    if (n->kind == LAB__T_LPAREN && after.kind == LAB__T_RPAREN)
        return false; /* exit(), quit(): the command, as Python's are called */
    return n->kind == LAB__T_EQ || n->kind == LAB__T_AUG || n->kind == LAB__T_COMMA ||
           ((n->kind == LAB__T_LPAREN || n->kind == LAB__T_LBRACK || n->kind == LAB__T_DOT) &&
            !n->space_before);
}

/* The command tok names: not a parameter of the def around it, unless it
 * was written with its module (dist.recv is the command even in a def
 * with a parameter recv). */
static const lab_cmd_t *command_at(const parser_t *p, const lab__tok_t *tok, bool prefixed)
{
    if (tok->kind != LAB__T_NAME || (!prefixed && is_def_param(p, tok)))
        return NULL;
    const lab_cmd_t *entry = lab__cmd_findn(tok_text(p, tok), tok->len);
    if (entry != NULL && !prefixed && session_word_is_name(p, entry))
        return NULL;
    return entry != NULL && !(entry->flags & LAB_CMD_FUNCTION) ? entry : NULL;
}

/* Whether the token is the keyword word; keywords are names the lexer does
 * not set apart. */
static bool is_keyword_tok(const parser_t *p, const lab__tok_t *tok)
{
    static const char *const kws[] = {"on",    "if",       "elif",   "else",    "for",
                                      "in",    "def",      "return", "pass",    "while",
                                      "break", "continue", "assert", "with",    "lambda",
                                      "del",   "try",      "except", "finally", "raise"};
    for (size_t i = 0; i < sizeof(kws) / sizeof(kws[0]); i++)
        if (tok_is(p, tok, kws[i]))
            return true;
    return false;
}

static json_t *parse_expr_statement(parser_t *p, size_t start);
static bool stands_as_expr(const parser_t *p, const lab__tok_t *tok);

/* NAME op= EXPR, NAME[...] = EXPR and NAME[...] op= EXPR: name_tok is the
 * name, p->cur what follows it. */
static json_t *parse_bare_tuple(parser_t *p, json_t *first, int *depth_p);

static json_t *parse_store(parser_t *p, const lab__tok_t *name_tok)
{
    json_t *stmt = new_node(p, name_tok->start), *target = NULL;
    if (stmt == NULL || !set(p, stmt, "kind", json_string("assign")) ||
        !set(p, stmt, "targets", json_null()))
        return NULL;
    if (p->cur.kind == LAB__T_LBRACK) {
        /* Back to the name, and the name with its subscripts as an expression. */
        p->lx.pos = name_tok->start;
        advance(p);
        int d = 0;
        if ((target = parse_postfix(p, false, &d)) == NULL)
            goto err_decref_stmt;
        if ((json_object_get(target, "index") == NULL && p->cur.kind != LAB__T_EQ &&
             p->cur.kind != LAB__T_AUG) ||
            (json_object_get(target, "index") != NULL && stands_as_expr(p, &p->cur))) {
            /* t[0:2].mul_(2), t[0].sum(), fs[0](x): a call as a statement;
             * t[0] and t[0] + 1, an expression to show. */
            json_decref(target);
            json_decref(stmt);
            return parse_expr_statement(p, name_tok->start);
        }
        if (json_object_get(target, "index") == NULL) {
            /* t[0].sum() = 1: what is assigned to must be t[...]. */
            fail_at(p, DL_ERR_INVALID, node_pos(target),
                    "cannot assign to a method call or an attribute");
            json_decref(target);
            goto err_decref_stmt;
        }
        if (!set(p, stmt, "target", target))
            return NULL;
    }
    if (!check_assignable(p, name_tok) || !set(p, stmt, "name", new_name_string(p, name_tok)))
        goto err_decref_stmt;
    lab__tok_t op = p->cur;
    char text[4] = {0};
    if (op.kind == LAB__T_AUG) {
        /* "+=" is op "+", "//=" op "//" */
        memcpy(text, tok_text(p, &op), op.len - 1);
        if (!set(p, stmt, "op", json_string(text)))
            return NULL;
        text[op.len - 1] = '=';
    } else if (op.kind != LAB__T_EQ) {
        fail_expected(p, "'=' after the subscript", &op);
        goto err_decref_stmt;
    } else {
        text[0] = '=';
    }
    advance(p);
    if (!expect_value(p, text))
        goto err_decref_stmt;
    int d = 0;
    json_t *value = parse_expr(p, false, &d);
    if (value != NULL && op.kind == LAB__T_EQ)
        value = parse_bare_tuple(p, value, &d); /* l[0] = 1, 2 */
    if (value == NULL)
        goto err_decref_stmt;
    return set(p, stmt, "value", value) ? stmt : NULL;

err_decref_stmt:
    json_decref(stmt);
    return NULL;
}

/* A simple statement: an assignment or a command. p->cur is its first
 * token; any 'on' clause was read by the caller. */
/* A new statement node of the given kind at pos, for every rank. */
static json_t *new_stmt(parser_t *p, size_t pos, const char *kind)
{
    json_t *node = new_node(p, pos);
    if (node == NULL || !set(p, node, "kind", json_string(kind)) ||
        !set(p, node, "targets", json_null()))
        return NULL;
    return node;
}

/* first, then ", EXPR" as long as they come: Python's tuple without
 * parentheses (return a, b; x, y = y, x), a list node marked "tuple" at
 * first's column. first alone, when no comma follows. */
static json_t *parse_bare_tuple(parser_t *p, json_t *first, int *depth_p)
{
    if (p->cur.kind != LAB__T_COMMA)
        return first;
    json_t *node = new_node(p, node_pos(first)), *items = node != NULL ? json_array() : NULL;
    if (node == NULL || !set(p, node, "list", items) || !set(p, node, "tuple", json_true())) {
        json_decref(first);
        return NULL;
    }
    if (json_array_append_new(items, first) != 0) {
        fail_nomem(p);
        goto err_decref_node;
    }
    int deepest = *depth_p;
    while (p->cur.kind == LAB__T_COMMA) {
        advance(p);
        if (at_end(p))
            break; /* a trailing comma, as in return x, */
        if (json_array_size(items) >= p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, p->cur.start, "tuple is too long (at most %zu items)",
                    p->lim->max_list);
            goto err_decref_node;
        }
        if (!expect_value(p, ","))
            goto err_decref_node;
        int d = 0;
        json_t *e = parse_expr(p, false, &d);
        if (e == NULL)
            goto err_decref_node;
        if (json_array_append_new(items, e) != 0) {
            fail_nomem(p);
            goto err_decref_node;
        }
        if (d > deepest)
            deepest = d;
    }
    *depth_p = 0;
    if (!add_level(p, depth_p, deepest, node_pos(node)))
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* return [EXPR]: only in the body of a def. p->cur is the 'return'. */
static json_t *parse_return(parser_t *p)
{
    lab__tok_t kw = p->cur;
    if (p->defs == 0) {
        fail_at(p, DL_ERR_INVALID, kw.start, "'return' outside function");
        return NULL;
    }
    advance(p);
    json_t *stmt = new_stmt(p, kw.start, "return");
    if (stmt == NULL || at_end(p))
        return stmt;
    int d = 0;
    json_t *value = parse_expr(p, false, &d);
    if (value != NULL)
        value = parse_bare_tuple(p, value, &d);
    if (value == NULL) {
        json_decref(stmt);
        return NULL;
    }
    return set(p, stmt, "value", value) ? stmt : NULL;
}

/* assert COND[, MSG]: Python's check, {"kind": "assert", "cond": EXPR,
 * ["msg": EXPR]}. */
static json_t *parse_assert(parser_t *p)
{
    lab__tok_t kw = p->cur;
    advance(p);
    if (!expect_value(p, "assert"))
        return NULL;
    json_t *stmt = new_stmt(p, kw.start, "assert");
    if (stmt == NULL)
        return NULL;
    int d = 0;
    json_t *cond = parse_expr(p, false, &d);
    if (cond == NULL || !set(p, stmt, "cond", cond)) {
        if (cond == NULL)
            json_decref(stmt);
        return NULL;
    }
    if (p->cur.kind != LAB__T_COMMA)
        return stmt;
    advance(p);
    if (!expect_value(p, ",")) {
        json_decref(stmt);
        return NULL;
    }
    json_t *msg = parse_expr(p, false, &d);
    if (msg == NULL) {
        json_decref(stmt);
        return NULL;
    }
    return set(p, stmt, "msg", msg) ? stmt : NULL;
}

/* del TARGET, ...: Python's del of a name (del x) or of a list's or
 * dict's item (del l[i], del d[k], del d["a"]["b"]), {"kind": "del",
 * "del": [EXPR, ...]}, each a name or a subscript of one index. */
static json_t *parse_del(parser_t *p)
{
    lab__tok_t kw = p->cur;
    advance(p);
    json_t *stmt = new_stmt(p, kw.start, "del"), *items = json_array();
    if (stmt == NULL || !set(p, stmt, "del", items))
        return NULL;
    do {
        if (json_array_size(items) > 0)
            advance(p); /* ',' */
        if (json_array_size(items) > 0 && (p->cur.kind == LAB__T_EOF || p->cur.kind == LAB__T_SEMI))
            break; /* del x, */
        lab__tok_t at = p->cur;
        if (at.kind != LAB__T_NAME || is_keyword_tok(p, &at)) {
            fail_expected(p, "a name to delete", &at);
            goto err;
        }
        if (json_array_size(items) >= p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, at.start, "too many names (at most %zu)", p->lim->max_list);
            goto err;
        }
        int d = 0;
        json_t *target = parse_postfix(p, false, &d);
        if (target == NULL || json_array_append_new(items, target) != 0) {
            if (target != NULL)
                fail_nomem(p);
            goto err;
        }
        bool name = json_object_get(target, "name") != NULL;
        /* an item: d[k], d[None], d[1, 2] (the ranks read the brackets) */
        bool item =
            json_object_get(target, "index") != NULL && json_object_get(target, "ellipsis") == NULL;
        if (!name && !item) {
            fail_at(p, DL_ERR_INVALID, at.start,
                    "del takes names and items of one subscript (del x, del l[i], del d[k])");
            goto err;
        }
        if (name && !check_assignable(p, &at))
            goto err;
    } while (p->cur.kind == LAB__T_COMMA);
    return stmt;

err:
    json_decref(stmt);
    return NULL;
}

/* A, B, ... = EXPR: Python's unpacking of a list or a tuple into names,
 * {"kind": "assign", "names": [...], "value": EXPR}; a *NAME among them
 * is {"star": NAME}.
 *
 * The rest of it after its first target: the names into "names" (a, (b,
 * c) = 1, (2, 3)), or first alone, (x) = 5 being x = 5. first is a name's
 * string, a group's array or a star (parse_target), and p->cur is what
 * follows it; n counts the names so far. Takes first. */
static json_t *parse_unpack_rest(parser_t *p, size_t start, json_t *first, size_t n)
{
    json_t *stmt = new_stmt(p, start, "assign"), *names = NULL;
    if (stmt == NULL) {
        json_decref(first);
        return NULL;
    }
    if (json_is_object(first) && p->cur.kind == LAB__T_EQ) {
        json_decref(first);
        fail_at(p, DL_ERR_INVALID, start, "starred assignment target must be in a list or tuple");
        goto err_decref_stmt;
    }
    if (json_is_string(first) && p->cur.kind == LAB__T_EQ) {
        /* (x) = 5 */
        if (!set(p, stmt, "name", first) || !set(p, stmt, "targets", json_null()))
            return NULL;
    } else if (json_is_array(first) && p->cur.kind == LAB__T_EQ) {
        /* [a, b] = v is a, b = v */
        if (!set(p, stmt, "names", first))
            return NULL;
    } else {
        if (!set(p, stmt, "names", names = json_array())) {
            json_decref(first);
            return NULL;
        }
        if (json_array_append_new(names, first) != 0) {
            fail_nomem(p);
            goto err_decref_stmt;
        }
    }
    while (names != NULL && p->cur.kind == LAB__T_COMMA) {
        advance(p);
        if (p->cur.kind == LAB__T_EQ)
            break; /* a, = x */
        /* a, (b, c) = 1, (2, 3) */
        p->star_targets = true;
        json_t *target = parse_target(p, true, "a name to assign to", &n);
        p->star_targets = false;
        if (target == NULL)
            goto err_decref_stmt;
        if (json_array_append_new(names, target) != 0) {
            fail_nomem(p);
            goto err_decref_stmt;
        }
    }
    if (names != NULL && !one_star(p, names, start))
        goto err_decref_stmt;
    if (p->cur.kind != LAB__T_EQ) {
        fail_expected(p, "'=' after the names", &p->cur);
        goto err_decref_stmt;
    }
    advance(p);
    if (!expect_value(p, "="))
        goto err_decref_stmt;
    int d = 0;
    json_t *value = parse_expr(p, false, &d);
    if (value != NULL)
        value = parse_bare_tuple(p, value, &d);
    if (value == NULL)
        goto err_decref_stmt;
    return set(p, stmt, "value", value) ? stmt : NULL;

err_decref_stmt:
    json_decref(stmt);
    return NULL;
}

/* NAME, TARGET, ... = VALUE; p->cur is the ',' after the first name. */
static json_t *parse_unpack(parser_t *p, const lab__tok_t *name_tok)
{
    /* rank, world_size = dist.get_rank(), dist.get_world_size(): the
     * evaluator accepts the values they hold, as for one name */
    if (!check_assignable_as(p, name_tok, true))
        return NULL;
    json_t *first = new_name_string(p, name_tok);
    if (first == NULL) {
        fail_nomem(p);
        return NULL;
    }
    return parse_unpack_rest(p, name_tok->start, first, 1);
}

/* 1 for a token that opens a bracket, -1 for one that closes one, else 0. */
static int bracket_step(const lab__tok_t *tok)
{
    return (tok->kind == LAB__T_LPAREN || tok->kind == LAB__T_LBRACK ||
            tok->kind == LAB__T_LBRACE) -
           (tok->kind == LAB__T_RPAREN || tok->kind == LAB__T_RBRACK || tok->kind == LAB__T_RBRACE);
}

/* Whether the statement at p->cur assigns: an '=' outside its brackets
 * ((a, b), c = ..., [x, y] = ...), where an expression statement has
 * none. */
static bool assigns_at_top(const parser_t *p)
{
    lab__lexer_t lx = p->lx;
    long depth = 0;
    for (lab__tok_t tok = p->cur; tok.kind != LAB__T_EOF && tok.kind != LAB__T_SEMI;
         lab__lex_next(&lx, &tok)) {
        depth += bracket_step(&tok);
        if (depth == 0 && tok.kind == LAB__T_EQ)
            return true;
        if (tok.kind == LAB__T_ERROR || (tok.kind == LAB__T_NAME && depth == 0 &&
                                         (tok_is(p, &tok, "lambda") || tok_is(p, &tok, "for"))))
            return false; /* lambda x=1: ... is no assignment */
    }
    return false;
}

/* A statement that starts with '(', '[' or '*' and assigns: its targets, then
 * as parse_unpack. */
static json_t *parse_group_assign(parser_t *p)
{
    size_t start = p->cur.start, n = 0;
    p->star_targets = true;
    json_t *first = parse_target(p, true, "a name to assign to", &n);
    p->star_targets = false;
    return first != NULL ? parse_unpack_rest(p, start, first, n) : NULL;
}

/* torch's in-place methods and the statements they are: t.add_(x) is
 * t += x (also sub_, mul_, div_), t.zero_() writes 0 into all of t,
 * t.fill_(v) v and t.copy_(src) src (as t[:] = src would, 0-dim tensors
 * too); on a subscript, t[0:2].mul_(2), they write into it as t[0:2] *= 2
 * does. NULL when fn is none of them. */
static const char *inplace_op(const char *fn)
{
    static const char *const ops[][2] = {{"add_", "+"}, {"sub_", "-"},  {"mul_", "*"},
                                         {"div_", "/"}, {"zero_", "="}, {"fill_", "="},
                                         {"copy_", "="}};
    for (size_t i = 0; fn != NULL && i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(fn, ops[i][0]) == 0)
            return ops[i][1];
    return NULL;
}

/* The assignment that the in-place call `call` (of fn, op from inplace_op)
 * is, at start; call is taken over. */
static json_t *parse_inplace(parser_t *p, size_t start, json_t *call, const char *fn,
                             const char *op)
{
    json_t *self = json_object_get(call, "self"), *args = json_object_get(call, "args");
    const json_t *root = self;
    while (json_object_get(root, "index") != NULL)
        root = json_object_get(root, "index");
    const char *name = json_string_value(json_object_get(root, "name"));
    json_t *stmt = NULL;
    for (size_t i = 0; i < json_array_size(args); i++) {
        const json_t *a = json_array_get(args, i);
        if (json_object_get(a, "star") != NULL) {
            /* the statement it becomes takes its values one by one */
            fail_at(p, DL_ERR_INVALID, node_pos(a),
                    "*ITERABLE is not taken by %s() here: give its arguments one by one", fn);
            json_decref(call);
            return NULL;
        }
    }
    if (name == NULL) {
        fail_at(p, DL_ERR_INVALID, node_pos(call),
                "%s() changes a tensor in place: call it on a variable or a slice of one "
                "(t.%s(...), t[0:2].%s(...))",
                fn, fn, fn);
        goto out;
    }
    size_t want = strcmp(fn, "zero_") == 0 ? 0 : 1;
    /* add_ and sub_ take torch's alpha=: t.add_(x, alpha=a) is t += a * x,
     * with alpha beside the value, for the evaluator to fuse as torch does. */
    const json_t *kwargs = json_object_get(call, "kwargs");
    json_t *alpha = json_object_get(kwargs, "alpha");
    bool scaled = op[0] == '+' || op[0] == '-';
    if (json_array_size(args) != want || json_object_size(kwargs) != (alpha != NULL && scaled)) {
        fail_at(p, DL_ERR_INVALID, node_pos(call), "%s() takes %s", fn,
                !want    ? "no arguments"
                : scaled ? "one value (and alpha=)"
                         : "one value");
        goto out;
    }
    lab__tok_t tok = {.kind = LAB__T_NAME, .start = node_pos(root), .len = strlen(name)};
    /* set() frees the node it fails on: after a failed set(p, stmt, ...),
     * only call is left to free. */
    bool whole = op[0] == '=';
    if (!check_assignable(p, &tok) || (stmt = new_stmt(p, start, "assign")) == NULL ||
        !set(p, stmt, "name", json_string(name)) || !set(p, stmt, "method", json_string(fn)) ||
        (!whole && !set(p, stmt, "op", json_string(op))))
        goto out;
    /* t.fill_(v) on all of t writes into it ("inplace"), where t = v would
     * bind t anew. */
    if (self != root ? !set(p, stmt, "target", json_incref(self))
                     : whole && !set(p, stmt, "inplace", json_true()))
        goto out;
    json_t *value = want ? json_incref(json_array_get(args, 0)) : new_node(p, node_pos(call));
    if (value == NULL || (!want && !set(p, value, "num", json_integer(0))))
        goto out_decref_stmt;
    if (!set(p, stmt, "value", value) ||
        (alpha != NULL && !set(p, stmt, "alpha", json_incref(alpha))))
        goto out;
    json_decref(call);
    return stmt;

out_decref_stmt:
    json_decref(stmt);
out:
    json_decref(call);
    return NULL;
}

/* os.environ[KEY] = VALUE: {"kind": "setenv", "key": EXPR, "value": EXPR}.
 * Takes target, the os.environ[KEY] before the '=' at p->cur. */
static json_t *parse_setenv(parser_t *p, size_t start, json_t *target)
{
    json_t *key = json_incref(json_array_get(json_object_get(target, "getenv"), 0));
    json_decref(target);
    json_t *stmt = new_stmt(p, start, "setenv");
    if (stmt == NULL || !set(p, stmt, "key", key)) {
        if (stmt == NULL)
            json_decref(key);
        return NULL;
    }
    advance(p); /* '=' */
    if (!expect_value(p, "=")) {
        json_decref(stmt);
        return NULL;
    }
    int d = 0;
    json_t *value = parse_expr(p, false, &d);
    if (value == NULL) {
        json_decref(stmt);
        return NULL;
    }
    return set(p, stmt, "value", value) ? stmt : NULL;
}

/* A statement that is an expression: a call (f(x), h.wait()), whose value
 * is dropped as in a Python script, or a string (a docstring), which does
 * nothing. Any other expression alone is refused, as before. start is
 * where it begins in the line. */
static json_t *parse_expr_statement(parser_t *p, size_t start)
{
    p->lx.pos = start;
    advance(p);
    int d = 0;
    json_t *value = parse_expr(p, false, &d);
    if (value == NULL)
        return NULL;
    if (json_object_get(value, "getenv") != NULL && json_object_get(value, "default") == NULL &&
        p->cur.kind == LAB__T_EQ)
        return parse_setenv(p, start, value);
    const char *fn = json_string_value(json_object_get(value, "call"));
    const char *op = inplace_op(fn);
    if (op != NULL && json_object_get(value, "self") != NULL)
        return parse_inplace(p, start, value, fn, op);
    bool call =
        (json_object_get(value, "call") != NULL && json_object_get(value, "attr") == NULL) ||
        json_object_get(value, "callee") != NULL;
    bool str = json_object_get(value, "str") != NULL || json_object_get(value, "fstr") != NULL;
    json_t *stmt = new_stmt(p, start, "expr");
    if (stmt == NULL) {
        json_decref(value);
        return NULL;
    }
    if (!set(p, stmt, "value", value))
        return NULL;
    /* Any other expression alone shows its value, as Python's prompt shows
     * it (t, t + 1, m.T, t[0]); a call's value shows where it is not None
     * and the call is not in a function's body (len(l), torch.ones(2)),
     * and a string alone is a docstring. */
    if (call)
        return set(p, stmt, "result", json_true()) ? stmt : NULL;
    if (str)
        return stmt;
    if (!set(p, stmt, "show", json_true()))
        return NULL;
    /* A name alone near a command's (barier) may be that command mistyped:
     * the ranks say so if it names nothing there. */
    const char *name = json_string_value(json_object_get(value, "name"));
    const char *near = name != NULL ? lab__suggest_command(name) : NULL;
    return near == NULL || set(p, stmt, "near", json_string(near)) ? stmt : NULL;
}

/* Whether tok, after a name that is not a command (or after a name's
 * subscripts), leaves an expression to show: the statement ends there
 * (t, t[0]), or an operator carries it on (t + 1, t == u, t and u, t if c
 * else u), rather than a command taking its arguments (foo t). */
static bool stands_as_expr(const parser_t *p, const lab__tok_t *tok)
{
    switch (tok->kind) {
    case LAB__T_EOF:
    case LAB__T_SEMI:
    case LAB__T_PLUS:
    case LAB__T_MINUS:
    case LAB__T_STAR:
    case LAB__T_SLASH:
    case LAB__T_PERCENT:
    case LAB__T_POW:
    case LAB__T_FLOORDIV:
    case LAB__T_CMP:
    case LAB__T_AT:
    case LAB__T_BITOP:
        return true;
    case LAB__T_NAME:
        return tok_is(p, tok, "and") || tok_is(p, tok, "or") || tok_is(p, tok, "if") ||
               tok_is(p, tok, "in") || tok_is(p, tok, "not") || tok_is(p, tok, "is");
    default:
        return false;
    }
}

/* A dotted module name, NAME(.NAME)*, into buf; p->cur is its first NAME. */
static bool module_name(parser_t *p, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        if (p->cur.kind != LAB__T_NAME) {
            fail_expected(p, "a module name", &p->cur);
            return false;
        }
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%.*s", n ? "." : "",
                              (int)p->cur.len, tok_text(p, &p->cur));
        advance(p);
        if (p->cur.kind != LAB__T_DOT)
            return n < cap ||
                   (fail_at(p, DL_ERR_INVALID, p->cur.start, "module name too long"), false);
        advance(p);
    }
}

/* Whether a script's import of module may stay: torch's own modules are
 * the shell's (torch., dist.), and the standard modules the tutorials import
 * for their launchers do nothing here. */
static bool known_module(const char *m)
{
    static const char *const ok[] = {"torch",  "os",     "sys",      "math",    "time",
                                     "random", "typing", "argparse", "datetime"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        size_t n = strlen(ok[i]);
        if (strncmp(m, ok[i], n) == 0 && (m[n] == '\0' || m[n] == '.'))
            return true;
    }
    return false;
}

/* import M [as X], ... and from M import N [as X], ...: a tutorial's first
 * lines, kept so that its code runs as written. They bind nothing: torch
 * and dist are always there, and the shell has no other modules; an alias
 * for torch or torch.distributed other than their own names is refused,
 * since the code after it would not find it. p->cur is import or from. */
static json_t *parse_import(parser_t *p)
{
    lab__tok_t kw = p->cur;
    bool from = tok_is(p, &kw, "from");
    advance(p);
    char m[128];
    if (from) {
        if (!module_name(p, m, sizeof(m)))
            return NULL;
        if (!tok_is(p, &p->cur, "import")) {
            fail_expected(p, "'import'", &p->cur);
            return NULL;
        }
        advance(p);
    }
    for (;;) {
        if (from && p->cur.kind == LAB__T_STAR) {
            advance(p);
        } else {
            char name[128];
            if (!module_name(p, name, sizeof(name)))
                return NULL;
            if (!from)
                snprintf(m, sizeof(m), "%s", name);
            if (tok_is(p, &p->cur, "as")) {
                advance(p);
                lab__tok_t alias = p->cur;
                if (alias.kind != LAB__T_NAME) {
                    fail_expected(p, "a name after 'as'", &alias);
                    return NULL;
                }
                const char *own =
                    !from && strcmp(name, "torch") == 0 ? "torch"
                    : (!from && strcmp(name, "torch.distributed") == 0) ||
                            (from && strcmp(m, "torch") == 0 && strcmp(name, "distributed") == 0)
                        ? "dist"
                        : NULL;
                if (own != NULL && !tok_is(p, &alias, own)) {
                    fail_at(p, DL_ERR_INVALID, alias.start,
                            "the shell names %s '%s' only: write 'as %s'",
                            from ? "torch.distributed" : name, own, own);
                    return NULL;
                }
                advance(p);
            }
        }
        if (!known_module(m)) {
            fail_at(p, DL_ERR_INVALID, kw.start,
                    "no module named '%s' in the shell: it has torch and torch.distributed "
                    "(as torch and dist) built in, and the imports of os, sys, math, time and "
                    "random do nothing",
                    m);
            return NULL;
        }
        if (p->cur.kind != LAB__T_COMMA)
            break;
        advance(p);
    }
    return new_stmt(p, kw.start, "pass");
}

/* NAME.append(COMMAND(...)), p->cur the '.': Python's way to keep the
 * handles of isend, irecv and async collectives in a list. The command
 * is the statement, as in h = dist.isend(...), marked "append" so that
 * the rank appends what it returns to the list NAME rather than binding
 * it. *matched is false (and nothing read) where the line is something
 * else, which is then parsed as before. */
static json_t *parse_append_command(parser_t *p, const lab__tok_t *name_tok, size_t start,
                                    bool *matched)
{
    lab__lexer_t saved_lx = p->lx;
    lab__tok_t saved_cur = p->cur;
    *matched = false;
    advance(p); /* '.' */
    const lab_cmd_t *entry = NULL;
    lab__tok_t value_tok = p->cur;
    if (tok_is(p, &p->cur, "append")) {
        advance(p);
        if (p->cur.kind == LAB__T_LPAREN && !p->cur.space_before) {
            advance(p);
            value_tok = p->cur;
            lab__lexer_t at_lx = p->lx;
            lab__tok_t at_cur = p->cur;
            advance(p);
            if (is_prefix_tok(p, &value_tok) && p->cur.kind == LAB__T_DOT) {
                /* dist.NAME: looked at quietly, then read for real below */
                lab__lexer_t lx = p->lx;
                lab__tok_t word;
                lab__lex_next(&lx, &word);
                entry = word.kind == LAB__T_NAME ? command_at(p, &word, true) : NULL;
            } else {
                entry = command_at(p, &value_tok, false);
            }
            if (entry != NULL) {
                p->lx = at_lx;
                p->cur = at_cur;
            }
        }
    }
    if (entry == NULL) {
        p->lx = saved_lx;
        p->cur = saved_cur;
        return NULL;
    }
    *matched = true;
    advance(p);
    if (is_prefix_tok(p, &value_tok) && p->cur.kind == LAB__T_DOT && !resolve_prefix(p, &value_tok))
        return NULL;
    entry = command_at(p, &value_tok, true);
    json_t *stmt = NULL, *cmd = NULL;
    if (entry == NULL || !check_assignable(p, name_tok) ||
        (stmt = new_stmt(p, start, "assign")) == NULL ||
        !set(p, stmt, "name", new_name_string(p, name_tok)) || !set(p, stmt, "append", json_true()))
        return NULL;
    if ((cmd = parse_command(p, &value_tok, entry)) == NULL || !set(p, stmt, "command", cmd))
        goto err_decref_stmt;
    if (p->cur.kind != LAB__T_RPAREN) {
        fail_expected(p, "')' after the command append() takes", &p->cur);
        goto err_decref_stmt;
    }
    advance(p);
    return stmt;

err_decref_stmt:
    json_decref(stmt);
    return NULL;
}

static json_t *parse_raise(parser_t *p);

static json_t *parse_statement(parser_t *p)
{
    json_t *stmt = NULL;
    lab__tok_t name_tok = p->cur;
    if (name_tok.kind == LAB__T_STRING || name_tok.kind == LAB__T_FSTRING)
        return parse_expr_statement(p, name_tok.start);
    if (tok_is(p, &name_tok, "return"))
        return parse_return(p);
    if (tok_is(p, &name_tok, "pass")) {
        advance(p);
        return new_stmt(p, name_tok.start, "pass");
    }
    if (tok_is(p, &name_tok, "assert"))
        return parse_assert(p);
    if (tok_is(p, &name_tok, "del"))
        return parse_del(p);
    if (tok_is(p, &name_tok, "raise"))
        return parse_raise(p);
    if (tok_is(p, &name_tok, "import") || tok_is(p, &name_tok, "from"))
        return parse_import(p);
    /* break and continue in a loop; outside one, Python's error (a def's
     * body starts outside any loop around the def), but for continue alone
     * at the top, the step-mode command that runs a stopped collective to
     * its end. */
    if (tok_is(p, &name_tok, "break") ||
        (tok_is(p, &name_tok, "continue") && (p->loops > 0 || p->body > 0))) {
        bool brk = tok_is(p, &name_tok, "break");
        if (p->loops == 0) {
            fail_at(p, DL_ERR_INVALID, name_tok.start,
                    brk ? "'break' outside loop" : "'continue' not properly in loop");
            return NULL;
        }
        advance(p);
        return new_stmt(p, name_tok.start, brk ? "break" : "continue");
    }
    if (name_tok.kind != LAB__T_NAME) {
        if (name_tok.kind == LAB__T_ERROR) {
            fail_lex(p, &name_tok);
            return NULL;
        }
        if ((name_tok.kind == LAB__T_LPAREN || name_tok.kind == LAB__T_LBRACK ||
             name_tok.kind == LAB__T_STAR) &&
            assigns_at_top(p))
            return parse_group_assign(p); /* (a, b), c = ...; *a, b = ... */
        if (!starts_expr(&name_tok)) {
            fail_at(p, DL_ERR_INVALID, name_tok.start, "expected a command or NAME = ...");
            return NULL;
        }
        return parse_expr_statement(p, name_tok.start); /* 1 + 2, [t], (a, b) */
    }
    advance(p);
    size_t body_start = name_tok.start; /* dist.send(...) starts at dist */
    if (is_prefix_tok(p, &name_tok) && p->cur.kind == LAB__T_DOT && !resolve_prefix(p, &name_tok))
        return NULL;
    if (!is_prefix_tok(p, &name_tok))
        skip_data_attr(p); /* p.data -= lr * g */
    const lab_cmd_t *entry = command_at(p, &name_tok, name_tok.start != body_start);
    if (entry == NULL &&
        (p->cur.kind == LAB__T_AUG || (p->cur.kind == LAB__T_LBRACK && !p->cur.space_before)))
        return parse_store(p, &name_tok);
    if (entry == NULL && p->cur.kind == LAB__T_COMMA)
        return parse_unpack(p, &name_tok);
    if (entry == NULL && p->cur.kind == LAB__T_DOT) {
        /* reqs.append(dist.isend(t, dst=r)): the command runs as the
         * statement it is, its handle appended to the list */
        bool matched = false;
        json_t *stmt_a = parse_append_command(p, &name_tok, body_start, &matched);
        if (matched || stmt_a != NULL)
            return stmt_a;
    }
    /* A call that is no command: f(x) of a def, len(l), torch.ones(2), and
     * a method call such as h.wait(). A session command's name here is the
     * command (exit()) only where command_at took it for one
     * (session_word_is_name); a torch operator's name may be the learner's
     * def (add(a, b)). */
    if (entry == NULL &&
        ((p->cur.kind == LAB__T_LPAREN && !p->cur.space_before) || p->cur.kind == LAB__T_DOT))
        return parse_expr_statement(p, body_start);
    bool assign = p->cur.kind == LAB__T_EQ;
    if (assign && !check_assignable_as(p, &name_tok, true))
        return NULL;
    /* A name alone, or one an operator follows, is an expression to show
     * (t, t + 1); a name alone that names nothing on the ranks says there
     * which command it may have meant (lab/rank/eval_cmd.c). */
    if (!assign && entry == NULL && stands_as_expr(p, &p->cur))
        return parse_expr_statement(p, body_start);
    if (!assign && entry == NULL) {
        fail_not_command(p, &name_tok, lab__cmd_findn(tok_text(p, &name_tok), name_tok.len));
        return NULL;
    }
    if (!assign && p->body > 0 && (entry->flags & LAB_CMD_SESSION)) {
        char shown[48];
        short_name(p, &name_tok, shown, sizeof(shown));
        fail_at(p, DL_ERR_INVALID, name_tok.start,
                "'%s' is a command of the shell, not of the ranks: it cannot be in an if, a for or "
                "a def",
                shown);
        return NULL;
    }

    stmt = new_node(p, body_start);
    if (stmt == NULL || !set(p, stmt, "kind", json_string(assign ? "assign" : "command")) ||
        !set(p, stmt, "targets", json_null()))
        return NULL;

    if (!assign) {
        json_t *cmd = parse_command(p, &name_tok, entry);
        if (cmd == NULL)
            goto err_decref_stmt;
        return set(p, stmt, "command", cmd) ? stmt : NULL;
    }

    advance(p); /* '=' */
    if (!set(p, stmt, "name", new_name_string(p, &name_tok)))
        return NULL;
    lab__tok_t value_tok = p->cur, saved_cur = p->cur;
    lab__lexer_t saved_lx = p->lx;
    advance(p);
    if (is_prefix_tok(p, &value_tok) && p->cur.kind == LAB__T_DOT && !resolve_prefix(p, &value_tok))
        goto err_decref_stmt;
    entry = command_at(p, &value_tok, value_tok.start != saved_cur.start);
    if (entry != NULL && (entry->flags & LAB_CMD_SESSION))
        entry = NULL; /* x = step: no session command gives a value; a name */
    if (entry == NULL) {
        /* An expression: read again from its start. */
        p->lx = saved_lx;
        p->cur = saved_cur;
    }
    if (entry != NULL) {
        json_t *cmd = parse_command(p, &value_tok, entry);
        if (cmd == NULL)
            goto err_decref_stmt;
        return set(p, stmt, "command", cmd) ? stmt : NULL;
    }
    /* a = b = 0: the names after the first, bound to the same value after
     * it, left to right as Python binds them ("also") */
    for (;;) {
        lab__tok_t next;
        peek(p, &next);
        if (p->cur.kind != LAB__T_NAME || next.kind != LAB__T_EQ)
            break;
        json_t *also = json_object_get(stmt, "also");
        if (!check_assignable(p, &p->cur) ||
            (also == NULL && !set(p, stmt, "also", also = json_array())) ||
            json_array_append_new(also, new_name_string(p, &p->cur)) != 0)
            goto err_decref_stmt;
        advance(p); /* the name */
        advance(p); /* '=' */
    }
    if (!expect_value(p, "="))
        goto err_decref_stmt;
    int d = 0;
    json_t *value = parse_expr(p, false, &d);
    if (value != NULL)
        value = parse_bare_tuple(p, value, &d); /* shape = 2, 3 */
    if (value == NULL)
        goto err_decref_stmt;
    return set(p, stmt, "value", value) ? stmt : NULL;

err_decref_stmt:
    json_decref(stmt);
    return NULL;
}

/* ---- lines and blocks ----
 *
 * A text is one or more lines. A statement that ends its line with ':' ('on
 * RANKS:', 'if COND:', 'elif COND:', 'else:', 'for NAME in EXPR:') opens a
 * block: the lines below it indented more than it, up to the first line
 * indented as much or less. Written after the ':' on the same line, the
 * rest of the line is the block instead, as in Python. */

static void start_line(parser_t *p)
{
    const pline_t *l = &p->lines[p->li];
    lab__lex_init(&p->lx, p->text + l->start, l->len);
    p->lineno = l->no;
    p->joined = memchr(p->text + l->start, '\n', l->len) != NULL;
    p->seen_to = p->seen_from = 0;
    p->seen_line = l->no;
    advance(p);
}

static bool parse_seq(parser_t *p, int indent, json_t *out);
static bool parse_block(parser_t *p, int indent, int parent, json_t *out);

/* The suite after a header's ':' (p->cur is the token after it): the rest of
 * the line, or the indented lines below. Leaves p->li at the next line. */
static bool parse_suite(parser_t *p, int indent, json_t *body)
{
    size_t end = p->cur.start;
    bool ok;
    if (p->cur.kind != LAB__T_EOF) {
        ok = parse_seq(p, indent, body);
    } else {
        if (p->li + 1 >= p->nlines || p->lines[p->li + 1].indent <= indent) {
            fail_at(p, DL_ERR_INVALID, end, "expected an indented block after ':'");
            return false;
        }
        if (!enter(p, end))
            return false;
        p->li++;
        ok = parse_block(p, p->lines[p->li].indent, indent, body);
        p->nest--;
    }
    /* A suite of empty statements alone (";") holds nothing to run. */
    if (ok && json_array_size(body) == 0) {
        fail_at(p, DL_ERR_INVALID, end, "expected an indented block after ':'");
        return false;
    }
    return ok;
}

static bool holds_rank(const json_t *ranks, json_int_t r)
{
    size_t i;
    json_t *q;
    json_array_foreach(ranks, i, q)
    {
        if (json_integer_value(q) == r)
            return true;
    }
    return false;
}

/* Gives every statement of group the targets of its 'on' clause (a copy
 * each) and moves them to out. A statement of a nested clause keeps its
 * own ranks, which are among the outer ones. */
static bool flush_group(parser_t *p, json_t *out, json_t *group, const json_t *targets,
                        size_t on_pos)
{
    size_t i;
    json_t *stmt;
    json_array_foreach(group, i, stmt)
    {
        if (targets != NULL) {
            json_t *own = json_object_get(stmt, "targets");

            json_t *t = json_array();
            if (t == NULL) {
                fail_nomem(p);
                return false;
            }
            size_t k;
            json_t *r;
            json_array_foreach(targets, k, r)
            {
                if (json_is_array(own) && !holds_rank(own, json_integer_value(r)))
                    continue;
                if (json_array_append(t, r) != 0) {
                    json_decref(t);
                    fail_nomem(p);
                    return false;
                }
            }
            bool had = json_is_array(own);
            if (json_object_set_new(stmt, "targets", t) != 0 ||
                (!had && json_object_set_new(stmt, "targets_col",
                                             json_integer((json_int_t)on_pos + 1)) != 0)) {
                fail_nomem(p);
                return false;
            }
        }
        if (json_array_append(out, stmt) != 0) {
            fail_nomem(p);
            return false;
        }
    }
    json_array_clear(group);
    return true;
}

static json_t *parse_if(parser_t *p, int indent);
static json_t *parse_for(parser_t *p, int indent);
static json_t *parse_while(parser_t *p, int indent);
static json_t *parse_def(parser_t *p, int indent);
static json_t *parse_with(parser_t *p, int indent);
static json_t *parse_try(parser_t *p, int indent);

/* The statements of the current line, separated by ';', into out; with a
 * block header, its block too. An 'on' clause covers the rest of the line
 * (or its block), up to the next 'on' clause; if and for take the rest of
 * the line. Leaves p->li at the next line. */
static bool parse_seq(parser_t *p, int indent, json_t *out)
{
    json_t *group = json_array(), *targets = NULL;
    const json_t *saved_outer = p->outer;
    size_t on_pos = 0;
    bool ok = false;
    if (group == NULL) {
        fail_nomem(p);
        return false;
    }
    for (;;) {
        if (p->cur.kind == LAB__T_EOF) {
            p->li++;
            break;
        }
        if (p->cur.kind == LAB__T_SEMI) {
            advance(p);
            continue;
        }
        if (tok_is(p, &p->cur, "on")) {
            if (!flush_group(p, out, group, targets, on_pos))
                goto out_decref;
            json_decref(targets);
            on_pos = p->cur.start;
            if ((targets = parse_targets(p)) == NULL)
                goto out_decref;
            size_t m;
            json_t *q;
            json_array_foreach(targets, m, q)
            {
                if (saved_outer == NULL || holds_rank(saved_outer, json_integer_value(q)))
                    continue;
                fail_at(p, DL_ERR_INVALID, on_pos,
                        "rank %lld is not one of the ranks of the 'on' around it",
                        (long long)json_integer_value(q));
                goto out_decref;
            }
            p->outer = targets;
            if (p->cur.kind != LAB__T_COLON) {
                fail_expected(p, "':' after the ranks", &p->cur);
                goto out_decref;
            }
            advance(p);
            if (p->cur.kind == LAB__T_SEMI) {
                fail_at(p, DL_ERR_INVALID, p->cur.start, "expected a command after ':'");
                goto out_decref;
            }
            if (tok_is(p, &p->cur, "on")) {
                fail_at(p, DL_ERR_INVALID, p->cur.start, "a statement takes one 'on' clause");
                goto out_decref;
            }
            if (p->cur.kind == LAB__T_EOF) {
                if (!parse_suite(p, indent, group))
                    goto out_decref;
                break;
            }
            continue;
        }
        json_t *stmt;
        bool compound = tok_is(p, &p->cur, "if") || tok_is(p, &p->cur, "for") ||
                        tok_is(p, &p->cur, "while") || tok_is(p, &p->cur, "def") ||
                        tok_is(p, &p->cur, "with") || tok_is(p, &p->cur, "try");
        if (tok_is(p, &p->cur, "elif") || tok_is(p, &p->cur, "else")) {
            char shown[48];
            short_name(p, &p->cur, shown, sizeof(shown));
            fail_at(p, DL_ERR_INVALID, p->cur.start, "'%s' without an 'if' before it", shown);
            goto out_decref;
        }
        if (tok_is(p, &p->cur, "except") || tok_is(p, &p->cur, "finally")) {
            char shown[48];
            short_name(p, &p->cur, shown, sizeof(shown));
            fail_at(p, DL_ERR_INVALID, p->cur.start, "'%s' without a 'try' before it", shown);
            goto out_decref;
        }
        if (compound)
            stmt = tok_is(p, &p->cur, "if")      ? parse_if(p, indent)
                   : tok_is(p, &p->cur, "for")   ? parse_for(p, indent)
                   : tok_is(p, &p->cur, "while") ? parse_while(p, indent)
                   : tok_is(p, &p->cur, "with")  ? parse_with(p, indent)
                   : tok_is(p, &p->cur, "try")   ? parse_try(p, indent)
                                                 : parse_def(p, indent);
        else
            stmt = parse_statement(p);
        if (stmt == NULL)
            goto out_decref;
        if (json_array_append_new(group, stmt) != 0) {
            fail_nomem(p);
            goto out_decref;
        }
        if (compound)
            break; /* its suite took the rest of the line */
        if (p->cur.kind == LAB__T_SEMI) {
            advance(p);
        } else if (p->cur.kind != LAB__T_EOF) {
            fail_unexpected(p, &p->cur);
            goto out_decref;
        }
    }
    ok = flush_group(p, out, group, targets, on_pos);
out_decref:
    p->outer = saved_outer;
    json_decref(group);
    json_decref(targets);
    return ok;
}

/* The lines from p->li indented exactly indent, with what they open; stops
 * at a line indented less (one indented as much as parent or less). */
static bool parse_block(parser_t *p, int indent, int parent, json_t *out)
{
    while (p->li < p->nlines && p->st == DL_OK) {
        const pline_t *l = &p->lines[p->li];
        if (l->indent < indent) {
            if (l->indent > parent) {
                p->lineno = l->no;
                fail_at(p, DL_ERR_INVALID, 0,
                        "unindent does not match any outer indentation level");
                return false;
            }
            break;
        }
        if (l->indent > indent) {
            p->lineno = l->no;
            fail_at(p, DL_ERR_INVALID, 0, "unexpected indent");
            return false;
        }
        start_line(p);
        if (!parse_seq(p, indent, out))
            return false;
    }
    return p->st == DL_OK;
}

/* A new statement node of the given kind at tok (if, for). */
static json_t *new_compound(parser_t *p, const lab__tok_t *tok, const char *kind)
{
    json_t *node = new_node(p, tok->start);
    if (node == NULL || !set(p, node, "kind", json_string(kind)) ||
        !set(p, node, "targets", json_null()))
        return NULL;
    return node;
}

/* ':' after a header, then its suite into a new array set as node[key].
 * node is the caller's to release on failure. */
static bool parse_header_end(parser_t *p, int indent, json_t *node, const char *key)
{
    if (p->cur.kind != LAB__T_COLON) {
        fail_expected(p, "':'", &p->cur);
        return false;
    }
    advance(p);
    json_t *body = json_array();
    if (body == NULL || json_object_set_new(node, key, body) != 0) {
        fail_nomem(p);
        return false;
    }
    p->body++;
    bool ok = parse_suite(p, indent, body);
    p->body--;
    return ok;
}

/* The line at p->li when it is indented as indent and starts with word:
 * left started (p->cur its first token); else nothing is touched. */
static bool next_line_starts(parser_t *p, int indent, const char *word)
{
    if (p->st != DL_OK || p->li >= p->nlines || p->lines[p->li].indent != indent)
        return false;
    lab__lexer_t lx;
    const pline_t *l = &p->lines[p->li];
    lab__lex_init(&lx, p->text + l->start, l->len);
    lab__tok_t tok;
    lab__lex_next(&lx, &tok);
    size_t n = strlen(word);
    if (tok.kind != LAB__T_NAME || tok.len != n || memcmp(p->text + l->start + tok.start, word, n))
        return false;
    start_line(p);
    return true;
}

/* if COND: ... [elif COND: ...]* [else: ...] */
static json_t *parse_if(parser_t *p, int indent)
{
    json_t *node = new_compound(p, &p->cur, "if");
    json_t *branches = node != NULL ? json_array() : NULL;
    if (node == NULL || !set(p, node, "branches", branches))
        return NULL;
    do {
        lab__tok_t kw = p->cur;
        advance(p);
        json_t *br = new_node(p, kw.start);
        if (br == NULL || json_array_append_new(branches, br) != 0) {
            fail_nomem(p);
            goto err_decref_node;
        }
        char after[48];
        short_name(p, &kw, after, sizeof(after));
        if (!expect_value(p, after))
            goto err_decref_node;
        int d = 0;
        json_t *cond = parse_expr(p, false, &d);
        if (cond == NULL || json_object_set_new(br, "cond", cond) != 0 ||
            !parse_header_end(p, indent, br, "body")) {
            if (cond == NULL)
                fail_nomem(p);
            goto err_decref_node;
        }
    } while (next_line_starts(p, indent, "elif"));
    if (next_line_starts(p, indent, "else")) {
        advance(p);
        if (!parse_header_end(p, indent, node, "else"))
            goto err_decref_node;
    }
    if (p->st != DL_OK)
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* The rest of a loop's header, from the expression after the word `after`
 * (stored as node[key]) to its body, parsed as a loop's: break and
 * continue belong to it. On failure node is released. */
static json_t *loop_rest(parser_t *p, int indent, json_t *node, const char *after, const char *key)
{
    if (!expect_value(p, after))
        goto err_decref_node;
    int d = 0;
    json_t *e = parse_expr(p, false, &d);
    if (e == NULL)
        goto err_decref_node;
    if (!set(p, node, key, e))
        return NULL; /* set released node */
    p->loops++;
    bool ok = parse_header_end(p, indent, node, "body");
    p->loops--;
    if (!ok)
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* for NAME in EXPR: ... (or for A, B in EXPR: ...) */
static json_t *parse_for(parser_t *p, int indent)
{
    json_t *node = new_compound(p, &p->cur, "for");
    if (node == NULL)
        return NULL;
    advance(p);
    if (!parse_loop_target(p, node))
        return NULL;
    if (!tok_is(p, &p->cur, "in")) {
        fail_expected(p, "'in'", &p->cur);
        json_decref(node);
        return NULL;
    }
    advance(p);
    return loop_rest(p, indent, node, "in", "iter");
}

/* with torch.no_grad(): BODY (or enable_grad, inference_mode), as torch's
 * training loops write their updates: the shell keeps no autograd, so the
 * context changes nothing and the block is its body, the node of `if
 * True: BODY`. Any other context manager is refused. */
static json_t *parse_with(parser_t *p, int indent)
{
    static const char *const known[] = {"no_grad", "enable_grad", "inference_mode"};
    lab__tok_t kw = p->cur;
    advance(p);
    lab__tok_t ctx = p->cur;
    bool ok = tok_is(p, &p->cur, "torch");
    if (ok) {
        advance(p);
        ok = p->cur.kind == LAB__T_DOT;
    }
    if (ok) {
        advance(p);
        ok = false;
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
            ok = ok || tok_is(p, &p->cur, known[i]);
    }
    if (ok) {
        advance(p);
        ok = p->cur.kind == LAB__T_LPAREN;
    }
    if (ok) {
        advance(p);
        ok = p->cur.kind == LAB__T_RPAREN;
    }
    if (!ok) {
        fail_at(p, DL_ERR_INVALID, ctx.start,
                "with: the shell knows torch.no_grad(), torch.enable_grad() and "
                "torch.inference_mode(), which change nothing here (it keeps no autograd)");
        return NULL;
    }
    advance(p);
    json_t *node = new_compound(p, &kw, "if");
    json_t *branches = node != NULL ? json_array() : NULL;
    if (node == NULL || !set(p, node, "branches", branches))
        return NULL;
    json_t *br = new_node(p, kw.start), *cond = NULL;
    if (br == NULL || json_array_append_new(branches, br) != 0 ||
        (cond = new_node(p, ctx.start)) == NULL || json_object_set_new(br, "cond", cond) != 0 ||
        json_object_set_new(cond, "bool", json_true()) != 0) {
        fail_nomem(p);
        json_decref(node);
        return NULL;
    }
    if (!parse_header_end(p, indent, br, "body") || p->st != DL_OK) {
        json_decref(node);
        return NULL;
    }
    return node;
}

/* One exception class of an except clause or a raise, NAME, into *out (a
 * new string): one of Python's that the shell tells apart (lang.h). */
static bool parse_exc_class(parser_t *p, json_t **out)
{
    lab__tok_t tok = p->cur;
    char name[32];
    snprintf(name, sizeof(name), "%.*s", tok.len < 31 ? (int)tok.len : 31, tok_text(p, &tok));
    if (tok.kind != LAB__T_NAME || tok.len > 31 || !lab_lang_is_exc_class(name)) {
        if (tok.kind == LAB__T_NAME)
            fail_at(p, DL_ERR_INVALID, tok.start,
                    "unknown exception class '%s' (the shell tells apart %s)", name,
                    LAB_LANG_EXC_CLASSES);
        else
            fail_expected(p, "an exception class", &tok);
        return false;
    }
    if ((*out = json_string(name)) == NULL) {
        fail_nomem(p);
        return false;
    }
    advance(p);
    return true;
}

/* except [CLASS | (CLASS, ...)] [as NAME]: BODY, one handler of a try, into
 * handlers: {"classes": [...] (none: any), "as": NAME, "body": [...]}.
 * p->cur is 'except'. */
static bool parse_handler(parser_t *p, int indent, json_t *handlers)
{
    lab__tok_t kw = p->cur;
    advance(p);
    json_t *h = new_node(p, kw.start), *classes = NULL;
    if (h == NULL || json_array_append_new(handlers, h) != 0) {
        fail_nomem(p);
        return false;
    }
    if (p->cur.kind == LAB__T_NAME || p->cur.kind == LAB__T_LPAREN) {
        if ((classes = json_array()) == NULL || json_object_set_new(h, "classes", classes) != 0) {
            fail_nomem(p);
            return false;
        }
        bool group = p->cur.kind == LAB__T_LPAREN;
        lab__tok_t open = p->cur;
        if (group)
            advance(p);
        do {
            if (json_array_size(classes) > 0)
                advance(p); /* ',' */
            if (group && p->cur.kind == LAB__T_RPAREN && json_array_size(classes) > 0)
                break; /* (ValueError,) */
            if (json_array_size(classes) >= 16) {
                fail_at(p, DL_ERR_TOO_BIG, p->cur.start, "too many classes (at most 16)");
                return false;
            }
            json_t *c;
            if (!parse_exc_class(p, &c))
                return false;
            if (json_array_append_new(classes, c) != 0) {
                fail_nomem(p);
                return false;
            }
        } while (group && p->cur.kind == LAB__T_COMMA);
        if (group && !close_bracket(p, &open, LAB__T_RPAREN, '(', ')'))
            return false;
    }
    if (tok_is(p, &p->cur, "as")) {
        advance(p);
        lab__tok_t name = p->cur;
        if (name.kind != LAB__T_NAME || is_keyword_tok(p, &name)) {
            fail_expected(p, "a name after 'as'", &name);
            return false;
        }
        if (!check_assignable(p, &name))
            return false;
        json_t *as = new_name_string(p, &name);
        if (as == NULL || json_object_set_new(h, "as", as) != 0) {
            fail_nomem(p); /* json_object_set_new released as */
            return false;
        }
        advance(p);
    }
    return parse_header_end(p, indent, h, "body");
}

/* try: BODY, then except handlers, [else: ...] and [finally: ...], as
 * Python's: {"kind": "try", "body", ["handlers"], ["else"], ["finally"]}. */
static json_t *parse_try(parser_t *p, int indent)
{
    lab__tok_t kw = p->cur;
    json_t *node = new_compound(p, &kw, "try");
    if (node == NULL)
        return NULL;
    advance(p);
    if (!parse_header_end(p, indent, node, "body"))
        goto err_decref_node;
    json_t *handlers = NULL;
    while (next_line_starts(p, indent, "except")) {
        if (handlers == NULL && ((handlers = json_array()) == NULL ||
                                 json_object_set_new(node, "handlers", handlers) != 0)) {
            fail_nomem(p);
            goto err_decref_node;
        }
        /* a bare except catches all: one after it could never run */
        const json_t *last = json_array_get(handlers, json_array_size(handlers) - 1);
        if (last != NULL && json_object_get(last, "classes") == NULL) {
            fail_at(p, DL_ERR_INVALID, p->cur.start, "default 'except:' must be last");
            goto err_decref_node;
        }
        if (!parse_handler(p, indent, handlers))
            goto err_decref_node;
    }
    if (handlers != NULL && next_line_starts(p, indent, "else")) {
        advance(p);
        if (!parse_header_end(p, indent, node, "else"))
            goto err_decref_node;
    }
    if (next_line_starts(p, indent, "finally")) {
        advance(p);
        if (!parse_header_end(p, indent, node, "finally"))
            goto err_decref_node;
    }
    if (p->st != DL_OK)
        goto err_decref_node;
    if (handlers == NULL && json_object_get(node, "finally") == NULL) {
        /* where the block ended, as Python points at it */
        fail_at(p, DL_ERR_INVALID, p->cur.start, "expected 'except' or 'finally' block");
        goto err_decref_node;
    }
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* raise [CLASS[(MESSAGE)]]: Python's raise of one of the classes the
 * shell knows, {"kind": "raise", ["class", ["msg": EXPR]]}; raise alone,
 * in an except clause, raises again what it caught. */
static json_t *parse_raise(parser_t *p)
{
    lab__tok_t kw = p->cur;
    advance(p);
    json_t *stmt = new_stmt(p, kw.start, "raise"), *cls = NULL;
    if (stmt == NULL)
        return NULL;
    if (p->cur.kind == LAB__T_EOF || p->cur.kind == LAB__T_SEMI)
        return stmt;
    if (!parse_exc_class(p, &cls)) {
        json_decref(stmt);
        return NULL;
    }
    if (!set(p, stmt, "class", cls))
        return NULL;
    if (p->cur.kind != LAB__T_LPAREN)
        return stmt;
    lab__tok_t open = p->cur;
    advance(p);
    if (p->cur.kind != LAB__T_RPAREN) {
        if (!expect_value(p, "(")) {
            json_decref(stmt);
            return NULL;
        }
        int d = 0;
        json_t *msg = parse_expr(p, false, &d);
        if (msg == NULL) {
            json_decref(stmt);
            return NULL;
        }
        if (!set(p, stmt, "msg", msg))
            return NULL;
    }
    if (!close_bracket(p, &open, LAB__T_RPAREN, '(', ')')) {
        json_decref(stmt);
        return NULL;
    }
    return stmt;
}

/* while COND: BODY, {"kind": "while", "cond": EXPR, "body": [...]}. */
static json_t *parse_while(parser_t *p, int indent)
{
    json_t *node = new_compound(p, &p->cur, "while");
    if (node == NULL)
        return NULL;
    advance(p);
    return loop_rest(p, indent, node, "while", "cond");
}

/* The parameters of a def, '(' [NAME ['=' EXPR] (',' NAME ['=' EXPR])* [',']] ')',
 * into params (names) and defaults (NAME: EXPR). p->cur is the '('. */
static bool parse_param_list(parser_t *p, json_t *params, json_t *defaults, const lab__tok_t *open,
                             bool *star_p);
static bool parse_params(parser_t *p, json_t *params, json_t *defaults, bool *star_p)
{
    lab__tok_t open = p->cur;
    if (open.kind != LAB__T_LPAREN) {
        fail_expected(p, "'(' after the function's name", &open);
        return false;
    }
    if (!enter(p, open.start))
        return false;
    advance(p);
    if (!parse_param_list(p, params, defaults, &open, star_p))
        return false;
    advance(p); /* ')' */
    p->nest--;
    return true;
}

/* The parameters up to the ')' after open (a def's) or, without open, up
 * to the ':' of a lambda, which is left as p->cur. A last *NAME takes the
 * other positional arguments as a tuple: it is the last of params, and
 * *star_p says so. */
static bool parse_param_list(parser_t *p, json_t *params, json_t *defaults, const lab__tok_t *open,
                             bool *star_p)
{
    lab__tok_kind_t closer = open != NULL ? LAB__T_RPAREN : LAB__T_COLON;
    *star_p = false;
    while (p->cur.kind != closer) {
        lab__tok_t name = p->cur;
        if (at_end(p)) {
            if (open != NULL)
                fail_at(p, DL_ERR_INVALID, open->start, "unclosed '('");
            else
                fail_expected(p, "':' after the lambda's parameters", &name);
            return false;
        }
        if (name.kind == LAB__T_POW) {
            fail_at(p, DL_ERR_INVALID, name.start, "**NAME (keyword arguments) is not taken here");
            return false;
        }
        if (*star_p) {
            fail_at(p, DL_ERR_INVALID, name.start,
                    "a parameter after *%s is not taken here: *NAME comes last",
                    json_string_value(json_array_get(params, json_array_size(params) - 1)));
            return false;
        }
        if (name.kind == LAB__T_STAR) {
            advance(p);
            name = p->cur;
            *star_p = true;
        }
        if (name.kind != LAB__T_NAME || is_keyword_tok(p, &name) || tok_is(p, &name, "None") ||
            tok_is(p, &name, "True") || tok_is(p, &name, "False") || tok_is(p, &name, "true") ||
            tok_is(p, &name, "false")) {
            fail_expected(p, "a parameter name", &name);
            return false;
        }
        if (json_array_size(params) >= p->lim->max_list) {
            fail_at(p, DL_ERR_TOO_BIG, name.start, "too many parameters (at most %zu)",
                    p->lim->max_list);
            return false;
        }
        char shown[48];
        short_name(p, &name, shown, sizeof(shown));
        size_t i;
        json_t *have;
        json_array_foreach(params, i, have)
        {
            if (json_string_length(have) == name.len &&
                memcmp(json_string_value(have), tok_text(p, &name), name.len) == 0) {
                fail_at(p, DL_ERR_INVALID, name.start,
                        "duplicate argument '%s' in function definition", shown);
                return false;
            }
        }
        json_t *v = new_name_string(p, &name);
        if (v == NULL || json_array_append_new(params, v) != 0) {
            fail_nomem(p);
            return false;
        }
        advance(p);
        if (*star_p && p->cur.kind == LAB__T_EQ) {
            fail_at(p, DL_ERR_INVALID, p->cur.start,
                    "var-positional argument cannot have default value");
            return false;
        }
        if (*star_p) {
            /* the other positional arguments: no default, none after it */
        } else if (p->cur.kind == LAB__T_EQ) {
            advance(p);
            char after[64];
            snprintf(after, sizeof(after), "%s=", shown);
            if (!expect_value(p, after))
                return false;
            int d = 0;
            json_t *e = parse_expr(p, false, &d);
            if (e == NULL)
                return false;
            if (json_object_setn_new(defaults, tok_text(p, &name), name.len, e) != 0) {
                fail_nomem(p);
                return false;
            }
        } else if (json_object_size(defaults) > 0) {
            fail_at(p, DL_ERR_INVALID, name.start,
                    "non-default argument '%s' follows default argument", shown);
            return false;
        }
        if (p->cur.kind == LAB__T_COMMA) {
            advance(p);
            continue;
        }
        if (p->cur.kind != closer) {
            if (at_end(p) && open != NULL)
                fail_at(p, DL_ERR_INVALID, open->start, "unclosed '('");
            else
                fail_expected(p, open != NULL ? "',' or ')'" : "',' or ':'", &p->cur);
            return false;
        }
    }
    return true;
}

/* def NAME(PARAMS): ... A function of the rank, run where it is called.
 * Its parameters are variables in its body even where they are named like
 * a command (def allreduce(send, recv)), and there rank and world_size
 * may be assigned (local variables, as in Python). */
static json_t *parse_def(parser_t *p, int indent)
{
    json_t *node = new_compound(p, &p->cur, "def");
    if (node == NULL)
        return NULL;
    advance(p);
    lab__tok_t name = p->cur;
    if (name.kind != LAB__T_NAME || is_keyword_tok(p, &name)) {
        fail_expected(p, "a function name after 'def'", &name);
        goto err_decref_node;
    }
    char shown[48];
    short_name(p, &name, shown, sizeof(shown));
    const lab_cmd_t *entry = lab__cmd_findn(tok_text(p, &name), name.len);
    if ((entry != NULL && (entry->flags & LAB_CMD_FUNCTION) &&
         !(entry->flags & LAB_CMD_FREE_NAME)) ||
        tok_is(p, &name, "range")) {
        fail_at(p, DL_ERR_INVALID, name.start,
                "cannot define '%s': the shell has a function of that name", shown);
        goto err_decref_node;
    }
    if (entry != NULL && !(entry->flags & (LAB_CMD_SESSION | LAB_CMD_FREE_NAME))) {
        fail_at(p, DL_ERR_INVALID, name.start, "cannot define '%s': it is a command", shown);
        goto err_decref_node;
    }
    if (!check_assignable(p, &name))
        goto err_decref_node;
    if (!set(p, node, "name", new_name_string(p, &name)))
        return NULL;
    advance(p);
    json_t *params = json_array(), *defaults = json_object();
    if (!set(p, node, "params", params)) {
        json_decref(defaults);
        return NULL;
    }
    bool star = false;
    if (!parse_params(p, params, defaults, &star)) {
        json_decref(defaults);
        goto err_decref_node;
    }
    if (star && !set(p, node, "star", json_true())) {
        json_decref(defaults);
        return NULL;
    }
    if (json_object_size(defaults) > 0) {
        if (!set(p, node, "defaults", defaults))
            return NULL;
    } else {
        json_decref(defaults);
    }
    const json_t *saved_params = p->params;
    int saved_loops = p->loops;
    p->params = params;
    p->defs++;
    p->loops = 0;
    bool ok = parse_header_end(p, indent, node, "body");
    p->loops = saved_loops;
    p->defs--;
    p->params = saved_params;
    if (!ok)
        goto err_decref_node;
    return node;

err_decref_node:
    json_decref(node);
    return NULL;
}

/* lambda PARAMS: EXPR, a function without a name, {"lambda": true,
 * "params", ["defaults",] "body": [return EXPR]}: what a def of one
 * return would be, as Python's (it has no "name", which would make the
 * node a variable's). */
static json_t *parse_lambda(parser_t *p, int *depth_p)
{
    lab__tok_t kw = p->cur;
    json_t *node = new_node(p, kw.start), *params = json_array();
    /* set() takes what it is given, and releases node when it fails */
    if (node == NULL || !set(p, node, "lambda", json_true()) || !set(p, node, "params", params))
        return NULL;
    json_t *defaults = json_object(), *value = NULL;
    if (defaults == NULL) {
        fail_nomem(p);
        goto err;
    }
    if (!enter(p, kw.start))
        goto err;
    advance(p);
    bool star = false;
    bool ok = parse_param_list(p, params, defaults, NULL, &star);
    if (ok && star && !set(p, node, "star", json_true())) {
        node = NULL;
        ok = false;
    }
    if (ok) {
        advance(p); /* ':' */
        ok = expect_value(p, ":");
    }
    size_t at = p->cur.start;
    if (ok) {
        /* its parameters are variables in its body, as a def's */
        const json_t *saved_params = p->params;
        p->params = params;
        int d = 0;
        value = parse_expr(p, false, &d);
        p->params = saved_params;
        ok = value != NULL && add_level(p, depth_p, d, at);
    }
    p->nest--;
    json_t *ret = ok ? new_stmt(p, at, "return") : NULL;
    if (ret == NULL)
        goto err;
    json_t *body = json_array();
    /* both take what they are given, even when they fail */
    if (!set(p, ret, "value", value)) {
        json_decref(body);
        value = NULL;
        goto err;
    }
    value = NULL;
    if (json_array_append_new(body, ret) != 0) {
        fail_nomem(p);
        json_decref(body);
        goto err;
    }
    if (json_object_size(defaults) > 0) {
        if (!set(p, node, "defaults", defaults)) {
            json_decref(body);
            return NULL;
        }
    } else {
        json_decref(defaults);
    }
    return set(p, node, "body", body) ? node : NULL;

err:
    json_decref(value);
    json_decref(defaults);
    json_decref(node);
    return NULL;
}

/* How many more brackets one physical line opens than it closes (a string
 * does not span lines, so each line is read alone); strings and comments
 * are skipped as the lexer reads them. */
static long bracket_delta(const char *s, size_t len)
{
    lab__lexer_t lx;
    lab__lex_init(&lx, s, len);
    long d = 0;
    for (lab__tok_t tok;;) {
        lab__lex_next(&lx, &tok);
        if (tok.kind == LAB__T_EOF)
            return d;
        d += bracket_step(&tok);
    }
}

/* Splits text into the lines that hold statements. */
static bool split_lines(parser_t *p, const char *text, size_t len)
{
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == '\n';
    p->lines = calloc(cap, sizeof(*p->lines));
    if (p->lines == NULL) {
        fail_nomem(p);
        return false;
    }
    int no = 0;
    for (size_t at = 0; at <= len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        no++;
        int indent = 0;
        size_t q = at;
        for (; q < end && lab__is_blank((unsigned char)text[q]); q++)
            indent = text[q] == '\t' ? (indent / 8 + 1) * 8 : indent + 1;
        int first = no;
        /* While a bracket is open, the next physical line goes on the
         * same logical one. */
        long depth = q < end && text[q] != '#' ? bracket_delta(text + at, end - at) : 0;
        while (depth > 0 && nl != NULL) {
            size_t from = end + 1;
            nl = memchr(text + from, '\n', len - from);
            end = nl != NULL ? (size_t)(nl - text) : len;
            no++;
            depth += bracket_delta(text + from, end - from);
        }
        if (q < end && text[q] != '#')
            p->lines[p->nlines++] =
                (pline_t){.start = at, .len = end - at, .indent = indent, .no = first};
        if (nl == NULL)
            break;
        at = end + 1;
    }
    return true;
}

/* ---- entry points ---- */

dl_status_t lab__parse_line_limits(const char *line, const lab__limits_t *lim, json_t **stmts_p,
                                   lab_parse_error_t *err)
{
    lab_parse_error_t scratch;
    if (err == NULL)
        err = &scratch;
    err->col = 0;
    err->line = 0;
    err->msg[0] = '\0';
    if (line == NULL || stmts_p == NULL || lim == NULL) {
        snprintf(err->msg, sizeof(err->msg), "no line to parse");
        return DL_ERR_INVALID;
    }
    size_t len = strnlen(line, lim->max_line + 1);
    if (len > lim->max_line) {
        err->col = (int)lim->max_line + 1;
        snprintf(err->msg, sizeof(err->msg), "line is too long (at most %zu bytes)", lim->max_line);
        return DL_ERR_TOO_BIG;
    }

    parser_t p = {.lim = lim, .st = DL_OK, .err = err, .text = line};
    json_t *stmts = json_array();
    if (stmts == NULL) {
        fail_nomem(&p);
        return p.st;
    }
    if (split_lines(&p, line, len) && p.nlines > 0)
        parse_block(&p, p.lines[0].indent, -1, stmts);
    free(p.lines);
    if (p.st != DL_OK) {
        json_decref(stmts);
        return p.st;
    }
    *stmts_p = stmts;
    return DL_OK;
}

dl_status_t lab_parse_line(const char *line, json_t **stmts_p, lab_parse_error_t *err)
{
    return lab__parse_line_limits(line, &lab__default_limits, stmts_p, err);
}

/* The first token of a line, in expression mode, and its last before the
 * end or a comment. */
static void line_ends(const char *s, size_t len, lab__tok_t *first, lab__tok_t *last)
{
    lab__lexer_t lx;
    lab__lex_init(&lx, s, len);
    lab__lex_next(&lx, first);
    *last = *first;
    for (lab__tok_t tok = *first; tok.kind != LAB__T_EOF;) {
        *last = tok;
        lab__lex_next(&lx, &tok);
    }
}

static bool first_is(const char *s, const lab__tok_t *tok, const char *word)
{
    size_t n = strlen(word);
    return tok->kind == LAB__T_NAME && tok->len == n && memcmp(s + tok->start, word, n) == 0;
}

bool lab_lang_open_brackets(const char *text)
{
    long depth = 0;
    for (const char *at = text;;) {
        const char *nl = strchr(at, '\n');
        size_t n = nl != NULL ? (size_t)(nl - at) : strlen(at);
        depth += bracket_delta(at, n);
        if (nl == NULL)
            return depth > 0;
        at = nl + 1;
    }
}

void lab_lang_gather_start(lab_lang_gather_t *g, const char *line)
{
    g->block = lab_lang_starts_block(line);
    g->depth = bracket_delta(line, strlen(line));
}

bool lab_lang_gather_open(const lab_lang_gather_t *g)
{
    return g->block || g->depth > 0;
}

bool lab_lang_gather_takes(lab_lang_gather_t *g, const char *line)
{
    if (g->depth <= 0 && !(g->block && lab_lang_continues_block(line)))
        return false;
    g->depth += bracket_delta(line, strlen(line));
    return true;
}

bool lab_lang_needs_more(const char *text)
{
    if (lab_lang_open_brackets(text))
        return true; /* as Python's prompt, an empty line does not close a bracket */
    bool open = false, last_blank = false;
    size_t len = strlen(text), lines = 0;
    for (size_t at = 0; at <= len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        lab__tok_t first, last;
        line_ends(text + at, end - at, &first, &last);
        lines++;
        last_blank = first.kind == LAB__T_EOF;
        static const char *const heads[] = {"on",  "if",   "elif", "else",   "for",    "while",
                                            "def", "with", "try",  "except", "finally"};
        for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]) && !open; i++)
            open = first_is(text + at, &first, heads[i]) && last.kind == LAB__T_COLON;
        /* try: x = 1 / 0 on one line still waits for its except */
        open = open || first_is(text + at, &first, "try");
        if (nl == NULL)
            break;
        at = end + 1;
    }
    /* An empty line closes the block, as at Python's prompt. */
    return open && !(lines > 1 && last_blank);
}

bool lab_lang_starts_block(const char *line)
{
    lab__lexer_t lx;
    lab__tok_t first;
    lab__lex_init(&lx, line, strlen(line));
    lab__lex_next(&lx, &first);
    return first_is(line, &first, "on") || first_is(line, &first, "if") ||
           first_is(line, &first, "for") || first_is(line, &first, "while") ||
           first_is(line, &first, "def") || first_is(line, &first, "with") ||
           first_is(line, &first, "try");
}

bool lab_lang_continues_block(const char *line)
{
    size_t len = strlen(line);
    lab__tok_t first, last;
    line_ends(line, len, &first, &last);
    return first.kind == LAB__T_EOF || lab__is_blank((unsigned char)line[0]) ||
           first_is(line, &first, "elif") || first_is(line, &first, "else") ||
           first_is(line, &first, "except") || first_is(line, &first, "finally");
}

/* ---- the caret display ---- */

/* How one cell of the display is drawn. */
typedef enum { CELL_COPY, CELL_BLANK, CELL_UNKNOWN } cell_kind_t;

typedef struct {
    size_t start, len;
    cell_kind_t kind;
} cell_t;

static size_t split_cells(const char *line, size_t len, cell_t *cells)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)line[i];
        cell_t cell = {.start = i, .len = 1, .kind = CELL_COPY};
        if (c < 0x80) {
            if (lab__is_blank(c))
                cell.kind = CELL_BLANK;
            else if (c < 0x20 || c == 0x7f)
                cell.kind = CELL_UNKNOWN;
        } else {
            size_t u = lab__utf8_len(line + i, len - i);
            if (u == 0)
                cell.kind = CELL_UNKNOWN;
            else
                cell.len = u;
        }
        cells[n++] = cell;
        i += cell.len;
    }
    return n;
}

dl_status_t lab_parse_error_show(const char *line, const lab_parse_error_t *err, int width,
                                 char **text_p)
{
    if (line == NULL || err == NULL || text_p == NULL)
        return DL_ERR_INVALID;
    size_t msg_len = strnlen(err->msg, sizeof(err->msg));
    if (err->col <= 0) {
        char *text = malloc(msg_len + 3);
        if (text == NULL)
            return DL_ERR_NOMEM;
        snprintf(text, msg_len + 3, "  %.*s", (int)msg_len, err->msg);
        *text_p = text;
        return DL_OK;
    }
    /* In a text of several lines, the line the error is on. */
    for (int no = 1; no < err->line; no++) {
        const char *nl = strchr(line, '\n');
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    const char *nl = strchr(line, '\n');
    size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
    cell_t *cells = malloc((len + 1) * sizeof(*cells));
    if (cells == NULL)
        return DL_ERR_NOMEM;
    size_t n = split_cells(line, len, cells);
    size_t at = (size_t)err->col - 1, caret = n;
    for (size_t i = 0; i < n; i++) {
        if (at < cells[i].start + cells[i].len) {
            caret = i;
            break;
        }
    }

    /* Show cells [lo, hi). A window needs room for both "..." and some
     * context; below 20 columns clipping would hide more than it helps. */
    size_t lo = 0, hi = n;
    size_t need = (caret + 1 > n ? caret + 1 : n) + 2;
    if (width >= 20 && need > (size_t)width) {
        size_t room = (size_t)width - 2 - 6;
        lo = caret > room / 2 ? caret - room / 2 : 0;
        hi = lo + room;
        if (hi > n) {
            hi = n;
            lo = hi > room ? hi - room : 0;
        }
    }
    bool left = lo > 0, right = hi < n;

    size_t cap = 2 * len + msg_len + 32;
    char *text = malloc(cap);
    if (text == NULL) {
        free(cells);
        return DL_ERR_NOMEM;
    }
    size_t o = 0;
    o += (size_t)snprintf(text + o, cap - o, "  %s", left ? "..." : "");
    for (size_t i = lo; i < hi; i++) {
        if (cells[i].kind == CELL_COPY) {
            memcpy(text + o, line + cells[i].start, cells[i].len);
            o += cells[i].len;
        } else {
            text[o++] = cells[i].kind == CELL_BLANK ? ' ' : '?';
        }
    }
    o += (size_t)snprintf(text + o, cap - o, "%s\n  %s", right ? "..." : "", left ? "   " : "");
    memset(text + o, ' ', caret - lo);
    o += caret - lo;
    snprintf(text + o, cap - o, "^ %.*s", (int)msg_len, err->msg);
    free(cells);
    *text_p = text;
    return DL_OK;
}

size_t lab_parse_error_format(const char *line, const lab_parse_error_t *err, char *buf, size_t cap)
{
    char *text = NULL;
    int n;
    if (lab_parse_error_show(line, err, LAB_PARSE_ERROR_WIDTH, &text) == DL_OK) {
        n = snprintf(buf, cap, "%s\n", text);
        free(text);
    } else {
        /* Out of memory, or no line: the message alone still helps. */
        n = snprintf(buf, cap, "  %s\n", err != NULL ? err->msg : "syntax error");
    }
    return n > 0 ? (size_t)n : 0;
}
