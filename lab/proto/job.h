/* A job: what `distlab run` or `distlab bench` asks every rank to do. The
 * controller builds it from the command line, sends it as JSON, and each
 * rank runs its part. */
#ifndef LAB_JOB_H
#define LAB_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "distlab/coll.h"
#include "distlab/dtype.h"
#include "distlab/op.h"
#include "distlab/tensor.h"

/* What `distlab run` can run: the collectives plus point to point. */
typedef enum {
    LAB_PRIM_COLL, /* one of dl_coll_t */
    LAB_PRIM_SEND,
    LAB_PRIM_RECV,
    LAB_PRIM_ISEND,
    LAB_PRIM_IRECV,
    LAB_PRIM_PINGPONG,
} lab_prim_kind_t;

typedef struct {
    lab_prim_kind_t kind;
    dl_coll_t coll; /* for LAB_PRIM_COLL */
} lab_prim_t;

#define LAB_MAX_NP 256

/* A list of world sizes, "2,4,8" (explain --np, the shell's explain np=),
 * each 1 to LAB_MAX_NP, at most cap of them. */
typedef enum {
    LAB_NPS_OK,
    LAB_NPS_NONE,     /* no size at all */
    LAB_NPS_EMPTY,    /* an empty item: "2,,4", ",2", "2," */
    LAB_NPS_BAD,      /* an item that is no size, or out of range: *bad_p points at it */
    LAB_NPS_TOO_MANY, /* more than cap */
} lab_nps_t;
lab_nps_t lab_nps_parse(const char *s, int *nps, size_t cap, size_t *n_p, const char **bad_p);

typedef struct {
    bool bench;
    lab_prim_t prim;
    int np;
    char algo[32]; /* "" = default */
    dl_dtype_t dtype;
    size_t count;
    dl_op_t op;
    int root;
    double timeout_s;
    char backend[16];        /* "builtin", "mpi", "nccl" */
    dl_device_type_t device; /* where the job's tensors live */
    /* bench only */
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmup;
    bool check;
    /* A root's gather or scatter list: tensors allocated one by one, not
     * views of one buffer (`distlab bench --lists apart`). */
    bool lists_apart;
} lab_job_t;

/* "all_reduce", "send", "pingpong", ... */
const char *lab_prim_name(lab_prim_t p);
dl_status_t lab_prim_parse(const char *name, lab_prim_t *p_p);
/* Every name lab_prim_parse accepts, comma separated. */
const char *lab_prim_all_names(void);
/* The same names one by one: up to cap of them into names; how many. */
size_t lab_prim_names(const char **names, size_t cap);
bool lab_prim_has_root(lab_prim_t p);
bool lab_prim_has_op(lab_prim_t p);

void lab_job_defaults(lab_job_t *job);
json_t *lab_job_to_json(const lab_job_t *job);

/* The job as one shell line (lab/lang's language) that sets up the same
 * tensors a rank of `distlab run` fills, with the same names ("tensor",
 * "input", "scatter_list", ...), sets the job's algorithm, turns step mode
 * on when step is true and runs the primitive, so that a shell session
 * (`distlab run --tui`) shows what `run` does. Point-to-point primitives
 * are spelled per rank (`on 0: send tensor dst=1; on 1: recv ...`). The
 * caller frees it; NULL when out of memory. */
char *lab_job_shell_line(const lab_job_t *job, bool step);
dl_status_t lab_job_from_json(const json_t *j, lab_job_t *job);

#endif
