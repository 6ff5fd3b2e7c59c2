/* The lexer of the command language (see lang.h for the lexical rules).
 *
 * It never fails: a character that starts no token, or a malformed number,
 * becomes an ERROR token that the parser reports if and when it reaches it.
 * That matters for raw-word commands, whose arguments the parser re-reads in
 * word mode: "source ~/x" must not fail on '~' before the parser knows that
 * 'source' takes words. Every call consumes at least one byte unless it
 * returns EOF, so no caller can loop forever. */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lang/internal.h"

/* Longest number literal we convert; a longer one is an error rather than a
 * reason to allocate. 400 characters hold any double written out in full. */
#define NUM_MAX_CHARS 400
/* How much of a token an error message quotes. */
#define QUOTE_MAX 32

bool lab__is_name_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool lab__is_name_char(int c)
{
    return lab__is_name_start(c) || (c >= '0' && c <= '9');
}

bool lab__is_blank(int c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* A byte that is neither printable ASCII nor a blank nor part of UTF-8. */
static bool is_control(unsigned char c)
{
    return (c < 0x20 && !lab__is_blank(c)) || c == 0x7f;
}

size_t lab__utf8_len(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    if (len < 2 || u[0] < 0xc2 || u[0] > 0xf4)
        return 0;
    size_t n = u[0] < 0xe0 ? 2 : u[0] < 0xf0 ? 3 : 4;
    if (len < n)
        return 0;
    /* The second byte's range also rules out overlong forms, surrogates and
     * code points above U+10FFFF (RFC 3629, table 3-7 of Unicode). */
    unsigned char lo = 0x80, hi = 0xbf;
    if (u[0] == 0xe0)
        lo = 0xa0;
    else if (u[0] == 0xed)
        hi = 0x9f;
    else if (u[0] == 0xf0)
        lo = 0x90;
    else if (u[0] == 0xf4)
        hi = 0x8f;
    if (u[1] < lo || u[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (u[i] < 0x80 || u[i] > 0xbf)
            return 0;
    return n;
}

void lab__lex_init(lab__lexer_t *lx, const char *s, size_t len)
{
    lx->s = s;
    lx->len = len;
    lx->pos = 0;
}

/* Skips blanks, and a comment when comments_anywhere is set or when '#'
 * follows a blank (word mode treats "a#b" as one word). Fills the fields of
 * tok that every kind shares and returns false at the end of the line, with
 * the EOF token pointing just past the last real character. */
static bool skip_blanks(lab__lexer_t *lx, lab__tok_t *tok, bool comments_anywhere)
{
    size_t end_of_text = lx->pos;
    size_t p = lx->pos;
    bool space = p == 0;
    while (p < lx->len && lab__is_blank((unsigned char)lx->s[p])) {
        p++;
        space = true;
    }
    memset(tok, 0, sizeof(*tok));
    tok->space_before = space;
    /* A comment ends its physical line; lines joined inside brackets go
     * on after it. */
    while (p < lx->len && lx->s[p] == '#' && (comments_anywhere || space)) {
        const char *nl = memchr(lx->s + p, '\n', lx->len - p);
        p = nl != NULL ? (size_t)(nl - lx->s) : lx->len;
        while (p < lx->len && lab__is_blank((unsigned char)lx->s[p]))
            p++;
    }
    if (p >= lx->len) {
        tok->kind = LAB__T_EOF;
        tok->start = end_of_text;
        lx->pos = lx->len;
        return false;
    }
    tok->start = p;
    lx->pos = p;
    return true;
}

static void set_error(lab__lexer_t *lx, lab__tok_t *tok, lab__lex_err_t err, size_t start,
                      size_t len)
{
    tok->kind = LAB__T_ERROR;
    tok->err = err;
    tok->start = start;
    tok->len = len;
    lx->pos = start + len;
}

/* One character that no token starts with: the whole UTF-8 sequence when it
 * is one, so the message can quote it and the lexer resumes after it. */
static void bad_char(lab__lexer_t *lx, lab__tok_t *tok, size_t p)
{
    size_t n = lab__utf8_len(lx->s + p, lx->len - p);
    set_error(lx, tok, LAB__LEX_BAD_CHAR, p, n != 0 ? n : 1);
}

/* Converts a checked decimal literal in the C locale: the shell runs under
 * the user's locale for readline and wide characters, and strtod would then
 * read "2.5" as 2 in a locale whose decimal point is a comma. */
/* The digits of a literal without its underscores (1_000 is 1000). */
static size_t strip_underscores(const char *s, size_t n, char *buf)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            buf[o++] = s[i];
    buf[o] = '\0';
    return o;
}

static double to_double(const char *s, size_t n)
{
    char buf[NUM_MAX_CHARS + 1];
    strip_underscores(s, n, buf);
    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    double v = c_locale != (locale_t)0 ? strtod_l(buf, NULL, c_locale) : strtod(buf, NULL);
    if (c_locale != (locale_t)0)
        freelocale(c_locale);
    return v;
}

static int digit_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : 99;
}

/* Digits of base from q on, one underscore allowed between two of them,
 * as Python's literals take them; where they end. */
static size_t scan_digits(const char *s, size_t len, size_t q, int base)
{
    while (q < len && (digit_value(s[q]) < base ||
                       (s[q] == '_' && q + 1 < len && digit_value(s[q + 1]) < base && q > 0 &&
                        digit_value(s[q - 1]) < base)))
        q++;
    return q;
}

static void lex_number(lab__lexer_t *lx, lab__tok_t *tok)
{
    const char *s = lx->s;
    size_t len = lx->len, p = lx->pos, q = p;
    bool is_float = false, bad = false;
    int base = 10;
    if (s[p] == '0' && p + 1 < len && strchr("xXoObB", s[p + 1]) != NULL && s[p + 1] != '\0') {
        /* 0x1f, 0o17, 0b101 */
        base = s[p + 1] == 'x' || s[p + 1] == 'X' ? 16 : s[p + 1] == 'o' || s[p + 1] == 'O' ? 8 : 2;
        size_t from = p + 2;
        if (from < len && s[from] == '_')
            from++; /* 0x_ff, as Python allows */
        q = scan_digits(s, len, from, base);
        bad = q == from;
    } else {
        q = scan_digits(s, len, q, 10);
        if (q < len && s[q] == '.') {
            is_float = true;
            q++;
            q = scan_digits(s, len, q, 10);
        }
        if (q < len && (s[q] == 'e' || s[q] == 'E')) {
            is_float = true;
            q++;
            if (q < len && (s[q] == '+' || s[q] == '-'))
                q++;
            if (q < len && is_digit(s[q]))
                q = scan_digits(s, len, q, 10);
            else
                bad = true;
        }
    }
    if (q < len && (lab__is_name_char((unsigned char)s[q]) || s[q] == '.'))
        bad = true;
    if (bad) {
        /* Quote the whole run the user meant as one number: "1.2.3", "2x". */
        while (q < len && (lab__is_name_char((unsigned char)s[q]) || s[q] == '.'))
            q++;
        set_error(lx, tok, LAB__LEX_BAD_NUMBER, p, q - p);
        return;
    }
    if (q - p > NUM_MAX_CHARS) {
        set_error(lx, tok, LAB__LEX_NUM_TOO_LONG, p, q - p);
        return;
    }
    if (base == 10 && !is_float && s[p] == '0') {
        /* 08 or 012: Python refuses them (0, 00 and 0_0 are zero) */
        for (size_t i = p; i < q; i++) {
            if (s[i] != '0' && s[i] != '_') {
                set_error(lx, tok, LAB__LEX_LEADING_ZERO, p, q - p);
                return;
            }
        }
    }
    tok->start = p;
    tok->len = q - p;
    lx->pos = q;
    if (is_float) {
        double v = to_double(s + p, q - p);
        if (isinf(v)) {
            set_error(lx, tok, LAB__LEX_FLOAT_RANGE, p, q - p);
            return;
        }
        tok->kind = LAB__T_FLOAT;
        tok->fval = v;
        return;
    }
    int64_t v = 0;
    for (size_t i = base == 10 ? p : p + 2; i < q; i++) {
        if (s[i] == '_')
            continue;
        int d = digit_value(s[i]);
        if (v > (INT64_MAX - d) / base) {
            set_error(lx, tok, LAB__LEX_INT_RANGE, p, q - p);
            return;
        }
        v = v * base + d;
    }
    tok->kind = LAB__T_INT;
    tok->ival = v;
}

static bool is_escape(char c)
{
    return c == '\\' || c == '\'' || c == '"' || c == 'n' || c == 't' || c == 'r' || c == '0';
}

/* A string literal as Python writes one on a line: '...', "...", '''...'''
 * or """...""" (triple quotes only to hold the other quotes: a string
 * never spans lines here), with f in front for an f-string. p is at the
 * quote, or at the f. The escapes of is_escape are the only ones taken;
 * the text must be valid UTF-8 without control bytes, as JSON strings
 * must. */
static void lex_string(lab__lexer_t *lx, lab__tok_t *tok, size_t p, bool f)
{
    const char *s = lx->s;
    size_t len = lx->len, open = p + (f ? 1 : 0);
    char q = s[open];
    size_t quote = open + 2 < len && s[open + 1] == q && s[open + 2] == q ? 3 : 1;
    for (size_t i = open + quote; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c == (unsigned char)q &&
            (quote == 1 || (i + 2 < len && s[i + 1] == q && s[i + 2] == q))) {
            tok->kind = f ? LAB__T_FSTRING : LAB__T_STRING;
            tok->start = p;
            tok->len = i + quote - p;
            tok->quote = quote;
            lx->pos = i + quote;
            return;
        }
        if (c == '\\') {
            if (i + 1 >= len || !is_escape(s[i + 1])) {
                set_error(lx, tok, LAB__LEX_BAD_ESCAPE, i, i + 1 < len ? 2 : 1);
                return;
            }
            i += 2;
            continue;
        }
        if (c < 0x80) {
            if (is_control(c)) {
                set_error(lx, tok, LAB__LEX_STRING_BYTE, i, 1);
                return;
            }
            i++;
            continue;
        }
        size_t n = lab__utf8_len(s + i, len - i);
        if (n == 0) {
            set_error(lx, tok, LAB__LEX_STRING_BYTE, i, 1);
            return;
        }
        i += n;
    }
    /* The whole rest of the line, so that completion sees the cursor in it. */
    set_error(lx, tok, LAB__LEX_UNTERMINATED, p, len - p);
}

char *lab__string_value(const char *s, size_t from, size_t to, bool fstring)
{
    char *out = malloc(to - from + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = from; i < to; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < to) {
            char e = s[++i];
            out[o++] = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '0' ? '\0' : e;
            continue;
        }
        if (fstring && (c == '{' || c == '}') && i + 1 < to && s[i + 1] == c)
            i++;
        out[o++] = c;
    }
    out[o] = '\0';
    return out;
}

void lab__lex_next(lab__lexer_t *lx, lab__tok_t *tok)
{
    if (!skip_blanks(lx, tok, true))
        return;
    const char *s = lx->s;
    size_t p = lx->pos;
    unsigned char c = (unsigned char)s[p];
    if (c == '"' || c == '\'') {
        lex_string(lx, tok, p, false);
        return;
    }
    if ((c == 'f' || c == 'F') && p + 1 < lx->len && (s[p + 1] == '"' || s[p + 1] == '\'')) {
        lex_string(lx, tok, p, true);
        return;
    }
    if (lab__is_name_start(c)) {
        size_t q = p + 1;
        while (q < lx->len && lab__is_name_char((unsigned char)s[q]))
            q++;
        tok->kind = LAB__T_NAME;
        tok->len = q - p;
        lx->pos = q;
        return;
    }
    if (is_digit(c) || (c == '.' && p + 1 < lx->len && is_digit(s[p + 1]))) {
        lex_number(lx, tok);
        return;
    }
    if (c == '.' && p + 2 < lx->len && s[p + 1] == '.' && s[p + 2] == '.') {
        tok->kind = LAB__T_ELLIPSIS;
        tok->len = 3;
        lx->pos = p + 3;
        return;
    }
    /* Augmented assignments of three characters: "//=", "**=", "<<=", ">>=". */
    if (p + 2 < lx->len && s[p + 2] == '=' &&
        ((c == '/' && s[p + 1] == '/') || (c == '*' && s[p + 1] == '*') ||
         (c == '<' && s[p + 1] == '<') || (c == '>' && s[p + 1] == '>'))) {
        tok->kind = LAB__T_AUG;
        tok->len = 3;
        lx->pos = p + 3;
        return;
    }
    /* Two-character operators first: "**", "==", "<=", "+=", ... */
    if (p + 1 < lx->len) {
        char d = s[p + 1];
        lab__tok_kind_t kind = LAB__T_EOF;
        if ((c == '<' && d == '<') || (c == '>' && d == '>'))
            kind = LAB__T_BITOP; /* the shifts, with & | ^ */
        else if (c == '*' && d == '*')
            kind = LAB__T_POW;
        else if (c == '/' && d == '/')
            kind = LAB__T_FLOORDIV;
        else if (d == '=' && (c == '=' || c == '!' || c == '<' || c == '>'))
            kind = LAB__T_CMP;
        else if (d == '=' && (c == '+' || c == '-' || c == '*' || c == '/' || c == '%' ||
                              c == '&' || c == '|' || c == '^'))
            kind = LAB__T_AUG;
        if (kind != LAB__T_EOF) {
            tok->kind = kind;
            tok->len = 2;
            lx->pos = p + 2;
            return;
        }
    }
    if (c == '<' || c == '>') {
        tok->kind = LAB__T_CMP;
        tok->len = 1;
        lx->pos = p + 1;
        return;
    }
    static const struct {
        char c;
        lab__tok_kind_t kind;
    } puncts[] = {
        {'(', LAB__T_LPAREN}, {')', LAB__T_RPAREN}, {'[', LAB__T_LBRACK},  {']', LAB__T_RBRACK},
        {'{', LAB__T_LBRACE}, {'}', LAB__T_RBRACE}, {',', LAB__T_COMMA},   {'=', LAB__T_EQ},
        {':', LAB__T_COLON},  {';', LAB__T_SEMI},   {'+', LAB__T_PLUS},    {'-', LAB__T_MINUS},
        {'*', LAB__T_STAR},   {'/', LAB__T_SLASH},  {'%', LAB__T_PERCENT}, {'.', LAB__T_DOT},
        {'@', LAB__T_AT},     {'&', LAB__T_BITOP},  {'|', LAB__T_BITOP},   {'^', LAB__T_BITOP},
        {'~', LAB__T_TILDE},
    };
    for (size_t i = 0; i < sizeof(puncts) / sizeof(puncts[0]); i++) {
        if (puncts[i].c == (char)c) {
            tok->kind = puncts[i].kind;
            tok->len = 1;
            lx->pos = p + 1;
            return;
        }
    }
    bad_char(lx, tok, p);
}

/* The offset of the first byte in [from, to) that a word may not hold, or
 * `to`: words become JSON strings, which must be valid UTF-8, and a control
 * byte in a file name is far more likely line noise than intent. */
static size_t bad_word_byte(const lab__lexer_t *lx, size_t from, size_t to)
{
    size_t q = from;
    while (q < to) {
        unsigned char c = (unsigned char)lx->s[q];
        if (c < 0x80) {
            if (is_control(c))
                return q;
            q++;
            continue;
        }
        size_t n = lab__utf8_len(lx->s + q, to - q);
        if (n == 0)
            return q;
        q += n;
    }
    return to;
}

void lab__lex_word(lab__lexer_t *lx, lab__tok_t *tok)
{
    if (!skip_blanks(lx, tok, false))
        return;
    const char *s = lx->s;
    size_t len = lx->len, p = lx->pos;
    if (s[p] == ';') {
        tok->kind = LAB__T_SEMI;
        tok->len = 1;
        lx->pos = p + 1;
        return;
    }
    size_t q, bad;
    if (s[p] == '"' || s[p] == '\'') {
        const char *close = memchr(s + p + 1, s[p], len - p - 1);
        if (close == NULL) {
            set_error(lx, tok, LAB__LEX_UNTERMINATED, p, 1);
            lx->pos = len;
            return;
        }
        q = (size_t)(close - s) + 1;
        bad = bad_word_byte(lx, p + 1, q - 1);
        /* "a"b is more likely a typo than a request to glue two words. */
        if (bad == q - 1 && q < len && !lab__is_blank((unsigned char)s[q]) && s[q] != ';') {
            set_error(lx, tok, LAB__LEX_AFTER_QUOTE, q, 1);
            return;
        }
        tok->quoted = true;
    } else {
        q = p;
        while (q < len && !lab__is_blank((unsigned char)s[q]) && s[q] != ';')
            q++;
        bad = bad_word_byte(lx, p, q);
    }
    if (bad != q - (tok->quoted ? 1 : 0)) {
        tok->quoted = false;
        set_error(lx, tok, LAB__LEX_BAD_CHAR, bad, 1);
        return;
    }
    tok->kind = LAB__T_WORD;
    tok->len = q - p;
    lx->pos = q;
}

/* Copies at most QUOTE_MAX bytes of s, cut at a UTF-8 character boundary,
 * with "..." when cut. */
static void quote(const char *s, size_t n, char *buf, size_t cap)
{
    if (n <= QUOTE_MAX) {
        snprintf(buf, cap, "%.*s", (int)n, s);
        return;
    }
    size_t cut = QUOTE_MAX;
    while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
        cut--;
    snprintf(buf, cap, "%.*s...", (int)cut, s);
}

void lab__lex_error_msg(const lab__lexer_t *lx, const lab__tok_t *tok, char *buf, size_t cap)
{
    char q[QUOTE_MAX + 8];
    quote(lx->s + tok->start, tok->len, q, sizeof(q));
    unsigned char c = (unsigned char)lx->s[tok->start];
    switch (tok->err) {
    case LAB__LEX_BAD_CHAR:
        if (tok->len > 1 || (c > 0x20 && c < 0x7f))
            snprintf(buf, cap, "unexpected character '%s'", q);
        else
            snprintf(buf, cap, "unexpected byte 0x%02x", c);
        break;
    case LAB__LEX_BAD_NUMBER:
        snprintf(buf, cap, "malformed number '%s'", q);
        break;
    case LAB__LEX_LEADING_ZERO:
        snprintf(buf, cap,
                 "leading zeros in decimal integer literals are not permitted; use an 0o prefix "
                 "for octal integers ('%s')",
                 q);
        break;
    case LAB__LEX_INT_RANGE:
        snprintf(buf, cap, "integer '%s' is too large", q);
        break;
    case LAB__LEX_FLOAT_RANGE:
        snprintf(buf, cap, "number '%s' is out of range", q);
        break;
    case LAB__LEX_NUM_TOO_LONG:
        snprintf(buf, cap, "number '%s' is too long", q);
        break;
    case LAB__LEX_UNTERMINATED:
        snprintf(buf, cap, "unterminated string");
        break;
    case LAB__LEX_AFTER_QUOTE:
        snprintf(buf, cap, "expected a blank after the closing quote");
        break;
    case LAB__LEX_BAD_ESCAPE:
        if (tok->len < 2)
            snprintf(buf, cap, "unterminated string");
        else
            snprintf(buf, cap, "unknown escape '%s' in a string (write '\\\\' for a backslash)", q);
        break;
    case LAB__LEX_STRING_BYTE:
        snprintf(buf, cap, "unexpected byte 0x%02x in a string", c);
        break;
    case LAB__LEX_OK:
        snprintf(buf, cap, "internal error: no lexer error");
        break;
    }
}

void lab__tok_describe(const lab__lexer_t *lx, const lab__tok_t *tok, char *buf, size_t cap)
{
    if (tok->kind == LAB__T_EOF) {
        snprintf(buf, cap, "end of line");
        return;
    }
    char q[QUOTE_MAX + 8];
    quote(lx->s + tok->start, tok->len, q, sizeof(q));
    snprintf(buf, cap, "'%s'", q);
}
