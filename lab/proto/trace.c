/* See trace.h. */
#include <stdlib.h>
#include <string.h>

#include "distlab/coll.h"
#include "lab/proto/trace.h"

/* Room for this many records at first: a run or a shell statement needs no
 * more; a benchmark grows the buffer a few times. */
#define FIRST_CAP 4096

dl_status_t lab_trace_buf_init(lab_trace_buf_t *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
    b->cap = max < FIRST_CAP ? max : FIRST_CAP;
    b->evs = malloc((b->cap ? b->cap : 1) * sizeof(*b->evs));
    b->strings = malloc(sizeof(*b->strings));
    if (b->evs == NULL || b->strings == NULL) {
        lab_trace_buf_fini(b);
        return DL_ERR_NOMEM;
    }
    b->strings[b->n_strings++] = "?";
    return DL_OK;
}

void lab_trace_buf_fini(lab_trace_buf_t *b)
{
    free(b->evs);
    free(b->strings);
    memset(b, 0, sizeof(*b));
}

lab_trace_ev_t *lab_trace_buf_push(lab_trace_buf_t *b)
{
    if (b->n == b->cap) {
        size_t cap = b->cap * 2 < b->max ? b->cap * 2 : b->max;
        lab_trace_ev_t *evs = cap > b->cap ? realloc(b->evs, cap * sizeof(*evs)) : NULL;
        if (evs == NULL) {
            b->dropped++;
            return NULL;
        }
        b->evs = evs;
        b->cap = cap;
    }
    lab_trace_ev_t *ev = &b->evs[b->n++];
    memset(ev, 0, sizeof(*ev));
    return ev;
}

uint16_t lab_trace_buf_intern(lab_trace_buf_t *b, const char *s)
{
    if (s == NULL)
        return 0;
    for (size_t i = 0; i < b->n_strings; i++)
        if (b->strings[i] == s || strcmp(b->strings[i], s) == 0)
            return (uint16_t)i;
    if (b->n_strings == LAB_TRACE_MAX_STRINGS)
        return 0;
    const char **grown = realloc(b->strings, (b->n_strings + 1) * sizeof(*grown));
    if (grown == NULL)
        return 0;
    b->strings = grown;
    b->strings[b->n_strings] = s;
    return (uint16_t)b->n_strings++;
}

void lab_trace_buf_clear(lab_trace_buf_t *b)
{
    b->n = 0;
    b->dropped = 0;
}

/* ---- the wire ---- */

static uint8_t *put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}

static const uint8_t *get_u16(const uint8_t *p, uint16_t *v)
{
    *v = (uint16_t)(p[0] | (uint16_t)p[1] << 8);
    return p + 2;
}

static const uint8_t *get_u32(const uint8_t *p, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++)
        *v |= (uint32_t)p[i] << (8 * i);
    return p + 4;
}

static const uint8_t *get_u64(const uint8_t *p, uint64_t *v)
{
    *v = 0;
    for (int i = 0; i < 8; i++)
        *v |= (uint64_t)p[i] << (8 * i);
    return p + 8;
}

void lab_trace_encode(const lab_trace_ev_t *ev, uint8_t *out)
{
    uint8_t *p = out;
    *p++ = ev->kind;
    *p++ = ev->coll;
    *p++ = ev->whole ? 1 : 0;
    *p++ = 0;
    p = put_u16(p, ev->algo);
    p = put_u16(p, ev->phase);
    p = put_u32(p, (uint32_t)ev->peer);
    p = put_u32(p, (uint32_t)ev->chunk);
    p = put_u32(p, ev->ctx);
    p = put_u32(p, ev->step);
    p = put_u32(p, ev->steps);
    p = put_u32(p, ev->msg);
    p = put_u64(p, ev->seq);
    p = put_u64(p, ev->t0);
    p = put_u64(p, ev->t1);
    p = put_u64(p, ev->bytes);
    p = put_u64(p, ev->count);
}

dl_status_t lab_trace_decode(const uint8_t *in, size_t n_strings, lab_trace_ev_t *out)
{
    lab_trace_ev_t ev;
    memset(&ev, 0, sizeof(ev));
    const uint8_t *p = in;
    ev.kind = *p++;
    ev.coll = *p++;
    uint8_t whole = *p++;
    p++;
    uint32_t peer, chunk;
    p = get_u16(p, &ev.algo);
    p = get_u16(p, &ev.phase);
    p = get_u32(p, &peer);
    p = get_u32(p, &chunk);
    p = get_u32(p, &ev.ctx);
    p = get_u32(p, &ev.step);
    p = get_u32(p, &ev.steps);
    p = get_u32(p, &ev.msg);
    p = get_u64(p, &ev.seq);
    p = get_u64(p, &ev.t0);
    p = get_u64(p, &ev.t1);
    p = get_u64(p, &ev.bytes);
    p = get_u64(p, &ev.count);
    ev.whole = whole != 0;
    ev.peer = (int32_t)peer;
    ev.chunk = (int32_t)chunk;
    if (ev.kind >= LAB_TRACE__KINDS || ev.coll >= DL_COLL__COUNT || whole > 1 ||
        ev.algo >= n_strings || ev.phase >= n_strings || ev.t1 < ev.t0)
        return DL_ERR_PROTOCOL;
    *out = ev;
    return DL_OK;
}

json_t *lab_trace_frame(const lab_trace_buf_t *b, const lab_trace_ev_t *evs, size_t n,
                        uint64_t dropped, uint8_t **blob_p, size_t *len_p)
{
    json_t *strings = json_array();
    for (size_t i = 0; strings != NULL && i < b->n_strings; i++)
        if (json_array_append_new(strings, json_string(b->strings[i])) != 0) {
            json_decref(strings);
            strings = NULL;
        }
    uint8_t *blob = malloc(n > 0 ? n * LAB_TRACE_WIRE_BYTES : 1);
    json_t *j = strings != NULL
                    ? json_pack("{s:s, s:o, s:I, s:I}", "type", "trace", "strings", strings,
                                "events", (json_int_t)n, "dropped", (json_int_t)dropped)
                    : NULL;
    if (j == NULL || blob == NULL) {
        json_decref(j);
        free(blob);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        lab_trace_encode(&evs[i], blob + i * LAB_TRACE_WIRE_BYTES);
    *blob_p = blob;
    *len_p = n * LAB_TRACE_WIRE_BYTES;
    return j;
}
