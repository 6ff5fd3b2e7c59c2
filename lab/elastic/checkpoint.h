/* Training checkpoints: a model's tensors, its optimizer's state and the
 * epoch reached, in a small binary file that is replaced atomically and
 * whose corruption is detected, never silently used.
 *
 * The format, version 1 (every number little-endian):
 *
 *   offset  size  field
 *        0     8  magic "DLCKPT\r\n"
 *        8     4  u32 version (1)
 *       12     4  u32 number of tensors
 *       16     8  u64 size of the whole file in bytes, checksum included
 *       24     8  i64 epoch: the last epoch completed
 *       32     8  i64 steps: optimizer steps taken in all
 *       40     4  u32 world size of the run that wrote it
 *       44     4  u32 reserved (0)
 *       48    16  optimizer name, NUL-padded ("sgd")
 *       64     8  f64 learning rate
 *       72     8  f64 momentum (0: plain SGD)
 *       80        the tensors, one after the other:
 *                   u32 length of the name, then the name (no NUL)
 *                   u32 number of dimensions d (0 to 4), then d i64 sizes
 *                   the elements, float32, row-major
 *   size - 32 32  SHA-256 of every byte before it
 *
 * Tensor names say what they are: "model.fc1.weight" for a parameter,
 * "optim.fc1.weight.momentum_buffer" for an optimizer's state (plain SGD
 * has none). A reader refuses another magic, a version it does not know, a
 * size that disagrees with the header (a torn write), a checksum that does
 * not match, and tensors that do not fit the file.
 *
 * Saving writes PATH.tmp.<pid>, fsyncs it, renames it over PATH and fsyncs
 * the directory: PATH is always either the old checkpoint or the new one,
 * whenever the writer dies. */
#ifndef LAB_ELASTIC_CHECKPOINT_H
#define LAB_ELASTIC_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "distlab/status.h"
#include "distlab/tensor.h"

#define LAB_CKPT_VERSION     1
#define LAB_CKPT_MAX_TENSORS 32
#define LAB_CKPT_NAME_MAX    64
/* A checkpoint larger than this is refused when read. */
#define LAB_CKPT_MAX_BYTES ((size_t)1 << 30)

typedef struct {
    char name[LAB_CKPT_NAME_MAX];
    int ndim;
    int64_t shape[DL_MAX_DIMS];
    size_t numel;
    float *data; /* read: owned by the checkpoint; written: the caller's */
} lab_ckpt_tensor_t;

typedef struct {
    int64_t epoch;  /* the last epoch completed */
    int64_t steps;  /* optimizer steps taken in all */
    int world_size; /* of the run that wrote it */
    char optimizer[16];
    double lr;
    double momentum;
    size_t ntensors;
    lab_ckpt_tensor_t tensors[LAB_CKPT_MAX_TENSORS];
} lab_ckpt_t;

/* The file's bytes (malloc'd) for c. */
dl_status_t lab_ckpt_encode(const lab_ckpt_t *c, uint8_t **buf_p, size_t *len_p);
/* Reads the bytes of a file back into *c, whose tensors then own their data
 * (lab_ckpt_free). On error *c is untouched and why says what is wrong, in
 * a few words ("checksum mismatch: the file is corrupt"); the status is
 * DL_ERR_PROTOCOL for a file that is not a valid checkpoint. */
dl_status_t lab_ckpt_decode(const uint8_t *buf, size_t len, lab_ckpt_t *c, char *why, size_t cap);

/* Writes c to path atomically (above). On error path is as it was, no
 * temporary file is left, and why says what failed. */
dl_status_t lab_ckpt_save(const char *path, const lab_ckpt_t *c, char *why, size_t cap);
/* Reads path: DL_ERR_NOT_FOUND when it does not exist (why is empty then),
 * DL_ERR_IO when it cannot be read, DL_ERR_PROTOCOL when it is not a valid
 * checkpoint, DL_ERR_TOO_BIG above LAB_CKPT_MAX_BYTES. */
dl_status_t lab_ckpt_load(const char *path, lab_ckpt_t *c, char *why, size_t cap);
/* Frees the tensors' data of a checkpoint that was read. */
void lab_ckpt_free(lab_ckpt_t *c);

/* The tensor named name, or NULL. */
const lab_ckpt_tensor_t *lab_ckpt_find(const lab_ckpt_t *c, const char *name);

#endif
