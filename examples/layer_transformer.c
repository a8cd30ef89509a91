/* A small pre-norm transformer block with gaia's layer kernels, timed stage by
   stage: LayerNorm -> causal attention (per head) -> LayerNorm ->
   Linear+GELU -> Linear, with residuals. Runs on the default device.
   Usage: layer_transformer [B N D H]   (default 4 512 512 8) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>
#include "layer_block.h"

static void usage(FILE *f) {
    fprintf(f, "usage: layer_transformer [--help] [B N D H]\n"
               "A pre-norm transformer block from gaia's layer kernels, timed stage by stage on the\n"
               "default device: LayerNorm, q/k/v projections, causal flash attention per head, the\n"
               "output projection, LayerNorm, Linear+GELU and Linear, with residuals.\n"
               "  B N D H  batch, sequence length, model width and heads (default 4 512 512 8);\n"
               "           H <= 16, D divisible by H, D/H <= %d\n",
            GAIA_LAYER_ATTENTION_MAX_D);
}

int main(int argc, char **argv) {
    size_t B = 4, N = 512, D = 512, H = 8;
    gaia_ctx *ctx = NULL;
    double ms = 0.0;
    int rep;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if ((argc != 1 && argc != 5) || (argc > 1 && argv[1][0] == '-')) {
        usage(stderr);
        return 2;
    }
    if (argc > 4) {
        B = (size_t)strtoul(argv[1], NULL, 10);
        N = (size_t)strtoul(argv[2], NULL, 10);
        D = (size_t)strtoul(argv[3], NULL, 10);
        H = (size_t)strtoul(argv[4], NULL, 10);
    }
    if (!B || !N || !D || !H || H > 16 || D % H || D / H > GAIA_LAYER_ATTENTION_MAX_D) {
        fprintf(stderr, "need B, N, D, H >= 1, H <= 16, D divisible by H and D/H <= %d\n", GAIA_LAYER_ATTENTION_MAX_D);
        return 1;
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "no context: %s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_device_report(ctx, stdout);
    for (rep = 0; rep < 2; rep++) { /* the first pass warms caches and allocators */
        if (demo_layer_block(ctx, B, N, D, H, rep == 1, &ms)) {
            fprintf(stderr, "block failed: %s\n", gaia_last_error(ctx));
            gaia_ctx_destroy(ctx);
            return 1;
        }
    }
    printf("tokens per second through the block: %.0f\n", (double)(B * N) / (ms / 1e3));
    gaia_ctx_destroy(ctx);
    return 0;
}
