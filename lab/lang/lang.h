/* The command language of the distlab shell: parser to a JSON AST, one-line
 * errors with a column, the command table and tab completion.
 *
 * The language stays close to torch.distributed, so that a line from a torch
 * tutorial maps almost one to one:
 *
 *     t = arange(4) + 1 + 2*rank; on 0: send t dst=1; on 1: recv t src=0
 *     all_reduce t op=max group=g     h = isend t dst=1     set algo all_reduce ring
 *
 * Nothing here evaluates anything. The parser turns a line into statements,
 * a rank-side evaluator and the REPL act on them. One static table
 * (lab_cmd_all) names every command and function; it drives the parser's
 * decisions, dispatch, `help`, completion and the docs' command list.
 *
 * ---- Lexical rules ----
 *
 * - A text is one line or several, split at '\n'. A line holds statements
 *   separated by ';'. Empty statements are allowed (";;", a trailing ';', a
 *   blank line). '#' outside a string starts a comment that runs to the end of its line.
 *   Blanks are space, tab, CR, VT and FF. A line's indentation (a tab counts
 *   to the next multiple of 8 columns) matters only for blocks, below; a
 *   script reader hands over a block's lines as one text
 *   (lab_lang_needs_more, lab_lang_starts_block).
 * - Strings, as Python writes them on one line: '...', "...", '''...''' or
 *   """...""", with the escapes \\ \' \" \n \t \r \0 (any other backslash is
 *   an error); f'...' and f"..." are f-strings, whose {EXPR} fields the
 *   parser reads ({{ and }} are braces). A string holds valid UTF-8 and no
 *   control byte but the blanks.
 * - Names: [A-Za-z_][A-Za-z0-9_]*. Numbers: integers (digits) and floats
 *   (1.5, .5, 2., 1e-3, 2.5E+3). A number running into a letter, '_' or a
 *   second '.' ("2x", "1e", "1.2.3") is malformed. Integers must fit in
 *   int64, floats must be finite.
 * - Columns are 1-based byte offsets into the original line. An error at the
 *   end of the line points one past the last character that is not a blank
 *   or part of a comment.
 *
 * ---- Grammar ----
 *
 *   text      := line ('\n' line)*          (blank and comment lines ignored)
 *   line      := seq | seq-head ':' NEWLINE block
 *   seq       := [item] (';' [item])* [compound]
 *   item      := 'on' ranks ':' | body       ('on' applies to the rest of the line,
 *                                            up to the next 'on')
 *   compound  := 'if' expr ':' suite ('elif' expr ':' suite)* ['else' ':' suite]
 *              | 'for' NAME 'in' expr ':' suite
 *              | 'def' NAME '(' [param (',' param)* [',']] ')' ':' suite
 *   param     := NAME ['=' expr]            (no parameter without a default after one
 *                                            with a default)
 *   suite     := seq                         (the rest of the line)
 *              | NEWLINE block               (the lines below, indented more than
 *                                            the header's line, all alike)
 *   (elif and else start lines indented as their if's line.)
 *   ranks     := range (',' range)*         range := INT ['-' INT]
 *   body      := NAME '=' COMMAND-CALL      (when the NAME after '=' is a command)
 *              | NAME '=' expr
 *              | NAME ('+=' | '-=' | '*=' | '/=') expr   (in place, as torch's add_)
 *              | NAME sub+ ('=' | '+=' | '-=' | '*=' | '/=') expr   (t[1] = 5, m[0][1:] *= 2)
 *              | COMMAND-CALL
 *              | NAME (',' NAME)+ [','] '=' expr (',' expr)*   (unpacking: v, i = t.max(dim=0))
 *              | 'return' [expr (',' expr)*]   (only in the body of a def)
 *              | 'pass'
 *              | postfix                     (a call as a statement: f(x) of a function
 *                                            the table does not have, h.wait(); its value
 *                                            is dropped)
 *              | STRING | FSTRING            (a docstring: does nothing)
 *   COMMAND-CALL := CMD item*               (space style: send t dst=1)
 *              | CMD '(' [item (',' item)* [',']] ')'   (torch style: send(t, dst=1),
 *                                            only when '(' touches the name)
 *              | RAWCMD word*               (raw-word commands: set algo all_reduce ring)
 *   item      := NAME '=' expr | expr
 *   expr      := disj ['if' disj 'else' expr]   (Python's A if C else B)
 *   disj      := and ('or' and)*            (Python's, looser than the rest but if-else)
 *   and       := not ('and' not)*
 *   not       := 'not' not | compare
 *   compare   := sum [('==' | '!=' | '<' | '<=' | '>' | '>=') sum]   (no chains: a < b < c
 *                                            is an error)
 *   sum       := term (('+' | '-') term)*   (left associative)
 *   term      := unary (('*' | '/' | '%' | '@') unary)*  (left associative; @ is matmul)
 *   unary     := '-' unary | power          (so -a*b is (-a)*b, as in Python)
 *   power     := postfix ['**' unary]       (-2**2 is -(2**2); 2**3**2 is 2**(3**2))
 *   postfix   := primary (sub | method)*
 *   sub       := '[' part (',' part)* ']'   (m[1, 2] is m[1][2])
 *   part      := expr | [expr] ':' [expr] [':' [expr]]   (an index or a slice)
 *   method    := '.' NAME '(' [item (',' item)* [',']] ')' | '.' NAME   (t.sum(), t.T: only
 *                                            the table's LAB_CMD_METHOD names)
 *   primary   := NUMBER | 'true' | 'false' | 'True' | 'False' | NAME | STRING | FSTRING
 *              | NAME '(' [item (',' item)* [',']] ')' | '[' [expr (',' expr)* [',']] ']'
 *              | '[' expr 'for' NAME 'in' disj ['if' disj] ']'   (a list comprehension)
 *              | '{' [expr ':' expr (',' expr ':' expr)* [',']] '}'   (a dict)
 *              | '{' expr ':' expr 'for' NAME 'in' disj ['if' disj] '}'   (a dict
 *                                            comprehension; a set, {a, b}, is refused)
 *              | '(' expr ')' | tuple
 *   tuple     := '(' ')' | '(' expr ',' [expr (',' expr)* [',']] ')'   (Python's tuples:
 *                                            (), (3,), (2, 3); sizes as torch writes them)
 *
 * - torch.NAME, dist.NAME and torch.distributed.NAME stand for NAME when
 *   the table has it (torch. for tensor functions and dtypes, dist. for the
 *   point-to-point and collective rows), and dist.ReduceOp.OP and
 *   ReduceOp.OP for the name OP (an op dl_op_parse knows): the AST holds
 *   the name alone, at its own column (a statement's "col" stays at the
 *   prefix). Any other torch./dist. name is an error.
 * - In the call form of a rank command, torch's positional parameters bind
 *   as Python binds them (lab__cmd_params): send(t, 1) is send(t, dst=1),
 *   send(tensor=t, dst=1) is send(t, dst=1); the AST holds the canonical
 *   form (the tensors in "args", the rest in "kwargs").
 * - In the body of a def, its parameters are variables even where they are
 *   named like a command (def allreduce(send, recv): recv[:] = ... is a
 *   store, send.clone() a method call; dist.recv is still the command),
 *   and rank and world_size may be assigned (local variables). A def may
 *   not be named like a command or a function of the table, nor range.
 * - Besides the table's tensor methods, h.wait() (LAB_CMD_OBJECT_METHOD: the
 *   command wait as a method of a handle) and p.values and p.indices (the
 *   pair t.max(dim=D) gives) follow a '.'.
 * - 'on', 'if', 'elif', 'else', 'for', 'in', 'def', 'return' and 'pass' are
 *   keywords. An 'on' inside
 *   an 'on' block may name only ranks of the outer one; inside an if or a
 *   for (which run on the ranks) it is a test the rank makes. Session
 *   commands (LAB_CMD_SESSION) cannot be inside an if or a for.
 * - 'on' is a keyword at the start of a statement only. Ranks are
 *   non-negative integers up to LAB_LANG_MAX_RANK; ranges are inclusive; an
 *   empty list, a reversed range or a rank named twice is an error.
 * - A statement must be a command or an assignment: a bare expression
 *   ("t + 1", "arange(3)") is "expected a command or NAME = ...". A name that
 *   is not in the table, alone or followed by arguments, is an unknown
 *   command (with a "did you mean" when one is close).
 * - Command arguments are separated by blanks, so at the top level of a
 *   space-style argument, '[' or '(' after a blank starts a new argument:
 *   `print t [0]` has two arguments, `print t[0]` one. Inside brackets, and
 *   in expressions after '=', blanks never matter. Binary operators continue
 *   an argument: `print t -1` is one argument, t - 1, as in Python.
 * - Keyword arguments may come in any order in space style; in a call or a
 *   torch-style command, a positional argument after a keyword is an error
 *   (Python's rule). A keyword given twice is an error. For a command, and
 *   for a function the table knows, a keyword the table does not list is an
 *   error; a call to a function the table does not know is accepted (the
 *   evaluator decides). A call to a command inside an expression is an error.
 * - For a raw-word command (LAB_CMD_RAW_WORDS) everything up to ';' or the
 *   end is split at blanks into words, returned as strings. A word may hold
 *   any printable character except ';' ("~/ex/ring.dl", "on|off", "3-1");
 *   '#' at the start of a word starts a comment; a word may be quoted with
 *   "..." or '...' (no escapes) to hold blanks, ';' or '#'.
 * - Assigning to true/false/True/False/None, a keyword, rank, world_size (outside a
 *   def) or a command name is an error.
 *
 * ---- AST (jansson) ----
 *
 * lab_parse_line returns a JSON array of statements. Every object below has
 * "col" (integer, 1-based column in its line), "line" (the 1-based line of
 * the text) when that is not the first, and no other keys than those
 * shown; optional keys are absent, never null, except "targets".
 *
 *   statement  {"kind": "assign", "targets": T, "name": "t", "value": EXPR, "col"}
 *              {"kind": "assign", "targets": T, "name": "h", "command": COMMAND, "col"}
 *              {"kind": "command", "targets": T, "command": COMMAND, "col"}
 *              {"kind": "assign", "targets": T, "name": "reqs", "append": true,
 *               "command": COMMAND, "col"}
 *       reqs.append(dist.isend(...)): the command's result (None for most)
 *       goes on the list reqs rather than binding a name.
 *       T is null (every rank) or an array of distinct rank integers in
 *       ascending order (on 3,0-1: gives [0, 1, 3]); when T is an array the
 *       statement also has "targets_col", the column of 'on'. The statement's
 *       "col" is where its body starts: the assigned name or the command.
 *              {"kind": "assign", "targets": T, "name": "t", "op": "+", "value": EXPR, "col"}
 *              {"kind": "assign", "targets": T, "name": "t", "target": SUBSCRIPT, ["op": "+",]
 *               "value": EXPR, "col"}
 *       t += x and t[...] = x: "op" is the operator of op= (+ - * / // %
 *       ** & | ^); "target" is the subscripted name as an index or slice
 *       EXPR whose innermost "index" is {"name": "t"}.
 *              {"kind": "if", "targets": T, "branches": [BRANCH...], "else": [STMT...], "col"}
 *              {"kind": "for", "targets": T, "var": "i", ["names": ["i", "x"],] "iter": EXPR,
 *               "body": [STMT...], "col"}
 *       for i, x in ...: (and a comprehension's): "names" holds every name,
 *       the first also in "var", and each item is unpacked into them.
 *              {"kind": "while", "targets": T, "cond": EXPR, "body": [STMT...], "col"}
 *              {"kind": "break", "targets": T, "col"}
 *              {"kind": "continue", "targets": T, "col"}
 *       break and continue only inside the body of a for or a while (a
 *       def's body starts outside any loop around the def).
 *              {"kind": "def", "targets": T, "name": "f", "params": ["a", "b"],
 *               ["defaults": {"b": EXPR},] "body": [STMT...], "col"}
 *              {"kind": "return", "targets": T, ["value": EXPR,] "col"}
 *              {"kind": "pass", "targets": T, "col"}
 *              {"kind": "assert", "targets": T, "cond": EXPR, ["msg": EXPR,] "col"}
 *              {"kind": "setenv", "targets": T, "key": EXPR, "value": EXPR, "col"}
 *       os.environ[KEY] = VALUE.
 *              {"kind": "expr", "targets": T, "value": EXPR, "col"}
 *       A call (not an attribute) or a string, as a statement.
 *              {"kind": "assign", "targets": T, "names": ["v", "i"], "value": EXPR, "col"}
 *       Unpacking; a bare tuple on the right (a, b = b, a) is a tuple node.
 *       An 'on' block gives each statement in it its own copy of T (each has
 *       "targets_col"). "else" is absent without an else; bodies are never
 *       empty. "col" of if, for and while is their keyword's.
 *   BRANCH     {"cond": EXPR, "body": [STMT...], "col"}   (col of 'if' or 'elif')
 *   COMMAND    {"cmd": "all_reduce", "args": [EXPR...], "kwargs": {"op": EXPR, ...}, "col"}
 *              {"cmd": "print", "args": [], "kwargs": {}, "empty_call": true, "col"}
 *                                                 print() (an empty line), not print alone
 *              {"cmd": "set", "words": ["set", "algo", "all_reduce", "ring"],
 *               "word_cols": [1, 5, 10, 21], "col"}     (raw-word commands)
 *       "cmd" is always a name in the table. kwargs keep the order written.
 *       "words" is argv style: words[0] is the command's name as written, so
 *       `kill 2` has two words; "word_cols" holds each word's column (for a
 *       quoted word, the column of its opening quote).
 *   EXPR       {"num": 2, "col"}                  integer literal (JSON integer)
 *              {"num": 2.5, "float": true, "col"} float literal (also 2. and 1e3)
 *              {"bool": true, "col"}              true/false/True/False
 *              {"name": "t", "col"}               any other name: tensors, rank,
 *                                                 world_size, sum, float32, ...
 *              {"call": "arange", "args": [EXPR...], "kwargs": {...}, "col"}
 *              {"call": "sum", "self": EXPR, "args": [EXPR...], "kwargs": {...}, "col"}
 *                                                 a method, EXPR.sum(...); col of the name
 *              {"call": "T", "self": EXPR, "args": [], "kwargs": {}, "attr": true, "col"}
 *                                                 an attribute, EXPR.T
 *              {"str": "text", "col"}             a string, its escapes decoded
 *              {"getenv": [EXPR], "col"}          os.environ[KEY]
 *              {"getenv": [EXPR, EXPR?], "default": true, "col"}
 *                                                 os.environ.get(KEY[, DEFAULT]), os.getenv
 *              {"environ": true, "col"}           os.environ alone (its names)
 *              {"fstr": [PART...], "col"}         an f-string: each PART a {"str"} of its
 *                                                 text, the EXPR of a field, or a field
 *                                                 with a spec {"format": EXPR, "spec":
 *                                                 ".2f", "col"}; col of 'f'
 *              {"comp": EXPR, "var": "x", ["names": ["x", "y"],] "iter": EXPR,
 *               ["cond": EXPR,] "col"}
 *                                                 [EXPR for x in ITER if COND]; col of '['
 *                                                 ({KEY: EXPR for ...} has "key": KEY too)
 *              {"list": [EXPR...], "col"}         col of '['
 *              {"dict": [KEY, VALUE, KEY, VALUE...], "col"}
 *                                                 {KEY: VALUE, ...}; col of '{'
 *              {"list": [EXPR...], "tuple": true, "col"}
 *                                                 a tuple; col of '('. The evaluator takes
 *                                                 it as a list
 *              {"bool_op": "and" | "or", "args": [EXPR, EXPR, ...], "col"}
 *                                                 a run of one word, flat; each operand
 *                                                 evaluated only while none has decided;
 *                                                 col of the first word
 *              {"if_exp": [[COND, EXPR], ...], "else": EXPR, "col"}
 *                                                 A if C else B, a run of them flat: each
 *                                                 COND tried in turn, its EXPR the value;
 *                                                 else the last; col of the first 'if'
 *              {"not": EXPR, "col"}               col of 'not'
 *              {"chain": [EXPR, EXPR, ...], "ops": [OP, ...], "col"}
 *                                                 binary operators of one precedence level
 *                                                 in a row: n terms and n - 1 OPs, applied
 *                                                 left to right, so 1 - 2 + 3 is
 *                                                 (1 - 2) + 3; col of the first operator
 *              {"neg": EXPR, "col"}               unary minus; col of '-'. Literals are not
 *                                                 folded: -1 is {"neg": {"num": 1}}.
 *              {"invert": EXPR, "col"}            ~EXPR; col of '~'
 *              {"pos": EXPR, "col"}               +EXPR; col of '+'
 *              {"index": EXPR, "at": EXPR, "col"} EXPR[at]; col of '['. t[1][2] is
 *                                                 {"index": {"index": t, "at": 1}, "at": 2}
 *              {"index": EXPR, "slice": {"start": EXPR, "stop": EXPR, "step": EXPR}, "col"}
 *                                                 EXPR[start:stop:step], the parts written
 *                                                 (t[:] has "slice": {}); col of '['
 *              {"index": EXPR, "newaxis": true, "col"}
 *                                                 EXPR[None]: a dimension of size 1 there
 *              {"index": EXPR, "ellipsis": true, "col"}
 *                                                 EXPR[...]: the dimensions no other index
 *                                                 in its brackets takes (a second one in
 *                                                 the same brackets takes none, as in torch)
 *              ..., "dim": D                      on every index after the first in one
 *                                                 pair of brackets: it takes dimension D
 *                                                 (those kept before it: slices and None),
 *                                                 as m[:, 1] takes a column; absent,
 *                                                 dimension 0. After an ellipsis D < 0
 *                                                 counts from the last dimension (-1: the
 *                                                 last; a None's D is where its new
 *                                                 dimension ends up)
 *              ..., "indices": N                  on the first index of brackets that hold
 *                                                 None or an ellipsis: the dimensions they
 *                                                 take in all, checked against the tensor
 *                                                 before any of them applies
 *   OP         {"op": "+", "col"}                 op is + - * / %, ** (in a chain of two
 *                                                 terms, nested to the right), & | ^ (a
 *                                                 level each, between the comparisons and
 *                                                 + -), or a comparison: == != < <= > >=
 *                                                 in, not in, is, is not (a chain of them
 *                                                 is Python's a < b < c); col of the
 *                                                 operator
 * Parentheses around one expression leave no node. Names like sum, max,
 * float32 and None are plain names: the evaluator gives them meaning.
 *
 * ---- Limits ----
 *
 * They keep the shell and the fuzzer safe from pathological input; a line
 * over a limit fails with DL_ERR_TOO_BIG and a column like any other error. */
#ifndef LAB_LANG_H
#define LAB_LANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "distlab/status.h"

/* Longest line in bytes, without the terminating NUL. */
#define LAB_LANG_MAX_LINE (64u << 10)
/* Deepest nesting of an expression: each parenthesis, list, call, index
 * and unary minus adds a level. A run of binary operators (a+b+c+..., as
 * long as the line allows) is one flat node and adds none. */
#define LAB_LANG_MAX_DEPTH 64
/* Most items in one list literal or one argument list. */
#define LAB_LANG_MAX_LIST (1u << 20)
/* Largest rank an 'on' clause may name. */
#define LAB_LANG_MAX_RANK 65535
/* Most target ranks (after expanding ranges) over all statements of a line. */
#define LAB_LANG_MAX_TARGETS (1u << 16)

/* ---- parsing ---- */

typedef struct {
    int col;       /* 1-based column of the offending character; 0 when none applies */
    int line;      /* 1-based line of the text it is on; 0 or 1 for the first */
    char msg[256]; /* one line, lower-case, no trailing period */
} lab_parse_error_t;

/* Parses one line into a JSON array of statements (see the AST above).
 *
 * DL_OK: *stmts_p receives a new reference (an empty array for a blank or
 * comment-only line). On error *stmts_p is untouched and, when err is not
 * NULL, *err says where and why:
 *   DL_ERR_INVALID   a syntax error ("unexpected ')'", "unterminated list",
 *                    "expected a value after 'op='", "duplicate keyword 'dst'",
 *                    "rank range 3-1 is reversed", ...)
 *   DL_ERR_TOO_BIG   a limit above was passed
 *   DL_ERR_NOMEM     out of memory (col 0)
 * line must not be NULL. Thread safe; no global state. */
dl_status_t lab_parse_line(const char *line, json_t **stmts_p, lab_parse_error_t *err);

/* Whether text, the lines typed so far, is a block or a bracket still
 * open: a bracket left open, or a line
 * that ends with ':' after 'on RANKS', 'if COND', 'elif COND', 'else',
 * 'for NAME in EXPR', 'while COND' or 'def ...' opens one, and at the prompt an empty line closes
 * it (the shell shows "... " and reads on meanwhile). */
bool lab_lang_needs_more(const char *text);
/* Python's exception classes that `except` and `raise` take
 * (exceptions.c): which ones the shell tells apart, and what a shell's
 * error is, by its message. */
#define LAB_LANG_EXC_CLASSES                                                                       \
    "Exception, BaseException, RuntimeError, ValueError, TypeError, KeyError, IndexError, "        \
    "LookupError, NameError, ZeroDivisionError, ArithmeticError, AssertionError, "                 \
    "AttributeError, NotImplementedError"
bool lab_lang_is_exc_class(const char *name);
/* Whether `except want` catches an exception of class have (have itself,
 * or a class above it: Exception catches all, LookupError KeyError). */
bool lab_lang_exc_catches(const char *want, const char *have);
/* The class of an error, by its message as the shell words it (message
 * without its place): "KeyError: 'k'" is a KeyError, "'x' is not defined"
 * a NameError, "list index out of range" an IndexError, ...; torch's and
 * the collectives' errors are RuntimeError, as torch raises them. */
const char *lab_lang_exc_class_of(const char *message);

/* Whether line, read from a script after an open block, belongs to it: a
 * line indented (or blank, or a comment), or one that starts with elif,
 * else, except or finally. The first other line ends the block. */
bool lab_lang_continues_block(const char *line);
/* Whether text leaves a bracket open, ( or [: the next line goes on with
 * it, as Python joins the lines inside brackets. */
bool lab_lang_open_brackets(const char *text);
/* What a script reader gathers into one text, line by line: a block, or
 * the lines of an open bracket. Each line is read once, so a long literal
 * split over many lines costs as much as on one. */
typedef struct {
    bool block; /* the first line starts a block (lab_lang_starts_block) */
    long depth; /* brackets the lines so far opened and did not close */
} lab_lang_gather_t;
/* Starts gathering at a text's first line. */
void lab_lang_gather_start(lab_lang_gather_t *g, const char *line);
/* Whether the first line leaves the text open: a block, or a bracket. */
bool lab_lang_gather_open(const lab_lang_gather_t *g);
/* Whether a script's next line belongs with the lines gathered so far (a
 * bracket is open, or the block goes on with it); if so, it is counted. */
bool lab_lang_gather_takes(lab_lang_gather_t *g, const char *line);
/* Whether a script's line starts a block that the lines after it may
 * belong to: its first word is if, for, while, def or on. */
bool lab_lang_starts_block(const char *line);

/* The two-line display of an error under its line, as the shell prints it:
 *
 *       all_reduce t op=
 *                       ^ expected a value after 'op='
 *
 * Both lines are indented by two spaces; the text ends without a newline.
 * Characters that would break the alignment are shown as one cell each
 * (a tab as a space, a control or invalid UTF-8 byte as '?'; a valid UTF-8
 * character counts one cell). When width > 0 and the line does not fit in
 * width columns, a window around the caret is shown with "..." at the cut
 * ends. With err->col == 0 only the message line is produced.
 * *text_p receives a malloc'd string; free() it. */
dl_status_t lab_parse_error_show(const char *line, const lab_parse_error_t *err, int width,
                                 char **text_p);

/* The width lab_parse_error_format clips to. */
#define LAB_PARSE_ERROR_WIDTH 80
/* A buffer this large always holds lab_parse_error_format's text. */
#define LAB_PARSE_ERROR_TEXT_MAX 1024

/* The same display for a fixed buffer: clipped to LAB_PARSE_ERROR_WIDTH
 * columns, with a trailing newline, truncated like snprintf. Returns the
 * length of the whole text; never fails (without memory, the message alone
 * is written). */
size_t lab_parse_error_format(const char *line, const lab_parse_error_t *err, char *buf,
                              size_t cap);

/* ---- the command table ---- */

typedef enum {
    LAB_CAT_TENSOR,     /* tensor functions, print, tensors */
    LAB_CAT_P2P,        /* send, recv, isend, irecv, wait */
    LAB_CAT_COLLECTIVE, /* the collectives, barrier, new_group */
    LAB_CAT_SESSION,    /* ranks, kill, set, help, source, quit, ... */
    LAB_CAT_STEP,       /* step, next, continue, back, forward */
    LAB_CAT__COUNT
} lab_cmd_category_t;

/* The entry is a function used inside expressions (arange, new_group), not a
 * command that starts a statement. */
#define LAB_CMD_FUNCTION 0x1u
/* The command's arguments are raw words, returned as strings ("words"). */
#define LAB_CMD_RAW_WORDS 0x2u
/* The controller runs the command itself, never the ranks: the session and
 * step commands. Such a row has an id other than LAB_CMD_ID_NONE. */
#define LAB_CMD_SESSION 0x4u
/* The session command waits until every rank is ready: `set` must reach
 * them, `ranks` and `kill` must see a formed world. */
#define LAB_CMD_NEEDS_WORLD 0x8u
/* The session command may run while a collective is paused in step mode. */
#define LAB_CMD_WHILE_PAUSED 0x10u
/* The function is also a tensor method: t.sum() is sum(t), the object
 * first. Only such names may follow a '.' after a value. */
#define LAB_CMD_METHOD 0x20u
/* Only a method (t.item()) or attribute (t.T), never called as NAME(...). */
#define LAB_CMD_METHOD_ONLY 0x40u
/* An attribute, read without parentheses: t.T. */
#define LAB_CMD_ATTRIBUTE 0x80u
/* A method or attribute of a value that is not a tensor: h.wait() of the
 * handle an async call returns (the row is the command wait), p.values and
 * p.indices of the pair t.max(dim=D) gives. */
#define LAB_CMD_OBJECT_METHOD 0x100u
/* A torch function whose bare name is the learner's to define (def
 * add(a, b)): torch spells it torch.add or t.add. Called bare, its
 * keywords are checked where it runs, which may be the learner's def. */
#define LAB_CMD_FREE_NAME 0x200u

/* Which session command a row is.
 *
 * The table says what a command is (its flags); the shell (lab/shell) says
 * what it does. lang depends on no other room, so the handlers cannot sit in
 * the rows: instead every session row carries an id, and the shell keeps an
 * array of handlers indexed by it. A new session command is a row here, an
 * id below and a handler in the shell; the shell's unit test checks that
 * every session row has a handler and that every id is used by exactly one
 * row. An id rather than the name keeps the shell free of string lists of
 * command names, and lets the compiler catch a misspelling. */
typedef enum {
    LAB_CMD_ID_NONE, /* not a session command: the ranks run it, or a function */
    LAB_CMD_ID_RANKS,
    LAB_CMD_ID_KILL,
    LAB_CMD_ID_RESPAWN,
    LAB_CMD_ID_SPAWN,
    LAB_CMD_ID_SET,
    LAB_CMD_ID_EXPLAIN,
    LAB_CMD_ID_TRACE,
    LAB_CMD_ID_HISTORY,
    LAB_CMD_ID_SOURCE,
    LAB_CMD_ID_HELP,
    LAB_CMD_ID_CLEAR,
    LAB_CMD_ID_TUI,
    LAB_CMD_ID_QUIT,
    LAB_CMD_ID_EXIT,
    LAB_CMD_ID_STEP,
    LAB_CMD_ID_NEXT,
    LAB_CMD_ID_CONTINUE,
    LAB_CMD_ID_BACK,
    LAB_CMD_ID_FORWARD,
    LAB_CMD_ID__COUNT
} lab_cmd_id_t;

typedef struct {
    const char *name;            /* "all_reduce" */
    lab_cmd_category_t category; /* for help's grouping */
    unsigned flags;              /* LAB_CMD_* */
    lab_cmd_id_t id;             /* the session command it is, or LAB_CMD_ID_NONE */
    const char *usage;           /* "all_reduce TENSOR [op=sum] [group=G] [async_op=false]" */
    const char *summary;         /* one line, lower-case start, no period */
    const char *torch;           /* torch's signature, or NULL where torch has none */
    const char *example;         /* one line that parses */
    const char *const *keywords; /* NULL-terminated keyword names ("op", "group"), never NULL */
} lab_cmd_t;

/* The entry named name, or NULL. */
const lab_cmd_t *lab_cmd_find(const char *name);
/* Every entry, in the order help lists them; *n_p receives the count. */
const lab_cmd_t *lab_cmd_all(size_t *n_p);
/* "tensor", "point-to-point", "collective", "session", "step". */
const char *lab_cmd_category_name(lab_cmd_category_t cat);
/* Whether cmd accepts keyword kw. */
bool lab_cmd_has_keyword(const lab_cmd_t *cmd, const char *kw);
/* Whether name is a command the controller runs itself (LAB_CMD_SESSION)
 * rather than one sent to the ranks. */
bool lab_lang_is_session(const char *name);
/* The session command a parsed statement runs (its row), or NULL when the
 * statement goes to the ranks (an assignment, a rank command). */
const lab_cmd_t *lab_stmt_session_cmd(const json_t *stmt);

/* Most names one statement can define (see lab_stmt_defined_names). */
#define LAB_STMT_MAX_DEFINED 3
/* The names a parsed statement binds on the ranks once it has run: the
 * assigned name (t = ..., h = isend ...), the first names of a, b = ...,
 * a def's function, the list that gather_list= names and the output list
 * of all_gather. Fills names[] with up to
 * LAB_STMT_MAX_DEFINED pointers into stmt (valid as long as stmt is) and
 * returns how many. Completion proposes them in later lines. */
size_t lab_stmt_defined_names(const json_t *stmt, const char *names[LAB_STMT_MAX_DEFINED]);
/* Prints help: with name NULL, every command and function grouped by
 * category with its summary; otherwise the entry's usage, summary, torch's
 * signature and example. DL_ERR_NOT_FOUND (nothing printed) for a name the
 * table does not hold. */
dl_status_t lab_lang_print_help(FILE *out, const char *name);

/* The candidate closest to name by edit distance when it is close enough to
 * be a likely typo, else NULL. cands is NULL-terminated or, when n is not
 * SIZE_MAX, n entries long. */
const char *lab_suggest(const char *name, const char *const *cands, size_t n);

/* ---- completion ---- */

/* Proposes completions for the word that ends at byte offset cursor of line
 * (cursor is clamped to the line's length). The word being completed is the
 * run of [A-Za-z0-9_] just before the cursor; *start_p (may be NULL)
 * receives the offset where it starts, and each match replaces
 * line[start, cursor). Proposed, by position:
 *   - at the start of a statement (also after 'on 0-2:'): command names;
 *   - after 'NAME =': commands, functions, names and rank/world_size;
 *   - in a command's arguments: its keywords ("op=", not yet given) and names;
 *   - in a call's parentheses: the function's keywords ("dtype=") and names;
 *   - after 'op=': reduce ops; after 'dtype=': dtypes; after 'async_op=':
 *     true/false; after another keyword: names and rank/world_size;
 *   - 'help ': every command and function; 'explain ' and 'set algo ':
 *     collectives; 'explain COLL ' and 'set algo COLL ': the algorithms
 *     that implement COLL;
 *     'set ': algo/timeout/check; 'set check ' and 'step ': on/off.
 * names (n_names entries, may be NULL when 0) are the caller's tensor and
 * handle names. A match that ends in '=' wants no space appended.
 * *matches_p receives a malloc'd, sorted, duplicate-free array of malloc'd
 * strings (NULL when *n_p is 0); free it with lab_complete_free. Nothing is
 * proposed inside a comment, a quoted word or an 'on' rank list, nor for
 * file names (after 'source' the caller may complete paths itself).
 * DL_ERR_INVALID for a negative cursor, DL_ERR_TOO_BIG for a line over
 * LAB_LANG_MAX_LINE, DL_ERR_NOMEM. */
dl_status_t lab_complete(const char *line, int cursor, const char *const *names, size_t n_names,
                         char ***matches_p, size_t *n_p, int *start_p);
void lab_complete_free(char **matches, size_t n);

#endif
