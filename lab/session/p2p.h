/* Point-to-point matching: the shell's check that a blocking recv can still
 * be matched, so that one no rank will ever send to is reported at once
 * (like a collective that can never complete) instead of at the timeout.
 *
 * Before each send, isend, recv and irecv a rank tells the shell
 * {"type":"p2p","op":"send"|"recv","peer","tag","blocking","async","bytes"}.
 * The shell keeps a ledger in the order torch and MPI match messages: a send is taken by the
 * oldest recv waiting for it (from that sender or from any), else it waits
 * to be received; a recv takes the oldest send waiting for it, else it
 * waits. A blocking recv that waits while its sender (or, from any source,
 * every other rank) has no statement left to run, or is dead, can never
 * complete: the sender cannot send before the line is over, and the line
 * cannot be over before the recv is. The ledger lives as long as the world:
 * a message sent on one line may be received on the next.
 *
 * For views it also keeps a log of the operations posted, in the order the
 * shell heard of them: the last LAB_P2P_LOG_MAX, each with a sequence
 * number, a time, its size and, once the ledger pairs it with its peer
 * operation, the sequence number of that one. And it counts, per rank, the
 * sends and isends posted and the bytes they carry, over the whole world
 * (the log forgets; the counts do not): an exercise compares them before
 * and after the learner's code. */
#ifndef LAB_SESSION_P2P_H
#define LAB_SESSION_P2P_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "distlab/status.h"
#include "lab/session/match.h"

typedef struct {
    int src, dst, tag; /* src -1: any source (recvs only) */
    bool blocking;     /* a recv that holds its rank until it completes */
    int waits_on;      /* >= 0: a recv in a deadlock, whose src waits on this rank */
    long long note;    /* the posting rank's number for it (a wait names it) */
    uint64_t seq;      /* its entry in the log */
} lab_p2p_msg_t;

#define LAB_P2P_LOG_MAX 200

/* One operation of the log. */
typedef struct {
    uint64_t seq; /* 1, 2, ... for the world's operations, in order */
    double t;     /* seconds since the world's ledger began */
    int rank;     /* the rank that posted it */
    bool send;    /* send or isend; else recv or irecv */
    bool async;   /* isend or irecv */
    int peer;     /* dst of a send, src of a recv (-1: any source) */
    int tag;
    long long bytes;  /* what the tensor holds; -1 when the rank did not say */
    uint64_t matched; /* the seq of the operation it was paired with; 0: none yet */
    double t_matched; /* when it was */
    bool failed;      /* a recv that failed (refused, timed out, interrupted) unmatched */
} lab_p2p_entry_t;

typedef struct {
    int np;
    lab_p2p_msg_t *sends, *recvs; /* waiting to be matched, oldest first */
    size_t n_sends, n_recvs;
    /* The log: a ring of the last LAB_P2P_LOG_MAX entries; n_log is how
     * many were ever posted (the last one's seq). */
    lab_p2p_entry_t log[LAB_P2P_LOG_MAX];
    uint64_t n_log;
    double t0;
    /* Per rank: the sends and isends it posted, and their bytes (those
     * whose size the rank said). */
    long long *sent, *sent_bytes;
} lab_p2p_t;

dl_status_t lab_p2p_init(lab_p2p_t *p, int np);
void lab_p2p_fini(lab_p2p_t *p);
/* Records a rank's {"type":"p2p", ...} event; DL_ERR_PROTOCOL when it is
 * malformed or names a rank that does not exist. */
dl_status_t lab_p2p_post(lab_p2p_t *p, int rank, const json_t *ev);
/* The log: how many entries it keeps now, and entry i of them (0 the
 * oldest kept), or NULL past the end. */
size_t lab_p2p_log_len(const lab_p2p_t *p);
const lab_p2p_entry_t *lab_p2p_log_at(const lab_p2p_t *p, size_t i);
/* The entry with sequence number seq, or NULL when it is no longer kept. */
const lab_p2p_entry_t *lab_p2p_log_seq(const lab_p2p_t *p, uint64_t seq);
/* "send", "isend", "recv" or "irecv". */
const char *lab_p2p_op_name(const lab_p2p_entry_t *e);
/* Rank `rank` waits on one of its irecvs ("p2p_wait", naming the recv's
 * note): that recv, if not matched yet, now holds the rank as a blocking
 * recv does, and lab_p2p_hopeless may report it. */
void lab_p2p_wait(lab_p2p_t *p, int rank, const json_t *ev);
/* The rank's statement is over: a blocking recv of it no longer waits.
 * One that completed stays in the ledger for its send's notice, which may
 * reach the shell after the receiver's; one that failed is forgotten. */
void lab_p2p_done(lab_p2p_t *p, int rank, bool completed);
/* Finds a blocking recv that can never complete, given what each rank is
 * doing; writes "recv from rank 1 (tag 0) can never complete: ..." and
 * forgets it. Returns its rank, or -1 when there is none. */
int lab_p2p_hopeless(lab_p2p_t *p, const lab_rank_state_t *state, char *why, size_t cap);

#endif
