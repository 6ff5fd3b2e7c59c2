/* The session's trace: the ranks' trace records (lab/proto/trace.h),
 * folded from their "trace" frames, written as a Chrome/Perfetto trace in
 * the JSON trace-event format (chrome://tracing and ui.perfetto.dev open
 * it):
 *
 *   {"displayTimeUnit": "ns", "otherData": {...}, "traceEvents": [...]}
 *
 * One process (pid 1) holds one thread per rank (tid rank + 1, as a tid
 * of 0 means none to Perfetto; named "rank N" and sorted by rank), so that
 * Perfetto shows every rank as a track of one group, one under the other
 * in rank order, with the arrows between them inside the group:
 *   - a complete slice ("ph": "X") per collective call, and inside it one
 *     per schedule step ("all_reduce ring step 3/6 reduce-scatter"), with
 *     the collective, algorithm, step, phase and bytes sent in args; a
 *     backend without schedules (mpi, nccl) has the call's slice alone;
 *   - a flow arrow per message, from the start of the sender's step slice
 *     ("ph": "s") to the end of the receiver's ("ph": "f", "bp": "e"), with
 *     one id on both ends made from what both ranks know alike: the world,
 *     the group, the collective's sequence number, the step and the
 *     message's index in it.
 * Times are in microseconds (floats, to the nanosecond), counted from the
 * earliest event. Ranks on one host share CLOCK_MONOTONIC; ranks on other
 * hosts have clocks of their own, and their events are placed as their
 * clocks say (no skew is corrected). */
#ifndef LAB_SESSION_TRACE_H
#define LAB_SESSION_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/frame.h"
#include "distlab/status.h"
#include "lab/proto/trace.h"

typedef struct lab_trace lab_trace_t;

/* A trace that keeps at most max records per rank of each world (past it,
 * records are counted as dropped). */
dl_status_t lab_trace_new(size_t max, lab_trace_t **t_p);
void lab_trace_free(lab_trace_t *t);

/* Folds a "trace" frame of rank `rank` of world `world` (the model's
 * generation: a restarted world numbers its collectives afresh). A
 * malformed frame is DL_ERR_PROTOCOL and adds nothing. */
dl_status_t lab_trace_fold(lab_trace_t *t, int world, int rank, const dl_frame_t *f);
/* Records held, over every rank. */
size_t lab_trace_count(const lab_trace_t *t);
/* The records that did not fit (on the ranks or here), over every rank;
 * with a line for people in buf when there are any: "rank 2 dropped 1500
 * events (past 1000000 per rank)". */
uint64_t lab_trace_dropped(const lab_trace_t *t, char *buf, size_t cap);

/* Writes the trace to path: into a temporary file beside it, renamed over
 * path once whole, so that path is never half written; where path is not
 * a regular file (a symbolic link, a FIFO, /dev/stdout), through it. title
 * names the process ("distlab run all_reduce"). On failure, one line in
 * why. */
dl_status_t lab_trace_write(lab_trace_t *t, const char *path, const char *title, char *why,
                            size_t cap);
/* Whether a trace can be written to path: it is not a directory, and a
 * file can be made beside it (a regular file, or none yet) or it takes
 * writes (anything else). Otherwise false, with the reason in why ("No
 * such file or directory"). */
bool lab_trace_path_ok(const char *path, char *why, size_t cap);

#endif
