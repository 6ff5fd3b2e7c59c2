/* Tab completion in the interactive shell: readline's completion hook over
 * lab_complete (lab/lang/lang.h), which knows the commands, the algorithms of the
 * schedule registry, ops, dtypes and keywords; the shell adds the names the
 * session has bound on the ranks. Readline's hooks take no argument, so the
 * state is this module's own (one shell per process). */
#ifndef CLI_SHELL_COMPLETE_H
#define CLI_SHELL_COMPLETE_H

#include <stdbool.h>

/* Installs the completion hook and readline's word breaks. */
void cli_complete_init(void);
/* Learns the names line binds on the ranks, once it has run: call it for a
 * line that ran without error. Assignments (t = ..., h = isend ...) and the
 * lists that gather_list= and all_gather create; `respawn` and `spawn` start
 * fresh ranks, so the names learned before them are forgotten. */
void cli_complete_learn(const char *line);
/* Frees what the module holds. */
void cli_complete_fini(void);

#endif
