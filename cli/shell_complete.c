/* See shell_complete.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/readline.h>

#include "cli/shell_complete.h"
#include "lab/lang/lang.h"

/* The shell whose bound names are proposed. */
static lab_shell_t *shell;

/* The matches of the completion in progress, handed out by generate(). */
static char **matches;
static size_t n_matches, next_match;

/* Every character that cannot be part of a name breaks words, so readline's
 * word is lab_complete's: the run of [A-Za-z0-9_] before the cursor. */
static char word_breaks[128];

/* ---- readline's hook ---- */

static void drop_matches(void)
{
    lab_complete_free(matches, n_matches);
    matches = NULL;
    n_matches = next_match = 0;
}

static char *generate(const char *text, int state)
{
    (void)text; /* lab_complete has filtered by the word already */
    if (state == 0)
        next_match = 0;
    return next_match < n_matches ? strdup(matches[next_match++]) : NULL;
}

/* Each match must replace line[start, end). lab_complete's word starts at
 * word; with our word breaks the two agree, but keep them exact anyway. */
static bool align_matches(const char *line, int start, int word)
{
    for (size_t i = 0; i < n_matches; i++) {
        char *m = matches[i];
        if (word > start) {
            size_t lead = (size_t)(word - start), len = strlen(m);
            char *n = malloc(lead + len + 1);
            if (n == NULL)
                return false;
            memcpy(n, line + start, lead);
            memcpy(n + lead, m, len + 1);
            free(m);
            matches[i] = n;
        } else if (word < start) {
            size_t skip = (size_t)(start - word);
            if (strlen(m) < skip || strncmp(m, line + word, skip) != 0)
                return false;
            memmove(m, m + skip, strlen(m + skip) + 1);
        }
    }
    return true;
}

static char **attempt(const char *text, int start, int end)
{
    rl_attempted_completion_over = 1; /* never file names */
    drop_matches();
    int word = start;
    size_t n_names = 0;
    const char *const *names = shell != NULL ? lab_shell_names(shell, &n_names) : NULL;
    if (lab_complete(rl_line_buffer, end, names, n_names, &matches, &n_matches, &word) != DL_OK) {
        matches = NULL;
        n_matches = 0;
        return NULL;
    }
    if (n_matches == 0 || !align_matches(rl_line_buffer, start, word)) {
        drop_matches();
        return NULL;
    }
    /* "op=" wants its value next, not a space. */
    if (n_matches == 1) {
        size_t len = strlen(matches[0]);
        if (len > 0 && matches[0][len - 1] == '=')
            rl_completion_suppress_append = 1;
    }
    return rl_completion_matches(text, generate);
}

void cli_complete_init(lab_shell_t *sh)
{
    shell = sh;
    size_t n = 0;
    for (int ch = 1; ch < 128 && n < sizeof(word_breaks) - 1; ch++) {
        bool name_char = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                         (ch >= '0' && ch <= '9') || ch == '_';
        if (!name_char)
            word_breaks[n++] = (char)ch;
    }
    word_breaks[n] = '\0';
    rl_readline_name = "distlab"; /* for $if distlab in ~/.inputrc */
    rl_basic_word_break_characters = word_breaks;
    rl_completer_word_break_characters = word_breaks;
    rl_completer_quote_characters = NULL;
    rl_attempted_completion_function = attempt;
}

void cli_complete_fini(void)
{
    drop_matches();
    shell = NULL;
}
