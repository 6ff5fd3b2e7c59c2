/* Python's strings beyond literals and f-strings: the operators on them
 * ('-' * 20, 'a' < 'b', 'Rank %d' % rank, and Python's errors for the
 * rest), their methods ('{} of {}'.format(rank, n), ' '.join(l),
 * s.split(','), s.upper(), ...), and a field of a format string, which an
 * f-string, format() and % share. Strings are bytes here: an index counts
 * bytes, as it counts characters in ASCII text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

void lab__sbuf_put(lab_sbuf_t *b, const char *s, size_t n)
{
    if (b->nomem || b->too_long)
        return;
    if (b->max != 0 && b->len + n > b->max) {
        b->too_long = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *grown = realloc(b->s, cap);
        if (grown == NULL) {
            b->nomem = true;
            return;
        }
        b->s = grown;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void lab__sbuf_puts(lab_sbuf_t *b, const char *s)
{
    lab__sbuf_put(b, s, strlen(s));
}

/* What this file makes is at most LAB_STR_MAX bytes, as + makes it. */
typedef lab_sbuf_t sbuf_t;
#define SBUF_INIT                                                                                  \
    {                                                                                              \
        .max = LAB_STR_MAX                                                                         \
    }
#define put_n lab__sbuf_put
#define put   lab__sbuf_puts

/* b as a string value in out, or its error. */
static dl_status_t finish(lab_eval_t *ev, const json_t *node, lab_sbuf_t *b, lab_value_t *out)
{
    lab__sbuf_put(b, "", 0);
    if (b->nomem || b->too_long) {
        free(b->s);
        return b->nomem ? DL_ERR_NOMEM
                        : fail(ev, node, "string too long (at most %u bytes)", LAB_STR_MAX);
    }
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_STR;
    out->s = b->s;
    return DL_OK;
}

static const char *text_of(const lab_value_t *v)
{
    return v->s != NULL ? v->s : "";
}

/* ---- one field ---- */

dl_status_t lab__eval_format_field(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                                   char conv, const char *spec, char **text)
{
    /* !r and !s convert first: the spec then formats the string */
    if (conv == 'r' || conv == 's') {
        lab_value_t str = {.kind = LAB_V_STR};
        dl_status_t st = lab__eval_format(ev, node, v, conv == 'r', &str.s);
        if (st != DL_OK)
            return st;
        st = spec != NULL && spec[0] != '\0'
                 ? lab__eval_format_spec(ev, node, &str, spec, text)
                 : ((*text = strdup(str.s)) != NULL ? DL_OK : DL_ERR_NOMEM);
        free(str.s);
        return st;
    }
    if (spec != NULL)
        return lab__eval_format_spec(ev, node, v, spec, text);
    /* A tensor of no dimensions formats as its number, as torch's
     * Tensor.__format__ does: f"{t[0]}" is 1.0 (and True), not tensor(1.). */
    if (v->kind == LAB_V_TENSOR && v->t->ndim == 0) {
        dl_tensor_t *h = NULL;
        if (dl_tensor_to(v->t, (dl_device_t){DL_DEVICE_CPU, 0}, &h) != DL_OK)
            return fail(ev, node, "cannot copy the tensor from the GPU: %s", dl_cuda_last_error());
        lab_value_t x;
        lab__eval_item(h, &x);
        dl_tensor_free(h);
        return lab__eval_format(ev, node, &x, false, text);
    }
    return lab__eval_format(ev, node, v, false, text);
}

/* ---- str.format ---- */

/* The value a field names: {} (the next positional one), {0}, {name}. */
static dl_status_t field_value(lab_eval_t *ev, const json_t *node, const char *key, size_t keylen,
                               const lab_value_t *pos, int npos, const char *const *kw_names,
                               const lab_value_t *kw_vals, size_t nkw, int *next, bool *numbered,
                               const lab_value_t **v)
{
    if (keylen == 0 || (key[0] >= '0' && key[0] <= '9')) {
        long k;
        if (keylen == 0) {
            if (*numbered)
                return fail(ev, node,
                            "cannot switch from manual field specification to automatic field "
                            "numbering");
            k = (*next)++;
        } else {
            if (*next > 0)
                return fail(ev, node,
                            "cannot switch from automatic field numbering to manual field "
                            "specification");
            *numbered = true;
            char *end = NULL;
            k = strtol(key, &end, 10);
            if (end != key + keylen)
                return fail(ev, node, "a field is {}, {N} or {name}: '%.*s'", (int)keylen, key);
        }
        if (k >= npos)
            return fail(ev, node, "Replacement index %ld out of range for positional args tuple",
                        k);
        *v = &pos[k];
        return DL_OK;
    }
    char name[64];
    if (keylen >= sizeof(name))
        return fail(ev, node, "'%.*s'", (int)keylen, key);
    memcpy(name, key, keylen);
    name[keylen] = '\0';
    for (size_t k = 0; k < nkw; k++) {
        if (strcmp(kw_names[k], name) == 0) {
            *v = &kw_vals[k];
            return DL_OK;
        }
    }
    return fail(ev, node, "KeyError: '%s' (the field {%s} needs %s= in the call)", name, name,
                name);
}

static dl_status_t str_format(lab_eval_t *ev, const json_t *node, const char *fmt,
                              const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    lab_sbuf_t b = SBUF_INIT;
    int next = 0;
    bool numbered = false;
    dl_status_t st = DL_OK;
    /* the keyword arguments, each evaluated once, as Python's call does */
    size_t nkw = json_object_size(kw), k = 0;
    const char **kw_names = calloc(nkw ? nkw : 1, sizeof(*kw_names));
    lab_value_t *kw_vals = calloc(nkw ? nkw : 1, sizeof(*kw_vals));
    const char *key_;
    json_t *arg;
    if (kw_names == NULL || kw_vals == NULL)
        st = DL_ERR_NOMEM;
    json_object_foreach((json_t *)kw, key_, arg)
    {
        if (st != DL_OK)
            break;
        kw_names[k] = key_;
        if ((st = lab_eval_expr(ev, arg, &kw_vals[k])) == DL_OK && lab__eval_undefined(&kw_vals[k]))
            st = lab__eval_fail_undefined(ev, arg, &kw_vals[k]);
        k++;
    }
    for (const char *p = fmt; *p != '\0' && st == DL_OK;) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            lab__sbuf_put(&b, p, 1);
            p += 2;
            continue;
        }
        if (*p == '}') {
            st = fail(ev, node, "Single '}' encountered in format string");
            break;
        }
        if (*p != '{') {
            size_t n = strcspn(p, "{}");
            lab__sbuf_put(&b, p, n);
            p += n;
            continue;
        }
        const char *close = strchr(p, '}');
        if (close == NULL) {
            st = fail(ev, node, "Single '{' encountered in format string");
            break;
        }
        /* {key!c:spec} */
        const char *key = p + 1, *end = close;
        size_t keylen = strcspn(key, "!:}");
        const char *after = key + keylen;
        char conv = 0;
        if (*after == '!') {
            conv = after[1];
            if ((conv != 'r' && conv != 's') || (after[2] != ':' && after[2] != '}')) {
                st = fail(ev, node, "conversions are !r and !s");
                break;
            }
            after += 2;
        }
        char spec[64];
        const char *sp = NULL;
        if (*after == ':') {
            size_t n = (size_t)(end - after - 1);
            if (n >= sizeof(spec) || memchr(after + 1, '{', n) != NULL) {
                st = fail(ev, node, "a field inside a format spec is not supported here");
                break;
            }
            memcpy(spec, after + 1, n);
            spec[n] = '\0';
            sp = spec;
        }
        const lab_value_t *v = NULL;
        char *text = NULL;
        if ((st = field_value(ev, node, key, keylen, pos, npos, kw_names, kw_vals, nkw, &next,
                              &numbered, &v)) == DL_OK &&
            (st = lab__eval_format_field(ev, node, v, conv, sp, &text)) == DL_OK)
            lab__sbuf_puts(&b, text);
        free(text);
        p = close + 1;
    }
    for (size_t i = 0; kw_vals != NULL && i < nkw; i++)
        lab_value_clear(&kw_vals[i]);
    free(kw_vals);
    free(kw_names);
    if (st != DL_OK) {
        free(b.s);
        return st;
    }
    return finish(ev, node, &b, out);
}

/* ---- printf-style % ---- */

/* One %-conversion of v, as Python's: translated into a format spec. */
static dl_status_t percent_one(lab_eval_t *ev, const json_t *node, const char *flags,
                               const char *width, const char *prec, char type, const lab_value_t *v,
                               char **text)
{
    if (type == 's' || type == 'r' || type == 'a')
        return lab__eval_format_field(ev, node, v, type == 's' ? 's' : 'r', NULL, text);
    lab_value_t x = *v; /* read only: nothing of it is freed here */
    if (x.kind == LAB_V_TENSOR) {
        if (x.t->numel != 1)
            return fail(ev, node, "only one element tensors can be converted to Python scalars");
        dl_tensor_t *h = NULL;
        if (dl_tensor_to(x.t, (dl_device_t){DL_DEVICE_CPU, 0}, &h) != DL_OK)
            return fail(ev, node, "cannot copy the tensor from the GPU: %s", dl_cuda_last_error());
        lab__eval_item(h, &x);
        dl_tensor_free(h);
    }
    if (x.kind != LAB_V_INT && x.kind != LAB_V_FLOAT && x.kind != LAB_V_BOOL)
        return fail(ev, node, "%%%c format: a real number is required, not %s", type,
                    lab_vkind_name(x.kind));
    char t = type == 'i' || type == 'u' ? 'd' : type;
    if ((t == 'd' || t == 'x' || t == 'X' || t == 'o' || t == 'c') && x.kind == LAB_V_FLOAT) {
        if (t != 'd')
            return fail(ev, node, "%%%c format: an integer is required, not float", type);
        if (isnan(x.f))
            return fail(ev, node, "cannot convert float NaN to integer");
        if (isinf(x.f))
            return fail(ev, node, "cannot convert float infinity to integer");
        if (!(x.f > -0x1p63 && x.f < 0x1p63))
            return fail(ev, node, "%%d of %g: the shell's ints are 64-bit", x.f);
        x.kind = LAB_V_INT; /* '%d' % 3.7 is '3' */
        x.i = (int64_t)x.f;
    }
    if (x.kind == LAB_V_BOOL)
        x.kind = LAB_V_INT;
    if (t == 'c') {
        if (x.i < 0 || x.i > 127)
            return fail(ev, node, "%%c arg not in range(128) here");
        if ((*text = malloc(2)) == NULL)
            return DL_ERR_NOMEM;
        (*text)[0] = (char)x.i;
        (*text)[1] = '\0';
        return DL_OK;
    }
    if (prec[0] != '\0' && strchr("dxXo", t) != NULL) {
        /* '%.3d' % 5 is '005': a precision is the fewest digits, after
         * the sign and 0x; the width then pads with blanks, or zeros */
        char base_spec[8];
        snprintf(base_spec, sizeof(base_spec), "%s%s%c",
                 strchr(flags, '+')   ? "+"
                 : strchr(flags, ' ') ? " "
                                      : "",
                 strchr(flags, '#') ? "#" : "", t);
        char *digits = NULL;
        dl_status_t st = lab__eval_format_spec(ev, node, &x, base_spec, &digits);
        if (st != DL_OK)
            return st;
        size_t lead = strspn(digits, "+- "), n = strlen(digits);
        if (digits[lead] == '0' && n > lead + 1 && strchr("xXo", digits[lead + 1]) != NULL)
            lead += 2;
        size_t want = (size_t)atoi(prec), have = n - lead, pad = want > have ? want - have : 0;
        size_t w = (size_t)atoi(width), len = n + pad, fill = w > len ? w - len : 0;
        bool left = strchr(flags, '-') != NULL;
        if (!left && strchr(flags, '0') != NULL) { /* '%05.3d' % 5 is '00005' */
            pad += fill;
            len += fill;
            fill = 0;
        }
        if ((*text = malloc(len + fill + 1)) == NULL) {
            free(digits);
            return DL_ERR_NOMEM;
        }
        char *o = *text;
        if (!left)
            o += sprintf(o, "%*s", (int)fill, "");
        memcpy(o, digits, lead);
        o += lead;
        memset(o, '0', pad);
        o += pad;
        o += sprintf(o, "%s", digits + lead);
        if (left)
            sprintf(o, "%*s", (int)fill, "");
        free(digits);
        return DL_OK;
    }
    /* '-' aligns left; '0' pads with zeros; '+', ' ' and '#' mean what
     * they mean in a format spec */
    char spec[64];
    bool left = strchr(flags, '-') != NULL;
    snprintf(spec, sizeof(spec), "%s%s%s%s%s%s%s%c", left ? "<" : ">",
             strchr(flags, '+')   ? "+"
             : strchr(flags, ' ') ? " "
                                  : "",
             strchr(flags, '#') ? "#" : "", !left && strchr(flags, '0') && width[0] ? "0" : "",
             width, prec[0] ? "." : "", prec, t);
    if (!left && strchr(flags, '0') && width[0]) /* zero padding goes after the sign */
        memmove(spec, spec + 1, strlen(spec));
    return lab__eval_format_spec(ev, node, &x, spec, text);
}

static dl_status_t str_percent(lab_eval_t *ev, const json_t *node, const char *fmt,
                               const lab_value_t *arg, lab_value_t *out)
{
    /* a tuple gives one value a conversion; anything else is the one */
    const lab_value_t *vals = arg;
    size_t nvals = 1, used = 0;
    if (arg->kind == LAB_V_LIST && arg->tuple) {
        vals = arg->items;
        nvals = arg->n;
    }
    lab_sbuf_t b = SBUF_INIT;
    dl_status_t st = DL_OK;
    for (const char *p = fmt; *p != '\0' && st == DL_OK;) {
        if (*p != '%') {
            size_t n = strcspn(p, "%");
            lab__sbuf_put(&b, p, n);
            p += n;
            continue;
        }
        if (p[1] == '%') {
            lab__sbuf_puts(&b, "%");
            p += 2;
            continue;
        }
        char flags[8] = "", width[8] = "", prec[8] = "";
        size_t n = 0;
        const char *q = p + 1;
        while (*q != '\0' && strchr("-+ #0", *q) != NULL && n < sizeof(flags) - 1)
            flags[n++] = *q++;
        for (n = 0; *q >= '0' && *q <= '9' && n < sizeof(width) - 1;)
            width[n++] = *q++;
        if (*q == '.') {
            q++;
            for (n = 0; *q >= '0' && *q <= '9' && n < sizeof(prec) - 1;)
                prec[n++] = *q++;
            if (n == 0)
                prec[0] = '0';
        }
        char type = *q;
        if (type == '\0' || strchr("diouxXeEfFgGcrsa", type) == NULL) {
            st = type == '\0' ? fail(ev, node, "incomplete format")
                              : fail(ev, node, "unsupported format character '%c' (0x%x)", type,
                                     (unsigned char)type);
            break;
        }
        if (used >= nvals) {
            st = fail(ev, node, "not enough arguments for format string");
            break;
        }
        char *text = NULL;
        if ((st = percent_one(ev, node, flags, width, prec, type, &vals[used++], &text)) == DL_OK) {
            if (type == 's' || type == 'r' || type == 'a') {
                /* width and precision of a string: as a format spec's */
                char spec[24], *cut = NULL;
                snprintf(spec, sizeof(spec), "%s%s%s%s", strchr(flags, '-') ? "<" : ">", width,
                         prec[0] ? "." : "", prec);
                lab_value_t s = {.kind = LAB_V_STR, .s = text};
                if ((st = lab__eval_format_spec(ev, node, &s, spec, &cut)) == DL_OK)
                    lab__sbuf_puts(&b, cut);
                free(cut);
            } else {
                lab__sbuf_puts(&b, text);
            }
        }
        free(text);
        p = q + 1;
    }
    if (st == DL_OK && used < nvals)
        st = fail(ev, node, "not all arguments converted during string formatting");
    if (st != DL_OK) {
        free(b.s);
        return st;
    }
    return finish(ev, node, &b, out);
}

/* ---- the operators ---- */

dl_status_t lab__eval_str_arith(lab_eval_t *ev, const json_t *node, const char *op,
                                const lab_value_t *a, const lab_value_t *b, lab_value_t *out)
{
    bool sa = a->kind == LAB_V_STR, sb = b->kind == LAB_V_STR;
    if (strcmp(op, "%") == 0 && sa)
        return str_percent(ev, node, text_of(a), b, out);
    if (strcmp(op, "*") == 0 && sa && sb)
        return fail(ev, node, "can't multiply sequence by non-int of type 'str'");
    if (strcmp(op, "*") == 0 && (sa != sb)) {
        const lab_value_t *s = sa ? a : b, *n = sa ? b : a;
        if (n->kind != LAB_V_INT && n->kind != LAB_V_BOOL)
            return fail(ev, node, "can't multiply sequence by non-int of type '%s'",
                        lab_vkind_name(n->kind));
        lab_sbuf_t buf = SBUF_INIT;
        size_t len = strlen(text_of(s));
        if (n->i > 0 && len > 0 && (uint64_t)n->i > LAB_STR_MAX / len)
            return fail(ev, node, "string too long (at most %u bytes)", LAB_STR_MAX);
        for (int64_t k = 0; len > 0 && k < n->i; k++) /* '' * 10**13 is '' at once */
            lab__sbuf_put(&buf, text_of(s), len);
        return finish(ev, node, &buf, out);
    }
    if (sa && sb) {
        int c = strcmp(text_of(a), text_of(b));
        bool r;
        if (strcmp(op, "<") == 0)
            r = c < 0;
        else if (strcmp(op, "<=") == 0)
            r = c <= 0;
        else if (strcmp(op, ">") == 0)
            r = c > 0;
        else if (strcmp(op, ">=") == 0)
            r = c >= 0;
        else
            return fail(ev, node, "unsupported operand type(s) for %s: 'str' and 'str'", op);
        memset(out, 0, sizeof(*out));
        out->kind = LAB_V_BOOL;
        out->i = r;
        return DL_OK;
    }
    const char *other = lab__eval_type_name(sa ? b : a);
    if (strcmp(op, "+") == 0 && sa)
        return fail(ev, node, "can only concatenate str (not \"%s\") to str", other);
    if (strcmp(op, "<") == 0 || strcmp(op, "<=") == 0 || strcmp(op, ">") == 0 ||
        strcmp(op, ">=") == 0)
        return fail(ev, node, "'%s' not supported between instances of '%s' and '%s'", op,
                    sa ? "str" : other, sa ? other : "str");
    return fail(ev, node, "unsupported operand type(s) for %s: '%s' and '%s'", op,
                sa ? "str" : other, sa ? other : "str");
}

/* ---- characters ----
 *
 * A string is UTF-8 here, and Python counts, indexes and slices its
 * characters (code points), not its bytes: len('é') is 1, 'aé'[::-1] is
 * 'éa'. A byte that does not continue a character starts one. */

static bool starts_char(char c)
{
    return ((unsigned char)c & 0xC0) != 0x80;
}

int64_t lab__eval_str_len(const char *s, size_t nbytes)
{
    int64_t n = 0;
    for (size_t i = 0; i < nbytes; i++)
        n += starts_char(s[i]);
    return n;
}

/* The bytes of the character at byte offset at of s. */
static size_t char_bytes(const char *s, size_t at)
{
    size_t n = s[at] != '\0';
    while (s[at + n] != '\0' && !starts_char(s[at + n]))
        n++;
    return n;
}

dl_status_t lab__eval_str_index(lab_eval_t *ev, const json_t *node, const lab_value_t *s,
                                int64_t start, int64_t step, int64_t count, lab_value_t *out)
{
    lab_sbuf_t b = SBUF_INIT;
    const char *t = text_of(s);
    size_t nbytes = strlen(t);
    int64_t nchars = lab__eval_str_len(t, nbytes);
    if (nchars == (int64_t)nbytes) { /* ASCII: a character a byte */
        for (int64_t k = 0; k < count; k++)
            lab__sbuf_put(&b, t + start + k * step, 1);
        return finish(ev, node, &b, out);
    }
    size_t *at = malloc(((size_t)nchars + 1) * sizeof(*at));
    if (at == NULL)
        return DL_ERR_NOMEM;
    for (size_t i = 0, k = 0; i < nbytes; i++)
        if (starts_char(t[i]))
            at[k++] = i;
    for (int64_t k = 0; k < count; k++) {
        size_t c = at[start + k * step];
        lab__sbuf_put(&b, t + c, char_bytes(t, c));
    }
    free(at);
    return finish(ev, node, &b, out);
}

/* ---- the methods ---- */

static const char *const str_methods[] = {
    "format",     "join",     "split",   "strip", "lstrip", "rstrip", "upper", "lower",
    "startswith", "endswith", "replace", "find",  "count",  "index",  NULL,
};

bool lab__eval_is_str_method(const char *fn)
{
    for (size_t i = 0; str_methods[i] != NULL; i++)
        if (strcmp(fn, str_methods[i]) == 0)
            return true;
    return false;
}

static dl_status_t list_add_str(lab_value_t *l, const char *s, size_t n)
{
    lab_value_t *grown = realloc(l->items, (l->n + 2) * sizeof(*grown));
    if (grown == NULL)
        return DL_ERR_NOMEM;
    l->items = grown;
    lab_value_t *item = &l->items[l->n];
    memset(item, 0, sizeof(*item));
    item->kind = LAB_V_STR;
    if ((item->s = strndup(s, n)) == NULL)
        return DL_ERR_NOMEM;
    l->n++;
    return DL_OK;
}

static dl_status_t split(lab_eval_t *ev, const json_t *node, const char *s, const lab_value_t *sep,
                         lab_value_t *out)
{
    dl_status_t st = lab_value_new_list(out, 0);
    if (st != DL_OK)
        return st;
    if (sep == NULL || sep->kind == LAB_V_NONE) {
        /* runs of whitespace separate; none at the ends */
        const char *ws = " \t\n\r\f\v";
        for (const char *p = s + strspn(s, ws); *p != '\0' && st == DL_OK;) {
            size_t n = strcspn(p, ws);
            st = list_add_str(out, p, n);
            p += n;
            p += strspn(p, ws);
        }
    } else {
        const char *d = text_of(sep);
        size_t dn = strlen(d);
        if (dn == 0) {
            lab_value_clear(out);
            return fail(ev, node, "empty separator");
        }
        const char *p = s, *hit;
        while (st == DL_OK && (hit = strstr(p, d)) != NULL) {
            st = list_add_str(out, p, (size_t)(hit - p));
            p = hit + dn;
        }
        if (st == DL_OK)
            st = list_add_str(out, p, strlen(p));
    }
    if (st != DL_OK)
        lab_value_clear(out);
    return st;
}

dl_status_t lab__eval_str_method(lab_eval_t *ev, const json_t *node, const char *fn,
                                 const lab_value_t *self, const lab_value_t *pos, int npos,
                                 const json_t *kw, lab_value_t *out)
{
    const char *s = text_of(self);
    if (strcmp(fn, "format") == 0)
        return str_format(ev, node, s, pos, npos, kw, out);
    if (json_object_size(kw) != 0)
        return fail(ev, node, "%s() takes no keyword arguments here", fn);
    for (int k = 0; k < npos; k++)
        if (lab__eval_undefined(&pos[k]))
            return lab__eval_fail_undefined(ev, node, &pos[k]);
    bool one_str = npos == 1 && pos[0].kind == LAB_V_STR;
    lab_sbuf_t b = SBUF_INIT;
    memset(out, 0, sizeof(*out));
    if (strcmp(fn, "upper") == 0 || strcmp(fn, "lower") == 0) {
        if (npos != 0)
            return fail(ev, node, "str.%s() takes no arguments (%d given)", fn, npos);
        for (const char *p = s; *p != '\0'; p++) {
            char c = *p;
            if (fn[0] == 'u' && c >= 'a' && c <= 'z')
                c = (char)(c - 'a' + 'A');
            else if (fn[0] == 'l' && c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            lab__sbuf_put(&b, &c, 1);
        }
        return finish(ev, node, &b, out);
    }
    if (strstr(fn, "strip") != NULL) {
        if (npos > 1 || (npos == 1 && pos[0].kind != LAB_V_STR && pos[0].kind != LAB_V_NONE))
            return fail(ev, node, "%s arg must be None or str", fn);
        const char *chars = npos == 1 && pos[0].kind == LAB_V_STR ? pos[0].s : " \t\n\r\f\v";
        size_t from = 0, to = strlen(s);
        if (fn[0] != 'r')
            while (from < to && strchr(chars, s[from]) != NULL)
                from++;
        if (fn[0] != 'l')
            while (to > from && strchr(chars, s[to - 1]) != NULL)
                to--;
        lab__sbuf_put(&b, s + from, to - from);
        return finish(ev, node, &b, out);
    }
    if (strcmp(fn, "split") == 0) {
        if (npos > 1)
            return fail(ev, node, "split() takes at most 1 argument here (sep)");
        if (npos == 1 && pos[0].kind != LAB_V_STR && pos[0].kind != LAB_V_NONE)
            return fail(ev, node, "must be str or None, not %s", lab_vkind_name(pos[0].kind));
        return split(ev, node, s, npos == 1 ? &pos[0] : NULL, out);
    }
    if (strcmp(fn, "join") == 0) {
        if (npos != 1)
            return fail(ev, node, "join() takes exactly one argument (%d given)", npos);
        const lab_value_t *l = &pos[0];
        if (l->kind == LAB_V_STR) { /* ','.join('abc') */
            for (const char *p = l->s; *p != '\0'; p++) {
                if (p != l->s)
                    lab__sbuf_puts(&b, s);
                lab__sbuf_put(&b, p, 1);
            }
            return finish(ev, node, &b, out);
        }
        if (l->kind != LAB_V_LIST)
            return fail(ev, node, "can only join an iterable");
        for (size_t i = 0; i < l->n; i++) {
            if (l->items[i].kind != LAB_V_STR) {
                free(b.s);
                return fail(ev, node, "sequence item %zu: expected str instance, %s found", i,
                            lab_vkind_name(l->items[i].kind));
            }
            if (i > 0)
                lab__sbuf_puts(&b, s);
            lab__sbuf_puts(&b, text_of(&l->items[i]));
        }
        return finish(ev, node, &b, out);
    }
    if (strcmp(fn, "replace") == 0) {
        if (npos != 2 || pos[0].kind != LAB_V_STR || pos[1].kind != LAB_V_STR)
            return fail(ev, node, "replace() takes two strings, old and new");
        const char *old = pos[0].s, *new_ = pos[1].s;
        size_t on = strlen(old);
        for (const char *p = s; *p != '\0' || on == 0;) {
            const char *hit = on == 0 ? p : strstr(p, old);
            if (hit == NULL) {
                lab__sbuf_puts(&b, p);
                break;
            }
            lab__sbuf_put(&b, p, (size_t)(hit - p));
            lab__sbuf_puts(&b, new_);
            if (on == 0) { /* 'ab'.replace('', '-') is '-a-b-' */
                if (*hit == '\0')
                    break;
                lab__sbuf_put(&b, hit, 1);
                p = hit + 1;
            } else {
                p = hit + on;
            }
        }
        return finish(ev, node, &b, out);
    }
    if (!one_str)
        return fail(ev, node, "%s() takes one string here", fn);
    const char *sub = pos[0].s;
    size_t sl = strlen(s), subl = strlen(sub);
    out->kind = LAB_V_BOOL;
    if (strcmp(fn, "startswith") == 0) {
        out->i = strncmp(s, sub, subl) == 0;
        return DL_OK;
    }
    if (strcmp(fn, "endswith") == 0) {
        out->i = subl <= sl && strcmp(s + sl - subl, sub) == 0;
        return DL_OK;
    }
    out->kind = LAB_V_INT;
    if (strcmp(fn, "count") == 0) {
        /* non-overlapping; an empty one is found between every character */
        out->i = 0;
        if (subl == 0)
            out->i = lab__eval_str_len(s, sl) + 1;
        else
            for (const char *p = strstr(s, sub); p != NULL; p = strstr(p + subl, sub))
                out->i++;
        return DL_OK;
    }
    const char *hit = strstr(s, sub);
    out->i = hit != NULL ? lab__eval_str_len(s, (size_t)(hit - s)) : -1; /* in characters */
    if (hit == NULL && strcmp(fn, "index") == 0)
        return fail(ev, node, "substring not found");
    return DL_OK;
}
