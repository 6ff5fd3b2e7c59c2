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
 *   write Write the ring all-reduce of t.   a question answered with code
 *   given t = arange(4) + 1 + 4*rank        set-up, run again before every try
 *   check t == all_reduce(t)                t after the code, against the built-in
 *   limit messages 2 * (world_size - 1)     at most, per rank (and `limit bytes`)
 *   forbid all_reduce reduce_scatter        commands the code may not use
 *   hint ... / explain ...                  as for ask
 *   solution                                the model solution: the indented
 *       right = (rank + 1) % world_size     lines below (or `solution FILE`)
 *
 * Parsing checks the directives; the shell lines are parsed by the shell
 * when they run, and an error names the file and line either way. */
#ifndef LAB_SCENARIO_H
#define LAB_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "distlab/status.h"

typedef enum {
    LAB_SCN_LINE,   /* a shell line */
    LAB_SCN_SAY,    /* narration */
    LAB_SCN_PAUSE,  /* wait for the reader (text: what to say, may be "") */
    LAB_SCN_EXPECT, /* rank (-1: every rank) name == values */
    LAB_SCN_ASK,    /* a question: text, answer, hint, explain */
    LAB_SCN_WRITE,  /* a question answered with code: text, hint, explain, write */
} lab_scn_kind_t;

/* A `write` question: the learner's code runs on every rank of fresh ranks
 * (each try, and the solution), after the `given` lines; then the built-in collective runs on a
 * copy of what the check names as it was before the code, and every rank's result must equal it;
 * what each rank sent while the code ran must stay within the limits; and the code may not call a
 * forbidden command. */
typedef struct {
    char **given; /* shell lines, in order */
    size_t n_given;
    char *name;      /* check NAME == COLL(NAME, MORE): the tensor */
    char *coll;      /* the collective */
    char *coll_more; /* what follows NAME in its parentheses (", op=max"), or "" */
    char *check;     /* the check as written: "t == all_reduce(t)" */
    /* Expressions in world_size and nbytes (the checked tensor's size in
     * bytes), or NULL: at most so many messages and bytes per rank. */
    char *limit_messages, *limit_bytes;
    char **forbid; /* command names */
    size_t n_forbid;
    char *solution; /* the model solution: shell lines, a block's indentation kept */
    int solution_lineno;
} lab_scn_write_t;

typedef struct {
    lab_scn_kind_t kind;
    int lineno;
    char *text;     /* LINE, SAY, PAUSE: the text; EXPECT: the expected value as written */
    int rank;       /* EXPECT */
    char *name;     /* EXPECT: the tensor */
    double *values; /* EXPECT, and ASK when the answer is numbers */
    size_t n_values;
    char *answer, *hint, *explain; /* ASK; hint and explain also WRITE */
    lab_scn_write_t *write;        /* WRITE */
} lab_scn_item_t;

typedef struct {
    char *path;
    char *name; /* the file's name without directory and extension */
    char *title, *summary, *backend;
    /* `demo: elastic`: a scenario played by a built-in demo (its `say`
     * lines first) rather than by shell lines on ranks. */
    char *demo;
    int ranks;
    /* `sizes:` as written ("4", "2-8", "1, 2, 4, 8"): the world sizes the
     * file is written for, which --np may pick; NULL: any. */
    char *sizes;
    lab_scn_item_t *items;
    size_t n_items;
    size_t n_questions; /* ask and write: a scenario with any is an exercise */
} lab_scenario_t;

/* Whether the scenario is written for np ranks (its `sizes:`, or any). */
bool lab_scenario_size_ok(const lab_scenario_t *s, int np);

/* Reads a scenario file. On an error, err gets "FILE:LINE: what is wrong"
 * and nothing is allocated. */
dl_status_t lab_scenario_load(const char *path, lab_scenario_t *s, char *err, size_t cap);
void lab_scenario_free(lab_scenario_t *s);
/* Parses an expected tensor as a learner or a teacher writes it:
 * "[16, 20]", "tensor([16, 20])", "[[1., 2.], [3., 4.]]", "7"; the values
 * in row-major order (*values_p is malloc'd). */
dl_status_t lab_scenario_parse_values(const char *text, double **values_p, size_t *n_p);

/* Whether a learner's answer to an ASK item is right: numbers against
 * numbers (a tensor as a list or as torch prints it, within
 * lab_scenario_close; "rank 2", "6 steps", "none", "no bytes" and "6,000,000" read as
 * their numbers; one number asked for, a list of it too), else words,
 * ignoring case and surrounding space ("y" and "n" for yes and no). */
bool lab_scenario_answer_ok(const lab_scn_item_t *ask, const char *given);
/* Whether an answer can be graded at all: a numeric question's answer
 * holds numbers. What cannot (a word typed at the prompt) is no try. */
bool lab_scenario_answer_readable(const lab_scn_item_t *ask, const char *given);
/* got is want within a relative tolerance of 1e-5 (and 1e-8 absolute, as
 * torch.allclose's defaults); NaN matches NaN. */
bool lab_scenario_close(double got, double want);

/* The name the copy of a write question's tensor goes by on the ranks
 * while its code runs: "_builtin_t" for t. Code that names one is not run
 * (lab_scenario_code_ok). */
#define LAB_SCENARIO_REF_PREFIX "_builtin_"
void lab_scenario_ref_name(const lab_scn_write_t *w, char *buf, size_t cap);
/* Evaluates a `limit` expression: numbers, world_size, nbytes, + - * /
 * and parentheses. DL_ERR_INVALID when it is malformed (why says how). */
dl_status_t lab_scenario_limit_eval(const char *expr, int world_size, double nbytes, double *v_p,
                                    char *why, size_t cap);
/* Whether a learner's code for a write question may run: it parses, holds
 * no session command (respawn, set, quit, ...) and calls no forbidden
 * command. False with why, one line ("line 2, column 7: unexpected ')'",
 * "it calls all_reduce, which this exercise rules out"). */
bool lab_scenario_code_ok(const lab_scn_write_t *w, const char *code, char *why, size_t cap);

/* A file's text (at most 64 KiB), without its trailing newlines; NULL
 * with errno set when it cannot be read. Free it. */
char *lab_scenario_read_file(const char *path);
/* Reads the next code answer of an answers file (--answers): a line `@PATH`
 * names a file holding the code (relative to the answers file's folder,
 * from answers_path); a line `code:` starts lines of code that run to a
 * line `end`; any other line is the code itself (statements split by ';').
 * DL_OK with *code_p malloc'd; DL_ERR_NOT_FOUND at the end of the file;
 * DL_ERR_IO when the @ file cannot be read, DL_ERR_INVALID for a `code:`
 * block without its `end`, or for code over 64 KiB, a line or a block,
 * which is read to its end all the same so that the next answer starts
 * after it (why says so, with *code_p NULL). */
dl_status_t lab_scenario_read_code(FILE *answers, const char *answers_path, char **code_p,
                                   char *why, size_t cap);
/* The directory of the installed library, then the source tree's (for a
 * build that is not installed); DISTLAB_SCENARIOS overrides both. */
const char *const *lab_scenario_dirs(size_t *n_p);
/* Finds a scenario: a path (one with a '/', or ending in .scenario) is
 * the file itself; any other name is the library's, even where a file of
 * that name lies in the current folder. Writes the path; false when there
 * is none. */
bool lab_scenario_find(const char *name, char *path, size_t cap);

#endif
