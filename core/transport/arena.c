#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "distlab/cuda.h"
#include "distlab/log.h"
#include "transport/arena.h"

#define ARENA_ALIGN 64

struct dl_arena_extent {
    size_t off, len;
    dl_arena_extent_t *next;
};

static void *arena_alloc(dl_allocator_t *self, size_t nbytes)
{
    dl_arena_t *a = (dl_arena_t *)self;
    if (nbytes > a->size) {
        /* Also keeps the rounding below from wrapping. */
        dl_log_error("a tensor of %zu MiB does not fit in the shared arena (%zu MiB); set "
                     "DISTLAB_ARENA_MB higher",
                     (nbytes + (1u << 20) - 1) >> 20, a->size >> 20);
        return NULL;
    }
    size_t need = (nbytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (need == 0)
        need = ARENA_ALIGN;
    for (dl_arena_extent_t **pp = &a->free_list; *pp != NULL; pp = &(*pp)->next) {
        dl_arena_extent_t *e = *pp;
        if (e->len < need)
            continue;
        void *p = a->base + e->off;
        e->off += need;
        e->len -= need;
        if (e->len == 0) {
            *pp = e->next;
            free(e);
        }
        return p;
    }
    dl_log_error("the shared arena (%zu MiB) is full; set DISTLAB_ARENA_MB higher", a->size >> 20);
    return NULL;
}

static void arena_free(dl_allocator_t *self, void *ptr, size_t nbytes)
{
    dl_arena_t *a = (dl_arena_t *)self;
    if (ptr == NULL)
        return;
    size_t off = (size_t)((uint8_t *)ptr - a->base);
    size_t len = (nbytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (len == 0)
        len = ARENA_ALIGN;
    dl_arena_extent_t **pp = &a->free_list;
    while (*pp != NULL && (*pp)->off < off)
        pp = &(*pp)->next;
    dl_arena_extent_t *next = *pp;
    /* Merge with the extent before it when adjacent. */
    dl_arena_extent_t *prev = NULL;
    for (dl_arena_extent_t *e = a->free_list; e != NULL && e != next; e = e->next)
        prev = e;
    if (prev != NULL && prev->off + prev->len == off) {
        prev->len += len;
        if (next != NULL && prev->off + prev->len == next->off) {
            prev->len += next->len;
            prev->next = next->next;
            free(next);
        }
        return;
    }
    if (next != NULL && off + len == next->off) {
        next->off = off;
        next->len += len;
        return;
    }
    dl_arena_extent_t *e = malloc(sizeof(*e));
    if (e == NULL)
        return; /* the block leaks inside the arena; the arena stays consistent */
    e->off = off;
    e->len = len;
    e->next = next;
    *pp = e;
}

dl_status_t dl__arena_init(dl_arena_t *a, uint8_t *base, size_t size)
{
    memset(a, 0, sizeof(*a));
    a->allocator.alloc = arena_alloc;
    a->allocator.free = arena_free;
    a->base = base;
    a->size = size;
    a->free_list = malloc(sizeof(dl_arena_extent_t));
    if (a->free_list == NULL)
        return DL_ERR_NOMEM;
    a->free_list->off = 0;
    a->free_list->len = size;
    a->free_list->next = NULL;
    return DL_OK;
}

/* The first range locked; each next one at least doubles it. */
#define PIN_FIRST ((uintptr_t)4 << 20)

void dl__arena_pin(dl_arena_t *a, const void *ptr, size_t n)
{
    uintptr_t need = (uintptr_t)ptr + n;
    if (a->pin_failed || need <= a->pinned_end || !dl__arena_owns(a, ptr, n))
        return;
    /* Whole pages: the region may start mid-page (ranks' regions are
     * staggered); the pages it shares with a neighbour's region are locked
     * in this process only, which does not change what the neighbour sees. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)a->base & ~(page - 1);
    uintptr_t top = ((uintptr_t)a->base + a->size + page - 1) & ~(page - 1);
    uintptr_t have = a->pinned_end > lo ? a->pinned_end - lo : 0;
    uintptr_t want = have * 2 > PIN_FIRST ? have * 2 : PIN_FIRST;
    uintptr_t to = ((need > lo + want ? need : lo + want) + page - 1) & ~(page - 1);
    if (to > top)
        to = top;
    if (a->pinned != NULL)
        dl_cuda_unpin(a->pinned);
    if (dl_cuda_pin((void *)lo, to - lo) == DL_OK) {
        a->pinned = (void *)lo;
        a->pinned_end = to;
        return;
    }
    a->pin_failed = true;
    dl_log_debug("the shared arena stays pageable past %zu bytes: %s", (size_t)have,
                 dl_cuda_last_error());
    if (a->pinned != NULL && dl_cuda_pin(a->pinned, have) != DL_OK) {
        a->pinned = NULL;
        a->pinned_end = 0;
    }
}

void dl__arena_destroy(dl_arena_t *a)
{
    if (a->pinned != NULL)
        dl_cuda_unpin(a->pinned);
    a->pinned = NULL;
    a->pinned_end = 0;
    while (a->free_list != NULL) {
        dl_arena_extent_t *e = a->free_list;
        a->free_list = e->next;
        free(e);
    }
}
