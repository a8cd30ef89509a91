/* train_digits - a classifier trained from C on real data: scikit-learn's
   handwritten digits (8 x 8 images, ten classes), which gaia does not ship:
   tools/digits_to_npy.py exports them once as .npy files (a fixed split of
   1,347 training and 450 test images). An MLP 64-128-10 with GELU
   (gaia_layer_linear: the matmul, bias and activation fused), cross-entropy,
   AdamW with a warm-up + cosine schedule, minibatches drawn in a seeded
   order each epoch. Prints the loss per epoch and the test accuracy, and
   exits 1 below 95%.

       python3 tools/digits_to_npy.py DIR      (needs scikit-learn)
       ./train_digits DIR [--epochs E] [--batch B] [--seed S] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

#define PIXELS 64
#define HIDDEN 128
#define CLASSES 10

static void usage(FILE *f) {
    fprintf(f, "usage: train_digits [--help] DIR [--epochs E] [--batch B] [--seed S]\n"
               "  trains an MLP 64-%d-%d on the digits in DIR (written by\n"
               "  'python3 tools/digits_to_npy.py DIR', which needs scikit-learn)\n"
               "  --epochs E  passes over the training images (default 30)\n"
               "  --batch B   images a step (default 32)\n"
               "  --seed S    initial weights and batch order (default 1)\n"
               "  prints the test accuracy; exits 1 below 95%%\n",
            HIDDEN, CLASSES);
}

/* DIR/digits_NAME.npy, checked to be [rows, cols] (cols 0: a vector). */
static gaia_tensor *load(gaia_ctx *ctx, const char *dir, const char *name, size_t cols) {
    char path[4096];
    gaia_tensor *t = NULL;
    snprintf(path, sizeof path, "%s/digits_%s.npy", dir, name);
    if (gaia_tensor_load_npy(ctx, path, &t) != GAIA_OK) {
        fprintf(stderr, "train_digits: %s\n(write the files with: python3 tools/digits_to_npy.py %s)\n",
                gaia_last_error(ctx), dir);
        exit(1);
    }
    if (gaia_tensor_ndim(t) != (cols ? 2 : 1) || (cols && gaia_tensor_dim(t, 1) != cols)) {
        fprintf(stderr, "train_digits: %s is not a %s\n", path, cols ? "[N, 64] matrix" : "vector of labels");
        exit(1);
    }
    return t;
}

static float *to_host(gaia_ctx *ctx, const gaia_tensor *t) {
    float *h = (float *)malloc(gaia_tensor_numel(t) * sizeof(float));
    if (!h) exit(1);
    CHECK(gaia_tensor_to_host(ctx, t, h, gaia_tensor_numel(t)));
    return h;
}

/* logits = GELU(x W1^T + b1) W2^T + b2 */
static gaia_status forward(gaia_ctx *ctx, gaia_tensor *const *p, const gaia_tensor *x, gaia_tensor **logits) {
    gaia_tensor *h = NULL;
    gaia_status st = gaia_layer_linear(ctx, x, p[0], p[1], GAIA_LAYER_ACT_GELU, &h);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[2], p[3], GAIA_LAYER_ACT_LINEAR, logits);
    gaia_tensor_free(h); /* the tape keeps what the backward needs */
    return st;
}

/* Correct predictions of the model on x against labels y. */
static size_t correct(gaia_ctx *ctx, gaia_tensor *const *p, const gaia_tensor *x, const float *y) {
    size_t n = gaia_tensor_dim(x, 0), i, c = 0;
    gaia_tensor *logits = NULL, *am = NULL;
    float *pred = (float *)malloc(n * sizeof(float));
    int was = gaia_grad_set_enabled(ctx, 0); /* evaluation: nothing to record */
    if (!pred) exit(1);
    CHECK(forward(ctx, p, x, &logits));
    CHECK(gaia_tensor_argmax(ctx, logits, 1, &am));
    CHECK(gaia_tensor_to_host(ctx, am, pred, n));
    for (i = 0; i < n; i++) c += pred[i] == y[i];
    gaia_grad_set_enabled(ctx, was);
    gaia_tensor_free(logits);
    gaia_tensor_free(am);
    free(pred);
    return c;
}

/* The batch order: a Fisher-Yates shuffle from a xorshift64* stream. */
static uint64_t next_random(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    long epochs = 30, batch = 32, e;
    unsigned long long seed = 1;
    uint64_t rng;
    size_t ntrain, ntest, i, b, ok_train, ok_test;
    size_t sw1[2] = {HIDDEN, PIXELS}, sb1 = HIDDEN, sw2[2] = {CLASSES, HIDDEN}, sb2 = CLASSES, sx[2], sy;
    float *trx, *try_, *tey, *bx, *by, loss_value = 0.0f;
    size_t *order;
    gaia_ctx *ctx;
    gaia_tensor *Xtr, *Ytr, *Xte, *Yte, *params[4];
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    gaia_lr_cosine sched;
    double t0;
    int a;
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--epochs") == 0 && a + 1 < argc && atol(argv[a + 1]) > 0) {
            epochs = atol(argv[++a]);
        } else if (strcmp(argv[a], "--batch") == 0 && a + 1 < argc && atol(argv[a + 1]) > 0) {
            batch = atol(argv[++a]);
        } else if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc) {
            seed = strtoull(argv[++a], NULL, 10);
        } else if (argv[a][0] != '-' && !dir) {
            dir = argv[a];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!dir) {
        usage(stderr);
        return 2;
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_ctx_set_seed(ctx, seed);
    Xtr = load(ctx, dir, "train_x", PIXELS), Ytr = load(ctx, dir, "train_y", 0);
    Xte = load(ctx, dir, "test_x", PIXELS), Yte = load(ctx, dir, "test_y", 0);
    ntrain = gaia_tensor_dim(Xtr, 0), ntest = gaia_tensor_dim(Xte, 0);
    if (gaia_tensor_dim(Ytr, 0) != ntrain || gaia_tensor_dim(Yte, 0) != ntest || ntrain == 0) {
        fprintf(stderr, "train_digits: images and labels disagree in number\n");
        return 1;
    }
    if ((size_t)batch > ntrain) batch = (long)ntrain;
    trx = to_host(ctx, Xtr), try_ = to_host(ctx, Ytr), tey = to_host(ctx, Yte);
    bx = (float *)malloc((size_t)batch * PIXELS * sizeof(float));
    by = (float *)malloc((size_t)batch * sizeof(float));
    order = (size_t *)malloc(ntrain * sizeof(size_t));
    if (!bx || !by || !order) return 1;
    for (i = 0; i < ntrain; i++) order[i] = i;

    /* He-scaled first layer (GELU), 1/sqrt(fan-in) for the logits */
    CHECK(gaia_tensor_randn(ctx, 2, sw1, 0.0f, sqrtf(2.0f / PIXELS), &params[0]));
    CHECK(gaia_tensor_zeros(ctx, 1, &sb1, &params[1]));
    CHECK(gaia_tensor_randn(ctx, 2, sw2, 0.0f, 1.0f / sqrtf(HIDDEN), &params[2]));
    CHECK(gaia_tensor_zeros(ctx, 1, &sb2, &params[3]));
    for (a = 0; a < 4; a++) CHECK(gaia_tensor_set_requires_grad(ctx, params[a], 1));
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 3e-3f;
    od.weight_decay = 1e-4f;
    sched.total = (uint64_t)epochs * ((ntrain + (size_t)batch - 1) / (size_t)batch);
    sched.warmup = sched.total / 20;
    sched.min_lr = 1e-5f;
    od.schedule = gaia_lr_warmup_cosine;
    od.schedule_user = &sched;
    CHECK(gaia_optim_create(ctx, &od, params, 4, &opt));

    printf("digits: %zu training and %zu test images, MLP %d-%d-%d (GELU), AdamW, %ld epochs of batch %ld on %s\n",
           ntrain, ntest, PIXELS, HIDDEN, CLASSES, epochs, batch, gaia_device_str(gaia_ctx_device(ctx)));
    rng = seed * 0x9E3779B97F4A7C15ull + 1;
    t0 = gaia_time_s();
    for (e = 0; e < epochs; e++) {
        double sum = 0.0;
        size_t steps = 0;
        for (i = ntrain - 1; i > 0; i--) { /* a fresh order each epoch */
            size_t j = (size_t)(next_random(&rng) % (i + 1)), x = order[i];
            order[i] = order[j], order[j] = x;
        }
        for (b = 0; b < ntrain; b += (size_t)batch) {
            size_t n = ntrain - b < (size_t)batch ? ntrain - b : (size_t)batch, r;
            gaia_tensor *X = NULL, *Y = NULL, *logits = NULL, *loss = NULL;
            for (r = 0; r < n; r++) {
                memcpy(bx + r * PIXELS, trx + order[b + r] * PIXELS, PIXELS * sizeof(float));
                by[r] = try_[order[b + r]];
            }
            sx[0] = n, sx[1] = PIXELS, sy = n;
            CHECK(gaia_tensor_from_host(ctx, 2, sx, bx, &X));
            CHECK(gaia_tensor_from_host(ctx, 1, &sy, by, &Y));
            CHECK(forward(ctx, params, X, &logits));
            CHECK(gaia_loss_cross_entropy(ctx, logits, Y, &loss));
            gaia_optim_zero_grad(opt);
            CHECK(gaia_backward(ctx, loss));
            CHECK(gaia_optim_step(opt));
            CHECK(gaia_tensor_item(ctx, loss, &loss_value));
            sum += loss_value, steps++;
            gaia_tensor_free(X), gaia_tensor_free(Y), gaia_tensor_free(logits), gaia_tensor_free(loss);
        }
        if (e == 0 || (e + 1) % 5 == 0 || e + 1 == epochs)
            printf("epoch %3ld  mean loss %.4f\n", e + 1, sum / (double)steps);
    }
    ok_train = correct(ctx, params, Xtr, try_);
    ok_test = correct(ctx, params, Xte, tey);
    printf("trained in %.2f s\n", gaia_time_s() - t0);
    printf("training accuracy: %zu / %zu (%.2f%%)\n", ok_train, ntrain, 100.0 * (double)ok_train / (double)ntrain);
    printf("test accuracy: %zu / %zu (%.2f%%)\n", ok_test, ntest, 100.0 * (double)ok_test / (double)ntest);

    gaia_optim_destroy(opt);
    for (a = 0; a < 4; a++) gaia_tensor_free(params[a]);
    gaia_tensor_free(Xtr), gaia_tensor_free(Ytr), gaia_tensor_free(Xte), gaia_tensor_free(Yte);
    gaia_ctx_destroy(ctx);
    free(trx), free(try_), free(tey), free(bx), free(by), free(order);
    return ok_test * 100 >= 95 * ntest ? 0 : 1;
}
