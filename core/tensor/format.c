/* Tensor printing, character for character as torch >= 1.13 prints repr(t)
 * with its default print options.
 *
 * This is a port of torch/_tensor_str.py, and each function below names the
 * Python function it mirrors. In short:
 *
 *   - Tensors with more than 1000 elements are summarised: along every
 *     dimension longer than 6, only the first and last 3 entries are shown
 *     with "..." between them.
 *   - One formatter, computed over the elements that are shown, decides the
 *     notation and a common width for every element. Floats whose nonzero
 *     finite values are all integral print as "1." ("int mode"); others as
 *     "%.4f"; either switches to "%.4e" when the values span more than three
 *     decades or exceed 1e8 (or, outside int mode, go below 1e-4).
 *   - Rows wrap at 80 columns, and nested dimensions are separated by as
 *     many newlines as they have dimensions below them.
 *   - Suffixes such as ", dtype=torch.int32" follow the closing bracket, on
 *     a line of their own when they would pass column 80. A device comes
 *     before the dtype, as in torch:
 *     "tensor([1., 2.], device='cuda:0', dtype=torch.float16)". */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/cuda.h"
#include "distlab/tensor.h"

/* torch's default print options (PRINT_OPTS). */
#define PRINT_PRECISION 4
#define PRINT_THRESHOLD 1000
#define PRINT_EDGEITEMS 3
#define PRINT_LINEWIDTH 80

/* Longest element text: "%.4f" of the largest double has 309 digits before
 * the point; "%.4f" is only used for values at most 1e8, but stay safe. */
#define ELEM_MAX 400

/* ------------------------------------------------------------------------
 * A growable string
 * ------------------------------------------------------------------------ */

typedef struct {
    char *buf;
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed; the result will be NULL */
} strbuf_t;

static void sb_reserve(strbuf_t *sb, size_t extra)
{
    if (sb->failed || sb->len + extra + 1 <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *buf = realloc(sb->buf, cap);
    if (buf == NULL) {
        sb->failed = true;
        return;
    }
    sb->buf = buf;
    sb->cap = cap;
}

static void sb_putn(strbuf_t *sb, const char *s, size_t n)
{
    sb_reserve(sb, n);
    if (sb->failed)
        return;
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

static void sb_puts(strbuf_t *sb, const char *s)
{
    sb_putn(sb, s, strlen(s));
}

static void sb_repeat(strbuf_t *sb, char c, size_t n)
{
    sb_reserve(sb, n);
    if (sb->failed)
        return;
    memset(sb->buf + sb->len, c, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

static void sb_printf(strbuf_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(strbuf_t *sb, const char *fmt, ...)
{
    char tmp[ELEM_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        sb->failed = true;
        return;
    }
    sb_putn(sb, tmp, (size_t)n);
}

/* ------------------------------------------------------------------------
 * The tensor being printed
 * ------------------------------------------------------------------------ */

typedef struct {
    dl_dtype_t dt;
    int ndim;
    const int64_t *shape;
    size_t stride[DL_MAX_DIMS]; /* in elements, row-major, of the data's own shape */
    const void *data;
    bool summarize; /* more than PRINT_THRESHOLD elements */
    bool shown;     /* data holds only the shown elements (dl_tensor_copy_shown) */
} view_t;

/* Whether dimension d shows only its edges. */
static bool dim_summarized(const view_t *v, int d)
{
    return v->summarize && v->shape[d] > 2 * PRINT_EDGEITEMS;
}

/* Where entry k of dimension d lies in the data, relative to its slice.
 * Shown-only data keeps the first and last edge items of a summarised
 * dimension side by side, so the last ones move down to follow the first. */
static size_t dim_offset(const view_t *v, int d, int64_t k)
{
    if (v->shown && dim_summarized(v, d) && k >= PRINT_EDGEITEMS)
        k -= v->shape[d] - 2 * PRINT_EDGEITEMS;
    return (size_t)k * v->stride[d];
}

/* ------------------------------------------------------------------------
 * _Formatter
 * ------------------------------------------------------------------------ */

typedef struct {
    bool floating;
    bool int_mode;
    bool sci_mode;
    int max_width;
} formatter_t;

/* The text of one element before padding: Python's "{}".format for integers
 * and bools, and the formatter's notation for floats. Python prints every
 * NaN as "nan" whatever its sign bit, where C would print "-nan". */
static int elem_text(const formatter_t *f, const view_t *v, size_t i, char *out)
{
    if (!f->floating) {
        if (v->dt == DL_BOOL)
            return snprintf(out, ELEM_MAX, "%s",
                            dl_dtype_get_i64(v->dt, v->data, i) ? "True" : "False");
        return snprintf(out, ELEM_MAX, "%" PRId64, dl_dtype_get_i64(v->dt, v->data, i));
    }
    double x = dl_dtype_get(v->dt, v->data, i);
    if (isnan(x))
        return snprintf(out, ELEM_MAX, "nan");
    if (f->sci_mode)
        return snprintf(out, ELEM_MAX, "%.*e", PRINT_PRECISION, x);
    if (f->int_mode) {
        /* The trailing point marks the tensor as floating; infinities get
         * none, as in torch. */
        if (isinf(x))
            return snprintf(out, ELEM_MAX, "%s", x > 0 ? "inf" : "-inf");
        return snprintf(out, ELEM_MAX, "%.0f.", x);
    }
    return snprintf(out, ELEM_MAX, "%.*f", PRINT_PRECISION, x);
}

/* Calls fn on the flat index of every element that a summarised print
 * shows, which is what get_summarized_data() keeps. */
typedef void (*visit_fn)(void *ctx, size_t i);

static void visit_shown(const view_t *v, int d, size_t offset, visit_fn fn, void *ctx)
{
    if (v->ndim == 0) {
        fn(ctx, 0);
        return;
    }
    int64_t n = v->shape[d];
    bool edges = dim_summarized(v, d);
    for (int64_t k = 0; k < n; k++) {
        if (edges && k == PRINT_EDGEITEMS)
            k = n - PRINT_EDGEITEMS;
        size_t at = offset + dim_offset(v, d, k);
        if (d == v->ndim - 1)
            fn(ctx, at);
        else
            visit_shown(v, d + 1, at, fn, ctx);
    }
}

/* The first pass over a float tensor gathers what _Formatter.__init__
 * computes from the nonzero finite values. */
typedef struct {
    const view_t *v;
    formatter_t *f;
    size_t count;   /* nonzero finite values seen */
    double abs_min; /* of those, in double as tensor_totype() makes them */
    double abs_max;
    bool integral;  /* every one of them equals its ceiling */
    bool measuring; /* second pass: widen max_width instead */
} float_scan_t;

static void float_scan(void *ctx, size_t i)
{
    float_scan_t *s = ctx;
    double x = dl_dtype_get(s->v->dt, s->v->data, i);
    if (!isfinite(x) || x == 0.0)
        return;
    if (s->measuring) {
        /* Only nonzero finite values count toward the width; zeros, NaNs
         * and infinities are padded to it or overflow it. */
        char text[ELEM_MAX];
        int len = elem_text(s->f, s->v, i, text);
        if (len > s->f->max_width)
            s->f->max_width = len;
        return;
    }
    double a = fabs(x);
    if (s->count == 0 || a < s->abs_min)
        s->abs_min = a;
    if (s->count == 0 || a > s->abs_max)
        s->abs_max = a;
    if (x != ceil(x))
        s->integral = false;
    s->count++;
}

typedef struct {
    const view_t *v;
    formatter_t *f;
} int_scan_t;

static void int_scan(void *ctx, size_t i)
{
    int_scan_t *s = ctx;
    char text[ELEM_MAX];
    int len = elem_text(s->f, s->v, i, text);
    if (len > s->f->max_width)
        s->f->max_width = len;
}

static formatter_t formatter_init(const view_t *v)
{
    formatter_t f = {.floating = dl_dtype_is_float(v->dt), .int_mode = true, .max_width = 1};
    if (!f.floating) {
        int_scan_t s = {v, &f};
        visit_shown(v, 0, 0, int_scan, &s);
        return f;
    }
    float_scan_t s = {.v = v, .f = &f, .integral = true};
    visit_shown(v, 0, 0, float_scan, &s);
    if (s.count == 0)
        return f; /* no valid number: int mode, width 1 */
    f.int_mode = s.integral;
    bool wide = s.abs_max / s.abs_min > 1000.0 || s.abs_max > 1.0e8;
    f.sci_mode = f.int_mode ? wide : wide || s.abs_min < 1.0e-4;
    s.measuring = true;
    visit_shown(v, 0, 0, float_scan, &s);
    return f;
}

/* Formatter.format(): the element right-aligned to the common width. */
static void put_elem(strbuf_t *sb, const formatter_t *f, const view_t *v, size_t i)
{
    char text[ELEM_MAX];
    int len = elem_text(f, v, i, text);
    if (len < 0) {
        sb->failed = true;
        return;
    }
    if (len < f->max_width)
        sb_repeat(sb, ' ', (size_t)(f->max_width - len));
    sb_putn(sb, text, (size_t)len);
}

/* ------------------------------------------------------------------------
 * _vector_str and _tensor_str_with_formatter
 * ------------------------------------------------------------------------ */

static void vector_str(strbuf_t *sb, const view_t *v, const formatter_t *f, size_t offset,
                       int indent)
{
    /* Each element takes its width plus ", ". Python floors a true
     * division here; both operands are positive, so integer division
     * agrees. */
    int room = PRINT_LINEWIDTH - indent;
    int per_line = room > 0 ? room / (f->max_width + 2) : 0;
    if (per_line < 1)
        per_line = 1;

    int d = v->ndim - 1;
    int64_t n = v->shape[d];
    bool edges = dim_summarized(v, d);
    /* The "..." of a summarised row is an item of its own (" ..."), so it
     * takes a slot in the line-wrapping count like any element. */
    int64_t items = edges ? 2 * PRINT_EDGEITEMS + 1 : n;

    sb_puts(sb, "[");
    for (int64_t k = 0; k < items; k++) {
        if (k > 0) {
            if (k % per_line == 0) {
                sb_puts(sb, ",\n");
                sb_repeat(sb, ' ', (size_t)indent + 1);
            } else {
                sb_puts(sb, ", ");
            }
        }
        int64_t idx = k;
        if (edges) {
            if (k == PRINT_EDGEITEMS) {
                sb_puts(sb, " ...");
                continue;
            }
            if (k > PRINT_EDGEITEMS)
                idx = n - (items - k);
        }
        put_elem(sb, f, v, offset + dim_offset(v, d, idx));
    }
    sb_puts(sb, "]");
}

static void tensor_str(strbuf_t *sb, const view_t *v, const formatter_t *f, int d, size_t offset,
                       int indent)
{
    if (v->ndim == 0) {
        put_elem(sb, f, v, 0);
        return;
    }
    if (d == v->ndim - 1) {
        vector_str(sb, v, f, offset, indent);
        return;
    }

    /* Slices are separated by "," and one newline per dimension they
     * have, then indented under the opening bracket: a blank line between
     * the matrices of a 3-D tensor. */
    int dims_left = v->ndim - d;
    int64_t n = v->shape[d];
    bool edges = dim_summarized(v, d);
    sb_puts(sb, "[");
    for (int64_t k = 0; k < n; k++) {
        if (k > 0) {
            sb_puts(sb, ",");
            sb_repeat(sb, '\n', (size_t)dims_left - 1);
            sb_repeat(sb, ' ', (size_t)indent + 1);
        }
        if (edges && k == PRINT_EDGEITEMS) {
            sb_puts(sb, "...");
            /* Jump to the last edge items; the loop's k++ lands on the first. */
            k = n - PRINT_EDGEITEMS - 1;
            continue;
        }
        tensor_str(sb, v, f, d + 1, offset + dim_offset(v, d, k), indent + 1);
    }
    sb_puts(sb, "]");
}

/* ------------------------------------------------------------------------
 * _str_intern and _add_suffixes
 * ------------------------------------------------------------------------ */

#define PREFIX "tensor("
#define INDENT ((int)sizeof(PREFIX) - 1)

static void add_suffix(strbuf_t *sb, size_t *last_line_len, const char *suffix)
{
    size_t len = strlen(suffix);
    if (*last_line_len + len + 2 > PRINT_LINEWIDTH) {
        sb_puts(sb, ",\n");
        sb_repeat(sb, ' ', INDENT);
        *last_line_len = INDENT + len;
    } else {
        sb_puts(sb, ", ");
        *last_line_len += len + 2;
    }
    sb_puts(sb, suffix);
}

/* ------------------------------------------------------------------------
 * The shown elements (get_summarized_data)
 * ------------------------------------------------------------------------ */

/* The number of elements of a shape, or SIZE_MAX when it does not fit. */
static size_t shape_numel(int ndim, const int64_t *shape)
{
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return 0;
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] != 0 && numel > SIZE_MAX / (size_t)shape[d])
            return SIZE_MAX;
        numel *= (size_t)shape[d];
    }
    return numel;
}

static bool shape_valid(int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > DL_MAX_DIMS || (ndim > 0 && shape == NULL))
        return false;
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0)
            return false;
    return true;
}

size_t dl_tensor_shown_shape(int ndim, const int64_t *shape, int64_t *shown)
{
    if (!shape_valid(ndim, shape))
        return 0;
    bool summarize = shape_numel(ndim, shape) > PRINT_THRESHOLD;
    for (int d = 0; d < ndim; d++)
        shown[d] = summarize && shape[d] > 2 * PRINT_EDGEITEMS ? 2 * PRINT_EDGEITEMS : shape[d];
    return shape_numel(ndim, shown);
}

/* Copies the shown elements of a tensor into a dense host buffer, one run of
 * consecutive elements at a time: the runs of a GPU tensor are separate
 * copies, so adjacent ones are merged first. */
typedef struct {
    const dl_tensor_t *t;
    size_t esz;
    bool summarize;
    size_t stride[DL_MAX_DIMS];
    uint8_t *out;
    size_t out_at;           /* elements written */
    size_t run_src, run_len; /* the pending run, in elements */
    dl_status_t st;
} shown_copy_t;

static void flush_run(shown_copy_t *c)
{
    if (c->run_len == 0 || c->st != DL_OK)
        return;
    const uint8_t *src = (const uint8_t *)c->t->data + c->run_src * c->esz;
    c->st = dl_cuda_copy(c->out + c->out_at * c->esz, (dl_device_t){DL_DEVICE_CPU, 0}, src,
                         c->t->device, c->run_len * c->esz);
    c->out_at += c->run_len;
    c->run_len = 0;
}

static void add_run(shown_copy_t *c, size_t src, size_t len)
{
    if (c->run_len > 0 && c->run_src + c->run_len == src) {
        c->run_len += len;
        return;
    }
    flush_run(c);
    c->run_src = src;
    c->run_len = len;
}

static void copy_shown_dim(shown_copy_t *c, int d, size_t offset)
{
    int64_t n = c->t->shape[d];
    bool edges = c->summarize && n > 2 * PRINT_EDGEITEMS;
    if (d == c->t->ndim - 1) {
        if (!edges) {
            add_run(c, offset, (size_t)n);
        } else {
            add_run(c, offset, PRINT_EDGEITEMS);
            add_run(c, offset + (size_t)(n - PRINT_EDGEITEMS), PRINT_EDGEITEMS);
        }
        return;
    }
    for (int64_t k = 0; k < n && c->st == DL_OK; k++) {
        if (edges && k == PRINT_EDGEITEMS)
            k = n - PRINT_EDGEITEMS;
        copy_shown_dim(c, d + 1, offset + (size_t)k * c->stride[d]);
    }
}

dl_status_t dl_tensor_copy_shown(const dl_tensor_t *t, void *out)
{
    if (t == NULL || out == NULL || !shape_valid(t->ndim, t->shape))
        return DL_ERR_INVALID;
    if (t->numel == 0)
        return DL_OK;
    shown_copy_t c = {.t = t, .esz = dl_dtype_size(t->dtype), .out = out, .st = DL_OK};
    c.summarize = t->numel > PRINT_THRESHOLD;
    size_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        c.stride[d] = stride;
        stride *= (size_t)t->shape[d];
    }
    if (t->ndim == 0)
        add_run(&c, 0, 1);
    else
        copy_shown_dim(&c, 0, 0);
    flush_run(&c);
    return c.st;
}

/* ------------------------------------------------------------------------
 * The whole string
 * ------------------------------------------------------------------------ */

/* Formats a tensor of the given shape whose data is either all of its
 * elements or, with shown, only those dl_tensor_copy_shown keeps. */
static char *format_view(dl_dtype_t dt, int ndim, const int64_t *shape, dl_device_t dev,
                         const void *data, bool shown)
{
    if ((unsigned)dt >= DL_DTYPE__COUNT || !shape_valid(ndim, shape))
        return NULL;
    view_t v = {.dt = dt, .ndim = ndim, .shape = shape, .data = data, .shown = shown};
    size_t numel = shape_numel(ndim, shape);
    if (numel == SIZE_MAX || (numel > 0 && data == NULL))
        return NULL;
    v.summarize = numel > PRINT_THRESHOLD;
    /* The strides of the data as it lies in memory: the shown block's own
     * shape when only the shown elements are there. */
    size_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        v.stride[d] = stride;
        stride *= shown && dim_summarized(&v, d) ? 2 * PRINT_EDGEITEMS : (size_t)shape[d];
    }

    strbuf_t sb = {0};
    sb_puts(&sb, PREFIX);
    if (numel == 0) {
        sb_puts(&sb, "[]");
    } else {
        /* float16 and bfloat16 are printed through their float values,
         * which dl_dtype_get returns exactly. */
        formatter_t f = formatter_init(&v);
        tensor_str(&sb, &v, &f, 0, 0, INDENT);
    }

    /* torch measures the last line one character long (len(s) - rfind + 1),
     * and an unwrapped string as if it had a newline before it at -1;
     * both quirks decide where suffixes wrap, so keep them. */
    size_t last_line_len = sb.len + 2;
    if (!sb.failed) {
        const char *nl = strrchr(sb.buf, '\n');
        if (nl != NULL)
            last_line_len = sb.len - (size_t)(nl - sb.buf) + 1;
    }

    char suffix[64];
    if (dev.type == DL_DEVICE_CUDA) {
        snprintf(suffix, sizeof(suffix), "device='cuda:%d'", dev.index);
        add_suffix(&sb, &last_line_len, suffix);
    }
    if (numel == 0) {
        /* An empty tensor has no elements to show its type, so even the
         * int64 and bool that are otherwise implied get a dtype, and any
         * shape but (0,) is spelled out, as NumPy does. */
        if (ndim != 1) {
            strbuf_t size = {0};
            sb_puts(&size, "size=(");
            for (int d = 0; d < ndim; d++)
                sb_printf(&size, d ? ", %" PRId64 : "%" PRId64, shape[d]);
            sb_puts(&size, ")");
            if (size.failed)
                sb.failed = true;
            else
                add_suffix(&sb, &last_line_len, size.buf);
            free(size.buf);
        }
        if (dt != DL_FLOAT32) {
            snprintf(suffix, sizeof(suffix), "dtype=%s", dl_dtype_torch_name(dt));
            add_suffix(&sb, &last_line_len, suffix);
        }
    } else if (dt != DL_FLOAT32 && dt != DL_INT64 && dt != DL_BOOL) {
        /* float32, int64 and bool are what torch infers from Python floats,
         * ints and bools, so only the other types are named. */
        snprintf(suffix, sizeof(suffix), "dtype=%s", dl_dtype_torch_name(dt));
        add_suffix(&sb, &last_line_len, suffix);
    }
    sb_puts(&sb, ")");

    if (sb.failed) {
        free(sb.buf);
        return NULL;
    }
    return sb.buf;
}

char *dl_tensor_format_raw(dl_dtype_t dt, int ndim, const int64_t *shape, dl_device_t dev,
                           const void *data)
{
    return format_view(dt, ndim, shape, dev, data, false);
}

char *dl_tensor_format_shown(dl_dtype_t dt, int ndim, const int64_t *shape, dl_device_t dev,
                             const void *shown)
{
    return format_view(dt, ndim, shape, dev, shown, true);
}

char *dl_tensor_format(const dl_tensor_t *t)
{
    if (t == NULL)
        return NULL;
    if (t->device.type != DL_DEVICE_CUDA || t->numel == 0)
        return dl_tensor_format_raw(t->dtype, t->ndim, t->shape, t->device, t->data);
    /* As torch does, print a GPU tensor from a host copy, but of only the
     * elements that are shown: a summarised tensor needs a few of them. */
    int64_t shown[DL_MAX_DIMS];
    size_t n = dl_tensor_shown_shape(t->ndim, t->shape, shown);
    void *host = malloc(n * dl_dtype_size(t->dtype));
    if (host == NULL)
        return NULL;
    char *s = NULL;
    if (dl_tensor_copy_shown(t, host) == DL_OK)
        s = dl_tensor_format_shown(t->dtype, t->ndim, t->shape, t->device, host);
    free(host);
    return s;
}
