/* See scenario.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "distlab/backends.h"
#include "lab/lang/lang.h"
#include "lab/proto/job.h"
#include "lab/scenario/scenario.h"

#define MAX_LINE 4096

static void say(char *err, size_t cap, const char *path, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void say(char *err, size_t cap, const char *path, int lineno, const char *fmt, ...)
{
    int n = snprintf(err, cap, "%s:%d: ", path, lineno);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < cap)
        vsnprintf(err + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The word at the start of s (a directive's keyword) and what follows it. */
static bool starts_word(const char *s, const char *word, const char **rest_p)
{
    size_t n = strlen(word);
    if (strncmp(s, word, n) != 0 || (s[n] != '\0' && !isspace((unsigned char)s[n])))
        return false;
    const char *rest = s + n;
    while (isspace((unsigned char)*rest))
        rest++;
    *rest_p = rest;
    return true;
}

dl_status_t lab_scenario_parse_values(const char *text, double **values_p, size_t *n_p)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (strncmp(p, "tensor(", 7) == 0)
        p += 7;
    double *v = NULL;
    size_t n = 0, cap = 0;
    int depth = 0;
    bool closed = false;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == ',')
            p++;
        if (*p == '[') {
            depth++;
            p++;
        } else if (*p == ']') {
            if (--depth < 0)
                goto bad;
            p++;
            if (depth == 0) {
                closed = true;
                break;
            }
        } else if (*p == '\0' || *p == ')') {
            break;
        } else {
            char *end = NULL;
            errno = 0;
            double x = strtod(p, &end);
            if (end == p || errno == ERANGE)
                goto bad;
            p = end;
            if (*p == '.') /* torch writes "1." */
                p++;
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                double *nv = realloc(v, cap * sizeof(*v));
                if (nv == NULL)
                    goto bad;
                v = nv;
            }
            v[n++] = x;
            if (depth == 0) {
                /* A scalar, or a bare list ("16, 20"): more numbers may
                 * follow a comma; torch's tail (", dtype=...") may too. */
                const char *q = p;
                while (isspace((unsigned char)*q))
                    q++;
                if (*q == ',') {
                    q++;
                    while (isspace((unsigned char)*q))
                        q++;
                }
                closed = true;
                if (q == p || !(isdigit((unsigned char)*q) || *q == '-' || *q == '+' || *q == '.'))
                    break;
                p = q;
            }
        }
    }
    /* After the values only torch's tail may follow: ", dtype=torch.int8)". */
    while (isspace((unsigned char)*p))
        p++;
    if (!closed || n == 0 || (*p != '\0' && *p != ')' && *p != ','))
        goto bad;
    *values_p = v;
    *n_p = n;
    return DL_OK;
bad:
    free(v);
    return DL_ERR_INVALID;
}

static dl_status_t parse_expect(lab_scn_item_t *it, const char *rest, char *why, size_t cap)
{
    /* expect RANK NAME == VALUE */
    char rank_word[32], name[64];
    int used = 0;
    if (sscanf(rest, "%31s %63s ==%n", rank_word, name, &used) != 2 || used == 0) {
        snprintf(why, cap, "expect needs RANK NAME == VALUE (e.g. `expect 1 t == [1, 2]`)");
        return DL_ERR_INVALID;
    }
    if (strcmp(rank_word, "*") == 0 || strcmp(rank_word, "all") == 0) {
        it->rank = -1;
    } else {
        char *end = NULL;
        long r = strtol(rank_word, &end, 10);
        if (*end != '\0' || r < 0 || r > 4095) {
            snprintf(why, cap, "expect: '%s' is not a rank (a number, or * for every rank)",
                     rank_word);
            return DL_ERR_INVALID;
        }
        it->rank = (int)r;
    }
    const char *value = rest + used;
    if (lab_scenario_parse_values(value, &it->values, &it->n_values) != DL_OK) {
        snprintf(why, cap, "expect: cannot read the value '%s' (write [1, 2] or tensor([1, 2]))",
                 value);
        return DL_ERR_INVALID;
    }
    it->name = strdup(name);
    it->text = strdup(value);
    while (it->text != NULL && isspace((unsigned char)it->text[0]))
        memmove(it->text, it->text + 1, strlen(it->text));
    return it->name != NULL && it->text != NULL ? DL_OK : DL_ERR_NOMEM;
}

/* ---- write questions ---- */

static bool is_name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

/* The name at *p (advanced past it and the blanks after it) into buf. */
static bool take_name(const char **p, char *buf, size_t cap)
{
    const char *s = *p;
    size_t n = 0;
    if (!is_name_start(*s))
        return false;
    while (is_name_char(s[n]))
        n++;
    if (n >= cap)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    s += n;
    while (isspace((unsigned char)*s))
        s++;
    *p = s;
    return true;
}

#define MAX_CODE (64u << 10) /* lab_scenario_read_file's most */

char *lab_scenario_read_file(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return NULL;
    char *text = malloc(MAX_CODE + 1);
    errno = 0;
    size_t n = text != NULL ? fread(text, 1, MAX_CODE + 1, fp) : 0;
    /* What the read said (a folder opens, then reads as EISDIR). */
    int why = errno != 0 ? errno : EIO;
    bool bad = text == NULL || ferror(fp) || n > MAX_CODE;
    fclose(fp);
    if (bad) {
        free(text);
        errno = text == NULL ? ENOMEM : n > MAX_CODE ? EFBIG : why;
        return NULL;
    }
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        n--;
    text[n] = '\0';
    /* A UTF-8 byte order mark (Notepad saves one) is no part of the code. */
    if (n >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        memmove(text, text + 3, n - 3 + 1);
    return text;
}

/* rel resolved against the folder of file (rel itself when absolute). */
static void beside(const char *file, const char *rel, char *out, size_t cap)
{
    const char *slash = file != NULL ? strrchr(file, '/') : NULL;
    if (rel[0] == '/' || slash == NULL)
        snprintf(out, cap, "%s", rel);
    else
        snprintf(out, cap, "%.*s/%s", (int)(slash - file), file, rel);
}

void lab_scenario_ref_name(const lab_scn_write_t *w, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", LAB_SCENARIO_REF_PREFIX, w->name);
}

static dl_status_t parse_check(lab_scn_write_t *w, const char *rest, char *why, size_t cap)
{
    /* check NAME == COLL(NAME[, more]) */
    char name[64], coll[64], arg[64];
    const char *p = rest;
    const char *usage = "check needs NAME == COLLECTIVE(NAME, ...) (e.g. `check t == "
                        "all_reduce(t)`)";
    if (!take_name(&p, name, sizeof(name)) || strncmp(p, "==", 2) != 0) {
        snprintf(why, cap, "%s", usage);
        return DL_ERR_INVALID;
    }
    p += 2;
    while (isspace((unsigned char)*p))
        p++;
    if (!take_name(&p, coll, sizeof(coll)) || *p != '(') {
        snprintf(why, cap, "%s", usage);
        return DL_ERR_INVALID;
    }
    const lab_cmd_t *row = lab_cmd_find(coll);
    if (row == NULL || row->category != LAB_CAT_COLLECTIVE || (row->flags & LAB_CMD_FUNCTION) ||
        strcmp(coll, "barrier") == 0) {
        snprintf(why, cap, "check: '%s' is not a collective that takes a tensor", coll);
        return DL_ERR_INVALID;
    }
    p++;
    while (isspace((unsigned char)*p))
        p++;
    if (!take_name(&p, arg, sizeof(arg)) || strcmp(arg, name) != 0) {
        snprintf(why, cap, "check: %s's first argument must be %s, the tensor checked", coll, name);
        return DL_ERR_INVALID;
    }
    size_t n = strlen(p);
    if (n == 0 || p[n - 1] != ')' || (p[0] != ',' && p[0] != ')')) {
        snprintf(why, cap, "%s", usage);
        return DL_ERR_INVALID;
    }
    w->name = strdup(name);
    w->coll = strdup(coll);
    w->coll_more = strndup(p, n - 1);
    w->check = strdup(rest);
    if (w->name == NULL || w->coll == NULL || w->coll_more == NULL || w->check == NULL)
        return DL_ERR_NOMEM;
    /* The line the check runs must parse. */
    char ref[80], line[MAX_LINE + 160];
    lab_scenario_ref_name(w, ref, sizeof(ref));
    snprintf(line, sizeof(line), "%s(%s%s)", coll, ref, w->coll_more);
    json_t *stmts = NULL;
    lab_parse_error_t e;
    if (lab_parse_line(line, &stmts, &e) != DL_OK) {
        snprintf(why, cap, "check: %s(%s%s) does not parse: %s", coll, name, w->coll_more, e.msg);
        return DL_ERR_INVALID;
    }
    json_decref(stmts);
    return DL_OK;
}

/* ---- limits: a small expression language ---- */

typedef struct {
    const char *p;
    int world_size;
    double nbytes;
    char *why;
    size_t cap;
    bool bad;
} expr_t;

static double expr_sum(expr_t *e);

static void expr_blanks(expr_t *e)
{
    while (isspace((unsigned char)*e->p))
        e->p++;
}

static double expr_bad(expr_t *e, const char *what)
{
    if (!e->bad)
        snprintf(e->why, e->cap, "%s", what);
    e->bad = true;
    return 0;
}

static double expr_primary(expr_t *e)
{
    expr_blanks(e);
    if (*e->p == '-') {
        e->p++;
        return -expr_primary(e);
    }
    if (*e->p == '(') {
        e->p++;
        double v = expr_sum(e);
        expr_blanks(e);
        if (*e->p != ')')
            return expr_bad(e, "a '(' without its ')'");
        e->p++;
        return v;
    }
    char name[32];
    if (take_name(&e->p, name, sizeof(name))) {
        if (strcmp(name, "world_size") == 0)
            return e->world_size;
        if (strcmp(name, "nbytes") == 0)
            return e->nbytes;
        char what[96];
        snprintf(what, sizeof(what), "'%s' is not known here (world_size, nbytes or a number)",
                 name);
        return expr_bad(e, what);
    }
    char *end = NULL;
    double v = strtod(e->p, &end);
    if (end == e->p || !isfinite(v))
        return expr_bad(e, "expected a number, world_size, nbytes or '('");
    e->p = end;
    return v;
}

static double expr_term(expr_t *e)
{
    double v = expr_primary(e);
    for (;;) {
        expr_blanks(e);
        char op = *e->p;
        if (op != '*' && op != '/')
            return v;
        e->p++;
        double w = expr_primary(e);
        if (op == '/' && w == 0)
            return expr_bad(e, "a division by zero");
        v = op == '*' ? v * w : v / w;
    }
}

static double expr_sum(expr_t *e)
{
    double v = expr_term(e);
    for (;;) {
        expr_blanks(e);
        char op = *e->p;
        if (op != '+' && op != '-')
            return v;
        e->p++;
        double w = expr_term(e);
        v = op == '+' ? v + w : v - w;
    }
}

dl_status_t lab_scenario_limit_eval(const char *expr, int world_size, double nbytes, double *v_p,
                                    char *why, size_t cap)
{
    expr_t e = {.p = expr, .world_size = world_size, .nbytes = nbytes, .why = why, .cap = cap};
    double v = expr_sum(&e);
    expr_blanks(&e);
    if (!e.bad && *e.p != '\0')
        expr_bad(&e, "unexpected text after the expression");
    if (e.bad)
        return DL_ERR_INVALID;
    *v_p = v;
    return DL_OK;
}

static dl_status_t parse_limit(lab_scn_write_t *w, const char *rest, char *why, size_t cap)
{
    /* limit messages|bytes EXPR */
    const char *expr;
    char **field = starts_word(rest, "messages", &expr) ? &w->limit_messages
                   : starts_word(rest, "bytes", &expr)  ? &w->limit_bytes
                                                        : NULL;
    if (field == NULL || *expr == '\0') {
        snprintf(why, cap,
                 "limit needs messages or bytes, then a number or an expression in "
                 "world_size and nbytes (e.g. `limit messages 2 * (world_size - 1)`)");
        return DL_ERR_INVALID;
    }
    if (*field != NULL) {
        snprintf(why, cap, "a second `limit %s` for the same question",
                 field == &w->limit_messages ? "messages" : "bytes");
        return DL_ERR_INVALID;
    }
    double v;
    char what[160];
    if (lab_scenario_limit_eval(expr, 4, 64, &v, what, sizeof(what)) != DL_OK) {
        snprintf(why, cap, "limit: cannot read '%s': %s", expr, what);
        return DL_ERR_INVALID;
    }
    *field = strdup(expr);
    return *field != NULL ? DL_OK : DL_ERR_NOMEM;
}

static dl_status_t parse_forbid(lab_scn_write_t *w, const char *rest, char *why, size_t cap)
{
    /* forbid NAME... */
    const char *p = rest;
    char name[64];
    if (*p == '\0') {
        snprintf(why, cap,
                 "forbid needs the commands the code may not use (e.g. `forbid "
                 "all_reduce`)");
        return DL_ERR_INVALID;
    }
    while (*p != '\0') {
        if (!take_name(&p, name, sizeof(name))) {
            snprintf(why, cap, "forbid: '%.*s' is not a command's name", (int)strcspn(p, " \t,"),
                     p);
            return DL_ERR_INVALID;
        }
        if (lab_cmd_find(name) == NULL) {
            snprintf(why, cap, "forbid: '%s' is no command of the shell", name);
            return DL_ERR_INVALID;
        }
        char **grown = realloc(w->forbid, sizeof(*grown) * (w->n_forbid + 1));
        if (grown == NULL)
            return DL_ERR_NOMEM;
        w->forbid = grown;
        if ((w->forbid[w->n_forbid] = strdup(name)) == NULL)
            return DL_ERR_NOMEM;
        w->n_forbid++;
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
    }
    return DL_OK;
}

static dl_status_t add_given(lab_scn_write_t *w, const char *line, char *why, size_t cap)
{
    json_t *stmts = NULL;
    lab_parse_error_t e;
    if (*line == '\0') {
        snprintf(why, cap, "given needs a shell line (e.g. `given t = arange(4) + rank`)");
        return DL_ERR_INVALID;
    }
    if (lab_parse_line(line, &stmts, &e) != DL_OK) {
        snprintf(why, cap, "given: `%s` does not parse: %s", line, e.msg);
        return DL_ERR_INVALID;
    }
    json_decref(stmts);
    char **grown = realloc(w->given, sizeof(*grown) * (w->n_given + 1));
    if (grown == NULL)
        return DL_ERR_NOMEM;
    w->given = grown;
    if ((w->given[w->n_given] = strdup(line)) == NULL)
        return DL_ERR_NOMEM;
    w->n_given++;
    return DL_OK;
}

/* The indented lines under `solution`, as collected, made code: the
 * common indentation and the trailing blank lines go. */
static bool dedent(char *text)
{
    size_t least = (size_t)-1;
    for (char *l = text; *l != '\0';) {
        size_t ind = strspn(l, " \t"), len = strcspn(l, "\n");
        if (ind < len && ind < least)
            least = ind;
        l += len + (l[len] == '\n');
    }
    if (least == (size_t)-1)
        return false;
    char *out = text;
    for (char *l = text; *l != '\0';) {
        size_t len = strcspn(l, "\n");
        size_t cut = len < least ? len : least;
        memmove(out, l + cut, len - cut);
        out += len - cut;
        bool nl = l[len] == '\n';
        l += len + nl;
        if (nl)
            *out++ = '\n';
    }
    *out = '\0';
    while (out > text && (out[-1] == '\n' || isspace((unsigned char)out[-1])))
        *--out = '\0';
    return true;
}

/* torch's other calls for a collective or a send: forbidding the one
 * forbids them too, or `forbid all_gather` would let
 * all_gather_into_tensor and all_gather_object through. */
static const char *const call_family[][2] = {
    {"all_gather_into_tensor", "all_gather"},
    {"all_gather_object", "all_gather"},
    {"reduce_scatter_tensor", "reduce_scatter"},
    {"all_to_all_single", "all_to_all"},
    {"gather_object", "gather"},
    {"scatter_object_list", "scatter"},
    {"broadcast_object_list", "broadcast"},
    {"isend", "send"},
    {"irecv", "recv"},
};

/* The forbidden name that a call of name is (itself, or its family's). */
static const char *forbids(const lab_scn_write_t *w, const char *name)
{
    const char *family = name;
    for (size_t i = 0; i < sizeof(call_family) / sizeof(call_family[0]); i++)
        if (strcmp(name, call_family[i][0]) == 0)
            family = call_family[i][1];
    for (size_t i = 0; i < w->n_forbid; i++)
        if (strcmp(name, w->forbid[i]) == 0 || strcmp(family, w->forbid[i]) == 0)
            return w->forbid[i];
    return NULL;
}

/* Whether the code calls a forbidden command (anywhere in the AST): the
 * name it calls (*called_p), the forbidden one it is or belongs to
 * (returned), and the line of the code it is on. */
static const char *forbidden_in(const lab_scn_write_t *w, const json_t *node, int line, int *line_p,
                                const char **called_p)
{
    if (json_is_object(node)) {
        json_t *l = json_object_get(node, "line");
        if (json_is_integer(l))
            line = (int)json_integer_value(l);
        const char *name = json_string_value(json_object_get(node, "cmd"));
        if (name == NULL)
            name = json_string_value(json_object_get(node, "call"));
        if (name != NULL && strcmp(name, "P2POp") == 0) {
            /* dist.P2POp(dist.isend, ...) calls isend when its batch runs */
            const json_t *op = json_array_get(json_object_get(node, "args"), 0);
            if (op == NULL)
                op = json_object_get(json_object_get(node, "kwargs"), "op");
            const char *op_name = json_string_value(json_object_get(op, "name"));
            if (op_name != NULL)
                name = op_name;
        }
        const char *hit = name != NULL ? forbids(w, name) : NULL;
        if (hit != NULL) {
            *line_p = line;
            *called_p = name;
            return hit;
        }
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)node, key, v)
        {
            const char *hit = forbidden_in(w, v, line, line_p, called_p);
            if (hit != NULL)
                return hit;
        }
    } else if (json_is_array(node)) {
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v)
        {
            const char *hit = forbidden_in(w, v, line, line_p, called_p);
            if (hit != NULL)
                return hit;
        }
    }
    return NULL;
}

bool lab_scenario_code_ok(const lab_scn_write_t *w, const char *code, char *why, size_t cap)
{
    json_t *stmts = NULL;
    lab_parse_error_t e;
    if (strlen(code) > LAB_LANG_MAX_LINE) {
        snprintf(why, cap, "the code is longer than %u bytes", LAB_LANG_MAX_LINE);
        return false;
    }
    if (lab_parse_line(code, &stmts, &e) != DL_OK) {
        snprintf(why, cap, "it does not parse: line %d, column %d: %s", e.line > 0 ? e.line : 1,
                 e.col, e.msg);
        return false;
    }
    bool ok = false;
    size_t i;
    json_t *stmt;
    int line = 0;
    const char *hit;
    if (json_array_size(stmts) == 0) {
        snprintf(why, cap, "there is no code");
        goto out;
    }
    /* The checker's own names (lab_scenario_ref_name): code that read one
     * would copy the answer, code that wrote one could change the check. */
    const char *own = strstr(code, LAB_SCENARIO_REF_PREFIX);
    if (own != NULL) {
        int at = 1;
        for (const char *c = code; c < own; c++)
            at += *c == '\n';
        snprintf(why, cap, "line %d: names that begin with %s are the checker's", at,
                 LAB_SCENARIO_REF_PREFIX);
        goto out;
    }
    json_array_foreach(stmts, i, stmt)
    {
        const lab_cmd_t *row = lab_stmt_session_cmd(stmt);
        if (row != NULL) {
            json_t *l = json_object_get(stmt, "line");
            snprintf(why, cap, "line %d: `%s` is a command of the session, not of the ranks",
                     json_is_integer(l) ? (int)json_integer_value(l) : 1, row->name);
            goto out;
        }
    }
    const char *called = NULL;
    if ((hit = forbidden_in(w, stmts, 1, &line, &called)) != NULL) {
        if (strcmp(called, hit) == 0)
            snprintf(why, cap, "line %d: it calls %s, which this exercise rules out", line, hit);
        else
            snprintf(why, cap, "line %d: it calls %s, a form of %s, which this exercise rules out",
                     line, called, hit);
        goto out;
    }
    ok = true;
out:
    json_decref(stmts);
    return ok;
}

/* The next line of f, whole however long, without its line break, in
 * *buf_p (getline's buffer); false at the end of the file. */
static bool next_line(FILE *f, char **buf_p, size_t *cap_p)
{
    if (getline(buf_p, cap_p, f) < 0)
        return false;
    (*buf_p)[strcspn(*buf_p, "\r\n")] = '\0';
    return true;
}

/* The lines of a `code:` block up to its `end`, read to the end even when
 * too long, so that the next answer starts after it. */
static dl_status_t read_block(FILE *answers, char **buf_p, size_t *bcap_p, char **code_p, char *why,
                              size_t cap)
{
    char *code = NULL;
    size_t len = 0;
    bool too_long = false, no_memory = false;
    while (next_line(answers, buf_p, bcap_p)) {
        char *buf = *buf_p;
        if (strcmp(trim(buf), "end") == 0) {
            while (len > 0 && code[len - 1] == '\n')
                code[--len] = '\0';
            if (no_memory) {
                snprintf(why, cap, "out of memory reading a `code:` block");
                return DL_ERR_NOMEM;
            }
            if (too_long) {
                snprintf(why, cap, "a `code:` block longer than %u bytes", MAX_CODE);
                return DL_ERR_INVALID;
            }
            *code_p = code != NULL ? code : strdup("");
            return *code_p != NULL ? DL_OK : DL_ERR_NOMEM;
        }
        size_t n = strlen(buf);
        too_long = too_long || len + n + 2 > MAX_CODE;
        char *grown = too_long || no_memory ? NULL : realloc(code, len + n + 2);
        if (grown == NULL) {
            no_memory = no_memory || !too_long;
            free(code);
            code = NULL;
            len = 0;
            continue;
        }
        code = grown;
        memcpy(code + len, buf, n);
        len += n;
        code[len++] = '\n';
        code[len] = '\0';
    }
    free(code);
    snprintf(why, cap, "a `code:` block with no `end` line after it");
    return DL_ERR_INVALID;
}

static dl_status_t read_code(FILE *answers, const char *answers_path, char **buf_p, size_t *bcap_p,
                             char **code_p, char *why, size_t cap)
{
    if (!next_line(answers, buf_p, bcap_p))
        return DL_ERR_NOT_FOUND;
    char *line = trim(*buf_p);
    if (strlen(line) > MAX_CODE) {
        snprintf(why, cap, "a line of code longer than %u bytes", MAX_CODE);
        return DL_ERR_INVALID;
    }
    if (line[0] == '@') {
        char path[4096];
        beside(answers_path, trim(line + 1), path, sizeof(path));
        char *code = lab_scenario_read_file(path);
        if (code == NULL) {
            snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
            return DL_ERR_IO;
        }
        *code_p = code;
        return DL_OK;
    }
    if (strcmp(line, "code:") == 0)
        return read_block(answers, buf_p, bcap_p, code_p, why, cap);
    *code_p = strdup(line);
    return *code_p != NULL ? DL_OK : DL_ERR_NOMEM;
}

dl_status_t lab_scenario_read_code(FILE *answers, const char *answers_path, char **code_p,
                                   char *why, size_t cap)
{
    char *buf = NULL;
    size_t bcap = 0;
    dl_status_t st = read_code(answers, answers_path, &buf, &bcap, code_p, why, cap);
    free(buf);
    return st;
}

/* Whether np is in a `sizes:` list: items N or N-M, separated by commas;
 * false for a malformed list too (set_meta refuses those). */
static bool sizes_hold(const char *list, int np, bool *well_formed)
{
    bool in = false;
    *well_formed = false;
    const char *p = list;
    for (;;) {
        char *end = NULL;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || lo < 1 || lo > LAB_MAX_NP)
            return false;
        p = end;
        if (*p == '-') {
            hi = strtol(p + 1, &end, 10);
            if (end == p + 1 || hi < lo || hi > LAB_MAX_NP)
                return false;
            p = end;
        }
        in = in || (np >= lo && np <= hi);
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return false;
        while (isspace((unsigned char)*p))
            p++;
    }
    *well_formed = true;
    return in;
}

bool lab_scenario_size_ok(const lab_scenario_t *s, int np)
{
    bool ok;
    return s->sizes == NULL || sizes_hold(s->sizes, np, &ok);
}

/* Whether name is a backend distlab knows (built here or not: whether it
 * can run is the run's to say); why lists them when not. */
static bool backend_known(const char *name, char *why, size_t cap)
{
    size_t n = 0;
    const char *const *names = dl_backend_names(&n);
    char list[128] = "";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(name, names[i]) == 0)
            return true;
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i > 0 ? ", " : "",
                 names[i]);
    }
    snprintf(why, cap, "backend: '%s' is not a backend (there are: %s)", name, list);
    return false;
}

static const char *const meta_keys[] = {
    "title:", "summary:", "ranks:", "backend:", "demo:", "sizes:"};

/* A line of the header that reads as metadata (`word: ...`) but is none of
 * it, such as `Title: x` or `rank: 2`: no shell line starts so (a block's
 * `else:` or `try:` aside), and run as one it would fail only once the
 * ranks are up, with a parse error that does not say why. */
static bool unknown_meta(const char *line)
{
    static const char *const blocks[] = {"else", "try", "finally", "except"};
    size_t n = 0;
    while (isalnum((unsigned char)line[n]) || line[n] == '_' || line[n] == '-')
        n++;
    if (n == 0 || line[n] != ':' || (line[n + 1] != '\0' && !isspace((unsigned char)line[n + 1])))
        return false;
    for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++)
        if (strlen(blocks[b]) == n && strncmp(line, blocks[b], n) == 0)
            return false;
    return true;
}

/* seen: a bit per key of meta_keys met so far (a second one is refused). */
static bool set_meta(lab_scenario_t *s, const char *line, char *why, size_t cap, bool *is_meta,
                     unsigned *seen_p)
{
    const char *const *keys = meta_keys;
    *is_meta = false;
    for (size_t k = 0; k < sizeof(meta_keys) / sizeof(meta_keys[0]); k++) {
        size_t n = strlen(keys[k]);
        if (strncmp(line, keys[k], n) != 0)
            continue;
        *is_meta = true;
        const char *v = line + n;
        if (*seen_p & (1u << k)) {
            snprintf(why, cap, "a second `%s` line", keys[k]);
            return false;
        }
        *seen_p |= 1u << k;
        while (isspace((unsigned char)*v))
            v++;
        if (k == 4 && strcmp(v, "elastic") != 0) {
            snprintf(why, cap, "demo: '%s' is not a demo (there is: elastic)", v);
            return false;
        }
        if (k == 3 && !backend_known(v, why, cap))
            return false;
        if (k == 2) {
            char *end = NULL;
            long r = strtol(v, &end, 10);
            if (*v == '\0' || *end != '\0' || r < 1 || r > LAB_MAX_NP) {
                snprintf(why, cap, "ranks: '%s' is not a number of ranks (1 to %d)", v, LAB_MAX_NP);
                return false;
            }
            s->ranks = (int)r;
            return true;
        }
        bool well_formed = true;
        if (k == 5 && (sizes_hold(v, 1, &well_formed), !well_formed)) {
            snprintf(why, cap,
                     "sizes: '%s' is not a list of world sizes (such as 4, 2-8 or 1, 2, 4)", v);
            return false;
        }
        char **field = k == 0   ? &s->title
                       : k == 1 ? &s->summary
                       : k == 3 ? &s->backend
                       : k == 4 ? &s->demo
                                : &s->sizes;
        free(*field);
        *field = strdup(v);
        return *field != NULL;
    }
    return true;
}

static lab_scn_item_t *add_item(lab_scenario_t *s)
{
    lab_scn_item_t *n = realloc(s->items, sizeof(*n) * (s->n_items + 1));
    if (n == NULL)
        return NULL;
    s->items = n;
    lab_scn_item_t *it = &s->items[s->n_items++];
    memset(it, 0, sizeof(*it));
    return it;
}

static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b != NULL ? b + 1 : path;
    char *name = strdup(b);
    char *dot = name != NULL ? strrchr(name, '.') : NULL;
    if (dot != NULL && dot != name)
        *dot = '\0';
    return name;
}

/* `explain` is both a directive (the explanation of the question just
 * before it) and the shell's command (a collective's schedule). It is the
 * directive right after an `ask` or a `write` (with its answer and hint) that has no
 * explanation yet; anywhere else it is a shell line. The item just added
 * for this line is the last one, so the question is the one before it. */
static bool explains_question(const lab_scenario_t *s)
{
    const lab_scn_item_t *ask = s->n_items > 1 ? &s->items[s->n_items - 2] : NULL;
    return ask != NULL && (ask->kind == LAB_SCN_ASK || ask->kind == LAB_SCN_WRITE) &&
           ask->explain == NULL;
}

/* The line under `solution` in progress ends: the code must not be empty. */
static dl_status_t end_solution(lab_scn_write_t *w, const char *path, char *err, size_t cap)
{
    if (w->solution == NULL || !dedent(w->solution)) {
        say(err, cap, path, w->solution_lineno,
            "solution: no code under it (indent its lines, or name a file: `solution FILE`)");
        return DL_ERR_INVALID;
    }
    return DL_OK;
}

static dl_status_t append_line(char **text, const char *line)
{
    size_t a = *text != NULL ? strlen(*text) : 0, n = strlen(line);
    if (a + n + 2 > MAX_CODE)
        return DL_ERR_TOO_BIG;
    char *grown = realloc(*text, a + n + 2);
    if (grown == NULL)
        return DL_ERR_NOMEM;
    memcpy(grown + a, line, n);
    grown[a + n] = '\n';
    grown[a + n + 1] = '\0';
    *text = grown;
    return DL_OK;
}

/* A directive that belongs to the `write` question before it (given,
 * check, limit, forbid, solution). */
static dl_status_t write_directive(lab_scn_write_t *w, const char *word, const char *rest,
                                   const char *path, char *why, size_t cap, bool *solving_p)
{
    if (strcmp(word, "given") == 0)
        return add_given(w, rest, why, cap);
    if (strcmp(word, "check") == 0) {
        if (w->check != NULL) {
            snprintf(why, cap, "a second check for the same question");
            return DL_ERR_INVALID;
        }
        return parse_check(w, rest, why, cap);
    }
    if (strcmp(word, "limit") == 0)
        return parse_limit(w, rest, why, cap);
    if (strcmp(word, "forbid") == 0)
        return parse_forbid(w, rest, why, cap);
    /* solution: the indented lines below it, or a file beside the scenario. */
    if (w->solution != NULL) {
        snprintf(why, cap, "a second solution for the same question");
        return DL_ERR_INVALID;
    }
    if (*rest == '\0') {
        *solving_p = true;
        return DL_OK;
    }
    char file[4096];
    beside(path, rest, file, sizeof(file));
    if ((w->solution = lab_scenario_read_file(file)) == NULL) {
        snprintf(why, cap, "solution: cannot read %.300s: %s", file, strerror(errno));
        return DL_ERR_INVALID;
    }
    return DL_OK;
}

static void write_free(lab_scn_write_t *w)
{
    if (w == NULL)
        return;
    for (size_t i = 0; i < w->n_given; i++)
        free(w->given[i]);
    free(w->given);
    for (size_t i = 0; i < w->n_forbid; i++)
        free(w->forbid[i]);
    free(w->forbid);
    free(w->name);
    free(w->coll);
    free(w->coll_more);
    free(w->check);
    free(w->limit_messages);
    free(w->limit_bytes);
    free(w->solution);
    free(w);
}

dl_status_t lab_scenario_load(const char *path, lab_scenario_t *s, char *err, size_t cap)
{
    memset(s, 0, sizeof(*s));
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return DL_ERR_IO;
    }
    s->path = strdup(path);
    s->name = base_name(path);
    s->ranks = 4;
    char buf[MAX_LINE + 2], why[512];
    int lineno = 0;
    bool body = false;
    unsigned meta_seen = 0;
    lab_scn_write_t *solving = NULL; /* a `solution` whose lines are being read */
    lab_lang_gather_t gather = {0};  /* what the last code line leaves open */
    dl_status_t st = DL_OK;
    while (fgets(buf, sizeof(buf), fp) != NULL) {
        lineno++;
        if (strlen(buf) > MAX_LINE) {
            say(err, cap, path, lineno, "line longer than %d bytes", MAX_LINE);
            st = DL_ERR_INVALID;
            break;
        }
        buf[strcspn(buf, "\r\n")] = '\0';
        /* A file saved with a UTF-8 byte order mark (Notepad's way): the
         * mark is no part of its first line, `title:` as a rule. */
        if (lineno == 1 && strncmp(buf, "\xef\xbb\xbf", 3) == 0)
            memmove(buf, buf + 3, strlen(buf + 3) + 1);
        /* The lines under `solution`: indented, or blank. */
        if (solving != NULL) {
            size_t ind = strspn(buf, " \t");
            if (buf[ind] == '\0' || ind > 0) {
                if ((st = append_line(&solving->solution, buf)) != DL_OK) {
                    if (st == DL_ERR_TOO_BIG)
                        say(err, cap, path, lineno, "solution: longer than %u bytes", MAX_CODE);
                    st = st == DL_ERR_TOO_BIG ? DL_ERR_INVALID : st;
                    break;
                }
                continue;
            }
            st = end_solution(solving, path, err, cap);
            solving = NULL;
            if (st != DL_OK)
                break;
        }
        /* A block's lines (after `for ...:`, `if ...:`, `on R:`), and the
         * lines of an open bracket, go with the line that opened it,
         * indentation and all: the shell parses them as one text. */
        lab_scn_item_t *last = s->n_items > 0 ? &s->items[s->n_items - 1] : NULL;
        if (last != NULL && last->kind == LAB_SCN_LINE && buf[strspn(buf, " \t")] != '\0' &&
            buf[strspn(buf, " \t")] != '#' && lab_lang_gather_takes(&gather, buf)) {
            size_t a = strlen(last->text);
            char *grown = realloc(last->text, a + strlen(buf) + 2);
            if (grown == NULL) {
                st = DL_ERR_NOMEM;
                break;
            }
            grown[a] = '\n';
            strcpy(grown + a + 1, buf);
            last->text = grown;
            continue;
        }
        char *line = trim(buf);
        if (line[0] == '\0' || line[0] == '#')
            continue;
        bool is_meta = false;
        why[0] = '\0';
        if (!set_meta(s, line, why, sizeof(why), &is_meta, &meta_seen)) {
            say(err, cap, path, lineno, "%s", why[0] ? why : "out of memory");
            st = DL_ERR_INVALID;
            break;
        }
        if (!is_meta && !body && unknown_meta(line)) {
            say(err, cap, path, lineno,
                "'%.*s' is not a directive (title:, summary:, ranks:, sizes:, backend:, demo:)",
                (int)(strchr(line, ':') - line + 1), line);
            st = DL_ERR_INVALID;
            break;
        }
        if (is_meta) {
            if (body) {
                say(err, cap, path, lineno, "metadata (%.*s) must come before the first step",
                    (int)(strchr(line, ':') - line), line);
                st = DL_ERR_INVALID;
                break;
            }
            continue;
        }
        body = true;
        lab_scn_item_t *it = add_item(s);
        if (it == NULL) {
            st = DL_ERR_NOMEM;
            break;
        }
        it->lineno = lineno;
        const char *rest;
        if (starts_word(line, "say", &rest)) {
            it->kind = LAB_SCN_SAY;
            it->text = strdup(rest);
        } else if (starts_word(line, "pause", &rest)) {
            it->kind = LAB_SCN_PAUSE;
            it->text = strdup(rest);
        } else if (starts_word(line, "expect", &rest)) {
            it->kind = LAB_SCN_EXPECT;
            if (parse_expect(it, rest, why, sizeof(why)) != DL_OK) {
                say(err, cap, path, lineno, "%s", why);
                st = DL_ERR_INVALID;
                break;
            }
        } else if (starts_word(line, "ask", &rest)) {
            it->kind = LAB_SCN_ASK;
            it->text = strdup(rest);
            s->n_questions++;
        } else if (starts_word(line, "write", &rest)) {
            it->kind = LAB_SCN_WRITE;
            if (*rest == '\0') {
                say(err, cap, path, lineno, "write needs the question's text");
                st = DL_ERR_INVALID;
                break;
            }
            it->text = strdup(rest);
            it->write = calloc(1, sizeof(*it->write));
            if (it->write == NULL) {
                st = DL_ERR_NOMEM;
                break;
            }
            s->n_questions++;
        } else if (starts_word(line, "given", &rest) || starts_word(line, "check", &rest) ||
                   starts_word(line, "limit", &rest) || starts_word(line, "forbid", &rest) ||
                   starts_word(line, "solution", &rest)) {
            /* These belong to the `write` question just before them. */
            s->n_items--;
            lab_scn_item_t *q = s->n_items > 0 ? &s->items[s->n_items - 1] : NULL;
            char word[16];
            snprintf(word, sizeof(word), "%.*s", (int)strcspn(line, " \t"), line);
            if (q == NULL || q->kind != LAB_SCN_WRITE) {
                say(err, cap, path, lineno, "%s must follow a `write` line", word);
                st = DL_ERR_INVALID;
                break;
            }
            bool solving_now = false;
            why[0] = '\0';
            st = write_directive(q->write, word, rest, path, why, sizeof(why), &solving_now);
            if (st == DL_ERR_INVALID)
                say(err, cap, path, lineno, "%s", why);
            if (st != DL_OK)
                break;
            if (strcmp(word, "solution") == 0)
                q->write->solution_lineno = lineno;
            if (solving_now)
                solving = q->write;
            continue;
        } else if (starts_word(line, "answer", &rest) || starts_word(line, "hint", &rest) ||
                   (starts_word(line, "explain", &rest) && explains_question(s))) {
            /* These belong to the question just before them; an answer only
             * to an `ask` (a `write` question's answer is code). */
            s->n_items--;
            lab_scn_item_t *ask = s->n_items > 0 ? &s->items[s->n_items - 1] : NULL;
            char **field = line[0] == 'a'   ? (ask ? &ask->answer : NULL)
                           : line[0] == 'h' ? (ask ? &ask->hint : NULL)
                                            : (ask ? &ask->explain : NULL);
            if (ask == NULL ||
                (ask->kind != LAB_SCN_ASK && (ask->kind != LAB_SCN_WRITE || line[0] == 'a'))) {
                say(err, cap, path, lineno, "%.*s must follow an `ask` line%s",
                    (int)strcspn(line, " \t"), line, line[0] == 'a' ? "" : " or a `write` line");
                st = DL_ERR_INVALID;
                break;
            }
            if (*field != NULL) {
                say(err, cap, path, lineno, "a second %.*s for the same question",
                    (int)strcspn(line, " \t"), line);
                st = DL_ERR_INVALID;
                break;
            }
            *field = strdup(rest);
            if (*field == NULL) {
                st = DL_ERR_NOMEM;
                break;
            }
            if (line[0] == 'a')
                lab_scenario_parse_values(rest, &ask->values, &ask->n_values);
            continue;
        } else {
            it->kind = LAB_SCN_LINE;
            it->text = strdup(line);
            lab_lang_gather_start(&gather, line);
        }
        if (it->text == NULL) {
            st = DL_ERR_NOMEM;
            break;
        }
    }
    fclose(fp);
    if (st == DL_OK && solving != NULL)
        st = end_solution(solving, path, err, cap);
    /* A demo plays itself: the file narrates its start, nothing more. */
    for (size_t i = 0; st == DL_OK && s->demo != NULL && i < s->n_items; i++)
        if (s->items[i].kind != LAB_SCN_SAY) {
            say(err, cap, path, s->items[i].lineno,
                "a `demo:` scenario holds `say` lines only (the demo runs the rest)");
            st = DL_ERR_INVALID;
        }
    for (size_t i = 0; st == DL_OK && i < s->n_items; i++) {
        const lab_scn_item_t *it = &s->items[i];
        const lab_scn_write_t *w = it->write;
        if (it->kind == LAB_SCN_ASK && it->answer == NULL) {
            say(err, cap, path, it->lineno, "this question has no `answer` line");
            st = DL_ERR_INVALID;
        } else if (it->kind == LAB_SCN_WRITE && w->check == NULL) {
            say(err, cap, path, it->lineno,
                "this `write` question has no `check` line (e.g. `check t == all_reduce(t)`)");
            st = DL_ERR_INVALID;
        } else if (it->kind == LAB_SCN_WRITE && w->solution == NULL) {
            say(err, cap, path, it->lineno, "this `write` question has no `solution`");
            st = DL_ERR_INVALID;
        } else if (it->kind == LAB_SCN_WRITE &&
                   !lab_scenario_code_ok(w, w->solution, why, sizeof(why))) {
            say(err, cap, path, w->solution_lineno, "the solution: %s", why);
            st = DL_ERR_INVALID;
        }
    }
    if (st == DL_OK && s->title == NULL) {
        say(err, cap, path, 1, "no `title:` line");
        st = DL_ERR_INVALID;
    }
    if (st == DL_OK && !lab_scenario_size_ok(s, s->ranks)) {
        say(err, cap, path, 1, "its %d ranks (`ranks:`) are not among its `sizes:` %s", s->ranks,
            s->sizes);
        st = DL_ERR_INVALID;
    }
    if (st == DL_ERR_NOMEM)
        snprintf(err, cap, "%s: out of memory", path);
    if (st != DL_OK)
        lab_scenario_free(s);
    return st;
}

void lab_scenario_free(lab_scenario_t *s)
{
    for (size_t i = 0; i < s->n_items; i++) {
        free(s->items[i].text);
        free(s->items[i].name);
        free(s->items[i].values);
        free(s->items[i].answer);
        free(s->items[i].hint);
        free(s->items[i].explain);
        write_free(s->items[i].write);
    }
    free(s->items);
    free(s->path);
    free(s->name);
    free(s->title);
    free(s->summary);
    free(s->demo);
    free(s->sizes);
    free(s->backend);
    memset(s, 0, sizeof(*s));
}

bool lab_scenario_close(double got, double want)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= 1e-8 + 1e-5 * fabs(want);
}

/* A numeric answer as a learner may word it, reduced to its numbers:
 * "rank 2" and "2", "6 steps" and "6", "0 bytes", "none" and "0",
 * "6,000,000" and "6000000" where one number is asked for. The unit right
 * after the number ("steps", "MB") goes in unit, or "". */
static void answer_numbers(const lab_scn_item_t *ask, const char *given, char *buf, size_t cap,
                           char *unit, size_t ucap)
{
    unit[0] = '\0';
    while (isspace((unsigned char)*given))
        given++;
    static const char *const lead[] = {"ranks ", "rank ", "index ", "element "};
    for (size_t k = 0; k < sizeof(lead) / sizeof(lead[0]); k++)
        if (strncasecmp(given, lead[k], strlen(lead[k])) == 0) {
            given += strlen(lead[k]);
            break;
        }
    snprintf(buf, cap, "%s", given);
    size_t n = strlen(buf);
    /* A unit after the number: letters, after a blank or a digit. */
    for (;;) {
        while (n > 0 && isspace((unsigned char)buf[n - 1]))
            n--;
        size_t w = n;
        while (w > 0 && isalpha((unsigned char)buf[w - 1]))
            w--;
        if (w == n || w == 0 ||
            !(isspace((unsigned char)buf[w - 1]) || isdigit((unsigned char)buf[w - 1])))
            break;
        snprintf(unit, ucap, "%.*s", (int)(n - w), buf + w);
        n = w;
    }
    buf[n] = '\0';
    /* "no" is a number only before a unit ("no bytes", its unit gone by
     * now): alone it is a word. */
    static const char *const zero[] = {"none", "nothing", "zero", "nil", "no"};
    size_t n_zero = sizeof(zero) / sizeof(zero[0]) - (unit[0] == '\0');
    for (size_t k = 0; k < n_zero; k++)
        if (strcasecmp(buf, zero[k]) == 0)
            snprintf(buf, cap, "0");
    /* Thousands written with commas: one number, not a list. */
    if (ask->n_values == 1) {
        const char *s = buf + (buf[0] == '-');
        size_t digits = strspn(s, "0123456789");
        bool grouped = digits >= 1 && digits <= 3 && s[digits] == ',';
        const char *g = s + digits;
        while (grouped && *g == ',') {
            grouped = strspn(g + 1, "0123456789") == 3;
            g += 4;
        }
        if (grouped && *g == '\0') {
            char *o = buf;
            for (const char *c = buf; *c; c++)
                if (*c != ',')
                    *o++ = *c;
            *o = '\0';
        }
    }
}

/* What a byte unit after a learner's number multiplies it by, every
 * reading of it (KB is 1000 or 1024 bytes as people use it, KiB 1024
 * only); any other word ("steps", "messages"), or none, 1. The library
 * asks for bytes in bytes, so "6 MB" is 6000000 and "96 KB" not 96. */
static size_t unit_scales(const char *unit, double scales[2])
{
    static const struct {
        const char *name;
        double a, b;
    } units[] = {{"kb", 1e3, 1024.0},   {"kib", 1024.0, 0},        {"mb", 1e6, 1048576.0},
                 {"mib", 1048576.0, 0}, {"gb", 1e9, 1073741824.0}, {"gib", 1073741824.0, 0}};
    /* Bytes are B: 6 Mb (megabits), 2 kb are words like any other. */
    size_t len = strlen(unit);
    for (size_t k = 0; len > 0 && unit[len - 1] == 'B' && k < sizeof(units) / sizeof(units[0]); k++)
        if (strcasecmp(unit, units[k].name) == 0) {
            scales[0] = units[k].a;
            scales[1] = units[k].b;
            return units[k].b > 0 ? 2 : 1;
        }
    scales[0] = 1;
    return 1;
}

/* The numbers of a numeric answer (*v_p malloc'd), as answer_numbers
 * reads its wording, and the scales of its unit (unit_scales) in scales,
 * their count returned in *n_scales_p. */
static dl_status_t answer_values(const lab_scn_item_t *ask, const char *given, double **v_p,
                                 size_t *n_p, double scales[2], size_t *n_scales_p)
{
    char buf[256], unit[32];
    answer_numbers(ask, given, buf, sizeof(buf), unit, sizeof(unit));
    *n_scales_p = unit_scales(unit, scales);
    return lab_scenario_parse_values(buf, v_p, n_p);
}

bool lab_scenario_answer_readable(const lab_scn_item_t *ask, const char *given)
{
    if (ask->n_values == 0)
        return true;
    double *v = NULL, scales[2];
    size_t n = 0, n_scales;
    if (answer_values(ask, given, &v, &n, scales, &n_scales) != DL_OK)
        return false;
    free(v);
    return true;
}

bool lab_scenario_answer_ok(const lab_scn_item_t *ask, const char *given)
{
    if (ask->n_values > 0) {
        double *v = NULL, scales[2];
        size_t n = 0, n_scales;
        if (answer_values(ask, given, &v, &n, scales, &n_scales) != DL_OK)
            return false;
        /* One number asked for: a tensor of it everywhere says the same
         * ([-112, -112] for "-112", as every element of the tensor is). */
        bool ok = false;
        for (size_t k = 0; k < n_scales && !ok; k++) {
            ok = n == ask->n_values || ask->n_values == 1;
            for (size_t i = 0; ok && i < n; i++)
                ok = lab_scenario_close(v[i] * scales[k], ask->values[ask->n_values == 1 ? 0 : i]);
        }
        free(v);
        return ok;
    }
    /* Words as a learner ends a sentence or quotes a name: `Yes.` and
     * `output_splits` in backquotes are the words themselves (what the
     * answer itself holds is kept). */
    const char *marks = "`\"'", *ends = "`\"'.!";
    size_t want = strlen(ask->answer);
    while (isspace((unsigned char)*given) ||
           (*given != '\0' && strchr(marks, *given) != NULL && ask->answer[0] != *given))
        given++;
    size_t n = strlen(given);
    while (n > 0 && (isspace((unsigned char)given[n - 1]) ||
                     (strchr(ends, given[n - 1]) != NULL &&
                      (want == 0 || ask->answer[want - 1] != given[n - 1]))))
        n--;
    if (n == 1 && (strcasecmp(ask->answer, "yes") == 0 || strcasecmp(ask->answer, "no") == 0))
        return tolower((unsigned char)given[0]) == tolower((unsigned char)ask->answer[0]);
    return n == want && strncasecmp(given, ask->answer, n) == 0;
}

const char *const *lab_scenario_dirs(size_t *n_p)
{
    static const char *dirs[3];
    size_t n = 0;
    const char *env = getenv("DISTLAB_SCENARIOS");
    if (env != NULL && env[0] != '\0') {
        dirs[n++] = env;
    } else {
        dirs[n++] = DISTLAB_SCENARIO_DIR;
        dirs[n++] = DISTLAB_SOURCE_SCENARIO_DIR;
    }
    *n_p = n;
    return dirs;
}

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

bool lab_scenario_find(const char *name, char *path, size_t cap)
{
    /* A bare name is the library's even when a file of that name lies in
     * the current folder: `reduce` must not run whatever ./reduce holds. */
    size_t len = strlen(name);
    if (strchr(name, '/') != NULL || (len > 9 && strcmp(name + len - 9, ".scenario") == 0)) {
        snprintf(path, cap, "%s", name);
        return is_file(path);
    }
    size_t n;
    const char *const *dirs = lab_scenario_dirs(&n);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, cap, "%s/%s.scenario", dirs[i], name);
        if (is_file(path))
            return true;
    }
    return false;
}
