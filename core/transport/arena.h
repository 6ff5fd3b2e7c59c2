/* A first-fit allocator over one rank's region of the shared segment. Only
 * the owning rank allocates from it, so it needs no cross-process locking;
 * its bookkeeping lives in private memory. */
#ifndef DL_TRANSPORT_ARENA_H
#define DL_TRANSPORT_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"
#include "distlab/tensor.h"

typedef struct dl_arena_extent dl_arena_extent_t;

typedef struct {
    dl_allocator_t allocator; /* first, so the allocator pointer is the arena */
    uint8_t *base;
    size_t size;
    dl_arena_extent_t *free_list; /* sorted by offset, coalesced */
    /* Page-locked for copies to and from GPUs: [pinned, pinned_end), one
     * registration (a copy may not span two), or pinned is NULL. */
    void *pinned;
    uintptr_t pinned_end;
    bool pin_failed;
} dl_arena_t;

dl_status_t dl__arena_init(dl_arena_t *a, uint8_t *base, size_t size);
/* Page-locks the arena from its start to at least ptr + n, for copies of
 * [ptr, ptr + n) to and from a GPU: an arena is large (1 GiB by default),
 * so it is locked as far as staging has used it, growing in doubling steps
 * (each step locks the whole range again, as one registration: CUDA fails
 * a copy that spans two). A failure leaves it locked as far as it was and
 * stops further tries (copies beyond go through CUDA's bounce buffer,
 * slower). */
void dl__arena_pin(dl_arena_t *a, const void *ptr, size_t n);
/* Frees the bookkeeping and unlocks the pages, before the memory goes. */
void dl__arena_destroy(dl_arena_t *a);
/* Whether [ptr, ptr+n) lies in the arena. Inline: a collective asks it of
 * its buffers on every call. */
static inline bool dl__arena_owns(const dl_arena_t *a, const void *ptr, size_t n)
{
    const uint8_t *p = ptr;
    return p >= a->base && p + n <= a->base + a->size;
}

#endif
