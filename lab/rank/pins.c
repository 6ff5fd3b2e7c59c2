/* The pinned-tensor table (pins.h). One per rank process, as a rank runs
 * one session; it holds few entries (the async calls in flight), so plain
 * arrays searched in order serve. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab/rank/pins.h"

typedef struct {
    const dl_work_t *w;
    const uint8_t *data; /* the memory the work uses: [data, data + nbytes) */
    size_t nbytes;
} pin_t;

static struct {
    pin_t *pins;
    size_t npins, cap;
    /* tensors the script dropped while work used them: freed once no pin
     * overlaps them */
    dl_tensor_t **kept;
    size_t nkept, kept_cap;
    /* the list items running loops give their variables (lab__eval_each),
     * innermost last, and those of them their lists have dropped since */
    const dl_tensor_t **loop;
    dl_tensor_t **dropped;
    size_t nloop, loop_cap, ndropped, dropped_cap;
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

/* Whether t is lent to a running loop; at *at_p the innermost lend. */
static bool lent(const dl_tensor_t *t, size_t *at_p)
{
    for (size_t i = tab.nloop; i-- > 0;) {
        if (tab.loop[i] == t) {
            if (at_p != NULL)
                *at_p = i;
            return true;
        }
    }
    return false;
}

bool lab_pins_keep(dl_tensor_t *t)
{
    if (t != NULL && lent(t, NULL)) {
        /* One entry per lent tensor at most: a tensor is dropped once. */
        tab.dropped[tab.ndropped++] = t;
        return true;
    }
    if (t == NULL || !lab_pins_busy(t))
        return false;
    dl_tensor_t **kept = room_for(tab.kept, &tab.kept_cap, tab.nkept, sizeof(*kept));
    if (kept != NULL) {
        tab.kept = kept;
        tab.kept[tab.nkept++] = t;
        return true;
    }
    /* No room to keep it: wait for the work that uses it instead. */
    for (size_t i = 0; i < tab.npins; i++)
        dl_work_wait((dl_work_t *)tab.pins[i].w, -1);
    return false;
}

void lab_pins_release(const dl_work_t *w)
{
    size_t n = 0;
    for (size_t i = 0; i < tab.npins; i++)
        if (tab.pins[i].w != w)
            tab.pins[n++] = tab.pins[i];
    tab.npins = n;
    n = 0;
    for (size_t i = 0; i < tab.nkept; i++) {
        if (lab_pins_busy(tab.kept[i]))
            tab.kept[n++] = tab.kept[i];
        else
            dl_tensor_free(tab.kept[i]);
    }
    tab.nkept = n;
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

bool lab_pins_lend(const dl_tensor_t *t)
{
    /* dropped gets room as loop does: each lent tensor is dropped once */
    const dl_tensor_t **loop = room_for(tab.loop, &tab.loop_cap, tab.nloop, sizeof(*loop));
    if (loop == NULL)
        return false;
    tab.loop = loop;
    dl_tensor_t **dropped = room_for(tab.dropped, &tab.dropped_cap, tab.nloop, sizeof(*dropped));
    if (dropped == NULL)
        return false;
    tab.dropped = dropped;
    tab.loop[tab.nloop++] = t;
    return true;
}

bool lab_pins_unlend(dl_tensor_t *t)
{
    size_t at;
    if (!lent(t, &at))
        return false;
    memmove(&tab.loop[at], &tab.loop[at + 1], (tab.nloop - at - 1) * sizeof(tab.loop[0]));
    tab.nloop--;
    if (lent(t, NULL)) /* an outer loop still gives it */
        return false;
    for (size_t i = 0; i < tab.ndropped; i++) {
        if (tab.dropped[i] == t) {
            tab.dropped[i] = tab.dropped[--tab.ndropped];
            return true;
        }
    }
    return false;
}
