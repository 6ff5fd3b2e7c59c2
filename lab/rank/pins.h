/* Tensors that async work still reads or writes. A script may drop a
 * tensor while an isend, an irecv or an async_op=True collective on it is
 * in flight (h = dist.irecv(t, src=0); t = None): torch's work handle keeps
 * the tensor's storage alive until the work is done, and so does this
 * table. A pinned tensor the script drops becomes the table's, and is
 * freed once no unfinished work uses its memory.
 *
 * A loop over a list variable gives its variable the list's own tensors
 * (lab__eval_each), which the body may drop from the list (grads = None,
 * grads[i] = x) while the variable still refers to one: the table keeps
 * such a tensor until the iteration ends, and the loop then hands it to
 * the variable, as Python's loop variable keeps its object. */
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
 * table takes t and frees it later; the caller must not free it. */
bool lab_pins_keep(dl_tensor_t *t);
/* Work w is finished or about to be freed: its pins go, and the tensors no
 * other work uses are freed. w is only compared, never read. */
void lab_pins_release(const dl_work_t *w);

/* Lends t, a list's item, to a loop's iteration: dropping it (lab_pins_keep)
 * frees nothing until lab_pins_unlend. False: no memory to lend it (the
 * loop then gives a copy). */
bool lab_pins_lend(const dl_tensor_t *t);
/* The iteration has ended. True: the list dropped t meanwhile, and t is
 * now the caller's; false: the list still owns it (or an outer loop's
 * iteration still has it lent). */
bool lab_pins_unlend(dl_tensor_t *t);

#endif
