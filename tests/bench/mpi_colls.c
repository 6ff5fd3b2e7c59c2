/* The reference side of tests/bench/colls_vs_mpi.py: one collective of
 * OpenMPI over the sizes `distlab bench` sweeps, timed as distlab bench
 * times (warm-up, a barrier, then iters calls; the time per call averaged
 * over ranks), as OSU's micro-benchmarks pair them with distlab's:
 *
 *   broadcast       MPI_Bcast                 in place, root 0
 *   reduce          MPI_Reduce                in place at root 0, sum
 *   all_reduce      MPI_Allreduce             in place, sum
 *   all_gather      MPI_Allgather             size / n from each rank
 *   reduce_scatter  MPI_Reduce_scatter_block  size in, size / n out, sum
 *   all_to_all      MPI_Alltoall              size in, size out
 *   gather          MPI_Gather                size / n from each rank to root 0
 *   scatter         MPI_Scatter               size / n to each rank from root 0
 *   barrier         MPI_Barrier               one row, size 0
 *
 * Sizes are nccl-tests' and distlab bench's (lab/proto/sizing.c): float32
 * elements; the whole output of all_gather and gather, the whole input of
 * reduce_scatter, all_to_all and scatter, the one buffer of the others. A
 * size the ranks split is rounded down to a multiple of n elements (at least
 * n), and a size that rounds to a count already measured is skipped, so
 * both sides print the same sizes.
 *
 * usage: mpirun -np N mpi_colls COLL MIN_BYTES MAX_BYTES ITERS WARMUP
 * prints one line per size: "bytes time_us" */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    BCAST,
    REDUCE,
    ALLREDUCE,
    ALLGATHER,
    REDSCAT,
    ALLTOALL,
    GATHER,
    SCATTER,
    BARRIER
} coll_t;

static const char *const names[] = {"broadcast",  "reduce",         "all_reduce",
                                    "all_gather", "reduce_scatter", "all_to_all",
                                    "gather",     "scatter",        "barrier"};

static int split(coll_t c)
{
    return c == ALLGATHER || c == REDSCAT || c == ALLTOALL || c == GATHER || c == SCATTER;
}

/* One call of c on count elements (chunk = count / n where it splits). */
static void call(coll_t c, int rank, float *in, float *out, int count, int chunk)
{
    switch (c) {
    case BCAST:
        MPI_Bcast(in, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        if (rank == 0)
            MPI_Reduce(MPI_IN_PLACE, in, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        else
            MPI_Reduce(in, NULL, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(MPI_IN_PLACE, in, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(in, chunk, MPI_FLOAT, out, chunk, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case REDSCAT:
        MPI_Reduce_scatter_block(in, out, chunk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(in, chunk, MPI_FLOAT, out, chunk, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case GATHER:
        MPI_Gather(in, chunk, MPI_FLOAT, out, chunk, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case SCATTER:
        MPI_Scatter(in, chunk, MPI_FLOAT, out, chunk, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

static void time_one(coll_t c, int rank, int n, float *in, float *out, size_t count, int iters,
                     int warmup)
{
    int chunk = (int)(count / (size_t)n);
    for (size_t i = 0; i < count; i++)
        in[i] = (float)((rank * 3 + (int)i) % 7 - 3);
    for (int i = 0; i < warmup; i++)
        call(c, rank, in, out, (int)count, chunk);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        call(c, rank, in, out, (int)count, chunk);
    double us = (MPI_Wtime() - t0) * 1e6 / (iters > 0 ? iters : 1), sum = 0;
    MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%zu %.3f\n", count * sizeof(float), sum / n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, n = 1, c = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int i = 0; argc > 1 && i < (int)(sizeof(names) / sizeof(names[0])); i++)
        if (strcmp(argv[1], names[i]) == 0)
            c = i;
    if (argc != 6 || c < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_colls COLL MIN_BYTES MAX_BYTES ITERS WARMUP\n");
        MPI_Finalize();
        return 2;
    }
    size_t min = strtoull(argv[2], NULL, 10), max = strtoull(argv[3], NULL, 10);
    int iters = atoi(argv[4]), warmup = atoi(argv[5]);
    /* Inputs and outputs hold at most the largest size, plus one chunk of
     * n elements for the rounding up of the smallest sizes. */
    size_t cap = max / sizeof(float) + (size_t)n;
    float *in = malloc(cap * sizeof(float)), *out = malloc(cap * sizeof(float));
    if (in == NULL || out == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (c == BARRIER) {
        time_one(BARRIER, rank, n, in, out, 0, iters, warmup);
    } else {
        size_t unit = split((coll_t)c) ? (size_t)n : 1, prev = 0;
        for (size_t bytes = min; bytes > 0 && bytes <= max; bytes *= 2) {
            size_t count = bytes / sizeof(float) / unit * unit;
            if (count < unit)
                count = unit;
            if (count != prev)
                time_one((coll_t)c, rank, n, in, out, count, iters, warmup);
            prev = count;
        }
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
