/* `distlab train`: a data-parallel trainer with checkpoints, the worker
 * program of an elastic launcher (torchrun's elastic example in C).
 *
 * Every rank holds the whole model (lab/elastic/model.h), trains on its own
 * batches, seeded by (seed, epoch, rank), and averages the gradients with an
 * all_reduce after every step, so the weights stay equal on every rank; a
 * check after each epoch compares their checksums across the ranks and
 * fails loudly if they differ. Rank 0 saves a checkpoint after every epoch
 * (lab/elastic/checkpoint.h); a restarted world, of any size, reads it on
 * rank 0, broadcasts it and goes on with the next epoch.
 *
 * The rank comes from torchrun's environment (env://: MASTER_ADDR,
 * MASTER_PORT, RANK, WORLD_SIZE; LOCAL_RANK, which is RANK when unset;
 * rank 0 serves the store). Output, one line each, flushed at once:
 *
 *   [PID] resuming from checkpoint PATH at epoch E      (every rank, on resume)
 *   [PID] epoch E (rank = R, local_rank = L, world_size = W) loss = X
 *   [PID] final weights checksum = HEX (rank = R, world_size = W)
 *
 * loss is the rank's own loss averaged over the epoch's steps, and HEX the
 * 16 hex digits of lab_mlp_checksum. SIGTERM and SIGINT end the process at
 * once (by the signal, after one line on stderr), except while rank 0
 * writes a checkpoint, which is finished first. */
#ifndef LAB_ELASTIC_TRAINER_H
#define LAB_ELASTIC_TRAINER_H

#include <stdint.h>

typedef struct {
    int64_t epochs;         /* in all, counted from 0; a resumed run goes up to it */
    int steps_per_epoch;    /* optimizer steps per epoch */
    int batch;              /* examples per step and rank */
    double lr;              /* SGD's learning rate */
    double sleep_s;         /* a pause after every epoch but the last, for demos */
    const char *checkpoint; /* NULL: none */
    uint64_t seed;          /* of the initial weights and the batches */
    double timeout_s;       /* every wait; 0: DISTLAB_TIMEOUT, else 30 s */
} lab_train_opts_t;

/* 10 epochs of 10 steps of 32 examples, lr 0.01, seed 0, no checkpoint. */
void lab_train_defaults(lab_train_opts_t *o);

/* Runs this rank of the training. Returns the process's exit status: 0,
 * 2 for a malformed or missing environment, 1 for any other failure (a
 * peer's death, a timeout, a corrupt checkpoint), each told in one line on
 * stderr. */
int lab_train_main(const lab_train_opts_t *o);

#endif
