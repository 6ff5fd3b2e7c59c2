/* The collectives' names and properties (coll.h). */
#include <ctype.h>
#include <stddef.h>

#include "distlab/coll.h"

static const char *const coll_names[DL_COLL__COUNT] = {
    [DL_COLL_BROADCAST] = "broadcast",
    [DL_COLL_SCATTER] = "scatter",
    [DL_COLL_GATHER] = "gather",
    [DL_COLL_REDUCE] = "reduce",
    [DL_COLL_ALL_GATHER] = "all_gather",
    [DL_COLL_ALL_REDUCE] = "all_reduce",
    [DL_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [DL_COLL_ALL_TO_ALL] = "all_to_all",
    [DL_COLL_BARRIER] = "barrier",
};

const char *dl_coll_name(dl_coll_t c)
{
    if ((unsigned)c >= DL_COLL__COUNT)
        return "unknown";
    return coll_names[c];
}

/* Compares ignoring case and the separators '_' and '-', so that
 * "all_reduce", "all-reduce", "allreduce" and "AllReduce" (MPI and NCCL
 * spellings) all name the same collective. */
static int same_name(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_' || *a == '-')
            a++;
        while (*b == '_' || *b == '-')
            b++;
        if (*a == '\0' || *b == '\0')
            return *a == *b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        a++;
        b++;
    }
}

dl_status_t dl_coll_parse(const char *name, dl_coll_t *c_p)
{
    if (name == NULL || *name == '\0')
        return DL_ERR_INVALID;
    for (int c = 0; c < DL_COLL__COUNT; c++) {
        if (same_name(name, coll_names[c])) {
            *c_p = (dl_coll_t)c;
            return DL_OK;
        }
    }
    return DL_ERR_INVALID;
}

int dl_coll_has_root(dl_coll_t c)
{
    return c == DL_COLL_BROADCAST || c == DL_COLL_SCATTER || c == DL_COLL_GATHER ||
           c == DL_COLL_REDUCE;
}

int dl_coll_has_op(dl_coll_t c)
{
    return c == DL_COLL_REDUCE || c == DL_COLL_ALL_REDUCE || c == DL_COLL_REDUCE_SCATTER;
}
