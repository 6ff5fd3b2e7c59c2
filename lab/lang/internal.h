/* Private interface between the lexer, the parser and the command table.
 *
 * The lexer is pulled one token at a time rather than run over the whole
 * line, because the parser switches it into word mode after the name of a
 * raw-word command ("source ~/ex/ring.dl" is not made of expression tokens).
 * It works on a pointer and a length, not a C string, so that completion can
 * lex the part of a line before the cursor. */
#ifndef LAB_LANG_INTERNAL_H
#define LAB_LANG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/lang/lang.h"

typedef enum {
    LAB__T_EOF,
    LAB__T_NAME,
    LAB__T_INT,
    LAB__T_FLOAT,
    LAB__T_LPAREN,
    LAB__T_RPAREN,
    LAB__T_LBRACK,
    LAB__T_RBRACK,
    LAB__T_LBRACE, /* {, of a dict */
    LAB__T_RBRACE,
    LAB__T_COMMA,
    LAB__T_EQ,
    LAB__T_COLON,
    LAB__T_SEMI,
    LAB__T_PLUS,
    LAB__T_MINUS,
    LAB__T_STAR,
    LAB__T_SLASH,
    LAB__T_PERCENT,  /* % */
    LAB__T_POW,      /* ** */
    LAB__T_FLOORDIV, /* // */
    LAB__T_CMP,      /* == != < <= > >= (the token's text says which) */
    LAB__T_AUG,      /* += -= *= /= &= |= ^= <<= >>= (likewise) */
    LAB__T_DOT,      /* . of t.sum() and dist.send (not of a number: .5 is one) */
    LAB__T_AT,       /* @, matrix product */
    LAB__T_BITOP,    /* & | ^ << >> (the token's text says which) */
    LAB__T_TILDE,    /* ~ */
    LAB__T_ELLIPSIS, /* ..., in a subscript: every dimension no other index takes */
    LAB__T_STRING,   /* 'text' or "text" (also triple-quoted on one line) */
    LAB__T_FSTRING,  /* f'...' or f"...": the parser reads the {expressions} inside */
    LAB__T_WORD,     /* word mode only */
    LAB__T_ERROR,    /* see lab__lex_err_t; the parser reports it when it meets it */
} lab__tok_kind_t;

typedef enum {
    LAB__LEX_OK,
    LAB__LEX_BAD_CHAR,     /* a character no token starts with */
    LAB__LEX_BAD_NUMBER,   /* "2x", "1e", "1.2.3" */
    LAB__LEX_LEADING_ZERO, /* "08": Python refuses a decimal int with leading zeros */
    LAB__LEX_INT_RANGE,    /* does not fit in int64 */
    LAB__LEX_FLOAT_RANGE,  /* overflows to infinity */
    LAB__LEX_NUM_TOO_LONG, /* more characters than any sensible literal */
    LAB__LEX_UNTERMINATED, /* a quoted word without its closing quote */
    LAB__LEX_AFTER_QUOTE,  /* a character touching a closing quote */
    LAB__LEX_BAD_ESCAPE,   /* a backslash before a character Python does not escape here */
    LAB__LEX_STRING_BYTE,  /* a control byte or invalid UTF-8 inside a string */
} lab__lex_err_t;

typedef struct {
    lab__tok_kind_t kind;
    lab__lex_err_t err; /* for LAB__T_ERROR */
    size_t start, len;  /* the token's bytes; for EOF, start is where the error caret goes */
    bool space_before;  /* a blank (or the start of the line) precedes the token */
    bool quoted;        /* a quoted word: the value is [start + 1, start + len - 1) */
    size_t quote;       /* STRING, FSTRING: bytes of each quote ('"' 1, '"""' 3); the
                         * text is [start + (f ? 1 : 0) + quote, start + len - quote) */
    int64_t ival;       /* LAB__T_INT */
    double fval;        /* LAB__T_FLOAT */
} lab__tok_t;

typedef struct {
    const char *s;
    size_t len;
    size_t pos;
} lab__lexer_t;

void lab__lex_init(lab__lexer_t *lx, const char *s, size_t len);
/* The next expression-mode token. Always makes progress: after an ERROR
 * token the position is past the offending bytes. */
void lab__lex_next(lab__lexer_t *lx, lab__tok_t *tok);
/* The next word-mode token: WORD, SEMI, EOF or ERROR. */
void lab__lex_word(lab__lexer_t *lx, lab__tok_t *tok);
/* The value of a STRING token, or the text of a run of an FSTRING's
 * literal part: the bytes [from, to) of the line with Python's escapes
 * (\\ \' \" \n \t \r \0) decoded, and for an f-string {{ and }} as one
 * brace. A malloc'd string, or NULL without memory. The lexer has checked
 * the escapes. */
char *lab__string_value(const char *s, size_t from, size_t to, bool fstring);
/* The message of an ERROR token, e.g. "malformed number '1e'". */
void lab__lex_error_msg(const lab__lexer_t *lx, const lab__tok_t *tok, char *buf, size_t cap);
/* How the parser names a token in a message: "')'", "'foo'", "end of line". */
void lab__tok_describe(const lab__lexer_t *lx, const lab__tok_t *tok, char *buf, size_t cap);

bool lab__is_name_start(int c);
bool lab__is_name_char(int c);
bool lab__is_blank(int c);
/* The length of the valid UTF-8 sequence of two to four bytes at s (at most
 * len bytes), or 0 when s does not start one. */
size_t lab__utf8_len(const char *s, size_t len);

/* The limits of lang.h as one value, so that tests can lower the ones a
 * 64 KiB line cannot reach (a list of 1<<20 items). */
typedef struct {
    size_t max_line;
    int max_depth;
    size_t max_list;
    int64_t max_rank;
    size_t max_targets;
} lab__limits_t;

extern const lab__limits_t lab__default_limits;

/* lab_parse_line under other limits. */
dl_status_t lab__parse_line_limits(const char *line, const lab__limits_t *lim, json_t **stmts_p,
                                   lab_parse_error_t *err);

/* torch's positional parameters of a rank command (NULL-terminated), or
 * NULL; *nargs_p receives how many of the first stay positional in the
 * AST (the tensors), the others being keywords there. */
const char *const *lab__cmd_params(const lab_cmd_t *cmd, size_t *nargs_p);

/* lab_cmd_find for a name that is not NUL-terminated (a slice of the line). */
const lab_cmd_t *lab__cmd_findn(const char *name, size_t len);
/* The method name names (x.name(...)): as lab__cmd_findn, but for clear,
 * which names both a command of the shell and l.clear(). */
const lab_cmd_t *lab__cmd_find_method(const char *name, size_t len);

/* The closest command (not function) name to name, or NULL. */
const char *lab__suggest_command(const char *name);

#endif
