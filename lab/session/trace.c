/* See trace.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "distlab/coll.h"
#include "lab/session/trace.h"

/* The records of one rank of one world. */
typedef struct {
    int world, rank;
    lab_trace_ev_t *evs;
    size_t n, cap;
    uint64_t dropped;
} lane_t;

struct lab_trace {
    size_t max;
    lane_t *lanes;
    size_t n_lanes;
    /* Every rank's strings in one pool: the records' algo and phase index
     * it once folded. */
    char **strings;
    size_t n_strings;
};

dl_status_t lab_trace_new(size_t max, lab_trace_t **t_p)
{
    lab_trace_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return DL_ERR_NOMEM;
    t->max = max;
    t->strings = malloc(sizeof(*t->strings));
    if (t->strings == NULL || (t->strings[0] = strdup("?")) == NULL) {
        free(t->strings);
        free(t);
        return DL_ERR_NOMEM;
    }
    t->n_strings = 1;
    *t_p = t;
    return DL_OK;
}

void lab_trace_free(lab_trace_t *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_lanes; i++)
        free(t->lanes[i].evs);
    free(t->lanes);
    for (size_t i = 0; i < t->n_strings; i++)
        free(t->strings[i]);
    free(t->strings);
    free(t);
}

/* ---- folding ---- */

static lane_t *lane_of(lab_trace_t *t, int world, int rank)
{
    for (size_t i = 0; i < t->n_lanes; i++)
        if (t->lanes[i].world == world && t->lanes[i].rank == rank)
            return &t->lanes[i];
    lane_t *grown = realloc(t->lanes, (t->n_lanes + 1) * sizeof(*grown));
    if (grown == NULL)
        return NULL;
    t->lanes = grown;
    lane_t *l = &t->lanes[t->n_lanes++];
    memset(l, 0, sizeof(*l));
    l->world = world;
    l->rank = rank;
    return l;
}

/* The pool's index of s: 0 ("?") when the pool is full or out of memory. */
static uint16_t pool_index(lab_trace_t *t, const char *s)
{
    for (size_t i = 0; i < t->n_strings; i++)
        if (strcmp(t->strings[i], s) == 0)
            return (uint16_t)i;
    if (t->n_strings > UINT16_MAX)
        return 0;
    char **grown = realloc(t->strings, (t->n_strings + 1) * sizeof(*grown));
    if (grown == NULL)
        return 0;
    t->strings = grown;
    if ((t->strings[t->n_strings] = strdup(s)) == NULL)
        return 0;
    return (uint16_t)t->n_strings++;
}

dl_status_t lab_trace_fold(lab_trace_t *t, int world, int rank, const dl_frame_t *f)
{
    json_t *strings = json_object_get(f->json, "strings");
    json_t *events = json_object_get(f->json, "events");
    json_t *dropped = json_object_get(f->json, "dropped");
    size_t n_strings = json_array_size(strings);
    if (!json_is_array(strings) || n_strings == 0 || n_strings > LAB_TRACE_MAX_STRINGS ||
        !json_is_integer(events) || json_integer_value(events) < 0 || !json_is_integer(dropped) ||
        json_integer_value(dropped) < 0 ||
        (size_t)json_integer_value(events) > f->blob_len / LAB_TRACE_WIRE_BYTES ||
        (size_t)json_integer_value(events) * LAB_TRACE_WIRE_BYTES != f->blob_len)
        return DL_ERR_PROTOCOL;
    size_t n = (size_t)json_integer_value(events);
    /* The frame's strings as the pool's. */
    uint16_t *map = malloc(n_strings * sizeof(*map));
    lab_trace_ev_t *evs = malloc((n > 0 ? n : 1) * sizeof(*evs));
    dl_status_t st = map != NULL && evs != NULL ? DL_OK : DL_ERR_NOMEM;
    for (size_t i = 0; st == DL_OK && i < n_strings; i++) {
        const char *s = json_string_value(json_array_get(strings, i));
        if (s == NULL)
            st = DL_ERR_PROTOCOL;
        else
            map[i] = pool_index(t, s);
    }
    for (size_t i = 0; st == DL_OK && i < n; i++) {
        st = lab_trace_decode(f->blob + i * LAB_TRACE_WIRE_BYTES, n_strings, &evs[i]);
        if (st == DL_OK) {
            evs[i].algo = map[evs[i].algo];
            evs[i].phase = map[evs[i].phase];
        }
    }
    lane_t *l = st == DL_OK ? lane_of(t, world, rank) : NULL;
    if (st == DL_OK && l == NULL)
        st = DL_ERR_NOMEM;
    if (st != DL_OK) {
        free(map);
        free(evs);
        return st;
    }
    l->dropped += (uint64_t)json_integer_value(dropped);
    size_t keep = l->n + n <= t->max ? n : t->max - l->n;
    l->dropped += n - keep;
    if (l->n + keep > l->cap) {
        size_t cap = l->cap ? l->cap : 1024;
        while (cap < l->n + keep)
            cap *= 2;
        lab_trace_ev_t *grown = realloc(l->evs, cap * sizeof(*grown));
        if (grown == NULL) {
            l->dropped += keep;
            keep = 0;
        } else {
            l->evs = grown;
            l->cap = cap;
        }
    }
    memcpy(l->evs + l->n, evs, keep * sizeof(*evs));
    l->n += keep;
    free(map);
    free(evs);
    return DL_OK;
}

size_t lab_trace_count(const lab_trace_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_lanes; i++)
        n += t->lanes[i].n;
    return n;
}

uint64_t lab_trace_dropped(const lab_trace_t *t, char *buf, size_t cap)
{
    uint64_t total = 0;
    size_t len = 0;
    if (cap > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < t->n_lanes; i++) {
        const lane_t *l = &t->lanes[i];
        if (l->dropped == 0)
            continue;
        total += l->dropped;
        if (len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%srank %d dropped %" PRIu64 " events",
                                    len ? ", " : "", l->rank, l->dropped);
    }
    if (total > 0 && len < cap)
        snprintf(buf + len, cap - len, " (past %zu per rank)", t->max);
    return total;
}

/* ---- writing ---- */

/* Within a rank: by start; of two that start together the longer first
 * (it encloses the other), and a collective before its steps. */
static int ev_cmp(const void *a, const void *b)
{
    const lab_trace_ev_t *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1)
        return x->t1 > y->t1 ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

/* A flow's id, alike on both ends of a message: a hash of what names the
 * message, written as 16 hex digits (Perfetto reads a string id as hex). */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void flow_id(int world, const lab_trace_ev_t *ev, char *buf, size_t cap)
{
    uint64_t h = mix((uint64_t)(uint32_t)world + 0x9e3779b97f4a7c15ull);
    h = mix(h ^ ev->ctx);
    h = mix(h ^ ev->seq);
    h = mix(h ^ ev->step);
    h = mix(h ^ ev->msg);
    snprintf(buf, cap, "%016" PRIx64, h);
}

typedef struct {
    FILE *f;
    uint64_t base; /* ns: the earliest event */
    bool first;
    bool failed;
} writer_t;

static double us(uint64_t ns)
{
    return (double)ns / 1e3;
}

/* Writes one event (taking ev's reference): each is encoded alone, so that
 * a trace of millions of events is never held whole in memory. */
static void put(writer_t *w, json_t *ev)
{
    if (ev == NULL) {
        w->failed = true;
        return;
    }
    if (!w->first)
        fputs(",\n", w->f);
    w->first = false;
    if (json_dumpf(ev, w->f, JSON_COMPACT | JSON_REAL_PRECISION(15)) != 0)
        w->failed = true;
    json_decref(ev);
}

/* A rank's thread: rank + 1, as Perfetto takes a tid of 0 for "none"
 * and puts such events on the process's own track. */
static int tid_of(int rank)
{
    return rank + 1;
}

static const char *str(const lab_trace_t *t, uint16_t i)
{
    return i < t->n_strings ? t->strings[i] : "?";
}

static void put_slice(writer_t *w, const lab_trace_t *t, const lane_t *l, const lab_trace_ev_t *ev)
{
    const char *coll = dl_coll_name((dl_coll_t)ev->coll), *algo = str(t, ev->algo);
    char name[256];
    json_t *args;
    const char *cat;
    if (ev->kind == LAB_TRACE_COLL) {
        cat = "collective";
        snprintf(name, sizeof(name), "%s %s", coll, algo);
        if (ev->whole)
            args = json_pack("{s:s, s:s, s:I, s:I, s:I}", "collective", coll, "call", algo, "seq",
                             (json_int_t)ev->seq, "group", (json_int_t)ev->ctx, "count",
                             (json_int_t)ev->count);
        else
            args = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "collective", coll, "algorithm",
                             algo, "steps", (json_int_t)ev->steps, "seq", (json_int_t)ev->seq,
                             "group", (json_int_t)ev->ctx, "count", (json_int_t)ev->count,
                             "bytes_sent", (json_int_t)ev->bytes);
    } else {
        cat = "step";
        const char *phase = str(t, ev->phase);
        snprintf(name, sizeof(name), "%s %s step %u/%u %s", coll, algo, ev->step + 1, ev->steps,
                 phase);
        args = json_pack("{s:s, s:s, s:I, s:I, s:s, s:I, s:I, s:I}", "collective", coll,
                         "algorithm", algo, "step", (json_int_t)ev->step + 1, "steps",
                         (json_int_t)ev->steps, "phase", phase, "bytes_sent", (json_int_t)ev->bytes,
                         "seq", (json_int_t)ev->seq, "group", (json_int_t)ev->ctx);
    }
    if (args == NULL) {
        w->failed = true;
        return;
    }
    put(w, json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "name", name, "cat", cat, "ph",
                     "X", "pid", 1, "tid", tid_of(l->rank), "ts", us(ev->t0 - w->base), "dur",
                     us(ev->t1 - ev->t0), "args", args));
}

/* One end of a message's arrow. The sender posts its messages as its step
 * starts, and the receiver's step ends once they have arrived: the arrow
 * starts a nanosecond into the sender's step slice and ends a nanosecond
 * before the end of the receiver's, inside both ("s", and "f" with "bp":
 * "e", bind to the slice that encloses them) and in the order of the
 * events (a viewer that reads the end before the start drops the arrow). */
static void put_flow(writer_t *w, const lane_t *l, const lab_trace_ev_t *ev)
{
    bool send = ev->kind == LAB_TRACE_SEND;
    char id[32];
    flow_id(l->world, ev, id, sizeof(id));
    uint64_t dur = ev->t1 - ev->t0, in = dur >= 2 ? 1 : 0;
    uint64_t at = send ? ev->t0 + in : ev->t1 - in;
    json_t *args =
        json_pack("{s:i, s:i, s:I, s:i}", "from", send ? l->rank : ev->peer, "to",
                  send ? ev->peer : l->rank, "bytes", (json_int_t)ev->bytes, "chunk", ev->chunk);
    json_t *j = args == NULL
                    ? NULL
                    : json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:o}", "name", "message",
                                "cat", "message", "ph", send ? "s" : "f", "id", id, "pid", 1, "tid",
                                tid_of(l->rank), "ts", us(at - w->base), "args", args);
    if (j != NULL && !send)
        json_object_set_new(j, "bp", json_string("e"));
    put(w, j);
}

static void put_meta(writer_t *w, const char *what, int tid, json_t *args)
{
    put(w, args == NULL ? NULL
                        : json_pack("{s:s, s:s, s:i, s:i, s:o}", "name", what, "ph", "M", "pid", 1,
                                    "tid", tid, "args", args));
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void write_events(writer_t *w, lab_trace_t *t, const char *title)
{
    put_meta(w, "process_name", 0, json_pack("{s:s}", "name", title));
    /* A track per rank that recorded anything, named and in rank order. */
    int *ranks = malloc((t->n_lanes ? t->n_lanes : 1) * sizeof(*ranks));
    size_t n_ranks = 0;
    if (ranks == NULL) {
        w->failed = true;
        return;
    }
    for (size_t i = 0; i < t->n_lanes; i++)
        if (t->lanes[i].n > 0)
            ranks[n_ranks++] = t->lanes[i].rank;
    qsort(ranks, n_ranks, sizeof(*ranks), int_cmp);
    for (size_t i = 0; i < n_ranks; i++) {
        if (i > 0 && ranks[i] == ranks[i - 1])
            continue;
        char name[32];
        snprintf(name, sizeof(name), "rank %d", ranks[i]);
        put_meta(w, "thread_name", tid_of(ranks[i]), json_pack("{s:s}", "name", name));
        put_meta(w, "thread_sort_index", tid_of(ranks[i]),
                 json_pack("{s:i}", "sort_index", ranks[i]));
    }
    free(ranks);
    for (size_t i = 0; i < t->n_lanes && !w->failed; i++) {
        lane_t *l = &t->lanes[i];
        qsort(l->evs, l->n, sizeof(*l->evs), ev_cmp);
        for (size_t k = 0; k < l->n && !w->failed; k++) {
            const lab_trace_ev_t *ev = &l->evs[k];
            if (ev->kind == LAB_TRACE_COLL || ev->kind == LAB_TRACE_STEP)
                put_slice(w, t, l, ev);
            else
                put_flow(w, l, ev);
        }
    }
}

/* Where the trace is written before it is renamed over path (malloc'd). */
static char *tmp_path(const char *path)
{
    char *tmp = NULL;
    return asprintf(&tmp, "%s.tmp%d", path, (int)getpid()) < 0 ? NULL : tmp;
}

/* Whether a trace goes to path through a file beside it, renamed over it:
 * where path is a regular file or nothing yet. Anything else (a symbolic
 * link, a FIFO, /dev/stdout, a device) is written through, as a shell's
 * `>` writes: a rename would put a file in its place. */
static bool replaced_whole(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT;
    return S_ISREG(sb.st_mode);
}

/* A copy of standard output or error where path is the file it writes
 * (/dev/stdout, /proc/self/fd/1 or the file itself), or -1: written at
 * where that stream is, as `>>` writes, so that opening it with O_TRUNC
 * does not wipe what the run printed before. */
static int std_stream_at(const char *path)
{
    struct stat at, sb;
    if (stat(path, &at) != 0)
        return -1;
    for (int fd = 1; fd <= 2; fd++)
        if (fstat(fd, &sb) == 0 && sb.st_dev == at.st_dev && sb.st_ino == at.st_ino)
            return fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return -1;
}

dl_status_t lab_trace_write(lab_trace_t *t, const char *path, const char *title, char *why,
                            size_t cap)
{
    bool whole = replaced_whole(path);
    char *tmp = whole ? tmp_path(path) : NULL;
    if (whole && tmp == NULL) {
        snprintf(why, cap, "out of memory");
        return DL_ERR_NOMEM;
    }
    fflush(stdout);
    int fd = whole ? -1 : std_stream_at(path);
    if (fd < 0)
        fd = open(whole ? tmp : path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        snprintf(why, cap, "cannot write %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto err_unlink;
    }
    writer_t w = {.f = f, .base = UINT64_MAX, .first = true};
    uint64_t dropped = 0;
    for (size_t i = 0; i < t->n_lanes; i++) {
        dropped += t->lanes[i].dropped;
        for (size_t k = 0; k < t->lanes[i].n; k++)
            if (t->lanes[i].evs[k].t0 < w.base)
                w.base = t->lanes[i].evs[k].t0;
    }
    if (w.base == UINT64_MAX)
        w.base = 0;
    json_t *drops = json_object();
    for (size_t i = 0; drops != NULL && i < t->n_lanes; i++)
        if (t->lanes[i].dropped > 0) {
            char key[32];
            snprintf(key, sizeof(key), "rank %d", t->lanes[i].rank);
            json_t *prev = json_object_get(drops, key);
            json_int_t n = (json_int_t)t->lanes[i].dropped + json_integer_value(prev);
            json_object_set_new(drops, key, json_integer(n));
        }
    json_t *other =
        json_pack("{s:s, s:s, s:o, s:I}", "title", title, "clock",
                  "CLOCK_MONOTONIC of each rank's host, from the earliest event", "dropped",
                  drops != NULL ? drops : json_object(), "dropped_total", (json_int_t)dropped);
    fputs("{\"displayTimeUnit\": \"ns\", \"otherData\": ", f);
    if (other == NULL || json_dumpf(other, f, JSON_COMPACT) != 0)
        w.failed = true;
    json_decref(other);
    fputs(",\n\"traceEvents\": [\n", f);
    write_events(&w, t, title);
    fputs("\n]}\n", f);
    bool bad = w.failed || ferror(f) != 0 || fflush(f) != 0 || (whole && fsync(fileno(f)) != 0);
    int saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = true;
        saved = errno;
    }
    if (bad) {
        snprintf(why, cap, "cannot write %s: %s", path,
                 w.failed ? "out of memory" : strerror(saved));
        goto err_unlink;
    }
    if (whole && rename(tmp, path) != 0) {
        snprintf(why, cap, "cannot write %s: %s", path, strerror(errno));
        goto err_unlink;
    }
    free(tmp);
    return DL_OK;

err_unlink:
    if (tmp != NULL)
        unlink(tmp);
    free(tmp);
    return DL_ERR_SYSTEM;
}

bool lab_trace_path_ok(const char *path, char *why, size_t cap)
{
    struct stat sb;
    if (path[0] == '\0') {
        snprintf(why, cap, "%s", strerror(ENOENT));
        return false;
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(why, cap, "%s", strerror(EISDIR));
        return false;
    }
    struct stat sb_link;
    if (!replaced_whole(path)) { /* written through: it must take writes */
        /* A link to nothing yet: the write makes its target, as `>` does. */
        if (access(path, W_OK) == 0 ||
            (errno == ENOENT && lstat(path, &sb_link) == 0 && S_ISLNK(sb_link.st_mode)))
            return true;
        snprintf(why, cap, "%s", strerror(errno));
        return false;
    }
    /* What the write does: a file beside it, renamed over it. */
    char *tmp = tmp_path(path);
    if (tmp == NULL) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(why, cap, "%s", strerror(errno));
        free(tmp);
        return false;
    }
    close(fd);
    unlink(tmp);
    free(tmp);
    return true;
}
