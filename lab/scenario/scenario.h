/* A scenario: a narrated, checked lesson written in the shell's language
 * plus a few directives (docs/scenarios.md is the teachers' reference).
 *
 *   # a comment
 *   title: Ping-pong                 metadata, before the first step
 *   summary: two ranks pass a tensor back and forth
 *   ranks: 2
 *   backend: builtin
 *
 *   say Rank 0 sends; rank 1 receives.      narration
 *   on 0: t = arange(2) + 1; send t dst=1   any shell line
 *   pause                                   waits for Enter on a terminal
 *   expect 1 t == [1, 2]                    checks a rank's tensor
 *   expect * t == tensor([6, 10])           ... on every rank
 *   ask What does rank 1 hold now?          a question (an exercise stops here)
 *   answer [3, 4]                           its answer: a tensor, a number or words
 *   hint Only the root receives the sum.    shown after a wrong try
 *   explain reduce leaves ...               shown with the answer
 *
 * Parsing checks the directives; the shell lines are parsed by the shell
 * when they run, and an error names the file and line either way. */
#ifndef LAB_SCENARIO_H
#define LAB_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/status.h"

typedef enum {
    LAB_SCN_LINE,   /* a shell line */
    LAB_SCN_SAY,    /* narration */
    LAB_SCN_PAUSE,  /* wait for the reader (text: what to say, may be "") */
    LAB_SCN_EXPECT, /* rank (-1: every rank) name == values */
    LAB_SCN_ASK,    /* a question: text, answer, hint, explain */
} lab_scn_kind_t;

typedef struct {
    lab_scn_kind_t kind;
    int lineno;
    char *text;     /* LINE, SAY, PAUSE: the text; EXPECT: the expected value as written */
    int rank;       /* EXPECT */
    char *name;     /* EXPECT: the tensor */
    double *values; /* EXPECT, and ASK when the answer is numbers */
    size_t n_values;
    char *answer, *hint, *explain; /* ASK */
} lab_scn_item_t;

typedef struct {
    char *path;
    char *name; /* the file's name without directory and extension */
    char *title, *summary, *backend;
    int ranks;
    lab_scn_item_t *items;
    size_t n_items;
    size_t n_asks; /* questions: a scenario with any is an exercise */
} lab_scenario_t;

/* Reads a scenario file. On an error, err gets "FILE:LINE: what is wrong"
 * and nothing is allocated. */
dl_status_t lab_scenario_load(const char *path, lab_scenario_t *s, char *err, size_t cap);
void lab_scenario_free(lab_scenario_t *s);
/* Parses an expected tensor as a learner or a teacher writes it:
 * "[16, 20]", "tensor([16, 20])", "[[1., 2.], [3., 4.]]", "7"; the values
 * in row-major order (*values_p is malloc'd). */
dl_status_t lab_scenario_parse_values(const char *text, double **values_p, size_t *n_p);

/* Whether a learner's answer to an ASK item is right: numbers against
 * numbers (a tensor as a list or as torch prints it, with a relative
 * tolerance of 1e-5), else words, ignoring case and surrounding space. */
bool lab_scenario_answer_ok(const lab_scn_item_t *ask, const char *given);

/* The directory of the installed library, then the source tree's (for a
 * build that is not installed); DISTLAB_SCENARIOS overrides both. */
const char *const *lab_scenario_dirs(size_t *n_p);
/* Finds a scenario by name in the library, or takes name as a path when it
 * names a file. Writes the path; false when there is none. */
bool lab_scenario_find(const char *name, char *path, size_t cap);

#endif
