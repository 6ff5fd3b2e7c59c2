/* The symbolic simulator (distlab/symsim.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/symsim.h"
#include "internal.h"

typedef struct {
    size_t size;
    int *origin;  /* size */
    int *scaled;  /* size */
    int *contrib; /* size * n */
} symbuf_t;

struct dl_symsim {
    const dl_sched_t *s;
    int n;
    size_t steps_run;
    symbuf_t *bufs;       /* n * DL_BUF__COUNT */
    unsigned char *heard; /* n * n */
};

/* Elements copied out of the state, so that reads see it as it was. */
typedef struct {
    size_t count;
    int *origin, *scaled, *contrib;
} payload_t;

static symbuf_t *buf_of(const dl_symsim_t *sim, int r, dl_buf_t b)
{
    return &sim->bufs[(size_t)r * DL_BUF__COUNT + (size_t)b];
}

dl_status_t dl_symsim_new(const dl_sched_t *s, dl_symsim_t **sim_p)
{
    dl_symsim_t *sim = calloc(1, sizeof(*sim));
    if (sim == NULL)
        return DL_ERR_NOMEM;
    int n = s->args.nranks;
    sim->s = s;
    sim->n = n;
    sim->bufs = calloc((size_t)n * DL_BUF__COUNT, sizeof(*sim->bufs));
    sim->heard = calloc((size_t)n * (size_t)n, 1);
    if (sim->bufs == NULL || sim->heard == NULL)
        goto err_free_sim;
    for (int r = 0; r < n; r++) {
        sim->heard[(size_t)r * (size_t)n + (size_t)r] = 1;
        for (int b = 0; b < DL_BUF__COUNT; b++) {
            symbuf_t *sb = buf_of(sim, r, (dl_buf_t)b);
            sb->size = dl_sched_buf_count(s, r, (dl_buf_t)b);
            sb->origin = malloc((sb->size + 1) * sizeof(int));
            sb->scaled = calloc(sb->size + 1, sizeof(int));
            sb->contrib = calloc(sb->size * (size_t)n + 1, sizeof(int));
            if (sb->origin == NULL || sb->scaled == NULL || sb->contrib == NULL)
                goto err_free_sim;
            for (size_t i = 0; i < sb->size; i++) {
                sb->origin[i] = b == DL_BUF_IN ? (int)i : -1;
                if (b == DL_BUF_IN)
                    sb->contrib[i * (size_t)n + (size_t)r] = 1;
            }
        }
    }
    *sim_p = sim;
    return DL_OK;

err_free_sim:
    dl_symsim_free(sim);
    return DL_ERR_NOMEM;
}

void dl_symsim_free(dl_symsim_t *sim)
{
    if (sim == NULL)
        return;
    if (sim->bufs != NULL) {
        for (size_t i = 0; i < (size_t)sim->n * DL_BUF__COUNT; i++) {
            free(sim->bufs[i].origin);
            free(sim->bufs[i].scaled);
            free(sim->bufs[i].contrib);
        }
    }
    free(sim->bufs);
    free(sim->heard);
    free(sim);
}

static bool in_range(const dl_symsim_t *sim, int r, dl_ref_t ref, size_t count)
{
    if (r < 0 || r >= sim->n || (unsigned)ref.buf >= DL_BUF__COUNT)
        return false;
    size_t size = buf_of(sim, r, ref.buf)->size;
    return ref.off <= size && count <= size - ref.off;
}

static int payload_read(const dl_symsim_t *sim, int r, dl_ref_t ref, size_t count, payload_t *p)
{
    size_t n = (size_t)sim->n;
    p->count = count;
    p->origin = malloc((count + 1) * sizeof(int));
    p->scaled = malloc((count + 1) * sizeof(int));
    p->contrib = malloc((count * n + 1) * sizeof(int));
    if (p->origin == NULL || p->scaled == NULL || p->contrib == NULL)
        return -1;
    symbuf_t *sb = buf_of(sim, r, ref.buf);
    memcpy(p->origin, sb->origin + ref.off, count * sizeof(int));
    memcpy(p->scaled, sb->scaled + ref.off, count * sizeof(int));
    memcpy(p->contrib, sb->contrib + ref.off * n, count * n * sizeof(int));
    return 0;
}

static void payload_free(payload_t *p)
{
    free(p->origin);
    free(p->scaled);
    free(p->contrib);
    memset(p, 0, sizeof(*p));
}

static const char *const names[] = {"in", "out", "tmp"};

/* dst = data (COPY), or dst = acc op data (REDUCE), on rank r. */
static int apply(dl_symsim_t *sim, size_t step, int r, bool reduce, dl_ref_t acc, dl_ref_t dst,
                 payload_t *data, char *why, size_t cap)
{
    size_t n = (size_t)sim->n;
    for (size_t i = 0; i < data->count; i++) {
        if (data->origin[i] < 0) {
            dl__sched_say(why, cap, "step %zu: r%d gets an element never written", step + 1, r);
            return -1;
        }
    }
    if (reduce) {
        payload_t a = {0};
        if (payload_read(sim, r, acc, data->count, &a) != 0)
            return -1;
        for (size_t i = 0; i < data->count; i++) {
            if (a.origin[i] != data->origin[i] || a.scaled[i] != 0 || data->scaled[i] != 0) {
                dl__sched_say(
                    why, cap,
                    "step %zu: r%d reduces %s[%zu] (origin %d, scaled %d) with an element of "
                    "origin %d, scaled %d",
                    step + 1, r, names[acc.buf], acc.off + i, a.origin[i], a.scaled[i],
                    data->origin[i], data->scaled[i]);
                payload_free(&a);
                return -1;
            }
            for (size_t q = 0; q < n; q++)
                data->contrib[i * n + q] += a.contrib[i * n + q];
        }
        payload_free(&a);
    }
    symbuf_t *sb = buf_of(sim, r, dst.buf);
    memcpy(sb->origin + dst.off, data->origin, data->count * sizeof(int));
    memcpy(sb->scaled + dst.off, data->scaled, data->count * sizeof(int));
    memcpy(sb->contrib + dst.off * n, data->contrib, data->count * n * sizeof(int));
    return 0;
}

static int run_step(dl_symsim_t *sim, size_t k, char *why, size_t cap)
{
    const dl_sched_t *s = sim->s;
    const dl_step_t *st = &s->steps[k];
    size_t n = (size_t)sim->n;
    int rc = -1;

    payload_t *msgs = calloc(st->n + 1, sizeof(*msgs));
    unsigned char *heard = malloc(n * n);
    if (msgs == NULL || heard == NULL)
        goto out_free;
    memcpy(heard, sim->heard, n * n);

    /* 1. Every send reads the state at the start of the step. */
    for (size_t i = 0; i < st->n; i++) {
        const dl_action_t *a = &s->actions[st->first + i];
        if (a->kind != DL_ACT_MSG)
            continue;
        if (!in_range(sim, a->src_rank, a->src, a->count) ||
            !in_range(sim, a->dst_rank, a->dst, a->count) ||
            !in_range(sim, a->dst_rank, a->acc, a->count)) {
            dl__sched_say(why, cap, "step %zu: message r%d -> r%d out of range", k + 1, a->src_rank,
                          a->dst_rank);
            goto out_free;
        }
        if (payload_read(sim, a->src_rank, a->src, a->count, &msgs[i]) != 0)
            goto out_free;
    }
    /* 2. Receives, in action order. */
    for (size_t i = 0; i < st->n; i++) {
        const dl_action_t *a = &s->actions[st->first + i];
        if (a->kind != DL_ACT_MSG)
            continue;
        for (size_t q = 0; q < n; q++)
            sim->heard[(size_t)a->dst_rank * n + q] |= heard[(size_t)a->src_rank * n + q];
        if (apply(sim, k, a->dst_rank, a->combine == DL_COMBINE_REDUCE, a->acc, a->dst, &msgs[i],
                  why, cap) != 0)
            goto out_free;
    }
    /* 3. Local actions, in action order. */
    for (size_t i = 0; i < st->n; i++) {
        const dl_action_t *a = &s->actions[st->first + i];
        payload_t data = {0};
        if (a->kind == DL_ACT_MSG)
            continue;
        if (!in_range(sim, a->src_rank, a->src, a->count) ||
            !in_range(sim, a->dst_rank, a->dst, a->count) ||
            !in_range(sim, a->dst_rank, a->acc, a->count)) {
            dl__sched_say(why, cap, "step %zu: local action on r%d out of range", k + 1,
                          a->src_rank);
            goto out_free;
        }
        if (a->kind == DL_ACT_SCALE) {
            symbuf_t *sb = buf_of(sim, a->dst_rank, a->dst.buf);
            for (size_t e = 0; e < a->count; e++) {
                if (sb->origin[a->dst.off + e] < 0) {
                    dl__sched_say(why, cap, "step %zu: r%d scales an element never written", k + 1,
                                  a->dst_rank);
                    goto out_free;
                }
                sb->scaled[a->dst.off + e]++;
            }
            continue;
        }
        if (payload_read(sim, a->src_rank, a->src, a->count, &data) != 0)
            goto out_free;
        int bad =
            apply(sim, k, a->dst_rank, a->kind == DL_ACT_REDUCE, a->acc, a->dst, &data, why, cap);
        payload_free(&data);
        if (bad)
            goto out_free;
    }
    /* 4. Write-backs: the receiver's dst, as it stands now, into the
     * sender's src. */
    for (size_t i = 0; i < st->n; i++) {
        const dl_action_t *a = &s->actions[st->first + i];
        payload_t data = {0};
        if (a->kind != DL_ACT_MSG || !a->back)
            continue;
        for (size_t q = 0; q < n; q++)
            sim->heard[(size_t)a->src_rank * n + q] |= sim->heard[(size_t)a->dst_rank * n + q];
        if (payload_read(sim, a->dst_rank, a->dst, a->count, &data) != 0)
            goto out_free;
        int bad = apply(sim, k, a->src_rank, false, a->src, a->src, &data, why, cap);
        payload_free(&data);
        if (bad)
            goto out_free;
    }
    rc = 0;

out_free:
    if (msgs != NULL)
        for (size_t i = 0; i < st->n; i++)
            payload_free(&msgs[i]);
    free(msgs);
    free(heard);
    return rc;
}

dl_status_t dl_symsim_step(dl_symsim_t *sim, char *why, size_t cap)
{
    if (sim->steps_run >= sim->s->n_steps) {
        dl__sched_say(why, cap, "every step of the schedule has run");
        return DL_ERR_INVALID;
    }
    if (run_step(sim, sim->steps_run, why, cap) != 0)
        return DL_ERR_INVALID;
    sim->steps_run++;
    return DL_OK;
}

dl_status_t dl_symsim_run(dl_symsim_t *sim, char *why, size_t cap)
{
    while (sim->steps_run < sim->s->n_steps) {
        dl_status_t st = dl_symsim_step(sim, why, cap);
        if (st != DL_OK)
            return st;
    }
    return DL_OK;
}

size_t dl_symsim_steps_run(const dl_symsim_t *sim)
{
    return sim->steps_run;
}

int dl_symsim_origin(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i)
{
    return buf_of(sim, r, b)->origin[i];
}

int dl_symsim_scaled(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i)
{
    return buf_of(sim, r, b)->scaled[i];
}

int dl_symsim_contrib(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i, int q)
{
    return buf_of(sim, r, b)->contrib[i * (size_t)sim->n + (size_t)q];
}

bool dl_symsim_heard(const dl_symsim_t *sim, int r, int q)
{
    return sim->heard[(size_t)r * (size_t)sim->n + (size_t)q] != 0;
}

/* ---- as a person reads it ---- */

/* Appends to buf like snprintf, counting what did not fit. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len += (size_t)n;
}

size_t dl_symsim_format(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap > 0)
        buf[0] = '\0';
    int origin = dl_symsim_origin(sim, r, b, i);
    if (origin < 0) {
        put(buf, cap, &len, "-");
        return len;
    }
    int scaled = dl_symsim_scaled(sim, r, b, i);
    if (scaled > 0)
        put(buf, cap, &len, "(");
    bool first = true;
    for (int q = 0; q < sim->n; q++) {
        int times = dl_symsim_contrib(sim, r, b, i, q);
        if (times == 0)
            continue;
        put(buf, cap, &len, "%s", first ? "" : "+");
        if (times > 1)
            put(buf, cap, &len, "%d", times);
        if (sim->n <= 26)
            put(buf, cap, &len, "%c%d", 'a' + q, origin);
        else
            put(buf, cap, &len, "r%d.%d", q, origin);
        first = false;
    }
    if (first)
        put(buf, cap, &len, "0"); /* written, yet from nobody's input: a reduce identity */
    for (int k = 0; k < scaled; k++)
        put(buf, cap, &len, "%s/%d", k == 0 ? ")" : "", sim->n);
    return len;
}
