/* How distlab's dtypes and reduce ops map onto MPI's (the mpi backend's
 * private header). Most have an MPI twin; float16 and bfloat16 do not, so
 * they get a 2-byte datatype and user-defined ops that call dl_reduce. */
#ifndef DL_BACKEND_MPI_TYPES_H
#define DL_BACKEND_MPI_TYPES_H

#include <mpi.h>

#include "distlab/dtype.h"
#include "distlab/op.h"

/* Creates the datatypes and ops MPI lacks, on the first call of the
 * process; later calls count users. MPI must be initialised. Returns an
 * MPI error code (MPI_SUCCESS). */
int dl__mpi_types_acquire(void);
/* Frees them when the last user lets go (before MPI_Finalize). */
void dl__mpi_types_release(void);

/* Filled by dl__mpi_types_acquire; read through the two below. */
extern MPI_Datatype dl__mpi_datatypes[DL_DTYPE__COUNT] __attribute__((visibility("hidden")));
extern MPI_Op dl__mpi_ops_by_dtype[DL_DTYPE__COUNT][DL_OP__COUNT]
    __attribute__((visibility("hidden")));

/* The datatype that carries dt (MPI_DATATYPE_NULL for none). Once the
 * types are acquired. */
static inline MPI_Datatype dl__mpi_datatype(dl_dtype_t dt)
{
    return (unsigned)dt < DL_DTYPE__COUNT ? dl__mpi_datatypes[dt] : MPI_DATATYPE_NULL;
}

/* The op that computes op on dt; for avg the sum (the caller divides with
 * dl_op_scale); MPI_OP_NULL for a pair dl_op_check refuses. Once the types
 * are acquired. */
static inline MPI_Op dl__mpi_op(dl_op_t op, dl_dtype_t dt)
{
    return (unsigned)dt < DL_DTYPE__COUNT && (unsigned)op < DL_OP__COUNT
               ? dl__mpi_ops_by_dtype[dt][op]
               : MPI_OP_NULL;
}

#endif
