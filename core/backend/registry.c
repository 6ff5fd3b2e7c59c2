/* The backends this binary has, and the ones it was built without. */
#include <string.h>

#include "backend/backend.h"
#include "distlab/backends.h"

static const dl_backend_ops_t *const backends[] = {
    &dl__builtin_ops,
#if DL_HAVE_MPI
    &dl__mpi_ops,
#endif
#if DL_HAVE_NCCL
    &dl__nccl_ops,
#endif
    NULL,
};

static const dl_backend_info_t known[] = {
    {"builtin", true, NULL},
    {"mpi", DL_HAVE_MPI != 0,
     "built without OpenMPI: meson found no ompi-c (install libopenmpi-dev and openmpi-bin, "
     "then reconfigure)"},
    {"nccl", DL_HAVE_NCCL != 0,
     "built without NCCL: meson found no libcudart and libnccl under -Dcudadir (default "
     "/usr/local/cuda)"},
};

const dl_backend_ops_t *dl__backend_find(const char *name)
{
    for (int i = 0; backends[i] != NULL; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

const dl_backend_info_t *dl_backend_list(size_t *n_p)
{
    *n_p = sizeof(known) / sizeof(known[0]);
    return known;
}

static uint32_t caps_of(const char *name, dl_device_type_t dev)
{
    const dl_backend_ops_t *ops = dl__backend_find(name);
    if (ops == NULL || (dev != DL_DEVICE_CPU && dev != DL_DEVICE_CUDA))
        return 0;
    return ops->caps[dev];
}

bool dl_backend_supports_coll(const char *name, dl_coll_t c, dl_device_type_t dev)
{
    return (int)c >= 0 && c < DL_COLL__COUNT && (caps_of(name, dev) & DL_CAP_COLL(c)) != 0;
}

bool dl_backend_supports_p2p(const char *name, dl_device_type_t dev)
{
    return (caps_of(name, dev) & DL_CAP_P2P) != 0;
}

bool dl_backend_steps_schedules(const char *name)
{
    const dl_backend_ops_t *ops = dl__backend_find(name);
    return ops != NULL && ops->schedules;
}

/* The calls the backends make (core/backend/mpi.c, nccl.c), for reports
 * and for step mode's one step per collective. The mpi backend makes the
 * blocking call for a synchronous collective, the non-blocking twin
 * (MPI_Iallreduce, ...) for an async one. */
static const char *const mpi_calls[DL_COLL__COUNT] = {
    [DL_COLL_BROADCAST] = "MPI_Bcast",
    [DL_COLL_SCATTER] = "MPI_Scatter",
    [DL_COLL_GATHER] = "MPI_Gather",
    [DL_COLL_REDUCE] = "MPI_Reduce",
    [DL_COLL_ALL_GATHER] = "MPI_Allgather",
    [DL_COLL_ALL_REDUCE] = "MPI_Allreduce",
    [DL_COLL_REDUCE_SCATTER] = "MPI_Reduce_scatter_block",
    [DL_COLL_ALL_TO_ALL] = "MPI_Alltoall",
    [DL_COLL_BARRIER] = "MPI_Barrier",
};

static const char *const nccl_calls[DL_COLL__COUNT] = {
    [DL_COLL_BROADCAST] = "ncclBroadcast",
    [DL_COLL_SCATTER] = "grouped ncclSend/ncclRecv",
    [DL_COLL_GATHER] = "grouped ncclSend/ncclRecv",
    [DL_COLL_REDUCE] = "ncclReduce",
    [DL_COLL_ALL_GATHER] = "ncclAllGather",
    [DL_COLL_ALL_REDUCE] = "ncclAllReduce",
    [DL_COLL_REDUCE_SCATTER] = "ncclReduceScatter",
    [DL_COLL_ALL_TO_ALL] = "grouped ncclSend/ncclRecv",
    [DL_COLL_BARRIER] = "ncclAllReduce (one element)",
};

const char *dl_backend_call_name(const char *name, dl_coll_t c)
{
    if ((int)c < 0 || c >= DL_COLL__COUNT)
        return NULL;
    if (strcmp(name, "mpi") == 0)
        return mpi_calls[c];
    if (strcmp(name, "nccl") == 0)
        return nccl_calls[c];
    return NULL;
}
