/* The pinned-tensor table (pins.h). One per rank process, as a rank runs
 * one session; it holds few entries (the async calls in flight), so plain
 * arrays searched in order serve. */
#include <stdint.h>
#include <stdlib.h>

#include "lab/rank/pins.h"

typedef struct {
    const dl_work_t *w;
    const uint8_t *data; /* the memory the work uses: [data, data + nbytes) */
    size_t nbytes;
} pin_t;

/* A tensor the script dropped while work used it: freed once no pin
 * overlaps it. */
typedef struct {
    dl_tensor_t *t;
} kept_t;

static struct {
    pin_t *pins;
    size_t npins, cap;
    kept_t *kept;
    size_t nkept, kept_cap;
    /* the copies loops hold of their list's items (lab__eval_each), innermost last */
    const dl_tensor_t *loop[LAB_PINS_LOOP_MAX];
    int nloop;
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

bool lab_pins_keep(dl_tensor_t *t)
{
    if (t == NULL || !lab_pins_busy(t))
        return false;
    kept_t *kept = room_for(tab.kept, &tab.kept_cap, tab.nkept, sizeof(*kept));
    if (kept != NULL) {
        tab.kept = kept;
        tab.kept[tab.nkept++] = (kept_t){t};
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
        if (lab_pins_busy(tab.kept[i].t))
            tab.kept[n++] = tab.kept[i];
        else
            dl_tensor_free(tab.kept[i].t);
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

void lab_pins_loop_enter(const dl_tensor_t *copy)
{
    if (tab.nloop < LAB_PINS_LOOP_MAX)
        tab.loop[tab.nloop] = copy;
    tab.nloop++;
}

void lab_pins_loop_leave(void)
{
    if (tab.nloop > 0)
        tab.nloop--;
}

bool lab_pins_loop_copy(const dl_tensor_t *t)
{
    if (t == NULL || t->data == NULL)
        return false;
    const uint8_t *lo = t->data, *hi = lo + dl_tensor_nbytes(t);
    for (int i = 0; i < tab.nloop && i < LAB_PINS_LOOP_MAX; i++) {
        const dl_tensor_t *c = tab.loop[i];
        if (c != NULL && c->data != NULL && (const uint8_t *)c->data < hi &&
            lo < (const uint8_t *)c->data + dl_tensor_nbytes(c))
            return true;
    }
    return false;
}
