/* torch's CPU random numbers: its generator and the way torch turns the
 * generator's draws into the values of rand, randn and randint, so that a
 * seed gives exactly the tensor torch gives for it.
 *
 * The generator is the 32-bit Mersenne Twister (mt19937) seeded with the
 * low 32 bits of the seed, as torch.manual_seed seeds its default CPU
 * generator. Every value comes from one or two of its 32-bit draws:
 *
 *   rand     float32: the low 24 bits of one draw times 2^-24; float64: the
 *            low 53 bits of a 64-bit draw (two draws, the first one high)
 *            times 2^-53; float16 and bfloat16: the low 11 and 8 bits.
 *   randint  (draw mod (high - low)) + low, the draw of 32 bits unless the
 *            range needs more (2^32 or more, for int64 and the float types).
 *   randn    Box-Muller. Fewer than 16 elements: one pair of float64
 *            uniforms gives two normal values, the first returned and the
 *            second kept in the generator for the next one (even the next
 *            call's). 16 and more: every element gets a uniform of the
 *            tensor's dtype first, then each block of 16 becomes 16 normal
 *            values (element j and j + 8 of a block are one pair); when 16
 *            does not divide the size, the last 16 elements are drawn again
 *            and transformed once more.
 *
 * For float32 with 16 and more elements torch has two kernels that differ
 * in the last bit of some values: on x86-64 with AVX2 and FMA it computes
 * the logarithm, sine and cosine with vectorised Cephes polynomials, and
 * elsewhere with the C library's logf, sinf and cosf. distlab computes
 * both in portable C and uses the one torch would use on this machine
 * (dl_rng_cpu_detect). */
#ifndef DISTLAB_RANDOM_H
#define DISTLAB_RANDOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"
#include "distlab/tensor.h"

/* Which of torch's float32 randn kernels a generator reproduces. */
typedef enum {
    DL_RNG_CPU_DEFAULT, /* logf, sinf, cosf: torch without AVX2 (and aarch64) */
    DL_RNG_CPU_AVX2,    /* Cephes polynomials with fused multiply-adds */
} dl_rng_cpu_t;

#define DL_RNG_MT_WORDS 624

typedef struct {
    uint32_t mt[DL_RNG_MT_WORDS];
    int next;      /* the next word of mt to hand out; DL_RNG_MT_WORDS: twist first */
    uint64_t seed; /* as given, for torch.initial_seed() */
    bool has_normal;
    double normal; /* the second value of the last small randn pair */
    dl_rng_cpu_t cpu;
} dl_rng_t;

/* The kernel torch chooses on this machine: ATEN_CPU_CAPABILITY=default or
 * avx512 gives DL_RNG_CPU_DEFAULT (torch's AVX-512 kernels take the same
 * path), otherwise DL_RNG_CPU_AVX2 when the CPU has AVX2 and FMA. */
dl_rng_cpu_t dl_rng_cpu_detect(void);

/* torch.manual_seed(seed): restarts the stream and forgets a kept normal
 * value. g->cpu is set by dl_rng_cpu_detect the first time (when g is
 * zero-filled) and kept afterwards. */
void dl_rng_seed(dl_rng_t *g, uint64_t seed);

/* One 32-bit draw (torch's random()), and a 64-bit one made of two draws,
 * the first the high half (torch's random64()). */
uint32_t dl_rng_next32(dl_rng_t *g);
uint64_t dl_rng_next64(dl_rng_t *g);

/* Fill a host tensor, element by element in storage order, as torch.rand,
 * torch.randn and torch.randint fill one of that dtype and shape from the
 * same generator state.
 *
 * dl_rng_uniform takes the float dtypes (float16, bfloat16, float32,
 * float64), dl_rng_normal float32 and float64; both return DL_ERR_INVALID
 * for other dtypes.
 * dl_rng_randint draws from [low, high): low must be less than high, and
 * for integer and bool dtypes both ends must fit the dtype (torch's rule);
 * otherwise it returns DL_ERR_INVALID and, when why is not NULL, a line
 * that says why. On error nothing is drawn and t is untouched.
 * dl_rng_randperm fills a 1-D t with a random permutation of 0 to n - 1
 * as torch.randperm(n) does; DL_ERR_INVALID, with torch's words in why,
 * for bool, or where n - 1 does not fit the dtype (float16: n above 2049,
 * float32: above 2^24 + 1). */
dl_status_t dl_rng_uniform(dl_rng_t *g, dl_tensor_t *t);
dl_status_t dl_rng_normal(dl_rng_t *g, dl_tensor_t *t);
dl_status_t dl_rng_randint(dl_rng_t *g, dl_tensor_t *t, int64_t low, int64_t high, char *why,
                           size_t cap);
dl_status_t dl_rng_randperm(dl_rng_t *g, dl_tensor_t *t, char *why, size_t cap);

#endif
