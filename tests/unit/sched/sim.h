/* A symbolic simulator for schedules: runs a schedule for every rank at
 * once by the step semantics of sched.h, on elements that record where
 * they came from instead of holding numbers.
 *
 * Every element is (origin, contributions, scaled): origin is the element's
 * index in the IN it started from (-1 for memory never written, which no
 * action may read), contributions counts per rank how often that rank's
 * input went into it, and scaled counts the SCALE actions it went through.
 * COPY copies an element, REDUCE requires two elements of the same origin
 * (neither scaled) and adds their contribution counts, SCALE marks an
 * element averaged. Whether a result is right is then a question about
 * these three fields, for any op and any dtype. */
#ifndef DISTLAB_TEST_SCHED_SIM_H
#define DISTLAB_TEST_SCHED_SIM_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/sched.h"

typedef struct sim sim_t;

/* The state before the call: on every rank r, IN[i] = (i, only r, 0);
 * OUT and TMP are unwritten. NULL when out of memory. */
sim_t *sim_new(const dl_sched_t *s);
void sim_free(sim_t *sim);

/* Runs every step. Returns 0, or -1 with a one-line reason in why (an
 * unwritten element read, a reduce of different origins, ...). */
int sim_run(sim_t *sim, char *why, size_t cap);

/* Element i of buffer b on rank r after the run. */
int sim_origin(const sim_t *sim, int r, dl_buf_t b, size_t i);
int sim_scaled(const sim_t *sim, int r, dl_buf_t b, size_t i);
/* How often rank q's input went into that element. */
int sim_contrib(const sim_t *sim, int r, dl_buf_t b, size_t i, int q);

/* Whether rank r has heard from rank q, directly or through others: every
 * message (empty ones too) carries what its sender had heard when the
 * step began. */
bool sim_heard(const sim_t *sim, int r, int q);

#endif
