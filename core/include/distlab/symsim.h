/* The symbolic simulator: runs a schedule for every rank at once by the
 * step semantics of sched.h, on elements that record where they came from
 * instead of holding numbers. It answers "what does each element hold now?"
 * as a sum of the ranks' inputs (`a2+c2+d2`), for `explain --symbolic`, for
 * views that show a partial sum travelling round a ring, and for the tests
 * that check every algorithm against the collective's definition.
 *
 * Every element is (origin, contributions, scaled): origin is the element's
 * index in the IN it started from (-1 for memory never written, which no
 * action may read), contributions counts per rank how often that rank's
 * input went into it, and scaled counts the SCALE actions it went through.
 * COPY copies an element, REDUCE requires two elements of the same origin
 * (neither scaled) and adds their contribution counts, SCALE marks an
 * element averaged. Whether a result is right is then a question about
 * these three fields, for any op and any dtype. */
#ifndef DISTLAB_SYMSIM_H
#define DISTLAB_SYMSIM_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/sched.h"
#include "distlab/status.h"

typedef struct dl_symsim dl_symsim_t;

/* The state before step 1: on every rank r, IN[i] = (i, only r, 0); OUT
 * and TMP are unwritten. The schedule must outlive the simulator. */
dl_status_t dl_symsim_new(const dl_sched_t *s, dl_symsim_t **sim_p);
void dl_symsim_free(dl_symsim_t *sim);

/* Runs the next step. DL_ERR_INVALID with a one-line reason in why (an
 * unwritten element read, a reduce of different origins, ...) when the
 * schedule breaks the rules; DL_ERR_INVALID too when every step has run. */
dl_status_t dl_symsim_step(dl_symsim_t *sim, char *why, size_t cap);
/* Runs every step that has not run yet. */
dl_status_t dl_symsim_run(dl_symsim_t *sim, char *why, size_t cap);
/* How many steps have run. */
size_t dl_symsim_steps_run(const dl_symsim_t *sim);

/* Element i of buffer b on rank r now. */
int dl_symsim_origin(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i);
int dl_symsim_scaled(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i);
/* How often rank q's input went into that element. */
int dl_symsim_contrib(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i, int q);

/* Whether rank r has heard from rank q, directly or through others: every
 * message (empty ones too) carries what its sender had heard when the
 * step began. */
bool dl_symsim_heard(const dl_symsim_t *sim, int r, int q);

/* Element i of b on rank r as a person reads it: rank q's input element j
 * is a letter and the index ("a0" for rank 0, "c2" for rank 2; "r30.2"
 * past 26 ranks), a sum joins them in rank order ("a2+c2+d2"), an input
 * that went in k times shows k first ("2a2"), an averaged element is the
 * sum over the ranks ("(a0+b0)/2"), an element never written is "-".
 * Writes at most cap bytes, NUL included; returns the length it needed. */
size_t dl_symsim_format(const dl_symsim_t *sim, int r, dl_buf_t b, size_t i, char *buf, size_t cap);

#endif
