/* The pinned-tensor table (pins.h). One per rank process, as a rank runs
 * one session; it holds few entries (the async calls in flight), so plain
 * arrays searched in order serve. */
#include <stdint.h>
#include <stdlib.h>

#include "distlab/cuda.h"
#include "lab/rank/pins.h"

typedef struct {
    const dl_work_t *w;
    const uint8_t *data; /* the memory the work uses: [data, data + nbytes) */
    size_t nbytes;
} pin_t;

/* A tensor waiting for its work: freed by the table (owned), written into
 * target, or both, once no pin overlaps it. */
typedef struct {
    dl_tensor_t *t;
    dl_tensor_t *target;
    bool owned;
} kept_t;

static struct {
    pin_t *pins;
    size_t npins, cap;
    kept_t *kept;
    size_t nkept, kept_cap;
} tab;

/* arr with room for item n (of size bytes each), grown by doubling *cap;
 * NULL without memory (arr kept). */
static void *room_for(void *arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? *cap * 2 : 8;
    void *p = realloc(arr, c * size);
    if (p != NULL)
        *cap = c;
    return p;
}

dl_status_t lab_pins_add(dl_work_t *w, const dl_tensor_t *t)
{
    size_t nb = dl_tensor_nbytes(t);
    if (w == NULL || t->data == NULL || nb == 0 || dl_work_test(w))
        return DL_OK; /* nothing to hold, or already done */
    pin_t *pins = room_for(tab.pins, &tab.cap, tab.npins, sizeof(*pins));
    if (pins == NULL)
        return DL_ERR_NOMEM;
    tab.pins = pins;
    tab.pins[tab.npins++] = (pin_t){w, t->data, nb};
    return DL_OK;
}

bool lab_pins_busy(const dl_tensor_t *t)
{
    if (t == NULL || t->data == NULL)
        return false;
    const uint8_t *lo = t->data, *hi = lo + dl_tensor_nbytes(t);
    for (size_t i = 0; i < tab.npins; i++)
        if (tab.pins[i].data < hi && lo < tab.pins[i].data + tab.pins[i].nbytes)
            return true;
    return false;
}

static kept_t *kept_entry(const dl_tensor_t *t)
{
    for (size_t i = 0; i < tab.nkept; i++)
        if (tab.kept[i].t == t)
            return &tab.kept[i];
    return NULL;
}

static dl_status_t keep(dl_tensor_t *t, dl_tensor_t *target, bool owned)
{
    kept_t *kept = room_for(tab.kept, &tab.kept_cap, tab.nkept, sizeof(*kept));
    if (kept == NULL)
        return DL_ERR_NOMEM;
    tab.kept = kept;
    tab.kept[tab.nkept++] = (kept_t){t, target, owned};
    return DL_OK;
}

/* Writes k's tensor into its target, if it still has one like it. */
static void write_back(const kept_t *k)
{
    const dl_tensor_t *t = k->t, *to = k->target;
    if (to == NULL || to->dtype != t->dtype || to->numel != t->numel || t->numel == 0)
        return;
    /* Nowhere to report a failed copy to: the item keeps what it had. */
    (void)dl_cuda_copy(to->data, to->device, t->data, t->device, dl_tensor_nbytes(t));
}

/* Writes back and frees what no pin holds any more. */
static void settle(void)
{
    size_t n = 0;
    for (size_t i = 0; i < tab.nkept; i++) {
        kept_t k = tab.kept[i];
        if (lab_pins_busy(k.t)) {
            tab.kept[n++] = k;
            continue;
        }
        write_back(&k);
        if (k.owned)
            dl_tensor_free(k.t);
    }
    tab.nkept = n;
}

bool lab_pins_keep(dl_tensor_t *t)
{
    if (t == NULL)
        return false;
    for (size_t i = 0; i < tab.nkept; i++)
        if (tab.kept[i].target == t)
            tab.kept[i].target = NULL; /* nothing to write back into */
    kept_t *k = kept_entry(t);
    if (!lab_pins_busy(t)) {
        if (k != NULL) { /* its work is done, not yet released */
            write_back(k);
            *k = tab.kept[--tab.nkept];
        }
        return false;
    }
    if (k != NULL) {
        k->owned = true;
        return true;
    }
    if (keep(t, NULL, true) == DL_OK)
        return true;
    /* No room to keep it: wait for the work that uses it instead. */
    for (size_t i = 0; i < tab.npins; i++)
        dl_work_wait((dl_work_t *)tab.pins[i].w, -1);
    return false;
}

dl_status_t lab_pins_write_back(dl_tensor_t *t, dl_tensor_t *target, bool owned)
{
    return keep(t, target, owned);
}

void lab_pins_release(const dl_work_t *w)
{
    size_t n = 0;
    for (size_t i = 0; i < tab.npins; i++)
        if (tab.pins[i].w != w)
            tab.pins[n++] = tab.pins[i];
    tab.npins = n;
    settle();
    if (tab.npins == 0) { /* the table's memory goes with its last pin */
        free(tab.pins);
        tab.pins = NULL;
        tab.cap = 0;
    }
    if (tab.nkept == 0) {
        free(tab.kept);
        tab.kept = NULL;
        tab.kept_cap = 0;
    }
}
