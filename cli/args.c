/* Flag value parsing and job checks shared by the subcommands. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli/cli.h"
#include "distlab/backends.h"
#include "distlab/comm.h"
#include "distlab/log.h"
#include "distlab/sched.h"
#include "lab/session/trace.h"

/* ---- error lines ---- */

static int cli_argc;
static char **cli_argv;

void cli_set_args(int argc, char **argv)
{
    cli_argc = argc;
    cli_argv = argv;
}

/* Whether s points into one of the command line's words (optarg does, for
 * --flag=value too). */
static bool is_from_args(const char *s)
{
    for (int i = 0; i < cli_argc; i++)
        if (cli_argv[i] != NULL && s >= cli_argv[i] && s <= cli_argv[i] + strlen(cli_argv[i]))
            return true;
    return false;
}

/* Writes one string conversion: quoted (dl_quote_to), and cut when it is a
 * word of the command line, which may be anything and of any length. */
static void put_string(FILE *m, const char *spec_flags, int width, int prec, const char *s)
{
    if (s == NULL)
        s = "(null)";
    size_t n = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
    size_t max = is_from_args(s) ? DL_QUOTE_MAX : 0;
    if (width <= 0) {
        dl_quote_to(m, s, n, max);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *t = open_memstream(&text, &len);
    if (t == NULL)
        return;
    dl_quote_to(t, s, n, max);
    fclose(t);
    fprintf(m, strchr(spec_flags, '-') != NULL ? "%-*s" : "%*s", width, text);
    free(text);
}

/* Formats one conversion of a printf format whose flags, width, precision
 * and length modifier are given apart, the width and precision as numbers
 * (a '*' already read). */
static void put_conversion(FILE *m, const char *flags, int width, int prec, const char *lenmod,
                           char conv, va_list *ap)
{
    char spec[40];
    int k = snprintf(spec, sizeof(spec), "%%%s", flags);
    if (width >= 0)
        k += snprintf(spec + k, sizeof(spec) - (size_t)k, "%d", width);
    if (prec >= 0)
        k += snprintf(spec + k, sizeof(spec) - (size_t)k, ".%d", prec);
    snprintf(spec + k, sizeof(spec) - (size_t)k, "%s%c", lenmod, conv);
    bool l = strcmp(lenmod, "l") == 0, ll = strcmp(lenmod, "ll") == 0 || strcmp(lenmod, "q") == 0;
    bool z = strcmp(lenmod, "z") == 0, j = strcmp(lenmod, "j") == 0, t = strcmp(lenmod, "t") == 0;
    switch (conv) {
    case 'd':
    case 'i':
        if (l)
            fprintf(m, spec, va_arg(*ap, long));
        else if (ll)
            fprintf(m, spec, va_arg(*ap, long long));
        else if (z)
            fprintf(m, spec, va_arg(*ap, ssize_t));
        else if (j)
            fprintf(m, spec, va_arg(*ap, intmax_t));
        else if (t)
            fprintf(m, spec, va_arg(*ap, ptrdiff_t));
        else
            fprintf(m, spec, va_arg(*ap, int));
        break;
    case 'u':
    case 'o':
    case 'x':
    case 'X':
        if (l)
            fprintf(m, spec, va_arg(*ap, unsigned long));
        else if (ll)
            fprintf(m, spec, va_arg(*ap, unsigned long long));
        else if (z)
            fprintf(m, spec, va_arg(*ap, size_t));
        else if (j)
            fprintf(m, spec, va_arg(*ap, uintmax_t));
        else if (t)
            fprintf(m, spec, va_arg(*ap, ptrdiff_t));
        else
            fprintf(m, spec, va_arg(*ap, unsigned int));
        break;
    case 'c':
        fprintf(m, spec, va_arg(*ap, int));
        break;
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G':
    case 'a':
    case 'A':
        if (strcmp(lenmod, "L") == 0)
            fprintf(m, spec, va_arg(*ap, long double));
        else
            fprintf(m, spec, va_arg(*ap, double));
        break;
    case 's':
        put_string(m, flags, width, prec, va_arg(*ap, const char *));
        break;
    case 'p':
        fprintf(m, spec, va_arg(*ap, void *));
        break;
    default: /* %m takes no argument */
        fprintf(m, spec, 0);
        break;
    }
}

/* printf, except that every string argument is written with dl_quote_to:
 * whatever the user typed cannot drive the terminal, and a word of the
 * command line is cut when long. This is the one place where the command
 * line's errors echo what they were given. */
static void format_quoted(FILE *m, const char *fmt, va_list *ap)
{
    for (const char *p = fmt; *p != '\0';) {
        if (*p != '%') {
            fputc(*p++, m);
            continue;
        }
        p++;
        if (*p == '%') {
            fputc('%', m);
            p++;
            continue;
        }
        char flags[8] = "";
        size_t nf = strspn(p, "-+ #0'");
        snprintf(flags, sizeof(flags), "%.*s", (int)(nf < sizeof(flags) ? nf : sizeof(flags) - 1),
                 p);
        p += nf;
        int width = -1, prec = -1;
        if (*p == '*') {
            width = va_arg(*ap, int);
            p++;
            if (width < 0) {
                width = -width;
                snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "-");
            }
        } else if (*p >= '0' && *p <= '9') {
            width = (int)strtol(p, (char **)&p, 10);
        }
        if (*p == '.') {
            p++;
            if (*p == '*') {
                prec = va_arg(*ap, int);
                p++;
            } else {
                prec = (int)strtol(p, (char **)&p, 10);
            }
        }
        char lenmod[3] = "";
        size_t nl = strspn(p, "hlLqjzt");
        snprintf(lenmod, sizeof(lenmod), "%.*s", (int)(nl < 2 ? nl : 2), p);
        p += nl;
        if (*p == '\0')
            break;
        put_conversion(m, flags, width, prec, lenmod, *p++, ap);
    }
}

int cli_error(const char *fmt, ...)
{
    int saved_errno = errno;
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (m != NULL) {
        fputs("distlab: ", m);
        errno = saved_errno; /* for a %m */
        format_quoted(m, fmt, &ap);
        fputc('\n', m);
        fclose(m);
        /* One write, so that the line is never interleaved. */
        fputs(line, stderr);
        free(line);
    } else {
        fputs("distlab: out of memory\n", stderr);
    }
    va_end(ap);
    return CLI_USAGE_ERROR;
}

/* ---- flags getopt refused ---- */

/* Whether w is a word of short flags (-k, -xZ, -np), not a long flag. */
static bool is_short_word(const char *w)
{
    return w != NULL && w[0] == '-' && w[1] != '-' && w[1] != '\0';
}

/* The word that holds the short flag getopt refused (optopt). getopt steps
 * past a word of short flags once it has read its last letter, and stays
 * on it otherwise: `-np` is refused at its n, with optind still on it. */
static const char *refused_short_word(int argc, char **argv)
{
    const char *prev = optind >= 2 && optind <= argc ? argv[optind - 1] : NULL;
    if (is_short_word(prev) && prev[strlen(prev) - 1] == optopt)
        return prev;
    const char *cur = optind >= 1 && optind < argc ? argv[optind] : NULL;
    if (is_short_word(cur) && strchr(cur + 1, optopt) != NULL)
        return cur;
    return NULL;
}

const struct option *cli_long_flag(const struct option *longopts, const char *name, size_t n)
{
    for (const struct option *o = longopts; o->name != NULL; o++)
        if (strlen(o->name) == n && strncmp(o->name, name, n) == 0)
            return o;
    return NULL;
}

/* The long flag that word spells with one dash (-np for --np), or NULL. */
static const char *long_flag_with_one_dash(const char *word, const struct option *longopts)
{
    const struct option *o = cli_long_flag(longopts, word + 1, strcspn(word + 1, "="));
    return o != NULL ? o->name : NULL;
}

int cli_flag_error(const char *cmd, const struct option *longopts, int argc, char **argv)
{
    /* A long flag: getopt has stepped past it, and optopt is 0 (unknown)
     * or the flag's value (its argument missing or not taken). */
    if (optopt == 0 || optopt >= 256)
        return cli_error("unknown or incomplete flag '%s' (see distlab %s --help)",
                         optind >= 2 && optind <= argc ? argv[optind - 1] : "?", cmd);
    const char *word = refused_short_word(argc, argv);
    const char *name = word != NULL ? long_flag_with_one_dash(word, longopts) : NULL;
    if (name != NULL)
        return cli_error("unknown flag '%s': the flag is --%s, with two dashes (see distlab %s "
                         "--help)",
                         word, name, cmd);
    if (word != NULL && strlen(word) > 2)
        return cli_error("unknown or incomplete flag '-%c' in '%s' (see distlab %s --help)", optopt,
                         word, cmd);
    return cli_error("unknown or incomplete flag '-%c' (see distlab %s --help)", optopt, cmd);
}

bool cli_parse_int(const char *flag, const char *s, long lo, long hi, long *v_p)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        cli_error("%s takes an integer from %ld to %ld, not '%s'", flag, lo, hi, s);
        return false;
    }
    *v_p = v;
    return true;
}

bool cli_parse_size(const char *flag, const char *s, size_t *v_p)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    double mult = 1;
    if (end != s && *end != '\0' && end[1] == '\0') {
        switch (*end) {
        case 'k':
        case 'K':
            mult = 1024.0;
            end++;
            break;
        case 'm':
        case 'M':
            mult = 1024.0 * 1024;
            end++;
            break;
        case 'g':
        case 'G':
            mult = 1024.0 * 1024 * 1024;
            end++;
            break;
        default:
            break;
        }
    }
    /* Decimal only, as --np and --count take: strtod also reads 0x10,
     * nan and inf. */
    bool decimal = (isdigit((unsigned char)s[0]) || s[0] == '.') && strpbrk(s, "xXnN") == NULL;
    if (errno != 0 || !decimal || end == s || *end != '\0' || !(v >= 0) ||
        v * mult > 64.0 * (1ull << 30)) {
        cli_error("%s takes a size in bytes such as 8, 64K or 16M (at most 64G), not '%s'", flag,
                  s);
        return false;
    }
    *v_p = (size_t)(v * mult);
    return true;
}

bool cli_parse_double(const char *flag, const char *s, double lo, double *v_p)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= lo) || !isfinite(v)) {
        cli_error("%s takes a number of at least %g, not '%s'", flag, lo, s);
        return false;
    }
    *v_p = v;
    return true;
}

/* From 0.1 s to DL_MAX_TIMEOUT_S, as every other timeout. */
bool cli_parse_timeout(const char *flag, const char *s, double *v_p)
{
    double v;
    if (!cli_parse_double(flag, s, 0.1, &v))
        return false;
    if (v > DL_MAX_TIMEOUT_S) {
        cli_error("%s %s is too long: at most %g seconds", flag, s, DL_MAX_TIMEOUT_S);
        return false;
    }
    *v_p = v;
    return true;
}

bool cli_parse_dtype(const char *s, dl_dtype_t *dt_p)
{
    if (dl_dtype_parse(s, dt_p) == DL_OK)
        return true;
    cli_error("unknown dtype '%s'; dtypes: %s", s, dl_dtype_all_names());
    return false;
}

bool cli_parse_op(const char *s, dl_op_t *op_p)
{
    if (dl_op_parse(s, op_p) == DL_OK)
        return true;
    cli_error("unknown op '%s'; ops: %s", s, dl_op_all_names());
    return false;
}

bool cli_parse_transport(const char *s, const char **name_p)
{
    static const char *const names[] = {"auto", "shm", "tcp"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(s, names[i]) == 0) {
            *name_p = names[i];
            return true;
        }
    cli_error("unknown transport '%s'; transports: auto, shm, tcp", s);
    return false;
}

bool cli_parse_backend(const char *s, char *buf, size_t cap)
{
    /* Only the named backend's module is loaded: a builtin run maps
     * neither Open MPI nor the CUDA runtime. */
    size_t n = 0;
    const char *const *list = dl_backend_names(&n);
    char names[128] = "";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s, list[i]) == 0) {
            char why[600];
            if (!dl_backend_available(s, why, sizeof(why))) {
                cli_error("backend '%s' is unavailable: %s", s, why);
                return false;
            }
            snprintf(buf, cap, "%s", s);
            return true;
        }
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
                 list[i]);
    }
    cli_error("unknown backend '%s'; backends: %s", s, names);
    return false;
}

int cli_launch_flag(int c, const char *arg, lab_launch_opts_t *l)
{
    switch (c) {
    case CLI_OPT_TRANSPORT:
        return cli_parse_transport(arg, &l->transport) ? 1 : -1;
    case CLI_OPT_HOSTFILE:
        l->hostfile = arg;
        return 1;
    case CLI_OPT_HOST:
        l->hosts = arg;
        return 1;
    case CLI_OPT_TRACE:
        l->trace = arg;
        return 1;
    default:
        return 0;
    }
}

bool cli_check_launch(const char *backend, const lab_launch_opts_t *l)
{
    const char *transport = l->transport, *hostfile = l->hostfile, *hosts = l->hosts;
    if ((hostfile != NULL || hosts != NULL) && strcmp(backend, "mpi") != 0) {
        cli_error("--hostfile and --host are mpirun's: they go with --backend mpi");
        return false;
    }
    if (hostfile != NULL && access(hostfile, R_OK) != 0) {
        cli_error("--hostfile %s: %s", hostfile, strerror(errno));
        return false;
    }
    if (transport != NULL && strcmp(backend, "builtin") != 0) {
        cli_error("--transport chooses how the builtin backend moves data; the %s backend moves "
                  "its own",
                  backend);
        return false;
    }
    /* Refused before any rank starts, not after the run. */
    char why[256];
    int choice;
    if (transport == NULL && strcmp(backend, "builtin") == 0 &&
        dl_comm_env_transport(&choice, why, sizeof(why)) != DL_OK) {
        cli_error("%s", why); /* else every rank would refuse it alone */
        return false;
    }
    if (l->trace != NULL && !lab_trace_path_ok(l->trace, why, sizeof(why))) {
        cli_error("--trace %s: cannot write a trace there: %s", l->trace, why);
        return false;
    }
    return true;
}

const char *cli_transport(const lab_launch_opts_t *l)
{
    return l->transport != NULL ? l->transport : getenv("DISTLAB_TRANSPORT");
}

bool cli_check_algo_transport(const lab_job_t *job, const lab_launch_opts_t *l)
{
    const dl_algo_t *a = dl_algo_find(job->algo);
    const char *transport = cli_transport(l);
    if (a != NULL && a->shm_only && transport != NULL && strcmp(transport, "tcp") == 0) {
        cli_error("algorithm '%s' writes into its peers' memory and needs shared memory; "
                  "--transport tcp has none",
                  a->name);
        return false;
    }
    return true;
}

bool cli_parse_device(const char *s, dl_device_type_t *dev_p)
{
    if (strcmp(s, "cpu") == 0 || strcmp(s, "cuda") == 0) {
        *dev_p = s[1] == 'p' ? DL_DEVICE_CPU : DL_DEVICE_CUDA;
        return true;
    }
    cli_error("unknown device '%s'; devices: cpu, cuda", s);
    return false;
}

int cli_job_flag(int c, const char *arg, lab_job_t *job)
{
    long v;
    switch (c) {
    case CLI_OPT_NP:
        if (!cli_parse_int("--np", arg, 1, LAB_MAX_NP, &v))
            return -1;
        job->np = (int)v;
        return 1;
    case CLI_OPT_ALGO:
        snprintf(job->algo, sizeof(job->algo), "%s", arg);
        return 1;
    case CLI_OPT_DTYPE:
        return cli_parse_dtype(arg, &job->dtype) ? 1 : -1;
    case CLI_OPT_COUNT:
        if (!cli_parse_int("--count", arg, 0, 1L << 30, &v))
            return -1;
        job->count = (size_t)v;
        return 1;
    case CLI_OPT_OP:
        return cli_parse_op(arg, &job->op) ? 1 : -1;
    case CLI_OPT_ROOT:
        if (!cli_parse_int("--root", arg, 0, LAB_MAX_NP - 1, &v))
            return -1;
        job->root = (int)v;
        return 1;
    case CLI_OPT_BACKEND:
        return cli_parse_backend(arg, job->backend, sizeof(job->backend)) ? 1 : -1;
    case CLI_OPT_DEVICE:
        return cli_parse_device(arg, &job->device) ? 1 : -1;
    default:
        return 0;
    }
}

bool cli_check_job(const lab_job_t *job)
{
    const char *name = lab_prim_name(job->prim);
    bool p2p = job->prim.kind != LAB_PRIM_COLL;
    if (p2p && job->np < 2) {
        cli_error("%s needs at least 2 ranks (--np 2 or more)", name);
        return false;
    }
    if (lab_prim_has_root(job->prim) && (job->root < 0 || job->root >= job->np)) {
        cli_error("--root %d does not exist: ranks are 0 to %d", job->root, job->np - 1);
        return false;
    }
    /* The backend's own capability flags (`distlab backends`) decide. */
    const char *dev = job->device == DL_DEVICE_CUDA ? "cuda" : "cpu";
    if (p2p ? !dl_backend_supports_p2p(job->backend, job->device)
            : !dl_backend_supports_coll(job->backend, job->prim.coll, job->device)) {
        cli_error("the %s backend does not support %s on %s tensors (see `distlab backends`)",
                  job->backend, p2p ? "send/recv" : name, dev);
        return false;
    }
    if (job->algo[0] != '\0' && strcmp(job->backend, "builtin") != 0) {
        cli_error("--algo chooses a builtin schedule; the %s backend picks its own algorithms",
                  job->backend);
        return false;
    }
    if (lab_prim_has_op(job->prim)) {
        const char *why = NULL;
        if (dl_op_check(job->op, job->dtype, &why) != DL_OK) {
            cli_error("%s", why != NULL ? why : "op not defined for this dtype");
            return false;
        }
        /* Refused before any rank starts, as the op's dtype is. */
        if (dl_backend_check_op(job->backend, job->op, job->dtype, &why) != DL_OK) {
            cli_error("the %s backend refuses --op %s: %s", job->backend, dl_op_name(job->op),
                      why != NULL ? why : "not supported");
            return false;
        }
    }
    if (job->algo[0] != '\0') {
        char names[256];
        if (p2p) {
            cli_error("--algo applies to collectives; %s is point to point", name);
            return false;
        }
        const dl_algo_t *a = dl_algo_find(job->algo);
        dl_algo_names_for(job->prim.coll, names, sizeof(names));
        if (a == NULL) {
            cli_error("unknown algorithm '%s'; algorithms for %s: %s", job->algo, name, names);
            return false;
        }
        if (a->build[job->prim.coll] == NULL) {
            cli_error("algorithm '%s' does not implement %s; algorithms for %s: %s", job->algo,
                      name, name, names);
            return false;
        }
    }
    return true;
}
