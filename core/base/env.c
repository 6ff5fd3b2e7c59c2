/* distlab's environment variables of seconds (env.h). */
#include "distlab/env.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "distlab/log.h"

dl_status_t dl_env_seconds(const char *name, double lo, double hi, const char *example, double *s_p,
                           char *why, size_t cap)
{
    *s_p = 0;
    const char *env = getenv(name);
    if (env == NULL || env[0] == '\0')
        return DL_OK;
    char *end = NULL;
    errno = 0;
    double v = strtod(env, &end);
    if (errno != 0 || end == env || *end != '\0' || !isfinite(v) || !(lo > 0 ? v >= lo : v > 0) ||
        v > hi) {
        char q[DL_QUOTE_BUF], range[64];
        if (lo > 0)
            snprintf(range, sizeof(range), "from %g to %g", lo, hi);
        else
            snprintf(range, sizeof(range), "above 0 and up to %g", hi);
        snprintf(why, cap, "%s='%s' is not a timeout: expected a number of seconds %s, such as %s",
                 name, dl_quote(env, q, sizeof(q)), range, example);
        return DL_ERR_INVALID;
    }
    *s_p = v;
    return DL_OK;
}
