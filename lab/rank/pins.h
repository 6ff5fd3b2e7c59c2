/* Tensors that async work still reads or writes. A script may drop a
 * tensor while an isend, an irecv or an async_op=True collective on it is
 * in flight (h = dist.irecv(t, src=0); t = None): torch's work handle keeps
 * the tensor's storage alive until the work is done, and so does this
 * table. A pinned tensor the script drops becomes the table's, and is
 * freed once no unfinished work uses its memory.
 *
 * The table also finishes a loop's write-back: in `for g in grads:
 * reqs.append(dist.all_reduce(g, async_op=True))` the loop variable is a
 * copy of the list's item (lab__eval_each), which the collective fills
 * after the iteration has ended. The copy is written into the item once
 * the work is done, as if g had been the item itself. */
#ifndef LAB_PINS_H
#define LAB_PINS_H

#include <stdbool.h>

#include "distlab/comm.h"

/* Records that work w uses t's memory until it finishes. DL_ERR_NOMEM
 * (nothing recorded) without memory: the caller then waits for w. */
dl_status_t lab_pins_add(dl_work_t *w, const dl_tensor_t *t);
/* Whether unfinished work uses any of t's memory. */
bool lab_pins_busy(const dl_tensor_t *t);
/* t is about to be freed. True: unfinished work uses its memory, so the
 * table takes t and frees it later; the caller must not free it. A
 * write-back into t (lab_pins_write_back) is forgotten. */
bool lab_pins_keep(dl_tensor_t *t);
/* Once no unfinished work uses t (which must be busy), copies it into
 * target (when target is not NULL, not freed by then, and shaped like t).
 * owned: the table frees t after; else t belongs to a value, until that
 * value drops it (lab_pins_keep). DL_ERR_NOMEM: nothing recorded. */
dl_status_t lab_pins_write_back(dl_tensor_t *t, dl_tensor_t *target, bool owned);
/* Work w is finished or about to be freed: its pins go, and the tensors no
 * other work uses are written back and freed. w is only compared, never
 * read. */
void lab_pins_release(const dl_work_t *w);

#endif
