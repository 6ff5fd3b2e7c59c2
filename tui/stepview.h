/* The step view: what the terminal view draws while a collective is
 * stepped, from the stepper's records (lab/session/stepper.h), never from
 * the shell's text. Each rank's panel shows its buffer after the step with
 * the elements the step changed lit up and every element in the colour of
 * its chunk; a pane lists the step's messages as `explain` writes them; the
 * header adds the bytes moved so far and the alpha-beta estimate; `s`
 * shows each element as the sum of the ranks' inputs instead of a number.
 *
 * Chunks, the cost and the symbolic values need the whole schedule, which
 * the records do not carry: the view builds it again from what they say
 * (collective, algorithm, group size, buffer length, dtype) and keeps it
 * only when its steps describe exactly the messages recorded. */
#ifndef TUI_STEPVIEW_H
#define TUI_STEPVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/sched.h"
#include "distlab/stepdesc.h"
#include "distlab/symsim.h"
#include "lab/session/stepper.h"

typedef struct {
    /* What the schedule was built for (compared on every draw). */
    char coll[24], algo[24];
    int ngroup;
    int64_t len;
    size_t elem_size;
    bool tried; /* built, or found no schedule that matches: not again */
    /* The schedule that matches the records, or NULL. */
    dl_sched_t *s;
    dl_step_desc_t *descs;  /* every step's description, world ranks */
    int **chunk;            /* [group rank][element of the shown buffer]: its chunk, -1 none */
    size_t *nelem;          /* [group rank]: the shown buffer's length */
    dl_buf_t *shown;        /* [group rank]: OUT, or IN where OUT is empty */
    dl_msg_widths_t widths; /* the columns of every step's messages, as explain has them */
    dl_sched_stats_t stats;
    dl_symsim_t *sim; /* run to some step; rewound by making it again */
} tui_stepview_t;

void tui_stepview_fini(tui_stepview_t *v);
/* Makes v describe rec's collective (a no-op when it does already). Returns
 * whether a matching schedule is there. */
bool tui_stepview_sync(tui_stepview_t *v, const lab_stepper_t *st, const lab_step_rec_t *rec);

/* The chunk of element i of world rank r's shown buffer, or -1. */
int tui_stepview_chunk(const tui_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i);
/* The messages of step k (1-based), from the schedule, or NULL. */
const dl_step_desc_t *tui_stepview_desc(const tui_stepview_t *v, int k);
/* The bytes every message of steps 1..k carried, from the records. */
size_t tui_stepview_bytes(const lab_stepper_t *st, int k);
/* Element i of world rank r's shown buffer after step k, as a sum of the
 * ranks' inputs ("a2+c2+d2"), into buf; false when unknown. */
bool tui_stepview_symbol(tui_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i, char *buf,
                         size_t cap);

/* The index in the whole buffer of the i-th element a print of a buffer of
 * len shows, when it shows shown of them (all, or torch's first and last
 * halves). */
size_t tui_stepview_index(int64_t len, size_t shown, size_t i);

#endif
