/* The launchers of this room (lab/ctrl/launch.h), for its registry. */
#ifndef LAB_LAUNCHERS_H
#define LAB_LAUNCHERS_H

#include <stdbool.h>

#include "lab/ctrl/launch.h"

extern const lab_launcher_ops_t lab__launcher_local;  /* spawn.c */
extern const lab_launcher_ops_t lab__launcher_mpirun; /* mpirun.c */
extern const lab_launcher_ops_t lab__launcher_attach; /* launch.c */

/* Signals a rank that another launcher started (mpirun, the user's), where
 * it runs, when that is this host: says so and returns false otherwise. */
bool lab__launch_signal_here(lab_ctrl_t *c, int rank, int sig);

#endif
