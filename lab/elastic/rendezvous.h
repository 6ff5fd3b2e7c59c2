/* The elastic rendezvous: how the agents of one run (`distlab launch`, one
 * per node) agree, round after round, on who takes part and who is node 0,
 * through distlab's TCP key-value store (distlab/store.h).
 *
 * The first agent to bind the endpoint serves the store (on a thread of its
 * own); the others are its clients. If that agent's node goes away, the
 * store goes with it and the run ends (torchrun's c10d backend has the same
 * limit). Every key lives under "launch/RUN_ID/"; the host records its run
 * id under "launch/run_id", and an agent of another run is refused with one
 * line as it connects.
 *
 * Keys (P = launch/RUN_ID, R = P/rN for round N):
 *
 *   P/agents            counter: each agent's arrival number, its id
 *   P/hb/A              counter: agent A's keep-alives
 *   P/round             counter: the newest round opened (a hint)
 *   P/failed, P/succeeded  counters: the run is over; P/why: why it failed
 *   R/joined            counter: join order; +BIG closes the round
 *   R/node/I            JSON of the I-th agent to join
 *   R/info, R/closed    the members in node-rank order, restart count,
 *                       master address (JSON); closed is set after info
 *   R/restart           counter: the round is over, go to the next one;
 *                       R/fail, R/grow, R/lost (and R/lost/A) say why
 *   R/failure           JSON of the first failed worker
 *   R/done, R/exited    counters: nodes whose workers all succeeded; agents
 *                       that have finished with the store
 *
 * A round closes when MAX agents have joined, or MIN have and then either
 * every member of the previous round still alive has joined again (a
 * restart), or, with no such members (the first round), the last-call
 * window has passed. Any member may close it: it adds BIG to R/joined, and
 * the one whose add returns a value below 2 BIG is the closer; an agent
 * whose join returns more than BIG is late and goes on to the next round,
 * after asking the running one to make room for it (R/grow) unless it is
 * full. The store has no compare-and-set: the atomic add is enough. */
#ifndef LAB_ELASTIC_RENDEZVOUS_H
#define LAB_ELASTIC_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>

#include "distlab/status.h"

#define LAB_RDZV_DEFAULT_PORT 29400
#define LAB_RDZV_MAX_NODES    256
#define LAB_RDZV_ID_MAX       64

/* torchrun's --rdzv-conf keys. */
typedef struct {
    double last_call_timeout_s;   /* once MIN agents are in, wait this long for more (1) */
    double join_timeout_s;        /* a rendezvous that does not close by then fails (600) */
    double keep_alive_interval_s; /* how often an agent says it is alive (1) */
    int keep_alive_max_attempt;   /* this many missed in a row: it is gone (3) */
    double read_timeout_s;        /* every store request (10) */
} lab_rdzv_conf_t;

void lab_rdzv_conf_init(lab_rdzv_conf_t *c);
/* Applies "key=value,key=value". false with one line in why. */
bool lab_rdzv_conf_parse(lab_rdzv_conf_t *c, const char *s, char *why, size_t cap);
/* "N" or "MIN:MAX". */
bool lab_rdzv_parse_nnodes(const char *s, int *min_p, int *max_p, char *why, size_t cap);
/* "HOST:PORT", "[V6]:PORT" or "HOST" (port 29400). */
bool lab_rdzv_parse_endpoint(const char *s, char *host, size_t host_cap, int *port_p, char *why,
                             size_t cap);
/* A run id: 1 to 64 of [A-Za-z0-9_.-]. */
bool lab_rdzv_check_id(const char *id, char *why, size_t cap);

/* Waits up to ms for the agent's events (its loop: signals, workers'
 * exits); false when the agent must stop (a signal). */
typedef bool (*lab_rdzv_wait_fn)(void *arg, int ms);

typedef struct {
    const char *run_id;
    const char *host; /* the endpoint */
    int port;         /* 0: a free port, hosted here (--standalone) */
    int min_nodes, max_nodes;
    int nproc;         /* workers on this node */
    int max_restarts;  /* recorded in each round by the agent that closes it */
    const char *token; /* NULL: the store asks for none */
    lab_rdzv_conf_t conf;
    lab_rdzv_wait_fn wait;
    void *wait_arg;
} lab_rdzv_opts_t;

typedef struct {
    int arrival; /* the agent's number in the run (1, 2, ...) */
    char host[64];
    char addr[64]; /* where its workers can be reached */
    int port;      /* a free port there: MASTER_PORT when it is node 0 */
    int nproc;
    int pid;
} lab_rdzv_node_t;

typedef struct {
    int round;
    int restart_count, max_restarts;
    int nnodes;
    lab_rdzv_node_t nodes[LAB_RDZV_MAX_NODES]; /* node-rank order */
    int node_rank;                             /* ours */
    int world_size;
    int rank_base; /* our first global rank */
} lab_rdzv_round_t;

/* Why a running round ends. */
typedef enum {
    LAB_RDZV_RUNNING,
    LAB_RDZV_FAIL, /* a worker failed: counts as a restart */
    LAB_RDZV_LOST, /* an agent left or stopped answering */
    LAB_RDZV_GROW, /* an agent waits to join */
    LAB_RDZV_DONE, /* every node's workers succeeded */
    LAB_RDZV_OVER, /* another agent ended the run (lab_rdzv_error says why) */
} lab_rdzv_event_t;

/* How the run ended, as another agent reported it. */
typedef enum { LAB_RDZV_GOING, LAB_RDZV_SUCCEEDED, LAB_RDZV_FAILED } lab_rdzv_outcome_t;

typedef struct {
    int round;
    int node_rank, local_rank, rank, pid;
    int exit_code; /* meaningful when signal is 0 */
    int signal;
    char host[64];
    char time[32]; /* local time, as torchrun prints it */
} lab_rdzv_failure_t;

typedef struct lab_rdzv lab_rdzv_t;

/* Hosts the store (when the endpoint can be bound here) or connects to it,
 * within join_timeout, and checks the run id. On failure, one line in why:
 * the port taken by another program (named when /proc says which), no store
 * answering (with the timeout), another run's store. */
dl_status_t lab_rdzv_open(const lab_rdzv_opts_t *o, lab_rdzv_t **rz_p, char *why, size_t cap);
bool lab_rdzv_is_host(const lab_rdzv_t *rz);
/* "127.0.0.1:29400": the endpoint as bound (the free port for standalone). */
const char *lab_rdzv_endpoint(const lab_rdzv_t *rz);
int lab_rdzv_arrival(const lab_rdzv_t *rz);

/* Joins the next round and waits until it closes. DL_ERR_TIMEOUT after
 * join_timeout, DL_ERR_ABORTED when the wait function says stop, or when
 * the run is already over (lab_rdzv_outcome says how); other errors: the
 * store is gone. Each with its line in lab_rdzv_error. */
dl_status_t lab_rdzv_next_round(lab_rdzv_t *rz, const lab_rdzv_round_t **round_p);
lab_rdzv_outcome_t lab_rdzv_outcome(const lab_rdzv_t *rz);
const char *lab_rdzv_error(const lab_rdzv_t *rz);

/* Sends this agent's keep-alive when one is due. */
dl_status_t lab_rdzv_tick(lab_rdzv_t *rz);
/* While the round runs: whether it must end, and why. LOST with *lost_p
 * set when this agent found a member's keep-alives missing (it tells the
 * others); LOST with *lost_p NULL when another agent did. */
dl_status_t lab_rdzv_poll(lab_rdzv_t *rz, lab_rdzv_event_t *ev_p, const lab_rdzv_node_t **lost_p);
/* This node's workers failed: f is the first of them. Ends the round for
 * every agent. */
dl_status_t lab_rdzv_report_failure(lab_rdzv_t *rz, const lab_rdzv_failure_t *f);
/* The round's first failure, as its node reported it. */
dl_status_t lab_rdzv_first_failure(lab_rdzv_t *rz, lab_rdzv_failure_t *f);
/* This node's workers all succeeded. */
dl_status_t lab_rdzv_mark_done(lab_rdzv_t *rz);
/* Ends the run for every agent (no more restarts, or a node cannot start
 * its workers at all; why says so, for the others): those still running
 * a round see OVER, those joining one give up. */
dl_status_t lab_rdzv_end_run(lab_rdzv_t *rz, bool failed, const char *why);
/* This agent leaves (a signal): the others restart without it, at once. */
void lab_rdzv_leave(lab_rdzv_t *rz);
/* Done with the store. The host waits (a little) for the other members to
 * be done with it too, then stops serving. */
void lab_rdzv_close(lab_rdzv_t *rz);

#endif
