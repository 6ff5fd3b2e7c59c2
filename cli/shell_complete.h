/* Tab completion in the interactive shell: readline's completion hook over
 * lab_complete (lab/lang/lang.h), which knows the commands, the algorithms of the
 * schedule registry, ops, dtypes and keywords, with the names the session
 * has bound on the ranks (lab_shell_names). Readline's hooks take no
 * argument, so the state is this module's own (one shell per process). */
#ifndef CLI_SHELL_COMPLETE_H
#define CLI_SHELL_COMPLETE_H

#include "lab/shell/shell.h"

/* Installs the completion hook and readline's word breaks; names come from
 * sh, which must outlive the hook. */
void cli_complete_init(lab_shell_t *sh);
/* Frees what the module holds. */
void cli_complete_fini(void);

#endif
