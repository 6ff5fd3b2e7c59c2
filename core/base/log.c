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

dl_log_level_t dl_log_get_level(void)
{
    if (log_level < 0) {
        /* First use: the environment decides, so ranks inherit it. */
        const char *env = getenv("DISTLAB_LOG");
        log_level = DL_LOG_WARN;
        if (env != NULL) {
            static const char *const names[] = {"error", "warn", "info", "debug"};
            for (int i = 0; i < 4; i++)
                if (strcmp(env, names[i]) == 0)
                    log_level = i;
        }
    }
    return (dl_log_level_t)log_level;
}

void dl_log(dl_log_level_t level, const char *fmt, ...)
{
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
