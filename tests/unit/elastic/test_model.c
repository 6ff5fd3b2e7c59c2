/* lab/elastic/model.c: the hand-written backward pass against finite
 * differences of the loss, the mean of per-rank gradients against the
 * gradient of the whole batch (what data parallelism relies on), the
 * initialisation, SGD, the checksum and the batch seeds. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lab/elastic/model.h"

static double loss_of(const float *params, const float *x, const float *y, int batch)
{
    double loss = 0;
    assert_int_equal(lab_mlp_loss(params, x, y, batch, NULL, &loss), DL_OK);
    return loss;
}

static void batch_of(uint64_t seed, int batch, float *x, float *y)
{
    static dl_rng_t g;
    dl_rng_seed(&g, seed);
    assert_int_equal(lab_mlp_batch(&g, batch, x, y), DL_OK);
}

/* Which hidden units are active (first layer's output > 0), per example:
 * a bit mask of B * LAB_MLP_HIDDEN bits, as the forward pass decides. */
static void active_units(const float *params, const float *x, int batch, unsigned char *on)
{
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < LAB_MLP_HIDDEN; j++) {
            double s = params[LAB_MLP_B1 + j];
            for (int i = 0; i < LAB_MLP_IN; i++)
                s += (double)x[b * LAB_MLP_IN + i] * params[LAB_MLP_W1 + j * LAB_MLP_IN + i];
            on[b * LAB_MLP_HIDDEN + j] = (float)s > 0;
        }
}

/* Every one of the 165 partial derivatives against a central difference
 * (eps = 1e-3), at a few seeds. Where a ReLU's input crosses 0 between the
 * two evaluations, the loss has a kink there and the difference says
 * nothing about the derivative: such a parameter is skipped (and counted;
 * it is rare). */
static void test_gradient_finite_difference(void **state)
{
    (void)state;
    enum { B = 8 };
    unsigned char on_up[B * LAB_MLP_HIDDEN], on_down[B * LAB_MLP_HIDDEN];
    int checked = 0, kinks = 0;
    float x[B * LAB_MLP_IN], y[B * LAB_MLP_OUT];
    float params[LAB_MLP_NPARAMS], grad[LAB_MLP_NPARAMS];
    const float eps = 1e-3f;
    for (uint64_t seed = 0; seed < 3; seed++) {
        lab_mlp_init(params, seed);
        batch_of(100 + seed, B, x, y);
        double loss = 0;
        assert_int_equal(lab_mlp_loss(params, x, y, B, grad, &loss), DL_OK);
        assert_true(fabs(loss - loss_of(params, x, y, B)) < 1e-12);
        double worst = 0;
        for (size_t i = 0; i < LAB_MLP_NPARAMS; i++) {
            float saved = params[i];
            params[i] = saved + eps;
            double up = loss_of(params, x, y, B);
            active_units(params, x, B, on_up);
            params[i] = saved - eps;
            double down = loss_of(params, x, y, B);
            active_units(params, x, B, on_down);
            params[i] = saved;
            if (memcmp(on_up, on_down, sizeof(on_up)) != 0) {
                kinks++;
                continue;
            }
            checked++;
            /* The step actually taken, after rounding to float. */
            double h = (double)(saved + eps) - (double)(saved - eps);
            double fd = (up - down) / h;
            double err = fabs(fd - grad[i]) / fmax(1.0, fabs(fd));
            if (err > worst)
                worst = err;
            if (err > 1e-4)
                fail_msg("seed %llu, parameter %zu: backward %.7g, finite difference %.7g",
                         (unsigned long long)seed, i, (double)grad[i], fd);
        }
        print_message("seed %llu: loss %.5f, worst relative gradient error %.2g\n",
                      (unsigned long long)seed, loss, worst);
    }
    print_message("%d derivatives checked, %d skipped at a ReLU's kink\n", checked, kinks);
    assert_true(kinks <= 3);
}

/* The mean of the gradients of two halves of a batch is the gradient of
 * the whole batch: averaging the ranks' gradients is training on all of
 * their examples at once. */
static void test_mean_of_halves(void **state)
{
    (void)state;
    enum { B = 16 };
    float x[B * LAB_MLP_IN], y[B * LAB_MLP_OUT];
    float params[LAB_MLP_NPARAMS], whole[LAB_MLP_NPARAMS];
    float g0[LAB_MLP_NPARAMS], g1[LAB_MLP_NPARAMS];
    lab_mlp_init(params, 5);
    batch_of(7, B, x, y);
    double l = 0, l0 = 0, l1 = 0;
    assert_int_equal(lab_mlp_loss(params, x, y, B, whole, &l), DL_OK);
    assert_int_equal(lab_mlp_loss(params, x, y, B / 2, g0, &l0), DL_OK);
    assert_int_equal(
        lab_mlp_loss(params, x + B / 2 * LAB_MLP_IN, y + B / 2 * LAB_MLP_OUT, B / 2, g1, &l1),
        DL_OK);
    assert_true(fabs((l0 + l1) / 2 - l) < 1e-9);
    for (size_t i = 0; i < LAB_MLP_NPARAMS; i++)
        assert_true(fabs((g0[i] + g1[i]) / 2 - whole[i]) < 1e-6);
}

/* SGD on one batch lowers its loss. */
static void test_sgd_descends(void **state)
{
    (void)state;
    enum { B = 32 };
    float x[B * LAB_MLP_IN], y[B * LAB_MLP_OUT];
    float params[LAB_MLP_NPARAMS], grad[LAB_MLP_NPARAMS];
    lab_mlp_init(params, 0);
    batch_of(1, B, x, y);
    double first = 0, loss = 0;
    assert_int_equal(lab_mlp_loss(params, x, y, B, grad, &first), DL_OK);
    for (int step = 0; step < 200; step++) {
        assert_int_equal(lab_mlp_loss(params, x, y, B, grad, &loss), DL_OK);
        lab_sgd_step(params, grad, LAB_MLP_NPARAMS, 0.1f);
    }
    assert_true(loss < first / 4);

    float p[3] = {1, 2, 3};
    const float g[3] = {10, -20, 0};
    lab_sgd_step(p, g, 3, 0.5f);
    assert_true(p[0] == -4 && p[1] == 12 && p[2] == 3);
}

static void test_init(void **state)
{
    (void)state;
    float a[LAB_MLP_NPARAMS], b[LAB_MLP_NPARAMS];
    lab_mlp_init(a, 0);
    lab_mlp_init(b, 0);
    assert_memory_equal(a, b, sizeof(a));
    /* nn.Linear's bounds: 1/sqrt(10) for both layers (fan_in 10). */
    float bound = (float)(1 / sqrt(10.0));
    for (size_t i = 0; i < LAB_MLP_NPARAMS; i++)
        assert_true(a[i] >= -bound && a[i] < bound);
    lab_mlp_init(b, 1);
    assert_true(memcmp(a, b, sizeof(a)) != 0);
    assert_int_equal(lab_mlp_params[0].offset, 0);
    assert_int_equal(lab_mlp_params[3].offset + 5, LAB_MLP_NPARAMS);
    assert_int_equal(LAB_MLP_NPARAMS, 165);
}

static void test_checksum(void **state)
{
    (void)state;
    float a[LAB_MLP_NPARAMS];
    lab_mlp_init(a, 0);
    uint64_t s = lab_mlp_checksum(a);
    assert_true(s == lab_mlp_checksum(a));
    uint32_t u;
    memcpy(&u, &a[77], 4);
    u ^= 1; /* the last bit of one weight */
    memcpy(&a[77], &u, 4);
    assert_true(s != lab_mlp_checksum(a));
}

/* Every (epoch, rank) of a run has its own batches. */
static void test_batch_seeds(void **state)
{
    (void)state;
    enum { E = 50, R = 16 };
    uint32_t seen[E * R];
    int n = 0;
    for (int e = 0; e < E; e++)
        for (int r = 0; r < R; r++) {
            uint32_t s = (uint32_t)lab_batch_seed(3, e, r);
            for (int k = 0; k < n; k++)
                assert_true(seen[k] != s);
            seen[n++] = s;
        }
    assert_true(lab_batch_seed(0, 1, 0) != lab_batch_seed(1, 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_finite_difference),
        cmocka_unit_test(test_mean_of_halves),
        cmocka_unit_test(test_sgd_descends),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_checksum),
        cmocka_unit_test(test_batch_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
