/* distlab's dtypes and reduce ops as MPI datatypes and ops.
 *
 * Every integer dtype and both wide floats have an MPI twin, and MPI's
 * predefined ops compute what distlab's kernels compute on them (integer
 * sums wrap in both, as two's complement does). Two need more:
 *
 *   bool      carried as MPI_UINT8_T. Its values are 0 or 1, so logical or
 *             (torch's sum and max on bool) is MPI_MAX and logical and
 *             (prod and min) is MPI_MIN; the bitwise ops are the logical
 *             ones on 0/1.
 *   float16,  MPI has no such types. Each is a committed contiguous 2-byte
 *   bfloat16  datatype, and sum, prod, min and max are user-defined
 *             commutative ops that call dl_reduce, which computes in
 *             float32 and rounds to nearest even exactly as the builtin
 *             backend does. One op serves both dtypes: MPI passes the
 *             datatype to the function, which tells them apart.
 *
 * avg is MPI_SUM here; the backend divides the result with dl_op_scale. */
#include <stdbool.h>
#include <stddef.h>

#include "backend/mpi_types.h"

/* ------------------------------------------------------------------------
 * The 16-bit floats
 * ------------------------------------------------------------------------ */

enum { HALF_SUM, HALF_PROD, HALF_MIN, HALF_MAX, HALF__COUNT };

static int users; /* worlds that hold the types below */
static MPI_Datatype f16_type = MPI_DATATYPE_NULL;
static MPI_Datatype bf16_type = MPI_DATATYPE_NULL;
static MPI_Op half_ops[HALF__COUNT] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

/* inout[i] = in[i] op inout[i] for *len elements of *type. MPI gives the
 * two vectors in distinct memory and only our own datatypes reach here, so
 * dl_reduce has nothing to refuse (an MPI user function cannot report an
 * error anyway). */
static void half_reduce(dl_op_t op, void *in, void *inout, const int *len, const MPI_Datatype *type)
{
    dl_dtype_t dt = *type == bf16_type ? DL_BFLOAT16 : DL_FLOAT16;
    (void)dl_reduce(op, dt, inout, inout, in, (size_t)*len);
}

/* MPI_User_function carries no user data, so one function per op. */
#define HALF_FN(name, OP)                                                                          \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)                          \
    {                                                                                              \
        half_reduce(OP, in, inout, len, type);                                                     \
    }
HALF_FN(half_sum, DL_OP_SUM)
HALF_FN(half_prod, DL_OP_PROD)
HALF_FN(half_min, DL_OP_MIN)
HALF_FN(half_max, DL_OP_MAX)

static MPI_User_function *const half_fns[HALF__COUNT] = {half_sum, half_prod, half_min, half_max};

static int make_half_type(MPI_Datatype *type_p, const char *name)
{
    MPI_Datatype t;
    int rc = MPI_Type_contiguous(2, MPI_BYTE, &t);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Type_commit(&t)) != MPI_SUCCESS) {
        MPI_Type_free(&t);
        return rc;
    }
    /* The name shows in MPI's own error messages and tools. */
    MPI_Type_set_name(t, name);
    *type_p = t;
    return MPI_SUCCESS;
}

static void fill_tables(void);

static void free_all(void)
{
    for (int i = 0; i < HALF__COUNT; i++)
        if (half_ops[i] != MPI_OP_NULL)
            MPI_Op_free(&half_ops[i]);
    if (bf16_type != MPI_DATATYPE_NULL)
        MPI_Type_free(&bf16_type);
    if (f16_type != MPI_DATATYPE_NULL)
        MPI_Type_free(&f16_type);
    /* MPI sets freed handles to the null handle, but say it here too. */
    f16_type = bf16_type = MPI_DATATYPE_NULL;
    for (int i = 0; i < HALF__COUNT; i++)
        half_ops[i] = MPI_OP_NULL;
    fill_tables();
}

int dl__mpi_types_acquire(void)
{
    if (users > 0) {
        users++;
        return MPI_SUCCESS;
    }
    int rc;
    if ((rc = make_half_type(&f16_type, "distlab_float16")) != MPI_SUCCESS ||
        (rc = make_half_type(&bf16_type, "distlab_bfloat16")) != MPI_SUCCESS)
        goto err_free_all;
    for (int i = 0; i < HALF__COUNT; i++)
        if ((rc = MPI_Op_create(half_fns[i], 1 /* commutative */, &half_ops[i])) != MPI_SUCCESS)
            goto err_free_all;
    fill_tables();
    users = 1;
    return MPI_SUCCESS;

err_free_all:
    free_all();
    return rc;
}

void dl__mpi_types_release(void)
{
    if (users > 0 && --users == 0)
        free_all();
}

/* ------------------------------------------------------------------------
 * The mapping
 * ------------------------------------------------------------------------ */

static MPI_Datatype datatype_of(dl_dtype_t dt)
{
    switch (dt) {
    case DL_BOOL:
    case DL_UINT8:
        return MPI_UINT8_T;
    case DL_INT8:
        return MPI_INT8_T;
    case DL_INT32:
        return MPI_INT32_T;
    case DL_INT64:
        return MPI_INT64_T;
    case DL_FLOAT16:
        return f16_type;
    case DL_BFLOAT16:
        return bf16_type;
    case DL_FLOAT32:
        return MPI_FLOAT;
    case DL_FLOAT64:
        return MPI_DOUBLE;
    case DL_DTYPE__COUNT:
        break;
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op op_of(dl_op_t op, dl_dtype_t dt)
{
    if (dt == DL_FLOAT16 || dt == DL_BFLOAT16) {
        switch (op) {
        case DL_OP_SUM:
        case DL_OP_AVG:
            return half_ops[HALF_SUM];
        case DL_OP_PROD:
            return half_ops[HALF_PROD];
        case DL_OP_MIN:
            return half_ops[HALF_MIN];
        case DL_OP_MAX:
            return half_ops[HALF_MAX];
        default:
            return MPI_OP_NULL; /* bitwise: refused by dl_op_check */
        }
    }
    if (dt == DL_BOOL) {
        switch (op) {
        case DL_OP_SUM:
        case DL_OP_MAX:
            return MPI_MAX; /* logical or */
        case DL_OP_PROD:
        case DL_OP_MIN:
            return MPI_MIN; /* logical and */
        case DL_OP_BAND:
            return MPI_BAND;
        case DL_OP_BOR:
            return MPI_BOR;
        case DL_OP_BXOR:
            return MPI_BXOR;
        default:
            return MPI_OP_NULL; /* avg: refused by dl_op_check */
        }
    }
    switch (op) {
    case DL_OP_SUM:
    case DL_OP_AVG:
        return MPI_SUM;
    case DL_OP_PROD:
        return MPI_PROD;
    case DL_OP_MIN:
        return MPI_MIN;
    case DL_OP_MAX:
        return MPI_MAX;
    case DL_OP_BAND:
        return MPI_BAND;
    case DL_OP_BOR:
        return MPI_BOR;
    case DL_OP_BXOR:
        return MPI_BXOR;
    case DL_OP__COUNT:
        break;
    }
    return MPI_OP_NULL;
}

MPI_Datatype dl__mpi_datatypes[DL_DTYPE__COUNT];
MPI_Op dl__mpi_ops_by_dtype[DL_DTYPE__COUNT][DL_OP__COUNT];

/* The tables dl__mpi_datatype and dl__mpi_op read, so that a call looks
 * its datatype and op up in one load each. */
static void fill_tables(void)
{
    for (int dt = 0; dt < DL_DTYPE__COUNT; dt++) {
        dl__mpi_datatypes[dt] = datatype_of((dl_dtype_t)dt);
        for (int op = 0; op < DL_OP__COUNT; op++)
            dl__mpi_ops_by_dtype[dt][op] = op_of((dl_op_t)op, (dl_dtype_t)dt);
    }
}
