/* distlab scenario list | show NAME | run NAME [--step] [--np N]
 * [--backend B] [--timeout S]: the scenario library (lab/scenario/). */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lab/scenario/play.h"
#include "lab/scenario/scenario.h"

static const char usage[] =
    "usage: distlab scenario list\n"
    "       distlab scenario show NAME\n"
    "       distlab scenario run NAME [--step] [--np N] [--backend B] [--timeout S]\n\n"
    "NAME is a scenario of the library (`distlab scenario list`) or a scenario file's path.\n"
    "run prints the narration, runs every line on live ranks and checks every `expect`;\n"
    "it exits 1 when one fails, naming it. --step shows each collective step by step;\n"
    "on a terminal, pauses and steps wait for Enter.\n";

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list(void)
{
    size_t ndirs, n = 0;
    const char *const *dirs = lab_scenario_dirs(&ndirs);
    char **names = NULL;
    for (size_t d = 0; d < ndirs; d++) {
        DIR *dir = opendir(dirs[d]);
        struct dirent *e;
        while (dir != NULL && (e = readdir(dir)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len <= 9 || strcmp(e->d_name + len - 9, ".scenario") != 0)
                continue;
            char *name = strndup(e->d_name, len - 9);
            bool seen = false; /* the installed library comes first */
            for (size_t i = 0; i < n && name != NULL; i++)
                seen = seen || strcmp(names[i], name) == 0;
            char **grown = seen || name == NULL ? NULL : realloc(names, sizeof(*names) * (n + 1));
            if (grown == NULL) {
                free(name);
                continue;
            }
            names = grown;
            names[n++] = name;
        }
        if (dir != NULL)
            closedir(dir);
    }
    if (n == 0) {
        free(names);
        return cli_error("no scenarios found (looked in %s%s%s)", dirs[0], ndirs > 1 ? " and " : "",
                         ndirs > 1 ? dirs[1] : "");
    }
    qsort(names, n, sizeof(*names), by_name);
    printf("%-24s %5s  %s\n", "scenario", "ranks", "summary");
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096], err[1024];
        lab_scenario_t s;
        if (!lab_scenario_find(names[i], path, sizeof(path)) ||
            lab_scenario_load(path, &s, err, sizeof(err)) != DL_OK) {
            fprintf(stderr, "distlab: %s\n", err);
            rc = 1;
        } else {
            printf("%-24s %5d  %s\n", s.name, s.ranks, s.summary != NULL ? s.summary : s.title);
            lab_scenario_free(&s);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static int load(const char *name, lab_scenario_t *s)
{
    char path[4096], err[1024];
    if (!lab_scenario_find(name, path, sizeof(path)))
        return cli_error("no scenario named '%s' (distlab scenario list shows them; a path to "
                         "a file works too)",
                         name);
    if (lab_scenario_load(path, s, err, sizeof(err)) != DL_OK) {
        fprintf(stderr, "distlab: %s\n", err);
        return 1;
    }
    return 0;
}

static int show(const char *name)
{
    lab_scenario_t s;
    int rc = load(name, &s);
    if (rc != 0)
        return rc;
    FILE *fp = fopen(s.path, "r");
    char buf[4096];
    size_t n;
    while (fp != NULL && (n = fread(buf, 1, sizeof(buf), fp)) > 0)
        fwrite(buf, 1, n, stdout);
    if (fp != NULL)
        fclose(fp);
    lab_scenario_free(&s);
    return 0;
}

static int run(int argc, char **argv)
{
    enum { OPT_STEP = 1000, OPT_NP, OPT_BACKEND, OPT_TIMEOUT };
    static const struct option longopts[] = {
        {"step", no_argument, NULL, OPT_STEP},
        {"np", required_argument, NULL, OPT_NP},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    lab_play_opts_t o = {.out = stdout, .err = stderr};
    o.launch.timeout_s = 30;
    char backend[32] = "";
    long np = 0;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_STEP:
            o.step = true;
            break;
        case OPT_NP:
            if (!cli_parse_int("--np", optarg, 1, 4096, &np))
                return CLI_USAGE_ERROR;
            break;
        case OPT_BACKEND:
            if (!cli_parse_backend(optarg, backend, sizeof(backend)))
                return CLI_USAGE_ERROR;
            break;
        case OPT_TIMEOUT:
            if (!cli_parse_double("--timeout", optarg, 0.1, &o.launch.timeout_s))
                return CLI_USAGE_ERROR;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            return cli_error("unknown or incomplete flag '%s' (see distlab scenario --help)",
                             argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_error("scenario run needs a NAME (distlab scenario list shows them)");
    if (optind + 1 < argc)
        return cli_error("unexpected argument '%s'", argv[optind + 1]);
    lab_scenario_t s;
    int rc = load(argv[optind], &s);
    if (rc != 0)
        return rc;
    o.launch.np = (int)np;
    if (backend[0] != '\0' && strcmp(backend, "builtin") != 0)
        o.launch.backend = backend;
    else if (backend[0] == '\0' && s.backend != NULL) {
        if (!cli_parse_backend(s.backend, backend, sizeof(backend))) {
            lab_scenario_free(&s);
            return CLI_USAGE_ERROR;
        }
        o.launch.backend = strcmp(backend, "builtin") != 0 ? backend : NULL;
    }
    o.interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    o.color = isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
    rc = lab_scenario_play(&s, &o);
    lab_scenario_free(&s);
    return rc;
}

int cli_scenario(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : NULL;
    if (what == NULL || strcmp(what, "--help") == 0 || strcmp(what, "-h") == 0) {
        fputs(usage, what == NULL ? stderr : stdout);
        return what == NULL ? CLI_USAGE_ERROR : 0;
    }
    if (strcmp(what, "list") == 0)
        return argc == 2 ? list() : cli_error("scenario list takes no argument");
    if (strcmp(what, "show") == 0)
        return argc == 3 ? show(argv[2]) : cli_error("usage: distlab scenario show NAME");
    if (strcmp(what, "run") == 0)
        return run(argc - 1, argv + 1);
    return cli_error("unknown scenario command '%s' (list, show or run)", what);
}
