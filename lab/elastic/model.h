/* The model that `distlab train` trains: torch's
 *
 *     nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 5))
 *
 * in float32 with the mean squared error loss and plain SGD, its forward and
 * backward passes written out as the matrix products they are, so that a
 * reader sees every gradient that data parallelism averages.
 *
 * The parameters live in one flat array of LAB_MLP_NPARAMS floats, in the
 * order of torch's model.parameters() (fc1.weight, fc1.bias, fc2.weight,
 * fc2.bias), each weight row-major as torch stores it: (out features, in
 * features). The gradients use the same layout, so one all_reduce averages
 * all of them at once. */
#ifndef LAB_ELASTIC_MODEL_H
#define LAB_ELASTIC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "distlab/random.h"

#define LAB_MLP_IN     10
#define LAB_MLP_HIDDEN 10
#define LAB_MLP_OUT    5

/* Offsets of the parameters in the flat array. */
#define LAB_MLP_W1      0
#define LAB_MLP_B1      (LAB_MLP_W1 + LAB_MLP_HIDDEN * LAB_MLP_IN)
#define LAB_MLP_W2      (LAB_MLP_B1 + LAB_MLP_HIDDEN)
#define LAB_MLP_B2      (LAB_MLP_W2 + LAB_MLP_OUT * LAB_MLP_HIDDEN)
#define LAB_MLP_NPARAMS (LAB_MLP_B2 + LAB_MLP_OUT)

/* One parameter tensor of the flat array, with torch's name and shape. */
typedef struct {
    const char *name; /* "fc1.weight" */
    size_t offset;    /* in floats */
    int ndim;
    int64_t shape[2];
} lab_mlp_param_t;

#define LAB_MLP_NTENSORS 4
extern const lab_mlp_param_t lab_mlp_params[LAB_MLP_NTENSORS];

/* The initial parameters: each tensor uniform in [-1/sqrt(fan_in),
 * 1/sqrt(fan_in)), the bounds of torch's nn.Linear, drawn in parameter
 * order from a generator seeded with seed. The same seed gives the same
 * parameters on every rank. */
void lab_mlp_init(float *params, uint64_t seed);

/* One batch of `batch` examples: x (batch x LAB_MLP_IN) is torch.randn
 * from g, and the target y (batch x LAB_MLP_OUT) is a fixed linear function
 * of it, y[j] = x[j] - x[j + 5] / 2, which the model can learn, so the loss
 * goes down. */
dl_status_t lab_mlp_batch(dl_rng_t *g, int batch, float *x, float *y);

/* The forward pass on a batch: *loss_p is the mean squared error over its
 * batch x LAB_MLP_OUT outputs. When grad is not NULL, also the backward
 * pass: the loss's gradient with respect to every parameter, written to
 * grad (LAB_MLP_NPARAMS floats, the layout of params). */
dl_status_t lab_mlp_loss(const float *params, const float *x, const float *y, int batch,
                         float *grad, double *loss_p);

/* Plain SGD: params -= lr * grad, for n parameters. */
void lab_sgd_step(float *params, const float *grad, size_t n, float lr);

/* A checksum of the parameters' bytes: the first 8 bytes of their SHA-256,
 * as a big-endian number. Equal parameters give equal checksums on every
 * host; any difference in any bit gives (almost surely) another. */
uint64_t lab_mlp_checksum(const float *params);

/* The seed of the batches of one epoch on one rank: a run's batches depend
 * on (seed, epoch, rank) alone, so that a resumed run draws what an
 * uninterrupted one would have. torch.manual_seed of this number and
 * torch.randn(batch, 10), once per step, give the same inputs. */
uint64_t lab_batch_seed(uint64_t seed, int64_t epoch, int rank);

#endif
