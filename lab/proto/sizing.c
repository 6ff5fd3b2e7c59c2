/* See sizing.h. The buffers counted here are the ones lab/rank/run_rank.c and
 * lab/rank/bench_rank.c allocate; a change to either belongs here too. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/sched.h"
#include "lab/proto/sizing.h"

#define MIB ((uint64_t)1 << 20)
/* Room in each rank's arena beyond its tensors, for the rounding of each
 * allocation up to 64 bytes: a small share of the tensors' size. */
#define ARENA_HEADROOM(bytes) ((bytes) / 64 + MIB)
/* What a rank process takes besides its tensors: code, libraries, its
 * control and data channels. Measured at about 10 MiB; kept generous. */
#define RANK_OVERHEAD (32 * MIB)

/* a * b, saturating at UINT64_MAX: a job that large is refused anyway. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- the bench sweep ---- */

/* Whether the bench splits its buffer over the ranks (nccl-tests' sizes:
 * the whole output of all_gather and gather, the whole input of
 * reduce_scatter, all_to_all and scatter). */
static bool bench_split(dl_coll_t c)
{
    return c == DL_COLL_ALL_GATHER || c == DL_COLL_REDUCE_SCATTER || c == DL_COLL_ALL_TO_ALL ||
           c == DL_COLL_GATHER || c == DL_COLL_SCATTER;
}

size_t lab_bench_count(const lab_job_t *job, int np, size_t bytes)
{
    if (job->prim.coll == DL_COLL_BARRIER)
        return 0;
    size_t count = bytes / dl_dtype_size(job->dtype);
    size_t unit = bench_split(job->prim.coll) ? (size_t)np : 1;
    count = count / unit * unit;
    return count > unit ? count : unit;
}

double lab_bench_next_size(const lab_job_t *job, double size)
{
    double next = job->factor > 1 ? size * job->factor : size + (double)job->min_bytes;
    /* A step that does not grow would never end. */
    return next > size && next <= (double)job->max_bytes ? next : 0;
}

void lab_bench_sweep(const lab_job_t *job, size_t most_rows, size_t most_steps, size_t *rows_p,
                     size_t *steps_p)
{
    size_t rows = 0, steps = 0, prev = 0;
    /* A barrier moves no data: one row, whatever the sizes. */
    if (job->prim.coll == DL_COLL_BARRIER) {
        *rows_p = *steps_p = 1;
        return;
    }
    for (double size = (double)job->min_bytes; size > 0 && rows <= most_rows && steps <= most_steps;
         size = lab_bench_next_size(job, size)) {
        size_t count = lab_bench_count(job, job->np, (size_t)size);
        steps++;
        rows += count != prev;
        prev = count;
    }
    *rows_p = rows;
    *steps_p = steps;
}

/* ---- what a rank holds ---- */

/* Scratch elements of the builtin schedule for one collective call; other
 * backends keep their scratch to themselves. */
static uint64_t sched_tmp(const lab_job_t *job, size_t count)
{
    if (strcmp(job->backend, "builtin") != 0 || job->prim.kind != LAB_PRIM_COLL ||
        job->prim.coll == DL_COLL_BARRIER)
        return 0;
    dl_coll_args_t args = {.coll = job->prim.coll,
                           .nranks = job->np,
                           .root = dl_coll_has_root(job->prim.coll) ? job->root : 0,
                           .count = count,
                           .op = job->op};
    dl_sched_t *s = NULL;
    if (dl_sched_build(job->algo[0] ? job->algo : NULL, &args, dl_dtype_size(job->dtype), &s) !=
        DL_OK)
        return 0; /* the ranks will say what is wrong with the call */
    uint64_t tmp = s->tmp_count;
    dl_sched_free(s);
    return tmp;
}

/* Elements of `distlab run`'s tensors on one rank (lab/rank/run_rank.c). */
static uint64_t run_elems(const lab_job_t *job, int rank)
{
    uint64_t c = job->count, n = (uint64_t)job->np;
    bool root = rank == job->root;
    switch (job->prim.kind) {
    case LAB_PRIM_PINGPONG:
        return 1;
    case LAB_PRIM_SEND:
    case LAB_PRIM_ISEND:
        return c;
    case LAB_PRIM_RECV:
    case LAB_PRIM_IRECV:
        /* The root receives into one buffer per rank and files them in a list. */
        return add_sat(c, root ? mul_sat(2 * n, c) : 0);
    case LAB_PRIM_COLL:
        break;
    }
    switch (job->prim.coll) {
    case DL_COLL_ALL_REDUCE:
    case DL_COLL_BROADCAST:
    case DL_COLL_REDUCE:
        return c;
    case DL_COLL_SCATTER:
    case DL_COLL_GATHER:
    case DL_COLL_ALL_GATHER:
    case DL_COLL_REDUCE_SCATTER:
        return mul_sat(n + 1, c);
    case DL_COLL_ALL_TO_ALL:
        return mul_sat(2 * n, c);
    default:
        return 0;
    }
}

/* Elements of one bench row's buffers on one rank (lab/rank/bench_rank.c). */
static uint64_t bench_elems(const lab_job_t *job, int rank, size_t count)
{
    uint64_t n = (uint64_t)job->np, chunk = bench_split(job->prim.coll) ? count / n : count;
    bool root = rank == job->root;
    switch (job->prim.coll) {
    case DL_COLL_ALL_GATHER:
    case DL_COLL_REDUCE_SCATTER:
        return count + chunk;
    case DL_COLL_ALL_TO_ALL:
        return 2 * (uint64_t)count;
    case DL_COLL_GATHER:
    case DL_COLL_SCATTER:
        return chunk + (root ? n * chunk : 0);
    case DL_COLL_BARRIER:
        return 0;
    default:
        return count;
    }
}

/* Every rank's peak bytes, into peaks[np]: each schedule is built once, as
 * its scratch is the same on every rank. */
static void rank_peaks(const lab_job_t *job, uint64_t *peaks)
{
    uint64_t esz = dl_dtype_size(job->dtype);
    memset(peaks, 0, sizeof(*peaks) * (size_t)job->np);
    if (!job->bench) {
        if (job->prim.kind == LAB_PRIM_PINGPONG) {
            for (int r = 0; r < job->np; r++)
                peaks[r] = 4; /* one float32, whatever the dtype */
            return;
        }
        uint64_t tmp = sched_tmp(job, job->count);
        for (int r = 0; r < job->np; r++)
            peaks[r] = mul_sat(add_sat(run_elems(job, r), tmp), esz);
        return;
    }
    if (job->prim.coll == DL_COLL_BARRIER)
        return;
    size_t prev = 0;
    for (double size = (double)job->min_bytes; size > 0; size = lab_bench_next_size(job, size)) {
        size_t count = lab_bench_count(job, job->np, (size_t)size);
        if (count == prev)
            continue;
        prev = count;
        uint64_t tmp =
            sched_tmp(job, bench_split(job->prim.coll) ? count / (size_t)job->np : count);
        for (int r = 0; r < job->np; r++) {
            uint64_t bytes = mul_sat(add_sat(bench_elems(job, r, count), tmp), esz);
            peaks[r] = bytes > peaks[r] ? bytes : peaks[r];
        }
    }
}

uint64_t lab_job_rank_bytes(const lab_job_t *job, int rank)
{
    uint64_t peaks[LAB_MAX_NP];
    if (job->np < 1 || job->np > LAB_MAX_NP || rank < 0 || rank >= job->np)
        return 0;
    rank_peaks(job, peaks);
    return peaks[rank];
}

uint64_t lab_job_total_bytes(const lab_job_t *job)
{
    uint64_t peaks[LAB_MAX_NP], total = 0;
    if (job->np < 1 || job->np > LAB_MAX_NP)
        return 0;
    rank_peaks(job, peaks);
    for (int r = 0; r < job->np; r++)
        total = add_sat(total, peaks[r]);
    return total;
}

size_t lab_job_arena_mb(const lab_job_t *job)
{
    uint64_t peaks[LAB_MAX_NP], peak = 0;
    if (job->np < 1 || job->np > LAB_MAX_NP)
        return 0;
    rank_peaks(job, peaks);
    for (int r = 0; r < job->np; r++)
        peak = peaks[r] > peak ? peaks[r] : peak;
    uint64_t mb = add_sat(peak, ARENA_HEADROOM(peak) + MIB - 1) / MIB;
    return mb > SIZE_MAX ? SIZE_MAX : (size_t)mb;
}

/* ---- what the machine has ---- */

/* The first number in a file, or UINT64_MAX when there is none ("max"). */
static uint64_t read_u64(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return UINT64_MAX;
    uint64_t v = UINT64_MAX;
    if (fscanf(f, "%" SCNu64, &v) != 1)
        v = UINT64_MAX;
    fclose(f);
    return v;
}

uint64_t lab_mem_available(const char **what_p)
{
    uint64_t avail = UINT64_MAX;
    *what_p = "MemAvailable in /proc/meminfo";
    FILE *f = fopen("/proc/meminfo", "r");
    if (f != NULL) {
        char line[256];
        uint64_t kb;
        while (fgets(line, sizeof(line), f) != NULL)
            if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1)
                avail = kb * 1024;
        fclose(f);
    }
    /* A container's memory limit binds before the machine's memory does;
     * shared memory counts against it too. */
    static const char *const limits[][3] = {
        {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "the cgroup memory.max"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
         "/sys/fs/cgroup/memory/memory.usage_in_bytes", "the cgroup memory limit"},
    };
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        uint64_t limit = read_u64(limits[i][0]), used = read_u64(limits[i][1]);
        if (limit == UINT64_MAX || used == UINT64_MAX || limit > ((uint64_t)1 << 60))
            continue;
        uint64_t left = limit > used ? limit - used : 0;
        if (left < avail) {
            avail = left;
            *what_p = limits[i][2];
        }
        break;
    }
    return avail;
}

/* "1.5 GiB", "300 MiB". */
static void human(uint64_t bytes, char *buf, size_t cap)
{
    if (bytes >= ((uint64_t)1 << 30))
        snprintf(buf, cap, "%.1f GiB", (double)bytes / (double)((uint64_t)1 << 30));
    else
        snprintf(buf, cap, "%" PRIu64 " MiB", (bytes + MIB - 1) / MIB);
}

/* "-e 64G", as the flag would be written. */
static void flag_size(size_t bytes, char *buf, size_t cap)
{
    static const char units[] = "KMG";
    int u = -1;
    while (u < 2 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, cap, "-e %zu", bytes);
    else
        snprintf(buf, cap, "-e %zu%c", bytes, units[u]);
}

bool lab_job_fits_memory(const lab_job_t *job, uint64_t avail, const char *what, char *why,
                         size_t cap)
{
    uint64_t need = add_sat(lab_job_total_bytes(job), mul_sat(RANK_OVERHEAD, (uint64_t)job->np));
    if (need <= avail)
        return true;
    char need_s[32], avail_s[32], size_s[64];
    human(need, need_s, sizeof(need_s));
    human(avail, avail_s, sizeof(avail_s));
    if (job->bench)
        flag_size(job->max_bytes, size_s, sizeof(size_s));
    else
        snprintf(size_s, sizeof(size_s), "--count %zu", job->count);
    snprintf(why, cap,
             "%s %s %s on %d ranks needs about %s of memory, but %s is available (%s); "
             "choose a smaller %s or fewer ranks (--np)",
             job->bench ? "bench" : "run", lab_prim_name(job->prim), size_s, job->np, need_s,
             avail_s, what, job->bench ? "-e" : "--count");
    return false;
}
