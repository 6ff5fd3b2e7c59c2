/* The distlab command line: one entry per subcommand, shared flag parsing
 * with one-line errors (exit 2) that list the accepted values. */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "lab/ctrl/launch.h"
#include "lab/proto/job.h"
#include "lab/run/runner.h"

#define CLI_USAGE_ERROR 2

int cli_run(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_backends(int argc, char **argv);
int cli_rank(int argc, char **argv);
int cli_shell(int argc, char **argv);
/* `distlab run PRIMITIVE --tui`: a shell session on launch's ranks (backend
 * "builtin", "mpi" or "nccl") with the terminal view open, which runs line
 * first; q leaves the view for the plain prompt, as `shell --tui` does.
 * Refused (exit 2) when standard input or output is not a terminal. */
int cli_shell_view_line(const lab_launch_opts_t *launch, const char *backend, const char *line);
int cli_worker(int argc, char **argv);
int cli_launch(int argc, char **argv);
int cli_scenario(int argc, char **argv);
int cli_exercise(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_demo(int argc, char **argv);
/* Plays the elastic demo with o (its exe filled in here). */
struct lab_demo_opts;
int cli_demo_elastic(struct lab_demo_opts *o);

/* Parses `distlab run|bench` arguments (argv[0] is the subcommand) into a
 * job: -1 when it is ready to run, else the exit code (0 after --help). */
int cli_parse_run(int argc, char **argv, bool bench, lab_job_t *job_p, lab_runner_opts_t *ropts_p);

/* Prints "distlab: <message>" on stderr and returns CLI_USAGE_ERROR. Every
 * string argument is shown with its control bytes escaped (\e, \xNN), and
 * one that is a word of the command line (cli_set_args) is cut after
 * DL_QUOTE_MAX bytes, so an argument can neither drive the terminal nor
 * flood it. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The command line, for cli_error to know its words (main calls it). */
void cli_set_args(int argc, char **argv);

/* The error for a flag getopt_long refused ('?' or ':') in `distlab cmd`,
 * whose flags are longopts: names the word as it was typed, reading where
 * getopt left optind and optopt (so call it at once), and points a long
 * flag typed with one dash (-np) to its two. Returns CLI_USAGE_ERROR. */
struct option;
int cli_flag_error(const char *cmd, const struct option *longopts, int argc, char **argv);
/* The long flag of longopts spelled by the n bytes at name, or NULL. */
const struct option *cli_long_flag(const struct option *longopts, const char *name, size_t n);

/* Value parsers: false (after cli_error) on a bad value. */
bool cli_parse_int(const char *flag, const char *s, long lo, long hi, long *v_p);
/* "8", "1K", "64M", "1G" (powers of 1024, as nccl-tests reads them). */
bool cli_parse_size(const char *flag, const char *s, size_t *v_p);
bool cli_parse_double(const char *flag, const char *s, double lo, double *v_p);
/* --timeout: seconds, from 0.1 to 86400 (a day). */
bool cli_parse_timeout(const char *flag, const char *s, double *v_p);
bool cli_parse_dtype(const char *s, dl_dtype_t *dt_p);
bool cli_parse_op(const char *s, dl_op_t *op_p);
/* --transport: "auto", "shm" or "tcp" (*name_p: a static string). */
bool cli_parse_transport(const char *s, const char **name_p);

/* --backend: "builtin", "mpi" or "nccl", built into this binary (else a
 * one-line error that says why it is not). */
bool cli_parse_backend(const char *s, char *buf, size_t cap);
/* The launch flags against the backend, for run, bench and shell:
 * --hostfile/--host go with mpi (and the hostfile must be readable),
 * --transport with builtin, and --trace's file must be writable. Prints
 * the error. */
bool cli_check_launch(const char *backend, const lab_launch_opts_t *l);
/* --device: "cpu" or "cuda". */
bool cli_parse_device(const char *s, dl_device_type_t *dev_p);

/* The flags every job takes: --np, --algo, --dtype, --count, --op, --root,
 * --backend, --device.
 * Their getopt values, for a subcommand's option table. */
enum {
    CLI_OPT_NP = 256,
    CLI_OPT_ALGO,
    CLI_OPT_DTYPE,
    CLI_OPT_COUNT,
    CLI_OPT_OP,
    CLI_OPT_ROOT,
    CLI_OPT_BACKEND,
    CLI_OPT_DEVICE,
    CLI_OPT_TRANSPORT,
    CLI_OPT_HOSTFILE,
    CLI_OPT_HOST,
    CLI_OPT_TRACE,
    CLI_OPT__NEXT
};
#define CLI_JOB_LONGOPTS                                                                           \
    {"np", required_argument, NULL, CLI_OPT_NP}, {"algo", required_argument, NULL, CLI_OPT_ALGO},  \
        {"dtype", required_argument, NULL, CLI_OPT_DTYPE},                                         \
        {"count", required_argument, NULL, CLI_OPT_COUNT},                                         \
        {"op", required_argument, NULL, CLI_OPT_OP},                                               \
        {"root", required_argument, NULL, CLI_OPT_ROOT},                                           \
        {"backend", required_argument, NULL, CLI_OPT_BACKEND},                                     \
    {                                                                                              \
        "device", required_argument, NULL, CLI_OPT_DEVICE                                          \
    }
/* How ranks are launched, for run, bench and shell: --transport,
 * --hostfile, --host, --trace (--np, --timeout and --backend are each
 * command's: the job's for run and bench). */
#define CLI_LAUNCH_LONGOPTS                                                                        \
    {"transport", required_argument, NULL, CLI_OPT_TRANSPORT},                                     \
        {"hostfile", required_argument, NULL, CLI_OPT_HOSTFILE},                                   \
        {"host", required_argument, NULL, CLI_OPT_HOST},                                           \
    {                                                                                              \
        "trace", required_argument, NULL, CLI_OPT_TRACE                                            \
    }
/* Applies one of those flags to l: 1 when applied, 0 when c is not one of
 * them, -1 (after cli_error) for a bad value. */
int cli_launch_flag(int c, const char *arg, lab_launch_opts_t *l);

/* Applies one of the job's flags to job: 1 when applied, 0 when c is not one of
 * them, -1 (after cli_error) for a bad value. */
int cli_job_flag(int c, const char *arg, lab_job_t *job);

/* Checks a job's fields against each other (root in range, op defined for
 * the dtype, algorithm implements the collective); prints the error. */
bool cli_check_job(const lab_job_t *job);
/* The transport the ranks will use: --transport, else DISTLAB_TRANSPORT,
 * else NULL (auto). */
const char *cli_transport(const lab_launch_opts_t *l);
/* Refuses an algorithm that needs shared memory (dl_algo_t.shm_only) with
 * --transport tcp (or DISTLAB_TRANSPORT=tcp). */
bool cli_check_algo_transport(const lab_job_t *job, const lab_launch_opts_t *l);

#endif
