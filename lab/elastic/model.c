/* The trainer's model, Linear(10, 10) - ReLU - Linear(10, 5), with its
 * forward and backward passes written out by hand (model.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lab/elastic/model.h"

const lab_mlp_param_t lab_mlp_params[LAB_MLP_NTENSORS] = {
    {"fc1.weight", LAB_MLP_W1, 2, {LAB_MLP_HIDDEN, LAB_MLP_IN}},
    {"fc1.bias", LAB_MLP_B1, 1, {LAB_MLP_HIDDEN, 0}},
    {"fc2.weight", LAB_MLP_W2, 2, {LAB_MLP_OUT, LAB_MLP_HIDDEN}},
    {"fc2.bias", LAB_MLP_B2, 1, {LAB_MLP_OUT, 0}},
};

/* ---- initialisation and data ---- */

void lab_mlp_init(float *params, uint64_t seed)
{
    dl_rng_t g;
    memset(&g, 0, sizeof(g));
    dl_rng_seed(&g, seed);
    for (int p = 0; p < LAB_MLP_NTENSORS; p++) {
        const lab_mlp_param_t *d = &lab_mlp_params[p];
        size_t n = (size_t)d->shape[0] * (size_t)(d->ndim == 2 ? d->shape[1] : 1);
        /* fan_in is the weight's second dimension, for the bias too. */
        int fan_in = d->offset < LAB_MLP_W2 ? LAB_MLP_IN : LAB_MLP_HIDDEN;
        float bound = (float)(1.0 / sqrt((double)fan_in));
        dl_tensor_t t = {.dtype = DL_FLOAT32,
                         .ndim = 1,
                         .shape = {(int64_t)n},
                         .numel = n,
                         .data = params + d->offset};
        dl_rng_uniform(&g, &t);
        for (size_t i = 0; i < n; i++)
            params[d->offset + i] = params[d->offset + i] * (2 * bound) - bound;
    }
}

dl_status_t lab_mlp_batch(dl_rng_t *g, int batch, float *x, float *y)
{
    dl_tensor_t t = {.dtype = DL_FLOAT32,
                     .ndim = 2,
                     .shape = {batch, LAB_MLP_IN},
                     .numel = (size_t)batch * LAB_MLP_IN,
                     .data = x};
    dl_status_t st = dl_rng_normal(g, &t);
    if (st != DL_OK)
        return st;
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < LAB_MLP_OUT; j++)
            y[b * LAB_MLP_OUT + j] = x[b * LAB_MLP_IN + j] - x[b * LAB_MLP_IN + j + 5] / 2;
    return DL_OK;
}

uint64_t lab_batch_seed(uint64_t seed, int64_t epoch, int rank)
{
    /* Distinct for every (epoch, rank) of a seed while rank < 10007 and
     * epoch < 1000003; the generator keeps the low 32 bits, as torch's. */
    return ((seed * 1000003u) + (uint64_t)epoch) * 10007u + (uint64_t)rank;
}

/* ---- forward and backward ----
 *
 * For a batch X (B x 10) and targets Y (B x 5):
 *
 *   forward                      backward (G_A is dloss/dA)
 *   H0 = X W1^T + b1   B x 10    G_out = 2 (out - Y) / (B * 5)
 *   H  = relu(H0)      B x 10    G_W2 = G_out^T H     G_b2 = sum of G_out's rows
 *   out = H W2^T + b2  B x 5     G_H  = G_out W2
 *   loss = mean((out - Y)^2)     G_H0 = G_H where H0 > 0, else 0
 *                                G_W1 = G_H0^T X      G_b1 = sum of G_H0's rows
 *
 * Sums are accumulated in double and stored as float, as the parameters. */

/* out (rows x n_out) = in (rows x n_in) W^T + b, W being n_out x n_in. */
static void linear(const float *in, int rows, int n_in, const float *w, const float *b, int n_out,
                   float *out)
{
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < n_out; o++) {
            double s = b[o];
            for (int i = 0; i < n_in; i++)
                s += (double)in[r * n_in + i] * w[o * n_in + i];
            out[r * n_out + o] = (float)s;
        }
}

/* The gradients of a linear layer from the gradient of its output g_out
 * (rows x n_out): g_w (n_out x n_in) = g_out^T in, g_b = column sums of
 * g_out, and, when g_in is not NULL, g_in (rows x n_in) = g_out W. */
static void linear_backward(const float *in, const float *g_out, int rows, int n_in, const float *w,
                            int n_out, float *g_w, float *g_b, float *g_in)
{
    for (int o = 0; o < n_out; o++) {
        double sb = 0;
        for (int r = 0; r < rows; r++)
            sb += g_out[r * n_out + o];
        g_b[o] = (float)sb;
        for (int i = 0; i < n_in; i++) {
            double s = 0;
            for (int r = 0; r < rows; r++)
                s += (double)g_out[r * n_out + o] * in[r * n_in + i];
            g_w[o * n_in + i] = (float)s;
        }
    }
    if (g_in == NULL)
        return;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < n_in; i++) {
            double s = 0;
            for (int o = 0; o < n_out; o++)
                s += (double)g_out[r * n_out + o] * w[o * n_in + i];
            g_in[r * n_in + i] = (float)s;
        }
}

dl_status_t lab_mlp_loss(const float *params, const float *x, const float *y, int batch,
                         float *grad, double *loss_p)
{
    if (batch < 1)
        return DL_ERR_INVALID;
    /* The activations H0, H and out, and the gradient G_H. */
    size_t rows = (size_t)batch;
    float *h0 = malloc(sizeof(float) * rows * (3 * LAB_MLP_HIDDEN + LAB_MLP_OUT));
    if (h0 == NULL)
        return DL_ERR_NOMEM;
    float *h = h0 + rows * LAB_MLP_HIDDEN;
    float *g_h = h + rows * LAB_MLP_HIDDEN;
    float *out = g_h + rows * LAB_MLP_HIDDEN;
    const float *w1 = params + LAB_MLP_W1, *b1 = params + LAB_MLP_B1;
    const float *w2 = params + LAB_MLP_W2, *b2 = params + LAB_MLP_B2;

    linear(x, batch, LAB_MLP_IN, w1, b1, LAB_MLP_HIDDEN, h0);
    for (size_t i = 0; i < rows * LAB_MLP_HIDDEN; i++)
        h[i] = h0[i] > 0 ? h0[i] : 0;
    linear(h, batch, LAB_MLP_HIDDEN, w2, b2, LAB_MLP_OUT, out);
    size_t n = rows * LAB_MLP_OUT;
    double loss = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)out[i] - y[i];
        loss += d * d;
    }
    loss /= (double)n;

    if (grad != NULL) {
        float *g_out = out; /* in place: out is not needed any more */
        for (size_t i = 0; i < n; i++)
            g_out[i] = (float)(2.0 * ((double)out[i] - y[i]) / (double)n);
        linear_backward(h, g_out, batch, LAB_MLP_HIDDEN, w2, LAB_MLP_OUT, grad + LAB_MLP_W2,
                        grad + LAB_MLP_B2, g_h);
        /* ReLU passes the gradient where its input was positive. */
        for (size_t i = 0; i < rows * LAB_MLP_HIDDEN; i++)
            if (!(h0[i] > 0))
                g_h[i] = 0;
        linear_backward(x, g_h, batch, LAB_MLP_IN, w1, LAB_MLP_HIDDEN, grad + LAB_MLP_W1,
                        grad + LAB_MLP_B1, NULL);
    }
    free(h0);
    *loss_p = loss;
    return DL_OK;
}

void lab_sgd_step(float *params, const float *grad, size_t n, float lr)
{
    for (size_t i = 0; i < n; i++)
        params[i] -= lr * grad[i];
}

uint64_t lab_mlp_checksum(const float *params)
{
    /* The bytes little-endian, whatever this host's order. */
    unsigned char bytes[LAB_MLP_NPARAMS * 4];
    for (size_t i = 0; i < LAB_MLP_NPARAMS; i++) {
        uint32_t u;
        memcpy(&u, &params[i], 4);
        for (int k = 0; k < 4; k++)
            bytes[i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(bytes, sizeof(bytes), md, &mdlen, EVP_sha256(), NULL) != 1)
        return 0;
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = v << 8 | md[k];
    return v;
}
