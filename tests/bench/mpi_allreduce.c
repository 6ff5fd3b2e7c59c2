/* The reference side of tests/bench/allreduce_vs_mpi.py: OpenMPI's
 * MPI_Allreduce (float32, sum, in place, as distlab's all_reduce is) over
 * the same sizes, timed as distlab bench times: warm-up, a barrier, then
 * iters calls; the time per call is averaged over ranks.
 *
 * usage: mpirun -np N mpi_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP
 * prints one line per size: "bytes time_us" */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP\n");
        MPI_Finalize();
        return 2;
    }
    size_t min = strtoull(argv[1], NULL, 10), max = strtoull(argv[2], NULL, 10);
    int iters = atoi(argv[3]), warmup = atoi(argv[4]);
    float *buf = malloc(max > 4 ? max : 4);
    if (buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t bytes = min; bytes <= max; bytes *= 2) {
        int count = (int)(bytes / sizeof(float));
        for (int i = 0; i < count; i++)
            buf[i] = (float)((rank * 3 + i) % 7 - 3);
        for (int i = 0; i < warmup; i++)
            MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double us = (MPI_Wtime() - t0) * 1e6 / iters, sum = 0;
        MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%zu %.3f\n", bytes, sum / size);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
