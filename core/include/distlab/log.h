/* Logging: one line per message on stderr, prefixed with the process role.
 * Messages are lower-case and logged once, where the error is first seen. */
#ifndef DISTLAB_LOG_H
#define DISTLAB_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { DL_LOG_ERROR, DL_LOG_WARN, DL_LOG_INFO, DL_LOG_DEBUG } dl_log_level_t;

/* The prefix printed before every message, e.g. "distlab" or "rank 3". */
void dl_log_set_prefix(const char *prefix);
/* Messages above this level are dropped. Default: DL_LOG_WARN, or the
 * DISTLAB_LOG environment variable (error, warn, info, debug). */
void dl_log_set_level(dl_log_level_t level);
dl_log_level_t dl_log_get_level(void);
/* A level's name (error, warn, info, debug) into *level_p; false when s
 * names none (DISTLAB_LOG is checked with it). */
bool dl_log_level_parse(const char *s, dl_log_level_t *level_p);

/* Sends messages to fn instead of stderr (a rank forwards them to the
 * controller). NULL restores stderr. */
typedef void (*dl_log_sink_t)(void *arg, dl_log_level_t level, const char *msg);
void dl_log_set_sink(dl_log_sink_t fn, void *arg);

void dl_log(dl_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* How many errors this process has logged (shown or not): a caller whose
 * callee failed says its own line only where the callee said nothing. */
unsigned dl_log_errors(void);

#define dl_log_error(...) dl_log(DL_LOG_ERROR, __VA_ARGS__)
#define dl_log_warn(...)  dl_log(DL_LOG_WARN, __VA_ARGS__)
#define dl_log_info(...)  dl_log(DL_LOG_INFO, __VA_ARGS__)
#define dl_log_debug(...) dl_log(DL_LOG_DEBUG, __VA_ARGS__)

/* ---- quoting what a user gave, in a message ---- */

/* How much of a long value a message shows. */
#define DL_QUOTE_MAX 60
/* A buffer that holds any quoted value of at most DL_QUOTE_MAX bytes. */
#define DL_QUOTE_BUF (DL_QUOTE_MAX * 4 + 32)

/* Writes the n bytes at s to out so that they can be shown on a terminal in
 * a one-line message: control bytes, DEL and bytes that are not UTF-8 as \e
 * (escape), \t, \n, \r or \xNN, so that a value cannot move the cursor or
 * recolour the terminal; and when max is not 0 and s is longer, only its
 * first max bytes (cut at a character) then "... (N bytes)". */
void dl_quote_to(FILE *out, const char *s, size_t n, size_t max);
/* The same for a string, into buf (at least DL_QUOTE_BUF bytes for a cut
 * at DL_QUOTE_MAX); returns buf. */
const char *dl_quote(const char *s, char *buf, size_t cap);

#endif
