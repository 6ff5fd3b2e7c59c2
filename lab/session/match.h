/* Collective matching: the shell's check that every rank of a group is
 * about to run the same collective, before any data moves.
 *
 * In the shell, a rank sends the fingerprint of each collective it is about
 * to start (group, sequence number on that group, collective, dtype, count,
 * root, op) and waits for a verdict. The shell decides as soon as it can:
 *   - every rank of the group sent the same key (group, sequence number):
 *     the fingerprints are compared; equal means go, different means a
 *     mismatch, reported rank by rank (like TORCH_DISTRIBUTED_DEBUG=DETAIL);
 *   - the collective can never complete, because a rank of its group is
 *     idle (its statements are done), dead, or itself waiting on a collective
 *     that can never complete (a cycle): refused, with who is where.
 * Otherwise it waits: a rank still running statements may yet call it. */
#ifndef LAB_MATCH_H
#define LAB_MATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "distlab/status.h"

/* UNRESPONSIVE: alive, but it stopped answering (lab/ctrl/controller.h); it
 * counts as gone, like DEAD. */
typedef enum {
    LAB_RANK_RUNNING,
    LAB_RANK_IDLE,
    LAB_RANK_DEAD,
    LAB_RANK_UNRESPONSIVE,
    LAB_RANK_FAILED /* idle: a statement of the line failed there, and its error is told */
} lab_rank_state_t;

typedef struct {
    bool posted;
    uint64_t ctx, seq;
    uint64_t call; /* the number a report gives it: its rank's calls written on the group */
    int *group;    /* world ranks */
    int ngroup;
    char coll[24];
    char what[160]; /* "all_reduce float32[4] op=sum": what must agree */
    /* an all_to_all with split sizes: the elements this rank sends to and
     * expects from each rank of the group, in group order (else NULL),
     * which must pair up across ranks */
    long long *send, *recv;
} lab_fp_t;

/* A collective refused as one that can never complete, and the ranks of
 * its group that had not called it yet: when one of them calls it after
 * all, it is refused too, without a second report. */
typedef struct {
    uint64_t ctx, seq;
    bool *late; /* per rank */
    char message[160];
} lab_refusal_t;

typedef struct {
    int np;
    lab_fp_t *fp; /* one per rank: a rank waits for one verdict at a time */
    lab_refusal_t *refused;
    int n_refused;
} lab_match_t;

typedef struct {
    /* The verdict for a rank that posted: ok, or refused with message. */
    void (*verdict)(void *arg, int rank, bool ok, const char *message);
    /* A report for the person, several lines without a trailing newline. */
    void (*report)(void *arg, const char *text);
    void *arg;
} lab_match_cbs_t;

dl_status_t lab_match_init(lab_match_t *m, int np);
void lab_match_fini(lab_match_t *m);
/* Records a rank's {"type":"coll", ...} event. A malformed event or a rank
 * out of range is DL_ERR_PROTOCOL. */
dl_status_t lab_match_post(lab_match_t *m, int rank, const json_t *ev);
/* Forgets what a rank posted (it died, or was interrupted). */
void lab_match_forget(lab_match_t *m, int rank);
/* Whether any rank waits for a verdict. */
bool lab_match_pending(const lab_match_t *m);
/* Decides every collective that can be decided; state[r] says what each
 * rank that has not posted is doing. With patient, a collective that can
 * never complete is not refused while a rank of its group is still running
 * statements (it is likely about to call it, and the report should say so);
 * the caller decides again, impatiently, a moment later. */
void lab_match_decide(lab_match_t *m, const lab_rank_state_t *state, bool patient,
                      const lab_match_cbs_t *cbs);
/* Whether a rank is still running statements in a group with a pending
 * collective (so a patient decision left it waiting). */
bool lab_match_waits_on_running(const lab_match_t *m, const lab_rank_state_t *state);
/* Forgets the refusals (the line they belong to is over). */
void lab_match_clear_refusals(lab_match_t *m);

#endif
