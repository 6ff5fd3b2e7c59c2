/* Tensors that async work still reads or writes. A script may drop a
 * tensor while an isend, an irecv or an async_op=True collective on it is
 * in flight (h = dist.irecv(t, src=0); t = None): torch's work handle keeps
 * the tensor's storage alive until the work is done, and so does this
 * table. A pinned tensor the script drops becomes the table's, and is
 * freed once no unfinished work uses its memory.
 *
 * A loop over a list variable binds its variable to a copy of each item,
 * written back into the list when the body has changed it in place
 * (lab__eval_each). Work still running at the iteration's end would land
 * in the copy alone, so the table also knows those copies: async calls
 * that would write into one are refused (lab_pins_loop_copy). */
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

/* How deep the loops the table knows may nest (deeper ones are not known). */
#define LAB_PINS_LOOP_MAX 64
/* A loop's iteration binds its variable to copy; leave ends it. */
void lab_pins_loop_enter(const dl_tensor_t *copy);
void lab_pins_loop_leave(void);
/* Whether t's memory is that of a copy a running loop holds. */
bool lab_pins_loop_copy(const dl_tensor_t *t);

#endif
