/* The backends distlab knows: builtin, in every binary, and the mpi and
 * nccl modules, which a build without their libraries lacks and which may
 * fail to load (a library gone since, a module not installed). */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "base/module.h"
#include "distlab/backends.h"

typedef struct {
    const char *name;
    bool in_build; /* meson found its libraries and built its module */
    const char *why_not_in_build;
} known_t;

static const known_t known[] = {
    {"builtin", true, NULL},
    {"mpi", DL_HAVE_MPI != 0,
     "built without OpenMPI: meson found no ompi-c (install libopenmpi-dev and openmpi-bin, "
     "then reconfigure)"},
    {"nccl", DL_HAVE_NCCL != 0,
     "built without NCCL: meson found no libcudart and libnccl under -Dcudadir (default "
     "/usr/local/cuda)"},
};
enum { N_KNOWN = sizeof(known) / sizeof(known[0]) };

const dl_backend_ops_t *dl__backend_find(const char *name, char *why, size_t cap)
{
    for (size_t i = 0; i < N_KNOWN; i++) {
        if (strcmp(known[i].name, name) != 0)
            continue;
        if (strcmp(name, "builtin") == 0)
            return &dl__builtin_ops;
        if (!known[i].in_build) {
            snprintf(why, cap, "%s", known[i].why_not_in_build);
            return NULL;
        }
        char symbol[32];
        snprintf(symbol, sizeof(symbol), "dl__%s_ops", name);
        return dl__module_symbol(name, symbol, why, cap);
    }
    snprintf(why, cap, "unknown backend");
    return NULL;
}

const dl_backend_info_t *dl_backend_list(size_t *n_p)
{
    /* Filled on each call: a module is loaded (or fails) once, so the
     * answers do not change, and the reasons live as long as the process. */
    static dl_backend_info_t list[N_KNOWN];
    static char why[N_KNOWN][600];
    for (size_t i = 0; i < N_KNOWN; i++) {
        const dl_backend_ops_t *ops = dl__backend_find(known[i].name, why[i], sizeof(why[i]));
        list[i] = (dl_backend_info_t){known[i].name, ops != NULL, ops != NULL ? NULL : why[i]};
    }
    *n_p = N_KNOWN;
    return list;
}

const char *const *dl_backend_names(size_t *n_p)
{
    static const char *names[N_KNOWN];
    for (size_t i = 0; i < N_KNOWN; i++)
        names[i] = known[i].name;
    *n_p = N_KNOWN;
    return names;
}

bool dl_backend_available(const char *name, char *why, size_t cap)
{
    return dl__backend_find(name, why, cap) != NULL;
}

static uint32_t caps_of(const char *name, dl_device_type_t dev)
{
    char why[600];
    const dl_backend_ops_t *ops = dl__backend_find(name, why, sizeof(why));
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

dl_status_t dl_backend_check_op(const char *name, dl_op_t op, dl_dtype_t dt, const char **why_p)
{
    char why[600];
    const dl_backend_ops_t *ops = dl__backend_find(name, why, sizeof(why));
    *why_p = NULL;
    if (ops == NULL || ops->check_op == NULL)
        return DL_OK; /* nothing of its own to refuse, or refused elsewhere */
    return ops->check_op(op, dt, why_p);
}

bool dl_backend_steps_schedules(const char *name)
{
    char why[600];
    const dl_backend_ops_t *ops = dl__backend_find(name, why, sizeof(why));
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

const char *const *dl__backend_call_names(const char *name)
{
    if (strcmp(name, "mpi") == 0)
        return mpi_calls;
    if (strcmp(name, "nccl") == 0)
        return nccl_calls;
    return NULL;
}

const char *dl_backend_call_name(const char *name, dl_coll_t c)
{
    const char *const *calls = dl__backend_call_names(name);
    if (calls == NULL || (int)c < 0 || c >= DL_COLL__COUNT)
        return NULL;
    return calls[c];
}

/* ------------------------------------------------------------------------
 * Joining mpirun's world (the mpi module's mpi_join.c)
 * ------------------------------------------------------------------------ */

dl_status_t dl_mpi_join(char *buf, size_t n, char *why, size_t cap)
{
    if (!DL_HAVE_MPI) {
        snprintf(why, cap, "%s", known[1].why_not_in_build);
        return DL_ERR_UNSUPPORTED;
    }
    void (*join)(char *, size_t) =
        (void (*)(char *, size_t))dl__module_symbol("mpi", "dl__mpi_join", why, cap);
    if (join == NULL)
        return DL_ERR_UNSUPPORTED;
    join(buf, n);
    return DL_OK;
}

void dl_mpi_leave(void)
{
    void (*leave)(void) = (void (*)(void))dl__module_symbol("mpi", "dl__mpi_leave", NULL, 0);
    if (leave != NULL)
        leave();
}
