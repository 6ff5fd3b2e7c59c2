/* Starting a world's ranks under Open MPI's mpirun, for the mpi backend.
 *
 * One mpirun process starts every rank, on this host or on the hosts of a
 * hostfile. A rank finds its number in Open MPI's environment
 * (OMPI_COMM_WORLD_RANK, ...), and the session in ours, which mpirun passes
 * on with -x so that it reaches ranks on other hosts too. mpirun ends the
 * whole job when one rank dies, and says which one on its standard error:
 * lab_mpirun_parse_death reads that. */
#ifndef LAB_MPIRUN_H
#define LAB_MPIRUN_H

#include <stdbool.h>

#include <uv.h>

#include "lab/ctrl/spawn.h"

typedef struct {
    int np;
    const char *hostfile; /* mpirun --hostfile; NULL: none */
    const char *hosts;    /* mpirun --host (h1,h2:2,...); NULL: none */
    lab_rank_env_t env;   /* the session; rank numbers are mpirun's */
    uv_pipe_t *output;    /* mpirun's standard error; NULL: ours */
} lab_mpirun_opts_t;

/* Spawns `mpirun ... exe rank` in a session of its own. Returns a libuv
 * error code; on failure the handle must still be closed. */
int lab_mpirun_spawn(uv_loop_t *loop, uv_process_t *proc, const char *exe,
                     const lab_mpirun_opts_t *o, uv_exit_cb exit_cb);

/* The mpirun command, as a user would type it, for messages. */
void lab_mpirun_describe(const lab_mpirun_opts_t *o, const char *exe, char *buf, size_t cap);

/* How mpirun reports the first rank that failed. Feed it mpirun's output
 * line by line; it remembers the rank, and its signal or exit code. */
typedef struct {
    int rank;   /* -1: none reported yet */
    int signal; /* 0: it exited */
    int code;
    int pending_rank; /* "Process name: [[j,1],R]" seen, "Exit code:" not yet */
} lab_mpirun_death_t;

void lab_mpirun_death_init(lab_mpirun_death_t *d);
void lab_mpirun_parse_line(lab_mpirun_death_t *d, const char *line);

/* Whether this process runs under mpirun (Open MPI's variables are set). */
bool lab_mpirun_env_present(void);
/* This process's rank in mpirun's world, the world's size, and how many of
 * its ranks run on this host (0 when not said); any may be NULL. False when
 * not under mpirun. */
bool lab_mpirun_world(int *rank_p, int *size_p, int *local_size_p);
/* A rank started by mpirun: RANK, WORLD_SIZE, LOCAL_RANK and
 * LOCAL_WORLD_SIZE from Open MPI's variables, unless set already. */
void lab_mpirun_adopt_env(void);

#endif
