/* The names lines have bound on the ranks, for completion.
 *
 * They come from the statements the shell parsed and ran (their AST, via
 * lab_stmt_defined_names), not from a second parse of the line's text, so
 * completion and execution cannot disagree about what a line defined, and
 * the statements of a sourced file count as well. */
#include <stdlib.h>
#include <string.h>

#include "lab/shell/shell_internal.h"

static void learn(lab_shell_t *sh, const char *name)
{
    if (name == NULL || *name == '\0')
        return;
    for (size_t i = 0; i < sh->n_names; i++)
        if (strcmp(sh->names[i], name) == 0)
            return;
    char **v = realloc(sh->names, sizeof(*v) * (sh->n_names + 1));
    if (v == NULL)
        return; /* completion only proposes less */
    sh->names = v;
    if ((sh->names[sh->n_names] = strdup(name)) != NULL)
        sh->n_names++;
}

void lab__shell_forget_names(lab_shell_t *sh)
{
    for (size_t i = 0; i < sh->n_names; i++)
        free(sh->names[i]);
    free(sh->names);
    sh->names = NULL;
    sh->n_names = 0;
}

void lab__shell_learn_names(lab_shell_t *sh, const json_t *stmts)
{
    size_t i;
    const json_t *stmt;
    json_array_foreach(stmts, i, stmt)
    {
        /* A new world starts without tensors: what came before is gone. */
        const lab_cmd_t *row = lab_stmt_session_cmd(stmt);
        if (row != NULL && (row->id == LAB_CMD_ID_RESPAWN || row->id == LAB_CMD_ID_SPAWN))
            lab__shell_forget_names(sh);
        const char *names[LAB_STMT_MAX_DEFINED];
        size_t n = lab_stmt_defined_names(stmt, names);
        for (size_t k = 0; k < n; k++)
            learn(sh, names[k]);
    }
}

const char *const *lab_shell_names(const lab_shell_t *sh, size_t *n_p)
{
    *n_p = sh->n_names;
    return (const char *const *)sh->names;
}
