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

#include "lab/lang/lang.h"
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

static bool set_meta(lab_scenario_t *s, const char *line, char *why, size_t cap, bool *is_meta)
{
    static const char *const keys[] = {"title:", "summary:", "ranks:", "backend:"};
    *is_meta = false;
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        size_t n = strlen(keys[k]);
        if (strncmp(line, keys[k], n) != 0)
            continue;
        *is_meta = true;
        const char *v = line + n;
        while (isspace((unsigned char)*v))
            v++;
        if (k == 2) {
            char *end = NULL;
            long r = strtol(v, &end, 10);
            if (*v == '\0' || *end != '\0' || r < 1 || r > 4096) {
                snprintf(why, cap, "ranks: '%s' is not a number of ranks (1 to 4096)", v);
                return false;
            }
            s->ranks = (int)r;
            return true;
        }
        char **field = k == 0 ? &s->title : k == 1 ? &s->summary : &s->backend;
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
 * directive right after an `ask` (with its answer and hint) that has no
 * explanation yet; anywhere else it is a shell line. The item just added
 * for this line is the last one, so the question is the one before it. */
static bool explains_question(const lab_scenario_t *s)
{
    const lab_scn_item_t *ask = s->n_items > 1 ? &s->items[s->n_items - 2] : NULL;
    return ask != NULL && ask->kind == LAB_SCN_ASK && ask->explain == NULL;
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
    dl_status_t st = DL_OK;
    while (fgets(buf, sizeof(buf), fp) != NULL) {
        lineno++;
        if (strlen(buf) > MAX_LINE) {
            say(err, cap, path, lineno, "line longer than %d bytes", MAX_LINE);
            st = DL_ERR_INVALID;
            break;
        }
        buf[strcspn(buf, "\r\n")] = '\0';
        /* A block's lines (after `for ...:`, `if ...:`, `on R:`) go with
         * the line that opened it, indentation and all: the shell parses
         * a block as one text. */
        lab_scn_item_t *last = s->n_items > 0 ? &s->items[s->n_items - 1] : NULL;
        if (last != NULL && last->kind == LAB_SCN_LINE && lab_lang_starts_block(last->text) &&
            buf[strspn(buf, " \t")] != '\0' && buf[strspn(buf, " \t")] != '#' &&
            lab_lang_continues_block(buf)) {
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
        if (!set_meta(s, line, why, sizeof(why), &is_meta)) {
            say(err, cap, path, lineno, "%s", why[0] ? why : "out of memory");
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
            s->n_asks++;
        } else if (starts_word(line, "answer", &rest) || starts_word(line, "hint", &rest) ||
                   (starts_word(line, "explain", &rest) && explains_question(s))) {
            /* These belong to the question just before them. */
            s->n_items--;
            lab_scn_item_t *ask = s->n_items > 0 ? &s->items[s->n_items - 1] : NULL;
            char **field = line[0] == 'a'   ? (ask ? &ask->answer : NULL)
                           : line[0] == 'h' ? (ask ? &ask->hint : NULL)
                                            : (ask ? &ask->explain : NULL);
            if (ask == NULL || ask->kind != LAB_SCN_ASK) {
                say(err, cap, path, lineno, "%.*s must follow an `ask` line",
                    (int)strcspn(line, " \t"), line);
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
        }
        if (it->text == NULL) {
            st = DL_ERR_NOMEM;
            break;
        }
    }
    fclose(fp);
    for (size_t i = 0; st == DL_OK && i < s->n_items; i++)
        if (s->items[i].kind == LAB_SCN_ASK && s->items[i].answer == NULL) {
            say(err, cap, path, s->items[i].lineno, "this question has no `answer` line");
            st = DL_ERR_INVALID;
        }
    if (st == DL_OK && s->title == NULL) {
        say(err, cap, path, 1, "no `title:` line");
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
    }
    free(s->items);
    free(s->path);
    free(s->name);
    free(s->title);
    free(s->summary);
    free(s->backend);
    memset(s, 0, sizeof(*s));
}

bool lab_scenario_answer_ok(const lab_scn_item_t *ask, const char *given)
{
    if (ask->n_values > 0) {
        double *v = NULL;
        size_t n = 0;
        if (lab_scenario_parse_values(given, &v, &n) != DL_OK)
            return false;
        bool ok = n == ask->n_values;
        for (size_t i = 0; ok && i < n; i++)
            ok = fabs(v[i] - ask->values[i]) <= 1e-5 * fmax(1.0, fabs(ask->values[i]));
        free(v);
        return ok;
    }
    while (isspace((unsigned char)*given))
        given++;
    size_t n = strlen(given);
    while (n > 0 && isspace((unsigned char)given[n - 1]))
        n--;
    return n == strlen(ask->answer) && strncasecmp(given, ask->answer, n) == 0;
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
    if (strchr(name, '/') != NULL || is_file(name)) {
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
