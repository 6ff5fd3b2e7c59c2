/* Trace events: what a rank records while tracing is on (`--trace FILE`,
 * the shell's `trace on FILE`), and how the records travel to the
 * controller, which writes them as a Chrome/Perfetto trace
 * (lab/session/trace.h).
 *
 * A rank records, with CLOCK_MONOTONIC times in nanoseconds:
 *   - each collective call (COLL): from the start of its first step to the
 *     end of its last, or on a backend without schedules (mpi, nccl) from
 *     just before the library call to just after it (whole);
 *   - each schedule step (STEP), with the bytes this rank sent in it;
 *   - each message of a step that it sends (SEND) or receives (RECV), with
 *     the step's times, the peer's world rank, its bytes and chunk, and its
 *     index among the step's messages (dl_step_describe's order). Both ends
 *     of a message thus name it alike, (ctx, seq, step, msg), without a
 *     word between them.
 *
 * Records go into a buffer that starts small and grows up to a cap; past
 * the cap they are counted as dropped. The rank sends what it holds in
 * "trace" frames once a job or a shell statement ends:
 *
 *   {"type": "trace", "strings": ["ring", "reduce-scatter", ...],
 *    "events": N, "dropped": D}
 *
 * with a blob of N records of LAB_TRACE_WIRE_BYTES each (little endian;
 * algorithm and phase names as indexes into "strings"), and D the records
 * dropped since the last frame. */
#ifndef LAB_PROTO_TRACE_H
#define LAB_PROTO_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "distlab/status.h"

typedef enum {
    LAB_TRACE_COLL, /* a collective call */
    LAB_TRACE_STEP, /* a schedule step */
    LAB_TRACE_SEND, /* a message this rank sent in a step */
    LAB_TRACE_RECV, /* a message it received */
    LAB_TRACE__KINDS
} lab_trace_kind_t;

typedef struct {
    uint8_t kind;   /* lab_trace_kind_t */
    uint8_t coll;   /* dl_coll_t */
    bool whole;     /* COLL: the backend ran it as one call (no steps) */
    uint16_t algo;  /* the schedule's name, or the backend's call: a string index */
    uint16_t phase; /* STEP, SEND, RECV: the step's phase, a string index */
    int32_t peer;   /* SEND: the receiver's world rank; RECV: the sender's */
    int32_t chunk;  /* SEND, RECV: the chunk label, -1 when none */
    uint32_t ctx;   /* the group's context id (0: the world) */
    uint32_t step;  /* 0-based */
    uint32_t steps; /* the schedule's number of steps */
    uint32_t msg;   /* SEND, RECV: the index of the message in its step */
    uint64_t seq;   /* the collective's sequence number on its group */
    uint64_t t0;    /* start, ns; SEND and RECV: their step's */
    uint64_t t1;    /* end, ns */
    /* STEP: bytes this rank sent in it; COLL: in the whole call (0 when
     * whole); SEND, RECV: the message's. */
    uint64_t bytes;
    uint64_t count; /* COLL: the collective's count (coll.h) */
} lab_trace_ev_t;

/* Bytes of one record on the wire. */
#define LAB_TRACE_WIRE_BYTES 72
/* Records per frame, so that a frame stays far below any frame limit. */
#define LAB_TRACE_FRAME_EVENTS 8192
/* The default cap of a rank's buffer. */
#define LAB_TRACE_CAP 1000000
/* The most distinct strings a rank's records may name. */
#define LAB_TRACE_MAX_STRINGS 4096

/* A rank's buffer: records, and the strings they name. Strings are kept by
 * pointer (the schedules' names are static) and never freed. */
typedef struct {
    lab_trace_ev_t *evs;
    size_t n, cap; /* held, allocated */
    size_t max;    /* the most it may hold */
    uint64_t dropped;
    const char **strings;
    size_t n_strings;
} lab_trace_buf_t;

/* A buffer that may hold max records, with room for some already. */
dl_status_t lab_trace_buf_init(lab_trace_buf_t *b, size_t max);
void lab_trace_buf_fini(lab_trace_buf_t *b);
/* A new zeroed record at the end, or NULL when the buffer is full (or
 * cannot grow): the record is counted as dropped. */
lab_trace_ev_t *lab_trace_buf_push(lab_trace_buf_t *b);
/* The index of s among the buffer's strings, added if new. Past
 * LAB_TRACE_MAX_STRINGS every new string is "?" (index 0 is always "?"). */
uint16_t lab_trace_buf_intern(lab_trace_buf_t *b, const char *s);
/* Forgets the records and the count of dropped ones; keeps the strings. */
void lab_trace_buf_clear(lab_trace_buf_t *b);

/* The frame that carries evs[0 .. n) of b (b's strings, and dropped as
 * given): its JSON (NULL when out of memory) and, in *blob_p, a malloc'd
 * blob of n records. */
json_t *lab_trace_frame(const lab_trace_buf_t *b, const lab_trace_ev_t *evs, size_t n,
                        uint64_t dropped, uint8_t **blob_p, size_t *len_p);

/* One record as LAB_TRACE_WIRE_BYTES bytes at out, and back. Decoding
 * checks every field that names something: a known kind and collective,
 * strings below n_strings; DL_ERR_PROTOCOL otherwise (out untouched). */
void lab_trace_encode(const lab_trace_ev_t *ev, uint8_t *out);
dl_status_t lab_trace_decode(const uint8_t *in, size_t n_strings, lab_trace_ev_t *out);

#endif
