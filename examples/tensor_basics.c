/* tensor_basics.c - the worked example of gaia.h's manual as a program:
   random tensors, a matrix product, broadcasting, reductions, .npy output,
   and what an error looks like.
   Usage: tensor_basics [OUTPUT.npy]   (default tensor_basics_h.npy; kept) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <string.h>

#define CHECK(call)                                                      \
    do {                                                                 \
        if ((call) != GAIA_OK) {                                         \
            fprintf(stderr, "%s failed: %s\n", #call, gaia_last_error(ctx)); \
            return 1;                                                    \
        }                                                                \
    } while (0)

static void usage(FILE *f) {
    fprintf(f, "usage: tensor_basics [--help] [OUTPUT.npy]\n"
               "The worked example of the manual at the top of gaia.h: a batch of 256 random inputs\n"
               "through h = gelu(x . w^T + b) (matmul, a broadcast bias, an activation in place), the\n"
               "per-row mean and argmax, h saved as a NumPy file, and the message a shape mistake gives.\n"
               "  OUTPUT.npy  where h (256 x 64 float32) is written, default tensor_basics_h.npy;\n"
               "              the file is kept: numpy.load(\"tensor_basics_h.npy\") reads it\n");
}

int main(int argc, char **argv) {
    const char *out_path = "tensor_basics_h.npy";
    gaia_ctx *ctx = NULL;
    gaia_tensor *x = NULL, *w = NULL, *bias = NULL, *h = NULL, *mean = NULL, *best = NULL, *bad = NULL;
    size_t xs[2] = {256, 128}, ws[2] = {64, 128}, bs[1] = {64};
    float row_means[4], winners[4];
    gaia_status st;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        usage(stderr);
        return 2;
    }
    if (argc == 2) out_path = argv[1];
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "gaia: %s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_device_report(ctx, stdout);

    CHECK(gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &x));      /* a batch of 256 inputs */
    CHECK(gaia_tensor_randn(ctx, 2, ws, 0.0f, 0.1f, &w));      /* 64 x 128 weights */
    CHECK(gaia_tensor_full(ctx, 1, bs, 0.5f, &bias));
    CHECK(gaia_tensor_matmul(ctx, x, w, 0, 1, &h));            /* h = x . w^T: 256 x 64 */
    CHECK(gaia_tensor_add(ctx, h, bias, &h));                  /* the bias row broadcasts */
    CHECK(gaia_tensor_gelu(ctx, h, &h));                       /* in place */
    CHECK(gaia_tensor_mean(ctx, h, 1, &mean));                 /* per-row mean: 256 */
    CHECK(gaia_tensor_argmax(ctx, h, 1, &best));               /* per-row winner */
    {
        float all_means[256], all_best[256];
        int i;
        CHECK(gaia_tensor_to_host(ctx, mean, all_means, 256));
        CHECK(gaia_tensor_to_host(ctx, best, all_best, 256));
        for (i = 0; i < 4; i++) {
            row_means[i] = all_means[i];
            winners[i] = all_best[i];
        }
    }
    printf("h = gelu(x . w^T + b): %zu x %zu\n", gaia_tensor_dim(h, 0), gaia_tensor_dim(h, 1));
    printf("first rows: mean %.4f %.4f %.4f %.4f, argmax %g %g %g %g\n", row_means[0], row_means[1],
           row_means[2], row_means[3], winners[0], winners[1], winners[2], winners[3]);
    CHECK(gaia_tensor_save_npy(ctx, h, out_path));
    printf("saved h to %s (numpy.load reads it)\n", out_path);

    st = gaia_tensor_matmul(ctx, x, x, 0, 0, &bad);            /* 256x128 @ 256x128: wrong */
    printf("a deliberate mistake gives %s: %s\n", gaia_status_str(st), gaia_last_error(ctx));

    gaia_tensor_free(x);
    gaia_tensor_free(w);
    gaia_tensor_free(bias);
    gaia_tensor_free(h);
    gaia_tensor_free(mean);
    gaia_tensor_free(best);
    gaia_ctx_destroy(ctx);
    return 0;
}
