/* train_mlp - train a small network from C: two spirals, a 2-64-64-2 MLP.
   Parameters are tensors marked with gaia_tensor_set_requires_grad; the
   forward pass is ordinary gaia calls; gaia_loss_cross_entropy gives the
   loss, gaia_backward the gradients, and AdamW (with a warm-up + cosine
   schedule) the update. Prints a progress line, the loss curve as CSV with
   --csv FILE, and the final training accuracy (it exits 1 below 100%).
   Checkpoints: --save FILE writes the optimizer's whole state (parameters,
   moments, step, random stream) as a safetensors file when the run stops;
   --resume FILE continues from one; --until N stops after step N. A run cut
   in two that way ends with the same parameters, bit for bit (the printed
   fingerprint), as one run. --bf16 trains in mixed precision: the three
   products of the forward pass are gaia_tensor_matmul_prec(GAIA_PREC_BF16)
   (operands rounded to bf16, float32 sums), while the parameters (master
   weights), their gradients and AdamW's moments stay float32; it reaches
   the same 100% accuracy.

       ./train_mlp [STEPS] [--csv FILE] [--save FILE] [--resume FILE] [--until N] [--bf16]
       ./train_mlp 2000 --until 800 --save ck.safetensors
       ./train_mlp 2000 --resume ck.safetensors          (same as ./train_mlp 2000) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

#define POINTS 150 /* per spiral */
#define HIDDEN 64

typedef struct mlp {
    gaia_tensor *W1, *b1, *W2, *b2, *W3, *b3;
} mlp;

/* The forward products: float32, or bf16 operands with float32 sums (--bf16). */
static gaia_precision matmul_prec = GAIA_PREC_F32;

/* logits = tanh(tanh(x W1 + b1) W2 + b2) W3 + b3; the intermediates are
   fresh tensors each call (freed by the caller's loop). */
static gaia_status forward(gaia_ctx *ctx, const mlp *m, const gaia_tensor *x, gaia_tensor **logits) {
    gaia_tensor *h1 = NULL, *h2 = NULL;
    gaia_status st = gaia_tensor_matmul_prec(ctx, x, m->W1, 0, 0, matmul_prec, &h1);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, h1, m->b1, &h1);
    if (st == GAIA_OK) st = gaia_tensor_tanh(ctx, h1, &h1);
    if (st == GAIA_OK) st = gaia_tensor_matmul_prec(ctx, h1, m->W2, 0, 0, matmul_prec, &h2);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, h2, m->b2, &h2);
    if (st == GAIA_OK) st = gaia_tensor_tanh(ctx, h2, &h2);
    if (st == GAIA_OK) st = gaia_tensor_matmul_prec(ctx, h2, m->W3, 0, 0, matmul_prec, logits);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, *logits, m->b3, logits);
    gaia_tensor_free(h1); /* the tape keeps what the backward needs */
    gaia_tensor_free(h2);
    return st;
}

static void usage(FILE *f) {
    fprintf(f, "usage: train_mlp [--help] [STEPS] [--csv FILE] [--save FILE] [--resume FILE] [--until N] [--bf16]\n"
               "  trains a 2-64-64-2 MLP on two spirals with AdamW for STEPS steps (default 2000)\n"
               "  and prints the training accuracy; --csv FILE writes step,loss,lr\n"
               "  --save FILE    writes a checkpoint (safetensors) when training stops\n"
               "  --resume FILE  continues from a checkpoint (same STEPS: the schedule spans them)\n"
               "  --until N      stops after step N of STEPS\n"
               "  --bf16         forward matmuls in bf16 (float32 sums, weights and AdamW state)\n");
}

/* FNV-1a over the parameters' bits: equal fingerprints, equal parameters. */
static unsigned long long fingerprint(gaia_ctx *ctx, gaia_tensor *const *params, int n) {
    unsigned long long h = 1469598103934665603ull;
    int i;
    for (i = 0; i < n; i++) {
        size_t k, count = gaia_tensor_numel(params[i]);
        float *v = (float *)malloc(count * sizeof(float));
        if (!v || gaia_tensor_to_host(ctx, params[i], v, count) != GAIA_OK) exit(1);
        for (k = 0; k < count * sizeof(float); k++) h = (h ^ ((unsigned char *)v)[k]) * 1099511628211ull;
        free(v);
    }
    return h;
}

int main(int argc, char **argv) {
    const char *csv_path = NULL, *save_path = NULL, *resume_path = NULL;
    long steps = 2000, until = -1, step, first = 0;
    int i, correct = 0;
    float *x, labels[2 * POINTS], pred[2 * POINTS], loss_value = 0;
    size_t sx[2] = {2 * POINTS, 2}, sy = 2 * POINTS, s1[2] = {2, HIDDEN}, s2[2] = {HIDDEN, HIDDEN}, s3[2] = {HIDDEN, 2};
    size_t sh = HIDDEN, so = 2;
    gaia_ctx *ctx;
    gaia_tensor *X = NULL, *Y = NULL, *logits = NULL, *loss = NULL, *am = NULL, *params[6];
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    gaia_lr_cosine sched;
    mlp m;
    FILE *csv = NULL;
    double t0;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv_path = argv[++i];
        } else if (strcmp(argv[i], "--save") == 0 && i + 1 < argc) {
            save_path = argv[++i];
        } else if (strcmp(argv[i], "--resume") == 0 && i + 1 < argc) {
            resume_path = argv[++i];
        } else if (strcmp(argv[i], "--bf16") == 0) {
            matmul_prec = GAIA_PREC_BF16;
        } else if (strcmp(argv[i], "--until") == 0 && i + 1 < argc && atol(argv[i + 1]) > 0) {
            until = atol(argv[++i]);
        } else if (argv[i][0] != '-' && atol(argv[i]) > 0) {
            steps = atol(argv[i]);
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_ctx_set_seed(ctx, 2024);
    gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL);
    x = (float *)malloc(sizeof(float) * 4 * POINTS);
    if (!x) return 1;
    for (i = 0; i < POINTS; i++) { /* two interleaved spirals of 1.75 turns */
        double r = 0.1 + 0.9 * i / POINTS, th = 3.5 * 3.141592653589793 * i / POINTS;
        x[4 * i + 0] = (float)(r * cos(th));
        x[4 * i + 1] = (float)(r * sin(th));
        x[4 * i + 2] = (float)(-r * cos(th));
        x[4 * i + 3] = (float)(-r * sin(th));
        labels[2 * i] = 0.0f;
        labels[2 * i + 1] = 1.0f;
    }
    CHECK(gaia_tensor_from_host(ctx, 2, sx, x, &X));
    CHECK(gaia_tensor_from_host(ctx, 1, &sy, labels, &Y));
    memset(&m, 0, sizeof m);
    CHECK(gaia_tensor_randn(ctx, 2, s1, 0.0f, 1.0f, &m.W1));
    CHECK(gaia_tensor_randn(ctx, 2, s2, 0.0f, 1.0f / sqrtf(HIDDEN), &m.W2));
    CHECK(gaia_tensor_randn(ctx, 2, s3, 0.0f, 1.0f / sqrtf(HIDDEN), &m.W3));
    CHECK(gaia_tensor_zeros(ctx, 1, &sh, &m.b1));
    CHECK(gaia_tensor_zeros(ctx, 1, &sh, &m.b2));
    CHECK(gaia_tensor_zeros(ctx, 1, &so, &m.b3));
    params[0] = m.W1, params[1] = m.b1, params[2] = m.W2, params[3] = m.b2, params[4] = m.W3, params[5] = m.b3;
    for (i = 0; i < 6; i++) CHECK(gaia_tensor_set_requires_grad(ctx, params[i], 1));
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 0.02f;
    od.weight_decay = 1e-4f;
    od.clip_norm = 5.0f;
    sched.warmup = 100;
    sched.total = (uint64_t)steps;
    sched.min_lr = 0.001f;
    od.schedule = gaia_lr_warmup_cosine;
    od.schedule_user = &sched;
    CHECK(gaia_optim_create(ctx, &od, params, 6, &opt));
    if (resume_path) { /* parameters, moments, step and random stream as they were saved */
        CHECK(gaia_optim_load(opt, resume_path));
        first = (long)gaia_optim_steps(opt);
        printf("resumed from %s at step %ld\n", resume_path, first);
    }
    if (until < 0 || until > steps) until = steps;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            fprintf(stderr, "train_mlp: cannot write %s\n", csv_path);
            return 1;
        }
        fprintf(csv, "step,loss,lr\n");
    }
    printf("two spirals: %d points, MLP 2-%d-%d-2, AdamW, %ld steps on %s%s\n", 2 * POINTS, HIDDEN, HIDDEN, steps,
           gaia_device_str(gaia_ctx_device(ctx)), matmul_prec == GAIA_PREC_BF16 ? ", bf16 forward matmuls" : "");
    t0 = gaia_time_s();
    for (step = first; step < until; step++) {
        CHECK(forward(ctx, &m, X, &logits));
        CHECK(gaia_loss_cross_entropy(ctx, logits, Y, &loss));
        gaia_optim_zero_grad(opt);
        CHECK(gaia_backward(ctx, loss));
        CHECK(gaia_optim_step(opt));
        CHECK(gaia_tensor_item(ctx, loss, &loss_value));
        if (csv) fprintf(csv, "%ld,%.6f,%.6f\n", step, loss_value, gaia_optim_lr(opt));
        gaia_progress_report(ctx, (size_t)(step - first) + 1, (size_t)(until - first), "training");
        gaia_tensor_free(logits);
        gaia_tensor_free(loss);
        logits = loss = NULL;
    }
    printf("loss %.4f at step %ld after %.2f s (%.2f ms a step)\n", loss_value, until, gaia_time_s() - t0,
           (gaia_time_s() - t0) * 1e3 / (double)(until > first ? until - first : 1));
    printf("parameter fingerprint %016llx\n", fingerprint(ctx, params, 6));
    if (save_path) {
        CHECK(gaia_optim_save(opt, save_path));
        printf("checkpoint at step %ld written to %s\n", until, save_path);
    }
    gaia_grad_set_enabled(ctx, 0); /* evaluation: nothing to record */
    CHECK(forward(ctx, &m, X, &logits));
    CHECK(gaia_tensor_argmax(ctx, logits, 1, &am));
    CHECK(gaia_tensor_to_host(ctx, am, pred, 2 * POINTS));
    for (i = 0; i < 2 * POINTS; i++) correct += pred[i] == labels[i];
    printf("training accuracy: %d / %d (%.1f%%)\n", correct, 2 * POINTS, 100.0 * correct / (2 * POINTS));
    if (csv) {
        fclose(csv);
        printf("loss curve written to %s\n", csv_path);
    }
    gaia_optim_destroy(opt);
    for (i = 0; i < 6; i++) gaia_tensor_free(params[i]);
    gaia_tensor_free(X);
    gaia_tensor_free(Y);
    gaia_tensor_free(logits);
    gaia_tensor_free(am);
    gaia_ctx_destroy(ctx);
    free(x);
    return correct == 2 * POINTS || until < steps ? 0 : 1; /* a stopped run is not finished */
}
