/* Python's format specs in f-strings, f"{loss:.4f}", f"{rank:>3}",
 * f"{x:,}": the mini-language of format() for ints, floats, bools and
 * strings, [[fill]align][sign][0][width][,][.precision][type]. A tensor of
 * no dimensions formats as its number, as torch's Tensor.__format__ does;
 * any other value takes an empty spec only, as in Python. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "lab/rank/eval.h"

typedef struct {
    char fill, align, sign;
    bool alt, zero;       /* alt: '#', 0x before hex digits */
    char group;           /* ',' or '_' between groups of digits, or 0 */
    int width, precision; /* -1: not given */
    char type;            /* 0: none */
} spec_t;

static bool parse_spec(const char *s, spec_t *f)
{
    *f = (spec_t){.fill = ' ', .width = -1, .precision = -1};
    if (s[0] != '\0' && s[1] != '\0' && strchr("<>^=", s[1]) != NULL) {
        f->fill = s[0];
        f->align = s[1];
        s += 2;
    } else if (s[0] != '\0' && strchr("<>^=", s[0]) != NULL) {
        f->align = *s++;
    }
    if (*s == '+' || *s == '-' || *s == ' ')
        f->sign = *s++;
    if (*s == '#') {
        f->alt = true;
        s++;
    }
    if (*s == '0') {
        f->zero = true;
        s++;
    }
    if (*s >= '0' && *s <= '9') {
        f->width = 0;
        while (*s >= '0' && *s <= '9' && f->width < 10000)
            f->width = f->width * 10 + (*s++ - '0');
    }
    if (*s == ',' || *s == '_')
        f->group = *s++;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        f->precision = 0;
        while (*s >= '0' && *s <= '9' && f->precision < 1000)
            f->precision = f->precision * 10 + (*s++ - '0');
    }
    if (*s != '\0' && strchr("bcdeEfFgGnosxX%", *s) != NULL)
        f->type = *s++;
    return *s == '\0' && f->width < 10000 && f->precision < 1000;
}

/* digits with sep every `every` digits, from the right (the sign and a
 * 0x, if any, kept): 1,234,567, 1_234.5, 0xf_ffff. */
static void group_digits(char *digits, size_t cap, char sep, size_t every)
{
    char *d = digits + (digits[0] == '-');
    if (d[0] == '0' && d[1] != '\0' && strchr("xXob", d[1]) != NULL)
        d += 2;
    char *dot = strpbrk(d, ".eE");
    size_t n = dot != NULL ? (size_t)(dot - d) : strlen(d);
    size_t seps = n > every ? (n - 1) / every : 0;
    if (seps == 0 || strlen(digits) + seps + 1 > cap)
        return;
    memmove(d + n + seps, d + n, strlen(d + n) + 1);
    for (size_t i = n, out = n + seps, k = 0; i-- > 0; k++) {
        if (k > 0 && k % every == 0)
            d[--out] = sep;
        d[--out] = d[i];
    }
}

/* The number v (an int when is_int) as f says, without padding. The
 * caller has refused a precision on an int and ',' with 'x', 'o' or 'b'. */
static bool format_number(const spec_t *f, bool is_int, int64_t i, double x, char *buf, size_t cap)
{
    char type = f->type;
    int prec = f->precision;
    if (is_int && (type == 0 || type == 'd' || type == 'n')) {
        snprintf(buf, cap, "%" PRId64, i);
    } else if (is_int && (type == 'x' || type == 'X' || type == 'o' || type == 'b')) {
        uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
        char tmp[80];
        size_t n = 0;
        int base = type == 'o' ? 8 : type == 'b' ? 2 : 16;
        const char *digits = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
        do {
            tmp[n++] = digits[u % (uint64_t)base];
            u /= (uint64_t)base;
        } while (u != 0);
        size_t o = 0;
        if (i < 0)
            buf[o++] = '-';
        if (f->alt) {
            buf[o++] = '0';
            buf[o++] = type == 'X' ? 'X' : type;
        }
        while (n > 0 && o + 1 < cap)
            buf[o++] = tmp[--n];
        buf[o] = '\0';
    } else if (type == 'c' || type == 's') {
        return false;
    } else {
        double v = is_int ? (double)i : x;
        if (type == 0 && prec < 0) {
            lab__eval_py_float(v, buf, cap);
        } else if (type == 0) {
            /* general format, with a '.0' kept as Python's repr keeps it */
            snprintf(buf, cap, "%.*g", prec == 0 ? 1 : prec, v);
            if (isfinite(v) && strpbrk(buf, ".e") == NULL && strlen(buf) + 3 < cap)
                strcat(buf, ".0");
        } else if (type == '%') {
            snprintf(buf, cap, "%.*f%%", prec < 0 ? 6 : prec, v * 100);
        } else {
            char fmt[8];
            snprintf(fmt, sizeof(fmt), "%%.*%c", type == 'n' ? 'g' : type);
            snprintf(buf, cap, fmt, prec < 0 ? 6 : prec, v);
        }
        /* Python spells them inf and nan, the C library may not */
        if (isinf(v) || isnan(v))
            snprintf(buf, cap, "%s%s", v < 0 ? "-" : "",
                     isnan(v) ? (type == 'E' || type == 'F' || type == 'G' ? "NAN" : "nan")
                              : (type == 'E' || type == 'F' || type == 'G' ? "INF" : "inf"));
    }
    if (f->group != 0)
        group_digits(buf, cap, f->group,
                     is_int && type != 0 && strchr("xXob", type) != NULL ? 4 : 3);
    if (buf[0] != '-' && (f->sign == '+' || f->sign == ' ') && strlen(buf) + 2 < cap) {
        memmove(buf + 1, buf, strlen(buf) + 1);
        buf[0] = f->sign;
    }
    return true;
}

/* How many characters the first n bytes of UTF-8 text hold. */
static size_t chars_in(const char *text, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)text[i] & 0xC0) != 0x80;
    return c;
}

/* text padded to f's width in characters: numbers right (or after their
 * sign with '=' and '0'), strings left, as format() pads. */
static char *pad(const spec_t *f, const char *text, bool number)
{
    size_t n = strlen(text), w = f->width > 0 ? (size_t)f->width : 0, c = chars_in(text, n);
    size_t extra = w > c ? w - c : 0;
    char align = f->align ? f->align : f->zero && number ? '=' : number ? '>' : '<';
    char fill = f->zero && !f->align ? '0' : f->fill;
    char *out = malloc(n + extra + 1);
    if (out == NULL)
        return NULL;
    size_t left = align == '>' ? extra : align == '^' ? extra / 2 : 0, o = 0, t = 0;
    if (align == '=') {
        if (n > 0 && strchr("+- ", text[0]) != NULL)
            out[o++] = text[t++];
        left = extra;
    }
    memset(out + o, fill, left);
    o += left;
    memcpy(out + o, text + t, n - t);
    o += n - t;
    memset(out + o, fill, extra - left);
    o += extra - left;
    out[o] = '\0';
    return out;
}

dl_status_t lab__eval_format_spec(lab_eval_t *ev, const json_t *node, const lab_value_t *v,
                                  const char *spec, char **out)
{
    spec_t f;
    if (!parse_spec(spec, &f))
        return lab__eval_fail(ev, node, "Invalid format specifier '%s'", spec);
    lab_value_t x = *v;
    /* format(v, '') is str(v), as Python's (a tensor of no dimensions: its
     * number's, below) */
    if (spec[0] == '\0' && !(v->kind == LAB_V_TENSOR && v->t->ndim == 0))
        return lab__eval_format(ev, node, v, false, out);
    if (v->kind == LAB_V_TENSOR) {
        if (v->t->ndim != 0)
            return lab__eval_fail(ev, node,
                                  "unsupported format string passed to Tensor.__format__ (a "
                                  "tensor of no dimensions formats as its number: t.sum(), t[0])");
        dl_tensor_t *h = NULL;
        if (dl_tensor_to(v->t, (dl_device_t){DL_DEVICE_CPU, 0}, &h) != DL_OK)
            return lab__eval_fail(ev, node, "cannot copy the tensor from the GPU: %s",
                                  dl_cuda_last_error());
        lab__eval_item(h, &x);
        dl_tensor_free(h);
    }
    if (spec[0] == '\0')
        return lab__eval_format(ev, node, &x, false, out);
    char buf[512];
    bool number = x.kind == LAB_V_INT || x.kind == LAB_V_FLOAT || x.kind == LAB_V_BOOL;
    if (number && x.kind == LAB_V_BOOL && f.type == 0 && spec[0] != '\0')
        x.kind = LAB_V_INT; /* format(True, '>5') is '    1' */
    if (x.kind == LAB_V_STR && (f.type == 0 || f.type == 's')) {
        if (f.sign != 0)
            return lab__eval_fail(ev, node, "Sign not allowed in string format specifier");
        if (f.group != 0)
            return lab__eval_fail(ev, node, "Cannot specify '%c' with 's'.", f.group);
        /* precision counts characters, and cuts none in two: n ends at
         * the first byte of the character past them */
        size_t n = strlen(x.s);
        for (size_t i = 0, k = 0; f.precision >= 0 && i < n; i++) {
            if (((unsigned char)x.s[i] & 0xC0) == 0x80)
                continue;
            if (k++ == (size_t)f.precision)
                n = i;
        }
        char *cut = strndup(x.s, n);
        if (cut == NULL)
            return DL_ERR_NOMEM;
        *out = pad(&f, cut, false);
        free(cut);
        return *out != NULL ? DL_OK : DL_ERR_NOMEM;
    }
    if (!number && x.kind != LAB_V_STR)
        return lab__eval_fail(ev, node, "unsupported format string passed to %s.__format__",
                              lab__eval_type_name(&x));
    bool is_int = x.kind != LAB_V_FLOAT;
    if (number && is_int && f.precision >= 0 && (f.type == 0 || f.type == 'd' || f.type == 'n'))
        return lab__eval_fail(ev, node, "Precision not allowed in integer format specifier");
    if (number && f.group == ',' && is_int && f.type != 0 && strchr("xXob", f.type) != NULL)
        return lab__eval_fail(ev, node, "Cannot specify ',' with '%c'.", f.type);
    if (!number || (!is_int && f.type != 0 && strchr("eEfFgGn%", f.type) == NULL) ||
        !format_number(&f, is_int, x.i, x.f, buf, sizeof(buf)))
        return lab__eval_fail(ev, node, "Unknown format code '%c' for object of type '%s'",
                              f.type != 0 ? f.type : 's', lab__eval_type_name(&x));
    *out = pad(&f, buf, true);
    return *out != NULL ? DL_OK : DL_ERR_NOMEM;
}
