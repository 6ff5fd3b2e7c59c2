/* One schedule step as data: who sends which elements to whom.
 *
 * A step of a schedule (sched.h) is a set of actions in the schedule's own
 * terms: communicator ranks, regions without lengths, a combine flag. A
 * description is the same step as a reader sees it: each message with its
 * kind, its world ranks, its chunk, the element ranges it reads and writes
 * and its bytes. `explain` prints descriptions, the ranks send them to the
 * shell in step mode (as JSON), and views draw them: an arrow from src_rank
 * to dst_rank, the elements of dst lit up.
 *
 * One formatter writes a message as a line, the same everywhere (each line
 * here as it prints alone; the lines of a step share their columns):
 *
 *   r0 -> r1  chunk 2  reduce  16 B  in[4:6] -> in[4:6]
 *   r0 -> r1  reduce  48 B  in[0:6] -> tmp[0:6] (with in[0:6])
 *   r2 local  chunk 2  copy  8 B  in[0:2] -> out[4:6]
 *   r0 local  scale  32 B  in[0:8] / 4
 *   r2 -> r0  signal
 *   r1 -> r0  reduce  8 B  in[0:2] -> in[0:2]  eager
 *   r1 -> r0  chunk 0  reduce  4 MiB  in[0:1048576] -> in[0:1048576]  write-back
 *
 * A range is written as a Python slice, first element included and end
 * excluded: in[4:6] is elements 4 and 5 of IN. "(with R)" names a reduce's
 * other operand when it is not the destination itself: dst = R op src.
 * "eager" marks a message copied when it is posted, whose sender may write
 * what it sends in the same step (sched.h); "write-back" one whose receiver
 * writes its result back into what the sender sent, at the end of the step
 * (sched.h, step 4). */
#ifndef DISTLAB_STEPDESC_H
#define DISTLAB_STEPDESC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "distlab/sched.h"
#include "distlab/status.h"

typedef enum {
    DL_MSG_COPY,         /* a message: src_rank's src -> dst_rank's dst, copied */
    DL_MSG_REDUCE,       /* a message: on dst_rank, dst = acc op (what src_rank sent) */
    DL_MSG_LOCAL_COPY,   /* on one rank (src_rank == dst_rank): dst = src */
    DL_MSG_LOCAL_REDUCE, /* on one rank: dst = acc op src */
    DL_MSG_LOCAL_SCALE,  /* on one rank: dst /= divisor (finishes an avg); src is dst */
    DL_MSG__COUNT
} dl_msg_kind_t;

/* Elements [first, first + count) of one of a rank's buffers. */
typedef struct {
    dl_buf_t buf;
    size_t first;
    size_t count;
} dl_range_t;

typedef struct {
    dl_msg_kind_t kind;
    int src_rank;   /* the sender, or the rank acting (local kinds) */
    int dst_rank;   /* the receiver, or the rank acting (local kinds) */
    int chunk;      /* a label for display ("chunk 2"); -1 when none */
    dl_range_t src; /* read on src_rank */
    dl_range_t dst; /* written on dst_rank */
    dl_range_t acc; /* the REDUCE kinds' other operand, on dst_rank (== dst when in place);
                     * all zero for the other kinds */
    size_t bytes;   /* what the message carries (src.count elements); a message of 0
                     * bytes is a signal (a barrier's) */
    int divisor;    /* LOCAL_SCALE: what dst is divided by; 0 for the other kinds */
    bool eager;     /* copied when posted: its sender may write src in the step (sched.h) */
    bool back;      /* dst_rank writes its dst back into src_rank's src (sched.h, step 4) */
} dl_msg_desc_t;

typedef struct {
    char *phase;         /* "reduce-scatter", ... (owned) */
    int k, n;            /* step k (1-based) of n */
    dl_msg_desc_t *msgs; /* the messages in action order, then the local actions in action
                          * order: the order in which a rank runs them */
    size_t n_msgs;
} dl_step_desc_t;

/* "in", "out", "tmp"; "?" for anything else. */
const char *dl_buf_name(dl_buf_t b);
/* "copy", "reduce", "local_copy", "local_reduce", "scale" (the JSON names). */
const char *dl_msg_kind_name(dl_msg_kind_t kind);
/* Whether the kind is a local action on one rank rather than a message. */
bool dl_msg_is_local(dl_msg_kind_t kind);

/* Describes step `step` (0-based) of s, with elem_size-byte elements.
 * world_ranks maps communicator ranks to the ranks written in the
 * description (NULL: the communicator's own, written as they are).
 * Errors: DL_ERR_INVALID for a step out of range, or with world_ranks for
 * an action naming a rank outside the communicator; DL_ERR_NOMEM. *out is
 * set only on success; free it with dl_step_desc_free. */
dl_status_t dl_step_describe(const dl_sched_t *s, size_t step, size_t elem_size,
                             const int *world_ranks, dl_step_desc_t *out);
/* Frees what d holds and leaves it all zero; a zeroed d is fine too. */
void dl_step_desc_free(dl_step_desc_t *d);

/* {"phase": "reduce-scatter", "k": 1, "n": 4, "msgs": [{"kind": "reduce",
 *  "src_rank": 0, "dst_rank": 1, "chunk": 0, "src": {"buf": "in", "first": 0,
 *  "count": 2}, "dst": {...}, "acc": {...}, "bytes": 16}, ...]}: "acc" only
 * for the reduce kinds, "divisor" only for scale. NULL when out of memory. */
json_t *dl_step_desc_to_json(const dl_step_desc_t *d);
/* The reverse, for JSON from the network: every field present with its
 * type, k in 1..n, ranks in 0..nranks-1 (one rank for a local action),
 * ranges that do not overflow and whose counts agree, a divisor >= 1 for
 * scale. Anything else is DL_ERR_PROTOCOL; keys it does not know are
 * ignored. *out is set only on success. */
dl_status_t dl_step_desc_from_json(const json_t *j, int nranks, dl_step_desc_t *out);

/* ---- the one text form of a message ---- */

/* Column widths, so that the lines of a step (or of a schedule) line up.
 * All zero: no padding. */
typedef struct {
    int rank;  /* "r12" */
    int chunk; /* "chunk 2"; 0 when no message has a chunk: the column is left out */
    int kind;  /* "copy", "reduce", "scale" */
    int bytes; /* "16 B" */
} dl_msg_widths_t;

/* Widens w to fit m, or every message of d. */
void dl_msg_widths_fit(dl_msg_widths_t *w, const dl_msg_desc_t *m);
void dl_step_desc_widths(const dl_step_desc_t *d, dl_msg_widths_t *w);

/* Writes the line of m (as at the top of this file: no indent, no newline,
 * no trailing spaces) into buf, like snprintf: returns the length of the
 * whole line, and buf holds as much of it as fits in cap. w may be NULL. */
size_t dl_msg_format(const dl_msg_desc_t *m, const dl_msg_widths_t *w, char *buf, size_t cap);

/* 16 B, 4 KiB, 1.5 MiB: how the line writes bytes (exact values without
 * decimals). Returns buf. */
const char *dl_bytes_format(size_t bytes, char *buf, size_t cap);

#endif
