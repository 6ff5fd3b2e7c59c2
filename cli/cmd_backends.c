/* `distlab backends`: which primitive each backend runs on which device, in
 * the shape of the "Backends" table of the torch.distributed documentation.
 *
 * Every cell comes from core's capability API (distlab/backends.h), which
 * reads the flags the communicator checks before each call and that
 * `distlab run --backend` checks before it spawns a rank; so what this table
 * says and what a run does cannot disagree. Nothing here knows which
 * backend supports what. */
#include <getopt.h>
#include <jansson.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "distlab/backends.h"

static const char usage[] =
    "usage: distlab backends [--ascii] [--json]\n"
    "\n"
    "Prints which primitive each backend (builtin, mpi, nccl) runs on cpu and on\n"
    "cuda tensors, as the torch.distributed documentation's backend table does.\n"
    "The answers are the checks `distlab run --backend B --device D` makes, so a\n"
    "primitive marked unsupported is refused there with the same reason. A backend\n"
    "this binary cannot use (built without it, or its module does not load) shows\n"
    "\"unavailable\", and a note says why.\n"
    "\n"
    "  --ascii   print yes and no instead of a check mark and a cross (the default\n"
    "            where the locale is not UTF-8)\n"
    "  --json    print {backend: {built, why_not_built, steps, cpu: {primitive: bool},\n"
    "            cuda: {...}}} instead of the table; built is whether it is available,\n"
    "            why_not_built why not; steps is \"schedule\" (step mode steps every\n"
    "            schedule step), \"collective\" (whole collectives) or null (unavailable)\n";

/* ------------------------------------------------------------------ rows */

/* A row: send and recv (both the point-to-point capability), then the
 * collectives in the torch documentation's order. */
typedef struct {
    const char *name;
    bool p2p;
    dl_coll_t coll;
} row_t;

#define MAX_ROWS (2 + DL_COLL__COUNT)

static size_t rows_build(row_t rows[MAX_ROWS])
{
    static const dl_coll_t torch_order[] = {
        DL_COLL_BROADCAST,      DL_COLL_ALL_REDUCE, DL_COLL_REDUCE,
        DL_COLL_ALL_GATHER,     DL_COLL_GATHER,     DL_COLL_SCATTER,
        DL_COLL_REDUCE_SCATTER, DL_COLL_ALL_TO_ALL, DL_COLL_BARRIER,
    };
    bool listed[DL_COLL__COUNT] = {false};
    size_t n = 0;
    rows[n++] = (row_t){"send", true, 0};
    rows[n++] = (row_t){"recv", true, 0};
    for (size_t i = 0; i < sizeof(torch_order) / sizeof(torch_order[0]); i++) {
        rows[n++] = (row_t){dl_coll_name(torch_order[i]), false, torch_order[i]};
        listed[torch_order[i]] = true;
    }
    /* A collective added to core later still gets a row, at the end. */
    for (int c = 0; c < DL_COLL__COUNT; c++)
        if (!listed[c])
            rows[n++] = (row_t){dl_coll_name((dl_coll_t)c), false, (dl_coll_t)c};
    return n;
}

static bool row_supported(const char *backend, const row_t *r, dl_device_type_t dev)
{
    return r->p2p ? dl_backend_supports_p2p(backend, dev)
                  : dl_backend_supports_coll(backend, r->coll, dev);
}

static const struct {
    const char *name;
    dl_device_type_t dev;
} devices[] = {{"cpu", DL_DEVICE_CPU}, {"cuda", DL_DEVICE_CUDA}};
#define N_DEVICES (sizeof(devices) / sizeof(devices[0]))

/* ---------------------------------------------------------------- locale */

/* Whether name spells UTF-8 ("UTF-8", "utf8", "en_US.UTF-8", ...). */
static bool names_utf8(const char *name)
{
    char flat[64];
    size_t n = 0;
    for (; *name != '\0' && n + 1 < sizeof(flat); name++)
        if (*name != '-' && *name != '_')
            flat[n++] = (char)((*name >= 'A' && *name <= 'Z') ? *name - 'A' + 'a' : *name);
    flat[n] = '\0';
    return strstr(flat, "utf8") != NULL;
}

/* Whether the user's locale says the terminal takes UTF-8. The character set
 * of LC_CTYPE as the environment sets it; where that locale is not installed
 * here (setlocale fails), the variable's own spelling, in the order the C
 * library reads them. The program's own locale is left as it was. */
static bool locale_is_utf8(void)
{
    const char *cur = setlocale(LC_CTYPE, NULL);
    char *saved = cur != NULL ? strdup(cur) : NULL;
    bool utf8;
    if (setlocale(LC_CTYPE, "") != NULL) {
        utf8 = names_utf8(nl_langinfo(CODESET));
    } else {
        const char *v = NULL;
        const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
        for (size_t i = 0; i < 3 && (v == NULL || *v == '\0'); i++)
            v = getenv(vars[i]);
        utf8 = v != NULL && names_utf8(v);
    }
    if (saved != NULL) {
        setlocale(LC_CTYPE, saved);
        free(saved);
    }
    return utf8;
}

/* ----------------------------------------------------------------- table */

/* Terminal columns that s takes: its code points, since every glyph this
 * table prints (ASCII, U+2713, U+2718) is one column wide. */
static size_t display_width(const char *s)
{
    size_t w = 0;
    for (; *s != '\0'; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

/* Appends s to line, then spaces to width columns and gap more. */
static void put_cell(char *line, size_t cap, const char *s, size_t width, size_t gap)
{
    size_t len = strlen(line);
    size_t pad = gap + (width > display_width(s) ? width - display_width(s) : 0);
    snprintf(line + len, cap - len, "%s%*s", s, (int)pad, "");
}

static void put_line(char *line)
{
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == ' ')
        line[--n] = '\0';
    puts(line);
}

#define GAP       2 /* between the sub-columns of one backend */
#define GROUP_GAP 4 /* between backends */

static void print_table(bool utf8)
{
    const char *yes = utf8 ? "\xE2\x9C\x93" : "yes"; /* U+2713 CHECK MARK */
    const char *no = utf8 ? "\xE2\x9C\x98" : "no";   /* U+2718 HEAVY BALLOT X */
    const char *not_built = "unavailable";
    size_t nb = 0;
    const dl_backend_info_t *bk = dl_backend_list(&nb);
    row_t rows[MAX_ROWS];
    size_t nrows = rows_build(rows);

    /* Column widths, in display columns. */
    size_t name_w = display_width("backend");
    for (size_t r = 0; r < nrows; r++)
        if (display_width(rows[r].name) > name_w)
            name_w = display_width(rows[r].name);
    size_t dev_w[N_DEVICES];
    size_t sub_w = 0; /* the cpu, cuda sub-columns together, with GAP between */
    for (size_t d = 0; d < N_DEVICES; d++) {
        dev_w[d] = display_width(devices[d].name);
        if (display_width(yes) > dev_w[d])
            dev_w[d] = display_width(yes);
        if (display_width(no) > dev_w[d])
            dev_w[d] = display_width(no);
        sub_w += dev_w[d] + (d > 0 ? GAP : 0);
    }
    /* A backend's name and "not built" span its sub-columns; the last one
     * widens where they need more room. */
    size_t span_w = display_width(not_built);
    for (size_t b = 0; b < nb; b++)
        if (display_width(bk[b].name) > span_w)
            span_w = display_width(bk[b].name);
    if (span_w > sub_w) {
        dev_w[N_DEVICES - 1] += span_w - sub_w;
        sub_w = span_w;
    }

    char line[1024];
    /* Header: backends, then their devices. */
    line[0] = '\0';
    put_cell(line, sizeof(line), "backend", name_w, GROUP_GAP);
    for (size_t b = 0; b < nb; b++)
        put_cell(line, sizeof(line), bk[b].name, sub_w, GROUP_GAP);
    put_line(line);
    line[0] = '\0';
    put_cell(line, sizeof(line), "device", name_w, GROUP_GAP);
    for (size_t b = 0; b < nb; b++)
        for (size_t d = 0; d < N_DEVICES; d++)
            put_cell(line, sizeof(line), devices[d].name, dev_w[d],
                     d + 1 < N_DEVICES ? GAP : GROUP_GAP);
    put_line(line);
    for (size_t r = 0; r < nrows; r++) {
        line[0] = '\0';
        put_cell(line, sizeof(line), rows[r].name, name_w, GROUP_GAP);
        for (size_t b = 0; b < nb; b++) {
            if (!bk[b].built) {
                put_cell(line, sizeof(line), not_built, sub_w, GROUP_GAP);
                continue;
            }
            for (size_t d = 0; d < N_DEVICES; d++)
                put_cell(line, sizeof(line),
                         row_supported(bk[b].name, &rows[r], devices[d].dev) ? yes : no, dev_w[d],
                         d + 1 < N_DEVICES ? GAP : GROUP_GAP);
        }
        put_line(line);
    }

    /* Notes: why a backend is missing, and what step mode steps. Only a
     * backend in this binary can say how it steps. */
    printf("\n");
    for (size_t b = 0; b < nb; b++)
        if (!bk[b].built)
            printf("%s is unavailable: %s\n", bk[b].name,
                   bk[b].why_not_built != NULL ? bk[b].why_not_built : "no reason recorded");
    char lists[2][256] = {"", ""};
    char *sched = lists[0], *whole = lists[1];
    for (size_t b = 0; b < nb; b++) {
        if (!bk[b].built)
            continue;
        char *list = dl_backend_steps_schedules(bk[b].name) ? sched : whole;
        size_t len = strlen(list);
        snprintf(list + len, sizeof(lists[0]) - len, "%s%s", len > 0 ? ", " : "", bk[b].name);
    }
    /* "builtin steps ...", "mpi, nccl step ...". */
    printf("step mode: ");
    if (sched[0] != '\0')
        printf("%s %s every schedule step%s", sched, strchr(sched, ',') ? "step" : "steps",
               whole[0] != '\0' ? "; " : "");
    if (whole[0] != '\0')
        printf("%s %s whole collectives", whole, strchr(whole, ',') ? "step" : "steps");
    printf("\n");
}

/* ------------------------------------------------------------------ json */

static int print_json(void)
{
    size_t nb = 0;
    const dl_backend_info_t *bk = dl_backend_list(&nb);
    row_t rows[MAX_ROWS];
    size_t nrows = rows_build(rows);
    json_t *root = json_object();
    for (size_t b = 0; b < nb; b++) {
        const char *why = bk[b].built                   ? NULL
                          : bk[b].why_not_built != NULL ? bk[b].why_not_built
                                                        : "no reason recorded";
        /* A backend that is not built cannot say how it steps: null. */
        const char *steps = !bk[b].built                             ? NULL
                            : dl_backend_steps_schedules(bk[b].name) ? "schedule"
                                                                     : "collective";
        json_t *o = json_pack("{s:b, s:o, s:o}", "built", (int)bk[b].built, "why_not_built",
                              why != NULL ? json_string(why) : json_null(), "steps",
                              steps != NULL ? json_string(steps) : json_null());
        for (size_t d = 0; d < N_DEVICES; d++) {
            json_t *cells = json_object();
            for (size_t r = 0; r < nrows; r++)
                json_object_set_new(
                    cells, rows[r].name,
                    json_boolean(row_supported(bk[b].name, &rows[r], devices[d].dev)));
            json_object_set_new(o, devices[d].name, cells);
        }
        json_object_set_new(root, bk[b].name, o);
    }
    char *text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    if (text == NULL) {
        fprintf(stderr, "distlab: out of memory\n");
        return 1;
    }
    puts(text);
    free(text);
    return 0;
}

/* ------------------------------------------------------------------ main */

enum { OPT_ASCII = 256, OPT_JSON };

int cli_backends(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"ascii", no_argument, NULL, OPT_ASCII},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool ascii = false, json = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_ASCII:
            ascii = true;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            return cli_flag_error("backends", longopts, argc, argv);
        }
    }
    if (optind < argc)
        return cli_error("unexpected argument '%s'; backends takes only --ascii, --json",
                         argv[optind]);
    if (json)
        return print_json();
    print_table(!ascii && locale_is_utf8());
    return 0;
}
