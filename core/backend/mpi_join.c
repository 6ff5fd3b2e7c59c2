/* Part of the mpi module: starting MPI for a rank that mpirun started
 * (dl_mpi_join in distlab/backends.h, which lab/run/mpirun_job.c calls),
 * so that the distlab binary itself never links Open MPI. */
#include <mpi.h>
#include <stddef.h>

void dl__mpi_join(char *buf, size_t n);
void dl__mpi_leave(void);

void dl__mpi_join(char *buf, size_t n)
{
    /* The level the mpi backend asks for (see mpi_init in mpi.c). */
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided);
    MPI_Bcast(buf, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
}

void dl__mpi_leave(void)
{
    MPI_Finalize();
}
