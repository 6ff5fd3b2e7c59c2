/* Reading distlab's environment variables of seconds (DISTLAB_TIMEOUT,
 * DISTLAB_AUTH_TIMEOUT): one parse and one wording for a malformed value,
 * which the command line prints in one line before anything starts. */
#ifndef DISTLAB_ENV_H
#define DISTLAB_ENV_H

#include <stddef.h>

#include "distlab/status.h"

/* The variable name as a number of seconds in *s_p, or 0 where it is unset
 * or empty. DL_ERR_INVALID, with one line in why that names the variable and
 * its value, when it is not a number from lo to hi (lo 0: above 0); example
 * is what the line suggests ("30 or 2.5"). */
dl_status_t dl_env_seconds(const char *name, double lo, double hi, const char *example, double *s_p,
                           char *why, size_t cap);

#endif
