/* Python's random module, which tutorials use beside torch to shuffle a
 * dataset's indexes (random.seed(1234); random.shuffle(indexes)): seed,
 * random, uniform, randint, randrange, choice, shuffle and getrandbits,
 * with CPython's algorithms, so that a seed gives Python's numbers. The
 * parser makes random.NAME(...) a call of "random.NAME".
 *
 * CPython's generator is the same Mersenne Twister as torch's, seeded
 * another way: an int seed's absolute value, cut into 32-bit words (low
 * first), goes through init_by_array. Every rank has its own, seeded with
 * its rank until random.seed (CPython seeds from the OS). */
#include <stdlib.h>
#include <string.h>

#include "distlab/comm.h"
#include "lab/proto/proto.h"
#include "lab/rank/eval.h"

#define fail lab__eval_fail

/* mt19937's init_by_array, as CPython's random_seed calls it: the state
 * init_genrand(19650218) leaves (torch's seeding, dl_rng_seed), then mixed
 * with the key. */
static void seed_by_array(dl_rng_t *g, const uint32_t *key, size_t n)
{
    dl_rng_seed(g, 19650218u);
    uint32_t *mt = g->mt;
    const size_t N = DL_RNG_MT_WORDS;
    size_t i = 1, j = 0;
    for (size_t k = N > n ? N : n; k > 0; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= N) {
            mt[0] = mt[N - 1];
            i = 1;
        }
        if (j >= n)
            j = 0;
    }
    for (size_t k = N - 1; k > 0; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= N) {
            mt[0] = mt[N - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u;
    g->next = (int)N;
}

static void seed_int(dl_rng_t *g, int64_t s)
{
    uint64_t n = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    uint32_t key[2] = {(uint32_t)n, (uint32_t)(n >> 32)};
    seed_by_array(g, key, key[1] != 0 ? 2 : 1);
}

static dl_rng_t *generator(lab_eval_t *ev)
{
    if (!ev->pyrng_seeded) {
        seed_int(&ev->pyrng, ev->r->rank);
        ev->pyrng_seeded = true;
    }
    return &ev->pyrng;
}

/* getrandbits(k), k up to 64: 32-bit draws, the first the low word, the
 * last cut to its top bits. */
static uint64_t bits(dl_rng_t *g, int k)
{
    uint64_t r = 0;
    for (int shift = 0; k > 0; shift += 32, k -= 32) {
        uint64_t w = dl_rng_next32(g);
        if (k < 32)
            w >>= 32 - k;
        r |= w << shift;
    }
    return r;
}

/* _randbelow(n), n > 0: draws of n's bit length until one is below n. */
static uint64_t below(dl_rng_t *g, uint64_t n)
{
    int k = 64 - __builtin_clzll(n);
    uint64_t r;
    do
        r = bits(g, k);
    while (r >= n);
    return r;
}

static double random01(dl_rng_t *g)
{
    uint32_t a = dl_rng_next32(g) >> 5, b = dl_rng_next32(g) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

static void set_int(lab_value_t *out, int64_t v)
{
    out->kind = LAB_V_INT;
    out->i = v;
}

static bool is_int(const lab_value_t *v)
{
    return v->kind == LAB_V_INT || v->kind == LAB_V_BOOL;
}

/* randrange(start, stop, step) as CPython 3.11 computes it; the widths
 * stay in 64 bits where the shell's ints do. */
static dl_status_t randrange(lab_eval_t *ev, const json_t *node, const lab_value_t *pos, int npos,
                             lab_value_t *out)
{
    for (int k = 0; k < npos; k++)
        if (!is_int(&pos[k]))
            return fail(ev, node, "non-integer arg %d for randrange()", k + 1);
    dl_rng_t *g = generator(ev);
    int64_t start = pos[0].i;
    if (npos == 1) {
        if (start <= 0)
            return fail(ev, node, "empty range for randrange()");
        set_int(out, (int64_t)below(g, (uint64_t)start));
        return DL_OK;
    }
    /* Python's ints do not overflow: the width, the count and the result
     * are computed in 128 bits (all fit: |start|, |stop|, |step| < 2^63). */
    __int128 stop = pos[1].i, step = npos == 3 ? pos[2].i : 1;
    __int128 width = stop - start;
    if (step == 1) {
        if (width <= 0)
            return fail(ev, node, "empty range for randrange() (%lld, %lld, %lld)",
                        (long long)start, (long long)stop, (long long)width);
        set_int(out, (int64_t)(start + (__int128)below(g, (uint64_t)width)));
        return DL_OK;
    }
    if (step == 0)
        return fail(ev, node, "zero step for randrange()");
    /* Python's floor division */
    __int128 num = step > 0 ? width + step - 1 : width + step + 1;
    __int128 n = num / step - (num % step != 0 && (num < 0) != (step < 0));
    if (n <= 0)
        return fail(ev, node, "empty range for randrange()");
    set_int(out, (int64_t)(start + step * (__int128)below(g, (uint64_t)n)));
    return DL_OK;
}

/* shuffle(x): the list in the variable x names, in place. */
static dl_status_t shuffle(lab_eval_t *ev, const json_t *node, const lab_value_t *arg)
{
    const json_t *arg_node = json_array_get(json_object_get(node, "args"), 0);
    const char *name = lab_json_str(arg_node, "name", NULL);
    lab_value_t *v = name != NULL ? lab__eval_var(ev, name) : NULL;
    if (lab__eval_undefined(arg))
        return lab__eval_fail_undefined(ev, arg_node, arg);
    if (arg->kind == LAB_V_LIST && arg->tuple)
        return fail(ev, node, "'tuple' object does not support item assignment");
    if (v == NULL || v->kind != LAB_V_LIST)
        return fail(ev, arg_node != NULL ? arg_node : node,
                    "random.shuffle takes a list variable here, as random.shuffle(indexes)");
    dl_rng_t *g = generator(ev);
    for (size_t i = v->n; i-- > 1;) {
        size_t j = (size_t)below(g, i + 1);
        lab_value_t tmp = v->items[i];
        v->items[i] = v->items[j];
        v->items[j] = tmp;
    }
    return DL_OK;
}

dl_status_t lab__eval_pyrandom(lab_eval_t *ev, const json_t *node, const char *fn,
                               const lab_value_t *pos, int npos, const json_t *kw, lab_value_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = LAB_V_NONE;
    if (json_object_size(kw) != 0)
        return fail(ev, node, "random.%s(): keyword arguments are not supported here", fn);
    static const struct {
        const char *name;
        int lo, hi; /* positional arguments */
    } arity[] = {{"seed", 0, 1},      {"random", 0, 0}, {"uniform", 2, 2}, {"randint", 2, 2},
                 {"randrange", 1, 3}, {"choice", 1, 1}, {"shuffle", 1, 1}, {"getrandbits", 1, 1}};
    size_t k = 0;
    while (k < sizeof(arity) / sizeof(arity[0]) && strcmp(arity[k].name, fn) != 0)
        k++;
    if (k == sizeof(arity) / sizeof(arity[0]))
        return fail(ev, node,
                    "random.%s is not supported here (random has seed, random, uniform, randint, "
                    "randrange, choice, shuffle and getrandbits)",
                    fn);
    if (npos < arity[k].lo || npos > arity[k].hi)
        return arity[k].lo == arity[k].hi
                   ? fail(ev, node, "random.%s() takes %d argument%s (%d given)", fn, arity[k].hi,
                          arity[k].hi == 1 ? "" : "s", npos)
                   : fail(ev, node, "random.%s() takes %d to %d arguments (%d given)", fn,
                          arity[k].lo, arity[k].hi, npos);
    dl_rng_t *g = generator(ev);
    if (strcmp(fn, "seed") == 0) {
        if (npos == 1 && pos[0].kind != LAB_V_NONE && !is_int(&pos[0]))
            return fail(ev, node, "random.seed takes an integer here, not %s",
                        lab__eval_type_name(&pos[0]));
        seed_int(g, npos == 1 && pos[0].kind != LAB_V_NONE ? pos[0].i : ev->r->rank);
        return DL_OK;
    }
    if (strcmp(fn, "random") == 0) {
        out->kind = LAB_V_FLOAT;
        out->f = random01(g);
        return DL_OK;
    }
    if (strcmp(fn, "uniform") == 0) {
        for (int a = 0; a < 2; a++)
            if (!lab__eval_is_number(&pos[a]))
                return fail(ev, node, "random.uniform takes numbers, not %s",
                            lab__eval_type_name(&pos[a]));
        double lo = pos[0].kind == LAB_V_FLOAT ? pos[0].f : (double)pos[0].i;
        double hi = pos[1].kind == LAB_V_FLOAT ? pos[1].f : (double)pos[1].i;
        out->kind = LAB_V_FLOAT;
        out->f = lo + (hi - lo) * random01(g);
        return DL_OK;
    }
    if (strcmp(fn, "randint") == 0) {
        if (!is_int(&pos[0]) || !is_int(&pos[1]))
            return fail(ev, node, "random.randint takes integers");
        /* randrange(a, b + 1), b + 1 in 128 bits */
        __int128 a = pos[0].i, b = (__int128)pos[1].i + 1;
        if (b - a <= 0)
            return fail(ev, node, "empty range for randrange() (%lld, %lld, %lld)",
                        (long long)pos[0].i, (long long)b, (long long)(b - a));
        set_int(out, (int64_t)(a + (__int128)below(g, (uint64_t)(b - a))));
        return DL_OK;
    }
    if (strcmp(fn, "randrange") == 0)
        return randrange(ev, node, pos, npos, out);
    if (strcmp(fn, "getrandbits") == 0) {
        if (!is_int(&pos[0]))
            return fail(ev, node, "random.getrandbits takes an integer");
        if (pos[0].i < 0)
            return fail(ev, node, "number of bits must be non-negative");
        if (pos[0].i > 63)
            return fail(ev, node, "getrandbits(): at most 63 bits here (the shell's ints)");
        set_int(out, (int64_t)bits(g, (int)pos[0].i));
        return DL_OK;
    }
    if (strcmp(fn, "shuffle") == 0)
        return shuffle(ev, node, &pos[0]);
    /* choice */
    const lab_value_t *seq = &pos[0];
    if (seq->kind == LAB_V_STR) {
        size_t n = strlen(seq->s);
        if (n == 0)
            return fail(ev, node, "Cannot choose from an empty sequence");
        size_t at = (size_t)below(g, n);
        char one[2] = {seq->s[at], '\0'};
        out->kind = LAB_V_STR;
        if ((out->s = strdup(one)) == NULL)
            return fail(ev, node, "out of memory");
        return DL_OK;
    }
    if (seq->kind != LAB_V_LIST)
        return fail(ev, node, "random.choice takes a list, tuple or string, not %s",
                    lab__eval_type_name(seq));
    if (seq->n == 0)
        return fail(ev, node, "Cannot choose from an empty sequence");
    dl_status_t st =
        lab_value_copy(&seq->items[below(g, seq->n)], dl_comm_allocator(ev->r->comm), out);
    return st == DL_OK ? DL_OK : fail(ev, node, "random.choice: %s", dl_strerror(st));
}
