/* train_transformer - train a one-block transformer from C to reverse short
   token sequences (10 tokens, length 6: "3 1 4 1 5 9" -> "9 5 1 4 1 3").
   The embedding is gaia_tensor_index_select on a parameter table, the block
   is gaia_layer_layernorm, gaia_layer_linear and gaia_layer_attention (whose
   backward recomputes the softmax from saved row statistics), the loss
   gaia_loss_cross_entropy, the update AdamW with a warm-up + cosine schedule.
   Every step draws a fresh batch; at the end the token accuracy on 1000
   unseen sequences is printed (exit status 1 below 99%), with one example.
   --bf16 trains in mixed precision: every product's operands are rounded
   to bf16 with float32 sums (gaia_tensor_matmul_prec, bf16 attention),
   while the parameters, gradients and AdamW's state stay float32.

       ./train_transformer [STEPS] [--seed N] [--csv FILE] [--bf16]   (default 400 steps) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "reverse_transformer.h"
#include <stdio.h>

#include "example_check.h"

static void usage(FILE *f) {
    fprintf(f, "usage: train_transformer [--help] [STEPS] [--seed N] [--csv FILE] [--bf16]\n"
               "  trains a one-block transformer to reverse sequences of 6 tokens out of 10 with AdamW\n"
               "  for STEPS steps (default 400) and prints the token accuracy on unseen sequences;\n"
               "  --csv FILE writes step,loss,lr; --bf16 trains in mixed precision (bf16 products,\n"
               "  float32 sums, parameters and AdamW state)\n");
}

int main(int argc, char **argv) {
    rt_config cfg = rt_default_config();
    rt_model m;
    gaia_ctx *ctx;
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    gaia_lr_cosine sched;
    const char *csv_path = NULL;
    FILE *csv = NULL;
    float *tok, *tgt, loss = 0.0f, one[6], want[6], lg[6 * 10];
    gaia_tensor *t = NULL, *logits = NULL;
    size_t six = 6, i, j;
    double acc = 0.0, t0;
    long step;
    int a;
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--csv") == 0 && a + 1 < argc) {
            csv_path = argv[++a];
        } else if (strcmp(argv[a], "--bf16") == 0) {
            cfg.prec = GAIA_PREC_BF16;
        } else if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc) {
            cfg.seed = strtoull(argv[++a], NULL, 10);
        } else if (argv[a][0] != '-' && atol(argv[a]) > 0) {
            cfg.steps = atol(argv[a]);
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL);
    CHECK(rt_init(ctx, &cfg, &m));
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = cfg.lr;
    od.weight_decay = 1e-4f;
    od.clip_norm = 1.0f;
    sched.warmup = 40;
    sched.total = (uint64_t)cfg.steps;
    sched.min_lr = cfg.lr * 0.05f;
    od.schedule = gaia_lr_warmup_cosine;
    od.schedule_user = &sched;
    CHECK(gaia_optim_create(ctx, &od, m.p, RT_NPARAMS, &opt));
    tok = (float *)malloc(cfg.batch * cfg.len * sizeof *tok);
    tgt = (float *)malloc(cfg.batch * cfg.len * sizeof *tgt);
    if (!tok || !tgt) return 1;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            fprintf(stderr, "train_transformer: cannot write %s\n", csv_path);
            return 1;
        }
        fprintf(csv, "step,loss,lr\n");
    }
    printf("reverse %zu tokens out of %zu: one block, d = %zu, MLP %zu, batch %zu, AdamW, %ld steps on %s%s\n", cfg.len,
           cfg.vocab, cfg.dim, cfg.hidden, cfg.batch, cfg.steps, gaia_device_str(gaia_ctx_device(ctx)),
           cfg.prec == GAIA_PREC_BF16 ? ", bf16 products" : "");
    t0 = gaia_time_s();
    for (step = 0; step < cfg.steps; step++) {
        CHECK(rt_step(ctx, &m, opt, tok, tgt, &loss));
        if (csv) fprintf(csv, "%ld,%.6f,%.6f\n", step, loss, gaia_optim_lr(opt));
        gaia_progress_report(ctx, (size_t)step + 1, (size_t)cfg.steps, "training");
    }
    printf("final loss %.4f after %.2f s (%.2f ms a step)\n", loss, gaia_time_s() - t0,
           (gaia_time_s() - t0) * 1e3 / (double)cfg.steps);
    CHECK(rt_accuracy(ctx, &m, 1000, &acc));
    printf("token accuracy on 1000 unseen sequences: %.2f%%\n", 100.0 * acc);
    /* one sequence, shown */
    rt_batch(&m, 1, one, want);
    gaia_grad_set_enabled(ctx, 0);
    CHECK(gaia_tensor_from_host(ctx, 1, &six, one, &t));
    CHECK(rt_forward(ctx, &m, t, 1, &logits));
    CHECK(gaia_tensor_to_host(ctx, logits, lg, 6 * 10));
    printf("input ");
    for (i = 0; i < 6; i++) printf(" %d", (int)one[i]);
    printf("\noutput");
    for (i = 0; i < 6; i++) {
        size_t best = 0;
        for (j = 1; j < 10; j++)
            if (lg[i * 10 + j] > lg[i * 10 + best]) best = j;
        printf(" %zu", best);
    }
    printf("\n");
    if (csv) {
        fclose(csv);
        printf("loss curve written to %s\n", csv_path);
    }
    gaia_tensor_free(t);
    gaia_tensor_free(logits);
    gaia_optim_destroy(opt);
    rt_free(&m);
    gaia_ctx_destroy(ctx);
    free(tok);
    free(tgt);
    return acc >= 0.99 ? 0 : 1;
}
