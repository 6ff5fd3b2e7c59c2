/* The session model: what the controller knows of every rank, folded from
 * their events. Printers and (later) the TUI are views of it; nothing else
 * keeps its own copy of the truth. */
#ifndef LAB_SESSION_H
#define LAB_SESSION_H

#include <stdbool.h>

#include <jansson.h>

#include "distlab/frame.h"
#include "distlab/tensor.h"

typedef struct {
    char label[32]; /* "before", "after", "after r0 -> r1", "assign", "print" */
    char name[32];  /* "tensor", "gather_list", ... */
    int index, of;  /* position in a list; of == 0 for a single tensor */
    bool tuple;     /* the list is a tuple (t.chunk(2)): printed (a, b) */
    int ndim;       /* the tensor's shape */
    int64_t shape[DL_MAX_DIMS];
    dl_tensor_t *t;     /* on the host: the elements a print shows (dl_tensor_shown_shape),
                         * or all of them (lab_shell_whole); NULL when the name holds None */
    dl_device_t device; /* where it lived on its rank: printed as torch prints it */
    int notes_before;   /* the rank's notes that came before it, so that the two print in order */
} lab_snap_t;

typedef struct {
    int pid;
    bool connected; /* said hello */
    bool ready, done, failed;
    bool died; /* ended before finishing its job */
    char error[512];
    lab_snap_t *snaps;
    int n_snaps;
    /* Array of {"text", "of"}: of is "assign" (what an assignment bound),
     * "print" (what print showed) or "" (what a command did), as a
     * snapshot's label is "assign", "print" or "after". */
    json_t *notes;
    json_t *logs;  /* array of strings */
    json_t *bench; /* array of bench rows */
    /* The tensors the rank has shown, by name: {"dtype", "shape"} of the
     * last snapshot of each (the shell's `explain COLL TENSOR`). */
    json_t *tensors;
    /* The last snapshot of each tensor it has shown, in the order the names
     * first appeared; a list's items are one entry each (index, of). The
     * terminal view draws a rank's panel from these. */
    lab_snap_t *shown;
    int n_shown;
    char algo[32];
    long long steps;
    /* The step it is in: "all_reduce step 2/6 (reduce-scatter)"; "" once
     * that collective, or the statement it ran in, ended. */
    char where[160];
    char last_error[320]; /* the last error it logged, whatever the statement: why it died */
    /* where came from a beat (a benchmark sends no step events): it may be
     * up to a beat behind. */
    bool where_from_beat;
    /* Where the collective it finished last ended. The rank's step board
     * keeps that step after it, so a beat that tells it is old news. */
    char ended[160];
    /* Its controller declared it not responding (lab/ctrl/controller.h). */
    bool unresponsive;
} lab_rank_model_t;

typedef struct {
    int np;
    lab_rank_model_t *ranks;
} lab_session_t;

dl_status_t lab_session_init(lab_session_t *s, int np);
void lab_session_fini(lab_session_t *s);
/* Folds one event of a rank into the model. */
void lab_session_fold(lab_session_t *s, int rank, const dl_frame_t *f);
/* Records the name, dtype and shape of a snapshot's tensor in the rank's
 * tensors, and the snapshot itself in its shown table (replacing the last
 * one of that name: a list's first item replaces the whole list). */
void lab_session_learn_tensor(lab_session_t *s, int rank, const dl_frame_t *f);
/* Forgets what the rank has shown of name (its tensors, its panel's
 * entries): the rank deleted it (an "unbound" event, `del name`). */
void lab_session_forget(lab_session_t *s, int rank, const char *name);
/* A snapshot's tensor as torch prints it, or "None" (malloc'd), or NULL. */
char *lab_snap_text(const lab_snap_t *sn);
/* The elements of a snapshot's shape; whether its tensor holds them all
 * (a small tensor, or one that came whole: lab_shell_whole) rather than
 * the block a print shows. */
size_t lab_snap_numel(const lab_snap_t *sn);
bool lab_snap_is_whole(const lab_snap_t *sn);
/* The rank is through with the statement it ran (done, failed or given
 * up): it is in no collective any more. */
void lab_session_left(lab_session_t *s, int rank);
/* Forgets the results of the last job (snapshots, notes, bench rows); the
 * shown table stays. */
void lab_session_clear_results(lab_session_t *s);

#endif
