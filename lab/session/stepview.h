/* What a view draws of a stepped collective beyond its records
 * (lab/session/stepper.h): the chunk each element belongs to, every step's
 * messages as `explain` writes them, the bytes moved so far, the
 * alpha-beta estimate, and each element as the sum of the ranks' inputs
 * ("a2+c2+d2"). These need the whole schedule: it is built again from the
 * arguments the ranks sent with their step events (rec->args), and kept
 * only when its step count is the one recorded. The terminal view reads
 * them here, so that it never calls core itself. */
#ifndef LAB_SESSION_STEPVIEW_H
#define LAB_SESSION_STEPVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/sched.h"
#include "distlab/stepdesc.h"
#include "distlab/symsim.h"
#include "lab/session/stepper.h"

typedef struct {
    /* What the schedule was built for (compared on every draw). */
    char coll[24], algo[24];
    dl_coll_args_t args;
    int ngroup;
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
} lab_stepview_t;

/* Message m of a step as one line, in the columns of the whole schedule
 * (as `explain` prints it; d's own columns when there is no schedule). */
size_t lab_stepview_msg_line(const lab_stepview_t *v, const dl_step_desc_t *d, size_t m, char *buf,
                             size_t cap);
/* "384 B", "1.5 KiB": a byte count as explain writes it. */
const char *lab_stepview_bytes_text(size_t bytes, char *buf, size_t cap);
/* The name of the buffer the panels show ("in", "out"), or "buf". */
const char *lab_stepview_buf_name(const lab_stepview_t *v);

void lab_stepview_fini(lab_stepview_t *v);
/* Makes v describe rec's collective (a no-op when it does already). Returns
 * whether a matching schedule is there. */
bool lab_stepview_sync(lab_stepview_t *v, const lab_stepper_t *st, const lab_step_rec_t *rec);

/* The chunk of element i of world rank r's shown buffer, or -1. */
int lab_stepview_chunk(const lab_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i);
/* The messages of step k (1-based), from the schedule, or NULL. */
const dl_step_desc_t *lab_stepview_desc(const lab_stepview_t *v, int k);
/* How long steps 1..k took as the session saw them (rec->took_us), in
 * microseconds: the time a person waited at a pause is not in it. */
double lab_stepview_took_us(const lab_stepper_t *st, int k);
/* The bytes every message of steps 1..k carried, from the records. */
size_t lab_stepview_bytes(const lab_stepper_t *st, int k);
/* Element i of world rank r's shown buffer after step k, as a sum of the
 * ranks' inputs ("a2+c2+d2"), into buf; false when unknown. */
bool lab_stepview_symbol(lab_stepview_t *v, const lab_step_rec_t *rec, int r, size_t i, char *buf,
                         size_t cap);
/* The same for the shown buffer (tmp false) or the scratch buffer (tmp). */
bool lab_stepview_symbol_in(lab_stepview_t *v, const lab_step_rec_t *rec, int r, bool tmp, size_t i,
                            char *buf, size_t cap);

/* The index in the whole buffer of the i-th element a print of a buffer of
 * len shows, when it shows shown of them (all, or torch's first and last
 * halves). */
size_t lab_stepview_index(int64_t len, size_t shown, size_t i);

#endif
