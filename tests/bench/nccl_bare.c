/* The reference side of tests/bench/nccl_overhead.sh: a bare ncclAllReduce
 * loop (float32, in place, as distlab's all_reduce is) in one process over
 * NGPUS GPUs (ncclCommInitAll), with distlab bench's defaults: WARMUP
 * untimed calls, then ITERS timed ones. Two times per call are printed:
 *
 *   event_us   nccl-tests' way: the ITERS calls are queued back to back and
 *              timed with CUDA events on the GPU (launches overlap);
 *   synced_us  distlab's way: each call is waited for on the host before
 *              the next is queued, timed with the host's clock.
 *
 * With one rank NCCL has nothing to exchange: an in-place sum, min, max or
 * prod does nothing at all (the time is NCCL's call alone), an avg
 * multiplies the buffer by 1/1 in one kernel, so it reads and writes every
 * byte once; out of place (-O) it is a copy.
 *
 * usage: nccl_bare [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
 *                  [-o sum|prod|min|max|avg] [-g NGPUS] [-O]
 * sizes take K, M, G suffixes; prints one line per size:
 *   "bytes event_us synced_us algbw_gbps busbw_gbps" (busbw from event_us) */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define MAX_GPUS 64

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "nccl_bare: %s failed: %s\n", #call, cudaGetErrorString(err_));        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define NCCL_CHECK(call)                                                                           \
    do {                                                                                           \
        ncclResult_t res_ = (call);                                                                \
        if (res_ != ncclSuccess) {                                                                 \
            fprintf(stderr, "nccl_bare: %s failed: %s\n", #call, ncclGetErrorString(res_));        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static size_t parse_size(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K':
    case 'k':
        v *= 1 << 10;
        break;
    case 'M':
    case 'm':
        v *= 1 << 20;
        break;
    case 'G':
    case 'g':
        v *= 1 << 30;
        break;
    default:
        break;
    }
    return (size_t)v;
}

static int parse_op(const char *s, ncclRedOp_t *op_p)
{
    static const struct {
        const char *name;
        ncclRedOp_t op;
    } ops[] = {
        {"sum", ncclSum}, {"prod", ncclProd}, {"min", ncclMin}, {"max", ncclMax}, {"avg", ncclAvg}};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(s, ops[i].name) == 0) {
            *op_p = ops[i].op;
            return 0;
        }
    return -1;
}

typedef struct {
    int ngpus;
    ncclComm_t comms[MAX_GPUS];
    cudaStream_t streams[MAX_GPUS];
    float *bufs[MAX_GPUS], *outs[MAX_GPUS];
    cudaEvent_t start[MAX_GPUS], stop[MAX_GPUS];
} world_t;

/* One all_reduce on every GPU, queued as one group. */
static void all_reduce(world_t *w, size_t count, ncclRedOp_t op)
{
    NCCL_CHECK(ncclGroupStart());
    for (int g = 0; g < w->ngpus; g++)
        NCCL_CHECK(ncclAllReduce(w->bufs[g], w->outs[g], count, ncclFloat32, op, w->comms[g],
                                 w->streams[g]));
    NCCL_CHECK(ncclGroupEnd());
}

static void sync_all(world_t *w)
{
    for (int g = 0; g < w->ngpus; g++) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaStreamSynchronize(w->streams[g]));
    }
}

int main(int argc, char **argv)
{
    size_t min = 1 << 30, max = 0;
    double factor = 2;
    int iters = 20, warmup = 5, ngpus = 1, opt;
    bool in_place = true;
    const char *op_name = "sum";
    ncclRedOp_t op = ncclSum;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:o:g:O")) != -1) {
        switch (opt) {
        case 'b':
            min = parse_size(optarg);
            break;
        case 'e':
            max = parse_size(optarg);
            break;
        case 'f':
            factor = strtod(optarg, NULL);
            break;
        case 'n':
            iters = atoi(optarg);
            break;
        case 'w':
            warmup = atoi(optarg);
            break;
        case 'o':
            op_name = optarg;
            if (parse_op(optarg, &op) != 0) {
                fprintf(stderr, "nccl_bare: unknown op '%s'\n", optarg);
                return 2;
            }
            break;
        case 'g':
            ngpus = atoi(optarg);
            break;
        case 'O':
            in_place = false;
            break;
        default:
            fprintf(stderr, "usage: nccl_bare [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] "
                            "[-w WARMUP] [-o sum|prod|min|max|avg] [-g NGPUS] [-O]\n");
            return 2;
        }
    }
    if (max < min)
        max = min;
    if (iters < 1 || warmup < 0 || factor <= 1 || min < sizeof(float)) {
        fprintf(stderr, "nccl_bare: need -n >= 1, -w >= 0, -f > 1 and -b >= 4\n");
        return 2;
    }
    int have = 0;
    CUDA_CHECK(cudaGetDeviceCount(&have));
    if (ngpus < 1 || ngpus > have || ngpus > MAX_GPUS) {
        fprintf(stderr, "nccl_bare: -g %d, and this machine has %d GPUs\n", ngpus, have);
        return 1;
    }

    world_t w = {.ngpus = ngpus};
    int devs[MAX_GPUS];
    for (int g = 0; g < ngpus; g++) {
        devs[g] = g;
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaStreamCreateWithFlags(&w.streams[g], cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreate(&w.start[g]));
        CUDA_CHECK(cudaEventCreate(&w.stop[g]));
        CUDA_CHECK(cudaMalloc((void **)&w.bufs[g], max));
        CUDA_CHECK(cudaMemset(w.bufs[g], 0, max));
        w.outs[g] = w.bufs[g];
        if (!in_place) {
            CUDA_CHECK(cudaMalloc((void **)&w.outs[g], max));
            CUDA_CHECK(cudaMemset(w.outs[g], 0, max));
        }
    }
    NCCL_CHECK(ncclCommInitAll(w.comms, ngpus, devs));
    int version = 0;
    NCCL_CHECK(ncclGetVersion(&version));

    printf("# nccl_bare: ncclAllReduce float32 %s %s, NCCL %d, %d GPU(s), %d iterations after "
           "%d warm-up\n",
           op_name, in_place ? "in place" : "out of place", version, ngpus, iters, warmup);
    printf("# %12s %12s %12s %10s %10s\n", "bytes", "event_us", "synced_us", "algbw", "busbw");
    for (double size = (double)min; size <= (double)max; size *= factor) {
        size_t count = (size_t)size / sizeof(float), bytes = count * sizeof(float);
        for (int i = 0; i < warmup; i++)
            all_reduce(&w, count, op);
        sync_all(&w);

        /* Back to back, timed on the GPU. */
        for (int g = 0; g < ngpus; g++)
            CUDA_CHECK(cudaEventRecord(w.start[g], w.streams[g]));
        for (int i = 0; i < iters; i++)
            all_reduce(&w, count, op);
        for (int g = 0; g < ngpus; g++)
            CUDA_CHECK(cudaEventRecord(w.stop[g], w.streams[g]));
        sync_all(&w);
        float ms = 0;
        for (int g = 0; g < ngpus; g++) {
            float gms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&gms, w.start[g], w.stop[g]));
            ms = gms > ms ? gms : ms;
        }
        double event_us = ms * 1e3 / iters;

        /* Each call waited for before the next, timed on the host. */
        double t0 = now_us();
        for (int i = 0; i < iters; i++) {
            all_reduce(&w, count, op);
            sync_all(&w);
        }
        double synced_us = (now_us() - t0) / iters;

        double algbw = (double)bytes / event_us * 1e-3;
        double busbw = algbw * 2.0 * (ngpus - 1) / ngpus;
        printf("%14zu %12.2f %12.2f %10.2f %10.2f\n", bytes, event_us, synced_us, algbw, busbw);
        fflush(stdout);
    }

    for (int g = 0; g < ngpus; g++) {
        ncclCommDestroy(w.comms[g]);
        CUDA_CHECK(cudaSetDevice(g));
        if (!in_place)
            cudaFree(w.outs[g]);
        cudaFree(w.bufs[g]);
        cudaEventDestroy(w.start[g]);
        cudaEventDestroy(w.stop[g]);
        cudaStreamDestroy(w.streams[g]);
    }
    return 0;
}
