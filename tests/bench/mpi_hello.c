/* The reference side of tests/bench/startup.py: the smallest MPI program
 * that starts every rank, so mpirun's start-up and teardown is all that is
 * timed. Rank 0 prints one line once every rank has joined.
 *
 * usage: mpirun -np N mpi_hello */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("hello from %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
