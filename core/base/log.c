#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/log.h"

static char log_prefix[64] = "distlab";
static int log_level = -1;
static dl_log_sink_t log_sink;
static void *log_sink_arg;

void dl_log_set_sink(dl_log_sink_t fn, void *arg)
{
    log_sink = fn;
    log_sink_arg = arg;
}

void dl_log_set_prefix(const char *prefix)
{
    snprintf(log_prefix, sizeof(log_prefix), "%s", prefix);
}

void dl_log_set_level(dl_log_level_t level)
{
    log_level = (int)level;
}

bool dl_log_level_parse(const char *s, dl_log_level_t *level_p)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; s != NULL && i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *level_p = (dl_log_level_t)i;
            return true;
        }
    return false;
}

dl_log_level_t dl_log_get_level(void)
{
    if (log_level < 0) {
        /* First use: the environment decides, so ranks inherit it. */
        dl_log_level_t level = DL_LOG_WARN;
        dl_log_level_parse(getenv("DISTLAB_LOG"), &level);
        log_level = (int)level;
    }
    return (dl_log_level_t)log_level;
}

static unsigned errors_logged;

unsigned dl_log_errors(void)
{
    return errors_logged;
}

void dl_log(dl_log_level_t level, const char *fmt, ...)
{
    if (level == DL_LOG_ERROR)
        errors_logged++;
    if ((int)level > (int)dl_log_get_level())
        return;
    static const char *const tags[] = {"error", "warning", "info", "debug"};
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (log_sink != NULL) {
        log_sink(log_sink_arg, level, line);
        return;
    }
    /* One write per line so lines from concurrent ranks do not interleave. */
    fprintf(stderr, "%s: %s: %s\n", log_prefix, tags[level], line);
}

/* ---- quoting ---- */

/* The length of the UTF-8 character at s (at most n bytes), or 0 when s
 * does not start one, or starts one of the C1 controls (U+0080 to U+009F),
 * which some terminals obey like their 8-bit forms. */
static size_t utf8_char_len(const unsigned char *s, size_t n)
{
    if (n < 2 || s[0] < 0xc2 || s[0] > 0xf4)
        return 0;
    size_t len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
    if (n < len)
        return 0;
    /* The second byte's range rules out overlong forms, surrogates and code
     * points above U+10FFFF (RFC 3629). */
    unsigned char lo = 0x80, hi = 0xbf;
    if (s[0] == 0xc2)
        lo = 0xa0;
    else if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f;
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

void dl_quote_to(FILE *out, const char *s, size_t n, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    bool cut = max > 0 && n > max;
    size_t end = cut ? max : n;
    for (size_t i = 0; i < end;) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x7f) {
            fputc(c, out);
            i++;
            continue;
        }
        size_t len = c >= 0x80 ? utf8_char_len(u + i, n - i) : 0;
        if (len > 0) {
            /* A character is never split by the cut. */
            if (i + len > end)
                break;
            fwrite(u + i, 1, len, out);
            i += len;
            continue;
        }
        switch (c) {
        case 0x1b:
            fputs("\\e", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        default:
            fprintf(out, "\\x%02x", c);
            break;
        }
        i++;
    }
    if (cut)
        fprintf(out, "... (%zu bytes)", n);
}

const char *dl_quote(const char *s, char *buf, size_t cap)
{
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    FILE *out = fmemopen(buf, cap, "w");
    if (out == NULL)
        return buf;
    /* fmemopen keeps the last byte for the terminating NUL. */
    dl_quote_to(out, s != NULL ? s : "(null)", s != NULL ? strlen(s) : 6, DL_QUOTE_MAX);
    fclose(out);
    return buf;
}
